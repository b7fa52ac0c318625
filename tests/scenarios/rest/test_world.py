"""The parts of a derived scenario that need no service: resources named by their paths, drawn values, and the
masking of values the service makes up."""

from __future__ import annotations

import random

import pytest

from scenarios.rest.model import draw, resource, template_match
from scenarios.rest.schema import Schema
from scenarios.rest.world import ERASED, Masker


def test_a_resource_is_its_path_with_parameters_unnamed():
    path = "/v1/buckets/{bucket_id}/collections/{id}"
    assert resource(path) == "/v1/buckets/{}/collections/{}"
    assert resource(path, 0) == "/v1/buckets/{}"
    assert resource("/v1/buckets/{id}/collections/{cid}/records", 1) == resource(path)
    assert template_match(path, "/v1/buckets/a/collections/b") == ["a", "b"]
    assert template_match(path, "/v1/buckets/a/groups/b") is None


def test_values_are_drawn_from_the_schema_and_the_seed():
    schema = Schema(type="object", properties={"kind": Schema(type="string", enum=("a", "b")),
                                              "size": Schema(type="integer", minimum=5, maximum=6),
                                              "mail": Schema(type="string", format="email")})
    one = draw(schema, random.Random(3))
    assert one == draw(schema, random.Random(3))
    assert one["kind"] in ("a", "b") and one["size"] in (5, 6) and one["mail"].endswith("@example.org")
    assert set(draw(schema, random.Random(3), ("kind",))) == {"kind"}


def test_made_up_values_are_renamed_in_the_order_they_were_made_and_times_erased():
    mask = Masker(["Xq81aa", "p0"], ("data.stamp",), keep=frozenset({"lemon"}))
    plain = {"data": {"id": "p0", "other": "Xq81aa", "stamp": "s-1", "when": 1795800175643,
                      "at": "2026-11-27T17:00:00Z", "uid": "123e4567-e89b-12d3-a456-426614174000",
                      "path": "/v1/buckets/Xq81aa/x", "name": "lemon", "rank": 37}}
    assert mask(plain) == {"data": {
        "at": ERASED, "id": "<made-2>", "name": "lemon", "other": "<made-1>", "path": "/v1/buckets/<made-1>/x",
        "rank": 37, "stamp": "<made-3>", "uid": "<made-4>", "when": ERASED}}
    # another run, other values made in the same order: the same data
    again = Masker(["Zz99bb", "q1"], ("data.stamp",))
    assert again({"a": "q1", "b": "Zz99bb"}) == Masker(["Xq81aa", "p0"], ())({"a": "p0", "b": "Xq81aa"})
    assert Masker([], ("data.stamp",), keep=frozenset({"lemon"}))({"data": {"stamp": "lemon"}}) == \
        {"data": {"stamp": "lemon"}}, "a value the client chose is never renamed"


def test_the_populations_values_are_the_seeds_whichever_seed_came_before(tmp_path):
    from scenarios.rest.model import Model
    from scenarios.rest.openapi import read
    from scenarios.rest.servicefile import load
    from tests.scenarios.rest.conftest import FAKE_SPEC, write_service

    file = load(write_service(tmp_path, arrays={"population": [
        {"method": "POST", "path": "/items/{draw:word@a}"}, {"method": "GET", "path": "/items/{draw:hex:6}"}]}))
    operations = read(FAKE_SPEC)

    def fresh(seed: int) -> list:
        return Model(file, operations).population_values(seed)

    model = Model(file, operations)
    assert fresh(1) != fresh(2)  # the seeds draw different values
    for seed in (1, 2, 1, 1, 2):
        assert model.population_values(seed) == fresh(seed)


POST = 'requests.post(f"{BASE_URL}/items", json={}, headers=HEADERS).status_code'
LIST = 'requests.get(f"{BASE_URL}/items", headers=HEADERS).status_code'


@pytest.mark.parametrize("dies_on, at, calls", [("POST /items", 3, [POST] * 3), ("GET /items", 2, [LIST])],
                         ids=["program", "snapshot"])
