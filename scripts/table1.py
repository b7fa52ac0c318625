"""Print the paper's Table I for a dataset folder, measured by data-flow analysis of its reference programs.

  python scripts/table1.py stateeval                     # an existing folder
  python scripts/table1.py /tmp/t1/stateeval --build     # build it first: 3 scenarios x 60 programs, seed 0
  python scripts/table1.py stateeval --json              # the numbers as JSON

The same table is in the folder's card (README.md); this script recomputes it from the shards, so the two can be
compared. Structural numbers come from `ast` analysis of `reference_program`, and are checked against the stored
`num_api_calls` / `path_depth` / `binding_count` fields: a disagreement is printed and exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builder.stats import analyse, format_table, table1  # noqa: E402
from core.records import load_tasks  # noqa: E402
from scenarios.base import FRONTIER  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", help="a dataset folder (python -m builder --out FOLDER)")
    p.add_argument("--build", action="store_true", help="build the folder first (replaces an earlier build there)")
    p.add_argument("--n", type=int, default=60, help="programs per scenario with --build (default 60)")
    p.add_argument("--seed", type=int, default=0, help="seed with --build (default 0)")
    p.add_argument("--workers", type=int, default=None, help="sandbox workers with --build")
    p.add_argument("--json", action="store_true", help="print JSON instead of the Markdown table")
    a = p.parse_args()
    if a.build:
        from builder.config import BuildConfig
        from builder.pipeline import build

        build(BuildConfig(n=a.n, seed=a.seed, out=a.folder, workers=a.workers))
    tasks, manifest = load_tasks(a.folder)
    frontier = manifest.get("config", {}).get("tier") == FRONTIER
    disagree = []
    for t in tasks if not frontier else []:  # a frontier record's numbers are its trace's (builder/stats.py)
        flow = analyse(t.reference_program)
        mine = (len(flow.calls), flow.path_depth(), flow.binding_count())
        stored = (t.num_api_calls, t.path_depth, t.binding_count)
        if mine != stored:
            disagree.append(f"{t.task_id}: data flow {mine} vs stored {stored} (calls, depth, bindings)")
    rows = table1(tasks, frontier)
    scenarios = manifest.get("config", {}).get("scenarios") or list(manifest["counts"])
    order = [s for s in scenarios if s in rows] + ["all"]
    rows = {s: rows[s] for s in order}
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"Table I for {a.folder} ({sum(manifest['counts'].values())} tasks, seed {manifest['seed']}, "
              f"created {manifest['created_at']}, content hash {manifest['content_hash'][:12]})\n")
        print(format_table(rows))
    for line in disagree:
        print(f"disagrees with the stored field: {line}", file=sys.stderr)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
