"""The documentation of a service-derived scenario's operations (`scenarios.rest.doc`), from a small document alone:
parameters, bodies and answers by status, shapes on one line, what several operations share said once."""

from __future__ import annotations

from scenarios.rest.doc import MAX_SHAPE, Documentation, shape
from scenarios.rest.openapi import read
from scenarios.rest.schema import Schema

ERROR = {"type": "object", "required": ["code"],
         "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}}
ITEM = {"type": "object", "properties": {"data": {"type": "object"}, "permissions": {"type": "object", "properties": {
    "read": {"type": "array", "items": {"type": "string"}}}}}}


def answers(ok: dict) -> dict:
    return {"200": {"description": "The item.", "content": {"application/json": {"schema": ok}}},
            "404": {"description": "No such item.", "content": {"application/json": {"schema": ERROR}}},
            "412": {"description": "Changed since.", "content": {"application/json": {"schema": ERROR}}}}


DOCUMENT = {"openapi": "3.0.0", "paths": {"/items/{id}": {
    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
    "get": {"operationId": "get_item", "summary": "Read an item", "responses": answers(ITEM), "parameters": [
        {"name": "fields", "in": "query", "description": "Fields to answer.",
         "schema": {"type": "array", "items": {"type": "string"}}},
        {"name": "If-Match", "in": "header", "schema": {"type": "string", "pattern": "^\"[0-9]+\"$"}},
        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
        {"name": "session", "in": "cookie", "schema": {"type": "string"}}]},
    "put": {"operationId": "put_item", "responses": answers({"type": "object"}), "requestBody": {
        "required": True, "content": {"application/json": {"schema": {
            "type": "object", "properties": {"kind": {"type": "string", "enum": ["a", "b"]}}}}}}},
}}}


def test_a_shape_is_one_line_with_lists_allowed_values_and_optional_keys_and_is_cut():
    assert shape(read(DOCUMENT)[0].responses["200"].schema) == "{data: object, permissions: {read: [string]}}"
    assert shape(read(DOCUMENT)[0].responses["404"].schema) == "{code: integer, message?: string}"
    assert shape(Schema(type="string", enum=("a", "b"), nullable=True)) == '"a"|"b"|null'
    wide = Schema(type="object", properties={f"field{i}": Schema(type="string") for i in range(100)})
    assert len(shape(wide)) == MAX_SHAPE and shape(wide).endswith("…")


def test_an_operation_shows_its_parameters_body_and_answers_and_shared_things_once():
    get, put = read(DOCUMENT)
    doc = Documentation([get, put], {"Authorization": "Basic x"})
    lines = doc.operation(get)
    assert lines[0] == "Read an item."
    assert "- `id` (path, string, required)" in lines
    assert "- `fields` (query, [string]): Fields to answer." in lines
    assert '- `If-Match` (header, string, pattern `^"[0-9]+"$`)' in lines
    assert not any("Authorization" in line or "session" in line for line in lines), "sent by the file; a cookie"
    # the error shape both operations answer, and the statuses that mean the same in both, are said once
    assert "- `Shape1` = `{code: integer, message?: string}`" in doc.preamble()
    assert "- 404: No such item." in doc.preamble() and "- 412: Changed since." in doc.preamble()
    assert "- 404, 412: `Shape1`" in lines
    assert "- 200: `{data: object, permissions: {read: [string]}}`" in lines
    assert 'Body (application/json, required): `{kind: "a"|"b"}`' in doc.operation(put)
    assert "- 200: `object`" in doc.operation(put)
