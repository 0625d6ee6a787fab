"""A plain numpy baseline for the exact decay spectrum near query/key collapse.

Run as a script::

    python tests/benchmarks/numpy_spectrum_baseline.py --layers 4 --bank 12 --order 55

It is the hand-written comparison for ``tests/benchmarks/test_bench_startup.py``,
written independently of symattn's engine (it imports nothing from
``symattn``; only numpy and the standard library).

What it computes (the docs' theory page, decay spectrum near collapse):

1. the network ``X_i = V_i X_{i-1} S(A_i)``, ``A_i = X_{i-1}^T K_i^T Q_i X_{i-1}``,
   softmax over keys (column by column), on the collapse curve
   ``Q_i = eps Qt_i, K_i = eps Kt_i, V_i = Vt_i`` at a random point mod p;
2. forward-mode jets: every intermediate quantity carries its value and its
   derivative in every native parameter (all entries of every Q_i, K_i, V_i),
   each a power series in eps truncated mod eps^N with coefficients in GF(p);
3. the native Jacobian ``J(eps)`` on a bank of random inputs (rows: every
   output entry of every input; columns: the native parameters);
4. its Smith normal form over GF(p)[[eps]]/(eps^N) by elimination with a
   pivot of least eps-valuation: the valuations are the decay spectrum.

Directions of valuation >= N are not resolved and are counted in the kernel.
The bank must be separating: 12 inputs suffice up to four layers (10 do not),
five layers need 14 (with 12 the three exponents 161 come out as one 161 and
two spurious 163 when N > 163).
Over GF(p) a bad random point can only raise a valuation or lower the rank.
The last line printed is one JSON object:
``{"spectrum": {"0": 4, ...}, "rank": r, "kernel": k, "seconds": s}``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

P = 268435399  # prime < 2^28: a product of two residues fits in int64 with room for ~128 sums


# ---------------------------------------------------------------------------
# Truncated power series mod P.  A series array has the eps-coefficient on
# axis 0 (length N); the other axes are whatever the quantity is.
# ---------------------------------------------------------------------------

def modinv(x):
    """Elementwise inverse mod P of an integer array (Fermat, via Python ints)."""
    return np.asarray(np.frompyfunc(lambda v: pow(int(v), P - 2, P), 1, 1)(x), dtype=np.int64)


def series_mul(a, b, op=np.multiply):
    """Product of two series, truncated to the same length N.

    ``op`` combines two coefficients: np.multiply (entrywise) or np.matmul.
    Coefficients of ``a`` that are zero are skipped (the parameter series are
    mostly a single power of eps)."""
    n = a.shape[0]
    out = np.zeros((n,) + op(a[0], b[0]).shape, dtype=np.int64)
    for s in range(n):
        if not a[s].any():
            continue
        out[s:] += op(a[s], b[:n - s]) % P  # coefficient s of a times b, shifted by s
    return out % P


def series_inverse(c):
    """1/c entrywise, for series c whose constant terms are units mod P."""
    n = c.shape[0]
    r = np.zeros_like(c)
    inv0 = modinv(c[0])
    r[0] = inv0
    for k in range(1, n):  # c * r = 1  =>  r_k = -inv0 * sum_{j>=1} c_j r_{k-j}
        acc = (c[1:k + 1] * r[k - 1::-1] % P).sum(axis=0) % P
        r[k] = (P - acc) * inv0 % P
    return r


def series_exp(u):
    """exp(u) entrywise, for series u with zero constant term.

    Same as the truncated sum of u^n/n!, computed by E' = u' E:
    k E_k = sum_{j=1}^k j u_j E_{k-j}."""
    assert not u[0].any(), "exp needs a zero constant term"
    n = u.shape[0]
    ju = np.arange(n).reshape((n,) + (1,) * (u.ndim - 1)) * u % P
    e = np.zeros_like(u)
    e[0] = 1
    for k in range(1, n):
        acc = (ju[1:k + 1] * e[k - 1::-1] % P).sum(axis=0) % P
        e[k] = acc * pow(k, P - 2, P) % P
    return e


# ---------------------------------------------------------------------------
# Jets: (value, tangent).  value has shape (N, B, 1, m, n), tangent has shape
# (N, B, params, m, n); B is the bank axis (1 for parameters), the size-1 axis
# of the value broadcasts against the parameter directions.
# ---------------------------------------------------------------------------

def jet_mul(x, y, op=np.multiply):
    """Product rule: (xy)' = x' y + x y'."""
    (xv, xd), (yv, yd) = x, y
    return series_mul(xv, yv, op), (series_mul(xd, yv, op) + series_mul(xv, yd, op)) % P


def jet_T(x):
    return x[0].swapaxes(-1, -2), x[1].swapaxes(-1, -2)


