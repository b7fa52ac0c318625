"""Oracle capture: the expected outputs of a test case, read off two runs of the reference on it, and the path it
takes, read off a run of the program's path probe. The build's capture step and mutation analysis's probe inputs
both come here.

The runs of one task share a child (`Executor.run_batched`), the world reset between them: one fork per task
rather than one per test case.
"""

from __future__ import annotations

from collections import Counter

from builder.base import BaseProgram
from builder.draft import Draft, keep
from core.records import TestCase
from core.sandbox.harness import Executor, Job, require_verdicts
from core.statuses import INFRA_ERROR
from scenarios.base import canonical_json
from scenarios.trace import stored

LOST = "lost its world"  # a reason's start: the world (its service) died under the run on every try


def take_oracle(case: TestCase, first, second) -> str | None:
    """Fill `case`'s expected outputs and the reference's API-call trace from two runs of the reference; the reason
    they cannot be used, if any."""
    bad = next((o for o in (first, second) if o.status != "ok"), None)
    if bad:
        return _failed(bad)
    if canonical_json([first.result, first.state]) != canonical_json([second.result, second.state]):
        return "differs between two runs"
    case.expected_result = canonical_json(first.result)
    case.expected_state = None if first.state is None else canonical_json(first.state)
    case.trace = None if first.trace is None else stored(first.trace)
    return None


def capture(sandbox: Executor, tasks: list[tuple[int, str, BaseProgram, list[TestCase]]],
            desc: str | None) -> list[list[str | None]]:
    """For each task (a group number, its scenario, its program and test cases), each case's oracle and path
    filled from runs in the sandbox: per case, None, or why the reference gives it no oracle ("reference
    <status>", and the input's name unless it is the original). A run during which the world lost a part (its
    service died) on every try gives "reference lost its world: <what died, and what it printed last>"; any other
    run without a verdict stops the build (`NoVerdict`).

    The reference runs twice on every case; a program with a branch (`has_branch`) also runs its path probe
    (`path_probe`) once, and the label it returns is the case's `branch`: a redrawn input may take any path, and
    mutation analysis skips a mutant on a case whose path does not pass its change (`mutate.reaches`)."""
    jobs = [Job((group, c_i, run), scenario, program.reference_code(), case, group=group)
            for group, scenario, program, cases in tasks for c_i, case in enumerate(cases) for run in range(2)]
    jobs += [Job((group, c_i, "branch"), scenario, program.path_probe(), case, group=group)
             for group, scenario, program, cases in tasks if program.has_branch for c_i, case in enumerate(cases)]
    by_key = {o.key: o for o in require_verdicts(sandbox.run_batched(jobs, desc=desc if jobs else None),
                                                 lost_worlds=True)}
    return [[_read(case, by_key[(group, c_i, 0)], by_key[(group, c_i, 1)], by_key.get((group, c_i, "branch")))
             for c_i, case in enumerate(cases)] for group, _, _, cases in tasks]


def _failed(outcome) -> str:
    """Why a run gives no oracle: its status, or what of its world died (see `capture`)."""
    if outcome.status == INFRA_ERROR and outcome.extra.get("world_lost"):
        return f"{LOST}: {outcome.extra['world_lost']}"
    return outcome.status


def _read(case: TestCase, first, second, path) -> str | None:
    """`case`'s oracle from two runs of the reference and its branch from the path probe's run (None: no probe).
    What died is the reason whatever the input, so that one failure of the world is counted once."""
    failed = take_oracle(case, first, second)
    if failed:
        return f"reference {failed}" + (f" on the {case.name} input" if case.name != "original" and
                                          not failed.startswith(LOST) else "")
    if path is not None:
        if path.status != "ok":
            failed = _failed(path)
            return f"reference {failed}" + ("" if failed.startswith(LOST) else f" on the {case.name} input")
        case.branch = path.result[0]
    return None


def capture_oracles(drafts: list[Draft], sandbox: Executor, rejections: Counter) -> list[Draft]:
    """The build's step: every draft's test cases given their oracles; a draft with a case the reference gives
    none (a failed run, two runs that differ, a run under which the world died) is dropped, counted by the first
    such case's reason."""
    found = capture(sandbox, [(d_i, d.scenario, d.program, d.cases) for d_i, d in enumerate(drafts)],
                    "capture oracles")
    firsts = [next((reason for reason in per_case if reason), None) for per_case in found]
    return [d for d, _ in keep(list(zip(drafts, firsts)), lambda item: item[1], rejections,
                               scenario=lambda item: item[0].scenario)]
