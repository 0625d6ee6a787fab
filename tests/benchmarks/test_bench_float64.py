"""Benchmark 3: the float64 Jacobian rank (as used by HMK) against the exact engine, near collapse.

Three layers (widths 2, rank 1, 3 tokens, softmax) at ``eps = 0.1`` on the
collapse curve: the layer-3 directions decay as ``eps^17``, about ``1e-17``
of the top singular value, below float64 round-off.  ``numpy.linalg.matrix_rank``
of the float64 Jacobian (:func:`symattn.numeric.numeric_jacobian`, forward-mode,
no finite differences) therefore misses them, while the exact engine gives
13.  An mpmath Jacobian at 60 digits at the same point confirms 13.
"""

from __future__ import annotations

import time

import mpmath
import numpy as np

from symattn.model import Architecture
from symattn.numeric import numeric_jacobian, singular_values
from symattn.spectrum import decay_spectrum

SEEDS = range(5)


def test_float64_rank_is_wrong_near_collapse(table):
    arch = Architecture.uniform(layers=3, width=2, rank=1, tokens=3, normalizer="softmax")
    start = time.perf_counter()
    exact = decay_spectrum(arch, progress=False)
    exact_seconds = time.perf_counter() - start
    assert exact.rank == 13 and exact.rank_certified and exact.separating
    rows = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        point = rng.standard_normal(arch.param_count).tolist()
        bank = [rng.standard_normal(arch.input_shape).tolist() for _ in range(exact.bank)]
        start = time.perf_counter()
        J64 = numeric_jacobian(arch, point, bank, 0.1, "float64")
        rank64 = int(np.linalg.matrix_rank(J64))
        float_seconds = time.perf_counter() - start
        start = time.perf_counter()
        sigma = singular_values(numeric_jacobian(arch, point, bank, "0.1", "mpmath", 60), "mpmath", 60)
        with mpmath.workdps(60):
            rank_mp = sum(1 for s in sigma if s > sigma[0] * mpmath.mpf(10) ** -45)
            smallest = float(sigma[12] / sigma[0])
        mp_seconds = time.perf_counter() - start
        rows.append([seed, rank64, rank_mp, exact.rank, f"{smallest:.1e}",
                     f"{float_seconds:.3f}", f"{mp_seconds:.2f}", f"{exact_seconds:.2f}"])
        assert rank_mp == 13
        assert rank64 != 13 and rank64 < 13
    table("benchmark 3: rank of J at eps = 0.1, three layers (float64 matrix_rank vs exact vs mpmath 60 digits)",
          ["seed", "float64 rank", "mpmath rank", "exact rank", "sigma_13/sigma_1",
           "float64 (s)", "mpmath (s)", "exact (s)"], rows)
