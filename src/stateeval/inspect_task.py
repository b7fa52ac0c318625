"""StateEval as an inspect_ai task: `inspect eval stateeval/stateeval --model PROVIDER/MODEL`.

    pip install -e ".[inspect]"
    inspect eval stateeval/stateeval -T dataset=stateeval -T scenario=session -T variant=natural --model openai/gpt-4.1
    inspect eval stateeval/stateeval -T mode=tools --model vllm/Qwen/Qwen2.5-Coder-32B-Instruct

The same tasks, prompts and sandboxed scoring as `python -m evaluate`, with inspect_ai reaching the model:

* the dataset: one inspect `Sample` per task record (`load_tasks`, so the folder is checked against its manifest),
  its input the chat messages `evaluate.prompts.build_messages` makes for the chosen instruction variant;
* code mode: inspect's `generate()`, then the scorer extracts the program from the reply (`extract_code`);
* tools mode: each test case is a conversation, as in `python -m evaluate --mode tools` (`evaluate.episodes.Driver`,
  the same tool definitions and turn limit), in which inspect's model calls the tools through its own tool-calling
  interface and the calls run in this project's sandbox on the test case's world;
* the scorer: the answer runs in this project's sandbox on every test case (`evaluate.scoring.score`, never in the
  inspect process: docs/trust.md, "Execution and trust"); the score is 1 for `pass`, else 0, with the status, the error,
  the diagnosis (partial credit, cause of failure) and the task's levers as metadata.

The sandbox is started once per process on first use (`workers` task option) and stopped at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import tempfile
import threading
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.scorer import Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, TaskState, generate, solver
from inspect_ai.tool import ToolCall, ToolInfo

from core.backends import COUNTED_BY_API, Backend, OnMessage, Request, Sampling, Usage
from core.backends.cache import GenerationCache
from core.records import TaskRecord, load_tasks
from core.sandbox.harness import Limits, Sandbox
from core.statuses import INFRA_ERROR, PASS
from evaluate.episodes import CODE, DEFAULT_MAX_TURNS, TOOLS, Driver, answers, lost_samples
from evaluate.prompts import build_messages, extract_code
from evaluate.scoring import score
from scenarios.base import VARIANTS

MODES = (CODE, TOOLS)
RESULT = "stateeval"  # the key of a sample's scored result in the task state's store


# ------------------------------------------------------------------------------------------------ the sandbox


class SharedSandbox:
    """One sandbox for the process, started on first use; every use holds a lock (inspect runs samples
    concurrently, each from its own thread here)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sandbox: Sandbox | None = None

    def run_untrusted(self, jobs, **kwargs):
        with self.lock:
            return self.sandbox.run_untrusted(jobs, **kwargs)

    def open(self, workers: int, timeout_s: float) -> "SharedSandbox":
        with self.lock:
            if self.sandbox is None:
                self.sandbox = Sandbox(workers, Limits(timeout_s=timeout_s))
                self.sandbox.__enter__()
                atexit.register(self.close)
        return self

    def close(self) -> None:
        with self.lock:
            if self.sandbox is not None:
                self.sandbox.__exit__(None, None, None)
                self.sandbox = None


SANDBOX = SharedSandbox()


# ------------------------------------------------------------------------------------------- the dataset


def to_inspect(messages: list[dict]) -> list:
    """OpenAI-format chat messages (what evaluate builds and the driver keeps) as inspect's message objects."""
    out = []
    for m in messages:
        role, content = m["role"], m.get("content") or ""
        if role == "system":
            out.append(ChatMessageSystem(content=content))
        elif role == "user":
            out.append(ChatMessageUser(content=content))
        elif role == "assistant":
            calls = [ToolCall(id=c.get("id", ""), function=c["function"]["name"],
                              arguments=_parsed(c["function"].get("arguments")))
                     for c in m.get("tool_calls") or []]
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None))
        else:
            out.append(ChatMessageTool(content=content, tool_call_id=m.get("tool_call_id")))
    return out


def _parsed(arguments) -> dict:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def samples(tasks: list[TaskRecord], variant: str) -> list[Sample]:
    return [Sample(id=t.task_id, input=to_inspect(build_messages(t, variant)), target="pass",
                   metadata={"scenario": t.scenario, "levers": list(t.levers)}) for t in tasks]


# ------------------------------------------------------------------------------ inspect's model as a backend


class InspectBackend(Backend):
    """evaluate's backend interface over inspect's model, for the tools-mode driver (which only chats): it runs in
    a worker thread and asks the model on inspect's event loop. Code mode needs none: inspect generates itself."""

    name = "inspect"

    def __init__(self, model: Model, loop: asyncio.AbstractEventLoop, config: GenerateConfig | None = None):
        self.model, self.loop, self.config = model, loop, config or GenerateConfig()

    def _ask(self, r: Request):
        tools = [ToolInfo.model_validate({"name": t["function"]["name"], "description": t["function"]["description"],
                                          "parameters": t["function"]["parameters"]}) for t in r.tools or []]
        future = asyncio.run_coroutine_threadsafe(
            self.model.generate(to_inspect(r.messages), tools=tools, config=self.config), self.loop)
        output = future.result()
        u = output.usage
        r.usage = None if u is None else Usage(u.input_tokens, u.output_tokens, COUNTED_BY_API)
        return output

    def chat(self, requests: list[Request], sampling: Sampling, on_message: OnMessage) -> None:
        for r in requests:
            message = self._ask(r).message
            calls = [{"id": c.id, "type": "function",
                      "function": {"name": c.function, "arguments": json.dumps(c.arguments)}}
                     for c in message.tool_calls or []]
            on_message(r, {"role": "assistant", "content": message.text or None,
                           **({"tool_calls": calls} if calls else {})})


