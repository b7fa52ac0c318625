"""Program assembly: a straight run of calls, or a prefix followed by an if/else split, each path ending in RESULT.

The branch is cut at a random call site. Its condition puts the most recent variable on the left and moves that
variable's runtime value into a constant declared in the setup block, so the same program can be run with the
condition true (the original test case) and false (the flipped one). Both branches are generated from copies
of the generator state after the prefix; the coverage recorder is shared, so statistics carry across.

With `branches` K > 1 a branch's body may split again on a value made inside it (nested if/else, as in the
paper), up to K splits per program. Each split compares against its own constant: `COND` when the program has
one split, `COND1`, `COND2`, ... in program text order when it has more. Every path through the program has the
same number of calls, and every path has a constant assignment that takes it (`Program.assignments`).

`Program` is the paper tier's kind of program (the program interface: `builder/base.py`): besides its structure
it gives its test cases (one per path, and redrawn values), the facts its oracle depends on, and its instruction in
each variant, worded from the scenario's phrase tables and the connectors of `builder/translate.py`. Mutation
analysis applies the generic operators of `builder/mutate.py` to it.
"""

from __future__ import annotations

import random
import re
import textwrap
from dataclasses import dataclass, field
from typing import NamedTuple

from builder.base import BaseProgram, Rendered, make_case
from builder.config import BuildConfig, rng_for
from builder.facts import RELATIONS, Fact
from builder.fuzz import CoverageRecorder, step
from builder.translate import (BRANCH_PHRASES, CONNECTORS, JOINERS, OPENERS, PROSE_CONNECTORS, PROSE_EMPTY,
                               PROSE_OPENERS, PROSE_RESULT_ONE, PROSE_RESULTS, RESULT_PHRASES, _sentence, ordinal)
from core.records import TestCase
from scenarios.base import PAPER, STEPS, Call, Condition, Scenario, State, join_names, join_words

COND = "COND"


@dataclass
class Path:
    """One branch (or the whole straight-line program): its calls and its final state.

    A branch that splits again (K > 1) ends in `split` instead of RESULT; its `state` is then the state at that
    split, and each of the split's two paths carries on from a copy of it."""

    calls: list[Call]
    state: State
    split: Split | None = None

    def result_vars(self, scenario: Scenario) -> list[str]:
        """Variables made by a call of this path and consumed by none (or kept whole, see
        `Scenario.always_result`): what RESULT collects."""
        return [v.name for v in self.state.vars.values()
                if (not v.consumers or scenario.always_result(v)) and scenario.is_result(v)]


@dataclass
class Split:
    """An if/else: `if <condition.left> <condition.op> <name>:` then `then`, else `orelse`."""

    name: str  # the constant the condition compares against, declared in the setup block
    condition: Condition
    then: Path
    orelse: Path


class Leaf(NamedTuple):
    """One path through a program: the splits on the way with the side taken (True: then), its calls, its end."""

    decisions: tuple[tuple[Split, bool], ...]
    calls: list[Call]
    path: Path

    @property
    def label(self) -> str:
        """`main` for a straight program, else the sides taken: `then`, `else`, `then/else`, ..."""
        return "/".join("then" if taken else "else" for _, taken in self.decisions) or "main"

    @property
    def reachable(self) -> bool:
        """Whether some constant assignment takes this path (no dead else on the way)."""
        return all(taken or split.condition.flipped is not None for split, taken in self.decisions)


class Assignment(NamedTuple):
    """The constants of one test case and the path they take."""

    name: str  # "original", "flipped", or "flipped-cond1-cond3" when a program has several splits
    branch: str  # the path's label (Leaf.label)
    constants: dict