def jet_softmax(scores):
    """Column softmax over keys (rows): S_jk = exp(A_jk) / sum_j' exp(A_j'k)."""
    av, ad = scores
    ev = series_exp(av)
    e = (ev, series_mul(ev, ad))                           # d exp(A) = exp(A) dA
    cv = ev.sum(axis=-2, keepdims=True) % P                # column sums, constant term t
    cd = e[1].sum(axis=-2, keepdims=True) % P
    rv = series_inverse(cv)
    rd = (P - series_mul(series_mul(rv, rv), cd)) % P      # d(1/c) = -dc / c^2
    return jet_mul(e, (rv, rd))


def parameter_jets(shapes, tilde, n, params):
    """Jets of the native parameters on the curve; the tangent of each entry is
    the unit matrix at that entry (constant series): native derivatives."""
    jets, index = [], 0
    for (rows, cols), (mat, power) in zip(shapes, tilde):
        v = np.zeros((n, 1, 1, rows, cols), dtype=np.int64)
        v[power, 0, 0] = mat                               # eps^power * mat
        d = np.zeros((n, 1, params, rows, cols), dtype=np.int64)
        for r in range(rows):
            for c in range(cols):
                d[0, 0, index, r, c] = 1
                index += 1
        jets.append((v, d))
    return jets


def jacobian(layers, width, rank, tokens, bank, order, seed):
    """J(eps) as an array (N, bank*width*tokens, params) of coefficients mod P."""
    rng = np.random.default_rng(seed)
    d, a, t, n = width, rank, tokens, order
    params = layers * (2 * a * d + d * d)
    shapes, tilde = [], []
    for _ in range(layers):  # parameter order: per layer Q, K, V, entries row-major
        for rows, power in ((a, 1), (a, 1), (d, 0)):
            shapes.append((rows, d))
            tilde.append((rng.integers(0, P, size=(rows, d)), power))
    theta = parameter_jets(shapes, tilde, n, params)
    xv = np.zeros((n, bank, 1, d, t), dtype=np.int64)
    xv[0, :, 0] = rng.integers(0, P, size=(bank, d, t))
    x = (xv, np.zeros((n, bank, params, d, t), dtype=np.int64))  # inputs: no tangent
    for i in range(layers):
        q, k, v = theta[3 * i:3 * i + 3]
        qx, kx = jet_mul(q, x, np.matmul), jet_mul(k, x, np.matmul)
        scores = jet_mul(jet_T(kx), qx, np.matmul)         # (K x_j) . (Q x_k), t x t
        x = jet_mul(jet_mul(v, x, np.matmul), jet_softmax(scores), np.matmul)
    # rows: (input b, output entry r, token k); columns: parameters
    return np.moveaxis(x[1], 2, -1).reshape(n, bank * d * t, params)


# ---------------------------------------------------------------------------
# Smith form over GF(P)[[eps]]/(eps^N)
# ---------------------------------------------------------------------------

def smith_valuations(m):
    """Valuations of the invariant factors of m (N, rows, cols), by elimination."""
    n = m.shape[0]
    found = []
    while m.shape[1] and m.shape[2]:
        nonzero = m != 0
        val = np.where(nonzero.any(axis=0), nonzero.argmax(axis=0), n)  # eps-valuation of each entry
        i, j = np.unravel_index(val.argmin(), val.shape)
        v = int(val[i, j])
        if v >= n:
            break                                          # the rest is 0 mod eps^N
        found.append(v)
        # pivot = eps^v * w, w a unit; every entry of column j is eps^v * q_r
        winv = series_inverse(m[v:, i, j])
        f = np.zeros((n, m.shape[1]), dtype=np.int64)
        f[:n - v] = series_mul(m[v:, :, j], winv[:, None])  # f_r = q_r / w
        # row_r -= f_r * row_i clears column j; (q_r known mod eps^(N-v) suffices,
        # since row i has valuation >= v)
        m = (m - series_mul(f[:, :, None], m[:, i, None, :])) % P
        m = np.delete(np.delete(m, i, axis=1), j, axis=2)
    return found


def decay_spectrum(layers=4, width=2, rank=1, tokens=3, bank=12, order=None, seed=0):
    """{'spectrum': {valuation: multiplicity}, 'rank', 'kernel', 'seconds'} (string keys)."""
    if order is None:
        order = 2 * 3 ** (layers - 1) + 2
    start = time.perf_counter()
    params = layers * (2 * rank * width + width * width)
    found = smith_valuations(jacobian(layers, width, rank, tokens, bank, order, seed))
    spectrum = {str(v): c for v, c in sorted(Counter(found).items())}
    return {"spectrum": spectrum, "rank": len(found), "kernel": params - len(found),
            "seconds": round(time.perf_counter() - start, 4)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=2)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=3)
    parser.add_argument("--bank", type=int, default=12)
    parser.add_argument("--order", type=int, default=None, help="truncation N (default 2*3^(l-1)+2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    assert max(args.width, args.rank, args.tokens) < 128, "matmul sums would overflow int64"
    print(json.dumps(decay_spectrum(args.layers, args.width, args.rank, args.tokens,
                                    args.bank, args.order, args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
