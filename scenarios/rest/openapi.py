"""A Swagger 2.0 or OpenAPI 3.0 / 3.1 document, read into one list of frozen `Operation`s.

Both versions come out the same: parameters in the path, query and headers with a normalised `Schema`
(scenarios/rest/schema.py); the request body as one `Body` (Swagger 2.0's `in: body` parameter, or its `formData`
parameters as the properties of one object; OpenAPI 3's `requestBody`, JSON preferred among its media types); the
responses by status; OpenAPI 3 links. Every path carries the document's base path (Swagger 2.0's `basePath`,
OpenAPI 3's first server), so that it is the path to request. An operation with no `operationId` gets one made of
its method and path: `GET /buckets/{bid}/collections` is `get_buckets_bid_collections`.

`select` keeps the operations that `include` / `exclude` name: an operationId or `"METHOD /path"`, where `*` stands
for any run of characters (`"DELETE /*"`, `"get_*"`); exclude wins over include.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from scenarios.rest.schema import Resolver, Schema, SpecError, pointer, unpointer

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
LOCATIONS = ("path", "query", "header", "cookie")
JSON = "application/json"


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str  # "path", "query", "header" or "cookie"
    required: bool
    schema: Schema
    description: str | None = None


@dataclass(frozen=True)
class Body:
    schema: Schema
    media_type: str  # "application/json", "application/x-www-form-urlencoded", ...
    required: bool = False


@dataclass(frozen=True)
class Response:
    schema: Schema | None  # None: the response declares no body
    description: str = ""


@dataclass(frozen=True)
class Link:
    """An OpenAPI 3 link: after this operation answers `status`, `target` can be called with its parameters taken
    from runtime expressions (`$response.body#/id`, `$request.path.bucket_id`)."""

    name: str
    status: str
    target: str  # the target operation's id
    parameters: dict[str, str]  # the target's parameter name -> runtime expression
    body: str | None = None  # a runtime expression for the target's request body


@dataclass(frozen=True)
class Operation:
    id: str
    method: str  # upper case
    path: str  # with the base path: "/v1/buckets/{bucket_id}"
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    parameters: tuple[Parameter, ...] = ()
    body: Body | None = None
    responses: dict[str, Response] = field(default_factory=dict)  # status ("200", "2XX", "default") -> Response
    links: tuple[Link, ...] = ()

    def parameter(self, name: str, location: str | None = None) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name and location in (None, p.location)), None)

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"


def parse_document(text: str, where: str) -> dict:
    """The document in `text` (JSON; YAML too where PyYAML is installed); `where` names its origin in errors."""
    try:
        document = json.loads(text)
    except ValueError as e:
        try:
            import yaml
        except ImportError:
            raise SpecError(f"{where}: not JSON ({e}); YAML is read only where PyYAML is installed "
                            f"(pip install pyyaml)") from None
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SpecError(f"{where}: neither JSON nor YAML ({' '.join(str(e).split())})") from None
    if not isinstance(document, dict):
        raise SpecError(f"{where}: the document is a {type(document).__name__}, not an object of keys")
    return document


def read(document: dict, where: str = "the document") -> list[Operation]:
    """Every operation of a Swagger 2.0 or OpenAPI 3.x document, in document order."""
    if str(document.get("swagger", "")).startswith("2."):
        version = 2
    elif str(document.get("openapi", "")).startswith("3."):
        version = 3
    else:
        raise SpecError(f"{where} at /: neither Swagger 2.0 nor OpenAPI 3 (no \"swagger\": \"2.0\" and no "
                        f"\"openapi\": \"3.x\" key); give the service's OpenAPI document")
    paths = document.get("paths")
    if not isinstance(paths, dict) or not paths:
        raise SpecError(f"{where} at /paths: no paths, so no operation to call")
    reader = _Reader(document, version, where)
    found: list[tuple[dict, Operation]] = []
    for path, item in paths.items():
        item = reader.deref(item, pointer("paths", path))
        if not isinstance(item, dict):
            raise SpecError(f"{where} at {pointer('paths', path)}: a path item must be an object")
        for method in METHODS:
            if isinstance(item.get(method), dict):
                found.append(reader.operation(path, method, item, {o.id for _, o in found}))
    return _linked(found, reader)


def select(operations: list[Operation], include: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
           where: str = "the document") -> list[Operation]:
    """The operations that `include` names (all when empty) and `exclude` does not; SpecError for a pattern that
    names no operation, and when none is left."""
    for key, patterns in (("include", include), ("exclude", exclude)):
        for pattern in patterns:
            if not any(_matches(pattern, op) for op in operations):
                raise SpecError(f"{key} pattern {pattern!r} names no operation of {where}; patterns are operationIds "
                                f"or \"METHOD /path\" with * for any characters (see python -m scenarios.rest FILE)")
    kept = [op for op in operations if (not include or any(_matches(p, op) for p in include))
            and not any(_matches(p, op) for p in exclude)]
    if not kept:
        raise SpecError(f"no operation of {where} is left after include = {list(include)} and exclude = "
                        f"{list(exclude)}; widen include or narrow exclude")
    return kept


def _matches(pattern: str, op: Operation) -> bool:
    """Whether `pattern` (an operationId or "METHOD /path", `*` for any characters) names `op`."""
    method, _, path = pattern.partition(" ")
    if path and (method == "*" or method.lower() in METHODS):
        return _glob(method.upper(), op.method) and _glob(path, op.path)
    return _glob(pattern, op.id)


def _glob(pattern: str, text: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), text) is not None


def derived_id(method: str, path: str) -> str:
    """A stable id for an operation without operationId: `get_buckets_bid_collections`."""
    words = re.findall(r"[A-Za-z0-9]+", path)
    return "_".join([method.lower(), *words]) if words else f"{method.lower()}_root"


class _Reader:
    """Reads one operation at a time, with the document's base path and version in mind."""

    def __init__(self, document: dict, version: int, where: str) -> None:
        self.document, self.version, self.where = document, version, where
        self.resolver = Resolver(document)
        self.base = _base_path(document, version)

    def deref(self, node: Any, at: str) -> Any:
        try:
            return self.resolver.deref(node, at)
        except SpecError as e:
            raise SpecError(f"{self.where} {e}") from None

    def schema(self, node: Any, at: str) -> Schema:
        try:
            return self.resolver.schema(node, at)
        except SpecError as e:
            raise SpecError(f"{self.where} {e}") from None

    def operation(self, path: str, method: str, item: dict, taken: set[str]) -> tuple[dict, Operation]:
        at = pointer("paths", path, method)
        raw = item[method]
        params = self.parameters(item.get("parameters", []), pointer("paths", path, "parameters"))
        params.update(self.parameters(raw.get("parameters", []), f"{at}/parameters"))
        body = self.body_v2(params, raw, at) if self.version == 2 else self.body_v3(raw.get("requestBody"), at)
        op_id = raw.get("operationId") if isinstance(raw.get("operationId"), str) else derived_id(method, path)
        unique, n = op_id, 2
        while unique in taken:  # duplicate ids are against the specification; keep both, told apart
            unique, n = f"{op_id}_{n}", n + 1
        tags = raw.get("tags") if isinstance(raw.get("tags"), list) else []
        return raw, Operation(
            id=unique, method=method.upper(), path=self.base + path,
            summary=str(raw.get("summary") or ""), description=str(raw.get("description") or ""),
            tags=tuple(str(t) for t in tags),
            parameters=tuple(self.parameter(p, a) for p, a in params.values() if p.get("in") in LOCATIONS),
            body=body, responses=self.responses(raw.get("responses", {}), f"{at}/responses"))

    def parameters(self, raw: Any, at: str) -> dict[tuple[str, str], tuple[dict, str]]:
        """(name, location) -> (the parameter, where it is); an operation's own override the path item's."""
        if not isinstance(raw, list):
            raise SpecError(f"{self.where} at {at}: parameters must be a list")
        out = {}
        for i, p in enumerate(raw):
            p = self.deref(p, f"{at}/{i}")
            if not isinstance(p, dict) or not isinstance(p.get("name"), str) or "in" not in p:
                raise SpecError(f"{self.where} at {at}/{i}: a parameter needs a name and an \"in\"")
            out[(p["name"], p["in"])] = (p, f"{at}/{i}")
        return out

    def parameter(self, raw: dict, at: str) -> Parameter:
        if self.version == 2:  # the parameter is its own schema
            node = {k: v for k, v in raw.items() if k not in ("name", "in", "required", "description")}
        else:
            node = raw.get("schema", _first_media(raw.get("content")).get("schema", {}))
        return Parameter(name=raw["name"], location=raw["in"], required=bool(raw.get("required")) or
                         raw["in"] == "path", schema=self.schema(node, at), description=raw.get("description"))

    def body_v2(self, params: dict, raw: dict, at: str) -> Body | None:
        consumes = raw.get("consumes") or self.document.get("consumes") or [JSON]
        for p, p_at in params.values():
            if p.get("in") == "body":
                return Body(self.schema(p.get("schema", {}), f"{p_at}/schema"), _preferred(consumes),
                            bool(p.get("required")))
        form = [(p, p_at) for p, p_at in params.values() if p.get("in") == "formData"]
        if not form:
            return None
        files = any(p.get("type") == "file" for p, _ in form) or "multipart/form-data" in consumes
        schema = Schema(type="object", properties={p["name"]: self.parameter(p, p_at).schema for p, p_at in form},
                        required=tuple(p["name"] for p, _ in form if p.get("required")))
        return Body(schema, "multipart/form-data" if files else "application/x-www-form-urlencoded",
                    any(p.get("required") for p, _ in form))

    def body_v3(self, raw: Any, at: str) -> Body | None:
        if raw is None:
            return None
        raw = self.deref(raw, f"{at}/requestBody")
        content = raw.get("content") if isinstance(raw, dict) else None
        if not isinstance(content, dict) or not content:
            return None
        media = _preferred(list(content))
        return Body(self.schema(content[media].get("schema", {}), f"{at}/requestBody{pointer('content', media)}"),
                    media, bool(raw.get("required")))

    def responses(self, raw: Any, at: str) -> dict[str, Response]:
        if not isinstance(raw, dict):
            raise SpecError(f"{self.where} at {at}: responses must be an object of status codes")
        out = {}
        for status, response in raw.items():
            response = self.deref(response, pointer(*unpointer(at), str(status)))
            if not isinstance(response, dict):
                continue
            if self.version == 2:
                node = response.get("schema")
            else:
                node = _first_media(response.get("content")).get("schema")
            schema = None if node is None else self.schema(node, pointer(*unpointer(at), str(status)))
            out[str(status)] = Response(schema, str(response.get("description") or ""))
        return out


