"""Program assembly: a straight run of calls, or a prefix followed by an if/else split, each path ending in RESULT.

The branch is cut at a random call site. Its condition puts the most recent variable on the left and moves that
variable's runtime value into a constant declared in the setup block, so the same program can be run with the
condition true (the original test case) and false (the flipped one). Both branches are generated from copies
of the generator state after the prefix; the coverage recorder is shared, so statistics carry across.

With `branches` K > 1 a branch's body may split again on a value made inside it (nested if/else, as in the
paper), up to K splits per program. Each split compares against its own constant: `COND` when the program has
one split, `COND1`, `COND2`, ... in program text order when it has more. Every path through the program has the
same number of calls, and every path has a constant assignment that takes it (`Program.assignments`).
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field
from typing import NamedTuple

from builder.fuzz import CoverageRecorder, step
from scenarios.base import PAPER, Call, Condition, Scenario, State

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
class Program:
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

    def step(self, state: State) -> Call:
        return step(self.scenario, state, self.recorder, self.rng, self.guided, self.recency)

    def path(self, state: State, n: int, splits: int, nested: bool = False) -> Path:
        """`n` calls on every path from `state`, with at most `splits` if/else splits among them."""
        rng = self.rng
        site = rng.randint(1, n - 1) if splits and n >= 2 and rng.random() < self.branch_probability else 0
        calls = [self.step(state) for _ in range(site or n)]
        condition = None
        while site:  # no condition fits the newest value: move the split one call later, while a call is left after it
            last = calls[-1].outputs[-1]
            condition = self.scenario.condition(state, state.vars[last], rng)
            if condition is not None or len(calls) >= n - 1:
                break
            calls.append(self.step(state))
        if site and condition is None:
            self.notes.append(f"no condition fits `{calls[-1].outputs[-1]}`; " +
                              ("that branch does not split again" if nested else "the program has no branch"))
        if not condition:
            calls += [self.step(state) for _ in range(n - len(calls))]
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
