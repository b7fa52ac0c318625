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
