"""Arithmetic domains on which the single forward pass of :mod:`symattn.model` runs.

A domain knows how to build matrices from exact data, multiply and transpose
them, and apply column normalization ``S(A)`` with a normalizer.  The forward
pass calls nothing else, so the same code computes closed forms (sympy,
symengine), certified values (rationals, GF(p)), numerics (float64, mpmath),
and, through :mod:`symattn.algebra.modseries`, truncated power series and jets.

Examples
--------
>>> from symattn.algebra.domains import RationalDomain
>>> from symattn.normalizers import Normalizer
>>> QQ = RationalDomain()
>>> A = QQ.matrix([[0, 1], [1, 0]])
>>> QQ.attention(A, Normalizer("1 + x**2"))
array([[Fraction(1, 3), Fraction(2, 3)],
       [Fraction(2, 3), Fraction(1, 3)]], dtype=object)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from ..errors import DomainError

__all__ = [
    "Domain",
    "SympyDomain",
    "SymEngineDomain",
    "RationalDomain",
    "PrimeFieldDomain",
    "FloatDomain",
    "MpmathDomain",
]


class Domain:
    """The interface of a domain: matrices, products, and column normalization.

    Subclasses implement :meth:`convert`, :meth:`apply_normalizer`,
    :meth:`reciprocal`; matrices are 2-d numpy object arrays unless a
    subclass says otherwise.

    Examples
    --------
    A domain of exact sympy rationals in a few lines; :func:`symattn.model.forward`
    then runs on it unchanged.

    >>> import sympy as sp
    >>> from symattn.normalizers import Normalizer
    >>> class Rationals(Domain):
    ...     name = "sympy rationals"
    ...     def convert(self, value):
    ...         return sp.Rational(value)
    ...     def normalizer_value(self, normalizer, value):
    ...         return normalizer.evaluate(value)
    >>> D = Rationals()
    >>> D.attention(D.matrix([[0, 1], [2, 0]]), Normalizer("1 + x**2"))
    array([[1/6, 2/3],
           [5/6, 1/3]], dtype=object)
    >>> from symattn.model import Architecture, forward
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2")
    >>> forward(arch, arch.parameters_from([[[1]]], [[[1]]], [[[1]]]), [[0, 1]], D)
    array([[1/2, 2/3]], dtype=object)
    """

    name = "domain"

    def convert(self, value):
        """An element of the domain from an int, Fraction or sympy number."""
        raise NotImplementedError

    def matrix(self, rows) -> np.ndarray:
        """A matrix from nested lists (or a sympy Matrix / numpy array) of numbers."""
        if isinstance(rows, sp.MatrixBase):
            rows = rows.tolist()
        rows = [list(r) for r in rows]
        return np.array([[self.convert(v) for v in r] for r in rows], dtype=object).reshape(
            len(rows), len(rows[0]) if rows else 0
        )

    def shape(self, a) -> tuple[int, int]:
        return a.shape[0], a.shape[1]

    def matmul(self, a, b):
        return a.dot(b)

    def transpose(self, a):
        return a.T

    def apply_normalizer(self, a, normalizer):
        """``s`` applied entrywise."""
        out = np.empty(a.shape, dtype=object)
        for index, value in np.ndenumerate(a):
            out[index] = self.normalizer_value(normalizer, value)
        return out

    def normalizer_value(self, normalizer, value):
        raise NotImplementedError

    def reciprocal(self, value):
        return 1 / value

    def add(self, a, b):
        """The sum of two matrices of the same shape (heads, residual streams)."""
        return a + b

    def causal_mask(self, a):
        """``a`` with the entries below the diagonal (key ``j`` after query ``k``) set to exact zeros.

        Examples
        --------
        >>> RationalDomain().causal_mask(RationalDomain().matrix([[1, 2], [3, 4]]))
        array([[Fraction(1, 1), Fraction(2, 1)],
               [Fraction(0, 1), Fraction(4, 1)]], dtype=object)
        """
        out = a.copy()
        rows, cols = np.tril_indices(out.shape[0], -1, out.shape[1])
        for r, c in zip(rows, cols):
            out[r, c] = self.convert(0)
        return out

    def attention(self, scores, normalizer, causal: bool = False):
        """Column normalization ``S(A)``: every column of the result sums to 1.

        With ``causal``, column ``k`` is normalized over the keys ``j <= k``
        and the entries ``j > k`` are exact zeros.
        """
        weights = self.apply_normalizer(scores, normalizer)
        if causal:
            weights = self.causal_mask(weights)
        totals = weights.sum(axis=0)
        inverse = np.array([self.reciprocal(v) for v in totals], dtype=object)
        return weights * inverse[None, :]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SympyDomain(Domain):
    """Sympy expressions: closed forms and LaTeX.

    Parameters
    ----------
    unevaluated_normalizer : bool
        Write ``s(a)`` with an undefined function ``s`` instead of its expression.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> import sympy as sp
    >>> a = sp.Symbol("a")
    >>> SympyDomain(unevaluated_normalizer=True).normalizer_value(Normalizer("exp(x)"), a)
    s(a)
    """

    name = "sympy"

    def __init__(self, unevaluated_normalizer: bool = False):
        self.unevaluated_normalizer = unevaluated_normalizer

    def convert(self, value):
        return sp.sympify(value, strict=True)

    def normalizer_value(self, normalizer, value):
        if self.unevaluated_normalizer or normalizer.is_generic:
            return normalizer.function()(value)
        return normalizer.evaluate(value)

    def reciprocal(self, value):
        return 1 / value

    def to_matrix(self, a) -> sp.Matrix:
        return sp.Matrix(a.tolist())


class SymEngineDomain(Domain):
    """Symengine expressions: the same closed forms, built faster.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> D = SymEngineDomain()
    >>> D.normalizer_value(Normalizer("1 + x**2"), D.convert(3))
    10
    """

    name = "symengine"

    def __init__(self, unevaluated_normalizer: bool = False):
        import symengine

        self._se = symengine
        self.unevaluated_normalizer = unevaluated_normalizer
        self._cache: dict = {}

    def convert(self, value):
        return self._se.sympify(value)

    def normalizer_value(self, normalizer, value):
        se = self._se
        if self.unevaluated_normalizer or normalizer.is_generic:
            return se.Function("s")(value)
        key = id(normalizer)
        if key not in self._cache:
            variable = sp.Symbol("x")  # symengine keeps no assumptions: a plain symbol to substitute
            self._cache[key] = (se.Symbol("x"), se.sympify(normalizer.evaluate(variable)))
        symbol, expr = self._cache[key]
        return expr.subs({symbol: value})

    def to_matrix(self, a) -> sp.Matrix:
        matrix = sp.Matrix([[sp.sympify(v, strict=True) for v in row] for row in a.tolist()])
        # symengine keeps no assumptions: restore the real symbols of the architecture
        real = {s: sp.Symbol(s.name, real=True) for s in matrix.free_symbols if isinstance(s, sp.Symbol)}
        return matrix.xreplace(real)


class RationalDomain(Domain):
    """Exact rationals (``fractions.Fraction``); normalizers must be polynomials.

    Examples
    --------
    >>> RationalDomain().convert("3/4")
    Fraction(3, 4)
    """

    name = "QQ"

    def convert(self, value):
        if isinstance(value, sp.Basic):
            value = sp.nsimplify(value) if not value.is_Rational else value
            if not value.is_Rational:
                raise DomainError(f"{value} is not a rational number")
            return Fraction(int(value.p), int(value.q))
        return Fraction(value)

    def normalizer_value(self, normalizer, value):
        coefficients = _polynomial_coefficients(normalizer, self.name)
        out = Fraction(0)
        for c in reversed(coefficients):
            out = out * value + Fraction(int(c.p), int(c.q))
        return out


def _polynomial_coefficients(normalizer, domain_name: str):
    if not normalizer.is_polynomial:
        raise DomainError(
            f"normalizer {normalizer.name} cannot be evaluated exactly over {domain_name}: "
            "only polynomial normalizers can; use truncated series along a collapse curve, "
            "mpmath, or a polynomial normalizer such as 1 + x**2"
        )
    coefficients = normalizer.polynomial_coefficients
    if not all(c.is_Rational for c in coefficients):
        raise DomainError(f"normalizer {normalizer.name} has irrational coefficients")
    return coefficients


def is_prime(n: int) -> bool:
    """Deterministic primality for 64-bit integers (Miller-Rabin).

    Examples
    --------
    >>> is_prime(268435399), is_prime(268435400)
    (True, False)
    """
    if n < 2:
        return False
    for q in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % q == 0:
            return n == q
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        y = pow(a, d, n)
        if y in (1, n - 1):
            continue
        for _ in range(r - 1):
            y = y * y % n
            if y == n - 1:
                break
        else:
            return False
    return True


class PrimeFieldDomain(Domain):
    """The prime field GF(p) through python-flint's ``nmod``; polynomial normalizers.

    Examples
    --------
    >>> F = PrimeFieldDomain(7)
    >>> F.convert("1/2")
    4
    """

    name = "GF(p)"

    def __init__(self, p: int):
        if not isinstance(p, int) or not is_prime(p):
            raise DomainError(f"GF(p) needs a prime p, got {p!r}")
        import flint

        self.p = p
        self._nmod = flint.nmod
        self.name = f"GF({p})"

    def convert(self, value):
        value = sp.Rational(value) if not isinstance(value, sp.Basic) else value
        if not value.is_Rational:
            raise DomainError(f"{value} is not rational, so it has no image in GF({self.p})")
        if int(value.q) % self.p == 0:
            raise DomainError(f"{value} has a denominator divisible by {self.p}")
        return self._nmod(int(value.p), self.p) / self._nmod(int(value.q), self.p)

    def normalizer_value(self, normalizer, value):
        coefficients = _polynomial_coefficients(normalizer, self.name)
        out = self._nmod(0, self.p)
        for c in reversed(coefficients):
            out = out * value + self.convert(c)
        return out

    def reciprocal(self, value):
        if int(value) == 0:
            raise ZeroDivisionError(f"a column of s(A) sums to 0 mod {self.p}")
        return 1 / value


class FloatDomain(Domain):
    """float64 numbers (numerical estimates only).

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> FloatDomain().normalizer_value(Normalizer("exp(x)"), 0.0)
    1.0
    """

    name = "float64"

    def convert(self, value):
        return float(value)

    def normalizer_value(self, normalizer, value):
        return float(normalizer.numeric_float(value))


class MpmathDomain(Domain):
    """mpmath multiprecision reals at a chosen number of decimal digits.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> D = MpmathDomain(dps=30)
    >>> import mpmath
    >>> mpmath.nstr(D.normalizer_value(Normalizer("exp(x)"), D.convert(1)), 25)
    '2.718281828459045235360287'
    """

    def __init__(self, dps: int = 50):
        import mpmath

        self._mp = mpmath.mp.clone() if hasattr(mpmath.mp, "clone") else mpmath.mp
        self.dps = dps
        self.name = f"mpmath({dps} digits)"
        self._mpmath = mpmath

    def convert(self, value):
        with self._mpmath.workdps(self.dps):
            if isinstance(value, sp.Basic):
                return self._mpmath.mpf(sp.N(value, self.dps + 5))
            if isinstance(value, Fraction):
                return self._mpmath.mpf(value.numerator) / value.denominator
            return self._mpmath.mpf(value)

    def normalizer_value(self, normalizer, value):
        with self._mpmath.workdps(self.dps):
            return normalizer.numeric(value)

    def attention(self, scores, normalizer, causal: bool = False):
        with self._mpmath.workdps(self.dps):
            return super().attention(scores, normalizer, causal)

    def matmul(self, a, b):
        with self._mpmath.workdps(self.dps):
            return a.dot(b)

    def add(self, a, b):
        with self._mpmath.workdps(self.dps):
            return a + b
