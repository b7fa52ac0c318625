"""The session scenario's frontier programs: steps of the frontier grammar (`scenarios/grammar.py`) over the
frontier tier of the session service (paged listings, versioned writes, members, bulk delete).

A program is three to five steps drawn from:

* a lookup: the session of a collection titled `title1`, the newest one owned by an address, the one with the
  most (or fewest) members with a stated tie-break; or an *ensure* (lookup or create: the session titled `title1`
  gets a member, or is added when there is none);
* a loop over every page of a collection, a predicate on the owner or the members, and a body of one to three
  calls (remove or add a member, hand the session over, delete it, remove a member and retitle it), or a branch
  on what each session holds (*offboard*: hand a session its owner leaves to its first other member, or delete it
  when it has none), or a decision on counts its own writes move (*spread*: hand a session its owner leaves to
  whichever of its other members owns the fewest of the collection at that moment);
* in three programs of four, a second loop of the same kind over a collection no other step reads (its list is
  `changed2`);
* a closing step: rename the session found first, retrying once on 412 with what a fresh read answers (recovery:
  the loop before it changes that session in some profiles and leaves it alone in `none`, so that some test case
  takes each branch), an aggregate read after the writes (a count, a total, a maximum), or a bulk delete by owner.

The reference reads listings with a paging helper (`every_session`) and, like any careful program, acts on what
the service answers now: a session the loop changed has a newer version and other members than when it was found.

Populations (`population`): every test input is drawn afresh (new sources, people, titles, ids and versions) by a
profile that shapes the collections the program reads: `original` (8-12 sessions), `none` (no session matches the
loop), `single` (one does), `page` (exactly one page, the last session matching), `page+1` (the only match on the
second page), `large` (51 sessions: more than the largest page). Lookups always find their session; ties are made
where a tie-break is stated; the session titled `title1` also exists, as a decoy, in another collection.
"""

from __future__ import annotations

import json
import random
import re

from scenarios.base import FRONTIER, VARIANTS, Asset, Call, State, Var, join_names
from scenarios.grammar import Mutation, Plan, Result, Step
from scenarios.session import words
from scenarios.session.frontier import DEFAULT_PAGE, MAX_PAGE
from scenarios.session.machine import ASSET, EMAIL, SOURCE, TYPE_WORDS
from scenarios.session.store import asset_data

TITLE = "title"
PROFILES = ("original", "none", "single", "page", "page+1", "large")
SUFFIXES = (" (archived)", " (reviewed)", " - final", " (shared)")
SECOND_LOOP = 0.75  # how often a program has a second loop, over a collection no other step reads

HELPER = '''\
def every_session(url, body=None):
    sessions, params = [], {}
    while True:
        page = requests.get(url, params=params) if body is None else requests.post(url, params=params, json=body)
        page = page.json()
        sessions += page["items"]
        if page["next"] is None:
            return sessions
        params = {"cursor": page["next"]}
'''
# Helpers the reference defines when its steps use them (so that every mutation of one is a change of behaviour).
SAME_PERSON = '''
def same_person(a, b):
    return a.lower() == b.lower()
'''
MEMBERS = '''
def members(s):
    return s["data"].get("members") or []
'''
IS_MEMBER = '''
def is_member(s, email):
    return any(same_person(m, email) for m in members(s))
'''
HELPER_MUTATIONS = [
    Mutation("first_page", '        if page["next"] is None:\n            return sessions\n',
             "        return sessions\n"),
    Mutation("last_page", '        sessions += page["items"]\n        if page["next"] is None:\n            return sessions\n',
             '        if page["next"] is None:\n            return sessions\n        sessions += page["items"]\n'),
    # the largest page, and no further: both edits make the one mutant
    Mutation("one_big_page", HELPER, HELPER.replace("params = [], {}", f'params = [], {{"limit": {MAX_PAGE}}}')
             .replace('        if page["next"] is None:\n            return sessions\n', "        return sessions\n")),
    Mutation("missing_field", 's["data"].get("members") or []', 's["data"]["members"]'),
    Mutation("null_field", 's["data"].get("members") or []', 's["data"].get("members", [])'),
    Mutation("exact_case", "return a.lower() == b.lower()", "return a == b"),
]


def _tw(type_: str) -> str:
    return TYPE_WORDS[type_]


class _Draw:
    """The choices of one program: which collections, addresses and titles its steps use, and how a population
    must be shaped for them (`shapers`, applied by priority: loops, then lookups, then what depends on both)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.types: list[str] = []  # collections of src1 the program reads, by type
        self.emails: list[str] = []  # setup e-mail variables
        self.hidden: list[str] = []  # addresses a population needs that no setup variable names
        self.title = False
        self.shapers = []
        self.urls: dict[str, str] = {}
        self.url_lines: list[str] = []

    def type(self, avoid: tuple[str, ...] = ()) -> str:
        t = self.rng.choice([t for t in words.CONTENT_TYPES if t not in avoid])
        if t not in self.types:
            self.types.append(t)
        return t

    def url(self, type_: str) -> str:
        """The variable holding the collection's URL, its line written once, before the first step."""
        if type_ not in self.urls:
            name = f"{type_}_url"
            self.urls[type_] = name
            self.url_lines.append(f'{name} = f"{{BASE_URL}}/api/sessions/{{src1}}/{type_}"\n')
        return self.urls[type_]

    def email(self, avoid: tuple[str, ...] = ()) -> str:
        for name in self.emails:
            if name not in avoid:
                if self.rng.random() < 0.5:
                    return name
        name = f"email{len(self.emails) + 1}"
        self.emails.append(name)
        return name


# ------------------------------------------------------------------------------------------ predicates


def _pred(kind: str, email: str, var: str = "s") -> str:
    return f'same_person({var}["data"]["owner"], {email})' if kind == "owner" else f'is_member({var}, {email})'


def _pred_other(kind: str, email: str, var: str = "s") -> str:
    return _pred("member" if kind == "owner" else "owner", email, var)


def _pred_text(kind: str, email: str) -> dict[str, str]:
    e = f"`{email}`"
    if kind == "owner":
        return {"natural": f"that {e} owns", "steps": f"whose owner is {e}", "vague": f"owned by {e}"}
    return {"natural": f"that lists {e} as a member", "steps": f"whose members include {e}",
            "vague": f"that has {e} among its members"}


def _same(a: str, b: str) -> bool:
    """E-mail addresses name the same person whatever their case (the frontier service's rule)."""
    return a.lower() == b.lower()


def _members(data: dict) -> list[str]:
    """A session's members: none when its `members` field is missing or null."""
    return data.get("members") or []


def _matches(kind: str, address: str, data: dict) -> bool:
    if kind == "owner":
        return _same(data["owner"], address)
    return any(_same(m, address) for m in _members(data))


def _make_match(kind: str, address: str, data: dict, rng: random.Random, people: list[str], yes: bool) -> None:
    if kind == "owner":
        if yes:
            data["owner"] = address
        elif _same(data["owner"], address):
            data["owner"] = rng.choice([p for p in people if not _same(p, address)])
    elif yes and not _matches("member", address, data):
        data["members"] = _members(data) + [address]
    elif not yes and _matches("member", address, data):
        data["members"] = [m for m in data["members"] if not _same(m, address)]


def _size(profile: str, rng: random.Random) -> int:
    return {"original": rng.randint(8, 12), "none": rng.randint(3, 7), "single": rng.randint(2, 7),
            "page": DEFAULT_PAGE, "page+1": DEFAULT_PAGE + 1, "large": MAX_PAGE + 1}[profile]


def _match_positions(profile: str, n: int, rng: random.Random) -> list[int]:
    """Where in a collection of `n` the loop's matches stand, by profile."""
    if profile == "none":
        return []
    if profile == "single":
        return [rng.randrange(n)]
    if profile == "page":
        return sorted({n - 1, *rng.sample(range(n - 1), rng.randint(0, 2))})
    if profile == "page+1":
        return [n - 1]
    if profile == "large":
        return sorted({n - 1, *rng.sample(range(n - 1), rng.randint(1, 3))})
    picks = set(rng.sample(range(n), rng.randint(2, 4)))
    if not any(p >= DEFAULT_PAGE for p in picks):
        picks.add(rng.randrange(DEFAULT_PAGE, n))
    return sorted(picks)


# ----------------------------------------------------------------------------------------------- steps


def _intro(d: _Draw) -> dict[str, str]:
    parts = ["the source `src1`"]
    if d.emails:
        parts.append(("the e-mail address " if len(d.emails) == 1 else "the e-mail addresses ")
                     + join_names(d.emails))
    if d.title:
        parts.append("the title `title1`")
    text = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    line = (f"The setup block sets `BASE_URL` to the address of the session service (frontier tier: paged "
            f"listings and versioned writes), which already holds many sessions, and defines {text}.")
    return {v: line for v in VARIANTS}


