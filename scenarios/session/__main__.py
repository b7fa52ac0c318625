"""python -m scenarios.session: run the session service on its own, or regenerate its API documentation.

Examples:
  python -m scenarios.session serve --port 18080
  curl -X POST localhost:18080/api/sessions/msk_portal/main_session -H 'Content-Type: application/json' \\
       -d '{"title": "my main portal session", "description": "this is an example"}'
  curl localhost:18080/api/sessions/msk_portal/main_session
  python -m scenarios.session api-doc --write      # rewrite scenarios/session/api_doc.md from the OpenAPI
  python -m scenarios.session serve --tier frontier   # paged listings, versioned writes, members, bulk delete
  python -m scenarios.session api-doc --tier frontier --write   # rewrite scenarios/session/api_doc_frontier.md
"""

from __future__ import annotations

import argparse
import sys

from scenarios.base import PAPER, TIERS
from scenarios.session.doc import DOC_PATHS, render_api_doc  # neither loads FastAPI: --help does not wait
from scenarios.session.server import default_db, serve

TIER_HELP = ("paper: the API the paper's tasks call (default); frontier: the same service with paged listings, "
             "versioned writes (If-Match), members as a sub-resource and bulk delete")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m scenarios.session",
        description="The session service of the StateEval `session` scenario: cBioPortal's session service "
                    "(REST API over JSON sessions, as in the EvoMaster benchmark) on SQLite.",
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the service in the foreground (Ctrl-C stops it)",
                       description="Run the session service. The OpenAPI document is at /openapi.json, the "
                                   "version at /info, the sessions under /api/sessions/{source}/{type}.")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=18080, help="port to listen on (default 18080)")
    s.add_argument("--db", default=None,
                   help="SQLite database file, created when missing (default: session_service.sqlite3 in the user's "
                        "data folder, $XDG_DATA_HOME/stateeval or ~/.local/share/stateeval; printed at start)")
    s.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn's log level (default info; debug also logs every request)")
    s.add_argument("--fd", type=int, default=None,
                   help="serve on this already listening socket instead of --host/--port (used by sandbox workers)")
    s.add_argument("--exit-with-parent", action="store_true",
                   help="exit when the process that started this one exits (used by sandbox workers)")
    s.add_argument("--parent", type=int, default=None, metavar="PID",
                   help="with --exit-with-parent: the pid of that process, so that a parent gone before this one "
                        "started is noticed too")
    s.add_argument("--log-calls", action="store_true",
                   help="keep every answered request (method, route, parameters, body, status, answer) in the "
                        "database's call log, which a sandbox worker reads and empties per test case (used by "
                        "sandbox workers; off by default, so a long-running service does not grow a log)")
    s.add_argument("--tier", default=PAPER, choices=TIERS, help=TIER_HELP)

    d = sub.add_parser("api-doc", help="print the model-facing API documentation generated from the OpenAPI",
                       description="Render scenarios/session/api_doc.md (api_doc_frontier.md with --tier frontier) "
                                   "from the app's OpenAPI document.")
    d.add_argument("--write", action="store_true", help="write the file instead of printing it")
    d.add_argument("--tier", default=PAPER, choices=TIERS, help=TIER_HELP)

    args = p.parse_args(argv)
    if args.command == "serve":
        db = args.db or str(default_db())
        if args.fd is None:
            print(f"session service on http://{args.host}:{args.port} (database {db})", file=sys.stderr)
        parent = args.exit_with_parent and (args.parent or True)
        serve(args.host, args.port, db, args.fd, parent, args.log_level, args.log_calls, args.tier)
        return 0
    text = render_api_doc(tier=args.tier)
    if args.write:
        DOC_PATHS[args.tier].write_text(text)
        print(f"wrote {DOC_PATHS[args.tier]}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
