"""Tool calling on a scenario's world: the tool definitions a model is given, and the runs behind them.

Two halves, like the scenario itself:

* **definitions** (`ToolSpec`, light): each scenario lists its APIs as tools with JSON-schema parameters, made from
  the same per-API definition its documentation comes from (the tensor operation table, the session service's
  OpenAPI document, the voice MCP server's tools). `submit_result` is added to every scenario's list.
* **runs** (`run_calls`, `trace_calls`; inside a sandbox child only): a list of tool calls is applied to the test
  case's world in order. Values that cannot travel as JSON (tensors, speeches) stay in the child as *handles*:
  the setup block's variables under their own names, the result of the k-th call as `r<k>`. A model names a
  handle where a parameter takes one, and may reach inside it with `[i]`, `['key']` or `.attribute`
  (`r3[0]`, `r2['body']['id']`, `r5.speech`). What comes back is a readable summary of each result, plain JSON.

A run is stateless: every turn of a conversation replays the calls made so far on a freshly reset world, so any
sandbox worker can serve any turn, a crashed worker loses nothing, and re-scoring a recorded conversation is the
same job again. The worlds are deterministic (ids are minted per reset), so the replay returns what the model saw.
"""

from __future__ import annotations

import inspect
import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable

def answer_body(response) -> Any:
    """An HTTP response's body as a tool answers it: its JSON, else its text (None when empty)."""
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


SUBMIT = "submit_result"
RESULT_HANDLE = "r{}"  # the handle of the k-th call's result, k from 1


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a chat API receives it. `handles`: parameters whose strings name handles (each string of a list
    too); a string that names no handle is passed on as it is (a voice tool also takes a speech_id)."""

    name: str
    description: str
    parameters: dict  # a JSON schema of type object
    handles: tuple[str, ...] = ()

    def to_openai(self) -> dict:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


SUBMIT_SPEC = ToolSpec(
    SUBMIT,
    "Give your final answer: the values that form RESULT, in the order the task names them. Each item is a handle "
    "(the setup block's variables by name, the k-th tool result as r<k>, reaching inside with [i], ['key'] or "
    ".attribute, e.g. \"r3\", \"r2['body']['id']\", \"r4[0]\") or a literal JSON value (a number, a list, an "
    "object; wrap a literal string as {\"value\": \"...\"}). Calling it ends the conversation.",
    {"type": "object", "properties": {"result": {
        "type": "array", "description": "the RESULT list: handles or literal values",
        "items": {}}}, "required": ["result"]},
)


# ------------------------------------------------------------------------------------------------ handles

_REF = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)((?:\s*(?:\[\s*-?\d+\s*\]|\[\s*'[^']*'\s*\]|\[\s*\"[^\"]*\"\s*\]"
                  r"|\.[A-Za-z][A-Za-z0-9_]*))*)\s*")
_STEP = re.compile(r"\[\s*(-?\d+)\s*\]|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\.([A-Za-z][A-Za-z0-9_]*)")


class UnknownHandle(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def resolve(ref: str, handles: dict[str, Any]) -> Any:
    """The value a handle reference names (`r3`, `r2['body']['id']`, `r5.speech`); UnknownHandle when the name is
    not a handle, KeyError, IndexError or AttributeError when the path does not exist. No code is evaluated:
    the reference is parsed, and attributes starting with `_` cannot be reached."""
    m = _REF.fullmatch(ref)
    if not m or m[1] not in handles:
        known = ", ".join(sorted(handles)) or "none"
        raise UnknownHandle(f"no handle named {ref!r} (handles: {known})")
    value = handles[m[1]]
    for index, single, double, attr in _STEP.findall(m[2]):
        if attr:
            value = getattr(value, attr)
        elif index:
            value = value[int(index)]
        else:
            value = value[single or double]
    return value


def resolve_arguments(spec: ToolSpec, arguments: dict, handles: dict[str, Any]) -> dict:
    """The call's arguments with every handle parameter's strings replaced by what they name."""

    def one(value):
        if not isinstance(value, str):
            return value
        try:
            return resolve(value, handles)
        except UnknownHandle:
            return value  # a speech_id, or a mistake the tool reports in its own words

    out = dict(arguments)
    for name in spec.handles:
        if name in out:
            out[name] = [one(v) for v in out[name]] if isinstance(out[name], list) else one(out[name])
    return out


def setup_handles(namespace: dict, before: set[str], hidden: frozenset[str]) -> dict[str, Any]:
    """The variables the setup block defined: modules, functions and the world's plumbing left out."""
    return {k: v for k, v in namespace.items()
            if k not in before and not k.startswith("_") and k not in hidden
            and not isinstance(v, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type))}


# --------------------------------------------------------------------------------------------------- runs


@dataclass
class Tools:
    """What a world gives the episode runner: its tool definitions by name, how to call one, how to summarise a
    value for the model, and which setup names are plumbing (the session service's BASE_URL)."""

    specs: dict[str, ToolSpec]
    call: Callable[[dict, str, dict], Any]  # (namespace, tool name, resolved arguments) -> value
    describe: Callable[[Any], Any]
    hidden: frozenset[str] = field(default_factory=frozenset)


