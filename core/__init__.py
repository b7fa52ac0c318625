"""The shared core below `builder` and `evaluate`: what both halves run on.

- `records`: the task record (`TaskRecord`, `TestCase`), its Arrow schema, and reading and hashing a dataset folder;
- `sandbox/`: running untrusted programs (the harness side, the warm worker, containment, the job protocol, and the
  local and Ray executors);
- `backends/`: the model backends by name (`reference`, `openai`, `vllm`, `hf`) and the generation cache;
- `statuses`: every status a run can give a sample, once;
- small helpers every command shares: `arguments`, `errors` (one-line errors), `progress`, `names`, `retry`,
  `provenance`.

This file imports nothing: a sandbox worker imports `core.sandbox.worker` and must not load the task record with it.
"""
