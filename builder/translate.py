"""The offline template translator: step-by-step instructions from which a reader can rebuild the program.

Wording comes from each API's phrase list (owned by the scenario) and from the connectors below, drawn with the
task's own random generator, so the same seed gives the same text and different seeds vary it. Stored initial
values are never quoted: variables are named, and the branch condition names the constant `COND`.
"""

from __future__ import annotations

import random

from builder.program import COND, Path, Program
from scenarios.base import Call

NAME = "template"

OPENERS = ("First,", "To start,", "To begin,")
CONNECTORS = ("Then", "Next,", "After that,", "Now", "")
RESULT_PHRASES = (
    "set `RESULT` to the list {names}, in this order",
    "store {names} (in that order) in a list named `RESULT`",
    "assign `RESULT = [{bare}]`",
)
BRANCH_PHRASES = (
    "Check whether {cond}.",
    "Now branch on whether {cond}.",
    "Test whether {cond}.",
)


def _label(k: int) -> str:
    """a, b, ..., z, aa, ab, ... for the steps inside a branch."""
    return (_label(k // 26 - 1) if k >= 26 else "") + chr(ord("a") + k % 26)


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


VARIANTS = ("precise", "vague")

VAGUE_OPENERS = (
    "Using {apis}, compute the following.",
    "The job calls for {apis}.",
    "Work with {apis} to get the result described here.",
)
VAGUE_RESULTS = (
    "in the end, `RESULT` must be a list of {count}: {values}, in this order.",
    "the expected outcome is `RESULT`, a list of {count}: {values} (in that order).",
)


class TemplateTranslator:
    """Offline instructions in two variants: `precise` (every call, parameter and data flow) and `vague`
    (the intent and the expected outcome only: which inputs and APIs, what RESULT must hold)."""

    name = NAME

    def translate(self, program: Program, rng: random.Random, variant: str = "precise") -> str:
        if variant == "vague":
            return self._vague(program, rng)
        return self._precise(program, rng)

    def _vague(self, program: Program, rng: random.Random) -> str:
        scenario = program.scenario
        names = list(dict.fromkeys(c.api for c in program.all_calls))
        apis = ", ".join(f"`{n}`" for n in names[:-1]) + (" and " if len(names) > 1 else "") + f"`{names[-1]}`"

        def outcome(path: Path) -> str:
            results = [path.state.vars[n] for n in path.result_vars(scenario)]
            if not results:
                return "`RESULT` must be an empty list."
            if len(results) == 1:
                return f"`RESULT` must be a list holding one value: {scenario.describe_value(results[0])}."
            values = "; ".join(scenario.describe_value(v) for v in results)
            count = f"{len(results)} value" + ("s" if len(results) > 1 else "")
            return rng.choice(VAGUE_RESULTS).format(count=count, values=values)

        lines = [scenario.describe_init(program.declarations()), rng.choice(VAGUE_OPENERS).format(apis=apis)]
        if not program.orelse:
            lines.append(_sentence(outcome(program.then)))
            return "\n".join(lines)
        var = program.prefix[-1].outputs[-1]
        cond = program.condition.phrase.replace(COND, f"`{COND}`")
        lines.append(f"First compute `{var}` with `{program.prefix[-1].api}`; what follows depends on whether {cond}.")
        lines.append("If so: " + outcome(program.then))
        lines.append("Otherwise: " + outcome(program.orelse))
        lines.append(f"Use the name `{COND}` in the condition, not its current value.")
        return "\n".join(lines)

    def _precise(self, program: Program, rng: random.Random) -> str:
        scenario = program.scenario
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

        lines = [scenario.describe_init(program.declarations())]
        number = 0
        for i, call in enumerate(program.prefix):
            number += 1
            lead = rng.choice(OPENERS) if i == 0 else rng.choice(CONNECTORS)
            lines.append(f"{number}. " + _sentence(f"{lead} {say(call)}"))

        if not program.orelse:
            for call in program.then.calls:
                number += 1
                lines.append(f"{number}. " + _sentence(f"{rng.choice(CONNECTORS)} {say(call)}"))
            lines.append(f"{number + 1}. " + _sentence(f"Finally, {result(program.then)}"))
            return "\n".join(lines)

        cond = program.condition.phrase.replace(COND, f"`{COND}`")
        lines.append(f"{number + 1}. " + rng.choice(BRANCH_PHRASES).format(cond=cond))
        for label, path in (("If so:", program.then), ("Otherwise:", program.orelse)):
            lines.append(f"   {label}")
            steps = [say(c) for c in path.calls] + [result(path)]
            for k, text in enumerate(steps):
                lines.append(f"   {_label(k)}. " + _sentence(text))
        lines.append(f"Use the name `{COND}` in the condition, not its current value.")
        return "\n".join(lines)


def mentions(instruction: str, names) -> list[str]:
    """Variable names the instruction fails to mention (used by tests and filters)."""
    return [n for n in names if f"`{n}`" not in instruction]

