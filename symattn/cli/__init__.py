"""The ``symattn`` command.

Each subcommand builds an :class:`~symattn.model.Architecture` from the common
flags, computes one result in the library and prints it as Markdown (the
default), JSON (``--json``) or LaTeX (``--latex``).  The CLI computes nothing
itself.

Exit status: 0 on success; 2 for a user error (any
:class:`~symattn.errors.SymattnError`, a usage error found by argparse, a file
that cannot be read or written, or a computation that runs out of memory),
reported as one line ``symattn: error: <message>`` on standard error; 130
after Ctrl-C; 1 for an internal failure (set ``SYMATTN_DEBUG=1`` to see the
traceback).  ``symattn check --strict`` exits 3 when a claim is refuted and 4
when none is refuted but one is undecided (a command sets ``args.exit_status``).

Each subcommand lives in its own module of this package (``cli/spectrum.py``,
``cli/identify.py``, ...): a ``configure_NAME(parser)`` that adds its own flags,
a ``run_NAME(args, arch)`` that calls one library function and returns its
result value, and ``COMMANDS``, its :class:`Subcommand` objects.  Which of
them ``symattn`` offers, and in which order, is read from the registry of
analyses (:mod:`symattn.analyses`: each entry's ``command`` and ``command_module``).  The flags every subcommand shares and the Architecture they
describe are in :mod:`symattn.cli.arguments`.  A subcommand from outside the
package is one call to :func:`add_subcommand`::

    def run_spectrum(args, arch):
        return decay_spectrum(arch, truncation=args.truncation)   # a result value

    add_subcommand(
        "spectrum", "decay spectrum near collapse", run_spectrum,
        configure=lambda parser: parser.add_argument("--truncation", type=int, default=6),
        examples=["symattn spectrum --layers 2 --truncation 8"],
    )

Examples
--------
>>> main(["report", "--json", "--layers", "1", "--width", "1", "--quiet"])  # doctest: +ELLIPSIS
{
  "architecture": {
    "layers": 1,
...
0
>>> main(["report", "--tokens", "0"])
2
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Sequence

from .. import __version__
from .._cluster import connect_timeout_set
from .._files import write_atomically
from .._format import latex_document
from ..analyses import registered
from ..errors import SymattnError
from ..limits import memory_limit_set
from .arguments import add_common_arguments, architecture_from_args, close_options, examples_epilog, width_values
from .subcommand import Subcommand

__all__ = [
    "main", "add_subcommand", "add_common_arguments", "build_parser", "architecture_from_args",
    "width_values", "Subcommand", "SUBCOMMANDS",
]

PROG = "symattn"


#: Registered subcommands, in the order ``symattn --help`` lists them.
SUBCOMMANDS: dict[str, Subcommand] = {}


def add_subcommand(name: str, help: str, run, configure=None, examples=()) -> Subcommand:
    """Register the subcommand ``symattn NAME``.

    Parameters
    ----------
    name : str
        The subcommand, e.g. ``"spectrum"``; also the base name of the files
        ``--out DIR`` writes (``DIR/NAME.md``, ``DIR/NAME.tex``, ``DIR/NAME.json``).
    help : str
        One line for ``symattn --help``.
    run : callable
        ``run(args, arch) -> result``: ``args`` is the parsed namespace (common
        flags and the subcommand's own), ``arch`` the Architecture they
        describe.  The result needs ``to_json()`` and ``to_latex()``, and
        ``to_markdown()`` or a readable ``__str__``.  Raise a
        :class:`~symattn.errors.SymattnError` for a user's mistake.
    configure : callable, optional
        ``configure(parser)`` adds the subcommand's own arguments.
    examples : sequence of str, optional
        Command lines shown under the flags of ``symattn NAME --help``.

    Returns
    -------
    Subcommand

    Examples
    --------
    >>> class Hello:
    ...     def to_json(self): return {"hello": 1}
    ...     def to_latex(self): return "hello"
    ...     def __str__(self): return "hello"
    >>> _ = add_subcommand("hello", "say hello", lambda args, arch: Hello(),
    ...                    configure=lambda p: p.add_argument("--loud", action="store_true"))
    >>> main(["hello", "--json", "--loud"])
    {
      "hello": 1
    }
    0
    >>> del SUBCOMMANDS["hello"]
    """
    if name in SUBCOMMANDS:
        raise ValueError(f"subcommand {name!r} is already registered")
    command = Subcommand(name, help, run, configure, tuple(examples))
    SUBCOMMANDS[name] = command
    return command


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports a usage error on one line and exits with status 2.

    A mistyped flag or subcommand gets a suggestion (``did you mean
    --layers?``): Python 3.11's argparse has none.  An unknown flag is
    reported by the subcommand's own parser, so the error points to
    ``symattn NAME --help``.

    Examples
    --------
    >>> import contextlib, io
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     main(["spectrum", "--layres", "2"])
    2
    >>> print(err.getvalue().strip())
    symattn: error: unrecognized arguments: --layres 2; did you mean --layers? (see 'symattn spectrum --help')
    """

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        commands = getattr(self, "commands", None)
        command = getattr(namespace, "command", None)
        if extras and commands and command in commands:
            # the subcommand's parser knows its flags: it reports them (and is the --help to read)
            commands[command].error(self._unrecognized(extras, commands[command]))
        return namespace, extras

    @staticmethod
    def _unrecognized(extras, parser) -> str:
        message = "unrecognized arguments: " + " ".join(extras)
        suggestions = [(word, close) for word in extras if word.startswith("--")
                       for close in close_options(word, parser)]
        if suggestions:
            message += "; " + "; ".join(f"did you mean {close}?" if len(suggestions) == 1 else
                                       f"{word.split('=', 1)[0]}: did you mean {close}?"
                                       for word, close in suggestions)
        return message

    def error(self, message):
        if "unrecognized arguments:" in message and "did you mean" not in message:
            message = self._unrecognized(message.split("unrecognized arguments:", 1)[1].split(), self)
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:  # a mistyped subcommand or word (--curve): the closest accepted one
            import difflib

            accepted = re.findall(r"'([^']*)'", choice.group(2))
            close = difflib.get_close_matches(choice.group(1), accepted, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean '{close[0]}'?"
        print(f"{PROG}: error: {_one_line(message)} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one subparser per registered subcommand.

    Examples
    --------
    >>> args = build_parser().parse_args(["report", "--widths", "2,3,2", "--json"])
    >>> args.command, args.widths, args.json, args.tokens
    ('report', '2,3,2', True, 3)
    """
    parser = _Parser(
        prog=PROG,
        description="Identifiability and observability of deep normalized attention.",
        epilog="Every command prints its result as Markdown (the default), --json or --latex (add --standalone "
               "for a whole document); --out DIR also writes NAME.md, NAME.tex and NAME.json (and the report's "
               "figures) and says what it wrote. See 'symattn COMMAND --help' for a command's flags.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parser.commands = {}
    for command in SUBCOMMANDS.values():
        subparser = sub.add_parser(command.name, help=command.help, description=command.help,
                                   epilog=examples_epilog(command.examples),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
        add_common_arguments(subparser)
        if command.configure is not None:
            command.configure(subparser)
        parser.commands[command.name] = subparser
    return parser


# -- output ---------------------------------------------------------------------------------
def _markdown(result) -> str:
    if hasattr(result, "to_markdown"):
        return result.to_markdown()
    return str(result)


def _latex(result, standalone: bool) -> str:
    """``result.to_latex()``, or a standalone document: the result's own when it makes one, else wrapped."""
    if not standalone:
        return result.to_latex()
    if "standalone" in inspect.signature(result.to_latex).parameters:
        return result.to_latex(standalone=True)
    return latex_document(result.to_latex())


def _render(result, args) -> str:
    if args.json:
        return json.dumps(result.to_json(), indent=2)
    if args.latex:
        return _latex(result, getattr(args, "standalone", False))
    if hasattr(result, "to_terminal"):  # standard output: verdicts first, no display math (the report)
        return result.to_terminal()
    return _markdown(result)


def _write_files(name: str, result, directory: str) -> list[Path]:
    """Write ``NAME.md``, ``NAME.tex`` (standalone), ``NAME.json`` and the result's figures into ``directory``.

    A result with figures (a report) places each one, with its caption, after
    its section: as PNG in the Markdown, as PDF in the LaTeX (SVG beside them).
    """
    folder = Path(directory)
    figures = result.figures() if hasattr(result, "figures") else []
    if figures:
        markdown, latex = result.to_markdown(figures=True), result.to_latex(standalone=True, figures=True)
    else:
        markdown, latex = _markdown(result), _latex(result, standalone=True)
    files = {
        folder / f"{name}.md": markdown,
        folder / f"{name}.tex": latex,
        folder / f"{name}.json": json.dumps(result.to_json(), indent=2),
    }
    written = list(files)
    drawn = [(folder / name, figure) for figure in figures for name in figure.files()]
    from .._files import check_output_path

    for path, _ in drawn if folder.is_dir() else ():  # every name checked before the first is written
        check_output_path(path, "--out")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():  # whole or not at all: a full disk leaves the old file
            write_atomically(path, lambda temporary, text=text: temporary.write_text(text.rstrip("\n") + "\n",
                                                                                     encoding="utf-8"))
        for path, figure in drawn:  # the format read from the suffix, which the temporary file keeps
            write_atomically(path, lambda temporary, figure=figure: figure.draw(str(temporary)), keep_suffix=True)
            written.append(path)
    except OSError as err:
        raise SymattnError(f"cannot write to --out {directory}: {err.strerror or err}") from None
    return written


def _require_writable(directory: str, name: str) -> None:
    """Refuse an ``--out`` folder that cannot be written, or whose ``NAME.*`` files are not regular files, before the computation rather than after it."""
    from .._files import check_output_folder, check_output_path

    folder = check_output_folder(directory, "--out")
    if folder.is_dir():
        for suffix in (".md", ".tex", ".json"):
            check_output_path(folder / f"{name}{suffix}", "--out")
    created = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(folder / ".symattn-write-check", lambda temporary: temporary.write_text(""))
        (folder / ".symattn-write-check").unlink()
    except OSError as err:
        raise SymattnError(f"cannot write to --out {directory}: {err.strerror or err}; choose a folder you can "
                           f"write") from None
    finally:  # nothing is left behind until there is something to write (the command may still fail)
        for parent in created:
            try:
                parent.rmdir()
            except OSError:
                pass


def _say_written(paths, args) -> None:
    """``symattn: wrote A, B, ...`` on standard error, unless ``--quiet``."""
    if paths and not args.quiet:
        print(f"{PROG}: wrote " + ", ".join(map(str, paths)), file=sys.stderr)


# -- main ---------------------------------------------------------------------------------
def _one_line(message: str) -> str:
    return " ".join(str(message).split()) or "(no message)"


def _quiet_from_now_on() -> None:
    """Send standard error nowhere for the rest of the process (after its last line, on Ctrl-C)."""
    try:
        sys.stderr.flush()
        nowhere = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nowhere, 2)
        os.close(nowhere)
    except (OSError, ValueError):
        pass


def _debug() -> bool:
    return os.environ.get("SYMATTN_DEBUG", "") not in ("", "0")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``symattn`` command; return the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for a user error, 1 for an internal failure (3 or 4: ``check --strict``).

    Examples
    --------
    >>> main(["report", "--quiet", "--layers", "1"])  # doctest: +ELLIPSIS
    # symattn report
    ...
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: usage error (2), --help or --version (0)
        return exit_.code if isinstance(exit_.code, int) else 2
    command = SUBCOMMANDS[args.command]
    try:
        if getattr(args, "standalone", False) and not args.latex:
            raise SymattnError("--standalone makes --latex print a whole document: add --latex")
        if args.out is not None:
            _require_writable(args.out, command.name)
        arch = architecture_from_args(args)
        args.written = []  # files the command's own flags write (--plot, --export), see Subcommand
        # one memory limit for every step of the command; a scheduler answers within --connect-timeout
        with memory_limit_set(getattr(args, "max_memory", None)), \
                connect_timeout_set(getattr(args, "connect_timeout", None)):
            result = command.run(args, arch)
        text = _render(result, args)
        written = list(args.written)
        if args.out is not None:
            written += _write_files(command.name, result, args.out)
        _say_written(written, args)
        print(text)
        return int(getattr(args, "exit_status", 0))  # a command's verdict status (check --strict: 3, 4)
    except SymattnError as err:
        if _debug():
            traceback.print_exc()
        print(f"{PROG}: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        if argv is None:  # the program itself: what Dask's exit handlers still say would follow the one line
            _quiet_from_now_on()
        return 130
    except OSError as err:  # a file the user named: missing folder, no permission, full disk
        if isinstance(err, BrokenPipeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0
        if _debug():
            traceback.print_exc()
        where = f" {err.filename}" if err.filename else ""
        print(f"{PROG}: error: cannot use the file{where}: {_one_line(err.strerror or err)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"{PROG}: error: the computation ran out of memory; choose smaller sizes (fewer layers, "
              "tokens or a smaller width) or a smaller --bank / --truncation", file=sys.stderr)
        return 2
    except Exception as err:
        if _debug():
            traceback.print_exc()
        print(f"{PROG}: internal error: {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
        print(f"{PROG}: this is a bug in symattn; please report it with the command you ran "
              "(set SYMATTN_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 1


# -- the built-in subcommands: the analyses of the registry (symattn.analyses), in its order ------
def _registered_subcommand(entry) -> Subcommand:
    """The :class:`Subcommand` named by a registered analysis, from the ``COMMANDS`` of its module of this package."""
    import importlib

    module = importlib.import_module(entry.command_module)
    for command in module.COMMANDS:
        if command.name == entry.command:
            return command
    raise LookupError(f"{entry.command_module}.COMMANDS has no subcommand {entry.command!r} (symattn.analyses)")


for _entry in registered("cli"):
    _command = _registered_subcommand(_entry)
    add_subcommand(_command.name, _command.help, _command.run, _command.configure, _command.examples)
del _entry, _command
