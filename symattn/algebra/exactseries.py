"""Exact coefficient fields for truncated series: sympy expressions, flint rationals, flint polynomials.

:class:`~symattn.algebra.modseries.ExactSeriesDomain` holds the series
arithmetic with sympy coefficients; the domains here override only its
coefficient hooks (``residue``, ``_canonical``, the zero tests, scalar
inversion), so one series arithmetic serves every exact field:

* :class:`SymbolicSeriesDomain`: sympy coefficients, where some generic
  normalizer coefficients ``c_j`` may take given values, with a guard on the
  number of terms of a coefficient;
* :class:`RationalSeriesDomain`: python-flint ``fmpq``, for rational points;
* :class:`PolynomialSeriesDomain`: python-flint ``fmpq_mpoly`` polynomials
  over Q in chosen symbols (parameters, inputs, ``c_j``), orders of
  magnitude faster than expanded sympy expressions.

Examples
--------
>>> import numpy as np, sympy as sp
>>> a, b = sp.symbols("a b")
>>> D = PolynomialSeriesDomain(3, [a, b])
>>> x = D.from_coefficients(np.array([[[[1, a, 0]]]], dtype=object))
>>> y = D.from_coefficients(np.array([[[[b, 1, 0]]]], dtype=object))
>>> [D.to_sympy(c) for c in D.coefficients(D.matmul(x, y))[0, 0, 0]]
[b, a*b + 1, a]
"""

from __future__ import annotations

import os

import numpy as np
import sympy as sp

from ..errors import DomainError, ResourceLimitError, TruncationError
from .modseries import ExactSeriesDomain

__all__ = [
    "SymbolicSeriesDomain",
    "RationalSeriesDomain",
    "PolynomialSeriesDomain",
    "to_fmpq",
    "from_fmpq",
]


def to_fmpq(value):
    """A python-flint rational from an int, a sympy Rational or an ``fmpq``.

    Examples
    --------
    >>> to_fmpq(sp.Rational(-3, 4))
    -3/4
    """
    import flint

    if isinstance(value, flint.fmpq):
        return value
    if isinstance(value, (int, np.integer)):
        return flint.fmpq(int(value))
    value = sp.sympify(value, strict=True)
    if not value.is_Rational:
        raise DomainError(f"{value} is not rational")
    return flint.fmpq(int(value.p), int(value.q))


def from_fmpq(value) -> sp.Expr:
    """A sympy number from a python-flint rational (other values through strict sympify).

    Examples
    --------
    >>> import flint
    >>> from_fmpq(flint.fmpq(2, 6))
    1/3
    """
    import flint

    if isinstance(value, flint.fmpq):
        return sp.Rational(int(value.p), int(value.q))
    return sp.sympify(value, strict=True)


def resident_bytes() -> int:
    """The memory this process holds now (its resident set; on systems without ``/proc``, its peak).

    Examples
    --------
    >>> resident_bytes() > 0
    True
    """
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _guard_growth(domain, out, largest: int):
    """``out``, unless one coefficient has grown past ``domain.max_terms`` terms or memory past ``max_bytes``.

    A symbolic expansion has no size that an estimate could know before it
    runs (its terms depend on the cancellations), so its memory is watched
    as it grows: after each series product.
    """
    if largest > domain.max_terms:
        raise TruncationError(
            f"the symbolic expansion {domain.description}grows beyond {domain.max_terms} terms in one "
            f"coefficient ({largest}); give numbers for some symbols with point=..., lower the order, "
            f"use leading_coefficient for the matrix formulas, or raise max_terms")
    if domain.max_bytes is not None and resident_bytes() > domain.max_bytes:
        raise ResourceLimitError(
            f"the symbolic expansion {domain.description}holds {resident_bytes() / 2**20:.0f} MiB, over the "
            f"limit of {domain.max_bytes / 2**20:.0f} MiB; lower the truncation (--truncation), give numbers for some "
            f"symbols with point=..., or raise the limit with --max-memory SIZE (or max_memory=, "
            f"SYMATTN_MAX_MEMORY)")
    return out


def _terms(value) -> int:
    return len(value.args) if isinstance(value, sp.Add) else 1


class SymbolicSeriesDomain(ExactSeriesDomain):
    """Exact series over sympy, where some generic coefficients ``c_j`` may take given values.

    Raises TruncationError as soon as a coefficient has more than
    ``max_terms`` terms, instead of running for minutes or hours.

    Examples
    --------
    >>> c1 = sp.Symbol("c_1")
    >>> D = SymbolicSeriesDomain(2, {c1: 3}, max_terms=10)
    >>> D.residue(c1 + 1)
    4
    """

    def __init__(self, truncation: int, coefficient_values: dict | None = None,
                 max_terms: int = 5000, description: str = "", max_bytes: int | None = None):
        super().__init__(truncation)
        self.coefficient_values = dict(coefficient_values or {})
        self.max_terms = max_terms
        self.max_bytes = max_bytes
        self.description = description

    def residue(self, value):
        return sp.sympify(value, strict=True).xreplace(self.coefficient_values)

    def _series_mul(self, a, b):
        out = super()._series_mul(a, b)
        return _guard_growth(self, out, max((_terms(v) for v in out.flat), default=0))


