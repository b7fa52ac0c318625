"""The steps of a session frontier program, each one construct of the frontier grammar (`scenarios/grammar.py`):

* `lookup`: the session of a collection titled `title1`, the newest one owned by an address, or the one with the
  most (or fewest) members with a stated tie-break; `ensure` (a recovery: lookup or create): the session titled
  `title1` gets a member, or is added with it when there is none;
* `loop`: over every page of a collection, a predicate on the owner or the members, and a body (`BODIES`, one
  function each): remove or add a member, hand the session over, delete it, remove a member and retitle it,
  *offboard* (hand a session its owner leaves to its first other member, or delete it when it has none) or
  *spread* (hand it to whichever of its other members owns the fewest of the collection at that moment);
* `rename` (a recovery): rename the session found first, retrying once on 412 with what a fresh read answers;
* `aggregate`: a count, a total, a maximum or the people among the members, read after the writes; or how many
  members the session found first has by then;
* `bulk`: delete every session of a collection an address owns, however the address is spelled.

Each writes its code, its texts in every variant, the facts its oracle depends on, its mutations and its API calls,
and adds to the `Draw` the population shapers it needs (`populations.py`). A step that later steps depend on also
answers what they must know of it (`Found`, `Ensured`, `Looped`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from scenarios.base import Call
from scenarios.grammar import Mutation, Result, Step
from scenarios.session import words
from scenarios.session.store import MAX_PAGE
from scenarios.session.tasks import populations
from scenarios.session.tasks.choices import Draw, Ensured, Found, Looped, Priority

SUFFIXES = (" (archived)", " (reviewed)", " - final", " (shared)")  # what a rename or retitle appends

# The paging helper every program defines; its mutations are the ways of reading a listing wrong.
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


def helpers(code: str) -> str:
    """The helper code a program whose steps are `code` defines: the paging helper, and each other helper it calls."""
    used = ((SAME_PERSON, ("same_person(", "is_member(")), (MEMBERS, ("members(", "is_member(")),
            (IS_MEMBER, ("is_member(",)))
    return HELPER + "".join(h for h, calls in used if any(c in code for c in calls))


# ------------------------------------------------------------------------------------------- predicates


def _tw(type_: str) -> str:
    return words.TYPE_WORDS[type_]


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


# ---------------------------------------------------------------------------------------------- lookups


def lookup(d: Draw) -> tuple[Step, Found]:
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
    exists = "there is always exactly one"
    if kind == "title":
        d.title = True
        line = 'found1 = next(s for s in sessions1 if s["data"]["title"] == title1)\n'
        what = {"natural": f"the {t} session of `src1` titled `title1`",
                "steps": f"the session in `sessions1` whose title is `title1`",
                "vague": f"the {tw} session of `src1` whose title is `title1`"}
        facts.append(("input", "the setup variable `title1`", ("`title1`",)))
        found = Found(type_, url, kind)
        d.shape(Priority.LOOKUPS, populations.shape_title, found)
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
        found = Found(type_, url, kind, email=email)
        d.shape(Priority.LOOKUPS, populations.shape_newest, found)
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
        found = Found(type_, url, kind, oldest=oldest)
        d.shape(Priority.LOOKUPS, populations.shape_extreme, found, d.emails)
    code += line
    texts = {
        "natural": [f"Find {what['natural']} ({exists})."],
        "steps": [f"Read every page of the {t} sessions of `src1` (follow `next` until it is null) into a list "
                  f"`sessions1`.", f"Let `found1` be {what['steps']} ({exists})."],
        "vague": [f"Identify {what['vague']} ({exists})."],
    }
    calls = [Call("list_sessions", ["src1"], ["found1.id", "found1.data", "found1.version"], code, {"type": type_})]
    return Step("lookup", code, texts, facts, muts, [], calls, levers), found


def ensure(d: Draw) -> tuple[Step, Ensured]:
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
    ensured = Ensured(type_, email)
    d.shape(Priority.COLLECTIONS, populations.shape_ensure, ensured)
    d.shape(Priority.TARGETS, populations.shape_ensured, ensured)
    return Step("recovery", code, texts, facts, muts, results, calls, ("lookups", "recovery", "pagination")), ensured


# ------------------------------------------------------------------------------------------------ loops


@dataclass(frozen=True)
class LoopSite:
    """What a loop's body is written for: the loop (`looped`), the code around the body and the names it uses."""

    looped: Looped
    found: Found | None
    url: str  # the variable holding the collection's URL
    pe_code: str  # the expression of the address the predicate names (`found1["data"]["owner"]` for a chain)
    head: str  # the loop's lines before its body: the list, the `for` over every page and the predicate's `if`
    changed: str  # the list the body collects into (`changed1`, ...)
    suffix: str  # drawn for every loop; only a retitle uses it

    @property
    def item(self) -> str:
        """The URL of the session the loop is at, inside an f-string."""
        return f"{{{self.url}}}/{{s['id']}}"

    @property
    def t(self) -> str:
        return f"`{self.looped.type}`"

    @property
    def tw(self) -> str:
        return _tw(self.looped.type)


