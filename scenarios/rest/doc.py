"""The documentation of a service-derived scenario's operations, rendered from the specification: one text per
kept operation (`Documentation.operation`), which the API documentation (code and explore modes, `api_doc`) and
each tool's description (tools mode, `tool_spec`) both show, and a preamble (`Documentation.preamble`) that says once
what several operations share.

An operation's text: its summary and description (the description cut at MAX_DESCRIPTION characters); its
parameters in the path, the query and the headers (cookies left out, and so are the headers the service file sends
with every request), each with its type, `required` where it is, and its description, allowed values, format and
pattern where the document gives them; the request body's shape; each response status with its description and the
answer's shape. A shape is one line (`{data: object, permissions: {read: [string], write: [string]}}`), MAX_DEPTH
levels deep at most and cut at MAX_SHAPE characters. A shape that SHARED operations or more use (an error answer,
typically) is written once in the preamble as `Shape1`, `Shape2`, ... and named in each operation; so is a status
whose description is the same wherever it is declared (`400: The request is invalid.`).
"""

from __future__ import annotations

from scenarios.rest.openapi import Operation, Parameter
from scenarios.rest.schema import Schema

MAX_DESCRIPTION = 1000  # characters of an operation's description shown
MAX_DEPTH = 3  # nesting levels of a shape shown; deeper, an object or a list is named by its type only
MAX_SHAPE = 300  # characters of one shape
MAX_ENUM = 12  # allowed values listed
SHARED = 2  # operations that use a shape (or a status's description) before the preamble says it once
MIN_NAMED = 24  # characters a shape needs before it is worth a name (`object` is shorter than its name)
LOCATIONS = ("path", "query", "header")  # the parameters shown, in this order


def shape(schema: Schema | None, depth: int = MAX_DEPTH) -> str:
    """`schema` on one line: `{a: string, b?: [integer]}` (`?`: not required, where the object lists what is),
    `[T]` a list, `"x"|"y"` allowed values, `T|null` nullable; cut at MAX_SHAPE characters."""
    text = _shape(schema, depth)
    while len(text) > MAX_SHAPE and depth > 1:
        depth -= 1
        text = _shape(schema, depth)
    return text if len(text) <= MAX_SHAPE else text[:MAX_SHAPE - 1] + "…"


def _shape(schema: Schema | None, depth: int) -> str:
    if schema is None:
        return "any"
    if schema.enum:
        text = "|".join(_literal(v) for v in schema.enum[:MAX_ENUM]) + ("|…" if len(schema.enum) > MAX_ENUM else "")
    elif schema.type == "array" and schema.items is not None and depth > 0:
        text = f"[{_shape(schema.items, depth - 1)}]"
    elif schema.properties and depth > 0 and not schema.cut:
        marked = bool(schema.required)
        text = "{" + ", ".join(f"{name}{'?' if marked and name not in schema.required else ''}: "
                               f"{_shape(sub, depth - 1)}" for name, sub in schema.properties.items()) + "}"
    else:
        text = schema.type or "any"
        if schema.format:
            text += f"({schema.format})"
    return f"{text}|null" if schema.nullable else text


def _literal(value) -> str:
    return f'"{value}"' if isinstance(value, str) else "null" if value is None else str(value).lower() \
        if isinstance(value, bool) else str(value)


def shown_parameters(op: Operation, sent_headers: frozenset[str]) -> list[Parameter]:
    """The parameters a caller gives: path, query and header ones, less the headers every request already sends
    (`sent_headers`, lower case)."""
    return [p for location in LOCATIONS for p in op.parameters if p.location == location
            and not (location == "header" and p.name.lower() in sent_headers)]


def summary(op: Operation) -> str:
    """The summary and the description (cut), each ending with a full stop; empty when the document gives none."""
    return " ".join(part.strip().rstrip(".") + "." for part in (op.summary, op.description[:MAX_DESCRIPTION])
                    if part.strip())


class Documentation:
    """The rendered documentation of `operations` (the kept ones), for a service whose file sends `headers`."""

    def __init__(self, operations: list[Operation], headers: dict[str, str] | None = None) -> None:
        self.sent = frozenset(h.lower() for h in (headers or {}))
        users: dict[str, set[str]] = {}
        meanings: dict[str, set[str]] = {}
        declared: dict[str, set[str]] = {}
        for op in operations:
            for text in self._shapes(op):
                users.setdefault(text, set()).add(op.id)
            for status, response in op.responses.items():
                meanings.setdefault(status, set()).add(response.description.strip())
                declared.setdefault(status, set()).add(op.id)
        self.names: dict[str, str] = {}  # a shared shape -> its name
        for op in operations:
            for text in self._shapes(op):
                if len(users[text]) >= SHARED and len(text) >= MIN_NAMED and text not in self.names:
                    self.names[text] = f"Shape{len(self.names) + 1}"
        # A status that means the same wherever it is declared, by several operations: its description, said once.
        self.statuses = {status: next(iter(texts)) for status, texts in meanings.items()
                         if len(texts) == 1 and len(declared[status]) >= SHARED and next(iter(texts))}

    def _shapes(self, op: Operation) -> list[str]:
        out = [shape(r.schema) for r in op.responses.values() if r.schema is not None]
        return out + ([shape(op.body.schema)] if op.body is not None else [])

    def named(self, schema: Schema | None) -> str:
        text = shape(schema)
        return self.names.get(text, text)

    def preamble(self) -> list[str]:
        """What several operations share, said once (empty when nothing is)."""
        lines = []
        if self.names:
            lines += ["Shapes several operations use:"]
            lines += [f"- `{name}` = `{text}`" for text, name in self.names.items()]
            lines.append("")
        if self.statuses:
            lines += ["Statuses that mean the same for every operation that answers them:"]
            lines += [f"- {status}: {text.rstrip('.')}." for status, text in self.statuses.items()]
            lines.append("")
        return lines

    def operation(self, op: Operation) -> list[str]:
        """`op`'s documentation, a line each: summary, parameters, body, answers."""
        lines = [summary(op)] if summary(op) else []
        params = shown_parameters(op, self.sent)
        if params:
            lines.append("Parameters:")
            lines += [f"- {self.parameter(p)}" for p in params]
        if op.body is not None and op.method in ("POST", "PUT", "PATCH"):
            lines.append(f"Body ({op.body.media_type}{', required' if op.body.required else ''}): "
                         f"`{self.named(op.body.schema)}`")
        if op.responses:
            lines.append("Answers:")
            lines += self.answers(op)
        return lines

    def parameter(self, p: Parameter) -> str:
        s = p.schema
        facts = [p.location, shape(s, 1), *(["required"] if p.required else [])]
        if s.pattern:
            facts.append(f"pattern `{s.pattern}`")
        if s.default is not None:
            facts.append(f"default {_literal(s.default)}")
        text = f"`{p.name}` ({', '.join(facts)})"
        description = (p.description or s.description or "").strip()
        return f"{text}: {description}" if description else text

    def answers(self, op: Operation) -> list[str]:
        """One line per status, except statuses of `self.statuses` that answer the same shape: one line for
        them."""
        lines, common = [], {}
        for status, response in op.responses.items():
            answer = "no body" if response.schema is None else f"`{self.named(response.schema)}`"
            if status in self.statuses:
                common.setdefault(answer, []).append(status)
            else:
                what = response.description.strip().rstrip(".")
                lines.append(f"- {status}{f' ({what})' if what else ''}: {answer}")
        lines += [f"- {', '.join(statuses)}: {answer}" for answer, statuses in common.items()]
        return lines
