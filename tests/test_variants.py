"""Multi-head attention, causal masking and residual streams through the analyses.

Every variant is checked two independent ways where possible:

- the one forward pass against a naive pure-Python reference written here, on
  exact rationals, GF(p), sympy and mpmath;
- the exact decay spectrum (Smith valuations over GF(p)[[eps]]) against the
  slopes of mpmath singular values;
- the certified dimension against the float64 rank of the Jacobian at a random
  real point, with a clear gap in its singular values;
- the kernel of the native Jacobian against the derived symmetry orbit
  (one GL(a_i) per head; GL(d_i) per hidden layer only without a residual
  stream), and the derived symmetries against the exact output (hypothesis over
  the rationals).

One head, no mask and no residual stream is the plain model: its results are
those of the regression fixtures (tests/test_regression.py) and are compared
here with an explicitly plain Architecture.
"""

from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from symattn.algebra.domains import MpmathDomain, PrimeFieldDomain, RationalDomain, SympyDomain
from symattn.algebra.modseries import ModSeriesDomain
from symattn.cli import main
from symattn.effective import (
    flip_preserves_output,
    gauge_action,
    gauge_dimension,
    head_permutation,
    head_permutation_order,
    hidden_gauge_layers,
    sign_flip,
    sign_group_order,
)
from symattn.errors import ShapeError
from symattn.identify import function_space_dimension, generic_fiber, identification_orders
from symattn.jacobian import block_columns, parameter_columns, random_point, symmetry_orbit_bound
from symattn.model import Architecture, Parameters, closed_form, forward
from symattn.normalizers import Normalizer
from symattn.numeric import sensitivity
from symattn.spectrum import decay_spectrum, predicted_spectrum

HYPOTHESIS = settings(max_examples=15, deadline=None, database=None,
                      phases=(Phase.explicit, Phase.generate),
                      suppress_health_check=[HealthCheck.too_slow])

EVEN = "1 + x**2"          # even, k = 2
ODD = "1 + x + x**2"       # positive on R, not even, k = 1


# -- a naive reference, written independently of symattn.model ------------------------
def naive_forward(arch: Architecture, params: Parameters, X, s):
    """Lists of Fractions; ``s`` a Python function. Heads summed, mask j <= k, residual added."""
    def matmul(a, b):
        return [[sum((a[r][k] * b[k][c] for k in range(len(b))), Fraction(0)) for c in range(len(b[0]))]
                for r in range(len(a))]

    def transpose(a):
        return [list(col) for col in zip(*a)]

    hidden = [[Fraction(v) for v in row] for row in X]
    t = len(hidden[0])
    unit = 0
    for i in range(arch.layers):
        total = None
        for _ in range(arch.heads[i]):
            Q, K, V = (np.array(m, dtype=object).tolist() for m in (params.Q[unit], params.K[unit], params.V[unit]))
            scores = matmul(transpose(matmul(K, hidden)), matmul(Q, hidden))
            weights = [[Fraction(0)] * t for _ in range(t)]
            for k in range(t):
                keys = range(k + 1) if arch.causal else range(t)
                column = {j: s(scores[j][k]) for j in keys}
                norm = sum(column.values())
                for j in keys:
                    weights[j][k] = column[j] / norm
            head = matmul(matmul(V, hidden), weights)
            total = head if total is None else [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(total, head)]
            unit += 1
        hidden = [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(hidden, total)] if arch.residual else total
    return hidden


def quadratic(x):
    return 1 + x * x


def rand_params(arch: Architecture, rng: random.Random, size: int = 3) -> Parameters:
    def entry():
        return Fraction(rng.randint(-size, size), rng.randint(1, 3))
    return arch.parameters_from_blocks({key: [[entry() for _ in range(c)] for _ in range(r)]
                                        for key, (r, c) in arch.blocks()})


def rand_input(arch: Architecture, rng: random.Random, size: int = 3) -> list:
    d0, t = arch.input_shape
    return [[Fraction(rng.randint(-size, size), rng.randint(1, 2)) for _ in range(t)] for _ in range(d0)]


def exact(arch, params, X):
    return [list(row) for row in forward(arch, params, X, RationalDomain()).tolist()]


VARIANTS = {
    "heads": dict(heads=2),
    "causal": dict(causal=True),
    "residual": dict(residual=True),
    "heads+causal": dict(heads=2, causal=True),
    "all three": dict(heads=[1, 2], causal=True, residual=True),
}


