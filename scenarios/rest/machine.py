"""The state machine of a scenario derived from a service file: one API per operation of its document.

Variables: a resource's value (`shelf1`: declared in the setup block when the population made it, unless its
request is `named = false`, or the id a creator's answer holds), a request body (`body1`: drawn from the operation's
schema and declared in the setup block, so that a redrawn input sends other values), an answer (`answer1`: what a
reader, or a POST that makes nothing named, answered, as JSON) and a status code (`status1`: what an update or a
delete answered). A resource's value knows its parents (`{"parents": [...]}`, the variables of the resources before
it in its path), so that a call on a book names its shelf too. A deleted resource, and whatever
lies under it, is no longer used.

The model (`scenarios.rest.model`) comes from a running instance of the service, started once per process when the
builder first asks for the APIs; the harness, which only compares, never starts it.
"""

from __future__ import annotations

import random
from functools import cached_property

from scenarios.base import (API, INIT, PAPER, Asset, Call, Condition, Scenario, State, Var, canonical_json,
                            join_names, join_words, setup_block)
from scenarios.rest import fields
from scenarios.rest.model import (ASSET, Model, draw, is_item, path_parameters, population, resource,
                                  template_match)
from scenarios.rest.openapi import Operation
from scenarios.rest.servicefile import ServiceFile
from scenarios.rest.doc import Documentation
from scenarios.rest.tools import described, documentation, kept_operations, sends_body, tool_spec

BODY, ANSWER, STATUS = "body", "answer", "status"
GONE = "gone"  # state.extra: the names of resources deleted
UNSEEN = "unseen"  # state.extra: resources written or made that no reader has read since
GONE_READ = "gone_read"  # state.extra: deleted resources read since (once is enough to show the delete)
FIELDS = "fields"  # state.extra: per resource, the fields the bodies sent to it set (`scenarios.rest.fields`)
READS = "reads"  # state.extra: the reads made since the last write that could change their answer
UPDATED = "updated"  # state.extra: resources of UNSEEN that an update (PUT, PATCH) left unseen
UNNAMED = "unnamed"  # state.extra: [resource, parents] of what the population made and the setup does not name
UNNAMED_AT_START = "unnamed_at_start"  # state.extra: UNNAMED as the population left it (what the text tells)
# How much likelier a call is than its coverage weight says (`RestScenario.preference`): one on a resource made and
# not used yet all but always comes next, and making one (while a call is left to use it) is preferred to reading or
# writing the population; one that does both, making a resource under a new one, deepens the chain.
USE_PREFERENCE, MAKE_PREFERENCE = 1000.0, 100.0
OTHER_STATUS = (404, 200)  # a status code's flipped value: the first of these that differs from it


def name_of(res: str, operations: list[Operation]) -> str:
    """A variable prefix for a resource: the name its parameters have (`shelf_id` -> `shelf`), else the word
    before it in the path, singular (`records/{id}` -> `record`)."""
    for op in operations:
        for i, p in enumerate(path_parameters(op)):
            if resource(op.path, i) == res and p != "id":
                base = p[:-3] if p.endswith("_id") else p[:-2] if p.endswith("Id") and len(p) > 2 else p
                return _identifier(base)
    words = [w for w in res.strip("/").split("/") if w != "{}"]
    word = words[-1] if words else "item"
    return _identifier(word[:-1] if word.endswith("s") and len(word) > 3 else word)


