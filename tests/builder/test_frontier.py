"""The frontier tier (`--tier frontier`): programs that read the world, built by `builder/frontier.py` from the
session scenario's steps (`scenarios/session/tasks.py`), end to end through the real pipeline and sandbox."""

from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from builder import facts, frontier
from builder.config import BuildConfig
from builder.mutate import analyse_mutants
from builder.pipeline import build, capture_oracles, fuzz
from builder.stats import table1
from evaluate.data import load_tasks
from scenarios import get_scenario
from evaluate.sandbox import Limits, Sandbox
from scenarios.grammar import BRANCHES, MUST_KILL
from scenarios.session.frontier import DEFAULT_PAGE, MAX_PAGE
from scenarios.session import tasks
from scenarios.session.store import parse_asset
from tests.frontier_support import content_hash, pass_at_1, samples_file

ROOT = Path(__file__).resolve().parents[2]
FRONTIER = dict(scenarios=["session"], tier="frontier", n=6, seed=11, created_at="2026-01-01", workers=2)


@pytest.fixture(scope="module")
def programs():
    session = get_scenario("session")
    return [frontier.generate(session, random.Random(seed)) for seed in range(120)]


@pytest.fixture(scope="module")
def frontier_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("frontier") / "stateeval"
    report = build(BuildConfig(out=str(out), **FRONTIER))
    return out, report


def test_the_same_draw_gives_the_same_program_and_words():
    session = get_scenario("session")
    a, b = (frontier.generate(session, random.Random(7)) for _ in range(2))
    assert a.reference_code() == b.reference_code()
    for variant in ("natural", "steps", "vague"):
        assert a.render(variant, random.Random(1)).text == b.render(variant, random.Random(1)).text
    assert a.population("large", random.Random(3)).assets == b.population("large", random.Random(3)).assets


def test_programs_combine_every_construct_and_parse(programs):
    kinds = Counter(k for p in programs for k in p.constructs())
    assert set(kinds) == {"lookup", "loop", "aggregate", "recovery", "bulk"}
    levers = Counter(lever for p in programs for lever in p.levers())
    assert {"pagination", "versions", "lookups", "loops", "aggregates", "recovery"} <= set(levers)
    for p in programs:
        ast.parse(p.reference_code())
        assert p.reference_code().rstrip().splitlines()[-1].startswith("RESULT = [")


def test_every_variant_states_every_fact(programs):
    for p in programs:
        required = facts.required(p)
        assert any(f.kind == "result" for f in required)
        for variant in ("natural", "steps", "vague"):
            rendered = p.render(variant, random.Random(0))
            assert facts.missing(rendered.text, required, rendered.refs) == [], (variant, rendered.text)
            assert "`_" not in rendered.text, rendered.text  # no address the setup block does not define


def test_a_text_that_drops_a_construct_fails_the_fact_check(programs):
    p = next(p for p in programs if "aggregate" in p.constructs())
    rendered = p.render("natural", random.Random(0))
    sentences = rendered.text.split(". ")
    cut = ". ".join(s for s in sentences if "work out" not in s)  # the aggregate's sentence gone
    assert facts.missing(cut, facts.required(p), rendered.refs)


def test_mutants_are_programs_and_cover_each_construct(programs):
    operators = Counter()
    for p in programs:
        reference = p.reference_code()
        for operator, change, code, items in p.mutants():
            assert code != reference and " -> " in change
            ast.parse(code)
            operators[operator] += 1
            if operator == "result":
                assert items is not None
    assert {"first_page", "last_page", "one_big_page", "first_match", "tie_break", "predicate", "aggregate",
            "stale_version", "stale_data", "no_retry", "retry_stale", "first_try", "never_create", "always_create",
            "collect_all", "missing_field", "null_field", "exact_case", "refused_write", "wrong_item",
            "drop_write"} <= set(operators)
    assert {op for op in operators if op in MUST_KILL} == set(operators) - {"result", "argument"}


def test_every_recovery_declares_a_mutant_for_each_of_its_branches(programs):
    """A rename retried on 412 has two branches (the first try succeeds; it is refused and the recovery runs), and
    an ensure two (the session is there; it is missing): each recovery step declares the mutant that only an input
    taking each branch kills, so the build's mutation analysis checks that some test case takes every branch."""
    recoveries = [step for p in programs for step in p.plan.steps if step.kind == "recovery"]
    renames = [step for step in recoveries if "status_code == 412" in step.code]
    assert len(renames) > 10 and len(recoveries) > len(renames)
    for step in recoveries:
        declared = {m.operator for m in step.mutations} & set(BRANCHES)
        assert declared in ({"first_try", "no_retry"}, {"never_create", "always_create"}), step.code


