"""Fixtures of the builder's tests: tensor programs fuzzed once per test session."""

from __future__ import annotations

import random

import pytest

from builder.fuzz import CoverageRecorder
from builder.program import generate_program
from scenarios import get_scenario


@pytest.fixture(scope="session")
def scenario():
    return get_scenario("tensor")


@pytest.fixture(scope="session")
def fuzzed(scenario):
    """200 tensor programs from seeds 0-199, fuzzed in turn with one coverage recorder (so the first N are what a
    run of N seeds gives)."""
    recorder = CoverageRecorder()
    return [generate_program(scenario, random.Random(seed), recorder) for seed in range(200)]
