"""`python -m evaluate` as users run it: exit codes, the printed table, results.json, and dataset checks.

The truth about a dataset folder (its task ids and reference programs) is read here straight from the shards its
MANIFEST.json lists, never through the loader under test. Each command gets this module's own Hugging Face
datasets cache, so a folder loaded on this machine before cannot stand in for the one under test.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.records import content_hash, file_sha256
from tests.conftest import interruptible
from tests.evaluate.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hf_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("hf-datasets-cache")


def evaluate(*args: str, hf_cache: Path, cwd: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_DATASETS_CACHE=str(hf_cache))
    return subprocess.run(
        [sys.executable, "-m", "evaluate", *args],
        cwd=cwd or ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )


def report_path(proc: subprocess.CompletedProcess) -> Path:
    match = re.search(r"^wrote (\S+results\.json)$", proc.stdout, re.M)
    assert match, proc.stdout
    return Path(match.group(1))


def written(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(report_path(proc).read_text())


def write_samples(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def shard_rows(folder: Path) -> list[dict]:
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    rows = []
    for rel in sorted(manifest["files"]):
        rows += pq.read_table(folder / rel, columns=["task_id", "scenario", "reference_program"]).to_pylist()
    return rows


@pytest.fixture(scope="module")
def manifest(small_dataset):
    return json.loads((Path(small_dataset) / "MANIFEST.json").read_text())


@pytest.fixture(scope="module")
def rows(small_dataset, manifest):
    rows = shard_rows(Path(small_dataset))
    assert len(rows) == sum(manifest["counts"].values())
    return rows


@pytest.fixture(scope="module")
def reference_run(small_dataset, tmp_path_factory, hf_cache):
    out = tmp_path_factory.mktemp("results")
    args = ("--model", "reference", "--dataset", str(small_dataset), "--out", str(out), "--workers", "2")
    return evaluate(*args, hf_cache=hf_cache), out, args


def test_reference_model_scores_100_percent(reference_run, rows, manifest):
    proc, out, _ = reference_run
    assert proc.returncode == 0, proc.stderr
    assert "100.0%" in proc.stdout
    table = proc.stdout.splitlines()
    assert table[0].split()[:3] == ["scenario", "tasks", "pass@1"]
    assert any(line.split()[:3] == ["overall", str(len(rows)), "100.0%"] for line in table)

    assert report_path(proc).is_relative_to(out)
    report = written(proc)
    assert report["model"] == "reference"
    assert report["dataset"]["content_hash"] == manifest["content_hash"]
    assert report["dataset"]["tasks"] == len(rows)
    samples = report["samples"]
    assert sorted(s["task_id"] for s in samples) == sorted(r["task_id"] for r in rows)
    assert {s["status"] for s in samples} == {"pass"}
    assert all(s["cases"] and all(c["status"] == "pass" for c in s["cases"]) for s in samples)
    assert report["summary"]["overall"]["pass@1"] == 1.0
    assert report["summary"]["scenarios"]["tensor"]["pass@1"] == 1.0
    assert report["summary"]["overall"]["statuses"]["pass"] == len(rows)
    # the reference makes the reference's calls: full partial credit, and no cause
    metrics = ("api_match", "arg_match", "seq_match", "connected_match", "binding_accuracy")
    for s in samples:
        assert {m: s["diagnosis"][m] for m in metrics} == dict.fromkeys(metrics, 1.0), s["task_id"]
        assert s["diagnosis"]["first_divergence"] is None and "cause" not in s["diagnosis"]
    diagnosis = report["summary"]["overall"]["diagnosis"]
    assert {m: diagnosis[m] for m in metrics} == dict.fromkeys(metrics, 1.0)
    assert sum(diagnosis["causes"].values()) == 0


def test_reference_run_keeps_its_generations(reference_run, rows):
    proc, _, _ = reference_run
    lines = (report_path(proc).parent / "generations.jsonl").read_text().splitlines()
    generations = [json.loads(line) for line in lines]
    assert sorted(g["task_id"] for g in generations) == sorted(r["task_id"] for r in rows)
    by_id = {r["task_id"]: r for r in rows}
    for g in generations:
        assert by_id[g["task_id"]]["reference_program"].strip() in g["reply"]


def test_rerun_resumes_from_the_generations(reference_run, rows, hf_cache):
    proc, _, args = reference_run
    before = (report_path(proc).parent / "generations.jsonl").read_text()
    again = evaluate(*args, hf_cache=hf_cache)
    assert again.returncode == 0, again.stderr
    assert "resuming" in again.stdout
    assert (report_path(again).parent / "generations.jsonl").read_text() == before  # nothing generated twice
    assert written(again)["summary"]["overall"]["pass@1"] == 1.0


def test_samples_that_return_none_score_zero(small_dataset, rows, tmp_path, hf_cache):
    samples = write_samples(tmp_path / "nothing.jsonl", [{"task_id": r["task_id"], "code": "RESULT = None\n"} for r in rows])
    proc = evaluate("--samples", str(samples), "--dataset", str(small_dataset), "--out", str(tmp_path / "out"),
                    "--workers", "2", hf_cache=hf_cache)
    assert proc.returncode == 0, proc.stderr
    table = [re.split(r"\s{2,}", line) for line in proc.stdout.splitlines()[:4]]  # cells: two spaces apart
    overall = dict(zip(table[0], next(row for row in table if row[0] == "overall")))
    # wrong, but every program ran; each rate with its interval over the tasks
    assert overall["pass@1"].startswith("0.0% [0.0, ") and overall["success@1"].startswith("100.0% [")
    assert overall["success@1"].endswith(", 100.0]")
    assert "[low, high]: the 95% interval over tasks; Wilson score interval" in proc.stdout
    report = written(proc)
    assert report["model"] == "nothing"  # named after the samples file
    assert report["summary"]["overall"]["success@1"] == 1.0
    assert report["summary"]["overall"]["pass@1"] == 0.0
    assert len(report["samples"]) == len(rows)
    assert {s["status"] for s in report["samples"]} == {"result_error"}
    assert report["summary"]["overall"]["statuses"]["result_error"] == len(rows)
    # no call made: every sample misses every call, which the table names as the top cause
    assert {s["diagnosis"]["cause"] for s in report["samples"]} == {"missing_call"}
    assert report["summary"]["overall"]["diagnosis"]["arg_match"] == 0.0
    assert overall["arg_match"] == "0.00" and proc.stdout.splitlines()[2 + 1].endswith(f"missing_call {len(rows)}")


def test_several_samples_per_task_give_pass_at_k(small_dataset, rows, tmp_path, hf_cache):
    n = 5
    lines = []
    for r in rows:
        # samples 1 and 3 are right: pass@1 = 2/5 and pass@5 = 1 for every task
        for s in range(n):
            lines.append({"task_id": r["task_id"], "code": r["reference_program"] if s in (1, 3) else "RESULT = None\n"})
    samples = write_samples(tmp_path / "five.jsonl", lines)
    proc = evaluate("--samples", str(samples), "--dataset", str(small_dataset), "--out", str(tmp_path / "out"),
                    "--workers", "2", hf_cache=hf_cache)
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0].split()
    assert "pass@1" in header and "pass@5" in header and "pass@10" not in header
    assert "40.0%" in proc.stdout

    report = written(proc)
    assert report["sampling"]["n_samples"] == n
    overall = report["summary"]["overall"]
    assert overall["pass@1"] == pytest.approx(0.4)
    assert overall["pass@5"] == pytest.approx(1.0)
    assert "pass@10" not in overall
    # every k <= n, for pass@k and success@k; the wrong samples (RESULT = None) ran, so every sample succeeded
    assert [k for k in overall if "@" in k] == [f"pass@{k}" for k in range(1, 6)] + [f"success@{k}" for k in range(1, 6)]
    assert overall["pass@2"] == pytest.approx(0.7)
    assert overall["success@1"] == 1.0
    assert "success@1" in header
    per_task: dict[str, list] = {}
    for s in report["samples"]:
        per_task.setdefault(s["task_id"], []).append(s)
    assert set(per_task) == {r["task_id"] for r in rows}
    for task_samples in per_task.values():
        assert [s["sample"] for s in task_samples] == list(range(n))
        assert [s["status"] for s in task_samples] == ["result_error", "pass", "result_error", "pass", "result_error"]


def test_unknown_task_id_in_samples(small_dataset, rows, tmp_path, hf_cache):
    samples = write_samples(tmp_path / "bad.jsonl", [
        {"task_id": rows[0]["task_id"], "code": "RESULT = None\n"},
        {"task_id": "tensor-9999", "code": "RESULT = None\n"},
    ])
    proc = evaluate("--samples", str(samples), "--dataset", str(small_dataset), "--out", str(tmp_path / "out"),
                    hf_cache=hf_cache)
    assert proc.returncode == 2
    assert "tensor-9999" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_samples_for_the_whole_dataset_score_a_selection_of_it(small_dataset, rows, tmp_path, hf_cache):
    """--limit (or --scenario, --since) scores part of the dataset: answers to the other tasks are left out, not
    refused as unknown; an answers file with none for the part selected is refused."""
    samples = write_samples(tmp_path / "refs.jsonl", [{"task_id": r["task_id"], "code": r["reference_program"]}
                                                      for r in rows])
    proc = evaluate("--samples", str(samples), "--dataset", str(small_dataset), "--limit", "2",
                    "--out", str(tmp_path / "out"), hf_cache=hf_cache)
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["task_id"] for r in written(proc)["samples"]) == sorted(r["task_id"] for r in rows)[:2]
    others = write_samples(tmp_path / "others.jsonl", [{"task_id": "tensor-9999", "code": "RESULT = None\n"}])
    proc = evaluate("--samples", str(others), "--dataset", str(small_dataset), "--limit", "2",
                    "--out", str(tmp_path / "out2"), hf_cache=hf_cache)
    assert proc.returncode == 2 and "holds no answers for the tasks selected" in proc.stderr


def test_an_empty_samples_file_is_refused_in_one_line_and_writes_nothing(small_dataset, tmp_path, hf_cache):
    """Nothing scored is no result: it used to exit 0 with a results.json over 0 tasks."""
    samples = write_samples(tmp_path / "empty.jsonl", [])
    proc = evaluate("--samples", str(samples), "--dataset", str(small_dataset), "--out", str(tmp_path / "out"),
                    hf_cache=hf_cache)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr == (f"error: {samples} holds no answers, so there is nothing to score; pass a JSONL file with "
                           'one {"task_id": ..., "code": ...} line per answer\n')
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("how", ["--model", "--samples"])
def test_an_out_that_cannot_be_written_is_refused_in_one_line_before_scoring(small_dataset, rows, tmp_path, hf_cache,
                                                                            unwritable, how):
    """A model run cannot lock its folder; a --samples run, which writes only at its end, asks first."""
    samples = write_samples(tmp_path / "refs.jsonl", [{"task_id": r["task_id"], "code": r["reference_program"]}
                                                      for r in rows])
    folder = unwritable.folder / "out" / ("reference" if how == "--model" else "refs") / "local"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_DATASETS_CACHE=str(hf_cache))
    proc = subprocess.run(unwritable.argv([sys.executable, "-m", "evaluate", how,
                                           "reference" if how == "--model" else samples, "--dataset", small_dataset,
                                           "--out", unwritable.folder / "out"]),
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert re.fullmatch(f"error: cannot write {re.escape(str(folder))}: {unwritable.why}; .*--out\n", proc.stderr)
    assert proc.stdout == ""  # nothing was scored
    assert not os.path.lexists(unwritable.folder / "out")


@pytest.mark.parametrize("model, why", [
    ("qwen", r"the 'vllm' package is not installed; run: pip install 'stateeval\[vllm\]' on a machine with a CUDA "
             "GPU, which vLLM needs; without one, use --backend hf"),
    ("no-such-model", "unknown model alias 'no-such-model'"),
    ("gpt-4.1-nano", "set OPENAI_API_KEY to use 'gpt-4.1-nano'"),
])
def test_a_run_that_cannot_start_leaves_no_folder(small_dataset, tmp_path, monkeypatch, capsys, model, why):
    """It used to leave results/<model>/local/.evaluate.lock in a folder of its own making."""
    from evaluate.__main__ import main

    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError, wherever vllm is installed
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "results").mkdir()  # the folder that was there before stays, even empty
    assert main(["--model", model, "--dataset", str(small_dataset), "--out", str(tmp_path / "results")]) == 2
    assert re.match(f"error: {why}", capsys.readouterr().err)
    assert list((tmp_path / "results").iterdir()) == []


def test_the_lock_and_the_folders_a_run_made_go_only_when_it_wrote_nothing_there(tmp_path):
    from evaluate.runlock import LOCK, exclusive

    folder = tmp_path / "results" / "m" / "local"
    with exclusive(folder):
        assert (folder / LOCK).read_text() == f"{os.getpid()}\n"
    assert list(tmp_path.iterdir()) == []
    with exclusive(folder):
        (folder / "generations.jsonl").write_text("{}\n")  # a reply cached: the folder and its lock stay
    assert sorted(p.name for p in folder.iterdir()) == [LOCK, "generations.jsonl"]


def test_a_lock_file_removed_while_a_run_locks_it_is_locked_afresh(tmp_path, monkeypatch):
    """The run that held the lock wrote nothing and removed the file between this run's open and its flock: this
    run must hold the file now at that name, or a third run would lock a new file and write the folder too."""
    import fcntl

    from evaluate.runlock import LOCK, RunFolderError, exclusive

    folder = tmp_path / "m" / "local"
    real_flock, calls = fcntl.flock, []

    def flock(fd, operation):
        if not calls:
            (folder / LOCK).unlink()
        calls.append(fd)
        return real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    with exclusive(folder):
        assert len(calls) == 2  # locked the removed file, saw it gone, locked the new one
        with pytest.raises(RunFolderError, match="another python -m evaluate is writing"):
            with exclusive(folder):
                pass


def test_missing_dataset_folder_says_how_to_build_one(tmp_path, hf_cache):
    proc = evaluate("--model", "reference", "--dataset", "no-such-stateeval", "--out", str(tmp_path / "out"),
                    cwd=tmp_path, hf_cache=hf_cache)
    assert proc.returncode == 2
    assert "no-such-stateeval" in proc.stderr
    assert "python -m builder" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("form", ["relative", "absolute"])
def test_missing_dataset_path_says_how_to_build_one(tmp_path, hf_cache, form):
    dataset = "./no-such-stateeval" if form == "relative" else str(tmp_path / "no-such-stateeval")
    proc = evaluate("--model", "reference", "--dataset", dataset, "--out", str(tmp_path / "out"), cwd=tmp_path,
                    hf_cache=hf_cache, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "python -m builder" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_corrupted_shard_is_named(small_dataset, tmp_path, hf_cache):
    copy = tmp_path / "stateeval"
    shutil.copytree(small_dataset, copy)
    shards = sorted((copy / "data").glob("*.parquet"))
    assert shards
    shard = shards[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))

    proc = evaluate("--model", "reference", "--dataset", str(copy), "--out", str(tmp_path / "out"), hf_cache=hf_cache)
    assert proc.returncode == 2
    assert shard.name in proc.stderr
    assert "MANIFEST.json" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_missing_shard_is_named(small_dataset, tmp_path, hf_cache):
    copy = tmp_path / "stateeval"
    shutil.copytree(small_dataset, copy)
    shard = sorted((copy / "data").glob("*.parquet"))[0]
    shard.unlink()
    proc = evaluate("--model", "reference", "--dataset", str(copy), "--out", str(tmp_path / "out"), hf_cache=hf_cache)
    assert proc.returncode == 2
    assert shard.name in proc.stderr and "MANIFEST.json" in proc.stderr


def test_unknown_scenario_split(small_dataset, tmp_path, hf_cache):
    proc = evaluate("--model", "reference", "--dataset", str(small_dataset), "--scenario", "voyage",
                    "--out", str(tmp_path / "out"), hf_cache=hf_cache)
    assert proc.returncode == 2
    assert "voyage" in proc.stderr and "tensor" in proc.stderr


def _subset_dataset(source: Path, dest: Path, keep: int) -> list[str]:
    """A valid dataset folder holding the first `keep` rows of `source` (shard, hashes and counts rewritten)."""
    shutil.copytree(source, dest)
    manifest = json.loads((dest / "MANIFEST.json").read_text())
    (rel,) = manifest["files"]
    table = pq.read_table(dest / rel)
    table = table.slice(0, keep)
    pq.write_table(table, dest / rel)
    manifest["files"] = {rel: file_sha256(dest / rel)}
    manifest["content_hash"] = content_hash(manifest["files"])
    manifest["counts"] = {"tensor": keep}
    (dest / "MANIFEST.json").write_text(json.dumps(manifest, indent=2))
    return table.column("task_id").to_pylist()


@pytest.mark.e2e  # two full runs for one corner of the run folder's name
def test_two_dataset_folders_with_the_same_name_are_not_confused(small_dataset, tmp_path):
    cache = tmp_path / "hf-cache"  # one user's machine: a single datasets cache
    full, part = tmp_path / "a" / "stateeval", tmp_path / "b" / "stateeval"
    shutil.copytree(small_dataset, full)
    kept = _subset_dataset(Path(small_dataset), part, keep=3)
    reports = []
    for folder in (full, part):
        proc = evaluate("--model", "reference", "--dataset", str(folder), "--out", str(tmp_path / folder.parent.name),
                        "--workers", "2", hf_cache=cache)
        assert proc.returncode == 0, proc.stderr
        reports.append(written(proc))
    report = reports[1]
    assert report["dataset"]["content_hash"] == json.loads((part / "MANIFEST.json").read_text())["content_hash"]
    assert sorted(s["task_id"] for s in report["samples"]) == sorted(kept)
    assert report["dataset"]["tasks"] == 3


def test_help(hf_cache):
    proc = evaluate("--help", hf_cache=hf_cache)
    assert proc.returncode == 0
    for option in ("--model", "--dataset", "--samples", "--n-samples", "--out", "--revision", "--scenario"):
        assert option in proc.stdout
    assert "first N tasks of each scenario" in " ".join(proc.stdout.split())


def test_limit_takes_the_first_tasks_of_each_scenario(tmp_path, capsys):
    """`--limit 2 --scenario tensor,voice` used to score the first two tasks in split order: tensor's only."""
    from builder.config import BuildConfig
    from builder.pipeline import build
    from core.records import load_tasks
    from evaluate.__main__ import main

    dataset = tmp_path / "two"
    build(BuildConfig(out=str(dataset), scenarios=["tensor", "voice"], n=3, seed=0, created_at="2026-01-01",
                      workers=1, world_mutants=False))
    tasks, _ = load_tasks(str(dataset))
    first_two = [t.task_id for s in ("tensor", "voice") for t in [t for t in tasks if t.scenario == s][:2]]
    assert main(["--model", "reference", "--dataset", str(dataset), "--scenario", "tensor,voice", "--limit", "2",
                 "--out", str(tmp_path / "out"), "--workers", "1"]) == 0
    report = written(types.SimpleNamespace(stdout=capsys.readouterr().out))
    assert sorted(s["task_id"] for s in report["samples"]) == sorted(first_two)
    assert {s: b["tasks"] for s, b in report["summary"]["scenarios"].items()} == {"tensor": 2, "voice": 2}


