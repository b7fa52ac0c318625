"""Server files for the tests: a tiny MCP server on the official SDK (fake_server.py: ids made up by the server, no
annotations, a reset tool), and the shipped memory server's file, whose server `.ci/run` installs with npm
(`npm ci --prefix scenarios/mcp/servers`). Its tests are skipped when it is not installed, unless
STATEEVAL_REQUIRE_MCP is set (as .ci/run does)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FAKE = Path(__file__).with_name("fake_server.py")
MEMORY = ROOT / "scenarios" / "mcp" / "servers" / "node_modules" / ".bin" / "mcp-server-memory"
needs_memory = pytest.mark.skipif(not MEMORY.exists() and not os.environ.get("STATEEVAL_REQUIRE_MCP"),
                                  reason="needs the memory server: npm ci --prefix scenarios/mcp/servers")

FAKE_FILE = f"""name = "tasks"
command = ["{{python}}", {str(FAKE)!r}, "{{dir}}"]
reset = {{ tool = "reset_tasks" }}
exclude = ["reset_tasks"]

[[population]]
tool = "create_task"
arguments = {{ title = "{{draw:word}} {{draw:word}}" }}
"""


def write_fake(folder: Path, text: str = FAKE_FILE) -> Path:
    path = folder / "tasks.toml"
    path.write_text(text.replace("'", '"'))
    return path


__all__ = ["FAKE", "MEMORY", "ROOT", "needs_memory", "write_fake", "sys"]