def lookup(d: _Draw) -> tuple[Step, dict]:
    """Find one session of a collection; returns the step and what later steps need to know of it."""
    rng = d.rng
    type_ = d.type()
    url = d.url(type_)
    kind = rng.choice(("title", "newest", "title", "newest", "most", "fewest"))
    t, tw = f"`{type_}`", _tw(type_)
    facts = [("input", "the setup variable `src1`", ("`src1`",)),
             ("value", "lookup: the session type", (t, f"{tw} session", f"{tw} sessions"))]
    muts, levers = [], ("lookups", "pagination")
    code = f"sessions1 = every_session({url})\n"
    how: tuple = ("title",)
    exists = "there is always exactly one"
    if kind == "title":
        d.title = True
        line = 'found1 = next(s for s in sessions1 if s["data"]["title"] == title1)\n'
        what = {"natural": f"the {t} session of `src1` titled `title1`",
                "steps": f"the session in `sessions1` whose title is `title1`",
                "vague": f"the {tw} session of `src1` whose title is `title1`"}
        facts.append(("input", "the setup variable `title1`", ("`title1`",)))
        d.shapers.append((1, lambda pop, rng, profile: _shape_title(pop, rng, profile, type_)))
    elif kind == "newest":
        email = d.email()
        line = f'found1 = [s for s in sessions1 if {_pred("owner", email)}][-1]\n'
        muts += [Mutation("first_match", line, line.replace("[-1]", "[0]")),
                 Mutation("predicate", line, line.replace(_pred("owner", email), _pred("member", email)))]
        what = {"natural": f"the newest {t} session of `src1` that `{email}` owns (the one added last)",
                "steps": f"the last session in `sessions1` whose owner is `{email}` (the newest: listings are "
                         f"oldest first)",
                "vague": f"the most recently added {tw} session of `src1` owned by `{email}`"}
        facts += [("input", f"the setup variable `{email}`", (f"`{email}`",)),
                  ("value", "lookup: which of the matches", ("newest", "last", "most recently added"))]
        exists = f"`{email}` always owns at least one"
        d.shapers.append((1, lambda pop, rng, profile: _shape_newest(pop, rng, profile, type_, email)))
        how = ("newest", email)
    else:
        most = kind == "most"
        fn, other = ("max", "min") if most else ("min", "max")
        # Python's max and min keep the first of equal keys: the oldest of a listing, or the newest when reversed.
        oldest = rng.random() < 0.5
        seq, flipped = ("sessions1", "reversed(sessions1)") if oldest else ("reversed(sessions1)", "sessions1")
        line = f'found1 = {fn}({seq}, key=lambda s: len(members(s)))\n'
        muts += [Mutation("tie_break", line, line.replace(f"{fn}({seq},", f"{fn}({flipped},")),
                 Mutation("aggregate", line, line.replace(f"{fn}(", f"{other}("))]
        amount = "most" if most else "fewest"
        tie = "the one added first" if oldest else "the one added last"
        what = {"natural": f"the {t} session of `src1` with the {amount} members (of several with as many, "
                           f"{tie})",
                "steps": f"the session in `sessions1` with the {amount} members (of several with as many, {tie})",
                "vague": f"the {tw} session of `src1` that has the {amount} members (of several with as many, "
                         f"{tie})"}
        exists = "there is always at least one such session"
        facts += [("value", "lookup: the aggregate", (f"the {amount} members",)),
                  ("value", "lookup: the tie-break", (tie,))]
        d.shapers.append((1, lambda pop, rng, profile: _shape_extreme(pop, rng, profile, type_, most, oldest,
                                                                      d.emails)))
        how = ("extreme", most, oldest)
    code += line
    texts = {
        "natural": [f"Find {what['natural']} ({exists})."],
        "steps": [f"Read every page of the {t} sessions of `src1` (follow `next` until it is null) into a list "
                  f"`sessions1`.", f"Let `found1` be {what['steps']} ({exists})."],
        "vague": [f"Identify {what['vague']} ({exists})."],
    }
    calls = [Call("list_sessions", ["src1"], ["found1.id", "found1.data", "found1.version"], code, {"type": type_})]
    step = Step("lookup", code, texts, facts, muts, [], calls, levers)
    return step, {"type": type_, "url": url, "kind": kind, "how": how}


def ensure(d: _Draw) -> tuple[Step, dict]:
    """Lookup or create: the session titled `title1` gets a member, or is added with it when there is none."""
    rng = d.rng
    type_ = d.type()
    url = d.url(type_)
    d.title = True
    email = d.email()
    t, tw = f"`{type_}`", _tw(type_)
    body = f'{{"title": title1, "description": "", "owner": {email}, "members": [{email}]}}'
    code = (f'match1 = next((s for s in every_session({url}) if s["data"]["title"] == title1), None)\n'
            f"if match1 is not None:\n"
            f"    requests.put(f\"{{{url}}}/{{match1['id']}}/members/{{{email}}}\")\n"
            f'    ensured1 = match1["id"]\n'
            f"else:\n"
            f'    ensured1 = requests.post({url}, json={body}).json()["id"]\n')
    add = f"    requests.put(f\"{{{url}}}/{{match1['id']}}/members/{{{email}}}\")\n"
    muts = [Mutation("never_create", f'    ensured1 = requests.post({url}, json={body}).json()["id"]\n',
                     "    ensured1 = None\n"),
            Mutation("always_create", "if match1 is not None:\n", "if False:\n"),
            # the member left out where the session is there: that branch's write must show on some test case
            Mutation("drop_write", add, "")]
    new = (f"with the title `title1`, an empty description, `{email}` as its owner and `{email}` as its only "
           f"member")
    texts = {
        "natural": [f"Make sure `src1` has a {t} session titled `title1` (there is at most one) that lists `{email}` as a member: if "
                    f"there is one, it must end up with `{email}` among its members; if there is none, add a new {t} session {new}."],
        "steps": [f"Read every page of the {t} sessions of `src1` and let `match1` be the one whose title is "
                  f"`title1` (there is at most one), or None when there is none.",
                  f"If there is one, add `{email}` as a member of it (the members endpoint) and let `ensured1` be "
                  f"its id; otherwise add a new {t} session {new} and let `ensured1` be the id the service "
                  f"answers."],
        "vague": [f"Ensure that `src1` has a {tw} session titled `title1` (never more than one) with `{email}` "
                  f"among its members: "
                  f"give the existing one that member, or, when none exists, create one {new}."],
    }
    facts = [("input", "the setup variable `src1`", ("`src1`",)), ("input", "the setup variable `title1`", ("`title1`",)),
             ("input", f"the setup variable `{email}`", (f"`{email}`",)),
             ("value", "ensure: the session type", (t, f"{tw} session", f"{tw} sessions")),
             ("value", "ensure: what a created session holds", ("empty description",))]
    results = [Result("ensured1", {"natural": "the id of the session titled `title1` (found or added)",
                                   "steps": "`ensured1`", "vague": "the id of the session titled `title1`"})]
    calls = [Call("list_sessions", ["src1", "title1"], ["match1.id"], code, {}),
             Call("add_member", ["match1.id", email], [], code, {}),
             Call("add_session", ["title1", email], ["ensured1"], code, {})]
    d.shapers.append((0, lambda pop, rng, profile: _shape_ensure(pop, rng, profile, type_)))
    d.shapers.append((3, lambda pop, rng, profile: _shape_ensured(pop, rng, profile, type_, email)))
    return Step("recovery", code, texts, facts, muts, results, calls, ("lookups", "recovery", "pagination")), \
        {"type": type_, "email": email}


BODIES = ("remove", "add", "handover", "delete", "retitle", "offboard", "spread")


