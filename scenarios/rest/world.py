"""The sandbox side of a scenario derived from a service file: one instance of the service per worker.

Life cycle (see `core.sandbox.worker`): the worker creates this world once, which starts the service and probes it
(`scenarios.rest.model.probe`: where each creator's new id is); `reset(case)` empties it and sends the population
drawn from the test case's seed; `namespace(case)` gives the child `service_url()` and `service_headers()` (what the
setup block's `BASE_URL` and `HEADERS` come from) and watches its requests, so that the ids the service makes are
known; `snapshot` reads the final state through the document's readers (GET operations), crawling from the
resources the population and the program made and those the listings show.

Values the service makes up (ids, timestamps) differ from one run to the next. RESULT, the trace and the final state
are therefore given with them replaced (`Masker`): the ids creators made, numbered in the order they were made
(`<made-1>`, ...), then UUID-looking strings, the file's `volatile` fields and the fields the world learned are made
up (those the readers answer differently after two fresh resets to the same population, found when the world
starts), numbered as they appear; dates and
epoch times are erased (`<volatile>`). Two runs that differ only by one consistent renaming of those values give the
same data, and no made-up value reaches a stored oracle.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import requests  # imported once here so that every forked child finds it loaded

from scenarios.base import World, canonicalize
from scenarios.calling import Tools, Tracer
from scenarios.rest.model import Model, answer_body, path_parameters, probe, resource, seed_of, template_match
from scenarios.rest.process import Service
from scenarios.rest.servicefile import ServiceFile
from scenarios.rest.tools import kept_operations, tool_spec

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
EPOCHS = ((1_000_000_000, 4_000_000_000), (1_000_000_000_000, 4_000_000_000_000))  # seconds, milliseconds
ERASED = "<volatile>"
MIN_EMBEDDED = 6  # a made-up value this long or longer is also replaced inside longer strings (a path)
ERROR_STATUS = 400
MAX_READS = 200  # reader requests of one snapshot
TOOL_TIMEOUT_S = 30  # one tool call's request


class Masker:
    """Replaces made-up values in plain data (see the module docstring)."""

    def __init__(self, made: list[str], volatile: tuple[str, ...], keep: frozenset[str] = frozenset()):
        self.keep = keep  # values the client chose (the population's): never renamed
        self.names: dict[str, str] = {}
        for value in made:
            self._name(value)
        self.volatile = [tuple(p.split(".")) for p in volatile]

    def _name(self, value: str) -> str:
        if value not in self.names:
            self.names[value] = f"<made-{len(self.names) + 1}>"
        return self.names[value]

    def __call__(self, plain: Any, at: tuple[str, ...] = ()) -> Any:
        if isinstance(plain, dict):
            return {k: self(v, at + (k,)) for k, v in sorted(plain.items())}
        if isinstance(plain, list):
            return [self(v, at + ("*",)) for v in plain]
        if isinstance(plain, bool) or plain is None:
            return plain
        if isinstance(plain, int):
            if any(low <= plain < high for low, high in EPOCHS) or self._volatile(at):
                return ERASED
            return plain
        if isinstance(plain, str):
            if plain in self.names or (plain not in self.keep and (UUID.fullmatch(plain) or self._volatile(at))):
                return self._name(plain)
            if DATE.fullmatch(plain):
                return ERASED
            for value, name in self.names.items():
                if len(value) >= MIN_EMBEDDED and value in plain:
                    plain = plain.replace(value, name)
            return UUID.sub(lambda m: self._name(m.group()), plain)
        return plain

    def _volatile(self, at: tuple[str, ...]) -> bool:
        for pattern in self.volatile:
            if len(pattern) <= len(at) and all(p in ("*", a) for p, a in zip(pattern, at[len(at) - len(pattern):])):
                return True
        return False


class RestWorld(World):
    def __init__(self, file: ServiceFile) -> None:
        self.file = file
        self.service = Service(file).start()
        try:
            self.model: Model = probe(file, self.service, self.service.operations())
        except BaseException:
            self.service.stop()
            raise
        self.seed = 0
        self.population_made: list[list] = []  # [resource, value, parent values] of what the population made
        self.made: list[list] = []  # the same, in the child: the population's, then the program's
        self._recorder = None
        self._tools: Tools | None = None  # built at the first call (`tools`), in the worker
        self._ops: dict = {}
        self.learned: tuple[str, ...] = ()
        try:
            self.learned = self._learn()  # fields made up that the file's `volatile` may not name
        except BaseException:
            self.service.stop()
            raise

    # ---- the worker's side

    def reset(self, case: dict) -> None:
        if not self.intact():  # it died (see `failure`): started again, on the same port, in a fresh folder
            self.service.stop()
            self.service.start()
        self.seed = seed_of(case)
        answers = self.service.reset(self.seed)
        made = []
        for item, answer in zip(self.file.population, answers):
            op = self.model.operation_for(item.method, urlsplit(answer.url).path)
            made += self._made(op, urlsplit(answer.url).path, answer_body(answer))
        self.population_made = made

    def intact(self) -> bool:
        return self.service.process is not None and self.service.process.poll() is None

    def failure(self) -> str | None:
        process = self.service.process
        if process is None or process.poll() is None:
            return None  # never started, or stopped: the error that said so is the reason
        return (f"the service {self.file.name} exited with status {process.returncode} during the job; it printed: "
                f"{self.service.tail()}")

    def reset_between(self, case: dict) -> bool:
        if self.file.reset_request is None:
            return False  # a restart puts the service on another port
        self.reset(case)
        return not self.population_made  # the waiting child would not know the population's new ids

    def close(self) -> None:
        self.service.stop()

    # ---- the child's side

    def namespace(self, case: dict) -> dict:
        url, headers = self.service.url, dict(self.file.headers)
        self.seed = seed_of(case)  # (in a batch's child, the world it copied was reset for an earlier test case)
        self.made = [list(m) for m in self.population_made]
        world = self
        original = requests.Session.request

        def request(session, method, url, *args, **kwargs):
            response = original(session, method, url, *args, **kwargs)
            try:
                world._seen(str(method).upper(), str(url), kwargs.get("json"), response)
            except Exception:  # noqa: BLE001 - watching never changes what the program sees
                pass
            return response

        requests.Session.request = request

        def service_url() -> str:
            """The base URL of the service for this test case."""
            return url

        def service_headers() -> dict:
            """The headers every request to the service sends (a copy)."""
            return dict(headers)

        return {"service_url": service_url, "service_headers": service_headers}

    def _made(self, op, path: str, answer: Any) -> list[list]:
        if op is None:
            return []
        values = self.model.made_in_answer(op, answer)
        made = self.model.creates(op)
        return [[made, v, template_match(op.path, path) or []] for v in values]

    def _seen(self, method: str, target: str, body: Any, response) -> None:
        path = urlsplit(target).path
        op = self.model.operation_for(method, path)
        answer = answer_body(response)
        if 200 <= response.status_code < 300:
            self.made += self._made(op, path, answer)
        if self._recorder is None or op is None:
            return
        args = dict(zip(path_parameters(op), template_match(op.path, path) or []))
        if body is not None:
            args["body"] = body
        status = response.status_code
        self._recorder.run(f"{op.method} {op.path}", lambda: args,
                           lambda: {"status": status, "body": answer})

    def record_calls(self, namespace: dict, recorder) -> None:
        self._recorder = recorder

    # ---- tool calling (`--mode tools`): each kept operation is a tool (`scenarios.rest.tools.tool_spec`)

    def tools(self) -> Tools:
        if self._tools is None:

            self._ops = {op.id: op for op in kept_operations(self.model)}
            self._tools = Tools({name: tool_spec(op, self.model) for name, op in self._ops.items()}, self._call,
                                self.canonical, frozenset({"BASE_URL", "HEADERS"}))
        return self._tools

    def _call(self, namespace: dict, name: str, arguments: dict):
        """Send the operation's request with the file's headers; a path parameter may also be a made-up value as
        the answers show it (`<made-2>`), which stands for the value it replaced in this run."""
        op = self._ops[name]
        real = {shown: value for value, shown in self.masker(self.made).names.items()}
        path = op.path
        for p in path_parameters(op):
            if p not in arguments:
                raise ValueError(f"missing path parameter {p!r}")
            value = real.get(arguments[p], arguments[p]) if isinstance(arguments[p], str) else arguments[p]
            path = path.replace("{" + p + "}", quote(str(value), safe=""), 1)
        query = {p.name: arguments[p.name] for p in op.parameters if p.location == "query" and p.name in arguments}
        body = arguments.get("body") if "body" in self._tools.specs[name].parameters["properties"] else None
        response = requests.request(op.method, namespace["service_url"]() + path, params=query or None, json=body,
                                    headers=namespace["service_headers"](), timeout=TOOL_TIMEOUT_S)
        return {"status": response.status_code, "body": answer_body(response)}

    def trace_as_tools(self, namespace: dict, tracer: Tracer) -> None:
        """The reference's `requests` calls, matched to the operation their method and path name. Ids come back
        as copies parsed out of the answers, so the tracer names arguments and RESULT items by equal value."""
        specs = self.tools().specs
        tracer.by_value = True
        for method in ("get", "post", "put", "patch", "delete"):
            original = getattr(requests, method)

            def traced(url, *args, _method=method.upper(), _original=original, **kwargs):
                response = _original(url, *args, **kwargs)
                path = urlsplit(url).path
                op = self.model.operation_for(_method, path)
                if op is None or op.id not in specs:
                    raise ValueError(f"{_method} {path} is no operation served as a tool")
                arguments = dict(zip(path_parameters(op), map(unquote, template_match(op.path, path) or [])))
                arguments.update(kwargs.get("params") or {})
                if kwargs.get("json") is not None:
                    arguments["body"] = kwargs["json"]
                tracer.record(specs[op.id], arguments, {"status": response.status_code,
                                                       "body": answer_body(response)})
                return response

            setattr(requests, method, traced)

    def masker(self, made: list[list]) -> Masker:
        chosen = frozenset(str(value) for _, value, _ in self.model.population_values(self.seed))
        return Masker([str(m[1]) for m in made], self.file.volatile + self.learned, chosen)

    def canonical(self, obj: Any) -> Any:
        return self.masker(self.made)(canonicalize(obj, self.canonical_leaf))

    def recorded(self, namespace: dict) -> Any:
        return {"made": self.made}

    def snapshot(self, recorded: Any) -> Any:
        """The answers of the readers, crawled from the known resources: [path, status, answer] in the order read,
        made-up values replaced."""
        made = [m for m in (recorded or {}).get("made", []) if isinstance(m, list) and len(m) == 3]
        return self.masker(made)(self._reads(made))

    def _learn(self) -> tuple[str, ...]:
        """The fields of the readers' answers that differ between two fresh resets to the same population: made up
        by the service, whatever they look like (as dotted paths, `*` for any list item)."""
        runs = []
        for _ in range(2):
            self.reset({"assets": []})
            runs.append(self._reads([list(m) for m in self.population_made]))
        found: set[str] = set()
        if len(runs[0]) == len(runs[1]):
            for (_, _, a), (_, _, b) in zip(*runs):
                _differences(a, b, (), found)
        return tuple(sorted(found))

    def _reads(self, made: list[list]) -> list:
        """The readers' answers, raw (see `snapshot`)."""
        known: dict[str, list[tuple[str, list[str]]]] = {}

        def know(res: str, value: str, parents: list[str]) -> None:
            entry = (str(value), [str(p) for p in parents])
            if entry not in known.setdefault(res, []):
                known[res].append(entry)

        for res, value, parents in self.model.population_values(self.seed):
            know(res, value, parents)
        for res, value, parents in made:
            know(str(res), value, list(parents))
        reads = []
        readers = sorted((op for op in self.model.operations if op.method == "GET"),
                         key=lambda op: len(path_parameters(op)))
        for op in readers:
            params = path_parameters(op)
            targets = [[]] if not params else [[*parents, value] for value, parents in
                                                known.get(resource(op.path, len(params) - 1), [])
                                                if len(parents) == len(params) - 1]
            listing = self.model.listings.get(op.id)
            key = self.model.id_key(resource(op.path) + "/{}")
            for values in targets:
                if len(reads) >= MAX_READS:
                    break
                path = op.path
                for name, v in zip(params, values):
                    path = path.replace("{" + name + "}", v, 1)
                answer = self.service.request("GET", path)
                body = answer_body(answer)
                reads.append([path, answer.status_code, body])
                if listing is not None and answer.status_code < ERROR_STATUS:
                    for item in _items(body, listing):
                        if isinstance(item.get(key), (str, int)) and not isinstance(item.get(key), bool):
                            know(resource(op.path) + "/{}", item[key], values)
        return reads


def _differences(a: Any, b: Any, at: tuple[str, ...], found: set[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in set(a) & set(b):
            _differences(a[key], b[key], at + (key,), found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for x, y in zip(a, b):
            _differences(x, y, at + ("*",), found)
    elif a != b and at:
        found.add(".".join(at))


def _items(body: Any, where: list[str]) -> list[dict]:
    """The items of a listing, at the keys the probe found (`Model.listings`)."""
    for key in where:
        body = body.get(key) if isinstance(body, dict) else None
    return [x for x in body if isinstance(x, dict)] if isinstance(body, list) else []
