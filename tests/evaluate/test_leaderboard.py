"""`python -m evaluate.leaderboard`: submissions made from real runs validate; edited ones are refused; the board.

Every submission here comes from a real `python -m evaluate` run on the session's small dataset (see
leaderboard_support.py). Refusal cases start from a copy of a validated submission and change one thing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluate.leaderboard import SubmissionError, build, load_submission, submit, validate
from evaluate.leaderboard.board import (
    BuildReport,
    Entry,
    Group,
    parameter_count,
    render_html,
    render_markdown,
    version_key,
)
from evaluate.leaderboard.validation import stamp_problem
from tests.conftest import read_only
from tests.evaluate.leaderboard_support import ROOT
from tests.evaluate.leaderboard_support import board as make_board
from tests.evaluate.leaderboard_support import cli, expected_pass1, ok


@pytest.fixture(scope="module")
def lb(small_dataset, sandbox, tmp_path_factory):
    return make_board(Path(small_dataset), sandbox, tmp_path_factory)


def copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n")


def edit_lines(path: Path, change) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(rows)))


# ------------------------------------------------------------------------------------------------------- submit

def test_submission_holds_the_run_and_the_model_metadata(lb):
    folder = lb.submissions["reference"]
    assert re.fullmatch(r"Reference-replay_\d{4}-\d{2}-\d{2}", folder.name)
    assert folder.parent == lb.root / "submissions"
    assert (folder / "results.json").read_bytes() == (lb.runs["reference"] / "results.json").read_bytes()
    meta = json.loads((folder / "metadata.json").read_text())
    results = json.loads((folder / "results.json").read_text())
    assert meta["name"] == "Reference replay" and meta["organisation"] == "StateEval"
    assert meta["weights"] == "open" and meta["link"] == "https://example.org/reference"
    assert meta["dataset"] == {"version": "v1.0.0", "content_hash": results["dataset"]["content_hash"],
                               "tasks": 12, "scenarios": ["tensor"]}
    assert meta["evaluation_date"] == results["evaluated_at"][:10] and meta["generations"] == "replies"
    gens = [json.loads(line) for line in (folder / "generations.jsonl").read_text().splitlines()]
    assert [(g["task_id"], g["sample"]) for g in gens] == [(s["task_id"], s["sample"]) for s in results["samples"]]
    assert all(g["reply"].startswith("```python") for g in gens)


def test_submission_keeps_only_the_replies_the_run_scored(lb, tmp_path):
    run = copy(lb.runs["reference"], tmp_path / "run")
    stale = {"key": "0" * 24, "task_id": "tensor-0000", "sample": 0, "reply": "RESULT = 'from an older prompt'"}
    with open(run / "generations.jsonl", "a") as f:
        f.write(json.dumps(stale) + "\n")
    folder = submit(run, "Stale lines", root=tmp_path / "lb")
    text = (folder / "generations.jsonl").read_text()
    assert "older prompt" not in text and len(text.splitlines()) == 12


def test_samples_run_packages_its_samples_file_as_the_generations(lb):
    folder = lb.submissions["zeta"]
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["generations"] == "code" and meta["parameters"] == "7B"
    gens = [json.loads(line) for line in (folder / "generations.jsonl").read_text().splitlines()]
    given = [json.loads(line) for line in lb.samples["zeta"].read_text().splitlines()]
    assert [(g["task_id"], g["code"]) for g in gens] == [(s["task_id"], s["code"]) for s in given]


@pytest.mark.e2e  # variants ranked apart: test_leaderboard_modes.py, by default
def test_a_vague_run_is_submitted_from_the_command_line_and_validates(lb, sandbox, tmp_path):
    out = tmp_path / "results"
    ok(cli("evaluate", "--samples", lb.samples["zeta"], "--variant", "vague", "--dataset", lb.dataset_v1,
           "--revision", "v1.0.0", "--out", out, "--workers", "1"))
    run = out / "zeta" / "v1.0.0"
    assert json.loads((run / "results_vague.json").read_text())["sandbox"]["timeout_s"] == 10.0
    proc = ok(cli("evaluate.leaderboard", "submit", run, "--name", "Zeta vague", "--variant", "vague",
                  "--samples", lb.samples["zeta"], "--root", tmp_path / "board"))
    folder = Path(proc.stdout.split("wrote ", 1)[1].split("\n", 1)[0])
    assert load_submission(folder).variant == "vague"
    report = validate(folder, str(lb.dataset_v1), sandbox=sandbox)
    assert report.ok, report.format()


def test_samples_run_without_its_samples_file_says_what_to_pass(lb, tmp_path):
    with pytest.raises(SubmissionError, match="--samples"):
        submit(lb.runs["zeta"], "Zeta", root=tmp_path)


def test_run_without_a_dataset_version_asks_for_one(lb, tmp_path):
    run = copy(lb.runs["reference"], tmp_path / "run")
    edit_json(run / "results.json", lambda r: r["dataset"].update(revision=None))
    with pytest.raises(SubmissionError, match="--dataset-version"):
        submit(run, "No version", root=tmp_path / "lb")
    folder = submit(run, "No version", dataset_version="v1.0.0", root=tmp_path / "lb")
    assert load_submission(folder).version == "v1.0.0"


def test_existing_submission_is_not_replaced_without_force(lb):
    with pytest.raises(SubmissionError, match="--force"):
        submit(lb.runs["reference"], "Reference replay", root=lb.root)


def test_a_run_missing_most_tasks_is_refused_in_one_short_line(lb, tmp_path):
    """The error used to list every missing task id (283 of them, 3,000 characters, for the default release)."""
    run = copy(lb.runs["reference"], tmp_path / "run")
    edit_json(run / "results.json", lambda r: r.update(samples=r["samples"][:2]))
    with pytest.raises(SubmissionError) as caught:
        submit(run, "Two tasks", root=tmp_path / "lb")
    message = str(caught.value)
    assert "10 of the dataset's 12 tasks are missing from results.json: tensor-0002, tensor-0003, tensor-0004, " \
           "tensor-0005, tensor-0006 and 5 more" in message
    assert "\n" not in message and "tensor-0011" not in message
    assert not (tmp_path / "lb").exists()


def test_tasks_with_the_wrong_samples_are_counted_not_listed(lb, tmp_path):
    run = copy(lb.runs["reference"], tmp_path / "run")
    edit_json(run / "results.json", lambda r: r.update(samples=r["samples"] + [dict(s, sample=1)
                                                                                for s in r["samples"]]))
    with pytest.raises(SubmissionError) as caught:
        submit(run, "Extra samples", root=tmp_path / "lb")
    assert "12 task(s) have other samples than results.json's n_samples asks: tensor-0000 (samples [0, 1] in " \
           "results.json, expected 0..0 (n_samples 1)), tensor-0001 (" in str(caught.value)
    assert "tensor-0002" not in str(caught.value) and str(caught.value).endswith("and 10 more")


def test_a_root_that_cannot_be_written_is_refused_in_one_line(lb, unwritable):
    root = unwritable.folder / "lb"
    proc = cli_in(unwritable, "submit", lb.runs["reference"], "--name", "Nowhere", "--root", root)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert re.fullmatch(f"error: cannot write {re.escape(str(root))}/submissions/Nowhere_[0-9-]+: {unwritable.why}; "
                        ".*--root\n", proc.stderr)
    assert not os.path.lexists(root) and proc.stdout == ""


def cli_in(unwritable, *args) -> subprocess.CompletedProcess:
    """`python -m evaluate.leaderboard ARGS`, run where `unwritable.folder` cannot be written."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(unwritable.argv([sys.executable, "-m", "evaluate.leaderboard", *args]), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_link_must_be_http(lb, tmp_path):
    with pytest.raises(SubmissionError, match="http"):
        submit(lb.runs["reference"], "Bad link", link="javascript:alert(1)", root=tmp_path)


