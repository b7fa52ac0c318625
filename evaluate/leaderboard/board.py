"""The board: from every validated submission, a static HTML page, a Markdown table and the data as JSON.

Submissions are grouped by dataset version (and content hash) and evaluation mode (code, tools, explore, tests):
each group has its own chart, table and ranks, so results on different versions, or of different modes, are never
ranked together. A tests-mode group ranks by pass@1 as that mode defines it (the share of tests that kill every
mutant of their task) and shows the mean mutation score beside it, and each sample's outcome instead of the
error mix. The page is one self-contained file (inline CSS,
inline SVG, a few lines of inline JavaScript for sorting): no CDN, nothing fetched. Every text that comes from a
submission is HTML-escaped, and a link is shown only when it is an http(s) URL.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from cards import LEADERBOARD_PAGE, template
from core.errors import writing
from core.statuses import EXECUTION_ERROR, NO_CODE, PASS, RESULT_ERROR, STATUSES, SYNTAX_ERROR, TIMEOUT
from evaluate.episodes import CODE, MODES, TESTS
from evaluate.intervals import rank_ranges
from evaluate.leaderboard.submission import DEFAULT_ROOT, SUBMISSIONS, SubmissionError, load_submission
from evaluate.leaderboard.validation import stamp_problem, validate
from evaluate.plots import COLORS
from evaluate.scoring import CI, with_intervals
from evaluate.tests_mode import OUTCOMES
from scenarios.base import NATURAL, VARIANTS

MARK_START, MARK_END = "<!-- leaderboard:start -->", "<!-- leaderboard:end -->"
PALETTE = ("#2a9d8f", "#e76f51", "#264653", "#e9c46a", "#8e6c8a", "#f4a261", "#4d908e", "#577590", "#bc4749",
           "#90be6d")
STATUS_LABELS = {PASS: "pass", SYNTAX_ERROR: "syntax", EXECUTION_ERROR: "execution", RESULT_ERROR: "result",
                 TIMEOUT: "timeout", NO_CODE: "no code"}
MISSING = "–"
# What a tests-mode group's rates are (`evaluate.tests_mode`)
TESTS_PASS = (" (in tests mode, the share of tests that kill every mutant of their task; the mutation score beside "
              "it: killed / the task's mutants, 0 for a test that fails on the correct world)")


@dataclass
class Entry:
    """One row of the board, taken from a validated submission's metadata and results.json summary."""

    folder: str
    name: str
    organisation: str | None
    parameters: str | None
    weights: str
    link: str | None
    model: str
    date: str
    version: str
    content_hash: str
    tasks: int
    n_samples: int
    pass1: float | None
    scenarios: dict[str, float | None]
    statuses: dict[str, int]
    rank: int = 0
    mode: str = CODE  # how the model was evaluated (evaluate's --mode)
    variant: str = NATURAL  # the instructions it was shown (evaluate's --variant)
    ci: list[float] | None = None  # pass@1's 95% interval over tasks (evaluate/intervals.py)
    scenario_ci: dict[str, list[float] | None] = field(default_factory=dict)
    ranks: tuple[int, int] | None = None  # the ranks pass@1's interval allows in its group (best, worst)
    # tests mode: the mean mutation score and its interval; `statuses` then counts each sample's outcome
    mutation_score: float | None = None
    mutation_ci: list[float] | None = None
    refine_on: str | None = None  # tests mode: the live world it refined its tests on (None: it did not refine)

    @classmethod
    def from_submission(cls, sub) -> "Entry":
        meta = sub.metadata
        tests = sub.mode == TESTS  # (a tests-mode summary has its intervals and counts outcomes, not statuses)
        summary = sub.results["summary"] if tests else with_intervals(sub.results)
        counted = OUTCOMES if tests else STATUSES
        link = meta.get("link")
        return cls(
            folder=sub.path.name, name=str(meta["name"]), organisation=meta.get("organisation"),
            parameters=None if meta.get("parameters") is None else str(meta["parameters"]),
            weights=str(meta.get("weights") or "unknown"),
            link=link if isinstance(link, str) and re.match(r"https?://", link) else None,
            model=str(meta.get("model", "")), date=str(meta.get("evaluation_date", sub.results["evaluated_at"][:10])),
            version=sub.version, content_hash=sub.content_hash, tasks=int(summary["overall"]["tasks"]),
            n_samples=int(sub.results["sampling"].get("n_samples", 1)), pass1=summary["overall"].get("pass@1"),
            scenarios={s: b.get("pass@1") for s, b in summary["scenarios"].items()},
            statuses={s: int(summary["overall"]["statuses"].get(s, 0)) for s in counted}, mode=sub.mode,
            variant=sub.variant,
            ci=(summary["overall"].get(CI) or {}).get("pass@1"),
            scenario_ci={s: (b.get(CI) or {}).get("pass@1") for s, b in summary["scenarios"].items()},
            mutation_score=summary["overall"].get("mutation_score") if tests else None,
            mutation_ci=(summary["overall"].get(CI) or {}).get("mutation_score") if tests else None,
            refine_on=sub.results.get("refine_on") if tests else None,
        )

    @property
    def rank_range(self) -> str:
        """The ranks its interval allows, `2–4`, or its one rank when the intervals leave no doubt."""
        if self.ranks is None:
            return MISSING
        best, worst = self.ranks
        return str(best) if best == worst else f"{best}–{worst}"


