"""Mutation audit of a built dataset: how many wrong programs do its oracles let through?

  python scripts/mutation_audit.py --dataset stateeval --out audit [--per-task 40] [--seed 0] [--scenario tensor]
                                                                 [--timeout 2]

This is the auditor's tool. For every task it mutates `reference_program` over its AST (delete a statement, call
a plausibly confused API, change a literal, swap two arguments, use another variable in scope, negate or change
the branch condition, drop or swap a RESULT element), scores every mutant with `python -m evaluate --samples`
exactly as it would score a model's answer, and lists the mutants that pass every test case. A survivor is either
equivalent to the reference or a hole in the oracle (a dead call, a read whose value never matters, a coincidence
of the test data) through which a wrong answer passes.

It imports nothing from `builder/` on purpose: its mutants come from the published rows alone, independently of
the builder's own validity checks and mutation step, so that it can check them (docs/oracles.md: every call live, every
read non-vacuous, every mutant killed or proven equivalent) rather than repeat their reasoning. Each task's
unmutated reference is scored too, as a control: a task whose reference fails is reported and left out.

Writes under --out: mutants.jsonl (the samples), mutants.map.jsonl (per line: task, operator, the changed line
before and after), scores/ (evaluate's results.json), survivors.txt and report.json.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import json
import random
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.records import DatasetError, load_tasks  # noqa: E402

PAPER_OPERATORS = ("delete_stmt", "swap_api", "change_literal", "swap_args", "replace_var",
                   "negate_cond", "swap_compare", "drop_result", "swap_result")
# The frontier tier's programs loop, page and pick (docs/tasks.md, "The frontier tier"): its slips, written here over the
# syntax alone: a loop cut after its first pass (the first page, the first match), a loop over all but the last
# item (a bound off by one), an extreme of the other kind, a tie broken the other way; and over stateful PyTorch, a
# copy that is not taken (`.clone()` left out: a view that follows later changes).
FRONTIER_OPERATORS = ("loop_once", "loop_bound", "swap_extreme", "swap_tiebreak", "drop_clone")
OPERATORS = PAPER_OPERATORS + FRONTIER_OPERATORS

# Plausible confusions per scenario: an API, and what a wrong answer might call in its place with the same arguments.
SWAPS = {
    "tensor": {"torch.cat": ["torch.stack"], "torch.stack": ["torch.cat"], "torch.split": ["torch.tensor_split"],
               "F.linear": ["torch.matmul"], "F.conv2d": ["F.conv_transpose2d"]},
    "session": {"requests.get": ["requests.delete"], "requests.delete": ["requests.get"],
                "requests.post": ["requests.put"], "requests.put": ["requests.post"]},
    # stateful PyTorch: the other mode, a neighbouring loss, autograd left on where it must be off
    "tensor-frontier": {"model.train": ["model.eval"], "model.eval": ["model.train"], "F.mse_loss": ["F.l1_loss"],
                        "F.cross_entropy": ["F.nll_loss"], "torch.no_grad": ["torch.enable_grad"]},
    "voice": {"text_to_speech": ["speech_to_speech"], "speech_to_speech": ["text_to_speech", "isolate_audio"],
              "isolate_audio": ["speech_to_speech", "speech_to_text"], "speech_to_text": ["isolate_audio"]},
}
# Replacements that accept fewer arguments than the call they replace: (positional count, keyword names).
SIGNATURES = {"torch.matmul": (2, set()), "isolate_audio": (1, set()), "speech_to_text": (1, {"diarize"}),
              "speech_to_speech": (1, {"voice_name"})}
TRANSPOSE = "torch.transpose"  # its two dims are symmetric (swapping them is equivalent); other pairs are confusions
# functions whose two arguments trade places with no change (equivalent by construction): the same person, and a
# squared error (its gradient with respect to the model's output is the same either way round)
SYMMETRIC = {"same_person", "F.mse_loss"}
AUTOGRAD_OFF = "torch.no_grad"  # turned on again only where the block changes a tensor in place (elsewhere: values)
# Values a keyword argument can take instead of its own (the call's documented options).
KEYWORD_OPTIONS = {"padding": (0, 1, "same", "valid"), "stride": (1, 2), "dilation": (1, 2), "dim": (0, 1, 2, 3)}
SAME_OPTION = {"padding": {0, "valid"}}  # conv2d's padding=0 is padding='valid': equivalent by construction
# String literals that stand for one of a few names: a session type, a query field, a data key, a voice filter.
STRING_OPTIONS = {
    "session": [("virtual_study", "group", "comparison_session", "main_session", "custom_gene_list"),
                ("data.title", "data.owner", "data.members", "data.description"),
                ("title", "description", "owner", "members"), ("id", "data")],
    "voice": [("feminine", "masculine"), ("premade", "professional", "cloned", "generated", "famous")],
}
# Variables that hold the same kind of value (by name without its number); any other prefix is its own kind.
KINDS = {"tensor": {"x": "act", "v": "act"},
         # the frontier tier: a session read before a change (found, s) and one read after it (current)
         "session-frontier": {"found": "session", "s": "session", "current": "session", "matches": "list",
                              "sessions": "list"},
         "session": {"found": "list", "sessions": "list"},
         "voice": {"s": "speech", "user_speech": "speech", "t": "text", "message": "text",
                   "category": "filter", "gender": "filter"}}
FLIPS = {ast.Gt: (ast.Lt, ast.GtE), ast.Lt: (ast.Gt, ast.LtE), ast.GtE: (ast.Gt, ast.LtE), ast.LtE: (ast.Lt, ast.GtE),
         ast.Eq: (ast.NotEq, ast.Gt, ast.Lt), ast.NotEq: (ast.Eq,)}


def kind(scenario: str, name: str) -> str:
    prefix = re.sub(r"\d+$", "", name)
    return KINDS.get(scenario, {}).get(prefix, prefix)


def frontier(task) -> bool:
    """A frontier-tier program: it defines a helper or loops (the paper's programs are straight, with if/else)."""
    return any(isinstance(n, (ast.For, ast.While, ast.FunctionDef)) for n in ast.walk(ast.parse(task.reference_program)))


def assigned(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def passed_always(tree: ast.Module) -> set[tuple[int, str]]:
    """(a use of a helper's parameter, the name every call of that helper passes for it): replacing the one with the
    other changes nothing (equivalent by construction), as when `is_member(s, email)` is only ever called with
    `email1`. Swapping that argument at a call site is a mutant of its own."""
    calls: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.setdefault(node.func.id, []).append(node)
    out = set()
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        sites = calls.get(fn.name, [])
        for i, param in enumerate(a.arg for a in fn.args.args):
            names = {c.args[i].id if i < len(c.args) and isinstance(c.args[i], ast.Name) else None for c in sites}
            if len(names) == 1 and None not in names:
                only = next(iter(names))
                out |= {(id(n), only) for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == param}
    return out


def units(body: list[ast.stmt], scope: set[str]):
    """(statement, the expression mutated in it, the variables defined before it) in program order. The bodies of
    `if`, `for`, `while` and function definitions are walked statement by statement (a loop's variable and a
    function's parameters in scope inside)."""
    scope = set(scope)
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield stmt, stmt.test, frozenset(scope)
            yield from units(stmt.body, scope)
            yield from units(stmt.orelse, scope)
        elif isinstance(stmt, (ast.For, ast.While)):
            yield stmt, stmt.iter if isinstance(stmt, ast.For) else stmt.test, frozenset(scope)
            inner = scope | (assigned(stmt.target) if isinstance(stmt, ast.For) else set())
            yield from units(stmt.body, inner)
        elif isinstance(stmt, ast.FunctionDef):
            yield from units(stmt.body, scope | {a.arg for a in stmt.args.args} | {stmt.name})
        else:
            yield stmt, stmt, frozenset(scope)
        scope |= assigned(stmt)


def literal_values(scenario: str, value, keyword: str | None, in_fstring: bool) -> list:
    """What a literal could have been instead: +/-1, the call's other options, another name of the same group."""
    out = list(KEYWORD_OPTIONS.get(keyword, ()))
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        out += [value - 1, value + 1]
    elif isinstance(value, float):
        out += [round(v, 2) for v in (value - 0.1, value + 0.1) if 0 <= v <= 1]
    elif isinstance(value, str):
        for group in STRING_OPTIONS.get(scenario, []):
            if in_fstring:  # a path: swap one segment, e.g. /group/ -> /virtual_study/
                parts = value.split("/")
                out += ["/".join(o if p == m else p for p in parts) for m in group if m in parts for o in group]
            elif value in group:
                out += list(group)
    if keyword in SAME_OPTION and value in SAME_OPTION[keyword]:
        out = [v for v in out if v not in SAME_OPTION[keyword]]
    return [v for v in out if v != value or type(v) is not type(value)]


class Mutator:
    """Every mutant of one reference program, as (operator, code); each edit is applied to a fresh copy."""

    def __init__(self, task: dict):
        self.scenario = task.scenario + ("-frontier" if frontier(task) else "")
        self.tree = ast.parse(task.reference_program)
        self.order = {id(n): i for i, n in enumerate(ast.walk(self.tree))}
        self.setup_names = assigned(ast.parse(task.setup_code))  # x1, data1, COND, ...
        self.passed = passed_always(self.tree)
        self.parent = {id(c): p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}

    def make(self, op: str, node: ast.AST, edit) -> tuple[str, str]:
        tree = copy.deepcopy(self.tree)
        edit(list(ast.walk(tree))[self.order[id(node)]])
        return op, ast.unparse(ast.fix_missing_locations(tree))

    def mutants(self):
        yield from self.deletions(self.tree)
        yield from self.loops()
        for stmt, expr, scope in units(self.tree.body, self.setup_names):
            parents = {id(c): p for p in ast.walk(expr) for c in ast.iter_child_nodes(p)}
            for node in ast.walk(expr):
                if isinstance(node, ast.Call):
                    yield from self.calls(node)
                elif isinstance(node, ast.Constant):
                    yield from self.literals(node, parents)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in scope:
                    for other in sorted(scope - {node.id}):
                        if kind(self.scenario, other) == kind(self.scenario, node.id) \
                                and (id(node), other) not in self.passed and not self.guarded(node, other):
                            yield self.make("replace_var", node, lambda n, o=other: setattr(n, "id", o))
            if isinstance(stmt, ast.If):
                yield self.make("negate_cond", stmt, lambda n: setattr(n, "test", ast.UnaryOp(ast.Not(), n.test)))
                if isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
                    for new in FLIPS.get(type(stmt.test.ops[0]), ()):
                        yield self.make("swap_compare", stmt.test, lambda n, c=new: setattr(n, "ops", [c()]))
            elif "RESULT" in assigned(stmt) and isinstance(stmt.value, ast.List):
                elts = stmt.value.elts
                for i in range(len(elts)):
                    yield self.make("drop_result", stmt.value, lambda n, i=i: n.elts.pop(i))
                    for j in range(i + 1, len(elts)):
                        yield self.make("swap_result", stmt.value, lambda n, i=i, j=j: swap(n.elts, i, j))

    def guarded(self, node: ast.Name, other: str) -> bool:
        """Inside `if same_person(a, b):`, `b` written with `other` for its variable is `a`, and so the same person:
        `found1['data']['owner']` replaced by `s['data']['owner']` in a loop over the sessions whose owner is
        found1's owner is equivalent by construction."""
        expr = node
        while isinstance(self.parent.get(id(expr)), ast.Subscript) and self.parent[id(expr)].value is expr:
            expr = self.parent[id(expr)]
        renamed = copy.deepcopy(expr)
        for n in ast.walk(renamed):
            if isinstance(n, ast.Name) and n.id == node.id:
                n.id = other
        pair = {ast.unparse(expr), ast.unparse(renamed)}
        up = self.parent.get(id(node))
        while up is not None:
            test = getattr(up, "test", None)
            if isinstance(up, ast.If) and isinstance(test, ast.Call) and isinstance(test.func, ast.Name) \
                    and test.func.id in SYMMETRIC and {ast.unparse(a) for a in test.args} == pair:
                return True
            up = self.parent.get(id(up))
        return False

    def deletions(self, owner: ast.AST):
        for field in ("body", "orelse"):
            for i, stmt in enumerate(getattr(owner, field, [])):
                if "RESULT" not in assigned(stmt):
                    yield self.make("delete_stmt", owner, lambda n, f=field, i=i: delete(getattr(n, f), i))
                if isinstance(stmt, (ast.If, ast.For, ast.While, ast.FunctionDef)):
                    yield from self.deletions(stmt)

    def loops(self):
        """The frontier slips over loops and picks: a loop that stops after its first pass, a `for` over all but the
        last item, max for min (and back), and an extreme's ties broken the other way (its sequence reversed)."""
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.For, ast.While)):
                yield self.make("loop_once", node, lambda n: n.body.append(ast.Break()))
                if isinstance(node, ast.For):
                    cut = lambda n: setattr(n, "iter", ast.Subscript(n.iter, ast.Slice(upper=ast.Constant(-1)),  # noqa: E731
                                                                    ast.Load()))
                    yield self.make("loop_bound", node, cut)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min") \
                    and node.args:
                other = "min" if node.func.id == "max" else "max"
                yield self.make("swap_extreme", node, lambda n, o=other: setattr(n.func, "id", o))
                if any(k.arg == "key" for k in node.keywords):
                    yield self.make("swap_tiebreak", node, lambda n: n.args.__setitem__(0, flip_order(n.args[0])))

    def calls(self, call: ast.Call):
        name = ast.unparse(call.func)
        keywords = {k.arg for k in call.keywords}
        if isinstance(call.func, ast.Attribute) and call.func.attr == "clone" and not call.args:
            yield self.make("drop_clone", call, view_instead)
        for alt in SWAPS.get(self.scenario, {}).get(name, []):
            if name == AUTOGRAD_OFF and not self.changes_in_place(call):
                continue  # a forward pass with autograd on computes the same values: equivalent by construction
            npos, kws = SIGNATURES.get(alt, (len(call.args), keywords))
            if len(call.args) <= npos and keywords <= kws:
                yield self.make("swap_api", call, lambda n, a=alt: setattr(n, "func", ast.parse(a, mode="eval").body))
        if name == TRANSPOSE and len(call.args) == 3 and all(isinstance(a, ast.Constant) for a in call.args[1:]):
            dims = {call.args[1].value, call.args[2].value}
            for pair in [(a, b) for a in range(4) for b in range(a + 1, 4) if {a, b} != dims]:
                edit = lambda n, p=pair: setattr(n, "args", n.args[:1] + [ast.Constant(d) for d in p])  # noqa: E731
                yield self.make("swap_api", call, edit)
        owners = [] if name in SYMMETRIC else [(call, "args")]
        for owner, field in owners + [(a, "elts") for a in call.args if isinstance(a, (ast.List, ast.Tuple))]:
            seq = getattr(owner, field)
            for i in range(len(seq)):
                for j in range(i + 1, len(seq)):
                    if isinstance(seq[i], ast.Constant) != isinstance(seq[j], ast.Constant):
                        continue  # a literal and a variable trading places is no plausible slip, just a crash
                    if name == TRANSPOSE and owner is call and (i, j) == (1, 2):
                        continue  # transpose(x, a, b) is transpose(x, b, a): equivalent by construction
                    yield self.make("swap_args", owner, lambda n, f=field, i=i, j=j: swap(getattr(n, f), i, j))

    def changes_in_place(self, call: ast.Call) -> bool:
        """Whether the `with` block that `call` opens calls a tensor's in-place method (`mul_`, `clamp_`, ...)."""
        block = self.parent.get(id(self.parent.get(id(call))))
        return isinstance(block, ast.With) and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr.endswith("_")
            and not n.func.attr.startswith("_") for stmt in block.body for n in ast.walk(stmt))

    def literals(self, const: ast.Constant, parents: dict):
        parent = parents.get(id(const))
        if const.value is None or isinstance(parent, ast.FormattedValue):
            return
        keyword = parent.arg if isinstance(parent, ast.keyword) else None
        for value in literal_values(self.scenario, const.value, keyword, isinstance(parent, ast.JoinedStr)):
            yield self.make("change_literal", const, lambda n, v=value: setattr(n, "value", v))


