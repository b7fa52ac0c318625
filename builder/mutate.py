"""Mutation analysis of a task's oracle: is every plausible wrong program told apart from the reference?

For each task the reference program is mutated the ways a model gets a program subtly wrong (the operators
below), every mutant runs in the sandbox on the task's test cases, and a mutant that any test case tells apart
is killed. A survivor then runs on probe inputs (more fresh values of the same schema): a probe that kills it
becomes a test case of the task (the oracle is strengthened); a mutant that survives every probe is recorded as
equivalent, except a dropped or skipped call, which means the call is dead and drops the task (`weak_oracle`); on
the frontier tier, so does a construct's own mutant, and a recovery's branch mutant (`scenarios.grammar.BRANCHES`)
means that no input takes that branch (`uncovered_branch`). A scenario whose reads can coincide
(`Scenario.distinct_answers`) drops a task whose RESULT holds two items equal on every test case (`weak_oracle`).

Mutants run where the runs are cheapest first: every mutant on the first test case, only the survivors on the
others, and only the last survivors on probes, all on the sandbox's warm workers. Some need no run at all: a
dropped call whose output a later line reads (it raises NameError), and a RESULT that drops or reorders the
reference's items and changes nothing else, whose outputs on any input are the reference's rearranged (about a
fifth of the session and voice mutants that would run, and runs that make every API call of the reference).
"""

from __future__ import annotations

import ast
import builtins
import copy
import json
import random
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

from builder.base import BaseProgram
from builder.config import rng_for
from builder.oracles import capture
from builder.program import COND
from core.sandbox.harness import Job, require_verdicts
from evaluate.scoring import judge_case
from scenarios import get_scenario
from scenarios.grammar import BRANCHES, MUST_KILL

OPERATORS = ("drop_call", "skip_call", "other_api", "argument", "swap_args", "variable", "condition", "result")
DEAD = ("drop_call", "skip_call")  # survivors of these mean a call whose effect no test case can see
# What a skipped write is replaced by: the status it answers when it works, by the `requests` method it calls.
OK_STATUS = {"post": 201, "put": 200, "delete": 204}
SETTLED = frozenset({"RESULT", COND, "BASE_URL"})  # names a variable mutant never replaces or puts in


@dataclass(frozen=True)
class Mutant:
    operator: str
    change: str  # the changed line, "before -> after"
    code: str
    undefined: str = ""  # a name it reads that nothing defines: it raises NameError, killed without a run
    # A RESULT mutant whose every other statement is the reference's: the reference's RESULT items it lists, in
    # order. Its outputs on any input are the reference's with RESULT rearranged so: decided without a run.
    result_items: tuple[int, ...] | None = None
    # The sides (True: then) of the splits on the way to the changed statement; () when every path runs it. An
    # input that takes another path runs it exactly as the reference: it cannot tell them apart (`reaches`).
    where: tuple[bool, ...] = ()
    # How many top-level statements it begins with that are the reference's own: a batch of mutants on one test
    # case runs those once (`Job.shared`).
    shared: int = 0

    def describe(self) -> str:
        return f"{self.operator}: {self.change}"


