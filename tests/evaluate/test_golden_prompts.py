"""The rendered prompt for one fixed task per scenario, pinned in tests/evaluate/golden/.

Every backend receives exactly these messages, so a change here changes what every model is asked. Regenerate
deliberately with `STATEEVAL_UPDATE_GOLDEN=1 python -m pytest tests/evaluate/test_golden_prompts.py` and review the
diff.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import fuzz, to_record, translate
from core.records import TaskRecord
from evaluate.prompts import VARIANTS, build_messages
from scenarios import scenario_names

GOLDEN = Path(__file__).with_name("golden")


def render(messages: list[dict]) -> str:
    return "".join(f"=== {m['role']} ===\n{m['content']}\n" for m in messages)


def first_task(scenario: str) -> TaskRecord:
    config = BuildConfig(scenarios=[scenario], n=1, seed=0, created_at="2026-01-01")
    rejections = Counter()
    drafts, _ = fuzz(config, scenario, rejections)
    return to_record(translate(config, drafts, rejections)[0], config)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", scenario_names())
def test_prompt_matches_golden_file(scenario, variant):
    text = render(build_messages(first_task(scenario), variant))
    path = GOLDEN / (f"prompt_{scenario}.txt" if variant == "natural" else f"prompt_{scenario}_{variant}.txt")
    if os.environ.get("STATEEVAL_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.is_file(), f"no golden prompt for {scenario}; create it with STATEEVAL_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(), f"the {scenario} prompt changed; if intended, regenerate {path} and review"
