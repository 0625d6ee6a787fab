"""``symattn sensitivity``: mpmath and float64 singular values and slopes near collapse."""

from __future__ import annotations

from ..numeric import sensitivity
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_sensitivity", "run_sensitivity"]


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
                        help="draw log10 sigma_j against log10 eps for mpmath and float64")
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
    result = sensitivity(arch, seed=args.seed)
    if args.plot:
        result.plot(args.plot)
    return result


COMMANDS = (
    Subcommand("sensitivity", "numerical sensitivity: mpmath and float64 singular values and slopes near collapse",
               run_sensitivity, configure_sensitivity),
)
