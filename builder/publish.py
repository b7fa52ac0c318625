"""python -m builder publish: release a dataset folder as a version of a Hugging Face dataset repo.

A release is immutable: one commit that holds exactly the validated folder, and a git tag `vX.Y.Z` on that commit
(the revision evaluate pins and records). So the folder is validated before anything is sent (shards against
MANIFEST.json, the Arrow schema, the card's file list, and the reference programs replayed in the sandbox at
100%), an existing tag is refused rather than moved, and every file goes up in a single `create_commit`
(shards of an earlier version that this one does not list are deleted in that same commit) whose parent is
pinned, so a concurrent push fails instead of interleaving. Only errors that say "try again" are retried (HTTP
408/429/5xx, dropped connections, timeouts), with exponential backoff; 401/403/404 and the rest stop at once.
The token is the standard one: `HF_TOKEN`, else the one `hf auth login` stored (`huggingface_hub.get_token`).

  python -m builder publish --dir stateeval --repo ORG/stateeval --version v1.0.0 --dry-run
  python -m builder publish --dir stateeval --repo ORG/stateeval --version v1.0.0
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core.arguments import Parser, at_least_one, positive_seconds
from builder import versions
from core.records import DATA_DIR, MANIFEST, DatasetError, TaskRecord, load_tasks
from core.retry import backoff_s

REPO_TYPE = "dataset"
BRANCH = "main"
VERSION = re.compile(r"v\d+\.\d+\.\d+")
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class PublishError(RuntimeError):
    """A release that cannot (or must not) go ahead; the message names the problem and the fix."""


# -------------------------------------------------------------------------------------------- the plan


@dataclass
class Plan:
    """Exactly what a publish sends: the files, the commit message and the tag."""

    folder: Path
    repo: str
    version: str
    files: list[str]  # paths relative to the folder, sorted; uploaded under the same paths
    manifest: dict
    message: str = ""
    description: str = ""
    private: bool = False

    @property
    def tag(self) -> str:
        return self.version

    @property
    def tag_message(self) -> str:
        return f"StateEval {self.version} (content hash {self.manifest['content_hash']})"

    def render(self) -> str:
        lines = [
            f"repo:    {self.repo} (Hugging Face dataset; created{' private' if self.private else ''} if missing)",
            f"commit:  one commit on {BRANCH}",
            f"  message:     {self.message}",
            *(f"  description: {line}" for line in self.description.splitlines()),
            f"  files ({len(self.files)}):",
        ]
        digests = self.manifest.get("files", {})
        for rel in self.files:
            size = (self.folder / rel).stat().st_size
            extra = f"  sha256 {digests[rel]}" if rel in digests else ""
            lines.append(f"    add    {rel}  ({size} bytes){extra}")
        lines.append(f"    delete {DATA_DIR}/* files on {BRANCH} that this version does not list (found when pushing)")
        lines.append(f"tag:     {self.tag} on that commit, message {self.tag_message!r}; refused if {self.tag} exists")
        return "\n".join(lines)


def upload_files(folder: Path) -> list[str]:
    """Every regular file in the folder except hidden ones (editor, cache and lock files never go up)."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out.append(rel.as_posix())
    return out


def make_plan(folder: Path, repo: str, version: str, manifest: dict, replay: str, private: bool = False) -> Plan:
    counts = manifest["counts"]
    total = sum(counts.values())
    message = f"StateEval {version}: {total} tasks ({', '.join(f'{s} {n}' for s, n in counts.items())})"
    description = "\n".join([
        f"content hash {manifest['content_hash']}",
        f"seed {manifest['seed']}, created_at {manifest['created_at']}, builder {manifest['builder_version']}, "
        f"translator {manifest.get('config', {}).get('translator', '?')}",
        f"validated before upload: shards match MANIFEST.json and the schema; {replay}",
    ])
    return Plan(folder, repo, version, upload_files(folder), manifest, message, description, private)


