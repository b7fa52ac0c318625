"""The build: a chain of steps over one record type (`Draft`); every rejection carries a counted reason.

fuzz -> assemble test cases -> translate -> filter -> capture oracles (sandbox, twice) -> write the folder.

Fuzzing is sequential within a scenario because one coverage recorder steers all its programs; oracle capture,
the slow part, runs every test case of every task through the sandbox's warm worker pool.
"""

from __future__ import annotations

import ast
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean

from builder import __version__
from builder.config import BuildConfig, rng_for
from builder.dataset import check_out, table1_markdown, write_dataset
from builder.fuzz import CoverageRecorder, NoValidCall
from builder.mutate import analyse_mutants
from builder.program import Assignment, Program, generate_program
from builder.agents import AgentTranslator
from builder import facts
from builder.translate import VARIANTS, Item, TemplateTranslator
from evaluate.data import TaskRecord, TestCase
from evaluate.progress import progress
from evaluate.executor import make_executor
from evaluate.sandbox import Executor, Job, Limits
from scenarios import get_scenario
from scenarios.base import State, canonical_json
from scenarios.trace import stored


@dataclass
class Draft:
    task_id: str
    scenario: str
    program: Program
    index: int = 0  # the program's number in its scenario (the task id's digits)
    instructions: dict[str, str] = field(default_factory=dict)  # variant -> instruction
    translation: dict = field(default_factory=dict)  # per variant: rounds and verdict
    cases: list[TestCase] = field(default_factory=list)
    mutation: dict = field(default_factory=dict)

    facts: list = field(default_factory=list)  # what the oracle depends on (builder/facts.py)


def get_translator(config: BuildConfig):
    if config.translator == "template":
        return TemplateTranslator()
    cache = translation_cache(config)
    return AgentTranslator(config.translator, cache, max_rounds=config.max_rounds, base_url=config.base_url,
                           concurrency=config.concurrency)


def translation_cache(config: BuildConfig) -> Path:
    """Beside the output folder (which is replaced atomically), so a crashed or repeated build reuses replies."""
    out = Path(config.out)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "--", config.translator)
    return out.parent / f".{out.name}-cache" / f"translate-{safe}.jsonl"


def make_cases(program: Program, config: BuildConfig, index: int) -> list[TestCase]:
    """One test case per path through the program (the original, its flipped-condition twin, or one per constant
    assignment when splits nest; a dead else branch has none), and `config.redraws` cases of freshly drawn values
    (cycling through those assignments), so that no single input decides a verdict."""
    decl = program.declarations()
    assignments = program.assignments()
    cases = [_case(program, decl, a.name, a) for a in assignments]
    for k in range(config.redraws):
        state = program.scenario.redraw(decl, rng_for(config, program.scenario.name, index, f"redraw-{k}"))
        cases.append(_case(program, state, f"redrawn-{k + 1}", assignments[k % len(assignments)]))
    return cases


def probe_cases(program: Program, config: BuildConfig, index: int) -> list[TestCase]:
    """More inputs of fresh values, for mutants that survive the test cases (see builder/mutate.py)."""
    decl = program.declarations()
    assignments = program.assignments()
    return [_case(program, program.scenario.redraw(decl, rng_for(config, program.scenario.name, index, f"probe-{k}")),
                  f"probe-{k + 1}", assignments[k % len(assignments)])
            for k in range(config.probes)]


def _case(program: Program, state: State, name: str, assignment: Assignment) -> TestCase:
    constants = assignment.constants
    return TestCase(name, assignment.branch, canonical_json(constants), program.scenario.setup_code(state, constants),
                    [a.to_record() for a in state.assets.values()])


def fuzz(config: BuildConfig, scenario_name: str, rejections: Counter) -> tuple[list[Draft], list[float]]:
    scenario = get_scenario(scenario_name)
    recorder = CoverageRecorder()
    api_names = [a.name for a in scenario.apis]
    drafts, curve, seen = [], [], set()
    bar = progress(config.n, f"fuzz {scenario_name}", "task")
    for i in range(config.n):
        bar.update()
        try:
            program = generate_program(
                scenario, rng_for(config, scenario_name, i, "fuzz"), recorder,
                config.calls_per_path, config.branch_probability, config.coverage, config.branches,
                config.recency,
            )
        except NoValidCall:
            rejections[f"{scenario_name}: fuzzer found no valid call"] += 1
            continue
        finally:
            curve.append(recorder.coverage(api_names))
        cases = make_cases(program, config, i)
        key = (cases[0].setup_code, program.reference_code())
        if key in seen:
            rejections[f"{scenario_name}: duplicate program"] += 1
            continue
        seen.add(key)
        if min(len(p) for p in program.paths()) < config.calls_per_path:
            rejections[f"{scenario_name}: too few API calls"] += 1
            continue
        drafts.append(Draft(f"{scenario_name}-{i:04d}", scenario_name, program, index=i, cases=cases))
    bar.close()
    return drafts, curve


