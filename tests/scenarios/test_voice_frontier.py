"""The voice scenario's frontier tier: programs over the speech platform (`scenarios/voice/tasks.py`), built and
scored end to end through the real pipeline and sandbox."""

from __future__ import annotations

import ast
import json
import random
from collections import Counter

import pytest

from builder import facts, frontier
from builder.config import BuildConfig
from builder.pipeline import build
from core.records import load_tasks
from scenarios import get_scenario
from scenarios.voice import tasks
from scenarios.voice.platform import AGES, DEFAULT_PAGE_SIZE, HISTORY_PAGE_SIZE
from tests.frontier_support import content_hash, pass_at_1, samples_file

FRONTIER = dict(scenarios=["voice"], tier="frontier", n=6, seed=5, created_at="2026-01-01", workers=2)


@pytest.fixture(scope="module")
def programs():
    voice = get_scenario("voice")
    return [frontier.generate(voice, random.Random(seed)) for seed in range(60)]


def test_programs_parse_state_every_fact_and_attack_each_construct(programs):
    operators = Counter(op for p in programs for op, _, _, _ in p.mutants())
    assert {"first_page", "aggregate", "tie_break", "first_match", "predicate", "no_retry", "always_create",
            "drop_write", "wrong_item", "static_tally"} <= set(operators)
    for p in programs:
        ast.parse(p.reference_code())
        for variant in ("natural", "steps", "vague"):
            rendered = p.render(variant, random.Random(2))
            assert facts.missing(rendered.text, facts.required(p), rendered.refs) == [], (variant, rendered.text)


def test_populations_follow_their_profile(programs):
    assert any("steady1" in p.reference_code() for p in programs[:20])
    for p in programs[:20]:
        code = p.reference_code()
        accent = code.split('every_voice(accent="')[1].split('"')[0]
        use_case = code.split('use_case="')[1].split('"')[0]
        youngest = "['young', 'middle_aged', 'old']" in code
        steady = []
        for profile in tasks.PROFILES:
            state = p.population(profile, random.Random(3))
            world = json.loads(state.assets["platform"].data)
            matches = sorted((v for v in world["voices"] if v["labels"]["accent"] == accent
                              and v["labels"]["use_case"] == use_case), key=lambda v: (v["name"], v["voice_id"]))
            order = list(AGES) if youngest else list(AGES)[::-1]
            best = min(order.index(v["labels"]["age"]) for v in matches)
            found = next(i for i, v in enumerate(matches) if order.index(v["labels"]["age"]) == best)
            assert found >= 1  # never the first match by name
            left = world["character_limit"] - world["character_count"]
            text1, text2 = state.vars["text1"].value, state.vars["text2"].value
            if profile == "paged":
                assert len(matches) > DEFAULT_PAGE_SIZE and found >= DEFAULT_PAGE_SIZE
            if profile == "tie":
                assert sum(order.index(v["labels"]["age"]) == best for v in matches) == 2
            if profile == "quota":
                assert len(text2) <= left < len(text1)
            elif profile == "tie":  # an exact fit: a program that wants room to spare speaks the wrong text
                assert left == len(text1)
            else:
                assert left >= len(text1)
            if profile == "busy":
                own = [i for i in world["history"] if i["voice_id"] == matches[found]["voice_id"]]
                assert len(own) > HISTORY_PAGE_SIZE and world["phone_numbers"][0]["assigned_agent_id"]
            if "steady1" in code:  # which voice is the steadiest after the program's own edit
                stability = float(code.split("stability=")[1].split(")")[0])
                edited = [dict(v, settings={**v["settings"], "stability": stability}) if v is matches[found] else v
                          for v in matches]
                top = max(v["settings"]["stability"] for v in edited)
                old_top = max(v["settings"]["stability"] for v in matches)
                steady.append((_steadiest(edited), _steadiest(matches), matches[found]["voice_id"],
                               next((v["voice_id"] for v in matches if v["settings"]["stability"] == top), None),
                               next((v["voice_id"] for v in edited if v["settings"]["stability"] == old_top), None)))
        if steady:  # some input where the voices read before the edit give another answer (ranked again, searched
            # for the new top, or their top searched for), and one where the answer is not the edited voice itself
            # (else its name and the lookup's would be the same RESULT item on every input)
            fresh = [row[0] for row in steady]
            for k in (1, 2, 3, 4):
                assert any(f != row[k] for f, row in zip(fresh, steady)), k


def _steadiest(voices) -> str:
    top = max(v["settings"]["stability"] for v in voices)
    return next(v for v in voices if v["settings"]["stability"] == top)["voice_id"]


@pytest.fixture(scope="module")
def frontier_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("voice-frontier") / "stateeval"
    build(BuildConfig(out=str(out), **FRONTIER))
    return out


def test_a_frontier_build_keeps_its_tasks_and_its_reference_passes(frontier_build, tmp_path):
    built, manifest = load_tasks(str(frontier_build))
    assert manifest["config"]["tier"] == "frontier" and len(built) == FRONTIER["n"]
    for t in built:
        assert [c.name for c in t.test_cases[:5]] == list(tasks.PROFILES)
        assert t.api_doc.startswith("# Speech Platform API") and get_scenario("voice").task_tier(t) == "frontier"
        assert t.mutation["killed"] + t.mutation["equivalent"] == t.mutation["mutants"]
        assert "search_voices" in t.api_calls and "text_to_speech" in t.api_calls
    for mode in ("code", "tools"):
        assert pass_at_1(frontier_build, tmp_path / mode, "--model", "reference", "--mode", mode) == 1.0, mode


def test_the_same_seed_gives_the_same_bytes(frontier_build, tmp_path):
    build(BuildConfig(out=str(tmp_path / "again"), **FRONTIER))
    assert content_hash(tmp_path / "again") == content_hash(frontier_build)


def test_a_program_that_reads_one_page_of_the_library_fails(frontier_build, tmp_path):
    built, _ = load_tasks(str(frontier_build))
    one_page = {t.task_id: t.reference_program.replace('        if not page["has_more"]:\n            return voices\n',
                                                       "        return voices\n") for t in built}
    samples = samples_file(tmp_path / "one-page.jsonl", one_page)
    assert pass_at_1(frontier_build, tmp_path / "scores", "--samples", str(samples)) == 0.0
