"""Files the package writes: whole or not at all.

A result, a table or a record is written to a temporary file of its own beside
its final name and renamed over it once complete, so that a reader, a full
disk, a crash or a second writer never sees half a file.  The command line's
``--out``, the sweep's tables and its results store all write through
:func:`write_atomically`.

An output replaces only a regular file, or creates a new name: a symbolic
link, a directory, a FIFO, a socket or a device at the path is refused
(:func:`check_output_path`), by the command line before any computation and
by :func:`write_atomically` again, just before its rename.

Examples
--------
>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> check_output_path(folder / "new.json", "--certificate") == folder / "new.json"
True
>>> check_output_path(folder, "--certificate")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symattn.errors.SymattnError: --certificate ...: a directory is there; an output replaces only a regular file or creates a new name: give a file name
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import SymattnError

__all__ = ["write_atomically", "check_output_path", "check_output_folder"]

_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(path: Path) -> str | None:
    """What is at ``path`` when it is neither absent nor a regular file (the link itself for a symbolic link)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # absent (its folder is checked on its own)
        return None
    if stat.S_ISREG(mode):
        return None
    for test, kind in _KINDS:
        if test(mode):
            if kind == "a symbolic link":
                try:
                    return f"a symbolic link (to {os.readlink(path)[:120]})"
                except OSError:
                    return kind
            return kind
    return "something that is not a regular file"


def _shown(path) -> str:
    text = str(path)
    return text if len(text) <= 200 else text[:200] + "..."


def _refusal(path, flag: str | None, kind: str) -> SymattnError:
    where = f"{flag} {_shown(path)}" if flag else _shown(path)
    return SymattnError(f"{where}: {kind} is there; an output replaces only a regular file or creates a new name: "
                        "give a file name" + (" elsewhere" if kind != "a directory" else ""))


def check_output_path(path, flag: str | None = None, inputs=()) -> Path:
    """``path`` as a Path when an output may be written there; a SymattnError of one line otherwise.

    Accepted: a new name, or a regular file (replaced whole), in an existing
    folder this process may write.  Refused: a symbolic link (even to a
    regular file), a directory, a FIFO, a socket, a device; a folder that
    does not exist or cannot be written; and the same file as one of
    ``inputs`` (a command never overwrites what it reads).  To be sure the
    folder can be written, an empty temporary file is created beside
    ``path`` and removed at once; nothing else is created or opened.

    Parameters
    ----------
    path : path
        Where the output would be written.
    flag : str, optional
        The flag that named it (``--certificate``), for the message.
    inputs : iterable of path, optional
        Files the command reads: ``path`` may not be one of them.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import os, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "old.json").write_text("{}")
    >>> check_output_path(folder / "old.json", "--certificate").name
    'old.json'
    >>> os.symlink(os.devnull, folder / "null")
    >>> check_output_path(folder / "null", "--certificate")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --certificate .../null: a symbolic link (to /dev/null) is there; an output replaces only a regular file or creates a new name: give a file name elsewhere
    >>> check_output_path(folder / "none" / "x.json", "--certificate")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --certificate .../none/x.json: the folder .../none does not exist; create it first or give a file in an existing folder
    >>> check_output_path(folder / "old.json", "--output", inputs=[folder / "old.json"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --output .../old.json is the input file .../old.json itself; give another name for the output
    """
    path = Path(path)
    where = f"{flag} {_shown(path)}" if flag else _shown(path)
    if not str(path) or path.name in ("", ".", ".."):
        raise SymattnError(f"{where}: not a file name; give a file name such as result.json")
    kind = _not_regular(path)
    if kind is not None:
        raise _refusal(path, flag, kind)
    parent = path.parent
    try:
        parent_mode = os.stat(parent).st_mode
    except FileNotFoundError:
        raise SymattnError(f"{where}: the folder {_shown(parent)} does not exist; create it first or give a file "
                           "in an existing folder") from None
    except OSError as err:
        raise SymattnError(f"{where}: the folder {_shown(parent)} cannot be read ({err.strerror or err}); give a "
                           "file in a folder you can write") from None
    if not stat.S_ISDIR(parent_mode):
        raise SymattnError(f"{where}: {_shown(parent)} is not a folder; give a file in an existing folder")
    try:  # a real try: permissions alone do not say it (a read-only mount, /proc)
        handle, temporary = _new_temporary(path)
        os.close(handle)
        os.unlink(temporary)
    except OSError as err:
        raise SymattnError(f"{where}: the folder {_shown(parent)} cannot be written ({err.strerror or err}); give "
                           "a file in a folder you can write") from None
    for source in inputs:
        if source is None:
            continue
        try:
            same = os.path.samefile(path, source)
        except OSError:
            same = False
        if same or os.path.abspath(path) == os.path.abspath(source):
            raise SymattnError(f"{where} is the input file {_shown(source)} itself; give another name for the "
                               "output")
    return path


