"""The voice scenario end to end: the state machine agrees with the world, tasks build, references score 100%,
and the oracle catches text_to_speech used where speech_to_speech was asked.

Fuzzed reference programs are trusted code, so the agreement checks run them here, in the namespace the sandbox
worker builds (`VoiceWorld.namespace`); the build and the scoring go through the real pipeline and sandbox.
"""

from __future__ import annotations

import random
import re

import pytest

from builder import facts
from builder.config import BuildConfig
from builder.fuzz import CoverageRecorder
from builder.pipeline import make_cases
from builder.program import COND, generate_program
from builder.translate import VARIANTS, TemplateTranslator
from evaluate.scoring import score
from scenarios import get_scenario, scenario_names
from scenarios.base import INIT, canonical_json
from scenarios.voice import CALL, SPEECH, VOICES
from scenarios.voice.world import VoiceWorld
from tests.scenarios.conftest import small_build_of

SEEDS = range(120)


@pytest.fixture(scope="module")
def scenario():
    return get_scenario("voice")


@pytest.fixture(scope="module")
def programs(scenario):
    recorder = CoverageRecorder()
    return [generate_program(scenario, random.Random(f"voice-test/{s}"), recorder) for s in SEEDS]


def _plain(value):
    """What the builder predicted, in the world's canonical form (records compared without their ids)."""
    world = VoiceWorld()
    return world.canonical(list(value) if isinstance(value, tuple) else value)


def _run(case: dict, code: str) -> tuple[VoiceWorld, dict]:
    world = VoiceWorld()
    ns = world.namespace(case)
    exec(case["setup_code"], ns)
    exec(code, ns)
    return world, ns


def test_registry_knows_voice(scenario):
    assert "voice" in scenario_names() and scenario.name == "voice"
    assert [a.name for a in scenario.apis] == ["search_voice_library", "text_to_speech", "speech_to_speech",
                                              "speech_to_text", "isolate_audio", "make_outbound_call"]


def test_every_path_has_five_calls_and_every_api_is_used(programs):
    assert all(len(path) == 5 for p in programs for path in p.paths())
    used = {c.api for p in programs for c in p.all_calls}
    assert used == {"search_voice_library", "text_to_speech", "speech_to_speech", "speech_to_text",
                    "isolate_audio", "make_outbound_call"}
    assert sum(p.has_branch for p in programs) > len(programs) // 4


def _fixed_cases(program) -> list[dict]:
    """The original and flipped test cases as rows: the values the fuzzer solved the program on."""
    return [c.to_row() for c in make_cases(program, BuildConfig(), 0) if c.name in ("original", "flipped")]


def test_the_world_computes_what_the_state_machine_predicted(programs):
    """Every variable a reference makes holds, at run time, the value the fuzzer solved for it."""
    for p in programs:
        cases = _fixed_cases(p)
        for case, path in zip(cases, [p.then, p.orelse] if p.has_branch else [p.then]):
            _, ns = _run(case, p.reference_code())
            for name, var in path.state.vars.items():
                if var.producer != INIT:
                    assert canonical_json(_plain(ns[name])) == canonical_json(_plain(var.value)), (name, p)


def test_each_test_case_takes_its_own_branch(programs):
    branching = [p for p in programs if p.has_branch]
    assert branching
    for p in branching:
        assert p.condition.flipped is not None
        original, flipped = _fixed_cases(p)
        for case, expected in ((original, True), (flipped, False)):
            _, ns = _run(case, "\n".join(c.code for c in p.prefix))
            holds = eval(f"{p.condition.left} {p.condition.op} {COND}", ns)  # noqa: S307 - trusted reference
            assert holds is expected


def test_producers_feed_consumers(programs):
    """The data flow the issue names: search results feed speech tools, speeches reach outbound calls."""
    pairs = set()
    for p in programs:
        produced_by = {}
        for c in p.all_calls:
            for v in c.inputs:
                pairs.add((produced_by.get(v, "init"), c.api))
            for out in c.outputs:
                produced_by[out] = c.api
    for pair in [("search_voice_library", "text_to_speech"), ("search_voice_library", "speech_to_speech"),
                 ("isolate_audio", "speech_to_speech"), ("speech_to_speech", "make_outbound_call"),
                 ("isolate_audio", "make_outbound_call"), ("speech_to_text", "text_to_speech")]:
        assert pair in pairs


