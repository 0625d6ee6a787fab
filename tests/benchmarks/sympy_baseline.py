"""A plain sympy baseline for the decay spectrum along the collapse curve.

Run as a script (the benchmark starts it in a subprocess with a timeout)::

    python tests/benchmarks/sympy_baseline.py --layers 2 --bank 6 --order 6

What it does, with nothing from ``symattn``:

1. the network output ``F(theta)(X)`` in plain sympy (``exp`` normalizer,
   column normalization), with symbolic native parameters and each bank
   input a random rational matrix;
2. the derivative of every output entry with respect to every native
   parameter (``sympy.diff``);
3. substitution of the collapse curve ``Q_i = eps Qt_i, K_i = eps Kt_i,
   V_i = Vt_i`` at random rationals ``Qt, Kt, Vt``;
4. ``sympy.series`` of every entry in ``eps`` up to ``O(eps^order)``;
5. the valuations from the coefficient matrices ``J_0 .. J_{order-1}``
   (rationals): with ``T_k`` the block lower-triangular Toeplitz matrix of
   ``J_0 .. J_k``, ``rank T_k - rank T_{k-1}`` is the number of invariant
   factors of valuation ``<= k`` (``sympy.Matrix.rank``).

It prints one JSON object per line: ``{"stage": ..., "done": ..., "total":
...}`` while it works and finally ``{"exponents": {...}, "rank": r, ...}``,
so a parent that stops it after a timeout still knows how far it got.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import sympy as sp

EPS = sp.Symbol("eps")


def _rational(rng) -> sp.Rational:
    numerator = int(rng.integers(1, 10)) * (1 if rng.integers(0, 2) else -1)
    return sp.Rational(numerator, int(rng.integers(1, 8)))


def build_network(layers: int, width: int, rank: int, tokens: int, seed: int):
    """Symbolic blocks, the flat list of their symbols, and the curve substitution."""
    rng = np.random.default_rng([seed, 31337])
    symbols, curve = [], {}
    Q, K, V = [], [], []
    for i in range(1, layers + 1):
        for name, blocks, (rows, cols) in (("Q", Q, (rank, width)), ("K", K, (rank, width)),
                                           ("V", V, (width, width))):
            M = sp.Matrix(rows, cols, lambda r, c: sp.Symbol(f"{name}{i}_{r}{c}"))
            blocks.append(M)
            for s in M:
                symbols.append(s)
                curve[s] = EPS * _rational(rng) if name in "QK" else _rational(rng)
    return (Q, K, V), symbols, curve


def output(blocks, X: sp.Matrix, tokens: int) -> sp.Matrix:
    """``X_l`` with ``X_i = V_i X_{i-1} S(X_{i-1}^T K_i^T Q_i X_{i-1})``, ``S`` = column softmax."""
    Q, K, V = blocks
    H = X
    for i in range(len(Q)):
        A = (K[i] * H).T * (Q[i] * H)
        E = A.applyfunc(sp.exp)
        totals = [sum(E[:, c]) for c in range(tokens)]
        S = sp.Matrix(tokens, tokens, lambda r, c: E[r, c] / totals[c])
        H = V[i] * H * S
    return H


def block_toeplitz(coefficients, k: int) -> sp.Matrix:
    """``[[J_0], [J_1, J_0], ..., [J_k, ..., J_0]]`` (block lower triangular)."""
    m, n = coefficients[0].shape
    T = sp.zeros(m * (k + 1), n * (k + 1))
    for r in range(k + 1):
        for c in range(r + 1):
            T[r * m:(r + 1) * m, c * n:(c + 1) * n] = coefficients[r - c]
    return T


def toeplitz_valuations(coefficients) -> tuple[dict, int]:
    """Exponent -> multiplicity below ``len(coefficients)``, and the resolved rank."""
    counts, previous_rank, at_most = {}, 0, 0
    for k in range(len(coefficients)):
        rank = block_toeplitz(coefficients, k).rank()
        new_at_most = rank - previous_rank  # number of exponents <= k
        if new_at_most > at_most:
            counts[k] = new_at_most - at_most
        at_most, previous_rank = new_at_most, rank
    return counts, at_most


def run(layers: int, width: int, rank: int, tokens: int, bank: int, order: int, seed: int, emit=print):
    start = time.perf_counter()
    blocks, symbols, curve = build_network(layers, width, rank, tokens, seed)
    rng = np.random.default_rng([seed, 4242])
    P = len(symbols)
    total = bank * width * tokens * P
    rows = []  # one list of P series per output entry
    done = 0
    emit(json.dumps({"stage": "series", "done": 0, "total": total, "seconds": 0.0}))
    for _ in range(bank):
        X = sp.Matrix(width, tokens, lambda r, c: _rational(rng))
        F = output(blocks, X, tokens)
        for entry in F:
            row = []
            for s in symbols:
                term = sp.diff(entry, s).subs(curve)
                series = sp.series(term, EPS, 0, order).removeO()
                row.append(sp.Poly(series, EPS) if series != 0 else sp.Poly(0, EPS))
                done += 1
                emit(json.dumps({"stage": "series", "done": done, "total": total,
                                 "seconds": round(time.perf_counter() - start, 3)}))
            rows.append(row)
    coefficients = []
    for k in range(order):
        coefficients.append(sp.Matrix(len(rows), P, lambda r, c: rows[r][c].coeff_monomial(EPS ** k)))
    emit(json.dumps({"stage": "ranks", "done": 0, "total": order,
                     "seconds": round(time.perf_counter() - start, 3)}))
    exponents, resolved = toeplitz_valuations(coefficients)
    emit(json.dumps({"exponents": {str(e): m for e, m in exponents.items()}, "rank": resolved,
                     "params": P, "order": order, "seconds": round(time.perf_counter() - start, 3)}))
    return exponents, resolved


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=2)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=3)
    parser.add_argument("--bank", type=int, default=6)
    parser.add_argument("--order", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    run(args.layers, args.width, args.rank, args.tokens, args.bank, args.order, args.seed,
        emit=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