@pytest.mark.e2e  # tests/evaluate/test_plots.py draws the figures from a run in the default run
def test_plot_writes_the_four_figures(small_dataset, tmp_path, hf_cache):
    proc = evaluate("--model", "reference", "--dataset", str(small_dataset), "--out", str(tmp_path), "--plot",
                    hf_cache=hf_cache)
    assert proc.returncode == 0, proc.stderr
    for name in ("pass_at_1.png", "error_types.png", "causes.png", "partial_credit.png"):
        png = tmp_path / "reference" / "local" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000
        assert str(png) in proc.stdout
    # the same command again: the figures come from the finished run's results.json, and no run is scored or kept
    report, kept = tmp_path / "reference" / "local" / "results.json", tmp_path / "reference" / "local" / "runs"
    before, runs = report.read_text(), sorted(kept.iterdir())
    again = evaluate("--model", "reference", "--dataset", str(small_dataset), "--out", str(tmp_path), "--plot",
                     hf_cache=hf_cache)
    assert again.returncode == 0, again.stderr
    assert f"read {report} (kept as {runs[0]}): nothing was scored again" in again.stdout
    assert "without scoring again" in again.stderr and "wrote " + str(report) not in again.stdout
    assert report.read_text() == before and sorted(kept.iterdir()) == runs
    assert str(tmp_path / "reference" / "local" / "causes.png") in again.stdout