def unlisted_shards(paths, listed) -> list[str]:
    """The data files among `paths` that the release does not list (strays in a folder, stale ones on the Hub)."""
    listed = set(listed)
    return sorted(f for f in paths if f.startswith(f"{DATA_DIR}/") and f not in listed)


def branch_head(refs) -> str | None:
    return next((b.target_commit for b in refs.branches if b.name == BRANCH), None)


# ---------------------------------------------------------------------------------------------- checks


def check_names(repo: str, version: str) -> None:
    if not REPO_ID.fullmatch(repo):
        raise PublishError(f"--repo {repo!r} is not a Hub repo id ORG/NAME")
    if not VERSION.fullmatch(version):
        raise PublishError(f"--version {version!r} is not vX.Y.Z (e.g. v1.0.0); versions are git tags")


def validate_folder(folder: Path) -> tuple[list[TaskRecord], dict]:
    """Everything but the replay: manifest hashes and schema (`load_tasks`), stray shards, the card's file list.
    Returns the tasks."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PublishError(f"--dir {folder} is not a folder; build one with `python -m builder --out {folder}`")
    try:
        tasks, manifest = load_tasks(str(folder))  # every shard against MANIFEST.json, counts, split names
    except DatasetError as exc:
        raise PublishError(str(exc)) from exc
    listed = set(manifest["files"])
    stray = unlisted_shards(upload_files(folder), listed)
    if stray:
        raise PublishError(f"{', '.join(stray)} in {folder} are not listed in {MANIFEST}; remove them or rebuild")
    card = folder / "README.md"
    if not card.is_file():
        raise PublishError(f"{folder} has no README.md (the dataset card); rebuild the dataset")
    text = card.read_text()
    missing = [rel for rel in sorted(listed) if rel not in text]
    if missing:
        raise PublishError(f"the card does not list {', '.join(missing)}; rebuild the dataset (card and shards)")
    return tasks, manifest


def replay_references(tasks: list[TaskRecord], workers: int | None = None, timeout_s: float = 10.0) -> str:
    """Run every reference through the real sandbox and scoring (as `evaluate --model reference` does)."""
    from core.sandbox.harness import Limits, Sandbox
    from evaluate.scoring import has_verdict, score

    with Sandbox(workers, Limits(timeout_s=timeout_s)) as sandbox:
        results = score(tasks, {t.task_id: [t.reference_program] for t in tasks}, sandbox)
    unscored = [r for r in results if not has_verdict(r)]
    if unscored:  # the machine's failure, not the references': say so rather than "not 100%"
        raise PublishError(f"{len(unscored)} reference replay(s) got no verdict (their sandbox workers were lost: "
                           f"{unscored[0].error[:160]}); run publish again")
    failed = [r for r in results if r.status != "pass"]
    if failed or len(results) != len(tasks):
        shown = "; ".join(f"{r.task_id}: {r.status} ({r.error[:120]})" for r in failed[:5])
        raise PublishError(
            f"the reference programs score {len(results) - len(failed)}/{len(tasks)}, not 100%: {shown}. "
            "A release must replay at 100%; rebuild the dataset (or fix the scenario) before publishing"
        )
    return f"reference replay {len(results)}/{len(tasks)} passed in the sandbox"


# ---------------------------------------------------------------------------------------------- retries


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection drops and timeouts of whichever HTTP client this huggingface_hub uses."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    try:
        import requests

        errors += [requests.exceptions.ConnectionError, requests.exceptions.Timeout]
    except ImportError:
        pass
    for name in ("httpx", "httpx2"):
        try:
            module = __import__(name)
            errors.append(module.TransportError)
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


def http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(exc, HfHubHTTPError):
        return http_status(exc) in TRANSIENT_STATUS
    if isinstance(exc, OfflineModeIsEnabled):  # a ConnectionError, but HF_HUB_OFFLINE stays set however long we wait
        return False
    return isinstance(exc, _transport_errors())


@dataclass
class Retry:
    """Exponential backoff with jitter for transient Hub errors only."""

    attempts: int = 5
    base_s: float = 2.0
    max_s: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    log: Callable[[str], None] = field(default=lambda msg: print(msg, file=sys.stderr))

    def call(self, what: str, fn: Callable[..., Any], *args, **kwargs) -> Any:
        for attempt in range(1, self.attempts + 1):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if not is_transient(exc) or attempt == self.attempts:
                    raise
                wait = backoff_s(attempt, self.base_s, self.max_s)
                self.log(f"{what}: {type(exc).__name__} ({http_status(exc) or 'no response'}); "
                         f"retry {attempt}/{self.attempts - 1} in {wait:.1f} s")
                self.sleep(wait)
        raise AssertionError("unreachable")


# ----------------------------------------------------------------------------------------------- push


def _explain(exc: Exception, plan: Plan, step: str) -> PublishError:
    status = http_status(exc)
    hint = {
        401: "the token was refused: set HF_TOKEN or run `hf auth login` with a valid token",
        403: f"the token may not write to {plan.repo}: it needs write access to that namespace",
        404: f"{plan.repo} was not found (check the organisation name and your membership)",
    }.get(status, "")
    detail = f"HTTP {status}" if status else type(exc).__name__
    return PublishError(f"{step} failed ({detail}: {str(exc).splitlines()[0] if str(exc) else ''})"
                        + (f"; {hint}" if hint else ""))


def push(plan: Plan, api, retry: Retry | None = None) -> dict:
    """Create the repo if needed, refuse an existing tag, upload everything in one commit, tag it."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    retry = retry or Retry()
    step = "create the repo"
    try:
        retry.call(step, api.create_repo, plan.repo, repo_type=REPO_TYPE, exist_ok=True, private=plan.private)
        step = "list the repo's refs"
        refs = retry.call(step, api.list_repo_refs, plan.repo, repo_type=REPO_TYPE)
        if any(t.name == plan.tag for t in refs.tags):
            raise PublishError(f"{plan.repo} already has the tag {plan.tag}: a published version is never "
                               "overwritten; publish this folder as a new version")
        head = branch_head(refs)
        step = "list the repo's files"
        existing = retry.call(step, api.list_repo_files, plan.repo, repo_type=REPO_TYPE, revision=BRANCH) \
            if head else []
        stale = unlisted_shards(existing, plan.files)
        operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(plan.folder / rel)) for rel in plan.files]
        operations += [CommitOperationDelete(path_in_repo=rel) for rel in stale]
        step = "upload the commit"
        try:
            commit = retry.call(step, api.create_commit, plan.repo, operations, commit_message=plan.message,
                                commit_description=plan.description, repo_type=REPO_TYPE, revision=BRANCH,
                                parent_commit=head)
            oid, url = commit.oid, getattr(commit, "commit_url", None)
        except Exception as exc:
            # 412: main moved since `head`. Either someone else pushed (refuse), or a retried request whose first
            # attempt landed without its answer reaching us: then main already holds exactly this release.
            oid = landed_release(api, plan, retry) if http_status(exc) == 412 else None
            if oid is None:
                raise
            url = None
        step = f"create the tag {plan.tag}"
        try:
            retry.call(step, api.create_tag, plan.repo, tag=plan.tag, tag_message=plan.tag_message,
                       revision=oid, repo_type=REPO_TYPE)
        except Exception as exc:
            if http_status(exc) != 409:
                raise
            # A retried request whose first attempt landed, or someone else's tag: only the first is success.
            refs = retry.call("list the repo's refs", api.list_repo_refs, plan.repo, repo_type=REPO_TYPE)
            if not any(t.name == plan.tag and t.target_commit == oid for t in refs.tags):
                raise PublishError(f"the commit {oid} is on {BRANCH} but the tag {plan.tag} was created "
                                   "by someone else meanwhile; check the repo and publish a new version") from exc
    except PublishError:
        raise
    except Exception as exc:
        raise _explain(exc, plan, step) from exc
    return {"repo": plan.repo, "commit": oid, "commit_url": url,
            "tag": plan.tag, "files": len(plan.files), "deleted": stale}


