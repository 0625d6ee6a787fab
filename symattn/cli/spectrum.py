"""``symattn spectrum``: the exact decay spectrum near simultaneous query/key collapse."""

from __future__ import annotations

from .arguments import add_cluster_arguments, add_renamed_flag, auto_or_int
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_spectrum", "run_spectrum"]


def configure_spectrum(parser) -> None:
    """``--bank``, ``--truncation``, ``--seed``, ``--scheduler``, ``--workers`` (``--order``, the old name of ``--truncation``, is refused).

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_spectrum, ["--bank", "12", "--seed", "3"])
    >>> args.bank, args.truncation, args.seed
    (12, 'auto', 3)
    """
    parser.add_argument("--bank", type=auto_or_int("--bank"), default="auto",
                        help="'auto' (grow until separating) or the number of random inputs")
    parser.add_argument("--truncation", metavar="N", type=auto_or_int("--truncation"), default="auto",
                        help="'auto' or the truncation N: series kept mod eps^N (coefficients of eps^0..eps^(N-1)); "
                             "directions of valuation >= N are reported unresolved")
    add_renamed_flag(parser, "--order", "--truncation", "the truncation N, powers eps^0..eps^(N-1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")
    add_cluster_arguments(parser, "the forward passes over jets (groups of bank inputs)")


def run_spectrum(args, arch):
    """:func:`symattn.spectrum.decay_spectrum` with the flags.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_spectrum, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet"])
    >>> spectrum = run_spectrum(args, arch)
    >>> spectrum.exponents, spectrum.rank, spectrum.kernel
    ({0: 1, 1: 1}, 2, 1)
    """
    from ..spectrum import decay_spectrum

    return decay_spectrum(arch, bank=args.bank, truncation=args.truncation, seed=args.seed,
                          progress=not args.quiet, scheduler=args.scheduler, workers=args.workers)


COMMANDS = (
    Subcommand("spectrum", "exact decay spectrum of the native Jacobian near simultaneous query/key collapse",
               run_spectrum, configure_spectrum,
               examples=("symattn spectrum --layers 2",
                         "symattn spectrum --layers 3 --normalizer cosh --json",
                         "symattn spectrum --layers 4 --bank 20 --truncation 60",
                         "symattn spectrum --layers 6 --workers 2")),
)
