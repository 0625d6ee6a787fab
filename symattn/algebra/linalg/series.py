"""Products of (matrices of) truncated series mod ``p``: block Toeplitz BLAS products, strides, a series times many.

A product of series ``A(eps) B(eps)`` is one matrix product: the block
Toeplitz matrix of ``A`` times ``B`` with its coefficients stacked into rows,
keeping only the coefficients where the sparser factor is nonzero and the rows
that can be nonzero, in float64 limbs (:mod:`symattn.algebra.linalg.limbs`).
Factors that are ``eps^a`` times a series in ``eps^g`` go through ``g`` times
shorter products; the compiled and schoolbook engines
(:mod:`symattn.algebra.linalg.engines`) give the same residues.
"""

from __future__ import annotations

import math

import numpy as np

from .engines import _check_prime_size, _compiled_product, _count_blas_work, _engine, _heartbeat, one_blas_thread
from .limbs import _SCALE_MAX_INNER, _combine_limbs, _limb_plan, _limb_products, _residue_product, _residues, matmul_mod

__all__ = ["coefficient_support", "series_matmul", "series_mul_mod", "series_multiply", "series_scale"]

# Working set of one BLAS piece (its Toeplitz matrix, stacked operand and a few copies of its
# result); larger products are cut along the columns, a batch axis or the rows.  Measured on the
# five-layer spectrum: 1 MiB pieces made 500 000 BLAS calls and took 26 s, 16 MiB pieces 23 000
# calls and 6 s; the bound keeps the transient memory of a product near a few of its results.
_PIECE_BYTES = 16 * 2**20
# int64 partial sums of the schoolbook product are reduced this often (64 * 2**56 < 2**63).
_REDUCE_EVERY = 64


