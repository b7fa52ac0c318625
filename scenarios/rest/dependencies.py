"""Which operation feeds which: producer -> consumer edges read from the document alone, to be confirmed live.

An `Edge` says that a parameter of the consumer can take a value the producer made, and where that value is, as an
OpenAPI runtime expression: `$response.body#/data/id` (a field of the producer's answer) or `$request.path.id` (a
value the client chose in the producer's own path, as a PUT that creates does); None when the document does not
say where in the answer it is (the answer's schema declares no such field), so it must be found live. Three rules,
each named in `Edge.reason`:

- `link`: an OpenAPI 3 link. A consumer's parameter fed by a link gets no inferred edge: the document has said.
- `name+type`: a path parameter, or a top-level body field named as an id (`bucket_id`, `bucketId`), of the
  consumer named like a field of a creator's answer, both scalars of a compatible type: the same name
  (`bucket_id` <- `bucket_id`), or the answer's `id` when the name is the creator's resource and "id" (`bucket_id`,
  `bucketId` <- `id` of `POST /buckets`). A bare `id` parameter is left to the next rule, which knows the resource
  from the path.
- `path prefix`: a path parameter that ends a prefix of the consumer's path (`{x}` in `/a/{x}/b`) is fed by the
  operation that creates `/a/{x}`: a POST to `/a`, whose answer holds the new id, or a PUT to `/a/{x}` where the
  client chooses it. Parameters three and more levels deep are found the same way.

Only creators produce (POST, and PUT on an item path); an edge's producer is never its consumer. The stateful
fuzzers (RESTler's producer-consumer inference, EvoMaster's resource dependencies) work from the same clues.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from scenarios.rest.openapi import Operation
from scenarios.rest.schema import Schema, pointer

LINK, NAME_TYPE, PATH_PREFIX = "link", "name+type", "path prefix"
CREATOR, READER, UPDATER, DELETER = "creator", "reader", "updater", "deleter"
FIELD_DEPTH = 3  # how deep into a producer's answer fields are looked for (objects only, never into arrays)
ID = "id"
SCALARS = (None, "string", "integer", "number")  # the types an identifier can have (None: not declared)


@dataclass(frozen=True)
class Edge:
    producer: str  # operation id
    field: str | None  # runtime expression of the value in the producer's exchange; None: to be found live
    consumer: str  # operation id
    parameter: str  # the consumer's parameter ("" with location "body": the whole body)
    location: str  # "path", "query", "header" or "body"
    reason: str  # LINK, NAME_TYPE or PATH_PREFIX


def roles(op: Operation) -> frozenset[str]:
    """What an operation does to the state: GET and HEAD read, POST creates, PUT on an item path (one ending in a
    parameter) creates or updates, PUT elsewhere and PATCH update, DELETE deletes."""
    if op.method in ("GET", "HEAD"):
        return frozenset({READER})
    if op.method == "POST":
        return frozenset({CREATOR})
    if op.method == "PUT":
        return frozenset({CREATOR, UPDATER}) if _is_parameter(_segments(op.path)[-1]) else frozenset({UPDATER})
    return frozenset({UPDATER} if op.method == "PATCH" else {DELETER} if op.method == "DELETE" else ())


def infer(operations: list[Operation]) -> list[Edge]:
    """Every edge among `operations`, consumer by consumer in document order, the links' first."""
    creators = [op for op in operations if CREATOR in roles(op)]
    edges = _link_edges(operations)
    linked = {(e.consumer, e.location, e.parameter) for e in edges}
    seen = {(e.producer, e.consumer, e.location, e.parameter) for e in edges}
    for consumer in operations:
        for edge in [*_by_name(consumer, creators), *_by_path(consumer, creators)]:
            key = (edge.producer, edge.consumer, edge.location, edge.parameter)
            if (edge.consumer, edge.location, edge.parameter) not in linked and key not in seen:
                seen.add(key)
                edges.append(edge)
    return edges


def _link_edges(operations: list[Operation]) -> list[Edge]:
    by_id = {op.id: op for op in operations}
    edges = []
    for producer in operations:
        for link in producer.links:
            target = by_id.get(link.target)
            if target is None:  # left out by include / exclude
                continue
            for name, expression in link.parameters.items():
                parameter = target.parameter(name)
                if parameter is not None:  # a link to a parameter the target does not declare is dropped
                    edges.append(Edge(producer.id, expression, target.id, name, parameter.location, LINK))
            if link.body is not None:
                edges.append(Edge(producer.id, link.body, target.id, "", "body", LINK))
    return edges


