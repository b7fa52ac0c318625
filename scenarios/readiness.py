"""An agent-readiness report of a service or an MCP server: for each operation or tool, what in its documentation a
model is likely to miss, and what to add.

Two kinds of finding, one table:

- **From the documentation alone** (`documentation_findings`): an operation with no summary or description, a
  parameter with neither a description nor an example, an untyped request or response body, two operations whose
  descriptions a reader cannot tell apart.
- **Observed** (each scenario's own `readiness`: `scenarios.rest.readiness`, `scenarios.mcp.readiness`): behaviour a
  live instance showed on calls made for the report, which the documentation does not state: a status or an error
  it answered and on which input, fields it made up, pagination, what a delete does to what lies under or refers to
  what it deleted. Each carries the call that showed it as evidence; nothing is reported that was not observed on
  this run, and nothing the documentation states is reported as missing.

`python -m builder readiness --service FILE` (or `--mcp FILE`) writes the report; every build of a service or a
server writes it beside the service file in the dataset (`services/NAME.readiness.md` and `.json`), and stores with
each task, besides the documentation (`api_doc`), the same text with what was observed added (`enrich`:
`api_doc_enriched`, which `python -m evaluate --doc enriched` shows the model).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

SIMILAR = 0.8  # word overlap (Jaccard) at which two descriptions are hard to tell apart
STOP = frozenset("a an the of to in on for and or with by from is are be it its this that as at".split())


@dataclass(frozen=True)
class Finding:
    operation: str  # "GET /buckets/{id}" or a tool's name
    kind: str  # one of KINDS
    finding: str  # what a model is likely to miss
    recommendation: str  # what to add to the documentation
    evidence: str = ""  # the observed call and answer, for an observed finding

    @property
    def observed(self) -> bool:
        return bool(self.evidence)

    @property
    def behaviour(self) -> str:
        """What was observed, as documentation would state it: a finding's first clause (the rest, after "; ",
        says that the documentation does not)."""
        return self.finding.split("; ")[0]


KINDS = ("no description", "undescribed parameter", "untyped body", "untyped answer", "indistinct",
         "undocumented status", "undocumented error", "unchecked input", "made-up fields", "pagination",
         "delete cascade", "repeated create")


@dataclass
class Documented:
    """What the documentation says of one operation or tool, as the static checks read it."""

    operation: str
    text: str  # its summary and description
    undescribed: list[str] = field(default_factory=list)  # parameters with neither a description nor an example
    untyped_body: bool = False  # a request body or an input without a schema of its own
    untyped_answer: bool = False  # no schema of its answer


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP}


def similar(a: str, b: str) -> bool:
    left, right = words(a), words(b)
    return bool(left and right) and len(left & right) / len(left | right) >= SIMILAR


def documentation_findings(docs: list[Documented]) -> list[Finding]:
    out = []
    for doc in docs:
        if not doc.text.strip():
            out.append(Finding(doc.operation, "no description", "no summary or description: a model must guess "
                               "what it does from its name", "add a one-line summary saying what it does"))
        if doc.undescribed:
            names = ", ".join(f"`{n}`" for n in doc.undescribed)
            out.append(Finding(doc.operation, "undescribed parameter", f"parameters without a description or an "
                               f"example: {names}", "describe each parameter, with an example value"))
        if doc.untyped_body:
            out.append(Finding(doc.operation, "untyped body", "its input has no schema: a model cannot know which "
                               "fields it takes", "give the input a schema with its fields and their types"))
        if doc.untyped_answer:
            out.append(Finding(doc.operation, "untyped answer", "its answer has no schema: a model cannot know "
                               "where the values it needs are", "give the answer a schema with its fields"))
    for i, doc in enumerate(docs):
        for other in docs[i + 1:]:
            if similar(doc.text, other.text):
                out.append(Finding(doc.operation, "indistinct", f"its description and that of `{other.operation}` "
                                   f"are nearly the same ({doc.text.strip()[:80]!r})",
                                   f"say how it differs from `{other.operation}`"))
    return out


def by_operation(findings: list[Finding], operations: list[str]) -> list[Finding]:
    """The findings in the order of their operations, each operation's in the order of KINDS."""
    return sorted(findings, key=lambda f: (operations.index(f.operation) if f.operation in operations
                                           else len(operations), KINDS.index(f.kind)))


def mentions(text: str, *stems: str) -> bool:
    """Whether `text` says any of `stems` (a word beginning with one, case-insensitive)."""
    return any(re.search(rf"\b{re.escape(s)}", text, re.IGNORECASE) for s in stems)


def short(value, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_markdown(name: str, findings: list[Finding]) -> str:
    observed = sum(f.observed for f in findings)
    lines = [f"# Agent readiness: {name}", "",
             f"{len(findings)} findings: {len(findings) - observed} from the documentation alone, {observed} "
             "observed on a running instance and not stated by the documentation. One recommendation per finding.",
             "", "| operation | kind | finding | evidence | recommendation |", "|---|---|---|---|---|"]
    for f in findings:
        cells = [f"`{f.operation}`", f.kind, f.finding, f.evidence or "-", f.recommendation]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_json(name: str, findings: list[Finding]) -> str:
    return json.dumps({"name": name, "findings": [{**asdict(f), "observed": f.observed} for f in findings]},
                      indent=2, sort_keys=True) + "\n"


def enrich(doc: str, findings: list[Finding]) -> str:
    """`doc` with what was observed added, per operation (`--doc enriched`): the same text when nothing was."""
    observed = [f for f in findings if f.observed]
    if not observed:
        return doc
    lines = [doc.rstrip(), "", "## Observed behaviour", "",
             "What a running instance did on calls made to check this documentation, which the text above does not "
             "state:", ""]
    for f in observed:
        lines.append(f"- `{f.operation}` {f.behaviour} (seen: {f.evidence})")
    return "\n".join(lines) + "\n"


def write(folder: Path, name: str, findings: list[Finding]) -> Path:
    """NAME.readiness.md and NAME.readiness.json in `folder`; the Markdown's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.readiness.json").write_text(render_json(name, findings))
    path = folder / f"{name}.readiness.md"
    path.write_text(render_markdown(name, findings))
    return path
