"""Run one task with a time limit and a memory limit that really hold: in a child process that can be killed.

A :class:`TaskRunner` keeps one child Python process (``python -m
symattn.sweep.runner``) that has imported the analyses once and then runs
task after task, each sent as one line of JSON and answered with one line.
The parent waits for the answer until the task's deadline; past it, it kills
the child (``SIGKILL``: a computation deep in numpy or flint stops at once)
and records the task as timed out; the next task starts a fresh child.  The
child runs under an address-space limit (``RLIMIT_AS``: the memory it had
after its imports plus the task's limit) and passes the same limit to the
package's own estimates (:func:`symattn.limits.memory_limit_set`), so a
computation estimated above it stops before it starts.  A child that dies
(the limit, a signal, the system's out-of-memory killer) is recorded with
its exit signal and started again.

On a Dask worker, :func:`run_on_worker` takes a runner of the worker's pool
for each task (a local cluster starts them with the worker: :func:`dask_setup`);
:func:`run_in_process` runs a task in the calling process instead, without
limits (the ``"synchronous"`` mode of :func:`symattn.sweep.sweep`).

Examples
--------
>>> outcome = run_in_process({"key": "k", "point": {"layers": 1, "width": 1, "tokens": 2},
...                           "analysis": "dimension", "options": {"seed": 0}})
>>> outcome["status"], outcome["result"]["lower"]
('ok', 2)
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

__all__ = ["TaskRunner", "run_in_process", "run_on_worker", "dask_setup", "TIMEOUT", "MEMORY", "CRASHED", "ERROR",
           "OK"]

OK, ERROR, TIMEOUT, MEMORY, CRASHED, LOST = "ok", "error", "timeout", "memory", "crashed", "lost"

#: Seconds a new child may take to import the package before the runner gives up.
START_TIMEOUT = 300

#: One BLAS/OpenMP thread per task: a sweep already runs one task per core.
_ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}

#: Set by Dask for its worker processes, not for the computations: with a fixed malloc trim
#: threshold glibc also stops adapting its mmap threshold, and every large numpy array is then
#: mapped and unmapped afresh (measured: the 24-point dimension grid spent twice the CPU time,
#: half of it in the kernel).
_WORKER_ONLY = ("MALLOC_TRIM_THRESHOLD_",)


def _process_memory(field: str) -> int | None:
    """A size of this process from ``/proc/self/status`` in bytes (``VmHWM``: peak resident, ``VmSize``: virtual)."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field + ":"))
    except (OSError, StopIteration, ValueError):
        return None