def test_speech_to_speech_always_changes_the_voice(programs):
    """Converting a speech into the voice it already has would be a wasted call; the fuzzer never emits one."""
    for p in programs:
        for path in filter(None, (p.then, p.orelse)):
            values = path.state.vars  # a branch's state holds the prefix's variables too
            for c in p.prefix + path.calls:
                if c.api == "speech_to_speech":
                    source = values[c.inputs[0]]  # a speech, or a call record standing for the speech it played
                    speech = source.value.speech if source.type == CALL else source.value
                    assert speech.voice != values[c.outputs[0]].value.voice


def _unnamed(text: str, names) -> list[str]:
    """Variable names the text does not name in code style."""
    return [n for n in names if f"`{n}`" not in text]


def test_instructions_name_every_variable_and_quote_no_stored_value(scenario, programs):
    """`steps` dictates every name; no variant quotes a stored value (a category such as "generated" must not
    slip in through a reference phrase either)."""
    translator = TemplateTranslator()
    for i, p in enumerate(programs):
        decl = p.declarations()
        for variant in VARIANTS:
            text = translator.translate(p, random.Random(i), variant).text
            used = [n for c in p.all_calls for n in c.inputs if n in decl.inits]
            names = used + [o for c in p.all_calls for o in c.outputs] if variant == "steps" else used
            assert _unnamed(text, names) == [], text
            for name in decl.inits:
                var = decl.vars[name]
                if var.type == SPEECH:
                    assert all(words not in text for _, words in var.value.segments)
                else:  # the text, the phone numbers and the search criteria
                    assert var.value not in text, (var.value, text)
        setup = _fixed_cases(p)[0]["setup_code"]
        assert 'load_speech("user_speech")' in setup
        assert not re.search(r"\b(search_voice_library|text_to_speech|speech_to_speech)\(", setup)


def test_conditions_compare_a_runtime_value_with_cond(scenario, programs):
    lefts = {p.condition.left.split("(")[0].split(".")[-1] for p in programs if p.has_branch}
    assert lefts <= {"duration", "len"} and lefts
    rng = random.Random(0)
    state = scenario.initial_state(rng)
    for var in state.vars.values():  # inputs from the setup block are never branched on
        if var.type not in (SPEECH, VOICES, CALL):
            assert scenario.condition(state, var, rng) is None


# ----------------------------------------------------------------------------- build, score, mutate


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return small_build_of(tmp_path_factory, "voice")


def test_small_build_keeps_at_least_95_percent(built):
    report, tasks = built
    assert report["kept"]["voice"] / report["attempts"]["voice"] >= 0.95, report["rejections"]
    assert len(tasks) == report["kept"]["voice"]
    for t in tasks:
        for case in t.test_cases:
            assert case.expected_state is not None
    assert any(t.has_branch and [c.name for c in t.test_cases][:2] == ["original", "flipped"] for t in tasks)
    assert all(len(t.test_cases) >= 3 for t in tasks)


def test_reference_scores_100_percent(built, sandbox):
    _, tasks = built
    results = score(tasks, {t.task_id: [t.reference_program] for t in tasks}, sandbox)
    assert [r.status for r in results] == ["pass"] * len(tasks), [r.error for r in results if r.status != "pass"]


STS = re.compile(r"speech_to_speech\((\w+), voice_name=([\w\[\].]+)\)")


