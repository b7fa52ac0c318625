"""The voice scenario's frontier programs: steps of the frontier grammar (`scenarios/grammar.py`) over the speech
platform of `scenarios/voice/platform.py` (a paged library, stored settings, history, quota, dubbing, agents).

A program is three to eight steps:

* `lookup` (always): the youngest (or oldest) voice of an accent for a use case, reading every page of the search,
  of several as young the first by name;
* `settings`: a stored setting of that voice changed, which later generations use;
* `clear`: every history item of that voice deleted, the ids collected from every page first (a cursor must name
  an item still in the history);
* `speak` (always): text-to-speech of `text1` with that voice, and `text2` (the short version) instead when the
  quota refuses the first (recovery);
* `dub`: the new speech dubbed into a language, polled until it is done, its result fetched;
* `call`: an agent with that voice, the first phone number no agent has, a call to `to_number1`;
* `steadiest` (where `settings` ran): of the lookup's voices, the one whose stored stability is now the highest (the
  edit moved the ranking, so the voices read before it are stale);
* `aggregate` (closing): the characters used by now, or how many voices of an accent the library has.

Populations (`PROFILES`) draw a fresh platform each: `original` (a few matches on one page), `paged` (more than a
page of matches, the sought voice on the second), `tie` (two as young, the first by name wins; exactly the characters
`text1` needs left), `quota` (too few characters left for `text1`, enough for `text2`), `busy` (a long history of the
voice, the first phone number taken).
"""

from __future__ import annotations

import json
import random

from scenarios.base import VARIANTS, Asset, Call, State, Var
from scenarios.grammar import Mutation, Plan, Result, Step
from scenarios.voice.platform import ACCENTS, AGES, DEFAULT_PAGE_SIZE, HISTORY_PAGE_SIZE, USE_CASES, draw_population

PROFILES = ("original", "paged", "tie", "quota", "busy")
LANGS = {"es": "Spanish", "de": "German", "fr": "French", "it": "Italian"}
_TEXTS = ("Your order has shipped and will arrive on Thursday between nine and noon.",
          "We moved your appointment to Monday at three; reply to this message if that does not suit you.",
          "The meeting room on the second floor is booked for the whole afternoon, as you asked.",
          "Thank you for calling; a member of our team will get back to you before the end of the day.")
_PURPOSE = {"narration": "narration", "conversational": "conversation", "news": "news", "characters": "characters",
            "social_media": "social media", "meditation": "meditation"}  # "the youngest irish voice for ..."
_SHORT = ("Order shipped.", "Moved to Monday.", "Room booked.", "We will call back.")

SEARCH = '''\
def every_voice(**filters):
    voices, token = [], None
    while True:
        page = search_voices(**filters, next_page_token=token)
        voices += page["voices"]
        if not page["has_more"]:
            return voices
        token = page["next_page_token"]
'''
SEARCH_MUTATIONS = [
    Mutation("first_page", '        if not page["has_more"]:\n            return voices\n', "        return voices\n"),
]


class _Draw:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.accent = rng.choice(ACCENTS)
        self.use_case = rng.choice(USE_CASES)
        self.youngest = rng.random() < 0.7
        k = rng.randrange(len(_TEXTS))
        self.text1, self.text2 = _TEXTS[k], _SHORT[k]
        self.clear = self.dub = self.call = self.steadiest = False
        self.stability = None

    def age_order(self) -> list[str]:
        return list(AGES) if self.youngest else list(reversed(AGES))


