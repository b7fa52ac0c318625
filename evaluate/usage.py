"""Tokens and cost of a run: per sample, summed per scenario and overall, priced when the user gives a price.

The counts are what generating the scored replies cost, those taken from the generation cache included (each
cache line keeps its reply's usage), so a resumed run reports the same totals as one that ran in one go. How they
were counted is recorded: `api` (the endpoint's `usage` fields), `tokenizer` (the model's own, hf and vllm) or
`cl100k_base` (an estimate for replies no model produced: the reference's replay and `--samples`). A sample whose
count is unknown (an endpoint that sends no usage, a cache line from before counts were kept) is left out of the
sums, and `counted` says how many samples the sums cover.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

PER = 1_000_000  # prices are quoted in USD per million tokens


@dataclass(frozen=True)
class Price:
    prompt: float  # USD per million prompt (input) tokens
    completion: float  # USD per million completion (output) tokens

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / PER


def sample_tokens(usage) -> dict | None:
    """A sample's row in results.json: {"prompt": ..., "completion": ...}, or None when unknown."""
    if usage is None:
        return None
    return {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens}


def summarize_usage(samples: list[tuple[str, dict | None]], counted_by: set[str], price: Price | None) -> dict:
    """`samples`: (scenario, the sample's tokens or None) per scored sample. The block results.json keeps as
    `usage`, laid out like `summary` (overall, scenarios)."""
    by_scenario: dict[str, list[dict | None]] = defaultdict(list)
    for scenario, tokens in samples:
        by_scenario[scenario].append(tokens)

    def block(rows: list[dict | None]) -> dict:
        known = [t for t in rows if t is not None]
        prompt = sum(t["prompt"] for t in known)
        completion = sum(t["completion"] for t in known)
        out = {"samples": len(rows), "counted": len(known), "prompt_tokens": prompt,
               "completion_tokens": completion, "total_tokens": prompt + completion}
        out["cost_usd"] = price.cost(prompt, completion) if price is not None else None
        return out

    return {
        "counted_by": ",".join(sorted(counted_by)) or None,
        "price_usd_per_million": None if price is None else {"prompt": price.prompt, "completion": price.completion},
        "overall": block([t for _, t in samples]),
        "scenarios": {s: block(rows) for s, rows in sorted(by_scenario.items())},
    }
