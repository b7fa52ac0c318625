"""API-call traces: which API calls a program made, with which arguments, where each argument came from, and what
came back. `evaluate.diagnosis` compares a sample's trace with the reference's to say how far a failed answer got
and why it failed.

A world records each call to its scenario's API as a *raw call* (`raw_call`): the API's name, its arguments and
result as canonical plain data shortened by `compact`, and value ids. In-process worlds (tensor, voice) record
in the sandbox child through a `Recorder`; the session world records at its service, so every HTTP client is seen.
`bind` then turns raw calls into the trace: a list of calls, each
``{"api", "args", "from" (when any argument came from somewhere), "result" or "error"}``.

Where an argument came from is decided by value, not by object identity (a session id travels over HTTP as text):
an argument whose value equals a value an earlier call returned, whole or inside it (an id in a listing, the voice
of a speech), came from that call; one equal to a value the setup block defined (or a part of it) came from that
setup variable, written ``"$name"``. Setup variables win ties, then the shallowest match, then the latest call.
Numbers, booleans and None are literals and never come from anywhere, nor do arguments a world names as options
(a dimension list, a session type): equal values there are coincidences, not data flow.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterable

from scenarios.base import canonical_json
from scenarios.mutants import IGNORED, TWICE, Mutant, altered_plain, mutated_answer

# The version of the trace format (the shortening by `compact`, the value ids, the binding rule). A dataset stores
# it with each trace, and a trace of another format is not compared: equal calls could look different.
FORMAT = 1
MAX_CALLS = 256  # calls kept per test case: a program that loops over an API is not recorded forever
INLINE_CHARS = 64  # canonical JSON up to this length is kept as it is; longer values are shortened (`compact`)
SHORT_FIELD_CHARS = 24  # fields of a tagged value (a tensor's dtype and shape) kept beside its digest
LIST_ITEMS = 8  # a longer list than this is one digest, not a list of shortened items
INPUT = "$"  # prefix of a setup variable's name as a source


def stored(trace: list[dict]) -> str:
    """A trace as a dataset's test case keeps it: canonical JSON, with the format it was recorded in."""
    return canonical_json({"format": FORMAT, "calls": trace})


def load_stored(text: str | None) -> list[dict] | None:
    """The calls of a stored trace; None when there is none or it has another format than this version's."""
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, dict) or value.get("format") != FORMAT or not isinstance(value.get("calls"), list):
        return None
    return value["calls"]


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def compact(plain: Any, top: bool = True) -> Any:
    """A short form of canonical data that two values share only when they are equal: small values as they are,
    long strings cut with a digest of the whole, tagged values (``{"__tensor__": {...}}``) as their short fields and
    a digest, a short list or dict at the top item by item (an HTTP answer's status stays readable), anything else
    as ``{"#": digest}``."""
    text = canonical_json(plain)
    if len(text) <= INLINE_CHARS:
        return plain
    if isinstance(plain, str):
        return f"{plain[:INLINE_CHARS // 2]}...#{digest(text)}"
    if isinstance(plain, dict) and len(plain) == 1:
        (tag, inner), = plain.items()
        if tag.startswith("__") and isinstance(inner, dict):
            short = {k: v for k, v in inner.items() if len(canonical_json(v)) <= SHORT_FIELD_CHARS}
            return {tag: {**short, "#": digest(text)}}
    if top and isinstance(plain, list) and len(plain) <= LIST_ITEMS:
        return [compact(x, False) for x in plain]
    if top and isinstance(plain, dict) and len(plain) <= LIST_ITEMS:
        return {k: compact(v, False) for k, v in plain.items()}
    return {"#": digest(text)}


def value_ids(plain: Any, found: list | None = None, depth: int = 0) -> str:
    """The value id of canonical data (equal values, equal ids), computed bottom-up in one pass; with `found`,
    every part that can carry data (strings, lists, dicts) is appended to it as (id, depth)."""
    if isinstance(plain, dict):
        text = "d" + ",".join(f"{canonical_json(k)}:{value_ids(v, found, depth + 1)}" for k, v in sorted(plain.items()))
    elif isinstance(plain, list):
        text = "l" + ",".join(value_ids(v, found, depth + 1) for v in plain)
    elif isinstance(plain, str):
        text = "s" + plain
    else:
        return "n" + repr(plain)  # a literal: an id for its container's sake, never a source
    vid = digest(text)
    if found is not None and (not isinstance(plain, str) or len(plain) >= 2):
        found.append((vid, depth))
    return vid


def _carries_data(plain: Any) -> bool:
    return isinstance(plain, (str, list, dict)) and plain not in ("", [], {})


def raw_call(api: str, args: dict[str, Any], options: Iterable[str] = (), result: Any = None,
             error: str | None = None) -> dict:
    """One call as a world records it: `args` and `result` are canonical plain data; `options` name the arguments
    that never come from anywhere; `error` says why the call failed (an exception, a refused HTTP request), and a
    failed call keeps a result only when one came back (the HTTP answer). A list argument also gets an id per item
    (`tensors.0`, ...), so a list built from several results binds to each."""
    ids: dict[str, str] = {}
    for name, value in args.items():
        if name in options or not _carries_data(value):
            continue
        ids[name] = value_ids(value)
        if isinstance(value, list):
            for i, item in enumerate(value):
                if _carries_data(item):
                    ids[f"{name}.{i}"] = value_ids(item)
    call = {"api": api, "args": {k: compact(v) for k, v in args.items()}, "ids": ids}
    if error is not None:
        call["error"] = error
    if error is None or result is not None:  # a refused HTTP request still has an answer
        made: list = []
        value_ids(result, made)
        call["result"], call["made"] = compact(result), made
    return call


