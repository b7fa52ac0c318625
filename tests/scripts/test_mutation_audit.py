"""scripts/mutation_audit.py, the auditor's mutation check: run end to end on a tiny three-scenario build."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mutation_audit.py"
PER_TASK = 6  # mutants scored per task: on this build, enough for every operator to make some


def load_script():
    spec = importlib.util.spec_from_file_location("mutation_audit", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    """(completed process, output folder) of the script on 3 programs per scenario; seed 2 has branches in all."""
    root = tmp_path_factory.mktemp("audit")
    dataset, out = root / "stateeval", root / "audit"
    subprocess.run([sys.executable, "-m", "builder", "--n", "3", "--seed", "2", "--out", str(dataset),
                    "--created-at", "2026-01-01", "--workers", "2"], cwd=ROOT, check=True, capture_output=True,
                   timeout=300)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dataset", str(dataset), "--out", str(out),
                           "--per-task", str(PER_TASK), "--workers", "2"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc, out


@pytest.mark.e2e  # a build and an audit of it; the operators are covered one by one below
def test_report_arithmetic(audit):
    proc, out = audit
    report = json.loads((out / "report.json").read_text())
    assert report["broken_references"] == []  # every control passes, so every kill means something
    assert report["total"] > 0 and report["killed"] + report["survived"] == report["total"]
    for key in ("per_scenario", "per_operator"):
        assert sum(v["total"] for v in report[key].values()) == report["total"]
        assert sum(v.get("killed", 0) for v in report[key].values()) == report["killed"]
    assert set(report["per_scenario"]) == {"tensor", "session", "voice"}
    m = re.search(r"mutants: (\d+)\s+killed: (\d+)\s+survived: (\d+)", proc.stdout)
    assert m and [int(g) for g in m.groups()] == [report["total"], report["killed"], report["survived"]]
    survivors = (out / "survivors.txt").read_text().splitlines()
    assert len(survivors) == report["survived"] and all(" -> " in line for line in survivors)
    samples = (out / "mutants.jsonl").read_text().splitlines()
    mapping = [json.loads(line) for line in (out / "mutants.map.jsonl").read_text().splitlines()]
    controls = [row["task_id"] for row in mapping if row["operator"] == "reference"]
    assert sorted(controls) == sorted({row["task_id"] for row in mapping})  # one unmutated reference a task
    assert len(samples) == len(mapping) == report["total"] + len(controls)
    assert all(sum(row["task_id"] == t for row in mapping) <= PER_TASK + 1 for t in controls)  # --per-task


@pytest.mark.e2e
def test_every_operator_produces_mutants(audit):
    _, out = audit
    produced = {json.loads(line)["operator"] for line in (out / "mutants.map.jsonl").read_text().splitlines()}
    assert set(load_script().PAPER_OPERATORS) <= produced


FRONTIER_PROGRAM = """\
def every_session(url):
    sessions, params = [], {}
    while True:
        page = requests.get(url, params=params).json()
        sessions += page["items"]
        if page["next"] is None:
            return sessions
        params = {"cursor": page["next"]}

found1 = max(every_session(group_url), key=lambda s: len(s["data"]["members"]))
changed1 = []
for s in every_session(group_url):
    if s["data"]["owner"] == email1:
        current = requests.get(f"{group_url}/{s['id']}")
        changed1.append(current.json()["version"])
