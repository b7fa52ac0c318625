"""The program interface: everything the build asks of a program it may keep (docs/architecture.md, "The program
interface").

Two kinds implement it: the paper tier's `builder.program.Program` (fuzzed calls, if/else splits on constants) and
the frontier tier's `builder.frontier.FrontierProgram` (a scenario's grammar steps, control flow driven by what the
world holds). The pipeline, the fact check, the translators, mutation analysis and the fresh-split filter call only
what is declared here, so a new kind of program is a new subclass, not a branch in each of them. What every program
must provide is abstract; an optional ability has a default that says what the build does without it.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import NamedTuple

from builder.config import BuildConfig
from builder.facts import Fact
from core.records import TestCase
from scenarios.base import Scenario, State, canonical_json


class Rendered(NamedTuple):
    """One variant's text, and the phrase it uses for every variable (checked against the facts)."""

    text: str
    refs: dict[str, str]


class OwnMutant(NamedTuple):
    """A mutant a program makes by its own operators (`BaseProgram.mutants`)."""

    operator: str
    change: str  # the first line it changes, "before -> after"
    code: str
    # For a mutant that changes RESULT alone: the positions, in the reference's RESULT, of the items it lists (its
    # outputs are then read off the reference's without a run); None otherwise.
    result_items: tuple[int, ...] | None


class BaseProgram(ABC):
    """A program the builder can turn into a task: its reference code, its test inputs, its instruction in each
    variant, the facts its oracle depends on, its mutants and the numbers its task record holds.

    Besides the methods below, a program has `scenario` (the `scenarios.base.Scenario` it calls), `notes` (a list
    of strings, joined into the record's `notes`) and `tier` (`PAPER` or `FRONTIER`, a class attribute: which
    documentation its task shows)."""

    scenario: Scenario
    notes: list[str]
    tier: str

    # ------------------------------------------------------------------------------- what every program provides

    @abstractmethod
    def reference_code(self) -> str:
        """The program body that runs after the setup block: the reference solution, setting `RESULT`."""

    @abstractmethod
    def test_cases(self, config: BuildConfig, index: int) -> list[TestCase]:
        """The task's test inputs, each with the setup block and stored values it runs on; their expected outputs
        are filled later, from runs of the reference (`builder/oracles.py`). `index` is the program's number in its
        scenario: random draws come from `builder.config.rng_for(config, scenario name, index, purpose)`, so the
        same seed gives the same inputs. The first one's setup block is the one the model is shown."""

    @abstractmethod
    def render(self, variant: str, rng: random.Random) -> Rendered:
        """The instruction in `variant` (one of `scenarios.base.VARIANTS`, already checked), worded with `rng`,
        and the phrase it uses for each variable, which the fact check reads it with."""

    @abstractmethod
    def required_facts(self) -> list[Fact]:
        """Every fact the oracle depends on (`builder/facts.py`), from the program alone: an instruction that leaves
        one out drops the task."""

    @abstractmethod
    def path_depth(self) -> int:
        """The longest chain of data-dependent calls (Table I)."""

    @abstractmethod
    def binding_count(self) -> int:
        """Values one call's output carries into another call's input (Table I)."""

    # ------------------------------------------------------------------------------------- optional abilities

    has_branch: bool = False  # an if/else on a constant: test inputs take different paths (`path_probe`)

    def path_probe(self) -> str:
        """For a program with `has_branch`: the program with each path's RESULT replaced by that path's label, run
        on every input to read which path it takes (`TestCase.branch`). Without a branch every input's path is
        "main" and this is never called."""
        raise NotImplementedError(f"{type(self).__name__} has a branch but no path_probe")

    def probe_cases(self, config: BuildConfig, index: int) -> list[TestCase]:
        """`config.probes` more inputs of fresh values, on which mutation analysis runs the mutants that survive the
        test cases (a probe that kills one joins the test cases). Default: none, so a survivor stays one."""
        return []

    def unfit(self, config: BuildConfig) -> str | None:
        """Why this program makes no task under `config` (counted in the build report), or None (the default)."""
        return None

    def mutants(self) -> list[OwnMutant] | None:
        """The program's own mutants, each distinct and none equal to the reference; a mutant whose operator is in
        `scenarios.grammar.MUST_KILL` must be killed or the task is dropped. None (the default): the generic
        operators of `builder/mutate.py` mutate `reference_code()` (a dropped or skipped call, another API, an
        argument, a variable of the same type, a condition, a RESULT item), with `variable_types`,
        `setup_variables` and the scenario's `confusions`, `commuting` and `vocabulary`."""
        return None

    def variable_types(self) -> dict[str, str]:
        """For the generic mutants: each variable's type tag (`scenarios.base.Var.type`), so that a variable is
        replaced only by another of its type and a skipped call's value faked by an input of its type. Default:
        none known, so no variable mutant, and a skipped call faked only by the status a write answers."""
        return {}

    def setup_variables(self) -> list[str]:
        """For the generic mutants: the variables the setup block declares, in scope from the first line."""
        return []

    # Whether its mutants may run as one program, each in a fresh copy of the setup's namespace, where the scenario
    # allows it (`Scenario.shared_runs`); False when what a run makes (a model, an optimizer) is not copied.
    shared_runs: bool = True

    def static_calls(self) -> list[str]:
        """The API of each call statement of the reference, in program text order; [] (the default) when a
        statement may make many calls (a loop, pages), so that a statement's text, not its API, keys it (the fresh
        split's call-sequence overlap, `builder/fresh.py`)."""
        return []

    def recorded_calls(self, case: TestCase) -> list[str]:
        """The task record's `api_calls`: by default `static_calls()`; a program whose statements make many calls
        lists what the reference called on `case` (the original input), its oracle already captured."""
        return self.static_calls()

    def api_doc(self) -> str:
        """The documentation its task shows: the scenario's, on the program's tier."""
        return self.scenario.api_doc(self.tier)

    def enriched_doc(self) -> str:
        """The same documentation with what a running instance of the service showed added (`api_doc_enriched`)."""
        return self.scenario.enriched_doc(self.tier)

    def levers(self) -> list[str]:
        """What the program must get right beyond its calls (pagination, versions, loops, ...), sorted: the task
        record's `levers`. Default: none."""
        return []


def make_case(scenario: Scenario, name: str, state: State, constants: dict, branch: str = "main") -> TestCase:
    """A test case of `state`'s stored values and the split constants `constants`, on the path labelled `branch`
    (a program with `has_branch` has it read off a run of its path probe); its oracle is filled later."""
    return TestCase(name, branch, canonical_json(constants), scenario.setup_code(state, constants),
                    [a.to_record() for a in state.assets.values()])
