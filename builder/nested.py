"""The template translator for programs whose if/else splits nest (`--branches` above 1).

`builder/translate.py` words a program with at most one split on `COND`; a program with several splits, each on
its own constant (`COND1`, `COND2`, ...), is worded here in the same style and from the same phrases: numbered
steps up to the first split, then each side's steps lettered under "If so:" / "Otherwise:", a side that splits
again indented one level further (steps numbered i, ii, ... there), and every side ending in its `RESULT`.
Programs the base translator can word (one split on `COND`, or none) go to it unchanged, so a build with
`--branches 1` words every task exactly as before.
"""

from __future__ import annotations

import random

from builder.program import COND, Path, Program, Split
from builder.translate import (
    BRANCH_PHRASES, CONNECTORS, OPENERS, RESULT_PHRASES, VAGUE_OPENERS, VAGUE_RESULTS, TemplateTranslator, _label,
    _sentence,
)
from scenarios.base import Call, join_names

ROMAN = (("x", 10), ("ix", 9), ("v", 5), ("iv", 4), ("i", 1))


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


def _names_rule(program: Program) -> str:
    names = [s.name for s in program.splits()]
    return f"Use the names {join_names(names)} in the conditions, not their current values."


class NestedTemplateTranslator(TemplateTranslator):
    """The template translator, extended to nested splits (see the module docstring)."""

    def translate(self, program: Program, rng: random.Random, variant: str = "precise") -> str:
        if program.cond_name == COND:  # at most one split, on COND: the base translator's case
            return super().translate(program, rng, variant)
        if variant == "vague":
            return self._nested_vague(program, rng)
        return self._nested_precise(program, rng)

    def _nested_precise(self, program: Program, rng: random.Random) -> str:
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

        for i, call in enumerate(program.prefix):
            lead = rng.choice(OPENERS) if i == 0 else rng.choice(CONNECTORS)
            lines.append(f"{i + 1}. " + _sentence(f"{lead} {say(call)}"))
        top = program.root().split
        lines.append(f"{len(program.prefix) + 1}. " + rng.choice(BRANCH_PHRASES).format(cond=_condition(top)))
        sides(top, "   ", 1)
        lines.append(_names_rule(program))
        return "\n".join(lines)

    def _nested_vague(self, program: Program, rng: random.Random) -> str:
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
            return _sentence(rng.choice(VAGUE_RESULTS).format(count=count, values=values))

        def fork(calls: list[Call], split: Split) -> str:
            last = calls[-1]
            return (f"compute `{last.outputs[-1]}` with `{last.api}`; what follows depends on whether "
                    f"{_condition(split)}. If so: {side(split.then)} Otherwise: {side(split.orelse)}")

        def side(path: Path) -> str:
            return _sentence(fork(path.calls, path.split)) if path.split else outcome(path)

        lines = [scenario.describe_init(program.declarations()), rng.choice(VAGUE_OPENERS).format(apis=apis)]
        lines.append(_sentence("first " + fork(program.prefix, program.root().split)))
        lines.append(_names_rule(program))
        return "\n".join(lines)
