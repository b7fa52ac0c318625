"""The documentation of a server-derived scenario: each kept tool as its own listing describes it (name, title,
description, arguments with their types and descriptions, answer's schema, annotations), after a preamble on how
a program calls the tools. The tools mode gives a model the same tools with their own JSON schemas."""

from __future__ import annotations

import json
from typing import Any

from scenarios.calling import ToolSpec
from scenarios.mcp.model import ITEM, Model, leaves

PREAMBLE = (
    "Each tool of the server is a Python function of the same name in the program's namespace (no import needed): "
    "call it with the tool's arguments as keyword arguments, e.g. `{example}`. It returns the tool's answer: its "
    "structured content where the tool gives one (exactly the shape under `Answers:`, a `{{result: ...}}` object "
    "included, even where the description speaks only of what it holds), else its text parsed as JSON, else the "
    "text. A tool that reports "
    "an error raises `ToolError` with the server's message. Each tool lists its arguments (`a.b` a field of `a`, "
    "`a[]` each item of the list `a`; optional unless marked required), the shape of its answer where the server "
    "declares one, and what the server says of its effects.")


def shape(schema: Any, depth: int = 0) -> str:
    """A JSON schema as a compact shape: `{key: type}`, `[type]` a list, `?` an optional key."""
    if not isinstance(schema, dict) or depth > 5:
        return "any"
    kind = schema.get("type")
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required", []))
        inner = ", ".join(f"{k}{'' if k in required else '?'}: {shape(v, depth + 1)}"
                          for k, v in schema.get("properties", {}).items())
        return "{" + inner + "}"
    if kind == "array":
        return f"[{shape(schema.get('items') or {}, depth + 1)}]"
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    return str(kind or "any")


def arguments(tool: dict) -> list[str]:
    """One line per argument leaf: `path` (type, required): description."""
    schema = tool.get("inputSchema") or {}
    lines = []
    for path, leaf in leaves(schema):
        name = ".".join(path).replace(f".{ITEM}", "[]")
        top = schema.get("required", [])
        need = ", required" if len(path) == 1 and path[0] in top else ""
        text = leaf.get("description") or ""
        lines.append(f"- `{name}` ({shape(leaf)}{need})" + (f": {text}" if text else ""))
    return lines


def effects(tool: dict) -> str:
    hints = tool.get("annotations") or {}
    said = [label for key, label in (("readOnlyHint", "read-only"), ("destructiveHint", "destructive"),
                                     ("idempotentHint", "idempotent")) if hints.get(key) is True]
    return f"The server marks it {', '.join(said)}." if said else ""


def tool_text(tool: dict) -> list[str]:
    lines = [tool.get("description") or "(no description)"]
    args = arguments(tool)
    lines += (["Arguments:", *args] if args else ["Takes no arguments."])
    if tool.get("outputSchema"):
        lines.append(f"Answers: `{shape(tool['outputSchema'])}`.")
    said = effects(tool)
    return lines + ([said] if said else [])


def documentation(name: str, model: Model) -> str:
    kept = model.kept()
    example = f"{kept[0]['name']}(...)" if kept else "tool(...)"
    lines = [f"# The {name} MCP server", "", PREAMBLE.format(example=example), ""]
    for tool in kept:
        title = tool.get("title")
        lines += [f"## `{tool['name']}`" + (f" ({title})" if title else ""), *tool_text(tool), ""]
    return "\n".join(lines)


def tool_spec(tool: dict) -> ToolSpec:
    """A tool as the server lists it, as a model gets it in tools mode: its own name, description and schema."""
    return ToolSpec(tool["name"], tool.get("description") or "", tool.get("inputSchema") or {"type": "object"})
