"""python -m builder publish: validation before any network, one commit plus an immutable tag, retries, the token.

The Hub side is the real `huggingface_hub` client talking HTTP to `FakeHub` on loopback (tests/builder/hub_support.py),
so what is checked is what the client actually sends: the commit's NDJSON body, its parent, the tag request.
Each `main()` run replays the references in the sandbox, so only the tests about the command line go through
`main()`; the tests about the Hub conversation call `push()` with a plan made from the same validated folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi, constants

from builder import publish
from builder.publish import PublishError, Retry, hub_api, main, make_plan, push, validate_folder
from core.records import MANIFEST, SCHEMA, content_hash, file_sha256
from tests.builder.hub_support import INITIAL_FILES, FakeHub

REPO = "acme/stateeval"
VERSION = "v1.2.3"
TEST_TOKEN = "hf_test_token"
REPLAY_WORKERS = "1"  # one sandbox worker is enough for the small build and leaves the other core alone
NOT_REPLAYED = "reference replay not run by this test"  # the description line of plans made without main()
BAD_STATUS = {401: "HF_TOKEN", 403: "write access", 404: "not found"}  # HTTP status -> what the message must name
PERMANENT_STATUS = (400, 401, 403, 404, 409, 412)  # answers that a second try would only repeat


# ------------------------------------------------------------------------------------------- helpers


def copy_dataset(small_dataset: Path, tmp_path: Path) -> Path:
    """A private copy of the session's dataset: the session fixture is shared and must stay untouched."""
    return Path(shutil.copytree(small_dataset, tmp_path / "stateeval"))


def visible_files(folder: Path) -> dict[str, bytes]:
    """What a release must hold: every non-hidden file of the folder, with its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)}


def only_shard(folder: Path) -> str:
    (rel,) = json.loads((folder / MANIFEST).read_text())["files"]
    return rel


def rewrite_shard(folder: Path, edit) -> None:
    """Rewrite the shard through `edit(table) -> table` and update MANIFEST.json to match, as a rebuild would.

    The shard keeps its name (the card lists it), so only what `edit` changes can make validation fail."""
    rel = only_shard(folder)
    pq.write_table(edit(pq.read_table(folder / rel)), folder / rel)
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"][rel] = file_sha256(folder / rel)
    manifest["content_hash"] = content_hash(manifest["files"])
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2))


def args(folder: Path | str, *extra: str, repo: str = REPO, version: str = VERSION) -> list[str]:
    return ["--dir", str(folder), "--repo", repo, "--version", version, "--workers", REPLAY_WORKERS, *extra]


def expected_message(folder: Path) -> str:
    """The commit message, computed here from the manifest rather than copied from the implementation's output."""
    counts = json.loads((folder / MANIFEST).read_text())["counts"]
    return f"StateEval {VERSION}: {sum(counts.values())} tasks ({', '.join(f'{s} {n}' for s, n in counts.items())})"


def replay_passed(folder: Path) -> str:
    """What the output says when every reference of the folder replayed: proof that main() ran the replay."""
    total = sum(json.loads((folder / MANIFEST).read_text())["counts"].values())
    return f"reference replay {total}/{total} passed"


def commit_lines(hub: FakeHub) -> list[dict]:
    (request,) = hub.of("commit")
    return request.ndjson()


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture
def hub():
    with FakeHub() as fake:
        yield fake


@pytest.fixture
def api(hub):
    return HfApi(endpoint=hub.url, token=TEST_TOKEN)


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def retry(sleeps):
    """Real backoff decisions, no real waiting: each wait is recorded instead of slept."""
    return Retry(sleep=sleeps.append, log=lambda msg: None)


@pytest.fixture(scope="module")
def validated(small_dataset):
    """(folder, manifest) of the session dataset, validated once for the tests that call push() directly."""
    _, manifest = validate_folder(small_dataset)
    return small_dataset, manifest


@pytest.fixture
def plan(validated):
    folder, manifest = validated
    return make_plan(folder, REPO, VERSION, manifest, NOT_REPLAYED)


@pytest.fixture
def no_token(monkeypatch, tmp_path):
    """No HF_TOKEN and no token stored by `hf auth login`: an empty HF_HOME, and the token paths inside it.

    huggingface_hub reads the token paths when it is imported, so they are pointed at the empty home as well."""
    home = tmp_path / "hf-home"
    home.mkdir()
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))
    return home


