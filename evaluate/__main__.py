"""python -m evaluate: score a model (or pre-generated code) on a StateEval dataset.

Examples:
  python -m evaluate --model reference --dataset stateeval            # replay the references: must be 100%
  python -m evaluate --model qwen                                      # Qwen2.5-Coder-32B on vLLM (GPU)
  python -m evaluate --model gpt-4.1-nano --n-samples 5 --temperature 0.8
  python -m evaluate --model my-model --backend openai --base-url http://localhost:8000/v1   # vllm serve
  python -m evaluate --model smollm2                                   # offline GGUF on the CPU (slow)
  python -m evaluate --samples answers.jsonl                           # {"task_id": ..., "code": ...} per line
  python -m evaluate --model gpt-4.1-nano --price-in 0.10 --price-out 0.40   # and what the run cost, in USD
  python -m evaluate --model gpt-4.1-nano --mode tools                 # call the APIs as tools, per test case
  python -m evaluate --model gpt-4.1-nano --mode explore --max-turns 5 # try code on a scratch world first
  python -m evaluate --model gpt-4.1-nano --mode tests                 # write tests, scored by the mutants they kill
  python -m evaluate --model gpt-4.1-nano --mode tests --max-turns 3 --refine-on mutated   # refined on a faulty world
  python -m evaluate --samples answers.jsonl --executor ray --ray-address auto   # score on a Ray cluster
  python -m evaluate.report results/*/*/results.json                   # compare runs side by side
  python -m evaluate --model gpt-4.1-nano --doc enriched --scenario my-api  # the documentation with what was observed

Generations are cached in <out>/<model>/<revision>/generations.jsonl; running the same command again resumes.
One run at a time writes that folder: a second one is refused while the first runs.
A job whose sandbox worker dies runs again on a fresh one (twice at most); a sample still without a verdict is
reported as infra_error, outside every rate, and the command exits with code 3: run it again to score those.
"""

from __future__ import annotations

import argparse
import sys

from core.arguments import INCOMPLETE, INTERRUPTED, Parser, at_least_one, positive_seconds, price
from core.backends import ALIASES, BACKENDS, Sampling
from core.records import DOCS
from core.sandbox.executor import add_executor_options, check_choice
from core.statuses import INFRA_ERROR
from evaluate.episodes import DEFAULT_MAX_TURNS, MODES, REFINE_ON, TESTS
from evaluate.run import EvalConfig
from evaluate.usage import Price
from scenarios.base import VARIANTS