def _reset_peak_memory() -> None:
    """Start the peak resident memory (``VmHWM``) afresh: the next task's peak is its own (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def _one_line(err) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def run_in_process(task: dict, max_memory=None) -> dict:
    """Run ``task`` in this process and describe how it went (no time limit here).

    Returns
    -------
    dict
        ``key``, ``status`` (``ok``, ``error`` or ``memory``), ``reason``
        (None when ok), ``result`` (the analysis's JSON), ``seconds`` (wall),
        ``cpu_seconds`` (this process's CPU time), ``peak_memory`` (bytes, this
        process's peak during the task) and ``worker``.

    Examples
    --------
    >>> outcome = run_in_process({"key": "k", "point": {"layers": 2, "widths": [2, 3]}, "analysis": "parameters",
    ...                           "options": {}})
    >>> outcome["status"], outcome["reason"]
    ('error', 'layers = 2 disagrees with widths 2,3 (1 layer)')
    """
    from ..errors import ResourceLimitError, SymattnError
    from ..limits import format_size
    from .analyses import run_analysis

    _reset_peak_memory()
    started, cpu_started = time.perf_counter(), time.process_time()
    status, reason, result = OK, None, None
    try:
        result = run_analysis(task["point"], task["analysis"], task["options"], max_memory=max_memory)
    except ResourceLimitError as err:
        status, reason = MEMORY, _one_line(err)
    except MemoryError:
        limit = f" (limit {format_size(max_memory)})" if max_memory else ""
        status, reason = MEMORY, f"ran out of memory{limit}"
    except SymattnError as err:
        status, reason = ERROR, _one_line(err)
    except Exception as err:  # an internal failure of the analysis: recorded, the sweep goes on
        status, reason = ERROR, f"internal error: {type(err).__name__}: {_one_line(err)}"
    return {"key": task["key"], "status": status, "reason": reason, "result": result,
            "seconds": round(time.perf_counter() - started, 4),
            "cpu_seconds": round(time.process_time() - cpu_started, 4), "peak_memory": _process_memory("VmHWM"),
            "worker": f"{socket.gethostname()}:{os.getpid()}"}


class TaskRunner:
    """A child process that runs tasks one at a time, killed and restarted past a task's time limit.

    Parameters
    ----------
    memory_limit : int, optional
        Bytes a task may use beyond the child's imports (None: the package's default limit).

    Examples
    --------
    >>> runner = TaskRunner()
    >>> task = {"key": "k", "point": {"layers": 1, "width": 1, "tokens": 2}, "analysis": "parameters", "options": {}}
    >>> outcome = runner.run(task, timeout=60)
    >>> outcome["status"], outcome["result"]["params"], runner.started
    ('ok', 3, 1)
    >>> runner.close()
    """

    def __init__(self, memory_limit: int | None = None):
        self.memory_limit = memory_limit
        self.process: subprocess.Popen | None = None
        self.started = 0  # children started so far
        self._buffer = b""
        self._log = None
        self._ready = False

    # -- the child ------------------------------------------------------------------------
    def start(self) -> None:
        """Start the child now, without waiting for its imports (the next task waits for them)."""
        self._log = tempfile.TemporaryFile()
        env = {name: value for name, value in os.environ.items() if name not in _WORKER_ONLY}
        env.update(_ONE_THREAD)
        command = [sys.executable, "-m", "symattn.sweep.runner", str(self.memory_limit or 0), str(os.getpid())]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                        env=env, close_fds=True)
        self.started += 1
        self._buffer = b""
        self._ready = False

    def _ensure_ready(self) -> None:
        """A child that has imported the analyses and waits for a task (started afresh if it ended)."""
        if self.process is None or self.process.poll() is not None:
            self._stop()
            self.start()
        if not self._ready:
            ready = self._read_line(time.monotonic() + START_TIMEOUT)
            if ready != {"ready": True}:
                reason = self._ended("could not start")
                self._stop()
                raise RuntimeError(reason)
            self._ready = True

    def _stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def close(self) -> None:
        """Stop the child (a new one starts with the next task)."""
        self._stop()

    def _read_line(self, deadline: float | None):
        """The next line of the child as JSON; None past the deadline; ``"eof"`` when the child ended."""
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return None
            readable, _, _ = select.select([fd], [], [], wait)
            if not readable:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return "eof"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _ended(self, what: str) -> str:
        code = self.process.wait()
        if code < 0:
            name = signal.Signals(-code).name
            cause = " (the memory limit or the system's out-of-memory killer)" if -code == signal.SIGKILL else ""
            text = f"{what}: the process running it ended with {name}{cause}"
        else:
            text = f"{what}: the process running it exited with status {code}"
        self._log.seek(0)
        tail = self._log.read().decode("utf-8", "replace").strip().splitlines()[-1:]
        return text + (f"; last message: {tail[0][:300]}" if tail else "")

    # -- one task -------------------------------------------------------------------------
    def run(self, task: dict, timeout: float | None = None) -> dict:
        """Run ``task`` in the child; past ``timeout`` seconds kill it and record a time-out.

        Returns the same description as :func:`run_in_process`; ``status`` is
        also ``timeout`` or ``crashed``.
        """
        self._ensure_ready()
        started = time.perf_counter()
        try:
            self.process.stdin.write((json.dumps(task) + "\n").encode("utf-8"))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the child died: read_line sees the end
        deadline = None if not timeout else time.monotonic() + timeout
        reply = self._read_line(deadline)
        worker = f"{socket.gethostname()}:{self.process.pid}"
        if isinstance(reply, dict):
            if reply["status"] == MEMORY:  # a child that ran out of memory starts afresh
                self._stop()
            return reply
        if reply is None:
            self._stop()
            status, reason = TIMEOUT, f"over the time limit of {timeout:g} s (stopped)"
        else:
            status, reason = CRASHED, self._ended("stopped")
            self._stop()
        return {"key": task["key"], "status": status, "reason": reason, "result": None,
                "seconds": round(time.perf_counter() - started, 4), "peak_memory": None, "worker": worker}


# -- on a Dask worker ------------------------------------------------------------------------
#: Runners waiting for a task in this process (a worker thread takes one for each task).
_IDLE: list[TaskRunner] = []
_IDLE_LOCK = threading.Lock()

#: The environment variable through which a local cluster tells its workers' preload the memory limit.
MEMORY_ENVIRONMENT_VARIABLE = "SYMATTN_SWEEP_TASK_MEMORY"
#: Set by a local cluster for its workers: they leave Ctrl-C to the sweep that started them.
LOCAL_ENVIRONMENT_VARIABLE = "SYMATTN_SWEEP_LOCAL_WORKER"


def _close_runners() -> None:
    with _IDLE_LOCK:
        for runner in _IDLE:
            runner.close()
        _IDLE.clear()


atexit.register(_close_runners)


def _take_runner(memory_limit: int | None) -> TaskRunner:
    with _IDLE_LOCK:
        for index, runner in enumerate(_IDLE):
            if runner.memory_limit == memory_limit:
                return _IDLE.pop(index)
    return TaskRunner(memory_limit)


def _give_back(runner: TaskRunner) -> None:
    with _IDLE_LOCK:
        _IDLE.append(runner)


def run_on_worker(task: dict, timeout: float | None, memory_limit: int | None) -> dict:
    """Run ``task`` in one of this worker's :class:`TaskRunner` children (the function a sweep gives Dask).

    Never raises for a task's own failure: the outcome says what happened.

    Examples
    --------
    >>> task = {"key": "k", "point": {"layers": 1, "width": 1}, "analysis": "parameters", "options": {}}
    >>> run_on_worker(task, 60.0, None)["result"]["params"]  # outside Dask: a runner of this process
    3
    """
    runner = _take_runner(memory_limit)
    try:
        outcome = runner.run(task, timeout)
    except RuntimeError as err:  # the child could not start on this worker
        outcome = {"key": task["key"], "status": CRASHED, "reason": str(err), "result": None, "seconds": 0.0,
                   "peak_memory": None, "worker": None}
    finally:
        _give_back(runner)
    try:
        from distributed import get_worker

        outcome["worker"] = get_worker().address
    except (ImportError, ValueError):
        pass
    return outcome


def dask_setup(worker) -> None:
    """Dask preload (``--preload symattn.sweep.runner``): start the worker's task processes at once.

    Their imports then overlap the worker's own start instead of delaying
    its first task.  The memory limit comes from
    ``SYMATTN_SWEEP_TASK_MEMORY`` (bytes; a local cluster sets it).  A
    worker of the local cluster (``SYMATTN_SWEEP_LOCAL_WORKER`` set) ignores
    Ctrl-C: the sweep that started it stops it.

    Examples
    --------
    >>> class Worker:
    ...     nthreads = 1
    >>> dask_setup(Worker())
    >>> any(runner.process is not None for runner in _IDLE)
    True
    """
    if os.environ.get(LOCAL_ENVIRONMENT_VARIABLE):
        # a worker of the local cluster shares the terminal's Ctrl-C with the sweep, which stops the cluster
        # itself and says so in one line: the worker's own KeyboardInterrupt would only add tracebacks
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # not the main thread: leave the signal as it is
            pass
    text = os.environ.get(MEMORY_ENVIRONMENT_VARIABLE, "")
    memory_limit = int(text) if text.isdigit() and int(text) > 0 else None
    threads = getattr(getattr(worker, "state", None), "nthreads", None) or getattr(worker, "nthreads", 1) or 1
    for _ in range(threads):
        runner = TaskRunner(memory_limit)
        runner.start()
        _give_back(runner)


# -- the child -----------------------------------------------------------------------------
def _watch_parent(parent: int) -> None:
    """End this child when the process that started it is gone (a killed worker leaves no orphan)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def _serve(memory_limit: int, parent: int) -> None:
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything an analysis prints goes to the log, not into the replies
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    from . import analyses  # noqa: F401  (imported once, before the first task's clock starts)

    if memory_limit:
        try:
            import resource

            ceiling = (_process_memory("VmSize") or 0) + memory_limit
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
        except (ImportError, ValueError, OSError):
            pass  # no address-space limit here: the package's own estimates still apply
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        task = json.loads(line)
        outcome = run_in_process(task, max_memory=memory_limit or None)
        replies.write(json.dumps(outcome, default=str) + "\n")
        replies.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
