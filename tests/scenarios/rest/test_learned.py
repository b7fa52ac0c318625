"""The fields a service makes up, decided once by the build and read by every worker: kept beside a dataset's copy
of the service file, passed to the workers in STATEEVAL_LEARNED, and taken by a world instead of learning its own."""

from __future__ import annotations

import json
import os

import pytest

from scenarios.rest.learned import LEARNED, LEARNED_ENV, decide, made_up, shipped_fields
from scenarios.rest.servicefile import ServiceFileError, load
from scenarios.rest.world import RestWorld


def test_decided_fields_reach_the_environment_the_workers_inherit(monkeypatch):
    monkeypatch.delenv(LEARNED_ENV, raising=False)
    assert made_up("fake") is None
    decide("fake", ["b.c", "a"])
    decide("other", [])
    assert made_up("fake") == ("a", "b.c") and made_up("other") == ()
    assert json.loads(os.environ[LEARNED_ENV]) == {"fake": ["a", "b.c"], "other": []}


def test_a_datasets_file_of_learned_fields_is_read_and_a_broken_one_is_one_line(fake):
    file = load(fake)
    assert shipped_fields(file) is None
    where = fake.with_name(LEARNED.format(name="fake"))
    where.write_text(json.dumps({"learned": ["data.stamp"]}))
    assert shipped_fields(file) == ["data.stamp"]
    where.write_text(json.dumps({"learned": "data.stamp"}))
    with pytest.raises(ServiceFileError) as error:
        shipped_fields(file)
    assert "\n" not in str(error.value) and "fake.learned.json" in str(error.value)


def test_a_world_renames_the_fields_decided_for_its_service_and_learns_none(fake, monkeypatch):
    monkeypatch.setenv(LEARNED_ENV, json.dumps({"fake": ["body.colour"]}))
    world = RestWorld(load(fake))
    try:
        assert world.learned == ("body.colour",)
    finally:
        world.close()
    monkeypatch.delenv(LEARNED_ENV)
    world = RestWorld(load(fake))  # none decided: learned here (the fake service makes nothing up)
    try:
        assert world.learned == ()
    finally:
        world.close()
