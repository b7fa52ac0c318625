"""python -m evaluate.report: several runs side by side, as a Markdown table (and, with --plot, a figure).

Scores are only comparable on the same tasks asked the same way, so the runs must share the dataset's content hash,
the instruction variant, the evaluation mode and the difficulty tier; any difference is refused in one line unless --force is given
(the table then shows the columns that differ, and nothing is ranked). The documentation shown (`--doc spec` or
`enriched`) may differ: comparing the two on the same tasks is what measures what a documentation's gaps cost.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from core.arguments import Parser
from core.backends import COUNTED_BY_CL100K
from core.errors import CannotWrite, writing
from evaluate.diagnosis import format_causes, format_metric
from evaluate.intervals import compare, format_rate
from evaluate.scoring import CI, reported_ks, task_counts, with_intervals

EXAMPLES = """\
Examples:
  python -m evaluate --model reference --dataset stateeval --out results
  python -m evaluate --samples answers.jsonl --dataset stateeval --out results
  python -m evaluate.report results/reference/local results/answers/local/results.json
  python -m evaluate.report results/*/local/results.json --plot figures --out comparison.md
  python -m evaluate.report --by operation results/answers/local     # where its samples went wrong, by operation
  python -m evaluate.report RUN/results.json RUN/results_enriched.json  # what the documentation's gaps cost (--doc)

Each RESULTS is a results.json written by python -m evaluate (or a kept run, <run folder>/runs/<id>.json), or the
run folder holding it. Columns: the model, the run's id, the variant (and the documentation, when the run was shown
the enriched one: --doc), the dataset's content hash, the samples per
task (n), the tasks scored, pass@1 and success@1 (the program ran on every test case, right or not), pass@k for
every k all runs report, arg_match (the share of the reference's calls made with the right API and arguments, a
mean over samples) and the three most common causes of failure, the tokens the run's replies cost (~: a
cl100k_base estimate, for the reference and --samples), its cost in USD when it was scored with
--price-in/--price-out, and pass@1 per scenario. Every rate carries its 95% interval over tasks, [low, high]
(computed from the samples for a run written before results.json had intervals). A run written before a column
existed shows '-' there.

Below the table, every pair of runs is compared on the tasks both scored: the difference in pass@1 (B - A, the
later row against the earlier), the p-value of "no difference" and the paired 95% interval of the same test, which
excludes 0 exactly when p < 0.05 (McNemar's exact test and Fay and Lumbard's interval when every task's
difference is -100, 0 or +100 points, as with one sample per task; a sign-flip test and its inversion otherwise:
docs/scores.md); p < 0.05 is marked significant. Two runs whose
intervals overlap can still differ significantly: the pairing removes what the tasks share.
"""

# What must be equal for two runs' scores to be put side by side: (label, how to read it from a results.json).
MUST_MATCH = (
    ("dataset content hash", lambda r: (r.get("dataset") or {}).get("content_hash")),
    ("variant", lambda r: r.get("variant")),
    ("mode", lambda r: r.get("mode", "code")),  # code, tools or explore (a report from before modes: code)
    ("difficulty tier", lambda r: ((r.get("dataset") or {}).get("difficulty") or {}).get("tier")),
)


class ReportError(ValueError):
    """A results file that cannot be read, or runs that must not be compared; the message is one line."""


@dataclass
class Run:
    path: Path
    data: dict

    @property
    def label(self) -> str:
        return str(self.data.get("model") or self.path.stem)

    @cached_property
    def summary(self) -> dict:
        """Its summary with intervals (computed from its samples for a run written before they existed)."""
        return with_intervals(self.data)


def load_run(path: str | Path) -> Run:
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file (pass a results.json, or the run folder that holds one)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a readable results.json ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict) \
            or "overall" not in data["summary"]:
        raise ReportError(f"{path}: not a results.json written by python -m evaluate (it has no summary)")
    if data.get("mode") == "tests":
        raise ReportError(f"{path}: a tests-mode run (model-written tests, scored by mutation score), which this "
                          "comparison of programs' pass rates does not take; its table is the one python -m evaluate "
                          "printed, and its numbers are in that file")
    return Run(path, data)


def mismatch(runs: list[Run]) -> str | None:
    """The first setting the runs do not share, as one line naming each run's value; None when they all match."""
    for name, read in MUST_MATCH:
        values = [read(r.data) for r in runs]
        if len(set(map(str, values))) > 1:
            each = ", ".join(f"{r.path}: {v}" for r, v in zip(runs, values))
            return (f"the runs differ in {name} ({each}); scores of different datasets, variants, modes or tiers are "
                    "never ranked together (pass --force to show them side by side anyway)")
    return None


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _rate(block: dict | None, key: str) -> str:
    """A rate with its 95% interval, as the printed table shows it."""
    block = block or {}
    return format_rate(block.get(key), (block.get(CI) or {}).get(key))


def _tokens(usage: dict | None) -> str:
    if not usage:
        return "-"
    o = usage["overall"]
    text = f"{o['total_tokens']:,}"
    if usage.get("counted_by") == COUNTED_BY_CL100K:
        text = "~" + text
    if o["counted"] < o["samples"]:
        text += f" ({o['counted']}/{o['samples']} samples)"
    return text


def _cost(usage: dict | None) -> str:
    cost = ((usage or {}).get("overall") or {}).get("cost_usd")
    return "-" if cost is None else f"${cost:.4f}"


def scenarios_of(runs: list[Run]) -> list[str]:
    return sorted({s for r in runs for s in r.data["summary"].get("scenarios", {})})


def render_markdown(runs: list[Run], forced: bool = False) -> str:
    shared_ks = sorted(set.intersection(*(set(reported_ks(r.data["summary"])) for r in runs)) - {1})
    scenarios = scenarios_of(runs)
    head = ["model", "run", "variant", "dataset", "n", "tasks", "pass@1", "success@1",
            *[f"pass@{k}" for k in shared_ks], "arg_match", "top causes", "tokens", "cost",
            *[f"{s} pass@1" for s in scenarios]]
    rows = []
    for r in runs:
        d, summary = r.data, r.summary
        overall = summary["overall"]
        rows.append([
            r.label, str(d.get("run") or r.path.stem),
            str(d.get("variant") or "-") + ("" if d.get("doc", "spec") == "spec" else f", {d['doc']} doc"),
            str((d.get("dataset") or {}).get("content_hash") or "-")[:12],
            str((d.get("sampling") or {}).get("n_samples", "-")), str(overall.get("tasks", "-")),
            _rate(overall, "pass@1"), _rate(overall, "success@1"),
            *[_rate(overall, f"pass@{k}") for k in shared_ks],
            format_metric((overall.get("diagnosis") or {}).get("arg_match")),
            format_causes(overall.get("diagnosis")) if "diagnosis" in overall else "-",
            _tokens(d.get("usage")), _cost(d.get("usage")),
            *[_rate(summary.get("scenarios", {}).get(s), "pass@1") for s in scenarios],
        ])
    first = runs[0].data
    tier = ((first.get("dataset") or {}).get("difficulty") or {}).get("tier")
    if forced and mismatch(runs):
        intro = ("Runs on different datasets, variants, modes or tiers (--force): shown side by side, not "
                 "comparable.")
    else:
        intro = (f"Dataset {(first.get('dataset') or {}).get('content_hash') or '?'}, variant "
                 f"{first.get('variant') or '?'}, mode {first.get('mode', 'code')}, tier {tier or '?'}.")
    numeric = {"n", "tasks", "arg_match", "tokens", "cost"} | {h for h in head if "@" in h}
    lines = [f"# StateEval: {len(runs)} runs compared", "", intro, "",
             "| " + " | ".join(head) + " |",
             "|" + "|".join("---:" if h in numeric else "---" for h in head) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    lines += ["", "Rates in percent with their 95% interval over tasks, [low, high]: "
              f"{runs[0].summary['interval']['about']}."]
    if len(runs) > 1 and not (forced and mismatch(runs)):
        lines += ["", *paired_table(runs)]
    return "\n".join(lines) + "\n"


def paired_table(runs: list[Run]) -> list[str]:
    """Every pair of runs (each later row against each earlier one): the difference in pass@1 on the tasks both
    scored, its paired 95% interval and p-value (evaluate/intervals.py), and whether it is significant."""
    labels = _unique_labels(runs)
    counts = [task_counts(r.data.get("samples") or []) for r in runs]
    lines = ["## Paired differences in pass@1", "",
             "Each pair on the tasks both runs scored: B - A, the p-value of \"no difference\", and the paired 95% "
             "interval built on the same test, so that it excludes 0 exactly when p < 0.05. mcnemar exact: "
             "every task's difference is -100, 0 or +100 points (as with one sample per task), McNemar's exact test "
             "and the interval of Fay and Lumbard (2021); sign-flip: the sign-flip test of the per-task differences "
             "and its inversion (Hartigan, 1969; '-' when the differences do not vary). Significant: p < 0.05, for "
             "that pair alone (not corrected for the number of pairs).", "",
             "| A | B | tasks | A pass@1 | B pass@1 | B - A | 95% interval | p | test | significant |",
             "|---|---|---:|---:|---:|---:|---|---:|---|---|"]
    for j in range(len(runs)):
        for i in range(j):
            if not counts[i] or not counts[j]:
                lines.append(f"| {labels[i]} | {labels[j]} | - | - | - | - | - | - | a run has no samples | - |")
                continue
            c = compare(counts[i], counts[j])
            p = "< 0.001" if c.p < 0.001 else f"{c.p:.3f}"
            interval = "-" if c.low is None else f"[{100 * c.low:+.1f}, {100 * c.high:+.1f}]"
            lines.append(f"| {labels[i]} | {labels[j]} | {c.tasks} | {_pct(c.a)} | {_pct(c.b)} | "
                         f"{100 * c.difference:+.1f} | {interval} | {p} | {c.test} | "
                         f"{'**yes**' if c.significant else 'no'} |")
    return lines


def plot(runs: list[Run], folder: Path) -> Path:
    from evaluate.plots import comparison_figure, pyplot

    plt = pyplot()
    scenarios = scenarios_of(runs)
    groups = scenarios + (["overall"] if len(scenarios) > 1 else [])
    labels = _unique_labels(runs)
    values = []
    for r in runs:
        summary = r.data["summary"]
        blocks = {**summary.get("scenarios", {}), "overall": summary["overall"]}
        values.append([(blocks.get(g) or {}).get("pass@1") for g in groups])
    fig = comparison_figure(plt, labels, groups, values)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pass_at_1_by_run.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _unique_labels(runs: list[Run]) -> list[str]:
    """Model names, with the run's id added where two runs share one."""
    names = [r.label for r in runs]
    return [n if names.count(n) == 1 else f"{n} ({r.data.get('run') or r.path.stem})" for n, r in zip(names, runs)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = Parser(
        prog="python -m evaluate.report",
        description=(
            "Compare several runs of python -m evaluate side by side: a Markdown table on stdout (model, variant, "
            "dataset hash, pass@1, success@1, pass@k for the k every run reports, arg_match, the top causes of "
            "failure, tokens, cost, pass@1 per scenario), every rate with its 95% interval, then the paired "
            "difference in pass@1 of every two runs with its interval and p-value; with --plot, a grouped bar "
            "figure of pass@1 per scenario. Runs on different dataset content, instruction variants, evaluation "
            "modes or difficulty tiers are refused: their scores are not comparable."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="results.json files (or the run folders holding them), in the order of the table's rows")
    p.add_argument("--plot", metavar="DIR", default=None,
                   help="also write DIR/pass_at_1_by_run.png (needs matplotlib: pip install 'stateeval[plot]')")
    p.add_argument("--out", metavar="FILE", default=None, help="also write the Markdown table to FILE")
    p.add_argument("--force", action="store_true",
                   help="show runs on different dataset hashes, variants, modes or tiers side by side (never ranked)")
    p.add_argument("--by", choices=("run", "operation"), default="run",
                   help="run (default): the runs side by side; operation: for each run, every operation its tasks "
                        "call, with the share of the samples that should have called it that went wrong there, "
                        "their top causes and a first divergence (reads the dataset the run scored)")
    p.add_argument("--dataset", default=None,
                   help="with --by operation: the dataset folder or Hub repo the runs scored, when it is no longer "
                        "where the run says (its content hash must be the run's)")
    p.add_argument("--json", metavar="FILE", default=None,
                   help="with --by operation: also write the rows as JSON to FILE")
    return p.parse_args(argv)


def operation_report(runs: list[Run], dataset: str | None) -> tuple[str, dict]:
    """The Markdown of `--by operation` for every run, and the same rows as plain data keyed by run."""
    from core.records import DatasetError, load_tasks
    from evaluate.by_operation import by_operation, render_markdown

    texts, plain, loaded = [], {}, {}
    for run, label in zip(runs, _unique_labels(runs)):
        meta = run.data.get("dataset") or {}
        source = dataset or meta.get("source")
        if not source:
            raise ReportError(f"{run.path}: the run does not say which dataset it scored; pass --dataset")
        if source not in loaded:
            try:
                loaded[source] = load_tasks(source, revision=None if dataset else meta.get("revision"))
            except DatasetError as exc:
                raise ReportError(str(exc)) from None
        tasks, manifest = loaded[source]
        if meta.get("content_hash") and manifest.get("content_hash") != meta["content_hash"]:
            raise ReportError(f"{source} is not the dataset {run.path} scored (content hash "
                              f"{str(manifest.get('content_hash'))[:12]}, the run's {meta['content_hash'][:12]}); "
                              "pass that dataset with --dataset")
        try:
            rows = by_operation(run.data.get("samples") or [], {t.task_id: t for t in tasks})
        except ValueError as exc:
            raise ReportError(f"{run.path}: {exc}") from None
        texts.append(render_markdown(rows, label))
        plain[label] = [r.to_plain() for r in rows]
    return "\n".join(texts), plain


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    from core.backends import BackendError

    try:
        runs = [load_run(p) for p in a.results]
        if a.by == "operation":
            text, rows = operation_report(runs, a.dataset)
            if a.json:
                with writing(a.json, "--json"):
                    Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
                print(f"wrote {a.json}", file=sys.stderr)
        else:
            problem = mismatch(runs)
            if problem and not a.force:
                raise ReportError(problem)
            text = render_markdown(runs, forced=a.force)
        with writing(a.plot or ".", "--plot"):
            figure = plot(runs, Path(a.plot)) if a.plot else None
    except (ReportError, BackendError, CannotWrite) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    sys.stdout.flush()  # the table first, then the lines on stderr saying what was written
    status = 0
    if a.out:
        try:
            with writing(a.out):
                Path(a.out).write_text(text)
            print(f"wrote {a.out}", file=sys.stderr)
        except CannotWrite as exc:  # the table is printed above all the same
            print(f"error: {exc}", file=sys.stderr)
            status = 2
    if figure:
        print(f"wrote {figure}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
