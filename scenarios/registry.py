"""The one lazy registry: names mapped to `"module:object"`, imported on first use.

Scenarios (`scenarios.SCENARIOS`), model backends (`core.backends.BACKENDS`) and executors
(`core.sandbox.executor.EXECUTOR_CLASSES`) are each a `Registry`, so that listing the names costs no import and a
plug-in's heavy dependencies (torch, vllm, ray) load only when it is used. An entry may name the extra that
installs what it imports: an import that fails then says, in one line, what to install.

It lives at the bottom of the house (nothing here imports the rest of the project) because the scenarios use it
too, and every other package may import `scenarios`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Generic, Iterator, TypeVar

T = TypeVar("T")


def load_object(spec: str) -> Any:
    """The object a `"module:attr"` spec names, imported now."""
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


class RegistryError(KeyError):
    """A name no registry entry has, or an entry whose import fails: one line naming the fix. A KeyError, as an
    unknown name always was; its text is the message itself (a KeyError's own quotes it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Entry:
    spec: str  # "module:object"
    extra: str = ""  # the `pip install 'stateeval[EXTRA]'` that brings what the module imports, if any


class Registry(Generic[T]):
    """`kind` names what the registry holds ("scenario", "backend", ...) in its errors."""

    def __init__(self, kind: str, entries: dict[str, str | Entry]):
        self.kind = kind
        self._entries = {k: v if isinstance(v, Entry) else Entry(v) for k, v in entries.items()}
        self._loaded: dict[str, T] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def add(self, name: str, obj: T) -> None:
        """Register an object made at run time (a scenario derived from a service file) under `name`."""
        self._entries[name] = Entry(f"<registered at run time: {name}>")
        self._loaded[name] = obj

    def get(self, name: str) -> T:
        """The object registered as `name`, imported on its first use."""
        if name not in self._loaded:
            entry = self._entry(name)
            try:
                self._loaded[name] = load_object(entry.spec)
            except ImportError as exc:
                fix = f"pip install 'stateeval[{entry.extra}]'" if entry.extra else "reinstall the project"
                raise RegistryError(f"the {self.kind} {name!r} cannot be loaded ({exc}); {fix}") from None
        return self._loaded[name]

    def _entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise RegistryError(f"unknown {self.kind} {name!r}; known {self.kind}s: {', '.join(self._entries)}") \
                from None
