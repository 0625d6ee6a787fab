"""Where a sweep's tasks run: a Dask cluster (local or existing), one child process, or this process.

======================  ===========================================================================
``scheduler``           runs the tasks
======================  ===========================================================================
``None``, ``"local"``   a Dask ``LocalCluster`` on this machine: worker processes, one thread each,
                        one per core (at most ``workers``); each worker runs its tasks in a child
                        process with the time and memory limits (:mod:`symattn.sweep.runner`).
                        With ``DASK_SCHEDULER_ADDRESS`` set, ``None`` uses that scheduler instead.
``"tcp://HOST:PORT"``   an existing Dask scheduler (``dask scheduler``, dask-jobqueue, Kubernetes...);
                        its workers need this version of symattn installed.
``"sequential"``        one task after another in one child process of this one (limits hold).
``"synchronous"``       one task after another in this process: no time or memory limit (for
                        debugging and examples).
======================  ===========================================================================

Every outcome reaches ``on_outcome`` as soon as its task finishes, so the
caller writes it to the results store at once.

Examples
--------
>>> describe_scheduler("synchronous"), describe_scheduler("tcp://10.0.0.5:8786")
('synchronous (this process, no limits)', 'the Dask scheduler at tcp://10.0.0.5:8786')
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from .._cluster import check_workers, open_client, scheduler_address
from ..errors import SymattnError
from .runner import (
    CRASHED, ERROR, LOCAL_ENVIRONMENT_VARIABLE, LOST, MEMORY_ENVIRONMENT_VARIABLE, TaskRunner, run_in_process,
    run_on_worker,
)

__all__ = ["run_tasks", "describe_scheduler", "resolve_scheduler", "SEQUENTIAL", "SYNCHRONOUS", "LOCAL"]

SEQUENTIAL, SYNCHRONOUS, LOCAL = "sequential", "synchronous", "local"

#: The environment variable naming an existing Dask scheduler (Dask's own).
SCHEDULER_ENVIRONMENT_VARIABLE = "DASK_SCHEDULER_ADDRESS"


def resolve_scheduler(scheduler: str | None) -> str:
    """``"local"``, ``"sequential"``, ``"synchronous"`` or a scheduler address.

    Examples
    --------
    >>> resolve_scheduler("Sequential"), resolve_scheduler("127.0.0.1:8786")
    ('sequential', 'tcp://127.0.0.1:8786')
    >>> resolve_scheduler("fast")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: unknown scheduler 'fast': give local, sequential, synchronous or a Dask scheduler address such as tcp://127.0.0.1:8786
    """
    if scheduler is None:
        scheduler = os.environ.get(SCHEDULER_ENVIRONMENT_VARIABLE) or LOCAL
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise SymattnError(f"a scheduler is a name or an address, got {scheduler!r}")
    text = scheduler.strip()
    if text.lower() in (LOCAL, SEQUENTIAL, SYNCHRONOUS):
        return text.lower()
    address = scheduler_address(text)
    if address is not None:
        return address
    raise SymattnError(f"unknown scheduler {scheduler!r}: give local, sequential, synchronous or a Dask "
                       "scheduler address such as tcp://127.0.0.1:8786")


def describe_scheduler(scheduler: str, workers: int | None = None) -> str:
    """A short description of where tasks run, for the result and the summary.

    Examples
    --------
    >>> describe_scheduler("local", 2), describe_scheduler("sequential")
    ('Dask LocalCluster, 2 worker processes', 'sequential (one child process)')
    """
    if scheduler == SYNCHRONOUS:
        return "synchronous (this process, no limits)"
    if scheduler == SEQUENTIAL:
        return "sequential (one child process)"
    if scheduler == LOCAL:
        return f"Dask LocalCluster, {workers} worker process{'es' * (workers != 1)}"
    return f"the Dask scheduler at {scheduler}"


def local_workers(workers: int | None, tasks: int) -> int:
    """Worker processes of a local cluster: one per core, at most ``workers`` and at most one per task.

    Examples
    --------
    >>> local_workers(1, 10), local_workers(64, 1)
    (1, 1)
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    check_workers(workers)
    return max(1, min(cores, workers or cores, tasks))