def mutants(program: BaseProgram, per_task: int, rng: random.Random) -> list[Mutant]:
    """Distinct mutants of the reference (none equal to it as text), at most `per_task` of them drawn evenly over
    the operators so that no operator crowds out the others, besides those always kept: a program with its own
    operators (`BaseProgram.mutants`) keeps every mutant of a construct (`MUST_KILL`); the operators below, which
    mutate any other program, keep every dropped call that leaves a name undefined (killed without a run)."""
    own = program.mutants()
    if own is not None:  # the program's own operators (a frontier program's constructs: builder/frontier.py)
        by_operator, required = {}, []
        for operator, change, code, items in own:
            mutant = Mutant(operator, change, code, "", items)
            # Every mutant of a construct is tried: one that survives means the task does not test the construct.
            (required if operator in MUST_KILL else by_operator.setdefault(operator, [])).append(mutant)
        return _spread(list(by_operator.values()), required, per_task, rng)
    reference = program.reference_code()
    tree = ast.parse(reference)
    base = ast.unparse(tree)
    # A mutant shares every top-level statement with the reference but the one its change is in: unparse that one.
    texts = {id(stmt): ast.unparse(stmt) for stmt in tree.body}
    types = program.variable_types()
    # What the program reads without assigning it (the setup block, the world's tools, imports) is there anyway.
    setup = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - _assigned_names(tree.body)
    seen, by_operator = {base}, {op: [] for op in OPERATORS}
    for operator, before, mutated, where in _generate(tree, program, types):
        code = "\n".join(texts.get(id(stmt)) or ast.unparse(stmt) for stmt in mutated.body)  # = ast.unparse(mutated)
        if code in seen:
            continue
        seen.add(code)
        after = _changed_line(base, code)
        undefined = _undefined_read(mutated, setup) if operator == "drop_call" else ""
        items = _result_items(tree, mutated) if operator == "result" else None
        # The statements before the first the edit replaced (`_path_copy` keeps the others as the same objects).
        shared = next((j for j, (a, b) in enumerate(zip(tree.body, mutated.body)) if a is not b), len(mutated.body))
        by_operator[operator].append(Mutant(operator, f"{before} -> {after}", code + "\n", undefined, items, where,
                                            shared))
    chosen = [m for pool in by_operator.values() for m in pool if m.undefined]  # free: no run needed
    return _spread([[m for m in p if not m.undefined] for p in by_operator.values()], chosen, per_task, rng)


def _spread(pools: list[list[Mutant]], chosen: list[Mutant], per_task: int, rng: random.Random) -> list[Mutant]:
    """`chosen`, then at most `per_task` more drawn in turn from each operator's pool, so that no operator crowds
    out the others."""
    pools = [rng.sample(pool, len(pool)) for pool in pools]
    per_task += len(chosen)
    while len(chosen) < per_task and any(pools):
        for pool in pools:
            if pool and len(chosen) < per_task:
                chosen.append(pool.pop())
    return chosen


def _assigned_names(stmts: list[ast.stmt]) -> set[str]:
    return {t.id for s in stmts for t in ast.walk(s) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}


def _undefined_read(tree: ast.Module, defined: set[str]) -> str:
    """The first name a path of the program reads before any statement on that path assigns it ("" if none)."""
    def walk(stmts: list[ast.stmt], known: set[str]) -> str:
        for stmt in stmts:
            reads = _expression(stmt) if isinstance(stmt, (ast.If, ast.Assign)) else stmt
            for node in ast.walk(reads):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in known \
                        and not hasattr(builtins, node.id):
                    return node.id
            if isinstance(stmt, ast.If):
                return walk(stmt.body, set(known)) or walk(stmt.orelse, set(known))
            known |= _assigned_names([stmt])
        return ""
    return walk(tree.body, set(defined))


# What a RESULT item may be built of for its value to be read off the reference's RESULT: names and the parts of
# them it picks (no call, so evaluating the items changes nothing and gives what the reference's items gave).
PURE_ITEM = (ast.Name, ast.Load, ast.Subscript, ast.Attribute, ast.Constant)


def _result_items(reference: ast.Module, mutated: ast.Module) -> tuple[int, ...] | None:
    """For a mutant that differs from the reference only in its last statement, a top-level `RESULT = [...]` of
    pure items in both: for each of its items, the position of the reference's item written the same way (equal
    text, no side effects: equal values). None when its outputs cannot be read off the reference's that way."""
    *body, last = mutated.body
    *ref_body, ref_last = reference.body
    lists = [s.value for s in (last, ref_last) if _assigned(s) == "RESULT" and isinstance(s.value, ast.List)]
    if len(lists) < 2 or len(body) != len(ref_body) or not all(
            a is b or ast.dump(a) == ast.dump(b) for a, b in zip(body, ref_body)):  # shared: `_path_copy`
        return None
    if not all(isinstance(n, PURE_ITEM) for value in lists for item in value.elts for n in ast.walk(item)):
        return None
    positions = {ast.dump(item): i for i, item in enumerate(lists[1].elts)}
    found = [positions.get(ast.dump(item)) for item in lists[0].elts]
    return None if None in found else tuple(found)


