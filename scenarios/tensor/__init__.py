"""The `tensor` scenario: PyTorch shape manipulation and layers on the CPU.

`machine.py` is the builder-side state machine (its APIs, the random initial state, conditions, redrawn inputs,
the phrase tables of the instructions); `world.py` is what a test case runs against inside a sandbox worker.
"""

from scenarios.tensor.machine import ATOL, Conv2d, RTOL, TensorScenario

__all__ = ["ATOL", "Conv2d", "RTOL", "TensorScenario"]
