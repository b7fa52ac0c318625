"""scripts/reader_prompts.py: the judging protocol's prompt files, exactly as a model is prompted, kept apart from
the references, with the command that scores a reader's answers."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from evaluate.prompts import build_messages

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "reader_prompts.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def as_model_sees_it(task, variant: str) -> str:
    return "\n".join(f"===== {m['role']}\n{m['content']}" for m in build_messages(task, variant))


def test_the_prompts_are_the_models_and_the_printed_command_scores_the_answers(small_dataset, small_tasks, tmp_path):
    out = tmp_path / "judge"
    proc = run("--dataset", str(small_dataset), "--out", str(out), "--n", "3", "--variants", "natural,vague")
    assert proc.returncode == 0, proc.stderr
    for variant in ("natural", "vague"):
        text = (out / "tensor" / variant / "prompts.txt").read_text()
        blocks = re.split(r"^################ TASK (\S+)\n", text, flags=re.M)[1:]
        assert [blocks[i] for i in range(0, len(blocks), 2)] == [t.task_id for t in small_tasks[:3]]
        for task, body in zip(small_tasks[:3], blocks[1::2]):
            assert body.strip() == as_model_sees_it(task, variant).strip()
            assert task.reference_program.strip() not in body
    # a reader that answers with the references passes: the command READER.md gives scores that answers file
    answers = out / "tensor" / "natural" / "answers.jsonl"
    answers.write_text("".join(json.dumps({"task_id": t.task_id, "code": t.reference_program}) + "\n"
                               for t in small_tasks[:3]))
    command = re.search(r"```\n(python -m evaluate .*--variant natural .*)\n```", (out / "READER.md").read_text())[1]
    scored = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert scored.returncode == 0, scored.stderr
    summary = json.loads(next((out / "tensor" / "natural" / "scores").rglob("results.json")).read_text())["summary"]
    assert summary["overall"]["pass@1"] == 1.0


def test_one_prompt_a_file(small_dataset, small_tasks, tmp_path):
    out = tmp_path / "judge"
    assert run("--dataset", str(small_dataset), "--out", str(out), "--n", "2", "--one-per-file").returncode == 0
    files = sorted((out / "tensor" / "natural").glob("*.txt"))
    assert [f.stem for f in files] == [t.task_id for t in small_tasks[:2]]
    assert files[0].read_text().strip() == as_model_sees_it(small_tasks[0], "natural").strip()


def test_a_folder_a_reader_could_use_to_find_the_references_is_refused(small_dataset, tmp_path):
    inside = run("--dataset", str(small_dataset), "--out", str(small_dataset / "judge"))
    assert inside.returncode == 2 and "inside the dataset folder" in inside.stderr
    assert not (small_dataset / "judge").exists()
    used = tmp_path / "used"
    used.mkdir()
    (used / "answers.jsonl").write_text("")
    again = run("--dataset", str(small_dataset), "--out", str(used))
    assert again.returncode == 2 and "already holds files" in again.stderr
    bad = run("--dataset", str(small_dataset), "--out", str(tmp_path / "x"), "--variants", "terse")
    assert bad.returncode == 2 and "unknown variant" in bad.stderr


def test_the_prompts_of_tests_mode_and_their_scoring_command(small_dataset, small_tasks, tmp_path):
    from evaluate.mutation_score import reference_test
    from evaluate.prompts import build_test_messages
    from evaluate.tests_mode import scored_tasks

    out = tmp_path / "judge"
    assert run("--dataset", str(small_dataset), "--out", str(out), "--n", "2", "--one-per-file", "--mode",
               "tests").returncode == 0
    tasks = scored_tasks(small_tasks)[:2]
    files = sorted((out / "tensor" / "natural").glob("*.txt"))
    assert [f.stem for f in files] == [t.task_id for t in tasks]
    assert files[0].read_text().strip() == "\n".join(f"===== {m['role']}\n{m['content']}"
                                                     for m in build_test_messages(tasks[0], "natural")).strip()
    # the command READER.md gives scores the answers as tests: the reference tests kill every mutant
    (out / "tensor" / "natural" / "answers.jsonl").write_text(
        "".join(json.dumps({"task_id": t.task_id, "code": reference_test(t)}) + "\n" for t in tasks))
    command = re.search(r"```\n(python -m evaluate .*--mode tests .*)\n```", (out / "READER.md").read_text())[1]
    scored = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert scored.returncode == 0, scored.stderr
    summary = json.loads(next((out / "tensor" / "natural" / "scores").rglob("results_tests.json")).read_text())
    assert summary["summary"]["overall"]["pass@1"] == 1.0
