"""The service file: everything StateEval needs to know about one REST service, in TOML (docs/services.md).

`load(path)` reads and checks it into a frozen `ServiceFile`; a file that is wrong raises `ServiceFileError`, one
line naming the file, the key and the fix. Nothing here knows a particular service.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenarios.rest import draws

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

METHODS = ("GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE")
RESTART = "restart"
NAME = re.compile(r"[a-z][a-z0-9_]*")
FIELD_PATH = re.compile(r"[^.\s]+(\.[^.\s]+)*")  # volatile: dotted field names, `*` for any key or index
SHIPPED = Path(__file__).with_name("services")  # the service files that come with StateEval, by name
DEFAULT_READY_TIMEOUT_S = 30.0
DEFAULT_REQUEST_TIMEOUT_S = 30.0


class ServiceFileError(ValueError):
    """A service file that cannot be used; the message is one line: the file, the key, what is wrong, the fix."""


@dataclass(frozen=True)
class Request:
    """One request of the population: `body` is sent as JSON (None: no body); placeholders still undrawn. `named`:
    whether the setup block names what it makes (False: a program finds it only through a listing)."""

    method: str
    path: str
    body: Any = None
    named: bool = True


@dataclass(frozen=True)
class ServiceFile:
    path: Path  # the file itself; a relative `openapi` file is beside it
    name: str
    openapi: str  # a path on the running service ("/v1/__api__"), or a file name relative to the file's folder
    start: tuple[str, ...]  # argv, with {port}, {dir} and {python} still in it
    ready: str
    reset: str  # "restart", or "METHOD /path"
    headers: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    volatile: tuple[str, ...] = ()
    population: tuple[Request, ...] = ()
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S

    @property
    def spec_on_service(self) -> bool:
        """Whether `openapi` is a path on the running service rather than a file."""
        return self.openapi.startswith("/")

    @property
    def spec_file(self) -> Path:
        return self.path.parent / self.openapi

    @property
    def reset_request(self) -> tuple[str, str] | None:
        """(METHOD, path) of the reset request; None when the reset is a restart."""
        if self.reset == RESTART:
            return None
        method, path = self.reset.split()
        return method, path


def substitute(text: str, port: int, folder: str) -> str:
    """`text` with {port}, {dir} and {python} (this interpreter) filled in; other braces are left alone."""
    return text.replace("{port}", str(port)).replace("{dir}", folder).replace("{python}", sys.executable)


def shipped() -> list[str]:
    """The names of the service files that come with StateEval (scenarios/rest/services)."""
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


def load(path: str | Path) -> ServiceFile:
    """The service file at `path`, or the shipped one of that name, checked; ServiceFileError when it
    cannot be used."""
    path, raw = read_toml(path, SHIPPED, "service file")
    return _Checker(path, raw).service_file()


def read_toml(path: str | Path, folder: Path, kind: str) -> tuple[Path, dict]:
    """The file at `path`, or the one of that name in `folder` (the files shipped with StateEval), and its TOML;
    ServiceFileError, one line, when it cannot be read or is not TOML."""
    path = Path(path)
    names = sorted(p.stem for p in folder.glob("*.toml"))
    if not path.exists() and str(path) in names:
        path = folder / f"{path}.toml"
    try:
        return path, tomllib.loads(path.read_text())
    except OSError as e:
        raise ServiceFileError(f"{path}: cannot be read ({e.strerror}); give the path of a {kind}, or the name "
                               f"of one that comes with StateEval: {', '.join(names)}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ServiceFileError(f"{path}: not TOML ({e}); see docs/services.md for the format") from None


class _Checker:
    """Reads one key at a time out of the parsed TOML, failing with the file and key named."""

    KNOWN = ("name", "openapi", "start", "ready", "reset", "headers", "files", "include", "exclude", "volatile",
             "population", "ready_timeout_s", "request_timeout_s")

    def __init__(self, path: Path, raw: dict) -> None:
        self.path, self.raw = path, raw

    def fail(self, key: str, problem: str) -> ServiceFileError:
        return ServiceFileError(f"{self.path}: {key}: {problem}")

    def service_file(self) -> ServiceFile:
        unknown = sorted(set(self.raw) - set(self.KNOWN))
        if unknown:
            raise self.fail(unknown[0], f"unknown key; the keys are {', '.join(self.KNOWN)}")
        return ServiceFile(
            path=self.path, name=self.name(), openapi=self.openapi(), start=self.start(),
            ready=self.url_path("ready", self.text("ready")), reset=self.reset(),
            headers=self.table("headers"), files=self.files(), include=self.strings("include"),
            exclude=self.strings("exclude"), volatile=self.volatile(), population=self.population(),
            ready_timeout_s=self.seconds("ready_timeout_s", DEFAULT_READY_TIMEOUT_S),
            request_timeout_s=self.seconds("request_timeout_s", DEFAULT_REQUEST_TIMEOUT_S))

    def text(self, key: str, value: Any = None, example: str = "") -> str:
        if key not in self.raw and value is None:
            raise self.fail(key, "missing; it is required (see docs/services.md)")
        value = self.raw[key] if value is None else value
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"must be a non-empty string{example}, not {value!r}")
        return value

    def url_path(self, key: str, value: str) -> str:
        if not value.startswith("/"):
            raise self.fail(key, f"{value!r} is not a path on the service: start it with /, e.g. \"/health\"")
        return value

    def name(self) -> str:
        value = self.text("name")
        if not NAME.fullmatch(value):
            raise self.fail("name", f"{value!r} is not a lower-case identifier: use letters, digits and _, "
                                    f"starting with a letter, e.g. \"my_service\"")
        return value

    def openapi(self) -> str:
        value = self.text("openapi", example=' (a path on the service such as "/openapi.json", or a file)')
        if not value.startswith("/") and not (self.path.parent / value).is_file():
            raise self.fail("openapi", f"no file {self.path.parent / value}; name a file beside the service file, "
                                       f"or a path on the service starting with /")
        return value

    def start(self) -> tuple[str, ...]:
        value = self.raw.get("start")
        if not isinstance(value, list) or not value or not all(isinstance(a, str) and a for a in value):
            raise self.fail("start", 'must be the command as a list of strings, e.g. ["{python}", "-m", "myservice", '
                                     '"--port", "{port}"]')
        return tuple(value)

    def reset(self) -> str:
        value = self.text("reset", example=f' ("POST /reset" or "{RESTART}")')
        parts = value.split()
        if value != RESTART and (len(parts) != 2 or parts[0] not in METHODS or not parts[1].startswith("/")):
            raise self.fail("reset", f"{value!r} is neither \"{RESTART}\" nor \"METHOD /path\" with METHOD one of "
                                     f"{', '.join(METHODS)}")
        return value

    def table(self, key: str) -> dict[str, str]:
        value = self.raw.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self.fail(key, f"must be a table of strings, e.g. [{key}] then name = \"text\"")
        return dict(value)

    def files(self) -> dict[str, str]:
        value = self.table("files")
        for name in value:
            if "/" in name or name in (".", "..") or name.startswith("."):
                raise self.fail(f"files.{name}", "must be a plain file name (it is written into {dir}), "
                                                 "e.g. \"service.ini\"")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(key, f"must be a list of non-empty strings, e.g. {key} = [\"get_items\", \"DELETE /*\"]")
        return tuple(value)

    def volatile(self) -> tuple[str, ...]:
        value = self.strings("volatile")
        for item in value:
            if not FIELD_PATH.fullmatch(item):
                raise self.fail("volatile", f"{item!r} is not a dotted field path such as \"data.last_modified\" "
                                            f"or \"items.*.etag\"")
        return value

    def population(self) -> tuple[Request, ...]:
        value = self.raw.get("population", [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail("population", "must be a list of tables: [[population]] then method, path, body and "
                                          "named")
        requests = tuple(self.request(f"population[{i}]", item) for i, item in enumerate(value))
        try:
            draws.check([[r.path, r.body] for r in requests])
        except draws.DrawError as e:
            raise self.fail("population", f"{e}") from None
        return requests

    def request(self, key: str, item: dict) -> Request:
        unknown = sorted(set(item) - {"method", "path", "body", "named"})
        if unknown:
            raise self.fail(f"{key}.{unknown[0]}", "unknown key; a request has method, path, body and named")
        named = item.get("named", True)
        if not isinstance(named, bool):
            raise self.fail(f"{key}.named", f"must be true or false, not {named!r}")
        method = self.text(f"{key}.method", item.get("method", ""), example=' such as "POST"')
        if method not in METHODS:
            raise self.fail(f"{key}.method", f"{method!r} is not one of {', '.join(METHODS)}")
        path = self.url_path(f"{key}.path", self.text(f"{key}.path", item.get("path", ""), example=' such as "/items"'))
        return Request(method, path, item.get("body"), named)

    def seconds(self, key: str, default: float) -> float:
        value = self.raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise self.fail(key, f"must be a positive number of seconds, not {value!r}")
        return float(value)
