"""Checking hand calculations: claimed formulas and claimed numbers against the engine.

* :func:`check_expression` compares a claimed expression (or matrix) with a
  computed one: a proof when the difference simplifies to zero, otherwise
  exact evaluation at random rational points (Schwartz-Zippel), and a
  concrete counterexample when the claim is false.
* :func:`check_claim` / :func:`check_claims` compare claimed numbers for an
  architecture (``"contact_order(2) = 5"``, ``"kernel = 6"``, ...) with the
  values the engine computes (:func:`~symattn.spectrum.decay_spectrum`, the
  sign-flip action, identification orders), never with the formula being
  checked.

The package, by job (each public name is defined in one module and
exported here):

- :mod:`~symattn.check.expressions`: :func:`check_expression`, with the
  exact python-flint engine in :mod:`~symattn.check.polynomials` and the
  reading of both sides in :mod:`~symattn.check.sides`
  (:func:`is_package_name`);
- :mod:`~symattn.check.reading`: the claim language read
  (:func:`parse_claim`, :func:`is_coefficient_claim`,
  :func:`parse_coefficient_claim`);
- :mod:`~symattn.check.formulas`: formula claims
  (:func:`check_coefficient_claim`, a layer's ``leading(i) = ...``);
- :mod:`~symattn.check.numbers`: the engine that settles claimed numbers;
- :mod:`~symattn.check.claims`: :func:`check_claims`, :func:`check_claim`
  and :class:`ClaimsReport`.

Examples
--------
>>> import sympy as sp
>>> from symattn.check import check_expression
>>> a, b = sp.symbols("a b")
>>> check_expression((a + b)**2, a**2 + 2*a*b + b**2).verdict
True
>>> result = check_expression((a + b)**2, a**2 + b**2)
>>> result.verdict, result.counterexample is not None
(False, True)
"""

from __future__ import annotations

from ..languages import ACCEPTED_CLAIMS, FORMULA_CLAIMS
# (defined in symattn.verdicts, shared with symattn.expand; `from symattn.check import CheckResult` keeps working)
from ..verdicts import CheckResult, ClaimCheck, Counterexample  # noqa: F401
from .claims import ClaimsReport, check_claim, check_claims
from .expressions import check_expression
from .formulas import check_coefficient_claim
from .reading import MAX_CLAIM_LENGTH, is_coefficient_claim, parse_claim, parse_coefficient_claim
from .sides import is_package_name

__all__ = [
    "check_expression",
    "ClaimsReport",
    "check_claim",
    "check_claims",
    "parse_claim",
    "is_coefficient_claim",
    "parse_coefficient_claim",
    "check_coefficient_claim",
    "is_package_name",
    "ACCEPTED_CLAIMS",
    "FORMULA_CLAIMS",
]
