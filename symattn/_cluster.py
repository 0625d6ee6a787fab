"""Dask clients for the analyses that spread one computation over workers (a sweep, a dimension, a spectrum).

``open_client(scheduler, workers)`` gives a ``distributed.Client``: to the
scheduler at an address, to a client the caller already holds, or to a
``LocalCluster`` of ``workers`` processes started here (and closed with the
client).  ``map_as_completed(client, calls)`` runs pure calls there and
yields each result as it arrives; a task whose worker dies is run again by
the scheduler (its ``allowed-failures``, 3 by default).  Dask is imported
only when a client is opened: ``import symattn`` stays light.

Examples
--------
>>> scheduler_address("127.0.0.1:8786"), scheduler_address("tcp://10.0.0.5:8786")
('tcp://127.0.0.1:8786', 'tcp://10.0.0.5:8786')
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from .errors import SymattnError

__all__ = ["scheduler_address", "open_client", "map_as_completed", "check_workers", "is_client", "uses_dask",
           "describe_client", "worker_count", "TaskRunner", "task_runner"]


def scheduler_address(text: str) -> str | None:
    """``tcp://HOST:PORT`` for an address with or without its protocol; ``None`` when ``text`` is not one.

    Examples
    --------
    >>> scheduler_address("localhost:8786"), scheduler_address("fast")
    ('tcp://localhost:8786', None)
    """
    text = text.strip()
    if "://" in text:
        return text
    host, _, port = text.rpartition(":")
    if host and port.isdigit():
        return f"tcp://{text}"
    return None


def check_workers(workers) -> int | None:
    """``workers`` when ``None`` or a positive integer; a SymattnError naming it otherwise.

    Examples
    --------
    >>> check_workers(2), check_workers(None)
    (2, None)
    >>> check_workers(0)
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: workers must be a positive integer (worker processes of a local Dask cluster), got 0
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise SymattnError(f"workers must be a positive integer (worker processes of a local Dask cluster), "
                           f"got {workers!r}")
    return workers


def is_client(value) -> bool:
    """True for a ``distributed.Client`` (checked without importing Dask when it is not loaded).

    Examples
    --------
    >>> is_client("tcp://127.0.0.1:8786")
    False
    """
    return type(value).__name__ == "Client" and type(value).__module__.startswith("distributed")


def uses_dask(scheduler, workers) -> bool:
    """True when a computation runs on Dask: a scheduler (address, ``"local"`` or client) or ``workers``.

    The address is checked here, before any work.

    Examples
    --------
    >>> uses_dask(None, None), uses_dask(None, 2), uses_dask("tcp://127.0.0.1:8786", None)
    (False, True, True)
    >>> uses_dask("fast", None)
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: scheduler must be a Dask scheduler address such as tcp://127.0.0.1:8786, 'local' or a distributed.Client, got 'fast'
    """
    if scheduler is None:
        return workers is not None
    if is_client(scheduler):
        return True
    if not isinstance(scheduler, str) or (scheduler.strip().lower() != "local" and scheduler_address(scheduler) is None):
        raise SymattnError(f"scheduler must be a Dask scheduler address such as tcp://127.0.0.1:8786, 'local' or a "
                           f"distributed.Client, got {scheduler!r}")
    return True


def describe_client(scheduler, workers, spread: int) -> str:
    """Where the tasks ran, for a method text: a LocalCluster of N processes, or N workers of a scheduler.

    Examples
    --------
    >>> describe_client(None, 2, 2)
    'a Dask LocalCluster of 2 worker processes'
    >>> describe_client("127.0.0.1:8786", None, 3)
    '3 workers of the Dask scheduler at tcp://127.0.0.1:8786'
    """
    if is_client(scheduler):
        if type(getattr(scheduler, "cluster", None)).__name__ == "LocalCluster":
            return f"a Dask LocalCluster of {spread} worker process{'es' * (spread != 1)}"
        return f"{spread} worker{'s' * (spread != 1)} of the Dask scheduler at {scheduler.scheduler.address}"
    if scheduler is None or scheduler.strip().lower() == "local":
        return f"a Dask LocalCluster of {workers or 1} worker process{'es' * ((workers or 1) != 1)}"
    return f"{spread} worker{'s' * (spread != 1)} of the Dask scheduler at {scheduler_address(scheduler)}"


