"""``symattn sweep``: analyses over a grid of architectures, on a Dask cluster, resumable under ``--out``.

The network flags of every command take a grid here: a single value, a list
``a,b,c`` or a range ``a..b`` (``--layers 1..4 --width 2..6 --rank 1,2
--normalizer softmax,cosh``; lists of ``--widths``/``--ranks`` are separated
by ``;``), or the grid comes from a TOML file (``--grid FILE``).  The command
reads the flags and calls :func:`symattn.sweep.sweep`; it computes nothing itself.
"""

from __future__ import annotations

import sys

from ..analyses import registered
from ..sweep import DEFAULT_TASK_TIMEOUT, read_grid_file, sweep
from .arguments import add_connect_timeout_argument, add_renamed_flag, auto_or_int, scheduler_flag
from .check import read_claims_file
from .subcommand import Subcommand

__all__ = ["COMMANDS", "SWEEP_FILES", "check_sweep_outputs", "configure_sweep", "run_sweep"]

_GRID_HELP = {
    "widths": "in a sweep: several lists separated by ';', e.g. 2,3,2;3,3,3",
    "ranks": "in a sweep: several lists separated by ';', e.g. 1,1;2,1",
    "heads": "in a sweep: a value, a list a,b,c or a range a..b (per-layer lists in a --grid file)",
}
_GRID_VALUES_HELP = "in a sweep: a value, a list a,b,c or a range a..b"
_GRID_FLAG_HELP = "in a sweep: alone, yes for every point; or yes, no, or yes,no for both"


def _more_help(text: str | None, more: str) -> str:
    """``text; more`` (a final full stop of ``text`` dropped)."""
    text = (text or "").rstrip()
    if text.endswith(".") and not text.endswith("..."):
        text = text[:-1]
    return f"{text}; {more}" if text else more


def _grid_flags(parser) -> list[tuple[str, str]]:
    """Turn the network flags of :func:`~symattn.cli.arguments.add_common_arguments` into grid flags.

    Each keeps its name and help, takes its text unread (the sweep reads
    values, lists and ranges) and stores it under ``grid_<name>``; the
    Architecture that every command is given is then the default one.
    The flags are found as argparse keeps them (``parser._actions``, each
    with the group it was added to), so a network flag added to the common
    flags becomes a grid flag here too.  A yes/no flag (``--causal``) is
    replaced by one that takes an optional value: alone it means yes for
    every point, ``--causal no`` no, and ``--causal yes,no`` both.
    Returns ``(field, dest)`` pairs.
    """
    fields, defaults = [], {}
    for action in list(parser._actions):
        container = getattr(action, "container", None)
        if getattr(container, "title", None) != "network" or not action.option_strings:
            continue
        field = action.dest
        defaults[field] = action.default
        if action.nargs == 0:  # a yes/no flag: alone yes for every point, or given yes, no or yes,no
            container._remove_action(action)
            for option in action.option_strings:  # the group shares the parser's table of option strings
                container._option_string_actions.pop(option, None)
            action = container.add_argument(*action.option_strings, nargs="?", const="yes", default=None,
                                            dest=f"grid_{field}", metavar="yes,no",
                                            help=_more_help(action.help, _GRID_FLAG_HELP))
        else:
            action.dest = f"grid_{field}"
            action.default = None
            action.type = None
            action.help = _more_help(action.help, _GRID_HELP.get(field, _GRID_VALUES_HELP))
        fields.append((field, action.dest))
    for action in parser._actions:
        if action.dest == "max_memory":
            action.help = _more_help(action.help, "in a sweep: for each task")
    parser.set_defaults(**defaults)
    return fields


def configure_sweep(parser) -> None:
    """Grid flags (the network flags), ``--grid``, ``--analysis``, the analyses' options and where to run.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_sweep, ["--layers", "1..3", "--width", "2,3", "--analysis",
    ...                                             "dimension,spectrum", "--workers", "2"])
    >>> args.grid_layers, args.grid_width, args.analysis, args.workers, args.task_timeout
    ('1..3', '2,3', 'dimension,spectrum', 2, 3600.0)
    >>> arch.layers  # the flags' default architecture, unused by the sweep
    3
    >>> args, _ = parse_command(configure_sweep, ["--causal", "yes,no", "--residual", "--layers", "1"])
    >>> args.grid_causal, args.grid_residual, args.grid_assume_positive
    ('yes,no', 'yes', None)
    """
    parser.set_defaults(grid_fields=_grid_flags(parser))
    grid = parser.add_argument_group("sweep")
    grid.add_argument("--grid", metavar="FILE", default=None,
                      help="a TOML file with a [grid] table (and optionally analyses and options); "
                           "grid flags given on the command line replace its fields")
    grid.add_argument("--analysis", metavar="A[,A...]", default=None,
                      help="analyses per point: " + ", ".join(entry.name for entry in registered("sweep"))
                           + " (default dimension, or the file's)")
    grid.add_argument("--seed", type=int, default=None, help="seed of the random points and banks (default 0)")
    grid.add_argument("--bank", type=auto_or_int("--bank"), default=None, help="spectrum: 'auto' or a bank size")
    grid.add_argument("--truncation", type=auto_or_int("--truncation"), default=None,
                      help="spectrum: 'auto' or the truncation N (series kept mod eps^N)")
    add_renamed_flag(grid, "--order", "--truncation", "the truncation N")
    grid.add_argument("--events", metavar="E[,E...]", action="append", default=None,
                      help="observe: one event set, e.g. scores:1 or values:1,bias (repeat for several sets; "
                           "default: no events)")
    grid.add_argument("--contact", action="store_true", default=None,
                      help="observe: also exact contact orders near each event")
    grid.add_argument("--claim", metavar="CLAIM", action="append", default=None,
                      help="check: a claim such as 'contact_order(2) = 5' (repeatable)")
    grid.add_argument("--claims", metavar="FILE", default=None, help="check: a file of claims, one per line")
    run = parser.add_argument_group("where it runs")
    run.add_argument("--scheduler", metavar="ADDRESS", default=None,
                     type=scheduler_flag(("local", "sequential", "synchronous")),
                     help="a Dask scheduler address (tcp://host:8786; default $DASK_SCHEDULER_ADDRESS, else a "
                          "local cluster), or local, sequential or synchronous")
    run.add_argument("--workers", metavar="N", type=int, default=None,
                     help="at most N worker processes in the local cluster (default one per core)")
    add_connect_timeout_argument(run)
    run.add_argument("--task-timeout", metavar="SECONDS", type=float, default=DEFAULT_TASK_TIMEOUT,
                     help=f"stop a task after this long and record it as timed out (default {DEFAULT_TASK_TIMEOUT:g})")


