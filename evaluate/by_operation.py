"""Where a run's samples went wrong, by operation: the view the owner of an API reads (`python -m evaluate.report
--by operation RUN`).

Every API a task's reference calls (a REST operation, an MCP or tensor tool, a session call) is an *operation*. A
sample *should call* each operation its task's reference calls on any test case. A failed sample is *wrong at* the
operation of its first divergence from the reference (`evaluate.diagnosis.first_divergence`): the call the
reference made there, or, where the sample made a call past the reference's last, the call it made. Failures that
no call explains get rows of their own: the program was never run as calls (no code, a syntax error, a timeout:
`(no calls)`), or made every call as the reference did and still failed (`(RESULT)`: the answer was built wrong),
or has no reference trace to compare with (`(unexplained)`).

Each operation's failure rate is wrong-at / should-call, with its 95% Wilson interval over those samples; its top
causes are those of the samples wrong at it (`evaluate.diagnosis.CAUSES`); its example is the first such sample's
divergence (task, test case, the expected call and the call made).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from core.records import TaskRecord
from core.statuses import NO_CODE, PASS
from evaluate.intervals import wilson
from scenarios.trace import load_stored

NO_CALLS, IN_RESULT, UNEXPLAINED = "(no calls)", "(RESULT)", "(unexplained)"
NOT_CALLS = frozenset({NO_CODE, "syntax", "timeout"})  # causes that happen before or outside any call


@dataclass
class OperationRow:
    operation: str
    should_call: int = 0  # samples whose task's reference calls it
    wrong_at: int = 0  # failed samples whose first divergence is at it
    causes: Counter = field(default_factory=Counter)
    example: dict | None = None  # the first such sample's divergence

    @property
    def rate(self) -> float | None:
        return self.wrong_at / self.should_call if self.should_call else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.wrong_at, self.should_call) if self.should_call else None

    def to_plain(self) -> dict:
        plain = asdict(self)
        plain.update(causes=dict(self.causes.most_common()), failure_rate=self.rate,
                     interval=list(self.interval) if self.interval else None)
        return plain


def reference_operations(task: TaskRecord) -> list[str]:
    """The APIs the task's reference calls on any of its test cases, in the order first called."""
    seen: dict[str, None] = {}
    for case in task.test_cases:
        for call in load_stored(case.trace) or []:
            seen.setdefault(str(call.get("api")), None)
    return list(seen)


def _named(text: str | None, operations: list[str]) -> str | None:
    """The operation a rendered call (`api(arg=...)`, `evaluate.diagnosis.render`) is a call of."""
    if not text:
        return None
    known = [op for op in operations if text.startswith(op + "(")]
    return max(known, key=len) if known else text.partition("(")[0]


def wrong_at(sample: dict, operations: list[str]) -> str | None:
    """The operation (or one of the rows for failures no call explains) a failed sample is charged to; None for a
    passing sample."""
    if sample.get("status") == PASS:
        return None
    diagnosis = sample.get("diagnosis") or {}
    cause = diagnosis.get("cause")
    if cause in NOT_CALLS:
        return NO_CALLS
    divergence = diagnosis.get("first_divergence")
    if not divergence:
        return IN_RESULT if cause not in (None, "unexplained") else UNEXPLAINED
    return _named(divergence.get("expected"), operations) or _named(divergence.get("got"), operations) or UNEXPLAINED


def by_operation(samples: list[dict], tasks: dict[str, TaskRecord]) -> list[OperationRow]:
    """One row per operation the run's tasks call, then the rows no call explains (those with failures only);
    operations by failure rate, highest first."""
    rows: dict[str, OperationRow] = {}
    missing = sorted({s["task_id"] for s in samples} - set(tasks))
    if missing:
        raise ValueError(f"the dataset has no task {missing[0]} of this run ({len(missing)} missing): pass the dataset "
                       "the run scored")
    called = {task_id: reference_operations(tasks[task_id]) for task_id in {s["task_id"] for s in samples}}
    for sample in samples:
        operations = called[sample["task_id"]]
        for op in operations:
            rows.setdefault(op, OperationRow(op)).should_call += 1
        at = wrong_at(sample, operations)
        if at is None:
            continue
        row = rows.setdefault(at, OperationRow(at))
        row.wrong_at += 1
        diagnosis = sample.get("diagnosis") or {}
        row.causes[diagnosis.get("cause") or "unknown"] += 1
        if row.example is None:
            row.example = {"task_id": sample["task_id"], "sample": sample.get("sample", 0),
                           **(diagnosis.get("first_divergence") or {})}
    ranked = sorted((r for r in rows.values() if r.should_call),
                    key=lambda r: (-(r.rate or 0.0), -r.wrong_at, r.operation))
    return ranked + [rows[k] for k in (NO_CALLS, IN_RESULT, UNEXPLAINED) if k in rows and not rows[k].should_call]


def render_markdown(rows: list[OperationRow], label: str) -> str:
    lines = [f"## {label}: where samples went wrong, by operation", "",
             "| operation | should call | wrong at it | failure rate [95% interval] | top causes | first divergence |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        rate = "-"
        if r.interval:
            low, high = r.interval
            rate = f"{100 * r.rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"
        causes = ", ".join(f"{c} {n}" for c, n in r.causes.most_common(3)) or "-"
        e = r.example or {}
        example = "-" if not e else e["task_id"] if "case" not in e else \
            f"{e['task_id']} ({e['case']}, call {e['index']}): expected `{e['expected']}`, got `{e['got']}`"
        lines.append(f"| `{r.operation}` | {r.should_call or '-'} | {r.wrong_at} | {rate} | {causes} | "
                     f"{example.replace('|', chr(92) + '|')} |")
    lines += ["", "should call: samples whose task's reference calls the operation; wrong at it: failed samples whose "
              "first call unlike the reference's is a call of it (rows in parentheses: failures no call explains).",
              "", ""]
    return "\n".join(lines)
