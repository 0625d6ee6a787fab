"""Exact Taylor coefficients of normalizers with irrational constants (``exp(exp(x))``, ``exp(x + 1)``).

Coefficients are Laurent polynomials over Q in a few constants
(:class:`_Constant`), composed by the same series arithmetic as the rational
path (:mod:`symattn.normalizers.taylor`), with the addition theorems shifting
constant terms out of inner series; fractions are cancelled once, at the end,
and a coefficient that may be 0 is decided by ``simplify``.  Constants are
approximated without sympy's ``evalf`` (:func:`symattn.positivity.approximate_constant`).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import sympy as sp

from ..algebra.powerseries import series_exp, series_inv, series_log, series_pow
from ..positivity import approximate_constant
from .presets import x
from .taylor import _NotRational, _rational_taylor, _trig_from_exp

__all__ = ["function_taylor"]


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



def function_taylor(expr: sp.Expr, n: int) -> list:
    """Taylor coefficients of ``expr`` itself at 0 through degree ``n - 1``, exact (an activation, which may vanish at 0).

    The normalizers' paths give ``s/s(0)``; here the series of ``shift +
    expr`` (``shift`` 1, or 2 when ``expr(0) = -1``) is scaled back and
    shifted, and a function without a series rule goes through sympy's
    ``series`` (the expressions are small: the parser's limits).

    Examples
    --------
    >>> function_taylor(sp.tanh(x), 4)
    [0, 1, 0, -1/3]
    >>> function_taylor(x / 2 * (1 + sp.erf(x / sp.sqrt(2))), 3)
    [0, 1/2, sqrt(2)/(2*sqrt(pi))]
    """
    try:
        return [sp.Rational(c.numerator, c.denominator) for c in _rational_taylor(expr, n)]
    except _NotRational:
        pass
    value_at_zero = sp.simplify(expr.subs(x, 0))
    shift = 1 if sp.simplify(value_at_zero + 1) != 0 else 2
    try:
        scaled = _exact_taylor(expr + shift, n)
    except _NotExact:
        series = sp.series(expr, x, 0, n).removeO()
        return [sp.simplify(series.coeff(x, m)) for m in range(n)]
    return [sp.simplify(c * (value_at_zero + shift)) - (shift if m == 0 else 0) for m, c in enumerate(scaled)]