def _options(args) -> dict:
    """The analyses' options given on the command line (those not given are left to the file or the defaults)."""
    options = {}
    if args.seed is not None:
        options["seed"] = args.seed
    spectrum = {key: value for key, value in (("bank", args.bank), ("truncation", args.truncation)) if value is not None}
    observe = {}
    if args.events is not None:
        observe["events"] = [[e.strip() for e in group.split(",") if e.strip()] for group in args.events]
    if args.contact:
        observe["contact"] = True
    claims = list(args.claim or [])
    if args.claims:
        claims += read_claims_file(args.claims)
    for name, table in (("spectrum", spectrum), ("observe", observe), ("check", {"claims": claims} if claims else {})):
        if table:
            options[name] = table
    return options


#: The files a sweep writes into ``--out DIR`` beside its store (tables, then plots).
SWEEP_FILES = ("results.parquet", "results.csv", "sweep_dimension.png", "sweep_orders.png",
               "sweep_observability.png")


def check_sweep_outputs(directory) -> None:
    """Refuse an ``--out`` folder whose tables or plots are there as anything but regular files.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> check_sweep_outputs(folder)
    >>> os.mkfifo(os.path.join(folder, "results.csv"))
    >>> check_sweep_outputs(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --out .../results.csv: a FIFO (named pipe) is there; an output replaces only a regular file or creates a new name: give a file name elsewhere
    """
    from pathlib import Path

    from .._files import check_output_folder, check_output_path

    folder = check_output_folder(directory, "--out")
    if folder.is_dir():
        for name in SWEEP_FILES:
            check_output_path(Path(folder) / name, "--out")


def run_sweep(args, arch):
    """:func:`symattn.sweep.sweep` over the grid of the flags (and ``--grid FILE``).

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_sweep, ["--layers", "1..2", "--width", "1", "--tokens", "2",
    ...                                             "--scheduler", "synchronous", "--quiet"])
    >>> result = run_sweep(args, arch)
    >>> [(row["layers"], row["lower"], row["status"]) for row in result.rows]
    [(1, 2, 'ok'), (2, 3, 'ok')]
    """
    if args.out is not None:  # the tables and plots it writes there, refused before the sweep rather than after
        check_sweep_outputs(args.out)
    grid, analyses, options = {}, None, {}
    if args.grid is not None:
        spec = read_grid_file(args.grid)
        grid, analyses = dict(spec["grid"]), spec["analyses"]
        options = dict(spec["options"].pop("options", {}))
        options.update(spec["options"])
    for field, dest in args.grid_fields:
        value = getattr(args, dest)
        if value is not None:
            grid = {key: v for key, v in grid.items() if key.replace("-", "_") != field}
            grid[field] = value
    for key, value in _options(args).items():
        options[key] = {**options.get(key, {}), **value} if isinstance(value, dict) else value
    if args.analysis is not None:
        analyses = args.analysis
    result = sweep(grid, analyses, options=options, out=args.out, scheduler=args.scheduler, workers=args.workers,
                   task_timeout=args.task_timeout, memory_limit=args.max_memory, progress=not args.quiet)
    if hasattr(args, "written"):  # the command line says which files a command wrote
        args.written += list(result.files)
    elif result.files and not args.quiet:
        print("symattn: wrote " + ", ".join(map(str, result.files)), file=sys.stderr)
    return result


COMMANDS = (
    Subcommand("sweep", "run analyses over a grid of architectures (ranges and lists of the network flags, or a "
               "TOML file) on a Dask cluster; results kept and resumed under --out", run_sweep, configure_sweep,
               examples=("symattn sweep --layers 1..3 --width 2..4 --analysis dimension --out sweep-1",
                         "symattn sweep --layers 1..4 --normalizer softmax,cosh --analysis spectrum --out sweep-2",
                         "symattn sweep --grid grid.toml --scheduler tcp://host:8786 --out sweep-3")),
)
