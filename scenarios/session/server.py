"""Running the session service: in the foreground (`python -m scenarios.session serve`), or as a child process
owned by a sandbox worker (`ServiceProcess`).

A sandbox worker forks a child per test case, so the service cannot be a thread of the worker (the fork would
copy a half-running event loop). It is a separate process instead, started once per worker on a listening
socket the worker binds to a free loopback port and hands over by file descriptor (no race for the port), and
stopped by `ServiceProcess.stop`. With `--exit-with-parent` the kernel kills it when the worker is gone, so a
killed worker never leaves a service behind.
"""

from __future__ import annotations

import http.client
import os
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scenarios.base import PAPER, TIERS

START_TIMEOUT_S = 60.0  # first start imports FastAPI; a loaded 2-core machine can take several seconds
# The service's address space: about 200 MB is what it maps when idle; the rest bounds what a program can make
# it hold (a request body of gigabytes) instead of the machine's memory.
MEMORY_LIMIT_MB = 1024
SETTLE_POLL_S = 0.002  # how often `settle` looks at the service's connections
# TCP states (as /proc/net/tcp writes them) of a server-side connection the service has not closed yet, so may
# still read a request from and act on: SYN_RECV, ESTABLISHED (accepted or waiting in the listen queue),
# CLOSE_WAIT (the client is gone, its last requests possibly unread).
OPEN_STATES = {"03", "01", "08"}
PR_SET_PDEATHSIG = 1


DB_NAME = "session_service.sqlite3"


