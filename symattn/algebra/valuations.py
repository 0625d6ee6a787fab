"""Smith-form valuations of matrices of truncated power series over GF(p).

Over the discrete valuation ring GF(p)[[eps]], a matrix is equivalent to a
diagonal one ``diag(eps^e_1, ..., eps^e_r, 0, ...)``; the ``e_j`` are its
invariant-factor valuations.  Elimination with a pivot of least valuation
finds them.  Entries are known modulo ``eps^N``; the elimination keeps that
precision (a quotient by a pivot of valuation ``v`` is known modulo
``eps^(N-v)`` and multiplies entries of valuation at least ``v``), so every
exponent below ``N`` is exact, and what remains is zero modulo ``eps^N``:
those directions are *unresolved*, with valuation ``>= N`` or in the kernel.

Examples
--------
>>> import numpy as np
>>> from symattn.algebra.valuations import smith_valuations
>>> M = np.zeros((2, 2, 4), dtype=np.int64)
>>> M[0, 0, 1] = 1; M[1, 1, 3] = 2; M[0, 1, 2] = 5
>>> smith_valuations(M, p=7)
SmithValuations(exponents=(1, 3), remaining_rows=0, remaining_cols=0, truncation=4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .modseries import modular_inverse, series_mul_mod

__all__ = ["SmithValuations", "smith_valuations"]


@dataclass(frozen=True)
class SmithValuations:
    """Exponents found below the truncation and the size of what is left."""

    exponents: tuple[int, ...]
    remaining_rows: int
    remaining_cols: int
    truncation: int

    @property
    def resolved_rank(self) -> int:
        """Rank resolved below the truncation: a lower bound for the rank."""
        return len(self.exponents)

    @property
    def undecided(self) -> int:
        """Directions that are zero modulo ``eps^N``: valuation ``>= N`` or kernel."""
        return min(self.remaining_rows, self.remaining_cols)


def _series_inverse(unit: np.ndarray, p: int) -> np.ndarray:
    n = unit.shape[-1]
    inverse = np.zeros_like(unit)
    inverse[..., 0] = modular_inverse(unit[..., 0], p)
    precision = 1
    while precision < n:
        correction = (-series_mul_mod(unit, inverse, p)) % p
        correction[..., 0] = (correction[..., 0] + 2) % p
        inverse = series_mul_mod(inverse, correction, p)
        precision *= 2
    return inverse


def smith_valuations(matrix: np.ndarray, p: int, progress=None) -> SmithValuations:
    """Invariant-factor valuations of an ``m x n`` matrix of series mod ``eps^N``.

    Parameters
    ----------
    matrix : int array of shape ``(m, n, N)``
        Coefficients of ``eps^0 .. eps^(N-1)``, residues mod ``p``.
    p : int
        The prime.
    progress : callable, optional
        Called with no argument after each pivot.

    Returns
    -------
    SmithValuations
        Exponents in increasing order; exponents are exact below ``N``.
    """
    work = np.asarray(matrix, dtype=np.int64) % p
    truncation = work.shape[-1]
    exponents = []
    while work.shape[0] and work.shape[1]:
        nonzero_at = work.reshape(-1, truncation).any(axis=0)
        if not nonzero_at.any():
            break
        v = int(np.argmax(nonzero_at))
        rows, cols = np.nonzero(work[:, :, v])
        i, j = int(rows[0]), int(cols[0])
        exponents.append(v)
        keep_rows = np.arange(work.shape[0]) != i
        keep_cols = np.arange(work.shape[1]) != j
        pivot_unit = work[i, j, v:]
        others = work[keep_rows][:, keep_cols]
        if others.size and v < truncation:
            # multiplier_k = work[k, j] / pivot, known mod eps^(N - v)
            column = work[keep_rows, j, v:]
            multiplier = series_mul_mod(column, _series_inverse(pivot_unit, p)[None, :], p)
            pivot_row = work[i, keep_cols, v:]
            update = series_mul_mod(multiplier[:, None, :], pivot_row[None, :, :], p)
            others[:, :, v:] = (others[:, :, v:] - update) % p
        work = others
        if progress is not None:
            progress()
    return SmithValuations(tuple(exponents), int(work.shape[0]), int(work.shape[1]), truncation)
