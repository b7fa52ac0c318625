"""Chaos benchmark: do faults outside the model change a verdict or a dataset's bytes?

  python scripts/bench_faults.py [--n 40] [--seed 4242] [--n-samples 5] [--every 2] [--executor local|ray]

It builds a dataset and scores it undisturbed, then does the same again while a killer thread SIGKILLs one process
of the run every `--every` seconds: a sandbox worker (`--target workers`), or a worker's session service
(`--target services`), or each in turn (`both`, the default). It compares everything a user relies on:

- the build: the content hash of the dataset built under kills against the undisturbed one;
- `--model reference --n-samples K`: every sample must pass, under kills as undisturbed;
- held-out wrong programs (`--wrong-per-task` mutants of each reference, made by `scripts/mutation_audit.py`, which
  shares no code with the builder): every sample's status and test-case statuses must equal the undisturbed run's;
- afterwards: no `stateeval-*` folder of the run left in its temporary directory, no process of the run running.

It prints the kills, the jobs that ran again (`retried`), the samples without a verdict (`infra_error`) and every
difference, and exits 1 when there is one. Each run gets a temporary directory of its own (TMPDIR), so the killer
and the leftover check see that run's processes and folders only. `tests/scripts/test_bench_faults.py` runs a small
version with a bounded number of kills.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builder.config import BuildConfig  # noqa: E402
from builder.pipeline import build  # noqa: E402
from core.records import load_tasks  # noqa: E402
from core.sandbox.harness import SandboxFault  # noqa: E402
from core.sandbox.tempdirs import PREFIX  # noqa: E402
from evaluate.run import EvalConfig, run  # noqa: E402

WORKERS, SERVICES = "workers", "services"
# What a process of each kind runs: a sandbox worker, or the session service a worker started.
MARKS = {WORKERS: ("-m", "core.sandbox.worker"), SERVICES: ("scenarios.session", "serve")}


def _cmdline(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _stat(pid: str) -> tuple[str, str]:
    """A process's state letter and parent pid ("X", "0" when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state, parent = f.read().rpartition(")")[2].split()[:2]
            return state, parent
    except OSError:
        return "X", "0"


def processes(kind: str, root: str, children: bool = False) -> list[int]:
    """Live processes of `kind` that belong to the run whose temporary directory is `root`: a worker's folder
    (`--folder`) and a service's database (`--db`, inside its worker's folder) lie under it. A worker's forked
    test-case children have its command line; they run the program, so killing one is the program's verdict (as a
    program that kills itself), not a fault: they are left out unless `children`."""
    def ours(pid: str) -> bool:
        text = _cmdline(pid)
        return all(m in text for m in MARKS[kind]) and root in " ".join(text)

    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid() and ours(pid):
            state, parent = _stat(pid)
            if state not in ("Z", "X") and (children or kind != WORKERS or not ours(parent)):
                found.append(int(pid))
    return sorted(found)


def leftovers(root: str) -> list[str]:
    """What a finished run left: sandbox folders in its temporary directory and processes of its own."""
    left = [f"folder {p.name}" for p in Path(root).iterdir() if p.name.startswith(PREFIX)]
    for kind in MARKS:
        left += [f"{kind[:-1]} process {pid}" for pid in processes(kind, root, children=True)]
    return left


class Killer(threading.Thread):
    """SIGKILLs one process of `kinds` (chosen with a seeded generator) every `every` seconds, at most `limit` times
    (None: until stopped). With a limit no larger than the sandbox's retries, no job can be lost on every try,
    whatever the timing: the small version in the tests uses that."""

    def __init__(self, root: str, kinds: tuple[str, ...], every: float, limit: int | None = None, seed: int = 0):
        super().__init__(daemon=True)
        self.root, self.kinds, self.every, self.limit = root, kinds, every, limit
        self.rng = random.Random(seed)
        self.kills: dict[str, int] = {k: 0 for k in kinds}
        self._halt = threading.Event()

    def run(self) -> None:
        turn = 0
        while not self._halt.wait(self.every):
            if self.limit is not None and sum(self.kills.values()) >= self.limit:
                return
            kind = self.kinds[turn % len(self.kinds)]
            victims = processes(kind, self.root)
            if not victims:
                continue
            try:
                os.kill(self.rng.choice(victims), signal.SIGKILL)
            except ProcessLookupError:
                continue
            self.kills[kind] += 1
            turn += 1

    def stop(self) -> dict[str, int]:
        self._halt.set()
        self.join()
        return self.kills


