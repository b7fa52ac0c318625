"""The voice lab's frontier platform (`scenarios/voice/platform.py`): a paginated library with stored settings,
history, a character quota, dubbing jobs, agents and phone numbers, each failure a documented error."""

from __future__ import annotations

import json
import random

import pytest

from scenarios.voice.platform import (
    AGES, DUBBING_POLLS, MAX_PAGE_SIZE, Platform, PlatformError, draw_population,
)


@pytest.fixture
def platform() -> Platform:
    return Platform.from_population(draw_population(random.Random(7), voices=48, numbers=2, character_limit=200))


def every_page(platform: Platform, **filters) -> list[dict]:
    voices, token = [], None
    while True:
        page = platform.search_voices(**filters, next_page_token=token)
        voices += page["voices"]
        if not page["has_more"]:
            assert page["next_page_token"] is None
            return voices
        token = page["next_page_token"]


def test_a_population_has_many_distinct_voices_with_every_label():
    population = draw_population(random.Random(1), voices=48)
    names = [v["name"] for v in population["voices"]]
    assert len(names) == 48 == len(set(names))
    assert {v["labels"]["age"] for v in population["voices"]} == set(AGES)
    assert draw_population(random.Random(1)) == draw_population(random.Random(1))
    assert draw_population(random.Random(1)) != draw_population(random.Random(2))


def test_search_pages_through_every_match_in_name_order_and_filters_combine(platform):
    everything = every_page(platform)
    assert [v["name"] for v in everything] == sorted(v["name"] for v in platform.voices)
    first = platform.search_voices()
    assert len(first["voices"]) == 10 and first["has_more"]
    british_young = every_page(platform, accent="british", age="young", page_size=3)
    assert british_young == [v for v in everything
                             if v["labels"]["accent"] == "british" and v["labels"]["age"] == "young"]
    some = everything[5]["name"][1:3].upper()
    assert all(some.lower() in (v["name"] + v["description"]).lower() for v in every_page(platform, search=some))


def test_a_page_token_belongs_to_its_search_and_page_sizes_are_bounded(platform):
    token = platform.search_voices(page_size=2)["next_page_token"]
    with pytest.raises(PlatformError, match="invalid_page_token") as err:
        platform.search_voices(accent="irish", next_page_token=token)
    assert err.value.status == 400
    for size in (0, MAX_PAGE_SIZE + 1, "5", True):
        with pytest.raises(PlatformError, match="invalid_page_size"):
            platform.search_voices(page_size=size)


def test_stored_settings_are_what_generation_uses_unless_a_call_overrides_them(platform):
    voice = platform.voices[0]["voice_id"]
    assert platform.edit_voice_settings(voice, stability=0.9)["stability"] == 0.9
    item = platform.text_to_speech("hello", voice)
    assert item["settings"] == platform.get_voice_settings(voice)
    stored = platform.get_voice_settings(voice)
    assert platform.text_to_speech("again", voice, style=0.45)["settings"] == {**stored, "style": 0.45}
    assert platform.get_voice_settings(voice) == stored  # an override is for that call only
    with pytest.raises(PlatformError, match="invalid_settings"):
        platform.edit_voice_settings(voice, similarity_boost=1.5)


def test_a_request_over_the_quota_is_refused_and_changes_nothing(platform):
    voice = platform.voices[1]["voice_id"]
    platform.text_to_speech("x" * 150, voice)
    before = json.dumps(platform.state(), sort_keys=True)
    with pytest.raises(PlatformError, match="quota_exceeded") as err:
        platform.text_to_speech("y" * 51, voice)
    assert err.value.status == 401 and json.dumps(platform.state(), sort_keys=True) == before
    platform.text_to_speech("y" * 50, voice)  # exactly what is left
    assert platform.get_subscription() == {"character_count": 200, "character_limit": 200}


def test_history_is_newest_first_in_pages_and_a_deletion_keeps_the_characters_used(platform):
    voice = platform.voices[2]["voice_id"]
    made = [platform.text_to_speech(f"line {k}", voice)["history_item_id"] for k in range(5)]
    ids, after = [], None
    while True:
        page = platform.list_history(page_size=2, start_after_history_item_id=after)
        ids += [i["history_item_id"] for i in page["history"]]
        if not page["has_more"]:
            break
        after = page["last_history_item_id"]
    assert ids == made[::-1]
    used = platform.get_subscription()["character_count"]
    platform.delete_history_item(made[2])
    assert made[2] not in [i["history_item_id"] for i in platform.list_history(page_size=10)["history"]]
    assert platform.get_subscription()["character_count"] == used
    with pytest.raises(PlatformError, match="history_item_not_found"):
        platform.get_history_item(made[2])