# -- the architecture ------------------------------------------------------------------------
def test_parameter_layout_per_layer_per_head():
    arch = Architecture([2, 2, 2], [1, 1], heads=[2, 1])
    assert arch.units() == [(1, 1), (1, 2), (2, 1)]
    assert [key for key, _ in arch.blocks()] == [
        ("Q", 1, 1), ("K", 1, 1), ("V", 1, 1), ("Q", 1, 2), ("K", 1, 2), ("V", 1, 2), ("Q", 2), ("K", 2), ("V", 2)]
    assert arch.param_count == 24
    assert parameter_columns(arch)[("V", 1, 2)] == [12, 13, 14, 15]  # head 1: Q 0-1, K 2-3, V 4-7
    assert list(block_columns(arch)) == ["scores:1:1", "scores:1:2", "scores:2", "values"]
    assert block_columns(arch)["scores:1:2"] == [8, 9, 10, 11]
    symbols = arch.symbols()
    assert str(symbols.Q[1]) == "Matrix([[Q1h2_11, Q1h2_12]])" and str(symbols.Q[2]) == "Matrix([[Q2_11, Q2_12]])"
    assert arch.parameters_from_flat(range(24)).V[1] == [[12, 13], [14, 15]]
    assert arch.block_label(("K", 1, 2)) == "K_{1,2}" and arch.block_label(("K", 2)) == "K_2"


def test_plain_keywords_give_todays_architecture():
    plain = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    spelled = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=1, causal=False, residual=False)
    assert spelled.is_plain
    assert spelled.to_json() == plain.to_json() and "heads" not in plain.to_json()
    assert spelled.describe() == plain.describe() == ("2 layer(s), widths [2, 2, 2], score ranks [1, 1], "
                                                      "3 tokens, normalizer softmax")
    assert repr(spelled) == repr(plain)
    assert spelled.parameter_index() == plain.parameter_index()
    assert spelled.parameter_index()[0] == ("Q", 1, 0, 0)
    assert gauge_dimension(spelled) == 6 and sign_group_order(spelled) == 1


def test_variant_json_and_description():
    arch = Architecture.uniform(layers=2, heads=[1, 3], causal=True, residual=True)
    data = arch.to_json()
    assert (data["heads"], data["causal"], data["residual"]) == ([1, 3], True, True)
    assert arch.describe().endswith("normalizer softmax, heads [1, 3], causal mask, residual stream")
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize("kwargs, message", [
    (dict(heads=0), "heads must be a positive integer (the same for every layer) or a list of 2 positive "
                    "integers (one per layer); got 0"),
    (dict(heads=[1, 2, 3]), "got 3 entries: [1, 2, 3]"),
    (dict(heads=1.5), "got float 1.5"),
    (dict(heads=[1, True]), "got [1, True]"),
    (dict(causal="yes"), "causal must be True or False, got str 'yes'"),
    (dict(residual=1), "residual must be True or False, got int 1"),
])
def test_variant_validation_names_the_bad_value(kwargs, message):
    with pytest.raises(ShapeError) as err:
        Architecture([2, 2, 2], [1, 1], **kwargs)
    assert message in str(err.value)


def test_residual_needs_equal_widths():
    with pytest.raises(ShapeError, match=r"layer 2 maps width 3 to width 2 \(widths \[3, 3, 2\]\)"):
        Architecture([3, 3, 2], [1, 1], residual=True)
    assert Architecture([3, 3, 2], [1, 1]).layers == 2  # fine without a residual stream


def test_parameters_from_counts_heads():
    arch = Architecture.uniform(layers=1, width=1, heads=2)
    with pytest.raises(ShapeError, match=r"Q needs 2 matrices \(one per head: heads \[2\]\), got 1"):
        arch.parameters_from([[[1]]], [[[1]]], [[[1]]])
    with pytest.raises(ShapeError, match=r"K_\{1,2\} must be 1 x 1, got shape \(1, 2\)"):
        arch.parameters_from([[[1]], [[1]]], [[[1]], [[1, 2]]], [[[1]], [[1]]])


# -- the one forward pass --------------------------------------------------------------------
@pytest.mark.parametrize("name", list(VARIANTS))
def test_forward_matches_the_naive_reference_on_every_exact_domain(name):
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer=EVEN, **VARIANTS[name])
    rng = random.Random(11)
    p = 2**31 - 1
    for _ in range(3):
        params, X = rand_params(arch, rng), rand_input(arch, rng)
        reference = naive_forward(arch, params, X, quadratic)
        assert exact(arch, params, X) == reference
        modular = forward(arch, params, X, PrimeFieldDomain(p))
        assert [[int(v) for v in row] for row in modular.tolist()] == [
            [v.numerator * pow(v.denominator, -1, p) % p for v in row] for row in reference]
        with mpmath.workdps(60):
            numeric = forward(arch, params, X, MpmathDomain(dps=60))
            assert max(abs(numeric[r, c] - mpmath.mpf(v.numerator) / v.denominator)
                       for r, row in enumerate(reference) for c, v in enumerate(row)) < mpmath.mpf(10) ** -50


def test_closed_form_of_a_causal_residual_head_by_hand():
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax", causal=True,
                                residual=True)
    F = closed_form(arch)
    Q, K, V, x1, x2 = sp.symbols("Q1_11 K1_11 V1_11 x_11 x_12", real=True)
    a12, a22 = K * Q * x1 * x2, K * Q * x2 * x2
    # token 1 attends to itself only; token 2 to both, softmax over keys 1 and 2
    expected = sp.Matrix([[x1 + V * x1,
                           x2 + V * (x1 * sp.exp(a12) + x2 * sp.exp(a22)) / (sp.exp(a12) + sp.exp(a22))]])
    assert (F - expected).applyfunc(sp.simplify) == sp.zeros(1, 2)


