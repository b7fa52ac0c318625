"""The build's configuration: every default in one place, saved beside the dataset it produced."""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass, field

from scenarios import scenario_names


@dataclass
class BuildConfig:
    scenarios: list[str] = field(default_factory=scenario_names)
    n: int = 60  # programs fuzzed per scenario (tasks kept are at most this many)
    seed: int = 0
    out: str = "stateeval"
    translator: str = "template"
    workers: int | None = None  # sandbox workers for oracle capture; None = one per core
    calls_per_path: int = 5  # API calls on every path through a program (the paper uses 5)
    branch_probability: float = 0.5
    coverage: bool = True  # coverage-guided sampling (False: the paper's uniform ablation)
    created_at: str = ""  # YYYY-MM-DD stamped on every task; empty = today (UTC)
    timeout_s: float = 10.0  # per test case when capturing oracles

    def __post_init__(self) -> None:
        if not self.created_at:
            self.created_at = _dt.datetime.now(_dt.timezone.utc).date().isoformat()
        _dt.date.fromisoformat(self.created_at)  # a clear ValueError for a malformed date
        if self.n < 1:
            raise ValueError("--n must be at least 1")
        if self.calls_per_path < 2:
            raise ValueError("--calls must be at least 2 (a branch needs a call before and after it)")
        if not 0 <= self.branch_probability <= 1:
            raise ValueError("--branch-probability must be between 0 and 1")

    def to_dict(self) -> dict:
        return asdict(self)
