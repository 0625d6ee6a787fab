"""First-order jets (dual numbers) over float64 or mpmath reals: forward-mode derivatives.

One pass of :func:`symattn.model.forward` over :class:`NumericJetDomain`
gives the outputs and their derivatives in every seeded direction, at a
point where the parameters are plain numbers: the numerical Jacobian that
:mod:`symattn.numeric` compares with the exact spectrum.  The normalizer
reaches this module as an object with ``numeric`` / ``numeric_float`` and
their derivatives (``derivative_numeric``, ``derivative_numeric_float``).

Examples
--------
>>> D = NumericJetDomain("float64", directions=1)
>>> D.reciprocal(D.variable(4.0, 0)).tolist()
[0.25, -0.0625]
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Number

import mpmath
import numpy as np
import sympy as sp

from ..errors import DomainError, ShapeError
from .domains import Domain

__all__ = ["NumericJetDomain", "as_fraction", "to_mpf", "to_float"]

_BASES = ("mpmath", "float64")


def as_fraction(value) -> Fraction | None:
    """An exact rational for ints, Fractions, decimal strings and sympy Rationals (else None).

    Examples
    --------
    >>> as_fraction("0.25"), as_fraction(sp.Rational(2, 3)), as_fraction(0.5)
    (Fraction(1, 4), Fraction(2, 3), None)
    """
    if isinstance(value, bool):
        raise DomainError(f"a boolean {value!r} is not a number")
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except ValueError:
            return None
    if isinstance(value, sp.Basic) and value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    return None


def to_mpf(value, dps: int):
    """``value`` as an mpf at ``dps`` digits (exact rationals rounded once).

    Examples
    --------
    >>> mpmath.nstr(to_mpf("1/3", 30), 25)
    '0.3333333333333333333333333'
    """
    with mpmath.workdps(dps):
        exact = as_fraction(value)
        if exact is not None:
            return mpmath.mpf(exact.numerator) / exact.denominator
        if isinstance(value, mpmath.mpf):
            return +value
        if isinstance(value, sp.Basic):
            if not value.is_real or not value.is_number:
                raise DomainError(f"{value} is not a real number")
            return mpmath.mpf(sp.N(value, dps + 5))
        if isinstance(value, (float, np.floating, Number, str)):
            try:
                return mpmath.mpf(value)
            except (TypeError, ValueError) as err:
                raise DomainError(f"cannot read {value!r} as a real number") from err
        raise DomainError(f"cannot read {value!r} as a real number; give an int, Fraction, float or string")


def to_float(value) -> float:
    """``value`` as a float (exact rationals rounded once).

    Examples
    --------
    >>> to_float(Fraction(1, 4))
    0.25
    """
    exact = as_fraction(value)
    if exact is not None:
        return float(exact)
    try:
        return float(value)
    except (TypeError, ValueError) as err:
        raise DomainError(f"cannot read {value!r} as a real number; give an int, Fraction, float or string") from err


class NumericJetDomain(Domain):
    """First-order jets (dual numbers) over float64 or mpmath reals.

    An element is a 1-d array ``[value, d_1, ..., d_P]``: a value and its
    derivatives in ``P`` directions.  A matrix is an array of shape
    ``(rows, cols, 1 + P)``; products, the normalizer and the column
    reciprocal carry the derivatives by the chain rule, so one pass of
    :func:`symattn.model.forward` (with ``convert=False``) gives the outputs and
    their exact derivatives (up to round-off) in all ``P`` directions.

    Parameters
    ----------
    base : {"float64", "mpmath"}
        float64 arrays (vectorized numpy) or numpy object arrays of ``mpf``.
    dps : int
        Decimal digits for ``base="mpmath"`` (ignored for float64).
    directions : int
        ``P``, the number of derivative directions.

    Raises
    ------
    DomainError
        For an unknown base, a non-positive ``dps`` or a negative ``directions``.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> D = NumericJetDomain("float64", directions=1)
    >>> a = D.variable(0.0, 0)          # a = 0 with da = (1,)
    >>> D.normalizer_value(Normalizer("exp(x)"), a)     # (e^a, e^a da)
    array([1., 1.])
    >>> D.reciprocal(D.variable(2.0, 0))                # (1/a, -da/a^2)
    array([ 0.5 , -0.25])
    >>> M = NumericJetDomain("mpmath", dps=30, directions=2)
    >>> mpmath.nstr(M.reciprocal(M.variable(3, 1))[2], 25)   # -1/9 in direction 1
    '-0.1111111111111111111111111'
    """

    def __init__(self, base: str = "float64", dps: int = 50, directions: int = 0):
        if base not in _BASES:
            raise DomainError(f"base must be 'float64' or 'mpmath', got {base!r}")
        if isinstance(directions, bool) or not isinstance(directions, (int, np.integer)) or directions < 0:
            raise DomainError(f"directions must be a non-negative integer, got {directions!r}")
        if base == "mpmath" and (isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or dps < 5):
            raise DomainError(f"dps must be an integer >= 5 for mpmath, got {dps!r}")
        self.base = base
        self.dps = int(dps) if base == "mpmath" else 16
        self.directions = int(directions)
        self.name = (f"mpmath({self.dps} digits)" if base == "mpmath" else "float64") + \
            f" with {self.directions}-direction jets"
        self._float_functions: dict = {}

    @property
    def width(self) -> int:
        """``1 + P``: the length of an element."""
        return 1 + self.directions

    def __repr__(self) -> str:
        digits = f", dps={self.dps}" if self.base == "mpmath" else ""
        return f"NumericJetDomain({self.base!r}{digits}, directions={self.directions})"

    # -- construction ------------------------------------------------------------------
    def scalar(self, value):
        """A plain number of the base (``float`` or ``mpf``), not a jet."""
        return to_mpf(value, self.dps) if self.base == "mpmath" else to_float(value)

    def _zeros(self, shape):
        if self.base == "float64":
            return np.zeros(shape, dtype=np.float64)
        out = np.empty(shape, dtype=object)
        out.fill(mpmath.mpf(0))
        return out

    def convert(self, value):
        """A constant jet: the value of ``value`` and zero derivatives."""
        out = self._zeros(self.width)
        out[0] = self.scalar(value)
        return out

    def variable(self, value, direction: int):
        """A jet with derivative 1 in ``direction`` (0-based) and 0 in the others."""
        if not 0 <= direction < self.directions:
            raise DomainError(f"direction must be in 0..{self.directions - 1}, got {direction}")
        out = self.convert(value)
        out[1 + direction] = self.scalar(1)
        return out

    def matrix(self, rows, first_direction: int | None = None, scale=None):
        """A matrix ``(rows, cols, 1 + P)`` from nested lists / arrays of numbers.

        With ``first_direction``, entry ``(r, c)`` is a variable with
        derivative 1 in direction ``first_direction + r * cols + c`` (row-major,
        as :meth:`symattn.model.Architecture.parameter_index`).  With
        ``scale``, every value is multiplied by it (in the domain's precision).
        """
        if isinstance(rows, sp.MatrixBase):
            rows = rows.tolist()
        values = np.array(rows, dtype=object)
        if values.ndim != 2:
            raise ShapeError(f"a matrix needs 2 dimensions, got shape {values.shape}")
        r, c = values.shape
        out = self._zeros((r, c, self.width))
        factor = None if scale is None else self.scalar(scale)
        with mpmath.workdps(self.dps):
            for (i, j), v in np.ndenumerate(values):
                value = self.scalar(v)
                out[i, j, 0] = value if factor is None else value * factor
        if first_direction is not None:
            if first_direction + r * c > self.directions:
                raise DomainError(f"directions {first_direction}..{first_direction + r * c - 1} exceed "
                                  f"the {self.directions} directions of this domain")
            for i in range(r):
                for j in range(c):
                    out[i, j, 1 + first_direction + i * c + j] = self.scalar(1)
        return out

    def values(self, a):
        """The value part of a matrix: ``(rows, cols)``."""
        return a[..., 0]

    def tangents(self, a):
        """The derivative part of a matrix: ``(rows, cols, P)``."""
        return a[..., 1:]

    # -- arithmetic --------------------------------------------------------------------
    def shape(self, a) -> tuple[int, int]:
        return a.shape[0], a.shape[1]

    def matmul(self, a, b):
        """``(A B)``, with ``d(AB) = dA B + A dB``."""
        with mpmath.workdps(self.dps):
            a0, b0 = a[..., 0], b[..., 0]
            out = self._zeros((a.shape[0], b.shape[1], self.width))
            out[..., 0] = a0 @ b0
            if self.directions:
                # directions first: (P, r, k) @ (k, c) and (r, k) @ (P, k, c)
                da = np.moveaxis(a[..., 1:], -1, 0)
                db = np.moveaxis(b[..., 1:], -1, 0)
                out[..., 1:] = np.moveaxis(da @ b0 + a0 @ db, 0, -1)
            return out

    def transpose(self, a):
        return a.swapaxes(0, 1)

    def _check_normalizer(self, normalizer) -> None:
        if normalizer.is_generic:
            raise DomainError(
                f"normalizer {normalizer.name} has only generic Taylor data and cannot be "
                "evaluated numerically; give an expression such as exp(x) or cosh(x)"
            )

    def _float_pair(self, normalizer):
        return normalizer.numeric_float, normalizer.derivative_numeric_float

    def _normalizer_parts(self, normalizer, values):
        """``s(v)`` and ``s'(v)`` entrywise for an array ``values`` of base numbers."""
        self._check_normalizer(normalizer)
        if self.base == "float64":
            function, derivative = self._float_pair(normalizer)
            with np.errstate(over="raise", invalid="raise"):
                try:
                    try:
                        s = np.asarray(function(values), dtype=np.float64) * np.ones_like(values)
                        ds = np.asarray(derivative(values), dtype=np.float64) * np.ones_like(values)
                    except TypeError:  # a function numpy has no array version of (erf is math.erf): entrywise
                        s = np.vectorize(function, otypes=[np.float64])(values)
                        ds = np.vectorize(derivative, otypes=[np.float64])(values)
                except FloatingPointError as err:
                    raise DomainError(f"normalizer {normalizer.name} overflows in float64: {err}") from err
            return s, ds
        with mpmath.workdps(self.dps):
            s = np.empty(values.shape, dtype=object)
            ds = np.empty(values.shape, dtype=object)
            for index, v in np.ndenumerate(values):
                s[index] = mpmath.mpf(normalizer.numeric(v))
                ds[index] = mpmath.mpf(normalizer.derivative_numeric(v))
            return s, ds

    def normalizer_value(self, normalizer, value):
        """``s`` of one jet: ``(s(v), s'(v) dv)``."""
        out = self.apply_normalizer(np.asarray(value)[None, None, :], normalizer)
        return out[0, 0]

    def apply_normalizer(self, a, normalizer):
        """``s`` entrywise on a matrix of jets."""
        s, ds = self._normalizer_parts(normalizer, a[..., 0])
        with mpmath.workdps(self.dps):
            out = self._zeros(a.shape)
            out[..., 0] = s
            out[..., 1:] = ds[..., None] * a[..., 1:]
            return out

    def reciprocal(self, value):
        """``1 / v`` of one jet: ``(1/v, -dv / v^2)``."""
        return self._reciprocal_array(np.asarray(value)[None, :])[0]

    def _reciprocal_array(self, a):
        with mpmath.workdps(self.dps):
            v = a[..., 0]
            if np.any(v == 0):
                raise ZeroDivisionError("a column of s(A) sums to 0")
            inverse = 1 / v
            out = self._zeros(a.shape)
            out[..., 0] = inverse
            out[..., 1:] = -(inverse * inverse)[..., None] * a[..., 1:]
            return out

    def _multiply(self, a, b):
        """Entrywise product of jets (broadcasting over leading axes)."""
        with mpmath.workdps(self.dps):
            out = self._zeros(np.broadcast_shapes(a.shape, b.shape))
            out[..., 0] = a[..., 0] * b[..., 0]
            out[..., 1:] = a[..., 0, None] * b[..., 1:] + a[..., 1:] * b[..., 0, None]
            return out

    def add(self, a, b):
        """The sum of two matrices of jets."""
        with mpmath.workdps(self.dps):
            return a + b

    def causal_mask(self, a):
        """Entries ``j > k`` (key after query) set to zero jets."""
        out = a.copy()
        out[np.tril_indices(a.shape[0], -1, a.shape[1])] = self.convert(0)
        return out

    def attention(self, scores, normalizer, causal: bool = False):
        """Column normalization ``S(A)`` of a matrix of jets: every column sums to 1 (over ``j <= k`` if causal)."""
        weights = self.apply_normalizer(scores, normalizer)
        if causal:
            weights = self.causal_mask(weights)
        with mpmath.workdps(self.dps):
            totals = weights.sum(axis=0)  # (cols, 1 + P): sums of jets are jets
        inverse = self._reciprocal_array(totals)
        return self._multiply(weights, inverse[None, :, :])
