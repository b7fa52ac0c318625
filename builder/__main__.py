"""python -m builder: build a StateEval dataset folder.

Examples:
  python -m builder --scenarios tensor --n 60 --seed 0 --out stateeval
  python -m builder --scenarios tensor --n 60 --seed 1 --no-coverage --out ablation
"""

from __future__ import annotations

import argparse
import json
import sys

from builder.config import BuildConfig
from scenarios import scenario_names


def parse_args(argv: list[str] | None = None) -> BuildConfig:
    d = BuildConfig()
    p = argparse.ArgumentParser(
        prog="python -m builder",
        description=(
            "Fuzz programs of stateful API calls from each scenario's state machine, translate them into tasks, "
            "capture oracles by running the references in a sandbox, and write a dataset folder that "
            "datasets.load_dataset() reads. The same seed and --created-at give byte-identical shards."
        ),
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--scenarios", default=",".join(d.scenarios),
                   help=f"comma-separated scenarios (known: {', '.join(scenario_names())}; default: all)")
    p.add_argument("--n", type=int, default=d.n, help="programs fuzzed per scenario; rejected ones are dropped "
                   f"(default {d.n})")
    p.add_argument("--seed", type=int, default=d.seed, help="build seed; a new seed gives a fresh split (default 0)")
    p.add_argument("--out", default=d.out, help=f"output folder (default {d.out}); an earlier build there is replaced")
    p.add_argument("--translator", default=d.translator,
                   help="how programs become instructions: 'template' (offline, default)")
    p.add_argument("--workers", type=int, default=None, help="sandbox workers for oracle capture (default: cores)")
    p.add_argument("--calls", type=int, default=d.calls_per_path, dest="calls_per_path",
                   help=f"API calls on every path through a program (default {d.calls_per_path})")
    p.add_argument("--branch-probability", type=float, default=d.branch_probability,
                   help=f"share of programs with an if/else split (default {d.branch_probability})")
    p.add_argument("--no-coverage", action="store_false", dest="coverage",
                   help="sample uniformly among valid calls instead of coverage guidance (the paper's ablation)")
    p.add_argument("--created-at", default="", help="date stamped on tasks, YYYY-MM-DD (default: today, UTC); "
                   "pass a release's date to reproduce it byte for byte")
    p.add_argument("--timeout", type=float, default=d.timeout_s, dest="timeout_s",
                   help=f"seconds per test case when capturing oracles (default {d.timeout_s})")
    a = p.parse_args(argv)
    names = [s.strip() for s in a.scenarios.split(",") if s.strip()]
    unknown = [s for s in names if s not in scenario_names()]
    if unknown or not names:
        p.error(f"unknown scenario(s) {unknown}; choose from {', '.join(scenario_names())}")
    try:
        return BuildConfig(
            scenarios=names, n=a.n, seed=a.seed, out=a.out, translator=a.translator, workers=a.workers,
            calls_per_path=a.calls_per_path, branch_probability=a.branch_probability, coverage=a.coverage,
            created_at=a.created_at, timeout_s=a.timeout_s,
        )
    except ValueError as exc:
        p.error(str(exc))


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    from builder.dataset import DatasetError
    from builder.pipeline import build

    try:
        report = build(config)
    except (DatasetError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kept, attempts = report["kept"], report["attempts"]
    for s in config.scenarios:
        print(f"{s}: kept {kept[s]} of {attempts[s]} programs")
    for reason, count in report["rejections"].items():
        print(f"  dropped {count}: {reason}")
    print(f"wrote {config.out} in {report['seconds']} s (content hash {report['manifest']['content_hash'][:12]})")
    print(json.dumps(report["statistics"], indent=None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