@dataclass
class LoopBody:
    """What a body adds to its loop: its lines (under the loop's `if`), what it does to each session (`act`) and
    what the loop collects (`keep`) in each variant, its API calls, and its own mutations, levers and facts."""

    lines: str
    act: dict[str, str]
    keep: dict[str, str]
    calls: list[Call]
    mutations: list[Mutation] = field(default_factory=list)
    levers: tuple[str, ...] = ()
    facts: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)


def loop(d: Draw, found: Found | None, allow_delete: bool, chain: bool = False,
         same: bool = False, bodies: tuple[str, ...] | None = None, kinds: tuple[str, ...] = ("owner", "member"),
         n: int = 1) -> tuple[Step, Looped]:
    """A loop over every page of a collection; with `chain`, its predicate is "owned by the owner of the session
    found first" (a value the lookup read, carried into the loop). `n` numbers the loop's list (`changed1`, ...)
    when a program has two. Its body is one of `BODIES`, each written by its own function."""
    rng = d.rng
    type_ = found.type if same else d.type(avoid=tuple(d.types))
    url = d.url(type_)
    kind = "owner" if chain else rng.choice(kinds)
    if chain:
        pe = "_chain"  # an address no setup variable names: the found session's owner in every population
        d.hidden.append(pe)
        d.shape(Priority.FOUND, populations.shape_chain, found, pe)
    else:
        pe = d.email()
    body = rng.choice(_bodies(bodies or tuple(BODIES), kind, type_, found, allow_delete))
    # The address the body writes is never the one a "newest owned by" lookup names (the handover would move it).
    me = None if body in ("offboard", "delete", "spread") else d.email(
        avoid=(pe,) + ((found.email,) if found and found.email else ()))
    suffix = rng.choice(SUFFIXES)
    looped = Looped(type_, body, same, kind, pe, me, suffix if body == "retitle" else None)
    pe_code = 'found1["data"]["owner"]' if chain else pe
    changed = f"changed{n}"
    head = f"{changed} = []\nfor s in every_session({url}):\n    if {_pred(kind, pe_code)}:\n"
    d.shape(Priority.COLLECTIONS, populations.shape_loop, looped)  # before the body's own shapers
    written = BODIES[body](d, LoopSite(looped, found, url, pe_code, head, changed, suffix))
    lines = written.lines
    code = head + lines
    # Each mutation names its whole block (the loop's list and collection), so a second loop's stays unique.
    muts = [Mutation("predicate", head, head.replace(_pred(kind, pe_code), _pred_other(kind, pe_code))),
            *written.mutations, Mutation("first_match", lines, lines + "        break\n")]
    t, tw = f"`{type_}`", _tw(type_)
    pt = _pred_text(kind, pe) if not chain else {
        "natural": "owned by the same person as the session found first" + (" (that session included)" if same
                                                                             else ""),
        "steps": "whose owner is the owner of `found1`",
        "vague": "owned by whoever owns the session identified first"}
    act, keep = written.act, written.keep
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
             ("value", "loop: the predicate", tuple(pt.values())), *written.facts]
    results = [Result(changed, {"natural": keep["natural"] + " (in listing order)", "steps": keep["steps"],
                                "vague": keep["vague"] + " (in listing order)"})]
    calls = [Call("list_sessions", ["src1"] + (["found1.data"] if chain else []), ["s.id", "s.data", "s.version"],
                  head, {}), *written.calls]
    if n > 1:  # its own names (`s2`, `r2`, `current2`): the values it carries are not the first loop's
        code, muts = _own_names(code, n), [Mutation(m.operator, _own_names(m.before, n), _own_names(m.after, n))
                                           for m in muts]
        calls = [Call(c.api, [_own_names(v, n) for v in c.inputs], [_own_names(v, n) for v in c.outputs],
                      _own_names(c.code, n), c.args) for c in calls]
    levers = ("loops", "pagination", *written.levers)
    return Step("loop", code, texts, facts, muts, results, calls, levers), looped


