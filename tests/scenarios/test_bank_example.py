"""The worked example of docs/adding-a-scenario.md, built and scored as the page says: every program kept, every
mutant killed, the references at 100%, a wrong answer diagnosed call by call; and never part of a default build."""

from __future__ import annotations

import json

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from core.records import load_tasks
from evaluate.run import EvalConfig, run
from scenarios import get_scenario, scenario_names


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    """The page's command: python -m builder --scenarios bank --n 6 --seed 1 (one worker here)."""
    out = tmp_path_factory.mktemp("bank") / "bank"
    report = build(BuildConfig(scenarios=["bank"], n=6, seed=1, created_at="2026-01-01", out=str(out), workers=1))
    return out, report


def test_the_example_is_known_but_never_built_by_default():
    assert "bank" in scenario_names(examples=True) and "bank" not in scenario_names()
    assert BuildConfig().scenarios == ["tensor", "session", "voice"] and get_scenario("bank").example


def test_every_program_is_kept_and_every_mutant_killed(bank):
    out, report = bank
    assert report["kept"] == {"bank": 6} and report["rejections"] == {}
    mutation = report["mutation"]["bank"]
    assert mutation["mutants"] == mutation["killed"] > 0 and mutation["equivalent"] == 0


def scored(out, tmp_path, samples=None) -> dict:
    config = EvalConfig(model="reference", dataset=str(out), out=str(tmp_path), samples=samples, workers=1)
    return run(config)


def test_the_references_score_100_and_a_wrong_api_is_diagnosed(bank, tmp_path):
    out, _ = bank
    assert scored(out, tmp_path)["summary"]["overall"]["pass@1"] == 1.0
    tasks, _ = load_tasks(str(out))
    wrong = [t for t in tasks if "bank.deposit(" in t.reference_program]
    assert wrong
    samples = tmp_path / "withdraws.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t.task_id, "code": t.reference_program.replace(
        "bank.deposit(", "bank.withdraw(", 1)}) + "\n" for t in wrong))
    rows = scored(out, tmp_path, str(samples))["samples"]
    assert len(rows) == len(wrong) and all(r["status"] != "pass" for r in rows)
    assert {r["diagnosis"]["cause"] for r in rows} == {"wrong_api"}
    first = rows[0]["diagnosis"]["first_divergence"]
    assert first["expected"].startswith("deposit(") and first["got"].startswith("withdraw(")
