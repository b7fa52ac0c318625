"""The program interface (builder/base.py): a kind of program that implements only what it must goes through the
build's steps (translation and the fact check, the leak filter, oracle capture, mutation analysis, the record) with
no step asking which kind it is."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from builder.base import BaseProgram, Rendered, make_case
from builder.config import BuildConfig, rng_for
from builder.draft import Draft
from builder.facts import Fact
from builder.frontier import FrontierProgram
from builder.mutate import analyse_mutants, mutants
from builder.pipeline import capture_oracles, filter_leaks, to_record, translate
from builder.program import Program
from core.sandbox.harness import Limits, Sandbox
from scenarios import get_scenario
from scenarios.base import PAPER


class Deposit(BaseProgram):
    """A third kind of program, as small as the interface allows: one deposit into the bank's first account."""

    tier = PAPER

    def __init__(self, amount: int):
        self.scenario, self.notes, self.amount = get_scenario("bank"), [], amount

    def reference_code(self) -> str:
        return f"b1 = bank.deposit(acct1, {self.amount})\nRESULT = [b1]\n"

    def test_cases(self, config: BuildConfig, index: int) -> list:
        state = self.scenario.initial_state(rng_for(config, self.scenario.name, index, "accounts"))
        redrawn = self.scenario.redraw(state, rng_for(config, self.scenario.name, index, "redraw"))
        return [make_case(self.scenario, "original", state, {}), make_case(self.scenario, "redrawn-1", redrawn, {})]

    def render(self, variant: str, rng: random.Random) -> Rendered:
        return Rendered(f"Deposit {self.amount} into `acct1`. Put the new balance alone in the list `RESULT`.",
                        {"b1": "the new balance"})

    def required_facts(self) -> list[Fact]:
        return [Fact("input", "the setup variable `acct1`", ("`acct1`",)),
                Fact("value", "deposit: amount", (str(self.amount),)), Fact("result", "RESULT", (), ("b1",))]

    def path_depth(self) -> int:
        return 1

    def binding_count(self) -> int:
        return 0


class Vague(Deposit):
    """The same program worded without its amount: the fact check drops it."""

    def render(self, variant: str, rng: random.Random) -> Rendered:
        return Rendered("Deposit some money into `acct1`. Put the new balance alone in the list `RESULT`.",
                        {"b1": "the new balance"})


CONFIG = BuildConfig(scenarios=["bank"], n=1, seed=0, created_at="2026-01-01", mutants=16, probes=2)


def test_both_kinds_of_the_build_implement_the_interface():
    assert issubclass(Program, BaseProgram) and issubclass(FrontierProgram, BaseProgram)


def test_a_program_with_no_operators_of_its_own_gets_the_generic_mutants():
    ms = mutants(Deposit(7), 100, random.Random(0))
    # No variable types known: no variable swapped in, and no call skipped with an input standing in for it.
    assert {m.operator for m in ms} == {"drop_call", "other_api", "argument", "swap_args", "result"}
    assert all(m.code != Deposit(7).reference_code() for m in ms)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=1, limits=Limits(timeout_s=20)) as sb:
        yield sb


def test_a_third_kind_of_program_goes_through_every_step_by_the_interface_alone(sandbox):
    rejections: Counter = Counter()
    kept = Deposit(7)
    drafts = [Draft(f"bank-{i:04d}", "bank", p, index=i, cases=p.test_cases(CONFIG, i))
              for i, p in enumerate((kept, Vague(8)))]
    drafts = filter_leaks(translate(CONFIG, drafts, rejections), rejections)
    assert [d.program for d in drafts] == [kept]  # the text that leaves the amount out is dropped, and counted
    assert rejections == {"bank: natural translation leaves out a fact the oracle checks": 1}
    drafts = analyse_mutants(capture_oracles(drafts, sandbox, rejections), sandbox, CONFIG, rejections)
    assert len(drafts) == 1 and len(rejections) == 1
    d = drafts[0]
    assert [c.expected_result is not None and c.branch == "main" for c in d.cases] == [True, True]
    assert d.mutation["mutants"] == d.mutation["killed"] > 0
    record = to_record(d, CONFIG)
    assert record.reference_program == kept.reference_code() and "deposit: amount: 7" in record.facts
    assert (record.api_calls, record.levers, record.has_branch) == ([], [], False)
    assert record.api_doc == get_scenario("bank").api_doc(PAPER) and record.instruction.startswith("Deposit 7")
