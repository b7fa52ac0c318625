"""`--model reference`: replays each task's reference program. It must score 100%; run before every release."""

from __future__ import annotations

from evaluate.models import Backend, Request, Sampling


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self, model: str = "reference", **_):
        self.model = model

    def generate(self, requests: list[Request], n: int, sampling: Sampling) -> list[list[str]]:
        # Fenced like a model's reply, so the replay also exercises code extraction.
        return [[f"```python\n{r.task['reference_program']}```"] * n for r in requests]