@dataclass
class Program(BaseProgram):
    """The paper tier's kind of program: a prefix of calls, then the first split if any (see the module
    docstring)."""

    scenario: Scenario
    initial: State  # the state before the first call (for the translator's introduction)
    prefix: list[Call]
    then: Path  # the straight-line program when there is no branch
    orelse: Path | None = None
    condition: Condition | None = None
    notes: list[str] = field(default_factory=list)
    cond_name: str = COND  # the constant of the first split

    tier = PAPER

    @property
    def has_branch(self) -> bool:
        return self.orelse is not None

    def root(self) -> Path:
        """The whole program as one path from the first call: the prefix, then the first split if any."""
        if not self.orelse:
            return Path(self.prefix + self.then.calls, self.then.state)
        return Path(self.prefix, self.then.state, Split(self.cond_name, self.condition, self.then, self.orelse))

    def splits(self) -> list[Split]:
        """Every if/else, in program text order."""
        out: list[Split] = []

        def walk(path: Path) -> None:
            if path.split:
                out.append(path.split)
                walk(path.split.then)
                walk(path.split.orelse)

        walk(self.root())
        return out

    def leaves(self) -> list[Leaf]:
        """Every path through the program, then-sides first."""
        out: list[Leaf] = []

        def walk(path: Path, before: list[Call], decisions: tuple) -> None:
            calls = before + path.calls
            if path.split is None:
                out.append(Leaf(decisions, calls, path))
                return
            walk(path.split.then, calls, decisions + ((path.split, True),))
            walk(path.split.orelse, calls, decisions + ((path.split, False),))

        walk(self.root(), [], ())
        return out

    @property
    def all_calls(self) -> list[Call]:
        """Every call site, in program text order."""
        def walk(path: Path) -> list[Call]:
            return path.calls + (walk(path.split.then) + walk(path.split.orelse) if path.split else [])

        return walk(self.root())

    def paths(self) -> list[list[Call]]:
        return [leaf.calls for leaf in self.leaves()]

    # ---------------------------------------------------------------------------------------- setup block

    def declarations(self) -> State:
        """One state holding every variable declared in the setup block by any path (weights solved on the way)."""
        ends = [leaf.path for leaf in self.leaves()]
        merged = ends[0].state.branch_copy()
        for end in ends[1:]:
            for name in end.state.inits:
                if name not in merged.inits:
                    merged.inits.append(name)
                    merged.vars[name] = end.state.vars[name]
            merged.assets.update(end.state.assets)
        return merged

    def constants(self, flipped: bool = False) -> dict:
        """Every split's constant at its original value (the first split's flipped, if asked)."""
        out = {s.name: s.condition.value for s in self.splits()}
        if flipped and self.condition:
            out[self.cond_name] = self.condition.flipped
        return out

    def assignments(self) -> list[Assignment]:
        """One constant assignment per path that can be taken: the test cases that exercise every path.

        On a path, each split it passes gets the value that sends it to the side the path takes (the original
        value for then, the flipped one for else); a split the path does not pass keeps its original value."""
        splits = self.splits()
        out = []
        for leaf in self.leaves():
            if not leaf.reachable:
                continue
            constants = {s.name: s.condition.value for s in splits}
            flipped = []
            for split, taken in leaf.decisions:
                if not taken:
                    constants[split.name] = split.condition.flipped
                    flipped.append(split.name)
            if not flipped:
                name = "original"
            elif len(splits) == 1:
                name = "flipped"
            else:
                name = "flipped-" + "-".join(n.lower() for n in flipped)
            out.append(Assignment(name, leaf.label, constants))
        return out

    # ------------------------------------------------------------------------------------------ test inputs

    def test_cases(self, config: BuildConfig, index: int) -> list[TestCase]:
        """One test case per path through the program (the original, its flipped-condition twin, or one per
        constant assignment when splits nest; a dead else branch has none), and `config.redraws` cases of freshly
        drawn values (cycling through those assignments), so that no single input decides a verdict."""
        decl = self.declarations()
        return [make_case(self.scenario, a.name, decl, a.constants, a.branch) for a in self.assignments()] \
            + self._redrawn(config, index, "redraw", "redrawn", config.redraws)

    def probe_cases(self, config: BuildConfig, index: int) -> list[TestCase]:
        """`config.probes` more inputs of fresh values, cycling through the constant assignments."""
        return self._redrawn(config, index, "probe", "probe", config.probes)

    def _redrawn(self, config: BuildConfig, index: int, purpose: str, name: str, count: int) -> list[TestCase]:
        """`count` cases of freshly drawn values (`Scenario.redraw`), named `{name}-1`, `{name}-2`, ..., each drawn
        with its own generator (`{purpose}-0`, ...) and given the constants of the assignments in turn."""
        decl, assignments = self.declarations(), self.assignments()
        out = []
        for k in range(count):
            state = self.scenario.redraw(decl, rng_for(config, self.scenario.name, index, f"{purpose}-{k}"))
            a = assignments[k % len(assignments)]
            out.append(make_case(self.scenario, f"{name}-{k + 1}", state, a.constants, a.branch))
        return out

    def unfit(self, config: BuildConfig) -> str | None:
        """A path with fewer calls than `config.calls_per_path` and the scenario's `make_calls` (the fuzzer found no
        valid call to go on with)."""
        least = config.calls_per_path + self.scenario.make_calls
        return "too few API calls" if min(len(p) for p in self.paths()) < least else None

    # ------------------------------------------------------------------------------------------- the code

    def reference_code(self) -> str:
        """The program body that runs after the setup block (the reference solution)."""
        return "\n".join(self._lines(self.root(), lambda leaf, label: _result_line(leaf.result_vars(self.scenario)))) \
            + "\n"

    def path_probe(self) -> str:
        """The program with each path's RESULT replaced by that path's label: which path an input takes."""
        return "\n".join(self._lines(self.root(), lambda leaf, label: f"RESULT = [{label!r}]")) + "\n"

    def _lines(self, path: Path, end, decisions: tuple[bool, ...] = ()) -> list[str]:
        lines = [c.code for c in path.calls]
        split = path.split
        if split is None:
            label = "/".join("then" if taken else "else" for taken in decisions) or "main"
            return lines + [end(path, label)]
        cond = split.condition
        lines.append(f"if {cond.left} {cond.op} {split.name}:")
        lines.append(textwrap.indent("\n".join(self._lines(split.then, end, decisions + (True,))), "    "))
        lines.append("else:")
        lines.append(textwrap.indent("\n".join(self._lines(split.orelse, end, decisions + (False,))), "    "))
        return lines

    # ----------------------------------------------------------------------------- complexity (Table I)

    def path_depth(self) -> int:
        """The longest chain of data-dependent calls on any path."""
        best = 0
        for calls in self.paths():
            depth_of_var: dict[str, int] = {}
            for c in calls:
                d = 1 + max((depth_of_var.get(v, 0) for v in c.inputs), default=0)
                for out in c.outputs:
                    depth_of_var[out] = d
                best = max(best, d)
        return best

    def binding_count(self) -> int:
        """Variables that link one call's output to another call's input (over all paths)."""
        produced = {out for c in self.all_calls for out in c.outputs}
        consumed = {v for c in self.all_calls for v in c.inputs}
        return len(produced & consumed)

    # --------------------------------------------------------------------------------- facts, calls, mutants

    def required_facts(self) -> list[Fact]:
        """Every setup variable a call reads, every argument value its API names, each split's relation, and what
        RESULT holds on every path."""
        scenario = self.scenario
        apis = {a.name: a for a in scenario.apis}
        inits = set(self.declarations().inits)
        facts: list[Fact] = []
        seen: set[str] = set()
        for call in self.all_calls:
            for name in call.inputs:
                if name in inits and name not in seen:
                    seen.add(name)
                    facts.append(Fact("input", f"the setup variable `{name}`", (f"`{name}`",)))
            for key, forms in apis[call.api].values(call).items():
                facts.append(Fact("value", f"{call.api}: {key}", tuple(forms)))
        for split in self.splits():
            c = f"`{split.name}`"
            forms = tuple(f.format(c=c) for f in RELATIONS[split.condition.op])
            facts.append(Fact("condition", f"the branch: {split.condition.phrase.replace(COND, c)}", forms,
                              (split.name,)))
        for leaf in self.leaves():
            names = tuple(leaf.path.result_vars(scenario))
            facts.append(Fact("result", f"RESULT on the {leaf.label} path", (), names))
        return facts

    def static_calls(self) -> list[str]:
        return [c.api for c in self.all_calls]

    def variable_types(self) -> dict[str, str]:
        types = {}
        for leaf in self.leaves():
            types.update({name: var.type for name, var in leaf.path.state.vars.items()})
        return types

    def setup_variables(self) -> list[str]:
        return list(self.declarations().inits)

    # ------------------------------------------------------------------------------------------- wording

    def render(self, variant: str, rng: random.Random) -> Rendered:
        if variant == STEPS:  # names are dictated: every variable is referred to by its name
            return Rendered(self._steps(rng), {v: v for c in self.all_calls for v in c.outputs})
        refs = self.references(variant)
        return Rendered(self._prose(rng, variant, refs), refs)

    def references(self, variant: str = "natural") -> dict[str, str]:
        """How natural and vague texts name each output: "the " + its API's noun, with an ordinal when its API is
        called more than once on a path through this call (counted along each path, so each side of a split counts
        on from the calls before it)."""
        apis = {a.name: a for a in self.scenario.apis}
        repeated: set[int] = set()  # the calls whose API recurs on some path through them
        for leaf in self.leaves():
            repeated |= {id(c) for c in leaf.calls if sum(d.api == c.api for d in leaf.calls) > 1}
        refs: dict[str, str] = {}

        def walk(path: Path, counts: dict[str, int]) -> None:
            counts = dict(counts)
            for call in path.calls:
                counts[call.api] = counts.get(call.api, 0) + 1
                nth = f"{ordinal(counts[call.api])} " if id(call) in repeated else ""
                api = apis[call.api]
                for out, noun in zip(call.outputs, api.vague_nouns(call) if variant == "vague" else api.nouns(call)):
                    refs[out] = "the " + noun.format(nth=nth)
            if path.split:
                walk(path.split.then, counts)
                walk(path.split.orelse, counts)

        walk(self.root(), {})
        return refs

    def _prose(self, rng: random.Random, variant: str, refs: dict[str, str]) -> str:
        scenario = self.scenario
        apis = {a.name: a for a in scenario.apis}

        def named(text: str) -> str:
            """Intermediate names replaced by what they are; setup variables keep their names."""
            return re.sub(r"`(\w+)`", lambda m: refs.get(m.group(1), m.group(0)), text)

        def clause(call: Call) -> str:
            api = apis[call.api]
            templates = api.natural if variant == "natural" else api.vague
            return named(rng.choice(templates).format(**api.describe(call)))

        def sentences(calls: list[Call], leads: tuple[str, ...]) -> list[str]:
            """The calls in sentences of one or two; `leads` opens the first (a side's first has none)."""
            out, k = [], 0
            while k < len(calls):
                text = clause(calls[k])
                if k + 1 < len(calls) and ";" not in text and rng.random() < 0.5:
                    k += 1
                    text += rng.choice(JOINERS) + clause(calls[k])
                lead = rng.choice(leads if not out else PROSE_CONNECTORS)
                out.append(_sentence(f"{lead} {text}" if lead else text))
                k += 1
            return out

        def result(path: Path) -> str:
            items = [refs.get(n, f"`{n}`") for n in path.result_vars(scenario)]
            if not items:
                return _sentence(rng.choice(PROSE_EMPTY))
            if len(items) == 1:
                return _sentence(rng.choice(PROSE_RESULT_ONE).format(item=items[0]))
            listed = join_words(items)
            return _sentence(rng.choice(PROSE_RESULTS).format(items=listed))

        lines = [scenario.describe_init(self.declarations())]

        def side(path: Path, pad: str, leads: tuple[str, ...]) -> None:
            body = sentences(path.calls, leads)
            if path.split is None:
                lines.append(pad + " ".join(body + [result(path)]))
                return
            if body:
                lines.append(pad + " ".join(body))
            lines.append(pad + _sentence(f"If {named(_condition(path.split))}:"))
            side(path.split.then, pad + "   ", ("",))
            lines.append(pad + "Otherwise:")
            side(path.split.orelse, pad + "   ", ("",))

        side(self.root(), "", PROSE_OPENERS)
        if self.splits():
            lines.append(self._names_rule())
        return "\n".join(lines)

    def _steps(self, rng: random.Random) -> str:
        """Numbered steps up to the first split, then each side's steps lettered under "If so:" / "Otherwise:",
        a side that splits again indented one level further (steps numbered i, ii, ... there)."""
        scenario = self.scenario
        apis = {a.name: a for a in scenario.apis}

        def say(call: Call) -> str:
            api = apis[call.api]
            return rng.choice(api.phrases).format(**api.describe(call))

        def result(path: Path) -> str:
            names = path.result_vars(scenario)
            if not names:
                return "set `RESULT` to an empty list (`RESULT = []`)"
            listed = "[" + ", ".join(f"`{n}`" for n in names) + "]"
            return rng.choice(RESULT_PHRASES).format(names=listed, bare=", ".join(names))

        lines = [scenario.describe_init(self.declarations())]
        for i, call in enumerate(self.prefix):
            lead = rng.choice(OPENERS) if i == 0 else rng.choice(CONNECTORS)
            lines.append(f"{i + 1}. " + _sentence(f"{lead} {say(call)}"))
        top = self.root()
        if top.split is None:
            number = len(self.prefix)
            for call in top.calls[len(self.prefix):]:
                number += 1
                lines.append(f"{number}. " + _sentence(f"{rng.choice(CONNECTORS)} {say(call)}"))
            lines.append(f"{number + 1}. " + _sentence(f"Finally, {result(top)}"))
            return "\n".join(lines)

        def sides(split: Split, pad: str, depth: int) -> None:
            for label, path in (("If so:", split.then), ("Otherwise:", split.orelse)):
                lines.append(f"{pad}{label}")
                steps = [_sentence(say(c)) for c in path.calls]
                if path.split:
                    steps.append(rng.choice(BRANCH_PHRASES).format(cond=_condition(path.split)))
                else:
                    steps.append(_sentence(result(path)))
                for k, text in enumerate(steps):
                    lines.append(f"{pad}{_mark(depth, k)}. {text}")
                if path.split:
                    sides(path.split, pad + "   ", depth + 1)

        lines.append(f"{len(self.prefix) + 1}. " + rng.choice(BRANCH_PHRASES).format(cond=_condition(top.split)))
        sides(top.split, "   ", 1)
        lines.append(self._names_rule())
        return "\n".join(lines)

    def _names_rule(self) -> str:
        names = [s.name for s in self.splits()]
        if len(names) == 1:
            return f"Use the name `{names[0]}` in the condition, not its current value."
        return f"Use the names {join_names(names)} in the conditions, not their current values."


