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
variance the tasks share. The difference in pass@1 gets a p-value of "no difference" and a 95% interval that come
from one test, so that the interval excludes 0 exactly when p < 0.05, at any number of tasks:

- **every task's difference is -1, 0 or +1** (always so with one sample per task): McNemar's exact test (only
  the tasks where the runs disagree count; each is a fair coin under no difference), and the interval of Fay and
  Lumbard (2021) built to be compatible with it. Its coverage is not proven; its authors' numerical checks, and
  this project's tests over every outcome of a few tasks, find it at least 95%;
- **otherwise** (several samples per task): the sign-flip test of the per-task differences (valid at any number
  of tasks: every flip up to 16 tasks, 2,000 random ones beyond), and the interval that inverts it (Hartigan,
  1969): every shift of the differences the test does not reject. The interval treats the differences as
  symmetric about their mean; near -100 or +100 points, where they cannot be, it is approximate, as a t interval
  is. When every task's difference is the same there is no spread to go on, and no interval is given.

Resampling, and the sign-flip test's random flips, are seeded (`SEED`) and use NumPy's legacy `RandomState`,
whose stream NumPy keeps the same across versions: the same samples give the same intervals, which is what lets a
leaderboard re-score a submission and compare every number.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb, lcm, lgamma, sqrt
from typing import Callable

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

ALPHA = 1 - LEVEL  # a paired difference is significant when its p-value is below this
EXACT_FLIPS = 16  # the sign-flip test enumerates every flip up to this many tasks (2^16), and draws RESAMPLES beyond
MCNEMAR = "mcnemar exact"
SIGN_FLIP = "sign-flip"


@dataclass
class Comparison:
    tasks: int  # tasks both runs scored
    a: float  # pass@1 of each run on those tasks
    b: float
    low: float | None  # the 95% interval of b - a, from the same test as p: it excludes 0 exactly when p < ALPHA
    high: float | None  # (None: the per-task differences do not vary, and the sign-flip test gives no interval)
    p: float  # two-sided p-value of "no difference"
    test: str  # MCNEMAR or SIGN_FLIP
    only_a: int | None = None  # McNemar's discordant counts: tasks only run a passed, only run b passed
    only_b: int | None = None

    @property
    def difference(self) -> float:
        return self.b - self.a

    @property
    def significant(self) -> bool:
        return self.p < ALPHA


def compare(a: dict[str, tuple[int, int]], b: dict[str, tuple[int, int]]) -> Comparison:
    """Run b against run a on the tasks both scored. Each maps task id -> (samples with a verdict, passing ones).

    When every task's difference in pass@1 is -1, 0 or +1 (always so with one sample per task), the tasks are
    paired binary outcomes: McNemar's exact test and the Fay-Lumbard interval. Otherwise the sign-flip test of
    the differences and the interval that inverts it."""
    shared = sorted(t for t in set(a) & set(b) if a[t][0] and b[t][0])
    if not shared:
        raise ValueError("the runs share no scored task: nothing to compare")
    rate_a = [Fraction(a[t][1], a[t][0]) for t in shared]
    rate_b = [Fraction(b[t][1], b[t][0]) for t in shared]
    diffs = [y - x for x, y in zip(rate_a, rate_b)]
    means = len(shared), float(sum(rate_a) / len(shared)), float(sum(rate_b) / len(shared))
    if all(d in (-1, 0, 1) for d in diffs):
        only_a, only_b = diffs.count(-1), diffs.count(1)
        return Comparison(*means, *fay_lumbard(only_a, only_b, len(shared)), mcnemar_exact(only_a, only_b),
                          MCNEMAR, only_a, only_b)
    p, low, high = sign_flip(diffs)
    if low == high:  # every difference the same: nothing for the shifted test to go on
        low = high = None
    return Comparison(*means, low, high, p, SIGN_FLIP)


# One sample per task: McNemar's exact test, and the interval compatible with it.

def _binomial_tails(successes: int, trials: int) -> tuple[float, float]:
    """P(X >= successes) and P(X <= successes) for X ~ Binomial(trials, 1/2), from integer sums."""
    ways = [comb(trials, i) for i in range(trials + 1)]
    return sum(ways[successes:]) / 2 ** trials, sum(ways[:successes + 1]) / 2 ** trials


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """McNemar's exact test: under no difference, each discordant task is a fair coin; two-sided binomial p
    (twice the smaller tail, at most 1)."""
    return min(1.0, 2 * min(_binomial_tails(only_b, only_a + only_b)))