class RationalSeriesDomain(ExactSeriesDomain):
    """Truncated series over Q with python-flint ``fmpq`` coefficients.

    For points where every parameter, input entry and normalizer coefficient
    is rational: much faster than sympy numbers.

    Examples
    --------
    >>> D = RationalSeriesDomain(2)
    >>> D.residue(sp.Rational(1, 3)) * 3
    1
    """

    def __init__(self, truncation: int, coefficient_values: dict | None = None):
        super().__init__(truncation)
        self.coefficient_values = dict(coefficient_values or {})
        self.name = f"Q[[eps]]/eps^{self.truncation} (flint fmpq)"

    def residue(self, value):
        import flint

        if isinstance(value, (flint.fmpq, int, np.integer)):
            return to_fmpq(value)
        value = sp.sympify(value, strict=True).xreplace(self.coefficient_values)
        if not value.is_Rational:
            raise DomainError(f"normalizer coefficient {value} is not rational")
        return to_fmpq(value)

    def _canonical(self, a):
        return np.asarray(a, dtype=object)  # flint rationals are canonical

    def _any_nonzero(self, a) -> bool:
        return any(bool(v) for v in np.asarray(a).flat)

    def _all_nonzero(self, a) -> bool:
        return all(bool(v) for v in np.asarray(a).flat)


class PolynomialSeriesDomain(ExactSeriesDomain):
    """Truncated series whose coefficients are python-flint polynomials over Q.

    Coefficients live in ``Q[symbols]`` as ``flint.fmpq_mpoly``.  Needs
    polynomial data and column sums with constant leading terms (true on
    collapse curves); otherwise it raises DomainError, and a caller may fall
    back to :class:`SymbolicSeriesDomain`.

    Parameters
    ----------
    truncation : int
        ``N``: coefficients of ``eps^0 .. eps^(N-1)``.
    symbols : sequence of sympy Symbols
        The generators of the polynomial ring.
    coefficient_values : dict, optional
        Values substituted for some symbols (e.g. ``c_j``) before conversion.
    max_terms : int
        Largest number of terms of one coefficient before TruncationError.
    max_bytes : int, optional
        The process's memory past which a product raises ResourceLimitError.
    description : str
        Named in the growth error.

    Examples
    --------
    >>> a = sp.Symbol("a")
    >>> D = PolynomialSeriesDomain(2, [a])
    >>> D.to_sympy(D.residue((a + 1)**2))
    a**2 + 2*a + 1
    """

    def __init__(self, truncation: int, symbols, coefficient_values: dict | None = None,
                 max_terms: int = 10**6, description: str = "", max_bytes: int | None = None):
        import flint

        super().__init__(truncation)
        self.max_bytes = max_bytes
        self.symbols = tuple(symbols)
        self.ctx = flint.fmpq_mpoly_ctx.get(tuple(s.name for s in self.symbols) or ("_",), "degrevlex")
        self._gens = dict(zip(self.symbols, self.ctx.gens()))
        self.coefficient_values = dict(coefficient_values or {})
        self.max_terms = max_terms
        self.description = description
        self.name = f"Q[symbols][[eps]]/eps^{self.truncation} (flint fmpq_mpoly)"

    def _convert(self, value):
        import flint

        if isinstance(value, flint.fmpq_mpoly):
            return value
        if isinstance(value, (int, np.integer, flint.fmpq)):
            return self.ctx.constant(to_fmpq(value))
        value = sp.sympify(value, strict=True).xreplace(self.coefficient_values)
        if value.is_Rational:
            return self.ctx.constant(to_fmpq(value))
        if value in self._gens:
            return self._gens[value]
        if value.free_symbols - set(self._gens):
            raise DomainError(f"{value} has symbols outside the polynomial ring")
        try:
            poly = sp.Poly(value, *self.symbols)
        except sp.PolynomialError as err:
            raise DomainError(f"{value} is not a polynomial: {err}") from None
        if not poly.domain.is_QQ and not poly.domain.is_ZZ:
            raise DomainError(f"{value} has coefficients in {poly.domain}, not Q")
        return self.ctx.from_dict({m: to_fmpq(c) for m, c in poly.terms()})

    def to_sympy(self, value) -> sp.Expr:
        """A sympy expression from a coefficient of this domain."""
        import flint

        if not isinstance(value, flint.fmpq_mpoly):
            return from_fmpq(value)
        terms = value.to_dict()
        if not terms:
            return sp.Integer(0)
        return sp.Poly.from_dict({m: sp.Rational(int(c.p), int(c.q)) for m, c in terms.items()},
                                 *self.symbols, domain=sp.QQ).as_expr()

    def residue(self, value):
        return self._convert(value)

    def _taylor_residues(self, normalizer, degree: int) -> np.ndarray:
        key = (id(normalizer), degree)
        if key not in self._taylor_cache:
            coefficients = normalizer.taylor(degree)
            # shape (degree + 1, 1): taylor[m] is then a 1-element array, which numpy broadcasts;
            # a bare fmpq_mpoly would be read as a sequence of its terms
            out = np.empty((len(coefficients), 1), dtype=object)
            for i, c in enumerate(coefficients):
                out[i, 0] = self._convert(c)
            self._taylor_cache[key] = out
        return self._taylor_cache[key]

    def _canonical(self, a):
        return np.asarray(a, dtype=object)  # flint polynomials are canonical

    def _series_mul(self, a, b):
        out = super()._series_mul(a, b)
        return _guard_growth(self, out, max((len(v) for v in out.flat if not isinstance(v, int)), default=0))

    def _invert_scalars(self, a):
        out = np.empty(a.shape, dtype=object)
        constant_monomial = (0,) * len(self._gens or (0,))
        for index, value in np.ndenumerate(a):
            terms = self._convert(value).to_dict()
            if set(terms) - {constant_monomial} or constant_monomial not in terms:
                raise DomainError("a column sum of s(A) has a non-constant or zero leading term")
            out[index] = self.ctx.constant(1 / terms[constant_monomial])
        return out

    def _any_nonzero(self, a) -> bool:
        return any(bool(v) for v in np.asarray(a).flat)

    def _all_nonzero(self, a) -> bool:
        return all(bool(v) for v in np.asarray(a).flat)