def series_mul_mod(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """Entrywise product of broadcastable arrays of series, truncated, mod ``p`` (schoolbook).

    The last axis holds the coefficients.  Loops over the coefficient indices
    of the sparser factor, so a factor such as ``eps * Qt`` costs one vector
    operation.  This is the elementwise product of the series domain and the
    baseline that :func:`series_matmul` is measured against.

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


def series_multiply(a, b, p: int, schoolbook=None) -> np.ndarray:
    """Entrywise product of broadcastable arrays of series of one length, truncated, mod ``p``.

    The elementwise product of the series domain: the compiled engine where
    :func:`product_engine` gives it, else :func:`series_mul_mod` (same result).

    Examples
    --------
    >>> series_multiply(np.array([[1, 1, 0], [0, 1, 0]]), np.array([1, 1, 0]), 5).tolist()
    [[1, 2, 1], [0, 1, 1]]
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if _engine(schoolbook) != "compiled":
        return series_mul_mod(a, b, p)
    n = a.shape[-1]
    if b.shape[-1] != n:
        raise ValueError(f"series_multiply needs series of one length, got {n} and {b.shape[-1]}")
    shape = np.broadcast_shapes(a.shape, b.shape)
    product = _compiled_product(a[..., None, None, :], b[..., None, None, :], int(p), n)
    return product.reshape(shape)


# -- products of matrices of series ------------------------------------------------------------
def coefficient_support(A: np.ndarray) -> np.ndarray:
    """Indices of the coefficients (last axis) that are nonzero somewhere in ``A``.

    Examples
    --------
    >>> coefficient_support(np.array([[0, 2, 0, 0], [0, 0, 0, 5]])).tolist()
    [1, 3]
    """
    n = A.shape[-1]
    flat = A.reshape(-1, n)
    # rows of a few coefficients each make numpy's reduction over them slow (2.5 ms for 200 000
    # rows of 3, 0.3 ms for the same entries in rows of 255): reduce over rows of about 256 first
    fold = max(1, 256 // max(n, 1))
    whole = flat.shape[0] - flat.shape[0] % fold
    nonzero = flat[:whole].reshape(-1, fold * n).any(axis=0).reshape(fold, n).any(axis=0)
    if whole < flat.shape[0]:
        nonzero |= flat[whole:].any(axis=0)
    return np.flatnonzero(nonzero)


def _span_of(support: np.ndarray) -> int:
    """Number of coefficients from the first to the last index of ``support`` (0 when empty)."""
    return int(support[-1] - support[0] + 1) if len(support) else 0


def _stride(support: np.ndarray) -> int:
    """Greatest common divisor of the gaps between the indices of ``support`` (0 for fewer than two).

    A factor of stride ``g >= 2`` is ``eps^a`` times a series in ``eps^g``: along the collapse
    curve every value series is a series in ``eps^2``, and its products split into ``g``
    products ``g`` times shorter (``g`` times fewer flops: :func:`_strided_product`).
    """
    return int(np.gcd.reduce(np.diff(support))) if len(support) > 1 else 0


def _compress(A: np.ndarray, offset: int, g: int, length: int) -> np.ndarray:
    """``C[..., j] = A[..., offset + g j]`` for ``j < length`` (zero past the end of ``A``)."""
    taken = A[..., offset::g][..., :length]
    if taken.shape[-1] == length:
        return taken
    out = np.zeros((*A.shape[:-1], length), dtype=A.dtype)
    out[..., :taken.shape[-1]] = taken
    return out


def _classes(A: np.ndarray, g: int, length: int) -> np.ndarray:
    """``C[..., r, j] = A[..., r + g j]`` for ``r < g``, ``j < length`` (zero past the end of ``A``), contiguous."""
    out = np.empty((*A.shape[:-1], g, length), dtype=A.dtype)
    for r in range(g):
        taken = A[..., r::g][..., :length]
        out[..., r, :taken.shape[-1]] = taken
        out[..., r, taken.shape[-1]:] = 0
    return out


# A dense factor is split into classes (_strided_product) only from this length of series on: on
# shorter ones the copies cost more than the flops saved (6 coefficients: 18 against 11 ms for 37
# products of 1720 x 3 by 3 x 3; 163 coefficients: 54 against 65 ms for 80 x 3 by 3 x 3)
_CLASS_MIN_LENGTH = 16


def _strided_product(A, B, supports, truncation: int, product, classes: bool = True):
    """``A B mod eps^N`` through shorter products when ``A`` is ``eps^a`` times a series in ``eps^g``.

    ``product(A', B', N')`` is the plain product (``series_matmul`` or ``series_scale``), with
    the rows of ``B`` and of the result on the axis ``-2``.  With a stride ``g`` common to both
    factors, one product ``g`` times shorter.  With ``A`` of stride ``g`` and ``B`` dense, the
    coefficients ``r, r + g, ...`` of ``B`` meet those of ``A`` only in the coefficients
    ``a + r + g j`` of the product: the ``g`` classes of ``B`` go side by side as rows of one
    product ``g`` times shorter.  None when neither applies (a monomial ``A`` with a dense
    ``B`` is cheap for the plain product already).
    """
    (support_a, support_b), N = supports, truncation
    ga, gb = _stride(support_a), _stride(support_b)
    g = math.gcd(ga, gb)
    a0 = int(support_a[0])
    if g >= 2:
        b0 = int(support_b[0])
        length = -(-(N - a0 - b0) // g)
        if length <= 0:
            return None  # a zero product: the plain one sees it at once
        short = product(_compress(A, a0, g, length), _compress(B, b0, g, length), length)
        out = np.zeros((*short.shape[:-1], N), dtype=np.int64)
        out[..., a0 + b0::g] = short
        return out
    if ga < 2 or not classes:
        return None
    length = -(-(N - a0) // ga)
    classes = _classes(B, ga, length).reshape(*B.shape[:-2], -1, length)  # rows (row, class)
    short = product(_compress(A, a0, ga, length), classes, length)
    del classes
    short = short.reshape(*short.shape[:-2], -1, ga, length)  # (..., rows, g, length)
    # out[..., a0 + r + g j] = short[..., r, j], written through a view of the padded result
    out = np.zeros((*short.shape[:-2], a0 + ga * length), dtype=np.int64)
    out[..., a0:].reshape(*short.shape[:-2], length, ga)[...] = np.swapaxes(short, -1, -2)
    return out[..., :N]


def _monomial_product(A, B, p: int, truncation: int, shift: int) -> np.ndarray:
    """``A B mod eps^N`` for ``A = eps^shift A_0``: ``A_0`` times every coefficient of ``B``, one BLAS product."""
    lead = np.broadcast_shapes(A.shape[:-3], B.shape[:-3])
    m, n = A.shape[-3], B.shape[-2]
    out = np.zeros((*lead, m, n, truncation), dtype=np.int64)
    length = min(truncation - shift, B.shape[-1])
    if length <= 0:
        return out
    coefficients = B[..., :length].reshape(*B.shape[:-2], n * length)
    product = _residue_product(A[..., shift], coefficients, p)
    out[..., shift:shift + length] = product.reshape(*product.shape[:-1], n, length)
    return out



def _toeplitz_columns(A: np.ndarray, lowest: int, rows: int, first: int, count: int,
                      truncation: int) -> np.ndarray:
    """Float64 block Toeplitz matrices of series ``A (..., m, k, L)``, restricted and transposed.

    ``T[..., i, b k + l, a] = A[..., i, l, (lowest + a) - (first + b)]`` (zero for a negative
    index): one matrix per row ``i`` of ``A``, with a column per coefficient ``lowest + a``
    (``a < rows``) of the product, and a row per coefficient ``first + b`` (``b < count``) of
    the other factor, then ``l``: a band that needs fewer of them takes a prefix.  Transposed, so
    that the products ``B^T T`` come out in the layout of the result (coefficients last).
    """
    *lead, m, k, length = A.shape
    padded = np.zeros((*lead, m, k, 2 * truncation - 1), dtype=np.float64)
    used = min(length, truncation)
    padded[..., truncation - 1:truncation - 1 + used] = A[..., :used]
    # windows[..., x, y] = padded[..., x + y]; A[n - q] = padded[N - 1 + n - q] = windows[base + a, C - 1 - b]
    base = truncation - count + lowest - first
    windows = np.lib.stride_tricks.sliding_window_view(padded, count, axis=-1)[..., base:base + rows, ::-1]
    out = np.empty((*lead, m, count, k, rows), dtype=np.float64)  # C order: one BLAS operand per stack
    np.copyto(out, np.moveaxis(windows, -1, -3))
    return out.reshape(*lead, m, count * k, rows)


def _series_matmul_blas(A, B, p, truncation, supports):
    """``A B`` as exact products: the nonzero coefficients of ``B`` times the Toeplitz matrices of ``A``.

    Computed as ``B^T T`` per row of ``A`` (see :func:`_toeplitz_columns`), so that each BLAS
    product writes the coefficients of the result in place.  Two limbs go on the side with
    fewer rows of the product; ``B`` is converted to float64 once, whatever the number of
    bands and pieces.  Output coefficients go in bands, rows of ``A`` in pieces of about
    ``_PIECE_BYTES`` of working set, and the inner dimension in chunks whose float64 sums stay
    exact.  ``supports``: the coefficients where ``A`` and ``B`` can be nonzero (any superset
    serves).
    """
    *lead_a, m, k, _ = A.shape
    lead = np.broadcast_shapes(tuple(lead_a), B.shape[:-3])
    n = B.shape[-2]
    out = np.zeros((*lead, m, n, truncation), dtype=np.int64)
    support_a, support_b = supports
    if not (m and n and k and len(support_a) and len(support_b)):
        return out
    low_a = int(support_a[0])
    lowest = low_a + int(support_b[0])
    if lowest >= truncation:
        return out
    # coefficients first .. first + count - 1 of B meet A below the truncation; rows lowest .. N - 1
    first = int(support_b[0])
    count = int(min(support_b[-1] + 1, truncation - low_a)) - first
    rows = truncation - lowest
    limb_bits, limbs, chunk = _limb_plan(p, count * k)
    # output coefficients in a few bands: a band of rows needs only the coefficients q <= its last
    # row - valuation(A), which skips most of the zero triangle (about half the flops when dense)
    bands = 4 if rows >= 64 else 1
    band = -(-rows // bands)
    # two limbs go on the side with fewer rows of the product (the rows of A's Toeplitz band or the
    # columns of B): the float64 copies and the BLAS columns they double are the smaller ones
    left_limbs = 2 if limbs == 2 and m * band <= n else 1
    right_limbs = limbs // left_limbs
    if limbs == 2:
        chunk = min(chunk, _SCALE_MAX_INNER)  # both limb sums below 2**52: _combine_limbs
    parts = np.stack([A >> limb_bits, A & ((1 << limb_bits) - 1)], axis=-4) if left_limbs == 2 \
        else A[..., None, :, :, :]  # (..., limbs, m, k, L)
    # B^T with the coefficients of B as columns, ordered (coefficient, l): a band's prefix of them
    source = np.moveaxis(B[..., first:first + count], -3, -1)  # (..., n, count, k)
    right = np.empty((*B.shape[:-3], right_limbs, n, count, k), dtype=np.float64)
    if right_limbs == 2:
        np.right_shift(source, limb_bits, out=right[..., 0, :, :, :], casting="unsafe")
        np.bitwise_and(source, (1 << limb_bits) - 1, out=right[..., 1, :, :, :], casting="unsafe")
    else:
        np.copyto(right[..., 0, :, :, :], source)
    right = right.reshape(*B.shape[:-3], 1, right_limbs * n, count * k)  # the 1 meets the rows of A
    batch = int(np.prod(lead)) if lead else 1
    per_row = limbs * band * (count * k + 2 * n) * 8 * batch  # a row of A: its Toeplitz band and products
    step = max(1, _PIECE_BYTES // per_row)
    for start in range(0, m, step):
        stop = min(m, start + step)
        for top in range(lowest, truncation, band):
            bottom = min(truncation, top + band)
            used = min(count, bottom - low_a - first)
            if used <= 0:
                continue
            left = _toeplitz_columns(parts[..., start:stop, :, :].reshape(*parts.shape[:-4], -1, k, parts.shape[-1]),
                                     top, bottom - top, first, used, truncation)
            _limb_products(right[..., :used * k], left, p, (left_limbs, right_limbs), limb_bits, chunk,
                           out[..., start:stop, :, top:bottom])
            del left
    return out


def series_matmul(A, B, p: int, truncation: int | None = None, schoolbook=None) -> np.ndarray:
    """Product of (stacks of) matrices of truncated series mod ``p``, at BLAS speed.

    Parameters
    ----------
    A, B : int arrays ``(..., m, k, La)`` and ``(..., k, n, Lb)``
        Residues mod ``p``; the last axis holds the coefficients of
        ``eps^0, eps^1, ...``; leading axes broadcast.
    p : int
        A prime below ``2**28``.
    truncation : int, optional
        ``N``: the product is returned mod ``eps^N`` (default ``min(La, Lb)``,
        the precision both factors are known to); coefficients beyond a
        factor's length count as zero.
    schoolbook : bool, optional
        Use the broadcast schoolbook product (the benchmark baseline); the
        default follows ``$SYMATTN_SCHOOLBOOK``.  Same result.

    Returns
    -------
    int64 array ``(..., m, n, N)``

    Examples
    --------
    >>> A = np.array([[[1, 1, 0], [0, 2, 0]]])      # (1 + eps, 2 eps)
    >>> B = np.array([[[1, 0, 0]], [[0, 0, 3]]])    # (1, 3 eps^2)^T
    >>> series_matmul(A, B, 101).tolist()           # 1 + eps + 6 eps^3, truncated
    [[[1, 1, 0]]]
    >>> series_matmul(A, B, 101, truncation=4).tolist()
    [[[1, 1, 0, 6]]]
    """
    p = int(p)
    A = np.asarray(A, dtype=np.int64)
    B = np.asarray(B, dtype=np.int64)
    N = int(min(A.shape[-1], B.shape[-1]) if truncation is None else truncation)
    engine = _engine(schoolbook)
    if engine != "schoolbook" and N <= _STACKED_MAX_LENGTH and \
            A.shape[-3] * A.shape[-2] * B.shape[-2] >= _STACKED_MIN_PRODUCT:
        return _stacked_product(A, B, p, N)
    if engine == "compiled":
        return _compiled_product(A, B, p, N)
    work = math.prod(np.broadcast_shapes(A.shape[:-3], B.shape[:-3])) * A.shape[-3] * A.shape[-2] * B.shape[-2] * N * N
    if engine == "schoolbook" or work <= _TINY_PRODUCT:
        a = np.zeros((*A.shape[:-1], N), dtype=np.int64)
        b = np.zeros((*B.shape[:-1], N), dtype=np.int64)
        a[..., :min(N, A.shape[-1])] = A[..., :N] % p
        b[..., :min(N, B.shape[-1])] = B[..., :N] % p
        out = series_mul_mod(a[..., :, :, None, :], b[..., None, :, :, :], p).sum(axis=-3) % p
        _heartbeat()  # a product for the progress bar too, whichever engine ran it
        return out
    _check_prime_size(p)
    _count_blas_work(work)
    with one_blas_thread():
        return _series_product(_residues(A, p), _residues(B, p), p, N)


# Short series of large matrices (the Smith form of the dimension's integer-score route: 1154 x 768 by
# 768 x 1152 to eps^2) go through one exact BLAS product per output coefficient, the coefficients
# stacked along the inner dimension (N (N + 1) / 2 coefficient products): measured 0.17 s against
# 1.24 s for the Toeplitz path, whose per-row products are thin, and 0.5 s compiled.
_STACKED_MAX_LENGTH = 3
_STACKED_MIN_PRODUCT = 2**20


def _stacked_product(A, B, p: int, N: int) -> np.ndarray:
    """``A B mod eps^N`` as ``C_t = [A_0 .. A_t] [B_t; ..; B_0]``: one :func:`matmul_mod` per coefficient."""
    lead = np.broadcast_shapes(A.shape[:-3], B.shape[:-3])
    out = np.zeros((*lead, A.shape[-3], B.shape[-2], N), dtype=np.int64)
    for t in range(N):
        pairs = [(i, t - i) for i in range(t + 1) if i < A.shape[-1] and t - i < B.shape[-1]]
        if pairs:
            left = np.concatenate([A[..., i] for i, _ in pairs], axis=-1)
            right = np.concatenate([B[..., j] for _, j in pairs], axis=-2)
            out[..., t] = matmul_mod(left, right, p)
    _heartbeat()
    return out


# Products of at most this many coefficient products (stack x m x k x n x N^2) go through the
# schoolbook loop even on the BLAS path: the BLAS path has a fixed cost of about 90 us of numpy
# calls.  Measured (us, BLAS against schoolbook): 2 x 2 x 2 at N = 32 95 / 93, at N = 55 95 / 153;
# 4 x 4 x 4 at N = 16 97 / 73, at N = 32 103 / 152; 8 x 8 x 8 at N = 4 93 / 50.  The pivot
# blocks of the Smith eliminations (3 x 3, 4 x 4) are of this size.
_TINY_PRODUCT = 16384


def _series_product(A, B, p: int, N: int) -> np.ndarray:
    """:func:`series_matmul` of residues on the BLAS path (inside :func:`one_blas_thread`)."""
    support_a, support_b = coefficient_support(A[..., :N]), coefficient_support(B[..., :N])
    if len(support_a) == 1:  # A = eps^a A_0: one product of coefficient matrices
        return _monomial_product(A, B, p, N, int(support_a[0]))
    if len(support_b) == 1:  # (A B)^T = B^T A^T, the entries commute
        return np.swapaxes(_monomial_product(np.swapaxes(B, -3, -2), np.swapaxes(A, -3, -2), p, N,
                                             int(support_b[0])), -3, -2)
    if len(support_a) and len(support_b):
        def product(a, b, length):
            return _series_product(a, b, p, length)

        classes = N >= _CLASS_MIN_LENGTH
        strided = _strided_product(A, B, (support_a, support_b), N, product, classes)
        if strided is None and classes and _stride(support_b) >= 2:  # (A B)^T = B^T A^T, the entries commute
            strided = _strided_product(np.swapaxes(B, -3, -2), np.swapaxes(A, -3, -2), (support_b, support_a),
                                       N, product)
            strided = None if strided is None else np.swapaxes(strided, -3, -2)
        if strided is not None:
            return strided
    # The Toeplitz side has (its rows) x (the span of the other factor's nonzero coefficients):
    # flops and memory both scale with that, so take the smaller of the two orientations
    # ((A B)^T = B^T A^T, as the entries commute).  Dense x dense: the side with fewer rows.
    span_a, span_b = _span_of(support_a), _span_of(support_b)
    # the flops are (rows of the product) x m k n x (span of the non-Toeplitz side): a factor of
    # much smaller span goes on that side (a parameter eps Qt has span 1: its product with a
    # hidden state then costs N times less; measured 77 against 14 ms at N = 163); otherwise the
    # smaller Toeplitz matrix, whose product has the more columns (BLAS is slow on thin ones)
    if 4 * span_a <= span_b or 4 * span_b <= span_a:
        swap = span_a < span_b
    else:
        swap = A.shape[-3] * span_b > B.shape[-2] * span_a
    if swap:
        swapped = _series_matmul_blas(np.swapaxes(B, -3, -2), np.swapaxes(A, -3, -2), p, N,
                                      supports=(support_b, support_a))
        return np.swapaxes(swapped, -3, -2)
    return _series_matmul_blas(A, B, p, N, supports=(support_a, support_b))


# -- a series times many series, entrywise -----------------------------------------------------
# Output coefficients per band: a band [top, bottom) needs the coefficients q < bottom of the other
# factor only, which skips most of the zero triangle of the Toeplitz matrix.  Measured on 333 entries
# of 37 jets (N = 163): 8 bands 51 ms, 4 bands 65 ms, 1 band 106 ms; at N = 55 4 bands are best.
_SCALE_MIN_BAND = 16
# series_scale splits a dense factor into classes (see _strided_product) up to this many rows of it
_SCALE_CLASS_ROWS = 8
_SCALE_BANDS = 8



def _toeplitz_band(padded: np.ndarray, pad: int, first: int, stop: int, top: int, bottom: int) -> np.ndarray:
    """View ``T[..., q - first, n - top] = v[..., n - q]`` for ``q`` in ``[first, stop)``, ``n`` in ``[top, bottom)``.

    ``padded[..., pad + i] = v[..., i]`` with ``pad >= stop - top`` zeros in front.
    """
    windows = np.lib.stride_tricks.sliding_window_view(padded, bottom - top, axis=-1)
    # windows[..., s, c] = v[s + c - pad]; v[top + c - q] is row s = top - q + pad, q = stop - 1 .. first
    return windows[..., top - stop + 1 + pad: top - first + 1 + pad, :][..., ::-1, :]


def series_scale(values, many, p: int, schoolbook=None) -> np.ndarray:
    """Entrywise products of series ``values (..., 1, N)`` with each series of ``many (..., w, N)``, mod ``p``.

    The product that jets need: a series times each of its ``w`` derivative
    series.  Each entry is one BLAS product, its ``w`` series (as rows) times
    the Toeplitz matrix of its value series (split into two 14-bit limbs side
    by side), cut into bands of output coefficients so that the zero triangle
    is mostly skipped; the stacked entries go through one batched
    ``numpy.matmul`` per band.  Leading axes broadcast; the result is
    truncated at ``N`` (the length of ``many``).

    Parameters
    ----------
    values : int array ``(..., 1, N)``
        Residues mod ``p``.
    many : int array ``(..., w, N)``
        Residues mod ``p``.
    p : int
        A prime below ``2**28``.
    schoolbook : bool, optional
        Use :func:`series_mul_mod` (the benchmark baseline; same result).

    Returns
    -------
    int64 array ``(..., w, N)``

    Examples
    --------
    >>> one_plus_eps = np.array([[1, 1, 0]])
    >>> series_scale(one_plus_eps, np.array([[1, 1, 0], [0, 1, 0]]), 101).tolist()
    [[1, 2, 1], [0, 1, 1]]
    """
    p = int(p)
    values = np.asarray(values, dtype=np.int64)
    many = np.asarray(many, dtype=np.int64)
    n = many.shape[-1]
    if values.shape[-1] != n:
        raise ValueError(f"series_scale needs series of one length, got {values.shape[-1]} and {n}")
    lead = np.broadcast_shapes(values.shape[:-2], many.shape[:-2])
    width = many.shape[-2]
    engine = _engine(schoolbook)
    if engine == "compiled":
        product = _compiled_product(values[..., None, :, :], many[..., None, :, :], p, n)
        return product.reshape(*lead, width, n)
    if engine == "schoolbook":
        return series_mul_mod(values, many, p)
    _check_prime_size(p)
    _count_blas_work(math.prod(lead) * width * n * n)
    with one_blas_thread():
        return _scale_product(_residues(values, p), _residues(many, p), p)


def _scale_product(values, many, p: int) -> np.ndarray:
    """:func:`series_scale` of residues on the BLAS path (inside :func:`one_blas_thread`)."""
    n = many.shape[-1]
    lead = np.broadcast_shapes(values.shape[:-2], many.shape[:-2])
    width = many.shape[-2]
    out = np.zeros((*lead, width, n), dtype=np.int64)
    entries = int(np.prod(lead)) if lead else 1
    if not (entries and width):
        return out
    value_support, many_support = coefficient_support(values), coefficient_support(many)
    if not (len(value_support) and len(many_support)):
        return out
    low_value, low_many = int(value_support[0]), int(many_support[0])
    if low_value + low_many >= n:
        return out

    def product(a, b, length):
        return _scale_product(a, b, p)

    # the classes of a dense factor as further rows pay for their copies with few rows (342 entries,
    # stride 2: 1 row of 163 coefficients 3.3 against 8.1 ms, 36 rows 46 against 40 ms); with 40 rows
    # of 485 coefficients they save 13% of the time for three copies of the result (six layers:
    # 17.1 s and 601 MiB with them, 18.1 s and 575 MiB without)
    classes = n >= _CLASS_MIN_LENGTH and width <= _SCALE_CLASS_ROWS
    strided = _strided_product(values, many, (value_support, many_support), n, product, classes)
    if strided is None and width == 1 and _stride(many_support) >= 2:  # one series each: either order
        strided = _strided_product(many, values, (many_support, value_support), n, product)
    if strided is not None:
        return strided
    v = np.broadcast_to(values, (*lead, 1, n)).reshape(entries, n)
    rows = np.broadcast_to(many, (*lead, width, n)).reshape(entries, width, n)
    flat_out = out.reshape(entries, width, n)
    band = max(_SCALE_MIN_BAND, -(-n // _SCALE_BANDS))
    inner = n - low_value - low_many  # at most this many coefficients q of many meet v below N
    # entries per piece: the float copy of their rows and the limbs of their widest Toeplitz band
    per_entry = 8 * (width * inner + 2 * inner * band + 3 * width * band)
    step = max(1, _PIECE_BYTES // per_entry)
    for start in range(0, entries, step):
        stop = min(entries, start + step)
        piece = v[start:stop]
        limbs = np.zeros((stop - start, 2, inner + n), dtype=np.float64)
        limbs[:, 0, inner:] = piece >> 14
        limbs[:, 1, inner:] = piece & ((1 << 14) - 1)
        left = rows[start:stop, :, low_many:n - low_value].astype(np.float64)
        for top in range(low_value + low_many, n, band):
            bottom = min(n, top + band)
            q_stop = bottom - low_value  # q in [low_many, q_stop) meets v[n - q] with n - q >= low_value
            toeplitz = _toeplitz_band(limbs, inner, low_many, q_stop, top, bottom)  # (E, 2, K, W)
            right = np.empty((stop - start, q_stop - low_many, 2, bottom - top), dtype=np.float64)
            np.copyto(right, toeplitz.transpose(0, 2, 1, 3))
            right = right.reshape(stop - start, q_stop - low_many, 2 * (bottom - top))
            target = flat_out[start:stop, :, top:bottom]
            # the inner dimension in chunks whose limb sums stay below 2**52 (series longer than
            # _SCALE_MAX_INNER: seven layers, N = 1459)
            for inner_first in range(0, q_stop - low_many, _SCALE_MAX_INNER):
                inner_stop = min(q_stop - low_many, inner_first + _SCALE_MAX_INNER)
                product = np.matmul(left[:, :, inner_first:inner_stop], right[:, inner_first:inner_stop])
                product = product.reshape(stop - start, width, 2, bottom - top)
                if inner_first == 0:
                    _combine_limbs(product[:, :, 0], product[:, :, 1], p, target)
                else:
                    part = np.empty(target.shape, dtype=np.int64)
                    _combine_limbs(product[:, :, 0], product[:, :, 1], p, part)
                    target += part
                    target %= p
                del product
            del right
    return out


