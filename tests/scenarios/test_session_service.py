"""The session service against a running instance on a free loopback port (a real process, real SQLite file).

Facts checked here come from the original service's README and SessionServiceTest (EvoMaster benchmark):
paths, the 8 types, checksum de-duplication, field queries and filter fetches, and the 400/404 answers.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from scenarios.session import store
from scenarios.session.server import ServiceProcess

ROOT = Path(__file__).resolve().parents[2]
ID_CHARS = set("0123456789abcdef")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("session-service") / "sessions.sqlite3")
    svc = ServiceProcess(db).start()
    yield svc
    svc.stop()


@pytest.fixture
def base(service):
    """The service's URL, with its database emptied before each test (as the sandbox world resets it)."""
    conn = store.connect(service.db_path)
    store.reset(conn, [], salt="test")
    conn.close()
    return service.url + "/api/sessions"


def add(base, source, type_, data) -> requests.Response:
    return requests.post(f"{base}/{source}/{type_}", json=data, timeout=10)


def new_id(base, source, type_, data) -> str:
    r = add(base, source, type_, data)
    assert r.status_code in (200, 201), r.text  # 200: identical data was already stored
    assert list(r.json()) == ["id"]
    return r.json()["id"]


# ------------------------------------------------------------------------------------------------- add, get


def test_add_then_get_returns_the_session(base):
    data = {"portal-session": {"arg1": "first argument"}}
    sid = new_id(base, "msk_portal", "main_session", data)
    assert len(sid) == 24 and set(sid) <= ID_CHARS
    r = requests.get(f"{base}/msk_portal/main_session/{sid}", timeout=10)
    assert r.status_code == 200
    # The original's exact shape: id, data, source, type (the checksum stays internal).
    assert r.text == json.dumps({"id": sid, "data": data, "source": "msk_portal", "type": "main_session"},
                                separators=(",", ":"))


def test_list_is_empty_then_in_creation_order(base):
    r = requests.get(f"{base}/msk_portal/main_session", timeout=10)
    assert (r.status_code, r.text) == (200, "[]")
    ids = [new_id(base, "msk_portal", "main_session", {"title": t}) for t in ("b", "a", "c")]
    listed = requests.get(f"{base}/msk_portal/main_session", timeout=10).json()
    assert [s["id"] for s in listed] == ids
    assert [s["data"]["title"] for s in listed] == ["b", "a", "c"]
    assert {(s["source"], s["type"]) for s in listed} == {("msk_portal", "main_session")}


def test_success_statuses_tell_an_add_an_update_and_a_delete_apart(base):
    """201 for an add that stores, 200 for one that finds identical data, 200 for an update, 204 for a delete:
    a program that keeps one write's status in place of another's gets another number."""
    first = add(base, "msk_portal", "group", {"n": 1})
    again = add(base, "msk_portal", "group", {"n": 1})
    assert (first.status_code, again.status_code, again.json()) == (201, 200, first.json())
    url = f"{base}/msk_portal/group/{first.json()['id']}"
    assert requests.put(url, json={"n": 2}, timeout=10).status_code == 200
    assert (requests.delete(url, timeout=10).status_code, requests.delete(url, timeout=10).status_code) == (204, 404)


def test_empty_object_is_a_valid_session(base):
    assert add(base, "msk_portal", "main_session", {}).status_code == 201


def test_all_eight_types_are_accepted():
    assert store.SESSION_TYPES == ("main_session", "virtual_study", "group", "comparison_session", "settings",
                                   "custom_data", "genomic_chart", "custom_gene_list")


def test_every_type_is_its_own_collection(base):
    for type_ in store.SESSION_TYPES:
        new_id(base, "msk_portal", type_, {"kind": type_})
    for type_ in store.SESSION_TYPES:
        listed = requests.get(f"{base}/msk_portal/{type_}", timeout=10).json()
        assert [s["data"] for s in listed] == [{"kind": type_}]


# ---------------------------------------------------------------------------------------- checksum dedupe


