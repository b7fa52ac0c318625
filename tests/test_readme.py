"""The README's commands, run as written: every command in its bash blocks is either run here or named below as
needing what these machines lack (a GPU, a hosted model, a model's run); a new command the README shows must be
put in one of these lists.

They run in a scratch folder where `stateeval` is a copy of the tests' small dataset (the README's first command
builds the full one; `.ci/run` and the set-up check run that) and `answers.jsonl` holds the reference programs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SET_UP = {  # run by .ci/run and on a fresh machine before the tests (the tests themselves are one of them)
    'pip install torch==2.13.0 && pip install -e ".[dev]" && python -m builder',
    'pip install -e ".[ray,inspect]" && python -m pytest',
}
CHEAP = [  # run in the default test run, in this order (a later one reads what an earlier one wrote)
    """python -c "from datasets import load_dataset; print(load_dataset('stateeval'))\"""",
    "python -m evaluate --model reference --dataset stateeval",
    "python -m evaluate --samples answers.jsonl --dataset stateeval",
    "python -m evaluate.report results/reference/local results/answers/local",
]
FRESH = "python -m builder --fresh --against stateeval --out stateeval-fresh"  # a full-size build, about 30 s
ELSEWHERE = {  # what each needs that these machines lack
    "python -m evaluate --model gpt-4.1-nano --n-samples 5 --temperature 0.8": "a hosted model (OPENAI_API_KEY)",
    "python -m evaluate --model my-model --backend openai --base-url http://localhost:8000/v1": "a model server",
    "python -m evaluate --model qwen": "a GPU (vLLM)",
    "python -m evaluate --model gpt-4.1-nano --mode tools": "a hosted model",
    "inspect eval stateeval/stateeval -T scenario=session --model openai/gpt-4.1": "a hosted model",
    "python -m evaluate --model gpt-4.1-nano --dataset stateeval-fresh --since 2026-06-30": "a hosted model",
    'python -m evaluate.leaderboard submit results/qwen/v1.0.0 --name "Qwen2.5-Coder-32B-Instruct" --org Alibaba '
    "--params 32B --weights open --link https://huggingface.co/Qwen/Qwen2.5-Coder-32B-Instruct":
        "a run of Qwen on a GPU",
    "python -m evaluate.leaderboard validate leaderboard/submissions/Qwen2.5-Coder-32B-Instruct_2026-11-22 "
    "--dataset stateeval": "that run's submission",
    "python -m evaluate.leaderboard build --out site": "submissions to show (tests/evaluate/test_leaderboard.py "
                                                      "builds one from reference runs)",
}


def readme_commands() -> list[str]:
    """Every command of the README's bash blocks, continuation lines joined, comments dropped."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line:
                commands.append(re.sub(r"\s+", " ", line))
    return commands


def test_every_readme_command_is_run_or_says_why_not():
    listed = SET_UP | set(CHEAP) | {FRESH} | set(ELSEWHERE)
    shown = readme_commands()
    assert [c for c in shown if c not in listed] == []
    assert [c for c in listed if c not in shown] == []  # nothing stale here either


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == "python"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_DATASETS_CACHE=str(cwd / ".hf-cache"))
    done = subprocess.run([sys.executable, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture
def scratch(small_dataset, small_tasks, tmp_path):
    shutil.copytree(small_dataset, tmp_path / "stateeval")
    (tmp_path / "answers.jsonl").write_text(
        "".join(json.dumps({"task_id": t.task_id, "code": t.reference_program}) + "\n" for t in small_tasks))
    return tmp_path


def test_the_cheap_readme_commands_run_as_written(scratch, small_tasks):
    loaded, reference, answers, report = (run(c, scratch) for c in CHEAP)
    assert f"num_rows: {len(small_tasks)}" in loaded.stdout and "tensor" in loaded.stdout
    for done in (reference, answers):
        written = re.search(r"^wrote (\S+results\.json)$", done.stdout, re.M)[1]
        results = json.loads((scratch / written).read_text())  # the path as printed: relative to where it ran
        assert results["summary"]["overall"]["pass@1"] == 1.0  # the references, replayed or as samples
    assert "| reference |" in report.stdout and "| answers |" in report.stdout


def test_the_fresh_split_command_runs_as_written(scratch):
    run(FRESH, scratch)
    manifest = json.loads((scratch / "stateeval-fresh" / "MANIFEST.json").read_text())
    assert manifest["config"]["fresh"] and manifest["config"]["against"] == ["stateeval"]