def _lost(task: dict, err: BaseException) -> dict:
    from distributed import KilledWorker

    if isinstance(err, KilledWorker):
        reason = ("its worker was lost each time it ran (the scheduler's limit of retries on lost workers): "
                  + " ".join(str(err).split())[:300])
        status = LOST
    elif type(err).__name__ == "CancelledError":
        status, reason = LOST, "cancelled by the scheduler (its worker or the scheduler went away)"
    else:
        status, reason = ERROR, f"the worker could not run it: {type(err).__name__}: {' '.join(str(err).split())}"
    return {"key": task["key"], "status": status, "reason": reason, "result": None, "seconds": None,
            "peak_memory": None, "worker": None}


def _run_on_dask(tasks, scheduler, workers, timeout, memory_limit, on_outcome, on_start):
    from distributed import as_completed

    # each local worker starts its task process as it starts (the preload), so their imports overlap
    local = dict(preload=["symattn.sweep.runner"],
                 env={MEMORY_ENVIRONMENT_VARIABLE: str(memory_limit or 0), LOCAL_ENVIRONMENT_VARIABLE: "1"})
    with open_client(None if scheduler == LOCAL else scheduler, workers, **local) as client:
        services = client.scheduler_info().get("services", {})
        on_start(client.dashboard_link if "dashboard" in services else None)
        futures = {}
        for index, task in enumerate(tasks):  # started in the order given (the largest first)
            future = client.submit(run_on_worker, task, timeout, memory_limit, pure=False,
                                   key=f"symattn-sweep-{task['key']}", priority=len(tasks) - index)
            futures[future] = task
        try:
            for future in as_completed(list(futures), loop=client.loop):
                task = futures[future]
                try:
                    outcome = future.result()
                except Exception as err:  # the task's worker died too often, or could not run it
                    outcome = _lost(task, err)
                on_outcome(task, outcome)
        except BaseException:
            client.cancel(list(futures), force=True)
            raise


def run_tasks(tasks: list[dict], scheduler: str, workers: int | None, timeout: float | None,
              memory_limit: int | None, on_outcome: Callable[[dict, dict], None],
              on_start: Callable[[str | None], None] = lambda dashboard: None) -> None:
    """Run every task where ``scheduler`` says; call ``on_outcome(task, outcome)`` as each one finishes.

    ``tasks`` come in the order they should start (the largest first keeps
    the workers busy to the end).  ``on_start(dashboard)`` is called once the
    tasks can run, with the Dask dashboard's address when one is running.
    Ctrl-C cancels what is still running and propagates.

    Examples
    --------
    >>> seen = []
    >>> task = {"key": "k", "point": {"layers": 1}, "analysis": "parameters", "options": {}}
    >>> run_tasks([task], "synchronous", None, None, None, lambda t, o: seen.append(o["status"]))
    >>> seen
    ['ok']
    """
    if not tasks:
        return
    if scheduler == SYNCHRONOUS:
        on_start(None)
        for task in tasks:
            on_outcome(task, run_in_process(task, max_memory=memory_limit))
    elif scheduler == SEQUENTIAL:
        runner = TaskRunner(memory_limit)
        on_start(None)
        try:
            for task in tasks:
                try:
                    outcome = runner.run(task, timeout)
                except RuntimeError as err:  # the child could not start
                    outcome = {"key": task["key"], "status": CRASHED, "reason": str(err), "result": None,
                               "seconds": None, "peak_memory": None, "worker": None}
                on_outcome(task, outcome)
        finally:
            runner.close()
    else:
        _run_on_dask(tasks, scheduler, workers, timeout, memory_limit, on_outcome, on_start)
    sys.stderr.flush()
