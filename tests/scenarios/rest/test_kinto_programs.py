"""The state machine on Kinto (scenarios/rest/services/kinto.toml): the programs it generates tell apart what a
confused program would do. A PUT and a PATCH it sends leave different final states, an id `take_id` takes is no
other variable's, no two items of RESULT are equal, and a listing under a resource is no read of it.

Needs the rest extra, as tests/scenarios/rest/test_kinto.py does.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
from pathlib import Path

import pytest
import requests

from builder.fuzz import CoverageRecorder
from builder.program import generate_program
from scenarios.rest.machine import RestScenario
from scenarios.rest.model import ASSET
from scenarios.rest.servicefile import load

if importlib.util.find_spec("kinto") is None and not os.environ.get("STATEEVAL_REQUIRE_REST"):
    pytest.skip("needs the rest extra: pip install -e '.[rest]'", allow_module_level=True)

KINTO = Path(__file__).resolve().parents[3] / "scenarios" / "rest" / "services" / "kinto.toml"
PROGRAMS = 40


@pytest.fixture(scope="module")
def scenario():
    return RestScenario(load(KINTO))


@pytest.fixture(scope="module")
def programs(scenario):
    recorder = CoverageRecorder()
    return [generate_program(scenario, random.Random(i), recorder) for i in range(PROGRAMS)]


@pytest.fixture(scope="module")
def world():
    from scenarios.rest.world import RestWorld

    world = RestWorld(load(KINTO))
    yield world
    world.close()


def run(world, scenario, program, code: str):
    """The program's namespace after `code` ran on a fresh population, and the final state."""
    declared = program.declarations()  # the setup block's values, the request bodies included
    case = {"assets": [{"kind": ASSET, "meta": declared.assets[ASSET].meta}]}
    world.reset(case)
    original = requests.Session.request  # the world watches requests by wrapping this: undone after each run
    try:
        namespace = world.namespace(case)
        constants = program.assignments()[0].constants  # the original input's: a split's constant set
        exec(scenario.setup_code(declared, constants) + "\n" + code, namespace)
        return namespace, world.outcome(namespace.get("RESULT"), None)[1]  # as the worker reads it
    finally:
        requests.Session.request = original


def test_a_put_and_a_patch_of_each_update_leave_different_states(world, scenario, programs):
    """The program with one update's method swapped (the mutant a confused program is) ends in another state."""
    checked = 0
    for program in programs:
        if program.has_branch:  # (an update on the side the original input does not take changes nothing there)
            continue
        code = program.reference_code()
        _, state = run(world, scenario, program, code)
        assert state, "the final state was read"
        lines = code.splitlines()
        for k, line in enumerate(lines):
            for sent, other in (("requests.put(", "requests.patch("), ("requests.patch(", "requests.put(")):
                if sent in line:
                    confused = "\n".join(lines[:k] + [line.replace(sent, other)] + lines[k + 1:])
                    assert run(world, scenario, program, confused)[1] != state, line
                    checked += 1
    assert checked >= 10


def test_take_id_takes_no_id_a_variable_holds_and_result_items_differ(world, scenario, programs):
    taken = 0
    for program in programs:
        code = program.reference_code()
        namespace, _ = run(world, scenario, program, code)
        result = world.canonical(namespace["RESULT"])
        assert all(a != b for i, a in enumerate(result) for b in result[i + 1:]), code
        for name in re.findall(r"^(\w+) = answer\d+\[.*\]\[0\]", code, re.M):
            held = {v for n, v in namespace.items() if n != name and isinstance(v, str)}
            assert namespace[name] not in held, code
            taken += 1
    assert taken >= 1


def test_a_listing_under_a_new_resource_is_no_read_of_it(scenario):
    """A bucket made and then only listed into may not be written over: what its creation set is still unread."""
    state = scenario.initial_state(random.Random(0))
    apis = {api.name: api for api in scenario.apis}
    made = apis["create_bucket"].apply(state, (), random.Random(1)).outputs[0]
    apis["get_collections"].apply(state, (made,), random.Random(2))
    assert (made,) not in apis["update_bucket"].bindings(state)
    apis["get_bucket"].apply(state, (made,), random.Random(3))
    assert (made,) in apis["update_bucket"].bindings(state)


def test_an_empty_listing_and_a_repeated_read_are_not_offered(scenario):
    state = scenario.initial_state(random.Random(0))
    apis = {api.name: api for api in scenario.apis}
    assert apis["get_groups"].bindings(state) == []  # the population makes no group
    assert apis["get_records"].bindings(state)
    (collection,) = apis["get_records"].bindings(state)[0]
    apis["get_records"].apply(state, (collection,), random.Random(1))
    assert (collection,) not in apis["get_records"].bindings(state)
    apis["create_record"].apply(state, (collection,), random.Random(2))  # a write under it: worth reading again
    assert (collection,) in apis["get_records"].bindings(state)