# The generator each variant's wording draws from: `steps` keeps the purpose the only variant had at first, so its
# text is what earlier versions wrote for the same seed.
PURPOSES = {"steps": "translate", "natural": "translate-natural", "vague": "translate-vague"}
ACCEPTED = ("template", "OK")
FACT_LOST = "translation leaves out a fact the oracle checks"  # the rejection reason, after the variant


def keep(items: list, reason, rejections: Counter, scenario=lambda item: item.scenario) -> list:
    """The items `reason(item)` finds nothing against; each other one is counted under "<scenario>: <reason>"."""
    kept = []
    for item in items:
        why = reason(item)
        if why:
            rejections[f"{scenario(item)}: {why}"] += 1
        else:
            kept.append(item)
    return kept


def translate(config: BuildConfig, drafts: list[Draft], rejections: Counter) -> list[Draft]:
    """Every instruction variant of every draft. A task is dropped when a variant is not accepted (an LLM
    evaluator's verdict) or leaves out a fact its oracle depends on (`builder/facts.py`), counted by reason."""
    items = [Item(d.task_id, d.cases[0].setup_code, d.program,
                  {v: rng_for(config, d.scenario, d.index, PURPOSES[v]) for v in VARIANTS}) for d in drafts]
    results = get_translator(config).translate_all(items)

    def reason(d: Draft) -> str | None:
        d.facts = facts.required(d.program)
        for variant in VARIANTS:
            t = results[(d.task_id, variant)]
            d.translation[variant] = {"rounds": t.rounds, "verdict": t.verdict}
            d.instructions[variant] = t.instruction
            if t.verdict not in ACCEPTED:
                return f"{variant} translation: {t.verdict}"
            # Without the translator's own names for results (an LLM's text), RESULT's order is the evaluator's call.
            checked = d.facts if t.refs is not None else [f for f in d.facts if f.kind != "result"]
            lost = facts.missing(t.instruction, checked, t.refs)
            if lost:
                return f"{variant} {FACT_LOST}"
        return None

    return keep(drafts, reason, rejections)


def leaked_values(setup_code: str, instruction: str) -> list[str]:
    """Values written in the setup block that the instruction quotes (the paper's main reason for rejection).

    Strings of four or more characters count, and numbers that cannot be mistaken for a dimension or an index
    (non-integers, or integers of two digits or more). The arguments of the setup's loaders are variable names
    and dict keys are field names: structure the instruction may name, not values.
    """
    found = []
    tree = ast.parse(setup_code)
    skip = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "").startswith("load_")
            for a in n.args}
    skip |= {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys if k is not None}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in skip or isinstance(node.value, bool):
            continue
        v = node.value
        if isinstance(v, str) and len(v.strip()) >= 4 and v in instruction:
            found.append(v)
        elif isinstance(v, (int, float)) and (v != int(v) or abs(v) >= 10):
            if re.search(rf"(?<![\w.]){re.escape(repr(v))}(?![\w]|\.\d)", instruction):
                found.append(repr(v))
    return found


def filter_leaks(drafts: list[Draft], rejections: Counter) -> list[Draft]:
    def reason(d: Draft) -> str | None:
        if any(leaked_values(d.cases[0].setup_code, text) for text in d.instructions.values()):
            return "instruction quotes an initial value"
        return None

    return keep(drafts, reason, rejections)


def capture_oracles(drafts: list[Draft], sandbox: Executor, rejections: Counter) -> list[Draft]:
    """Run every reference twice per test case; keep tasks whose runs all succeed and agree.

    A redrawn input may send a branching program down any path: which one is read off the program itself, by
    running it with each path's RESULT replaced by the path's label (`Program.path_probe`). The runs on one test
    case share a child (`Executor.run_batched`), the world reset between them.
    """
    jobs = [Job((d_i, c_i, run), d.scenario, d.program.reference_code(), case)
            for d_i, d in enumerate(drafts) for c_i, case in enumerate(d.cases) for run in range(2)]
    jobs += [Job((d_i, c_i, "branch"), d.scenario, d.program.path_probe(), case)
             for d_i, d in enumerate(drafts) if d.program.has_branch
             for c_i, case in enumerate(d.cases) if case.name.startswith("redrawn")]
    by_key = {o.key: o for o in sandbox.run_batched(jobs, desc="capture oracles")}

    def reason(item: tuple[int, Draft]) -> str | None:
        d_i, d = item
        for c_i, case in enumerate(d.cases):
            failed = take_oracle(case, by_key[(d_i, c_i, 0)], by_key[(d_i, c_i, 1)])
            if failed:
                return f"reference {failed}" + (f" on the {case.name} input" if case.name != "original" else "")
            probe = by_key.get((d_i, c_i, "branch"))
            if probe is not None:
                if probe.status != "ok":
                    return f"reference {probe.status} on the {case.name} input"
                case.branch = probe.result[0]
        return None

    return [d for _, d in keep(list(enumerate(drafts)), reason, rejections, scenario=lambda item: item[1].scenario)]


