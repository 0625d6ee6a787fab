"""Normalizers: the positive, real-analytic functions that attention normalizes.

A normalizer ``s`` turns a score matrix ``A`` into column-stochastic weights
``S(A)_{jk} = s(A_jk) / sum_j' s(A_j'k)``.  Because ``S`` does not change when
``s`` is multiplied by a positive constant, what matters is ``s/s(0)``, whose
Taylor expansion ``1 + c_k x^k + c_{k+1} x^{k+1} + ...`` defines the first
nonconstant degree ``k``.

Examples
--------
>>> from symattn.normalizers import Normalizer
>>> softmax = Normalizer.preset("softmax")
>>> softmax.k, softmax.is_even
(1, False)
>>> softmax.taylor(4)
[1, 1, 1/2, 1/6, 1/24]
>>> Normalizer("cosh(x)").k
2
>>> Normalizer.generic(k=2, even=True).taylor(6)
[1, 0, c_2, 0, c_4, 0, c_6]
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import cached_property

import mpmath
import sympy as sp

from .algebra.powerseries import (
    series_compose,
    series_exp,
    series_inv,
    series_log,
    series_mul,
    series_pow,
)
from .errors import NormalizerError
from .languages import PRESET_SUMMARY
from .parsing import NORMALIZER_LIMITS, measure_expression, parse_expression
from .positivity import CONSTANT_MAGNITUDE_BITS, ConstantTooLarge, approximate_constant, decide_positivity

__all__ = ["Normalizer", "PRESETS", "as_normalizer", "normalizers_per_layer", "x"]

#: The variable in which normalizers are written.
x = sp.Symbol("x", real=True)

#: The presets that are expressions, by name (``lightning`` and ``generic(k)`` are the other names of
#: :data:`symattn.languages.NORMALIZER_PRESETS`).
PRESETS = {
    "softmax": sp.exp(x),
    "exp": sp.exp(x),
    "cosh": sp.cosh(x),
    "quadratic": 1 + x**2,
    "gauss": sp.exp(x**2),
    "softplus": sp.log(1 + sp.exp(x)),
    "sigmoid": 1 / (1 + sp.exp(-x)),
}

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


class _NotExact(Exception):
    """Raised inside the exact Taylor path for a function it has no series rule for."""


#: Digits of the approximations that tell a nonzero Taylor coefficient from one that may be 0.
_DIGITS = 60
#: Terms of a numerator or denominator beyond which a Taylor coefficient is left uncancelled (still exact):
#: cancelling atan(tanh(cos(2*x + 1)))'s coefficients of degree 8 ran for minutes.
_MAX_TERMS = 400
#: Terms of a Taylor coefficient, as a polynomial in the constants, beyond which a normalizer is refused.
_MAX_CONSTANT_TERMS = 2000


class _TooComplex(Exception):
    """A Taylor coefficient with more than ``_MAX_CONSTANT_TERMS`` terms in the constants."""


#: Stands for a constant whose approximation is known, in :func:`approximate_constant`.
_Placeholder = sp.Dummy("c", real=True)


class _Constant:
    """An exact real constant as a Laurent polynomial over Q in "atoms" (``e``, ``pi``, ``exp(e)``, ``1/cosh(1)``).

    The Taylor coefficients of a normalizer with irrational constants are
    rational functions of a few such constants; sympy expressions for them
    grow without bound through nested series (``sympy.expand`` does not
    cancel fractions), this dictionary of monomials does not.  An atom may
    stand for the inverse of a polynomial in earlier atoms; the fractions
    are cancelled once, at the end.
    """

    __slots__ = ("terms",)

    def __init__(self, terms: dict):
        self.terms = terms  # {((atom, power), ...): Fraction}

    @staticmethod
    def lift(value) -> "_Constant":
        if isinstance(value, _Constant):
            return value
        value = Fraction(value)
        return _Constant({(): value} if value else {})

    def rational(self):
        """The value as a Fraction if it has no atoms, else None."""
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def __add__(self, other):
        other = _Constant.lift(other)
        terms = dict(self.terms)
        for monomial, c in other.terms.items():
            total = terms.get(monomial, 0) + c
            if total:
                terms[monomial] = total
            else:
                terms.pop(monomial, None)
        return _Constant(terms)

    __radd__ = __add__

    def __neg__(self):
        return _Constant({m: -c for m, c in self.terms.items()})

    def __sub__(self, other):
        return self + (-_Constant.lift(other))

    def __rsub__(self, other):
        return _Constant.lift(other) + (-self)

    def __mul__(self, other):
        if not isinstance(other, _Constant):
            other = Fraction(other)
            return _Constant({m: c * other for m, c in self.terms.items()} if other else {})
        terms: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                if not m1 or not m2:
                    monomial = m1 or m2
                else:
                    powers = dict(m1)
                    for atom, k in m2:
                        powers[atom] = powers.get(atom, 0) + k
                    monomial = tuple(sorted((a, k) for a, k in powers.items() if k))
                total = terms.get(monomial, 0) + c1 * c2
                if total:
                    terms[monomial] = total
                else:
                    terms.pop(monomial)
        if len(terms) > _MAX_CONSTANT_TERMS:
            raise _TooComplex(len(terms))
        return _Constant(terms)

    __rmul__ = __mul__

    def __truediv__(self, other):
        divisor = _Constant.lift(other).rational() if isinstance(other, _Constant) else Fraction(other)
        if not divisor:
            raise _NotExact("a division by a constant that is not a nonzero rational")
        return self * (1 / divisor)

    def __rtruediv__(self, other):
        value = self.rational()
        if not value:
            raise _NotExact("an inverse of a constant that is not a nonzero rational")
        return _Constant.lift(other) * (1 / value)

    def __eq__(self, other):
        if isinstance(other, (int, Fraction)):
            other = _Constant.lift(other)
        return isinstance(other, _Constant) and self.terms == other.terms

    __hash__ = None


def _exact_taylor(expr: sp.Expr, n: int) -> list:
    """Taylor coefficients of ``expr / expr(0)`` at 0 through degree ``n - 1``, exact sympy numbers.

    The path for irrational constants (``exp(exp(x))`` has ``s(0) = e``):
    the same composition of power series as :func:`_rational_taylor`, with
    coefficients that are polynomials in constants (:class:`_Constant`) and
    the constant term of an inner series shifted out by the addition
    theorems (``exp(c + v) = e^c exp(v)``, ``sin(c + v) = sin c cos v +
    cos c sin v``, ``log(c + v) = log c + log(1 + v/c)``, the inverse
    functions and ``erf`` by integrating their derivatives).  A few series
    operations per node, where sympy's ``series`` takes seconds at three
    nested levels and longer than a minute at four.  Raises ``_NotExact``
    for a function without a rule (the caller falls back to sympy's
    ``series``).
    """
    symbols: list = []  # one Dummy per atom
    values: list = []  # the atom's value, a sympy number
    approximations: list = []  # the atom's value as an mpmath number (None: unknown)
    inverses: dict = {}  # atom -> the _Constant it is the inverse of
    index: dict = {}
    memo: dict = {}

    def symbolic(c: _Constant) -> sp.Expr:
        return sp.Add(*(sp.Rational(q.numerator, q.denominator)
                        * sp.Mul(*(symbols[a] ** k for a, k in m)) for m, q in c.terms.items()))

    def value_of(c: _Constant) -> sp.Expr:
        """The sympy number: atoms replaced by their values (an argument of exp, sin, ...)."""
        rational = c.rational()
        if rational is not None:
            return sp.Rational(rational.numerator, rational.denominator)
        return symbolic(c).xreplace(dict(zip(symbols, values)))

    def approximate(c: _Constant, scale: bool = False):
        """``c`` as an mpmath number (None if an atom is unknown); with ``scale``, also the sum of |terms|."""
        total, size = mpmath.mpf(0), mpmath.mpf(0)
        for monomial, q in c.terms.items():
            term = mpmath.mpf(q.numerator) / q.denominator
            for a, k in monomial:
                if approximations[a] is None or approximations[a] == 0 and k < 0:
                    return (None, None) if scale else None
                term *= approximations[a] ** k
            total += term
            size += abs(term)
        return (total, size) if scale else total

    def atom(value: sp.Expr, key=None, approximation=None) -> _Constant:
        key = value if key is None else key
        if key not in index:
            index[key] = len(symbols)
            symbols.append(sp.Dummy(f"a{len(symbols)}"))
            values.append(value)
            approximations.append(approximation)
        return _Constant({((index[key], 1),): Fraction(1)})

    def number(value: sp.Expr, approximation=None) -> _Constant:
        """A sympy constant: a rational, or an atom."""
        if value.is_Rational:
            return _Constant.lift(Fraction(int(value.p), int(value.q)))
        if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo, sp.I):
            raise _NotExact(value)
        if value not in index and approximation is None:
            approximation = approximate_constant(value)
        return atom(value, approximation=approximation)

    def function_of(function, c: _Constant) -> _Constant:
        """``function(c)`` as a constant, its argument checked before sympy evaluates anything."""
        approximation = approximate_constant(function(_Placeholder), {_Placeholder: approximate(c)})
        return number(function(value_of(c)), approximation)

    def inverse_of(c: _Constant) -> _Constant:
        if c == 0:
            raise _NotExact("an inverse of 0")
        if len(c.terms) == 1:  # q * a**k * b**j: a Laurent monomial
            ((monomial, q),) = c.terms.items()
            return _Constant({tuple((a, -k) for a, k in monomial): 1 / q})
        key = ("inverse", frozenset(c.terms.items()))
        approximation = approximate(c)
        out = atom(1 / value_of(c), key, None if not approximation else 1 / approximation)
        inverses[next(iter(out.terms))[0][0]] = c
        return out

    one, zero = _Constant.lift(1), _Constant.lift(0)

    def constant(c: _Constant) -> list:
        return [c] + [zero] * (n - 1)

    def mul(a, b):
        out = [zero] * n
        for i, ai in enumerate(a):
            if ai == 0:
                continue
            for j in range(n - i):
                if b[j] != 0:
                    out[i + j] = out[i + j] + ai * b[j]
        return out

    def scale(a, c):
        return [c * ai for ai in a]

    def add(a, b, sign=1):
        return [ai + sign * bi for ai, bi in zip(a, b)]

    def shifted(u):
        return [zero] + list(u[1:])

    def normalized(w):
        """``w / w(0)`` (constant term exactly 1) and ``1 / w(0)``."""
        inverse = inverse_of(w[0])
        return [one] + [c * inverse for c in w[1:]], inverse

    def derivative(u):
        return [(i + 1) * u[i + 1] for i in range(n - 1)] + [zero]

    def integral(c, u):
        return [c] + [u[i - 1] / i for i in range(1, n)]

    def exp_of(u, sign=1):
        """``exp(sign * u)``; ``exp(-c)`` is the inverse of the atom ``exp(c)``."""
        out = series_exp(scale(shifted(u), sign), n)
        if u[0] == 0:
            return out
        factor = function_of(sp.exp, u[0])
        return scale(out, factor if sign > 0 else inverse_of(factor))

    def power(w, exponent: Fraction):
        # w**r = w(0)**r (w / w(0))**r
        unit, _ = normalized(w)
        rational = sp.Rational(exponent.numerator, exponent.denominator)
        approximation = approximate_constant(_Placeholder ** rational, {_Placeholder: approximate(w[0])})
        return scale(series_pow(unit, exponent, n), number(value_of(w[0]) ** sp.Rational(
            exponent.numerator, exponent.denominator), approximation))

    def inverse(w):
        unit, inverse_0 = normalized(w)
        return scale(series_inv(unit, n), inverse_0)

    def sin_cos(u):
        v = shifted(u)
        sin_v, cos_v = _trig_from_exp(v, n, cosine=False), _trig_from_exp(v, n, cosine=True)
        sin_c, cos_c = function_of(sp.sin, u[0]), function_of(sp.cos, u[0])
        return (add(scale(cos_v, sin_c), scale(sin_v, cos_c)), add(scale(cos_v, cos_c), scale(sin_v, sin_c), -1))

    def sinh_cosh(u):
        plus, minus = exp_of(u), exp_of(u, -1)
        return scale(add(plus, minus, -1), Fraction(1, 2)), scale(add(plus, minus), Fraction(1, 2))

    def series(e):
        if e in memo:
            return memo[e]
        if e == x:
            out = [zero, one] + [zero] * (n - 2)
        elif not e.has(x):
            out = constant(number(e))
        elif e.is_Add:
            out = constant(zero)
            for a in e.args:
                out = add(out, series(a))
        elif e.is_Mul:
            out = constant(one)
            for a in e.args:
                out = mul(out, series(a))
        elif e.is_Pow:
            base, exponent = e.args
            if exponent.has(x) or not exponent.is_Rational:  # a**u = exp(u log a)
                out = series(sp.exp(exponent * sp.log(base), evaluate=False))
            elif exponent.is_Integer:
                b = series(base) if int(exponent) >= 0 else inverse(series(base))
                out, k = constant(one), abs(int(exponent))
                while k:  # by squaring: exponents up to NORMALIZER_LIMITS.max_exponent
                    if k & 1:
                        out = mul(out, b)
                    k >>= 1
                    if k:
                        b = mul(b, b)
            else:
                out = power(series(base), Fraction(int(exponent.p), int(exponent.q)))
        elif len(e.args) == 1 and isinstance(e, sp.Function):
            u = series(e.args[0])
            if isinstance(e, sp.exp):
                out = exp_of(u)
            elif isinstance(e, sp.log):
                unit, _ = normalized(u)
                out = add(constant(function_of(sp.log, u[0])), series_log(unit, n))
            elif isinstance(e, (sp.sin, sp.cos, sp.tan)):
                sin_u, cos_u = sin_cos(u)
                out = sin_u if isinstance(e, sp.sin) else cos_u if isinstance(e, sp.cos) else \
                    mul(sin_u, inverse(cos_u))
            elif isinstance(e, (sp.sinh, sp.cosh, sp.tanh)):
                sinh_u, cosh_u = sinh_cosh(u)
                out = sinh_u if isinstance(e, sp.sinh) else cosh_u if isinstance(e, sp.cosh) else \
                    mul(sinh_u, inverse(cosh_u))
            elif isinstance(e, sp.atan):  # atan' = 1/(1 + u^2)
                out = integral(function_of(sp.atan, u[0]),
                               mul(derivative(u), inverse(add(constant(one), mul(u, u)))))
            elif isinstance(e, (sp.asin, sp.acos)):  # asin' = -acos' = (1 - u^2)^(-1/2)
                rate = mul(derivative(u), power(add(constant(one), mul(u, u), -1), Fraction(-1, 2)))
                out = integral(function_of(sp.asin, u[0]), rate) if isinstance(e, sp.asin) else \
                    integral(function_of(sp.acos, u[0]), scale(rate, -1))
            elif isinstance(e, sp.asinh):  # asinh' = (1 + u^2)^(-1/2)
                out = integral(function_of(sp.asinh, u[0]), mul(derivative(u), power(add(constant(one), mul(u, u)),
                                                                              Fraction(-1, 2))))
            elif isinstance(e, sp.erf):  # erf' = 2/sqrt(pi) exp(-u^2)
                out = integral(function_of(sp.erf, u[0]), scale(mul(derivative(u), exp_of(mul(u, u), -1)),
                                                        number(2 / sp.sqrt(sp.pi))))
            else:
                raise _NotExact(e)
        else:
            raise _NotExact(e)
        memo[e] = out
        return out

    with mpmath.workdps(_DIGITS):
        raw = series(expr)
        _, inverse_0 = normalized(raw)
        coefficients = [c * inverse_0 for c in raw[1:]]
    # 0 to _DIGITS - 10 digits relative to its terms: maybe 0 (simplify decides); else certainly not 0
        maybe_zero = []
        for c in coefficients:
            value, size = approximate(c, scale=True)
            maybe_zero.append(value is None or abs(value) <= size * mpmath.mpf(10) ** (10 - _DIGITS))
    if not inverses:  # polynomials in the atoms: nothing to cancel
        return [sp.Integer(1)] + [_simplified(value_of(c), zero) for c, zero in zip(coefficients, maybe_zero)]
    # with inverse atoms (b = 1/P, P itself a polynomial in atoms and earlier inverses): each coefficient
    # as one fraction of polynomials in the other atoms, cancelled by sympy's sparse polynomials (one gcd
    # per coefficient, not one per term), then the atoms' values put in
    from sympy.polys.domains import QQ
    from sympy.polys.rings import ring

    plain = [a for a in range(len(symbols)) if a not in inverses]
    polynomials, *generators = ring([symbols[a] for a in plain], QQ) if plain else ring([sp.Dummy()], QQ)
    generator = dict(zip(plain, generators))
    inverse_fractions: dict = {}

    def fraction(c: _Constant):
        """``c`` as (numerator, denominator), sympy ring elements, cancelled."""
        groups: dict = {}  # terms by denominator: a sum over one denominator needs no gcd
        for monomial, q in c.terms.items():
            top, bottom = polynomials.ground_new(QQ(q.numerator, q.denominator)), polynomials.one
            for a, k in monomial:
                if a in inverses:
                    a_top, a_bottom = inverse_fraction(a)
                else:
                    a_top, a_bottom = generator[a], polynomials.one
                if k < 0:
                    a_top, a_bottom, k = a_bottom, a_top, -k
                top, bottom = top * a_top ** k, bottom * a_bottom ** k
                if len(top) + len(bottom) > _MAX_TERMS:
                    raise _NotExact("too many terms to cancel")
            groups[bottom] = groups.get(bottom, polynomials.zero) + top
        numerator, denominator = polynomials.zero, polynomials.one
        for bottom, top in groups.items():
            numerator, denominator = numerator * bottom + top * denominator, denominator * bottom
            if len(numerator) + len(denominator) > _MAX_TERMS:
                raise _NotExact("too many terms to cancel")
        return numerator.cancel(denominator)

    def inverse_fraction(b: int):
        if b not in inverse_fractions:
            top, bottom = fraction(inverses[b])
            inverse_fractions[b] = (bottom, top)
        return inverse_fractions[b]

    replacement = {symbols[a]: values[a] for a in plain}

    def exact(c: _Constant) -> sp.Expr:
        top, bottom = fraction(c)
        return (top.as_expr() / bottom.as_expr()).xreplace(replacement)

    try:
        return [sp.Integer(1)] + [_simplified(exact(c), zero) for c, zero in zip(coefficients, maybe_zero)]
    except _NotExact:  # fractions of powers of fractions (atan(tanh(cos(x)))): exact, not cancelled
        return [sp.Integer(1)] + [_simplified(value_of(c), zero) for c, zero in zip(coefficients, maybe_zero)]


def _simplified(value: sp.Expr, maybe_zero: bool = True) -> sp.Expr:
    """A Taylor coefficient, and 0 when it is 0.

    ``maybe_zero`` is False when the coefficient is known to be far from 0
    (its approximation at 60 digits).  One that may be 0 but is not
    syntactically (``log(4) - 2 log(2)``, ``sin(1)**2 + cos(1)**2 - 1``) goes
    through ``simplify``, which decides ``k``; ``simplify`` of every
    coefficient would take seconds on the rational functions of ``e`` and
    ``e^e`` of nested exponentials.  One too large for ``simplify`` (over
    200 operations) is 0 when it is 0 to 55 digits.
    """
    if value.is_Rational or not maybe_zero:
        return value
    try:
        small = bool(abs(sp.N(value, 30)) < sp.Float("1e-25"))
    except (TypeError, ValueError, ArithmeticError):  # not a comparable number: simplify decides
        small = True
    if not small:
        return value
    if sp.count_ops(value) <= 200:
        return sp.simplify(value)
    return sp.Integer(0) if bool(abs(sp.N(value, 60)) < sp.Float("1e-55")) else value


def _parse(expression) -> sp.Expr:
    if isinstance(expression, str):
        if expression.strip().lower() in PRESETS:
            return PRESETS[expression.strip().lower()]
        if expression.strip().lower().startswith("generic"):
            if _generic_name(expression.strip().lower()) is not None:
                raise NormalizerError(
                    f"{expression.strip()!r} is generic Taylor data, not an expression: use "
                    f"as_normalizer({expression.strip()!r}) or Normalizer.generic(k, even)")
            raise NormalizerError(
                f"cannot read the generic normalizer {expression.strip()!r:.80}: write generic, generic(k), "
                "generic(k=2), generic(2, even) or generic(k=2, even=True), with k a positive integer")
        if expression.strip().isidentifier() and expression.strip() != "x":
            raise NormalizerError(
                f"unknown normalizer {expression.strip()!r:.80}: presets are {PRESET_SUMMARY}; "
                "or give an expression in x such as 'exp(x)' or '1 + x**2'")
        expr = parse_expression(expression, {}, what="normalizer", limits=NORMALIZER_LIMITS,
                                error=NormalizerError, variable=x)
    elif isinstance(expression, sp.Basic):
        expr = expression
    else:
        raise NormalizerError(
            f"a normalizer is a preset name ({PRESET_SUMMARY}), an expression in x such as "
            f"'1 + x**2', or a sympy expression; got {type(expression).__name__} {expression!r:.60}")
    if not isinstance(expr, sp.Expr):
        raise NormalizerError(f"normalizer {expression!r} is not an expression in x")
    if expr.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise NormalizerError(f"normalizer {expression!r} is not finite; give a finite expression in x")
    undefined = sorted({str(f.func) for f in expr.atoms(sp.core.function.AppliedUndef)})
    if undefined:
        raise NormalizerError(
            f"normalizer {expression!r} uses unknown function(s) {', '.join(undefined)}; "
            "use functions such as exp, cosh, log, sin, or a preset: " + PRESET_SUMMARY
        )
    if isinstance(expr, sp.Symbol) and expr != x:
        raise NormalizerError(
            f"unknown normalizer {expression!r}: presets are {PRESET_SUMMARY}; "
            "or give an expression in x such as 'exp(x)'"
        )
    free = expr.free_symbols
    if len(free) > 1:
        names = ", ".join(sorted(str(s) for s in free))
        raise NormalizerError(
            f"normalizer {expression!r} has more than one free symbol ({names}); "
            "a normalizer is a function of one variable x"
        )
    if free and free != {x}:
        (other,) = free
        expr = expr.subs(other, x)
    _check_size(expr, expression)
    return expr


def _check_size(expr: sp.Expr, given) -> None:
    """The limits of :data:`~symattn.parsing.NORMALIZER_LIMITS`, also for expressions not given as text.

    Among them the nesting of transcendental functions (at most 3):
    ``exp(exp(exp(exp(x))))`` is refused before any series is computed.
    """
    limits = NORMALIZER_LIMITS
    if sp.count_ops(expr) > limits.max_nodes:
        raise NormalizerError(f"normalizer {given!r:.80} is too large: more than {limits.max_nodes} operations")
    measure_expression(expr, what="normalizer", limits=limits, error=NormalizerError)


class Normalizer:
    """A positive, nonconstant, real-analytic normalizer, or generic Taylor data.

    Parameters
    ----------
    expression : str or sympy expression
        A function of ``x`` (another single symbol is renamed to ``x``).
    name : str, optional
        Display name; defaults to the expression.
    assume_positive : bool
        Accept the normalizer when positivity on R cannot be decided.

    Raises
    ------
    NormalizerError
        For an expression that does not parse, has several free symbols, is
        constant, is not real-analytic on R, or is not positive on R.

    Examples
    --------
    >>> Normalizer("1 + x**2").k
    2
    >>> Normalizer("1 + x**3")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: normalizer 1 + x**3 is not positive on R: at x = -2 it equals -7
    >>> Normalizer("Abs(x) + 1")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: normalizer Abs(x) + 1 is not real-analytic: it uses Abs; use a smooth expression such as exp(x), cosh(x) or 1 + x**2
    """

    #: Whether this is HMK's lightning attention (no normalization).
    is_lightning = False

    def __init__(self, expression, name: str | None = None, assume_positive: bool = False):
        self.expr = _parse(expression)
        self.name = name or (expression.strip() if isinstance(expression, str) else str(self.expr))
        self.is_generic = False
        self._symbols: dict[int, sp.Symbol] = {}
        self._validate(assume_positive)
        self._taylor: list = []

    # -- construction -------------------------------------------------------------
    @classmethod
    def preset(cls, name: str) -> "Normalizer":
        """A named normalizer of :data:`symattn.languages.NORMALIZER_PRESETS`.

        softmax (= exp), cosh, quadratic, gauss, softplus, sigmoid, lightning
        (:meth:`lightning`) and generic(k[, even]) (:meth:`generic`).

        Examples
        --------
        >>> Normalizer.preset("gauss").expr
        exp(x**2)
        >>> Normalizer.preset("lightning").is_lightning, Normalizer.preset("generic(2, even)").name
        (True, 'generic(k=2, even)')
        """
        key = name.strip().lower() if isinstance(name, str) else None
        if key == "lightning":
            return Lightning()
        generic = _generic_name(key) if key is not None else None
        if generic is not None:
            return cls.generic(*generic)
        if key not in PRESETS:
            raise NormalizerError(f"unknown normalizer preset {name!r:.80}; presets are {PRESET_SUMMARY}")
        norm = cls.__new__(cls)
        norm.expr = PRESETS[key]
        norm.name = key
        norm.is_generic = False
        norm._symbols = {}
        norm._taylor = []
        return norm

    @classmethod
    def lightning(cls) -> "Normalizer":
        """HMK's lightning attention (no normalization), a comparison case."""
        return Lightning()

    @classmethod
    def generic(cls, k: int = 1, even: bool = False) -> "Normalizer":
        """Generic Taylor data ``1 + c_k x^k + c_{k+1} x^{k+1} + ...`` with ``c_k != 0``.

        Examples
        --------
        >>> g = Normalizer.generic(k=1)
        >>> g.taylor(3)
        [1, c_1, c_2, c_3]
        >>> g.taylor(1)[1].is_nonzero
        True
        """
        if not isinstance(k, int) or k < 1:
            raise NormalizerError(f"first nonconstant degree k must be a positive integer, got {k!r}")
        if even and k % 2:
            raise NormalizerError(f"an even normalizer has even k, got k = {k}")
        norm = cls.__new__(cls)
        norm.expr = None
        norm.name = f"generic(k={k}{', even' if even else ''})"
        norm.is_generic = True
        norm._generic_k = k
        norm._generic_even = bool(even)
        norm._symbols = {}
        norm._taylor = []
        return norm

    # -- validation ---------------------------------------------------------------
    def _validate(self, assume_positive: bool) -> None:
        expr = self.expr
        bad = sorted({type(a).__name__ for a in expr.atoms(*_NOT_ANALYTIC)} | {
            type(f).__name__ for f in expr.atoms(sp.Function) if isinstance(f, _NOT_ANALYTIC)
        })
        if bad:
            raise NormalizerError(
                f"normalizer {self.name} is not real-analytic: it uses {', '.join(bad)}; "
                "use a smooth expression such as exp(x), cosh(x) or 1 + x**2"
            )
        if not expr.has(x) or sp.simplify(sp.diff(expr, x)) == 0:
            raise NormalizerError(
                f"normalizer {self.name} is constant; attention with a constant normalizer "
                "is uniform: give a nonconstant function of x"
            )
        self._check_domain()
        if assume_positive:
            # S(A) divides by s(0): even an assumed-positive normalizer needs s(0) > 0 exactly
            at_zero = sp.simplify(expr.subs(x, 0))
            if at_zero.is_positive is not True:
                raise NormalizerError(
                    f"normalizer {self.name} has s(0) = {at_zero}; assume_positive still requires s(0) > 0 "
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
            raise NormalizerError(f"normalizer {self.name} is not positive on R: at x = {point} it equals {shown}")
        raise NormalizerError(
            f"cannot decide whether normalizer {self.name} is positive on R ({verdict.method}); "
            "if it is, pass --assume-positive (assume_positive=True in Python)"
        )

    def _check_domain(self) -> None:
        expr = self.expr
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
                f"normalizer {self.name} is not real-analytic on all of R "
                f"(not defined or not continuous on {gap}); a normalizer must be "
                "analytic at every real number"
            )

    # -- Taylor data --------------------------------------------------------------
    def coefficient_symbol(self, degree: int) -> sp.Symbol:
        """The symbol ``c_degree`` of a generic normalizer."""
        if degree not in self._symbols:
            nonzero = degree == getattr(self, "_generic_k", None)
            self._symbols[degree] = sp.Symbol(f"c_{degree}", real=True, nonzero=nonzero or None)
        return self._symbols[degree]

    def taylor(self, degree: int) -> list:
        """Taylor coefficients of ``s/s(0)`` at 0 for degrees ``0..degree``.

        Exact: sympy Rationals when they are rational, symbols ``c_j`` for a
        generic normalizer, exact sympy numbers otherwise.

        Examples
        --------
        >>> Normalizer.preset("sigmoid").taylor(3)
        [1, 1/2, 0, -1/24]
        """
        if degree < 0:
            raise NormalizerError(f"Taylor degree must be >= 0, got {degree}")
        if len(self._taylor) <= degree:
            self._taylor = self._compute_taylor(max(degree + 1, 2 * len(self._taylor)))
        return self._taylor[: degree + 1]

    def _compute_taylor(self, n: int) -> list:
        if self.is_generic:
            k, even = self._generic_k, self._generic_even
            out = [sp.Integer(1)]
            for m in range(1, n):
                if m < k or (even and m % 2):
                    out.append(sp.Integer(0))
                else:
                    out.append(self.coefficient_symbol(m))
            return out
        try:
            coeffs = _rational_taylor(self.expr, n)
            return [sp.Rational(c.numerator, c.denominator) / sp.Rational(
                coeffs[0].numerator, coeffs[0].denominator) for c in coeffs]
        except _NotRational:
            pass
        try:  # irrational constants: the same series arithmetic over polynomials in the constants
            coefficients = _exact_taylor(self.expr, n)
        except ConstantTooLarge as err:
            raise NormalizerError(
                f"normalizer {self.name}: its Taylor coefficients at 0 need {err.name} of a number beyond "
                f"2**{CONSTANT_MAGNITUDE_BITS}, which cannot be evaluated (sympy evaluates such constants even "
                f"to print them); arguments of exp, sin, cos, tan, sinh, cosh, tanh up to "
                f"2**{CONSTANT_MAGNITUDE_BITS} are accepted") from None
        except _TooComplex:
            raise NormalizerError(
                f"normalizer {self.name}: its Taylor coefficients at 0 (degree {n - 1}) are too large to compute "
                f"exactly: polynomials of more than {_MAX_CONSTANT_TERMS} terms in its constants; use a normalizer "
                "with simpler constants, or Normalizer.generic(k)") from None
        except _NotExact:
            # a function without a series rule (from a sympy expression): sympy's series, on an
            # expression the size limits keep small (at most 3 nested functions)
            series = sp.series(self.expr, x, 0, n).removeO()
            poly = sp.Poly(series, x)
            raw = [poly.coeff_monomial(x**m) for m in range(n)]
            coefficients = [sp.simplify(c / raw[0]) for c in raw]
        if any(c.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or c.free_symbols for c in coefficients):
            raise NormalizerError(f"normalizer {self.name} has no finite Taylor expansion at 0: "
                                  f"s/s(0) = {' + '.join(map(str, coefficients[:3]))} + ...")
        return coefficients

    @cached_property
    def k(self) -> int:
        """First nonconstant degree of ``s/s(0)``."""
        if self.is_generic:
            return self._generic_k
        degree = 8
        while degree <= 512:
            coeffs = self.taylor(degree)
            for m, c in enumerate(coeffs[1:], start=1):
                if c != 0:
                    return m
            degree *= 2
        raise NormalizerError(f"normalizer {self.name}: no nonzero Taylor coefficient up to degree 512")

    @cached_property
    def is_even(self) -> bool:
        """Whether ``s(-x) = s(x)``."""
        if self.is_generic:
            return self._generic_even
        return sp.simplify(self.expr.subs(x, -x) - self.expr) == 0

    @cached_property
    def is_polynomial(self) -> bool:
        """Whether ``s`` is a polynomial (then the model is polynomial in its parameters)."""
        return not self.is_generic and self.expr.is_polynomial(x)

    @cached_property
    def is_exponential(self) -> bool:
        """Whether ``s(x) = C e^{a x}`` (so ``S(A + 1 u^T) = S(A)``)."""
        if self.is_generic:
            return False
        ratio = sp.simplify(sp.diff(self.expr, x) / self.expr)
        return not ratio.has(x)

    @property
    def has_rational_taylor(self) -> bool:
        """Whether every Taylor coefficient of ``s/s(0)`` is rational."""
        return not self.is_generic and all(c.is_Rational for c in self.taylor(8))

    # -- evaluation ---------------------------------------------------------------
    def function(self) -> sp.Function:
        """The unevaluated function symbol ``s`` used in closed forms."""
        return sp.Function("s")

    def evaluate(self, value):
        """``s(value)`` for a sympy expression, float, mpmath number or Fraction.

        Examples
        --------
        >>> Normalizer("1 + x**2").evaluate(3)
        10
        """
        if self.is_generic:
            raise NormalizerError(
                "a generic normalizer has only Taylor data; evaluate it on power series "
                "with zero constant term, or use the unevaluated function s"
            )
        return self.expr.subs(x, value)

    @cached_property
    def numeric(self):
        """``s`` as an mpmath-callable function."""
        if self.is_generic:
            raise NormalizerError("a generic normalizer cannot be evaluated numerically")
        return sp.lambdify(x, self.expr, modules="mpmath")

    @cached_property
    def numeric_float(self):
        """``s`` as a numpy-callable function (float64)."""
        if self.is_generic:
            raise NormalizerError("a generic normalizer cannot be evaluated numerically")
        return sp.lambdify(x, self.expr, modules="numpy")

    @cached_property
    def derivative_numeric(self):
        """``s'`` as an mpmath-callable function."""
        return sp.lambdify(x, sp.diff(self.expr, x), modules="mpmath")

    @cached_property
    def derivative_numeric_float(self):
        """``s'`` as a numpy-callable function (float64)."""
        return sp.lambdify(x, sp.diff(self.expr, x), modules="numpy")

    @cached_property
    def polynomial_coefficients(self) -> list:
        """Coefficients of ``s`` (not normalized) when ``s`` is a polynomial, lowest first."""
        if not self.is_polynomial:
            raise NormalizerError(f"normalizer {self.name} is not a polynomial")
        return list(reversed(sp.Poly(self.expr, x).all_coeffs()))

    def latex(self) -> str:
        """LaTeX of ``s(x)``."""
        if self.is_generic:
            k = self._generic_k
            step = 2 if self._generic_even else 1
            return rf"1 + c_{{{k}}} x^{{{k}}} + c_{{{k + step}}} x^{{{k + step}}} + \cdots"
        return sp.latex(self.expr)

    def to_json(self) -> dict:
        """A JSON-ready description."""
        return {
            "name": self.name,
            "expression": None if self.is_generic else str(self.expr),
            "k": self.k,
            "even": self.is_even,
            "generic": self.is_generic,
        }

    def __repr__(self) -> str:
        return f"Normalizer({self.name!r})"

    def __eq__(self, other) -> bool:
        """Equal when they are the same function: the same expression, or generic data of the same ``k`` and parity.

        Generic normalizers of one ``k`` and parity share their symbols
        ``c_j``, so they are one normalizer (also after pickling).

        Examples
        --------
        >>> import pickle
        >>> Normalizer.generic(k=2) == pickle.loads(pickle.dumps(Normalizer.generic(k=2)))
        True
        >>> Normalizer.generic(k=2) == Normalizer.generic(k=2, even=True), Normalizer.generic() == as_normalizer("exp(x)")
        (False, False)
        """
        if not isinstance(other, Normalizer):
            return NotImplemented
        if self.is_generic or other.is_generic:
            return self.is_generic and other.is_generic and \
                (self._generic_k, self._generic_even) == (other._generic_k, other._generic_even)
        return self.expr == other.expr

    def __hash__(self) -> int:
        return hash(self.name if self.is_generic else self.expr)


