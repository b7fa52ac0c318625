"""Time one test case of a scenario built from a service file in a warm sandbox worker.

Registers the service file, fuzzes `--programs` programs of it, then runs their reference programs over and over
(`--cases` test cases in all) through `core.sandbox.worker.Runner.run_job` (with no uid drop), what a warm worker
runs per job and what the builder's oracle capture and `python -m evaluate --model reference` pay per test case:
reset the service and send the population, fork the child that runs the setup block and the program against the
service over HTTP, wait for it, read the final state through the document's readers (the snapshot). The world
(the service process, its probe) is started once, before the clock starts, as in a warm worker.

Prints the median and p90 milliseconds per test case, and the CPU time per test case of the worker, of the children
that ran the programs and of the service process (less sensitive to the machine's load than the wall clock); with
`--profile`, where the wall time goes (reset and population, the snapshot's reads, the rest), on the same jobs. The
worker's own requests (reset, population, reads) go over one kept-alive connection (`scenarios.rest.process`); the
program's go through the worker's recording proxy (`scenarios.rest.proxy`). Figures: docs/measurements.md.

  python scripts/bench_rest.py --service NAME --cases 200      (NAME: a service file shipped with StateEval)
  python scripts/bench_rest.py --service path/to/service.toml --profile
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builder.config import BuildConfig  # noqa: E402
from builder.pipeline import Fuzzer  # noqa: E402
from core.sandbox.harness import Limits  # noqa: E402
from core.sandbox.protocol import ProgramRequest, WireCase  # noqa: E402
from scripts.bench_session import time_jobs  # noqa: E402

TARGET_MS = 50.0  # median per test case on a warm worker


def programs(name: str, n: int, seed: int) -> list[tuple[str, dict]]:
    """(reference code, test case) pairs from up to `n` fuzzed programs of the scenario `name`."""
    config = BuildConfig(scenarios=[name], n=n, seed=seed, created_at="2026-01-01")
    drafts = Fuzzer(name).programs(config, 0, n, Counter())  # the programs a build of these settings fuzzes
    return [(d.program.reference_code(), case.to_row()) for d in drafts for case in d.cases]


def quantile(ms: list[float], q: float) -> float:
    ms = sorted(ms)
    return ms[min(len(ms) - 1, int(q * len(ms)))]


def summary(label: str, ms: list[float]) -> str:
    return (f"{label}: {len(ms)} test cases, median {statistics.median(ms):.1f} ms, p90 {quantile(ms, 0.9):.1f} ms, "
            f"max {max(ms):.1f} ms")


class Timed:
    """Wraps a world's method so that each call's milliseconds are added to `ms[label]` (for `--profile`)."""

    def __init__(self, world, method: str, label: str, ms: dict[str, list[float]]) -> None:
        self.original, self.label, self.ms = getattr(world, method), label, ms
        setattr(world, method, self)

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.original(*args, **kwargs)
        finally:
            self.ms.setdefault(self.label, []).append(1000 * (time.perf_counter() - t0))


def cpu_ms(pid: int | None = None) -> dict[str, float]:
    """CPU milliseconds so far: this process's, its reaped children's (the programs' forks) and `pid`'s."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = {"worker": 1000 * (own.ru_utime + own.ru_stime), "programs": 1000 * (reaped.ru_utime + reaped.ru_stime)}
    if pid is not None:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        out["service"] = 1000 * (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--service", required=True,
                   help="a service file's path, or the name of one that comes with StateEval")
    p.add_argument("--cases", type=int, default=200, help="test cases to time (default 200)")
    p.add_argument("--programs", type=int, default=40, help="programs fuzzed to cycle through (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", action="store_true",
                   help="also time the reset, the snapshot and the reader requests of each test case")
    args = p.parse_args()

    from core.sandbox.worker import Runner  # the worker's own per-job code, here in this process
    from scenarios.rest.registration import register
    from scenarios.rest.servicefile import ServiceFileError

    try:
        name = register(args.service)
    except ServiceFileError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    pairs = programs(name, args.programs, args.seed)
    if not pairs:
        raise SystemExit(f"error: no program of {name} could be fuzzed from seed {args.seed}; try another --seed")
    limits = Limits()
    jobs = [ProgramRequest(name, WireCase.of(case), limits, code)
            for code, case in (pairs[i % len(pairs)] for i in range(args.cases))]

    runner = Runner(None)
    started = time.perf_counter()
    warm = runner.run_job(jobs[0])  # starts the service: not timed, as in a warm worker
    print(f"world start (service up, probed): {1000 * (time.perf_counter() - started):.0f} ms", flush=True)
    if warm["status"] != "ok":
        raise SystemExit(f"a reference program failed: {warm}")
    parts: dict[str, list[float]] = {}
    if args.profile:
        world = runner.worlds[name]
        Timed(world, "reset", "reset + population", parts)
        Timed(world, "outcome", "snapshot", parts)  # the ids made from the proxy's record, the reads, renaming
        Timed(world.service, "request", "requests from the worker (reset, population, reads)", parts)
    service = runner.worlds[name].service
    before = cpu_ms(service.process.pid)
    ms = time_jobs(runner, jobs)
    after = cpu_ms(service.process.pid)
    runner.close()
    print(summary(f"{name}: reset + population + run + snapshot (warm worker, run_job)", ms))
    print("CPU per test case: " + ", ".join(f"{k} {(after[k] - before[k]) / len(jobs):.1f} ms" for k in after))
    verdict = "within" if statistics.median(ms) <= TARGET_MS else "over"
    print(f"target: median at most {TARGET_MS:g} ms per test case: {verdict}")
    for label, values in parts.items():
        per_case = sum(values) / len(jobs)
        print(f"  {label}: {len(values)} calls, {per_case:.1f} ms per test case (median call "
              f"{statistics.median(values):.2f} ms)")
    if parts:
        rest = statistics.mean(ms) - sum(sum(parts[k]) for k in ("reset + population", "snapshot")) / len(jobs)
        print(f"  the rest (fork, setup block, the program's requests, reaping): {rest:.1f} ms per test case")


if __name__ == "__main__":
    main()
