"""The state machine of a service's scenario (scenarios/rest/machine.py), on a small document and a model given by
hand (no service runs): if/else conditions on what the program can know before it runs (a listing's size, a write's
status code), a read of an item deleted earlier (its answer is the service's error, and the text says so), and the
sampler's preference for building on what the program made; and a program that comes to a point where no
operation's path parameter can be bound to a live resource is dropped, its reason counted."""

from __future__ import annotations

import random
from collections import Counter

import builder.pipeline
from builder.config import BuildConfig
from builder.pipeline import Fuzzer
from pathlib import Path

from scenarios.base import State, Var
from scenarios.rest.machine import (ANSWER, FIELDS, MAKE_PREFERENCE, STATUS, UNNAMED_AT_START, USE_PREFERENCE,
                                   RestScenario)
from scenarios.rest.model import Model
from scenarios.rest.openapi import read
from scenarios.rest.servicefile import ServiceFile, load
from tests.scenarios.rest.conftest import write_service

ITEM = {"name": "shelf_id", "in": "path", "required": True, "schema": {"type": "string"}}
BODY = {"content": {"application/json": {"schema": {"type": "object", "properties": {
    "name": {"type": "string"}, "colour": {"type": "string"}}}}}}
DOCUMENT = {
    "openapi": "3.0.0",
    "paths": {
        "/shelves": {"get": {"operationId": "list_shelves", "summary": "List the shelves"},
                     "post": {"operationId": "create_shelf", "summary": "Create a shelf", "requestBody": BODY}},
        "/shelves/{shelf_id}": {
            "parameters": [ITEM],
            "get": {"operationId": "get_shelf", "summary": "One shelf"},
            "patch": {"operationId": "rename_shelf", "summary": "Rename a shelf", "requestBody": BODY},
            "delete": {"operationId": "delete_shelf", "summary": "Delete a shelf"},
        },
    },
}
SHELF = "/shelves/{}"


def scenario(statuses: dict | None = None) -> RestScenario:
    file = ServiceFile(path=Path("shelves.toml"), name="shelves", openapi="/openapi.json", start=("serve",),
                       ready="/ready", reset="restart")
    rest = RestScenario(file)
    rest.__dict__["model"] = Model(file, read(DOCUMENT), id_fields={"create_shelf": ["id"]},
                                   body_keys={"create_shelf": None, "rename_shelf": None}, listings={"list_shelves": []},
                                   statuses={"rename_shelf": 200, "delete_shelf": 204} if statuses is None else statuses)
    return rest


def populated() -> State:
    state = State()
    state.declare(Var(state.fresh("shelf"), SHELF, {"parents": [], "value": "oak"}))
    state.extra[FIELDS] = {"shelf1": [("name",), ("colour",)]}  # what the population's body set
    return state


def call(rest: RestScenario, state: State, name: str, *inputs: str):
    api = next(a for a in rest.apis if a.name == name)
    assert tuple(inputs) in api.bindings(state), f"{name}{inputs} is not callable"
    return api, api.apply(state, tuple(inputs), random.Random(0))


def test_a_listing_is_tested_on_how_many_items_the_population_and_the_calls_left():
    rest, state = scenario(), populated()
    call(rest, state, "create_shelf")
    call(rest, state, "create_shelf")
    call(rest, state, "get_shelf", "shelf2")  # (deleting what no call has seen would make its creation dead)
    call(rest, state, "delete_shelf", "shelf2")
    _, listing = call(rest, state, "list_shelves")
    (answer,) = listing.outputs
    assert state.vars[answer].value["items"] == 2  # the population's shelf and the second one made
    for seed in range(6):
        cond = rest.condition(state, state.vars[answer], random.Random(seed))
        assert cond.left == f"len({answer})"
        assert cond.holds(2, cond.value) and not cond.holds(2, cond.flipped)
        assert cond.phrase.startswith(f"`{answer}` lists") and cond.phrase.endswith("(the answer is the list)")


def test_a_listing_whose_size_another_listing_shares_is_no_condition():
    rest, state = scenario(), populated()
    call(rest, state, "list_shelves")  # one shelf
    call(rest, state, "create_shelf")
    call(rest, state, "get_shelf", "shelf2")
    call(rest, state, "delete_shelf", "shelf1")
    _, second = call(rest, state, "list_shelves")  # one shelf again
    assert rest.condition(state, state.vars[second.outputs[0]], random.Random(0)) is None


def test_a_write_is_tested_on_the_status_code_the_probe_saw_and_only_then():
    rest, state = scenario(), populated()
    _, rename = call(rest, state, "rename_shelf", "shelf1")
    (status,) = rename.outputs
    assert state.vars[status].type == STATUS
    cond = rest.condition(state, state.vars[status], random.Random(0))
    assert (cond.left, cond.op, cond.value, cond.flipped) == (status, "==", 200, 404)

    rest, state = scenario(statuses={}), populated()
    _, rename = call(rest, state, "rename_shelf", "shelf1")
    assert rest.condition(state, state.vars[rename.outputs[0]], random.Random(0)) is None, "a status never seen"


