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
traceback).

Adding a subcommand is one call to :func:`add_subcommand`::

    def _run_spectrum(args, arch):
        return decay_spectrum(arch, order=args.order)   # a result value

    add_subcommand(
        "spectrum", "decay spectrum near collapse", _run_spectrum,
        configure=lambda parser: parser.add_argument("--order", type=int, default=6),
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
import json
import os
import sys
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from . import __version__
from .errors import DomainError, ResourceLimitError, ShapeError, SymattnError
from .limits import memory_limit_set
from .model import MAX_LAYERS, Architecture
from .normalizers import as_normalizer
from .report import architecture_report, latex_document

__all__ = [
    "main", "add_subcommand", "add_common_arguments", "build_parser", "architecture_from_args",
    "Subcommand",
]

PROG = "symattn"
DEFAULT_LAYERS = 3
DEFAULT_WIDTH = 2
DEFAULT_RANK = 1
DEFAULT_TOKENS = 3
DEFAULT_NORMALIZER = "softmax"


@dataclass(frozen=True)
class Subcommand:
    """A registered subcommand: ``symattn NAME [common flags] [its own flags]``.

    ``run(args, arch)`` returns a result value with ``to_json()`` and
    ``to_latex()``; ``to_markdown()`` is used when present, else ``str()``.
    ``configure(parser)`` adds the subcommand's own arguments.
    """

    name: str
    help: str
    run: Callable[[argparse.Namespace, Architecture], Any]
    configure: Callable[[argparse.ArgumentParser], None] | None = None


#: Registered subcommands, in the order ``symattn --help`` lists them.
SUBCOMMANDS: dict[str, Subcommand] = {}


def add_subcommand(name: str, help: str, run, configure=None) -> Subcommand:
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
    command = Subcommand(name, help, run, configure)
    SUBCOMMANDS[name] = command
    return command


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports a usage error on one line and exits with status 2."""

    def error(self, message):
        print(f"{PROG}: error: {_one_line(message)} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


# -- common flags -------------------------------------------------------------------------
def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags every subcommand accepts: the network and the output format.

    :func:`build_parser` calls it for every registered subcommand.  (A function
    rather than an argparse parent parser: parents lose the placement of
    mutually exclusive flags in their groups in ``--help``.)

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_common_arguments(parser)
    >>> args = parser.parse_args(["--widths", "2,3,2", "--latex"])
    >>> args.widths, args.latex, args.layers, args.normalizer
    ('2,3,2', True, None, 'softmax')
    """
    net = parser.add_argument_group("network")
    net.add_argument("--layers", metavar="L", type=int, default=None,
                     help=f"number of attention layers (default {DEFAULT_LAYERS}, "
                          "or the number given by --widths / --ranks)")
    widths = net.add_mutually_exclusive_group()
    widths.add_argument("--width", metavar="D", type=_width_spec, default=None,
                        help=f"every width d_0 = ... = d_l = D (default {DEFAULT_WIDTH}); "
                             "`symattn dimension` also takes a range A..B or a list A,B,...")
    widths.add_argument("--widths", metavar="d0,...,dl", default=None,
                        help="all widths, l + 1 comma-separated positive integers")
    ranks = net.add_mutually_exclusive_group()
    ranks.add_argument("--rank", metavar="A", type=int, default=None,
                       help=f"every score rank a_1 = ... = a_l = A (default {DEFAULT_RANK})")
    ranks.add_argument("--ranks", metavar="a1,...,al", default=None,
                       help="all score ranks, l comma-separated positive integers")
    net.add_argument("--tokens", metavar="T", type=int, default=DEFAULT_TOKENS,
                     help=f"number of tokens (default {DEFAULT_TOKENS})")
    net.add_argument("--normalizer", metavar="NAME|EXPR", default=DEFAULT_NORMALIZER,
                     help="a preset (softmax, cosh, quadratic, gauss, softplus, sigmoid, lightning) or an "
                          f"expression in x such as '1 + x**2' (default {DEFAULT_NORMALIZER}); "
                          "see the docs page 'Accepted input and limits'")
    net.add_argument("--assume-positive", action="store_true",
                     help="accept a normalizer whose positivity on R symattn cannot decide "
                          "(s(0) > 0 and finite Taylor coefficients are still required)")
    out = parser.add_argument_group("output")
    fmt = out.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the result as one JSON object")
    fmt.add_argument("--latex", action="store_true", help="print the result as LaTeX")
    out.add_argument("--quiet", action="store_true",
                     help="print only the result, no progress or commentary")
    out.add_argument("--out", metavar="DIR", default=None,
                     help="also write NAME.md, NAME.tex (a standalone document) and NAME.json "
                          "into DIR, creating it")
    from .limits import MEMORY_ENVIRONMENT_VARIABLE, size_argument

    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-memory", metavar="SIZE", type=size_argument, default=None,
                        help="memory a computation may use, e.g. 16G or 512M (default "
                             f"${MEMORY_ENVIRONMENT_VARIABLE}, else half of this machine's memory); a "
                             "computation estimated above it stops before it starts and says what fits")


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
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in SUBCOMMANDS.values():
        subparser = sub.add_parser(command.name, help=command.help, description=command.help)
        add_common_arguments(subparser)
        if command.configure is not None:
            command.configure(subparser)
    return parser