ROMAN = (("x", 10), ("ix", 9), ("v", 5), ("iv", 4), ("i", 1))


def _label(k: int) -> str:
    """a, b, ..., z, aa, ab, ... for the steps inside a branch."""
    return (_label(k // 26 - 1) if k >= 26 else "") + chr(ord("a") + k % 26)


def _roman(k: int) -> str:
    """i, ii, iii, ... for the k-th step (from 0) of a side nested inside another side."""
    n, out = k + 1, ""
    for letters, value in ROMAN:
        while n >= value:
            out += letters
            n -= value
    return out


def _mark(depth: int, k: int) -> str:
    return _label(k) if depth % 2 else _roman(k)


def _condition(split: Split) -> str:
    return split.condition.phrase.replace(COND, f"`{split.name}`")


def _result_line(names: list[str]) -> str:
    return f"RESULT = [{', '.join(names)}]"


@dataclass
class _Grower:
    """Grows one path of calls from a state, splitting it where a split is drawn and a condition fits."""

    scenario: Scenario
    rng: random.Random
    recorder: CoverageRecorder
    guided: bool
    branch_probability: float
    notes: list[str]
    recency: float = 0.0

    def step(self, state: State, left: int) -> Call:
        """One call, `left` more to come after it on its path."""
        return step(self.scenario, state, self.recorder, self.rng, self.guided, self.recency, left)

    def path(self, state: State, n: int, splits: int, nested: bool = False) -> Path:
        """`n` calls on every path from `state`, with at most `splits` if/else splits among them."""
        rng = self.rng
        site = rng.randint(1, n - 1) if splits and n >= 2 and rng.random() < self.branch_probability else 0
        calls = [self.step(state, n - 1 - k) for k in range(site or n)]
        condition = None
        while site:  # no condition fits the newest value: move the split one call later, while a call is left after it
            last = calls[-1].outputs[-1] if calls[-1].outputs else None  # (a call may make nothing: a tool's write)
            condition = None if last is None else self.scenario.condition(state, state.vars[last], rng)
            if condition is not None or len(calls) >= n - 1:
                break
            calls.append(self.step(state, n - 1 - len(calls)))
        if site and condition is None:
            self.notes.append(f"no condition fits `{(calls[-1].outputs or ['the last call'])[-1]}`; " +
                              ("that branch does not split again" if nested else "the program has no branch"))
        if not condition:
            calls += [self.step(state, n - 1 - k) for k in range(len(calls), n)]
            return Path(calls, state)

        remaining = n - len(calls)
        left = splits - 1  # further splits, shared out between the two sides at random
        alive = condition.flipped is not None
        mine = (rng.randint(0, left) if alive else left) if left else 0
        sides = []
        for share in (mine, left - mine if alive else 0):
            for _ in range(SIDE_TRIES):  # an else side that repeats the then side would make the test pointless
                side = self.path(state.branch_copy(), remaining, share, nested=True)
                if not sides or _signature(side) != _signature(sides[0]):
                    break
            sides.append(side)
        if _signature(sides[0]) == _signature(sides[1]):  # the only calls left are the same on both sides
            self.notes.append("both sides of the split would do the same; no split")
            return Path(calls + sides[0].calls, sides[0].state, sides[0].split)
        if not alive:
            self.notes.append(f"the else branch is dead ({condition.dead_reason}); only the original test case is kept")
        return Path(calls, state, Split(COND, condition, sides[0], sides[1]))


SIDE_TRIES = 4  # draws of an else side before one that repeats the then side is kept


def _signature(path: Path) -> tuple:
    """What a side of a split does, whatever its variables are called: each call's API, arguments and inputs,
    an input made on this side written as the position of the call output it is."""
    made: dict[str, str] = {}
    out = []

    def walk(p: Path) -> None:
        for call in p.calls:
            out.append((call.api, tuple(made.get(i, i) for i in call.inputs), repr(sorted(call.args.items()))))
            made.update({o: f"#{len(made)}" for o in call.outputs})
        if p.split:
            out.append(("if", repr(p.split.condition.left), p.split.condition.op))
            walk(p.split.then)
            walk(p.split.orelse)

    walk(path)
    return tuple(out)


def generate_program(
    scenario: Scenario,
    rng: random.Random,
    recorder: CoverageRecorder,
    calls_per_path: int = 5,
    branch_probability: float = 0.5,
    guided: bool = True,
    branches: int = 1,
    recency: float = 0.0,
) -> Program:
    """A program with `calls_per_path` calls on every path and at most `branches` if/else splits; `recency` > 0
    makes the sampler prefer calls that consume results no call has used yet (`builder.fuzz.step`)."""
    state = scenario.initial_state(rng)
    initial = state.branch_copy()
    notes: list[str] = []
    grower = _Grower(scenario, rng, recorder, guided, branch_probability, notes, recency)
    root = grower.path(state, calls_per_path, branches)
    if root.split is None:
        return Program(scenario, initial, root.calls, Path([], root.state), notes=notes)
    top = root.split
    program = Program(scenario, initial, root.calls, top.then, top.orelse, top.condition, notes)
    splits = program.splits()
    if len(splits) > 1:  # one constant per split, numbered in program text order
        for k, split in enumerate(splits, 1):
            split.name = f"{COND}{k}"
        program.cond_name = splits[0].name
    return program
