"""Sweeps: analyses over grids of architectures, on this machine or a Dask cluster, resumable.

:func:`sweep` spans a grid of architectures (:mod:`symattn.sweep.grid`: a
value, a list ``a,b,c`` or a range ``a..b`` per field, or a TOML file), runs
the chosen analyses at every point (:mod:`symattn.sweep.analyses`:
``dimension``, ``spectrum``, ``orders``, ``observe`` with events, ``check``
with claims, ``parameters``) on Dask (:mod:`symattn.sweep.schedule`: a
``LocalCluster`` by default, or an existing scheduler), each task in a child
process with a time and a memory limit (:mod:`symattn.sweep.runner`), and
writes every finished task at once to a results store under ``out``
(:mod:`symattn.sweep.store`), so a rerun computes only what is missing.  It
returns a :class:`SweepResult`: the tidy table, one row per point and
analysis with the result's own fields and how sure it is, as JSON, a
pandas DataFrame, Markdown and LaTeX tables and plots.

Examples
--------
>>> import symattn
>>> result = symattn.sweep({"layers": "1..2", "width": "2,3", "rank": "1..3"}, ["dimension"],
...                scheduler="synchronous", progress=False)
>>> result.tasks, result.computed, result.skipped
(12, 12, 0)
>>> [(r["layers"], r["width"], r["score_rank"], r["lower"], r["expected"]) for r in result.rows][:3]
[(1, 2, 1, 7, 7), (1, 2, 2, 8, 8), (1, 2, 3, 8, 8)]

A score rank above the width is computed like any architecture (``W_1`` then has
rank at most the width: the dimension of rank 3 on width 2 is that of rank 2).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from pathlib import Path
from typing import Mapping

from .._modules import make_callable
from ..limits import memory_limit, parse_size, progress_bar
from .grid import GridError, Skip, build_architecture, grid_points, point_label, read_grid, read_grid_file
from .result import SweepResult, make_row, table_frame, write_plots, write_tables
from .schedule import LOCAL, SEQUENTIAL, SYNCHRONOUS, describe_scheduler, local_workers, resolve_scheduler, run_tasks
from .store import ResultStore, task_identity, task_key

__all__ = [
    "sweep", "SweepResult", "GridError", "Skip", "ANALYSES", "read_grid", "read_grid_file", "grid_points",
    "build_architecture", "read_analyses", "analysis_options", "run_analysis", "task_key", "ResultStore",
    "table_frame", "point_label", "DEFAULT_TASK_TIMEOUT",
]

#: Seconds a task may run before it is stopped and recorded as timed out (``task_timeout=``).
DEFAULT_TASK_TIMEOUT = 3600.0

#: Imported on first use: a Dask worker imports this package for the task runner alone, and the
#: analyses (every module of the package) load in the runner's own process.
_FROM_ANALYSES = ("ANALYSES", "analysis_options", "read_analyses", "run_analysis")


def __getattr__(name):
    if name in _FROM_ANALYSES:
        from . import analyses

        return getattr(analyses, name)
    raise AttributeError(f"module 'symattn.sweep' has no attribute {name!r}")


def _split_options(analyses: list[str], options: Mapping | None) -> dict[str, dict]:
    """Options per analysis from ``{"seed": 1, "spectrum": {"truncation": 12}}`` (plain keys apply to every analysis)."""
    from .analyses import ANALYSES, analysis_options

    options = dict(options or {})
    common = {key: value for key, value in options.items() if key not in ANALYSES}
    for name in options:
        if name in ANALYSES and not isinstance(options[name], Mapping):
            raise GridError(f"options for {name} must be a table of options, got {options[name]!r}")
    known = {key for name in analyses for key in ANALYSES[name].defaults}
    unknown = [key for key in common if key not in known]
    if unknown:
        raise GridError(f"unknown option {unknown[0]!r} for the analyses {', '.join(analyses)}; "
                        f"their options: {', '.join(sorted(known)) or 'none'}")
    per_analysis = {}
    for name in analyses:
        given = {key: value for key, value in common.items() if key in ANALYSES[name].defaults}
        given.update(options.get(name) or {})
        per_analysis[name] = analysis_options(name, given)
    return per_analysis


def _memory_per_task(memory_limit_given, scheduler: str, workers: int) -> int | None:
    if memory_limit_given is not None:
        try:
            size = parse_size(memory_limit_given) if isinstance(memory_limit_given, str) else int(memory_limit_given)
        except (TypeError, ValueError):
            raise GridError(f"memory_limit must be a size such as 4G, got {memory_limit_given!r}") from None
        return size
    if scheduler == LOCAL:  # the package's limit for this machine, shared by the workers
        return memory_limit(None) // max(1, workers)
    if scheduler in (SEQUENTIAL, SYNCHRONOUS):
        return memory_limit(None)
    return None  # each worker's own machine decides


def _cost(arch) -> int:
    """A rough size of a task at ``arch``, to start the largest first.

    Measured on the dimension of 24 networks (3-4 layers, widths 4-9, ranks 1-2):
    the time grows with the parameters, the score parameters and 2^layers.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> _cost(Architecture.uniform(layers=4, width=8, rank=2)) > _cost(Architecture.uniform(layers=4, width=9, rank=1))
    True
    """
    scores = sum(rows * cols for i in range(1, arch.layers + 1)
                 for name, (rows, cols) in arch.block_shapes(i).items() if name != "V")
    return arch.param_count * scores * 2 ** arch.layers


def _dashboard_available() -> bool:
    """Whether Dask's dashboard can show anything: it needs bokeh (``pip install 'symattn[dashboard]'``)."""
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def _jsonable(point: dict) -> dict:
    return {field: list(value) if isinstance(value, tuple) else value for field, value in point.items()}


