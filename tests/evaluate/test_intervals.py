"""Scores with their uncertainty: the intervals' coverage on simulated data, pass^k against hand-computed values,
paired comparisons of constructed runs through `python -m evaluate.report`, rank ranges, and release sizes."""

from __future__ import annotations

import json
import random
from math import comb

import numpy as np
import pytest

from evaluate import intervals
from evaluate.report import main as report_main
from evaluate.scoring import CI, SampleResult, summarize


def test_wilson_matches_the_textbook_values():
    lo, hi = intervals.wilson(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    assert intervals.wilson(0, 20)[0] == 0.0 and intervals.wilson(20, 20)[1] == 1.0
    assert 0.8 < intervals.wilson(20, 20)[0] < 0.9  # a perfect score over 20 tasks is not a sure 100%


def test_wilson_covers_the_true_rate_about_95_percent_of_the_time():
    rng = np.random.RandomState(7)
    for rate, tasks in ((0.3, 100), (0.85, 60), (0.5, 300)):
        passes = rng.binomial(tasks, rate, size=4000)
        covered = np.mean([lo <= rate <= hi for lo, hi in (intervals.wilson(int(p), tasks) for p in passes)])
        assert 0.93 <= covered <= 0.975, (rate, tasks, covered)


def test_the_task_bootstrap_covers_the_true_rate_with_several_samples_per_task():
    """Tasks differ in difficulty (a Beta draw per task) and each gets 5 samples: the interval of pass@1 must
    cover the population's mean rate, 0.4, in about 95% of simulated runs of 100 tasks."""
    rng = np.random.RandomState(11)
    truth, covered, runs = 0.4, 0, 400
    for _ in range(runs):
        rates = rng.beta(2, 3, size=100)
        values = rng.binomial(5, rates) / 5
        lo, hi = intervals.interval(list(values), intervals.BOOTSTRAP)
        covered += lo <= truth <= hi
    assert 0.92 <= covered / runs <= 0.98, covered / runs


def _results(per_task: dict[str, list[bool]], scenario: str = "session") -> list[SampleResult]:
    return [SampleResult(t, scenario, s, "pass" if ok else "result_error")
            for t, oks in per_task.items() for s, ok in enumerate(oks)]


def test_summary_names_its_method_and_gives_every_rate_an_interval():
    one = summarize(_results({f"t{i}": [i % 3 == 0] for i in range(30)}))
    assert one["interval"]["method"] == intervals.WILSON
    assert one["overall"][CI]["pass@1"] == list(intervals.wilson(10, 30))
    several = summarize(_results({f"t{i}": [i % 3 == 0, i % 2 == 0, True] for i in range(30)}), (1, 2, 3))
    assert several["interval"]["method"] == intervals.BOOTSTRAP
    block = several["scenarios"]["session"]
    for metric in ("pass@", "success@", "pass^"):
        for k in (1, 2, 3):
            lo, hi = block[CI][f"{metric}{k}"]
            assert lo <= block[f"{metric}{k}"] <= hi
    # every sample ran: each task's value is 1, every resample's mean too; the interval is Wilson's, not [1, 1]
    assert several["overall"]["success@1"] == 1.0
    assert several["overall"][CI]["success@1"] == list(intervals.wilson(30, 30))


def test_the_same_samples_give_the_same_intervals():
    per_task = {f"t{i}": [random.Random(i).random() < 0.5 for _ in range(4)] for i in range(50)}
    assert summarize(_results(per_task), (1, 2, 4)) == summarize(_results(per_task), (1, 2, 4))


@pytest.mark.parametrize("n, c, k, expected", [
    (5, 3, 1, 3 / 5), (5, 3, 2, 3 / 10), (5, 3, 3, 1 / 10), (5, 3, 4, 0.0), (4, 4, 4, 1.0), (10, 7, 3, 35 / 120),
])
def test_pass_hat_k_hand_computed(n, c, k, expected):
    assert intervals.pass_hat_k(n, c, k) == pytest.approx(expected)


def test_pass_hat_k_is_reported_for_every_k_up_to_n():
    # two tasks: 3 of 4 samples pass, and 4 of 4
    summary = summarize(_results({"a": [True, True, False, True], "b": [True] * 4}), (1, 2, 3, 4))
    overall = summary["overall"]
    for k in (1, 2, 3, 4):
        expected = (comb(3, k) / comb(4, k) + 1.0) / 2
        assert overall[f"pass^{k}"] == pytest.approx(expected)
    assert overall["pass^1"] == overall["pass@1"] and overall["pass^4"] == 0.5


def test_mcnemar_exact_by_hand():
    assert intervals.mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert intervals.mcnemar_exact(5, 5) == 1.0 and intervals.mcnemar_exact(0, 0) == 1.0


def _run_file(tmp_path, name: str, per_task: dict[str, list[bool]]) -> str:
    results = _results(per_task)
    n = max(len(v) for v in per_task.values())
    data = {"model": name, "variant": "natural", "mode": "code", "dataset": {"content_hash": "abc"},
            "sampling": {"n_samples": n}, "summary": summarize(results, tuple(range(1, n + 1))),
            "samples": [r.to_dict() for r in results]}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def _paired_row(capsys) -> dict:
    out = capsys.readouterr().out
    lines = out[out.index("## Paired differences"):].splitlines()
    table = [line for line in lines if line.startswith("|")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    return dict(zip(head, (c.strip() for c in table[2].strip("|").split("|"))))


def test_a_real_ten_point_difference_over_300_tasks_is_significant(tmp_path, capsys):
    """One sample per task: A passes 150 tasks, B 180; they disagree on 50 (B alone 40, A alone 10)."""
    a = {f"t{i}": [i < 150] for i in range(300)}
    b = {f"t{i}": [i < 140 or 150 <= i < 190] for i in range(300)}
    assert report_main([_run_file(tmp_path, "A", a), _run_file(tmp_path, "B", b)]) == 0
    row = _paired_row(capsys)
    assert row["tasks"] == "300" and row["B - A"] == "+10.0" and row["test"] == "mcnemar exact"
    assert row["significant"] == "**yes**" and row["p"] == "< 0.001"
    lo, hi = (float(x) for x in row["95% interval"].strip("[]").split(","))
    assert 0 < lo < 10 < hi


def test_a_two_point_difference_over_60_tasks_is_not(tmp_path, capsys):
    """Five samples per task, as reruns differ: B passes one sample more than A on 18 of 60 tasks and one fewer on
    12, six samples of 300 net, two points of pass@1."""
    a = {f"t{i}": [s < 3 for s in range(5)] for i in range(60)}
    b = {f"t{i}": [s < (4 if i < 18 else 2 if i < 30 else 3) for s in range(5)] for i in range(60)}
    assert report_main([_run_file(tmp_path, "A", a), _run_file(tmp_path, "B", b)]) == 0
    row = _paired_row(capsys)
    assert row["B - A"] == "+2.0" and row["test"] == "paired bootstrap" and row["significant"] == "no"
    assert float(row["p"]) >= 0.05


def test_report_rates_carry_their_interval(tmp_path, capsys):
    assert report_main([_run_file(tmp_path, "A", {f"t{i}": [i < 8] for i in range(10)})]) == 0
    out = capsys.readouterr().out
    assert "| 80.0% [49.0, 94.3] |" in out and "Wilson score interval" in out


def test_rank_ranges_follow_overlapping_intervals():
    # A clearly first; B and C overlap each other; D clearly last
    ranges = intervals.rank_ranges([(0.80, 0.90), (0.50, 0.65), (0.55, 0.70), (0.10, 0.20)])
    assert ranges == [(1, 1), (2, 3), (2, 3), (4, 4)]


def test_release_size_from_a_precision():
    assert intervals.tasks_for(0.03) == 1068 and intervals.tasks_for(0.05) == 385 and intervals.tasks_for(0.1) == 97
    for h in (0.03, 0.05, 0.1):
        n = intervals.tasks_for(h)
        assert intervals.half_width(n) <= h < intervals.half_width(n - 1)
    with pytest.raises(ValueError, match="half-width between 0 and 0.5"):
        intervals.tasks_for(3)