def _population(d: _Draw, rng: random.Random, profile: str) -> State:
    """A platform shaped for the program: the matches of the lookup (their ages, names, pages), the history of the
    found voice, the quota, and the phone numbers."""
    pop = draw_population(rng, voices=48, numbers=3, character_limit=5000, character_count=rng.randint(0, 400))
    voices = pop["voices"]
    for v in voices:  # only the voices chosen below match the lookup's filters
        if v["labels"]["accent"] == d.accent and v["labels"]["use_case"] == d.use_case:
            v["labels"]["use_case"] = rng.choice([u for u in USE_CASES if u != d.use_case])
    count = {"original": rng.randint(3, 6), "paged": rng.randint(DEFAULT_PAGE_SIZE + 1, DEFAULT_PAGE_SIZE + 5),
             "tie": rng.randint(3, 6), "quota": rng.randint(2, 5), "busy": rng.randint(2, 5)}[profile]
    chosen = rng.sample(voices, count)
    order = d.age_order()
    for v in chosen:
        v["labels"].update(accent=d.accent, use_case=d.use_case, age=rng.choice(order[1:]))
    by_name = sorted(chosen, key=lambda v: (v["name"], v["voice_id"]))
    # The sought voice: never the first by name (a program that takes the first match fails), on the second page
    # in `paged`; in `tie` a later one is as young, and the first of the two by name is the one.
    if profile == "paged":
        index = rng.randrange(DEFAULT_PAGE_SIZE, len(by_name))
    elif profile == "tie":
        index = rng.randrange(1, len(by_name) - 1)
        by_name[rng.randrange(index + 1, len(by_name))]["labels"]["age"] = order[0]
    else:
        index = rng.randrange(1, len(by_name))
    target = by_name[index]
    target["labels"]["age"] = order[0]
    if profile == "original":  # a voice of the accent, as young, for another use case, before it by name
        decoys = [v for v in voices if v not in chosen and (v["name"], v["voice_id"]) < (target["name"], target["voice_id"])]
        if decoys:
            rng.choice(decoys)["labels"].update(accent=d.accent, age=order[0],
                                                use_case=rng.choice([u for u in USE_CASES if u != d.use_case]))
    if d.steadiest:  # which voice is steadiest after the program's own edit (`steadiest`)
        others = [v for v in chosen if v is not target]
        for v in others:
            v["settings"]["stability"] = min(v["settings"]["stability"], 0.6)
        if d.stability > 0.7 and profile == "tie":  # another voice stays steadier than the edit makes this one
            rng.choice(others)["settings"]["stability"] = round(d.stability + 0.05, 2)
        elif d.stability > 0.7:  # the edit lifts the voice to the top; before it, another one was steadiest
            target["settings"]["stability"] = 0.3
            rng.choice(others)["settings"]["stability"] = 0.7
        else:  # the edit takes the voice from the top: alone there (original, busy), or sharing the lead with
            # voices after it by name (so the voices read before the edit, searched for the new top, give it)
            after = [v for v in others if (v["name"], v["voice_id"]) > (target["name"], target["voice_id"])]
            target["settings"]["stability"] = 0.7 if after and profile not in ("original", "busy") else 0.75
            for v in rng.sample(after or others, min(2, len(after or others))):  # often two: the first by name wins
                v["settings"]["stability"] = 0.7
    # History: items of other voices and of the sought one (more than a page of its own in `busy`).
    own = rng.randint(HISTORY_PAGE_SIZE + 1, HISTORY_PAGE_SIZE + 4) if profile == "busy" else rng.randint(1, 4)
    items = [(target, rng.choice(_TEXTS)) for _ in range(own)]
    items += [(rng.choice(voices), rng.choice(_TEXTS)) for _ in range(rng.randint(3, 8))]
    rng.shuffle(items)
    pop["history"] = [{"history_item_id": f"h{rng.getrandbits(32):08x}", "voice_id": v["voice_id"],
                       "voice_name": v["name"], "text": text, "character_count": len(text),
                       "settings": dict(v["settings"])} for v, text in items]
    left = pop["character_limit"] - pop["character_count"]
    if profile == "quota":  # enough for the short text only
        left = rng.randint(len(d.text2), len(d.text1) - 1)
    elif profile == "tie":  # exactly what text1 needs: it fits (only a longer text is refused)
        left = len(d.text1)
    pop["character_count"] = pop["character_limit"] - left
    taken = profile in ("busy", "quota") or rng.random() < 0.3
    if taken:  # the first number belongs to an agent already: the program must find a free one
        agent = {"agent_id": f"agent_{rng.getrandbits(24):06x}", "name": "Front desk",
                 "voice_id": rng.choice(voices)["voice_id"], "first_message": "Hello, front desk."}
        pop["agents"] = [agent]
        pop["phone_numbers"][0]["assigned_agent_id"] = agent["agent_id"]
    state = State()
    data = json.dumps(pop, sort_keys=True).encode()
    state.declare(Var("platform", "platform", {"voices": len(voices)}), Asset("platform", "platform", {}, data))
    number = "+1555" + str(rng.randint(1000000, 9999999))
    for name, value in (("text1", d.text1), ("text2", d.text2), ("to_number1", number)):
        state.declare(Var(name, "text", value))
    state.extra["frontier"] = True
    return state


