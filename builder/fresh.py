"""Fresh splits: a build that shares no task with earlier releases, so a model trained on those has not seen it.

`python -m builder --fresh --against PREVIOUS` loads each previous release (a dataset folder, or a Hub repo as
`ORG/NAME@vX.Y.Z`), moves the seed past every seed those releases used (their MANIFEST records them), and runs the
overlap filter below as a build step before oracle capture. A draft is dropped, with its reason counted in the
build report like every other rejection, when it overlaps a previous task by

* **program** — the reference with every variable renamed canonically (in order of first use) and the layout
  normalised by an `ast` round trip, so renaming `v3` or re-spacing a line does not make a program new;
* **call sequence** — on any path through the program (the straight program, or prefix + one branch), the API
  calls in order with their arguments, variables renamed canonically along that path: a straight program that
  repeats one branch of an earlier if/else overlaps it, whatever its RESULT line;
* **instruction 13-grams** — word-level, lowercased 13-grams of every instruction variant (natural, steps and vague). An
  instruction overlaps when its normalised text equals a previous one, or when at least `ngram_share` (default
  half) of its *distinctive* 13-grams occur in a previous release; a 13-gram that two or more previous tasks
  share is the translator's wording (the setup sentence, "Use the name `COND` in the condition ..."), not any
  one task's content, and is not distinctive. `ngram_share = 0` is the literal rule: any one shared 13-gram.

  Why not the literal rule by default: the template translator words each call from a short phrase list over
  canonical variable names, so an independently seeded 3 x 60 build shares at least one 13-gram with the
  previous one in all 180 of its tasks (178 on the steps variant alone): it would measure the template, not
  contamination. The share rule is the PaLM-style criterion (a sample is contaminated when most of its n-grams
  were seen). Measured on two independently seeded 3 x 60 builds: steps instructions share at most 38% of
  their distinctive 13-grams with the other build (none reaches half); the terser vague variants reach half in
  10 of the 120 session and voice tasks, which are dropped; a copied task shares 100%.
"""

from __future__ import annotations

import ast
import copy
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from builder.draft import Draft, keep
from builder.stats import RESULT, analyse
from core.records import DatasetError, TaskRecord, load_tasks

NGRAM = 13
WORD = re.compile(r"\w+")
REASONS = ("program", "call sequence", "instruction 13-grams")


# ------------------------------------------------------------------------------------------ releases


@dataclass
class Release:
    source: str  # as given on the command line
    folder: Path
    manifest: dict
    tasks: list[TaskRecord]

    @property
    def seeds(self) -> set[int]:
        """Every seed this release's lineage used: its own and those it was itself kept fresh against."""
        config = self.manifest.get("config", {})
        return {int(self.manifest["seed"]), *(int(s) for s in config.get("avoid_seeds", []))}


def parse_source(spec: str) -> tuple[str, str | None]:
    """`ORG/NAME@v1.0.0` -> (`ORG/NAME`, `v1.0.0`); a local folder (even one with `@` in its name) -> (spec, None)."""
    if Path(spec).expanduser().exists() or "@" not in spec:
        return spec, None
    repo, _, revision = spec.rpartition("@")
    if not repo or not revision:
        raise ValueError(f"--against {spec!r}: expected a dataset folder or ORG/NAME@REVISION")
    return repo, revision


def load_release(spec: str) -> Release:
    """A previous release, checked against its manifest (a Hub repo is downloaded at the given tag first)."""
    name, revision = parse_source(spec)
    folder = Path(name).expanduser()
    if not folder.exists():
        if revision is None:
            raise DatasetError(f"--against {spec}: no such folder; for a Hub release pass ORG/NAME@vX.Y.Z")
        import huggingface_hub

        try:
            folder = Path(huggingface_hub.snapshot_download(name, repo_type="dataset", revision=revision))
        except Exception as exc:  # network, auth, unknown repo or revision: one line, not a traceback
            raise DatasetError(f"--against {spec}: could not download {name} at {revision}: {exc}") from exc
    tasks, manifest = load_tasks(str(folder))  # verifies every shard against MANIFEST.json
    return Release(spec, folder, manifest, tasks)


# ------------------------------------------------------------------------------------------- keys


