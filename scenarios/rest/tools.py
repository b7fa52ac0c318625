"""A service-derived scenario's operations as tools (`--mode tools`): which operations are kept, and each one's
tool, built from the same operation definitions as the documentation. The state machine (`machine.py`) and the
world (`world.py`) both use them.
"""

from __future__ import annotations

from scenarios.calling import ToolSpec
from scenarios.rest.model import Model, is_item, path_parameters
from scenarios.rest.openapi import Operation
from scenarios.rest.schema import to_json

CALLABLE = ("GET", "POST", "PUT", "PATCH", "DELETE")
MAX_DESCRIPTION = 1000  # characters of an operation's description a tool repeats
ANSWERS = ' Answers {"status": the HTTP status code, "body": the JSON answer or null}.'


def kept_operations(model: Model) -> list[Operation]:
    """The operations served as APIs and tools: those the probe could call, less the deletes of whole
    collections."""
    return [op for op in model.operations if op.id not in model.broken and op.method in CALLABLE
            and not (op.method == "DELETE" and not is_item(op))]


def sends_body(op: Operation) -> bool:
    return op.body is not None and op.method in ("POST", "PUT", "PATCH")


def tool_spec(op: Operation, model: Model) -> ToolSpec:
    """One kept operation as a tool: named by its operation id, with its path and query parameters and its JSON body
    (`body`) as parameters. Path parameters and `body` take handles: the id a creator answered is
    `r<k>['body']` and the path the answer gives it in (`Model.id_fields`)."""
    props, required = {}, []
    for p in op.parameters:
        if p.location in ("path", "query"):
            props[p.name] = {**to_json(p.schema), "description": p.description or f"the {p.location} parameter"}
            if p.required:
                required.append(p.name)
    if sends_body(op):
        props["body"] = {**to_json(op.body.schema), "description": "the JSON body"}
        if op.body.required:
            required.append("body")
    text = " ".join(part.strip().rstrip(".") + "." for part in (op.summary, op.description[:MAX_DESCRIPTION])
                    if part.strip())
    made = model.id_fields.get(op.id) if model.creates(op) else None
    where = f" The new item's id is at {''.join(f'[{k!r}]' for k in made)} of the answer's body." if made else ""
    return ToolSpec(op.id, f"{op.method} {op.path}: {text}{where}{ANSWERS}".replace(":  ", ": "),
                    {"type": "object", "properties": props, "required": required},
                    (*path_parameters(op), *(("body",) if sends_body(op) else ())))
