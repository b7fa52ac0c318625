"""The session world: one session service per tier per sandbox worker, reset before every test case.

Life cycle (see `core.sandbox.worker`): the worker creates this world once, which starts the paper tier's service as a
separate process on a free loopback port with its own SQLite file; `reset(case)` runs in the worker before the
fork, `namespace(case)` gives the forked child `service_url()` (what the setup block's `BASE_URL = service_url()`
calls), and `snapshot()` runs in the worker after the child has exited.

Tiers. A test case's stored sessions say which tier of the service it runs against (`store.parse_asset`). The
frontier tier's service (`scenarios.session.frontier`) is a second process with a file of its own, started at the
first frontier test case a worker meets, so a worker that serves only paper tasks never starts it. Every method
below acts on the service of the tier of the test case last reset; the other one waits, idle, until a test case
of its tier comes (its `reset` then settles or restarts it as for any test case).

Why reset and snapshot open the database file instead of calling the service: a private admin route would sit
on the same port as the public API, so the untrusted program could call it too and rewrite the stored state
the oracle is read from. Going to the file keeps the HTTP surface exactly the original API, so through the
service a program can change the state only as any client could; it is also faster (no request round trips).
A program can also leave work behind in the service (requests on connections it never read from, a request that
keeps the event loop busy); `reset` waits for the service to settle and restarts it when it does not, so none of
that lands after the next test case's reset. When the sandbox runs jobs as the harness's own user (not root),
a hostile program could still find and write the SQLite file, or kill the service (the next `reset` restarts a
service that died); as root the job's uid and jail put both out of its reach (see `core.sandbox.worker`).

RESULT needs no id rewriting: the service mints ids deterministically per reset (see `scenarios.session.store`),
salted with a hash of the test case's stored sessions, so the builder's oracle run and every later run of a
correct program see the same ids.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import requests  # imported once here so that every forked child finds it loaded

from scenarios.base import PAPER, TIERS, World
from scenarios.calling import Tools, Tracer, answer_body
from scenarios.mutants import http_resolver
from scenarios.rest.proxy import Proxy
from scenarios.session import store
from scenarios.session.doc import operations
from scenarios.session.server import ServiceProcess
from scenarios.trace import raw_call

ASSET_KIND = "sessions"  # the asset of stored sessions (`store.parse_asset`)
# How long the previous test case's requests may keep the service busy before it is restarted instead. A
# correct program's requests are all answered before it ends, so only a hostile or runaway one waits this long.
SETTLE_TIMEOUT_S = 2.0


def _stored(case: dict) -> tuple[str, list[dict], str]:
    """The test case's tier, its stored sessions, and the salt of its ids: a hash of the asset's bytes."""
    raw = next((bytes(a["data"]) for a in case.get("assets", []) if a["kind"] == ASSET_KIND), b"[]")
    tier, sessions = store.parse_asset(raw)
    return tier, sessions, hashlib.sha256(raw).hexdigest()[:32]


# Arguments that name where a call goes rather than data it carries: a session type, a queried field.
OPTIONS = frozenset({"type", "field"})
ERROR_STATUS = 400  # an answer from this status up is a refused call: the trace records it as an error
IF_MATCH = "If-Match"  # a call's argument, as the frontier OpenAPI names the header (and so its tools do)


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
    the path and query parameters, the `If-Match` header when one was sent (a frontier write's precondition) and the
    body, the result is the status and the answer."""
    api = f"{logged['method']} {logged.get('route') or logged['path']}"
    args = dict(logged.get("params") or {})
    for key, value in logged.get("query") or []:
        args.setdefault(key, value)
    if "if_match" in logged:
        args[IF_MATCH] = logged["if_match"]
    body = _parsed(logged.get("body") or "")
    if body is not None:
        args["body"] = body
    status = int(logged.get("status") or 0)
    result = {"status": status, "body": _parsed(logged.get("answer") or "")}
    return raw_call(api, args, OPTIONS, result, f"HTTP {status}" if status >= ERROR_STATUS else None)


