"""Interval arithmetic for positivity proofs: an enclosing evaluator, sign rules, branch and bound.

A private :mod:`mpmath` interval context (80 bits, outward rounding) encloses
``+``, ``*``, powers, exp, log, sqrt, sin, cos, tan, sinh, cosh, tanh and atan
of an interval; huge arguments are bounded, never evaluated.  On top of it,
:class:`_IntervalProver` proves ``f > 0`` on an interval by enclosures and sign
rules (``exp(u) > 0``, ``log(u) > 0`` when ``u > 1``, ...), and
:func:`_branch_and_bound` proves it on ``[-radius, radius]`` by bisection with
the mean-value form.  Used by :func:`symattn.positivity.decide_positivity`.
"""

from __future__ import annotations

import time
from typing import Callable

import mpmath
import sympy as sp
from mpmath.ctx_iv import MPIntervalContext

#: Bits of the interval context used for proofs.
_INTERVAL_PREC = 80
#: Arguments of exp/sin/... beyond 2**_HUGE_MAG are bounded, never evaluated:
#: mpmath would need about that many bits to reduce them (and would hang).
_HUGE_MAG = 64
#: Expressions with more operations are not rewritten (sympy's together can be slow).
_MAX_REWRITE_OPS = 40

# A private interval context: its precision never leaks into mpmath.iv.
_IV = MPIntervalContext()
_IV.prec = _INTERVAL_PREC
_HUGE = mpmath.mpf(2) ** _HUGE_MAG
_INF = mpmath.inf


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
