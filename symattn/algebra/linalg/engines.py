"""The engines of the exact products: which one runs, BLAS on one thread, the compiled kernels, a heartbeat.

A product of series runs on the compiled kernels of
:mod:`symattn.algebra._compiled` (numba, loaded on first use), on float64 BLAS
(:mod:`symattn.algebra.linalg.series`) or on the schoolbook loop;
:func:`product_engine` reads ``$SYMATTN_PRODUCTS`` at each call.  Every
product calls the callbacks of :func:`products_reported` when it is done.
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
    "jet_matmul",
    "one_blas_thread",
    "product_engine",
    "products_reported",
    "schoolbook_default",
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
    >>> from symattn.algebra.linalg import matmul_mod
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


#: A product of at least this many multiply-adds runs on every BLAS thread, also inside
#: :func:`one_blas_thread` (:func:`blas_threads_for`): a few products of a tenth of a second or
#: more each, where the threads' synchronisation costs little.  Measured on the width-32
#: dimension (its row compression, three products), fresh processes in turn: 3.66-3.84 s at 2**28,
#: 4.23-4.35 s at 2**32 (the smaller products on one thread), 4.43-4.67 s on one thread.
ALL_THREADS_WORK = 2**28


@contextlib.contextmanager
def blas_threads_for(work: int):
    """Context in which BLAS may use all its threads when ``work`` (multiply-adds) is at least :data:`ALL_THREADS_WORK`.

    Examples
    --------
    >>> with one_blas_thread():
    ...     with blas_threads_for(2**40):      # a huge product: every thread again
    ...         pass
    """
    if work < ALL_THREADS_WORK or ThreadpoolController is None:
        yield
        return
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    with _CONTROLLER.limit(limits=os.cpu_count() or 1, user_api="blas"):
        yield


#: Under ``auto``, the jet products mod a prime of at most this many bits (:meth:`ModSeriesDomain.matmul`)
#: stay on BLAS even where the compiled kernels are loaded: their residues pass through float64 as one
#: limb (no split, no recombination), and BLAS is then faster.  Measured (2-core machine, p = 1048573, the
#: dimension's prime): the jet Jacobian of two layers of width 32, rank 8, 8 tokens on 2 inputs to
#: eps^12, 1.26-1.33 s on BLAS against 4.0-4.3 s compiled.  The products of series matrices of the Smith
#: form stay compiled (its 1922 x 1920 x 12 elimination: 8.7 s of products compiled, 18 s on BLAS), and
#: the spectrum's primes near 2**28 need two limbs, where the kernels are 2-3x faster.
ONE_LIMB_BITS = 20


def product_engine(p: int | None = None) -> str:
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
    costs (:data:`~symattn.algebra.linalg.engines.COMPILED_AFTER_WORK`), so that a short job never pays for
    them and a long one (five layers, a sweep, a notebook) runs on them;
    without numba it stays on ``blas``; given the prime ``p`` of a jet
    product, ``auto`` keeps ``blas`` for primes of at most
    :data:`ONE_LIMB_BITS` bits (one float64 limb, where BLAS is faster).  ``$SYMATTN_SCHOOLBOOK=1`` is the same
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
    >>> product_engine(1048573) if _asked_engine() == "auto" else "blas"    # one limb: BLAS
    'blas'
    """
    asked = _asked_engine()
    if asked in ("blas", "schoolbook"):
        return asked
    if asked == "auto" and p is not None and (int(p) - 1).bit_length() <= ONE_LIMB_BITS:
        return "blas"
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
    return importlib.import_module(".._compiled", __package__)


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
    >>> from symattn.algebra.linalg import series_matmul
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


def _check_prime_size(p: int) -> None:
    if not 1 < p < MAX_PRIME:
        raise ValueError(f"the exact products take primes below 2**28 (1 < p < {MAX_PRIME}), got {p}")

