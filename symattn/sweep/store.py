"""The results store of a sweep: one JSON file per finished task, written at once and atomically, checked on reuse.

A task is keyed by a hash of its architecture, its analysis, the analysis's
options and the package version (:func:`task_key`), so a rerun with the same
grid finds every finished task and computes only the rest, and a new version
of the package computes everything anew.

What the store guarantees:

* Each record carries what it is the result of (:func:`task_identity`: its
  key, the architecture, the analysis, its options and the package version),
  the grid point as given, and a checksum of its whole content.  A rerun
  reuses a record only when it is a JSON object in this version's format,
  its checksum matches, everything it says it is matches the task, and its
  status and result have the right kinds (:meth:`ResultStore.lookup`).
  Anything else (a record copied over another, edited, truncated, written
  by an earlier version of the package, or not JSON at all) is computed
  again, with one warning line on standard error naming the file and what
  was wrong.
* Each file (records, and the tables and plots of
  :mod:`symattn.sweep.result`) is written to a temporary file of its own,
  with a unique name, in the same folder and renamed over its final name
  once complete (:func:`write_atomically`), so a reader, a full disk or a
  sweep stopped half-way never leaves half a file.
* One sweep at a time writes a folder (:class:`SweepLock`): a second one is
  refused at once; the lock of a sweep that died is taken over.

Examples
--------
>>> import tempfile
>>> store = ResultStore(tempfile.mkdtemp())
>>> task = task_identity({"layers": 1}, "dimension", {"seed": 0})
>>> len(task["key"]), store.lookup(task) is None
(24, True)
>>> record = store.put(task, {"status": "ok", "result": {"lower": 7}}, point={"layers": 1})
>>> record["analysis"], record["architecture"]["widths"], record["checksum"][:7]
('dimension', [2, 2], 'sha256:')
>>> store.lookup(task)["result"], len(store)
({'lower': 7}, 1)
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from pathlib import Path

from .. import __version__
from .._files import write_atomically
from ..errors import SymattnError
from .grid import build_architecture
from .runner import CRASHED, ERROR, LOST, MEMORY, OK, TIMEOUT

__all__ = ["ResultStore", "SweepLock", "task_key", "task_identity", "record_checksum", "write_atomically",
           "FINAL_STATUSES", "RECORD_FORMAT"]

#: Statuses that a rerun reuses: the task finished (with a result, or with an error the analysis
#: itself raised, which would come again).  Time-outs, memory kills and lost workers are retried.
FINAL_STATUSES = (OK, ERROR)

#: Every status a record may have.
STATUSES = (OK, ERROR, TIMEOUT, MEMORY, CRASHED, LOST)

#: The format of the records this version writes; records without it (earlier versions) are computed again.
RECORD_FORMAT = 2

#: The fields of a record that say which task it is the result of (all must agree with the task).
IDENTITY_FIELDS = ("key", "architecture", "analysis", "options", "version")

#: The lock file of a sweep's folder (:class:`SweepLock`).
LOCK_NAME = ".sweep.lock"


def _warn(message: str) -> None:
    print(f"symattn: warning: {message}", file=sys.stderr, flush=True)


def _plain(value):
    """``value`` as it reads back from JSON (tuples as lists, other objects as their text)."""
    return json.loads(json.dumps(value, default=str))


def _canonical_architecture(point: dict) -> dict:
    """The architecture of a point as the package describes it (so ``width=2`` and ``widths=2,2`` agree)."""
    arch = build_architecture(point)
    data = arch.to_json()
    data["normalizers"] = [n.to_json() for n in arch.normalizers]
    return data


def task_identity(point: dict, analysis: str, options: dict, version: str = __version__) -> dict:
    """What a task is: its store key, its architecture, analysis, options and the package version (plain JSON).

    A record is reused only for the task whose identity it carries.

    Examples
    --------
    >>> task = task_identity({"layers": 1, "width": 1, "tokens": 2}, "parameters", {})
    >>> same = task_key({"widths": (1, 1), "tokens": 2}, "parameters", {})
    >>> sorted(task), task["architecture"]["widths"], task["key"] == same
    (['analysis', 'architecture', 'key', 'options', 'version'], [1, 1], True)
    """
    described = {"architecture": _canonical_architecture(point), "analysis": analysis,
                 "options": options, "version": version}
    text = json.dumps(described, sort_keys=True, default=str)
    return {"key": hashlib.sha256(text.encode("utf-8")).hexdigest()[:24], **_plain(described)}


def task_key(point: dict, analysis: str, options: dict, version: str = __version__) -> str:
    """The store key of a task: a hash of (architecture, analysis, options, package version).

    Examples
    --------
    >>> task_key({"layers": 2, "width": 2}, "dimension", {"seed": 0}) == task_key(
    ...     {"widths": (2, 2, 2)}, "dimension", {"seed": 0})
    True
    >>> task_key({"layers": 2}, "dimension", {"seed": 0}) == task_key({"layers": 2}, "dimension", {"seed": 1})
    False
    """
    return task_identity(point, analysis, options, version)["key"]


def record_checksum(record: dict) -> str:
    """The checksum of a record's content: SHA-256 of its canonical JSON, without its ``checksum`` field.

    Examples
    --------
    >>> record_checksum({"b": 1, "a": [1.5, None]}) == record_checksum({"a": [1.5, None], "b": 1, "checksum": "x"})
    True
    >>> record_checksum({"a": 1})[:7]
    'sha256:'
    """
    content = {name: value for name, value in record.items() if name != "checksum"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


# -- writing a file at once ------------------------------------------------------------------
# -- one sweep at a time -------------------------------------------------------------------
class SweepLock:
    """The lock of a sweep's folder: one sweep at a time writes its store and tables.

    ``DIR/.sweep.lock`` holds the pid (and host) of the sweep writing ``DIR``,
    under an exclusive :func:`fcntl.flock`.  The system releases that lock
    when the process ends, however it ends, so the lock file of a sweep that
    died is simply taken over; a second sweep while the first runs is refused
    at once with a :class:`~symattn.errors.SymattnError`.

    Parameters
    ----------
    directory : path
        The sweep's ``--out`` folder (it must exist).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with SweepLock(folder):
    ...     SweepLock(folder).acquire()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: another sweep is writing ... (pid ...); wait for it or choose another --out
    >>> with SweepLock(folder) as lock:  # released: free again
    ...     lock.held
    True
    """

    def __init__(self, directory):
        self.directory = directory
        self.path = Path(directory) / LOCK_NAME
        self._handle: int | None = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def _holder(self, handle: int) -> str:
        """Who holds the lock, from the lock file: ``pid N`` (``on host H`` when not this machine)."""
        try:
            words = os.pread(handle, 512, 0).decode("utf-8", "replace").split()
            pid = int(words[0])
        except (OSError, ValueError, IndexError):  # written in a moment by a sweep that just took it
            return "pid unknown"
        host = words[1] if len(words) > 1 else None
        return f"pid {pid}" + (f" on host {host}" if host and host != socket.gethostname() else "")

    def acquire(self) -> SweepLock:
        """Take the lock now, or raise a SymattnError naming the sweep that holds it."""
        import fcntl

        while self._handle is None:
            try:
                handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as err:
                raise SymattnError(f"cannot create the lock file {self.path}: {err.strerror or err}") from None
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._holder(handle)
                os.close(handle)
                raise SymattnError(f"another sweep is writing {self.directory} ({holder}); "
                                   "wait for it or choose another --out") from None
            except OSError as err:  # a file system without locks (some network mounts): go on, unguarded
                os.close(handle)
                _warn(f"cannot lock {self.path} ({err.strerror or err}): a second sweep writing "
                      f"{self.directory} at the same time would not be refused")
                return self
            try:  # the sweep that held it may have removed the file in between: lock the file at the path
                current = os.path.samestat(os.fstat(handle), os.stat(self.path))
            except FileNotFoundError:
                current = False
            if not current:
                os.close(handle)
                continue
            try:  # who holds it, for the message of a sweep refused
                os.ftruncate(handle, 0)
                os.pwrite(handle, f"{os.getpid()} {socket.gethostname()}\n".encode("utf-8"), 0)
            except OSError as err:
                os.close(handle)
                raise SymattnError(f"cannot write the lock file {self.path}: {err.strerror or err}") from None
            self._handle = handle
        return self

    def release(self) -> None:
        """Give the lock back (and remove the lock file)."""
        if self._handle is None:
            return
        try:
            os.unlink(self.path)  # while still locked: no other sweep holds this file yet
        except OSError:
            pass
        os.close(self._handle)
        self._handle = None

    def __enter__(self) -> SweepLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# -- the store --------------------------------------------------------------------------------
#: A field a record or a task does not have.
_MISSING = object()


def _short(value, limit: int = 80) -> str:
    """A value in a warning: compact JSON, cut to ``limit`` characters."""
    if value is _MISSING:
        return "missing"
    text = json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _disagreements(record: dict, task: dict) -> list[str]:
    """What a record says it is and the task is not, field by field (architecture and options by their keys)."""
    found = []
    for name in IDENTITY_FIELDS:
        stored, expected = record.get(name, _MISSING), task[name]
        if stored == expected:
            continue
        if stored is _MISSING:
            found.append(f"it has no {name}")
        elif isinstance(stored, dict) and isinstance(expected, dict):
            fields = [f for f in [*expected, *(f for f in stored if f not in expected)]
                      if stored.get(f, _MISSING) != expected.get(f, _MISSING)]
            shown = ", ".join(f"{field} ({_short(stored.get(field, _MISSING), 40)}, not "
                              f"{_short(expected.get(field, _MISSING), 40)})" for field in fields[:3])
            more = f" and {len(fields) - 3} more" if len(fields) > 3 else ""
            found.append(f"its {name} differs from the task's in {shown}{more}")
        else:
            found.append(f"its {name} is {_short(stored)}, not the task's {_short(expected)}")
    return found


def _shape_problem(record: dict) -> str | None:
    """Why a record's status and result cannot make a row, or None."""
    status = record.get("status")
    if status not in STATUSES:
        return f"its status {_short(status)} is not one of {', '.join(STATUSES)}"
    result, reason = record.get("result"), record.get("reason")
    if status == OK and not isinstance(result, dict):
        return f"its status is ok but its result is {_kind(result)}, not an object"
    if result is not None and not isinstance(result, dict):
        return f"its result is {_kind(result)}, not an object"
    if reason is not None and not isinstance(reason, str):
        return f"its reason is {_kind(reason)}, not text"
    for name in ("seconds", "cpu_seconds", "peak_memory"):
        value = record.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"its {name} is {_kind(value)}, not a number"
    if record.get("worker") is not None and not isinstance(record["worker"], str):
        return f"its worker is {_kind(record['worker'])}, not text"
    return None


