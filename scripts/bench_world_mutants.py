"""What a world mutant adds to a test case's cost: each task's reference on its first test case, on the correct world
and on every candidate world mutant of its trace (`scenarios.mutants.candidates`), one warm sandbox worker, jobs one
after another. Prints, per scenario, the mean wall time of a job on the correct world and on a mutant, and their
ratio (the target: at most 2).

  python scripts/bench_world_mutants.py --dataset DIR            # a built dataset
  python scripts/bench_world_mutants.py --n 6 --seed 11          # builds tensor, session and voice first
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.records import load_tasks  # noqa: E402
from core.sandbox.harness import Job, Sandbox  # noqa: E402
from scenarios.mutants import candidates  # noqa: E402
from scenarios.trace import load_stored  # noqa: E402


def timed(sandbox: Sandbox, jobs: list[Job]) -> tuple[float, list]:
    """The mean wall seconds per job, run one by one, and their outcomes."""
    outcomes, start = [], time.perf_counter()
    for job in jobs:
        outcomes += sandbox.run_untrusted([job])
    return (time.perf_counter() - start) / max(1, len(jobs)), outcomes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", help="a built dataset folder (default: build one with --n and --seed)")
    p.add_argument("--n", type=int, default=6)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--repeat", type=int, default=3, help="runs of each reference on the correct world")
    a = p.parse_args()
    folder = a.dataset
    if folder is None:
        folder = str(Path(tempfile.mkdtemp(prefix="bench-mutants-")) / "data")
        subprocess.run([sys.executable, "-m", "builder", "--scenarios", "tensor,session,voice", "--n", str(a.n),
                        "--seed", str(a.seed), "--out", folder], check=True, stdout=subprocess.DEVNULL)
    tasks, _ = load_tasks(folder)
    by_scenario = defaultdict(list)
    for task in tasks:
        by_scenario[task.scenario].append(task)
    with Sandbox(workers=1) as sandbox:
        for scenario, group in sorted(by_scenario.items()):
            correct, mutated = [], []
            for task in group:
                case = task.test_cases[0]
                correct += [Job(task.task_id, scenario, task.reference_program, case)] * a.repeat
                mutated += [Job(task.task_id, scenario, task.reference_program, case, mutant=m)
                            for m in candidates(load_stored(case.trace) or [])]
            timed(sandbox, correct[:1])  # the worker's world started before the clock
            plain_s, _ = timed(sandbox, correct)
            mutant_s, outcomes = timed(sandbox, mutated)
            changed = sum(1 for o in outcomes if o.extra.get("mutated"))
            print(f"{scenario}: {len(group)} tasks, correct world {plain_s * 1000:.1f} ms a job ({len(correct)} jobs), "
                  f"world mutant {mutant_s * 1000:.1f} ms a job ({len(mutated)} jobs, {changed} changed something): "
                  f"{mutant_s / plain_s:.2f}x")


if __name__ == "__main__":
    main()