def test_a_job_under_which_the_service_dies_says_so_and_the_next_finds_it_again(tmp_path, dies_on, at, calls,
                                                                            isolated_registry):
    """The service dies under the program's third add (the probe at start sends two), or under the snapshot's
    listing after the program's own: the worker's reply has no verdict and names the service and what it printed
    last; the next job, on the same worker, meets a service started again."""
    from builder.config import BuildConfig, rng_for
    from builder.fuzz import CoverageRecorder
    from builder.program import generate_program
    from core.sandbox.harness import Limits
    from core.sandbox.protocol import ProgramRequest, WireCase
    from core.sandbox.worker import Runner
    from core.statuses import CRASH, OK
    from scenarios import get_scenario
    from scenarios.rest.registration import register
    from tests.scenarios.rest.conftest import FAKE, write_service

    name = f"dying_{'_'.join(dies_on.lower().replace('/', ' ').split())}"
    path = write_service(tmp_path, name=name, start=["{python}", str(FAKE), "{port}", "--spec", "{dir}/openapi.json",
                                                     "--die-on", dies_on, "--die-at", str(at)])
    register(path)
    config = BuildConfig(scenarios=[name], n=1, seed=0, created_at="2026-01-01")
    program = generate_program(get_scenario(name), rng_for(config, name, 0, "fuzz"), CoverageRecorder())
    case = program.test_cases(config, 0)[0].to_row()
    runner = Runner(None)
    try:
        def run(code: str) -> dict:
            return runner.run_job(ProgramRequest(name, WireCase.of(case), Limits(), code))

        assert run(f"RESULT = [{POST}]")["status"] == OK
        world = runner.worlds[name]
        pid = world.service.process.pid
        lost = run(f"RESULT = [{', '.join(calls)}]")
        assert lost["status"] == CRASH and lost["error"] == lost["world_lost"]
        assert lost["world_lost"] == (f"the service {name} exited with status 3 during the job; it printed: "
                                      f"fake service: crashed on {dies_on}")
        again = run(f"RESULT = [{POST}]")
        assert again["status"] == OK and again["result"] == [201]
        assert world.service.process.pid != pid and world.intact()
    finally:
        runner.close()


def test_a_header_parameter_of_a_tool_reaches_the_service_and_a_traced_program_passes_it_as_one(tmp_path,
                                                                                                  monkeypatch):
    import json

    import requests

    from core.sandbox.worker import execute_calls
    from scenarios.rest.servicefile import load
    from scenarios.rest.world import RestWorld
    from tests.scenarios.rest.conftest import FAKE_SPEC, write_service

    spec = json.loads(json.dumps(FAKE_SPEC))
    spec["paths"]["/headers"] = {"get": {"operationId": "echo_headers", "parameters": [
        {"name": "X-Tag", "in": "header", "schema": {"type": "string"}},
        {"name": "Authorization", "in": "header", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "the request's headers"}}}}
    file = load(write_service(tmp_path, tables={"files": {"openapi.json": json.dumps(spec)},
                                                "headers": {"Authorization": "Basic dG9rZW4="}}))
    monkeypatch.setattr(requests.Session, "request", requests.Session.request)  # the world patches it
    world = RestWorld(file)
    try:
        case = {"assets": [], "setup_code": "BASE_URL = service_url()\nHEADERS = service_headers()\n"}
        offered = world.tools().specs["echo_headers"].parameters["properties"]
        assert "X-Tag" in offered and "Authorization" not in offered, "the file's headers are not offered again"
        world.reset(case)
        report = execute_calls(world, [{"name": "echo_headers", "arguments": {"X-Tag": "blue"}}], ["r1"], case)
        sent = report["calls"][0]["value"]["body"]
        assert sent["X-Tag"] == "blue" and sent["Authorization"] == "Basic dG9rZW4=", report

        class Recorder:
            by_value, calls = False, []

            def record(self, spec, arguments, value):
                self.calls.append((spec.name, arguments))

        tracer = Recorder()
        namespace = world.namespace(case)
        for method in ("get", "post", "put", "patch", "delete"):  # trace_as_tools patches them all
            monkeypatch.setattr(requests, method, getattr(requests, method))
        world.trace_as_tools(namespace, tracer)
        headers = {**namespace["service_headers"](), "X-Tag": "green"}
        requests.get(namespace["service_url"]() + "/headers", headers=headers)
        requests.get(namespace["service_url"]() + "/headers", headers=namespace["service_headers"]())
        # A child that runs a second test case installs the tracing again: its calls are recorded once, by it alone.
        second = Recorder()
        second.calls = []
        world.trace_as_tools(namespace, second)
        requests.get(namespace["service_url"]() + "/headers", headers=namespace["service_headers"]())
    finally:
        world.close()
    assert tracer.calls == [("echo_headers", {"X-Tag": "green"}), ("echo_headers", {})]
    assert second.calls == [("echo_headers", {})]


