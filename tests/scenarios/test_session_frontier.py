"""The session service's frontier tier (`scenarios.session.frontier`) against running instances on free loopback
ports (real processes, real SQLite files): paged listings and their cursors, versioned writes (ETag, If-Match,
412, 428), members as a sub-resource, bulk delete by filter, and the paper tier left exactly as it was.

What each test asserts is what the frontier's OpenAPI descriptions (and so `api_doc_frontier.md`) promise.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests

from scenarios.session import store
from scenarios.session.frontier import DEFAULT_PAGE, MAX_PAGE
from scenarios.session.server import ServiceProcess

ROOT = Path(__file__).resolve().parents[2]
T = 10  # seconds: a request's timeout, never a speed check


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("session-frontier") / "sessions.sqlite3")
    svc = ServiceProcess(db, tier="frontier").start()
    yield svc
    svc.stop()


@pytest.fixture(scope="module")
def paper_service(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("session-paper") / "sessions.sqlite3")
    svc = ServiceProcess(db).start()
    yield svc
    svc.stop()


def _reset(db_path: str, sessions=(), salt: str = "test") -> None:
    conn = store.connect(db_path)
    store.reset(conn, list(sessions), salt=salt)
    conn.close()


@pytest.fixture
def base(service):
    """The frontier service's sessions URL, with its database emptied before each test."""
    _reset(service.db_path)
    return service.url + "/api/sessions"


def new_id(base, source, type_, data) -> str:
    r = requests.post(f"{base}/{source}/{type_}", json=data, timeout=T)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def fill(base, n: int, source="msk_portal", type_="group") -> list[str]:
    return [new_id(base, source, type_, {"title": f"s{i}", "members": []}) for i in range(n)]


def get_page(base, params=None, source="msk_portal", type_="group", suffix="", body=None) -> dict:
    url = f"{base}/{source}/{type_}{suffix}"
    r = (requests.post(url, params=params, json=body, timeout=T) if body is not None
         else requests.get(url, params=params, timeout=T))
    assert r.status_code == 200, r.text
    page = r.json()
    assert list(page) == ["items", "next"]
    return page


def walk(base, limit=None, params=None, **kwargs) -> list[list[str]]:
    """Every page of a listing, followed by its cursors: the ids on each page."""
    pages, cursor = [], None
    while True:
        paging = {**({"limit": limit} if limit else {}), **({"cursor": cursor} if cursor else {})}
        page = get_page(base, {**(params or {}), **paging}, **kwargs)
        pages.append([s["id"] for s in page["items"]])
        cursor = page["next"]
        if cursor is None:
            return pages
        assert len(pages) <= 100, "the cursors never end"


def assert_error(r: requests.Response, status: int, words: str) -> None:
    """An error in the service's one format, its message naming what to do."""
    assert r.status_code == status, r.text
    body = r.json()
    assert list(body) == ["status", "error", "message", "path"] and body["status"] == status
    assert words in body["message"], body["message"]


# ------------------------------------------------------------------------------------------------ paging


@pytest.mark.parametrize("n, sizes", [
    (0, [0]), (1, [1]), (DEFAULT_PAGE, [DEFAULT_PAGE]), (DEFAULT_PAGE + 1, [DEFAULT_PAGE, 1]),
    (2 * DEFAULT_PAGE + 2, [DEFAULT_PAGE, DEFAULT_PAGE, 2]),
])
def test_a_listing_comes_in_pages_of_the_default_size_oldest_first_and_next_is_null_at_the_end(base, n, sizes):
    """A full last page has `next` null: no empty page follows exactly one page, or exactly two."""
    ids = fill(base, n)
    pages = walk(base)
    assert [len(p) for p in pages] == sizes
    assert [i for p in pages for i in p] == ids


def test_limit_sets_the_page_size_and_may_change_between_pages(base):
    ids = fill(base, 7)
    assert walk(base, limit=3) == [ids[0:3], ids[3:6], ids[6:]]
    assert walk(base, limit=MAX_PAGE) == [ids]
    first = get_page(base, {"limit": 2})
    second = get_page(base, {"limit": 4, "cursor": first["next"]})
    assert [s["id"] for s in second["items"]] == ids[2:6] and second["next"] is not None