def landed_release(api, plan: Plan, retry: Retry) -> str | None:
    """The head of main if its files are exactly this release (every file byte-identical, no other shard), else None."""
    import hashlib

    refs = retry.call("list the repo's refs", api.list_repo_refs, plan.repo, repo_type=REPO_TYPE)
    head = branch_head(refs)
    if head is None:
        return None
    entries = retry.call("list the repo's files", api.list_repo_tree, plan.repo, repo_type=REPO_TYPE,
                         revision=head, recursive=True)
    remote = {e.path: e for e in entries if hasattr(e, "blob_id")}  # files, not folders
    if unlisted_shards(remote, plan.files):
        return None
    for rel in plan.files:
        entry, data = remote.get(rel), (plan.folder / rel).read_bytes()
        if entry is None:
            return None
        lfs = getattr(entry, "lfs", None)
        if lfs is not None:  # large files: the Hub keeps their sha256
            same = lfs.sha256 == hashlib.sha256(data).hexdigest()
        else:  # regular files: a git blob id
            same = entry.blob_id == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        if not same:
            return None
    return head


# ------------------------------------------------------------------------------------------- versioning


def previous_release(spec: str | None, repo: str, version: str, api) -> tuple[str, Path] | None:
    """The release this one follows, as (its version, a folder holding it): `--previous FOLDER@vX.Y.Z` or
    `ORG/NAME@vX.Y.Z`, else (with an api) the repo's highest vX.Y.Z tag below `version`, downloaded; None when
    there is none (a first release; an existing tag `version` is refused by the push itself)."""
    if spec is not None:
        where, _, version = spec.rpartition("@")
        if not where or not VERSION.fullmatch(version):
            raise PublishError(f"--previous {spec!r}: expected FOLDER@vX.Y.Z (a local copy of that release) or "
                               "ORG/NAME@vX.Y.Z")
        if Path(where).expanduser().is_dir():
            return version, Path(where).expanduser()
        if not REPO_ID.fullmatch(where):
            raise PublishError(f"--previous {spec!r}: {where} is neither a folder nor a Hub repo id ORG/NAME")
        repo = where
    else:
        if api is None:
            return None
        from huggingface_hub.errors import RepositoryNotFoundError

        try:
            refs = api.list_repo_refs(repo, repo_type=REPO_TYPE)
        except RepositoryNotFoundError:  # created by this publish: a first release
            return None
        tags = [t.name for t in refs.tags
                if VERSION.fullmatch(t.name) and versions.parse(t.name) < versions.parse(version)]
        if not tags:
            return None
        version = max(tags, key=versions.parse)
    import huggingface_hub

    folder = huggingface_hub.snapshot_download(
        repo, repo_type=REPO_TYPE, revision=version,
        **({"endpoint": api.endpoint, "token": api.token} if api is not None else {}))
    return version, Path(folder)


