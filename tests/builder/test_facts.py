"""The fact check (builder/facts.py): every variant states what the oracle depends on, and a text that drops a
split size, a branch constant's role or RESULT's order is caught, in the check and in the build."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from builder import facts
from builder.config import BuildConfig
from builder.fuzz import CoverageRecorder
from builder.pipeline import fuzz, translate
from builder.program import COND, generate_program
from builder.translate import VARIANTS, TemplateTranslator, Translation
from scenarios import get_scenario


@pytest.fixture(scope="module")
def program():
    """A tensor program with a split call, an if/else on COND and at least two RESULT values on some path."""
    scenario, recorder = get_scenario("tensor"), CoverageRecorder()
    for seed in range(500):
        p = generate_program(scenario, random.Random(seed), recorder, branch_probability=1.0)
        if p.has_branch and any(c.api == "split" for c in p.all_calls) and \
                all(len(leaf.path.result_vars(scenario)) >= 2 for leaf in p.leaves()):
            return p
    pytest.fail("no such program in 500 seeds")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_states_every_fact(program, variant):
    text, refs = TemplateTranslator().translate(program, random.Random(1), variant)
    assert facts.missing(text, facts.required(program), refs) == [], text


def test_the_facts_are_the_programs_own(program):
    required = facts.required(program)
    kinds = Counter(f.kind for f in required)
    assert kinds["condition"] == 1 and kinds["result"] == 2 and kinds["value"] >= 2
    sizes = [f for f in required if f.what == "split: sizes"]
    assert sizes and all(f.forms[0].startswith("[") for f in sizes)
    assert {f.forms[0] for f in required if f.kind == "input"} <= {f"`{n}`" for n in program.declarations().inits}


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_text_without_a_split_size_is_caught(program, variant):
    text, refs = TemplateTranslator().translate(program, random.Random(1), variant)
    split = next(c for c in program.all_calls if c.api == "split")
    sizes = str(split.args["sizes"])
    assert sizes in text
    lost = facts.missing(text.replace(sizes, "the right sizes", 1), facts.required(program), refs)
    assert any("split: sizes" in line for line in lost), lost


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_text_without_the_constants_role_is_caught(program, variant):
    text, refs = TemplateTranslator().translate(program, random.Random(1), variant)
    sentence = next(s for s in re.split(r"(?<=[.:])\s+|\n", text) if f"`{COND}`" in s and "name" not in s)
    vague = re.sub(r"(has size|is greater than) `COND`", "depends on `COND`", sentence)
    assert vague != sentence
    lost = facts.missing(text.replace(sentence, vague), facts.required(program), refs)
    assert lost == [f"the role of `{COND}` (how it is compared) is not stated"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_text_with_results_out_of_order_is_caught(program, variant):
    text, refs = TemplateTranslator().translate(program, random.Random(1), variant)
    first, second = (refs[n] if variant != "steps" else n for n in program.leaves()[0].path.result_vars(
        program.scenario)[:2])
    line = next(s for s in text.splitlines() if "RESULT" in s)
    swapped = line.replace(first, "\0").replace(second, first).replace("\0", second)
    assert swapped != line
    lost = facts.missing(text.replace(line, swapped), facts.required(program), refs)
    assert any("in order" in x for x in lost), lost


def test_the_build_drops_a_translation_that_leaves_out_a_fact_and_counts_it(monkeypatch):
    """An LLM translator whose natural text forgets the split sizes: the task is dropped, counted by reason."""
    config = BuildConfig(scenarios=["tensor"], n=12, seed=5, created_at="2026-01-01")
    rejections = Counter()
    drafts, _ = fuzz(config, "tensor", rejections)
    with_split = {d.task_id for d in drafts if any(c.api == "split" for c in d.program.all_calls)}
    assert with_split and len(with_split) < len(drafts)

    class Forgetful(TemplateTranslator):
        def translate_all(self, items):
            out = super().translate_all(items)
            for (key, variant), t in out.items():
                if variant == "natural":  # as an LLM's text: no names of its own for results
                    out[(key, variant)] = Translation(re.sub(r"sizes \[[\d, ]+\]", "sizes", t.instruction), 1, "OK")
            return out

    monkeypatch.setattr("builder.pipeline.get_translator", lambda config: Forgetful())
    kept = translate(config, drafts, rejections)
    assert {d.task_id for d in kept} == {d.task_id for d in drafts} - with_split
    assert rejections == Counter({"tensor: natural translation leaves out a fact the oracle checks": len(with_split)})


def test_a_build_that_keeps_nothing_exits_non_zero_and_says_why(monkeypatch, tmp_path, capsys):
    """A translator whose every natural text loses the facts: the fact check drops every task; the build still
    writes its (empty) folder but exits 1 with one line naming the reason and the fix."""
    from builder.__main__ import main

    class Vague(TemplateTranslator):
        def translate_all(self, items):
            out = super().translate_all(items)
            return {(key, v): Translation("Do the task.", 1, "OK") if v == "natural" else t
                    for (key, v), t in out.items()}

    monkeypatch.setattr("builder.pipeline.get_translator", lambda config: Vague())
    out = tmp_path / "empty"
    code = main(["--scenarios", "tensor", "--n", "4", "--seed", "5", "--mutants", "0", "--created-at", "2026-01-01",
                 "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1 and "tensor: kept 0 of" in captured.out and (out / "MANIFEST.json").exists()
    (line,) = [x for x in captured.err.splitlines() if x.startswith("error:")]
    assert line.startswith("error: tensor kept 0 of the 4 tasks asked (fewer than 50%); most were dropped as "
                           "'natural translation leaves out a fact the oracle checks' (4 of 4)")
    assert "--translator template" in line


def test_the_shortfall_threshold_is_half_of_what_was_asked():
    from builder.__main__ import shortfalls

    config = BuildConfig(scenarios=["tensor", "voice"], n=4)
    report = {"kept": {"tensor": 2, "voice": 1},
              "rejections": {"voice: weak_oracle (a split whose sides no input tells apart: x)": 2,
                             "voice: weak_oracle (a construct no input exercises: y)": 1,
                             "voice: overlaps a previous release (program)": 2, "tensor: duplicate program": 9}}
    (line,) = shortfalls(report, config)  # tensor kept half: not short
    assert line.startswith("error: voice kept 1 of the 4 tasks asked (fewer than 50%); most were dropped as "
                           "'weak_oracle' (3 of 5): ") and "--redraws" in line


def test_a_shortfall_of_uncovered_branches_says_so_and_what_to_change():
    from builder.__main__ import shortfalls

    config = BuildConfig(scenarios=["session"], n=4)
    report = {"kept": {"session": 1},
              "rejections": {"session: uncovered_branch (no input takes a recovery's branch, the first try "
                             "succeeds: first_try: x)": 3, "session: duplicate program": 1}}
    (line,) = shortfalls(report, config)
    assert "most were dropped as 'uncovered_branch' (3 of 4): " in line and "--probes" in line
