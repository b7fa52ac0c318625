"""`--mode tests` (evaluate/tests_mode.py) on the small tensor build: the reference backend's reference tests kill
every stored mutant; tests that cannot fail, empty answers and false alarms score 0; refinement on a live world,
correct or mutated, is recorded; and the command line refuses what the mode cannot do."""

from __future__ import annotations

import json

import pytest

from core.records import DatasetError
from evaluate.__main__ import parse_args
from evaluate.episodes import MUTATED, TESTS
from evaluate.mutation_score import reference_test
from evaluate.report import ReportError, load_run
from evaluate.run import EvalConfig, run
from evaluate.tests_mode import scored_tasks

LIMIT = 3


def _run(small_dataset, tmp_path, **options) -> dict:
    config = EvalConfig(dataset=str(small_dataset), mode=TESTS, limit=LIMIT, out=str(tmp_path), workers=2,
                        **options)
    return run(config)


def test_the_build_stores_the_mutants_its_reference_tests_kill(small_build, small_tasks):
    _, report = small_build
    summary = report["world_mutants"]["tensor"]
    assert summary["kept"] == sum(len(t.world_mutants) for t in small_tasks) > 0
    assert summary["tests_mode_tasks"] == sum(bool(t.world_mutants) for t in small_tasks)
    assert summary["tests_mode_tasks"] + summary["below_bar"] == len(small_tasks)
    assert summary["killed"] <= summary["changed"] <= summary["tried"] and summary["score"] >= 0.9
    kinds = {m["kind"] for t in small_tasks for m in t.world_mutants}
    assert {"altered", "ignored"} <= kinds, "a tensor task's calls give answers to alter and calls to skip"


def test_reference_tests_kill_every_mutant(small_dataset, tmp_path):
    report = _run(small_dataset, tmp_path, model="reference")
    overall = report["summary"]["overall"]
    assert overall["tasks"] == LIMIT and overall["pass@1"] == 1.0 and overall["mutation_score"] == 1.0
    assert overall["statuses"]["kills_all"] == LIMIT and overall["missed_kinds"] == {}
    written = json.loads((tmp_path / "reference" / "local" / "results_tests.json").read_text())
    assert written["mode"] == TESTS and written["refine_on"] is None and written["max_turns"] == 0
    assert all(row["score"] == 1.0 and row["missed"] == [] for row in written["samples"])

    with pytest.raises(ReportError, match="a tests-mode run"):
        load_run(tmp_path / "reference" / "local" / "results_tests.json")


def test_tests_that_cannot_fail_score_zero_and_weaker_ones_less(small_dataset, small_tasks, tmp_path):
    tasks = scored_tasks(small_tasks)[:LIMIT]
    answers = tmp_path / "answers.jsonl"
    lines = []
    for t in tasks:
        for code in (reference_test(t), "assert True\n", "", "assert False, 'never'\n", t.reference_program):
            lines.append(json.dumps({"task_id": t.task_id, "code": code}))
    answers.write_text("\n".join(lines) + "\n")
    report = _run(small_dataset, tmp_path, samples=str(answers))
    rows = {(r["task_id"], r["sample"]): r for r in report["samples"]}
    for t in tasks:
        reference, trivial, empty, alarm, program = (rows[(t.task_id, s)] for s in range(5))
        assert reference["status"] == "kills_all" and reference["score"] == 1.0
        assert (trivial["status"], trivial["score"]) == ("kills_none", 0.0)
        assert (empty["status"], empty["score"]) == ("no_code", 0.0)
        assert alarm["status"] == "false_alarm" and alarm["score"] == 0.0 and "never" in alarm["error"]
        assert program["score"] < reference["score"] and program["missed_kinds"], "a program asserts nothing"
    overall = report["summary"]["overall"]
    assert overall["samples"] == 5 * LIMIT and overall["pass@1"] == pytest.approx(0.2)  # one in five kills all
    assert "a wrong answer" in overall["missed_kinds"]


def test_refinement_on_a_mutated_world_is_recorded(small_dataset, small_tasks, tmp_path):
    report = _run(small_dataset, tmp_path, model="reference", max_turns=1, refine_on=MUTATED)
    assert report["refine_on"] == MUTATED and report["max_turns"] == 1
    assert report["summary"]["overall"]["mutation_score"] == 1.0, "the final test is scored on every world"
    conversations = [json.loads(line) for line in
                     (tmp_path / "reference" / "local" / "conversations_tests.jsonl").read_text().splitlines()]
    first = {t.task_id: t.world_mutants[0] for t in small_tasks}
    for c in conversations:
        mutant = first[c["task_id"]]
        assert c["world"].startswith(f"{mutant['kind']}({mutant['api']}")
        ran = json.loads(next(m for m in c["messages"] if m["role"] == "tool")["content"])
        assert ran["status"] == "failed", "the reference test fails on a world its task's mutant changed"


def test_refinement_on_the_correct_world_passes_the_reference(small_dataset, tmp_path):
    report = _run(small_dataset, tmp_path, model="reference", max_turns=2)
    assert report["refine_on"] == "correct" and report["turns"]["max"] == 2
    conversations = (tmp_path / "reference" / "local" / "conversations_tests.jsonl").read_text().splitlines()
    for line in conversations:
        c = json.loads(line)
        assert c["world"] == "correct"
        assert json.loads(next(m for m in c["messages"] if m["role"] == "tool")["content"])["status"] == "passed"


def test_a_dataset_without_world_mutants_is_refused_with_the_fix(small_tasks):
    import dataclasses

    with pytest.raises(DatasetError, match="rebuild the dataset"):
        scored_tasks([dataclasses.replace(t, world_mutants=[]) for t in small_tasks])


@pytest.mark.parametrize("argv, problem", [
    (["--model", "reference", "--refine-on", "mutated"], "needs --mode tests and --max-turns"),
    (["--model", "reference", "--mode", "tests", "--refine-on", "mutated"], "needs --mode tests and --max-turns"),
    (["--samples", "a.jsonl", "--mode", "tests", "--max-turns", "2"], "with --samples there is none"),
    (["--samples", "a.jsonl", "--mode", "tools"], "needs a model that converses"),
])
def test_the_command_line_refuses_what_tests_mode_cannot_do(argv, problem, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert problem in capsys.readouterr().err


def test_tests_mode_runs_no_turns_unless_asked():
    assert parse_args(["--model", "reference", "--mode", "tests"]).max_turns == 0
    config = parse_args(["--model", "reference", "--mode", "tests", "--max-turns", "3", "--refine-on", "mutated"])
    assert (config.max_turns, config.refine_on) == (3, MUTATED)
    assert parse_args(["--model", "reference", "--mode", "explore"]).max_turns == 20
