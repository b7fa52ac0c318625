"""`--model reference`: replays each task's reference program. It must score 100%; run before every release."""

from __future__ import annotations

from evaluate.models import Backend, BackendError, OnReply, Request, Sampling
from evaluate.models.tokens import estimate


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self, model: str = "reference", references: dict[str, str] | None = None, **_options):
        self.model = model
        self.references = references or {}  # task id -> reference program, from the tasks being scored

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        for r in requests:
            if r.task_id not in self.references:
                raise BackendError(f"the reference backend has no reference program for {r.task_id!r}; build it "
                                   "with references={task_id: reference_program} for the tasks it answers")
            # Fenced like a model's reply, so the replay also exercises code extraction.
            reply = f"```python\n{self.references[r.task_id]}```"
            r.usage = estimate(r.messages, reply)  # no model was asked: what a reply of this size would cost
            on_reply(r, reply)
