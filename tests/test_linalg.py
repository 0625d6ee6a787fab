"""Exact modular linear algebra (symattn.algebra.linalg) against plain Python integers.

Every product is compared with a reference computed with Python's unbounded
integers (no numpy arithmetic), for primes just below ``2**28`` where the
float64 limbs and the chunks of the inner dimension are needed, at random
sizes, and at the edge of a chunk (inner dimension ``2**11`` and one more).
Every test runs with each fast engine of the series products (``compiled``
and ``blas``, through ``$SYMATTN_PRODUCTS``); ``schoolbook=True`` is the
baseline either way.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from symattn.algebra.linalg import (
    MAX_PRIME,
    EchelonBasis,
    compress_rows,
    inverse_mod_p,
    matmul_mod,
    pivots,
    rank_mod_p,
    series_matmul,
    series_matrix_inverse,
    series_mul_mod,
    series_scale,
)
from symattn.algebra.modseries import ModSeriesDomain

from integer_reference import series_matmul_reference

#: float64 through BLAS/LAPACK: .ci/run runs these again under another OpenBLAS kernel
pytestmark = pytest.mark.blas

BIG_PRIMES = [268435399, 268435367, 268435361]  # the largest primes below 2**28


@pytest.fixture(autouse=True, params=["compiled", "blas"])
def engine(request, monkeypatch):
    """The fast engine of the series products for this test."""
    monkeypatch.setenv("SYMATTN_PRODUCTS", request.param)
    return request.param
SMALL_PRIME = 1048573  # below 2**20: one limb


def _reference_matmul(A, B, p):
    A, B = np.asarray(A).tolist(), np.asarray(B).tolist()
    return [[sum(int(a) * int(b) for a, b in zip(row, col)) % p for col in zip(*B)] for row in A]


def _reference_rank(M, p):
    rows = [[Fraction(int(x) % p) for x in row] for row in np.asarray(M).tolist()]
    rank, cols = 0, len(rows[0]) if rows else 0
    for c in range(cols):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][c] % p), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        inverse = pow(int(rows[rank][c]), -1, p)
        rows[rank] = [x * inverse % p for x in rows[rank]]
        for r in range(len(rows)):
            if r != rank and rows[r][c] % p:
                factor = rows[r][c]
                rows[r] = [(x - factor * y) % p for x, y in zip(rows[r], rows[rank])]
        rank += 1
    return rank


@pytest.mark.parametrize("p", BIG_PRIMES + [SMALL_PRIME, 7])
@pytest.mark.parametrize("seed", range(4))
def test_matmul_mod_is_exact_at_random_sizes(p, seed):
    rng = np.random.default_rng([seed, p % 1000])
    m, k, n = rng.integers(1, 40, size=3)
    A = rng.integers(0, p, size=(m, k))
    B = rng.integers(0, p, size=(k, n))
    assert matmul_mod(A, B, p).tolist() == _reference_matmul(A, B, p)


@pytest.mark.parametrize("inner", [2047, 2048, 2049, 4097])
def test_matmul_mod_at_the_chunk_edge(inner):
    # 14-bit limbs times 28-bit residues: 2**11 products per exact float64 sum; the worst case is
    # every entry p - 1, whose sums are the largest
    p = BIG_PRIMES[0]
    A = np.full((3, inner), p - 1)
    B = np.full((inner, 2), p - 1)
    B[0, 1] = p - 2
    assert matmul_mod(A, B, p).tolist() == _reference_matmul(A, B, p)


def test_matmul_mod_reduces_negative_and_large_integers():
    p = BIG_PRIMES[1]
    A = np.array([[-1, 3 * p + 5], [2**40, -(2**33)]])
    B = np.array([[p + 1, -7], [1, 2]])
    assert matmul_mod(A, B, p).tolist() == _reference_matmul(np.array(A) % p, np.array(B) % p, p)


def test_matmul_mod_broadcasts_stacks_and_empty_shapes():
    p = BIG_PRIMES[2]
    rng = np.random.default_rng(5)
    A = rng.integers(0, p, size=(4, 3, 6))
    B = rng.integers(0, p, size=(1, 6, 2))
    stacked = matmul_mod(A, B, p)
    assert stacked.shape == (4, 3, 2)
    for i in range(4):
        assert stacked[i].tolist() == _reference_matmul(A[i], B[0], p)
    assert matmul_mod(np.zeros((2, 0)), np.zeros((0, 3)), p).tolist() == [[0] * 3] * 2


def test_matmul_mod_refuses_primes_beyond_the_exact_range():
    with pytest.raises(ValueError, match="2\\*\\*28"):
        matmul_mod([[1]], [[1]], MAX_PRIME + 3)


@pytest.mark.parametrize("p", [BIG_PRIMES[0], SMALL_PRIME])
@pytest.mark.parametrize("seed", range(5))
def test_series_matmul_is_exact(p, seed):
    rng = np.random.default_rng([seed, 77])
    m, k, n = (int(x) for x in rng.integers(1, 5, size=3))
    La, Lb = (int(x) for x in rng.integers(1, 9, size=2))
    A = rng.integers(0, p, size=(m, k, La))
    B = rng.integers(0, p, size=(k, n, Lb))
    # sparse coefficient supports (as parameters eps * Qt have) take the restricted Toeplitz path
    A[:, :, : int(rng.integers(0, La))] = 0
    if seed % 2:
        B[:, :, 1::2] = 0
    for N in (min(La, Lb), max(La, Lb) + 2):
        assert series_matmul(A, B, p, truncation=N).tolist() == series_matmul_reference(A, B, p, N)
        assert series_matmul(A, B, p, truncation=N, schoolbook=True).tolist() == \
            series_matmul_reference(A, B, p, N)


def test_series_matmul_broadcasts_a_leading_axis_and_cuts_large_products(monkeypatch):
    import symattn.algebra.linalg.series as series_products

    p = BIG_PRIMES[0]
    rng = np.random.default_rng(11)
    A = rng.integers(0, p, size=(6, 3, 2, 9))
    B = rng.integers(0, p, size=(1, 2, 5, 9))
    expected = [series_matmul_reference(A[b], B[0], p, 9) for b in range(6)]
    assert series_matmul(A, B, p).tolist() == expected
    monkeypatch.setattr(series_products, "_PIECE_BYTES", 2000)  # forces cutting along the batch and the rows
    assert series_matmul(A, B, p).tolist() == expected
    assert series_matmul(A[0], B[0], p).tolist() == expected[0]


def test_series_matmul_agrees_with_the_elementwise_schoolbook_product():
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(3)
    a = rng.integers(0, p, size=(7, 1, 1, 30))
    b = rng.integers(0, p, size=(7, 1, 12, 30))
    assert (series_matmul(a, b, p)[:, 0] == series_mul_mod(a[:, 0], b[:, 0], p)).all()


def test_pivots_rank_and_inverse_against_fractions():
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(8)
    for size in (1, 3, 6):
        low_rank = matmul_mod(rng.integers(0, p, size=(size + 2, size - 1 or 1)),
                              rng.integers(0, p, size=(size - 1 or 1, size)), p)
        assert rank_mod_p(low_rank, p) == _reference_rank(low_rank, p)
        rows, cols = pivots(low_rank, p)
        assert _reference_rank(low_rank[np.ix_(rows, cols)], p) == len(rows) == rank_mod_p(low_rank, p)
        square = rng.integers(0, p, size=(size, size))
        inverse = inverse_mod_p(square, p)
        assert matmul_mod(square, inverse, p).tolist() == np.eye(size, dtype=int).tolist()
    with pytest.raises(ZeroDivisionError):
        inverse_mod_p(np.array([[1, 2], [2, 4]]), p)


def test_series_matrix_inverse_is_an_inverse():
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(9)
    A = rng.integers(0, p, size=(3, 3, 11))
    X = series_matrix_inverse(A, p)
    identity = np.zeros((3, 3, 11), dtype=np.int64)
    identity[np.arange(3), np.arange(3), 0] = 1
    assert (series_matmul(A, X, p) == identity).all() and (series_matmul(X, A, p) == identity).all()


def test_compress_rows_keeps_the_rank_and_draws_from_the_given_generator():
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(2)
    M = matmul_mod(rng.integers(0, p, size=(20, 4)), rng.integers(0, p, size=(4, 6)), p)
    compressed = compress_rows(M, 6, p, np.random.default_rng(0))
    R = np.random.default_rng(0).integers(0, p, size=(6, 20))
    assert compressed.tolist() == _reference_matmul(R, M, p)
    assert rank_mod_p(compressed, p) == 4


def test_echelon_basis_grows_like_the_rank_of_the_stacked_rows():
    p = BIG_PRIMES[1]
    rng = np.random.default_rng(4)
    basis = EchelonBasis(7, p)
    rows = np.zeros((0, 7), dtype=np.int64)
    for count in (2, 1, 3, 12):
        new = matmul_mod(rng.integers(0, p, size=(count, 2)), rng.integers(0, p, size=(2, 7)), p)
        rows = np.concatenate([rows, new])
        assert basis.add(new) == _reference_rank(rows, p)


@pytest.mark.parametrize("schoolbook", [False, True])
def test_the_series_domain_products_are_the_same_with_either_product(schoolbook, monkeypatch):
    import symattn.algebra.modseries as modseries

    monkeypatch.setattr(modseries, "_BLAS_MIN_JETS", 1)  # every jet product through BLAS
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(6)
    fast, slow = ModSeriesDomain(p, 12, directions=5), ModSeriesDomain(p, 12, directions=5, schoolbook=True)
    assert slow.schoolbook and not fast.schoolbook
    domain = slow if schoolbook else fast
    for a_shape, b_shape in [((2, 3, 1, 6, 12), (3, 4, 5, 3, 12)), ((2, 3, 5, 2, 12), (3, 1, 1, 6, 12)),
                             ((2, 3, 5, 6, 12), (3, 2, 5, 6, 12)), ((1, 1, 5, 1, 12), (1, 1, 5, 4, 12))]:
        a, b = rng.integers(0, p, size=a_shape), rng.integers(0, p, size=b_shape)
        a[..., :2] = 0  # valuations, as along a curve
        assert (domain.matmul(a, b) == slow.matmul(a, b)).all()
        left, right = a[:, :1], b[:1, :1]
        assert (domain._mul(left, right) == slow._mul(left, right)).all()


def test_the_schoolbook_default_follows_the_environment(monkeypatch):
    monkeypatch.setenv("SYMATTN_SCHOOLBOOK", "1")
    assert ModSeriesDomain(BIG_PRIMES[0], 4).schoolbook
    monkeypatch.setenv("SYMATTN_SCHOOLBOOK", "0")
    assert not ModSeriesDomain(BIG_PRIMES[0], 4).schoolbook


def test_series_matmul_in_bands_of_coefficients_agrees_with_the_schoolbook_product():
    # 64 and more output coefficients are computed in bands, each with only the columns it meets
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(12)
    A = rng.integers(0, p, size=(2, 3, 90))
    B = rng.integers(0, p, size=(3, 4, 90))
    A[..., :3] = 0
    B[..., 50:] = 0
    expected = series_mul_mod(A[:, :, None, :], B[None, :, :, :], p).sum(axis=1) % p
    assert (series_matmul(A, B, p) == expected).all()
    assert (series_matmul(B.transpose(1, 0, 2), A.transpose(1, 0, 2), p) == expected.transpose(1, 0, 2)).all()


@pytest.mark.parametrize("directions", [0, 3])
@pytest.mark.parametrize("name", ["softmax", "sigmoid", "cosh"])
def test_normalizer_by_paterson_stockmeyer_equals_horner(name, directions):
    from symattn.normalizers import Normalizer

    normalizer = Normalizer.preset(name)
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(13)
    for truncation, valuation in [(1, 1), (9, 1), (40, 2), (41, 3)]:
        fast = ModSeriesDomain(p, truncation, directions=directions)
        slow = ModSeriesDomain(p, truncation, directions=directions, schoolbook=True)
        scores = rng.integers(0, p, size=(3, 3, 4, 1 + directions, truncation))
        scores[..., 0, :valuation] = 0
        assert (fast.apply_normalizer(scores, normalizer) == slow.apply_normalizer(scores, normalizer)).all()


@pytest.mark.parametrize("p", BIG_PRIMES + [101])
def test_series_scale_equals_the_schoolbook_product(p):
    # a series times many series, entrywise: batched Toeplitz BLAS products in bands, float64 limbs
    rng = np.random.default_rng(21)
    for lead_a, lead_b, width, truncation, low_a, low_b in [
            ((3, 2), (3, 2), 5, 12, 0, 0), ((1, 2), (4, 2), 3, 70, 2, 1), ((4, 1), (4, 3), 1, 33, 0, 5),
            ((2,), (2,), 9, 200, 3, 0), ((), (), 2, 1, 0, 0), ((2, 2), (2, 2), 4, 10, 6, 4)]:
        values = rng.integers(0, p, size=(*lead_a, 1, truncation))
        many = rng.integers(0, p, size=(*lead_b, width, truncation))
        values[..., :low_a] = 0
        many[..., :low_b] = 0
        expected = series_mul_mod(values, many, p)
        assert (series_scale(values, many, p) == expected).all()
        assert (series_scale(values, many, p, schoolbook=True) == expected).all()
    extreme = np.full((3, 1, 300), p - 1)  # every limb sum at its largest
    assert (series_scale(extreme, np.full((3, 4, 300), p - 1), p)
            == series_mul_mod(extreme, np.full((3, 4, 300), p - 1), p)).all()
    # longer than the 1024 products whose limb sums stay below 2**52: the inner dimension in chunks
    # (seven layers, N = 1459; the BLAS engine went schoolbook there before; in one chunk the limb
    # sums of this extreme case pass 2**53 and come out wrong)
    extreme, many = np.full((2, 1, 4100), p - 1), np.full((2, 3, 4100), p - 1)
    many[1, :, ::2] = 0  # a series in eps^2 beside a dense one: the strided classes too
    assert (series_scale(extreme, many, p) == series_mul_mod(extreme, many, p)).all()
    values, many = rng.integers(0, p, size=(2, 1, 1500)), rng.integers(0, p, size=(2, 2, 1500))
    values[..., :3] = 0
    assert (series_scale(values, many, p) == series_mul_mod(values, many, p)).all()


@pytest.mark.parametrize("directions", [0, 4])
@pytest.mark.parametrize("name", ["softmax", "sigmoid", "1 + x**2"])
def test_attention_and_reciprocal_are_the_same_with_either_product(name, directions):
    # the fast path computes the jets of S(A) as H - S colsum(H) and the inverse by Newton at growing
    # precision; the schoolbook path by the four products of the definition, at full length
    from symattn.normalizers import Normalizer

    normalizer = Normalizer.preset(name) if name in ("softmax", "sigmoid") else Normalizer(name)
    p = BIG_PRIMES[1]
    rng = np.random.default_rng(22)
    for truncation, valuation in [(1, 1), (7, 1), (40, 2), (57, 1)]:
        fast = ModSeriesDomain(p, truncation, directions=directions)
        slow = ModSeriesDomain(p, truncation, directions=directions, schoolbook=True)
        for width in sorted({1, 1 + directions}):
            scores = rng.integers(0, p, size=(3, 3, 4, width, truncation))
            scores[..., 0, :valuation] = 0
            assert (fast.attention(scores, normalizer) == slow.attention(scores, normalizer)).all()
            totals = rng.integers(0, p, size=(1, 3, 4, width, truncation))
            totals[..., 0, 0] = rng.integers(1, p, size=(1, 3, 4))
            assert (fast.reciprocal_matrix(totals) == slow.reciprocal_matrix(totals)).all()
    if name == "1 + x**2":  # scores that do not vanish: s itself, by Horner, on both paths
        scores = rng.integers(0, p, size=(3, 3, 2, 1 + directions, 9))
        fast = ModSeriesDomain(p, 9, directions=directions)
        slow = ModSeriesDomain(p, 9, directions=directions, schoolbook=True)
        assert (fast.attention(scores, normalizer) == slow.attention(scores, normalizer)).all()


def _series_on(rng, shape, p, offset, stride):
    """Random residues on the coefficients ``offset, offset + stride, ...`` (``offset`` alone for stride 0)."""
    out = np.zeros(shape, dtype=np.int64)
    n = shape[-1]
    indices = np.arange(offset, n, stride) if stride else np.arange(offset, min(offset + 1, n))
    out[..., indices] = rng.integers(0, p, size=(*shape[:-1], len(indices)))
    return out


@pytest.mark.parametrize("p", [BIG_PRIMES[0], 101])
def test_products_of_series_in_a_power_of_eps_equal_the_schoolbook_product(p):
    # eps^a times a series in eps^g (every value along the collapse curve is a series in eps^2): the
    # products split into g shorter ones; every pair of strides, a common one and a monomial
    rng = np.random.default_rng(23)
    kinds = [(0, 1), (1, 2), (2, 2), (0, 3), (3, 0), (1, 4), (2, 6)]
    for truncation in (1, 2, 7, 30):
        for offset_a, stride_a in kinds:
            for offset_b, stride_b in kinds:
                A = _series_on(rng, (2, 3, 2, truncation), p, min(offset_a, truncation - 1), stride_a)
                B = _series_on(rng, (2, 2, 4, truncation), p, min(offset_b, truncation - 1), stride_b)
                assert (series_matmul(A, B, p) == series_matmul(A, B, p, schoolbook=True)).all()
                values = _series_on(rng, (3, 2, 1, truncation), p, min(offset_a, truncation - 1), stride_a)
                for width in (1, 5):
                    many = _series_on(rng, (3, 1, width, truncation), p, min(offset_b, truncation - 1), stride_b)
                    assert (series_scale(values, many, p) == series_mul_mod(values, many, p)).all()
    A = _series_on(rng, (3, 2, 9), p, 1, 2)  # factors of other lengths, a longer truncation
    B = _series_on(rng, (2, 4, 20), p, 0, 1)
    assert series_matmul(A, B, p, 25).tolist() == series_matmul_reference(A, B, p, 25)


@pytest.mark.parametrize("name", ["softmax", "cosh", "1 + x**3 + x**4"])
def test_normalizer_of_scores_in_a_power_of_eps_is_the_same_with_either_product(name):
    # along the collapse curve the scores are series in eps^2: the fast path composes in y = eps^2
    from symattn.normalizers import Normalizer

    normalizer = Normalizer.preset(name) if name in ("softmax", "cosh") else Normalizer(name)
    p = BIG_PRIMES[2]
    rng = np.random.default_rng(24)
    for truncation, offset, stride in [(41, 2, 2), (40, 3, 3), (9, 2, 2), (30, 4, 2)]:
        fast = ModSeriesDomain(p, truncation, directions=3)
        slow = ModSeriesDomain(p, truncation, directions=3, schoolbook=True)
        scores = rng.integers(0, p, size=(3, 3, 2, 4, truncation))
        on_stride = np.zeros(truncation, dtype=bool)
        on_stride[offset::stride] = True
        scores[..., 0, ~on_stride] = 0
        assert (fast.apply_normalizer(scores, normalizer) == slow.apply_normalizer(scores, normalizer)).all()
        assert (fast.attention(scores, normalizer) == slow.attention(scores, normalizer)).all()


def test_a_parameter_with_unit_jets_times_a_hidden_state_is_the_same_with_either_product():
    # a parameter block's jets are unit vectors: its product with a hidden state goes entry by entry
    p = BIG_PRIMES[0]
    rng = np.random.default_rng(25)
    for truncation, directions in [(7, 30), (30, 40)]:
        fast = ModSeriesDomain(p, truncation, directions=directions)
        slow = ModSeriesDomain(p, truncation, directions=directions, schoolbook=True)
        coefficients = rng.integers(0, p, size=(3, 2, 1, truncation))
        coefficients[..., 0] = 0  # eps Qt, as along the collapse curve
        parameter = fast.from_coefficients(coefficients, tangent_index=np.arange(6).reshape(3, 2) + 20)
        parameter[1, 0, 0, 5, 2] = 7  # a jet at a higher power, with another coefficient
        hidden = rng.integers(0, p, size=(2, 4, 5, 1 + directions, truncation))
        assert (fast.matmul(parameter, hidden) == slow.matmul(parameter, hidden)).all()


@pytest.mark.parametrize("p", [BIG_PRIMES[1], 101])
def test_pivots_and_inverse_across_panels_of_columns(p):
    # sizes beyond one panel of 32 columns: the columns after a panel are updated by one product;
    # the pivots are those of the column-by-column elimination (first nonzero entry of each column)
    rng = np.random.default_rng(26)

    def column_by_column(M):
        W, order, rows, cols, r = M % p, list(range(M.shape[0])), [], [], 0
        for j in range(W.shape[1]):
            nonzero = [i for i in range(r, W.shape[0]) if W[i, j]]
            if r == W.shape[0] or not nonzero:
                continue
            i = nonzero[0]
            W[[r, i]], order[r], order[i] = W[[i, r]], order[i], order[r]
            W[r] = W[r] * pow(int(W[r, j]), -1, p) % p
            W[r + 1:] = (W[r + 1:] - W[r + 1:, j:j + 1] * W[r]) % p
            rows.append(order[r])
            cols.append(j)
            r += 1
        return rows, cols

    for m, n, rank in [(70, 90, 45), (100, 40, 40), (33, 65, 33), (80, 80, 79)]:
        M = matmul_mod(rng.integers(0, p, size=(m, rank)), rng.integers(0, p, size=(rank, n)), p)
        M[:, rng.integers(0, n, size=n // 4)] = 0
        assert pivots(M, p) == column_by_column(M.copy())
        assert rank_mod_p(M, p) == len(column_by_column(M.copy())[0])
    for size in (33, 70):
        square = rng.integers(0, p, size=(size, size))
        assert (matmul_mod(square, inverse_mod_p(square, p), p) == np.eye(size, dtype=int)).all()
    singular = rng.integers(0, p, size=(40, 40))
    singular[:, 35] = 2 * singular[:, 3] % p
    with pytest.raises(ZeroDivisionError):
        inverse_mod_p(singular, p)


# -- the compiled panels of the elimination and the stacked short-series products ------------------------
@pytest.mark.parametrize("p, shape, rank", [(1048573, (300, 260), 90), (268435399, (200, 330), 150),
                                            (101, (150, 150), 150), (1009, (64, 500), 20)])
def test_compiled_panels_give_the_same_pivots_and_matrix(p, shape, rank):
    from symattn.algebra.linalg import elimination
    from symattn.algebra.linalg.engines import _compiled_kernels

    kernels = _compiled_kernels()
    if kernels is None:
        pytest.skip("numba cannot be loaded here")
    rng = np.random.default_rng(rank)
    M = (rng.integers(0, p, size=(shape[0], rank)) @ rng.integers(0, 3, size=(rank, shape[1]))) % p
    M[:, ::7] = 0  # columns without a pivot
    numpy_side, compiled_side = M.copy(), M.copy()
    expected = _numpy_elimination(numpy_side, p)
    assert elimination._eliminate_compiled(compiled_side, p, kernels) == expected
    assert (numpy_side == compiled_side).all()
    assert len(expected[0]) == rank_mod_p(M, p)


def _numpy_elimination(W, p):
    from symattn.algebra.linalg import elimination

    saved = elimination._COMPILED_PANELS_MIN
    elimination._COMPILED_PANELS_MIN = float("inf")
    try:
        return elimination._eliminate(W, p)
    finally:
        elimination._COMPILED_PANELS_MIN = saved


@pytest.mark.parametrize("N", [1, 2, 3])
@pytest.mark.parametrize("p", [1048573, 268435399])
def test_stacked_products_of_short_series_are_the_schoolbook_ones(N, p):
    from symattn.algebra.linalg.series import _stacked_product

    rng = np.random.default_rng(N)
    A = rng.integers(0, p, size=(2, 70, 40, N))
    B = rng.integers(0, p, size=(40, 50, N + 1))
    assert (_stacked_product(A, B, p, N) == series_matmul(A, B, p, N, schoolbook=True)).all()


@pytest.mark.parametrize("p", [1048573, 268435399])
def test_compressing_pieces_equals_compressing_them_stacked(p):
    from symattn.algebra.linalg import compress_row_blocks, compress_row_pieces

    rng = np.random.default_rng(p % 97)
    M = rng.integers(0, p, size=(5 * 6, 7, 3))
    pieces = [M[:6], M[6:18], M[18:]]  # one, two and two blocks of 6 rows

    def streams():
        return [np.random.default_rng([4, b]) for b in range(5)]

    whole = compress_row_blocks(M, 9, p, streams())
    assert (compress_row_pieces(pieces, 9, p, streams()) == whole).all()
    start = rng.integers(0, p, size=(9, 7, 3))
    assert (compress_row_pieces(pieces, 9, p, streams(), out=start.copy()) == (start + whole) % p).all()
