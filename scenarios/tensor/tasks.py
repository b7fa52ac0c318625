"""The tensor scenario's frontier programs: steps of the frontier grammar (`scenarios/grammar.py`) over stateful
PyTorch (modules and their modes, autograd, optimizers and schedulers, views, the global generator).

The setup block loads a model (an `nn.Sequential` of Linear, BatchNorm1d, activation and Dropout layers), its
optimizer (SGD with momentum and weight decay, or Adam), sometimes a StepLR scheduler, an input batch `x` and its
targets `y` (regression or class indices), and seeds torch's generator. A program is four to seven steps:

* `snapshot` (with the aggregate *moved*): a copy of every parameter before anything changes them;
* `views`: an in-place change of some rows of `x` through a view (it must reach `x`: `clone()` would break it);
* `layers`: a loop over the model's Linear layers with a predicate on their sizes, and a body that clamps the
  weight and zeroes the bias where there is one, or freezes the layer (which later training and aggregates see);
* `train` (always): K standard training steps, each clearing the gradients, a forward pass in training mode, the
  loss, backward, the optimizer's step, then gradient clipping or the scheduler's step where the task says so;
* `lookup`: the parameter whose gradient has the largest norm (frozen parameters have none), scaled in place
  without autograd recording it;
* `evaluate`: predictions in evaluation mode without gradients, the model put back in training mode;
* `aggregate`: how many parameter elements are trainable now, or which parameter moved the most since the
  snapshot, and by how much.

Nothing is dictated that the world holds: which layers exist, their sizes, biases and frozen parameters differ
between test inputs (`population`), so a program reads them from the model. Each step's mutations are the state
hazards of PyTorch (`scenarios.grammar.OPERATORS`): a dropped `zero_grad`, the wrong mode or no way back, a
missing `no_grad`, a dropped or added `clone`, a step before the backward, a missing None check.

Builder side: no torch (values are drawn with numpy and stored as the paper tier's tensors are).
"""

from __future__ import annotations

import random

import numpy as np

from scenarios.base import VARIANTS, Asset, Call, State, Var
from scenarios.grammar import Mutation, Plan, Result, Step

PROFILES = ("original", "frozen", "no_bias", "none", "deep")
SEED_RANGE = (1, 9999)
TRIES = 500  # architectures drawn for a profile before one has what the profile must show
WIDTHS = (3, 9)  # hidden layer widths


