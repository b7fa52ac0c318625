"""Streamed builds: shard by shard in bounded memory, resumable after a kill, byte-identical either way."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import builder.pipeline as pipeline
from builder.checkpoint import CHECKPOINT, exclusive, finished_shards, partial_folder
from builder.config import BuildConfig
from builder.pipeline import build
from core.records import DatasetError, verify_folder
from tests.builder.test_pipeline import ROOT, run_cli, shard_rows, shards
from tests.conftest import SMALL

SHARDED = dict(SMALL, shard_size=4)  # the session's small build, four tasks to a shard


def same_dataset(folder: Path, reference: Path) -> None:
    """Byte-identical shards, card and content hash; the same build report but for its wall time."""
    assert [p.name for p in shards(folder)] == [p.name for p in shards(reference)]
    for a, b in zip(shards(folder), shards(reference)):
        assert a.read_bytes() == b.read_bytes(), f"{a.name} differs"
    assert verify_folder(folder)["content_hash"] == verify_folder(reference)["content_hash"]
    assert (folder / "README.md").read_bytes() == (reference / "README.md").read_bytes()
    reports = [json.loads((f / "build_report.json").read_text()) for f in (folder, reference)]
    for r in reports:
        r.pop("seconds")
    assert reports[0] == reports[1]
    assert not (folder / CHECKPOINT).exists()


@pytest.fixture(scope="module")
def sharded_build(tmp_path_factory):
    """(folder, report, most task records alive at once, most drafts alive at once) of the small build with four
    tasks to a shard, counting every TaskRecord and Draft the pipeline makes until it is garbage."""
    live = {"records": 0, "drafts": 0}
    peak = dict(live)

    def track(kind: str, obj) -> None:
        live[kind] += 1
        if live[kind] > peak[kind]:  # a new peak, unless garbage a cycle keeps until the next collection counts:
            gc.collect()  # collect it first (a full collection is slow, and only a would-be peak needs one)
            peak[kind] = max(peak[kind], live[kind])
        weakref.finalize(obj, lambda: live.__setitem__(kind, live[kind] - 1))

    real_record, real_draft = pipeline.to_record, pipeline.Draft

    def to_record(*args, **kwargs):
        record = real_record(*args, **kwargs)
        track("records", record)
        return record

    def draft(*args, **kwargs):
        d = real_draft(*args, **kwargs)
        track("drafts", d)
        return d

    out = tmp_path_factory.mktemp("sharded") / "stateeval"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "to_record", to_record)
        mp.setattr(pipeline, "Draft", draft)
        report = build(BuildConfig(out=str(out), **SHARDED))
    return out, report, peak["records"], peak["drafts"]


def test_a_build_holds_at_most_one_shard_of_records_and_writes_the_same_rows(sharded_build, small_build):
    folder, report, records, drafts = sharded_build
    kept = report["kept"]["tensor"]
    assert kept > 2 * SHARDED["shard_size"], "the build must span several shards for this test to mean anything"
    assert [pq.read_metadata(p).num_rows for p in shards(folder)][:-1] == [4] * (len(shards(folder)) - 1)
    assert records <= SHARDED["shard_size"] and drafts <= SHARDED["shard_size"]
    # Other shard files, the same tasks, tallies and card numbers as the session's build in one shard.
    small, small_report = small_build
    assert shard_rows(folder) == shard_rows(small)
    for key in ("kept", "rejections", "statistics", "mutation", "fact_check", "coverage_curve", "table1"):
        assert report[key] == small_report[key], key
    assert verify_folder(folder)["content_hash"] != verify_folder(small)["content_hash"]
    assert not partial_folder(folder).exists()


def interrupt_second_shard(monkeypatch) -> None:
    """Ctrl-C while the build writes its second shard: the first is finished and checkpointed."""
    real_write = pipeline.write_shard
    written = []

    def interrupted(*args, **kwargs):
        if written:
            raise KeyboardInterrupt
        written.append(real_write(*args, **kwargs))
        return written[-1]

    monkeypatch.setattr(pipeline, "write_shard", interrupted)


def test_an_interrupted_build_resumes_without_redoing_its_finished_shards(sharded_build, tmp_path, monkeypatch):
    out = tmp_path / "stateeval"
    real_write = pipeline.write_shard
    interrupt_second_shard(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        build(BuildConfig(out=str(out), **SHARDED))
    assert not out.exists(), "an unfinished build never appears at --out"
    saved = json.loads((partial_folder(out) / CHECKPOINT).read_text())
    assert finished_shards(saved) == 1
    first = saved["state"]["scenarios"]["tensor"]["next"]

    monkeypatch.setattr(pipeline, "write_shard", real_write)
    checked = []
    real_capture = pipeline.capture_oracles

    def capture(drafts, *args):
        checked.extend(d.index for d in drafts)
        return real_capture(drafts, *args)

    monkeypatch.setattr(pipeline, "capture_oracles", capture)
    # As the same command run on another day: without --created-at, the build keeps the date it started under.
    build(BuildConfig(out=str(out), **dict(SHARDED, created_at="")))
    assert checked and min(checked) >= first, "programs of the finished shard went through the sandbox again"
    same_dataset(out, sharded_build[0])
    assert not partial_folder(out).exists()


def test_a_killed_build_resumes_from_its_shards_and_refuses_other_settings(sharded_build, tmp_path):
    args = ["--scenarios", "tensor", "--n", str(SHARDED["n"]), "--seed", "0", "--created-at", SHARDED["created_at"],
            "--workers", "2", "--shard-size", str(SHARDED["shard_size"]), "--out", "ds"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "builder", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint = partial_folder(tmp_path / "ds") / CHECKPOINT
    try:
        deadline = time.monotonic() + 300  # a safety net only: the first shard comes within seconds
        while not (checkpoint.exists() and finished_shards(json.loads(checkpoint.read_text()))):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # no handler runs: the shards and checkpoint on disk are all there is
    finally:
        proc.kill()
        proc.wait()
    assert not (tmp_path / "ds").exists()
    before = checkpoint.read_bytes()

    other = run_cli(*args[:5], "1", *args[6:], cwd=tmp_path)  # --seed 1
    assert other.returncode == 2 and other.stderr.count("\n") == 1, other.stderr
    assert "--overwrite" in other.stderr and "seed 0 there, 1 here" in other.stderr
    assert checkpoint.read_bytes() == before

    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "resuming the unfinished build of ds" in done.stderr
    same_dataset(tmp_path / "ds", sharded_build[0])
    assert not partial_folder(tmp_path / "ds").exists()


def test_overwrite_discards_an_unfinished_build_of_other_settings(tmp_path, monkeypatch):
    tiny = dict(SMALL, n=2, mutants=0, world_mutants=False, shard_size=1)
    out = tmp_path / "stateeval"
    real_write = pipeline.write_shard
    interrupt_second_shard(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        build(BuildConfig(out=str(out), **tiny))
    monkeypatch.setattr(pipeline, "write_shard", real_write)
    with pytest.raises(DatasetError, match="add --overwrite to discard its 1 finished shard"):
        build(BuildConfig(out=str(out), **dict(tiny, seed=1)))
    assert finished_shards(json.loads((partial_folder(out) / CHECKPOINT).read_text())) == 1

    build(BuildConfig(out=str(out), **dict(tiny, seed=1)), overwrite=True)
    assert verify_folder(out)["seed"] == 1
    assert {r["seed"] for r in shard_rows(out)} == {1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stateeval"]


def test_a_build_that_finished_no_shard_leaves_nothing_behind(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "write_shard", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(BuildConfig(out=str(tmp_path / "stateeval"), **dict(SMALL, n=1, mutants=0, world_mutants=False)))
    assert list(tmp_path.iterdir()) == []


def test_shard_size_must_be_positive(tmp_path):
    done = run_cli("--scenarios", "tensor", "--n", "1", "--shard-size", "0", "--out", "ds", cwd=tmp_path)
    assert done.returncode == 2 and "--shard-size" in done.stderr and done.stderr.count("\n") == 1
    with pytest.raises(ValueError, match="--shard-size"):
        BuildConfig(shard_size=0)


def test_a_second_build_of_the_same_out_at_once_is_refused(tmp_path):
    out = tmp_path / "stateeval"
    with exclusive(out):  # as a build running in another process holds it
        with pytest.raises(DatasetError, match="another build is writing --out .*stateeval now"):
            build(BuildConfig(out=str(out), **dict(SMALL, n=1)))
        assert not partial_folder(out).exists()
    assert list(tmp_path.iterdir()) == []