def setup_lines(state: State) -> list[str]:
    lines = ["# The platform's tools are defined: search_voices, get_voice, get_voice_settings, edit_voice_settings,",
             "# delete_voice, get_subscription, text_to_speech, list_history, get_history_item, delete_history_item,",
             "# create_dubbing, get_dubbing, get_dubbed_audio, create_agent, list_phone_numbers,",
             "# assign_phone_number, make_outbound_call; and PlatformError."]
    for name in ("text1", "text2", "to_number1"):
        lines.append(f"{name} = {state.vars[name].value!r}")
    return lines


# ---------------------------------------------------------------------------------------------------- steps


def lookup(d: _Draw) -> Step:
    extreme = "youngest" if d.youngest else "oldest"
    order = d.age_order()
    line = f'voice1 = min(matches1, key=lambda v: {order!r}.index(v["labels"]["age"]))\n'
    code = f'matches1 = every_voice(accent="{d.accent}", use_case="{d.use_case}")\n' + line
    who = f"the {extreme} {d.accent} voice for {_PURPOSE[d.use_case]}"
    texts = {"natural": [f"Find {who} in the voice library (the `{d.accent}` accent and the `{d.use_case}` use case; "
                         f"of several as {'young' if d.youngest else 'old'}, the first by name). There is always at "
                         f"least one."],
             "steps": [f"Let `matches1` be every voice of `search_voices(accent=\"{d.accent}\", use_case=\"{d.use_case}\")`, "
                       f"reading every page (`next_page_token`) in name order.",
                       f"Let `voice1` be the first of `matches1` whose `labels[\"age\"]` is the earliest in {order!r} "
                       f"that any of `matches1` has (there is always at least one match)."],
             "vague": [f"Pick {who} (`{d.accent}`, `{d.use_case}`; of equally {'young' if d.youngest else 'old'} "
                       f"ones, the first by name; there is always one)."]}
    facts = [("value", "lookup: the accent", (f"`{d.accent}`", f'"{d.accent}"')),
             ("value", "lookup: the use case", (f"`{d.use_case}`", f'"{d.use_case}"')),
             ("value", "lookup: which end", (extreme, f"{order!r}"))]
    muts = [Mutation("aggregate", line, line.replace("voice1 = min(", "voice1 = max(")),
            Mutation("tie_break", line, line.replace("min(matches1,", "min(matches1[::-1],")),
            Mutation("first_match", line, "voice1 = matches1[0]\n"),
            Mutation("predicate", f', use_case="{d.use_case}")', ")")]
    results = [Result('voice1["name"]', {"natural": "the name of the voice found", "steps": '`voice1["name"]`',
                                         "vague": "the chosen voice's name"})]
    calls = [Call("search_voices", [], ["voice1"], code, {})]
    return Step("lookup", code, texts, facts, muts, results, calls, ("lookups", "pagination", "aggregates"))


