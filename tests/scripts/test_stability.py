"""scripts/stability.py, interchangeability of fresh splits measured: its statistics against known values, its
synthetic models of graded skill on a small build, and the script end to end on two tiny splits."""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import math
import random
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "stability.py"


def load_script():
    spec = importlib.util.spec_from_file_location("stability", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


st = load_script()


# ------------------------------------------------------------------------------------------------ statistics


@pytest.mark.parametrize("x, df, p", [(3.841, 1, 0.05), (5.991, 2, 0.05), (7.815, 3, 0.05), (18.307, 10, 0.05),
                                      (6.635, 1, 0.01), (9.210, 2, 0.01), (124.342, 100, 0.05)])
def test_chi_square_tail_at_tabled_critical_values(x, df, p):
    assert st.chi2_sf(x, df) == pytest.approx(p, abs=2e-4)


def test_chi_square_tail_against_closed_forms():
    for x in (0.01, 0.5, 1.0, 2.0, 7.5, 30.0, 200.0):
        assert st.chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-10)  # df 2: an exponential
        assert st.chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9, abs=1e-300)
    assert st.chi2_sf(0.0, 3) == 1.0
    assert st.chi2_sf(50.0, 50) == pytest.approx(0.4734, abs=1e-4)  # the median of chi2_50 is near 49.3
    tail = [st.chi2_sf(x, 4) for x in np.linspace(0, 40, 81)]
    assert all(a >= b for a, b in zip(tail, tail[1:])) and tail[-1] < 1e-7
    with pytest.raises(ValueError):
        st.chi2_sf(1.0, 0)


def test_homogeneity_does_not_reject_identical_splits():
    test = st.homogeneity([(18, 30), (18, 30), (18, 30)])
    assert test["statistic"] == 0 and test["p"] == pytest.approx(1.0) and test["df"] == 2
    assert test["method"] == "chi-square"
    s = st.stability([(18, 30), (18, 30), (18, 30)])
    assert s.stable and s.sd == 0 and s.ratio == 0


def test_homogeneity_rejects_clearly_different_splits():
    test = st.homogeneity([(27, 30), (6, 30), (15, 30)])
    assert test["p"] < 1e-6
    s = st.stability([(27, 30), (6, 30), (15, 30)])
    assert not s.stable and s.sd > s.expected_se


def test_nothing_to_test_at_zero_or_full_marks():
    assert st.homogeneity([(0, 30), (0, 28)]) is None
    assert st.homogeneity([(30, 30), (28, 28)]) is None
    s = st.stability([(30, 30), (28, 28)])
    assert s.constant and s.stable and s.ratio is None


def test_small_counts_use_a_permutation_test_close_to_the_exact_one():
    """Two splits: given the margins, split 0's passes are hypergeometric, so the exact p-value is a finite sum."""
    counts = [(3, 10), (0, 12)]
    test = st.homogeneity(counts)
    assert test["method"].startswith("permutation") and test["min_expected"] < st.MIN_EXPECTED
    sizes = np.array([10.0, 12.0])
    observed = st._statistic(np.array([3.0, 0.0]), sizes)
    exact = sum(math.comb(10, x) * math.comb(12, 3 - x) / math.comb(22, 3) for x in range(4)
                if st._statistic(np.array([float(x), 3.0 - x]), sizes) >= observed - 1e-9)
    assert test["p"] == pytest.approx(exact, abs=0.01)
    assert st.homogeneity(counts) == test  # seeded: the same counts give the same p-value


def test_equal_splits_statistic_is_k_minus_one_times_the_squared_ratio():
    """Why "SD <= SE" alone is a test at level P(chi2_{K-1} > K-1): X^2 = (K-1) (SD/SE)^2 for equal sizes."""
    counts = [(20, 40), (26, 40), (17, 40), (23, 40)]
    s = st.stability(counts)
    assert s.test["statistic"] == pytest.approx((len(counts) - 1) * s.ratio ** 2)
    assert st.sd_rule_false_alarm(2) == pytest.approx(0.3173, abs=1e-4)
    assert st.sd_rule_false_alarm(3) == pytest.approx(math.exp(-1))


