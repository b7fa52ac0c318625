"""Scores with their uncertainty: the intervals' coverage on simulated data, pass^k against hand-computed values,
paired comparisons (their intervals against closed forms, exact coverage and agreement with their tests) and
constructed runs through `python -m evaluate.report`, rank ranges, and release sizes."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from math import comb, factorial

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
    assert row["B - A"] == "+2.0" and row["test"] == "sign-flip" and row["significant"] == "no"
    assert float(row["p"]) >= 0.05
    lo, hi = (float(x) for x in row["95% interval"].strip("[]").split(","))
    assert lo < 0 < 2 < hi


def test_three_tasks_lost_are_not_a_certain_loss(tmp_path, capsys):
    """A run that passes 3 tasks against one that fails them: McNemar's p is 0.25, and the interval must say as
    much. Its upper end has a closed form: with every task discordant the share T is 1, and S, the share the later
    run wins, has the Beta(1, 3) upper law, whose 97.5% quantile is 1 - 0.025^(1/3)."""
    assert report_main([_run_file(tmp_path, "A", {f"t{i}": [True] for i in range(3)}),
                        _run_file(tmp_path, "B", {f"t{i}": [False] for i in range(3)})]) == 0
    row = _paired_row(capsys)
    assert (row["B - A"], row["p"], row["test"], row["significant"]) == ("-100.0", "0.250", "mcnemar exact", "no")
    assert row["95% interval"] == f"[-100.0, {100 * (2 * (1 - 0.025 ** (1 / 3)) - 1):+.1f}]" == "[-100.0, +41.5]"


def _binary(only_a: int, only_b: int, tasks: int, both: int = 0) -> intervals.Comparison:
    """Two one-sample runs: only_a tasks only A passes, only_b only B passes, `both` both pass, the rest neither."""
    kinds = [(1, 0)] * only_a + [(0, 1)] * only_b + [(1, 1)] * both
    kinds += [(0, 0)] * (tasks - len(kinds))
    return intervals.compare({f"t{i}": (1, x) for i, (x, _) in enumerate(kinds)},
                             {f"t{i}": (1, y) for i, (_, y) in enumerate(kinds)})


def test_one_task_says_almost_nothing():
    lost = _binary(1, 0, 1)  # the later run fails the one task the earlier passes
    assert (lost.difference, lost.p, lost.significant) == (-1.0, 1.0, False)
    assert lost.low == -1.0 and lost.high == pytest.approx(1 - intervals.ALPHA)  # 2 S - 1, S uniform
    tied = _binary(0, 0, 1)  # both pass: no discordant task, T has the Beta(1, 1) upper law
    assert tied.difference == 0 and tied.p == 1.0
    assert (tied.low, tied.high) == pytest.approx((-(1 - intervals.ALPHA / 2), 1 - intervals.ALPHA / 2))


def test_thirty_tasks():
    swept = _binary(0, 30, 30)  # B wins all 30: T and S both have the Beta(30, 1) lower law, density 30 x^29
    assert swept.significant and swept.high == 1.0
    t = (np.arange(200_000) + 0.5) / 200_000  # P(T (2 S - 1) <= low) = 0.025, integrated here on a fine grid
    assert np.mean(30 * t ** 29 * np.clip((1 + swept.low / t) / 2, 0, 1) ** 30) == pytest.approx(0.025, abs=1e-6)
    assert swept.low < 2 * 0.025 ** (1 / 30) - 1  # T's upper law (T = 1) gives the less extreme limit
    clear = _binary(1, 10, 30, both=12)  # p = 2 * P(X <= 1), X ~ Binomial(11, 1/2)
    assert clear.p == pytest.approx(2 * 12 / 2 ** 11) and clear.significant
    assert clear.difference == pytest.approx(0.3) and 0 < clear.low < 0.3 < clear.high < 1
    unclear = _binary(2, 5, 30, both=12)
    assert unclear.p == pytest.approx(2 * (1 + 7 + 21) / 2 ** 7) and not unclear.significant
    assert unclear.low < 0 < unclear.difference < unclear.high
    tied = _binary(0, 0, 30, both=20)  # the runs agree on every task: still not a certain zero
    assert tied.p == 1.0 and tied.low == pytest.approx(-tied.high) and 0.1 < tied.high < 0.13


@pytest.mark.parametrize("tasks", [1, 3, 8])
def test_the_binary_interval_covers_the_true_difference_for_every_outcome(tasks):
    """Exact coverage: every outcome of `tasks` paired binary tasks (only A passes, only B passes, or neither
    differs) weighted by its multinomial probability, on a grid of true shares; at least 95% everywhere."""
    outcomes = {(x, y): intervals.fay_lumbard(x, y, tasks) for x in range(tasks + 1) for y in range(tasks + 1 - x)}
    worst = 1.0
    for only_a in np.linspace(0, 1, 21):
        for only_b in np.linspace(0, 1 - only_a, 21):
            covered = sum(factorial(tasks) / (factorial(x) * factorial(y) * factorial(tasks - x - y))
                          * only_a ** x * only_b ** y * (1 - only_a - only_b) ** (tasks - x - y)
                          for (x, y), (lo, hi) in outcomes.items() if lo <= only_b - only_a <= hi)
            worst = min(worst, covered)
    assert worst >= 0.95, worst
    assert tasks == 1 or worst < 0.99  # and not the trivial [-100, +100]


def test_interval_excludes_zero_exactly_when_the_test_rejects():
    """Random pair sets, one sample per task (McNemar) and several (sign-flip), exactly and by random flips
    (more than 16 tasks): the interval excludes 0 if and only if p < 0.05, and both verdicts occur."""
    rng = random.Random(3)
    verdicts = {intervals.MCNEMAR: set(), intervals.SIGN_FLIP: set()}
    for trial in range(160):
        tasks, samples = rng.choice([1, 2, 3, 6, 10, 16, 17, 30, 60]), rng.choice([1, 1, 3, 5])
        shift = rng.uniform(-0.6, 0.6)
        a, b = {}, {}
        for i in range(tasks):
            rate = rng.random()
            a[f"t{i}"] = (samples, sum(rng.random() < rate for _ in range(samples)))
            b[f"t{i}"] = (samples, sum(rng.random() < rate + shift for _ in range(samples)))
        c = intervals.compare(a, b)
        if c.low is None:  # every task's difference the same fraction
            continue
        assert c.test == (intervals.MCNEMAR if samples == 1 else c.test)
        assert (c.low > 0 or c.high < 0) == c.significant == (c.p < 0.05), (a, b, c)
        assert c.low <= c.difference <= c.high
        verdicts[c.test].add(c.significant)
    assert verdicts == {intervals.MCNEMAR: {True, False}, intervals.SIGN_FLIP: {True, False}}


def test_the_sign_flip_test_is_mcnemars_on_binary_differences():
    """Enumerated sign flips of differences of -1, 0 and +1 are McNemar's fair coins: the same p."""
    rng = random.Random(5)
    for _ in range(40):
        differences = [Fraction(rng.choice([-1, 0, 0, 1])) for _ in range(rng.randint(1, 12))]
        p, _, _ = intervals.sign_flip(differences)
        assert p == pytest.approx(intervals.mcnemar_exact(differences.count(-1), differences.count(1)))


