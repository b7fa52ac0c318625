"""What a service's scenario is made of, read from its file, its document and its running instance: the model both
halves of the scenario share (`scenarios.rest.machine` in the builder, `scenarios.rest.world` in a sandbox worker).

- **Resources**: each path parameter stands for a resource named by the path up to it, its parameter names
  dropped (`/shelves/{}/books/{}` for the `id` of `/shelves/{shelf_id}/books/{id}`, and for the `book_id` of
  `.../books/{book_id}/notes`): a value made for one operation's parameter fits
  every other parameter of the same resource, and a resource's value comes with the values of the resources before
  it in its path (its parents).
- **Live confirmation** (`probe`): the static edges of `scenarios.rest.dependencies` say which creator feeds which
  parameter, not always where the new id is in its answer. Each creator (a POST whose path is followed by a
  parameter in some other operation's path) is called on the running service with a drawn body, and every scalar
  of its answer is tried as that parameter of a reader (GET) of the new item: the first that answers 2xx is where
  the id is (such as `data.id`). A creator none of whose values works makes no resource (its edges are dropped).
  The bodies are tried the same way: the drawn body, then its required fields alone, then one field at a time;
  the first shape answered 2xx is the one drawn for that operation from then on.
- **Made-up values** (`Masker`): the ids creators make, and values that look made up (UUIDs, dates, epoch times),
  and the file's `volatile` fields, are replaced in RESULT and the final state by `<made-N>` (numbered in the
  order they were made, so that one consistent renaming maps a run onto another) or erased (`<volatile>`).
"""

from __future__ import annotations

import json
import random
import re
import string
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from scenarios.calling import answer_body
from scenarios.rest import draws
from scenarios.rest.dependencies import infer
from scenarios.rest.openapi import Operation
from scenarios.rest.schema import Schema
from scenarios.rest.servicefile import ServiceFile

ASSET = "population"  # the asset that holds a test case's population seed (`RestWorld.reset` reads it)
PARAM = re.compile(r"\{[^}]*\}")
MAX_DEPTH = 4  # how deep into an answer the id is looked for, and how deep bodies are drawn
FREE_FORM_KEYS = ("title", "note", "label")  # two of these, drawn, make an object of no properties
STRING_DEPTH = 3


def resource(path: str, upto: int | None = None) -> str:
    """The resource a path names (its parameters written `{}`), up to and including its `upto`-th parameter."""
    parts, count = [], 0
    for segment in path.strip("/").split("/"):
        if PARAM.fullmatch(segment):
            parts.append("{}")
            count += 1
            if upto is not None and count > upto:
                break
        else:
            parts.append(segment)
    return "/" + "/".join(parts)


def path_parameters(op: Operation) -> list[str]:
    """The names of an operation's path parameters, in path order."""
    return [m[1:-1] for m in PARAM.findall(op.path)]


def is_item(op: Operation) -> bool:
    return op.path.rstrip("/").endswith("}")


def template_match(template: str, path: str) -> list[str] | None:
    """The parameter values of a concrete path on a template, or None when it does not match."""
    m = _template_pattern(template).match(path)
    return list(m.groups()) if m else None


@lru_cache(maxsize=1024)
def _template_pattern(template: str) -> re.Pattern:
    """A template's pattern, compiled once: every request a world watches is matched against every operation."""
    return re.compile("^" + PARAM.sub("([^/]+)", re.escape(template).replace(r"\{", "{").replace(r"\}", "}")) + "$")


# ------------------------------------------------------------------------------------------------ drawing


def draw(schema: Schema | None, rng: random.Random, keys: tuple[str, ...] | None = None, depth: int = 0) -> Any:
    """A value of `schema` from `rng`: an enum's member, the example, within the bounds, of the format; an object
    gets the properties `keys` names (all its declared ones when None), a free-form object two word fields."""
    if schema is None:
        return rng.choice(draws.WORDS)
    if schema.enum:
        return rng.choice(list(schema.enum))
    kind = schema.type
    if kind == "object" or (kind is None and schema.properties):
        if depth >= MAX_DEPTH:
            return {}
        props = schema.properties
        if not props:
            return {name: rng.choice(draws.WORDS) for name in rng.sample(FREE_FORM_KEYS, 2)}
        names = [k for k in props if keys is None or k in keys]
        return {k: draw(props[k], rng, None, depth + 1) for k in names}
    if kind == "array":
        return [draw(schema.items, rng, None, depth + 1) for _ in range(rng.randint(1, 2))]
    if kind == "integer":
        low = int(schema.minimum) if schema.minimum is not None else 1
        high = int(schema.maximum) if schema.maximum is not None else 100
        return rng.randint(low, min(high, low + 99))
    if kind == "number":
        low = schema.minimum if schema.minimum is not None else 0
        return round(low + rng.random() * 10, 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if schema.example is not None and isinstance(schema.example, str):
        return schema.example
    fmt = schema.format or ""
    if fmt == "email":
        return f"{rng.choice(draws.WORDS)}@example.org"
    if fmt == "date":
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if fmt == "date-time":
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T12:00:00Z"
    if fmt == "uuid":
        return "%08x-%04x-4%03x-8%03x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12),
                                               rng.getrandbits(12), rng.getrandbits(48))
    word = rng.choice(draws.WORDS)
    if schema.max_length is not None:
        word = word[: max(schema.max_length, 1)]
    if schema.min_length is not None and len(word) < schema.min_length:
        word += "".join(rng.choice(string.ascii_lowercase) for _ in range(schema.min_length - len(word)))
    return word