def test_pages_show_each_session_with_its_version(base):
    sid = new_id(base, "msk_portal", "group", {"title": "t"})
    assert get_page(base)["items"] == [{"id": sid, "data": {"title": "t"}, "source": "msk_portal", "type": "group",
                                        "version": 1}]


def test_a_cursor_continues_after_its_page_when_sessions_are_deleted_added_and_updated_meanwhile(base):
    """As documented: deleted sessions are not answered (even the one the cursor came after), added ones come on
    a later page, an update moves none."""
    ids = fill(base, 8)
    first = get_page(base)
    assert [s["id"] for s in first["items"]] == ids[:5]
    last_seen, unseen = ids[4], ids[5]
    for sid in (last_seen, unseen):
        r = requests.delete(f"{base}/msk_portal/group/{sid}", headers={"If-Match": '"1"'}, timeout=T)
        assert r.status_code == 204
    added = new_id(base, "msk_portal", "group", {"title": "added"})
    updated = requests.put(f"{base}/msk_portal/group/{ids[6]}", json={"title": "changed"}, headers={"If-Match": '"1"'},
                           timeout=T)
    assert updated.status_code == 200
    second = get_page(base, {"cursor": first["next"]})
    assert [s["id"] for s in second["items"]] == [ids[6], ids[7], added]
    assert second["items"][0]["data"] == {"title": "changed"} and second["next"] is None
    # An earlier session deleted after its page was read changes nothing later either.
    assert requests.delete(f"{base}/msk_portal/group/{ids[0]}", headers={"If-Match": "1"}, timeout=T).status_code == 204
    assert [s["id"] for s in get_page(base, {"cursor": first["next"]})["items"]] == [ids[6], ids[7], added]


def test_query_and_fetch_page_over_the_matching_sessions_only(base):
    ids = [new_id(base, "msk_portal", "group", {"title": f"s{i}", "members": ["ana@x.org"] if i % 2 else []})
           for i in range(14)]
    matching = ids[1::2]  # 7 sessions
    query = {"field": "data.members", "value": "ana@x.org"}
    assert walk(base, params=query, suffix="/query") == [matching[:5], matching[5:]]
    assert walk(base, limit=4, suffix="/query/fetch", body={"data.members": {"$size": 0}}) == [ids[0:8:2],
                                                                                               ids[8::2]]


def test_the_same_state_and_requests_give_the_same_cursors(service, base):
    def run() -> list:
        _reset(service.db_path, salt="same")
        fill(base, 6)
        return [get_page(base, {"limit": 2})["next"], get_page(base)["next"],
                get_page(base, {"field": "data.title", "value": "s0", "limit": 1}, suffix="/query")["next"]]

    first = run()
    assert first == run() and first[0] != first[1]


def test_a_filter_written_in_another_key_order_is_the_same_listing(base):
    fill(base, 6)
    body = {"data.title": {"$ne": "x"}, "data.members": {"$size": 0}}
    page1 = get_page(base, suffix="/query/fetch", body=body)
    reordered = {"data.members": {"$size": 0}, "data.title": {"$ne": "x"}}
    page2 = get_page(base, {"cursor": page1["next"]}, suffix="/query/fetch", body=reordered)
    assert len(page2["items"]) == 1


def test_a_cursor_of_another_listing_is_400(base):
    fill(base, 6)
    fill(base, 6, type_="virtual_study")
    fill(base, 6, source="other_portal")
    cursor = get_page(base)["next"]
    query = {"field": "data.members", "value": "x", "cursor": cursor}
    for r in (
        requests.get(f"{base}/msk_portal/virtual_study", params={"cursor": cursor}, timeout=T),
        requests.get(f"{base}/other_portal/group", params={"cursor": cursor}, timeout=T),
        requests.get(f"{base}/msk_portal/group/query", params=query, timeout=T),
        requests.post(f"{base}/msk_portal/group/query/fetch", params={"cursor": cursor}, json={}, timeout=T),
    ):
        assert_error(r, 400, "belongs to another listing")
    fetched = get_page(base, {"limit": 2}, suffix="/query/fetch", body={"data.title": {"$ne": "s1"}})["next"]
    r = requests.post(f"{base}/msk_portal/group/query/fetch", params={"cursor": fetched},
                      json={"data.title": {"$ne": "s2"}}, timeout=T)
    assert_error(r, 400, "belongs to another listing")
    queried = get_page(base, {"field": "data.members", "value": "x", "limit": 1}, suffix="/query")
    assert queried["items"] == [] and queried["next"] is None


