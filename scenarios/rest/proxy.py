"""A recording reverse proxy in front of a service, run by the worker: what the service answered, as the worker saw it.

A program reaches its service through this proxy (`RestWorld.namespace` gives the child the proxy's address), so
the worker itself, not the program's process, records every exchange: method, path, status and answer. The ids
the service made are derived from that record (`RestWorld.outcome`): only the requests the program really sends
are in it, and nothing it holds or returns changes it.

The proxy serves on a loopback port of its own, one thread per connection (the standard library's
`ThreadingHTTPServer`, whose threads here wait for the next connection once theirs ends: starting a thread costs about
as much as relaying a request), and sends each request on to the service with the client's headers (those of one hop
left out, and `Accept-Encoding`, so that the answer it records is the one the program reads). It admits requests
only while it is open: `close()` refuses new ones and waits for those in flight, so that a program's last request
is in the record before the worker reads it, and a request a killed program left half-sent never reaches the next
test case's world. `take()` gives the exchanges since the last `take` (or `open`) and forgets them. Connections
to the service are kept open between the requests of one test case and ended by `close()`, before the service
may be started again.

With a world mutant (`mutate`, `scenarios.mutants`), the proxy is also where an HTTP service goes wrong: every
request of the mutant's operation (`resolve` names a request's operation) is answered as the mutant says, and the
record keeps what the service really answered (so the ids it made, and the final state, are the real ones).
`changed` counts the requests whose answer the mutant changed.

The worker forks its children while the proxy's threads wait; a child keeps none of them (and closes the proxy's
socket with the worker's other descriptors), which is as it should be: the proxy is the worker's.
"""

from __future__ import annotations

import http.client
import json
import queue
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from scenarios.mutants import IGNORED, STATUS, TWICE, Mutant, mutated_answer, other_status

# Headers that belong to one connection, not to the request (RFC 9110, 7.6.1), and those the proxy sets itself.
HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
                 "trailer", "transfer-encoding", "upgrade", "content-length", "accept-encoding"})
BAD_GATEWAY = 502
UNAVAILABLE = 503
SETTLE_S = 30.0  # at most, for the requests in flight when the proxy closes
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Exchange:
    """One request the service answered: its method, path (with the query), status and answer's bytes. Under a
    world mutant, `shown` is the status and bytes the program was answered instead (None: the service's), and
    `unseen` marks a request the program never sent (the repeat of a write applied twice)."""

    method: str
    path: str
    status: int
    body: bytes
    content_type: str
    shown: tuple[int, bytes] | None = None
    unseen: bool = False


