"""How sure a score is: 95% intervals, paired comparisons of two runs, rank ranges, and pass^k.

Every rate this harness reports is a mean over tasks of a per-task estimate (pass@k, success@k, pass^k of the
task's samples), and the tasks are a sample of what the generator can draw. Its interval therefore comes from
sampling tasks:

- **one sample per task**: the per-task values are 0 or 1 and the rate is a binomial proportion; its interval is
  Wilson's score interval, which keeps its coverage near 0% and 100%, where a normal interval collapses;
- **several samples per task**: a percentile bootstrap over tasks, each task keeping all its samples (a cluster
  bootstrap: the samples of one task are not independent draws). When every task has the same value (all 0 or
  all 1) every resample does too; the interval is then Wilson's over the tasks, never a zero-width one.

Paired comparison (`compare`): two runs on the same tasks differ task by task, and that pairing removes the
variance the tasks share. The difference in pass@1 gets a paired bootstrap interval, and a p-value: McNemar's
exact test when both runs have one sample per task (only the tasks where the runs disagree count), otherwise
the paired bootstrap's (the share of resampled differences, centred on zero, at least as far from zero as the one
observed).

Resampling is seeded (`SEED`) and uses NumPy's legacy `RandomState`, whose stream NumPy keeps the same across
versions: the same samples give the same intervals, which is what lets a leaderboard re-score a submission and
compare every number.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, sqrt

import numpy as np

LEVEL = 0.95
Z = 1.959963984540054  # the standard normal's 97.5% quantile
RESAMPLES = 2000
SEED = 0
WILSON = "wilson"
BOOTSTRAP = "bootstrap"
METHODS = {
    WILSON: "Wilson score interval over tasks (one sample per task)",
    BOOTSTRAP: f"percentile bootstrap over tasks, each task's samples kept together ({RESAMPLES} resamples, "
               f"seed {SEED})",
}


def wilson(successes: float, trials: int, z: float = Z) -> tuple[float, float]:
    """Wilson's score interval for `successes` out of `trials` (a float count is allowed: see `interval`)."""
    if trials <= 0:
        raise ValueError("an interval needs at least one task")
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= trials else min(1.0, centre + half)
    return low, high


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k (tau-bench): the chance that k samples drawn without replacement from a task's n, c of which pass,
    all pass; C(c, k) / C(n, k), unbiased for the task's true rate to the k-th power."""
    if k > n:
        raise ValueError(f"pass^{k} needs at least {k} samples per task, got {n}")
    return comb(c, k) / comb(n, k)


def method(samples_per_task: int) -> str:
    """The interval method for a run whose tasks have at most this many samples."""
    return WILSON if samples_per_task <= 1 else BOOTSTRAP


class Resampler:
    """One set of bootstrap resamples of T tasks, shared by every metric of one block of a summary: the metrics'
    intervals then come from the same resampled task sets."""

    def __init__(self, tasks: int, resamples: int = RESAMPLES, seed: int = SEED):
        if tasks <= 0:
            raise ValueError("an interval needs at least one task")
        self.index = np.random.RandomState(seed).randint(0, tasks, size=(resamples, tasks))

    def means(self, values) -> np.ndarray:
        return np.asarray(values, dtype=float)[self.index].mean(axis=1)


def interval(values: list[float], how: str, resampler: Resampler | None = None) -> tuple[float, float]:
    """The 95% interval of the mean of per-task `values` (see the module's docstring for `how`)."""
    if not values:
        raise ValueError("an interval needs at least one task")
    if how == WILSON or len(set(values)) == 1:
        return wilson(float(sum(values)), len(values))
    means = (resampler or Resampler(len(values))).means(values)
    lo, hi = np.percentile(means, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return float(lo), float(hi)


def format_rate(value: float | None, ci: list[float] | None = None) -> str:
    """A rate in percent with its interval: `41.7% [29.9, 54.2]` (`-` for none)."""
    if value is None:
        return "-"
    text = f"{100 * value:.1f}%"
    return text if not ci else f"{text} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


# ------------------------------------------------------------------------------------------ paired comparisons


@dataclass
class Comparison:
    tasks: int  # tasks both runs scored
    a: float  # pass@1 of each run on those tasks
    b: float
    low: float  # the 95% interval of b - a
    high: float
    p: float  # two-sided p-value of "no difference"
    test: str  # "mcnemar exact" or "paired bootstrap"
    only_a: int | None = None  # McNemar's discordant counts: tasks only run a passed, only run b passed
    only_b: int | None = None

    @property
    def difference(self) -> float:
        return self.b - self.a

    @property
    def significant(self) -> bool:
        return self.p < 1 - LEVEL


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """McNemar's exact test: under no difference, each discordant task is a fair coin; two-sided binomial p."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def compare(a: dict[str, tuple[int, int]], b: dict[str, tuple[int, int]]) -> Comparison:
    """Run b against run a on the tasks both scored. Each maps task id -> (samples with a verdict, passing ones)."""
    shared = sorted(t for t in set(a) & set(b) if a[t][0] and b[t][0])
    if not shared:
        raise ValueError("the runs share no scored task: nothing to compare")
    ra = np.array([a[t][1] / a[t][0] for t in shared])
    rb = np.array([b[t][1] / b[t][0] for t in shared])
    diff = rb - ra
    means = Resampler(len(shared)).means(diff)
    lo, hi = np.percentile(means, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    observed = float(diff.mean())
    if all(a[t][0] == 1 and b[t][0] == 1 for t in shared):
        only_a, only_b = int(((ra == 1) & (rb == 0)).sum()), int(((ra == 0) & (rb == 1)).sum())
        p, test = mcnemar_exact(only_a, only_b), "mcnemar exact"
    else:
        only_a = only_b = None
        centred = np.abs(means - observed)
        p = float(((centred >= abs(observed) - 1e-12).sum() + 1) / (len(means) + 1)) if observed else 1.0
        test = "paired bootstrap"
    return Comparison(len(shared), float(ra.mean()), float(rb.mean()), float(lo), float(hi), p, test, only_a, only_b)


def rank_ranges(intervals: list[tuple[float, float]]) -> list[tuple[int, int]]:
    """The ranks each entry's interval allows (1 is best): above it must stand every entry whose interval lies
    wholly above its own, and may stand every other entry whose interval reaches above its low end."""
    out = []
    for i, (lo, hi) in enumerate(intervals):
        surely = sum(1 for j, (l2, _) in enumerate(intervals) if j != i and l2 > hi)
        maybe = sum(1 for j, (_, h2) in enumerate(intervals) if j != i and h2 > lo)
        out.append((1 + surely, 1 + maybe))
    return out


def half_width(tasks: int, z: float = Z) -> float:
    """The worst-case (a rate of 50%) half-width of a 95% interval over this many tasks, one sample each."""
    return z * sqrt(0.25 / tasks)


def tasks_for(precision: float, z: float = Z) -> int:
    """The fewest tasks whose worst-case 95% half-width is at most `precision` (0.03: three points)."""
    if not 0 < precision < 0.5:
        raise ValueError("the precision is a half-width between 0 and 0.5 (for example 0.05 for five points)")
    n = int(np.ceil(z * z * 0.25 / (precision * precision)))
    while n > 1 and half_width(n - 1, z) <= precision:  # float rounding in the ceiling
        n -= 1
    return n
