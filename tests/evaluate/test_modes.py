"""`--mode tools` and `--mode explore`: conversations against a scripted OpenAI-compatible server on loopback (right
calls, wrong ones, malformed arguments, an unknown tool, calls up to the turn limit), the reference's replay, a
model that answers nothing, and a run killed and resumed without asking again for a turn it had."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.sandbox.harness import Sandbox
from core.statuses import NO_CODE, PASS, RESULT_ERROR
from evaluate.episodes import EXPLORE, TOOLS, snippet_report
from evaluate.run import EvalConfig, run, trace_references
from tests.evaluate.scripted_server import ScriptedServer, kill_after_lines

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scripts(small_tasks, sandbox):
    """The reference's tool calls on every test case of the small tensor build."""
    return trace_references(small_tasks, sandbox)


def _find(body: dict, tasks) -> tuple:
    """(task, test case) a tools-mode conversation is about: the instruction and the constants it shows."""
    user = body["messages"][1]["content"]
    task = next(t for t in tasks if t.instruction.strip() in user)
    for case in task.test_cases:
        constants = json.loads(case.constants)
        if all(f"- `{k}`: {json.dumps(v)}" in user for k, v in constants.items()):
            return task, case
    raise AssertionError("no test case matches the conversation")


def _calls(turn: int, calls: list[tuple[str, object]]) -> dict:
    return {"content": None, "tool_calls": [
        {"id": f"c{turn}_{i}", "type": "function",
         "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
        for i, (name, args) in enumerate(calls)]}


def _tool_results(body: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def test_scripted_tool_calls_score_as_expected_per_task(small_dataset, small_tasks, scripts, tmp_path):
    """Five behaviours on five tasks, each test case its own conversation:
    0 all the reference's calls in one turn (parallel), then submit -> pass;
    1 the right calls, one a turn, but the wrong handle submitted -> result_error;
    2 a call with malformed JSON arguments first, then the right calls -> pass (the error went back to the model);
    3 an unknown tool first, then the right calls -> pass;
    4 a call every turn, never a submission -> stopped at --max-turns (12), result_error."""
    tasks = small_tasks[:5]
    seen: dict[str, list] = {}

    def reply(body):
        task, case = _find(body, tasks)
        behaviour = tasks.index(task)
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        seen.setdefault(task.task_id, []).append((case.name, turn, _tool_results(body)))
        script = scripts[(task.task_id, case.name)]
        calls = [(c["name"], c["arguments"]) for c in script["calls"]]
        submit = ("submit_result", {"result": script["submit"]})
        if behaviour == 0:
            return _calls(turn, calls) if turn == 0 else _calls(turn, [submit])
        if behaviour == 4:
            return _calls(turn, [("torch_transpose", {"input": "x1", "dim0": 0, "dim1": 1})])
        if behaviour in (2, 3):
            if turn == 0:
                bad = ("torch_cat", '{"tensors": ["x1", "x1"], "dim": ') if behaviour == 2 else ("torch_frobnicate", {})
                return _calls(turn, [bad])
            turn -= 1
        if turn < len(calls):
            return _calls(turn, [calls[turn]])
        if behaviour == 1:
            return _calls(turn, [("submit_result", {"result": ["x1"]})])
        return _calls(turn, [submit])

    with ScriptedServer(reply) as server:
        report = run(EvalConfig(model="scripted", backend="openai", dataset=str(small_dataset), limit=5,
                                out=str(tmp_path), mode=TOOLS, max_turns=12, workers=2,
                                backend_options={"base_url": server.base_url, "concurrency": 4}))
    status = {row["task_id"]: row["status"] for row in report["samples"]}
    assert [status[t.task_id] for t in tasks] == [PASS, RESULT_ERROR, PASS, PASS, RESULT_ERROR]
    assert report["mode"] == TOOLS and report["max_turns"] == 12
    # the malformed arguments and the unknown tool were answered with an error the model read on its next turn
    errors = {tid: [r["error"] for _, turn, results in rows if turn == 1 for r in results if "error" in r]
              for tid, rows in seen.items()}
    assert all("not valid JSON" in e for e in errors[tasks[2].task_id]) and errors[tasks[2].task_id]
    assert all("unknown tool 'torch_frobnicate'" in e for e in errors[tasks[3].task_id]) and errors[tasks[3].task_id]
    # behaviour 4: twelve turns a conversation, no request after the limit
    rows = {row["task_id"]: row for row in report["samples"]}
    looping = rows[tasks[4].task_id]
    assert [c["turns"] for c in looping["cases"]] == [12] * len(tasks[4].test_cases)
    assert len(seen[tasks[4].task_id]) == 12 * len(tasks[4].test_cases)
    assert "no result was submitted" in looping["error"]
    # parallel calls: behaviour 0 made every call in its first turn and used two turns
    assert {c["turns"] for c in rows[tasks[0].task_id]["cases"]} == {2}
    results = json.loads(Path(report["path"]).read_text())
    assert results["turns"]["conversations"] == sum(len(t.test_cases) for t in tasks)
    assert Path(report["path"]).name == "results_tools.json"
    transcript = [json.loads(x) for x in (Path(report["path"]).parent / "conversations_tools.jsonl").open()]
    assert {t["task_id"] for t in transcript} == {t.task_id for t in tasks}
    assert all(t["messages"][0]["role"] == "system" for t in transcript)


def test_a_handle_result_reaches_the_model_as_a_summary(small_dataset, small_tasks, tmp_path):
    task = small_tasks[0]
    got = []

    def reply(body):
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        got.append(body)
        return _calls(turn, [("torch_cat", {"tensors": ["x1", "x1"], "dim": 0})]) if turn == 0 else ""

    with ScriptedServer(reply) as server:
        run(EvalConfig(model="scripted", backend="openai", dataset=str(small_dataset), limit=1, out=str(tmp_path),
                       mode=TOOLS, workers=1, backend_options={"base_url": server.base_url}))
    first = next(b for b in got if len(b["messages"]) == 2)
    second = next(b for b in got if len(b["messages"]) > 2)
    assert {t["function"]["name"] for t in first["tools"]} >= {"torch_cat", "F_conv2d", "submit_result"}
    shape = re.search(r'# float32, shape \(([\d, ]+)\)', task.setup_code.split("x1 = ")[1]).group(1)
    assert f'"shape": [{shape}]' in first["messages"][1]["content"]  # x1 as a handle with its shape
    cat = _tool_results(second)[0]
    assert cat["handle"] == "r1" and cat["value"]["tensor"]["dtype"] == "float32"
    dims = [int(x) for x in shape.split(",")]
    assert cat["value"]["tensor"]["shape"] == [2 * dims[0], *dims[1:]]


def test_a_model_that_answers_at_once_with_nothing_scores_zero_in_both_modes(small_dataset, tmp_path):
    with ScriptedServer(lambda body: "") as server:
        for mode in (TOOLS, EXPLORE):
            report = run(EvalConfig(model="silent", backend="openai", dataset=str(small_dataset), limit=4,
                                    out=str(tmp_path), mode=mode, workers=2,
                                    backend_options={"base_url": server.base_url}))
            assert report["summary"]["overall"]["pass@1"] == 0.0
            assert {row["status"] for row in report["samples"]} == {NO_CODE}
            assert report["turns"]["max"] == 1


def test_explore_runs_snippets_on_a_scratch_world_never_a_test_case(small_dataset, small_tasks, tmp_path):
    task = small_tasks[0]
    outputs = []

    def reply(body):
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn == 0:
            return _calls(turn, [("run_code", {"code": "print(float(x1.sum()))\nRESULT = [x1]"})])
        outputs.append(_tool_results(body)[0])
        return f"```python\n{task.reference_program}```"

    with ScriptedServer(reply) as server:
        report = run(EvalConfig(model="explorer", backend="openai", dataset=str(small_dataset), limit=1,
                                out=str(tmp_path), mode=EXPLORE, workers=1,
                                backend_options={"base_url": server.base_url}))
    assert report["samples"][0]["status"] == PASS
    seen = outputs[0]
    assert seen["status"] == "ran" and "tensor" in seen["RESULT"]
    from core.sandbox.harness import Job

    with Sandbox(1) as sandbox:  # the sum printed is none of the test cases' sums
        sums = [o.output.strip() for o in sandbox.run_untrusted(
            [Job(i, "tensor", "print(float(x1.sum()))\nRESULT = []", case) for i, case in enumerate(task.test_cases)])]
    assert seen["output"].strip() not in sums and all(sums)


def test_explore_runs_code_at_most_max_turns_times_however_the_calls_come(small_dataset, tmp_path):
    """The prompt says run_code may be called up to --max-turns times: three parallel calls a turn with
    --max-turns 2 run two snippets in all; every later call is answered that no runs are left."""
    seen = []

    def reply(body):
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        seen.append(_tool_results(body))
        return _calls(turn, [("run_code", {"code": f"print({turn}, {i})\nRESULT = []"}) for i in range(3)])

    with ScriptedServer(reply) as server:
        report = run(EvalConfig(model="eager", backend="openai", dataset=str(small_dataset), limit=1,
                                out=str(tmp_path), mode=EXPLORE, max_turns=2, workers=1,
                                backend_options={"base_url": server.base_url}))
    assert report["turns"]["max"] == 3  # the snippets' turns, then the one for the answer
    answered = seen[-1]
    ran = [r for r in answered if r.get("status") == "ran"]
    refused = [r for r in answered if "no code runs are left" in r.get("error", "")]
    assert [r["output"].split() for r in ran] == [["0", "0"], ["0", "1"]]
    assert len(refused) == 4  # the first turn's third call and the second turn's three


def test_snippet_report_shows_tensors_by_shape(small_tasks):
    from core.sandbox.harness import Outcome

    o = Outcome(0, "ok", result=[{"__tensor__": {"shape": [1, 2], "dtype": "float32", "data": "AAAA"}}], output="hi")
    assert json.loads(snippet_report(o)["RESULT"]) == [{"tensor": {"shape": [1, 2], "dtype": "float32"}}]


def _evaluate(args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-test")
    return subprocess.Popen([sys.executable, "-m", "evaluate", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.e2e  # a killed code-mode run resumes from the same cache by default (test_models.py)
def test_a_killed_tools_run_resumes_without_asking_again_for_a_turn_it_had(small_dataset, small_tasks, scripts,
                                                                              tmp_path):
    tasks = small_tasks[:3]

    def reply(body):  # the reference's calls, one a turn, then its submission: every task passes
        task, case = _find(body, tasks)
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        script = scripts[(task.task_id, case.name)]
        if turn < len(script["calls"]):
            return _calls(turn, [(script["calls"][turn]["name"], script["calls"][turn]["arguments"])])
        return _calls(turn, [("submit_result", {"result": script["submit"]})])

    args = ["--model", "scripted", "--backend", "openai", "--dataset", str(small_dataset), "--out", str(tmp_path),
            "--concurrency", "2", "--limit", "3", "--mode", "tools", "--workers", "2"]
    cache = tmp_path / "scripted" / "local" / "generations.jsonl"
    # Six turns answered, then the requests in flight wait: the run is killed with exactly six cached.
    with ScriptedServer(reply, hold_after=6) as first:
        done = kill_after_lines(_evaluate(args + ["--base-url", first.base_url]), cache, 6)
        assert done == 6
    # The resumed run talks to a server of its own, so a request of the killed run that arrives late is not its.
    with ScriptedServer(reply) as second_server:
        second = _evaluate(args + ["--base-url", second_server.base_url])
        out, _ = second.communicate(timeout=300)
    assert second.returncode == 0, out
    results = json.loads((tmp_path / "scripted" / "local" / "results_tools.json").read_text())
    assert results["summary"]["overall"]["pass@1"] == 1.0
    total = results["turns"]["total"]
    assert done < total
    assert f"resumed: {done} turn(s)" in out
    assert second_server.count() == total - done  # only the turns the cache did not hold were asked
    assert first.count() <= done + 2  # the kill lost at most the requests in flight


def test_samples_and_a_conversation_mode_are_refused_together(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "evaluate", "--samples", "x.jsonl", "--mode", "tools"],
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "--samples scores programs" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
