"""Dask clients for the analyses that spread one computation over workers (a sweep, a dimension, a spectrum).

``open_client(scheduler, workers)`` gives a ``distributed.Client``: to the
scheduler at an address, to a client the caller already holds, or to a
``LocalCluster`` of ``workers`` processes started here (and closed with the
client).  ``map_as_completed(client, calls)`` runs pure calls there and
yields each result as it arrives; a task whose worker dies is run again by
the scheduler (its ``allowed-failures``, 3 by default).  Dask is imported
only when a client is opened: ``import symattn`` stays light.

A scheduler's address is read strictly (``tcp://HOST:PORT``, a port from 1
to 65535), and the scheduler must greet within the connect timeout
(:func:`connect_timeout_set`, 5 s by default): a closed port, a listener
that never answers and one that answers with something else than Dask's
greeting are each refused with one line, within that time.

Examples
--------
>>> scheduler_address("127.0.0.1:8786"), scheduler_address("tcp://10.0.0.5:8786")
('tcp://127.0.0.1:8786', 'tcp://10.0.0.5:8786')
>>> scheduler_address("tls://10.0.0.5:8786") is None, scheduler_address("127.0.0.1:1:2") is None
(True, True)
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import signal
import threading
import weakref
from dataclasses import dataclass

from .errors import SymattnError

__all__ = ["scheduler_address", "check_scheduler_address", "open_client", "map_as_completed", "check_workers",
           "local_worker_limit", "is_client", "uses_dask", "describe_client", "worker_count", "TaskRunner",
           "task_runner", "DEFAULT_CONNECT_TIMEOUT", "check_connect_timeout", "connect_timeout",
           "connect_timeout_set", "probe_scheduler"]

#: Seconds a scheduler has to answer (connect and greet) before it is refused, unless set otherwise.
DEFAULT_CONNECT_TIMEOUT = 5.0
#: The longest connect timeout accepted (a day): longer is a typo, not a wait.
MAX_CONNECT_TIMEOUT = 86_400.0

_ACCEPTED_ADDRESS = "tcp://HOST:PORT or HOST:PORT with a port from 1 to 65535 (e.g. tcp://127.0.0.1:8786)"
_HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")
_connect_timeout = DEFAULT_CONNECT_TIMEOUT
#: Clients whose tasks were left running (an error or Ctrl-C in ``map_as_completed``): their local workers are stopped.
_LEFT_EARLY: "weakref.WeakSet" = weakref.WeakSet()


def _address_problem(text: str) -> tuple[str | None, str]:
    """``(address, "")`` for a valid scheduler address, else ``(None, what is wrong with it)``."""
    text = text.strip()
    if len(text) > 300:
        return None, f"it is {len(text)} characters long"
    rest = text
    if "://" in text:
        scheme, rest = text.split("://", 1)
        if scheme.lower() != "tcp":
            return None, f"the protocol {scheme[:20]!r}:// is not supported (only tcp://)"
    host, colon, port = rest.rpartition(":")
    if not colon or not host:
        return None, "it has no HOST:PORT"
    if not (port.isascii() and port.isdigit()):
        return None, f"the port {port[:20]!r} is not a number"
    if not 1 <= int(port) <= 65535:
        return None, f"the port {int(port) if len(port) < 20 else port[:20] + '...'} is outside 1..65535"
    if host.startswith("[") and host.endswith("]"):
        import ipaddress

        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None, f"{host[:60]!r} is not an IPv6 address"
    elif len(host) > 253 or not all(_HOST_LABEL.match(label) for label in host.split(".")):
        return None, f"the host {host[:60]!r} is not a host name or an IP address"
    return f"tcp://{host}:{int(port)}", ""


def scheduler_address(text: str) -> str | None:
    """``tcp://HOST:PORT`` for an address with or without its protocol; ``None`` when ``text`` is not one.

    The protocol, when given, must be ``tcp``; the host a host name, an
    IPv4 address or an IPv6 address in brackets; the port an integer from 1
    to 65535.

    Examples
    --------
    >>> scheduler_address("localhost:8786"), scheduler_address("fast"), scheduler_address("[::1]:8786")
    ('tcp://localhost:8786', None, 'tcp://[::1]:8786')
    >>> [scheduler_address(text) for text in ("tcp://", "HOST:abc", "inproc://x:1", "host:0", "host:70000")]
    [None, None, None, None, None]
    """
    if not isinstance(text, str):
        return None
    return _address_problem(text)[0]


def check_scheduler_address(text) -> str:
    """``tcp://HOST:PORT`` for a valid address; a SymattnError naming it and what is wrong otherwise.

    Examples
    --------
    >>> check_scheduler_address("127.0.0.1:8786")
    'tcp://127.0.0.1:8786'
    >>> check_scheduler_address("file:///etc/passwd")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: scheduler 'file:///etc/passwd' is not a Dask scheduler address: the protocol 'file':// is not supported (only tcp://); give tcp://HOST:PORT or HOST:PORT with a port from 1 to 65535 (e.g. tcp://127.0.0.1:8786)
    """
    if not isinstance(text, str):
        raise SymattnError(f"a scheduler address is text such as tcp://127.0.0.1:8786, got {type(text).__name__}")
    address, problem = _address_problem(text)
    if address is None:
        raise SymattnError(f"scheduler {text[:80]!r}{'...' * (len(text) > 80)} is not a Dask scheduler address: "
                           f"{problem}; give {_ACCEPTED_ADDRESS}")
    return address


def check_connect_timeout(seconds) -> float:
    """``seconds`` as a float when a finite number from above 0 up to a day; a SymattnError naming it otherwise.

    Examples
    --------
    >>> check_connect_timeout(5), check_connect_timeout("0.5")
    (5.0, 0.5)
    >>> check_connect_timeout("nan")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: the connect timeout must be a number of seconds above 0 and at most 86400, got 'nan'
    """
    try:
        value = float(seconds) if not isinstance(seconds, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_CONNECT_TIMEOUT):
        raise SymattnError(f"the connect timeout must be a number of seconds above 0 and at most "
                           f"{MAX_CONNECT_TIMEOUT:g}, got {str(seconds)[:40]!r}")
    return value


def connect_timeout() -> float:
    """Seconds a scheduler has to answer now (:data:`DEFAULT_CONNECT_TIMEOUT` unless set).

    Examples
    --------
    >>> connect_timeout()
    5.0
    """
    return _connect_timeout


@contextlib.contextmanager
def connect_timeout_set(seconds):
    """Within the block, a scheduler has ``seconds`` to answer (``None``: leave it as it is).

    Examples
    --------
    >>> with connect_timeout_set(0.5):
    ...     connect_timeout()
    0.5
    >>> connect_timeout()
    5.0
    """
    global _connect_timeout
    previous = _connect_timeout
    if seconds is not None:
        _connect_timeout = check_connect_timeout(seconds)
    try:
        yield _connect_timeout
    finally:
        _connect_timeout = previous


#: The longest greeting a scheduler sends on connecting (Dask's handshake is about 60 bytes).
_MAX_GREETING = 1 << 16


def _read_greeting(address: str, timeout: float) -> str:
    """Connect to ``address`` and read Dask's greeting; ``""`` when it is one, else what went wrong."""
    import socket
    import struct
    import time

    host, port = address[len("tcp://"):].rsplit(":", 1)
    host = host.strip("[]")
    deadline = time.monotonic() + timeout
    try:
        connection = socket.create_connection((host, int(port)), timeout=timeout)
    except ConnectionRefusedError:
        return "connection refused (nothing listens on that port)"
    except socket.timeout:
        return f"it did not accept a connection within {timeout:g} s"
    except OSError as err:
        return " ".join(str(err.strerror or err).split())
    with connection:
        def receive(count: int) -> bytes | None:
            data = b""
            while len(data) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                connection.settimeout(left)
                try:
                    chunk = connection.recv(count - len(data))
                except socket.timeout:
                    return None
                if not chunk:
                    raise EOFError
                data += chunk
            return data

        try:
            head = receive(8)
            if head is None:
                return f"it did not greet within {timeout:g} s (not a Dask scheduler, or a busy one)"
            (size,) = struct.unpack("<Q", head)
            if not 16 <= size <= _MAX_GREETING:
                return "it answered with something that is not a Dask scheduler's greeting"
            body = receive(size)
            if body is None:
                return f"its greeting did not arrive within {timeout:g} s"
        except EOFError:
            return "it closed the connection without greeting (not a Dask scheduler)"
        except OSError as err:
            return " ".join(str(err.strerror or err).split())
    (frames,) = struct.unpack_from("<Q", body)
    if not 1 <= frames <= 64 or 8 + 8 * frames > size:
        return "it answered with something that is not a Dask scheduler's greeting"
    lengths = struct.unpack_from(f"<{frames}Q", body, 8)
    if 8 + 8 * frames + sum(lengths) != size:
        return "it answered with something that is not a Dask scheduler's greeting"
    try:
        from distributed.protocol.core import loads

        offsets, parts = 8 + 8 * frames, []
        for length in lengths:
            parts.append(body[offsets:offsets + length])
            offsets += length
        greeting = loads(parts, deserialize=False)
    except Exception:
        return "it answered with something that is not a Dask scheduler's greeting"
    if not isinstance(greeting, dict) or "pickle-protocol" not in greeting:
        return "it answered with something that is not a Dask scheduler's greeting"
    return ""


