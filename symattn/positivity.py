"""Decide exactly whether a real function of one variable is positive on all of R.

A normalizer must be positive at every real number.  :func:`decide_positivity`
answers that question for a sympy expression in one real variable and never
guesses; every answer is backed by exact or rigorous computation:

* **disproof** -- a negative sampled value, or a numerically located minimum
  near 0 that is identified in closed form (``-pi/2``, ``sqrt(2)/2``, a
  rational), is confirmed exactly before it is reported as a witness
  ``(point, value)``;
* **proof** -- a polynomial with rational coefficients is decided exactly by
  counting its real roots (Sturm).  Anything else is bounded below by interval
  arithmetic (a private :mod:`mpmath` interval context, 80 bits, outward
  rounding): branch and bound on ``[-radius, radius]`` with the mean-value
  form, and on each tail interval bounds, sign rules (``exp(u) > 0``,
  ``log(u) > 0`` when ``u > 1``, ...) or monotonicity proved through
  derivatives;
* otherwise the answer is ``None`` (undecided), with the reason.

Examples
--------
>>> import sympy as sp
>>> from symattn.positivity import decide_positivity
>>> x = sp.Symbol("x", real=True)
>>> decide_positivity(2 + sp.sin(x), x).positive
True
>>> verdict = decide_positivity(1 + sp.sin(x), x)
>>> verdict.positive, verdict.witness
(False, (-pi/2, 0))
>>> decide_positivity(1 + x**3, x).witness
(-2, -7)
>>> print(decide_positivity(sp.exp(x) - x, x).method)
proved positive: interval arithmetic on [-8, 8] (9 boxes); on x >= 8, f(8) > 0 and f' > 0;
on x <= -8, f > 0 by interval bounds
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import mpmath
import sympy as sp
from mpmath.ctx_iv import MPIntervalContext

__all__ = ["PositivityVerdict", "decide_positivity", "approximate_constant", "ConstantTooLarge",
           "CONSTANT_MAGNITUDE_BITS"]

#: Digits for sampling and for locating minima.
_SAMPLE_DPS = 30
#: Digits for sympy's exact-sign fallback (``evalf(strict=True)``).
_CHECK_DPS = 60
#: Bits of the interval context used for proofs.
_INTERVAL_PREC = 80
#: Arguments of exp/sin/... beyond 2**_HUGE_MAG are bounded, never evaluated:
#: mpmath would need about that many bits to reduce them (and would hang).
_HUGE_MAG = 64
#: Wall-clock budget of one decision, in seconds.
_TIME_BUDGET = 3.0
#: Grid points per side of the compact part (rounded to a power-of-2 step).
_GRID_HALF_POINTS = 256
#: Polynomials of higher degree go through the interval route instead of Sturm.
_MAX_EXACT_DEGREE = 200
#: How many of the lowest sampled local minima are refined.
_MINIMA_TO_REFINE = 3
#: Expressions with more operations are not rewritten (sympy's together can be slow).
_MAX_REWRITE_OPS = 40
#: Exact sign checks allowed per located minimum (each is a sympy evaluation).
_CHECKS_PER_MINIMUM = 16

# A private interval context: its precision never leaks into mpmath.iv.
_IV = MPIntervalContext()
_IV.prec = _INTERVAL_PREC
_HUGE = mpmath.mpf(2) ** _HUGE_MAG
_INF = mpmath.inf


@dataclass(frozen=True)
class PositivityVerdict:
    """Whether a function is positive on all of R, and how that was decided.

    Attributes
    ----------
    positive : bool or None
        ``True`` proved, ``False`` disproved (a witness is given), ``None``
        undecided.
    witness : tuple or None
        ``(point, value)``, exact sympy numbers with ``value <= 0`` (or not
        real), when ``positive`` is ``False``; otherwise ``None``.
    method : str
        One sentence saying how it was decided, for a user-facing message.

    Examples
    --------
    >>> PositivityVerdict(True, None, "proved positive: constant 2 > 0").positive
    True
    """

    positive: bool | None
    witness: tuple | None
    method: str


def decide_positivity(expr, x, *, radius=8, max_boxes=4000, max_depth=3) -> PositivityVerdict:
    """Decide whether ``expr`` is positive at every real ``x``.

    Parameters
    ----------
    expr : sympy.Expr
        A real expression in ``x`` built from ``+``, ``*``, powers, exp, log, sqrt,
        sin, cos, tan, sinh, cosh, tanh, atan and constants (pi, E, rationals,
        algebraic numbers).  Other functions can still be disproved by
        sampling, but not proved positive.
    x : sympy.Symbol
        The variable.
    radius : positive number
        Branch and bound covers ``[-radius, radius]``; beyond it the tails are
        handled by interval bounds, sign rules and monotonicity.
    max_boxes : int
        At most this many boxes in branch and bound.
    max_depth : int
        Derivatives up to this order are used to prove a tail monotone.

    Returns
    -------
    PositivityVerdict
        ``positive`` is ``True`` only with a proof, ``False`` only with an
        exactly confirmed witness, ``None`` otherwise.  Never raises for an
        expression; failures of sympy or mpmath give ``None`` with the reason.

    Raises
    ------
    TypeError
        If ``expr`` is a string or ``x`` is not a sympy Symbol.
    ValueError
        If ``radius``, ``max_boxes`` or ``max_depth`` is out of range.

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x", real=True)
    >>> decide_positivity(sp.cosh(x) - x**2 / 2, x).positive
    True
    >>> decide_positivity(x**2 - sp.sqrt(2) * x + 1, x).positive
    True
    >>> decide_positivity(sp.cos(x), x).witness
    (2, cos(2))
    >>> verdict = decide_positivity(x**2, x)
    >>> verdict.positive, verdict.witness
    (False, (0, 0))
    >>> print(verdict.method)
    disproved: p has a real root at x = 0, where p = 0 (exact root isolation)
    """
    if isinstance(expr, str):
        raise TypeError("pass a sympy expression, not a string")
    if not isinstance(x, sp.Symbol):
        raise TypeError(f"x must be a sympy Symbol, got {x!r}")
    if not (isinstance(radius, (numbers.Real, sp.Rational)) and radius > 0
            and math.isfinite(float(radius))):
        raise ValueError(f"radius must be a positive finite number, got {radius!r}")
    if not isinstance(max_boxes, int) or max_boxes < 1:
        raise ValueError(f"max_boxes must be a positive integer, got {max_boxes!r}")
    if not isinstance(max_depth, int) or max_depth < 0:
        raise ValueError(f"max_depth must be a nonnegative integer, got {max_depth!r}")
    try:
        expr = sp.sympify(expr, strict=True)
    except (sp.SympifyError, TypeError) as err:
        raise TypeError(f"cannot use {expr!r} as a sympy expression") from err
    decider = _Decider(expr, x, radius, max_boxes, max_depth)
    try:
        with mpmath.workdps(_SAMPLE_DPS):
            return decider.run()
    except RecursionError:
        return PositivityVerdict(None, None, "undecided: the expression is too deeply nested")
    except Exception as err:  # sympy/mpmath failures: an honest "undecided"
        return PositivityVerdict(
            None, None, f"undecided: {type(err).__name__} while deciding ({err})"
        )


# -- the decision procedure ----------------------------------------------------------


class _Decider:
    """One decision: sampling, exact confirmation, interval proof, in that order."""

    def __init__(self, expr, x, radius, max_boxes, max_depth):
        self.expr = expr
        self.x = x
        self.radius_fraction = _as_fraction(radius)
        self.radius_text = _format_radius(self.radius_fraction)
        # the same binary number ends the compact part and starts both tails
        numerator, denominator = self.radius_fraction.as_integer_ratio()
        with mpmath.workprec(2 * _INTERVAL_PREC):
            self.radius = mpmath.mpf(numerator) / denominator
        self.max_boxes = max_boxes
        self.max_depth = max_depth
        self.deadline = time.monotonic() + _TIME_BUDGET
        self.prover = _IntervalProver(x)

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def run(self) -> PositivityVerdict:
        expr, x = self.expr, self.x
        if not isinstance(expr, sp.Expr):
            return _undecided("it is not a sympy expression")
        if expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            return _undecided("the expression is not finite")
        others = expr.free_symbols - {x}
        if others:
            names = ", ".join(sorted(str(s) for s in others))
            return _undecided(f"the expression depends on other symbols ({names})")
        if x not in expr.free_symbols:
            return self.decide_constant()
        poly = _rational_polynomial(expr, x)
        if poly is not None:
            return _decide_rational_polynomial(poly)
        return self.decide_general()

    def decide_constant(self) -> PositivityVerdict:
        if self.expr.is_extended_real is not True:
            verdict = self.confirm_witness(sp.Integer(0), "exact evaluation")
            if verdict is not None and "not real" in verdict.method:
                return verdict
        sign = _exact_sign(self.expr, self.prover)
        if sign is None:
            return _undecided(f"the sign of the constant {self.expr} cannot be decided exactly")
        if sign > 0:
            return PositivityVerdict(True, None, f"proved positive: constant {self.expr} > 0")
        relation = "< 0" if sign < 0 else "= 0 exactly"
        return PositivityVerdict(
            False, (sp.Integer(0), self.expr), f"disproved: constant {self.expr} {relation}"
        )

    def decide_general(self) -> PositivityVerdict:
        sampler = _Sampler.build(self.expr, self.x)
        if sampler is None:
            verdict, reason = self.prove()
            return verdict or _undecided(reason + "; it could not be sampled either")
        grid = sampler.sample(_grid_points(self.radius_fraction), self.deadline)
        # witnesses inside [-radius, radius] read better than x = 146937: grid first
        verdict = self.disprove_by_samples(grid)
        if verdict is not None:
            return verdict
        minima = _lowest_local_minima(grid, _MINIMA_TO_REFINE)
        scale = 1 + _median_magnitude(grid)
        # a minimum at the end of the grid is a decaying tail (exp(-x**2)), not a zero
        near_zero = [
            m for m in minima
            if 0 < m < len(grid) - 1 and mpmath.re(grid[m][1]) < mpmath.mpf("0.01") * scale
        ]
        verdict = self.disprove_at_minima(sampler, grid, near_zero)
        if verdict is not None:
            return verdict
        tails = sampler.sample(_tail_points(self.radius_fraction), self.deadline)
        verdict = self.disprove_by_samples(tails)
        if verdict is not None:
            return verdict
        verdict, reason = self.prove()
        if verdict is not None:
            return verdict
        rest = [m for m in minima if m not in near_zero]
        if rest and not self.out_of_time():
            verdict = self.disprove_at_minima(sampler, grid, rest)
            if verdict is not None:
                return verdict
        if grid:
            low_point, low_value = min(grid, key=lambda sample: mpmath.re(sample[1]))
            reason += (
                f"; no value <= 0 was found by sampling (smallest "
                f"{mpmath.nstr(mpmath.re(low_value), 3)} at x = {low_point})"
            )
        return _undecided(reason)

    # -- disproof ---------------------------------------------------------------------
    def disprove_by_samples(self, samples) -> PositivityVerdict | None:
        negative = [(p, v) for p, v in samples if _is_nonreal(v) or mpmath.re(v) < 0]
        # sampled zeros are often rounding (log(1 + exp(-10**6)) is 0 to 30 digits)
        zero = [(p, v) for p, v in samples if not _is_nonreal(v) and v == 0]

        def simplicity(sample):
            point = sample[0]
            return int(point.q), abs(point), bool(point < 0)
        # simple points make readable witnesses; the lowest value is the likeliest to confirm
        candidates = sorted(negative, key=simplicity)[:6]
        if negative:
            candidates.append(min(negative, key=lambda s: mpmath.re(s[1])))
        candidates += sorted(zero, key=simplicity)[:3]
        for point, _ in candidates:
            verdict = self.confirm_witness(point, "sampling")
            if verdict is not None:
                return verdict
            if self.out_of_time():
                break
        return None

    def disprove_at_minima(self, sampler, grid, indices) -> PositivityVerdict | None:
        """Locate the minima near the given grid samples; confirm a zero or a negative value."""
        step = _grid_step(self.radius_fraction)
        located = []
        for index in indices:
            if self.out_of_time():
                break
            found = sampler.refine_minimum(grid[index][0], step, self.deadline)
            if found is not None:
                # "indistinguishable from 0" is relative to the size of f nearby:
                # 10**30 * (1 + sin(x)) computes to about 1 at -pi/2
                nearby = [abs(grid[j][1]) for j in (index - 1, index + 1) if 0 <= j < len(grid)]
                tiny = mpmath.mpf(10) ** (-20) * max([mpmath.mpf(1)] + nearby)
                located.append((found[0], found[1], tiny))
        reach = mpmath.mpf(step.numerator) / (4 * step.denominator)
        # readable witnesses first: -pi/2 rather than 3*pi/2
        for point, value, tiny in sorted(located, key=lambda found: abs(found[0])):
            if value > tiny:
                continue  # clearly positive: a minimum, but not a zero
            negative = value < -tiny
            for candidate in _exact_candidates(point, negative, reach)[:_CHECKS_PER_MINIMUM]:
                if self.out_of_time():
                    return None
                verdict = self.confirm_witness(candidate, "a located minimum")
                if verdict is not None:
                    return verdict
        return None

    def confirm_witness(self, point, source: str) -> PositivityVerdict | None:
        """A verdict ``False`` if ``expr(point)`` is exactly <= 0 or not real."""
        value = _substitute(self.expr, self.x, point)
        if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            return None  # a pole or 0/0: not a witness of a value <= 0
        if value.is_extended_real is not True and \
                _exact_sign(sp.im(value), self.prover) not in (None, 0):
            return PositivityVerdict(
                False, (point, value),
                f"disproved: f({point}) = {value} is not real "
                f"(found by {source}, checked exactly)",
            )
        sign = _exact_sign(value, self.prover)
        if sign is None or sign > 0:
            return None
        if sign < 0:
            claim = f"f({point}) = {value} < 0"
        elif value == 0:
            claim = f"f({point}) = 0 exactly"
        else:
            claim = f"f({point}) = {value} = 0 exactly"
        return PositivityVerdict(
            False, (point, value), f"disproved: {claim} (found by {source}, checked exactly)"
        )

    # -- proof ------------------------------------------------------------------------
    def prove(self) -> tuple[PositivityVerdict | None, str]:
        expr, x, prover = self.expr, self.x, self.prover
        if prover.compiled(expr) is None:
            return None, f"undecided: the interval evaluator does not know {prover.unknown(expr)}"
        whole_line = _IV.mpf([-_INF, _INF])
        bound = prover.enclose(expr, whole_line)
        if bound is not None and _lower(bound) > 0:
            return PositivityVerdict(
                True, None,
                "proved positive: interval arithmetic over all of R gives "
                f"f >= {mpmath.nstr(_lower(bound), 6)} > 0",
            ), ""
        if prover.positive(expr, whole_line):
            return PositivityVerdict(
                True, None,
                "proved positive: sign rules with interval bounds over all of R "
                "(exp > 0, cosh > 0, log(u) > 0 where u > 1, positive terms and factors)",
            ), ""
        r = self.radius_text
        right = self.tail_order(expr)
        left = self.tail_order(expr.xreplace({x: -x})) if right is not None else None
        if right is None or left is None:
            # last resort, an equivalent form: 1 + tanh(x) = 2 exp(x) / (exp(x) + exp(-x))
            for form in prover.alternative_forms(expr):
                if prover.positive(form, whole_line):
                    return PositivityVerdict(
                        True, None,
                        f"proved positive: sign rules with interval bounds over all of R "
                        f"applied to the equivalent form {form}",
                    ), ""
            side = f"x >= {r}" if right is None else f"x <= -{r}"
            return None, f"undecided: could not prove positivity on {side}"
        proved, boxes, detail = _branch_and_bound(
            prover, expr, x, self.radius, self.max_boxes, self.deadline
        )
        if proved is False:
            point = sp.Rational(*_mpf_ratio(detail))
            verdict = self.confirm_witness(point, "interval arithmetic")
            if verdict is not None:
                return verdict, ""
            return None, "undecided: interval arithmetic met a value <= 0 it could not confirm"
        if not proved:
            return None, f"undecided: interval arithmetic on [-{r}, {r}] {detail}"
        return PositivityVerdict(
            True, None,
            f"proved positive: interval arithmetic on [-{r}, {r}] ({boxes} boxes); "
            f"on x >= {r}, {_describe_tail(right, r, left=False)}; "
            f"on x <= -{r}, {_describe_tail(left, r, left=True)}",
        ), ""

    def tail_order(self, g) -> int | None:
        """Smallest k with g^(k) > 0 on [R, oo) and g, ..., g^(k-1) > 0 at R.

        Then g > 0 on [R, oo): each derivative positive on the tail makes the
        one before it increasing from a positive value.
        """
        tail = _IV.mpf([self.radius, _INF])
        at_radius = _IV.mpf(self.radius)
        for order in range(self.max_depth + 1):
            if self.out_of_time():
                return None
            if self.prover.positive(g, tail):
                return order
            if self.prover.enclose(g, tail) is None:
                return None  # g may be undefined somewhere on the tail
            value = self.prover.enclose(g, at_radius)
            if value is None or not _lower(value) > 0:
                return None
            g = sp.diff(g, self.x)
        return None


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


def _undecided(reason: str) -> PositivityVerdict:
    if not reason.startswith("undecided"):
        reason = "undecided: " + reason
    return PositivityVerdict(None, None, reason)


def _describe_tail(order: int, radius_text: str, left: bool) -> str:
    """Wording of a tail certificate of the given derivative order.

    On the left tail the certificate is for g(t) = f(-t), whose derivatives
    are g^(j)(t) = (-1)^j f^(j)(-t): odd derivatives of f are negative there.
    """
    if order == 0:
        return "f > 0 by interval bounds"
    at = f"-{radius_text}" if left else radius_text

    def relation(j):
        return "< 0" if left and j % 2 else "> 0"

    conditions = [f"f{chr(39) * j}({at}) {relation(j)}" for j in range(order)]
    conditions.append(f"f{chr(39) * order} {relation(order)}")
    return ", ".join(conditions[:-1]) + " and " + conditions[-1]


def _as_fraction(number) -> Fraction:
    if isinstance(number, sp.Rational):
        return Fraction(int(number.p), int(number.q))
    if isinstance(number, numbers.Integral):
        return Fraction(int(number))
    return Fraction(number) if isinstance(number, (Fraction, float)) else Fraction(float(number))


def _format_radius(radius: Fraction) -> str:
    return str(radius.numerator) if radius.denominator == 1 else str(float(radius))


# -- exact polynomials -----------------------------------------------------------------


def _rational_polynomial(expr, x) -> sp.Poly | None:
    """``expr`` as a Poly over Q, or None if it is not one (or too large for Sturm)."""
    if not expr.is_polynomial(x):
        return None
    try:
        poly = sp.Poly(expr, x)
    except sp.PolynomialError:
        return None
    if not (poly.domain.is_ZZ or poly.domain.is_QQ) or poly.degree() > _MAX_EXACT_DEGREE:
        return None
    return poly


def _decide_rational_polynomial(poly: sp.Poly) -> PositivityVerdict:
    """Exact: positive on R iff no real root and positive at 0."""
    at_zero = poly.eval(0)
    if poly.count_roots() == 0:
        if at_zero > 0:
            return PositivityVerdict(
                True, None,
                f"proved positive: exact real-root count (Sturm) finds no real root "
                f"and p(0) = {at_zero} > 0",
            )
        return PositivityVerdict(
            False, (sp.Integer(0), at_zero), f"disproved: p(0) = {at_zero} < 0, exactly"
        )
    for point in _polynomial_test_points(poly):
        value = poly.eval(point)
        if value < 0:
            return PositivityVerdict(
                False, (point, value), f"disproved: p({point}) = {value} < 0, exactly"
            )
    # p >= 0 with a real root: the root is the witness
    roots = sp.real_roots(poly)
    root = min(roots, key=lambda r: (not r.is_Rational, abs(float(r))))
    return PositivityVerdict(
        False, (root, sp.Integer(0)),
        f"disproved: p has a real root at x = {root}, where p = 0 (exact root isolation)",
    )


def _polynomial_test_points(poly: sp.Poly) -> list:
    """Small integers, then one rational in every gap between isolated real roots."""
    points = [sp.Integer(v) for m in range(11) for v in ((-m, m) if m else (0,))]
    intervals = sorted((sp.Rational(a), sp.Rational(b)) for (a, b), _ in poly.intervals())
    if intervals:
        points.append(intervals[0][0] - 1)
        points.append(intervals[-1][1] + 1)
        for (_, right_end), (left_end, _) in zip(intervals, intervals[1:]):
            points.append((right_end + left_end) / 2)
    return points


# -- exact signs ---------------------------------------------------------------------


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


# -- sampling and minima ---------------------------------------------------------------


def _grid_step(radius: Fraction) -> Fraction:
    """A power of 2 near radius / 256: grid points are exact binary numbers."""
    return Fraction(2) ** math.floor(math.log2(float(radius) / _GRID_HALF_POINTS))


def _grid_points(radius: Fraction) -> list:
    """Rationals on [-radius, radius] spaced by ``_grid_step(radius)``."""
    step = _grid_step(radius)
    count = int(radius / step)
    return [sp.Rational(k * step.numerator, step.denominator) for k in range(-count, count + 1)]


def _tail_points(radius) -> list:
    """Integers beyond the radius, growing geometrically to about 1e10 * radius."""
    magnitudes = sorted({int(float(radius) * 1.25**k) + 1 for k in range(1, 104)})
    return [sp.Integer(s * m) for m in magnitudes for s in (1, -1)]


def _is_nonreal(value) -> bool:
    return isinstance(value, mpmath.mpc) and value.imag != 0


def _lowest_local_minima(grid, count: int) -> list[int]:
    """Indices of the ``count`` lowest local minima of real grid samples."""
    if len(grid) < 3:
        return []
    values = [mpmath.re(v) for _, v in grid]
    minima = [
        i for i in range(len(values))
        if (i == 0 or values[i] <= values[i - 1])
        and (i == len(values) - 1 or values[i] <= values[i + 1])
    ]
    return sorted(minima, key=lambda i: values[i])[:count]


def _median_magnitude(grid):
    if not grid:
        return mpmath.mpf(0)
    magnitudes = sorted(abs(v) for _, v in grid)
    return magnitudes[len(magnitudes) // 2]


#: :func:`approximate_constant` refuses exp, sin, cosh, ... of an argument beyond 2**CONSTANT_MAGNITUDE_BITS:
#: mpmath needs about that many bits to reduce it, and sympy evaluates constants even to print them
#: (``cosh(cosh(cosh(50)))`` would take hours).
CONSTANT_MAGNITUDE_BITS = 1000


class ConstantTooLarge(ArithmeticError):
    """A constant that cannot be evaluated: the argument of ``name`` is beyond ``2**CONSTANT_MAGNITUDE_BITS``.

    Examples
    --------
    >>> str(ConstantTooLarge("exp"))
    'exp of a number beyond 2**1000'
    """

    def __init__(self, name: str):
        super().__init__(f"{name} of a number beyond 2**{CONSTANT_MAGNITUDE_BITS}")
        self.name = name


_MPMATH_NAMES = {sp.exp: "exp", sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.sinh: "sinh", sp.cosh: "cosh",
                 sp.tanh: "tanh", sp.log: "log", sp.atan: "atan", sp.asin: "asin", sp.acos: "acos",
                 sp.asinh: "asinh", sp.erf: "erf"}
_REDUCED = {"exp", "sin", "cos", "tan", "sinh", "cosh", "tanh"}  # need an argument reduction


def _apply_guarded(name: str, argument):
    if argument is None:
        return None
    if name in _REDUCED and argument != 0 and mpmath.mag(argument) > CONSTANT_MAGNITUDE_BITS:
        raise ConstantTooLarge(name)
    try:
        value = getattr(mpmath, name)(argument)
    except (ValueError, ZeroDivisionError, ArithmeticError):
        return None
    return value if isinstance(value, mpmath.mpf) else None


def approximate_constant(expr, known=None):
    """A real sympy constant as an mpmath number, without sympy's ``evalf`` or printer (which can hang).

    Evaluated node by node at the current mpmath precision; ``known`` maps
    symbols to mpmath values.  Returns None for what it cannot evaluate
    (unknown functions, complex or undefined values).

    Raises
    ------
    ConstantTooLarge
        For exp, sin, cos, tan, sinh, cosh, tanh (or a power) of an argument
        beyond ``2**CONSTANT_MAGNITUDE_BITS``: the value would take hours.

    Examples
    --------
    >>> float(approximate_constant(sp.exp(sp.exp(2)) + sp.pi))
    1621.3195...
    >>> approximate_constant(sp.cosh(sp.cosh(sp.cosh(50))))
    Traceback (most recent call last):
    ...
    symattn.positivity.ConstantTooLarge: cosh of a number beyond 2**1000
    """
    known = known or {}
    if expr in known:
        return known[expr]
    if expr.is_Rational:
        return mpmath.mpf(int(expr.p)) / int(expr.q)
    if expr.is_Float or isinstance(expr, sp.NumberSymbol):
        return mpmath.mpf(expr.evalf(mpmath.mp.dps + 5))
    parts = [approximate_constant(a, known) for a in expr.args]
    if any(p is None for p in parts):
        return None
    if expr.is_Add:
        return mpmath.fsum(parts)
    if expr.is_Mul:
        return mpmath.fprod(parts)
    if expr.is_Pow:
        base, exponent = parts
        if base == 0:
            return mpmath.mpf(0) if exponent > 0 else None
        if base < 0 and not expr.exp.is_Integer:
            return None
        if expr.exp.is_Integer:  # an integer power: the exponent of the result, not a reduction
            return mpmath.power(base, exponent)
        _apply_guarded("exp", exponent * mpmath.log(abs(base)))  # base**e = exp(e log base): its size
        return mpmath.power(base, exponent)
    name = _MPMATH_NAMES.get(type(expr))
    return _apply_guarded(name, parts[0]) if name and len(parts) == 1 else None


class _TooLarge(ArithmeticError):
    """An argument so large that mpmath would need millions of bits for it."""


def _guarded(function):
    def guarded(argument):
        if mpmath.mag(argument) > _HUGE_MAG:
            raise _TooLarge(argument)
        return function(argument)
    return guarded


#: mpmath functions for lambdify that refuse astronomically large arguments.
_GUARDS = {
    name: _guarded(getattr(mpmath, name))
    for name in ("exp", "sin", "cos", "tan", "sinh", "cosh", "tanh")
}


class _Sampler:
    """``expr`` and its derivative as mpmath functions, at ``_SAMPLE_DPS`` digits."""

    def __init__(self, function, derivative):
        self.function = function
        self.derivative = derivative

    @classmethod
    def build(cls, expr, x) -> "_Sampler | None":
        modules = [_GUARDS, "mpmath"]
        try:
            function = sp.lambdify(x, expr, modules=modules)
        except Exception:  # an expression lambdify cannot print: no sampling
            return None
        try:
            derivative = sp.lambdify(x, sp.diff(expr, x), modules=modules)
        except Exception:
            derivative = None
        return cls(function, derivative)

    def value(self, point):
        """f(point) as mpf/mpc, or None where it cannot be evaluated."""
        try:
            value = mpmath.mpmathify(self.function(point))
        except Exception:  # poles, huge arguments, domain errors
            return None
        if isinstance(value, mpmath.mpc) and value.imag == 0:
            value = value.real
        if mpmath.isnan(value) or mpmath.isinf(value):
            return None
        return value

    def sample(self, points, deadline) -> list:
        samples = []
        for point in points:
            if time.monotonic() > deadline:
                break
            value = self.value(mpmath.mpf(point.p) / point.q)
            if value is not None:
                samples.append((point, value))
        return samples

    def refine_minimum(self, center, step, deadline):
        """(point, value) of the local minimum near ``center`` (mpf), or None."""
        step = mpmath.mpf(step.numerator) / step.denominator
        a = mpmath.mpf(center.p) / center.q - step
        b = a + 2 * step
        value = self._real_value
        # golden section: robust even where f is flat or the derivative is unavailable
        ratio = (mpmath.sqrt(5) - 1) / 2
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        fc, fd = value(c), value(d)
        if fc is None or fd is None:
            return None
        while b - a > mpmath.mpf(10) ** (-14) * (1 + abs(a)):
            if time.monotonic() > deadline:
                return None
            if fc <= fd:
                b, d, fd = d, c, fc
                c = b - ratio * (b - a)
                fc = value(c)
            else:
                a, c, fc = c, d, fd
                d = a + ratio * (b - a)
                fd = value(d)
            if fc is None or fd is None:
                return None
        point = (a + b) / 2
        best = value(point)
        if best is None:
            return None
        # polish with a root of f' so that the point is good to ~30 digits
        if self.derivative is not None:
            try:
                root = mpmath.findroot(lambda t: self.derivative(t), point)
                root_value = value(mpmath.re(root))
                if abs(root - point) < step and root_value is not None \
                        and root_value <= best:
                    point, best = mpmath.re(root), root_value
            except Exception:  # no convergence: the golden-section point stands
                pass
        return point, best

    def _real_value(self, point):
        value = self.value(point)
        if value is None or _is_nonreal(value):
            return None
        return mpmath.re(value)


# -- interval arithmetic ---------------------------------------------------------------


class _Unsupported(Exception):
    """The expression uses something the interval evaluator does not know."""


class _OutsideDomain(ArithmeticError):
    """An interval reaches outside a function's domain (log of <= 0, a pole)."""


