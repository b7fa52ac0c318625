"""The `session` scenario's state machine: programs that call a real session service (cBioPortal's, as in the EvoMaster
benchmark) over HTTP with `requests`, and edit session data locally between calls.

The builder side below is light (no FastAPI, no server): it simulates the service's store in `State.extra` to
solve every call's parameters, so that updates and deletes hit live sessions, adds of identical data return the
stored id, and queries are chosen to match. The simulation uses the service's own filter code
(`scenarios.session.filters`) and checksum rule (`scenarios.session.store.canonical`), so the two cannot drift
apart. The sandbox side is `scenarios.session.world.SessionWorld`.

Variables: `src*` (a source, declared in the setup block), `data*` (session data: declared, taken from a listed
session, or a local edit), `email*` (declared, or a listed session's owner), `sessions*`/`found*`
(lists from list and query calls), `id*` (ids from adds or taken from a list), `status*` (HTTP status of an update or delete; like every
result no later call consumes, it goes into RESULT).
An update or delete names its session by an id variable or by a position in a listed or queried result.
Instructions name variables, session types, field paths and list positions, never a stored value. The `natural`
and `vague` texts refer to results by what they are ("the listing", "the id of the added session", "the data of
the picked session"); each API's `values` lists what the oracle depends on beyond the setup variables (a type, a
query's field, a position, which part of a picked session, an edit) in the forms all three variants write it.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

from scenarios.base import (
    FRONTIER, PAPER, API, Asset, Call, Condition, Scenario, State, Var, canonical_json, iter_unique, join_names, setup_block,
)
from scenarios.session import tasks, words
from scenarios.session.doc import DOC_PATHS, operations
from scenarios.session.filters import compile_filter
from scenarios.session.store import asset_data, canonical, parse_asset
from scenarios.session.variables import ASSET, DATA, EMAIL, SESSIONS, SID, SOURCE, STATUS
from scenarios.session.words import TYPE_WORDS

PEOPLE_PER_TASK = 5
SESSIONS_PER_COLLECTION = (2, 3)
URL = 'f"{BASE_URL}/api/sessions/{%s}/%s'  # % (source variable, type): the code prefix of every call
UPDATED, DELETED = 200, 204  # the status codes of a successful update and delete (scenarios.session.app)


# ------------------------------------------------------------------------------------ simulated service


def _records(state: State) -> list[dict]:
    """Live sessions in creation order: {"key", "id" (pre-loaded only), "source", "type", "data"}."""
    return state.extra["store"]


def _record(state: State, key: str) -> dict | None:
    return next((r for r in _records(state) if r["key"] == key), None)


def _collection(state: State, source: str, type_: str) -> list[dict]:
    return [r for r in _records(state) if r["source"] == source and r["type"] == type_]


def _same_data(a: dict, b: dict) -> bool:
    return canonical(a) == canonical(b)


def _duplicate(state: State, source: str, type_: str, data: dict, besides: str | None = None) -> dict | None:
    return next((r for r in _collection(state, source, type_)
                 if r["key"] != besides and _same_data(r["data"], data)), None)


def _types_in(state: State, source: str) -> list[str]:
    return iter_unique(r["type"] for r in _records(state) if r["source"] == source)


def _source_var(state: State, source: str) -> str:
    return next(v.name for v in state.of_type(SOURCE) if v.value == source)


def _matches(record: dict, field: str, value: str) -> bool:
    doc = {"_id": record.get("id"), "id": record.get("id"), "source": record["source"], "type": record["type"],
           "data": record["data"]}
    return compile_filter({field: value})(doc)


def _listing(source: str, type_: str, records: list[dict]) -> dict:
    """The value of a `sessions` variable: what a list or query answered, as of that call.

    Listing a session observes its data: an update or delete of it is allowed again (see `_writable`)."""
    for r in records:
        r.pop("unseen", None)
    return {"source": source, "type": type_,
            "items": [{"key": r["key"], "data": copy.deepcopy(r["data"])} for r in records]}


POSITIONS = {0: "first", 1: "second", -1: "last"}


def _positions(n: int) -> list[int]:
    """List positions a program may take a session from: none from a list of one, where the first session is also
    the last (`[0]` and `[-1]` would both pass)."""
    return [i for i in POSITIONS if n >= 2 and -n <= i < n]


def _targets(state: State, var: Var) -> list[tuple[dict, int | None]]:
    """Live, writable sessions a `sid` or `sessions` variable can name: (record, list position or None for an
    id)."""
    if var.type == SID:
        rec = _record(state, var.value)
        return [(rec, None)] if rec and _writable(rec) else []
    items = var.value["items"]
    out = []
    for i in _distinct_positions(state, var.name):
        rec = _record(state, items[i]["key"])
        if rec and _writable(rec):
            out.append((rec, i))
    return out


def _distinct_positions(state: State, lst: str) -> list[int]:
    """Positions of a listing whose session no other listing in scope holds at the same position (naming it through
    the wrong list would pass)."""
    items = state.vars[lst].value["items"]
    others = [v.value["items"] for v in state.of_type(SESSIONS) if v.name != lst]
    return [i for i in _positions(len(items))
            if not any(-len(o) <= i < len(o) and o[i]["key"] == items[i]["key"] for o in others)]


def _same_listing(state: State, items: list[dict]) -> bool:
    """Whether a listing variable in scope already holds exactly these sessions (same ids, same data): a second
    read of it would be interchangeable with the first, so a program could use either and pass."""
    keys = [(r["key"], canonical(r["data"])) for r in items]
    return any([(i["key"], canonical(i["data"])) for i in v.value["items"]] == keys for v in state.of_type(SESSIONS))


def _writable(rec: dict) -> bool:
    """Whether an update or delete of this session keeps every earlier call live.

    Data written by an add or update that nothing has listed since is still unseen: overwriting or deleting it
    would make that earlier call dead (skipping it, or sending other data, would change nothing a test can see).
    """
    return not rec.get("unseen")


def _status_held(state: State, status: int) -> bool:
    """Whether RESULT already holds a status code equal to the one this write answers: the two could be swapped
    or either one returned twice, and every test case would pass (a successful write always answers the same)."""
    return any(v.value == status and not v.consumers for v in state.of_type(STATUS))


def _target_code(var: str, index: int | None) -> str:
    return f"{{{var}}}" if index is None else f"{{{var}[{index}]['id']}}"


def _target_text(d: dict, index: int | None) -> str:
    return d["in1_"] if index is None else f"the {POSITIONS[index]} session in {d['in1_']}"


# Natural and vague texts: a session named by an id is "the session with <the id's reference>"; one named by its
# position in a listing reads as in `steps`. The type and source of an update or delete are not restated:
# the listing or the id they come from fixes both (the steps text states them anyway).
def _session_text(d: dict, index: int | None) -> str:
    return f"the session with {d['in1_']}" if index is None else _target_text(d, index)


def _position_values(index: int | None) -> dict[str, tuple[str, ...]]:
    """The position of an update's or delete's target, as `_target_text` writes it (an id names no position)."""
    return {} if index is None else {"position": (f"the {POSITIONS[index]} session in",)}


def _type_values(type_: str) -> dict[str, tuple[str, ...]]:
    """A session type as natural and steps texts write it (`group`) or as vague ones do (group session[s])."""
    words_ = TYPE_WORDS[type_]
    return {"type": (f"`{type_}`", f"{words_} session", f"{words_} sessions")}


def _describe_type(d: dict) -> dict:
    d["tword"] = TYPE_WORDS[d["type"]]
    return d


def _type_for(state: State, source: str, rng: random.Random, existing: float) -> str:
    """A session type: one the source already has (with probability `existing`), else any content type."""
    have = _types_in(state, source)
    if have and rng.random() < existing:
        return rng.choice(have)
    return rng.choice(words.CONTENT_TYPES)


# ------------------------------------------------------------------------------------------- the APIs


class ListSessions(API):
    name = "list_sessions"
    phrases = (
        "list all `{type}` sessions of source {in0_} and call the list {out0_}",
        "fetch every `{type}` session stored under {in0_}; name the resulting list {out0_}",
        "get the list of {in0_}'s `{type}` sessions as {out0_}",
    )
    natural = (
        "list the `{type}` sessions of {in0_}",
        "get all of {in0_}'s `{type}` sessions",
        "fetch the list of `{type}` sessions stored for {in0_}",
    )
    vague = (
        "see which {tword} sessions {in0_} currently has",
        "look up every {tword} session stored for {in0_}",
    )
    noun = "{nth}listing"

    def values(self, call):
        return _type_values(call.args["type"])

    def describe(self, call):
        return _describe_type(super().describe(call))

    @staticmethod
    def _types(state: State, source: str) -> list[str]:
        """Collections worth listing: not empty (an empty list tests nothing), not unchanged since a listing in
        scope (the two lists would be interchangeable)."""
        return [t for t in _types_in(state, source) if not _same_listing(state, _collection(state, source, t))]

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(SOURCE) if self._types(state, v.value)]

    def apply(self, state, inputs, rng):
        (src,) = inputs
        source = state.vars[src].value
        type_ = rng.choice(self._types(state, source))
        out = state.produce("sessions", SESSIONS, _listing(source, type_, _collection(state, source, type_)), self.name)
        state.consume(inputs, self.name)
        code = f"{out} = requests.get({URL % (src, type_)}\").json()"
        return Call(self.name, [src], [out], code, {"type": type_})


class AddSession(API):
    name = "add_session"
    phrases = (
        "add {in1_} as a new `{type}` session under source {in0_} and keep the returned id as {out0_}",
        "save the data {in1_} to the service as a `{type}` session of {in0_}; store its id in {out0_}",
        "create a `{type}` session for source {in0_} with the data {in1_}, naming its id {out0_}",
    )
    natural = (
        "add {in1_} as a new `{type}` session of {in0_}",
        "save {in1_} to the service as a `{type}` session of {in0_}",
        "create a `{type}` session for {in0_} holding {in1_}",
    )
    vague = (
        "file {in1_} as a {tword} session of {in0_}",
        "store {in1_} with the service as one of {in0_}'s {tword} sessions",
    )
    noun = "id of the {nth}added session"

    def values(self, call):
        return _type_values(call.args["type"])

    def describe(self, call):
        return _describe_type(super().describe(call))

    @staticmethod
    def _free(state: State, source: str, value) -> list[str]:
        """Types an add of this data can go to without answering an id already in scope (identical data under the
        same source and type answers the stored session's id)."""
        held = {v.value for v in state.of_type(SID)}
        return [t for t in words.CONTENT_TYPES if (_duplicate(state, source, t, value) or {}).get("key") not in held]

    def bindings(self, state):
        return [(s.name, d.name) for s in state.of_type(SOURCE) for d in state.of_type(DATA)
                if self._free(state, s.value, d.value)]

    def apply(self, state, inputs, rng):
        src, data = inputs
        source, value = state.vars[src].value, state.vars[data].value
        type_ = _type_for(state, source, rng, existing=0.6)
        free = self._free(state, source, value)
        if type_ not in free:  # the answer would be an id in scope
            type_ = rng.choice(free)
        same = _duplicate(state, source, type_, value)
        if same is None:  # identical data under the same source and type returns the stored session's id
            state.extra["next"] += 1
            same = {"key": f"r{state.extra['next']}", "id": None, "source": source, "type": type_,
                    "data": copy.deepcopy(value), "unseen": True}
            _records(state).append(same)
        out = state.produce("id", SID, same["key"], self.name)
        state.consume(inputs, self.name)
        code = f"{out} = requests.post({URL % (src, type_)}\", json={data}).json()[\"id\"]"
        return Call(self.name, [src, data], [out], code, {"type": type_})


def _shared_field(state: State, var: Var, key: str) -> bool:
    """Whether another data variable in scope has the same value in this field (a query by either would match the
    same sessions, so the wrong one would pass)."""
    return var.type == DATA and any(v.name != var.name and v.value.get(key) == var.value.get(key)
                                    for v in state.of_type(DATA))


def _held(state: State, type_: str, value) -> bool:
    """Whether a variable of this type in scope already holds this value."""
    return any(v.value == value for v in state.of_type(type_))


def _same_but(state: State, var: Var, key: str) -> bool:
    """Whether another data variable in scope equals `var` in every field but `key` (an edit that sets `key`
    gives the same dict from either)."""
    def rest(value: dict) -> dict:
        return {k: x for k, x in value.items() if k != key}
    return any(v.name != var.name and rest(v.value) == rest(var.value) for v in state.of_type(DATA))


class QuerySessions(API):
    name = "query_sessions"
    phrases = (
        "query the `{type}` sessions of {in0_} {criterion} and call the result {out0_}",
        "find the `{type}` sessions under source {in0_} {criterion}; name the list {out0_}",
        "get {in0_}'s `{type}` sessions {criterion} with a query, storing the list as {out0_}",
    )
    natural = (
        "find the `{type}` sessions of {in0_} {plain}",
        "query {in0_}'s `{type}` sessions for those {plain}",
        "ask the service for the `{type}` sessions of {in0_} {plain}",
    )
    vague = (
        "find {in0_}'s {tword} sessions {plain}",
        "look for the {tword} sessions of {in0_} {plain}",
    )
    noun = "result of the {nth}search"
    # natural and vague: the criterion without the field's name; the words after "owned by" etc. are its forms
    PLAIN = {
        (EMAIL, "data.owner"): "owned by {in1_}",
        (EMAIL, "data.members"): "with {in1_} among their members",
        (DATA, "data.title"): "with the same title as {in1_}",
        (DATA, "data.owner"): "owned by the owner of {in1_}",
    }
    FIELD_FORMS = {"data.owner": "owned by", "data.members": "among their members", "data.title": "same title as"}
    CRITERIA = {
        (EMAIL, "data.owner"): ("{key}", "whose owner (`data.owner`) is {in1_}"),
        (EMAIL, "data.members"): ("{key}", "whose members (`data.members`) include {in1_}"),
        (DATA, "data.title"): ('{key}["title"]', "whose title (`data.title`) is the title of {in1_}"),
        (DATA, "data.owner"): ('{key}["owner"]', "whose owner (`data.owner`) is the owner of {in1_}"),
    }

    def _options(self, state: State, src: str, key: str) -> list[tuple[str, str, list[dict]]]:
        """(field, type, hits) of the queries this binding can make that find something: a query answering `[]`
        tests nothing (a misspelt field would answer the same). Queries that single out part of a collection
        come first when there are any, so that a list of the whole collection is not an equally good answer."""
        source, var = state.vars[src].value, state.vars[key]
        found, narrow = [], []
        for (kind, field), _ in self.CRITERIA.items():
            if kind != var.type:
                continue
            value = var.value if kind == EMAIL else var.value.get(field.split(".")[1])
            if not isinstance(value, str) or _shared_field(state, var, field.split(".")[1]):
                continue
            if kind == DATA and _held(state, EMAIL, value):
                continue  # the address is in scope itself: a query by it would leave the rest of the data unread
            other = {"data.owner": "data.members", "data.members": "data.owner"}.get(field)
            for type_ in words.CONTENT_TYPES:
                everything = _collection(state, source, type_)
                hits = [r for r in everything if _matches(r, field, value)]
                if other and hits == [r for r in everything if _matches(r, other, value)]:
                    continue  # the owner is also a member of every session found: either field would pass
                if hits and not _same_listing(state, hits):
                    found.append((field, type_, hits))
                    if len(hits) < len(everything):
                        narrow.append((field, type_, hits))
        return narrow or found

    def bindings(self, state):
        keys = [v for v in state.of_type(EMAIL, DATA)
                if v.type == EMAIL or any(isinstance(v.value.get(f), str) for f in ("title", "owner"))]
        return [(s.name, k.name) for s in state.of_type(SOURCE) for k in keys if self._options(state, s.name, k.name)]

    def apply(self, state, inputs, rng):
        src, key = inputs
        source, var = state.vars[src].value, state.vars[key]
        field, type_, hits = rng.choice(self._options(state, src, key))
        out = state.produce("found", SESSIONS, _listing(source, type_, hits), self.name)
        state.consume(inputs, self.name)
        expr = self.CRITERIA[(var.type, field)][0].format(key=key)
        params = f'params={{"field": "{field}", "value": {expr}}}'
        code = f"{out} = requests.get({URL % (src, type_)}/query\", {params}).json()"
        return Call(self.name, [src, key], [out], code, {"type": type_, "field": field, "key_type": var.type})

    def describe(self, call):
        d = super().describe(call)
        d["criterion"] = self.CRITERIA[(call.args["key_type"], call.args["field"])][1].format(**d)
        d["plain"] = self.PLAIN[(call.args["key_type"], call.args["field"])].format(**d)
        return _describe_type(d)

    def values(self, call):
        field = call.args["field"]
        return {**_type_values(call.args["type"]), "field": (self.FIELD_FORMS[field], f"`{field}`")}


class UpdateSession(API):
    """Replace a session's data; the session is an id variable or a position in a listed/queried result."""

    name = "update_session"
    phrases = (
        "replace the data of {target} (a `{type}` session of {in0_}) by {in2_}, keeping the HTTP status code as "
        "{out0_}",
        "update {target} (a `{type}` session of {in0_}) so that its data becomes {in2_}; save the status code in "
        "{out0_}",
        "overwrite the stored data of {target}, a `{type}` session of {in0_}, with {in2_} and call the response "
        "status {out0_}",
    )
    natural = (
        "update {session} so that its data becomes {in2_}",
        "store {in2_} as the new data of {session}",
        "replace what {session} holds by {in2_}",
    )
    vague = (
        "make {in2_} the new content of {session}",
        "change {session} so that it holds {in2_} instead",
    )
    noun = "status code of the {nth}update"

    def values(self, call):
        return _position_values(call.args["index"])

    @staticmethod
    def _fits(state: State, rec: dict, data: dict) -> bool:
        # A real change (so skipping it shows in the stored state) that duplicates no other session.
        return not _same_data(data, rec["data"]) and not _duplicate(
            state, rec["source"], rec["type"], data, besides=rec["key"])

    def bindings(self, state):
        out = []
        if _status_held(state, UPDATED):
            return out
        for ref in state.of_type(SID, SESSIONS):
            targets = _targets(state, ref)
            for d in state.of_type(DATA):
                sources = iter_unique(rec["source"] for rec, _ in targets if self._fits(state, rec, d.value))
                out += [(_source_var(state, source), ref.name, d.name) for source in sources]
        return out

    def apply(self, state, inputs, rng):
        src, ref, data = inputs
        value = state.vars[data].value
        rec, index = rng.choice([(r, i) for r, i in _targets(state, state.vars[ref]) if self._fits(state, r, value)])
        rec["data"] = copy.deepcopy(value)
        rec["unseen"] = True
        out = state.produce("status", STATUS, UPDATED, self.name)
        state.consume(inputs, self.name)
        code = f"{out} = requests.put({URL % (src, rec['type'])}/{_target_code(ref, index)}\", json={data}).status_code"
        return Call(self.name, [src, ref, data], [out], code, {"type": rec["type"], "index": index})

    def describe(self, call):
        d = super().describe(call)
        d["target"] = _target_text(d, call.args["index"])
        d["session"] = _session_text(d, call.args["index"])
        return d


class DeleteSession(API):
    name = "delete_session"
    phrases = (
        "delete {target} (a `{type}` session of {in0_}) and keep the status code as {out0_}",
        "remove {target}, a `{type}` session of {in0_}, from the service; store the HTTP status in {out0_}",
        "ask the service to delete {target} ({in0_}'s `{type}` session), naming the status code {out0_}",
    )
    natural = (
        "delete {session}",
        "remove {session} from the service",
    )
    vague = (
        "withdraw {session}",
        "get rid of {session} for good",
    )
    noun = "status code of the {nth}deletion"

    def values(self, call):
        return _position_values(call.args["index"])

    def bindings(self, state):
        out = []
        if _status_held(state, DELETED):
            return out
        for ref in state.of_type(SID, SESSIONS):
            for source in iter_unique(rec["source"] for rec, _ in _targets(state, ref)):
                out.append((_source_var(state, source), ref.name))
        return out

    def apply(self, state, inputs, rng):
        src, ref = inputs
        rec, index = rng.choice(_targets(state, state.vars[ref]))
        _records(state).remove(rec)
        out = state.produce("status", STATUS, DELETED, self.name)
        state.consume(inputs, self.name)
        code = f"{out} = requests.delete({URL % (src, rec['type'])}/{_target_code(ref, index)}\").status_code"
        return Call(self.name, [src, ref], [out], code, {"type": rec["type"], "index": index})

    def describe(self, call):
        d = super().describe(call)
        d["target"] = _target_text(d, call.args["index"])
        d["session"] = _session_text(d, call.args["index"])
        return d


class TakeFromList(API):
    """Local: pick one session of a listed or queried result and keep its id, its data or its owner."""

    name = "take"
    phrases = (
        "take {what} of the {pos} session in {in0_} as {out0_}",
        "from {in0_}, pick the {pos} session and keep {what} as {out0_}",
        "let {out0_} be {what} of the {pos} entry of {in0_}",
    )
    natural = (
        "from {in0_}, pick the {pos} session and keep {thing}",
        "keep {thing} of the {pos} session of {in0_}",
        "note {thing} of the {pos} session of {in0_}",
    )
    vague = (
        "from {in0_}, single out the {pos} session and keep {thing}",
        "remember {thing} of the {pos} session of {in0_}",
    )
    WHAT = {"id": "the id", "data": "the data", "owner": "the owner's e-mail address (`data.owner`)"}
    THING = {"id": "the id", "data": "the data", "owner": "the owner's e-mail address"}  # natural and vague
    NOUNS = {"id": "id of the {nth}picked session", "data": "data of the {nth}picked session",
             "owner": "owner of the {nth}picked session"}

    def nouns(self, call):
        return [self.NOUNS[call.args["what"]]]

    def values(self, call):
        """Which session and what of it, together: the forms of `phrases`, `natural` and `vague`."""
        pos, what = POSITIONS[call.args["index"]], call.args["what"]
        forms = []
        for thing in iter_unique((self.WHAT[what], self.THING[what])):
            forms += [f"{thing} of the {pos} session", f"{thing} of the {pos} entry",
                      f"the {pos} session and keep {thing}"]
        return {"pick": tuple(forms)}

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(SESSIONS) if v.value["items"] and _distinct_positions(state, v.name)]

    def apply(self, state, inputs, rng):
        (lst,) = inputs
        items = state.vars[lst].value["items"]
        index = rng.choice(_distinct_positions(state, lst))
        item = items[index]
        weights = {"id": 0.45, "data": 0.35, "owner": 0.2}
        if item["key"] in {v.value for v in state.of_type(SID)}:  # an id already held would be interchangeable
            del weights["id"]
        owner = item["data"].get("owner")
        if not isinstance(owner, str) or _held(state, EMAIL, owner) or any(
                other["data"].get("owner") == owner for other in items if other is not item):
            del weights["owner"]  # an address already held, or one another session of the list shares
            # (taking it from any of them would pass), would be interchangeable with it
        if _held(state, DATA, item["data"]) and len(weights) > 1:
            del weights["data"]  # (data already held, e.g. what an add sent, would be interchangeable with it)
        what = rng.choices(list(weights), weights=list(weights.values()))[0]
        if what == "id":
            out = state.produce("id", SID, item["key"], self.name)
            code = f'{out} = {lst}[{index}]["id"]'
        elif what == "data":
            out = state.produce("data", DATA, copy.deepcopy(item["data"]), self.name)
            code = f'{out} = {lst}[{index}]["data"]'
        else:
            out = state.produce("email", EMAIL, item["data"]["owner"], self.name)
            code = f'{out} = {lst}[{index}]["data"]["owner"]'
        state.consume(inputs, self.name)
        return Call(self.name, [lst], [out], code, {"index": index, "what": what})

    def describe(self, call):
        d = super().describe(call)
        d["pos"] = POSITIONS[call.args["index"]]
        d["what"] = self.WHAT[call.args["what"]]
        d["thing"] = self.THING[call.args["what"]]
        return d