def _changed_line(base: str, code: str) -> str:
    for a, b in zip(base.splitlines(), code.splitlines()):
        if a != b:
            return b.strip()
    return "(a line removed)"


# ------------------------------------------------------------------------------------------- operators

Edit = tuple[str, str, ast.Module]  # operator, the original line, the mutated module


def _generate(tree: ast.Module, program: BaseProgram,
              types: dict[str, str]) -> Iterator[tuple[str, str, ast.Module, tuple[bool, ...]]]:
    """Every edit of every statement, with the sides of the splits on the way to it (`Mutant.where`)."""
    setup = program.setup_variables()
    for body, i, stmt in _statements(tree):
        where = tuple(branch == "body" for _, branch in body)
        for operator, before, mutated in _edits(tree, program, types, setup, body, i, stmt):
            yield operator, before, mutated, where


def _edits(tree: ast.Module, program: BaseProgram, types: dict[str, str], setup: list[str], body: tuple, i: int,
           stmt: ast.stmt) -> Iterator[Edit]:
    """The mutants of one statement: `body` is the path to the list that holds it, `i` its index there."""
    scenario = program.scenario
    line = ast.unparse(stmt).splitlines()[0].strip()

    def edit(change: Callable[[ast.stmt], ast.stmt] | None) -> ast.Module:
        """A copy of the module with this statement replaced by `change(copy of it)` (None: removed)."""
        new, new_body = _path_copy(tree, body)
        replaced = None if change is None else change(_own_copy(stmt))
        if replaced is None:
            del new_body[i]
            if not new_body:
                new_body.append(ast.Pass())
        else:
            new_body[i] = replaced
        return new

    scope = setup + _assigned_before(tree, body, i)
    if isinstance(stmt, ast.If):
        yield from _condition_mutants(stmt, line, edit)
    elif _assigned(stmt) == "RESULT":
        yield from _result_mutants(stmt, line, edit)
        return
    elif _nodes(stmt, ast.Call):
        yield "drop_call", line, edit(None)
        stand_in = _stand_in(stmt, types)
        if stand_in is not None:
            yield "skip_call", line, edit(lambda s: ast.Assign(targets=s.targets, value=stand_in, lineno=0))
        for k, node in enumerate(_nodes(stmt, ast.Call)):
            for other in scenario.confusions.get(ast.unparse(node.func), ()):
                yield "other_api", line, edit(_at(k, ast.Call, lambda n, o=other: _replace(n, "func", _expr(o))))
            positional = [j for j, a in enumerate(node.args) if not isinstance(a, ast.Starred)]
            commute = scenario.commuting.get(ast.unparse(node.func))
            for a, b in zip(positional, positional[1:]):
                if ast.unparse(node.args[a]) != ast.unparse(node.args[b]) and (a, b) != commute:
                    yield "swap_args", line, edit(_at(k, ast.Call, lambda n, a=a, b=b: _swap(n, a, b)))
    yield from _argument_mutants(stmt, line, edit, scenario.vocabulary)
    yield from _variable_mutants(stmt, line, edit, types, scope)


def _expression(stmt: ast.stmt) -> ast.expr:
    """The part of a statement a mutant changes: an assignment's value, an if's test."""
    return stmt.test if isinstance(stmt, ast.If) else stmt.value


def _assigned_before(tree: ast.Module, body: tuple, i: int) -> list[str]:
    """Names assigned before statement `i` of `body` on its own path (a then-branch is not before the else):
    at every level down to `body`, the statements before the `if` that leads there."""
    before, stmts = [], tree.body
    for k, branch in body:
        before += stmts[:k]
        stmts = getattr(stmts[k], branch)
    before += stmts[:i]
    return [t.id for s in before for t in ast.walk(s) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)]


def _statements(tree: ast.Module) -> Iterator[tuple[tuple, int, ast.stmt]]:
    """(path to the body, index, statement) for every statement, the bodies of nested ifs included. A path is
    the (index of the if, "body" or "orelse") steps from the module down; () is the module's own body."""
    def walk(stmts: list[ast.stmt], path: tuple) -> Iterator[tuple[tuple, int, ast.stmt]]:
        for i, stmt in enumerate(stmts):
            yield path, i, stmt
            if isinstance(stmt, ast.If):
                yield from walk(stmt.body, path + ((i, "body"),))
                yield from walk(stmt.orelse, path + ((i, "orelse"),))
    return walk(tree.body, ())


