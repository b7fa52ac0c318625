"""The scenario interface shared by the builder (state machine side) and the sandbox (world side).

A scenario is two halves that never need each other's imports:

* the **state machine** (`Scenario`): typed variables, API transitions that know when they are callable and
  how to solve their parameters from the current state, a random initialiser, the documentation a model is
  shown, and the phrases the template translator uses. It runs in the builder process and must stay light
  (no torch, no servers), because fuzzing thousands of programs should cost milliseconds.
* the **world** (`World`): what a test case runs against inside a sandbox worker. It is created once per
  worker (heavy imports, servers), reset before every test case, and turns RESULT and side effects into
  plain, canonical data that the harness compares without ever touching an object from the child.

Adding a scenario means writing both halves and one line in `scenarios.SCENARIOS`; builder and evaluate do not
change.
"""

from __future__ import annotations

import copy
import json
import math
import operator
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from scenarios.mutants import altered_plain

INIT = "init"  # producer tag of variables declared in the setup block
# Tiers: named generation settings, recorded in the manifest and every result (docs/tasks.md): the paper's programs,
# and the frontier's, which must read the world. Every scenario has the paper tier; `Scenario.tiers` says which more.
PAPER, FRONTIER = "paper", "frontier"
TIERS = (PAPER, FRONTIER)
# Instruction variants: how a developer asks (the default), numbered steps that dictate every call, and the intent
# only (docs/instructions.md).
NATURAL, STEPS, VAGUE = "natural", "steps", "vague"
VARIANTS = (NATURAL, STEPS, VAGUE)
COMPARISONS = {"==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt, ">=": operator.ge,
               "<=": operator.le}


# --------------------------------------------------------------------------------------------------- state


@dataclass
class Var:
    """One variable the program can use: what it is, who made it, who used it."""

    name: str
    type: str  # scenario-defined tag, e.g. "tensor", "weight", "session_id"
    value: Any  # the abstract value the solver reasons on (a shape, a record, ...)
    producer: str = INIT  # API that created it, or INIT
    consumers: list[str] = field(default_factory=list)


@dataclass
class Asset:
    """A stored initial value, persisted with the task and loaded at run time (never inlined as a literal)."""

    name: str
    kind: str  # how the world loads it, e.g. "tensor"
    meta: dict  # JSON-able: dtype, shape, ...
    data: bytes

    def to_record(self) -> dict:
        return {"name": self.name, "kind": self.kind, "meta": canonical_json(self.meta), "data": self.data}


@dataclass
class Call:
    """One emitted API call: the line(s) of code and the facts the translator and the statistics need."""

    api: str
    inputs: list[str]  # variables consumed, in argument order
    outputs: list[str]  # variables created
    code: str  # Python source, one statement or a few lines
    args: dict  # solved parameters (JSON-able), used by the translator and for de-duplication


@dataclass
class State:
    """The generator state: variables in scope, initial declarations and the values behind them."""

    vars: dict[str, Var] = field(default_factory=dict)
    inits: list[str] = field(default_factory=list)  # names declared in the setup block, in order
    assets: dict[str, Asset] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # scenario-private bookkeeping (copied with the state)
    counters: dict = field(default_factory=dict)  # shared by branch copies so names never collide

    def fresh(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}{n}"

    def add(self, var: Var) -> Var:
        self.vars[var.name] = var
        return var

    def produce(self, prefix: str, type_: str, value: Any, api: str) -> str:
        """A fresh variable made by a call of `api`; returns its name."""
        name = self.fresh(prefix)
        self.add(Var(name, type_, value, producer=api))
        return name

    def consume(self, names: Iterable[str], api: str) -> None:
        """Record that a call of `api` used these variables (they leave RESULT, and feed the pair statistics)."""
        for n in names:
            self.vars[n].consumers.append(api)

    def declare(self, var: Var, asset: Asset | None = None) -> Var:
        """Add a variable to the setup block (its value stored as an asset when given)."""
        self.add(var)
        self.inits.append(var.name)
        if asset is not None:
            self.assets[asset.name] = asset
        return var

    def of_type(self, *types: str) -> list[Var]:
        return [v for v in self.vars.values() if v.type in types]

    def branch_copy(self) -> "State":
        """A copy for one branch of an if/else. Name counters stay shared, so both branches use fresh names."""
        counters = self.counters
        self.counters = {}
        try:
            twin = copy.deepcopy(self)
        finally:
            self.counters = counters
        twin.counters = counters
        return twin


