"""python -m evaluate.leaderboard: submit a run, validate a submission, build the board.

Examples:
  python -m evaluate --model qwen --revision v1.0.0                      # a run: results/qwen/v1.0.0/
  python -m evaluate.leaderboard submit results/qwen/v1.0.0 --name "Qwen2.5-Coder-32B-Instruct" \\
      --org Alibaba --params 32B --weights open --link https://huggingface.co/Qwen/Qwen2.5-Coder-32B-Instruct
  python -m evaluate.leaderboard submit results/answers/v1.0.0 --name "My model" --samples answers.jsonl
  python -m evaluate.leaderboard validate leaderboard/submissions/Qwen2.5-Coder-32B-Instruct_2026-01-02 \\
      --dataset ORG/stateeval                                           # Hub id (at the submission's version)
  python -m evaluate.leaderboard build --out site --insert-into README.md

Exit codes: 0 done (validate: valid), 1 validate refused a submission, 2 a usage or input error.
"""

from __future__ import annotations

import argparse
import sys

from core.arguments import Parser, at_least_one, positive_seconds
from evaluate.episodes import MODES
from evaluate.leaderboard.submission import DEFAULT_ROOT, WEIGHTS
from scenarios.base import NATURAL, VARIANTS


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m evaluate.leaderboard",
        description="Package evaluation runs for the public board, re-score them before trusting them, and "
                    "render the board (static HTML + Markdown).",
        epilog=__doc__.split("\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("submit", help="package a run as <root>/submissions/<model>_<date>/",
                       description="Copy a run's results.json, the generations it scored and the model's metadata "
                                   "into <root>/submissions/<name>_<evaluation date>/.")
    s.add_argument("run_dir", help="the run's folder, <out>/<model>/<revision>/ (holds results.json)")
    s.add_argument("--name", required=True, help="display name on the board")
    s.add_argument("--org", default=None, help="organisation")
    s.add_argument("--params", default=None, help="parameter count, e.g. 7B, 135M (sorts numerically)")
    s.add_argument("--weights", choices=WEIGHTS, default="unknown", help="open or closed weights")
    s.add_argument("--link", default=None, help="http(s) link to the model")
    s.add_argument("--dataset-version", default=None,
                   help="the dataset version the run was scored on (default: the run's --revision; needed when "
                        "the run used a local folder without one)")
    s.add_argument("--samples", default=None,
                   help="for a run scored with --samples FILE: that file, packaged as the generations")
    s.add_argument("--dataset", default=None,
                   help="the run's dataset, to pick its replies and check coverage (default: as recorded)")
    s.add_argument("--root", default=str(DEFAULT_ROOT), help=f"leaderboard folder (default {DEFAULT_ROOT})")
    s.add_argument("--force", action="store_true", help="replace an existing submission folder")
    s.add_argument("--variant", choices=VARIANTS, default=NATURAL,
                   help="which instructions the run was scored on (evaluate's --variant; default natural)")
    s.add_argument("--mode", choices=MODES, default="code",
                   help="how the run was evaluated (evaluate's --mode; default code). A tools or explore run (and "
                        "a tests run with --max-turns) is packaged with its recorded conversations, which "
                        "validation replays turn by turn; a tests run (results_tests.json) is ranked apart, by "
                        "the share of tests that kill every mutant of their task")

    v = sub.add_parser("validate", help="re-score a submission in the sandbox and compare",
                       description="Check coverage and the dataset content hash, re-score the submitted "
                                   "generations in the sandbox, and compare every sample and the summary with "
                                   "results.json. Writes validation.json when valid; prints which tasks differ.")
    v.add_argument("submission", nargs="+", help="submission folder(s)")
    v.add_argument("--dataset", default="stateeval",
                   help="the maintainers' dataset: a folder, or a Hub id read at the submission's version "
                        "(default: stateeval). Never the path a submission names.")
    v.add_argument("--timeout", type=positive_seconds, default=None, dest="timeout_s",
                   help="seconds per test case (default: the run's, else the sandbox default)")
    v.add_argument("--workers", type=at_least_one, default=None, help="sandbox workers (default: cores)")

    b = sub.add_parser("build", help="render the board from every validated submission",
                       description="Write index.html (sortable table, per-scenario chart), leaderboard.md and "
                                   "leaderboard.json into --out, one table per dataset version.")
    b.add_argument("--out", required=True, help="output folder")
    b.add_argument("--root", default=str(DEFAULT_ROOT), help=f"leaderboard folder (default {DEFAULT_ROOT})")
    b.add_argument("--revalidate", action="store_true", help="validate every submission again first (needs --dataset)")
    b.add_argument("--dataset", default=None, help="the maintainers' dataset, for --revalidate")
    b.add_argument("--insert-into", action="append", default=[], metavar="FILE",
                   help="also put the Markdown tables between <!-- leaderboard:start/end --> markers in FILE "
                        "(a README or dataset card); repeatable")
    b.add_argument("--workers", type=at_least_one, default=None, help="sandbox workers for --revalidate")
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    from core.errors import CannotWrite
    from core.records import DatasetError
    from evaluate.leaderboard.submission import SubmissionError

    try:
        if a.command == "submit":
            from evaluate.leaderboard.submission import submit

            dest = submit(a.run_dir, a.name, org=a.org, params=a.params, weights=a.weights, link=a.link,
                          dataset_version=a.dataset_version, samples=a.samples, dataset=a.dataset, root=a.root,
                          force=a.force, variant=a.variant, mode=a.mode)
            print(f"wrote {dest}")
            print(f"next: python -m evaluate.leaderboard validate {dest}")
            return 0
        if a.command == "validate":
            from evaluate.leaderboard.validation import validate

            refused = 0
            for folder in a.submission:
                report = validate(folder, a.dataset, timeout_s=a.timeout_s, workers=a.workers)
                print(report.format())
                refused += not report.ok
            return 1 if refused else 0
        from evaluate.leaderboard.board import build

        report = build(a.out, a.root, dataset=a.dataset, revalidate=a.revalidate, insert_into=a.insert_into,
                       workers=a.workers)
        for g in report.groups:
            print(f"dataset {g.version} ({g.content_hash[:12]}): {len(g.entries)} submission(s)")
        for name, why in sorted(report.skipped.items()):
            print(f"left out {name}: {why}", file=sys.stderr)
        for path in report.files:
            print(f"wrote {path}")
        return 0
    except (SubmissionError, DatasetError, CannotWrite) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
