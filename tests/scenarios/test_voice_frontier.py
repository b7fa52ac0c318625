"""The voice scenario's frontier tier: programs over the speech platform (`scenarios/voice/tasks.py`), and the
platforms their populations draw. The checks every scenario's frontier tier shares (a build end to end through
the real pipeline and sandbox among them) are in `test_frontier_tiers.py`."""

from __future__ import annotations

import json
import random

import pytest

from builder import frontier
from scenarios import get_scenario
from scenarios.voice import tasks
from scenarios.voice.platform import AGES, DEFAULT_PAGE_SIZE, HISTORY_PAGE_SIZE


@pytest.fixture(scope="module")
def programs():
    voice = get_scenario("voice")
    return [frontier.generate(voice, random.Random(seed)) for seed in range(60)]


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


