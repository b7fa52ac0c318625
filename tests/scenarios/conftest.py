"""Fixtures of the scenario tests: one warm sandbox for all of them, and a small build of a module's scenario."""

from __future__ import annotations

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from core.sandbox.harness import Sandbox
from tests.conftest import SMALL


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """Loopback calls (the session service's) must not go through a proxy from the environment (sandbox workers
    drop these too)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def sandbox():
    """Two workers, started once for every module here (their start-up is much of a small module's time)."""
    with Sandbox(2) as box:
        yield box


def small_build_of(tmp_path_factory, scenario: str) -> tuple[dict, list]:
    """(build report, tasks) of a 12-program build of one scenario, with a fixed seed and date."""
    from core.records import load_tasks

    out = tmp_path_factory.mktemp(scenario) / "stateeval"
    report = build(BuildConfig(out=str(out), **{**SMALL, "scenarios": [scenario]}))
    return report, load_tasks(str(out))[0]
