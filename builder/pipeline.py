"""The build: a chain of steps over one record type (`Draft`); every rejection carries a counted reason.

fuzz -> assemble test cases -> translate -> filter -> capture oracles (sandbox, twice) -> mutants -> write a shard,
a shard's worth of programs at a time (`Run`), then the manifest and card once every shard is written.

Fuzzing is sequential within a scenario because one coverage recorder steers all its programs (`Fuzzer` carries
it from batch to batch); oracle capture, the slow part, runs every test case of a batch's tasks through the
sandbox's warm worker pool. After each shard a checkpoint (`builder/checkpoint.py`) saves the fuzzer and every
tally, so a killed build resumes from its finished shards with the same bytes.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from builder import __version__
from builder.config import BuildConfig, rng_for
from builder.checkpoint import CHECKPOINT, Checkpoint, exclusive
from builder.dataset import check_out, finish_dataset, write_shard
from builder.draft import Draft, keep
from builder.fresh import FreshSplit, prepare
from builder.fuzz import CoverageRecorder, NoValidCall
from builder.mutate import analyse_mutants
from evaluate.mutation_score import analyse_world
from builder.oracles import capture_oracles
from builder.stats import Table1, exact_mean, format_table
from builder.base import BaseProgram
from builder.program import generate_program
from builder import frontier
from builder.agents import AgentTranslator
from builder import facts
from builder.translate import Item, TemplateTranslator
from core.records import TaskRecord, TestCase
from core.progress import progress
from core.sandbox.executor import make_executor
from core.sandbox.harness import Executor, Limits
from scenarios import get_scenario
from scenarios.rest.learned import decide, made_up
from scenarios.base import FRONTIER, VARIANTS


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


def make_cases(program: BaseProgram, config: BuildConfig, index: int) -> list[TestCase]:
    """The test cases of the program numbered `index` in its scenario (`BaseProgram.test_cases`)."""
    return program.test_cases(config, index)


@dataclass
class Fuzzer:
    """A scenario's fuzzing state, carried from program to program: the coverage recorder that steers generation,
    a 64-bit digest of every program made so far (a repeat is dropped), and the coverage curve (one float per
    program). Programs are made in index order, in as many `programs` calls as the build likes; `to_state` saves
    the state in a checkpoint, so a resumed build goes on from where it stopped without making them again."""

    scenario: str
    recorder: CoverageRecorder = field(default_factory=CoverageRecorder)
    seen: set[int] = field(default_factory=set)
    curve: list[float] = field(default_factory=list)

    def programs(self, config: BuildConfig, start: int, stop: int, rejections: Counter) -> list[Draft]:
        """The drafts of programs `start` to `stop - 1`, which must follow the programs made before."""
        if start != len(self.curve):
            raise ValueError(f"{self.scenario}: program {start} asked for after {len(self.curve)} programs")
        scenario = get_scenario(self.scenario)
        api_names = [a.name for a in scenario.apis]
        drafts = []
        bar = progress(stop - start, f"fuzz {self.scenario}", "task")
        for i in range(start, stop):
            bar.update()
            try:
                if config.tier == FRONTIER:
                    program = frontier.generate(scenario, rng_for(config, self.scenario, i, "frontier"))
                else:
                    program = generate_program(
                        scenario, rng_for(config, self.scenario, i, "fuzz"), self.recorder,
                        config.calls_per_path + scenario.make_calls, config.branch_probability, config.coverage, config.branches,
                        config.recency,
                    )
            except NoValidCall:
                rejections[f"{self.scenario}: fuzzer found no valid call"] += 1
                continue
            finally:
                self.curve.append(self.recorder.coverage(api_names))
            cases = make_cases(program, config, i)
            key = int.from_bytes(hashlib.blake2b(f"{cases[0].setup_code}\0{program.reference_code()}".encode(),
                                                 digest_size=8).digest(), "big")
            if key in self.seen:
                rejections[f"{self.scenario}: duplicate program"] += 1
                continue
            self.seen.add(key)
            unfit = program.unfit(config)
            if unfit:
                rejections[f"{self.scenario}: {unfit}"] += 1
                continue
            drafts.append(Draft(f"{self.scenario}-{i:04d}", self.scenario, program, index=i, cases=cases))
        bar.close()
        return drafts

    def to_state(self) -> dict:
        return {"recorder": [[list(pair), count] for pair, count in self.recorder.counts.items()],
                "seen": sorted(self.seen), "curve": self.curve}

    @classmethod
    def from_state(cls, scenario: str, state: dict) -> "Fuzzer":
        recorder = CoverageRecorder(Counter({tuple(pair): count for pair, count in state["recorder"]}))
        return cls(scenario, recorder, set(state["seen"]), list(state["curve"]))


def fuzz(config: BuildConfig, scenario_name: str, rejections: Counter) -> tuple[list[Draft], list[float]]:
    """Every program of a scenario at once (the build itself goes shard by shard: `build`), and the coverage curve."""
    fuzzer = Fuzzer(scenario_name)
    return fuzzer.programs(config, 0, config.n, rejections), fuzzer.curve


# The generator each variant's wording draws from: `steps` keeps the purpose the only variant had at first, so its
# text is what earlier versions wrote for the same seed.
PURPOSES = {"steps": "translate", "natural": "translate-natural", "vague": "translate-vague"}
ACCEPTED = ("template", "OK")
FACT_LOST = "translation leaves out a fact the oracle checks"  # the rejection reason, after the variant


def translate(config: BuildConfig, drafts: list[Draft], rejections: Counter, translator=None) -> list[Draft]:
    """Every instruction variant of every draft. A task is dropped when a variant is not accepted (an LLM
    evaluator's verdict) or leaves out a fact its oracle depends on (`builder/facts.py`), counted by reason.
    `translator`: one made by `get_translator(config)` already (a build makes one for all its batches)."""
    items = [Item(d.task_id, d.cases[0].setup_code, d.program,
                  {v: rng_for(config, d.scenario, d.index, PURPOSES[v]) for v in VARIANTS}) for d in drafts]
    results = (translator or get_translator(config)).translate_all(items)

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


def to_record(d: Draft, config: BuildConfig) -> TaskRecord:
    p = d.program
    api_calls = p.recorded_calls(d.cases[0])
    return TaskRecord(
        task_id=d.task_id,
        scenario=d.scenario,
        instruction=d.instructions["natural"],
        instruction_steps=d.instructions["steps"],
        instruction_vague=d.instructions["vague"],
        facts=[f.describe() for f in d.facts],
        setup_code=d.cases[0].setup_code,
        api_doc=p.api_doc(),
        api_doc_enriched=p.enriched_doc(),
        reference_program=p.reference_code(),
        test_cases=d.cases,
        api_calls=api_calls,
        num_api_calls=len(api_calls),
        path_depth=p.path_depth(),
        binding_count=p.binding_count(),
        has_branch=p.has_branch,
        levers=p.levers(),
        notes="; ".join(p.notes),
        seed=config.seed,
        created_at=config.created_at,
        builder_version=__version__,
        translator=config.translator,
        translation={f"{v}_{k}": d.translation[v][k] for v in VARIANTS for k in ("rounds", "verdict")},
        mutation=d.mutation,
    )


@dataclass
class Tally:
    """A scenario's numbers for the build report (`statistics`, `mutation`), summed task by task: a build of any
    size holds these few integers, not its records."""

    tasks: int = 0
    num_api_calls: int = 0
    path_depth: int = 0
    binding_count: int = 0
    with_branch: int = 0
    mutants: int = 0
    killed: int = 0
    test_cases: int = 0
    # world mutants (`evaluate.mutation_score.analyse_world`): tried, changing the reference test's run, killed by
    # it, and the tasks that keep theirs (a tests-mode task) or fall below the bar
    world_tried: int = 0
    world_changed: int = 0
    world_killed: int = 0
    world_kept: int = 0
    world_tasks: int = 0
    world_below: int = 0

    def add(self, r: TaskRecord) -> None:
        self.tasks += 1
        self.num_api_calls += r.num_api_calls
        self.path_depth += r.path_depth
        self.binding_count += r.binding_count
        self.with_branch += r.has_branch
        self.mutants += r.mutation.get("mutants", 0)
        self.killed += r.mutation.get("killed", 0)
        self.test_cases += len(r.test_cases)

    def add_world(self, world) -> None:
        self.world_tried += len(world.candidates)
        self.world_changed += len(world.changed)
        self.world_killed += len(world.killed)
        self.world_kept += len(world.kept)
        self.world_tasks += bool(world.kept)
        self.world_below += not world.kept

    def world_mutants(self) -> dict:
        """The report's world-mutant summary: what the reference tests killed, and the tasks kept for tests mode."""
        return {"tried": self.world_tried, "changed": self.world_changed, "killed": self.world_killed,
                "score": self.world_killed / self.world_changed if self.world_changed else 0.0,
                "tests_mode_tasks": self.world_tasks, "below_bar": self.world_below,
                "kept": self.world_kept,
                "mutants_per_task": exact_mean(self.world_kept, self.world_tasks) if self.world_tasks else 0.0}

    def statistics(self, curve: list[float]) -> dict:
        coverage = curve[-1] if curve else 0.0
        if not self.tasks:
            return {"tasks": 0, "num_api_calls": 0.0, "path_depth": 0.0, "binding_count": 0.0, "with_branch": 0,
                    "pair_coverage": coverage}
        return {"tasks": self.tasks, **{k: exact_mean(getattr(self, k), self.tasks)
                                        for k in ("num_api_calls", "path_depth", "binding_count")},
                "with_branch": self.with_branch, "pair_coverage": coverage}

    def mutation(self) -> dict:
        """Mutants, killed, equivalent, the score (killed / mutants) and test cases per task."""
        return {"mutants": self.mutants, "killed": self.killed, "equivalent": self.mutants - self.killed,
                "score": self.killed / self.mutants if self.mutants else 1.0,
                "test_cases": exact_mean(self.test_cases, self.tasks) if self.tasks else 0.0}


@dataclass
class ScenarioRun:
    """One scenario's way through the build: its fuzzer, its tallies, and its finished shards."""

    name: str
    fuzzer: Fuzzer
    tally: Tally = field(default_factory=Tally)
    translated: int = 0  # programs that reached translation (the report's fact_check tasks)
    next: int = 0  # the first program whose task is not in a finished shard (at a checkpoint)
    done: bool = False
    shards: list[dict] = field(default_factory=list)  # {"sha256", "rows"} of each finished shard, in order

    def to_state(self) -> dict:
        return {"fuzzer": self.fuzzer.to_state(), "tally": asdict(self.tally), "translated": self.translated,
                "next": self.next, "done": self.done, "shards": self.shards}

    @classmethod
    def from_state(cls, name: str, state: dict) -> "ScenarioRun":
        return cls(name, Fuzzer.from_state(name, state["fuzzer"]), Tally(**state["tally"]), state["translated"],
                   state["next"], state["done"], state["shards"])


class Run:
    """One build's way through its scenarios, a shard at a time: programs are fuzzed, translated, filtered,
    checked in the sandbox and written `config.shard_size` tasks to a shard, then dropped; what the report and
    the card need is tallied as they pass. `state()` is what the checkpoint saves after each shard."""

    def __init__(self, config: BuildConfig, checkpoint: Checkpoint, fresh: FreshSplit | None = None):
        self.config, self.checkpoint, self.fresh = config, checkpoint, fresh
        state = checkpoint.state
        self.rejections = Counter(state.get("rejections", {}))
        self.table1 = Table1.from_state(state.get("table1", {}))
        saved = state.get("scenarios", {})
        self.scenarios = {name: ScenarioRun.from_state(name, saved[name]) if name in saved
                          else ScenarioRun(name, Fuzzer(name)) for name in config.scenarios}
        if fresh and "fresh" in state:
            fresh.restore(state["fresh"])
        self.match = fresh.matcher(config) if fresh else None  # a matched fresh split (builder/match.py)
        if self.match and "match" in state:
            self.match.restore(state["match"])
        self.translator = get_translator(config)
        # The fields a service makes up, as the interrupted build learned them: its oracles were renamed with
        # those, so the rest of the build (and the dataset) keeps them whatever this run learned.
        for name, fields in state.get("learned", {}).items():
            decide(name, fields)

    def state(self) -> dict:
        state = {"scenarios": {name: s.to_state() for name, s in self.scenarios.items()},
                 "rejections": dict(self.rejections), "table1": self.table1.to_state()}
        learned = {name: list(made_up(name)) for name in self.scenarios if made_up(name) is not None}
        if learned:
            state["learned"] = learned
        if self.fresh:
            state["fresh"] = self.fresh.tallies()
        if self.match:
            state["match"] = self.match.state()
        return state

    def limit(self, s: ScenarioRun) -> int:
        """The most programs fuzzed for a scenario: n, or a matched fresh split's pool."""
        return self.match.limit(s.name) if self.match else self.config.n

    def wanted(self, s: ScenarioRun) -> int:
        """Programs to fuzz next: up to the limit, and for a matched split no more than the places left (at least
        a few: most strata fill before the last places do)."""
        left = self.limit(s) - s.next
        places = self.match.remaining(s.name) if self.match else None
        return left if places is None else min(left, max(4, places) if places > 0 else 0)

    def scenario(self, s: ScenarioRun, sandbox: Executor) -> None:
        """Every remaining program of a scenario. At most one shard of records is alive: each batch of programs
        is as large as the room left in the shard, and a full shard is written, checkpointed and dropped."""
        size, records = self.config.shard_size, []
        while self.wanted(s) > 0:
            records += self.tasks(s, s.next + min(size - len(records), self.wanted(s)), sandbox)
            if len(records) == size:
                self.write(s, records)
                records = []
        if records or not s.shards:  # a scenario that kept no task still gets its (empty) shard
            self.write(s, records, done=True)
        elif not s.done:
            s.done = True
            self.checkpoint.save(self.state())

    def tasks(self, s: ScenarioRun, stop: int, sandbox: Executor) -> list[TaskRecord]:
        """The records of programs `s.next` to `stop - 1` that pass every step; the others counted by reason."""
        config, rejections = self.config, self.rejections
        drafts = s.fuzzer.programs(config, s.next, stop, rejections)
        s.translated += len(drafts)
        drafts = filter_leaks(translate(config, drafts, rejections, self.translator), rejections)
        if self.fresh:
            drafts = self.fresh.drop_overlaps(drafts, rejections)
        kept = capture_oracles(drafts, sandbox, rejections)
        if config.mutants:
            kept = analyse_mutants(kept, sandbox, config, rejections)
        s.next = stop
        records = [to_record(d, config) for d in kept]
        if self.match:
            records = self.match.take(s.name, records, rejections)
        if config.world_mutants:
            for r, world in zip(records, analyse_world(records, sandbox, f"world mutants {s.name}", strict=True)):
                r.world_mutants = [asdict(m) for m in world.kept]
                s.tally.add_world(world)
        for r in records:
            s.tally.add(r)
            self.table1.add(r, frontier=config.tier == FRONTIER)
        return records

    def write(self, s: ScenarioRun, records: list[TaskRecord], done: bool = False) -> None:
        _, digest = write_shard(self.checkpoint.folder, s.name, len(s.shards), records)
        s.shards.append({"sha256": digest, "rows": len(records)})
        s.done = done
        self.checkpoint.save(self.state())

    def report(self, seconds: float) -> dict:
        config, scenarios = self.config, self.scenarios
        report = {
            "mutation": {name: s.tally.mutation() for name, s in scenarios.items()} if config.mutants else {},
            "world_mutants": {name: s.tally.world_mutants() for name, s in scenarios.items()}
            if config.world_mutants else {},
            "attempts": {name: s.next for name, s in scenarios.items()},  # programs fuzzed
            "kept": {name: s.tally.tasks for name, s in scenarios.items()},
            "rejections": dict(sorted(self.rejections.items())),
            "fact_check": {name: {"tasks": s.translated,  # translated in every variant; rejected: by the fact check
                                  "rejected": {v: self.rejections[f"{name}: {v} {FACT_LOST}"] for v in VARIANTS}}
                           for name, s in scenarios.items()},
            "statistics": {name: s.tally.statistics(s.fuzzer.curve) for name, s in scenarios.items()},
            "coverage_curve": {name: s.fuzzer.curve for name, s in scenarios.items()},
            "seconds": round(seconds, 2),
        }
        if self.fresh:
            report["fresh"] = self.fresh.summary()
            if self.match:
                report["fresh"]["match"] = self.match.summary()
        return report


def build(config: BuildConfig, overwrite: bool = False) -> dict:
    """Run the whole pipeline, shard by shard; return the build report (also written beside the dataset).

    The same command after an interrupted build resumes it from its finished shards (`builder/checkpoint.py`);
    one with other settings is refused unless `overwrite`, which discards them."""
    started = time.perf_counter()
    out = Path(config.out)
    check_out(out)
    fresh = None
    if config.against:  # a fresh split: a seed no previous release used, and the overlap step
        fresh = prepare(config)
    with exclusive(out):
        checkpoint = Checkpoint.open(config, overwrite)
        try:
            run = Run(config, checkpoint, fresh)
            if checkpoint.resumed:
                print(f"resuming the unfinished build of {out} in {checkpoint.folder}: "
                      + ", ".join(f"{s.name} from program {s.next} ({len(s.shards)} shards)"
                                  for s in run.scenarios.values()), file=sys.stderr)
            limits = Limits(timeout_s=config.timeout_s)
            with make_executor(config.executor, config.ray_address, config.workers, limits) as sandbox:
                for k, s in enumerate(run.scenarios.values()):
                    if k:
                        sandbox.restart_workers()  # workers that hold only this scenario's world fork faster
                    run.scenario(s, sandbox)
            report = run.report(time.perf_counter() - started)
            info = {"seed": config.seed, "created_at": config.created_at, "config": config.to_dict(),
                    "counts": {name: s.tally.tasks for name, s in run.scenarios.items()}}
            table1 = format_table(run.table1.table())
            shards = {name: [shard["sha256"] for shard in s.shards] for name, s in run.scenarios.items()}
            report["manifest"] = finish_dataset(checkpoint.folder, out, shards, info, report, table1)
        except BaseException:
            checkpoint.abandon()
            raise
        (out / CHECKPOINT).unlink(missing_ok=True)
    report["table1"] = table1  # for the command line; build_report.json is written without it
    return report
