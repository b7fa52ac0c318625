"""Swagger 2.0, OpenAPI 3.0 and 3.1 documents read into the same operations; include / exclude; the one-line error of
a document that does not parse, is no OpenAPI, or leaves no operation."""

from __future__ import annotations

import builtins
import json

import pytest

from scenarios.rest.openapi import derived_id, parse_document, read, select
from scenarios.rest.schema import SpecError
from tests.scenarios.rest.documents import openapi30, openapi31, swagger2


def by_id(document: dict) -> dict:
    return {op.id: op for op in read(document)}


def test_swagger2_operations_without_ids_get_derived_ones_under_the_base_path():
    ops = by_id(swagger2())
    assert list(ops)[:3] == ["get_shelves", "post_shelves", "get_shelves_shelf_id"]
    shelf = ops["get_shelves_shelf_id"]
    assert (shelf.method, shelf.path) == ("GET", "/api/shelves/{shelf_id}")
    assert shelf.parameter("shelf_id").location == "path" and shelf.parameter("shelf_id").schema.type == "integer"
    assert shelf.responses["200"].schema.properties["name"].example == "fiction"
    assert shelf.responses["404"].schema is None and shelf.responses["404"].description == "no such shelf"
    listing = ops["get_shelves"]
    assert listing.tags == ("shelves",) and listing.summary == "List shelves"
    limit = listing.parameter("limit", "query")
    assert not limit.required and (limit.schema.minimum, limit.schema.maximum) == (1, 100)
    assert listing.responses["200"].schema.items.properties["floor"].nullable


def test_swagger2_body_and_form_data_become_the_body():
    ops = by_id(swagger2())
    body = ops["post_shelves"].body
    assert body.media_type == "application/json" and body.required
    assert body.schema.required == ("name",) and body.schema.properties["name"].max_length == 40
    form = ops["post_shelves_shelf_id_books"].body
    assert form.media_type == "multipart/form-data"
    assert set(form.schema.properties) == {"title", "cover"} and form.schema.required == ("title",)
    assert ops["post_shelves_shelf_id_books"].parameter("title") is None  # not a parameter any more
    book = ops["get_shelves_shelf_id_books_book_id"].responses["200"].schema
    assert set(book.properties) == {"title", "isbn"}  # allOf merged
    tree = ops["get_tree"].responses["200"].schema
    assert tree.properties["children"].items.cut  # recursive


def test_openapi30_servers_components_and_media_types():
    ops = by_id(openapi30())
    put = ops["putBucket"]
    assert put.path == "/v2/buckets/{bid}"  # the first server's path, its variables filled in
    assert put.body.media_type == "application/json" and put.body.required  # JSON preferred over XML
    thing = put.body.schema
    assert thing.properties["label"].nullable and thing.properties["colour"].nullable
    assert thing.properties["size"].type == "integer"  # oneOf: the first branch
    assert put.responses["201"].schema.properties.keys() == thing.properties.keys()
    assert "put_buckets_bid_collections_cid" in ops and "get_buckets_bid" in ops
    record = ops["get_buckets_bid_collections_cid_records_rid"]
    assert [(p.name, p.location) for p in record.parameters] == [
        ("bid", "path"), ("cid", "path"), ("rid", "path"), ("X-Trace", "header")]


def test_openapi31_types_examples_and_links():
    ops = by_id(openapi31())
    create = ops["createUser"]
    assert (create.summary, create.description) == ("Add a user", "Makes a user.")
    name = create.body.schema.properties["name"]
    assert (name.type, name.nullable, name.example) == ("string", True, "Ada")
    address = ops["put_users_userId_address"]
    assert address.body.schema.nullable and address.body.schema.description == "where the user lives"
    links = {link.name: link for link in create.links}
    assert set(links) == {"GetUser", "SetAddress"}  # the link to an operation not in the document is dropped
    assert links["GetUser"].target == "getUser" and links["GetUser"].parameters == {"userId": "$response.body#/id"}
    assert links["SetAddress"].target == "put_users_userId_address"  # by operationRef
    assert links["SetAddress"].parameters == {"userId": "$response.body#/id"}
    assert links["SetAddress"].body == "$request.body#/address" and links["SetAddress"].status == "201"


