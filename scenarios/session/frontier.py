"""The session service's frontier tier: the same service with the state real REST services have.

The paper's tier answers every session of a listing at once and writes unconditionally, so a program never has to
read the world before acting on it. Real services page their listings and refuse a write based on a stale read;
the frontier tier (docs/tasks.md, "The frontier tier") serves those semantics on the same paths and storage, so that tasks can
loop over pages, look things up and recover from documented errors:

* **paged listings**: `GET /{source}/{type}`, `GET .../query` and `POST .../query/fetch` answer
  `{"items": [...], "next": cursor or null}`, `limit` sessions at most (default `DEFAULT_PAGE`, at most
  `MAX_PAGE`), oldest first;
* **versions**: every session carries `version` (1 when added, +1 on every change); `GET` one sends it as the
  `ETag`; `PUT` and `DELETE` of a session need `If-Match` with it (428 without, 412 when stale);
* **members** as a sub-resource over `data.members` (so field queries on `data.members` keep working);
* **bulk delete** by filter, `POST .../query/delete`, answering `{"deleted": n}` as MongoDB's `deleteMany` and
  Elasticsearch's `_delete_by_query` do: a count is what a caller checks, and the ids it would otherwise answer
  are those a `/query/fetch` with the same filter lists just before.

Cursors. A cursor names a position, not a session: "after creation sequence N" (the store's `seq`, which updates
keep and resets renumber from 1), tagged with a hash of the database's salt, the listing it belongs to (endpoint,
source, type, and the field and value or the filter) and N. So a page continues after the last session of the
previous one whatever happened since: sessions deleted meanwhile are not answered (even the one the cursor came
after), sessions added meanwhile are newest and so come on a later page, updates move nothing. The tag makes a
cursor unusable on another listing and unforgeable without the salt (400 either way), and it is deterministic: the
same database and requests give the same cursors. `limit` is not part of a cursor: the page size may change from
one page to the next.

Member writes need no `If-Match`: the service makes the change itself, atomically, from the session's current
members, so no read can be stale and no concurrent change is lost (a whole-data `PUT` replaces what it did not
read, which is what `If-Match` guards). Each member change still counts as a change of the session, so a later
`PUT` based on a read from before it gets 412. An `If-Match` a client sends anyway is checked, as HTTP defines it.
Bulk delete takes no `If-Match` either: it names sessions by content, not by a version it has read.

Versions count every accepted write: a `PUT` of data equal to the stored data still increases it (as CouchDB's
revisions and Elasticsearch's `_version` do), while a member write that changes nothing (adding a member already
there) does not, since it stores nothing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import sqlite3
from typing import Any, Callable

from fastapi import FastAPI, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from scenarios.session import filters, store
from scenarios.session.service import (
    BAD_TYPE, DATA_BODY, EMPTY_204, ID_PARAM, NOT_FOUND, SOURCE_PARAM, TYPE_PARAM, ServiceError, SessionType,
    compiled_filter, error_response, filter_body, json_response, not_found, read_body, read_json, session_data,
)
from scenarios.session.store import DEFAULT_PAGE, MAX_PAGE
CURSOR_TAG_HEX = 16  # hex digits of the tag: 64 bits, far beyond guessing

DESCRIPTION = f"""\
Stores JSON session data for a portal application, grouped by source and session type.

Paging. A listing (the list, query and fetch endpoints) answers one page, `{{"items": [sessions], "next": \
cursor}}`: at most `limit` sessions (default {DEFAULT_PAGE}, at most {MAX_PAGE}), oldest first. `next` is null when \
no session follows the page; otherwise sending it as the `cursor` parameter of the same request (the `limit` may \
differ) answers the next page. A cursor continues after the last session of its page in creation order: sessions \
deleted since are not answered, sessions added since come on later pages, and updates move none. A cursor \
answered by another listing (another source, type, endpoint, query or filter), or one the service did not \
answer, is refused with 400.

