"""The state machine of a service file's scenario, on a model given directly (no service): a program that comes to a
point where no operation's path parameter can be bound to a live resource is dropped, its reason counted."""

from __future__ import annotations

from collections import Counter

import builder.pipeline
from builder.config import BuildConfig
from builder.pipeline import Fuzzer
from scenarios.rest.machine import RestScenario
from scenarios.rest.model import Model
from scenarios.rest.openapi import read
from scenarios.rest.servicefile import load
from tests.scenarios.rest.conftest import write_service

ITEM = [{"name": "item", "in": "path", "required": True, "schema": {"type": "string"}}]
# One item, read and deleted: once it is deleted, no operation has a value for its parameter.
SPEC = {"openapi": "3.0.3", "info": {"title": "items", "version": "1"}, "paths": {"/items/{item}": {
    "get": {"parameters": ITEM, "responses": {"200": {"description": "the item"}}},
    "delete": {"parameters": ITEM, "responses": {"204": {"description": "deleted"}}}}}}


def test_a_program_with_no_value_left_to_bind_is_dropped_and_counted(tmp_path, monkeypatch):
    file = load(write_service(tmp_path, name="items", arrays={"population": [
        {"method": "GET", "path": "/items/{draw:hex:6}"}]}))
    scenario = RestScenario(file)
    scenario.__dict__["model"] = Model(file, read(SPEC))  # what a probe of such a service would find
    monkeypatch.setattr(builder.pipeline, "get_scenario", lambda name: scenario)
    rejections: Counter = Counter()
    config = BuildConfig(scenarios=["items"], n=10, seed=0, created_at="2026-01-01")
    drafts = Fuzzer("items").programs(config, 0, 10, rejections)
    assert rejections["items: fuzzer found no valid call"] >= 1
    assert len(drafts) + sum(rejections.values()) == 10, "every program is kept or counted under its reason"
    for draft in drafts:  # what was kept never acts on the item after deleting it
        code = draft.program.reference_code()
        assert "requests.delete" not in code or code.index("requests.delete") > code.rindex("requests.get")