def probe_scheduler(address: str, timeout: float | None = None) -> str:
    """Refuse, within ``timeout`` seconds, a scheduler address where no Dask scheduler answers.

    Opens one TCP connection and reads the greeting a Dask scheduler sends
    first (``distributed`` itself waits for it without a bound).  A closed
    port, a listener that never answers, one that answers with anything
    else, and a host that cannot be resolved (looked up in a thread of its
    own, so that a slow name server cannot hold the call) each raise a
    SymattnError naming the address and the reason.

    Parameters
    ----------
    address : str
        A scheduler address (checked by :func:`check_scheduler_address`).
    timeout : float, optional
        Seconds for the whole check (default :func:`connect_timeout`).

    Returns
    -------
    str
        The address as ``tcp://HOST:PORT``.

    Examples
    --------
    >>> import socket
    >>> closed = socket.socket(); closed.bind(("127.0.0.1", 0)); port = closed.getsockname()[1]; closed.close()
    >>> probe_scheduler(f"127.0.0.1:{port}", timeout=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: cannot reach the Dask scheduler at tcp://127.0.0.1:...: connection refused (nothing listens on that port); start one there (dask scheduler) or give another address
    """
    address = check_scheduler_address(address)
    timeout = connect_timeout() if timeout is None else check_connect_timeout(timeout)
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(_read_greeting(address, timeout)), daemon=True,
                              name="symattn-scheduler-probe")
    worker.start()
    worker.join(timeout + 0.5)
    problem = outcome[0] if outcome else f"it did not answer within {timeout:g} s (the host name may not resolve)"
    if problem:
        raise SymattnError(f"cannot reach the Dask scheduler at {address}: {problem}; start one there "
                           "(dask scheduler) or give another address")
    return address


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