@dataclass(frozen=True)
class TaskRunner:
    """Where one computation's tasks run: ``parts(calls)`` yields ``(call, result)``, on ``spread`` workers.

    Examples
    --------
    >>> TaskRunner(None, 2, "two workers").inputs_per_task(9)    # two tasks per worker
    3
    """

    parts: object
    spread: int
    where: str

    def inputs_per_task(self, inputs: int) -> int:
        """Inputs per task for ``inputs`` in all: two tasks per worker, so that a lost worker costs little."""
        return max(1, -(-inputs // (2 * self.spread)))


@contextlib.contextmanager
def task_runner(scheduler, workers: int | None, name: str):
    """A :class:`TaskRunner` on Dask (:func:`open_client`), its tasks named ``name``; closed on leaving.

    Examples
    --------
    >>> with task_runner(None, 1, "symattn-example") as runner:
    ...     runner.spread, runner.where, sorted(result for _, result in runner.parts([(abs, (-2,)), (abs, (3,))]))
    (1, 'a Dask LocalCluster of 1 worker process', [2, 3])
    """
    with open_client(scheduler, workers) as client:
        spread = worker_count(client, workers)
        yield TaskRunner(lambda calls: map_as_completed(client, calls, name=name), spread,
                         describe_client(scheduler, workers, spread))


def worker_count(client, workers: int | None = None) -> int:
    """The workers ``client`` has now (at least 1; ``workers`` when the scheduler does not say yet).

    Examples
    --------
    >>> from distributed import Client
    >>> with Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None) as client:
    ...     worker_count(client)
    2
    """
    return max(1, len(client.scheduler_info().get("workers", {})) or (workers or 1))


@contextlib.contextmanager
def open_client(scheduler, workers: int | None = None, **cluster_options):
    """A Dask client for the block: to ``scheduler`` (an address or a Client), else a new LocalCluster.

    Parameters
    ----------
    scheduler : str, distributed.Client or None
        An address such as ``tcp://127.0.0.1:8786`` (or ``127.0.0.1:8786``), a
        client the caller keeps (not closed here), or ``None``/``"local"``
        for a LocalCluster of ``workers`` processes with one thread each.
    workers : int, optional
        Worker processes of the local cluster (default 1).
    cluster_options
        Passed to ``LocalCluster`` (``preload=``, ``env=``...).

    Yields
    ------
    distributed.Client

    Examples
    --------
    >>> with open_client("fast"):
    ...     pass
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: a scheduler is a Dask scheduler address such as tcp://127.0.0.1:8786 or a distributed.Client, got 'fast'
    """
    if is_client(scheduler):
        yield scheduler
        return
    local = scheduler is None or (isinstance(scheduler, str) and scheduler.strip().lower() == "local")
    address = scheduler_address(scheduler) if isinstance(scheduler, str) and not local else None
    if not local and address is None:
        raise SymattnError(f"a scheduler is a Dask scheduler address such as tcp://127.0.0.1:8786 or a "
                           f"distributed.Client, got {scheduler!r}")
    from distributed import Client, LocalCluster

    if local:
        quiet_logs = logging.getLogger("distributed").level
        logging.getLogger("distributed").setLevel(logging.ERROR)
        cluster = None
        try:
            cluster = LocalCluster(n_workers=check_workers(workers) or 1, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR, **cluster_options)
            with Client(cluster) as client:
                yield client
        finally:
            if cluster is not None:
                cluster.close()
            logging.getLogger("distributed").setLevel(quiet_logs)
        return
    try:
        client = Client(address, timeout="30s", set_as_default=False)
    except OSError as err:
        raise SymattnError(f"cannot reach the Dask scheduler at {address}: {' '.join(str(err).split())}") from None
    with client:
        yield client


def map_as_completed(client, calls, name: str = "symattn", retries: int = 1):
    """Run ``function(*arguments)`` for each ``(function, arguments)`` of ``calls`` on ``client``.

    Yields ``((function, arguments), result)`` as each finishes.  The calls
    must be pure (the same arguments give the same result): a task whose
    worker is lost is run again elsewhere, and one that raises is retried
    ``retries`` times before its error propagates.  Leaving early (an error,
    Ctrl-C) cancels what is still running.

    Parameters
    ----------
    client : distributed.Client
    calls : list of (callable, tuple)
    name : str
        Prefix of the task keys (shown on the dashboard).
    retries : int

    Examples
    --------
    >>> from distributed import Client
    >>> with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
    ...     sorted(result for _, result in map_as_completed(client, [(abs, (-2,)), (abs, (3,))]))
    [2, 3]
    """
    import uuid

    from distributed import as_completed

    run = uuid.uuid4().hex[:12]
    futures = {}
    for index, (function, arguments) in enumerate(calls):
        future = client.submit(function, *arguments, key=f"{name}-{run}-{index}", pure=False, retries=retries,
                               priority=len(calls) - index)
        futures[future] = (function, arguments)
    try:
        for future in as_completed(list(futures), loop=client.loop):
            call = futures.pop(future)
            result = future.result()
            future.release()
            yield call, result
    finally:
        if futures:
            client.cancel(list(futures), force=True)
