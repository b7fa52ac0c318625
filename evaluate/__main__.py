"""python -m evaluate: score a model (or pre-generated code) on a StateEval dataset.

Examples:
  python -m evaluate --model reference --dataset stateeval          # replay the references: must be 100%
  python -m evaluate --samples answers.jsonl --dataset stateeval    # {"task_id": ..., "code": ...} per line
  python -m evaluate --model reference --scenario tensor --limit 10
"""

from __future__ import annotations

import argparse
import sys

from evaluate.models import Sampling, UnknownBackend
from evaluate.run import EvalConfig


def parse_args(argv: list[str] | None = None) -> EvalConfig:
    d = EvalConfig()
    p = argparse.ArgumentParser(
        prog="python -m evaluate",
        description=(
            "Prompt a model with each task (API documentation, setup block, instruction), run its code in a "
            "sandbox against every test case, compare RESULT and side effects with the oracles, and write "
            "results.json with pass@k and each sample's status."
        ),
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", default=d.model, help="model name or alias; 'reference' replays the reference programs")
    p.add_argument("--backend", default=None, help="model backend (this version: reference)")
    p.add_argument("--dataset", default=d.dataset, help="dataset folder, or a Hub repo id (default: stateeval)")
    p.add_argument("--revision", default=None, help="dataset version (git tag on the Hub), e.g. v1.0.0")
    p.add_argument("--scenario", default=None, help="comma-separated scenarios to score (default: all splits)")
    p.add_argument("--n-samples", type=int, default=d.n_samples, help="samples per task (pass@k needs k <= n)")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    p.add_argument("--samples", default=None, help="score pre-generated code from a JSONL file instead of a model")
    p.add_argument("--out", default=d.out, help="results folder (default: results/<model>/<revision>/)")
    p.add_argument("--limit", type=int, default=None, help="score only the first N tasks")
    p.add_argument("--workers", type=int, default=None, help="sandbox workers (default: cores)")
    p.add_argument("--timeout", type=float, default=d.timeout_s, dest="timeout_s",
                   help=f"seconds per test case (default {d.timeout_s})")
    a = p.parse_args(argv)
    if a.n_samples < 1:
        p.error("--n-samples must be at least 1")
    scenarios = [s.strip() for s in a.scenario.split(",")] if a.scenario else None
    return EvalConfig(
        model=a.model, backend=a.backend, dataset=a.dataset, revision=a.revision, scenarios=scenarios,
        n_samples=a.n_samples, samples=a.samples, out=a.out, limit=a.limit, workers=a.workers,
        timeout_s=a.timeout_s, sampling=Sampling(temperature=a.temperature),
    )


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    from evaluate.data import DatasetError
    from evaluate.run import format_table, run

    try:
        report = run(config)
    except (DatasetError, UnknownBackend) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_table(report["summary"]))
    print(f"wrote {report['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