# ------------------------------------------------------------------------------------------- dry run


def test_dry_run_prints_files_message_and_tag_and_sends_nothing(small_dataset, tmp_path, hub, api, no_token,
                                                                 capsys):
    folder = copy_dataset(small_dataset, tmp_path)
    (folder / "data" / ".tensor-0.tmp").write_bytes(b"left over by an editor")  # hidden: never goes up

    assert main(args(folder, "--dry-run"), api=api) == 0

    out = capsys.readouterr().out
    files = visible_files(folder)
    assert {"README.md", MANIFEST, "build_report.json"} < set(files)
    assert any(f.startswith("data/") and f.endswith(".parquet") for f in files)
    for rel in files:
        assert f"add    {rel}  ({len(files[rel])} bytes)" in out
    assert ".tensor-0.tmp" not in out
    assert expected_message(folder) in out
    assert f"tag:     {VERSION} " in out
    assert replay_passed(folder) in out
    assert hub.requests == []  # not even the repo check: a dry run works without a token or a network


# ---------------------------------------------------------------------------------------- happy path


def test_publish_makes_one_commit_with_every_file_then_tags_it(small_dataset, tmp_path, hub, api, retry, capsys):
    folder = copy_dataset(small_dataset, tmp_path)
    (folder / "data" / ".tensor-0.tmp").write_bytes(b"left over by an editor")
    files = visible_files(folder)

    assert main(args(folder), api=api, retry=retry) == 0

    repo = hub.repos[REPO]
    assert repo.repo_type == "dataset"
    commits = hub.of("commit")
    assert len(commits) == 1
    lines = commits[0].ndjson()
    header = lines[0]["value"]
    initial = next(c.oid for c in repo.commits.values() if c.parent is None)
    assert header["summary"] == expected_message(folder)
    assert header["parentCommit"] == initial  # pinned: a concurrent push cannot interleave
    assert replay_passed(folder) in header["description"]
    assert sorted(line["value"]["path"] for line in lines[1:] if line["key"] == "file") == sorted(files)

    assert list(repo.tags) == [VERSION]
    tagged = repo.tags[VERSION]
    assert tagged == repo.branches["main"] and repo.commits[tagged].parent == initial
    assert hub.files_at(REPO, VERSION) == {**INITIAL_FILES, **files}  # identical bytes, nothing else
    manifest = json.loads(files[MANIFEST])
    assert manifest["content_hash"] in repo.tag_messages[VERSION]

    assert all(r.headers.get("authorization") == f"Bearer {TEST_TOKEN}" for r in hub.requests)
    assert hub.of("unknown") == []
    out = capsys.readouterr().out
    assert f"published {REPO} {VERSION}: commit {tagged} ({len(files)} files)" in out
    assert f"revision={VERSION!r}" in out


def test_stale_shards_of_an_earlier_version_are_deleted_in_the_same_commit(small_dataset, tmp_path, hub, api,
                                                                           retry, capsys):
    folder = copy_dataset(small_dataset, tmp_path)
    stale = "data/tensor-00000-of-00001-0123456789ab.parquet"
    head = hub.add_repo(REPO, {"README.md": b"an older card", MANIFEST: b"{}", stale: b"an older shard"})

    assert main(args(folder), api=api, retry=retry) == 0

    lines = commit_lines(hub)
    assert lines[0]["value"]["parentCommit"] == head
    assert [line["value"]["path"] for line in lines if line["key"] == "deletedFile"] == [stale]
    assert hub.files_at(REPO, VERSION) == {**INITIAL_FILES, **visible_files(folder)}
    assert hub.repos[REPO].tags[VERSION] == hub.repos[REPO].branches["main"]
    assert "deleted 1 stale" in capsys.readouterr().out


def test_an_unchanged_folder_published_as_a_new_version_tags_the_same_tree(validated, hub, api, retry):
    """The client drops files the Hub already holds; the new tag must still name exactly the folder's tree."""
    folder, manifest = validated
    first = push(make_plan(folder, REPO, VERSION, manifest, NOT_REPLAYED), api, retry)
    again = "v1.2.4"

    second = push(make_plan(folder, REPO, again, manifest, NOT_REPLAYED), api, retry)

    repo = hub.repos[REPO]
    assert repo.tags == {VERSION: first["commit"], again: second["commit"]}
    assert second["commit"] == repo.branches["main"]
    assert hub.files_at(REPO, again) == hub.files_at(REPO, VERSION) == {**INITIAL_FILES, **visible_files(folder)}


