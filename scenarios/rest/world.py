"""The sandbox side of a scenario derived from a service file: one instance of the service per worker.

Life cycle (see `core.sandbox.worker`): the worker creates this world once, which starts the service, probes it
(`scenarios.rest.model.probe`: where each creator's new id is) and puts a recording proxy in front of it
(`scenarios.rest.proxy`); `reset(case)` empties the service and sends the population drawn from the test case's
seed; `namespace(case)` gives the child `service_url()` (the proxy's address) and `service_headers()` (what the
setup block's `BASE_URL` and `HEADERS` come from); `outcome`, in the worker once the program is done, takes the
ids the service made from the proxy's record and reads the final state through the document's readers (GET
operations), crawling from the resources the population and the program made and those the listings show.

Values the service makes up (ids, timestamps) differ from one run to the next. RESULT, the trace and the final state
are therefore given with them replaced (`Masker`): the ids creators made, numbered in the order they were made
(`<made-1>`, ...), then UUID-looking strings, the file's `volatile` fields and the fields learned to be made up
(those the readers answer differently after fresh resets to the same population: `learn`, run once by the build,
whose answer the dataset ships and every worker reads), numbered as they appear; dates and epoch times are erased
(`<volatile>`). Two runs that differ only by one consistent renaming of those values give the same data, and no
made-up value reaches a stored oracle.

What decides a verdict is the worker's alone: RESULT comes from the child as plain data with nothing renamed, and
the worker renames it and the final state with the ids of its own record (`outcome`). The child keeps a view of its
own requests (`_seen`, by patching `requests`) only to show answers to a model with ids renamed (tools mode) and for
the trace the diagnosis reads; a program that changes that view changes no verdict. A string in RESULT or in the
service's answers that looks like a renamed value (`<made-1>`) is written `<literal made-1>` first, so that a
program cannot spell out the names the reference's values get.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import requests  # imported once here so that every forked child finds it loaded

from scenarios.base import World, canonicalize
from scenarios.calling import Tools, Tracer, answer_body
from scenarios.rest.model import Model, path_parameters, probe, resource, seed_of, template_match
from scenarios.rest.process import Service
from scenarios.mutants import http_resolver
from scenarios.rest.proxy import Exchange, Proxy
from scenarios.rest.learned import made_up
from scenarios.rest.servicefile import ServiceFile
from scenarios.rest.tools import documentation, header_arguments, kept_operations, tool_spec

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
EPOCHS = ((1_000_000_000, 4_000_000_000), (1_000_000_000_000, 4_000_000_000_000))  # seconds, milliseconds
ERASED = "<volatile>"
MIN_EMBEDDED = 6  # a made-up value this long or longer is also replaced inside longer strings (a path)
ERROR_STATUS = 400
MAX_READS = 200  # reader requests of one snapshot
TOOL_TIMEOUT_S = 30  # one tool call's request
LEARN_RUNS = 3  # fresh resets whose readers' answers `learn` compares
NAMED = re.compile(r"<(made-\d+|volatile)>")  # what a renamed value looks like


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
        if isinstance(plain, str) and "<" in plain:
            plain = NAMED.sub(r"<literal \1>", plain)  # never the name a made-up value gets
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
        self.proxy: Proxy | None = None
        try:
            self.model: Model = probe(file, self.service, self.service.operations())
            self.seed = 0
            self.population_made: list[list] = []  # [resource, value, parent values] of what the population made
            self.made: list[list] = []  # the child's view: the population's, then what its own requests saw made
            self._recorder = None
            self._tools: Tools | None = None  # built at the first call (`tools`), in the worker
            self._ops: dict = {}
            # The fields the service makes up that the file's `volatile` may not name: as the build learned them
            # (shipped with the dataset), else learned here.
            shipped = made_up(file.name)
            self.learned: tuple[str, ...] = shipped if shipped is not None else learn(self.service, self.model)
            self.proxy = Proxy(self.service.port, file.request_timeout_s)
        except BaseException:
            self.close()
            raise

    # ---- the worker's side

    def reset(self, case: dict) -> None:
        if self.proxy is not None:
            self.proxy.close()  # what an earlier program sent is answered before the service is emptied
        if not self.intact():  # it died (see `failure`): started again, on the same port, in a fresh folder
            self.service.stop()
            self.service.start()  # behind the same proxy
        self.seed = seed_of(case)
        self.population_made = populate(self.service, self.model, self.seed)
        if self.proxy is not None:
            self.proxy.open()

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
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        self.service.stop()

    def mutate(self, mutant) -> None:
        """A world mutant is applied by the proxy, in front of the service, to the operations the document names."""
        self.mutant = mutant
        if self.proxy is not None:
            self.proxy.mutate(mutant, http_resolver([f"{op.method} {op.path}" for op in self.model.operations]))

    def call_mutant(self):
        return None

    def changed(self) -> int:
        return self.proxy.changed if self.proxy is not None else 0

    def outcome(self, result: Any, recorded: Any) -> tuple[Any, Any]:
        """RESULT and the final state, renamed with the ids the service made as the proxy recorded them (the
        population's, then those of the program's requests, in the order they were answered): nothing the child
        holds or returns takes part (`recorded` is not read)."""
        made = [list(m) for m in self.population_made]
        self.proxy.close()
        for exchange in self.proxy.take():
            if 200 <= exchange.status < 300:
                path = urlsplit(exchange.path).path
                op = self.model.operation_for(exchange.method, path)
                made += self._made(op, path, _answer(exchange), unquote)
        return self.masker(made)(result), self.masker(made)(self._reads(made))

    # ---- the child's side

    def namespace(self, case: dict) -> dict:
        url, headers = self.proxy.url, dict(self.file.headers)
        self.seed = seed_of(case)  # (in a batch's child, the world it copied was reset for an earlier test case)
        self.made = [list(m) for m in self.population_made]
        world = self

        def watched(original):
            def request(session, method, url, *args, **kwargs):
                response = original(session, method, url, *args, **kwargs)
                try:
                    world._seen(str(method).upper(), str(url), kwargs.get("json"), response)
                except Exception:  # noqa: BLE001 - watching never changes what the program sees
                    pass
                return response
            return request

        _wrap(requests.Session, "request", watched)

        def service_url() -> str:
            """The base URL of the service for this test case."""
            return url

        def service_headers() -> dict:
            """The headers every request to the service sends (a copy)."""
            return dict(headers)

        return {"service_url": service_url, "service_headers": service_headers}

    def _made(self, op, path: str, answer: Any, decode=str) -> list[list]:
        return made_by(self.model, op, path, answer, decode)

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
            doc = documentation(self.model)  # rendered once for every tool
            self._tools = Tools({name: tool_spec(op, self.model, doc) for name, op in self._ops.items()}, self._call,
                                self.shown, frozenset({"BASE_URL", "HEADERS"}))
        return self._tools

    def _real(self) -> dict[str, str]:
        """The child's view: each made value by the name the answers shown to the model give it (`<made-2>`)."""
        return {shown: value for value, shown in self.masker(self.made).names.items()}

    def _call(self, namespace: dict, name: str, arguments: dict):
        """Send the operation's request with the file's headers and its header parameters given; a path parameter
        may also be a made-up value as the answers show it (`<made-2>`), which stands for the value it replaced in
        this run."""
        op = self._ops[name]
        real = self._real()
        path = op.path
        for p in path_parameters(op):
            if p not in arguments:
                raise ValueError(f"missing path parameter {p!r}")
            value = real.get(arguments[p], arguments[p]) if isinstance(arguments[p], str) else arguments[p]
            path = path.replace("{" + p + "}", quote(str(value), safe=""), 1)
        offered = self._tools.specs[name].parameters["properties"]
        query = {p.name: arguments[p.name] for p in op.parameters if p.location == "query" and p.name in arguments}
        headers = {**namespace["service_headers"](), **{p.name: str(arguments[p.name]) for p in op.parameters
                                                        if p.location == "header" and p.name in offered
                                                        and p.name in arguments}}
        body = arguments.get("body") if "body" in offered else None
        response = requests.request(op.method, namespace["service_url"]() + path, params=query or None, json=body,
                                    headers=headers, timeout=TOOL_TIMEOUT_S)
        return {"status": response.status_code, "body": answer_body(response)}

    def trace_as_tools(self, namespace: dict, tracer: Tracer) -> None:
        """The reference's `requests` calls, matched to the operation their method and path name, with the header
        parameters it passed beyond the file's headers. Ids come back as copies parsed out of the answers, so the
        tracer names arguments and RESULT items by equal value."""
        specs = self.tools().specs
        tracer.by_value = True

        def traced(method: str, original):
            def call(url, *args, **kwargs):
                response = original(url, *args, **kwargs)
                record(method, url, kwargs, response)
                return response
            return call

        def record(method: str, url: str, kwargs: dict, response) -> None:
            path = urlsplit(url).path
            op = self.model.operation_for(method, path)
            if op is None or op.id not in specs:
                raise ValueError(f"{method} {path} is no operation served as a tool")
            arguments = dict(zip(path_parameters(op), map(unquote, template_match(op.path, path) or [])))
            arguments.update(kwargs.get("params") or {})
            arguments.update(header_arguments(specs[op.id], op, kwargs.get("headers"), self.file.headers))
            if kwargs.get("json") is not None:
                arguments["body"] = kwargs["json"]
            tracer.record(specs[op.id], arguments, {"status": response.status_code, "body": answer_body(response)})

        for method in ("get", "post", "put", "patch", "delete"):
            _wrap(requests, method, functools.partial(traced, method.upper()))

    def masker(self, made: list[list]) -> Masker:
        chosen = frozenset(str(value) for _, value, _ in self.model.population_values(self.seed))
        return Masker([str(m[1]) for m in made], self.file.volatile + self.learned, chosen)

    def canonical(self, obj: Any) -> Any:
        """RESULT as plain data, nothing renamed (the worker renames it, `outcome`); a name a model saw in an answer
        (`<made-2>`, tools mode) stands for the value it replaced in this run, as in a tool's arguments."""
        real = self._real()
        return _replaced(canonicalize(obj, self.canonical_leaf), real) if real else \
            canonicalize(obj, self.canonical_leaf)

    def shown(self, obj: Any) -> Any:
        """Plain data with made-up values renamed as the child saw them made: answers shown to a model, traced
        values (the diagnosis compares them with the reference's by value)."""
        return self.masker(self.made)(canonicalize(obj, self.canonical_leaf))

    def trace_value(self, obj: Any) -> Any:
        return self.shown(obj)

    def plain(self, value: Any) -> Any:
        return self.shown(value)

    def _reads(self, made: list[list]) -> list:
        """The readers' answers, raw (see `read_state`)."""
        return read_state(self.service, self.model, self.seed, made)