def _lower(interval):
    return mpmath.mp.make_mpf(interval._mpi_[0])


def _upper(interval):
    return mpmath.mp.make_mpf(interval._mpi_[1])


def _point(value):
    return _IV.mpf(value)


def _iv_exp(interval):
    a, b = _lower(interval), _upper(interval)
    if mpmath.isnan(a) or mpmath.isnan(b):
        raise _OutsideDomain("nan")
    # exp is increasing: bound huge arguments by exp(+-2**64) instead of computing them
    lo = mpmath.mpf(0) if a < -_HUGE else _lower(_IV.exp(_point(min(a, _HUGE))))
    hi = _INF if b > _HUGE else _upper(_IV.exp(_point(max(b, -_HUGE))))
    return _IV.mpf([lo, hi])


def _iv_log(interval):
    if not _lower(interval) > 0:
        raise _OutsideDomain("log of a value <= 0")
    return _IV.log(interval)


def _iv_periodic(function):
    def apply(interval):
        a, b = _lower(interval), _upper(interval)
        if not (abs(a) <= _HUGE and abs(b) <= _HUGE):
            return _IV.mpf([-1, 1])
        return function(interval)
    return apply


def _iv_tan(interval):
    a, b = _lower(interval), _upper(interval)
    cosine = _iv_periodic(_IV.cos)(interval)
    # no zero of cos in the interval: tan is continuous and increasing there
    if not (abs(a) <= _HUGE and abs(b) <= _HUGE) or (_lower(cosine) <= 0 <= _upper(cosine)):
        raise _OutsideDomain("tan near a pole")
    return _IV.mpf([_lower(_IV.tan(_point(a))), _upper(_IV.tan(_point(b)))])


