"""A tiny MCP server for the tests, unlike the memory server in every way the derivation relies on: the server makes
up the ids (`create_task` answers `{"id": "t-1", ...}`), no tool carries annotations (the reader is found by
probing), the ids are referred to as `task_id`, and its state lives in a JSON file in the folder it is given, also
shown as the resource tasks://all.

    python fake_server.py FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

STORE = Path(sys.argv[1]) / "tasks.json"


def load() -> dict:
    return json.loads(STORE.read_text()) if STORE.exists() else {"next": 1, "tasks": []}


def save(state: dict) -> None:
    STORE.write_text(json.dumps(state))


server = MCPServer("tasks", log_level="WARNING")


@server.tool(description="Create a task with a title. Answers the new task, whose id the server chooses.")
def create_task(title: str) -> dict:
    state = load()
    task = {"id": f"t-{state['next']}", "title": title, "done": False}
    state["next"] += 1
    state["tasks"].append(task)
    save(state)
    return task


@server.tool(description="Mark a task done.")
def complete_task(task_id: str) -> dict:
    state = load()
    for task in state["tasks"]:
        if task["id"] == task_id:
            task["done"] = True
            save(state)
            return task
    raise ToolError(f"no task {task_id}")


@server.tool(description="Delete a task.")
def delete_task(task_id: str) -> dict:
    state = load()
    kept = [t for t in state["tasks"] if t["id"] != task_id]
    if len(kept) == len(state["tasks"]):
        raise ToolError(f"no task {task_id}")
    state["tasks"] = kept
    save(state)
    return {"deleted": task_id}


@server.tool(description="Forget every task (the server file's reset call).")
def reset_tasks() -> dict:
    save({"next": 1, "tasks": []})
    return {"reset": True}


@server.tool(description="List every task.")
def list_tasks() -> dict:
    return {"tasks": load()["tasks"]}


@server.resource("tasks://all", name="tasks", mime_type="application/json", description="Every task.")
def all_tasks() -> str:
    return json.dumps(load()["tasks"])


if __name__ == "__main__":
    server.run("stdio")
