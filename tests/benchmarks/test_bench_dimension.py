"""HMK Figure 3 certified exactly, against a float64 Jacobian-rank estimate of the same table.

The table: ``l = 2`` layers, ``t = 3`` tokens, score rank ``a = 2``, widths
``d = 3..10``, softmax; the dimension of the function space is
``l a (2d - a) + d^2``.

* **exact**: :func:`symattn.identify.dimension_table` with ``estimate=None``:
  a certified lower bound (rank over ``GF(p)((eps))`` of the Jacobian series
  along the collapse curve) that meets the upper bound, for every width.
* **float64 baseline** (what HMK do): the native Jacobian at a random real
  point on 250 random inputs, by :func:`symattn.numeric.numeric_jacobian`
  (forward-mode dual numbers in float64, one forward pass per input), and its
  numerical rank from the singular values.  Asserted: exact is faster.
* **vectorized float64** (reported, not asserted): the same Jacobian from
  one batched forward pass over all 250 inputs (:class:`BatchedFloatJets`
  below, a domain for :func:`symattn.model.forward`) -- the fastest float64
  estimate we could write, to show where the exact route stands against it.

Run with ``python -m pytest -q -s tests/benchmarks/bench_dimension.py`` (the file name does not
match ``test_*.py``, so name it explicitly).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from symattn.algebra.domains import Domain
from symattn.identify import dimension_table, hmk_dimension
from symattn.model import Architecture, Parameters, forward
from symattn.numeric import numeric_jacobian

pytestmark = pytest.mark.benchmark

LAYERS, TOKENS, RANK, WIDTHS, INPUTS = 2, 3, 2, tuple(range(3, 11)), 250


def _point(arch: Architecture, rng):
    flat = []
    for i in range(1, arch.layers + 1):
        scale = 1 / np.sqrt(arch.widths[i - 1])
        for rows, cols in arch.block_shapes(i).values():
            flat.extend(rng.standard_normal(rows * cols) * scale)
    return np.array(flat)


def _numerical_rank(J) -> int:
    sigma = np.linalg.svd(np.asarray(J, dtype=np.float64), compute_uv=False)
    return int((sigma > 1e-9 * sigma[0]).sum())


def float64_table(seed: int = 0):
    """Numerical ranks with :func:`numeric_jacobian` (float64) on 250 random inputs per width."""
    rng = np.random.default_rng(seed)
    ranks = []
    for d in WIDTHS:
        arch = Architecture.uniform(layers=LAYERS, width=d, rank=RANK, tokens=TOKENS, normalizer="softmax")
        bank = list(rng.standard_normal((INPUTS, d, TOKENS)))
        J = numeric_jacobian(arch, _point(arch, rng), bank, eps=1.0, base="float64")
        ranks.append(_numerical_rank(J))
    return ranks


class BatchedFloatJets(Domain):
    """float64 values with first-order jets, batched over the inputs: arrays ``(rows, cols, batch, 1 + P)``."""

    name = "float64 jets, batched"

    def matmul(self, a, b):
        # batch first: (Ba, r, k, 1 + P) and (Bb, k, c, 1 + P), one BLAS product per input
        A, B = np.moveaxis(a, 2, 0), np.moveaxis(b, 2, 0)
        r, k, width = A.shape[1:]
        c = B.shape[2]
        batch = max(A.shape[0], B.shape[0])
        value = A[..., 0] @ B[..., 0]
        db = B[..., 1:].reshape(B.shape[0], k, c * (width - 1))
        tangent = (A[..., 0] @ db).reshape(batch, r, c, width - 1)
        da = np.moveaxis(A[..., 1:], 3, 1)  # (Ba, P, r, k)
        tangent = tangent + np.moveaxis(da @ B[:, None, :, :, 0], 1, 3)
        return np.moveaxis(np.concatenate([value[..., None], tangent], axis=-1), 0, 2)

    def transpose(self, a):
        return a.swapaxes(0, 1)

    def attention(self, scores, normalizer):
        weights = np.exp(scores[..., :1]) * np.concatenate(
            [np.ones_like(scores[..., :1]), scores[..., 1:]], axis=-1)  # (e^a, e^a da)
        totals = weights.sum(axis=0, keepdims=True)
        inverse = np.concatenate([1 / totals[..., :1], -totals[..., 1:] / totals[..., :1] ** 2], axis=-1)
        value = weights[..., :1] * inverse[..., :1]
        tangent = weights[..., :1] * inverse[..., 1:] + weights[..., 1:] * inverse[..., :1]
        return np.concatenate([value, tangent], axis=-1)


def vectorized_float64_table(seed: int = 0):
    """Numerical ranks from one batched float64 forward pass over the 250 inputs per width."""
    rng = np.random.default_rng(seed)
    ranks = []
    for d in WIDTHS:
        arch = Architecture.uniform(layers=LAYERS, width=d, rank=RANK, tokens=TOKENS, normalizer="softmax")
        flat, P = _point(arch, rng), arch.param_count
        blocks, position = {"Q": [], "K": [], "V": []}, 0
        for i in range(1, arch.layers + 1):
            for name, (rows, cols) in arch.block_shapes(i).items():
                block = np.zeros((rows, cols, 1, 1 + P))
                block[..., 0, 0] = flat[position:position + rows * cols].reshape(rows, cols)
                for r in range(rows):
                    for c in range(cols):
                        block[r, c, 0, 1 + position + r * cols + c] = 1.0
                blocks[name].append(block)
                position += rows * cols
        X = np.zeros((d, TOKENS, INPUTS, 1 + P))
        X[..., 0] = np.moveaxis(rng.standard_normal((INPUTS, d, TOKENS)), 0, -1)
        params = Parameters(tuple(blocks["Q"]), tuple(blocks["K"]), tuple(blocks["V"]))
        output = forward(arch, params, X, BatchedFloatJets(), convert=False)
        J = np.moveaxis(output[..., 1:], 2, 0).reshape(-1, P)
        ranks.append(_numerical_rank(J))
    return ranks


def test_exact_table_is_faster_than_float64_estimate(table):
    expected = [hmk_dimension(LAYERS, d, RANK) for d in WIDTHS]

    started = time.perf_counter()
    exact_table = dimension_table(layers=LAYERS, widths=WIDTHS, rank=RANK, tokens=TOKENS, normalizer="softmax",
                                  estimate=None)
    exact = time.perf_counter() - started

    started = time.perf_counter()
    float_ranks = float64_table()
    baseline = time.perf_counter() - started

    started = time.perf_counter()
    vectorized_ranks = vectorized_float64_table()
    vectorized = time.perf_counter() - started

    table(f"HMK Figure 3 (l={LAYERS}, t={TOKENS}, a={RANK}, d={WIDTHS[0]}..{WIDTHS[-1]}, softmax), "
          f"{INPUTS} random inputs for float64",
          ["method", "seconds", "ratio to exact", "ranks = formula"],
          [["exact, certified (dimension_table)", f"{exact:.2f}", "1.0",
            [row.lower for row in exact_table.rows] == expected],
           ["float64 numeric_jacobian + SVD", f"{baseline:.2f}", f"{baseline / exact:.1f}", float_ranks == expected],
           ["vectorized float64 forward-mode + SVD", f"{vectorized:.2f}", f"{vectorized / exact:.1f}",
            vectorized_ranks == expected]])
    assert [row.lower for row in exact_table.rows] == expected
    assert all(row.certified for row in exact_table.rows)
    assert float_ranks == expected and vectorized_ranks == expected
    assert exact < baseline
