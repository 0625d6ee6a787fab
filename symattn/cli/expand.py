"""``symattn expand``: the exact expansion along query/key collapse, or a layer's leading coefficient."""

from __future__ import annotations

from ..expand import expand, leading_coefficient
from ..normalizers import Normalizer
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_expand", "run_expand"]


def configure_expand(parser) -> None:
    """``--order``, ``--generic K``, ``--leading LAYER``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_expand, ["--order", "4", "--generic", "2"])
    >>> args.order, args.generic, args.leading
    (4, 2, None)
    """
    parser.add_argument("--order", type=int, default=None,
                        help="highest power of eps kept (default: where layer 1's scores first appear)")
    parser.add_argument("--generic", metavar="K", type=int, default=None,
                        help="replace the normalizers by generic Taylor data 1 + c_K x^K + ... (symbols)")
    parser.add_argument("--leading", metavar="LAYER", type=int, default=None,
                        help="print the matrix formula of LAYER's leading coefficient instead")


def run_expand(args, arch):
    """:func:`symattn.expand.expand`, or with ``--leading`` :func:`~symattn.expand.leading_coefficient`.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_expand, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--order", "2"])
    >>> run_expand(args, arch).coefficients[1]
    Matrix([[0, 0]])
    >>> args, arch = parse_command(configure_expand, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--leading", "1"])
    >>> print(run_expand(args, arch).formula)
    (1/2)*Vt1*X*(I - (1/2)*1)*X.T*Kt1.T*Qt1*X
    """
    normalizer = Normalizer.generic(args.generic) if args.generic is not None else None
    if args.leading is not None:
        return leading_coefficient(arch, args.leading, normalizer)
    return expand(arch, order=args.order, normalizer=normalizer, progress=not args.quiet)


COMMANDS = (
    Subcommand("expand",
               "exact expansion F_0..F_n of the output along query/key collapse, or a layer's leading coefficient",
               run_expand, configure_expand),
)
