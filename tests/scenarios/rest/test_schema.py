"""Schemas normalised: references with siblings, allOf merged, the first usable oneOf/anyOf branch, every way of
saying null, recursion cut, and references that do not resolve named by where they are."""

from __future__ import annotations

import pytest

from scenarios.rest.schema import MAX_DEPTH, Resolver, Schema, SpecError, pointer, unpointer


def schema_of(node: dict, document: dict | None = None) -> Schema:
    return Resolver(document or {}).schema(node, "/x")


def test_pointers_escape_slash_and_tilde():
    assert pointer("paths", "/a/{x}", "get") == "/paths/~1a~1{x}/get"
    assert unpointer(pointer("a~b", "c/d")) == ["a~b", "c/d"]


def test_fields_are_read():
    s = schema_of({"type": "string", "format": "date", "enum": ["a", "b"], "example": "a", "default": "b",
                   "minLength": 1, "maxLength": 3, "pattern": "^[ab]$", "description": "a letter"})
    assert (s.type, s.format, s.enum, s.example, s.default) == ("string", "date", ("a", "b"), "a", "b")
    assert (s.min_length, s.max_length, s.pattern, s.description) == (1, 3, "^[ab]$", "a letter")
    n = schema_of({"type": "integer", "minimum": 0, "maximum": 10})
    assert (n.minimum, n.maximum, n.nullable) == (0, 10, False)


@pytest.mark.parametrize("node", [
    {"type": "string", "nullable": True},  # OpenAPI 3.0
    {"type": "string", "x-nullable": True},  # Swagger 2.0
    {"type": ["string", "null"]},  # OpenAPI 3.1
    {"type": "string", "enum": ["a", None]},
    {"anyOf": [{"type": "null"}, {"type": "string"}]},
])
def test_every_way_of_saying_null(node):
    s = schema_of(node)
    assert s.nullable and s.type == "string"


def test_a_ref_with_siblings_and_allof_merged():
    document = {"defs": {
        "Base": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}},
        "Named": {"allOf": [{"$ref": "#/defs/Base"}, {"required": ["name"], "properties": {
            "name": {"type": "string"}}}]}}}
    s = schema_of({"$ref": "#/defs/Named", "description": "overridden here"}, document)
    assert s.type == "object" and s.description == "overridden here"
    assert set(s.properties) == {"id", "name"} and set(s.required) == {"id", "name"}
    assert s.properties["id"].type == "integer"


def test_oneof_keeps_its_first_usable_branch():
    s = schema_of({"oneOf": [{"type": "null"}, {"type": "integer", "minimum": 2}, {"type": "string"}],
                   "description": "kept"})
    assert (s.type, s.minimum, s.nullable, s.description) == ("integer", 2, True, "kept")


def test_recursion_is_cut_and_deep_nesting_too():
    document = {"defs": {"Node": {"type": "object", "properties": {
        "child": {"$ref": "#/defs/Node"}, "children": {"type": "array", "items": {"$ref": "#/defs/Node"}}}}}}
    s = schema_of({"$ref": "#/defs/Node"}, document)
    assert s.properties["child"].cut and s.properties["children"].items.cut
    assert not s.cut
    deep: dict = {"type": "string"}
    for _ in range(MAX_DEPTH + 5):
        deep = {"type": "object", "properties": {"a": deep}}
    s, depth = schema_of(deep), 0
    while not s.cut:
        s, depth = s.properties["a"], depth + 1
    assert depth == MAX_DEPTH and s.type == "object"


def test_types_are_inferred_from_properties_and_items():
    assert schema_of({"properties": {"a": {}}}).type == "object"
    assert schema_of({"items": {"type": "string"}}).type == "array"
    assert schema_of({}).type is None


@pytest.mark.parametrize("ref, message", [
    ("#/defs/Nope", "at /x: $ref '#/defs/Nope' does not resolve (no 'Nope')"),
    ("other.json#/defs/A", "at /x: $ref 'other.json#/defs/A' is not in this document"),
])
def test_references_that_cannot_be_followed(ref, message):
    with pytest.raises(SpecError) as caught:
        schema_of({"$ref": ref}, {"defs": {}})
    assert str(caught.value).startswith(message)