def parse_args(argv: list[str] | None = None) -> EvalConfig:
    d, ds = EvalConfig(), Sampling()
    p = Parser(
        prog="python -m evaluate",
        description=(
            "Prompt a model with each task (API documentation, setup block, instruction), run its code in a "
            "sandbox against every test case, compare RESULT and side effects with the oracles, and write "
            "results.json with pass@k and success@k, the error taxonomy, and each sample's status and diagnosis "
            "(partial credit from its API calls against the reference's, and the cause of a failure)."
        ),
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("model")
    g.add_argument("--model", default=None,
                   help=f"an alias ({', '.join(ALIASES)}) or, with --backend, any model id")
    g.add_argument("--backend", choices=list(BACKENDS), default=None, help="default: the alias's backend")
    g.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (openai backend), e.g. vllm serve's")
    g.add_argument("--concurrency", type=at_least_one, default=32, help="requests in flight (openai backend; default 32)")
    g.add_argument("--tensor-parallel-size", type=at_least_one, default=1, help="GPUs per model (vllm backend)")
    g.add_argument("--max-model-len", type=int, default=None, help="context length (vllm backend)")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.9, help="share of GPU memory (vllm backend)")
    g.add_argument("--batch-size", type=at_least_one, default=1, help="prompts per generate call (hf backend)")
    g.add_argument("--samples", default=None, help="score pre-generated code from a JSONL file instead of a model")
    s = p.add_argument_group("sampling")
    s.add_argument("--n-samples", type=at_least_one, default=d.n_samples, help="samples per task; pass@k is reported for k <= n")
    s.add_argument("--temperature", type=float, default=ds.temperature, help="default 0")
    s.add_argument("--greedy", action="store_true", help="temperature 0 (one sample is enough)")
    s.add_argument("--max-new-tokens", type=at_least_one, default=ds.max_new_tokens, help=f"default {ds.max_new_tokens}")
    s.add_argument("--seed", type=int, default=ds.seed, help="sampling seed (sample i uses seed + i)")
    t = p.add_argument_group("tasks and output")
    t.add_argument("--dataset", default=d.dataset, help="dataset folder, or a Hub repo id (default: stateeval)")
    t.add_argument("--revision", default=None, help="dataset version (git tag on the Hub), e.g. v1.0.0")
    t.add_argument("--scenario", default=None, help="comma-separated scenarios to score (default: all splits)")
    t.add_argument("--variant", choices=VARIANTS, default="natural",
                   help="instruction shown to the model: natural (default; as a developer asks, results referred "
                        "to by what they are), steps (numbered steps dictating every call, parameter and name; "
                        "the easy tier, results_steps.json) or vague (the intent and every value without API or "
                        "parameter names; results_vague.json). Every variant states the same facts")
    t.add_argument("--doc", choices=DOCS, default="spec",
                   help="documentation shown to the model: spec (default; the task's api_doc) or enriched (its "
                        "api_doc_enriched: the same text with what a running instance of the service or MCP server "
                        "showed that it does not state; results_enriched.json). Scored on the same tasks, the two "
                        "runs are compared by python -m evaluate.report's paired test: what the documentation's gaps "
                        "cost a model")
    m = p.add_argument_group(
        "evaluation mode", "code (default): the model writes one program from the documentation, blind. tools: "
        "each test case is a conversation in which the model calls the APIs as tools (JSON schemas; tensors and "
        "speeches are handles) and sees each result, then calls submit_result; its calls and submission are "
        "scored like a program's RESULT and final state. explore: the model may run code snippets in a scratch "
        "world with other stored data before it answers with a program, scored as in code mode. tests: the model "
        "writes a test of the task's requirement (its instruction in the variant), scored by the world mutants "
        "the task stores that it fails on while passing the correct world (results_tests.json: pass@1 as 'kills "
        "every mutant', the mean mutation score, the mutant kinds missed). tools, explore and tests with "
        "--max-turns need the openai, vllm or reference backend; results_tools.json / results_explore.json.")
    m.add_argument("--mode", choices=MODES, default=d.mode, help="code, tools, explore or tests (default code)")
    m.add_argument("--max-turns", type=at_least_one, default=None,
                   help=f"model turns per conversation (tools), or code runs before the answer (explore; default "
                        f"{DEFAULT_MAX_TURNS} for both; tests: none unless given, then the model may run its test "
                        "on a live world and revise it up to this many times)")
    m.add_argument("--refine-on", choices=REFINE_ON, default=None,
                   help="tests mode with --max-turns: the world the model's test runs on while it refines it: "
                        "correct (default; the first test case's world) or mutated (that world with one of the "
                        "task's mutants, sample k taking the k-th), the experiment of refining against a faulty "
                        "implementation; recorded in results_tests.json")
    t.add_argument("--limit", type=at_least_one, default=None,
                   help="score only the first N tasks of each scenario (in the dataset's order)")
    t.add_argument("--since", default=None, metavar="YYYY-MM-DD",
                   help="score only tasks created after this date (e.g. a model's training cut-off; fresh splits)")
    t.add_argument("--out", default=d.out, help="results root; a run writes <out>/<model>/<revision>/ (default results)")
    add_executor_options(t, d.executor)
    t.add_argument("--timeout", type=positive_seconds, default=d.timeout_s, dest="timeout_s",
                   help=f"seconds per test case (default {d.timeout_s})")
    t.add_argument("--plot", action="store_true", help="also write PNG figures: pass@1 and the outcome of each sample per scenario, the causes of "
                        "failure per scenario, a histogram of partial credit (needs matplotlib); on a run already "
                        "finished with these settings, drawn from its results.json without scoring again")
    c = p.add_argument_group(
        "cost", "Every run records the prompt and completion tokens of each sample and their sums (results.json: "
        "usage). Give both prices to have them turned into USD, per run and per scenario.")
    c.add_argument("--price-in", type=price, default=None, metavar="USD",
                   help="price of a million prompt (input) tokens, e.g. 0.10")
    c.add_argument("--price-out", type=price, default=None, metavar="USD",
                   help="price of a million completion (output) tokens, e.g. 0.40")
    a = p.parse_args(argv)
    if not a.model and not a.samples:
        p.error("pass --model (an alias such as 'reference', or a model id with --backend) or --samples FILE")
    if a.samples and a.mode not in ("code", TESTS):
        p.error(f"--samples scores programs (the code mode) or tests (--mode tests); --mode {a.mode} needs a model "
                "that converses (--model)")
    if a.samples and a.mode == TESTS and a.max_turns:
        p.error("--max-turns refines a model's test by conversation; with --samples there is none: leave it out")
    if a.refine_on is not None and not (a.mode == TESTS and a.max_turns):
        p.error("--refine-on chooses the world a test is refined on: it needs --mode tests and --max-turns K")
    if a.plot and a.mode == TESTS:
        p.error("--plot draws code-mode figures; a tests-mode run has none (its numbers are in results_tests.json)")
    if problem := check_choice(a.executor, a.ray_address):
        p.error(problem)
    if (a.price_in is None) != (a.price_out is None):
        p.error("--price-in and --price-out go together: give both (0 for a side that is free)")
    scenarios = [x.strip() for x in a.scenario.split(",")] if a.scenario else None
    sampling = Sampling(temperature=0.0 if a.greedy else a.temperature, max_new_tokens=a.max_new_tokens, seed=a.seed)
    options = {"base_url": a.base_url, "concurrency": a.concurrency, "tensor_parallel_size": a.tensor_parallel_size,
               "max_model_len": a.max_model_len, "gpu_memory_utilization": a.gpu_memory_utilization,
               "batch_size": a.batch_size}
    return EvalConfig(
        model=a.model, backend=a.backend, dataset=a.dataset, revision=a.revision, scenarios=scenarios,
        n_samples=a.n_samples, samples=a.samples, out=a.out, limit=a.limit, since=a.since, workers=a.workers,
        executor=a.executor, ray_address=a.ray_address,
        timeout_s=a.timeout_s, sampling=sampling, backend_options=options, plot=a.plot, variant=a.variant, doc=a.doc,
        price=None if a.price_in is None else Price(a.price_in, a.price_out), mode=a.mode,
        max_turns=a.max_turns,
        refine_on=a.refine_on or d.refine_on,
    )


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    from core.backends import BackendError, UnknownModel
    from core.errors import DISK_FULL, CannotWrite, cannot_write
    from core.records import DatasetError
    from core.sandbox.executor import ExecutorError
    from core.sandbox.harness import SandboxFault
    from evaluate.run import format_usage, resume_note, run
    from evaluate.runlock import RunFolderError

    try:
        report = run(config)
    except (DatasetError, UnknownModel, BackendError, ExecutorError, SandboxFault, RunFolderError,
            CannotWrite) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the sandbox has already stopped its workers and removed their folders
        print(f"interrupted; {resume_note(config)}", file=sys.stderr)
        return INTERRUPTED
    except OSError as exc:  # writing the conversations on a full disk
        if exc.errno not in DISK_FULL:
            raise
        resume = f", then run the same command again ({resume_note(config)})"
        print(f"error: {cannot_write(exc.filename or config.out, exc, resume=resume)}", file=sys.stderr)
        return 2
    if report["mode"] == TESTS:
        from evaluate.tests_mode import format_tests_table

        print(format_tests_table(report["summary"]))
    else:
        from evaluate.run import format_table

        print(format_table(report["summary"]))
    print(format_usage(report["usage"]))
    if "turns" in report:
        t = report["turns"]
        print(f"mode {report['mode']}: {t['conversations']} conversations, {t['mean']:.1f} model turns on average, "
              f"at most {t['max']} (limit {report['max_turns']})")
    if report.get("reused"):  # --plot on a finished run: its report is the one already there
        print(f"read {report['path']} (kept as {report['run_path']}): nothing was scored again")
    else:
        print(f"wrote {report['path']}")
        print(f"kept this run as {report['run_path']}")
    for fig in report.get("figures", []):
        print(f"wrote {fig}")
    return INCOMPLETE if report["summary"]["overall"].get(INFRA_ERROR) else 0  # (samples without a verdict)


if __name__ == "__main__":
    sys.exit(main())
