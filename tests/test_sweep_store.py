"""The results store of a sweep does not lie (issue 23): records are checked before reuse, one sweep writes a folder.

Each damaged, forged or foreign record is computed again with one warning
line naming the file and what was wrong; a second sweep into a folder that
another sweep is writing is refused; every file is written through a
temporary file of its own.  All on the synchronous scheduler: no Dask.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

import symattn
from symattn.cli import main
from symattn.errors import SymattnError
from symattn.sweep import sweep
from symattn.sweep.result import write_tables
from symattn.sweep.store import LOCK_NAME, RECORD_FORMAT, ResultStore, SweepLock, record_checksum, task_identity

GRID = {"layers": "1..2", "width": 2}

#: The parameter counts of the grid: (layers, params, effective dimension).
PARAMETERS = [(1, 8, 7), (2, 16, 10)]


def _sweep(out, analysis="parameters"):
    return sweep(GRID, analysis, out=out, scheduler="synchronous", progress=False)


def _cli(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _record_files(result) -> dict[int, Path]:
    """The record file of each row, by its number of layers."""
    return {row["layers"]: Path(result.out) / "store" / f"{row['key']}.json" for row in result.rows}


def _parameters(result) -> list[tuple]:
    return [(row["layers"], row["params"], row["effective_dim"]) for row in result.rows]


def _rechecksummed(record: dict) -> str:
    record = {**record, "checksum": record_checksum(record)}
    return json.dumps(record)


# -- what a record holds -------------------------------------------------------------------------
def test_a_record_carries_its_task_and_a_checksum_and_is_reused_silently(tmp_path, capsys):
    first = _sweep(tmp_path)
    files = _record_files(first)
    record = json.loads(files[1].read_text())
    assert record["format"] == RECORD_FORMAT == 2
    assert record["key"] == files[1].stem == first.rows[0]["key"]
    assert (record["analysis"], record["options"], record["version"]) == ("parameters", {}, symattn.__version__)
    assert record["point"] == {"layers": 1, "width": 2}
    assert record["architecture"] == task_identity({"layers": 1, "width": 2}, "parameters", {})["architecture"]
    assert (record["architecture"]["layers"], record["architecture"]["widths"]) == (1, [2, 2])
    assert record["checksum"] == record_checksum(record) and record["checksum"].startswith("sha256:")
    assert (record["status"], record["result"]["params"]) == ("ok", 8)
    again = _sweep(tmp_path)
    assert (again.computed, again.reused) == (0, 2)
    assert _parameters(again) == PARAMETERS
    assert capsys.readouterr().err == ""


# -- records that lie --------------------------------------------------------------------------
def test_a_record_copied_over_another_is_computed_again_and_the_row_is_right(tmp_path, capsys):
    first = _sweep(tmp_path, "spectrum")
    files = _record_files(first)
    shutil.copyfile(files[2], files[1])  # the layer-1 record now holds the layer-2 spectrum
    again = _sweep(tmp_path, "spectrum")
    assert (again.computed, again.reused) == (1, 1)
    assert [(row["layers"], row["spectrum"], row["reused"]) for row in again.rows] == [
        (1, {"0": 4, "1": 3}, False), (2, {"0": 4, "1": 3, "5": 3}, True)]
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"symattn: warning: the results store record {files[1]} is not the record of this task: "
                          f'its key is "{files[2].stem}", not the task\'s "{files[1].stem}"; '
                          "its architecture differs from the task's in layers (2, not 1), ")
    assert err.endswith("; computing the task again\n")
    assert json.loads(files[1].read_text())["key"] == files[1].stem  # written anew, for its own task
    third = _sweep(tmp_path, "spectrum")
    assert (third.computed, third.reused) == (0, 2) and capsys.readouterr().err == ""


def _truncated(record_text: str) -> str:
    return record_text[:len(record_text) // 2]


def _result_as_a_list_with_its_checksum(record_text: str) -> str:
    return _rechecksummed({**json.loads(record_text), "result": [8, 7]})


def _edited_result(record_text: str) -> str:
    record = json.loads(record_text)
    record["result"]["params"] = 16  # the checksum is left as it was
    return json.dumps(record)


def _earlier_version_record(record_text: str) -> str:
    """The record as the versions before the checksum wrote it (no format, no checksum, no architecture)."""
    record = json.loads(record_text)
    for name in ("format", "checksum", "architecture", "version"):
        del record[name]
    return json.dumps(record)


def _another_package_version(record_text: str) -> str:
    return _rechecksummed({**json.loads(record_text), "version": "0.0.1"})


def _unknown_status(record_text: str) -> str:
    return _rechecksummed({**json.loads(record_text), "status": "done"})


@pytest.mark.parametrize("damage, problem", [
    (lambda text: '{"status": "ok"}', "has no checksum (written by an earlier version of symattn)"),
    (lambda text: "[]", "is a list, not a record (a JSON object)"),
    (lambda text: '"ok"', "is a string, not a record (a JSON object)"),
    (lambda text: "NaN", "is a number, not a record (a JSON object)"),
    (lambda text: "[" * 2000 + "]" * 2000, "is nested too deeply to be a record"),
    (lambda text: '{"status": "ok", "result": [8, 7]}', "has no checksum (written by an earlier version of symattn)"),
    (_result_as_a_list_with_its_checksum, "its status is ok but its result is a list, not an object"),
    (_truncated, "is not valid JSON ("),  # where the cut falls varies with the timings recorded
    (lambda text: "", "is not valid JSON (Expecting value: line 1 column 1 (char 0))"),
    (_edited_result, "has a checksum that does not match its content (edited or damaged)"),
    (_earlier_version_record, "has no checksum (written by an earlier version of symattn)"),
    (_another_package_version, f'is not the record of this task: its version is "0.0.1", not the task\'s '
                               f'"{symattn.__version__}"'),
    (_unknown_status, 'its status "done" is not one of ok, error, timeout, memory, crashed, lost'),
], ids=["forged-ok", "list", "string", "nan", "2000-brackets", "result-list", "result-list-with-checksum",
        "truncated", "empty", "checksum-mismatch", "earlier-version", "other-version", "unknown-status"])
def test_a_damaged_or_forged_record_is_computed_again_with_one_warning(tmp_path, damage, problem):
    first = _sweep(tmp_path)
    path = _record_files(first)[1]
    path.write_text(damage(path.read_text()))
    status, out, err = _cli(["sweep", "--layers", "1..2", "--width", "2", "--analysis", "parameters",
                             "--scheduler", "synchronous", "--out", str(tmp_path), "--json", "--quiet"])
    assert status == 0, err  # was 1 (an internal error) for [], "ok", NaN, deep nesting, a list as result
    data = json.loads(out)
    assert (data["computed"], data["reused"], data["failed"]) == (1, 1, 0)
    assert [(row["layers"], row["params"], row["effective_dim"], row["reused"]) for row in data["rows"]] == [
        (1, 8, 7, False), (2, 16, 10, True)]
    assert err.count("\n") == 1
    assert err.startswith(f"symattn: warning: the results store record {path} {problem}")
    assert err.endswith("; computing the task again\n")
    record = json.loads(path.read_text())  # written anew, whole
    assert record["checksum"] == record_checksum(record) and record["result"]["params"] == 8
    assert pd.read_csv(tmp_path / "results.csv")["params"].tolist() == [8, 16]


def test_unreadable_bytes_are_computed_again(tmp_path):
    path = _record_files(_sweep(tmp_path))[2]
    path.write_bytes(b'{"status": "\xff\xfe"}')
    warnings = []
    store = ResultStore(tmp_path, warn=warnings.append)
    assert store.lookup(task_identity({"layers": 2, "width": 2}, "parameters", {})) is None
    assert warnings == [f"the results store record {path} is not UTF-8 text; computing the task again"]


def test_an_unfinished_task_is_retried_without_a_warning(tmp_path, capsys):
    path = _record_files(_sweep(tmp_path))[1]
    record = json.loads(path.read_text())
    path.write_text(_rechecksummed({**record, "status": "timeout", "reason": "over the time limit of 1 s",
                                    "result": None}))
    again = _sweep(tmp_path)
    assert (again.computed, again.reused) == (1, 1) and _parameters(again) == PARAMETERS
    assert capsys.readouterr().err == ""


# -- one sweep at a time ---------------------------------------------------------------------------
_HOLD_THE_LOCK = """
import sys
from symattn.sweep.store import SweepLock
lock = SweepLock(sys.argv[1]).acquire()
print("held", flush=True)
sys.stdin.read()
"""


def test_a_second_sweep_while_one_writes_is_refused_and_a_dead_sweeps_lock_is_taken_over(tmp_path):
    (tmp_path / "store").mkdir()
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_THE_LOCK, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        message = (f"another sweep is writing {tmp_path} (pid {holder.pid}); "
                   "wait for it or choose another --out")
        with pytest.raises(SymattnError) as refused:
            _sweep(tmp_path)
        assert str(refused.value) == message
        assert list((tmp_path / "store").iterdir()) == []  # nothing read or written
        assert not (tmp_path / "results.csv").exists()
        status, out, err = _cli(["sweep", "--layers", "1", "--scheduler", "synchronous", "--out", str(tmp_path),
                                 "--quiet"])
        assert (status, out, err) == (2, "", f"symattn: error: {message}\n")
    finally:
        holder.send_signal(signal.SIGKILL)  # dies holding it: the lock file stays, naming a dead pid
        holder.wait()
        holder.stdout.close()
        holder.stdin.close()
    assert (tmp_path / LOCK_NAME).read_text().split()[0] == str(holder.pid)
    result = _sweep(tmp_path)
    assert (result.computed, result.reused) == (2, 0) and _parameters(result) == PARAMETERS
    assert not (tmp_path / LOCK_NAME).exists()  # released when the sweep ended


def test_a_lock_file_naming_a_dead_process_is_taken_over(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / LOCK_NAME).write_text(f"{gone.pid} {os.uname().nodename}\n")
    result = _sweep(tmp_path)
    assert (result.computed, result.failed) == (2, 0) and _parameters(result) == PARAMETERS
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_sweep_in_this_process_holding_the_folder_refuses_another(tmp_path):
    with SweepLock(tmp_path) as lock:
        assert lock.held and (tmp_path / LOCK_NAME).read_text().split()[0] == str(os.getpid())
        with pytest.raises(SymattnError, match=rf"^another sweep is writing {tmp_path} \(pid {os.getpid()}\); "
                                               r"wait for it or choose another --out$"):
            _sweep(tmp_path)
    assert not lock.held
    assert _sweep(tmp_path).computed == 2  # free again


# -- writing files at once ---------------------------------------------------------------------------
def test_many_writers_at_once_never_share_a_temporary_file(tmp_path):
    rows = [[{"layers": layers, "writer": writer} for layers in range(1, 30)] for writer in range(12)]
    task = task_identity({"layers": 1}, "parameters", {})
    store = ResultStore(tmp_path)
    failures, start = [], threading.Barrier(12)

    def write(writer: int) -> None:
        start.wait()
        try:
            for _ in range(5):
                write_tables(rows[writer], tmp_path)
                store.put(task, {"status": "ok", "result": {"writer": writer}}, point={"layers": 1})
        except Exception as err:  # noqa: BLE001  (any failure of any writer fails the test)
            failures.append(repr(err))

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    table = pd.read_csv(tmp_path / "results.csv")  # one writer's whole table
    assert len(table) == 29 and table["writer"].nunique() == 1
    assert pd.read_parquet(tmp_path / "results.parquet")["layers"].tolist() == list(range(1, 30))
    assert store.lookup(task)["result"]["writer"] in range(12)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "results.parquet", "store"]
    assert [p.name for p in (tmp_path / "store").iterdir()] == [f"{task['key']}.json"]


def test_a_full_disk_leaves_the_previous_table_whole(tmp_path, monkeypatch):
    write_tables([{"layers": 1, "params": 8}], tmp_path)
    before = (tmp_path / "results.csv").read_bytes()

    def half_then_full(self, path, **options):
        Path(path).write_text("layers,par")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_full)
    with pytest.raises(SymattnError, match=rf"^cannot write {tmp_path / 'results.csv'}: No space left on device$"):
        write_tables([{"layers": 1, "params": 8}, {"layers": 2, "params": 16}], tmp_path)
    assert (tmp_path / "results.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "results.parquet"]  # no temporary left


def test_leftover_temporary_files_of_a_killed_sweep_are_removed(tmp_path):
    first = _sweep(tmp_path)
    leftovers = [tmp_path / "store" / f".{first.rows[0]['key']}.json.0a1b2c.tmp", tmp_path / ".results.csv.0a1b2c.tmp",
                 tmp_path / ".sweep_dimension.png.0a1b2c.tmp"]
    for path in leftovers:
        path.write_text("half")
    (tmp_path / ".mine.tmp").write_text("not the sweep's")
    again = _sweep(tmp_path)
    assert again.reused == 2 and not any(path.exists() for path in leftovers)
    assert (tmp_path / ".mine.tmp").read_text() == "not the sweep's"


@pytest.mark.slow  # a local Dask cluster
def test_ctrl_c_on_a_local_cluster_sweep_is_one_line(tmp_path):
    """Ctrl-C reaches the whole process group (the sweep and its workers): one line, exit 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    command = [sys.executable, "-m", "symattn", "sweep", "--layers", "5..6", "--width", "2..3", "--analysis",
               "spectrum", "--scheduler", "local", "--workers", "2", "--out", str(tmp_path / "out"), "--quiet"]
    sweep_process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
    time.sleep(8)  # the cluster is up and the tasks are running (six layers take longer than this)
    os.killpg(sweep_process.pid, signal.SIGINT)
    _, err = sweep_process.communicate(timeout=120)
    assert sweep_process.returncode == 130, err
    assert err.splitlines() == ["symattn: interrupted"], err