def loop(d: _Draw, found: dict | None, allow_delete: bool, chain: bool = False,
         same: bool = False, bodies: tuple[str, ...] | None = None, kinds: tuple[str, ...] = ("owner", "member"),
         n: int = 1) -> tuple[Step, dict]:
    """A loop over every page of a collection; with `chain`, its predicate is "owned by the owner of the session
    found first" (a value the lookup read, carried into the loop). `n` numbers the loop's list (`changed1`, ...)
    when a program has two."""
    rng = d.rng
    type_ = found["type"] if same else d.type(avoid=tuple(d.types))
    url = d.url(type_)
    kind = "owner" if chain else rng.choice(kinds)
    if chain:
        pe = "_chain"  # an address no setup variable names: the found session's owner in every population
        d.hidden.append(pe)
        d.shapers.append((2, lambda pop, rng, profile: _shape_chain(pop, found, pe)))
    else:
        pe = d.email()
    # offboard: hand a session the owner leaves to its first other member, or delete it when it has none (it deletes,
    # and only over a collection no lookup reads, so that no later step asks for a session it may have deleted)
    # spread: hand each session the owner leaves to the other member who owns the fewest of the collection at that
    # moment (each handover moves the counts the next one compares), over a collection no lookup reads
    body = rng.choice([b for b in bodies or BODIES if (allow_delete or b != "delete") and (
        b != "offboard" or (kind == "owner" and allow_delete and not (found and found["type"] == type_))) and (
        b != "spread" or (kind == "owner" and not (found and found["type"] == type_)))])
    # The address the body writes is never the one a "newest owned by" lookup names (the handover would move it).
    me = None if body in ("offboard", "delete", "spread") else d.email(
        avoid=(pe,) + ((found["how"][1],) if found and found["how"][0] == "newest" else ()))
    pe_code = 'found1["data"]["owner"]' if chain else pe
    suffix = rng.choice(SUFFIXES)
    t, tw = f"`{type_}`", _tw(type_)
    item = f"{{{url}}}/{{s['id']}}"
    changed = f"changed{n}"
    head = f"{changed} = []\nfor s in every_session({url}):\n    if {_pred(kind, pe_code)}:\n"
    # Each mutation names its whole block (the loop's list and collection), so a second loop's stays unique.
    muts = [Mutation("predicate", head, head.replace(_pred(kind, pe_code), _pred_other(kind, pe_code)))]
    levers = ["loops", "pagination"]
    if body in ("remove", "add"):  # one member write; the ids it changed are collected
        adding = body == "add"
        method, done = ("put", 201) if adding else ("delete", 204)
        lines = (f'        r = requests.{method}(f"{item}/members/{{{me}}}")\n'
                 f"        if r.status_code == {done}:\n"
                 f'            {changed}.append(s["id"])\n')
        muts += [Mutation("collect_all", lines, lines.replace(f"        if r.status_code == {done}:\n    ", "")),
                 # a refusal (409: the change would duplicate another session) counted as a change
                 Mutation("refused_write", lines, lines.replace(f"== {done}:", f"!= {200 if adding else 404}:"))]
        if adding:
            act = {"natural": f"add `{me}` to its members",
                   "steps": f"add `{me}` as a member with the members endpoint; when the service answers 201 (newly "
                            f"added), append the session's id to `{changed}`",
                   "vague": f"make `{me}` one of its members"}
            keep = {"natural": f"the ids of the {t} sessions `{me}` was newly added to",
                    "steps": f"`{changed}`", "vague": f"the ids of the {tw} sessions that gained `{me}` as a new member"}
        else:
            act = {"natural": f"remove `{me}` from its members",
                   "steps": f"remove `{me}` from its members with the members endpoint; when the service answers "
                            f"204, append the session's id to `{changed}`",
                   "vague": f"take `{me}` off its members where `{me}` is one"}
            keep = {"natural": f"the ids of the {t} sessions `{me}` was removed from", "steps": f"`{changed}`",
                    "vague": f"the ids of the {tw} sessions that lost `{me}`"}
        calls = [Call("add_member" if adding else "remove_member", ["s.id", me], ["r.status"], lines, {})]
    elif body == "handover":
        lines, calls, stale = _member_then_update(item, "put", me, "owner", me, me, changed)
        muts += stale
        # The new owner is the setup's address, written as the setup block spells it, even where the session
        # already lists that person spelled otherwise (the documentation's rule, said here where it decides).
        spelled = f"`{me}` as the setup block spells it, even where its members list spells that person otherwise"
        act = {"natural": f"make `{me}` one of its members (if not one already) and then its owner ({spelled}; "
                          f"`{me}` owns none of them yet): two changes, each its own write, changing nothing else",
               "steps": f"add `{me}` as a member with the members endpoint, read the session again, then update it "
                        f"with its current data but `{me}` as owner ({spelled}), sending its current ETag in "
                        f"`If-Match`; append the version the update answers to `{changed}`",
               "vague": f"hand it over to `{me}` (who owns none of them yet): first `{me}` becomes a member (if "
                        f"not one already), then the owner ({spelled}), nothing else in its data changing (two "
                        f"changes, in that order, each its own write)"}
        keep = {"natural": f"the version each of those {t} sessions has right after its handover",
                "steps": f"`{changed}`", "vague": f"the version each of those {tw} sessions has right after its handover"}
        levers.append("versions")
        d.shapers.append((4, lambda pop, rng, profile: _shape_not_owned(pop, rng, type_, kind, pe, me)))
    elif body == "delete":
        lines = (f'        requests.delete(f"{item}", headers={{"If-Match": str(s["version"])}})\n'
                 f'        {changed}.append(s["id"])\n')
        muts.append(Mutation("stale_version", lines, lines.replace('str(s["version"])', '"1"')))
        act = {"natural": "delete it", "steps": "delete it, sending its version in `If-Match`, and append its id "
                                                f"to `{changed}`", "vague": "remove it"}
        keep = {"natural": f"the ids of the {t} sessions deleted in that loop", "steps": f"`{changed}`",
                "vague": f"the ids of the {tw} sessions removed in that pass"}
        calls = [Call("delete_session", ["s.id", "s.version"], [], lines, {})]
        levers.append("versions")
    elif body == "offboard":
        others = f"[m for m in members(s) if not same_person(m, {pe_code})]"
        lines = (f"        others = {others}\n"
                 f"        if others:\n"
                 f'            requests.put(f"{item}", json={{**s["data"], "owner": others[0]}}, '
                 f'headers={{"If-Match": str(s["version"])}})\n'
                 f"        else:\n"
                 f'            requests.delete(f"{item}", headers={{"If-Match": str(s["version"])}})\n'
                 f'            {changed}.append(s["id"])\n')
        delete = f'            requests.delete(f"{item}", headers={{"If-Match": str(s["version"])}})\n'
        muts += [Mutation("exact_case", lines, lines.replace(f"not same_person(m, {pe_code})", f"m != {pe_code}")),
                 Mutation("wrong_item", lines, lines.replace('"owner": others[0]', '"owner": others[-1]')),
                 Mutation("drop_write", lines, lines.replace(delete, "")),
                 Mutation("collect_all", lines, lines.replace(f'            {changed}.append(s["id"])\n', "")
                          + f'        {changed}.append(s["id"])\n')]
        hand = "the first of its other members (its members other than its owner, in the order they are listed)"
        act = {"natural": f"hand it over to {hand}, changing nothing else, or delete it if it has no other member",
               "steps": f"let `others` be its members that are not its owner (the same person whatever the case), "
                        f"in order; if there are any, update it with its data but the first of `others` as owner, "
                        f"sending its version in `If-Match`; otherwise delete it, sending its version in "
                        f"`If-Match`, and append its id to `{changed}`",
               "vague": f"make {hand} its owner, nothing else in its data changing, or, when there is no other "
                        f"member, remove the session"}
        keep = {"natural": f"the ids of the {t} sessions deleted in that loop", "steps": f"`{changed}`",
                "vague": f"the ids of the {tw} sessions removed in that pass"}
        calls = [Call("update_session", ["s.id", "s.data", "s.version"], [], lines, {}),
                 Call("delete_session", ["s.id", "s.version"], [], lines, {})]
        levers.append("versions")
    elif body == "spread":
        lines, act, keep, body_muts, calls = _spread_body(url, item, pe_code, changed, t, tw)
        # counts read once, before the loop: the owners line moved out of the body to the top of the step
        static = _OWNERS.format(url=url, ind="") + head + lines.replace(_OWNERS.format(url=url, ind=" " * 12), "")
        muts += body_muts + [Mutation("static_tally", head + lines, static)]
        levers += ["versions", "aggregates", "feedback"]
    else:  # retitle
        lines, calls, stale = _member_then_update(item, "delete", me, "title",
                                                  f'current.json()["data"]["title"] + {suffix!r}',
                                                  f's["data"]["title"] + {suffix!r}', changed)
        muts += stale
        act = {"natural": f"remove `{me}` from its members if it is one, then append {suffix!r} to its title: "
                          f"two changes, each its own write, changing nothing else",
               "steps": f"remove `{me}` from its members with the members endpoint (a 404 means it was not one), "
                        f"read the session again, then update it with its current data and {suffix!r} appended to "
                        f"its title, sending its current ETag in `If-Match`; append the version the update answers "
                        f"to `{changed}`",
               "vague": f"first take `{me}` off its members where `{me}` is one, then give its title an extra "
                        f"{suffix!r} at the end, its other data as it then stands (two changes, in that order, each its own write)"}
        keep = {"natural": f"the version each of those {t} sessions has right after its title changed",
                "steps": f"`{changed}`", "vague": f"the version each of those {tw} sessions has right after its title changed"}
        levers.append("versions")
    muts.append(Mutation("first_match", lines, lines + "        break\n"))
    code = head + lines
    pt = _pred_text(kind, pe) if not chain else {
        "natural": "owned by the same person as the session found first" + (" (that session included)" if same
                                                                             else ""),
        "steps": "whose owner is the owner of `found1`",
        "vague": "owned by whoever owns the session identified first"}
    texts = {
        "natural": [f"Then, for every {t} session of `src1` {pt['natural']}, {act['natural']}."],
        "steps": [f"Set `{changed}` to an empty list and go through every page of the {t} sessions of `src1`.",
                  f"For each session {pt['steps']}: {act['steps']}."],
        "vague": [f"Then, for each {tw} session of `src1` {pt['vague']}, {act['vague']}."],
    }
    facts = [("input", "the setup variable `src1`", ("`src1`",)),
             *([] if chain else [("input", f"the setup variable `{pe}`", (f"`{pe}`",))]),
             *([] if me is None else [("input", f"the setup variable `{me}`", (f"`{me}`",))]),
             ("value", "loop: the session type", (t, f"{tw} session", f"{tw} sessions")),
             ("value", "loop: the predicate", tuple(pt.values()))]
    if body == "retitle":
        facts.append(("value", "loop: the title suffix", (repr(suffix),)))
    if body == "handover":
        facts.append(("value", "loop: the new owner's spelling", ("as the setup block spells it",)))
    if body == "spread":
        facts += [("value", "loop: whom each session goes to", ("the fewest",)),
                  ("value", "loop: the counts move with each handover", ("at that moment", "at that point")),
                  ("value", "loop: the tie-break", ("listed first", "the first of `others`"))]
    results = [Result(changed, {"natural": keep["natural"] + " (in listing order)", "steps": keep["steps"],
                                   "vague": keep["vague"] + " (in listing order)"})]
    calls = [Call("list_sessions", ["src1"] + (["found1.data"] if chain else []), ["s.id", "s.data", "s.version"], head, {})] + calls
    d.shapers.append((0, lambda pop, rng, profile: _shape_loop(pop, rng, profile, type_, kind, pe, me, body)))
    if body == "offboard":  # after the loop's own shaping, which decides which sessions the owner has
        d.shapers.append((0, lambda pop, rng, profile: _shape_offboard(pop, rng, profile, type_, pe)))
    if body == "spread":  # after a bulk delete's shaping, which may give sessions of this collection an owner
        d.shapers.append((4, lambda pop, rng, profile: _shape_spread(pop, rng, profile, type_, pe)))
    if body in ("remove", "add"):
        d.shapers.append((6, lambda pop, rng, profile: _shape_twin(pop, rng, profile, type_, kind, pe, me, body,
                                                                   found)))
    if n > 1:  # its own names (`s2`, `r2`, `current2`): the values it carries are not the first loop's
        code, muts = _own_names(code, n), [Mutation(m.operator, _own_names(m.before, n), _own_names(m.after, n))
                                           for m in muts]
        calls = [Call(c.api, [_own_names(v, n) for v in c.inputs], [_own_names(v, n) for v in c.outputs],
                      _own_names(c.code, n), c.args) for c in calls]
    step = Step("loop", code, texts, facts, muts, results, calls, tuple(levers))
    return step, {"type": type_, "body": body, "same": same, "kind": kind, "pe": pe, "me": me,
                  "suffix": suffix if body == "retitle" else None}


