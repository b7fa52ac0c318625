"""The worker's recording proxy (scenarios/rest/proxy.py) in front of the stdlib fake service: requests pass through
as they are, every exchange is recorded in order, and a closed proxy neither forwards nor records."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests

from scenarios.mutants import (FIELD_ALTERED, FIELD_DROPPED, IGNORED, LAST_DROPPED, STATUS, TWICE, Mutant,
                                http_resolver)
from scenarios.rest.process import Service
from scenarios.rest.proxy import Proxy
from scenarios.rest.servicefile import load


@pytest.fixture
def proxied(fake):
    with Service(load(fake)) as service:
        proxy = Proxy(service.port, 10.0)
        try:
            yield service, proxy
        finally:
            proxy.stop()


def test_requests_pass_through_and_every_exchange_is_recorded_in_order(proxied):
    service, proxy = proxied
    service.reset()
    proxy.open()
    made = requests.post(f"{proxy.url}/items", json={"colour": "red"}, headers={"Authorization": "Basic x"})
    chunked = requests.post(f"{proxy.url}/items?x=1", data=(part for part in (b'{"n": ', b"2}")))
    listed = requests.get(f"{proxy.url}/items")
    missing = requests.get(f"{proxy.url}/nowhere")
    headers = requests.get(f"{proxy.url}/headers", headers={"Authorization": "Basic x"}).json()
    assert (made.status_code, made.json()) == (201, {"id": 1})
    assert (chunked.status_code, chunked.json()) == (201, {"id": 2}), "a chunked body is sent on whole"
    assert listed.json() == [{"path": "/items", "body": {"colour": "red"}}, {"path": "/items?x=1", "body": {"n": 2}}]
    assert listed.json() == service.request("GET", "/items").json(), "what the program reads is the service's answer"
    assert missing.status_code == 404
    assert headers["Authorization"] == "Basic x" and "Accept-Encoding" not in headers
    log = proxy.take()
    assert [(e.method, e.path, e.status) for e in log] == [
        ("POST", "/items", 201), ("POST", "/items?x=1", 201), ("GET", "/items", 200), ("GET", "/nowhere", 404),
        ("GET", "/headers", 200)]
    assert json.loads(log[0].body) == {"id": 1} and log[0].content_type == "application/json"
    assert proxy.take() == [], "taken once"


def test_a_closed_proxy_forwards_and_records_nothing(proxied):
    service, proxy = proxied
    service.reset()
    refused = requests.post(f"{proxy.url}/items", json={})  # never opened
    proxy.open()
    assert requests.post(f"{proxy.url}/items", json={}).status_code == 201
    proxy.close()
    late = requests.post(f"{proxy.url}/items", json={})
    assert refused.status_code == late.status_code == 503
    assert [e.status for e in proxy.take()] == [201]
    assert len(service.request("GET", "/items").json()) == 1, "refused requests never reach the service"
    proxy.open()
    requests.get(f"{proxy.url}/items")
    proxy.open()
    assert proxy.take() == [], "opening starts an empty record"


def test_a_service_that_is_gone_is_a_bad_gateway_and_no_record(proxied):
    service, proxy = proxied
    proxy.open()
    service.stop()
    assert requests.get(f"{proxy.url}/items").status_code == 502
    assert proxy.take() == []


def test_connections_at_once_each_served_and_no_thread_left_once_stopped(proxied):
    service, proxy = proxied
    service.reset()
    proxy.open()
    before = threading.active_count()
    with requests.Session() as first, requests.Session() as second:  # two connections kept open at once
        for _ in range(3):
            assert first.get(f"{proxy.url}/items").status_code == second.get(f"{proxy.url}/items").status_code == 200
    for _ in range(3):  # one connection after another: each served (by a thread that served an earlier one)
        assert requests.get(f"{proxy.url}/items").status_code == 200
    assert threading.active_count() > before
    proxy.stop()
    deadline = time.monotonic() + 60
    while threading.active_count() > before - 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the server's own thread and its connection threads end
    assert threading.active_count() == before - 1


# ---- world mutants (`scenarios.mutants`): the proxy is where any HTTP service goes wrong, one operation at a time

RESOLVE = http_resolver(["POST /items", "GET /items", "GET /headers"])


def _stored(service) -> list:
    return service.request("GET", "/items").json()  # the service itself, past the proxy


@pytest.mark.parametrize("kind, expect_status, expect_stored, expect_changed", [
    (IGNORED, 201, 0, 1),  # answered as a success, never stored
    (TWICE, 201, 2, 0),  # stored twice, answered once: the state shows it, no answer does
    (STATUS, 200, 1, 1),  # stored, with another success status
])
def test_a_write_mutant_changes_what_the_service_stores_or_says(proxied, kind, expect_status, expect_stored,
                                                                expect_changed):
    service, proxy = proxied
    service.reset()
    proxy.mutate(Mutant(kind, "POST /items"), RESOLVE)
    proxy.open()
    made = requests.post(f"{proxy.url}/items", json={"colour": "red"})
    assert made.status_code == expect_status
    assert len(_stored(service)) == expect_stored
    assert proxy.changed == expect_changed, "the answers it changed are counted"
    if kind == TWICE:
        assert made.json() == {"id": 1}, "the first answer comes back"
        assert [e.status for e in proxy.take()] == [201, 201], "the record keeps both real answers"


@pytest.mark.parametrize("mutant, expect", [
    (Mutant(LAST_DROPPED, "GET /items"), [{"path": "/items", "body": {"n": 1}}]),
    (Mutant(FIELD_DROPPED, "GET /items", 0), [{"path": "/items"}, {"path": "/items"}]),
    (Mutant(FIELD_ALTERED, "GET /items", -1), [{"path": "/items~", "body": {"n": 1}},
                                               {"path": "/items~", "body": {"n": 2}}]),
])
def test_a_read_mutant_changes_the_answer_and_not_the_service(proxied, mutant, expect):
    service, proxy = proxied
    service.reset()
    proxy.open()
    for n in (1, 2):
        requests.post(f"{proxy.url}/items", json={"n": n})
    proxy.mutate(mutant, RESOLVE)
    assert requests.get(f"{proxy.url}/items").json() == expect
    assert len(_stored(service)) == 2 and proxy.changed == 1
    assert requests.post(f"{proxy.url}/items", json={"n": 3}).json() == {"id": 3}, "another operation is untouched"
    proxy.mutate(None)
    assert len(requests.get(f"{proxy.url}/items").json()) == 3, "no mutant: the service's own answer"
    assert proxy.changed == 0


def test_the_same_mutant_twice_gives_the_same_answers(proxied):
    service, proxy = proxied
    seen = []
    for _ in range(2):
        service.reset()
        proxy.mutate(Mutant(FIELD_ALTERED, "GET /items", 0), RESOLVE)
        proxy.open()
        requests.post(f"{proxy.url}/items", json={"n": 1})
        seen.append((requests.get(f"{proxy.url}/items").content, proxy.changed))
        proxy.close()
    assert seen[0] == seen[1] and seen[0][1] == 1
