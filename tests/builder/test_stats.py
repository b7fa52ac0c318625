"""Table I: data-flow analysis of reference programs, cl100k token counts, the card's table and scripts/table1.py."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from builder.fuzz import CoverageRecorder, NoValidCall
from builder.program import generate_program
from builder.stats import analyse, count_tokens, format_table, table1, task_stats
from scenarios import get_scenario, scenario_names

ROOT = Path(__file__).resolve().parents[2]

CHAIN = """\
v1 = torch.permute(x1, (0, 2, 1, 3))
v2 = torch.cat([v1, x2], dim=1)
v3, v4 = torch.split(v2, [1, 2], dim=1)
v5 = torch.transpose(x2, 0, 1)
RESULT = [v3, v4, v5]
"""

BRANCH = """\
a1 = make(x)
a2 = make(a1)
if a2.size > COND:
    a3 = make(a2)
    a4 = make(a3)
    RESULT = [a4]
else:
    a5 = make(x)
    RESULT = [a5, a2]
"""


def test_data_flow_of_a_straight_program():
    flow = analyse(CHAIN)
    assert [c.outputs for c in flow.calls] == [["v1"], ["v2"], ["v3", "v4"], ["v5"]]  # RESULT is not a call
    assert flow.paths == [[0, 1, 2, 3]]
    assert flow.path_depth() == 3  # permute -> cat -> split; the transpose starts a chain of its own
    assert flow.binding_count() == 2  # v1 and v2 link calls; v3, v4, v5 only reach RESULT
    assert flow.api_pairs(["permute", "cat", "split", "transpose"]) == {("permute", "cat"), ("cat", "split")}


def test_data_flow_follows_each_branch_separately():
    flow = analyse(BRANCH)
    assert flow.paths == [[0, 1, 2, 3], [0, 1, 4]]
    assert flow.path_depth() == 4  # a1 -> a2 -> a3 -> a4 on the then path
    assert flow.binding_count() == 3  # a1, a2, a3 (the condition reads a2 but is not a call)
    with pytest.raises(ValueError, match="5 calls but api_calls lists 2"):
        flow.api_pairs(["make", "make"])


@pytest.mark.parametrize("scenario", scenario_names())
def test_data_flow_agrees_with_the_generator_on_every_scenario(scenario):
    """The card's numbers come from the program text; they must equal what the fuzzer knew when it built it,
    and the pairs seen along data-flow edges must be exactly the pairs the coverage recorder counted."""
    sc = get_scenario(scenario)
    recorder = CoverageRecorder()
    pairs, checked = set(), 0
    for i in range(150):
        try:
            program = generate_program(sc, random.Random(f"stats-test/{scenario}/{i}"), recorder)
        except NoValidCall:
            continue
        flow = analyse(program.reference_code())
        apis = [c.api for c in program.all_calls]
        assert len(flow.calls) == len(program.all_calls)
        assert flow.path_depth() == program.path_depth(), program.reference_code()
        assert flow.binding_count() == program.binding_count(), program.reference_code()
        pairs |= flow.api_pairs(apis)
        checked += 1
    assert checked > 100
    assert pairs == recorder.api_pairs([a.name for a in sc.apis])


def test_stored_fields_agree_with_the_data_flow_of_the_stored_references(small_tasks):
    for t in small_tasks:
        s = task_stats(t)
        assert (s["api_calls"], s["path_depth"], s["binding_count"], s["has_branch"]) == (
            t.num_api_calls, t.path_depth, t.binding_count, t.has_branch), t.task_id


def test_tokens_are_cl100k():
    assert count_tokens("hello world") == 2  # cl100k_base: [15339, 1917]
    assert count_tokens("") == 0
    from core.backends.tokens import _encoding

    assert _encoding().encode("hello world") == [15339, 1917]


def test_table1_rows_and_pooled_row(small_build, small_tasks):
    _, report = small_build
    rows = table1(small_tasks)
    assert list(rows) == ["tensor", "all"]
    row = rows["tensor"]
    assert row["tasks"] == len(small_tasks) == rows["all"]["tasks"]
    for metric in ("instruction_tokens", "code_tokens", "api_calls", "path_depth", "binding_count"):
        m = row[metric]
        assert m["min"] <= m["mean"] <= m["max"]
    assert row["api_calls"]["mean"] == pytest.approx(report["statistics"]["tensor"]["num_api_calls"], abs=0.01)
    assert row["with_branch"] == report["statistics"]["tensor"]["with_branch"]
    assert row["pair_space"] == 36 and 0 < row["pair_coverage"] <= 1
    if not report["rejections"]:  # the recorder also counts pairs of rejected programs
        assert row["pair_coverage"] == pytest.approx(report["statistics"]["tensor"]["pair_coverage"], abs=1e-3)


def test_card_carries_table1_of_this_build(small_dataset, small_tasks):
    text = (small_dataset / "README.md").read_text()
    table = format_table(table1(small_tasks))
    assert table in text
    assert "cl100k_base" in text and "## License" in text


def test_table1_script_prints_the_table(small_dataset, small_tasks):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "table1.py"), str(small_dataset)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert format_table(table1(small_tasks)) in out.stdout
    assert "disagrees" not in out.stderr
