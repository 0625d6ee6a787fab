"""symattn sweep: grids, the results store, time limits, a local cluster and a real Dask cluster losing a worker.

The heavier tests start Dask: a ``LocalCluster`` of two workers, and a
``dask scheduler`` with two ``dask worker`` processes on 127.0.0.1, one of
which is killed in the middle of a sweep.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.cli import main
from symattn.identify import function_space_dimension
from symattn.model import Architecture
from symattn.spectrum import decay_spectrum
from symattn.sweep import GridError, read_grid, run_analysis, sweep
from symattn.sweep import schedule as schedule_module

from dask_processes import dask_cluster, kill_a_worker_mid_run, wait_for

#: Fields that describe how and where a task ran, not its result.
RUN_FIELDS = {"seconds", "cpu_seconds", "peak_memory", "worker", "key", "reused", "dimension_seconds", "spectrum_seconds"}


def _result_fields(row: dict) -> dict:
    return {key: value for key, value in row.items() if key not in RUN_FIELDS}


def _cli(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


# -- grids -------------------------------------------------------------------------------------
def test_grid_values_lists_and_ranges():
    grid = read_grid({"layers": "1..3", "width": "2,4", "rank": 1, "tokens": [3, "4..5"],
                      "normalizer": "softmax,1 + x**2", "widths": None})
    assert grid == {"layers": [1, 2, 3], "width": [2, 4], "rank": [1], "tokens": [3, 4, 5],
                    "normalizer": ["softmax", "1 + x**2"]}
    assert read_grid({"ranks": "1,1;2,1"}) == {"ranks": [(1, 1), (2, 1)]}
    assert read_grid({"causal": "no,yes", "heads": "1..2"}) == {"heads": [1, 2], "causal": [False, True]}


@pytest.mark.parametrize("grid, message", [
    ({"layers": "1..x"}, "layers: 'x' is not an integer"),
    ({"layers": "4..2"}, "the range '4..2' is empty"),
    ({"depth": 2}, "unknown grid field 'depth'"),
    ({"width": 2, "widths": "2,2"}, "give width"),
    ({"widths": "2..3"}, "separate several lists with ';'"),
    ({"normalizer": "__import__('os').getcwd()"}, "normalizer"),
    ({"causal": "maybe"}, "causal takes yes or no"),
])
def test_bad_grid_text_is_a_clear_error(grid, message):
    with pytest.raises(GridError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_grid(grid)


def test_bad_grid_text_on_the_command_line(tmp_path):
    marker = tmp_path / "evaluated"
    status, out, err = _cli(["sweep", "--layers", f"__import__('pathlib').Path('{marker}').touch()",
                             "--scheduler", "synchronous", "--quiet"])
    assert status == 2 and out == ""
    assert err.startswith("symattn: error: layers:") and err.count("\n") == 1
    assert not marker.exists()  # user text is data, never evaluated
    status, _, err = _cli(["sweep", "--normalizer", f"__import__('pathlib').Path('{marker}').touch()",
                           "--scheduler", "synchronous", "--quiet"])
    assert status == 2 and "normalizer" in err and not marker.exists()
    status, _, err = _cli(["sweep", "--analysis", "dimensions", "--scheduler", "synchronous", "--quiet"])
    assert status == 2 and "unknown analysis 'dimensions'" in err
    bad_file = tmp_path / "grid.toml"
    bad_file.write_text("[grid]\nlayers = [1, 2\n")
    status, _, err = _cli(["sweep", "--grid", str(bad_file), "--quiet"])
    assert status == 2 and "is not valid TOML" in err


_GRID_FLAG_VALUES = {
    "--layers": ["1", "1..2", "0", "x", "2..1", "", "1,,2", "-1..1", "1..100000"],
    "--width": ["1", "1,2", "0", "a", "1..", "..2", "1..2"],
    "--widths": ["1,1", "1,1;1,1,1", "1..2", ";", "a,b"],
    "--rank": ["1", "1..2", "0", "r"],
    "--tokens": ["2", "1..2", "0", "t"],
    "--normalizer": ["softmax", "softmax,cosh", "1 + x**2", "exp(", "", "__import__('os')", "x", "relu,,cosh"],
    "--heads": ["1", "1..2", "0", "h"],
    "--analysis": ["dimension", "parameters,dimension", "spectra", ""],
    "--events": ["scores:1", "keys:1", "values:1,bias", ""],
    "--task-timeout": ["60", "0", "-1"],
    "--causal": ["yes", "no", "yes,no", "maybe", ""],
    "--residual": ["yes", "no,yes", "1..2"],
}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flags=st.dictionaries(st.sampled_from(sorted(_GRID_FLAG_VALUES)), st.just(None), max_size=4), data=st.data())
def test_random_grid_command_lines_exit_0_or_2(flags, data):
    argv = ["sweep", "--scheduler", "synchronous", "--quiet", "--json"]
    for flag in flags:
        argv += [flag, data.draw(st.sampled_from(_GRID_FLAG_VALUES[flag]))]
    if "--layers" not in flags and "--widths" not in flags:
        argv += ["--layers", "1"]
    status, out, err = _cli(argv)
    assert status in (0, 2), (argv, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    if status == 0:
        data_out = json.loads(out)
        assert data_out["tasks"] == len(data_out["rows"])


def test_yes_no_flags_take_one_value_or_both():
    # alone: yes for every point (as before); a value: yes, no, or both as two points each
    base = ["sweep", "--layers", "1", "--width", "2", "--tokens", "3", "--scheduler", "synchronous", "--quiet",
            "--json"]
    status, out, _ = _cli([*base, "--causal", "--residual"])
    assert status == 0
    assert [(row["causal"], row["residual"]) for row in json.loads(out)["rows"]] == [(True, True)]
    status, out, _ = _cli([*base, "--causal", "yes,no", "--residual", "no"])
    assert status == 0
    rows = json.loads(out)["rows"]
    assert [(row["causal"], row["residual"]) for row in rows] == [(True, False), (False, False)]
    # one layer, width 2, three tokens: 7 directions with the mask and without (the plain formula's 7)
    assert [(row["lower"], row["upper"], row["certified"]) for row in rows] == [(7, 7, True)] * 2
    assert rows[1]["expected"] == 7
    status, _, err = _cli([*base, "--causal", "maybe"])
    assert status == 2 and "causal takes yes or no (true or false), got 'maybe'" in err


def test_invalid_combinations_are_skipped_with_reasons():
    result = sweep({"layers": "1..2", "width": "1,2", "rank": "1..2", "tokens": 2}, ["dimension", "observe"],
                   options={"observe": {"events": [["scores:2"]]}}, scheduler="synchronous", progress=False)
    # rank 2 on width 1 is an architecture (W_i of rank at most 1), computed as the spectrum command does;
    # scores:2 does not exist in one layer
    assert not [s for s in result.skips if s.analysis is None]
    dimension = {(r["layers"], r["width"], r["score_rank"]): r["lower"] for r in result.rows
                 if r["analysis"] == "dimension"}
    assert dimension[1, 1, 2] == dimension[1, 1, 1] and dimension[2, 1, 2] == dimension[2, 1, 1]
    event_skips = [s for s in result.skips if s.analysis == "observe"]
    assert {(s.point["layers"], s.point["width"], s.point["rank"]) for s in event_skips} == {
        (1, 1, 1), (1, 1, 2), (1, 2, 1), (1, 2, 2)}
    assert all("scores:2" in s.reason for s in event_skips)
    assert result.tasks == 8 + 4 and result.failed == 0
    assert result.to_json()["skipped"] == 4
    assert "## Skipped" in result.to_markdown() and r"\subsection*{Skipped}" in result.to_latex()


def test_grid_file_and_json_keys(tmp_path):
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text('analyses = ["dimension", "check"]\n[grid]\nlayers = "1..2"\nwidth = 1\ntokens = 2\n'
                         '[check]\nclaims = ["dimension = 2"]\n')
    status, out, _ = _cli(["sweep", "--grid", str(grid_file), "--scheduler", "synchronous", "--json", "--quiet"])
    assert status == 0
    data = json.loads(out)
    assert {"tasks", "computed", "reused", "failed", "skipped", "rows"} <= set(data)
    assert (data["tasks"], data["computed"], data["reused"], data["failed"], data["skipped"]) == (4, 4, 0, 0, 0)
    dimension = [r for r in data["rows"] if r["analysis"] == "dimension"]
    assert [(r["layers"], r["lower"], r["upper"], r["certified"], r["status"]) for r in dimension] == [
        (1, 2, 2, True, "ok"), (2, 3, 3, True, "ok")]
    check = [r for r in data["rows"] if r["analysis"] == "check"]
    assert [(r["layers"], r["true"], r["false"]) for r in check] == [(1, 1, 0), (2, 0, 1)]
    # flags on the command line replace the file's fields
    status, out, _ = _cli(["sweep", "--grid", str(grid_file), "--layers", "1", "--analysis", "dimension",
                           "--scheduler", "synchronous", "--json", "--quiet"])
    assert status == 0 and [r["layers"] for r in json.loads(out)["rows"]] == [1]


def test_out_writes_tables_summaries_and_plots_and_names_them(tmp_path):
    status, out, err = _cli(["sweep", "--layers", "1..2", "--width", "1,2", "--tokens", "2", "--normalizer",
                             "softmax,cosh", "--analysis", "dimension,spectrum,observe", "--events", "scores:1",
                             "--scheduler", "synchronous", "--out", str(tmp_path)])
    assert status == 0, err
    names = ["results.parquet", "results.csv", "sweep.md", "sweep.tex", "sweep.json", "sweep_dimension.png",
             "sweep_orders.png", "sweep_observability.png"]
    for name in names:
        assert (tmp_path / name).stat().st_size > 0, name
        assert str(tmp_path / name) in err  # each file written is named
    summary = (tmp_path / "sweep.md").read_text()
    assert "## dimension" in summary and "## spectrum" in summary and "![sweep_orders](sweep_orders.png)" in summary
    assert "\\begin{document}" in (tmp_path / "sweep.tex").read_text()
    assert out.startswith("# Sweep: 24 tasks, 24 computed, 0 reused, 0 failed, 0 skipped")
    frame = pd.read_parquet(tmp_path / "results.parquet")
    assert set(frame["analysis"]) == {"dimension", "spectrum", "observe"} and len(frame) == 24
    assert json.loads(frame[frame["analysis"] == "spectrum"]["spectrum"].iloc[0]) == {"0": 1, "1": 1}


# -- the results store ---------------------------------------------------------------------------
def test_interrupted_sweep_keeps_what_finished_and_resumes(tmp_path, monkeypatch):
    grid = {"layers": "1..2", "width": "1,2", "tokens": 2}
    calls = []
    real = schedule_module.run_in_process

    def interrupted(task, max_memory=None):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(task["key"])
        return real(task, max_memory)

    monkeypatch.setattr(schedule_module, "run_in_process", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep(grid, "dimension", out=tmp_path, scheduler="synchronous", progress=False)
    assert sorted(p.stem for p in (tmp_path / "store").glob("*.json")) == sorted(calls)
    assert len(pd.read_csv(tmp_path / "results.csv")) == 2  # the table holds what finished
    monkeypatch.setattr(schedule_module, "run_in_process", real)
    resumed = sweep(grid, "dimension", out=tmp_path, scheduler="synchronous", progress=False)
    assert (resumed.tasks, resumed.reused, resumed.computed, resumed.failed) == (4, 2, 2, 0)
    assert sorted(r["key"] for r in resumed.rows if r["reused"]) == sorted(calls)


@pytest.mark.slow  # a local Dask cluster
def test_a_task_over_its_time_limit_is_stopped_and_the_others_go_on(tmp_path):
    # layers 4, width 8, rank 2 under cosh (the curve route; softmax's integer-score route is under 0.5 s)
    # takes several seconds; the small points after it still run
    started = time.perf_counter()
    grid = {"layers": "1,4", "width": "2,8", "rank": 2, "normalizer": "cosh"}
    result = sweep(grid, "dimension", out=tmp_path, scheduler="sequential", task_timeout=1.5, progress=False)
    elapsed = time.perf_counter() - started
    status = {(r["layers"], r["width"]): r["status"] for r in result.rows}
    assert status == {(1, 2): "ok", (1, 8): "ok", (4, 2): "ok", (4, 8): "timeout"}
    slow = next(r for r in result.rows if r["status"] == "timeout")
    assert "over the time limit of 1.5 s" in slow["reason"] and slow["seconds"] < 5
    assert result.failed == 1 and elapsed < 30
    lower = {(r["layers"], r["width"]): r["lower"] for r in result.rows if r["status"] == "ok"}
    assert lower == {(1, 2): 8, (1, 8): 92, (4, 2): 20}
    # a time-out is retried by a rerun (with more time it finishes); the others are reused
    rerun = sweep(grid, "dimension", out=tmp_path, scheduler="sequential", task_timeout=1.5, progress=False)
    assert (rerun.reused, rerun.computed) == (3, 1)


# -- a local cluster -----------------------------------------------------------------------------
@pytest.mark.slow  # a local Dask cluster
def test_local_cluster_gives_the_rows_of_each_point_alone_and_a_rerun_computes_nothing(tmp_path):
    grid = {"layers": "1..2", "width": "2,3", "normalizer": "softmax,cosh"}
    result = sweep(grid, ["dimension", "spectrum"], out=tmp_path, workers=2, progress=False)
    assert result.scheduler == "Dask LocalCluster, 2 worker processes"
    assert (result.tasks, result.computed, result.reused, result.failed) == (16, 16, 0, 0)
    assert len({r["worker"] for r in result.rows}) == 2
    for row in result.rows:  # the same row as the point computed alone, in this process
        point = {"layers": row["layers"], "width": row["width"], "normalizer": row["normalizer"]}
        alone = sweep({k: [v] for k, v in point.items()}, row["analysis"], scheduler="synchronous",
                      progress=False).rows[0]
        assert _result_fields(row) == _result_fields(alone)
        arch = Architecture.uniform(layers=row["layers"], width=row["width"], normalizer=row["normalizer"])
        if row["analysis"] == "dimension":  # and the analysis called directly
            direct = function_space_dimension(arch)
            assert (row["lower"], row["upper"], row["certified"]) == (direct.lower, direct.upper, direct.certified)
        else:
            assert row["spectrum"] == {str(e): m for e, m in decay_spectrum(arch, progress=False).exponents.items()}
    frame = pd.read_parquet(tmp_path / "results.parquet")
    assert len(frame) == 16 and list(frame["status"]) == ["ok"] * 16
    assert len(pd.read_csv(tmp_path / "results.csv")) == 16
    stored = {p: p.stat().st_mtime_ns for p in (tmp_path / "store").glob("*.json")}
    assert len(stored) == 16

    again = sweep(grid, ["dimension", "spectrum"], out=tmp_path, workers=2, progress=False)
    assert (again.tasks, again.computed, again.reused) == (16, 0, 16)  # nothing run again
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "store").glob("*.json")} == stored
    assert [_result_fields(r) for r in again.rows] == [_result_fields(r) for r in result.rows]


# -- a real Dask cluster losing a worker ---------------------------------------------------------------
@pytest.mark.slow  # a scheduler and workers in their own processes, one of them killed
@pytest.mark.parametrize("retries", [None, 0])
def test_dask_scheduler_and_workers_survive_a_killed_worker(tmp_path, retries):
    """A worker killed mid-sweep: its task runs again on the other (Dask's default of 3 retries), or, when
    the scheduler allows no retry, becomes a ``lost`` row that the next run computes."""
    env = None if retries is None else {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(retries)}
    # the killer's own client (the watcher), connected before the sweep starts (not the default one the sweep
    # takes and closes), so that it sees the first running task at once
    with dask_cluster(tmp_path, env=env) as (address, workers, watcher):
        out = tmp_path / "out"

        def a_finished_task():
            wait_for(lambda: (out / "store").exists() and any((out / "store").glob("*.json")), 120,
                     "a finished task")
            return {p.stem: p.read_text() for p in (out / "store").glob("*.json")}

        # killed while it runs a task, so that with no retry allowed that task is lost (not between two)
        killer, killed = kill_a_worker_mid_run(watcher, workers, settle=0, every=0.1, before=a_finished_task)
        # about 1 s per point with one thread under cosh (the curve route; softmax's integer-score route
        # is faster): the sweep is still running when the worker dies
        status, stdout, stderr = _cli(["sweep", "--layers", "3..4", "--width", "4..6", "--rank", "1,2",
                                       "--normalizer", "cosh", "--scheduler", address, "--out", str(out),
                                       "--json", "--quiet"])
        killer.join(timeout=10)
        assert status == 0, stderr
        assert "at" in killed, f"the sweep ended before a worker could be killed: {killed.get('error')}"
        data = json.loads(stdout)
        assert data["tasks"] == 12 and len(data["rows"]) == 12
        # every task has a row: computed by the surviving worker (the killed one's task retried) or recorded as lost
        assert all(row["status"] in ("ok", "lost") for row in data["rows"]), [r["reason"] for r in data["rows"]]
        assert sum(row["status"] == "ok" for row in data["rows"]) >= 10
        for row in data["rows"]:
            if row["status"] == "ok":
                assert row["lower"] == row["expected"] and row["certified"]
        # no finished row is lost: every record written before the kill is still there, unchanged
        for key, text in killed["before"].items():
            assert (out / "store" / f"{key}.json").read_text() == text
        assert {row["key"] for row in data["rows"]} >= set(killed["before"])
        assert len(killed["before"]) < 12  # the worker died mid-sweep
        lost = [row for row in data["rows"] if row["status"] == "lost"]
        if retries == 0:  # the killed worker's task is lost at once, and the next run computes it
            assert lost and all("its worker was lost each time it ran" in row["reason"] for row in lost)
            status, stdout, stderr = _cli(["sweep", "--layers", "3..4", "--width", "4..6", "--rank", "1,2",
                                           "--normalizer", "cosh", "--scheduler", address, "--out", str(out),
                                           "--json", "--quiet"])
            again = json.loads(stdout)
            assert status == 0 and again["computed"] == len(lost) and again["reused"] == 12 - len(lost)
            assert all(row["status"] == "ok" for row in again["rows"])


def test_library_run_analysis_matches_the_command_line_rows():
    record = run_analysis({"layers": 2, "width": 2}, "orders", {"seed": 0})
    assert record["orders"] == {"scores:1": 2, "scores:2": 6, "values": 0} and record["bound"] == "sharp"
    assert Path(__file__).exists()


def test_skipped_points_in_latex_set_the_normalizer_as_a_formula():
    # the Skipped table printed `normalizer=1 + x**2` (Python syntax) in the LaTeX document
    from symattn.sweep import sweep

    result = sweep({"layers": "1..2", "widths": "2,2;2,3,2", "normalizer": ["1 + x**2"]}, analyses=["parameters"],
                   scheduler="synchronous", progress=False)
    skipped = result.to_latex().split("Skipped")[1]
    assert "normalizer = $x^{2} + 1$" in skipped and "x**2" not in skipped
    assert "layers = 1, widths = 2, 3, 2" in skipped
