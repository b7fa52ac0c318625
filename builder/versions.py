"""The dataset's versioning policy (VERSIONING.md), as `python -m builder publish` applies it.

A release `vMAJOR.MINOR.PATCH` is compared with the previous one, task id by task id (a task id names the same task
only under the same seed):

* **major**: a task of the previous release changed what a model is asked or how it is judged (its instruction
  variants, facts, API documentation, setup code, reference program or test cases), or is gone; or the seed
  differs, so every id names another task.
* **minor**: every previous task is unchanged in those, but tasks were added, a column was added, or another
  field changed value (the mutation summary, the notes, the complexity counts, ...).
* **patch**: no row changed but its provenance (`created_at`, `builder_version`, `translator`): the card, the
  build report, documentation.

`required` gives the smallest version the difference allows; publish refuses a smaller one.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from core.records import DATA_DIR, TaskRecord

MAJOR, MINOR, PATCH = "major", "minor", "patch"
LEVELS = (PATCH, MINOR, MAJOR)
# What a model is asked and how it is judged: a change to any of these for an existing task is a new major version.
ASKED = ("instruction", "instruction_steps", "instruction_vague", "facts", "api_doc", "api_doc_enriched", "setup_code")
JUDGED = ("reference_program", "test_cases", "world_mutants")
PROVENANCE = ("created_at", "builder_version", "translator")  # changes no task
SHOWN = 3  # task ids named per reason
VERSION = re.compile(r"v(\d+)\.(\d+)\.(\d+)")


def parse(version: str) -> tuple[int, int, int]:
    m = VERSION.fullmatch(version)
    if not m:
        raise ValueError(f"{version!r} is not vX.Y.Z")
    return int(m[1]), int(m[2]), int(m[3])


def bumped(previous: str, level: str) -> str:
    """The smallest version after `previous` that a change of `level` allows."""
    major, minor, patch = parse(previous)
    if level == MAJOR:
        return f"v{major + 1}.0.0"
    if level == MINOR:
        return f"v{major}.{minor + 1}.0"
    return f"v{major}.{minor}.{patch + 1}"


@dataclass
class Difference:
    """How a build differs from the previous release: the level the policy requires, and why."""

    level: str = PATCH
    reasons: list[str] = field(default_factory=list)

    def add(self, level: str, reason: str) -> None:
        if LEVELS.index(level) > LEVELS.index(self.level):
            self.level = level
        self.reasons.append(f"{level}: {reason}")


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:SHOWN]) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def columns(folder: Path) -> set[str]:
    """The columns a dataset folder's shards hold."""
    import pyarrow.parquet as pq

    shards = sorted((Path(folder) / DATA_DIR).glob("*.parquet"))
    return set(pq.read_schema(shards[0]).names) if shards else set()


def difference(old: list[TaskRecord], old_manifest: dict, new: list[TaskRecord], new_manifest: dict,
               old_columns: set[str], new_columns: set[str]) -> Difference:
    """What changed from the previous release (`old`) to this build (`new`), by the policy's levels."""
    diff = Difference()
    if old_manifest.get("seed") != new_manifest.get("seed"):
        diff.add(MAJOR, f"another seed ({old_manifest.get('seed')} before, {new_manifest.get('seed')} now): every "
                        "task id names another task")
        return diff
    before, after = {t.task_id: t for t in old}, {t.task_id: t for t in new}
    gone = sorted(set(before) - set(after))
    if gone:
        diff.add(MAJOR, f"{len(gone)} task(s) removed ({_ids(gone)})")
    compared = [tid for tid in sorted(before) if tid in after]
    other = [f.name for f in dataclasses.fields(TaskRecord)
             if f.name not in ASKED + JUDGED + PROVENANCE + ("task_id",)]
    for fields, level, what in ((ASKED, MAJOR, "what the model is asked"), (JUDGED, MAJOR, "how it is judged"),
                                (other, MINOR, "other fields")):
        for name in fields:
            if name in new_columns - old_columns:
                continue  # a column the previous release lacks: its rows read the empty value; counted as added
            changed = [tid for tid in compared if getattr(before[tid], name) != getattr(after[tid], name)]
            if changed:
                diff.add(level, f"{what}: `{name}` changed in {len(changed)} task(s) ({_ids(changed)})")
    added = sorted(set(after) - set(before))
    if added:
        diff.add(MINOR, f"{len(added)} task(s) added ({_ids(added)})")
    new_cols = sorted(new_columns - old_columns)
    if new_cols:
        diff.add(MINOR, f"column(s) added: {', '.join(new_cols)}")
    if diff.level == PATCH:
        diff.reasons.append(f"{PATCH}: no row changed but its provenance")
    return diff


def required(previous: str, diff: Difference) -> str:
    return bumped(previous, diff.level)


def allows(version: str, previous: str, diff: Difference) -> bool:
    """Whether `version` is at least what the difference from `previous` requires."""
    return parse(version) >= parse(required(previous, diff))
