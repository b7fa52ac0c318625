"""`python -m builder --mcp FILE`: a verified split built from an MCP server's file alone, scored 100% by its reference
in code and tools modes through `python -m evaluate` with no extra flag (the dataset keeps the file and the model the
build probed), the same bytes from the same seed, and one line with exit status 2 for a server that cannot be used.

The memory server's tests need it installed (`npm ci --prefix scenarios/mcp/servers`, as .ci/run does); the fake
server (tests/scenarios/mcp/fake_server.py) needs only the `mcp` package.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builder.test_service_build import SMALL, load_rows, reference_score, run
from tests.scenarios.mcp.conftest import needs_memory, write_fake


def build(server: str, out: Path, n: int) -> dict:
    done = run("builder", "--mcp", server, "--n", str(n), *SMALL, "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / "MANIFEST.json").read_text())


def scores_100_in_both_modes(dataset: Path, results: Path, name: str) -> None:
    for mode in ("code", "tools"):
        summary = reference_score(dataset, results / mode, mode)["summary"]["scenarios"][name]
        assert summary["pass@1"] == 1.0, (mode, summary)


@pytest.fixture(scope="module")
def fake_build(tmp_path_factory) -> tuple[Path, dict]:
    """The fake server's split: (folder, manifest)."""
    where = tmp_path_factory.mktemp("fake")
    out = where / "ds"
    return out, build(str(write_fake(where)), out, 4)


def test_a_server_that_makes_its_own_ids_builds_and_its_reference_scores_100(fake_build, tmp_path):
    out, manifest = fake_build
    assert manifest["counts"]["tasks"] >= 3
    assert sorted(p.name for p in (out / "services").iterdir()) == ["tasks.model.json", "tasks.readiness.json",
                                                                     "tasks.readiness.md", "tasks.toml"]
    assert "| `complete_task` | undocumented error |" in (out / "services" / "tasks.readiness.md").read_text()
    rows = load_rows(out)
    assert all("create_task(" in r["reference_program"] for r in rows)
    assert any("<made-" in json.dumps(r["test_cases"], default=str) for r in rows), "the ids it made are renamed"
    scores_100_in_both_modes(out, tmp_path / "results", "tasks")


@pytest.mark.e2e  # the build above and its reference's scores run by default; enriched prompts are unit-tested
def test_the_enriched_documentation_of_a_built_server_scores_and_compares(fake_build, tmp_path):
    out, _ = fake_build
    rows = load_rows(out)
    done = run("evaluate", "--dataset", str(out), "--model", "reference", "--out", str(tmp_path / "results" / "code"))
    assert done.returncode == 0, done.stderr[-2000:]
    # Each task keeps the documentation with what was observed added (--doc enriched): scored so, the reference still
    # passes, and the report's paired test compares the run with the one on the spec.
    assert all(r["api_doc_enriched"].startswith(r["api_doc"].rstrip()) for r in rows)
    assert all("- `complete_task` reports an error" in r["api_doc_enriched"] for r in rows)
    done = run("evaluate", "--dataset", str(out), "--model", "reference", "--doc", "enriched", "--out",
               str(tmp_path / "results" / "code"))  # the spec run's folder: one results file per documentation
    assert done.returncode == 0, done.stderr[-2000:]
    spec = next((tmp_path / "results" / "code").rglob("results.json"))
    enriched = json.loads(spec.with_name("results_enriched.json").read_text())
    assert enriched["doc"] == "enriched" and enriched["summary"]["scenarios"]["tasks"]["pass@1"] == 1.0
    report = run("evaluate.report", str(spec), str(spec.with_name("results_enriched.json")))
    assert report.returncode == 0, report.stderr
    assert "natural, enriched doc" in report.stdout and "## Paired differences in pass@1" in report.stdout


def test_a_server_that_cannot_start_ends_the_build_with_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\ncommand = ["/nonexistent/server"]\nready_timeout_s = 20\n')
    done = run("builder", "--mcp", str(path), "--n", "2", "--out", str(tmp_path / "ds"))
    assert done.returncode == 2 and "did not start" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def memory_build(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("memory") / "a"
    return out, build("memory", out, 4)


@needs_memory
@pytest.mark.e2e  # the fake server's build covers the same path in the default run, in a third of the time
def test_the_memory_server_builds_from_its_file_and_its_reference_scores_100(memory_build, tmp_path):
    out, manifest = memory_build
    assert manifest["counts"]["memory"] >= 3
    rows = load_rows(out)
    assert all(r["binding_count"] >= 1 for r in rows)
    assert any("create_entities(" in r["reference_program"] for r in rows)
    scores_100_in_both_modes(out, tmp_path, "memory")
    # Its readiness report, written beside the build, observes what the tools' descriptions leave out, and not what
    # they state: delete_entities says it deletes the associated relations.
    plain = json.loads((out / "services" / "memory.readiness.json").read_text())
    by = {(f["operation"], f["kind"]): f for f in plain["findings"]}
    assert "not found" in by[("add_observations", "undocumented error")]["evidence"]
    assert ("create_entities", "repeated create") in by
    assert not any(f["kind"] == "delete cascade" for f in plain["findings"])
    # Each task keeps the documentation with what was observed added (--doc enriched; scored on the fake server's
    # build above).
    assert all("- `add_observations` reports an error for an entity name that does not exist (seen: add_observations("
               in r["api_doc_enriched"] for r in rows)


@needs_memory
@pytest.mark.e2e
def test_the_memory_server_builds_the_same_bytes_twice(memory_build, tmp_path):
    first, manifest = memory_build
    second = build("memory", tmp_path / "b", 4)
    assert manifest["content_hash"] == second["content_hash"]
    for name in ("memory.toml", "memory.model.json", "memory.readiness.md"):
        assert (first / "services" / name).read_bytes() == (tmp_path / "b" / "services" / name).read_bytes()


@pytest.mark.e2e
def test_the_voice_lab_builds_from_its_server_file_alone_and_its_reference_scores_100(tmp_path):
    """StateEval's own voice lab, served over MCP and described only by scenarios/mcp/servers/voicelab.toml (its
    state in two resources): derived as an unseen server would be, it builds and its reference passes."""
    out = tmp_path / "ds"
    manifest = build("voicelab", out, 4)
    assert manifest["counts"]["voicelab"] >= 2
    model = json.loads((out / "services" / "voicelab.model.json").read_text())
    assert [k[:2] for k in model["keys"]] == [["speech id", "text_to_speech"]], "the id the lab makes, by its name"
    rows = load_rows(out)
    assert all(r["binding_count"] >= 1 for r in rows)
    scores_100_in_both_modes(out, tmp_path / "results", "voicelab")