def view_instead(call: ast.Call) -> None:
    """`t.clone()` becomes `t.view_as(t)`: the same values, sharing `t`'s storage (as if the copy were left out)."""
    call.args = [copy.deepcopy(call.func.value)]
    call.func.attr = "view_as"


def flip_order(seq: ast.expr) -> ast.expr:
    """`x[::-1]` for `x`, and `x` for `x[::-1]`."""
    if isinstance(seq, ast.Subscript) and isinstance(seq.slice, ast.Slice) and ast.unparse(seq.slice) == "::-1":
        return seq.value
    return ast.Subscript(seq, ast.Slice(step=ast.UnaryOp(ast.USub(), ast.Constant(1))), ast.Load())


def swap(seq: list, i: int, j: int) -> None:
    seq[i], seq[j] = seq[j], seq[i]


def delete(body: list, i: int) -> None:
    del body[i]
    if not body:
        body.append(ast.Pass())


def changed_line(before: str, after: str) -> tuple[str, str]:
    a, b = before.splitlines(), after.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            return (" / ".join(x.strip() for x in a[i1:i2]) or "(nothing)",
                    " / ".join(x.strip() for x in b[j1:j2]) or "(deleted)")
    return "", ""


def select(task: dict, per_task: int, seed: int) -> list[tuple[str, str]]:
    """Distinct mutants, none identical to the reference; at most `per_task`, round-robin over the operators in a
    shuffled order seeded by the task id, so every operator that applies is represented."""
    reference = ast.unparse(ast.parse(task.reference_program))
    seen, by_op = {reference}, defaultdict(list)
    for op, code in Mutator(task).mutants():
        if code not in seen:
            seen.add(code)
            by_op[op].append(code)
    rng = random.Random(f"{seed}:{task.task_id}")
    queues = [(op, by_op[op]) for op in OPERATORS if by_op[op]]
    rng.shuffle(queues)
    for _, q in queues:
        rng.shuffle(q)
    chosen = []
    while len(chosen) < per_task and any(q for _, q in queues):
        for op, q in queues:
            if q and len(chosen) < per_task:
                chosen.append((op, q.pop()))
    return chosen