def take_oracle(case: TestCase, first, second) -> str | None:
    """Fill `case`'s expected outputs and the reference's API-call trace from two runs of the reference; the reason
    they cannot be used, if any."""
    bad = next((o for o in (first, second) if o.status != "ok"), None)
    if bad:
        return bad.status
    if canonical_json([first.result, first.state]) != canonical_json([second.result, second.state]):
        return "differs between two runs"
    case.expected_result = canonical_json(first.result)
    case.expected_state = None if first.state is None else canonical_json(first.state)
    case.trace = None if first.trace is None else stored(first.trace)
    return None


def to_record(d: Draft, config: BuildConfig) -> TaskRecord:
    p = d.program
    return TaskRecord(
        task_id=d.task_id,
        scenario=d.scenario,
        instruction=d.instructions["natural"],
        instruction_steps=d.instructions["steps"],
        instruction_vague=d.instructions["vague"],
        facts=[f.describe() for f in d.facts],
        setup_code=d.cases[0].setup_code,
        api_doc=p.scenario.api_doc(),
        reference_program=p.reference_code(),
        test_cases=d.cases,
        api_calls=[c.api for c in p.all_calls],
        num_api_calls=len(p.all_calls),
        path_depth=p.path_depth(),
        binding_count=p.binding_count(),
        has_branch=p.has_branch,
        notes="; ".join(p.notes),
        seed=config.seed,
        created_at=config.created_at,
        builder_version=__version__,
        translator=config.translator,
        translation={f"{v}_{k}": d.translation[v][k] for v in VARIANTS for k in ("rounds", "verdict")},
        mutation=d.mutation,
    )


def mutation_summary(records: dict[str, list[TaskRecord]]) -> dict:
    """Per scenario: mutants, killed, equivalent, the score (killed / mutants) and test cases per task."""
    out = {}
    for scenario, recs in records.items():
        mutants = sum(r.mutation["mutants"] for r in recs)
        killed = sum(r.mutation["killed"] for r in recs)
        out[scenario] = {"mutants": mutants, "killed": killed, "equivalent": mutants - killed,
                         "score": killed / mutants if mutants else 1.0,
                         "test_cases": mean(len(r.test_cases) for r in recs) if recs else 0.0}
    return out


def scenario_stats(records: list[TaskRecord], curve: list[float]) -> dict:
    if not records:
        return {"tasks": 0, "num_api_calls": 0.0, "path_depth": 0.0, "binding_count": 0.0,
                "with_branch": 0, "pair_coverage": curve[-1] if curve else 0.0}
    return {
        "tasks": len(records),
        "num_api_calls": mean(r.num_api_calls for r in records),
        "path_depth": mean(r.path_depth for r in records),
        "binding_count": mean(r.binding_count for r in records),
        "with_branch": sum(r.has_branch for r in records),
        "pair_coverage": curve[-1] if curve else 0.0,
    }


def build(config: BuildConfig) -> dict:
    """Run the whole pipeline; return the build report (also written beside the dataset)."""
    started = time.perf_counter()
    check_out(Path(config.out))
    fresh = None
    if config.against:  # a fresh split: a seed no previous release used, and the overlap step below
        from builder.fresh import prepare

        fresh = prepare(config)
    rejections: Counter = Counter()
    records: dict[str, list[TaskRecord]] = {}
    stats, curves, translated = {}, {}, {}
    limits = Limits(timeout_s=config.timeout_s)
    with make_executor(config.executor, config.ray_address, config.workers, limits) as sandbox:
        for name in config.scenarios:
            drafts, curve = fuzz(config, name, rejections)
            translated[name] = len(drafts)
            drafts = filter_leaks(translate(config, drafts, rejections), rejections)
            if fresh:
                drafts = fresh.drop_overlaps(drafts, rejections)
            kept = capture_oracles(drafts, sandbox, rejections)
            if config.mutants:
                kept = analyse_mutants(kept, sandbox, config, rejections)
            records[name] = [to_record(d, config) for d in kept]
            stats[name] = scenario_stats(records[name], curve)
            curves[name] = curve
    report = {
        "mutation": mutation_summary(records) if config.mutants else {},
        "attempts": {s: config.n for s in config.scenarios},
        "kept": {s: len(r) for s, r in records.items()},
        "rejections": dict(sorted(rejections.items())),
        "fact_check": {s: {"tasks": translated[s],  # translated in every variant; rejected: by the fact check
                           "rejected": {v: rejections[f"{s}: {v} {FACT_LOST}"] for v in VARIANTS}}
                       for s in config.scenarios},
        "statistics": stats,
        "coverage_curve": curves,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if fresh:
        report["fresh"] = fresh.summary()
    info = {"seed": config.seed, "created_at": config.created_at, "config": config.to_dict()}
    table1 = table1_markdown(records)
    report["manifest"] = write_dataset(Path(config.out), records, info, report, table1)
    report["table1"] = table1  # for the command line; build_report.json is written without it
    return report
