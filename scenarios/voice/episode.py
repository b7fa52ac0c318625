"""A voice task's episode over MCP: a fresh `python -m scenarios.voice serve` for one test case, driven by the
official SDK's client through a list of tool calls and a submission, and what its `voice://result` then holds.

The server is started from the test case's own world: its stored recording (`--recording`, the paper tier) or its
stored platform (`--platform`, the frontier tier), written to a file in `folder`. `evaluate.episodes.score_reported`
judges what comes back like any test case. Used by `scripts/mcp_reference.py` and the MCP tests.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60  # one whole episode: a hung server fails the episode instead of hanging the caller


def server_command(case, folder: Path, stem: str) -> list[str]:
    """The `serve` arguments that start the test case's world (its stored asset written to `folder`)."""
    for kind, flag in (("platform", "--platform"), ("speech", "--recording")):
        asset = next((a for a in case.assets if a["kind"] == kind), None)
        if asset is not None:
            path = folder / f"{stem}.{kind}.json"
            path.write_bytes(bytes(asset["data"]))
            return ["-m", "scenarios.voice", "serve", flag, str(path)]
    raise ValueError(f"test case {case.name!r} stores neither a platform nor a speech: not a voice task")


async def run_episode(args: list[str], calls: list[dict], submit: list | None) -> dict:
    """Run `calls` ({"name", "arguments"}) in order on a server started as `python ARGS`, then submit_result
    (unless `submit` is None), and answer {"reported": voice://result as JSON, "errors": each call's error text or
    None}. A refused call is the episode's to carry on from, as a model would."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=args, env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    errors: list[str | None] = []
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for call in calls:
                    result = await session.call_tool(call["name"], call["arguments"])
                    errors.append(_text(result) if result.is_error else None)
                if submit is not None:
                    done = await session.call_tool("submit_result", {"result": submit})
                    if done.is_error:
                        raise RuntimeError(f"submit_result was refused: {_text(done)}")
                resource = await session.read_resource("voice://result")
                reported: dict[str, Any] = json.loads(resource.contents[0].text)
    return {"reported": reported, "errors": errors}


def _text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
