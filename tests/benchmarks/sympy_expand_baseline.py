"""A plain sympy baseline for the expansion of the output along query/key collapse.

Run as a script (the benchmark starts it in a subprocess with a timeout)::

    python tests/benchmarks/sympy_expand_baseline.py --layers 1 --width 1 --tokens 2 --order 2

What it does, with nothing from ``symattn``: the output ``X_l`` with
``X_i = Vt_i X_{i-1} S(eps^2 X_{i-1}^T Kt_i^T Qt_i X_{i-1})`` in plain sympy
matrices, the input ``x_rc``, the base point ``Qt1_11, ...`` and a generic
normalizer ``s(y) = 1 + c_1 y + c_2 y^2 + ...`` (every coefficient a symbol,
as ``Normalizer.generic(1)``) all symbolic; then ``sympy.series`` of every
entry in ``eps`` up to ``O(eps^(order+1))``.  It prints one JSON object per
line: progress (``{"stage": "series", "done": ..., "total": ...}``) and
finally the coefficients ``F_0 .. F_order`` evaluated at the point given by
``--point`` (a JSON object name -> "p/q", so that the parent can compare them
with the engine's without reading any expression), with the seconds taken.
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction

import sympy as sp

EPS = sp.Symbol("eps")


def output(layers: int, width: int, tokens: int, order: int) -> sp.Matrix:
    """The symbolic output with ``Q_i = eps Qt_i, K_i = eps Kt_i`` (rank 1, all widths ``width``)."""
    X = sp.Matrix(width, tokens, lambda r, c: sp.Symbol(f"x_{r + 1}{c + 1}", real=True))
    c = [sp.Symbol(f"c_{j}", real=True) for j in range(1, order // 2 + 2)]

    def s(y):
        return 1 + sum(cj * y ** (j + 1) for j, cj in enumerate(c))

    H = X
    for i in range(1, layers + 1):
        Q = sp.Matrix(1, width, lambda r, col: sp.Symbol(f"Qt{i}_{r + 1}{col + 1}", real=True))
        K = sp.Matrix(1, width, lambda r, col: sp.Symbol(f"Kt{i}_{r + 1}{col + 1}", real=True))
        V = sp.Matrix(width, width, lambda r, col: sp.Symbol(f"Vt{i}_{r + 1}{col + 1}", real=True))
        A = EPS ** 2 * (K * H).T * (Q * H)
        E = A.applyfunc(s)
        totals = [sum(E[:, col]) for col in range(tokens)]
        S = sp.Matrix(tokens, tokens, lambda r, col: E[r, col] / totals[col])
        H = V * H * S
    return H


def run(layers: int, width: int, tokens: int, order: int, point: dict, emit=print) -> None:
    start = time.perf_counter()
    F = output(layers, width, tokens, order)
    total = len(F)
    emit(json.dumps({"stage": "series", "done": 0, "total": total, "seconds": 0.0}))
    coefficients = [[None] * total for _ in range(order + 1)]
    for index, entry in enumerate(F):
        series = sp.expand(sp.series(entry, EPS, 0, order + 1).removeO())
        for n in range(order + 1):
            coefficients[n][index] = series.coeff(EPS, n)
        emit(json.dumps({"stage": "series", "done": index + 1, "total": total,
                         "seconds": round(time.perf_counter() - start, 3)}))
    seconds = time.perf_counter() - start
    values = {}
    for s in set().union(*(e.free_symbols for row in coefficients for e in row)):
        values[s] = sp.Rational(str(point[s.name])) if s.name in point else sp.Integer(0)
    evaluated = [[str(Fraction(str(sp.nsimplify(e.xreplace(values))))) for e in row] for row in coefficients]
    emit(json.dumps({"coefficients": evaluated, "seconds": round(seconds, 3)}))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--width", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=2)
    parser.add_argument("--order", type=int, default=2)
    parser.add_argument("--point", default="{}")
    args = parser.parse_args(argv)
    run(args.layers, args.width, args.tokens, args.order, json.loads(args.point),
        emit=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
