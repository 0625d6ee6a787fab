"""``symattn spectrum``: the exact decay spectrum near simultaneous query/key collapse."""

from __future__ import annotations

from ..spectrum import decay_spectrum
from .arguments import auto_or_int
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_spectrum", "run_spectrum"]


def configure_spectrum(parser) -> None:
    """``--bank``, ``--order``, ``--seed``."""
    parser.add_argument("--bank", type=auto_or_int("--bank"), default="auto",
                        help="'auto' (grow until separating) or the number of random inputs")
    parser.add_argument("--order", type=auto_or_int("--order"), default="auto",
                        help="'auto' or the truncation N (coefficients of eps^0..eps^(N-1))")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")


def run_spectrum(args, arch):
    """:func:`symattn.spectrum.decay_spectrum` with the flags."""
    return decay_spectrum(arch, bank=args.bank, order=args.order, seed=args.seed, progress=not args.quiet)


COMMANDS = (
    Subcommand("spectrum", "exact decay spectrum of the native Jacobian near simultaneous query/key collapse",
               run_spectrum, configure_spectrum),
)