def check_version(version: str, tasks: list[TaskRecord], manifest: dict, folder: Path,
                  previous: tuple[str, Path] | None) -> str:
    """Refuse a version smaller than the policy (VERSIONING.md) requires after the previous release; return the
    line that says what was compared."""
    if previous is None:
        return "no previous release to compare with (a first release, or a dry run without --previous)"
    before, path = previous
    try:
        old, old_manifest = load_tasks(str(path))
    except DatasetError as exc:
        raise PublishError(f"the previous release {before} ({path}) cannot be read: {exc}") from exc
    diff = versions.difference(old, old_manifest, tasks, manifest, versions.columns(path), versions.columns(folder))
    need = versions.required(before, diff)
    if not versions.allows(version, before, diff):
        raise PublishError(f"--version {version} is smaller than the policy requires after {before}: at least "
                           f"{need}, a {diff.level} change ({diff.reasons[0]}); see VERSIONING.md")
    return f"compared with {before}: a {diff.level} change, so at least {need}: " + "; ".join(diff.reasons)


def hub_api():
    """An HfApi with the standard token (HF_TOKEN, else the one `hf auth login` stored)."""
    import huggingface_hub
    from huggingface_hub.errors import OIDCError

    try:
        token = huggingface_hub.get_token()
    except OIDCError as exc:  # HF_OIDC_RESOURCE set outside a CI that can mint a token
        raise PublishError(f"the token exchange failed: {exc}") from exc
    if not token:
        raise PublishError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (write access needed)")
    return huggingface_hub.HfApi(token=token)


