"""The test inputs of a session frontier program: one population per profile, drawn afresh.

Every input has new sources, people, titles, ids and versions. A profile shapes the collections the program reads:
`original` (8-12 sessions), `none` (no session matches the loop), `single` (one does), `page` (exactly one page,
the last session matching), `page+1` (the only match on the second page), `large` (51 sessions: more than the
largest page). Lookups always find their session; ties are made where a tie-break is stated; the session titled
`title1` also exists, as a decoy, in another collection.

`draw_population` draws the collections, then runs the shapers the program's steps added (`Draw.shape`, by
`Priority`): each `shape_*` function below makes the population show what one step must get right, without
undoing what the shapers before it made. Then come the noise (other collections, other sources) and every
session's id and version.
"""

from __future__ import annotations

import json
import random

from scenarios.base import FRONTIER, Asset, State, Var
from scenarios.session import words
from scenarios.session.store import DEFAULT_PAGE, MAX_PAGE, asset_data
from scenarios.session.tasks.choices import Draw, Ensured, Found, Looped
from scenarios.session.variables import ASSET, EMAIL, SOURCE, TITLE

PROFILES = ("original", "none", "single", "page", "page+1", "large")


class Population:
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

    def target(self, found: Found | None, type_: str) -> dict | None:
        """The session the lookup finds, when it is one of this collection's."""
        return self.colls[type_][_found_at(self, found)] if found is not None and found.type == type_ else None

    def insert(self, type_: str, at: int, data: dict, found: Found | None, target: dict | None) -> bool:
        """Put a session into a collection at `at`, unless that makes another than `target` the one the lookup
        finds; whether it was put."""
        self.colls[type_].insert(at, data)
        if target is not None and self.colls[type_][_found_at(self, found)] is not target:
            self.colls[type_].pop(at)
            return False
        return True


# ---------------------------------------------------------------------------------------------- helpers


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


def _variant(address: str, rng: random.Random) -> str:
    """The same address in another case, as people write theirs."""
    local, domain = address.split("@", 1)
    forms = {".".join(w.capitalize() for w in local.split(".")) + "@" + domain, address.upper(),
             local + "@" + domain.upper(), local.capitalize() + "@" + domain} - {address}
    return rng.choice(sorted(forms))


def _namesake(address: str, rng: random.Random) -> str:
    """Another person whose address holds this one: `jo` + `ann.lee@example.org`, or the same with `.uk` after."""
    return rng.choice(("jo", "al", "ma")) + address if rng.random() < 0.5 else address + ".uk"


def _fresh_data(rng: random.Random, pop: Population) -> dict:
    return words.session_data(rng, pop.people, pop.values.setdefault("_titles", set()))


def _found_at(pop: Population, found: Found) -> int:
    """Where the lookup's session stands in its collection (the reference's own rule)."""
    coll = pop.colls[found.type]
    if found.kind == "title":
        return next(i for i, x in enumerate(coll) if x["title"] == pop.values["title1"])
    if found.kind == "newest":
        return [i for i, x in enumerate(coll) if _same(x["owner"], pop.values[found.email])][-1]
    sizes = [len(_members(x)) for x in coll]
    best = max(sizes) if found.kind == "most" else min(sizes)
    spots = [i for i, k in enumerate(sizes) if k == best]
    return spots[0] if found.oldest else spots[-1]


# --------------------------------------------------------------------------------------------- the draw


def draw_population(d: Draw, rng: random.Random, profile: str) -> State:
    """The test input of one profile: the setup's values, the collections the program reads (shaped by its steps'
    shapers, by priority), the other collections around them, and every session's id and version."""
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
    pop = Population(values, people, {t: [words.session_data(rng, people, titles) for _ in range(sizes[t])]
                                      for t in d.types},
                     {n: _variant(values[n], rng) if rng.random() < 0.25 else values[n] for n in d.emails})
    for shaper in sorted(d.shapers, key=lambda shaper: shaper.priority):  # ties keep the order they were added in
        shaper.shape(pop, rng, profile, *shaper.args)
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