# ----------------------------------------------------------------------------------------------------- validate

def test_submissions_made_from_real_runs_validate(lb):
    for label, folder in lb.submissions.items():
        assert stamp_problem(folder) is None, label
        stamp = json.loads((folder / "validation.json").read_text())
        assert stamp["status"] == "valid" and stamp["rescored_samples"] == (3 if label.endswith("v2") else 12)


def test_validate_command_accepts_a_real_submission(lb, tmp_path):
    folder = copy(lb.submissions["zeta"], tmp_path / "zeta")
    (folder / "validation.json").unlink()
    proc = ok(cli("evaluate.leaderboard", "validate", folder, "--dataset", lb.dataset_v1, "--workers", "2"))
    assert proc.stdout.startswith(f"valid: {folder} (dataset v1.0.0): re-scored 12 sample(s)")
    assert stamp_problem(folder) is None


def test_one_edited_score_is_refused_naming_the_task(lb, tmp_path):
    folder = copy(lb.submissions["zeta"], tmp_path / "edited")

    def promote(results):
        row = next(s for s in results["samples"] if s["status"] == "result_error")
        row["status"], row["cases"][0]["status"] = "pass", "pass"
        results["summary"]["overall"]["pass@1"] += 1 / 12
        results["edited_task"] = row["task_id"]

    edit_json(folder / "results.json", promote)
    task = json.loads((folder / "results.json").read_text())["edited_task"]
    proc = cli("evaluate.leaderboard", "validate", folder, "--dataset", lb.dataset_v1, "--workers", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"refused: {folder}")
    assert "1 task(s) differ from results.json" in proc.stdout
    assert re.search(rf"{task}: sample 0: submitted pass, re-scored result_error", proc.stdout)
    assert re.search(r"overall\.pass@1: submitted 0\.75, re-scored 0\.666", proc.stdout)
    assert not (folder / "validation.json").exists()  # the copied stamp is removed