class EditData(API):
    """Local: a copy of session data with one change (title suffix, a member added or removed, a new owner)."""

    name = "edit_data"
    phrases = (
        "make {out0_}, a copy of {in0_} {change} (do not modify {in0_} itself)",
        "create new data {out0_} from {in0_} {change}, leaving {in0_} as it is",
        "copy {in0_} into a new dict {out0_} {change}",
    )
    natural = (
        "make a copy of {in0_} {plain}",
        "copy {in0_} into new data {plain}, leaving {in0_} itself unchanged",
    )
    vague = (
        "prepare a copy of {in0_} {plain}",
        "derive new data from {in0_} {plain}, without altering {in0_}",
    )
    noun = "{nth}edited data"
    PLAIN = {"retitle": "with {suffix} appended to its title", "owner": "with {in1_} as its owner",
             "remove": "with {in1_} removed from its members", "add": "with {in1_} added at the end of its members"}
    # the change, as `phrases` (via `describe`'s "change") and the natural and vague texts write it
    FORMS = {"owner": ("as its owner", "owner (`owner`) set to"), "remove": ("removed from its members",),
             "add": ("added at the end of its members",)}

    def values(self, call):
        kind = call.args["kind"]
        if kind == "retitle":
            return {"suffix": (repr(call.args["suffix"]),)}
        return {"change": self.FORMS[kind]}

    @staticmethod
    def _kinds(data: dict, email: str | None) -> list[str]:
        members = data.get("members")
        if email is None:
            return ["retitle"] * isinstance(data.get("title"), str) + ["add_new"] * isinstance(members, list)
        kinds = []
        if isinstance(members, list):
            kinds.append("remove" if email in members else "add")
        if data.get("owner") != email:
            kinds.append("owner")
        return kinds

    READS = {"retitle": "title", "owner": None, "remove": "members", "add": "members", "add_new": "members"}
    CHANGES = {"retitle": "title", "owner": "owner", "remove": "members", "add": "members", "add_new": "members"}

    @classmethod
    def _allowed(cls, state: State, data: str, email: str | None) -> list[str]:
        """The edits of `data`, less a new owner for data whose owner an edit just set (the earlier edit would be
        dead, and its data interchangeable with the data it was made from), and less every edit that reads a
        value another variable in scope holds too: a field of `data` (its title, its members) that another data
        variable has unchanged, the rest of `data` when another data variable differs from it only in the field
        the edit sets, or an e-mail address another variable holds. Reading the other variable instead would
        give the same dict on every test case (an edit of an edited copy whose ancestor holds the same title)."""
        var = state.vars[data]
        kinds = cls._kinds(var.value, None if email is None else state.vars[email].value)
        if data in state.extra.get("owner_set", ()):
            kinds = [k for k in kinds if k != "owner"]
        if email is not None and any(v.name != email and v.value == state.vars[email].value
                                     for v in state.of_type(EMAIL)):
            return []
        address = None if email is None else state.vars[email].value
        made = {"owner": lambda d: {**d, "owner": address},
                "add": lambda d: {**d, "members": d["members"] + [address]},
                "remove": lambda d: {**d, "members": [m for m in d["members"] if m != address]}}
        return [k for k in kinds if not (cls.READS[k] and _shared_field(state, var, cls.READS[k]))
                and not _same_but(state, var, cls.CHANGES[k])
                and not (k in made and _held(state, DATA, made[k](var.value)))]  # e.g. a member added, then removed

    def bindings(self, state):
        out = []
        for d in state.of_type(DATA):
            if self._allowed(state, d.name, None):
                out.append((d.name,))
            out += [(d.name, e.name) for e in state.of_type(EMAIL) if self._allowed(state, d.name, e.name)]
        return out

    def apply(self, state, inputs, rng):
        data = inputs[0]
        value = copy.deepcopy(state.vars[data].value)
        used = list(inputs)
        email = inputs[1] if len(inputs) > 1 else None
        kind = rng.choice(self._allowed(state, data, email))
        args: dict = {"kind": kind}
        if kind == "retitle":
            suffix = rng.choice(words.TITLE_SUFFIXES)
            value["title"] += suffix
            expr = f'{{**{data}, "title": {data}["title"] + {suffix!r}}}'
            args["suffix"] = suffix
        elif kind == "owner":
            value["owner"] = state.vars[email].value
            expr = f'{{**{data}, "owner": {email}}}'
        elif kind == "remove":
            value["members"] = [m for m in value["members"] if m != state.vars[email].value]
            expr = f'{{**{data}, "members": [m for m in {data}["members"] if m != {email}]}}'
        else:
            if kind == "add_new":  # a colleague new to this task, declared in the setup block
                email = state.fresh("email")
                address = words.person(rng, state.extra["emails"])
                state.declare(Var(email, EMAIL, address))
                used.append(email)
                kind = args["kind"] = "add"
            value["members"] = value["members"] + [state.vars[email].value]
            expr = f'{{**{data}, "members": {data}["members"] + [{email}]}}'
        out = state.produce("data", DATA, value, self.name)
        if kind == "owner":
            state.extra.setdefault("owner_set", []).append(out)
        state.consume(used, self.name)
        return Call(self.name, used, [out], f"{out} = {expr}", args)

    def describe(self, call):
        d = super().describe(call)
        kind = call.args["kind"]
        if kind == "retitle":
            d["change"] = f"with the text {call.args['suffix']!r} appended to its title"
        elif kind == "owner":
            d["change"] = f"with its owner (`owner`) set to {d['in1_']}"
        elif kind == "remove":
            d["change"] = f"with {d['in1_']} removed from its members (`members`)"
        else:
            d["change"] = f"with {d['in1_']} added at the end of its members (`members`)"
        d["plain"] = self.PLAIN[kind].format(**{**d, "suffix": repr(call.args.get("suffix"))})
        return d