def _identifier(text: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_") or "item"
    return out if out[0].isalpha() else "v" + out


def _live(state: State, var: Var) -> bool:
    gone = state.extra.get(GONE, [])
    return var.name not in gone and not any(p in gone for p in var.value["parents"])


class OperationAPI(API):
    """One operation: its bindings are the live resources its deepest path parameter can take; a body is drawn
    from its schema and declared in the setup block."""

    def __init__(self, scenario: "RestScenario", op: Operation):
        self.scenario, self.op, self.name = scenario, op, op.id
        self.params = path_parameters(op)
        self.target = resource(op.path, len(self.params) - 1) if self.params else None
        what = (op.summary or (op.description or "").split(".")[0]).strip().rstrip(".")
        self.what = what[0].lower() + what[1:] if what else ""
        shown = f"{op.method} {op.path}".replace("{", "{{").replace("}", "}}")  # the templates are formatted
        self.label = f"`{shown}`"
        made = scenario.model.creates(op)
        self.makes = made
        self.kind = "create" if made else ANSWER if op.method in ("GET", "HEAD", "POST") else STATUS
        target = "{target}" if self.params else ""
        body = (" and the JSON body {body}" if self.params else " with the JSON body {body}") if self.has_body else ""
        if self.kind == "create":
            where = ".".join(scenario.model.id_fields[op.id])
            keep = f"keep the new id (`{where}` of the answer) as {{out0_}}"
            nkeep, vkeep = "", ""
            self.noun = f"id of the {{nth}}new {name_of(made, scenario.model.operations)}"
        elif self.kind == ANSWER:
            keep = "keep its JSON answer as {out0_}"
            nkeep, vkeep = "", ""
            self.noun = f"{{nth}}answer of {shown}"
        else:
            keep = "keep the HTTP status code as {out0_}"
            nkeep, vkeep = "", ""
            self.noun = f"{{nth}}status code of {shown}"
        doing = f" ({self.what})" if self.what else ""
        gone = "{gone}" if self.params else ""
        self.phrases = (f"send {self.label}{doing}{target}{gone}{body}, and {keep}",
                        f"call {self.label}{target}{gone}{body}; {keep}")
        self.natural = (f"call {self.label}{doing}{target}{gone}{body}{nkeep}",
                        f"send {self.label}{target}{gone}{body}{nkeep}")
        self.vague = (f"use {self.label}{target}{gone}{body}{vkeep}",)

    @property
    def has_body(self) -> bool:
        return sends_body(self.op)

    @property
    def reads_item(self) -> bool:
        """A reader of one item: it may also be sent for an item deleted earlier, and then answers an error."""
        return self.op.method == "GET" and is_item(self.op) and self.kind == ANSWER

    def bindings(self, state):
        if not self.params:
            return [()] if self.kind != ANSWER or _read_is_new(state, self, []) else []
        writes = self.kind == STATUS
        return [(v.name,) for v in state.of_type(self.target)
                if (_live(state, v) or (self.reads_item and _gone_itself(state, v)))
                and len(v.value["parents"]) == len(self.params) - 1 and not (writes and _unseen_under(state, v))
                and self._tells_apart(state, v)]

    def _tells_apart(self, state: State, var: Var) -> bool:
        """Whether this call on `var` gives an answer or a state that a confused call would not: a PUT or a PATCH
        needs a body that leaves out a field the resource holds (`fields.separable`); a read must not repeat one
        made since the last write that could change it, nor be a listing known to be empty (two of those answer
        alike, so that a program reading another, or swapping them in RESULT, passes every test)."""
        if self.op.method in fields.UPDATES and self.has_body:
            known = state.extra.get(FIELDS, {}).get(var.name, [])
            return fields.separable(self.op.body.schema, _keys(self.scenario.model.body_keys.get(self.op.id)), known)
        if self.kind == ANSWER:
            return _read_is_new(state, self, [*var.value["parents"], var.name])
        return True

    def apply(self, state, inputs, rng):
        op, model = self.op, self.scenario.model
        values = []
        if inputs:
            var = state.vars[inputs[0]]
            values = [*var.value["parents"], var.name]
        url = op.path
        for name, value in zip(self.params, values):
            url = url.replace("{" + name + "}", "{" + value + "}", 1)
        used = list(values)  # the resource and its parents: every variable the path names
        extra = ""
        if self.has_body:
            body = state.fresh(BODY)
            value = draw(op.body.schema, rng, _keys(model.body_keys.get(op.id)))
            if op.method in fields.UPDATES and inputs:  # leave out a field the resource holds (`bindings`)
                fields.separate(value, op.body.schema, state.extra.get(FIELDS, {}).get(inputs[0], []), rng)
            state.declare(Var(body, BODY, value))
            state.extra.setdefault("bodies", {})[body] = op.id
            used.append(body)
            extra = f", json={body}"
        request = f'requests.{op.method.lower()}(f"{{BASE_URL}}{url}"{extra}, headers=HEADERS)'
        if self.kind == "create":
            out = state.produce(name_of(self.makes, model.operations), self.makes, {"parents": values}, self.name)
            where = "".join(f"[{k!r}]" for k in model.id_fields[op.id])
            code = f"{out} = {request}.json(){where}"
        elif self.kind == ANSWER:
            listed = resource(op.path) + "/{}"
            items = _listed(state, self, values)
            unnamed = sum(1 for r, parents in state.extra.get(UNNAMED, []) if r == listed and parents == values)
            out = state.produce(ANSWER, ANSWER, {"op": op.id, "items": items, "unnamed": unnamed, "parents": values,
                                                 "res": listed}, self.name)
            code = f"{out} = {request}.json()"
        else:
            out = state.produce(STATUS, STATUS, model.statuses.get(op.id), self.name)
            code = f"{out} = {request}.status_code"
            if op.method == "DELETE" and inputs:  # (deletes of whole collections are no APIs)
                state.extra.setdefault(GONE, []).append(inputs[0])
        _observe(state, self, inputs, out, values)
        _remember(state, self, inputs, out, values, state.vars[used[-1]].value if self.has_body else None)
        state.consume(used, self.name)
        args = {"op": op.id}
        if inputs and inputs[0] in state.extra.get(GONE, []) and self.kind == ANSWER:
            args["gone"] = True  # (`_observe` has seen the delete, so it is no longer unseen)
            state.extra.setdefault(GONE_READ, []).append(inputs[0])  # a second read would answer the same
        return Call(self.name, used, [out], code, args)

    def describe(self, call):
        d = super().describe(call)
        names = call.inputs[: len(self.params)]
        d["target"] = " with " + ", ".join(f"`{p}` = `{n}`" for p, n in zip(self.params, names)) if names else ""
        d["gone"] = (f" (`{names[-1]}` names an item deleted earlier, so the answer is the service's error)"
                     if call.args.get("gone") else "")
        d["body"] = d[f"in{len(call.inputs) - 1}_"] if self.has_body else ""
        return d


class TakeId(API):
    """Local: the id of the first item of a listing's answer (a resource of the listed kind, with the listing's
    parents), so that a later call can act on what a listing showed. Only from a listing of two items or more,
    where the first is not also the last, none of which a variable holds (the population's unnamed resources): an
    id some variable holds already would make that variable and the new one interchangeable."""

    name = "take_id"
    phrases = ("take the id (`{key}`) of the first item{where} in {in0_} as {out0_}",
               "let {out0_} be the id (`{key}`) of the first item{where} of {in0_}")
    natural = ("take the id (`{key}`) of the first item{where} in {in0_}",)
    vague = ("note the id (`{key}`) of the first item{where} in {in0_}",)

    def __init__(self, scenario: "RestScenario"):
        self.scenario = scenario

    def nouns(self, call):
        return [f"{{nth}}id taken from a listing of {name_of(call.args['res'], self.scenario.model.operations)}s"]

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(ANSWER) if v.value and (v.value["items"] or 0) >= 2
                and v.value["unnamed"] == v.value["items"] == _listed_now(state, v.value) and not _named(state, v.value)
                and not any(p in state.extra.get(GONE, []) for p in v.value["parents"])]

    def apply(self, state, inputs, rng):
        (answer,) = inputs
        listing, model = state.vars[answer].value, self.scenario.model
        res = listing["res"]
        out = state.produce(name_of(res, model.operations), res, {"parents": listing["parents"]}, self.name)
        unnamed = state.extra[UNNAMED]  # the taken one is named now
        unnamed.remove(next(u for u in unnamed if u == [res, listing["parents"]]))
        state.consume(inputs, self.name)
        where = "".join(f"[{k!r}]" for k in model.listings[listing["op"]])
        key = model.id_key(res)
        keys = model.listings[listing["op"]]
        return Call(self.name, [answer], [out], f"{out} = {answer}{where}[0][{key!r}]",
                    {"res": res, "key": key, "where": f" of the list at `{'.'.join(keys)}`" if keys else ""})


