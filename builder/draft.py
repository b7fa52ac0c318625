"""What a program becomes on its way through the build (`Draft`), and the counted rejection every step applies
(`keep`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from builder.base import BaseProgram
from core.records import TestCase


@dataclass
class Draft:
    task_id: str
    scenario: str
    program: BaseProgram
    index: int = 0  # the program's number in its scenario (the task id's digits)
    instructions: dict[str, str] = field(default_factory=dict)  # variant -> instruction
    translation: dict = field(default_factory=dict)  # per variant: rounds and verdict
    cases: list[TestCase] = field(default_factory=list)
    mutation: dict = field(default_factory=dict)

    facts: list = field(default_factory=list)  # what the oracle depends on (builder/facts.py)


def keep(items: list, reason, rejections: Counter, scenario=lambda item: item.scenario) -> list:
    """The items `reason(item)` finds nothing against; each other one is counted under "<scenario>: <reason>"."""
    kept = []
    for item in items:
        why = reason(item)
        if why:
            rejections[f"{scenario(item)}: {why}"] += 1
        else:
            kept.append(item)
    return kept
