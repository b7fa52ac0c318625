"""Diagnostics of a scored sample: partial credit from its API calls, and why it failed.

Every test case records the program's API calls (`scenarios.trace`), and the dataset stores the reference's calls
on the same input. Comparing the two, per test case and then averaged over the sample's test cases:

- `api_match`: the APIs both called, as multisets, over the longer trace's length (a missing or an extra call
  both cost);
- `arg_match`: the calls both made with the same API and the same arguments, as multisets, over the longer length;
- `seq_match`: the longest common subsequence of calls (API and arguments) over the reference's length;
- `connected_match`: the longest run of consecutive reference calls the sample also made consecutively (a
  connected subsequence), over the reference's length;
- `binding_accuracy`: the reference's data-flow edges (an argument that came from an earlier call's result or
  from a setup variable) that the sample reproduced: its calls are paired with the reference's by the longest
  common subsequence of API names, and an edge counts when the paired call takes the same argument from the
  paired source (1.0 when the reference has none);
- `first_divergence`: where the sample's calls first leave the reference's, on the first test case where they
  do: the test case, the index, and both calls as text (None when every test case made the reference's calls).

Two empty traces match fully. The reference scores 1.0 on every metric. A failed sample also gets a `cause`, one
of `CAUSES`, and its one-line recommendation, decided on its first failing test case by `cause_of`.
"""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

from core.records import TaskRecord
from core.statuses import EXECUTION_ERROR, NO_CODE, PASS, SYNTAX_ERROR, TIMEOUT
from scenarios.base import canonical_json
from scenarios.trace import load_stored

METRICS = ("api_match", "arg_match", "seq_match", "connected_match", "binding_accuracy")

# Every cause, in the order reports list them, with what to do about it.
CAUSES = {
    NO_CODE: "No code could be taken from the reply: ask for one fenced Python block and check the reply format.",
    "syntax": "The program does not parse: check the generated code (truncated replies, prose mixed into code).",
    "timeout": "The program ran past its time limit: look for loops that never end or calls repeated without end.",
    "crash": "An exception was raised in the program's own code: check how it reads the results it gets back.",
    "api_misuse": "An API refused a call (an exception or an HTTP error): the documentation of that call was "
                  "misread; check its parameters and types.",
    "wrong_api": "It called an API the task does not need instead of one it does: map each step of the "
                 "instruction to the documented API.",
    "missing_call": "It left out calls the task needs: make every step of the instruction a call.",
    "extra_call": "It made calls the task does not ask for: call only what the instruction asks, once each.",
    "wrong_order": "It made the right calls in the wrong order: follow the order the instruction's steps imply.",
    "wrong_branch": "It took the other side of the condition: test the condition the instruction states, on the "
                    "value it names.",
    "broken_binding": "A result was not passed on, or the wrong one was: keep each call's result and pass it to the "
                      "call that uses it (state was mismanaged across calls).",
    "wrong_argument": "The right calls on the right data, with a wrong argument: check the values and options "
                      "the instruction gives each call.",
    "result_shape": "The calls were right but RESULT was not as asked: build RESULT with the values, in the order "
                    "and form the instruction gives.",
    "unexplained": "RESULT or the side effects differ and there is no reference trace to compare with (one "
                   "recorded in another trace format): rebuild the dataset with this version for a diagnosis.",
}


def _key(call: dict) -> str:
    return canonical_json([call.get("api"), call.get("args")])


def _lcs_pairs(a: list, b: list) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of `a` and `b` (the earliest pairing among equals)."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _longest_run(a: list, b: list) -> int:
    """The length of the longest common contiguous run of `a` and `b`."""
    best, prev = 0, [0] * (len(b) + 1)
    for x in a:
        row = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                row[j + 1] = prev[j] + 1
                best = max(best, row[j + 1])
        prev = row
    return best


def _overlap(a: list, b: list) -> int:
    return sum((Counter(a) & Counter(b)).values())


def _ratio(part: int, whole: int, empty: float) -> float:
    return part / whole if whole else empty


def _edges(trace: list[dict]) -> list[tuple[Any, int, str]]:
    return [(src, j, arg) for j, call in enumerate(trace) for arg, src in sorted((call.get("from") or {}).items())]