def test_masked_weights_are_exact_zeros_and_columns_sum_to_one():
    scores = [[sp.Symbol("a"), sp.Symbol("b"), 1], [2, sp.Symbol("c"), 0], [0, 1, sp.Symbol("d")]]
    weights = SympyDomain().attention(SympyDomain().matrix(scores), Normalizer("softmax"), causal=True)
    for j, k in itertools.product(range(3), repeat=2):
        if j > k:
            assert weights[j, k] is sp.S.Zero
    assert [sp.simplify(sum(weights[:, k])) for k in range(3)] == [1, 1, 1]
    assert weights[0, 0] == 1
    # the same mask on series with jets: masked values and derivatives are zero
    domain = ModSeriesDomain(101, 4, directions=2)
    coefficients = np.zeros((3, 3, 1, 4), dtype=np.int64)
    coefficients[..., 1] = np.arange(9).reshape(3, 3, 1) + 1
    series = domain.from_coefficients(coefficients, tangent_index=np.arange(9).reshape(3, 3) % 2)
    masked = domain.attention(series, Normalizer("softmax"), causal=True)
    assert not masked[np.tril_indices(3, -1)].any()
    sums = domain.coefficients(masked).sum(axis=0) % 101
    assert (sums[..., 0] == 1).all() and not sums[..., 1:].any()


@pytest.mark.slow  # sympy series of every entry
def test_series_and_jets_agree_with_sympy_expansions():
    # F(eps X) with a polynomial normalizer is a rational function of eps: its sympy series against the
    # exact series engine (flint rationals), and its derivative in one parameter against the jets mod p
    from symattn.algebra.exactseries import RationalSeriesDomain
    from symattn.curves import input_scaling
    from symattn.jacobian import jacobian_series, series_output

    arch = Architecture([1, 1, 1], [1, 1], tokens=2, normalizer=EVEN, heads=[2, 1], causal=True, residual=True)
    rng = random.Random(2)
    values = {key: [[rng.randint(1, 5) for _ in range(c)] for _ in range(r)] for key, (r, c) in arch.blocks()}
    X, N, p = [[2, -3]], 6, 268435399
    eps, v = sp.symbols("eps v")
    target = ("V", 1, 2)
    symbolic = {**values, target: [[v]]}
    params = arch.parameters_from_blocks({key: sp.Matrix(m) for key, m in symbolic.items()})
    F = forward(arch, params, sp.Matrix(X) * eps, SympyDomain())
    at = {v: values[target][0][0]}
    point = {key: np.array(m, dtype=object) for key, m in values.items()}
    series = series_output(arch, input_scaling(), point, np.array([X], dtype=object), RationalSeriesDomain(N))
    J = jacobian_series(arch, input_scaling(), np.array([X], dtype=np.int64),
                        {key: np.array(m, dtype=np.int64) for key, m in values.items()}, p, N)
    column = parameter_columns(arch)[target][0]
    for c in range(2):
        expansion = sp.series(F[0, c].subs(at), eps, 0, N).removeO()
        assert [sp.Rational(str(series[0, c, 0, n])) for n in range(N)] == [expansion.coeff(eps, n) for n in range(N)]
        derivative = sp.series(sp.diff(F[0, c], v).subs(at), eps, 0, N).removeO()
        expected = [derivative.coeff(eps, n) for n in range(N)]
        assert any(expected)
        assert J[c, column].tolist() == [int(e.p) * pow(int(e.q), -1, p) % p for e in expected]


# -- symmetries, exactly over Q -------------------------------------------------------------
def rational_matrix(rng: random.Random, n: int) -> sp.Matrix:
    while True:
        M = sp.Matrix(n, n, [sp.Rational(rng.randint(-3, 3), rng.randint(1, 3)) for _ in range(n * n)])
        if M.det() != 0:
            return M


@st.composite
def instance(draw, arch):
    # one drawn seed per example: the rationals come from it (small examples for hypothesis)
    rng = random.Random(draw(st.integers(0, 10**9)))
    params, X = rand_params(arch, rng), rand_input(arch, rng)
    G = [rational_matrix(rng, arch.score_ranks[i - 1]) for i, _ in arch.units()]
    H = [rational_matrix(rng, arch.widths[i]) for i in hidden_gauge_layers(arch)]
    return params, X, G, H


SYMMETRY_ARCHS = [
    Architecture([2, 3, 2], [2, 1], tokens=3, normalizer=ODD, heads=[2, 2]),
    Architecture([2, 2, 2], [1, 2], tokens=3, normalizer=ODD, heads=[3, 1], causal=True),
    Architecture([2, 2, 2], [2, 1], tokens=3, normalizer=ODD, heads=[1, 2], causal=True, residual=True),
    Architecture([2, 2, 2], [1, 1], tokens=2, normalizer=ODD, residual=True),
]