def _path_copy(tree: ast.Module, body: tuple) -> tuple[ast.Module, list]:
    """A module that shares every statement with `tree` but those on the way to `body`, which are shallow copies,
    and the list of `body` in it, a copy that an edit may change. Copying the whole tree for each of a program's
    ~90 candidate mutants was most of the build's time."""
    new = ast.Module(body=list(tree.body), type_ignores=[])
    stmts = new.body
    for k, branch in body:
        stmts[k] = copy.copy(stmts[k])
        setattr(stmts[k], branch, list(getattr(stmts[k], branch)))
        stmts = getattr(stmts[k], branch)
    return new, stmts


def _own_copy(stmt: ast.stmt) -> ast.stmt:
    """A copy of a statement that an edit may change: an `if`'s test (what its mutants change), its branches
    shared; any other statement whole."""
    if isinstance(stmt, ast.If):
        own = copy.copy(stmt)
        own.test = _clone(stmt.test)
        return own
    return _clone(stmt)


def _clone(node: ast.AST) -> ast.AST:
    """A deep copy of a syntax tree: several times faster than `copy.deepcopy`, which goes through pickling's
    protocol for every node."""
    new = node.__class__(**{a: getattr(node, a) for a in node._attributes if hasattr(node, a)})
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            value = _clone(value)
        elif isinstance(value, list):
            value = [_clone(v) if isinstance(v, ast.AST) else v for v in value]
        setattr(new, name, value)
    return new


def _assigned(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _nodes(stmt: ast.AST, kind: type) -> list[ast.AST]:
    """Nodes of a kind in a fixed order (ast.walk's), so that the k-th of a copy is the k-th of the original."""
    return [n for n in ast.walk(stmt) if isinstance(n, kind)]


def _at(k: int, kind: type, change: Callable[[ast.AST], None]) -> Callable[[ast.stmt], ast.stmt]:
    def apply(stmt: ast.stmt) -> ast.stmt:
        change(_nodes(stmt, kind)[k])
        return stmt
    return apply


def _replace(node: ast.AST, attr: str, value: ast.AST) -> None:
    setattr(node, attr, value)


def _swap(call: ast.Call, a: int, b: int) -> None:
    call.args[a], call.args[b] = call.args[b], call.args[a]


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _stand_in(stmt: ast.stmt, types: dict[str, str]) -> ast.expr | None:
    """What a program that skips this call could put in its place and still run on: the input it would have
    transformed (same type), or the status a write answers when it works."""
    target = _assigned(stmt)
    if target is None or not isinstance(stmt.value, (ast.Call, ast.Attribute)):
        return None
    if isinstance(stmt.value, ast.Attribute) and stmt.value.attr == "status_code":
        call = stmt.value.value
        method = call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else ""
        return ast.Constant(OK_STATUS[method]) if method in OK_STATUS else None
    if isinstance(stmt.value, ast.Call):
        for arg in stmt.value.args:
            if isinstance(arg, ast.Name) and arg.id in types and types[arg.id] == types.get(target):
                return ast.Name(arg.id, ast.Load())
    return None


def _condition_mutants(stmt: ast.If, line: str, edit) -> Iterator[Edit]:
    flips = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE,
             ast.LtE: ast.Lt}

    def negate(s: ast.If) -> ast.If:
        s.test = ast.UnaryOp(ast.Not(), s.test)
        return s

    def flip(s: ast.If) -> ast.If:
        s.test.ops = [flips[type(s.test.ops[0])]()]
        return s

    yield "condition", line, edit(negate)
    if isinstance(stmt.test, ast.Compare) and type(stmt.test.ops[0]) in flips:
        yield "condition", line, edit(flip)


