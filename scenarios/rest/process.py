"""A running instance of the service a service file describes: start, ready, spec, reset, request, stop.

`Service(file)` starts nothing; `start()` (or `with Service(file) as service:`) picks a free loopback port and a
fresh private folder (`{dir}`, mode 0700), writes the file's `files` there, runs the start command in a process
group of its own with its output in `{dir}/service.log`, and polls `ready` until it answers 2xx. `stop()` ends the
whole group (SIGTERM, then SIGKILL) and removes the folder; a Service never stopped is stopped when the interpreter
exits. A reset that is a restart starts the service again on the same port in a fresh folder, so nothing of the
previous state survives.

Requests go over one kept-alive `http.client` connection (the worker sends some thirty per test case, and a
`requests.Session` costs more CPU per request than the service takes to answer a simple one). They are still what a
`requests.Session` with the file's headers would send, prepared by one (its cookies, redirects followed as it follows
them), and the answer is a `requests.Response`, so the same bytes go out and a body is parsed the same way; only a
compressed answer is never asked for.

Everything that goes wrong raises `ServiceError`, one line: the file, what failed, and what the service printed.
"""

from __future__ import annotations

import http.client
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from select import POLLIN, poll
from types import SimpleNamespace
from typing import Any

import requests
from requests.cookies import extract_cookies_to_jar
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from scenarios.rest import draws
from scenarios.rest.openapi import Operation, parse_document, read, select
from scenarios.rest.servicefile import ServiceFile, substitute

LOG_NAME = "service.log"
POLL_S = 0.1  # between two looks at `ready`
STOP_TIMEOUT_S = 10.0  # after SIGTERM, before SIGKILL
TAIL_LINES = 5  # of the service's output, in an error
TAIL_CHARS = 400
BODY_CHARS = 200  # of an answer's body, in an error
DYING_S = 1.0  # after a request that failed, how long the service may take to exit, if it is exiting
FAILURES = (OSError, http.client.HTTPException, requests.RequestException)  # of a request (a bad URL or body too)


class ServiceError(RuntimeError):
    """The service could not be started, reached, reset or read; the message is one line."""


