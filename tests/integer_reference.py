"""Reference products in Python's unbounded integers (no numpy arithmetic), shared by the tests."""

from __future__ import annotations


def series_matmul_reference(A, B, p: int, N: int) -> list:
    """``A B mod (p, eps^N)`` for ``A (m, k, La)`` and ``B (k, n, Lb)``, as nested lists."""
    m, k, _ = A.shape
    n = B.shape[1]
    out = [[[0] * N for _ in range(n)] for _ in range(m)]
    for i in range(m):
        for j in range(n):
            for l in range(k):
                for a in range(min(N, A.shape[2])):
                    for b in range(min(N - a, B.shape[2])):
                        out[i][j][a + b] += int(A[i, l, a]) * int(B[l, j, b])
            out[i][j] = [c % p for c in out[i][j]]
    return out