def run_calls(tools: Tools, namespace: dict, handles: dict, calls: list[dict]) -> list[dict]:
    """Apply `calls` ({"name", "arguments"}) in order; one report per call: {"handle", "value"} or {"error"}.
    A call that fails binds nothing, and the next goes on: the model reads the error and may try again."""
    reports = []
    for k, call in enumerate(calls, 1):
        spec = tools.specs.get(call.get("name"))
        try:
            if spec is None or call["name"] == SUBMIT:
                raise ValueError(f"unknown tool {call.get('name')!r}")
            if not isinstance(call.get("arguments"), dict):
                raise TypeError("the arguments must be a JSON object")
            value = tools.call(namespace, spec.name, resolve_arguments(spec, call["arguments"], handles))
        except Exception as exc:  # noqa: BLE001 - every failure is the model's to read
            reports.append({"error": f"{type(exc).__name__}: {exc}"[:2000]})
            continue
        handle = RESULT_HANDLE.format(k)
        handles[handle] = value
        reports.append({"handle": handle, "value": tools.describe(value)})
    return reports


def submitted(items: Any, handles: dict) -> list:
    """RESULT from submit_result's items: handle references resolved, literal values kept, {"value": x} unwrapped."""
    if not isinstance(items, list):
        raise TypeError("submit_result takes {\"result\": [...]}: a list of handles or values")
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(resolve(item, handles))
        elif isinstance(item, dict) and set(item) == {"value"}:
            out.append(item["value"])
        else:
            out.append(item)
    return out


# ---------------------------------------------------------------------------------------- reference traces


class Tracer:
    """Records a trusted program's API calls as tool calls, for `--model reference` in tools mode.

    A world wraps its callables so that each call is reported with its arguments by parameter name; arguments and
    RESULT items that are handles (the same object) are written as their names, the rest as plain values."""

    def __init__(self, handles: dict[str, Any], plain: Callable[[Any], Any]):
        self.handles = handles
        self.plain = plain
        self.calls: list[dict] = []
        # A world whose values reach the program as copies (ids parsed out of a JSON answer, answers parsed again)
        # sets this: a value no handle holds as the very object is then named by the first place that holds an
        # equal one, reached inside (`r1['body']['data']['id']`).
        self.by_value = False

    def name_of(self, value: Any) -> str | None:
        """The handle that holds this very object (or a list item of one), if any."""
        return self._name_of(value)

    def _name_of(self, value: Any) -> str | None:
        for name, held in self.handles.items():
            if held is value:
                return name
            if isinstance(held, (list, tuple)):
                for i, item in enumerate(held):
                    if item is value and not isinstance(value, (str, int, float, bool, type(None))):
                        return f"{name}[{i}]"
        if self.by_value and isinstance(value, (str, dict, list)) and value:
            for name, held in self.handles.items():
                found = _place_of(value, held, name)
                if found is not None:
                    return found
        return None

    def argument(self, value: Any, handle: bool):
        """A handle name where the parameter takes handles and one holds this object; else a plain value."""
        if handle:
            if isinstance(value, (list, tuple)):
                return [self.argument(v, True) for v in value]
            name = self._name_of(value)
            if name is not None:
                return name
        return self.plain(value)

    def record(self, spec: ToolSpec, arguments: dict, result: Any) -> None:
        args = {k: self.argument(v, k in spec.handles) for k, v in arguments.items()}
        self.calls.append({"name": spec.name, "arguments": args})
        self.handles[RESULT_HANDLE.format(len(self.calls))] = result

    def wrap(self, spec: ToolSpec, fn: Callable, signature: inspect.Signature | None = None,
             rename: dict[str, str] | None = None) -> Callable:
        """`fn`, recording each call under `spec` (arguments bound to `signature`'s names, then renamed)."""
        signature = signature or inspect.signature(fn)
        rename = rename or {}

        def traced(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            result = fn(*args, **kwargs)
            self.record(spec, {rename.get(k, k): v for k, v in bound.arguments.items()}, result)
            return result

        return traced

    def result_items(self, result: Any) -> list:
        items = []
        for value in result if isinstance(result, (list, tuple)) else [result]:
            name = self._name_of(value)
            if name is not None and (self.by_value or not isinstance(value, (str, int, float, bool, type(None)))):
                items.append(name)
            else:
                plain = self.plain(value)
                items.append({"value": plain} if isinstance(plain, str) else plain)
        return items


def _place_of(value: Any, held: Any, at: str, depth: int = 0) -> str | None:
    """The reference to the first place inside `held` (depth first, in order) that equals `value`."""
    if type(held) is type(value) and held == value:
        return at
    if depth >= 8:
        return None
    if isinstance(held, dict):
        items = [(f"{at}[{k!r}]", v) for k, v in held.items() if isinstance(k, str) and "'" not in k]
    elif isinstance(held, list):
        items = [(f"{at}[{i}]", v) for i, v in enumerate(held)]
    else:
        return None
    for place, inner in items:
        found = _place_of(value, inner, place, depth + 1)
        if found is not None:
            return found
    return None
