"""JSON schemas of an OpenAPI document, normalised into one frozen `Schema` whatever the document's version.

What is read: `$ref` to the same document (`#/...`; a reference to another file is a `SpecError`), with sibling
keys laid over the target; a reference back into a schema being read, or nesting deeper than MAX_DEPTH, is cut
(`Schema.cut`: its type only). `allOf` is merged (properties and required joined; for any other key the first
branch that has it wins). `oneOf` / `anyOf` keep their first branch that is not `{"type": "null"}`, and a null
branch makes the schema nullable: enough to draw a valid value and to match fields by name, not a validator.
Nullability is read from OpenAPI 3.0's `nullable`, Swagger 2.0's `x-nullable`, 3.1's `type: [..., "null"]` and a
null in `enum`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 16  # nesting levels read before a schema is cut


class SpecError(ValueError):
    """An OpenAPI document that cannot be read; the message is one line naming where (a JSON pointer or a key)."""


@dataclass(frozen=True)
class Schema:
    type: str | None = None  # "object", "array", "string", "integer", "number", "boolean"; None: any
    format: str | None = None
    enum: tuple | None = None
    example: Any = None
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    items: Schema | None = None
    properties: dict[str, Schema] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    nullable: bool = False
    description: str | None = None
    cut: bool = False  # a recursive (or too deep) schema, not read further


def pointer(*parts: str) -> str:
    """A JSON pointer (RFC 6901) of the given keys: `pointer("paths", "/a/{x}")` is `/paths/~1a~1{x}`."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def unpointer(text: str) -> list[str]:
    """The keys of a JSON pointer (the part after `#` of a local reference)."""
    return [p.replace("~1", "/").replace("~0", "~") for p in text.split("/")[1:]] if text else []


