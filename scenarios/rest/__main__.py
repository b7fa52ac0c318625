"""python -m scenarios.rest FILE: start the service a service file describes and show what StateEval reads of it.

Examples:
  python -m scenarios.rest my_service.toml   # a service file of yours
  python -m scenarios.rest NAME              # a file that comes with StateEval (scenarios/rest/services/), by name
"""

from __future__ import annotations

import argparse
import sys

from scenarios.rest.dependencies import infer, roles
from scenarios.rest.process import Service, ServiceError
from scenarios.rest.schema import SpecError
from scenarios.rest.servicefile import ServiceFileError, load, shipped

EXIT_BAD_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m scenarios.rest",
        description="Read a REST service's file (TOML: how to start, reach and reset the service; see "
                    "docs/services.md), start the service, read its OpenAPI document, and print the operations "
                    "the file keeps (id, method, path, what it does to the state, summary) and the dependencies "
                    "inferred between them (which operation's answer feeds which parameter of which, and why). The "
                    "service is stopped before the command ends. Exit status 2, with a one-line error, for a file, "
                    "service or document that cannot be used.",
        epilog=__doc__.split("\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    examples = [f"scenarios/rest/services/{name}.toml" for name in shipped()[:1]]  # (the folder's, not a name here)
    p.add_argument("file", metavar="FILE", help="the service file (a path" + "".join(f", e.g. {e}" for e in examples)
                   + "), or the name of one that comes with StateEval: " + ", ".join(shipped()))
    args = p.parse_args(argv)
    try:
        file = load(args.file)
        with Service(file) as service:
            operations = service.operations()
            where = service.url + file.openapi if file.spec_on_service else str(file.spec_file)
    except (ServiceFileError, ServiceError, SpecError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    edges = infer(operations)
    print(f"{file.name}: {len(operations)} operations kept from {where}, {len(edges)} dependencies inferred\n")
    _table(["id", "method", "path", "does", "summary"],
           [[op.id, op.method, op.path, "/".join(sorted(roles(op))) or "-", op.summary] for op in operations])
    print()
    _table(["producer", "value", "consumer", "parameter", "why"],
           [[e.producer, e.field or "(found live)", e.consumer, f"{e.location} {e.parameter}".strip(), e.reason]
            for e in edges])
    return 0


def _table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())


if __name__ == "__main__":
    sys.exit(main())
