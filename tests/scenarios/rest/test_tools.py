"""The tools of a service-derived scenario (`scenarios.rest.tools.tool_spec`), from a small document alone: one per
kept operation, named by its operation id, requiring its path parameters, its required query parameters and its
required body."""

from __future__ import annotations

from scenarios.calling import Tracer
from scenarios.rest.tools import documentation, kept_operations, tool_spec
from scenarios.rest.model import Model
from scenarios.rest.openapi import read

DOCUMENT = {
    "openapi": "3.0.0",
    "servers": [{"url": "/v1"}],
    "paths": {
        "/shelves": {
            "get": {"operationId": "list_shelves", "summary": "List the shelves",
                    "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}]},
            "post": {"operationId": "create_shelf", "summary": "Create a shelf",
                     "requestBody": {"required": True, "content": {"application/json": {"schema": {
                         "type": "object", "required": ["name"],
                         "properties": {"name": {"type": "string", "maxLength": 20}}}}}}},
            "delete": {"operationId": "delete_shelves", "summary": "Delete every shelf"},
        },
        "/shelves/{shelf_id}/books": {
            "get": {"operationId": "list_books", "description": "The books on a shelf.",
                    "parameters": [{"name": "shelf_id", "in": "path", "required": True, "schema": {"type": "string"}},
                                   {"name": "genre", "in": "query", "required": True,
                                    "schema": {"type": "string", "enum": ["poetry", "prose"]}}]},
        },
        "/shelves/{shelf_id}": {
            "parameters": [{"name": "shelf_id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "patch": {"operationId": "rename_shelf", "requestBody": {"content": {"application/json": {"schema": {
                "type": "object", "properties": {"name": {"type": "string"}}}}}}},
            "delete": {"operationId": "delete_shelf"},
            "head": {"operationId": "shelf_exists"},
        },
    },
}


def model() -> Model:
    operations = read(DOCUMENT)
    return Model(file=None, operations=operations, id_fields={"create_shelf": ["data", "id"]},
                 broken={"rename_shelf"})


def test_one_tool_per_kept_operation_with_its_required_parameters():
    m = model()
    specs = {s.name: s for s in (tool_spec(op, m, documentation(m)) for op in kept_operations(m))}
    # a delete of the whole collection, a HEAD and an operation the probe could not call are no tools
    assert sorted(specs) == ["create_shelf", "delete_shelf", "list_books", "list_shelves"]
    required = {name: s.parameters["required"] for name, s in specs.items()}
    assert required == {"list_shelves": [], "create_shelf": ["body"], "list_books": ["shelf_id", "genre"],
                        "delete_shelf": ["shelf_id"]}
    assert specs["list_shelves"].parameters["properties"]["limit"]["type"] == "integer"
    assert specs["list_books"].parameters["properties"]["genre"]["enum"] == ["poetry", "prose"]
    body = specs["create_shelf"].parameters["properties"]["body"]
    assert body["required"] == ["name"] and body["properties"]["name"] == {"type": "string", "maxLength": 20}
    # path parameters and the body take handles; the id's place in a creator's answer is told
    assert specs["list_books"].handles == ("shelf_id",) and specs["create_shelf"].handles == ("body",)
    assert "['data']['id']" in specs["create_shelf"].description
    assert specs["list_books"].description.startswith("GET /v1/shelves/{shelf_id}/books: The books on a shelf.")
    assert all(s.to_openai()["function"]["name"] == name for name, s in specs.items())


def test_a_tracer_by_value_names_a_copy_by_the_first_place_that_holds_it():
    answer = {"status": 201, "body": {"data": {"id": "f00d", "name": "tall"}}}
    tracer = Tracer({"shelf1": "oak", "r1": answer}, plain=lambda v: v)
    assert tracer.argument("f00d", True) == "f00d", "by identity only, a copy is a plain value"
    tracer.by_value = True
    assert tracer.argument(str("f0") + "0d", True) == "r1['body']['data']['id']"
    assert tracer.argument("".join("oak"), True) == "shelf1"
    assert tracer.result_items([{"data": {"id": "f00d", "name": "tall"}}, "none"]) == ["r1['body']", {"value": "none"}]
