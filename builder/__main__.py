"""python -m builder: build a StateEval dataset folder.

Examples:
  python -m builder --scenarios tensor --n 60 --seed 0 --out stateeval
  python -m builder --scenarios tensor --n 60 --seed 1 --no-coverage --out ablation
  python -m builder --precision 0.05 --out stateeval-large   # 385 programs per scenario: pass@1 within +-5 points
  python -m builder --n 33334 --out stateeval-100k     # 100,000 tasks in constant memory; killed, the same command
                                                       # resumes from the finished shards (--overwrite: start afresh)
  python -m builder --translator openai:gpt-4.1-mini --out stateeval        # LLM agents (OPENAI_API_KEY)
  python -m builder --translator openai:my-model --base-url http://localhost:8000/v1   # e.g. vllm serve
  python -m builder --fresh --against stateeval --out stateeval-fresh   # or --against ORG/stateeval@v1.0.0
  python -m builder --executor ray --ray-address auto    # oracles and mutants on a Ray cluster (ray start)
  python -m builder publish --dir stateeval --repo ORG/stateeval --version v1.0.0 --dry-run   # see --help
  python -m builder readiness --service my-service.toml         # what its documentation misses; see --help
"""

from __future__ import annotations

import argparse
import sys

from builder.config import DEFAULT_PRECISION, BuildConfig
from builder.services import register_service
from core.arguments import INTERRUPTED, Parser, at_least_one, positive_seconds
from core.sandbox.executor import add_executor_options, check_choice
from evaluate.intervals import tasks_for
from scenarios import scenario_names
from scenarios.base import TIERS


MIN_KEPT = 0.5  # a scenario that keeps fewer than this share of the --n programs asked fails the build (exit 1)

# What to change, by the kind of rejection that dropped most of a scenario's programs (first match wins).
ADVICE = (
    (("leaves out a fact",), "the translator's texts drop values or names the oracle checks: use --translator "
                             "template or a model that keeps every value of the steps"),
    (("translation",), "the evaluator agent did not accept the translator's texts: raise --max-rounds or use "
                       "another --translator"),
    (("overlaps a previous release",), "the previous releases already hold most of what this seed draws: raise "
                                       "--ngram-share, or --n"),
    (("its stratum is full",), "the pool held too few programs of the release's mix: raise --match-pool, or give "
                               "--match-pool 0 for an unmatched split"),
    (("weak_oracle",), "the test inputs cannot tell these programs from their mutants: raise --redraws or --probes"),
    (("uncovered_branch",), "no test input takes one branch of these programs' recoveries: raise --probes (more "
                            "populations are drawn), or change --seed"),
    (("fuzzer", "API calls", "duplicate"), "the fuzzer runs out of programs for these settings: lower --calls or "
                                           "--branches, or change --seed"),
)


def shortfalls(report: dict, config: BuildConfig) -> list[str]:
    """One line per scenario that kept fewer than MIN_KEPT of the programs asked: how many, the kind of rejection
    that dropped most of them, and what to change."""
    lines = []
    for s in config.scenarios:
        kept = report["kept"][s]
        if kept >= MIN_KEPT * config.n:
            continue
        kinds: dict[str, int] = {}
        for reason, count in report["rejections"].items():
            if reason.startswith(f"{s}: "):
                kind = reason[len(s) + 2:].split(" (")[0]
                kinds[kind] = kinds.get(kind, 0) + count
        line = f"error: {s} kept {kept} of the {config.n} tasks asked (fewer than {MIN_KEPT:.0%})"
        if kinds:
            kind = max(sorted(kinds), key=kinds.get)
            fix = next((advice for keys, advice in ADVICE if any(k in kind for k in keys)),
                       "see the rejections in build_report.json")
            line += f"; most were dropped as '{kind}' ({kinds[kind]} of {sum(kinds.values())}): {fix}"
        lines.append(line)
    return lines