def test_an_item_deleted_earlier_may_be_read_once_and_the_text_says_it_was_deleted():
    rest, state = scenario(), populated()
    reader = next(a for a in rest.apis if a.name == "get_shelf")
    call(rest, state, "delete_shelf", "shelf1")
    assert ("shelf1",) in reader.bindings(state)
    assert ("shelf1",) not in next(a for a in rest.apis if a.name == "rename_shelf").bindings(state)
    api, read_it = call(rest, state, "get_shelf", "shelf1")
    assert read_it.args["gone"] and state.vars[read_it.outputs[0]].type == ANSWER
    text = api.natural[0].format(**api.describe(read_it))
    assert "`shelf1` names an item deleted earlier" in text and "error" in text
    assert ("shelf1",) not in reader.bindings(state), "a second read would answer the same"
    # a live item's read says nothing of the kind
    rest, state = scenario(), populated()
    api, read_it = call(rest, state, "get_shelf", "shelf1")
    assert "deleted" not in api.natural[0].format(**api.describe(read_it))


def test_the_text_says_which_resources_the_service_holds_and_that_a_new_one_is_kept_as_its_id():
    rest, state = scenario(), populated()
    state.extra["population"] = ["shelf1"]
    assert rest.describe_init(state).endswith("The service already holds `shelf1` (a shelf).")
    state.extra[UNNAMED_AT_START] = [["/shelves/{}/books/{}", ["shelf1"]]] * 2  # a population request named = false
    assert rest.describe_init(state).endswith(
        "The service already holds `shelf1` (a shelf) and 2 books in `shelf1` that the setup does not name.")
    creator = next(a for a in rest.apis if a.name == "create_shelf")
    assert creator.noun == "id of the {nth}new shelf"


def test_the_sampler_prefers_what_the_program_made_and_has_not_used():
    rest, state = scenario(), populated()
    apis = {a.name: a for a in rest.apis}
    assert rest.preference(state, apis["get_shelf"], ("shelf1",), 2) == 1.0  # the population's
    assert rest.preference(state, apis["create_shelf"], (), 2) == MAKE_PREFERENCE
    assert rest.preference(state, apis["create_shelf"], (), 0) == 1.0, "the path's last call: no call could use it"
    _, made = call(rest, state, "create_shelf")
    (shelf,) = made.outputs
    assert rest.preference(state, apis["get_shelf"], (shelf,), 0) == USE_PREFERENCE > MAKE_PREFERENCE
    call(rest, state, "get_shelf", shelf)
    assert rest.preference(state, apis["rename_shelf"], (shelf,), 2) == 1.0, "used once: no longer preferred"


def test_a_services_paths_have_two_calls_more_than_calls(monkeypatch):
    """A resource costs a call before a call can use it: the build draws `--calls` + `make_calls` calls on every
    path of a service's program, and a path shorter than that makes no task."""
    rest = scenario()
    assert rest.make_calls == 2
    monkeypatch.setattr(builder.pipeline, "get_scenario", lambda name: rest)
    config = BuildConfig(calls_per_path=4, created_at="2026-01-01")
    rejections: Counter = Counter()
    drafts = Fuzzer("shelves").programs(config, 0, 6, rejections)
    assert drafts, rejections
    for draft in drafts:
        assert {len(path) for path in draft.program.paths()} == {6}
        assert draft.program.unfit(config) is None
        assert draft.program.unfit(BuildConfig(calls_per_path=5, created_at="2026-01-01")) == "too few API calls"


ONE_ITEM = [{"name": "item", "in": "path", "required": True, "schema": {"type": "string"}}]
# One item, read and deleted: once it is deleted and read once more, no operation has a value for its parameter.
ITEMS_SPEC = {"openapi": "3.0.3", "info": {"title": "items", "version": "1"}, "paths": {"/items/{item}": {
    "get": {"parameters": ONE_ITEM, "responses": {"200": {"description": "the item"}}},
    "delete": {"parameters": ONE_ITEM, "responses": {"204": {"description": "deleted"}}}}}}


def test_a_program_with_no_value_left_to_bind_is_dropped_and_counted(tmp_path, monkeypatch):
    file = load(write_service(tmp_path, name="items", arrays={"population": [
        {"method": "GET", "path": "/items/{draw:hex:6}"}]}))
    scenario = RestScenario(file)
    scenario.__dict__["model"] = Model(file, read(ITEMS_SPEC))  # what a probe of such a service would find
    monkeypatch.setattr(builder.pipeline, "get_scenario", lambda name: scenario)
    rejections: Counter = Counter()
    config = BuildConfig(scenarios=["items"], n=10, seed=0, created_at="2026-01-01")
    drafts = Fuzzer("items").programs(config, 0, 10, rejections)
    assert rejections["items: fuzzer found no valid call"] >= 1
    assert len(drafts) + sum(rejections.values()) == 10, "every program is kept or counted under its reason"
    for draft in drafts:  # after the delete, the item is read once at most, and the text says it was deleted
        code = draft.program.reference_code()
        if "requests.delete" in code:
            assert code[code.index("requests.delete"):].count("requests.get") <= 1
            assert code.count("requests.delete") == 1
