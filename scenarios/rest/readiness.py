"""The agent-readiness findings of a REST service (`scenarios.readiness`): its document read operation by operation,
and calls made on a running instance, after a reset to the population of seed 0, for what the document leaves out:

- a status an operation answered on an item that does not exist, or on a body that is not an object, which its
  responses do not list (none is reported where the operation documents a `default` or `4XX` response);
- the fields a creator's answer holds that its request did not send, where the response's schema lists no such
  field (the values the service made up);
- pagination: a listing asked for one item (a query parameter named as a limit) while it holds two, which answers
  one and a pointer to the next page (a header or a field named as one), where neither the operation nor the
  parameter speaks of pages;
- what deleting an item does to an item under it (a population item under it answers 404 afterwards, or still
  answers), where the delete's text does not say.
"""

from __future__ import annotations

import random
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from scenarios.calling import answer_body
from scenarios.readiness import Documented, Finding, by_operation, documentation_findings, mentions, short
from scenarios.rest.model import Model, _fill, _ok, draw, is_item, path_parameters, resource
from scenarios.rest.openapi import Operation

SEED = 0
MISSING = "no-such-item-0"
LIMITS = ("limit", "_limit", "per_page", "page_size", "pagesize", "size", "max", "count", "max_results")
PAGE_WORDS = ("page", "paginat", "next", "cursor", "continu", "token")
NEXT = re.compile(r"next|link|token|cursor|continu", re.IGNORECASE)


def documented(op: Operation) -> Documented:
    undescribed = [p.name for p in op.parameters if not (p.description or p.schema.description)
                   and p.schema.example is None and p.location in ("path", "query")]
    body = op.body is not None and op.body.schema.type in (None, "object") and not op.body.schema.properties
    ok = [r for s, r in op.responses.items() if s.startswith("2")]
    answer = bool(ok) and op.method == "GET" and all(r.schema is None for r in ok)
    return Documented(op.label, f"{op.summary} {op.description}", undescribed, body, answer)


def findings(model: Model, service) -> list[Finding]:
    """Every finding on the model's operations: the document's, then those observed on `service` (running)."""
    out = documentation_findings([documented(op) for op in model.operations])
    _Observer(model, service).run(out)
    service.reset(SEED)
    return by_operation(out, [op.label for op in model.operations])


def _covers(op: Operation, status: int) -> bool:
    codes = set(op.responses)
    return str(status) in codes or f"{str(status)[0]}XX" in codes or "default" in codes


def _text(op: Operation) -> str:
    return " ".join([op.summary, op.description, *(p.description or "" for p in op.parameters),
                     *(r.description for r in op.responses.values())])