def binding_accuracy(ref: list[dict], got: list[dict]) -> float:
    edges = _edges(ref)
    if not edges:
        return 1.0
    paired = dict(_lcs_pairs([c.get("api") for c in ref], [c.get("api") for c in got]))
    kept = 0
    for src, j, arg in edges:
        if j in paired:
            want = paired.get(src) if isinstance(src, int) else src
            kept += want is not None and (got[paired[j]].get("from") or {}).get(arg) == want
    return kept / len(edges)


def case_metrics(ref: list[dict], got: list[dict]) -> dict[str, float]:
    """The partial-credit metrics of one test case (see the module's docstring)."""
    ref_apis, got_apis = [c.get("api") for c in ref], [c.get("api") for c in got]
    ref_keys, got_keys = [_key(c) for c in ref], [_key(c) for c in got]
    longer = max(len(ref), len(got))
    both_empty = 1.0 if not got else 0.0
    return {
        "api_match": _ratio(_overlap(ref_apis, got_apis), longer, 1.0),
        "arg_match": _ratio(_overlap(ref_keys, got_keys), longer, 1.0),
        "seq_match": _ratio(len(_lcs_pairs(ref_keys, got_keys)), len(ref), both_empty),
        "connected_match": _ratio(_longest_run(ref_keys, got_keys), len(ref), both_empty),
        "binding_accuracy": binding_accuracy(ref, got),
    }


def render(call: dict | None) -> str | None:
    """A call as one line: `api(arg=value, ...)`, arguments by name, one that came from somewhere shown by its source
    (`$x1`, a setup variable; `<call 2>`, the result of the trace's third call)."""
    if call is None:
        return None
    sources = call.get("from") or {}

    def shown(key: str, value) -> str:
        src = sources.get(key)
        if src is not None:
            return src if isinstance(src, str) else f"<call {src}>"
        if isinstance(value, list) and any(f"{key}.{i}" in sources for i in range(len(value))):
            return "[" + ", ".join(shown(f"{key}.{i}", v) for i, v in enumerate(value)) + "]"
        return canonical_json(value)

    parts = [f"{arg}={shown(arg, value)}" for arg, value in sorted((call.get("args") or {}).items())]
    text = f"{call.get('api')}({', '.join(parts)})"
    return text if len(text) <= 300 else text[:297] + "..."


def first_divergence(ref: list[dict], got: list[dict]) -> dict | None:
    """The first index where the two traces differ (an API, an argument or a source), with both calls."""
    for i in range(max(len(ref), len(got))):
        r = ref[i] if i < len(ref) else None
        g = got[i] if i < len(got) else None
        if r is None or g is None or _key(r) != _key(g) or (r.get("from") or {}) != (g.get("from") or {}):
            return {"index": i, "expected": render(r), "got": render(g)}
    return None


def _apis(trace: list[dict]) -> list:
    return [c.get("api") for c in trace]


def _errors(trace: list[dict]) -> int:
    return sum("error" in c for c in trace)