# ------------------------------------------------------------------------------------------------- CLI


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = Parser(
        prog="python -m builder publish",
        description=__doc__.split("\n\n", 1)[1].rsplit("\n\n", 1)[0],
        epilog="examples:\n" + __doc__.rsplit("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dir", required=True, help="the dataset folder to publish (built by python -m builder)")
    p.add_argument("--repo", required=True, help="Hub dataset repo, ORG/NAME")
    p.add_argument("--version", required=True,
                   help="the release tag, vX.Y.Z; an existing tag is refused, and so is a number smaller than the "
                        "versioning policy (VERSIONING.md) requires after the previous release")
    p.add_argument("--previous", metavar="RELEASE",
                   help="the release this one follows, FOLDER@vX.Y.Z or ORG/NAME@vX.Y.Z (default: the repo's "
                        "highest vX.Y.Z tag; a dry run compares only with this one)")
    p.add_argument("--dry-run", action="store_true",
                   help="validate, then print the exact files, commit message and tag; send nothing")
    p.add_argument("--private", action="store_true", help="create the repo private (when it does not exist yet)")
    p.add_argument("--workers", type=at_least_one, default=None, help="sandbox workers for the reference replay")
    p.add_argument("--timeout", type=positive_seconds, default=10.0, dest="timeout_s", help="seconds per test case (replay)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None, api=None, retry: Retry | None = None) -> int:
    a = parse_args(argv)
    try:
        check_names(a.repo, a.version)
        folder = Path(a.dir).expanduser()
        tasks, manifest = validate_folder(folder)
        if not a.dry_run and api is None:
            api = hub_api()  # no token: say so before the replay, not after it
        replay = replay_references(tasks, a.workers, a.timeout_s)  # a broken folder is refused before any network
        try:
            previous = previous_release(a.previous, a.repo, a.version, None if a.dry_run else api)
        except PublishError:
            raise
        except Exception as exc:  # the Hub: the repo's tags, or the previous release's files
            raise PublishError(f"could not read the previous release of {a.repo} to compare with ({exc}); give "
                               "--previous FOLDER@vX.Y.Z with a local copy of it") from exc
        compared = check_version(a.version, tasks, manifest, folder, previous)
        plan = make_plan(folder, a.repo, a.version, manifest, replay, a.private)
        print(f"validated {folder}: {replay}")
        print(compared)
        if a.dry_run:
            print("dry run: nothing is sent to the Hub. A publish would send:")
            print(plan.render())
            return 0
        result = push(plan, api, retry)
    except PublishError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"published {result['repo']} {result['tag']}: commit {result['commit']} ({result['files']} files"
          + (f", deleted {len(result['deleted'])} stale" if result["deleted"] else "") + ")")
    if result["commit_url"]:
        print(result["commit_url"])
    print(f"load it with load_dataset({result['repo']!r}, revision={result['tag']!r}) or "
          f"python -m evaluate --dataset {result['repo']} --revision {result['tag']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
