"""``symattn verify``: re-check a certificate with the independent checker :mod:`symattn.verifier`."""

from __future__ import annotations

from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_verify", "run_verify"]


def configure_verify(parser) -> None:
    """The certificate to check: ``FILE``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_verify, ["dimension.json"])
    >>> args.certificate
    'dimension.json'
    """
    parser.add_argument("certificate", metavar="FILE",
                        help="a certificate written by 'symattn dimension --certificate FILE' or 'symattn spectrum "
                             "--certificate FILE' (JSON)")


def run_verify(args, arch):
    """:func:`symattn.verifier.verify` on ``FILE``; exit status 1 when it does not verify.

    The architecture flags are not read: the certificate holds its own
    architecture.  A file that is not a JSON object is a usage error (2).

    Examples
    --------
    >>> import os, tempfile
    >>> from symattn.cli.arguments import parse_command
    >>> from symattn.certificates import write_dimension_certificate
    >>> from symattn.model import Architecture
    >>> path = os.path.join(tempfile.mkdtemp(), "dimension.json")
    >>> _ = write_dimension_certificate(Architecture.uniform(layers=1, width=1, tokens=2), path)
    >>> args, arch = parse_command(configure_verify, [path])
    >>> report = run_verify(args, arch)
    >>> report.verified, args.exit_status
    (True, 0)
    """
    from ..algebra.linalg import one_blas_thread
    from ..errors import SymattnError
    from ..verifier import CertificateError, verify

    try:
        with one_blas_thread():  # as the engine computes: BLAS threads only contend at these sizes
            report = verify(args.certificate)
    except CertificateError as err:
        raise SymattnError(f"{args.certificate}: {err}") from None
    args.exit_status = 0 if report.verified else 1
    return report


COMMANDS = (
    Subcommand("verify", "re-check a certificate without trusting symattn (its independent checker)",
               run_verify, configure_verify,
               examples=("symattn verify dimension.json",
                         "symattn verify spectrum.json",
                         "symattn verify dimension.json --json")),
)
