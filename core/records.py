"""The dataset format: the task record's Arrow schema, the manifest's content hash, and loading tasks.

The builder writes with `SCHEMA` and `content_hash`; evaluate and the leaderboard read with `load_tasks`, which
checks every shard against MANIFEST.json before trusting it, so a corrupt or edited shard is named, not scored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
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
    ("name", pa.string()),  # "original", "flipped", "redrawn-N" (fresh values), "probe-N" (added by mutation analysis)
    ("branch", pa.string()),  # "main", "then" or "else": the path this case executes
    ("constants", pa.string()),  # canonical JSON of the setup constants (COND)
    ("setup_code", pa.string()),
    ("assets", pa.list_(ASSET)),
    ("expected_result", pa.string()),  # canonical JSON
    ("expected_state", pa.string()),  # canonical JSON (null for scenarios without side effects)
    ("trace", pa.string()),  # canonical JSON {format, calls}: the reference's API calls here (scenarios.trace)
])

TRANSLATION = pa.struct([  # how each variant was accepted: rounds of negotiation and the evaluator's verdict
    ("natural_rounds", pa.int32()),
    ("natural_verdict", pa.string()),  # "OK" from the evaluator agent, "template" for the offline translator
    ("steps_rounds", pa.int32()),
    ("steps_verdict", pa.string()),
    ("vague_rounds", pa.int32()),
    ("vague_verdict", pa.string()),
])

MUTATION = pa.struct([  # the build's mutation analysis of the reference (builder/mutate.py)
    ("mutants", pa.int32()),  # mutants run against the task's test cases
    ("killed", pa.int32()),  # told apart from the reference by some test case
    ("equivalent", pa.int32()),  # same outputs and world state on every test case and every probe input
    ("score", pa.float64()),  # killed / mutants (an equivalent mutant counts as not killed)
    ("equivalents", pa.list_(pa.string())),  # each equivalent mutant: operator and changed line
])

WORLD_MUTANT = pa.struct([  # a world mutant a test of the task is scored by (scenarios.mutants.Mutant)
    ("kind", pa.string()),  # ignored, twice, status, field_dropped, field_altered, last_dropped, altered
    ("api", pa.string()),  # the operation it changes, as the task's traces name it
    ("field", pa.int32()),  # the field kinds' position in the sorted field names (0 or -1); null for the others
])

# Columns added since the first release, with the value an older shard's rows read as: a dataset built by an
# earlier version still loads (its schema is SCHEMA less these columns), so old releases stay scorable.
ADDED = {"levers": [], "api_doc_enriched": "", "world_mutants": []}

SCHEMA = pa.schema([
    ("task_id", pa.string()),
    ("scenario", pa.string()),
    ("instruction", pa.string()),  # the natural variant (default): as a developer asks, results named by what they are
    ("instruction_steps", pa.string()),  # numbered steps dictating every call, parameter and variable name
    ("instruction_vague", pa.string()),  # the intent and every value, without API or parameter names
    ("facts", pa.list_(pa.string())),  # what the oracle depends on, which every variant states (builder/facts.py)
    ("setup_code", pa.string()),
    ("api_doc", pa.string()),
    # api_doc with what a running instance showed that it does not state (a world derived from a service or an MCP
    # server; "" for a world written by hand): what `python -m evaluate --doc enriched` shows
    ("api_doc_enriched", pa.string()),
    ("reference_program", pa.string()),
    ("test_cases", pa.list_(TEST_CASE)),
    ("api_calls", pa.list_(pa.string())),
    ("num_api_calls", pa.int32()),
    ("path_depth", pa.int32()),
    ("binding_count", pa.int32()),
    ("has_branch", pa.bool_()),
    ("levers", pa.list_(pa.string())),  # what a frontier program must get right: lookups, loops, pagination, ...
    ("notes", pa.string()),  # why a flipped test case is missing, and similar facts about the row
    ("seed", pa.int64()),
    ("created_at", pa.string()),  # YYYY-MM-DD
    ("builder_version", pa.string()),
    ("translator", pa.string()),
    ("translation", TRANSLATION),
    ("mutation", MUTATION),
    # The world mutants its reference test kills (`evaluate.mutation_score`): what `--mode tests` scores a test by;
    # empty when the reference test kills fewer than 90% of the mutants that change its run (no tests-mode task)
    ("world_mutants", pa.list_(WORLD_MUTANT)),
])


@dataclass
class TestCase:
    """One test input of a task: its setup values and, once captured, the reference's outputs on it."""

    __test__ = False  # a record type, not a pytest class

    name: str
    branch: str
    constants: str  # canonical JSON
    setup_code: str
    assets: list[dict]  # {name, kind, meta, data}
    expected_result: str | None = None  # canonical JSON
    expected_state: str | None = None  # canonical JSON, None for scenarios without side effects
    trace: str | None = None  # canonical JSON: the reference's API calls on this input (scenarios.trace.stored)

    def to_row(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class TaskRecord:
    """One dataset row: the contract between the builder, evaluate, the leaderboard and users (see SCHEMA)."""

    task_id: str
    scenario: str
    instruction: str
    instruction_steps: str
    instruction_vague: str
    facts: list[str]
    setup_code: str
    api_doc: str
    reference_program: str
    test_cases: list[TestCase]
    api_calls: list[str]
    num_api_calls: int
    path_depth: int
    binding_count: int
    has_branch: bool
    levers: list[str]
    notes: str
    seed: int
    created_at: str
    builder_version: str
    translator: str
    translation: dict
    mutation: dict = field(default_factory=dict)
    api_doc_enriched: str = ""
    world_mutants: list[dict] = field(default_factory=list)  # {kind, api, field}: `scenarios.mutants.Mutant`

    def to_row(self) -> dict:
        row = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        row["test_cases"] = [c.to_row() for c in self.test_cases]
        return row

    @classmethod
    def from_row(cls, row: dict) -> "TaskRecord":
        """A row as `pyarrow` reads it from a shard of this version's schema (`load_tasks` checks it first)."""
        values = {f.name: row[f.name] if f.name in row else ADDED[f.name] for f in dataclasses.fields(cls)}
        values["test_cases"] = [TestCase(**c) for c in row["test_cases"]]
        return cls(**values)


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


SHARD = re.compile(rf"{DATA_DIR}/(?P<split>.+)-\d{{5}}-of-\d{{5}}(?:-[0-9a-f]+)?\.parquet")


def load_tasks(dataset: str, revision: str | None = None,
               scenarios: list[str] | None = None) -> tuple[list[TaskRecord], dict]:
    """The tasks (`TaskRecord`s) plus the dataset's manifest.

    `dataset` is a local folder or a Hub repo id, downloaded at `revision`. The shards are checked against the
    manifest and then read directly, so what is scored is exactly what was hashed: no cache in between can serve
    another build's rows. (Users load the same folder with `datasets.load_dataset`; the builder's tests check it.)
    """
    import pyarrow.parquet as pq

    folder = Path(dataset).expanduser()
    if not folder.exists():
        if not _looks_like_repo_id(dataset):
            raise DatasetError(
                f"no dataset folder {dataset!r}. Build one with `python -m builder --out {dataset}`, "
                "or pass a Hub repo id such as ORG/stateeval with --revision."
            )
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(dataset, repo_type="dataset", revision=revision))
    manifest = verify_folder(folder)
    from scenarios.rest.registration import register_folder

    register_folder(folder)  # the scenarios of the service files its tasks were built from
    shards: dict[str, list[str]] = {}
    for rel in sorted(manifest["files"]):
        m = SHARD.fullmatch(rel)
        if not m:
            raise DatasetError(f"{rel} in {MANIFEST} is not a shard name this version reads; rebuild the dataset")
        shards.setdefault(m["split"], []).append(rel)
    wanted = scenarios or list(shards)
    unknown = [s for s in wanted if s not in shards]
    if unknown:
        raise DatasetError(f"the dataset has no split(s) {unknown}; it has {list(shards)}")
    tasks = []
    for rel in (rel for split in wanted for rel in shards[split]):
        if not known_schema(pq.read_schema(folder / rel)):
            raise DatasetError(f"{rel} does not have this version's task schema; rebuild the dataset with it")
    for split in wanted:
        rows = [row for rel in shards[split] for row in pq.read_table(folder / rel).to_pylist()]
        expected = manifest.get("counts", {}).get(split)
        if expected is not None and len(rows) != expected:
            raise DatasetError(f"the {split} split has {len(rows)} rows but {MANIFEST} says {expected}; rebuild it")
        tasks.extend(TaskRecord.from_row(row) for row in rows)
    return tasks, manifest


