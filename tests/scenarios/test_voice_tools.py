"""The voice lab's tools (the one implementation behind the sandbox functions and the MCP server) and its world.

Each tool's behaviour, its documented errors, the state the oracle compares (and where that state ignores order),
and the sandbox world's namespace, canonical records and recorded side effects.
"""

from __future__ import annotations

import json

import pytest

from scenarios import get_scenario
from scenarios.base import canonical_json
from scenarios.voice.tools import (
    CATEGORIES,
    CHARS_PER_SECOND,
    GENDERS,
    LIBRARY,
    PAUSE_S,
    TOOL_NAMES,
    OutboundCall,
    Speech,
    VoiceLab,
)
from scenarios.voice.world import VoiceWorld

CONVERSATION = [["caller", "Hi, this is Maya."], ["agent", "Hello Maya."], ["caller", "Please call back."]]


@pytest.fixture
def lab():
    lab = VoiceLab()
    lab.add_recording(CONVERSATION, "user_speech")
    return lab


# ------------------------------------------------------------------------------------------ the library


def test_library_has_one_voice_per_category_and_gender():
    pairs = [(v.category, v.gender) for v in LIBRARY]
    assert len(LIBRARY) == 10
    assert len(set(pairs)) == len(pairs) == len(CATEGORIES) * len(GENDERS)
    assert len({v.name for v in LIBRARY}) == len({v.voice_id for v in LIBRARY}) == 10


def test_search_by_category_gender_and_name(lab):
    both = lab.search_voice_library(category="professional", gender="feminine")
    assert [(v.name, v.category, v.gender) for v in both] == [("Celeste", "professional", "feminine")]
    by_category = lab.search_voice_library(category="cloned")
    assert [v.name for v in by_category] == ["Elena", "Felix"]  # ordered by name
    by_gender = lab.search_voice_library(gender="masculine")
    assert len(by_gender) == 5 and {v.gender for v in by_gender} == {"masculine"}
    assert [v.name for v in lab.search_voice_library(search="HUG")] == ["Hugo"]  # case-insensitive part of a name
    assert lab.search_voice_library(search="nobody") == []
    assert len(lab.search_voice_library()) == 10


@pytest.mark.parametrize("kwargs, word", [({"category": "amateur"}, "category"), ({"gender": "female"}, "gender")])
def test_search_rejects_unknown_criteria_naming_the_valid_values(lab, kwargs, word):
    with pytest.raises(ValueError, match=f"Unknown {word}") as info:
        lab.search_voice_library(**kwargs)
    valid = CATEGORIES if word == "category" else GENDERS
    assert all(v in str(info.value) for v in valid)


# ---------------------------------------------------------------------------------------- text to speech


def test_text_to_speech_makes_a_speech_record(lab):
    s = lab.text_to_speech("Your order has shipped.", voice_name="Hugo", stability=0.3, style=0.6)
    assert isinstance(s, Speech)
    assert (s.text, s.voice, s.stability, s.similarity_boost, s.style) == (
        "Your order has shipped.", "Hugo", 0.3, 0.75, 0.6)
    assert s.duration == round(len("Your order has shipped.") / CHARS_PER_SECOND, 2)
    assert s.segments == (("Hugo", "Your order has shipped."),)
    assert s.operations == ("text_to_speech",)
    assert s.speech_id and lab.speeches[s.speech_id] is s


def test_text_to_speech_defaults_to_aria_and_default_settings(lab):
    s = lab.text_to_speech("Hello.")
    assert (s.voice, s.stability, s.similarity_boost, s.style) == ("Aria", 0.5, 0.75, 0.0)


def test_text_to_speech_documented_errors(lab):
    with pytest.raises(ValueError, match=r"^Text is required\.$"):
        lab.text_to_speech("", voice_name="Hugo")
    with pytest.raises(ValueError, match=r"^Voice with name: Nobody does not exist\.$"):
        lab.text_to_speech("Hello.", voice_name="Nobody")
    with pytest.raises(ValueError, match="stability must be between 0 and 1"):
        lab.text_to_speech("Hello.", stability=1.5)
    with pytest.raises(TypeError, match="style"):
        lab.text_to_speech("Hello.", style=True)
    with pytest.raises(TypeError, match="voice_name must be a str"):
        lab.text_to_speech("Hello.", voice_name=LIBRARY[0])  # the Voice, not its name
    assert lab.produced == []  # a failed call produces nothing