def default_db() -> Path:
    """Where a service run by hand keeps its sessions: the user's data folder, not whatever directory the command
    happened to run in; a temporary folder when that one cannot be made (a read-only or missing home)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    folder = Path(base) / "stateeval"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = Path(tempfile.gettempdir()) / f"stateeval-session-{os.getuid()}"
        folder.mkdir(mode=0o700, exist_ok=True)
    return folder / DB_NAME


def serve(host: str = "127.0.0.1", port: int = 18080, db: str | None = None, fd: int | None = None,
          exit_with_parent: bool | int = False, log_level: str = "info", log_calls: bool = False,
          tier: str = PAPER) -> None:
    """Run the service until interrupted (or until the parent exits, with `exit_with_parent`: True, or the parent's
    pid, which closes the moment between the parent's start of this process and this call); `db` defaults to
    `default_db()`; `log_calls`: keep every answered request in the database (see `app.CallLog`); `tier`: "paper"
    or "frontier" (see `app.create_app`)."""
    if exit_with_parent:  # first: a worker killed while this imports FastAPI must not leave it running
        _die_with_parent(os.getppid() if exit_with_parent is True else exit_with_parent)
    if fd is not None:
        fd = _lowest(fd)
    import uvicorn

    from scenarios.session.app import create_app

    app = create_app(db or str(default_db()), log_calls, tier)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug",
                            lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    if fd is not None:
        server.run(sockets=[socket.socket(fileno=fd)])
    else:
        server.run()


LISTEN_FD = 3  # the lowest descriptor after the standard streams


def _lowest(fd: int) -> int:
    """Move the listening socket to LISTEN_FD when that is free, before anything else is opened. A killed process
    closes its descriptors in ascending order, so the listening socket is then closed before any connection: a
    client that saw its connection reset by a dying service finds the port no longer listening
    (`ServiceProcess.listening`), which is how a worker tells a job that met a killed service."""
    if fd == LISTEN_FD:
        return fd
    try:
        os.fstat(LISTEN_FD)
    except OSError:  # free
        os.dup2(fd, LISTEN_FD)
        os.close(fd)
        return LISTEN_FD
    return fd


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill the service when its parent dies (PR_SET_PDEATHSIG, Linux).

    A thread polling the parent would not do: a request that holds the interpreter (a catastrophic `$regex`
    runs in C) never lets it in, so a busy service would outlive a killed worker, spinning.
    """
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the call above
        os._exit(0)


# Netlink's socket diagnostics (linux/sock_diag.h, linux/inet_diag.h): what `ss` asks the kernel.
NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLMSG_ERROR, NLMSG_DONE = 4, 20, 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
TCP_ESTABLISHED, TCP_SYN_RECV, TCP_CLOSE_WAIT = 1, 3, 8  # the kernel's numbers of OPEN_STATES
TCP_LISTEN = 10
OPEN_MASK = (1 << TCP_ESTABLISHED) | (1 << TCP_SYN_RECV) | (1 << TCP_CLOSE_WAIT)


def open_connections(port: int, states: int = OPEN_MASK) -> int:
    """The IPv4 TCP sockets whose local port is `port` in one of `states` (a mask of the kernel's TCP state
    numbers; default OPEN_STATES, the connections not closed yet), counted by the kernel's socket diagnostics: one
    dump request over netlink for sockets in those states only, so the closed ones are never listed. Raises
    OSError where netlink is not to be had."""
    # struct inet_diag_req_v2: family, protocol, extensions, pad, states, then a zeroed inet_diag_sockid (48 bytes)
    request = struct.pack("=BBBBI48x", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, states)
    header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
    count = 0
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(5)
        sock.send(header + request)
        while True:
            data = sock.recv(65536)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == NLMSG_DONE:
                    return count
                if kind == NLMSG_ERROR or length < 16:
                    raise OSError("netlink refused the socket dump")
                # struct inet_diag_msg: family, state, timer, retrans, then the sockid: source port first (network order)
                if struct.unpack_from("!H", data, offset + 16 + 4)[0] == port:
                    count += 1
                offset += (length + 3) & ~3
            if not data:
                raise OSError("netlink closed before the end of the dump")


def _listening_socket(host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    return sock


class ServiceProcess:
    """One service instance on a free loopback port, with its own database file, serving one tier ("paper" or
    "frontier", see `app.create_app`)."""

    def __init__(self, db_path: str, log_path: str | None = None, tier: str = PAPER):

        if tier not in TIERS:
            raise ValueError(f"unknown session service tier {tier!r}: use one of {', '.join(TIERS)}")
        self.db_path = db_path
        self.log_path = log_path or os.devnull
        self.tier = tier
        self.proc: subprocess.Popen | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> "ServiceProcess":
        sock = _listening_socket()
        self.port = sock.getsockname()[1]
        fd = sock.fileno()
        try:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "scenarios.session", "serve", "--fd", str(fd), "--db", self.db_path,
                     "--exit-with-parent", "--parent", str(os.getpid()), "--log-level", "warning", "--log-calls",
                     *(["--tier", self.tier] if self.tier != PAPER else [])],
                    pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                )
            limit = MEMORY_LIMIT_MB * 1024 * 1024
            try:
                resource.prlimit(self.proc.pid, resource.RLIMIT_AS, (limit, limit))
            except ProcessLookupError:  # it exited at once; _wait_ready says so
                pass
        finally:
            sock.close()  # the service holds its own copy; ours must not reach forked test-case children
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if not self.alive:
                raise RuntimeError(f"the session service exited with code {self.proc.returncode}; see {self.log_path}")
            if self._answers(max(0.1, deadline - time.monotonic())):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the session service did not answer within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.05)

    def settle(self, timeout: float) -> bool:
        """Whether the service is done with every earlier client within `timeout` seconds.

        A program can leave work behind in the service: requests it sent on connections it never read from
        (served after the program is gone, so after the next test case's reset), or one slow request that holds
        the event loop (a catastrophic `$regex`). Done means: no connection to the service's port is still open on
        its side, and it answers a fresh request (the event loop runs the requests it had already read first).
        """
        deadline = time.monotonic() + timeout
        while self._open_connections():
            if time.monotonic() > deadline:
                return False
            time.sleep(SETTLE_POLL_S)
        return self._answers(max(SETTLE_POLL_S, deadline - time.monotonic()))

    def _answers(self, timeout: float) -> bool:
        """Whether the service answers GET /info with 200 within `timeout` seconds."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", "/info")
            response = conn.getresponse()
            response.read()  # the whole answer: the service has logged this request (`app.CallLog`) once it is sent
            return response.status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def listening(self) -> bool:
        """Whether the service is alive and still listens on its port. A killed process closes its sockets before
        it can be reaped (its connections reset, while `alive` may still say yes for a moment), the listening one
        first (`_lowest`): that one tells. No request is made, so a service kept busy by a program still counts."""
        if not self.alive:
            return False
        try:
            return open_connections(self.port, 1 << TCP_LISTEN) > 0
        except OSError:
            return self._answers(SETTLE_POLL_S * 50)  # no netlink: ask it (a busy one is then taken for dead)

    def _open_connections(self) -> int:
        """Connections to the service's port that the service has not closed: asked of the kernel over netlink
        (`open_connections`), or read from /proc/net/tcp where netlink is refused.

        The service listens on an IPv4 socket (`_listening_socket`), so its connections are all in the IPv4 table.
        Reading the /proc table makes the kernel write a line for every socket on the machine, the thousands of
        closed connections in TIME_WAIT that a build's test cases leave included: 10-20 ms a time, before every
        test case, where netlink answers with the few open ones in well under a millisecond."""
        try:
            return open_connections(self.port)
        except OSError:
            pass
        port = f"{self.port:04X}"
        count = 0
        try:
            with open("/proc/net/tcp") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[1].rsplit(":", 1)[1] == port and fields[3] in OPEN_STATES:
                        count += 1
        except OSError:
            pass
        return count

    def kill(self) -> None:
        """Stop the service at once: a busy one cannot shut down gracefully (its signal handler never runs)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> "ServiceProcess":
        """Kill the service and start a fresh one on a new port."""
        self.kill()
        return self.start()

    def stop(self) -> None:
        """Stop the service gracefully, killing it if it has not exited within 5 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