@pytest.mark.parametrize("cursor", ["", "abc", "%%%", "MQ", "NS4wMDAwMDAwMDAwMDAwMDAw", "ü"])
def test_a_malformed_or_forged_cursor_is_400(base, cursor):
    fill(base, 6)
    r = requests.get(f"{base}/msk_portal/group", params={"cursor": cursor}, timeout=T)
    assert r.status_code == 400 and "cursor" in r.json()["message"]


def test_a_tampered_cursor_is_400(base):
    import base64

    fill(base, 8)
    real = get_page(base, {"limit": 2})["next"]
    seq, tag = base64.urlsafe_b64decode(real + "=" * (-len(real) % 4)).decode().split(".")
    forged = base64.urlsafe_b64encode(f"{int(seq) + 2}.{tag}".encode()).decode().rstrip("=")
    assert_error(requests.get(f"{base}/msk_portal/group", params={"cursor": forged}, timeout=T), 400, "listing")


@pytest.mark.parametrize("limit", ["0", str(MAX_PAGE + 1), "-1", "x", "2.5"])
@pytest.mark.parametrize("how", ["list", "query", "fetch"])
def test_a_limit_out_of_range_is_400(base, limit, how):
    url = f"{base}/msk_portal/group"
    if how == "list":
        r = requests.get(url, params={"limit": limit}, timeout=T)
    elif how == "query":
        r = requests.get(url + "/query", params={"field": "data.title", "value": "x", "limit": limit}, timeout=T)
    else:
        r = requests.post(url + "/query/fetch", params={"limit": limit}, json={}, timeout=T)
    assert_error(r, 400, f"from 1 to {MAX_PAGE}")


# ---------------------------------------------------------------------------------------------- versions


def test_a_session_starts_at_version_1_and_an_update_with_the_right_if_match_makes_it_2(base):
    sid = new_id(base, "msk_portal", "main_session", {"title": "a"})
    url = f"{base}/msk_portal/main_session/{sid}"
    got = requests.get(url, timeout=T)
    assert got.json()["version"] == 1 and got.headers["ETag"] == '"1"'
    r = requests.put(url, json={"title": "b"}, headers={"If-Match": got.headers["ETag"]}, timeout=T)
    assert (r.status_code, r.json(), r.headers["ETag"]) == (200, {"version": 2}, '"2"')
    got = requests.get(url, timeout=T)
    assert got.json() == {"id": sid, "data": {"title": "b"}, "source": "msk_portal", "type": "main_session",
                          "version": 2}
    assert got.headers["ETag"] == '"2"'
    # The bare version is taken too; every accepted update counts, even one storing equal data.
    r = requests.put(url, json={"title": "b"}, headers={"If-Match": "2"}, timeout=T)
    assert (r.status_code, r.json()) == (200, {"version": 3})


def test_an_update_with_a_stale_if_match_is_412_and_without_one_428_changing_nothing(base):
    sid = new_id(base, "msk_portal", "main_session", {"title": "a"})
    url = f"{base}/msk_portal/main_session/{sid}"
    assert requests.put(url, json={"title": "b"}, headers={"If-Match": '"1"'}, timeout=T).status_code == 200
    assert_error(requests.put(url, json={"title": "c"}, headers={"If-Match": '"1"'}, timeout=T), 412,
                 "GET the session again")
    assert_error(requests.put(url, json={"title": "c"}, headers={"If-Match": "*"}, timeout=T), 412, "ETag")
    assert_error(requests.put(url, json={"title": "c"}, timeout=T), 428, "If-Match")
    got = requests.get(url, timeout=T).json()
    assert (got["data"], got["version"]) == ({"title": "b"}, 2)