class Resolver:
    """Reads schemas (and follows references of any object) in one document."""

    def __init__(self, document: dict) -> None:
        self.document = document

    def deref(self, node: Any, where: str) -> Any:
        """`node` with its `$ref` chain followed (sibling keys laid over the target); other nodes unchanged."""
        seen = []
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise SpecError(f"at {where}: $ref {ref!r} refers to itself")
            seen.append(ref)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**self.target(ref, where), **siblings}
        return node

    def target(self, ref: Any, where: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SpecError(f"at {where}: $ref {ref!r} is not in this document (only #/... references are read)")
        node: Any = self.document
        for key in unpointer(ref[1:]):
            if isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            elif isinstance(node, dict) and key in node:
                node = node[key]
            else:
                raise SpecError(f"at {where}: $ref {ref!r} does not resolve (no {key!r})")
        return node

    def schema(self, node: Any, where: str, seen: tuple[str, ...] = (), depth: int = 0) -> Schema:
        """The normalised schema of `node`; `seen` holds the references being read above it, `depth` its
        nesting."""
        node, seen = self._flat(node, where, seen)
        if node is None:
            return Schema(cut=True)
        if depth >= MAX_DEPTH:
            return Schema(type=_type(node)[0], cut=True)
        kind, nullable = _type(node)
        enum = node.get("enum")
        items = node.get("items")
        if isinstance(items, list):  # tuple-typed arrays: the first position stands for all
            items = items[0] if items else None
        properties = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        examples = node.get("examples")
        return Schema(
            type=kind or ("object" if properties else "array" if items is not None else None),
            format=node.get("format"),
            enum=tuple(enum) if isinstance(enum, list) else None,
            example=node.get("example", examples[0] if isinstance(examples, list) and examples else None),
            default=node.get("default"),
            minimum=_number(node.get("minimum")), maximum=_number(node.get("maximum")),
            min_length=_number(node.get("minLength")), max_length=_number(node.get("maxLength")),
            pattern=node.get("pattern") if isinstance(node.get("pattern"), str) else None,
            items=None if items is None else self.schema(items, f"{where}/items", seen, depth + 1),
            properties={name: self.schema(sub, f"{where}{pointer('properties', name)}", seen, depth + 1)
                        for name, sub in properties.items()},
            required=tuple(r for r in node.get("required", ()) if isinstance(r, str))
            if isinstance(node.get("required"), list) else (),
            nullable=nullable or bool(node.get("nullable") or node.get("x-nullable"))
            or (isinstance(enum, list) and None in enum),
            description=node.get("description") if isinstance(node.get("description"), str) else None,
        )

    def _flat(self, node: Any, where: str, seen: tuple[str, ...]) -> tuple[dict | None, tuple[str, ...]]:
        """`node` with its own `$ref`, `allOf`, `oneOf` and `anyOf` applied (not those of its properties); None when
        a reference loops back into `seen`."""
        if not isinstance(node, dict):
            return {}, seen  # `true`, `{}` or garbage: any value
        while "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                return None, seen
            seen = (*seen, ref)
            node = {**self.target(ref, where), **{k: v for k, v in node.items() if k != "$ref"}}
            if not isinstance(node, dict):
                return {}, seen
        if isinstance(node.get("allOf"), list):
            merged = {k: v for k, v in node.items() if k != "allOf"}
            for i, branch in enumerate(node["allOf"]):
                branch, _ = self._flat(branch, f"{where}/allOf/{i}", seen)
                if branch is None:
                    continue
                merged["properties"] = {**branch.get("properties", {}), **merged.get("properties", {})}
                merged["required"] = [*merged.get("required", []), *branch.get("required", [])]
                merged.update({k: v for k, v in branch.items() if k not in merged})
            node = merged
        for key in ("oneOf", "anyOf"):
            if isinstance(node.get(key), list):
                node = self._first_branch(node, key, where, seen)
        return node, seen

    def _first_branch(self, node: dict, key: str, where: str, seen: tuple[str, ...]) -> dict:
        rest = {k: v for k, v in node.items() if k != key}
        chosen, nullable = None, False
        for i, branch in enumerate(node[key]):
            flat, _ = self._flat(branch, f"{where}/{key}/{i}", seen)
            if flat is not None and _type(flat) == (None, True):  # {"type": "null"}
                nullable = True
            elif flat is not None and chosen is None:
                chosen = flat
        return {**(chosen or {}), **rest, **({"nullable": True} if nullable else {})}


def _type(node: dict) -> tuple[str | None, bool]:
    """(the type, whether null is allowed by the type itself): 3.1 writes `type: ["string", "null"]`."""
    kind = node.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return (others[0] if others else None), "null" in kind
    if kind == "null":
        return None, True
    return (kind if isinstance(kind, str) else None), False


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def to_json(schema: Schema | None, depth: int = 0) -> dict:
    """`schema` as a plain JSON schema (what a tool's parameter declares): type, format, enum, bounds, items,
    properties and required, with `nullable` as a null in the type; deeper than MAX_JSON_DEPTH, its type only."""
    if schema is None:
        return {}
    out: dict[str, Any] = {}
    if schema.type:
        out["type"] = [schema.type, "null"] if schema.nullable else schema.type
    if schema.description:
        out["description"] = schema.description
    for key, value in (("format", schema.format), ("minimum", schema.minimum), ("maximum", schema.maximum),
                       ("minLength", schema.min_length), ("maxLength", schema.max_length),
                       ("pattern", schema.pattern)):
        if value is not None:
            out[key] = value
    if schema.enum is not None:
        out["enum"] = list(schema.enum)
    if depth >= MAX_JSON_DEPTH:
        return out
    if schema.items is not None:
        out["items"] = to_json(schema.items, depth + 1)
    if schema.properties:
        out["properties"] = {k: to_json(v, depth + 1) for k, v in schema.properties.items()}
    if schema.required:
        out["required"] = list(schema.required)
    return out


MAX_JSON_DEPTH = 6  # nesting levels of a tool's parameter schema
