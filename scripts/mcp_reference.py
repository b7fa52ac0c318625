"""The reference over MCP: every voice task's reference, as the tool calls `--model reference` makes in tools mode,
replayed through the voice MCP server with the official SDK's client, and scored from what the server reports.

For each test case a fresh `python -m scenarios.voice serve` starts from the case's own world (its stored platform
on the frontier tier, its stored speech on the paper tier), the calls run over stdio (a refused call is carried on
from, as in tools mode), `submit_result` submits RESULT, and `evaluate.episodes.score_reported` judges
`voice://result`. The figure printed is the share of test cases (and of tasks, all of whose cases pass) that pass:
100% means the MCP server and the in-process world agree on every result and every side effect.

  python scripts/mcp_reference.py --dataset DIR              # every voice task of a built dataset
  python scripts/mcp_reference.py --dataset DIR --limit 10   # its first 10 voice tasks
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.records import load_tasks  # noqa: E402
from core.sandbox.harness import Sandbox  # noqa: E402
from core.statuses import PASS  # noqa: E402
from evaluate.episodes import score_reported  # noqa: E402
from evaluate.run import trace_references  # noqa: E402
from scenarios.voice.episode import run_episode, server_command  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, help="a dataset folder built by `python -m builder`")
    p.add_argument("--limit", type=int, default=None, help="only the first N voice tasks")
    p.add_argument("--parallel", type=int, default=4, help="episodes (servers) at a time (default: 4)")
    args = p.parse_args(argv)
    if args.parallel < 1:
        p.error("--parallel must be at least 1")

    import anyio
    from tqdm import tqdm

    tasks, _ = load_tasks(args.dataset)
    tasks = [t for t in tasks if t.scenario == "voice"][:args.limit]
    if not tasks:
        p.error(f"{args.dataset} has no voice tasks; build some with --scenarios voice")
    with Sandbox(2) as sandbox:
        scripts = trace_references(tasks, sandbox)
    episodes = [(task, case) for task in tasks for case in task.test_cases]
    verdicts: dict[tuple[str, str], tuple[str, str]] = {}
    started = time.perf_counter()

    with tempfile.TemporaryDirectory() as tmp, tqdm(total=len(episodes), desc="MCP episodes", unit="case") as bar:
        limiter = anyio.Semaphore(args.parallel)

        async def one(task, case):
            async with limiter:
                script = scripts[(task.task_id, case.name)]
                command = server_command(case, Path(tmp), f"{task.task_id}-{case.name}")
                try:
                    out = await run_episode(command, script["calls"], script["submit"])
                    verdicts[(task.task_id, case.name)] = score_reported(task, case, out["reported"])
                except Exception as exc:  # noqa: BLE001 - a broken episode is a failure to report, not a crash
                    verdicts[(task.task_id, case.name)] = ("episode_error", f"{type(exc).__name__}: {exc}")
                bar.update(1)

        async def run_all():
            async with anyio.create_task_group() as group:
                for task, case in episodes:
                    group.start_soon(one, task, case)

        anyio.run(run_all)

    seconds = time.perf_counter() - started
    statuses = collections.Counter(status for status, _ in verdicts.values())
    passed_tasks = sum(all(verdicts[(t.task_id, c.name)][0] == PASS for c in t.test_cases) for t in tasks)
    print(f"{len(tasks)} voice tasks, {len(episodes)} test cases over MCP in {seconds:.0f} s")
    print(f"test cases passed: {statuses[PASS]}/{len(episodes)} ({100 * statuses[PASS] / len(episodes):.1f}%)")
    print(f"tasks passed: {passed_tasks}/{len(tasks)} ({100 * passed_tasks / len(tasks):.1f}%)")
    for (task_id, case), (status, message) in sorted(verdicts.items()):
        if status != PASS:
            print(f"  {task_id} {case}: {status}: {message[:300]}")
    return 0 if statuses[PASS] == len(episodes) else 1


if __name__ == "__main__":
    sys.exit(main())
