"""Two-agent translation (the StateGen paper's method): a generator writes the instruction, an evaluator judges it.

For every task and variant, the generator sees the setup block and the program and writes an instruction; the
evaluator sees the same and answers OK, IMPOSSIBLE, or a concrete critique that goes back to the generator. They
negotiate for at most `max_rounds` rounds. OK keeps the instruction; IMPOSSIBLE, or no OK after the last round,
drops the task with its reason counted.

Rounds run in lockstep across tasks: each round sends every pending generator request in one batch, then every
evaluator request in one batch, so vLLM batches them and an OpenAI-compatible server sees them concurrently.
Every reply is cached on disk under its exact prompt, so a crashed build resumes where it stopped and an
unchanged build re-translates nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from evaluate.models import Backend, Request, Sampling, get_backend
from evaluate.models.cache import GenerationCache, prompt_key
from evaluate.prompts import strip_thinking

OK, IMPOSSIBLE = "OK", "IMPOSSIBLE"

GENERATOR = {
    "precise": (
        "You write the task descriptions of a benchmark for coding assistants. Given a Python program and the "
        "setup block that runs before it, write the instruction a developer would give an assistant so that the "
        "assistant can reproduce the program exactly. The instruction must be unambiguous (every API call, its "
        "parameters, the data flow between variables by their names, the if/else on COND if there is one, and what "
        "RESULT holds), natural (how a developer asks a colleague, not code read aloud), and non-redundant (no "
        "detail the reader can infer). Never quote a value defined in the setup block: refer to variables by name. "
        "Reply with the instruction only."
    ),
    "vague": (
        "You write the task descriptions of a benchmark for coding assistants. Given a Python program and the "
        "setup block that runs before it, write a short, high-level request: the intent and the expected outcome "
        "only (which setup variables are used, what should be computed, what RESULT must hold, and the condition "
        "on COND if there is one), without spelling out every call or parameter. Never quote a value defined in "
        "the setup block: refer to variables by name. Reply with the instruction only."
    ),
}

EVALUATOR = {
    "precise": (
        "You review task descriptions for a coding benchmark. Given a setup block, a program and an instruction, "
        "decide whether a developer who sees only the setup block and the instruction would write a program with "
        "the same calls, parameters, data flow, branch on COND and RESULT. Reply with exactly OK if so. Reply with "
        "exactly IMPOSSIBLE if no instruction could describe this program sensibly. Otherwise reply with a short, "
        "concrete critique: what is missing, wrong, ambiguous, redundant, or quotes a setup value."
    ),
    "vague": (
        "You review high-level task descriptions for a coding benchmark. Given a setup block, a program and an "
        "instruction, decide whether the instruction states the program's intent and expected outcome (what RESULT "
        "holds, the condition on COND if any) correctly, without quoting setup values and without dictating every "
        "call. Reply with exactly OK if so, exactly IMPOSSIBLE if the program has no sensible intent to state, and "
        "otherwise a short, concrete critique."
    ),
}

SHOW = "Setup block:\n```python\n{setup}```\n\nProgram:\n```python\n{program}```"
REVISE = "A reviewer answered:\n{critique}\n\nRewrite the instruction to address this. Reply with the instruction only."


@dataclass
class Job:
    """One task's translation in one variant, as it moves through the rounds."""

    key: str  # task id
    variant: str
    setup: str
    program: str
    conversation: list[dict] = field(default_factory=list)  # the generator's side
    instruction: str = ""
    rounds: int = 0
    verdict: str = ""  # OK, IMPOSSIBLE, or "" while pending / when no OK came
    critique: str = ""


@dataclass
class Translation:
    instruction: str
    rounds: int
    verdict: str  # "OK" when kept; otherwise the reason the task is dropped


def parse_spec(spec: str) -> tuple[str, str]:
    """`openai:MODEL`, `vllm:MODEL`, `hf:PATH` -> (backend, model)."""
    backend, sep, model = spec.partition(":")
    if not sep or backend not in ("openai", "vllm", "hf") or not model:
        raise ValueError(f"translator {spec!r} is not 'template', openai:MODEL, vllm:MODEL or hf:PATH")
    return backend, model


