"""python -m builder readiness: the agent-readiness report of a REST service or an MCP server, from its file alone.

  python -m builder readiness --service my-service.toml --out readiness
  python -m builder readiness --mcp my-server.toml     # or a file that comes with StateEval, by name (see --help)

For each operation or tool: what in its documentation a model is likely to miss, and what to add. The document is
read (no description, parameters without a description or an example, untyped bodies and answers, two operations a
reader cannot tell apart), and a running instance is called for what the document leaves out (statuses and errors it
answered, and on which input; fields it made up; pagination; what a delete does to what lies under or refers to what
it deleted), each with the call that showed it (`scenarios/readiness.py`). Writes NAME.readiness.md (one table, one
recommendation per finding) and NAME.readiness.json into --out. Every build of a service or a server writes the same
report beside its copy of the file (services/NAME.readiness.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.arguments import Parser


def main(argv: list[str] | None = None) -> int:
    from builder.services import register_service
    from scenarios import get_scenario, readiness
    from scenarios.mcp.client import ServerError
    from scenarios.mcp.serverfile import shipped as shipped_servers
    from scenarios.rest.process import ServiceError
    from scenarios.rest.servicefile import shipped as shipped_services

    p = Parser(prog="python -m builder readiness", description=__doc__.split("\n\n")[0],
               epilog="\n\n".join(__doc__.split("\n\n")[1:]), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--service", action="append", default=[], metavar="FILE",
                   help="a service file (TOML: start, openapi, reset, population; docs/services.md), or one that "
                        f"comes with StateEval by name ({', '.join(shipped_services())}); may be repeated")
    p.add_argument("--mcp", action="append", default=[], metavar="FILE",
                   help="an MCP server file (TOML: command, reset, population; docs/services.md), or one that "
                        f"comes with StateEval by name ({', '.join(shipped_servers())}); may be repeated")
    p.add_argument("--out", default="readiness", metavar="DIR", help="where the reports go (default: readiness)")
    a = p.parse_args(argv)
    if not a.service and not a.mcp:
        p.error("name a file: --service FILE or --mcp FILE")
    for path, server in [*((f, False) for f in a.service), *((f, True) for f in a.mcp)]:
        name = register_service(p, path, server)
        try:
            found = get_scenario(name).readiness()
        except (ServiceError, ServerError) as exc:
            p.exit(2, f"{p.prog}: error: {exc}\n")
        written = readiness.write(Path(a.out), name, found)
        observed = sum(f.observed for f in found)
        print(f"{name}: {len(found)} findings ({observed} observed on a running instance): {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