# -------------------------------------------------------------------------------------- existing tag


def test_an_existing_tag_is_refused_and_nothing_is_committed(small_dataset, hub, api, retry, capsys):
    hub.add_repo(REPO)
    hub.add_tag(REPO, VERSION)
    before = dict(hub.repos[REPO].tags)

    assert main(args(small_dataset), api=api, retry=retry) == 2

    err = capsys.readouterr().err
    assert f"already has the tag {VERSION}" in err and "never overwritten" in err
    assert hub.of("commit") == [] and hub.of("preupload") == [] and hub.of("tag") == []
    assert hub.repos[REPO].tags == before


def test_a_tag_created_by_someone_else_meanwhile_is_reported(plan, hub, api, retry):
    initial = hub.add_repo(REPO)
    hub.before("tag", lambda: hub.add_tag(REPO, VERSION, initial))

    with pytest.raises(PublishError, match="created by someone else"):
        push(plan, api, retry)

    assert hub.repos[REPO].tags[VERSION] == initial  # the other tag is left alone, not moved


def test_a_tag_request_that_landed_but_lost_its_answer_counts_as_published(plan, hub, api, retry):
    hub.fail("tag", mode="lost")  # the tag is made, the connection drops before the answer

    result = push(plan, api, retry)

    assert len(hub.of("tag")) == 2  # the retry is answered 409, then the refs show the tag on our commit
    assert hub.repos[REPO].tags[VERSION] == result["commit"] == hub.repos[REPO].branches["main"]


def test_a_commit_that_landed_but_lost_its_answer_is_tagged_not_reported_as_a_failure(plan, hub, api, retry):
    hub.fail("commit", mode="lost")  # the commit lands on main, the connection drops before the answer

    result = push(plan, api, retry)

    assert len(hub.of("commit")) == 2  # the retry is answered 412 (main moved: it holds our commit)
    repo = hub.repos[REPO]
    assert repo.tags[VERSION] == result["commit"] == repo.branches["main"]
    assert len(repo.commits) == 2  # the repo's first commit and ours: nothing committed twice
    assert hub.files_at(REPO, VERSION) == {**INITIAL_FILES, **visible_files(plan.folder)}


def test_a_lost_commit_answer_after_someone_else_pushed_is_still_refused(plan, hub, api, retry):
    hub.add_repo(REPO)
    hub.fail("commit", mode="lost")
    hub.before("commit", lambda: hub.push_commit(REPO, {"other.txt": b"someone else's change"}))

    with pytest.raises(PublishError, match="upload the commit failed.*HTTP 412"):
        push(plan, api, retry)

    assert VERSION not in hub.repos[REPO].tags


def test_the_tag_names_the_release_commit_even_if_main_moved_meanwhile(plan, hub, api, retry):
    hub.add_repo(REPO)
    hub.before("tag", lambda: hub.push_commit(REPO, {"other.txt": b"someone else's change"}))

    result = push(plan, api, retry)

    repo = hub.repos[REPO]
    assert repo.tags[VERSION] == result["commit"] != repo.branches["main"]
    assert hub.files_at(REPO, VERSION) == {**INITIAL_FILES, **visible_files(plan.folder)}


def test_a_concurrent_push_fails_instead_of_interleaving(plan, hub, api, retry, sleeps):
    hub.add_repo(REPO)
    hub.before("commit", lambda: hub.push_commit(REPO, {"other.txt": b"someone else's change"}))

    with pytest.raises(PublishError, match="upload the commit failed.*HTTP 412"):
        push(plan, api, retry)

    assert len(hub.of("commit")) == 1 and sleeps == []  # a moved parent is not "try again"
    assert VERSION not in hub.repos[REPO].tags
    assert set(hub.files_at(REPO, "main")) == {*INITIAL_FILES, "other.txt"}


# ------------------------------------------------------------------------------------------- retries