def _cosh_point(t):
    e = _iv_exp(_point(t))
    return (e + 1 / e) / 2 if _lower(e) > 0 else _IV.mpf([1, _INF])


def _sinh_point(t):
    return (_iv_exp(_point(t)) - _iv_exp(_point(-t))) / 2


def _iv_cosh(interval):
    a, b = _lower(interval), _upper(interval)
    if a >= 0:  # increasing on [0, oo)
        lo, hi = _lower(_cosh_point(a)), _upper(_cosh_point(b))
    elif b <= 0:  # decreasing on (-oo, 0]
        lo, hi = _lower(_cosh_point(b)), _upper(_cosh_point(a))
    else:  # the minimum 1 is at 0
        lo, hi = mpmath.mpf(1), max(_upper(_cosh_point(a)), _upper(_cosh_point(b)))
    return _IV.mpf([max(lo, mpmath.mpf(1)), hi])


def _iv_sinh(interval):
    return _IV.mpf([_lower(_sinh_point(_lower(interval))), _upper(_sinh_point(_upper(interval)))])


def _tanh_point(t):
    # 1 - 2/(exp(2t) + 1): no cancellation trouble at either infinity
    return 1 - 2 / (_iv_exp(2 * _point(t)) + 1)


def _iv_tanh(interval):
    lo = max(_lower(_tanh_point(_lower(interval))), mpmath.mpf(-1))
    hi = min(_upper(_tanh_point(_upper(interval))), mpmath.mpf(1))
    return _IV.mpf([lo, hi])


