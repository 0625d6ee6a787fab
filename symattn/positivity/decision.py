"""The positivity decision: its verdict, the order of its steps, exact polynomials, the wording.

:func:`decide_positivity` checks its input, then :class:`_Decider` runs the
steps in order: constants and polynomials over Q exactly (Sturm), otherwise
sampling and located minima for a disproof (confirmed exactly by
:mod:`symattn.positivity.signs`), then interval arithmetic for a proof
(:mod:`symattn.positivity.intervals`).  Each verdict says in one sentence how
it was reached.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import sympy as sp

from .intervals import _INF, _INTERVAL_PREC, _IV, _IntervalProver, _branch_and_bound, _lower
from .sampling import (_SAMPLE_DPS, _Sampler, _grid_points, _grid_step, _is_nonreal, _lowest_local_minima,
                       _median_magnitude, _tail_points)
from .signs import _exact_candidates, _exact_sign, _mpf_ratio, _substitute

__all__ = ["PositivityVerdict", "decide_positivity"]

#: Wall-clock budget of one decision, in seconds.
_TIME_BUDGET = 3.0
#: Polynomials of higher degree go through the interval route instead of Sturm.
_MAX_EXACT_DEGREE = 200
#: How many of the lowest sampled local minima are refined.
_MINIMA_TO_REFINE = 3
#: Exact sign checks allowed per located minimum (each is a sympy evaluation).
_CHECKS_PER_MINIMUM = 16


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

