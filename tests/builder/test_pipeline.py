"""The whole build: the dataset folder users load, reproducibility, the rejections it counts, and safe writes."""

from __future__ import annotations

import ast
import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

import builder.pipeline as pipeline
from builder.config import BuildConfig
from builder.pipeline import build
from core.records import MANIFEST, SCHEMA, DatasetError, verify_folder
from tests.conftest import SMALL, interruptible

ROOT = Path(__file__).resolve().parents[2]


def shards(folder: Path) -> list[Path]:
    return sorted((folder / "data").glob("tensor-*.parquet"))


def shard_rows(folder: Path) -> list[dict]:
    """The rows exactly as stored in this folder's shards (independent of any loader cache)."""
    return [row for path in shards(folder) for row in pq.read_table(path).to_pylist()]


def front_matter(readme: Path) -> dict:
    text = readme.read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def calls_per_path(reference: str) -> list[int]:
    """API calls on each path of a reference program (RESULT lines are not calls)."""
    body = ast.parse(reference).body

    def count(stmts):
        return sum(1 for s in stmts if isinstance(s, ast.Assign) and not (
            isinstance(s.targets[0], ast.Name) and s.targets[0].id == "RESULT"))

    if isinstance(body[-1], ast.If):
        prefix = count(body[:-1])
        return [prefix + count(body[-1].body), prefix + count(body[-1].orelse)]
    return [count(body)]


@pytest.fixture(scope="module")
def other_seed_build(tmp_path_factory):
    """The small build again with only the seed changed, into a folder also named `stateeval`."""
    out = tmp_path_factory.mktemp("seed1") / "stateeval"
    build(BuildConfig(out=str(out), **dict(SMALL, seed=1)))
    return out


# --------------------------------------------------------------------------------------------- folder


def test_folder_has_card_shards_and_manifest(small_build):
    folder, report = small_build
    assert folder.name == "stateeval"
    data = shards(folder)
    assert data, "no data/tensor-*.parquet shards"

    card = front_matter(folder / "README.md")
    (config,) = card["configs"]
    assert config["config_name"] == "default"
    # The card names the exact shards (content-named), so `datasets` never serves another build's cached rows.
    assert config["data_files"] == [{"split": "tensor", "path": [f"data/{p.name}" for p in data]}]

    manifest = json.loads((folder / MANIFEST).read_text())
    assert verify_folder(folder)["content_hash"] == manifest["content_hash"]
    assert sorted(manifest["files"]) == [str(p.relative_to(folder)) for p in data]
    assert manifest["seed"] == SMALL["seed"] and manifest["created_at"] == SMALL["created_at"]
    assert manifest["config"]["n"] == SMALL["n"] and manifest["config"]["coverage"] is True

    rows = shard_rows(folder)
    assert manifest["counts"] == {"tensor": len(rows)} == report["kept"]
    assert report["attempts"]["tensor"] == SMALL["n"]
    assert report["kept"]["tensor"] + sum(report["rejections"].values()) == SMALL["n"]
    assert report["fact_check"]["tensor"]["rejected"] == {"natural": 0, "steps": 0, "vague": 0}
    assert 0 < report["fact_check"]["tensor"]["tasks"] <= SMALL["n"]
    assert all(r["facts"] and r["instruction"] != r["instruction_steps"] != r["instruction_vague"] for r in rows)
    assert report["manifest"]["content_hash"] == manifest["content_hash"]
    curve = report["coverage_curve"]["tensor"]
    assert len(curve) == SMALL["n"] and curve == sorted(curve)
    assert report["statistics"]["tensor"]["pair_coverage"] == curve[-1]
    assert report["statistics"]["tensor"]["tasks"] == len(rows)
    assert pq.read_schema(data[0]).remove_metadata() == SCHEMA


def test_card_statistics_describe_this_build(small_build):
    folder, report = small_build
    text = (folder / "README.md").read_text()
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["content_hash"] in text
    assert f"| tensor | {report['kept']['tensor']} |" in text
    assert not re.search(r"\$\{?[a-z_]+", text), "an unfilled template field"
    # how precisely a score on it is known: the worst-case half-width of the tasks kept
    kept = report["kept"]["tensor"]
    assert f"tensor ±{100 * 1.959964 * (0.25 / kept) ** 0.5:.1f} points per scenario" in text


def test_load_dataset_reads_the_folder(small_dataset, monkeypatch):
    import datasets

    ds = datasets.load_dataset(str(small_dataset))
    assert list(ds) == ["tensor"]
    assert ds["tensor"].column_names == SCHEMA.names

    monkeypatch.chdir(small_dataset.parent)
    by_name = datasets.load_dataset("stateeval")
    assert list(by_name) == ["tensor"]
    assert by_name["tensor"].column_names == SCHEMA.names


