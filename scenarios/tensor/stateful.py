"""The frontier tier's PyTorch world: modules, optimizers and schedulers built from a test case's stored values, and
everything they hold read back as plain data. Runs inside sandbox workers only (it imports torch).

A frontier test case stores a model as an architecture (`meta["layers"]`) and its initial parameters (one float32
blob, in `named_parameters()` order); an optimizer and a scheduler as their class and hyper-parameters. The loaders
of the setup block (`load_model`, `load_optimizer`, `load_scheduler`, `load_tensor`) build them and keep each under
its stored name, so that after the program the world reads back *everything* they hold (`state`): every
parameter's value, `requires_grad` and gradient, every buffer, every module's mode, the optimizer's groups and
per-parameter state, the scheduler's step count, and the input tensors (a view's in-place change reaches them).
That is the oracle of a frontier task, compared whole, with the tolerance the documentation states.
"""

from __future__ import annotations

import contextlib
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F

LAYERS = {
    "Linear": lambda s: nn.Linear(s["in"], s["out"], bias=s["bias"]),
    "BatchNorm1d": lambda s: nn.BatchNorm1d(s["features"], momentum=s["momentum"]),
    "ReLU": lambda s: nn.ReLU(),
    "Tanh": lambda s: nn.Tanh(),
    "Dropout": lambda s: nn.Dropout(s["p"]),
}
OPTIMIZERS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam}
SCHEDULERS = {"StepLR": torch.optim.lr_scheduler.StepLR}
HYPER = ("lr", "momentum", "weight_decay", "betas", "eps", "dampening", "nesterov")  # a group's values read back


class Objects:
    """What the loaders handed out in one child, by stored name, in the order they were loaded."""

    def __init__(self, assets: dict[str, dict]):
        self.assets = assets
        self.by_name: dict[str, object] = {}

    def _meta(self, name: str, kind: str) -> dict:
        if name not in self.assets or self.assets[name]["kind"] != kind:
            stored = sorted(n for n, a in self.assets.items() if a["kind"] == kind)
            raise KeyError(f"no stored {kind} named {name!r}; stored: {stored}")
        return self.assets[name]["meta"]

    def load_model(self, name: str) -> nn.Sequential:
        meta = self._meta(name, "module")
        # The stored values replace torch's initialisation, which must not draw from the program's generator.
        with torch.random.fork_rng(devices=[]):
            model = nn.Sequential(*(LAYERS[layer["type"]](layer) for layer in meta["layers"]))
        flat = torch.frombuffer(bytearray(self.assets[name]["data"]), dtype=torch.float32)
        offset = 0
        with torch.no_grad():
            for pname, p in model.named_parameters():
                p.copy_(flat[offset:offset + p.numel()].reshape(p.shape))
                offset += p.numel()
                p.requires_grad_(pname not in meta["frozen"])
        self.by_name[name] = model
        return model

    def load_optimizer(self, name: str, model: nn.Module) -> torch.optim.Optimizer:
        meta = self._meta(name, "optimizer")
        opt = OPTIMIZERS[meta["type"]](model.parameters(), **meta["options"])
        self.by_name[name] = opt
        return opt

    def load_scheduler(self, name: str, optimizer: torch.optim.Optimizer):
        meta = self._meta(name, "scheduler")
        sched = SCHEDULERS[meta["type"]](optimizer, **meta["options"])
        self.by_name[name] = sched
        return sched

    def keep(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        self.by_name[name] = tensor
        return tensor

    # ------------------------------------------------------------------------------------------ read back

    def names(self) -> dict[int, str]:
        """Every parameter of a loaded model by object id: `"model.0.weight"`."""
        out = {}
        for name, obj in self.by_name.items():
            if isinstance(obj, nn.Module):
                for pname, p in obj.named_parameters():
                    out.setdefault(id(p), f"{name}.{pname}")
        return out

    def state(self, tensor) -> dict:
        """Everything the loaded objects hold, as data (`tensor` turns a tensor into plain data)."""
        names = self.names()
        out = {}
        for name, obj in self.by_name.items():
            if isinstance(obj, nn.Module):
                out[name] = {
                    "training": [m.training for m in obj.modules()],
                    "parameters": {n: {"value": tensor(p), "requires_grad": p.requires_grad,
                                       "grad": None if p.grad is None else tensor(p.grad)}
                                   for n, p in obj.named_parameters()},
                    "buffers": {n: tensor(b) for n, b in obj.named_buffers()},
                }
            elif isinstance(obj, torch.optim.Optimizer):
                groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items() if k in HYPER}
                          | {"params": [names.get(id(p), "?") for p in g["params"]]} for g in obj.param_groups]
                state = {names.get(id(p), "?"): {k: _plain_value(v, tensor) for k, v in sorted(s.items())}
                         for p, s in obj.state.items()}
                out[name] = {"param_groups": groups, "state": dict(sorted(state.items()))}
            elif isinstance(obj, torch.optim.lr_scheduler.LRScheduler):
                out[name] = {"last_epoch": obj.last_epoch}
            else:
                out[name] = tensor(obj)
        return out