def test_identical_data_under_same_source_and_type_returns_the_existing_id(base):
    data = {"portal-session": "my session information", "members": ["a@x.org", "b@x.org"]}
    first = new_id(base, "msk_portal", "main_session", data)
    assert new_id(base, "msk_portal", "main_session", data) == first
    # JSON objects are unordered: the same data with its keys in another order is the same session.
    reordered = {"members": ["a@x.org", "b@x.org"], "portal-session": "my session information"}
    assert new_id(base, "msk_portal", "main_session", reordered) == first
    assert len(requests.get(f"{base}/msk_portal/main_session", timeout=10).json()) == 1
    # Another source, another type, or a source differing only in case: a new session.
    others = {new_id(base, "other_portal", "main_session", data), new_id(base, "msk_portal", "group", data),
              new_id(base, "MSK_portal", "main_session", data)}
    assert first not in others and len(others) == 3
    # Different data (list order matters): a new session.
    swapped = {**data, "members": ["b@x.org", "a@x.org"]}
    assert new_id(base, "msk_portal", "main_session", swapped) != first


def test_checksum_is_md5_of_the_data_and_stored(service, base):
    sid = new_id(base, "msk_portal", "main_session", {"b": 1, "a": [True, None]})
    conn = store.connect(service.db_path)
    (digest,) = conn.execute("SELECT checksum FROM sessions WHERE id=?", (sid,)).fetchone()
    conn.close()
    assert digest == store.checksum({"a": [True, None], "b": 1}) and len(digest) == 32


def test_ids_are_deterministic_per_reset_and_not_reused(service, base):
    data = {"title": "x"}
    first = new_id(base, "msk_portal", "group", data)
    # After a reset with the same salt, the same content gets the same id, whatever ran before it.
    conn = store.connect(service.db_path)
    store.reset(conn, [], salt="test")
    conn.close()
    new_id(base, "msk_portal", "group", {"title": "an unrelated session first"})
    new_id(base, "probe_portal", "group", data)
    assert new_id(base, "msk_portal", "group", data) == first
    # Deleted and added again: a new id, as MongoDB would give.
    assert requests.delete(f"{base}/msk_portal/group/{first}", timeout=10).status_code == 204
    assert new_id(base, "msk_portal", "group", data) != first


def test_a_dump_loaded_back_gives_the_requests_after_it_what_they_met_then(service, base):
    """`store.dump` and `store.load` (what a batch of mutants restores between them): after a load, the stored
    sessions, their order and the ids the next additions get are those straight after the dump."""
    new_id(base, "msk_portal", "group", {"title": "kept"})
    conn = store.connect(service.db_path)
    dumped = store.dump(conn)
    after = [new_id(base, "msk_portal", "group", {"title": t}) for t in ("a", "b")]
    state = store.snapshot(conn)
    order = requests.get(f"{base}/msk_portal/group", timeout=10).json()
    for _ in range(2):
        store.load(conn, dumped)
        assert [s["data"]["title"] for s in requests.get(f"{base}/msk_portal/group", timeout=10).json()] == ["kept"]
        first = requests.get(f"{base}/msk_portal/group", timeout=10).json()[0]["id"]
        assert requests.delete(f"{base}/msk_portal/group/{first}", timeout=10).status_code == 204
        assert new_id(base, "msk_portal", "group", {"title": "c"}) not in after
    store.load(conn, dumped)
    assert [new_id(base, "msk_portal", "group", {"title": t}) for t in ("a", "b")] == after
    assert store.snapshot(conn) == state
    assert requests.get(f"{base}/msk_portal/group", timeout=10).json() == order
    conn.close()


# ------------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("body", [b'{"portal-session": blah blah blah}', b"{bad", b"[1, 2]", b'"text"', b"3"])
def test_add_invalid_json_or_not_an_object_is_400(base, body):
    r = requests.post(f"{base}/msk_portal/main_session", data=body, headers={"Content-Type": "application/json"},
                      timeout=10)
    assert r.status_code == 400
    assert r.json()["error"] == "Bad Request"


def test_add_without_a_body_is_400(base):
    r = requests.post(f"{base}/msk_portal/main_session", timeout=10)
    assert r.status_code == 400 and "body is missing" in r.json()["message"]