def _atan_point(t):
    return _IV.atan2(_point(t), _IV.mpf(1))


def _iv_atan(interval):
    return _IV.mpf([_lower(_atan_point(_lower(interval))), _upper(_atan_point(_upper(interval)))])


def _iv_integer_power(interval, n: int):
    if n >= 0:
        return interval**n
    if _lower(interval) <= 0 <= _upper(interval):
        raise _OutsideDomain("division by an interval containing 0")
    return 1 / interval ** (-n)


def _iv_real_power(base, exponent):
    """base ** exponent for base > 0 (or base >= 0 with a positive constant exponent)."""
    a = _lower(base)
    if a > 0:
        return _iv_exp(exponent * _IV.log(base))
    if a == 0 and _lower(exponent) > 0:
        # increasing in the base from 0**e = 0
        top = _IV.mpf(_upper(base))
        if _upper(base) == 0:
            return _IV.mpf(0)
        return _IV.mpf([0, _upper(_iv_exp(exponent * _IV.log(top)))])
    raise _OutsideDomain("power of a base that may be negative")


_UNARY = {
    sp.exp: _iv_exp,
    sp.log: _iv_log,
    sp.sin: _iv_periodic(_IV.sin),
    sp.cos: _iv_periodic(_IV.cos),
    sp.tan: _iv_tan,
    sp.sinh: _iv_sinh,
    sp.cosh: _iv_cosh,
    sp.tanh: _iv_tanh,
    sp.atan: _iv_atan,
}


