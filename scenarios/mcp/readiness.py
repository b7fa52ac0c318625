"""The agent-readiness findings of an MCP server (`scenarios.readiness`): its tool listing read tool by tool, and calls
made on a running instance, after a reset to the population of seed 0, for what the descriptions leave out:

- what a tool that takes a key does with a value of that key that does not exist: an error (reported where its
  description speaks of no error), or no error (reported for a write always: a model cannot tell that it did
  nothing, or made something that refers to nothing);
- what a tool that makes a key does when sent a value that already exists (an error, the same answer, or a change);
- what a tool that removes a key does to what refers to it elsewhere in the readers' answers, where its description
  names none of it;
- the fields of the readers' answers the server makes up (different after two resets to the same population), and the
  keys it makes up, where the tool declares no output schema.
"""

from __future__ import annotations

import json
import random

from scenarios.mcp.model import ITEM, Model, _steps, draw, fresh_key, get, leaves, put, singular
from scenarios.readiness import Documented, Finding, by_operation, documentation_findings, mentions, short

SEED = 0
ERROR_WORDS = ("error", "fail", "not found", "raise", "throw", "reject", "invalid")
EXISTING_WORDS = ("already", "exist", "duplicate", "ignore", "skip", "unique", "overwrit", "replac")


def documented(tool: dict) -> Documented:
    schema = tool.get("inputSchema") or {}
    undescribed, untyped = [], False
    for path, leaf in leaves(schema):
        name = ".".join("[]" if s == ITEM else str(s) for s in path).replace(".[]", "[]")
        if not any(leaf.get(k) for k in ("description", "examples", "default", "enum", "const")):
            undescribed.append(name)
        untyped |= not any(k in leaf for k in ("type", "enum", "const", "anyOf", "oneOf"))
    return Documented(tool["name"], str(tool.get("description") or ""), undescribed, untyped,
                      not tool.get("outputSchema"))


def findings(model: Model, server) -> list[Finding]:
    out = documentation_findings([documented(t) for t in model.tools])
    _Observer(model, server).run(out)
    server.reset(SEED)
    return by_operation(out, [t["name"] for t in model.tools])


def _text(tool: dict) -> str:
    return " ".join([str(tool.get("description") or ""),
                     *(str(leaf.get("description") or "") for _, leaf in leaves(tool.get("inputSchema") or {}))])


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _call(tool: str, arguments: dict) -> str:
    return f"{tool}({short(arguments, 80)})"