_OWNERS = '{ind}owners = [x["data"]["owner"].lower() for x in every_session({url})]\n'


def _spread_body(url: str, item: str, pe_code: str, changed: str, t: str, tw: str):
    """The body that hands a session over to whichever of its other members owns the fewest sessions of the
    collection at that moment (ties: the one listed first). It reads the owners again before each handover: the
    handovers before it moved the counts."""
    others = f"[m for m in members(s) if not same_person(m, {pe_code})]"
    owners = _OWNERS.format(url=url, ind="            ")
    pick = "            new = min(others, key=lambda m: owners.count(m.lower()))\n"
    put = (f'            requests.put(f"{item}", json={{**s["data"], "owner": new}}, '
           f'headers={{"If-Match": str(s["version"])}})\n')
    lines = (f"        others = {others}\n"
             f"        if others:\n" + owners + pick + put +
             f"            {changed}.append(new)\n")
    muts = [Mutation("exact_case", lines, lines.replace('["owner"].lower() for x', '["owner"] for x')
                     .replace("owners.count(m.lower())", "owners.count(m)")),
            Mutation("tie_break", lines, lines.replace("min(others,", "min(others[::-1],")),
            Mutation("aggregate", lines, lines.replace("min(others,", "max(others,")),
            Mutation("wrong_item", lines, lines.replace(pick, "            new = others[0]\n")),
            Mutation("drop_write", lines, lines.replace(put, ""))]
    fewest = (f"whichever of its other members (its members other than its owner) owns the fewest {t} sessions of "
              f"`src1` at that moment (counting the handovers before it; of several with as few, the one listed first among its members)")
    act = {"natural": f"hand it over to {fewest}, changing nothing else; a session with no other member stays as it "
                      f"is",
           "steps": f"let `others` be its members that are not its owner (the same person whatever the case), in "
                    f"order; if there are any, read every page of the {t} sessions of `src1` again (their owners "
                    f"at that moment), let `new` be the first of `others` who owns the fewest of them (comparing "
                    f"addresses ignoring case), update the session with its data but `new` as owner, sending its version in `If-Match`, and append `new` "
                    f"to `{changed}`; a session with no other member is left as it is",
           "vague": f"pass it to whichever of its other members (those other than its owner) owns the fewest {tw} "
                    f"sessions of `src1` at that point (after the handovers before it; of several with as few, the "
                    f"one listed first among its members), nothing else in its data changing; one without another member is left alone"}
    keep = {"natural": f"the new owner of each {t} session handed over in that loop, as its members list spells it",
            "steps": f"`{changed}`",
            "vague": f"who each {tw} session passed to in that pass, spelled as its members list has it"}
    calls = [Call("list_sessions", ["src1"], ["owners"], lines, {}),
             Call("update_session", ["s.id", "s.data", "s.version", "owners"], [], lines, {})]
    return lines, act, keep, muts, calls


def _own_names(text: str, n: int) -> str:
    """A loop's code with its session, answer and fresh read named for loop `n` (`s` becomes `s2`)."""
    return re.sub(r"\b(s|r|current)\b(?=[\[.,) ])", lambda m: m.group(1) + str(n), text)


def _member_then_update(item: str, method: str, me: str, key: str, value: str, stale: str, changed: str
                        ) -> tuple[str, list[Call], list[Mutation]]:
    """A loop body of three calls: a member write (`method` on the members endpoint), a fresh read, and an update
    of the data read with `key` set to `value` (sent with the read's ETag), the version it answers collected. The
    mutations write the listing's copy instead (`stale`: the value computed from it), or send its version."""
    update = f'json={{**current.json()["data"], "{key}": {value}}}'
    lines = (f'        requests.{method}(f"{item}/members/{{{me}}}")\n'
             f'        current = requests.get(f"{item}")\n'
             f'        r = requests.put(f"{item}", {update}, headers={{"If-Match": current.headers["ETag"]}})\n'
             f'        {changed}.append(r.json()["version"])\n')
    mutations = [Mutation("stale_data", lines, lines.replace(update, f'json={{**s["data"], "{key}": {stale}}}')),
                 Mutation("stale_version", lines, lines.replace('current.headers["ETag"]', 'str(s["version"])'))]
    calls = [Call("add_member" if method == "put" else "remove_member", ["s.id", me], [], lines, {}),
             Call("get_session", ["s.id"], ["current.data", "current.etag"], lines, {}),
             Call("update_session", ["s.id", "current.data", "current.etag"] + ([me] if value == me else []),
                  ["r.version"], lines, {})]
    return lines, calls, mutations


def rename(d: _Draw, found: dict, looped: dict) -> Step:
    """Recovery: append a suffix to the found session's title; a 412 (the loop changed it) is met by reading it
    again and retrying once."""
    url = found["url"]
    suffix = d.rng.choice([x for x in SUFFIXES if x != looped.get("suffix")])
    item = f"{{{url}}}/{{found1['id']}}"
    first = (f'r = requests.put(f"{item}", json={{**found1["data"], "title": found1["data"]["title"] + {suffix!r}}}, '
             f'headers={{"If-Match": str(found1["version"])}})\n')
    retry = (f'    r = requests.put(f"{item}", json={{**current.json()["data"], "title": current.json()["data"]["title"]'
             f' + {suffix!r}}}, headers={{"If-Match": current.headers["ETag"]}})\n')
    recover = f'if r.status_code == 412:\n    current = requests.get(f"{item}")\n' + retry
    code = first + recover + 'version1 = r.json()["version"]\n'
    stale = (f'    r = requests.put(f"{item}", json={{**found1["data"], "title": found1["data"]["title"] + {suffix!r}}}, '
             f'headers={{"If-Match": current.headers["ETag"]}})\n')
    # One mutant for each branch of the recovery: no retry dies only where the first try is refused (412), a first
    # try that leaves the title as it is only where the first try succeeds (the loop left the session alone).
    muts = [Mutation("no_retry", recover, ""), Mutation("retry_stale", retry, stale),
            Mutation("first_try", first, first.replace(
                f'json={{**found1["data"], "title": found1["data"]["title"] + {suffix!r}}}', 'json=found1["data"]')),
            # the first try sent to the loop's last session: refused (and so recovered from) unless the versions agree
            Mutation("wrong_item", first, first.replace("{found1['id']}", "{s['id']}"))]
    texts = {
        "natural": [f"Then append {suffix!r} to the title of the session you found first, changing nothing "
                    f"else (no other session has the title this gives it)."],
        "steps": [f"Update `found1` with its data and {suffix!r} appended to its title, sending its version in "
                  f"`If-Match`; if the service answers 412 (it changed since it was read), read it again and retry "
                  f"once with its current data, {suffix!r} appended to its current title, and its current ETag. Let "
                  f"`version1` be the version the successful update answers (no other session has that title, "
                  f"so the service never answers 409 here)."],
        "vague": [f"Then the session identified first should get {suffix!r} added to the end of its title, "
                  f"its other data as it then stands (no other session has the resulting title)."],
    }
    facts = [("value", "rename: the title suffix", (repr(suffix),))]
    results = [Result("version1", {"natural": "the version that session has after the renaming",
                                   "steps": "`version1`", "vague": "the version it ends with"})]
    calls = [Call("update_session", ["found1.id", "found1.data", "found1.version"], ["r.status"], first, {}),
             Call("get_session", ["found1.id", "r.status"], ["current.data", "current.etag"], recover, {}),
             Call("update_session", ["found1.id", "current.data", "current.etag"], ["r.version"], retry, {})]
    d.shapers.append((2, lambda pop, rng, profile: _shape_stale(pop, rng, profile, found, looped)))
    d.shapers.append((2, lambda pop, rng, profile: _shape_untouched(pop, rng, profile, found, looped)))
    d.shapers.append((7, lambda pop, rng, profile: _shape_collision(pop, profile, found, looped)))
    return Step("recovery", code, texts, facts, muts, results, calls, ("recovery", "versions"))


