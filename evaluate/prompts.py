"""The one prompt builder every backend uses, and the extraction of code from a model's reply.

A prompt is the same whichever backend serves it (vLLM in-process, an OpenAI-compatible server, transformers):
the backends receive these chat messages and apply their own chat template, nothing else.
"""

from __future__ import annotations

import re

from core.records import TaskRecord
from scenarios.base import VARIANTS

SYSTEM = (
    "You are an expert Python programmer. You write code that calls APIs in sequence and keeps track of the "
    "state those calls create. Answer with one Python code block and nothing else."
)

USER = """\
## API documentation

{api_doc}

## Setup (already executed; its variables are defined)

```python
{setup_code}```

## Task

{instruction}

Write the Python code that continues after the setup block. Do not repeat the setup or redefine its variables, \
and assign the final answer to `RESULT`. Reply with a single ```python code block."""


# variant -> the record's field: natural (the default, as a developer asks), steps (every call and name dictated),
# vague (the intent and the values; the mechanics are left to the documentation)
# Each instruction variant's field of the task record.
INSTRUCTION_FIELDS = dict(zip(VARIANTS, ("instruction", "instruction_steps", "instruction_vague")))


def build_messages(task: TaskRecord, variant: str = "natural") -> list[dict]:
    return _messages(task, variant, SYSTEM, USER)


def _messages(task: TaskRecord, variant: str, system: str, user: str) -> list[dict]:
    if variant not in VARIANTS:
        raise ValueError(f"unknown instruction variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    instruction = getattr(task, INSTRUCTION_FIELDS[variant])
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user.format(
            api_doc=task.api_doc.strip(), setup_code=task.setup_code, instruction=instruction.strip(),
        )},
    ]


TESTS_SYSTEM = (
    "You are an expert at testing APIs. You write a test that drives an API through its calls and checks, with "
    "assert statements, what a requirement promises. Answer with one Python code block and nothing else."
)

TESTS_USER = """\
## API documentation

{api_doc}

## Setup (already executed; its variables are defined)

```python
{setup_code}```

## Requirement

{instruction}

Write a Python test of this requirement that continues after the setup block: carry out what the requirement \
describes through the API, and assert what the documentation and the requirement promise: the values the calls \
answer, the state they leave, and the result the requirement asks for. Do not repeat the setup or redefine its \
variables. The test passes when it ends without an exception. It is run against the correct implementation of \
the API and against faulty ones, each with one operation misbehaving; it must pass on the correct one, and it \
scores by how many faulty ones it fails on. Reply with a single ```python code block."""


def build_test_messages(task: TaskRecord, variant: str = "natural") -> list[dict]:
    """The prompt of `--mode tests`: the documentation, the setup block and the task's instruction in the variant
    as the requirement to test."""
    return _messages(task, variant, TESTS_SYSTEM, TESTS_USER)


_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_THINKING_OPENED = re.compile(r"<(think|thinking|reasoning)>", re.I)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


def strip_thinking(reply: str | None) -> str:
    """A reply without the thinking sections reasoning models write before their answer (<think>, <thinking>,
    <reasoning>): one pattern for every reader of model replies (code extraction here, the builder's agents)."""
    return _THINKING.sub("", reply or "")


def extract_code(reply: str | None) -> str | None:
    """The program in a reply: the fenced python blocks joined in order, or the whole reply when unfenced.

    Thinking sections of reasoning models are removed first (an unclosed one means the model never answered).
    Returns None when nothing that could be code is left.
    """
    if reply is None:
        return None
    text = strip_thinking(reply)
    if _THINKING_OPENED.search(text):
        return None
    blocks = _FENCE.findall(text)
    if blocks:
        python = [body for lang, body in blocks if lang.lower() in ("python", "py", "python3")]
        chosen = python or [body for _, body in blocks]
        code = "\n".join(b.strip("\n") for b in chosen)
    else:
        code = text
    code = code.strip("\n")
    return code + "\n" if code.strip() else None