class _Renaming:
    """One test input's bijection from the original values to new ones (see `SessionScenario.redraw`)."""

    def __init__(self, rng: random.Random, state: State):
        self.rng = rng
        self.maps: dict[str, dict] = {"source": {}, "email": {}, "title": {}, "description": {}}
        self.emails = set(state.extra.get("emails", ()))  # never reuse an address of the original input
        self.titles: set[str] = set()

    def _new(self, kind: str, old: str) -> str:
        seen = self.maps[kind]
        if old not in seen:
            if kind == "source":
                free = [s for s in words.SOURCES if s != old and s not in seen.values()]
                seen[old] = self.rng.choice(free)
            elif kind == "email":
                local = words.person(self.rng, self.emails).split("@")[0]
                while f"{local}@{old.split('@')[1]}" in self.emails:
                    local = words.person(self.rng, self.emails).split("@")[0]
                seen[old] = f"{local}@{old.split('@')[1]}"
                self.emails.add(seen[old])
            elif kind == "title":
                seen[old] = words.title(self.rng, self.titles)
            else:
                seen[old] = words.description(self.rng)
        return seen[old]

    def source(self, old: str) -> str:
        return self._new("source", old)

    def data(self, data: dict) -> dict:
        out = dict(data)
        for key in ("title", "description"):
            if isinstance(out.get(key), str):
                out[key] = self._new(key, out[key])
        if isinstance(out.get("owner"), str):
            out["owner"] = self._new("email", out["owner"])
        if isinstance(out.get("members"), list):
            out["members"] = [self._new("email", m) for m in out["members"]]
        return out

    def value(self, type_: str, value):
        if type_ == SOURCE:
            return self.source(value)
        if type_ == EMAIL:
            return self._new("email", value)
        if type_ == DATA:
            return self.data(value)
        return value