def _sessions(state, type_):
    _, sessions = parse_asset(state.assets["sessions"].data)
    return [s for s in sessions if s["source"] == state.vars["src1"].value and s["type"] == type_]


def test_what_each_branch_of_a_recovery_writes_shows_on_some_test_case(programs):
    """A branch taken is not enough: what it writes must show at the end. Where an ensure finds its session, that
    session lacks the member it adds (`original`, `large`) or already lists it (`page+1`); a bulk delete never
    deletes the session found first or ensured; and where the loop leaves the renamed session alone (`none`), the
    loop's last session has its version, so that a first try sent there lands rather than being refused."""
    ensures = renames = bulks = 0
    for p in programs:
        first = p.plan.steps[0]
        type_ = first.code.split("every_session(")[1].split("_url")[0]
        bulk = next((step for step in p.plan.steps if step.kind == "bulk"), None)
        for profile in p.plan.profiles:
            state = p.population(profile, random.Random(6))
            coll = _sessions(state, type_)
            title = state.vars["title1"].value if "title1" in state.vars else None
            target = next((s for s in coll if s["data"]["title"] == title), None)
            if "match1 = " in first.code:
                email = first.code.split("/members/{")[1].split("}")[0]
                if target is not None:
                    ensures += 1
                    listed = any(m.lower() == state.vars[email].value.lower()
                                 for m in target["data"].get("members") or [])
                    assert listed == (profile == "page+1"), (profile, target)
            by_title = "title1" in first.code  # the session found first (or ensured) is the one titled `title1`
            if bulk is not None and by_title and target is not None and f"{{{type_}_url}}/query/delete" in bulk.code:
                bulks += 1
                address = state.vars[bulk.code.split("re.escape(")[1].split(")")[0]].value
                assert target["data"]["owner"].lower() != address.lower(), (profile, target)
            if profile == "none" and "status_code == 412" in p.reference_code() and by_title:
                renames += 1
                assert coll[-1] is not target and coll[-1]["version"] == target["version"]
    assert ensures > 50 and renames > 10 and bulks > 30, (ensures, renames, bulks)


def test_texts_say_how_an_address_is_written_and_how_people_are_counted(programs):
    """Where a session may already list the new owner spelled otherwise, the text says which spelling the owner
    field gets (the setup block's); where the task counts people, it says that addresses differing only in case
    are one person. Both are facts of the task, so a text that drops them fails the fact check."""
    said = {"as the setup block spells it": 0, "differ only in letter case": 0}
    for p in programs:
        required = facts.required(p)
        for phrase in said:
            if not any(phrase in f.forms for f in required):
                continue
            said[phrase] += 1
            for variant in ("natural", "steps", "vague"):
                rendered = p.render(variant, random.Random(0))
                assert phrase in rendered.text, (variant, rendered.text)
                assert facts.missing(rendered.text.replace(phrase, "as written"), required, rendered.refs)
    assert all(n >= 5 for n in said.values()), said


def test_populations_follow_their_profile(programs):
    p = programs[0]
    coll_type = p.plan.steps[1].code.split("every_session(")[1].split("_url")[0]
    sizes = {}
    for profile in p.plan.profiles:
        state = p.population(profile, random.Random(5))
        tier, sessions = parse_asset(state.assets["sessions"].data)
        assert tier == "frontier"
        src = state.vars["src1"].value
        sizes[profile] = sum(s["source"] == src and s["type"] == coll_type for s in sessions)
        assert len({s["id"] for s in sessions}) == len(sessions)
        assert all(1 <= s["version"] <= 4 for s in sessions)
    assert sizes["page"] == DEFAULT_PAGE and sizes["page+1"] == DEFAULT_PAGE + 1
    assert sizes["large"] in (MAX_PAGE + 1, MAX_PAGE + 2)  # and a twin (below) where the loop's body makes one


def _collection(state, type_):
    _, sessions = parse_asset(state.assets["sessions"].data)
    return [s["data"] for s in sessions if s["source"] == state.vars["src1"].value and s["type"] == type_]


def test_the_world_holds_what_real_stores_hold(programs):
    """Addresses in another case, members null or missing, and twins: a session the loop's body would change
    next to a copy of it as the change would leave it (so the service refuses the change with 409)."""
    spelled = nulls = missing = twins = 0
    for p in programs:
        state = p.population("original", random.Random(2))
        _, sessions = parse_asset(state.assets["sessions"].data)
        named = {v.value.lower() for k, v in state.vars.items() if k.startswith("email")}
        for s in sessions:
            written = [s["data"]["owner"], *(s["data"].get("members") or [])]
            spelled += any(a.lower() in named and a not in {v.value for v in state.vars.values()} for a in written)
            nulls += "members" in s["data"] and s["data"]["members"] is None
            missing += "members" not in s["data"]
        loop = next(step for step in p.plan.steps if step.kind == "loop")
        if "changed1.append(s[\"id\"])" in loop.code and "/members/" in loop.code:
            type_ = loop.code.split("every_session(")[1].split("_url")[0]
            coll = _collection(state, type_)
            pairs = [(a, b) for a, b in zip(coll, coll[1:])
                     if {k: v for k, v in a.items() if k != "members"} == {k: v for k, v in b.items() if k != "members"}
                     and len(a.get("members") or []) != len(b.get("members") or [])]
            twins += bool(pairs)
    assert spelled > 50 and nulls > 20 and missing > 20 and twins > 20


