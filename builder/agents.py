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

from builder import facts
from builder.config import parse_spec
from builder.translate import Item, Translation
from core.backends import Backend, Request, Sampling, get_backend
from core.backends.cache import GenerationCache, prompt_key
from evaluate.prompts import strip_thinking
from scenarios.base import VARIANTS

OK, IMPOSSIBLE = "OK", "IMPOSSIBLE"

COMMON = (
    "You write the task descriptions of a benchmark for coding assistants. Given a Python program, the setup block "
    "that runs before it and the facts its test checks, write the instruction a developer would give an assistant. "
    "Every fact listed must be recoverable from your text: name each setup variable as written, write each value "
    "exactly as listed, say how each COND constant is compared, and say what RESULT holds on every path and in "
    "which order. Never quote a value defined in the setup block. Reply with the instruction only. "
)
GENERATOR = {
    "natural": COMMON + (
        "Write it the way a developer asks a colleague: no numbered steps, no code read aloud, and no names for "
        "intermediate results: refer to them by what they are (\"the convolved tensor\", \"the session you just "
        "created\"). Several simple calls may share a sentence. Be unambiguous, natural and non-redundant."
    ),
    "steps": COMMON + (
        "Write numbered steps that dictate every call, its parameters and the name of every variable it makes, "
        "and the if/else on COND if there is one."
    ),
    "vague": COMMON + (
        "State the intent and every value, but do not name the APIs, their parameters or endpoints, and do not "
        "spell out the order of calls where the data flow implies it: the assistant finds the mechanics in the "
        "documentation."
    ),
}

REVIEW = (
    "You review task descriptions for a coding benchmark. Given a setup block, a program, the facts its test "
    "checks and an instruction, decide whether a developer who sees only the setup block, the API documentation "
    "and the instruction would write a program that passes: every listed fact must be stated (each setup "
    "variable, each value, the role of each COND constant, what RESULT holds on each path and in which order) and "
    "nothing may be ambiguous. Reply with exactly OK if so, exactly IMPOSSIBLE if no instruction could describe "
    "this program sensibly, and otherwise a short, concrete critique: what is missing, wrong, ambiguous, or "
    "quotes a setup value. "
)
EVALUATOR = {
    "natural": REVIEW + "It must also read as a developer's request: no numbered steps, no intermediate names.",
    "steps": REVIEW + "It must be numbered steps that name every call, parameter and variable.",
    "vague": REVIEW + "It must not name the APIs, their parameters or endpoints.",
}

SHOW = ("Setup block:\n```python\n{setup}```\n\nProgram:\n```python\n{program}```\n\n"
        "Facts the test checks:\n{facts}")
REVISE = "A reviewer answered:\n{critique}\n\nRewrite the instruction to address this. Reply with the instruction only."


@dataclass
class Job:
    """One task's translation in one variant, as it moves through the rounds."""

    key: str  # task id
    variant: str
    setup: str
    program: str
    facts: str  # the fact list, one "- " line each
    conversation: list[dict] = field(default_factory=list)  # the generator's side
    instruction: str = ""
    rounds: int = 0
    verdict: str = ""  # OK, IMPOSSIBLE, or "" while pending / when no OK came


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

    def translate_all(self, items: list[Item]) -> dict[tuple[str, str], Translation]:
        """Every variant of every task: {(task id, variant): Translation}."""
        jobs = [Job(item.key, v, item.setup, item.program.reference_code(),
                    "\n".join(f"- {f.describe()}" for f in facts.required(item.program)))
                for item in items for v in VARIANTS]
        show = lambda j: SHOW.format(setup=j.setup, program=j.program, facts=j.facts)  # noqa: E731
        for job in jobs:
            job.conversation = [
                {"role": "system", "content": GENERATOR[job.variant]},
                {"role": "user", "content": show(job)},
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
                                {"role": "user", "content": show(j)
                                 + f"\n\nInstruction:\n{j.instruction or '(empty)'}"}])
                           for j in pending]
                still = []
                for job, reply in zip(pending, self._ask(reviews)):
                    verdict = parse_verdict(reply) if job.instruction else "the generator wrote no instruction"
                    if verdict in (OK, IMPOSSIBLE):
                        job.verdict = verdict
                    else:
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
