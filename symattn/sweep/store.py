"""The results store of a sweep: one JSON file per finished task, written at once and atomically.

A task is keyed by a hash of its architecture, its analysis, the analysis's
options and the package version (:func:`task_key`), so a rerun with the same
grid finds every finished task and computes only the rest, and a new version
of the package computes everything anew.  Each record is written to a
temporary file in the store's folder and renamed over its final name
(:func:`os.replace`), so a reader (or a sweep stopped by Ctrl-C) never sees
half a record.

Examples
--------
>>> import tempfile
>>> store = ResultStore(tempfile.mkdtemp())
>>> key = task_key({"layers": 1}, "dimension", {"seed": 0})
>>> len(key), store.get(key) is None
(24, True)
>>> store.put(key, {"status": "ok", "result": {"lower": 7}})
>>> store.get(key)["result"], len(store)
({'lower': 7}, 1)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .. import __version__
from ..errors import SymattnError
from .grid import build_architecture

__all__ = ["ResultStore", "task_key", "FINAL_STATUSES"]

#: Statuses that a rerun reuses: the task finished (with a result, or with an error the analysis
#: itself raised, which would come again).  Time-outs, memory kills and lost workers are retried.
FINAL_STATUSES = ("ok", "error")


def _canonical_architecture(point: dict) -> dict:
    """The architecture of a point as the package describes it (so ``width=2`` and ``widths=2,2`` agree)."""
    arch = build_architecture(point)
    data = arch.to_json()
    data["normalizers"] = [n.to_json() for n in arch.normalizers]
    return data


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
    described = {"architecture": _canonical_architecture(point), "analysis": analysis,
                 "options": options, "version": version}
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


class ResultStore:
    """Finished tasks under ``directory/store/``, one ``KEY.json`` each.

    Parameters
    ----------
    directory : path
        The sweep's ``--out`` folder (created if missing).

    Examples
    --------
    >>> import tempfile
    >>> store = ResultStore(tempfile.mkdtemp())
    >>> store.put("abc", {"status": "timeout"})
    >>> store.get("abc"), store.get("missing"), store.folder.name
    ({'status': 'timeout'}, None, 'store')
    """

    def __init__(self, directory):
        self.folder = Path(directory) / "store"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SymattnError(f"cannot create the results store {self.folder}: {err.strerror or err}") from None

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The record of ``key``, or None when it is missing or unreadable (then it is computed again)."""
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: dict) -> None:
        """Write the record of ``key`` at once: a temporary file renamed over the final one."""
        text = json.dumps(record, indent=1, default=str)
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, self._path(key))
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("*.json"))
