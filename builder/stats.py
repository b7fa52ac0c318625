"""The paper's Table I, computed on a build from the task records themselves.

Every structural number comes from data-flow analysis of the `reference_program` text (`ast`), not from the
`num_api_calls` / `path_depth` / `binding_count` fields the builder stored beside it: the card describes what a
user downloads, so it is measured on what a user downloads, and the test suite checks that the two agree.

* a *call* is a statement of the reference that assigns something other than `RESULT` (the builder emits one
  statement per API call; `if` headers and the RESULT sink are not calls);
* a *path* is the straight program, or the prefix plus one branch of the if/else;
* *path depth* is the longest chain of data-dependent calls on any path: a call is one deeper than the deepest
  call that produced a variable it reads;
* *binding count* is the number of variables some call produces and some call reads (one call's output linked to
  another's input);
* *pair coverage* (the paper's adjacent-transition coverage, RQ1) is the share of the scenario's `|APIs|^2`
  ordered (producer API, consumer API) pairs that occur along a data-flow edge of some reference;
* instruction and code lengths are counted in cl100k_base tokens (the `bpe-openai` package: offline, exact).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from statistics import mean

from evaluate.data import TaskRecord
from evaluate.models.tokens import count as count_tokens  # cl100k_base, as the paper's Table I counts

RESULT = "RESULT"


# ------------------------------------------------------------------------------------------ data flow


@dataclass
class CallSite:
    """One call statement of a reference program."""

    index: int  # position among the program's calls, in text order (matches the record's `api_calls`)
    node: ast.stmt
    outputs: list[str]  # names it assigns
    reads: set[str]  # names it loads (modules, functions and setup variables included; only produced ones matter)


@dataclass
class Flow:
    """The data flow of one reference program."""

    calls: list[CallSite]
    paths: list[list[int]]  # call indexes on each path through the program

    def edges(self, path: list[int]) -> list[tuple[int, int]]:
        """(producer call, consumer call) for every variable a call on `path` reads from an earlier call on it."""
        out, made = [], {}
        for i in path:
            c = self.calls[i]
            out += [(made[v], i) for v in sorted(c.reads) if v in made]
            for v in c.outputs:
                made[v] = i
        return out

    def path_depth(self) -> int:
        best = 0
        for path in self.paths:
            depth: dict[str, int] = {}
            for i in path:
                c = self.calls[i]
                d = 1 + max((depth[v] for v in c.reads if v in depth), default=0)
                for v in c.outputs:
                    depth[v] = d
                best = max(best, d)
        return best

    def binding_count(self) -> int:
        produced = {v for c in self.calls for v in c.outputs}
        read = set().union(*(c.reads for c in self.calls)) if self.calls else set()
        return len(produced & read)

    def api_pairs(self, api_calls: list[str]) -> set[tuple[str, str]]:
        """Distinct (producer API, consumer API) pairs along data-flow edges, naming calls by the record's list."""
        if len(api_calls) != len(self.calls):
            raise ValueError(f"the reference has {len(self.calls)} calls but api_calls lists {len(api_calls)}")
        return {(api_calls[a], api_calls[b]) for path in self.paths for a, b in self.edges(path)}


def _targets(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _is_call(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return _targets(node) != [RESULT]
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)  # a call whose value is dropped


def analyse(reference: str) -> Flow:
    """Parse a reference program into its call sites and paths (if/else at any depth, each branch a path)."""
    calls: list[CallSite] = []

    def block(stmts: list[ast.stmt], paths: list[list[int]]) -> list[list[int]]:
        for node in stmts:
            if isinstance(node, ast.If):
                paths = [p + q for p in paths for q in block(node.body, [[]]) + block(node.orelse, [[]])]
            elif _is_call(node):
                reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                outputs = _targets(node) if not isinstance(node, ast.Expr) else []
                calls.append(CallSite(len(calls), node, outputs, reads))
                paths = [p + [calls[-1].index] for p in paths]
        return paths

    paths = block(ast.parse(reference).body, [[]])
    return Flow(calls, paths)


# -------------------------------------------------------------------------------------------- Table I


METRICS = ("instruction_tokens", "code_tokens", "api_calls", "path_depth", "binding_count")
LABELS = {
    "instruction_tokens": "instruction tokens",
    "code_tokens": "code tokens",
    "api_calls": "API calls",
    "path_depth": "path depth",
    "binding_count": "bindings",
}


def task_stats(task: TaskRecord, flow: Flow | None = None) -> dict:
    flow = flow or analyse(task.reference_program)
    return {
        "instruction_tokens": count_tokens(task.instruction),
        "code_tokens": count_tokens(task.reference_program),
        "api_calls": len(flow.calls),
        "path_depth": flow.path_depth(),
        "binding_count": flow.binding_count(),
        "has_branch": len(flow.paths) > 1,
    }


def _summary(values: list[int]) -> dict:
    return {"mean": round(mean(values), 2), "min": min(values), "max": max(values)} if values else \
        {"mean": 0.0, "min": 0, "max": 0}


def _num_apis(scenario: str) -> int | None:
    try:
        from scenarios import get_scenario

        return len(get_scenario(scenario).apis)
    except (ImportError, KeyError, ValueError):
        return None


def _row(stats: list[dict], pairs: int, space: int | None) -> dict:
    row = {"tasks": len(stats), **{m: _summary([s[m] for s in stats]) for m in METRICS}}
    row["with_branch"] = sum(s["has_branch"] for s in stats)
    row["branch_share"] = round(row["with_branch"] / len(stats), 3) if stats else 0.0
    row["pairs"], row["pair_space"] = pairs, space
    row["pair_coverage"] = round(pairs / space, 3) if space else None
    return row


def table1(tasks: list[TaskRecord]) -> dict:
    """{scenario: row, ..., "all": row}; a row has tasks, mean/min/max per metric, branch share, pair coverage."""
    by: dict[str, list[TaskRecord]] = {}
    for t in tasks:
        by.setdefault(t.scenario, []).append(t)
    rows, everything, pooled_pairs, pooled_space = {}, [], 0, 0
    for scenario, ts in by.items():
        stats, pairs = [], set()
        for t in ts:
            flow = analyse(t.reference_program)
            stats.append(task_stats(t, flow))
            pairs |= flow.api_pairs(list(t.api_calls))
        n_apis = _num_apis(scenario)
        rows[scenario] = _row(stats, len(pairs), n_apis * n_apis if n_apis else None)
        everything += stats
        pooled_pairs += len(pairs)
        pooled_space += rows[scenario]["pair_space"] or 0
    rows["all"] = _row(everything, pooled_pairs, pooled_space)
    return rows


def format_table(rows: dict) -> str:
    """Markdown: one row per scenario plus `all`; each metric as mean (min-max)."""
    head = ["scenario", "tasks", *(f"{LABELS[m]} mean (min–max)" for m in METRICS), "with branch", "pair coverage"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in rows.items():
        cells = [f"**{name}**" if name == "all" else name, str(r["tasks"])]
        cells += [f"{r[m]['mean']:.2f} ({r[m]['min']}–{r[m]['max']})" for m in METRICS]
        cells.append(f"{r['with_branch']} ({100 * r['branch_share']:.0f}%)")
        cells.append("–" if r["pair_coverage"] is None else
                     f"{r['pair_coverage']:.3f} ({r['pairs']}/{r['pair_space']})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
