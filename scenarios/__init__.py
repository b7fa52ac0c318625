"""Scenario worlds and their state machines, looked up by name.

`get_scenario("tensor")` returns the builder-side state machine; the sandbox imports the world half
(`Scenario.world`) only inside its workers, so the builder and the harness never import torch or start servers.
"""

from __future__ import annotations

from scenarios.base import API, INIT, Asset, Call, Condition, Scenario, State, Var, World, load_object

# name -> "module:Class". A new scenario is one line here plus its own sub-package.
REGISTRY: dict[str, str] = {
    "tensor": "scenarios.tensor.machine:TensorScenario",
    "session": "scenarios.session.machine:SessionScenario",
    "voice": "scenarios.voice.machine:VoiceScenario",
    "bank": "scenarios.bank.machine:BankScenario",  # the worked example of docs/adding-a-scenario.md
}

_cache: dict[str, Scenario] = {}


def scenario_names(examples: bool = False) -> list[str]:
    """The scenarios a build makes by default; with `examples`, every known one (the worked example too)."""
    return [name for name in REGISTRY if examples or not getattr(get_scenario(name), "example", False)]


def get_scenario(name: str) -> Scenario:
    if name not in REGISTRY:
        known = ", ".join(REGISTRY)
        raise KeyError(f"unknown scenario {name!r}; known scenarios: {known}")
    if name not in _cache:
        _cache[name] = load_object(REGISTRY[name])()
    return _cache[name]


def load_world(scenario: Scenario) -> World:
    """Instantiate a scenario's world (heavy: call only inside a sandbox worker)."""
    return load_object(scenario.world)()


__all__ = [
    "API", "INIT", "Asset", "Call", "Condition", "Scenario", "State", "Var", "World",
    "REGISTRY", "get_scenario", "load_world", "scenario_names",
]