def test_a_second_loop_has_names_and_mutants_of_its_own(programs):
    """Two loops in one program: the second's session, answer and fresh read are `s2`, `r2`, `current2`, and every
    mutation of either loop names one place in the program (none skipped as not unique)."""
    twice = [p for p in programs if "changed2 = []" in p.reference_code()]
    assert len(twice) > 60
    for p in twice:
        second = next(step for step in p.plan.steps if "changed2 = []" in step.code)
        assert "for s2 in every_session(" in second.code and not re.search(r"\b(s|r|current)\b[\[.]", second.code)
        changes = [change for _, change, _, _ in p.mutants()]
        assert any("s2" in change for change in changes) and not [n for n in p.notes if "not unique" in n]
    # the values a second loop carries are its own: they count as bindings of their own
    assert sum(p.binding_count() for p in twice) / len(twice) > 5


def test_an_owner_leaving_hands_over_or_deletes(programs):
    """The offboarding loop's sessions: some have other members (the owner sometimes listed first, in another
    case), some have none (empty, null, missing, or only the owner in another case), in the original profile."""
    leaving = [p for p in programs if any("others = " in s.code and "min(others" not in s.code for s in p.plan.steps)]
    assert len(leaving) >= 5
    for p in leaving:
        step = next(step for step in p.plan.steps if "others = " in step.code and "min(others" not in step.code)
        type_ = step.code.split("every_session(")[1].split("_url")[0]
        name = step.code.split("same_person(m, ")[1].split(")")[0]
        state = p.population("original", random.Random(4))
        if name not in state.vars:
            continue  # the owner of the session found first: no setup variable names it
        owner = state.vars[name].value.lower()
        owned = [x for x in _collection(state, type_) if x["owner"].lower() == owner]
        others = [[m for m in x.get("members") or [] if m.lower() != owner] for x in owned]
        assert any(len(o) >= 2 for o in others) and any(not o for o in others), owned
        assert any(m.lower() == owner and m != state.vars[name].value for x in owned for m in x.get("members") or [])


def test_a_spread_loop_decides_on_counts_its_own_handovers_move(programs):
    """The spread loop hands each session the owner leaves to the other member who owns the fewest of the
    collection at that moment: in the original and large profiles the population makes the task's rule pick
    otherwise than counts read once before the loop, addresses compared exactly, the other end of a tie, the most,
    and the first member; and each of those is a mutant of the program that the build must kill."""
    spreading = [p for p in programs if any("min(others" in s.code for s in p.plan.steps)]
    assert len(spreading) >= 5
    for p in spreading:
        step = next(step for step in p.plan.steps if "min(others" in step.code)
        assert "feedback" in step.levers
        assert {"static_tally", "exact_case", "tie_break", "aggregate", "wrong_item"} <= {m.operator for m in step.mutations}
        type_ = step.code.split("every_session(")[1].split("_url")[0]
        name = step.code.split("same_person(m, ")[1].split(")")[0]
        for profile in ("original", "large"):
            state = p.population(profile, random.Random(5))
            if name not in state.vars:
                break  # the owner of the session found first: no setup variable names it
            coll = [{"owner": x["owner"], "members": x.get("members")} for x in _collection(state, type_)]
            owner = state.vars[name].value
            right = tasks._spread(coll, owner)
            assert len(right) >= 2, coll
            assert all(tasks._spread(coll, owner, rule) != right for rule in tasks.SPREAD_RULES), (profile, coll)


