"""A voice task done over MCP: the official SDK's client drives `python -m scenarios.voice serve --recording ...`
through the task's tool calls and submit_result, and the harness scores the final state the server reports."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from core.sandbox.harness import Sandbox
from core.statuses import PASS, RESULT_ERROR
from evaluate.episodes import score_reported
from evaluate.run import trace_references
from scenarios.voice.episode import run_episode

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def voice_tasks(tmp_path_factory):
    from builder.config import BuildConfig
    from builder.pipeline import build
    from core.records import load_tasks

    out = tmp_path_factory.mktemp("voice") / "ds"
    build(BuildConfig(out=str(out), scenarios=["voice"], n=3, seed=11, created_at="2026-03-01", workers=1))
    tasks, _ = load_tasks(str(out))
    with Sandbox(1) as sandbox:
        return tasks, trace_references(tasks, sandbox)


def _episode(recording: Path, calls: list[dict], submit: list | None) -> dict:
    """Run the calls over MCP against a fresh server preloaded with the recording; return voice://result."""
    out = anyio.run(run_episode, ["-m", "scenarios.voice", "serve", "--recording", str(recording)], calls, submit)
    assert out["errors"] == [None] * len(calls), out["errors"]
    return out["reported"]


def _recording(task, case, folder: Path) -> Path:
    speech = next(a for a in case.assets if a["kind"] == "speech")
    path = folder / f"{task.task_id}-{case.name}.json"
    path.write_bytes(bytes(speech["data"]))
    return path


def test_an_mcp_client_completes_voice_tasks_that_the_harness_scores(voice_tasks, tmp_path):
    tasks, scripts = voice_tasks
    for task in tasks:
        for case in task.test_cases[:2]:
            script = scripts[(task.task_id, case.name)]
            reported = _episode(_recording(task, case, tmp_path), script["calls"], script["submit"])
            assert reported["submitted"]
            assert score_reported(task, case, reported) == (PASS, ""), (task.task_id, case.name)


def test_an_incomplete_mcp_episode_fails(voice_tasks, tmp_path):
    tasks, scripts = voice_tasks
    task = tasks[0]
    case = task.test_cases[0]
    script = scripts[(task.task_id, case.name)]
    unsubmitted = _episode(_recording(task, case, tmp_path), script["calls"], None)
    assert score_reported(task, case, unsubmitted)[0] == RESULT_ERROR
    short = _episode(_recording(task, case, tmp_path), script["calls"][:-1],
                     [item for item in script["submit"] if item != f"r{len(script['calls'])}"])
    status, message = score_reported(task, case, short)
    assert status == RESULT_ERROR and message


def _server_pid(recording: Path) -> int:
    """The MCP server started for `recording` (its path is on the command line)."""
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and str(recording).encode() in open(f"/proc/{pid}/cmdline", "rb").read() \
                    and int(pid) != os.getpid():
                return int(pid)
        except OSError:
            pass
    raise AssertionError(f"no MCP server serves {recording}")


def test_an_mcp_server_killed_mid_episode_leaves_nothing_to_score_and_a_new_one_gives_the_same_verdict(
        voice_tasks, tmp_path):
    """The lab's state lives in the server: killed mid-episode, the client's next request fails and there is no
    voice://result to score (no verdict, rather than a wrong one). A fresh server starts from the test case's own
    world, so the episode run again on it gets the verdict it gets undisturbed."""
    tasks, scripts = voice_tasks
    task = tasks[0]
    case = task.test_cases[0]
    script = scripts[(task.task_id, case.name)]
    recording = _recording(task, case, tmp_path)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "scenarios.voice", "serve", "--recording", str(recording)],
                                   env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    failures: list[BaseException] = []
    results: list = []  # what the server answered after the kill: nothing may be a result to score

    async def main():
        with anyio.fail_after(TIMEOUT_S):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    first = script["calls"][0]
                    assert not (await session.call_tool(first["name"], first["arguments"])).is_error
                    os.kill(_server_pid(recording), signal.SIGKILL)
                    for call in script["calls"][1:]:
                        try:
                            result = await session.call_tool(call["name"], call["arguments"])
                        except Exception as exc:  # noqa: BLE001 - whatever the SDK raises for a dead server
                            failures.append(exc)
                            break
                        results.append(("call", result.is_error))
                    try:
                        results.append(("result", await session.read_resource("voice://result")))
                    except Exception as exc:  # noqa: BLE001
                        failures.append(exc)

    try:
        anyio.run(main)
    except Exception:  # noqa: BLE001 - the client's task group may raise as it closes on a dead server
        pass
    assert not any(kind == "result" or not is_error for kind, is_error in results), results
    assert len(failures) == 2, failures  # the next call, and reading the result
    reported = _episode(recording, script["calls"], script["submit"])
    assert score_reported(task, case, reported) == (PASS, "")
