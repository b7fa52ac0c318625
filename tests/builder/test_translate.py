"""The template translator: instructions name every variable a solver must create, vary with the seed, and never
quote a stored value."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from builder.config import BuildConfig
from builder.fuzz import CoverageRecorder
from builder.pipeline import make_cases
from builder.program import COND, generate_program
from builder import facts
from builder.translate import VARIANTS, TemplateTranslator
from scenarios import get_scenario


@pytest.fixture(scope="module")
def programs(fuzzed):
    return fuzzed[:80]


@pytest.fixture(scope="module")
def translator():
    return TemplateTranslator()


def translate(translator, program, seed=0, variant="steps") -> str:
    return translator.translate(program, random.Random(seed), variant).text


def mentions(text: str, names) -> list[str]:
    """Variable names the text does not mention in code style."""
    return [n for n in names if f"`{n}`" not in text]


NUMBERED = re.compile(r"^\s*(\d+|[a-z]{1,2}|[ivx]+)\.\s", re.M)


def test_steps_names_every_output_and_result_variable(programs, translator, scenario):
    for p in programs:
        text = translate(translator, p)
        outputs = [o for c in p.all_calls for o in c.outputs]
        assert mentions(text, outputs) == [], text
        for leaf in p.leaves():
            assert mentions(text, leaf.path.result_vars(scenario)) == [], text
        assert "RESULT" in text and NUMBERED.search(text)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("calls", [2, 9, 12, 30], ids=lambda n: f"calls{n}")
def test_long_and_short_programs_state_every_fact_in_every_variant(scenario, translator, calls, variant):
    recorder = CoverageRecorder()
    for seed in range(30):
        p = generate_program(scenario, random.Random(seed), recorder, calls_per_path=calls, branch_probability=1.0,
                             branches=2)
        text, refs = translator.translate(p, random.Random(seed), variant)
        assert facts.missing(text, facts.required(p), refs) == [], f"seed {seed}: {text}"
        assert text.count("RESULT") == len(p.leaves()), f"seed {seed}: a path has no RESULT\n{text}"


@pytest.mark.parametrize("variant", ["natural", "vague"])
def test_natural_and_vague_texts_name_no_intermediate_variable_and_number_no_steps(programs, translator, variant):
    for p in programs:
        text = translate(translator, p, variant=variant)
        made = [o for c in p.all_calls for o in c.outputs]
        assert not [n for n in made if re.search(rf"\b{n}\b", text)], text
        assert not NUMBERED.search(text), text
        assert mentions(text, p.declarations().inits) == [], text  # setup variables keep their names


def test_vague_texts_name_no_api(programs, translator, scenario):
    for p in programs:
        text = translate(translator, p, variant="vague").lower()
        assert not [a.name for a in scenario.apis if re.search(rf"\b{a.name}\b", text)], text
        assert "torch." not in text and "f." not in text.replace("of.", "")


def test_instruction_names_every_input_and_setup_variable(programs, translator):
    for p in programs:
        for variant in VARIANTS:
            text = translate(translator, p, variant=variant)
            assert mentions(text, p.declarations().inits) == [], text


def test_result_order_is_stated(programs, translator, scenario):
    for p in programs[:20]:
        text = translate(translator, p)
        for path in [p.then] + ([p.orelse] if p.orelse else []):
            names = path.result_vars(scenario)
            listed = "[" + ", ".join(f"`{n}`" for n in names) + "]"
            bare = "RESULT = [" + ", ".join(names) + "]"
            assert listed in text or bare in text, (names, text)


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_seed_gives_same_text(programs, translator, variant):
    for p in programs[:20]:
        assert translate(translator, p, 7, variant) == translate(translator, p, 7, variant)
        assert TemplateTranslator().translate(p, random.Random("a/b"), variant).text == \
            translate(translator, p, "a/b", variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_different_seeds_give_different_texts(programs, translator, variant):
    for p in programs[:20]:
        texts = {translate(translator, p, seed, variant) for seed in range(6)}
        assert len(texts) >= 4, f"only {len(texts)} distinct texts over 6 seeds"


@pytest.mark.parametrize("variant", VARIANTS)
def test_branching_instructions_use_the_constant_by_name(programs, translator, variant):
    assert any(p.has_branch for p in programs) and not all(p.has_branch for p in programs)
    for p in programs:
        text = translate(translator, p, variant=variant)
        if p.has_branch:
            assert f"`{COND}`" in text
            assert "Otherwise" in text
            if variant == "steps":  # the constant's value is never given, only its name
                assert p.condition.phrase.replace(COND, f"`{COND}`") in text
        else:
            assert COND not in text


FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def stored_values(case) -> np.ndarray:
    import json

    parts = []
    for a in case["assets"]:
        meta = json.loads(a["meta"])
        parts.append(np.frombuffer(bytes(a["data"]), dtype=np.dtype(meta["dtype"]).newbyteorder("<")))
    return np.concatenate(parts) if parts else np.zeros(0)


def assert_no_value_leaks(text: str, values: np.ndarray) -> None:
    assert FLOAT.findall(text) == [], f"float literal in: {text}"
    for v in values[:200]:
        for digits in (2, 3, 4):
            literal = f"{abs(float(v)):.{digits}f}"
            if literal.strip("0.") == "":
                continue
            assert literal not in text, f"stored value {v} appears as {literal}"


def test_no_stored_value_leaks_into_fuzzed_instructions(programs, translator):
    for p in programs:
        case = make_cases(p, BuildConfig(), 0)[0].to_row()
        values = stored_values(case)
        assert values.size
        for variant in VARIANTS:
            assert_no_value_leaks(translate(translator, p, variant=variant), values)
        assert_no_value_leaks(case["setup_code"], values)


def test_no_stored_value_leaks_into_dataset_rows(small_tasks):
    for task in small_tasks:
        for case in task.test_cases:
            values = stored_values(case.to_row())
            for text in (task.instruction, task.instruction_steps, task.instruction_vague):
                assert_no_value_leaks(text, values)
            assert_no_value_leaks(case.setup_code, values)


def test_unknown_translator_is_refused_before_any_work():
    from builder.config import BuildConfig

    with pytest.raises(ValueError, match="template"):
        BuildConfig(translator="gpt-nothing")


@pytest.mark.parametrize("name", ["tensor", "session", "voice"])
def test_no_two_results_on_one_path_share_a_phrase(name, translator):
    """A natural or vague text names an output only by its phrase, so one phrase must mean one variable there."""
    scenario, recorder = get_scenario(name), CoverageRecorder()
    for seed in range(60):
        p = generate_program(scenario, random.Random(seed), recorder, branches=2, branch_probability=0.7)
        for variant in ("natural", "vague"):
            _, refs = translator.translate(p, random.Random(seed), variant)
            for leaf in p.leaves():
                phrases = [refs[o] for c in leaf.calls for o in c.outputs]
                assert len(set(phrases)) == len(phrases), (seed, variant, phrases)