def test_holm_adjusts_for_several_graded_models():
    adjusted = st.holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5})
    assert adjusted == pytest.approx({"a": 0.04, "c": 0.09, "b": 0.09, "d": 0.5})  # 4p, 3p, max(2p, 0.09), p
    assert st.holm({}) == {}


def test_bad_input_is_one_line(capsys, tmp_path):
    for argv, words in ((["--splits", "1", "--n", "3"], "--splits"),
                        (["--splits", "2", "--n", "3", "--rates", "0.1,1.5"], "--rates"),
                        (["--splits", "2", "--n", "3", "--scenarios", "tensor,nope"], "nope"),
                        (["--splits", "2", "--n", "3", "--answers", str(tmp_path / "none.jsonl")], "no such file"),
                        (["--splits", "2", "--n", "3", "--tier", "frontier", "--scenarios", "bank"], "frontier"),
                        (["--splits", "2", "--n", "3", "--created-at", "2026-13-01"], "--created-at")):
        assert st.main(argv + ["--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
    assert not (tmp_path / "out").exists()  # refused before any work


def test_a_split_folder_is_reused_only_when_its_manifest_matches(tmp_path):
    from argparse import Namespace

    a = Namespace(scenario_list=["tensor"], n=4, tier="paper", created_at=None, base=None, base_seeds=[])
    want = st.wanted_config(a, 7)
    folder = tmp_path / "split-0"
    assert st.manifest_mismatch(folder, want) == "no readable MANIFEST.json"
    folder.mkdir()
    config = {**want, "out": "elsewhere", "workers": 2, "created_at": "2026-01-01"}  # bytes-neutral, or not fixed
    (folder / "MANIFEST.json").write_text(json.dumps({"seed": 7, "config": config}))
    assert st.manifest_mismatch(folder, want) is None
    (folder / "MANIFEST.json").write_text(json.dumps({"seed": 7, "config": {**config, "n": 5}}))
    assert st.manifest_mismatch(folder, want) == "its n is 5, not 4"
    (folder / "MANIFEST.json").write_text(json.dumps({"seed": 7, "config": {**config, "calls_per_path": 7}}))
    assert "calls_per_path" in st.manifest_mismatch(folder, want)
    assert st.split_seeds(3, 4) == [3000, 3001, 3002, 3003]
    assert st.release_seed(3) == 3999 and st.release_seed(3) not in st.split_seeds(3, st.MAX_SPLITS)
    # A split drawn fresh against a release records it: a folder built unmatched is not that split.
    a.base, a.base_seeds = tmp_path / "release", [3999]
    fresh = st.wanted_config(a, 7)
    assert (fresh["fresh"], fresh["against"], fresh["avoid_seeds"]) == (True, [str(tmp_path / "release")], [3999])
    (folder / "MANIFEST.json").write_text(json.dumps({"seed": 7, "config": config}))
    assert st.manifest_mismatch(folder, fresh) == "its against is [], not [" + repr(str(tmp_path / "release")) + "]"
    assert st.wanted_config(a, 3999, fresh=False) == {**want, "seed": 3999}  # --matched's release itself


def test_against_must_be_a_release_whose_seeds_no_split_uses(capsys, tmp_path):
    release = tmp_path / "release"
    argv = ["--splits", "3", "--n", "3", "--out", str(tmp_path / "out")]
    assert st.main(argv + ["--against", str(release)]) == 2
    assert "not a dataset folder" in capsys.readouterr().err
    release.mkdir()
    (release / "MANIFEST.json").write_text(json.dumps({"seed": 5, "config": {"seed": 5, "avoid_seeds": [2]}}))
    assert st.main(argv + ["--against", str(release)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "used seed 2, which split 2 of --seed 0 would use" in err[0]
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------- mutation

PROGRAM = """\
a = f(x)
b = g(a, 2)
if b > COND:
    c = h(b)
    d = k(c)
    RESULT = [a, d]
else:
    RESULT = [a, b]
"""


def test_single_statement_mutants_are_located_and_composed():
    tree = ast.parse(PROGRAM)
    assert st.call_statements(tree) == [((), 0), ((), 1), (((2, "body"),), 0), (((2, "body"),), 1)]
    swapped = ast.parse(PROGRAM.replace("g(a, 2)", "g(2, a)"))
    dropped = ast.parse(PROGRAM.replace("    c = h(b)\n", ""))
    (key1, new1), (key2, new2) = st.locate(tree, swapped), st.locate(tree, dropped)
    assert key1 == ((), 1) and ast.unparse(new1) == "b = g(2, a)"
    assert key2 == (((2, "body"),), 0) and new2 is None
    both = st.compose(tree, {key1: new1, key2: new2})
    assert both == ast.unparse(ast.parse(PROGRAM.replace("g(a, 2)", "g(2, a)").replace("    c = h(b)\n", "")))
    assert st.locate(tree, ast.parse(PROGRAM.replace("b > COND", "b >= COND")))[0] == ((), 2)  # the if: no call
    assert st.locate(tree, ast.parse(PROGRAM.replace("f(x)", "f(y)").replace("h(b)", "h(a)"))) is None  # two edits
    assert st.compose(tree, {}) == ast.unparse(tree)


def test_synthetic_models_on_a_small_build(small_dataset, small_tasks):
    manifest = json.loads((small_dataset / "MANIFEST.json").read_text())
    split = st.Split("split-0", small_dataset, manifest["seed"], list(small_tasks), manifest)
    by_task = split.mutants()  # the builder's programs, fuzzed again and checked against the stored references
    calls = 0
    for t in small_tasks:
        task = by_task[t.task_id]
        assert len(task.calls) == t.num_api_calls
        assert all(task.options.get(k) for k in task.calls)  # every call can at least be dropped
        calls += len(task.calls)
        code, changed = task.answer(0.0, random.Random(st.synthetic_seed(split.seed, t.task_id, 0.0)))
        assert code == t.reference_program and changed == 0  # rate 0 is the reference
        code, changed = task.answer(1.0, random.Random(0))
        assert changed == len(task.calls) and code != t.reference_program
        ast.parse(code)
    for rate in (0.2, 0.5):
        mutated, differ = 0, 0
        for t in small_tasks:
            seed = st.synthetic_seed(split.seed, t.task_id, rate)
            code, changed = by_task[t.task_id].answer(rate, random.Random(seed))
            assert (code, changed) == by_task[t.task_id].answer(rate, random.Random(seed))  # seeded: repeatable
            assert (changed > 0) == (code != t.reference_program)
            mutated += changed
            differ += changed > 1
        assert abs(mutated / calls - rate) < 0.15, (rate, mutated, calls)
    assert differ > 0  # at 0.5 some programs carry several composed mutations


# ------------------------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """Two tiny tensor splits, the reference, the null model and one synthetic model: (exit code, stdout, out)."""
    out = tmp_path_factory.mktemp("stability") / "run"
    argv = ["--scenarios", "tensor", "--n", "3", "--splits", "2", "--rates", "0.5", "--workers", "1",
            "--created-at", "2026-01-01", "--out", str(out)]
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        code = st.main(argv)
    return code, buffer.getvalue(), out, argv


@pytest.mark.e2e  # whole runs of the script; the statistics and the split reuse are tested above
def test_end_to_end_on_two_tiny_splits(tiny_run):
    code, stdout, out, _ = tiny_run
    lines = stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == ["split-0", "split-1", "split-0", "split-1"]
    assert "built" in lines[0] and "scored 3 models" in lines[2]
    reference = next(line for line in lines if line.startswith("reference "))
    null = next(line for line in lines if line.startswith("null "))
    assert reference.split()[1::3] == ["100.0%", "100.0%"]  # pass@1 on each split, each with its interval
    assert null.split()[1::3] == ["0.0%", "0.0%"]
    assert "reference: 100.0% on every split, as it must" in stdout and "null: 0.0% on every split" in stdout
    data = json.loads((out / "stability.json").read_text())
    models = {m["name"]: m for m in data["models"]}
    assert [s["pass@1"] for s in models["reference"]["splits"]] == [1.0, 1.0]
    assert [s["pass@1"] for s in models["null"]["splits"]] == [0.0, 0.0]
    synthetic = models["rate-0.5"]
    assert all(s["calls"] > 0 and 0 < s["mutated"] <= s["calls"] for s in synthetic["splits"])
    assert all(s["ci95"][0] <= s["pass@1"] <= s["ci95"][1] for s in synthetic["splits"])
    assert data["instruments_ok"] is True
    assert [s["seed"] for s in data["splits"]] == [0, 1]
    final = lines[-2]  # the last line names the JSON written
    assert final.startswith("every graded model stable: ") and (code == 0) == final.startswith(
        "every graded model stable: yes")
    assert code in (0, 1)


@pytest.mark.e2e  # whole runs of the script; the statistics and the split reuse are tested above
def test_a_rerun_reuses_the_splits_and_scores(tiny_run, capsys):
    code, stdout, out, argv = tiny_run
    before = json.loads((out / "stability.json").read_text())
    assert st.main(argv) == code
    again = capsys.readouterr().out
    assert "split-0: reusing" in again and "split-1: reusing" in again
    assert again.count("(reused)") == 6
    after = {m["name"]: m for m in json.loads((out / "stability.json").read_text())["models"]}
    assert all(after[m["name"]]["splits"] == m["splits"] for m in before["models"])


@pytest.mark.e2e  # whole runs of the script; the statistics and the split reuse are tested above
def test_matched_splits_are_fresh_against_a_release_built_first(tmp_path):
    """--matched: the release is built first (seed 999), each split is a fresh split of it (no task repeated,
    matched stratum by stratum), and the synthetic models find their programs in the split's larger pool."""
    out = tmp_path / "run"
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        code = st.main(["--scenarios", "tensor", "--n", "3", "--splits", "2", "--rates", "0.5", "--workers", "1",
                        "--created-at", "2026-01-01", "--matched", "--out", str(out)])
    lines = buffer.getvalue().splitlines()
    assert code in (0, 1)
    assert lines[0].startswith(f"release: built {out / 'release'} (seed 999") and "; matched:" not in lines[0]
    assert lines[1].startswith("split-0: built") and "; matched: tensor gap " in lines[1]
    from core.records import load_tasks

    release = {t.reference_program for t in load_tasks(str(out / "release"))[0]}
    data = json.loads((out / "stability.json").read_text())
    assert data["settings"]["against"] == str(out / "release")
    for s in data["splits"]:
        config = json.loads((Path(s["folder"]) / "MANIFEST.json").read_text())["config"]
        assert config["fresh"] and config["against"] == [str(out / "release")] and config["avoid_seeds"] == [999]
        assert not release & {t.reference_program for t in load_tasks(s["folder"])[0]}
        assert set(s["match"]) == {"tensor"} and 0 <= s["match"]["tensor"]["gap"] <= 1
    models = {m["name"]: m for m in data["models"]}
    assert [x["pass@1"] for x in models["reference"]["splits"]] == [1.0, 1.0]
    assert all(x["mutated"] > 0 for x in models["rate-0.5"]["splits"])


@pytest.mark.e2e  # whole runs of the script; the statistics and the split reuse are tested above
def test_answers_files_per_split(tiny_run, capsys, tmp_path):
    """An answers file per split ({split} in the path): right on even tasks, RESULT = None on odd ones."""
    _, _, out, argv = tiny_run
    from core.records import load_tasks

    expected = []
    for i in range(2):
        tasks, _ = load_tasks(str(out / f"split-{i}"))
        rows = [{"task_id": t.task_id, "code": t.reference_program if k % 2 == 0 else "RESULT = None"}
                for k, t in enumerate(tasks)]
        (tmp_path / f"mine-split-{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        expected.append(sum(1 for k in range(len(tasks)) if k % 2 == 0) / len(tasks))
    st.main(argv + ["--answers", str(tmp_path / "mine-{split}.jsonl")])
    capsys.readouterr()
    models = {m["name"]: m for m in json.loads((out / "stability.json").read_text())["models"]}
    mine = models["mine-split"]
    assert [s["pass@1"] for s in mine["splits"]] == pytest.approx(expected)
    assert mine["kind"] == "answers" and "verdict" in mine
