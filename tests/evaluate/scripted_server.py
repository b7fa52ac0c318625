"""A scripted OpenAI-compatible chat server on loopback, for tests, benchmarks and offline demos.

`ScriptedServer(reply=fn, delay_s=0.2)` answers POST /v1/chat/completions in a thread per request. `fn(body)`
returns the reply text, an assistant message as a dict (`content` and `tool_calls`, for tool-calling tests), or an
int HTTP status to fail with (429, 500, ...). Every request body is recorded.
Each answer carries the API's `usage` fields, from `usage(body, reply)` (by default `word_usage`: whitespace-
separated words, so a test can recompute them); `usage=None` sends none, as some compatible servers do.
With `hold_after=N`, the requests after the first N wait unanswered until `release()`: a test that kills a run
after N replies knows exactly how many it got, however slow the machine is.
It binds 127.0.0.1 on a free port and never touches the network beyond loopback.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def send_json(handler: BaseHTTPRequestHandler, status: int, payload, headers: dict | None = None) -> None:
    """Answer an http.server request with a JSON body (and any extra headers)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)


def word_usage(body: dict, reply: str) -> dict:
    """Token counts a test can recompute: the words of every message's content, and of the reply."""
    prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    completion = len(reply.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class ScriptedServer:
    def __init__(self, reply: Callable[[dict], str | dict | int], delay_s: float = 0.0,
                 usage: Callable[[dict, str], dict] | None = word_usage, hold_after: int | None = None):
        self.reply = reply
        self.hold_after = hold_after
        self._released = threading.Event()
        self.usage = usage
        self.delay_s = delay_s
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    held = server.hold_after is not None and len(server.requests) > server.hold_after
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                if held:
                    server._released.wait()
                try:
                    if server.delay_s:
                        time.sleep(server.delay_s)
                    answer = server.reply(body)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                if isinstance(answer, int):
                    self._send(answer, {"error": {"message": f"scripted {answer}", "type": "scripted"}},
                               {"retry-after": "0"})
                    return
                message = {"role": "assistant", "content": answer}
                if isinstance(answer, dict):  # an assistant message with tool calls
                    message = {"role": "assistant", "content": answer.get("content"), **(
                        {"tool_calls": answer["tool_calls"]} if answer.get("tool_calls") else {})}
                payload = {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                                 "message": message}],
                }
                if server.usage is not None:
                    payload["usage"] = server.usage(body, answer if isinstance(answer, str) else json.dumps(answer))
                self._send(200, payload)

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                send_json(self, status, payload, headers)

            def log_message(self, *args):  # quiet
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 512  # the default backlog of 5 drops concurrent connects (1 s SYN retries)
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()

    def release(self) -> None:
        """Answer the held requests, and every later one at once (see `hold_after`)."""
        self._released.set()

    def count(self) -> int:
        with self._lock:
            return len(self.requests)


def kill_after_lines(proc: subprocess.Popen, path: Path, lines: int, timeout_s: float = 120) -> int:
    """SIGKILL `proc` once `path` (a generation cache) holds `lines` lines, or after `timeout_s`; the lines it
    holds then."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and len(path.read_text().splitlines()) >= lines:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return len(path.read_text().splitlines())
