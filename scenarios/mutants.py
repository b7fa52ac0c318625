"""World mutants: the world with one behaviour changed on one operation, for scoring a test (`--mode tests`).

A program mutant (`builder/mutate.py`) is a wrong program run on the correct world; a *world mutant* is the correct
program's world gone wrong, the way an implementation under test goes wrong: every call of one operation (`api`,
named as the world's traces name it: `POST /buckets/{id}`, `torch.cat`, `transcribe`) misbehaves in one way.
A test of a requirement is worth the mutants it tells apart from the correct world (it fails on them and passes
on the correct one): its mutation score.

The kinds, each applied to what the operation answers or does, never knowing which service it is:

- `ignored`: the operation is not carried out (a write the service drops), answered as if it had been;
- `twice`: it is carried out twice, answered the first time's answer (a write applied twice);
- `status`: its HTTP status is another one of the same class (`200` becomes `201`, `404` becomes `400`);
- `field_dropped` / `field_altered`: one field of the records it answers is missing / has another value (a
  number one more, a text with a character added, a truth value flipped), the field named by `field`, the
  position in the sorted field names of its answer's first record (`records`): 0 the first, -1 the last;
- `last_dropped`: the last item of the list it answers is missing (a page short of its last item, a partial read,
  a filter off by one);
- `altered`: the whole answer is another value of the same kind (a tensor with one added, a list with its last item
  altered): for answers that are not records, through the world's `World.altered`.

Two layers apply them, each in one place for every world of its kind: `scenarios.rest.proxy` between a program
and an HTTP service (the session service and any service of a service file), and `scenarios.trace.Recorder`
around the calls of an in-process world (tensor, voice, an MCP server's tools). Each counts the calls whose
answer it changed (a write made twice changes the state, which the caller compares, and no answer): a mutant that
changed nothing on a reference test's run, neither an answer nor RESULT nor the final state, is one no test of the
task could tell apart, and is dropped.
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass
from typing import Any, Callable

IGNORED, TWICE, STATUS = "ignored", "twice", "status"
FIELD_DROPPED, FIELD_ALTERED, LAST_DROPPED, ALTERED = "field_dropped", "field_altered", "last_dropped", "altered"
KINDS = (IGNORED, TWICE, STATUS, FIELD_DROPPED, FIELD_ALTERED, LAST_DROPPED, ALTERED)
READS = ("GET", "HEAD", "OPTIONS")  # an HTTP operation with one of these methods changes nothing
# What each kind means, for reports that name the kinds a test missed.
MEANING = {
    IGNORED: "a write ignored", TWICE: "a write applied twice", STATUS: "a wrong status code",
    FIELD_DROPPED: "a field dropped", FIELD_ALTERED: "a field altered", LAST_DROPPED: "a list missing its last item",
    ALTERED: "a wrong answer",
}


@dataclass(frozen=True)
class Mutant:
    """One world mutant, as a task stores it: its kind, the operation it changes, and the field position for the
    field kinds."""

    kind: str
    api: str
    field: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown world mutant kind {self.kind!r}; kinds: {', '.join(KINDS)}")

    @property
    def name(self) -> str:
        """`kind(api)` or `kind(api, field)`: unique within a task."""
        return f"{self.kind}({self.api})" if self.field is None else f"{self.kind}({self.api}, {self.field})"

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict | None) -> "Mutant | None":
        return None if data is None else cls(str(data["kind"]), str(data["api"]), data.get("field"))


# ------------------------------------------------------------------------------------------ answers as data


def records(answer: Any) -> list[dict]:
    """The records of an answer: the answer itself when it is a record (a dict) holding no list of records, else
    the dicts in its list (`[...]`) or in its first list of dicts (`{"data": [...]}`)."""
    if isinstance(answer, list):
        return [x for x in answer if isinstance(x, dict)]
    if isinstance(answer, dict):
        for value in answer.values():
            if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
                return value
        return [answer]
    return []


def field_name(answer: Any, position: int) -> str | None:
    """The field a field mutant at `position` changes in this answer: of its first record's sorted field names."""
    found = records(answer)
    if not found or not found[0]:
        return None
    names = sorted(found[0])
    return names[position] if -len(names) <= position < len(names) else None


