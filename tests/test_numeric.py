"""Numerical sensitivity: jets in float64 and mpmath, slopes against the exact spectrum.

Every claim is checked against an independent computation:

- the jet Jacobian against exact derivatives of the sympy closed form, and
  against central finite differences of the plain mpmath forward pass;
- float64 jets against mpmath jets;
- mpmath slopes of ``log sigma_j`` against the exact series spectrum of
  :func:`symattn.spectrum.decay_spectrum` and the public worked examples
  (MATH.md section 5);
- the float64 numerical rank against the exact rank (float64 loses layer 3).
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from symattn.algebra.domains import MpmathDomain
from symattn.errors import BankError, DomainError, ShapeError, SymattnError
from symattn.model import Architecture, closed_form, forward
from symattn.normalizers import Normalizer
from symattn.numeric import (
    NumericJetDomain,
    Sensitivity,
    fit_slopes,
    numeric_jacobian,
    sensitivity,
    singular_values,
)
from symattn.spectrum import decay_spectrum

#: float64 through BLAS/LAPACK: .ci/run runs these again under another OpenBLAS kernel
pytestmark = pytest.mark.blas


def _expand(histogram: dict) -> list[int]:
    return [e for e, m in sorted(histogram.items()) for _ in range(m)]


def _random_point(arch, seed, bank_size):
    rng = np.random.default_rng(seed)
    params = [Fraction(int(v), 7) for v in rng.integers(-9, 10, size=arch.param_count)]
    bank = [[[Fraction(int(v), 5) for v in row] for row in rng.integers(-6, 7, size=arch.input_shape)]
            for _ in range(bank_size)]
    return params, bank


def _max_relative(A, B, dps=60) -> float:
    with mpmath.workdps(dps):
        A = np.asarray(A, dtype=object)
        B = np.asarray(B, dtype=object)
        scale = max(abs(mpmath.mpf(v)) for v in B.ravel())
        return float(max(abs(mpmath.mpf(a) - mpmath.mpf(b)) for a, b in zip(A.ravel(), B.ravel())) / scale)


# -- the jet domain --------------------------------------------------------------------
def test_jet_domain_scalar_rules():
    D = NumericJetDomain("float64", directions=2)
    a = D.variable(0.5, 0)
    b = D.variable(2.0, 1)
    product = D.matmul(a[None, None, :], b[None, None, :])[0, 0]
    assert product.tolist() == [1.0, 2.0, 0.5]                      # d(ab) = b da + a db
    assert D.reciprocal(b).tolist() == [0.5, 0.0, -0.25]            # d(1/b) = -db / b^2
    s = D.normalizer_value(Normalizer("1 + x**2"), a)
    assert s.tolist() == [1.25, 1.0, 0.0]                           # d(1 + a^2) = 2a da
    M = NumericJetDomain("mpmath", dps=40, directions=1)
    e = M.normalizer_value(Normalizer.preset("cosh"), M.variable("1/3", 0))
    with mpmath.workdps(40):
        assert abs(e[0] - mpmath.cosh(mpmath.mpf(1) / 3)) < mpmath.mpf(10) ** -38
        assert abs(e[1] - mpmath.sinh(mpmath.mpf(1) / 3)) < mpmath.mpf(10) ** -38


def test_attention_columns_sum_to_one_and_tangents_to_zero():
    D = NumericJetDomain("float64", directions=4)
    A = D.matrix([[0.1, -0.3], [0.2, 0.4]], first_direction=0)
    W = D.attention(A, Normalizer.preset("softmax"))
    assert np.allclose(W[..., 0].sum(axis=0), 1.0, atol=1e-15)
    assert np.allclose(W[..., 1:].sum(axis=0), 0.0, atol=1e-15)


def test_forward_values_match_float_domain():
    from symattn.algebra.domains import FloatDomain

    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
    params, bank = _random_point(arch, 4, 1)
    P = arch.parameters_from_flat(params)
    jets = forward(arch, P, bank[0], NumericJetDomain("float64", directions=3))
    plain = forward(arch, P, bank[0], FloatDomain()).astype(float)
    assert jets.shape == (2, 3, 4) and not jets[..., 1:].any()
    assert np.allclose(jets[..., 0], plain, rtol=1e-14, atol=0)


def test_jacobian_matches_exact_closed_form_derivatives():
    # polynomial normalizer: the closed form is rational, its derivatives exact
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="quadratic")
    params, bank = _random_point(arch, 1, 1)
    eps = Fraction(1, 3)
    F = closed_form(arch)
    symbols = arch.symbols().flat()
    X = arch.input_symbols()
    point = {}
    for (name, _, _, _), symbol, value in zip(arch.parameter_index(), symbols, params):
        point[symbol] = sp.Rational(value.numerator, value.denominator) * (
            sp.Rational(1, 3) if name in "QK" else 1)
    point.update({X[r, c]: sp.Rational(bank[0][r][c].numerator, bank[0][r][c].denominator)
                  for r in range(X.rows) for c in range(X.cols)})
    exact = [[sp.diff(F[r, c], s).subs(point) for s in symbols] for r in range(F.rows) for c in range(F.cols)]
    J = numeric_jacobian(arch, params, bank, eps, "mpmath", 50)
    with mpmath.workdps(50):
        error = max(abs(J[i, j] - mpmath.mpf(sp.N(exact[i][j], 60)))
                    for i in range(J.shape[0]) for j in range(J.shape[1]))
    assert error < mpmath.mpf(10) ** -45


@pytest.mark.parametrize("layers, normalizer", [(2, "softmax"), (2, "cosh")])
def test_jacobian_matches_mpmath_finite_differences(layers, normalizer):
    # an independent route: the plain MpmathDomain forward pass, central differences, h = 1e-30
    arch = Architecture.uniform(layers=layers, width=2, rank=1, tokens=3, normalizer=normalizer)
    params, bank = _random_point(arch, 2, 2)
    eps = Fraction(1, 2)
    dps = 90
    J = numeric_jacobian(arch, params, bank, eps, "mpmath", dps)
    domain = MpmathDomain(dps=dps)
    with mpmath.workdps(dps):
        base = [mpmath.mpf(v.numerator) / v.denominator for v in params]
        scaled = [v * (mpmath.mpf(eps.numerator) / eps.denominator if name in "QK" else 1)
                  for v, (name, _, _, _) in zip(base, arch.parameter_index())]
        h = mpmath.mpf(10) ** -30
        columns = []
        for j in range(arch.param_count):
            up, down = list(scaled), list(scaled)
            up[j] += h
            down[j] -= h
            rows = []
            for X in bank:
                plus = forward(arch, arch.parameters_from_flat(up), X, domain)
                minus = forward(arch, arch.parameters_from_flat(down), X, domain)
                rows.extend(((plus - minus) / (2 * h)).ravel().tolist())
            columns.append(rows)
        reference = np.array(columns, dtype=object).T
    assert _max_relative(J, reference, dps) < 1e-50


@pytest.mark.parametrize("layers, normalizer", [(2, "softmax"), (2, "cosh"), (3, "softmax")])
def test_float64_jets_agree_with_mpmath_at_half(layers, normalizer):
    arch = Architecture.uniform(layers=layers, width=2, rank=1, tokens=3, normalizer=normalizer)
    params, bank = _random_point(arch, 3, 4)
    J64 = numeric_jacobian(arch, params, bank, "0.5", "float64")
    Jmp = numeric_jacobian(arch, params, bank, "0.5", "mpmath", 40)
    assert J64.dtype == np.float64 and J64.shape == Jmp.shape == (6 * 4, arch.param_count)
    assert _max_relative(J64.tolist(), Jmp) < 1e-10


# -- slopes against the exact spectrum: the two-ways check ------------------------------
@pytest.mark.parametrize("layers, normalizer, published, kernel", [
    (1, "softmax", {0: 4, 1: 3}, 1),
    (2, "softmax", {0: 4, 1: 3, 5: 3}, 6),
    (2, "cosh", {0: 4, 3: 3, 11: 3}, 6),
])
def test_mpmath_slopes_reproduce_exact_exponents(layers, normalizer, published, kernel):
    arch = Architecture.uniform(layers=layers, width=2, rank=1, tokens=3, normalizer=normalizer)
    exact = decay_spectrum(arch, progress=False)
    assert exact.exponents == published and exact.kernel == kernel  # MATH.md section 5
    result = sensitivity(arch, seed=0)
    rank = arch.param_count - kernel
    slopes = [round(s) for s in result.mpmath_slopes[:rank]]
    assert slopes == _expand(exact.exponents) == _expand(published)
    assert all(abs(s - e) < 0.1 for s, e in zip(result.mpmath_slopes, _expand(published)))
    assert result.recovered is True
    # the kernel is numerically zero at every eps: mpmath's rank is the exact rank
    assert result.mpmath_ranks == (rank,) * len(result.eps)
    assert result.eps == (0.01, 0.001, 0.0001, 1e-05)
    assert result.dps == max(published) * 5 + 30


def test_another_seed_and_given_bank_recover_the_same_exponents():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
    exact = decay_spectrum(arch, progress=False)
    _, bank = _random_point(arch, 5, exact.bank)
    result = sensitivity(arch, seed=7, bank=bank, eps_values=["1e-2", "1e-3", "1e-4"], spectrum=exact)
    assert [round(s) for s in result.mpmath_slopes[:exact.rank]] == [0, 0, 0, 0, 1, 1, 1, 5, 5, 5]
    assert result.bank == exact.bank and result.dps == 5 * 4 + 30


def test_too_small_bank_is_not_recovered():
    # one input cannot separate: fewer nonzero singular values than the exact rank
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
    result = sensitivity(arch, bank=1, eps_values=["0.01", "0.001"])
    assert result.recovered is False
    assert max(result.mpmath_ranks) < result.exact_rank == 10


# -- float64 loses the deep layers -------------------------------------------------------
def test_float64_rank_at_tenth_underestimates_exact_rank_three_layers():
    arch = Architecture.uniform(layers=3, width=2, rank=1, tokens=3, normalizer="softmax")
    exact = decay_spectrum(arch, progress=False)
    assert exact.rank == 13 and exact.exponents == {0: 4, 1: 3, 5: 3, 17: 3}
    rng = np.random.default_rng(0)
    params = rng.standard_normal(arch.param_count).tolist()
    bank = [rng.standard_normal(arch.input_shape).tolist() for _ in range(exact.bank)]
    J64 = numeric_jacobian(arch, params, bank, "0.1", "float64")
    # The three order-17 singular values sit near 1e-19..1e-24 of the largest, far below
    # numpy's default tolerance (~1e-13 of it); the order-5 ones near 1e-5 of it, far above.
    # Round-off on any BLAS kernel is about 1e-16 of the largest, 1000x below the tolerance:
    # float64 sees the value map and layers 1-2 (4 + 3 + 3) on every machine, i.e. it
    # UNDERESTIMATES the rank.
    assert np.linalg.matrix_rank(J64) == 10 < exact.rank
    Jmp = numeric_jacobian(arch, params, bank, "0.1", "mpmath", 60)
    with mpmath.workdps(60):
        sigma = singular_values(Jmp, "mpmath", 60)
        assert sum(1 for s in sigma if s > sigma[0] * mpmath.mpf(10) ** -40) == exact.rank


def test_sensitivity_reports_float64_losses():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="cosh")
    result = sensitivity(arch)
    # order 11 at eps <= 1e-2 sits below 1e-22 of the top singular value: lost on every machine;
    # order 3 at eps = 1e-5 sits near 1e-15 of it, at float64's round-off: lost or not, by machine,
    # so it is not asserted.  At eps = 1e-2 order 3 sits near 1e-6 (kept) and order 11 below 1e-22.
    assert result.float64_lost.count(11) == 3 and 0 not in result.float64_lost
    assert [round(s) for s in result.float64_slopes[:4]] == [0, 0, 0, 0]  # O(1) values: slopes within 1e-10 of 0
    # float64 sees round-off noise where the slope is 11: noise does not scale with eps, so its fitted
    # slope is some value near 0 that differs by machine; to look like 11 the noise would have to fall
    # by 10^33 over three decades of eps.  Half of 11 is the bound.
    assert all(abs(s) < 5.5 for s in result.float64_slopes[7:10])
    assert result.float64_resolved[0] == 7 < result.exact_rank == 10
    assert result.float64_rank_eps == 0.1 and result.float64_rank_estimate < result.exact_rank


# -- reports -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def one_layer() -> Sensitivity:
    return sensitivity(Architecture.uniform(layers=1), eps_values=["0.01", "0.001", "0.0001"])


def test_report_formats(one_layer):
    data = json.loads(json.dumps(one_layer.to_json()))
    assert data["exact_spectrum"] == {"0": 4, "1": 3} and data["kernel"] == 1
    assert data["recovered"] is True and data["float64_lost"] == []
    assert "estimate" in data["float64_rank_estimate_note"]
    assert len(data["mpmath_singular_values"]) == 3 and len(data["mpmath_singular_values"][0]) == 8
    text = str(one_layer)
    assert "rank estimate" in text and "kernel" in text and "recovered: yes" in text
    latex = one_layer.to_latex()
    # a header and one row per singular value (8), across pages; the notes and the method after it
    assert latex.startswith(r"\begin{longtable}{rrrr}") and latex.count(r"\\") == 9
    assert "8 & kernel & " in latex and r"\textit{Method:} forward-mode jets" in latex
    assert r"$\varepsilon = 10^{-2}, 10^{-3}, 10^{-4}$" in latex
    assert one_layer.to_latex(standalone=True).startswith(r"\documentclass")
    assert one_layer._repr_latex_().startswith("$$") and r"\text{kernel}" in one_layer._repr_latex_()
    with pytest.raises(dataclasses.FrozenInstanceError):
        one_layer.dps = 3


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_plot_writes_png(one_layer, tmp_path):
    path = tmp_path / "slopes.png"
    assert one_layer.plot(str(path)) == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_fit_slopes_exact_power_laws():
    eps = [Fraction(1, 10), Fraction(1, 100), Fraction(1, 1000)]
    sigmas = [[3, 2 * float(e) ** 5, 0.0] for e in eps]
    slopes = fit_slopes(eps, sigmas)
    assert abs(slopes[0]) < 1e-12 and abs(slopes[1] - 5) < 1e-12 and np.isnan(slopes[2])


# -- errors ------------------------------------------------------------------------------
def test_errors_name_the_bad_value():
    arch = Architecture.uniform(layers=1)
    with pytest.raises(DomainError, match="float64' or 'mpmath"):
        NumericJetDomain("float32")
    with pytest.raises(DomainError, match="generic"):
        NumericJetDomain("float64", directions=1).apply_normalizer(
            np.zeros((1, 1, 2)), Normalizer.generic(k=1))
    with pytest.raises(BankError, match="2 x 3"):
        numeric_jacobian(arch, [0] * 8, [[[1, 2], [3, 4]]], "0.1")
    with pytest.raises(ShapeError, match="8 parameter values"):
        numeric_jacobian(arch, [0] * 7, [[[1, 2, 3], [3, 4, 5]]], "0.1")
    with pytest.raises(SymattnError, match="dps >= 81"):
        sensitivity(Architecture.uniform(layers=3), dps=60)
    with pytest.raises(SymattnError, match="too few"):
        sensitivity(Architecture.uniform(layers=2), eps_values=["1e-2", "1e-8"], dps=40)
    with pytest.raises(SymattnError, match="not the collapse-curve spectrum"):
        sensitivity(arch, spectrum=decay_spectrum(Architecture.uniform(layers=2), progress=False))
    with pytest.raises(SymattnError, match="positive"):
        sensitivity(arch, eps_values=["0.1", "-0.1"])