def test_unknown_session_is_404_before_any_precondition_and_a_duplicate_is_409(base):
    url = f"{base}/msk_portal/group/0123456789abcdef01234567"
    assert_error(requests.put(url, json={"a": 1}, timeout=T), 404, "Session not found")
    assert_error(requests.delete(url, timeout=T), 404, "Session not found")
    a = new_id(base, "msk_portal", "group", {"n": 1})
    new_id(base, "msk_portal", "group", {"n": 2})
    r = requests.put(f"{base}/msk_portal/group/{a}", json={"n": 2}, headers={"If-Match": '"1"'}, timeout=T)
    assert_error(r, 409, "already holds this data")
    assert requests.get(f"{base}/msk_portal/group/{a}", timeout=T).json()["version"] == 1


def test_a_delete_needs_the_current_if_match(base):
    sid = new_id(base, "msk_portal", "group", {"title": "a"})
    url = f"{base}/msk_portal/group/{sid}"
    assert_error(requests.delete(url, timeout=T), 428, "If-Match")
    assert_error(requests.delete(url, headers={"If-Match": '"2"'}, timeout=T), 412, "ETag")
    r = requests.delete(url, headers={"If-Match": '"1"'}, timeout=T)
    assert (r.status_code, r.content) == (204, b"")
    assert requests.get(url, timeout=T).status_code == 404


def test_an_add_of_identical_data_keeps_the_stored_version(base):
    sid = new_id(base, "msk_portal", "group", {"title": "a"})
    assert requests.put(f"{base}/msk_portal/group/{sid}/members/ana@x.org", timeout=T).status_code == 201
    r = requests.post(f"{base}/msk_portal/group", json={"title": "a", "members": ["ana@x.org"]}, timeout=T)
    assert (r.status_code, r.json()) == (200, {"id": sid})
    assert requests.get(f"{base}/msk_portal/group/{sid}", timeout=T).json()["version"] == 2


# ----------------------------------------------------------------------------------------------- members


def test_members_are_added_once_listed_in_order_and_removed_each_change_bumping_the_version(base):
    sid = new_id(base, "msk_portal", "group", {"title": "a"})
    url = f"{base}/msk_portal/group/{sid}"
    r = requests.get(url + "/members", timeout=T)
    assert (r.status_code, r.json(), r.headers["ETag"]) == (200, [], '"1"')
    r = requests.put(url + "/members/ana@x.org", timeout=T)
    assert (r.status_code, r.json(), r.headers["ETag"]) == (201, {"version": 2}, '"2"')
    r = requests.put(url + "/members/ana@x.org", timeout=T)  # already a member: nothing changes
    assert (r.status_code, r.json(), r.headers["ETag"]) == (200, {"version": 2}, '"2"')
    assert requests.put(url + "/members/ben@x.org", timeout=T).json() == {"version": 3}
    assert requests.get(url + "/members", timeout=T).json() == ["ana@x.org", "ben@x.org"]
    # Stored in the data, so a field query on data.members finds the session.
    found = get_page(base, {"field": "data.members", "value": "ben@x.org"}, suffix="/query")["items"]
    assert [(s["id"], s["data"], s["version"]) for s in found] == [
        (sid, {"title": "a", "members": ["ana@x.org", "ben@x.org"]}, 3)]
    r = requests.delete(url + "/members/ana@x.org", timeout=T)
    assert (r.status_code, r.content, r.headers["ETag"]) == (204, b"", '"4"')
    assert requests.get(url + "/members", timeout=T).json() == ["ben@x.org"]
    assert_error(requests.delete(url + "/members/ana@x.org", timeout=T), 404, "not a member")
    assert requests.get(url, timeout=T).json()["version"] == 4


def test_members_endpoints_compare_addresses_ignoring_case_and_keep_them_as_written(base):
    sid = new_id(base, "msk_portal", "group", {"title": "a", "members": ["Ana.Lee@X.org", "ben@x.org"]})
    url = f"{base}/msk_portal/group/{sid}"
    r = requests.put(url + "/members/ana.lee@x.org", timeout=T)  # the same person: nothing changes
    assert (r.status_code, r.json()) == (200, {"version": 1})
    r = requests.delete(url + "/members/BEN@X.ORG", timeout=T)
    assert r.status_code == 204 and requests.get(url + "/members", timeout=T).json() == ["Ana.Lee@X.org"]
    assert requests.put(url + "/members/Cleo@x.org", timeout=T).status_code == 201
    assert requests.get(url + "/members", timeout=T).json() == ["Ana.Lee@X.org", "Cleo@x.org"]
    # The filters compare exactly, as stored.
    assert get_page(base, {"field": "data.members", "value": "ana.lee@x.org"}, suffix="/query")["items"] == []