class Lightning(Normalizer):
    """HMK's lightning attention: no normalization, ``S(A) = A``.

    Not a normalizer (it is neither positive nor column-stochastic); it is the
    comparison case of Henry, Marchetti and Kohn.  The forward pass uses the
    scores themselves as attention weights.

    Examples
    --------
    >>> lightning = Normalizer.lightning()
    >>> lightning.is_lightning, lightning.is_even
    (True, False)
    """

    is_lightning = True

    def __init__(self):
        self.expr = x
        self.name = "lightning"
        self.is_generic = False
        self._symbols = {}
        self._taylor = []

    @property
    def k(self):
        """Lightning attention has no first nonconstant degree: ``None``."""
        return None

    @property
    def is_even(self) -> bool:
        return False

    @property
    def is_exponential(self) -> bool:
        return False

    def taylor(self, degree: int) -> list:
        raise NormalizerError("lightning attention has no normalizer and no Taylor data")

    def latex(self) -> str:
        return r"\mathrm{id}"

    def to_json(self) -> dict:
        return {"name": "lightning", "expression": None, "k": None, "even": False, "generic": False,
                "lightning": True}

    def __eq__(self, other) -> bool:
        return isinstance(other, Lightning)

    def __hash__(self) -> int:
        return hash("lightning")