@contextmanager
def own_tmpdir(base: str | None = None):
    """A temporary directory for one run (TMPDIR, and this process's `tempfile`), removed afterwards."""
    path = tempfile.mkdtemp(prefix="sef-", dir=base)
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"], tempfile.tempdir = path, None
    try:
        yield path
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        tempfile.tempdir = None
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class Disturbed:
    """What one run under kills did: the kills by kind, and what it left behind."""

    kills: dict = field(default_factory=dict)
    left: list = field(default_factory=list)


def disturbed(work, kinds: tuple[str, ...], every: float, limit: int | None, seed: int, settle_s: float = 30.0):
    """`work()` (which returns its result) with a Killer on its own temporary directory; then what it left there,
    waiting up to `settle_s` for processes the kernel is still taking down."""
    with own_tmpdir() as root:
        killer = Killer(root, kinds, every, limit, seed)
        killer.start()
        try:
            result = work()
        finally:
            kills = killer.stop()
        deadline = time.monotonic() + settle_s  # a bound on how long dying processes take, not a speed check
        while (left := leftovers(root)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return result, Disturbed(kills, left)


def undisturbed(work):
    with own_tmpdir() as root:
        result = work()
        return result, leftovers(root)


def verdicts(report: dict) -> dict:
    """(task, sample) -> its status and test-case statuses."""
    return {(r["task_id"], r["sample"]): (r["status"], tuple(c["status"] for c in r.get("cases", [])))
            for r in report["samples"]}


def differences(a: dict, b: dict) -> list[str]:
    va, vb = verdicts(a), verdicts(b)
    return [f"{k[0]}#{k[1]}: {va.get(k)} -> {vb.get(k)}" for k in sorted(set(va) | set(vb)) if va.get(k) != vb.get(k)]


def wrong_programs(dataset: str, per_task: int, seed: int, path: Path) -> int:
    """Held-out wrong programs: `per_task` mutants of each reference by the independent audit's operators."""
    spec = importlib.util.spec_from_file_location("mutation_audit", ROOT / "scripts" / "mutation_audit.py")
    audit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(audit)
    tasks, _ = load_tasks(dataset)
    lines = [{"task_id": t.task_id, "code": code} for t in tasks for _, code in audit.select(t, per_task, seed)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return len(lines)


def score(config: EvalConfig) -> dict:
    report = run(config)
    report["retried"] = report["sandbox"].get("retried", 0)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=40, help="programs per scenario for the build (default 40)")
    p.add_argument("--scenarios", default="tensor,session,voice")
    p.add_argument("--seed", type=int, default=4242, help="build seed (default 4242)")
    p.add_argument("--n-samples", type=int, default=5, help="reference samples per task (default 5)")
    p.add_argument("--wrong-per-task", type=int, default=4, help="held-out wrong programs per task (default 4)")
    p.add_argument("--every", type=float, default=2.0, help="seconds between two kills (default 2)")
    p.add_argument("--limit", type=int, default=None, help="kills per disturbed run at most (default: no limit)")
    p.add_argument("--target", choices=(WORKERS, SERVICES, "both"), default="both",
                   help="what is killed: sandbox workers, session services, or each in a run of its own (default)")
    p.add_argument("--executor", choices=("local", "ray"), default="local")
    p.add_argument("--workers", type=int, default=None, help="sandbox workers (default: cores)")
    p.add_argument("--no-build", action="store_true", help="skip the build under kills (score only)")
    p.add_argument("--out", default=None, help="keep the datasets and results here (default: a temporary folder)")
    a = p.parse_args(argv)

    out = Path(a.out or tempfile.mkdtemp(prefix="bench-faults-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    targets = [(WORKERS,), (SERVICES,)] if a.target == "both" else [(a.target,)]
    base = BuildConfig(out=str(out / "undisturbed"), scenarios=a.scenarios.split(","), n=a.n, seed=a.seed,
                       created_at="2026-11-24", workers=a.workers, executor=a.executor)
    problems: list[str] = []

    def note(line: str) -> None:
        print(line, flush=True)

    started = time.perf_counter()
    manifest, left = undisturbed(lambda: build(base)["manifest"])
    note(f"build undisturbed: content hash {manifest['content_hash'][:12]} ({time.perf_counter() - started:.0f} s)")
    problems += [f"undisturbed build left {x}" for x in left]
    dataset = base.out
    for kinds in ([] if a.no_build else targets):
        config = replace(base, out=str(out / f"build-{kinds[0]}"))
        stopped = []

        def attempt(config=config, stopped=stopped):
            try:
                return build(config)["manifest"]
            except SandboxFault as exc:  # jobs lost on every retry: the build stops rather than differ
                stopped.append(exc)
                return None

        got, d = disturbed(attempt, kinds, a.every, a.limit, a.seed)
        if stopped:  # the same command again, undisturbed, resumes from the finished shards
            note(f"build killing {kinds[0]}: kills {d.kills}, stopped ({stopped[0]}); resuming it undisturbed")
            problems.append(f"the build under {kinds[0]} kills stopped: it left jobs without a verdict")
            got, _ = undisturbed(lambda: build(config)["manifest"])
        same = got["content_hash"] == manifest["content_hash"]
        note(f"build killing {kinds[0]}: kills {d.kills}, content hash {got['content_hash'][:12]} "
             f"({'the same' if same else 'DIFFERENT'}), left {len(d.left)}")
        if not same:
            problems.append(f"the build under {kinds[0]} kills has another content hash")
        problems += [f"build under {kinds[0]} kills left {x}" for x in d.left]

    samples = out / "wrong.jsonl"
    n_wrong = wrong_programs(dataset, a.wrong_per_task, a.seed, samples)
    runs = {
        "reference": EvalConfig(model="reference", dataset=dataset, n_samples=a.n_samples, workers=a.workers,
                                executor=a.executor),
        "wrong": EvalConfig(samples=str(samples), dataset=dataset, workers=a.workers, executor=a.executor),
    }
    for name, config in runs.items():
        calm, left = undisturbed(lambda: score(replace(config, out=str(out / f"results-{name}-undisturbed"))))
        problems += [f"undisturbed {name} scoring left {x}" for x in left]
        o = calm["summary"]["overall"]
        note(f"{name} undisturbed: {len(calm['samples'])} samples"
             + (f" ({n_wrong} wrong programs)" if name == "wrong" else "") + f", pass@1 {o['pass@1']:.4f}")
        if name == "reference" and o["pass@1"] != 1.0:
            problems.append(f"the reference scores {o['pass@1']:.4f} undisturbed")
        for kinds in targets:
            cfg = replace(config, out=str(out / f"results-{name}-{kinds[0]}"))
            got, d = disturbed(lambda: score(cfg), kinds, a.every, a.limit, a.seed)
            diff = differences(calm, got)
            lost = got["summary"]["overall"].get("infra_error", 0)
            pass1 = got["summary"]["overall"]["pass@1"]
            note(f"{name} killing {kinds[0]}: kills {d.kills}, retried {got['retried']}, infra_error {lost}, "
                 f"pass@1 {pass1 if pass1 is None else f'{pass1:.4f}'}, {len(diff)} verdicts differ, "
                 f"left {len(d.left)}")
            problems += [f"{name} under {kinds[0]} kills: {x}" for x in diff[:20] + d.left]
            if lost:  # the same command again, undisturbed, scores only those
                again, _ = undisturbed(lambda: score(cfg))
                rest = differences(calm, again)
                note(f"{name} killing {kinds[0]}, the same command again: {len(rest)} verdicts differ from the "
                     f"undisturbed run, infra_error {again['summary']['overall'].get('infra_error', 0)}")
                problems += [f"{name} under {kinds[0]} kills, run again: {x}" for x in rest[:20]]
    note(f"done in {time.perf_counter() - started:.0f} s; results in {out}")
    for line in problems:
        print(f"PROBLEM: {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