def check_output_folder(directory, flag: str | None = None) -> Path:
    """``directory`` as a Path when outputs may be written into it (it exists as a folder, or may be created).

    A symbolic link to a folder is a folder here (its files are checked one by
    one by :func:`check_output_path`); a regular file, a FIFO or a device is refused.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> check_output_folder(folder / "new", "--out").name
    'new'
    >>> _ = (folder / "file").write_text("")
    >>> check_output_folder(folder / "file", "--out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --out .../file: a regular file is there, not a folder; give a folder (it is created when new)
    """
    directory = Path(directory)
    where = f"{flag} {_shown(directory)}" if flag else _shown(directory)
    try:
        mode = os.stat(directory).st_mode
    except (FileNotFoundError, NotADirectoryError):  # to be created (the caller finds out whether it can be)
        return directory
    except OSError as err:
        raise SymattnError(f"{where}: cannot be read ({err.strerror or err}); give a folder you can write") from None
    if not stat.S_ISDIR(mode):
        kind = "a regular file" if stat.S_ISREG(mode) else (_not_regular(directory) or "something")
        raise SymattnError(f"{where}: {kind} is there, not a folder; give a folder (it is created when new)")
    return directory


def _new_temporary(path: Path, suffix: str = "") -> tuple[int, Path]:
    """A new, empty file with a unique name beside ``path`` (open for writing, with the umask's mode)."""
    for _ in range(100):
        temporary = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp{suffix}"
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def write_atomically(path, write, keep_suffix: bool = False) -> Path:
    """Write ``path`` at once: ``write(temporary)`` fills a new file beside it, which then replaces ``path``.

    The temporary file has a name of its own (``.NAME.RANDOM.tmp`` in the same
    folder), so several writers never share one; it is flushed to disk and
    renamed over ``path`` (:func:`os.replace`) only once ``write`` returned, so
    ``path`` is always either the old file or the whole new one.  On any
    failure the temporary file is removed and the error propagates.

    Only a regular file is replaced: a symbolic link, a directory, a FIFO, a
    socket or a device at ``path`` is refused with a
    :class:`~symattn.errors.SymattnError` naming ``path``, before anything is
    written and again just before the rename (something put there
    meanwhile is left as it is, and the temporary file removed).

    Parameters
    ----------
    path : path
        The file to write.
    write : callable
        Called with the temporary file's path (a :class:`pathlib.Path`); writes the whole content there.
    keep_suffix : bool
        End the temporary file's name with ``path``'s suffix too (``.NAME.RANDOM.tmp.png``), for a
        writer that reads the format from it (matplotlib's ``savefig``).

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

    An error about the temporary file names the file asked for:

    >>> def full(p):
    ...     raise OSError(28, "No space left on device", str(p))
    >>> try:
    ...     write_atomically(folder / "a.txt", full)
    ... except OSError as err:
    ...     err.filename == str(folder / "a.txt")
    True
    >>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
    ('whole', ['a.txt'])
    >>> import os
    >>> os.mkfifo(folder / "fifo")
    >>> write_atomically(folder / "fifo", lambda p: p.write_text("whole"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: .../fifo: a FIFO (named pipe) is there; an output replaces only a regular file or creates a new name: give a file name elsewhere
    >>> sorted(p.name for p in folder.iterdir())
    ['a.txt', 'fifo']
    """
    path = Path(path)
    kind = _not_regular(path)
    if kind is not None:
        raise _refusal(path, None, kind)
    try:
        handle, temporary = _new_temporary(path, path.suffix if keep_suffix else "")
    except OSError as err:
        err.filename = str(path)  # the file the user named, not the temporary one
        raise
    try:
        os.close(handle)
        write(temporary)
        with open(temporary, "rb+") as stream:  # on disk before the rename: a crash leaves the old file or the new
            os.fsync(stream.fileno())
        kind = _not_regular(path)  # again: something put there while ``write`` ran is not replaced either
        if kind is not None:
            raise _refusal(path, None, kind)
        os.replace(temporary, path)
    except BaseException as err:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(err, OSError) and err.filename in (temporary, str(temporary)):
            err.filename = str(path)  # the file the user named, not the temporary one
        raise
    return path
