"""The sandbox's messages, typed once: what the harness asks a warm worker to run, and what the worker answers.

One request type per kind of job, each a JSON line with its `kind`:

* `ProgramRequest`: one program on one test case (an answer, a reference, a mutant);
* `TraceRequest`: a trusted reference whose API calls come back as tool calls (what `--mode tools` replays);
* `EpisodeRequest`: a tool-calling episode, the model's calls applied in order, then its submitted items;
* `BatchRequest`: several of the builder's own programs in one child, each on its test case (never answers).

`encode_request` / `decode_request` and `encode_reply` / `decode_reply` are the only codec: the harness
(`core.sandbox.harness._Worker`, which the Ray actors run too) writes requests and reads replies, the worker
(`core.sandbox.worker`) reads requests and writes replies. A test case travels as a `WireCase`: its setup block and its
assets, whose bytes go base64-encoded and whose meta is decoded on arrival.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Union

from core.statuses import REPLY_STATUSES


@dataclass(frozen=True)
class Limits:
    """Per test case limits. Defaults suit the three scenarios; raise `timeout_s` for slow machines."""

    timeout_s: float = 10.0  # wall clock, kills the whole process group
    cpu_s: int = 15
    memory_mb: int = 4096  # address space
    file_size_mb: int = 16
    open_files: int = 256
    processes: int = 64
    output_bytes: int = 8192  # stdout + stderr kept for the report
    result_mb: int = 64  # serialised RESULT (the child's whole report) it may send back; larger is a result error


@dataclass
class WireCase:
    """A test case as a worker needs it: the setup block and the stored values (`meta` a dict, `data` bytes)."""

    setup_code: str
    assets: list[dict] = field(default_factory=list)

    @classmethod
    def of(cls, case) -> "WireCase":
        """From a task's test case (`core.records.TestCase`, whose record type the worker never imports: no
        oracle's field name is in its memory) or a bare `{"setup_code", "assets"}`, assets as stored (`meta` JSON
        text)."""
        row = case if isinstance(case, dict) else case.to_row()
        return cls(row["setup_code"], [dict(a, meta=json.loads(a["meta"])) for a in row.get("assets", [])])

    def to_json(self) -> dict:
        return {"setup_code": self.setup_code,
                "assets": [dict(a, meta=json.dumps(a["meta"]), data=base64.b64encode(a["data"]).decode())
                           for a in self.assets]}

    @classmethod
    def from_json(cls, data: dict) -> "WireCase":
        return cls(data["setup_code"], [dict(a, meta=json.loads(a["meta"]), data=base64.b64decode(a["data"]))
                                        for a in data["assets"]])

    def as_dict(self) -> dict:
        """What `World.reset` and `World.namespace` take."""
        return {"setup_code": self.setup_code, "assets": self.assets}


@dataclass
class ProgramRequest:
    scenario: str
    case: WireCase
    limits: Limits
    code: str
    record: bool = True  # whether the program's API calls come back (`Reply.trace`)
    mutant: dict | None = None  # the world mutant it runs on (`scenarios.mutants.Mutant.to_json`); None: the world
    test: bool = False  # a test: its EXPECTED comes back as written (`expected`)


@dataclass
class TraceRequest:
    scenario: str
    case: WireCase
    limits: Limits
    code: str  # a trusted reference


@dataclass
class EpisodeRequest:
    scenario: str
    case: WireCase
    limits: Limits
    calls: list[dict]  # {"name", "arguments"}, applied in order
    submit: list | None  # submit_result's items; None: nothing submitted


@dataclass
class BatchRequest:
    """Programs run in turn in one child (`core.sandbox.worker._run_batch`): program k on `cases[case_of[k]]`.
    `shared[k]`: how many leading top-level statements program k has in common with the others (all 0: none run
    once for several)."""

    scenario: str
    cases: list[WireCase]
    limits: Limits
    programs: list[str]
    case_of: list[int]
    shared: list[int]
    record: bool = True


Request = Union[ProgramRequest, TraceRequest, EpisodeRequest, BatchRequest]
KINDS = {"program": ProgramRequest, "trace": TraceRequest, "episode": EpisodeRequest, "batch": BatchRequest}
_KIND_OF = {cls: kind for kind, cls in KINDS.items()}


def encode_request(request: Request) -> str:
    """One JSON line."""
    body = {f.name: getattr(request, f.name) for f in fields(request)}
    body["limits"] = asdict(request.limits)
    if "case" in body:
        body["case"] = request.case.to_json()
    if "cases" in body:
        body["cases"] = [c.to_json() for c in request.cases]
    return json.dumps({"kind": _KIND_OF[type(request)], **body}) + "\n"


def decode_request(line: bytes | str) -> Request:
    body = json.loads(line)
    cls = KINDS[body.pop("kind")]
    body["limits"] = Limits(**body["limits"])
    if "case" in body:
        body["case"] = WireCase.from_json(body["case"])
    if "cases" in body:
        body["cases"] = [WireCase.from_json(c) for c in body["cases"]]
    return cls(**body)


# ------------------------------------------------------------------------------------------------- replies

# What a child may report about a program or an episode (the worker adds the rest); anything else it wrote is
# dropped (`core.sandbox.worker._checked_report`).
REPORT_KEYS = ("status", "result", "recorded", "error", "traceback", "trace", "in_api", "setup", "calls", "submit",
               "mutated", "expected")
# What a reply carries besides the verdict, into `Outcome.extra`.
EXTRA_KEYS = ("containment", "leftovers", "in_api", "setup", "calls", "submit", "world_lost", "mutated", "expected")


@dataclass
class Reply:
    """A worker's answer to one request (a batch's carries one `Reply` per program it reached, in order)."""

    status: str  # one of core.statuses.REPLY_STATUSES
    result: Any = None
    state: Any = None
    error: str = ""
    output: str = ""
    seconds: float = 0.0
    trace: list | None = None
    extra: dict = field(default_factory=dict)  # EXTRA_KEYS present in the reply
    batch: list["Reply"] | None = None
    errno: int | None = None  # a worker's own failure: a full disk stops the run


def encode_reply(reply: dict) -> str:
    """The worker's reply (a plain dict: the child's report completed by the worker) as one JSON line."""
    return json.dumps(reply) + "\n"


def decode_reply(line: bytes | str, batch: bool) -> Reply:
    """A `Reply`; ValueError when the line is not a well-formed one (a worker that died mid-line)."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError(f"status {data!r}")
    reply = _reply(data)
    if batch:
        reply.batch = [_reply(r) for r in data.get("batch", [])]
    return reply


def _reply(data: dict) -> Reply:
    if data.get("status") not in REPLY_STATUSES:
        raise ValueError(f"status {data.get('status')!r}")
    trace = data.get("trace")
    return Reply(data["status"], data.get("result"), data.get("state"), str(data.get("error", "")),
                 str(data.get("output", "")), float(data.get("seconds", 0.0)),
                 trace if isinstance(trace, list) else None, {k: data[k] for k in EXTRA_KEYS if k in data},
                 errno=data.get("errno"))
