"""The voice lab's frontier tier: the state a real speech platform keeps, as one plain-Python object.

Where the paper tier's `VoiceLab` has a fixed ten-voice library and no memory beyond the speeches it made, a
`Platform` holds what ElevenLabs' API and MCP server expose (names follow them where they apply):

* a **voice library** drawn per test case (40 and more voices), each with labels (gender, age, accent, language,
  use case), a category (premade, cloned, generated, professional) and stored **settings** (stability,
  similarity_boost, style) that generation uses unless a call overrides them; `search_voices` filters on any
  combination and answers one page at a time (`page_size`, default 10, and an opaque `next_page_token`);
* a **history**: every generation is an item (`history_item_id`), listed newest first a page at a time
  (`start_after_history_item_id`), fetched, deleted;
* a **character quota**: text-to-speech uses one character per character of text; a request longer than what is
  left is refused with `quota_exceeded` and changes nothing;
* **asynchronous jobs**: a dubbing of a history item into another language is `dubbing` for a documented number of
  polls (`DUBBING_POLLS`), then `dubbed`; its result can be fetched only then (`not_ready` before);
* **agents and phone numbers**: an agent speaks with a library voice; a phone number (provisioned per test case)
  is assigned to one agent; an outbound call goes through an agent and a number assigned to it.

Every failure is a `PlatformError` with a documented `code` (and the HTTP status a REST client would see), so
recovery can be tested. Ids are minted in order per platform, so a replay gives the same ids. Pure Python: the
builder, the sandbox and the MCP server import it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

CATEGORIES = ("premade", "cloned", "generated", "professional")
AGES = ("young", "middle_aged", "old")  # in this order: "the youngest" is the first one a voice can have
LABELS = ("gender", "age", "accent", "language", "use_case")
SETTINGS = ("stability", "similarity_boost", "style")
DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 100
HISTORY_PAGE_SIZE = 10
DUBBING_POLLS = 2  # get_dubbing answers "dubbing" this many times, then "dubbed"


class PlatformError(ValueError):
    """A refused request: `code` names the documented case, `status` is what a REST client would see."""

    def __init__(self, code: str, status: int, message: str):
        super().__init__(f"{code}: {message}")
        self.code, self.status, self.detail = code, status, message


def _fail(code: str, status: int, message: str):
    raise PlatformError(code, status, message)


def _setting(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        _fail("invalid_settings", 422, f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


@dataclass
class Job:
    dubbing_id: str
    history_item_id: str
    target_lang: str
    polls: int = 0

    @property
    def status(self) -> str:
        return "dubbed" if self.polls > DUBBING_POLLS else "dubbing"


@dataclass
class Platform:
    """One test case's platform. `voices`: the library, in the order it was created (each a dict with voice_id,
    name, category, description, labels and settings); `phone_numbers`: provisioned numbers; `character_limit`
    and `character_count`: the quota and what is used of it."""

    voices: list[dict]
    phone_numbers: list[dict] = field(default_factory=list)
    character_limit: int = 10_000
    character_count: int = 0
    history: list[dict] = field(default_factory=list)  # oldest first (listings answer newest first)
    jobs: dict[str, Job] = field(default_factory=dict)
    agents: dict[str, dict] = field(default_factory=dict)
    calls: list[dict] = field(default_factory=list)
    minted: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_population(cls, population: dict) -> "Platform":
        """A platform from a test case's stored population (plain data, copied: the platform changes it)."""
        p = copy.deepcopy(population)
        return cls(p["voices"], p.get("phone_numbers", []), p.get("character_limit", 10_000),
                   p.get("character_count", 0), p.get("history", []),
                   agents={a["agent_id"]: a for a in p.get("agents", [])})

    def _mint(self, prefix: str) -> str:
        self.minted[prefix] = self.minted.get(prefix, 0) + 1
        return f"{prefix}_{self.minted[prefix]}"

    def _voice(self, voice_id: Any) -> dict:
        for v in self.voices:
            if v["voice_id"] == voice_id:
                return v
        _fail("voice_not_found", 404, f"A voice with the voice_id {voice_id!r} was not found.")

    def _item(self, history_item_id: Any) -> dict:
        for item in self.history:
            if item["history_item_id"] == history_item_id:
                return item
        _fail("history_item_not_found", 404, f"No history item with id {history_item_id!r}.")

    # ------------------------------------------------------------------------------------------ library

    def search_voices(self, search: str | None = None, category: str | None = None, gender: str | None = None,
                      age: str | None = None, accent: str | None = None, language: str | None = None,
                      use_case: str | None = None, page_size: int = DEFAULT_PAGE_SIZE,
                      next_page_token: str | None = None) -> dict:
        """Voices matching every filter given (labels and category exactly, `search` as a case-insensitive part of
        the name or description), ordered by name, one page: {"voices", "has_more", "next_page_token"}."""
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
            _fail("invalid_page_size", 422, f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}")
        filters = {"category": category, "gender": gender, "age": age, "accent": accent, "language": language,
                   "use_case": use_case}
        term = (search or "").casefold()
        found = sorted((v for v in self.voices
                        if (term in v["name"].casefold() or term in v["description"].casefold())
                        and all(want is None or (v["category"] if key == "category" else v["labels"][key]) == want
                                for key, want in filters.items())), key=lambda v: (v["name"], v["voice_id"]))
        key = repr(sorted((k, w) for k, w in {**filters, "search": term}.items() if w))
        start = 0
        if next_page_token is not None:
            head, _, rest = str(next_page_token).partition(":")
            if not head.isdigit() or rest != _digest(key):
                _fail("invalid_page_token", 400, "next_page_token does not belong to this search")
            start = int(head)
        page = found[start:start + page_size]
        more = start + page_size < len(found)
        return {"voices": [copy.deepcopy(v) for v in page], "has_more": more,
                "next_page_token": f"{start + page_size}:{_digest(key)}" if more else None}

    def get_voice(self, voice_id: str) -> dict:
        """One voice: voice_id, name, category, description, labels and stored settings (`voice_not_found`)."""
        return copy.deepcopy(self._voice(voice_id))

    def get_voice_settings(self, voice_id: str) -> dict:
        """A voice's stored settings: stability, similarity_boost and style."""
        return dict(self._voice(voice_id)["settings"])

    def edit_voice_settings(self, voice_id: str, stability: float | None = None,
                            similarity_boost: float | None = None, style: float | None = None) -> dict:
        """Store new settings for a voice (the ones not given keep their value); later generations use them."""
        voice = self._voice(voice_id)
        given = {"stability": stability, "similarity_boost": similarity_boost, "style": style}
        new = {k: _setting(k, v) for k, v in given.items() if v is not None}
        voice["settings"].update(new)
        return dict(voice["settings"])

    def delete_voice(self, voice_id: str) -> dict:
        """Remove a voice from the library. Its history items stay (they name a voice that no longer exists); a
        voice an agent speaks with cannot be deleted (`voice_in_use`)."""
        voice = self._voice(voice_id)
        users = sorted(a["agent_id"] for a in self.agents.values() if a["voice_id"] == voice_id)
        if users:
            _fail("voice_in_use", 409, f"voice {voice_id!r} is used by {', '.join(users)}")
        self.voices.remove(voice)
        return {"status": "ok"}

    # --------------------------------------------------------------------------------- speech and quota

    def get_subscription(self) -> dict:
        """The character quota: character_count (used so far) and character_limit."""
        return {"character_count": self.character_count, "character_limit": self.character_limit}

    def text_to_speech(self, text: str, voice_id: str, stability: float | None = None,
                       similarity_boost: float | None = None, style: float | None = None) -> dict:
        """A generation: the voice's stored settings, each overridden where given; the new history item."""
        if not isinstance(text, str) or not text:
            _fail("invalid_text", 422, "text must be a non-empty string")
        voice = self._voice(voice_id)
        settings = dict(voice["settings"])
        settings.update({k: _setting(k, v) for k, v in
                         {"stability": stability, "similarity_boost": similarity_boost, "style": style}.items()
                         if v is not None})
        left = self.character_limit - self.character_count
        if len(text) > left:
            _fail("quota_exceeded", 401, f"this request needs {len(text)} characters and {left} are left")
        self.character_count += len(text)
        item = {"history_item_id": self._mint("hist"), "voice_id": voice_id, "voice_name": voice["name"],
                "text": text, "character_count": len(text), "settings": settings}
        self.history.append(item)
        return copy.deepcopy(item)

    # ------------------------------------------------------------------------------------------ history

    def list_history(self, page_size: int = HISTORY_PAGE_SIZE, start_after_history_item_id: str | None = None,
                     voice_id: str | None = None) -> dict:
        """History items newest first, one page: {"history", "has_more", "last_history_item_id"}; the next page
        starts after `last_history_item_id`. Each call pages the history as it is then (deleted items are gone),
        and `voice_id` keeps the items made with that voice."""
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
            _fail("invalid_page_size", 422, f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}")
        items = [i for i in reversed(self.history) if voice_id is None or i["voice_id"] == voice_id]
        start = 0
        if start_after_history_item_id is not None:
            ids = [i["history_item_id"] for i in items]
            if start_after_history_item_id not in ids:
                _fail("history_item_not_found", 404, f"No history item with id {start_after_history_item_id!r}.")
            start = ids.index(start_after_history_item_id) + 1
        page = items[start:start + page_size]
        return {"history": copy.deepcopy(page), "has_more": start + page_size < len(items),
                "last_history_item_id": page[-1]["history_item_id"] if page else None}

    def get_history_item(self, history_item_id: str) -> dict:
        """One history item (`history_item_not_found`)."""
        return copy.deepcopy(self._item(history_item_id))

    def delete_history_item(self, history_item_id: str) -> dict:
        """Remove an item from the history. The characters it used stay used."""
        self.history.remove(self._item(history_item_id))
        return {"status": "ok"}

    # --------------------------------------------------------------------------------------------- jobs

    def create_dubbing(self, history_item_id: str, target_lang: str) -> dict:
        """Start dubbing a history item into another language: {"dubbing_id", "status": "dubbing"}."""
        item = self._item(history_item_id)
        if not isinstance(target_lang, str) or not target_lang:
            _fail("invalid_language", 422, "target_lang must be a language code such as 'es'")
        job = Job(self._mint("dub"), item["history_item_id"], target_lang)
        self.jobs[job.dubbing_id] = job
        return {"dubbing_id": job.dubbing_id, "status": job.status}

    def get_dubbing(self, dubbing_id: str) -> dict:
        """The job's status: "dubbing" for the first DUBBING_POLLS polls, then "dubbed"."""
        job = self._job(dubbing_id)
        job.polls += 1
        return {"dubbing_id": dubbing_id, "status": job.status, "target_lang": job.target_lang}

    def get_dubbed_audio(self, dubbing_id: str) -> dict:
        """A finished dubbing's result; `not_ready` (425) while get_dubbing still answers "dubbing"."""
        job = self._job(dubbing_id)
        if job.status != "dubbed":
            _fail("not_ready", 425, f"dubbing {dubbing_id!r} is still in progress; poll get_dubbing")
        item = next((i for i in self.history if i["history_item_id"] == job.history_item_id), None)
        return {"dubbing_id": dubbing_id, "target_lang": job.target_lang,
                "text": None if item is None else f"[{job.target_lang}] {item['text']}"}

    def _job(self, dubbing_id: Any) -> Job:
        if dubbing_id not in self.jobs:
            _fail("dubbing_not_found", 404, f"No dubbing with id {dubbing_id!r}.")
        return self.jobs[dubbing_id]

    # ------------------------------------------------------------------------------- agents and calls

    def create_agent(self, name: str, voice_id: str, first_message: str) -> dict:
        """A conversational agent that speaks with a library voice: {"agent_id", ...}. It has no phone number
        until one is assigned to it."""
        self._voice(voice_id)
        agent = {"agent_id": self._mint("agent"), "name": name, "voice_id": voice_id, "first_message": first_message}
        self.agents[agent["agent_id"]] = agent
        return dict(agent)

    def list_phone_numbers(self) -> list[dict]:
        """The provisioned numbers: phone_number_id, label, phone_number and assigned_agent_id (None: free)."""
        return copy.deepcopy(self.phone_numbers)

    def assign_phone_number(self, phone_number_id: str, agent_id: str) -> dict:
        """Make a number an agent's (the agent it had before loses it)."""
        number = next((n for n in self.phone_numbers if n["phone_number_id"] == phone_number_id), None)
        if number is None:
            _fail("phone_number_not_found", 404, f"No phone number with id {phone_number_id!r}.")
        if agent_id not in self.agents:
            _fail("agent_not_found", 404, f"No agent with id {agent_id!r}.")
        number["assigned_agent_id"] = agent_id
        return dict(number)

    def make_outbound_call(self, agent_id: str, agent_phone_number_id: str, to_number: str) -> dict:
        """Call `to_number` from a number assigned to the agent (`phone_number_not_assigned` otherwise)."""
        if agent_id not in self.agents:
            _fail("agent_not_found", 404, f"No agent with id {agent_id!r}.")
        number = next((n for n in self.phone_numbers if n["phone_number_id"] == agent_phone_number_id), None)
        if number is None or number.get("assigned_agent_id") != agent_id:
            _fail("phone_number_not_assigned", 409,
                  f"phone number {agent_phone_number_id!r} is not assigned to agent {agent_id!r}")
        call = {"conversation_id": self._mint("conv"), "agent_id": agent_id,
                "from_number": number["phone_number"], "to_number": to_number,
                "first_message": self.agents[agent_id]["first_message"],
                "voice_id": self.agents[agent_id]["voice_id"]}
        self.calls.append(call)
        return dict(call)

    # -------------------------------------------------------------------------------------------- state

    def state(self) -> dict:
        """Everything the platform holds, as plain data: what a frontier task's oracle compares."""
        return {"voices": copy.deepcopy(self.voices), "character_count": self.character_count,
                "history": copy.deepcopy(self.history),
                "dubbings": [{"dubbing_id": j.dubbing_id, "history_item_id": j.history_item_id,
                              "target_lang": j.target_lang} for j in self.jobs.values()],
                "agents": [dict(a) for a in self.agents.values()],
                "phone_numbers": copy.deepcopy(self.phone_numbers), "calls": [dict(c) for c in self.calls]}


