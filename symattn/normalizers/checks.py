"""What makes an expression a normalizer: real-analytic on R, nonconstant, positive on R.

:func:`check_normalizer` refuses an expression that is not one, with a
:class:`~symattn.errors.NormalizerError` that names the culprit: a function
that is not analytic (``Abs``, ``Piecewise``, ...), a non-integer power of a
base that is not positive on R (``x**(1/3)``), a point where it is not
defined or not positive (:func:`symattn.positivity.decide_positivity`), or a
constant.
"""

from __future__ import annotations

import sympy as sp

from ..errors import NormalizerError
from ..positivity import decide_positivity
from .presets import x

__all__ = ["check_normalizer", "check_analytic_function", "fractional_powers", "non_analytic_heads"]

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


def non_analytic_heads(expr) -> list[str]:
    """The names of the functions in ``expr`` that are not real-analytic (``Abs``, ``Max``, ``Piecewise``, ...).

    The one list both the normalizers' and activations' check and
    :func:`symattn.check.check_expression` refuse.  ``expr`` may be a
    sympy expression or matrix.

    Examples
    --------
    >>> non_analytic_heads(sp.Abs(x) + sp.Max(x, x**2, evaluate=False) + sp.exp(x))
    ['Abs', 'Max']
    >>> non_analytic_heads(sp.tanh(x))
    []
    """
    found, seen = set(), set()
    stack = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    while stack:  # each distinct subexpression once (an expansion shares most of its terms)
        node = stack.pop()
        if not isinstance(node, sp.Basic) or node in seen:
            continue
        seen.add(node)
        if isinstance(node, _NOT_ANALYTIC):
            found.add(type(node).__name__)
        stack.extend(node.args)
    return sorted(found)


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
    >>> check_analytic_function(x**sp.Rational(1, 3), "x**(1/3)", what="activation", smooth="tanh")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: activation x**(1/3) is not real-analytic: x**(1/3) is a non-integer power and its base x is -1 at x = -1 (such a power is analytic only where its base is positive); use integer powers of x, a positive base such as (1 + x**2)**(1/3), or a smooth expression such as tanh
    """
    bad = non_analytic_heads(expr)
    if bad:
        raise NormalizerError(
            f"{what} {name} is not real-analytic: it uses {', '.join(bad)}; "
            f"use a smooth expression such as {smooth}"
        )
    _check_fractional_powers(expr, name, what, smooth)
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


def _integer_exponent(exponent: sp.Expr) -> bool:
    """Whether a power's exponent is an integer (a float such as ``2.0`` counts as one)."""
    if exponent.is_integer:
        return True
    return bool(exponent.is_Float and exponent == int(exponent))


def fractional_powers(expr: sp.Expr) -> list:
    """The powers in ``expr`` whose exponent is not an integer and that depend on ``x``, in a fixed order.

    ``b(x)**q`` with ``q`` not an integer (``x**(1/3)``, ``sqrt(1 + x**2)``,
    ``2**x``) is real-analytic only where ``b > 0``: at a zero of ``b`` it
    has a branch point (``x**(1/3)``, ``x**(4/3)``: no Taylor series at 0),
    and below zero it is not real.

    Examples
    --------
    >>> fractional_powers(x + x**sp.Rational(1, 3) + x**3)
    [x**(1/3)]
    >>> fractional_powers(sp.sqrt(1 + x**2) + sp.sqrt(2) * x)
    [sqrt(x**2 + 1)]
    """
    powers = (p for p in expr.atoms(sp.Pow) if p.has(x) and not _integer_exponent(p.exp))
    return sorted(powers, key=sp.default_sort_key)


def _check_fractional_powers(expr: sp.Expr, name: str, what: str, smooth: str) -> None:
    """Refuse ``b(x)**q`` (``q`` not an integer) unless ``b`` is proved positive at every real ``x``.

    The base's sign is decided exactly (:func:`symattn.positivity.decide_positivity`);
    a base that is zero or negative somewhere, or whose sign cannot be decided,
    is refused, naming the power and the point.
    """
    for power in fractional_powers(expr):
        base = power.base
        if base.is_positive:
            continue
        verdict = decide_positivity(base, x)
        if verdict.positive:
            continue
        if verdict.positive is False:
            point, value = verdict.witness
            shown = value if value.is_Rational else sp.N(value, 8)
            why = f"its base {base} is {shown} at x = {point}"
        else:
            why = f"its base {base} is not proved positive on R ({verdict.method})"
        raise NormalizerError(
            f"{what} {name} is not real-analytic: {power} is a non-integer power and {why} (such a power is "
            f"analytic only where its base is positive); use integer powers of x, a positive base such as "
            f"(1 + x**2)**(1/3), or a smooth expression such as {smooth}"
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
