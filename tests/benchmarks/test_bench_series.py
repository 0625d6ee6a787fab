"""Benchmark: the exact series products, BLAS (float64 limbs) against the schoolbook baseline, in one process.

(a) one product of matrices of jets of series, ``ModSeriesDomain.matmul``, at
    the sizes of the five-layer spectrum (widths 2, 3 tokens, rank 1);
(b) ``decay_spectrum`` for 4 and 5 layers (softmax, widths 2, rank 1, 3
    tokens, the defaults of ``symattn spectrum``) with the BLAS products and
    with ``SYMATTN_SCHOOLBOOK=1`` (every series product schoolbook: the
    forward pass and the Smith eliminations), same result asserted;
(c) 6 layers (orders up to 485): it completes, with its time and peak memory.

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
#: Measured on the 2-core machine (in-process pairs, December 2026): 5 layers 6.5x (median of 5
#: pairs: 1.98 s against 12.80 s; 6.1-7.2x in single runs under a load of 1-2), asserted; 4 layers
#: 2.5x (median of 7 pairs: 0.32 s against 0.83 s), not met: the products there are small (55
#: coefficients, 30 inputs) and their fixed costs (numpy calls, limb recombination) dominate, so
#: the benchmark reports that ratio against the target and asserts only that the engine is faster.
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