def free_port() -> int:
    """A loopback TCP port free at this moment."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Service:
    def __init__(self, file: ServiceFile) -> None:
        self.file = file
        self.port: int | None = None  # kept across restarts
        self.dir: Path | None = None
        self.process: subprocess.Popen | None = None
        self.http = requests.Session()  # prepares each request (`_send`) and keeps the service's cookies
        self.http.trust_env = False  # loopback: no proxy from the environment
        self.http.headers.update({"Accept-Encoding": "identity", **file.headers})  # nothing here would uncompress
        self._connection: http.client.HTTPConnection | None = None  # kept alive between requests
        self._finalizer: weakref.finalize | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Service:
        return self if self.process else self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> Service:
        """Start the service and wait until it is ready; ServiceError when it exits first or is never ready."""
        if self.process is not None:
            return self
        self.port = self.port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"stateeval-rest-{self.file.name}-"))
        for name, text in self.file.files.items():
            (self.dir / name).write_text(substitute(text, self.port, str(self.dir)))
        argv = [substitute(arg, self.port, str(self.dir)) for arg in self.file.start]
        with open(self.dir / LOG_NAME, "wb") as log:
            try:
                self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
            except OSError as e:
                self.stop()
                raise ServiceError(f"{self.file.path}: start: cannot run {shlex.join(argv)} ({e.strerror}); "
                                   f"fix the command") from None
        self._finalizer = weakref.finalize(self, _end, self.process, self.dir)
        self._wait_ready(shlex.join(argv))
        return self

    def _wait_ready(self, command: str) -> None:
        url = self.url + self.file.ready
        deadline = time.monotonic() + self.file.ready_timeout_s
        last = "no answer"
        while True:
            if _exited(self.process.pid, 0):
                process, printed = self.process, self.tail()
                self.stop()  # what the command left running in its group too
                raise ServiceError(f"{self.file.path}: start: {command} exited with status {process.returncode} "
                                   f"before {url} answered; it printed: {printed}")
            try:
                answer = self._send("GET", self.file.ready, {}, max(0.1, min(5.0, deadline - time.monotonic())))
                if 200 <= answer.status_code < 300:
                    return
                last = f"status {answer.status_code}"
            except FAILURES as e:
                last = _failure(e)
            if time.monotonic() >= deadline:
                printed = self.tail()
                self.stop()
                raise ServiceError(f"{self.file.path}: ready: GET {url} did not answer 2xx within "
                                   f"{self.file.ready_timeout_s:g} s (last: {last}); raise ready_timeout_s or fix "
                                   f"the service; it printed: {printed}")
            time.sleep(POLL_S)

    def tail(self) -> str:
        """The last lines the service printed, on one line."""
        try:
            lines = (self.dir / LOG_NAME).read_text(errors="replace").splitlines()
        except (OSError, TypeError):
            return "(no output)"
        text = " | ".join(line.strip() for line in lines[-TAIL_LINES:] if line.strip())
        return (text[-TAIL_CHARS:] if len(text) > TAIL_CHARS else text) or "(no output)"

    def request(self, method: str, path: str, timeout: float | None = None, **kwargs: Any) -> requests.Response:
        """`method` `path` on the service with the file's headers; keyword arguments as `requests.Request` takes
        them (params, json, data, headers); `timeout`: the file's request_timeout_s unless given."""
        if self.process is None:
            raise ServiceError(f"{self.file.path}: {method} {path}: the service is not running; start() it first")
        try:
            return self._send(method, path, kwargs, timeout or self.file.request_timeout_s)
        except FAILURES as e:
            # A service that dies drops its connections a moment before it has exited: let it finish, so that
            # whoever asks next finds it gone (`RestWorld.intact`) and its last words are in the log.
            _exited(self.process.pid, DYING_S)
            raise ServiceError(f"{self.file.path}: {method} {self.url}{path} failed ({_failure(e)}); the "
                               f"service printed: {self.tail()}") from None

    def _send(self, method: str, path: str, parts: dict, timeout: float) -> requests.Response:
        """One request on the kept-alive connection (a new one when there is none, or the service ended it)."""
        request = self.http.prepare_request(requests.Request(method, self.url + path, **parts))
        connection, self._connection = self._connection, None
        if connection is not None and _readable(connection.sock):
            connection.close()  # ended by the service while idle (what it would send now is an end of file)
            connection = None
        if connection is None:
            connection = _connect(self.port, timeout)
        else:
            connection.sock.settimeout(timeout)
        try:
            connection.request(method, request.path_url, request.body, request.headers)
            raw = connection.getresponse()
            content = raw.read()
        except BaseException:
            connection.close()
            raise
        if not raw.will_close:
            self._connection = connection
        else:
            connection.close()
        response = _response(request, raw, content)
        extract_cookies_to_jar(self.http.cookies, request, response.raw)
        if response.is_redirect:  # followed as `requests.Session.send` follows it
            history = [response, *self.http.resolve_redirects(response, request, timeout=timeout)]
            response = history.pop()
            response.history = history
        return response

    def spec(self) -> dict:
        """The service's OpenAPI document, from the service or the file beside the service file."""
        if not self.file.spec_on_service:
            try:
                return parse_document(self.file.spec_file.read_text(), str(self.file.spec_file))
            except OSError as e:
                raise ServiceError(f"{self.file.path}: openapi: cannot read {self.file.spec_file} "
                                   f"({e.strerror})") from None
        answer = self.request("GET", self.file.openapi)
        if not 200 <= answer.status_code < 300:
            raise ServiceError(f"{self.file.path}: openapi: GET {self.url}{self.file.openapi} answered "
                               f"{answer.status_code}: {_first(answer)}; give the path the service serves its "
                               f"document at")
        return parse_document(answer.text, f"the document at {self.url}{self.file.openapi}")

    def operations(self) -> list[Operation]:
        """The document's operations that the file's include / exclude keep."""
        where = str(self.file.spec_file) if not self.file.spec_on_service else f"{self.file.name}'s document"
        return select(read(self.spec(), where), self.file.include, self.file.exclude, where)

    def reset(self, seed: int = 0) -> list[requests.Response]:
        """Empty the service (its reset request, or a restart), then send the population with its placeholders
        drawn from `seed`; the population's answers, in order."""
        if self.file.reset_request is None:
            self.stop()
            self.start()
        else:
            method, path = self.file.reset_request
            answer = self.request(method, path)
            if not 200 <= answer.status_code < 300:
                raise ServiceError(f"{self.file.path}: reset: {method} {path} answered {answer.status_code}: "
                                   f"{_first(answer)}; fix reset (or write \"restart\")")
        return self.populate(seed)

    def populate(self, seed: int = 0) -> list[requests.Response]:
        rng, labels, answers = random.Random(seed), {}, []
        for i, item in enumerate(self.file.population):
            path = str(draws.expand(item.path, rng, labels))
            body = draws.expand(item.body, rng, labels)
            answer = self.request(item.method, path, json=body)
            if not 200 <= answer.status_code < 300:
                raise ServiceError(f"{self.file.path}: population[{i}]: {item.method} {path} answered "
                                   f"{answer.status_code}: {_first(answer)}")
            answers.append(answer)
        return answers

    def stop(self) -> None:
        """End the service's process group and remove its folder; safe to call twice."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        _end(self.process, self.dir)
        self.process, self.dir = None, None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self.http.close()


def _end(process: subprocess.Popen | None, folder: Path | None) -> None:
    """SIGTERM to the process group, then SIGKILL to whatever of it is left after STOP_TIMEOUT_S or once the
    leader has exited (a child the service started), then the leader reaped; the folder removed. The leader is
    reaped last: until then its pid, and so the group's id, cannot be given to another process."""
    if process is not None and process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        _exited(process.pid, STOP_TIMEOUT_S)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _exited(pid: int, timeout: float) -> bool:
    """Whether the child `pid` has exited, waiting up to `timeout` seconds; it is left unreaped."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped already
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S / 10)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _connect(port: int, timeout: float) -> http.client.HTTPConnection:
    """A connection to loopback `port` that sends each write at once (as `requests` does, TCP_NODELAY): `http.client`
    writes a request's body apart from its head, which would otherwise wait for the head's acknowledgement."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.connect()
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def _readable(sock) -> bool:
    """Whether an idle connection's socket has something to read: its end, or garbage; either way not reusable."""
    waiting = poll()
    waiting.register(sock, POLLIN)
    return bool(waiting.poll(0))


def _failure(error: BaseException) -> str:
    """What a request failed of, as `requests` names it."""
    if isinstance(error, requests.RequestException):
        return type(error).__name__
    return "Timeout" if isinstance(error, TimeoutError) else "ConnectionError"


def _response(request: requests.PreparedRequest, raw: http.client.HTTPResponse, content: bytes) -> requests.Response:
    """The answer as `requests` gives it (`HTTPAdapter.build_response`), its body read."""
    response = requests.Response()
    response.status_code, response.reason = raw.status, raw.reason
    response.headers = CaseInsensitiveDict()
    for name, value in raw.getheaders():  # a header given twice: its values joined, as urllib3 joins them
        response.headers[name] = f"{response.headers[name]}, {value}" if name in response.headers else value
    response.encoding = get_encoding_from_headers(response.headers)
    response.url, response.request = request.url, request
    response._content, response._content_consumed = content, True
    response.raw = SimpleNamespace(_original_response=raw)  # where `requests` finds the cookies it keeps
    return response


def _first(answer: requests.Response) -> str:
    text = " ".join(answer.text[:BODY_CHARS].split())
    return repr(text) if text else "(empty body)"
