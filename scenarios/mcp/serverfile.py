"""The server file: everything StateEval needs to know about one MCP server, in TOML (docs/services.md, "MCP
servers").

The same form as a REST service's file, with `command` (the argv that starts the server on stdio) in place of
`start`, `openapi` and `ready`, and tool calls in place of requests. `load(path)` reads and checks it into a frozen
`ServerFile`; a file that is wrong raises `ServiceFileError`, one line naming the file, the key and the fix. Nothing
here knows a particular server.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenarios.rest import draws
from scenarios.rest import servicefile
from scenarios.rest.servicefile import RESTART

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

SHIPPED = Path(__file__).with_name("servers")  # the server files that come with StateEval, by name
DEFAULT_READY_TIMEOUT_S = 30.0
DEFAULT_CALL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the population or the reset: `arguments` with its placeholders still undrawn. `named`:
    whether the setup block names the values it makes (False: a program finds them only through a reader)."""

    tool: str
    arguments: dict = field(default_factory=dict)
    named: bool = True


@dataclass(frozen=True)
class ServerFile:
    path: Path  # the file itself; {here} is its folder
    name: str
    command: tuple[str, ...]  # argv, with {dir}, {here} and {python} still in it
    reset: str | ToolCall  # RESTART (a fresh server in a fresh folder), or a tool call that empties the server
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    volatile: tuple[str, ...] = ()
    population: tuple[ToolCall, ...] = ()
    readers: tuple[ToolCall, ...] = ()  # the calls whose answers are the final state; () = the tools found alone
    resources: tuple[str, ...] = ()  # resource URIs whose contents are part of the final state, after the readers'
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    here: Path | None = None  # {here} when not the file's folder: a dataset's copy runs what the original named

    def substitute(self, text: str, folder: str) -> str:
        """`text` with {dir} (the instance's private folder), {here} (this file's folder) and {python} filled in."""
        here = self.here if self.here is not None else self.path.parent.resolve()
        return (text.replace("{dir}", folder).replace("{here}", str(here))
                .replace("{python}", sys.executable))


def is_server_file(path: str | Path) -> bool:
    """Whether a TOML file is an MCP server's (it has `command`) rather than a REST service's; False when it cannot
    be read (the REST loader then says why)."""
    try:
        return "command" in tomllib.loads(Path(path).read_text())
    except (OSError, ValueError):
        return False


def shipped() -> list[str]:
    """The names of the server files that come with StateEval (scenarios/mcp/servers)."""
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


def load(path: str | Path) -> ServerFile:
    """The server file at `path`, or the shipped one of that name, checked; ServiceFileError when it cannot be
    used."""
    path, raw = servicefile.read_toml(path, SHIPPED, "server file")
    return _Checker(path, raw).server_file()


