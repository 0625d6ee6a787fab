"""What makes an expression a normalizer: real-analytic on R, nonconstant, positive on R.

:func:`check_normalizer` refuses an expression that is not one, with a
:class:`~symattn.errors.NormalizerError` that names the culprit: a function
that is not analytic (``Abs``, ``Piecewise``, ...), a point where it is not
defined or not positive (:func:`symattn.positivity.decide_positivity`), or a
constant.
"""

from __future__ import annotations

import sympy as sp

from ..errors import NormalizerError
from ..positivity import decide_positivity
from .presets import x

__all__ = ["check_normalizer", "check_analytic_function"]

_NOT_ANALYTIC = (
    sp.Abs,
    sp.Piecewise,
    sp.sign,
    sp.Heaviside,
    sp.Max,
    sp.Min,
    sp.floor,
    sp.ceiling,
    sp.frac,
    sp.re,
    sp.im,
    sp.arg,
    sp.DiracDelta,
)


def check_analytic_function(expr: sp.Expr, name: str, what: str = "normalizer",
                            smooth: str = "exp(x), cosh(x) or 1 + x**2",
                            constant: str = "; attention with a constant normalizer is uniform") -> None:
    """Refuse a function of ``x`` that is not real-analytic on R or is constant (a normalizer, an activation).

    ``what`` names it in the messages, ``smooth`` lists what would be
    accepted instead, ``constant`` says why a constant is refused.

    Examples
    --------
    >>> check_analytic_function(sp.tanh(x), "tanh", what="activation")
    >>> check_analytic_function(sp.Abs(x), "Abs(x)", what="activation", smooth="tanh or x + x**2")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: activation Abs(x) is not real-analytic: it uses Abs; use a smooth expression such as tanh or x + x**2
    """
    bad = sorted({type(a).__name__ for a in expr.atoms(*_NOT_ANALYTIC)} | {
        type(f).__name__ for f in expr.atoms(sp.Function) if isinstance(f, _NOT_ANALYTIC)
    })
    if bad:
        raise NormalizerError(
            f"{what} {name} is not real-analytic: it uses {', '.join(bad)}; "
            f"use a smooth expression such as {smooth}"
        )
    if not expr.has(x) or sp.simplify(sp.diff(expr, x)) == 0:
        raise NormalizerError(f"{what} {name} is constant{constant}: give a nonconstant function of x")
    _check_domain(expr, name, what)


def check_normalizer(expr: sp.Expr, name: str, assume_positive: bool = False) -> None:
    """Raise :class:`~symattn.errors.NormalizerError` unless ``expr`` is a normalizer called ``name``.

    Real-analytic on all of R, nonconstant, and positive on R (decided
    exactly; with ``assume_positive`` an undecided case is accepted, but
    ``s(0) > 0`` is still required).

    Examples
    --------
    >>> check_normalizer(1 + x**2, "quadratic")
    >>> check_normalizer(1 + x**3, "1 + x**3")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: normalizer 1 + x**3 is not positive on R: at x = -2 it equals -7
    """
    check_analytic_function(expr, name)
    if assume_positive:
        # S(A) divides by s(0): even an assumed-positive normalizer needs s(0) > 0 exactly
        at_zero = sp.simplify(expr.subs(x, 0))
        if at_zero.is_positive is not True:
            raise NormalizerError(
                f"normalizer {name} has s(0) = {at_zero}; assume_positive still requires s(0) > 0 "
                "(attention normalizes by s/s(0))")
        return
    if expr.is_positive:
        return
    verdict = decide_positivity(expr, x)
    if verdict.positive:
        return
    if verdict.positive is False:
        point, value = verdict.witness
        shown = value if value.is_Rational else f"{value} = {sp.N(value, 8)}"
        raise NormalizerError(f"normalizer {name} is not positive on R: at x = {point} it equals {shown}")
    raise NormalizerError(
        f"cannot decide whether normalizer {name} is positive on R ({verdict.method}); "
        "if it is, pass --assume-positive (assume_positive=True in Python)"
    )


def _check_domain(expr: sp.Expr, name: str, what: str = "normalizer") -> None:
    if expr.is_polynomial(x):
        return
    try:
        from sympy.calculus.util import continuous_domain

        domain = continuous_domain(expr, x, sp.S.Reals)
    except Exception:  # sympy cannot decide: checked again by sampling
        return
    if domain != sp.S.Reals:
        gap = sp.S.Reals - domain
        raise NormalizerError(
            f"{what} {name} is not real-analytic on all of R "
            f"(not defined or not continuous on {gap}); {'an' if what[0] in 'aeiou' else 'a'} {what} must be "
            "analytic at every real number"
        )
