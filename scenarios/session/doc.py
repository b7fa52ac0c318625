"""The model-facing documentation (`api_doc.md`, and `api_doc_frontier.md` for the frontier tier), generated
from the service's own OpenAPI document.

The endpoint reference is rendered from `create_app(...).openapi()`, so what the model reads is what the app
serves at /openapi.json; the surrounding text (how the setup block connects, the data used in this benchmark,
RESULT and checking) is fixed here. `python -m scenarios.session api-doc [--tier frontier] --write` regenerates
the checked-in file, and a test fails when the two differ.

The paper tier's doc ends with ready-made `requests` lines, one per call its tasks make (the paper's setting). The
frontier doc has none: it is a reference, stating each semantic once (in the OpenAPI's description and its
endpoints), and writing the program is the task.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from scenarios.base import FRONTIER, PAPER
from scenarios.calling import ToolSpec

DOC_PATH = Path(__file__).with_name("api_doc.md")
DOC_PATHS = {PAPER: DOC_PATH, FRONTIER: Path(__file__).with_name("api_doc_frontier.md")}
DEFAULT_DESCRIPTION = "Successful Response"  # what FastAPI calls an endpoint's own success response

_HEAD = """\
# Session Service API (HTTP, with `requests`)

A real HTTP service that stores JSON "sessions" for portal applications (cBioPortal's session service). Your
code runs after the setup block, in the same module namespace. The setup block has already executed
`import requests` and defines:

- `BASE_URL`: the address of the running service for this test case (the setup block sets it with
  `BASE_URL = service_url()`; do not hard-code a host or port). Every path below is relative to it, e.g.
  `requests.get(f"{BASE_URL}/api/sessions/{src1}/group")`.
"""
INTRO = _HEAD + """\
- the sources (`src1`, ...), session data dicts (`data1`, ...) and e-mail addresses (`email1`, ...) the task
  names;
- `COND`, when the task branches: a constant that the condition compares against. Use the name, not its
  current value: the task is also checked with a different value of `COND`.

The service already holds some sessions when your code starts. Sessions are grouped by source and type: a
listing, a query or an id only reaches sessions of the source and type in its path.
"""
FRONTIER_INTRO = _HEAD + """\
- the values the task names: sources (`src1`, ...), e-mail addresses (`email1`, ...), titles (`title1`, ...).

The service already holds many sessions when your code starts, over several sources and types. Sessions are
grouped by source and type: a listing, a query or an id only reaches sessions of the source and type in its path.
"""

DATA = """\
## Session data in these tasks

Every session's `data` is a JSON object with a `title` (string), a `description` (string), an `owner` (an
e-mail address) and `members` (a list of e-mail addresses). Edit data locally by building a new dict, e.g.
`{**data1, "owner": email1}` or `{**data1, "members": data1["members"] + [email1]}`; do not modify a dict the
task still refers to under its old name.
"""

CALLS = """\
## The calls, with `requests`

`s` is a source variable, `T` a session type, `d` a data dict, `i` an id, `F` a field path, `v` a value:

```python
sessions = requests.get(f"{BASE_URL}/api/sessions/{s}/T").json()            # list the T sessions of s
i = requests.post(f"{BASE_URL}/api/sessions/{s}/T", json=d).json()["id"]    # add d as a T session of s
found = requests.get(f"{BASE_URL}/api/sessions/{s}/T/query",                # query the T sessions of s
                     params={"field": "F", "value": v}).json()              #   whose field F is v
status = requests.put(f"{BASE_URL}/api/sessions/{s}/T/{i}", json=d).status_code   # update session i to d
status = requests.delete(f"{BASE_URL}/api/sessions/{s}/T/{i}").status_code        # delete session i
```

An update answers 200 and a delete 204, both with an empty body; when the task asks for the status code,
keep `.status_code`.

Lists of sessions are kept exactly as the service returns them (a list of `{"id", "data", "source", "type"}`
objects, oldest first). "The first/second/last session in a list" means index `0`, `1`, `-1`. Ids are made
by the service: use the ids it returns, never invent one.
"""

FRONTIER_SESSIONS = """\
Sessions are kept exactly as the service returns them (`{"id", "data", "source", "type", "version"}`
objects). Ids are made by the service: use the ids it returns, never invent one.
"""

CHECKS = """\
## RESULT

End your program by assigning the variable `RESULT`: a Python list of the values the task asks for, in the
order it names them. When the task branches, set `RESULT` in both branches.

## How your answer is checked

Your code runs in a fresh process for every test case (one per branch of the task), against a service reset to
the same initial sessions. Two things must match the reference solution: `RESULT`, compared as plain JSON
(lists, dicts, strings, numbers), and every session stored in the service after your code ends (all sources
and types: {fields}). A missing `RESULT`, an exception, or a program that runs longer than
the time limit fails the test case. Extra read-only requests do no harm; {writes} the task
does not ask for leaves the stored sessions different and fails the test case.
"""

FRONTIER_CHECKS = """\
## RESULT