def _result_mutants(stmt: ast.Assign, line: str, edit) -> Iterator[Edit]:
    items = stmt.value.elts if isinstance(stmt.value, ast.List) else []
    for j in range(len(items)):
        def drop(s, j=j):
            del s.value.elts[j]
            return s
        yield "result", line, edit(drop)
    for j in range(len(items) - 1):
        def swap(s, j=j):
            e = s.value.elts
            e[j], e[j + 1] = e[j + 1], e[j]
            return s
        yield "result", line, edit(swap)


def _argument_mutants(stmt: ast.stmt, line: str, edit, vocabulary) -> Iterator[Edit]:
    """Another value for a literal (a neighbouring integer: a dim, a size, a list position; another setting; the
    other truth value; another word of the same kind: a session type, a field), or another keyword."""
    for k, node in enumerate(_nodes(_expression(stmt), ast.Constant)):
        for other in _alternatives(node.value, vocabulary):
            def change(s, k=k, other=other):
                _nodes(_expression(s), ast.Constant)[k].value = other
                return s
            yield "argument", line, edit(change)
    for k, node in enumerate(_nodes(_expression(stmt), ast.keyword)):
        for other in _alternatives(node.arg, vocabulary) if node.arg else ():
            def rename(s, k=k, other=other):
                _nodes(_expression(s), ast.keyword)[k].arg = other
                return s
            yield "argument", line, edit(rename)


def _alternatives(value, vocabulary) -> list:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        out = [value + 1, value - 1] if value > 0 else [value + 1]
        if value in (0, -1):
            out.append(-1 - value)  # the first and the last position
        return [v for v in dict.fromkeys(out) if v != value]
    if isinstance(value, float):
        return [round(value + 0.1, 6), round(value - 0.1, 6)]
    if isinstance(value, str):
        out = []
        for group in vocabulary:
            for word in group:
                if word and word in value:
                    out += [value.replace(word, other) for other in group if other != word]
        return [v for v in dict.fromkeys(out) if v != value]
    return []


def _variable_mutants(stmt: ast.stmt, line: str, edit, types: dict[str, str], scope: list[str]) -> Iterator[Edit]:
    """Another in-scope variable of the same type in place of one the statement reads."""
    def uses(s: ast.stmt) -> list[ast.Name]:
        return [n for n in _nodes(_expression(s), ast.Name) if isinstance(n.ctx, ast.Load) and n.id in types]

    for k, node in enumerate(uses(stmt)):
        for other in dict.fromkeys(scope):
            if other != node.id and other not in SETTLED and types.get(other) == types[node.id]:
                def change(s, k=k, other=other):
                    uses(s)[k].id = other
                    return s
                yield "variable", line, edit(change)


# ------------------------------------------------------------------------------------------- the step