# -------------------------------------------------------------------------------------- speech to speech


def test_speech_to_speech_changes_the_voice_keeping_words_and_timing(lab):
    source = lab.speeches["user_speech"]
    s = lab.speech_to_speech(source, voice_name="Greta")
    assert s.text == source.text and s.duration == source.duration
    assert s.segments == tuple(("Greta", words) for _, words in CONVERSATION)
    assert (s.voice, s.stability, s.similarity_boost, s.style) == ("Greta", 0.5, 0.75, 0.0)
    assert s.operations == ("recording", "speech_to_speech")
    assert source.operations == ("recording",) and source.voice is None  # the input is never changed


def test_speech_to_speech_documented_error(lab):
    with pytest.raises(ValueError, match=r"^Voice with name: Adam does not exist\.$"):
        lab.speech_to_speech("user_speech", voice_name="Adam")


# ---------------------------------------------------------------------------------------- speech to text


def test_speech_to_text_returns_the_words(lab):
    recording = lab.speeches["user_speech"]
    assert lab.speech_to_text(recording) == "Hi, this is Maya. Hello Maya. Please call back."
    assert recording.duration == round(sum(len(w) for _, w in CONVERSATION) / CHARS_PER_SECOND + 2 * PAUSE_S, 2)


def test_diarize_labels_speakers_in_order_of_first_appearance(lab):
    assert lab.speech_to_text("user_speech", diarize=True) == (
        "speaker_0: Hi, this is Maya.\nspeaker_1: Hello Maya.\nspeaker_0: Please call back.")
    one_voice = lab.speech_to_speech("user_speech", voice_name="Bram")
    assert lab.speech_to_text(one_voice, diarize=True) == "speaker_0: Hi, this is Maya. Hello Maya. Please call back."
    with pytest.raises(TypeError, match="diarize"):
        lab.speech_to_text("user_speech", diarize="yes")


def test_speech_to_text_produces_no_speech(lab):
    lab.speech_to_text("user_speech")
    assert lab.produced == []


# ------------------------------------------------------------------------------------------ isolate audio


def test_isolate_audio_records_the_operation_only(lab):
    tts = lab.text_to_speech("Hello.", voice_name="Isla", similarity_boost=0.2)
    clean = lab.isolate_audio(tts)
    assert clean.operations == ("text_to_speech", "isolate_audio")
    assert clean.to_plain() | {"operations": None} == tts.to_plain() | {"operations": None}
    assert clean.speech_id != tts.speech_id


# ------------------------------------------------------------------------------------- outbound calls


def test_make_outbound_call_records_the_call(lab):
    s = lab.text_to_speech("Your table is ready.", voice_name="Dorian")
    call = lab.make_outbound_call(s, to_number="+15551234567")
    assert isinstance(call, OutboundCall)
    assert (call.to_number, call.speech, call.duration, call.status) == ("+15551234567", s, s.duration, "initiated")
    assert lab.calls == [call]


@pytest.mark.parametrize("number", ["5551234567", "+0551234567", "+1555", "+1 555 123 4567", "+1234567890123456"])
def test_make_outbound_call_rejects_numbers_not_in_e164(lab, number):
    with pytest.raises(ValueError, match="E.164"):
        lab.make_outbound_call("user_speech", to_number=number)
    assert lab.calls == []


def test_speeches_are_addressed_by_object_or_id(lab):
    s = lab.text_to_speech("Hello.", voice_name="Jasper")
    assert lab.isolate_audio(s.speech_id).to_plain() == lab.isolate_audio(s).to_plain()
    with pytest.raises(ValueError, match=r"^Speech with id: speech_99 does not exist\.$"):
        lab.isolate_audio("speech_99")
    with pytest.raises(TypeError, match="speech must be a Speech"):
        lab.speech_to_text({"text": "forged"})


# ------------------------------------------------------------------------ the state the oracle compares


def _run(steps) -> dict:
    lab = VoiceLab()
    lab.add_recording(CONVERSATION, "user_speech")
    for step in steps:
        step(lab)
    return lab.state()


def test_state_ignores_the_order_of_independent_speeches_but_counts_them():
    a = lambda lab: lab.text_to_speech("One.", voice_name="Aria")  # noqa: E731
    b = lambda lab: lab.isolate_audio("user_speech")  # noqa: E731
    assert canonical_json(_run([a, b])) == canonical_json(_run([b, a]))
    assert canonical_json(_run([a, b])) != canonical_json(_run([a, b, b]))