class _Observer:
    def __init__(self, model: Model, service):
        self.model, self.service, self.rng = model, service, random.Random(SEED)

    def fresh(self) -> dict[str, list[tuple[str, list[str]]]]:
        """Reset to the population; the values it made of each resource, with their parents."""
        self.service.reset(SEED)
        known: dict[str, list[tuple[str, list[str]]]] = {}
        for res, value, parents in self.model.population_values(SEED):
            known.setdefault(res, []).append((value, parents))
        return known

    def run(self, out: list[Finding]) -> None:
        ops = [op for op in self.model.operations if op.id not in self.model.broken]
        for op in ops:
            if is_item(op) and op.method in ("GET", "DELETE", "PATCH"):
                self.missing(op, out)
            if op.body is not None and op.method in ("POST", "PUT", "PATCH"):
                self.not_an_object(op, out)
            if op.id in self.model.id_fields:
                self.made_up(op, out)
            if op.id in self.model.listings:
                self.pages(op, out)
            if op.method == "DELETE" and is_item(op):
                self.cascade(op, out)

    @staticmethod
    def path(op: Operation, known: dict, last: str | None = None) -> str | None:
        """A concrete path of `op` on a known item (`_fill`), or with its last parameter `last` on known parents."""
        if last is None:
            return _fill(op, known)
        params = path_parameters(op)
        if not params:
            return op.path
        parents = _values(resource(op.path, len(params) - 2), known, len(params) - 1) if len(params) > 1 else []
        return None if parents is None else _put(op.path, params, [*parents, last])

    def missing(self, op: Operation, out: list[Finding]) -> None:
        known = self.fresh()
        path = self.path(op, known, MISSING)
        if path is None:
            return
        answer = self.service.request(op.method, path, json={} if op.method == "PATCH" else None)
        if not _covers(op, answer.status_code):
            out.append(Finding(op.label, "undocumented status", f"answers {answer.status_code} for an item that "
                               "does not exist; its responses do not list it",
                               f"list the {answer.status_code} response and say when it is answered",
                               f"{op.method} {path} -> {answer.status_code} {short(answer_body(answer))}"))

    def not_an_object(self, op: Operation, out: list[Finding]) -> None:
        known = self.fresh()
        path = self.path(op, known)
        if path is None:
            return
        answer = self.service.request(op.method, path, json="not an object")
        if answer.status_code >= 300 and not _covers(op, answer.status_code):
            out.append(Finding(op.label, "undocumented status", f"answers {answer.status_code} for a body that is "
                               "not an object; its responses do not list it",
                               f"list the {answer.status_code} response and what makes a body invalid",
                               f"{op.method} {path} with the body \"not an object\" -> {answer.status_code} "
                               f"{short(answer_body(answer))}"))

    def made_up(self, op: Operation, out: list[Finding]) -> None:
        known = self.fresh()
        path = self.path(op, known)
        if path is None or op.body is None:
            return
        sent = draw(op.body.schema, self.rng, self.model.body_keys.get(op.id))
        answer = self.service.request(op.method, path, json=sent)
        if not 200 <= answer.status_code < 300:
            return
        response = op.responses.get(str(answer.status_code)) or op.responses.get("2XX")
        declared = _fields(response.schema) if response is not None and response.schema is not None else set()
        body = answer_body(answer)
        made = sorted(f for f, _ in _leaves(body) if f not in _leaves_of(sent) and f not in declared)
        if made:
            listed = ", ".join(f"`{f}`" for f in made[:8])
            out.append(Finding(op.label, "made-up fields", f"its answer holds fields the request did not send and "
                               f"the response's schema does not list: {listed}",
                               "list them in the response's schema and say the service sets them",
                               f"{op.method} {path} -> {answer.status_code}, "
                               + ", ".join(f"{f}: <made up>" for f in made[:8])))

    def pages(self, op: Operation, out: list[Finding]) -> None:
        limit = next((p for p in op.parameters if p.location == "query" and p.name.lower() in LIMITS), None)
        creator = next((c for c in self.model.operations if c.method == "POST" and c.path == op.path
                        and c.id in self.model.id_fields), None)
        if limit is None or creator is None or mentions(_text(op), *PAGE_WORDS):
            return
        known = self.fresh()
        path = self.path(op, known)
        if path is None:
            return
        for _ in range(2):
            body = draw(creator.body.schema, self.rng, self.model.body_keys.get(creator.id)) if creator.body else None
            self.service.request("POST", path, json=body)
        whole = _items(answer_body(self.service.request("GET", path)), self.model.listings[op.id])
        answer = self.service.request("GET", path, params={limit.name: 1})
        items = _items(answer_body(answer), self.model.listings[op.id])
        pointer = [h for h in answer.headers if NEXT.search(h)]
        body = answer_body(answer)
        pointer += [k for k in (body if isinstance(body, dict) else {}) if NEXT.search(k)]
        if whole is not None and items is not None and len(whole) >= 2 and len(items) == 1 and pointer:
            out.append(Finding(op.label, "pagination", f"answers at most `{limit.name}` items and points to the "
                               f"rest with {', '.join(f'`{p}`' for p in pointer)}; the documentation does not say "
                               "it pages", f"say that it pages, its default page size, and how to ask for the next "
                               f"page ({pointer[0]})",
                               f"GET {path}?{limit.name}=1 -> {answer.status_code}, 1 of {len(whole)} items, "
                               f"{pointer[0]}: {self.local(answer.headers.get(pointer[0]) or body.get(pointer[0]), limit.name)}"))

    def local(self, pointer: Any, kept: str) -> str:
        """A next-page pointer as the report shows it: a URL without the instance's address, each query value but
        `kept`'s elided (a token that encodes times would differ on every run)."""
        parts = urlsplit(str(pointer))
        if not parts.path:
            return "<a token>"
        query = "&".join(f"{k}={v if k == kept else '...'}" for k, v in parse_qsl(parts.query))
        return parts.path + (f"?{query}" if query else "")

    def cascade(self, op: Operation, out: list[Finding]) -> None:
        own = resource(op.path)
        if mentions(_text(op), "child", "children", "cascad", "under", "contain", "everything", "all its"):
            return
        readers = [r for r in self.model.operations if r.method == "GET" and is_item(r)
                   and resource(r.path).startswith(own + "/") and r.id not in self.model.broken]
        for reader in readers:
            params = path_parameters(reader)
            values = _values(resource(reader.path, len(params) - 1), self.fresh(), len(params))
            child = None if values is None else _put(reader.path, params, values)
            if child is None or not _ok(self.service.request("GET", child)):
                continue
            target = _put(op.path, path_parameters(op), values[:len(path_parameters(op))])
            if not _ok(self.service.request("DELETE", target)):
                continue
            after = self.service.request("GET", child)
            kind = resource(reader.path).rsplit("/", 2)[-2]
            if _ok(after):
                what = f"leaves the {kind} under it in place"
            elif after.status_code in (404, 410):
                what = f"also deletes the {kind} under it"
            else:
                what = f"makes a read of the {kind} under it answer {after.status_code}"
            out.append(Finding(op.label, "delete cascade", f"{what}; its description does not say",
                               f"say what deleting it does to the {kind} under it",
                               f"DELETE {target}, then GET {child} -> {after.status_code}"))
            return


def _values(res: str, known: dict, count: int) -> list[str] | None:
    """The path values (parents first) of the first known item of `res` that has `count` of them."""
    for value, parents in known.get(res, []):
        if len(parents) + 1 == count:
            return [*parents, value]
    return None


def _put(template: str, params: list[str], values: list[str]) -> str:
    for name, value in zip(params, values):
        template = template.replace("{" + name + "}", str(value), 1)
    return template


def _leaves(value: Any, at: str = "", depth: int = 0):
    """(dotted path, value) of the scalars of an answer's objects (not inside arrays)."""
    if isinstance(value, dict) and depth < 4:
        for key, inner in value.items():
            yield from _leaves(inner, f"{at}.{key}" if at else str(key), depth + 1)
    elif at and not isinstance(value, (dict, list)):
        yield at, value


def _leaves_of(value: Any) -> set[str]:
    return {f for f, _ in _leaves(value)}


def _fields(schema, at: str = "", depth: int = 0) -> set[str]:
    """The dotted paths of a schema's properties."""
    out = set()
    if schema is not None and depth < 4:
        for name, inner in schema.properties.items():
            path = f"{at}.{name}" if at else name
            out |= {path} | _fields(inner, path, depth + 1)
    return out


def _items(body: Any, where: list[str]) -> list | None:
    for key in where:
        body = body.get(key) if isinstance(body, dict) else None
    return body if isinstance(body, list) else None