def _compile(expr, x) -> Callable:
    """An interval function enclosing ``expr``; raises _Unsupported for unknown nodes."""
    node = _compile_node(expr, x)
    if not expr.has(x):
        value = node(None)  # constants are evaluated once
        return lambda interval: value
    return node


def _compile_node(expr, x) -> Callable:
    if expr == x:
        return lambda interval: interval
    if expr.is_Integer:
        value = _IV.mpf(int(expr))
        return lambda interval: value
    if expr.is_Rational:
        value = _IV.mpf(int(expr.p)) / _IV.mpf(int(expr.q))
        return lambda interval: value
    if expr.is_Float:
        raw = expr._mpf_
        value = _IV.make_mpf((raw, raw))
        return lambda interval: value
    if expr is sp.pi:
        return lambda interval: _IV.pi
    if expr is sp.E:
        return lambda interval: _IV.e
    if isinstance(expr, sp.Add):
        parts = [_compile(a, x) for a in expr.args]

        def add(interval):
            total = parts[0](interval)
            for part in parts[1:]:
                total = total + part(interval)
            return total
        return add
    if isinstance(expr, sp.Mul):
        parts = [_compile(a, x) for a in expr.args]

        def mul(interval):
            product = parts[0](interval)
            for part in parts[1:]:
                product = product * part(interval)
            return product
        return mul
    if isinstance(expr, sp.Pow):
        base, exponent = expr.args
        base_f = _compile(base, x)
        if exponent.is_Integer:
            n = int(exponent)
            return lambda interval: _iv_integer_power(base_f(interval), n)
        if exponent == sp.S.Half:
            def square_root(interval):
                b = base_f(interval)
                if not _lower(b) >= 0:
                    raise _OutsideDomain("sqrt of a value that may be negative")
                return _IV.sqrt(b)
            return square_root
        exponent_f = _compile(exponent, x)
        return lambda interval: _iv_real_power(base_f(interval), exponent_f(interval))
    unary = _UNARY.get(type(expr))
    if unary is not None and len(expr.args) == 1:
        inner = _compile(expr.args[0], x)
        return lambda interval: unary(inner(interval))
    raise _Unsupported(expr)