def test_an_edited_generation_is_refused(lb, sandbox, tmp_path):
    folder = copy(lb.submissions["reference"], tmp_path / "reply")

    def swap(rows):
        rows[3]["reply"] = "```python\nRESULT = 0\n```"
        return rows

    edit_lines(folder / "generations.jsonl", swap)
    report = validate(folder, str(lb.dataset_v1), sandbox=sandbox)
    assert not report.ok and list(report.tasks) == ["tensor-0003"]
    assert "submitted pass, re-scored result_error" in report.tasks["tensor-0003"][0]
    assert [line for line in report.summary if ".diagnosis." not in line and ".ci95." not in line] == [
        "overall.pass@1: submitted 1.0, re-scored 0.9166666666666666",
        "overall.pass^1: submitted 1.0, re-scored 0.9166666666666666",
        "overall.statuses.pass: submitted 12, re-scored 11",
        "overall.statuses.result_error: submitted 0, re-scored 1",
        "scenarios.tensor.pass@1: submitted 1.0, re-scored 0.9166666666666666",
        "scenarios.tensor.pass^1: submitted 1.0, re-scored 0.9166666666666666",
        "scenarios.tensor.statuses.pass: submitted 12, re-scored 11",
        "scenarios.tensor.statuses.result_error: submitted 0, re-scored 1"]
    # and so are the intervals
    assert any(line.startswith("overall.ci95.pass@1: submitted [0.75") for line in report.summary)
    # the diagnosis is re-scored too: the edited reply makes none of the reference's calls
    assert "overall.diagnosis.causes.missing_call: submitted 0, re-scored 1" in report.summary
    assert any(line.startswith("overall.diagnosis.arg_match: submitted 1.0, re-scored 0.91") for line in report.summary)


