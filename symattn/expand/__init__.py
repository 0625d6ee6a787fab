"""Closed-form expansions of the network along a curve, and each layer's leading coefficient.

Along a curve ``theta_eps`` (default: the simultaneous query/key collapse
``Q_i = eps Qt_i, K_i = eps Kt_i, V_i = Vt_i``) the output is a power series
``F(theta_eps)(X) = sum_n eps^n F_n(X)``.  :func:`expand` computes the series
modulo ``eps^N`` (``truncation=N``: ``F_0, ..., F_{N-1}``) entry by entry as exact sympy expressions with the one
forward pass (:func:`symattn.model.forward`) over truncated series with exact
coefficients (:class:`~symattn.algebra.modseries.ExactSeriesDomain`): the base
point ``Qt_i, Kt_i, Vt_i`` and the input ``X`` are symbols, and so are the
Taylor coefficients ``c_k, c_{k+1}, ...`` of a generic normalizer.  The
coefficients are held as python-flint polynomials over Q (or rationals at a
numeric point) by subclasses that override only the coefficient field of
``ExactSeriesDomain``; expressions that are not polynomials over Q (irrational
Taylor coefficients) fall back to sympy coefficients.

:func:`leading_coefficient` gives, in matrix form valid for every width and
token count, the coefficient in which the scores of layer ``i`` first appear,
at order ``n_i`` (``2k 3^(i-1)`` for a common ``k``); :func:`verify_leading_coefficient`
compares it with the entrywise expansion.

The package, by job (each public name is defined in one module and
exported here):

- :mod:`~symattn.expand.expansions`: :func:`expand` and :class:`Expansion`;
- :mod:`~symattn.expand.leading`: :func:`leading_coefficient`,
  :func:`leading_orders` and :class:`LeadingCoefficient`;
- :mod:`~symattn.expand.formulas`: the orders and matrix forms they are built from;
- :mod:`~symattn.expand.verification`: :func:`verify_leading_coefficient` and
  the formula claims (:func:`check_formula_claim`);
- :mod:`~symattn.expand.names`: the package's symbols by name (:func:`symbols`),
  substitution by name, and the one table of the names of matrix formulas
  (:func:`formula_names`, shared by printing and reading);
- :mod:`~symattn.expand.to_sympy`, :mod:`~symattn.expand.printing`,
  :mod:`~symattn.expand.document`: python-flint to sympy, LaTeX with the
  package's names, the LaTeX document of an expansion;
- :mod:`~symattn.expand.sizes`: the size guards (:data:`~symattn.expand.sizes.MAX_PARAMS`, ...).

Claimed matrix formulas are read by :func:`symattn.parsing.matrix_formula`,
the package's one parser of user text (exported here as ``matrix_formula``).

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.normalizers import Normalizer
>>> from symattn.expand import expand
>>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2)
>>> F = expand(arch, truncation=3, normalizer=Normalizer.generic(k=1))
>>> F[0]
Matrix([[Vt1_11*x_11/2 + Vt1_11*x_12/2, Vt1_11*x_11/2 + Vt1_11*x_12/2]])
>>> F[1]
Matrix([[0, 0]])
"""

from __future__ import annotations

from .._modules import make_callable
from ..algebra.matrix_expressions import evaluate_matrix_expression
from ..languages import FORMULA_LANGUAGE
from ..parsing import matrix_formula
from .expansions import Expansion, expand
from .leading import LeadingCoefficient, leading_coefficient, leading_orders
from .names import FormulaNames, curve_symbols, formula_names, matrix_symbols, package_symbols, symbols
from .printing import CoefficientMatrix, latex
from .sizes import LATEX_MAX_TERMS, MAX_LEADING_LAYER, MAX_ORDER, MAX_PARAMS, MAX_TERMS, MAX_TOKENS, MAX_TRUNCATION
from .to_sympy import FlintToSympy, LazyCoefficients
from .verification import check_formula_claim, is_formula_claim, parse_formula_claim, verify_leading_coefficient

__all__ = [
    "Expansion",
    "CoefficientMatrix",
    "FlintToSympy",
    "latex",
    "package_symbols",
    "matrix_symbols",
    "formula_names",
    "FormulaNames",
    "symbols",
    "expand",
    "curve_symbols",
    "LeadingCoefficient",
    "leading_coefficient",
    "leading_orders",
    "verify_leading_coefficient",
    "evaluate_matrix_expression",
    "FORMULA_LANGUAGE",
    "is_formula_claim",
    "parse_formula_claim",
    "matrix_formula",
    "check_formula_claim",
    "MAX_PARAMS",
    "MAX_ORDER",
    "MAX_TRUNCATION",
    "LATEX_MAX_TERMS",
    "MAX_TOKENS",
    "MAX_LEADING_LAYER",
    "MAX_TERMS",
]

# `from symattn import expand` gives this module (it shares the function's name): calling it calls expand()
make_callable(__name__, "expand")