def test_short_source_is_400_on_add(base):
    r = add(base, "ab", "main_session", {"title": "x"})
    assert r.status_code == 400 and "minimum length of 3" in r.json()["message"]
    assert add(base, "abc", "main_session", {"title": "x"}).status_code == 201


@pytest.mark.parametrize("method, suffix", [
    ("post", ""), ("get", ""), ("get", "/query?field=data.title&value=x"), ("post", "/query/fetch"),
    ("get", "/0123456789abcdef01234567"), ("put", "/0123456789abcdef01234567"),
    ("delete", "/0123456789abcdef01234567"),
])
def test_unknown_type_is_400_listing_the_valid_types(base, method, suffix):
    r = requests.request(method, f"{base}/msk_portal/invalid_type{suffix}", json={}, timeout=10)
    assert r.status_code == 400
    assert r.json()["message"] == "valid types are: " + ", ".join(store.SESSION_TYPES)


def test_types_are_case_sensitive(base):
    assert add(base, "msk_portal", "Main_Session", {}).status_code == 400


def test_unknown_id_is_404_for_get_put_delete(base):
    url = f"{base}/msk_portal/main_session/id"
    for r in (requests.get(url, timeout=10), requests.put(url, json={"a": 1}, timeout=10),
              requests.delete(url, timeout=10)):
        assert r.status_code == 404
        assert r.json()["message"] == "Session not found"


def test_an_id_under_another_source_or_type_is_404(base):
    data = {"portal-session": {"arg1": "first argument"}}
    sid = new_id(base, "msk_portal", "virtual_study", data)
    for source, type_ in (("msk_portal", "main_session"), ("other_portal", "virtual_study"),
                          ("MSK_portal", "virtual_study")):
        url = f"{base}/{source}/{type_}/{sid}"
        assert requests.get(url, timeout=10).status_code == 404
        assert requests.put(url, json={"x": 1}, timeout=10).status_code == 404
        assert requests.delete(url, timeout=10).status_code == 404
    # Nothing above touched it; the right source and type reach it.
    r = requests.get(f"{base}/msk_portal/virtual_study/{sid}", timeout=10)
    assert r.status_code == 200 and r.json()["data"] == data
    r = requests.delete(f"{base}/msk_portal/virtual_study/{sid}", timeout=10)
    assert (r.status_code, r.content) == (204, b"")
    assert requests.get(f"{base}/msk_portal/virtual_study/{sid}", timeout=10).status_code == 404


# ---------------------------------------------------------------------------------------- update, delete


def test_update_replaces_data_keeps_id_and_position(base):
    ids = [new_id(base, "msk_portal", "main_session", {"portal-session": s}) for s in ("one", "two", "three")]
    r = requests.put(f"{base}/msk_portal/main_session/{ids[1]}",
                     json={"portal-session": "my session UPDATED information"}, timeout=10)
    assert (r.status_code, r.content) == (200, b"")
    listed = requests.get(f"{base}/msk_portal/main_session", timeout=10).json()
    assert [s["id"] for s in listed] == ids
    assert listed[1]["data"] == {"portal-session": "my session UPDATED information"}
    # The checksum follows the data: adding the new data again finds the updated session.
    assert new_id(base, "msk_portal", "main_session", {"portal-session": "my session UPDATED information"}) == ids[1]


def test_update_with_invalid_or_missing_body_is_400_and_changes_nothing(base):
    sid = new_id(base, "msk_portal", "main_session", {"a": 1})
    url = f"{base}/msk_portal/main_session/{sid}"
    bad = requests.put(url, data=b'{"portal-session": blah}', headers={"Content-Type": "application/json"},
                       timeout=10)
    assert bad.status_code == 400
    assert requests.put(url, timeout=10).status_code == 400
    assert requests.put(url, json=[1], timeout=10).status_code == 400
    assert requests.get(url, timeout=10).json()["data"] == {"a": 1}


