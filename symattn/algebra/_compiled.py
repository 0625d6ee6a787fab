"""The compiled series products: exact matrices of truncated series mod ``p`` in 64-bit integers.

Imported on the first product that uses it (numba's import and the loading
of the cached machine code cost about 0.35 s); :mod:`symattn.algebra.linalg.engines`
decides when, and the products stay on float64 BLAS where this module cannot
be loaded.  The public entry points are in :mod:`symattn.algebra.linalg`
(``series_matmul``, ``series_scale``, ``series_multiply``, ``jet_matmul``);
this module holds only the kernels.

How: the nonzero coefficients of one factor, one at a time, are scalars
that multiply the other factor, transposed so that its coefficients are
rows: ``acc[q:N, :] += s_q * V[0:N-q, :]`` is one contiguous loop of
``(N - q) x columns`` products, long enough to run at vector speed (a loop
per pair of series, ``N - q`` long, ran at a quarter of it).  Zero
coefficients of the scalar side cost nothing, so a series in ``eps^2`` costs
half.  The accumulator holds a panel of columns (matrix products) or a band
of output coefficients (jet products) small enough to stay in the
first-level cache.

Why it is exact (``p < 2**28``, residues in ``[0, p)``):

- every product of two residues is below ``2**56``, and 32-bit operands
  keep it one unsigned 32 x 32 -> 64 multiplication (``vpmuludq``);
- the operands are checked to hold residues on the way (the pass that counts
  their nonzero coefficients), and the kernels refuse them otherwise;
- an accumulator starts at 0 and takes at most ``_TERMS`` = 255 products
  before it is reduced mod ``p``; after a reduction it is below ``2**28``,
  so it always stays below ``255 * 2**56 + 2**28 < 2**64``;
- the final reduction of ``x < 2**64`` computes ``q = trunc(fl(fl(x) *
  fl(1/p)))``, within 1 of ``x / p`` when ``x / p < 2**51`` (three roundings
  of relative size ``2**-53`` each), so ``x - q p`` lies in ``(-p, 2p)``
  (computed mod ``2**64`` and read as a signed integer) and one correction
  finishes; below ``_FLOAT_REDUCTION_MIN`` (where ``x / p``
  may exceed ``2**51``) the integer remainder is used instead.
"""

from __future__ import annotations

import numba
import numpy as np

# An accumulator takes at most this many products of residues before it is reduced (see above).
_TERMS = 255
# From this prime on, x / p < 2**64 / 2**13 = 2**51 and the float64 quotient is within 1.
_FLOAT_REDUCTION_MIN = 2**13

# A jet product takes the nonzero jet coefficients one at a time (strided, not vectorized) when they are
# fewer than (value coefficients x jets) / this: the vectorized loop runs about this much faster per product.
_SPARSE_JETS = 4

_OPTIONS = {"cache": True, "nogil": True, "boundscheck": False}
_MASK = np.uint64(0xFFFFFFFF)


@numba.njit(**_OPTIONS)
def _census(series, length, p, counts):  # pragma: no cover - compiled
    """Nonzero coefficients below ``length`` of each row of ``series (rows, L)`` into ``counts``;
    False when a coefficient is not a residue mod ``p``."""
    for row in range(series.shape[0]):
        count = 0
        for q in range(length):
            x = series[row, q]
            if x < 0 or x >= p:
                return False
            if x != 0:
                count += 1
        counts[row] = count
    return True


@numba.njit(**_OPTIONS)
def _one_more_product(acc, terms, modulus):  # pragma: no cover - compiled
    """The count of products in ``acc`` once it takes one more: reduced mod ``p`` first when full."""
    if terms < _TERMS:
        return terms + 1
    for u in range(acc.shape[0]):
        acc[u] = acc[u] % modulus
    return 1


@numba.njit(**_OPTIONS)
def _scaled_rows(acc, first, scalars, length, rows, columns, terms, modulus):  # pragma: no cover - compiled
    """``acc[n - first, :] += scalars[q] rows[n - q, :]`` for the output coefficients ``n`` that ``acc`` holds.

    ``acc`` holds coefficients ``first .. first + len(acc) / columns - 1`` and
    ``rows`` the coefficients of the vector side, both flat with ``columns``
    per coefficient; returns the products ``acc`` took since its last reduction.
    """
    stop = first + acc.shape[0] // columns
    length_rows = rows.shape[0] // columns
    for q in range(min(length, stop)):
        s = np.uint64(scalars[q]) & _MASK
        low, high = max(first, q), min(stop, q + length_rows)
        if s == 0 or low >= high:
            continue
        terms = _one_more_product(acc, terms, modulus)
        # unsigned indices need no wraparound test: the loop vectorizes
        start, source = np.uint64((low - first) * columns), np.uint64((low - q) * columns)
        for u in range(start, start + np.uint64((high - low) * columns)):
            acc[u] += s * (np.uint64(rows[u - start + source]) & _MASK)
    return terms


