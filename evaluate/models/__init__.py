"""Model backends behind one small interface, looked up by name; heavy imports happen inside each backend.

A backend turns requests (a task and its chat messages from `evaluate.prompts`) into raw replies:
`generate(requests, n, sampling) -> list[list[str]]`, one list of `n` replies per request, in order.
This is also the one place the builder's LLM translation agents talk to models.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0
    max_new_tokens: int = 1024
    top_p: float = 1.0
    seed: int = 0


@dataclass
class Request:
    task_id: str
    messages: list[dict]
    task: dict = field(repr=False, default_factory=dict)  # the record; only the `reference` backend reads it


class Backend:
    name: str = ""

    def generate(self, requests: list[Request], n: int, sampling: Sampling) -> list[list[str]]:
        raise NotImplementedError


# backend name -> "module:Class"
BACKENDS: dict[str, str] = {
    "reference": "evaluate.models.reference:ReferenceBackend",
}


class UnknownBackend(ValueError):
    pass


def get_backend(name: str, model: str, **options) -> Backend:
    if name not in BACKENDS:
        raise UnknownBackend(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
    module, _, attr = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), attr)(model, **options)
