"""Truncated power series as coefficient lists, over any field.

The coefficients may be :class:`fractions.Fraction`, sympy expressions, mpmath
numbers or any other objects with field arithmetic.  These routines are used to
compute Taylor coefficients of normalizers exactly and to expand scalar
expressions; the batched prime-field engine lives in :mod:`symattn.algebra.modseries`.

Examples
--------
>>> from fractions import Fraction
>>> from symattn.algebra.powerseries import series_exp
>>> series_exp([Fraction(0), Fraction(1)], 5)
[Fraction(1, 1), Fraction(1, 1), Fraction(1, 2), Fraction(1, 6), Fraction(1, 24)]
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

__all__ = [
    "series_mul",
    "series_inv",
    "series_exp",
    "series_log",
    "series_pow",
    "series_compose",
]


def _pad(a: Sequence, n: int, zero) -> list:
    a = list(a[:n])
    return a + [zero] * (n - len(a))


def series_mul(a: Sequence, b: Sequence, n: int) -> list:
    """Product of two series truncated to ``n`` coefficients.

    Examples
    --------
    >>> series_mul([1, 1], [1, 1], 3)
    [1, 2, 1]
    """
    zero = 0 * (a[0] if a else 0)
    out = [zero] * n
    for i, ai in enumerate(a[:n]):
        if ai == 0:
            continue
        for j, bj in enumerate(b[: n - i]):
            out[i + j] = out[i + j] + ai * bj
    return out


def series_inv(a: Sequence, n: int) -> list:
    """Inverse of a series whose constant term is a unit.

    Examples
    --------
    >>> from fractions import Fraction
    >>> series_inv([Fraction(1), Fraction(-1)], 4)
    [Fraction(1, 1), Fraction(1, 1), Fraction(1, 1), Fraction(1, 1)]
    """
    if not a or a[0] == 0:
        raise ZeroDivisionError("a power series with zero constant term has no inverse")
    a = _pad(a, n, 0 * a[0])
    inv0 = 1 / a[0]
    out = [inv0]
    for m in range(1, n):
        acc = 0 * inv0
        for i in range(1, m + 1):
            if a[i] != 0:
                acc = acc + a[i] * out[m - i]
        out.append(-acc * inv0)
    return out


def series_exp(a: Sequence, n: int) -> list:
    """``exp`` of a series with zero constant term (``b' = a' b``).

    Examples
    --------
    >>> import sympy as sp
    >>> c = sp.Symbol("c")
    >>> series_exp([0, c], 4)
    [1, c, c**2/2, c**3/6]
    >>> series_exp([Fraction(0), Fraction(0), Fraction(-1)], 6)  # exp(-x**2)
    [Fraction(1, 1), Fraction(0, 1), Fraction(-1, 1), Fraction(0, 1), Fraction(1, 2), Fraction(0, 1)]
    """
    if a and a[0] != 0:
        raise ValueError("series_exp needs a zero constant term")
    one = Fraction(1) if not a else 0 * a[0] + 1
    a = _pad(a, n, 0 * one)
    out = [one] + [0 * one] * (n - 1)
    for m in range(1, n):
        acc = 0 * one
        for i in range(1, m + 1):
            if a[i] != 0:
                acc = acc + i * a[i] * out[m - i]
        out[m] = acc / m
    return out


def series_log(a: Sequence, n: int) -> list:
    """``log`` of a series with constant term 1.

    Examples
    --------
    >>> import sympy as sp
    >>> series_log([sp.Integer(1), sp.Integer(1)], 5)  # log(1 + x)
    [0, 1, -1/2, 1/3, -1/4]
    >>> series_log(series_exp([Fraction(0), Fraction(2)], 4), 4) == [0, 2, 0, 0]
    True
    """
    if not a or a[0] != 1:
        raise ValueError("series_log needs constant term 1")
    a = _pad(a, n, 0 * a[0])
    zero = 0 * a[0]
    deriv = [(i + 1) * a[i + 1] for i in range(n - 1)] + [zero]
    quotient = series_mul(deriv, series_inv(a, n), n)
    return [zero] + [quotient[i - 1] / i for i in range(1, n)]


def series_pow(a: Sequence, exponent, n: int) -> list:
    """``a**exponent`` for a series with constant term 1 and any exponent.

    Examples
    --------
    >>> series_pow([Fraction(1), Fraction(1)], Fraction(1, 2), 4)  # sqrt(1 + x)
    [Fraction(1, 1), Fraction(1, 2), Fraction(-1, 8), Fraction(1, 16)]
    """
    if not a or a[0] != 1:
        raise ValueError("series_pow needs constant term 1")
    log_a = series_log(a, n)
    return series_exp([exponent * c for c in log_a], n)


def series_compose(outer: Sequence, inner: Sequence, n: int) -> list:
    """``outer(inner(x))`` for ``inner`` with zero constant term (Horner's rule).

    Examples
    --------
    >>> exp_series = [Fraction(1), Fraction(1), Fraction(1, 2), Fraction(1, 6), Fraction(1, 24)]
    >>> series_compose(exp_series, [Fraction(0), Fraction(0), Fraction(1)], 5)  # exp(x**2)
    [Fraction(1, 1), Fraction(0, 1), Fraction(1, 1), Fraction(0, 1), Fraction(1, 2)]
    >>> series_compose([1, 1, 1, 1], [0, 1, 1], 4)  # 1 + y + y**2 + y**3 at y = x + x**2
    [1, 1, 2, 3]
    """
    if inner and inner[0] != 0:
        raise ValueError("series_compose needs an inner series with zero constant term")
    zero = 0 * (inner[0] if inner else 0)
    out = [zero] * n
    for coefficient in reversed(list(outer[:n])):
        out = series_mul(out, inner, n)
        out[0] = out[0] + coefficient
    return out
