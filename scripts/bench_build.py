"""Build time and peak memory for one build, workers included.

Runs `python -m builder` in a child process and samples the resident memory of its whole process tree
(the builder plus its sandbox workers and their forked children) from /proc every 100 ms. Memory is the
proportional set size (PSS): pages shared between forked children (torch's libraries) are counted once,
not once per process. Linux only.

  python scripts/bench_build.py --scenarios tensor --n 60
  python scripts/bench_build.py --scenarios session --n 60 --seed 777 --compare   # the cost of mutation analysis
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE")
# How often the build's memory is sampled. A sample reads the memory map of every process in the build (a few ms
# each with torch loaded): more often, the sampling itself would take a large share of a 2-core machine.
SAMPLE_S = 0.1


def _pss(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    with open(f"/proc/{pid}/statm") as f:  # older kernels: resident set size
        return int(f.read().split()[1]) * PAGE


def tree_rss(root: int) -> int:
    """Proportional resident bytes of `root` and all its descendants.

    The process tree comes from /proc/*/stat (cheap); only its own members' smaps_rollup is read, since reading
    that file costs the kernel a walk of the process's memory map: reading it for every process on the machine,
    every 20 ms, kept a core of a 2-core machine busy and slowed the build it measured down by half."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            total += _pss(str(pid))
        except OSError:  # gone since the listing
            pass
        stack.extend(children.get(pid, []))
    return total


def measure(cmd: list[str], every_s: float = SAMPLE_S,
            stderr=subprocess.DEVNULL) -> tuple[float, float, int, int, str]:
    """(wall seconds, CPU seconds, peak bytes of the process tree, peak bytes of the root process alone, its stdout)
    of one command run with this checkout first on the import path, its memory sampled every `every_s` seconds.
    A failed command ends the script with its output.

    The CPU seconds are those of the whole process tree (every process of the build is waited for by its parent,
    so the kernel adds its time to the builder's): unlike the wall time, they hardly move with what else the
    machine runs."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    peak = peak_root = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        try:
            peak_root = max(peak_root, _pss(str(proc.pid)))
        except OSError:  # it ended between the two reads
            pass
        time.sleep(every_s)
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    out = proc.stdout.read()
    if proc.returncode:
        sys.exit(f"{' '.join(cmd[1:])} failed (exit {proc.returncode}):\n{out}")
    return seconds, cpu, peak, peak_root, out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_build(a: argparse.Namespace, mutants: int | None) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, peak bytes, the builder's output) of one build in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "builder", "--scenarios", a.scenarios, "--n", str(a.n), "--seed", str(a.seed),
               "--out", str(Path(tmp) / "stateeval")]
        if a.workers:
            cmd += ["--workers", str(a.workers)]
        if mutants is not None:
            cmd += ["--mutants", str(mutants)]
        seconds, cpu, peak, _, out = measure(cmd)
    return seconds, cpu, peak, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", default="tensor")
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--mutants", type=int, default=None, help="passed to the builder (0: no mutation analysis)")
    p.add_argument("--compare", action="store_true",
                   help="build twice back to back, with --mutants 0 and then with --mutants (default: the "
                        "builder's), and print the ratios of the two wall and CPU times: what mutation analysis costs")
    a = p.parse_args()
    runs = [0, a.mutants] if a.compare else [a.mutants]
    times, cpus = [], []
    for mutants in runs:
        load = os.getloadavg()[0]
        seconds, cpu, peak, out = run_build(a, mutants)
        times.append(seconds)
        cpus.append(cpu)
        print(next((line for line in out.splitlines() if "content hash" in line), "") if a.compare else out.strip())
        mutation = "" if mutants is None else f", --mutants {mutants}"
        print(f"build of {a.n} programs per scenario ({a.scenarios}{mutation}): {seconds:.1f} s wall, {cpu:.1f} s CPU, "
              f"peak memory {peak / 2**20:.0f} MiB (process tree, {os.cpu_count()} cores; load average "
              f"{load:.1f} before, {os.getloadavg()[0]:.1f} after)")
    if a.compare:
        print(f"ratio (with mutation analysis / --mutants 0): {times[1] / times[0]:.2f}x wall, "
              f"{cpus[1] / cpus[0]:.2f}x CPU")

if __name__ == "__main__":
    main()
