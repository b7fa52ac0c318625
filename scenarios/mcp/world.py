"""The sandbox side of a scenario derived from an MCP server's file: one instance of the server per worker.

The worker creates this world once: it starts the server (`scenarios.mcp.client.Server`, the SDK's stdio client
on a thread of the worker) and a bridge in front of it, a small HTTP endpoint on the loopback interface through which
the forked child calls the tools (a child cannot share the worker's MCP session). `reset(case)` empties the server
and sends the population drawn from the test case's seed; `namespace(case)` gives the child one Python function per
kept tool (`ToolError` when the tool reports an error). The bridge records every call the child made; `outcome`, in
the worker, takes from that record the keys the server made up and reads the final state through the readers (the
read-only tools that take no argument).

Values the server makes up (keys it chose, UUIDs, dates, the fields learned to differ between fresh resets) are
renamed as for a REST service (`scenarios.rest.world.Masker`), so that two runs that differ only by them compare
equal. What decides a verdict is the worker's alone: RESULT comes from the child as plain data, and the worker
renames it and the final state with the made-up values of its own record.
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from scenarios.base import World, canonicalize
from scenarios.calling import Tools, Tracer
from scenarios.mcp.client import Answer, Server
from scenarios.mcp.doc import tool_spec
from scenarios.mcp.model import Model, decided, get, python_name, seed_of
from scenarios.mcp.serverfile import ServerFile
from scenarios.rest.world import Masker, _replaced

CALL_PATH = "/call"


class ToolError(Exception):
    """A tool reported an error (its `isError`); the message is the server's."""


class Bridge:
    """The child's way to the server: POST /call {"tool", "arguments"} answers the tool's `Answer` as JSON. Every
    call is recorded (tool, arguments, answer) for the worker."""

    def __init__(self, server: Server):
        self.server = server
        self.record: list[tuple[str, dict, Answer]] = []
        self._lock = threading.Lock()
        bridge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the standard library's name
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    asked = json.loads(self.rfile.read(length))
                    tool, arguments = asked["tool"], asked["arguments"]
                    if not isinstance(tool, str) or not isinstance(arguments, dict):
                        raise TypeError("tool must be a string and arguments an object")
                    with bridge._lock:
                        answer = bridge.server.call(tool, arguments)
                        bridge.record.append((tool, arguments, answer))
                    body, status = json.dumps(answer.to_plain()).encode(), 200
                except Exception as e:  # noqa: BLE001 - told to the child, which raises it
                    body, status = json.dumps({"error": True, "text": f"{type(e).__name__}: {e}"}).encode(), 200
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        self._thread = threading.Thread(target=self.http.serve_forever, daemon=True, name="mcp-bridge")
        self._thread.start()

    def take(self) -> list[tuple[str, dict, Answer]]:
        with self._lock:
            taken, self.record = self.record, []
        return taken

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def tool_functions(port: int, tools: list[str], timeout: float) -> dict:
    """The child's namespace: one function per tool name (`python_name`), and `ToolError`."""

    def call(tool: str, arguments: dict) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            connection.request("POST", CALL_PATH, json.dumps({"tool": tool, "arguments": arguments}),
                               {"Content-Type": "application/json"})
            answer = json.loads(connection.getresponse().read())
        finally:
            connection.close()
        if answer.get("error"):
            raise ToolError(answer.get("text") or f"{tool} failed")
        return answer.get("value")

    def function(tool: str):
        def tool_function(**arguments):
            return call(tool, arguments)
        tool_function.__name__ = tool_function.__qualname__ = python_name(tool)
        tool_function.__doc__ = f"The MCP tool {tool}: its arguments as keywords; its answer."
        return tool_function

    return {"ToolError": ToolError, **{python_name(t): function(t) for t in tools}}


