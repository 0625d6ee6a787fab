"""``symattn check``: claimed numbers and formulas checked against the engine, as :func:`symattn.check.check_claims`.

A claim is a number (``contact_order(2) = 5``, ``kernel = 6``, ...; see
:data:`symattn.check.ACCEPTED_CLAIMS`), the leading coefficient of a layer
as a matrix formula, ``leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J``,
or a coefficient of the expansion along query/key collapse,
``F_0 = P*X*J/t``, ``F_1 = 0`` (the language of
:func:`symattn.expand.matrix_formula`, in the names the package prints:
:func:`symattn.expand.formula_names`).  ``F_n`` claims are checked on every
network ``symattn expand`` handles (heads, ``--causal``, ``--residual``,
``--bias``, ``--ffn``; past its size, at random rational points);
``leading(i)`` where the leading coefficients are derived, and reported
undecided, with the reason, elsewhere: a claim that cannot be decided never
stops the others.  ``--generic K`` (or
``--normalizer generic``, ``k = 1``) makes the normalizer generic Taylor
data, its coefficients ``c_j`` symbols.

Exit status: 0 when the claims were checked, whatever the verdicts; with
``--strict``, :data:`EXIT_REFUTED` (3) when a claim is false and
:data:`EXIT_UNDECIDED` (4) when none is false but one is undecided; 2 for a
usage error (as every command).
"""

from __future__ import annotations

import json

from ..errors import SymattnError
from ..limits import read_input_file
from ..languages import ACCEPTED_CLAIMS, FORMULA_CLAIMS, FORMULA_LANGUAGE
from .arguments import check_output_flag
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_check", "run_check", "read_claims_file", "EXIT_REFUTED", "EXIT_UNDECIDED",
           "EXAMPLES"]

#: Exit status of ``symattn check --strict`` when a claim is refuted (2 is a usage error, 1 an internal one).
EXIT_REFUTED = 3
#: Exit status of ``symattn check --strict`` when no claim is refuted but one is undecided.
EXIT_UNDECIDED = 4

#: The command lines ``symattn check --help`` shows.
EXAMPLES = (
    "symattn check --layers 2 --width 2 --tokens 3 --claim 'contact_order(2) = 5' --claim 'kernel = 6'",
    "symattn check --layers 2 --width 1 --tokens 2 --generic 1 --claim 'F_0 = P*X*J/t' --claim 'F_1 = 0'",
    "symattn check --layers 2 --width 1 --tokens 2 --claim 'leading(2) = P*X*H*C_1*H*C_1.T*H*C_2*J/16' --strict",
    "symattn check --layers 1 --width 1 --tokens 2 --residual --bias --claim 'F_0 = X + V*X*J/t + bVt1*ones(1, t)'",
    "symattn check --layers 2 --claims claims.txt --latex --standalone > claims.tex",
    "symattn check --layers 2 --claim 'dimension = 9' --claim 'kernel = 6' --certificate claims.json",
)



def read_claims_file(path: str) -> list[str]:
    """The claims of ``--claims FILE``: one per line (``#`` starts a comment), or a JSON list of strings.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "claims.txt").write_text("kernel = 6  # the gauge orbit\\n\\ndimension = 10\\n")
    >>> read_claims_file(str(folder / "claims.txt"))
    ['kernel = 6', 'dimension = 10']
    """
    text = read_input_file(path, f"--claims {path}")
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            claims = json.loads(stripped)
        except json.JSONDecodeError as err:
            raise SymattnError(f"--claims {path}: not a JSON list of strings ({err})") from None
        except RecursionError:
            raise SymattnError(f"--claims {path}: nested too deeply to be a JSON list of strings") from None
        if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
            raise SymattnError(f"--claims {path}: a JSON file must hold a list of claim strings")
        return claims
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def configure_check(parser) -> None:
    """``--claim CLAIM`` (repeatable), ``--claims FILE``, ``--generic K``, ``--strict``, ``--seed``, ``--certificate``.

    ``--normalizer generic`` is accepted here as ``--generic 1``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_check, ["--claim", "kernel = 1", "--claim", "dimension = 2", "--seed", "3"])
    >>> args.claim, args.claims, args.seed, args.generic, args.strict
    (['kernel = 1', 'dimension = 2'], None, 3, None, False)
    >>> args, arch = parse_command(configure_check, ["--layers", "1", "--normalizer", "generic", "--claim", "F_1 = 0"])
    >>> arch.normalizers[0].name
    'generic(k=1)'
    """
    parser.add_argument("--claim", action="append", default=[], metavar="CLAIM",
                        help="a claimed number, e.g. 'contact_order(3) = 17' (repeatable; accepted: "
                             + "; ".join(ACCEPTED_CLAIMS + FORMULA_CLAIMS) + "); a layer's leading coefficient "
                             "as a matrix formula, e.g. 'leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J'; or a "
                             "coefficient of the expansion along query/key collapse, e.g. 'F_0 = P*X*J/t', 'F_1 = 0' "
                             "(formulas: " + FORMULA_LANGUAGE + ")")
    parser.add_argument("--claims", metavar="FILE", default=None,
                        help="a file of claims, one per line ('#' starts a comment), or a JSON list")
    parser.add_argument("--generic", metavar="K", type=int, default=None,
                        help="replace the normalizers by generic Taylor data 1 + c_K x^K + ... (symbols c_j), as "
                             "'symattn expand --generic K'; '--normalizer generic' is --generic 1")
    parser.add_argument("--strict", action="store_true",
                        help=f"exit with status {EXIT_REFUTED} when a claim is false, {EXIT_UNDECIDED} when none is "
                             f"false but one is undecided (default: 0 whenever the claims were checked; 2 is a usage "
                             f"error)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")
    parser.add_argument("--certificate", metavar="FILE", default=None,
                        help="also write a certificate of the claims to FILE (JSON: numeric claims with the "
                             "certificates of the results they were settled against, formula claims on plain "
                             "networks with their formula as data, a random point mod a prime and the engine's "
                             "values there), which 'symattn verify FILE' re-checks without trusting the engine")


