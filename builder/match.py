"""Fresh splits matched to the release they are compared with: the same structural difficulty, feature by feature.

A fresh split stands in for its release only if its tasks are as hard in structure: a split that happened to
draw longer programs would score lower and look like a harder benchmark, or like a contaminated release. The
generator's mix moves with the seed, and with how far a scenario's coverage-guided fuzzing has gone, so a
matched split (`python -m builder --fresh --against RELEASE`) does not keep the first n programs that pass: it
fuzzes a larger pool (at most `--match-pool` times n programs per scenario) and keeps a task only while its
*stratum* still has room, the room being the release's share of that stratum times n (largest remainders).

Strata, per scenario, from the release's own tasks (the first `--against` release): the API calls the reference
made on the original test case (`num_api_calls`) and its bindings (`binding_count`), each cut at the release's
tertiles, and one yes/no feature: whether the program branches (`has_branch`), or, where a frontier program's
`levers` (lookups, loops, aggregates, recovery, ...) split the release more evenly than branching does, whether it
carries the lever whose share is nearest one half. What the card reports, per scenario: the two-sample
Kolmogorov-Smirnov statistic D of each numeric feature (calls, bindings, path depth) against its 5% critical
value, the largest difference between the release's and the split's share of a stratum, and of a lever.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from math import floor, sqrt

NUMERIC = ("num_api_calls", "binding_count", "path_depth")
LABELS = {"num_api_calls": "API calls", "binding_count": "bindings", "path_depth": "path depth"}
KS_C = 1.358  # the two-sample Kolmogorov-Smirnov critical coefficient at 5%
FULL = "its stratum is full (matched fresh split)"


Features = tuple[int, int, int, bool, tuple[str, ...]]  # calls, bindings, path depth, branches, levers
BRANCH = "branch"


def features(task) -> Features:
    """What a task is matched on (a TaskRecord, or a row of one; a row of a dataset older than `levers` has none)."""
    get = (lambda k: task.get(k)) if isinstance(task, dict) else (lambda k: getattr(task, k, None))
    return (int(get("num_api_calls")), int(get("binding_count")), int(get("path_depth")), bool(get("has_branch")),
            tuple(sorted(get("levers") or ())))


def has(f: Features, on: str) -> bool:
    return f[3] if on == BRANCH else on in f[4]


def split_on(release: list[Features]) -> str:
    """The yes/no feature of the strata: branching, or the lever whose release share is nearest one half, whichever
    splits the release more evenly (ties: branching, then the lever's name)."""
    candidates = [BRANCH, *sorted({lever for f in release for lever in f[4]})]
    return min(candidates, key=lambda on: abs(sum(has(f, on) for f in release) / len(release) - 0.5))


def tertiles(values: list[int]) -> tuple[int, int]:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 3], ordered[(2 * (len(ordered) - 1)) // 3]


def _bin(value: int, cuts: tuple[int, int]) -> int:
    return 0 if value <= cuts[0] else 1 if value <= cuts[1] else 2


def quotas(counts: Counter, n: int) -> dict[str, int]:
    """n places shared over the strata in proportion to `counts`, by largest remainder (ties: the stratum's name)."""
    total = sum(counts.values())
    exact = {k: n * c / total for k, c in counts.items()}
    out = {k: floor(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[: n - sum(out.values())]:
        out[k] += 1
    return out


def ks_statistic(a: list[int], b: list[int]) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical distributions."""
    if not a or not b:
        return 0.0
    a, b = sorted(a), sorted(b)
    gap, i, j = 0.0, 0, 0
    for x in sorted(set(a) | set(b)):
        while i < len(a) and a[i] <= x:
            i += 1
        while j < len(b) and b[j] <= x:
            j += 1
        gap = max(gap, abs(i / len(a) - j / len(b)))
    return gap


def ks_critical(n: int, m: int) -> float:
    return KS_C * sqrt((n + m) / (n * m))


@dataclass
class Strata:
    """One scenario's strata: the release's cut points, its tasks' features, and the split's quotas."""

    release: list[Features]
    n: int
    cuts: dict[str, tuple[int, int]] = field(init=False)
    on: str = field(init=False)  # the strata's yes/no feature (split_on)
    quota: dict[str, int] = field(init=False)
    taken: list[Features] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cuts = {"num_api_calls": tertiles([f[0] for f in self.release]),
                     "binding_count": tertiles([f[1] for f in self.release])}
        self.on = split_on(self.release)
        self.quota = quotas(Counter(self.key(f) for f in self.release), self.n)

    def key(self, f: Features) -> str:
        yes = has(f, self.on)
        last = ("branch" if yes else "straight") if self.on == BRANCH else (self.on if yes else f"no-{self.on}")
        return f"calls{_bin(f[0], self.cuts['num_api_calls'])}-bindings{_bin(f[1], self.cuts['binding_count'])}-{last}"

    @property
    def remaining(self) -> int:
        return self.n - len(self.taken)

    def report(self) -> dict:
        mine, theirs = Counter(self.key(f) for f in self.taken), Counter(self.key(f) for f in self.release)
        shares = {k: abs(mine[k] / max(1, len(self.taken)) - theirs[k] / len(self.release))
                  for k in set(mine) | set(theirs)}
        worst = max(sorted(shares), key=lambda k: shares[k]) if shares else None
        levers = sorted({lever for f in self.taken + self.release for lever in f[4]})
        lever_shares = {lever: {"split": round(sum(lever in f[4] for f in self.taken) / max(1, len(self.taken)), 4),
                                "release": round(sum(lever in f[4] for f in self.release) / len(self.release), 4)}
                        for lever in levers}
        return {
            "tasks": len(self.taken), "release_tasks": len(self.release), "cuts": self.cuts,
            "ks": {name: {"d": round(ks_statistic([f[i] for f in self.taken], [f[i] for f in self.release]), 4),
                          "critical": round(ks_critical(max(1, len(self.taken)), len(self.release)), 4)}
                   for i, name in enumerate(NUMERIC)},
            "branch_share": {"split": round(sum(f[3] for f in self.taken) / max(1, len(self.taken)), 4),
                             "release": round(sum(f[3] for f in self.release) / len(self.release), 4)},
            "largest_stratum_gap": {"stratum": worst, "gap": round(shares[worst], 4) if worst else 0.0},
            **({"lever_shares": lever_shares} if levers else {}),
        }


class Matcher:
    """The matching step of a fresh build: which tasks to keep, scenario by scenario, and what the match was."""

    def __init__(self, release_tasks: dict[str, list], n: int, pool: int, source: str):
        self.source, self.pool, self.n = source, pool, n
        self.strata = {s: Strata([features(t) for t in tasks], n) for s, tasks in release_tasks.items() if tasks}

    def limit(self, scenario: str) -> int:
        """The most programs fuzzed for a scenario: the pool (n alone for a scenario the release does not hold)."""
        return self.n * self.pool if scenario in self.strata else self.n

    def full(self, scenario: str) -> bool:
        return scenario in self.strata and self.strata[scenario].remaining <= 0

    def remaining(self, scenario: str) -> int | None:
        return self.strata[scenario].remaining if scenario in self.strata else None

    def take(self, scenario: str, records: list, rejections: Counter) -> list:
        """The records whose stratum has room, in order; the others counted as rejected."""
        if scenario not in self.strata:
            return records
        strata, kept = self.strata[scenario], []
        filled = Counter(strata.key(f) for f in strata.taken)
        for r in records:
            f = features(r)
            if filled[strata.key(f)] < strata.quota.get(strata.key(f), 0):
                filled[strata.key(f)] += 1
                strata.taken.append(f)
                kept.append(r)
            else:
                rejections[f"{scenario}: {FULL}"] += 1
        return kept

    def state(self) -> dict:
        return {s: [list(f) for f in st.taken] for s, st in self.strata.items()}

    def restore(self, state: dict) -> None:
        for s, taken in state.items():  # a checkpoint from before levers has four features a task
            self.strata[s].taken = [(int(f[0]), int(f[1]), int(f[2]), bool(f[3]), tuple(f[4] if len(f) > 4 else ()))
                                    for f in taken]

    def summary(self) -> dict:
        return {"against": self.source, "pool": self.pool,
                "scenarios": {s: st.report() for s, st in self.strata.items()}}


def describe(summary: dict) -> list[str]:
    """Lines for the command line and the card: the match, feature by feature."""
    lines = []
    for s, r in summary["scenarios"].items():
        ks = ", ".join(f"{LABELS[k]} D={v['d']:.3f} ({'below' if v['d'] <= v['critical'] else 'ABOVE'} the 5% "
                       f"critical {v['critical']:.3f})" for k, v in r["ks"].items())
        gap = r["largest_stratum_gap"]
        lines.append(f"{s}: {r['tasks']} tasks against {r['release_tasks']}; {ks}; branching "
                     f"{r['branch_share']['split']:.0%} vs {r['branch_share']['release']:.0%}; largest stratum-share "
                     f"gap {gap['gap']:.1%} ({gap['stratum']})" + lever_line(r.get("lever_shares")))
    return lines


def lever_gap(shares: dict) -> tuple[str, float]:
    """The lever whose share differs most between the split and the release, and by how much."""
    lever = max(sorted(shares), key=lambda k: abs(shares[k]["split"] - shares[k]["release"]))
    return lever, abs(shares[lever]["split"] - shares[lever]["release"])


def lever_line(shares: dict | None) -> str:
    if not shares:
        return ""
    lever, gap = lever_gap(shares)
    return ("; levers " + ", ".join(f"{k} {v['split']:.0%} vs {v['release']:.0%}" for k, v in shares.items())
            + f" (largest gap {gap:.1%}, {lever})")
