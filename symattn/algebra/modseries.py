"""Batched truncated power series in ``eps`` over GF(p), and first-order jets over them.

Elements are int64 numpy arrays whose last axis holds the coefficients of
``eps^0 .. eps^(N-1)`` and whose second-to-last axis holds the value (index 0)
followed by the derivatives in every jet direction.  A matrix of such elements
has shape ``(rows, cols, batch, 1 + directions, N)``: the batch axis runs over
the inputs of a bank, so one forward pass computes a whole Jacobian along a
curve.

Primes are below ``2**28`` so that sums of 64 products fit in int64.

Examples
--------
>>> import numpy as np
>>> from symattn.algebra.modseries import ModSeriesDomain
>>> D = ModSeriesDomain(p=101, truncation=4)
>>> one_plus_eps = D.from_coefficients(np.array([[[[1, 1, 0, 0]]]]))
>>> D.coefficients(D.reciprocal_matrix(one_plus_eps))[0, 0, 0].tolist()
[1, 100, 1, 100]
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..errors import DomainError, TruncationError
from .domains import Domain, is_prime

__all__ = ["ModSeriesDomain", "series_mul_mod", "modular_inverse", "MAX_PRIME"]

#: Largest prime accepted: products of two residues and 64 such sums fit in int64.
MAX_PRIME = 2**28

_REDUCE_EVERY = 64


def modular_inverse(a: np.ndarray, p: int) -> np.ndarray:
    """Entrywise inverse mod ``p`` (Fermat), for arrays of nonzero residues.

    Examples
    --------
    >>> modular_inverse(np.array([1, 2, 3]), 7).tolist()
    [1, 4, 5]
    """
    a = np.asarray(a, dtype=np.int64) % p
    if np.any(a == 0):
        raise ZeroDivisionError(f"zero has no inverse mod {p}")
    result = np.ones_like(a)
    base = a.copy()
    e = p - 2
    while e:
        if e & 1:
            result = result * base % p
        base = base * base % p
        e >>= 1
    return result


def series_mul_mod(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """Entrywise product of broadcastable arrays of series, truncated, mod ``p``.

    Loops over the coefficient indices of the sparser factor, so a factor
    such as ``eps * Qt`` costs one vector operation.

    Examples
    --------
    >>> series_mul_mod(np.array([1, 1, 0]), np.array([1, 1, 0]), 5).tolist()
    [1, 2, 1]
    """
    n = a.shape[-1]
    support_a = np.flatnonzero(a.reshape(-1, n).any(axis=0))
    support_b = np.flatnonzero(b.reshape(-1, n).any(axis=0))
    if len(support_b) < len(support_a):
        a, b, support_a = b, a, support_b
    out = np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=np.int64)
    for count, i in enumerate(support_a, start=1):
        out[..., i:] += a[..., i : i + 1] * b[..., : n - i]
        if count % _REDUCE_EVERY == 0:
            out %= p
    return out % p


def valuation(a: np.ndarray) -> int:
    """Least index of a nonzero coefficient anywhere in ``a`` (``N`` if none)."""
    n = a.shape[-1]
    nonzero = np.flatnonzero(a.reshape(-1, n).any(axis=0))
    return int(nonzero[0]) if len(nonzero) else n


class ModSeriesDomain(Domain):
    """Truncated series mod ``eps^N`` over GF(p), optionally carrying jets.

    Parameters
    ----------
    p : int
        A prime below ``2**28``.
    truncation : int
        ``N``: coefficients of ``eps^0 .. eps^(N-1)`` are kept exactly.
    directions : int
        Number of jet directions (0 for plain series).
    coefficient_values : dict, optional
        Residues for the symbols of a generic normalizer (``c_j``).
    """

    def __init__(self, p: int, truncation: int, directions: int = 0, coefficient_values=None):
        if not isinstance(p, (int, np.integer)) or not is_prime(int(p)):
            raise DomainError(f"p must be a prime, got {p!r}")
        if p >= MAX_PRIME:
            raise DomainError(f"p must be below 2**28 = {MAX_PRIME} for exact int64 arithmetic, got {p}")
        if not isinstance(truncation, (int, np.integer)) or truncation < 1:
            raise TruncationError(f"truncation must be a positive integer, got {truncation!r}")
        self.p = int(p)
        self.truncation = int(truncation)
        self.directions = int(directions)
        self.coefficient_values = dict(coefficient_values or {})
        self.name = f"GF({self.p})[[eps]]/eps^{self.truncation}" + (
            f" with {self.directions}-direction jets" if self.directions else ""
        )
        self._taylor_cache: dict = {}

    # -- construction ---------------------------------------------------------------
    @property
    def width(self) -> int:
        return 1 + self.directions

    def residue(self, value) -> int:
        """The residue of a rational number (or a generic coefficient symbol)."""
        value = sp.sympify(value)
        if value in self.coefficient_values:
            return int(self.coefficient_values[value]) % self.p
        if not value.is_Rational:
            raise DomainError(
                f"{value} is not rational, so it has no image in GF({self.p}); "
                "normalizers with irrational Taylor coefficients need mpmath"
            )
        q = int(value.q)
        if q % self.p == 0:
            raise DomainError(f"{value} has a denominator divisible by {self.p}")
        return int(value.p) * pow(q, -1, self.p) % self.p

    def convert(self, value):
        out = np.zeros((self.width, self.truncation), dtype=np.int64)
        out[0, 0] = self.residue(value)
        return out

    def from_coefficients(self, coefficients: np.ndarray, tangent_index=None) -> np.ndarray:
        """A matrix of series from integer coefficients of shape ``(rows, cols, batch, n)``.

        With ``tangent_index`` (an int array of shape ``(rows, cols)``), entry
        ``(r, c)`` gets derivative 1 in jet direction ``tangent_index[r, c]``.
        The jet axis is only as long as the last direction used: directions of
        later layers stay implicit zeros until they meet this element.
        """
        coefficients = np.asarray(coefficients, dtype=np.int64) % self.p
        rows, cols, batch, n = coefficients.shape
        width = 1
        if tangent_index is not None and self.directions:
            width = 1 + int(np.max(tangent_index)) + 1
        out = np.zeros((rows, cols, batch, width, self.truncation), dtype=np.int64)
        m = min(n, self.truncation)
        out[..., 0, :m] = coefficients[..., :m]
        if tangent_index is not None and self.directions:
            for (r, c), direction in np.ndenumerate(tangent_index):
                out[r, c, :, 1 + direction, 0] = 1
        return out

    def coefficients(self, a: np.ndarray) -> np.ndarray:
        """The value part of a matrix: shape ``(rows, cols, batch, N)``."""
        return a[..., 0, :]

    def tangents(self, a: np.ndarray) -> np.ndarray:
        """The jet part of a matrix: shape ``(rows, cols, batch, directions, N)``."""
        tangent = a[..., 1:, :]
        missing = self.directions - tangent.shape[-2]
        if missing > 0:
            pad = [(0, 0)] * tangent.ndim
            pad[-2] = (0, missing)
            tangent = np.pad(tangent, pad)
        return tangent

    # -- arithmetic -----------------------------------------------------------------
    def _mul(self, a, b):
        p = self.p
        if not self.directions:
            return series_mul_mod(a, b, p)
        a0, b0 = a[..., :1, :], b[..., :1, :]
        value = series_mul_mod(a0, b0, p)
        da, db = a.shape[-2] - 1, b.shape[-2] - 1
        if not (da or db):
            return value
        out = np.zeros((*value.shape[:-2], 1 + max(da, db), value.shape[-1]), dtype=np.int64)
        out[..., :1, :] = value
        if db:
            out[..., 1:1 + db, :] += series_mul_mod(a0, b[..., 1:, :], p)
        if da:
            out[..., 1:1 + da, :] += series_mul_mod(a[..., 1:, :], b0, p)
        out[..., 1:, :] %= p
        return out

    def shape(self, a):
        return a.shape[0], a.shape[1]

    def matmul(self, a, b):
        # (r, 1, k, ...) * (1, c, k, ...) summed over k
        product = self._mul(a[:, None, :], b.swapaxes(0, 1)[None, :, :])
        return product.sum(axis=2) % self.p

    def transpose(self, a):
        return a.swapaxes(0, 1)

    def _taylor_residues(self, normalizer, degree: int) -> np.ndarray:
        key = (id(normalizer), degree)
        if key not in self._taylor_cache:
            coefficients = normalizer.taylor(degree)
            self._taylor_cache[key] = np.array([self.residue(c) for c in coefficients], dtype=np.int64)
        return self._taylor_cache[key]

    def apply_normalizer(self, a, normalizer):
        """``s/s(0)`` entrywise, from its Taylor coefficients; needs zero constant terms."""
        value = a[..., :1, :]
        if np.any(value[..., 0] % self.p):
            raise DomainError(
                "scores must vanish at eps = 0 to apply the normalizer by its Taylor series; "
                "use a curve on which queries or keys collapse (or scale the input)"
            )
        v = valuation(value)
        n = self.truncation
        degree = (n - 1) // v if v < n else 0
        taylor = self._taylor_residues(normalizer, degree + 1)
        p = self.p
        s_value = np.zeros(value.shape, dtype=np.int64)
        s_deriv = np.zeros(value.shape, dtype=np.int64)
        for m in range(degree, -1, -1):
            s_value = series_mul_mod(s_value, value, p)
            s_value[..., 0] = (s_value[..., 0] + taylor[m]) % p
            if self.directions and m + 1 <= degree + 1:
                s_deriv = series_mul_mod(s_deriv, value, p)
                s_deriv[..., 0] = (s_deriv[..., 0] + (m + 1) * taylor[m + 1]) % p
        if not self.directions:
            return s_value
        tangent = series_mul_mod(s_deriv, a[..., 1:, :], p)
        return np.concatenate([s_value, tangent], axis=-2)

    def reciprocal_matrix(self, a):
        """Entrywise inverse of series with unit constant terms (Newton's iteration)."""
        p = self.p
        value = a[..., :1, :]
        constant = value[..., 0] % p
        if np.any(constant == 0):
            raise ZeroDivisionError(f"a column of s(A) sums to 0 mod {p}: choose another prime")
        inverse = np.zeros(value.shape, dtype=np.int64)
        inverse[..., 0] = modular_inverse(constant, p)
        precision = 1
        while precision < self.truncation:
            correction = series_mul_mod(value, inverse, p)
            correction = (-correction) % p
            correction[..., 0] = (correction[..., 0] + 2) % p
            inverse = series_mul_mod(inverse, correction, p)
            precision *= 2
        if not self.directions:
            return inverse
        square = series_mul_mod(inverse, inverse, p)
        tangent = (-series_mul_mod(square, a[..., 1:, :], p)) % p
        return np.concatenate([inverse, tangent], axis=-2)

    def attention(self, scores, normalizer):
        weights = self.apply_normalizer(scores, normalizer)
        totals = weights.sum(axis=0, keepdims=True) % self.p
        return self._mul(weights, self.reciprocal_matrix(totals))