def test_update_that_would_duplicate_another_session_is_409(base):
    a = new_id(base, "msk_portal", "group", {"n": 1})
    new_id(base, "msk_portal", "group", {"n": 2})
    r = requests.put(f"{base}/msk_portal/group/{a}", json={"n": 2}, timeout=10)
    assert r.status_code == 409
    assert requests.get(f"{base}/msk_portal/group/{a}", timeout=10).json()["data"] == {"n": 1}
    # The same data as itself is no conflict.
    assert requests.put(f"{base}/msk_portal/group/{a}", json={"n": 1}, timeout=10).status_code == 200


def test_delete_removes_only_that_session(base):
    ids = [new_id(base, "msk_portal", "group", {"n": n}) for n in range(3)]
    assert requests.delete(f"{base}/msk_portal/group/{ids[0]}", timeout=10).status_code == 204
    assert [s["id"] for s in requests.get(f"{base}/msk_portal/group", timeout=10).json()] == ids[1:]
    assert requests.delete(f"{base}/msk_portal/group/{ids[0]}", timeout=10).status_code == 404


# ------------------------------------------------------------------------------------------------ queries


def _seed_query_data(base) -> dict:
    ids = {
        "a": new_id(base, "msk_portal", "virtual_study", {"portal-session": {"title": "my portal session"},
                                                          "title": "A", "owner": "ana@x.org",
                                                          "members": ["ana@x.org", "ben@x.org"], "n": 3}),
        "b": new_id(base, "msk_portal", "virtual_study", {"title": "B", "owner": "ben@x.org",
                                                          "members": ["ben@x.org"], "n": 10}),
        "c": new_id(base, "msk_portal", "virtual_study", {"title": "C", "owner": "cy@x.org", "members": []}),
    }
    new_id(base, "other_portal", "virtual_study", {"title": "A", "owner": "ana@x.org", "members": ["ana@x.org"]})
    new_id(base, "msk_portal", "group", {"title": "A", "owner": "ana@x.org", "members": ["ana@x.org"]})
    return ids


def query(base, field, value, source="msk_portal", type_="virtual_study") -> requests.Response:
    return requests.get(f"{base}/{source}/{type_}/query", params={"field": field, "value": value}, timeout=10)


def ids_of(r: requests.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()]


def test_query_by_field_equality_nested_path_and_array_membership(base):
    ids = _seed_query_data(base)
    assert ids_of(query(base, "data.title", "A")) == [ids["a"]]  # only this source and type
    assert ids_of(query(base, "data.portal-session.title", "my portal session")) == [ids["a"]]
    assert ids_of(query(base, "data.members", "ben@x.org")) == [ids["a"], ids["b"]]
    assert ids_of(query(base, "data.owner", "nobody@x.org")) == []
    assert ids_of(query(base, "data.n", "3")) == []  # the value is a string; 3 is a number
    assert ids_of(query(base, "source", "msk_portal")) == list(ids.values())
    r = query(base, "data.title", "A")
    assert r.json()[0] == {"id": ids["a"], "data": r.json()[0]["data"], "source": "msk_portal",
                           "type": "virtual_study"}


@pytest.mark.parametrize("field", ["$data.portal-session.title", "data.p\0ortal-session.title", "$where"])
def test_query_with_a_bad_field_is_400(base, field):
    _seed_query_data(base)
    r = query(base, field, "my portal session")
    assert r.status_code == 400 and r.json()["path"].endswith("/query")


def test_query_without_field_or_value_is_400(base):
    r = requests.get(f"{base}/msk_portal/virtual_study/query", params={"field": "data.title"}, timeout=10)
    assert r.status_code == 400 and "'value'" in r.json()["message"]


def fetch(base, body, source="msk_portal", type_="virtual_study") -> requests.Response:
    return requests.post(f"{base}/{source}/{type_}/query/fetch", json=body, timeout=10)


