"""`--backend vllm`: vLLM in-process (`vllm.LLM`), every prompt in one batched `chat` call.

The chat template is the model's own, applied by vLLM to the messages from `evaluate.prompts`, so the prompt is
the one an OpenAI-compatible `vllm serve` endpoint would build from the same messages. Needs a CUDA GPU and the
`vllm` extra; both are checked before anything heavy loads.
"""

from __future__ import annotations

import sys

from evaluate.models import COUNTED_BY_TOKENIZER, Backend, BackendError, OnReply, Request, Sampling, Usage, missing_extra


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
            raise missing_extra("vllm", "vllm") from exc
        import torch

        if not torch.cuda.is_available():
            raise BackendError("the vllm backend needs a CUDA GPU and none is visible; use --backend hf on the CPU, "
                               "or --backend openai --base-url URL for a vllm serve endpoint")
        return vllm, vllm.LLM(**self.engine_args)

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        self.prepare()
        vllm, llm = self._loaded
        params = [
            vllm.SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p,
                                max_tokens=sampling.max_new_tokens, seed=sampling.seed + r.sample)
            for r in requests
        ]
        # vLLM's own bar, only on a terminal: in a log its carriage-return redraws pile up (evaluate.progress)
        outputs = llm.chat([r.messages for r in requests], params, use_tqdm=sys.stderr.isatty())
        for r, out in zip(requests, outputs):
            # the model's own tokens: the templated prompt vLLM ran, and the tokens it generated
            r.usage = Usage(len(out.prompt_token_ids or ()), len(out.outputs[0].token_ids or ()), COUNTED_BY_TOKENIZER)
            on_reply(r, out.outputs[0].text)