@dataclass
class Group:
    version: str
    content_hash: str
    entries: list[Entry]
    mode: str = CODE
    variant: str = NATURAL
    refine_on: str | None = None  # tests mode: the world its tests were refined on (None: not refined)

    @property
    def scenarios(self) -> list[str]:
        return sorted({s for e in self.entries for s in e.scenarios})

    @property
    def anchor(self) -> str:
        anchor = "v-" + re.sub(r"[^A-Za-z0-9_-]+", "-", self.version) + "-" + self.content_hash[:8]
        anchor = anchor if self.mode == CODE else f"{anchor}-{self.mode}"
        anchor = anchor if self.refine_on is None else f"{anchor}-refined-{self.refine_on}"
        return anchor if self.variant == NATURAL else f"{anchor}-{self.variant}"

    @property
    def title(self) -> str:
        """The group's heading: the dataset version, the mode unless it is the default code mode (and the world a
        tests-mode group refined on), and the instructions unless they are the default natural ones."""
        title = self.version if self.mode == CODE else f"{self.version}, {self.mode} mode"
        title = title if self.refine_on is None else f"{title}, refined on the {self.refine_on} world"
        return title if self.variant == NATURAL else f"{title}, {self.variant} instructions"


@dataclass
class BuildReport:
    groups: list[Group]
    skipped: dict[str, str] = field(default_factory=dict)  # submission folder -> why it is not on the board
    files: list[Path] = field(default_factory=list)


def parameter_count(text: str | None) -> float | None:
    """'7B' -> 7e9, '135M' -> 1.35e8, '1.2T' -> 1.2e12, '70000000' -> 7e7; anything else: None (sorts last)."""
    if not text:
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMbBtT]?)\s*(?:params?|parameters)?\s*", text)
    if not m:
        return None
    scale = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}[m[2].lower()]
    return float(m[1]) * scale


def version_key(version: str) -> tuple:
    """Newest first: v1.10.0 after v1.9.0; versions that are not numbers sort by name after the numbered ones."""
    nums = re.findall(r"\d+", version)
    return (1, tuple(int(n) for n in nums), version) if nums else (0, (), version)


def collect(root: str | Path = DEFAULT_ROOT, dataset: str | None = None, revalidate: bool = False,
            workers: int | None = None) -> BuildReport:
    """Entries of every submission under `root/submissions` that is validated and unchanged since."""
    folders = sorted(p for p in (Path(root) / SUBMISSIONS).glob("*") if p.is_dir())
    skipped: dict[str, str] = {}
    if revalidate:
        if not dataset:
            raise SubmissionError("--revalidate needs --dataset (the maintainers' dataset: a Hub id or a folder)")
        from core.sandbox.harness import Sandbox

        with Sandbox(workers) as sandbox:
            for folder in folders:
                report = validate(folder, dataset, sandbox=sandbox)
                if not report.ok:
                    skipped[folder.name] = report.format()
    entries = []
    for folder in folders:
        if folder.name in skipped:
            continue
        problem = stamp_problem(folder)
        if problem:
            skipped[folder.name] = f"{problem}; run python -m evaluate.leaderboard validate {folder}"
            continue
        try:
            entries.append(Entry.from_submission(load_submission(folder)))
        except (SubmissionError, KeyError, TypeError, ValueError) as exc:
            skipped[folder.name] = f"unreadable: {exc}"
    groups: dict[tuple[str, str, str, str, str | None], list[Entry]] = {}
    for e in entries:  # never ranked together: other releases, modes, instructions, or tests refined otherwise
        groups.setdefault((e.version, e.content_hash, e.mode, e.variant, e.refine_on), []).append(e)
    out = []
    order = {mode: i for i, mode in enumerate(reversed(MODES))}  # code first within a version
    wording = {variant: i for i, variant in enumerate(reversed(VARIANTS))}  # then natural, steps, vague
    refined = {None: 2, "correct": 1}  # tests without refinement first, then refined on the correct world
    for (version, digest, mode, variant, refine_on), members in sorted(
            groups.items(), key=lambda kv: (version_key(kv[0][0]), kv[0][1], order.get(kv[0][2], -1),
                                            wording.get(kv[0][3], -1), refined.get(kv[0][4], 0)), reverse=True):
        members.sort(key=lambda e: (-(e.pass1 if e.pass1 is not None else -1), e.name.lower(), e.date))
        for i, e in enumerate(members):  # competition ranking: equal pass@1, equal rank
            prev = members[i - 1] if i else None
            e.rank = prev.rank if prev and prev.pass1 == e.pass1 else i + 1
        scored = [e for e in members if e.pass1 is not None and e.ci]
        for e, ranks in zip(scored, rank_ranges([tuple(e.ci) for e in scored])):
            e.ranks = ranks
        out.append(Group(version, digest, members, mode, variant, refine_on))
    return BuildReport(out, skipped)