class _Observer:
    def __init__(self, model: Model, server):
        self.model, self.server, self.rng = model, server, random.Random(SEED)

    def snapshot(self) -> str:
        return json.dumps(self.model.read(self.server), sort_keys=True)

    def population(self, key: str) -> list:
        return [v for name, v, _ in self.model.population_keys(SEED) if name == key]

    def run(self, out: list[Finding]) -> None:
        model = self.model
        for tool in model.tools:
            if tool["name"] in model.readers:
                continue
            for edge in model.takes(tool["name"]):
                self.unknown(tool, edge, out)
                break
            made = model.makes(tool["name"])
            if made is not None and made.sent is not None:
                self.existing(tool, made, out)
            if tool["name"] in model.removes:
                self.refers(tool, out)
        self.made_up(out)

    def unknown(self, tool: dict, edge, out: list[Finding]) -> None:
        self.server.reset(SEED)
        arguments = draw(tool.get("inputSchema") or {}, self.rng)
        value = fresh_key(self.rng)
        put(arguments, edge.path, [value] if isinstance(get(arguments, edge.path), list) else value)
        before = self.snapshot()
        answer = self.server.call(tool["name"], arguments)
        noun = self.model.key(edge.key).name
        shown = f"{_call(tool['name'], arguments)} -> "
        if answer.error:
            if not mentions(_text(tool), *ERROR_WORDS):
                out.append(Finding(tool["name"], "undocumented error", f"reports an error for {_a(noun)} that does "
                                   "not exist; its description does not say", "say which error it reports, and when",
                                   shown + "error: " + short(answer.text)))
        elif tool["name"] not in self.model.queries:
            changed = self.snapshot() != before
            what = "and the readers then show a change" if changed else "and changes nothing the readers show"
            out.append(Finding(tool["name"], "unchecked input", f"accepts {_a(noun)} that does not exist without "
                               f"an error, {what}", f"say what it does with {_a(noun)} that does not exist",
                               shown + short(answer.value)))

    def existing(self, tool: dict, key, out: list[Finding]) -> None:
        values = self.population(key.name)
        if not values or mentions(_text(tool), *EXISTING_WORDS):
            return
        self.server.reset(SEED)
        arguments = draw(tool.get("inputSchema") or {}, self.rng)
        put(arguments, key.sent, values[0])
        before = self.snapshot()
        answer = self.server.call(tool["name"], arguments)
        shown = f"{_call(tool['name'], arguments)} -> " + ("error: " + short(answer.text) if answer.error
                                                              else short(answer.value))
        if answer.error:
            what = "reports an error"
        elif self.snapshot() == before:
            what = "reports no error and changes nothing the readers show"
        else:
            what = "reports no error and changes what the readers show"
        out.append(Finding(tool["name"], "repeated create", f"sent {_a(key.name)} that already exists, it {what}; "
                           "its description does not say", f"say what it does with {_a(key.name)} that exists",
                           shown))

    def refers(self, tool: dict, out: list[Finding]) -> None:
        """What a removal does to the places in the readers' answers, other than its key's own, that hold the key."""
        edge = next(iter(self.model.takes(tool["name"])), None)
        if edge is None:
            return
        for value in self.population(edge.key):
            self.server.reset(SEED)
            before = self._places(value)
            own = {x.at[0] for x in self.model.listings if x.key == edge.key and x.at}
            others = sorted({p for p in before if p not in own})
            if not others:
                continue
            if mentions(_text(tool), *(singular(str(o)) for o in others)):
                return
            arguments = draw(tool.get("inputSchema") or {}, self.rng)
            put(arguments, edge.path, [value] if isinstance(get(arguments, edge.path), list) else value)
            answer = self.server.call(tool["name"], arguments)
            if answer.error:
                return
            after = self._places(value)
            gone = [o for o in others if o not in after]
            kept = [o for o in others if o in after]
            listed = ", ".join(f"`{o}`" for o in others)
            what = ("also removes what refers to it in " if not kept else
                    "leaves what refers to it in " if not gone else "removes part of what refers to it in ")
            out.append(Finding(tool["name"], "delete cascade", f"{what}{listed}; its description does not say",
                               f"say what removing it does to the {listed} that refer to it",
                               f"{_call(tool['name'], arguments)}, then the readers show it in "
                               f"{', '.join(after) or 'nothing'} (before: {', '.join(before)})"))
            return

    def _places(self, value) -> list[str]:
        """The top-level fields of the readers' answers under which `value` appears."""
        found = []
        for answer in self.model.read(self.server):
            shown = answer.get("value")
            if isinstance(shown, dict):
                found += [k for k, v in shown.items() if json.dumps(value) in json.dumps(v) and k not in found]
        return found

    def made_up(self, out: list[Finding]) -> None:
        for key in self.model.keys:
            tool = self.model.tool(key.tool)
            if key.sent is None and not tool.get("outputSchema"):
                where = ".".join(str(s) for s in _steps(key.answer)).replace(f".{ITEM}", "[]")
                out.append(Finding(key.tool, "made-up fields", f"the server chooses the {key.name} (at `{where}` "
                                   "of its answer); nothing declares the answer's fields",
                                   "declare an output schema and say the server sets it", "a call of "
                                   f"{key.tool}: its answer's {where} held a value the request did not send"))
        if self.model.learned:
            fields = ", ".join(f"`{f}`" for f in self.model.learned[:8])
            for name in self.model.readers:
                out.append(Finding(name, "made-up fields", f"answers values the server makes up ({fields}): they "
                                   "differ between two runs of the same calls", "say which fields the server sets "
                                   "and what they hold", "two resets to the same population: those fields differed"))
