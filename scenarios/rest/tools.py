"""A service-derived scenario's operations as tools (`--mode tools`): which operations are kept, and each one's
tool, built from the same operation definitions as the documentation (`scenarios.rest.doc`), whose text is the
tool's description. The state machine (`machine.py`) and the world (`world.py`) both use them.
"""

from __future__ import annotations

from scenarios.calling import ToolSpec
from scenarios.rest.doc import Documentation, shown_parameters
from scenarios.rest.model import Model, is_item, path_parameters
from scenarios.rest.openapi import Operation
from scenarios.rest.schema import to_json

CALLABLE = ("GET", "POST", "PUT", "PATCH", "DELETE")
ANSWERS = 'The tool answers {"status": the HTTP status code, "body": the JSON answer or null}.'


def kept_operations(model: Model) -> list[Operation]:
    """The operations served as APIs and tools: those the probe could call, less the deletes of whole
    collections."""
    return [op for op in model.operations if op.id not in model.broken and op.method in CALLABLE
            and not (op.method == "DELETE" and not is_item(op))]


def documentation(model: Model) -> Documentation:
    """The documentation of the kept operations, less the headers the service file sends."""
    return Documentation(kept_operations(model), model.file.headers if model.file is not None else {})


def sends_body(op: Operation) -> bool:
    return op.body is not None and op.method in ("POST", "PUT", "PATCH")


def made_line(op: Operation, model: Model) -> str | None:
    """Where a creator's answer holds the new item's id (None for an operation that makes nothing)."""
    made = model.id_fields.get(op.id) if model.creates(op) else None
    return f"Answers the new item; its id is `{'.'.join(made)}`." if made else None


def described(op: Operation, model: Model, doc: Documentation) -> list[str]:
    """`op`'s documentation as both the API documentation and its tool show it."""
    made = made_line(op, model)
    return doc.operation(op) + ([made] if made else [])


def tool_spec(op: Operation, model: Model, doc: Documentation) -> ToolSpec:
    """One kept operation as a tool: named by its operation id, described by its documentation (`described`), with
    its path, query and header parameters (less the headers the file sends) and its JSON body (`body`) as
    parameters. Path parameters and `body` take handles: the id a creator answered is `r<k>['body']` and the path
    the answer gives it in (`Model.id_fields`)."""
    props, required = {}, []
    for p in shown_parameters(op, doc.sent):
        props[p.name] = {**to_json(p.schema), "description": p.description or f"the {p.location} parameter"}
        if p.required:
            required.append(p.name)
    if sends_body(op):
        props["body"] = {**to_json(op.body.schema), "description": "the JSON body"}
        if op.body.required:
            required.append("body")
    text = "\n".join(described(op, model, doc))
    made = model.id_fields.get(op.id) if model.creates(op) else None
    where = f" The new item's id is at {''.join(f'[{k!r}]' for k in made)} of the answer's body." if made else ""
    return ToolSpec(op.id, f"{op.method} {op.path}: {text}\n{ANSWERS}{where}".replace(": \n", ":\n"),
                    {"type": "object", "properties": props, "required": required},
                    (*path_parameters(op), *(("body",) if sends_body(op) else ())))


def header_arguments(spec: ToolSpec, op: Operation, sent: dict | None,
                     file_headers: dict[str, str]) -> dict[str, str]:
    """The headers of `sent` that are header parameters the tool `spec` offers and that differ from the file's, by
    the parameter's name."""
    offered = {p.name.lower(): p.name for p in op.parameters
               if p.location == "header" and p.name in spec.parameters["properties"]}
    ours = {k.lower(): v for k, v in file_headers.items()}
    return {offered[k.lower()]: v for k, v in (sent or {}).items()
            if k.lower() in offered and ours.get(k.lower()) != v}
