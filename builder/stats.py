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

On the frontier tier (`--tier frontier`, `builder/frontier.py`) a program loops, pages and retries, so its text
holds call sites, not calls: *API calls* are the calls the reference made on the original test case (its stored
trace, `api_calls`), path depth and bindings are the record's own (the builder's declaration of which answer
values each request reads: a session's id, version and data count apart, and the paging cursor counts once), and
a pair is two calls made one after the other on the original test case.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from core.records import TaskRecord
from core.backends.tokens import count as count_tokens  # cl100k_base, as the paper's Table I counts

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


def is_call(node: ast.stmt) -> bool:
    """A call statement: it assigns something other than RESULT, or it is a call whose value is dropped."""
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
            elif is_call(node):
                reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                # what it assigns, a name it binds inside the call (`f(name=(entity3 := 'apple_12'))`) included
                outputs = _targets(node) if not isinstance(node, ast.Expr) else []
                outputs += [n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)]
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


def task_stats(task: TaskRecord, flow: Flow | None = None, frontier: bool = False) -> dict:
    if frontier:  # see the module docstring
        return {"instruction_tokens": count_tokens(task.instruction),
                "code_tokens": count_tokens(task.reference_program), "api_calls": len(task.api_calls),
                "path_depth": task.path_depth, "binding_count": task.binding_count, "has_branch": False}
    flow = flow or analyse(task.reference_program)
    return {
        "instruction_tokens": count_tokens(task.instruction),
        "code_tokens": count_tokens(task.reference_program),
        "api_calls": len(flow.calls),
        "path_depth": flow.path_depth(),
        "binding_count": flow.binding_count(),
        "has_branch": len(flow.paths) > 1,
    }


def exact_mean(total: int, count: int) -> int | float:
    """The mean of `count` integers summing to `total`, as `statistics.mean` gives it (an int when exact), so a
    running sum reports what the mean of the whole list did."""
    whole, rest = divmod(total, count)
    return whole if rest == 0 else total / count


@dataclass
class Summary:
    """Count, sum, minimum and maximum of integers, added one at a time: a mean/min/max without the list."""

    count: int = 0
    total: int = 0
    low: int = 0
    high: int = 0

    def add(self, value: int) -> None:
        self.low = value if not self.count else min(self.low, value)
        self.high = value if not self.count else max(self.high, value)
        self.count += 1
        self.total += value

    def merge(self, other: "Summary") -> None:
        if other.count:
            self.low = other.low if not self.count else min(self.low, other.low)
            self.high = other.high if not self.count else max(self.high, other.high)
            self.count += other.count
            self.total += other.total

    def row(self) -> dict:
        if not self.count:
            return {"mean": 0.0, "min": 0, "max": 0}
        return {"mean": round(exact_mean(self.total, self.count), 2), "min": self.low, "max": self.high}


def _num_apis(scenario: str) -> int | None:
    try:
        from scenarios import get_scenario

        return len(get_scenario(scenario).apis)
    except (ImportError, KeyError, ValueError):
        return None


@dataclass
class Rows:
    """One row of Table I, accumulated task by task."""

    metrics: dict[str, Summary] = field(default_factory=lambda: {m: Summary() for m in METRICS})
    with_branch: int = 0

    @property
    def tasks(self) -> int:
        return self.metrics[METRICS[0]].count

    def add(self, stats: dict) -> None:
        for m in METRICS:
            self.metrics[m].add(stats[m])
        self.with_branch += stats["has_branch"]

    def merge(self, other: "Rows") -> None:
        for m in METRICS:
            self.metrics[m].merge(other.metrics[m])
        self.with_branch += other.with_branch

    def row(self, pairs: int, space: int | None) -> dict:
        row = {"tasks": self.tasks, **{m: self.metrics[m].row() for m in METRICS}}
        row["with_branch"] = self.with_branch
        row["branch_share"] = round(self.with_branch / self.tasks, 3) if self.tasks else 0.0
        row["pairs"], row["pair_space"] = pairs, space
        row["pair_coverage"] = round(pairs / space, 3) if space else None
        return row


@dataclass
class Table1:
    """Table I over a stream of tasks: per scenario, running sums, minima and maxima and the set of API pairs seen
    (at most |APIs|^2), never the tasks themselves, so a build of any size holds the same few numbers."""

    rows: dict[str, Rows] = field(default_factory=dict)
    pairs: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    frontier: set[str] = field(default_factory=set)  # scenarios whose tasks are frontier programs: no pair space

    def add(self, task: TaskRecord, frontier: bool = False) -> None:
        if frontier:
            self.frontier.add(task.scenario)
            self.rows.setdefault(task.scenario, Rows()).add(task_stats(task, frontier=True))
            self.pairs.setdefault(task.scenario, set()).update(zip(task.api_calls, task.api_calls[1:]))
            return
        flow = analyse(task.reference_program)
        self.rows.setdefault(task.scenario, Rows()).add(task_stats(task, flow))
        self.pairs.setdefault(task.scenario, set()).update(flow.api_pairs(list(task.api_calls)))

    def table(self) -> dict:
        """{scenario: row, ..., "all": row}, scenarios in the order their first task came."""
        out, everything, pooled_pairs, pooled_space = {}, Rows(), 0, 0
        for scenario, rows in self.rows.items():
            n_apis = None if scenario in self.frontier else _num_apis(scenario)
            out[scenario] = rows.row(len(self.pairs[scenario]), n_apis * n_apis if n_apis else None)
            everything.merge(rows)
            pooled_pairs += len(self.pairs[scenario])
            pooled_space += out[scenario]["pair_space"] or 0
        out["all"] = everything.row(pooled_pairs, pooled_space)
        return out

    def to_state(self) -> dict:
        """Plain JSON, for a build's checkpoint."""
        return {s: {"metrics": {m: list(vars(v).values()) for m, v in r.metrics.items()},
                    "with_branch": r.with_branch, "pairs": sorted(self.pairs[s]),
                    **({"frontier": True} if s in self.frontier else {})}
                for s, r in self.rows.items()}

    @classmethod
    def from_state(cls, state: dict) -> "Table1":
        acc = cls()
        for s, r in state.items():
            acc.rows[s] = Rows({m: Summary(*v) for m, v in r["metrics"].items()}, r["with_branch"])
            acc.pairs[s] = {tuple(p) for p in r["pairs"]}
            if r.get("frontier"):
                acc.frontier.add(s)
        return acc


def table1(tasks: list[TaskRecord], frontier: bool = False) -> dict:
    """{scenario: row, ..., "all": row}; a row has tasks, mean/min/max per metric, branch share, pair coverage."""
    acc = Table1()
    for t in tasks:
        acc.add(t, frontier)
    return acc.table()


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