def fay_lumbard(only_a: int, only_b: int, tasks: int) -> tuple[float, float]:
    """The 95% interval of B - A in pass@1 (per-task differences of -1, 0 or +1) of Fay and Lumbard (2021),
    compatible with McNemar's exact test: it excludes 0 exactly when `mcnemar_exact(only_a, only_b)` is below
    ALPHA.

    The difference is T (2 S - 1): T the share of tasks on which the runs disagree, S the share of those that B
    wins. Each share gets the Beta laws of its Clopper-Pearson limits, and the limits of the difference are the
    ALPHA/2 quantiles of T (2 S - 1) at S's lower law (the upper limit: at S's upper law), taking the more extreme
    of T's two laws (the "melding" of Fay, Proschan and Brittain, 2015)."""
    return _fay_lumbard_low(only_a, only_b, tasks), -_fay_lumbard_low(only_b, only_a, tasks)  # swapping the runs


def _fay_lumbard_low(only_a: int, only_b: int, tasks: int) -> float:
    """The interval's lower limit (its upper limit is minus this with the runs swapped)."""
    discordant = only_a + only_b
    s_law = (only_b, only_a + 1)  # S's lower Clopper-Pearson law (only_b of 0: S is 0)
    # P(T (2 S - 1) <= 0) = P(S <= 1/2) is the binomial tail of McNemar's test: the limit is above 0 exactly when
    # the test rejects in B's favour. That side is settled with the test's own tails; only the value is numeric.
    rejects = 2 * _binomial_tails(only_b, discordant)[0] < ALPHA
    limits = []
    for t_law in ((discordant, tasks - discordant + 1), (discordant + 1, tasks - discordant)):
        if t_law[0] == 0:  # no discordant task: T is 0, and so is the difference
            limits.append(0.0)
            continue
        cdf = _melded_cdf(t_law, s_law)
        if rejects:
            limits.append(_first_reaching(cdf, ALPHA / 2, 0.0, 1.0))
        elif cdf(-1.0) >= ALPHA / 2:
            limits.append(-1.0)
        else:
            limits.append(_first_reaching(cdf, ALPHA / 2, -1.0, 0.0))
    return min(limits)


def _melded_cdf(t_law: tuple[int, int], s_law: tuple[int, int]) -> Callable[[float], float]:
    """q -> P(T (2 S - 1) <= q) for independent T ~ Beta(*t_law) and S ~ Beta(*s_law), T's first shape at least
    1. Where S is not a point mass, T is integrated numerically over 2,000 cells of its bulk (its mean +- 40
    standard deviations)."""
    a, b = t_law
    if b == 0:  # T is 1: the difference is 2 S - 1
        return lambda q: float(beta_cdf((1 + q) / 2, *s_law)[0])
    if s_law[0] == 0:  # S is 0: the difference is -T, a continuous law
        return lambda q: float(1 - beta_cdf(-q, a, b)[0])
    mean, sd = a / (a + b), sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    lo, hi = max(0.0, mean - 40 * sd), min(1.0, mean + 40 * sd)
    t = lo + (np.arange(2000) + 0.5) * (hi - lo) / 2000
    log_density = (a - 1) * np.log(t) + (b - 1) * np.log1p(-t)
    weight = np.exp(log_density - log_density.max())
    weight /= weight.sum()
    return lambda q: float(weight @ beta_cdf((1 + q / t) / 2, *s_law))


def _first_reaching(cdf: Callable[[float], float], target: float, below: float, reaching: float) -> float:
    """The smallest q in (below, reaching] with cdf(q) >= target, by bisection, given that cdf(below) < target
    <= cdf(reaching); the answer is always strictly above `below`."""
    for _ in range(40):  # to within 1e-12
        middle = (below + reaching) / 2
        if middle in (below, reaching):
            break
        if cdf(middle) >= target:
            reaching = middle
        else:
            below = middle
    return reaching