def test_members_null_are_no_members(base):
    sid = new_id(base, "msk_portal", "group", {"title": "a", "members": None})
    url = f"{base}/msk_portal/group/{sid}"
    assert requests.get(url + "/members", timeout=T).json() == []
    assert_error(requests.delete(url + "/members/ana@x.org", timeout=T), 404, "not a member")
    r = requests.put(url + "/members/ana@x.org", timeout=T)
    assert (r.status_code, r.json()) == (201, {"version": 2})
    assert requests.get(url, timeout=T).json()["data"] == {"title": "a", "members": ["ana@x.org"]}


def test_a_member_change_makes_an_update_read_before_it_stale(base):
    sid = new_id(base, "msk_portal", "group", {"title": "a", "members": []})
    url = f"{base}/msk_portal/group/{sid}"
    etag = requests.get(url, timeout=T).headers["ETag"]
    assert requests.put(url + "/members/ana@x.org", timeout=T).status_code == 201
    assert_error(requests.put(url, json={"title": "b", "members": []}, headers={"If-Match": etag}, timeout=T), 412,
                 "GET the session again")
    assert requests.get(url + "/members", timeout=T).json() == ["ana@x.org"]


def test_member_writes_need_no_if_match_but_check_one_that_is_sent(base):
    sid = new_id(base, "msk_portal", "group", {"title": "a"})
    url = f"{base}/msk_portal/group/{sid}/members"
    assert_error(requests.put(url + "/ana@x.org", headers={"If-Match": '"7"'}, timeout=T), 412, "ETag")
    assert requests.put(url + "/ana@x.org", headers={"If-Match": '"1"'}, timeout=T).status_code == 201
    assert_error(requests.delete(url + "/ana@x.org", headers={"If-Match": '"1"'}, timeout=T), 412, "ETag")
    assert requests.get(url, timeout=T).json() == ["ana@x.org"]


def test_members_of_an_unknown_session_are_404_and_members_that_are_not_a_list_409(base):
    missing = f"{base}/msk_portal/group/0123456789abcdef01234567/members"
    for r in (requests.get(missing, timeout=T), requests.put(missing + "/a@x.org", timeout=T),
              requests.delete(missing + "/a@x.org", timeout=T)):
        assert_error(r, 404, "Session not found")
    sid = new_id(base, "msk_portal", "group", {"members": "ana@x.org"})
    url = f"{base}/msk_portal/group/{sid}/members"
    for r in (requests.get(url, timeout=T), requests.put(url + "/a@x.org", timeout=T),
              requests.delete(url + "/ana@x.org", timeout=T)):
        assert_error(r, 409, "not a list")
    assert requests.get(f"{base}/msk_portal/group/{sid}", timeout=T).json()["version"] == 1


def test_a_member_change_that_would_duplicate_another_session_is_409(base):
    new_id(base, "msk_portal", "group", {"members": ["ana@x.org"]})
    sid = new_id(base, "msk_portal", "group", {"members": []})
    assert_error(requests.put(f"{base}/msk_portal/group/{sid}/members/ana@x.org", timeout=T), 409, "already holds")
    assert requests.get(f"{base}/msk_portal/group/{sid}", timeout=T).json()["data"] == {"members": []}


# ------------------------------------------------------------------------------------------- bulk delete


def test_bulk_delete_deletes_every_match_of_this_source_and_type_and_counts_them(base):
    ids = [new_id(base, "msk_portal", "group", {"n": n}) for n in range(5)]
    other = new_id(base, "msk_portal", "virtual_study", {"n": 4})
    url = f"{base}/msk_portal/group/query/delete"
    r = requests.post(url, json={"data.n": {"$gte": 2}}, timeout=T)
    assert (r.status_code, r.json()) == (200, {"deleted": 3})
    assert [s["id"] for s in get_page(base)["items"]] == ids[:2]
    assert requests.post(url, json={"data.n": {"$gte": 2}}, timeout=T).json() == {"deleted": 0}
    assert requests.post(url, json={}, timeout=T).json() == {"deleted": 2}
    assert get_page(base)["items"] == []
    assert [s["id"] for s in get_page(base, type_="virtual_study")["items"]] == [other]


