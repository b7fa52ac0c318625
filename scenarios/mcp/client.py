"""One running MCP server, driven synchronously: the official SDK's stdio client on an event loop of its own thread.

`Server(file).start()` starts the file's `command` in a fresh private folder (`{dir}`), initializes a session and
lists the tools; `call(name, arguments)` answers an `Answer`; `reset(seed)` empties it (a restart in a fresh folder,
or the file's reset call) and sends the population drawn from `seed`. The builder uses one to probe a server
(`scenarios.mcp.model`), a sandbox worker one per worker (`scenarios.mcp.world`).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios.mcp.serverfile import ServerFile, ToolCall, expand_call
from scenarios.rest.servicefile import RESTART

TAIL_CHARS = 600  # of what the server printed, in a failure's message


class ServerError(RuntimeError):
    """A server that cannot be started or stopped answering: one line, with what it printed last."""


@dataclass(frozen=True)
class Answer:
    """A tool's answer as a program sees it: its structured content when the tool gives one, else its text parsed as
    JSON, else the text; `error`: the tool reported an error (`isError`), and `text` says which."""

    value: Any
    error: bool = False
    text: str = ""

    def to_plain(self) -> dict:
        return {"error": self.error, "value": self.value} if not self.error else {"error": True, "text": self.text}


def private(answer: Answer, folder: Path | None) -> Answer:
    """`answer` with the instance's private folder written `{dir}`: where the server shows a path in it (an error
    naming a file, a listing of allowed folders), every instance shows the same text."""
    if folder is None or str(folder) not in json.dumps(answer.value) + answer.text:
        return answer
    value = json.loads(json.dumps(answer.value).replace(json.dumps(str(folder))[1:-1], "{dir}"))
    return Answer(value, answer.error, answer.text.replace(str(folder), "{dir}"))


def answer_of(result) -> Answer:
    """An `Answer` from the SDK's CallToolResult."""
    text = "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
    if result.is_error:
        return Answer(None, True, text)
    if result.structured_content is not None:
        return Answer(result.structured_content, False, text)
    try:
        return Answer(json.loads(text), False, text)
    except ValueError:
        return Answer(text if text else None, False, text)


def contents_of(result) -> Answer:
    """An `Answer` from the SDK's ReadResourceResult: each text content parsed as JSON, else kept as text; the one
    content's value, or the list of them."""
    texts = [getattr(c, "text", None) for c in getattr(result, "contents", [])]
    values = []
    for text in texts:
        try:
            values.append(json.loads(text) if text is not None else None)
        except ValueError:
            values.append(text)
    return Answer(values[0] if len(values) == 1 else values, False, "".join(t or "" for t in texts))


class _Instance:
    """One process of the server and its session, on an event loop of its own thread."""

    def __init__(self, file: ServerFile):
        self.file = file
        self.folder: Path | None = None
        self.tools: list[dict] = []  # as listed: name, description, inputSchema, outputSchema, annotations
        self.loop = asyncio.new_event_loop()
        self.session = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.log = tempfile.TemporaryFile(mode="w+", prefix="stateeval-mcp-")
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "_Instance":
        self.folder = Path(tempfile.mkdtemp(prefix=f"stateeval-{self.file.name}-"))
        for name, text in self.file.files.items():
            (self.folder / name).write_text(self.file.substitute(text, str(self.folder)))
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True, name=f"mcp-{self.file.name}")
        self._thread.start()
        if not ready.wait(self.file.ready_timeout_s) or self.error is not None:
            failure, tail = self.error, self.tail()
            self.stop()
            why = f"{type(failure).__name__}: {failure}" if failure is not None else \
                f"no answer to initialize within {self.file.ready_timeout_s:g} s"
            raise ServerError(f"the MCP server {self.file.name} did not start ({why}); command "
                              f"{' '.join(self.argv())}; it printed: {tail or '(nothing)'}")
        return self

    def argv(self) -> list[str]:
        return [self.file.substitute(a, str(self.folder)) for a in self.file.command]

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve(ready))
        except BaseException as e:  # noqa: BLE001 - reported by start() or the next call
            self.error = e
        finally:
            self.session = None
            self.done.set()
            ready.set()

    async def _serve(self, ready: threading.Event) -> None:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

        argv = self.argv()
        env = {**get_default_environment(), **{k: self.file.substitute(v, str(self.folder))
                                               for k, v in self.file.env.items()}}
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(self.folder))
        self._stop = asyncio.Event()
        async with stdio_client(params, errlog=self.log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                self.tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
                self.session = session
                ready.set()
                await self._stop.wait()

    def alive(self) -> bool:
        return self.session is not None and not self.done.is_set()

    def stop(self) -> None:
        if self._thread is not None:
            if self._stop is not None and not self.done.is_set():
                self.loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)
            if not self._thread.is_alive():
                self.loop.close()
        self._thread = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        self.log.close()

    def tail(self) -> str:
        try:
            self.log.flush()
            self.log.seek(0, os.SEEK_END)
            size = self.log.tell()
            self.log.seek(max(0, size - TAIL_CHARS))
            return " ".join(self.log.read().split())
        except (OSError, ValueError):
            return ""


