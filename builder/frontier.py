"""The frontier tier's programs: a scenario's steps of the frontier grammar (`scenarios/grammar.py`), put together
into one program of the program interface (`builder/base.py`).

A `FrontierProgram` stands where a `builder.program.Program` stands: it gives the reference code, its test inputs
(one population per profile, drawn afresh), its instruction in each variant (`render`), the facts the oracle
depends on (`required_facts`), its mutants (`mutants`: each construct's own, plus dropped and swapped RESULT
items and another collection), and the numbers of Table I. It has no if/else on a constant: its control flow is
driven by what the world holds, so every test input takes the path the data sends it on (`branch` "main"). Its
loops and pages make many calls per statement, so its record lists the calls the reference made on the original
input (`recorded_calls`), and it names what it must get right (`levers`).
"""

from __future__ import annotations

import ast
import json
import random
from dataclasses import dataclass, field

from builder.base import BaseProgram, OwnMutant, Rendered, make_case
from builder.config import BuildConfig, rng_for
from builder.facts import Fact
from builder.translate import PROSE_RESULTS, PROSE_RESULT_ONE, _sentence
from core.records import TestCase
from scenarios.base import FRONTIER, Call, State, join_words
from scenarios.grammar import Mutation, Plan, Result

RESULT_STEPS = ("set `RESULT` to the list of {items}, in this order",
                "finish by assigning `RESULT` the list of {items}, in that order")


