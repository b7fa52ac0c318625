"""Interchangeability, measured: do fresh splits of one tier give a model the same score, up to sampling noise?

  python scripts/stability.py --splits 5 --n 100 [--matched | --against RELEASE] [--scenarios tensor,session,voice]
                              [--tier paper] [--seed 0] [--rates 0.05,0.1,0.2,0.4] [--answers FILE ...]
                              [--out stability] [--workers W]

A fresh split is a new draw from the generator (a new seed; docs/releases.md). For splits to be
interchangeable, a model's pass@1 on one split may differ from its pass@1 on another only as much as drawing T
tasks makes it differ: with one sample per task, pass@1 is a binomial proportion whose standard error is
sqrt(p(1-p)/T). This script builds K splits with distinct seeds (split i: `python -m builder --seed S*1000+i`,
same scenarios, --n and --tier), scores a panel of instrument models on each with the real harness (a samples file
per model and split, scored by `evaluate.run.run`, i.e. `python -m evaluate --samples`: every program runs in the
sandbox), and compares the spread between splits with the noise within one.

Fresh splits as users draw them (`--matched` or `--against RELEASE`): each split is built with `python -m builder
--fresh --against RELEASE`, so it repeats no task of the release and is matched to the release's structure stratum
by stratum (builder/match.py, at the builder's default --match-pool); the table gives each split's largest
stratum-share gap and its worst KS statistic from its build report. `--matched` first builds the release itself
under --out (`release/`, seed S*1000+999, the splits' other settings); `--against` names one already built, whose
scenarios, --n and --tier the splits take. Without either, the splits are independent builds, unmatched.

The panel:

* `reference`: the reference programs. Must be 100% on every split (a check of the harness, nothing to test).
* `null`: `RESULT = None` for every task. Must be 0%.
* `rate-R` for each --rates R, synthetic models of graded skill: each API call statement of the reference (a
  statement that assigns something other than RESULT, or a bare call: what `builder/stats.py` counts as a call) is
  mutated with probability R, independently, by one of the mutants `builder.mutate.mutants` makes of the task's
  program that changes that statement alone (drop the call, skip it, call a confused API, another argument, swapped
  arguments, another variable of the same type), drawn uniformly, seeded by (split seed, task, R). The edits of
  several statements compose: each is located in the reference's syntax tree and the selected statements are
  replaced (or removed) together in one tree. A program none of whose calls is selected is the reference itself.
  The task's `Program` object the operators need is made again by the builder's own fuzzer from the split's
  MANIFEST (`builder.pipeline.fuzz`), and checked against the stored reference text. The table's last column is
  the share of call statements actually mutated. On the frontier tier the builder's operators mutate constructs
  (a loop cut after one page, a stale version, another pick) rather than single call statements, and its programs
  have many bookkeeping assignments, so most call statements have no mutant of their own and that share falls well
  below R (6% at R = 0.3 on a small session build): read the frontier's synthetic models by that column.
* every --answers FILE (JSON lines `{"task_id", "code"}`, one line per task), scored on the tasks of each split
  whose ids it holds. Task ids repeat across splits (`tensor-0003` names a different task in each), so a path with
  `{split}` in it (`answers/{split}.jsonl`) is read once per split, for answers written for that split's tasks.

Per model it reports pass@1 on each split with evaluate's 95% interval (`summary.overall.ci95["pass@1"]`), the
mean over splits, the standard deviation across splits (K - 1 in the denominator), the standard error expected
from sampling tasks within one split if the splits are exchangeable (sqrt(p(1-p)/T_i) with p the pooled pass
rate and T_i split i's tasks, averaged over the splits), their ratio, and the p-value of an exchangeability test:
a chi-square test of homogeneity of the K x 2 table of (passed, failed) counts, df = K - 1. Its tail is the
regularized upper incomplete gamma function (series / continued fraction; no scipy). When an expected count is
below 5, where the chi-square approximation is poor, the p-value is instead a Monte-Carlo permutation test of the
same statistic conditional on the table's margins (the passes dealt out over the splits at random,
20,000 draws, NumPy's legacy RandomState with seed 0, so the same counts give the same p-value). A model at 0% or
100% on every split has nothing to test and is reported as such.

Verdict: `stable` when SD <= expected SE and the test does not reject at 0.05. Read the SD rule with care: with
equal split sizes the homogeneity statistic is exactly (K - 1) * (SD / SE)^2, so "SD <= SE" by itself is a test
at the level P(chi2_{K-1} > K - 1): 0.32 for K = 2, 0.37 for K = 3, 0.44 for K = 10. A perfectly exchangeable
model fails it that often; the script prints that rate beside each such failure. The chi-square p-value is the
calibrated answer, and over several graded models the chance that one of them rejects by luck grows (about 0.19
for four independent tests at 0.05): the line before the verdict reads the graded models' tests together, with
Holm's correction, which keeps that chance at 0.05.

Resumable: a split folder whose MANIFEST.json matches the settings is reused (an interrupted build is resumed by
the builder itself), and a (split, model) score is reused while its samples file and the split's content hash are
unchanged. Writes under --out: split-<i>/ (datasets), samples/split-<i>/<model>.jsonl (+ .score.json, the reuse
marker), scores/split-<i>/<model>/local/results.json (evaluate's reports) and stability.json (every number
printed). Exit code 0 when every graded model is stable and the reference and null score 100% and 0%, 1 when not,
2 for bad input, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import hashlib
import io
import json
import math
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builder.stats import is_call  # noqa: E402
from core.arguments import INTERRUPTED, Parser, at_least_one  # noqa: E402
from scenarios.base import TIERS  # noqa: E402

SEED_STRIDE = 1000  # split i of --seed S is built with seed S * SEED_STRIDE + i: distinct for every (S, i)
MAX_SPLITS = SEED_STRIDE - 1  # the last seed of the stride is --matched's release
RELEASE = "release"
ALPHA = 0.05  # the exchangeability test's level
MIN_EXPECTED = 5  # Cochran's rule: below this expected count the chi-square tail is replaced by a permutation test
DRAWS = 20_000  # permutation draws
PERMUTATION_SEED = 0
NULL_CODE = "RESULT = None\n"
REFERENCE, NULL = "reference", "null"
DEFAULT_RATES = "0.05,0.1,0.2,0.4"
COMPOUND_FIELDS = ("body", "orelse", "finalbody")  # statement lists inside if / for / while / def / try / with


class InputError(Exception):
    """Bad input, reported in one line (exit code 2)."""


class RunError(Exception):
    """A step that failed (a build, a scoring run), reported in one line (exit code 1)."""


# ------------------------------------------------------------------------------------------------ statistics


def _gamma_q(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function Q(a, x) = Gamma(a, x) / Gamma(a): the power series of P
    below x = a + 1, a continued fraction (modified Lentz) above it (Numerical Recipes, 6.2)."""
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(10_000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return min(1.0, math.exp(log_front) * h)


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square with `df` degrees of freedom."""
    if df < 1:
        raise ValueError("a chi-square distribution needs at least one degree of freedom")
    return _gamma_q(df / 2, x / 2)


def _statistic(passed: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Pearson's X^2 of K x 2 tables (passed, failed) with row sizes `sizes`; `passed` may hold many tables (one
    per row of a 2-d array), all with the same margins."""
    total = sizes.sum()
    share = passed.sum(axis=-1, keepdims=True) / total
    expected_pass, expected_fail = sizes * share, sizes * (1 - share)
    failed = sizes - passed
    return (((passed - expected_pass) ** 2 / expected_pass) + ((failed - expected_fail) ** 2 / expected_fail)).sum(-1)


def homogeneity(counts: list[tuple[int, int]]) -> dict | None:
    """The chi-square test of homogeneity of (passed, failed) over the splits; `counts` holds (passed, tasks) per
    split. None when there is nothing to test (every task passed, or none did). See the module's docstring for when
    the p-value comes from permutations instead of the chi-square tail."""
    if len(counts) < 2:
        raise ValueError("a homogeneity test needs at least two splits")
    passed = np.array([p for p, _ in counts], dtype=float)
    sizes = np.array([t for _, t in counts], dtype=float)
    if (sizes <= 0).any() or (passed < 0).any() or (passed > sizes).any():
        raise ValueError(f"each split needs 0 <= passed <= tasks and tasks >= 1, got {counts}")
    total_pass, total = int(passed.sum()), int(sizes.sum())
    if total_pass in (0, total):
        return None
    statistic = float(_statistic(passed, sizes))
    df = len(counts) - 1
    smallest = float(min((sizes * total_pass / total).min(), (sizes * (total - total_pass) / total).min()))
    if smallest >= MIN_EXPECTED:
        return {"statistic": statistic, "df": df, "p": chi2_sf(statistic, df), "method": "chi-square",
                "min_expected": smallest}
    # Deal the passes out over the splits at random, keeping every split's size: sequential hypergeometric draws.
    rs = np.random.RandomState(PERMUTATION_SEED)
    left_pass = np.full(DRAWS, total_pass)
    left = total
    dealt = np.zeros((DRAWS, len(counts)))
    for i, size in enumerate(sizes.astype(int)):
        if i == len(counts) - 1:
            dealt[:, i] = left_pass
            break
        draw = rs.hypergeometric(left_pass, left - left_pass, size)
        dealt[:, i] = draw
        left_pass = left_pass - draw
        left -= size
    simulated = _statistic(dealt, sizes)
    p = float((1 + (simulated >= statistic - 1e-9).sum()) / (DRAWS + 1))
    return {"statistic": statistic, "df": df, "p": p,
            "method": f"permutation ({DRAWS} draws, seed {PERMUTATION_SEED}; an expected count is below "
                      f"{MIN_EXPECTED})", "min_expected": smallest}


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values: rejecting every model whose adjusted p is below 0.05 keeps the chance
    of any false rejection among them at 0.05, where testing each at 0.05 does not."""
    adjusted, running = {}, 0.0
    for i, name in enumerate(sorted(pvalues, key=pvalues.get)):
        running = max(running, min(1.0, (len(pvalues) - i) * pvalues[name]))
        adjusted[name] = running
    return adjusted


def sd_rule_false_alarm(splits: int) -> float:
    """How often an exchangeable model's SD across `splits` equal splits exceeds the expected SE:
    P(chi2_{K-1} > K - 1) (see the module's docstring)."""
    return chi2_sf(splits - 1, splits - 1)


@dataclass
class Stability:
    """One model's numbers across the splits (rates as fractions)."""

    rates: list[float]
    mean: float
    sd: float
    expected_se: float
    ratio: float | None  # SD / expected SE; None when the SE is 0 (nothing varies)
    test: dict | None  # homogeneity(); None: 0% or 100% on every split
    stable: bool

    @property
    def constant(self) -> bool:
        return self.test is None


def stability(counts: list[tuple[int, int]]) -> Stability:
    """`counts`: (passed, tasks) on each split."""
    rates = [p / t for p, t in counts]
    mean = sum(rates) / len(rates)
    sd = math.sqrt(sum((r - mean) ** 2 for r in rates) / (len(rates) - 1))
    pooled = sum(p for p, _ in counts) / sum(t for _, t in counts)
    se = sum(math.sqrt(pooled * (1 - pooled) / t) for _, t in counts) / len(counts)
    test = homogeneity(counts)
    ratio = sd / se if se > 0 else None
    stable = test is None or (sd <= se and test["p"] >= ALPHA)
    return Stability(rates, mean, sd, se, ratio, test, stable)


# ------------------------------------------------------------------------------------------------- mutation

Key = tuple[tuple, int]  # a statement's place: (path of (index, field) steps down from the module, its index)


def _bodies(stmt: ast.stmt) -> list[str]:
    return [f for f in COMPOUND_FIELDS if isinstance(getattr(stmt, f, None), list)]


def call_statements(tree: ast.Module) -> list[Key]:
    """The places of the call statements, in text order, at any depth (branches, loops, helper functions)."""
    found: list[Key] = []

    def walk(stmts: list[ast.stmt], path: tuple) -> None:
        for i, stmt in enumerate(stmts):
            if _bodies(stmt):
                for f in _bodies(stmt):
                    walk(getattr(stmt, f), path + ((i, f),))
            elif is_call(stmt):  # as builder/stats.py counts calls
                found.append((path, i))
    walk(tree.body, ())
    return found


def _dump(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def _header(stmt: ast.stmt) -> str:
    """A compound statement without its statement lists (an `if`'s test, a loop's target and iterable)."""
    bare = copy.copy(stmt)
    for f in _bodies(stmt):
        setattr(bare, f, [])
    return _dump(bare)


def locate(reference: ast.Module, mutant: ast.Module) -> tuple[Key, ast.stmt | None] | None:
    """The one statement a mutant changes, and what it becomes (None: removed); None when the mutant differs from
    the reference elsewhere than in one statement (a condition, or several statements)."""
    def find(ref: list[ast.stmt], mut: list[ast.stmt], path: tuple):
        if len(mut) == len(ref):
            differ = [i for i, (a, b) in enumerate(zip(ref, mut)) if _dump(a) != _dump(b)]
            if len(differ) != 1:
                return None
            i = differ[0]
            a, b = ref[i], mut[i]
            if type(a) is type(b) and _bodies(a) and _header(a) == _header(b):  # the change is inside it
                inner = [f for f in _bodies(a) if _dump(ast.Module(getattr(a, f), [])) !=
                         _dump(ast.Module(getattr(b, f), []))]
                return find(getattr(a, inner[0]), getattr(b, inner[0]), path + ((i, inner[0]),)) \
                    if len(inner) == 1 else None
            return (path, i), b
        if len(mut) == len(ref) - 1:
            kept = [_dump(s) for s in mut]
            for i in range(len(ref)):
                if [_dump(s) for s in ref[:i] + ref[i + 1:]] == kept:
                    return (path, i), None
        return None
    return find(reference.body, mutant.body, ())


def compose(reference: ast.Module, edits: dict[Key, ast.stmt | None]) -> str:
    """The reference with every statement in `edits` replaced by its new version (None: removed), as source. The
    edits are at distinct simple statements, so they apply together in one tree."""
    def rebuild(stmts: list[ast.stmt], path: tuple) -> list[ast.stmt]:
        out = []
        for i, stmt in enumerate(stmts):
            key = (path, i)
            if key in edits:
                if edits[key] is not None:
                    out.append(edits[key])
                continue
            if _bodies(stmt):
                stmt = copy.copy(stmt)
                for f in _bodies(stmt):
                    setattr(stmt, f, rebuild(getattr(stmt, f), path + ((i, f),)))
            out.append(stmt)
        return out or ([ast.Pass()] if stmts else [])
    return ast.unparse(ast.fix_missing_locations(ast.Module(rebuild(reference.body, ()), [])))


@dataclass
class TaskMutants:
    """A task's call statements and, for each, the statement versions its single-statement mutants put there."""

    reference: str
    tree: ast.Module
    calls: list[Key]
    options: dict[Key, list[tuple[str, ast.stmt | None]]]  # place -> (operator, new statement), in a fixed order

    @classmethod
    def of(cls, program) -> "TaskMutants":
        from builder.mutate import mutants

        reference = program.reference_code()
        tree = ast.parse(reference)
        calls = call_statements(tree)
        wanted = set(calls)
        options: dict[Key, dict[str, tuple[str, ast.stmt | None]]] = {}
        # Every mutant the builder's operators make (the rng only orders them: the set is the same for any seed).
        for m in mutants(program, 1_000_000, random.Random(0)):
            where = locate(tree, ast.parse(m.code))
            if where is not None and where[0] in wanted:
                key, new = where
                options.setdefault(key, {})[m.code] = (m.operator, new)
        return cls(reference, tree, calls, {k: [v[c] for c in sorted(v)] for k, v in options.items()})

    def answer(self, rate: float, rng: random.Random) -> tuple[str, int]:
        """A synthetic model's program at `rate`, and how many call statements it mutated."""
        edits = {}
        for key in self.calls:
            if rng.random() < rate and self.options.get(key):
                edits[key] = rng.choice(self.options[key])[1]
        return (compose(self.tree, edits) + "\n" if edits else self.reference), len(edits)


def programs_of(manifest: dict, wanted: set[str]) -> dict:
    """task id -> the builder's `Program` for the split's tasks, fuzzed again exactly as its build fuzzed them (no
    sandbox: the fuzzer only)."""
    from builder.config import BuildConfig
    from builder.pipeline import Fuzzer

    known = {f.name for f in fields(BuildConfig)}
    config = BuildConfig(**{k: v for k, v in manifest["config"].items() if k in known})
    # A matched fresh split keeps tasks from a pool of up to match_pool x n programs (builder/match.py).
    limit = config.n * config.match_pool if config.against and config.match_pool else config.n
    programs = {}
    with contextlib.redirect_stderr(io.StringIO()):  # the fuzzer's progress lines
        for scenario in config.scenarios:
            for draft in Fuzzer(scenario).programs(config, 0, limit, Counter()):
                if draft.task_id in wanted:
                    programs[draft.task_id] = draft.program
    return programs


def synthetic_seed(split_seed: int, task_id: str, rate: float) -> str:
    return f"stability/{split_seed}/{task_id}/{rate!r}"


# ---------------------------------------------------------------------------------------------------- splits


@dataclass
class Split:
    name: str
    folder: Path
    seed: int
    tasks: list = field(default_factory=list)
    manifest: dict = field(default_factory=dict)
    match: dict | None = None  # a matched fresh split's match to its release (match_of)
    _mutants: dict = field(default_factory=dict)

    def mutants(self) -> dict[str, TaskMutants]:
        """task id -> TaskMutants, made once per split."""
        if not self._mutants:
            ids = {t.task_id for t in self.tasks}
            programs = programs_of(self.manifest, ids)
            for t in self.tasks:
                program = programs.get(t.task_id)
                if program is None or program.reference_code() != t.reference_program:
                    raise RunError(f"{self.name}: the builder's fuzzer, run again on {self.folder}'s settings, does "
                                   f"not make {t.task_id}'s reference (a build by another builder version?); "
                                   f"rebuild it: remove {self.folder}")
                self._mutants[t.task_id] = TaskMutants.of(program)
        return self._mutants


def split_seeds(seed: int, splits: int) -> list[int]:
    return [seed * SEED_STRIDE + i for i in range(splits)]


def release_seed(seed: int) -> int:
    """--matched's release: the last seed of the stride, which no split uses."""
    return seed * SEED_STRIDE + SEED_STRIDE - 1


IGNORED = ("out", "workers", "concurrency", "executor", "ray_address")  # settings that change no byte of a build


def wanted_config(a: argparse.Namespace, seed: int, fresh: bool = True) -> dict:
    """The MANIFEST.json config a build of split `seed` with these settings records (less what changes no byte,
    and the date unless --created-at fixes it); `fresh=False` for --matched's release. Raises ValueError for
    settings the builder refuses."""
    from builder.config import BuildConfig

    config = BuildConfig(scenarios=a.scenario_list, n=a.n, seed=seed, tier=a.tier, created_at=a.created_at or "")
    if fresh and a.base is not None:  # what builder/fresh.py records of the release it keeps the split fresh against
        config.fresh, config.against, config.avoid_seeds = True, [str(a.base)], a.base_seeds
    return {k: v for k, v in config.to_dict().items() if k not in IGNORED and (a.created_at or k != "created_at")}


def manifest_mismatch(folder: Path, want: dict) -> str | None:
    """Why the dataset in `folder` is not the split `want` describes (`wanted_config`); None when it is."""
    try:
        config = json.loads((folder / "MANIFEST.json").read_text()).get("config") or {}
    except (OSError, ValueError, AttributeError):
        return "no readable MANIFEST.json"
    for k in sorted(want):
        if config.get(k) != want[k]:
            return f"its {k} is {config.get(k)!r}, not {want[k]!r}"
    return None


def build_split(split: Split, a: argparse.Namespace, fresh: bool = True) -> str:
    """Build (or reuse) one split (`fresh=False`: --matched's release); returns the progress line."""
    why = manifest_mismatch(split.folder, wanted_config(a, split.seed, fresh))
    start = time.monotonic()
    if why is None:
        verb = "reusing"
    else:
        verb = f"rebuilt ({why})" if (split.folder / "MANIFEST.json").exists() else "built"
        cmd = [sys.executable, "-m", "builder", "--scenarios", ",".join(a.scenario_list), "--n", str(a.n),
               "--seed", str(split.seed), "--tier", a.tier, "--out", str(split.folder)]
        cmd += ["--fresh", "--against", str(a.base)] if fresh and a.base is not None else []
        cmd += ["--workers", str(a.workers)] if a.workers else []
        cmd += ["--created-at", a.created_at] if a.created_at else []
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode == INTERRUPTED:
            raise KeyboardInterrupt
        if proc.returncode != 0:
            lines = [x for x in proc.stderr.splitlines() if x.strip()]
            raise RunError(f"building {split.name} failed (exit {proc.returncode}): "
                           f"{lines[-1] if lines else 'no message'} [{' '.join(cmd[1:])}]")
    from core.records import DatasetError, load_tasks

    try:
        split.tasks, split.manifest = load_tasks(str(split.folder))
    except DatasetError as exc:
        raise RunError(f"{split.name}: {exc}") from exc
    counts = Counter(t.scenario for t in split.tasks)
    split.match = match_of(split.folder)
    return (f"{split.name}: {verb} {split.folder} (seed {split.seed}: {len(split.tasks)} tasks, "
            + ", ".join(f"{s} {counts[s]}" for s in a.scenario_list) + f") in {time.monotonic() - start:.0f} s"
            + (f"; {match_line(split.match)}" if split.match else ""))


def match_of(folder: Path) -> dict | None:
    """A matched fresh split's match to its release, from its build report (builder/match.py): per scenario, the
    largest stratum-share gap and the largest KS statistic over the numeric features, with that feature's 5%
    critical value. None for a split that was not matched."""
    try:
        match = json.loads((folder / "build_report.json").read_text())["fresh"]["match"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    out = {}
    for scenario, r in match["scenarios"].items():
        feature = max(sorted(r["ks"]), key=lambda k: r["ks"][k]["d"])
        out[scenario] = {"gap": r["largest_stratum_gap"]["gap"], "ks_feature": feature, **r["ks"][feature]}
    return out


def match_line(match: dict) -> str:
    return "matched: " + ", ".join(f"{s} gap {m['gap']:.1%}, max KS D {m['d']:.3f} ({m['ks_feature']}; 5% "
                                   f"critical {m['critical']:.3f})" for s, m in match.items())


# ---------------------------------------------------------------------------------------------------- models


@dataclass
class Model:
    name: str
    kind: str  # reference, null, synthetic, answers
    rate: float | None = None
    path: str | None = None  # an answers file (may hold {split})


def read_answers(path: Path) -> dict[str, str]:
    """task id -> code of an answers file; one line per task."""
    answers = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise InputError(f"{path}:{n}: not a JSON line") from None
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str) or "code" not in row:
            raise InputError(f"{path}:{n}: expected {{\"task_id\": ..., \"code\": ...}}")
        if row["task_id"] in answers:
            raise InputError(f"{path}:{n}: a second line for {row['task_id']}; give one answer per task (pass@1 "
                             "across splits is compared as a proportion of tasks)")
        answers[row["task_id"]] = row["code"] if isinstance(row["code"], str) else ""
    return answers


def answers_path(model: Model, split: str) -> Path:
    return Path(model.path.replace("{split}", split)).expanduser()


def samples_for(model: Model, split: Split, mutated: Counter) -> list[dict]:
    """The samples lines of one model on one split (`mutated`: calls / mutated counts, filled for synthetic ones)."""
    if model.kind == REFERENCE:
        return [{"task_id": t.task_id, "code": t.reference_program} for t in split.tasks]
    if model.kind == NULL:
        return [{"task_id": t.task_id, "code": NULL_CODE} for t in split.tasks]
    if model.kind == "synthetic":
        lines = []
        for t in split.tasks:
            task = split.mutants()[t.task_id]
            code, changed = task.answer(model.rate, random.Random(synthetic_seed(split.seed, t.task_id, model.rate)))
            mutated["calls"] += len(task.calls)
            mutated["mutated"] += changed
            lines.append({"task_id": t.task_id, "code": code})
        return lines
    path = answers_path(model, split.name)
    if not path.exists():  # only a {split} path may lack a split (checked before any work)
        return []
    answers = read_answers(path)
    return [{"task_id": t.task_id, "code": answers[t.task_id]} for t in split.tasks if t.task_id in answers]


def score(model: Model, split: Split, a: argparse.Namespace) -> dict | None:
    """One model on one split: (passed, tasks, pass@1, ci95, ...), from a reused marker or a fresh evaluate run.
    None when the model has no answer for any task of the split."""
    mutated: Counter = Counter()
    lines = samples_for(model, split, mutated)
    if not lines:
        return None
    folder = a.out / "samples" / split.name
    folder.mkdir(parents=True, exist_ok=True)
    samples = folder / f"{model.name}.jsonl"
    text = "".join(json.dumps(x) + "\n" for x in lines)
    digest = hashlib.sha256(text.encode()).hexdigest()
    marker = folder / f"{model.name}.score.json"
    try:
        kept = json.loads(marker.read_text())
        if kept.get("samples_sha256") == digest and kept.get("content_hash") == split.manifest["content_hash"]:
            return {**kept, "reused": True}
    except (OSError, ValueError):
        pass
    samples.write_text(text)

    from core.records import DatasetError
    from core.sandbox.executor import ExecutorError
    from core.sandbox.harness import SandboxFault
    from evaluate.run import EvalConfig, run

    try:
        report = run(EvalConfig(samples=str(samples), dataset=str(split.folder),
                                out=str(a.out / "scores" / split.name), workers=a.workers))
    except (DatasetError, ExecutorError, SandboxFault) as exc:
        raise RunError(f"scoring {model.name} on {split.name} failed: {exc}") from exc
    rows = report["samples"]
    verdicts = [r for r in rows if r["status"] != "infra_error"]
    overall = report["summary"]["overall"]
    result = {
        "samples_sha256": digest,
        "content_hash": split.manifest["content_hash"],
        "tasks": len(verdicts),
        "passed": sum(r["status"] == "pass" for r in verdicts),
        "pass@1": overall["pass@1"],
        "ci95": overall.get("ci95", {}).get("pass@1"),
        "infra_error": len(rows) - len(verdicts),
        "by_scenario": {s: {"tasks": b["tasks"], "pass@1": b["pass@1"]}
                        for s, b in report["summary"]["scenarios"].items()},
        "results": report.get("path"),
        **({"calls": mutated["calls"], "mutated": mutated["mutated"]} if model.kind == "synthetic" else {}),
    }
    if result["infra_error"]:  # no verdict for some samples: not kept for reuse, so the next run scores them
        print(f"  warning: {model.name} on {split.name}: {result['infra_error']} sample(s) got no verdict (a "
              "worker was lost) and are left out; run the same command again to score them", file=sys.stderr)
    else:
        marker.write_text(json.dumps(result, indent=2) + "\n")
    return {**result, "reused": False}


# ---------------------------------------------------------------------------------------------------- report


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def points(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def verdict(model: Model, s: Stability | None, splits: int) -> str:
    """The verdict line of one model."""
    if s is None:
        return f"{model.name}: scored on fewer than 2 splits: nothing to compare"
    if model.kind in (REFERENCE, NULL):
        want = 1.0 if model.kind == REFERENCE else 0.0
        ok = all(r == want for r in s.rates)
        return (f"{model.name}: {pct(want)} on every split, as it must (nothing to test)" if ok else
                f"{model.name}: PROBLEM: must score {pct(want)} on every split, scored "
                + ", ".join(pct(r) for r in s.rates))
    if s.constant:
        return f"{model.name}: stable ({pct(s.rates[0])} on every split: nothing to test)"
    test = s.test
    p = f"{test['method'].split(' ')[0]} p = {test['p']:.3g}"
    if s.stable:
        return f"{model.name}: stable (SD {points(s.sd)} <= expected SE {points(s.expected_se)} points; {p})"
    reasons = []
    if s.sd > s.expected_se:
        reasons.append(f"SD {points(s.sd)} > expected SE {points(s.expected_se)} points (an exchangeable model's SD "
                       f"exceeds it with probability about {sd_rule_false_alarm(splits):.2f} at {splits} splits)")
    reasons.append(f"{p}, " + ("rejected at 0.05" if test["p"] < ALPHA else "not rejected at 0.05"))
    return f"{model.name}: not stable: " + "; ".join(reasons)


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in
                               enumerate(zip(r, widths))).rstrip() for r in rows)


def summarize_model(m: Model, scored: dict[str, dict], splits: list[Split]) -> tuple[dict, Stability | None]:
    """One model's entry of stability.json (its scores on each split, its numbers across them, its verdict), and
    its Stability (None when it was scored on fewer than two splits)."""
    got = [(s.name, scored[s.name]) for s in splits if scored.get(s.name)]
    s = stability([(r["passed"], r["tasks"]) for _, r in got]) if len(got) >= 2 else None
    kept = ("tasks", "passed", "pass@1", "ci95", "infra_error", "by_scenario", "results", "calls", "mutated")
    entry = {"name": m.name, "kind": m.kind, "rate": m.rate, "answers": m.path,
             "splits": [{"split": name, **{k: r[k] for k in kept if k in r}} for name, r in got]}
    if s is not None:
        entry.update(mean=s.mean, sd=s.sd, expected_se=s.expected_se, ratio=s.ratio, test=s.test, stable=s.stable)
        if m.kind in (REFERENCE, NULL):  # instruments: right or wrong, never "stable"
            entry["stable"] = all(r == (1.0 if m.kind == REFERENCE else 0.0) for r in s.rates)
    entry["verdict"] = verdict(m, s, len(got))
    return entry, s


def summary_row(entry: dict, s: Stability | None) -> list[str]:
    if s is None:
        return [entry["name"]] + ["-"] * 7
    test = "constant" if s.constant else f"{s.test['p']:.3f}" + ("*" if "permutation" in s.test["method"] else "")
    calls = sum(r.get("calls", 0) for r in entry["splits"])
    mutated = sum(r.get("mutated", 0) for r in entry["splits"])
    return [entry["name"], str(sum(r["tasks"] for r in entry["splits"])), pct(s.mean), points(s.sd),
            points(s.expected_se), "-" if s.ratio is None else f"{s.ratio:.2f}", test,
            f"{mutated / calls:.1%} of {calls}" if calls else "-"]


def calibrated_reading(entries: list[dict]) -> tuple[str, list[str]]:
    """The graded models' tests read together (Holm), and the models it rejects; adds `holm_p` to the entries."""
    adjusted = holm({e["name"]: e["test"]["p"] for e in entries if e["kind"] == "synthetic" and e.get("test")})
    for e in entries:
        if e["name"] in adjusted:
            e["holm_p"] = adjusted[e["name"]]
    if not adjusted:
        return "calibrated reading: no graded model has a test to run (each is 0% or 100% on every split)", []
    rejected = sorted((n for n, q in adjusted.items() if q < ALPHA), key=adjusted.get)
    head = f"calibrated reading: the exchangeability tests of the {len(adjusted)} graded model(s), Holm-corrected, "
    if rejected:
        return head + "reject " + ", ".join(f"{n} (adjusted p {adjusted[n]:.3g})" for n in rejected), rejected
    smallest = min(adjusted, key=adjusted.get)
    return head + f"reject none at {ALPHA} (smallest adjusted p {adjusted[smallest]:.3g}, {smallest})", rejected


def report(models: list[Model], splits: list[Split], scores: dict, a: argparse.Namespace) -> tuple[str, dict, bool]:
    """The printed text, stability.json's content, and whether the panel passed (instruments right, every graded
    model stable)."""
    per_split = [["model"] + [s.name for s in splits]]
    for m in models:
        cells = []
        for s in splits:
            r = scores[m.name].get(s.name)
            ci = f" [{points(r['ci95'][0])}, {points(r['ci95'][1])}]" if r and r.get("ci95") else ""
            cells.append("-" if r is None else pct(r["pass@1"]) + ci)
        per_split.append([m.name] + cells)
    summary = [["model", "tasks", "mean", "SD", "exp. SE", "SD/SE", "test p", "calls mutated"]]
    entries = []
    for m in models:
        entry, s = summarize_model(m, scores[m.name], splits)
        entries.append(entry)
        summary.append(summary_row(entry, s))
    instruments_ok = all(e.get("stable") for e in entries if e["kind"] in (REFERENCE, NULL))
    graded = [e for e in entries if e["kind"] == "synthetic"]
    unstable = [e["name"] for e in graded if not e.get("stable")]
    calibrated, rejected = calibrated_reading(entries)
    final = (f"every graded model stable: {'no' if unstable else 'yes'} ({len(graded) - len(unstable)} of "
             f"{len(graded)}" + (f"; not: {', '.join(unstable)}" if unstable else "") + ")"
             + ("" if instruments_ok else "; and the reference or null scored what it must not: see above"))
    text = "\n".join([
        *(["", f"each split's match to {a.base} (builder/match.py; KS: the numeric feature farthest from the "
                "release's)", *(f"{sp.name}: {match_line(sp.match)}" for sp in splits if sp.match)]
          if any(sp.match for sp in splits) else []),
        "", "pass@1 on each split [95% interval over its tasks, points]", table(per_split), "",
        f"across {len(splits)} splits (SD: standard deviation of pass@1 across splits; exp. SE: the standard error "
        "one split's task sample gives, sqrt(p(1-p)/T); test p: chi-square homogeneity of (passed, failed), "
        f"* a permutation p-value where an expected count is below {MIN_EXPECTED})",
        table(summary), "", *(e["verdict"] for e in entries), "", calibrated, final])
    data = {
        "settings": {"splits": len(splits), "n": a.n, "scenarios": a.scenario_list, "tier": a.tier, "seed": a.seed,
                     "rates": a.rate_list, "answers": a.answers, "created_at": a.created_at, "alpha": ALPHA,
                     "against": None if a.base is None else str(a.base)},
        "splits": [{"name": s.name, "folder": str(s.folder), "seed": s.seed, "tasks": len(s.tasks),
                    "by_scenario": dict(Counter(t.scenario for t in s.tasks)),
                    "content_hash": s.manifest.get("content_hash"), "match": s.match} for s in splits],
        "models": entries,
        "sd_rule_false_alarm": sd_rule_false_alarm(len(splits)),
        "instruments_ok": instruments_ok,
        "all_graded_stable": not unstable,
        "verdict": final,
        "holm_rejected": rejected,
        "calibrated": calibrated,
    }
    return text, data, instruments_ok and not unstable


# ------------------------------------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = Parser(prog="stability.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--splits", type=int, required=True, help=f"fresh splits to build and compare (2 to {MAX_SPLITS})")
    p.add_argument("--n", type=at_least_one, required=True, help="programs fuzzed per scenario in each split")
    p.add_argument("--scenarios", default="tensor,session,voice", help="comma-separated (default: all three)")
    p.add_argument("--tier", default="paper", help="paper (default) or frontier (session, tensor and voice)")
    p.add_argument("--seed", type=int, default=0,
                   help=f"split i is built with seed SEED*{SEED_STRIDE}+i (default 0)")
    p.add_argument("--rates", default=DEFAULT_RATES,
                   help=f"synthetic models' per-call mutation rates, comma-separated (default {DEFAULT_RATES}; "
                        "'' for none)")
    p.add_argument("--answers", nargs="+", default=[], metavar="FILE",
                   help="JSON-lines answer files ({task_id, code}, one line per task) to score too; '{split}' in a "
                        "path is replaced by each split's name (split-0, ...)")
    m = p.add_mutually_exclusive_group()
    m.add_argument("--matched", action="store_true",
                   help="build a release under --out first (seed SEED*1000+999) and draw every split from it as "
                        "users draw fresh splits: --fresh --against it, matched stratum by stratum")
    m.add_argument("--against", metavar="RELEASE",
                   help="a release folder already built (same --scenarios, --n and --tier) to draw the splits "
                        "fresh and matched against, as --matched does with its own")
    p.add_argument("--out", default="stability", help="where the splits, samples, scores and stability.json go")
    p.add_argument("--workers", type=at_least_one, help="sandbox workers for the builds and the scoring")
    p.add_argument("--created-at", help="date stamped on the splits' tasks, YYYY-MM-DD (default: the builder's)")
    return p.parse_args(argv)


def check(a: argparse.Namespace) -> list[Model]:
    """Validate the settings (InputError in one line) and return the panel."""
    from scenarios import scenario_names

    if not 2 <= a.splits <= MAX_SPLITS:
        raise InputError(f"--splits must be between 2 and {MAX_SPLITS} (stability is a comparison of splits), "
                         f"got {a.splits}")
    if a.seed < 0:
        raise InputError(f"--seed must be 0 or more, got {a.seed}")
    a.scenario_list = [s.strip() for s in a.scenarios.split(",") if s.strip()]
    unknown = [s for s in a.scenario_list if s not in scenario_names(examples=True)]
    if not a.scenario_list or unknown:
        raise InputError(f"unknown scenario(s) {', '.join(unknown) or '(none given)'}; choose from "
                         f"{', '.join(scenario_names(examples=True))}")
    if a.tier not in TIERS:
        raise InputError(f"--tier must be one of {', '.join(TIERS)}, got {a.tier!r}")
    try:
        a.rate_list = [float(r) for r in a.rates.split(",") if r.strip()]
    except ValueError:
        raise InputError(f"--rates: expected numbers between 0 and 1 separated by commas, got {a.rates!r}") from None
    if any(not 0 <= r <= 1 for r in a.rate_list) or len(set(a.rate_list)) != len(a.rate_list):
        raise InputError(f"--rates: each rate must be between 0 and 1, and given once, got {a.rates!r}")
    a.out = Path(a.out).expanduser().resolve()
    models = [Model(REFERENCE, REFERENCE), Model(NULL, NULL)]
    models += [Model(f"rate-{r:g}", "synthetic", rate=r) for r in a.rate_list]
    for path in a.answers:
        name = "".join(c if c.isalnum() or c in "._-" else "-" for c in Path(path).stem.replace("{split}", "split"))
        if name in {m.name for m in models}:
            name = f"{name}-{len(models)}"
        files = ([Path(path.replace("{split}", f"split-{i}")).expanduser() for i in range(a.splits)]
                 if "{split}" in path else [Path(path).expanduser()])
        if not any(f.exists() for f in files):
            raise InputError(f"--answers {path}: no such file" + (" for any split" if "{split}" in path else ""))
        for f in files:
            if f.exists():
                read_answers(f)  # a malformed line is told now, not after the builds
        models.append(Model(name, "answers", path=path))
    if a.created_at:
        import datetime as dt

        try:
            dt.date.fromisoformat(a.created_at)
        except ValueError:
            raise InputError(f"--created-at must be a date, YYYY-MM-DD, got {a.created_at!r}") from None
    a.base, a.base_seeds = None, []
    if a.matched:
        a.base, a.base_seeds = a.out / RELEASE, [release_seed(a.seed)]
    elif a.against:
        a.base = Path(a.against).expanduser().resolve()
        try:
            config = json.loads((a.base / "MANIFEST.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):
            raise InputError(f"--against {a.against}: not a dataset folder (no readable MANIFEST.json); build one "
                             "with python -m builder, or use --matched to have one built") from None
        a.base_seeds = sorted({int(config["seed"]), *(int(x) for x in config.get("avoid_seeds", []))})
        clash = sorted(set(a.base_seeds) & set(split_seeds(a.seed, a.splits)))
        if clash:
            raise InputError(f"--against {a.against} used seed {clash[0]}, which split "
                             f"{split_seeds(a.seed, a.splits).index(clash[0])} of --seed {a.seed} would use; give "
                             "another --seed")
    try:
        wanted_config(a, a.seed)  # what the builder would refuse (a tier a scenario lacks, ...)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return models


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    try:
        models = check(a)
    except InputError as exc:
        print(f"stability.py: error: {exc}", file=sys.stderr)
        return 2
    splits = [Split(f"split-{i}", a.out / f"split-{i}", seed) for i, seed in enumerate(split_seeds(a.seed, a.splits))]
    scores: dict[str, dict[str, dict]] = {m.name: {} for m in models}
    a.out.mkdir(parents=True, exist_ok=True)
    try:
        if a.matched:
            print(build_split(Split(RELEASE, a.base, release_seed(a.seed)), a, fresh=False), flush=True)
        for split in splits:
            print(build_split(split, a), flush=True)
        for split in splits:
            start = time.monotonic()
            done = []
            for m in models:
                r = score(m, split, a)
                if r is not None:
                    scores[m.name][split.name] = r
                    done.append(f"{m.name} {pct(r['pass@1'])}" + (" (reused)" if r["reused"] else ""))
            print(f"{split.name}: scored {len(done)} models on {len(split.tasks)} tasks in "
                  f"{time.monotonic() - start:.0f} s: " + ", ".join(done), flush=True)
    except RunError as exc:
        print(f"stability.py: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"stability.py: interrupted; run the same command again to go on (finished splits and scores under "
              f"{a.out} are reused)", file=sys.stderr)
        return INTERRUPTED
    text, data, passed = report(models, splits, scores, a)
    print(text)
    (a.out / "stability.json").write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {a.out / 'stability.json'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