class Server:
    """The running server: its current instance, and (when its reset is a restart) a spare one started in the
    background at each reset, which the next reset takes, so that a restart costs little more than a reset call."""

    def __init__(self, file: ServerFile):
        self.file = file
        self._now: _Instance | None = None
        self._spare: tuple[_Instance, threading.Thread] | None = None
        self._last_tail = ""

    @property
    def tools(self) -> list[dict]:
        return self._now.tools if self._now is not None else []

    @property
    def folder(self) -> Path | None:
        return self._now.folder if self._now is not None else None

    def start(self) -> "Server":
        self._now = _Instance(self.file).start()
        return self

    def stop(self) -> None:
        if self._spare is not None:
            self._spare[1].join()
            self._spare[0].stop()
            self._spare = None
        if self._now is not None:
            self._last_tail = self._now.tail()
            self._now.stop()
            self._now = None

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def alive(self) -> bool:
        return self._now is not None and self._now.alive()

    def tail(self) -> str:
        return self._now.tail() if self._now is not None else self._last_tail

    def _restart(self) -> None:
        old, spare, self._spare = self._now, self._spare, None
        if spare is not None:
            spare[1].join()
        if spare is not None and spare[0].alive():
            self._now = spare[0]
        else:
            if spare is not None:
                spare[0].stop()
            self._now = _Instance(self.file).start()
        if old is not None:
            threading.Thread(target=old.stop, daemon=True).start()
        self._spare = self._start_spare()

    def _start_spare(self) -> tuple[_Instance, threading.Thread]:
        spare = _Instance(self.file)

        def start() -> None:
            try:
                spare.start()
            except ServerError:
                pass  # the next restart starts one in the foreground, and says why if that fails too
        thread = threading.Thread(target=start, daemon=True)
        thread.start()
        return spare, thread

    # ---- calls

    def call(self, name: str, arguments: dict) -> Answer:
        """The tool's answer; ServerError when the server no longer answers."""
        return self._ask(lambda session: session.call_tool(name, arguments), name, answer_of)

    def read_resource(self, uri: str) -> Answer:
        """A resource's contents as an Answer: its text parsed as JSON, else the text (several contents: a list);
        an error answer when the server refuses to read it."""
        return self._ask(lambda session: session.read_resource(uri), f"the resource {uri}", contents_of)

    def _ask(self, request, what: str, read) -> Answer:
        """`read` of what `request(session)` gets from the running instance, with the instance's folder written
        `{dir}`; a protocol error (an unknown tool or resource, invalid arguments) is an error answer."""
        now = self._now
        if now is None or not now.alive():
            raise ServerError(f"the MCP server {self.file.name} is not running; it printed: {self.tail()}")
        future = asyncio.run_coroutine_threadsafe(request(now.session), now.loop)
        try:
            result = future.result(self.file.call_timeout_s)
        except TimeoutError:
            future.cancel()
            raise ServerError(f"the MCP server {self.file.name} did not answer {what} within "
                              f"{self.file.call_timeout_s:g} s (call_timeout_s)") from None
        except Exception as e:  # noqa: BLE001 - a protocol error is an answer
            if not now.alive():
                raise ServerError(f"the MCP server {self.file.name} stopped during {what}: {e}; it printed: "
                                  f"{now.tail()}") from None
            return Answer(None, True, f"{type(e).__name__}: {e}")
        return private(read(result), now.folder)

    def reset(self, seed: int | None = None) -> list[tuple[ToolCall, dict, Answer]]:
        """Empty the server (a restart in a fresh folder, or the file's reset call), then send the population drawn
        from `seed` (none when None): (call, drawn arguments, answer) of each."""
        if self.file.reset == RESTART or not self.alive():
            self._restart()
        else:
            answer = self.call(self.file.reset.tool, self.file.reset.arguments)
            if answer.error:
                raise ServerError(f"the MCP server {self.file.name} refused its reset call "
                                  f"{self.file.reset.tool}: {answer.text}")
        if seed is None:
            return []
        sent = []
        for call, arguments in population(self.file, seed):
            answer = self.call(call.tool, arguments)
            if answer.error:
                raise ServerError(f"the MCP server {self.file.name} refused population call {call.tool} "
                                  f"{json.dumps(arguments)}: {answer.text}; fix the server file's population")
            sent.append((call, arguments, answer))
        return sent


def population(file: ServerFile, seed: int) -> list[tuple[ToolCall, dict]]:
    """The population's calls with their arguments drawn from `seed`."""
    rng, labels = random.Random(seed), {}
    return [(call, expand_call(call, rng, labels)) for call in file.population]
