"""The tensor world: runs inside sandbox workers only (it imports torch)."""

from __future__ import annotations

import base64
import inspect

import torch

from scenarios.base import World, canonicalize
from scenarios.calling import Tools, Tracer
from scenarios.tensor.doc import OPERATIONS, tool_specs

# dtypes numpy cannot hold are widened for storage; the tag keeps the real dtype, so a bfloat16 RESULT never
# compares equal to a float32 one.
_STORAGE = {torch.bfloat16: torch.float32, torch.float16: torch.float16}


class TensorWorld(World):
    def __init__(self) -> None:
        # One thread per test case: workers run side by side, and a fixed thread count keeps results stable.
        torch.set_num_threads(1)

    def namespace(self, case: dict) -> dict:
        assets = {a["name"]: a for a in case["assets"]}

        def load_tensor(name: str) -> torch.Tensor:
            if name not in assets:
                raise KeyError(f"no stored tensor named {name!r}; stored: {sorted(assets)}")
            a = assets[name]
            meta = a["meta"]
            flat = torch.frombuffer(bytearray(a["data"]), dtype=getattr(torch, meta["dtype"]))
            return flat.reshape(meta["shape"]).clone()

        return {"load_tensor": load_tensor}

    def canonical_leaf(self, obj):
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().resolve_conj().resolve_neg().contiguous()
            dtype = str(t.dtype).removeprefix("torch.")
            stored = t.to(_STORAGE.get(t.dtype, t.dtype)).numpy()
            return {"__tensor__": {
                "dtype": dtype,
                "shape": list(t.shape),
                "storage": stored.dtype.str.lstrip("<>|="),
                "data": base64.b64encode(stored.astype(stored.dtype.newbyteorder("<")).tobytes()).decode(),
            }}
        return super().canonical_leaf(obj)

    # ---- tool calling (`--mode tools`)

    def tools(self) -> Tools:
        return Tools({s.name: s for s in tool_specs()}, self._call, self.describe)

    def _call(self, namespace: dict, name: str, arguments: dict):
        op = _OPERATIONS[name]
        for param in op.handles:
            values = arguments.get(param)
            for v in values if isinstance(values, list) else [values]:
                if isinstance(v, str):
                    raise ValueError(f"{param}: no tensor handle named {v!r}; use a setup variable (x1, w1, ...) or a "
                                     "result handle (r1, r2[0], ...)")
        return _function(op)(**arguments)

    def describe(self, value):
        """Tensors as their shape and dtype (the values stay in the world), everything else as plain data."""
        def leaf(obj):
            if isinstance(obj, torch.Tensor):
                return {"tensor": {"shape": list(obj.shape), "dtype": str(obj.dtype).removeprefix("torch.")}}
            return self.canonical_leaf(obj)

        return canonicalize(value, leaf)

    def trace(self, namespace: dict, tracer: Tracer) -> None:
        for op in OPERATIONS:
            module, attr = _module_of(op)
            setattr(module, attr, tracer.wrap(op.spec(), getattr(module, attr), _signature(op)))

    def plain(self, value):
        return canonicalize(value, self.canonical_leaf)


_OPERATIONS = {op.tool: op for op in OPERATIONS}


def _module_of(op):
    prefix, attr = op.function.rsplit(".", 1)
    return (torch if prefix == "torch" else torch.nn.functional), attr


def _function(op):
    module, attr = _module_of(op)
    return getattr(module, attr)


def _signature(op) -> inspect.Signature:
    """The operation's Python signature, from its tool parameters (torch's builtins have none to inspect)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([inspect.Parameter(name, kind, default=schema.get("default", inspect.Parameter.empty))
                              for name, schema in op.parameters.items()])
