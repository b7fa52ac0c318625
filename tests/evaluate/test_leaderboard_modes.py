"""Tools- and explore-mode submissions: the reference's runs in each mode (100%), packaged with their recorded
conversations, validated by replaying them against the maintainers' worlds, refused when a turn was edited, and
never ranked with another mode."""

from __future__ import annotations

import json

import pytest

from evaluate.diagnosis import METRICS
from evaluate.episodes import EXPLORE, TOOLS
from evaluate.leaderboard import build, load_submission, submit, validate
from evaluate.run import EvalConfig, run


@pytest.fixture(scope="module")
def submissions(small_dataset, sandbox, tmp_path_factory):
    """mode -> a validated submission of the reference run in that mode, all under one leaderboard root."""
    work = tmp_path_factory.mktemp("modes-board")
    out, root = work / "results", work / "leaderboard"
    subs = {}
    for mode in (TOOLS, EXPLORE):  # (a code-mode submission: tests/evaluate/test_leaderboard.py)
        report = run(EvalConfig(model="reference", dataset=str(small_dataset), revision="v1.0.0",
                                out=str(out), mode=mode, workers=2))
        # the reference scores 100% in every mode, in two turns or more where it converses
        assert report["summary"]["overall"]["pass@1"] == 1.0, report["samples"]
        assert report["mode"] == mode and all(row.get("turns", 2) >= 2 for row in report["samples"])
        # and its calls are the reference's in every mode: full partial credit, tool calls included
        means = report["summary"]["overall"]["diagnosis"]
        assert [means[m] for m in METRICS] == [1.0] * len(METRICS), (mode, means)
        subs[mode] = submit(out / "reference" / "v1.0.0", f"Reference {mode}", weights="open", root=root,
                            mode=mode, dataset=str(small_dataset))
        report = validate(subs[mode], str(small_dataset), sandbox=sandbox)
        assert report.ok, report.format()
    return root, subs


def test_a_tools_submission_holds_every_turn_and_validates_by_replay(submissions, small_tasks):
    _, subs = submissions
    sub = load_submission(subs[TOOLS])
    assert sub.mode == TOOLS and sub.metadata["generations"] == "turns" and sub.metadata["max_turns"] == 20
    rows = [json.loads(x) for x in (subs[TOOLS] / "generations.jsonl").read_text().splitlines()]
    conversations = {(r["task_id"], r["case"]) for r in rows}
    assert len(conversations) == sum(len(t.test_cases) for t in small_tasks)  # one per test case
    first = json.loads(next(r for r in rows if r["turn"] == 0)["reply"])
    assert first["tool_calls"][0]["function"]["name"].startswith(("torch_", "F_"))
    stamp = json.loads((subs[TOOLS] / "validation.json").read_text())
    assert stamp["mode"] == TOOLS and stamp["rescored_samples"] == len(small_tasks)


def test_an_edited_turn_does_not_replay_and_is_refused(submissions, sandbox, small_dataset, tmp_path):
    import shutil

    _, subs = submissions
    folder = tmp_path / "edited"
    shutil.copytree(subs[TOOLS], folder)
    rows = [json.loads(x) for x in (folder / "generations.jsonl").read_text().splitlines()]
    reply = json.loads(rows[0]["reply"])
    reply["tool_calls"][0]["function"]["arguments"] = json.dumps({"input": "x1", "dim0": 0, "dim1": 3})
    reply["tool_calls"][0]["function"]["name"] = "torch_transpose"
    rows[0]["reply"] = json.dumps(reply)
    (folder / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = validate(folder, str(small_dataset), sandbox=sandbox)
    assert not report.ok
    assert "do not replay" in report.format() and rows[0]["task_id"] in report.format()
    assert not (folder / "validation.json").exists()


def test_modes_are_never_ranked_together(submissions, tmp_path):
    root, _ = submissions
    build(tmp_path / "site", root=root)
    data = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    groups = {v["mode"]: v for v in data["versions"]}
    assert set(groups) == {TOOLS, EXPLORE} and {v["version"] for v in data["versions"]} == {"v1.0.0"}
    for mode, group in groups.items():
        assert [(e["name"], e["rank"]) for e in group["entries"]] == [(f"Reference {mode}", 1)]
    html = (tmp_path / "site" / "index.html").read_text()
    assert "v1.0.0, tools mode" in html and "v1.0.0, explore mode" in html


def test_instruction_variants_are_never_ranked_together(small_dataset, sandbox, tmp_path):
    """The vague instructions are harder than the natural ones: runs on each are separate groups, each ranked."""
    out, root = tmp_path / "results", tmp_path / "leaderboard"
    for variant in ("natural", "vague"):
        run(EvalConfig(model="reference", dataset=str(small_dataset), revision="v1.0.0", out=str(out),
                       variant=variant, workers=2))
        sub = submit(out / "reference" / "v1.0.0", f"Reference {variant}", weights="open", root=root,
                     variant=variant, dataset=str(small_dataset))
        assert validate(sub, str(small_dataset), sandbox=sandbox).ok
    build(tmp_path / "site", root=root)
    data = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert [(v["variant"], [(e["name"], e["rank"]) for e in v["entries"]]) for v in data["versions"]] == [
        ("natural", [("Reference natural", 1)]), ("vague", [("Reference vague", 1)])]
    assert "v1.0.0, vague instructions" in (tmp_path / "site" / "index.html").read_text()
