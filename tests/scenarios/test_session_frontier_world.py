"""The session world on the frontier tier, through the real sandbox: a test case's stored sessions say its tier,
one warm worker serves frontier and paper test cases in any order, and what the oracle and the diagnosis read
(RESULT, the stored state with its versions, the call trace with the If-Match a program sent, tool calls) comes
from the service of the test case's tier.

Every sandbox here has one worker, so a test that runs several jobs has them all served by one world.
"""

from __future__ import annotations

import json
import random

import pytest

from core.sandbox.harness import Job, Sandbox
from scenarios import get_scenario
from scenarios.base import canonical_json
from scenarios.session import ASSET
from scenarios.session.store import asset_data, parse_asset

SOURCE = "msk_portal"
SETUP = f'import requests\n\nBASE_URL = service_url()\nsrc1 = "{SOURCE}"\n'
PUT = "PUT /api/sessions/{source}/{type}/{id}"

ALL_PAGES = """\
ids, sizes, cursor = [], [], None
while True:
    page = requests.get(f"{BASE_URL}/api/sessions/{src1}/group", params={"cursor": cursor} if cursor else None).json()
    ids += [s["id"] for s in page["items"]]
    sizes.append(len(page["items"]))
    cursor = page["next"]
    if cursor is None:
        break
RESULT = [ids, sizes]
"""
FIRST_PAGE = """\
page = requests.get(f"{BASE_URL}/api/sessions/{src1}/group").json()
RESULT = [[s["id"] for s in page["items"]], [len(page["items"])]]
"""
# Reads the first session, then replaces its title with If-Match ETAG (an expression over `first`).
UPDATE = """\
first = requests.get(f"{BASE_URL}/api/sessions/{src1}/group").json()["items"][0]
r = requests.put(f"{BASE_URL}/api/sessions/{src1}/group/{first['id']}", json={**first["data"], "title": "renamed"},
                 headers={"If-Match": ETAG})
RESULT = [r.status_code, r.json()]
"""
RIGHT = UPDATE.replace("ETAG", """'"%d"' % first["version"]""")
STALE = UPDATE.replace("ETAG", """'"1"'""")  # what a program that takes every session to start at 1 sends
PAPER_UPDATE = """\
first = requests.get(f"{BASE_URL}/api/sessions/{src1}/group").json()[0]
r = requests.put(f"{BASE_URL}/api/sessions/{src1}/group/{first['id']}", json={**first["data"], "title": "renamed"})
RESULT = [r.status_code, r.text]
"""
LISTING = """\
import os
print(os.getppid())
RESULT = [requests.get(f"{BASE_URL}/api/sessions/{src1}/group").json()]
"""


def stored(n: int, version: int | None = None) -> list[dict]:
    """`n` group sessions of SOURCE (the first at `version`, when given), and one of another source."""
    out = [{"id": f"{0xa0 + i:024x}", "source": SOURCE, "type": "group", "data": {"title": f"s{i}", "members": []}}
           for i in range(n)]
    if version is not None and out:
        out[0]["version"] = version
    return out + [{"id": f"{0xff:024x}", "source": "tcga_portal", "type": "group", "data": {"title": "other"}}]


def case(sessions: list[dict], tier: str = "frontier") -> dict:
    return {"setup_code": SETUP, "assets": [{"name": ASSET, "kind": ASSET, "data": asset_data(sessions, tier),
                                             "meta": canonical_json({"count": len(sessions)})}]}


def state_of(sessions: list[dict], versions: bool = True) -> dict:
    """The snapshot of these stored sessions, untouched: with versions on the frontier tier (1 when none is named)."""
    return {s["id"]: {"source": s["source"], "type": s["type"], "data": s["data"],
                      **({"version": s.get("version", 1)} if versions else {})} for s in sessions}


def ids_of(sessions: list[dict]) -> list[str]:
    return [s["id"] for s in sessions if s["source"] == SOURCE]


@pytest.fixture(scope="module")
def box():
    with Sandbox(1) as sandbox:
        yield sandbox


def run(box: Sandbox, *jobs: tuple[str, dict]):
    """Each (program, test case) as its own job, in order on the one worker; every outcome ok."""
    outcomes = [box.run_untrusted([Job(i, "session", code, c)])[0] for i, (code, c) in enumerate(jobs)]
    for o in outcomes:
        assert o.status == "ok", (o.status, o.error)
    return outcomes


# ------------------------------------------------------------------------------------------- the asset


