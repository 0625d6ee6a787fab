"""The flags every subcommand shares, the Architecture they describe, and parsers of flag values.

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_common_arguments(parser)
>>> architecture_from_args(parser.parse_args(["--layers", "2", "--normalizer", "cosh"]))
Architecture(widths=[2, 2, 2], score_ranks=[1, 1], tokens=3, normalizer=['cosh', 'cosh'])
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import ResourceLimitError, ShapeError
from ..languages import PRESET_SUMMARY
from ..limits import MAX_LAYERS, MEMORY_ENVIRONMENT_VARIABLE, parse_size

if TYPE_CHECKING:  # the model loads sympy: imported where an Architecture is built
    from ..model import Architecture

__all__ = [
    "DEFAULT_LAYERS", "DEFAULT_WIDTH", "DEFAULT_RANK", "DEFAULT_TOKENS", "DEFAULT_NORMALIZER",
    "add_common_arguments", "architecture_from_args", "width_values", "width_spec", "heads_spec", "auto_or_int",
    "one_of",
    "memory_size", "parse_command", "examples_epilog", "close_options", "add_renamed_flag", "add_cluster_arguments",
    "check_output_flag", "connect_timeout_flag", "scheduler_flag", "add_connect_timeout_argument",
]

DEFAULT_LAYERS = 3
DEFAULT_WIDTH = 2
DEFAULT_RANK = 1
DEFAULT_TOKENS = 3
DEFAULT_NORMALIZER = "softmax"
#: The most widths one ``--width A..B`` or ``A,B,...`` of ``symattn dimension`` lists (a row of the table each).
MAX_WIDTH_VALUES = 1_000


# -- parsers of flag values -------------------------------------------------------------------
def width_spec(text: str):
    """``--width``: an int, or a tuple of ints for ``A..B`` and ``A,B,...`` (only ``dimension`` takes those).

    Examples
    --------
    >>> width_spec("3"), width_spec("3..5"), width_spec("2,4")
    (3, (3, 4, 5), (2, 4))
    >>> width_spec("1..100000000")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --width range '1..100000000' has 100000000 widths; a table has at most 1000 rows
    """
    text = text.strip()
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split("..", 1))
            if low > high:
                raise argparse.ArgumentTypeError(f"--width range {text!r} is empty: write A..B with A <= B")
            if high - low >= MAX_WIDTH_VALUES:
                raise argparse.ArgumentTypeError(f"--width range {text!r} has {high - low + 1} widths; a table "
                                                 f"has at most {MAX_WIDTH_VALUES} rows")
            return tuple(range(low, high + 1))
        if "," in text:
            if text.count(",") >= MAX_WIDTH_VALUES:
                raise argparse.ArgumentTypeError(f"--width lists {text.count(',') + 1} widths; a table has at "
                                                 f"most {MAX_WIDTH_VALUES} rows")
            return tuple(int(part) for part in text.split(","))
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--width must be a positive integer (or, for `symattn dimension`, a range A..B or a list), "
            f"got {text!r}") from None


def heads_spec(text: str):
    """``--heads``: one integer (every layer), or comma-separated integers (one per layer).

    Examples
    --------
    >>> heads_spec("2"), heads_spec("1,3")
    (2, [1, 3])
    >>> heads_spec("two")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --heads must be a positive integer or comma-separated positive integers (one per layer) such as 1,2, got 'two'
    """
    try:
        values = [int(part) for part in text.strip().split(",")]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"--heads must be a positive integer or comma-separated positive integers "
                                         f"(one per layer) such as 1,2, got {text!r}")
    return values[0] if len(values) == 1 and "," not in text else values


def auto_or_int(flag: str):
    """A parser of ``flag``'s value: the word ``auto`` or an integer.

    Examples
    --------
    >>> parse = auto_or_int("--bank")
    >>> parse("auto"), parse("12")
    ('auto', 12)
    >>> parse("many")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --bank must be 'auto' or an integer, got 'many'
    """
    def parse(text: str):
        if text == "auto":
            return "auto"
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be 'auto' or an integer, got {text!r}") from None
    return parse


def one_of(flag: str, values: dict):
    """A parser of ``flag``'s value: one of the words of ``values`` (any case), mapped to its value.

    Examples
    --------
    >>> parse = one_of("--estimate", {"mpmath": "mpmath", "float64": "float64", "none": None})
    >>> parse("Float64"), parse("none")
    ('float64', None)
    >>> parse("sometimes")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --estimate must be mpmath, float64 or none, got 'sometimes'
    """
    words = list(values)
    accepted = ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]

    def parse(text: str):
        word = text.strip().lower()
        if word not in values:
            raise argparse.ArgumentTypeError(f"{flag} must be {accepted}, got {text!r}")
        return values[word]
    return parse


def memory_size(text: str) -> int:
    """``--max-memory``: a size such as ``16G`` or ``512M`` in bytes, or a usage error (exit 2).

    Examples
    --------
    >>> memory_size("16G") == 16 * 2**30
    True
    """
    try:
        return parse_size(text)
    except ResourceLimitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def check_output_flag(args: argparse.Namespace, dest: str = "certificate", flag: str = "--certificate",
                      inputs=()) -> None:
    """Refuse, before any computation, the file an output flag names when it is not a regular file or a new name.

    See :func:`symattn._files.check_output_path`: a symbolic link, a
    directory, a FIFO or a device is refused, as is a missing folder or one
    of ``inputs``.  Nothing happens when the flag was not given.

    Examples
    --------
    >>> check_output_flag(argparse.Namespace(certificate=None))
    >>> check_output_flag(argparse.Namespace(certificate="/dev/null"))
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --certificate /dev/null: a character device is there; an output replaces only a regular file or creates a new name: give a file name elsewhere
    """
    path = getattr(args, dest, None)
    if path is not None:
        from .._files import check_output_path

        check_output_path(path, flag, inputs)


# -- help and usage errors ------------------------------------------------------------------
def examples_epilog(examples) -> str | None:
    """The ``--help`` epilog of a subcommand: its example command lines, one a line.

    Give the subparser ``formatter_class=argparse.RawDescriptionHelpFormatter``
    so that the lines are kept as written (:func:`symattn.cli.build_parser` does).

    Examples
    --------
    >>> print(examples_epilog(["symattn spectrum --layers 2", "symattn spectrum --layers 4 --truncation 60"]))
    examples:
      symattn spectrum --layers 2
      symattn spectrum --layers 4 --truncation 60
    >>> examples_epilog([]) is None
    True
    """
    examples = list(examples)
    if not examples:
        return None
    return "examples:\n" + "\n".join(f"  {line}" for line in examples)


def close_options(word: str, parser: argparse.ArgumentParser) -> list[str]:
    """The visible option strings of ``parser`` closest to a mistyped ``word`` (``--layres`` -> ``--layers``).

    Python 3.11's argparse suggests nothing for an unknown flag; this is the
    suggestion :func:`symattn.cli.main` adds to the usage error.  Hidden
    options (renamed flags) are never suggested.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_common_arguments(parser)
    >>> close_options("--layres", parser), close_options("--tokes=3", parser), close_options("--zzz", parser)
    (['--layers'], ['--tokens'], [])
    """
    import difflib

    name = word.split("=", 1)[0]
    options = [option for action in parser._actions if action.help != argparse.SUPPRESS
               for option in action.option_strings if option.startswith("--")]
    return difflib.get_close_matches(name, options, n=1, cutoff=0.6)


def add_renamed_flag(parser: argparse.ArgumentParser, old: str, new: str, meaning: str = "") -> None:
    """A hidden flag ``old`` that refuses itself with a usage error (exit 2) naming its new spelling ``new``.

    Examples
    --------
    >>> parser = argparse.ArgumentParser(prog="symattn spectrum", exit_on_error=False)
    >>> add_renamed_flag(parser, "--order", "--truncation", "the truncation N")
    >>> parser.error = lambda message: print(message)
    >>> _ = parser.parse_args(["--order", "12"])
    --order was renamed --truncation (the truncation N): write --truncation 12
    """
    class Renamed(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            value = f" {values}" if values is not None else " N"
            parser.error(f"{old} was renamed {new}" + (f" ({meaning})" if meaning else "") + f": write {new}{value}")

    parser.add_argument(old, action=Renamed, nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


# -- common flags -------------------------------------------------------------------------
def add_cluster_arguments(parser: argparse.ArgumentParser, work: str) -> None:
    """``--scheduler ADDRESS`` and ``--workers N``: ``work`` runs on Dask workers, the rest here.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_cluster_arguments(parser, "the forward passes over jets")
    >>> args = parser.parse_args(["--workers", "2"])
    >>> args.scheduler, args.workers
    (None, 2)
    """
    parser.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_flag(("local",)), default=None,
                        help=f"compute {work} on the workers of this Dask scheduler (tcp://HOST:PORT or HOST:PORT, "
                             "a port from 1 to 65535; or local); the rest stays here; same result")
    parser.add_argument("--workers", metavar="N", type=int, default=None,
                        help=f"compute {work} on a local Dask cluster of N worker processes (when no "
                             "--scheduler; at most one per core); same result")
    add_connect_timeout_argument(parser)


def add_connect_timeout_argument(parser) -> None:
    """``--connect-timeout SECONDS``: how long a ``--scheduler`` has to answer before it is refused.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_connect_timeout_argument(parser)
    >>> parser.parse_args([]).connect_timeout, parser.parse_args(["--connect-timeout", "0.5"]).connect_timeout
    (None, 0.5)
    """
    from .._cluster import DEFAULT_CONNECT_TIMEOUT

    parser.add_argument("--connect-timeout", metavar="SECONDS", type=connect_timeout_flag, default=None,
                        help="seconds the --scheduler has to accept the connection and greet as a Dask scheduler "
                             f"before it is refused (default {DEFAULT_CONNECT_TIMEOUT:g})")


def connect_timeout_flag(text: str) -> float:
    """``--connect-timeout``: a number of seconds above 0 (at most a day), or a usage error (exit 2).

    Examples
    --------
    >>> connect_timeout_flag("2.5")
    2.5
    >>> connect_timeout_flag("inf")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --connect-timeout must be a number of seconds above 0 and at most 86400, got 'inf'
    """
    from .._cluster import check_connect_timeout
    from ..errors import SymattnError

    if len(text) > 40:
        raise argparse.ArgumentTypeError(f"--connect-timeout must be a number of seconds such as 5, got "
                                         f"{text[:40]!r}...")
    try:
        return check_connect_timeout(text)
    except SymattnError as err:
        raise argparse.ArgumentTypeError(str(err).replace("the connect timeout", "--connect-timeout", 1)) from None


def scheduler_flag(words=("local",)):
    """A parser of ``--scheduler``: one of ``words`` (any case) or a Dask scheduler address, read strictly.

    Examples
    --------
    >>> parse = scheduler_flag(("local",))
    >>> parse("LOCAL"), parse("127.0.0.1:8786")
    ('local', 'tcp://127.0.0.1:8786')
    >>> parse("127.0.0.1:1:2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: scheduler '127.0.0.1:1:2' is not a Dask scheduler address: the host '127.0.0.1:1' is not a host name or an IP address; give local, tcp://HOST:PORT or HOST:PORT with a port from 1 to 65535 (e.g. tcp://127.0.0.1:8786)
    """
    from .._cluster import check_scheduler_address
    from ..errors import SymattnError

    def parse(text: str) -> str:
        if text.strip().lower() in words:
            return text.strip().lower()
        try:
            return check_scheduler_address(text)
        except SymattnError as err:
            raise argparse.ArgumentTypeError(str(err).replace("; give ", f"; give {', '.join(words)}, ", 1)) from None
    return parse


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags every subcommand accepts: the network, the output format and the memory limit.

    :func:`symattn.cli.build_parser` calls it for every registered
    subcommand.  (A function rather than an argparse parent parser: parents
    lose the placement of mutually exclusive flags in their groups in ``--help``.)

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_common_arguments(parser)
    >>> args = parser.parse_args(["--widths", "2,3,2", "--latex"])
    >>> args.widths, args.latex, args.layers, args.normalizer
    ('2,3,2', True, None, 'softmax')
    >>> args = parser.parse_args(["--heads", "1,2", "--causal", "--residual"])
    >>> args.heads, args.causal, args.residual
    ([1, 2], True, True)
    """
    net = parser.add_argument_group("network")
    net.add_argument("--layers", metavar="L", type=int, default=None,
                     help=f"number of attention layers (default {DEFAULT_LAYERS}, "
                          "or the number given by --widths / --ranks)")
    widths = net.add_mutually_exclusive_group()
    widths.add_argument("--width", metavar="D", type=width_spec, default=None,
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
                     help=f"a preset ({PRESET_SUMMARY}) or an "
                          f"expression in x such as '1 + x**2' (default {DEFAULT_NORMALIZER}); "
                          "see the docs page 'Accepted input and limits'")
    net.add_argument("--heads", metavar="H|h1,...,hl", type=heads_spec, default=1,
                     help="attention heads per layer: one integer for every layer, or l comma-separated "
                          "integers (default 1); head h of layer i has its own Q_{i,h}, K_{i,h}, V_{i,h}")
    net.add_argument("--causal", action="store_true",
                     help="causal mask: query k attends to keys j <= k only")
    net.add_argument("--residual", action="store_true",
                     help="residual stream X_i = X_{i-1} + (attention output); needs d_i = d_{i-1}")
    net.add_argument("--bias", action="store_true",
                     help="biases in attention (Q x + b_Q, K x + b_K, V x + b_V) and in the feed-forward block; "
                          "on every curve b_Q, b_K, b_in collapse with their projections and every bias scales "
                          "with the input")
    net.add_argument("--ffn", metavar="M", type=int, default=None,
                     help="a feed-forward block W_out s(W_in x) of M hidden units on every token after each "
                          "layer's attention (with --residual it adds its input); W_in scales with the collapse")
    net.add_argument("--activation", metavar="NAME|EXPR", default="tanh",
                     help="the feed-forward block's activation s: tanh (default), sigmoid, softplus, gelu, or an "
                          "expression in x such as 'x + x**3'; real-analytic, not required positive")
    net.add_argument("--assume-positive", action="store_true",
                     help="accept a normalizer whose positivity on R symattn cannot decide "
                          "(s(0) > 0 and finite Taylor coefficients are still required)")
    out = parser.add_argument_group("output")
    fmt = out.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the result as one JSON object")
    fmt.add_argument("--latex", action="store_true", help="print the result as LaTeX (a fragment)")
    out.add_argument("--standalone", action="store_true",
                     help="with --latex: print a whole document (preamble, \\begin{document}), as --out writes it")
    out.add_argument("--quiet", action="store_true",
                     help="print only the result, no progress or commentary")
    out.add_argument("--out", metavar="DIR", default=None,
                     help="also write NAME.md, NAME.tex (a standalone document) and NAME.json "
                          "into DIR, creating it")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-memory", metavar="SIZE", type=memory_size, default=None,
                        help="memory a computation may use, e.g. 16G or 512M (default "
                             f"${MEMORY_ENVIRONMENT_VARIABLE}, else half of this machine's memory); a "
                             "computation estimated above it stops before it starts and says what fits")


