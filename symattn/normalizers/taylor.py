"""Taylor coefficients of a normalizer over Q, by arithmetic of power series.

The fast path of :meth:`symattn.normalizers.Normalizer.taylor`: the
expression is composed node by node from the series of exp, cosh, sinh,
cos, sin and powers, with :class:`fractions.Fraction` coefficients.  An
irrational constant (``e``, ``log 2``) raises ``_NotRational``, and the
exact path of :mod:`symattn.normalizers.irrational` takes over.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ..algebra.powerseries import series_compose, series_exp, series_inv, series_mul, series_pow
from .presets import x


class _NotRational(Exception):
    """Raised inside the fast Taylor path when a constant is irrational."""


def _rational_taylor(expr: sp.Expr, n: int) -> list[Fraction]:
    """Taylor coefficients of ``expr`` at 0 through degree ``n - 1`` over Q.

    Raises ``_NotRational`` when an irrational constant (``e``, ``log 2``)
    appears, so that the caller can fall back to sympy's series.
    """
    if expr == x:
        return [Fraction(0), Fraction(1)] + [Fraction(0)] * (n - 2)
    if expr.is_Rational:
        return [Fraction(int(expr.p), int(expr.q))] + [Fraction(0)] * (n - 1)
    if expr.is_Number or not expr.has(x):
        raise _NotRational(expr)
    args = [_rational_taylor(a, n) for a in expr.args]
    if isinstance(expr, sp.Add):
        return [sum(column, Fraction(0)) for column in zip(*args)]
    if isinstance(expr, sp.Mul):
        out = args[0]
        for a in args[1:]:
            out = series_mul(out, a, n)
        return out
    if isinstance(expr, sp.Pow):
        base, exponent = args[0], expr.args[1]
        if not exponent.is_Rational:
            raise _NotRational(expr)
        if exponent.is_Integer:
            e = int(exponent)
            if e < 0:
                base, e = series_inv(base, n), -e
            out = [Fraction(1)] + [Fraction(0)] * (n - 1)
            for _ in range(e):
                out = series_mul(out, base, n)
            return out
        if base[0] != 1:
            raise _NotRational(expr)
        return series_pow(base, Fraction(int(exponent.p), int(exponent.q)), n)
    (u,) = args if len(args) == 1 else (None,)
    if u is None or u[0] != 0:
        raise _NotRational(expr)
    if isinstance(expr, sp.exp):
        return series_exp(u, n)
    if isinstance(expr, (sp.cosh, sp.sinh)):
        plus = series_exp(u, n)
        minus = series_exp([-c for c in u], n)
        sign = 1 if isinstance(expr, sp.cosh) else -1
        return [(p + sign * m) / 2 for p, m in zip(plus, minus)]
    if isinstance(expr, (sp.cos, sp.sin)):
        # cos u = Re exp(iu): alternate the signs of the even/odd parts
        return _trig_from_exp(u, n, cosine=isinstance(expr, sp.cos))
    if isinstance(expr, sp.log):
        raise _NotRational(expr)
    raise _NotRational(expr)


def _trig_from_exp(u: list, n: int, cosine: bool) -> list:
    # cos u = 1 - u^2/2 + ..., sin u = u - u^3/6 + ...: compose with u
    outer = []
    for m in range(n):
        if (m % 2 == 0) == cosine:
            sign = (-1) ** (m // 2)
            outer.append(Fraction(sign, _factorial(m)))
        else:
            outer.append(Fraction(0))
    return series_compose(outer, u, n)


def _factorial(m: int) -> int:
    out = 1
    for i in range(2, m + 1):
        out *= i
    return out

