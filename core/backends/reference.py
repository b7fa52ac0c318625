"""`--model reference`: replays each task's reference program. It must score 100%; run before every release.

In the default mode it answers with the reference, fenced. In `--mode explore` it first runs the reference once in
the scratch world (`run_code`), then answers with it. In `--mode tests` its references are the tasks' reference
tests (`evaluate.mutation_score.reference_test`), answered at once or, with `--max-turns`, after one `run_test`.
In `--mode tools` it replays the reference as tool calls:
`scripts` holds, per task and test case, the calls the reference made there and the items of its RESULT, traced
in the sandbox (`core.sandbox.worker.trace_program`); it sends one call a turn (several when the script would not fit
in `max_turns`), then `submit_result`.
"""

from __future__ import annotations

import json
import math

from core.backends import Backend, BackendError, OnMessage, OnReply, Request, Sampling
from core.backends.tokens import estimate

RUN_CODE, RUN_TEST, SUBMIT = "run_code", "run_test", "submit_result"  # evaluate.episodes' tool names (models
# never import the driver)


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self, model: str = "reference", references: dict[str, str] | None = None,
                 scripts: dict[tuple[str, str], dict] | None = None, max_turns: int = 20, **_options):
        self.model = model
        self.references = references or {}  # task id -> reference program, from the tasks being scored
        self.scripts = scripts or {}  # (task id, test case name) -> {"calls": [...], "submit": [...]}
        self.max_turns = max_turns

    def _reference(self, r: Request) -> str:
        if r.task_id not in self.references:
            raise BackendError(f"the reference backend has no reference program for {r.task_id!r}; build it "
                               "with references={task_id: reference_program} for the tasks it answers")
        # Fenced like a model's reply, so the replay also exercises code extraction.
        return f"```python\n{self.references[r.task_id]}```"

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        for r in requests:
            reply = self._reference(r)
            r.usage = estimate(r.messages, reply)  # no model was asked: what a reply of this size would cost
            on_reply(r, reply)

    def chat(self, requests: list[Request], sampling: Sampling, on_message: OnMessage) -> None:
        for r in requests:
            turn = sum(m.get("role") == "assistant" for m in r.messages)
            tools = {t["function"]["name"] for t in r.tools or []}
            runner = next((name for name in (RUN_CODE, RUN_TEST) if name in tools), None)
            if runner is not None:
                calls = [(runner, {"code": self.references.get(r.task_id, "")})] if turn == 0 else []
                message = _message(turn, calls, None if calls else self._reference(r))
            else:
                message = _message(turn, self._script_turn(r, turn), None)
            r.usage = estimate(r.messages, json.dumps(message))
            on_message(r, message)

    def _script_turn(self, r: Request, turn: int) -> list[tuple[str, dict]]:
        script = self.scripts.get((r.task_id, r.case))
        if script is None:
            raise BackendError(f"the reference backend has no traced tool calls for {r.task_id} ({r.case}); give "
                               "it scripts={(task_id, case): {'calls', 'submit'}}")
        calls = script["calls"]
        per_turn = max(1, math.ceil(len(calls) / max(1, self.max_turns - 1)))
        chunk = calls[turn * per_turn:(turn + 1) * per_turn]
        if chunk:
            return [(c["name"], c["arguments"]) for c in chunk]
        return [(SUBMIT, {"result": script["submit"]})]


def _message(turn: int, calls: list[tuple[str, dict]], content: str | None) -> dict:
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"call_{turn}_{i}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, (name, args) in enumerate(calls)]
    return message
