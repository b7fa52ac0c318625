"""The dataset format: the task record's Arrow schema, the manifest's content hash, and loading tasks.

The builder writes with `SCHEMA` and `content_hash`; evaluate and the leaderboard read with `load_tasks`, which
checks every shard against MANIFEST.json before trusting it, so a corrupt or edited shard is named, not scored.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa

MANIFEST = "MANIFEST.json"
DATA_DIR = "data"

ASSET = pa.struct([
    ("name", pa.string()),
    ("kind", pa.string()),
    ("meta", pa.string()),  # canonical JSON: dtype, shape, ...
    ("data", pa.binary()),
])

TEST_CASE = pa.struct([
    ("name", pa.string()),  # "original" or "flipped"
    ("branch", pa.string()),  # "main", "then" or "else": the path this case executes
    ("constants", pa.string()),  # canonical JSON of the setup constants (COND)
    ("setup_code", pa.string()),
    ("assets", pa.list_(ASSET)),
    ("expected_result", pa.string()),  # canonical JSON
    ("expected_state", pa.string()),  # canonical JSON (null for scenarios without side effects)
])

SCHEMA = pa.schema([
    ("task_id", pa.string()),
    ("scenario", pa.string()),
    ("instruction", pa.string()),
    ("setup_code", pa.string()),
    ("api_doc", pa.string()),
    ("reference_program", pa.string()),
    ("test_cases", pa.list_(TEST_CASE)),
    ("api_calls", pa.list_(pa.string())),
    ("num_api_calls", pa.int32()),
    ("path_depth", pa.int32()),
    ("binding_count", pa.int32()),
    ("has_branch", pa.bool_()),
    ("notes", pa.string()),  # why a flipped test case is missing, and similar facts about the row
    ("seed", pa.int64()),
    ("created_at", pa.string()),  # YYYY-MM-DD
    ("builder_version", pa.string()),
    ("translator", pa.string()),
])


class DatasetError(RuntimeError):
    """A dataset folder that cannot be used; the message names the problem and the fix."""


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_hash(files: dict[str, str]) -> str:
    """One hash for the dataset's content: over the sorted (relative path, sha256) of its data shards."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(f"{path}\0{files[path]}\n".encode())
    return h.hexdigest()


def read_manifest(folder: Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise DatasetError(
            f"{folder} has no {MANIFEST}: it is not a StateEval dataset folder. "
            f"Build one with `python -m builder --out {folder}` or pass the right --dataset."
        )
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} is not valid JSON ({exc}); rebuild or re-download the dataset") from exc


def verify_folder(folder: Path) -> dict:
    """Check every shard listed in the manifest exists and matches its hash; return the manifest."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    files = manifest.get("files", {})
    if not files:
        raise DatasetError(f"{folder / MANIFEST} lists no data files; rebuild the dataset")
    for rel, digest in files.items():
        path = folder / rel
        if not path.is_file():
            raise DatasetError(f"{path} is listed in {MANIFEST} but missing; rebuild or re-download the dataset")
        if file_sha256(path) != digest:
            raise DatasetError(
                f"{path} does not match its hash in {MANIFEST} (corrupt or edited); rebuild or re-download the dataset"
            )
    if content_hash(files) != manifest.get("content_hash"):
        raise DatasetError(f"{folder / MANIFEST} has a content_hash that does not match its files; rebuild it")
    return manifest


def load_tasks(dataset: str, revision: str | None = None, scenarios: list[str] | None = None) -> tuple[list[dict], dict]:
    """Tasks as plain dicts plus the dataset's manifest.

    `dataset` is a local folder (checked against its manifest, then read with `datasets.load_dataset`, the same
    loader users run) or a Hub repo id, downloaded at `revision`.
    """
    import datasets  # heavy: imported only when tasks are loaded

    folder = Path(dataset)
    if folder.exists():
        manifest = verify_folder(folder)
        source = str(folder)
    else:
        if "/" not in dataset:
            raise DatasetError(
                f"no dataset folder {dataset!r} here. Build one with `python -m builder --out {dataset}`, "
                "or pass a Hub repo id such as ORG/stateeval with --revision."
            )
        from huggingface_hub import snapshot_download

        local = snapshot_download(dataset, repo_type="dataset", revision=revision)
        manifest = verify_folder(Path(local))
        source = local
    ds = datasets.load_dataset(source)
    splits = list(ds)
    wanted = scenarios or splits
    unknown = [s for s in wanted if s not in splits]
    if unknown:
        raise DatasetError(f"the dataset has no split(s) {unknown}; it has {splits}")
    tasks = [row for split in wanted for row in ds[split]]
    return tasks, manifest