# ---------------------------------------------------------------------------------------------------- rendering

def pct(value: float | None) -> str:
    return MISSING if value is None else f"{100 * value:.1f}"


def pct_ci(value: float | None, ci: list[float] | None) -> str:
    """A rate in percent with its 95% interval: `83.3 [75.1, 89.2]`."""
    if value is None or not ci:
        return pct(value)
    return f"{100 * value:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _e(text) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def chart_svg(group: Group) -> str:
    """Grouped bars like the paper's figure: pass@1 per scenario (and overall), one bar per submission."""
    cats = ["overall", *group.scenarios]
    n = len(group.entries)
    bar = max(18, min(44, 160 // max(n, 1)))
    gap, pad = 4, 32
    plot_h, top, left, bottom = 200, 18, 44, 26
    group_w = n * bar + (n - 1) * gap
    width = left + len(cats) * (group_w + pad) + pad
    height = top + plot_h + bottom
    y = lambda v: top + plot_h * (1 - v / 100)  # noqa: E731
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="pass@1 per scenario, dataset {_e(group.version)}">']
    for tick in (0, 25, 50, 75, 100):
        parts.append(f'<line x1="{left}" x2="{width - pad / 2}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                     f'stroke="{"#9aa3b2" if tick == 0 else "#e3e7ee"}"/>')
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" font-size="11" '
                     f'fill="#5c6677">{tick}</text>')
    parts.append(f'<text x="12" y="{top + plot_h / 2}" font-size="11" fill="#5c6677" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + plot_h / 2})">pass@1 (%)</text>')
    for c, cat in enumerate(cats):
        x0 = left + pad + c * (group_w + pad)
        for i, e in enumerate(group.entries):
            value = e.pass1 if cat == "overall" else e.scenarios.get(cat)
            x = x0 + i * (bar + gap)
            color = PALETTE[i % len(PALETTE)]
            if value is None:
                continue
            v = 100 * value
            parts.append(f'<rect class="bar" x="{x}" y="{y(v):.1f}" width="{bar}" height="{plot_h * v / 100:.1f}" '
                         f'fill="{color}" data-model="{_e(e.name)}" data-scenario="{_e(cat)}" '
                         f'data-value="{v:.1f}"><title>{_e(e.name)}, {_e(cat)}: {v:.1f}%</title></rect>')
            parts.append(f'<text x="{x + bar / 2}" y="{y(v) - 3:.1f}" text-anchor="middle" font-size="9" '
                         f'fill="#1d2330">{v:.0f}</text>')
        parts.append(f'<text x="{x0 + group_w / 2}" y="{top + plot_h + 18}" text-anchor="middle" font-size="12" '
                     f'fill="#1d2330">{_e(cat)}</text>')
    parts.append("</svg>")
    legend = "".join(f'<span class="swatch" style="background:{PALETTE[i % len(PALETTE)]}"></span>{_e(e.name)}'
                     for i, e in enumerate(group.entries))
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def error_mix_svg(statuses: dict[str, int], width: int = 140, height: int = 12) -> str:
    total = sum(statuses.values()) or 1
    parts, x = [], 0.0
    title = ", ".join(f"{STATUS_LABELS[s]} {statuses[s]}" for s in STATUSES if statuses.get(s))
    for s in STATUSES:
        w = width * statuses.get(s, 0) / total
        if w > 0:
            parts.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" fill="{COLORS[s]}"/>')
        x += w
    return (f'<svg class="mix" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>'
            + "".join(parts) + "</svg>")


def outcomes_text(statuses: dict[str, int]) -> str:
    """A tests-mode entry's samples by outcome, `kills_all 9, partial 2`, those that happened only."""
    return ", ".join(f"{o} {statuses[o]}" for o in OUTCOMES if statuses.get(o)) or "none"


def table_html(group: Group) -> str:
    tests = group.mode == TESTS
    cols = [("rank", "#", "num", "ascending"), ("ranks", "Ranks", "text", None), ("model", "Model", "text", None),
            ("organisation", "Organisation", "text", None), ("parameters", "Params", "num", None),
            ("weights", "Weights", "text", None), ("pass1", "pass@1 (kills all)" if tests else "pass@1", "num", None)]
    if tests:
        cols.append(("mutation", "Mutation score", "num", None))
    cols += [(f"pass1-{s}", s, "num", None) for s in group.scenarios]
    cols += [("samples", "n", "num", None), ("errors", "Outcomes" if tests else "Error mix", None, None),
             ("version", "Dataset", "text", None), ("date", "Date", "text", "descending")]
    head = []
    for key, label, kind, first in cols:
        attrs = f' data-key="{key}"'
        if kind:
            attrs += f' data-type="{kind}"'
        if first:
            attrs += f' data-first="{first}"'
        if kind == "num":
            attrs += ' class="num"'
        head.append(f"<th{attrs}>{_e(label)}</th>")
    best = max((e.pass1 for e in group.entries if e.pass1 is not None), default=None)
    rows = []
    for order, e in enumerate(group.entries):
        name = f'<a href="{_e(e.link)}" rel="nofollow noopener">{_e(e.name)}</a>' if e.link else _e(e.name)
        params = parameter_count(e.parameters)

        def num(key: str, value, shown: str, extra: str = "") -> str:
            v = "" if value is None else repr(value)
            return f'<td class="num{extra}" data-key="{key}" data-value="{v}">{shown}</td>'

        cells = [
            num("rank", e.rank, str(e.rank)),
            f'<td data-key="ranks" data-value="{_e(e.rank_range)}" title="the ranks the 95% intervals allow">'
            f'{_e(e.rank_range)}</td>',
            f'<td data-key="model" data-value="{_e(e.name)}" title="{_e(e.model)}">{name}</td>',
            f'<td data-key="organisation" data-value="{_e(e.organisation or "")}">{_e(e.organisation or MISSING)}</td>',
            num("parameters", params, _e(e.parameters or MISSING)),
            f'<td data-key="weights" data-value="{_e(e.weights)}">{_e(e.weights)}</td>',
            num("pass1", e.pass1, pct_ci(e.pass1, e.ci), " best" if e.pass1 is not None and e.pass1 == best else ""),
        ]
        if tests:
            cells.append(num("mutation", e.mutation_score, pct_ci(e.mutation_score, e.mutation_ci)))
        cells += [num(f"pass1-{s}", e.scenarios.get(s), pct_ci(e.scenarios.get(s), e.scenario_ci.get(s)))
                  for s in group.scenarios]
        mix = _e(outcomes_text(e.statuses)) if tests else error_mix_svg(e.statuses)
        cells += [
            num("samples", e.n_samples, str(e.n_samples)),
            f'<td data-key="errors">{mix}</td>',
            f'<td data-key="version" data-value="{_e(e.version)}">{_e(e.version)}</td>',
            f'<td data-key="date" data-value="{_e(e.date)}">{_e(e.date)}</td>',
        ]
        rows.append(f'<tr data-order="{order}" data-folder="{_e(e.folder)}">' + "".join(cells) + "</tr>")
    legend = "Error mix:" + "".join(f'<span class="swatch" style="background:{COLORS[s]}"></span>{STATUS_LABELS[s]}'
                                   for s in STATUSES)
    if tests:
        legend = ("Outcomes: kills_all, every mutant of its task killed; partial, some; kills_none, none; "
                  "false_alarm, it failed on the correct world; no_code. Mutation score: killed / mutants, 0 for a "
                  "false alarm, the mean over tasks")
    # the table scrolls within its own box when it is wider than the page (many scenarios, a narrow window); the
    # box takes the keyboard focus so that it can be scrolled without a mouse
    return (f'<div class="table-scroll" tabindex="0" role="region" aria-label="Leaderboard on dataset '
            f'{_e(group.title)}">'
            f'<table class="board" data-version="{_e(group.version)}" data-content-hash="{_e(group.content_hash)}">'
            f"<thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            f'<div class="legend">{legend}</div>')


def render_html(report: BuildReport, generated: str) -> str:
    sections = []
    for g in report.groups:
        tasks = max(e.tasks for e in g.entries)
        sections.append(
            f'<section class="version" id="{g.anchor}" data-version="{_e(g.version)}">'
            f"<h2>Dataset {_e(g.title)}</h2>"
            f'<p class="meta">{tasks} tasks ({_e(", ".join(g.scenarios))}), content hash '
            f"<code>{_e(g.content_hash[:16])}</code>, {len(g.entries)} submission(s). Ranked within this version and "
            f"mode only. pass@1 with its 95% interval over tasks, [low, high]"
            f"{_e(TESTS_PASS) if g.mode == TESTS else ''}; Ranks: the places those intervals "
            f"allow (a model whose interval lies wholly above another's ranks above it)."
            f"</p><figure>{chart_svg(g)}<figcaption>pass@1 per scenario on dataset {_e(g.version)} (%)</figcaption>"
            f"</figure>{table_html(g)}</section>"
        )
    if not sections:
        sections.append('<p class="meta">No validated submission yet.</p>')
    return Template(template(LEADERBOARD_PAGE)).substitute(
        sections="\n".join(sections), count=sum(len(g.entries) for g in report.groups), generated=_e(generated),
    )


def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") if text not in (None, "") else MISSING


def render_markdown(report: BuildReport) -> str:
    """One table per dataset version, newest first: paste into the README or the dataset card."""
    if not report.groups:
        return "_No validated submission yet._\n"
    out = []
    for g in report.groups:
        tests = g.mode == TESTS  # pass@1: kills every mutant; the mutation score beside it; outcomes for errors
        out.append(f"**StateEval {_md(g.title)}** (content hash `{g.content_hash[:12]}`, "
                   f"{max(e.tasks for e in g.entries)} tasks): pass@1 in percent with its 95% interval over tasks"
                   + (TESTS_PASS if tests else "")
                   + ", ranked within this version and mode only; ranks: the places those intervals allow.\n")
        rates = ["pass@1", "mutation score"] if tests else ["pass@1"]
        head = ["#", "ranks", "model", "organisation", "params", "weights", *rates, *g.scenarios,
                "outcomes" if tests else "errors", "date"]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join("---:" if h in ("#", "ranks", *rates, *g.scenarios) else "---" for h in head) + "|")
        for e in g.entries:
            name = f"[{_md(e.name)}]({e.link})" if e.link else _md(e.name)
            errors = outcomes_text(e.statuses) if tests else \
                ", ".join(f"{STATUS_LABELS[s]} {e.statuses[s]}" for s in STATUSES[1:] if e.statuses[s]) or "none"
            cells = [str(e.rank), e.rank_range, name, _md(e.organisation), _md(e.parameters), _md(e.weights),
                     pct_ci(e.pass1, e.ci), *([pct_ci(e.mutation_score, e.mutation_ci)] if tests else []),
                     *[pct_ci(e.scenarios.get(s), e.scenario_ci.get(s)) for s in g.scenarios], errors, e.date]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def insert_markdown(path: Path, table: str) -> None:
    """Replace what lies between the leaderboard markers of a README or dataset card."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SubmissionError(f"cannot read --insert-into {path} ({exc.strerror}); pass a file that has "
                              f"{MARK_START} ... {MARK_END} markers to put the table between") from exc
    start, end = text.find(MARK_START), text.find(MARK_END)
    if start < 0 or end < start:
        raise SubmissionError(f"{path} has no {MARK_START} ... {MARK_END} markers to put the table between")
    with writing(path, "--insert-into"):
        path.write_text(text[: start + len(MARK_START)] + "\n" + table.rstrip("\n") + "\n" + text[end:])


def build(out: str | Path, root: str | Path = DEFAULT_ROOT, dataset: str | None = None, revalidate: bool = False,
          insert_into: list[str | Path] = (), workers: int | None = None) -> BuildReport:
    report = collect(root, dataset, revalidate, workers)
    out = Path(out)
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    markdown = render_markdown(report)
    files = {
        out / "index.html": render_html(report, generated),
        out / "leaderboard.md": markdown,
        out / "leaderboard.json": json.dumps({
            "generated": generated,
            "versions": [{"version": g.version, "content_hash": g.content_hash, "mode": g.mode,
                          "variant": g.variant, **({"refine_on": g.refine_on} if g.mode == TESTS else {}),
                          "entries": [e.__dict__ for e in g.entries]} for g in report.groups],
            "skipped": report.skipped,
        }, indent=2) + "\n",
    }
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text)
    report.files = list(files)
    for target in insert_into:
        insert_markdown(Path(target), markdown)
        report.files.append(Path(target))
    return report
