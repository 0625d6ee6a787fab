"""Exact signs of constants, and the exact numbers tried as witnesses of a value <= 0.

A sign is decided by interval arithmetic first, then by sympy's assumptions
and its checked ``evalf``; zero only with a proof.  Near a numerically located
minimum, closed forms (``-pi/2``, ``sqrt(2)/2``) and simple rationals are the
candidates that :class:`symattn.positivity.decision._Decider` confirms.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import sympy as sp

from .intervals import _IV, _MAX_REWRITE_OPS, _IntervalProver, _lower, _upper
from .sampling import _GUARDS, _SAMPLE_DPS

#: Digits for sympy's exact-sign fallback (``evalf(strict=True)``).
_CHECK_DPS = 60


def _substitute(expr, x, point):
    """expr at ``point``, exactly; unevaluated where x sits in an exponent.

    sympy evaluates 2**(10**12) or 5000000**5000000 as exact integers (and
    runs out of memory), so such values are left for interval arithmetic.
    """
    variable_powers = [power for power in expr.atoms(sp.Pow) if power.exp.has(x)]
    if not all(_modest_power(power, x, point) for power in variable_powers):
        with sp.evaluate(False):
            return expr.xreplace({x: point})
    return expr.subs(x, point)


def _modest_power(power, x, point) -> bool:
    """Whether ``power`` at ``point`` is small enough for sympy to evaluate exactly."""
    try:
        at = mpmath.mpf(sp.N(point, 20))
        with mpmath.workdps(15):
            base = sp.lambdify(x, power.base, modules=[_GUARDS, "mpmath"])(at)
            exponent = sp.lambdify(x, power.exp, modules=[_GUARDS, "mpmath"])(at)
            return abs(exponent) <= 10**4 and abs(base) <= mpmath.mpf(10) ** 100
    except Exception:  # cannot even estimate it: treat it as huge
        return False


def _exact_sign(value, prover: "_IntervalProver") -> int | None:
    """Sign of a constant sympy expression (-1, 0, 1), or None if undecidable here.

    Interval arithmetic first (rigorous); then sympy's assumptions and its
    ``evalf`` at 60 digits with ``strict=True`` (which tracks its error and
    raises rather than return digits it cannot vouch for).  Zero only when
    proved: by sympy's automatic evaluation, ``is_zero``, a minimal polynomial
    (algebraic numbers) or ``simplify`` (small expressions).
    """
    value = sp.sympify(value)
    if not value.is_number or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return None
    if value.is_Rational:
        return int(value.p > 0) - int(value.p < 0)
    enclosure = prover.enclose(value, _IV.mpf(0))
    if enclosure is not None:
        if _lower(enclosure) > 0:
            return 1
        if _upper(enclosure) < 0:
            return -1
    # sympy's own rules (log(u) > 0 for u > 1, ...) and its checked numerics
    is_zero = value.is_zero
    if is_zero:
        return 0
    if value.is_positive:
        return 1
    if value.is_negative:
        return -1
    try:
        numeric = value.evalf(_CHECK_DPS, strict=True)
    except sp.core.evalf.PrecisionExhausted:
        numeric = None  # indistinguishable from 0: perhaps exactly 0
    if numeric is not None and numeric != 0:
        # a nonzero real Float has a sign; anything else (complex) has none
        return (1 if numeric > 0 else -1) if numeric.is_Float else None
    if is_zero is False:
        return None  # nonzero, but too close to 0 to say which side
    return 0 if _provably_zero(value) else None


def _provably_zero(value) -> bool:
    """True only with a proof that the constant ``value`` is 0 (never by numerics)."""
    if sp.count_ops(value) > _MAX_REWRITE_OPS:
        return False  # keep sympy's simplification cheap
    try:
        if not value.atoms(sp.Function) and not value.atoms(sp.NumberSymbol):
            # an algebraic number is 0 iff its minimal polynomial is t
            t = sp.Dummy("t")
            return sp.minimal_polynomial(value, t) == t
        return sp.simplify(value) == 0
    except Exception:  # NotAlgebraic, NotImplementedError, ...: no proof
        return False


def _exact_candidates(point, negative: bool, reach) -> list:
    """Exact numbers near a numerically located minimum, in the order to try them.

    Closed forms (``-pi/2``, ``sqrt(2)/2``) must agree with ``point`` to 15
    digits.  Where the minimum is clearly negative, any rational within
    ``reach`` may be a witness, and the simplest come first.
    """
    tolerance = mpmath.mpf(10) ** (-15) * (1 + abs(point))
    text = sp.Float(point, _SAMPLE_DPS)
    closed_forms = []
    for constants in ([sp.pi], [sp.E], [sp.pi, sp.E], []):
        try:
            guess = sp.nsimplify(text, constants, tolerance=float(tolerance))
        except Exception:  # nsimplify can fail on odd inputs: just no candidate
            continue
        if guess.is_number and not guess.has(sp.Float):
            closed_forms.append(guess)
    exact_point = Fraction(*_mpf_ratio(point))
    rationals = []
    for denominator in (1, 2, 4, 8, 10, 16, 100, 1000, 10**4, 10**6, 10**9, 10**12):
        nearby = exact_point.limit_denominator(denominator)
        rationals.append(sp.Rational(nearby.numerator, nearby.denominator))
    if negative:
        ordered, radius = rationals + closed_forms, max(reach, tolerance)
    else:
        ordered, radius = closed_forms + rationals, tolerance
    unique = []
    for candidate in ordered:
        try:
            close = abs(mpmath.mpf(sp.N(candidate, _SAMPLE_DPS)) - point) <= radius
        except (TypeError, ValueError):
            close = False
        if close and candidate not in unique:
            unique.append(candidate)
    return unique


def _mpf_ratio(value) -> tuple[int, int]:
    """An mpf as an exact (numerator, denominator) pair."""
    sign, mantissa, exponent, _ = mpmath.mpf(value)._mpf_
    mantissa = -int(mantissa) if sign else int(mantissa)
    if exponent >= 0:
        return mantissa << exponent, 1
    return mantissa, 1 << -exponent

