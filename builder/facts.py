"""The facts a task's oracle depends on, and the check that an instruction states every one of them.

Variants of an instruction differ in abstraction, never in information. Whatever the wording, the text must let a
reader recover:

* every setup variable the program reads (`input`), named as in the setup block;
* every argument value that is not the API's documented default (`value`), in one of the forms its API lists;
* the role of each split's constant (`condition`): the sentence that names `COND` also says how it is compared;
* what `RESULT` holds on every path, in order (`result`).

`required(program)` gives these as each kind of program derives them from itself (`BaseProgram.required_facts`:
the paper program's from its calls, splits and paths, a frontier program's from its steps), so the check does not
trust the translator. `missing` reads a text against them, given how that text refers to each result (`refs`: the
translator reports the phrase it used for every variable; the `steps` variant uses the variable names themselves).
An LLM translator's text is checked the same way for inputs, values and conditions; its evaluator agent is handed
the same fact list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# How a text may state each comparison: one of these in the sentence that names the constant.
RELATIONS = {
    "==": ("is {c}", "equals {c}", "equal to {c}", "exactly {c}", "size {c}", "of {c}", "matches {c}"),
    "!=": ("is not {c}", "differs from {c}", "other than {c}"),
    ">": ("more than {c}", "greater than {c}", "longer than {c}", "larger than {c}", "exceeds {c}", "above {c}"),
    "<": ("less than {c}", "fewer than {c}", "shorter than {c}", "smaller than {c}", "below {c}"),
    ">=": ("at least {c}",),
    "<=": ("at most {c}",),
}
ORDER_WORDS = ("in this order", "in that order", "in order", "followed by", "first", "then", "[")


@dataclass(frozen=True)
class Fact:
    kind: str  # "input", "value", "condition" or "result"
    what: str  # for people and for the evaluator agent, e.g. "split: sizes" or "RESULT on the then path"
    forms: tuple[str, ...] = ()  # input/value: any of these in the text states it; condition: the relation forms
    names: tuple[str, ...] = ()  # condition: the constant; result: the variables RESULT holds, in order

    def describe(self) -> str:
        if self.kind == "result":
            return f"{self.what}: [{', '.join(self.names)}] in this order" if self.names else f"{self.what}: empty"
        if self.kind == "condition":
            return f"{self.what}"
        return f"{self.what}: {self.forms[0]}"


def required(program) -> list[Fact]:
    """Every fact the oracle of `program` (a `builder.base.BaseProgram`) depends on, from the program alone."""
    return program.required_facts()


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.:;!?])\s+|\n+", text) if s.strip()]


def _count(text: str, form: str) -> int:
    """Occurrences of `form` that stand alone: `2` in "dimension 2" but not in `x2` or 12."""
    return len(re.findall(r"(?<![\w`'\[])" + re.escape(form) + r"(?![\w`'])", text))


def missing(text: str, facts: list[Fact], refs: dict[str, str] | None = None) -> list[str]:
    """What `text` fails to state, one line per fact (empty: all stated). `refs` maps each variable to the
    phrase this text uses for it (defaults to the name in backticks)."""
    refs = refs or {}
    ref = lambda n: refs.get(n, f"`{n}`")  # noqa: E731
    out: list[str] = []
    need: dict[tuple[str, ...], list[Fact]] = {}
    for f in facts:
        if f.kind in ("input", "value"):
            need.setdefault(f.forms, []).append(f)
    for forms, group in need.items():  # a value stated twice in the program must be stated twice in the text
        if sum(_count(text, form) for form in forms) < len(group):
            out += [f"{f.describe()} is not stated" for f in group]
    sentences = _sentences(text)
    for f in facts:
        if f.kind == "condition":
            constant = f"`{f.names[0]}`"
            said = [s for s in sentences if constant in s]
            if not any(form in s for s in said for form in f.forms):
                out.append(f"the role of {constant} (how it is compared) is not stated")
    results = [f for f in facts if f.kind == "result"]
    said = [s for s in sentences if "RESULT" in s]
    for k, f in enumerate(results):
        sentence = said[k] if k < len(said) else ""
        if not sentence:
            out.append(f"{f.what} is not stated")
        elif not f.names:
            if "empty" not in sentence:
                out.append(f"{f.what} should be said to be empty")
        elif not _in_order(sentence, [ref(n) for n in f.names]):
            out.append(f"{f.what}: not every value is named in order ({', '.join(f.names)})")
        elif len(f.names) > 1 and not any(w in sentence for w in ORDER_WORDS):
            out.append(f"{f.what}: the order is not stated")
    return out


def _in_order(sentence: str, phrases: list[str]) -> bool:
    at = 0
    for p in phrases:
        i = sentence.find(p, at)
        if i < 0:
            return False
        at = i + len(p)
    return True