RESULT = [found1["id"], changed1]
"""


def test_frontier_programs_get_the_frontier_operators_inside_loops_and_helpers():
    audit = load_script()
    task = SimpleNamespace(task_id="session-9999", scenario="session", setup_code="email1 = 'a@example.org'\n",
                           reference_program=FRONTIER_PROGRAM)
    chosen = audit.select(task, per_task=1000, seed=0)
    by_op = {}
    for op, code in chosen:
        by_op.setdefault(op, []).append(code)
    assert set(audit.FRONTIER_OPERATORS) - {"drop_clone"} <= set(by_op)  # a session program copies no tensor
    assert any("min(every_session(group_url)" in c for c in by_op["swap_extreme"])
    assert any("every_session(group_url)[::-1]" in c for c in by_op["swap_tiebreak"])
    assert any("for s in every_session(group_url)[:-1]:" in c for c in by_op["loop_bound"])
    # a statement inside the loop body or the helper is deleted on its own (mutants are unparsed: single quotes);
    # a session read after a change may be replaced by the one read before it
    assert any("current = requests.get" not in c and "for s in" in c for c in by_op["delete_stmt"])
    assert any("sessions += page['items']" not in c and "while True" in c for c in by_op["delete_stmt"])
    assert any("changed1.append(s.json()['version'])" in c for c in by_op["replace_var"])


def test_equivalent_mutants_are_generated_once():
    """RESULT = [v1, v1]: dropping either element gives the same program, swapping them gives the reference, and
    transpose(x, 3, 2) is transpose(x, 2, 3); none of these may appear twice (or, the last two, at all)."""
    audit = load_script()
    task = SimpleNamespace(task_id="tensor-9999", scenario="tensor", setup_code="x1 = load_tensor('x1')\nCOND = 1",
                           reference_program="v1 = torch.transpose(x1, 2, 3)\nRESULT = [v1, v1]\n")
    chosen = audit.select(task, per_task=1000, seed=0)
    codes = [code for _, code in chosen]
    assert len(codes) == len(set(codes))
    assert sum(code.endswith("RESULT = [v1]") for code in codes) == 1
    assert "v1 = torch.transpose(x1, 2, 3)\nRESULT = [v1, v1]" not in codes
    assert not any("torch.transpose(x1, 3, 2)" in code for code in codes)
    assert {op for op, _ in chosen} >= {"drop_result", "delete_stmt", "change_literal", "replace_var", "swap_api"}
    assert audit.select(task, per_task=5, seed=0) == audit.select(task, per_task=5, seed=0)  # seeded, repeatable


def test_missing_dataset_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dataset", str(tmp_path / "nope")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "no dataset folder" in proc.stderr


def test_a_symmetric_comparison_is_not_swapped():
    """same_person(a, b) is same_person(b, a): swapping its arguments is equivalent by construction, not a slip."""
    audit = load_script()
    program = ("def same_person(a, b):\n    return a.lower() == b.lower()\n\n"
               "RESULT = [same_person(email1, email1.title()), max(email1, email1.title())]\n")
    task = SimpleNamespace(task_id="session-9998", scenario="session", setup_code="email1 = 'a@example.org'\n",
                           reference_program=program)
    swaps = [code for op, code in audit.select(task, per_task=1000, seed=0) if op == "swap_args"]
    assert swaps and not any("same_person(email1.title(), email1)" in c for c in swaps)


def test_a_helper_parameter_is_not_replaced_by_the_one_value_every_call_passes():
    """`is_member(s, email)` called only as `is_member(s, email1)`: `email` replaced by `email1` inside the helper
    changes nothing (equivalent by construction). Where another call passes another value, the replacement is a
    real mutant and stays."""
    audit = load_script()
    helper = "def is_member(s, email):\n    return email in s\n\n"
    once = SimpleNamespace(task_id="session-9997", scenario="session", setup_code="email1 = 'a'\nemail2 = 'b'\n",
                           reference_program=helper + "RESULT = [is_member(['a'], email1), is_member(['b'], email1)]\n")
    twice = SimpleNamespace(task_id="session-9996", scenario="session", setup_code="email1 = 'a'\nemail2 = 'b'\n",
                            reference_program=helper + "RESULT = [is_member(['a'], email1), is_member(['b'], email2)]\n")

    def inside(task):
        return [code for op, code in audit.select(task, per_task=1000, seed=0)
                if op == "replace_var" and "return email1 in s" in code]

    assert inside(once) == [] and inside(twice)


def test_a_value_is_not_replaced_by_the_one_its_guard_makes_it_equal():
    """Inside `if same_person(s['data']['owner'], found1['data']['owner']):`, found1's owner replaced by s's is
    the same person (equivalent by construction); outside that guard the replacement is a real mutant."""
    audit = load_script()
    program = ("def same_person(a, b):\n    return a.lower() == b.lower()\n\n"
               "found1 = sessions1[0]\nout = []\nfor s in sessions1:\n"
               "    if same_person(s['data']['owner'], found1['data']['owner']):\n"
               "        out.append(found1['data']['owner'])\n"
               "    out.append(found1['data']['title'])\n"
               "RESULT = [out]\n")
    task = SimpleNamespace(task_id="session-9995", scenario="session", setup_code="sessions1 = []\n",
                           reference_program=program)
    codes = [code for op, code in audit.select(task, per_task=1000, seed=0) if op == "replace_var"]
    assert not any("out.append(s['data']['owner'])" in c for c in codes)
    assert any("out.append(s['data']['title'])" in c for c in codes)


TENSOR_FRONTIER = """\
before1 = {name: p.detach().clone() for name, p in model.named_parameters()}
model.train()
for _ in range(2):
    opt.zero_grad()
    loss1 = F.mse_loss(model(x), y)
    loss1.backward()
    opt.step()
with torch.no_grad():
    model.get_parameter('0.weight').mul_(0.5)
model.eval()
with torch.no_grad():
    pred1 = model(x)
model.train()
moved1 = {name: (p.detach() - before1[name]).norm().item() for name, p in model.named_parameters()}
RESULT = [pred1, max(moved1, key=moved1.get)]
"""


def test_stateful_pytorch_programs_get_their_own_slips():
    """A copy left out (a view that follows the optimizer's steps), the other mode, a neighbouring loss, autograd
    on where the program turns it off; and a dropped zero_grad is a deletion."""
    audit = load_script()
    task = SimpleNamespace(task_id="tensor-9999", scenario="tensor", setup_code="model = load_model('model')\n",
                           reference_program=TENSOR_FRONTIER)
    by_op = {}
    for op, code in audit.select(task, per_task=1000, seed=0):
        by_op.setdefault(op, []).append(code)
    assert any("p.detach().view_as(p.detach())" in c for c in by_op["drop_clone"])
    swaps = by_op["swap_api"]
    for changed in ("model.eval()\nfor _ in range(2)", "F.l1_loss(model(x), y)",
                    "with torch.enable_grad():\n    model.get_parameter"):
        assert any(changed in c for c in swaps), changed
    # autograd on for a forward pass computes the same values (equivalent by construction); so does a squared error
    # with its arguments swapped
    assert not any("with torch.enable_grad():\n    pred1" in c for c in swaps)
    assert not any("F.mse_loss(y, model(x))" in c for c in by_op.get("swap_args", []))
    assert any("opt.zero_grad()" not in c for c in by_op["delete_stmt"])
