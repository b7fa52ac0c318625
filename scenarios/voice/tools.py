"""The voice lab's one implementation: six ElevenLabs-style tools over plain records, no audio.

Both ways into the world use this module: the sandbox hands a `VoiceLab`'s methods to generated programs as
Python functions, and `scenarios.voice.server` serves the same methods over the Model Context Protocol. The
builder's state machine calls the pure transforms below (`synthesize`, `convert_voice`, ...) to solve parameters,
so what the fuzzer predicts is by construction what the world does.

Everything is deterministic: a speech is a record whose duration follows from its words, a transcription gives
the words back, diarization labels speakers in order of first appearance, and the outbound-call "recorder" is a
list. Tool names, parameter names, defaults and error messages follow ElevenLabs' MCP server where they apply;
files on disk are replaced by speech records addressed by `speech_id`. Pure Python, no third-party imports: the
builder and the sandbox workers import it.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, replace
from typing import Any

from scenarios.base import canonical_json

# ------------------------------------------------------------------------------------------- the library

CATEGORIES = ("premade", "professional", "cloned", "generated", "famous")
GENDERS = ("feminine", "masculine")

# (name, category, gender, accent, description): one voice per (category, gender) pair, so a search on both
# criteria finds exactly one voice, and a search on one of them finds several.
_VOICES = (
    ("Aria", "premade", "feminine", "american", "warm and clear narrator"),
    ("Bram", "premade", "masculine", "british", "calm, measured announcer"),
    ("Celeste", "professional", "feminine", "american", "crisp customer-service voice"),
    ("Dorian", "professional", "masculine", "american", "confident presenter"),
    ("Elena", "cloned", "feminine", "spanish", "friendly, conversational"),
    ("Felix", "cloned", "masculine", "german", "bright and energetic"),
    ("Greta", "generated", "feminine", "swedish", "soft, slow storyteller"),
    ("Hugo", "generated", "masculine", "french", "deep and resonant"),
    ("Isla", "famous", "feminine", "irish", "lively radio host"),
    ("Jasper", "famous", "masculine", "australian", "relaxed documentary voice"),
)

DEFAULT_VOICE = "Aria"  # used by text_to_speech when no voice is named, and by speech_to_speech's default
DEFAULT_STABILITY = 0.5
DEFAULT_SIMILARITY_BOOST = 0.75
DEFAULT_STYLE = 0.0
CHARS_PER_SECOND = 15.0  # speaking rate that turns text length into duration
PAUSE_S = 0.5  # silence between two segments of a speech
CALL_STATUS = "initiated"
_E164 = re.compile(r"\+[1-9][0-9]{7,14}")


@dataclass(frozen=True)
class Voice:
    """One voice of the library, as `search_voice_library` returns it."""

    voice_id: str
    name: str
    category: str
    gender: str
    accent: str
    description: str

    def to_plain(self) -> dict:
        return {"voice_id": self.voice_id, "name": self.name, "category": self.category, "gender": self.gender,
                "accent": self.accent, "description": self.description}


def _voice_id(name: str) -> str:
    return "vc_" + hashlib.sha1(name.encode()).hexdigest()[:12]


LIBRARY: tuple[Voice, ...] = tuple(Voice(_voice_id(n), n, c, g, a, d) for n, c, g, a, d in _VOICES)
_BY_NAME = {v.name: v for v in LIBRARY}


# --------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Speech:
    """A speech object: what a real server would store as an audio file, kept as its facts.

    `segments` are (speaker, words) pairs; `text` is their words joined by spaces. `voice` and the three voice
    settings are None for a recording that no library voice produced. `operations` lists what made the speech
    and what was applied to it since, oldest first.
    """

    speech_id: str
    text: str
    voice: str | None
    stability: float | None
    similarity_boost: float | None
    style: float | None
    duration: float
    segments: tuple[tuple[str, str], ...]
    operations: tuple[str, ...]

    def to_plain(self) -> dict:
        """The speech's content (its id is left out: ids depend on how many speeches a run made before)."""
        return {
            "text": self.text, "voice": self.voice, "stability": self.stability,
            "similarity_boost": self.similarity_boost, "style": self.style, "duration": self.duration,
            "segments": [list(s) for s in self.segments], "operations": list(self.operations),
        }

    def to_dict(self) -> dict:
        """The content plus its id: what the MCP server returns."""
        return {"speech_id": self.speech_id, **self.to_plain()}