def _plain_value(v, tensor):
    if isinstance(v, torch.Tensor):
        return tensor(v)
    return v


# ------------------------------------------------------------------------------------------------- traces
#
# The stateful API a frontier program calls, recorded as the paper tier's functions are (`world.TRACED`): the
# forward pass of a loaded model, the modes, the losses, backward, zeroing gradients, the optimizer's and the
# scheduler's steps, and gradient clipping. Only the outermost call is recorded (a model's forward calls its layers').


def _forward(module, *args, **kwargs):
    return {"module": module, "input": args[0] if args else kwargs.get("input")}


def _self_only(obj, *args, **kwargs):
    return {"self": obj}


def _mode(module, mode=True):
    return {"self": module, "mode": bool(mode)}


def _zero_grad(obj, set_to_none=True):
    return {"self": obj, "set_to_none": bool(set_to_none)}


def _loss(input, target, *args, **kwargs):  # noqa: A002 - torch's parameter name
    return {"input": input, "target": target, "reduction": kwargs.get("reduction", "mean")}


def _backward(tensor, *args, **kwargs):
    return {"self": tensor}


def _clip(parameters, max_norm, *args, **kwargs):
    return {"max_norm": float(max_norm)}


STATEFUL_OPTIONS = frozenset({"mode", "set_to_none", "reduction", "max_norm"})


def traced_api() -> tuple:
    """(owner, attribute, name recorded, arguments) of every stateful API; steps are methods of each class."""
    out = [
        (nn.Module, "__call__", "module.forward", _forward),
        (nn.Module, "train", "module.train", _mode),
        (nn.Module, "eval", "module.eval", _self_only),
        (nn.Module, "zero_grad", "module.zero_grad", _zero_grad),
        (torch.optim.Optimizer, "zero_grad", "optimizer.zero_grad", _zero_grad),
        (torch.Tensor, "backward", "tensor.backward", _backward),
        (F, "mse_loss", "F.mse_loss", _loss),
        (F, "cross_entropy", "F.cross_entropy", _loss),
        (torch.nn.utils, "clip_grad_norm_", "clip_grad_norm_", _clip),
        (torch.optim.lr_scheduler.LRScheduler, "step", "scheduler.step", _self_only),
    ]
    out += [(cls, "step", "optimizer.step", _self_only) for cls in OPTIMIZERS.values()]
    return tuple(out)


def object_leaf(objects: Objects | None, obj):
    """A loaded model, optimizer or scheduler in a trace: its stored name (anything else of the kind: its class)."""
    if isinstance(obj, (nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)):
        if objects is not None:
            for name, known in objects.by_name.items():
                if known is obj:
                    return {"__object__": name}
        return {"__object__": type(obj).__name__}
    return NotImplemented


def warm_up() -> None:
    """One training step of every kind of object the tier loads, so that what PyTorch imports and sets up on first
    use (about a second: the optimizers import their compiler hooks) happens once in the worker, not in every
    child it forks for a test case."""
    with torch.random.fork_rng(devices=[]):
        model = nn.Sequential(*(make({"in": 2, "out": 2, "bias": True, "features": 2, "momentum": 0.1, "p": 0.5})
                                for make in LAYERS.values()))
        x = torch.randn(4, 2)
        for cls in OPTIMIZERS.values():
            opt = cls(model.parameters(), lr=0.1)
            sched = SCHEDULERS["StepLR"](opt, step_size=1)
            for loss in (lambda: F.mse_loss(model(x), x), lambda: F.cross_entropy(model(x), torch.tensor([0, 1, 0, 1]))):
                opt.zero_grad()
                loss().backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
        model.eval()
        with torch.no_grad():
            model(x).argmax(dim=1)