@numba.njit(**_OPTIONS)
def _scaled_column(acc, first, jets, length_jets, vector, length_vector, columns, terms, modulus):  # pragma: no cover
    """``acc[n - first, d] += jets[d, q] vector[n - q]`` for the nonzero ``jets[d, q]``, ``d >= 1``, and the
    coefficients ``n`` that ``acc`` holds (as in :func:`_scaled_rows`); returns the products ``acc`` took
    since its last reduction (counted once per coefficient of ``jets``)."""
    stop = first + acc.shape[0] // columns
    for d in range(1, jets.shape[0]):
        for q in range(min(length_jets, stop)):
            s = np.uint64(jets[d, q]) & _MASK
            low, high = max(first, q), min(stop, q + length_vector)
            if s == 0 or low >= high:
                continue
            terms = _one_more_product(acc, terms, modulus)
            for n in range(low, high):
                acc[(n - first) * columns + d] += s * (np.uint64(vector[n - q]) & _MASK)
    return terms


@numba.njit(**_OPTIONS)
def _reduced(acc, p):  # pragma: no cover - compiled
    """``acc mod p`` in place, and returned (one contiguous pass)."""
    modulus, reciprocal = np.uint64(p), 1.0 / p
    for u in range(acc.shape[0]):
        acc[u] = np.uint64(_reduce(acc[u], p, modulus, reciprocal))
    return acc


@numba.njit(**_OPTIONS)
def _reduce(x, p, modulus, reciprocal):  # pragma: no cover - compiled
    """``x mod p`` for ``x < 2**64`` (see the module's docstring)."""
    if p < _FLOAT_REDUCTION_MIN:
        return np.int64(x % modulus)
    r = np.int64(x - np.uint64(np.float64(x) * reciprocal) * modulus)
    if r < 0:
        r += p
    elif r >= p:
        r -= p
    return r


@numba.njit(**_OPTIONS)
def _transpose_into(target, source, length, columns, skip):  # pragma: no cover - compiled
    """``target[t * columns + w] = source[w, t]`` for ``t < length``: the rows ``w < skip`` and the columns
    past ``len(source)`` are zero."""
    width = source.shape[0]
    for t in range(length):
        row = target[t * columns:(t + 1) * columns]
        for w in range(skip):
            row[w] = 0
        for w in range(skip, width):
            row[w] = source[w, t]
        for w in range(width, columns):
            row[w] = 0


@numba.njit(**_OPTIONS)
def _transposed(series, length, columns, skip):  # pragma: no cover - compiled
    """``series (blocks, width, L)`` as ``(blocks, length * columns)``, each block by :func:`_transpose_into`."""
    out = np.empty((series.shape[0], length * columns), dtype=np.int64)
    for b in range(series.shape[0]):
        _transpose_into(out[b], series[b], length, columns, skip)
    return out


# The columns of the vector side go through the matrix kernel in panels of this many int64
# coefficients (a panel and its accumulator stay in the first-level cache).
_PANEL_COEFFICIENTS = 2048


@numba.njit("boolean(int64[:, :, :, ::1], int64[:, :, :, ::1], int64[::1], int64[::1], int64, int64[:, :, :, ::1])",
            **_OPTIONS)
