"""`--backend openai`: any OpenAI-compatible chat endpoint (OpenAI, Gemini's, a `vllm serve` server, ...).

Requests run concurrently on one event loop, at most `concurrency` at a time. Only rate limits (429) and server
errors (5xx), plus dropped connections and timeouts, are retried, with exponential backoff and jitter; any other
error (a bad key, an unknown model, a malformed request) stops the run with the server's message, because
retrying it would only repeat it. Before the first request the endpoint is probed once: one that cannot be reached
stops the run at once with the likely cause, rather than failing a task after minutes of retries.
"""

from __future__ import annotations

import asyncio
import os
import socket
import urllib.request
from urllib.parse import urlsplit

from core.backends import COUNTED_BY_API, Backend, BackendError, OnMessage, OnReply
from core.backends import Request, Sampling, Usage, missing_extra
from core.retry import backoff_s

DEFAULT_CONCURRENCY = 32
MAX_ATTEMPTS = 6
PROBE_TIMEOUT_S = 15.0


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
        self._probe(openai)
        return openai

    def _probe(self, openai) -> None:
        """One request before hundreds: an endpoint that cannot be reached is one error that names it and the
        likely cause, not every task's failure after its retries. Any HTTP answer counts as reachable (not every
        OpenAI-compatible server lists its models); the same client settings (proxies included) are used."""
        client = openai.OpenAI(api_key=self.api_key, base_url=self.base_url, max_retries=0, timeout=PROBE_TIMEOUT_S)
        try:
            client.models.list()
        except openai.APIStatusError:
            pass
        except openai.APIConnectionError as exc:  # timeouts included
            url = self.base_url or str(client.base_url)
            raise BackendError(f"cannot reach {url}: {unreachable(exc, url, openai)}") from exc
        finally:
            client.close()

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        self.prepare()
        asyncio.run(self._run(self._loaded, requests, sampling, on_reply, _content))

    def chat(self, requests: list[Request], sampling: Sampling, on_message: OnMessage) -> None:
        """One turn of each conversation, with its tools (the chat API's `tools`; parallel calls allowed)."""
        self.prepare()
        asyncio.run(self._run(self._loaded, requests, sampling, on_message, _assistant_message))

    async def _run(self, openai, requests, sampling, on_reply, read) -> None:
        client = openai.AsyncOpenAI(api_key=self.api_key, base_url=self.base_url, max_retries=0,
                                    timeout=self.timeout_s)
        gate = asyncio.Semaphore(self.concurrency)

        async def one(r: Request) -> None:
            async with gate:
                reply = read(await self._complete(openai, client, r, sampling))
            on_reply(r, reply)

        # The loop waits on sockets; a Ctrl-C that the kernel hands to another thread (the resolver's) does not end
        # that wait, so the loop also wakes on a short timer to let the interpreter act on it.
        awake = asyncio.create_task(_wake_up_often())
        try:
            tasks = [asyncio.create_task(one(r)) for r in requests]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for t in tasks:
                    t.cancel()
                raise
        finally:
            awake.cancel()
            await client.close()

    async def _complete(self, openai, client, r: Request, sampling: Sampling):
        """The endpoint's answer to one request (its usage set on the request), with the retries described above."""
        kwargs = dict(model=self.model, messages=r.messages, temperature=sampling.temperature,
                      top_p=sampling.top_p, max_tokens=sampling.max_new_tokens, seed=sampling.seed + r.sample)
        if r.tools:
            kwargs["tools"] = r.tools
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = await client.chat.completions.create(**kwargs)
                r.usage = api_usage(response)
                return response
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
            await asyncio.sleep(max(backoff_s(attempt, self.backoff_s), _retry_after(retryable)))
        raise AssertionError("unreachable")


def _content(response) -> str:
    return response.choices[0].message.content or ""


def _assistant_message(response) -> dict:
    """The reply as a plain assistant message: its text and its tool calls (arguments as the model wrote them)."""
    message = response.choices[0].message
    out = {"role": "assistant", "content": message.content}
    calls = [{"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
             for c in message.tool_calls or [] if getattr(c, "function", None) is not None]
    if calls:
        out["tool_calls"] = calls
    return out


async def _wake_up_often(period_s: float = 0.2) -> None:
    while True:
        await asyncio.sleep(period_s)


def api_usage(response) -> Usage | None:
    """The tokens the endpoint billed for this reply, from its `usage` fields; None when it sent none (some
    OpenAI-compatible servers do not)."""
    usage = getattr(response, "usage", None)
    try:
        return Usage(int(usage.prompt_tokens), int(usage.completion_tokens), COUNTED_BY_API)
    except (AttributeError, TypeError, ValueError):
        return None


def _retry_after(exc: Exception) -> float:
    """The server's Retry-After (seconds), when it sent one; capped so a bad header cannot stall a run."""
    response = getattr(exc, "response", None)
    try:
        return min(float(response.headers.get("retry-after", 0)), 60.0)
    except (AttributeError, TypeError, ValueError):
        return 0.0


def unreachable(exc: BaseException, url: str, openai) -> str:
    """The likely cause of a connection that failed, and what to do about it, in a few words."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    causes, e = [], exc
    while e is not None and len(causes) < 10:
        causes.append(e)
        e = e.__cause__ or e.__context__
    proxy = _proxy_for(parts.scheme, host)
    refused = any(isinstance(c, ConnectionRefusedError) for c in causes)
    if proxy and refused:
        return (f"the proxy {proxy} set in the environment refused the connection: fix HTTP(S)_PROXY, or add {host} "
                "to NO_PROXY if the server needs no proxy")
    if isinstance(exc, openai.APITimeoutError):
        why = (f"no answer within {PROBE_TIMEOUT_S:.0f} s (a wrong host or port, a firewall, or a server too busy "
               "to answer)")
    elif refused:
        why = (f"nothing is listening on {host}:{port} (connection refused): start the server, or fix the port in "
               "--base-url")
    elif any(isinstance(c, socket.gaierror) for c in causes):
        why = f"the host name {host!r} does not resolve: check --base-url, or this machine's network"
    else:
        why = str(causes[-1]).strip() or type(causes[-1]).__name__
    if proxy:
        why += f"; requests go through the proxy {proxy} set in the environment (NO_PROXY={host} bypasses it)"
    return " ".join(why.split())


def _proxy_for(scheme: str, host: str) -> str | None:
    """The proxy the environment sets for `scheme` and `host`, as scheme://host:port (credentials left out)."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return f"{p.scheme}://{p.hostname}" + (f":{p.port}" if p.port else "")