@pytest.mark.parametrize("dropped", [("diagnosis",), ("success@", "diagnosis"), ("ci95", "pass^", "interval")])
def test_a_results_json_from_before_success_at_k_or_the_diagnosis_still_validates(lb, sandbox, tmp_path,
                                                                                  dropped):
    folder = copy(lb.submissions["zeta"], tmp_path / "legacy")

    def drop_success(results):
        for block in [results["summary"], results["summary"]["overall"], *results["summary"]["scenarios"].values()]:
            for key in [k for k in block if k.startswith(dropped)]:
                del block[key]

    edit_json(folder / "results.json", drop_success)
    report = validate(folder, str(lb.dataset_v1), sandbox=sandbox)
    assert report.ok, report.summary
    if "ci95" in dropped:  # a run from before intervals: the board computes them from its samples
        entry = Entry.from_submission(load_submission(folder))
        assert entry.pass1 == pytest.approx(8 / 12) and entry.ci == pytest.approx([0.3906, 0.8619], abs=1e-4)


def test_a_missing_task_is_refused_naming_it(lb, tmp_path):
    folder = copy(lb.submissions["beta"], tmp_path / "missing")
    edit_json(folder / "results.json",
              lambda r: r.update(samples=[s for s in r["samples"] if s["task_id"] != "tensor-0005"]))
    edit_lines(folder / "generations.jsonl", lambda rows: [g for g in rows if g["task_id"] != "tensor-0005"])
    report = validate(folder, str(lb.dataset_v1))
    assert not report.ok
    assert "1 of the dataset's 12 tasks are missing from results.json: tensor-0005" in report.format()
    assert report.rescored == 0  # nothing is re-scored against a submission that does not cover the version


def test_a_missing_generation_is_refused_naming_the_task(lb, tmp_path):
    folder = copy(lb.submissions["reference"], tmp_path / "nogen")
    edit_lines(folder / "generations.jsonl", lambda rows: [g for g in rows if g["task_id"] != "tensor-0007"])
    report = validate(folder, str(lb.dataset_v1))
    assert not report.ok and "tensor-0007" in report.tasks
    assert "no line in generations.jsonl" in report.tasks["tensor-0007"][0]


def test_another_dataset_version_is_refused(lb, tmp_path):
    folder = copy(lb.submissions["reference-v2"], tmp_path / "v2")
    report = validate(folder, str(lb.dataset_v1))  # the v2 run, checked against the v1 dataset
    assert not report.ok and report.version == "v2.0.0"
    assert "another dataset version" in report.format()
    v1_hash = json.loads((lb.dataset_v1 / "MANIFEST.json").read_text())["content_hash"]
    assert v1_hash in report.format()


def test_a_submission_relabelled_to_another_version_is_refused(lb, tmp_path):
    folder = copy(lb.submissions["reference"], tmp_path / "relabelled")
    edit_json(folder / "metadata.json", lambda m: m["dataset"].update(version="v2.0.0"))
    report = validate(folder, str(lb.dataset_v2))
    assert not report.ok and "revision 'v1.0.0'" in report.format()


def test_prompt_keys_tie_replies_to_this_datasets_prompts(lb, tmp_path):
    folder = copy(lb.submissions["reference"], tmp_path / "keys")
    edit_lines(folder / "generations.jsonl", lambda rows: [dict(g, key="f" * 24) if g["sample"] == 0
                                                           and g["task_id"] == "tensor-0002" else g for g in rows])
    report = validate(folder, str(lb.dataset_v1))
    assert list(report.tasks) == ["tensor-0002"] and "prompt key differs" in report.tasks["tensor-0002"][0]


# -------------------------------------------------------------------------------------------------------- build