def population(file: ServiceFile, seed: int) -> list[tuple[str, str, Any]]:
    """The population's requests drawn from `seed`, as `Service.populate` sends them: (method, path, body)."""
    rng, labels = random.Random(seed), {}
    return [(item.method, str(draws.expand(item.path, rng, labels)), draws.expand(item.body, rng, labels))
            for item in file.population]


# ------------------------------------------------------------------------------------------ the model


@dataclass
class Model:
    """Everything the scenario knows of a service (see the module docstring)."""

    file: ServiceFile
    operations: list[Operation]
    id_fields: dict[str, list[str]] = field(default_factory=dict)  # creator op id -> where the new id is
    body_keys: dict[str, list[str] | None] = field(default_factory=dict)  # op id -> top-level keys drawn
    broken: set[str] = field(default_factory=set)  # operations no probe could call
    listings: dict[str, list[str]] = field(default_factory=dict)  # listing op id -> keys to its list of items
    statuses: dict[str, int] = field(default_factory=dict)  # write op id -> the status a call on a live item answered
    # the last seed's population_values: the world asks for them at every request it watches
    _values: dict[int, list] = field(default_factory=dict, repr=False, compare=False)

    def op(self, op_id: str) -> Operation:
        return next(o for o in self.operations if o.id == op_id)

    def creates(self, op: Operation) -> str | None:
        """The resource a creator makes (found live), or None."""
        if op.id not in self.id_fields:
            return None
        return resource(op.path) + "/{}"

    def population_values(self, seed: int) -> list[tuple[str, str, list[str]]]:
        """The resources the population makes whose value the client chose (a path parameter of a population
        request), in order: (resource, value, parent values); each once. The list is shared: do not change it."""
        if seed in self._values:
            return self._values[seed]
        out, seen = [], set()
        for method, path, _ in population(self.file, seed):
            for op in self.operations:
                if op.method != method:
                    continue
                values = template_match(op.path, path)
                if values is None:
                    continue
                for i, value in enumerate(values):
                    key = (resource(op.path, i), tuple(values[: i + 1]))
                    if key not in seen:
                        seen.add(key)
                        out.append((resource(op.path, i), value, values[:i]))
                break
        self._values.clear()
        self._values[seed] = out
        return out

    def made_in_answer(self, op: Operation, answer: Any) -> list[str]:
        """The id a creator's answer holds (where the probe found it), as a list of zero or one value."""
        where = self.id_fields.get(op.id)
        if where is None:
            return []
        value = _at(answer, where)
        return [] if value is None else [str(value)]

    def operation_for(self, method: str, path: str) -> Operation | None:
        """The operation a concrete request is, the one with the fewest parameters when several match."""
        found = [op for op in self.operations if op.method == method and template_match(op.path, path) is not None]
        return min(found, key=lambda op: len(path_parameters(op)), default=None)

    def to_plain(self) -> dict:
        return {"id_fields": self.id_fields, "body_keys": self.body_keys, "broken": sorted(self.broken),
                "listings": self.listings, "statuses": self.statuses}

    def id_key(self, res: str) -> str | None:
        """The key of the id in an item of a listing of `res` (the last key of where its creator's answer holds it)."""
        return next((where[-1] for op_id, where in self.id_fields.items()
                     if self.creates(self.op(op_id)) == res), None)


def _at(value: Any, where: list[str]) -> Any:
    for key in where:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _scalars(value: Any, at: tuple[str, ...] = (), depth: int = 0):
    """(path, value) of every string or integer in an answer's objects (not inside arrays), `id`-like keys first."""
    found = []
    if isinstance(value, dict) and depth < MAX_DEPTH:
        for key, item in value.items():
            if isinstance(item, (str, int)) and not isinstance(item, bool):
                found.append((at + (key,), item))
            else:
                found.extend(_scalars(item, at + (key,), depth + 1))
    return sorted(found, key=lambda p: (p[0][-1] != "id", not p[0][-1].lower().endswith("id"), len(p[0])))


def _ok(answer) -> bool:
    return 200 <= answer.status_code < 300


