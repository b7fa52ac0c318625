"""The tensor world: runs inside sandbox workers only (it imports torch)."""

from __future__ import annotations

import base64

import torch

from scenarios.base import World

# dtypes numpy cannot hold are widened for storage; the tag keeps the real dtype, so a bfloat16 RESULT never
# compares equal to a float32 one.
_STORAGE = {torch.bfloat16: torch.float32, torch.float16: torch.float16}


class TensorWorld(World):
    def __init__(self) -> None:
        # One thread per test case: workers run side by side, and a fixed thread count keeps results stable.
        torch.set_num_threads(1)

    def namespace(self, case: dict) -> dict:
        assets = {a["name"]: a for a in case["assets"]}

        def load_tensor(name: str) -> torch.Tensor:
            if name not in assets:
                raise KeyError(f"no stored tensor named {name!r}; stored: {sorted(assets)}")
            a = assets[name]
            meta = a["meta"]
            flat = torch.frombuffer(bytearray(a["data"]), dtype=getattr(torch, meta["dtype"]))
            return flat.reshape(meta["shape"]).clone()

        return {"load_tensor": load_tensor}

    def canonical_leaf(self, obj):
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().resolve_conj().resolve_neg().contiguous()
            dtype = str(t.dtype).removeprefix("torch.")
            stored = t.to(_STORAGE.get(t.dtype, t.dtype)).numpy()
            return {"__tensor__": {
                "dtype": dtype,
                "shape": list(t.shape),
                "storage": stored.dtype.str.lstrip("<>|="),
                "data": base64.b64encode(stored.astype(stored.dtype.newbyteorder("<")).tobytes()).decode(),
            }}
        return super().canonical_leaf(obj)