def test_load_dataset_returns_the_rows_of_this_build(small_dataset, other_seed_build, monkeypatch):
    import datasets

    from core.records import load_tasks

    for folder in (small_dataset, other_seed_build):
        stored = sorted(r["instruction"] for r in shard_rows(folder))
        monkeypatch.chdir(folder.parent)
        loaded = datasets.load_dataset("stateeval")["tensor"]
        assert sorted(loaded["instruction"]) == stored, f"{folder} was read back with other rows"
        tasks, _ = load_tasks(str(folder))
        assert sorted(t.instruction for t in tasks) == stored


# ------------------------------------------------------------------------------------------- content


def test_every_kept_task_is_well_formed(small_dataset):
    rows = shard_rows(small_dataset)
    assert len({r["task_id"] for r in rows}) == len(rows)
    assert any(r["has_branch"] for r in rows) and not all(r["has_branch"] for r in rows)
    for r in rows:
        assert r["scenario"] == "tensor" and r["task_id"].startswith("tensor-")
        assert r["seed"] == SMALL["seed"] and r["created_at"] == SMALL["created_at"]
        assert r["translator"] == "template" and r["instruction"] and r["api_doc"]
        assert r["num_api_calls"] >= 5 and len(r["api_calls"]) == r["num_api_calls"]
        per_path = calls_per_path(r["reference_program"])
        assert min(per_path) >= 5, (r["task_id"], per_path)
        calls = [n for n in ast.walk(ast.parse(r["reference_program"])) if isinstance(n, ast.Call)
                 and not (isinstance(n.func, ast.Name) and n.func.id == "RESULT")]
        assert len(calls) == r["num_api_calls"], "one call expression per API call in the reference"
        assert r["setup_code"] == r["test_cases"][0]["setup_code"]
        for case in r["test_cases"]:
            assert isinstance(json.loads(case["expected_result"]), list)
            assert case["assets"], "the stored initial tensors travel with every test case"


def test_every_task_has_original_flipped_and_redrawn_cases(small_dataset):
    rows = shard_rows(small_dataset)
    for r in rows:
        cases = r["test_cases"]
        names = [c["name"] for c in cases]
        fixed = ["original", "flipped"] if r["has_branch"] else ["original"]
        assert names[:len(fixed) + 2] == fixed + ["redrawn-1", "redrawn-2"], r["task_id"]
        assert all(n.startswith("probe-") for n in names[len(fixed) + 2:]), r["task_id"]
        assert len(cases) >= 3
        if r["has_branch"]:
            original, flipped = (json.loads(c["constants"]) for c in cases[:2])
            assert set(original) == set(flipped) == {"COND"}
            assert original["COND"] != flipped["COND"]
            assert [c["branch"] for c in cases[:2]] == ["then", "else"]
            assert {c["branch"] for c in cases} <= {"then", "else"}
            assert "if " in r["reference_program"] and "COND" in r["reference_program"]
        else:
            assert {c["branch"] for c in cases} == {"main"} and json.loads(cases[0]["constants"]) == {}
            assert "COND" not in r["reference_program"]
        # A redrawn input keeps the names the model is shown and changes the values behind them.
        base = cases[0]
        for c in cases[len(fixed):]:
            assert [a["name"] for a in c["assets"]] == [a["name"] for a in base["assets"]]
            assert _assigned_names(c["setup_code"]) == _assigned_names(base["setup_code"])
            assert (c["setup_code"], [a["data"] for a in c["assets"]]) != \
                (base["setup_code"], [a["data"] for a in base["assets"]]), (r["task_id"], c["name"])


def _assigned_names(setup_code: str) -> list[str]:
    return [line.split(" = ")[0] for line in setup_code.splitlines() if " = " in line and line.split(" = ")[0] != "COND"]


def test_every_record_carries_its_mutation_analysis(small_dataset):
    rows = shard_rows(small_dataset)
    report = json.loads((small_dataset / "build_report.json").read_text())
    for r in rows:
        m = r["mutation"]
        assert m["mutants"] > 0 and m["killed"] + m["equivalent"] == m["mutants"], r["task_id"]
        assert m["score"] == pytest.approx(m["killed"] / m["mutants"])
        assert len(m["equivalents"]) == m["equivalent"]
        # a dropped or skipped call that nothing notices would be a dead call: such a task is never kept
        assert not any(e.startswith(("drop_call", "skip_call")) for e in m["equivalents"]), r["task_id"]
    summary = report["mutation"]
    for scenario, s in summary.items():
        mine = [r["mutation"] for r in rows if r["scenario"] == scenario]
        assert s["mutants"] == sum(m["mutants"] for m in mine)
        assert s["killed"] == sum(m["killed"] for m in mine)
    card = (small_dataset / "README.md").read_text()
    assert "mutation score" in card.lower()