def test_a_frontier_build_keeps_its_tasks_and_its_reference_passes(frontier_build, tmp_path):
    out, report = frontier_build
    tasks, manifest = load_tasks(str(out))
    assert manifest["config"]["tier"] == "frontier" and manifest["config"]["difficulty"] == {"tier": "frontier"}
    assert "config_name: frontier" in (out / "README.md").read_text()
    assert len(tasks) >= 5 and report["mutation"]["session"]["score"] == 1.0
    for t in tasks:
        assert [c.name for c in t.test_cases[:6]] == ["original", "none", "single", "page", "page+1", "large"]
        assert t.api_doc.startswith("# Session Service API") and "If-Match" in t.api_doc
        assert t.num_api_calls == len(t.api_calls) == len(json.loads(t.test_cases[0].trace)["calls"])
        assert get_scenario("session").task_tier(t) == "frontier"
    rows = table1(tasks, frontier=True)
    assert rows["session"]["api_calls"]["mean"] >= 7 and rows["session"]["pair_coverage"] is None
    assert pass_at_1(out, tmp_path / "code", "--model", "reference", "--mode", "code") == 1.0
    # tools mode replays the reference call by call, a turn each: two tasks here, every task under e2e (below)
    assert pass_at_1(out, tmp_path / "tools", "--model", "reference", "--mode", "tools", "--limit", "2") == 1.0


@pytest.mark.e2e
def test_the_reference_passes_every_task_of_a_frontier_build_in_tools_mode(frontier_build, tmp_path):
    assert pass_at_1(frontier_build[0], tmp_path, "--model", "reference", "--mode", "tools") == 1.0


def test_the_same_seed_gives_the_same_bytes(frontier_build, tmp_path):
    out, _ = frontier_build
    build(BuildConfig(out=str(tmp_path / "again"), **FRONTIER))
    assert content_hash(tmp_path / "again") == content_hash(out)


def test_a_wrong_program_fails_where_the_world_says_so(frontier_build, tmp_path):
    """Only the first page of every listing: a program a model writes when it skips the paging rule."""
    out, _ = frontier_build
    tasks, _ = load_tasks(str(out))
    first_page = {t.task_id: t.reference_program.replace('        if page["next"] is None:\n            return sessions\n',
                                                         "        return sessions\n") for t in tasks}
    samples = samples_file(tmp_path / "first-page.jsonl", first_page)
    assert pass_at_1(out, tmp_path / "scores", "--samples", str(samples)) == 0.0


@pytest.mark.parametrize("argv, message", [
    (["--tier", "frontier", "--scenarios", "bank"], "no frontier tier yet"),
    (["--tier", "frontier", "--scenarios", "session", "--translator", "openai:gpt-4.1"], "template translator"),
    (["--tier", "hard"], "invalid choice"),
])
def test_bad_tier_settings_are_refused_in_one_line(argv, message, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "builder", *argv, "--out", str(tmp_path / "x")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=Limits(timeout_s=20)) as sb:
        yield sb


def _refused(case) -> bool:
    """Whether the reference's trace on this test case holds an update refused with 412: the rename's first try
    (nothing else the reference writes is ever stale)."""
    return any(c["api"] == "PUT /api/sessions/{source}/{type}/{id}" and c["result"]["status"] == 412
               for c in json.loads(case.trace)["calls"])


def test_a_rename_whose_first_try_never_succeeds_is_dropped_as_an_uncovered_branch(sandbox, monkeypatch):
    """Every branch of a recovery must be taken by some test case. With populations in which the loop before a
    rename always changes the renamed session, every first try is refused (412): the mutant that writes the first
    try wrong survives every test case and probe, and the build drops the task, counted as `uncovered_branch`.
    The scenario's own populations leave the session alone in the `none` profile: the same programs are kept, and
    their test cases take both branches."""
    config = BuildConfig(scenarios=["session"], tier="frontier", n=2, seed=3, created_at="2026-01-01", mutants=4,
                         probes=2, workers=2)
    always_stale = lambda pop, rng, profile, found, looped: tasks._shape_stale(pop, rng, "original", found, looped)
    monkeypatch.setattr(tasks, "_shape_untouched", always_stale)
    rejections = Counter()
    drafts = capture_oracles(fuzz(config, "session", rejections)[0], sandbox, rejections)
    assert len(drafts) == 2 and all("if r.status_code == 412" in d.program.reference_code() for d in drafts)
    # one rename after a loop over the found session's owner's sessions, one after a loop on a setup address
    assert sum('found1["data"]["owner"])' in d.program.reference_code() for d in drafts) == 1
    assert all(_refused(c) for d in drafts for c in d.cases)
    assert analyse_mutants(drafts, sandbox, config, rejections) == []
    uncovered = {k: n for k, n in rejections.items() if k.startswith("session: uncovered_branch (")}
    assert sum(uncovered.values()) == 2 and all("first_try:" in k for k in uncovered), rejections

    monkeypatch.undo()
    rejections = Counter()
    drafts = capture_oracles(fuzz(config, "session", rejections)[0], sandbox, rejections)
    assert len(analyse_mutants(drafts, sandbox, config, rejections)) == 2 and not rejections, rejections
    for d in drafts:
        assert {_refused(c) for c in d.cases} == {True, False}, [(c.name, _refused(c)) for c in d.cases]
