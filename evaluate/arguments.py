"""What the command lines share: argument types that refuse a count or a time limit that cannot work, and a
parser whose errors are one line.

`--timeout 0` used to run and mark every sample a timeout, and `--workers 0` or `--limit 0` silently meant "the
default"; such values are now refused before any work, with the option, what it accepts, and where to read more.
"""

from __future__ import annotations

import argparse
import math

INTERRUPTED = 130  # the exit code of a command ended by Ctrl-C, as shells report it (128 + SIGINT)


def at_least_one(text: str) -> int:
    """A count: a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_seconds(text: str) -> float:
    """A time limit: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 (e.g. 10), got {text}")
    return value


def price(text: str) -> float:
    """A price in USD per million tokens: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected USD per million tokens (e.g. 0.40), got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be USD per million tokens, 0 or more, got {text}")
    return value


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (argparse's own first prints the whole usage block)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