def _assigned(tree: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


class _Rename(ast.NodeTransformer):
    def __init__(self, names: set[str]):
        self.names, self.mapping = names, {}

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.names:
            node.id = self.mapping.setdefault(node.id, f"_v{len(self.mapping)}")
        return node


def _variables(setup_code: str, tree: ast.AST) -> set[str]:
    """What may be renamed: names the setup block or the program assigns (never RESULT, modules or APIs)."""
    try:
        setup = _assigned(ast.parse(setup_code)) if setup_code else []
    except SyntaxError:
        setup = []
    return (set(setup) | set(_assigned(tree))) - {RESULT}


def program_key(reference: str, setup_code: str = "") -> str:
    tree = ast.parse(reference)
    return ast.unparse(_Rename(_variables(setup_code, tree)).visit(tree))


def call_sequence_keys(reference: str, api_calls: list[str], setup_code: str = "") -> set[tuple]:
    """One key per path: ((api, normalised call statement), ...), variables renamed along that path. With no
    `api_calls` (a frontier program, whose stored calls are its loops unrolled: `static_calls`), the api is None
    and the normalised statement, which names the endpoint, is the key."""
    flow = analyse(reference)
    if not api_calls:
        api_calls = [None] * len(flow.calls)
    if len(api_calls) != len(flow.calls):
        raise ValueError(f"the reference has {len(flow.calls)} calls but api_calls lists {len(api_calls)}")
    names = _variables(setup_code, ast.parse(reference))
    keys = set()
    for path in flow.paths:
        rename = _Rename(names)  # one mapping per path, filled in call order
        keys.add(tuple((api_calls[i], ast.unparse(rename.visit(copy.deepcopy(flow.calls[i].node)))) for i in path))
    return keys


def ngrams(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    """Word-level, lowercased n-grams; a text shorter than n words is one n-gram of its whole."""
    words = tuple(WORD.findall(text.lower()))
    if len(words) < n:
        return {words} if words else set()
    return {words[i:i + n] for i in range(len(words) - n + 1)}


# -------------------------------------------------------------------------------------------- index


@dataclass
class TaskView:
    """What the overlap filter needs of a task, whether a stored row or a draft still in the pipeline."""

    task_id: str
    scenario: str
    reference: str
    setup_code: str
    api_calls: list[str]
    instructions: list[str]

    @classmethod
    def of_record(cls, t: TaskRecord) -> "TaskView":
        texts = [t.instruction, t.instruction_steps, t.instruction_vague]
        return cls(t.task_id, t.scenario, t.reference_program, t.setup_code, static_calls(t),
                   [text for text in texts if text])

    @classmethod
    def of_draft(cls, d: Draft) -> "TaskView":
        texts = list(d.instructions.values())
        return cls(d.task_id, d.scenario, d.program.reference_code(), d.cases[0].setup_code, d.program.static_calls(),
                   [t for t in texts if t])


def static_calls(t: TaskRecord) -> list[str]:
    """The api of each call statement of a stored reference, in program order; [] for a frontier program, whose
    `api_calls` are what it called on the original input, loops and pages unrolled (one statement, many calls)."""
    return [] if t.levers or len(t.api_calls) != len(analyse(t.reference_program).calls) else list(t.api_calls)


def normalise_text(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


TEMPLATE_DF = 2  # a 13-gram found in this many previous tasks or more is wording, not one task's content


@dataclass
class OverlapIndex:
    """The keys of every previous task; `reasons` tells why a new task overlaps them (empty: it is fresh)."""

    ngram_share: float = 0.5
    programs: set[str] = field(default_factory=set)
    sequences: set[tuple] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)  # normalised instructions
    df: Counter = field(default_factory=Counter)  # 13-gram -> previous tasks whose instructions hold it

    def add(self, t: TaskView) -> None:
        self.programs.add(program_key(t.reference, t.setup_code))
        self.sequences |= call_sequence_keys(t.reference, t.api_calls, t.setup_code)
        self.texts.update(normalise_text(text) for text in t.instructions)
        self.df.update(set().union(*(ngrams(text) for text in t.instructions)))

    def instruction_share(self, text: str) -> float:
        """The share of the text's distinctive 13-grams that a previous release holds (1.0 for a copied text)."""
        if normalise_text(text) in self.texts:
            return 1.0
        limit = math.inf if self.ngram_share == 0 else TEMPLATE_DF  # share 0: the literal rule, every 13-gram counts
        distinctive = [g for g in ngrams(text) if self.df[g] < limit]
        return len([g for g in distinctive if self.df[g]]) / len(distinctive) if distinctive else 0.0

    def reasons(self, t: TaskView) -> list[str]:
        found = []
        if program_key(t.reference, t.setup_code) in self.programs:
            found.append("program")
        if call_sequence_keys(t.reference, t.api_calls, t.setup_code) & self.sequences:
            found.append("call sequence")
        shares = [self.instruction_share(text) for text in t.instructions]
        if any(s > 0 and s >= self.ngram_share for s in shares):
            found.append("instruction 13-grams")
        return found


@dataclass
class FreshSplit:
    """The overlap step of a fresh build: the previous releases, the index of their tasks, and its tallies."""

    releases: list[Release]
    index: OverlapIndex
    seed: int
    checked: int = 0
    dropped: Counter = field(default_factory=Counter)  # by first reason (what the build report counts)
    matched: Counter = field(default_factory=Counter)  # by every reason a dropped task matched
    warning: str | None = None

    def drop_overlaps(self, drafts: list[Draft], rejections: Counter) -> list[Draft]:
        def reason(d: Draft) -> str | None:
            self.checked += 1
            reasons = self.index.reasons(TaskView.of_draft(d))
            if not reasons:
                return None
            self.dropped[reasons[0]] += 1
            self.matched.update(reasons)
            return f"overlaps a previous release ({reasons[0]})"

        return keep(drafts, reason, rejections)

    def matcher(self, config):
        """The matching step for this split (builder/match.py): the first release's strata, or None (--match-pool
        0)."""
        if not config.match_pool:
            return None
        from builder.match import Matcher

        first = self.releases[0]
        by_scenario: dict[str, list] = {}
        for t in first.tasks:
            by_scenario.setdefault(t.scenario, []).append(t)
        return Matcher({s: by_scenario.get(s, []) for s in config.scenarios}, config.n, config.match_pool, first.source)

    def tallies(self) -> dict:
        """What `summary` counts so far, for a build's checkpoint (`restore` puts it back)."""
        return {"checked": self.checked, "dropped": dict(self.dropped), "matched": dict(self.matched)}

    def restore(self, tallies: dict) -> None:
        self.checked = tallies["checked"]
        self.dropped, self.matched = Counter(tallies["dropped"]), Counter(tallies["matched"])

    def summary(self) -> dict:
        return {
            "against": [
                {"source": r.source, "content_hash": r.manifest.get("content_hash"), "seed": r.manifest.get("seed"),
                 "created_at": r.manifest.get("created_at"), "tasks": len(r.tasks)}
                for r in self.releases
            ],
            "seed": self.seed,
            "ngram_share": self.index.ngram_share,
            "checked": self.checked,
            "dropped": sum(self.dropped.values()),
            "dropped_by_reason": {k: self.dropped[k] for k in REASONS if self.dropped[k]},
            "matched_by_reason": {k: self.matched[k] for k in REASONS if self.matched[k]},
            "warning": self.warning,
        }


def prepare(config) -> FreshSplit:
    """Load the releases in `config.against`, move `config.seed` past every seed they used, index their tasks.

    Mutates `config` (seed, avoid_seeds), so the configuration saved in the new MANIFEST is the one that ran and
    a later `--fresh` against this build avoids its whole lineage.
    """
    out = Path(config.out).expanduser().resolve()
    releases = []
    for spec in config.against:
        release = load_release(spec)
        if release.folder.resolve() == out:
            raise DatasetError(f"--out {config.out} is the release given to --against; write the fresh split elsewhere")
        releases.append(release)
    used = set().union(*(r.seeds for r in releases))
    if config.seed in used:
        config.seed = max(used) + 1
    config.avoid_seeds = sorted(used)
    index = OverlapIndex(config.ngram_share)
    for r in releases:
        for row in r.tasks:
            index.add(TaskView.of_record(row))
    split = FreshSplit(releases, index, config.seed)
    split.warning = same_day_warning(split, config.created_at)
    return split


def describe(summary: dict, created_at: str) -> str:
    """The lines `python -m builder --fresh` prints after a build."""
    against = ", ".join(f"{r['source']} ({r['tasks']} tasks, seed {r['seed']}, {r['created_at']})"
                        for r in summary["against"])
    by = ", ".join(f"{n} by {k}" for k, n in summary["dropped_by_reason"].items()) or "none"
    lines = [f"fresh split: seed {summary['seed']}, created_at {created_at}, checked against {against}",
             f"  dropped {summary['dropped']} of {summary['checked']} tasks that overlapped ({by})"]
    if summary.get("match"):
        from builder.match import describe as describe_match

        lines.append(f"  matched to {summary['match']['against']} (from a pool of up to {summary['match']['pool']} x "
                     "--n programs per scenario):")
        lines += [f"    {line}" for line in describe_match(summary["match"])]
    warning = summary.get("warning")
    if warning:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)


def same_day_warning(split: FreshSplit, created_at: str) -> str | None:
    """`evaluate --since D` keeps tasks created after D, so a fresh split dated like its predecessor is not separable."""
    latest = max((r.manifest.get("created_at") or "" for r in split.releases), default="")
    if latest and created_at <= latest:
        return (f"created_at {created_at} is not after the previous release's {latest}: "
                f"`python -m evaluate --since {latest}` will not select this split (pass a later --created-at)")
    return None