def _gone_itself(state: State, var: Var) -> bool:
    """Whether `var` was deleted while its parents were not: a read of it answers the service's error."""
    gone = state.extra.get(GONE, [])
    return (var.name in gone and var.name not in state.extra.get(GONE_READ, [])
            and not any(p in gone for p in var.value["parents"]))


def _unseen_under(state: State, var: Var) -> bool:
    """Whether what an earlier call wrote to this resource, or to one under it, has not been read since: writing
    over it or deleting it would make that call dead (skipping it would change nothing a test sees)."""
    unseen = state.extra.get(UNSEEN, [])
    return var.name in unseen or any(var.name in state.vars[n].value["parents"] for n in unseen)


def _observe(state: State, api: OperationAPI, inputs: tuple, out: str, values: list[str]) -> None:
    """Keep `UNSEEN` up to date after a call: a write or a creation is unseen until a reader of the resource, or a
    listing that holds it, reads it; an update (`UPDATED`) until a reader of the resource does, since a listing may
    show only part of each item (some leave permissions out), perhaps not the part that tells a PUT from a
    PATCH."""
    unseen = state.extra.setdefault(UNSEEN, [])
    updated = state.extra.setdefault(UPDATED, [])
    if api.kind == "create":
        unseen.append(out)
    elif api.kind == STATUS and inputs:  # a write, or a delete (which a later delete of a parent would undo)
        unseen.append(inputs[0])
        if api.op.method in fields.UPDATES:
            updated.append(inputs[0])
    elif api.op.method == "GET":
        # An item's reader shows the item; a listing (of what lies under `inputs[0]`) shows its items, not it.
        shown = [n for n in unseen if n == inputs[0]] if inputs and is_item(api.op) else []
        listed = resource(api.op.path) + "/{}"
        shown += [n for n in unseen if state.vars[n].type == listed and state.vars[n].value["parents"] == values
                  and n not in updated]
        state.extra[UNSEEN] = [n for n in unseen if n not in shown]
        state.extra[UPDATED] = [n for n in updated if n not in shown]