def analyse_mutants(drafts: list, sandbox, config, rejections: Counter) -> list:
    """Mutation analysis of every draft (oracles captured): record its score, strengthen it with probe inputs
    that kill a survivor, drop it when a call is dead (counted as `weak_oracle`)."""
    plans = [mutants(d.program, config.mutants, rng_for(config, d.scenario, d.index, "mutants")) for d in drafts]
    alive = {(d_i, m_i) for d_i, ms in enumerate(plans) for m_i, m in enumerate(ms) if not m.undefined}
    for c_i in range(max((len(d.cases) for d in drafts), default=0)):  # cheapest first: most die on case 0
        pending = sorted(k for k in alive if c_i < len(drafts[k[0]].cases)
                         and reaches(plans[k[0]][k[1]], drafts[k[0]].cases[c_i]))
        alive -= _killed(sandbox, drafts, plans, {k: drafts[k[0]].cases[c_i] for k in pending}, f"mutants {c_i + 1}")

    # Probe inputs, only for tasks that still have a survivor: each gets its oracle and path as a test case does
    # (`builder/oracles.py`), then the survivors run on it. A probe joins the task's test cases when it kills a
    # survivor of the probes before it. All probes run at once, in two rounds of jobs, rather than probe by probe:
    # survivors are few, and eight rounds of a few jobs left the workers mostly idle.
    wanted = sorted({k[0] for k in alive})
    probes = {d_i: drafts[d_i].program.probe_cases(config, drafts[d_i].index) for d_i in wanted}
    read = capture(sandbox, [(d_i, drafts[d_i].scenario, drafts[d_i].program, probes[d_i]) for d_i in wanted],
                   "probe inputs")
    usable = {(d_i, p_i): probe for d_i, reasons in zip(wanted, read)
              for p_i, (probe, reason) in enumerate(zip(probes[d_i], reasons)) if reason is None}
    on_probes = {(*k, p_i): usable[k[0], p_i] for k in sorted(alive) for p_i in range(config.probes)
                 if (k[0], p_i) in usable}
    killed_on = _killed(sandbox, drafts, plans, on_probes, "probes")
    added: dict[int, list] = {}
    for p_i in range(config.probes):  # in probe order: the first probe that kills a mutant is the one kept
        killed = {k for k in alive if (*k, p_i) in killed_on}
        for d_i in sorted({k[0] for k in killed}):
            added.setdefault(d_i, []).append(usable[d_i, p_i])
        alive -= killed

    kept = []
    for d_i, d in enumerate(drafts):
        for probe in added.get(d_i, []):
            d.cases.append(probe)
        survivors = [plans[d_i][m_i] for k, m_i in sorted(alive) if k == d_i]
        dead = [m for m in survivors if _dead(m)]
        total = len(plans[d_i])
        d.mutation = {"mutants": total, "killed": total - len(survivors), "equivalent": len(survivors),
                      "score": (total - len(survivors)) / total if total else 1.0,
                      "equivalents": [m.describe() for m in survivors]}
        alike = _alike(d.cases) if get_scenario(d.scenario).distinct_answers else None
        if dead:
            rejections[_rejection(d.scenario, dead[0])[:160]] += 1
        elif alike:
            rejections[f"{d.scenario}: weak_oracle (RESULT items {alike[0] + 1} and {alike[1] + 1} are equal on "
                       "every input)"] += 1
        else:
            kept.append(d)
    return kept


def _alike(cases: list) -> tuple[int, int] | None:
    """The first two RESULT items equal on every test case (a swap of them, or either kept twice, passes), or None."""
    results = [json.loads(c.expected_result) for c in cases if c.expected_result is not None]
    if not results or not all(isinstance(r, list) and len(r) == len(results[0]) for r in results):
        return None
    for i in range(len(results[0])):
        for j in range(i + 1, len(results[0])):
            if all(json.dumps(r[i], sort_keys=True) == json.dumps(r[j], sort_keys=True) for r in results):
                return i, j
    return None


def _rejection(scenario: str, mutant: Mutant) -> str:
    """The build report's reason for dropping a task over a mutant that survives every test case and probe: a
    branch of a recovery that no input takes (`uncovered_branch`), or a part of the task no test sees
    (`weak_oracle`)."""
    if mutant.operator in BRANCHES:
        return f"{scenario}: uncovered_branch (no input takes a recovery's branch, {BRANCHES[mutant.operator]}: " \
               f"{mutant.describe()})"
    what = "a dead call" if mutant.operator in DEAD else \
        "a construct no input exercises" if mutant.operator in MUST_KILL else "a split whose sides no input tells apart"
    return f"{scenario}: weak_oracle ({what}: {mutant.describe()})"


def reaches(mutant: Mutant, case) -> bool:
    """Whether the test case's path (`TestCase.branch`, run and read off the reference: see `capture_oracles`)
    passes the mutant's change. One that does not runs the statements the reference runs, so it survives that
    case without a run."""
    taken = () if case.branch == "main" else tuple(side == "then" for side in case.branch.split("/"))
    return taken[:len(mutant.where)] == mutant.where


def _dead(mutant: Mutant) -> bool:
    """Whether a mutant that survives every test case and probe means a part of the task no test sees, which drops
    the task: a dropped or skipped call (a dead call), or the split's condition negated (each input then takes the
    other side, and nothing tells the sides apart: the if/else the instruction asks for tests nothing)."""
    negated = mutant.operator == "condition" and mutant.change.split(" -> ", 1)[-1].startswith("if not ")
    return mutant.operator in DEAD or negated or mutant.operator in MUST_KILL


BATCHES = True  # one sandbox job per task and test case (False: one per mutant, as a check of the batches)