def _int_list(text: str, flag: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ShapeError(
            f"{flag} must be comma-separated positive integers such as 2,3,2, got {text!r}"
        ) from None


def _layers(count: int) -> str:
    return f"{count} layer{'s' if count != 1 else ''}"


def _width_spec(text: str):
    """An int, or a tuple of ints for ``A..B`` and ``A,B,...`` (only some subcommands accept those)."""
    text = text.strip()
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split("..", 1))
            if low > high:
                raise argparse.ArgumentTypeError(f"--width range {text!r} is empty: write A..B with A <= B")
            return tuple(range(low, high + 1))
        if "," in text:
            return tuple(int(part) for part in text.split(","))
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--width must be a positive integer (or, for `symattn dimension`, a range A..B or a list), "
            f"got {text!r}") from None


def width_values(args: argparse.Namespace) -> tuple[int, ...]:
    """The widths asked for with ``--width`` (several for a range or a list)."""
    if isinstance(args.width, tuple):
        return args.width
    return (DEFAULT_WIDTH if args.width is None else args.width,)


def architecture_from_args(args: argparse.Namespace) -> Architecture:
    """The Architecture described by the common flags.

    The number of layers comes from ``--widths`` (one less than the number
    of widths), ``--ranks`` or ``--layers``; those given must agree.

    Raises
    ------
    ShapeError
        When the flags disagree or a size is not a positive integer.

    Examples
    --------
    >>> parse = build_parser().parse_args
    >>> architecture_from_args(parse(["report", "--widths", "2,3,2"]))
    Architecture(widths=[2, 3, 2], score_ranks=[1, 1], tokens=3, normalizer=['softmax', 'softmax'])
    >>> architecture_from_args(parse(["report", "--layers", "3", "--widths", "2,3,2"]))
    Traceback (most recent call last):
    ...
    symattn.errors.ShapeError: --layers 3 (3 layers) disagrees with --widths 2,3,2 (2 layers); give matching values or drop one of them
    """
    widths = _int_list(args.widths, "--widths") if args.widths is not None else None
    ranks = _int_list(args.ranks, "--ranks") if args.ranks is not None else None
    sources = []  # (flag text, number of layers it gives)
    if args.layers is not None:
        if not 1 <= args.layers <= MAX_LAYERS:
            raise ShapeError(f"--layers must be an integer from 1 to {MAX_LAYERS}, got {args.layers}")
        sources.append((f"--layers {args.layers}", args.layers))
    if widths is not None:
        if len(widths) < 2:
            raise ShapeError(
                f"--widths needs d_0, ..., d_l: at least two widths, got {args.widths!r}"
            )
        sources.append((f"--widths {args.widths}", len(widths) - 1))
    if ranks is not None:
        sources.append((f"--ranks {args.ranks}", len(ranks)))
    layers = sources[0][1] if sources else DEFAULT_LAYERS
    for flag, count in sources[1:]:
        if count != layers:
            raise ShapeError(
                f"{sources[0][0]} ({_layers(layers)}) disagrees with {flag} ({_layers(count)}); "
                "give matching values or drop one of them"
            )
    if isinstance(args.width, tuple):
        if not getattr(args, "accepts_width_range", False):
            raise ShapeError(f"--width takes one integer here; a range or list of widths is for "
                             f"`symattn dimension`, got {','.join(map(str, args.width))}")
        args = argparse.Namespace(**{**vars(args), "width": args.width[0]})
    if widths is None:
        widths = [DEFAULT_WIDTH if args.width is None else args.width] * (layers + 1)
    if ranks is None:
        ranks = [DEFAULT_RANK if args.rank is None else args.rank] * layers
    normalizer = as_normalizer(args.normalizer, assume_positive=getattr(args, "assume_positive", False))
    return Architecture(widths, ranks, tokens=args.tokens, normalizer=normalizer)


