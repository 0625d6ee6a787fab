"""A float64 Jacobian rank of a deep attention network by plain numpy: complex-step derivatives and an SVD.

The network of MATH.md section 1 written again in numpy (no symattn code):
``A_i = X^T K_i^T Q_i X``, ``S = softmax`` over the keys (each column of
``S`` sums to 1), ``X_i = V_i X_{i-1} S``.  The Jacobian of the outputs of
``inputs`` random inputs with respect to every native parameter is taken by
the complex step, ``dF/dtheta_j = Im F(theta + i h e_j) / h`` with ``h =
1e-30`` (no subtraction, so exact to rounding: the numerical rank has a clean
gap), one batched forward pass over a block of parameters at a time; its
rank counts the singular values above ``1e-9`` times the largest.

Run alone: ``python tests/benchmarks/wide_float64_baseline.py --layers 2 --width 32 --rank 8 --tokens 8``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

#: Complex step and the relative threshold of the numerical rank.
STEP, TOLERANCE = 1e-30, 1e-9

#: Parameters perturbed per batched forward pass (bounds the memory of the pass).
BLOCK = 256


def random_network(layers: int, width: int, rank: int, tokens: int, inputs: int, seed: int = 0):
    """``(blocks, bank)``: ``[(Q_i, K_i, V_i)]`` with entries N(0, 1/width) and ``inputs`` N(0, 1) inputs."""
    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(width)
    blocks = [tuple(rng.standard_normal(shape) * scale for shape in ((rank, width), (rank, width), (width, width)))
              for _ in range(layers)]
    return blocks, rng.standard_normal((inputs, width, tokens))


def forward(blocks, X):
    """Outputs for stacked parameters: each block ``(..., rows, cols)``, ``X`` ``(inputs, d, t)`` -> ``(..., inputs, d, t)``."""
    for Q, K, V in blocks:
        QX = Q[..., None, :, :] @ X
        KX = K[..., None, :, :] @ X
        A = np.swapaxes(KX, -1, -2) @ QX                       # A[j, k] = <K x_j, Q x_k>
        A = A - A.real.max(axis=-2, keepdims=True)             # a real shift per column: S is unchanged
        E = np.exp(A)
        S = E / E.sum(axis=-2, keepdims=True)                  # softmax over the keys j
        X = V[..., None, :, :] @ X @ S
    return X


def jacobian(blocks, bank) -> np.ndarray:
    """``(inputs * d * t, #params)`` float64, by the complex step, ``BLOCK`` parameters per pass."""
    shapes = [b.shape for layer in blocks for b in layer]
    sizes = [int(np.prod(s)) for s in shapes]
    offsets = np.cumsum([0] + sizes)
    total = int(offsets[-1])
    flat = [b.astype(np.complex128).ravel() for layer in blocks for b in layer]
    columns = []
    for start in range(0, total, BLOCK):
        count = min(BLOCK, total - start)
        stacked = []
        for index, (base, shape) in enumerate(zip(flat, shapes)):
            copies = np.repeat(base[None, :], count, axis=0)
            for c in range(count):
                j = start + c - offsets[index]
                if 0 <= j < sizes[index]:
                    copies[c, j] += 1j * STEP
            stacked.append(copies.reshape(count, *shape))
        layers = [tuple(stacked[3 * i:3 * i + 3]) for i in range(len(blocks))]
        out = forward(layers, bank)                            # (count, inputs, d, t)
        columns.append(out.imag.reshape(count, -1) / STEP)
    return np.concatenate(columns).T


def float64_rank(layers: int, width: int, rank: int, tokens: int, inputs: int, seed: int = 0) -> dict:
    """The numerical rank and where the time went."""
    blocks, bank = random_network(layers, width, rank, tokens, inputs, seed)
    started = time.perf_counter()
    J = jacobian(blocks, bank)
    middle = time.perf_counter()
    sigma = np.linalg.svd(J, compute_uv=False)
    ended = time.perf_counter()
    kept = int((sigma > TOLERANCE * sigma[0]).sum())
    gap = float(sigma[kept - 1] / sigma[kept]) if kept < len(sigma) and sigma[kept] > 0 else float("inf")
    return {"rank": kept, "shape": list(J.shape), "jacobian_seconds": middle - started,
            "svd_seconds": ended - middle, "gap": gap, "smallest_kept": float(sigma[kept - 1] / sigma[0])}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("--layers", 2), ("--width", 32), ("--rank", 8), ("--tokens", 8), ("--inputs", 12),
                          ("--seed", 0)):
        parser.add_argument(flag, type=int, default=default)
    args = parser.parse_args()
    print(json.dumps(float64_rank(args.layers, args.width, args.rank, args.tokens, args.inputs, args.seed)))
