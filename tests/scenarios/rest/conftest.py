"""Service files for the tests: a tiny service on the standard library (fake_service.py) by default, and a helper to
ask whether a process is still alive."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

FAKE = Path(__file__).with_name("fake_service.py")
# The fake service's own document: items made by POST /items, read back one by one.
FAKE_SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "fake", "version": "1"},
    "paths": {
        "/items": {
            "get": {"summary": "List items", "responses": {"200": {"description": "the items"}}},
            "post": {"summary": "Add an item", "requestBody": {"content": {"application/json": {"schema": {
                "type": "object"}}}},
                "responses": {"201": {"description": "added", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"id": {"type": "integer"}}}}}}}},
        },
        "/items/{item}": {"get": {"summary": "One item", "parameters": [
            {"name": "item", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "the item"}}}},
    },
}


def toml_value(value) -> str:
    """A TOML value for strings, numbers, lists and tables (JSON strings are TOML basic strings)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def write_service(folder: Path, tables: dict | None = None, arrays: dict | None = None, **keys) -> Path:
    """A service file in `folder`: the fake service with its document in `files`, overridden by `keys` (a key given
    None is left out), `tables` ([name] then key = value) and `arrays` ([[name]] entries)."""
    base = {
        "name": "fake",
        "openapi": "/openapi.json",
        "start": ["{python}", str(FAKE), "{port}", "--spec", "{dir}/openapi.json"],
        "ready": "/ready",
        "reset": "POST /reset",
        "ready_timeout_s": 120,
    }
    base.update(keys)
    tables = {"files": {"openapi.json": json.dumps(FAKE_SPEC)}, **(tables or {})}
    lines = [f"{key} = {toml_value(value)}" for key, value in base.items() if value is not None]
    for name, table in tables.items():
        if table is not None:
            lines += [f"\n[{name}]", *(f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items())]
    for name, entries in (arrays or {}).items():
        for entry in entries:
            lines += [f"\n[[{name}]]", *(f"{k} = {toml_value(v)}" for k, v in entry.items())]
    path = folder / "service.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, killed but not yet reaped by its new parent, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def fake(tmp_path) -> Path:
    return write_service(tmp_path)


@pytest.fixture
def isolated_registry(monkeypatch):
    """Services a test registers in this process are forgotten after it: the scenario registry, the files behind
    it, the scenarios made and STATEEVAL_SERVICES are as they were (later tests build the default scenarios)."""
    import scenarios
    from scenarios.rest import registration

    monkeypatch.setattr(scenarios.SCENARIOS, "_entries", dict(scenarios.SCENARIOS._entries))
    monkeypatch.setattr(scenarios.SCENARIOS, "_loaded", dict(scenarios.SCENARIOS._loaded))
    monkeypatch.setattr(scenarios, "_instances", dict(scenarios._instances))
    monkeypatch.setattr(registration, "_files", dict(registration._files))
    monkeypatch.setenv(registration.ENV, os.environ.get(registration.ENV, ""))
    yield