# ------------------------------------------------------------------------------------ reproducibility


def test_same_config_gives_byte_identical_shards_and_another_seed_differs(small_dataset, other_seed_build,
                                                                          tmp_path):
    again = tmp_path / "again" / "stateeval"
    build(BuildConfig(out=str(again), **SMALL))
    first, second = shards(small_dataset), shards(again)
    assert [p.name for p in first] == [p.name for p in second]
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), f"{a.name} differs between two builds of the same config"
    assert verify_folder(again)["content_hash"] == verify_folder(small_dataset)["content_hash"]

    other = shards(other_seed_build)
    assert [p.read_bytes() for p in other] != [p.read_bytes() for p in first]
    assert verify_folder(other_seed_build)["content_hash"] != verify_folder(small_dataset)["content_hash"]
    assert {r["reference_program"] for r in shard_rows(other_seed_build)} != {
        r["reference_program"] for r in shard_rows(small_dataset)}


# ------------------------------------------------------------------------------------------ rejections


def test_failing_reference_is_dropped_and_counted(tmp_path, monkeypatch):
    real = pipeline.generate_program
    made = []

    def sabotaged(*args, **kwargs):
        program = real(*args, **kwargs)
        made.append(program)
        if len(made) == 2:  # task tensor-0001: its reference raises after doing its work
            code = program.reference_code()
            program.reference_code = lambda: code + "raise RuntimeError('injected failure')\n"
        return program

    monkeypatch.setattr(pipeline, "generate_program", sabotaged)
    out = tmp_path / "stateeval"
    report = build(BuildConfig(out=str(out), **dict(SMALL, n=4)))

    assert len(made) == 4
    failed = {k: v for k, v in report["rejections"].items() if "reference" in k}
    assert failed == {"tensor: reference execution_error": 1}
    assert report["kept"]["tensor"] + sum(report["rejections"].values()) == 4
    ids = [r["task_id"] for r in shard_rows(out)]
    assert "tensor-0001" not in ids
    assert len(ids) == report["kept"]["tensor"] >= 2


# ------------------------------------------------------------------------------------------- writing


def test_refuses_to_write_into_a_folder_that_is_not_a_dataset(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(DatasetError, match="not a StateEval dataset"):
        build(BuildConfig(out=str(out), **dict(SMALL, n=1)))
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]
    assert (out / "thesis.tex").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"], "no temporary folder left behind"


