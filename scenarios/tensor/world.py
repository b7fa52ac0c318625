"""The tensor world: runs inside sandbox workers only (it imports torch)."""

from __future__ import annotations

import base64
import functools
import hashlib
import inspect

import torch
import torch.nn.functional as F

from scenarios.base import World, canonicalize
from scenarios.calling import Tools, Tracer
from scenarios.mutants import altered_plain
from scenarios.tensor import stateful
from scenarios.tensor.doc import OPERATIONS, frontier_tool_specs, tool_specs

# dtypes numpy cannot hold are widened for storage; the tag keeps the real dtype, so a bfloat16 RESULT never
# compares equal to a float32 one.
_STORAGE = {torch.bfloat16: torch.float32, torch.float16: torch.float16}


def is_frontier(case: dict) -> bool:
    """Whether a test case is the frontier tier's: it stores a model (`scenarios.tensor.stateful`)."""
    return any(a["kind"] == "module" for a in case["assets"])


class TensorWorld(World):
    def __init__(self) -> None:
        # One thread per test case: workers run side by side, and a fixed thread count keeps results stable.
        torch.set_num_threads(1)
        self.objects: stateful.Objects | None = None  # a frontier case's loaded objects (in the child)
        self.warm = False  # whether the stateful API has been used once in this worker

    def reset(self, case: dict) -> None:
        """In the worker, before the fork: the first frontier case warms the stateful API up (`stateful.warm_up`)."""
        if not self.warm and is_frontier(case):
            stateful.warm_up()
            self.warm = True

    def namespace(self, case: dict) -> dict:
        assets = {a["name"]: a for a in case["assets"]}

        def load_tensor(name: str) -> torch.Tensor:
            if name not in assets or assets[name]["kind"] != "tensor":
                raise KeyError(f"no stored tensor named {name!r}; stored: "
                               f"{sorted(n for n, a in assets.items() if a['kind'] == 'tensor')}")
            a = assets[name]
            meta = a["meta"]
            flat = torch.frombuffer(bytearray(a["data"]), dtype=getattr(torch, meta["dtype"]))
            tensor = flat.reshape(meta["shape"]).clone()
            return tensor if self.objects is None else self.objects.keep(name, tensor)

        if not is_frontier(case):
            self.objects = None
            return {"load_tensor": load_tensor}
        self.objects = objects = stateful.Objects(assets)
        return {"load_tensor": load_tensor, "load_model": objects.load_model,
                "load_optimizer": objects.load_optimizer, "load_scheduler": objects.load_scheduler}

    def recorded(self, namespace: dict):
        """A frontier case's side effects: everything its loaded objects hold (`stateful.Objects.state`)."""
        if self.objects is None:
            return None
        return self.objects.state(self.canonical_leaf)

    def trace_value(self, obj):
        """A tensor as its dtype, shape and a digest of its bytes: a trace compares values exactly and never needs
        them back, so hashing the bytes spares encoding them (RESULT keeps them, compared with a tolerance)."""
        return canonicalize(obj, self._trace_leaf)

    def _trace_leaf(self, obj):
        named = stateful.object_leaf(self.objects, obj)
        if named is not NotImplemented:
            return named
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().resolve_conj().resolve_neg().contiguous()
            data = t.reshape(-1).view(torch.uint8).numpy().tobytes()
            return {"__tensor__": {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                                   "#": hashlib.blake2b(data, digest_size=8).hexdigest()}}
        return self.canonical_leaf(obj)

    def altered(self, value):
        """A tensor with one added (a boolean one negated), anything else as plain data is altered."""
        return altered_plain(value, lambda t: (~t if t.dtype == torch.bool else t + 1)
                             if isinstance(t, torch.Tensor) else t)

    def record_calls(self, namespace: dict, recorder) -> None:
        _install(self.objects is not None)  # once per child (see TRACED below): a batch's programs share the wrappers
        _Current.recorder = recorder

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
        """The paper tier's six operations, or on a frontier case (asked after its setup has run) the stateful
        subset (`doc.FRONTIER_TOOLS`)."""
        if self.objects is not None:
            return Tools({s.name: s for s in frontier_tool_specs()},
                         lambda namespace, name, arguments: stateful.call_tool(name, arguments),
                         lambda value: stateful.describe(value, self.plain))
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

    def trace_as_tools(self, namespace: dict, tracer: Tracer) -> None:
        if self.objects is not None:
            stateful.trace_as_tools(self.objects, tracer, {s.name: s for s in frontier_tool_specs()})
            return
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