def _linked(found: list[tuple[dict, Operation]], reader: _Reader) -> list[Operation]:
    """The operations with their OpenAPI 3 links read; a link to an operation the document lacks is dropped."""
    ids = {op.id for _, op in found}
    by_place = {(op.method.lower(), op.path[len(reader.base):]): op.id for _, op in found}
    out = []
    for raw, op in found:
        links = []
        at = pointer("paths", op.path[len(reader.base):], op.method.lower(), "responses")
        for status, response in (raw.get("responses") or {}).items():
            response = reader.deref(response, pointer(*unpointer(at), status))
            links_of = response.get("links") if isinstance(response, dict) else None
            for name, link in (links_of if isinstance(links_of, dict) else {}).items():
                link = reader.deref(link, pointer(*unpointer(at), status, "links", name))
                if not isinstance(link, dict):
                    continue
                target = link.get("operationId")
                if isinstance(link.get("operationRef"), str):  # "#/paths/~1items~1{id}/get"
                    keys = unpointer(link["operationRef"].partition("#")[2])
                    target = by_place.get((keys[2], keys[1])) if len(keys) == 3 and keys[0] == "paths" else None
                if target in ids:
                    body = link.get("requestBody")
                    links.append(Link(str(name), str(status), target, _link_parameters(link.get("parameters")),
                                      None if body is None else str(body)))
        out.append(replace(op, links=tuple(links)))
    return out