def cause_of(status: str, failing: int | None, refs: list[list[dict] | None], gots: list[list[dict] | None],
             branches: list[str], in_api: list[bool]) -> str:
    """The root cause of a failed sample, from its status and its first failing test case (`failing`).

    In order: no code, a syntax error and a timeout are their own causes. An execution error is `api_misuse`
    when the exception was raised inside an API call or the program got more refused calls (HTTP errors) than the
    reference, else `crash`. A wrong RESULT or side effect is decided on the traces of the failing test case:
    `wrong_branch` when the sample made the calls the reference makes on a test case of the other branch;
    otherwise by the multisets of APIs (`wrong_api` when some are missing and others extra, `missing_call`,
    `extra_call`), then their order (`wrong_order`), then the data flow (`broken_binding`), the arguments
    (`wrong_argument`), and with every call right, `result_shape`. Without traces to compare: `unexplained`.
    """
    if status == NO_CODE:
        return NO_CODE
    if status == SYNTAX_ERROR:
        return "syntax"
    if status == TIMEOUT:
        return "timeout"
    ref = refs[failing] if failing is not None else None
    got = gots[failing] if failing is not None else None
    if status == EXECUTION_ERROR:
        refused = got is not None and _errors(got) > _errors(ref or [])
        return "api_misuse" if (failing is not None and in_api[failing]) or refused else "crash"
    if ref is None or got is None:
        return "unexplained"
    keys = [_key(c) for c in got]
    if keys != [_key(c) for c in ref]:
        for other, branch in zip(refs, branches):
            if other is not None and branch != branches[failing] and (
                    [_key(c) for c in other] == keys or _apis(ref) != _apis(got) == _apis(other)):
                return "wrong_branch"
    missing, extra = Counter(_apis(ref)) - Counter(_apis(got)), Counter(_apis(got)) - Counter(_apis(ref))
    if missing and extra:
        return "wrong_api"
    if missing or extra:
        return "missing_call" if missing else "extra_call"
    if _apis(got) != _apis(ref):
        return "wrong_order"
    if binding_accuracy(ref, got) < 1.0:
        return "broken_binding"
    if any(r.get("args") != g.get("args") for r, g in zip(ref, got)):
        return "wrong_argument"
    return "result_shape"


def diagnose(task: TaskRecord, status: str, cases: list[dict], traces: list[list[dict] | None],
             in_api: list[bool]) -> dict:
    """A sample's `diagnosis`: the metrics averaged over the task's test cases (None where the dataset holds no
    reference traces), the first divergence, and for a failed sample its cause and recommendation.

    `cases`: the sample's per-test-case results (name, status), empty when it had no code; `traces` and `in_api`:
    per test case, what the sandbox reported."""
    test_cases = task.test_cases
    refs = [load_stored(c.trace) for c in test_cases]
    gots = [(traces[i] if i < len(traces) else None) for i in range(len(test_cases))]
    flags = [(in_api[i] if i < len(in_api) else False) for i in range(len(test_cases))]
    out: dict = {}
    if all(r is not None for r in refs) and test_cases:
        per_case = [case_metrics(r, g or []) for r, g in zip(refs, gots)]
        out.update({m: round(mean(pc[m] for pc in per_case), 6) for m in METRICS})
        out["first_divergence"] = next(
            ({"case": c.name, **d} for c, r, g in zip(test_cases, refs, gots)
             if (d := first_divergence(r, g or [])) is not None), None)
    else:
        out.update({m: None for m in METRICS})
        out["first_divergence"] = None
    if status != PASS:
        failing = next((i for i, c in enumerate(cases) if c.get("status") != PASS), None)
        cause = cause_of(status, failing, refs, gots, [c.branch for c in test_cases], flags)
        out["cause"], out["recommendation"] = cause, CAUSES[cause]
    return out


def summarize_diagnoses(diagnoses: list[dict | None]) -> dict:
    """The metric means over the samples that have them (None when none has), and how many failed samples each
    cause explains (every cause listed, zeros included)."""
    out: dict = {}
    for m in METRICS:
        values = [d[m] for d in diagnoses if d and d.get(m) is not None]
        out[m] = round(mean(values), 6) if values else None
    causes = Counter(d["cause"] for d in diagnoses if d and d.get("cause"))
    out["causes"] = {c: causes.get(c, 0) for c in CAUSES}
    return out


def top_causes(causes: dict[str, int], n: int = 3) -> list[tuple[str, int]]:
    """The `n` most common causes (ties in the order of `CAUSES`), zeros left out."""
    ranked = sorted(((c, k) for c, k in causes.items() if k), key=lambda ck: (-ck[1], list(CAUSES).index(ck[0])
                                                                                 if ck[0] in CAUSES else len(CAUSES)))
    return ranked[:n]


TOP_CAUSES = 3  # causes of failure named in the printed table and in `python -m evaluate.report`


def format_causes(diagnosis: dict | None) -> str:
    """The most common causes of failure, e.g. `wrong_argument 3, crash 1` (`-` when none)."""
    ranked = top_causes((diagnosis or {}).get("causes") or {}, TOP_CAUSES)
    return ", ".join(f"{c} {k}" for c, k in ranked) or "-"


def format_metric(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