def test_fetch_with_a_mongo_style_filter(base):
    ids = _seed_query_data(base)
    a, b, c = ids["a"], ids["b"], ids["c"]
    assert ids_of(fetch(base, {"data.portal-session.title": "my portal session"})) == [a]
    assert ids_of(fetch(base, {})) == [a, b, c]
    assert ids_of(fetch(base, {"data.title": {"$in": ["B", "C"]}})) == [b, c]
    assert ids_of(fetch(base, {"$or": [{"data.owner": "cy@x.org"}, {"data.n": {"$gt": 5}}]})) == [b, c]
    assert ids_of(fetch(base, {"data.members": {"$size": 0}})) == [c]
    assert ids_of(fetch(base, {"data.n": {"$exists": False}})) == [c]
    assert ids_of(fetch(base, {"data.title": {"$regex": "^[ab]$", "$options": "i"}})) == [a, b]
    assert ids_of(fetch(base, {"data.members": {"$all": ["ana@x.org", "ben@x.org"]}})) == [a]
    assert ids_of(fetch(base, {"data.n": {"$not": {"$lt": 5}}})) == [b, c]
    assert ids_of(fetch(base, {"$and": [{"data.owner": {"$ne": "ana@x.org"}}, {"data.n": {"$lte": 10}}]})) == [b]
    assert ids_of(fetch(base, {"id": b})) == [b]
    other = fetch(base, {"data.title": "A"}, source="other_portal").json()
    assert len(other) == 1 and other[0]["source"] == "other_portal" and other[0]["id"] != a


@pytest.mark.parametrize("body", [
    {"$data.portal-session.title": "my portal session"},
    {"data.p\0ortal-session.title": "my portal session"},
    {"data.title": {"$bogus": 1}},
    {"$or": []},
    {"data.title": {"$in": "A"}},
])
def test_fetch_with_an_invalid_filter_is_400(base, body):
    _seed_query_data(base)
    assert fetch(base, body).status_code == 400