End your program by assigning the variable `RESULT`: a Python list of the values the task asks for, in the
order it names them. A value that is itself several values (the ids of the sessions a loop changed) is one item
of `RESULT`: a list, in the order the task names (`[id, [id, id], 3]`).

## How your answer is checked

Your code runs in a fresh process for every test case, each against a service that holds that test case's own
sessions: other sources, people, titles, ids and versions, and collections of other sizes (none, one, exactly a
page, more than a page). Two things must match the reference solution on every test case: `RESULT`, compared
as plain JSON (lists, dicts, strings, numbers), and every session stored in the service after your code ends
(all sources and types: ids, data, source, type and version). A missing `RESULT`, an exception, or a program that
runs longer than the time limit fails the test case. Extra read-only requests do no harm; a write the task does
not ask for leaves the stored sessions different and fails the test case.
"""

# What follows the endpoint reference, per tier.
USAGE = "\n".join([DATA, CALLS, CHECKS.format(fields="ids, data, source and type", writes="an add, update or delete")])
FRONTIER_DATA = """\
## Session data in these tasks

Every session's `data` is a JSON object with a `title` (string), a `description` (string), an `owner` (an
e-mail address) and usually `members` (a list of e-mail addresses). Some sessions have no `members` field at
all, and some have `"members": null`: either way, such a session has no members (the members endpoints treat it
as an empty list).

E-mail addresses are not case sensitive: `Ann.Lee@example.org` and `ann.lee@example.org` are the same person.
Sessions keep an address as it was written, so one person may be spelled differently in different sessions, and
in the setup block too. When a task says that someone owns a session or is one of its members, it means that
person, however the address is spelled, and when it counts people, addresses that differ only in letter case
count as one person. The members endpoints compare addresses ignoring case (adding
`ann.lee@example.org` where `Ann.Lee@example.org` is a member changes nothing, and removing it removes
`Ann.Lee@example.org`). The list, query, fetch and bulk delete endpoints compare strings exactly as stored.

No session lists the same person twice among its members. Titles are compared exactly (case and spaces
included). The order of the keys of `data` never matters: the service compares data as JSON values (whether two
sessions hold identical data included), and so does the check of your answer. A program that writes an address
(a new member, a new owner, the owner of a new session) writes it as the setup block spells it when the task names
it by a setup variable, even where a session already lists that person spelled otherwise; when it takes the
address from a session (one of its members, say), it writes it as that session spells it.