def clean_instruction(reply: str) -> str:
    """The instruction in a generator reply: thinking, fences, quotes and a leading label removed."""
    text = strip_thinking(reply)
    text = re.sub(r"^```[^\n]*\n|```\s*$", "", text.strip())
    text = re.sub(r"^(instruction|task)\s*:\s*", "", text.strip(), flags=re.I)
    return text.strip().strip('"').strip()


def parse_verdict(reply: str) -> str:
    """OK, IMPOSSIBLE, or the critique itself (an empty reply becomes a critique asking for a verdict)."""
    text = strip_thinking(reply).strip()
    head = re.sub(r"[^A-Za-z]", " ", text[:40]).split()
    if head and head[0].upper() == OK and len(text) <= 40:
        return OK
    if head and head[0].upper() == IMPOSSIBLE:
        return IMPOSSIBLE
    return text or "The review was empty: answer OK, IMPOSSIBLE, or a concrete critique."


class AgentTranslator:
    """The generator/evaluator pair over one model backend (also used for the evaluator)."""

    def __init__(self, spec: str, cache_path: Path, max_rounds: int = 3, base_url: str | None = None,
                 sampling: Sampling | None = None, backend: Backend | None = None, **options):
        self.name = spec
        backend_name, model = parse_spec(spec)
        self.model = model
        self.max_rounds = max(1, max_rounds)
        self.sampling = sampling or Sampling(temperature=0.0, max_new_tokens=512)
        if base_url is not None:
            options["base_url"] = base_url
        self.backend = backend or get_backend(model, backend_name, **options)
        self.cache = GenerationCache(cache_path)

    def _ask(self, prompts: list[tuple[Job, list[dict]]]) -> list[str]:
        """Replies for a batch of prompts: cached ones at once, the rest in one backend call."""
        keys = [prompt_key(messages, self.sampling, self.model, 0) for _, messages in prompts]
        todo = [Request(key, 0, messages) for key, (_, messages) in zip(keys, prompts)
                if key not in self.cache.replies]
        if todo:
            self.backend.prepare()
            self.backend.generate(list({r.task_id: r for r in todo}.values()), self.sampling,
                                  lambda r, reply: self.cache.add(r.task_id, r.task_id, 0, reply))
        return [self.cache.replies[k] for k in keys]

    def translate_all(self, items: list[tuple[str, str, str]], variants=("precise", "vague")) -> dict:
        """`items`: (task id, setup block, program). Returns {(task id, variant): Translation}."""
        jobs = [Job(key, v, setup, program) for key, setup, program in items for v in variants]
        for job in jobs:
            job.conversation = [
                {"role": "system", "content": GENERATOR[job.variant]},
                {"role": "user", "content": SHOW.format(setup=job.setup, program=job.program)},
            ]
        pending = list(jobs)
        try:
            for round_no in range(1, self.max_rounds + 1):
                if not pending:
                    break
                for job, reply in zip(pending, self._ask([(j, j.conversation) for j in pending])):
                    job.rounds = round_no
                    job.instruction = clean_instruction(reply)
                    job.conversation = job.conversation + [{"role": "assistant", "content": job.instruction}]
                reviews = [(j, [{"role": "system", "content": EVALUATOR[j.variant]},
                                {"role": "user", "content": SHOW.format(setup=j.setup, program=j.program)
                                 + f"\n\nInstruction:\n{j.instruction or '(empty)'}"}])
                           for j in pending]
                still = []
                for job, reply in zip(pending, self._ask(reviews)):
                    verdict = parse_verdict(reply) if job.instruction else "the generator wrote no instruction"
                    if verdict in (OK, IMPOSSIBLE):
                        job.verdict = verdict
                    else:
                        job.critique = verdict
                        job.conversation = job.conversation + [{"role": "user",
                                                                "content": REVISE.format(critique=verdict)}]
                        still.append(job)
                pending = still
        finally:
            self.cache.close()
        out = {}
        for job in jobs:
            if job.verdict == OK:
                out[(job.key, job.variant)] = Translation(job.instruction, job.rounds, OK)
            elif job.verdict == IMPOSSIBLE:
                out[(job.key, job.variant)] = Translation("", job.rounds, "evaluator said IMPOSSIBLE")
            else:
                out[(job.key, job.variant)] = Translation("", job.rounds, f"no OK after {job.rounds} rounds")
        return out