def beta_cdf(x, a: int, b: int) -> np.ndarray:
    """The distribution function of Beta(a, b) at x (a number or an array; the answer is an array). A shape of 0
    is a point mass, as Clopper-Pearson's limits of 0 or of all successes are: at 0 when a is 0, at 1 when b is.
    Otherwise the regularized incomplete beta function, from its continued fraction (Numerical Recipes, 6.4)."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    if a == 0:
        return (x >= 0).astype(float)
    if b == 0:
        return (x >= 1).astype(float)
    out = (x >= 1).astype(float)
    inside = (x > 0) & (x < 1)
    xi = x[inside]
    front = np.exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * np.log(xi) + b * np.log1p(-xi))
    direct = xi < (a + 1) / (a + b + 2)  # where the fraction converges fast; elsewhere by I_x(a, b) = 1 - I_1-x(b, a)
    value = np.empty_like(xi)
    value[direct] = front[direct] * _beta_fraction(a, b, xi[direct]) / a
    value[~direct] = 1 - front[~direct] * _beta_fraction(b, a, 1 - xi[~direct]) / b
    out[inside] = np.clip(value, 0.0, 1.0)
    return out


def _beta_fraction(a: float, b: float, x: np.ndarray) -> np.ndarray:
    """The incomplete beta function's continued fraction, by the modified Lentz method."""
    tiny = 1e-300
    c, d = np.ones_like(x), 1 - (a + b) * x / (a + 1)
    d = 1 / np.where(np.abs(d) < tiny, tiny, d)
    h = d.copy()
    for m in range(1, 100_000):
        for term in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                     -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + term * d
            d = 1 / np.where(np.abs(d) < tiny, tiny, d)
            c = 1 + term / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            h = h * c * d
        if np.all(np.abs(c * d - 1) < 1e-14):
            return h
    raise ArithmeticError(f"the incomplete beta function did not converge for Beta({a}, {b})")


# Several samples per task: the sign-flip test of the per-task differences, and the interval that inverts it.

def sign_flip(differences: list[Fraction]) -> tuple[float, float, float]:
    """(p, low, high) for the mean of per-task differences in pass@1, each in [-1, 1].

    The test: under no difference each task's two runs are exchangeable, so each difference is as likely with
    its sign flipped; p is the share of sign flips whose sum is at least as far from 0 as the observed one (every
    flip up to EXACT_FLIPS tasks; RESAMPLES seeded random flips beyond, p = (1 + hits) / (RESAMPLES + 1)).

    The interval is every shift m that the same test, applied to the differences minus m, does not reject. A
    flip is as extreme at m exactly when m lies between the mean of the flipped tasks and the mean of the others
    (Hartigan, 1969), and all these intervals hold the observed mean, so the accepted shifts form one interval
    whose ends are order statistics of those subset means. It contains 0 exactly when p >= ALPHA."""
    n = len(differences)
    scale = lcm(*(d.denominator for d in differences))
    ints = [int(d * scale) for d in differences]  # exact: a flip whose sum ties the observed one counts
    d = np.array(ints, dtype=np.int64 if scale * n < 2 ** 62 else object)
    if n <= EXACT_FLIPS:  # every flip, the observed one (none flipped) among them
        flipped = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool)
        observed, draws = 0, 2 ** n
    else:  # random flips, and the observed one counted once more
        flipped = np.random.RandomState(SEED).randint(0, 2, size=(RESAMPLES, n)).astype(bool)
        observed, draws = 1, RESAMPLES + 1

    def p_of(hits: int) -> float:
        return (observed + hits) / draws

    total = d.sum()
    in_flipped = flipped.astype(d.dtype) @ d  # the sum over the flipped tasks, and over the others
    in_kept = total - in_flipped
    # a flip is as far from 0 as the observed sum, |in_kept - in_flipped| >= |total|, exactly when the product of
    # the two sums is not positive
    p = p_of(int((np.sign(in_flipped) * np.sign(in_kept) <= 0).sum()))
    needed = next(h for h in range(len(flipped) + 1) if p_of(h) >= ALPHA)  # the fewest hits the test accepts
    size_flipped = flipped.sum(axis=1)
    size_kept = n - size_flipped
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_flipped = in_flipped.astype(float) / (size_flipped * float(scale))
        mean_kept = in_kept.astype(float) / (size_kept * float(scale))
    trivial = (size_flipped == 0) | (size_kept == 0)  # as far from 0 as the observed sum at every shift
    left = np.where(trivial, -np.inf, np.minimum(mean_flipped, mean_kept))
    right = np.where(trivial, np.inf, np.maximum(mean_flipped, mean_kept))
    low, high = np.sort(left)[needed - 1], np.sort(right)[-needed]
    return p, float(np.clip(low, -1.0, 1.0)), float(np.clip(high, -1.0, 1.0))


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
