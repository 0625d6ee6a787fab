"""Benchmark: the exact series products, BLAS (float64 limbs) against the schoolbook baseline, in one process.

(a) one product of matrices of jets of series, ``ModSeriesDomain.matmul``, at
    the sizes of the five-layer spectrum (widths 2, 3 tokens, rank 1);
(b) ``decay_spectrum`` for 4 and 5 layers (softmax, widths 2, rank 1, 3
    tokens, the defaults of ``symattn spectrum``) with the BLAS products and
    with ``SYMATTN_SCHOOLBOOK=1`` (every series product schoolbook: the
    forward pass and the Smith eliminations), same result asserted;
(c) 6 layers (orders up to 485): it completes, with its time and peak memory;
(d) where the four-layer time goes: the time inside the series products
    against the rest, with either product, and the largest product of that
    pass against the floor of an exact float64 product (the limb
    recombination of an output of the same size).

The issue's target for (b) is a speedup of at least 5x; the table says whether it is met, and the
test asserts it only for the layers listed in ``TARGET_MET`` (five layers: see there).

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
import symattn.algebra.modseries as modseries
import symattn.algebra.valuations as valuations
import symattn.spectrum as spectrum_module
from symattn.algebra.linalg import matmul_mod
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


def test_series_matmul_fast_against_schoolbook(table):
    rng = np.random.default_rng(0)
    rows = []
    for truncation in (55, 163):
        fast = ModSeriesDomain(P, truncation, directions=40, schoolbook=False)
        slow = ModSeriesDomain(P, truncation, directions=40, schoolbook=True)
        for label, (r, k, ba, wa), (_, c, bb, wb), valuation in MATMUL_SIZES:
            a = _jets(rng, r, k, ba, wa, truncation, valuation)
            b = _jets(rng, k, c, bb, wb, truncation, 1)
            product, fast_seconds, fast_peak = _measure(lambda: fast.matmul(a, b))
            baseline, slow_seconds, slow_peak = _measure(lambda: slow.matmul(a, b))
            assert (product == baseline).all()
            rows.append([label, truncation, f"{fast_seconds:.3f}", f"{fast_peak:.0f}", f"{slow_seconds:.3f}",
                         f"{slow_peak:.0f}", f"{slow_seconds / fast_seconds:.1f}x"])
    table("series matmul (jets of series, p = 268435399): BLAS vs schoolbook",
          ["product", "N", "BLAS s", "BLAS MiB", "school s", "school MiB", "ratio"], rows)


#: The issue asks the BLAS engine to be at least this many times faster than the schoolbook baseline
#: on ``symattn spectrum --layers 4`` and ``--layers 5``.
TARGET_SPEEDUP = 5.0
#: Measured on the 2-core machine (in-process pairs, December 2026): 5 layers 6.8x (median of 3
#: pairs: 1.93 s against 13.2 s; 6.1-7.2x in single runs under a load of 1-2), asserted; 4 layers
#: 2.9x (median of 9 pairs: 0.285 s against 0.821 s), not met.  Why, measured by the last two
#: tests here: 80% of the four-layer time is in the series products, which are 3.2x faster than
#: the schoolbook ones; 5x overall needs them 2.1x faster still.  Their largest product costs
#: 51 ns per output coefficient against 222 for the schoolbook loop, of which the float64 gemm
#: and the recombination of its two limbs (6.6 ns a coefficient, twice: value and jet products)
#: are about 25 ns and numpy's passes around them (limb splits, Toeplitz and class copies,
#: scatter, reductions) the rest; the attention's jet products (series_scale) already run at
#: about the recombination floor.  So the benchmark reports the four-layer ratio against the
#: target and asserts only that the engine is faster.
TARGET_MET: set[int] = {5}


@pytest.mark.parametrize("layers", [4, pytest.param(5, marks=pytest.mark.slow)])
def test_decay_spectrum_fast_against_schoolbook(table, monkeypatch, layers):
    arch = Architecture.uniform(layers=layers, width=2, rank=1, tokens=3)
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK", raising=False)
    fast, fast_seconds, fast_peak = _measure(lambda: decay_spectrum(arch, progress=False))
    monkeypatch.setenv("SYMATTN_SCHOOLBOOK", "1")
    slow, slow_seconds, slow_peak = _measure(lambda: decay_spectrum(arch, progress=False))
    assert fast.exponents == slow.exponents == EXPECTED[layers]
    assert fast.to_json() == slow.to_json()
    ratio = slow_seconds / fast_seconds
    met = "met" if ratio >= TARGET_SPEEDUP else "NOT met"
    table(f"decay_spectrum, {layers} layers (softmax, widths 2, rank 1, 3 tokens, orders to {fast.truncation})",
          ["product", "seconds", "peak MiB"],
          [["BLAS", f"{fast_seconds:.2f}", f"{fast_peak:.0f}"],
           ["schoolbook", f"{slow_seconds:.2f}", f"{slow_peak:.0f}"],
           ["ratio", f"{ratio:.2f}x", ""],
           [f"issue target >= {TARGET_SPEEDUP:.0f}x", met, ""]])
    assert ratio > 1
    if layers in TARGET_MET:
        assert ratio >= TARGET_SPEEDUP, f"{layers} layers: {ratio:.2f}x, the issue asks for {TARGET_SPEEDUP}x"


@pytest.mark.slow
def test_six_layers_complete(table, monkeypatch):
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK", raising=False)
    arch = Architecture.uniform(layers=6, width=2, rank=1, tokens=3)
    start = time.perf_counter()
    result = decay_spectrum(arch, progress=False)
    seconds = time.perf_counter() - start
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux
    assert result.exponents == EXPECTED[6] and result.unresolved == 0
    table("decay_spectrum, 6 layers (orders up to 485), BLAS products",
          ["seconds", "peak RSS MiB (process)", "truncation", "bank"],
          [[f"{seconds:.1f}", f"{peak_rss:.0f}", result.truncation, result.bank]])


# The product functions of symattn.algebra.linalg, and the modules that bind them by name.
PRODUCTS = ("series_matmul", "series_scale", "matmul_mod", "series_mul_mod")
PRODUCT_USERS = (linalg, modseries, valuations, spectrum_module)


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
    """The four-layer ratio, split into the series products and the rest (best of 3 each)."""
    arch = Architecture.uniform(layers=4, width=2, rank=1, tokens=3)
    decay_spectrum(arch, progress=False)  # imports and caches out of the timing
    measured = {}
    for label, flag in (("BLAS", "0"), ("schoolbook", "1")):
        monkeypatch.setenv("SYMATTN_SCHOOLBOOK", flag)
        runs = [_time_in_products(monkeypatch, lambda: decay_spectrum(arch, progress=False)) for _ in range(3)]
        result, seconds, products = min(runs, key=lambda run: run[1])
        assert result.exponents == EXPECTED[4]
        measured[label] = (seconds, products)
    (fast, fast_products), (slow, slow_products) = measured["BLAS"], measured["schoolbook"]
    assert 0 < fast_products < fast and 0 < slow_products < slow
    free = slow / (fast - fast_products)  # the ratio if every BLAS product took no time
    needed = fast_products / (slow / TARGET_SPEEDUP - (fast - fast_products))
    table("decay_spectrum, 4 layers: time in the series products and the rest",
          ["product", "total s", "in products s", "rest s"],
          [["BLAS", f"{fast:.3f}", f"{fast_products:.3f}", f"{fast - fast_products:.3f}"],
           ["schoolbook", f"{slow:.3f}", f"{slow_products:.3f}", f"{slow - slow_products:.3f}"],
           ["ratio", f"{slow / fast:.2f}x", f"{slow_products / fast_products:.2f}x", ""],
           ["ratio with free BLAS products", f"{free:.1f}x", "", ""],
           [f"BLAS products must get faster by, for {TARGET_SPEEDUP:.0f}x", f"{needed:.2f}x", "", ""]])


def test_four_layer_product_against_its_floor(table):
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

    product, fast_seconds = best(lambda: fast.matmul(left, right))
    baseline, slow_seconds = best(lambda: slow.matmul(left, right))
    assert (product == baseline).all()
    size = product.size
    column = rng.integers(0, P, size=(size // 1000, 1))
    row = rng.integers(0, P, size=(1, 1000))
    _, floor_seconds = best(lambda: matmul_mod(column, row, P))
    per = 1e9 / size
    table(f"largest four-layer product, {size} output coefficients: ns per coefficient",
          ["product", "ns / coefficient", "schoolbook / this"],
          [["schoolbook", f"{slow_seconds * per:.0f}", "1.0x"],
           ["BLAS", f"{fast_seconds * per:.0f}", f"{slow_seconds / fast_seconds:.1f}x"],
           ["floor: exact float64 product, inner dimension 1", f"{floor_seconds * per:.1f}",
            f"{slow_seconds / floor_seconds:.0f}x"]])
    assert fast_seconds < slow_seconds