@HYPOTHESIS
@given(data=st.data())
def test_the_derived_gauge_leaves_the_output_unchanged(data):
    for arch in SYMMETRY_ARCHS:
        params, X, G, H = data.draw(instance(arch))
        moved = gauge_action(params, G, H, arch)
        assert exact(arch, moved, X) == exact(arch, params, X)


@HYPOTHESIS
@given(data=st.data())
def test_head_permutations_leave_the_output_unchanged(data):
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer=ODD, heads=[3, 2], causal=True, residual=True)
    params, X, _, _ = data.draw(instance(arch))
    layer = data.draw(st.sampled_from([1, 2]))
    order = data.draw(st.permutations(range(1, arch.heads[layer - 1] + 1)))
    assert exact(arch, head_permutation(arch, params, layer, order), X) == exact(arch, params, X)


@HYPOTHESIS
@given(data=st.data())
def test_per_head_sign_flips_of_an_even_normalizer(data):
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer=EVEN, heads=[2, 1], causal=True, residual=True)
    params, X, _, _ = data.draw(instance(arch))
    heads = data.draw(st.sets(st.integers(1, 3), min_size=1))
    assert flip_preserves_output(arch, heads)
    assert exact(arch, sign_flip(params, heads), X) == exact(arch, params, X)


def test_symmetry_group_orders():
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer=EVEN, heads=[2, 1], residual=True)
    assert sign_group_order(arch) == 8 and head_permutation_order(arch) == 2
    assert gauge_dimension(arch) == 3 and hidden_gauge_layers(arch) == []
    assert gauge_dimension(Architecture([2, 3, 2], [2, 1], heads=[2, 3])) == 2 * 4 + 3 * 1 + 9
    # lightning: layers flip in pairs without a residual stream (all heads of each), never with one
    lightning = Architecture([1, 1, 1], [1, 1], normalizer="lightning", heads=[2, 1])
    assert flip_preserves_output(lightning, [1, 2, 3]) and not flip_preserves_output(lightning, [1, 3])
    assert sign_group_order(lightning) == 2
    assert sign_group_order(lightning.replace(residual=True)) == 1


def test_an_odd_flip_and_a_hidden_change_of_basis_change_a_residual_network():
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer=ODD, heads=[1, 2], residual=True)
    rng = random.Random(5)
    params, X = rand_params(arch, rng), rand_input(arch, rng)
    assert exact(arch, sign_flip(params, [1]), X) != exact(arch, params, X)
    # the hidden GL(d_1) of the plain model, applied as if there were no residual stream
    plain = arch.replace(residual=False)
    H = sp.Matrix([[2, 1], [0, 1]])
    moved = gauge_action(params, [sp.eye(1)] * 3, [H], plain)
    assert exact(plain, moved, X) == exact(plain, params, X)
    assert exact(arch, moved, X) != exact(arch, params, X)
    with pytest.raises(ShapeError, match=r"0 matrices H_i \(none with a residual stream\), got 3 and 1"):
        gauge_action(params, [sp.eye(1)] * 3, [H], arch)


# -- spectra, dimensions and kernels: two ways each ------------------------------------------
def expand(histogram: dict) -> list:
    return [e for e, m in sorted(histogram.items()) for _ in range(m)]


# exact spectra of the native Jacobian along the collapse curve (softmax, d = 2, a = 1, t = 3, two layers):
# computed by symattn, not claimed by any formula
SPECTRA = {
    "heads": ({0: 4, 1: 6, 2: 4, 5: 6, 6: 4}, 8),
    "causal": ({0: 4, 1: 6}, 6),
    "residual": ({0: 4, 1: 6, 2: 4}, 2),
    "heads+causal": ({0: 4, 1: 12, 2: 8}, 8),
    "all three": ({0: 8, 1: 9, 2: 4}, 3),
}


@pytest.fixture(scope="module")
def spectra():
    out = {}
    for name, kwargs in VARIANTS.items():
        arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax", **kwargs)
        out[name] = (arch, decay_spectrum(arch, progress=False))
    return out


@pytest.mark.parametrize("name", list(VARIANTS))
def test_exact_spectrum_is_certified_and_claims_no_formula(spectra, name):
    arch, s = spectra[name]
    exponents, kernel = SPECTRA[name]
    assert s.exponents == exponents and s.kernel == kernel
    assert s.rank_certified and s.separating and s.confirmed and s.gauge_kernel_checked
    assert s.rank == arch.param_count - kernel == symmetry_orbit_bound(arch)
    assert s.predicted.exponents is None and s.predicted.kernel is None and s.matches_prediction is None
    assert "no formula claimed" in s.to_markdown()
    assert s.to_json()["predicted"] is None and s.to_json()["predicted_kernel"] is None


