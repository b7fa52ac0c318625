"""Fixtures of the scenario tests: a small build of a module's scenario (the warm sandbox is tests/conftest.py's)."""

from __future__ import annotations

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from tests.conftest import SMALL


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """Loopback calls (the session service's) must not go through a proxy from the environment (sandbox workers
    drop these too)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def small_build_of(tmp_path_factory, scenario: str) -> tuple[dict, list]:
    """(build report, tasks) of a 12-program build of one scenario, with a fixed seed and date."""
    from core.records import load_tasks

    out = tmp_path_factory.mktemp(scenario) / "stateeval"
    report = build(BuildConfig(out=str(out), **{**SMALL, "scenarios": [scenario]}))
    return report, load_tasks(str(out))[0]
