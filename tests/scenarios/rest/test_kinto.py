"""Kinto, a real REST service, from scenarios/rest/services/kinto.toml alone: its Swagger 2.0 document, reset by its
flush plug-in, a round trip, the population, and the dependencies buckets -> collections -> records, one of them
confirmed live.

Needs the rest extra (pip install -e ".[rest]"); skipped without it unless STATEEVAL_REQUIRE_REST is set, as
.ci/run sets it, where a missing Kinto fails these tests instead.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from scenarios.rest.dependencies import PATH_PREFIX, infer
from scenarios.rest.process import Service
from scenarios.rest.servicefile import load
from tests.scenarios.rest.conftest import alive

if importlib.util.find_spec("kinto") is None and not os.environ.get("STATEEVAL_REQUIRE_REST"):
    pytest.skip("needs the rest extra: pip install -e '.[rest]'", allow_module_level=True)

KINTO = Path(__file__).resolve().parents[3] / "scenarios" / "rest" / "services" / "kinto.toml"


@pytest.fixture(scope="module")
def kinto():
    with Service(load(KINTO)) as service:
        yield service


@pytest.fixture(scope="module")
def operations(kinto):
    return {op.id: op for op in kinto.operations()}


def test_the_spec_is_read_and_filtered(kinto, operations):
    assert kinto.spec()["swagger"] == "2.0"
    assert operations["create_bucket"].label == "POST /v1/buckets"
    assert operations["update_record"].label == "PUT /v1/buckets/{bucket_id}/collections/{collection_id}/records/{id}"
    assert operations["create_collection"].body.media_type == "application/json"
    assert not any(op.path.startswith("/v1/__") for op in operations.values())  # excluded, the flush among them
    assert "batch" not in operations


def test_a_round_trip_and_a_reset_that_empties_it(kinto):
    kinto.reset()
    assert kinto.request("PUT", "/v1/buckets/shelf").status_code == 201
    answer = kinto.request("POST", "/v1/buckets/shelf/collections", json={"data": {"colour": "red"}})
    assert answer.status_code == 201
    made = answer.json()["data"]
    read = kinto.request("GET", f"/v1/buckets/shelf/collections/{made['id']}").json()["data"]
    assert read == made and read["colour"] == "red"
    populated = kinto.request("GET", "/v1/buckets").json()["data"]
    assert "shelf" in {b["id"] for b in populated}
    kinto.reset()
    buckets = {b["id"] for b in kinto.request("GET", "/v1/buckets").json()["data"]}
    assert "shelf" not in buckets and len(buckets) == 1  # only the population's bucket


def test_the_population_is_drawn_from_the_seed(kinto):
    def state(seed):
        kinto.reset(seed)
        bucket = kinto.request("GET", "/v1/buckets").json()["data"][0]["id"]
        collection = kinto.request("GET", f"/v1/buckets/{bucket}/collections").json()["data"][0]["id"]
        records = kinto.request("GET", f"/v1/buckets/{bucket}/collections/{collection}/records").json()["data"]
        return bucket, collection, [(r["id"], r["title"], r["rank"]) for r in records]

    assert state(3) == state(3)
    assert state(3) != state(4)
    assert isinstance(state(3)[2][0][2], int)


def test_dependencies_buckets_collections_records(operations):
    edges = {(e.producer, e.consumer, e.parameter): e for e in infer(list(operations.values()))}
    chain = [("create_bucket", "create_collection", "bucket_id"), ("update_bucket", "create_collection", "bucket_id"),
             ("create_collection", "create_record", "collection_id"),
             ("update_collection", "create_record", "collection_id"), ("update_bucket", "create_record", "bucket_id"),
             ("create_record", "get_record", "id"), ("update_record", "get_record", "id")]
    for key in chain:
        assert key in edges, key
        assert edges[key].reason == PATH_PREFIX and edges[key].location == "path"
    assert edges[("update_bucket", "create_collection", "bucket_id")].field == "$request.path.id"
    # Kinto's answers declare `data` without its fields: where a POST's new id is has to be found live
    assert edges[("create_bucket", "create_collection", "bucket_id")].field is None


def test_an_inferred_edge_holds_live(kinto, operations):
    """update_bucket's path id feeds create_collection's bucket_id: a bucket made by PUT takes collections."""
    kinto.reset()
    edge = next(e for e in infer(list(operations.values()))
                if (e.producer, e.consumer) == ("update_bucket", "create_collection"))
    assert edge.field == "$request.path.id"
    assert kinto.request("PUT", "/v1/buckets/made-here").status_code == 201
    path = operations["create_collection"].path.replace("{" + edge.parameter + "}", "made-here")
    assert kinto.request("POST", path, json={"data": {}}).status_code == 201
    assert kinto.request("POST", path.replace("made-here", "never-made"), json={"data": {}}).status_code == 403


def test_stopping_leaves_no_process(tmp_path):
    service = Service(load(KINTO)).start()
    pid = service.process.pid
    assert alive(pid)
    service.stop()
    assert not alive(pid)


def test_a_made_id_reaches_a_tool_as_a_handle_or_as_its_shown_name(monkeypatch):
    import requests

    from core.sandbox.worker import execute_calls
    from scenarios.rest.world import RestWorld

    # the world watches its child's requests by patching requests.Session.request: put it back afterwards
    monkeypatch.setattr(requests.Session, "request", requests.Session.request)
    world = RestWorld(load(KINTO))
    try:
        case = {"assets": [], "setup_code": 'BASE_URL = service_url()\nHEADERS = service_headers()\n'
                                             'body1 = {"data": {"title": "oak"}}\n'}
        world.tools()
        world.reset(case)
        calls = [{"name": "create_bucket", "arguments": {"body": "body1"}},
                 {"name": "get_bucket", "arguments": {"id": "r1['body']['data']['id']"}},
                 {"name": "get_bucket", "arguments": {"id": "<made-1>"}},
                 {"name": "get_bucket", "arguments": {"id": "<made-9>"}},
                 {"name": "get_bucket", "arguments": {}}]
        report = execute_calls(world, calls, ["r2['body']['data']['title']"], case)
    finally:
        world.close()
    assert report["status"] == "ok" and report["result"] == ["oak"]
    statuses = [c.get("value", {}).get("status") for c in report["calls"]]
    assert statuses[:3] == [201, 200, 200], report["calls"]
    assert statuses[3] in (403, 404), "a name no made value has is sent as it is"
    assert "missing path parameter 'id'" in report["calls"][4]["error"]
    assert report["calls"][0]["value"]["body"]["data"]["id"] == "<made-1>", "answers are shown with ids renamed"


SETUP = "import requests\n\nBASE_URL = service_url()\nHEADERS = service_headers()\n"
TWO_BUCKETS = """
a = requests.post(f"{BASE_URL}/v1/buckets", json={"data": {}}, headers=HEADERS).json()["data"]["id"]
b = requests.post(f"{BASE_URL}/v1/buckets", json={"data": {}}, headers=HEADERS).json()["data"]["id"]
"""
# What a program can reach in its own process: the world the child copied (its view of what was made, its record,
# its renaming), and `requests`.
REACH = """
import gc
world = next(o for o in gc.get_objects() if type(o).__name__ == "RestWorld")
"""
TAMPERING = TWO_BUCKETS + REACH + """
world.made = [m for m in world.made if m[1] == b] + [m for m in world.made if m[1] != b]  # b made first
world.population_made = [["/v1/buckets/{}", b, []]]
world.learned = ("data.id",)
type(world).recorded = lambda self, ns: {"made": [["/v1/buckets/{}", b, []], ["/v1/buckets/{}", a, []]]}
getattr(world, "proxy", None) and world.proxy.take()  # (the child's copy of the record)
requests.Session.request = lambda *args, **kwargs: None
RESULT = [b, a]
"""
SPELLING = TWO_BUCKETS + REACH + """
type(world).canonical = lambda self, obj: ["<made-2>", "<made-1>"]  # the names the honest answer's ids get
RESULT = None
"""


def test_a_program_cannot_change_how_its_result_and_state_are_renamed(monkeypatch):
    """The ids Kinto made are the worker's record (its proxy's), not the child's: a program that rewrites the
    child's view of them, its record and its renaming is renamed as the honest program is, and one that spells out
    the names itself gets them as literals."""
    from core.sandbox.harness import Job, Sandbox

    monkeypatch.setenv("STATEEVAL_SERVICES", str(KINTO))
    case = {"setup_code": SETUP, "assets": []}
    programs = {"honest": TWO_BUCKETS + "RESULT = [b, a]\n", "tampering": TAMPERING, "spelling": SPELLING}
    with Sandbox(1) as sandbox:
        outcomes = {o.key: o for o in sandbox.run_untrusted([Job(k, "kinto", code, case)
                                                             for k, code in programs.items()])}
    honest, tampering, spelling = outcomes["honest"], outcomes["tampering"], outcomes["spelling"]
    assert [honest.status, tampering.status, spelling.status] == ["ok"] * 3, [o.error for o in outcomes.values()]
    assert honest.result == ["<made-2>", "<made-1>"]
    assert (tampering.result, tampering.state) == (honest.result, honest.state)
    assert spelling.result == ["<literal made-2>", "<literal made-1>"] and spelling.state == honest.state
    assert any(path == "/v1/buckets/<made-2>" for path, _, _ in honest.state), "the made buckets were read back"


def test_made_ids_come_from_the_proxys_record_across_resets_and_a_restarted_service():
    """The worker's record of a test case: what went through the proxy since the last reset, also after a batch's
    reset and after the service died and was started again (on the same port, behind the same proxy)."""
    import re
    import signal

    import requests

    from scenarios.rest.world import RestWorld

    world = RestWorld(load(KINTO))
    case = {"setup_code": "", "assets": []}

    def buckets_made(posts: int) -> int:
        for _ in range(posts):
            answer = requests.post(f"{world.proxy.url}/v1/buckets", json={"data": {}}, headers=world.file.headers)
            assert answer.status_code == 201
        forged = {"made": [["/v1/buckets/{}", "forged", []]]}  # the child's record, which is not read
        _, state = world.outcome(None, forged)
        return sum(1 for path, _, _ in state if re.fullmatch(r"/v1/buckets/<made-\d+>", path))

    try:
        world.reset(case)
        assert buckets_made(2) == 2
        assert world.reset_between(case)  # as between two programs of a batch
        assert buckets_made(1) == 1, "a reset empties the record"
        os.killpg(world.service.process.pid, signal.SIGKILL)
        world.service.process.wait()
        assert not world.intact()
        world.reset(case)
        assert buckets_made(1) == 1, "the proxy reaches the service started again"
    finally:
        world.close()
