"""The offline template translator: the three instruction variants of a program, worded from phrase tables.

Variants differ in abstraction, never in information (`builder/facts.py` checks that each states every fact the
oracle depends on):

* `natural` (the default): as a developer asks an assistant. Each call is said with its non-default values and
  no output name; a later call refers to an output by what it is ("the convolved tensor", "the id of the new
  session"), counted when the API is called more than once ("the second convolved tensor"). Simple calls may
  share a sentence. No numbered steps.
* `steps`: numbered pseudo-code that dictates every call, parameter and intermediate name (the easy tier).
* `vague`: the intent and every value, without API names, parameter names or endpoints; the reader finds the
  mechanics in the documentation.

Wording comes from each API's phrase lists (owned by the scenario) and the connectors below, drawn with the
task's own random generator, so the same seed gives the same text and different seeds vary it. Stored initial
values are never quoted: setup variables are named, and a branch condition names its constant (`COND`, or
`COND1`, `COND2`, ... when a program has several splits).
"""

from __future__ import annotations

import random
import re
from typing import NamedTuple

from builder.program import COND, Path, Program, Split
from scenarios.base import VARIANTS, Call, join_names


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
# natural and vague
PROSE_OPENERS = ("First,", "To begin,", "Start like this:", "")
PROSE_CONNECTORS = ("Then", "Next,", "After that,", "")
JOINERS = (", then ", "; after that, ", ", and then ")
PROSE_RESULTS = (
    "`RESULT` should hold {items}, in this order",
    "put {items} in `RESULT`, in that order",
    "finish with `RESULT` holding {items}, in this order",
)
PROSE_RESULT_ONE = (
    "`RESULT` should be a list holding only {item}",
    "put {item} alone in the list `RESULT`",
)
PROSE_EMPTY = ("`RESULT` should be an empty list", "leave `RESULT` as an empty list")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
ROMAN = (("x", 10), ("ix", 9), ("v", 5), ("iv", 4), ("i", 1))


class Rendered(NamedTuple):
    """One variant's text, and the phrase it uses for every variable (checked against the facts)."""

    text: str
    refs: dict[str, str]


class Item(NamedTuple):
    """One task to translate, as every translator receives it."""

    key: str  # the task id
    setup: str  # the setup block of its first test case
    program: Program
    rngs: dict[str, random.Random]  # per variant: the task's own generator for wording (the template's draws)


class Translation(NamedTuple):
    """One task's instruction in one variant, as every translator returns it."""

    instruction: str
    rounds: int  # generator/evaluator rounds (0 for the template)
    verdict: str  # "template" or "OK" when accepted; otherwise the reason the task is dropped
    refs: dict[str, str] | None = None  # how the text names each variable, when the translator knows it


def ordinal(n: int) -> str:
    """first, second, ... tenth, 11th, 12th, ... 21st, ..."""
    if n <= len(ORDINALS):
        return ORDINALS[n - 1]
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


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


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith((".", ":")) else ".")


def _condition(split: Split) -> str:
    return split.condition.phrase.replace(COND, f"`{split.name}`")


def _names_rule(program: Program) -> str:
    names = [s.name for s in program.splits()]
    if len(names) == 1:
        return f"Use the name `{names[0]}` in the condition, not its current value."
    return f"Use the names {join_names(names)} in the conditions, not their current values."


def references(program: Program, variant: str = "natural") -> dict[str, str]:
    """How natural and vague texts name each output: "the " + its API's noun, with an ordinal when its API is
    called more than once on a path through this call (counted along each path, so each side of a split counts on
    from the calls before it)."""
    apis = {a.name: a for a in program.scenario.apis}
    repeated: set[int] = set()  # the calls whose API recurs on some path through them
    for leaf in program.leaves():
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

    walk(program.root(), {})
    return refs


class TemplateTranslator:
    """Offline instructions in the three variants (see the module docstring)."""

    def translate_all(self, items: list[Item]) -> dict[tuple[str, str], Translation]:
        out = {}
        for item in items:
            for variant in VARIANTS:
                text, refs = self.translate(item.program, item.rngs[variant], variant)
                out[(item.key, variant)] = Translation(text, 0, "template", refs)
        return out

    def translate(self, program: Program, rng: random.Random, variant: str = "natural") -> Rendered:
        if hasattr(program, "render"):  # a frontier program words its own steps (builder/frontier.py)
            if variant not in VARIANTS:
                raise ValueError(f"unknown instruction variant {variant!r}; choose one of {', '.join(VARIANTS)}")
            return program.render(variant, rng)
        if variant == "steps":  # names are dictated: every variable is referred to by its name
            return Rendered(self._steps(program, rng), {v: v for c in program.all_calls for v in c.outputs})
        if variant not in VARIANTS:
            raise ValueError(f"unknown instruction variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        refs = references(program, variant)
        return Rendered(self._prose(program, rng, variant, refs), refs)

    # ------------------------------------------------------------------------------------- natural and vague

    def _prose(self, program: Program, rng: random.Random, variant: str, refs: dict[str, str]) -> str:
        scenario = program.scenario
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
            listed = ", ".join(items[:-1]) + " and " + items[-1]
            return _sentence(rng.choice(PROSE_RESULTS).format(items=listed))

        lines = [scenario.describe_init(program.declarations())]

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

        side(program.root(), "", PROSE_OPENERS)
        if program.splits():
            lines.append(_names_rule(program))
        return "\n".join(lines)

    # ------------------------------------------------------------------------------------------------ steps

    def _steps(self, program: Program, rng: random.Random) -> str:
        """Numbered steps up to the first split, then each side's steps lettered under "If so:" / "Otherwise:",
        a side that splits again indented one level further (steps numbered i, ii, ... there)."""
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
        for i, call in enumerate(program.prefix):
            lead = rng.choice(OPENERS) if i == 0 else rng.choice(CONNECTORS)
            lines.append(f"{i + 1}. " + _sentence(f"{lead} {say(call)}"))
        top = program.root()
        if top.split is None:
            number = len(program.prefix)
            for call in top.calls[len(program.prefix):]:
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

        lines.append(f"{len(program.prefix) + 1}. " + rng.choice(BRANCH_PHRASES).format(cond=_condition(top.split)))
        sides(top.split, "   ", 1)
        lines.append(_names_rule(program))
        return "\n".join(lines)