def aggregate(d: _Draw, types: list[str], found: dict | None = None) -> Step:
    """A count, total or maximum over a collection, read after the writes before it; or, with `found`, how many
    members the session found first has by then."""
    rng = d.rng
    if found is not None and rng.random() < 0.4:
        url = found["url"]
        # The found session always has a `members` field (`_shape_missing` spares it).
        line = f'count1 = len(requests.get(f"{{{url}}}/{{found1[\'id\']}}").json()["data"]["members"])\n'
        muts = [Mutation("stale_data", line, 'count1 = len(found1["data"]["members"])\n')]
        texts = {"natural": ["Once that is done, work out how many members the session found first has at that "
                             "point."],
                 "steps": ["Read `found1` again and let `count1` be the number of its members now."],
                 "vague": ["Once that is done, determine how many members the session identified first has by "
                           "then."]}
        results = [Result("count1", {"natural": "that number", "steps": "`count1`", "vague": "that number"})]
        calls = [Call("get_session", ["found1.id"], ["count1"], line, {})]
        return Step("aggregate", line, texts, [], muts, results, calls, ("aggregates", "versions"))
    type_ = rng.choice(types)
    url = d.url(type_)
    kind = rng.choice(("count", "total", "max", "people"))
    t, tw = f"`{type_}`", _tw(type_)
    facts = [("value", "aggregate: the session type", (t, f"{tw} session", f"{tw} sessions"))]
    if kind == "count":
        email = d.email()
        line = f'count1 = sum(1 for s in every_session({url}) if {_pred("member", email)})\n'
        muts = [Mutation("aggregate", line, line.replace("sum(1 for", "sum(len(members(s)) for")),
                Mutation("predicate", line, line.replace(_pred("member", email), _pred("owner", email)))]
        what = {"natural": f"how many {t} sessions of `src1` list `{email}` as a member",
                "steps": f"the number of {t} sessions of `src1` whose members include `{email}`",
                "vague": f"the number of {tw} sessions of `src1` having `{email}` among their members"}
        facts += [("input", f"the setup variable `{email}`", (f"`{email}`",)),
                  ("value", "aggregate: what is counted", ("how many", "the number of"))]
    elif kind == "total":
        line = f'count1 = sum(len(members(s)) for s in every_session({url}))\n'
        muts = [Mutation("aggregate", line, f"count1 = len(every_session({url}))\n")]
        # A person who is a member of several sessions counts in each (readers asked: sum, or distinct people?).
        each = "the sum of their member counts, a person in several of them counted once for each"
        what = {"natural": f"the total number of members over all {t} sessions of `src1` ({each})",
                "steps": f"the sum of the member counts of all {t} sessions of `src1`",
                "vague": f"the total number of members over all {tw} sessions of `src1` ({each})"}
        facts.append(("value", "aggregate: a total of members", ("total number of members", "sum of the member")))
    elif kind == "people":  # one person may be spelled differently in different sessions
        line = f"count1 = len({{m.lower() for s in every_session({url}) for m in members(s)}})\n"
        muts = [Mutation("aggregate", line, f"count1 = sum(len(members(s)) for s in every_session({url}))\n"),
                Mutation("exact_case", "{m.lower() for s", "{m for s")]
        # Addresses that differ only in case are one person (the documentation's rule, said here where it counts).
        same = "addresses that differ only in letter case being one person"
        what = {"natural": f"how many different people are members of at least one {t} session of `src1` ({same})",
                "steps": f"the number of different people among the members of all {t} sessions of `src1` ({same})",
                "vague": f"how many distinct people are among the members of the {tw} sessions of `src1` ({same})"}
        facts += [("value", "aggregate: different people", ("different people", "distinct people")),
                  ("value", "aggregate: one person in any letter case", ("differ only in letter case",))]
        d.shapers.append((5, lambda pop, rng, profile: _shape_people(pop, rng, profile, type_)))
    else:
        line = f'count1 = max(len(members(s)) for s in every_session({url}))\n'
        muts = [Mutation("aggregate", line, line.replace("count1 = max(", "count1 = min("))]
        always = "(there is always at least one)"
        what = {"natural": f"the largest number of members any {t} session of `src1` has {always}",
                "steps": f"the largest member count among the {t} sessions of `src1` {always}",
                "vague": f"the largest number of members any {tw} session of `src1` has {always}"}
        facts.append(("value", "aggregate: the maximum", ("largest",)))
    texts = {"natural": [f"Once that is done, work out {what['natural']}."],
             "steps": [f"Read every page of the {t} sessions of `src1` again and let `count1` be {what['steps']}."],
             "vague": [f"Once that is done, determine {what['vague']}."]}
    results = [Result("count1", {"natural": "that number", "steps": "`count1`", "vague": "that number"})]
    calls = [Call("list_sessions", ["src1"], ["count1"], line, {})]
    return Step("aggregate", line, texts, facts, muts, results, calls, ("aggregates", "pagination"))


def bulk(d: _Draw, types: list[str], avoid: tuple[str, ...] = (), found: dict | None = None) -> Step:
    """`avoid`: addresses that own the session found first (deleting it would undo what the steps before did)."""
    type_ = d.rng.choice(types)
    url = d.url(type_)
    email = d.email(avoid=avoid)
    t, tw = f"`{type_}`", _tw(type_)
    # The service's filters compare strings exactly; an owner is a person, whatever the case of the address.
    spelled = f'{{"$regex": "^" + re.escape({email}) + "$", "$options": "i"}}'
    line = (f'deleted1 = requests.post(f"{{{url}}}/query/delete", json={{"data.owner": {spelled}}})'
            f'.json()["deleted"]\n')
    muts = [Mutation("predicate", line, line.replace('"data.owner"', '"data.members"')),
            Mutation("exact_case", spelled, email),
            Mutation("predicate", spelled, spelled.replace('"^" + re.escape({email}) + "$"'.format(email=email),
                                                           f"re.escape({email})"))]
    line = "import re\n" + line
    texts = {"natural": [f"Then delete every {t} session of `src1` that `{email}` owns."],
             "steps": [f"Delete the {t} sessions of `src1` whose owner is `{email}`, however the address is spelled, "
                       f"with the bulk delete endpoint (its filters compare exactly: match `data.owner` with an "
                       f"anchored, case-insensitive `$regex` of the escaped address) and let `deleted1` be the "
                       f"number it answers."],
             "vague": [f"Then get rid of all {tw} sessions of `src1` owned by `{email}`."]}
    facts = [("input", f"the setup variable `{email}`", (f"`{email}`",)),
             ("value", "bulk: the session type", (t, f"{tw} session", f"{tw} sessions"))]
    results = [Result("deleted1", {"natural": f"how many sessions that last deletion (by owner) removed",
                                   "steps": "`deleted1`",
                                   "vague": f"how many sessions owned by `{email}` were removed at that point"})]
    calls = [Call("delete_by_filter", ["src1", email], ["deleted1"], line, {})]
    d.shapers.append((0, lambda pop, rng, profile: _shape_bulk(pop, rng, profile, type_, email)))
    d.shapers.append((3, lambda pop, rng, profile: _shape_spared(pop, rng, profile, type_, email, found)))
    d.shapers.append((5, lambda pop, rng, profile: _shape_namesake(pop, rng, profile, type_, email, found)))
    return Step("bulk", line, texts, facts, muts, results, calls, ())


# ------------------------------------------------------------------------------------------ populations


class _Pop:
    """A population being drawn: the setup's values and the sessions of each collection of src1, in creation
    order within each (`colls`), plus the decoys elsewhere."""

    def __init__(self, values: dict, people: list[str], colls: dict[str, list[dict]], spelled: dict[str, str]):
        self.values, self.people, self.colls = values, people, colls
        self.spelled = spelled  # how the setup block writes each address (sometimes in another case)
        self.decoys: list[tuple[str, str, dict]] = []  # (source key: "src1" or "other", type, data)
        # sessions whose version another's decides, set once every session has one: (data, data it follows, offset)
        self.versions: list[tuple[dict, dict, int]] = []

    def named(self) -> dict[str, str]:
        """The addresses the program names (setup variables, and hidden ones such as `_chain`), in name order."""
        return {k: v for k, v in sorted(self.values.items()) if k.startswith(("email", "_")) and isinstance(v, str)}

    def target(self, found: dict | None, type_: str) -> dict | None:
        """The session the lookup finds, when it is one of this collection's."""
        return self.colls[type_][_found(self, found)] if found is not None and found["type"] == type_ else None

    def insert(self, type_: str, at: int, data: dict, found: dict | None, target: dict | None) -> bool:
        """Put a session into a collection at `at`, unless that makes another than `target` the one the lookup
        finds; whether it was put."""
        self.colls[type_].insert(at, data)
        if target is not None and self.colls[type_][_found(self, found)] is not target:
            self.colls[type_].pop(at)
            return False
        return True