@pytest.mark.slow  # mpmath singular values
@pytest.mark.parametrize("name", list(VARIANTS))
def test_mpmath_slopes_reproduce_the_exact_spectrum(spectra, name):
    arch, s = spectra[name]
    result = sensitivity(arch, spectrum=s)
    slopes = result.mpmath_slopes[:s.rank]
    assert [round(v) for v in slopes] == expand(s.exponents)
    assert all(abs(v - e) < 0.1 for v, e in zip(slopes, expand(s.exponents)))
    assert result.recovered is True and result.mpmath_ranks == (s.rank,) * len(result.eps)


@pytest.mark.blas  # a float64 rank behind a gap above 1e8: round-off (1e-16 of the largest) cannot move it
@pytest.mark.parametrize("name", list(VARIANTS))
def test_certified_dimension_agrees_with_the_float64_rank(spectra, name):
    arch, s = spectra[name]
    d = function_space_dimension(arch, estimate="float64")
    assert d.certified and d.lower == d.upper == s.rank
    assert d.expected is None  # no formula claimed
    assert d.estimate == s.rank and d.estimate_gap > 1e8


@pytest.mark.parametrize("name", list(VARIANTS))
def test_kernel_is_the_derived_gauge_orbit(spectra, name):
    arch, s = spectra[name]
    fiber = generic_fiber(arch, flips=False)
    assert fiber.kernel_dim == s.kernel == fiber.gauge_rank == gauge_dimension(arch)
    assert fiber.gauge_annihilated and fiber.kernel_is_gauge_orbit


def test_residual_gauge_is_smaller_than_the_plain_one():
    # two layers of width 2: the hidden GL(2) (4 dimensions) is gone, and the rank grows by 4
    plain = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    residual = plain.replace(residual=True)
    assert gauge_dimension(plain) - gauge_dimension(residual) == 4
    assert symmetry_orbit_bound(residual) - symmetry_orbit_bound(plain) == 4


def test_orders_on_a_causal_network_claim_nothing_and_show_the_computed_orders():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, causal=True)
    result = identification_orders(arch, exact_check=False)
    assert [(o.block, o.order, o.predicted, o.sharp) for o in result.scores] == [
        ("scores:1", 2, None, True), ("scores:2", 2, None, True)]
    assert result.values.order == 0
    # the plain model has layer 2 at order 6: the causal average keeps the tokens apart at collapse
    plain = identification_orders(arch.replace(causal=False), exact_check=False)
    assert [(o.order, o.predicted) for o in plain.scores] == [(2, 2), (6, 6)]


def test_predicted_spectrum_of_a_variant_is_none_and_of_the_plain_model_unchanged():
    assert predicted_spectrum(Architecture.uniform(layers=2, heads=2)).note == (
        "no formula claimed for 2 heads per layer; the spectrum is computed")
    assert predicted_spectrum(Architecture.uniform(layers=2)).exponents == {0: 4, 1: 3, 5: 3}


# -- the command line ------------------------------------------------------------------------
def run_json(capsys, *argv):
    status = main([*argv, "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out)


def test_cli_flags_reach_every_analysis(capsys):
    data = run_json(capsys, "spectrum", "--layers", "2", "--heads", "1,2", "--causal", "--residual")
    assert data["architecture"]["heads"] == [1, 2] and data["architecture"]["causal"] is True
    assert data["spectrum"] == {"0": 8, "1": 9, "2": 4} and data["kernel"] == 3
    data = run_json(capsys, "dimension", "--layers", "2", "--heads", "2", "--estimate", "none")
    assert data["rows"][0]["lower"] == data["rows"][0]["upper"] == 24 and data["rows"][0]["expected"] is None


def test_cli_rejects_a_wrong_number_of_heads(capsys):
    status = main(["spectrum", "--layers", "2", "--heads", "1,2,3"])
    _, err = capsys.readouterr()
    assert status == 2
    assert "--heads 1,2,3 lists 3 layers, the network has 2 layers" in err
    status = main(["spectrum", "--widths", "2,3", "--residual"])
    _, err = capsys.readouterr()
    assert status == 2 and "needs d_i = d_{i-1}" in err


# -- observability with residual paths --------------------------------------------------------
def test_residual_edges_in_the_dependency_graph():
    from symattn.observe import dependency_graph

    G = dependency_graph(Architecture.uniform(layers=2, width=2, heads=[1, 2], causal=True, residual=True))
    assert [(u, v) for u, v, kind in G.edges(data="kind") if kind == "residual"] == [
        ("input", "tokens:1"), ("tokens:1", "tokens:2")]
    assert G.nodes["values:2"]["params"] == ("V_{2,1}", "V_{2,2}") and G.nodes["attention:1"]["causal"] is True
    plain = dependency_graph(Architecture.uniform(layers=2, width=2))
    assert plain.number_of_edges() == 11 and "residual" not in {k for _, _, k in plain.edges(data="kind")}


@pytest.mark.parametrize("kwargs, collapse, hidden, observable", [
    ({}, "scores:1", ["scores:2"], ["values"]),                               # the plain model: J/t hides layer 2
    (dict(residual=True), "scores:1", [], ["scores:2", "values"]),           # the stream carries the tokens past
    (dict(causal=True), "scores:1", [], ["scores:2", "values"]),             # the causal average keeps them apart
    (dict(residual=True), "values:1", ["scores:1"], ["scores:2"]),           # X_1 = X_0: only layer 1 is lost
    ({}, "values:1", ["scores:1", "scores:2"], []),                          # X_1 = 0
])
def test_a_collapse_hides_what_the_exact_ranks_say(kwargs, collapse, hidden, observable):
    from symattn.observe import observe

    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, **kwargs)
    result = observe(arch, [collapse])
    assert result.unobservable == hidden and result.observable == observable
    assert result.agrees_with_rank
    for block in hidden:
        assert result.rank.on_set[block] == 0
    for block in observable:
        assert result.rank.on_set[block] == result.rank.generic[block] > 0


def test_residual_product_and_shared_attention_are_seen_by_the_ranks():
    from symattn.observe import observe

    residual = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3, residual=True),
                       ["identical-tokens"])
    assert residual.partial == ["values"] and residual.unobservable == ["scores:1", "scores:2"]
    assert residual.observability.verdicts["values"].reasons[0].rule == "residual-product"
    assert (residual.rank.on_set["values"], residual.rank.generic["values"]) == (4, 8)  # (I + V_2)(I + V_1) only
    heads = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=2), ["scores:2"])
    assert heads.partial == ["values"] and heads.observability.verdicts["values"].reasons[0].rule == "shared-attention"
    assert (heads.rank.on_set["values"], heads.rank.generic["values"]) == (8, 12)  # V_{2,1} + V_{2,2} only
    assert residual.agrees_with_rank and heads.agrees_with_rank