# ---------------------------------------------------------------------------------------- tools (--mode tools)


def _no_grad(flag: bool):
    return torch.no_grad() if flag else contextlib.nullcontext()


def _inplace(method: str):
    def run(tensor, no_grad=False, **values):
        with _no_grad(no_grad):
            return getattr(tensor, method)(*values.values())
    return run


TOOL_FUNCTIONS = {
    "module_train": lambda module, mode=True: module.train(mode),
    "module_eval": lambda module: module.eval(),
    "forward": lambda module, input, no_grad=False: _forward_call(module, input, no_grad),  # noqa: A006
    "mse_loss": lambda input, target: F.mse_loss(input, target),  # noqa: A006
    "cross_entropy": lambda input, target: F.cross_entropy(input, target),  # noqa: A006
    "backward": lambda tensor: tensor.backward(),
    "optimizer_zero_grad": lambda optimizer, set_to_none=True: optimizer.zero_grad(set_to_none=set_to_none),
    "optimizer_step": lambda optimizer: optimizer.step(),
    "scheduler_step": lambda scheduler: scheduler.step(),
    "clip_grad_norm": lambda module, max_norm: float(torch.nn.utils.clip_grad_norm_(module.parameters(), max_norm)),
    "named_parameters": lambda module: [[n, p] for n, p in module.named_parameters()],
    "named_modules": lambda module: [[n, m] for n, m in module.named_modules()],
    "get_parameter": lambda module, name: module.get_parameter(name),
    "get_submodule": lambda module, name: module.get_submodule(name),
    "requires_grad_": lambda target, requires_grad: target.requires_grad_(requires_grad),
    "mul_": lambda tensor, value, no_grad=False: _inplace("mul_")(tensor, no_grad, value=value),
    "clamp_": lambda tensor, min, max, no_grad=False: _inplace("clamp_")(tensor, no_grad, min=min, max=max),  # noqa: A006
    "zero_": lambda tensor, no_grad=False: _inplace("zero_")(tensor, no_grad),
    "rows": lambda tensor, start, stop: tensor[start:stop],
    "clone": lambda tensor: tensor.detach().clone(),
    "sub": lambda a, b: a.detach() - b.detach(),
    "norm": lambda tensor: tensor.detach().norm().item(),
    "item": lambda tensor: tensor.item(),
    "argmax": lambda tensor, dim: tensor.argmax(dim=dim),
}


def _forward_call(module, input, no_grad):  # noqa: A002 - torch's parameter name
    with _no_grad(no_grad):
        return module(input)


def call_tool(name: str, arguments: dict):
    for key, value in arguments.items():
        if isinstance(value, str) and key not in ("name",):
            raise ValueError(f"{key}: no handle named {value!r}; use a setup variable (model, opt, sched, x, y) or a "
                             "result handle (r1, r2[0][1], r3.grad)")
    return TOOL_FUNCTIONS[name](**arguments)


def describe(value, plain):
    """What a tool result shows a model: tensors as shape, dtype and autograd flags (a scalar also as its value),
    modules as their kind and sizes, optimizers and schedulers as their kind; anything else as plain data."""
    if isinstance(value, torch.Tensor):
        out = {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
               "requires_grad": value.requires_grad}
        if isinstance(value, nn.Parameter):
            out["grad"] = None if value.grad is None else list(value.grad.shape)
        if value.dim() == 0:
            out["value"] = value.item()
        return {"tensor": out}
    if isinstance(value, nn.Module):
        out = {"type": type(value).__name__, "training": value.training}
        if isinstance(value, nn.Linear):
            out.update(in_features=value.in_features, out_features=value.out_features, bias=value.bias is not None)
        return {"module": out}
    if isinstance(value, (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)):
        return {"object": type(value).__name__}
    if isinstance(value, (list, tuple)):
        return [describe(v, plain) for v in value]
    return plain(value)


# ------------------------------------------------------------------------------ the reference as tool calls


class _Depth:
    inside = 0  # how many traced calls are running: only the outermost is a tool call