def rate(killed: int, total: int) -> str:
    return f"{total - killed}/{total} survived ({(total - killed) / total:.1%})" if total else "0 mutants"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, help="a dataset folder (python -m builder --out FOLDER)")
    p.add_argument("--per-task", type=int, default=40, help="mutants per task at most (default 40)")
    p.add_argument("--seed", type=int, default=0, help="which mutants are chosen when a task has more (default 0)")
    p.add_argument("--out", default="mutation-audit", help="where samples, scores and reports go")
    p.add_argument("--scenario", help="comma-separated scenarios (default: all)")
    p.add_argument("--workers", type=int, help="sandbox workers for scoring (default: evaluate's)")
    p.add_argument("--timeout", type=float, metavar="TIMEOUT_S",
                   help="seconds per test case (default: evaluate's); a mutant that loops for ever is killed by "
                        "this limit, so a short one makes an audit of looping programs faster")
    a = p.parse_args(argv)
    dataset = Path(a.dataset).expanduser().resolve()
    try:
        if not dataset.is_dir():
            raise DatasetError(f"no dataset folder {a.dataset} (build one with python -m builder --out {a.dataset})")
        tasks, _ = load_tasks(str(dataset), scenarios=a.scenario.split(",") if a.scenario else None)
    except DatasetError as exc:
        print(f"mutation_audit: {exc}", file=sys.stderr)
        return 2

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    samples, rows = [], []  # rows[k] describes samples[k]; sample indices count per task, as evaluate does
    for t in tasks:
        reference = ast.unparse(ast.parse(t.reference_program))
        samples.append({"task_id": t.task_id, "code": t.reference_program})
        rows.append({"task_id": t.task_id, "scenario": t.scenario, "sample": 0, "operator": "reference"})
        for k, (op, code) in enumerate(select(t, a.per_task, a.seed), 1):
            before, after = changed_line(reference, code)
            samples.append({"task_id": t.task_id, "code": code})
            rows.append({"task_id": t.task_id, "scenario": t.scenario, "sample": k, "operator": op,
                         "before": before, "after": after})
    (out / "mutants.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (out / "mutants.map.jsonl").write_text("".join(json.dumps({"line": n, **r}) + "\n" for n, r in enumerate(rows, 1)))

    cmd = [sys.executable, "-m", "evaluate", "--samples", str((out / "mutants.jsonl").resolve()),
           "--dataset", str(dataset), "--out", str((out / "scores").resolve())]
    cmd += ["--scenario", a.scenario] if a.scenario else []
    cmd += ["--workers", str(a.workers)] if a.workers else []
    cmd += ["--timeout", str(a.timeout)] if a.timeout else []
    print(f"scoring {len(samples) - len(tasks)} mutants of {len(tasks)} tasks (and each reference as a control)",
          flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"mutation_audit: evaluate failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}", file=sys.stderr)
        return 1
    report = json.loads(next((out / "scores").rglob("results.json")).read_text())
    status = {(s["task_id"], s["sample"]): s["status"] for s in report["samples"]}

    broken = sorted({r["task_id"] for r in rows if r["sample"] == 0 and status[(r["task_id"], 0)] != "pass"})
    mutants = [dict(r, status=status[(r["task_id"], r["sample"])]) for r in rows
               if r["operator"] != "reference" and r["task_id"] not in broken]
    survivors = [m for m in mutants if m["status"] == "pass"]
    total, killed = len(mutants), len(mutants) - len(survivors)
    per = {"scenario": defaultdict(Counter), "operator": defaultdict(Counter)}
    for m in mutants:
        for key in per:
            per[key][m[key]]["total"] += 1
            per[key][m[key]]["killed"] += m["status"] != "pass"

    print(f"\nmutants: {total}  killed: {killed}  survived: {len(survivors)}  ({rate(killed, total)})")
    print("killed by status: " + ", ".join(f"{k} {v}" for k, v in Counter(m["status"] for m in mutants).most_common()
                                            if k != "pass"))
    for key, table in per.items():
        print(f"\nper {key}:")
        for name in sorted(table, key=lambda n: OPERATORS.index(n) if n in OPERATORS else n):
            print(f"  {name:16} {rate(table[name]['killed'], table[name]['total'])}")
    if broken:
        print(f"\nreferences that fail (their tasks are left out): {', '.join(broken)}")
    lines = [f"{m['task_id']}  {m['operator']}:  {m['before']}  ->  {m['after']}" for m in survivors]
    (out / "survivors.txt").write_text("".join(line + "\n" for line in lines))
    print(f"\nsurvivors ({len(survivors)}, also in {out / 'survivors.txt'}):")
    print("\n".join(f"  {line}" for line in lines) or "  none")
    (out / "report.json").write_text(json.dumps({
        "dataset": str(dataset), "per_task": a.per_task, "seed": a.seed, "total": total, "killed": killed,
        "survived": len(survivors), "broken_references": broken,
        **{f"per_{key}": {k: dict(v) for k, v in table.items()} for key, table in per.items()},
        "survivors": survivors}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
