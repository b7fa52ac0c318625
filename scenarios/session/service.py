"""What the session service's two tiers build their routes from: `app.py` (the paper tier, and the app itself) and
`frontier.py` (the frontier tier) both use these, so that a type, an error or a request body reads the same on
either.

* `SessionType`, the path parameters (`SOURCE_PARAM`, `TYPE_PARAM`, `ID_PARAM`) and the OpenAPI request bodies
  (`DATA_BODY`, `filter_body`);
* errors: `ServiceError` (the app answers it as an `ErrorBody`), `error_response` (an error's OpenAPI entry),
  `not_found` and the common entries (`BAD_TYPE`, `NOT_FOUND`, `EMPTY_204`);
* requests and answers: `read_body` (refused with 413 past `MAX_BODY_BYTES`), `read_json`, `session_data`,
  `compiled_filter` and `json_response`.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Callable

from fastapi import Path, Request
from fastapi.responses import Response
from pydantic import BaseModel

from scenarios.session import filters, store

SessionType = enum.Enum("SessionType", {t: t for t in store.SESSION_TYPES}, type=str)
SessionType.__doc__ = "The eight session types; each is a separate collection."

MAX_BODY_BYTES = 1024 * 1024  # session data is a small JSON object; a megabyte leaves ample room
DATA_BODY = {
    "required": True,
    "content": {"application/json": {"schema": {
        "type": "object", "additionalProperties": True,
        "description": "the session data: any JSON object",
        "example": {"title": "my main portal session", "description": "this is an example"},
    }}},
}


def filter_body(fields: str = "`id`, `source`, `type`, `checksum`, `data.<path>`") -> dict:
    """The OpenAPI request body of a filter over the stored documents, whose `fields` a tier names."""
    return {
        "required": True,
        "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": True,
            "description": f"a MongoDB-style filter over the stored documents (fields {fields})",
            "example": {"data.title": "my main portal session"},
        }}},
    }


class ErrorBody(BaseModel):
    status: int
    error: str
    message: str
    path: str


class ServiceError(Exception):
    def __init__(self, status: int, message: str):
        self.status, self.message = status, message


def error_response(description: str) -> dict:
    """The OpenAPI entry of an error answer."""
    return {"model": ErrorBody, "description": description}


BAD_TYPE = "an unknown session type"
NOT_FOUND = {404: error_response("no session with this id under this source and type")}
EMPTY_204 = {204: {"description": "done; no body", "content": {}}}
SOURCE_PARAM = Path(description="the application the sessions belong to (case sensitive; at least 3 characters "
                                "to add a session)")
TYPE_PARAM = Path(description="the session type (case sensitive): " + ", ".join(store.SESSION_TYPES))
ID_PARAM = Path(description="the session's id, as returned when it was added")


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode(), status_code=status,
                    media_type="application/json")


async def read_body(request: Request) -> bytes:
    """The request body, refused with 413 once it is known to exceed `MAX_BODY_BYTES` (never buffered whole)."""
    too_large = ServiceError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_json(raw: bytes, what: str) -> Any:
    if not raw.strip():
        raise ServiceError(400, "Required request body is missing")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ServiceError(400, f"{what} is not valid JSON: {exc}") from None


async def read_json(request: Request, what: str) -> Any:
    return _parse_json(await read_body(request), what)


def session_data(raw: bytes) -> dict:
    data = _parse_json(raw, "the session data")
    if not isinstance(data, dict):
        raise ServiceError(400, "the session data must be a JSON object")
    return data


def compiled_filter(spec: Any) -> Callable[[dict], bool]:
    """The filter as a predicate over stored documents; 400 for one the service does not take."""
    try:
        return filters.compile_filter(spec)
    except filters.QueryError as exc:
        raise ServiceError(400, str(exc)) from None


def not_found() -> ServiceError:
    return ServiceError(404, "Session not found")