def test_events_and_reasons_name_what_the_variant_has():
    # no What_i or P where the network factors through no effective blocks: the heads' own scores
    from symattn.observe import observe

    heads = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=2),
                    ["scores:1", "value-rank:2:1"], contact=True)
    markdown, latex = heads.to_markdown(), heads.to_latex()
    assert "score collapse at layer 1 in every head (K_{1,h}^T Q_{1,h} = 0 for h = 1..2" in markdown
    assert "the event fixes K_{1,h}^T Q_{1,h} = 0 for h = 1..2" in markdown
    assert "S(A_2) = J/t whatever K_{2,h}^T Q_{2,h} is" in markdown
    assert "the event sets rank V_{2,h} = 1 for h = 1..2" in markdown
    assert "Q_{1,h} = delta Qt (every head h = 1..2)" in markdown
    assert r"K_{1,h}^\top Q_{1,h} = 0 \ (h = 1, \dots, 2)" in latex
    assert "What_" not in markdown and r"\widehat W" not in latex and "P = 0" not in markdown
    residual = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3, residual=True), ["scores:1"])
    assert "the event fixes K_1^T Q_1 = 0" in residual.to_markdown() and "What_" not in residual.to_markdown()
    plain = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3), ["scores:1", "values:2"])
    assert "the event fixes What_1 = 0" in plain.to_markdown() and "the event fixes P = 0" in plain.to_markdown()


def test_one_head_events_read_validate_and_merge():
    from symattn.errors import ShapeError, SymattnError
    from symattn.observe import parse_event, propagate, dependency_graph, score_collapse, value_collapse

    assert parse_event("scores:2:1") == score_collapse(2, head=1) and parse_event("values:1:2").head == 2
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=[1, 2])
    with pytest.raises(ShapeError, match="layer 1 has one head; write scores:1"):
        parse_event("scores:1:1").validate(arch)
    with pytest.raises(ShapeError, match="layer 2 has heads 1..2"):
        parse_event("values:2:3").validate(arch)
    with pytest.raises(SymattnError, match="contradict"):
        propagate(dependency_graph(arch), ["values:2:1", "value-rank:2:1"])
    graph = dependency_graph(arch)
    # both heads of layer 2 are the layer's collapse; the layer's collapse absorbs one head's
    assert [e.name for e in propagate(graph, ["scores:2:1", "scores:2:2"]).events] == ["scores:2"]
    assert [e.name for e in propagate(graph, ["scores:2", "scores:2:1", "bias"]).events] == ["bias", "scores:2"]
    assert [e.name for e in propagate(graph, ["values:2:2", "scores:2:1"]).events] == ["scores:2:1", "values:2:2"]
    assert value_collapse(2, head=1).describe(arch) == "value collapse of head 1 of layer 2 (V_{2,1} = 0)"
    # value maps: one constraint per head; the same in every head is the layer's
    assert parse_event("value-rank:2:1:2").name == "value-rank:2:1:2"
    assert [e.name for e in propagate(graph, ["value-rank:2:1:1", "value-rank:2:1:2"]).events] == ["value-rank:2:1"]
    assert [e.name for e in propagate(graph, ["value-rank:2:1", "value-rank:2:1:2"]).events] == ["value-rank:2:1"]
    assert [e.name for e in propagate(graph, ["values:2:1", "value-rank:2:1:2"]).events] == [
        "values:2:1", "value-rank:2:1:2"]
    with pytest.raises(SymattnError, match="contradict"):
        propagate(graph, ["values:2:1", "value-rank:2:1:1"])