class McpWorld(World):
    def __init__(self, file: ServerFile) -> None:
        self.file = file
        self.server = Server(file).start()
        self.bridge: Bridge | None = None
        try:
            model = decided(file)
            if model is None:  # a server file used alone, outside a build: probed here
                from scenarios.mcp.model import probe

                model = probe(file, self.server)
            self.model: Model = model
            self.kept = [t["name"] for t in model.kept()]
            self.seed = 0
            self.population_made: list[str] = []
            self.made: list[str] = []  # the child's view (tools mode): the population's, then its own calls'
            self._recorder = None
            self.bridge = Bridge(self.server)
        except BaseException:
            self.close()
            raise

    # ---- the worker's side

    def reset(self, case: dict) -> None:
        self.seed = seed_of(case)
        if self.bridge is not None:
            self.bridge.take()
        sent = self.server.reset(self.seed)
        self.population_made = [m for call, _, answer in sent for m in self._made(call.tool, answer)]

    def intact(self) -> bool:
        return self.server.alive()

    def failure(self) -> str | None:
        if self.server.alive():
            return None
        return f"the MCP server {self.file.name} stopped during the job; it printed: {self.server.tail()}"

    def reset_between(self, case: dict) -> bool:
        self.reset(case)  # the bridge stays where it is, whatever the reset does behind it
        return True

    def close(self) -> None:
        if self.bridge is not None:
            self.bridge.stop()
            self.bridge = None
        self.server.close()

    def outcome(self, result: Any, recorded: Any) -> tuple[Any, Any]:
        """RESULT and the final state, renamed with the values the server made as the bridge recorded them."""
        made = list(self.population_made)
        for tool, _, answer in self.bridge.take():
            made += self._made(tool, answer)
        masker = self.masker(made)
        return masker(result), masker(self._reads())

    def _made(self, tool: str, answer: Answer) -> list[str]:
        """The key a tool's answer holds when the server made it up (a key whose value the client did not send)."""
        key = self.model.makes(tool)
        if key is None or key.sent is not None or answer.error:
            return []
        value = get(answer.value, tuple("[]" if isinstance(s, int) else s for s in key.answer))
        return [] if value is None else [str(value)]

    def _reads(self) -> list:
        return self.model.read(self.server)

    def masker(self, made: list[str]) -> Masker:
        chosen = frozenset(str(v) for _, v, _ in self.model.population_keys(self.seed))
        return Masker(made, self.file.volatile + tuple(self._learned()), chosen)

    def _learned(self) -> list[str]:
        """The learned fields as paths into the final state ([reader answers]) and into an answer alike."""
        out = []
        for path in self.model.learned:
            parts = path.split(".")
            out.append(".".join(parts[2:]) if len(parts) > 2 and parts[1] == "value" else path)
        return out

    # ---- the child's side

    def namespace(self, case: dict) -> dict:
        self.seed = seed_of(case)
        self.made = list(self.population_made)
        functions = tool_functions(self.bridge.port, self.kept, self.file.call_timeout_s)
        world = self
        for tool in self.kept:
            name = python_name(tool)
            functions[name] = _watched(world, tool, functions[name])
        return functions

    def record_calls(self, namespace: dict, recorder) -> None:
        self._recorder = recorder

    def _seen(self, tool: str, arguments: dict, call):
        """Run one tool call of the child, noting the keys it made (tools mode shows them renamed) and recording it
        for the diagnosis's trace."""
        def run():
            try:
                value = call()
            except ToolError:
                raise
            self.made += self._made(tool, Answer(value))
            return value
        if self._recorder is None:
            return run()
        return self._recorder.run(tool, lambda: arguments, run)

    # ---- tool calling (`--mode tools`): the server's own tools

    def tools(self) -> Tools:
        specs = {t["name"]: tool_spec(t) for t in self.model.kept()}
        return Tools(specs, self._call, self.shown, frozenset())

    def _call(self, namespace: dict, name: str, arguments: dict):
        real = {shown: value for value, shown in self.masker(self.made).names.items()}
        return namespace[python_name(name)](**_replaced(arguments, real))

    def trace_as_tools(self, namespace: dict, tracer: Tracer) -> None:
        tracer.by_value = True
        specs = {t["name"]: tool_spec(t) for t in self.model.kept()}
        for tool in self.kept:
            name = python_name(tool)
            original = namespace[name]

            def traced(_tool=tool, _original=original, **arguments):
                result = _original(**arguments)
                tracer.record(specs[_tool], arguments, result)
                return result
            namespace[name] = traced

    def canonical(self, obj: Any) -> Any:
        real = {shown: value for value, shown in self.masker(self.made).names.items()}
        plain = canonicalize(obj, self.canonical_leaf)
        return _replaced(plain, real) if real else plain

    def shown(self, obj: Any) -> Any:
        return self.masker(self.made)(canonicalize(obj, self.canonical_leaf))

    def trace_value(self, obj: Any) -> Any:
        return self.shown(obj)

    def plain(self, value: Any) -> Any:
        return self.shown(value)


def _watched(world: McpWorld, tool: str, function):
    def watched(**arguments):
        return world._seen(tool, arguments, lambda: function(**arguments))
    watched.__name__ = watched.__qualname__ = function.__name__
    watched.__doc__ = function.__doc__
    return watched
