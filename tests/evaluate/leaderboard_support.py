"""A real leaderboard for the leaderboard tests: runs made with `python -m evaluate`, submitted and validated.

Built once per test process and shared by test_leaderboard.py and test_leaderboard_browser.py:

- dataset v1.0.0: the session's 12-task tensor dataset (`small_dataset`), three runs on it:
  the reference model (100%), and two `--samples` runs with some wrong answers (different scores and errors);
- dataset v2.0.0: a second, 3-task build (another seed), with a reference run, so the board has two versions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Wrong answers of the samples runs, one per error class; "" is a sample with no code.
WRONG = ("RESULT = None\n", "x = (\n", "raise RuntimeError('boom')\n", "")


def cli(module: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def cli_start(module: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def cli_wait(proc: subprocess.Popen, timeout: int = 300) -> subprocess.CompletedProcess:
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    return proc


@dataclass
class Board:
    work: Path
    dataset_v1: Path
    dataset_v2: Path
    runs: dict[str, Path]  # label -> run folder (results.json inside)
    samples: dict[str, Path]  # label -> the --samples file of that run
    root: Path  # leaderboard root (submissions/ inside)
    submissions: dict[str, Path]  # label -> validated submission folder


_BOARD: dict[str, Board] = {}


def wrong_samples(dataset: Path, path: Path, wrong_every: int) -> Path:
    from core.records import load_tasks

    tasks, _ = load_tasks(str(dataset))
    rows = []
    for i, t in enumerate(tasks):
        code = WRONG[(i // wrong_every) % len(WRONG)] if i % wrong_every == 0 else t.reference_program
        rows.append({"task_id": t.task_id, "code": code})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def board(small_dataset: Path, sandbox, tmp_path_factory) -> Board:
    """The shared board (made on first use); its submissions validated in `sandbox`."""
    if "board" in _BOARD:
        return _BOARD["board"]
    from builder.config import BuildConfig
    from builder.pipeline import build
    from evaluate.leaderboard import submit, validate

    work = tmp_path_factory.mktemp("leaderboard")
    out = work / "results"
    v2 = work / "stateeval-v2"
    samples = {"zeta": wrong_samples(small_dataset, work / "zeta.jsonl", 3),
               "beta": wrong_samples(small_dataset, work / "beta.jsonl", 2)}
    v1_runs = [("--model", "reference")] + [("--samples", path) for path in samples.values()]
    # The three runs on v1 go side by side (each one mostly waits for its sandbox workers to import torch).
    procs = [cli_start("evaluate", *how, "--dataset", small_dataset, "--revision", "v1.0.0", "--out", out,
                       "--workers", "1") for how in v1_runs]
    build(BuildConfig(out=str(v2), scenarios=["tensor"], n=3, seed=1, created_at="2026-02-01", workers=1,
                      world_mutants=False))
    procs.append(cli_start("evaluate", "--model", "reference", "--dataset", v2, "--revision", "v2.0.0", "--out",
                           out, "--workers", "1"))
    for proc in procs:
        ok(cli_wait(proc))
    runs = {"reference": out / "reference" / "v1.0.0", "zeta": out / "zeta" / "v1.0.0",
            "beta": out / "beta" / "v1.0.0", "reference-v2": out / "reference" / "v2.0.0"}

    root = work / "leaderboard"
    proc = ok(cli("evaluate.leaderboard", "submit", runs["reference"], "--name", "Reference replay",
                  "--org", "StateEval", "--weights", "open", "--link", "https://example.org/reference",
                  "--root", root))
    subs = {"reference": Path(proc.stdout.split("wrote ", 1)[1].split("\n", 1)[0])}
    subs["zeta"] = submit(runs["zeta"], "Zeta-7B", org="Zeta Labs", params="7B", weights="closed",
                          samples=samples["zeta"], root=root)
    subs["beta"] = submit(runs["beta"], "Beta-70B", org="Beta AI", params="70B", weights="open",
                          samples=samples["beta"], root=root)
    subs["reference-v2"] = submit(runs["reference-v2"], "Reference replay v2", org="StateEval", weights="open",
                                  root=root)
    for label, folder in subs.items():
        dataset = v2 if label.endswith("v2") else small_dataset
        report = validate(folder, str(dataset), sandbox=sandbox)
        assert report.ok, report.format()
    _BOARD["board"] = Board(work, Path(small_dataset), v2, runs, samples, root, subs)
    return _BOARD["board"]


def expected_pass1(submission: Path) -> float:
    return json.loads((submission / "results.json").read_text())["summary"]["overall"]["pass@1"]
