"""Matrix products mod ``p`` through float64 BLAS, exactly: residues split into 14-bit limbs.

A product of two residues below ``2**28`` does not fit in float64's 53-bit
mantissa, but a residue times a 14-bit limb of another does, and ``2**11``
such products still add up exactly: one operand is split into limbs (one limb
when ``p`` and the inner dimension are small enough), the inner dimension is
cut into chunks whose partial sums stay exact, and the limb sums are
recombined mod ``p``.  The series products of :mod:`symattn.algebra.linalg.series`
run on the same limbs.
"""

from __future__ import annotations

import numpy as np

from .engines import _check_prime_size, _heartbeat, one_blas_thread

__all__ = ["matmul_mod"]

_MANTISSA_BITS = 53
# Sums of this many products (14-bit limb) x (28-bit residue) stay below 2**52, so that the two limb
# sums combine exactly in float64 (the high one reduced first): see _combine_limbs.
_SCALE_MAX_INNER = 1024

# _combine_limbs works through blocks of this many entries, so that its temporaries stay in cache
# (measured on 670 000 entries: 3.2 ms in blocks of 65536 against 5.1 ms in one pass; on 32 768
# entries 148 us in blocks of 16384 against 153 us, on a million 5.1 against 5.2 ms).
_COMBINE_BLOCK = 16384


def _limb_plan(p: int, inner: int) -> tuple[int, int, int]:
    """``(limb_bits, limbs, chunk)``: every sum of ``chunk`` products ``limb * residue`` is below ``2**53``."""
    residue_bits = (p - 1).bit_length()
    if 2 * residue_bits + max(inner, 1).bit_length() <= _MANTISSA_BITS:
        return residue_bits, 1, max(inner, 1)  # one limb: the residue itself
    limb_bits = (residue_bits + 1) // 2
    chunk = 1 << (_MANTISSA_BITS - residue_bits - limb_bits)
    return limb_bits, 2, chunk


def _residue_product(A: np.ndarray, B: np.ndarray, p: int) -> np.ndarray:
    """``A @ B mod p`` for int64 residues (stacks broadcast), exactly, through float64 BLAS.

    The two limbs go on the operand with fewer rows of the product (the rows of ``A`` or the
    columns of ``B``): it alone is split and copied twice, the other is converted to float64
    once (a random row compression ``R J`` of 174 rows against 1032 columns: 3 against 10 ms).
    The inner dimension is cut into chunks whose limb sums stay exact (:func:`_combine_limbs`).
    """
    inner, m, n = A.shape[-1], A.shape[-2], B.shape[-1]
    shape = np.broadcast_shapes(A.shape[:-2], B.shape[:-2]) + (m, n)
    if inner == 0 or 0 in shape:
        return np.zeros(shape, dtype=np.int64)
    limb_bits, limbs, chunk = _limb_plan(p, inner)
    if limbs == 1:  # every sum of products of residues is exact in float64
        _heartbeat()
        return np.remainder(np.matmul(A.astype(np.float64), B.astype(np.float64)).astype(np.int64), p)
    chunk = min(chunk, _SCALE_MAX_INNER)
    mask = (1 << limb_bits) - 1
    split_left = m <= n
    if split_left:  # limbs as two blocks of rows of A
        left = np.empty((*A.shape[:-2], 2, m, inner), dtype=np.float64)
        np.right_shift(A, limb_bits, out=left[..., 0, :, :], casting="unsafe")
        np.bitwise_and(A, mask, out=left[..., 1, :, :], casting="unsafe")
        left, right = left.reshape(*A.shape[:-2], 2 * m, inner), B.astype(np.float64)
    else:  # limbs as two blocks of columns of B
        right = np.empty((*B.shape[:-1], 2, n), dtype=np.float64)
        np.right_shift(B, limb_bits, out=right[..., 0, :], casting="unsafe")
        np.bitwise_and(B, mask, out=right[..., 1, :], casting="unsafe")
        left, right = A.astype(np.float64), right.reshape(*B.shape[:-2], inner, 2 * n)
    out = None
    for start in range(0, inner, chunk):
        exact = np.matmul(left[..., start:start + chunk], right[..., start:start + chunk, :])
        if split_left:
            exact = exact.reshape(*exact.shape[:-2], 2, m, n)
            high, low = exact[..., 0, :, :], exact[..., 1, :, :]
        else:
            exact = exact.reshape(*exact.shape[:-1], 2, n)
            high, low = exact[..., 0, :], exact[..., 1, :]
        part = np.empty(shape, dtype=np.int64)
        _combine_limbs(high, low, p, part, limb_bits)
        del exact, high, low
        if out is None:
            out = part
        else:
            out += part
            out %= p
    _heartbeat()
    return out