def known_schema(schema: pa.Schema) -> bool:
    """This version's schema, or an earlier one: this one less some columns added since (`ADDED`)."""
    if schema.equals(SCHEMA, check_metadata=False):
        return True
    missing = [f.name for f in SCHEMA if f.name not in schema.names]
    older = pa.schema([f for f in SCHEMA if f.name not in missing])
    return set(missing) <= set(ADDED) and schema.equals(older, check_metadata=False)


def _looks_like_repo_id(name: str) -> bool:
    """ORG/NAME with no path syntax: anything else that does not exist is a missing folder, not a Hub repo."""
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "~")) and "\\" not in name


def created_after(tasks: list[TaskRecord], since: str) -> list[TaskRecord]:
    """Tasks whose `created_at` is after `since` (YYYY-MM-DD): a fresh split's window, for models whose training
    data may include every task published up to that date."""
    import datetime as _dt

    try:
        since = _dt.date.fromisoformat(since).isoformat()
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"--since {since!r} is not a date YYYY-MM-DD") from exc
    kept = [t for t in tasks if (t.created_at or "") > since]
    if not kept:
        dates = sorted({t.created_at or "?" for t in tasks})
        raise DatasetError(f"no task was created after {since} (the dataset's dates: {', '.join(dates) or 'none'})")
    return kept


