"""Harness-side tensor comparison on canonical data (base64 bytes + dtype + shape), never on torch objects."""

from __future__ import annotations

import base64

import numpy as np


def decode(t: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(t["data"]), dtype=np.dtype(t["storage"]).newbyteorder("<")).reshape(t["shape"])


def compare_tensors(expected: dict, actual: dict, path: str, rtol: float, atol: float) -> str | None:
    if expected["dtype"] != actual.get("dtype"):
        return f"{path}: expected dtype {expected['dtype']}, got {actual.get('dtype')}"
    if list(expected["shape"]) != list(actual.get("shape", [])):
        return f"{path}: expected shape {tuple(expected['shape'])}, got {tuple(actual.get('shape', []))}"
    try:
        a = decode(actual)
    except (KeyError, ValueError, TypeError) as exc:
        return f"{path}: the tensor data could not be decoded ({exc})"
    e = decode(expected)
    if e.dtype.kind in "fc":
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = a == e
    if not close.all():
        bad = int((~close).sum())
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        worst = float(np.nanmax(diff)) if diff.size else 0.0
        return f"{path}: {bad} of {e.size} values differ (max abs diff {worst:.3g}, tolerance rtol={rtol} atol={atol})"
    return None