def test_text_to_speech_instead_of_speech_to_speech_fails_the_oracle(built, sandbox):
    """GPT-4.1-nano's mistake in the paper: re-synthesizing the words instead of converting the speech."""
    _, tasks = built
    mutants = {}
    for t in tasks:
        code, n = STS.subn(r"text_to_speech(speech_to_text(\1), voice_name=\2)", t.reference_program)
        if n:
            mutants[t.task_id] = [code]
    assert mutants, "the small build should contain speech_to_speech calls"
    results = score([t for t in tasks if t.task_id in mutants], mutants, sandbox)
    assert results and all(r.status == "result_error" for r in results), [(r.task_id, r.status) for r in results]


def test_reordering_calls_to_different_numbers_still_passes(sandbox, scenario):
    """Order is ignored only where the API is order-free: calls to two numbers, not calls to one."""
    from core.records import TestCase

    setup = ('user_speech = load_speech("user_speech")\n'
             'phone1 = "+15550000001"\nphone2 = "+15550000002"\n')
    case = TestCase("original", "main", "{}", setup, [{
        "name": "user_speech", "kind": "speech", "meta": "{}",
        "data": b'[["caller", "Hi, it is Tom."], ["agent", "Hello Tom."]]'}])
    reference = ("s1 = isolate_audio(user_speech)\n"
                 "c1 = make_outbound_call(user_speech, to_number=phone1)\n"
                 "c2 = make_outbound_call(s1, to_number=phone2)\n"
                 "c3 = make_outbound_call(s1, to_number=phone1)\n"
                 "RESULT = [c1, c2, c3]\n")
    swapped_numbers = ("s1 = isolate_audio(user_speech)\n"
                       "c2 = make_outbound_call(s1, to_number=phone2)\n"
                       "c1 = make_outbound_call(user_speech, to_number=phone1)\n"
                       "c3 = make_outbound_call(s1, to_number=phone1)\n"
                       "RESULT = [c1, c2, c3]\n")
    swapped_one_number = ("s1 = isolate_audio(user_speech)\n"
                          "c3 = make_outbound_call(s1, to_number=phone1)\n"
                          "c2 = make_outbound_call(s1, to_number=phone2)\n"
                          "c1 = make_outbound_call(user_speech, to_number=phone1)\n"
                          "RESULT = [c1, c2, c3]\n")
    from core.sandbox.harness import Job
    from evaluate.scoring import judge_case

    outcomes = sandbox.run_untrusted([Job(i, "voice", code, case)
                                      for i, code in enumerate((reference, swapped_numbers, swapped_one_number))])
    assert all(o.status == "ok" for o in outcomes), [o.error for o in outcomes]
    case.expected_result = canonical_json(outcomes[0].result)
    case.expected_state = canonical_json(outcomes[0].state)
    assert judge_case(scenario, case, outcomes[1]) == ("pass", "")
    status, reason = judge_case(scenario, case, outcomes[2])
    assert status == "result_error" and "outbound_calls" in reason


def test_call_records_and_voices_of_speeches_feed_later_calls_unambiguously(programs):
    """A call record stands for the speech it played (`call.speech`) and a speech lends its voice (`s.voice`), so
    that no result is a dead end; each only where no other record (speech) in scope played that speech (has that
    voice), so that reading the wrong one shows."""
    records = voices = 0
    for p in programs:
        for leaf in p.leaves():
            values = leaf.path.state.vars
            for k, c in enumerate(leaf.calls):
                before = {o for d in leaf.calls[:k] for o in d.outputs} | set(p.declarations().inits)
                if f"{c.inputs[0]}.speech" in c.code:
                    records += 1
                    played = values[c.inputs[0]].value.speech
                    assert [values[v].value.speech for v in before if values[v].type == CALL].count(played) == 1
                if ".voice" in c.code:
                    voices += 1
                    voice = values[c.inputs[1]].value.voice
                    assert voice is not None
                    speeches = [values[v].value for v in before if values[v].type == SPEECH]
                    assert [s.voice or "Aria" for s in speeches].count(voice) == 1
    assert records and voices


# ------------------------------------------------------------------- natural and vague: determined, no mechanics


@pytest.fixture(scope="module")
def nested_programs(scenario):
    """Programs with up to two splits, as the issue's builds make them."""
    recorder = CoverageRecorder()
    return [generate_program(scenario, random.Random(f"voice-prose/{s}"), recorder, branches=2,
                             branch_probability=0.7) for s in range(150)]


