"""``symattn sensitivity``: mpmath and float64 singular values and slopes near collapse."""

from __future__ import annotations

from pathlib import Path

from ..errors import SymattnError
from .subcommand import Subcommand

__all__ = ["COMMANDS", "PLOT_FORMATS", "configure_sensitivity", "plot_files", "plot_paths", "run_sensitivity"]


def configure_sensitivity(parser) -> None:
    """``--plot FILE.png``, ``--seed``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_sensitivity, ["--plot", "sigma.png", "--seed", "2"])
    >>> args.plot, args.seed
    ('sigma.png', 2)
    """
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="draw log10 sigma_j against log10 eps, mpmath and float64 side by side, into FILE "
                             "(.png, .pdf or .svg) and the other two formats beside it")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")


def run_sensitivity(args, arch):
    """:func:`symattn.numeric.sensitivity`; with ``--plot`` also its figure.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_sensitivity, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet"])
    >>> result = run_sensitivity(args, arch)
    >>> result.exponents, result.exact_rank, result.recovered
    ((0, 1), 2, True)
    """
    from ..numeric import sensitivity

    if args.plot:
        plot_paths(args.plot)  # refused before the computation, not after it
    result = sensitivity(arch, seed=args.seed)
    if args.plot:
        written = plot_files(result, args.plot)
        if hasattr(args, "written"):
            args.written += written
    return result


#: The formats ``--plot`` draws: the one its file names, then the others beside it.
PLOT_FORMATS = ("png", "pdf", "svg")


def plot_paths(target) -> list[Path]:
    """The files ``--plot FILE`` writes: ``FILE`` and the other formats beside it, each refused unless a new name or a regular file.

    Examples
    --------
    >>> [str(p) for p in plot_paths("sigma.png")]
    ['sigma.png', 'sigma.pdf', 'sigma.svg']
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "sigma.pdf").mkdir()
    >>> plot_paths(folder / "sigma.png")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --plot .../sigma.pdf: a directory is there; an output replaces only a regular file or creates a new name: give a file name
    """
    from .._files import check_output_path

    target = Path(target)
    suffix = target.suffix.lstrip(".").lower()
    if suffix not in PLOT_FORMATS:
        raise SymattnError(f"--plot {target}: give a file ending in .png, .pdf or .svg")
    paths = [target] + [target.with_suffix("." + ext) for ext in PLOT_FORMATS if ext != suffix]
    for path in paths:
        check_output_path(path, "--plot")
    return paths


def plot_files(result, target) -> list[Path]:
    """Draw ``result.plot`` into ``target`` and, beside it, in the other formats of :data:`PLOT_FORMATS`.

    Examples
    --------
    >>> import tempfile
    >>> from symattn.model import Architecture
    >>> from symattn.numeric import sensitivity
    >>> result = sensitivity(Architecture.uniform(layers=1), eps_values=["0.1", "0.01"])
    >>> [p.name for p in plot_files(result, Path(tempfile.mkdtemp()) / "sigma.pdf")]
    ['sigma.pdf', 'sigma.png', 'sigma.svg']
    >>> plot_files(result, "sigma.jpg")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --plot sigma.jpg: give a file ending in .png, .pdf or .svg
    """
    from .._files import write_atomically

    target = Path(target)
    paths = plot_paths(target)
    try:
        for path in paths:  # whole or not at all, and only over a regular file
            write_atomically(path, result.plot, keep_suffix=True)
    except OSError as err:
        raise SymattnError(f"cannot write --plot {target}: {err.strerror or err}") from None
    return paths


COMMANDS = (
    Subcommand("sensitivity", "numerical sensitivity: mpmath and float64 singular values and slopes near collapse",
               run_sensitivity, configure_sensitivity,
               examples=("symattn sensitivity --layers 2",
                         "symattn sensitivity --layers 3 --plot sigma.png")),
)
