"""The session world: one session service per sandbox worker, reset before every test case.

Life cycle (see `evaluate.worker`): the worker creates this world once, which starts the service as a separate
process on a free loopback port with its own SQLite file; `reset(case)` runs in the worker before the fork,
`namespace(case)` gives the forked child `service_url()` (what the setup block's `BASE_URL = service_url()`
calls), and `snapshot()` runs in the worker after the child has exited.

Why reset and snapshot open the database file instead of calling the service: a private admin route would sit
on the same port as the public API, so the untrusted program could call it too and rewrite the stored state
the oracle is read from. Going to the file keeps the HTTP surface exactly the original API, so through the
service a program can change the state only as any client could; it is also faster (no request round trips).
A program can also leave work behind in the service (requests on connections it never read from, a request that
keeps the event loop busy); `reset` waits for the service to settle and restarts it when it does not, so none of
that lands after the next test case's reset. When the sandbox runs jobs as the harness's own user (not root),
a hostile program could still find and write the SQLite file, or kill the service (the next `reset` restarts a
service that died); as root the job's uid and jail put both out of its reach (see `evaluate.worker`).

RESULT needs no id rewriting: the service mints ids deterministically per reset (see `scenarios.session.store`),
salted with a hash of the test case's stored sessions, so the builder's oracle run and every later run of a
correct program see the same ids.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile

from urllib.parse import urlsplit

import requests  # imported once here so that every forked child finds it loaded

from scenarios.base import World
from scenarios.calling import Tools, Tracer
from scenarios.session import store
from scenarios.session.doc import operations
from scenarios.session.server import ServiceProcess
from scenarios.trace import raw_call

ASSET_KIND = "sessions"
# How long the previous test case's requests may keep the service busy before it is restarted instead. A
# correct program's requests are all answered before it ends, so only a hostile or runaway one waits this long.
SETTLE_TIMEOUT_S = 2.0


def _sessions_asset(case: dict) -> bytes:
    for a in case.get("assets", []):
        if a["kind"] == ASSET_KIND:
            return bytes(a["data"])
    return b"[]"


# Arguments that name where a call goes rather than data it carries: a session type, a queried field.
OPTIONS = frozenset({"type", "field"})
ERROR_STATUS = 400  # an answer from this status up is a refused call: the trace records it as an error


def _parsed(text: str):
    """A body as JSON when it is JSON, else the text (None when empty)."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def service_call(logged: dict) -> dict:
    """One logged request as a raw call (`scenarios.trace.raw_call`): the API is the method and the route
    template (`PUT /api/sessions/{source}/{type}/{id}`; the path itself when no route matched), the arguments are
    the path and query parameters and the body, the result is the status and the answer."""
    api = f"{logged['method']} {logged.get('route') or logged['path']}"
    args = dict(logged.get("params") or {})
    for key, value in logged.get("query") or []:
        args.setdefault(key, value)
    body = _parsed(logged.get("body") or "")
    if body is not None:
        args["body"] = body
    status = int(logged.get("status") or 0)
    result = {"status": status, "body": _parsed(logged.get("answer") or "")}
    return raw_call(api, args, OPTIONS, result, f"HTTP {status}" if status >= ERROR_STATUS else None)


class SessionWorld(World):
    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="stateeval-session-")  # mode 0700
        self.db_path = os.path.join(self._dir, "sessions.sqlite3")
        self._conn = store.connect(self.db_path)
        self.service = ServiceProcess(self.db_path, os.path.join(self._dir, "service.log")).start()

    def reset(self, case: dict) -> None:
        if not self.service.alive:  # a program killed it, or it crashed: give the next test case a fresh one
            self.service.start()
        elif not self.service.settle(SETTLE_TIMEOUT_S):  # still busy with an earlier program's requests
            self.service.restart()
        self._load(case)

    def intact(self) -> bool:
        """The service is restarted only by `reset`, before a job: still listening after it, it lived through the
        whole job."""
        return self.service.listening()

    def reset_between(self, case: dict) -> bool:
        """The stored sessions only, without waiting for the service to settle: the programs of a batch are the
        builder's mutants of a reference, whose requests (`requests`, synchronous) have all been answered, so
        written, when the program returns. A service that died cannot be restarted on the child's address."""
        if not self.service.alive:
            return False
        self._load(case)
        return True

    def save(self):
        """The stored sessions and minted ids (`store.dump`); None when the service is gone."""
        return store.dump(self._conn) if self.service.alive else None

    def restore(self, saved) -> bool:
        if not self.service.alive:
            return False
        store.load(self._conn, saved)
        return True

    def _load(self, case: dict) -> None:
        raw = _sessions_asset(case)
        salt = hashlib.sha256(raw).hexdigest()[:32]
        store.reset(self._conn, json.loads(raw), salt)

    def namespace(self, case: dict) -> dict:
        url = self.service.url

        def service_url() -> str:
            """The base URL of the session service for this test case, e.g. http://127.0.0.1:PORT."""
            return url

        return {"service_url": service_url}

    def calls(self, recorded):
        """The requests the service answered during the test case, read from its call log (`app.CallLog`), not
        from the child: whatever HTTP client the program used, this is what reached the service."""
        return [service_call(c) for c in store.calls(self._conn)]

    def snapshot(self, recorded):
        return store.snapshot(self._conn)

    # ---- tool calling (`--mode tools`): each endpoint of the OpenAPI document is a tool

    def _operations(self) -> dict:
        if not hasattr(self, "_ops"):
            self._ops = {op.tool: op for op in operations()}
        return self._ops

    def tools(self) -> Tools:
        return Tools({name: op.spec for name, op in self._operations().items()}, self._call, self.canonical,
                     frozenset({"BASE_URL"}))

    def _call(self, namespace: dict, name: str, arguments: dict):
        op = self._operations()[name]
        missing = [p for p in op.path_params if p not in arguments]
        if missing:
            raise ValueError(f"missing path parameter(s) {', '.join(missing)}")
        query = {p: arguments[p] for p in op.query_params if p in arguments}
        headers = {p: str(arguments[p]) for p in op.header_params if p in arguments}
        body = arguments.get("body") if op.has_body else None
        response = requests.request(op.method, namespace["service_url"]() + op.url(arguments), params=query or None,
                                    json=body, headers=headers or None, timeout=SETTLE_TIMEOUT_S * 5)
        return {"status": response.status_code, "body": _json_or_text(response)}

    def trace_as_tools(self, namespace: dict, tracer: Tracer) -> None:
        """The reference's `requests` calls, matched to the endpoint their URL and method name."""
        ops = sorted(self._operations().values(), key=lambda op: len(op.path_params))  # `/query` before `/{id}`
        for method in ("get", "post", "put", "delete"):
            original = getattr(requests, method)

            def traced(url, params=None, json=None, _method=method, _original=original, **kwargs):
                response = _original(url, params=params, json=json, **kwargs)
                path = urlsplit(url).path
                for op in ops:
                    m = op.pattern().fullmatch(path)
                    if op.method == _method and m:
                        args = {**m.groupdict(), **(params or {})}
                        if op.has_body:
                            args["body"] = json
                        tracer.record(op.spec, args, {"status": response.status_code,
                                                      "body": _json_or_text(response)})
                        break
                else:
                    raise ValueError(f"{_method.upper()} {path} is no endpoint of the service")
                return response

            setattr(requests, method, traced)

    def close(self) -> None:
        # At once, not gracefully: the database goes next, and a service kept busy by the last program would make
        # the worker outlast the harness's patience when it stops (then it is killed before it cleans up).
        self.service.kill()
        self._conn.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def _json_or_text(response):
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text
