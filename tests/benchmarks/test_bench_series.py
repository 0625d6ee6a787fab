"""Benchmark: the exact series products on each engine (compiled, BLAS, schoolbook), in one process.

The engines are chosen through ``$SYMATTN_PRODUCTS`` (see
:func:`symattn.algebra.linalg.product_engine`); the schoolbook products are
the baseline.

(a) one product of matrices of jets of series, ``ModSeriesDomain.matmul``, at
    the sizes of the five-layer spectrum (widths 2, 3 tokens, rank 1);
(b) ``decay_spectrum`` for 4 and 5 layers (softmax, widths 2, rank 1, 3
    tokens, the defaults of ``symattn spectrum``) on each engine (every
    series product of the forward pass and the Smith eliminations), same
    result asserted;
(c) 6 layers (orders up to 485): it completes, with its time and peak memory;
(d) where the four-layer time goes: the time inside the series products
    against the rest, per engine, and the largest product of that pass
    against the floor of an exact float64 product (the limb recombination
    of an output of the same size).

The issue's target for (b) is a speedup of at least 5x of the fast engine; the table says whether
it is met, and the test asserts it for the layers listed in ``TARGET_MET``.

Peak memory is tracemalloc's peak (numpy arrays included) of a second, traced run beside each
time; for 6 layers the process's peak resident size (getrusage) of the one run.
"""

from __future__ import annotations

import resource
import time
import tracemalloc

import numpy as np
import pytest

import symattn.algebra.linalg as linalg
from symattn.algebra.linalg import elimination, engines, limbs, series
import symattn.algebra.modseries as modseries
import symattn.algebra.valuations as valuations
import symattn.spectrum as spectrum_module
from symattn.algebra.linalg import jet_matmul, matmul_mod
from symattn.algebra.modseries import ModSeriesDomain
from symattn.model import Architecture
from symattn.spectrum import decay_spectrum

P = 268435399
EXPECTED = {
    4: {0: 4, 1: 3, 5: 3, 17: 3, 53: 3},
    5: {0: 4, 1: 3, 5: 3, 17: 3, 53: 3, 161: 3},
    6: {0: 4, 1: 3, 5: 3, 17: 3, 53: 3, 161: 3, 485: 3},
}


def _measure(compute):
    """``(result, seconds, peak MiB)``: timed untraced, then run again under tracemalloc for the peak.

    (tracemalloc slows numpy code by up to 3x, so it does not share a run with the clock.)
    """
    start = time.perf_counter()
    result = compute()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    try:
        compute()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, seconds, peak / 2**20


def _jets(rng, rows, cols, batch, width, truncation, valuation):
    out = rng.integers(0, P, size=(rows, cols, batch, width, truncation))
    out[..., :valuation] = 0
    return out


# (r, k, batch_a, width_a) x (k, c, batch_b, width_b): products met in the five-layer forward pass
MATMUL_SIZES = [
    ("V h: parameter x hidden", (2, 2, 1, 41), (2, 3, 37, 33), 1),
    ("K^T Q: scores", (3, 1, 37, 33), (1, 3, 37, 37), 1),
    ("(V h) W: hidden x weights", (2, 3, 37, 37), (3, 3, 37, 41), 0),
]


ENGINES = ("compiled", "blas", "schoolbook")


def test_series_matmul_fast_against_schoolbook(table, monkeypatch):
    rng = np.random.default_rng(0)
    jet_matmul(np.ones((1, 1, 1, 1, 2), dtype=np.int64), np.ones((1, 1, 1, 1, 2), dtype=np.int64), P)  # loaded
    rows = []
    for truncation in (55, 163):
        domains = {"compiled": ModSeriesDomain(P, truncation, directions=40, schoolbook=False),
                   "blas": ModSeriesDomain(P, truncation, directions=40, schoolbook=False),
                   "schoolbook": ModSeriesDomain(P, truncation, directions=40, schoolbook=True)}
        for label, (r, k, ba, wa), (_, c, bb, wb), valuation in MATMUL_SIZES:
            a = _jets(rng, r, k, ba, wa, truncation, valuation)
            b = _jets(rng, k, c, bb, wb, truncation, 1)
            measured = {}
            for engine in ENGINES:
                monkeypatch.setenv("SYMATTN_PRODUCTS", engine)
                measured[engine] = _measure(lambda: domains[engine].matmul(a, b))
            baseline, slow_seconds, _ = measured["schoolbook"]
            row = [label, truncation]
            for engine in ENGINES:
                product, seconds, peak = measured[engine]
                assert (product == baseline).all()
                row += [f"{seconds:.3f}", f"{peak:.0f}"]
            rows.append(row + [f"{slow_seconds / measured['compiled'][1]:.1f}x",
                               f"{slow_seconds / measured['blas'][1]:.1f}x"])
    table("series matmul (jets of series, p = 268435399): compiled, BLAS, schoolbook",
          ["product", "N", "compiled s", "MiB", "BLAS s", "MiB", "school s", "MiB", "school/compiled",
           "school/BLAS"], rows)