@pytest.mark.parametrize("route, status, mode, times", [
    ("create", 502, "status", 1),
    ("refs", 503, "status", 2),
    ("commit", 503, "status", 2),
    ("commit", None, "drop", 1),  # connection dropped before the Hub applied the commit
    ("tag", 429, "status", 1),
])
def test_transient_hub_errors_are_retried_and_the_publish_succeeds(plan, hub, api, retry, sleeps, route, status,
                                                                   mode, times):
    hub.fail(route, status, times=times, mode=mode)

    result = push(plan, api, retry)

    assert len(sleeps) == times and all(s > 0 for s in sleeps)
    assert len(hub.of(route)) == times + 1
    repo = hub.repos[REPO]
    assert len(repo.commits) == 2  # the repo's initial commit and exactly one release commit
    assert repo.tags == {VERSION: result["commit"]} and repo.branches["main"] == result["commit"]
    assert hub.files_at(REPO, VERSION) == {**INITIAL_FILES, **visible_files(plan.folder)}


def test_retries_stop_after_the_last_attempt(plan, hub, api, sleeps):
    attempts = 3
    hub.fail("refs", 503, times=None)

    with pytest.raises(PublishError, match="list the repo's refs failed.*HTTP 503"):
        push(plan, api, Retry(attempts=attempts, sleep=sleeps.append, log=lambda msg: None))

    assert len(hub.of("refs")) == attempts and len(sleeps) == attempts - 1
    assert hub.of("commit") == []


@pytest.mark.parametrize("status", sorted(BAD_STATUS))
def test_auth_and_not_found_errors_are_not_retried_and_name_the_fix(plan, hub, api, retry, sleeps, status):
    hub.fail("*", status, times=None)

    with pytest.raises(PublishError) as caught:
        push(plan, api, retry)

    assert f"HTTP {status}" in str(caught.value) and BAD_STATUS[status] in str(caught.value)
    assert sleeps == [] and len(hub.of("create")) == 1
    assert hub.of("commit") == [] and REPO not in hub.repos


def test_offline_mode_is_not_retried(plan, hub, api, retry, sleeps, monkeypatch):
    """HF_HUB_OFFLINE makes the client raise a ConnectionError that no wait can clear: stop at once, say why."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    with pytest.raises(PublishError, match="HF_HUB_OFFLINE"):
        push(plan, api, retry)

    assert sleeps == [] and hub.requests == []


def test_only_try_again_errors_count_as_transient():
    """The retry decision itself, for errors the fake Hub cannot produce (timeouts of the HTTP client)."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    def http_error(status: int) -> HfHubHTTPError:
        return HfHubHTTPError(f"HTTP {status}", response=httpx2.Response(status, request=httpx2.Request("GET", "x")))

    assert all(publish.is_transient(http_error(s)) for s in publish.TRANSIENT_STATUS)
    assert not any(publish.is_transient(http_error(s)) for s in PERMANENT_STATUS)
    assert publish.is_transient(httpx2.ReadTimeout("slow")) and publish.is_transient(ConnectionResetError())
    assert not publish.is_transient(ValueError("a bug, not the network"))


# ---------------------------------------------------------------------------------------- validation


def edit_shard_bytes(folder: Path) -> None:
    with open(folder / only_shard(folder), "ab") as f:
        f.write(b"\0")


def add_stray_shard(folder: Path) -> None:
    shutil.copy(folder / only_shard(folder), folder / "data" / "tensor-00001-of-00001-aaaaaaaaaaaa.parquet")


def remove_card(folder: Path) -> None:
    (folder / "README.md").unlink()


def card_without_shard(folder: Path) -> None:
    card = folder / "README.md"
    card.write_text(card.read_text().replace(only_shard(folder), "data/elsewhere.parquet"))


def drop_a_column(folder: Path) -> None:
    rewrite_shard(folder, lambda table: table.drop_columns(["notes"]))


def test_a_dataset_from_before_levers_still_loads(small_dataset, tmp_path):
    """A release built before the `levers` column reads as it was written, each row with no levers; a shard that
    lacks a column which was always there is still refused (above)."""
    from core.records import load_tasks

    folder = copy_dataset(small_dataset, tmp_path)
    now, _ = load_tasks(str(folder))
    rewrite_shard(folder, lambda table: table.drop_columns(["levers"]))
    before, _ = load_tasks(str(folder))
    assert [t.task_id for t in before] == [t.task_id for t in now] and all(t.levers == [] for t in before)
    assert [t.reference_program for t in before] == [t.reference_program for t in now]


