"""Tests-mode submissions (results_tests.json): the reference tests, a refining run and pre-written weaker tests are
packaged with what they were made from, validated by scoring those tests again on the maintainers' worlds and
mutants, refused when a verdict was edited, and ranked apart from the other modes and from each other's settings."""

from __future__ import annotations

import json
import shutil

import pytest

from evaluate.episodes import MUTATED, TESTS
from evaluate.leaderboard import build, load_submission, submit, validate
from evaluate.mutation_score import reference_test
from evaluate.run import EvalConfig, run
from evaluate.tests_mode import scored_tasks

@pytest.fixture(scope="module")
def board(small_dataset, small_tasks, sandbox, tmp_path_factory):
    """name -> a validated tests-mode submission, all under one leaderboard root."""
    work = tmp_path_factory.mktemp("tests-board")
    root, subs = work / "leaderboard", {}
    answers = work / "answers.jsonl"  # the reference test of every other scored task, a test that asserts nothing
    answers.write_text("".join(json.dumps({"task_id": t.task_id, "code": "assert True\n" if i % 2 else
                                           reference_test(t)}) + "\n" for i, t in enumerate(scored_tasks(small_tasks))))
    runs = {"reference": dict(model="reference"), "refined": dict(model="reference", max_turns=1, refine_on=MUTATED),
            "weak": dict(samples=str(answers))}
    for name, options in runs.items():
        out = work / name
        run(EvalConfig(dataset=str(small_dataset), revision="v1.0.0", out=str(out), workers=2, mode=TESTS, **options))
        folder = out / ("answers" if name == "weak" else "reference") / "v1.0.0"
        subs[name] = submit(folder, f"Tests {name}", weights="open", root=root, mode=TESTS,
                            dataset=str(small_dataset), samples=options.get("samples"))
        outcome = validate(subs[name], str(small_dataset), sandbox=sandbox)
        assert outcome.ok, outcome.format()
    return root, subs


def test_each_kind_of_tests_run_is_packaged_with_what_made_it(board, small_tasks):
    _, subs = board
    scored = len(scored_tasks(small_tasks))
    kinds = {name: load_submission(subs[name]).metadata for name in ("reference", "refined", "weak")}
    assert {name: (m["mode"], m["generations"], m["refine_on"]) for name, m in kinds.items()} == {
        "reference": (TESTS, "replies", None), "refined": (TESTS, "turns", MUTATED), "weak": (TESTS, "code", None)}
    replies = [json.loads(x) for x in (subs["reference"] / "generations.jsonl").read_text().splitlines()]
    assert len(replies) == scored and all("EXPECTED" in r["reply"] for r in replies)
    turns = [json.loads(x) for x in (subs["refined"] / "generations.jsonl").read_text().splitlines()]
    assert {r["turn"] for r in turns} == {0, 1} and {r["task_id"] for r in turns} == {t.task_id for t in
                                                                                       scored_tasks(small_tasks)}
    stamp = json.loads((subs["weak"] / "validation.json").read_text())
    assert stamp["mode"] == TESTS and stamp["rescored_samples"] == scored


def test_an_edited_verdict_or_test_is_refused(board, small_dataset, sandbox, tmp_path):
    _, subs = board
    folder = tmp_path / "edited"
    shutil.copytree(subs["weak"], folder)
    rows = [json.loads(x) for x in (folder / "generations.jsonl").read_text().splitlines()]
    rows[0]["code"] = "assert True\n"  # the first task's reference test swapped for one that asserts nothing
    (folder / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = json.loads((folder / "results.json").read_text())
    second = next(r for r in results["samples"] if r["task_id"] != rows[0]["task_id"] and r["status"] == "kills_all")
    second["killed"] = second["killed"][1:]  # another reference test's verdict on one mutant dropped
    results["summary"]["overall"]["mutation_score"] = 0.75
    (folder / "results.json").write_text(json.dumps(results))
    report = validate(folder, str(small_dataset), sandbox=sandbox)
    text = report.format()
    assert not report.ok and not (folder / "validation.json").exists()
    assert f"{rows[0]['task_id']}: sample 0: submitted kills_all, re-scored kills_none" in text, text
    assert f"{second['task_id']}: sample 0: submitted killed" in text
    assert "overall.mutation_score: submitted 0.75, re-scored 0." in text


def test_tests_runs_are_ranked_apart_by_the_share_that_kills_every_mutant(board, small_tasks, tmp_path):
    root, _ = board
    scored = len(scored_tasks(small_tasks))
    strong = (scored + 1) // 2  # the weak run's reference tests
    build(tmp_path / "site", root=root)
    data = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    groups = {(v["mode"], v.get("refine_on")): v["entries"] for v in data["versions"]}
    assert list(groups) == [(TESTS, None), (TESTS, MUTATED)]  # (a code-mode run would be a group of its own)
    ranked = [(e["name"], e["rank"], e["pass1"], e["mutation_score"]) for e in groups[(TESTS, None)]]
    share = pytest.approx(strong / scored)
    assert ranked == [("Tests reference", 1, 1.0, 1.0), ("Tests weak", 2, share, share)]
    weak = groups[(TESTS, None)][1]
    assert (weak["statuses"]["kills_all"], weak["statuses"]["kills_none"]) == (strong, scored - strong)
    assert [e["name"] for e in groups[(TESTS, MUTATED)]] == ["Tests refined"]
    markdown = (tmp_path / "site" / "leaderboard.md").read_text()
    assert "v1.0.0, tests mode, refined on the mutated world" in markdown
    assert "| mutation score |" in markdown and f"kills_all {strong}, kills_none {scored - strong}" in markdown
    html = (tmp_path / "site" / "index.html").read_text()
    assert "Mutation score" in html and "v1.0.0, tests mode</h2>" in html