#: The issue asks the fast engine to be at least this many times faster than the schoolbook baseline
#: on ``symattn spectrum --layers 4`` and ``--layers 5``.
TARGET_SPEEDUP = 5.0
#: Measured on the 2-core machine (in-process, December 2026): 4 layers (medians of 5) compiled
#: 0.122 s, BLAS 0.275 s, schoolbook 0.797 s (6.5x and 2.9x); 5 layers compiled 1.13 s, BLAS 2.22 s,
#: schoolbook 14.7 s (13.0x and 6.7x).  The BLAS engine alone reached 2.9x at four layers: 80% of
#: the time was in the series products, and numpy's passes around the gemm (limb splits, Toeplitz
#: copies, recombination) could not be fused; the compiled kernels are the fused loop.
TARGET_MET: set[int] = {4, 5}


def _median_seconds(compute, runs: int):
    """``(result, median seconds)`` of ``runs`` runs."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = compute()
        times.append(time.perf_counter() - start)
    return result, sorted(times)[len(times) // 2]


@pytest.mark.parametrize("layers", [4, pytest.param(5, marks=pytest.mark.slow)])
def test_decay_spectrum_fast_against_schoolbook(table, monkeypatch, layers):
    arch = Architecture.uniform(layers=layers, width=2, rank=1, tokens=3)
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK", raising=False)
    runs = 5 if layers == 4 else 1
    measured = {}
    for engine in ENGINES:
        monkeypatch.setenv("SYMATTN_PRODUCTS", engine)
        if engine == "compiled":
            decay_spectrum(Architecture.uniform(layers=2, width=2, rank=1, tokens=3), progress=False)  # loaded
        result, seconds = _median_seconds(lambda: decay_spectrum(arch, progress=False), runs)
        _, _, peak = _measure(lambda: decay_spectrum(arch, progress=False))
        measured[engine] = (result, seconds, peak)
    slow = measured["schoolbook"][1]
    for engine in ENGINES:
        assert measured[engine][0].exponents == EXPECTED[layers]
        assert measured[engine][0].to_json() == measured["schoolbook"][0].to_json()
    ratio = slow / measured["compiled"][1]
    met = "met" if ratio >= TARGET_SPEEDUP else "NOT met"
    table(f"decay_spectrum, {layers} layers (softmax, widths 2, rank 1, 3 tokens, orders to "
          f"{measured['compiled'][0].truncation}), in process, median of {runs}",
          ["products", "seconds", "peak MiB", "schoolbook / this"],
          [[engine, f"{seconds:.3f}", f"{peak:.0f}", f"{slow / seconds:.2f}x"]
           for engine, (_, seconds, peak) in measured.items()]
          + [[f"issue target >= {TARGET_SPEEDUP:.0f}x (compiled)", met, "", ""]])
    assert slow / measured["blas"][1] > 1 and ratio > 1
    if layers in TARGET_MET:
        assert ratio >= TARGET_SPEEDUP, f"{layers} layers: {ratio:.2f}x, the issue asks for {TARGET_SPEEDUP}x"


@pytest.mark.slow
def test_six_layers_complete(table, monkeypatch):
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK", raising=False)
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    arch = Architecture.uniform(layers=6, width=2, rank=1, tokens=3)
    start = time.perf_counter()
    result = decay_spectrum(arch, progress=False)
    seconds = time.perf_counter() - start
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux
    assert result.exponents == EXPECTED[6] and result.unresolved == 0
    table("decay_spectrum, 6 layers (orders up to 485), compiled products",
          ["seconds", "peak RSS MiB (process)", "truncation", "bank"],
          [[f"{seconds:.1f}", f"{peak_rss:.0f}", result.truncation, result.bank]])


# The product functions of symattn.algebra.linalg, and the modules that bind them by name (the package's
# own modules call each other's products by name too).
PRODUCTS = ("series_matmul", "series_scale", "matmul_mod", "series_mul_mod", "series_multiply", "jet_matmul")
PRODUCT_USERS = (linalg, engines, limbs, series, elimination, modseries, valuations, spectrum_module)


def _time_in_products(monkeypatch, compute):
    """``(result, seconds, seconds inside the series products)``: the outermost product calls timed."""
    inside = {"depth": 0, "seconds": 0.0}

    def timed(function):
        def wrapper(*args, **kwargs):
            if inside["depth"]:
                return function(*args, **kwargs)
            inside["depth"] = 1
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                inside["seconds"] += time.perf_counter() - start
                inside["depth"] = 0
        return wrapper

    with monkeypatch.context() as patch:
        for module in PRODUCT_USERS:
            for name in PRODUCTS:
                if hasattr(module, name):
                    patch.setattr(module, name, timed(getattr(module, name)))
        start = time.perf_counter()
        result = compute()
        seconds = time.perf_counter() - start
    return result, seconds, inside["seconds"]


def test_four_layers_where_the_time_goes(table, monkeypatch):
    """The four-layer ratio, split into the series products and the rest (best of 3 each), per engine."""
    arch = Architecture.uniform(layers=4, width=2, rank=1, tokens=3)
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK", raising=False)
    measured = {}
    for engine in ENGINES:
        monkeypatch.setenv("SYMATTN_PRODUCTS", engine)
        decay_spectrum(arch, progress=False)  # imports, kernels and caches out of the timing
        runs = [_time_in_products(monkeypatch, lambda: decay_spectrum(arch, progress=False)) for _ in range(3)]
        result, seconds, products = min(runs, key=lambda run: run[1])
        assert result.exponents == EXPECTED[4]
        assert 0 < products < seconds
        measured[engine] = (seconds, products)
    slow, slow_products = measured["schoolbook"]
    rows = [[engine, f"{seconds:.3f}", f"{products:.3f}", f"{seconds - products:.3f}", f"{slow / seconds:.2f}x",
             f"{slow_products / products:.2f}x", f"{slow / (seconds - products):.1f}x"]
            for engine, (seconds, products) in measured.items()]
    table("decay_spectrum, 4 layers: time in the series products and the rest",
          ["products", "total s", "in products s", "rest s", "schoolbook / this", "products: schoolbook / this",
           "ratio with free products"], rows)


def test_four_layer_product_against_its_floor(table, monkeypatch):
    """The largest product of the four-layer pass, per output coefficient, against the recombination floor.

    ``(V h) S`` of the last layer: ``(2, 3)`` times ``(3, 3)`` matrices of jets (33 and 29 wide) of
    series mod ``eps^55`` on 36 inputs, the values series in ``eps^2`` as on the collapse curve.
    The floor is an exact float64 product of inner dimension 1 (``matmul_mod`` of a column by a
    row) with an output of the same size: two limbs recombined per coefficient and almost no
    arithmetic, which every exact float64 product of a 28-bit prime pays.
    """
    truncation, batch = 55, 36
    rng = np.random.default_rng(1)

    def jets(rows, cols, width):
        out = rng.integers(0, P, size=(rows, cols, batch, width, truncation))
        out[..., 0, 1::2] = 0  # value series in eps^2
        return out

    left, right = jets(2, 3, 33), jets(3, 3, 29)
    fast = ModSeriesDomain(P, truncation, directions=32, schoolbook=False)
    slow = ModSeriesDomain(P, truncation, directions=32, schoolbook=True)

    def best(compute, runs=5):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            result = compute()
            times.append(time.perf_counter() - start)
        return result, min(times)

    monkeypatch.setenv("SYMATTN_PRODUCTS", "blas")
    product, fast_seconds = best(lambda: fast.matmul(left, right))
    baseline, slow_seconds = best(lambda: slow.matmul(left, right))
    compiled, compiled_seconds = best(lambda: jet_matmul(left, right, P))
    assert (product == baseline).all() and (compiled == baseline).all()
    size = product.size
    column = rng.integers(0, P, size=(size // 1000, 1))
    row = rng.integers(0, P, size=(1, 1000))
    _, floor_seconds = best(lambda: matmul_mod(column, row, P))
    per = 1e9 / size
    table(f"largest four-layer product, {size} output coefficients: ns per coefficient",
          ["product", "ns / coefficient", "schoolbook / this"],
          [["schoolbook", f"{slow_seconds * per:.0f}", "1.0x"],
           ["BLAS", f"{fast_seconds * per:.0f}", f"{slow_seconds / fast_seconds:.1f}x"],
           ["compiled (jet_matmul)", f"{compiled_seconds * per:.0f}", f"{slow_seconds / compiled_seconds:.1f}x"],
           ["floor: exact float64 product, inner dimension 1", f"{floor_seconds * per:.1f}",
            f"{slow_seconds / floor_seconds:.0f}x"]])
    assert compiled_seconds < fast_seconds < slow_seconds