def sample_lines(path: str | Path):
    """Yield (line number, task_id, code) for each `{"task_id": ..., "code": ...}` line of a samples file.

    One reader for `evaluate --samples` and leaderboard submissions, so both accept exactly the same files.
    """
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"samples file {path} not found; pass a JSONL file with one {{task_id, code}} per line")
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            task_id, code = row["task_id"], row["code"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DatasetError(f"{path}:{n}: expected a JSON object with task_id and code ({exc})") from exc
        yield n, task_id, code


# The documentation a model may be shown: the task's `api_doc` (spec, the default) or `api_doc_enriched`.
DOCS = ("spec", "enriched")


def results_name(variant: str, mode: str = "code", doc: str = "spec") -> str:
    """What `python -m evaluate` calls a run's report for an instruction variant, evaluation mode and documentation
    (natural instructions in the default code mode on the spec: results.json; else results_vague.json,
    results_tools.json, results_steps_explore.json, results_enriched.json, ...)."""
    return f"results{run_suffix(variant, mode, doc)}.json"


def run_suffix(variant: str, mode: str = "code", doc: str = "spec") -> str:
    """What tells apart the files of runs with another variant, mode or documentation in one run folder ('' for
    the default)."""
    return ("" if variant == "natural" else f"_{variant}") + ("" if mode == "code" else f"_{mode}") \
        + ("" if doc == "spec" else f"_{doc}")


def with_doc(tasks: list[TaskRecord], doc: str) -> list[TaskRecord]:
    """The tasks as a model is shown them with `doc` (DOCS): for "enriched", each task's `api_doc` is its
    `api_doc_enriched`; DatasetError when a task has none (a world written by hand, or an older build)."""
    if doc == "spec":
        return tasks
    if doc not in DOCS:
        raise DatasetError(f"--doc {doc!r}: choose one of {', '.join(DOCS)}")
    bare = sorted({t.scenario for t in tasks if not t.api_doc_enriched})
    if bare:
        raise DatasetError(f"--doc enriched: the {', '.join(bare)} tasks have no enriched documentation (only a world "
                           "derived from a service or an MCP server has one, built by this version); pick the "
                           "scenarios that have it with --scenario, or use --doc spec")
    return [dataclasses.replace(t, api_doc=t.api_doc_enriched) for t in tasks]
