"""Time one `session` test case in a warm sandbox worker: reset + run + snapshot, in milliseconds.

Fuzzes `--programs` session programs, then runs their reference programs over and over (`--cases` test cases
in all) through `core.sandbox.worker.Runner.run_job` (with no uid drop), what a warm worker runs per job: reset the
service's database, fork the child that runs the setup block and the program against the service over HTTP, wait for it,
read the stored sessions. The world (service process and all) is started once, before the clock starts, as in
a warm worker. A second measurement goes through `Sandbox.run_untrusted` with one warm worker, which adds the
harness <-> worker protocol.

  python scripts/bench_session.py --cases 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builder.config import BuildConfig  # noqa: E402
from builder.config import rng_for  # noqa: E402
from builder.fuzz import CoverageRecorder  # noqa: E402
from builder.pipeline import make_cases  # noqa: E402
from builder.program import generate_program  # noqa: E402
from core.sandbox.harness import Job, Limits, Sandbox  # noqa: E402
from core.sandbox.protocol import ProgramRequest, WireCase  # noqa: E402
from scenarios import get_scenario  # noqa: E402


def programs(n: int, seed: int) -> list[tuple[str, dict]]:
    """(reference code, test case) pairs from `n` fuzzed programs."""
    scenario = get_scenario("session")
    config = BuildConfig(scenarios=["session"], n=n, seed=seed, created_at="2026-01-01")
    recorder = CoverageRecorder()
    out = []
    for i in range(n):
        program = generate_program(scenario, rng_for(config, "session", i, "fuzz"), recorder)
        out += [(program.reference_code(), case) for case in (c.to_row() for c in make_cases(program, config, i))]
    return out


def worker_job(code: str, case: dict, limits: Limits) -> ProgramRequest:
    """What a sandbox worker receives for one job (`core.sandbox.protocol`)."""
    return ProgramRequest("session", WireCase.of(case), limits, code)


def summary(label: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return (f"{label}: {len(ms)} test cases, mean {statistics.mean(ms):.1f} ms, median {statistics.median(ms):.1f} ms, "
            f"p95 {p95:.1f} ms, max {ms[-1]:.1f} ms")


def time_jobs(runner, jobs: list) -> list[float]:
    """The milliseconds `runner.run_job` takes on each job; SystemExit at the first whose reference fails."""
    ms = []
    for job in jobs:
        t0 = time.perf_counter()
        report = runner.run_job(job)
        ms.append(1000 * (time.perf_counter() - t0))
        if report["status"] != "ok":
            raise SystemExit(f"a reference program failed: {report}")
    return ms


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=200, help="test cases to time (default 200)")
    p.add_argument("--programs", type=int, default=40, help="distinct programs to cycle through (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-sandbox", action="store_true", help="skip the measurement through Sandbox.run_untrusted")
    args = p.parse_args()

    from core.sandbox.worker import Runner  # the worker's own per-job code, here in this process

    pairs = programs(args.programs, args.seed)
    limits = Limits()
    jobs = [worker_job(*pairs[i % len(pairs)], limits) for i in range(args.cases)]

    runner = Runner(None)
    started = time.perf_counter()
    warm = runner.run_job(jobs[0])  # starts the service: not timed, as in a warm worker
    print(f"world start (service process up): {1000 * (time.perf_counter() - started):.0f} ms", flush=True)
    assert warm["status"] == "ok", warm
    ms = time_jobs(runner, jobs)
    runner.close()
    print(summary("reset + run + snapshot (warm worker, run_job)", ms))

    if not args.no_sandbox:
        with Sandbox(1, limits) as sandbox:
            sandbox.run_untrusted([Job(0, "session", pairs[0][0], pairs[0][1])])  # warm-up
            sandbox_jobs = [Job(i, "session", *pairs[i % len(pairs)]) for i in range(args.cases)]
            t0 = time.perf_counter()
            outcomes = sandbox.run_untrusted(sandbox_jobs)
            total = 1000 * (time.perf_counter() - t0)
        bad = [o for o in outcomes if o.status != "ok"]
        if bad:
            raise SystemExit(f"a reference program failed in the sandbox: {bad[0]}")
        per_case = total / len(outcomes)
        print(f"through Sandbox.run_untrusted (1 warm worker, sequential): {per_case:.1f} ms per test case")


if __name__ == "__main__":
    main()