def _listed(state: State, api: OperationAPI, values: list[str]) -> int | None:
    """How many items a listing holds, as far as the variables and the population say (None: the operation is
    no listing)."""
    if api.op.id not in api.scenario.model.listings:
        return None
    return _listed_now(state, {"res": resource(api.op.path) + "/{}", "parents": values})


def _listed_now(state: State, listing: dict) -> int:
    """How many items of `listing["res"]` under `listing["parents"]` there are now: live variables and unnamed."""
    res, parents = listing["res"], listing["parents"]
    return _named(state, listing) + sum(1 for r, p in state.extra.get(UNNAMED, []) if r == res and p == parents)


def _named(state: State, listing: dict) -> int:
    """How many live variables hold items of `listing["res"]` under `listing["parents"]`."""
    return sum(1 for v in state.of_type(listing["res"]) if _live(state, v) and v.value["parents"] == listing["parents"])


def _read_is_new(state: State, api: OperationAPI, values: list[str]) -> bool:
    """Whether a read may be made (see `OperationAPI._tells_apart`): not a listing known to be empty, and not the
    same read again with nothing written since that could change its answer."""
    if api.op.method != "GET":
        return True
    return _listed(state, api, values) != 0 and all(r[:2] != [api.op.id, values] for r in state.extra.get(READS, []))


