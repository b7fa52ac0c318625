"""The session service as a FastAPI app: the paths, types, status codes and bodies of cBioPortal's session
service (the EvoMaster benchmark's `session-service`), on SQLite instead of MongoDB.

Deliberate differences from the original, each where its behaviour was an accident rather than the API:
* request bodies are parsed by the service, so a missing body, invalid JSON or a JSON value that is not an
  object answers 400, as in the original; an update that would duplicate another session's data answers 409
  (the original lets MongoDB's duplicate-key error escape as a 500);
* `GET .../query` takes `field` and `value` literally (the original pastes them into a JSON string, so a quote
  in a value breaks or changes the query);
* error bodies carry no timestamp, so the same request always gets the same answer;
* ids are deterministic per database (see `scenarios.session.store`);
* success answers with the status REST gives it rather than 200 everywhere: an add that stores a new session
  answers 201 (Created; 200 when identical data is already stored and that session's id is answered), a delete
  answers 204 (No Content); an update still answers 200 with an empty body. A program that keeps the status of
  an update and of a delete can then not return one for the other;
* a request body larger than `MAX_BODY_BYTES` answers 413 as soon as its size is known (the declared
  `Content-Length`, or the bytes read so far of a chunked body), so a program cannot make the service buffer
  gigabytes; the original had no such limit of its own.

Tiers. All of the above is the paper's tier (`tier="paper"`, the default), kept exactly as the paper's tasks
were generated against. `tier="frontier"` serves the same service with the semantics real REST services have
(paged listings, versioned writes, members as a sub-resource, bulk delete by filter): see
`scenarios.session.frontier`. One instance serves one tier.

Handlers are `async` and call SQLite directly: one client at a time talks to an instance (a test case's
program), and each query takes microseconds, so a thread pool would only add latency.
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field

from scenarios.base import FRONTIER, PAPER, TIERS
from scenarios.session import filters, frontier, store
from scenarios.session.service import (
    BAD_TYPE, DATA_BODY, EMPTY_204, ID_PARAM, MAX_BODY_BYTES, NOT_FOUND, SOURCE_PARAM, TYPE_PARAM, ServiceError,
    SessionType, compiled_filter, error_response, filter_body, json_response, not_found, read_body, read_json,
    session_data,
)

VERSION = "0.5.0"  # the original's version at the EvoMaster benchmark's snapshot (0.5.0-SNAPSHOT)
DESCRIPTION = "Stores JSON session data for a portal application, grouped by source and session type."

NO_BODY = (204, 304)  # statuses whose answers have no body
_REASONS = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 412: "Precondition Failed",
            413: "Payload Too Large", 428: "Precondition Required"}
_FILTER_BODY = filter_body()


class SessionId(BaseModel):
    id: str = Field(description="the session's id (24 hex digits)")


class Session(BaseModel):
    id: str
    data: dict[str, Any] = Field(description="the JSON object stored with the session")
    source: str
    type: SessionType


_EMPTY_200 = {200: {"description": "done; the body is empty", "content": {}}}


class CallLog:
    """ASGI middleware that keeps every answered request in the database's call log (`store.log_call`): method,
    route template, path and query parameters, body, status and answer, as the service saw them, so the log holds
    what any HTTP client sent, with the `If-Match` header when there is one (the first, as the frontier tier reads
    it): the one header that decides what a request does. The row is written before the client can have the whole
    answer (before its last byte, or with the status line of an answer without a body, which a client takes as
    complete at once: a 204, an empty 200), so a client that has its answer finds its request logged."""

    def __init__(self, app, conn: sqlite3.Connection):
        self.app, self.conn = app, conn

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body, answer, status, logged = bytearray(), bytearray(), [0], [False]

        async def receive_logged():
            message = await receive()
            if message["type"] == "http.request" and len(body) <= MAX_BODY_BYTES:
                body.extend(message.get("body", b"")[:MAX_BODY_BYTES + 1 - len(body)])
            return message

        def log() -> None:
            route = scope.get("route")
            call = {
                "method": scope["method"], "path": scope["path"], "route": getattr(route, "path", None),
                "params": dict(scope.get("path_params") or {}),
                "query": [list(kv) for kv in parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                                                       keep_blank_values=True)],
                "body": body.decode("utf-8", "replace"), "status": status[0],
                "answer": answer.decode("utf-8", "replace"),
            }
            if_match = next((v for k, v in scope.get("headers") or () if k == b"if-match"), None)
            if if_match is not None:  # only when sent: the log of a request without one is as it always was
                call["if_match"] = if_match.decode("latin-1")
            store.log_call(self.conn, call)
            logged[0] = True

        async def send_logged(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                length = dict(message.get("headers") or []).get(b"content-length")
                if length == b"0" or status[0] in NO_BODY or status[0] < 200 or scope["method"] == "HEAD":
                    log()
            elif message["type"] == "http.response.body" and not logged[0]:
                if len(answer) <= MAX_BODY_BYTES:
                    answer.extend(message.get("body", b"")[:MAX_BODY_BYTES + 1 - len(answer)])
                if not message.get("more_body", False):
                    log()
            await send(message)

        await self.app(scope, receive_logged, send_logged)


def create_app(db_path: str, log_calls: bool = False, tier: str = PAPER) -> FastAPI:
    """The app over one database file (created when missing); with `log_calls`, every answered request is kept in
    the database's call log (`CallLog`: the sandbox reads a test case's API calls from it). `tier`: "paper" (the
    API the paper's tasks call) or "frontier" (the same service with paging, versions, members and bulk delete,
    `scenarios.session.frontier`)."""
    if tier not in TIERS:
        raise ValueError(f"unknown session service tier {tier!r}: use one of {', '.join(TIERS)}")
    frontier_tier = tier == FRONTIER
    conn: sqlite3.Connection = store.connect(db_path)
    app = FastAPI(
        title="Session Service",
        version=VERSION,
        description=frontier.DESCRIPTION if frontier_tier else DESCRIPTION,
        openapi_tags=[{"name": "sessions"}, {"name": "info"}],
    )
    app.state.db_path = db_path
    _without_422(app)
    if log_calls:
        app.add_middleware(CallLog, conn=conn)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError):
        body = {"status": exc.status, "error": _REASONS[exc.status], "message": exc.message,
                "path": request.url.path}
        # After a 413 the rest of the body is unread: closing the connection stops a client still sending it.
        headers = {"Connection": "close"} if exc.status == 413 else None
        return JSONResponse(body, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError):
        messages = []
        for err in exc.errors():
            loc = tuple(err.get("loc", ()))
            if loc == ("path", "type"):
                messages.append("valid types are: " + ", ".join(store.SESSION_TYPES))
            elif loc[:1] == ("query",) and err.get("type") == "missing":
                messages.append(f"Required request parameter '{loc[-1]}' is not present")
            elif frontier_tier and loc[:1] == ("query",) and loc[-1] in frontier.PARAMETER_RULES:
                messages.append(frontier.PARAMETER_RULES[loc[-1]])
            else:
                messages.append(f"{'.'.join(map(str, loc))}: {err.get('msg')}")
        body = {"status": 400, "error": "Bad Request", "message": "; ".join(messages), "path": request.url.path}
        return JSONResponse(body, status_code=400)

    @app.post("/api/sessions/{source}/{type}", response_model=SessionId, tags=["sessions"],
              summary="Add a session", status_code=201,
              responses={200: {"model": SessionId, "description": "identical data is already stored under this "
                                                                  "source and type: that session's id"},
                         400: error_response(f"invalid or missing JSON, data that is not a JSON object, a source "
                                             f"shorter than {store.MIN_SOURCE_LENGTH} characters, or {BAD_TYPE}")},
              openapi_extra={"requestBody": DATA_BODY},
              description="Stores the JSON object in the body as a new session of this source and type and "
                          "answers its id (201). If a session of the same source and type already holds identical "
                          "data (same checksum), nothing is stored and that session's id is answered (200).")
    async def add_session(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM):
        data = session_data(await read_body(request))
        if len(source) < store.MIN_SOURCE_LENGTH:
            raise ServiceError(400, f"source has a minimum length of {store.MIN_SOURCE_LENGTH};")
        id_, created = store.add_session(conn, source, type.value, data)
        return json_response({"id": id_}, status=201 if created else 200)

    if frontier_tier:
        frontier.add_routes(app, conn)
    else:
        _paper_routes(app, conn)

    @app.get("/info", tags=["info"], summary="Service version", response_class=PlainTextResponse,
             description="The service's version, as plain text.")
    async def info():
        return PlainTextResponse(VERSION)

    return app


def _paper_routes(app: FastAPI, conn: sqlite3.Connection) -> None:
    """The paper tier's listings, queries, reads and writes of one session: whole lists, unconditional writes."""

    @app.get("/api/sessions/{source}/{type}", response_model=list[Session], tags=["sessions"],
             summary="List sessions", responses={400: error_response(BAD_TYPE)},
             description="All sessions of this source and type, oldest first; `[]` when there are none.")
    async def get_sessions(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM):
        return json_response(store.list_sessions(conn, source, type.value))

    @app.get("/api/sessions/{source}/{type}/query", response_model=list[Session], tags=["sessions"],
             summary="Query sessions by one field",
             responses={400: error_response(f"a missing parameter, an invalid field, or {BAD_TYPE}")},
             description="Sessions of this source and type whose `field` (a dotted path such as `data.title`) "
                         "equals the string `value`, oldest first. When the field holds an array, a session "
                         "matches if any element equals `value`. A field starting with `$` or containing a "
                         "NUL character answers 400.")
    async def query_sessions(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                             field: str = Query(description="dotted path, e.g. data.title"),
                             value: str = Query(description="the string the field must equal")):
        try:
            filters.check_field(field)
        except filters.QueryError as exc:
            raise ServiceError(400, str(exc)) from None
        return json_response(_matching(conn, source, type.value, {field: value}))

    @app.post("/api/sessions/{source}/{type}/query/fetch", response_model=list[Session], tags=["sessions"],
              summary="Fetch sessions matching a filter",
              responses={400: error_response(f"invalid JSON, an invalid filter, or {BAD_TYPE}")},
              openapi_extra={"requestBody": _FILTER_BODY},
              description="Sessions of this source and type that match the MongoDB-style filter in the body, "
                          "oldest first. Supported: equality on dotted paths, `$and`, `$or`, `$nor`, `$eq`, "
                          "`$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin`, `$exists`, `$all`, `$size`, "
                          "`$regex` (with `$options`) and `$not`. An unknown operator or a field starting with "
                          "`$` answers 400.")
    async def fetch_sessions(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM):
        spec = await read_json(request, "the query filter")
        return json_response(_matching(conn, source, type.value, spec))

    @app.get("/api/sessions/{source}/{type}/{id}", response_model=Session, tags=["sessions"],
             summary="Get one session",
             responses={400: error_response(BAD_TYPE), **NOT_FOUND},
             description="The session with this id, if it belongs to this source and type; otherwise 404.")
    async def get_session(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM, id: str = ID_PARAM):
        found = store.get_session(conn, source, type.value, id)
        if found is None:
            raise not_found()
        return json_response(found)

    @app.put("/api/sessions/{source}/{type}/{id}", tags=["sessions"], summary="Update a session",
             response_class=Response,
             responses={**_EMPTY_200,
                        400: error_response(f"invalid or missing JSON, data that is not a JSON object, or {BAD_TYPE}"),
                        **NOT_FOUND,
                        409: error_response("another session of this source and type already holds identical data")},
             openapi_extra={"requestBody": DATA_BODY},
             description="Replaces the data of the session with this id (it keeps its id and its position in "
                         "listings). 404 when no session with this id belongs to this source and type.")
    async def update_session(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                             id: str = ID_PARAM):
        raw = await read_body(request)
        if not raw.strip():
            raise ServiceError(400, "Required request body is missing")
        if store.get_session(conn, source, type.value, id) is None:
            raise not_found()
        data = session_data(raw)
        try:
            store.update_session(conn, source, type.value, id, data)
        except store.Conflict:
            raise ServiceError(409, "another session of this source and type already holds this data") from None
        return Response(status_code=200)

    @app.delete("/api/sessions/{source}/{type}/{id}", tags=["sessions"], summary="Delete a session",
                response_class=Response, status_code=204,
                responses={**EMPTY_204, 400: error_response(BAD_TYPE), **NOT_FOUND},
                description="Deletes the session with this id. 404 when no session with this id belongs to this "
                            "source and type.")
    async def delete_session(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM, id: str = ID_PARAM):
        if not store.delete_session(conn, source, type.value, id):
            raise not_found()
        return Response(status_code=204)


def _without_422(app: FastAPI) -> None:
    """Drop FastAPI's generic 422 answers from the OpenAPI: every invalid request here answers 400."""
    generate = app.openapi

    def openapi() -> dict:
        schema = generate()
        for ops in schema.get("paths", {}).values():
            for op in ops.values():
                op.get("responses", {}).pop("422", None)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        return schema

    app.openapi = openapi


def _matching(conn: sqlite3.Connection, source: str, type_: str, spec: Any) -> list[dict]:
    predicate = compiled_filter(spec)
    return [view for doc, view in store.documents(conn, source, type_) if predicate(doc)]
