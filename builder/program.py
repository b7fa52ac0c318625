"""Program assembly: a straight run of calls, or a prefix followed by an if/else split, each path ending in RESULT.

The branch is cut at a random call site. Its condition puts the most recent variable on the left and moves that
variable's runtime value into a constant `COND` declared in the setup block, so the same program can be run with
the condition true (the original test case) and false (the flipped one). Both branches are generated from copies
of the generator state after the prefix; the coverage recorder is shared, so statistics carry across.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field

from builder.fuzz import CoverageRecorder, step
from scenarios.base import Call, Condition, Scenario, State

COND = "COND"


@dataclass
class Path:
    """One branch (or the whole straight-line program): its calls and its final state."""

    calls: list[Call]
    state: State

    def result_vars(self, scenario: Scenario) -> list[str]:
        """Variables made by a call of this path and consumed by none (or kept whole, see
        `Scenario.always_result`): what RESULT collects."""
        return [v.name for v in self.state.vars.values()
                if (not v.consumers or scenario.always_result(v)) and scenario.is_result(v)]


@dataclass
class Program:
    scenario: Scenario
    initial: State  # the state before the first call (for the translator's introduction)
    prefix: list[Call]
    then: Path  # the straight-line program when there is no branch
    orelse: Path | None = None
    condition: Condition | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def has_branch(self) -> bool:
        return self.orelse is not None

    @property
    def all_calls(self) -> list[Call]:
        """Every call site, in program text order."""
        return self.prefix + self.then.calls + (self.orelse.calls if self.orelse else [])

    def paths(self) -> list[list[Call]]:
        paths = [self.prefix + self.then.calls]
        if self.orelse:
            paths.append(self.prefix + self.orelse.calls)
        return paths

    # ---------------------------------------------------------------------------------------- setup block

    def declarations(self) -> State:
        """One state holding every variable declared in the setup block by any path (weights solved on the way)."""
        merged = self.then.state.branch_copy()
        if self.orelse:
            for name in self.orelse.state.inits:
                if name not in merged.inits:
                    merged.inits.append(name)
                    merged.vars[name] = self.orelse.state.vars[name]
            merged.assets.update(self.orelse.state.assets)
        return merged

    def constants(self, flipped: bool = False) -> dict:
        if not self.condition:
            return {}
        return {COND: self.condition.flipped if flipped else self.condition.value}

    # ------------------------------------------------------------------------------------------- the code

    def reference_code(self) -> str:
        """The program body that runs after the setup block (the reference solution)."""
        lines = [c.code for c in self.prefix]
        if not self.orelse:
            lines += [c.code for c in self.then.calls]
            lines.append(_result_line(self.then.result_vars(self.scenario)))
            return "\n".join(lines) + "\n"
        cond = self.condition
        lines.append(f"if {cond.left} {cond.op} {COND}:")
        for path in (self.then, self.orelse):
            body = [c.code for c in path.calls] + [_result_line(path.result_vars(self.scenario))]
            lines.append(textwrap.indent("\n".join(body), "    "))
            if path is self.then:
                lines.append("else:")
        return "\n".join(lines) + "\n"

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


def generate_program(
    scenario: Scenario,
    rng: random.Random,
    recorder: CoverageRecorder,
    calls_per_path: int = 5,
    branch_probability: float = 0.5,
    guided: bool = True,
) -> Program:
    state = scenario.initial_state(rng)
    initial = state.branch_copy()
    site = rng.randint(1, calls_per_path - 1) if rng.random() < branch_probability else 0
    prefix = [step(scenario, state, recorder, rng, guided) for _ in range(site or calls_per_path)]
    notes: list[str] = []
    condition = None
    while site:  # no condition fits the newest value: move the split one call later, while a call is left after it
        last = prefix[-1].outputs[-1]
        condition = scenario.condition(state, state.vars[last], rng)
        if condition is not None or len(prefix) >= calls_per_path - 1:
            break
        prefix.append(step(scenario, state, recorder, rng, guided))
    if site and condition is None:
        notes.append(f"no condition fits `{prefix[-1].outputs[-1]}`; the program has no branch")
    if not condition:
        prefix += [step(scenario, state, recorder, rng, guided) for _ in range(calls_per_path - len(prefix))]
        return Program(scenario, initial, prefix, Path([], state), notes=notes)

    remaining = calls_per_path - len(prefix)
    branches = []
    for _ in range(2):
        twin = state.branch_copy()
        branches.append(Path([step(scenario, twin, recorder, rng, guided) for _ in range(remaining)], twin))
    if condition.flipped is None:
        notes.append(f"the else branch is dead ({condition.dead_reason}); only the original test case is kept")
    return Program(scenario, initial, prefix, branches[0], branches[1], condition, notes)