def _shown(api: OperationAPI, values: list[str]) -> list | None:
    """What a read shows: [type, parents, name] of an item, [type, parents, None] of a listing's items, or None
    (something else: any write may change it)."""
    if is_item(api.op) and values:
        return [api.target, values[:-1], values[-1]]
    if api.op.id in api.scenario.model.listings:
        return [resource(api.op.path) + "/{}", list(values), None]
    return None


def _changes(read: list | None, api: OperationAPI, inputs: tuple, out: str, values: list[str]) -> bool:
    """Whether a write may change what a read showed (`_shown`): it makes, updates or deletes that item or an item
    of that listing, or deletes a resource above them; a write of unknown effect may change anything."""
    if read is None or api.kind not in ("create", STATUS) or (api.kind == STATUS and not inputs):
        return True
    kind, parents, name = read
    target, under, var = ((api.makes, values, out) if api.kind == "create" else
                          (api.target, values[:-1], inputs[0]))
    if api.op.method == "DELETE" and var in parents:
        return True
    return kind == target and (var == name if name is not None else under == parents)


def _remember(state: State, api: OperationAPI, inputs: tuple, out: str, values: list[str], body) -> None:
    """Keep `READS` and `FIELDS` up to date after a call: a read is remembered with what it shows; a write forgets
    the reads it may change (`_changes`), and sets the fields of what it made or updated (`fields.after`)."""
    reads = state.extra.setdefault(READS, [])
    if api.op.method == "GET":
        reads.append([api.op.id, list(values), _shown(api, values)])
        return
    state.extra[READS] = [r for r in reads if not _changes(r[2], api, inputs, out, values)]
    known = state.extra.setdefault(FIELDS, {})
    if api.kind == "create":
        known[out] = fields.leaves(body)
    elif api.op.method in fields.UPDATES and inputs and body is not None:
        known[inputs[0]] = fields.after(known.get(inputs[0], []), body, api.op.method)


def _keys(keys):
    return None if keys is None else tuple(keys)


