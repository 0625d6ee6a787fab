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

* **the command with its default flags** (``symattn dimension --layers 2
  --tokens 3 --rank 2 --width 3..10``: certified, no estimate) against the
  float64 baseline, each in its own process so that each reports its own
  peak memory (``VmHWM``; ``ru_maxrss`` would count the forking parent's);
  the times are measured inside the processes (interpreter start-up and
  imports excluded), three runs of each side interleaved, the fastest of
  each compared.  Issue 10 asks for at most 0.25x the baseline's time:
  reported (met / NOT met), not asserted, as the margin is thin (December
  2026, quiet machine: 0.22x, 0.27 s against 1.23 s; 0.24x under a load of
  2; before the faster engine 0.39x, 0.46 s against 1.17 s).  The baseline
  on one BLAS thread is reported beside it: under load from other processes
  the default (threaded) baseline is 2-3x slower, which flatters the ratio
  (0.11x measured under load).

Run with ``python -m pytest -q -s tests/benchmarks/test_bench_dimension.py``.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from symattn.algebra.domains import Domain
from symattn.identify import dimension_table, hmk_dimension
from symattn.model import Architecture, Parameters, forward
from symattn.numeric import numeric_jacobian

from harness import measure_in_a_process as _measure_in_a_process

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


#: The command of HMK Figure 3 with its default flags (issue 10: certified by default).
DIMENSION_COMMAND = ["dimension", "--layers", str(LAYERS), "--tokens", str(TOKENS), "--rank", str(RANK),
                     "--width", f"{WIDTHS[0]}..{WIDTHS[-1]}", "--json", "--quiet"]

#: Issue 10: the certified command takes at most this fraction of the float64 baseline's time
#: (reported, not asserted: see the module docstring).
TARGET_RATIO = 0.25

_CLI_SETUP = """
import contextlib, io
from symattn.cli import main
"""

_CLI_BODY = """
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main({argv!r})
assert status == 0, status
result = [[row["lower"], row["upper"], row["certified"], row["estimate"]] for row in json.loads(out.getvalue())["rows"]]
"""

_FLOAT64_SETUP = """
from test_bench_dimension import float64_table
"""

_FLOAT64_BODY = """
result = float64_table()
"""


#: Runs of each side, interleaved; the fastest of each counts (other load on the machine only slows a run down).
REPEATS = 3


def _fastest(runs: list[dict]) -> dict:
    return min(runs, key=lambda run: run["seconds"])


def test_dimension_command_against_float64_jacobian_rank(table):
    expected = [hmk_dimension(LAYERS, d, RANK) for d in WIDTHS]
    commands, baselines, single = [], [], []
    for _ in range(REPEATS):
        commands.append(_measure_in_a_process(_CLI_SETUP, _CLI_BODY.format(argv=DIMENSION_COMMAND)))
        baselines.append(_measure_in_a_process(_FLOAT64_SETUP, _FLOAT64_BODY))
        # OpenBLAS's threads wait for each other when another process holds a core: on a loaded
        # 2-core machine the default baseline slows down 2-3x (measured 4.1 s against 1.6 s), so
        # the baseline on one BLAS thread is reported beside it (the certified run uses one)
        single.append(_measure_in_a_process(_FLOAT64_SETUP, _FLOAT64_BODY, {"OPENBLAS_NUM_THREADS": "1"}))
    command, baseline, single_thread = _fastest(commands), _fastest(baselines), _fastest(single)
    ratio = command["seconds"] / baseline["seconds"]
    single_ratio = command["seconds"] / single_thread["seconds"]
    table(f"symattn {' '.join(DIMENSION_COMMAND[:-2])} (default flags) against a float64 Jacobian rank "
          f"on {INPUTS} inputs per width (HMK's method), each in its own process, fastest of {REPEATS}",
          ["method", "seconds", "ratio to float64", "peak memory (MiB)", "ranks = formula"],
          [["symattn dimension (certified, no estimate)", f"{command['seconds']:.2f}", f"{ratio:.2f}",
            f"{command['peak_bytes'] / 2**20:.0f}", [row[0] for row in command["result"]] == expected],
           ["float64 numeric_jacobian + SVD", f"{baseline['seconds']:.2f}", "1.00",
            f"{baseline['peak_bytes'] / 2**20:.0f}", baseline["result"] == expected],
           ["the same, one BLAS thread", f"{single_thread['seconds']:.2f}",
            f"certified / this = {single_ratio:.2f}", f"{single_thread['peak_bytes'] / 2**20:.0f}",
            single_thread["result"] == expected]])
    assert [row[:3] for row in command["result"]] == [[d, d, True] for d in expected]
    assert all(row[3] is None for row in command["result"])  # no estimate by default
    assert baseline["result"] == expected
    # met on a quiet machine with a thin margin (0.22x, December 2026: certified 0.27 s, float64 1.23 s),
    # so the ratio is reported against the target, not asserted
    print(f"issue 10 target <= {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'} ({ratio:.2f}x)")