def altered_plain(value: Any, leaf: Callable[[Any], Any] | None = None) -> Any:
    """Another value of the same kind: a number one more, a text with a character added, a truth value flipped, a
    list with its last item altered, a record with its first field altered; None stays None (nothing to alter), and
    a value of a world's own type is `leaf(value)` (unchanged without `leaf`)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "~"
    if isinstance(value, (list, tuple)):
        return type(value)([*value[:-1], altered_plain(value[-1], leaf)]) if value else value
    if isinstance(value, dict):
        first = sorted(value, key=str)[0] if value else None
        return {**value, first: altered_plain(value[first], leaf)} if value else value
    return leaf(value) if leaf is not None else value


def mutated_answer(mutant: Mutant, answer: Any, altered: Callable[[Any], Any] = altered_plain) -> Any:
    """What the operation answers under `mutant` instead of `answer` (the answer itself for a kind that changes no
    answer, and for an answer the kind finds nothing to change in). JSON-like data is copied, never changed in
    place; `altered` alters a value that is not plain data (a world's own type)."""
    if mutant.kind in (FIELD_DROPPED, FIELD_ALTERED):
        name = field_name(answer, mutant.field or 0)
        if name is None:
            return answer
        answer = copy.deepcopy(answer)  # a copy: the caller may keep the original (a world's own objects)
        for record in records(answer):
            if name in record:
                if mutant.kind == FIELD_DROPPED:
                    del record[name]
                else:
                    record[name] = altered_plain(record[name])
        return answer
    if mutant.kind == LAST_DROPPED:
        if isinstance(answer, (list, tuple)) and answer:
            return type(answer)(answer[:-1])
        if isinstance(answer, dict):
            for key, value in answer.items():
                if isinstance(value, list) and value:
                    return {**answer, key: value[:-1]}
        return answer
    if mutant.kind == ALTERED:
        return altered(answer)
    return answer


def other_status(status: int) -> int:
    """Another status of the same class: 200 and 201 swap, any other success becomes 200; 404 becomes 400, any
    other client error 404; a server error 503 (500 when it was 503)."""
    if 200 <= status < 300:
        return 201 if status == 200 else 200
    if 400 <= status < 500:
        return 400 if status == 404 else 404
    if status >= 500:
        return 500 if status == 503 else 503
    return status


def http_resolver(apis: list[str]) -> Callable[[str, str], str | None]:
    """For an HTTP world whose operations are named `METHOD /path/{param}`: the operation a request (method, path
    without its query) is, the one with the fewest parameters when several match (`/items/query` before
    `/items/{id}`), None for none."""
    table = []
    for api in apis:
        method, _, template = api.partition(" ")
        parts = re.split(r"(\{[^/{}]+\})", template)
        pattern = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
        table.append((template.count("{"), method.upper(), re.compile(pattern + "/?"), api))
    table.sort(key=lambda row: row[0])

    def resolve(method: str, path: str) -> str | None:
        return next((api for _, m, pattern, api in table if m == method.upper() and pattern.fullmatch(path)), None)

    return resolve


# ------------------------------------------------------------------------------------------ which mutants


def candidates(trace: list[dict]) -> list[Mutant]:
    """The world mutants worth trying on a task, from the operations its reference called (a bound trace,
    `scenarios.trace.bind`, in the order first called): for an HTTP operation (its result `{"status", "body"}`) a
    wrong status, and for a write (a method other than GET) `ignored` and `twice`; for every operation its answer's
    first and last field dropped and altered, a list's last item dropped, and for an in-process one the whole answer
    altered, `ignored` and `twice`. Which of them change anything is for a run to tell (`Counter`)."""
    out: list[Mutant] = []
    seen: set[str] = set()
    for call in trace:
        api = str(call.get("api"))
        if api in seen:
            continue
        seen.add(api)
        result = call.get("result")
        http = isinstance(result, dict) and set(result) == {"status", "body"}
        kinds: list[Mutant] = []
        if http:
            kinds.append(Mutant(STATUS, api))
            if api.split(" ", 1)[0].upper() not in READS:
                kinds += [Mutant(IGNORED, api), Mutant(TWICE, api)]
        else:
            kinds += [Mutant(ALTERED, api), Mutant(IGNORED, api), Mutant(TWICE, api)]
        answer = result["body"] if http else result
        if isinstance(answer, (list, dict)) and not _tagged(answer):  # (shortened, it may still hold records)
            kinds += [Mutant(FIELD_DROPPED, api, 0), Mutant(FIELD_DROPPED, api, -1),
                      Mutant(FIELD_ALTERED, api, 0), Mutant(FIELD_ALTERED, api, -1), Mutant(LAST_DROPPED, api)]
        out += kinds
    return out


def _tagged(value: Any) -> bool:
    """A world's own value as a trace shows it (`{"__tensor__": {...}}`): no records in it."""
    return isinstance(value, dict) and len(value) == 1 and str(next(iter(value))).startswith("__")