def test_each_listing_pages_the_history_as_it_is_then_and_a_voice_keeps_the_items_made_with_it(platform):
    voice, other = platform.voices[5]["voice_id"], platform.voices[6]["voice_id"]
    made = []
    for k in range(6):
        made.append(platform.text_to_speech(f"mine {k}", voice)["history_item_id"])
        platform.text_to_speech(f"theirs {k}", other)
    first = platform.list_history(page_size=2, voice_id=voice)
    assert [i["history_item_id"] for i in first["history"]] == made[:3:-1] and first["has_more"]
    assert {i["voice_id"] for i in first["history"]} == {voice}
    for item in first["history"]:  # deleted before the next listing: the later pages close up
        platform.delete_history_item(item["history_item_id"])
    again = platform.list_history(page_size=2, voice_id=voice)
    assert [i["history_item_id"] for i in again["history"]] == [made[3], made[2]]
    platform.delete_history_item(made[1])  # after the cursor: not on the page that follows it
    rest = platform.list_history(page_size=2, voice_id=voice, start_after_history_item_id=made[2])
    assert [i["history_item_id"] for i in rest["history"]] == [made[0]] and not rest["has_more"]
    with pytest.raises(PlatformError, match="history_item_not_found"):
        platform.list_history(voice_id=voice, start_after_history_item_id=made[5])


def test_a_dubbing_is_ready_after_the_documented_number_of_polls(platform):
    item = platform.text_to_speech("bonjour", platform.voices[0]["voice_id"])
    used = platform.get_subscription()["character_count"]
    job = platform.create_dubbing(item["history_item_id"], "es")["dubbing_id"]
    for _ in range(DUBBING_POLLS):
        with pytest.raises(PlatformError, match="not_ready"):
            platform.get_dubbed_audio(job)
        assert platform.get_dubbing(job)["status"] == "dubbing"
    assert platform.get_dubbing(job)["status"] == "dubbed"
    assert platform.get_dubbed_audio(job)["text"] == "[es] bonjour"
    assert platform.get_subscription()["character_count"] == used  # a dubbing uses no characters


def test_calls_go_through_an_agent_and_a_number_assigned_to_it(platform):
    voice = platform.voices[3]["voice_id"]
    numbers, used = platform.list_phone_numbers(), platform.get_subscription()["character_count"]
    agent = platform.create_agent("Support", voice, "Hello!")["agent_id"]
    assert platform.list_phone_numbers() == numbers  # a new agent has no number
    number = numbers[0]["phone_number_id"]
    with pytest.raises(PlatformError, match="phone_number_not_assigned"):
        platform.make_outbound_call(agent, number, "+15550001111")
    platform.assign_phone_number(number, agent)
    call = platform.make_outbound_call(agent, number, "+15550001111")
    assert call["voice_id"] == voice and call["first_message"] == "Hello!"
    assert platform.get_subscription()["character_count"] == used  # only text_to_speech uses characters
    with pytest.raises(PlatformError, match="voice_in_use"):
        platform.delete_voice(voice)
    platform.delete_voice(platform.voices[4]["voice_id"])
    assert len(platform.voices) == 47


def test_ids_are_minted_in_order_and_the_state_is_plain_data(platform):
    twin = Platform.from_population(draw_population(random.Random(7), voices=48, numbers=2, character_limit=200))
    for p in (platform, twin):
        p.text_to_speech("one", p.voices[0]["voice_id"])
        p.create_agent("A", p.voices[0]["voice_id"], "hi")
    assert platform.state() == twin.state()
    assert json.loads(json.dumps(platform.state())) == platform.state()
    assert platform.history[0]["history_item_id"] == "hist_1" and "agent_1" in platform.agents


def frontier_case(seed: int = 3, **population) -> dict:
    stored = draw_population(random.Random(seed), **population)
    return {"assets": [{"name": "platform", "kind": "platform", "meta": {}, "data": json.dumps(stored).encode()}],
            "setup_code": "to_number1 = '+15550001111'\n"}


PROGRAM = """\
voices, token = [], None
while True:
    page = search_voices(accent="british", next_page_token=token)
    voices += page["voices"]
    if not page["has_more"]:
        break
    token = page["next_page_token"]
item = text_to_speech("hello there", voices[0]["voice_id"])
try:
    text_to_speech("x" * 20000, voices[0]["voice_id"])
    refused = None
except PlatformError as e:
    refused = e.code
RESULT = [len(voices), item["history_item_id"], refused]
"""


def test_a_frontier_case_gets_the_platforms_tools_and_its_state_is_the_side_effect():
    from core.sandbox.worker import execute
    from scenarios.voice.world import VoiceWorld

    report = execute(VoiceWorld(), PROGRAM, frontier_case())
    assert report["status"] == "ok", report
    assert report["result"][1:] == ["hist_1", "quota_exceeded"]
    assert [i["text"] for i in report["recorded"]["history"]] == ["hello there"]
    assert report["recorded"]["character_count"] == len("hello there")
    assert [c["api"] for c in report["trace"]["calls"]][-2:] == ["text_to_speech", "text_to_speech"]
    assert "error" in report["trace"]["calls"][-1]


def test_tool_calls_on_a_frontier_case_reach_the_platform_and_the_paper_tools_stay_the_labs():
    from core.sandbox.worker import execute_calls
    from scenarios.voice.world import VoiceWorld

    world = VoiceWorld()
    calls = [{"name": "search_voices", "arguments": {"page_size": 2}},
             {"name": "get_subscription", "arguments": {}},
             {"name": "speech_to_text", "arguments": {"speech_id": "user_speech"}}]
    report = execute_calls(world, calls, ["r2"], frontier_case(character_limit=50))
    assert report["status"] == "ok", report
    assert len(report["calls"][0]["value"]["voices"]) == 2
    assert report["result"] == [{"character_count": 0, "character_limit": 50}]
    assert "unknown tool" in report["calls"][2]["error"]
