"""Shared fixtures: one small tensor dataset built once per test session (real pipeline, real sandbox)."""

from __future__ import annotations

import os
import signal
import tempfile

# A private `datasets` cache for the test session (set before `datasets` is imported anywhere), so tests never
# read rows another build left in the user's cache.
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="stateeval-hf-cache-")

import pytest  # noqa: E402

from builder.config import BuildConfig  # noqa: E402
from builder.pipeline import build  # noqa: E402

SMALL = dict(scenarios=["tensor"], n=12, seed=0, created_at="2026-01-01", workers=2)


@pytest.fixture(scope="session")
def small_build(tmp_path_factory):
    """(folder, build report) for a 12-program tensor build with a fixed date, so its bytes are reproducible."""
    out = tmp_path_factory.mktemp("ds") / "stateeval"
    report = build(BuildConfig(out=str(out), **SMALL))
    return out, report


@pytest.fixture(scope="session")
def small_dataset(small_build):
    return small_build[0]


@pytest.fixture(scope="session")
def small_tasks(small_dataset):
    from evaluate.data import load_tasks

    tasks, manifest = load_tasks(str(small_dataset))
    return tasks


def interruptible() -> None:
    """`preexec_fn` for a child that a test interrupts with SIGINT: a suite started in the background by a shell
    without job control (nohup, `&`, some CI runners) inherits SIGINT ignored, and so would the child; Python then
    never turns SIGINT into KeyboardInterrupt, and the Ctrl-C under test could not happen."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