@pytest.mark.parametrize("heads, events, unobservable, partial, on_set", [
    # one head collapsed: the other head's scores are seen (3 of 6), nothing else is lost
    (2, ["scores:1:1"], [], ["scores:1"], {"scores:1": 3, "scores:2": 6, "values": 12}),
    # one head silenced: its scores are multiplied by zero
    (2, ["values:1:1"], [], ["scores:1"], {"scores:1": 3, "scores:2": 6, "values": 8}),
    # head 1 collapsed, head 2 silenced: no live head, the tokens become equal (V_{1,1} X J/t)
    (2, ["scores:1:1", "values:1:2"], ["scores:1", "scores:2"], [], {"scores:1": 0, "scores:2": 0, "values": 4}),
    # two of three heads collapsed: they share J/t, only the sum of their value maps is seen
    (3, ["scores:1:1", "scores:1:2"], [], ["scores:1", "values"], {"scores:1": 3, "scores:2": 9, "values": 16}),
])
def test_one_head_events_agree_with_exact_ranks(heads, events, unobservable, partial, on_set):
    from symattn.observe import observe

    result = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=heads), events)
    assert result.unobservable == unobservable and result.partial == partial
    assert result.rank.on_set == on_set and result.agrees_with_rank


def test_a_collapsed_head_makes_a_constant_coordinate_that_softmax_does_not_see_through():
    # V_{1,h} of rank 1 and head 1 collapsed: X_1 = u_1 (v_1^T xbar) 1^T + u_2 (v_2^T X S_2), so the
    # u_1-coordinate is the same on every token and softmax at layer 2 loses a direction; cosh does not
    from symattn.observe import observe

    events = ["scores:1:1", "value-rank:1:1"]
    for normalizer, partial in (("softmax", ["scores:1", "scores:2"]), ("cosh", ["scores:1"])):
        arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=2, normalizer=normalizer)
        result = observe(arch, events)
        assert result.partial == partial and result.agrees_with_rank
    # under a causal mask the collapsed head adds the causal average, not a constant: nothing more is lost
    causal = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=2, causal=True), events)
    assert causal.partial == ["scores:1"] and causal.agrees_with_rank


@pytest.mark.slow
@pytest.mark.parametrize("kwargs, events, rows", [
    (dict(residual=True), 2, 34),
    (dict(causal=True, residual=True), 2, 34),
    # with two heads per layer: 20 single events (12 of them one head's), 178 sets in all once the sets
    # that name a layer's event twice (both heads, or the layer and a head) are skipped
    (dict(heads=2), 2, 178),
    (dict(heads=2, causal=True), 2, 178),
    (dict(heads=[1, 2], causal=True, residual=True), 1, 14),
])
def test_every_verdict_agrees_with_exact_ranks(kwargs, events, rows):
    from symattn.observe import exceptional_fibers

    for normalizer in ("softmax", "cosh"):
        arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer=normalizer, **kwargs)
        table = exceptional_fibers(arch, max_events=events)
        assert table.agrees_with_rank, [row.disagreements for row in table.rows if not row.agrees_with_rank]
        assert len(table.rows) == rows
        assert all("contradict" in why or why.startswith("the same set as") for _, why in table.skipped)


@pytest.mark.parametrize("kwargs, events, why", [
    # widths [2, 4, 2], two heads: X_1 spans 4 dimensions generically; each event leaves fewer
    (dict(causal=True), ["scores:1"], "share one attention"),      # (V_1 + V_2) X C: one image, 2 dimensions
    ({}, ["values:1:1"], "V_{1,1} = 0"),                             # one head left: 2 dimensions
    (dict(normalizer="cosh"), ["bias"], "same constant column"),   # v_11, v_21 and one constant direction: 3
    ({}, ["value-rank:1:1:1"], "V_{1,1} has rank 1"),                # one image of rank 1, one of rank 2: 3
])
def test_the_span_of_a_widening_layer_with_heads_decides_the_next_scores(kwargs, events, why):
    from symattn.observe import observe

    result = observe(Architecture([2, 4, 2], [1, 1], tokens=3, heads=2, **kwargs), events)
    reason = result.observability.verdicts["scores:2"].reasons[0]
    assert "scores:2" in result.partial and reason.rule == "low-rank-values" and why in reason.text
    assert result.rank.on_set["scores:2"] < result.rank.generic["scores:2"] == 14 and result.agrees_with_rank


@pytest.mark.slow
def test_every_verdict_of_a_widening_network_with_heads_agrees_with_exact_ranks():
    from symattn.observe import exceptional_fibers

    table = exceptional_fibers(Architecture([2, 4, 2], [1, 1], tokens=3, heads=2), max_events=2)
    assert table.agrees_with_rank, [row.disagreements for row in table.rows if not row.agrees_with_rank]
    assert len(table.rows) == 178
    causal = exceptional_fibers(Architecture([2, 4, 2], [1, 1], tokens=3, heads=2, causal=True, normalizer="cosh"),
                                max_events=1)
    assert causal.agrees_with_rank and len(causal.rows) == 20


