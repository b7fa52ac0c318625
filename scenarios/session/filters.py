"""MongoDB-style query filters over stored session documents (the subset the session service accepts).

The original passes the filter straight to MongoDB. Here the same language is evaluated in Python over a
source's sessions of one type (a handful of rows), with MongoDB's matching rules where they matter to users:
dotted paths reach into nested objects and through arrays, a plain value matches a field equal to it or an
array containing it, `{"f": null}` matches a missing field, and comparisons only hold between values of the
same kind (numbers with numbers, strings with strings).

Supported: top-level `$and`, `$or`, `$nor`; field operators `$eq $ne $gt $gte $lt $lte $in $nin $exists $all
$size $regex $options $not`. A field name that starts with `$` or holds a NUL character, an unknown operator or
a malformed operand raises `QueryError` (the service answers 400, as the original does).
"""

from __future__ import annotations

import re
from typing import Any, Callable

Predicate = Callable[[dict], bool]


class QueryError(ValueError):
    pass


def check_field(field: str) -> None:
    if not isinstance(field, str):
        raise QueryError("a field name must be a string")
    if "\0" in field:
        raise QueryError(f"field name {field!r} contains a null character")
    if field.startswith("$"):
        raise QueryError(f"unknown top level operator: {field}")


def compile_filter(spec: Any) -> Predicate:
    """A predicate over documents, or QueryError when `spec` is not a valid filter."""
    if not isinstance(spec, dict):
        raise QueryError("a query filter must be a JSON object")
    parts: list[Predicate] = []
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list) or not value:
                raise QueryError(f"{key} must be a nonempty array")
            subs = [compile_filter(v) for v in value]
            if key == "$and":
                parts.append(lambda d, subs=subs: all(p(d) for p in subs))
            elif key == "$or":
                parts.append(lambda d, subs=subs: any(p(d) for p in subs))
            else:
                parts.append(lambda d, subs=subs: not any(p(d) for p in subs))
            continue
        check_field(key)
        parts.append(_field_predicate(key.split("."), value))
    return lambda d: all(p(d) for p in parts)


def _is_operator_doc(value: Any) -> bool:
    if not isinstance(value, dict) or not value:
        return False
    dollar = [k.startswith("$") for k in value]
    if any(dollar) and not all(dollar):
        raise QueryError("an operator object cannot mix operators and field names")
    return all(dollar)


def _field_predicate(path: list[str], value: Any) -> Predicate:
    if _is_operator_doc(value):
        ops = [_operator(op, arg, value) for op, arg in value.items() if op != "$options"]
        if "$options" in value and "$regex" not in value:
            raise QueryError("$options needs a $regex")
        return lambda d: (lambda vals: all(op(vals) for op in ops))(_resolve(d, path))
    return lambda d: _eq(_resolve(d, path), value)


def _resolve(value: Any, path: list[str]) -> list:
    """Every value the dotted path reaches (MongoDB walks into arrays of objects); [] when none."""
    if not path:
        return [value]
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return _resolve(value[head], rest) if head in value else []
    if isinstance(value, list):
        out = []
        if head.isdigit() and int(head) < len(value):
            out += _resolve(value[int(head)], rest)
        for item in value:
            if isinstance(item, dict):
                out += _resolve(item, path)
        return out
    return []


def _kind(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, (int, float)):
        return "number"
    return type(x).__name__


def _same(a: Any, b: Any) -> bool:
    """Equality that, as in MongoDB, tells true from 1."""
    if _kind(a) != _kind(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _candidates(vals: list) -> list:
    """The values a scalar condition is tried on: each value, and each element of an array value."""
    out = []
    for v in vals:
        out.append(v)
        if isinstance(v, list):
            out.extend(v)
    return out


def _eq(vals: list, target: Any) -> bool:
    if target is None and not vals:
        return True
    return any(_same(c, target) for c in _candidates(vals))


def _compare(op: str, arg: Any) -> Callable[[list], bool]:
    if _kind(arg) not in ("number", "str"):
        return lambda vals: False
    test = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
            "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}[op]
    return lambda vals: any(_kind(c) == _kind(arg) and test(c, arg) for c in _candidates(vals))


def _operator(op: str, arg: Any, whole: dict) -> Callable[[list], bool]:
    if op == "$eq":
        return lambda vals: _eq(vals, arg)
    if op == "$ne":
        return lambda vals: not _eq(vals, arg)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return _compare(op, arg)
    if op in ("$in", "$nin"):
        if not isinstance(arg, list):
            raise QueryError(f"{op} needs an array")
        hit = lambda vals: any(_eq(vals, a) for a in arg)  # noqa: E731
        return hit if op == "$in" else (lambda vals: not hit(vals))
    if op == "$exists":
        want = bool(arg)
        return lambda vals: bool(vals) == want
    if op == "$all":
        if not isinstance(arg, list):
            raise QueryError("$all needs an array")
        return lambda vals: bool(arg) and all(_eq(vals, a) for a in arg)
    if op == "$size":
        if _kind(arg) != "number" or int(arg) != arg or arg < 0:
            raise QueryError("$size needs a nonnegative integer")
        return lambda vals: any(isinstance(v, list) and len(v) == arg for v in vals)
    if op == "$regex":
        flags = 0
        for ch in str(whole.get("$options", "")):
            if ch not in "imsx":
                raise QueryError(f"invalid regex option {ch!r}")
            flags |= {"i": re.I, "m": re.M, "s": re.S, "x": re.X}[ch]
        if not isinstance(arg, str):
            raise QueryError("$regex needs a string")
        try:
            pattern = re.compile(arg, flags)
        except re.error as exc:
            raise QueryError(f"invalid regular expression: {exc}") from exc
        return lambda vals: any(isinstance(c, str) and pattern.search(c) for c in _candidates(vals))
    if op == "$not":
        if not _is_operator_doc(arg):
            raise QueryError("$not needs an operator object")
        inner = [_operator(o, a, arg) for o, a in arg.items() if o != "$options"]
        return lambda vals: not all(p(vals) for p in inner)
    raise QueryError(f"unknown operator: {op}")