@dataclass(frozen=True)
class OutboundCall:
    """One call placed by `make_outbound_call`: who was called and the speech that was played."""

    call_id: str
    to_number: str
    speech: Speech
    duration: float
    status: str

    def to_plain(self) -> dict:
        return {"to_number": self.to_number, "speech": self.speech.to_plain(), "duration": self.duration,
                "status": self.status}

    def to_dict(self) -> dict:
        return {"call_id": self.call_id, "to_number": self.to_number, "speech_id": self.speech.speech_id,
                "speech": self.speech.to_plain(), "duration": self.duration, "status": self.status}


# ------------------------------------------------------------------------------------ pure transforms


def duration_of(segments: tuple[tuple[str, str], ...]) -> float:
    chars = sum(len(words) for _, words in segments)
    return round(chars / CHARS_PER_SECOND + PAUSE_S * max(len(segments) - 1, 0), 2)


def recording(segments, speech_id: str = "") -> Speech:
    """A speech recorded by people rather than produced by a library voice (the task's user speech)."""
    segs = tuple((str(s), str(w)) for s, w in segments)
    if not segs:
        raise ValueError("a recording needs at least one segment")
    return Speech(speech_id, " ".join(w for _, w in segs), None, None, None, None, duration_of(segs), segs,
                  ("recording",))


def find_voice(name: str) -> Voice:
    if not isinstance(name, str):
        raise TypeError(f"voice_name must be a str (a voice's name), got {type(name).__name__}")
    if name not in _BY_NAME:
        raise ValueError(f"Voice with name: {name} does not exist.")
    return _BY_NAME[name]


def search_library(search: str | None = None, category: str | None = None,
                   gender: str | None = None) -> list[Voice]:
    for label, value, valid in (("category", category, CATEGORIES), ("gender", gender, GENDERS)):
        if value is not None and value not in valid:
            raise ValueError(f"Unknown {label}: {value!r}. Valid values: {', '.join(valid)}.")
    if search is not None and not isinstance(search, str):
        raise TypeError(f"search must be a str, got {type(search).__name__}")
    term = (search or "").casefold()
    return [
        v for v in LIBRARY
        if term in v.name.casefold()
        and (category is None or v.category == category)
        and (gender is None or v.gender == gender)
    ]


