"""The six tensor operations, defined once: the documentation's table and the tools of `--mode tools` come from here.

`api_doc.md` shows `OPERATIONS` as its operation table (a test renders the table and finds it in the file), and
`tool_specs` turns the same rows into JSON-schema tools. Light: no torch (the harness imports it).
"""

from __future__ import annotations

from dataclasses import dataclass

from scenarios.calling import ToolSpec

TENSOR_HANDLE = {"type": "string", "description": "a tensor handle: a setup variable (x1, w1, ...) or a result (r3, r4[0])"}
INT = {"type": "integer"}


@dataclass(frozen=True)
class Operation:
    call: str  # as the documentation writes it
    what: str
    rule: str  # the shape rule
    tool: str  # the tool's name
    function: str  # what the tool runs: "torch.cat", "F.conv2d"
    parameters: dict  # name -> JSON schema, in the function's order
    required: tuple[str, ...]
    handles: tuple[str, ...]

    def spec(self) -> ToolSpec:
        return ToolSpec(self.tool, f"`{self.call}`: {self.what}. Shape rule: {self.rule}.",
                        {"type": "object", "properties": self.parameters, "required": list(self.required)},
                        self.handles)


OPERATIONS = (
    Operation("torch.cat([a, b], dim=d)", "joins tensors end to end along `d`",
              "all other dims must match; `d` becomes the sum", "torch_cat", "torch.cat",
              {"tensors": {"type": "array", "items": TENSOR_HANDLE, "description": "the tensors to join, in order"},
               "dim": INT}, ("tensors", "dim"), ("tensors",)),
    Operation("p, q = torch.split(x, [s1, s2], dim=d)",
              "cuts `x` into pieces of the listed sizes (a list of 2 or 3 sizes)", "sizes sum to `x.shape[d]`",
              "torch_split", "torch.split",
              {"tensor": TENSOR_HANDLE, "split_size_or_sections": {"type": "array", "items": INT}, "dim": INT},
              ("tensor", "split_size_or_sections", "dim"), ("tensor",)),
    Operation("torch.transpose(x, d0, d1)", "swaps two dimensions", "`d0` and `d1` exchange sizes",
              "torch_transpose", "torch.transpose", {"input": TENSOR_HANDLE, "dim0": INT, "dim1": INT},
              ("input", "dim0", "dim1"), ("input",)),
    Operation("torch.permute(x, (i, j, k, l))", "reorders all four dimensions", "output dim `n` is input dim `dims[n]`",
              "torch_permute", "torch.permute",
              {"input": TENSOR_HANDLE, "dims": {"type": "array", "items": INT, "minItems": 4, "maxItems": 4}},
              ("input", "dims"), ("input",)),
    Operation("F.linear(x, weight, bias=None)", "`x @ weight.T + bias` on the last dim",
              "`weight` is `(out, in)` with `in == x.shape[-1]`; last dim becomes `out`", "F_linear", "F.linear",
              {"input": TENSOR_HANDLE, "weight": TENSOR_HANDLE,
               "bias": {**TENSOR_HANDLE, "type": ["string", "null"], "default": None}},
              ("input", "weight"), ("input", "weight", "bias")),
    Operation("F.conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1)", "2-D convolution of `(N, C, H, W)`",
              "`weight` is `(out_c, C, kh, kw)`; `padding` is an int, `'valid'` (no padding) or `'same'` (output keeps "
              "H and W; stride 1 only)", "F_conv2d", "F.conv2d",
              {"input": TENSOR_HANDLE, "weight": TENSOR_HANDLE,
               "bias": {**TENSOR_HANDLE, "type": ["string", "null"], "default": None},
               "stride": {**INT, "default": 1},
               "padding": {"anyOf": [INT, {"type": "string", "enum": ["valid", "same"]}], "default": 0},
               "dilation": {**INT, "default": 1}},
              ("input", "weight"), ("input", "weight", "bias")),
)


def operation_table() -> str:
    """The documentation's markdown table of the operations."""
    rows = ["| call | what it does | shape rule |", "|---|---|---|"]
    rows += [f"| `{op.call}` | {op.what} | {op.rule} |" for op in OPERATIONS]
    return "\n".join(rows) + "\n"


def tool_specs() -> list[ToolSpec]:
    return [op.spec() for op in OPERATIONS]


# ------------------------------------------------------------------------------------------- frontier tier
#
# The stateful subset of the frontier tier (`api_doc_frontier.md`) as tools: each a method or function of PyTorch
# applied to handles (the setup's `model`, `opt`, `sched`, `x`, `y`, and earlier results), run by
# `scenarios.tensor.stateful.call_tool`. A handle may reach inside a result (`r3[0][1]`, `r5.grad`).

HANDLE = {"type": "string", "description": "a handle: a setup variable (model, opt, sched, x, y) or a result (r3, "
                                           "r4[0][1], r5.grad)"}
NUMBER = {"type": "number"}
NO_GRAD = {"type": "boolean", "default": False,
           "description": "run inside torch.no_grad() (needed to change a parameter that requires gradients)"}


