"""Values drawn per test case: the `{draw:...}` placeholders of a service file's `population`.

A placeholder is `{draw:KIND}` or `{draw:KIND:ARG:ARG}`, optionally labelled with `@LABEL` at its end:

    {draw:word}            a lower-case word from WORDS
    {draw:int:1:100}       an integer from 1 to 100, both included
    {draw:choice:a,b,c}    one of the listed strings (separated by commas)
    {draw:hex:8}           8 lower-case hexadecimal digits
    {draw:word@bucket}     a word, drawn once per test case for the label `bucket`: every later placeholder with
    {draw:@bucket}         that label (its kind may be left out) stands for the same value

A string that is one placeholder and nothing else becomes the drawn value itself (an `int` stays an integer in a
JSON body); a placeholder inside a longer string is replaced by its text. Drawing is deterministic: the same
`random.Random` state gives the same values, in the order the placeholders appear.
"""

from __future__ import annotations

import random
import re
from typing import Any

PLACEHOLDER = re.compile(r"\{draw:([a-z]*)((?::[^:@}]*)*)(?:@([A-Za-z_][A-Za-z0-9_]*))?\}")
WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris", "juniper", "kestrel",
         "lagoon", "maple", "nectar", "orchid", "pebble", "quartz", "raven", "sierra", "tundra", "umber", "violet",
         "willow", "yarrow", "zephyr", "aspen", "bramble", "coral", "dune", "falcon", "glacier", "heron")
KINDS = {"word": 0, "int": 2, "choice": 1, "hex": 1}  # each kind and how many arguments it takes


class DrawError(ValueError):
    """A placeholder that cannot be drawn: an unknown kind, wrong arguments, or a label used before it is drawn."""


def check(value: Any) -> None:
    """Raise DrawError for the first malformed placeholder in `value` (a file's whole population, in order, so that
    a label is drawn before it is referred to); the file is checked when it is read, so a test case never meets
    one."""
    expand(value, random.Random(0), {})


def expand(value: Any, rng: random.Random, labels: dict[str, Any] | None = None) -> Any:
    """`value` (a string, or lists and tables of them, as TOML gives) with every placeholder drawn from `rng`.
    `labels` holds the values drawn so far per label: pass the same dict to every call of one test case."""
    if labels is None:
        labels = {}
    if isinstance(value, str):
        if "{draw:" in PLACEHOLDER.sub("", value):
            raise DrawError(f"{value!r} holds a {{draw:...}} that is not one: write e.g. {{draw:word}}, "
                            f"{{draw:int:1:100}}, {{draw:word@label}} (lower-case kinds, labels of letters, digits, _)")
        whole = PLACEHOLDER.fullmatch(value)
        if whole:
            return _draw(whole, rng, labels)
        return PLACEHOLDER.sub(lambda m: str(_draw(m, rng, labels)), value)
    if isinstance(value, dict):
        return {key: expand(item, rng, labels) for key, item in value.items()}
    if isinstance(value, list):
        return [expand(item, rng, labels) for item in value]
    return value


def _draw(match: re.Match, rng: random.Random, labels: dict[str, Any]) -> Any:
    kind, args, label = match.group(1), match.group(2).split(":")[1:], match.group(3)
    if label in labels:
        return labels[label]
    if not kind:
        raise DrawError(f"{match.group(0)} names no kind and no label drawn before it: draw it first, e.g. "
                        f"{{draw:word@{label or 'name'}}}")
    value = _value(kind, args, rng, match.group(0))
    if label:
        labels[label] = value
    return value


def _value(kind: str, args: list[str], rng: random.Random, text: str) -> Any:
    if kind not in KINDS:
        raise DrawError(f"{text}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    if len(args) != KINDS[kind]:
        raise DrawError(f"{text}: {kind} takes {KINDS[kind]} argument(s) after its name, e.g. "
                        f"{{draw:int:1:100}}, {{draw:choice:a,b}}, {{draw:hex:8}}, {{draw:word}}")
    if kind == "word":
        return rng.choice(WORDS)
    if kind == "choice":
        options = args[0].split(",")
        if "" in options:
            raise DrawError(f"{text}: an empty option; separate the options with single commas")
        return rng.choice(options)
    try:
        numbers = [int(a) for a in args]
    except ValueError:
        raise DrawError(f"{text}: {kind} takes whole numbers") from None
    if kind == "hex":
        if numbers[0] < 1:
            raise DrawError(f"{text}: hex takes a length of at least 1")
        return "".join(rng.choice("0123456789abcdef") for _ in range(numbers[0]))
    if numbers[0] > numbers[1]:
        raise DrawError(f"{text}: the lower bound is above the upper one")
    return rng.randint(numbers[0], numbers[1])
