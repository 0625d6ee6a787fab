"""``symattn check``: claimed numbers and formulas checked against the engine (exit status 0 even when a claim is false).

A claim is a number (``contact_order(2) = 5``, ``kernel = 6``, ...; see
:data:`symattn.check.ACCEPTED_CLAIMS`) or the leading coefficient of a layer
as a matrix formula, ``leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J``
(the language of :func:`symattn.expand.matrix_formula`), compared with the
entrywise expansion by :func:`symattn.expand.check_formula_claim`.
"""

from __future__ import annotations

import json

from ..errors import SymattnError
from ..limits import read_input_file
from ..languages import ACCEPTED_CLAIMS, FORMULA_LANGUAGE
from .subcommand import Subcommand

__all__ = ["COMMANDS", "configure_check", "run_check", "read_claims_file"]


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
    """``--claim CLAIM`` (repeatable), ``--claims FILE``, ``--seed``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_check, ["--claim", "kernel = 1", "--claim", "dimension = 2", "--seed", "3"])
    >>> args.claim, args.claims, args.seed
    (['kernel = 1', 'dimension = 2'], None, 3)
    """
    parser.add_argument("--claim", action="append", default=[], metavar="CLAIM",
                        help="a claimed number, e.g. 'contact_order(3) = 17' (repeatable; accepted: "
                             + "; ".join(ACCEPTED_CLAIMS) + "), or a layer's leading coefficient as a matrix "
                             "formula, e.g. 'leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J' (" + FORMULA_LANGUAGE
                             + ")")
    parser.add_argument("--claims", metavar="FILE", default=None,
                        help="a file of claims, one per line ('#' starts a comment), or a JSON list")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random point and bank")


def run_check(args, arch):
    """:func:`symattn.check.check_claims` on the claims of ``--claim`` and ``--claims``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_check, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
    ...                           "--claim", "kernel = 1", "--claim", "dimension = 3"])
    >>> report = run_check(args, arch)
    >>> [(check.claim, check.verdict, check.computed) for check in report.checks]
    [('kernel = 1', True, 1), ('dimension = 3', False, 2)]
    >>> args, arch = parse_command(configure_check, ["--layers", "2", "--width", "1", "--tokens", "2", "--quiet",
    ...                           "--claim", "leading(2) = P*X*H*C_1*H*C_1.T*H*C_2*J/16"])
    >>> run_check(args, arch).checks[0].verdict
    True
    """
    from ..check import ClaimsReport, check_claims
    from ..expand import check_formula_claim, is_formula_claim, parse_formula_claim

    claims = list(args.claim)
    if args.claims:
        claims += read_claims_file(args.claims)
    if not claims:
        raise SymattnError("give at least one --claim 'contact_order(2) = 5' or --claims FILE; accepted: "
                           + "; ".join(ACCEPTED_CLAIMS) + "; or 'leading(i) = <matrix formula>'")
    formulas = [c for c in claims if is_formula_claim(c)]
    numbers = [c for c in claims if not is_formula_claim(c)]
    for claim in formulas:  # every formula read before any computation, like the numeric claims
        parse_formula_claim(arch, claim)
    checks = {}
    if numbers:
        checks.update(zip(numbers, check_claims(arch, numbers, seed=args.seed, progress=not args.quiet).checks))
    for claim in formulas:
        checks[claim] = check_formula_claim(arch, claim, seed=args.seed)
    return ClaimsReport(arch.to_json(), tuple(checks[c] for c in claims))


COMMANDS = (
    Subcommand("check", "check claimed numbers (contact orders, multiplicities, kernel, dimension, ...) and "
               "leading coefficients as matrix formulas against the engine; exit status 0 even when a claim "
               "is false", run_check, configure_check),
)
