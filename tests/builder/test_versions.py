"""The versioning policy (VERSIONING.md, builder/versions.py) and publish's refusal of a number too small for it."""

from __future__ import annotations

import copy
import dataclasses
import json

import pyarrow as pa
import pytest
from huggingface_hub import HfApi

from builder import versions
from builder.publish import main
from core.records import SCHEMA
from tests.builder.hub_support import FakeHub
from tests.builder.test_publish import REPLAY_WORKERS, TEST_TOKEN, copy_dataset, rewrite_shard

MANIFEST = {"seed": 0}
COLUMNS = {f.name for f in SCHEMA}


def diff(old, new, old_manifest=MANIFEST, new_manifest=MANIFEST, old_columns=COLUMNS):
    return versions.difference(old, old_manifest, new, new_manifest, old_columns, COLUMNS)


def test_version_arithmetic():
    assert versions.bumped("v1.4.2", versions.MAJOR) == "v2.0.0"
    assert versions.bumped("v1.4.2", versions.MINOR) == "v1.5.0"
    assert versions.bumped("v1.4.2", versions.PATCH) == "v1.4.3"
    major = versions.Difference(versions.MAJOR)
    assert versions.allows("v2.0.0", "v1.4.2", major) and versions.allows("v3.1.0", "v1.4.2", major)
    assert not versions.allows("v1.9.0", "v1.4.2", major)
    assert not versions.allows("v1.4.2", "v1.4.2", versions.Difference())  # never the same number again
    with pytest.raises(ValueError):
        versions.parse("1.0")


def test_each_kind_of_change_gets_its_level(small_tasks):
    old = small_tasks
    same = [dataclasses.replace(t, created_at="2030-01-01", builder_version="9.9.9") for t in old]
    assert diff(old, same).level == versions.PATCH  # provenance only

    more = copy.deepcopy(old) + [dataclasses.replace(old[0], task_id="tensor-9999")]
    assert (d := diff(old, more)).level == versions.MINOR and "1 task(s) added (tensor-9999)" in d.reasons[0]

    notes = [dataclasses.replace(t, notes="changed") if i == 0 else t for i, t in enumerate(old)]
    assert diff(old, notes).level == versions.MINOR
    assert diff(old, copy.deepcopy(old), old_columns=COLUMNS - {"levers"}).reasons == [
        "minor: column(s) added: levers"]
    unread = [dataclasses.replace(t, world_mutants=[]) for t in old]  # as a release without the column reads
    assert diff(unread, old, old_columns=COLUMNS - {"world_mutants"}).reasons == [
        "minor: column(s) added: world_mutants"], "a new column's values are an addition, not a change of judging"

    worded = [dataclasses.replace(t, instruction=t.instruction + " Please.") if i == 1 else t
              for i, t in enumerate(old)]
    assert (d := diff(old, worded)).level == versions.MAJOR
    assert d.reasons == [f"major: what the model is asked: `instruction` changed in 1 task(s) ({old[1].task_id})"]

    judged = copy.deepcopy(old)
    judged[2].test_cases[0].expected_result = "[0]"
    assert "how it is judged: `test_cases` changed" in diff(old, judged).reasons[0]

    assert "removed" in diff(old, old[1:]).reasons[0]
    assert "another seed" in diff(old, old, new_manifest={"seed": 1}).reasons[0]


def change_one_oracle(folder) -> str:
    """Edit one task's expected result in a copy that stands for the previous release; returns its task id."""
    changed = {}

    def edit(table: pa.Table) -> pa.Table:
        rows = table.to_pylist()
        rows[0]["test_cases"][0]["expected_result"] = json.dumps(["not what the reference returns"])
        changed["id"] = rows[0]["task_id"]
        return pa.Table.from_pylist(rows, schema=SCHEMA)

    rewrite_shard(folder, edit)
    return changed["id"]


def test_publish_refuses_a_same_major_version_after_an_oracle_changed(small_dataset, tmp_path, capsys):
    previous = copy_dataset(small_dataset, tmp_path / "previous")
    task_id = change_one_oracle(previous)
    base = ["--dir", str(small_dataset), "--repo", "acme/stateeval", "--workers", REPLAY_WORKERS, "--dry-run",
            "--previous", f"{previous}@v1.2.0"]

    assert main(base + ["--version", "v1.3.0"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("score:")]  # replay progress
    assert len(err) == 1 and err[0].startswith("error: --version v1.3.0 is smaller than the policy requires after "
                                               "v1.2.0: at least v2.0.0, a major change (major: how it is judged: "
                                               f"`test_cases` changed in 1 task(s) ({task_id}))")

    assert main(base + ["--version", "v2.0.0"]) == 0
    assert "compared with v1.2.0: a major change, so at least v2.0.0" in capsys.readouterr().out


def test_publish_compares_with_the_repos_highest_tag_below_the_new_version(small_dataset, tmp_path, capsys,
                                                                          monkeypatch):
    """Without --previous, the release followed is the repo's highest vX.Y.Z tag below the new one, downloaded
    with huggingface_hub.snapshot_download (replaced here by a local copy: the fake Hub serves no file downloads)."""
    previous = copy_dataset(small_dataset, tmp_path / "previous")
    change_one_oracle(previous)
    downloads = []

    def snapshot_download(repo, **kwargs):
        downloads.append((repo, kwargs["revision"], kwargs["endpoint"]))
        return str(previous)

    monkeypatch.setattr("huggingface_hub.snapshot_download", snapshot_download)
    with FakeHub() as hub:
        hub.add_repo("acme/stateeval")
        for tag in ("v1.0.0", "v1.1.0", "v3.0.0"):
            hub.add_tag("acme/stateeval", tag)
        api = HfApi(endpoint=hub.url, token=TEST_TOKEN)
        argv = ["--dir", str(small_dataset), "--repo", "acme/stateeval", "--workers", REPLAY_WORKERS]
        assert main(argv + ["--version", "v1.2.0"], api=api) == 2
        assert downloads == [("acme/stateeval", "v1.1.0", hub.url)]
        assert "at least v2.0.0" in capsys.readouterr().err
        assert hub.of("commit") == [] and hub.of("tag") == []


def test_an_unchanged_build_needs_only_a_patch(small_dataset, tmp_path, capsys):
    previous = copy_dataset(small_dataset, tmp_path / "previous")
    assert main(["--dir", str(small_dataset), "--repo", "acme/stateeval", "--workers", REPLAY_WORKERS, "--dry-run",
                 "--previous", f"{previous}@v1.2.0", "--version", "v1.2.1"]) == 0
    assert "a patch change, so at least v1.2.1" in capsys.readouterr().out
