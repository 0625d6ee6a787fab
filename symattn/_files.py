"""Files the package writes: whole or not at all.

A result, a table or a record is written to a temporary file of its own beside
its final name and renamed over it once complete, so that a reader, a full
disk, a crash or a second writer never sees half a file.  The command line's
``--out``, the sweep's tables and its results store all write through
:func:`write_atomically`.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomically"]


def _new_temporary(path: Path) -> tuple[int, Path]:
    """A new, empty file with a unique name beside ``path`` (open for writing, with the umask's mode)."""
    for _ in range(100):
        temporary = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def write_atomically(path, write) -> Path:
    """Write ``path`` at once: ``write(temporary)`` fills a new file beside it, which then replaces ``path``.

    The temporary file has a name of its own (``.NAME.RANDOM.tmp`` in the same
    folder), so several writers never share one; it is flushed to disk and
    renamed over ``path`` (:func:`os.replace`) only once ``write`` returned, so
    ``path`` is always either the old file or the whole new one.  On any
    failure the temporary file is removed and the error propagates.

    Parameters
    ----------
    path : path
        The file to write.
    write : callable
        Called with the temporary file's path (a :class:`pathlib.Path`); writes the whole content there.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_atomically(folder / "a.txt", lambda p: p.write_text("whole")).read_text()
    'whole'
    >>> def fails(p):
    ...     p.write_text("half")
    ...     raise OSError(28, "No space left on device")
    >>> write_atomically(folder / "a.txt", fails)
    Traceback (most recent call last):
    ...
    OSError: [Errno 28] No space left on device
    >>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
    ('whole', ['a.txt'])
    """
    path = Path(path)
    handle, temporary = _new_temporary(path)
    try:
        os.close(handle)
        write(temporary)
        with open(temporary, "rb+") as stream:  # on disk before the rename: a crash leaves the old file or the new
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return path