def _setting(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number between 0 and 1, got {type(value).__name__}")
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must be between 0 and 1, got {value}.")
    return float(value)


def synthesize(text: str, voice: Voice, stability: float = DEFAULT_STABILITY,
               similarity_boost: float = DEFAULT_SIMILARITY_BOOST, style: float = DEFAULT_STYLE) -> Speech:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if text == "":
        raise ValueError("Text is required.")
    settings = (_setting("stability", stability), _setting("similarity_boost", similarity_boost),
                _setting("style", style))
    segs = ((voice.name, text),)
    return Speech("", text, voice.name, *settings, duration_of(segs), segs, ("text_to_speech",))


def convert_voice(speech: Speech, voice: Voice) -> Speech:
    """Speech to speech: every segment is spoken by `voice`, words and timing kept, voice settings at defaults."""
    segs = tuple((voice.name, words) for _, words in speech.segments)
    return replace(speech, speech_id="", voice=voice.name, stability=DEFAULT_STABILITY,
                   similarity_boost=DEFAULT_SIMILARITY_BOOST, style=DEFAULT_STYLE, segments=segs,
                   operations=speech.operations + ("speech_to_speech",))


def transcribe(speech: Speech, diarize: bool = False) -> str:
    """The words; with diarize, one `speaker_N: ...` line per run of one speaker (N by first appearance)."""
    if not isinstance(diarize, bool):
        raise TypeError(f"diarize must be a bool, got {type(diarize).__name__}")
    if not diarize:
        return speech.text
    labels: dict[str, str] = {}
    lines: list[list[str]] = []  # [label, words]
    for speaker, words in speech.segments:
        label = labels.setdefault(speaker, f"speaker_{len(labels)}")
        if lines and lines[-1][0] == label:
            lines[-1][1] += " " + words
        else:
            lines.append([label, words])
    return "\n".join(f"{label}: {words}" for label, words in lines)


def isolate(speech: Speech) -> Speech:
    """Audio isolation: background noise removed; the words, voice and timing are kept."""
    return replace(speech, speech_id="", operations=speech.operations + ("isolate_audio",))


def check_number(to_number: Any) -> str:
    if not isinstance(to_number, str):
        raise TypeError(f"to_number must be a str, got {type(to_number).__name__}")
    if not _E164.fullmatch(to_number):
        raise ValueError(f"to_number must be in E.164 format (+ and 8 to 15 digits), got {to_number!r}.")
    return to_number


def place_call(speech: Speech, to_number: str) -> OutboundCall:
    return OutboundCall("", check_number(to_number), speech, speech.duration, CALL_STATUS)


# --------------------------------------------------------------------------------------------- the lab


class VoiceLab:
    """One world's state: the speeches it knows (by id), the speeches its tools produced, the calls placed.

    The six public methods are the tools. Generated programs get them as functions; the MCP server calls them
    with ids. A `speech` argument is a `Speech` or the `speech_id` of one this lab knows.
    """

    def __init__(self) -> None:
        self.speeches: dict[str, Speech] = {}
        self.produced: list[Speech] = []
        self.calls: list[OutboundCall] = []

    # ---- bookkeeping

    def add_recording(self, segments, speech_id: str) -> Speech:
        speech = recording(segments, speech_id)
        self.speeches[speech_id] = speech
        return speech

    def _resolve(self, speech: Any) -> Speech:
        if isinstance(speech, Speech):
            return speech
        if isinstance(speech, str):
            if speech not in self.speeches:
                raise ValueError(f"Speech with id: {speech} does not exist.")
            return self.speeches[speech]
        raise TypeError(f"speech must be a Speech returned by a tool (or its speech_id), got {type(speech).__name__}")

    def _keep(self, speech: Speech) -> Speech:
        speech = replace(speech, speech_id=f"speech_{len(self.produced) + 1}")
        self.speeches[speech.speech_id] = speech
        self.produced.append(speech)
        return speech

    def state(self) -> dict:
        """The side effects as plain data, compared with the oracle's.

        * `speeches`: every speech a tool produced, as a sorted list (a multiset). Producing a speech changes
          nothing else, so the order in which independent speeches were made is not part of the state; how many
          were made is (each is a billed generation).
        * `outbound_calls`: the calls placed, grouped by number. Calls to different numbers are independent, so
          their interleaving is not compared; the calls one number receives keep their order, because that is
          the order the person hears them in.
        """
        speeches = sorted((s.to_plain() for s in self.produced), key=canonical_json)
        calls: dict[str, list[dict]] = {}
        for c in self.calls:
            calls.setdefault(c.to_number, []).append(c.to_plain())
        return {"speeches": speeches, "outbound_calls": dict(sorted(calls.items()))}

    # ---- the six tools

    def search_voice_library(self, search: str | None = None, category: str | None = None,
                             gender: str | None = None) -> list[Voice]:
        """Search the voice library by name, category and gender.

        Args:
            search: case-insensitive part of a voice's name; None matches every name.
            category: one of premade, professional, cloned, generated, famous; None matches every category.
            gender: feminine or masculine; None matches both.

        Returns the matching voices (possibly none), ordered by name.
        Raises ValueError for a category or gender outside the lists above.
        """
        return search_library(search, category, gender)

    def text_to_speech(self, text: str, voice_name: str | None = None, stability: float = DEFAULT_STABILITY,
                       similarity_boost: float = DEFAULT_SIMILARITY_BOOST, style: float = DEFAULT_STYLE) -> Speech:
        """Convert text to speech with a library voice.

        Args:
            text: the words to speak (not empty).
            voice_name: the exact name of a library voice; None uses the default voice, Aria.
            stability, similarity_boost, style: voice settings, each between 0 and 1 (defaults 0.5, 0.75, 0).

        Returns a new speech spoken by that voice, whose operations are ["text_to_speech"].
        Raises ValueError "Text is required." for empty text, "Voice with name: NAME does not exist." for an
        unknown voice, and for a setting outside [0, 1].
        """
        voice = find_voice(DEFAULT_VOICE if voice_name is None else voice_name)
        return self._keep(synthesize(text, voice, stability, similarity_boost, style))

    def speech_to_speech(self, speech: Speech | str, voice_name: str = DEFAULT_VOICE) -> Speech:
        """Transform a speech into another library voice, keeping its words and timing.

        Args:
            speech: the source speech (or its speech_id).
            voice_name: the exact name of the target library voice (default Aria).

        Returns a new speech in which every segment is spoken by that voice, with default voice settings
        (0.5, 0.75, 0) and "speech_to_speech" appended to the source's operations.
        Raises ValueError "Voice with name: NAME does not exist." for an unknown voice.
        """
        voice = find_voice(voice_name)
        return self._keep(convert_voice(self._resolve(speech), voice))

    def speech_to_text(self, speech: Speech | str, diarize: bool = False) -> str:
        """Transcribe a speech.

        Args:
            speech: the speech (or its speech_id).
            diarize: when True, annotate who speaks: one line "speaker_N: words" per run of one speaker, speakers
                numbered from 0 in order of first appearance.

        Returns the transcript: the speech's words, or the diarized lines joined by newlines.
        """
        return transcribe(self._resolve(speech), diarize)

    def isolate_audio(self, speech: Speech | str) -> Speech:
        """Isolate the voices of a speech from its background noise.

        Args:
            speech: the speech (or its speech_id).

        Returns a new speech with the same words, voice, settings and duration, and "isolate_audio" appended to
        its operations.
        """
        return self._keep(isolate(self._resolve(speech)))

    def make_outbound_call(self, speech: Speech | str, to_number: str) -> OutboundCall:
        """Place an outbound phone call that plays a speech.

        Args:
            speech: the speech to play (or its speech_id).
            to_number: the number to call, in E.164 format (+ and 8 to 15 digits, e.g. +15551234567).

        Returns the call record (call_id, to_number, speech, duration, status "initiated").
        Raises ValueError for a number that is not in E.164 format.
        """
        call = place_call(self._resolve(speech), to_number)
        call = replace(call, call_id=f"call_{len(self.calls) + 1}")
        self.calls.append(call)
        return call

    def tools(self) -> dict:
        """The six tools by name (what a generated program's namespace receives)."""
        return {name: getattr(self, name) for name in TOOL_NAMES}


TOOL_NAMES = ("search_voice_library", "text_to_speech", "speech_to_speech", "speech_to_text", "isolate_audio",
              "make_outbound_call")


# ------------------------------------------------------------------------------------- the user speech

_NAMES = ("Maya", "Tom", "Priya", "Lucas", "Noor", "Ben", "Sofia", "Omar")
_ITEMS = ("order", "delivery", "subscription", "appointment", "invoice", "reservation")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_OPENERS = (
    "Hi, this is {name} calling about my {item}.",
    "Hello, {name} here with a question about the {item}.",
    "Good morning, it is {name} and I need help with my {item}.",
)
_FOLLOWUPS = (
    "It was supposed to be ready on {day}.",
    "Could someone call me back before {day}?",
    "I would like to move it to {day} if possible.",
    "Nothing has changed since {day}.",
)
_REPLIES = (
    "Thanks {name}, I can see the {item} in our system.",
    "Of course, let me check the {item} for you.",
    "Sorry about that, we will sort out the {item} by {day}.",
)
_MESSAGES = (
    "Your {item} is confirmed for {day}.",
    "We have updated your {item} and will call again on {day}.",
    "Reminder: your {item} is due on {day}. Reply if anything changed.",
    "Good news, {name}: the {item} issue is fixed.",
)


def user_conversation(rng: random.Random) -> list[tuple[str, str]]:
    """A short recorded conversation: a caller and (usually) an agent, two to four segments."""
    fill = {"name": rng.choice(_NAMES), "item": rng.choice(_ITEMS), "day": rng.choice(_DAYS)}
    segs = [("caller", rng.choice(_OPENERS).format(**fill))]
    if rng.random() < 0.75:
        segs.append(("agent", rng.choice(_REPLIES).format(**fill)))
    if rng.random() < 0.6:
        segs.append(("caller", rng.choice(_FOLLOWUPS).format(**fill)))
    return segs


def message_text(rng: random.Random) -> str:
    fill = {"name": rng.choice(_NAMES), "item": rng.choice(_ITEMS), "day": rng.choice(_DAYS)}
    return rng.choice(_MESSAGES).format(**fill)


def phone_number(rng: random.Random) -> str:
    return "+1555" + "".join(rng.choice("0123456789") for _ in range(7))
