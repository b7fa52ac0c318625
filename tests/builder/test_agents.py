"""The generator/evaluator translation agents, driven through a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import random

import pyarrow.parquet as pq
import pytest

from builder import facts
from builder.fuzz import CoverageRecorder
from builder.program import generate_program
from builder.translate import VARIANTS, Item
from scenarios import get_scenario

from builder.agents import EVALUATOR, GENERATOR, AgentTranslator, clean_instruction, parse_spec, parse_verdict
from builder.config import BuildConfig
from builder.pipeline import build, filter_leaks, fuzz, leaked_values, translate
from tests.evaluate.scripted_server import ScriptedServer

def _items() -> list[Item]:
    """Two real tensor programs; each setup block is tagged with its task id so the scripted server can tell them
    apart."""
    scenario, recorder = get_scenario("tensor"), CoverageRecorder()
    programs = [generate_program(scenario, random.Random(seed), recorder) for seed in (1, 2)]
    return [Item(f"t-{k}", f"# t-{k}\n", p, {}) for k, p in enumerate(programs, 1)]


ITEMS = _items()


def is_review(body: dict) -> bool:
    return body["messages"][0]["content"] in EVALUATOR.values()


def task_of(body: dict) -> str:
    return "t-1" if "# t-1\n" in body["messages"][1]["content"] else "t-2"


def agents(server, tmp_path, **kw) -> AgentTranslator:
    return AgentTranslator("openai:scripted", tmp_path / "cache.jsonl", base_url=server.base_url,
                           max_attempts=3, backoff_s=0.01, **kw)


def test_ok_at_once_keeps_the_generators_instruction(tmp_path):
    def reply(body):
        return "OK" if is_review(body) else f"Instruction: Apply the API to the input ({task_of(body)})."

    with ScriptedServer(reply) as server:
        out = agents(server, tmp_path).translate_all(ITEMS)
    assert out[("t-1", "natural")].verdict == "OK" and out[("t-1", "natural")].rounds == 1
    assert out[("t-2", "vague")].instruction == "Apply the API to the input (t-2)."  # the label is stripped
    # three variants x two tasks, one generator and one evaluator request each
    assert server.count() == 12
    systems = Counter(b["messages"][0]["content"] for b in server.requests)
    assert all(systems[GENERATOR[v]] == 2 for v in VARIANTS)
    # both agents are handed the facts the oracle depends on
    program = ITEMS[0].program
    assert all(f"- {f.describe()}" in b["messages"][1]["content"] for f in facts.required(program)
               for b in server.requests if task_of(b) == "t-1")


def test_a_critique_goes_back_to_the_generator_then_ok(tmp_path):
    def reply(body):
        """The reviewer accepts only an instruction that names the dimension, whatever order requests come in."""
        if is_review(body):
            instruction = body["messages"][1]["content"].rsplit("Instruction:\n", 1)[1]
            return "OK" if "dimension 1" in instruction else "Say which dimension."
        revised = any("Say which dimension." in m["content"] for m in body["messages"])
        return "Concatenate along dimension 1." if revised else "Concatenate them."

    with ScriptedServer(reply) as server:
        out = agents(server, tmp_path).translate_all(ITEMS)
    for key in [(item.key, v) for item in ITEMS for v in VARIANTS]:
        t = out[key]
        assert (t.verdict, t.rounds, t.instruction) == ("OK", 2, "Concatenate along dimension 1."), key
    revisions = [b for b in server.requests if not is_review(b) and len(b["messages"]) == 4]
    assert revisions and revisions[0]["messages"][2] == {"role": "assistant", "content": "Concatenate them."}


def test_impossible_and_no_ok_after_the_last_round_drop_the_task(tmp_path):
    def reply(body):
        if not is_review(body):
            return "Do it."
        return "IMPOSSIBLE: the program is meaningless." if task_of(body) == "t-1" else "Too vague; name the calls."

    with ScriptedServer(reply) as server:
        out = agents(server, tmp_path, max_rounds=2).translate_all(ITEMS)
    assert out[("t-1", "natural")].verdict == "evaluator said IMPOSSIBLE" and out[("t-1", "natural")].rounds == 1
    assert out[("t-2", "natural")].verdict == "no OK after 2 rounds"
    assert out[("t-2", "natural")].instruction == ""


def test_garbage_replies_never_count_as_ok(tmp_path):
    def reply(body):
        return "" if not is_review(body) else "OKAY-ish, maybe? I am not sure this is fine at all."

    with ScriptedServer(reply) as server:
        out = agents(server, tmp_path).translate_all(ITEMS[:1])
    assert out[("t-1", "natural")].verdict == "no OK after 3 rounds"


def test_a_500_is_retried_and_the_translation_goes_on(tmp_path):
    failed = []

    def reply(body):
        if not failed:
            failed.append(1)
            return 500
        return "OK" if is_review(body) else "Apply f to x."

    with ScriptedServer(reply) as server:
        out = agents(server, tmp_path).translate_all(ITEMS[:1])
    assert out[("t-1", "natural")].verdict == "OK"
    assert server.count() == 7  # the failed request, then per variant its generator request and review


def test_replies_are_cached_on_disk_and_a_rerun_sends_nothing(tmp_path):
    def reply(body):
        return "OK" if is_review(body) else "Apply f to x."

    with ScriptedServer(reply) as server:
        first = agents(server, tmp_path).translate_all(ITEMS)
        sent = server.count()
        second = agents(server, tmp_path).translate_all(ITEMS)
    assert server.count() == sent
    assert first == second
    assert len((tmp_path / "cache.jsonl").read_text().splitlines()) == sent


def test_reply_parsing():
    assert parse_verdict("OK") == "OK" and parse_verdict(" ok. ") == "OK"
    assert parse_verdict("<think>hmm</think>OK") == "OK"
    assert parse_verdict("IMPOSSIBLE because ...") == "IMPOSSIBLE"
    assert parse_verdict("OK, but you forgot the bias and the order of the outputs is wrong.") != "OK"
    assert parse_verdict("").startswith("The review was empty")
    assert clean_instruction('```\n"Split x."\n```') == "Split x."
    assert parse_spec("openai:gpt-4.1-mini") == ("openai", "gpt-4.1-mini")
    with pytest.raises(ValueError):
        parse_spec("gpt-4.1")


def test_leak_filter_catches_quoted_setup_values_only():
    setup = ('x1 = load_tensor("x1")\nsrc1 = \'tcga_portal\'\n'
             "data1 = {'title': 'KRAS panel', 'owner': 'ana@example.edu'}\nphone1 = '+15551115903'\nCOND = 3\n")
    assert leaked_values(setup, "Add `data1` under `src1`, then check the title and owner.") == []
    assert leaked_values(setup, "Use dimension 3 and call `phone1`.") == []
    assert leaked_values(setup, "Add the session titled KRAS panel.") == ["KRAS panel"]
    assert leaked_values(setup, "Call +15551115903 from tcga_portal.") == ["tcga_portal", "+15551115903"]


def test_a_leaking_translation_is_dropped_and_counted():
    config = BuildConfig(scenarios=["voice"], n=2, seed=0, created_at="2026-01-01")
    rejections = Counter()
    drafts = translate(config, fuzz(config, "voice", rejections)[0], rejections)
    message = next(line.split(" = ", 1)[1].strip("'\"") for line in drafts[0].cases[0].setup_code.splitlines()
                   if line.startswith("message = "))
    drafts[0].instructions["vague"] += f" Say: {message}"
    kept = filter_leaks(drafts, rejections)
    assert [d.task_id for d in kept] == [drafts[1].task_id]
    assert rejections["voice: instruction quotes an initial value"] == 1


def test_a_build_with_agents_records_translator_rounds_and_verdicts(tmp_path):
    def reply(body):
        """The generator answers with the fact list it is given (every fact stated, in no natural words); the
        evaluator refuses programs with a split and accepts the rest."""
        text = body["messages"][1]["content"]
        if is_review(body):
            return "IMPOSSIBLE" if "torch.split" in text else "OK"
        return text.split("Facts the test checks:\n", 1)[1].split("\n\nInstruction:")[0]

    out = tmp_path / "stateeval"
    with ScriptedServer(reply) as server:
        report = build(BuildConfig(scenarios=["tensor"], n=6, seed=0, created_at="2026-01-01", workers=2,
                                   out=str(out), translator="openai:scripted", base_url=server.base_url))
    dropped = sum(v for k, v in report["rejections"].items() if "translation" in k)
    assert dropped >= 1 and report["kept"]["tensor"] == 6 - dropped
    rows = [r for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert rows and all(r["translator"] == "openai:scripted" for r in rows)
    assert all(r["translation"] == {f"{v}_{k}": 1 if k == "rounds" else "OK" for v in VARIANTS
                                    for k in ("rounds", "verdict")} for r in rows)
    assert all(r["instruction"] == r["instruction_steps"] == r["instruction_vague"] for r in rows)
    assert all(r["instruction"].splitlines() == [f"- {f}" for f in r["facts"]] for r in rows)
    written = json.loads((out / "build_report.json").read_text())
    assert written["rejections"] == report["rejections"]
    cache = Path(tmp_path / ".stateeval-cache" / "translate-openai--scripted.jsonl")
    assert cache.is_file()


@pytest.mark.slow
def test_smollm2_as_translator_end_to_end(tmp_path):
    """A real (tiny, offline) model in both agent roles; it rarely earns an OK, but every step must run and count."""
    pytest.importorskip("transformers", reason="the hf extra is not installed (pip install 'stateeval[hf]')")
    out = tmp_path / "stateeval"
    report = build(BuildConfig(scenarios=["tensor"], n=1, seed=0, created_at="2026-01-01", workers=1, out=str(out),
                               translator="hf:smollm2", max_rounds=1))
    assert report["kept"]["tensor"] + sum(report["rejections"].values()) == 1
    assert (out / "MANIFEST.json").is_file()