def _as_shown(logged: list[dict], exchanges: list) -> list[dict]:
    """The service's log as the program saw it through a mutant's proxy (`scenarios.rest.proxy.Exchange`): each
    request with the status and answer the proxy gave, the requests the program never sent (a write's repeat) left
    out. A logged request is matched to the first exchange not yet matched with its method and path (requests of a
    program that sends several at once may be answered in another order than logged); one without (a request
    that did not go through the proxy) stays as logged."""
    free = list(exchanges)
    shown = []
    for call in logged:
        match = next((e for e in free if e.method == call["method"] and unquote(urlsplit(e.path).path) == call["path"]),
                     None)
        if match is None:
            shown.append(call)
            continue
        free.remove(match)
        if match.unseen:
            continue
        if match.shown is not None:
            status, data = match.shown
            call = {**call, "status": status, "answer": data.decode("utf-8", "replace")}
        shown.append(call)
    return shown


@dataclass
class _Backend:
    """One tier's service and the worker's own connection to its database file."""

    service: ServiceProcess
    conn: sqlite3.Connection


class SessionWorld(World):
    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="stateeval-session-")  # mode 0700
        self._backends: dict[str, _Backend] = {}
        self._ops: dict[str, dict] | None = None  # every tier's endpoints by tool name, built at the first call
        self.tier = PAPER
        self._proxy: Proxy | None = None  # in front of the service while a world mutant is set (`mutate`)
        self._resolver = None
        self._backend(PAPER)

    def _backend(self, tier: str) -> _Backend:
        """The tier's service and connection, started at the first call for it."""
        if tier not in self._backends:
            suffix = "" if tier == PAPER else f"-{tier}"
            db_path = os.path.join(self._dir, f"sessions{suffix}.sqlite3")
            conn = store.connect(db_path)
            try:
                service = ServiceProcess(db_path, os.path.join(self._dir, f"service{suffix}.log"), tier).start()
            except BaseException:
                conn.close()
                raise
            self._backends[tier] = _Backend(service, conn)
        return self._backends[tier]

    @property
    def service(self) -> ServiceProcess:
        """The service of the current test case's tier."""
        return self._backends[self.tier].service

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._backends[self.tier].conn

    def reset(self, case: dict) -> None:
        tier, sessions, salt = _stored(case)
        service = self._backend(tier).service
        self.tier = tier
        if not service.alive:  # a program killed it, or it crashed: give the next test case a fresh one
            service.start()
        elif not service.settle(SETTLE_TIMEOUT_S):  # still busy with an earlier program's requests
            service.restart()
        store.reset(self._conn, sessions, salt)
        if self.mutant is not None:  # in front of this tier's service, which may have moved to another port
            self._proxy.close()
            self._proxy.port = service.port
            self._proxy.open()

    def intact(self) -> bool:
        """The service is restarted only by `reset`, before a job: still listening after it, it lived through the
        whole job. (The other tier's service is none of this job's: its next test case's `reset` restarts it.)"""
        return self.service.listening()

    def reset_between(self, case: dict) -> bool:
        """The stored sessions only, without waiting for the service to settle: the programs of a batch are the
        builder's mutants of a reference, whose requests (`requests`, synchronous) have all been answered, so
        written, when the program returns. A service that died cannot be restarted on the child's address, and a
        test case of the other tier is on another address too."""
        tier, sessions, salt = _stored(case)
        if tier != self.tier or not self.service.alive:
            return False
        store.reset(self._conn, sessions, salt)
        return True

    def save(self):
        """The stored sessions and minted ids (`store.dump`); None when the service is gone."""
        return store.dump(self._conn) if self.service.alive else None

    def restore(self, saved) -> bool:
        if not self.service.alive:
            return False
        store.load(self._conn, saved)
        return True

    def mutate(self, mutant) -> None:
        """A world mutant is applied by a proxy (`scenarios.rest.proxy`, the same as any REST service's) that the
        program reaches the service through while the mutant is set: the service logs, and stores, what it really
        received."""
        self.mutant = mutant
        if mutant is not None and self._proxy is None:
            self._proxy = Proxy(self.service.port, SETTLE_TIMEOUT_S * 5)
        if self._proxy is not None:
            self._proxy.close()
            self._proxy.mutate(mutant, None if mutant is None else self._resolve())

    def _resolve(self):
        """The operation of a request, among every tier's (`scenarios.mutants.http_resolver`), made once."""
        if self._resolver is None:
            self._operations()  # every tier's, built once
            self._resolver = http_resolver(sorted({f"{op.method.upper()} {op.path}" for ops in self._ops.values()
                                                   for op in ops.values()}))
        return self._resolver

    def call_mutant(self):
        return None

    def changed(self) -> int:
        return self._proxy.changed if self._proxy is not None else 0

    def _settled(self) -> None:
        """Under a mutant: the requests in flight at its proxy answered, before the service's log or store is read."""
        if self.mutant is not None and self._proxy is not None:
            self._proxy.close()

    def namespace(self, case: dict) -> dict:
        url = self._proxy.url if self.mutant is not None and self._proxy is not None else self.service.url

        def service_url() -> str:
            """The base URL of the session service for this test case, e.g. http://127.0.0.1:PORT."""
            return url

        return {"service_url": service_url}

    def calls(self, recorded):
        """The requests the service answered during the test case, read from its call log (`app.CallLog`), not
        from the child: whatever HTTP client the program used, this is what reached the service. Under a world
        mutant, each with the answer the program had from the proxy (`_as_shown`)."""
        self._settled()
        logged = store.calls(self._conn)
        if self.mutant is not None and self._proxy is not None:
            logged = _as_shown(logged, self._proxy.exchanges())
        return [service_call(c) for c in logged]

    def snapshot(self, recorded):
        """The stored sessions; with their versions on a tier whose writes count them (a program's If-Match
        writes change them, so the oracle compares them)."""
        self._settled()
        return store.snapshot(self._conn, versions=self.tier != PAPER)

    # ---- tool calling (`--mode tools`): each endpoint of the OpenAPI document is a tool

    def _operations(self) -> dict:
        """The current tier's endpoints by tool name. Every tier's are built at the first call: the worker builds
        them before the reset that says which tier its job is on (`core.sandbox.worker.Runner.run_job`), so that no
        child has to (a child's copy of the world would build them for itself alone)."""
        if self._ops is None:
            from scenarios.session.app import create_app

            self._ops = {tier: {op.tool: op for op in operations(create_app(":memory:", tier=tier).openapi())}
                         for tier in TIERS}
        return self._ops[self.tier]

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
        return {"status": response.status_code, "body": answer_body(response)}

    def trace_as_tools(self, namespace: dict, tracer: Tracer) -> None:
        """The reference's `requests` calls, matched to the endpoint their URL and method name; the headers the
        endpoint takes (the frontier's If-Match) are among the call's arguments when the program sent them."""
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
                        sent = {k.lower(): v for k, v in (kwargs.get("headers") or {}).items()}
                        args.update({h: sent[h.lower()] for h in op.header_params if h.lower() in sent})
                        if op.has_body:
                            args["body"] = json
                        tracer.record(op.spec, args, {"status": response.status_code,
                                                      "body": answer_body(response)})
                        break
                else:
                    raise ValueError(f"{_method.upper()} {path} is no endpoint of the service")
                return response

            setattr(requests, method, traced)

    def close(self) -> None:
        # At once, not gracefully: the database goes next, and a service kept busy by the last program would make
        # the worker outlast the harness's patience when it stops (then it is killed before it cleans up).
        if self._proxy is not None:
            self._proxy.stop()
        for backend in self._backends.values():
            backend.service.kill()
            backend.conn.close()
        shutil.rmtree(self._dir, ignore_errors=True)
