"""``symattn verify``: re-check a certificate with the independent checker :mod:`symattn.verifier`."""

from __future__ import annotations

from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_verify", "export_target", "run_verify"]


def configure_verify(parser) -> None:
    """The certificate to check: ``FILE``; ``--export sage|m2`` and ``--output SCRIPT``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_verify, ["dimension.json"])
    >>> args.certificate
    'dimension.json'
    """
    parser.add_argument("certificate", metavar="FILE",
                        help="a certificate written by --certificate FILE of 'symattn dimension', 'spectrum', "
                             "'identify' or 'check' (JSON)")
    parser.add_argument("--export", choices=("sage", "m2"), default=None,
                        help="also write the check of a dimension or spectrum certificate as a script for SageMath "
                             "(sage -python SCRIPT) or Macaulay2 (M2 --script SCRIPT), which recomputes the witness "
                             "minor there")
    parser.add_argument("--output", metavar="SCRIPT", default=None,
                        help="where --export writes the script (default: FILE with .sage.py or .m2 for .json)")
    parser.add_argument("--part", metavar="N", type=int, default=None,
                        help="with --export on a bundle (an identify or claims certificate): export its part N "
                             "(0-based; a dimension or spectrum certificate)")
    parser.add_argument("--max-operations", metavar="N", type=_operations, default=None,
                        help="refuse a certificate whose check, estimated from its header before any arithmetic, "
                             "takes more than N multiply-adds (default 2e11, about a minute); --max-memory bounds "
                             "its memory the same way")


def _operations(text: str) -> int:
    """``--max-operations``: a positive number of multiply-adds (``2e11`` or ``200000000000``), else a usage error.

    Examples
    --------
    >>> _operations("2e11"), _operations("1000")
    (200000000000, 1000)
    """
    import argparse
    import re
    from fractions import Fraction

    if len(text) > 30 or not re.fullmatch(r"[0-9]+(\.[0-9]+)?([eE][0-9]{1,2})?", text.strip()):
        raise argparse.ArgumentTypeError(f"--max-operations must be a positive number such as 2e11 or 1000000, got "
                                         f"{text[:30]!r}")
    value = int(Fraction(text.strip()))
    if value < 1:
        raise argparse.ArgumentTypeError(f"--max-operations must be at least 1, got {text!r}")
    return value


def export_target(args):
    """The script ``--export`` writes (``--output``, else ``FILE`` with ``.sage.py`` or ``.m2``), checked; ``None`` without ``--export``.

    It must be a new name or a regular file in an existing folder, and not
    the certificate itself (:func:`symattn._files.check_output_path`).

    Examples
    --------
    >>> import argparse
    >>> export_target(argparse.Namespace(certificate="cert.json", export="m2", output=None)).name
    'cert.m2'
    >>> export_target(argparse.Namespace(certificate="cert.m2", export="m2", output=None))
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --export m2 cert.m2 is the input file cert.m2 itself; give another name for the output
    >>> export_target(argparse.Namespace(certificate="cert.json", export=None, output="x.m2"))
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --output x.m2 names where --export writes its script: add --export sage or --export m2
    """
    from pathlib import Path

    from .._files import check_output_path
    from ..errors import SymattnError

    export, output = getattr(args, "export", None), getattr(args, "output", None)
    if export is None:
        if output is not None:
            raise SymattnError(f"--output {output} names where --export writes its script: add --export sage or "
                               "--export m2")
        return None
    suffix = ".sage.py" if export == "sage" else ".m2"
    target = Path(output) if output else Path(args.certificate).with_suffix(suffix)
    return check_output_path(target, "--output" if output else f"--export {export}", inputs=[args.certificate])


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

    With ``--export sage`` (or ``m2``), the check as a script for that system:

    >>> args, arch = parse_command(configure_verify, [path, "--export", "sage"])
    >>> _ = run_verify(args, arch)
    >>> args.written[0].endswith("dimension.sage.py"), "claimed = [0, 0]" in open(args.written[0]).read()
    (True, True)
    """
    from ..algebra.linalg import one_blas_thread
    from ..errors import SymattnError
    from ..verifier import CertificateError, verify

    from pathlib import Path

    target = export_target(args)  # refused before the check, not after it
    if getattr(args, "part", None) is not None and target is None:
        raise SymattnError(f"--part {args.part} picks the part of a bundle that --export writes: add --export sage "
                           "or --export m2")
    try:
        with one_blas_thread():  # as the engine computes: BLAS threads only contend at these sizes
            # a Path: FILE is always a file name, even one that starts with '{' or '['
            report = verify(Path(args.certificate), max_memory=getattr(args, "max_memory", None),
                            max_operations=getattr(args, "max_operations", None))
    except CertificateError as err:
        raise SymattnError(f"{args.certificate}: {err}") from None
    args.exit_status = 0 if report.verified else 1
    if target is not None:
        from .._files import write_atomically
        from ..verifier.export import export_script

        try:
            script = export_script(Path(args.certificate), args.export, getattr(args, "part", None))
        except CertificateError as err:
            raise SymattnError(f"{args.certificate}: {err}") from None
        write_atomically(target, lambda temporary: temporary.write_text(script, encoding="utf-8"))
        args.written = [*getattr(args, "written", []), str(target)]
    return report


COMMANDS = (
    Subcommand("verify", "re-check a certificate without trusting symattn (its independent checker)",
               run_verify, configure_verify,
               examples=("symattn verify dimension.json",
                         "symattn verify spectrum.json",
                         "symattn verify dimension.json --json",
                         "symattn verify dimension.json --export sage",
                         "symattn verify spectrum.json --export m2 --output spectrum-check.m2",
                         "symattn verify identify.json --export sage --part 0")),
)