def _with_generic(args, arch):
    """The Architecture with ``--generic K`` (or ``--normalizer generic``) applied."""
    from ..normalizers import Normalizer

    generic = getattr(args, "generic", None)
    if generic is None:  # (--normalizer generic is already in the Architecture)
        return arch
    if isinstance(generic, bool) or generic < 1:
        raise SymattnError(f"--generic K takes a positive integer K (the first nonconstant degree of the "
                           f"normalizer 1 + c_K x^K + ...), got {generic}")
    if generic > 64:
        raise SymattnError(f"--generic {generic} is too large: at most 64 (an expansion through F_n needs "
                           f"n >= 2K to show layer 1's scores)")
    return arch.replace(normalizer=Normalizer.generic(generic))


def run_check(args, arch):
    """:func:`symattn.check.check_claims` on the claims of ``--claim`` and ``--claims``.

    With ``--strict`` a refuted claim sets ``args.exit_status`` to
    :data:`EXIT_REFUTED` (an undecided one to :data:`EXIT_UNDECIDED`); the
    report is printed all the same.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_check, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
    ...                           "--claim", "kernel = 1", "--claim", "dimension = 3"])
    >>> report = run_check(args, arch)
    >>> [(check.claim, check.verdict, check.computed) for check in report.checks]
    [('kernel = 1', True, 1), ('dimension = 3', False, 2)]
    >>> args, arch = parse_command(configure_check, ["--layers", "2", "--width", "1", "--tokens", "2", "--quiet",
    ...                           "--claim", "leading(2) = P*X*H*C_1*H*C_1.T*H*C_2*J/16", "--claim", "F_1 = 0"])
    >>> [check.verdict for check in run_check(args, arch).checks]
    [True, True]

    With ``--certificate FILE``, their certificate:

    >>> import os, tempfile
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "claims.json")
    >>> args, arch = parse_command(configure_check, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
    ...                           "--claim", "dimension = 1", "--certificate", path])
    >>> [check.verdict for check in run_check(args, arch).checks], verify(path).checked[-1][:58]
    ([False], 'dimension = 1: refuted: the dimension is at least 2 (the d')
    """
    from ..check import check_claims

    claims = list(args.claim)
    if args.claims:
        claims += read_claims_file(args.claims)
    if not claims:
        raise SymattnError("give at least one --claim 'contact_order(2) = 5' or --claims FILE; accepted: "
                           + "; ".join(ACCEPTED_CLAIMS + FORMULA_CLAIMS))
    arch = _with_generic(args, arch)
    certificate = getattr(args, "certificate", None)
    check_output_flag(args, inputs=[args.claims])  # a file --certificate may replace, before the computation
    if certificate is not None:
        from ..check import ClaimsReport
        from ..certificates import write_claims_certificate

        checks = []  # the engine's checks, computed once for the report and the certificate
        write_claims_certificate(arch, certificate, claims, seed=args.seed, progress=not args.quiet,
                                 on_checks=checks.extend)
        args.written = [*getattr(args, "written", []), certificate]
        report = ClaimsReport(arch.to_json(), tuple(checks))
    else:
        report = check_claims(arch, claims, seed=args.seed, progress=not args.quiet)
    if getattr(args, "strict", False):
        if report.refuted:
            args.exit_status = EXIT_REFUTED
        elif report.undecided:
            args.exit_status = EXIT_UNDECIDED
    return report


COMMANDS = (
    Subcommand("check", "check claimed numbers (contact orders, multiplicities, kernel, dimension, ...), leading "
               "coefficients and coefficients F_n of the expansion as matrix formulas against the engine; exit "
               f"status 0 even when a claim is false, unless --strict ({EXIT_REFUTED}: a claim is false, "
               f"{EXIT_UNDECIDED}: one is undecided)", run_check, configure_check, EXAMPLES),
)