# ----------------------------------------------------------------------------------- shapers of lookups


def shape_title(pop: Population, rng, profile, found: Found) -> None:
    """The session titled `title1`, and a decoy with that title in another collection."""
    type_ = found.type
    coll = pop.colls[type_]
    # Late where the profile is about paging (on the second page, or past the largest page); elsewhere anywhere but
    # last, so that the last session a loop saw is not the titled one on every input.
    at = {"page+1": len(coll) - 1, "large": len(coll) - 1}.get(profile, rng.randrange(len(coll) - 1))
    coll[at]["title"] = pop.values["title1"]
    decoy = _fresh_data(rng, pop)
    decoy["title"] = pop.values["title1"]
    other = rng.choice([t for t in words.CONTENT_TYPES if t != type_])
    pop.decoys.append(("src1", other, decoy))


def shape_newest(pop: Population, rng, profile, found: Found) -> None:
    """The sessions the lookup's address owns, the newest of them where the profile wants it."""
    coll = pop.colls[found.type]
    n, address = len(coll), pop.values[found.email]
    # In `single` and `none` the newest is not the collection's last session (the loop's variable when it ends), so
    # that a write naming that variable where the found session is meant shows there.
    owned = {"single": [rng.randrange(n - 1)], "none": [rng.randrange(n - 1)], "page": [0, n - 1], "page+1": [1, n - 1],
             "large": sorted({rng.randrange(n - 1), rng.randrange(n - 1), n - 1})}.get(profile)
    if owned is None:
        owned = sorted(rng.sample(range(n), rng.randint(2, 3)))
    for i, data in enumerate(coll):
        _make_match("owner", address, data, rng, pop.people, i in owned)


def shape_extreme(pop: Population, rng, profile, found: Found, emails: list[str]) -> None:
    """The extreme made where the profile wants it (on the second page for page+1 and large), tied in some
    profiles so that the stated tie-break decides. Addresses the program names keep their membership where they
    can, so that the steps shaped before still see what they were shaped for. `emails`: the setup's e-mail
    variables (all of them by the time a population is drawn)."""
    coll, most = pop.colls[found.type], found.kind == "most"
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


# ----------------------------------------------------------------------------------- shapers of ensures


def shape_ensure(pop: Population, rng, profile, ensured: Ensured) -> None:
    """The session titled `title1` there or not by profile (late where the profile is about paging), and a decoy
    with that title under another source."""
    type_ = ensured.type
    coll = pop.colls[type_]
    if profile in ("original", "page+1", "large"):
        at = len(coll) - 1 if profile != "original" else rng.randrange(len(coll))
        coll[at]["title"] = pop.values["title1"]
    decoy = _fresh_data(rng, pop)
    decoy["title"] = pop.values["title1"]
    pop.decoys.append(("other", type_, decoy))


def shape_ensured(pop: Population, rng, profile, ensured: Ensured) -> None:
    """Where the session titled `title1` is there, it lacks the address in the `original` and `large` profiles, so
    that the member added to it shows, and lists it in `page+1` (adding it again changes nothing)."""
    data = next((x for x in pop.colls[ensured.type] if x["title"] == pop.values["title1"]), None)
    if data is not None:
        _make_match("member", pop.values[ensured.email], data, rng, pop.people, profile == "page+1")


# ------------------------------------------------------------------------------------- shapers of loops


def shape_chain(pop: Population, rng, profile, found: Found, pe: str) -> None:
    """The session found first is owned by the address the loop's sessions are shaped around."""
    pop.colls[found.type][_found_at(pop, found)]["owner"] = pop.values[pe]