def _shape_loop(pop: _Pop, rng, profile, type_, kind, pe, me, body) -> None:
    coll = pop.colls[type_]
    p, m = pop.values[pe], pop.values.get(me)
    hits = set(_match_positions(profile, len(coll), rng))
    for i, data in enumerate(coll):
        _make_match(kind, p, data, rng, pop.people, i in hits)
    acted = sorted(hits)
    if body in ("remove", "add", "handover", "retitle") and acted:
        # Some matches have the member and some do not, so that the body acts on some and leaves others; at least
        # one is acted on (it has the member to remove, or lacks the one to add).
        # The last match (on a later page in most profiles) is always acted on; with several matches, one is not.
        last, rest = acted[-1], acted[:-1]
        acts = {last} | set(rng.sample(rest, len(rest) // 2))
        if rest and len(acts) == len(acted):
            acts.discard(rng.choice(rest))
        has = acts if body in ("remove", "retitle") else set(acted) - acts
        for i in acted:
            _make_match("member", m, coll[i], rng, pop.people, i in has)
            if body == "handover" and _same(coll[i]["owner"], m):  # a handover always changes the owner
                coll[i]["owner"] = rng.choice([x for x in pop.people if x not in (m, p)])
    # Decoy: a session of another source with the same type that the predicate would match.
    decoy = _fresh_data(rng, pop)
    _make_match(kind, p, decoy, rng, pop.people, True)
    pop.decoys.append(("other", type_, decoy))


def _owner_alias(pop: _Pop, pe: str, rng) -> str:
    """The owner's address in another case than anywhere else the program names it (the setup block may spell it
    otherwise): listed among a session's members, it is the owner, not another member."""
    p = pop.values[pe]
    spelled = pop.spelled.get(pe, p)
    return next(v for v in (_variant(p, rng), p.upper(), p.title()) if v not in (p, spelled))


def _hold_no_other(data: dict, form: str, alias: str) -> None:
    """No member but the owner, in a form real stores hold: an empty list, null, no field, or only the owner."""
    if form == "absent":
        data.pop("members", None)
    else:
        data["members"] = {"empty": [], "null": None, "owner": [alias]}[form]


def _shape_offboard(pop: _Pop, rng, profile, type_, pe) -> None:
    """The sessions the owner leaves: some with other members (the owner sometimes listed among them, first and in
    another case, and at least two others, so that which one is first matters), some with none (an empty list,
    null, no field, or only the owner, in another case). Both kinds in the `original` and `large` profiles, and
    each way of having no member in one profile or another."""
    p = pop.values[pe]
    owned = [x for x in pop.colls[type_] if _same(x["owner"], p)]
    if not owned:
        return
    handed = [rng.random() < 0.6 for _ in owned]
    if profile in ("original", "large") and len(owned) >= 2:
        handed[-1] = True
        if all(handed):
            handed[rng.randrange(len(owned) - 1)] = False
    named = set(pop.named().values())
    alias = _owner_alias(pop, pe, rng)
    # how the sessions with no other member hold that, in order: each form somewhere among the profiles, so that a
    # program that reads `members` as always present, or never null, fails on some input
    forms = {"original": ["owner", "null"], "large": ["null", "absent"], "page": ["absent", "empty"]}.get(profile, [])
    for k, (data, hand) in enumerate(zip(owned, handed)):
        if hand:
            others = [m for m in _members(data) if not _same(m, p)]
            pool = [q for q in pop.people if not _same(q, p) and q not in named and q not in others]
            others += rng.sample(pool, max(0, 2 - len(others)))
            owner_too = rng.random() < 0.5 or (k == len(owned) - 1 and profile in ("original", "large"))
            data["members"] = ([alias] if owner_too else []) + others
        else:
            _hold_no_other(data, forms.pop(0) if forms else rng.choice(("empty", "null", "absent", "owner")), alias)


SPREAD_TRIES = 400  # draws of a spread loop's owners and members before one tells every wrong rule apart
SPREAD_RULES = ("static", "exact", "reversed", "max", "first")  # the ways of getting its choice wrong (mutants)


def _spread(coll: list[dict], owner: str, rule: str = "right") -> list[tuple[int, str]]:
    """Which sessions of `coll` a spread loop hands over and to whom (as spelled), under the task's rule or a wrong
    one: counts read once before the loop (`static`), addresses compared exactly (`exact`), the last of a tie
    (`reversed`), the most (`max`) or simply the first other member (`first`)."""
    owners = [x["owner"] for x in coll]
    fold = (lambda a: a) if rule == "exact" else str.lower
    before = [fold(o) for o in owners]
    out = []
    for i, data in enumerate(coll):
        if not _same(data["owner"], owner):
            continue
        others = [m for m in _members(data) if not _same(m, owner)]
        if not others:
            continue
        counts = before if rule == "static" else [fold(o) for o in owners]
        if rule == "first":
            new = others[0]
        else:
            new = (max if rule == "max" else min)(others[::-1] if rule == "reversed" else others,
                                                  key=lambda m: counts.count(fold(m)))
        owners[i] = new
        out.append((i, new))
    return out


def _shape_spread(pop: _Pop, rng, profile, type_, pe) -> None:
    """The sessions the owner leaves and who owns the rest: three people (each sometimes spelled in another case)
    are the other members of those sessions and own some of the others, so that the counts the choice compares
    differ, tie, and move as the loop hands sessions over. In the `original` and `large` profiles the draw is kept
    only when the task's rule picks otherwise than each wrong one (counts read once, addresses compared exactly,
    the other end of a tie, the most, the first member); the last session the owner has always has other members,
    so that a loop that stops a page early shows."""
    coll = pop.colls[type_]
    p = pop.values[pe]
    owned = [x for x in coll if _same(x["owner"], p)]
    if not owned:
        return
    named = set(pop.named().values())
    unnamed = [q for q in pop.people if q not in named]
    cands = rng.sample(unnamed, min(3, len(unnamed)))
    rest = [q for q in unnamed if q not in cands] or cands
    free = [x for x in coll if not _same(x["owner"], p) and x["owner"] not in named]
    hard = profile in ("original", "large") and len(owned) >= 2
    if hard and len(owned) == 2 and free:  # a third, to hold no other member before the two that tell rules apart
        extra = rng.choice(free)
        extra["owner"] = p
        free.remove(extra)
        owned = [x for x in coll if _same(x["owner"], p)]
    alias = _owner_alias(pop, pe, rng)

    def spell(q: str) -> str:
        return _variant(q, rng) if rng.random() < 0.35 else q

    # the first session the owner has holds no other member, in a form each of these profiles names (so that a
    # program that reads `members` as always there, or never null, fails on some input), where it has others after
    forced = {"original": "absent", "large": "null", "page": "absent"}.get(profile)
    if len(owned) < (3 if hard else 2):
        forced = None
    for _ in range(SPREAD_TRIES):
        for x in free:
            x["owner"] = spell(rng.choice(cands)) if rng.random() < 0.6 else rng.choice(rest)
        for k, data in enumerate(owned):
            if forced and k == 0:
                _hold_no_other(data, forced, alias)
            elif k == len(owned) - 1 or (hard and k == len(owned) - 2) or rng.random() < 0.7:
                ms = [spell(q) for q in rng.sample(cands, rng.randint(2 if hard else 1, len(cands)))]
                if rng.random() < 0.3:  # the owner listed too, in another case: not one of the other members
                    ms.insert(rng.randrange(len(ms) + 1), alias)
                data["members"] = ms
            else:  # no other member: an empty list, null, no field, or only the owner
                _hold_no_other(data, rng.choice(("empty", "null", "absent", "owner")), alias)
        if not hard:
            return
        right = _spread(coll, p)
        if all(_spread(coll, p, rule) != right for rule in SPREAD_RULES):
            return
    # No draw told every rule apart: the last one stays, and a wrong rule it cannot tell apart drops the task.


def _shape_twin(pop: _Pop, rng, profile, type_, kind, pe, me, body, found) -> None:
    """Copies, as real stores hold them: a session the loop's body changes gets a twin just before it, a copy of its
    data as the change would leave it. The service then refuses the change (409: it would duplicate the twin), so
    that session is not one of those changed (in the `original` and `large` profiles)."""
    if profile not in ("original", "large"):
        return
    coll = pop.colls[type_]
    target = pop.target(found, type_)
    p, m, adding = pop.values[pe], pop.values[me], body == "add"
    acted = [i for i, x in enumerate(coll)
             if x is not target and _matches(kind, p, x) and _matches("member", m, x) != adding]
    # Not the last session acted on: the paging profiles put it late so that reading too few pages shows.
    acted = acted[:-1] or (acted if profile == "original" else [])
    before = None
    if not acted and profile == "original":  # make one: a match the body leaves alone, made one it changes
        others = [i for i, x in enumerate(coll) if x is not target and _matches(kind, p, x)]
        if not others:
            return
        acted = [rng.choice(others)]
        before = json.loads(json.dumps(coll[acted[0]]))
        _make_match("member", m, coll[acted[0]], rng, pop.people, not adding)
    if not acted:
        return
    i = rng.choice(acted)
    twin = json.loads(json.dumps(coll[i]))
    twin["members"] = (_members(twin) + [pop.spelled[me]] if adding
                       else [x for x in _members(twin) if not _same(x, m)])
    if not pop.insert(type_, i, twin, found, target) and before is not None:  # the twin would be the one found
        coll[i].clear()
        coll[i].update(before)


def _variant(address: str, rng: random.Random) -> str:
    """The same address in another case, as people write theirs."""
    local, domain = address.split("@", 1)
    forms = {".".join(w.capitalize() for w in local.split(".")) + "@" + domain, address.upper(),
             local + "@" + domain.upper(), local.capitalize() + "@" + domain} - {address}
    return rng.choice(sorted(forms))


def _shape_spelling(pop: _Pop, rng, profile) -> None:
    """Addresses as people write them: some occurrences of each address the program names spelled in another case
    (the same person: the text says so, and the members endpoints agree), at least one of each where it occurs in
    the `original` and `large` profiles, so that code comparing addresses exactly fails there."""
    for address in pop.named().values():
        spots = [(data, None) for coll in pop.colls.values() for data in coll if data["owner"] == address]
        spots += [(data, j) for coll in pop.colls.values() for data in coll
                  for j, x in enumerate(_members(data)) if x == address]
        picks = [spot for spot in spots if rng.random() < 0.3]
        if spots and not picks and profile in ("original", "large"):
            picks = [rng.choice(spots)]
        for data, j in picks:
            if j is None:
                data["owner"] = _variant(address, rng)
            else:
                data["members"][j] = _variant(address, rng)


def _shape_people(pop: _Pop, rng, profile, type_) -> None:
    """A person listed in two sessions of the collection, spelled in another case in one of them (in the
    `original` and `large` profiles), so that counting addresses instead of people shows."""
    if profile not in ("original", "large"):
        return
    seen: dict[str, list[tuple[list, int]]] = {}
    for data in pop.colls[type_]:
        for j, m in enumerate(_members(data)):
            seen.setdefault(m.lower(), []).append((data["members"], j))
    twice = [spots for _, spots in sorted(seen.items()) if len(spots) > 1]
    if twice:
        listed, j = rng.choice(rng.choice(twice))
        listed[j] = _variant(listed[j], rng)


def _namesake(address: str, rng: random.Random) -> str:
    """Another person whose address holds this one: `jo` + `ann.lee@example.org`, or the same with `.uk` after."""
    return rng.choice(("jo", "al", "ma")) + address if rng.random() < 0.5 else address + ".uk"


def _shape_title(pop: _Pop, rng, profile, type_) -> None:
    coll = pop.colls[type_]
    # Late where the profile is about paging (on the second page, or past the largest page); elsewhere anywhere but
    # last, so that the last session a loop saw is not the titled one on every input.
    at = {"page+1": len(coll) - 1, "large": len(coll) - 1}.get(profile, rng.randrange(len(coll) - 1))
    coll[at]["title"] = pop.values["title1"]
    decoy = _fresh_data(rng, pop)
    decoy["title"] = pop.values["title1"]
    other = rng.choice([t for t in words.CONTENT_TYPES if t != type_])
    pop.decoys.append(("src1", other, decoy))


def _shape_newest(pop: _Pop, rng, profile, type_, email) -> None:
    coll = pop.colls[type_]
    n, address = len(coll), pop.values[email]
    # In `single` and `none` the newest is not the collection's last session (the loop's variable when it ends), so
    # that a write naming that variable where the found session is meant shows there.
    owned = {"single": [rng.randrange(n - 1)], "none": [rng.randrange(n - 1)], "page": [0, n - 1], "page+1": [1, n - 1],
             "large": sorted({rng.randrange(n - 1), rng.randrange(n - 1), n - 1})}.get(profile)
    if owned is None:
        owned = sorted(rng.sample(range(n), rng.randint(2, 3)))
    for i, data in enumerate(coll):
        _make_match("owner", address, data, rng, pop.people, i in owned)


def _shape_extreme(pop: _Pop, rng, profile, type_, most, oldest, emails) -> None:
    """The extreme made where the profile wants it (on the second page for page+1 and large), tied in some
    profiles so that the stated tie-break decides. Addresses the program names keep their membership where they
    can, so that the steps shaped before still see what they were shaped for."""
    coll = pop.colls[type_]
    n = len(coll)
    tie = profile in ("original", "page+1", "large", "single") and n >= 2
    if profile in ("page+1", "large"):
        spots = [rng.randrange(DEFAULT_PAGE), n - 1] if tie else [n - 1]
    else:
        spots = sorted(rng.sample(range(n), 2 if tie else 1))
    named = {pop.values[e] for e in emails}
    sizes = [len(x["members"]) for i, x in enumerate(coll) if i not in spots]
    if most:
        size = max(sizes, default=1) + rng.randint(1, 2)
    else:
        size = 1
        for i, x in enumerate(coll):  # every other session has at least two
            if i not in spots and len(x["members"]) < 2:
                x["members"] = x["members"] + [rng.choice([p for p in pop.people if p not in x["members"]])]
    for i in spots:
        keep = [m for m in _members(coll[i]) if m in named][:size]
        others = [p for p in pop.people if p not in keep]
        coll[i]["members"] = keep + rng.sample(others, size - len(keep))
        if not most and profile in ("original", "large", "page+1"):  # no members at all: the fewest
            if profile == "original" and i == spots[0]:
                coll[i]["members"] = None
            else:
                del coll[i]["members"]


def _found(pop: _Pop, found: dict) -> int:
    """Where the lookup's session stands in its collection (the reference's own rule)."""
    coll = pop.colls[found["type"]]
    how = found["how"]
    if how[0] == "title":
        return next(i for i, x in enumerate(coll) if x["title"] == pop.values["title1"])
    if how[0] == "newest":
        return [i for i, x in enumerate(coll) if _same(x["owner"], pop.values[how[1]])][-1]
    _, most, oldest = how
    sizes = [len(_members(x)) for x in coll]
    best = max(sizes) if most else min(sizes)
    spots = [i for i, k in enumerate(sizes) if k == best]
    return spots[0] if oldest else spots[-1]


def _shape_missing(pop: _Pop, rng, profile, found) -> None:
    """Records as real services keep them: some sessions have no `members` field at all (the documentation says
    so). Only sessions nothing is shaped around lose it: no named address among their owner and members, not the
    session found first, not one with the most members, and none in a collection where the fewest are sought."""
    named = set(pop.named().values())
    for type_, coll in pop.colls.items():
        if found is not None and found["type"] == type_ and found["how"][:1] == ("extreme",) and not found["how"][1]:
            continue  # the fewest members: `_shape_extreme` decides which sessions have no field
        skip = _found(pop, found) if found is not None and found["type"] == type_ else -1
        top = max((len(_members(x)) for x in coll), default=0)
        spare = [i for i, x in enumerate(coll) if i != skip and x["owner"] not in named
                 and not named & set(_members(x)) and len(_members(x)) < top]
        for k, i in enumerate(rng.sample(spare, min(len(spare), rng.randint(1, 2)))):
            if (k == 0) == (profile == "original" or rng.random() < 0.5):  # `"members": null`, or no field
                coll[i]["members"] = None
            else:
                del coll[i]["members"]


def _shape_not_owned(pop: _Pop, rng, type_, kind, pe, me) -> None:
    """A handover's text says its new owner owns none of the sessions handed over yet: made true last."""
    named = set(pop.named().values())
    for data in pop.colls[type_]:
        if _matches(kind, pop.values[pe], data) and _same(data["owner"], pop.values[me]):
            data["owner"] = rng.choice([x for x in pop.people if x not in named])


def _shape_chain(pop: _Pop, found: dict, pe: str) -> None:
    """The session found first is owned by the address the loop's sessions are shaped around."""
    pop.colls[found["type"]][_found(pop, found)]["owner"] = pop.values[pe]


def _shape_stale(pop: _Pop, rng, profile, found, looped) -> None:
    """In some profiles the loop acts on the session found first, so that writing to it afterwards with what was
    read before the loop is refused (412) or would undo the loop's change."""
    if profile not in ("original", "page+1", "large", "single"):
        return
    i = _found(pop, found)
    data = pop.colls[found["type"]][i]
    before = json.loads(json.dumps(data))
    _make_match(looped["kind"], pop.values[looped["pe"]], data, rng, pop.people, True)
    if looped["body"] in ("remove", "retitle"):
        _make_match("member", pop.values[looped["me"]], data, rng, pop.people, True)
    elif looped["body"] in ("add", "handover"):
        _make_match("member", pop.values[looped["me"]], data, rng, pop.people, False)
    if _found(pop, found) != i:  # the change moved the lookup to another session: this input stays as it was
        data.clear()
        data.update(before)


def _shape_untouched(pop: _Pop, rng, profile, found, looped) -> None:
    """In the `none` profile the loop leaves the session found first alone, so that a rename after it succeeds at
    the first try there (the other branch of its recovery, which the profiles of `_shape_stale` take). No session
    matches the loop's predicate in that profile, except the found one under a loop over the sessions of its
    owner: that one then holds the member the body would add, or lacks the one it would remove."""
    if profile != "none":
        return
    data = pop.colls[found["type"]][_found(pop, found)]
    if _matches(looped["kind"], pop.values[looped["pe"]], data) and looped["body"] in ("remove", "add"):
        _make_match("member", pop.values[looped["me"]], data, rng, pop.people, looped["body"] == "add")


WRITES = {"remove": 1, "add": 1, "handover": 2, "retitle": 2}  # the writes a loop's body makes to a session it acts on


def _shape_collision(pop: _Pop, profile, found, looped) -> None:
    """Where the loop acts on the session found first, the last session of that collection (the loop's variable when
    it ends) is listed with the version the found one has after the loop: a rename that sends the loop variable's
    version instead of the found session's then writes the data read before the loop, and is not refused. In the
    `none` profile, where the loop leaves the found session alone (`_shape_untouched`), the last session is listed
    with the found one's version: a first try sent to the loop's last session then lands there, not refused (a
    refusal would send the rename to its retry, which makes up for it)."""
    coll = pop.colls[found["type"]]
    data = coll[_found(pop, found)]
    if profile == "none":
        if coll[-1] is not data:
            pop.versions.append((coll[-1], data, 0))
        return
    me = pop.values.get(looped["me"])
    acts = _matches(looped["kind"], pop.values[looped["pe"]], data) and me is not None and \
        _matches("member", me, data) == (looped["body"] in ("remove", "retitle"))
    if acts and coll[-1] is not data and looped["body"] in WRITES:
        pop.versions.append((coll[-1], data, WRITES[looped["body"]]))


def _shape_ensure(pop: _Pop, rng, profile, type_) -> None:
    coll = pop.colls[type_]
    if profile in ("original", "page+1", "large"):
        at = len(coll) - 1 if profile != "original" else rng.randrange(len(coll))
        coll[at]["title"] = pop.values["title1"]
    decoy = _fresh_data(rng, pop)
    decoy["title"] = pop.values["title1"]
    pop.decoys.append(("other", type_, decoy))


def _shape_ensured(pop: _Pop, rng, profile, type_, email) -> None:
    """Where the session titled `title1` is there, it lacks the address in the `original` and `large` profiles, so
    that the member added to it shows, and lists it in `page+1` (adding it again changes nothing)."""
    data = next((x for x in pop.colls[type_] if x["title"] == pop.values["title1"]), None)
    if data is not None:
        _make_match("member", pop.values[email], data, rng, pop.people, profile == "page+1")


def _shape_spared(pop: _Pop, rng, profile, type_, email, found) -> None:
    """The session the program finds first, or the one titled `title1` it makes sure of, is not owned by the address
    a bulk delete names: deleting it at the end would hide what the steps before did to it (a rename's first try, a
    member added). Another session of the collection takes its place among those the address owns."""
    coll = pop.colls[type_]
    if found is not None:
        target = pop.target(found, type_)
    else:
        target = next((x for x in coll if x["title"] == pop.values.get("title1")), None)
    address = pop.values[email]
    if target is None or not _same(target["owner"], address):
        return
    named = set(pop.named().values())
    target["owner"] = rng.choice([p for p in pop.people if p not in named])
    free = [x for x in coll if x is not target and x["owner"] not in named]
    if free and profile != "none" and not any(_same(x["owner"], address) for x in coll):
        rng.choice(free)["owner"] = address


def _shape_bulk(pop: _Pop, rng, profile, type_, email) -> None:
    """Some sessions of the collection owned by the address (none in the `none` profile), and some that only list
    it as a member (a filter on the members would delete those too). Sessions owned by another address the program
    names keep their owner: the steps before shaped them."""
    coll = pop.colls[type_]
    address = pop.values[email]
    named = set(pop.named().values())
    free = [x for x in coll if x["owner"] not in named]
    for data in free:
        if rng.random() < 0.3 and profile != "none":
            data["owner"] = address
    if free and profile != "none" and not any(x["owner"] == address for x in coll):
        free[-1]["owner"] = address
    for data in free:
        if data["owner"] != address and rng.random() < 0.4 and "members" in data and address not in data["members"]:
            data["members"] = data["members"] + [address]


def _shape_namesake(pop: _Pop, rng, profile, type_, email, found) -> None:
    """Someone else whose address holds this one owns a session of the collection (added, not last, in the
    `original` and `large` profiles): a pattern that is not anchored deletes it too."""
    if profile not in ("original", "large"):
        return
    target = pop.target(found, type_)
    data = _fresh_data(rng, pop)
    data["owner"] = _namesake(pop.values[email], rng)
    pop.insert(type_, rng.randrange(len(pop.colls[type_])), data, found, target)


def _fresh_data(rng: random.Random, pop: _Pop) -> dict:
    return words.session_data(rng, pop.people, pop.values.setdefault("_titles", set()))


def _draw_population(d: _Draw, rng: random.Random, profile: str) -> State:
    emails: set[str] = set()
    titles: set[str] = set()
    values = {"src1": rng.choice(words.SOURCES)}
    for name in d.emails:
        values[name] = words.person(rng, emails)
    for name in d.hidden:
        values[name] = words.person(rng, emails)
    people = [values[n] for n in d.emails + d.hidden] + [words.person(rng, emails) for _ in range(5)]
    if d.title:
        values["title1"] = words.title(rng, titles)
    values["_titles"] = titles
    sizes = {t: _size(profile, rng) for t in d.types}
    pop = _Pop(values, people, {t: [words.session_data(rng, people, titles) for _ in range(sizes[t])]
                                for t in d.types},
               {n: _variant(values[n], rng) if rng.random() < 0.25 else values[n] for n in d.emails})
    for _, shape in sorted(d.shapers, key=lambda pair: pair[0]):  # loops first, then lookups, then staleness
        shape(pop, rng, profile)
    # Noise: other collections of src1 and the same collections under another source.
    other_source = rng.choice([s for s in words.SOURCES if s != values["src1"]])
    streams: list[list[dict]] = []
    for t in d.types:
        streams.append([{"source": values["src1"], "type": t, "data": x} for x in pop.colls[t]])
    extra_types = [t for t in words.CONTENT_TYPES if t not in d.types]
    for t in rng.sample(extra_types, min(2, len(extra_types))):
        streams.append([{"source": values["src1"], "type": t, "data": _fresh_data(rng, pop)}
                        for _ in range(rng.randint(2, 5))])
    for t in d.types:
        streams.append([{"source": other_source, "type": t, "data": _fresh_data(rng, pop)}
                        for _ in range(rng.randint(2, 4))])
    for where, t, data in pop.decoys:
        streams.append([{"source": values["src1"] if where == "src1" else other_source, "type": t, "data": data}])
    records = _interleave(streams, rng)
    seen: set[str] = set()
    for r in records:
        r["id"] = f"{rng.getrandbits(96):024x}"
        r["version"] = rng.randint(1, 4)
        key = json.dumps([r["source"], r["type"], r["data"]], sort_keys=True)
        if key in seen:  # identical data in one collection cannot be stored twice
            r["data"]["description"] += " (second copy)"
        seen.add(key)
    version = {id(r["data"]): r for r in records}
    for data, after, offset in pop.versions:
        version[id(data)]["version"] = version[id(after)]["version"] + offset
    state = State()
    state.declare(Var("src1", SOURCE, values["src1"]))
    for name in d.emails:
        state.declare(Var(name, EMAIL, pop.spelled[name]))
    if d.title:
        state.declare(Var("title1", TITLE, values["title1"]))
    stored = [{"id": r["id"], "source": r["source"], "type": r["type"], "data": r["data"], "version": r["version"]}
              for r in records]
    state.assets[ASSET] = Asset(ASSET, ASSET, {"count": len(stored)}, asset_data(stored, FRONTIER))
    return state


def _interleave(streams: list[list[dict]], rng: random.Random) -> list[dict]:
    """The streams merged in a random order that keeps each stream's own order (creation over time)."""
    out, heads = [], [list(s) for s in streams if s]
    while heads:
        weights = [len(h) for h in heads]
        k = rng.choices(range(len(heads)), weights=weights)[0]
        out.append(heads[k].pop(0))
        if not heads[k]:
            heads.pop(k)
    return out


# ---------------------------------------------------------------------------------------------- the plan


def plan(scenario, rng: random.Random) -> Plan:
    """One frontier program of three to five steps (see the module docstring)."""
    d = _Draw(rng)
    steps: list[Step] = []
    found, ensured = None, None
    if rng.random() < 0.7:
        step, found = lookup(d)
    else:
        step, ensured = ensure(d)
    steps.append(step)
    # The loop may run over the found session's own collection, and act on it: only when acting on it cannot make
    # another session the one the lookup finds (the most or fewest members change as the loop adds or removes).
    same = found is not None and found["kind"] in ("title", "newest") and rng.random() < 0.85
    fix = same and rng.random() < 0.75  # rename the found session after the loop (recovery from a stale read)
    chain = found is not None and found["kind"] != "newest" and rng.random() < 0.7
    # When the loop may act on the found session, its change must keep that session the one the lookup finds: the
    # most members only grow, the fewest only shrink, and the newest of an owner keeps its owner.
    kinds = ("member",) if same and found["kind"] == "newest" else ("owner", "member")
    # A rename after a loop over the found session's owner's sessions: that loop always reaches the found session,
    # so its body must be one that may leave it alone (a member write), or the rename's first try could never
    # succeed and one branch of its recovery would go untested.
    bodies = ("remove", "add") if fix and chain else None
    step, looped = loop(d, found, allow_delete=not fix, chain=chain, same=same, kinds=kinds, bodies=bodies)
    steps.append(step)
    if fix:
        steps.append(rename(d, found, looped))
    owners = (looped["pe"], looped["me"])  # the addresses the loops name (`me` is None where a body writes none)
    if rng.random() < SECOND_LOOP:  # a second loop, over a collection of its own (its sessions are not the first's)
        # a second loop leans to handing over what an owner leaves (a branch on what each session holds)
        step, again = loop(d, found, allow_delete=True, n=2, bodies=BODIES + ("offboard", "spread") * 3,
                           kinds=("owner", "owner", "owner", "member"))
        steps.append(step)
        owners += (again["pe"], again["me"])
    if rng.random() < 0.3:
        owners += (found["how"][1],) if found and found["how"][0] == "newest" else ()
        # nor the address an ensure adds: the session it adds would go again, and what it holds with it
        owners += (ensured["email"],) if ensured else ()
        steps.append(bulk(d, list(d.types), avoid=tuple(a for a in owners if a), found=found))
    else:
        # How many members the found session ends with, when the loop may have changed them.
        target = found if same and looped["body"] in ("remove", "add", "handover", "retitle") else None
        if target is not None and not fix:
            d.shapers.append((2, lambda pop, rng, profile: _shape_stale(pop, rng, profile, found, looped)))
        steps.append(aggregate(d, list(d.types), target))
    if found is not None:
        steps[0].results.insert(0, Result('found1["id"]', {"natural": "the id of the session found first",
                                                          "steps": "the id of `found1`",
                                                          "vague": "the id of the session identified first"}))
    d.shapers.append((3, lambda pop, rng, profile: _shape_missing(pop, rng, profile, found)))
    d.shapers.append((5, lambda pop, rng, profile: _shape_spelling(pop, rng, profile)))
    code = "".join(step.code for step in steps)
    helpers = [h for h, used in ((SAME_PERSON, ("same_person(", "is_member(")), (MEMBERS, ("members(", "is_member(")),
                                 (IS_MEMBER, ("is_member(",))) if any(u in code for u in used)]
    preamble = HELPER + "".join(helpers) + "\n" + "".join(d.url_lines)
    other_collection = [Mutation("argument", line, line.replace(f'/{t}"', f'/{other}"'))
                        for t, line in zip(d.urls, d.url_lines) for other in words.CONTENT_TYPES if other != t]
    return Plan(scenario, preamble, list(HELPER_MUTATIONS), steps, lambda r, p: _draw_population(d, r, p), PROFILES,
                _intro(d), other_collection)
