"""A tiny REST service for the tests of scenarios/rest/process.py, on the standard library only.

    python fake_service.py PORT [--ready STATUS] [--reset STATUS] [--spec FILE] [--child PIDFILE] [--ignore-term]
                                [--die-on "METHOD PATH" [--die-at N]] [--idle-s SECONDS]

GET /ready answers STATUS (default 200); GET /openapi.json answers FILE's bytes as they are; POST /reset empties the
items and answers STATUS (default 204); POST /items stores the JSON body and answers 201 {"id": n}; GET /items lists
them; GET /pid answers this process's pid; GET /headers the request's headers; GET /moved redirects (302) to /items;
GET /cookie sets the cookie seen=yes. --child starts a process that sleeps in the same process group and writes its
pid to PIDFILE; --ignore-term ignores SIGTERM, so only SIGKILL ends the service; --die-on makes the service print a
line and exit with status 3, without answering, when it receives that request for the N-th time since the last reset
(default the first: a crash); --idle-s keeps connections alive (HTTP/1.1) and ends one that has been idle that long,
without a word to the client.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ITEMS: list = []
SEEN: list = []  # the requests named by --die-on since the last reset


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--ready", type=int, default=200)
    p.add_argument("--reset", type=int, default=204)
    p.add_argument("--spec")
    p.add_argument("--child")
    p.add_argument("--ignore-term", action="store_true")
    p.add_argument("--die-on", default="", help='"METHOD PATH" of the request that ends the service')
    p.add_argument("--die-at", type=int, default=1, help="the how many-th such request since the last reset")
    p.add_argument("--idle-s", type=float, help="keep connections alive, ending those idle this long")
    args = p.parse_args()
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.child:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(args.child, "w") as f:
            f.write(str(child.pid))

    class Handler(BaseHTTPRequestHandler):
        if args.idle_s:
            protocol_version, timeout = "HTTP/1.1", args.idle_s

        def parse_request(self) -> bool:
            parsed = super().parse_request()
            if parsed and f"{self.command} {self.path}" == args.die_on:
                SEEN.append(self.path)
                if len(SEEN) == args.die_at:
                    print(f"fake service: crashed on {args.die_on}", file=sys.stderr, flush=True)
                    os._exit(3)
            return parsed

        def answer(self, status: int, body: bytes = b"", kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/ready":
                self.answer(args.ready, b"{}")
            elif self.path == "/openapi.json" and args.spec:
                with open(args.spec, "rb") as f:
                    self.answer(200, f.read())
            elif self.path == "/items":
                self.answer(200, json.dumps(ITEMS).encode())
            elif self.path == "/pid":
                self.answer(200, str(os.getpid()).encode())
            elif self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", "/items")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/cookie":
                self.send_response(200)
                self.send_header("Set-Cookie", "seen=yes; Path=/")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/headers":
                self.answer(200, json.dumps(dict(self.headers)).encode())
            else:
                self.answer(404, b'{"error": "no such path"}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path == "/reset":
                ITEMS.clear()
                SEEN.clear()
                self.answer(args.reset, b"" if args.reset < 300 else b'{"error": "cannot reset now"}')
            elif self.path.startswith("/items"):
                ITEMS.append({"path": self.path, "body": json.loads(body) if body else None})
                self.answer(201, json.dumps({"id": len(ITEMS)}).encode())
            else:
                self.answer(404, b'{"error": "no such path"}')

        def log_message(self, *a) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