def _int_list(text: str, flag: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ShapeError(
            f"{flag} must be comma-separated positive integers such as 2,3,2, got {text!r}"
        ) from None


def _layers(count: int) -> str:
    return f"{count} layer{'s' if count != 1 else ''}"


def width_values(args: argparse.Namespace) -> tuple[int, ...]:
    """The widths asked for with ``--width`` (several for a range or a list).

    Examples
    --------
    >>> width_values(argparse.Namespace(width=(3, 4, 5))), width_values(argparse.Namespace(width=None))
    ((3, 4, 5), (2,))
    """
    if isinstance(args.width, tuple):
        return args.width
    return (DEFAULT_WIDTH if args.width is None else args.width,)


def architecture_from_args(args: argparse.Namespace) -> "Architecture":
    """The Architecture described by the common flags.

    The number of layers comes from ``--widths`` (one less than the number
    of widths), ``--ranks`` or ``--layers``; those given must agree.

    Raises
    ------
    ShapeError
        When the flags disagree or a size is not a positive integer.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_common_arguments(parser)
    >>> architecture_from_args(parser.parse_args(["--widths", "2,3,2"]))
    Architecture(widths=[2, 3, 2], score_ranks=[1, 1], tokens=3, normalizer=['softmax', 'softmax'])
    >>> architecture_from_args(parser.parse_args(["--layers", "2", "--heads", "2", "--causal"]))
    Architecture(widths=[2, 2, 2], score_ranks=[1, 1], tokens=3, normalizer=['softmax', 'softmax'], heads=2, causal=True, residual=False)
    >>> architecture_from_args(parser.parse_args(["--layers", "3", "--widths", "2,3,2"]))
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
    # sympy loads here, once the flags are read: a usage error above answers without it
    from ..model import Architecture
    from ..normalizers import as_normalizer

    normalizer = as_normalizer(args.normalizer, assume_positive=getattr(args, "assume_positive", False))
    heads = getattr(args, "heads", 1)
    if isinstance(heads, list) and len(heads) != layers:
        raise ShapeError(f"--heads {','.join(map(str, heads))} lists {len(heads)} layers, the network has "
                         f"{_layers(layers)}; give one integer for every layer or one per layer")
    residual = bool(getattr(args, "residual", False))
    extra = ()
    ffn = getattr(args, "ffn", None)
    bias = bool(getattr(args, "bias", False))
    if ffn is not None:
        from ..model import feed_forward_block

        if ffn < 1 or ffn > MAX_LAYERS:
            raise ShapeError(f"--ffn must be a number of hidden units from 1 to {MAX_LAYERS}, got {ffn}")
        extra = feed_forward_block(ffn, getattr(args, "activation", "tanh"), residual=residual, bias=bias)
    elif getattr(args, "activation", "tanh") != "tanh":
        raise ShapeError(f"--activation {args.activation!r:.40} is the activation of a feed-forward block: "
                         "give --ffn M too")
    return Architecture(widths, ranks, tokens=args.tokens, normalizer=normalizer, heads=heads,
                        causal=bool(getattr(args, "causal", False)), residual=residual, extra=extra, bias=bias)


def parse_command(configure, argv) -> tuple[argparse.Namespace, "Architecture"]:
    """The flags of one command line and the Architecture they describe, as ``main`` reads them.

    For notebooks and examples: ``configure`` is a command's ``configure_NAME``
    (or None for the common flags alone), ``argv`` the words after the
    command's name.

    Examples
    --------
    >>> args, arch = parse_command(None, ["--layers", "2", "--tokens", "4"])
    >>> arch.widths, arch.tokens, args.quiet
    ((2, 2, 2), 4, False)
    """
    parser = argparse.ArgumentParser()
    add_common_arguments(parser)
    if configure is not None:
        configure(parser)
    args = parser.parse_args(argv)
    return args, architecture_from_args(args)