def test_bulk_delete_with_an_invalid_filter_is_400_and_deletes_nothing(base):
    fill(base, 3)
    url = f"{base}/msk_portal/group/query/delete"
    assert_error(requests.post(url, json={"data.title": {"$bogus": 1}}, timeout=T), 400, "$bogus")
    assert_error(requests.post(url, data=b"{nope", headers={"Content-Type": "application/json"}, timeout=T), 400,
                 "not valid JSON")
    assert len(get_page(base)["items"]) == 3


# ------------------------------------------------------------------------------------------------- store


def test_a_reset_restores_the_stored_versions_and_the_snapshots_of_both_tiers(service, base):
    _reset(service.db_path, [
        {"id": "a" * 24, "source": "msk_portal", "type": "group", "data": {"title": "x"}, "version": 3},
        {"id": "b" * 24, "source": "msk_portal", "type": "group", "data": {"title": "y"}},
    ])
    assert [s["version"] for s in get_page(base)["items"]] == [3, 1]
    url = f"{base}/msk_portal/group/{'a' * 24}"
    assert requests.put(url, json={"title": "z"}, headers={"If-Match": '"3"'}, timeout=T).json() == {"version": 4}
    conn = store.connect(service.db_path)
    try:
        assert store.snapshot(conn, versions=True) == {
            "a" * 24: {"source": "msk_portal", "type": "group", "data": {"title": "z"}, "version": 4},
            "b" * 24: {"source": "msk_portal", "type": "group", "data": {"title": "y"}, "version": 1}}
        # The paper tier's snapshot is what it always was: no version.
        assert store.snapshot(conn) == {"a" * 24: {"source": "msk_portal", "type": "group", "data": {"title": "z"}},
                                        "b" * 24: {"source": "msk_portal", "type": "group", "data": {"title": "y"}}}
        dumped = store.dump(conn)
        assert requests.put(url, json={"title": "w"}, headers={"If-Match": '"4"'}, timeout=T).status_code == 200
        store.load(conn, dumped)
        assert store.snapshot(conn, versions=True)["a" * 24]["version"] == 4
    finally:
        conn.close()
    _reset(service.db_path, [{"id": "a" * 24, "source": "msk_portal", "type": "group", "data": {"title": "x"}}])
    assert requests.get(url, timeout=T).json()["version"] == 1


