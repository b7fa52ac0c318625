"""`--model reference`: replays each task's reference program. It must score 100%; run before every release."""

from __future__ import annotations

from evaluate.models import Backend, OnReply, Request, Sampling
from evaluate.models.tokens import estimate


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self, model: str = "reference", **_options):
        self.model = model

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        for r in requests:
            # Fenced like a model's reply, so the replay also exercises code extraction.
            reply = f"```python\n{r.task['reference_program']}```"
            r.usage = estimate(r.messages, reply)  # no model was asked: what a reply of this size would cost
            on_reply(r, reply)
