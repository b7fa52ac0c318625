"""Running untrusted code: the harness side (`harness`), the warm worker (`worker`), the job protocol both speak
(`protocol`), containment (`containment`), the sandbox's folders (`tempdirs`) and the executors (`executor`,
`ray_executor`). docs/trust.md says what is contained and how.

This file imports nothing, so that a worker importing `core.sandbox.worker` loads only what the worker needs.
"""