def _bodies(bodies: tuple[str, ...], kind: str, type_: str, found: Found | None, allow_delete: bool) -> list[str]:
    """The bodies a loop may have. offboard: hand a session the owner leaves to its first other member, or delete
    it when it has none (it deletes, and only over a collection no lookup reads, so that no later step asks for a
    session it may have deleted). spread: hand each session the owner leaves to the other member who owns the
    fewest of the collection at that moment (each handover moves the counts the next one compares), over a
    collection no lookup reads."""
    looked_up = found is not None and found.type == type_
    return [b for b in bodies if (allow_delete or b != "delete")
            and (b != "offboard" or (kind == "owner" and allow_delete and not looked_up))
            and (b != "spread" or (kind == "owner" and not looked_up))]


def _member_write(site: LoopSite, adding: bool) -> LoopBody:
    """One member write (`add` or `remove`); the ids it changed are collected."""
    me, changed, t, tw = site.looped.me, site.changed, site.t, site.tw
    method, done = ("put", 201) if adding else ("delete", 204)
    lines = (f'        r = requests.{method}(f"{site.item}/members/{{{me}}}")\n'
             f"        if r.status_code == {done}:\n"
             f'            {changed}.append(s["id"])\n')
    muts = [Mutation("collect_all", lines, lines.replace(f"        if r.status_code == {done}:\n    ", "")),
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
    return LoopBody(lines, act, keep, calls, muts)


def _remove(d: Draw, site: LoopSite) -> LoopBody:
    d.shape(Priority.TWINS, populations.shape_twin, site.looped, site.found)
    return _member_write(site, adding=False)


def _add(d: Draw, site: LoopSite) -> LoopBody:
    d.shape(Priority.TWINS, populations.shape_twin, site.looped, site.found)
    return _member_write(site, adding=True)


def _handover(d: Draw, site: LoopSite) -> LoopBody:
    """Make `me` a member, then the owner: two writes, the second with a fresh read's data and ETag."""
    me, changed, t, tw = site.looped.me, site.changed, site.t, site.tw
    lines, calls, stale = _member_then_update(site.item, "put", me, "owner", me, me, changed)
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
    d.shape(Priority.OWNERS, populations.shape_not_owned, site.looped)
    return LoopBody(lines, act, keep, calls, stale, ("versions",),
                    [("value", "loop: the new owner's spelling", ("as the setup block spells it",))])


def _delete(d: Draw, site: LoopSite) -> LoopBody:
    """Delete each session, with the version the listing read."""
    changed, t, tw = site.changed, site.t, site.tw
    lines = (f'        requests.delete(f"{site.item}", headers={{"If-Match": str(s["version"])}})\n'
             f'        {changed}.append(s["id"])\n')
    muts = [Mutation("stale_version", lines, lines.replace('str(s["version"])', '"1"'))]
    act = {"natural": "delete it", "steps": "delete it, sending its version in `If-Match`, and append its id "
                                            f"to `{changed}`", "vague": "remove it"}
    keep = {"natural": f"the ids of the {t} sessions deleted in that loop", "steps": f"`{changed}`",
            "vague": f"the ids of the {tw} sessions removed in that pass"}
    calls = [Call("delete_session", ["s.id", "s.version"], [], lines, {})]
    return LoopBody(lines, act, keep, calls, muts, ("versions",))


def _offboard(d: Draw, site: LoopSite) -> LoopBody:
    """Hand a session the owner leaves to its first other member, or delete it when it has none."""
    item, pe_code, changed, t, tw = site.item, site.pe_code, site.changed, site.t, site.tw
    others = f"[m for m in members(s) if not same_person(m, {pe_code})]"
    lines = (f"        others = {others}\n"
             f"        if others:\n"
             f'            requests.put(f"{item}", json={{**s["data"], "owner": others[0]}}, '
             f'headers={{"If-Match": str(s["version"])}})\n'
             f"        else:\n"
             f'            requests.delete(f"{item}", headers={{"If-Match": str(s["version"])}})\n'
             f'            {changed}.append(s["id"])\n')
    delete = f'            requests.delete(f"{item}", headers={{"If-Match": str(s["version"])}})\n'
    muts = [Mutation("exact_case", lines, lines.replace(f"not same_person(m, {pe_code})", f"m != {pe_code}")),
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
    # after the loop's own shaping, which decides which sessions the owner has
    d.shape(Priority.COLLECTIONS, populations.shape_offboard, site.looped)
    return LoopBody(lines, act, keep, calls, muts, ("versions",))


_OWNERS = '{ind}owners = [x["data"]["owner"].lower() for x in every_session({url})]\n'


def _spread(d: Draw, site: LoopSite) -> LoopBody:
    """Hand a session over to whichever of its other members owns the fewest sessions of the collection at that
    moment (ties: the one listed first). It reads the owners again before each handover: the handovers before it
    moved the counts."""
    url, item, pe_code, changed, t, tw = site.url, site.item, site.pe_code, site.changed, site.t, site.tw
    others = f"[m for m in members(s) if not same_person(m, {pe_code})]"
    owners = _OWNERS.format(url=url, ind="            ")
    pick = "            new = min(others, key=lambda m: owners.count(m.lower()))\n"
    put = (f'            requests.put(f"{item}", json={{**s["data"], "owner": new}}, '
           f'headers={{"If-Match": str(s["version"])}})\n')
    lines = (f"        others = {others}\n"
             f"        if others:\n" + owners + pick + put +
             f"            {changed}.append(new)\n")
    # counts read once, before the loop: the owners line moved out of the body to the top of the step
    static = _OWNERS.format(url=url, ind="") + site.head + lines.replace(owners, "")
    muts = [Mutation("exact_case", lines, lines.replace('["owner"].lower() for x', '["owner"] for x')
                     .replace("owners.count(m.lower())", "owners.count(m)")),
            Mutation("tie_break", lines, lines.replace("min(others,", "min(others[::-1],")),
            Mutation("aggregate", lines, lines.replace("min(others,", "max(others,")),
            Mutation("wrong_item", lines, lines.replace(pick, "            new = others[0]\n")),
            Mutation("drop_write", lines, lines.replace(put, "")),
            Mutation("static_tally", site.head + lines, static)]
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
    # after a bulk delete's shaping, which may give sessions of this collection an owner
    d.shape(Priority.OWNERS, populations.shape_spread, site.looped)
    facts = [("value", "loop: whom each session goes to", ("the fewest",)),
             ("value", "loop: the counts move with each handover", ("at that moment", "at that point")),
             ("value", "loop: the tie-break", ("listed first", "the first of `others`"))]
    return LoopBody(lines, act, keep, calls, muts, ("versions", "aggregates", "feedback"), facts)


def _retitle(d: Draw, site: LoopSite) -> LoopBody:
    """Remove `me` from the members, then append the suffix to the title: two writes, the second with a fresh
    read's data and ETag."""
    me, suffix, changed, t, tw = site.looped.me, site.suffix, site.changed, site.t, site.tw
    lines, calls, stale = _member_then_update(site.item, "delete", me, "title",
                                              f'current.json()["data"]["title"] + {suffix!r}',
                                              f's["data"]["title"] + {suffix!r}', changed)
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
    return LoopBody(lines, act, keep, calls, stale, ("versions",),
                    [("value", "loop: the title suffix", (repr(suffix),))])


# A loop's bodies, each written by its function (the order is the one a body is drawn from).
BODIES: dict[str, Callable[[Draw, LoopSite], LoopBody]] = {
    "remove": _remove, "add": _add, "handover": _handover, "delete": _delete, "retitle": _retitle,
    "offboard": _offboard, "spread": _spread,
}


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



# -------------------------------------------------------------------------------------- after the loops


def rename(d: Draw, found: Found, looped: Looped) -> Step:
    """Recovery: append a suffix to the found session's title; a 412 (the loop changed it) is met by reading it
    again and retrying once."""
    url = found.url
    suffix = d.rng.choice([x for x in SUFFIXES if x != looped.suffix])
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
    d.shape(Priority.FOUND, populations.shape_stale, found, looped)
    d.shape(Priority.FOUND, populations.shape_untouched, found, looped)
    d.shape(Priority.VERSIONS, populations.shape_collision, found, looped)
    return Step("recovery", code, texts, facts, muts, results, calls, ("recovery", "versions"))


def aggregate(d: Draw, types: list[str], found: Found | None = None) -> Step:
    """A count, total or maximum over a collection, read after the writes before it; or, with `found`, how many
    members the session found first has by then."""
    rng = d.rng
    if found is not None and rng.random() < 0.4:
        url = found.url
        # The found session always has a `members` field (`populations.shape_missing` spares it).
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
        d.shape(Priority.SPELLINGS, populations.shape_people, type_)
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


def bulk(d: Draw, types: list[str], avoid: tuple[str, ...] = (), found: Found | None = None) -> Step:
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
    d.shape(Priority.COLLECTIONS, populations.shape_bulk, type_, email)
    d.shape(Priority.TARGETS, populations.shape_spared, type_, email, found)
    d.shape(Priority.SPELLINGS, populations.shape_namesake, type_, email, found)
    return Step("bulk", line, texts, facts, muts, results, calls, ())
