"""Small hand-written OpenAPI documents, one per version, each with what the readers must handle."""

from __future__ import annotations


def swagger2() -> dict:
    """A library (Swagger 2.0, no operationIds): shelves hold books, books hold notes (three deep); POST creates and
    answers the new id; books are added as form data; loans name a book by `book_id` in their body; the tree is a
    recursive schema; books are written with allOf."""
    path_shelf = {"name": "shelf_id", "in": "path", "required": True, "type": "integer"}
    path_book = {"name": "book_id", "in": "path", "required": True, "type": "integer"}
    created = {"201": {"description": "created", "schema": {"$ref": "#/definitions/Created"}}}
    return {
        "swagger": "2.0",
        "info": {"title": "library", "version": "1"},
        "basePath": "/api/",
        "consumes": ["application/json"],
        "definitions": {
            "Created": {"type": "object", "properties": {"id": {"type": "integer"}}},
            "Shelf": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 40, "example": "fiction"},
                "floor": {"type": "integer", "minimum": 0, "maximum": 9, "default": 1, "x-nullable": True}}},
            "Named": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}},
            "Book": {"allOf": [{"$ref": "#/definitions/Named"}, {"type": "object", "required": ["isbn"],
                     "properties": {"isbn": {"type": "string", "pattern": "^[0-9-]+$"}}}]},
            "Node": {"type": "object", "properties": {"label": {"type": "string"},
                     "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}},
        },
        "parameters": {"shelf": path_shelf},
        "paths": {
            "/shelves": {
                "get": {"tags": ["shelves"], "summary": "List shelves", "parameters": [
                    {"name": "limit", "in": "query", "type": "integer", "minimum": 1, "maximum": 100}],
                    "responses": {"200": {"description": "the shelves", "schema": {
                        "type": "array", "items": {"$ref": "#/definitions/Shelf"}}}}},
                "post": {"summary": "Add a shelf", "parameters": [
                    {"name": "shelf", "in": "body", "required": True, "schema": {"$ref": "#/definitions/Shelf"}}],
                    "responses": created},
            },
            "/shelves/{shelf_id}": {
                "parameters": [{"$ref": "#/parameters/shelf"}],
                "get": {"responses": {"200": {"description": "one shelf", "schema": {"$ref": "#/definitions/Shelf"}},
                                      "404": {"description": "no such shelf"}}},
                "delete": {"responses": {"204": {"description": "gone"}}},
            },
            "/shelves/{shelf_id}/books": {
                "parameters": [path_shelf],
                "post": {"consumes": ["multipart/form-data"], "parameters": [
                    {"name": "title", "in": "formData", "required": True, "type": "string"},
                    {"name": "cover", "in": "formData", "type": "file"}], "responses": created},
            },
            "/shelves/{shelf_id}/books/{book_id}": {
                "parameters": [path_shelf, path_book],
                "get": {"responses": {"200": {"description": "a book", "schema": {"$ref": "#/definitions/Book"}}}},
            },
            "/shelves/{shelf_id}/books/{book_id}/notes": {
                "parameters": [path_shelf, path_book],
                "post": {"parameters": [{"name": "note", "in": "body", "schema": {"type": "object"}}],
                         "responses": created},
            },
            "/shelves/{shelf_id}/books/{book_id}/notes/{note_id}": {
                "parameters": [path_shelf, path_book,
                               {"name": "note_id", "in": "path", "required": True, "type": "integer"}],
                "get": {"responses": {"200": {"description": "a note"}}},
            },
            "/loans": {
                "post": {"parameters": [{"name": "loan", "in": "body", "schema": {"type": "object", "properties": {
                    "book_id": {"type": "integer"}, "reader": {"type": "string"}}}}], "responses": created},
            },
            "/tree": {"get": {"responses": {"200": {"description": "the tree", "schema": {"$ref": "#/definitions/Node"}}}}},
        },
    }


