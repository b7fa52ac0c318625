"""The state machine of a scenario derived from an MCP server's file: one API per tool the model keeps.

Variables: a key's value (`entity1`: declared in the setup block when the population sent it; a fresh value the
program chooses and sends, `create_entities(entities=[{'name': (entity3 := 'apple_12'), ...}])`; taken
from the answer of the tool that made it when the server made it up: `task3 = create_task(...)['id']`; or the first
value a listing shows: `entity4 = answer1['entities'][0]['name']`) and an answer (`answer1`: what a read-only tool
answered). Every other argument is drawn from the tool's input schema and written into the
call; an argument that refers to a key (`scenarios.mcp.model.Edge`) takes a live variable of that key.

Every call must show in the oracle: a write's effect is in the readers' final state, unless a later call hides it
(a delete of what it wrote), so a call that removes a key, or writes over what an earlier call wrote, waits until a
read has shown that key; a read is not repeated with nothing written since that could change it. A key a call
removed is no longer used.

The model (`scenarios.mcp.model`) comes from a running instance of the server, started once per process when the
builder first asks for the APIs; the harness, which only compares, never starts it.
"""

from __future__ import annotations

import copy
import itertools
import json
import keyword
from functools import cached_property

from scenarios.base import API, INIT, PAPER, Asset, Call, Scenario, State, Var, canonical_json, join_names, \
    join_words, setup_block
from scenarios.mcp.model import ASSET, Model, draw, fresh_key, get, leaves, put, python_name

ANSWER = "answer"
GONE, UNSEEN, READS = "gone", "unseen", "reads"  # state.extra: removed keys; keys written and not read since; reads
WRITES = "writes"  # state.extra: [tool, variables] of the writes not to repeat (`ToolAPI.once`)
ORDER = "order"  # state.extra: {key: its live values in the order made}: a variable, or "?N" for one none names
USE_PREFERENCE, MAKE_PREFERENCE = 1000.0, 100.0  # as for a REST service (`scenarios.rest.machine`)
TOOL_ERROR = "ToolError"  # what a tool function raises when the tool reports an error


class Ref:
    """A variable inside drawn arguments: written as its name in code, as a placeholder in text."""

    def __init__(self, name: str, label: str):
        self.name, self.label = name, label

    def __repr__(self) -> str:
        return self.name


def call_code(tool: str, arguments: dict) -> str:
    """`tool(a=..., b=...)`, or `tool(**{...})` when an argument's name is no Python keyword argument."""
    if all(k.isidentifier() and not keyword.iskeyword(k) for k in arguments):
        return f"{python_name(tool)}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    return f"{python_name(tool)}(**{arguments!r})"