def probe(file: ServiceFile, service, operations: list[Operation], seed: int = 0) -> Model:
    """The model of a running service (`scenarios.rest.process.Service`), found by calling it (see the module
    docstring); the service is reset before and after."""
    model = Model(file, operations)
    edges = infer(operations)
    readers = {resource(op.path): op for op in operations if op.method == "GET" and is_item(op)}
    fed = {e.producer for e in edges}  # creators some edge says feed a parameter
    known: dict[str, list[tuple[str, list[str]]]] = {}  # resource -> (value, parent values)
    service.reset(seed)
    for res, value, parents in model.population_values(seed):
        known.setdefault(res, []).append((value, parents))
    rng = random.Random(seed)
    for op in sorted(operations, key=lambda o: len(path_parameters(o))):
        params = path_parameters(op)
        path = _fill(op, known)
        if path is None:
            if params:
                model.broken.add(op.id)
            continue
        if op.body is not None and op.method in ("POST", "PUT", "PATCH"):
            found = _working_body(model, op, path, rng, service)
            if found is False:
                model.broken.add(op.id)
                continue
            model.body_keys[op.id], status = found
            if op.method != "POST":
                model.statuses[op.id] = status
        if op.method != "POST" or op.id not in fed:
            continue
        made = resource(op.path) + "/{}"
        reader = readers.get(made)
        if reader is None:
            continue
        body = draw(op.body.schema, rng, model.body_keys.get(op.id)) if op.body else None
        answer = service.request("POST", path, json=body)
        if not _ok(answer):
            continue
        parents = template_match(op.path, path) or []
        for where, value in _scalars(answer_body(answer)):
            trial = reader.path
            for name, v in zip(path_parameters(reader), [*parents, str(value)]):
                trial = trial.replace("{" + name + "}", str(v), 1)
            if _ok(service.request("GET", trial)):
                model.id_fields[op.id] = list(where)
                known.setdefault(made, []).append((str(value), parents))
                break
    for op in operations:  # where each listing of a made resource holds its items
        made = resource(op.path) + "/{}"
        if op.method != "GET" or made not in known:
            continue
        path = _fill(op, {resource(op.path, len(path_parameters(op)) - 1): known.get(
            resource(op.path, len(path_parameters(op)) - 1), [])}) if path_parameters(op) else op.path
        key = model.id_key(made)
        answer = service.request("GET", path) if path and key else None
        if answer is not None and _ok(answer):
            where = _items_at(answer_body(answer), key)
            if where is not None:
                model.listings[op.id] = where
    _delete_statuses(model, service, seed)
    service.reset(seed)
    return model


def _delete_statuses(model: Model, service, seed: int) -> None:
    """The status each delete of one item answers, tried on the population's item after a fresh reset."""
    for op in model.operations:
        if op.method != "DELETE" or not is_item(op) or op.id in model.broken:
            continue
        service.reset(seed)
        known: dict[str, list[tuple[str, list[str]]]] = {}
        for res, value, parents in model.population_values(seed):
            known.setdefault(res, []).append((value, parents))
        path = _fill(op, known)
        if path is not None:
            answer = service.request("DELETE", path)
            if _ok(answer):
                model.statuses[op.id] = answer.status_code


def _items_at(body: Any, key: str) -> list[str] | None:
    """The keys to a listing's items: [] when the answer is the list, else the first key whose value is a list of
    objects holding `key`; None when there is none."""
    if isinstance(body, list):
        return [] if body and all(isinstance(x, dict) and key in x for x in body) else None
    if isinstance(body, dict):
        for name, value in body.items():
            if isinstance(value, list) and value and all(isinstance(x, dict) and key in x for x in value):
                return [name]
    return None


def _fill(op: Operation, known: dict) -> str | None:
    """A concrete path for `op` from known values: the deepest parameter's value with its parents."""
    params = path_parameters(op)
    if not params:
        return op.path
    res = resource(op.path, len(params) - 1)
    for value, parents in known.get(res, []):
        values = [*parents, value]
        if len(values) != len(params):
            continue
        path = op.path
        for name, v in zip(params, values):
            path = path.replace("{" + name + "}", str(v), 1)
        return path
    return None


def _working_body(model: Model, op: Operation, path: str, rng: random.Random, service):
    """The top-level keys of a body the service accepts for `op` (None: every declared one) and the status it
    answered, False when none does. Only creators are tried for real (a POST's answer is harmless); updates and
    deletes of the population are tried too, and the service is reset afterwards by `probe`."""
    schema = op.body.schema
    props = list(schema.properties)
    shapes: list[list[str] | None] = [None]
    if props:
        shapes += [list(schema.required)] if schema.required else []
        shapes += [[k] for k in props]
    for keys in shapes:
        body = draw(schema, rng, None if keys is None else tuple(keys))
        if body in ({}, None) and keys is not None:
            continue
        answer = service.request(op.method, path, json=body)
        if _ok(answer):
            return keys, answer.status_code
    return False


def seed_of(case: dict) -> int:
    """The population seed a test case stores (0 when none)."""
    for a in case.get("assets", []):
        if a["kind"] == ASSET:
            meta = a["meta"]
            return int((json.loads(meta) if isinstance(meta, str) else meta)["seed"])
    return 0
