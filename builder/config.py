"""The build's configuration: every default in one place, saved beside the dataset it produced."""

from __future__ import annotations

import datetime as _dt
import random
from dataclasses import asdict, dataclass, field

from evaluate.intervals import tasks_for
from scenarios import get_scenario, scenario_names
from scenarios.base import FRONTIER, PAPER, TIERS

DEFAULT_PRECISION = 0.1  # the default release's worst-case 95% half-width of each scenario's pass@1 (--precision)


@dataclass
class BuildConfig:
    scenarios: list[str] = field(default_factory=scenario_names)
    # programs fuzzed per scenario (tasks kept are at most this many); by default enough that each scenario's
    # pass@1 is known to DEFAULT_PRECISION (a 95% half-width, at worst): 97 programs for 10 points
    n: int = field(default_factory=lambda: tasks_for(DEFAULT_PRECISION))
    tier: str = PAPER  # paper (the paper's programs) or frontier (programs that read the world: builder/frontier.py)
    seed: int = 0
    out: str = "stateeval"
    translator: str = "template"  # or openai:MODEL, vllm:MODEL, hf:PATH (generator + evaluator agents)
    base_url: str | None = None  # OpenAI-compatible endpoint for an openai: translator
    max_rounds: int = 3  # generator/evaluator negotiation rounds before a task is dropped
    concurrency: int = 32  # translation requests in flight (openai: translators)
    workers: int | None = None  # sandbox workers for oracle capture; None = one per core
    executor: str = "local"  # where the sandbox runs: local (this machine's workers) or ray (a Ray cluster)
    ray_address: str | None = None  # the Ray cluster for executor "ray"; None = a local Ray instance
    calls_per_path: int = 5  # API calls on every path through a program (the paper uses 5)
    branches: int = 1  # most if/else splits per program; above 1 they nest (a branch splits on a later value)
    branch_probability: float = 0.5  # chance that each split allowed by `branches` is drawn
    coverage: bool = True  # coverage-guided sampling (False: the paper's uniform ablation)
    recency: float = 6.0  # preference for consuming unused, recent results (builder/fuzz.py); 0 = Algorithm 1 as is
    created_at: str = ""  # YYYY-MM-DD stamped on every task; empty = today (UTC)
    timeout_s: float = 10.0  # per test case when capturing oracles
    redraws: int = 2  # test cases with freshly drawn values of the same schema, besides original and flipped
    mutants: int = 24  # most mutants of a reference tried per task (builder/mutate.py); 0 skips the analysis
    probes: int = 4  # fresh inputs a surviving mutant is tried on before it counts as equivalent
    world_mutants: bool = True  # find each task's world mutants (`--mode tests`); off: no task stores any
    shard_size: int = 500  # tasks per Parquet shard: the build holds at most this many records at once
    # Fresh splits (builder/fresh.py): releases whose tasks this build must not repeat (folders or ORG/NAME@vX.Y.Z)
    fresh: bool = False  # a new seed, today's date, and the overlap filter against `against`
    against: list[str] = field(default_factory=list)
    avoid_seeds: list[int] = field(default_factory=list)  # seeds of those releases' lineage (filled by the build)
    ngram_share: float = 0.5  # drop a task when this share of its instruction 13-grams is in a previous release
    # A fresh split's programs per scenario at most, as a multiple of n, from which the tasks matching the first
    # previous release's strata are kept (builder/match.py); 0 keeps the first n that pass, unmatched
    match_pool: int = 3

    def __post_init__(self) -> None:
        # No date given: today's. A resumed build takes its unfinished build's date instead (builder/checkpoint.py),
        # so the same command still resumes on another day. Not a field: it is how the date was chosen, not content.
        self.dated_today = not self.created_at
        if not self.created_at:
            self.created_at = _dt.datetime.now(_dt.timezone.utc).date().isoformat()
        _dt.date.fromisoformat(self.created_at)  # a clear ValueError for a malformed date
        if self.n < 1:
            raise ValueError("--n must be at least 1")
        if self.calls_per_path < 2:
            raise ValueError("--calls must be at least 2 (a branch needs a call before and after it)")
        if self.branches < 1:
            raise ValueError("--branches must be at least 1 (the most if/else splits per program; "
                             "--branch-probability 0 gives straight programs)")
        if self.redraws < 2:
            raise ValueError("--redraws must be at least 2 (every task carries two test inputs of fresh values)")
        if self.mutants < 0 or self.probes < 0:
            raise ValueError("--mutants and --probes must be 0 or more")
        if self.shard_size < 1:
            raise ValueError("--shard-size must be at least 1 (tasks per shard; the default is 500)")
        from core.sandbox.executor import check_choice

        if problem := check_choice(self.executor, self.ray_address):
            raise ValueError(problem)
        if self.tier not in TIERS:
            raise ValueError(f"--tier must be one of {', '.join(TIERS)} (got {self.tier!r})")
        if self.tier == FRONTIER:
            lacking = [s for s in self.scenarios if FRONTIER not in get_scenario(s).tiers]
            if lacking:
                raise ValueError(f"--tier frontier: the {', '.join(lacking)} scenario{'s have' if len(lacking) > 1 else ' has'} "
                                 f"no frontier tier yet; build it with --scenarios session,tensor,voice")
            if self.translator != "template":
                raise ValueError("--tier frontier words its tasks with the template translator only; "
                                 "leave out --translator")
        if self.max_rounds < 1:
            raise ValueError("--max-rounds must be at least 1")
        if self.translator != "template":
            parse_spec(self.translator)  # a clear ValueError for a malformed spec, before any work
        if self.recency < 0:
            raise ValueError("--recency must be 0 or more (0 turns the preference off)")
        if not 0 <= self.branch_probability <= 1:
            raise ValueError("--branch-probability must be between 0 and 1")
        if self.fresh != bool(self.against):
            raise ValueError("--fresh and --against go together: --fresh --against PREVIOUS (a folder or ORG/NAME@vX.Y.Z)")
        if self.match_pool < 0:
            raise ValueError("--match-pool must be 0 (no matching) or more (programs fuzzed, as a multiple of --n)")
        if not 0 <= self.ngram_share <= 1:
            raise ValueError("--ngram-share must be between 0 and 1 (0: any shared 13-gram is an overlap)")

    def difficulty(self) -> dict:
        """The tier a build belongs to: scores on different tiers measure different tasks and are never ranked
        together. Recorded in MANIFEST.json's config and on the card."""
        if self.tier == FRONTIER:
            return {"tier": FRONTIER}
        return {"calls": self.calls_per_path, "branches": self.branches,
                "tier": f"calls-{self.calls_per_path}-branches-{self.branches}"}

    def to_dict(self) -> dict:
        """What MANIFEST.json records. Where the build ran is left out: it does not change a byte of the shards,
        and a cluster's address does not belong in a published dataset."""
        saved = {k: v for k, v in asdict(self).items() if k not in ("executor", "ray_address")}
        if not self.fresh:  # matching is a fresh split's step: other manifests stay what they were before it
            del saved["match_pool"]
        if self.tier == PAPER:  # a paper build's manifest stays what it was before tiers had names
            del saved["tier"]
        return {**saved, "difficulty": self.difficulty()}


def parse_spec(spec: str) -> tuple[str, str]:
    """`openai:MODEL`, `vllm:MODEL`, `hf:PATH` -> (backend, model)."""
    backend, sep, model = spec.partition(":")
    if not sep or backend not in ("openai", "vllm", "hf") or not model:
        raise ValueError(f"translator {spec!r} is not 'template', openai:MODEL, vllm:MODEL or hf:PATH")
    return backend, model


def rng_for(config: BuildConfig, scenario: str, index: int, purpose: str) -> random.Random:
    """Independent, reproducible streams per task and purpose (string seeds hash the same in every process)."""
    return random.Random(f"stateeval/{config.seed}/{scenario}/{index}/{purpose}")