def settings(d: _Draw) -> Step:
    d.stability = d.rng.choice((0.2, 0.35, 0.8, 0.9))
    code = f'edit_voice_settings(voice1["voice_id"], stability={d.stability})\n'
    texts = {"natural": [f"Store a stability of {d.stability} for that voice (its other settings stay as they are)."],
             "steps": [f"Call `edit_voice_settings(voice1[\"voice_id\"], stability={d.stability})`."],
             "vague": [f"Make that voice's stability {d.stability} from now on."]}
    muts = [Mutation("drop_write", code, "")]
    calls = [Call("edit_voice_settings", ["voice1"], ["voice1.settings"], code, {})]
    return Step("bulk", code, texts, [("value", "settings: the stability", (f"{d.stability}",))], muts, [], calls,
                ("settings",))


def steadiest(d: _Draw) -> Step:
    """After the settings step: of the lookup's voices, the one whose stored stability is now the highest. The
    program's own edit moved the ranking (populations make sure it did), so the voices read before it are stale."""
    d.steadiest = True
    search = f'matches2 = every_voice(accent="{d.accent}", use_case="{d.use_case}")\n'
    code = (search + 'top2 = max(v["settings"]["stability"] for v in matches2)\n'
            'steady1 = next(v for v in matches2 if v["settings"]["stability"] == top2)\n')
    texts = {"natural": [f"Then find, among the library's voices with the `{d.accent}` accent and the `{d.use_case}` "
                         f"use case, the one whose stored stability is now the highest (of several as stable, the "
                         f"first by name)."],
             "steps": [f"Let `matches2` be every voice of `search_voices(accent=\"{d.accent}\", "
                       f"use_case=\"{d.use_case}\")` again (every page), and `steady1` the first of `matches2` whose "
                       f"`settings[\"stability\"]` is the highest among them."],
             "vague": [f"Then, of the `{d.accent}` `{d.use_case}` voices, pick the one with the highest stability as "
                       f"things stand now (ties: the first by name)."]}
    muts = [Mutation("static_tally", search, "matches2 = matches1\n")]
    if d.stability < 0.7:  # the others lead then, often two as steady (lifted, the edited voice leads alone)
        muts.append(Mutation("tie_break", "steady1 = next(v for v in matches2 if",
                             "steady1 = next(v for v in matches2[::-1] if"))
    results = [Result('steady1["name"]', {"natural": "the name of that steadiest voice", "steps": '`steady1["name"]`',
                                          "vague": "the steadiest voice's name"})]
    calls = [Call("search_voices", [], ["steady1"], code, {})]
    return Step("aggregate", code, texts, [], muts, results, calls, ("aggregates", "feedback"))


def clear(d: _Draw) -> Step:
    d.clear = True
    code = ('old1, after = [], None\n'
            'while True:\n'
            '    page = list_history(voice_id=voice1["voice_id"], start_after_history_item_id=after)\n'
            '    old1 += [item["history_item_id"] for item in page["history"]]\n'
            '    if not page["has_more"]:\n'
            '        break\n'
            '    after = page["last_history_item_id"]\n'
            'for hid in old1:\n'
            '    delete_history_item(hid)\n')
    texts = {"natural": ["Delete every history item made with that voice so far, and count them."],
             "steps": ["Collect into `old1` the ids of every page of `list_history(voice_id=voice1[\"voice_id\"])` "
                       "(follow `last_history_item_id` while `has_more`), then `delete_history_item` each of them."],
             "vague": ["Clear that voice's whole history so far, keeping count of the items removed."]}
    muts = [Mutation("first_page", '    if not page["has_more"]:\n        break\n', "    break\n"),
            Mutation("drop_write", "    delete_history_item(hid)\n", "    pass\n")]
    results = [Result("len(old1)", {"natural": "how many history items were deleted", "steps": "`len(old1)`",
                                    "vague": "the number of items removed"})]
    calls = [Call("list_history", ["voice1"], ["old1"], code, {}), Call("delete_history_item", ["old1"], [], code, {})]
    return Step("loop", code, texts, [], muts, results, calls, ("loops", "pagination"))


