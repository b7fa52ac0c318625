"""StateEval inside inspect_ai (stateeval/inspect_task.py), end to end and offline: inspect's `mockllm` model scores
0%, and a model that answers with the references (code mode: the reference program; tools mode: the reference's
calls on each test case, as `--model reference` replays them) scores 100%, in code and tools mode, through
inspect's own eval loop, registry and tool calling, with the answers run in this project's sandbox.

inspect's mockllm counts tokens with tiktoken's o200k_base, which it downloads on first use; the tests count
characters instead (this machine reaches no download host), the only part of inspect replaced here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

if not os.environ.get("STATEEVAL_REQUIRE_INSPECT"):  # .ci/run installs the extra and requires these tests to run
    pytest.importorskip("inspect_ai", reason="needs the inspect extra: pip install -e '.[inspect]'")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ModelOutput, get_model  # noqa: E402
from inspect_ai.tool import ToolCall  # noqa: E402

from builder.config import BuildConfig  # noqa: E402
from builder.pipeline import build  # noqa: E402
from core.backends import Request, Sampling  # noqa: E402
from core.backends.cache import GenerationCache  # noqa: E402
from core.backends.reference import ReferenceBackend  # noqa: E402
from evaluate.episodes import TOOLS, Conversation, Driver  # noqa: E402
from evaluate.prompts import INSTRUCTION_FIELDS  # noqa: E402
from evaluate.run import trace_references  # noqa: E402
from stateeval.inspect_task import SANDBOX, stateeval, tasks_of  # noqa: E402


@pytest.fixture(autouse=True)
def offline_token_counts(monkeypatch):
    monkeypatch.setattr("inspect_ai.model._model.count_text_tokens", lambda text: max(1, len(text) // 4))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Two tasks of each scenario (no mutation analysis: the oracles are what is used here)."""
    out = tmp_path_factory.mktemp("inspect") / "stateeval"
    build(BuildConfig(scenarios=["tensor", "session", "voice"], n=2, seed=4, mutants=0, world_mutants=False, created_at="2026-01-01",
                      out=str(out), workers=2))
    return str(out)


def run(task, model, tmp_path):
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    return log


def scores(log) -> dict[str, tuple[int, str]]:
    return {str(s.id): (s.scores["sandboxed"].value, s.scores["sandboxed"].metadata["status"]) for s in log.samples}


def reference_code_model(dataset: str, variant: str):
    """Answers each prompt with its task's reference program, fenced, as a model would."""
    tasks = tasks_of(dataset, None, None)[0].values()
    by_instruction = {getattr(t, INSTRUCTION_FIELDS[variant]).strip(): t.reference_program for t in tasks}

    def answer(messages, tools, tool_choice, config):
        prompt = next(m for m in messages if m.role == "user").text
        (program,) = [p for instruction, p in by_instruction.items() if instruction in prompt]
        return ModelOutput.from_content("reference", f"```python\n{program}```")

    return get_model("mockllm/model", custom_outputs=answer)


def reference_tools_model(dataset: str):
    """Calls, turn by turn, the tools the reference called on the test case the conversation is about (found by
    its first user message, which names the case's setup values), then submits the reference's RESULT."""
    tasks = list(tasks_of(dataset, None, None)[0].values())
    replay = ReferenceBackend(scripts=trace_references(tasks, SANDBOX))
    with tempfile.TemporaryDirectory() as tmp:
        driver = Driver(TOOLS, None, GenerationCache(Path(tmp) / "g.jsonl"), Sampling(), "reference", SANDBOX)
        conversations = [Conversation(t, 0, c) for t in tasks for c in range(len(t.test_cases))]
        driver._start(conversations)
        about = {c.messages[1]["content"]: (c.task.task_id, c.case_name) for c in conversations}

    def answer(messages, tools, tool_choice, config):
        task_id, case = about[next(m for m in messages if m.role == "user").text]
        turn = [{"role": m.role} for m in messages]
        request = Request(task_id, 0, turn, tools=[{"function": {"name": t.name}} for t in tools], case=case)
        reply = {}
        replay.chat([request], Sampling(), lambda r, message: reply.update(message))
        output = ModelOutput.from_content("reference", reply.get("content") or "")
        calls = [ToolCall(id=c["id"], function=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]))
                 for c in reply.get("tool_calls", [])]
        output.choices[0].message.tool_calls = calls or None
        output.choices[0].stop_reason = "tool_calls" if calls else "stop"
        return output

    return get_model("mockllm/model", custom_outputs=answer)


# The `inspect` command, with the one replacement of these tests (token counting), run where a user runs it: from
# outside the checkout (a checkout's own build metadata on sys.path hides the installed package's from inspect).
CLI = ("import sys, inspect_ai.model._model as m; m.count_text_tokens = lambda text: max(1, len(text) // 4); "
       "from inspect_ai._cli.main import main; sys.argv = ['inspect', *sys.argv[1:]]; sys.exit(main())")


@pytest.mark.e2e  # inspect's CLI in a process of its own; the task's scoring is covered in-process below
def test_inspect_eval_finds_the_task_by_its_registered_name(dataset, tmp_path):
    """`inspect eval stateeval/stateeval -T ...`: the task found through the package's entry point, run on
    mockllm, every sample scored 0 (prose is not a program) with the diagnosis as metadata."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    done = subprocess.run([sys.executable, "-c", CLI, "eval", "stateeval/stateeval", "-T", f"dataset={dataset}",
                           "-T", "scenario=tensor", "--model", "mockllm/model", "--log-dir", str(tmp_path / "logs"),
                           "--display", "none"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (info,) = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info)
    assert log.status == "success" and log.eval.task == "stateeval/stateeval"
    assert log.results.scores[0].metrics["accuracy"].value == 0.0
    got = scores(log)
    assert len(got) == 2 and {status for _, status in got.values()} == {"syntax_error"}
    metadata = log.samples[0].scores["sandboxed"].metadata
    assert metadata["diagnosis"]["cause"] == "syntax" and metadata["scenario"] == "tensor"


def test_code_mode_reference_scores_100(dataset, tmp_path):
    log = run(stateeval(dataset=dataset, variant="vague"), reference_code_model(dataset, "vague"), tmp_path)
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    assert set(scores(log).values()) == {(1, "pass")}


def test_tools_mode_mockllm_scores_0(dataset, tmp_path):
    log = run(stateeval(dataset=dataset, mode="tools", scenario="session"), "mockllm/model", tmp_path)
    assert log.results.scores[0].metrics["accuracy"].value == 0.0
    assert all(value == 0 for value, _ in scores(log).values())
    conversations = log.samples[0].metadata["conversations"]
    assert conversations and all(c["ended"] == "answered without a tool call" for c in conversations)


def test_tools_mode_reference_scores_100(dataset, tmp_path):
    log = run(stateeval(dataset=dataset, mode="tools"), reference_tools_model(dataset), tmp_path)
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    assert len(scores(log)) == 6 and set(scores(log).values()) == {(1, "pass")}
    calls = [m for c in log.samples[0].metadata["conversations"] for m in c["messages"] if m["role"] == "tool"]
    assert calls  # the tools ran, in the sandbox, on each test case's world


def test_bad_options_are_refused_in_one_line(dataset):
    with pytest.raises(ValueError, match="mode must be one of code, tools"):
        stateeval(dataset=dataset, mode="explore")
    with pytest.raises(ValueError, match="variant must be one of natural, steps, vague"):
        stateeval(dataset=dataset, variant="terse")