def shape_loop(pop: Population, rng, profile, looped: Looped) -> None:
    """Which sessions the loop's predicate matches, where the profile wants them; of those, which its body acts on;
    and a decoy under another source that the predicate would match."""
    type_, kind, body = looped.type, looped.kind, looped.body
    coll = pop.colls[type_]
    p, m = pop.values[looped.pe], pop.values.get(looped.me)
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


def _owner_alias(pop: Population, pe: str, rng) -> str:
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


def shape_offboard(pop: Population, rng, profile, looped: Looped) -> None:
    """The sessions the owner leaves: some with other members (the owner sometimes listed among them, first and in
    another case, and at least two others, so that which one is first matters), some with none (an empty list,
    null, no field, or only the owner, in another case). Both kinds in the `original` and `large` profiles, and
    each way of having no member in one profile or another."""
    pe = looped.pe
    p = pop.values[pe]
    owned = [x for x in pop.colls[looped.type] if _same(x["owner"], p)]
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


def spread(coll: list[dict], owner: str, rule: str = "right") -> list[tuple[int, str]]:
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


def shape_spread(pop: Population, rng, profile, looped: Looped) -> None:
    """The sessions the owner leaves and who owns the rest: three people (each sometimes spelled in another case)
    are the other members of those sessions and own some of the others, so that the counts the choice compares
    differ, tie, and move as the loop hands sessions over. In the `original` and `large` profiles the draw is kept
    only when the task's rule picks otherwise than each wrong one (counts read once, addresses compared exactly,
    the other end of a tie, the most, the first member); the last session the owner has always has other members,
    so that a loop that stops a page early shows."""
    pe = looped.pe
    coll = pop.colls[looped.type]
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
        right = spread(coll, p)
        if all(spread(coll, p, rule) != right for rule in SPREAD_RULES):
            return
    # No draw told every rule apart: the last one stays, and a wrong rule it cannot tell apart drops the task.


def shape_not_owned(pop: Population, rng, profile, looped: Looped) -> None:
    """A handover's text says its new owner owns none of the sessions handed over yet: made true last."""
    named = set(pop.named().values())
    for data in pop.colls[looped.type]:
        if _matches(looped.kind, pop.values[looped.pe], data) and _same(data["owner"], pop.values[looped.me]):
            data["owner"] = rng.choice([x for x in pop.people if x not in named])


def shape_twin(pop: Population, rng, profile, looped: Looped, found: Found | None) -> None:
    """Copies, as real stores hold them: a session the loop's body changes gets a twin just before it, a copy of its
    data as the change would leave it. The service then refuses the change (409: it would duplicate the twin), so
    that session is not one of those changed (in the `original` and `large` profiles)."""
    if profile not in ("original", "large"):
        return
    type_, kind, me = looped.type, looped.kind, looped.me
    coll = pop.colls[type_]
    target = pop.target(found, type_)
    p, m, adding = pop.values[looped.pe], pop.values[me], looped.body == "add"
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


# ----------------------------------------------------------------------------------- shapers of renames


def shape_stale(pop: Population, rng, profile, found: Found, looped: Looped) -> None:
    """In some profiles the loop acts on the session found first, so that writing to it afterwards with what was
    read before the loop is refused (412) or would undo the loop's change."""
    if profile not in ("original", "page+1", "large", "single"):
        return
    i = _found_at(pop, found)
    data = pop.colls[found.type][i]
    before = json.loads(json.dumps(data))
    _make_match(looped.kind, pop.values[looped.pe], data, rng, pop.people, True)
    if looped.body in ("remove", "retitle"):
        _make_match("member", pop.values[looped.me], data, rng, pop.people, True)
    elif looped.body in ("add", "handover"):
        _make_match("member", pop.values[looped.me], data, rng, pop.people, False)
    if _found_at(pop, found) != i:  # the change moved the lookup to another session: this input stays as it was
        data.clear()
        data.update(before)


