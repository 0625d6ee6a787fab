"""A wide network certified: two layers of width 32, score rank 8, 8 tokens, softmax (3072 parameters, dimension 1920).

* **certified**: :func:`symattn.identify.function_space_dimension` with its
  defaults (the rank of ``R J(eps)`` over ``GF(p)((eps))``, built group by
  group of inputs), in this process alone and with ``workers=2`` (a Dask
  ``LocalCluster``; the peak is then the coordinator's alone, the workers'
  are reported beside it from the memory model).
* **float64 baseline** (``wide_float64_baseline.py``, plain numpy written
  for this benchmark, no symattn code): the same network's native Jacobian
  at a random real point on ``INPUTS`` random inputs by the complex step
  (``h = 1e-30``, exact to rounding), one batched forward pass per block of
  256 parameters, and its numerical rank from ``numpy.linalg.svd``
  (singular values above ``1e-9`` times the largest).  24 inputs: 12 gave
  rank 1696 and 16 gave 1909 (each input adds about ``t (t - 1)`` score
  directions at a generic point); 20 and 24 give 1920, with a gap of 1e9 and
  1e10 at 1920.

Each side runs in its own process (``VmHWM`` is its own peak); times are
measured inside the processes (start-up and imports excluded).  Issue 26
asks for the certified time at most 0.5x the float64 time and a peak below
4 GiB: the ratio is reported (met / NOT met), the peak and the ranks are
asserted.  Width 64, rank 16, 8 tokens (12,288 parameters):
its plan and memory estimate (not run: see the test).

Measured (December 2026, load near 1, two runs): certified 3.8 s, 461 MiB
on the integer-score route (``workers=2``: 5.3-5.6 s); float64 7.8-7.9 s
(2.1-2.2 s Jacobian, 5.7 s SVD), 490 MiB: 0.48x, met.  On the curve route
the certified run took 35.5 s, 1598 MiB (4.47x); before issue 26, 60.0 s,
3379 MiB.  Width 64: 295 s, 4.4 GiB (estimated 4.6 GiB).

Run with ``python -m pytest -q -s tests/benchmarks/test_bench_wide.py``.
"""

from __future__ import annotations

import pytest

from harness import measure_in_a_process

LAYERS, WIDTH, RANK, TOKENS, INPUTS, DIMENSION = 2, 32, 8, 8, 24, 1920

#: Issue 26: certified time at most this fraction of the float64 time (reported), peak below PEAK_LIMIT (asserted).
TARGET_RATIO, PEAK_LIMIT = 0.5, 4 * 2**30

#: The most memory the width-64 run may take on the 24 GiB machine (others share it).
WIDE_LIMIT = "20G"

_CERTIFIED_SETUP = """
from symattn.identify import function_space_dimension
from symattn.model import Architecture
arch = Architecture.uniform(layers={layers}, width={width}, rank={rank}, tokens={tokens})
"""

_CERTIFIED_BODY = """
r = function_space_dimension(arch, workers={workers}, max_memory={limit!r})
result = [r.lower, r.upper, r.certified, r.method.split("; ")[-2:]]
"""

_FLOAT64_SETUP = """
from wide_float64_baseline import float64_rank
"""

_FLOAT64_BODY = """
result = float64_rank({layers}, {width}, {rank}, {tokens}, {inputs})
"""


def _certified(workers=None, width=WIDTH, rank=RANK, limit=None):
    setup = _CERTIFIED_SETUP.format(layers=LAYERS, width=width, rank=rank, tokens=TOKENS)
    return measure_in_a_process(setup, _CERTIFIED_BODY.format(workers=workers, limit=limit), timeout=3600)


def test_wide_certified_dimension_against_float64_rank(table):
    from symattn.identify.common import _dimension_memory
    from symattn.limits import format_size
    from symattn.model import Architecture

    arch = Architecture.uniform(layers=LAYERS, width=WIDTH, rank=RANK, tokens=TOKENS)
    baseline = measure_in_a_process(_FLOAT64_SETUP, _FLOAT64_BODY.format(layers=LAYERS, width=WIDTH, rank=RANK,
                                                                         tokens=TOKENS, inputs=INPUTS))
    alone = _certified()
    spread = _certified(workers=2)
    ratio, spread_ratio = alone["seconds"] / baseline["seconds"], spread["seconds"] / baseline["seconds"]
    float_result = baseline["result"]
    worker = format_size(_dimension_memory(arch, None, "worker").bytes)
    table(f"dimension of {LAYERS} layers, width {WIDTH}, rank {RANK}, {TOKENS} tokens, softmax (3072 parameters): "
          f"certified against a float64 complex-step Jacobian rank on {INPUTS} inputs, each in its own process",
          ["method", "seconds", "ratio to float64", "peak memory (MiB)", "rank"],
          [["certified, one process", f"{alone['seconds']:.1f}", f"{ratio:.2f}",
            f"{alone['peak_bytes'] / 2**20:.0f}", alone["result"][0]],
           ["certified, workers=2 (LocalCluster)", f"{spread['seconds']:.1f}", f"{spread_ratio:.2f}",
            f"{spread['peak_bytes'] / 2**20:.0f} here (+ about {worker} per worker, estimated)",
            spread["result"][0]],
           [f"float64 complex step + SVD ({float_result['jacobian_seconds']:.1f} s + "
            f"{float_result['svd_seconds']:.1f} s)", f"{baseline['seconds']:.1f}", "1.00",
            f"{baseline['peak_bytes'] / 2**20:.0f}", float_result["rank"]]])
    assert alone["result"][:3] == spread["result"][:3] == [DIMENSION, DIMENSION, True]
    assert float_result["rank"] == DIMENSION and float_result["gap"] > 1e6
    assert alone["peak_bytes"] < PEAK_LIMIT
    print(f"issue 26 target <= {TARGET_RATIO}x the float64 time: "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'} ({ratio:.2f}x; workers=2 {spread_ratio:.2f}x); "
          f"peak {alone['peak_bytes'] / 2**30:.2f} GiB < 4 GiB")


def test_width_64_rank_16_is_certified_on_this_machine(table):
    """12,288 parameters, dimension 7680, certified in one process (about 10 minutes on 2 cores).

    The integer-score route: 65 inputs to eps^2, R J of 7682 x 7680 x 2.  The peak is asserted
    below 24 GiB (the machine) and compared with the memory estimate (reported).
    """
    from symattn.identify.common import _dimension_memory
    from symattn.limits import format_size
    from symattn.model import Architecture

    arch = Architecture.uniform(layers=LAYERS, width=64, rank=16, tokens=TOKENS)
    estimate = _dimension_memory(arch)
    run = _certified(width=64, rank=16)
    lower, upper, certified, method = run["result"]
    table(f"width 64, rank 16, {TOKENS} tokens (12,288 parameters, dimension 7680), one process",
          ["seconds", "peak memory", "estimated peak", "ratio", "certified", "method (end)"],
          [[f"{run['seconds']:.0f}", format_size(run["peak_bytes"]), format_size(estimate.bytes),
            f"{run['peak_bytes'] / estimate.bytes:.2f}", f"{lower} of {upper}", "; ".join(method)]])
    assert (lower, upper, certified) == (7680, 7680, True)
    assert run["peak_bytes"] < 24 * 2**30