@dataclass
class Condition:
    """An if/else split on the most recent variable: `<left> <op> COND`, COND declared in the setup block."""

    left: str  # Python expression over the variable, e.g. "v3.shape[1]"
    op: str  # "==", ">", ...
    value: Any  # COND's value for the original test case (the condition holds)
    flipped: Any | None  # COND's value that makes the condition false, None when the else branch is dead
    phrase: str  # how the translator says the condition, with "COND" left in place
    dead_reason: str = ""  # why no flipped value exists

    def holds(self, left: Any, cond: Any) -> bool:
        """Whether `<left> <op> COND` is true for these values (the test the program's if makes)."""
        return COMPARISONS[self.op](left, cond)


# ------------------------------------------------------------------------------------------------- the API


class API(ABC):
    """One transition of the state machine."""

    name: str
    # str.format templates for the translator, keys from `describe`, one list per instruction variant:
    # `phrases` for `steps` (every call, parameter and output name dictated), `natural` for the default variant
    # (as a developer asks: the call and its non-default values, no output name; later calls refer to the output
    # by `noun`), `vague` (the intent and the values, without the API's or its parameters' names).
    phrases: Sequence[str]
    natural: Sequence[str] = ()
    vague: Sequence[str] = ()
    # How a natural or vague instruction refers to this call's outputs later ("the {nth}convolved tensor"): one
    # noun for every output, or one per output; `{nth}` becomes "first ", "second ", ... when the API is called
    # more than once in the program.
    noun: str | Sequence[str] = "{nth}result"
    vague_noun: str | Sequence[str] | None = None  # the same for the vague variant, when `noun` names the API

    @abstractmethod
    def bindings(self, state: State) -> list[tuple[str, ...]]:
        """All input bindings for which this call is legal in `state` (empty: not callable)."""

    @abstractmethod
    def apply(self, state: State, inputs: tuple[str, ...], rng: random.Random) -> Call:
        """Solve the parameters for `inputs`, emit the code, and update `state` (outputs, consumers)."""

    def values(self, call: Call) -> dict[str, tuple[str, ...]]:
        """The argument values the oracle depends on that are not the API's documented defaults, each with the
        forms in which an instruction may state it (checked by `builder/facts.py`)."""
        return {}

    def nouns(self, call: Call) -> list[str]:
        return [self.noun] * len(call.outputs) if isinstance(self.noun, str) else list(self.noun)

    def vague_nouns(self, call: Call) -> list[str]:
        if self.vague_noun is None:
            return self.nouns(call)
        return [self.vague_noun] * len(call.outputs) if isinstance(self.vague_noun, str) else list(self.vague_noun)

    def describe(self, call: Call) -> dict:
        """The values the phrase templates may use; by default the call's args and its variable names."""
        d = dict(call.args)
        for prefix, names in (("in", call.inputs), ("out", call.outputs)):
            for i, n in enumerate(names):
                d[f"{prefix}{i}"] = n
                d[f"{prefix}{i}_"] = f"`{n}`"  # the form phrases use: names set in code style
        d["outs"] = join_names(call.outputs)
        return d


def setup_block(lines: list[str], constants: dict[str, Any]) -> str:
    """The setup block from a scenario's own lines, then one `NAME = value` line per split constant."""
    return "\n".join(lines + [f"{k} = {v!r}" for k, v in constants.items()]) + "\n"


