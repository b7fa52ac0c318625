"""Running the session service: in the foreground (`python -m scenarios.session serve`), or as a child process
owned by a sandbox worker (`ServiceProcess`).

A sandbox worker forks a child per test case, so the service cannot be a thread of the worker (the fork would
copy a half-running event loop). It is a separate process instead, started once per worker on a listening
socket the worker binds to a free loopback port and hands over by file descriptor (no race for the port), and
stopped by `ServiceProcess.stop`. With `--exit-with-parent` it also exits on its own when the worker is gone, so
a killed worker never leaves a service behind.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time

START_TIMEOUT_S = 60.0  # first start imports FastAPI; a loaded 2-core machine can take several seconds


def serve(host: str = "127.0.0.1", port: int = 18080, db: str = "session_service.sqlite3", fd: int | None = None,
          exit_with_parent: bool = False, log_level: str = "info") -> None:
    """Run the service until interrupted (or until the parent exits, with `exit_with_parent`)."""
    import uvicorn

    from scenarios.session.app import create_app

    app = create_app(db)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug",
                            lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    if exit_with_parent:
        _watch_parent(os.getppid())
    if fd is not None:
        server.run(sockets=[socket.socket(fileno=fd)])
    else:
        server.run()


def _watch_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _listening_socket(host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    return sock


class ServiceProcess:
    """One service instance on a free loopback port, with its own database file."""

    def __init__(self, db_path: str, log_path: str | None = None):
        self.db_path = db_path
        self.log_path = log_path or os.devnull
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
                     "--exit-with-parent", "--log-level", "warning"],
                    pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                )
        finally:
            sock.close()  # the service holds its own copy; ours must not reach forked test-case children
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if not self.alive:
                raise RuntimeError(f"the session service exited with code {self.proc.returncode}; see {self.log_path}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=max(0.1, deadline - time.monotonic()))
                conn.request("GET", "/info")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the session service did not answer within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