@pytest.mark.parametrize("option, value", [("--timeout", "0"), ("--timeout", "-2"), ("--workers", "0"),
                                           ("--limit", "0"), ("--n-samples", "0"), ("--concurrency", "0")])
def test_a_count_or_limit_that_cannot_work_is_refused_in_one_line(reference_run, option, value, hf_cache):
    """`--timeout 0` used to score every sample a timeout and overwrite the good results.json; `--limit 0` and
    `--workers 0` silently meant "all" and "one per core"."""
    proc, out, args = reference_run
    before = report_path(proc).read_text()
    bad = evaluate(*args, option, value, hf_cache=hf_cache)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and f"argument {option}:" in bad.stderr, bad.stderr
    assert report_path(proc).read_text() == before


def test_every_run_is_kept_and_results_json_is_the_latest(small_dataset, rows, tmp_path, hf_cache):
    """Runs with other settings used to overwrite each other's results.json; each now also has a file of its own."""
    samples = write_samples(tmp_path / "refs.jsonl", [{"task_id": r["task_id"], "code": r["reference_program"]}
                                                      for r in rows])
    out = tmp_path / "out"
    kept = []
    for timeout in ("10", "20", "20"):
        proc = evaluate("--samples", str(samples), "--dataset", str(small_dataset), "--out", str(out),
                        "--workers", "2", "--timeout", timeout, "--limit", "3", hf_cache=hf_cache)
        assert proc.returncode == 0, proc.stderr
        match = re.search(r"^kept this run as (\S+\.json)$", proc.stdout, re.M)
        assert match, proc.stdout
        kept.append(Path(match.group(1)))
        assert report_path(proc).read_text() == kept[-1].read_text()  # results.json: the latest run
    runs = [json.loads(p.read_text()) for p in kept]
    assert len(set(kept)) == 3 and sorted(kept[0].parent.iterdir()) == sorted(kept)
    assert [r["sandbox"]["timeout_s"] for r in runs] == [10.0, 20.0, 20.0]  # the first run is still there
    hashes = [r["run"].split("-")[1] for r in runs]
    assert hashes[0] != hashes[1] == hashes[2]  # the name says which runs share their settings
    assert [p.stem for p in kept] == [r["run"] for r in runs]