class ResultStore:
    """Finished tasks under ``directory/store/``, one ``KEY.json`` each, checked before they are reused.

    Parameters
    ----------
    directory : path
        The sweep's ``--out`` folder (created if missing).
    warn : callable, optional
        Called with one line for each record that cannot be reused and is
        computed again (default: ``symattn: warning: ...`` on standard error).

    Examples
    --------
    >>> import tempfile
    >>> store = ResultStore(tempfile.mkdtemp(), warn=print)
    >>> task = task_identity({"layers": 1}, "parameters", {})
    >>> _ = store.put(task, {"status": "timeout", "reason": "over the time limit"}, point={"layers": 1})
    >>> store.get(task["key"])["status"], store.lookup(task), store.folder.name  # a time-out is retried
    ('timeout', None, 'store')
    >>> _ = store.path(task["key"]).write_text('{"status": "ok"}')
    >>> store.lookup(task)  # doctest: +ELLIPSIS
    the results store record .../store/....json has no checksum (written by an earlier version of symattn);
    computing the task again
    """

    def __init__(self, directory, warn=_warn):
        self.directory = Path(directory)
        self.folder = self.directory / "store"
        self.warn = warn
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SymattnError(f"cannot create the results store {self.folder}: {err.strerror or err}") from None

    def path(self, key: str) -> Path:
        """The file of the record of ``key``."""
        return self.folder / f"{key}.json"

    def lock(self) -> SweepLock:
        """The lock of the store's folder (``with store.lock(): ...``), see :class:`SweepLock`."""
        return SweepLock(self.directory)

    def _read(self, key: str):
        """``(record, None)``, ``(None, None)`` when there is none, or ``(None, what is wrong)``."""
        path = self.path(key)
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return None, None
        except OSError as err:
            return None, f"cannot be read ({err.strerror or err})"
        except UnicodeDecodeError:
            return None, "is not UTF-8 text"
        try:
            record = json.loads(text)
        except RecursionError:
            return None, "is nested too deeply to be a record"
        except ValueError as err:
            return None, f"is not valid JSON ({' '.join(str(err).split())})"
        if not isinstance(record, dict):
            return None, f"is {_kind(record)}, not a record (a JSON object)"
        return record, None

    def get(self, key: str) -> dict | None:
        """The record of ``key`` as written, unchecked; None when it is missing or not a JSON object."""
        return self._read(key)[0]

    def check(self, record: dict, task: dict) -> str | None:
        """What is wrong with reusing ``record`` for ``task`` (:func:`task_identity`), or None."""
        if "format" not in record or "checksum" not in record:
            return "has no checksum (written by an earlier version of symattn)"
        if record["format"] != RECORD_FORMAT:
            return f"is in record format {_short(record['format'])}, not {RECORD_FORMAT}"
        try:
            checksum = record_checksum(record)
        except (ValueError, RecursionError) as err:
            return f"cannot be checked ({' '.join(str(err).split())})"
        if record["checksum"] != checksum:
            return "has a checksum that does not match its content (edited or damaged)"
        disagreements = _disagreements(record, task)
        if disagreements:
            return "is not the record of this task: " + "; ".join(disagreements)
        return _shape_problem(record)

    def lookup(self, task: dict) -> dict | None:
        """The record of ``task`` if a rerun may reuse it, else None.

        ``task`` is the task's :func:`task_identity`.  None, silently, when
        there is no record or its task did not finish (a time-out, a memory
        kill, a lost worker: retried); None with a warning (``warn``) when the
        record is unreadable, in an earlier format, damaged (its checksum),
        the record of another task, or has a status or result of the wrong kind.
        """
        record, problem = self._read(task["key"])
        if record is not None:
            problem = self.check(record, task)
        if problem is not None:
            self.warn(f"the results store record {self.path(task['key'])} {problem}; computing the task again")
            return None
        if record is None or record["status"] not in FINAL_STATUSES:
            return None
        return record

    def put(self, task: dict, outcome: dict, point: dict | None = None) -> dict:
        """Write the record of ``task`` at once (:func:`write_atomically`) and return it.

        The record is the task's outcome (``status``, ``reason``, ``result``,
        times, worker...), the task's identity (:func:`task_identity`), the grid
        point as given, the record format and a checksum of all of it.
        """
        record = {"format": RECORD_FORMAT, **task, "point": _plain(point)}
        record.update((name, value) for name, value in _plain(outcome).items() if name not in record)
        record["checksum"] = record_checksum(record)
        text = json.dumps(record, indent=1)

        def write(temporary: Path) -> None:
            temporary.write_text(text, encoding="utf-8")

        path = self.path(task["key"])
        try:
            write_atomically(path, write)
        except OSError as err:
            raise SymattnError(f"cannot write the results store record {path}: {err.strerror or err}") from None
        return record

    def remove_leftovers(self) -> list[Path]:
        """Remove the temporary files of writes that never finished (call it while holding :meth:`lock`)."""
        removed = []
        for folder, pattern in ((self.folder, ".*.tmp"), (self.directory, ".results.*.tmp"),
                                (self.directory, ".sweep_*.tmp")):
            for path in folder.glob(pattern):
                try:
                    path.unlink()
                    removed.append(path)
                except OSError:
                    pass
        return removed

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("*.json"))