@pytest.mark.parametrize("breaks, says", [
    (edit_shard_bytes, "does not match its hash"),
    (add_stray_shard, "not listed in MANIFEST.json"),
    (remove_card, "has no README.md"),
    (card_without_shard, "the card does not list"),
    (drop_a_column, "does not have this version's task schema"),
])
def test_a_broken_folder_is_refused_before_any_network(small_dataset, tmp_path, hub, api, capsys, breaks, says):
    folder = copy_dataset(small_dataset, tmp_path)
    breaks(folder)

    assert main(args(folder), api=api) == 2

    assert says in capsys.readouterr().err
    assert hub.requests == []


@pytest.mark.parametrize("repo, version, says", [
    ("stateeval", VERSION, "not a Hub repo id"),
    ("acme/state eval", VERSION, "not a Hub repo id"),
    ("https://huggingface.co/datasets/acme/stateeval", VERSION, "not a Hub repo id"),
    (REPO, "1.2.3", "not vX.Y.Z"),
    (REPO, "v1.2", "not vX.Y.Z"),
    (REPO, "v1.2.3-rc1", "not vX.Y.Z"),
])
def test_bad_repo_or_version_names_are_refused(small_dataset, hub, api, capsys, repo, version, says):
    assert main(args(small_dataset, repo=repo, version=version), api=api) == 2
    assert says in capsys.readouterr().err
    assert hub.requests == []


def test_a_missing_folder_is_refused(tmp_path, hub, api, capsys):
    assert main(args(tmp_path / "nowhere"), api=api) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert hub.requests == []


def test_references_that_do_not_replay_at_100_percent_are_refused(small_dataset, tmp_path, hub, api, capsys):
    folder = copy_dataset(small_dataset, tmp_path)
    broken = {}

    def break_one_reference(table: pa.Table) -> pa.Table:
        rows = table.to_pylist()
        rows[len(rows) // 2]["reference_program"] = "RESULT = None\n"
        broken["task_id"], broken["total"] = rows[len(rows) // 2]["task_id"], len(rows)
        return pa.Table.from_pylist(rows, schema=SCHEMA)

    rewrite_shard(folder, break_one_reference)
    validate_folder(folder)  # still a consistent folder: only the replay can catch it

    assert main(args(folder), api=api) == 2

    err = capsys.readouterr().err
    assert f"score {broken['total'] - 1}/{broken['total']}, not 100%" in err
    assert f"{broken['task_id']}: " in err
    assert hub.requests == []


# ------------------------------------------------------------------------------------------------ token


def test_publish_without_a_token_names_hf_token_and_hf_auth_login(small_dataset, no_token, capsys, monkeypatch):
    replays = []
    monkeypatch.setattr(publish, "replay_references", lambda *a, **k: replays.append(a) or "replayed")
    assert main(args(small_dataset)) == 2
    err = capsys.readouterr().err
    assert "no Hugging Face token" in err and "HF_TOKEN" in err and "hf auth login" in err
    assert replays == []  # refused before minutes of replay, not after


def test_hub_api_reads_hf_token(no_token, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    api = hub_api()
    assert isinstance(api, HfApi) and api.token == "hf_from_env"


def test_hub_api_reads_the_token_hf_auth_login_stored(no_token):
    (no_token / "token").write_text("hf_stored_by_login\n")
    assert hub_api().token == "hf_stored_by_login"


def test_a_failed_oidc_token_exchange_is_an_error_that_names_the_fix(no_token, monkeypatch):
    monkeypatch.setenv("HF_OIDC_RESOURCE", "https://huggingface.co")  # keyless CI auth asked for, outside any CI
    for name in ("HF_OIDC_ID_TOKEN", "GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(PublishError, match="token exchange failed.*HF_OIDC_RESOURCE"):
        hub_api()


def test_hub_api_without_any_token_refuses(no_token):
    with pytest.raises(PublishError, match="HF_TOKEN.*hf auth login"):
        hub_api()


@pytest.mark.parametrize("option, value", [("--timeout", "0"), ("--workers", "0")])
def test_a_replay_limit_that_cannot_work_is_refused_in_one_line(small_dataset, hub, api, capsys, option, value):
    """A zero timeout would fail every reference replay and blame the dataset for it."""
    from builder.publish import main

    with pytest.raises(SystemExit) as exit_:
        main(["--dir", str(small_dataset), "--repo", "org/stateeval", "--version", "v1.0.0", option, value], api=api)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {option}:" in err
    assert hub.of("commit") == [] and hub.of("tag") == []