def shape_untouched(pop: Population, rng, profile, found: Found, looped: Looped) -> None:
    """In the `none` profile the loop leaves the session found first alone, so that a rename after it succeeds at
    the first try there (the other branch of its recovery, which the profiles of `shape_stale` take). No session
    matches the loop's predicate in that profile, except the found one under a loop over the sessions of its
    owner: that one then holds the member the body would add, or lacks the one it would remove."""
    if profile != "none":
        return
    data = pop.colls[found.type][_found_at(pop, found)]
    if _matches(looped.kind, pop.values[looped.pe], data) and looped.body in ("remove", "add"):
        _make_match("member", pop.values[looped.me], data, rng, pop.people, looped.body == "add")


WRITES = {"remove": 1, "add": 1, "handover": 2, "retitle": 2}  # the writes a loop's body makes to a session it acts on


def shape_collision(pop: Population, rng, profile, found: Found, looped: Looped) -> None:
    """Where the loop acts on the session found first, the last session of that collection (the loop's variable when
    it ends) is listed with the version the found one has after the loop: a rename that sends the loop variable's
    version instead of the found session's then writes the data read before the loop, and is not refused. In the
    `none` profile, where the loop leaves the found session alone (`shape_untouched`), the last session is listed
    with the found one's version: a first try sent to the loop's last session then lands there, not refused (a
    refusal would send the rename to its retry, which makes up for it)."""
    coll = pop.colls[found.type]
    data = coll[_found_at(pop, found)]
    if profile == "none":
        if coll[-1] is not data:
            pop.versions.append((coll[-1], data, 0))
        return
    me = pop.values.get(looped.me)
    acts = _matches(looped.kind, pop.values[looped.pe], data) and me is not None and \
        _matches("member", me, data) == (looped.body in ("remove", "retitle"))
    if acts and coll[-1] is not data and looped.body in WRITES:
        pop.versions.append((coll[-1], data, WRITES[looped.body]))


# -------------------------------------------------------------------------------- shapers of aggregates


def shape_people(pop: Population, rng, profile, type_) -> None:
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


# ------------------------------------------------------------------------------ shapers of bulk deletes


def shape_bulk(pop: Population, rng, profile, type_, email) -> None:
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


def shape_spared(pop: Population, rng, profile, type_, email, found: Found | None) -> None:
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


def shape_namesake(pop: Population, rng, profile, type_, email, found: Found | None) -> None:
    """Someone else whose address holds this one owns a session of the collection (added, not last, in the
    `original` and `large` profiles): a pattern that is not anchored deletes it too."""
    if profile not in ("original", "large"):
        return
    target = pop.target(found, type_)
    data = _fresh_data(rng, pop)
    data["owner"] = _namesake(pop.values[email], rng)
    pop.insert(type_, rng.randrange(len(pop.colls[type_])), data, found, target)


# ----------------------------------------------------------------------------- shapers of every program


def shape_missing(pop: Population, rng, profile, found: Found | None) -> None:
    """Records as real services keep them: some sessions have no `members` field at all (the documentation says
    so). Only sessions nothing is shaped around lose it: no named address among their owner and members, not the
    session found first, not one with the most members, and none in a collection where the fewest are sought."""
    named = set(pop.named().values())
    for type_, coll in pop.colls.items():
        if found is not None and found.type == type_ and found.kind == "fewest":
            continue  # the fewest members: `shape_extreme` decides which sessions have no field
        skip = _found_at(pop, found) if found is not None and found.type == type_ else -1
        top = max((len(_members(x)) for x in coll), default=0)
        spare = [i for i, x in enumerate(coll) if i != skip and x["owner"] not in named
                 and not named & set(_members(x)) and len(_members(x)) < top]
        for k, i in enumerate(rng.sample(spare, min(len(spare), rng.randint(1, 2)))):
            if (k == 0) == (profile == "original" or rng.random() < 0.5):  # `"members": null`, or no field
                coll[i]["members"] = None
            else:
                del coll[i]["members"]


def shape_spelling(pop: Population, rng, profile) -> None:
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