def as_normalizer(value, assume_positive: bool = False) -> Normalizer:
    """A :class:`Normalizer` from a preset name, an expression or a Normalizer.

    ``assume_positive`` is passed to :class:`Normalizer` for an expression.

    Examples
    --------
    >>> as_normalizer("softmax").name
    'softmax'
    >>> as_normalizer("exp(2*x)").k
    1
    """
    if isinstance(value, Normalizer):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key == "lightning" or key in PRESETS or _generic_name(key) is not None:
            return Normalizer.preset(key)
    return Normalizer(value, assume_positive=assume_positive)


#: ``generic``, ``generic(2)``, ``generic(k=2)``, ``generic(2, even)``, ``generic(k=2, even=True)``: read by
#: this pattern only (user text is data, never code).
_GENERIC = re.compile(r"generic(?:\(\s*(?:k\s*=\s*)?(\d{1,4})\s*(?:,\s*(even)(?:\s*=\s*(true|false))?\s*)?\))?")


def _generic_name(key: str):
    """``(k, even)`` of a generic normalizer's name (lower case), None for another name.

    Examples
    --------
    >>> _generic_name("generic"), _generic_name("generic(k=2, even)"), _generic_name("generic(2, even=false)")
    ((1, False), (2, True), (2, False))
    >>> _generic_name("generic(x)") is None
    True
    """
    match = _GENERIC.fullmatch(key)
    if match is None:
        return None
    k, even, flag = match.groups()
    return (int(k) if k else 1), (even is not None and flag != "false")


def normalizers_per_layer(value, layers: int) -> list[Normalizer]:
    """One normalizer per layer: a list is read entry by entry, anything else is repeated.

    Examples
    --------
    >>> [n.name for n in normalizers_per_layer("cosh", 2)]
    ['cosh', 'cosh']
    >>> [n.name for n in normalizers_per_layer(["softmax", "1 + x**2"], 2)]
    ['softmax', '1 + x**2']
    """
    if isinstance(value, (list, tuple)):
        return [as_normalizer(v) for v in value]
    norm = as_normalizer(value)
    return [norm] * layers
