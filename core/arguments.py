"""What the command lines share: argument types that refuse a count or a time limit that cannot work, and a
parser whose errors are one line.

`--timeout 0` used to run and mark every sample a timeout, and `--workers 0` or `--limit 0` silently meant "the
default"; such values are now refused before any work, with the option, what it accepts, and where to read more.
"""

from __future__ import annotations

import argparse
import math

INTERRUPTED = 130  # the exit code of a command ended by Ctrl-C, as shells report it (128 + SIGINT)
# The exit code of a run that wrote its results but left samples without a verdict (infra_error): a script that
# runs it knows to run the same command again, which scores them.
INCOMPLETE = 3


def _number(text: str, parse, expected: str, ok, must: str):
    """`text` read by `parse` (int or float), refused in one line unless it reads and `ok` holds for it."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {must}, got {text}")
    return value


def at_least_one(text: str) -> int:
    """A count: a whole number, 1 or more."""
    return _number(text, int, "a whole number of at least 1", lambda v: v >= 1, "at least 1")


def positive_seconds(text: str) -> float:
    """A time limit: a finite number of seconds above 0."""
    return _number(text, float, "a number of seconds", lambda v: math.isfinite(v) and v > 0,
                   "a number of seconds above 0 (e.g. 10)")


def price(text: str) -> float:
    """A price in USD per million tokens: a finite number, 0 or more."""
    return _number(text, float, "USD per million tokens (e.g. 0.40)", lambda v: math.isfinite(v) and v >= 0,
                   "USD per million tokens, 0 or more")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (argparse's own first prints the whole usage block)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
