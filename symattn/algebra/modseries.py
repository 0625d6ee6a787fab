"""Batched truncated power series in ``eps`` over GF(p), and first-order jets over them.

Elements are int64 numpy arrays whose last axis holds the coefficients of
``eps^0 .. eps^(N-1)`` and whose second-to-last axis holds the value (index 0)
followed by the derivatives in every jet direction.  A matrix of such elements
has shape ``(rows, cols, batch, 1 + directions, N)``: the batch axis runs over
the inputs of a bank, so one forward pass computes a whole Jacobian along a
curve.

Primes are below ``2**28``.  Matrix products and the products of a series
with its jets run on the engine :func:`symattn.algebra.linalg.product_engine`
names: compiled kernels in 64-bit integers, or float64 BLAS products with
exact limb splitting; ``schoolbook=True`` keeps the broadcast schoolbook
products, the baseline of the benchmarks (same results).

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

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..errors import DomainError, TruncationError
from .domains import Domain, constant_residue, is_prime
from .linalg import (MAX_PRIME, coefficient_support, jet_matmul, matmul_mod, modular_inverse, product_engine,
                     schoolbook_default, series_matmul, series_mul_mod, series_multiply, series_scale)

__all__ = ["ModSeriesDomain", "ExactSeriesDomain", "IntegerScores", "INTEGER_SCORES", "power_residues",
           "series_mul_mod", "modular_inverse", "MAX_PRIME"]

# A series times at least this many jet series goes through BLAS (linalg.series_scale), one Toeplitz
# matrix per entry: measured with 333 entries, 37 jets of length 163 take 52 ms against 328 ms for the
# schoolbook loop, 3 jets of length 55 1.6 ms against 2.6 ms; one series of length 163 8 ms against 7 ms.
_BLAS_MIN_JETS = 2
# A matrix product runs over groups of rows of the left factor (and of inputs, when one row is
# larger) whose share of the result is about this size: the transients of a product are a few
# copies of its result.  Measured against 8 MiB: the dimension command 0.26 against 0.27 s with
# peak 35 against 66 MiB in its largest product, five layers 2.0 s either way, 118 against 135 MiB.
_GROUP_BYTES = 2 * 2**20
# Jets of a factor with at most this many nonzero entries (and a quarter of its rows of jets) are
# multiplied entry by entry (ModSeriesDomain._sparse_tangents): the jets of a parameter block.
_SPARSE_MAX_TERMS = 512


#: The ``coefficient_values`` key of :class:`IntegerScores` (a string: no sympy constant equals it).
INTEGER_SCORES = "integer scores"


@dataclass(frozen=True)
class IntegerScores:
    """Scores whose constant terms are integers, under an exponential normalizer ``s = C e^{a x}``.

    The integer-score route of the dimension evaluates a layer at an integer
    point instead of on a curve: every score of that layer has an integer
    constant term ``m`` (``|m| <= bound``), every other layer's scores vanish
    at ``eps = 0``, and ``s(m + h)/s(0) = T^(u m) (s/s(0))(h)`` for
    ``a = u/v`` and ``T = e^(1/v)``, which is transcendental: ``T`` can be
    sent to any nonzero residue ``base`` (a ring homomorphism from
    ``Z[T, 1/T]``), and the rest of the series is exact.  Passed to
    :class:`ModSeriesDomain` as ``coefficient_values[INTEGER_SCORES]``.

    Examples
    --------
    >>> D = ModSeriesDomain(101, 2, coefficient_values={INTEGER_SCORES: IntegerScores(base=3, denominator=1, bound=5)})
    >>> from symattn.normalizers import Normalizer
    >>> scores = D.from_coefficients(np.array([[[[2, 1]]], [[[100, 0]]]]))    # 2 + eps and -1
    >>> weights = D.apply_normalizer(scores, Normalizer.preset("softmax"))
    >>> D.coefficients(weights)[:, 0, 0].tolist()      # e^2 (1 + eps) and e^-1, e sent to 3
    [[9, 9], [34, 0]]
    """

    base: int
    denominator: int
    bound: int


def power_residues(base: int, exponents: np.ndarray, p: int) -> np.ndarray:
    """``base ** exponents mod p`` entrywise for integer exponents of either sign (``base`` a unit mod ``p``).

    Examples
    --------
    >>> power_residues(3, np.array([0, 1, 2, -1, 5]), 101).tolist()
    [1, 3, 9, 34, 41]
    """
    exponents = np.asarray(exponents, dtype=np.int64)
    bases = np.where(exponents < 0, pow(int(base), -1, p), int(base) % p).astype(np.int64)
    remaining = np.abs(exponents)
    out = np.ones(exponents.shape, dtype=np.int64)
    while remaining.any():  # square and multiply, all entries at once
        odd = (remaining & 1).astype(bool)
        out[odd] = out[odd] * bases[odd] % p
        bases = bases * bases % p
        remaining >>= 1
    return out


def valuation(a: np.ndarray) -> int:
    """Least index of a nonzero coefficient anywhere in ``a`` (``N`` if none)."""
    nonzero = coefficient_support(a)
    return int(nonzero[0]) if len(nonzero) else a.shape[-1]


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
    schoolbook : bool, optional
        Broadcast schoolbook products instead of the fast engines (the benchmark
        baseline; same results).  Default: whether the environment asks for
        them (``SYMATTN_PRODUCTS=schoolbook`` or ``SYMATTN_SCHOOLBOOK=1``).

    Examples
    --------
    >>> D = ModSeriesDomain(p=268435399, truncation=3, directions=1)
    >>> x = D.from_coefficients(np.array([[[[0, 1, 0]]]]), tangent_index=np.array([[0]]))
    >>> square = D.matmul(x, x)               # (eps + dx)^2 = eps^2 + 2 eps dx
    >>> D.coefficients(square)[0, 0, 0].tolist(), D.tangents(square)[0, 0, 0].tolist()
    ([0, 0, 1], [[0, 2, 0]])
    """

    def __init__(self, p: int, truncation: int, directions: int = 0, coefficient_values=None,
                 schoolbook=None):
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
        self.schoolbook = schoolbook_default() if schoolbook is None else bool(schoolbook)
        self.name = f"GF({self.p})[[eps]]/eps^{self.truncation}" + (
            f" with {self.directions}-direction jets" if self.directions else ""
        )
        self._taylor_cache: dict = {}

    # -- construction ---------------------------------------------------------------
    @property
    def width(self) -> int:
        return 1 + self.directions

    def residue(self, value) -> int:
        """The residue of a rational number, a generic coefficient symbol, or a constant of ``Q(theta)(g)``.

        Irrational constants go through :func:`~symattn.algebra.domains.constant_residue`: ``theta``
        (an algebraic primitive element) and one transcendental ``g`` have residues among the
        coefficient values (:func:`symattn.jacobian.random_point`), and the ring operations map
        the rest.
        """
        value = sp.sympify(value, strict=True)
        if value in self.coefficient_values:
            return int(self.coefficient_values[value]) % self.p
        if not value.is_Rational:
            if not hasattr(self, "_constant_cache"):
                self._constant_cache = {}
            return constant_residue(value, self.p, self.coefficient_values, cache=self._constant_cache)
        q = int(value.q)
        if q % self.p == 0:
            raise DomainError(f"{value} has a denominator divisible by {self.p}")
        return int(value.p) * pow(q, -1, self.p) % self.p

    def convert(self, value):
        out = self._zeros((self.width, self.truncation))
        out[0, 0] = self.residue(value)
        return out

    def from_coefficients(self, coefficients: np.ndarray, tangent_index=None) -> np.ndarray:
        """A matrix of series from integer coefficients of shape ``(rows, cols, batch, n)``.

        With ``tangent_index`` (an int array of shape ``(rows, cols)``), entry
        ``(r, c)`` gets derivative 1 in jet direction ``tangent_index[r, c]``.
        The jet axis is only as long as the last direction used: directions of
        later layers stay implicit zeros until they meet this element.
        """
        coefficients = self._coefficient_array(coefficients)
        rows, cols, batch, n = coefficients.shape
        width = 1
        if tangent_index is not None and self.directions:
            width = 1 + int(np.max(tangent_index)) + 1
        out = self._zeros((rows, cols, batch, width, self.truncation))
        m = min(n, self.truncation)
        out[..., 0, :m] = coefficients[..., :m]
        if tangent_index is not None and self.directions:
            for (r, c), direction in np.ndenumerate(tangent_index):
                out[r, c, :, 1 + direction, 0] = 1
        return out

    def ones(self, rows: int, cols: int):
        """The all-ones matrix: constant series, one batch entry (broadcast against a bank), no jets."""
        return self.from_coefficients(np.ones((rows, cols, 1, 1), dtype=np.int64))

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

    # -- the coefficient field: GF(p) here, overridden by exact subclasses -------------
    def _series_mul(self, a, b):
        return series_multiply(a, b, self.p, schoolbook=True if self.schoolbook else None)

    def _coefficient_array(self, coefficients):
        return np.asarray(coefficients, dtype=np.int64) % self.p

    def _reduce(self, a):
        return a % self.p

    def _zeros(self, shape):
        return np.zeros(shape, dtype=np.int64)

    def _invert_scalars(self, a):
        return modular_inverse(a, self.p)

    def _any_nonzero(self, a) -> bool:
        return bool(np.any(a % self.p))

    def _all_nonzero(self, a) -> bool:
        return bool(np.all(a % self.p != 0))

    # -- arithmetic -----------------------------------------------------------------
    def _times_jets(self, value, jets):
        """``value (..., 1, N)`` times each of ``jets (..., w, N)``, broadcasting the leading axes."""
        if self.schoolbook or jets.shape[-2] < _BLAS_MIN_JETS:
            return self._series_mul(value, jets)
        # each value series as a Toeplitz matrix times its w jet series: batched BLAS products
        return series_scale(value, jets, self.p)

    def _mul(self, a, b):
        if not self.directions:
            return self._series_mul(a, b)
        a0, b0 = a[..., :1, :], b[..., :1, :]
        value = self._series_mul(a0, b0)
        da, db = a.shape[-2] - 1, b.shape[-2] - 1
        if not (da or db):
            return value
        out = self._zeros((*value.shape[:-2], 1 + max(da, db), value.shape[-1]))
        out[..., :1, :] = value
        if db:
            out[..., 1:1 + db, :] += self._times_jets(a0, b[..., 1:, :])
        if da:
            out[..., 1:1 + da, :] += self._times_jets(b0, a[..., 1:, :])
        out[..., 1:, :] = self._reduce(out[..., 1:, :])
        return out

    def shape(self, a):
        return a.shape[0], a.shape[1]

    def matmul(self, a, b):
        """Product of matrices of jets of series ``(r, k, batch, width, N) x (k, c, batch, width, N)``."""
        if self.schoolbook:  # (r, 1, k, ...) * (1, c, k, ...) summed over k
            product = self._mul(a[:, None, :], b.swapaxes(0, 1)[None, :, :])
            return self._reduce(product.sum(axis=2))
        if product_engine(self.p) == "compiled":
            return jet_matmul(a, b, self.p)
        return self._blas_matmul(a, b)

    def _blas_matmul(self, a, b):
        # value(a) times all of b, then tangents(a) times value(b): each one series_matmul, with
        # the batch folded into the columns (rows) when the other factor is shared by all inputs;
        # rows of a in groups whose products stay near _GROUP_BYTES, so that the transients stay a
        # fraction of the result (one group when the result is small: fewer, larger BLAS products)
        p, n = self.p, a.shape[-1]
        r, k, batch_a, width_a = a.shape[:4]
        c, batch_b, width_b = b.shape[1:4]
        batch = max(batch_a, batch_b)
        width = max(width_a, width_b)
        out = np.zeros((r, c, batch, width, n), dtype=np.int64)
        per_input = 8 * c * width * n  # bytes of one input's share of a row of the result
        if batch > 1 and per_input * batch > _GROUP_BYTES:  # a row is large: inputs in groups too
            step = max(1, _GROUP_BYTES // per_input)
            for start in range(0, batch, step):
                inputs = slice(start, min(batch, start + step))
                out[:, :, inputs] = self._blas_matmul(a if batch_a == 1 else a[:, :, inputs],
                                                      b if batch_b == 1 else b[:, :, inputs])
            return out
        if batch_a == 1:
            right = b.reshape(k, c * batch_b * width_b, n)
        else:
            right = np.moveaxis(b, 2, 0).reshape(batch_b, k, c * width_b, n)
        b_value = np.moveaxis(b[:, :, :, 0, :], 2, 0)  # (batch_b, k, c, N)
        step = max(1, _GROUP_BYTES // (8 * c * batch * width * n))
        for start in range(0, r, step):
            rows = slice(start, min(r, start + step))
            count = rows.stop - start
            if batch_a == 1:
                product = series_matmul(a[rows, :, 0, 0, :], right, p)  # (rows, c batch_b width_b, N)
                out[rows, :, :, :width_b] = product.reshape(count, c, batch_b, width_b, n)
            else:
                a_value = np.moveaxis(a[rows, :, :, 0, :], 2, 0)  # (batch_a, rows, k, N)
                product = series_matmul(a_value, right, p).reshape(batch, count, c, width_b, n)
                out[rows, :, :, :width_b] = np.moveaxis(product, 0, 2)
            del product  # before the tangent product allocates its own
            if width_a > 1:
                tangents = a[rows, :, :, 1:, :]  # (rows, k, batch_a, width_a - 1, N)
                if self._sparse_tangents(tangents, out[rows], b_value):
                    continue
                if batch_b == 1:
                    left = tangents.transpose(2, 0, 3, 1, 4).reshape(-1, k, n)  # rows (batch_a, row, jet)
                    product = series_matmul(left, b_value[0], p)
                else:
                    left = tangents.transpose(2, 0, 3, 1, 4).reshape(batch_a, -1, k, n)  # (batch_a, (row, jet), k, N)
                    product = series_matmul(left, b_value, p)  # (batch, (row, jet), c, N)
                product = product.reshape(batch, count, width_a - 1, c, n).transpose(1, 3, 0, 2, 4)
                # jets that value(a) b also reaches are added; the others are written as they are
                shared = max(0, min(width_a, width_b) - 1)
                target = out[rows, :, :, 1:1 + shared]
                target += product[..., :shared, :]
                target %= p
                out[rows, :, :, 1 + shared:width_a] = product[..., shared:, :]
                del product, left
        return out

    def _sparse_tangents(self, tangents, out, b_value) -> bool:
        """Add ``tangents @ value(b)`` into ``out[..., 1:, :]`` entry by entry when ``tangents`` is sparse.

        A parameter's jets are unit vectors (one nonzero per entry), so its product with a hidden
        state is a few scaled copies of that state's value: far cheaper than a dense product whose
        result is mostly zeros (``V h`` at width 10: 100 nonzeros against 1720 rows of jets).
        Returns False, doing nothing, when ``tangents`` is not that sparse.
        """
        rows, k, batch_a, jets, n = tangents.shape
        if batch_a != 1:
            return False
        nonzero = np.flatnonzero(tangents)
        if len(nonzero) > min(_SPARSE_MAX_TERMS, rows * jets // 4):
            return False
        p = self.p
        values = b_value.transpose(1, 2, 0, 3)  # (k, c, batch_b, N)
        for row, inner, _, jet, power in zip(*np.unravel_index(nonzero, tangents.shape)):
            slot = out[row, :, :, 1 + jet, power:]
            slot += int(tangents[row, inner, 0, jet, power]) * values[inner, :, :, :n - power]
            slot %= p
        return True

    def transpose(self, a):
        return a.swapaxes(0, 1)

    def _taylor_residues(self, normalizer, degree: int) -> np.ndarray:
        key = (id(normalizer), degree)
        if key not in self._taylor_cache:
            coefficients = normalizer.taylor(degree)
            self._taylor_cache[key] = np.array([self.residue(c) for c in coefficients])
        return self._taylor_cache[key]

    def apply_normalizer(self, a, normalizer):
        """``s/s(0)`` entrywise, from its Taylor coefficients; needs zero constant terms.

        Except a polynomial's, and an exponential normalizer's at the integer
        constant terms of :class:`IntegerScores`.
        """
        value = a[..., :1, :]
        if self._any_nonzero(value[..., 0]) and normalizer.is_polynomial:
            return self._apply_polynomial(a, normalizer)
        value, factor = self._split_integer_scores(value, normalizer)
        if not self.schoolbook:
            s_value, s_deriv = self._normalizer_series(value, normalizer, derivative=bool(self.directions))
            s_value, s_deriv = self._scaled(factor, s_value), self._scaled(factor, s_deriv)
            if not self.directions:
                return s_value
            return np.concatenate([s_value, self._times_jets(s_deriv, a[..., 1:, :])], axis=-2)
        degree, taylor = self._taylor_for(value, normalizer)
        s_value = self._zeros(value.shape)
        s_deriv = self._zeros(value.shape)
        for m in range(degree, -1, -1):
            s_value = self._series_mul(s_value, value)
            s_value[..., 0] = self._reduce(s_value[..., 0] + taylor[m])
            if self.directions and m + 1 <= degree + 1:
                s_deriv = self._series_mul(s_deriv, value)
                s_deriv[..., 0] = self._reduce(s_deriv[..., 0] + (m + 1) * taylor[m + 1])
        s_value, s_deriv = self._scaled(factor, s_value), self._scaled(factor, s_deriv)
        if not self.directions:
            return s_value
        tangent = self._series_mul(s_deriv, a[..., 1:, :])
        return np.concatenate([s_value, tangent], axis=-2)

    def _split_integer_scores(self, value, normalizer):
        """``(value without its constant terms, s(m)/s(0) per entry)`` on the integer-score route.

        ``(value, None)`` off it: no :class:`IntegerScores`, constant terms all
        zero, or a normalizer that is not ``C e^{a x}`` with rational ``a``
        (then :meth:`_taylor_for` refuses the nonzero constant terms).
        """
        route = self.coefficient_values.get(INTEGER_SCORES)
        if route is None or normalizer.exponential_rate is None:
            return value, None
        constants = value[..., 0, 0] % self.p
        if not constants.any():
            return value, None
        rate = normalizer.exponential_rate * route.denominator
        if not rate.is_integer:
            raise DomainError(f"the rate {normalizer.exponential_rate} of {normalizer.name} times the route's "
                              f"denominator {route.denominator} is not an integer")
        integers = np.where(constants > self.p // 2, constants - self.p, constants)
        if np.abs(integers).max() > route.bound:  # a constant term that is not one of the route's integers
            raise DomainError(f"a score's constant term (residue {int(constants.flat[np.abs(integers).argmax()])}) "
                              f"is not an integer of absolute value at most {route.bound}: the integer-score "
                              "route needs integer scores at its integer layer and vanishing scores elsewhere")
        shifted = value.copy()
        shifted[..., 0, 0] = 0
        return shifted, power_residues(route.base, integers * int(rate), self.p)

    def _scaled(self, factor, series):
        """``series`` times a constant per entry (``factor`` of shape ``series.shape[:-2]``), or unchanged."""
        if factor is None or series is None:
            return series
        return series * factor[..., None, None] % self.p

    def _taylor_for(self, value, normalizer):
        """``(degree, residues of the Taylor coefficients of s/s(0) up to degree + 1)`` for scores ``value``.

        Scores of valuation ``v >= 1`` need the terms up to ``(N - 1) / v``.
        """
        if self._any_nonzero(value[..., 0]):
            if getattr(normalizer, "is_activation", False):
                raise DomainError(
                    f"the argument of activation {normalizer.name} does not vanish at eps = 0 (a feed-forward "
                    "block whose input weights do not collapse on this curve, or a point with no curve): its "
                    f"Taylor expansion at a nonzero point is not exact over GF(p). Use a curve that collapses "
                    "every layer (its W_in with it) or scales the input, a polynomial activation, or the "
                    "numerical slopes of symattn.numeric")
            raise DomainError(
                f"scores that do not vanish at eps = 0 (a layer that does not collapse on this curve) "
                f"need the Taylor expansion of {normalizer.name} at a nonzero point, which is not exact "
                "over GF(p); the exact engine handles such layers for polynomial normalizers only. Use "
                "a curve on which every layer's scores vanish (collapse of all layers, input scaling), "
                "a polynomial normalizer, or the numerical slopes of symattn.numeric"
            )
        v = valuation(value)
        n = self.truncation
        degree = (n - 1) // v if v < n else 0
        return degree, self._taylor_residues(normalizer, degree + 1)

    def _normalizer_series(self, value, normalizer, derivative: bool = True):
        """``(s/s(0), s'/s(0))`` at scores ``value`` of zero constant term (``s'`` None unless asked).

        Both at once, by Paterson-Stockmeyer: about ``2 sqrt(degree)`` series
        products instead of ``2 degree`` for Horner (same residues).
        """
        degree, taylor = self._taylor_for(value, normalizer)
        polynomials = [np.asarray(taylor[:degree + 1], dtype=np.int64) % self.p]
        if derivative:
            polynomials.append(np.arange(1, degree + 2, dtype=np.int64) * taylor[1:degree + 2] % self.p)
        composed = self._compose(np.stack(polynomials), value)
        return composed[0], (composed[1] if derivative else None)

    def _compose(self, coefficients: np.ndarray, value: np.ndarray) -> np.ndarray:
        """``sum_m coefficients[r, m] value^m`` for each row ``r``, by Paterson-Stockmeyer.

        The powers ``value^0 .. value^(b-1)`` (``b ~ sqrt(degree)``) are
        combined into the ``b``-term pieces of every polynomial by one exact
        matrix product, then Horner runs in ``value^b`` over the pieces.
        """
        p = self.p
        n = value.shape[-1]
        support = coefficient_support(value)
        stride = int(np.gcd.reduce(support)) if len(support) else 0
        if stride >= 2:  # a series in y = eps^g (every score along the collapse curve): compose in y
            out = np.zeros((coefficients.shape[0], *value.shape), dtype=np.int64)
            out[..., ::stride] = self._compose(coefficients, value[..., ::stride])
            return out
        terms = coefficients.shape[1]
        step = max(1, math.isqrt(terms - 1) + 1) if terms > 1 else 1
        entries = value.reshape(-1, 1, n)  # (E, 1, N)
        # value^1 .. value^step by doubling: value^k times (value^1 .. value^j) is one series_scale
        powers = entries.copy()
        while powers.shape[1] < step:
            k = powers.shape[1]
            more = series_scale(powers[:, k - 1:k], powers[:, :min(k, step - k)], p)
            powers = np.concatenate([powers, more], axis=1)
        giant = powers[:, step - 1:step]  # value^step
        one = np.zeros((entries.shape[0], 1, n), dtype=np.int64)
        one[:, 0, 0] = 1
        powers = np.concatenate([one, powers[:, :step - 1]], axis=1)  # value^0 .. value^(step - 1)
        pieces = -(-terms // step)
        padded = np.zeros((coefficients.shape[0], pieces * step), dtype=np.int64)
        padded[:, :terms] = coefficients
        combined = matmul_mod(padded.reshape(-1, step), powers.transpose(1, 0, 2).reshape(step, -1), p)
        # (polynomial, piece, E, N) -> (piece, E, polynomial, N): Horner in value^step, all polynomials at once
        combined = combined.reshape(coefficients.shape[0], pieces, -1, n).transpose(1, 2, 0, 3)
        # the sum of giant^j piece_j needs piece_j (and the Horner value from j on) mod eps^(N - j v),
        # v the valuation of the giant step: the products shrink as Horner climbs (a third of the flops)
        giant_support = coefficient_support(giant)
        shift = int(giant_support[0]) if len(giant_support) else n
        result = combined[-1][..., :max(0, n - (pieces - 1) * shift)]
        for piece in range(pieces - 2, -1, -1):
            precision = max(0, n - piece * shift)
            head = np.zeros((*result.shape[:-1], precision), dtype=np.int64)
            head[..., :result.shape[-1]] = result
            if precision:
                head = series_scale(giant[..., :precision], head, p)
            head += combined[piece][..., :precision]
            head %= p
            result = head
        return np.moveaxis(result, 1, 0).reshape(coefficients.shape[0], *value.shape)

    def _apply_polynomial(self, a, normalizer):
        # s itself (not s/s(0), which may not exist when s(0) = 0) by Horner on the whole series;
        # S is unchanged by the constant factor
        coefficients = [self.residue(c) for c in normalizer.polynomial_coefficients]
        derivative = [(m + 1) * c for m, c in enumerate(coefficients[1:])]
        value = a[..., :1, :]

        def horner(coeffs):
            out = self._zeros(value.shape)
            for c in reversed(coeffs):
                out = self._series_mul(out, value)
                out[..., 0] = self._reduce(out[..., 0] + c)
            return out

        s_value = horner(coefficients)
        if not self.directions:
            return s_value
        tangent = self._series_mul(horner(derivative or [0]), a[..., 1:, :])
        return np.concatenate([s_value, tangent], axis=-2)

    def reciprocal_matrix(self, a):
        """Entrywise inverse of series with unit constant terms (Newton's iteration)."""
        value = a[..., :1, :]
        constant = self._reduce(value[..., 0])
        if not self._all_nonzero(constant):
            raise ZeroDivisionError(f"a column of s(A) sums to 0 in {self.name}: choose another prime")
        inverse = self._zeros(value.shape)
        inverse[..., 0] = self._invert_scalars(constant)
        if self.schoolbook:  # the baseline: every Newton step at full length
            precision = 1
            while precision < self.truncation:
                correction = self._series_mul(value, inverse)
                correction = self._reduce(-correction)
                correction[..., 0] = self._reduce(correction[..., 0] + 2)
                inverse = self._series_mul(inverse, correction)
                precision *= 2
        else:
            inverse = self._newton_inverse(value, inverse)
        if not self.directions:
            return inverse
        square = self._series_mul(inverse, inverse)
        tangent = self._reduce(-self._times_jets(square, a[..., 1:, :]))
        return np.concatenate([inverse, tangent], axis=-2)

    def _newton_inverse(self, value, inverse):
        """Newton's iteration ``X <- X (2 - a X)`` with each step at the precision it reaches.

        ``inverse`` holds the inverse of the constant terms.  A step from
        precision ``k`` to ``2k`` needs ``a`` and ``X`` mod ``eps^(2k)`` only,
        so the products cost about two full-length ones in all instead of two
        per step (the same series: the inverse mod ``eps^N`` is unique).
        """
        precision = 1
        while precision < self.truncation:
            precision = min(self.truncation, 2 * precision)
            head = inverse[..., :precision]
            correction = self._reduce(-self._series_mul(value[..., :precision], head))
            correction[..., 0] = self._reduce(correction[..., 0] + 2)
            inverse[..., :precision] = self._series_mul(head, correction)
        return inverse

    def add(self, a, b):
        """The sum of two matrices of series (jet axes of different lengths, batches broadcast)."""
        width = max(a.shape[-2], b.shape[-2])
        out = self._zeros((*np.broadcast_shapes(a.shape[:3], b.shape[:3]), width, a.shape[-1]))
        out[..., :a.shape[-2], :] += a
        out[..., :b.shape[-2], :] += b
        return self._reduce(out)

    def causal_mask(self, a):
        """Entries ``j > k`` (key after query) set to zero series."""
        out = a.copy()
        out[np.tril_indices(a.shape[0], -1, a.shape[1])] = 0
        return out

    def attention(self, scores, normalizer, causal: bool = False):
        if self.schoolbook or scores.shape[-2] == 1 or \
                (normalizer.is_polynomial and self._any_nonzero(scores[..., :1, 0])):
            weights = self.apply_normalizer(scores, normalizer)
            if causal:
                weights = self.causal_mask(weights)
            totals = self._reduce(weights.sum(axis=0, keepdims=True))
            return self._mul(weights, self.reciprocal_matrix(totals))
        # S = W R with W = s(A), R = 1 / (column sums of W); its jets
        #   dS = R dW + W dR = R s'(A) dA - W R^2 colsum(s'(A) dA) = H - S colsum(H),  H = (R s'(A)) dA,
        # two products of a series with the jets instead of four (exact identities in GF(p)[[eps]])
        value, factor = self._split_integer_scores(scores[..., :1, :], normalizer)
        weights, derivative = self._normalizer_series(value, normalizer)
        weights, derivative = self._scaled(factor, weights), self._scaled(factor, derivative)
        if causal:  # masked weights and their derivatives: the masked entries of S and its jets vanish
            weights, derivative = self.causal_mask(weights), self.causal_mask(derivative)
        totals = self._reduce(weights.sum(axis=0, keepdims=True))
        inverse = self.reciprocal_matrix(totals)
        out_value = self._series_mul(weights, inverse)
        scaled = self._times_jets(self._series_mul(derivative, inverse), scores[..., 1:, :])
        column_sums = self._reduce(scaled.sum(axis=0, keepdims=True))
        tangent = self._reduce(scaled - self._times_jets(out_value, column_sums))
        return np.concatenate([out_value, tangent], axis=-2)

def _expand_entries(a):
    out = np.empty(a.shape, dtype=object)
    for index, value in np.ndenumerate(a):
        out[index] = sp.expand(value)
    return out


class ExactSeriesDomain(ModSeriesDomain):
    """Truncated series with exact sympy coefficients (rationals, parameters, ``c_j``).

    The same arithmetic as :class:`ModSeriesDomain` with coefficients kept as
    expanded sympy polynomials, so that generic normalizer coefficients and
    symbolic parameters stay symbols.  Meant for small sizes (closed-form
    expansions, exact checks over Q).

    Examples
    --------
    >>> import numpy as np, sympy as sp
    >>> from symattn.normalizers import Normalizer
    >>> D = ExactSeriesDomain(truncation=5)
    >>> a = sp.Symbol("a")
    >>> scores = D.from_coefficients(np.array([[[[0, 0, a, 0, 0]]]], dtype=object))
    >>> D.coefficients(D.apply_normalizer(scores, Normalizer.generic(k=1)))[0, 0, 0].tolist()
    [1, 0, a*c_1, 0, a**2*c_2]
    """

    def __init__(self, truncation: int, directions: int = 0):
        if not isinstance(truncation, (int, np.integer)) or truncation < 1:
            raise TruncationError(f"truncation must be a positive integer, got {truncation!r}")
        self.p = None
        self.truncation = int(truncation)
        self.directions = int(directions)
        self.coefficient_values = {}
        self.schoolbook = True  # object coefficients: no BLAS path
        self.name = f"Q[params][[eps]]/eps^{self.truncation}" + (
            f" with {self.directions}-direction jets" if self.directions else "")
        self._taylor_cache = {}

    def residue(self, value):
        return sp.sympify(value, strict=True)

    # Subclasses with another exact coefficient field (flint rationals or polynomials)
    # override residue, _canonical and the zero tests; the arithmetic below serves them all.
    def _canonical(self, a):
        """Entries in canonical form, so that a zero coefficient is recognised (expanded sympy)."""
        return _expand_entries(np.asarray(a, dtype=object))

    def _series_mul(self, a, b):
        n = a.shape[-1]
        support_a = np.flatnonzero(a.reshape(-1, n).any(axis=0))
        support_b = np.flatnonzero(b.reshape(-1, n).any(axis=0))
        if len(support_b) < len(support_a):
            a, b, support_a = b, a, support_b
        out = np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=object)
        for i in support_a:
            out[..., i:] = out[..., i:] + a[..., i:i + 1] * b[..., :n - i]
        return self._canonical(out)

    def _coefficient_array(self, coefficients):
        array = np.asarray(coefficients, dtype=object)
        out = np.empty(array.shape, dtype=object)
        for index, value in np.ndenumerate(array):
            out[index] = self.residue(value)
        return self._canonical(out)

    def _reduce(self, a):
        return self._canonical(a)

    def _zeros(self, shape):
        return np.zeros(shape, dtype=object)

    def _invert_scalars(self, a):
        out = np.empty(a.shape, dtype=object)
        for index, value in np.ndenumerate(a):
            out[index] = 1 / self.residue(value)
        return out

    def _any_nonzero(self, a) -> bool:
        return any(sp.sympify(v, strict=True) != 0 for v in np.asarray(a).flat)

    def _all_nonzero(self, a) -> bool:
        return all(sp.sympify(v, strict=True) != 0 for v in np.asarray(a).flat)
