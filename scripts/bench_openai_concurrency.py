"""Concurrent generation through the openai backend versus one request at a time.

A local OpenAI-compatible server answers every request after --delay seconds (200 ms by default); the same
--tasks requests are generated once with --concurrency and once sequentially (concurrency 1), in one run.

  python scripts/bench_openai_concurrency.py --tasks 120 --delay 0.2 --concurrency 32
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.backends import Request, Sampling  # noqa: E402
from core.backends.openai_api import OpenAIBackend  # noqa: E402
from tests.evaluate.scripted_server import ScriptedServer  # noqa: E402


def timed(base_url: str, n: int, concurrency: int) -> float:
    backend = OpenAIBackend("scripted", base_url=base_url, concurrency=concurrency)
    requests = [Request(f"t-{i}", 0, [{"role": "user", "content": f"task {i}"}]) for i in range(n)]
    got = []
    backend.prepare()  # importing openai and probing the endpoint happen once per run, not per request: untimed
    start = time.perf_counter()
    backend.generate(requests, Sampling(), lambda r, reply: got.append(reply))
    seconds = time.perf_counter() - start
    assert len(got) == n
    return seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=120)
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=32)
    a = p.parse_args()
    with ScriptedServer(lambda body: "```python\nRESULT = []\n```", delay_s=a.delay) as server:
        concurrent = timed(server.base_url, a.tasks, a.concurrency)
        sequential = timed(server.base_url, a.tasks, 1)
    print(f"{a.tasks} requests, {a.delay * 1000:.0f} ms each: sequential {sequential:.2f} s, "
          f"concurrency {a.concurrency} {concurrent:.2f} s, ratio {concurrent / sequential:.3f} "
          f"({100 * concurrent / sequential:.1f}% of the sequential time)")


if __name__ == "__main__":
    main()
