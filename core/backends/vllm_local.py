"""`--backend vllm`: vLLM in-process (`vllm.LLM`), every prompt in one batched `chat` call.

The chat template is the model's own, applied by vLLM to the messages from `evaluate.prompts`, so the prompt is
the one an OpenAI-compatible `vllm serve` endpoint would build from the same messages. Needs a CUDA GPU and the
`vllm` extra; both are checked before anything heavy loads.
"""

from __future__ import annotations

import json
import re
import sys

from core.backends import COUNTED_BY_TOKENIZER, Backend, BackendError, OnMessage, OnReply
from core.backends import Request, Sampling, Usage, missing_extra

# Hermes-style tool calls, as Qwen2.5's and most open models' chat templates ask for them:
# <tool_call>{"name": ..., "arguments": {...}}</tool_call>
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, model: str, tensor_parallel_size: int = 1, max_model_len: int | None = None,
                 gpu_memory_utilization: float = 0.9, **_options):
        self.model = model
        self.engine_args = dict(
            model=model, tensor_parallel_size=tensor_parallel_size, gpu_memory_utilization=gpu_memory_utilization,
        )
        if max_model_len:
            self.engine_args["max_model_len"] = max_model_len

    def _load(self):
        try:
            import vllm
        except ImportError as exc:
            raise BackendError(f"{missing_extra('vllm', 'vllm')} on a machine with a CUDA GPU, which vLLM needs; "
                               "without one, use --backend hf on the CPU, or --backend openai --base-url URL for a "
                               "vllm serve endpoint elsewhere") from exc
        import torch

        if not torch.cuda.is_available():
            raise BackendError("the vllm backend needs a CUDA GPU and none is visible; use --backend hf on the CPU, "
                               "or --backend openai --base-url URL for a vllm serve endpoint")
        return vllm, vllm.LLM(**self.engine_args)

    def _batch(self, requests: list[Request], sampling: Sampling, **chat_options) -> list[str]:
        """Every request in one batched `chat` call; each request's usage is set, the texts are returned."""
        self.prepare()
        vllm, llm = self._loaded
        params = [
            vllm.SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p,
                                max_tokens=sampling.max_new_tokens, seed=sampling.seed + r.sample)
            for r in requests
        ]
        # vLLM's own bar, only on a terminal: in a log its carriage-return redraws pile up (core.progress)
        outputs = llm.chat([r.messages for r in requests], params, use_tqdm=sys.stderr.isatty(), **chat_options)
        for r, out in zip(requests, outputs):
            # the model's own tokens: the templated prompt vLLM ran, and the tokens it generated
            r.usage = Usage(len(out.prompt_token_ids or ()), len(out.outputs[0].token_ids or ()), COUNTED_BY_TOKENIZER)
        return [out.outputs[0].text for out in outputs]

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        for r, text in zip(requests, self._batch(requests, sampling)):
            on_reply(r, text)

    def chat(self, requests: list[Request], sampling: Sampling, on_message: OnMessage) -> None:
        """One batched `chat` call per set of tools (the model's chat template renders them); the tool calls are
        read back from the Hermes-style <tool_call> blocks the template asks for."""
        groups: dict[str, list[Request]] = {}
        for r in requests:
            groups.setdefault(json.dumps(r.tools, sort_keys=True), []).append(r)
        for batch in groups.values():
            for r, text in zip(batch, self._batch(batch, sampling, tools=batch[0].tools)):
                on_message(r, assistant_message(text, r.sample))


def assistant_message(text: str, sample: int = 0) -> dict:
    """A generated text as an assistant message: each <tool_call> block a tool call (a block that is not JSON is
    passed on as it is, so the harness answers it as malformed arguments), the rest its content."""
    calls = []
    for i, block in enumerate(_TOOL_CALL.findall(text)):
        try:
            call = json.loads(block)
            name, arguments = call["name"], call.get("arguments", {})
            arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        except (ValueError, KeyError, TypeError):
            name, arguments = "", block
        calls.append({"id": f"call_{sample}_{i}", "type": "function",
                      "function": {"name": name, "arguments": arguments}})
    content = _TOOL_CALL.sub("", text).strip() or None
    return {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