@dataclass
class FrontierProgram(BaseProgram):
    plan: Plan
    notes: list[str] = field(default_factory=list)

    tier = FRONTIER
    shared_runs = False  # its objects (a model, an optimizer) are not copied between runs: each mutant runs alone

    @property
    def scenario(self):
        return self.plan.scenario

    @property
    def results(self) -> list[Result]:
        return [r for step in self.plan.steps for r in step.results]

    # ------------------------------------------------------------------------------------------ test inputs

    def population(self, profile: str, rng: random.Random) -> State:
        return self.plan.population(rng, profile)

    def test_cases(self, config: BuildConfig, index: int) -> list[TestCase]:
        """One population per profile of the plan, each drawn afresh."""
        return [self._population_case(profile, rng_for(config, self.scenario.name, index, f"world-{profile}"),
                                      profile) for profile in self.plan.profiles]

    def probe_cases(self, config: BuildConfig, index: int) -> list[TestCase]:
        """`config.probes` more populations, of the profiles after the first in turn."""
        profiles = self.plan.profiles
        return [self._population_case(profiles[1 + k % (len(profiles) - 1)],
                                      rng_for(config, self.scenario.name, index, f"probe-{k}"), f"probe-{k + 1}")
                for k in range(config.probes)]

    def _population_case(self, profile: str, rng: random.Random, name: str) -> TestCase:
        return make_case(self.scenario, name, self.population(profile, rng), {})

    # ------------------------------------------------------------------------------------------------ code

    def reference_code(self) -> str:
        body = self.plan.preamble + "".join(step.code for step in self.plan.steps)
        return body + f"RESULT = [{', '.join(r.expr for r in self.results)}]\n"

    @property
    def all_calls(self) -> list[Call]:
        return [c for step in self.plan.steps for c in step.calls]

    def paths(self) -> list[list[Call]]:
        return [self.all_calls]

    def recorded_calls(self, case: TestCase) -> list[str]:
        """What the reference called on `case`, loops and pages unrolled (its trace)."""
        return [c["api"] for c in json.loads(case.trace)["calls"]]

    def levers(self) -> list[str]:
        """What the program must get right, over its steps: pagination, versions, lookups, loops, ..."""
        return sorted({lever for step in self.plan.steps for lever in step.levers})

    def constructs(self) -> list[str]:
        return [step.kind for step in self.plan.steps]

    def path_depth(self) -> int:
        """The longest chain of values carried from one answer into a later request (static, over call sites)."""
        depth: dict[str, int] = {}
        best = 0
        for c in self.all_calls:
            d = 1 + max((depth.get(v, 0) for v in c.inputs), default=0)
            for out in c.outputs:
                depth[out] = max(depth.get(out, 0), d)
            best = max(best, d)
        return best

    def binding_count(self) -> int:
        """Values an answer carries into a later request: each a variable a call makes and another call reads,
        counted as the fields read (a session's id, version and data are three), plus the paging cursor."""
        produced = {o for c in self.all_calls for o in c.outputs}
        consumed = {i for c in self.all_calls for i in c.inputs}
        return len(produced & consumed) + 1

    # ------------------------------------------------------------------------------------------- wording

    def render(self, variant: str, rng: random.Random) -> Rendered:
        refs = {r.expr: r.phrases[variant] for r in self.results}
        lines = [self.plan.intro[variant]]
        sentences = [s for step in self.plan.steps for s in step.texts[variant]]
        items = [r.phrases[variant] for r in self.results]
        listed = join_words(items)
        if variant == "steps":
            sentences.append(_sentence("Finally, " + rng.choice(RESULT_STEPS).format(items=listed)))
            lines += [f"{k}. {s}" for k, s in enumerate(sentences, 1)]
        else:
            if len(items) == 1:
                end = rng.choice(PROSE_RESULT_ONE).format(item=listed)
            else:
                end = rng.choice(PROSE_RESULTS).format(items=listed)
            lines.append(" ".join(sentences + [_sentence(end)]))
        return Rendered("\n".join(lines), refs)

    def required_facts(self) -> list[Fact]:
        out, seen = [], set()
        for step in self.plan.steps:
            for kind, what, forms in step.facts:
                if kind == "input":
                    if what in seen:
                        continue
                    seen.add(what)
                out.append(Fact(kind, what, forms))
        out.append(Fact("result", "RESULT", (), tuple(r.expr for r in self.results)))
        return out

    # ------------------------------------------------------------------------------------------- mutants

    def mutations(self) -> list[Mutation]:
        """Each construct's own mutations, then RESULT items dropped or swapped, then the scenario's other literals."""
        out = list(self.plan.preamble_mutations) + [m for step in self.plan.steps for m in step.mutations]
        exprs = [r.expr for r in self.results]
        line = f"RESULT = [{', '.join(exprs)}]\n"
        for j in range(len(exprs)):
            out.append(Mutation("result", line, f"RESULT = [{', '.join(exprs[:j] + exprs[j + 1:])}]\n"))
        for j in range(len(exprs) - 1):
            swapped = exprs[:j] + [exprs[j + 1], exprs[j]] + exprs[j + 2:]
            out.append(Mutation("result", line, f"RESULT = [{', '.join(swapped)}]\n"))
        return out + list(self.plan.literal_mutations)

    def mutants(self) -> list[OwnMutant]:
        """Every distinct mutant of `mutations()`; the RESULT items only for a mutant that changes RESULT alone."""
        reference = self.reference_code()
        exprs = [r.expr for r in self.results]
        out, seen = [], {reference}
        for m in self.mutations():
            found = reference.count(m.before)
            if not found:  # a mutation of something this program does not have (no field of that kind read)
                continue
            if found > 1 and not m.every:
                self.notes.append(f"mutation {m.operator} skipped: its text is not unique")
                continue
            code = reference.replace(m.before, m.after)
            if code in seen:
                continue
            ast.parse(code)  # a construct's mutation must stay a program
            seen.add(code)
            items = None
            if m.operator == "result":
                after = m.after.strip()[len("RESULT = ["):-1]
                items = tuple(exprs.index(e.strip()) for e in after.split(", ")) if after else ()
            change = _change(reference, code)
            out.append(OwnMutant(m.operator, change, code, items))
        return out


def _change(reference: str, code: str) -> str:
    """The first line a mutant changes, "before -> after"."""
    for a, b in zip(reference.splitlines() + [""], code.splitlines() + [""]):
        if a != b:
            return f"{a.strip() or '(end)'} -> {b.strip() or '(removed)'}"
    return "(unchanged)"


def generate(scenario, rng: random.Random) -> FrontierProgram:
    plan = scenario.frontier_plan(rng)
    return FrontierProgram(plan)