@pytest.fixture(scope="module")
def built(lb, tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = ok(cli("evaluate.leaderboard", "build", "--out", out, "--root", lb.root))
    return out, proc


def test_build_ranks_each_dataset_version_on_its_own(lb, built):
    out, proc = built
    data = json.loads((out / "leaderboard.json").read_text())
    assert [v["version"] for v in data["versions"]] == ["v2.0.0", "v1.0.0"]
    v2, v1 = data["versions"]
    assert [e["name"] for e in v1["entries"]] == ["Reference replay", "Zeta-7B", "Beta-70B"]
    assert [e["rank"] for e in v1["entries"]] == [1, 2, 3]
    assert [e["name"] for e in v2["entries"]] == ["Reference replay v2"] and v2["entries"][0]["rank"] == 1
    assert [e["pass1"] for e in v1["entries"]] == [expected_pass1(lb.submissions[k]) for k in ("reference", "zeta",
                                                                                                "beta")]
    assert "dataset v1.0.0" in proc.stdout and "dataset v2.0.0" in proc.stdout


def test_html_has_one_table_per_version_and_no_network(built):
    out, _ = built
    page = (out / "index.html").read_text()
    tables = re.findall(r'<table class="board" data-version="([^"]+)"', page)
    assert tables == ["v2.0.0", "v1.0.0"]
    v1 = page.split('data-version="v1.0.0"><h2>', 1)[1]
    assert "Reference replay v2" not in v1.split("</section>")[0]
    assert not re.search(r'(src|href)="(https?:)?//(?!example\.org)', page)  # only the submitted model link
    assert "<script src" not in page and "<link" not in page


def test_markdown_table(built):
    out, _ = built
    md = (out / "leaderboard.md").read_text()
    v2, v1 = md.split("**StateEval v1.0.0**")
    assert "Reference replay v2" in v2 and "Zeta-7B" not in v2
    lines = [line for line in v1.splitlines() if line.startswith("| ")]
    assert lines[0] == "| # | ranks | model | organisation | params | weights | pass@1 | tensor | errors | date |"
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
    # pass@1 of 12, 8 and 6 tasks in 12, with Wilson intervals; the ranks they allow: Beta's interval lies wholly
    # below the reference's, so Beta cannot be first and the reference cannot be last
    assert [r[:8] for r in rows] == [
        ["1", "1–2", "[Reference replay](https://example.org/reference)", "StateEval", "–", "open",
         "100.0 [75.8, 100.0]", "100.0 [75.8, 100.0]"],
        ["2", "1–3", "Zeta-7B", "Zeta Labs", "7B", "closed", "66.7 [39.1, 86.2]", "66.7 [39.1, 86.2]"],
        ["3", "2–3", "Beta-70B", "Beta AI", "70B", "open", "50.0 [25.4, 74.6]", "50.0 [25.4, 74.6]"],
    ]
    assert rows[1][8] == "syntax 1, execution 1, result 1, no code 1"


def test_build_leaves_out_unvalidated_and_edited_submissions(lb, tmp_path):
    root = tmp_path / "lb"
    shutil.copytree(lb.root, root)
    subs = root / "submissions"
    (subs / lb.submissions["beta"].name / "validation.json").unlink()
    edit_json(subs / lb.submissions["zeta"].name / "results.json",
              lambda r: r["summary"]["overall"].update({"pass@1": 0.99}))
    report = build(tmp_path / "site", root)
    names = [e.name for g in report.groups for e in g.entries]
    assert names == ["Reference replay v2", "Reference replay"]
    assert "not validated" in report.skipped[lb.submissions["beta"].name]
    assert "results.json changed after validation" in report.skipped[lb.submissions["zeta"].name]


def test_an_out_that_cannot_be_written_is_refused_in_one_line(lb, unwritable):
    site = unwritable.folder / "site"
    proc = cli_in(unwritable, "build", "--out", site, "--root", lb.root)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert re.fullmatch(f"error: cannot write {re.escape(str(site))}: {unwritable.why}; .*--out\n", proc.stderr)
    assert not os.path.lexists(site)


def test_a_submission_folder_that_cannot_be_written_stops_validation_in_one_line(lb, tmp_path):
    folder = copy(lb.submissions["zeta"], tmp_path / "zeta")
    (folder / "validation.json").unlink()
    with read_only(folder):
        proc = cli("evaluate.leaderboard", "validate", folder, "--dataset", lb.dataset_v1, "--workers", "1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert re.fullmatch(f"error: cannot write {re.escape(str(folder))}/validation.json: (permission denied|operation "
                        f"not permitted); make {re.escape(str(folder))} writable\n", proc.stderr)


def test_build_inserts_the_markdown_between_markers(lb, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Card\n\n<!-- leaderboard:start -->\nold\n<!-- leaderboard:end -->\n\nafter\n")
    build(tmp_path / "site", lb.root, insert_into=[readme])
    text = readme.read_text()
    assert "old" not in text and text.endswith("<!-- leaderboard:end -->\n\nafter\n")
    assert "| 3 | 2–3 | Beta-70B | Beta AI | 70B | open | 50.0 [25.4, 74.6] | 50.0 [25.4, 74.6] |" in text
    with pytest.raises(SubmissionError, match="markers"):
        build(tmp_path / "site", lb.root, insert_into=[tmp_path / "site" / "leaderboard.md"])
    with pytest.raises(SubmissionError, match=r"cannot read --insert-into .*missing.md \(No such file"):
        build(tmp_path / "site", lb.root, insert_into=[tmp_path / "missing.md"])


def test_text_from_a_submission_is_escaped():
    e = Entry(folder="x", name="<script>alert(1)</script>", organisation="A & B", parameters="<b>", weights="open",
              link=None, model="m", date="2026-01-01", version="v1<", content_hash="0" * 64, tasks=1, n_samples=1,
              pass1=1.0, scenarios={"tensor": 1.0}, statuses={"pass": 1}, rank=1)
    e.statuses = {s: e.statuses.get(s, 0) for s in ("pass", "syntax_error", "execution_error", "result_error",
                                                     "timeout", "no_code")}
    page = render_html(BuildReport([Group("v1<", "0" * 64, [e])]), "now")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "A &amp; B" in page
    assert "\\|" in render_markdown(BuildReport([Group("v1", "0" * 64, [Entry(**{**e.__dict__, "name": "a|b"})])]))


def test_parameter_counts_and_versions_sort_as_numbers():
    assert parameter_count("7B") == 7e9 and parameter_count("70B") == 7e10 and parameter_count("135M") == 1.35e8
    assert parameter_count("1.5T") == 1.5e12 and parameter_count("unknown") is None and parameter_count(None) is None
    assert sorted(["v1.9.0", "v1.10.0", "v1.2.0"], key=version_key) == ["v1.2.0", "v1.9.0", "v1.10.0"]


def test_help():
    proc = ok(cli("evaluate.leaderboard", "--help"))
    assert "submit" in proc.stdout and "validate" in proc.stdout and "build" in proc.stdout
    for command in ("submit", "validate", "build"):
        ok(cli("evaluate.leaderboard", command, "--help"))


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_the_leaderboard_imports_neither_the_builder_nor_itself_in_a_circle():
    """evaluate is the shared runtime (the builder imports it, never the reverse), and submission.py is the
    folder format that validation.py checks: a cycle between them only worked through a function-level import."""
    import evaluate

    folder = Path(evaluate.__file__).parent / "leaderboard"
    assert not {m for p in folder.glob("*.py") for m in _imports(p) if m.split(".")[0] == "builder"}
    assert not {m for m in _imports(folder / "submission.py") if m.startswith("evaluate.leaderboard.validation")}
    assert "def _lazy" not in (folder / "submission.py").read_text()



@pytest.mark.parametrize("option, value", [("--timeout", "0"), ("--workers", "0")])
def test_a_rescoring_limit_that_cannot_work_is_refused_in_one_line(lb, option, value):
    """A zero timeout would re-score every sample a timeout and refuse a good submission for it."""
    folder = lb.submissions["zeta"]
    before = (folder / "validation.json").read_text()
    proc = cli("evaluate.leaderboard", "validate", folder, "--dataset", lb.dataset_v1, option, value)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and f"argument {option}:" in proc.stderr
    assert (folder / "validation.json").read_text() == before
