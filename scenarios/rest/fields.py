"""What a resource holds, as far as the bodies sent to it say, and PUT bodies that a PATCH would not mistake for.

A PUT replaces a resource and a PATCH merges its body into it: the two leave different states only when the body
leaves out a field the resource holds (the PUT drops it, the PATCH keeps it). A program that sends one where the
task asks for the other passes every test case otherwise, so the state machine keeps, per resource, the fields the
bodies sent to it set (`Fields`: paths of keys, a list or a scalar at the end), and draws the body of a PUT or a
PATCH so that it leaves one of them out (`separate`); a resource for which no body of the operation's schema can
(`separable` is False) is not updated that way at all.

A field counts as left out at the level a PATCH merges it: a top-level field when it is one (`name`), else the key
one level down (`data.title`, where a resource's fields sit in an envelope such as `data`; a PUT that leaves the
whole envelope out may keep it, as some services do). What a PATCH sets one level down replaces what was there.
"""

from __future__ import annotations

import random
from typing import Any

from scenarios.rest.schema import Schema

Path = tuple[str, ...]
UPDATES = ("PUT", "PATCH")  # the methods a program may confuse, one replacing and one merging


def leaves(value: Any, at: Path = ()) -> list[Path]:
    """The paths of a JSON value's fields: every key whose value is not an object (an empty object has none)."""
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in leaves(item, at + (str(key),))]
    return [at] if at else []


def _level(path: Path) -> int:
    """The index of the key a PATCH merges, on a field's path (see the module docstring)."""
    return min(1, len(path) - 1)


def untouched(body: Any, path: Path) -> bool:
    """Whether `body` leaves the field at `path` out at the level a PATCH merges it (so that a PUT drops it)."""
    node = body
    for i, key in enumerate(path[: _level(path) + 1]):
        if not isinstance(node, dict):
            return False
        if key not in node:
            return i == _level(path)
        node = node[key]
    return False


def after(known: list[Path], body: Any, method: str) -> list[Path]:
    """The fields a resource holds after a PUT (the body's) or a PATCH (the body's, and those it left untouched)."""
    sent = leaves(body)
    kept = [p for p in known if method == "PATCH" and untouched(body, p) and p not in sent]
    return sorted(set(sent) | set(kept))


def _at(schema: Schema | None, path: Path) -> Schema | None:
    for key in path:
        schema = schema.properties.get(key) if schema is not None else None
    return schema


def _is_object(schema: Schema | None) -> bool:
    """Whether `draw` gives an object for this schema."""
    return schema is not None and (schema.type == "object" or (schema.type is None and bool(schema.properties)))


def _drawn_keys(schema: Schema | None, top: tuple[str, ...] | None, depth: int) -> tuple[str, ...] | None:
    """The keys `draw` gives an object of this schema (None: two of `scenarios.rest.model.FREE_FORM_KEYS`, which ones
    drawn)."""
    if not schema.properties:
        return None
    return tuple(k for k in schema.properties if depth > 0 or top is None or k in top)


def separable(schema: Schema | None, top: tuple[str, ...] | None, known: list[Path]) -> bool:
    """Whether every body drawn from `schema` (top-level keys `top`) can be made to leave one of `known` out (see
    `separate`, which this predicts without drawing)."""
    if not _is_object(schema):
        return False
    for path in known:
        j = _level(path)
        if j and path[0] not in (_drawn_keys(schema, top, 0) or ()):
            continue  # the body has no object there (a free-form body's keys are drawn, so not counted on)
        parent = _at(schema, path[:j])
        if not _is_object(parent) or path[j] in parent.required:
            continue
        keys = _drawn_keys(parent, top, j)
        if keys is None:  # free-form: two keys drawn, so one may go, or the field is not among them
            return True
        if path[j] not in keys or len(keys) > 1:
            return True
    return False


def separate(body: Any, schema: Schema | None, known: list[Path], rng: random.Random) -> bool:
    """Make `body` (changed in place) leave one of `known` out: already so, or by removing from it the key of one
    of them that its schema does not require and that is not the only key of its object. False when none can go."""
    if any(untouched(body, p) for p in known):
        return True
    for path in rng.sample(known, len(known)):
        j = _level(path)
        node = body
        for key in path[:j]:
            node = node.get(key) if isinstance(node, dict) else None
        parent = _at(schema, path[:j])
        if not isinstance(node, dict) or path[j] not in node or len(node) < 2 or (
                parent is not None and path[j] in parent.required):
            continue
        del node[path[j]]
        return True
    return False
