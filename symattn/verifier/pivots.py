"""Smith valuations of a matrix over ``GF(p)[[eps]]`` known mod ``eps^N``, by least-valuation full pivoting.

Over the discrete valuation ring ``GF(p)[[eps]]`` an entry of least
valuation ``v`` divides every other entry, so eliminating with it (full
pivoting, the least valuation first) gives the Smith normal form: the pivots'
valuations, in the order found, are the Smith exponents.  All pivots of the
least valuation are taken at once: they are the pivots of an invertible
maximal submatrix of the coefficient matrix of ``eps^v`` over GF(p)
(:func:`independent_rows_and_columns`); one pivot at a time finds the same
valuations, only slower.

The computation is exact mod ``eps^N``: the multipliers
``M[others, C] M[R, C]^-1`` (``R, C`` the pivot rows and columns) are known mod
``eps^(N - v)``, and they multiply the pivot rows, whose entries all have
valuation ``>= v``, so every updated entry is known mod ``eps^N``.  A pivot of
valuation ``< N`` is therefore certain; the search stops when every entry left
is ``0 mod eps^N``.

This module imports nothing but numpy: it is part of the independent checker.

Examples
--------
>>> import numpy as np
>>> M = np.zeros((2, 2, 3), dtype=np.int64)
>>> M[0, 0, 1] = 1; M[1, 1, 0] = 2; M[0, 1, 0] = 1      # [[eps, 1], [0, 2]] over GF(5)
>>> pivot_valuations(M, 5)
[0, 1]
"""

from __future__ import annotations

import numpy as np

from .arithmetic import exact_matmul, inverse_mod, series_matmul

__all__ = ["valuations", "independent_rows_and_columns", "matrix_inverse_mod", "pivot_valuations"]


def valuations(M: np.ndarray) -> np.ndarray:
    """The valuation of every entry of ``M`` (coefficients on the last axis): the first nonzero power, ``N`` for 0.

    Examples
    --------
    >>> import numpy as np
    >>> valuations(np.array([[0, 3, 1], [0, 0, 0]])).tolist()
    [1, 3]
    """
    N = M.shape[-1]
    nonzero = M != 0
    return np.where(nonzero.any(axis=-1), nonzero.argmax(axis=-1), N)


def independent_rows_and_columns(L: np.ndarray, p: int, panel: int = 64) -> tuple:
    """Rows and columns of an invertible maximal square submatrix of ``L`` over GF(p), by Gaussian elimination.

    Column by column: the first row not used yet with a nonzero entry is the
    pivot, and the column's entries are eliminated from the rows not used yet.
    The columns are taken ``panel`` at a time: inside a panel the elimination
    touches the panel's columns only, and the columns after it receive the
    panel's eliminations at once, as one matrix product (the same arithmetic,
    regrouped: the same rows and columns are found).

    Examples
    --------
    >>> import numpy as np
    >>> independent_rows_and_columns(np.array([[0, 1, 1], [0, 2, 2], [3, 0, 1]]), 7)
    ([2, 0], [0, 1])
    >>> independent_rows_and_columns(np.array([[0, 1, 1], [0, 2, 2], [3, 0, 1]]), 7, panel=1)
    ([2, 0], [0, 1])
    """
    A = np.array(L, dtype=np.int64) % p
    free = np.ones(A.shape[0], dtype=bool)
    rows, cols = [], []
    for start in range(0, A.shape[1], panel):
        stop = min(start + panel, A.shape[1])
        # factors[k, q]: the multiple of the panel's q-th pivot row subtracted from row k
        factors = np.zeros((A.shape[0], stop - start), dtype=np.int64)
        pivots = []                                            # the panel's pivot rows, in order
        for c in range(start, stop):
            candidates = np.flatnonzero(free & (A[:, c] != 0))
            if not len(candidates):
                continue
            r = int(candidates[0])
            if pivots:  # the columns after the panel of the pivot row: the panel's earlier eliminations
                A[r, stop:] = (A[r, stop:] - exact_matmul(factors[r:r + 1, :len(pivots)],
                                                          A[pivots, stop:], p)[0]) % p
            rows.append(r)
            cols.append(c)
            free[r] = False
            # row k -= (A[k, c] / A[r, c]) row r, for the rows not used yet, in the panel's columns c..stop
            below = np.flatnonzero(free & (A[:, c] != 0))
            factors[below, len(pivots)] = A[below, c] * inverse_mod(A[r, c], p) % p
            A[below, c:stop] = (A[below, c:stop] - factors[below, len(pivots), None] * A[r, c:stop][None, :]) % p
            pivots.append(r)
        if pivots and stop < A.shape[1]:
            # the columns after the panel, for the rows still free: row k -= sum_q factors[k, q] (pivot row q)
            left = np.flatnonzero(free)
            A[left, stop:] = (A[left, stop:] - exact_matmul(factors[left, :len(pivots)], A[pivots, stop:], p)) % p
    return rows, cols