def test_the_asset_is_a_bare_list_on_the_paper_tier_and_names_any_other_tier():
    sessions = stored(2, version=3)
    assert asset_data(sessions) == canonical_json(sessions).encode()  # what every paper task stores
    assert parse_asset(asset_data(sessions)) == ("paper", sessions)
    assert json.loads(asset_data(sessions, "frontier")) == {"tier": "frontier", "sessions": sessions}
    assert parse_asset(asset_data(sessions, "frontier")) == ("frontier", sessions)
    for wrong in (b'{"tier": "gold", "sessions": []}', b'{"sessions": []}', b'{"tier": "frontier"}', b'"x"'):
        with pytest.raises(ValueError, match="tier"):
            parse_asset(wrong)


def test_scratch_sessions_of_a_frontier_case_stay_on_its_tier_with_their_versions():
    """`--mode explore`'s scratch world is drawn from a test case's assets: a frontier one stays a frontier one."""
    (asset,) = case(stored(3, version=4))["assets"]
    (scratch,) = get_scenario("session").scratch_assets([asset], random.Random(0))
    tier, sessions = parse_asset(scratch["data"])
    assert tier == "frontier" and [s.get("version") for s in sessions] == [4, None, None, None]
    assert {s["id"] for s in sessions}.isdisjoint(s["id"] for s in stored(3))


# ------------------------------------------------------------------------------------------------ paging


def test_following_next_gets_every_session_in_order_and_the_first_page_only_five(box):
    """The two RESULTs differ, so a mutant that reads the first page only is killed on this test case."""
    sessions = stored(7)
    every, first = run(box, (ALL_PAGES, case(sessions)), (FIRST_PAGE, case(sessions)))
    assert every.result == [ids_of(sessions), [5, 2]]
    assert first.result == [ids_of(sessions)[:5], [5]]
    assert every.state == first.state == state_of(sessions)


@pytest.mark.parametrize("n, sizes", [(0, [0]), (1, [1]), (5, [5]), (6, [5, 1])])
def test_a_listing_of_0_1_a_page_and_a_page_plus_one_sessions_pages_as_documented(box, n, sizes):
    """Exactly one page has `next` null: no empty page follows it."""
    sessions = stored(n)
    (outcome,) = run(box, (ALL_PAGES, case(sessions)))
    assert outcome.result == [ids_of(sessions), sizes]


# ---------------------------------------------------------------------------------------------- versions


def test_a_stale_if_match_is_412_and_changes_nothing_the_current_one_counts_a_version(box):
    """The first session is stored at version 3: a program that sends "1" is refused, one that sends the version
    it read updates it to 4, which the snapshot shows."""
    sessions = stored(2, version=3)
    stale, right = run(box, (STALE, case(sessions)), (RIGHT, case(sessions)))
    assert stale.result[0] == 412 and stale.state == state_of(sessions)
    assert right.result == [200, {"version": 4}]
    first = sessions[0]["id"]
    assert right.state == {**state_of(sessions), first: {**state_of(sessions)[first], "version": 4,
                                                         "data": {"title": "renamed", "members": []}}}


def test_a_fresh_session_is_at_version_1_and_the_right_update_makes_it_2(box):
    sessions = stored(2)
    (right,) = run(box, (RIGHT, case(sessions)))
    assert right.result == [200, {"version": 2}] and right.state[sessions[0]["id"]]["version"] == 2


# ------------------------------------------------------------------------------------------- both tiers


def test_one_worker_serves_frontier_paper_and_frontier_test_cases_each_on_its_tier(box):
    sessions = stored(7)
    frontier, paper, again = run(box, (LISTING, case(sessions)), (LISTING, case(sessions, "paper")),
                                 (LISTING, case(sessions)))
    assert len({o.output.strip() for o in (frontier, paper, again)}) == 1  # one worker's children
    paper_view = [{"id": s["id"], "data": s["data"], "source": s["source"], "type": s["type"]}
                  for s in sessions if s["source"] == SOURCE]
    assert paper.result == [paper_view] and paper.state == state_of(sessions, versions=False)
    for o in (frontier, again):
        (page,) = o.result
        assert page["items"] == [{**s, "version": 1} for s in paper_view[:5]] and isinstance(page["next"], str)
        assert o.state == state_of(sessions)