TOOLS = ("search_voices", "get_voice", "get_voice_settings", "edit_voice_settings", "delete_voice",
         "get_subscription", "text_to_speech", "list_history", "get_history_item", "delete_history_item",
         "create_dubbing", "get_dubbing", "get_dubbed_audio", "create_agent", "list_phone_numbers",
         "assign_phone_number", "make_outbound_call")


def _digest(text: str) -> str:
    import hashlib

    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


# ------------------------------------------------------------------------------------------- populations

_NAMES = ("Ada", "Basil", "Cora", "Dev", "Edith", "Finn", "Gwen", "Hal", "Ines", "Jude", "Kira", "Leo", "Mina",
          "Nico", "Opal", "Pax", "Quinn", "Rhea", "Sami", "Theo", "Uma", "Vik", "Wren", "Xavi", "Yara", "Zane",
          "Alba", "Bo", "Cyrus", "Dina", "Emil", "Fay", "Gus", "Hana", "Ivo", "Jia", "Kai", "Lior", "Maud", "Nell",
          "Otto", "Pia", "Remy", "Suki", "Tove", "Ugo", "Vera", "Wes", "Ximena", "Yusuf", "Zora", "Arlo", "Bea",
          "Cole", "Dora", "Eli", "Flo", "Gil", "Hugo", "Iris")
