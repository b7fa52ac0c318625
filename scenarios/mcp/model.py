"""What an MCP server's scenario is made of, read from its tool listing and confirmed on a running instance.

- **Readers of the final state**: the server file's `readers` (tool calls with their arguments), else the read-only
  tools (annotated `readOnlyHint`; a tool with no such annotation whose probe call changed nothing) that need no
  argument. Their answers after a test case are its final state. Read-only tools that take arguments are queries a
  program may call, unless they refuse drawn arguments or answer the same call on the same state differently.
- **Keys**: the values other tools refer to. A key field is a string leaf of a write tool's input named as an
  identifier (`name`, `id`, `key`, `slug`, `uuid`, `identifier`, `path`: `entities[].name`), whose value, drawn
  fresh and sent, the readers then show (a client-chosen key); or such a leaf of a write tool's
  answer whose value the readers then show (a key the server made up). The key is named by the field's noun: its
  array's singular (`entities` -> `entity`), else the tool's (`create_task` -> `task`).
- **References** (`Edge`): an input field of any tool that takes a key. Found live, by calling the tool once with a
  key just made and once with a fresh value: the field refers to the key when the first call succeeds and either its
  name or description names the key (`entityName`, `entity_names`, `names` when one key is a name, "the name of the
  entity"), or the two calls differ once both values are written alike (an error against none, another answer,
  another final state).
- **Writes that change nothing** with drawn arguments and the keys at hand (a delete of a value no program can know)
  are no APIs: every call of a task must be seen in its oracle.
- **Listings** (`Listing`): a reader whose answer lists every value of a key, in the order the values were made
  (the population's first, then each new one last), confirmed on two populations. A program may take the first
  value a listing shows (`take_...`), as a REST program takes an id from a listing: the way to reach what the
  population made and the setup block does not name.
- **Made-up fields** (`learned`): leaves of the readers' answers that differ between two fresh resets to the same
  population.

The model is probed once, by the build, and travels as plain data (`to_plain`, `STATEEVAL_MCP_MODELS`, a dataset's
`NAME.model.json`) to the sandbox workers, which never probe.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from scenarios.mcp.client import Answer, Server, ServerError, population
from scenarios.mcp.serverfile import ServerFile
from scenarios.rest.model import ASSET, seed_of  # noqa: F401 - a test case's seed, stored and read as for REST
from scenarios.rest.world import _differences

ITEM = "[]"  # a path step into every item of an array
MODELS_ENV = "STATEEVAL_MCP_MODELS"  # {name: model as plain data}: the models decided for this process's workers
ID_WORDS = ("name", "id", "key", "slug", "uuid", "identifier", "path")
VERBS = ("create", "add", "new", "make", "get", "read", "open", "list", "search", "find", "update", "set",
         "delete", "remove", "put", "patch", "edit", "query", "fetch", "show", "describe")
MAX_DEPTH = 4
CLOCK_S = 1.1  # a query answered the same twice is asked once more this much later: a clock in seconds shows then
# The words of drawn arguments and fresh keys: none is one of the population's `{draw:word}` (scenarios.rest.draws),
# so that no instruction, which quotes the arguments, quotes a value of the setup block.
TEXT_WORDS = ("apple", "bridge", "candle", "dragon", "engine", "forest", "garden", "hammer", "island", "jacket",
              "kettle", "lantern", "mirror", "needle", "ocean", "pepper", "rocket", "saddle", "tiger", "velvet",
              "wagon", "yellow", "anchor", "button", "copper", "desert", "feather", "goblet", "helmet", "marble")


def words(name: str) -> list[str]:
    """`entityNames` -> ["entity", "name"], `task_id` -> ["task", "id"]: lower-case, the last one singular."""
    parts = [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)]
    if parts:
        parts[-1] = singular(parts[-1])
    return parts


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def tool_noun(tool: str) -> str:
    """The noun of a tool's name: `create_task` -> `task`, `add_observations` -> `observation`."""
    parts = [w for w in words(tool.replace("-", "_")) if w not in VERBS]
    return parts[-1] if parts else ""