def _words(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")


def test_natural_and_vague_state_every_fact_without_names_or_tools(scenario, nested_programs):
    tools = [a.name for a in scenario.apis]
    translator = TemplateTranslator()
    for i, p in enumerate(nested_programs):
        outputs = [o for c in p.all_calls for o in c.outputs]
        required = facts.required(p)
        for variant in ("natural", "vague"):
            text, refs = translator.translate(p, random.Random(i), variant)
            assert [n for n in outputs if _words(n).search(text)] == [], text
            low = text.lower()
            assert [t for t in tools if t in low or t.replace("_", " ") in low] == [], text
            assert facts.missing(text, required, refs) == [], text
            for leaf in p.leaves():  # no two results on one path share a phrase
                phrases = [refs[o] for c in leaf.calls for o in c.outputs]
                assert len(set(phrases)) == len(phrases), (phrases, text)


def test_dropping_a_stated_value_is_caught(nested_programs):
    """Each value `values` lists (a voice's position in a search result, a voice setting, diarization) is one
    the oracle depends on: a text without it fails the fact check."""
    translator = TemplateTranslator()
    seen = set()
    for i, p in enumerate(nested_programs):
        required = facts.required(p)
        for variant in VARIANTS:
            text, refs = translator.translate(p, random.Random(i), variant)
            for f in required:
                if f.kind != "value":
                    continue
                seen.add(f.what)
                dropped = text
                for form in f.forms:
                    dropped = dropped.replace(form, "")
                assert facts.missing(dropped, required, refs), (f, dropped)
    assert seen >= {"text_to_speech: voice position", "speech_to_speech: voice position", "speech_to_text: diarize",
                    "text_to_speech: stability", "text_to_speech: similarity_boost", "text_to_speech: style"}


def test_a_transcript_without_diarization_is_caught():
    """The concrete case: "transcribe it with speaker diarization" said as a plain "transcribe it"."""
    scenario = get_scenario("voice")
    recorder = CoverageRecorder()
    for s in range(200):
        p = generate_program(scenario, random.Random(f"voice-diarize/{s}"), recorder)
        if any(c.api == "speech_to_text" and c.args["diarize"] for c in p.all_calls):
            break
    else:
        pytest.fail("no program with a diarized transcript")
    text, refs = TemplateTranslator().translate(p, random.Random(0), "natural")
    required = facts.required(p)
    assert facts.missing(text, required, refs) == []
    plain = text.replace(" with speaker diarization", "")
    assert any("diarize" in m for m in facts.missing(plain, required, refs)), plain


def test_tests_mode_keeps_only_mutants_a_test_written_from_the_documentation_can_see(built, sandbox):
    """The lab lists no speech made and no call placed, so its final state is out of a test's reach: reference tests
    do not assert it, and a mutant that changes only it (a speech made twice, answered once) is not kept. Every
    mutant kept is killed by a test that checks only what the API shows: RESULT and the answers its calls got."""
    import json

    from evaluate.mutation_score import calls_of, reference_test, score_answers
    from scenarios.trace import load_stored

    _, tasks = built
    assert not get_scenario("voice").state_readable
    kept = [t for t in tasks if t.world_mutants]
    assert len(kept) >= len(tasks) // 2, "most voice tasks are tests-mode tasks"
    seen = {}
    for t in kept:
        case = t.test_cases[0]
        assert "state" not in reference_test(t).rsplit("EXPECTED", 1)[1], "the lab's state is no test's to assert"
        expected = {"result": json.loads(case.expected_result or "null"), "calls": calls_of(load_stored(case.trace))}
        seen[t.task_id] = [f"{t.reference_program.rstrip()}\n\nEXPECTED = {expected!r}\n"]
    scores = score_answers(kept, seen, sandbox)
    assert [(s.task_id, s.passed_correct, s.missed) for s in scores] == [(t.task_id, True, []) for t in kept]