def speak(d: _Draw) -> Step:
    code = ('try:\n'
            '    spoken1 = text_to_speech(text1, voice1["voice_id"])\n'
            'except PlatformError as error:\n'
            '    if error.code != "quota_exceeded":\n'
            '        raise\n'
            '    spoken1 = text_to_speech(text2, voice1["voice_id"])\n')
    texts = {"natural": ["Then have that voice speak `text1`, or `text2` instead (which always fits) if the character "
                         "quota left cannot take `text1` (a text exactly as long as what is left still fits)."],
             "steps": ["Set `spoken1 = text_to_speech(text1, voice1[\"voice_id\"])`; on a `PlatformError` whose code is "
                       "`quota_exceeded`, set `spoken1 = text_to_speech(text2, voice1[\"voice_id\"])` instead (it "
                       "always fits)."],
             "vague": ["Generate `text1` in that voice, falling back to the shorter `text2` (which always fits) when "
                       "the quota is too low for it."]}
    facts = [("input", "the setup variable `text1`", ("`text1`",)), ("input", "the setup variable `text2`", ("`text2`",))]
    muts = [Mutation("no_retry", '    spoken1 = text_to_speech(text2, voice1["voice_id"])\n', "    raise\n"),
            Mutation("always_create", "    spoken1 = text_to_speech(text1,", "    spoken1 = text_to_speech(text2,")]
    results = [Result('spoken1["history_item_id"]', {"natural": "the new history item's id",
                                                     "steps": '`spoken1["history_item_id"]`',
                                                     "vague": "the id of the speech generated"})]
    calls = [Call("text_to_speech", ["voice1", "text1"], ["spoken1"], code, {})]
    return Step("recovery", code, texts, facts, muts, results, calls, ("recovery",))


def dub(d: _Draw) -> Step:
    d.dub = True
    lang = d.rng.choice(sorted(LANGS))
    code = (f'job1 = create_dubbing(spoken1["history_item_id"], "{lang}")["dubbing_id"]\n'
            'while get_dubbing(job1)["status"] != "dubbed":\n'
            '    pass\n'
            'dubbed1 = get_dubbed_audio(job1)\n')
    texts = {"natural": [f"Dub that speech into {LANGS[lang]} (`{lang}`) and fetch the dubbed result."],
             "steps": [f"Start `create_dubbing(spoken1[\"history_item_id\"], \"{lang}\")`, call `get_dubbing` until its "
                       f"status is `dubbed`, then set `dubbed1 = get_dubbed_audio(...)`."],
             "vague": [f"Get {'an' if LANGS[lang][0] in 'AEIOU' else 'a'} {LANGS[lang]} dub of it (`{lang}`) once it "
                       f"is ready."]}
    muts = [Mutation("no_retry", 'while get_dubbing(job1)["status"] != "dubbed":\n    pass\n', "")]
    results = [Result('dubbed1["text"]', {"natural": "the dubbed text", "steps": '`dubbed1["text"]`',
                                          "vague": "the dubbed text"})]
    calls = [Call("create_dubbing", ["spoken1"], ["job1"], code, {}), Call("get_dubbed_audio", ["job1"], ["dubbed1"],
                                                                            code, {})]
    return Step("recovery", code, texts, [("value", "dub: the language", (f"`{lang}`", f'"{lang}"'))], muts,
                results, calls,
                ("recovery",))