def test_fetch_with_invalid_json_is_400(base):
    r = requests.post(f"{base}/msk_portal/virtual_study/query/fetch", data=b"{nope",
                      headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 400


# ---------------------------------------------------------------------------------------- info, OpenAPI


def test_info_answers_the_version(service, base):
    r = requests.get(f"{service.url}/info", timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert r.text == "0.5.0"


def test_openapi_is_served_with_every_endpoint(service, base):
    spec = requests.get(f"{service.url}/openapi.json", timeout=10).json()
    ops = {(m.upper(), p) for p, methods in spec["paths"].items() for m in methods}
    root = "/api/sessions/{source}/{type}"
    assert ops == {("POST", root), ("GET", root), ("GET", root + "/query"), ("POST", root + "/query/fetch"),
                   ("GET", root + "/{id}"), ("PUT", root + "/{id}"), ("DELETE", root + "/{id}"), ("GET", "/info")}
    assert spec["components"]["schemas"]["SessionType"]["enum"] == list(store.SESSION_TYPES)
    assert not any("422" in op["responses"] for methods in spec["paths"].values() for op in methods.values())


def test_checked_in_api_doc_matches_the_served_openapi(service):
    from scenarios.session.doc import DOC_PATH, render_api_doc

    served = requests.get(f"{service.url}/openapi.json", timeout=10).json()
    assert DOC_PATH.read_text() == render_api_doc(served), (
        "scenarios/session/api_doc.md is stale: run `python -m scenarios.session api-doc --write`")
    assert DOC_PATH.read_text() == render_api_doc()


# ----------------------------------------------------------------------------------------- command line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_help():
    r = subprocess.run([sys.executable, "-m", "scenarios.session", "serve", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--port" in r.stdout and "--db" in r.stdout


def test_serve_runs_on_its_own(tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenarios.session", "serve", "--port", str(port), "--db", str(tmp_path / "s.db"),
         "--log-level", "warning"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{url}/info", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the service did not start"
            time.sleep(0.1)
        sid = requests.post(f"{url}/api/sessions/msk_portal/main_session", json={"title": "t"}, timeout=5).json()["id"]
        assert requests.get(f"{url}/api/sessions/msk_portal/main_session/{sid}", timeout=5).json()["data"] == {
            "title": "t"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert (tmp_path / "s.db").exists()


def _chunked(total: int, chunk: int = 64 * 1024):
    yield b'{"pad": "'
    for _ in range(total // chunk):
        yield b"x" * chunk


@pytest.mark.parametrize("method", ["post", "put"])
def test_a_body_over_the_cap_is_413_declared_or_streamed_and_stores_nothing(base, method):
    from scenarios.session.app import MAX_BODY_BYTES

    sid = new_id(base, "portal", "main_session", {"title": "kept"})
    url = f"{base}/portal/main_session" + (f"/{sid}" if method == "put" else "")
    declared = getattr(requests, method)(url, data=b"{" + b" " * MAX_BODY_BYTES + b"}", timeout=10)
    assert declared.status_code == 413
    assert declared.json()["error"] == "Payload Too Large"
    # A chunked body has no length up front: the service stops reading at the cap and answers 413 (or the
    # client sees the connection closed while still sending), never buffering the whole 64 MiB.
    try:
        streamed = getattr(requests, method)(url, data=_chunked(64 * MAX_BODY_BYTES), timeout=30,
                                             headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413
    except requests.exceptions.ConnectionError:
        pass
    listed = requests.get(f"{base}/portal/main_session", timeout=10).json()
    assert [s["data"] for s in listed] == [{"title": "kept"}]
    # A body just under the cap is still accepted.
    ok = add(base, "portal", "main_session", {"pad": "y" * (MAX_BODY_BYTES - 100)})
    assert ok.status_code == 201


def test_serve_keeps_its_database_in_the_user_data_folder_and_says_where(tmp_path):
    """Run by hand, the service used to write session_service.sqlite3 into whatever directory it was started in."""
    port = _free_port()
    cwd, data = tmp_path / "cwd", tmp_path / "data"
    cwd.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(data))
    proc = subprocess.Popen([sys.executable, "-m", "scenarios.session", "serve", "--port", str(port),
                             "--log-level", "warning"], cwd=cwd, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        first = proc.stderr.readline()
        deadline = time.monotonic() + 60  # a safety net only
        while True:
            try:
                if requests.post(f"http://127.0.0.1:{port}/api/sessions/msk_portal/main_session", json={"t": 1},
                                 timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the service did not start"
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    expected = data / "stateeval" / "session_service.sqlite3"
    assert first.strip().endswith(f"(database {expected})")
    assert expected.is_file()
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize("how", ["netlink", "/proc/net/tcp"])
def test_open_connections_counts_clients_the_service_has_not_closed_and_not_closed_ones(service, monkeypatch, how):
    """What `settle` waits on: connections held open to the service count, closed ones (in TIME_WAIT by the
    hundred after a build's test cases) do not. Counted over netlink, or read from /proc where netlink is refused."""
    if how != "netlink":
        import scenarios.session.server as server

        def refused(port):
            raise OSError("netlink refused")
        monkeypatch.setattr(server, "open_connections", refused)
    for _ in range(50):  # closed connections, each left in TIME_WAIT
        requests.get(service.url + "/info", timeout=10)
    assert service.settle(10)
    held = [socket.create_connection(("127.0.0.1", service.port)) for _ in range(3)]
    try:
        # Until the kernel has completed every handshake, and the service has closed its end of settle's own
        # request above (a bound on waiting, not a speed check).
        deadline = time.monotonic() + 10
        while service._open_connections() != 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service._open_connections() == 3
        assert not service.settle(0.05)
    finally:
        for sock in held:
            sock.close()
    assert service.settle(10)  # which waits until no connection is open, then makes one request of its own


def test_open_connections_counts_the_side_whose_local_port_it_is_given():
    """A connection the server side closed first: the server's end is past the states counted, the client's end
    (CLOSE_WAIT, local port its own) is still open. Counted by local port, as `settle` needs for the service's."""
    from scenarios.session.server import open_connections

    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server_end, _ = listener.accept()
    try:
        port, client_port = listener.getsockname()[1], client.getsockname()[1]
        assert (open_connections(port), open_connections(client_port)) == (1, 1)
        server_end.close()
        deadline = time.monotonic() + 10
        while open_connections(port) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (open_connections(port), open_connections(client_port)) == (0, 1)
    finally:
        for sock in (client, server_end, listener):
            sock.close()
