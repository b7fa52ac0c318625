"""Every scenario's frontier tier through the same checks, one test body each with the scenario as its parameter:
its programs (deterministic, parsed, every fact stated, every mutant a program), and a build of it end to end
through the real pipeline and sandbox: kept, passed by its reference in both modes, reproduced byte for byte, and
failed by a program with a slip every task's world exposes (the voice tier's build in the default run, every
tier's under e2e).

What is particular to one scenario (its populations, its world, its texts) is tested beside it:
`test_tensor_frontier.py`, `test_voice_frontier.py` and `tests/builder/test_frontier.py` (the session's)."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from builder import facts, frontier
from builder.config import BuildConfig
from builder.pipeline import build
from builder.stats import table1
from core.records import load_tasks
from scenarios import get_scenario
from scenarios.base import VARIANTS
from scenarios.grammar import CONSTRUCTS, MUST_KILL
from scenarios.session.tasks.populations import PROFILES as SESSION_PROFILES
from scenarios.tensor.tasks import PROFILES as TENSOR_PROFILES
from scenarios.voice.tasks import PROFILES as VOICE_PROFILES

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Tier:
    """What the shared checks expect of one scenario's frontier tier."""

    scenario: str
    programs: int  # how many programs the checks draw (seeds 0 to programs - 1)
    profiles: tuple[str, ...]  # its populations' profiles, the original's first
    constructs: frozenset[str]  # constructs some program has
    levers: frozenset[str]  # levers some program has
    operators: frozenset[str]  # mutation operators some program's mutants have
    build: dict  # the end-to-end build's settings besides the scenario and the tier
    doc: tuple[str, ...]  # how a task's API documentation starts, then what else it says
    calls: frozenset[str]  # API calls every built task makes
    least_calls: int  # how many API calls every built task makes at least
    mean_calls: float  # how many API calls a built task makes on average (Table I) at least
    slip: tuple[str, str]  # a slip in every reference (the text, what it becomes) that fails every task

    def config(self, out: Path) -> BuildConfig:
        return BuildConfig(out=str(out), scenarios=[self.scenario], tier="frontier", created_at="2026-01-01",
                           workers=2, world_mutants=False, **self.build)  # (tests mode's are tested on the paper tier)


TIERS = [
    Tier(scenario="session", programs=120, profiles=SESSION_PROFILES, constructs=frozenset(CONSTRUCTS),
         levers=frozenset({"pagination", "versions", "lookups", "loops", "aggregates", "recovery"}),
         operators=frozenset({"first_page", "last_page", "one_big_page", "first_match", "tie_break", "predicate",
                              "aggregate", "stale_version", "stale_data", "no_retry", "retry_stale", "first_try",
                              "never_create", "always_create", "collect_all", "missing_field", "null_field",
                              "exact_case", "refused_write", "wrong_item", "drop_write"}),
         build=dict(n=6, seed=11), doc=("# Session Service API", "If-Match"),
         calls=frozenset({"GET /api/sessions/{source}/{type}"}), least_calls=7, mean_calls=7,
         # only the first page of every listing: a program a model writes when it skips the paging rule
         slip=('        if page["next"] is None:\n            return sessions\n', "        return sessions\n")),
    Tier(scenario="tensor", programs=80, profiles=TENSOR_PROFILES,
         constructs=frozenset({"lookup", "loop", "aggregate", "bulk"}),
         levers=frozenset({"autograd", "modes", "optimizers", "schedulers", "views"}),
         operators=frozenset({"no_zero_grad", "wrong_mode", "no_restore", "no_no_grad", "no_clone", "step_order",
                              "null_field", "predicate", "aggregate", "first_match", "drop_write"}),
         build=dict(n=4, seed=5), doc=("# Stateful PyTorch API",),
         calls=frozenset({"optimizer.step", "tensor.backward"}), least_calls=10, mean_calls=10,
         slip=("    opt.zero_grad()\n", "")),  # gradients that accumulate
    Tier(scenario="voice", programs=60, profiles=VOICE_PROFILES, constructs=frozenset(CONSTRUCTS),
         levers=frozenset({"pagination", "lookups", "recovery", "feedback", "settings"}),
         operators=frozenset({"first_page", "aggregate", "tie_break", "first_match", "predicate", "no_retry",
                              "always_create", "drop_write", "wrong_item", "static_tally"}),
         build=dict(n=6, seed=5), doc=("# Speech Platform API",),
         calls=frozenset({"search_voices", "text_to_speech"}), least_calls=5, mean_calls=7,
         # only the first page of the voice library
         slip=('        if not page["has_more"]:\n            return voices\n', "        return voices\n")),
]


@pytest.fixture(scope="module", params=TIERS, ids=[t.scenario for t in TIERS])
def tier(request) -> Tier:
    return request.param


@pytest.fixture(scope="module")
def programs(tier):
    scenario = get_scenario(tier.scenario)
    return [frontier.generate(scenario, random.Random(seed)) for seed in range(tier.programs)]


def test_the_same_draw_gives_the_same_program_words_and_populations(tier):
    scenario = get_scenario(tier.scenario)
    a, b = (frontier.generate(scenario, random.Random(7)) for _ in range(2))
    assert a.reference_code() == b.reference_code()
    for variant in VARIANTS:
        assert a.render(variant, random.Random(1)).text == b.render(variant, random.Random(1)).text
    assert list(a.plan.profiles) == list(tier.profiles)
    for profile in tier.profiles:
        assert a.population(profile, random.Random(3)).assets == b.population(profile, random.Random(3)).assets


