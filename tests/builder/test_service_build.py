"""`python -m builder --service FILE`: a verified split built from a service file alone, scored 100% by its reference
through `python -m evaluate` with no extra flag (the dataset keeps the file and the fields its service makes up),
the same bytes from the same seed, and one line with exit status 2 for a file or service that cannot be used.

Kinto needs the rest extra (pip install -e ".[rest]"); its tests are skipped without it unless
STATEEVAL_REQUIRE_REST is set. The session service's shipped file is `session_http`: `session` is the hand-built
scenario's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.scenarios.rest.conftest import FAKE, write_service

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "scenarios" / "rest" / "services"
SMALL = ["--seed", "0", "--mutants", "3", "--probes", "1", "--redraws", "2"]
needs_kinto = pytest.mark.skipif(importlib.util.find_spec("kinto") is None
                                 and not os.environ.get("STATEEVAL_REQUIRE_REST"),
                                 reason="needs the rest extra: pip install -e '.[rest]'")


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "STATEEVAL_SERVICES"}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def build(service: str, out: Path, n: int) -> dict:
    done = run("builder", "--service", service, "--n", str(n), *SMALL, "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / "MANIFEST.json").read_text())


def load_rows(dataset: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return [row for shard in sorted(dataset.rglob("*.parquet")) for row in pq.read_table(shard).to_pylist()]


def reference_score(dataset: Path, results: Path, mode: str = "code") -> dict:
    done = run("evaluate", "--dataset", str(dataset), "--model", "reference", "--mode", mode, "--out", str(results))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(next(results.rglob("results.json" if mode == "code" else f"results_{mode}.json")).read_text())


@pytest.fixture(scope="module")
def kinto_build(tmp_path_factory) -> tuple[Path, dict]:
    """A Kinto split built by its shipped name: (folder, manifest)."""
    out = tmp_path_factory.mktemp("kinto") / "a"
    return out, build("kinto", out, 4)


@needs_kinto
@pytest.mark.e2e  # byte-determinism of builds runs by default in test_stream.py; this one is a service's
def test_kinto_builds_the_same_bytes_twice(kinto_build, tmp_path):
    first, manifest = kinto_build
    second = build(str(SERVICES / "kinto.toml"), tmp_path / "b", 4)  # (named by its path this time)
    assert manifest["content_hash"] == second["content_hash"], "same seed, same service: the same bytes"
    for name in ("kinto.toml", "kinto.openapi.json", "kinto.learned.json", "kinto.readiness.md", "kinto.readiness.json"):
        assert (first / "services" / name).read_bytes() == (tmp_path / "b" / "services" / name).read_bytes()


@needs_kinto
def test_kinto_builds_a_verified_split_and_its_reference_scores_100(kinto_build, tmp_path):
    built, first = kinto_build
    assert first["counts"]["kinto"] >= 3
    learned = json.loads((built / "services" / "kinto.learned.json").read_text())["learned"]
    assert "data.last_modified" in learned, "the fields Kinto makes up are learned once and shipped"
    # Its readiness report, written beside the build, observes what Kinto's document leaves out.
    plain = json.loads((built / "services" / "kinto.readiness.json").read_text())
    observed = {(f["operation"], f["kind"]) for f in plain["findings"] if f["observed"]}
    assert ("GET /v1/buckets", "pagination") in observed
    assert ("DELETE /v1/buckets/{bucket_id}/collections/{id}", "delete cascade") in observed
    assert "127.0.0.1" not in json.dumps(plain), "no instance's address: the same report on every run"
    shards = b"".join(p.read_bytes() for p in sorted(built.rglob("*.parquet")))
    assert b"<made-" in shards, "the ids Kinto made are stored renamed"

    report = reference_score(built, tmp_path / "results")
    assert report["summary"]["overall"]["pass@1"] == 1.0
    assert [s["status"] for s in report["samples"]] == ["pass"] * 4
    # the stored traces are the reference's calls on each test case, once each: it matches them fully
    assert all(s["diagnosis"]["arg_match"] == 1.0 and s["diagnosis"]["first_divergence"] is None
               for s in report["samples"]), [s["diagnosis"] for s in report["samples"]]

    # tests mode: every task keeps world mutants, and its reference test (whose EXPECTED names the ids Kinto made
    # as the oracle does, `<made-1>`) passes the correct world and kills each one
    report = reference_score(built, tmp_path / "tests", "tests")
    assert report["summary"]["overall"]["tasks"] == 4 and report["summary"]["overall"]["mutation_score"] == 1.0
    assert all(len(s["killed"]) >= 5 for s in report["samples"])


@pytest.mark.e2e  # the build above is scored in code and tests mode by default; REST tools are unit-tested there too
def test_kinto_tasks_replay_as_tool_calls_and_a_program_that_changes_more_fails_on_its_state(kinto_build, tmp_path):
    built, _ = kinto_build
    # tools mode: each reference call replayed as a tool call, the ids Kinto made passed as handles
    report = reference_score(built, tmp_path / "tools", "tools")
    assert report["summary"]["overall"]["pass@1"] == 1.0
    assert [s["status"] for s in report["samples"]] == ["pass"] * 4
    assert all(s["turns"] > 1 for s in report["samples"]), "every task is replayed as calls, not only a submission"

    # nothing else changed: the reference plus one more bucket, or less the population's record, fails on its state
    task = next(r for r in load_rows(built) if "bucket1" in r["setup_code"])
    extra = 'requests.post(f"{BASE_URL}/v1/buckets", json={"data": {}}, headers=HEADERS)\n'
    gone = ('requests.delete(f"{BASE_URL}/v1/buckets/{bucket1}/collections/{collection1}/records/{record1}", '
            'headers=HEADERS)\n')
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": task["task_id"], "code": code}) + "\n"
                               for code in (task["reference_program"] + extra, task["reference_program"] + gone)))
    done = run("evaluate", "--dataset", str(built), "--samples", str(samples), "--n-samples", "2",
               "--out", str(tmp_path / "wrong"))
    assert done.returncode == 0, done.stderr[-2000:]
    wrong = json.loads(next((tmp_path / "wrong").rglob("results.json")).read_text())
    assert [s["status"] for s in wrong["samples"]] == ["result_error"] * 2, wrong["samples"]
    assert all(": state" in s["error"] for s in wrong["samples"]), "RESULT is the reference's: the state tells"


@pytest.mark.e2e  # the Kinto build above takes the same path in the default run
def test_the_session_services_file_builds_a_split_its_reference_passes(tmp_path):
    manifest = build("session_http", tmp_path / "data", 2)
    assert manifest["counts"]["session_http"] >= 1
    report = reference_score(tmp_path / "data", tmp_path / "results")
    assert report["summary"]["overall"]["pass@1"] == 1.0


@pytest.mark.parametrize("problem", ["missing", "taken", "dead"])
def test_a_service_that_cannot_be_used_is_one_line_and_exit_2(tmp_path, problem):
    if problem == "missing":
        path, named = tmp_path / "nowhere.toml", "cannot be read"
    elif problem == "taken":
        path, named = write_service(tmp_path, name="session"), "is already a scenario's name"
    else:
        path = write_service(tmp_path, start=["{python}", "-c", "raise SystemExit(3)"], ready_timeout_s=20)
        named = "exited"
    done = run("builder", "--service", str(path), "--n", "1", "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert named in done.stderr and not (tmp_path / "out").exists()


DIE_AT = 5  # some of the six programs below add this often, some less


def test_a_service_that_dies_under_some_references_drops_their_tasks_and_the_build_goes_on(tmp_path):
    """The fake service dies at the DIE_AT-th add after a reset: the references that add that often lose their world on
    every try, and their tasks are dropped for it, counted under one reason that names the service and what it
    printed; the others are kept, on a service started again after each death."""
    path = write_service(tmp_path, start=["{python}", str(FAKE), "{port}", "--spec", "{dir}/openapi.json",
                                          "--die-on", "POST /items", "--die-at", str(DIE_AT)])
    done = run("builder", "--service", str(path), "--n", "6", *SMALL, "--no-world-mutants", "--out",
               str(tmp_path / "data"))
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: fewer tasks kept than asked, said on stderr
    assert "Traceback" not in done.stderr and "no verdict" not in done.stderr
    report = json.loads((tmp_path / "data" / "build_report.json").read_text())
    reason = ("fake: reference lost its world: the service fake exited with status 3 during the job; it printed: "
              "fake service: crashed on POST /items")
    kept = report["kept"]["fake"]
    assert report["rejections"].get(reason, 0) >= 1 and kept >= 1, report["rejections"]
    assert kept + sum(report["rejections"].values()) == 6
    assert f"dropped {report['rejections'][reason]}: {reason}" in done.stdout
    for shard in (tmp_path / "data").rglob("*.parquet"):
        for row in pq.read_table(shard).to_pylist():
            assert row["reference_program"].count("requests.post") < DIE_AT, "what was kept never killed the service"