def matrix_inverse_mod(U: np.ndarray, p: int) -> np.ndarray:
    """Inverse of an invertible square matrix over GF(p), by Gauss-Jordan elimination of ``[U | I]``.

    Examples
    --------
    >>> import numpy as np
    >>> matrix_inverse_mod(np.array([[2, 1], [0, 1]]), 7).tolist()
    [[4, 3], [0, 1]]
    """
    k = U.shape[0]
    A = np.concatenate([np.array(U, dtype=np.int64) % p, np.eye(k, dtype=np.int64)], axis=1)
    for c in range(k):
        r = c + int(np.flatnonzero(A[c:, c])[0])          # a nonzero entry at or below the diagonal
        A[[c, r]] = A[[r, c]]
        A[c] = A[c] * inverse_mod(A[c, c], p) % p
        factors = A[:, c].copy()
        factors[c] = 0
        touched = np.flatnonzero(factors)                  # the rows with a nonzero entry in column c
        A[touched, c:] = (A[touched, c:] - factors[touched, None] * A[c, c:][None, :]) % p
    return A[:, k:]


def _series_matrix_inverse(U: np.ndarray, p: int) -> np.ndarray:
    """``U^-1`` for a square matrix of series ``(k, k, N)`` with ``U_0`` invertible mod p.

    ``B_0 = U_0^-1`` and ``B_n = -U_0^-1 sum_{i=1..n} U_i B_{n-i}``.
    """
    k, _, N = U.shape
    B = np.zeros_like(U)
    B[:, :, 0] = matrix_inverse_mod(U[:, :, 0], p)
    for n in range(1, N):
        # sum_{i=1..n} U_i B_{n-i}: U_1 .. U_n side by side, times B_{n-1} .. B_0 stacked
        left = np.concatenate([U[:, :, i] for i in range(1, n + 1)], axis=1)
        right = np.concatenate([B[:, :, n - i] for i in range(1, n + 1)], axis=0)
        B[:, :, n] = (-exact_matmul(B[:, :, 0], exact_matmul(left, right, p), p)) % p
    return B


def pivot_valuations(M: np.ndarray, p: int) -> list:
    """The valuations of the pivots of least-valuation full pivoting (nondecreasing): the Smith exponents below ``N``.

    Parameters
    ----------
    M : int array ``(rows, cols, N)``
        Residues mod ``p`` of the coefficients of ``eps^0 .. eps^(N-1)``.
    p : int
        A prime.

    Returns
    -------
    list of int
        One valuation (``< N``) per pivot: their number is the rank over
        ``GF(p)((eps))`` that is resolved below ``eps^N``.

    Examples
    --------
    >>> import numpy as np
    >>> M = np.zeros((2, 2, 2), dtype=np.int64)
    >>> M[0, 0, 1] = 1; M[1, 1, 1] = 1; M[0, 1, 1] = 1; M[1, 0, 1] = 1   # eps [[1, 1], [1, 1]]: rank 1
    >>> pivot_valuations(M, 7)
    [1]
    """
    M = np.array(M, dtype=np.int64) % p
    N = M.shape[-1]
    found = []
    while M.shape[0] and M.shape[1]:
        v = int(valuations(M).min())                          # the least valuation left
        if v >= N:                                             # everything left is 0 mod eps^N
            break
        # every pivot of valuation v: an invertible maximal submatrix of the coefficients of eps^v
        R, C = independent_rows_and_columns(M[:, :, v], p)
        found += [v] * len(R)
        other_rows = np.setdiff1d(np.arange(M.shape[0]), R)
        other_cols = np.setdiff1d(np.arange(M.shape[1]), C)
        if not len(other_rows) or not len(other_cols):
            break
        # the pivot block divided by eps^v, and the pivot columns of the other rows divided by eps^v: known
        # mod eps^(N - v); their unknown top coefficients (set to 0) reach only powers >= N below
        pivot = np.zeros((len(R), len(C), N), dtype=np.int64)
        pivot[:, :, :N - v] = M[np.ix_(R, C)][:, :, v:]
        left = np.zeros((len(other_rows), len(C), N), dtype=np.int64)
        left[:, :, :N - v] = M[np.ix_(other_rows, C)][:, :, v:]
        multipliers = series_matmul(left, _series_matrix_inverse(pivot, p), p)      # M[o, C] M[R, C]^-1
        # Schur complement: the other rows minus multipliers times the pivot rows
        update = series_matmul(multipliers, M[np.ix_(R, other_cols)], p)
        M = (M[np.ix_(other_rows, other_cols)] - update) % p
    return found