def test_crash_while_writing_keeps_the_previous_dataset(small_dataset, tmp_path, monkeypatch):
    out = tmp_path / "stateeval"
    shutil.copytree(small_dataset, out)
    before = tree_bytes(out)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pipeline, "write_shard", disk_full)
    with pytest.raises(OSError, match="No space left"):
        build(BuildConfig(out=str(out), **dict(SMALL, n=2, seed=5)))

    assert tree_bytes(out) == before
    verify_folder(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stateeval"], "no temporary folder left behind"


def test_rebuild_replaces_a_previous_dataset(small_dataset, tmp_path):
    out = tmp_path / "stateeval"
    shutil.copytree(small_dataset, out)
    build(BuildConfig(out=str(out), **dict(SMALL, n=3, seed=9)))
    manifest = verify_folder(out)
    assert manifest["seed"] == 9
    assert {r["seed"] for r in shard_rows(out)} == {9}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stateeval"]


# ------------------------------------------------------------------------------------------ the CLI


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "builder", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_help_mentions_the_ablation_switch(tmp_path):
    done = run_cli("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--no-coverage" in done.stdout
    assert "--scenarios" in done.stdout and "--seed" in done.stdout


def test_cli_unknown_scenario_names_the_known_ones(tmp_path):
    from scenarios import scenario_names

    done = run_cli("--scenarios", "tensor,holodeck", "--n", "1", "--out", "ds", cwd=tmp_path)
    assert done.returncode != 0
    assert "holodeck" in done.stderr
    for name in scenario_names():
        assert name in done.stderr
    assert not (tmp_path / "ds").exists()


def test_precision_sizes_the_build(tmp_path):
    """--precision H gives the programs per scenario whose worst-case 95% half-width is at most H; the default
    release is sized for 10 points; --n and --precision together, or a half-width out of range, are refused."""
    from builder.__main__ import parse_args
    from builder.config import DEFAULT_PRECISION

    assert parse_args(["--precision", "0.05"]).n == 385 and parse_args(["--precision", "0.1"]).n == 97
    assert parse_args([]).n == 97 and DEFAULT_PRECISION == 0.1 and parse_args(["--n", "7"]).n == 7
    done = run_cli("--n", "5", "--precision", "0.1", "--out", "ds", cwd=tmp_path)
    assert done.returncode == 2 and "not allowed with argument --n" in done.stderr
    done = run_cli("--precision", "5", "--out", "ds", cwd=tmp_path)
    assert done.returncode == 2 and "between 0 and 0.5" in done.stderr and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "ds").exists()


def test_an_out_that_cannot_be_written_is_refused_in_one_line_before_any_work(unwritable, tmp_path):
    """Read-only, on a read-only file system, or under a regular file: one line naming --out, the reason and the
    fix, exit code 2, and nothing written."""
    out = unwritable.folder / "ds"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(unwritable.argv([sys.executable, "-m", "builder", "--scenarios", "tensor", "--n", "2",
                                           "--out", out]), cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(f"error: cannot write {re.escape(str(out))}: {unwritable.why}; .*--out\n", done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not os.path.lexists(out)


def test_a_full_disk_while_building_stops_in_one_line(tmp_path, monkeypatch, capsys):
    from builder.__main__ import main

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / ".ds.partial" / "shard"))

    monkeypatch.setattr(pipeline, "write_shard", disk_full)
    assert main(["--scenarios", "tensor", "--n", "2", "--workers", "1", "--out", str(tmp_path / "ds")]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"error: cannot write {tmp_path / 'ds'}: no space left on device; free some space there, "
                        "then run the same command again\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no shard was finished: nothing is kept


def test_cli_rejects_bad_numbers(tmp_path):
    done = run_cli("--n", "0", "--out", "ds", cwd=tmp_path)
    assert done.returncode != 0 and "--n" in done.stderr
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("option, value", [("--workers", "0"), ("--timeout", "0"), ("--timeout", "-1"),
                                           ("--concurrency", "0")])
def test_cli_rejects_a_count_or_limit_that_cannot_work(tmp_path, option, value):
    """A zero timeout would reject every reference as a timeout; zero workers used to mean 'one per core'."""
    done = run_cli("--scenarios", "tensor", "--n", "1", "--out", "ds", option, value, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and option in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "ds").exists()


def test_ctrl_c_exits_130_with_one_line_and_leaves_the_folder_alone(tmp_path):
    """Interrupted while the translation agents wait on their model: no traceback, nothing half-written."""
    import signal
    import threading
    import time

    from tests.evaluate.scripted_server import ScriptedServer

    release = threading.Event()

    def never(body):  # a model that does not answer until the test ends
        release.wait(300)
        return "OK"

    (tmp_path / "tmp").mkdir()
    with ScriptedServer(never) as server:
        env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path / "tmp"))
        proc = subprocess.Popen([sys.executable, "-m", "builder", "--scenarios", "tensor", "--n", "2", "--out", "ds",
                                 "--translator", "openai:scripted", "--base-url", server.base_url],
                                cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=interruptible)
        try:
            deadline = time.monotonic() + 300  # a safety net only: the first request comes within seconds
            while server.count() == 0:
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("interrupted; ds was left as it was") and "re-run" in err
    assert not (tmp_path / "ds").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_resumed_build_keeps_the_made_up_fields_its_oracles_were_renamed_with(monkeypatch):
    """The fields a service makes up are decided by the build that started (`scenarios.rest.learned`): a resumed
    run takes them from the checkpoint over whatever it learned itself, and checkpoints them again."""
    from types import SimpleNamespace

    from scenarios.rest.learned import LEARNED_ENV, made_up

    # (keyed by scenario name, as a service's scenario is: any scenario's name shows the mechanism)
    monkeypatch.setenv(LEARNED_ENV, json.dumps({"tensor": ["learned.now"]}))
    run = pipeline.Run(BuildConfig(scenarios=["tensor"]),
                       SimpleNamespace(state={"learned": {"tensor": ["learned.before"]}}))
    assert made_up("tensor") == ("learned.before",)
    assert run.state()["learned"] == {"tensor": ["learned.before"]}
    monkeypatch.setenv(LEARNED_ENV, "{}")
    assert "learned" not in pipeline.Run(BuildConfig(scenarios=["tensor"]), SimpleNamespace(state={})).state()