def test_a_batch_child_that_sets_up_a_second_test_case_sees_each_request_once(tmp_path, monkeypatch):
    """A batch's child sets up one namespace per test case in the same process: the watcher of the program's
    requests (what the stored traces and the made-up values come from) must not be installed over the last one."""
    import requests

    from scenarios.rest.servicefile import load
    from scenarios.rest.world import RestWorld
    from tests.scenarios.rest.conftest import write_service

    monkeypatch.setattr(requests.Session, "request", requests.Session.request)  # the world patches it
    world = RestWorld(load(write_service(tmp_path)))
    seen = []
    try:
        case = {"assets": [], "setup_code": ""}
        for _ in range(3):  # three test cases in one child
            world.reset(case)
            namespace = world.namespace(case)
        monkeypatch.setattr(world, "_seen", lambda *args: seen.append(args[:2]))
        requests.post(namespace["service_url"]() + "/items", json={}, headers=namespace["service_headers"]())
    finally:
        world.close()
    assert [method for method, _ in seen] == ["POST"]


def test_a_world_mutant_of_a_derived_service_is_applied_at_its_proxy_and_only_to_its_job(tmp_path,
                                                                                          isolated_registry):
    """Any service of a service file gets world mutants without code of its own: the proxy answers an ignored add
    as done while the service stores nothing, and the next job, named no mutant, meets the service as it is."""
    from builder.config import BuildConfig, rng_for
    from builder.fuzz import CoverageRecorder
    from builder.program import generate_program
    from core.sandbox.harness import Limits
    from core.sandbox.protocol import ProgramRequest, WireCase
    from core.sandbox.worker import Runner
    from scenarios import get_scenario
    from scenarios.mutants import IGNORED, LAST_DROPPED, Mutant
    from scenarios.rest.registration import register
    from tests.scenarios.rest.conftest import write_service

    name = "mutated_items"
    register(write_service(tmp_path, name=name))
    config = BuildConfig(scenarios=[name], n=1, seed=0, created_at="2026-01-01")
    program = generate_program(get_scenario(name), rng_for(config, name, 0, "fuzz"), CoverageRecorder())
    case = program.test_cases(config, 0)[0].to_row()
    code = f"RESULT = [{POST}, len(requests.get(f'{{BASE_URL}}/items', headers=HEADERS).json())]"
    runner = Runner(None)
    try:
        def run(mutant: Mutant | None) -> dict:
            return runner.run_job(ProgramRequest(name, WireCase.of(case), Limits(), code, True,
                                                 None if mutant is None else mutant.to_json()))

        correct = run(None)
        ignored = run(Mutant(IGNORED, "POST /items"))
        short = run(Mutant(LAST_DROPPED, "GET /items"))
        again = run(None)
    finally:
        runner.close()
    assert correct["result"][0] == ignored["result"][0] == 201
    assert ignored["result"][1] == correct["result"][1] - 1 and ignored["mutated"] == 1
    assert ignored["state"] != correct["state"], "the service never stored the ignored add"
    assert short["result"][1] == correct["result"][1] - 1 and short["state"] == correct["state"]
    assert (again["result"], again["state"]) == (correct["result"], correct["state"]) and "mutated" not in again
