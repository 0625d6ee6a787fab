"""Arithmetic of first-order jets of truncated power series over GF(p).

An element is a numpy ``int64`` array whose last two axes are ``(J, N)``:
``x[..., 0, n]`` is the coefficient of ``eps^n`` of the value and
``x[..., k, n]`` (``k = 1 .. J-1``) that of its derivative in the ``k``-th
witness direction; every coefficient is a residue in ``0 .. p-1``.  The ring is
``GF(p)[eps]/(eps^N)``, and jets are first order: ``d_k d_l = 0``.

Matrices of such elements carry two more axes in front: ``(rows, cols, J, N)``.

This module imports nothing but numpy: it is part of the independent checker.

Examples
--------
>>> import numpy as np
>>> p = 7
>>> x = np.zeros((2, 3), dtype=np.int64); x[0, 0] = 1; x[0, 1] = 1; x[1, 0] = 1   # (1 + eps) + d_1
>>> multiply(x, x, p).tolist()                   # (1 + eps)^2 + 2 (1 + eps) d_1, mod eps^3
[[1, 2, 1], [2, 2, 0]]
>>> multiply(invert(x, p), x, p).tolist()        # x^-1 x = 1
[[1, 0, 0], [0, 0, 0]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["widen", "both_widened", "convolve", "multiply", "times_series", "exact_matmul", "series_matmul", "matmul", "invert", "inverse_mod", "series_inverse", "transpose"]


def inverse_mod(a: int, p: int) -> int:
    """``a^-1 mod p`` for ``a`` not divisible by the prime ``p``.

    Examples
    --------
    >>> inverse_mod(3, 7)
    5
    """
    return pow(int(a) % p, p - 2, p)


def widen(x: np.ndarray, J: int) -> np.ndarray:
    """``x`` with ``J`` jets: the directions it has not met yet are zero, and arrays carry only those met so far.

    The witness directions are numbered in the order the forward pass meets
    their parameters, so an array before a block's use has no tangent in its
    directions; carrying only the directions met so far is what keeps the
    early layers cheap.

    Examples
    --------
    >>> import numpy as np
    >>> widen(np.ones((2, 1), dtype=np.int64), 3).tolist()
    [[1], [1], [0]]
    """
    if x.shape[-2] >= J:
        return x
    pad = [(0, 0)] * x.ndim
    pad[-2] = (0, J - x.shape[-2])
    return np.pad(x, pad)


def both_widened(x: np.ndarray, y: np.ndarray) -> tuple:
    """``x`` and ``y`` with as many jets as the wider of them (:func:`widen`).

    Examples
    --------
    >>> import numpy as np
    >>> [a.shape for a in both_widened(np.ones((1, 2)), np.ones((3, 2)))]
    [(3, 2), (3, 2)]
    """
    J = max(x.shape[-2], y.shape[-2])
    return widen(x, J), widen(y, J)


def convolve(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """Product of truncated series along the last axis (elementwise otherwise, with broadcasting).

    ``c_n = sum_{i + j = n} a_i b_j mod p`` for ``n < N``: the product in ``GF(p)[eps]/(eps^N)``.

    Examples
    --------
    >>> import numpy as np
    >>> convolve(np.array([1, 1, 0]), np.array([1, 1, 0]), 7).tolist()   # (1 + eps)^2
    [1, 2, 1]
    """
    N = a.shape[-1]
    shape = np.broadcast_shapes(a.shape, b.shape)
    c = np.zeros(shape, dtype=np.int64)
    # reduce mod p once at the end when the N products of a sum (each below p^2) stay below 2^63
    once = N * (p - 1) ** 2 < 2 ** 63
    for i in range(N):
        # a_i eps^i times b: shifts b up by i places
        c[..., i:] += a[..., i:i + 1] * b[..., :N - i]
        if not once:
            c[..., i:] %= p
    return c % p


def multiply(x: np.ndarray, y: np.ndarray, p: int) -> np.ndarray:
    """Elementwise product of jets: ``(x0 + sum x_k d_k)(y0 + sum y_k d_k) = x0 y0 + sum (x0 y_k + x_k y0) d_k``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[2, 0], [1, 0]]); y = np.array([[3, 0], [0, 1]])   # 2 + d_1 and 3 + eps d_1
    >>> multiply(x, y, 101).tolist()                                      # 6 + (3 + 2 eps) d_1
    [[6, 0], [3, 2]]
    """
    x, y = both_widened(x, y)
    out = np.zeros(np.broadcast_shapes(x.shape, y.shape), dtype=np.int64)
    x0, y0 = x[..., 0, :], y[..., 0, :]
    out[..., 0, :] = convolve(x0, y0, p)
    out[..., 1:, :] = (times_series(y[..., 1:, :], x0, p) + times_series(x[..., 1:, :], y0, p)) % p
    return out


def times_series(tangents: np.ndarray, a: np.ndarray, p: int) -> np.ndarray:
    """Every tangent ``(..., J, N)`` times the series ``a`` ``(..., N)`` of its entry, mod ``eps^N``.

    ``(t a)_j = sum_i t_i a_(j-i)``: the row of coefficients of ``t`` times the
    Toeplitz matrix ``T[i, j] = a_(j-i)`` (``j >= i``), all tangents of an
    entry in one product.

    Examples
    --------
    >>> import numpy as np
    >>> times_series(np.array([[1, 2, 0]]), np.array([3, 1, 0]), 101).tolist()   # (1 + 2 eps)(3 + eps)
    [[3, 7, 2]]
    """
    N = a.shape[-1]
    toeplitz = np.zeros((*a.shape[:-1], N, N), dtype=np.int64)
    for i in range(N):
        toeplitz[..., i, i:] = a[..., :N - i]
    return exact_matmul(tangents, toeplitz, p)


def exact_matmul(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """``a @ b mod p`` for residue matrices (stacked on leading axes, broadcast), exactly.

    In float64 (BLAS) when every sum of products is below ``2^53``, where
    float64 adds integers exactly; otherwise in int64, summing the inner
    index in chunks whose sums stay below ``2^63``.

    Examples
    --------
    >>> import numpy as np
    >>> exact_matmul(np.array([[1, 2]]), np.array([[3], [4]]), 7).tolist()    # 11 mod 7
    [[4]]
    """
    inner = a.shape[-1]
    if a.ndim == 2 and b.ndim > 2:
        # one matrix times a stack: one product with the stack's matrices side by side
        stacked = np.moveaxis(b, -2, 0).reshape(inner, -1)
        product = exact_matmul(a, stacked, p)
        return np.moveaxis(product.reshape(a.shape[0], *b.shape[:-2], b.shape[-1]), 0, -2)
    if b.ndim == 2 and a.ndim > 2:
        # a stack times one matrix: one product with the stack's rows on top of each other
        return exact_matmul(a.reshape(-1, inner), b, p).reshape(*a.shape[:-1], b.shape[-1])
    if inner * (p - 1) ** 2 < 2 ** 53:
        product = np.matmul(np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64))
        return product.astype(np.int64) % p          # exact integers below 2^53: converted exactly
    chunk = max(1, (2 ** 63 - 1) // ((p - 1) ** 2))
    out = None
    for start in range(0, inner, chunk):
        part = np.matmul(a[..., start:start + chunk].astype(np.int64), b[..., start:start + chunk, :].astype(np.int64)) % p
        out = part if out is None else (out + part) % p
    return out


def series_matmul(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """``a @ b`` for matrices of truncated series: ``a`` is ``(..., m, n, N)``, ``b`` is ``(..., n, q, N)``.

    ``C_{eps^out} = sum_{i + j = out} A_{eps^i} B_{eps^j}``.  When ``a`` has
    one nonzero power ``i`` (a parameter block on the curve), one matrix
    product ``A_i B`` (all of ``B``'s coefficients side by side) shifted up by
    ``i``; otherwise one product with the block-Toeplitz matrix of ``a``.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[[1, 1]]]); b = np.array([[[2, 3]]])     # (1 + eps)(2 + 3 eps) = 2 + 5 eps
    >>> series_matmul(a, b, 101).tolist()
    [[[2, 5]]]
    """
    *lead_b, n, q, N = b.shape
    m = a.shape[-3]
    support = [i for i in range(N) if a[..., i].any()]                 # the powers where A is not zero
    if len(support) > 1:
        # every power: one product with the block-Toeplitz matrix of A (block (out, j) is A_{out - j})
        toeplitz = np.zeros((*a.shape[:-3], m, N, n, N), dtype=np.int64)
        for i in support:
            for j in range(N - i):
                toeplitz[..., :, i + j, :, j] = a[..., i]
        rows = np.moveaxis(b, -1, -2).reshape(*lead_b, n * N, q)        # row (k, j): B_{k, eps^j}
        product = exact_matmul(toeplitz.reshape(*a.shape[:-3], m * N, n * N), rows, p)
        return np.moveaxis(product.reshape(*product.shape[:-2], m, N, q), -2, -1)
    if not support:
        return np.zeros(np.broadcast_shapes(a.shape[:-3], b.shape[:-3]) + (m, q, N), dtype=np.int64)
    i = support[0]
    columns = np.ascontiguousarray(b).reshape(*lead_b, n, q * N)      # B's coefficients side by side
    product = exact_matmul(a[..., i], columns, p)                       # A_i B: (..., m, q N)
    product = product.reshape(*product.shape[:-1], q, N)
    out = np.zeros_like(product)
    out[..., i:] = product[..., :N - i]                                 # times eps^i
    return out


def matmul(x: np.ndarray, y: np.ndarray, p: int) -> np.ndarray:
    """Product of matrices of jets: ``x`` is ``(..., m, n, J, N)``, ``y`` is ``(..., n, q, J, N)`` (leading axes broadcast).

    ``(X0 + sum X_k d_k)(Y0 + sum Y_k d_k) = X0 Y0 + sum (X0 Y_k + X_k Y0) d_k``,
    every product a product of matrices of series.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.zeros((1, 2, 2, 1), dtype=np.int64); x[0, :, 0, 0] = [1, 2]; x[0, 0, 1, 0] = 1
    >>> y = np.zeros((2, 1, 2, 1), dtype=np.int64); y[:, 0, 0, 0] = [3, 4]
    >>> matmul(x, y, 101)[0, 0, :, 0].tolist()        # (1 + d_1, 2) . (3, 4) = 11 + 3 d_1
    [11, 3]
    """
    *lead_x, m, n, Jx, N = x.shape
    *lead_y, _, q, Jy, _ = y.shape
    J = max(Jx, Jy)                       # the directions either has met (arithmetic.widen)
    # X0 Y_k for every k of Y at once (k = 0 included): Y's jets side by side as q * Jy columns
    left = series_matmul(x[..., 0, :], np.ascontiguousarray(y).reshape(*lead_y, n, q * Jy, N), p)
    out = widen(left.reshape(*left.shape[:-3], m, q, Jy, N), J)
    # X_k Y0 (k >= 1) for the rows i of X_k that are not zero (a parameter block has a tangent in one
    # entry per direction): those rows stacked, times Y0
    if Jx == 1:                                                          # X has no tangent
        return out
    tangents = x[..., 1:, :]                                             # (..., m, n, Jx-1, N)
    nonzero_rows = tangents.reshape(-1, m, n, Jx - 1, N).any(axis=(0, 2, 4))   # (m, Jx-1)
    i_index, k_index = np.nonzero(nonzero_rows)
    if not len(i_index):
        return out
    rows = np.moveaxis(tangents[..., i_index, :, k_index, :], 0, -3)     # (..., pairs, n, N)
    right = series_matmul(rows, y[..., 0, :], p)                          # (..., pairs, q, N)
    # add each row X_k[i] Y0 into out[i, :, k]
    out[..., i_index, :, 1 + k_index, :] = (out[..., i_index, :, 1 + k_index, :]
                                            + np.moveaxis(right, -3, 0)) % p
    return out


def transpose(x: np.ndarray) -> np.ndarray:
    """The transpose of a matrix of jets ``(..., m, n, J, N) -> (..., n, m, J, N)``.

    Examples
    --------
    >>> import numpy as np
    >>> transpose(np.zeros((5, 2, 3, 1, 1), dtype=np.int64)).shape
    (5, 3, 2, 1, 1)
    """
    return np.swapaxes(x, -4, -3)


def series_inverse(a: np.ndarray, p: int) -> np.ndarray:
    """``1 / a`` in ``GF(p)[eps]/(eps^N)`` along the last axis; every constant term must be nonzero mod p.

    ``b_0 = a_0^-1`` and ``b_n = -a_0^-1 sum_{i=1..n} a_i b_{n-i}``.

    Raises
    ------
    ZeroDivisionError
        When a constant term is 0 mod p (not a unit).

    Examples
    --------
    >>> import numpy as np
    >>> series_inverse(np.array([1, 1, 0]), 7).tolist()     # 1/(1 + eps) = 1 - eps + eps^2
    [1, 6, 1]
    """
    a = np.asarray(a, dtype=np.int64) % p
    if (a[..., 0] == 0).any():
        raise ZeroDivisionError("a series with constant term 0 mod p has no inverse")
    N = a.shape[-1]
    # a_0^-1 entry by entry, by Fermat: a_0^(p-2) (square and multiply on arrays)
    inverse0 = np.ones(a.shape[:-1], dtype=np.int64)
    base, exponent = a[..., 0].copy(), p - 2
    while exponent:
        if exponent & 1:
            inverse0 = inverse0 * base % p
        base = base * base % p
        exponent >>= 1
    b = np.zeros_like(a)
    b[..., 0] = inverse0
    for n in range(1, N):
        total = np.zeros(a.shape[:-1], dtype=np.int64)
        for i in range(1, n + 1):
            total = (total + a[..., i] * b[..., n - i]) % p
        b[..., n] = (-inverse0 * total) % p
    return b


def invert(x: np.ndarray, p: int) -> np.ndarray:
    """Inverse of a jet whose value is a unit: ``(u + sum u_k d_k)^-1 = u^-1 - sum u^-2 u_k d_k``.

    Examples
    --------
    >>> import numpy as np
    >>> invert(np.array([[2, 0], [1, 0]]), 7).tolist()      # 1/(2 + d_1) = 4 - 4^2 d_1 = 4 + 5 d_1
    [[4, 0], [5, 0]]
    """
    value = series_inverse(x[..., 0, :], p)                      # u^-1
    square = convolve(value, value, p)                           # u^-2
    out = np.zeros_like(x)
    out[..., 0, :] = value
    out[..., 1:, :] = (-times_series(x[..., 1:, :], square, p)) % p
    return out