class _IntervalProver:
    """Interval enclosures of subexpressions and sign rules built on them."""

    def __init__(self, x):
        self.x = x
        self._compiled = {}
        self._forms = {}
        self._signs = {}

    def compiled(self, expr) -> Callable | None:
        if expr not in self._compiled:
            try:
                self._compiled[expr] = _compile(expr, self.x)
            except _Unsupported:
                self._compiled[expr] = None
            except Exception:  # an odd constant that mpmath cannot enclose
                self._compiled[expr] = None
        return self._compiled[expr]

    def unknown(self, expr) -> str:
        """Name of the first node of ``expr`` the evaluator does not know."""
        try:
            _compile(expr, self.x)
        except _Unsupported as err:
            (node,) = err.args
            return f"{node.func.__name__} (in {node})"
        except Exception as err:
            return f"part of it ({err})"
        return "part of it"

    def enclose(self, expr, domain):
        """An interval containing expr(t) for every t in ``domain``; None if unavailable.

        None also when expr may be undefined somewhere on ``domain`` (log of a
        value <= 0, a pole, ...), so that a successful enclosure certifies that
        expr is defined on the whole domain.
        """
        function = self.compiled(expr)
        if function is None:
            return None
        try:
            result = function(domain)
        except Exception:  # outside the domain, or mpmath could not enclose it
            return None
        if mpmath.isnan(_lower(result)) or mpmath.isnan(_upper(result)):
            return None
        return result

    def alternative_forms(self, expr) -> list:
        if expr not in self._forms:
            forms = []
            if sp.count_ops(expr) <= _MAX_REWRITE_OPS:
                try:
                    # only hyperbolic functions: rewriting cos would bring in exp(I*x)
                    exponential = expr
                    for hyperbolic in (sp.tanh, sp.sinh, sp.cosh):
                        exponential = exponential.rewrite(hyperbolic, sp.exp)
                    for form in (sp.together(expr), sp.together(exponential)):
                        if form != expr and form not in forms:
                            forms.append(form)
                except Exception:  # a rewrite sympy cannot do: fewer forms
                    pass
            self._forms[expr] = forms
        return self._forms[expr]

    def positive(self, expr, domain, depth: int = 0) -> bool:
        """Sign rules: True only if expr is defined and > 0 at every point of ``domain``.

        Each rule certifies definedness too: an enclosure exists only where
        every operation is defined, and a rule that concludes without one
        (1/(exp(-x) + exp(x)) whose denominator interval reaches 0) relies on a
        positive subexpression, which is itself defined.
        """
        key = (expr, domain._mpi_)
        if key not in self._signs:
            self._signs[key] = False  # a rule that comes back to this question fails
            self._signs[key] = depth <= 40 and self._positive(expr, domain, depth)
        return self._signs[key]

    def _positive(self, expr, domain, depth: int) -> bool:
        bound = self.enclose(expr, domain)
        if bound is not None and _lower(bound) > 0:
            return True

        def defined(part):
            return self.enclose(part, domain) is not None

        def positive(part):
            return self.positive(part, domain, depth + 1)

        if isinstance(expr, (sp.exp, sp.cosh)):
            return defined(expr.args[0])
        if isinstance(expr, (sp.sinh, sp.tanh, sp.atan)):
            return positive(expr.args[0])
        if isinstance(expr, sp.log):
            return positive(expr.args[0] - 1)
        if isinstance(expr, sp.Pow):
            base, exponent = expr.args
            if positive(base) and (not exponent.has(self.x) or defined(exponent)):
                return True
            # an even power of a base that is negative throughout
            return bool(exponent.is_Integer and exponent % 2 == 0 and positive(-base))
        if isinstance(expr, sp.Mul):
            sign = 1
            for factor in expr.args:
                if factor.is_Number:
                    if factor.is_zero:
                        return False
                    sign *= 1 if factor.is_positive else -1
                elif positive(factor):
                    continue
                elif positive(-factor):
                    sign = -sign
                else:
                    return False
            return sign > 0
        if isinstance(expr, sp.Add):
            # one strictly positive term plus the others bounded below by 0
            # (exp(u) + (1 + cos(x)): the bracket touches 0, exp does not)
            strict = [t for t in expr.args if positive(t)]
            if len(strict) == len(expr.args):
                return True
            for term in strict[:4]:
                others = self.enclose(expr - term, domain)
                if others is not None and _lower(others) >= 0:
                    return True
            return False
        return False


