"""Scoring the references on the local executor against Ray on the same machine: what `--executor ray` costs.

Each round scores every test case of a 3 x 20 build (or --dataset) with `evaluate.scoring.score`, once through the
local pool of --workers warm workers and once through a local Ray instance of --workers CPUs (one actor each),
alternating which goes first. Each time covers the executor's whole life, as one `python -m evaluate` run has it:
workers (and actors) started, every test case scored, everything stopped. Starting the Ray instance itself
(`ray.init`) is timed apart, since a cluster that is already running does not pay it. Every round checks that both
executors gave the same verdicts.

  python scripts/bench_executor.py                      # builds tensor 20 + session 20 + voice 20 first
  python scripts/bench_executor.py --dataset stateeval --rounds 3
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builder.config import BuildConfig  # noqa: E402
from builder.pipeline import build  # noqa: E402
from core.records import load_tasks  # noqa: E402
from core.sandbox.executor import make_executor  # noqa: E402
from evaluate.scoring import score  # noqa: E402

SCENARIOS = ("tensor", "session", "voice")
TASKS_PER_SCENARIO = 20


def timed_score(executor: str, tasks: list, workers: int) -> tuple[float, list]:
    codes = {t.task_id: [t.reference_program] for t in tasks}
    started = time.perf_counter()
    with make_executor(executor, workers=workers) as ex:
        results = score(tasks, codes, ex)
    return time.perf_counter() - started, [(r.task_id, r.status) for r in results]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=None, help="score this dataset folder instead of a fresh 3 x 20 build")
    p.add_argument("--workers", type=int, default=2, help="local workers, and the Ray instance's CPUs (default 2)")
    p.add_argument("--rounds", type=int, default=2, help="timings per executor, alternating (default 2)")
    a = p.parse_args()
    import ray

    with tempfile.TemporaryDirectory() as scratch:
        dataset = a.dataset
        if not dataset:
            dataset = str(Path(scratch) / "stateeval")
            build(BuildConfig(out=dataset, scenarios=list(SCENARIOS), n=TASKS_PER_SCENARIO, seed=0,
                              created_at="2026-01-01", workers=a.workers))
        tasks, _ = load_tasks(dataset)
        cases = sum(len(t.test_cases) for t in tasks)
        started = time.perf_counter()
        ray.init(num_cpus=a.workers, include_dashboard=False, logging_level=logging.WARNING)
        init_s = time.perf_counter() - started
        times: dict[str, list[float]] = {"local": [], "ray": []}
        for n in range(a.rounds):
            order = ("local", "ray") if n % 2 == 0 else ("ray", "local")
            verdicts = {}
            for name in order:
                seconds, verdicts[name] = timed_score(name, tasks, a.workers)
                times[name].append(seconds)
            assert verdicts["local"] == verdicts["ray"], "the executors disagree on a verdict"
            assert all(status == "pass" for _, status in verdicts["local"]), "a reference failed"
        ray.shutdown()
    local, on_ray = statistics.mean(times["local"]), statistics.mean(times["ray"])
    print(f"{len(tasks)} reference tasks, {cases} test cases, {a.workers} workers, {a.rounds} rounds")
    print(f"local executor: {', '.join(f'{s:.1f}' for s in times['local'])} s (mean {local:.1f} s)")
    print(f"ray executor:   {', '.join(f'{s:.1f}' for s in times['ray'])} s (mean {on_ray:.1f} s), "
          f"plus {init_s:.1f} s to start the local Ray instance")
    print(f"ray / local wall time: {on_ray / local:.2f} (with the Ray start: {(on_ray + init_s) / local:.2f})")


if __name__ == "__main__":
    main()
