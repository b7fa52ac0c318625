"""Small helpers every part shares: folder names from user-chosen names, backoff, recorded library versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.names import slug
from core.provenance import library_versions
from core.retry import backoff_s
from evaluate.run import EvalConfig, run_dir


@pytest.mark.parametrize("name, sep, expected", [
    ("Qwen/Qwen2.5-Coder-32B-Instruct", "--", "Qwen--Qwen2.5-Coder-32B-Instruct"),
    ("My model (v2)", "-", "My-model-v2"),
    ("..", "--", "model"),
    (".hidden", "-", "hidden"),
    ("", "-", "model"),
])
def test_a_slug_is_one_safe_path_component(name, sep, expected):
    assert slug(name, sep) == expected


def test_a_run_folder_never_climbs_out_of_the_results_root():
    assert run_dir(EvalConfig(model="..", revision="../..", out="results")) == Path("results/model/model")


def test_backoff_doubles_is_capped_and_jittered_downwards():
    assert [backoff_s(a, 1.0, jitter=lambda: 1.0) for a in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert backoff_s(3, 1.0, jitter=lambda: 0.0) == 2.0  # half of the full wait, at the least
    assert backoff_s(10, 2.0, cap_s=60.0, jitter=lambda: 1.0) == 60.0


def test_library_versions_name_python_and_every_distribution_asked_for():
    versions = library_versions("pytest", "no-such-distribution-stateeval")
    assert versions["python"].count(".") == 2
    assert versions["pytest"] == pytest.__version__ and versions["no-such-distribution-stateeval"] is None