def series_matmul_kernel(A, B, entry_a, entry_b, p, out):  # pragma: no cover - compiled; tested through linalg
    """``out[e, i, j] = sum_l A[entry_a[e], i, l] B[entry_b[e], l, j] mod (p, eps^N)``; ``N = out.shape[3]``.

    ``A (Ea, m, k, La)``, ``B (Eb, k, n, Lb)``: ``entry_a``, ``entry_b`` say
    which entry of each operand meets output entry ``e`` (broadcasting
    without copies); coefficients beyond a factor's length count as zero.
    ``A`` is the scalar side, whose zero coefficients cost nothing; the
    columns of ``B`` go in panels, each transposed into a small buffer when
    its entry changes.  Returns False, leaving ``out`` undefined, when an operand
    holds a coefficient outside ``[0, p)``.
    """
    batch, m, n, N = out.shape
    k = A.shape[2]
    length_a, length_b = min(A.shape[3], N), min(B.shape[3], N)
    counts_a = np.empty(A.shape[0] * m * k, dtype=np.int64)
    counts_b = np.empty(B.shape[0] * k * n, dtype=np.int64)
    if not (_census(A.reshape(-1, A.shape[3]), length_a, p, counts_a)
            and _census(B.reshape(-1, B.shape[3]), length_b, p, counts_b)):
        return False
    counts_a = counts_a.reshape(A.shape[0], m, k)
    counts_b = counts_b.reshape(B.shape[0], k, n)
    panel = max(1, min(n, _PANEL_COEFFICIENTS // max(1, N)))
    acc = np.zeros(N * panel, dtype=np.uint64)
    rows = np.zeros((k, length_b * panel), dtype=np.int64)
    live = np.zeros(k, dtype=np.bool_)
    modulus = np.uint64(p)
    for first in range(0, n, panel):
        columns = min(panel, n - first)
        block = acc[:N * columns]
        current = -1
        for e in range(batch):
            ea, eb = entry_a[e], entry_b[e]
            if eb != current:  # the panel of B[eb, l] as rows of coefficients, (Lb, columns) each
                current = eb
                for l in range(k):
                    live[l] = counts_b[eb, l, first:first + columns].sum() > 0
                    _transpose_into(rows[l], B[eb, l, first:first + columns], length_b, columns, 0)
            for i in range(m):
                terms = 0
                for l in range(k):
                    if counts_a[ea, i, l] and live[l]:
                        terms = _scaled_rows(block, 0, A[ea, i, l], length_a, rows[l, :length_b * columns],
                                             columns, terms, modulus)
                _reduced(block, p)
                for j in range(columns):
                    for t in range(N):
                        out[e, i, first + j, t] = np.int64(block[t * columns + j])
                block[:] = 0
    return True


@numba.njit("boolean(int64[:, :, :, :, ::1], int64[:, :, :, :, ::1], int64, int64[:, :, :, :, ::1])", **_OPTIONS)
def jet_matmul_kernel(a, b, p, out):  # pragma: no cover - compiled; tested through the series domain
    """The product of matrices of jets of series, in their own layout.

    ``a (r, k, Ba, wa, La)``, ``b (k, c, Bb, wb, Lb)``, ``out (r, c, batch, w, N)``
    with ``w = max(wa, wb)``: the value ``sum_l a0 b0``, and in jet ``d >= 1``
    ``sum_l a0 b_d + a_d b0`` (a missing jet is zero).  ``Ba``, ``Bb`` are 1 or
    the batch.  The values are the scalar sides: ``a0`` times all of ``b``,
    ``b0`` times the jets of ``a``.  Returns False when an operand holds a
    coefficient outside ``[0, p)``.
    """
    r, c, batch, width, N = out.shape
    k, batch_a, width_a, batch_b, width_b = a.shape[1], a.shape[2], a.shape[3], b.shape[2], b.shape[3]
    length_a, length_b = min(a.shape[4], N), min(b.shape[4], N)
    counts_a = np.empty(a.size // a.shape[4], dtype=np.int64)
    counts_b = np.empty(b.size // b.shape[4], dtype=np.int64)
    if not (_census(a.reshape(-1, a.shape[4]), length_a, p, counts_a)
            and _census(b.reshape(-1, b.shape[4]), length_b, p, counts_b)):
        return False
    counts_a = counts_a.reshape(r * k * batch_a, width_a)
    counts_b = counts_b.reshape(k * c * batch_b, width_b)
    # every entry's jets as rows of coefficients, `width` columns: all of b, and the jets of a (value column zero)
    rows_b = _transposed(b.reshape(k * c * batch_b, width_b, b.shape[4]), length_b, width, 0)
    rows_a = _transposed(a.reshape(r * k * batch_a, width_a, a.shape[4]), length_a, width, 1)
    modulus = np.uint64(p)
    # output coefficients in bands whose accumulator stays in the first-level cache
    band = max(1, min(N, _PANEL_COEFFICIENTS // width))
    acc = np.zeros(band * width, dtype=np.uint64)
    for i in range(r):
        for j in range(c):
            for e in range(batch):
                ea = 0 if batch_a == 1 else e
                eb = 0 if batch_b == 1 else e
                for first in range(0, N, band):
                    rows_here = min(band, N - first)
                    block = acc[:rows_here * width]
                    terms = 0
                    for l in range(k):
                        entry_a = (i * k + l) * batch_a + ea
                        entry_b = (l * c + j) * batch_b + eb
                        if counts_a[entry_a, 0] and counts_b[entry_b].sum():
                            terms = _scaled_rows(block, first, a[i, l, ea, 0], length_a, rows_b[entry_b], width,
                                                 terms, modulus)
                        jet_terms = counts_a[entry_a, 1:].sum()
                        if counts_b[entry_b, 0] == 0 or jet_terms == 0:
                            continue
                        if _SPARSE_JETS * jet_terms < counts_b[entry_b, 0] * (width_a - 1):
                            # few nonzero jet coefficients (a parameter's jets are unit vectors): each one
                            # times the value of b, written into its own jet column
                            terms = _scaled_column(block, first, a[i, l, ea], length_a, b[l, j, eb, 0], length_b,
                                                   width, terms, modulus)
                        else:
                            terms = _scaled_rows(block, first, b[l, j, eb, 0], length_b, rows_a[entry_a], width,
                                                 terms, modulus)
                    _reduced(block, p)
                    for d in range(width):
                        for t in range(rows_here):
                            out[i, j, e, d, first + t] = np.int64(block[t * width + d])
                    block[:] = 0
    return True


# -- the panel of an elimination over GF(p) ----------------------------------------------------------
@numba.njit(**_OPTIONS)
def _inverse_mod(a, p):  # pragma: no cover - compiled
    """``a^(-1) mod p`` for a residue ``a != 0`` (Fermat: ``a^(p - 2)``)."""
    result, base, e = 1, a % p, p - 2
    while e:
        if e & 1:
            result = result * base % p
        base = base * base % p
        e >>= 1
    return result


@numba.njit("int64(int64[:, ::1], int64[::1], int64[:, ::1], int64, int64, int64, int64, int64[::1], int64[::1])",
            **_OPTIONS)
def panel_kernel(W, order, multipliers, start, stop, r, p, rows, cols):  # pragma: no cover - compiled
    """The elimination of columns ``start .. stop - 1`` of ``W`` (residues) from row ``r`` on, in place.

    The same steps as the loop of :func:`symattn.algebra.linalg.elimination._eliminate`, in the same
    order: the first nonzero entry of each column below ``r`` is the pivot, its row swapped up (with
    ``order`` and ``multipliers``), scaled to 1, and subtracted from the rows below within the panel;
    ``multipliers[:, k]`` receives the ``k``-th pivot's inverse and the entries below it.  The pivots'
    original rows and columns go to ``rows`` and ``cols``; returns how many were found.  Products of
    two residues stay below ``2**56``.
    """
    m, n = W.shape
    first = r
    found = 0
    for j in range(start, stop):
        if r == m:
            break
        i = -1
        for s in range(r, m):
            if W[s, j] != 0:
                i = s
                break
        if i < 0:
            continue
        if i != r:
            for c in range(n):
                W[r, c], W[i, c] = W[i, c], W[r, c]
            order[r], order[i] = order[i], order[r]
            for c in range(multipliers.shape[1]):
                multipliers[r, c], multipliers[i, c] = multipliers[i, c], multipliers[r, c]
        inverse = _inverse_mod(W[r, j], p)
        for c in range(j, stop):
            W[r, c] = W[r, c] * inverse % p
        for s in range(r + 1, m):
            below = W[s, j]
            multipliers[s, r - first] = below
            if below != 0:
                for c in range(j + 1, stop):
                    W[s, c] = (W[s, c] - below * W[r, c]) % p
        multipliers[r, r - first] = inverse
        rows[found] = order[r]
        cols[found] = j
        found += 1
        r += 1
    return found


@numba.njit("void(int64[:, ::1], int64[:, ::1], int64, int64, int64, int64)", **_OPTIONS)
def panel_rows_kernel(W, multipliers, first, found, stop, p):  # pragma: no cover - compiled
    """The panel's eliminations on its own pivot rows ``first .. first + found - 1``, columns from ``stop``.

    Each pivot row scaled by its inverse, then taken from the later pivot rows of the panel
    (as :func:`symattn.algebra.linalg.elimination._eliminate` does with numpy).
    """
    n = W.shape[1]
    for t in range(found):
        row = first + t
        scale = multipliers[row, t]
        for c in range(stop, n):
            W[row, c] = W[row, c] * scale % p
        for s in range(row + 1, first + found):
            factor = multipliers[s, t]
            if factor != 0:
                for c in range(stop, n):
                    W[s, c] = (W[s, c] - factor * W[row, c]) % p