def _wrap(owner: Any, name: str, wrapper) -> None:
    """Set `owner.name` to `wrapper(original)`, where `original` is what was there before any earlier `_wrap` of it:
    a batch's child sets up one test case after another in one process, and a wrapper installed over the last one
    would see each call once more per earlier case."""
    original = getattr(owner, name)
    original = getattr(original, "unwrapped", original)
    wrapped = wrapper(original)
    wrapped.unwrapped = original
    setattr(owner, name, wrapped)


def made_by(model: Model, op, path: str, answer: Any, decode=str) -> list[list]:
    """[resource, value, parent values] of each id `op`'s answer on `path` holds (`decode`: applied to the parent
    values as the path gives them)."""
    if op is None:
        return []
    return [[model.creates(op), v, [decode(p) for p in template_match(op.path, path) or []]]
            for v in model.made_in_answer(op, answer)]


def populate(service: Service, model: Model, seed: int) -> list[list]:
    """Reset the service to the population drawn from `seed`; what the population made (as `made_by`)."""
    made = []
    for item, answer in zip(service.file.population, service.reset(seed)):
        path = urlsplit(answer.url).path
        made += made_by(model, model.operation_for(item.method, path), path, answer_body(answer))
    return made


def learn(service: Service, model: Model, runs: int = LEARN_RUNS) -> tuple[str, ...]:
    """The fields of the readers' answers that differ between fresh resets to the same population (the first
    run's answers compared with each later one's): made up by the service, whatever they look like (as dotted
    paths, `*` for any list item). The build runs it once and ships the answer (`scenarios.rest.registration`)."""
    first, found = None, set()
    for _ in range(runs):
        read = read_state(service, model, 0, populate(service, model, 0))
        if first is None:
            first = read
        elif len(read) == len(first):
            for (_, _, a), (_, _, b) in zip(first, read):
                _differences(a, b, (), found)
    return tuple(sorted(found))


