"""Scenario worlds and their state machines, looked up by name.

`get_scenario("tensor")` returns the builder-side state machine; the sandbox imports the world half
(`Scenario.world`) only inside its workers, so the builder and the harness never import torch or start servers.
"""

from __future__ import annotations

from scenarios.base import API, INIT, Asset, Call, Condition, Scenario, State, Var, World
from scenarios.registry import Registry, load_object

# A new scenario is one line here plus its own sub-package.
SCENARIOS: Registry[type[Scenario]] = Registry("scenario", {
    "tensor": "scenarios.tensor.machine:TensorScenario",
    "session": "scenarios.session.machine:SessionScenario",
    "voice": "scenarios.voice.machine:VoiceScenario",
    "bank": "scenarios.bank.machine:BankScenario",  # the worked example of docs/adding-a-scenario.md
})

_instances: dict[str, Scenario] = {}


def scenario_names(examples: bool = False) -> list[str]:
    """The scenarios a build makes by default; with `examples`, every known one (the worked example too)."""
    return [name for name in SCENARIOS if examples or not get_scenario(name).example]


def get_scenario(name: str) -> Scenario:
    """The scenario's state machine (one instance per process); `RegistryError` for an unknown name."""
    if name not in _instances:
        _instances[name] = SCENARIOS.get(name)()
    return _instances[name]


def load_world(scenario: Scenario) -> World:
    """Instantiate a scenario's world (heavy: call only inside a sandbox worker)."""
    return scenario.make_world()


__all__ = [
    "API", "INIT", "Asset", "Call", "Condition", "Scenario", "State", "Var", "World",
    "SCENARIOS", "get_scenario", "load_world", "scenario_names",
]