def sweep(grid, analyses=None, *, options: Mapping | None = None, out=None, scheduler: str | None = None,
          workers: int | None = None, task_timeout: float | None = DEFAULT_TASK_TIMEOUT, memory_limit=None,
          progress: bool = True) -> SweepResult:
    """Run analyses over a grid of architectures; keep every finished result; return the table.

    Parameters
    ----------
    grid : mapping or path
        Field to values (:func:`~symattn.sweep.grid.read_grid`: ``{"layers":
        "1..4", "width": [2, 3], "normalizer": "softmax,cosh"}``), or the path
        of a TOML file (:func:`~symattn.sweep.grid.read_grid_file`), whose
        analyses and options apply unless given here.
    analyses : str or list of str, optional
        Names from :data:`ANALYSES` (default ``["dimension"]``).
    options : mapping, optional
        Options of the analyses: plain keys for every analysis that takes them
        (``seed``), a table per analysis (``{"spectrum": {"truncation": 12},
        "observe": {"events": [["scores:1"], ["values:1", "bias"]]}, "check":
        {"claims": ["contact_order(2) = 5"]}}``).
    out : path, optional
        Folder for the results store (``out/store/``, one JSON file per task,
        written as each finishes), ``results.parquet`` and ``results.csv``.
        A rerun with the same ``out`` reuses every finished task.  Without it
        nothing is kept.
    scheduler : str, optional
        ``None``/``"local"`` (a Dask LocalCluster, or the scheduler of
        ``DASK_SCHEDULER_ADDRESS``), a scheduler address
        (``"tcp://host:8786"``), ``"sequential"`` (one child process) or
        ``"synchronous"`` (this process, no limits); see :mod:`symattn.sweep.schedule`.
    workers : int, optional
        At most this many worker processes in a local cluster (default: one per core).
    task_timeout : float, optional
        Seconds a task may run before it is stopped and recorded as ``timeout``
        (default one hour; None for no limit).  Not enforced by ``"synchronous"``.
    memory_limit : int or str, optional
        Memory one task may use, e.g. ``"4G"`` (default: the package's limit,
        :func:`symattn.limits.memory_limit`, shared by the local workers).
    progress : bool
        A progress bar on a terminal, and the Dask dashboard's address.

    Returns
    -------
    SweepResult

    Raises
    ------
    GridError
        For grid text, analyses or options that cannot be read (before any work).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> grid = {"layers": "1..2", "width": 2, "normalizer": "softmax,cosh"}
    >>> first = sweep(grid, "spectrum", out=folder, scheduler="synchronous", progress=False)
    >>> [(r["layers"], r["normalizer"], r["spectrum"]) for r in first.rows]  # doctest: +NORMALIZE_WHITESPACE
    [(1, 'softmax', {'0': 4, '1': 3}), (1, 'cosh', {'0': 4, '3': 3}),
     (2, 'softmax', {'0': 4, '1': 3, '5': 3}), (2, 'cosh', {'0': 4, '3': 3, '11': 3})]
    >>> again = sweep(grid, "spectrum", out=folder, scheduler="synchronous", progress=False)
    >>> again.computed, again.reused, sorted(Path(p).name for p in again.files)
    (0, 4, ['results.csv', 'results.parquet', 'sweep_orders.png'])
    >>> again.dataframe()[["layers", "normalizer", "kernel", "status"]].shape
    (4, 4)
    """
    from .analyses import read_analyses, task_options

    started = time.perf_counter()
    if isinstance(grid, (str, Path)):
        spec = read_grid_file(grid)
        grid = spec["grid"]
        analyses = analyses if analyses is not None else spec["analyses"]
        file_options = dict(spec["options"].pop("options", {}))
        file_options.update(spec["options"])
        file_options.update(options or {})
        options = file_options
    names = read_analyses(analyses if analyses is not None else ["dimension"])
    per_analysis = _split_options(names, options)
    fields = read_grid(grid)
    points, skips = grid_points(fields)
    scheduler = resolve_scheduler(scheduler)
    if task_timeout is not None and (isinstance(task_timeout, bool) or not task_timeout > 0):
        raise GridError(f"task_timeout must be a positive number of seconds or None, got {task_timeout!r}")

    entries = []  # (architecture, point, analysis, options, key), in grid order
    identities = {}  # key -> what the task is (task_identity), which its stored record must match
    for point in points:
        arch = build_architecture(point)
        for name in names:
            tasks, skipped = task_options(name, per_analysis[name], point, arch)
            skips += skipped
            for opts in tasks:
                identity = task_identity(point, name, opts)
                identities[identity["key"]] = identity
                entries.append((arch, point, name, opts, identity["key"]))

    store = ResultStore(out) if out is not None else None
    # one sweep at a time writes `out`: a second one is refused before it reads or writes anything there
    with store.lock() if store is not None else contextlib.nullcontext():
        if store is not None:
            store.remove_leftovers()
        records, reused_keys = {}, set()
        for key, identity in identities.items():
            record = store.lookup(identity) if store is not None else None  # checked; a bad one warns
            if record is not None:
                records[key] = record
                reused_keys.add(key)
        pending, seen = [], set()
        for arch, point, name, opts, key in sorted(entries, key=lambda entry: -_cost(entry[0])):
            if key not in records and key not in seen:  # the largest first: the workers stay busy to the end
                seen.add(key)
                pending.append({"key": key, "point": _jsonable(point), "analysis": name, "options": opts})
        n_workers = local_workers(workers, len(pending)) if scheduler == LOCAL else (workers or 1)
        per_task_memory = _memory_per_task(memory_limit, scheduler, n_workers)
        where = describe_scheduler(scheduler, n_workers) if pending else "nothing to compute (every task reused)"
        computed = []
        dashboard = []

        bar = progress_bar(progress, total=len(pending), desc="sweep", unit="task")

        def on_start(link):
            # without bokeh Dask's dashboard answers "Dask needs bokeh": a link only where it shows something
            link = link if link and _dashboard_available() else None
            if link:
                dashboard.append(link)
            if progress and link:
                say = getattr(bar, "write", None)  # tqdm: above the bar, not into it
                if say is not None:
                    say(f"symattn: Dask dashboard at {link}", file=sys.stderr)
                else:
                    print(f"symattn: Dask dashboard at {link}", file=sys.stderr, flush=True)

        failures = [0]

        def on_outcome(task, outcome):
            outcome = {**outcome, "finished": time.time()}
            if store is not None:  # the record names its task (the key the sweep gave it, not the worker's)
                record = store.put(identities[task["key"]], outcome, point=task["point"])
            else:
                record = {**outcome, "point": task["point"], "analysis": task["analysis"],
                          "options": task["options"]}
            records[task["key"]] = record
            computed.append(task["key"])
            failures[0] += record["status"] != "ok"
            bar.update()
            bar.set_postfix_str(f"done {len(computed) - failures[0]}, failed {failures[0]}, "
                                f"left {len(pending) - len(computed)}")

        files = []
        try:
            with bar:
                run_tasks(pending, scheduler, n_workers, task_timeout, per_task_memory, on_outcome, on_start)
        finally:  # also after Ctrl-C: the tables hold every finished task
            rows = tuple(make_row(arch, name, opts, records[key], key in reused_keys)
                         for arch, _, name, opts, key in entries if key in records)
            if out is not None:
                files = write_tables(rows, out)
        result = SweepResult(
            tasks=len(entries), computed=sum(1 for *_, key in entries if key in records and key not in reused_keys),
            reused=sum(1 for *_, key in entries if key in reused_keys),
            failed=sum(1 for row in rows if row["status"] != "ok"), rows=rows, skips=tuple(skips),
            analyses=tuple(names), fields=tuple(fields), scheduler=where,
            dashboard=dashboard[0] if dashboard else None, out=None if out is None else str(out),
            files=tuple(map(str, files)), seconds=time.perf_counter() - started, timeout=task_timeout)
        if out is not None and result.plots():
            result = dataclasses.replace(result, files=result.files + tuple(map(str, write_plots(result, out))))
    return result


# `from symattn import sweep` gives this module (it shares the function's name): calling it calls sweep()
make_callable(__name__, "sweep")
