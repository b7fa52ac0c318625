"""Where sandbox jobs run: `--executor local|ray` on `python -m builder` and `python -m evaluate`.

`local` (the default) is `core.sandbox.harness.Sandbox`, this machine's warm workers. `ray` is
`core.sandbox.ray_executor.RayExecutor`: the same worker program, one per CPU of a Ray cluster. Both are an
`core.sandbox.harness.Executor`, which is all the builder's oracle capture and mutation runs and evaluate's scoring
see; the worker (and so the containment of every program) is the same whichever runs it.
"""

from __future__ import annotations

import importlib.util

from core.arguments import at_least_one
from core.sandbox.harness import Executor, ExecutorError, Limits
from core.sandbox.ray_executor import RAY_INSTALL, probe
from scenarios.registry import Entry, Registry

LOCAL, RAY = "local", "ray"
EXECUTOR_CLASSES: Registry[type[Executor]] = Registry("executor", {
    LOCAL: "core.sandbox.harness:Sandbox",
    RAY: Entry("core.sandbox.ray_executor:RayExecutor", "ray"),
})
EXECUTORS = tuple(EXECUTOR_CLASSES)
EXECUTOR_HELP = (
    "where the sandbox runs programs: 'local' (default: warm worker processes on this machine, --workers of "
    "them) or 'ray' (one worker per CPU of a Ray cluster, each an actor running the same contained worker; "
    f"needs the ray extra: {RAY_INSTALL})")
ADDRESS_HELP = (
    "the Ray cluster to use with --executor ray: 'auto' (the cluster `ray start` made this node part of), "
    "ray://HEAD:10001 (Ray Client) or HEAD:6379; default: start a local Ray instance on this machine's cores")


def add_executor_options(parser, default: str, workers_do: str = "") -> None:
    """--workers, --executor and --ray-address, as `python -m builder` and `python -m evaluate` both take them.
    `workers_do`: what the sandbox workers are for in that command, e.g. " for oracle capture"."""
    parser.add_argument("--workers", type=at_least_one, default=None,
                        help=f"sandbox workers{workers_do} (default: cores; with --executor ray: at most this many "
                             "actors, default one per CPU of the cluster)")
    parser.add_argument("--executor", choices=EXECUTORS, default=default, help=EXECUTOR_HELP)
    parser.add_argument("--ray-address", default=None, metavar="ADDR", help=ADDRESS_HELP)


def ray_missing() -> str | None:
    """Why `--executor ray` cannot run here, or None when ray is importable."""
    if importlib.util.find_spec("ray") is None:
        return f"--executor ray needs the ray package: {RAY_INSTALL}"
    return None


def check_choice(executor: str, address: str | None) -> str | None:
    """What is wrong with an --executor / --ray-address pair, as one line for a parser's error; None if nothing."""
    if address is not None and executor != RAY:
        return "--ray-address is for --executor ray (the local executor uses this machine's cores)"
    return ray_missing() if executor == RAY else None


def check_reachable(name: str, address: str | None) -> None:
    """Raise ExecutorError, naming the address, when nothing answers at a Ray cluster's address (a run checks
    this before it generates, not after)."""
    if name == RAY and address:
        probe(address)


def make_executor(name: str = LOCAL, address: str | None = None, workers: int | None = None,
                  limits: Limits | None = None) -> Executor:
    """An executor by name. `workers`: local, the worker processes (default: cores); ray, at most that many actors
    (default: every CPU of the cluster). `address`: the Ray cluster (None: a local Ray instance)."""
    problem = check_choice(name, address) if name in EXECUTORS else f"unknown executor {name!r}; choose from {EXECUTORS}"
    if problem:
        raise ExecutorError(problem)
    cls = EXECUTOR_CLASSES.get(name)
    return cls(workers, limits) if name == LOCAL else cls(address, workers, limits)