def test_programs_parse_and_combine_the_constructs(tier, programs):
    kinds = Counter(k for p in programs for k in p.constructs())
    assert tier.constructs <= set(kinds), kinds
    levers = Counter(lever for p in programs for lever in p.levers())
    assert tier.levers <= set(levers), levers
    for p in programs:
        ast.parse(p.reference_code())
        assert p.reference_code().rstrip().splitlines()[-1].startswith("RESULT = [")


def test_every_variant_states_every_fact(programs):
    """In two draws of each text's wording; and no text names an address the setup block does not define."""
    for p in programs:
        required = facts.required(p)
        assert any(f.kind == "result" for f in required)
        for variant in VARIANTS:
            for wording in (0, 2):
                rendered = p.render(variant, random.Random(wording))
                assert facts.missing(rendered.text, required, rendered.refs) == [], (variant, rendered.text)
                assert "`_" not in rendered.text, rendered.text


def test_mutants_are_programs_and_attack_each_construct(tier, programs):
    operators = Counter()
    for p in programs:
        reference = p.reference_code()
        for operator, change, code, items in p.mutants():
            assert code != reference and " -> " in change
            ast.parse(code)
            operators[operator] += 1
            if operator == "result":
                assert items is not None
    assert tier.operators <= set(operators), operators
    assert {op for op in operators if op in MUST_KILL} == set(operators) - {"result", "argument"}


# The builds: the voice tier's (the quickest) in the default run, the others under e2e (.ci/run runs them). The
# build, the oracle capture, mutation analysis and scoring are the same code for every tier; what is particular to
# a tier (its programs, facts, mutants) is checked above for all three without a build.
BUILT = [pytest.param(t, id=t.scenario, marks=() if t.scenario == "voice" else pytest.mark.e2e) for t in TIERS]


@pytest.fixture(scope="module", params=BUILT)
def built_tier(request) -> Tier:
    return request.param


@pytest.fixture(scope="module")
def frontier_build(built_tier, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"{built_tier.scenario}-frontier") / "stateeval"
    report = build(built_tier.config(out))
    return out, report


def test_a_frontier_build_keeps_its_tasks_and_its_reference_passes(built_tier, frontier_build, tmp_path):
    out, report = frontier_build
    built, manifest = load_tasks(str(out))
    assert manifest["config"]["tier"] == "frontier" and manifest["config"]["difficulty"] == {"tier": "frontier"}
    assert "config_name: frontier" in (out / "README.md").read_text()
    assert len(built) == built_tier.build["n"] and report["mutation"][built_tier.scenario]["score"] == 1.0
    scenario = get_scenario(built_tier.scenario)
    for t in built:
        assert [c.name for c in t.test_cases[:len(built_tier.profiles)]] == list(built_tier.profiles)
        assert t.api_doc.startswith(built_tier.doc[0]) and all(words in t.api_doc for words in built_tier.doc[1:])
        assert scenario.task_tier(t) == "frontier"
        assert t.mutation["killed"] + t.mutation["equivalent"] == t.mutation["mutants"]
        assert built_tier.calls <= set(t.api_calls) and t.num_api_calls >= built_tier.least_calls
        assert t.num_api_calls == len(t.api_calls) == len(json.loads(t.test_cases[0].trace)["calls"])
    rows = table1(built, frontier=True)
    assert rows[built_tier.scenario]["api_calls"]["mean"] >= built_tier.mean_calls
    assert rows[built_tier.scenario]["pair_coverage"] is None
    assert pass_at_1(out, tmp_path / "code", "--model", "reference", "--mode", "code") == 1.0
    # tools mode replays the reference call by call, a turn each: two tasks here, every task under e2e (below)
    assert pass_at_1(out, tmp_path / "tools", "--model", "reference", "--mode", "tools", "--limit", "2") == 1.0


@pytest.mark.e2e
def test_the_reference_passes_every_task_of_a_frontier_build_in_tools_mode(built_tier, frontier_build, tmp_path):
    assert pass_at_1(frontier_build[0], tmp_path, "--model", "reference", "--mode", "tools") == 1.0


@pytest.mark.e2e  # builds are byte-checked by default in test_stream.py and on Ray
def test_the_same_seed_gives_the_same_bytes(built_tier, frontier_build, tmp_path):
    out, _ = frontier_build
    build(built_tier.config(tmp_path / "again"))
    assert content_hash(tmp_path / "again") == content_hash(out)


def test_a_program_with_a_slip_the_world_exposes_fails(built_tier, frontier_build, tmp_path):
    out, _ = frontier_build
    built, _ = load_tasks(str(out))
    slipped = {t.task_id: t.reference_program.replace(*built_tier.slip) for t in built}
    assert all(code != t.reference_program for code, t in zip(slipped.values(), built))
    samples = samples_file(tmp_path / "slipped.jsonl", slipped)
    assert pass_at_1(out, tmp_path / "scores", "--samples", str(samples)) == 0.0


def pass_at_1(dataset: Path, out: Path, *args: str) -> float:
    """Overall pass@1 of `python -m evaluate --dataset DATASET --out OUT ARGS...` (two workers), which must exit 0."""
    proc = subprocess.run([sys.executable, "-m", "evaluate", "--dataset", str(dataset), "--out", str(out),
                           "--workers", "2", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(next(Path(out).rglob("results*.json")).read_text())["summary"]["overall"]["pass@1"]


def content_hash(dataset: Path) -> str:
    return json.loads((Path(dataset) / "MANIFEST.json").read_text())["content_hash"]


def samples_file(path: Path, codes: dict[str, str]) -> Path:
    """A `--samples` file with one program per task id."""
    path.write_text("".join(json.dumps({"task_id": task_id, "code": code}) + "\n" for task_id, code in codes.items()))
    return path
