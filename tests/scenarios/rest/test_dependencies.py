"""Producer -> consumer edges from the document alone: links where the document has them, else name and type, and
path prefixes (POST answering the new id, PUT where the client chooses it), three levels deep; and the roles."""

from __future__ import annotations

from scenarios.rest.dependencies import (CREATOR, DELETER, LINK, NAME_TYPE, PATH_PREFIX, READER, UPDATER, Edge,
                                         infer, roles)
from scenarios.rest.openapi import read
from tests.scenarios.rest.documents import openapi30, openapi31, swagger2


def edges_into(edges: list[Edge], consumer: str) -> set[tuple]:
    return {(e.producer, e.field, e.location, e.parameter, e.reason) for e in edges if e.consumer == consumer}


def test_post_creators_feed_nested_collections_three_deep():
    edges = infer(read(swagger2()))
    assert edges_into(edges, "get_shelves_shelf_id_books_book_id_notes_note_id") == {
        ("post_shelves", "$response.body#/id", "path", "shelf_id", PATH_PREFIX),
        ("post_shelves_shelf_id_books", "$response.body#/id", "path", "book_id", NAME_TYPE),
        ("post_shelves_shelf_id_books_book_id_notes", "$response.body#/id", "path", "note_id", NAME_TYPE),
    }


def test_a_body_field_named_after_a_resource_is_fed_by_its_creator():
    edges = infer(read(swagger2()))
    assert edges_into(edges, "post_loans") == {
        ("post_shelves_shelf_id_books", "$response.body#/id", "body", "book_id", NAME_TYPE)}
    # `reader` is no id, and the list and the tree read nothing a creator made
    assert edges_into(edges, "get_shelves") == set() and edges_into(edges, "get_tree") == set()


def test_put_to_create_feeds_with_the_id_the_client_chose():
    edges = infer(read(openapi30()))
    assert edges_into(edges, "get_buckets_bid_collections_cid_records_rid") == {
        ("putBucket", "$request.path.bid", "path", "bid", PATH_PREFIX),
        ("put_buckets_bid_collections_cid", "$request.path.cid", "path", "cid", PATH_PREFIX),
        ("put_buckets_bid_collections_cid_records_rid", "$request.path.rid", "path", "rid", PATH_PREFIX),
    }
    # a PUT that creates is not its own producer, but is fed by those above it
    assert edges_into(edges, "putBucket") == set()
    assert edges_into(edges, "put_buckets_bid_collections_cid") == {
        ("putBucket", "$request.path.bid", "path", "bid", PATH_PREFIX)}


def test_links_are_taken_where_the_document_has_them_and_inference_elsewhere():
    edges = infer(read(openapi31()))
    assert edges_into(edges, "getUser") == {("createUser", "$response.body#/id", "path", "userId", LINK)}
    assert edges_into(edges, "put_users_userId_address") == {
        ("createUser", "$response.body#/id", "path", "userId", LINK),
        ("createUser", "$request.body#/address", "body", "", LINK)}
    unlinked = openapi31()
    del unlinked["paths"]["/users"]["post"]["responses"]["201"]["links"]
    edges = infer(read(unlinked))
    assert edges_into(edges, "getUser") == {("createUser", "$response.body#/id", "path", "userId", NAME_TYPE)}
    assert edges_into(edges, "put_users_userId_address") == {
        ("createUser", "$response.body#/id", "path", "userId", NAME_TYPE)}


def test_an_answer_that_declares_no_id_leaves_the_field_to_be_found_live():
    document = {"openapi": "3.0.0", "paths": {
        "/things": {"post": {"responses": {"201": {"description": "made"}}}},
        "/things/{tid}": {"get": {"parameters": [{"name": "tid", "in": "path", "required": True}],
                                  "responses": {"200": {"description": "a thing"}}}}}}
    assert infer(read(document)) == [Edge("post_things", None, "get_things_tid", "tid", "path", PATH_PREFIX)]


def test_types_must_agree_for_name_and_type():
    document = {"openapi": "3.0.0", "paths": {
        "/owners": {"post": {"responses": {"201": {"description": "made", "content": {"application/json": {
            "schema": {"properties": {"id": {"type": "integer"}}}}}}}}},
        "/pets": {"post": {"requestBody": {"content": {"application/json": {"schema": {"properties": {
            "owner_id": {"type": "boolean"}, "ownerId": {"type": "number"}}}}}},
            "responses": {"201": {"description": "made"}}}}}}
    assert edges_into(infer(read(document)), "post_pets") == {
        ("post_owners", "$response.body#/id", "body", "ownerId", NAME_TYPE)}


def test_roles():
    ops = {op.id: op for op in read(openapi30()) + read(swagger2())}
    assert roles(ops["putBucket"]) == {CREATOR, UPDATER}  # PUT on an item path
    assert roles(ops["patch_buckets_bid_collections_cid"]) == {UPDATER}
    assert roles(ops["get_buckets_bid"]) == {READER}
    assert roles(ops["delete_buckets_bid"]) == {DELETER}
    assert roles(ops["post_shelves"]) == {CREATOR}
    document = {"openapi": "3.0.0", "paths": {"/settings": {"put": {"responses": {}}}}}
    assert roles(read(document)[0]) == {UPDATER}  # PUT on a path that names no item