def trace_as_tools(objects: Objects, tracer, specs: dict) -> None:
    """Record a trusted program's stateful calls as the tools above (`--model reference` in tools mode). A value
    that is no handle yet (a layer's weight found by a loop, a slice of `x`) is first reached by the tool that
    names it (`get_parameter`, `get_submodule`, `rows`), so that the replay changes the same object."""
    def handle(value):
        if tracer.name_of(value) is not None:
            return value
        for name, obj in objects.by_name.items():
            if isinstance(obj, nn.Module):
                for pname, p in obj.named_parameters():
                    if p is value:
                        tracer.record(specs["get_parameter"], {"module": obj, "name": pname}, p)
                        return value
                for mname, m in obj.named_modules():
                    if m is value and mname:
                        tracer.record(specs["get_submodule"], {"module": obj, "name": mname}, m)
                        return value
        return value

    def wrap(owner, attr, tool, arguments, prepare=None):
        fn = getattr(owner, attr)

        @functools.wraps(fn)
        def traced(*args, **kwargs):
            if prepare is not None:  # arguments read twice (a generator of parameters) are read once, here
                args, kwargs = prepare(*args, **kwargs)
            named = None if _Depth.inside else arguments(*args, **kwargs)
            if named is None:  # inside another traced call, or not a call of the tier's API
                return fn(*args, **kwargs)
            _Depth.inside += 1
            try:
                for key in specs[tool].handles:
                    if key in named:
                        handle(named[key])
                result = fn(*args, **kwargs)
            finally:
                _Depth.inside -= 1
            tracer.record(specs[tool], named, result)
            return result

        setattr(owner, attr, traced)

    grad = lambda: {} if torch.is_grad_enabled() else {"no_grad": True}  # noqa: E731
    model_of = lambda params: next((m for m in objects.by_name.values() if isinstance(m, nn.Module)  # noqa: E731
                                    and [id(p) for p in m.parameters()] == [id(p) for p in params]), None)
    wrap(nn.Module, "train", "module_train", lambda self, mode=True: {"module": self, "mode": bool(mode)})
    wrap(nn.Module, "eval", "module_eval", lambda self: {"module": self})
    wrap(nn.Module, "__call__", "forward", lambda self, input, **_: {"module": self, "input": input, **grad()})
    wrap(F, "mse_loss", "mse_loss", lambda input, target, **_: {"input": input, "target": target})
    wrap(F, "cross_entropy", "cross_entropy", lambda input, target, **_: {"input": input, "target": target})
    wrap(torch.Tensor, "backward", "backward", lambda self, *a, **k: {"tensor": self})
    wrap(torch.optim.Optimizer, "zero_grad", "optimizer_zero_grad",
         lambda self, set_to_none=True: {"optimizer": self, "set_to_none": bool(set_to_none)})
    for cls in OPTIMIZERS.values():
        wrap(cls, "step", "optimizer_step", lambda self, closure=None: {"optimizer": self})
    wrap(torch.optim.lr_scheduler.LRScheduler, "step", "scheduler_step", lambda self, *a: {"scheduler": self})
    for obj in objects.by_name.values():  # a scheduler wraps its optimizer's step on the instance, at its creation
        if isinstance(obj, torch.optim.Optimizer) and "step" in vars(obj):
            wrap(obj, "step", "optimizer_step", lambda *a, opt=obj, **k: {"optimizer": opt})

    wrap(torch.nn.utils, "clip_grad_norm_", "clip_grad_norm",
         lambda params, max_norm, *a, **k: None if model_of(params) is None else {"module": model_of(params),
                                                                                "max_norm": float(max_norm)},
         prepare=lambda parameters, *a, **k: ((list(parameters), *a), k))
    wrap(nn.Module, "get_parameter", "get_parameter", lambda self, target: {"module": self, "name": target})
    wrap(nn.Module, "requires_grad_", "requires_grad_",
         lambda self, requires_grad=True: {"target": self, "requires_grad": bool(requires_grad)})
    wrap(torch.Tensor, "mul_", "mul_", lambda self, value: {"tensor": self, "value": float(value), **grad()})
    wrap(torch.Tensor, "clamp_", "clamp_", lambda self, min=None, max=None: {"tensor": self, "min": min, "max": max,
                                                                             **grad()})
    wrap(torch.Tensor, "zero_", "zero_", lambda self: {"tensor": self, **grad()})
    wrap(torch.Tensor, "argmax", "argmax", lambda self, dim=None, **_: {"tensor": self, "dim": dim})

    def rows(self, key):
        if isinstance(key, slice) and key.step is None and tracer.name_of(self) is not None:
            return {"tensor": self, "start": key.start or 0, "stop": self.shape[0] if key.stop is None else key.stop}
        return None

    wrap(torch.Tensor, "__getitem__", "rows", rows)