def local_worker_limit() -> int:
    """The most worker processes a local cluster starts: the cores this process may run on.

    A sweep's local cluster takes at most this many; a dimension or a
    spectrum refuses more (:func:`check_local_workers`) before starting any.

    Examples
    --------
    >>> local_worker_limit() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_local_workers(workers) -> int | None:
    """``workers`` for a local cluster: ``None`` or an integer from 1 to :func:`local_worker_limit`.

    Examples
    --------
    >>> check_local_workers(1), check_local_workers(None)
    (1, None)
    >>> check_local_workers(10**9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: workers must be an integer from 1 to ... (one worker process per core this process may run on), got 1000000000
    """
    workers = check_workers(workers)
    limit = local_worker_limit()
    if workers is not None and workers > limit:
        raise SymattnError(f"workers must be an integer from 1 to {limit} (one worker process per core this "
                           f"process may run on), got {workers}")
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
    symattn.errors.SymattnError: scheduler must be a Dask scheduler address (tcp://HOST:PORT or HOST:PORT with a port from 1 to 65535, e.g. tcp://127.0.0.1:8786), 'local' or a distributed.Client, got 'fast': it has no HOST:PORT

    A local cluster of more workers than cores is refused here too, before any is started:

    >>> uses_dask(None, 10**9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: workers must be an integer from 1 to ... (one worker process per core this process may run on), got 1000000000
    """
    if is_client(scheduler):
        return True
    if scheduler is None or (isinstance(scheduler, str) and scheduler.strip().lower() == "local"):
        check_local_workers(workers)
        return scheduler is not None or workers is not None
    _scheduler_or_refuse(scheduler)
    return True


def _scheduler_or_refuse(scheduler) -> str:
    """The address of ``scheduler`` (not local, not a Client), or a SymattnError naming what is accepted."""
    address, problem = _address_problem(scheduler) if isinstance(scheduler, str) else (None, "")
    if address is None:
        shown = (f"{scheduler[:80]!r}{'...' * (len(scheduler) > 80)}" if isinstance(scheduler, str)
                 else f"a {type(scheduler).__name__}")
        raise SymattnError(f"scheduler must be a Dask scheduler address ({_ACCEPTED_ADDRESS.replace(' (e.g.', ', e.g.')}"
                           f", 'local' or a distributed.Client, got {shown}" + (f": {problem}" if problem else ""))
    return address


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

    A remote scheduler is first probed (:func:`probe_scheduler`): one that
    does not greet within :func:`connect_timeout` seconds is refused.  The
    worker processes of a local cluster write nothing to standard error
    (:func:`_children_quiet`): a Ctrl-C that reaches them too is answered
    here alone, in one line.

    Examples
    --------
    >>> with open_client("fast"):
    ...     pass
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: scheduler must be a Dask scheduler address (tcp://HOST:PORT or HOST:PORT with a port from 1 to 65535, e.g. tcp://127.0.0.1:8786), 'local' or a distributed.Client, got 'fast': it has no HOST:PORT
    """
    if is_client(scheduler):
        yield scheduler
        return
    local = scheduler is None or (isinstance(scheduler, str) and scheduler.strip().lower() == "local")
    if local:
        workers = check_local_workers(workers)
    else:
        address = probe_scheduler(_scheduler_or_refuse(scheduler))
    from distributed import Client, LocalCluster

    if local:
        quiet_logs = logging.getLogger("distributed").level
        logging.getLogger("distributed").setLevel(logging.ERROR)
        from distributed.deploy.spec import SpecCluster

        cluster, known = None, set(SpecCluster._instances)
        try:
            try:
                with _children_quiet():
                    cluster = LocalCluster(n_workers=workers or 1, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=logging.CRITICAL, **cluster_options)
            except BaseException:  # interrupted or failed while it started: closed now, not at exit
                _close_half_started_clusters(known)
                raise
            client = None
            try:
                with Client(cluster) as client:
                    yield client
            except BaseException:  # interrupted or failed: what the workers still compute is thrown away
                _stop_workers_now(cluster)
                raise
            if client is not None and client in _LEFT_EARLY:  # a caller that caught the interrupt and left
                _stop_workers_now(cluster)
        finally:
            if cluster is not None:
                cluster.close()
            logging.getLogger("distributed").setLevel(quiet_logs)
        return
    timeout = connect_timeout()
    try:
        client = Client(address, timeout=f"{timeout}s", set_as_default=False)
    except Exception as err:  # the scheduler greeted, then did not register the client in time
        raise SymattnError(f"cannot reach the Dask scheduler at {address}: {type(err).__name__}: "
                           f"{' '.join(str(err).split())[:300]}") from None
    with client:
        yield client


@contextlib.contextmanager
def _children_quiet():
    """Standard error goes nowhere for the block: processes started in it keep that for their whole life.

    The worker processes of a local cluster share the terminal with this
    process: a Ctrl-C reaches them too, and each would print a traceback of
    its own (Dask's worker processes answer SIGINT with KeyboardInterrupt).
    This process answers it, in one line, and closes them.  Their logs are
    silenced anyway (``silence_logs``); their results come back through Dask.
    """
    try:
        saved = os.dup(2)
    except OSError:  # no standard error to keep
        yield
        return
    try:
        nowhere = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(nowhere, 2)
        finally:
            os.close(nowhere)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _stop_workers_now(cluster) -> None:
    """Kill the worker processes of a local ``cluster`` whose work is thrown away (Ctrl-C, an error).

    Closing asks each worker to finish first, and one in the middle of a
    long task holds the close for seconds (Dask's own timeout); their tasks
    are pure, and a sweep's task processes stop when their worker does.
    """
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _close_half_started_clusters(known) -> None:
    """Close, quietly, the clusters started since ``known`` was taken (one interrupted while it started).

    Dask would otherwise try again at exit and print a traceback.
    """
    from distributed.deploy.spec import SpecCluster

    for cluster in set(SpecCluster._instances) - known:
        with contextlib.suppress(BaseException), _children_quiet():
            cluster.close(timeout=5)
        SpecCluster._instances.discard(cluster)


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
            with contextlib.suppress(TypeError):
                _LEFT_EARLY.add(client)