# ------------------------------------------------------------------------------------------ schemas


def leaves(schema: Any, at: tuple = (), depth: int = 0) -> Iterator[tuple[tuple, dict]]:
    """(path, schema) of every scalar leaf, or array of scalars, of a JSON schema; arrays step in with ITEM."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return
    schema = _one(schema)
    kind = schema.get("type")
    if kind == "object" or (kind is None and "properties" in schema):
        for name, sub in schema.get("properties", {}).items():
            yield from leaves(sub, at + (name,), depth + 1)
    elif kind == "array":
        items = _one(schema.get("items") or {})
        if items.get("type") == "object" or "properties" in items:
            yield from leaves(items, at + (ITEM,), depth + 1)
        else:
            yield at, schema
    elif at:
        yield at, schema


def _one(schema: dict) -> dict:
    """The first alternative of an anyOf / oneOf that is not null."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if isinstance(s, dict) and s.get("type") != "null"]
            if options:
                return {**{k: v for k, v in schema.items() if k != key}, **options[0]}
    return schema


def draw(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A value of a JSON schema: its const, an enum member, its default or example, else by type (required
    properties only, where an object names some; one item per array of objects, one or two of scalars)."""
    schema = _one(schema) if isinstance(schema, dict) else {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    for key in ("default", "examples"):
        if key in schema and depth > 0:
            value = schema[key]
            return value[0] if key == "examples" and isinstance(value, list) and value else value
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties", {})
        names = [k for k in props if k in schema.get("required", [])] or list(props)
        return {k: draw(props[k], rng, depth + 1) for k in names} if depth < MAX_DEPTH else {}
    if kind == "array":
        items = _one(schema.get("items") or {})
        count = 1 if items.get("type") == "object" or "properties" in items else rng.randint(1, 2)
        count = max(count, int(schema.get("minItems", 0)))
        return [draw(items, rng, depth + 1) for _ in range(count)]
    if kind == "integer":
        low, high = int(schema.get("minimum", 1)), int(schema.get("maximum", 100))
        return rng.randint(low, max(low, min(high, low + 99)))
    if kind == "number":
        return round(float(schema.get("minimum", 0)) + rng.random() * 10, 2)
    if kind == "boolean":
        return rng.random() < 0.5
    text = f"{rng.choice(TEXT_WORDS)} {rng.choice(TEXT_WORDS)}"
    if schema.get("maxLength") is not None:
        text = text[: max(int(schema["maxLength"]), 1)]
    return text


def fresh_key(rng: random.Random) -> str:
    """A key value no population draws: a word of TEXT_WORDS and two digits."""
    return f"{rng.choice(TEXT_WORDS)}_{rng.randint(10, 99)}"


def _parsed(plain: Any) -> Any:
    """`plain` with each string that holds a JSON object or list read as JSON (a tool that answers JSON as text)."""
    if isinstance(plain, dict):
        return {k: _parsed(v) for k, v in plain.items()}
    if isinstance(plain, list):
        return [_parsed(v) for v in plain]
    if isinstance(plain, str) and plain[:1] in "[{":
        try:
            return _parsed(json.loads(plain))
        except ValueError:
            return plain
    return plain


def _unordered(plain: Any) -> str:
    """`plain` as JSON with every list's items sorted: what is compared when only the order may differ."""
    def sort(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: sort(v) for k, v in value.items()}
        if isinstance(value, list):
            return sorted((sort(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
        return value
    return json.dumps(sort(plain), sort_keys=True)


def _like(value: str | int, rng: random.Random) -> str | int:
    """Another value of `value`'s type and length: what the server derives from an argument's length (a size, a
    duration) is then the same for both, and only a reference to the key tells them apart."""
    if isinstance(value, int):
        return int("9" + "".join(str(rng.randint(0, 9)) for _ in range(max(len(str(value)) - 1, 1))))
    while True:
        other = "".join(fresh_key(rng) for _ in range(len(value) // 6 + 1))[:len(value)]
        if other != value:
            return other


def get(value: Any, path: tuple) -> Any:
    """The value at `path` (ITEM: the first item), or None."""
    for step in path:
        if step == ITEM:
            value = value[0] if isinstance(value, list) and value else None
        elif isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value


def put(value: Any, path: tuple, new: Any) -> None:
    """Set the leaf at `path` (ITEM: the first item), making the objects and lists on the way that drawn arguments
    left out (an optional argument's)."""
    for i, step in enumerate(path[:-1]):
        following: Any = [] if path[i + 1] == ITEM else {}
        if step == ITEM:
            if not value:
                value.append(following)
            value = value[0]
        else:
            if not isinstance(value.get(step), (dict, list)):
                value[step] = following
            value = value[step]
    last = path[-1]
    if last == ITEM:
        value[:1] = [new]
    else:
        value[last] = new


def find(value: Any, wanted: Any, at: tuple = ()) -> tuple | None:
    """The first path (with list indices) at which `wanted` is, or None."""
    if value == wanted and at:
        return at
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, inner in items:
        found = find(inner, wanted, at + (key,))
        if found is not None:
            return found
    return None


def written(value: Any, old: str, new: str) -> Any:
    """`value` with every string `old` (and `new`) written as `new`: two runs that differ only by that value alike."""
    if isinstance(value, dict):
        return {k: written(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [written(v, old, new) for v in value]
    return new if value == old else value


# ------------------------------------------------------------------------------------------ the model


@dataclass(frozen=True)
class Key:
    """A kind of value tools refer to, made by `tool`: sent at `sent` of its arguments (None: the server made it)
    and found at `answer` of its answer (`find`'s path, list indices included; () when the answer does not hold a
    value the client sent)."""

    name: str  # "entity name"
    tool: str
    sent: tuple | None
    answer: tuple

    @property
    def noun(self) -> str:
        return self.name.rsplit(" ", 1)[0]

    @property
    def attr(self) -> str:
        return self.name.rsplit(" ", 1)[-1]


@dataclass(frozen=True)
class Edge:
    tool: str
    path: tuple  # of the argument that takes the key (an array of scalars: its items)
    key: str
    reason: str  # "name", "description", "effect"


@dataclass(frozen=True)
class Listing:
    """A reader whose answer lists every value of `key` in the order made: the list at `at` of its answer, each
    item's value at `field`. `start`: how many the population makes when the server makes the values (None: the
    population sends them, and `Model.population_keys` says which)."""

    tool: str
    key: str
    at: tuple
    field: tuple
    start: int | None = None

    @property
    def where(self) -> str:
        """`['entities'][0]['name']`: the first value, as code reads it from the answer."""
        return "".join(f"[{k!r}]" for k in self.at) + "[0]" + "".join(f"[{k!r}]" for k in self.field)


@dataclass
class Model:
    file: ServerFile
    tools: list[dict]  # as listed, less the file's include / exclude
    readers: list[str] = field(default_factory=list)  # read-only tools that take no argument: the final state
    queries: list[str] = field(default_factory=list)  # read-only tools that take arguments
    keys: list[Key] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)  # tool -> why it is no API
    removes: list[str] = field(default_factory=list)  # write tools after which the key they took is shown no more
    learned: list[str] = field(default_factory=list)  # made-up fields of the readers' answers
    listings: list[Listing] = field(default_factory=list)
    reader_arguments: dict[str, dict] = field(default_factory=dict)  # the server file's readers: their arguments

    def read(self, server: Server) -> list:
        """The readers' answers: the final state."""
        return ([self.reader_answer(server, name).to_plain() for name in self.readers]
                + [server.read_resource(uri).to_plain() for uri in self.file.resources])

    def reader_answer(self, server: Server, name: str) -> Answer:
        """One reader's answer, called with the arguments the server file gives it (none by default)."""
        return server.call(name, self.reader_arguments.get(name, {}))

    def tool(self, name: str) -> dict:
        return next(t for t in self.tools if t["name"] == name)

    def kept(self) -> list[dict]:
        return [t for t in self.tools if t["name"] not in self.dropped]

    def key(self, name: str) -> Key:
        return next(k for k in self.keys if k.name == name)

    def makes(self, tool: str) -> Key | None:
        return next((k for k in self.keys if k.tool == tool), None)

    def takes(self, tool: str) -> list[Edge]:
        return [e for e in self.edges if e.tool == tool]

    def to_plain(self) -> dict:
        return {"tools": self.tools, "readers": self.readers, "queries": self.queries,
                "keys": [[k.name, k.tool, None if k.sent is None else list(k.sent), list(k.answer)]
                         for k in self.keys],
                "edges": [[e.tool, list(e.path), e.key, e.reason] for e in self.edges],
                "dropped": self.dropped, "removes": self.removes, "learned": self.learned,
                "listings": [[x.tool, x.key, list(x.at), list(x.field), x.start] for x in self.listings],
                "reader_arguments": self.reader_arguments}

    @classmethod
    def from_plain(cls, file: ServerFile, plain: dict) -> "Model":
        return cls(file, plain["tools"], plain["readers"], plain["queries"],
                   [Key(n, t, None if s is None else tuple(s), tuple(a)) for n, t, s, a in plain["keys"]],
                   [Edge(t, tuple(p), k, r) for t, p, k, r in plain["edges"]], dict(plain["dropped"]),
                   list(plain["removes"]), list(plain["learned"]),
                   [Listing(t, k, tuple(a), tuple(f), n) for t, k, a, f, n in plain.get("listings", [])],
                   dict(plain.get("reader_arguments", {})))

    def population_keys(self, seed: int) -> list[tuple[str, Any, bool]]:
        """(key name, value, named) of what the population sent at a key's field, each value once."""
        out, seen = [], set()
        for call, arguments in population(self.file, seed):
            for key in self.keys:
                if key.tool == call.tool and key.sent is not None:
                    for value in _all(arguments, key.sent):
                        if (key.name, json.dumps(value)) not in seen:
                            seen.add((key.name, json.dumps(value)))
                            out.append((key.name, value, call.named))
        return out


def _all(value: Any, path: tuple) -> list:
    """Every value at `path`, through every item of each array on the way."""
    if not path:
        return [value]
    step, rest = path[0], path[1:]
    if step == ITEM:
        return [v for item in (value if isinstance(value, list) else []) for v in _all(item, rest)]
    return _all(value.get(step), rest) if isinstance(value, dict) and step in value else []


def selected(file: ServerFile, tools: list[dict]) -> list[dict]:
    from fnmatch import fnmatchcase

    keep = [t for t in tools if not file.include or any(fnmatchcase(t["name"], p) for p in file.include)]
    return [t for t in keep if not any(fnmatchcase(t["name"], p) for p in file.exclude)]


def read_only(tool: dict) -> bool | None:
    hint = (tool.get("annotations") or {}).get("readOnlyHint")
    return hint if isinstance(hint, bool) else None


def required(tool: dict) -> list[str]:
    return list((tool.get("inputSchema") or {}).get("required", []))


class _Probe:
    def __init__(self, file: ServerFile, server: Server, seed: int):
        self.file, self.server, self.seed = file, server, seed
        self.model = Model(file, selected(file, server.tools))
        self.rng = random.Random(seed)

    def snapshot(self) -> list:
        return self.model.read(self.server)

    def fresh(self) -> list:
        self.server.reset(self.seed)
        return self.snapshot()

    def run(self) -> Model:
        model = self.model
        unknown = []
        declared = {c.tool: dict(c.arguments) for c in self.file.readers}
        listed = {t["name"] for t in model.tools}
        missing = [name for name in declared if name not in listed]
        if missing:
            raise ServerError(f"the server file {self.file.path} names the reader {missing[0]!r}, which the server "
                              f"{self.file.name} does not list among its tools ({', '.join(sorted(listed))})")
        model.readers, model.reader_arguments = list(declared), declared
        for uri in self.file.resources:
            shown = self.server.read_resource(uri)
            if shown.error:
                raise ServerError(f"the server file {self.file.path} names the resource {uri!r}, which the server "
                                  f"{self.file.name} does not read: {shown.text}")
        declared = declared or dict.fromkeys(self.file.resources)  # state declared: read-only tools are queries
        for tool in model.tools:
            hint = read_only(tool)
            if tool["name"] in declared:
                continue
            if hint is None:
                unknown.append(tool)
            elif hint:
                (model.queries if required(tool) or declared else model.readers).append(tool["name"])
        if unknown and not declared:  # no annotation: a tool that takes no argument and changes nothing it reads
            for tool in unknown:
                if not required(tool):
                    before = self.fresh()
                    answer = self.server.call(tool["name"], {})
                    after = self.snapshot()
                    if not answer.error and before == after and self.server.call(tool["name"], {}) == answer:
                        model.readers.append(tool["name"])
        self.keys()
        self.references()
        self.effects()
        self.listings()
        self.learn()
        return model

    def writes(self) -> list[dict]:
        return [t for t in self.model.tools if t["name"] not in self.model.readers + self.model.queries]

    def keys(self) -> None:
        """Key fields of the write tools' arguments and answers, confirmed by the readers showing their values."""
        model, taken = self.model, set()
        for tool in self.writes():
            schema = tool.get("inputSchema") or {}
            for path, leaf in leaves(schema):
                own = words(str(path[-1]))
                if leaf.get("type") != "string" or len(own) != 1 or own[0] not in ID_WORDS:
                    continue
                noun = _noun(path, tool["name"])
                name = f"{noun} {own[0]}"
                if not noun or name in taken:
                    continue
                self.fresh()
                arguments = draw(schema, self.rng)
                if get(arguments, path) is None:
                    continue
                value = fresh_key(self.rng)
                put(arguments, path, value)
                answer = self.server.call(tool["name"], arguments)
                if not answer.error and value in json.dumps(self.snapshot()):
                    model.keys.append(Key(name, tool["name"], path, find(answer.value, value) or ()))
                    taken.add(name)
            self.fresh()
            answer = self.server.call(tool["name"], draw(schema, self.rng))
            if answer.error:
                continue
            state = json.dumps(self.snapshot())
            for at, value in _ids(answer.value):
                own = words(str(at[-1]))  # `id`, named by where it is, or `speech_id`, named by itself
                noun = own[0] if len(own) == 2 else _noun(_steps(at), tool["name"])
                name = f"{noun} {own[-1]}"
                if noun and name not in taken and json.dumps(value) in state:
                    model.keys.append(Key(name, tool["name"], None, at))  # made up by the server
                    taken.add(name)

    def make(self, key: Key, arguments: dict, reset: bool = True, value: Any = None) -> Any:
        """A fresh value of `key` (or `value`, sent again), made on the server (reset first, unless not `reset`) by
        a call with `arguments` (its key field drawn afresh); None when its tool refused."""
        if reset:
            self.fresh()
        if key.sent is not None:
            put(arguments, key.sent, fresh_key(self.rng) if value is None else value)
        answer = self.server.call(key.tool, arguments)
        if answer.error:
            return None
        return get(arguments, key.sent) if key.sent is not None else get(answer.value, _steps(key.answer))

    def references(self) -> None:
        model = self.model
        attrs = [k.attr for k in model.keys]
        for tool in model.tools:
            if tool["name"] in model.reader_arguments:  # called as the server file says, never on a key
                continue
            schema = tool.get("inputSchema") or {}
            for path, leaf in leaves(schema):
                kind = leaf.get("type")
                scalar = (leaf.get("items") or {}).get("type") if kind == "array" else kind
                if scalar not in ("string", "integer"):
                    continue
                for key in model.keys:
                    if key.tool == tool["name"] and key.sent == path:
                        continue
                    named = _names(path, leaf, key, tool["name"], attrs.count(key.attr) == 1)
                    made = draw(self.model.tool(key.tool).get("inputSchema") or {}, self.rng)
                    value = self.make(key, made)
                    if value is None or not isinstance(value, (str, int)):
                        continue
                    arguments = draw(schema, self.rng)
                    put(arguments, path, [value] if kind == "array" else value)
                    known = self.server.call(tool["name"], arguments)
                    if known.error:
                        continue
                    state = _unordered(written(_parsed(self.snapshot()), value, "<key>"))
                    other = _like(value, self.rng)
                    again = self.make(key, made)  # the same start (another fresh value made), then another value sent

                    def alike(plain: Any) -> str:  # in any order: a listing sorted by name moves the new key
                        return _unordered(written(written(_parsed(plain), other, "<key>"), again, "<key>"))

                    put(arguments, path, [other] if kind == "array" else other)
                    alt = self.server.call(tool["name"], arguments)
                    answered = _unordered(written(_parsed(known.value), value, "<key>"))
                    differs = alt.error or alike(alt.value) != answered or alike(self.snapshot()) != state
                    if named or differs:
                        model.edges.append(Edge(tool["name"], path, key.name, named or "effect"))
                        break

    def effects(self) -> None:
        """Drop the write tools whose calls, with drawn arguments and the keys at hand, change no reader's answer,
        and the tools (queries too) that refuse such calls: a program could call them only to fail."""
        model = self.model
        if not model.readers and not model.file.resources:
            return
        for tool in self.writes() + [model.tool(name) for name in model.queries]:
            arguments, bound, made = self.bind(tool)
            before = self.snapshot()
            answer = self.server.call(tool["name"], arguments)
            after = self.snapshot()
            if answer.error:
                model.dropped[tool["name"]] = f"refused drawn arguments: {answer.text[:120]}"
            elif tool["name"] in model.queries:
                if all(key.sent is not None for key, _, _ in made):  # the same state can be made again
                    for pause in (0, CLOCK_S):  # made again at once, and after a clock of seconds has ticked
                        time.sleep(pause)
                        self.bind(tool, made)
                        if self.server.call(tool["name"], arguments) != answer:  # a clock, a random value
                            model.dropped[tool["name"]] = "answered the same call on the same state differently"
                            break
            elif after == before:
                model.dropped[tool["name"]] = "changed nothing the readers show, with drawn arguments"
            elif bound and not any(json.dumps(v) in json.dumps(after) for v in bound):
                model.removes.append(tool["name"])

    def bind(self, tool: dict, made: list | None = None) -> tuple[dict, list, list]:
        """After a fresh reset, `tool`'s drawn arguments with a value of each key it takes (the population's, or
        one made now: `made`'s again when given): (arguments, the values bound, the (key, arguments, value) made)."""
        model = self.model
        self.fresh()
        arguments = draw(tool.get("inputSchema") or {}, self.rng)
        bound, making = [], []
        for edge in model.takes(tool["name"]):
            value = self.population_value(edge.key)
            if value is None:  # a key the population does not send: made now
                key = model.key(edge.key)
                if made is None:
                    made_arguments = draw(model.tool(key.tool).get("inputSchema") or {}, self.rng)
                    value = self.make(key, made_arguments, False)
                else:
                    key, made_arguments, value = made[len(making)]
                    self.make(key, copy.deepcopy(made_arguments), False, value)
                making.append((key, made_arguments, value))
            if value is not None:
                bound.append(value)
                leaf = get(arguments, edge.path)
                put(arguments, edge.path, [value] if isinstance(leaf, list) else value)
        return arguments, bound, making

    def listings(self) -> None:
        """The readers that list a key's values in the order made, the same way on two populations."""
        for reader in self.model.readers:
            for key in self.model.keys:
                found = [self.listed(reader, key, seed) for seed in (self.seed, self.seed + 1)]
                if None not in found and len(set(found)) == 1:
                    self.model.listings.append(Listing(reader, key.name, *found[0]))

    def listed(self, reader: str, key: Key, seed: int) -> tuple | None:
        """(at, field, start) of `reader`'s list of `key`'s values on the population of `seed` with two values made
        after it, when it lists them all in the order made; else None."""
        self.server.reset(seed)
        made = [self.make(key, draw(self.model.tool(key.tool).get("inputSchema") or {}, self.rng), False)
                for _ in range(2)]
        answer = self.model.reader_answer(self.server, reader)
        at = None if None in made or answer.error else find(answer.value, made[0])
        indices = [i for i, step in enumerate(at or ()) if isinstance(step, int)]
        if len(indices) != 1:
            return None
        path, tail = at[:indices[0]], at[indices[0] + 1:]
        items = get(answer.value, path)
        listed = [get(item, tail) for item in items] if isinstance(items, list) else []
        if listed[-2:] != made:
            return None
        start = listed[:-2]
        if key.sent is not None:
            return (path, tail, None) if start == self.sent(key, seed) else None
        return path, tail, len(start)

    def sent(self, key: Key, seed: int) -> list:
        return [v for name, v, _ in self.model.population_keys(seed) if name == key.name]

    def population_value(self, key: str) -> Any:
        found = [v for name, v, _ in self.model.population_keys(self.seed) if name == key]
        return found[0] if found else None

    def learn(self) -> None:
        """The fields of the readers' answers that differ between two fresh resets to the same population."""
        first, second, found = self.fresh(), self.fresh(), set()
        _differences(first, second, (), found)
        self.model.learned = sorted(found)


def _ids(value: Any, at: tuple = (), depth: int = 0) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of each string or integer of an answer under a key named as an identifier (`id`, `name`, ...),
    through objects and the first item of each list."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            own = words(str(key))
            if isinstance(inner, (str, int)) and not isinstance(inner, bool) and _id_field(own):
                yield at + (key,), inner
            else:
                yield from _ids(inner, at + (key,), depth + 1)
    elif isinstance(value, list) and value:
        yield from _ids(value[0], at + (0,), depth + 1)


def _id_field(own: list[str]) -> bool:
    """Whether a field's words name an identifier: `id`, `name`, ... alone or after one noun (`speech_id`)."""
    return 1 <= len(own) <= 2 and own[-1] in ID_WORDS


def _steps(path: tuple) -> tuple:
    """A path with list indices (`find`'s) as `get` takes it: index 0 as ITEM."""
    return tuple(ITEM if isinstance(s, int) else s for s in path)


def _noun(path: tuple, tool: str) -> str:
    """The noun a key field names: its array's singular, else its object's, else its tool's."""
    for step in reversed(path[:-1]):
        if step != ITEM:
            return singular(words(str(step))[-1]) if words(str(step)) else ""
    return tool_noun(tool)


def _names(path: tuple, leaf: dict, key: Key, tool: str, only: bool) -> str:
    """Whether an argument's name or description names `key`: "name" or "description", else ""."""
    own = words(str(path[-1]))
    noun = _noun(path, tool)
    if own == [*key.noun.split(), key.attr] or (own == [key.attr] and (only or noun == key.noun)):
        return "name"
    text = str(leaf.get("description", "")).lower()
    if re.search(rf"\b{key.attr}s? of (?:the|an?|each|every) {re.escape(key.noun)}s?\b", text):
        return "description"
    return ""


def probe(file: ServerFile, server: Server, seed: int = 0) -> Model:
    """The model of a running server (see the module docstring); it is reset before and after."""
    model = _Probe(file, server, seed).run()
    server.reset(seed)
    return model


def python_name(tool: str) -> str:
    """The Python function a tool is in code mode: its name with anything but letters, digits and _ as _."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in tool)
    return name if name[:1].isalpha() or name[:1] == "_" else f"tool_{name}"


def decide(name: str, model: Model) -> None:
    """Make `model` the one of the server `name` for this process and the workers it starts."""
    known = json.loads(os.environ.get(MODELS_ENV) or "{}")
    known[name] = model.to_plain()
    os.environ[MODELS_ENV] = json.dumps(known, sort_keys=True)


def decided(file: ServerFile) -> Model | None:
    """The model decided for the server of `file` (`decide`), or None."""
    plain = json.loads(os.environ.get(MODELS_ENV) or "{}").get(file.name)
    return None if plain is None else Model.from_plain(file, plain)