def test_state_ignores_the_interleaving_of_calls_to_different_numbers_only():
    first = lambda n: lambda lab: lab.make_outbound_call("user_speech", n)  # noqa: E731
    second = lambda n: lambda lab: lab.make_outbound_call(lab.isolate_audio("user_speech"), n)  # noqa: E731
    x, y = "+15550000001", "+15550000002"
    assert canonical_json(_run([first(x), second(y)])) == canonical_json(_run([second(y), first(x)]))
    # the same number hears the recording then the cleaned speech: swapping them is another side effect
    assert canonical_json(_run([first(x), second(x)])) != canonical_json(_run([second(x), first(x)]))
    state = _run([first(x), second(x)])
    assert [c["speech"]["operations"] for c in state["outbound_calls"][x]] == [
        ["recording"], ["recording", "isolate_audio"]]


def test_state_is_plain_json():
    state = _run([lambda lab: lab.make_outbound_call(lab.text_to_speech("Hi."), "+15550000001")])
    assert json.loads(canonical_json(state)) == state
    assert "speech_id" not in canonical_json(state)  # ids depend on how many speeches came before


# --------------------------------------------------------------------------------------------- the world


def _case() -> dict:
    return {"assets": [{"name": "user_speech", "kind": "speech", "meta": {"segments": 3},
                        "data": json.dumps(CONVERSATION).encode()}]}


def test_world_namespace_holds_the_six_tools_and_load_speech():
    world = VoiceWorld()
    ns = world.namespace(_case())
    assert set(ns) == {"load_speech", *TOOL_NAMES}
    speech = ns["load_speech"]("user_speech")
    assert speech.operations == ("recording",) and speech.speech_id == "user_speech"
    with pytest.raises(KeyError, match="no stored speech named 'other'"):
        ns["load_speech"]("other")


def test_world_canonical_records_and_recorded_side_effects():
    world = VoiceWorld()
    ns = world.namespace(_case())
    exec(
        'speech = load_speech("user_speech")\n'
        'voices = search_voice_library(category="famous")\n'
        's1 = speech_to_speech(speech, voice_name=voices[1].name)\n'
        'call = make_outbound_call(s1, to_number="+15550000001")\n'
        'RESULT = [voices[0], s1, call, speech_to_text(s1)]\n'
        'del search_voice_library, make_outbound_call  # rebinding names cannot hide what the lab saw\n',
        ns,
    )
    result = world.canonical(ns["RESULT"])
    voice, speech, call, text = result
    assert voice == {"__voice__": LIBRARY[8].to_plain()}  # Isla, the first famous voice
    assert speech == {"__speech__": ns["s1"].to_plain()} and speech["__speech__"]["voice"] == "Jasper"
    assert call["__call__"]["speech"] == speech["__speech__"] and call["__call__"]["to_number"] == "+15550000001"
    assert text == ns["s1"].text
    recorded = world.recorded(ns)
    assert recorded["speeches"] == [speech["__speech__"]]
    assert recorded["outbound_calls"] == {"+15550000001": [call["__call__"]]}
    assert world.snapshot(recorded) == recorded


def test_world_gives_every_test_case_a_fresh_lab():
    world = VoiceWorld()
    ns = world.namespace(_case())
    ns["text_to_speech"]("Hello.")
    world.namespace(_case())
    assert world.recorded({}) == {"speeches": [], "outbound_calls": {}}


def test_world_refuses_objects_it_cannot_compare():
    with pytest.raises(TypeError, match="cannot be compared"):
        VoiceWorld().canonical([object()])


def test_comparison_names_the_kind_of_record_that_differs():
    scenario = get_scenario("voice")
    world = VoiceWorld()
    ns = world.namespace(_case())
    speech = world.canonical(ns["text_to_speech"]("Hello.", voice_name="Aria"))
    other = world.canonical(ns["text_to_speech"]("Hello.", voice_name="Bram"))
    assert scenario.compare_result([speech], [speech]) is None
    assert "expected speech, got str" in scenario.compare_result([speech], ["Hello."])
    assert "voice" in scenario.compare_result([speech], [other])
    assert "expected a speech, got a voice" in scenario.compare_result(
        [speech], world.canonical([LIBRARY[0]]))
