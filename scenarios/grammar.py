"""The frontier grammar's plain parts: what a scenario hands the builder to make a program that reads the world.

A frontier program (docs/tasks.md, "The frontier tier") is a short sequence of *steps*, each one construct of the grammar:

* `lookup`: find one entity by a property a user would know (a title, the newest of an owner, the most members,
  a tie broken by a stated rule), reading every page of a listing;
* `loop`: for every entity of a collection that satisfies a predicate, a body of one to three calls, results
  collected in order;
* `aggregate`: a count, sum, minimum or maximum over a collection, read after the writes before it;
* `recovery`: a write that the world may refuse (a stale version, a missing entity), with the documented remedy
  (re-read and retry once, create instead, skip);
* `bulk`: one call that acts on everything a filter matches.

The scenario writes each step whole: its code, its wording in every instruction variant, the facts its oracle
depends on, and its own mutations (the ways a program gets that construct wrong: only the first page, only the
first match, the other tie-break, no retry, a retry on stale data, ...); a recovery's mutations include one for
each of its branches (`BRANCHES`: the first try succeeds, it is refused and the recovery runs), so that a task
whose test inputs all take one branch is found like a task that leaves a construct unexercised. The builder
(`builder/frontier.py`) puts the steps together, adds the RESULT line, and runs the same pipeline as for the
paper's tier. The test inputs
are populations: `Plan.population(rng, profile)` draws a world of the schema the steps need, shaped by a profile
(collection sizes 0, 1, a page, a page + 1, more than the largest page; the sought entity late; ties).

Kept free of builder imports (the dependency runs builder -> scenarios).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from scenarios.base import Call, Scenario, State

CONSTRUCTS = ("lookup", "loop", "aggregate", "recovery", "bulk")

# Mutation operators of the frontier grammar, each a way of getting one construct wrong. A survivor of one of these
# means the test inputs do not exercise what the task claims to test: the build drops the task (`MUST_KILL`).
OPERATORS = {
    "first_page": "reads only the first page of a listing",
    "last_page": "drops the last page of a listing (a loop bound off by one)",
    "one_big_page": "asks for the largest page and reads no further",
    "first_match": "acts on the first match only (or takes the oldest where the newest is asked)",
    "tie_break": "breaks a tie the other way",
    "wrong_item": "takes another item of a list than the one asked for (the last for the first)",
    "predicate": "tests another predicate or field",
    "aggregate": "computes another aggregate",
    "stale_version": "writes with a version it read before a change",
    "stale_data": "writes back data it read before a change",
    "no_retry": "does not retry a write refused as stale",
    "first_try": "gets a write wrong where its first try succeeds (right only through the recovery after a refusal)",
    "retry_stale": "retries a refused write without reading the entity again",
    "never_create": "does not create the entity when it is missing",
    "always_create": "creates the entity even when it exists",
    "drop_write": "leaves out a write",
    "collect_all": "collects every item, not only those the body changed",
    "missing_field": "reads a field that some records lack as if every record had it",
    "null_field": "reads a field that some records hold as null as if it held a value",
    "exact_case": "compares exactly values that the world compares ignoring case (e-mail addresses)",
    "refused_write": "counts a write that the service refused (409) as done",
    "static_tally": "decides on a quantity read once, before its own writes moved it, where the task asks for it as it "
                    "stands at each decision",
    # the state hazards of PyTorch (the tensor scenario's frontier tier)
    "no_zero_grad": "does not clear gradients between backward passes (they accumulate)",
    "wrong_mode": "runs a forward pass in the other mode (training for evaluation, or evaluation for training)",
    "no_restore": "leaves a mode it switched to (evaluation) without switching back",
    "no_no_grad": "changes a parameter in place where autograd records it (outside torch.no_grad())",
    "no_clone": "keeps a view where a copy is asked for, or changes a copy where the change must reach the original",
    "step_order": "calls the optimizer's step (or clips) before the gradients it should use exist",
}
MUST_KILL = frozenset(OPERATORS)
# The branches of a recovery, each named by the operator whose mutant only an input that takes that branch kills:
# a recovery declares one such mutation for each of its branches, so that the build's mutation analysis checks
# that every branch is taken by some test case (a survivor drops the task as `uncovered_branch`), as it checks
# that every construct is exercised.
BRANCHES = {
    "first_try": "the first try succeeds",
    "no_retry": "the first try is refused and the recovery runs",
    "never_create": "the entity is missing and is created",
    "always_create": "the entity is there and is used",
}


@dataclass(frozen=True)
class Mutation:
    """One construct-level mutant: the program with `before` (text that occurs exactly once) replaced by `after`."""

    operator: str  # a key of OPERATORS, or "argument" (another literal: a type, a field), not required to die
    before: str
    after: str
    every: bool = False  # replace every occurrence of `before` (which then need not be unique)


@dataclass(frozen=True)
class Result:
    """One item of RESULT: the expression the reference puts there, and how each variant names it."""

    expr: str
    phrases: dict[str, str]  # variant -> phrase ("the id of the found session")


@dataclass
class Step:
    kind: str  # one of CONSTRUCTS
    code: str  # the step's lines, top level, ending with a newline
    texts: dict[str, list[str]]  # variant -> its sentences (steps: one numbered line each)
    facts: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)  # (kind, what, forms) as in facts.py
    mutations: list[Mutation] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)  # the API call sites, with the variables they read and make
    # what makes it hard: pagination, versions, lookups, loops, aggregates, recovery, feedback (a decision on a
    # quantity the program's own earlier writes moved)
    levers: tuple[str, ...] = ()


@dataclass
class Plan:
    """What a scenario's frontier grammar draws for one program."""

    scenario: Scenario
    preamble: str  # helper code every step may use (a paging helper), before the steps
    preamble_mutations: list[Mutation]
    steps: list[Step]
    population: Callable[[random.Random, str], State]  # (rng, profile) -> the setup's variables and stored world
    profiles: tuple[str, ...]  # the test inputs' profiles, the first being the original's
    intro: dict[str, str]  # variant -> the sentence that says what the setup block defines
    # Other literals a program could get wrong (another collection in a URL), tried after the constructs' own
    # mutations and RESULT's; not required to die.
    literal_mutations: list[Mutation] = field(default_factory=list)
