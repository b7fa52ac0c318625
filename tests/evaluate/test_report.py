"""`python -m evaluate.report`: two real runs (the reference and a samples file with wrong programs) side by side,
and the refusal to put runs on different datasets or variants together."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evaluate.report import main
from evaluate.usage import Price

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 4


@pytest.fixture(scope="module")
def two_runs(small_dataset, small_tasks, tmp_path_factory):
    """(reference results.json, samples results.json): the samples get task 1 wrong (RESULT = None, it runs but
    makes none of the calls) and task 2 raising in its own code (it does not run), the rest right."""
    from evaluate.run import EvalConfig, run

    out = tmp_path_factory.mktemp("report")
    codes = {1: "RESULT = None\n", 2: "raise RuntimeError('boom')\n"}
    samples = out / "wrong.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t.task_id, "code": codes.get(i, t.reference_program)})
                               + "\n" for i, t in enumerate(small_tasks[:LIMIT])))
    common = dict(dataset=str(small_dataset), out=str(out), limit=LIMIT, workers=2)
    reference = run(EvalConfig(model="reference", price=Price(2.0, 8.0), **common))
    wrong = run(EvalConfig(samples=str(samples), **common))
    return Path(reference["path"]), Path(wrong["path"])


def test_two_real_runs_side_by_side(two_runs, capsys):
    reference, wrong = two_runs
    assert main([str(reference.parent), str(wrong)]) == 0  # a run folder or its results.json
    out = capsys.readouterr().out
    table = [line for line in out[:out.index("## Paired")].splitlines() if line.startswith("|")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    assert head == ["model", "run", "variant", "dataset", "n", "tasks", "pass@1", "success@1", "arg_match",
                    "top causes", "tokens", "cost", "tensor pass@1"]
    rows = {r["model"]: r for r in (dict(zip(head, (c.strip() for c in line.strip("|").split("|"))))
                                    for line in table[2:])}
    assert set(rows) == {"reference", "wrong"}
    # every rate with its Wilson interval over the 4 tasks
    assert rows["reference"]["pass@1"] == "100.0% [51.0, 100.0]" and rows["reference"]["success@1"].startswith("100.0% [")
    assert rows["wrong"]["pass@1"] == "50.0% [15.0, 85.0]" and rows["wrong"]["success@1"].startswith("75.0% [")
    assert rows["wrong"]["tensor pass@1"] == "50.0% [15.0, 85.0]"
    # the paired difference: the two tasks the wrong run lost are its only disagreements, too few to be significant
    paired = out[out.index("## Paired"):]
    assert "| reference | wrong | 4 | 100.0% | 50.0% | -50.0 |" in paired and "| 0.500 | mcnemar exact | no |" in paired
    assert rows["reference"]["arg_match"] == "1.00" and rows["reference"]["top causes"] == "-"
    assert rows["wrong"]["arg_match"] == "0.50"  # two right programs, and two that make no call
    assert rows["wrong"]["top causes"] == "crash 1, missing_call 1"
    data = json.loads(reference.read_text())
    assert rows["reference"]["tokens"] == f"~{data['usage']['overall']['total_tokens']:,}"  # a cl100k estimate
    assert rows["reference"]["cost"] == f"${data['usage']['overall']['cost_usd']:.4f}"
    assert rows["wrong"]["cost"] == "-"  # scored without a price
    assert rows["reference"]["dataset"] == data["dataset"]["content_hash"][:12] == rows["wrong"]["dataset"]


def test_pass_at_k_columns_are_the_ks_every_run_reports(two_runs, tmp_path, capsys):
    reference, wrong = two_runs
    more = tmp_path / "more.json"
    data = json.loads(reference.read_text())
    data["summary"]["overall"].update({"pass@2": 1.0, "pass@3": 1.0})  # as a run with n = 3 would
    more.write_text(json.dumps(data))
    assert main([str(more), str(wrong)]) == 0
    assert "pass@2" not in capsys.readouterr().out  # `wrong` has n = 1
    assert main([str(more), str(more)]) == 0
    head = capsys.readouterr().out.splitlines()[4]
    assert "| pass@2 | pass@3 |" in head


@pytest.mark.parametrize("field, value, named", [
    ("content_hash", "0" * 64, "dataset content hash"),
    ("variant", "vague", "variant"),
    ("mode", "tools", "mode"),
    ("tier", "calls-7-branches-2", "difficulty tier"),
])
def test_runs_that_are_not_comparable_are_refused_in_one_line(two_runs, tmp_path, capsys, field, value, named):
    reference, wrong = two_runs
    other = tmp_path / "other.json"
    data = json.loads(wrong.read_text())
    if field in ("variant", "mode"):
        data[field] = value
    elif field == "tier":
        data["dataset"]["difficulty"]["tier"] = value
    else:
        data["dataset"][field] = value
    other.write_text(json.dumps(data))
    assert main([str(reference), str(other)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert f"differ in {named}" in captured.err and "--force" in captured.err and value in captured.err
    assert main([str(reference), str(other), "--force"]) == 0
    assert "not comparable" in capsys.readouterr().out


def test_a_file_that_is_not_a_results_json_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main([str(bad)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {bad}: not a results.json written by python -m evaluate " \
                                              "(it has no summary)"
    assert main([str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_an_out_that_cannot_be_written_is_one_line_after_the_table(two_runs, unwritable):
    reference, wrong = two_runs
    md = unwritable.folder / "r.md"
    proc = subprocess.run(unwritable.argv([sys.executable, "-m", "evaluate.report", reference, wrong, "--out", md]),
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "| reference |" in proc.stdout  # the table is printed all the same
    assert re.fullmatch(f"error: cannot write {re.escape(str(md))}: {unwritable.why}; .*--out\n", proc.stderr)
    assert not os.path.lexists(md)


def test_a_plot_folder_that_cannot_be_made_is_one_line(two_runs, under_a_file, capsys):
    pytest.importorskip("matplotlib")
    reference, wrong = two_runs
    assert main([str(reference), str(wrong), "--plot", str(under_a_file)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: cannot write {under_a_file}: {under_a_file.parent} is a file, not a folder; pass another " \
                  "--plot\n"


def test_plot_and_out_write_the_figure_and_the_table(two_runs, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    reference, wrong = two_runs
    md = tmp_path / "compare.md"
    assert main([str(reference), str(wrong), "--plot", str(tmp_path / "fig"), "--out", str(md)]) == 0
    captured = capsys.readouterr()
    png = tmp_path / "fig" / "pass_at_1_by_run.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000
    assert md.read_text() == captured.out
    assert str(png) in captured.err


def test_help_teaches_what_is_compared_and_refused():
    proc = subprocess.run([sys.executable, "-m", "evaluate.report", "--help"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode == 0
    for text in ("RESULTS", "--plot", "--force", "--out", "success@1", "content hash", "Examples"):
        assert text in proc.stdout


@pytest.fixture(scope="module")
def wrong_at_known_calls(small_dataset, small_tasks, tmp_path_factory):
    """A run of held-out wrong programs, each wrong at a call known in advance: the first four leave out their
    reference's second call (the line that makes it), the fifth makes every call right and sets RESULT = None, the
    sixth answers nothing. Returns (results.json, {task_id: the operation it is wrong at}, the tasks scored)."""
    from evaluate.run import EvalConfig, run
    from scenarios.trace import load_stored

    tasks = small_tasks[:6]
    out = tmp_path_factory.mktemp("by-operation")
    codes, wrong_at = {}, {}
    for t in tasks[:4]:
        lines = t.reference_program.splitlines()
        calls = load_stored(t.test_cases[0].trace)
        assert len(calls) >= 2 and not lines[0].startswith("if") and not lines[1].startswith("if"), t.task_id
        codes[t.task_id] = "\n".join(lines[:1] + lines[2:]) + "\n"
        wrong_at[t.task_id] = calls[1]["api"]
    codes[tasks[4].task_id] = tasks[4].reference_program + "\nRESULT = None\n"
    codes[tasks[5].task_id] = ""
    samples = out / "held_out.jsonl"
    samples.write_text("".join(json.dumps({"task_id": k, "code": v}) + "\n" for k, v in codes.items()))
    done = run(EvalConfig(samples=str(samples), dataset=str(small_dataset), out=str(out), limit=6, workers=1))
    return Path(done["path"]), wrong_at, tasks


def test_by_operation_names_the_operation_each_held_out_program_was_wrong_at(wrong_at_known_calls, tmp_path, capsys):
    from collections import Counter

    from scenarios.trace import load_stored

    results, wrong_at, tasks = wrong_at_known_calls
    rows_file = tmp_path / "rows.json"
    assert main(["--by", "operation", str(results), "--json", str(rows_file)]) == 0
    table = capsys.readouterr().out
    rows = {r["operation"]: r for r in json.loads(rows_file.read_text())["held_out"]}
    charged = Counter(wrong_at.values())
    for op, row in rows.items():
        if op.startswith("("):
            continue
        assert row["wrong_at"] == charged.get(op, 0), op
        should = sum(any(c["api"] == op for case in t.test_cases for c in load_stored(case.trace)) for t in tasks)
        assert row["should_call"] == should, op
    assert set(charged) <= set(rows)
    # every program left out its second call, so each operation's example is a task charged to it, at call 1
    for op in charged:
        example = rows[op]["example"]
        assert wrong_at[example["task_id"]] == op and example["index"] == 1
        assert f"| `{op}` |" in table
    assert rows["(RESULT)"]["wrong_at"] == 1 and rows["(RESULT)"]["causes"] == {"result_shape": 1}
    assert rows["(no calls)"]["wrong_at"] == 1 and rows["(no calls)"]["causes"] == {"no_code": 1}


def test_by_operation_refuses_a_dataset_that_is_not_the_runs(wrong_at_known_calls, tmp_path, capsys):
    results, _, _ = wrong_at_known_calls
    data = json.loads(results.read_text())
    data["dataset"]["content_hash"] = "0" * 64  # a run of another build of the same folder
    moved = tmp_path / "results.json"
    moved.write_text(json.dumps(data))
    assert main(["--by", "operation", str(moved)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not the dataset" in err[0] and "--dataset" in err[0]