class Proxy:
    def __init__(self, port: int, timeout_s: float):
        """A proxy to the service on loopback `port`, each request given `timeout_s`; it serves at once, closed
        (refusing requests) until `open()`."""
        self.port, self.timeout_s = port, timeout_s
        self._lock = threading.Condition()
        self._open = False
        self._busy = 0
        self._log: list[Exchange] = []
        # Connections to the service kept open between the requests of one test case (`close` ends them: the
        # service may be started again before the next).
        self._idle: list[http.client.HTTPConnection] = []
        self.mutant: Mutant | None = None
        self._resolve: Callable[[str, str], str | None] | None = None
        self.changed = 0
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, name="rest-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def open(self) -> None:
        """Admit requests from now on, the record empty."""
        with self._lock:
            self._log = []
            self._open = True

    def mutate(self, mutant: Mutant | None, resolve: Callable[[str, str], str | None] | None = None) -> None:
        """Answer as `mutant` says from now on (None: as the service does); `resolve(method, path)` names the
        operation of a request (the name the mutant's `api` uses), None for no operation."""
        with self._lock:
            self.mutant, self._resolve, self.changed = mutant, resolve, 0

    def close(self) -> None:
        """Refuse new requests and wait (up to SETTLE_S) for those in flight to be answered and recorded."""
        with self._lock:
            self._open = False
            self._lock.wait_for(lambda: self._busy == 0, SETTLE_S)
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def take(self) -> list[Exchange]:
        """The exchanges recorded since the last `take` or `open`, in the order they were answered."""
        with self._lock:
            log, self._log = self._log, []
            return log

    def exchanges(self) -> list[Exchange]:
        """The exchanges recorded since the last `take` or `open`, kept."""
        with self._lock:
            return list(self._log)

    def stop(self) -> None:
        self.close()
        self._server.shutdown()
        self._server.server_close()

    # ---- the connection threads' side

    def _admit(self) -> bool:
        with self._lock:
            if self._open:
                self._busy += 1
            return self._open

    def _done(self) -> None:
        with self._lock:
            self._busy -= 1
            self._lock.notify_all()

    def forward(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes
                ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send one request on to the service: status, reason, headers and body of its answer (502 when the service
        cannot be reached, 503 while the proxy is closed); recorded when the service answered. Under a mutant whose
        operation this request is, the answer (or what was sent) is the mutant's."""
        if not self._admit():
            return UNAVAILABLE, "Service Unavailable", [], b""
        try:
            mutant, resolve = self.mutant, self._resolve
            if mutant is not None and resolve is not None and resolve(method, path.split("?")[0]) == mutant.api:
                return self._mutated(mutant, method, path, headers, body)
            return self._send(method, path, headers, body)
        finally:
            self._done()

    def _send(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes,
              shown: Callable[[int, bytes], tuple[int, bytes] | None] = lambda status, data: None,
              unseen: bool = False) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send one request and record it, with what `shown(status, data)` says the program is answered instead
        (None: the service's answer)."""
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        try:
            connection = connection or http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout_s)
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                connection.putheader(name, value)
            if body or method in ("POST", "PUT", "PATCH"):
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body or None)
            answer = connection.getresponse()
            data = answer.read()
        except (OSError, http.client.HTTPException) as e:
            connection.close()
            return BAD_GATEWAY, "Bad Gateway", [("Content-Type", "text/plain")], f"{type(e).__name__}".encode()
        instead = shown(answer.status, data)
        exchange = Exchange(method, path, answer.status, data, answer.getheader("Content-Type") or "", instead, unseen)
        if answer.will_close:
            connection.close()
        else:
            with self._lock:
                self._idle.append(connection)
        with self._lock:
            self._log.append(exchange)
        status, data = instead or (answer.status, data)
        return status, answer.reason, answer.getheaders(), data

    def _mutated(self, mutant: Mutant, method: str, path: str, headers: list[tuple[str, str]], body: bytes
                 ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """The answer to a request of the mutant's operation (`scenarios.mutants` says what each kind does)."""
        if mutant.kind == IGNORED:  # never sent: answered as a success, with what was sent
            self._count()
            return (201 if method == "POST" else 200), "OK", [("Content-Type", "application/json")], body or b"{}"
        if mutant.kind == TWICE:  # what it changed shows in the state, never in an answer: not counted here
            answer = self._send(method, path, headers, body)
            self._send(method, path, headers, body, unseen=True)
            return answer
        return self._send(method, path, headers, body, lambda status, data: self._answered(mutant, status, data))

    def _answered(self, mutant: Mutant, status: int, data: bytes) -> tuple[int, bytes] | None:
        """What the program is answered under an answer's mutant, counted; None when it is the service's answer."""
        if mutant.kind == STATUS:
            if other_status(status) == status:
                return None
            self._count()
            return other_status(status), data
        try:
            answer = json.loads(data)
        except ValueError:
            return None  # not JSON: no record or list to change
        changed = mutated_answer(mutant, answer)
        if changed == answer:
            return None
        self._count()
        return status, json.dumps(changed).encode()

    def _count(self) -> None:
        with self._lock:
            self.changed += 1


class _Server(ThreadingHTTPServer):
    """A thread per connection, as ThreadingHTTPServer, but a thread whose connection has ended serves the next one
    instead of ending, until the server is closed."""

    daemon_threads = True

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self._free = 0  # threads waiting for a connection
        self._closed = False
        self._count = threading.Lock()
        self._next: queue.SimpleQueue = queue.SimpleQueue()  # connections for the threads waiting; None: end

    def process_request(self, request, client_address) -> None:
        with self._count:
            free = self._free > 0
            self._free -= free
        if free:
            self._next.put((request, client_address))
        else:
            threading.Thread(target=self._serve, args=((request, client_address),), daemon=True).start()

    def _serve(self, connection: tuple | None) -> None:
        while connection is not None:
            self.process_request_thread(*connection)  # (handles the connection, then closes it)
            with self._count:
                if self._closed:
                    return
                self._free += 1
            connection = self._next.get()

    def server_close(self) -> None:
        super().server_close()
        with self._count:
            self._closed, waiting, self._free = True, self._free, 0
        for _ in range(waiting):
            self._next.put(None)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the service itself offers
    disable_nagle_algorithm = True  # an answer goes out at once, not after the client acknowledges its headers

    def _relay(self) -> None:
        body = self._body()
        if body is None:
            return
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP]
        status, reason, answer_headers, data = self.server.proxy.forward(self.command, self.path, headers, body)
        self.send_response_only(status, reason)
        for name, value in answer_headers:
            if name.lower() not in HOP or (self.command == "HEAD" and name.lower() == "content-length"):
                self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _body(self) -> bytes | None:
        """The request's body (a chunked one put together), or None after answering a request that cannot be read."""
        try:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.send_error(400, "a body that cannot be read (bad Content-Length or chunk size)")
            return None
        return self.rfile.read(length) if length > 0 else b""

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass  # the record is `Proxy.take`; nothing goes to the worker's output


for _method in METHODS:
    setattr(_Handler, f"do_{_method}", _Handler._relay)
