"""``symattn spectrum``: the exact decay spectrum near simultaneous query/key collapse."""

from __future__ import annotations

from .arguments import add_cluster_arguments, add_renamed_flag, auto_or_int, check_output_flag
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_spectrum", "run_spectrum"]


def configure_spectrum(parser) -> None:
    """``--bank``, ``--truncation``, ``--seed``, ``--certificate``, ``--scheduler``, ``--workers`` (``--order``, the old name of ``--truncation``, is refused).

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_spectrum, ["--bank", "12", "--seed", "3"])
    >>> args.bank, args.truncation, args.seed, args.certificate
    (12, 'auto', 3, None)
    """
    parser.add_argument("--bank", type=auto_or_int("--bank"), default="auto",
                        help="'auto' (grow until separating) or the number of random inputs")
    parser.add_argument("--truncation", metavar="N", type=auto_or_int("--truncation"), default="auto",
                        help="'auto' or the truncation N: series kept mod eps^N (coefficients of eps^0..eps^(N-1)); "
                             "directions of valuation >= N are reported unresolved")
    add_renamed_flag(parser, "--order", "--truncation", "the truncation N, powers eps^0..eps^(N-1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")
    parser.add_argument("--certificate", metavar="FILE", default=None,
                        help="also write a certificate of the spectrum to FILE (JSON: a witness minor of the native "
                             "Jacobian whose pivot valuations are the exponents), which 'symattn verify FILE' "
                             "re-checks without trusting the engine")
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

    With ``--certificate FILE``, the certificate of that spectrum:

    >>> import os, tempfile
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "spectrum.json")
    >>> args, arch = parse_command(configure_spectrum, ["--layers", "2", "--quiet", "--certificate", path])
    >>> run_spectrum(args, arch).exponents, verify(path).verified
    ({0: 4, 1: 3, 5: 3}, True)
    """
    from ..spectrum import decay_spectrum

    certificate = getattr(args, "certificate", None)
    check_output_flag(args)  # a file --certificate may replace, before the computation
    if certificate is not None:
        from ..certificates import check_certifiable

        check_certifiable(arch)  # refused before the computation, not after it
    spectrum = decay_spectrum(arch, bank=args.bank, truncation=args.truncation, seed=args.seed,
                              progress=not args.quiet, scheduler=args.scheduler,
                              workers=args.workers)
    if certificate is not None:
        from ..certificates import write_spectrum_certificate

        write_spectrum_certificate(arch, certificate, result=spectrum)
        args.written = [*getattr(args, "written", []), certificate]
    return spectrum


COMMANDS = (
    Subcommand("spectrum", "exact decay spectrum of the native Jacobian near simultaneous query/key collapse",
               run_spectrum, configure_spectrum,
               examples=("symattn spectrum --layers 2",
                         "symattn spectrum --layers 3 --normalizer cosh --json",
                         "symattn spectrum --layers 4 --bank 20 --truncation 60",
                         "symattn spectrum --layers 6 --workers 2",
                         "symattn spectrum --layers 4 --certificate spectrum.json")),
)
