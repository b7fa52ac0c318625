"""Folder names made from names users choose (a model id, a dataset revision, a display name)."""

from __future__ import annotations

import re


def slug(name: str, sep: str = "-", empty: str = "model") -> str:
    """`name` as one safe path component: each run of other characters than letters, digits, `.`, `_` and `-`
    becomes `sep`, and leading or trailing dots and dashes go, so the result is never `.`, `..` or hidden."""
    return re.sub(r"[^A-Za-z0-9._-]+", sep, name).strip("-.") or empty
