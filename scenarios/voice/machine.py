"""The `voice` scenario's state machine: an ElevenLabs-style speech lab, the same tools served over MCP (`python -m scenarios.voice`).

State machine: the setup block holds a recorded user speech (stored with the task), a text, search criteria and
one or two phone numbers. Data flows from producers to consumers: a search result's voice names feed
text_to_speech and speech_to_speech, and so does the voice of a speech a library voice speaks (`s.voice`);
speeches flow through isolate_audio, speech_to_speech and speech_to_text; transcripts feed text_to_speech; any
speech can be played by make_outbound_call, and a call record stands for the speech it played (`call.speech`)
wherever a speech goes, so no result is a dead end. Parameters (which voice of a search result, voice settings,
diarization) are solved from the values in scope, which the builder computes with the world's own pure transforms
(`scenarios.voice.tools`), so the fuzzer's idea of a value is the world's.

The oracle is RESULT plus the lab's side effects: the speeches the tools produced and the outbound calls, with
order ignored only where the API is order-free (see `VoiceLab.state`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from scenarios.base import (
    FRONTIER, PAPER, API, Asset, Call, Condition, Scenario, State, Var, compare_plain, join_names, join_words,
    setup_block,
)
from scenarios.voice.tools import (
    CATEGORIES,
    DEFAULT_VOICE,
    GENDERS,
    convert_voice,
    find_voice,
    isolate,
    message_text,
    phone_number,
    place_call,
    recording,
    search_library,
    synthesize,
    transcribe,
    user_conversation,
)

SPEECH, TEXT, TRANSCRIPT, VOICES, CATEGORY, GENDER, PHONE, CALL = (
    "speech", "text", "transcript", "voices", "category", "gender", "phone", "call",
)
USER_SPEECH = "user_speech"
SETTING_VALUES = (0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9)  # non-default voice settings the fuzzer picks from
SETTINGS = ("stability", "similarity_boost", "style")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
TAGS = {"__speech__": "speech", "__voice__": "voice", "__call__": "call record"}




def _voice_ref(call: Call) -> str:
    if call.args["index"] is None:  # the voice of a speech made earlier
        return f"the voice that speaks `{call.args['voices']}`"
    return f"the {ORDINALS[call.args['index']]} voice of `{call.args['voices']}`"


def _voice_values(call: Call) -> dict[str, tuple[str, ...]]:
    """A voice taken by position from a search result: the position, as every voice_ref states it. (A voice taken
    from a speech is data flow, said by the reference phrase of that speech.)"""
    if call.args["index"] is None:
        return {}
    return {"voice position": (f"{ORDINALS[call.args['index']]} voice",)}


# How natural and vague texts name each voice setting: (natural, vague); `values` accepts either.
SETTING_WORDS = {"stability": ("stability", "stability"), "similarity_boost": ("similarity boost", "similarity"),
                 "style": ("style", "style exaggeration")}


class SearchVoiceLibrary(API):
    name = "search_voice_library"
    phrases = (
        "search the voice library for {criteria}, naming the list of matches {out0_}",
        "find all {criteria} with search_voice_library and keep the list as {out0_}",
        "query the voice library for {criteria}; call the resulting list {out0_}",
    )
    natural = (
        "search the voice library for {criteria}",
        "look up the library's {criteria}",
        "find all {criteria} in the voice library",
    )
    vague = (
        "find out which library voices are {criteria_vague}",
        "see which of the available voices are {criteria_vague}",
    )
    noun = "{nth}list of voices found"

    def bindings(self, state):
        cats = [v.name for v in state.of_type(CATEGORY)]
        gens = [v.name for v in state.of_type(GENDER)]
        combos = [(c,) for c in cats] + [(g,) for g in gens] + [(c, g) for c in cats for g in gens]
        done = state.extra.get("searched", [])
        # A search that finds nothing tests nothing: any misspelt criterion would find the same.
        return [b for b in combos if list(b) not in done
                and search_library(**{state.vars[n].type: state.vars[n].value for n in b})]

    def apply(self, state, inputs, rng):
        kwargs = {state.vars[n].type: n for n in inputs}  # "category"/"gender" are also the parameter names
        found = search_library(**{k: state.vars[n].value for k, n in kwargs.items()})
        state.consume(inputs, self.name)
        state.extra.setdefault("searched", []).append(list(inputs))
        out = state.produce("voices", VOICES, tuple(found), self.name)
        args = ", ".join(f"{k}={n}" for k, n in kwargs.items())
        return Call(self.name, list(inputs), [out], f"{out} = search_voice_library({args})", dict(kwargs))

    def describe(self, call):
        d = super().describe(call)
        parts = [f"whose {k} is `{n}`" for k, n in call.args.items()]
        d["criteria"] = "voices " + " and ".join(parts)
        d["criteria_vague"] = " and ".join(f"of the {k} `{n}`" for k, n in call.args.items())
        return d


def _voice_lists(state: State) -> list[str]:
    """Search results a call can take a voice from: two voices at least, so the first is not also the last."""
    return [v.name for v in state.of_type(VOICES) if len(v.value) >= 2]


def _voiced(state: State) -> list[str]:
    """Speeches a call can take a voice from (`voice_name=s.voice`): those a library voice speaks whose voice no
    other speech in scope has (nor the recording, whose `voice` None means the default voice to text_to_speech),
    so that taking the voice of the wrong speech shows."""
    voices = [v.value.voice or DEFAULT_VOICE for v in state.of_type(SPEECH)]
    return [v.name for v in state.of_type(SPEECH) if v.value.voice is not None and voices.count(v.value.voice) == 1]


def _handles(state: State) -> list[str]:
    """What a speech tool can take: a speech, or a call record for the speech it played (`call.speech`) when no
    other call record in scope played that speech (reading the wrong record's speech must show)."""
    played = [state.extra["played"][v.name] for v in state.of_type(CALL)]
    return [v.name for v in state.of_type(SPEECH, CALL)
            if v.type == SPEECH or played.count(state.extra["played"][v.name]) == 1]


def _played(state: State, handle: str) -> str:
    """The speech variable behind a handle: the speech itself, or the one a call record played. Bookkeeping (what
    was transcribed, isolated, converted or called) goes by this name, so `call.speech` repeats nothing."""
    return state.extra["played"][handle] if state.vars[handle].type == CALL else handle


def _speech_code(state: State, handle: str) -> str:
    return f"{handle}.speech" if state.vars[handle].type == CALL else handle


def _speech_args(state: State, handle: str) -> dict:
    """What the translator needs to name a call record's speech (`played`: the record it is read from)."""
    return {"played": handle} if state.vars[handle].type == CALL else {}


def _name_speech(d: dict, call: Call) -> dict:
    """`in0_` for steps; `speech_` for natural and vague, where a call record's speech is "the speech played on"
    the record's reference phrase (a backticked `call1.speech` would survive the translator's substitution)."""
    d["speech_"] = d["in0_"]
    if call.args.get("played"):
        d["in0_"] = f"`{call.args['played']}.speech` (the speech that `{call.args['played']}` played)"
        d["speech_"] = f"the speech played on `{call.args['played']}`"
    return d


def _voice_source(state: State, source: str, index: int | None) -> tuple[str, str]:
    """(voice name, code) of a voice taken from a search result by position, or from a speech (index None)."""
    if index is None:
        return state.vars[source].value.voice, f"{source}.voice"
    return state.vars[source].value[index].name, f"{source}[{index}].name"


class TextToSpeech(API):
    name = "text_to_speech"
    phrases = (
        "convert the text {in0_} to speech with {voice_ref}{settings_text}, naming the speech {out0_}",
        "use text_to_speech to speak {in0_} in {voice_ref}{settings_text}; call the result {out0_}",
        "synthesize {in0_} as speech spoken by {voice_ref}{settings_text} and name it {out0_}",
    )
    natural = (
        "convert {in0_} to speech with {voice_ref}{settings_natural}",
        "synthesize {in0_} in {voice_ref}{settings_natural}",
        "generate speech of {in0_} spoken by {voice_ref}{settings_natural}",
    )
    vague = (
        "have {voice_ref} read {in0_} aloud{settings_vague}",
        "produce a spoken version of {in0_} in {voice_ref}{settings_vague}",
    )
    noun = "{nth}synthesized speech"

    def values(self, call):
        out = _voice_values(call)
        for key, value in call.args["settings"].items():
            out[key] = tuple(dict.fromkeys(f"{word} {value}" for word in SETTING_WORDS[key]))
        return out

    def bindings(self, state):
        texts = [v.name for v in state.of_type(TEXT, TRANSCRIPT)]
        return [(t, v) for t in texts for v in _voice_lists(state) + _voiced(state)]

    def apply(self, state, inputs, rng):
        text, voices = inputs
        index = None if state.vars[voices].type == SPEECH else rng.randrange(len(state.vars[voices].value))
        voice, voice_code = _voice_source(state, voices, index)
        settings = {}
        if rng.random() < 0.6:
            for key in rng.sample(SETTINGS, rng.randint(1, 3)):
                settings[key] = rng.choice(SETTING_VALUES)
            settings = {k: settings[k] for k in SETTINGS if k in settings}  # signature order
        speech = synthesize(state.vars[text].value, find_voice(voice), **settings)
        state.consume(inputs, self.name)
        out = state.produce("s", SPEECH, speech, self.name)
        extra = "".join(f", {k}={v}" for k, v in settings.items())
        code = f"{out} = text_to_speech({text}, voice_name={voice_code}{extra})"
        return Call(self.name, list(inputs), [out], code, {"voices": voices, "index": index, "settings": settings})

    def describe(self, call):
        d = super().describe(call)
        d["voice_ref"] = _voice_ref(call)
        settings = call.args["settings"]
        if not settings:
            d["settings_text"] = ", using the default voice settings"
        else:
            said = [f"{k.replace('_', ' ')} {v}" for k, v in settings.items()]
            text = join_words(said)
            rest = " (other settings at their defaults)" if len(settings) < len(SETTINGS) else ""
            d["settings_text"] = f", using {text}{rest}"
        for variant, k, lead, rest in (("natural", 0, ", with voice settings ", " (the others at their defaults)"),
                                       ("vague", 1, ", tuned to ", " (everything else left as it is)")):
            said = [f"{SETTING_WORDS[key][k]} {v}" for key, v in settings.items()]
            tail = rest if len(settings) < len(SETTINGS) else ""
            d[f"settings_{variant}"] = f"{lead}{join_words(said)}{tail}" if said else ""
        return d


class SpeechToSpeech(API):
    name = "speech_to_speech"
    phrases = (
        "transform the speech {in0_} into {voice_ref} with speech_to_speech (keeping its words), naming the "
        "result {out0_}",
        "re-voice {in0_} with speech to speech so that {voice_ref} speaks it; call the new speech {out0_}",
        "convert the speech {in0_} to {voice_ref} using speech_to_speech and name the output {out0_}",
    )
    natural = (
        "convert {speech_} into {voice_ref}, keeping its words",
        "re-voice {speech_} so that {voice_ref} speaks it",
        "change the voice of {speech_} to {voice_ref}",
    )
    vague = (
        "have {speech_} said again by {voice_ref}, keeping its words and timing",
        "make {speech_} sound as if {voice_ref} were speaking it",
    )
    noun = "{nth}re-voiced speech"

    def values(self, call):
        return _voice_values(call)

    def bindings(self, state):
        return [(h, v) for h in _handles(state) for v in _voice_lists(state) + _voiced(state)
                if v != _played(state, h) and self._targets(state, _played(state, h), v)]

    @staticmethod
    def _targets(state, speech: str, source: str) -> list[int | None]:
        """Voices of the source (positions in a search result, or None for a speech's own voice) that would change
        this speech: not its own voice, not one it was converted to."""
        done = state.extra.get("converted", [])
        current = state.vars[speech].value.voice
        value = state.vars[source].value
        if state.vars[source].type == SPEECH:
            names = [(None, value.voice)]
        else:
            names = [(i, v.name) for i, v in enumerate(value)]
        return [i for i, name in names if name != current and [speech, name] not in done]

    def apply(self, state, inputs, rng):
        handle, voices = inputs
        speech = _played(state, handle)
        index = rng.choice(self._targets(state, speech, voices))
        voice, voice_code = _voice_source(state, voices, index)
        value = convert_voice(state.vars[speech].value, find_voice(voice))
        state.consume(inputs, self.name)
        state.extra.setdefault("converted", []).append([speech, voice])
        out = state.produce("s", SPEECH, value, self.name)
        code = f"{out} = speech_to_speech({_speech_code(state, handle)}, voice_name={voice_code})"
        return Call(self.name, list(inputs), [out], code,
                    {"voices": voices, "index": index, **_speech_args(state, handle)})

    def describe(self, call):
        d = super().describe(call)
        d["voice_ref"] = _voice_ref(call)
        return _name_speech(d, call)


class SpeechToText(API):
    name = "speech_to_text"
    phrases = (
        "transcribe {in0_}{diarize_text}, naming the transcript {out0_}",
        "turn the speech {in0_} into text with speech_to_text{diarize_text}; call the transcript {out0_}",
        "get the transcript of {in0_}{diarize_text} and store it as {out0_}",
    )
    natural = (
        "transcribe {speech_}{diarize_natural}",
        "get the transcript of {speech_}{diarize_natural}",
    )
    vague = (
        "write down what is said in {speech_}{diarize_vague}",
        "find out the words spoken in {speech_}{diarize_vague}",
    )
    noun = "{nth}transcript"

    def values(self, call):
        return {"diarize": ("with speaker diarization", "labelled by speaker")} if call.args["diarize"] else {}

    def bindings(self, state):
        done = state.extra.get("transcribed", [])
        return [(h,) for h in _handles(state)
                if _played(state, h) not in done and self._telling(state, _played(state, h))]

    @staticmethod
    def _telling(state, speech: str) -> list[bool]:
        """The diarize settings under which this speech's transcript differs from every other speech's in scope:
        speeches made from one another share their words, and transcribing the wrong one must not pass."""
        others = [v.value for v in state.of_type(SPEECH) if v.name != speech]
        value = state.vars[speech].value
        return [d for d in (False, True) if all(transcribe(o, d) != transcribe(value, d) for o in others)]

    def apply(self, state, inputs, rng):
        (handle,) = inputs
        speech = _played(state, handle)
        diarize = rng.choice(self._telling(state, speech))
        text = transcribe(state.vars[speech].value, diarize)
        state.consume(inputs, self.name)
        state.extra.setdefault("transcribed", []).append(speech)
        out = state.produce("t", TRANSCRIPT, text, self.name)
        code = f"{out} = speech_to_text({_speech_code(state, handle)}, diarize={diarize})"
        return Call(self.name, [handle], [out], code, {"diarize": diarize, **_speech_args(state, handle)})

    def describe(self, call):
        d = super().describe(call)
        d["diarize_text"] = (" with speaker diarization (diarize=True)" if call.args["diarize"]
                             else " without diarization")
        d["diarize_natural"] = " with speaker diarization" if call.args["diarize"] else ""
        d["diarize_vague"] = (", one line per turn labelled by speaker" if call.args["diarize"]
                              else ", as plain words")
        return _name_speech(d, call)


class IsolateAudio(API):
    name = "isolate_audio"
    phrases = (
        "isolate the voices in {in0_} from background noise, naming the cleaned speech {out0_}",
        "run isolate_audio on {in0_} and call the result {out0_}",
        "clean {in0_} with audio isolation; name the isolated speech {out0_}",
    )
    natural = (
        "isolate the voices in {speech_} from the background noise",
        "clean up {speech_} with voice isolation",
    )
    vague = (
        "strip the background noise from {speech_}",
        "clean up {speech_} so that only the voices remain",
    )
    noun = "{nth}isolated audio"

    def bindings(self, state):
        # Isolating an isolated speech, or the same speech twice, would only repeat a call.
        done = state.extra.get("isolated", [])
        return [(h,) for h in _handles(state) if (s := _played(state, h)) not in done
                and state.vars[s].value.operations[-1] != "isolate_audio"]

    def apply(self, state, inputs, rng):
        (handle,) = inputs
        speech = _played(state, handle)
        value = isolate(state.vars[speech].value)
        state.consume(inputs, self.name)
        state.extra.setdefault("isolated", []).append(speech)
        out = state.produce("s", SPEECH, value, self.name)
        code = f"{out} = isolate_audio({_speech_code(state, handle)})"
        return Call(self.name, [handle], [out], code, _speech_args(state, handle))

    def describe(self, call):
        return _name_speech(super().describe(call), call)


class MakeOutboundCall(API):
    name = "make_outbound_call"
    phrases = (
        "place an outbound call to {in1_} that plays {in0_}, naming the call record {out0_}",
        "call the number {in1_} with make_outbound_call and play {in0_}; keep the returned record as {out0_}",
        "phone {in1_} and play the speech {in0_} on the call; name the call record {out0_}",
    )
    natural = (
        "place a phone call to {in1_} that plays {speech_}",
        "call {in1_} and play {speech_}",
        "dial {in1_} and play {speech_} to whoever answers",
    )
    vague = (
        "ring {in1_} and play {speech_} down the line",
        "phone {in1_} and let them hear {speech_}",
    )
    noun = "{nth}phone call"

    def bindings(self, state):
        done = state.extra.get("called", [])
        return [(h, p.name) for h in _handles(state) for p in state.of_type(PHONE)
                if [_played(state, h), p.name] not in done]

    def apply(self, state, inputs, rng):
        handle, phone = inputs
        speech = _played(state, handle)
        value = place_call(state.vars[speech].value, state.vars[phone].value)
        state.consume(inputs, self.name)
        state.extra.setdefault("called", []).append([speech, phone])
        out = state.produce("call", CALL, value, self.name)
        state.extra.setdefault("played", {})[out] = speech
        code = f"{out} = make_outbound_call({_speech_code(state, handle)}, to_number={phone})"
        return Call(self.name, list(inputs), [out], code, _speech_args(state, handle))

    def describe(self, call):
        return _name_speech(super().describe(call), call)


class VoiceScenario(Scenario):
    value_phrases = {SPEECH: "a speech", TEXT: "a text", TRANSCRIPT: "a transcript", VOICES: "a list of voices",
                     CALL: "an outbound call record", PHONE: "a phone number"}
    vocabulary = (SETTINGS,)
    name = "voice"
    tiers = (PAPER, FRONTIER)
    apis = (SearchVoiceLibrary(), TextToSpeech(), SpeechToSpeech(), SpeechToText(), IsolateAudio(),
            MakeOutboundCall())
    world = "scenarios.voice.world:VoiceWorld"
    state_readable = False  # the lab lists no speech made and no call placed: only RESULT and answers show them

    def initial_state(self, rng):
        state = State()
        segments = user_conversation(rng)
        asset = Asset(USER_SPEECH, "speech", {"segments": len(segments)}, json.dumps(segments).encode("utf-8"))
        state.declare(Var(USER_SPEECH, SPEECH, recording(segments, USER_SPEECH)), asset)
        state.declare(Var("message", TEXT, message_text(rng)))
        state.declare(Var("category", CATEGORY, rng.choice(CATEGORIES)))
        state.declare(Var("gender", GENDER, rng.choice(GENDERS)))
        numbers = set()
        for _ in range(rng.choice((1, 2))):
            number = phone_number(rng)
            if number not in numbers:
                numbers.add(number)
                state.declare(Var(state.fresh("phone"), PHONE, number))
        return state

    def redraw(self, state, rng):
        """Another recorded conversation, message and phone numbers; the search criteria are kept, so every
        search finds the same voices and every position a program takes from a result exists."""
        twin = state.branch_copy()
        numbers: set[str] = set()
        for name in twin.inits:
            var = twin.vars[name]
            if var.type == SPEECH:
                while list((segments := user_conversation(rng))) == list(map(list, var.value.segments)):
                    pass
                twin.assets[name] = Asset(name, "speech", {"segments": len(segments)},
                                          json.dumps(segments).encode("utf-8"))
                var.value = recording(segments, name)
            elif var.type == TEXT:
                while (text := message_text(rng)) == var.value:
                    pass
                var.value = text
            elif var.type == PHONE:
                while (number := phone_number(rng)) in numbers or number == state.vars[name].value:
                    pass
                numbers.add(number)
                var.value = number
        return twin

    def condition(self, state, var, rng):
        value = var.value
        if var.type == SPEECH:
            left, amount = f"{var.name}.duration", value.duration
            said = (f"the duration of `{var.name}` (in seconds) is greater than COND",
                    f"the duration of `{var.name}` (in seconds) is less than COND")
        elif var.type == CALL:
            left, amount = f"{var.name}.duration", value.duration
            said = (f"`{var.name}` lasts more than COND seconds", f"`{var.name}` lasts less than COND seconds")
        elif var.type == VOICES:
            left, amount = f"len({var.name})", len(value)
            said = (f"`{var.name}` holds more than COND voices", f"`{var.name}` holds fewer than COND voices")
        elif var.type == TRANSCRIPT:
            left, amount = f"len({var.name})", len(value)
            said = (f"`{var.name}` is longer than COND characters", f"`{var.name}` is shorter than COND characters")
        else:
            return None
        if any(getattr(o.value, "duration", None) == amount for o in state.of_type(var.type) if o.name != var.name):
            return None  # a speech made from another keeps its length: a test of the wrong one would pass
        margin = rng.randint(0, 1)
        # The flipped value is the amount itself: the condition fails there, and so does `>=` for `>` (or `<=`
        # for `<`), which no other value would show.
        if rng.random() < 0.5:  # amount > COND holds for the first value, not for the flipped one
            return Condition(left, ">", math.ceil(amount) - 1 - margin, amount, said[0])
        return Condition(left, "<", math.floor(amount) + 1 + margin, amount, said[1])

    def setup_code(self, state, constants):
        if state.extra.get("frontier"):  # a frontier population (`scenarios/voice/tasks.py`)
            from scenarios.voice.tasks import setup_lines

            return setup_block(setup_lines(state), constants)
        lines = []
        for name in state.inits:
            var = state.vars[name]
            if var.type == SPEECH:
                speech = var.value
                speakers = len({s for s, _ in speech.segments})
                lines.append(f'{name} = load_speech("{name}")  # recorded speech: {len(speech.segments)} '
                             f'segment(s), {speakers} speaker(s), {speech.duration} s')
            else:
                lines.append(f"{name} = {var.value!r}")
        return setup_block(lines, constants)

    def describe_init(self, state):
        by_type = {t: [n for n in state.inits if state.vars[n].type == t]
                   for t in (SPEECH, TEXT, CATEGORY, GENDER, PHONE)}
        criteria = by_type[CATEGORY] + by_type[GENDER]
        phones = by_type[PHONE]
        parts = []
        if by_type[TEXT]:
            parts.append(f"the text {join_names(by_type[TEXT])}")
        if criteria:
            parts.append(f"the search criteria {join_names(criteria)}")
        if phones:
            parts.append(f"the phone number{'s' if len(phones) > 1 else ''} {join_names(phones)}")
        text = f"The setup block loads the recorded speech {join_names(by_type[SPEECH])}"
        if parts:
            text += " and defines " + join_words(parts)
        return text + "."

    def api_doc(self, tier: str = PAPER):
        return Path(__file__).with_name("api_doc_frontier.md" if tier == FRONTIER else "api_doc.md").read_text()

    def tool_specs(self, tier=PAPER):
        if tier == FRONTIER:
            from scenarios.voice.platform import tool_specs as platform_specs

            return platform_specs()
        from scenarios.voice.server import tool_specs

        return tool_specs()

    def task_tier(self, task):
        """FRONTIER when its test cases store a platform (`scenarios/voice/platform.py`)."""
        return FRONTIER if any(a["kind"] == "platform" for a in task.test_cases[0].assets) else PAPER

    def frontier_plan(self, rng):
        """One program of the frontier tier: the speech platform (`scenarios/voice/tasks.py`)."""
        from scenarios.voice.tasks import plan

        return plan(self, rng)

    def scratch_assets(self, assets, rng):
        """Another recorded conversation under the same name; on the frontier tier, another platform."""
        from scenarios.voice.platform import draw_population

        def fresh(a):
            if a["kind"] == "speech":
                return {**a, "data": json.dumps(user_conversation(rng)).encode()}
            if a["kind"] == "platform":
                return {**a, "data": json.dumps(draw_population(rng), sort_keys=True).encode()}
            return a

        return [fresh(a) for a in assets]

    def leaf_compare(self, expected, actual, path):
        tag = _tag(expected)
        if tag is None:
            return NotImplemented
        if _tag(actual) != tag:
            got = TAGS.get(_tag(actual), "plain " + type(actual).__name__)
            return f"{path}: expected a {TAGS[tag]}, got a {got}"
        return compare_plain(expected[tag], actual[tag], self.leaf_compare, f"{path}.{TAGS[tag].split()[0]}")


def _tag(d) -> str | None:
    if isinstance(d, dict) and len(d) == 1:
        (key,) = d
        if key in TAGS:
            return key
    return None
