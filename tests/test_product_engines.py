"""The engines of the series products: chosen as documented, and the same residues from each.

The compiled kernels are checked against plain Python integers where their
exactness argument has edges (accumulators past 255 products, primes on
either side of the float64 reduction, operands that are not residues), and
against the schoolbook and BLAS products on the shapes of the series domain
(jets, batches shared or not, jets of different widths).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symattn.algebra.linalg.engines as engines
from symattn.algebra.linalg import (
    PRODUCT_ENGINES,
    jet_matmul,
    product_engine,
    series_matmul,
    series_mul_mod,
    series_multiply,
    series_scale,
)
from symattn.algebra.modseries import ModSeriesDomain
from symattn.model import Architecture
from symattn.spectrum import decay_spectrum

from integer_reference import series_matmul_reference

#: float64 through BLAS/LAPACK: .ci/run runs these again under another OpenBLAS kernel
pytestmark = pytest.mark.blas

P = 268435399  # the largest prime below 2**28
# around the float64 reduction of the kernels (from 2**13 on) and the smallest primes
PRIMES = [2, 3, 8191, 8209, 65521, P]


@pytest.fixture
def without_numba(monkeypatch):
    """The product engines as they are where numba cannot be imported (the kernels not loaded yet)."""
    def refuse():
        raise ModuleNotFoundError("No module named 'numba'")

    monkeypatch.setattr(engines, "_KERNELS", None)
    monkeypatch.setattr(engines, "_import_kernels", refuse)


def test_the_engine_follows_the_environment(monkeypatch):
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK", raising=False)
    for name in PRODUCT_ENGINES:
        monkeypatch.setenv("SYMATTN_PRODUCTS", name)
        assert product_engine() == name
    monkeypatch.setenv("SYMATTN_PRODUCTS", "Compiled ")  # case and spaces do not matter
    assert product_engine() == "compiled"
    monkeypatch.setenv("SYMATTN_SCHOOLBOOK", "1")  # the older switch wins
    assert product_engine() == "schoolbook"
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK")
    monkeypatch.setenv("SYMATTN_PRODUCTS", "auto")
    assert product_engine() == ("compiled" if engines._KERNELS else "blas")


def test_an_unknown_engine_is_refused_with_the_accepted_names(monkeypatch):
    monkeypatch.setenv("SYMATTN_PRODUCTS", "fast")
    with pytest.raises(ValueError, match=r"'fast' names no product engine: give auto, compiled, blas, schoolbook"):
        product_engine()
    with pytest.raises(ValueError, match="'fast'"):
        series_matmul(np.ones((1, 1, 2), dtype=np.int64), np.ones((1, 1, 2), dtype=np.int64), P)


def test_without_numba_auto_stays_on_blas_and_compiled_is_refused(monkeypatch, without_numba):
    monkeypatch.setenv("SYMATTN_PRODUCTS", "auto")
    assert product_engine() == "blas"
    rng = np.random.default_rng(0)
    A, B = rng.integers(0, P, size=(5, 4, 30)), rng.integers(0, P, size=(4, 6, 30))
    assert series_matmul(A, B, P).tolist() == series_matmul_reference(A, B, P, 30)
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    with pytest.raises(ValueError, match="'compiled' needs the compiled kernels, which cannot be loaded here "
                                         r"\(ModuleNotFoundError: No module named 'numba'\): install numba, "
                                         "or set it to auto or blas"):
        product_engine()
    with pytest.raises(ValueError, match="jet_matmul needs the compiled kernels"):
        jet_matmul(np.ones((1, 1, 1, 1, 2), dtype=np.int64), np.ones((1, 1, 1, 1, 2), dtype=np.int64), P)


def test_kernels_that_fail_to_load_for_any_reason_leave_the_products_on_blas(monkeypatch):
    def no_cache():  # what numba raises where no directory may hold its cache
        raise RuntimeError("cannot cache function 'series_matmul_kernel': no locator available")

    monkeypatch.setattr(engines, "_KERNELS", None)
    monkeypatch.setattr(engines, "_import_kernels", no_cache)
    monkeypatch.setattr(engines, "COMPILED_AFTER_WORK", 1)
    monkeypatch.setenv("SYMATTN_PRODUCTS", "auto")
    A = np.arange(4 * 3 * 20).reshape(4, 3, 20)
    B = np.arange(3 * 4 * 20).reshape(3, 4, 20)
    assert series_matmul(A, B, P).tolist() == series_matmul_reference(A, B, P, 20)  # tried, and refused
    assert engines._KERNELS is False and product_engine() == "blas"
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    with pytest.raises(ValueError, match="RuntimeError: cannot cache function"):
        product_engine()


def test_auto_loads_the_kernels_once_the_blas_products_did_enough_work(monkeypatch):
    monkeypatch.setattr(engines, "_KERNELS", None)  # as in a fresh process
    monkeypatch.setattr(engines, "_BLAS_WORK", [0])
    monkeypatch.setattr(engines, "COMPILED_AFTER_WORK", 100_000)
    A = np.ones((4, 3, 20), dtype=np.int64)
    B = np.ones((3, 4, 20), dtype=np.int64)  # 4 * 3 * 4 * 20**2 = 19 200 units of work each
    monkeypatch.setenv("SYMATTN_PRODUCTS", "blas")
    for _ in range(6):
        series_matmul(A, B, P)
    assert engines._KERNELS is None and engines._BLAS_WORK == [0]  # blas asked: nothing counted or loaded
    monkeypatch.setenv("SYMATTN_PRODUCTS", "auto")
    for _ in range(5):
        assert product_engine() == "blas"
        series_matmul(A, B, P)
    assert engines._BLAS_WORK == [96_000] and product_engine() == "blas"
    series_matmul(A, B, P)  # 115 200 units: past the threshold
    assert engines._KERNELS is not None and product_engine() == "compiled"


@pytest.mark.parametrize("p", PRIMES)
def test_compiled_series_products_equal_python_integers(monkeypatch, p):
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    rng = np.random.default_rng(p)
    for m, k, n, la, lb, truncation in [(3, 2, 4, 9, 9, None), (2, 5, 3, 7, 12, 10), (1, 1, 1, 4, 6, 12),
                                        (4, 3, 2, 16, 5, 8), (2, 2, 2, 1, 1, 3)]:
        A, B = rng.integers(0, p, size=(2, m, k, la)), rng.integers(0, p, size=(k, n, lb))
        A[0, :, :, 1::2] = 0  # a series in eps^2 on the scalar side
        N = min(la, lb) if truncation is None else truncation
        product = series_matmul(A, B, p, truncation=truncation)  # B shared by both entries of A
        assert product.shape == (2, m, n, N)
        for entry in range(2):
            assert product[entry].tolist() == series_matmul_reference(A[entry], B, p, N)


@pytest.mark.parametrize("p", [8191, 8209, P])
def test_compiled_accumulators_are_reduced_past_255_products(monkeypatch, p):
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    # (p - 1)^2 in every one of the up to 8 * 64 = 512 products of a coefficient: the largest sums
    A = np.full((2, 8, 64), p - 1, dtype=np.int64)
    B = np.full((8, 3, 64), p - 1, dtype=np.int64)
    assert series_matmul(A, B, p).tolist() == series_matmul_reference(A, B, p, 64)
    values, many = np.full((2, 1, 300), p - 1), np.full((2, 2, 300), p - 1)
    expected = [(t + 1) * (p - 1) ** 2 % p for t in range(300)]  # coefficient t of (sum_i (p - 1) eps^i)^2
    assert series_scale(values, many, p).reshape(-1, 300).tolist() == [expected] * 4


def test_compiled_products_reduce_operands_that_are_not_residues(monkeypatch):
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    rng = np.random.default_rng(3)
    A = rng.integers(-3 * P, 3 * P, size=(3, 2, 11))
    B = rng.integers(-(2**40), 2**40, size=(2, 4, 11))
    assert series_matmul(A, B, P).tolist() == series_matmul_reference(A % P, B % P, P, 11)


def test_compiled_entrywise_products_broadcast_like_the_schoolbook_ones(monkeypatch):
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    rng = np.random.default_rng(4)
    values, many = rng.integers(0, P, size=(1, 3, 1, 13)), rng.integers(0, P, size=(2, 1, 5, 13))
    assert (series_scale(values, many, P) == series_mul_mod(values, many, P)).all()
    a, b = rng.integers(0, P, size=(4, 1, 13)), rng.integers(0, P, size=(3, 13))
    assert (series_multiply(a, b, P) == series_mul_mod(a, b, P)).all()
    assert series_multiply(a, b, P).shape == (4, 3, 13)
    with pytest.raises(ValueError, match="series of one length, got 13 and 12"):
        series_multiply(a, b[:, :12], P)


JET_SHAPES = [
    ((2, 3, 1, 6, 12), (3, 4, 5, 3, 12)),   # a shared by the batch, a wider than b
    ((2, 3, 5, 2, 12), (3, 1, 1, 6, 12)),   # b shared, b wider
    ((2, 3, 5, 6, 12), (3, 2, 5, 6, 12)),
    ((1, 1, 5, 1, 12), (1, 1, 5, 4, 12)),   # a without jets
    ((3, 2, 4, 5, 12), (2, 3, 4, 1, 12)),   # b without jets
]


@pytest.mark.parametrize("a_shape, b_shape", JET_SHAPES)
def test_jet_matmul_equals_the_schoolbook_and_blas_products(monkeypatch, a_shape, b_shape):
    rng = np.random.default_rng(sum(a_shape) + 7 * sum(b_shape))
    a, b = rng.integers(0, P, size=a_shape), rng.integers(0, P, size=b_shape)
    a[..., :2] = 0  # valuations, as along a curve
    b[..., 0, 1::2] = 0  # values in eps^2
    a[:, :, :, 1:][..., ::3, :] = 0  # some jets zero
    expected = ModSeriesDomain(P, 12, directions=5, schoolbook=True).matmul(a, b)
    assert (jet_matmul(a, b, P) == expected).all()
    monkeypatch.setenv("SYMATTN_PRODUCTS", "blas")
    assert (ModSeriesDomain(P, 12, directions=5).matmul(a, b) == expected).all()
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    assert (ModSeriesDomain(P, 12, directions=5).matmul(a, b) == expected).all()


def test_jet_matmul_of_a_parameter_with_unit_jets(monkeypatch):
    # a parameter block: a constant value and one unit jet per entry (few nonzero jet coefficients,
    # taken one at a time), times a dense hidden state of 4 inputs
    rng = np.random.default_rng(11)
    a = np.zeros((2, 3, 1, 7, 12), dtype=np.int64)
    a[..., 0, 1] = rng.integers(1, P, size=(2, 3, 1))  # eps * W
    for row in range(2):
        for col in range(3):
            a[row, col, 0, 1 + row * 3 + col, 1] = 1
    b = rng.integers(0, P, size=(3, 2, 4, 5, 12))
    expected = ModSeriesDomain(P, 12, directions=6, schoolbook=True).matmul(a, b)
    assert (jet_matmul(a, b, P) == expected).all()
    a[0, 0, 0, 1, :] = rng.integers(0, P, size=12)  # one dense jet: the vectorized loop for that entry
    assert (jet_matmul(a, b, P) == ModSeriesDomain(P, 12, directions=6, schoolbook=True).matmul(a, b)).all()


def test_products_of_no_terms_are_zero(monkeypatch):
    monkeypatch.setenv("SYMATTN_PRODUCTS", "compiled")
    assert series_matmul(np.zeros((2, 0, 5), dtype=np.int64), np.zeros((0, 3, 5), dtype=np.int64), P).tolist() == \
        [[[0] * 5] * 3] * 2
    assert series_matmul(np.zeros((0, 2, 5), dtype=np.int64), np.ones((2, 3, 5), dtype=np.int64), P).shape == (0, 3, 5)
    product = jet_matmul(np.zeros((2, 0, 1, 1, 5), dtype=np.int64), np.zeros((0, 3, 4, 2, 5), dtype=np.int64), P)
    assert product.shape == (2, 3, 4, 2, 5) and not product.any()


def test_jet_matmul_refuses_shapes_that_do_not_fit():
    a = np.zeros((2, 3, 4, 2, 8), dtype=np.int64)
    with pytest.raises(ValueError, match=r"jet_matmul multiplies \(r, k, batch, width, N\) by \(k, c, batch, width, N\), "
                                         r"got \(2, 3, 4, 2, 8\) and \(2, 3, 4, 2, 8\)"):
        jet_matmul(a, a, P)
    with pytest.raises(ValueError, match="got"):  # batches 4 and 3
        jet_matmul(a, np.zeros((3, 2, 3, 2, 8), dtype=np.int64), P)
    with pytest.raises(ValueError, match=r"primes below 2\*\*28 \(1 < p < 268435456\), got 2147483647"):
        jet_matmul(a, np.zeros((3, 2, 4, 2, 8), dtype=np.int64), 2**31 - 1)


def test_a_spectrum_is_the_same_on_every_engine(monkeypatch):
    arch = Architecture.uniform(layers=3, width=2, rank=1, tokens=3)
    results = {}
    for name in PRODUCT_ENGINES:
        monkeypatch.setenv("SYMATTN_PRODUCTS", name)
        results[name] = decay_spectrum(arch, progress=False)
    assert results["compiled"].to_json() == results["blas"].to_json() == results["schoolbook"].to_json()
    assert results["compiled"].exponents == {0: 4, 1: 3, 5: 3, 17: 3}


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_products_are_the_same_on_every_engine(data):
    """Random shapes, broadcast leading axes, truncations, sparsity and primes: compiled = blas = schoolbook."""
    draw = data.draw
    p = draw(st.sampled_from([2, 5, 8191, 8209, 1048573, P]))
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    la, lb = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    truncation = draw(st.one_of(st.none(), st.integers(1, 30)))
    lead_a, lead_b = draw(st.sampled_from([((), ()), ((3,), ()), ((), (2,)), ((2, 1), (1, 3)), ((2,), (2,))]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    A = rng.integers(0, p, size=(*lead_a, m, k, la))
    B = rng.integers(0, p, size=(*lead_b, k, n, lb))
    stride = draw(st.integers(1, 3))  # series in eps^stride on either side, as along a curve
    A[..., np.arange(la) % stride != 0] = 0
    if draw(st.booleans()):
        B[..., :draw(st.integers(0, lb))] = 0  # a valuation
    products = {}
    for engine in PRODUCT_ENGINES:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SYMATTN_PRODUCTS", engine)
            products[engine] = series_matmul(A, B, p, truncation=truncation)
    assert (products["compiled"] == products["schoolbook"]).all()
    assert (products["blas"] == products["schoolbook"]).all()


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_jet_products_equal_the_schoolbook_domain(data):
    """Random matrices of jets (batches shared or not, widths, sparse jets): jet_matmul = schoolbook."""
    draw = data.draw
    p = draw(st.sampled_from([3, 8209, P]))
    r, k, c = (draw(st.integers(1, 3)) for _ in range(3))
    batch = draw(st.integers(1, 3))
    batch_a, batch_b = draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    width_a, width_b, N = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 14))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(0, p, size=(r, k, batch_a, width_a, N))
    b = rng.integers(0, p, size=(k, c, batch_b, width_b, N))
    a[..., 1:, :] *= rng.random(a[..., 1:, :].shape) < draw(st.sampled_from([0.05, 0.5, 1.0]))  # sparse jets
    b[..., 0, :] *= np.arange(N) % draw(st.integers(1, 3)) == 0  # values in eps^g
    directions = max(width_a, width_b) - 1
    expected = ModSeriesDomain(p, N, directions=directions, schoolbook=True).matmul(a, b)
    assert (jet_matmul(a, b, p) == expected).all()