def test_a_database_made_before_versions_opens_with_every_session_at_version_1(tmp_path):
    import sqlite3

    path = str(tmp_path / "old.sqlite3")
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE sessions (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, source TEXT NOT NULL,
                               type TEXT NOT NULL, checksum TEXT NOT NULL, data TEXT NOT NULL,
                               UNIQUE (source, type, checksum));
        INSERT INTO sessions (id, source, type, checksum, data) VALUES ('x', 'src', 'group', 'c', '{"t": 1}');
    """)
    old.commit()
    old.close()
    conn = store.connect(path)
    try:
        assert store.get_session(conn, "src", "group", "x", versions=True)["version"] == 1
        assert store.update_session(conn, "src", "group", "x", {"t": 2}, expected=1) == 2
    finally:
        conn.close()


# --------------------------------------------------------------------------------------- documentation


def test_the_frontier_openapi_has_every_endpoint_and_requires_if_match_on_session_writes(service):
    spec = requests.get(f"{service.url}/openapi.json", timeout=T).json()
    root = "/api/sessions/{source}/{type}"
    ops = {(m.upper(), p) for p, methods in spec["paths"].items() for m in methods}
    assert ops == {("POST", root), ("GET", root), ("GET", root + "/query"), ("POST", root + "/query/fetch"),
                   ("POST", root + "/query/delete"), ("GET", root + "/{id}"), ("PUT", root + "/{id}"),
                   ("DELETE", root + "/{id}"), ("GET", root + "/{id}/members"),
                   ("PUT", root + "/{id}/members/{email}"), ("DELETE", root + "/{id}/members/{email}"),
                   ("GET", "/info")}

    def if_match(method, path):
        return [p["required"] for p in spec["paths"][path][method].get("parameters", []) if p["name"] == "If-Match"]

    assert if_match("put", root + "/{id}") == if_match("delete", root + "/{id}") == [True]
    assert if_match("put", root + "/{id}/members/{email}") == [False]
    for path in (root, root + "/query", root + "/query/fetch"):
        method = "post" if path.endswith("fetch") else "get"
        limit = next(p for p in spec["paths"][path][method]["parameters"] if p["name"] == "limit")
        assert limit["schema"]["default"] == DEFAULT_PAGE and limit["schema"]["maximum"] == MAX_PAGE
    assert not any("422" in op["responses"] for methods in spec["paths"].values() for op in methods.values())


def test_checked_in_frontier_api_doc_matches_the_served_openapi(service):
    from scenarios.session.doc import DOC_PATHS, render_api_doc

    served = requests.get(f"{service.url}/openapi.json", timeout=T).json()
    text = DOC_PATHS["frontier"].read_text()
    assert text == render_api_doc(served, tier="frontier"), (
        "scenarios/session/api_doc_frontier.md is stale: run `python -m scenarios.session api-doc --tier frontier "
        "--write`")
    assert text == render_api_doc(tier="frontier")


def test_the_frontier_doc_is_a_reference_without_ready_made_calls():
    """The paper doc's cheat sheet of `requests` lines does not come with the frontier doc: it shows no more code
    than the paper doc's introduction already does (one example URL)."""
    from scenarios.session.doc import DOC_PATHS

    paper, frontier = (DOC_PATHS[t].read_text() for t in ("paper", "frontier"))
    assert "```" not in frontier and "## The calls" not in frontier
    assert frontier.count("requests.") < paper.count("requests.")
    for semantic in ("`limit`", "cursor", "`version`", "If-Match", "412", "428", "/members", "/query/delete"):
        assert semantic in frontier, semantic


def test_api_doc_command_prints_the_frontier_doc():
    from scenarios.session.doc import DOC_PATHS

    r = subprocess.run([sys.executable, "-m", "scenarios.session", "api-doc", "--tier", "frontier"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == DOC_PATHS["frontier"].read_text()


def test_an_unknown_tier_is_refused_naming_the_tiers(tmp_path):
    from scenarios.session.app import create_app

    for make in (lambda: create_app(":memory:", tier="hard"), lambda: ServiceProcess(str(tmp_path / "x"), tier="hard")):
        with pytest.raises(ValueError, match="paper, frontier"):
            make()


# ------------------------------------------------------------------------------------- the paper tier stays


def test_the_paper_tier_answers_as_before(paper_service):
    """Bare lists, no versions, no ETag, unconditional writes, and none of the frontier's routes."""
    _reset(paper_service.db_path)
    base = paper_service.url + "/api/sessions"
    ids = fill(base, DEFAULT_PAGE + 2)
    r = requests.get(f"{base}/msk_portal/group", params={"limit": 1}, timeout=T)
    assert r.status_code == 200 and [s["id"] for s in r.json()] == ids
    assert set(r.json()[0]) == {"id", "data", "source", "type"}
    got = requests.get(f"{base}/msk_portal/group/{ids[0]}", timeout=T)
    assert "ETag" not in got.headers and "version" not in got.json()
    r = requests.put(f"{base}/msk_portal/group/{ids[0]}", json={"title": "b"}, timeout=T)
    assert (r.status_code, r.content) == (200, b"")
    assert requests.delete(f"{base}/msk_portal/group/{ids[1]}", timeout=T).status_code == 204
    assert requests.put(f"{base}/msk_portal/group/{ids[2]}/members/a@x.org", timeout=T).status_code in (404, 405)
    assert requests.post(f"{base}/msk_portal/group/query/delete", json={}, timeout=T).status_code in (404, 405)
    assert len(requests.get(f"{base}/msk_portal/group", timeout=T).json()) == DEFAULT_PAGE + 1


def test_the_paper_tier_serves_the_openapi_its_api_doc_was_made_from(paper_service):
    from scenarios.session.doc import DOC_PATH, render_api_doc

    served = requests.get(f"{paper_service.url}/openapi.json", timeout=T).json()
    assert "If-Match" not in str(served) and "cursor" not in str(served)
    assert DOC_PATH.read_text() == render_api_doc(served)