def test_a_batch_of_one_tier_and_a_group_over_both_give_every_program_its_own_outcome(box):
    """The builder's runs: a batch whose programs share their first statement (the world saved after it and
    restored for each), and a task's runs over test cases of both tiers in one group (the batch stops where the
    tier changes, and the rest run alone): every program gets what it gets alone."""
    sessions = stored(6, version=2)
    frontier, paper = case(sessions), case(sessions, "paper")
    alone = box.run_untrusted([Job(i, "session", code, frontier, record=False)
                               for i, code in enumerate([RIGHT, STALE, ALL_PAGES])])
    shared = box.run_batched([Job(i, "session", code, frontier, record=False, shared=1)
                              for i, code in enumerate([RIGHT, STALE])] + [Job(2, "session", ALL_PAGES, frontier,
                                                                               record=False)])
    assert [(o.status, o.result, o.state) for o in shared] == [(o.status, o.result, o.state) for o in alone]
    listing = 'RESULT = [requests.get(f"{BASE_URL}/api/sessions/{src1}/group").json()]\n'
    runs = [(listing, frontier), (listing, paper), (ALL_PAGES, frontier)]
    grouped = box.run_batched([Job(i, "session", code, c, group="task") for i, (code, c) in enumerate(runs)])
    single = box.run_untrusted([Job(i, "session", code, c) for i, (code, c) in enumerate(runs)])
    assert [(o.status, o.result, o.state) for o in grouped] == [(o.status, o.result, o.state) for o in single]
    assert isinstance(grouped[0].result[0], dict) and isinstance(grouped[1].result[0], list)


# ------------------------------------------------------------------------------------------------ traces


def test_the_trace_carries_the_if_match_a_frontier_program_sent_and_a_paper_trace_has_none(box):
    sessions = stored(2)
    bare = RIGHT.replace("""headers={"If-Match": '"%d"' % first["version"]}""", "")
    assert bare != RIGHT
    sent, missing, paper = run(box, (RIGHT, case(sessions)), (bare, case(sessions)),
                               (PAPER_UPDATE, case(sessions, "paper")))
    put = next(c for c in sent.trace if c["api"] == PUT)
    assert put["args"]["If-Match"] == '"1"' and put["result"]["status"] == 200
    assert missing.result[0] == 428
    assert "If-Match" not in next(c for c in missing.trace if c["api"] == PUT)["args"]
    assert paper.result == [200, ""]
    assert [c["api"] for c in paper.trace] == ["GET /api/sessions/{source}/{type}", PUT]
    assert set(paper.trace[1]["args"]) == {"source", "type", "id", "body"}


# ------------------------------------------------------------------------------------------------- tools


def test_tools_mode_updates_with_if_match_on_a_frontier_case(box):
    sessions = stored(2)
    where = {"source": SOURCE, "type": "group", "id": sessions[0]["id"]}
    calls = [{"name": "get_session", "arguments": where},
             {"name": "update_session", "arguments": {**where, "If-Match": '"1"', "body": {"title": "renamed"}}},
             {"name": "update_session", "arguments": {**where, "If-Match": '"1"', "body": {"title": "again"}}}]
    (o,) = box.run_untrusted([Job("tools", "session", "", case(sessions), calls=calls,
                                  submit=["r1['body']['version']", "r2['body']", "r3['status']"])])
    assert o.status == "ok", o.error
    assert o.result == [1, {"version": 2}, 412]
    assert o.state[sessions[0]["id"]] == {"source": SOURCE, "type": "group", "data": {"title": "renamed"},
                                          "version": 2}
    assert [c["args"].get("If-Match") for c in o.trace] == [None, '"1"', '"1"']


def test_a_reference_that_sends_if_match_replays_as_tool_calls_to_the_same_outcome(box):
    """`--model reference` in tools mode: the reference traced into tool calls (its If-Match among their
    arguments) and replayed gives its own RESULT and state."""
    frontier = case(stored(2, version=5))
    (program,) = run(box, (RIGHT, frontier))
    (traced,) = box.run_untrusted([Job("trace", "session", RIGHT, frontier, trace=True)])
    assert traced.status == "ok", traced.error
    update = next(c for c in traced.extra["calls"] if c["name"] == "update_session")
    assert update["arguments"]["If-Match"] == '"5"'
    (replayed,) = box.run_untrusted([Job("replay", "session", "", frontier, calls=traced.extra["calls"],
                                         submit=traced.extra["submit"])])
    assert replayed.status == "ok", replayed.error
    assert (replayed.result, replayed.state) == (program.result, program.state)
