"""Elimination over GF(p): pivots, ranks, inverses, row compression, a growing echelon basis.

Gaussian elimination in panels of columns, the update of the columns after a
panel one product (:func:`symattn.algebra.linalg.matmul_mod`); inverses of
matrices over GF(p) and, by Newton's iteration, of matrices of series.
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from .engines import blas_threads_for, one_blas_thread
from .limbs import matmul_mod
from .series import series_matmul

__all__ = ["EchelonBasis", "add_mod", "compress_row_blocks", "compress_row_pieces", "compress_rows", "inverse_mod_p", "modular_inverse", "pivots", "rank_mod_p",
           "series_matrix_inverse"]

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



# pivots works through panels of this many columns: the elimination inside a panel is a Python loop
# over its columns, the update of the columns after it one matrix product (174 x 172 at rank 100:
# 4 against 9 ms for the column-by-column elimination)
_PANEL = 32


def pivots(M, p: int) -> tuple[list[int], list[int]]:
    """Rows and columns of an invertible maximal square submatrix of ``M`` over GF(p).

    Gaussian elimination with the first nonzero entry of each column as pivot, in panels of
    columns: the columns after a panel receive its eliminations at once, as one product
    (:func:`matmul_mod`), with the same pivots as column by column.

    Examples
    --------
    >>> pivots([[0, 1, 2], [0, 2, 4], [1, 0, 0]], 7)
    ([2, 1], [0, 1])
    """
    W = np.asarray(M, dtype=np.int64) % p
    return _eliminate(W, p)


def _eliminate(W: np.ndarray, p: int) -> tuple[list[int], list[int]]:
    """Forward elimination of ``W`` in place, in panels; the pivots' original rows and their columns.

    Afterwards the ``t``-th row of ``W`` is the ``t``-th pivot row, scaled to 1 at its pivot and
    exact from there on; entries left of a row's pivot are not kept (never read again).  Large
    matrices run the panels' loops compiled (:func:`_eliminate_compiled`, the same steps).
    """
    if W.size >= _COMPILED_PANELS_MIN:
        from .engines import _compiled_kernels

        kernels = _compiled_kernels()
        if kernels is not None:
            return _eliminate_compiled(np.ascontiguousarray(W), p, kernels)
    m, n = W.shape
    order = np.arange(m)
    rows, cols = [], []
    r = 0
    for start in range(0, n, _PANEL):
        if r == m:
            break
        stop = min(n, start + _PANEL)
        first = r  # the panel's pivot rows are first .. r - 1
        multipliers = np.zeros((m, stop - start), dtype=np.int64)  # rows below each pivot, per pivot
        for j in range(start, stop):
            if r == m:
                break
            nonzero = np.flatnonzero(W[r:, j])
            if not len(nonzero):
                continue
            i = r + int(nonzero[0])
            if i != r:
                W[[r, i]] = W[[i, r]]
                order[[r, i]] = order[[i, r]]
                multipliers[[r, i]] = multipliers[[i, r]]
            inverse = pow(int(W[r, j]), -1, p)
            W[r, j:stop] = W[r, j:stop] * inverse % p
            below = W[r + 1:, j]
            # columns before j are zero in these rows and column j is not read again
            W[r + 1:, j + 1:stop] = (W[r + 1:, j + 1:stop] - below[:, None] * W[r, j + 1:stop][None, :]) % p
            multipliers[r, r - first] = inverse  # the pivot row's own scaling
            multipliers[r + 1:, r - first] = below
            rows.append(int(order[r]))
            cols.append(j)
            r += 1
        found = r - first
        if not found or stop == n:
            continue
        # the same eliminations on the columns after the panel: each pivot row scaled and taken
        # from the later pivot rows of the panel, then from all rows below at once
        rest = W[:, stop:]
        for t in range(found):
            row = first + t
            rest[row] = rest[row] * multipliers[row, t] % p
            if row + 1 < r:
                rest[row + 1:r] = (rest[row + 1:r] - multipliers[row + 1:r, t:t + 1] * rest[row]) % p
        if r < m:
            rest[r:] = (rest[r:] - matmul_mod(multipliers[r:, :found], rest[first:r], p)) % p
    return rows, cols


# From this many entries on, the panels' loops run compiled: measured on the 1922 x 1920 leading
# coefficients of a width-32 Smith form (rank 800), 1.1 s in numpy against 0.2 s (numba's import,
# about 0.35 s once per process, is paid by the first large elimination)
_COMPILED_PANELS_MIN = 2**20
# the compiled panels are wider: their loops cost nothing per call, the products after them less
_COMPILED_PANEL = 64


def _eliminate_compiled(W: np.ndarray, p: int, kernels) -> tuple[list[int], list[int]]:
    """:func:`_eliminate` with each panel's loop and its pivot rows' update compiled; same pivots, same ``W``."""
    from .limbs import _limb_plan

    m, n = W.shape
    single_limb = _limb_plan(p, _COMPILED_PANEL)[1] == 1
    order = np.arange(m, dtype=np.int64)
    rows, cols = np.empty(min(m, n), dtype=np.int64), np.empty(min(m, n), dtype=np.int64)
    r = 0
    for start in range(0, n, _COMPILED_PANEL):
        if r == m:
            break
        stop = min(n, start + _COMPILED_PANEL)
        first = r
        multipliers = np.zeros((m, stop - start), dtype=np.int64)
        found = kernels.panel_kernel(W, order, multipliers, start, stop, r, p, rows[r:], cols[r:])
        r += found
        if not found or stop == n:
            continue
        kernels.panel_rows_kernel(W, multipliers, first, found, stop, p)
        if r < m:
            rest = W[r:, stop:]
            if single_limb:  # residues times a panel's multipliers: sums below 64 p^2 < 2**53, exact in float64
                rest -= (multipliers[r:, :found].astype(np.float64) @ W[first:r, stop:].astype(np.float64)
                         ).astype(np.int64)
            else:
                rest -= matmul_mod(multipliers[r:, :found], W[first:r, stop:], p)
            rest %= p
    return rows[:r].tolist(), cols[:r].tolist()


def rank_mod_p(M, p: int) -> int:
    """Rank of an integer matrix over GF(p).

    Examples
    --------
    >>> rank_mod_p([[1, 2], [2, 4]], 7), rank_mod_p([[1, 2], [2, 4]], 2), rank_mod_p([[1, 2], [3, 4]], 7)
    (1, 1, 2)
    """
    M = np.asarray(M)
    if M.size == 0:
        return 0
    if M.shape[0] > M.shape[1]:
        M = M.T
    return len(pivots(M, p)[0])


def inverse_mod_p(M, p: int) -> np.ndarray:
    """Inverse of a square matrix over GF(p); ZeroDivisionError when singular.

    Forward elimination of ``[M | I]`` in panels (as :func:`pivots`), then back substitution
    in blocks, each block one product (:func:`matmul_mod`).

    Examples
    --------
    >>> inverse_mod_p(np.array([[1, 2], [3, 4]]), 7).tolist()
    [[5, 1], [5, 3]]
    """
    n = M.shape[0]
    W = np.concatenate([np.asarray(M, dtype=np.int64) % p, np.eye(n, dtype=np.int64)], axis=1)
    _, cols = _eliminate(W, p)
    if cols != list(range(n)):
        raise ZeroDivisionError(f"singular matrix mod {p}")
    upper, X = W[:, :n], W[:, n:]  # upper: unit upper triangular (entries below its diagonal unused)
    for stop in range(n, 0, -_PANEL):
        start = max(0, stop - _PANEL)
        if stop < n:
            X[start:stop] = (X[start:stop] - matmul_mod(upper[start:stop, stop:], X[stop:], p)) % p
        for i in range(stop - 1, start, -1):  # row i is final: take it from the rows above in the block
            X[start:i] = (X[start:i] - upper[start:i, i:i + 1] * X[i]) % p
    return X


def series_matrix_inverse(A, p: int, schoolbook=None) -> np.ndarray:
    """Inverse mod ``eps^N`` of a square matrix of series whose constant term is invertible mod ``p``.

    Newton's iteration ``X <- X (2 - A X)``, doubling the precision with two
    :func:`series_matmul` each step.

    Examples
    --------
    >>> A = np.array([[[1, 1, 0]]])                      # 1 + eps
    >>> series_matrix_inverse(A, 7).tolist()             # 1 - eps + eps^2
    [[[1, 6, 1]]]
    """
    A = np.asarray(A, dtype=np.int64) % p
    size, _, N = A.shape
    X = np.zeros_like(A)
    X[:, :, 0] = inverse_mod_p(A[:, :, 0], p)
    two = np.zeros_like(A)
    two[np.arange(size), np.arange(size), 0] = 2
    precision = 1
    while precision < N:
        precision = min(N, 2 * precision)
        correction = (two[..., :precision]
                      - series_matmul(A[..., :precision], X[..., :precision], p, schoolbook=schoolbook)) % p
        X[..., :precision] = series_matmul(X[..., :precision], correction, p, schoolbook=schoolbook)
    return X


def compress_rows(M: np.ndarray, rows: int, p: int, rng: np.random.Generator) -> np.ndarray:
    """``R M`` for ``R`` drawn as ``rng.integers(0, p, size=(rows, M.shape[0]))``, when ``M`` has more rows.

    ``M`` may carry further axes (series coefficients): ``R`` combines its
    rows.  By Cauchy-Binet every ``r x r`` minor of ``R M`` is a combination
    of those of ``M`` with the minors of ``R`` as coefficients, so ranks and
    Smith exponents are unchanged except with probability at most ``r / p``
    (they can only drop).

    Examples
    --------
    >>> M = np.zeros((5, 2, 3), dtype=np.int64); M[0, 0, 1] = 1; M[4, 1, 2] = 1
    >>> compress_rows(M, 2, 101, np.random.default_rng(0)).shape
    (2, 2, 3)
    >>> compress_rows(M, 8, 101, np.random.default_rng(0)) is M
    True
    """
    if M.shape[0] <= rows:
        return M
    R = rng.integers(0, p, size=(rows, M.shape[0]))
    flat = matmul_mod(R, M.reshape(M.shape[0], -1), p)
    return flat.reshape(rows, *M.shape[1:])


def compress_row_blocks(M: np.ndarray, rows: int, p: int, generators, out: np.ndarray | None = None) -> np.ndarray:
    """``sum_b R_b M_b`` mod ``p``: ``M``'s rows in consecutive blocks of one height, each combined by its own ``R_b``.

    ``R_b`` is drawn as ``generators[b].integers(0, p, size=(rows, height))``,
    so the row compression of a matrix stacked from pieces (the Jacobians of
    groups of inputs) is the sum of the pieces' compressions whatever the
    grouping: with one generator per input, keyed by the input, ``R M`` is the
    same computed at once or group by group (:func:`add_mod` sums them).  The
    rows are always compressed, also when ``M`` has fewer than ``rows``.

    Parameters
    ----------
    M : int array ``(blocks * height, ...)``
        Further axes (series coefficients) ride along.
    rows : int
        Rows of the result.
    p : int
        A prime below ``2**28``.
    generators : sequence of numpy.random.Generator
        One per block, in the order of the blocks.
    out : int64 array ``(rows, ...)`` of residues, optional
        Add ``R M`` to it (in place, mod ``p``) instead of returning a new array.

    Returns
    -------
    int64 array ``(rows, ...)`` of residues (``out`` when given).

    Examples
    --------
    >>> M = np.arange(24).reshape(4, 3, 2)            # two blocks of two rows
    >>> whole = compress_row_blocks(M, 5, 101, [np.random.default_rng(b) for b in (0, 1)])
    >>> first = compress_row_blocks(M[:2], 5, 101, [np.random.default_rng(0)])
    >>> second = compress_row_blocks(M[2:], 5, 101, [np.random.default_rng(1)])
    >>> bool((add_mod(first, second, 101) == whole).all()), whole.shape
    (True, (5, 3, 2))
    >>> total = compress_row_blocks(M[:2], 5, 101, [np.random.default_rng(0)])
    >>> bool((compress_row_blocks(M[2:], 5, 101, [np.random.default_rng(1)], out=total) == whole).all())
    True
    """
    generators = list(generators)
    if not generators or M.shape[0] % len(generators):
        raise ShapeError(f"{M.shape[0]} rows do not split into {len(generators)} blocks of one height; give one "
                         "generator per block of rows")
    height = M.shape[0] // len(generators)
    R = np.concatenate([rng.integers(0, p, size=(rows, height)) for rng in generators], axis=1)
    flat = M.reshape(M.shape[0], -1)
    total = None if out is None else out.reshape(rows, flat.shape[1])  # a view: out itself is updated
    support = np.flatnonzero(flat.any(axis=0))
    if len(support) > 0.9 * flat.shape[1]:  # (nearly) every column: one product, no gather
        product = matmul_mod(R, flat, p)
        if total is None:
            return product.reshape(rows, *M.shape[1:])
        add_mod(total, product, p)
        return out
    # only the columns (series coefficients) that are nonzero somewhere: a Jacobian series along a curve
    # has about half of them zero (width 32, rank 8, 8 tokens: its compression 16.5 s -> 9 s)
    if total is None:
        out = np.zeros((rows, *M.shape[1:]), dtype=np.int64)
        total = out.reshape(rows, flat.shape[1])
    if len(support):
        total[:, support] = (total[:, support] + matmul_mod(R, flat[:, support], p)) % p
    return out


def compress_row_pieces(pieces, rows: int, p: int, generators, out: np.ndarray | None = None,
                        first_row: int | None = None) -> np.ndarray:
    """``sum_b R_b M_b`` mod ``p`` over the blocks of the pieces, without stacking them.

    ``pieces`` are arrays of whole blocks of one height (one generator per
    block, in order); ``R_b`` is drawn as :func:`compress_row_blocks` draws it,
    so without ``first_row`` the result equals
    ``compress_row_blocks(np.concatenate(pieces), ...)``.  With ``first_row``
    (the index of the pieces' first row in the whole matrix), the columns of
    ``R`` of the whole matrix's first ``rows`` rows are the identity's:
    ``R = [I | G]``, as good as a random ``R`` for the rank (any ``R`` whose
    leading square is invertible is ``A [I | G']``) and cheaper: those rows
    are added, not multiplied.  When the sums stay exact in float64 (``p``
    below ``2**20`` and at most ``2**13`` rows in all: ``inner p^2 < 2**53``)
    the pieces' products are added in one float64 array and reduced once;
    otherwise each product is reduced and added.

    Examples
    --------
    >>> M = np.arange(24).reshape(4, 3, 2)
    >>> streams = lambda: [np.random.default_rng(b) for b in (0, 1)]
    >>> whole = compress_row_blocks(M, 5, 101, streams())
    >>> bool((compress_row_pieces([M[:2], M[2:]], 5, 101, streams()) == whole).all())
    True
    >>> kept = compress_row_pieces([M[:2], M[2:]], 4, 101, streams(), first_row=0)   # R = I: M itself
    >>> bool((kept == M).all())
    True
    """
    from .limbs import _limb_plan

    pieces = [np.asarray(piece) for piece in pieces]
    generators = list(generators)
    inner = sum(piece.shape[0] for piece in pieces)
    if not pieces or inner % len(generators):
        raise ShapeError(f"{inner} rows do not split into {len(generators)} blocks of one height; give one "
                         "generator per block of rows")
    height = inner // len(generators)
    shape = pieces[0].shape[1:]
    exact = _limb_plan(p, inner)[1] == 1  # every float64 sum of products of residues is exact
    total = np.zeros((rows, int(np.prod(shape))), dtype=np.float64 if exact else np.int64)
    row = first_row
    with one_blas_thread():
        for piece in pieces:
            blocks = piece.shape[0] // height
            R = np.concatenate([rng.integers(0, p, size=(rows, height)) for rng in generators[:blocks]], axis=1)
            generators = generators[blocks:]
            flat = piece.reshape(piece.shape[0], -1)
            identity = 0 if row is None else max(0, min(piece.shape[0], rows - row))
            if identity:  # rows row .. row + identity - 1 of the whole matrix: R's identity columns, added
                total[row:row + identity] += flat[:identity]
            if identity < piece.shape[0]:
                if exact:
                    left, right = R[:, identity:].astype(np.float64), flat[identity:].astype(np.float64)
                    with blas_threads_for(left.shape[0] * left.shape[1] * right.shape[1]):
                        total += left @ right
                else:
                    total += matmul_mod(R[:, identity:], flat[identity:], p)
                    total %= p
            if row is not None:
                row += piece.shape[0]
    product = np.remainder(total.astype(np.int64) if exact else total, p).reshape(rows, *shape)
    del total
    if out is None:
        return product
    return add_mod(out, product, p)


def add_mod(total: np.ndarray, part: np.ndarray, p: int) -> np.ndarray:
    """``total + part`` mod ``p``, in place in ``total`` (int64 residues); returns ``total``.

    Examples
    --------
    >>> add_mod(np.array([3, 4]), np.array([4, 4]), 7).tolist()
    [0, 1]
    """
    np.add(total, part, out=total)
    np.remainder(total, p, out=total)
    return total


class EchelonBasis:
    """A growing row space over GF(p), kept in reduced echelon form: ``add(rows)`` returns the new rank.

    Parameters
    ----------
    columns : int
        Length of the rows.
    p : int
        A prime below ``2**28``.

    Examples
    --------
    >>> basis = EchelonBasis(3, 7)
    >>> basis.add([[1, 2, 3]]), basis.add([[2, 4, 6]]), basis.add([[0, 1, 0], [1, 0, 3]])
    (1, 1, 2)
    """

    def __init__(self, columns: int, p: int):
        self.p = p
        self.basis = np.zeros((0, columns), dtype=np.int64)  # reduced: basis[:, pivots] = I
        self.pivots: list[int] = []

    @property
    def rank(self) -> int:
        return len(self.pivots)

    def add(self, rows) -> int:
        p = self.p
        rows = np.asarray(rows, dtype=np.int64) % p
        if rows.shape[0] > rows.shape[1]:  # the row space has dimension <= columns
            rng = np.random.default_rng([rows.shape[0], rows.shape[1], self.rank])
            rows = compress_rows(rows, rows.shape[1] + 2, p, rng)
        if self.rank:
            rows = (rows - matmul_mod(rows[:, self.pivots], self.basis, p)) % p
        if not rows.any():
            return self.rank
        new_rows, new_cols = pivots(rows, p)
        if not new_rows:
            return self.rank
        block = rows[new_rows]
        block = matmul_mod(inverse_mod_p(block[:, new_cols], p), block, p)
        if self.rank:  # keep the old rows reduced on the new pivots
            self.basis = (self.basis - matmul_mod(self.basis[:, new_cols], block, p)) % p
        self.basis = np.concatenate([self.basis, block])
        self.pivots = self.pivots + list(new_cols)
        return self.rank