def half_width(text: str) -> float:
    """--precision: a half-width between 0 and 0.5 (0.05 is five points)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"{text!r} is not a half-width: give a number between 0 and 0.5, for "
                                         "example 0.05 for five points")
    return value


def parse_args(argv: list[str] | None = None) -> BuildConfig:
    return parse(argv)[0]


def parse(argv: list[str] | None = None) -> tuple[BuildConfig, bool]:
    """The build's configuration, and whether --overwrite was given (how to run it, not part of it)."""
    d = BuildConfig()
    p = Parser(
        prog="python -m builder",
        description=(
            "Fuzz programs of stateful API calls from each scenario's state machine, translate them into tasks, "
            "capture oracles by running the references in a sandbox, and write a dataset folder that "
            "datasets.load_dataset() reads. The same seed and --created-at give byte-identical shards. "
            f"Exit codes: 0 done; 1 written, but a scenario kept fewer than {MIN_KEPT:.0%} of the --n asked (one line "
            "says why and what to change); 2 bad input or a failed step; 130 interrupted."
        ),
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--scenarios", default=None,
                   help=f"comma-separated scenarios (default: all of {', '.join(scenario_names())}, or none when "
                        f"--service is given; also "
                        f"{', '.join(sorted(set(scenario_names(examples=True)) - set(scenario_names())))}, the "
                        "worked example of docs/adding-a-scenario.md)")
    p.add_argument("--service", action="append", default=[], metavar="FILE",
                   help="a REST service's file (docs/services.md), or the name of one that comes with StateEval: "
                        "its service is started and probed, and its tasks make a split named after the file's "
                        "`name`; repeat for several, and combine with --scenarios (the dataset keeps a copy of each "
                        "file and of the document read)")
    p.add_argument("--mcp", action="append", default=[], metavar="FILE",
                   help="an MCP server's file (docs/services.md, \"MCP servers\"), or the name of one that comes "
                        "with StateEval: the server is started, its tools listed with the MCP client and probed, and "
                        "its tasks make a split named after the file's `name`, as for --service")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--n", type=int, default=None, help="programs fuzzed per scenario; rejected ones are dropped "
                      f"(default {d.n}: --precision {DEFAULT_PRECISION:g})")
    size.add_argument("--precision", type=half_width, default=None, metavar="H",
                      help="size the build for a precision instead of --n: H is the 95%% interval's half-width "
                           "wanted for each scenario's pass@1 at worst (a rate of 50%%, one sample per task); "
                           f"0.1 fuzzes {tasks_for(0.1)} programs per scenario, 0.05 {tasks_for(0.05)}, "
                           f"0.03 {tasks_for(0.03)}. The card states the half-width of the tasks kept")
    p.add_argument("--seed", type=int, default=d.seed, help="build seed; a new seed gives a fresh split (default 0)")
    p.add_argument("--out", default=d.out, help=f"output folder (default {d.out}); an earlier build there is replaced "
                   "when the new one is complete. Shards are written as they finish into .OUT.partial beside it: "
                   "after a Ctrl-C or a crash the same command resumes from them, with the same bytes as one "
                   "uninterrupted build")
    p.add_argument("--overwrite", action="store_true",
                   help="discard the finished shards of an unfinished build of --out and start afresh (needed to "
                        "build other settings into that --out; without it the same command resumes)")
    p.add_argument("--shard-size", type=at_least_one, default=d.shard_size,
                   help=f"tasks per Parquet shard, and most task records held in memory at once: a build's memory "
                        f"does not grow with --n (default {d.shard_size}; another value gives other shard files "
                        f"and so another content hash)")
    p.add_argument("--translator", default=d.translator,
                   help="how programs become instructions: 'template' (offline, default), or generator + "
                        "evaluator agents on a model: openai:MODEL, vllm:MODEL, hf:PATH (e.g. hf:smollm2)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint for an openai: translator")
    p.add_argument("--max-rounds", type=int, default=d.max_rounds,
                   help=f"generator/evaluator rounds before a task is dropped (default {d.max_rounds})")
    p.add_argument("--concurrency", type=at_least_one, default=d.concurrency,
                   help=f"translation requests in flight for an openai: translator (default {d.concurrency})")
    add_executor_options(p, d.executor, " for oracle capture")
    p.add_argument("--tier", choices=TIERS, default=d.tier,
                   help="paper (default): the paper's programs, every call dictated; frontier: programs that must "
                        "read the world (lookups, loops over paged listings, aggregates, recovery from stale "
                        "writes; stateful PyTorch: training steps, modes, gradients, views; a speech platform: "
                        "library pages, history, quota, jobs, agents) on a populated world (--calls/--branches do "
                        "not apply)")
    p.add_argument("--calls", type=int, default=d.calls_per_path, dest="calls_per_path",
                   help=f"API calls on every path through a program (default {d.calls_per_path})")
    p.add_argument("--branches", type=int, default=d.branches,
                   help=f"most if/else splits per program; above 1 a branch may split again on a later value, each "
                        f"split on its own constant COND1, COND2, ... (default {d.branches}: one split on COND)")
    p.add_argument("--branch-probability", type=float, default=d.branch_probability,
                   help=f"chance that each split allowed by --branches is made (default {d.branch_probability})")
    p.add_argument("--no-coverage", action="store_false", dest="coverage",
                   help="sample uniformly among valid calls instead of coverage guidance (the paper's ablation)")
    p.add_argument("--recency", type=float, default=d.recency,
                   help=f"how strongly the coverage-guided sampler prefers calls that consume results no call has "
                        f"used yet, the newest most: deeper data flow (default {d.recency:g}; 0 = off)")
    p.add_argument("--created-at", default="", help="date stamped on tasks, YYYY-MM-DD (default: today, UTC); "
                   "pass a release's date to reproduce it byte for byte")
    p.add_argument("--timeout", type=positive_seconds, default=d.timeout_s, dest="timeout_s",
                   help=f"seconds per test case when capturing oracles (default {d.timeout_s})")
    m = p.add_argument_group("oracle strength (builder/mutate.py)")
    m.add_argument("--redraws", type=int, default=d.redraws,
                   help=f"test cases of freshly drawn values per task, besides the original and flipped ones "
                        f"(default {d.redraws}, at least 2)")
    m.add_argument("--mutants", type=int, default=d.mutants,
                   help=f"mutants of each reference run on its test cases, besides dropped calls that leave a name "
                        f"undefined (default {d.mutants}; 0 skips mutation analysis)")
    m.add_argument("--probes", type=int, default=d.probes,
                   help=f"fresh inputs a surviving mutant is tried on before it counts as equivalent; one that kills "
                        f"it becomes a test case (default {d.probes})")
    m.add_argument("--no-world-mutants", dest="world_mutants", action="store_false",
                   help="skip the search for each task's world mutants (a run of its reference test per candidate "
                        "fault of the world): no task stores any, so none is scored by python -m evaluate --mode "
                        "tests; the build is faster")
    f = p.add_argument_group("fresh split (no task repeats a previous release; see builder/fresh.py)")
    f.add_argument("--fresh", action="store_true",
                   help="use a seed no --against release used and today's date, and drop every task whose program, "
                        "call sequence or instruction 13-grams overlap those releases")
    f.add_argument("--against", action="append", default=[], metavar="PREVIOUS",
                   help="a previous release: a dataset folder or ORG/NAME@vX.Y.Z (repeat for several)")
    f.add_argument("--ngram-share", type=float, default=d.ngram_share,
                   help="drop a task when at least this share of its instruction 13-grams occurs in a previous "
                        f"release; 0 = any shared 13-gram (default {d.ngram_share})")
    f.add_argument("--match-pool", type=int, default=None, metavar="K",
                   help="fuzz up to K times --n programs per scenario and keep those that match the first "
                        "--against release's mix of API calls, bindings and branches, stratum by stratum "
                        f"(builder/match.py; the card reports the match); 0 keeps the first --n, unmatched "
                        f"(default {d.match_pool})")
    a = p.parse_args(argv)
    if a.match_pool is not None and not a.fresh:
        p.error("--match-pool applies to a fresh split only: add --fresh --against PREVIOUS")
    if problem := check_choice(a.executor, a.ray_address):
        p.error(problem)
    services = [register_service(p, path) for path in a.service] + [register_service(p, path, True)
                                                                    for path in a.mcp]
    chosen = a.scenarios if a.scenarios is not None else "" if services else ",".join(d.scenarios)
    names = [s.strip() for s in chosen.split(",") if s.strip()] + [s for s in services if s not in chosen.split(",")]
    unknown = [s for s in names if s not in scenario_names(examples=True)]
    if unknown or not names:
        p.error(f"unknown scenario(s) {unknown}; choose from {', '.join(scenario_names(examples=True))}")
    try:
        return BuildConfig(
            scenarios=names, n=tasks_for(a.precision) if a.precision else d.n if a.n is None else a.n, seed=a.seed, tier=a.tier, out=a.out, translator=a.translator, workers=a.workers,
            executor=a.executor, ray_address=a.ray_address,
            base_url=a.base_url, max_rounds=a.max_rounds, concurrency=a.concurrency,
            calls_per_path=a.calls_per_path, branches=a.branches, branch_probability=a.branch_probability,
            coverage=a.coverage, recency=a.recency, created_at=a.created_at, timeout_s=a.timeout_s, redraws=a.redraws,
            mutants=a.mutants, probes=a.probes, world_mutants=a.world_mutants, fresh=a.fresh, against=a.against,
            ngram_share=a.ngram_share,
            match_pool=d.match_pool if a.match_pool is None else a.match_pool,
            shard_size=a.shard_size,
        ), a.overwrite
    except ValueError as exc:
        p.error(str(exc))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["publish"]:
        from builder.publish import main as publish_main

        return publish_main(argv[1:])
    if argv[:1] == ["readiness"]:
        from builder.readiness import main as readiness_main

        return readiness_main(argv[1:])
    config, overwrite = parse(argv)
    from builder.checkpoint import describe
    from builder.dataset import DatasetError
    from core.errors import DISK_FULL, CannotWrite, cannot_write
    from core.sandbox.executor import ExecutorError
    from core.backends import BackendError
    from core.sandbox.harness import SandboxFault
    from builder.pipeline import build, translation_cache

    try:
        report = build(config, overwrite)
    except (DatasetError, ValueError, ExecutorError, SandboxFault, BackendError, CannotWrite) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a shard or the card on a full disk
        if exc.errno not in DISK_FULL:
            raise
        kept = describe(config.out)
        print(f"error: {cannot_write(config.out, exc, resume=', then run the same command again')}"
              + (f" ({kept})" if kept else ""), file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the folder is renamed into place at the very end: an interrupt leaves it as it was
        note = f"{config.out} was left as it was"
        kept = describe(config.out)
        if kept:
            note += f"; {kept}"
        if config.translator != "template":
            note += (f"; the translation replies that arrived are cached in {translation_cache(config).parent}, "
                     "re-run the same command to resume")
        print(f"interrupted; {note}", file=sys.stderr)
        return INTERRUPTED
    kept, attempts = report["kept"], report["attempts"]
    for s in config.scenarios:
        print(f"{s}: kept {kept[s]} of {attempts[s]} programs")
    for reason, count in report["rejections"].items():
        print(f"  dropped {count}: {reason}")
    print(f"wrote {config.out} in {report['seconds']} s (content hash {report['manifest']['content_hash'][:12]})")
    print("\nthe paper's Table I on this build (also in the card, README.md):")
    print(report["table1"])
    if "fresh" in report:
        from builder.fresh import describe

        print(describe(report["fresh"], config.created_at))
    short = shortfalls(report, config)
    for line in short:
        print(line, file=sys.stderr)
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
