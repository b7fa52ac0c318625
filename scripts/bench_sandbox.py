"""Warm sandbox workers against a fresh `python` process per test case, on 120 reference tasks.

The warm run is what `python -m evaluate --model reference` does: `evaluate.scoring.score` over a `Sandbox` of
--workers warm workers (timed from the start of the pool, worker start-up included). The baseline runs each test
case in a worker process started for that one case and stopped after it: the same `python -m core.sandbox.worker`,
the same containment, protocol and execution code, so the only difference is what warm workers save (starting
Python, importing torch, starting the session service). It runs with the same number of cases in flight as the
warm run has workers.

The baseline is slow by design, so by default it times an evenly spread subset of the test cases
(--baseline-cases) and extrapolates its time per case to all of them; the output says so. The requirement is a
ratio of at least 10.

  python scripts/bench_sandbox.py                       # builds tensor 40 + session 40 + voice 40 first
  python scripts/bench_sandbox.py --dataset stateeval --baseline-cases 0   # 0: every test case, no extrapolation
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builder.config import BuildConfig  # noqa: E402
from builder.pipeline import build  # noqa: E402
from core.records import load_tasks  # noqa: E402
from core.sandbox.harness import Job, Limits, Outcome, Sandbox, _Worker  # noqa: E402
from evaluate.scoring import judge_case, score  # noqa: E402
from scenarios import get_scenario  # noqa: E402

SCENARIOS = ("tensor", "session", "voice")
TASKS_PER_SCENARIO = 40  # 3 x 40 = the 120 reference tasks of the requirement
REQUIRED_RATIO = 10.0
DEFAULT_BASELINE_CASES = 24  # enough to average over all three scenarios, short enough to run in a minute or two


def reference_tasks(dataset: str | None, workers: int, scratch: str) -> tuple[list[dict], str]:
    """The tasks to score, and where they came from (a fresh build under `scratch` unless --dataset)."""
    if dataset:
        tasks, _ = load_tasks(dataset)
        return tasks, dataset
    out = Path(scratch) / "stateeval"
    build(BuildConfig(out=str(out), scenarios=list(SCENARIOS), n=TASKS_PER_SCENARIO, seed=0,
                      created_at="2026-01-01", workers=workers))
    tasks, _ = load_tasks(str(out))
    return tasks, f"{out} (built: {', '.join(SCENARIOS)}, {TASKS_PER_SCENARIO} programs each)"


def all_cases(tasks: list[dict]) -> list[tuple[dict, dict]]:
    return [(t, case) for t in tasks for case in t.test_cases]


def spread(items: list, k: int) -> list:
    """k items evenly spread over the list (all of them when k is 0 or not smaller than the list)."""
    if k <= 0 or k >= len(items):
        return list(items)
    return [items[i * len(items) // k] for i in range(k)]


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of the children it has waited for: once a Sandbox is closed,
    its workers and every child they forked. Unlike wall time, it hardly moves with other jobs' load, so it is the
    figure to compare two versions of the code by on a busy machine."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_cold(job: Job, limits: Limits) -> Outcome:
    """One test case in a worker process started for it alone, then stopped."""
    worker = _Worker(limits)
    try:
        return worker.run(job)
    finally:
        worker.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default=None, help="a built dataset folder (default: build 120 tasks first)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="warm workers, and baseline cases in "
                                                                            "flight (default: the number of cores)")
    p.add_argument("--baseline-cases", type=int, default=DEFAULT_BASELINE_CASES,
                   help=f"test cases the baseline times, extrapolated to all (default {DEFAULT_BASELINE_CASES}; "
                        "0: all of them)")
    p.add_argument("--timeout-s", type=float, default=Limits().timeout_s, help="per test case wall clock")
    a = p.parse_args()
    limits = Limits(timeout_s=a.timeout_s)

    with tempfile.TemporaryDirectory(prefix="stateeval-bench-") as scratch:
        bench(a, limits, *reference_tasks(a.dataset, a.workers, scratch))


def bench(a: argparse.Namespace, limits: Limits, tasks: list[dict], source: str) -> None:
    cases = all_cases(tasks)
    per_scenario = collections.Counter(t.scenario for t in tasks)
    print(f"dataset: {source}")
    print(f"tasks: {len(tasks)} ({', '.join(f'{s} {n}' for s, n in sorted(per_scenario.items()))}); "
          f"test cases: {len(cases)}; workers: {a.workers}; {os.cpu_count()} cores")

    start, cpu = time.perf_counter(), cpu_seconds()
    with Sandbox(a.workers, limits) as sandbox:
        results = score(tasks, {t.task_id: [t.reference_program] for t in tasks}, sandbox)
    warm, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    passed = sum(r.status == "pass" for r in results)
    print(f"warm sandbox: {warm:.2f} s for {len(cases)} test cases ({warm / len(cases) * 1000:.1f} ms per case, "
          f"worker start-up included), {cpu:.2f} CPU s ({cpu / len(cases) * 1000:.1f} ms per case); "
          f"{passed}/{len(results)} references pass")

    subset = spread(cases, a.baseline_cases)
    jobs = [Job(i, t.scenario, t.reference_program, case) for i, (t, case) in enumerate(subset)]
    start = time.perf_counter()
    with ThreadPoolExecutor(a.workers) as pool:
        outcomes = list(pool.map(lambda job: run_cold(job, limits), jobs))
    measured = time.perf_counter() - start
    cold_pass = sum(judge_case(get_scenario(t.scenario), case, o)[0] == "pass"
                    for (t, case), o in zip(subset, outcomes))
    per_case = measured / len(subset)
    cold = per_case * len(cases)
    if len(subset) == len(cases):
        print(f"fresh python per test case: {cold:.2f} s for all {len(cases)} test cases "
              f"({per_case * 1000:.0f} ms per case, {a.workers} in flight); {cold_pass}/{len(subset)} pass")
    else:
        print(f"fresh python per test case: {measured:.2f} s measured for {len(subset)} of {len(cases)} test cases "
              f"(evenly spread, {a.workers} in flight), {per_case * 1000:.0f} ms per case; "
              f"extrapolated to all {len(cases)}: {cold:.2f} s; {cold_pass}/{len(subset)} pass")
    ratio = cold / warm
    verdict = "meets" if ratio >= REQUIRED_RATIO else "FAILS"
    print(f"speed-up: {ratio:.1f}x ({verdict} the required {REQUIRED_RATIO:.0f}x)")
    if passed != len(results) or cold_pass != len(subset):
        sys.exit("some reference programs did not pass; the timings compare unequal work")
    if ratio < REQUIRED_RATIO:
        sys.exit(1)


if __name__ == "__main__":
    main()
