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

from __future__ import annotations

import contextlib
import contextvars
import importlib
import math
import os
import threading

import numpy as np

try:  # optional: keeps BLAS on one thread inside the products (see one_blas_thread)
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - depends on the environment
    ThreadpoolController = None

__all__ = [
    "COMPILED_AFTER_WORK",
    "MAX_PRIME",
    "PRODUCTS_VARIABLE",
    "PRODUCT_ENGINES",
    "SCHOOLBOOK_VARIABLE",
    "EchelonBasis",
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

#: Primes must be below this: residues fit in 28 bits, so two limbs of 14 bits carry them
#: through float64 and 64 products of residues still fit in int64 (:func:`series_mul_mod`).
MAX_PRIME = 2**28

#: Environment variable that makes the schoolbook products the default (the benchmark baseline).
SCHOOLBOOK_VARIABLE = "SYMATTN_SCHOOLBOOK"

#: Environment variable that chooses the engine of the series products (see :func:`product_engine`).
PRODUCTS_VARIABLE = "SYMATTN_PRODUCTS"

#: The engines of the series products, fastest first; every one gives the same residues.
PRODUCT_ENGINES = ("compiled", "blas", "schoolbook")

_MANTISSA_BITS = 53
# Working set of one BLAS piece (its Toeplitz matrix, stacked operand and a few copies of its
# result); larger products are cut along the columns, a batch axis or the rows.  Measured on the
# five-layer spectrum: 1 MiB pieces made 500 000 BLAS calls and took 26 s, 16 MiB pieces 23 000
# calls and 6 s; the bound keeps the transient memory of a product near a few of its results.
_PIECE_BYTES = 16 * 2**20
# int64 partial sums of the schoolbook product are reduced this often (64 * 2**56 < 2**63).
_REDUCE_EVERY = 64


_CONTROLLER = None
_BLAS_LIMIT = threading.local()  # how deep this thread is inside one_blas_thread


@contextlib.contextmanager
def one_blas_thread():
    """Context in which BLAS runs on one thread (when threadpoolctl is installed); re-entrant.

    Why one thread: the products here are many and of middling size;
    OpenBLAS's threads synchronise at every call, and on a 2-core machine with
    any other load a waiting thread stalls each call (measured under a load of
    2.5: the five-layer spectrum took twice as long with threads as without).
    Every product enters it; an analysis that makes hundreds of products
    enters it once around them (a forward pass, a Smith elimination), so that
    the limit is set once instead of at each product (6 us each).

    Examples
    --------
    >>> with one_blas_thread():
    ...     with one_blas_thread():      # nested: nothing more to set
    ...         matmul_mod([[2]], [[3]], 5).tolist()
    [[1]]
    """
    global _CONTROLLER
    depth = getattr(_BLAS_LIMIT, "depth", 0)
    if depth or ThreadpoolController is None:
        limit = contextlib.nullcontext()
    else:
        if _CONTROLLER is None:
            _CONTROLLER = ThreadpoolController()
        limit = _CONTROLLER.limit(limits=1, user_api="blas")
    _BLAS_LIMIT.depth = depth + 1
    try:
        with limit:
            yield
    finally:
        _BLAS_LIMIT.depth = depth


def product_engine() -> str:
    """The engine of the next series product, from ``$SYMATTN_PRODUCTS`` (read at each call).

    ``"compiled"``
        Compiled loops in 64-bit integers (numba, :mod:`symattn.algebra._compiled`):
        2-3x faster than ``"blas"`` on the products of a spectrum, with no
        transient copies, once loaded (numba and the cached kernels take
        about 0.35 s to load).
    ``"blas"``
        float64 BLAS products with exact 14-bit limbs.
    ``"schoolbook"``
        The broadcast numpy loop, the baseline of the benchmarks.

    ``$SYMATTN_PRODUCTS`` is ``auto`` (the default), or names an engine.
    ``auto`` starts on ``blas`` and loads the compiled kernels once the
    products of the process have done about as much work as loading them
    costs (:data:`COMPILED_AFTER_WORK`), so that a short job never pays for
    them and a long one (five layers, a sweep, a notebook) runs on them;
    without numba it stays on ``blas``.  ``$SYMATTN_SCHOOLBOOK=1`` is the same
    as ``SYMATTN_PRODUCTS=schoolbook``.  The residues are the same whichever
    engine computes them.

    Raises
    ------
    ValueError
        ``$SYMATTN_PRODUCTS`` names no engine, or names ``compiled`` where
        the kernels cannot be loaded (numba missing, say).

    Examples
    --------
    >>> product_engine() in PRODUCT_ENGINES
    True
    """
    asked = _asked_engine()
    if asked in ("blas", "schoolbook"):
        return asked
    if asked == "compiled" and _compiled_kernels() is None:
        raise ValueError(f"${PRODUCTS_VARIABLE} = 'compiled' needs the compiled kernels, which cannot be loaded "
                         f"here ({_KERNEL_ERROR}): install numba, or set it to auto or blas")
    return "compiled" if _KERNELS else "blas"


def _asked_engine() -> str:
    """``$SYMATTN_PRODUCTS`` checked: ``auto`` or one of :data:`PRODUCT_ENGINES`."""
    if os.environ.get(SCHOOLBOOK_VARIABLE, "") not in ("", "0"):
        return "schoolbook"
    asked = os.environ.get(PRODUCTS_VARIABLE, "").strip().lower() or "auto"
    if asked != "auto" and asked not in PRODUCT_ENGINES:
        raise ValueError(f"${PRODUCTS_VARIABLE} = {os.environ[PRODUCTS_VARIABLE]!r} names no product engine: "
                         f"give auto, {', '.join(PRODUCT_ENGINES)}, or leave it unset")
    return asked


#: Under ``SYMATTN_PRODUCTS=auto`` the compiled kernels are loaded once the BLAS products have done
#: this much work (coefficient products: stack x m x k x n x N**2): about the 0.35 s that loading
#: them costs, at the 0.15 ns a unit that BLAS takes (measured: the four-layer spectrum is 1.4e9
#: units, 0.2 s of products, and stays on BLAS in one run; the five-layer one 2.4e10).
COMPILED_AFTER_WORK = 2 * 10**9

_BLAS_WORK = [0]  # the work of the BLAS products so far (auto mode, before the kernels are loaded)


def _count_blas_work(work: int) -> None:
    """Add a BLAS product's work; load the compiled kernels when the total reaches :data:`COMPILED_AFTER_WORK`."""
    if _KERNELS is None and _asked_engine() == "auto":
        _BLAS_WORK[0] += work
        if _BLAS_WORK[0] >= COMPILED_AFTER_WORK:
            _compiled_kernels()


def schoolbook_default() -> bool:
    """Whether the environment asks for the schoolbook products (read at each call).

    The schoolbook products are the baseline of the benchmarks; the results
    are the same either way.  See :func:`product_engine`.

    Examples
    --------
    >>> schoolbook_default() == (product_engine() == "schoolbook")
    True
    """
    return _asked_engine() == "schoolbook"


def _engine(schoolbook) -> str:
    """The engine of one product: ``schoolbook=True`` the baseline, ``False`` the fastest, None the environment's."""
    if schoolbook is None:
        return product_engine()
    if schoolbook:
        return "schoolbook"
    engine = product_engine()
    if engine != "schoolbook":
        return engine
    return "compiled" if _KERNELS else "blas"


_KERNELS = None  # the compiled kernels module once loaded; False when numba cannot be imported
_KERNEL_ERROR = ""


def _import_kernels():
    """Import :mod:`symattn.algebra._compiled` (numba compiles or loads the kernels here)."""
    return importlib.import_module(f"{__package__}._compiled")


def _compiled_kernels():
    """:mod:`symattn.algebra._compiled`, imported on first use; None where it cannot be loaded.

    Any failure counts (numba missing or incompatible with numpy, no directory
    where numba may cache the kernels, ...): the products stay on BLAS, and
    ``SYMATTN_PRODUCTS=compiled`` is refused with the error's text.
    """
    global _KERNELS, _KERNEL_ERROR
    if _KERNELS is None:
        try:
            _KERNELS = _import_kernels()
        except Exception as error:  # noqa: BLE001 - an optional accelerator: any failure means BLAS
            _KERNELS, _KERNEL_ERROR = False, f"{type(error).__name__}: {error}"
    return _KERNELS or None


def _run_kernel(kernel, a: np.ndarray, b: np.ndarray, p: int, out: np.ndarray, *indices) -> np.ndarray:
    """``kernel(a, b, *indices, p, out)`` on C-ordered int64 operands; reduced mod ``p`` first if it refuses them."""
    a = np.require(a, dtype=np.int64, requirements=("C", "W"))
    b = np.require(b, dtype=np.int64, requirements=("C", "W"))
    if out.size and not kernel(a, b, *indices, p, out):  # an operand holds more than residues
        kernel(np.ascontiguousarray(a % p), np.ascontiguousarray(b % p), *indices, p, out)
    _heartbeat()
    return out


# -- progress: a heartbeat after each product ---------------------------------------------------
#: The callbacks of :func:`products_reported` in this thread's context (a Dask worker thread has its own).
_HEARTBEATS: contextvars.ContextVar = contextvars.ContextVar("symattn_product_heartbeats", default=())


def _heartbeat() -> None:
    for callback in _HEARTBEATS.get():
        callback()


@contextlib.contextmanager
def products_reported(callback):
    """Call ``callback()`` after every product of series (BLAS or compiled) while the block runs.

    A progress bar's heartbeat: a forward pass over jets is hundreds of
    products and no other step to count, so the bar redraws its clock from here
    (:class:`symattn.adaptive.PhaseBar`).

    Examples
    --------
    >>> beats = []
    >>> with products_reported(lambda: beats.append(1)):
    ...     _ = series_matmul(np.ones((2, 2, 3), dtype=np.int64), np.ones((2, 2, 3), dtype=np.int64), 101)
    >>> len(beats) >= 1
    True
    """
    token = _HEARTBEATS.set((*_HEARTBEATS.get(), callback))
    try:
        yield
    finally:
        _HEARTBEATS.reset(token)


def _compiled_product(A: np.ndarray, B: np.ndarray, p: int, N: int) -> np.ndarray:
    """:func:`series_matmul` ``(..., m, k, La) x (..., k, n, Lb)`` by the compiled kernel."""
    _check_prime_size(p)
    lead = np.broadcast_shapes(A.shape[:-3], B.shape[:-3])
    out = np.zeros((math.prod(lead), A.shape[-3], B.shape[-2], N), dtype=np.int64)
    if A.size and B.size:  # else a sum of no products (k = 0, or a factor of no coefficients): zero
        _run_kernel(_compiled_kernels().series_matmul_kernel, A.reshape(math.prod(A.shape[:-3]), *A.shape[-3:]),
                    B.reshape(math.prod(B.shape[:-3]), *B.shape[-3:]), p, out, _entries(A.shape[:-3], lead),
                    _entries(B.shape[:-3], lead))
    return out.reshape(*lead, *out.shape[1:])


def _entries(shape: tuple, lead: tuple) -> np.ndarray:
    """For each entry of the broadcast shape ``lead``, the flat index of the entry of ``shape`` it reads."""
    return np.broadcast_to(np.arange(math.prod(shape), dtype=np.int64).reshape(shape), lead).flatten()


def jet_matmul(a, b, p: int) -> np.ndarray:
    """Product of matrices of first-order jets of series mod ``p``, by the compiled engine.

    The layout of :class:`symattn.algebra.modseries.ModSeriesDomain`: ``a`` is
    ``(r, k, batch_a, width_a, N)``, ``b`` is ``(k, c, batch_b, width_b, N)``,
    the batch is 1 or shared by both, index 0 of the width axis is the value
    and index ``d >= 1`` the derivative in direction ``d`` (a missing one is
    zero).  The result ``(r, c, batch, max(width_a, width_b), N)`` has the
    value ``sum_l a_0 b_0`` and the derivatives ``sum_l a_0 b_d + a_d b_0``.

    Raises
    ------
    ValueError
        Where numba cannot be imported (see :func:`product_engine`).

    Examples
    --------
    >>> a = np.array([[[[[1, 1, 0], [0, 1, 0]]]]])   # 1 + eps, with derivative eps
    >>> jet_matmul(a, a, 101)[0, 0, 0].tolist()      # (1 + eps)^2 and 2 (1 + eps) eps
    [[1, 2, 1], [0, 2, 2]]
    """
    kernels = _compiled_kernels()
    if kernels is None:
        raise ValueError(f"jet_matmul needs the compiled kernels, which cannot be loaded here ({_KERNEL_ERROR})")
    p = int(p)
    _check_prime_size(p)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.ndim != 5 or b.ndim != 5 or a.shape[1] != b.shape[0] or a.shape[-1] != b.shape[-1] or \
            1 not in (a.shape[2], b.shape[2]) and a.shape[2] != b.shape[2]:
        raise ValueError(f"jet_matmul multiplies (r, k, batch, width, N) by (k, c, batch, width, N), "
                         f"got {a.shape} and {b.shape}")
    out = np.zeros((a.shape[0], b.shape[1], max(a.shape[2], b.shape[2]), max(a.shape[3], b.shape[3]), a.shape[-1]),
                   dtype=np.int64)
    if a.size and b.size:  # else a sum of no products: zero
        _run_kernel(kernels.jet_matmul_kernel, a, b, p, out)
    return out


# -- scalars and elementwise series ------------------------------------------------------------
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


# -- matrix products mod p ---------------------------------------------------------------------
def _check_prime_size(p: int) -> None:
    if not 1 < p < MAX_PRIME:
        raise ValueError(f"the exact products take primes below 2**28 (1 < p < {MAX_PRIME}), got {p}")


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


def _residues(A: np.ndarray, p: int) -> np.ndarray:
    """``A mod p``, without the int64 remainder (2.5 ns an entry) when ``A`` already holds residues."""
    if A.size and (A.min() < 0 or A.max() >= p):
        return A % p
    return A


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
    if engine == "compiled":
        return _compiled_product(A, B, p, N)
    work = math.prod(np.broadcast_shapes(A.shape[:-3], B.shape[:-3])) * A.shape[-3] * A.shape[-2] * B.shape[-2] * N * N
    if engine == "schoolbook" or work <= _TINY_PRODUCT:
        a = np.zeros((*A.shape[:-1], N), dtype=np.int64)
        b = np.zeros((*B.shape[:-1], N), dtype=np.int64)
        a[..., :min(N, A.shape[-1])] = A[..., :N] % p
        b[..., :min(N, B.shape[-1])] = B[..., :N] % p
        return series_mul_mod(a[..., :, :, None, :], b[..., None, :, :, :], p).sum(axis=-3) % p
    _check_prime_size(p)
    _count_blas_work(work)
    with one_blas_thread():
        return _series_product(_residues(A, p), _residues(B, p), p, N)


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
# Sums of this many products (14-bit limb) x (28-bit residue) stay below 2**52, so that the two limb
# sums combine exactly in float64 (the high one reduced first): see _combine_limbs.
_SCALE_MAX_INNER = 1024
# Output coefficients per band: a band [top, bottom) needs the coefficients q < bottom of the other
# factor only, which skips most of the zero triangle of the Toeplitz matrix.  Measured on 333 entries
# of 37 jets (N = 163): 8 bands 51 ms, 4 bands 65 ms, 1 band 106 ms; at N = 55 4 bands are best.
_SCALE_MIN_BAND = 16
# series_scale splits a dense factor into classes (see _strided_product) up to this many rows of it
_SCALE_CLASS_ROWS = 8
_SCALE_BANDS = 8


# _combine_limbs works through blocks of this many entries, so that its temporaries stay in cache
# (measured on 670 000 entries: 3.2 ms in blocks of 65536 against 5.1 ms in one pass; on 32 768
# entries 148 us in blocks of 16384 against 153 us, on a million 5.1 against 5.2 ms).
_COMBINE_BLOCK = 16384


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
    if engine == "schoolbook" or n > _SCALE_MAX_INNER:
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
            product = np.matmul(left[:, :, :q_stop - low_many],
                                right.reshape(stop - start, q_stop - low_many, 2 * (bottom - top)))
            del right
            product = product.reshape(stop - start, width, 2, bottom - top)
            _combine_limbs(product[:, :, 0], product[:, :, 1], p, flat_out[start:stop, :, top:bottom])
            del product
    return out


# -- elimination over GF(p) --------------------------------------------------------------------
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
    exact from there on; entries left of a row's pivot are not kept (never read again).
    """
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