def _by_name(consumer: Operation, creators: list[Operation]) -> Iterator[Edge]:
    wanted = [(p.name, "path", p.schema) for p in consumer.parameters if p.location == "path" and p.name != ID]
    if consumer.body is not None:
        wanted += [(name, "body", schema) for name, schema in consumer.body.schema.properties.items()
                   if _resource(name)]
    for name, location, schema in wanted:
        for producer in creators:
            if producer.id == consumer.id:
                continue
            for at, field, field_schema in _fields(_answer(producer)):
                same = field == name or (field == ID and _resource(name) in _nouns(producer))
                if same and _compatible(schema, field_schema):
                    yield Edge(producer.id, f"$response.body#{at}", consumer.id, name, location, NAME_TYPE)
                    break


def _by_path(consumer: Operation, creators: list[Operation]) -> Iterator[Edge]:
    segments = _segments(consumer.path)
    for i, segment in enumerate(segments):
        if not _is_parameter(segment):
            continue
        name = segment[1:-1]
        for producer in creators:
            theirs = _segments(producer.path)
            if producer.id == consumer.id:
                continue
            if producer.method == "PUT" and _same_template(theirs, segments[:i + 1]):
                yield Edge(producer.id, f"$request.path.{theirs[i][1:-1]}", consumer.id, name, "path", PATH_PREFIX)
            elif producer.method == "POST" and _same_template(theirs, segments[:i]):
                yield Edge(producer.id, _id_field(producer, name), consumer.id, name, "path", PATH_PREFIX)


def _id_field(producer: Operation, name: str) -> str | None:
    """Where the answer of a POST holds the new item's id: a field named like the parameter, else the shallowest
    `id`; None when the answer's schema declares neither."""
    fields = list(_fields(_answer(producer)))
    for wanted in (name, ID):
        found = [at for at, field, _ in fields if field == wanted]
        if found:
            return f"$response.body#{min(found, key=lambda at: at.count('/'))}"
    return None


def _answer(op: Operation) -> Schema | None:
    """The schema of the first success answer that declares one."""
    for status, response in sorted(op.responses.items()):
        if status.startswith("2") and response.schema is not None:
            return response.schema
    return None


def _fields(schema: Schema | None, at: str = "", depth: int = 0) -> Iterator[tuple[str, str, Schema]]:
    """(JSON pointer, name, schema) of every declared field of an answer, breadth first, into objects only."""
    if schema is None or depth >= FIELD_DEPTH:
        return
    for name, sub in schema.properties.items():
        yield f"{at}{pointer(name)}", name, sub
    for name, sub in schema.properties.items():
        yield from _fields(sub, f"{at}{pointer(name)}", depth + 1)


def _compatible(a: Schema, b: Schema) -> bool:
    """Whether values of `b` can be given for `a`: both scalars (or undeclared) of the same kind of type."""
    numbers = {"integer", "number"}
    if a.type not in SCALARS or b.type not in SCALARS:
        return False
    return a.type is None or b.type is None or a.type == b.type or {a.type, b.type} <= numbers


def _resource(name: str) -> str:
    """The resource a parameter names by its id: `bucket_id`, `bucketId`, `bucket-id` -> `bucket`."""
    for suffix in ("_id", "-id", "Id", "ID"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)].lower()
    return ""


def _nouns(op: Operation) -> set[str]:
    """The resource a creator makes, named by its path's last literal segment, as written and singular."""
    literal = [s for s in _segments(op.path) if s and not _is_parameter(s)]
    if not literal:
        return set()
    noun = literal[-1].lower()
    if noun.endswith("ies"):
        return {noun, noun[:-3] + "y"}
    if noun.endswith(("sses", "xes", "ches", "shes")):
        return {noun, noun[:-2]}
    return {noun, noun[:-1]} if noun.endswith("s") and not noun.endswith("ss") else {noun}


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def _is_parameter(segment: str) -> bool:
    return segment.startswith("{") and segment.endswith("}")


def _same_template(a: list[str], b: list[str]) -> bool:
    """Whether two paths are the same template: equal literals, and a parameter wherever the other has one."""
    return len(a) == len(b) and all(x == y or (_is_parameter(x) and _is_parameter(y)) for x, y in zip(a, b))