ACCENTS = ("american", "british", "australian", "irish", "indian", "scottish")
LANGUAGES = ("en", "es", "de", "fr", "it", "pt")
USE_CASES = ("narration", "conversational", "news", "characters", "social_media", "meditation")
_TONES = ("warm", "crisp", "calm", "bright", "deep", "soft", "lively", "steady")
_ROLES = ("narrator", "presenter", "storyteller", "announcer", "host", "companion")


def draw_voice(rng, voice_id: str, name: str) -> dict:
    """One library voice with every label drawn, and default-ish stored settings."""
    return {"voice_id": voice_id, "name": name, "category": rng.choice(CATEGORIES),
            "description": f"{rng.choice(_TONES)} {rng.choice(_ROLES)}",
            "labels": {"gender": rng.choice(("female", "male")), "age": rng.choice(AGES),
                       "accent": rng.choice(ACCENTS), "language": rng.choice(LANGUAGES),
                       "use_case": rng.choice(USE_CASES)},
            "settings": {"stability": rng.choice((0.3, 0.4, 0.5, 0.6, 0.7)),
                         "similarity_boost": rng.choice((0.5, 0.6, 0.75, 0.8)), "style": rng.choice((0.0, 0.1, 0.2))}}


def draw_population(rng, voices: int = 48, numbers: int = 2, character_limit: int = 10_000,
                    character_count: int = 0) -> dict:
    """A platform's stored population: `voices` library voices with distinct names (ids minted from the draw, so
    another test case's ids are other ids), `numbers` provisioned phone numbers, and the quota."""
    names = rng.sample(_NAMES, min(voices, len(_NAMES)))
    names += [f"{rng.choice(_NAMES)} {k}" for k in range(voices - len(names))]
    library = [draw_voice(rng, f"v{rng.getrandbits(40):010x}", name) for name in names]
    phones = [{"phone_number_id": f"pn{rng.getrandbits(32):08x}", "label": f"line {k + 1}",
               "phone_number": "+1555" + "".join(rng.choice("0123456789") for _ in range(7)),
               "assigned_agent_id": None} for k in range(numbers)]
    return {"voices": library, "phone_numbers": phones, "character_limit": character_limit,
            "character_count": character_count}


# ------------------------------------------------------------------------------------------------ tools

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def tool_specs() -> list:
    """The platform's methods as tools (`--mode tools`): JSON-schema parameters from their signatures, the
    description from their docstrings. Ids travel as strings, so no parameter takes a handle."""
    import inspect

    from scenarios.calling import ToolSpec

    specs = []
    for name in TOOLS:
        method = getattr(Platform, name)
        properties, required = {}, []
        for param in list(inspect.signature(method).parameters.values())[1:]:
            kinds = [k.strip() for k in str(param.annotation).split("|")]
            types = [_JSON_TYPES[k] for k in kinds if k in _JSON_TYPES] + (["null"] if "None" in kinds else [])
            schema = {"type": types[0] if len(types) == 1 else types}
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
            else:
                schema["default"] = param.default
            properties[param.name] = schema
        doc = inspect.getdoc(method) or name.replace("_", " ")
        specs.append(ToolSpec(name, doc, {"type": "object", "properties": properties, "required": required}))
    return specs
