"""Smith-form valuations over GF(p)[[eps]], checked against independent computations.

``smith_valuations`` eliminates with a pivot of least valuation.  It is checked
here against two computations that share nothing with it:

- determinantal divisors: ``e_1 + ... + e_r`` is the least valuation of the
  ``r x r`` minors (Leibniz expansion of every minor, exact polynomial
  arithmetic mod ``p`` in Python integers);
- block Toeplitz ranks: ``rank T_k - rank T_{k-1}`` is the number of
  invariant factors of valuation ``<= k``, where ``T_k`` is the block lower
  triangular Toeplitz matrix of the coefficients ``J_0 .. J_k`` (Gaussian
  elimination mod ``p`` in Python integers).

Truncation: an exponent ``>= N`` is never reported; those directions are
counted by ``undecided``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from symattn.algebra.modseries import series_mul_mod
from symattn.algebra.valuations import SmithValuations, smith_valuations

BIG_PRIME = 268435399


# -- independent references ------------------------------------------------------------
def _poly_mul(a: list[int], b: list[int], p: int) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] = (out[i + j] + x * y) % p
    return out


def _poly_valuation(a: list[int]) -> int | None:
    for i, x in enumerate(a):
        if x:
            return i
    return None


def _permutation_sign(perm) -> int:
    sign, seen = 1, set()
    for start in range(len(perm)):
        if start in seen:
            continue
        length, j = 0, start
        while j not in seen:
            seen.add(j)
            j = perm[j]
            length += 1
        if length % 2 == 0:
            sign = -sign
    return sign


def _determinant(rows: list[list[list[int]]], p: int) -> list[int]:
    """Determinant of a square matrix of polynomials (coefficient lists) mod p, by Leibniz."""
    r = len(rows)
    degree = sum(len(rows[0][0]) - 1 for _ in range(r))
    total = [0] * (degree + 1)
    for perm in itertools.permutations(range(r)):
        term = [1]
        for i, j in enumerate(perm):
            term = _poly_mul(term, rows[i][j], p)
        sign = _permutation_sign(perm)
        for k, c in enumerate(term):
            total[k] = (total[k] + sign * c) % p
    return total


def determinantal_exponents(matrix: np.ndarray, p: int) -> list[int]:
    """Invariant-factor valuations of the polynomial matrix, from determinantal divisors."""
    m, n, _ = matrix.shape
    M = [[[int(c) % p for c in matrix[i, j]] for j in range(n)] for i in range(m)]
    divisor_valuations = [0]
    for r in range(1, min(m, n) + 1):
        best = None
        for rows in itertools.combinations(range(m), r):
            for cols in itertools.combinations(range(n), r):
                v = _poly_valuation(_determinant([[M[i][j] for j in cols] for i in rows], p))
                if v is not None and (best is None or v < best):
                    best = v
        if best is None:  # every r x r minor vanishes: rank r - 1
            break
        divisor_valuations.append(best)
    return [divisor_valuations[k] - divisor_valuations[k - 1] for k in range(1, len(divisor_valuations))]


def _rank_mod_p(rows: list[list[int]], p: int) -> int:
    rows = [[x % p for x in row] for row in rows]
    rank, cols = 0, len(rows[0]) if rows else 0
    for c in range(cols):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][c]), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        inverse = pow(rows[rank][c], -1, p)
        for r in range(len(rows)):
            if r != rank and rows[r][c]:
                factor = rows[r][c] * inverse % p
                rows[r] = [(x - factor * y) % p for x, y in zip(rows[r], rows[rank])]
        rank += 1
    return rank


def toeplitz_exponents(matrix: np.ndarray, p: int) -> tuple[list[int], int]:
    """Exponents below N (with multiplicity) from ranks of block Toeplitz matrices, and that count."""
    m, n, N = matrix.shape
    counts, previous = [], 0
    for k in range(N):
        T = [[0] * (n * (k + 1)) for _ in range(m * (k + 1))]
        for br in range(k + 1):
            for bc in range(br + 1):
                block = matrix[:, :, br - bc]
                for i in range(m):
                    for j in range(n):
                        T[br * m + i][bc * n + j] = int(block[i, j])
        rank = _rank_mod_p(T, p)
        counts.append(rank - previous)  # number of exponents <= k
        previous = rank
    exponents = []
    for k in range(N):
        exponents += [k] * (counts[k] - (counts[k - 1] if k else 0))
    return exponents, counts[-1]


# -- random test matrices --------------------------------------------------------------
def _unit_matrix(rng, size: int, N: int, p: int) -> np.ndarray:
    """A random invertible matrix over GF(p)[[eps]]: invertible constant term, random higher terms."""
    while True:
        U = rng.integers(0, p, size=(size, size, N))
        if _rank_mod_p(U[:, :, 0].tolist(), p) == size:
            return U


def _matmul_series(A: np.ndarray, B: np.ndarray, p: int) -> np.ndarray:
    return series_mul_mod(A[:, :, None, :], B[None, :, :, :], p).sum(axis=1) % p


def _structured(rng, m: int, n: int, N: int, p: int, exponents) -> np.ndarray:
    """``U diag(eps^e) W`` truncated at N: known invariant factors (exponents >= N vanish)."""
    D = np.zeros((m, n, N), dtype=np.int64)
    for k, e in enumerate(exponents):
        if e < N:
            D[k, k, e] = 1 + rng.integers(0, p - 1)
            D[k, k, e + 1:] = rng.integers(0, p, size=N - e - 1)  # a unit times eps^e
    return _matmul_series(_matmul_series(_unit_matrix(rng, m, N, p), D, p), _unit_matrix(rng, n, N, p), p)


def _sparse(rng, m: int, n: int, N: int, p: int) -> np.ndarray:
    """Entries with random valuations and frequent cancellations (small p, many zeros)."""
    M = rng.integers(0, p, size=(m, n, N))
    M[rng.random((m, n, N)) < 0.6] = 0
    shift = rng.integers(0, N, size=(m, n))
    for (i, j), s in np.ndenumerate(shift):
        M[i, j, :s] = 0
    return M


# -- agreement with the references ----------------------------------------------------
@pytest.mark.parametrize("seed", range(40))
def test_random_sparse_matrices_match_determinantal_divisors(seed):
    rng = np.random.default_rng(seed)
    p = [2, 3, 5, 7][seed % 4]
    m, n, N = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 6))
    M = _sparse(rng, m, n, N, p)
    result = smith_valuations(M, p)
    # the polynomial matrix (degree < N) has these invariant factors; those >= N are cut off
    exact = determinantal_exponents(M, p)
    assert list(result.exponents) == [e for e in exact if e < N]
    assert result.undecided == min(m, n) - len(result.exponents)
    assert list(result.exponents) == toeplitz_exponents(M, p)[0]


@pytest.mark.parametrize("seed", range(12))
def test_structured_matrices_recover_their_exponents(seed):
    rng = np.random.default_rng(100 + seed)
    p = [11, 101, 65537][seed % 3]
    m, n = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    N = 7
    r = min(m, n)
    exponents = sorted(int(e) for e in rng.integers(0, 9, size=int(rng.integers(1, r + 1))))
    M = _structured(rng, m, n, N, p, exponents)
    result = smith_valuations(M, p)
    assert list(result.exponents) == [e for e in exponents if e < N]
    assert result.undecided == r - len(result.exponents)
    assert list(result.exponents) == toeplitz_exponents(M, p)[0]
    if max(m, n) <= 3:
        assert list(result.exponents) == [e for e in determinantal_exponents(M, p) if e < N]


@pytest.mark.parametrize("seed", range(4))
def test_large_prime_and_long_series_do_not_overflow(seed):
    # residues near 2**28 and more than 64 coefficients: the int64 reduction path
    rng = np.random.default_rng(500 + seed)
    N = 80
    M = _structured(rng, 3, 3, N, BIG_PRIME, [0, 37, 70 + seed])
    result = smith_valuations(M, BIG_PRIME)
    assert result.exponents == (0, 37, 70 + seed)
    assert result.undecided == 0
    # and against determinantal divisors in exact Python integers
    assert determinantal_exponents(M, BIG_PRIME) == [0, 37, 70 + seed]


# -- truncation ---------------------------------------------------------------------------
def test_exponents_at_or_beyond_truncation_are_never_reported():
    M = np.zeros((3, 3, 4), dtype=np.int64)
    M[0, 0, 1] = 1
    M[1, 1, 3] = 5
    # M[2, 2] would be eps^4 or eps^9: zero mod eps^4
    result = smith_valuations(M, 7)
    assert result.exponents == (1, 3)
    assert all(e < result.truncation for e in result.exponents)
    assert (result.remaining_rows, result.remaining_cols, result.undecided) == (1, 1, 1)
    assert result.resolved_rank == 2
    assert result.truncation == 4


def test_zero_matrix_is_all_undecided():
    result = smith_valuations(np.zeros((2, 5, 3), dtype=np.int64), 13)
    assert result == SmithValuations((), 2, 5, 3)
    assert result.undecided == 2 and result.resolved_rank == 0


def test_deeper_truncation_resolves_what_was_undecided():
    rng = np.random.default_rng(7)
    full = _structured(rng, 4, 3, 12, 101, [0, 4, 9])
    for N, expected in [(1, (0,)), (4, (0,)), (5, (0, 4)), (9, (0, 4)), (10, (0, 4, 9)), (12, (0, 4, 9))]:
        result = smith_valuations(full[:, :, :N], 101)
        assert result.exponents == expected, N
        assert result.undecided == 3 - len(expected)


def test_quotient_precision_is_respected():
    # [[eps, 1], [eps^2 + eps^3 (unknown beyond eps^3), eps]]: det = eps^2 - eps^2 - eps^3 = -eps^3
    M = np.zeros((2, 2, 4), dtype=np.int64)
    M[0, 0, 1] = 1
    M[0, 1, 0] = 1
    M[1, 0, 2] = 1
    M[1, 0, 3] = 1
    M[1, 1, 1] = 1
    assert smith_valuations(M, 5).exponents == (0, 3)
    # and modulo eps^3 the second exponent is not yet visible
    assert smith_valuations(M[:, :, :3], 5).exponents == (0,)


# -- diagonal, permutations, shapes ----------------------------------------------------------
@pytest.mark.parametrize("exponents", [(0,), (0, 0, 0), (2, 0, 5), (3, 3, 1, 0), (6, 1)])
def test_diagonal_matrices(exponents):
    N = 8
    k = len(exponents)
    M = np.zeros((k, k, N), dtype=np.int64)
    for i, e in enumerate(exponents):
        M[i, i, e] = i + 2
        M[i, i, e + 1:] = 3  # higher terms of the unit do not matter
    result = smith_valuations(M, 101)
    assert result.exponents == tuple(sorted(exponents))
    assert result.undecided == 0


def test_invariant_under_permutations_transpose_and_units():
    rng = np.random.default_rng(3)
    M = _sparse(rng, 4, 3, 6, 5)
    expected = smith_valuations(M, 5)
    rows, cols = rng.permutation(4), rng.permutation(3)
    assert smith_valuations(M[rows][:, cols], 5).exponents == expected.exponents
    assert smith_valuations(M.transpose(1, 0, 2), 5).exponents == expected.exponents
    U = _unit_matrix(rng, 4, 6, 5)
    assert smith_valuations(_matmul_series(U, M, 5), 5).exponents == expected.exponents


def test_rectangular_and_empty_shapes():
    M = np.zeros((1, 4, 3), dtype=np.int64)
    M[0, 2, 2] = 1
    assert smith_valuations(M, 3) == SmithValuations((2,), 0, 3, 3)
    assert smith_valuations(np.zeros((0, 3, 2), dtype=np.int64), 3) == SmithValuations((), 0, 3, 2)


def test_input_is_not_modified_and_negative_entries_are_residues():
    M = np.array([[[0, -1, 0]], [[0, 0, 6]]], dtype=np.int64)  # column (-eps, 6 eps^2)
    before = M.copy()
    assert smith_valuations(M, 7).exponents == (1,)
    assert np.array_equal(M, before)
    M2 = np.array([[[0, 0, 7]]], dtype=np.int64)  # 7 eps^2 = 0 mod 7
    assert smith_valuations(M2, 7).exponents == ()


def test_progress_called_once_per_pivot():
    calls = []
    M = np.zeros((3, 3, 5), dtype=np.int64)
    for i in range(3):
        M[i, i, i] = 1
    smith_valuations(M, 11, progress=lambda: calls.append(1))
    assert len(calls) == 3


def test_large_pivot_blocks_of_short_series_recover_their_exponents():
    # a pivot block of 25 rows known to 12 coefficients: the quotient by it is solved coefficient by
    # coefficient (fewer coefficients than half its size), not through the Newton inverse
    rng = np.random.default_rng(700)
    exponents = [0] * 25 + [4] * 6 + [11] * 3
    M = _structured(rng, 36, 34, 12, BIG_PRIME, exponents)
    result = smith_valuations(M, BIG_PRIME)
    assert list(result.exponents) == exponents and result.undecided == 0
