"""``symattn observe``: which blocks a collapse hides, by the dependency graph, proved by exact ranks."""

from __future__ import annotations

from ..errors import SymattnError
from .arguments import check_output_flag
from .subcommand import Subcommand

__all__ = ["COMMANDS", "EXPORT_FILES", "check_export_folder", "configure_observe", "run_observe"]


def configure_observe(parser) -> None:
    """The events (``--event``, also ``--collapse``; ``--bias-input``, ``--identical-tokens``), ``--exceptional``, ``--contact``, ...

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_observe, ["--collapse", "scores:1", "--collapse", "values:2",
    ...                                             "--bias-input"])
    >>> args.collapse, args.bias_input, args.identical_tokens, args.exceptional, args.max_events
    (['scores:1', 'values:2'], True, False, False, 2)

    ``--event`` is the same option, named as the API's ``observe(arch, events=...)``:

    >>> parse_command(configure_observe, ["--event", "scores:1", "--collapse", "values:2"])[0].collapse
    ['scores:1', 'values:2']
    """
    group = parser.add_argument_group("events")
    # one name with the API, observe(arch, events=[...]): --event; --collapse is its older name, kept as an alias
    group.add_argument("--event", "--collapse", dest="collapse", metavar="SPEC", action="append", default=[],
                       help="an event, as observe(arch, events=[...]) names it: scores:I (What_I = 0), values:I "
                            "(V_I = 0) or value-rank:I:R (V_I of rank R); "
                            "in a layer with several heads scores:I:H, values:I:H, value-rank:I:R:H hold in head "
                            "H only; identical-tokens or bias (as --identical-tokens, --bias-input); "
                            "repeat for several (--collapse SPEC is the same option, its older name)")
    group.add_argument("--bias-input", action="store_true",
                       help="inputs with a constant (bias) coordinate (the event 'bias'; --bias gives the network "
                            "biases)")
    group.add_argument("--identical-tokens", action="store_true", help="inputs whose tokens are all equal")
    parser.add_argument("--exceptional", action="store_true",
                        help="classify every single and pairwise event instead (a table)")
    parser.add_argument("--max-events", metavar="M", type=int, default=2,
                        help="with --exceptional: largest event set (default 2)")
    parser.add_argument("--contact", action="store_true",
                        help="also compute exact contact orders near each parameter event")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")
    parser.add_argument("--export", metavar="DIR", default=None,
                        help="write the marked graph as observe.dot, .graphml, .png, .pdf, .svg and .tikz into DIR")
    parser.add_argument("--certificate", metavar="FILE", default=None,
                        help="also write a certificate of the exact ranks on the set to FILE (JSON), which "
                             "'symattn verify FILE' re-checks without trusting the engine (score collapse, value "
                             "collapse and identical tokens)")


def run_observe(args, arch):
    """:func:`symattn.observe.observe` on the events, or with ``--exceptional`` :func:`~symattn.observe.exceptional_fibers`.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_observe, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
    ...                           "--collapse", "values:1"])
    >>> result = run_observe(args, arch)
    >>> result.collapsed, result.unobservable, result.agrees_with_rank
    (['values'], ['scores:1'], True)

    With ``--certificate FILE``, the certificate of the exact ranks on the set:

    >>> import os, tempfile
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "observe.json")
    >>> args, arch = parse_command(configure_observe, ["--layers", "2", "--width", "2", "--quiet",
    ...                           "--collapse", "scores:2", "--certificate", path])
    >>> run_observe(args, arch).observable, verify(path).verified
    (['scores:1', 'values'], True)
    """
    from ..observe import (
        bias_coordinate, dependency_graph, exceptional_fibers, export_graph, identical_tokens, observe, parse_event,
    )

    certificate = getattr(args, "certificate", None)
    check_output_flag(args)  # the files --certificate and --export may replace, before the computation
    if args.export:
        check_export_folder(args.export)
    if args.exceptional:
        if certificate is not None:
            raise SymattnError("--certificate certifies the ranks on one set: drop --exceptional, or give the "
                               "events with --collapse and --identical-tokens")
        if args.collapse or args.bias_input or args.identical_tokens or args.contact:
            raise SymattnError("--exceptional goes through all events itself: drop --collapse, --bias-input, "
                               "--identical-tokens and --contact")
        result = exceptional_fibers(arch, max_events=args.max_events, seed=args.seed, confirm=True,
                                    progress=not args.quiet, max_memory=args.max_memory)
        if args.export:
            _exported(args, export_graph(dependency_graph(arch), args.export))
        return result
    events = [parse_event(spec) for spec in args.collapse]
    if args.bias_input:
        events.append(bias_coordinate())
    if args.identical_tokens:
        events.append(identical_tokens())
    if certificate is not None:
        from ..certificates import check_observe_certifiable

        check_observe_certifiable(arch, events)  # refused before the computation, not after it
    result = observe(arch, events, seed=args.seed, contact=args.contact, progress=not args.quiet,
                     max_memory=args.max_memory)
    if args.export:
        _exported(args, export_graph(result, args.export))
    if certificate is not None:
        from ..certificates import write_observe_certificate

        write_observe_certificate(arch, certificate, result.rank.events, result=result.rank, seed=args.seed)
        args.written = [*getattr(args, "written", []), certificate]
    return result


#: The files ``--export DIR`` writes (:func:`symattn.observe.export_graph`).
EXPORT_FILES = tuple(f"observe.{ext}" for ext in ("dot", "graphml", "png", "pdf", "svg", "tikz"))


def check_export_folder(directory) -> None:
    """Refuse an ``--export`` folder, or a file of it, that is not a folder, a regular file or a new name.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> check_export_folder(folder)
    >>> os.symlink(os.devnull, os.path.join(folder, "observe.svg"))
    >>> check_export_folder(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --export .../observe.svg: a symbolic link (to /dev/null) is there; an output replaces only a regular file or creates a new name: give a file name elsewhere
    """
    from pathlib import Path

    from .._files import check_output_folder, check_output_path

    folder = check_output_folder(directory, "--export")
    if folder.is_dir():
        for name in EXPORT_FILES:
            check_output_path(folder / name, "--export")


def _exported(args, paths) -> None:
    """Record the files ``--export`` wrote: the command says which (unless ``--quiet``)."""
    if hasattr(args, "written"):
        args.written += paths


COMMANDS = (
    Subcommand("observe", "which blocks a collapse hides, by the dependency graph, proved by exact ranks",
               run_observe, configure_observe,
               examples=("symattn observe --layers 2 --collapse scores:1",
                         "symattn observe --layers 2 --exceptional",
                         "symattn observe --layers 2 --collapse values:1 --contact --export graph/",
                         "symattn observe --layers 2 --collapse scores:1 --certificate observe.json")),
)