def as_text(value) -> str:
    """Drawn arguments as JSON, each variable as its placeholder (`<A>`)."""
    if isinstance(value, Ref):
        return value.label
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {as_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(as_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _live(state: State, name: str) -> bool:
    return name not in state.extra.get(GONE, [])


class ToolAPI(API):
    def __init__(self, scenario: "McpScenario", tool: dict):
        model = scenario.model
        self.scenario, self.tool, self.name = scenario, tool, tool["name"]
        self.schema = tool.get("inputSchema") or {"type": "object"}
        seen, self.edges = set(), []
        for edge in model.takes(self.name):
            if edge.path not in seen:
                seen.add(edge.path)
                self.edges.append(edge)
        self.makes = model.makes(self.name)
        self.kind = "create" if self.makes else ANSWER if self.name in model.readers + model.queries else "write"
        self.removes = self.name in model.removes
        # A write that would send the same arguments again (all of them variables) or that the server calls
        # idempotent is not repeated on the same variables: the second call would change nothing.
        drawn = {path for path, _ in leaves(self.schema)} - {e.path for e in self.edges}
        self.once = self.kind == "write" and (not drawn or (tool.get("annotations") or {}).get("idempotentHint")
                                              is True)
        label = f"`{self.name}`"
        what = (tool.get("description") or "").split(".")[0].strip()
        doing = f" ({what[0].lower() + what[1:]})" if what else ""
        args = " with {arguments}{legend}"
        if self.kind == "create":
            where = "".join(f"[{k!r}]" for k in self.makes.answer)
            self.phrases = (f"call {label}{args}, and keep the new {self.makes.name} (`{where}` of its answer) as "
                            "{out0_}",) if where else \
                (f"call {label}{args}, and keep the {self.makes.attr} it was sent for the new {self.makes.noun} as "
                 "{out0_}",)  # an answer that does not hold it
            # named by its tool: another tool may make one too (one that converts a record into a new one)
            self.noun = f"{self.makes.attr} of the {{nth}}{self.makes.noun} made by {label}"
        elif self.kind == ANSWER:
            self.phrases = (f"call {label}{args}, and keep its answer as {{out0_}}",)
            self.noun = f"{{nth}}answer of {label}"
        else:
            self.phrases = (f"call {label}{args}",)
        self.natural = (f"call {label}{doing}{args}", f"use {label}{args}")
        self.vague = (f"use {label}{args}",)

    def bindings(self, state):
        choices = []
        for edge in self.edges:
            choices.append([v.name for v in state.of_type(edge.key) if _live(state, v.name)])
        out = []
        for combo in itertools.product(*choices):
            if len(set(combo)) != len(combo):
                continue
            if self.kind == ANSWER and not _read_is_new(state, self.name, combo):
                continue
            if self.removes and any(v in state.extra.get(UNSEEN, []) for v in combo):
                continue
            if self.once and [self.name, list(combo)] in state.extra.get(WRITES, []):
                continue
            out.append(tuple(combo))
        return out

    def apply(self, state, inputs, rng):
        fixed = self.scenario.model.reader_arguments.get(self.name)  # a reader the server file calls so
        arguments = copy.deepcopy(fixed) if fixed is not None else draw(self.schema, rng)
        labels = {}
        for edge, var in zip(self.edges, inputs):
            label = labels.setdefault(var, f"<{chr(ord('A') + len(labels))}>")
            ref = Ref(var, label)
            put(arguments, edge.path, [ref] if isinstance(get(arguments, edge.path), list) else ref)
        out = []
        if self.kind == "create":
            taken = {json.dumps(v.value.get("value")) for v in state.vars.values() if isinstance(v.value, dict)}
            value = fresh_key(rng)
            while json.dumps(value) in taken:
                value = fresh_key(rng)
            name = state.produce(_prefix(self.makes.noun), self.makes.name, {"value": value}, self.name)
            if self.makes.sent is not None:
                # A key the program chooses: the variable takes the value where the call sends it, rather than
                # reading it back from the answer (`[0]` of a one-item answer, which `[-1]` would read alike).
                sent = copy.deepcopy(arguments)
                put(sent, self.makes.sent, Ref(f"({name} := {value!r})", ""))
                put(arguments, self.makes.sent, value)
                code = call_code(self.name, sent)
            else:
                where = "".join(f"[{k!r}]" for k in self.makes.answer)
                code = f"{name} = {call_code(self.name, arguments)}{where}"
            out = [name]
        elif self.kind == ANSWER:
            order = state.extra.get(ORDER, {})
            first = {x.key: order[x.key][0] for x in self.scenario.model.listings
                     if x.tool == self.name and order.get(x.key)}
            name = state.produce(ANSWER, ANSWER, {"tool": self.name, "first": first}, self.name)
            code = f"{name} = {call_code(self.name, arguments)}"
            out = [name]
        else:
            code = call_code(self.name, arguments)
        _observe(state, self, inputs, out)
        state.consume(inputs, self.name)
        legend = ", ".join(f"{label} being `{var}`" for var, label in labels.items())
        shown = f"the arguments {as_text(arguments)}" if arguments else "no arguments"
        return Call(self.name, list(inputs), out, code, {"arguments": shown, "legend": f" ({legend})" if legend else ""})


class TakeKey(API):
    """Local: the first value of a key a listing's answer shows, when no variable holds it (the population made it
    and the setup block does not name it), so that a later call can act on it."""

    def __init__(self, scenario: "McpScenario", listing):
        self.scenario, self.listing = scenario, listing
        self.key = scenario.model.key(listing.key)
        self.name = f"take_{_prefix(self.key.noun)}_{self.key.attr}"
        shown = f"`{listing.where}`"
        self.phrases = (f"take the {self.key.attr} of the first {self.key.noun} ({shown}) in {{in0_}} as {{out0_}}",
                        f"let {{out0_}} be the {self.key.attr} of the first {self.key.noun} ({shown}) of {{in0_}}")
        self.natural = (f"take the {self.key.attr} of the first {self.key.noun} ({shown}) in {{in0_}}",)
        self.vague = (f"note the {self.key.attr} of the first {self.key.noun} in {{in0_}}",)
        self.noun = f"{self.key.attr} of the {{nth}}{self.key.noun} taken from a listing"

    def bindings(self, state):
        order = state.extra.get(ORDER, {}).get(self.key.name, [])
        return [(v.name,) for v in state.of_type(ANSWER) if v.value.get("tool") == self.listing.tool
                and str((v.value.get("first") or {}).get(self.key.name, "")).startswith("?")
                and v.value["first"][self.key.name] in order]

    def apply(self, state, inputs, rng):
        (answer,) = inputs
        order = state.extra[ORDER][self.key.name]
        out = state.produce(_prefix(self.key.noun), self.key.name, {"value": None}, self.name)
        order[order.index(state.vars[answer].value["first"][self.key.name])] = out
        state.consume(inputs, self.name)
        return Call(self.name, [answer], [out], f"{out} = {answer}{self.listing.where}", {})


def _prefix(noun: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in noun.lower()).strip("_") or "item"
    return out if out[0].isalpha() else "v" + out


def _lists_unnamed(state: State, api: API) -> bool:
    """Whether `api` is a listing whose first value of a key no variable holds: a take could name it."""
    order = state.extra.get(ORDER, {})
    return isinstance(api, ToolAPI) and any(x.tool == api.name and str((order.get(x.key) or [""])[0]).startswith("?")
                                            for x in api.scenario.model.listings)


def _read_is_new(state: State, tool: str, combo: tuple) -> bool:
    return [tool, list(combo)] not in state.extra.get(READS, [])


def _observe(state: State, api: ToolAPI, inputs: tuple, out: list) -> None:
    """Keep UNSEEN, READS and GONE up to date after a call: a write or a creation leaves its keys unseen and forgets
    the reads it may change; a read shows its keys (a reader of everything, every key)."""
    unseen = state.extra.setdefault(UNSEEN, [])
    reads = state.extra.setdefault(READS, [])
    if api.kind == ANSWER:
        shown = set(inputs) if inputs else set(unseen)
        state.extra[UNSEEN] = [n for n in unseen if n not in shown]
        reads.append([api.name, list(inputs)])
        return
    if api.once:
        state.extra.setdefault(WRITES, []).append([api.name, list(inputs)])
    order = state.extra.get(ORDER, {})
    if api.kind == "create" and api.makes.name in order:
        order[api.makes.name].append(out[0])
    touched = set(inputs) | set(out)
    unseen.extend(n for n in touched if n not in unseen)
    state.extra[READS] = [r for r in reads if r[1] and touched.isdisjoint(r[1])]  # a reader of all: forgotten
    if api.removes:
        state.extra.setdefault(GONE, []).extend(inputs)
        for values in order.values():
            values[:] = [v for v in values if v not in inputs]


class McpScenario(Scenario):
    """A scenario built from an MCP server's file (see the module docstring); `model` is probed on first use."""

    world = "scenarios.mcp.world:McpWorld"
    make_calls = 2
    distinct_answers = True

    def __init__(self, file):
        self.file = file
        self.name = file.name
        # a state read from MCP resources is out of reach of the tools a program calls
        self.state_readable = not file.resources

    @cached_property
    def model(self) -> Model:
        from scenarios.mcp.client import Server
        from scenarios.mcp.model import decide, decided, probe

        model = decided(self.file)
        if model is None:
            with Server(self.file) as server:
                model = probe(self.file, server)
            decide(self.file.name, model)
        return model

    @cached_property
    def apis(self):
        tools = tuple(ToolAPI(self, tool) for tool in self.model.kept())
        names = {python_name(t.name) for t in tools}
        takes = {}
        for listing in self.model.listings:
            take = TakeKey(self, listing)
            if take.name not in names and take.name not in takes:  # one listing per key; a tool's name wins
                takes[take.name] = take
        return tools + tuple(takes.values())

    def make_world(self):
        from scenarios.mcp.world import McpWorld

        return McpWorld(self.file)

    def initial_state(self, rng):
        state = State()
        self._populate(state, rng.getrandbits(31))
        return state

    def _populate(self, state: State, seed: int) -> None:
        named, listed = [], {x.key: x for x in self.model.listings}
        order: dict[str, list] = {key: [f"?{i}" for i in range(x.start or 0)] for key, x in listed.items()}
        for key, value, known in self.model.population_keys(seed):
            name = None
            if known:
                name = state.fresh(_prefix(self.model.key(key).noun))
                state.declare(Var(name, key, {"value": value}))
                named.append(name)
            if key in order:
                order[key].append(name or f"?{len(order[key])}")
        state.extra["population"] = named
        state.extra[ORDER] = order
        state.extra["unnamed"] = {k: sum(str(v).startswith("?") for v in vs) for k, vs in order.items()}
        state.assets[ASSET] = Asset(ASSET, ASSET, {"seed": seed}, b"")

    def redraw(self, state, rng):
        twin = state.branch_copy()
        for _ in range(100):  # a seed whose population draws as many distinct keys
            fresh = State()
            self._populate(fresh, rng.getrandbits(31))
            if len(fresh.extra["population"]) == len(state.extra.get("population", [])) \
                    and fresh.extra["unnamed"] == state.extra.get("unnamed"):
                break
        for old, new in zip(state.extra.get("population", []), fresh.extra["population"]):
            twin.vars[old].value = dict(fresh.vars[new].value)
        twin.assets[ASSET] = fresh.assets[ASSET]
        return twin

    def preference(self, state, api, binding, left):
        uses = any(state.vars[v].producer != INIT and not state.vars[v].consumers for v in binding)
        makes = left and isinstance(api, ToolAPI) and api.kind == "create" or left >= 2 and _lists_unnamed(state, api)
        return (USE_PREFERENCE if uses else 1.0) * (MAKE_PREFERENCE if makes else 1.0)

    def always_result(self, var):
        """An answer a take read one value of is still in RESULT whole."""
        return var.type == ANSWER

    def condition(self, state, var, rng):
        return None

    def setup_code(self, state, constants):
        lines = [f"# The {self.name} server's tools are Python functions here (see the documentation)."]
        for name in state.inits:
            lines.append(f"{name} = {state.vars[name].value['value']!r}")
        return setup_block(lines, constants)

    def describe_init(self, state):
        held = []
        for name in state.extra.get("population", []):
            key = self.model.key(state.vars[name].type)
            article = "an" if key.noun[:1] in "aeiou" else "a"
            held.append(f"`{name}` (the {key.attr} of {article} {key.noun})")
        for key, count in state.extra.get("unnamed", {}).items():
            if count:
                noun = self.model.key(key).noun
                some = f"{count} {noun}s" if count > 1 else f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"
                held.append(f"{some} that the setup block does not name")
        exists = f" The server already holds {join_words(held)}." if held else ""
        inits = join_names(state.inits)
        return f"The setup block defines {inits}.{exists}" if state.inits else \
            f"The setup block defines nothing.{exists}"

    def readiness(self):
        from scenarios.mcp.client import Server
        from scenarios.mcp.readiness import findings

        model = self.model
        with Server(self.file) as server:
            return findings(model, server)

    def api_doc(self, tier: str = PAPER) -> str:
        from scenarios.mcp.doc import documentation

        return documentation(self.name, self.model)

    def tool_specs(self, tier: str = PAPER):
        from scenarios.mcp.doc import tool_spec

        return [tool_spec(t) for t in self.model.kept()]

    def scratch_assets(self, assets, rng):
        return [{**a, "meta": canonical_json({"seed": rng.getrandbits(31)})} if a["kind"] == ASSET else a
                for a in assets]