def _killed(sandbox, drafts: list, plans: list, cases: dict, desc: str) -> set:
    """The (draft, mutant) keys whose run on the given test case differs from the reference's outputs.

    All of a task's mutants on one test case run in one job: where the scenario allows it (`Scenario.shared_runs`)
    as one program that runs each in a fresh copy of the setup's namespace, otherwise as a batch (`Job.batch`) that
    one child runs with the world reset between mutants. One fork instead of one per mutant; a job that gives no
    verdict for some mutants (out of time on a loaded machine, a child that died) has those run one by one.
    """
    def alone(k) -> Job:
        mutant = plans[k[0]][k[1]]
        return Job(k, drafts[k[0]].scenario, mutant.code, cases[k], record=False, shared=mutant.shared, group=k[0])

    def verdict(k, outcome) -> None:
        if judge_case(get_scenario(drafts[k[0]].scenario), cases[k], outcome)[0] != "pass":
            killed.add(k)

    killed, groups = set(), {}
    for k, case in cases.items():
        decided = _decided(drafts[k[0]].scenario, plans[k[0]][k[1]], case)
        if decided is None:
            groups.setdefault((k[0], id(case)), []).append(k)
        elif decided:
            killed.add(k)
    jobs = []
    for keys in groups.values():
        scenario, case = drafts[keys[0][0]].scenario, cases[keys[0]]
        shared = get_scenario(scenario).shared_runs and drafts[keys[0][0]].program.shared_runs
        if BATCHES and len(keys) > 1 and shared:
            jobs.append(Job(("shared", tuple(keys)), scenario, _driver([plans[k[0]][k[1]].code for k in keys]), case,
                            record=False))
        else:
            jobs += [alone(k) for k in keys]
    retry = []
    run = sandbox.run_batched if BATCHES else sandbox.run_untrusted
    for o in require_verdicts(run(jobs, desc=desc if jobs else None)):
        if o.key[0] == "shared":  # RESULT holds one {"result"} or {"error"} per mutant
            keys = list(o.key[1])
            if o.status != "ok":  # e.g. out of time on a loaded machine: no verdict from it, run each alone
                retry += keys
                continue
            scenario = get_scenario(drafts[keys[0][0]].scenario)
            expected = json.loads(cases[keys[0]].expected_result)
            for k, got in zip(keys, o.result):
                if "error" in got or scenario.compare_result(expected, got["result"]) is not None:
                    killed.add(k)
        else:
            verdict(o.key, o)
    for o in require_verdicts(sandbox.run_untrusted([alone(k) for k in retry],
                                                    desc=f"{desc} (one by one)" if retry else None)):
        verdict(o.key, o)
    return killed


RESULTS_FROM_REFERENCE = True  # False: run the RESULT mutants too, as a check of `_decided`


def _decided(scenario: str, mutant: Mutant, case) -> bool | None:
    """Whether the test case kills a mutant whose outputs are the reference's with RESULT rearranged
    (`Mutant.result_items`), read off the reference's outputs on it; None when it has to run. Its side effects are
    the reference's, so only RESULT can tell it apart."""
    if not RESULTS_FROM_REFERENCE or mutant.result_items is None or case.expected_result is None:
        return None
    expected = json.loads(case.expected_result)
    if not isinstance(expected, list) or not all(i < len(expected) for i in mutant.result_items):
        return None
    return get_scenario(scenario).compare_result(expected, [expected[i] for i in mutant.result_items]) is not None


def _driver(codes: list[str]) -> str:
    """One program that runs each mutant in a fresh copy of the setup's namespace and collects every RESULT (or
    the exception's name): the outputs of a scenario whose calls change nothing outside the program."""
    return (
        f"__mutants = {codes!r}\n"
        "__setup = dict(globals())\n"
        "__results = []\n"
        "for __code in __mutants:\n"
        "    __ns = dict(__setup)\n"
        "    try:\n"
        "        exec(__code, __ns)\n"
        "        __results.append({'result': __ns['RESULT']})\n"
        "    except Exception as __exc:\n"
        "        __results.append({'error': type(__exc).__name__})\n"
        "RESULT = __results\n"
    )
