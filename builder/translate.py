"""The offline template translator, and the wording the program kinds share: each program words itself in the
three instruction variants (`BaseProgram.render`: the paper's in `builder/program.py`, the frontier's in
`builder/frontier.py`) from the phrase tables below.

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
from typing import NamedTuple

from builder.base import BaseProgram, Rendered
from scenarios.base import VARIANTS


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


class Item(NamedTuple):
    """One task to translate, as every translator receives it."""

    key: str  # the task id
    setup: str  # the setup block of its first test case
    program: BaseProgram
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


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith((".", ":")) else ".")


class TemplateTranslator:
    """Offline instructions in the three variants (see the module docstring)."""

    def translate_all(self, items: list[Item]) -> dict[tuple[str, str], Translation]:
        out = {}
        for item in items:
            for variant in VARIANTS:
                text, refs = self.translate(item.program, item.rngs[variant], variant)
                out[(item.key, variant)] = Translation(text, 0, "template", refs)
        return out

    def translate(self, program: BaseProgram, rng: random.Random, variant: str = "natural") -> Rendered:
        if variant not in VARIANTS:
            raise ValueError(f"unknown instruction variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        return program.render(variant, rng)