def join_words(items: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def join_names(names: Sequence[str]) -> str:
    return join_words([f"`{n}`" for n in names])


# --------------------------------------------------------------------------------------------- scenario


class Scenario(ABC):
    """The builder-side half of a scenario: everything the builder and the harness ask of one is declared here,
    with a default where the ability is optional (docs/architecture.md, "The scenario contract")."""

    name: str
    apis: Sequence[API]
    world: str  # "module:Class" of the World, imported only inside sandbox workers
    example: bool = False  # a worked example (docs/adding-a-scenario.md): built only when named, never by default
    tiers: tuple[str, ...] = (PAPER,)  # the tiers it can be built on; FRONTIER needs `frontier_plan`
    # Calls on every path beyond the build's --calls: a service's task must make a resource before a call can use
    # it, where a hand-built world's state is mostly prepared by its setup block
    make_calls: int = 0
    # Whether a task whose RESULT holds two items equal on every test case is dropped: a model that swaps them, or
    # keeps one twice, passes. A derived world's reads can coincide (two tools that show the same thing); the
    # hand-built worlds keep the tasks they always made.
    distinct_answers: bool = False
    # Whether a program can read the final state (the oracle's `state`) through the scenario's API: a service's
    # listings, the tensors a program holds. Where it cannot (a lab that keeps no listing of what was made), a test
    # written from the documentation cannot see a change of that state only, so tests mode neither asserts it in a
    # reference test nor keeps a world mutant that changes only it (`evaluate.mutation_score`).
    state_readable: bool = True

    def make_world(self) -> "World":
        """A new instance of this scenario's world (heavy: only inside a sandbox worker); by default `world`'s class
        called with no arguments."""
        from scenarios.registry import load_object

        return load_object(self.world)()

    @abstractmethod
    def initial_state(self, rng: random.Random) -> State:
        """A random initial state: variables declared in the setup block, with their stored values."""

    @abstractmethod
    def condition(self, state: State, var: Var, rng: random.Random) -> Condition | None:
        """An if/else condition on `var` (the most recent variable), or None when none fits."""

    @abstractmethod
    def setup_code(self, state: State, constants: dict[str, Any]) -> str:
        """The setup block the model is shown (imports, pre-loaded variables, condition constants)."""

    @abstractmethod
    def api_doc(self, tier: str = PAPER) -> str:
        """The documentation shown to the model on a task of `tier`."""

    def readiness(self) -> list | None:
        """The agent-readiness findings of the service or server this scenario is derived from
        (`scenarios.readiness.Finding`: its documentation read, and a running instance observed), or None for a
        world written by hand (the default)."""
        return None

    def findings(self) -> list | None:
        """`readiness()`, worked out once per scenario (it starts the service or server): the build stores the
        enriched documentation with every task and writes the report from the same findings."""
        if "_findings" not in self.__dict__:
            self.__dict__["_findings"] = self.readiness()
        return self.__dict__["_findings"]

    def enriched_doc(self, tier: str = PAPER) -> str:
        """`api_doc` with what a running instance showed that it does not state, per operation
        (`scenarios.readiness.enrich`; the same text when nothing was observed); "" for a world written by hand,
        which has no readiness findings."""
        findings = self.findings()
        if findings is None:
            return ""
        from scenarios.readiness import enrich

        return enrich(self.api_doc(tier), findings)

    def tool_specs(self, tier: str = PAPER) -> list:
        """The APIs as tools (`scenarios.calling.ToolSpec`), from the definition the documentation comes from, on
        the task's tier (`task_tier`); `--mode tools` adds `submit_result`. Light: the harness calls it."""
        raise NotImplementedError(f"the {self.name} scenario defines no tools")

    def task_tier(self, task) -> str:
        """The tier a task (a `core.records.TaskRecord`) was built on, as its stored values say: PAPER, or a
        tier whose world serves more (the session service's frontier tier)."""
        return PAPER

    def frontier_plan(self, rng: random.Random):
        """One program of the frontier tier, a `scenarios.grammar.Plan` of this scenario's steps (only for a
        scenario whose `tiers` hold FRONTIER)."""
        raise NotImplementedError(f"the {self.name} scenario has no {FRONTIER} tier")

    def scratch_assets(self, assets: list[dict], rng: random.Random) -> list[dict]:
        """The stored values of a scratch world for `--mode explore`: the same names and schema as `assets` (a test
        case's), freshly drawn, so that a model may try code on data that is never a test case's."""
        raise NotImplementedError(f"the {self.name} scenario has no scratch world")

    @abstractmethod
    def redraw(self, state: State, rng: random.Random) -> State:
        """The same setup block with freshly drawn values of the same schema: an extra test input.

        `state` holds every declaration of a program (`Program.declarations`); the copy returned keeps its variable
        names, types and every fact the program's solved parameters rely on (shapes, list lengths, which stored
        records match which query), and changes the values, so that a program which hard-codes a value or leans on
        a coincidence of one input fails. It must not modify `state`.
        """

    def is_result(self, var: Var) -> bool:
        """Whether an unconsumed variable belongs in RESULT (by default: anything an API call produced)."""
        return var.producer != INIT

    def preference(self, state: State, api: "API", binding: tuple[str, ...], left: int) -> float:
        """How much more likely the fuzzer is to draw this call, with `left` more calls to come on its path, than its
        coverage weight says (`builder/fuzz.py`, with a recency preference on): 1.0 by default, so a scenario's
        programs are the paper's unless it says."""
        return 1.0

    def always_result(self, var: Var) -> bool:
        """Whether RESULT holds this variable even when later calls consume it: a value whose later uses read
        only part of it (a listing whose ids alone are used) would otherwise leave the rest of it untested."""
        return False

    value_phrases: dict[str, str] = {}  # variable type -> how the vague instruction names such a value

    # What mutation analysis (builder/mutate.py) may swap in: callee -> APIs a model could confuse it with, and
    # groups of interchangeable literals (session types, field names, setting names).
    confusions: dict[str, tuple[str, ...]] = {}
    vocabulary: tuple[tuple[str, ...], ...] = ()
    commuting: dict[str, tuple[int, int]] = {}  # callee -> two argument positions whose swap changes nothing
    # Whether several programs may run one after another in one sandbox child, each in a fresh copy of the setup's
    # namespace, without one seeing another's effects: true only for a world with no state outside the program.
    shared_runs: bool = False

    def describe_value(self, var: Var) -> str:
        """What kind of value `var` is, for the vague instruction's expected outcome (no stored values quoted)."""
        return self.value_phrases.get(var.type, f"a {var.type.replace('_', ' ')}")

    def describe_init(self, state: State) -> str:
        """One sentence naming what the setup block provides, without quoting any stored value."""
        return f"The setup block already defines {join_names(state.inits)}."

    # Harness side: comparisons of canonical data (never of objects from the child).

    def leaf_compare(self, expected: dict, actual: dict, path: str):
        """Compare scenario-tagged values (e.g. tensors with a tolerance); NotImplemented for plain dicts."""
        return NotImplemented

    def compare_result(self, expected: Any, actual: Any) -> str | None:
        return compare_plain(expected, actual, self.leaf_compare, "RESULT")

    def compare_state(self, expected: Any, actual: Any) -> str | None:
        return compare_plain(expected, actual, self.leaf_compare, "state")


class World(ABC):
    """The sandbox-side half: created once per worker, reset per test case.

    `namespace` runs inside the forked child (untrusted code will share it); `canonical` runs there too, and
    must return plain data only (None, bool, int, float, str, list, dict with str keys). `snapshot` runs in the
    worker after the child has exited, so side effects held by the world (a database) are read from the world,
    not from the child.
    """

    def reset(self, case: dict) -> None:
        """Restore the world to this test case's initial state (called in the worker, before the fork)."""

    def intact(self) -> bool:
        """Whether everything the world runs outside the worker (a service) lived through the last job (called in
        the worker after it): a job during which a part of the world died has no verdict, since its program met
        a failure of the machine. It runs again, in the same worker (whose next `reset` brings that part back),
        and a job during which it dies every time ends without a verdict, for the reason `failure` gives: the
        builder drops the task for it (`builder.oracles`). A world with no such part is always intact."""
        return True

    def failure(self) -> str | None:
        """Once `intact` is False: what died, on one line (what it printed last, where known); None when the
        world cannot say, and the error that revealed the death is given instead."""
        return "a part of the world (its service) died during the job"

    def reset_between(self, case: dict) -> bool:
        """Between two programs of a batch (see `core.sandbox.worker`): restore the test case's initial state while
        the child that runs them waits, after `snapshot` has read the first one's side effects. False when the
        child can no longer reach the world through the namespace it made (a service restarted on another
        address): the batch stops there, and its remaining programs run one by one."""
        self.reset(case)
        return True

    def save(self) -> Any:
        """The state of the world now, as `restore` takes it back (in the worker, while a batch's child waits: see
        `core.sandbox.worker._run_batch`), or None when this world cannot. A world whose state is all in the child's
        namespace (none, or objects the namespace holds) returns None: its batches run every program whole."""
        return None

    def restore(self, saved: Any) -> bool:
        """Back to what `save` returned; False, as for `reset_between`, when the child can no longer reach the
        world."""
        raise NotImplementedError

    @abstractmethod
    def namespace(self, case: dict) -> dict:
        """Globals the setup block runs in (loaders, clients, tools); called in the child once per program, so
        state held in the namespace (a lab, a counter of ids) starts afresh for each program of a batch."""

    def canonical(self, obj: Any) -> Any:
        """Plain data for RESULT; scenario types override `canonical_leaf`."""
        return canonicalize(obj, self.canonical_leaf)

    def canonical_leaf(self, obj: Any) -> Any:
        raise TypeError(f"RESULT contains a {type(obj).__module__}.{type(obj).__qualname__}, which cannot be compared")

    def recorded(self, namespace: dict) -> Any:
        """Side effects the child itself holds (e.g. an in-process tool log), as plain data; runs in the child."""
        return None

    def trace_value(self, obj: Any) -> Any:
        """Plain data for an API argument or result in a trace (runs in the child); by default as for RESULT. A
        world whose values are large may give less, as long as equal values give equal data and unequal ones not."""
        return self.canonical(obj)

    def record_calls(self, namespace: dict, recorder) -> None:
        """Have the program's calls to the scenario's API reach `recorder` (a `scenarios.trace.Recorder`): runs in
        the child, after `namespace` and before the setup block. A world whose calls are recorded elsewhere (at a
        service, see `calls`) does nothing here."""

    def calls(self, recorded: Any) -> Any:
        """The test case's raw API calls (`scenarios.trace.raw_call`), read in the worker after the child has
        exited; `recorded` is what the child's recorder holds. By default that is the record."""
        return recorded

    def snapshot(self, recorded: Any) -> Any:
        """The test case's side effects as plain data, read in the worker after the child has exited.

        `recorded` is what `recorded` returned in the child. A world with its own storage (a server's database)
        should read that storage here rather than trust the child; by default the child's record is the state.
        """
        return recorded

    def outcome(self, result: Any, recorded: Any) -> tuple[Any, Any]:
        """RESULT and the side effects as they are compared, in the worker after the child has exited: by default
        RESULT as the child's `canonical` gave it and `snapshot(recorded)`. A world that renames values the child
        cannot be trusted to rename (ids its service made) does it here, from what the worker itself recorded."""
        return result, self.snapshot(recorded)

    def close(self) -> None:
        pass

    # World mutants (`scenarios.mutants`, `--mode tests`): the world gone wrong on one operation.

    mutant = None  # the `scenarios.mutants.Mutant` this world behaves as, None when correct

    def mutate(self, mutant) -> None:
        """Behave as `mutant` says from the next `reset` on (None: correctly); called in the worker before every
        program's job. By default the mutant is applied in the child, around the calls the world records
        (`call_mutant`); a world in front of a service applies it there instead (`scenarios.rest.proxy`)."""
        self.mutant = mutant

    def call_mutant(self):
        """The mutant the child's `scenarios.trace.Recorder` applies around each recorded call (None: none there)."""
        return self.mutant

    def altered(self, value: Any) -> Any:
        """Another value of the same kind (`scenarios.mutants.ALTERED`): plain data as `altered_plain` alters it;
        a world whose calls answer values of its own types alters those here."""
        return altered_plain(value)

    def changed(self) -> int:
        """In the worker after a job: how many requests the mutant changed where the world applies it itself (0 for
        a world whose mutants the child's recorder applies; it counts those)."""
        return 0

    # Tool calling (`--mode tools`, see `scenarios.calling`): the child runs calls on the world one by one.

    def tools(self):
        """A `scenarios.calling.Tools`: the tools by name, how to call one on this world, how to summarise a value
        for a model. None: this world is not served as tools."""
        return None

    def trace_as_tools(self, namespace: dict, tracer) -> None:
        """Make a trusted program's API calls in `namespace` report to `tracer` (a `scenarios.calling.Tracer`), so
        that the reference program can be replayed as tool calls. (Not the diagnosis's trace, which
        `record_calls` takes of any program, by value, for comparison with the reference's.)"""
        raise NotImplementedError(f"{type(self).__name__} cannot trace programs into tool calls")

    def plain(self, value: Any) -> Any:
        """A traced argument that is not a handle, as the JSON a model would send for it."""
        return self.canonical(value)


# ------------------------------------------------------------------------------------------ canonical data


def canonicalize(obj: Any, leaf) -> Any:
    """Turn a RESULT into plain JSON-able data. Tuples become lists; mapping keys must be strings."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}
    if isinstance(obj, (list, tuple)):
        return [canonicalize(x, leaf) for x in obj]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"RESULT has a dict key of type {type(k).__name__}; only str keys can be compared")
            out[k] = canonicalize(v, leaf)
        return out
    return leaf(obj)


def canonical_json(data: Any) -> str:
    """The one serialisation of plain data used everywhere (hashes, oracles, comparisons)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def compare_plain(expected: Any, actual: Any, leaf_compare, path: str = "RESULT", close=None) -> str | None:
    """Compare two canonical values; return None when equal, else a one-line reason naming where they differ.

    `leaf_compare(expected, actual, path)` handles scenario-tagged dicts (e.g. tensors) and returns a reason,
    None when equal, or NotImplemented when the dict is not one of its tags. `close(expected, actual)`, when given,
    decides whether two numbers of which one is a float are equal (a scenario's tolerance).
    """
    if close is not None and _is_number(expected) and _is_number(actual) and float in (type(expected), type(actual)):
        return None if close(expected, actual) else f"{path}: expected {_short(expected)}, got {_short(actual)}"
    if isinstance(expected, dict) and isinstance(actual, dict):
        verdict = leaf_compare(expected, actual, path)
        if verdict is not NotImplemented:
            return verdict
        if set(expected) != set(actual):
            missing = sorted(set(expected) - set(actual))
            extra = sorted(set(actual) - set(expected))
            return f"{path}: keys differ (missing {missing}, unexpected {extra})"
        for k in expected:
            reason = compare_plain(expected[k], actual[k], leaf_compare, f"{path}[{k!r}]", close)
            if reason:
                return reason
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{path}: expected {len(expected)} items, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            reason = compare_plain(e, a, leaf_compare, f"{path}[{i}]", close)
            if reason:
                return reason
        return None
    if type(expected) is not type(actual) and not (_is_number(expected) and _is_number(actual)):
        return f"{path}: expected {_kind(expected)}, got {_kind(actual)}"
    if expected != actual:
        return f"{path}: expected {_short(expected)}, got {_short(actual)}"
    return None


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _kind(x: Any) -> str:
    if isinstance(x, dict) and len(x) == 1:
        (tag,) = x
        if tag.startswith("__"):
            return tag.strip("_")
    return {type(None): "None", dict: "dict", list: "list"}.get(type(x), type(x).__name__)


def _short(x: Any, limit: int = 60) -> str:
    s = repr(x)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def iter_unique(items: Iterable[Any]) -> list[Any]:
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
