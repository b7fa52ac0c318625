"""The one lazy registry: names listed without importing anything, objects imported on first use, one-line errors."""

from __future__ import annotations

import sys

import pytest

from core.sandbox.executor import EXECUTOR_CLASSES
from core.backends import BACKENDS, BackendError, get_backend
from scenarios import SCENARIOS, get_scenario
from scenarios.registry import Entry, Registry, RegistryError


def test_listing_names_imports_nothing_and_get_imports_once():
    registry = Registry("thing", {"json": "json:dumps", "dec": "decimal:Decimal"})
    sys.modules.pop("decimal", None)
    assert registry.names() == ["json", "dec"] and "dec" in registry and len(registry) == 2
    assert "decimal" not in sys.modules
    import decimal

    assert registry.get("dec") is decimal.Decimal is registry.get("dec")


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(RegistryError, match=r"unknown thing 'nope'; known things: a, b"):
        Registry("thing", {"a": "json:dumps", "b": "json:loads"}).get("nope")


def test_a_failed_import_names_the_extra_to_install():
    registry = Registry("backend", {"x": Entry("no_such_module_anywhere:X", "vllm"), "y": "no_such_module_either:Y"})
    with pytest.raises(RegistryError, match=r"the backend 'x' cannot be loaded .*pip install 'stateeval\[vllm\]'"):
        registry.get("x")
    with pytest.raises(RegistryError, match="reinstall the project"):
        registry.get("y")


def test_the_projects_three_registries():
    assert SCENARIOS.names()[:3] == ["tensor", "session", "voice"]
    assert get_scenario("tensor") is get_scenario("tensor")
    with pytest.raises(RegistryError, match="unknown scenario 'chess'"):
        get_scenario("chess")
    assert set(BACKENDS) == {"reference", "openai", "vllm", "hf"}
    assert set(EXECUTOR_CLASSES) == {"local", "ray"}


def test_a_backend_that_cannot_load_is_a_backend_error(monkeypatch):
    broken = Registry("backend", {"vllm": Entry("no_such_vllm_module:B", "vllm")})
    monkeypatch.setattr("core.backends.BACKENDS", broken)
    with pytest.raises(BackendError, match=r"pip install 'stateeval\[vllm\]'"):
        get_backend("m", "vllm")