def matmul_mod(A, B, p: int) -> np.ndarray:
    """``A @ B mod p`` for integer arrays, exactly, through float64 BLAS; any prime below ``2**28``.

    Stacked operands broadcast as in :func:`numpy.matmul`.

    Parameters
    ----------
    A, B : int arrays ``(..., m, k)`` and ``(..., k, n)``
        Any integers; they are reduced mod ``p`` first.
    p : int
        A modulus with ``1 < p < 2**28``.

    Returns
    -------
    int64 array ``(..., m, n)`` with entries in ``0 .. p-1``.

    Examples
    --------
    >>> p = 268435399
    >>> A = np.full((2, 3000), p - 1)              # inner dimension beyond one exact chunk
    >>> matmul_mod(A, np.full((3000, 1), p - 2), p).ravel().tolist()  # 3000 * (-1) * (-2)
    [6000, 6000]
    >>> matmul_mod([[1, 2], [3, 4]], [[5], [6]], 7).ravel().tolist()
    [3, 4]
    """
    p = int(p)
    _check_prime_size(p)
    A = _residues(np.asarray(A, dtype=np.int64), p)
    B = _residues(np.asarray(B, dtype=np.int64), p)
    with one_blas_thread():
        return _residue_product(A, B, p)



def _residues(A: np.ndarray, p: int) -> np.ndarray:
    """``A mod p``, without the int64 remainder (2.5 ns an entry) when ``A`` already holds residues."""
    if A.size and (A.min() < 0 or A.max() >= p):
        return A % p
    return A



def _limb_products(right, left, p: int, limbs: tuple[int, int], limb_bits: int, chunk: int, target) -> None:
    """``target = right @ left mod p`` with the limbs recombined: ``(..., 1, n, K) @ (..., m, K, band)``.

    ``limbs = (blocks of left's leading axis, row blocks of right)``: one of them is the number
    of limbs, the other 1; ``target`` has the shape of one block ``(..., m, n, band)``.  The inner
    dimension is cut into chunks of ``chunk``, whose float64 sums are exact.
    """
    inner = left.shape[-2]
    shape = target.shape
    left_limbs, right_limbs = limbs
    total = None
    for start in range(0, inner, chunk):
        stop = min(inner, start + chunk)
        exact = np.matmul(right[..., start:stop], left[..., start:stop, :])
        exact = exact.reshape(*exact.shape[:-3], left_limbs, shape[-3], right_limbs, *shape[-2:])
        part = target if total is None and stop == inner else np.empty(shape, dtype=np.int64)
        high = exact[..., 0, :, 0, :, :]
        if left_limbs * right_limbs == 2:
            _combine_limbs(high, exact[..., left_limbs - 1, :, right_limbs - 1, :, :], p, part, limb_bits)
        else:
            np.remainder(high.astype(np.int64), p, out=part)
        del exact, high
        if total is None:
            total = part
        else:
            total += part
            total %= p
    if total is not target:
        target[...] = total



def _combine_limbs(high: np.ndarray, low: np.ndarray, p: int, out: np.ndarray, limb_bits: int = 14) -> None:
    """``out = (high * 2**limb_bits + low) mod p`` for exact float64 limb sums ``high, low < 2**52``.

    ``high`` is reduced in float64 first (a quotient off by one leaves it in ``(-p, 2p)``), so that
    ``high * 2**limb_bits + low`` stays an exact float64 integer (``limb_bits <= 14``); one int64
    remainder finishes (as fast as a second float64 reduction with sign-mask corrections, in
    blocks of ``_COMBINE_BLOCK``).  Blocks along the leading axes keep the temporaries in cache.
    """
    if out.ndim >= 2 and out.size > _COMBINE_BLOCK:
        per = out.size // out.shape[0]
        if per > _COMBINE_BLOCK:
            for i in range(out.shape[0]):
                _combine_limbs(high[i], low[i], p, out[i], limb_bits)
            return
        step = _COMBINE_BLOCK // per
        for start in range(0, out.shape[0], step):
            _combine_limbs(high[start:start + step], low[start:start + step], p, out[start:start + step],
                           limb_bits)
        return
    reduced = high * (1.0 / p)
    np.floor(reduced, out=reduced)
    reduced *= p
    np.subtract(high, reduced, out=reduced)
    reduced *= float(1 << limb_bits)
    reduced += low
    np.remainder(reduced.astype(np.int64), p, out=out)