# -- output ---------------------------------------------------------------------------------
def _markdown(result) -> str:
    if hasattr(result, "to_markdown"):
        return result.to_markdown()
    return str(result)


def _render(result, args) -> str:
    if args.json:
        return json.dumps(result.to_json(), indent=2)
    if args.latex:
        return result.to_latex()
    return _markdown(result)


def _write_files(name: str, result, directory: str) -> list[Path]:
    folder = Path(directory)
    figures = result.figures() if hasattr(result, "figures") else []
    markdown, latex = _markdown(result), result.to_latex()
    if figures:  # the figures are drawn beside the text files and referenced from them
        markdown += "\n\n## Figures\n\n" + "\n\n".join(f"![{Path(f).stem}]({f})" for f, _ in figures)
        latex += "\n\n\\subsection*{Figures}\n" + "\n".join(
            f"\\begin{{center}}\\includegraphics[width=0.8\\linewidth]{{{f}}}\\end{{center}}" for f, _ in figures)
    files = {
        folder / f"{name}.md": markdown,
        folder / f"{name}.tex": latex_document(latex),
        folder / f"{name}.json": json.dumps(result.to_json(), indent=2),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
        for filename, draw in figures:
            draw(str(folder / filename))
    except OSError as err:
        raise SymattnError(f"cannot write to --out {directory}: {err.strerror or err}") from None
    return list(files) + [folder / filename for filename, _ in figures]


# -- main ---------------------------------------------------------------------------------
def _one_line(message: str) -> str:
    return " ".join(str(message).split()) or "(no message)"


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
        0 on success, 2 for a user error, 1 for an internal failure.

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
        arch = architecture_from_args(args)
        with memory_limit_set(getattr(args, "max_memory", None)):  # one limit for every step of the command
            result = command.run(args, arch)
        text = _render(result, args)
        if args.out is not None:
            written = _write_files(command.name, result, args.out)
            if not args.quiet:
                print(f"{PROG}: wrote " + ", ".join(map(str, written)), file=sys.stderr)
        print(text)
        return 0
    except SymattnError as err:
        if _debug():
            traceback.print_exc()
        print(f"{PROG}: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
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
              "tokens or a smaller width) or a smaller --bank / --order", file=sys.stderr)
        return 2
    except Exception as err:
        if _debug():
            traceback.print_exc()
        print(f"{PROG}: internal error: {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
        print(f"{PROG}: this is a bug in symattn; please report it with the command you ran "
              "(set SYMATTN_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 1


# -- subcommands ----------------------------------------------------------------------------
def _run_report(args: argparse.Namespace, arch: Architecture):
    from .report import Section
    from .spectrum import decay_spectrum

    def unavailable(title, key, err):
        # a section over the memory limit is skipped, and says so; the rest of the report goes on
        note = (f"skipped: over the memory limit: {err}" if isinstance(err, ResourceLimitError)
                else f"not computed: {err}")
        return Section(title, key, {"error": note, "skipped": isinstance(err, ResourceLimitError)}, note, note)

    report = architecture_report(arch)
    title = "Decay spectrum near query/key collapse"
    sections, spectrum = [], None
    try:
        spectrum = decay_spectrum(arch, progress=not args.quiet)
        sections.append(Section.from_result(title, "spectrum", spectrum, markdown=spectrum.to_markdown()))
    except ResourceLimitError as err:
        sections.append(unavailable(title, "spectrum", err))
    except DomainError as err:  # e.g. Taylor coefficients in Q(log 2): no exact engine
        note = f"not computed exactly: {err}"
        return report.with_sections(Section(title, "spectrum", {"error": note}, note, note))
    from .numeric import sensitivity

    sensitivity_title = "Numerical sensitivity (mpmath and float64)"
    if spectrum is None:
        note = "skipped: it compares with the decay spectrum, which is over the memory limit (see above)"
        sections.append(Section(sensitivity_title, "sensitivity", {"error": note, "skipped": True}, note, note))
    else:
        try:
            numbers = sensitivity(arch, spectrum=spectrum)
            sections.append(replace(Section.from_result(sensitivity_title, "sensitivity", numbers),
                                    figures=(("sensitivity.png", numbers.plot),)))
        except SymattnError as err:  # e.g. more digits than the limit: say so, keep the report
            sections.append(unavailable(sensitivity_title, "sensitivity", err))
    from .identify import identify

    identification_title = "Identifiability: dimension, generic fiber, identification orders"
    try:
        identification = identify(arch, progress=not args.quiet)
        sections.append(Section.from_result(identification_title, "identification", identification,
                                            markdown=identification.to_markdown()))
    except SymattnError as err:
        sections.append(unavailable(identification_title, "identification", err))
    from .observe import exceptional_fibers

    observability_title = "Observability under collapse"
    try:
        fibers = exceptional_fibers(arch, max_events=1, progress=not args.quiet)
        from .observe import dependency_graph, draw

        graph = dependency_graph(arch)
        sections.append(replace(Section.from_result(observability_title, "observability", fibers,
                                                    markdown=fibers.to_markdown()),
                                figures=(("dependency_graph.png", lambda path: draw(graph, path)),)))
    except SymattnError as err:  # e.g. lightning attention or one token: no verdicts to prove
        sections.append(unavailable(observability_title, "observability", err))
    return report.with_sections(*sections)


def _auto_or_int(what: str):
    def parse(text: str):
        if text == "auto":
            return "auto"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be 'auto' or an integer, got {text!r}") from None
        return value
    return parse


def _configure_spectrum(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bank", type=_auto_or_int("--bank"), default="auto",
                        help="'auto' (grow until separating) or the number of random inputs")
    parser.add_argument("--order", type=_auto_or_int("--order"), default="auto",
                        help="'auto' or the truncation N (coefficients of eps^0..eps^(N-1))")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")


def _run_spectrum(args: argparse.Namespace, arch: Architecture):
    from .spectrum import decay_spectrum

    return decay_spectrum(arch, bank=args.bank, order=args.order, seed=args.seed, progress=not args.quiet)


add_subcommand(
    "report",
    "summarize the architecture: parameters, effective dimension, gauge and sign symmetries",
    _run_report,
)


add_subcommand(
    "spectrum",
    "exact decay spectrum of the native Jacobian near simultaneous query/key collapse",
    _run_spectrum,
    configure=_configure_spectrum,
)


def _register_analysis_commands() -> None:
    """Subcommands defined beside their analyses: each module's ``CLI_COMMANDS``.

    ``CLI_COMMANDS`` is a list of dicts with the arguments of :func:`add_subcommand`.
    """
    import importlib

    for module_name in ("numeric", "identify", "observe", "expand", "check"):
        try:
            module = importlib.import_module(f"symattn.{module_name}")
        except ModuleNotFoundError as err:
            if err.name != f"symattn.{module_name}":
                raise
            continue
        for spec in getattr(module, "CLI_COMMANDS", ()):
            add_subcommand(**spec)


_register_analysis_commands()