def input_ids(values: dict[str, Any]) -> dict[str, list]:
    """The value ids of the setup variables (canonical plain data by name), as `bind` takes them."""
    out = {}
    for name, plain in values.items():
        found: list = []
        value_ids(plain, found)
        if found:
            out[name] = [vid for vid, _ in found]
    return out


def bind(calls: Any, inputs: Any) -> list[dict] | None:
    """The trace from raw calls and the setup's value ids: each argument's source resolved, ids dropped.

    Both may come from an untrusted child, so anything malformed gives None (no trace) rather than an error."""
    try:
        owner: dict[str, tuple[int, Any]] = {}  # value id -> (rank, source); a lower rank wins
        for name, ids in dict(inputs or {}).items():
            for vid in ids:
                owner[str(vid)] = (-1, INPUT + str(name))
        trace = []
        for n, call in enumerate(list(calls or [])[:MAX_CALLS]):
            entry = {"api": str(call["api"]), "args": dict(call["args"])}
            sources = {str(k): owner[v][1] for k, v in dict(call.get("ids") or {}).items() if v in owner}
            # a list that came whole from one place needs no source per item
            sources = {k: s for k, s in sources.items() if k.rpartition(".")[0] not in sources}
            if sources:
                entry["from"] = dict(sorted(sources.items()))
            if call.get("error") is not None:
                entry["error"] = str(call["error"])
            if "result" in call:
                entry["result"] = call["result"]
                for vid, depth in call.get("made") or []:
                    if owner.get(vid, (depth + 1,))[0] >= depth:  # shallower or as deep: the latest call wins
                        owner[vid] = (int(depth), n)
            trace.append(entry)
        canonical_json(trace)
        return trace
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


class Recorder:
    """Records a program's API calls inside the sandbox child; a world's wrappers call `run` around each call.

    Recording starts with `start` (after the setup block ran, so its own calls are not the program's) and only
    the outermost API call is recorded (an API implemented with another one records once). A failure to record
    never changes what the program sees: the call's own result or exception always comes back."""

    def __init__(self, canonical: Callable[[Any], Any]):
        self.canonical = canonical
        self.calls: list[dict] = []
        self.inputs: dict[str, list] = {}
        self.recording = False
        self.raised: BaseException | None = None  # the last exception an API call raised
        self._depth = 0
        # A world mutant applied around each call of its operation (`scenarios.mutants`), how the world alters a
        # value of its own, and how many calls it changed.
        self.mutant: Mutant | None = None
        self.altered: Callable[[Any], Any] = altered_plain
        self.changed = 0

    def start(self, namespace: dict, names: Iterable[str]) -> None:
        plain = {}
        for name in names:
            try:
                plain[name] = self.canonical(namespace[name])
            except Exception:  # noqa: BLE001 - a module, a function: not data
                continue
        self.inputs = input_ids(plain)
        self.recording = True

    def run(self, api: str, arguments: Callable[[], dict], call: Callable[[], Any], options: Iterable[str] = ()):
        """`call()`'s result, recording the call as `api` with `arguments()` (names to live values)."""
        if self.mutant is not None and self.mutant.api == api and self.recording and not self._depth:
            call = self._mutated(call)
        if not self.recording or self._depth or len(self.calls) >= MAX_CALLS:
            return call()
        self._depth += 1
        try:
            args = self._plain(arguments)
            try:
                result = call()
            except BaseException as exc:
                self.raised = exc
                self.calls.append(raw_call(api, args, options, error=f"{type(exc).__name__}: {exc}"[:500]))
                raise
            try:
                self.calls.append(raw_call(api, args, options, self.canonical(result)))
            except Exception as exc:  # noqa: BLE001 - a result the world cannot represent
                self.calls.append(raw_call(api, args, options, f"<{type(exc).__name__}>"))
            return result
        finally:
            self._depth -= 1

    def _mutated(self, call: Callable[[], Any]) -> Callable[[], Any]:
        """`call` as the mutant makes it: not made (answering None), made twice (answering the first time), or its
        answer changed (`scenarios.mutants.mutated_answer`); `changed` counts the calls whose answer differs."""
        mutant = self.mutant

        def mutated():
            if mutant.kind == IGNORED:
                self.changed += 1
                return None
            first = call()
            if mutant.kind == TWICE:  # what it changed shows in the state, never in an answer: not counted here
                call()
                return first
            answer = mutated_answer(mutant, first, self.altered)
            self.changed += self._differ(first, answer)
            return answer

        return mutated

    def _differ(self, a: Any, b: Any) -> bool:
        try:
            return canonical_json(self.canonical(a)) != canonical_json(self.canonical(b))
        except Exception:  # noqa: BLE001 - values the world cannot represent: count them as changed
            return True

    def _plain(self, arguments: Callable[[], dict]) -> dict:
        try:
            live = arguments()
        except Exception:  # noqa: BLE001 - arguments the API itself will refuse
            return {}
        out = {}
        for name, value in live.items():
            try:
                out[name] = self.canonical(value)
            except Exception:  # noqa: BLE001 - an argument that is not data (a function, a module)
                out[name] = f"<{type(value).__name__}>"
        return out

    def to_plain(self) -> dict:
        return {"calls": self.calls, "inputs": self.inputs}
