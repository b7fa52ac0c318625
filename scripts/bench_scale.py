"""Wall time, tasks per second and peak memory of streamed builds as they grow: 1,000 and 10,000 tasks by default,
100,000 (`--n 33334` per scenario) with --full.

Each build runs `python -m builder` in a child process into a temporary folder, measured as
scripts/bench_build.py measures one build: the proportional set size (PSS) of the builder and all its sandbox
workers, and of the builder process alone. A build holds at most one shard of task records (`--shard-size`), so
its peak memory should not grow with the number of tasks; the last line compares the largest build's peak with the
smallest's and extrapolates the wall time to 100,000 tasks from the two largest builds.

  python scripts/bench_scale.py --scenarios tensor                          # 1k and 10k tensor tasks
  python scripts/bench_scale.py --scenarios tensor --sizes 1000,10000,30000 --mutants 0
  python scripts/bench_scale.py --full --log builds                         # also 100k tasks: hours
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build import SAMPLE_S, measure  # noqa: E402

FULL = 100_000


def builder_help() -> str:
    return subprocess.run([sys.executable, "-m", "builder", "--help"], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))).stdout


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", default="tensor,session,voice", help="passed to the builder (default: all three)")
    p.add_argument("--sizes", default="1000,10000",
                   help="total tasks of each build, split evenly over the scenarios (default 1000,10000)")
    p.add_argument("--full", action="store_true", help=f"add a {FULL:,}-task build (run by hand: it takes hours)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None, help="sandbox workers (default: the builder's, one per core)")
    p.add_argument("--mutants", type=int, default=None, help="passed to the builder (0: no mutation analysis)")
    p.add_argument("--shard-size", type=int, default=None, help="passed to the builder (default: the builder's)")
    p.add_argument("--executor", default=None,
                   help="passed to the builder as --executor (local, or ray for a local Ray instance)")
    p.add_argument("--log", type=Path, default=None,
                   help="write each build's progress (its stderr) to LOG/<tasks>.log instead of discarding it")
    p.add_argument("--every", type=float, default=SAMPLE_S,
                   help=f"seconds between memory samples (default {SAMPLE_S})")
    a = p.parse_args(argv)
    try:
        a.sizes = sorted({int(s) for s in a.sizes.split(",") if s.strip()} | ({FULL} if a.full else set()))
    except ValueError:
        p.error(f"--sizes {a.sizes!r}: give whole numbers separated by commas, e.g. 1000,10000")
    if not a.sizes or min(a.sizes) < 1:
        p.error("--sizes needs at least one build of 1 task or more")
    if a.executor and "--executor" not in builder_help():
        p.error("this builder has no --executor option yet; leave --executor out to use the local sandbox")
    return a


def command(a: argparse.Namespace, n: int, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "builder", "--scenarios", a.scenarios, "--n", str(n), "--seed", str(a.seed),
           "--created-at", "2026-01-01", "--out", str(out)]
    for option, value in (("--workers", a.workers), ("--mutants", a.mutants), ("--shard-size", a.shard_size),
                          ("--executor", a.executor)):
        if value is not None:
            cmd += [option, str(value)]
    return cmd


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    scenarios = [s for s in a.scenarios.split(",") if s.strip()]
    if a.log:
        a.log.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in a.sizes:
        n = math.ceil(size / len(scenarios))
        with tempfile.TemporaryDirectory() as tmp:
            log = open(a.log / f"{size}.log", "w") if a.log else subprocess.DEVNULL
            try:
                seconds, cpu, peak, peak_builder, out = measure(command(a, n, Path(tmp) / "stateeval"), a.every, log)
            finally:
                if a.log:
                    log.close()
        tasks = n * len(scenarios)
        kept = sum(int(k) for k in re.findall(r"kept (\d+) of", out))
        rows.append((tasks, seconds, peak))
        print(f"{tasks} tasks ({n} per scenario: {a.scenarios}; {kept} kept): {seconds:.1f} s wall, "
              f"{tasks / seconds:.2f} tasks/s, {cpu:.0f} s CPU, peak memory {peak / 2**20:.0f} MiB (builder and workers), "
              f"{peak_builder / 2**20:.0f} MiB (builder alone)", flush=True)
    if len(rows) > 1:
        (small, _, low), (big, t_big, high) = rows[0], rows[-1]
        (mid, t_mid, _) = rows[-2]
        per_task = (t_big - t_mid) / (big - mid)
        print(f"peak memory at {big} tasks / at {small} tasks: {high / low:.2f}x; wall time at {FULL} tasks "
              f"extrapolated from the {mid}- and {big}-task builds: {(t_big + (FULL - big) * per_task) / 3600:.1f} h "
              f"({1 / per_task:.2f} tasks/s at the margin; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