def test_sign_components_count_each_head_as_the_sign_group_does():
    from symattn.effective import sign_group_order
    from symattn.observe import dependency_graph, propagate

    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, heads=[1, 2], normalizer="cosh")
    graph = dependency_graph(arch)
    assert propagate(graph).generic_sign_components == propagate(graph).sign_components == sign_group_order(arch) == 8
    assert propagate(graph, ["scores:2:1"]).sign_components == 4   # head (2, 1) collapsed: its flip fixes the point
    assert propagate(graph, ["scores:1"]).sign_components == 1     # layer 2 sees equal tokens


def test_bias_through_a_residual_collapse():
    # J/t adds a column-constant term to the stream: the constant coordinate survives layer 1, so softmax
    # hides a direction of What_2 (shift invariance) and V_1, V_2 move together (G = I + g e_b^T)
    from symattn.observe import observe

    result = observe(Architecture.uniform(layers=2, width=2, rank=1, tokens=3, residual=True), ["bias", "scores:1"])
    assert result.partial == ["scores:2", "values"] and result.agrees_with_rank
    assert [r.rule for r in result.observability.verdicts["values"].reasons] == ["residual-bias"]
    assert (result.rank.on_set["scores:2"], result.rank.on_set["values"]) == (2, 6)


# -- every command on every variant --------------------------------------------------------------
@pytest.mark.slow  # every command, the report included
@pytest.mark.parametrize("flags", [["--heads", "2"], ["--causal"], ["--residual"], ["--heads", "1,2", "--causal",
                                                                                      "--residual"]])
def test_every_command_runs_on_the_variant(capsys, flags):
    network = ["--layers", "2", *flags]
    identify_data = run_json(capsys, "identify", *network, "--estimate", "none")
    assert identify_data["dimension"]["certified"] and identify_data["fiber"]["kernel_is_symmetry_orbit"]
    assert all(o["predicted"] is None for o in identify_data["orders"])
    observe_data = run_json(capsys, "observe", *network, "--collapse", "scores:1")
    assert observe_data["agrees_with_rank"] is True
    expand_data = run_json(capsys, "expand", *network, "--truncation", "3")
    assert expand_data["architecture"]["heads"] == ([2, 2] if flags[:2] == ["--heads", "2"] else
                                                    [1, 2] if "1,2" in flags else [1, 1])
    check_data = run_json(capsys, "check", *network, "--claim", "kernel = 6")
    assert len(check_data["claims"]) == 1


@pytest.mark.slow  # the whole report
def test_report_on_a_variant(tmp_path, capsys):
    for flags in (["--heads", "2", "--causal"], ["--residual"]):
        status = main(["report", "--layers", "1", *flags, "--quiet", "--out", str(tmp_path / flags[-1][2:])])
        out, err = capsys.readouterr()
        assert status == 0, err
        assert "no formula claimed" in out


def test_claims_on_a_network_with_heads(capsys):
    data = run_json(capsys, "check", "--layers", "2", "--heads", "2", "--claim", "contact_order(2) = 5",
                    "--claim", "multiplicity(2) = 6", "--claim", "kernel = 8")
    assert [(c["verdict"], c["computed"]) for c in data["claims"]] == [(True, 5), (True, 6), (True, 8)]


def test_numeric_jacobian_takes_parameters_of_heads():
    from symattn.numeric import numeric_jacobian

    arch = Architecture.uniform(layers=1, width=1, tokens=2, heads=2, causal=True)
    params = arch.parameters_from([[[1]], [[2]]], [[[1]], [["1/2"]]], [[[1]], [[3]]])
    J = numeric_jacobian(arch, params, [[[1, 2]]], eps="1/2")
    assert J.shape == (2, 6)
    # token 1 attends to itself only: d F_1 / d V_{1,h} = x_1 = 1 for both heads, and no score moves it
    assert np.abs(J[0] - [0, 0, 1, 0, 0, 1]).max() < 1e-14 and np.abs(J[1]).min() < np.abs(J[1]).max()


def test_the_examples_of_docs_variants_md_run():
    import doctest
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "variants.md").read_text(encoding="utf-8")
    # the page is in the contents (docs/index.rst), not an orphan
    assert "orphan" not in text.split("\n", 3)[0]
    assert "   variants\n" in (Path(__file__).resolve().parent.parent / "docs" / "index.rst").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 3
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, "variants.md", "docs/variants.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0 and runner.tries == 16


def test_sign_group_of_even_heads_checked_numerically(capsys):
    # 4 heads of cosh: every one of the 15 nonempty sets of flipped heads keeps F (mpmath, 60 digits)
    data = run_json(capsys, "check", "--layers", "2", "--heads", "2", "--normalizer", "cosh",
                    "--claim", "sign_group_order = 16")
    (claim,) = data["claims"]
    assert claim["verdict"] is True and claim["computed"] == 16 and "15 sign flips" in claim["method"]
