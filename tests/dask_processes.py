"""A real Dask cluster for tests: ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1.

Shared by the sweep's and the dimension's tests that kill a worker in the
middle of a run.  Each process has its own session, so a signal reaches it
alone; on leaving, every process still running gets SIGTERM, then SIGKILL
after 15 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time


def dask_process(*arguments, log, env=None):
    """``dask ARGUMENTS`` in its own session, its output into ``log``; ``env`` is added to this one's."""
    return subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "dask"), *arguments],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=None if env is None else {**os.environ, **env})


def wait_for(condition, seconds: float, what: str, every: float = 0.1):
    """The first true value of ``condition()``, polled every ``every`` seconds; an AssertionError after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.contextmanager
def dask_cluster(folder, workers: int = 2, env=None):
    """``(address, worker processes, watcher)``: a scheduler on a free port, ``workers`` one-thread workers.

    ``watcher`` is a client of its own (not the default one), connected once
    every worker is up; worker ``i`` is named ``w{i}``.  The log is
    ``folder / "dask.log"``.
    """
    from distributed import Client

    scheduler_file = folder / "scheduler.json"
    log = open(folder / "dask.log", "wb")
    processes = [dask_process("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                              "--scheduler-file", str(scheduler_file), log=log, env=env)]
    watcher = None
    try:
        wait_for(lambda: scheduler_file.exists() and scheduler_file.stat().st_size > 0, 60, "the scheduler")
        address = json.loads(scheduler_file.read_text())["address"]
        started = [dask_process("worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name",
                                f"w{i}", "--host", "127.0.0.1", log=log) for i in range(workers)]
        processes += started
        watcher = Client(address, timeout="30s", set_as_default=False)
        wait_for(lambda: len(watcher.scheduler_info()["workers"]) == workers, 60, f"{workers} workers")
        yield address, started, watcher
    finally:
        if watcher is not None:
            watcher.close()
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()


def process_of_worker(watcher, workers) -> dict:
    """``{worker address: its process}`` by the names ``w{i}`` of :func:`dask_cluster`."""
    return {worker: workers[int(about["name"][1:])] for worker, about in watcher.scheduler_info()["workers"].items()}


def a_worker_running_a_task(watcher):
    """The address of a worker that is running a task now, or None."""
    return next((worker for worker, keys in watcher.processing().items() if keys), None)


def kill_a_worker_mid_run(watcher, workers, settle: float, every: float = 0.05, before=None):
    """Start a thread that SIGKILLs a worker ``settle`` seconds after it is seen running a task.

    ``before()``, when given, runs first (e.g. waits for a finished task) and
    may return a value kept as ``killed["before"]``.  Returns ``(thread,
    killed)``: ``killed["at"]`` is the monotonic time of the kill, or
    ``killed["error"]`` says why there was none (an assertion of the caller
    reports it, not lost in the thread).
    """
    import threading

    process_of = process_of_worker(watcher, workers)
    killed = {}

    def kill():
        try:
            if before is not None:
                killed["before"] = before()
            victim = wait_for(lambda: a_worker_running_a_task(watcher), 120, "a running task", every=every)
            time.sleep(settle)  # inside the task
            process_of[victim].send_signal(signal.SIGKILL)
            killed["at"] = time.monotonic()
        except BaseException as err:
            killed["error"] = repr(err)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread, killed