def test_derived_ids_are_stable_and_unique():
    assert derived_id("GET", "/buckets/{bid}/collections") == "get_buckets_bid_collections"
    assert derived_id("POST", "/") == "post_root"
    document = {"openapi": "3.0.0", "paths": {"/a": {"get": {"operationId": "same", "responses": {}},
                                                      "post": {"operationId": "same", "responses": {}}}}}
    assert [op.id for op in read(document)] == ["same", "same_2"]


def test_include_and_exclude_patterns():
    ops = read(swagger2())
    kept = select(ops, include=["GET /api/shelves*", "post_loans"], exclude=["* /api/shelves/*/notes*"])
    assert [op.id for op in kept] == ["get_shelves", "get_shelves_shelf_id", "get_shelves_shelf_id_books_book_id",
                                      "post_loans"]
    assert [op.id for op in select(ops, exclude=["get_*", "DELETE /*"])] == [
        "post_shelves", "post_shelves_shelf_id_books", "post_shelves_shelf_id_books_book_id_notes", "post_loans"]


@pytest.mark.parametrize("include, exclude, message", [
    (["get_nothing"], [], "include pattern 'get_nothing' names no operation of the document"),
    ([], ["PATCH /*"], "exclude pattern 'PATCH /*' names no operation of the document"),
    (["get_*"], ["GET *"], "no operation of the document is left after include = ['get_*'] and exclude = "
                           "['GET *']; widen include or narrow exclude"),
])
def test_patterns_that_name_nothing_or_leave_nothing(include, exclude, message):
    with pytest.raises(SpecError) as caught:
        select(read(swagger2()), include=include, exclude=exclude)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.parametrize("document, message", [
    ({"info": {}, "paths": {}}, "the document at /: neither Swagger 2.0 nor OpenAPI 3"),
    ({"swagger": "1.2", "paths": {"/a": {}}}, "the document at /: neither Swagger 2.0 nor OpenAPI 3"),
    ({"openapi": "3.0.0", "paths": {}}, "the document at /paths: no paths"),
    ({"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/X"}}}}}},
     "the document at /paths/~1a/get/responses/200: $ref '#/components/responses/X' does not resolve"),
    ({"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"in": "query"}], "responses": {}}}}},
     "the document at /paths/~1a/get/parameters/0: a parameter needs a name"),
    ({"swagger": "2.0", "paths": {"/a": {"get": {"responses": {"200": {"description": "x", "schema": {
        "$ref": "#/definitions/Gone"}}}}}}},
     "the document at /paths/~1a/get/responses/200: $ref '#/definitions/Gone' does not resolve"),
])
def test_documents_that_are_not_usable_name_where(document, message):
    with pytest.raises(SpecError) as caught:
        read(document)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_json_is_read_and_yaml_where_pyyaml_is_installed():
    assert parse_document(json.dumps(openapi31()), "x") == openapi31()
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: only JSON is read, as the next test shows")
    assert parse_document(yaml.safe_dump(swagger2()), "x") == swagger2()
    with pytest.raises(SpecError, match=r"^the spec: neither JSON nor YAML \("):
        parse_document("paths: [unclosed", "the spec")


def test_without_pyyaml_a_document_that_is_not_json_says_so(monkeypatch):
    real_import = builtins.__import__

    def no_yaml(name, *args, **kwargs):
        if name == "yaml":
            raise ImportError("no yaml here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_yaml)
    with pytest.raises(SpecError) as caught:
        parse_document("openapi: 3.0.0\n", "the document at http://x/spec")
    message = str(caught.value)
    assert message.startswith("the document at http://x/spec: not JSON (Expecting value: line 1 column 1")
    assert "YAML is read only where PyYAML is installed (pip install pyyaml)" in message


def test_a_document_that_is_not_an_object():
    with pytest.raises(SpecError, match=r"^here: the document is a list, not an object of keys"):
        parse_document("[1, 2]", "here")