# ---------------------------------------------------------------------------------------- solvers, scorer


async def in_thread(fn):
    """`fn()` in a worker thread, without the caller's context variables: asyncio.to_thread would copy them, and
    with them sniffio's "asyncio is running here", which code that runs its own event loop (the voice scenario's
    MCP client) then refuses."""
    return await asyncio.get_running_loop().run_in_executor(None, fn)


def record(state: TaskState, result) -> None:
    state.store.set(RESULT, {"status": result.status, "error": result.error, "diagnosis": result.diagnosis})


@functools.lru_cache(maxsize=None)
def tasks_of(dataset: str, revision: str | None, scenario: str | None) -> tuple[dict[str, TaskRecord], str]:
    """task id -> task, and the content hash, of a dataset checked against its manifest (loaded once: the solvers
    and the scorer take the dataset's name, which inspect records, not the tasks)."""
    tasks, manifest = load_tasks(dataset, revision, scenarios=[scenario] if scenario else None)
    return {t.task_id: t for t in tasks}, manifest["content_hash"]


@solver
def tools_conversations(dataset: str, revision: str | None, scenario: str | None, variant: str, max_turns: int):
    """Tools mode: the task's test cases as conversations (evaluate.episodes.Driver) with inspect's model, then
    the episode scored in the sandbox; the transcripts go into the sample's metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        t = tasks_of(dataset, revision, scenario)[0][str(state.sample_id)]
        backend = InspectBackend(get_model(), asyncio.get_running_loop())  # the task's model, from its context

        def converse():
            with tempfile.TemporaryDirectory(prefix="stateeval-inspect-") as tmp:
                cache = GenerationCache(Path(tmp) / "generations.jsonl")
                try:
                    driver = Driver(TOOLS, backend, cache, Sampling(), "inspect", SANDBOX, max_turns,
                                    variant)
                    conversations = driver.run([t], 1)
                finally:
                    cache.close()
            result = score([t], answers([t], conversations, TOOLS, 1), SANDBOX, lost_samples(conversations))[0]
            return conversations, result

        conversations, result = await in_thread(converse)
        state.metadata["conversations"] = [c.transcript() for c in conversations]
        record(state, result)
        return state

    return solve


@scorer(metrics=[accuracy(), stderr()])
def sandboxed(dataset: str, revision: str | None, scenario: str | None):
    """Pass (1) or not (0), as `python -m evaluate` scores it, with the status and diagnosis as metadata. A code
    mode sample's program is extracted from the model's reply and run here; a tools mode sample was scored by its
    solver."""

    async def run(state: TaskState, target: Target) -> Score:
        t = tasks_of(dataset, revision, scenario)[0][str(state.sample_id)]
        answer = None
        if not state.store.get(RESULT):
            answer = extract_code(state.output.completion if state.output else None)
            result = await in_thread(lambda: score([t], {t.task_id: [answer]}, SANDBOX)[0])
            record(state, result)
        result = state.store.get(RESULT)
        if result["status"] == INFRA_ERROR:  # not the model's failure: an error inspect can retry
            raise RuntimeError(f"{t.task_id}: no verdict, the sandbox worker running it was lost ({result['error']}); "
                               "inspect eval-retry (or --retry-on-error) runs it again")
        return Score(value=1 if result["status"] == PASS else 0, answer=answer, explanation=result["error"] or None,
                     metadata={"status": result["status"], "diagnosis": result["diagnosis"],
                               "scenario": t.scenario, "levers": list(t.levers)})

    return run


@task
def stateeval(dataset: str = "stateeval", revision: str | None = None, scenario: str | None = None,
              variant: str = "natural", mode: str = CODE, max_turns: int = DEFAULT_MAX_TURNS, workers: int = 2,
              timeout_s: float = 10.0) -> Task:
    """StateEval's tasks (a dataset folder, or a Hub repo id at `revision`), one scenario or all, scored in this
    project's sandbox. `variant`: natural, steps or vague instructions; `mode`: code or tools."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r} (explore mode runs in "
                         "python -m evaluate)")
    tasks, content_hash = tasks_of(dataset, revision, scenario)
    SANDBOX.open(workers, timeout_s)
    solver_ = generate() if mode == CODE else tools_conversations(dataset, revision, scenario, variant, max_turns)
    return Task(dataset=MemoryDataset(samples(list(tasks.values()), variant), name=f"stateeval-{content_hash[:12]}"),
                solver=solver_, scorer=sandboxed(dataset, revision, scenario),
                metadata={"content_hash": content_hash, "variant": variant, "mode": mode})