# ------------------------------------------------------------------------------------------------- traces
#
# The six APIs of the state machine, wherever a program reaches them: torch's functions (and the aliases of cat),
# torch.nn.functional's, and the Tensor methods of the same name. Each is recorded under one name with its
# arguments by parameter name, defaults filled in and equivalent spellings made one (a negative or swapped
# dimension, `stride=1` and `stride=(1, 1)`), so that a call is compared for what it does, not how it was written.
# The wrappers are installed in the sandbox child only (a forked process of its own): `import torch` in a program
# finds them, and the worker's torch is never touched.

OPTIONS = frozenset({"dim", "dim0", "dim1", "dims", "split_size_or_sections", "stride", "padding", "dilation",
                     "groups"})


def _dim(d, x) -> int:
    return d % x.dim() if isinstance(d, int) and isinstance(x, torch.Tensor) and x.dim() else d


def _pair(v):
    return [v, v] if isinstance(v, int) and not isinstance(v, bool) else v


def _cat(tensors, dim=0, **_):
    first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else None
    return {"tensors": list(tensors), "dim": _dim(dim, first)}


def _split(tensor, split_size_or_sections=None, dim=0, split_size=None, **_):
    sizes = split_size if split_size_or_sections is None else split_size_or_sections
    return {"tensor": tensor, "split_size_or_sections": sizes, "dim": _dim(dim, tensor)}


def _transpose(input, dim0, dim1, **_):  # noqa: A002 - torch's parameter name
    return {"input": input, "dims": sorted([_dim(dim0, input), _dim(dim1, input)])}


def _permute(input, *dims, **kwargs):  # noqa: A002
    dims = kwargs.get("dims", dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims)
    return {"input": input, "dims": [_dim(d, input) for d in dims]}


def _linear(input, weight, bias=None, **_):  # noqa: A002
    return {"input": input, "weight": weight, "bias": bias}


def _conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, **_):  # noqa: A002
    padding = [0, 0] if padding == "valid" else _pair(padding)
    return {"input": input, "weight": weight, "bias": bias, "stride": _pair(stride), "padding": padding,
            "dilation": _pair(dilation), "groups": groups}


TRACED = (  # (owner, attribute, name recorded, arguments)
    (torch, "cat", "torch.cat", _cat),
    (torch, "concat", "torch.cat", _cat),
    (torch, "concatenate", "torch.cat", _cat),
    (torch, "split", "torch.split", _split),
    (torch.Tensor, "split", "torch.split", _split),
    (torch, "transpose", "torch.transpose", _transpose),
    (torch.Tensor, "transpose", "torch.transpose", _transpose),
    (torch, "permute", "torch.permute", _permute),
    (torch.Tensor, "permute", "torch.permute", _permute),
    (F, "linear", "F.linear", _linear),
    (F, "conv2d", "F.conv2d", _conv2d),
)


class _Current:
    recorder = None  # the recorder of the program running in this child


def _traced(fn, api: str, arguments, options=OPTIONS):
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        recorder = _Current.recorder
        if recorder is None or not recorder.recording:
            return fn(*args, **kwargs)
        return recorder.run(api, lambda: arguments(*args, **kwargs), lambda: fn(*args, **kwargs), options)

    traced.__stateeval_traced__ = True
    return traced


def _install(frontier: bool = False) -> None:
    for owner, attr, api, arguments in TRACED:
        fn = getattr(owner, attr)
        if not getattr(fn, "__stateeval_traced__", False):
            setattr(owner, attr, _traced(fn, api, arguments))
    if frontier:  # the stateful API of the frontier tier (modules, losses, optimizers), with its own options
        for owner, attr, api, arguments in stateful.traced_api():
            fn = getattr(owner, attr)
            if not getattr(fn, "__stateeval_traced__", False):
                setattr(owner, attr, _traced(fn, api, arguments, stateful.STATEFUL_OPTIONS))