def openapi30() -> dict:
    """A store of buckets (OpenAPI 3.0): the client chooses every id with PUT (PUT-to-create), collections in buckets,
    records in collections (three deep); components for parameters, bodies and responses; nullable and oneOf."""
    bid = {"name": "bid", "in": "path", "required": True, "schema": {"type": "string"}}
    cid = {"name": "cid", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "buckets", "version": "1"},
        "servers": [{"url": "https://{host}/v{major}/", "variables": {"host": {"default": "example.com"},
                                                                       "major": {"default": "2"}}}],
        "components": {
            "parameters": {"bid": bid},
            "requestBodies": {"Thing": {"required": True, "content": {
                "application/xml": {"schema": {"type": "string"}},
                "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}},
            "responses": {"Thing": {"description": "a thing", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Thing"}}}}},
            "schemas": {"Thing": {"type": "object", "properties": {
                "label": {"type": "string", "nullable": True},
                "size": {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string"}]},
                "colour": {"type": "string", "enum": ["red", "blue", None]}}}},
        },
        "paths": {
            "/buckets/{bid}": {
                "parameters": [{"$ref": "#/components/parameters/bid"}],
                "put": {"operationId": "putBucket", "requestBody": {"$ref": "#/components/requestBodies/Thing"},
                        "responses": {"201": {"$ref": "#/components/responses/Thing"}}},
                "get": {"responses": {"200": {"$ref": "#/components/responses/Thing"}}},
                "delete": {"responses": {"204": {"description": "gone"}}},
            },
            "/buckets/{bid}/collections/{cid}": {
                "parameters": [bid, cid],
                "put": {"requestBody": {"$ref": "#/components/requestBodies/Thing"},
                        "responses": {"201": {"$ref": "#/components/responses/Thing"}}},
                "patch": {"requestBody": {"$ref": "#/components/requestBodies/Thing"},
                          "responses": {"200": {"$ref": "#/components/responses/Thing"}}},
            },
            "/buckets/{bid}/collections/{cid}/records/{rid}": {
                "parameters": [bid, cid, {"name": "rid", "in": "path", "required": True,
                                          "schema": {"type": "string"}}],
                "put": {"responses": {"201": {"description": "stored"}}},
                "get": {"parameters": [{"name": "X-Trace", "in": "header", "schema": {"type": "string"}}],
                        "responses": {"200": {"description": "the record"}}},
            },
        },
    }


def openapi31() -> dict:
    """Users and their addresses (OpenAPI 3.1) with links: creating a user links to reading it (by operationId) and
    to writing its address (by operationRef, to an operation without operationId)."""
    user_id = {"name": "userId", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "users", "version": "1"},
        "paths": {
            "/users": {"post": {
                "operationId": "createUser", "summary": "Add a user", "description": "Makes a user.",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                    "name": {"type": ["string", "null"], "examples": ["Ada"]}}}}}},
                "responses": {"201": {"description": "made", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}}}},
                    "links": {
                        "GetUser": {"operationId": "getUser", "parameters": {"userId": "$response.body#/id"}},
                        "SetAddress": {"operationRef": "#/paths/~1users~1{userId}~1address/put",
                                       "parameters": {"path.userId": "$response.body#/id"},
                                       "requestBody": "$request.body#/address"},
                        "Elsewhere": {"operationId": "notInThisDocument"}}}}}},
            "/users/{userId}": {"get": {"operationId": "getUser", "parameters": [user_id],
                                        "responses": {"200": {"description": "the user"}}}},
            "/users/{userId}/address": {"put": {
                "parameters": [user_id],
                "requestBody": {"content": {"application/json": {"schema": {
                    "$ref": "#/components/schemas/Address", "description": "where the user lives"}}}},
                "responses": {"204": {"description": "stored"}}}},
        },
        "components": {"schemas": {"Address": {"type": ["object", "null"], "properties": {
            "city": {"type": "string"}}}}},
    }
