"""The `tensor` scenario's state machine: PyTorch shape manipulation and layers on the CPU.

Every tensor in a program is 4-D, so any API can follow any other; shapes are solved from the tensors in scope
so that every emitted call is legal. Weights for `F.linear` and `F.conv2d` are declared in the setup block when
a call needs them (or an earlier weight of the right shape is reused). Sizes are capped so that a task's stored
data stays far below 100 KB.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np

from scenarios.base import (FRONTIER, PAPER, API, Asset, Call, Condition, Scenario, State, Var, compare_plain, join_names,
                            setup_block)

MAX_DIM = 6  # largest size of any dimension of any tensor
MAX_BATCH = 2
DTYPE = "float32"
RTOL = 1e-4  # the tolerance stated in the API documentation
ATOL = 1e-4

TENSOR, WEIGHT = "tensor", "weight"
DOCS = {PAPER: "api_doc.md", FRONTIER: "api_doc_frontier.md"}
ORDINALS = ("first", "second", "third")


def _shape(state: State, name: str) -> tuple[int, ...]:
    return tuple(state.vars[name].value)


def _new_tensor(state: State, inputs: tuple[str, ...], shape: tuple[int, ...], api: str) -> str:
    state.consume(inputs, api)
    return state.produce("v", TENSOR, tuple(shape), api)


def _declare_weight(state: State, prefix: str, shape: tuple[int, ...], rng: random.Random) -> str:
    name = state.fresh(prefix)
    state.declare(Var(name, WEIGHT, tuple(shape)), _random_asset(name, shape, rng))
    return name


def _random_asset(name: str, shape: tuple[int, ...], rng: random.Random) -> Asset:
    values = np.random.default_rng(rng.getrandbits(64)).standard_normal(shape).astype("<f4")
    return Asset(name, "tensor", {"dtype": DTYPE, "shape": list(shape)}, values.tobytes())


def _weight_for(state: State, shape: tuple[int, ...], prefix: str, rng: random.Random) -> str:
    """Reuse a declared weight of exactly this shape half of the time (a data-flow binding), else declare one."""
    fits = [v.name for v in state.of_type(WEIGHT) if tuple(v.value) == shape and v.name.startswith(prefix)]
    if fits and rng.random() < 0.5:
        return rng.choice(fits)
    return _declare_weight(state, prefix, shape, rng)


class Cat(API):
    name = "cat"
    phrases = (
        "concatenate {in0_} and {in1_} along dimension {dim}, naming the result {out0_}",
        "join {in0_} and {in1_} (in that order) on dim {dim} to get {out0_}",
        "stack {in0_} and {in1_} end to end along dimension {dim}; call the result {out0_}",
    )
    natural = (
        "concatenate {in0_} and {in1_} along dimension {dim}",
        "join {in0_} and {in1_}, in that order, along dim {dim}",
    )
    vague = (
        "glue {in1_} onto the end of {in0_} along axis {dim}",
        "put {in0_} and {in1_} one after the other along axis {dim}",
    )
    noun = "{nth}concatenated tensor"
    vague_noun = "{nth}joined tensor"

    def values(self, call):
        return {"dim": (str(call.args["dim"]),)}

    @staticmethod
    def _dims(a: tuple[int, ...], b: tuple[int, ...]) -> list[int]:
        differ = [d for d in range(4) if a[d] != b[d]]
        if len(differ) > 1:
            return []
        dims = differ or list(range(4))
        return [d for d in dims if a[d] + b[d] <= (MAX_BATCH if d == 0 else MAX_DIM)]

    def bindings(self, state):
        ts = [v.name for v in state.of_type(TENSOR)]
        pairs = [(a, b) for a, b in itertools.permutations(ts, 2) if self._dims(_shape(state, a), _shape(state, b))]
        if not pairs:  # joining a tensor with itself keeps cat callable when no two tensors fit
            pairs = [(a, a) for a in ts if self._dims(_shape(state, a), _shape(state, a))]
        return pairs

    def apply(self, state, inputs, rng):
        a, b = inputs
        sa, sb = _shape(state, a), _shape(state, b)
        dim = rng.choice(self._dims(sa, sb))
        shape = list(sa)
        shape[dim] = sa[dim] + sb[dim]
        out = _new_tensor(state, inputs, tuple(shape), self.name)
        return Call(self.name, list(inputs), [out], f"{out} = torch.cat([{a}, {b}], dim={dim})", {"dim": dim})


class Split(API):
    name = "split"
    phrases = (
        "split {in0_} along dimension {dim} into pieces of sizes {sizes}, naming them {outs}",
        "cut {in0_} on dim {dim} into chunks of {sizes} elements and unpack them as {outs}",
        "break {in0_} into parts of sizes {sizes} along dimension {dim}; call the parts {outs}",
    )
    natural = (
        "split {in0_} along dimension {dim} into pieces of sizes {sizes}",
        "cut {in0_} into chunks of sizes {sizes} along dim {dim}",
    )
    vague = (
        "cut {in0_} along axis {dim} into consecutive parts of {sizes} elements",
        "divide {in0_} along axis {dim} into consecutive blocks of sizes {sizes}",
    )

    def nouns(self, call):
        return [f"{ORDINALS[k]} piece of the {{nth}}split" for k in range(len(call.outputs))]

    def vague_nouns(self, call):
        return [f"{ORDINALS[k]} part of the {{nth}}cut tensor" for k in range(len(call.outputs))]

    def values(self, call):
        return {"dim": (str(call.args["dim"]),), "sizes": (str(call.args["sizes"]),)}

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(TENSOR) if any(s >= 2 for s in v.value)]

    def apply(self, state, inputs, rng):
        (x,) = inputs
        shape = _shape(state, x)
        dim = rng.choice([d for d in range(4) if shape[d] >= 2])
        n = shape[dim]
        parts = 3 if n >= 3 and rng.random() < 0.3 else 2
        cuts = sorted(rng.sample(range(1, n), parts - 1))
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n])]
        outs = []
        for s in sizes:
            piece = list(shape)
            piece[dim] = s
            outs.append(_new_tensor(state, (), tuple(piece), self.name))
        state.consume((x,), self.name)
        code = f"{', '.join(outs)} = torch.split({x}, {sizes}, dim={dim})"
        return Call(self.name, [x], outs, code, {"dim": dim, "sizes": sizes})


class Transpose(API):
    name = "transpose"
    phrases = (
        "swap dimensions {dim0} and {dim1} of {in0_} to get {out0_}",
        "transpose {in0_}, exchanging dims {dim0} and {dim1}, and call it {out0_}",
        "exchange axes {dim0} and {dim1} of {in0_}; name the result {out0_}",
    )
    natural = ("swap dimensions {dim0} and {dim1} of {in0_}", "transpose dims {dim0} and {dim1} of {in0_}")
    vague = ("exchange axes {dim0} and {dim1} of {in0_}", "let axes {dim0} and {dim1} of {in0_} trade places")
    noun = "{nth}transposed tensor"
    vague_noun = "{nth}tensor with exchanged axes"

    def values(self, call):
        return {"dim0": (str(call.args["dim0"]),), "dim1": (str(call.args["dim1"]),)}

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(TENSOR) if any(s > 1 for s in v.value)]

    def apply(self, state, inputs, rng):
        (x,) = inputs
        shape = list(_shape(state, x))
        pairs = [(a, b) for a, b in itertools.combinations(range(4), 2) if shape[a] > 1 or shape[b] > 1]
        d0, d1 = rng.choice(pairs)  # swapping two dimensions of size 1 would change nothing
        shape[d0], shape[d1] = shape[d1], shape[d0]
        out = _new_tensor(state, inputs, tuple(shape), self.name)
        return Call(self.name, [x], [out], f"{out} = torch.transpose({x}, {d0}, {d1})", {"dim0": d0, "dim1": d1})


class Permute(API):
    name = "permute"
    phrases = (
        "reorder the dimensions of {in0_} as {dims} to get {out0_}",
        "permute {in0_} so that its dimensions come in the order {dims}, naming the result {out0_}",
        "rearrange the axes of {in0_} into the order {dims}; call it {out0_}",
    )
    natural = (
        "permute the dimensions of {in0_} into the order {dims}",
        "reorder the dimensions of {in0_} as {dims}",
    )
    vague = ("rearrange the axes of {in0_} into the order {dims}", "lay out the axes of {in0_} in the order {dims}")
    noun = "{nth}permuted tensor"
    vague_noun = "{nth}rearranged tensor"

    def values(self, call):
        return {"dims": (call.args["dims"],)}

    @staticmethod
    def _moves_data(shape: tuple[int, ...], perm: list[int]) -> bool:
        """Whether the permutation changes the tensor: reordering only dimensions of size 1 does not."""
        return [d for d in perm if shape[d] > 1] != [d for d in range(4) if shape[d] > 1] or \
            [shape[p] for p in perm] != list(shape)

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(TENSOR) if sum(s > 1 for s in v.value) >= 1]

    def apply(self, state, inputs, rng):
        (x,) = inputs
        shape = _shape(state, x)
        perm = list(range(4))
        while not self._moves_data(shape, perm):
            rng.shuffle(perm)
        out = _new_tensor(state, inputs, tuple(shape[p] for p in perm), self.name)
        dims = "(" + ", ".join(map(str, perm)) + ")"
        return Call(self.name, [x], [out], f"{out} = torch.permute({x}, {dims})", {"dims": dims})


class Linear(API):
    name = "linear"
    phrases = (
        "apply a linear layer to {in0_} with weight {weight}{bias_text}, giving {out0_}",
        "run {in0_} through F.linear using the weight {weight}{bias_text}; call the output {out0_}",
        "compute the linear transform of {in0_} with weight matrix {weight}{bias_text} and name it {out0_}",
    )
    natural = (
        "apply a linear layer to {in0_} with weight {weight}{bias_text}",
        "pass {in0_} through a linear layer (weight {weight}{bias_text})",
    )
    vague = (
        "feed {in0_} through a fully connected layer whose weight matrix is {weight}{bias_vague}",
        "map the last axis of {in0_} through the fully connected weights {weight}{bias_vague}",
    )
    noun = "{nth}linear output"
    vague_noun = "{nth}fully connected output"

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(TENSOR)]

    def apply(self, state, inputs, rng):
        (x,) = inputs
        shape = _shape(state, x)
        out_features = rng.randint(1, MAX_DIM)
        w = _weight_for(state, (out_features, shape[-1]), "w", rng)
        b = _weight_for(state, (out_features,), "b", rng) if rng.random() < 0.5 else None
        used = (x, w) + ((b,) if b else ())
        out = _new_tensor(state, used, shape[:-1] + (out_features,), self.name)
        args = f"{x}, {w}" + (f", {b}" if b else "")
        return Call(self.name, list(used), [out], f"{out} = F.linear({args})", {"weight": w, "bias": b})

    def describe(self, call):
        d = super().describe(call)
        d["weight"] = f"`{call.args['weight']}`"
        d["bias_text"] = f" and bias `{call.args['bias']}`" if call.args["bias"] else " and no bias"
        d["bias_vague"] = f" (bias `{call.args['bias']}`)" if call.args["bias"] else " (no bias)"
        return d


class Conv2d(API):
    name = "conv2d"
    phrases = (
        "convolve {in0_} with the kernel {weight}{bias_text} using {opts}, naming the output {out0_}",
        "apply F.conv2d to {in0_} with weight {weight}{bias_text} ({opts}); call the result {out0_}",
        "run a 2-D convolution over {in0_} with filters {weight}{bias_text} and {opts} to get {out0_}",
    )
    natural = (
        "convolve {in0_} with the kernel {weight}{bias_text}{opts_natural}",
        "run a 2-D convolution over {in0_} with the filters {weight}{bias_text}{opts_natural}",
    )
    vague = ("slide the filters {weight}{bias_vague} over {in0_}{opts_vague}",)
    noun = "{nth}convolved tensor"
    vague_noun = "{nth}filtered tensor"
    DEFAULTS = {"stride": 1, "padding": 0, "dilation": 1}  # F.conv2d's, as the documentation states them

    def values(self, call):
        out = {}
        for key, default in self.DEFAULTS.items():
            value = call.args[key]
            if value != default:
                out[key] = (f"'{value}'", f'"{value}"') if isinstance(value, str) else (str(value),)
        return out

    @staticmethod
    def out_size(n: int, k: int, stride: int, padding, dilation: int) -> int:
        if padding == "same":
            return n
        p = 0 if padding == "valid" else padding
        return (n + 2 * p - dilation * (k - 1) - 1) // stride + 1

    @classmethod
    def sees_input(cls, n: int, k: int, stride: int, padding, dilation: int) -> bool:
        """Whether every output position along a dimension of size `n` has a kernel tap on a real input element
        (not only on padding)."""
        before = dilation * (k - 1) // 2 if padding == "same" else padding
        for o in range(max(cls.out_size(n, k, stride, padding, dilation), 0)):
            if not any(before <= o * stride + j * dilation < before + n for j in range(k)):
                return False
        return True

    @staticmethod
    def _same_is_int(kh: int, kw: int, dilation: int) -> bool:
        """Whether padding='same' pads every side equally, so that an integer padding would give the same result.
        ('valid' is never drawn: it is padding 0 by another name.)"""
        pads = [dilation * (k - 1) for k in (kh, kw)]
        return all(p % 2 == 0 for p in pads) and pads[0] == pads[1]

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(TENSOR)]

    def apply(self, state, inputs, rng):
        (x,) = inputs
        n, c, h, w_ = _shape(state, x)
        for _ in range(100):
            kh, kw = rng.randint(1, 3), rng.randint(1, 3)
            stride, dilation = rng.choice([1, 1, 2]), rng.choice([1, 1, 2])
            padding = rng.choice([0, 1, "same"])
            if padding == "same" and (stride != 1 or self._same_is_int(kh, kw, dilation)):
                continue
            if dilation > 1 and kh == kw == 1:  # a stated option that changes nothing could be dropped unseen
                continue
            if not all(self.sees_input(s, k, stride, padding, dilation) for s, k in ((h, kh), (w_, kw))):
                continue  # an output that only sees padding is the bias whatever the input: a dead call upstream
            oh, ow = (self.out_size(s, k, stride, padding, dilation) for s, k in ((h, kh), (w_, kw)))
            if stride > 1 and oh == ow == 1:
                continue
            if 1 <= oh <= MAX_DIM and 1 <= ow <= MAX_DIM:
                break
        else:  # a 1x1 kernel with default options always fits
            kh = kw = stride = dilation = 1
            padding, oh, ow = 0, h, w_
        out_c = rng.randint(1, MAX_DIM)
        weight = _weight_for(state, (out_c, c, kh, kw), "w", rng)
        bias = _weight_for(state, (out_c,), "b", rng) if rng.random() < 0.5 else None
        used = (x, weight) + ((bias,) if bias else ())
        out = _new_tensor(state, used, (n, out_c, oh, ow), self.name)
        pad = repr(padding)
        code = f"{out} = F.conv2d({x}, {weight}, {bias}, stride={stride}, padding={pad}, dilation={dilation})"
        args = {"weight": weight, "bias": bias, "stride": stride, "padding": padding, "dilation": dilation}
        return Call(self.name, list(used), [out], code, args)

    def describe(self, call):
        d = super().describe(call)
        a = call.args
        d["weight"] = f"`{a['weight']}`"
        d["bias_text"] = f" and bias `{a['bias']}`" if a["bias"] else " and no bias"
        d["bias_vague"] = f" (bias `{a['bias']}`)" if a["bias"] else " (no bias)"
        pad = f"padding '{a['padding']}'" if isinstance(a["padding"], str) else f"padding {a['padding']}"
        d["opts"] = f"stride {a['stride']}, {pad} and dilation {a['dilation']}"
        stated = self.values(call)
        natural = [f"stride {a['stride']}" * ("stride" in stated), pad * ("padding" in stated),
                   f"dilation {a['dilation']}" * ("dilation" in stated)]
        natural = [t for t in natural if t]
        d["opts_natural"] = f", using {' and '.join(natural)}" if natural else ""
        vague = [f"moving {a['stride']} positions at a time" * ("stride" in stated),
                 (f"zero-padding every side by {a['padding']}" if isinstance(a["padding"], int) else
                  "padding so that the output keeps the input's height and width ('same')") * ("padding" in stated),
                 f"with kernel taps spaced {a['dilation']} apart" * ("dilation" in stated)]
        vague = [t for t in vague if t]
        d["opts_vague"] = (", " + ", ".join(vague)) if vague else " (one position at a time, no zero-padding)"
        return d


class TensorScenario(Scenario):
    vocabulary = (("same", "valid"),)
    commuting = {"torch.transpose": (1, 2)}  # transpose(x, a, b) is transpose(x, b, a)
    shared_runs = True  # tensors in, tensors out: no world state a program could leave for the next one
    name = "tensor"
    tiers = (PAPER, FRONTIER)
    apis = (Cat(), Split(), Transpose(), Permute(), Linear(), Conv2d())
    world = "scenarios.tensor.world:TensorWorld"

    def initial_state(self, rng):
        state = State()
        first = (rng.randint(1, MAX_BATCH), rng.randint(1, 4), rng.randint(2, 5), rng.randint(2, 5))
        shapes = [first]
        for _ in range(rng.randint(1, 2)):
            if rng.random() < 0.7:  # shares all but (at most) one dimension with the first: cat-compatible
                shape = list(first)
                d = rng.randrange(4)
                shape[d] = rng.randint(1, MAX_BATCH if d == 0 else 4)
                shapes.append(tuple(shape))
            else:
                shapes.append((rng.randint(1, MAX_BATCH), rng.randint(1, 4), rng.randint(2, 5), rng.randint(2, 5)))
        for shape in shapes:
            name = state.fresh("x")
            state.declare(Var(name, TENSOR, shape), _random_asset(name, shape, rng))
        return state

    def condition(self, state, var, rng):
        """A test of one dimension's size whose value no other in-scope size shares (another tensor's size at
        that dimension, another dimension of this one): shapes are the same on every test input, so a branch
        on a coincidentally equal size would pass every test."""
        shape = tuple(var.value)
        others = [tuple(v.value) for v in state.of_type(TENSOR, WEIGHT) if v.name != var.name]
        unique = [d for d in range(4)
                  if sum(s == shape[d] for s in shape) == 1 and all(len(o) <= d or o[d] != shape[d] for o in others)]
        if not unique:
            return None
        dim = rng.choice(unique)
        size = shape[dim]
        if rng.random() < 0.5:
            return Condition(f"{var.name}.shape[{dim}]", "==", size, size + 1,
                             f"dimension {dim} of `{var.name}` has size COND")
        return Condition(f"{var.name}.shape[{dim}]", ">", size - 1, size,
                         f"the size of dimension {dim} of `{var.name}` is greater than COND")

    def redraw(self, state, rng):
        """New values for every stored tensor and weight; shapes (all a program's parameters rest on) are kept."""
        twin = state.branch_copy()
        for name, asset in state.assets.items():
            twin.assets[name] = _random_asset(name, tuple(asset.meta["shape"]), rng)
        return twin

    def setup_code(self, state, constants):
        if state.extra.get("frontier"):  # a frontier population (`scenarios/tensor/tasks.py`)
            from scenarios.tensor.tasks import setup_lines

            return setup_block(setup_lines(state), constants)
        lines = ["import torch", "import torch.nn.functional as F", ""]
        for name in state.inits:
            lines.append(f'{name} = load_tensor("{name}")  # {DTYPE}, shape {tuple(state.vars[name].value)}')
        return setup_block(lines, constants)

    def describe_value(self, var):
        return f"a tensor of shape {tuple(var.value)}"

    def describe_init(self, state):
        data = [n for n in state.inits if state.vars[n].type == TENSOR]
        weights = [n for n in state.inits if state.vars[n].type == WEIGHT]
        text = f"The setup block loads the input tensors {join_names(data)}"
        if weights:
            text += f" and the parameters {join_names(weights)}"
        return text + "."

    def api_doc(self, tier: str = PAPER):
        return (Path(__file__).with_name(DOCS[tier])).read_text()

    def tool_specs(self, tier=PAPER):
        from scenarios.tensor.doc import frontier_tool_specs, tool_specs

        return frontier_tool_specs() if tier == FRONTIER else tool_specs()

    def task_tier(self, task):
        """FRONTIER when its test cases store a model (`scenarios/tensor/tasks.py`)."""
        return FRONTIER if any(a["kind"] == "module" for a in task.test_cases[0].assets) else PAPER

    def frontier_plan(self, rng):
        """One program of the frontier tier: stateful PyTorch (`scenarios/tensor/tasks.py`)."""
        from scenarios.tensor.tasks import plan

        return plan(self, rng)

    def scratch_assets(self, assets, rng):
        """Fresh values of the same names and schema; a frontier model keeps its architecture and draws new
        parameters, and class indices stay below the number of classes."""
        out = []
        for a in assets:
            meta = json.loads(a["meta"])
            if a["kind"] == "tensor" and meta["dtype"] == "float32":  # as the paper tier has always drawn them
                out.append(_random_asset(a["name"], tuple(meta["shape"]), rng).to_record())
                continue
            if a["kind"] not in ("tensor", "module"):  # an optimizer or a scheduler: settings only
                out.append(dict(a))
                continue
            draw = np.random.default_rng(rng.getrandbits(64))
            if a["kind"] == "tensor":  # int64 class indices, no larger than the stored ones
                values = draw.integers(0, int(np.frombuffer(a["data"], "<i8").max()) + 1, size=meta["shape"])
                values = values.astype("<i8")
            else:  # a model's parameters, in one float32 blob
                values = (draw.standard_normal(len(a["data"]) // 4) * 0.3).astype("<f4")
            out.append(Asset(a["name"], a["kind"], meta, values.tobytes()).to_record())
        return out

    def compare_result(self, expected, actual):
        return compare_plain(expected, actual, self.leaf_compare, "RESULT", close=_close)

    def compare_state(self, expected, actual):
        return compare_plain(expected, actual, self.leaf_compare, "state", close=_close)

    def leaf_compare(self, expected, actual, path):
        if "__tensor__" not in expected:
            return NotImplemented
        if "__tensor__" not in actual:
            return f"{path}: expected a tensor, got a dict"
        from scenarios.tensor.compare import compare_tensors

        return compare_tensors(expected["__tensor__"], actual["__tensor__"], path, RTOL, ATOL)


def _close(expected: float, actual: float) -> bool:
    """Floats a program computes (a loss, a norm) agree within the documented tolerance."""
    return math.isclose(expected, actual, rel_tol=RTOL, abs_tol=ATOL)