class _Draw:
    """The choices of one program, shared by every test input: sizes of the data, the loss, the optimizer and the
    scheduler, and what the steps need of a population (`needs`, checked on each architecture drawn)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.d_in = rng.randint(4, 6)
        self.d_out = rng.randint(2, 4)
        self.batch = rng.randint(6, 10)
        self.loss = rng.choice(("mse", "ce"))
        if rng.random() < 0.6:
            self.optimizer = {"type": "SGD", "options": {"lr": rng.choice((0.05, 0.1, 0.2)),
                                                         "momentum": rng.choice((0.0, 0.9)),
                                                         "weight_decay": rng.choice((0.0, 0.01))}}
        else:
            self.optimizer = {"type": "Adam", "options": {"lr": rng.choice((0.01, 0.02, 0.05))}}
        self.scheduler = ({"type": "StepLR", "options": {"step_size": rng.choice((1, 2)), "gamma": 0.5}}
                          if rng.random() < 0.5 else None)
        self.needs: list = []  # (profile or None for all, check(arch) -> bool)
        self.freezes = False  # a step freezes layers: trainable counts move

    def intro(self) -> dict[str, str]:
        sched = " and its learning-rate scheduler `sched`" if self.scheduler else ""
        target = "regression targets" if self.loss == "mse" else "class indices"
        line = (f"The setup block loads `model` (an `nn.Sequential` whose layers, sizes and frozen parameters the "
                f"program must read from it), its optimizer `opt`{sched}, a batch of inputs `x` with its {target} "
                f"`y`, and seeds torch's global generator.")
        return {v: line for v in VARIANTS}


# ---------------------------------------------------------------------------------------------- populations


def _draw_arch(d: _Draw, rng: random.Random, profile: str) -> dict:
    """One model: Linear layers from `d_in` to `d_out`, the first hidden ones followed by BatchNorm1d, an activation
    and sometimes Dropout; biases and frozen parameters as the profile wants."""
    hidden = rng.randint(3, 4) if profile == "deep" else rng.randint(1, 2)
    widths = [d.d_in] + [rng.randint(*WIDTHS) for _ in range(hidden)] + [d.d_out]
    layers, names = [], []
    bn_done = False
    for k in range(len(widths) - 1):
        bias = not (profile == "no_bias" and rng.random() < 0.6) and not (profile != "no_bias" and rng.random() < 0.1)
        index = len(layers)
        layers.append({"type": "Linear", "in": widths[k], "out": widths[k + 1], "bias": bias})
        names.append((f"{index}.weight", (widths[k + 1], widths[k])))
        if bias:
            names.append((f"{index}.bias", (widths[k + 1],)))
        if k == len(widths) - 2:
            break
        if not bn_done or rng.random() < 0.4:
            bn_done = True
            index = len(layers)
            layers.append({"type": "BatchNorm1d", "features": widths[k + 1], "momentum": rng.choice((0.1, 0.2))})
            names += [(f"{index}.weight", (widths[k + 1],)), (f"{index}.bias", (widths[k + 1],))]
        layers.append({"type": rng.choice(("ReLU", "Tanh"))})
        if rng.random() < 0.5:
            layers.append({"type": "Dropout", "p": rng.choice((0.2, 0.3))})
    frozen: list[str] = []
    if profile == "frozen" or (profile == "original" and rng.random() < 0.3):
        count = rng.randint(1, 2) if profile == "frozen" else 1
        frozen = sorted(rng.sample([n for n, _ in names[:-1]], min(count, len(names) - 1)))
    return {"layers": layers, "params": names, "frozen": frozen}


def _linears(arch: dict) -> list[tuple[str, dict]]:
    return [(str(i), layer) for i, layer in enumerate(arch["layers"]) if layer["type"] == "Linear"]


def _population(d: _Draw, rng: random.Random, profile: str) -> State:
    for _ in range(TRIES):
        arch = _draw_arch(d, rng, profile)
        if all(check(arch) for where, check in d.needs if where in (None, profile)):
            break
    else:
        raise ValueError(f"no architecture of profile {profile!r} fits the program's steps")
    np_rng = np.random.default_rng(rng.getrandbits(64))
    state = State()
    blob = []
    for name, shape in arch["params"]:
        fan_in = shape[1] if len(shape) == 2 else 1
        if name.endswith(".weight") and len(shape) == 1:  # a BatchNorm scale, near one
            values = 1.0 + 0.1 * np_rng.standard_normal(shape)
        else:
            values = np_rng.standard_normal(shape) / np.sqrt(fan_in)
        blob.append(values.astype("<f4").reshape(-1))
    data = np.concatenate(blob).tobytes()
    meta = {"layers": arch["layers"], "frozen": arch["frozen"]}
    state.declare(Var("model", "model", meta), Asset("model", "module", meta, data))
    state.declare(Var("opt", "optimizer", d.optimizer), Asset("opt", "optimizer", d.optimizer, b""))
    if d.scheduler:
        state.declare(Var("sched", "scheduler", d.scheduler), Asset("sched", "scheduler", d.scheduler, b""))
    x = np_rng.standard_normal((d.batch, d.d_in)).astype("<f4")
    state.declare(Var("x", "tensor", x.shape), Asset("x", "tensor", {"dtype": "float32", "shape": list(x.shape)},
                                                         x.tobytes()))
    if d.loss == "mse":
        y = np_rng.standard_normal((d.batch, d.d_out)).astype("<f4")
        meta_y = {"dtype": "float32", "shape": list(y.shape)}
    else:
        y = np_rng.integers(0, d.d_out, size=(d.batch,)).astype("<i8")
        meta_y = {"dtype": "int64", "shape": list(y.shape)}
    state.declare(Var("y", "tensor", tuple(meta_y["shape"])), Asset("y", "tensor", meta_y, y.tobytes()))
    state.extra["seed"] = rng.randint(*SEED_RANGE)
    state.extra["frontier"] = True
    return state


def setup_lines(state: State) -> list[str]:
    """The setup block of a frontier population (`TensorScenario.setup_code`)."""
    opt = state.vars["opt"].value
    options = ", ".join(f"{k}={v!r}" for k, v in opt["options"].items())
    lines = ["import torch", "import torch.nn as nn", "import torch.nn.functional as F", "",
             'model = load_model("model")  # an nn.Sequential: Linear, BatchNorm1d, ReLU or Tanh, and Dropout layers',
             f'opt = load_optimizer("opt", model)  # torch.optim.{opt["type"]}(model.parameters(), {options})']
    if "sched" in state.vars:
        sched = state.vars["sched"].value
        options = ", ".join(f"{k}={v!r}" for k, v in sched["options"].items())
        lines.append(f'sched = load_scheduler("sched", opt)  # torch.optim.lr_scheduler.{sched["type"]}(opt, {options})')
    x, y = state.assets["x"].meta, state.assets["y"].meta
    lines.append(f'x = load_tensor("x")  # float32, shape {tuple(x["shape"])}')
    what = "float32" if y["dtype"] == "float32" else "int64 class indices"
    lines.append(f'y = load_tensor("y")  # {what}, shape {tuple(y["shape"])}')
    lines.append(f"torch.manual_seed({state.extra['seed']})  # dropout draws from torch's global generator")
    return lines


# ---------------------------------------------------------------------------------------------------- steps


def snapshot(d: _Draw) -> Step:
    code = "before1 = {name: p.detach().clone() for name, p in model.named_parameters()}\n"
    texts = {"natural": ["First keep a copy of every parameter of `model` as it is now."],
             "steps": ["Let `before1` map each name of `model.named_parameters()` to a detached copy (`clone()`) of "
                       "that parameter as it is now."],
             "vague": ["Before changing anything, save a copy of all of `model`'s parameters."]}
    muts = [Mutation("no_clone", code, code.replace(".detach().clone()", ".detach()"))]
    calls = [Call("module.named_parameters", ["model"], ["before1"], code, {})]
    return Step("lookup", code, texts, [], muts, [], calls, ("views",))


def views(d: _Draw) -> Step:
    rng = d.rng
    rows = rng.randint(2, d.batch - 2)
    bound = rng.choice((0.5, 1.0))
    code = f"x[:{rows}].clamp_(-{bound}, {bound})\n"
    texts = {"natural": [f"Clamp the first {rows} rows of `x` to [-{bound}, {bound}] in place, so that `x` itself "
                         f"changes (the rest of `x` stays as it is)."],
             "steps": [f"Clamp the view `x[:{rows}]` in place to [-{bound}, {bound}] (`clamp_`), changing `x`."],
             "vague": [f"Limit the values of `x`'s first {rows} rows to the range [-{bound}, {bound}], in `x` "
                       f"itself."]}
    facts = [("value", "views: the rows", (f"first {rows} rows", f"`x[:{rows}]`")),
             ("value", "views: the range", (f"[-{bound}, {bound}]",))]
    muts = [Mutation("no_clone", code, f"x[:{rows}].clone().clamp_(-{bound}, {bound})\n"),
            Mutation("wrong_item", code, f"x[-{rows}:].clamp_(-{bound}, {bound})\n")]
    calls = [Call("tensor.clamp_", ["x"], ["x"], code, {})]
    return Step("bulk", code, texts, facts, muts, [], calls, ("views",))  # one call on a range of rows


def layers(d: _Draw) -> Step:
    rng = d.rng
    side = rng.choice(("out", "in"))
    n = rng.randint(4, 7) if side == "out" else rng.randint(max(4, d.d_in), 7)  # the first layer's input never matches
    other = "in" if side == "out" else "out"
    feature = f"{side}_features"
    body = rng.choice(("clamp", "freeze"))
    cond = f"isinstance(m, nn.Linear) and m.{feature} > {n}"
    if body == "clamp":
        c = rng.choice((0.1, 0.2, 0.3))
        act = (f"        with torch.no_grad():\n"
               f"            m.weight.clamp_(-{c}, {c})\n"
               f"            if m.bias is not None:\n"
               f"                m.bias.zero_()\n")
        does = {"natural": f"clamp its weight to [-{c}, {c}] in place and set its bias to zeros where it has one "
                           f"(changes autograd must not record)",
                "steps": f"inside `torch.no_grad()`, clamp `m.weight` in place to [-{c}, {c}] and, when `m.bias` is "
                         f"not None, fill it with zeros (`zero_()`)",
                "vague": f"limit its weights to [-{c}, {c}] and zero its bias if it has one, without autograd "
                         f"tracking it"}
        muts = [Mutation("null_field", "            if m.bias is not None:\n                m.bias.zero_()\n",
                         "            m.bias.zero_()\n"),
                Mutation("no_no_grad", act, act.replace("        with torch.no_grad():\n", "        if True:\n")),
                Mutation("drop_write", "            m.weight.clamp_", "            m.weight.clamp")]
        facts = [("value", "layers: the clamp range", (f"[-{c}, {c}]",))]
    else:
        act = "        m.requires_grad_(False)\n"
        does = {"natural": "freeze it (its weight and its bias, where it has one, stop requiring gradients; the "
                           "model always keeps some trainable parameter)",
                "steps": "call `m.requires_grad_(False)`",
                "vague": "freeze its parameters (some parameter of the model always stays trainable)"}
        muts = [Mutation("drop_write", act, "        pass\n"),
                Mutation("wrong_item", act, "        m.weight.requires_grad_(False)\n")]
        facts = []
        d.freezes = True
    code = (f"changed1 = []\n"
            f"for name, m in model.named_modules():\n"
            f"    if {cond}:\n{act}"
            f"        changed1.append(name)\n")
    muts += [Mutation("predicate", f"m.{feature} > {n}", f"m.{feature} >= {n}"),
             Mutation("predicate", f"m.{feature} > {n}", f"m.{feature} > {n + 1}"),
             Mutation("predicate", f"m.{feature} > {n}", f"m.{other}_features > {n}"),
             Mutation("first_match", "        changed1.append(name)\n", "        changed1.append(name)\n        break\n")]
    size = "outputs" if side == "out" else "inputs"
    texts = {"natural": [f"For every `nn.Linear` layer of `model` with more than {n} {size} ({feature}), {does['natural']}; "
                         f"note the names of those layers (as `named_modules()` gives them, in its order)."],
             "steps": [f"Let `changed1` be an empty list; for each `name, m` of `model.named_modules()` that is an "
                       f"`nn.Linear` with `m.{feature} > {n}`, {does['steps']}, and append `name` to `changed1`."],
             "vague": [f"Go through `model`'s linear layers with more than {n} {size}: {does['vague']}, and keep a list of "
                       f"the module names of all those layers in model order."]}
    facts += [("value", "layers: the threshold", (f"more than {n} {size}", f"`m.{feature} > {n}`"))]
    results = [Result("changed1", {"natural": "the names of the layers changed", "steps": "`changed1`",
                                   "vague": "the names of the layers changed"})]
    calls = [Call("module.named_modules", ["model"], ["changed1"], code, {}),
             Call("module.parameters", ["changed1"], ["model.params"], code, {})]

    def matches(arch, ge=False, feat=feature):
        return [name for name, layer in _linears(arch)
                if (layer[feat.split("_")[0]] >= n if ge else layer[feat.split("_")[0]] > n)]

    d.needs += [("original", lambda a: len(matches(a)) >= 2),
                ("none", lambda a: not matches(a)),
                ("frozen", lambda a: any(layer[side] == n + 1 for _, layer in _linears(a))),
                ("deep", lambda a: matches(a) != matches(a, ge=True)
                 and matches(a) != matches(a, feat=f"{other}_features") and len(matches(a)) >= 1)]
    if body == "clamp":
        d.needs.append(("no_bias", lambda a: any(not layer["bias"] for name, layer in _linears(a)
                                                if name in matches(a))))
    return Step("loop", code, texts, facts, muts, results, calls, ("lookups", "loops", "modes"))


def train(d: _Draw) -> Step:
    rng = d.rng
    k = rng.randint(2, 4)
    loss_fn = "F.mse_loss" if d.loss == "mse" else "F.cross_entropy"
    loss_text = "mean squared error" if d.loss == "mse" else "cross-entropy"
    clip = rng.choice((0.5, 1.0)) if rng.random() < 0.4 else None
    extra, extra_text, extra_steps, extra_vague = "", "", "", ""
    if clip is not None:
        extra += f"    torch.nn.utils.clip_grad_norm_(model.parameters(), {clip})\n"
        extra_text = f", clips the total gradient norm to {clip}"
        extra_steps = f", `torch.nn.utils.clip_grad_norm_(model.parameters(), {clip})`"
        extra_vague = f", with gradients clipped to a total norm of {clip}"
    after = ""
    sched_text, sched_steps, sched_vague = "", "", ""
    if d.scheduler:
        after = "    sched.step()\n"
        sched_text = ", then advances `sched` once"
        sched_steps = ", then `sched.step()`"
        sched_vague = ", the schedule advancing once per step"
    code = (f"losses1 = []\n"
            f"for _ in range({k}):\n"
            f"    opt.zero_grad()\n"
            f"    loss1 = {loss_fn}(model(x), y)\n"
            f"    loss1.backward()\n{extra}"
            f"    opt.step()\n{after}"
            f"    losses1.append(loss1.item())\n")
    texts = {"natural": [f"Train `model` in training mode for {k} steps on `x` and `y` with the {loss_text} loss "
                         f"(mean over the batch): each step clears the gradients with `opt.zero_grad()`, runs one "
                         f"forward pass, backpropagates the loss{extra_text}, steps `opt`{sched_text}, and notes the "
                         f"loss as a Python float."],
             "steps": [f"With `model` in training mode (as it is), {k} times: `opt.zero_grad()`, `loss1 = {loss_fn}(model(x), y)`, "
                       f"`loss1.backward()`{extra_steps}, `opt.step()`{sched_steps}, and append `loss1.item()` to a "
                       f"list `losses1`."],
             "vague": [f"Run {k} training steps of `model` on (`x`, `y`) minimising the {loss_text}, one forward "
                       f"pass per step, gradients cleared before each{extra_vague}{sched_vague}, recording each "
                       f"step's loss (that of its forward pass, as a float)."]}
    facts = [("value", "train: the number of steps", (f"{k} steps", f"{k} times", f"{k} training steps")),
             ("value", "train: the loss", (loss_text, f"`loss1 = {loss_fn}(model(x), y)`"))]
    if clip is not None:
        facts.append(("value", "train: the clipping norm", (f"norm to {clip}", f"norm of {clip}", f"`torch.nn.utils.clip_grad_norm_(model.parameters(), {clip})`")))
    muts = [Mutation("no_zero_grad", "    opt.zero_grad()\n", ""),
            Mutation("wrong_mode", "losses1 = []\n", "model.eval()\nlosses1 = []\n"),
            Mutation("step_order", "    loss1.backward()\n" + extra + "    opt.step()\n",
                     "    opt.step()\n    loss1.backward()\n" + extra)]
    if extra:  # clipping after the step it should bound, and no clipping at all
        muts += [Mutation("step_order", extra + "    opt.step()\n", "    opt.step()\n" + extra),
                 Mutation("drop_write", extra, "")]
    if after:
        muts.append(Mutation("drop_write", after, ""))
    results = [Result("losses1", {"natural": "the losses of the training steps, in order",
                                  "steps": "`losses1`", "vague": "the per-step losses"})]
    calls = [Call("module.forward", ["model", "x"], ["out"], code, {}),
             Call(loss_fn, ["out", "y"], ["loss1"], code, {}),
             Call("tensor.backward", ["loss1"], ["grads"], code, {}),
             Call("optimizer.step", ["opt", "grads"], ["model.params"], code, {})]
    if d.scheduler:
        calls.append(Call("scheduler.step", ["sched"], ["lr"], code, {}))
    levers = ("autograd", "optimizers", "modes", "randomness") + (("schedulers",) if d.scheduler else ())
    return Step("loop", code, texts, facts, muts, results, calls, levers)


def lookup(d: _Draw) -> Step:
    rng = d.rng
    factor = rng.choice((0.5, 0.25, 2.0))
    # Only the largest: the smallest is often a Linear bias that BatchNorm follows, whose gradient is rounding
    # noise around zero (the batch mean cancels it), so which parameter it is would depend on that noise.
    line = "top1 = max(norms1, key=norms1.get)\n"
    code = ("norms1 = {name: p.grad.norm().item() for name, p in model.named_parameters() if p.grad is not None}\n"
            + line +
            "with torch.no_grad():\n"
            f"    model.get_parameter(top1).mul_({factor})\n")
    texts = {"natural": ["Then find the parameter of `model` whose gradient (its `.grad` as training left it) has "
                         "the largest L2 norm (of those that have a gradient: there is always one), and multiply that "
                         f"parameter by {factor} in place without autograd recording it."],
             "steps": ["Let `norms1` map each name of `model.named_parameters()` whose `p.grad` is not None to "
                       "`p.grad.norm().item()`.",
                       "Let `top1` be the name with the largest norm; inside `torch.no_grad()`, multiply "
                       f"`model.get_parameter(top1)` in place by {factor} (`mul_`)."],
             "vague": ["Find which parameter has the largest gradient norm, with the gradients as training left "
                       "them (after any clipping) and ignoring parameters without one (at least one has one), and "
                       f"scale that parameter itself (not its gradient) by {factor}, outside autograd."]}
    facts = [("value", "lookup: the aggregate", ("largest",)), ("value", "lookup: the factor", (f"{factor}",))]
    muts = [Mutation("null_field", " if p.grad is not None}", "}"),
            Mutation("aggregate", line, line.replace("max(", "min(")),
            Mutation("no_no_grad", "with torch.no_grad():\n    model.get_parameter",
                     "if True:\n    model.get_parameter"),
            Mutation("drop_write", f"    model.get_parameter(top1).mul_({factor})\n", "    pass\n")]
    results = [Result("top1", {"natural": "the name of the parameter with the largest gradient norm",
                               "steps": "`top1`", "vague": "the name of the parameter with the largest gradient"})]
    calls = [Call("module.named_parameters", ["model", "grads"], ["top1"], code, {}),
             Call("tensor.mul_", ["top1", "model.params"], ["model.params"], code, {})]
    d.needs.append(("frozen", lambda a: bool(a["frozen"])))
    return Step("lookup", code, texts, facts, muts, results, calls, ("lookups", "autograd", "aggregates"))


def evaluate(d: _Draw) -> Step:
    pred = "model(x).argmax(dim=1)" if d.loss == "ce" else "model(x)"
    what = "predicted class of each row" if d.loss == "ce" else "model's outputs"
    code = ("model.eval()\n"
            "with torch.no_grad():\n"
            f"    pred1 = {pred}\n"
            "model.train()\n")
    cls = " (the index of the largest output of each row, as an int64 tensor)" if d.loss == "ce" else ""
    texts = {"natural": [f"Then compute the {what}{cls} for `x` in evaluation mode without tracking gradients, and "
                         f"put `model` back in training mode."],
             "steps": [f"Call `model.eval()`, set `pred1 = {pred}` inside `torch.no_grad()`, then call "
                       f"`model.train()`."],
             "vague": [f"Get the {what} on `x` for inference{cls}, in evaluation mode and without tracking "
                       f"gradients, leaving `model` in training mode afterwards."]}
    muts = [Mutation("wrong_mode", "model.eval()\nwith", "with"),
            Mutation("no_restore", "    pred1 = " + pred + "\nmodel.train()\n", "    pred1 = " + pred + "\n")]
    results = [Result("pred1", {"natural": f"the {what}", "steps": "`pred1`", "vague": f"the {what}"})]
    calls = [Call("module.eval", ["model"], ["mode"], code, {}),
             Call("module.forward", ["model", "mode", "x"], ["pred1"], code, {}),
             Call("module.train", ["model"], ["mode"], code, {})]
    return Step("lookup", code, texts, [("value", "evaluate: the mode", ("evaluation mode", "`model.eval()`",
                                                                       "inference"))], muts, results, calls,
                ("modes",))


def trainable(d: _Draw) -> Step:
    code = "trainable1 = sum(p.numel() for p in model.parameters() if p.requires_grad)\n"
    texts = {"natural": ["Finally count the parameter elements of `model` that require gradients now."],
             "steps": ["Let `trainable1` be the sum of `p.numel()` over the parameters `p` of `model` with "
                       "`p.requires_grad`."],
             "vague": ["Count how many individual parameter values of `model` (weights, biases and all) are "
                       "trainable at this point."]}
    muts = [Mutation("predicate", " if p.requires_grad)", ")"),
            Mutation("aggregate", "sum(p.numel() for p", "sum(1 for p")]
    results = [Result("trainable1", {"natural": "the number of trainable parameter elements", "steps": "`trainable1`",
                                     "vague": "the number of trainable values"})]
    calls = [Call("module.parameters", ["model.params"], ["trainable1"], code, {})]
    if not d.freezes:
        d.needs.append(("frozen", lambda a: bool(a["frozen"])))
    return Step("aggregate", code, texts, [("value", "aggregate: what is counted", ("require gradients",
                                                                                   "`p.requires_grad`", "trainable"))],
                muts, results, calls, ("aggregates",))


def moved(d: _Draw) -> Step:
    code = ("moved1 = {name: (p.detach() - before1[name]).norm().item() for name, p in model.named_parameters()}\n"
            "most1 = max(moved1, key=moved1.get)\n")
    texts = {"natural": ["Finally find the parameter that moved the most since the copy: the largest L2 norm of its "
                         "change."],
             "steps": ["Let `moved1` map each name of `model.named_parameters()` to the L2 norm of "
                       "`p.detach() - before1[name]` as a float, and `most1` be the name with the largest value."],
             "vague": ["Work out which parameter changed the most overall since the saved copy (by the norm of the "
                       "difference)."]}
    muts = [Mutation("aggregate", "most1 = max(", "most1 = min(")]
    results = [Result("most1", {"natural": "the name of the parameter that moved the most", "steps": "`most1`",
                                "vague": "the name of the most-changed parameter"}),
               Result("moved1[most1]", {"natural": "how far that parameter moved (the norm of its change)",
                                        "steps": "`moved1[most1]`",
                                        "vague": "the size of that parameter's change"})]
    calls = [Call("module.named_parameters", ["model.params", "before1"], ["most1"], code, {})]
    return Step("aggregate", code, texts, [("value", "aggregate: moved the most", ("the most", "largest"))], muts, results,
                calls, ("aggregates", "views"))


def plan(scenario, rng: random.Random) -> Plan:
    """One frontier program (see the module docstring)."""
    d = _Draw(rng)
    last = rng.choice(("trainable", "moved"))
    steps: list[Step] = []
    if last == "moved":
        steps.append(snapshot(d))
    if rng.random() < 0.35:
        steps.append(views(d))
    if rng.random() < 0.7:
        steps.append(layers(d))
    steps.append(train(d))
    if rng.random() < 0.7:
        steps.append(lookup(d))
    if rng.random() < 0.6:
        steps.append(evaluate(d))
    steps.append(trainable(d) if last == "trainable" else moved(d))
    return Plan(scenario, "", [], steps, lambda r, p: _population(d, r, p), PROFILES, d.intro())