def _tool(name: str, call: str, what: str, parameters: dict, required: tuple[str, ...], handles: tuple[str, ...]):
    return ToolSpec(name, f"`{call}`: {what}", {"type": "object", "properties": parameters,
                                                   "required": list(required)}, handles)


FRONTIER_TOOLS = (
    _tool("module_train", "module.train(mode)", "sets the training mode of the module and every layer in it",
          {"module": HANDLE, "mode": {"type": "boolean", "default": True}}, ("module",), ("module",)),
    _tool("module_eval", "module.eval()", "sets evaluation mode on the module and every layer in it",
          {"module": HANDLE}, ("module",), ("module",)),
    _tool("forward", "module(input)", "a forward pass; returns the output tensor",
          {"module": HANDLE, "input": HANDLE, "no_grad": NO_GRAD}, ("module", "input"), ("module", "input")),
    _tool("mse_loss", "F.mse_loss(input, target)", "mean squared error over the batch; returns a scalar tensor",
          {"input": HANDLE, "target": HANDLE}, ("input", "target"), ("input", "target")),
    _tool("cross_entropy", "F.cross_entropy(input, target)", "cross-entropy averaged over the batch; returns a "
          "scalar tensor", {"input": HANDLE, "target": HANDLE}, ("input", "target"), ("input", "target")),
    _tool("backward", "tensor.backward()", "adds the gradients of a scalar into every `.grad` it depends on",
          {"tensor": HANDLE}, ("tensor",), ("tensor",)),
    _tool("optimizer_zero_grad", "optimizer.zero_grad(set_to_none)", "clears the gradients of its parameters",
          {"optimizer": HANDLE, "set_to_none": {"type": "boolean", "default": True}}, ("optimizer",), ("optimizer",)),
    _tool("optimizer_step", "optimizer.step()", "updates every parameter that has a gradient",
          {"optimizer": HANDLE}, ("optimizer",), ("optimizer",)),
    _tool("scheduler_step", "scheduler.step()", "advances the learning-rate schedule by one step",
          {"scheduler": HANDLE}, ("scheduler",), ("scheduler",)),
    _tool("clip_grad_norm", "torch.nn.utils.clip_grad_norm_(module.parameters(), max_norm)",
          "scales the module's gradients in place to a total L2 norm of at most max_norm; returns the norm before",
          {"module": HANDLE, "max_norm": NUMBER}, ("module", "max_norm"), ("module",)),
    _tool("named_parameters", "list(module.named_parameters())", "[name, parameter] pairs in registration order",
          {"module": HANDLE}, ("module",), ("module",)),
    _tool("named_modules", "list(module.named_modules())", "[name, module] pairs, the module itself first as \"\"",
          {"module": HANDLE}, ("module",), ("module",)),
    _tool("get_parameter", "module.get_parameter(name)", "the parameter with that name (\"0.weight\")",
          {"module": HANDLE, "name": {"type": "string"}}, ("module", "name"), ("module",)),
    _tool("get_submodule", "module.get_submodule(name)", "the layer with that name (\"3\")",
          {"module": HANDLE, "name": {"type": "string"}}, ("module", "name"), ("module",)),
    _tool("requires_grad_", "target.requires_grad_(requires_grad)", "freezes or unfreezes a module's parameters "
          "or one tensor", {"target": HANDLE, "requires_grad": {"type": "boolean"}}, ("target", "requires_grad"),
          ("target",)),
    _tool("mul_", "tensor.mul_(value)", "multiplies in place", {"tensor": HANDLE, "value": NUMBER, "no_grad": NO_GRAD},
          ("tensor", "value"), ("tensor",)),
    _tool("clamp_", "tensor.clamp_(min, max)", "clamps in place",
          {"tensor": HANDLE, "min": NUMBER, "max": NUMBER, "no_grad": NO_GRAD}, ("tensor", "min", "max"), ("tensor",)),
    _tool("zero_", "tensor.zero_()", "fills with zeros in place", {"tensor": HANDLE, "no_grad": NO_GRAD},
          ("tensor",), ("tensor",)),
    _tool("rows", "tensor[start:stop]", "a view of rows start to stop - 1 (shares storage with the tensor)",
          {"tensor": HANDLE, "start": {"type": "integer"}, "stop": {"type": "integer"}}, ("tensor", "start", "stop"),
          ("tensor",)),
    _tool("clone", "tensor.detach().clone()", "a copy with its own storage, outside autograd", {"tensor": HANDLE},
          ("tensor",), ("tensor",)),
    _tool("sub", "a.detach() - b.detach()", "the difference, outside autograd", {"a": HANDLE, "b": HANDLE},
          ("a", "b"), ("a", "b")),
    _tool("norm", "tensor.norm().item()", "the L2 norm of all the elements, as a float", {"tensor": HANDLE},
          ("tensor",), ("tensor",)),
    _tool("item", "tensor.item()", "a one-element tensor as a Python number", {"tensor": HANDLE}, ("tensor",),
          ("tensor",)),
    _tool("argmax", "tensor.argmax(dim=dim)", "indices of the largest values along dim",
          {"tensor": HANDLE, "dim": {"type": "integer"}}, ("tensor", "dim"), ("tensor",)),
)


def frontier_tool_specs() -> list[ToolSpec]:
    return list(FRONTIER_TOOLS)
