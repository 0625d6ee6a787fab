"""``symattn identify`` and ``symattn dimension``: identifiability, certified exactly by default."""

from __future__ import annotations

import argparse

from .arguments import add_cluster_arguments, architecture_from_args, check_output_flag, one_of, width_values
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_identify", "run_identify", "configure_dimension", "run_dimension"]

#: ``--estimate``: a numerical estimate beside the certified result, or none (the default).
estimate_flag = one_of("--estimate", {"float64": "float64", "mpmath": "mpmath", "none": None})

#: ``--exact-check``: whether to check the vanishing below each order with symbolic parameters.
exact_check_flag = one_of("--exact-check", {"auto": "auto", "yes": True, "no": False})

_ESTIMATE_HELP = ("also estimate the dimension numerically: float64 (fast) or mpmath (30 digits, slow); "
                  "default none: the certified exact result only")


def configure_identify(parser) -> None:
    """``--seed``, ``--curve``, ``--estimate``, ``--exact-check``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_identify, ["--curve", "input-scaling", "--estimate", "float64", "--exact-check", "no"])
    >>> args.curve, args.estimate, args.exact_check, args.seed
    ('input-scaling', 'float64', False, 0)
    """
    parser.add_argument("--seed", type=int, default=0, help="seed of the random points and banks")
    parser.add_argument("--curve", choices=("collapse", "input-scaling"), default="collapse",
                        help="simultaneous query/key collapse (default) or input scaling X -> tau X")
    parser.add_argument("--estimate", type=estimate_flag, default=None, metavar="float64|mpmath",
                        help=_ESTIMATE_HELP)
    parser.add_argument("--exact-check", type=exact_check_flag, default="auto", metavar="auto|yes|no",
                        help="check the vanishing below each order exactly with symbolic parameters "
                             "(default: when cheap)")
    add_cluster_arguments(parser, "the dimension's groups of bank inputs")
    parser.add_argument("--certificate", metavar="FILE", default=None,
                        help="also write certificates of the dimension's lower bound and of the identification "
                             "orders to FILE (one JSON bundle), which 'symattn verify FILE' re-checks without "
                             "trusting the engine")


def run_identify(args, arch):
    """:func:`symattn.identify.identify` along the chosen curve.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_identify, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet"])
    >>> report = run_identify(args, arch)
    >>> report.dimension.lower, report.dimension.certified, [(o.block, o.order) for o in report.orders]
    (2, True, [('scores:1', 2)])

    With ``--certificate FILE``, the certificates of its dimension and orders:

    >>> import os, tempfile
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "identify.json")
    >>> args, arch = parse_command(configure_identify, ["--layers", "1", "--width", "1", "--tokens", "2",
    ...                                                 "--quiet", "--certificate", path])
    >>> run_identify(args, arch).dimension.lower, verify(path).verified
    (2, True)
    """
    from ..curves import collapse, input_scaling
    from ..identify import identify

    curve = collapse() if args.curve == "collapse" else input_scaling()
    certificate = getattr(args, "certificate", None)
    check_output_flag(args)  # a file --certificate may replace, before the computation
    if certificate is not None:
        from ..certificates import check_certifiable

        check_certifiable(arch, curve)  # refused before the computation, not after it
    report = identify(arch, curve=curve, seed=args.seed, progress=not args.quiet,
                      estimate=args.estimate, exact_check=args.exact_check, max_memory=args.max_memory,
                      scheduler=args.scheduler, workers=args.workers)
    if certificate is not None:
        from ..certificates import write_identify_certificate

        write_identify_certificate(arch, certificate, report=report, curve=curve, seed=args.seed)
        args.written = [*getattr(args, "written", []), certificate]
    return report


def configure_dimension(parser) -> None:
    """``--width`` accepts a range or a list here; ``--seed``, ``--estimate``, ``--scheduler``, ``--workers``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_dimension, ["--estimate", "mpmath", "--workers", "2"])
    >>> args.accepts_width_range, args.estimate, args.seed, args.workers, args.scheduler
    (True, 'mpmath', 0, 2, None)
    """
    parser.set_defaults(accepts_width_range=True)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random points and banks")
    parser.add_argument("--estimate", type=estimate_flag, default=None, metavar="float64|mpmath",
                        help=_ESTIMATE_HELP + " (an estimate column)")
    parser.add_argument("--certificate", metavar="FILE", default=None,
                        help="also write a certificate of the certified lower bound to FILE (JSON; one network: "
                             "one --width or --widths), which 'symattn verify FILE' re-checks without trusting "
                             "the engine")
    add_cluster_arguments(parser, "the groups of bank inputs (their compressed Jacobians)")


def run_dimension(args, arch):
    """:func:`symattn.identify.dimension_table` over every width of ``--width`` (or the one ``--widths``).

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_dimension, ["--layers", "1", "--width", "1..2", "--tokens", "2", "--quiet"])
    >>> table = run_dimension(args, arch)
    >>> [(row.width, row.lower, row.certified) for row in table.rows]
    [(1, 2, True), (2, 7, True)]

    With ``--certificate FILE`` (one network), the certificate of its lower bound:

    >>> import os, tempfile
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "dimension.json")
    >>> args, arch = parse_command(configure_dimension, ["--layers", "1", "--width", "2", "--tokens", "2",
    ...                                                  "--quiet", "--certificate", path])
    >>> run_dimension(args, arch).rows[0].lower, verify(path).verified
    (7, True)
    """
    from ..identify import dimension_table

    if args.widths is not None:
        architectures = [arch]
    else:
        architectures = [architecture_from_args(argparse.Namespace(**{**vars(args), "width": width}))
                         for width in width_values(args)]
    certificate = getattr(args, "certificate", None)
    check_output_flag(args)  # a file --certificate may replace, before the computation
    if certificate is not None:
        from ..certificates import check_certifiable
        from ..errors import SymattnError

        if len(architectures) != 1:
            raise SymattnError(f"--certificate certifies one network; --width gives {len(architectures)} widths: "
                               "give one width (e.g. --width 5) or --widths")
        check_certifiable(architectures[0])  # refused before the computation, not after it
    table = dimension_table(architectures=architectures, seed=args.seed, estimate=args.estimate,
                            progress=not args.quiet, max_memory=args.max_memory,
                            scheduler=args.scheduler, workers=args.workers)  # its certificate: the same route
    if certificate is not None:
        from ..certificates import write_dimension_certificate

        write_dimension_certificate(architectures[0], certificate, result=table.results[0])
        args.written = [*getattr(args, "written", []), certificate]
    return table


COMMANDS = (
    Subcommand("identify", "dimension of the function space, generic fiber, identification orders and jet ranks",
               run_identify, configure_identify,
               examples=("symattn identify --layers 2",
                         "symattn identify --layers 2 --normalizer cosh --estimate float64",
                         "symattn identify --layers 1 --curve input-scaling --json",
                         "symattn identify --layers 2 --certificate identify.json")),
    Subcommand("dimension", "certified dimension of the function space for one or several widths (HMK Figure 3)",
               run_dimension, configure_dimension,
               examples=("symattn dimension --layers 2 --rank 2 --width 3..10",
                         "symattn dimension --widths 3,2,3 --ranks 2,1",
                         "symattn dimension --layers 2 --rank 2 --width 5 --certificate dimension.json",
                         "symattn dimension --layers 2 --rank 2 --width 3,5 --estimate mpmath",
                         "symattn dimension --layers 2 --width 32 --rank 8 --tokens 8 --workers 2")),
)