def test_results_record_the_containment_that_applied(reference_run, small_tasks):
    """The documentation (docs/trust.md) promises that a run says how its programs were contained; the mode depends on the machine."""
    from core.sandbox.harness import Job, Sandbox

    task = small_tasks[0]
    with Sandbox(workers=1) as sandbox:
        (outcome,) = sandbox.run_untrusted([Job("k", "tensor", task.reference_program, task.test_cases[0])])
    here = outcome.extra["containment"]
    assert here in ("jail", "uid", "none")
    proc, _, _ = reference_run
    report = written(proc)
    assert report["sandbox"]["containment"] == here
    assert all("containment" not in s for s in report["samples"])  # every worker applied the run's mode


def test_progress_in_a_log_is_whole_lines(small_dataset, tmp_path, hf_cache):
    """stderr is a pipe here, as in a CI log: whole lines, no carriage-return redraws (read as bytes, since text
    mode would turn each carriage return into a line break)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_DATASETS_CACHE=str(hf_cache))
    proc = subprocess.run([sys.executable, "-m", "evaluate", "--model", "reference", "--dataset", str(small_dataset),
                           "--out", str(tmp_path), "--limit", "3", "--workers", "1"],
                          cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert b"\r" not in proc.stderr
    assert b"score: " in proc.stderr  # the line that says the scoring is done


# ------------------------------------------------------------------------------ interrupted and killed runs


def _start_sleepy_run(rows, tmp_path, hf_cache, small_dataset, timeout_s: str) -> tuple[subprocess.Popen, Path]:
    """A run whose programs sleep, with its own TMPDIR (the workers inherit it); returns once a test case runs."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    samples = write_samples(tmp_path / "sleepy.jsonl", [{"task_id": r["task_id"], "code": "import time\n"
                                                         "time.sleep(600)\nRESULT = None\n"} for r in rows])
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_DATASETS_CACHE=str(hf_cache), TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "evaluate", "--samples", str(samples), "--dataset",
                             str(small_dataset), "--out", str(tmp_path / "out"), "--workers", "2",
                             "--timeout", timeout_s], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=interruptible)
    deadline = time.monotonic() + 300  # a safety net only: a test case starts within seconds
    while not any(p.name.startswith("stateeval-case-") for p in tmp.iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    return proc, tmp


def test_ctrl_c_exits_130_with_one_line_and_leaves_no_folder(rows, tmp_path, hf_cache, small_dataset):
    proc, tmp = _start_sleepy_run(rows, tmp_path, hf_cache, small_dataset, timeout_s="600")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("interrupted; ") and "re-run the same command" in err
    left = list(tmp.iterdir())  # no worker or test-case folder left behind (if one is, say what it holds)
    assert left == [], [(p.name, sorted(x.name for x in p.iterdir()) if p.is_dir() else "a file") for p in left]
    assert not (tmp_path / "out").exists()


def test_a_killed_run_leaves_no_folder(rows, tmp_path, hf_cache, small_dataset):
    """kill -9 gives the harness no chance to clean up: each worker removes its folders when it finds its harness
    gone (here, when the test case in flight times out and its verdict cannot be delivered)."""
    proc, tmp = _start_sleepy_run(rows, tmp_path, hf_cache, small_dataset, timeout_s="1")
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 120  # a safety net only
    while list(tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmp.iterdir()) == []


# ------------------------------------------------------------------ a full disk, and two runs in one folder


def test_a_full_disk_while_generating_stops_in_one_line_and_the_same_command_resumes(small_dataset, rows, tmp_path,
                                                                                    monkeypatch, capsys):
    """The disk fills in the middle of the fourth reply's line: the run stops with one line that names the file
    and the fix, and the same command, once there is space, reuses the three replies and scores every task."""
    import core.backends.cache as cache_module
    from evaluate.__main__ import main

    written_lines = []

    def filling_open(*args, **kwargs):
        f = open(*args, **kwargs)
        real_write = f.write

        def write(data):
            if len(written_lines) == 3:
                real_write(bytes(data[: len(data) // 2]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written_lines.append(bytes(data))
            return real_write(data)

        f.write = write
        return f

    args = ["--model", "reference", "--dataset", str(small_dataset), "--out", str(tmp_path), "--workers", "1"]
    cache = tmp_path / "reference" / "local" / "generations.jsonl"
    monkeypatch.setattr(cache_module, "open", filling_open, raising=False)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if not line.startswith("generate (")]  # (a slow machine's progress)
    assert lines == [f"error: cannot write the generation cache {cache}: no space left on device; free some space "
                     "there, then run the same command again to resume (the replies already written are kept)"]
    assert cache.read_bytes() == b"".join(written_lines)  # three whole lines, no half one
    assert not (cache.parent / "results.json").exists()

    monkeypatch.undo()  # space was freed
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"resuming: 3 of {len(rows)} generations found in {cache}" in out
    assert written(types.SimpleNamespace(stdout=out))["summary"]["overall"]["pass@1"] == 1.0
    assert sorted(json.loads(line)["task_id"] for line in cache.read_text().splitlines()) == sorted(
        r["task_id"] for r in rows)


def test_a_second_run_into_the_same_folder_is_refused_until_the_first_is_gone(small_dataset, small_tasks, rows,
                                                                               tmp_path, hf_cache):
    """Two runs of one folder would append the same replies to one cache and replace each other's report: the
    second is refused in one line naming the first's pid, and once the first is killed (kill -9: no clean-up),
    the next run goes on from what it had cached."""
    reference = {t.instruction: t.reference_program for t in small_tasks}

    def reply(body):  # the reference, so every run that finishes scores 100%
        user = body["messages"][-1]["content"]
        return next(f"```python\n{code}```" for instr, code in reference.items() if instr.strip() in user)

    args = ("--model", "scripted", "--backend", "openai", "--dataset", str(small_dataset), "--out", str(tmp_path),
            "--concurrency", "2", "--workers", "1")
    folder = tmp_path / "scripted" / "local"
    cache = folder / "generations.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_DATASETS_CACHE=str(hf_cache), OPENAI_API_KEY="sk-test")
    with ScriptedServer(reply, hold_after=2) as server:  # two replies, then the first run waits on the server
        first = subprocess.Popen([sys.executable, "-m", "evaluate", *args, "--base-url", server.base_url], cwd=ROOT,
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 300  # a safety net only: the first run holds its folder once it generates
            while not (cache.is_file() and len(cache.read_text().splitlines()) == 2):
                assert first.poll() is None and time.monotonic() < deadline, first.communicate()
                time.sleep(0.05)
            held = cache.read_bytes()

            with ScriptedServer(reply) as own:  # (its own server, which holds nothing: no lock, no wait)
                second = evaluate(*args, "--base-url", own.base_url, hf_cache=hf_cache)
                assert own.count() == 0  # it asked the model nothing
            assert second.returncode == 2, second.stderr
            assert second.stderr == (f"error: another python -m evaluate is writing {folder} (pid {first.pid}); wait "
                                     "for it to finish or pass another --out\n")
            assert cache.read_bytes() == held and not (folder / "results.json").exists()  # and wrote nothing
        finally:
            first.kill()
            first.wait()
        server.release()
        third = evaluate(*args, "--base-url", server.base_url, hf_cache=hf_cache)
    assert third.returncode == 0, third.stderr
    assert f"resuming: 2 of {len(rows)}" in third.stdout
    assert written(third)["summary"]["overall"]["pass@1"] == 1.0