Versions. Every session has a `version`: 1 when added, increased by 1 by every accepted update and every change \
of its members. Every answer about one session that still exists (reading it or its members, updating it, \
changing its members) carries its current version as the `ETag` header, in quotes (`"3"`). Updating or deleting \
a session requires the header `If-Match` with its current ETag: without it the service answers 428, with any \
other version 412, and nothing changes."""

PARAMETER_RULES = {"limit": f"limit must be a whole number from 1 to {MAX_PAGE} (the page size; {DEFAULT_PAGE} "
                            f"when omitted)"}

_LIMIT = Query(DEFAULT_PAGE, ge=1, le=MAX_PAGE, description=f"the page size: at most this many sessions "
                                                             f"(1 to {MAX_PAGE}; default {DEFAULT_PAGE})")
_CURSOR = Query(None, description="the `next` of the previous page; omitted for the first page")
_EMAIL = Path(description="the member's e-mail address")
_IF_MATCH = {"name": "If-Match", "in": "header", "required": True, "schema": {"type": "string"},
             "description": 'the session\'s current ETag, e.g. `"3"` (the bare version, `3`, is taken too)'}
_IF_MATCH_OPTIONAL = {**_IF_MATCH, "required": False,
                      "description": 'not needed; when sent, it must be the session\'s current ETag (412 otherwise)'}
_FILTER_BODY = filter_body("`id`, `source`, `type`, `checksum`, `version`, `data.<path>`")
_BAD_PAGE = "an invalid `limit` or `cursor`"
_PRECONDITIONS = {
    412: error_response("`If-Match` names another version than the session's current one"),
    428: error_response("no `If-Match` header"),
}
_CONFLICT = "another session of this source and type already holds identical data"
_MEMBERS_CONFLICT = {409: error_response(f"the session's `data.members` is not a list, or {_CONFLICT}")}


class Session(BaseModel):
    id: str
    data: dict[str, Any] = Field(description="the JSON object stored with the session")
    source: str
    type: SessionType
    version: int = Field(description="1 when added, +1 on every change")


class Page(BaseModel):
    items: list[Session]
    next: str | None = Field(description="the cursor of the next page; null after the last page")


class Version(BaseModel):
    version: int = Field(description="the session's version")


class Deleted(BaseModel):
    deleted: int = Field(description="how many sessions were deleted")


# ------------------------------------------------------------------------------------------------- cursors


def _listing(kind: str, source: str, type_: str, *query: Any) -> str:
    """What a cursor belongs to: the endpoint, the collection and the query or filter (keys sorted: the same
    filter written in another key order is the same listing)."""
    return json.dumps([kind, source, type_, *query], sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cursor(salt: str, listing: str, after: int) -> str:
    """The cursor of the page that starts after creation sequence `after` of `listing`."""
    tag = hashlib.sha256(f"{salt}\0{listing}\0{after}".encode()).hexdigest()[:CURSOR_TAG_HEX]
    return base64.urlsafe_b64encode(f"{after}.{tag}".encode()).decode().rstrip("=")


def _after(salt: str, listing: str, given: str | None) -> int:
    """The creation sequence a cursor continues after (0 without one); 400 for a cursor of another listing or
    none at all."""
    if given is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(given + "=" * (-len(given) % 4)).decode("ascii")
        after = int(text.split(".", 1)[0]) if text[:1].isdigit() else -1
    except (binascii.Error, UnicodeDecodeError, ValueError):
        after = -1
    if after < 0:
        raise ServiceError(400, "cursor is not a cursor this service answered: send the `next` of the previous "
                                "page, or no cursor for the first page")
    if cursor(salt, listing, after) != given:
        raise ServiceError(400, "this cursor belongs to another listing: send it only with the request whose page "
                                "answered it (same path, query or filter), or no cursor to start again")
    return after


def page(conn: sqlite3.Connection, source: str, type_: str, listing: str, predicate: Callable[[dict], bool],
         limit: int, given: str | None) -> dict:
    """One page of the sessions matching `predicate`: up to `limit` after the cursor's position, and the cursor
    after the last of them when another matching session follows."""
    salt = store.salt(conn)
    after = _after(salt, listing, given)
    items: list[dict] = []
    for seq, doc, view in store.versioned_documents(conn, source, type_, after):
        if not predicate(doc):
            continue
        if len(items) == limit:
            return {"items": items, "next": cursor(salt, listing, after)}
        items.append(view)
        after = seq
    return {"items": items, "next": None}


# ---------------------------------------------------------------------------------------------- versions


def etag(version: int) -> str:
    return f'"{version}"'


def _checked_version(request: Request, current: int, required: bool) -> None:
    """428 when `If-Match` is required and missing; 412 when it names no current version. The bare number is
    taken too: a client that read `version` from a body, not the ETag, means the same."""
    header = request.headers.get("if-match")
    if header is None:
        if required:
            raise ServiceError(428, "this write needs an If-Match header with the session's current ETag: GET the "
                                    "session and send its ETag as If-Match")
        return
    if not {t.strip() for t in header.split(",")} & {etag(current), str(current)}:
        raise _stale()


def _stale() -> ServiceError:
    return ServiceError(412, "If-Match does not name the session's current version: GET the session again and "
                             "send its ETag as If-Match")


def _versioned(obj: Any, version: int, status: int = 200) -> Response:
    response = json_response(obj, status) if obj is not None else Response(status_code=status)
    response.headers["ETag"] = etag(version)
    return response


def _conflict() -> ServiceError:
    return ServiceError(409, "another session of this source and type already holds this data")


def _not_a_list() -> ServiceError:
    return ServiceError(409, "the session's data.members is not a list: replace the session's data (PUT) with "
                             "data whose members is a list")


def _members_of(session: dict) -> list:
    members = session["data"].get("members")
    members = [] if members is None else members
    if not isinstance(members, list):
        raise _not_a_list()
    return members


# ------------------------------------------------------------------------------------------------- routes


def add_routes(app: FastAPI, conn: sqlite3.Connection) -> None:
    """The frontier tier's listings, queries, reads and writes (the add and info routes are the paper's)."""
    root = "/api/sessions/{source}/{type}"

    @app.get(root, response_model=Page, tags=["sessions"], summary="List sessions",
             responses={400: error_response(f"{_BAD_PAGE}, or {BAD_TYPE}")},
             description="The sessions of this source and type, oldest first, one page at a time.")
    async def get_sessions(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM, limit: int = _LIMIT,
                           cursor: str | None = _CURSOR):
        listing = _listing("list", source, type.value)
        return json_response(page(conn, source, type.value, listing, lambda doc: True, limit, cursor))

    @app.get(root + "/query", response_model=Page, tags=["sessions"], summary="Query sessions by one field",
             responses={400: error_response(f"a missing parameter, an invalid field, {_BAD_PAGE}, or {BAD_TYPE}")},
             description="The sessions of this source and type whose `field` (a dotted path such as "
                         "`data.title`) equals the string `value`, oldest first, one page at a time. When the "
                         "field holds an array, a session matches if any element equals `value`. A field starting "
                         "with `$` or containing a NUL character answers 400.")
    async def query_sessions(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                             field: str = Query(description="dotted path, e.g. data.title"),
                             value: str = Query(description="the string the field must equal"),
                             limit: int = _LIMIT, cursor: str | None = _CURSOR):
        try:
            filters.check_field(field)
        except filters.QueryError as exc:
            raise ServiceError(400, str(exc)) from None
        listing = _listing("query", source, type.value, field, value)
        return json_response(page(conn, source, type.value, listing, compiled_filter({field: value}), limit, cursor))

    @app.post(root + "/query/fetch", response_model=Page, tags=["sessions"], summary="Fetch sessions matching a filter",
              responses={400: error_response(f"invalid JSON, an invalid filter, {_BAD_PAGE}, or {BAD_TYPE}")},
              openapi_extra={"requestBody": _FILTER_BODY},
              description="The sessions of this source and type that match the MongoDB-style filter in the body, "
                          "oldest first, one page at a time. Supported: equality on dotted paths, `$and`, `$or`, "
                          "`$nor`, `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin`, `$exists`, `$all`, "
                          "`$size`, `$regex` (with `$options`) and `$not`. An unknown operator or a field starting "
                          "with `$` answers 400.")
    async def fetch_sessions(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                             limit: int = _LIMIT, cursor: str | None = _CURSOR):
        spec = await read_json(request, "the query filter")
        predicate = compiled_filter(spec)
        listing = _listing("fetch", source, type.value, spec)
        return json_response(page(conn, source, type.value, listing, predicate, limit, cursor))

    @app.post(root + "/query/delete", response_model=Deleted, tags=["sessions"],
              summary="Delete sessions matching a filter",
              responses={400: error_response(f"invalid JSON, an invalid filter, or {BAD_TYPE}")},
              openapi_extra={"requestBody": _FILTER_BODY},
              description="Deletes every session of this source and type that matches the filter in the body (the "
                          "filter of `/query/fetch`; `{}` matches them all) and answers how many it deleted. It "
                          "takes no `If-Match`.")
    async def delete_matching(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM):
        predicate = compiled_filter(await read_json(request, "the query filter"))
        ids = [doc["id"] for _, doc, _ in store.versioned_documents(conn, source, type.value) if predicate(doc)]
        return json_response({"deleted": store.delete_sessions(conn, source, type.value, ids)})

    @app.get(root + "/{id}", response_model=Session, tags=["sessions"], summary="Get one session",
             responses={400: error_response(BAD_TYPE), **NOT_FOUND},
             description="The session with this id, if it belongs to this source and type; otherwise 404.")
    async def get_session(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM, id: str = ID_PARAM):
        found = store.get_session(conn, source, type.value, id, versions=True)
        if found is None:
            raise not_found()
        return _versioned(found, found["version"])

    @app.put(root + "/{id}", response_model=Version, tags=["sessions"], summary="Update a session",
             responses={200: {"description": "the session's new version"},
                        400: error_response(f"invalid or missing JSON, data that is not a JSON object, or {BAD_TYPE}"),
                        **NOT_FOUND, 409: error_response(_CONFLICT), **_PRECONDITIONS},
             openapi_extra={"requestBody": DATA_BODY, "parameters": [_IF_MATCH]},
             description="Replaces the data of the session with this id (it keeps its id and its position in "
                         "listings). 404 when no session with this id belongs to this source and type.")
    async def update_session(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                             id: str = ID_PARAM):
        raw = await read_body(request)
        found = store.get_session(conn, source, type.value, id, versions=True)
        if found is None:
            raise not_found()
        _checked_version(request, found["version"], required=True)
        data = session_data(raw)
        try:
            version = store.update_session(conn, source, type.value, id, data, expected=found["version"])
        except store.Conflict:
            raise _conflict() from None
        except store.Stale:  # changed between the read and the write: not with one client, but never a 500
            raise _stale() from None
        return _versioned({"version": version}, version)

    @app.delete(root + "/{id}", tags=["sessions"], summary="Delete a session", response_class=Response,
                status_code=204,
                responses={**EMPTY_204, 400: error_response(BAD_TYPE), **NOT_FOUND, **_PRECONDITIONS},
                openapi_extra={"parameters": [_IF_MATCH]},
                description="Deletes the session with this id. 404 when no session with this id belongs to this "
                            "source and type.")
    async def delete_session(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                             id: str = ID_PARAM):
        found = store.get_session(conn, source, type.value, id, versions=True)
        if found is None:
            raise not_found()
        _checked_version(request, found["version"], required=True)
        try:
            store.delete_session(conn, source, type.value, id, expected=found["version"])
        except store.Stale:
            raise _stale() from None
        return Response(status_code=204)

    @app.get(root + "/{id}/members", response_model=list[str], tags=["sessions"], summary="List a session's members",
             responses={400: error_response(BAD_TYPE), **NOT_FOUND,
                        409: error_response("the session's `data.members` is not a list")},
             description="The session's members: the e-mail addresses in its `data.members`, in that order; "
                         "`[]` when it has none (no `members` field, or null).")
    async def get_members(source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM, id: str = ID_PARAM):
        found = store.get_session(conn, source, type.value, id, versions=True)
        if found is None:
            raise not_found()
        return _versioned(_members_of(found), found["version"])

    @app.put(root + "/{id}/members/{email}", response_model=Version, status_code=201, tags=["sessions"],
             summary="Add a member",
             responses={201: {"description": "added: the session's new version"},
                        200: {"model": Version, "description": "already a member, nothing changed: the session's "
                                                               "version"},
                        400: error_response(BAD_TYPE), **NOT_FOUND, **_MEMBERS_CONFLICT, 412: _PRECONDITIONS[412]},
             openapi_extra={"parameters": [_IF_MATCH_OPTIONAL]},
             description="Adds `email` at the end of the session's `data.members` (made when missing or null), unless "
                         "it is a member already: addresses are compared ignoring case.")
    async def add_member(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                         id: str = ID_PARAM, email: str = _EMAIL):
        changed, version = _change_members(conn, request, source, type.value, id, email, add=True)
        return _versioned({"version": version}, version, 201 if changed else 200)

    @app.delete(root + "/{id}/members/{email}", tags=["sessions"], summary="Remove a member",
                response_class=Response, status_code=204,
                responses={**EMPTY_204, 400: error_response(BAD_TYPE),
                           404: error_response("no session with this id under this source and type, or `email` is "
                                               "not one of its members"),
                           **_MEMBERS_CONFLICT, 412: _PRECONDITIONS[412]},
                openapi_extra={"parameters": [_IF_MATCH_OPTIONAL]},
                description="Removes `email` from the session's `data.members`: every address equal to it ignoring "
                            "case.")
    async def remove_member(request: Request, source: str = SOURCE_PARAM, type: SessionType = TYPE_PARAM,
                            id: str = ID_PARAM, email: str = _EMAIL):
        changed, version = _change_members(conn, request, source, type.value, id, email, add=False)
        if not changed:
            raise ServiceError(404, f"Member not found: {email} is not a member of this session")
        return _versioned(None, version, 204)


def _change_members(conn: sqlite3.Connection, request: Request, source: str, type_: str, id_: str, email: str,
                     add: bool) -> tuple[bool, int]:
    found = store.get_session(conn, source, type_, id_, versions=True)
    if found is None:
        raise not_found()
    _checked_version(request, found["version"], required=False)
    try:
        changed = store.change_members(conn, source, type_, id_, email, add, expected=found["version"])
    except store.NotAList:
        raise _not_a_list() from None
    except store.Conflict:
        raise _conflict() from None
    except store.Stale:
        raise _stale() from None
    if changed is None:  # deleted between the two reads: not possible with one client, but never a 500
        raise not_found()
    return changed