def read_state(service: Service, model: Model, seed: int, made: list[list]) -> list:
    """The answers of the readers, crawled from the known resources (the population's for `seed`, then `made`,
    then those the listings show): [path, status, answer] in the order read, raw."""
    known: dict[str, list[tuple[str, list[str]]]] = {}

    def know(res: str, value: str, parents: list[str]) -> None:
        entry = (str(value), [str(p) for p in parents])
        if entry not in known.setdefault(res, []):
            known[res].append(entry)

    for res, value, parents in model.population_values(seed):
        know(res, value, parents)
    for res, value, parents in made:
        know(str(res), value, list(parents))
    reads = []
    readers = sorted((op for op in model.operations if op.method == "GET"),
                     key=lambda op: len(path_parameters(op)))
    for op in readers:
        params = path_parameters(op)
        targets = [[]] if not params else [[*parents, value] for value, parents in
                                            known.get(resource(op.path, len(params) - 1), [])
                                            if len(parents) == len(params) - 1]
        listing = model.listings.get(op.id)
        key = model.id_key(resource(op.path) + "/{}")
        for values in targets:
            if len(reads) >= MAX_READS:
                break
            path = op.path
            for name, v in zip(params, values):
                path = path.replace("{" + name + "}", v, 1)
            answer = service.request("GET", path)
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


def _answer(exchange: Exchange) -> Any:
    """A recorded answer's body as `answer_body` gives a response's: its JSON, else its text (None when empty)."""
    if not exchange.body:
        return None
    try:
        return json.loads(exchange.body)
    except ValueError:
        return exchange.body.decode("utf-8", "replace")


def _replaced(plain: Any, names: dict[str, str]) -> Any:
    """`plain` with each string that is one of `names` replaced by its value."""
    if isinstance(plain, dict):
        return {k: _replaced(v, names) for k, v in plain.items()}
    if isinstance(plain, list):
        return [_replaced(v, names) for v in plain]
    return names.get(plain, plain) if isinstance(plain, str) else plain


def _items(body: Any, where: list[str]) -> list[dict]:
    """The items of a listing, at the keys the probe found (`Model.listings`)."""
    for key in where:
        body = body.get(key) if isinstance(body, dict) else None
    return [x for x in body if isinstance(x, dict)] if isinstance(body, list) else []
