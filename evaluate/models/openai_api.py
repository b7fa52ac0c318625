"""`--backend openai`: any OpenAI-compatible chat endpoint (OpenAI, Gemini's, a `vllm serve` server, ...).

Requests run concurrently on one event loop, at most `concurrency` at a time. Only rate limits (429) and server
errors (5xx), plus dropped connections and timeouts, are retried, with exponential backoff and jitter; any other
error (a bad key, an unknown model, a malformed request) stops the run with the server's message, because
retrying it would only repeat it.
"""

from __future__ import annotations

import asyncio
import os
import random

from evaluate.models import Backend, BackendError, OnReply, Request, Sampling, missing_extra

DEFAULT_CONCURRENCY = 32
MAX_ATTEMPTS = 6


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 concurrency: int = DEFAULT_CONCURRENCY, max_attempts: int = MAX_ATTEMPTS,
                 backoff_s: float = 1.0, timeout_s: float = 600.0, **_options):
        self.model = model
        self.base_url = base_url
        self.api_key = os.environ.get(api_key_env) or os.environ.get("OPENAI_API_KEY")
        if not self.api_key:
            if base_url is None:
                raise BackendError(f"set {api_key_env} to use {model!r} (or pass --base-url for a local server)")
            self.api_key = "EMPTY"  # local OpenAI-compatible servers (vllm serve) accept any key
        self.concurrency = max(1, concurrency)
        self.max_attempts = max(1, max_attempts)
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s

    def _load(self):
        try:
            import openai
        except ImportError as exc:
            raise missing_extra("openai", "openai") from exc
        return openai

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        self.prepare()
        asyncio.run(self._run(self._loaded, requests, sampling, on_reply))

    async def _run(self, openai, requests, sampling, on_reply) -> None:
        client = openai.AsyncOpenAI(api_key=self.api_key, base_url=self.base_url, max_retries=0,
                                    timeout=self.timeout_s)
        gate = asyncio.Semaphore(self.concurrency)

        async def one(r: Request) -> None:
            async with gate:
                reply = await self._complete(openai, client, r, sampling)
            on_reply(r, reply)

        try:
            tasks = [asyncio.create_task(one(r)) for r in requests]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for t in tasks:
                    t.cancel()
                raise
        finally:
            await client.close()

    async def _complete(self, openai, client, r: Request, sampling: Sampling) -> str:
        kwargs = dict(model=self.model, messages=r.messages, temperature=sampling.temperature,
                      top_p=sampling.top_p, max_tokens=sampling.max_new_tokens, seed=sampling.seed + r.sample)
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = await client.chat.completions.create(**kwargs)
                return response.choices[0].message.content or ""
            except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as exc:
                retryable = exc
            except openai.APIStatusError as exc:
                if exc.status_code >= 500:
                    retryable = exc
                else:
                    raise BackendError(
                        f"{self.base_url or 'the OpenAI API'} refused the request for {r.task_id} "
                        f"(HTTP {exc.status_code}): {exc.message}"
                    ) from exc
            if attempt == self.max_attempts:
                raise BackendError(f"{r.task_id}: giving up after {attempt} attempts: {retryable}") from retryable
            delay = self.backoff_s * 2 ** (attempt - 1) * (0.5 + random.random() / 2)
            await asyncio.sleep(max(delay, _retry_after(retryable)))
        raise AssertionError("unreachable")


def _retry_after(exc: Exception) -> float:
    """The server's Retry-After (seconds), when it sent one; capped so a bad header cannot stall a run."""
    response = getattr(exc, "response", None)
    try:
        return min(float(response.headers.get("retry-after", 0)), 60.0)
    except (AttributeError, TypeError, ValueError):
        return 0.0