# ------------------------------------------------------------------------------------------- scenario


def _branch_value(var: Var):
    """What a condition on `var` reads (see `SessionScenario.condition`)."""
    if var.type == SESSIONS:
        return len(var.value["items"])
    if var.type == DATA:
        return len(var.value["members"]) if isinstance(var.value.get("members"), list) else None
    if var.type == EMAIL:
        return var.value.split("@")[1]
    return var.value


class SessionScenario(Scenario):
    value_phrases = {SID: "a session id", DATA: "the data of a session", EMAIL: "an e-mail address",
                     SESSIONS: "a list of sessions", STATUS: "an HTTP status code", SOURCE: "a source name"}
    confusions = {"requests.put": ("requests.post",), "requests.post": ("requests.put",),
                  "requests.delete": ("requests.get",)}
    vocabulary = (words.CONTENT_TYPES, ("data.owner", "data.members", "data.title"), ("id", "data"),
                  ("title", "owner", "members"), words.TITLE_SUFFIXES)
    name = "session"
    tiers = (PAPER, FRONTIER)
    apis = (ListSessions(), AddSession(), QuerySessions(), UpdateSession(), DeleteSession(), TakeFromList(),
            EditData())
    world = "scenarios.session.world:SessionWorld"

    def initial_state(self, rng):
        state = State()
        emails: set[str] = set()
        titles: set[str] = set()
        people = [words.person(rng, emails) for _ in range(PEOPLE_PER_TASK)]
        sources = rng.sample(words.SOURCES, 1 if rng.random() < 0.6 else 2)
        records = []
        for source in sources:
            for type_ in rng.sample(words.CONTENT_TYPES, 2 if rng.random() < 0.7 else 1):
                for _ in range(rng.randint(*SESSIONS_PER_COLLECTION)):
                    records.append({"source": source, "type": type_,
                                    "data": words.session_data(rng, people, titles)})
        rng.shuffle(records)  # created over time, collections interleaved
        for i, r in enumerate(records, 1):
            r["key"] = f"r{i}"
            r["id"] = f"{rng.getrandbits(96):024x}"  # ObjectId-like, as the original would have made
        state.extra = {"store": records, "next": len(records), "emails": emails}

        for source in sources:
            state.declare(Var(state.fresh("src"), SOURCE, source))
        state.declare(Var(state.fresh("data"), DATA, words.session_data(rng, people, titles)))
        known = [e for e in people if any(e in r["data"]["members"] or e == r["data"]["owner"] for r in records)]
        state.declare(Var(state.fresh("email"), EMAIL, rng.choice(known or people)))

        stored = [{"id": r["id"], "source": r["source"], "type": r["type"], "data": r["data"]} for r in records]
        state.assets[ASSET] = Asset(ASSET, ASSET, {"count": len(stored)}, canonical_json(stored).encode())
        return state

    def redraw(self, state, rng):
        """A consistent renaming of every value: each source, e-mail address (its domain kept), title and
        description is replaced by a new one, the same old value always by the same new one, and stored ids are
        drawn afresh. Every relation a program's parameters rest on survives (which sessions a query matches, who
        is a member, identical data, list positions, an e-mail domain a condition tests), while no value does."""
        renamed = _Renaming(rng, state)
        twin = state.branch_copy()
        for name in twin.inits:
            var = twin.vars[name]
            var.value = renamed.value(var.type, var.value)
        stored = json.loads(state.assets[ASSET].data)
        for record in stored:
            record.update(id=f"{rng.getrandbits(96):024x}", source=renamed.source(record["source"]),
                          data=renamed.data(record["data"]))
        twin.assets[ASSET] = Asset(ASSET, ASSET, {"count": len(stored)}, canonical_json(stored).encode())
        return twin

    def condition(self, state, var, rng):
        if any(_branch_value(o) == _branch_value(var) for o in state.of_type(var.type) if o.name != var.name):
            return None  # another variable in scope gives the same value: branching on either would pass
        v, n = var.name, None
        if var.type == SESSIONS:
            n, left, what = len(var.value["items"]), f"len({v})", f"`{v}` holds"
            unit = "sessions"
        elif var.type == DATA and isinstance(var.value.get("members"), list):
            n, left, what = len(var.value["members"]), f'len({v}["members"])', f"`{v}` has"
            unit = "members"
        if n is not None:
            if rng.random() < 0.5 or n == 0:
                return Condition(left, "==", n, n + 1, f"{what} exactly COND {unit}")
            return Condition(left, ">", n - 1, n, f"{what} more than COND {unit}")
        if var.type == EMAIL:
            domain = var.value.split("@")[1]
            other = rng.choice([d for d in words.DOMAINS if d != domain])
            return Condition(f'{v}.split("@")[1]', "==", domain, other,
                             f"the domain of `{v}` (the part after '@') is COND")
        if var.type == STATUS:
            return Condition(v, "==", var.value, 404, f"`{v}` is COND")  # reads "the status code of the update is"
        return None  # an id: its value is made by the service, so no constant can be stated for it

    def always_result(self, var):
        return var.type == SESSIONS  # a listing's data is what shows that earlier writes happened

    def setup_code(self, state, constants):
        lines = ["import requests", "", "BASE_URL = service_url()  # the session service for this test case"]
        for name in state.inits:
            lines.append(f"{name} = {state.vars[name].value!r}")
        return setup_block(lines, constants)

    def describe_init(self, state):
        groups = [
            ("the source", "the sources", SOURCE),
            ("the session data", "the session data", DATA),
            ("the e-mail address", "the e-mail addresses", EMAIL),
        ]
        parts = []
        for one, many, type_ in groups:
            names = [n for n in state.inits if state.vars[n].type == type_]
            if names:
                parts.append(f"{one if len(names) == 1 else many} {join_names(names)}")
        text = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        return ("The setup block sets `BASE_URL` to the address of the session service, which already holds "
                f"some sessions, and defines {text}.")

    def api_doc(self, tier: str = PAPER):
        return DOC_PATHS[tier].read_text()

    def tool_specs(self, tier: str = PAPER):
        if tier == PAPER:
            return [op.spec for op in operations()]
        from scenarios.session.app import create_app  # FastAPI: only where the app's OpenAPI is needed

        return [op.spec for op in operations(create_app(":memory:", tier=tier).openapi())]

    def task_tier(self, task):
        """The tier its test cases' stored sessions name (`store.parse_asset`)."""
        for asset in task.test_cases[0].assets:
            if asset["name"] == ASSET:
                return parse_asset(bytes(asset["data"]))[0]
        return PAPER

    def frontier_plan(self, rng):
        """One program of the frontier tier (`scenarios/session/tasks/`)."""
        return tasks.plan(self, rng)

    def scratch_assets(self, assets, rng):
        """The stored sessions with new people, titles, descriptions and ids, in the same collections (sources and
        types kept, so the setup block's sources reach sessions there too), on the same tier (versions kept)."""
        renamed = _Renaming(rng, State())
        out = []
        for a in assets:
            tier, stored = parse_asset(bytes(a["data"]))
            for record in stored:
                record.update(id=f"{rng.getrandbits(96):024x}", data=renamed.data(record["data"]))
            out.append({**a, "data": asset_data(stored, tier)})
        return out