class _Checker(servicefile._Checker):
    """The service file's checker for the keys both kinds of file share, with a server file's own keys."""

    KNOWN = ("name", "command", "env", "files", "reset", "include", "exclude", "volatile", "population", "readers",
             "ready_timeout_s", "call_timeout_s")

    def server_file(self) -> ServerFile:
        unknown = sorted(set(self.raw) - set(self.KNOWN))
        if unknown:
            raise self.fail(unknown[0], f"unknown key; the keys of a server file are {', '.join(self.KNOWN)}")
        return ServerFile(
            path=self.path, name=self.name(), command=self.command(), reset=self.reset(), env=self.table("env"),
            files=self.files(), include=self.strings("include"), exclude=self.strings("exclude"),
            volatile=self.volatile(), population=self.population(), readers=self.readers(),
            resources=self.resources(),
            ready_timeout_s=self.seconds("ready_timeout_s", DEFAULT_READY_TIMEOUT_S),
            call_timeout_s=self.seconds("call_timeout_s", DEFAULT_CALL_TIMEOUT_S))

    def command(self) -> tuple[str, ...]:
        value = self.raw.get("command")
        if not isinstance(value, list) or not value or not all(isinstance(a, str) and a for a in value):
            raise self.fail("command", 'must be the command that serves MCP on stdio, as a list of strings, e.g. '
                                       '["node", "{here}/node_modules/my-server/dist/index.js"]')
        return tuple(value)

    def reset(self) -> str | ToolCall:
        value = self.raw.get("reset", RESTART)
        if value == RESTART:
            return RESTART
        if isinstance(value, dict):
            return self.call("reset", value, named=False)
        raise self.fail("reset", f"{value!r} is neither \"{RESTART}\" (a fresh server in a fresh {{dir}}) nor a tool "
                                 "call such as { tool = \"clear\", arguments = {} }")

    def population(self) -> tuple[ToolCall, ...]:
        value = self.raw.get("population", [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail("population", "must be a list of tables: [[population]] then tool, arguments and named")
        calls = tuple(self.call(f"population[{i}]", item) for i, item in enumerate(value))
        try:
            draws.check([c.arguments for c in calls])
        except draws.DrawError as e:
            raise self.fail("population", f"{e}") from None
        return calls

    def readers(self) -> tuple[ToolCall, ...]:
        value = self.raw.get("readers", [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail("readers", "must be a list of tables: [[readers]] then tool and arguments, or resource")
        calls = tuple(self.call(f"readers[{i}]", item, named=False) for i, item in enumerate(value)
                      if "resource" not in item)
        for i, call in enumerate(calls):
            if re.search(r"\{(dir|here|python|draw:[^}]*)\}", json.dumps(call.arguments)):
                raise self.fail(f"readers[{i}].arguments", "a program sends these arguments too: give literal values, "
                                                           "no {dir} or {draw:...} (a path relative to the server's "
                                                           "folder, such as \".\", where the server takes one)")
        if len({c.tool for c in calls}) < len(calls):
            raise self.fail("readers", "names a tool twice: one call per reader tool")
        return calls

    def resources(self) -> tuple[str, ...]:
        """The readers given as `resource = "uri"`: state a server shows as MCP resources rather than tools."""
        uris = []
        for i, item in enumerate(self.raw.get("readers", [])):
            if "resource" in item:
                uri = item["resource"]
                if set(item) != {"resource"} or not isinstance(uri, str) or "://" not in uri:
                    raise self.fail(f"readers[{i}].resource", "a resource reader is one URI alone, e.g. "
                                                              "resource = \"notes://all\"")
                uris.append(uri)
        if len(set(uris)) < len(uris):
            raise self.fail("readers", "names a resource twice: one reader per resource")
        return tuple(uris)

    def call(self, key: str, item: dict, named: bool | None = None) -> ToolCall:
        unknown = sorted(set(item) - {"tool", "arguments", "named"} - ({"named"} if named is None else set()))
        if unknown or (named is not None and "named" in item):
            raise self.fail(f"{key}.{(unknown or ['named'])[0]}", "unknown key; a tool call has tool and arguments"
                                                                 + (" and named" if named is None else ""))
        tool = item.get("tool")
        if not isinstance(tool, str) or not tool:
            raise self.fail(f"{key}.tool", f"must name the tool to call, not {tool!r}")
        arguments = item.get("arguments", {})
        if not isinstance(arguments, dict):
            raise self.fail(f"{key}.arguments", "must be a table of the tool's arguments, e.g. "
                                                "arguments = { name = \"{draw:word}\" }")
        flag = item.get("named", True) if named is None else named
        if not isinstance(flag, bool):
            raise self.fail(f"{key}.named", f"must be true or false, not {flag!r}")
        return ToolCall(tool, arguments, flag)



def expand_call(call: ToolCall, rng, labels: dict) -> dict:
    """A tool call's arguments with its placeholders drawn (`scenarios.rest.draws`)."""
    drawn: Any = draws.expand(call.arguments, rng, labels)
    return drawn