class RestScenario(Scenario):
    """A scenario built from a service file (see the module docstring); `model` is probed on first use."""

    world = "scenarios.rest.world:RestWorld"
    # Two calls more than --calls on every path: one to make a resource, one to use it. At 5 calls the sampler binds
    # about 2.3 values a task (2.8 with coverage off), since a new resource costs a call before any call can use it.
    make_calls = 2
    confusions = {"requests.put": ("requests.patch", "requests.post"), "requests.patch": ("requests.put",),
                  "requests.post": ("requests.put",), "requests.delete": ("requests.get",)}

    def __init__(self, file: ServiceFile):
        self.file = file
        self.name = file.name

    @cached_property
    def model(self) -> Model:
        """The probed model; the made-up fields (`learned`) are learned on the same instance unless a dataset's
        copy of the file came with them, and decided for the workers (`scenarios.rest.registration.decide`)."""
        from scenarios.rest.model import probe
        from scenarios.rest.process import Service
        from scenarios.rest.learned import decide, made_up
        from scenarios.rest.world import learn

        with Service(self.file) as service:
            self.document = service.spec()
            model = probe(self.file, service, service.operations())
            shipped = made_up(self.name)
            self.learned = shipped if shipped is not None else learn(service, model)
        decide(self.name, self.learned)
        return model

    @cached_property
    def operation_apis(self) -> tuple[OperationAPI, ...]:
        """The operations kept as APIs (`kept_operations`)."""
        return tuple(OperationAPI(self, op) for op in kept_operations(self.model))

    @cached_property
    def apis(self):
        return self.operation_apis + ((TakeId(self),) if self.model.listings else ())

    def make_world(self):
        from scenarios.rest.world import RestWorld

        return RestWorld(self.file)

    def initial_state(self, rng):
        state = State()
        seed = rng.getrandbits(31)
        self._populate(state, seed)
        return state

    def _populate(self, state: State, seed: int) -> None:
        """Declare the population's resources for `seed` (each with its parents) and store the seed."""
        model = self.model
        by_value: dict[tuple, str] = {}
        order = []
        sent, unnamed = {}, set()  # what each population request's body sets, by the resource it names (`FIELDS`)
        for item, (method, path, body) in zip(self.file.population, population(self.file, seed)):
            op = model.operation_for(method, path)
            values = template_match(op.path, path) if op is not None else None
            if values:
                key = (resource(op.path, len(values) - 1), tuple(values))
                sent[key] = fields.leaves(body)
                if not item.named:
                    unnamed.add(key)
        for res, value, parents in model.population_values(seed):
            keys = [(resource_prefix(res, i), tuple(parents[: i + 1])) for i in range(len(parents))]
            if any(k not in by_value for k in keys):
                continue  # under an unnamed resource: no listing a program can call shows it
            parent_names = [by_value[k] for k in keys]
            if (res, tuple([*parents, value])) in unnamed:
                state.extra.setdefault(UNNAMED, []).append([res, parent_names])
                continue
            name = state.fresh(name_of(res, model.operations))
            state.declare(Var(name, res, {"parents": parent_names, "value": value}))
            by_value[(res, tuple([*parents, value]))] = name
            order.append(name)
            state.extra.setdefault(FIELDS, {})[name] = sent.get((res, tuple([*parents, value])), [])
        state.extra["population"] = order
        state.extra[UNNAMED_AT_START] = [list(u) for u in state.extra.get(UNNAMED, [])]  # (takes remove from UNNAMED)
        state.assets[ASSET] = Asset(ASSET, ASSET, {"seed": seed}, b"")

    def redraw(self, state, rng):
        twin = state.branch_copy()
        seed = rng.getrandbits(31)
        fresh = State()
        self._populate(fresh, seed)
        for old, new in zip(state.extra.get("population", []), fresh.extra["population"]):
            twin.vars[old].value = {**twin.vars[old].value, "value": fresh.vars[new].value["value"]}
        twin.assets[ASSET] = fresh.assets[ASSET]
        for body, op_id in state.extra.get("bodies", {}).items():
            op = self.model.op(op_id)
            twin.vars[body].value = draw(op.body.schema, rng, _keys(self.model.body_keys.get(op_id)))
        return twin

    def preference(self, state, api, binding, left):
        """A call that acts on a resource the program made and no call has used yet is USE_PREFERENCE times
        likelier, one that makes a resource MAKE_PREFERENCE times while a call is left to use it: a service's
        population is there to be built on, and a task that only reads it binds no call to another."""
        uses = any(state.vars[v].producer != INIT and not state.vars[v].consumers for v in binding)
        makes = left and isinstance(api, OperationAPI) and api.makes
        return (USE_PREFERENCE if uses else 1.0) * (MAKE_PREFERENCE if makes else 1.0)

    def condition(self, state, var, rng):
        """A test of a value the program can know before it runs: how many items a listing answers (the items
        the population and the program's calls left, as `OperationAPI.apply` counts them), or the status code a
        write answers (`Model.statuses`, found when the model was probed). None when another value in scope is the
        same (branching on either would pass) or nothing is known."""
        v = var.name
        if var.type == ANSWER and var.value and var.value.get("items") is not None:
            n = var.value["items"]
            if any(o.value and o.value.get("items") == n for o in state.of_type(ANSWER) if o.name != v):
                return None
            keys = self.model.listings[var.value["op"]]
            left = f"len({v}{''.join(f'[{k!r}]' for k in keys)})"
            what = f"`{v}` lists"
            where = f" (in its list at `{'.'.join(keys)}`)" if keys else " (the answer is the list)"
            if rng.random() < 0.5 or n == 0:
                return Condition(left, "==", n, n + 1, f"{what} exactly COND items{where}")
            return Condition(left, ">", n - 1, n, f"{what} more than COND items{where}")
        if var.type == STATUS and var.value is not None:
            if any(o.value == var.value for o in state.of_type(STATUS) if o.name != v):
                return None
            other = next(code for code in OTHER_STATUS if code != var.value)
            return Condition(v, "==", var.value, other, f"`{v}` is COND")
        return None

    def is_result(self, var):
        """What calls made, less status codes: a successful write answers the same code every time, so two of them
        in RESULT could be swapped and every test would pass; what a write did shows in the final state."""
        return var.producer != INIT and var.type != STATUS

    def setup_code(self, state, constants):
        lines = ["import requests", "", f"BASE_URL = service_url()  # the {self.name} service for this test case",
                 "HEADERS = service_headers()  # the headers every request sends"]
        for name in state.inits:
            var = state.vars[name]
            value = var.value["value"] if var.type != BODY else var.value
            lines.append(f"{name} = {value!r}")
        return setup_block(lines, constants)

    def describe_init(self, state):
        """What the setup block defines, and which of its names are of resources the service already holds (the
        population's), each with the resources it lies in."""
        held = []
        for name in state.extra.get("population", []):
            var = state.vars[name]
            kind = name_of(var.type, self.model.operations).replace("_", " ")
            parents = var.value["parents"]
            held.append(f"`{name}` (a {kind}" + (f" in `{parents[-1]}`" if parents else "") + ")")
        counts: dict[tuple, int] = {}
        for res, parents in state.extra.get(UNNAMED_AT_START, []):
            if parents:
                counts[(res, parents[-1])] = counts.get((res, parents[-1]), 0) + 1
        for (res, parent), n in counts.items():
            kind = name_of(res, self.model.operations).replace("_", " ")
            held.append(f"{n} {kind}{'s' if n > 1 else ''} in `{parent}` that the setup does not name")
        exists = f" The service already holds {join_words(held)}." if held else ""
        return (f"The setup block sets `BASE_URL` to the address of the {self.name} service and `HEADERS` to the "
                f"headers every request sends, and defines {join_names(state.inits)}.{exists}")

    def readiness(self):
        from scenarios.rest.process import Service
        from scenarios.rest.readiness import findings

        model = self.model
        with Service(self.file) as service:
            return findings(model, service)

    def api_doc(self, tier: str = PAPER) -> str:
        """The kept operations' documentation (`scenarios.rest.doc`), each as its tool describes it, after a preamble
        of what several share."""
        doc = self.documentation
        lines = [f"# The {self.name} service", "",
                 "Send every request to `BASE_URL` + the path, with `headers=HEADERS`, using `requests`. Bodies are "
                 "JSON (`json=...`). A request's answer is its JSON body (`response.json()`), error answers "
                 "included; a new item's id is where its creator's entry says. Each operation lists its parameters "
                 "(path, query and header ones, optional unless marked required; `HEADERS` already holds the headers "
                 "every request needs), its body and its answers by status code, with their shapes (`{key: type}`, "
                 "`[type]` a list, `?` an optional key).", "", *doc.preamble()]
        for api in self.operation_apis:
            lines += [f"## `{api.op.method} {api.op.path}`", *described(api.op, self.model, doc), ""]
        return "\n".join(lines)

    @cached_property
    def documentation(self) -> Documentation:
        return documentation(self.model)

    def tool_specs(self, tier: str = PAPER):
        """One tool per kept operation (`tool_spec`), as the world serves them."""
        return [tool_spec(api.op, self.model, self.documentation) for api in self.operation_apis]

    def scratch_assets(self, assets, rng):
        return [{**a, "meta": canonical_json({"seed": rng.getrandbits(31)})} if a["kind"] == ASSET else a
                for a in assets]


def resource_prefix(res: str, i: int) -> str:
    """The resource of the `i`-th parameter of a resource's path."""
    return resource(res.replace("{}", "{x}"), i)
