"""cl100k_base token counts (the `bpe-openai` package: offline, exact for that encoding) for replies no model
produced: the reference's replay and pre-written `--samples`. They estimate what a prompt and an answer of that
length would cost; the chat template's few extra tokens per message are not counted."""

from __future__ import annotations

import warnings
from functools import lru_cache

from core.backends import COUNTED_BY_CL100K, Usage

ENCODING = "cl100k_base"


@lru_cache(maxsize=1)
def _encoding():
    with warnings.catch_warnings():  # its data loader uses a deprecated importlib.resources call
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import bpe_openai
        except ImportError as exc:  # a dependency of the project; a broken install gets one clear line
            raise ImportError("token counts need the bpe-openai package: pip install bpe-openai") from exc
        return bpe_openai.get_encoding(ENCODING)


def count(text: str) -> int:
    # encode_ordinary: text that spells a special token (<|endoftext|>) is counted as text, never refused
    return len(_encoding().encode_ordinary(text)) if text else 0


def prompt_tokens(messages: list[dict]) -> int:
    return sum(count(m.get("content") or "") for m in messages)


def estimate(messages: list[dict], reply: str | None, prompt: int | None = None) -> Usage:
    """The usage of `reply` to `messages` in cl100k_base tokens (`prompt`: the prompt's count, if known)."""
    return Usage(prompt_tokens(messages) if prompt is None else prompt, count(reply or ""), COUNTED_BY_CL100K)