def test_the_sign_flip_interval_covers_the_true_difference_with_several_samples_per_task():
    """Tasks of Beta(2, 2) difficulty, B ten points better where it can be, 5 samples each, 20 tasks (random
    flips): the interval holds the population's difference in about 95% of simulated pairs of runs."""
    rng = np.random.RandomState(17)
    truth = np.mean(np.clip((base := rng.beta(2, 2, 400_000)) + 0.1, 0, 1) - base)
    covered, runs = 0, 300
    for _ in range(runs):
        rate = rng.beta(2, 2, 20)
        a, b = rng.binomial(5, rate), rng.binomial(5, np.clip(rate + 0.1, 0, 1))
        _, lo, hi = intervals.sign_flip([Fraction(int(y) - int(x), 5) for x, y in zip(a, b)])
        covered += lo <= truth <= hi
    assert 0.92 <= covered / runs <= 0.98, covered / runs


def test_differences_that_do_not_vary_give_no_interval(tmp_path, capsys):
    """Every task one sample of five better in B: the sign-flip test rejects (p = 2 / 2^8), but a shift of
    equal differences has no spread to be measured by, so the report gives no interval rather than [+20, +20]."""
    a = {f"t{i}": [s < 2 for s in range(5)] for i in range(8)}
    b = {f"t{i}": [s < 3 for s in range(5)] for i in range(8)}
    assert report_main([_run_file(tmp_path, "A", a), _run_file(tmp_path, "B", b)]) == 0
    row = _paired_row(capsys)
    assert (row["B - A"], row["95% interval"], row["test"], row["p"]) == ("+20.0", "-", "sign-flip", "0.008")


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
