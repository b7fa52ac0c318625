"""Sandbox jobs on a Ray cluster: `--executor ray [--ray-address ADDR]` (the `ray` extra; imported only here).

Each worker slot is a Ray actor holding one CPU. It starts the very worker program the local sandbox starts
(`python -m core.sandbox.worker`, through `core.sandbox.harness._Worker`: the same scrubbed environment, JSON-lines
protocol and containment, decided on the node it runs on), keeps it warm, and runs the batches of jobs it is sent through it
one job at a time, replacing a worker that died exactly as the local pool does (`core.sandbox.harness.run_retrying`:
its job runs again on the new one). The harness side keeps every actor busy with batches, collects the `Outcome`s
in job order, and replaces an actor that dies (its process killed, its node lost): the jobs it had in flight run
again on the replacement, at most `RETRIES` more times, after which a job is an `infra_error` (no verdict).

Every node needs the project installed (the same version), since actors import `core` and start its worker.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
from collections import deque
from typing import Any, Iterable

from core.progress import progress
from core.sandbox import tempdirs
from core.sandbox.containment import PR_SET_DUMPABLE, prctl
from core.sandbox.harness import (JOIN_POLL_S, RETRIES, Executor, ExecutorError, Job, Limits, Outcome, SandboxFault,
                                  _Worker, lost, run_retrying)
from core.statuses import CRASH

BATCH_MAX = 16  # jobs per call to an actor: fewer round trips, yet enough batches to share the work out evenly
BATCHES_PER_SLOT = 4  # a run is cut into at least this many batches per actor, so no actor ends far behind
IN_FLIGHT = 2  # batches queued on each actor, so it starts the next one without waiting for the harness
CLOSE_S = 10.0  # how long closing waits for actors to stop their workers before killing the actors
PROBE_S = 10.0  # how long the one connection attempt to a cluster's address may take
CLIENT_PORT = 10001  # Ray Client's port, when a ray:// address names none
RAY_INSTALL = "pip install -e '.[ray]'"


def import_ray():
    try:
        import ray
    except ImportError:
        raise ExecutorError(f"--executor ray needs the ray package: {RAY_INSTALL}") from None
    return ray


class _Slot:
    """The actor's body: one warm worker on whichever node Ray placed it, serving batches of jobs in turn.

    Threaded (two calls at a time), so that `close` can stop the worker while a batch is running; batches take
    turns on the one worker (`_turn`), since two at once would cross their replies on its pipe."""

    def __init__(self, limits: Limits):
        if os.geteuid() != 0:
            prctl(PR_SET_DUMPABLE, 0)  # as in `Sandbox`: jobs of this user stay out of this process's pipes
        tempdirs.sweep()
        self.limits = limits
        self.worker: _Worker | None = None
        self.stopping = False
        self._turn = threading.Lock()

    def run(self, jobs: list[Job]) -> list[Outcome]:
        with self._turn:
            return [self._run(job) for job in jobs]

    def _run(self, job: Job) -> Outcome:
        return run_retrying(job, self._worker, self._release)

    def _worker(self) -> _Worker | None:
        """The warm worker; a new one for the first job or after a death; None once stopping."""
        if self.stopping:
            return None
        if self.worker is None or not self.worker.alive:
            self.worker = _Worker(self.limits)
        return self.worker

    def _release(self, worker: _Worker) -> None:
        worker.reap()  # a lost one leaves nothing behind, as in the local pool

    def close(self, kill: bool = False) -> None:
        self.stopping = True
        if self.worker is not None:
            self.worker.close(kill=kill)
        tempdirs.sweep()


class RayExecutor(Executor):
    """Jobs on the actors of a Ray cluster, `size` of them (at most one per CPU). Connects to `address` (None: a
    local Ray instance is started, and shut down on close) unless this process is already connected.

    Interrupted (Ctrl-C) while it runs jobs, it stops its actors' workers, kills the actors and re-raises."""

    def __init__(self, address: str | None = None, workers: int | None = None, limits: Limits | None = None):
        ray = self._ray = import_ray()
        if address:
            probe(address)
        self._owns = not ray.is_initialized()
        if self._owns:
            local = {} if address else {"include_dashboard": False}
            try:
                ray.init(address=address, logging_level=logging.WARNING, **local)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ExecutorError(f"cannot use the Ray cluster at {address or 'this machine'} "
                                    f"({_first_line(exc)}); start one with `ray start --head`, or check "
                                    "--ray-address") from None
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if cpus < 1:
            self.close()
            raise ExecutorError(f"the Ray cluster at {address or 'this machine'} has no CPU to run sandbox workers on")
        self.size = min(workers or cpus, cpus)
        self.limits = limits or Limits()
        self._actor_class = ray.remote(num_cpus=1, max_concurrency=2)(_Slot)
        self._actors: list[Any] = []
        self._stopping = False

    def _start(self) -> Any:
        return self._actor_class.remote(self.limits)

    def run_untrusted(self, jobs: Iterable[Job], desc: str | None = None) -> list[Outcome]:
        if self._stopping:
            raise RuntimeError("this executor is closed; open a new one")
        jobs = list(jobs)
        results: list[Outcome | None] = [None] * len(jobs)
        bar = progress(len(jobs), desc, unit="run")
        self._interruptible(lambda: self._dispatch(jobs, results, bar), bar)
        self._count_retries(results)
        return results  # type: ignore[return-value]

    def _dispatch(self, jobs: list[Job], results: list[Outcome | None], bar) -> None:
        """Keep every actor IN_FLIGHT batches deep until each job has its outcome in `results`."""
        ray = self._ray
        todo = deque(range(len(jobs)))
        deaths = [0] * len(jobs)  # how many actors died running each job
        per_batch = max(1, min(BATCH_MAX, math.ceil(len(jobs) / (self.size * BATCHES_PER_SLOT))))
        pending: dict[Any, tuple[Any, list[int]]] = {}  # object ref -> (actor, job indexes)
        while len(self._actors) < min(self.size, len(jobs)):
            self._actors.append(self._start())
        while todo or pending:
            for actor in self._actors:
                load = sum(a is actor for a, _ in pending.values())
                for _ in range(IN_FLIGHT - load):
                    batch = [todo.popleft() for _ in range(min(per_batch, len(todo)))]
                    if batch:
                        pending[actor.run.remote([jobs[i] for i in batch])] = (actor, batch)
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=JOIN_POLL_S)  # bounded: Ctrl-C is acted on
            for ref in ready:
                actor, batch = pending.pop(ref)
                try:
                    outcomes = ray.get(ref)
                except ray.exceptions.RayActorError as exc:  # the actor died: replace it, retry its jobs
                    self._replace(actor)
                    for i in reversed(batch):
                        deaths[i] += 1
                        if deaths[i] <= RETRIES:
                            todo.appendleft(i)
                        else:
                            results[i] = lost(jobs[i], deaths[i], _died(exc, deaths[i]))
                    bar.update(sum(results[i] is not None for i in batch))
                    continue
                except ray.exceptions.RayTaskError as exc:
                    if isinstance(exc.cause, SandboxFault):  # a full disk on the node: stop, as the local pool does
                        raise exc.cause from None
                    outcomes = [Outcome(jobs[i].key, CRASH, error=f"executor error: {_first_line(exc)}")
                                for i in batch]
                except ray.exceptions.RayError as exc:  # a harness bug: crash these jobs, not the run
                    outcomes = [Outcome(jobs[i].key, CRASH, error=f"executor error: {_first_line(exc)}")
                                for i in batch]
                for i, outcome in zip(batch, outcomes):
                    if deaths[i]:
                        outcome.extra["retried"] = outcome.extra.get("retried", 0) + deaths[i]
                    results[i] = outcome
                bar.update(len(batch))

    def _replace(self, actor: Any) -> None:
        """A fresh actor in the dead one's place (once: its other batches in flight fail the same way)."""
        for n, a in enumerate(self._actors):
            if a is actor:
                self._ray.kill(actor, no_restart=True)
                self._actors[n] = self._start()

    def restart_workers(self) -> None:
        self._stop_actors(kill=False)  # the next run starts new ones

    def _stop_actors(self, kill: bool) -> None:
        ray = self._ray
        actors, self._actors = getattr(self, "_actors", []), []
        if actors:
            ray.wait([a.close.remote(kill) for a in actors], num_returns=len(actors), timeout=CLOSE_S)
            for a in actors:
                ray.kill(a, no_restart=True)

    def close(self, kill: bool = False) -> None:
        """Stop every actor's worker (`kill`: at once), then the actors; shut down the Ray instance this started."""
        ray = self._ray
        self._stopping = True
        self._stop_actors(kill)
        if self._owns and ray.is_initialized():
            ray.shutdown()


def probe(address: str) -> None:
    """Fail at once, naming the address, when nothing answers there: `ray.init` would retry it for minutes.
    'auto' and 'local' name no host, and a GCS address without a port is left for Ray to read."""
    client = address.startswith("ray://")
    host, _, port = address.removeprefix("ray://").partition("/")[0].rpartition(":")
    if not host and client:
        host, port = port, str(CLIENT_PORT)
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_S).close()
    except OSError as exc:
        raise ExecutorError(
            f"nothing answers at --ray-address {address} ({_first_line(exc)}): is the cluster's head node up "
            f"(`ray start --head`), and is the port right ({CLIENT_PORT} for ray://, the GCS port, 6379 by "
            "default, otherwise), with no firewall or proxy between?") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _died(exc: BaseException, deaths: int) -> str:
    return (f"the Ray actor running it died {deaths} times (a node lost, the process killed); last: "
            f"{_first_line(exc)}")