def _link_parameters(raw: Any) -> dict[str, str]:
    """A link's parameters by the target's parameter name: a key may name the location first (`path.id`)."""
    out = {}
    for key, expression in (raw if isinstance(raw, dict) else {}).items():
        location, dot, name = str(key).partition(".")
        out[name if dot and location in LOCATIONS else str(key)] = str(expression)
    return out


def _base_path(document: dict, version: int) -> str:
    if version == 2:
        base = document.get("basePath") or ""
    else:
        servers = document.get("servers") or [{}]
        server = servers[0] if isinstance(servers[0], dict) else {}
        url = str(server.get("url") or "")
        for name, var in (server.get("variables") or {}).items():
            url = url.replace("{" + name + "}", str((var or {}).get("default", "")))
        base = urlsplit(url).path
    return base.rstrip("/") if isinstance(base, str) else ""


def _preferred(media_types: list[str]) -> str:
    """JSON first, then another JSON-based type, then whatever comes first."""
    for wanted in (lambda m: m.split(";")[0].strip() == JSON, lambda m: m.split(";")[0].strip().endswith("+json")):
        for media in media_types:
            if wanted(media):
                return media
    return media_types[0] if media_types else JSON


def _first_media(content: Any) -> dict:
    if not isinstance(content, dict) or not content:
        return {}
    media = content[_preferred(list(content))]
    return media if isinstance(media, dict) else {}