A write the service refuses changes nothing. When the service refuses a write to a session with 409 (the write
would give it the same data as another session of its source and type), the program does not retry it and makes
no further write to that session for the same change (the second write of a two-write change included); it goes
on with the next session. That session is not one of the sessions the change was made to. Later steps of the
task treat it like any other session, and what they ask of it is read as it then stands.
"""
FRONTIER_USAGE = "\n".join([FRONTIER_DATA + "\n" + FRONTIER_SESSIONS, FRONTIER_CHECKS])
USAGES = {PAPER: USAGE, FRONTIER: FRONTIER_USAGE}
INTROS = {PAPER: INTRO, FRONTIER: FRONTIER_INTRO}


def _resolve(schema: dict, spec: dict) -> dict:
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[1]
        return {**spec["components"]["schemas"][name], "_name": name}
    return schema


def _shape(schema: dict, spec: dict) -> str:
    """A one-line picture of a JSON schema: {"id": string, ...}, [Session, ...], one of the session types."""
    schema = _resolve(schema, spec)
    if schema.get("_name") == "SessionType":
        return "a session type"
    if schema.get("type") == "array":
        return f"[{_shape(schema.get('items', {}), spec)}, ...]"
    if schema.get("type") == "object" and "properties" in schema:
        fields = ", ".join(f'"{k}": {_shape(v, spec)}' for k, v in schema["properties"].items())
        return "{" + fields + "}"
    if schema.get("type") == "object":
        return "JSON object"
    if "anyOf" in schema:
        return " or ".join(_shape(s, spec) for s in schema["anyOf"])
    return schema.get("type", "any")


def _operation(method: str, path: str, op: dict, spec: dict, shared: dict) -> list[str]:
    lines = [f"### `{method.upper()} {path}` — {op['summary']}", "", op.get("description", ""), ""]
    for p in op.get("parameters", []):
        if shared.get(p["name"]) == p.get("description"):
            continue  # described once, above
        required = "required" if p.get("required") else "optional"
        lines.append(f"- {p['in']} parameter `{p['name']}` ({required}): {p.get('description', '')}")
    body = op.get("requestBody")
    if body:
        schema = body["content"]["application/json"]["schema"]
        example = json.dumps(schema.get("example"), ensure_ascii=False)
        lines.append(f"- JSON body: {schema.get('description', 'JSON')}; e.g. `{example}`")
    for status, resp in op.get("responses", {}).items():
        content = resp.get("content") or {}
        if "application/json" in content and status.startswith("2"):
            what = f"`{_shape(content['application/json'].get('schema', {}), spec)}`"
            if resp.get("description", DEFAULT_DESCRIPTION) != DEFAULT_DESCRIPTION:
                what += f" ({resp['description']})"
        elif "text/plain" in content:
            what = "the version, as plain text"
        else:
            what = resp.get("description", "")
        lines.append(f"- answers {status}: {what}")
    lines.append("")
    return lines


def _shared_parameters(spec: dict) -> dict[str, str]:
    """Path parameters with one description wherever they appear: documented once, before the endpoints."""
    seen: dict[str, set] = {}
    for ops in spec["paths"].values():
        for op in ops.values():
            for p in op.get("parameters", []):
                if p["in"] == "path":
                    seen.setdefault(p["name"], set()).add(p.get("description", ""))
    return {name: next(iter(d)) for name, d in seen.items() if len(d) == 1}


def render_api_doc(spec: dict | None = None, tier: str = PAPER) -> str:
    """The markdown shown to models on `tier`, from `spec` (default: the OpenAPI document of that tier's app)."""
    if tier not in USAGES:
        raise ValueError(f"unknown session service tier {tier!r}: use one of {', '.join(USAGES)}")
    if spec is None:
        from scenarios.session.app import create_app

        spec = create_app(":memory:", tier=tier).openapi()
    types = spec["components"]["schemas"]["SessionType"]["enum"]
    session = spec["components"]["schemas"]["Session"]
    errors = spec["components"]["schemas"]["ErrorBody"]
    lines = [INTROS[tier], f"## Endpoints (OpenAPI {spec['openapi']}, {spec['info']['title']} {spec['info']['version']})",
             "", spec["info"].get("description", ""), ""]
    lines.append("Session types (case sensitive; any other type answers 400): "
                 + ", ".join(f"`{t}`" for t in types) + ".")
    lines.append(f"A session is returned as `{_shape(session, spec)}`. Errors answer "
                 f"`{_shape(errors, spec)}`.")
    lines.append("")
    shared = _shared_parameters(spec)
    lines.append("Path parameters, wherever they appear:")
    lines += [f"- `{{{name}}}`: {text}" for name, text in shared.items()]
    lines.append("")
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            lines += _operation(method, path, op, spec, shared)
    lines.append(USAGES[tier])
    return "\n".join(lines).rstrip() + "\n"


# ------------------------------------------------------------------------------------ the same API as tools


@dataclass(frozen=True)
class Operation:
    """One endpoint of the OpenAPI document as a tool: its path, query and header parameters, and a JSON body as
    `body`."""

    tool: str
    method: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    has_body: bool
    spec: ToolSpec
    header_params: tuple[str, ...] = ()  # the frontier tier's If-Match

    def url(self, arguments: dict) -> str:
        path = self.path
        for name in self.path_params:
            path = path.replace("{" + name + "}", quote(str(arguments[name]), safe=""))
        return path

    def pattern(self) -> re.Pattern:
        regex = re.escape(self.path)
        for name in self.path_params:
            regex = regex.replace(re.escape("{" + name + "}"), f"(?P<{name}>[^/]+)")
        return re.compile(regex)


def _tool_name(operation_id: str, method: str, path: str) -> str:
    """FastAPI's operationId is the function's name + the path with non-word characters as `_` + the method."""
    suffix = re.sub(r"\W", "_", path) + "_" + method
    return operation_id[: -len(suffix)] if operation_id.endswith(suffix) else operation_id


def operations(spec: dict | None = None) -> list[Operation]:
    """Every endpoint of `spec` (default: the app's own OpenAPI document) as a tool that answers
    {"status": the HTTP status code, "body": the JSON answer (None when empty)}."""
    if spec is None:
        from scenarios.session.app import create_app

        spec = create_app(":memory:").openapi()
    out = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            props, required, path_params, query_params, header_params = {}, [], [], [], []
            for p in op.get("parameters", []):
                schema = dict(_resolve(p.get("schema", {}), spec))
                schema = {k: v for k, v in schema.items() if k in ("type", "enum")}
                props[p["name"]] = {**schema, "description": p.get("description", "")}
                {"path": path_params, "header": header_params}.get(p["in"], query_params).append(p["name"])
                if p.get("required"):
                    required.append(p["name"])
            body = op.get("requestBody")
            if body:
                schema = body["content"]["application/json"]["schema"]
                props["body"] = {"type": "object", "description": f"the JSON body: {schema.get('description', '')}"}
                required.append("body")
            name = _tool_name(op.get("operationId", ""), method, path)
            description = (f"{method.upper()} {path}: {op['summary']}. {op.get('description', '')}".strip()
                           + ' Answers {"status": HTTP status code, "body": the JSON answer or null}.')
            tool = ToolSpec(name, description, {"type": "object", "properties": props, "required": required},
                            ("body",) if body else ())
            out.append(Operation(name, method, path, tuple(path_params), tuple(query_params), bool(body), tool,
                                 tuple(header_params)))
    return out
