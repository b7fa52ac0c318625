"""Where an unfinished build keeps its finished shards, and the checkpoint that lets a later run resume it.

A build writes each shard as soon as it is complete into `.<out>.partial/` beside `--out`, then rewrites
`.checkpoint.json` there (atomically: a new file renamed over the old) with what a resumed run needs: a hash of
the settings that decide the dataset's bytes, each scenario's finished shards (sha256 and rows), the program it
goes on from, and every running tally of the build report and the card (`builder.pipeline.Run.state`). A build
killed at any moment (Ctrl-C, SIGKILL, a full disk) leaves that folder usable: the same command again checks the
finished shards, drops whatever was half-written after the last checkpoint, and continues from there, so the
result is byte-identical to an uninterrupted build. The finished dataset is renamed to `--out` in one step.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from builder import __version__
from builder.config import BuildConfig
from core.records import DATA_DIR, DatasetError, file_sha256
from core.errors import writing

CHECKPOINT = ".checkpoint.json"  # hidden: a copy left in a finished folder is never published
NOT_CONTENT = ("out", "workers", "concurrency", "executor", "ray_address")  # settings that change how a build runs, never what it writes


def partial_folder(out: Path) -> Path:
    out = Path(out)
    return out.with_name(f".{out.name}.partial")


@contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """Held for a whole build: two builds of one --out at once would share its unfinished build's folder, so the
    second is refused (a lock file beside --out, removed when the build ends). A folder where nothing can be
    written (read-only, a file in the way) is refused here, in one line (`CannotWrite`), before any work."""
    out = Path(out)
    lock = out.with_name(f".{out.name}.lock")
    with writing(out):
        lock.parent.mkdir(parents=True, exist_ok=True)
        f = open(lock, "w")
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DatasetError(f"another build is writing --out {out} now; wait for it to end or choose another "
                               "--out") from None
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)  # still locked: whoever opens the name now makes a new file


def settings(config: BuildConfig) -> dict:
    """The settings that decide the dataset's bytes (with the builder's version): a resumed build must match them."""
    kept = {k: v for k, v in config.to_dict().items() if k not in NOT_CONTENT}
    return {**kept, "builder_version": __version__}


def settings_hash(config: BuildConfig) -> str:
    return hashlib.sha256(json.dumps(settings(config), sort_keys=True).encode()).hexdigest()


class Checkpoint:
    """The unfinished build of one `--out`: its folder and its saved state (`state`, plain JSON; empty when new)."""

    def __init__(self, folder: Path, config: BuildConfig, state: dict):
        self.folder = folder
        self.settings = settings(config)
        self.hash = settings_hash(config)
        self.state = state
        self.resumed = bool(state)  # a run that goes on from finished shards

    @classmethod
    def open(cls, config: BuildConfig, overwrite: bool = False) -> "Checkpoint":
        """Resume the unfinished build of `config.out` if it has the same settings; start one otherwise. Refused:
        finished shards of other settings, unless `overwrite` (which discards them, as it does shards of the same
        settings)."""
        folder = partial_folder(Path(config.out))
        saved = _load(folder / CHECKPOINT)
        if saved and finished_shards(saved) and not overwrite:
            if config.dated_today:  # no --created-at: the date the unfinished build started under, not today's
                config.created_at = saved["settings"].get("created_at", config.created_at)
            if saved["hash"] != settings_hash(config):
                raise DatasetError(_other_settings(config, saved))
            checkpoint = cls(folder, config, saved["state"])
            checkpoint._check_shards()
            return checkpoint
        checkpoint = cls(folder, config, {})
        with writing(config.out):
            shutil.rmtree(folder, ignore_errors=True)
            try:
                (folder / DATA_DIR).mkdir(parents=True)
                checkpoint.save({})
            except OSError:
                checkpoint.abandon()  # nothing finished: nothing is left behind
                raise
        return checkpoint

    def save(self, state: dict) -> None:
        """Record `state` (every shard it lists written already) in one atomic rename."""
        self.state = state
        tmp = self.folder / f"{CHECKPOINT}.tmp"
        # insertion order kept (no sort_keys): the card lists scenarios in the order their tallies were made
        tmp.write_text(json.dumps({"hash": self.hash, "settings": self.settings, "state": state}))
        os.replace(tmp, self.folder / CHECKPOINT)

    def abandon(self) -> None:
        """After an interrupted or failed run: keep the folder if a shard is finished (a re-run resumes), else
        remove it, so a build that wrote nothing leaves nothing behind."""
        if not finished_shards({"state": self.state}):
            shutil.rmtree(self.folder, ignore_errors=True)

    def _check_shards(self) -> None:
        """Every shard the checkpoint lists must be there and whole; anything else in the folder (a shard
        half-written or written after the last checkpoint) goes."""
        from builder.dataset import shard_name

        listed = set()
        for scenario, progress in self.state["scenarios"].items():
            total = len(progress["shards"]) if progress["done"] else None
            for k, shard in enumerate(progress["shards"]):
                names = {shard_name(scenario, k, shard["sha256"]), shard_name(scenario, k, shard["sha256"], total)}
                path = next((self.folder / n for n in names if (self.folder / n).exists()), None)
                if path is None or file_sha256(path) != shard["sha256"]:
                    raise DatasetError(f"{self.folder} lacks finished shard {k} of {scenario} or it was changed; "
                                       "add --overwrite to start the build afresh")
                listed.add(path)
        for path in self.folder.rglob("*"):
            if path.is_file() and path not in listed and path.name != CHECKPOINT:
                path.unlink()


def finished_shards(saved: dict) -> int:
    return sum(len(p["shards"]) for p in saved.get("state", {}).get("scenarios", {}).values())


def describe(out: Path) -> str | None:
    """A clause on what an interrupted build of `out` kept for a re-run, or None if it kept nothing."""
    folder = partial_folder(Path(out))
    saved = _load(folder / CHECKPOINT)
    shards = finished_shards(saved) if saved else 0
    if not shards:
        return None
    rows = sum(s["rows"] for p in saved["state"]["scenarios"].values() for s in p["shards"])
    return f"{shards} finished shard(s) ({rows} tasks) are kept in {folder}: re-run the same command to resume"


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _other_settings(config: BuildConfig, saved: dict) -> str:
    mine, theirs = settings(config), saved.get("settings", {})
    differ = [k for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
    shown = "; ".join(f"{k} {json.dumps(theirs.get(k))} there, {json.dumps(mine.get(k))} here" for k in differ[:3])
    return (f"--out {config.out} has an unfinished build with other settings ({shown or 'another version'}); run "
            f"its command again to finish it, or add --overwrite to discard its {finished_shards(saved)} finished "
            "shard(s) and start afresh")
