"""A domain of degree bounds: how high a polynomial each series coefficient can be.

Running the forward pass here (max-plus arithmetic) bounds the total degree,
in the random point (generic parameters, bank inputs, generic normalizer
coefficients), of the coefficient of ``eps^n`` of every output entry.  The
Schwartz-Zippel bound of a computation mod p at a random point uses it.

Examples
--------
>>> import numpy as np
>>> from symattn.algebra.degrees import DegreeBoundDomain, NONE
>>> D = DegreeBoundDomain(truncation=3)
>>> a = np.array([[[NONE, 1, NONE]]])
>>> D.matmul(a, a)[0, 0].tolist()
[-inf, -inf, 2.0]
"""

from __future__ import annotations

import numpy as np

from .domains import Domain

__all__ = ["DegreeBoundDomain", "DegreeBound", "NONE"]

#: The degree of the zero coefficient.
NONE = -np.inf

# Bytes of the temporary of one block of output coefficients in DegreeBoundDomain._mul.
_BLOCK_BYTES = 4 * 2**20


class DegreeBoundDomain(Domain):
    """Elements are float arrays ``(rows, cols, N)`` of degree bounds (``-inf`` for zero).

    Examples
    --------
    Scores ``c eps`` with ``c`` of degree 1: the coefficient of ``eps^n`` of
    the attention weights has degree at most ``n`` (at most ``2n`` when the
    normalizer's Taylor coefficients are generic symbols too).

    >>> from symattn.normalizers import Normalizer
    >>> scores = np.full((2, 2, 3), NONE)
    >>> scores[:, :, 1] = 1
    >>> DegreeBoundDomain(truncation=3).attention(scores, Normalizer("softmax"))[0, 0].tolist()
    [0.0, 1.0, 2.0]
    >>> generic = DegreeBoundDomain(truncation=3, generic_coefficients=True)
    >>> generic.attention(scores, Normalizer("softmax"))[0, 0].tolist()
    [0.0, 2.0, 4.0]
    """

    name = "degree bounds"

    def __init__(self, truncation: int, generic_coefficients: bool = False):
        self.truncation = truncation
        self.generic_coefficients = generic_coefficients

    def _mul(self, a, b):
        # out[..., m] = max_i a[..., i] + b[..., m - i]: a vectorized max over sliding windows of b, for a
        # block of output coefficients m at a time (only i <= m of the block): the temporary stays near
        # _BLOCK_BYTES instead of (..., N, N) (seven layers, N = 1459: 136 MB a product, 13 s of the
        # spectrum in the degree bound; a loop over n in Python cost 0.6 s of the five-layer spectrum)
        n = self.truncation
        shape = np.broadcast_shapes(a.shape, b.shape)
        support = np.flatnonzero(np.any(a.reshape(-1, n) != NONE, axis=0))
        out = np.full(shape, NONE)
        if not len(support):
            return out
        low = int(support[0])
        padded = np.full((*b.shape[:-1], 2 * n - 1), NONE)
        padded[..., n - 1:] = b
        # windows[..., m, j] = padded[..., m + j] = b[..., m + j - (n - 1)]; with i = n - 1 - j it is b[m - i]
        windows = np.lib.stride_tricks.sliding_window_view(padded, n - low, axis=-1)
        reversed_a = a[..., ::-1][..., None, : n - low]  # j = n - 1 - i for i = n - 1 .. low
        entries = max(1, int(np.prod(shape[:-1])))
        block = max(1, _BLOCK_BYTES // (8 * entries * (n - low)))
        for first in range(low, n, block):
            stop = min(n, first + block)
            # i in [low, stop) is j in [n - stop, n - low): the terms with m - i < 0 read the padding
            out[..., first:stop] = (reversed_a[..., n - stop:] + windows[..., first:stop, n - stop:]).max(axis=-1)
        return out

    def matmul(self, a, b):
        return self._mul(a[:, None, :], b.swapaxes(0, 1)[None, :, :]).max(axis=2)

    def ones(self, rows: int, cols: int):
        """Constants: degree 0 at ``eps^0``, no other term."""
        out = np.full((rows, cols, self.truncation), NONE)
        out[..., 0] = 0.0
        return out

    def transpose(self, a):
        return a.swapaxes(0, 1)

    def _power_series_degree(self, a, coefficient_degree: float):
        # degree bound of sum_m c_m a^m (m < N) with deg c_m = coefficient_degree (m >= 1), c_0 constant:
        # the max-plus sum of a^1 .. a^(N-1), by doubling (about 3 log2 N products instead of N)
        out = np.full(a.shape, NONE)
        out[..., 0] = 0.0
        if self.truncation > 1:
            closure, _ = self._powers_up_to(a, self.truncation - 1)
            np.maximum(out, closure + coefficient_degree, out=out)
        return out

    def _powers_up_to(self, a, count: int):
        """``(max(a^1, ..., a^count), a^count)`` in max-plus arithmetic, by binary splitting."""
        if count == 1:
            return a, a
        closure, power = self._powers_up_to(a, count // 2)
        # a^1..a^(2h) = (a^1..a^h) max (a^h (a^1..a^h))
        closure = np.maximum(closure, self._mul(power, closure))
        power = self._mul(power, power)
        if count % 2:
            power = self._mul(power, a)
            closure = np.maximum(closure, power)
        return closure, power

    def add(self, a, b):
        return np.maximum(a, b)

    def causal_mask(self, a):
        out = a.copy()
        out[np.tril_indices(a.shape[0], -1, a.shape[1])] = NONE
        return out

    def apply_normalizer(self, a, normalizer):
        """The degree bound of ``s(a)`` entrywise from its Taylor series (an activation of a feed-forward block)."""
        coefficient_degree = 1.0 if (normalizer.is_generic or self.generic_coefficients) else 0.0
        return self._power_series_degree(a, coefficient_degree)

    def attention(self, scores, normalizer, causal: bool = False):
        # a causal mask drops terms of the column sums: the unmasked bounds still hold
        coefficient_degree = 1.0 if (normalizer.is_generic or self.generic_coefficients) else 0.0
        weights = self._power_series_degree(scores, coefficient_degree)
        totals = weights.max(axis=0, keepdims=True)
        tail = totals.copy()
        tail[..., 0] = NONE  # 1/(t + u) = sum_j (-u)^j / t^(j+1)
        inverse = self._power_series_degree(tail, 0.0)
        return self._mul(weights, inverse)


class DegreeBound:
    """A total-degree bound, with the arithmetic of polynomials: ``+`` is max, ``*`` is sum (max-plus).

    Evaluating a formula with DegreeBound entries bounds the total degree of
    its value (for Schwartz-Zippel), as :class:`DegreeBoundDomain` does for
    the forward pass.

    Examples
    --------
    >>> x = DegreeBound(1)
    >>> (x * x + 3 * x + 1).d
    2
    >>> DegreeBound.of(0).d
    -inf
    """

    __slots__ = ("d",)

    def __init__(self, d):
        self.d = d

    @staticmethod
    def of(value) -> "DegreeBound":
        if isinstance(value, DegreeBound):
            return value
        return DegreeBound(float("-inf") if value == 0 else 0)

    def __add__(self, other):
        return DegreeBound(max(self.d, DegreeBound.of(other).d))

    __radd__ = __add__

    def __sub__(self, other):
        return self + other

    def __mul__(self, other):
        return DegreeBound(self.d + DegreeBound.of(other).d)

    __rmul__ = __mul__

    def __pow__(self, exponent: int):
        return DegreeBound(self.d * exponent if exponent else 0)
