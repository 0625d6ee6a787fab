"""Exact linear algebra over GF(p) and GF(p)[[eps]] at BLAS speed or better, for any prime below ``2**28``.

The one place where residues are multiplied in bulk: matrix products mod
``p``, products of matrices of truncated series, ranks, pivots, a growing
echelon basis, inverses, random row compression and the inverse of a matrix
of series.  Everything is exact; float64 is only the carrier.

Why float64: a product of two residues below ``2**28`` does not fit in the
53-bit mantissa, but a residue times a 14-bit *limb* of another does, and
``2**11`` such products still add up exactly.  So one operand is split into
limbs (one limb when ``p`` and the inner dimension are small enough), the
inner dimension is cut into chunks that keep every partial sum below
``2**53``, and each piece is one BLAS ``dgemm``.

Measured on the 2-core development machine (p = 268435399, a 489 x 489 by
489 x 123 product, the size of one jet product of ``spectrum --layers 5``):
float64 with two limbs 7.7 ms; python-flint ``nmod_mat`` 7.8 ms for the
product alone and 70 ms with the conversions from and to numpy that every
call would need; the int64 broadcast (``(m, k, 1) * (1, k, n)`` summed)
1300 ms.  Hence float64 limbs.

A product of series ``A(eps) B(eps)`` is one matrix product: the block
Toeplitz matrix of ``A`` (``T[i N + n, l N + q] = A[i, l, n - q]``) times
``B`` with its coefficients stacked into rows, keeping only the coefficients
``q`` where the sparser factor is nonzero (a parameter ``eps * Qt`` has one)
and the rows ``n`` that can be nonzero.  The triangle of zeros costs at most
a factor two of flops and buys one large BLAS call instead of ``N`` small
ones.

A product of series runs on one of three engines: the compiled kernels of
:mod:`symattn.algebra._compiled` (numba, 64-bit integers, 2-3x faster than
the BLAS products above on the products of a spectrum), the BLAS products,
or the schoolbook loop of :func:`series_mul_mod` (the baseline of the
benchmarks).  :func:`product_engine` says which one runs,
``$SYMATTN_PRODUCTS`` chooses.

The package in modules, one job each: :mod:`~symattn.algebra.linalg.engines` (which engine
multiplies series, BLAS on one thread, the compiled kernels and their jet product, the heartbeat of
each product), :mod:`~symattn.algebra.linalg.limbs` (matrix products mod ``p`` through float64
limbs), :mod:`~symattn.algebra.linalg.series` (products of matrices of series: block Toeplitz,
strides, a series times many) and :mod:`~symattn.algebra.linalg.elimination` (pivots, ranks,
inverses, row compression, echelon bases).

Examples
--------
>>> import numpy as np
>>> from symattn.algebra.linalg import matmul_mod, series_matmul
>>> p = 268435399
>>> int(matmul_mod(np.array([[p - 1]]), np.array([[p - 1]]), p)[0, 0])  # (-1)(-1)
1
>>> one_plus_eps = np.array([[[1, 1, 0]]])  # a 1 x 1 matrix of series
>>> series_matmul(one_plus_eps, one_plus_eps, p).tolist()
[[[1, 2, 1]]]
"""

from .elimination import (EchelonBasis, add_mod, compress_row_blocks, compress_row_pieces, compress_rows, inverse_mod_p, modular_inverse, pivots, rank_mod_p,
                          series_matrix_inverse)
from .engines import (COMPILED_AFTER_WORK, MAX_PRIME, PRODUCT_ENGINES, PRODUCTS_VARIABLE, SCHOOLBOOK_VARIABLE,
                      jet_matmul, one_blas_thread, product_engine, products_reported, schoolbook_default)
from .limbs import matmul_mod
from .series import coefficient_support, series_matmul, series_mul_mod, series_multiply, series_scale

__all__ = [
    "COMPILED_AFTER_WORK",
    "MAX_PRIME",
    "PRODUCTS_VARIABLE",
    "PRODUCT_ENGINES",
    "SCHOOLBOOK_VARIABLE",
    "EchelonBasis",
    "add_mod",
    "compress_row_blocks",
    "compress_row_pieces",
    "coefficient_support",
    "compress_rows",
    "inverse_mod_p",
    "jet_matmul",
    "matmul_mod",
    "modular_inverse",
    "one_blas_thread",
    "pivots",
    "product_engine",
    "products_reported",
    "rank_mod_p",
    "schoolbook_default",
    "series_matmul",
    "series_matrix_inverse",
    "series_mul_mod",
    "series_multiply",
    "series_scale",
]