def call(d: _Draw) -> Step:
    d.call = True
    name = d.rng.choice(("Reminders", "Dispatch", "Concierge"))
    code = (f'agent1 = create_agent("{name}", voice1["voice_id"], text2)["agent_id"]\n'
            'free1 = next(n for n in list_phone_numbers() if n["assigned_agent_id"] is None)\n'
            'assign_phone_number(free1["phone_number_id"], agent1)\n'
            'call1 = make_outbound_call(agent1, free1["phone_number_id"], to_number1)\n')
    texts = {"natural": [f"Create an agent named \"{name}\" that speaks with that voice and opens with `text2`, give "
                         f"it the first phone number (in list order) that no agent has (there is always one), and call "
                         f"`to_number1` through it."],
             "steps": [f"Create the agent (`create_agent(\"{name}\", voice1[\"voice_id\"], text2)`), assign it the first "
                       f"number of `list_phone_numbers()` whose `assigned_agent_id` is None (there is one), and set "
                       f"`call1 = make_outbound_call(...)` to `to_number1` from that number."],
             "vague": [f"Set up an agent \"{name}\" with that voice, greeting with `text2`, on the first free phone "
                       f"number in list order (one is always free), and have it call `to_number1`."]}
    facts = [("input", "the setup variable `to_number1`", ("`to_number1`",)),
             ("value", "call: the agent's name", (f"\"{name}\"",))]
    muts = [Mutation("wrong_item", 'free1 = next(n for n in list_phone_numbers() if n["assigned_agent_id"] is None)\n',
                     "free1 = list_phone_numbers()[0]\n")]
    results = [Result('call1["from_number"]', {"natural": "the phone number the call came from (the number itself)",
                                               "steps": '`call1["from_number"]`',
                                               "vague": "the calling phone number itself"})]
    calls = [Call("create_agent", ["voice1"], ["agent1"], code, {}),
             Call("list_phone_numbers", [], ["free1"], code, {}),
             Call("assign_phone_number", ["free1", "agent1"], [], code, {}),
             Call("make_outbound_call", ["agent1", "free1", "to_number1"], ["call1"], code, {})]
    return Step("lookup", code, texts, facts, muts, results, calls, ("lookups",))


def aggregate(d: _Draw) -> Step:
    if d.rng.random() < 0.5:
        code = 'used1 = get_subscription()["character_count"]\n'
        texts = {"natural": ["Finally read how many characters of the quota are used now."],
                 "steps": ["Let `used1` be `get_subscription()[\"character_count\"]`."],
                 "vague": ["Check how many characters of the quota are used at the end."]}
        result = Result("used1", {"natural": "the characters used", "steps": "`used1`", "vague": "the usage"})
        api = "get_subscription"
    else:
        code = f'count1 = len(every_voice(accent="{d.accent}"))\n'
        texts = {"natural": [f"Finally count the library's voices with the `{d.accent}` accent (every page)."],
                 "steps": [f"Let `count1` be the number of voices `search_voices(accent=\"{d.accent}\")` gives over "
                           f"every page."],
                 "vague": [f"Count all voices of the library whose accent label is `{d.accent}`."]}
        result = Result("count1", {"natural": "that count", "steps": "`count1`", "vague": "that count"})
        api = "search_voices"
    return Step("aggregate", code, texts, [], [], [result], [Call(api, [], [result.expr], code, {})], ("aggregates",))


def plan(scenario, rng: random.Random) -> Plan:
    d = _Draw(rng)
    steps = [lookup(d)]
    if rng.random() < 0.6:
        steps.append(settings(d))
    if rng.random() < 0.7:
        steps.append(clear(d))
    steps.append(speak(d))
    if rng.random() < 0.65:
        steps.append(dub(d))
    if rng.random() < 0.65:
        steps.append(call(d))
    if d.stability is not None and rng.random() < 0.5:  # after every step that speaks of "that voice"
        steps.append(steadiest(d))
    steps.append(aggregate(d))
    intro = ("The setup block defines the speech platform's tools (a voice library searched a page at a time, "
             "stored voice settings, a history, a character quota, dubbing jobs, agents and phone numbers) and "
             "`PlatformError`, and the texts `text1` and `text2` and the number `to_number1`.")
    return Plan(scenario, SEARCH + "\n", list(SEARCH_MUTATIONS), steps, lambda r, p: _population(d, r, p), PROFILES,
                {v: intro for v in VARIANTS})