def _branch_and_bound(prover, expr, x, radius, max_boxes, deadline):
    """Prove expr > 0 on [-radius, radius] by bisection.

    Returns ``(True, boxes, "")`` when proved; ``(False, boxes, point)`` when
    interval arithmetic shows expr(point) <= 0; ``(None, boxes, reason)``
    when the budget ran out.
    """
    function = prover.compiled(expr)
    derivative = prover.compiled(sp.diff(expr, x))
    stack = [(-radius, radius)]
    boxes = 0
    with mpmath.workprec(2 * _INTERVAL_PREC):
        while stack:
            if boxes >= max_boxes:
                return None, boxes, f"needed more than {max_boxes} boxes"
            if time.monotonic() > deadline:
                return None, boxes, f"ran out of time after {boxes} boxes"
            a, b = stack.pop()
            boxes += 1
            box = _IV.mpf([a, b])
            natural = _safe_call(function, box)
            if natural is not None and _lower(natural) > 0:
                continue
            middle = a + (b - a) / 2
            at_middle = _safe_call(function, _IV.mpf(middle))
            if at_middle is not None and _upper(at_middle) <= 0:
                return False, boxes, middle
            # the mean-value form needs f defined on the box (natural is not None)
            if natural is not None and at_middle is not None and derivative is not None:
                slope = _safe_call(derivative, box)
                # f(box) lies in f(m) + f'(box) (box - m)
                if slope is not None:
                    mean_value = at_middle + slope * (box - _IV.mpf(middle))
                    if _lower(mean_value) > 0:
                        continue
            if b - a < mpmath.mpf(2) ** (-40) * (1 + abs(middle)):
                where = mpmath.nstr(middle, 10)
                if natural is None:
                    return None, boxes, f"found f possibly undefined near x = {where}"
                return None, boxes, (
                    f"could not separate f from 0 near x = {where} (the minimum is too tight)"
                )
            stack.append((middle, b))
            stack.append((a, middle))
    return True, boxes, ""


def _safe_call(function, interval):
    try:
        result = function(interval)
    except Exception:  # undefined on part of the box, or not enclosable: no bound
        return None
    if mpmath.isnan(_lower(result)) or mpmath.isnan(_upper(result)):
        return None
    return result
