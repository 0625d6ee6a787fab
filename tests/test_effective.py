"""Effective parameters, the gauge and sign symmetries, and the dimension counts.

Formulas are checked entry by entry against index sums written from MATH.md
section 2; symmetries are checked exactly over the rationals (polynomial
normalizers) with hypothesis, and at 50 digits for transcendental normalizers;
dimension counts are checked against the rank of the Jacobian of the map
``theta -> (What_1, ..., What_l, P)`` at random rational points.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import mpmath
import pytest
import sympy as sp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from symattn.algebra.domains import MpmathDomain, RationalDomain
from symattn.effective import (
    combined_value_map,
    effective_block_dimensions,
    effective_dimension,
    effective_forward,
    effective_scores,
    gauge_action,
    gauge_dimension,
    rank_matrix_dimension,
    sign_flip,
    sign_group_order,
)
from symattn.errors import ShapeError
from symattn.model import Architecture, Parameters, forward

# No shrinking: a failing exact forward pass is reported at once (shrinking rational
# networks takes minutes), and no example database is written.
HYPOTHESIS = settings(max_examples=20, deadline=None, database=None,
                      phases=(Phase.explicit, Phase.generate),
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# -- helpers ---------------------------------------------------------------------------


def rand_fraction(rng: random.Random, size: int = 3) -> Fraction:
    return Fraction(rng.randint(-size, size), rng.randint(1, 3))


def rand_matrix(rng: random.Random, rows: int, cols: int, size: int = 3) -> list:
    return [[rand_fraction(rng, size) for _ in range(cols)] for _ in range(rows)]


def rand_params(arch: Architecture, rng: random.Random, size: int = 3) -> Parameters:
    blocks = {"Q": [], "K": [], "V": []}
    for i in range(1, arch.layers + 1):
        for name, shape in arch.block_shapes(i).items():
            blocks[name].append(rand_matrix(rng, *shape, size))
    return arch.parameters_from(blocks["Q"], blocks["K"], blocks["V"])


def as_lists(a) -> list:
    return [list(row) for row in a.tolist()]


def exact(arch, params, X):
    return as_lists(forward(arch, params, X, RationalDomain()))


def mp_max_diff(a, b):
    with mpmath.workdps(80):
        return max(abs(mpmath.mpf(u) - mpmath.mpf(v)) for u, v in zip(a.flat, b.flat))


FRACTIONS = st.fractions(min_value=-3, max_value=3, max_denominator=3)
NONZERO = FRACTIONS.filter(lambda f: f != 0)


def matrices(rows: int, cols: int):
    return st.lists(st.lists(FRACTIONS, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


@st.composite
def invertible(draw, n: int):
    """L U with L unit lower triangular and U upper triangular with nonzero diagonal."""
    lower = [[draw(FRACTIONS) if j < i else Fraction(int(i == j)) for j in range(n)] for i in range(n)]
    upper = [[draw(NONZERO) if j == i else (draw(FRACTIONS) if j > i else Fraction(0)) for j in range(n)]
             for i in range(n)]
    out = [[sum((lower[i][m] * upper[m][j] for m in range(n)), Fraction(0)) for j in range(n)]
           for i in range(n)]
    assert sp.Matrix(out).det() != 0
    return out


@st.composite
def params_for(draw, arch: Architecture):
    blocks = {"Q": [], "K": [], "V": []}
    for i in range(1, arch.layers + 1):
        for name, shape in arch.block_shapes(i).items():
            blocks[name].append(draw(matrices(*shape)))
    return arch.parameters_from(blocks["Q"], blocks["K"], blocks["V"])


@st.composite
def gauge_instance(draw, arch: Architecture):
    params = draw(params_for(arch))
    X = draw(matrices(*arch.input_shape))
    G = [draw(invertible(a)) for a in arch.score_ranks]
    H = [draw(invertible(d)) for d in arch.widths[1:-1]]
    return params, X, G, H


# -- effective parameters on symbols -----------------------------------------------------


def _index_formulas(arch: Architecture, p: Parameters):
    """What_1, What_2 and P for 2 layers by explicit index sums."""
    Q1, K1, V1, Q2, K2, V2 = (sp.Matrix(m) for m in (p.Q[0], p.K[0], p.V[0], p.Q[1], p.K[1], p.V[1]))
    d0, d1, d2 = arch.widths
    a1, a2 = arch.score_ranks
    W1 = sp.Matrix(d0, d0, lambda i, j: sum(K1[r, i] * Q1[r, j] for r in range(a1)))
    W2 = sp.Matrix(d0, d0, lambda i, j: sum(V1[m, i] * K2[r, m] * Q2[r, n] * V1[n, j]
                                            for m in range(d1) for n in range(d1) for r in range(a2)))
    P = sp.Matrix(d2, d0, lambda i, j: sum(V2[i, m] * V1[m, j] for m in range(d1)))
    return W1, W2, P


@pytest.mark.parametrize("widths, ranks", [([2, 2, 2], [1, 1]), ([3, 2, 4], [1, 2]), ([2, 3, 1], [2, 3])])
def test_effective_formulas_on_symbols_two_layers(widths, ranks):
    arch = Architecture(widths, ranks)
    p = arch.symbols()
    W1, W2, P = _index_formulas(arch, p)
    scores = effective_scores(p)
    assert len(scores) == 2
    assert scores[0].shape == scores[1].shape == (widths[0], widths[0])
    assert (scores[0] - W1).expand() == sp.zeros(widths[0], widths[0])
    assert (scores[1] - W2).expand() == sp.zeros(widths[0], widths[0])
    value_map = combined_value_map(p)
    assert value_map.shape == (widths[2], widths[0])
    assert (value_map - P).expand() == sp.zeros(widths[2], widths[0])
    assert combined_value_map(p, upto=0) == sp.eye(widths[0])
    assert combined_value_map(p, upto=1) == sp.Matrix(p.V[0])


def test_effective_formulas_width_one():
    p = Architecture.uniform(layers=2, width=1).symbols()
    Q1, K1, V1 = (sp.Symbol(n, real=True) for n in ("Q1_11", "K1_11", "V1_11"))
    Q2, K2, V2 = (sp.Symbol(n, real=True) for n in ("Q2_11", "K2_11", "V2_11"))
    assert effective_scores(p) == [sp.Matrix([[K1 * Q1]]), sp.Matrix([[K2 * Q2 * V1**2]])]
    assert combined_value_map(p) == sp.Matrix([[V1 * V2]])


def test_effective_scores_depend_only_on_earlier_value_maps():
    arch = Architecture.uniform(layers=3, width=2, rank=1)
    p = arch.symbols()
    scores = effective_scores(p)
    V3 = {s for s in sp.Matrix(p.V[2]).free_symbols}
    assert all(not (w.free_symbols & V3) for w in scores)
    assert not (scores[0].free_symbols & sp.Matrix(p.V[0]).free_symbols)
    assert sp.Matrix(p.V[0]).free_symbols <= scores[2].free_symbols


def test_effective_forward_checks_number_of_score_matrices():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=2, normalizer="1+x**2")
    with pytest.raises(ShapeError, match="2 layers need 2 effective score matrices, got 1"):
        effective_forward(arch, [sp.eye(2)], sp.eye(2), [[1, 0], [0, 1]], RationalDomain())


def test_effective_forward_one_layer_by_hand():
    # What = [[1, 0], [0, 0]], P = I, X = [[1, 2], [0, 0]]: A = X^T What X = [[1, 2], [2, 4]],
    # s = 1 + x^2: s(A) = [[2, 5], [5, 17]], S = [[2/7, 5/22], [5/7, 17/22]], F = X S.
    arch = Architecture([2, 2], [1], tokens=2, normalizer="1 + x**2")
    out = effective_forward(arch, [sp.Matrix([[1, 0], [0, 0]])], sp.eye(2), [[1, 2], [0, 0]], RationalDomain())
    assert as_lists(out) == [[Fraction(2, 7) + 2 * Fraction(5, 7), Fraction(5, 22) + 2 * Fraction(17, 22)],
                             [0, 0]]


# -- gauge symmetry ----------------------------------------------------------------------


GAUGE_ARCHS = [
    Architecture([2, 2, 2], [1, 1], tokens=3, normalizer="1 + x**2"),
    Architecture([2, 3, 2], [2, 1], tokens=2, normalizer="1 + x**3 + x**4"),
]


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
@HYPOTHESIS
@given(data=st.data())
def test_gauge_action_leaves_the_output_unchanged_over_rationals(data):
    for arch in GAUGE_ARCHS:
        params, X, G, H = data.draw(gauge_instance(arch))
        moved = gauge_action(params, G, H)
        assert exact(arch, moved, X) == exact(arch, params, X)
        # the effective parameters themselves are invariant
        assert effective_scores(moved) == effective_scores(params)
        assert combined_value_map(moved) == combined_value_map(params)


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
@HYPOTHESIS
@given(data=st.data())
def test_gauge_action_quartic_normalizer_on_three_layers(data):
    arch = Architecture([2, 2, 3, 2], [2, 1, 1], tokens=2, normalizer="1 + x**3 + x**4")
    params, X, G, H = data.draw(gauge_instance(arch))
    moved = gauge_action(params, G, H)
    assert exact(arch, moved, X) == exact(arch, params, X)
    assert effective_scores(moved) == effective_scores(params)


def test_gauge_action_native_formulas():
    arch = Architecture([2, 3, 2], [2, 1], tokens=2)
    rng = random.Random(4)
    params = rand_params(arch, rng)
    G1 = sp.Matrix([[2, 1], [0, 3]])
    G2 = sp.Matrix([[sp.Rational(-1, 2)]])
    H1 = sp.Matrix([[1, 2, 0], [0, 1, 0], [1, 0, 5]])
    moved = gauge_action(params, [G1, G2], [H1])
    Q1, K1, V1, Q2, K2, V2 = (sp.Matrix(m) for m in (params.Q[0], params.K[0], params.V[0],
                                                     params.Q[1], params.K[1], params.V[1]))
    H1i = H1.inv()
    assert sp.Matrix(moved.Q[0]) == G1 * Q1
    assert sp.Matrix(moved.K[0]) == G1.inv().T * K1
    assert sp.Matrix(moved.V[0]) == H1 * V1
    assert sp.Matrix(moved.Q[1]) == G2 * Q2 * H1i
    assert sp.Matrix(moved.K[1]) == G2.inv().T * K2 * H1i
    assert sp.Matrix(moved.V[1]) == V2 * H1i
    # the action really moves the native parameters
    assert sp.Matrix(moved.Q[0]) != Q1 and sp.Matrix(moved.V[0]) != V1


def test_gauge_action_symbolically_fixes_effective_parameters():
    arch = Architecture([2, 2, 2], [1, 1], tokens=3)
    p = arch.symbols()
    g1, g2 = sp.symbols("g1 g2", nonzero=True)
    H1 = sp.Matrix(2, 2, sp.symbols("h11 h12 h21 h22"))
    moved = gauge_action(p, [sp.Matrix([[g1]]), sp.Matrix([[g2]])], [H1])
    for new, old in zip(effective_scores(moved), effective_scores(p)):
        assert (new - old).applyfunc(sp.cancel) == sp.zeros(2, 2)
    assert (combined_value_map(moved) - combined_value_map(p)).applyfunc(sp.cancel) == sp.zeros(2, 2)


def test_gauge_action_shape_errors():
    arch = Architecture([2, 2, 2], [1, 1])
    p = arch.symbols()
    with pytest.raises(ShapeError, match="need 2 matrices G_i and 1 matrices H_i, got 1 and 1"):
        gauge_action(p, [sp.eye(1)], [sp.eye(2)])
    with pytest.raises(ShapeError, match="G_1 must be 1 x 1"):
        gauge_action(p, [sp.eye(2), sp.eye(1)], [sp.eye(2)])
    with pytest.raises(ShapeError, match="H_1 must be 2 x 2"):
        gauge_action(p, [sp.eye(1), sp.eye(1)], [sp.eye(3)])


# -- sign flips ----------------------------------------------------------------------------


def subsets(layers: int):
    return [set(c) for r in range(1, layers + 1) for c in itertools.combinations(range(1, layers + 1), r)]


@HYPOTHESIS
@given(data=st.data())
def test_sign_flip_even_polynomial_is_exact_symmetry(data):
    arch = Architecture([2, 2, 2, 2], [1, 2, 1], tokens=3, normalizer="1 + x**2")
    params = data.draw(params_for(arch))
    X = data.draw(matrices(*arch.input_shape))
    reference = exact(arch, params, X)
    for flipped in subsets(3):
        moved = sign_flip(params, flipped)
        assert exact(arch, moved, X) == reference
        new, old = effective_scores(moved), effective_scores(params)
        for i in range(3):
            assert new[i] == (-old[i] if i + 1 in flipped else old[i])
        assert combined_value_map(moved) == combined_value_map(params)


@pytest.mark.parametrize("normalizer", ["cosh", "gauss"])
def test_sign_flip_even_transcendental_at_50_digits(normalizer):
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer=normalizer)
    D = MpmathDomain(dps=50)
    tol = mpmath.mpf(10) ** -45
    for seed in range(3):
        rng = random.Random(seed)
        params = rand_params(arch, rng, size=2)
        X = rand_matrix(rng, 2, 3, size=2)
        reference = forward(arch, params, X, D)
        for flipped in subsets(2):
            assert mp_max_diff(forward(arch, sign_flip(params, flipped), X, D), reference) < tol


def test_sign_flip_changes_softmax_output():
    """For softmax (not even) each nonempty flip has a witness input where the output moves."""
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer="softmax")
    D = MpmathDomain(dps=50)
    for flipped in subsets(2):
        witnessed = False
        for seed in range(5):
            rng = random.Random(100 + seed)
            params = rand_params(arch, rng, size=2)
            X = rand_matrix(rng, 2, 3, size=2)
            diff = mp_max_diff(forward(arch, sign_flip(params, flipped), X, D), forward(arch, params, X, D))
            if diff > 1e-10:
                witnessed = True
                break
        assert witnessed, flipped


def test_sign_flip_changes_non_even_polynomial_output_exactly():
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer="1 + x**3 + x**4")
    for flipped in subsets(2):
        found = False
        for seed in range(5):
            rng = random.Random(200 + seed)
            params = rand_params(arch, rng)
            X = rand_matrix(rng, 2, 3)
            if exact(arch, sign_flip(params, flipped), X) != exact(arch, params, X):
                found = True
                break
        assert found, flipped


def test_sign_flip_invalid_layers():
    p = Architecture.uniform(layers=2, width=1).symbols()
    with pytest.raises(ShapeError, match="layers to flip must be in 1..2, got \\[0, 3\\]"):
        sign_flip(p, [0, 3])
    assert sign_flip(p, []) == p


# -- dimensions ----------------------------------------------------------------------------


def test_dimensions_two_layers_width_two_rank_one():
    for normalizer, order in [("softmax", 1), ("cosh", 4), ("gauss", 4), ("quadratic", 4),
                              ("1 + x**3 + x**4", 1), (["softmax", "cosh"], 2), (["cosh", "sigmoid"], 2)]:
        arch = Architecture.uniform(layers=2, width=2, rank=1, normalizer=normalizer)
        assert effective_dimension(arch) == 10
        assert gauge_dimension(arch) == 6
        assert sign_group_order(arch) == order
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    assert effective_block_dimensions(arch) == {"values": 4, "scores:1": 3, "scores:2": 3}
    assert sign_group_order(Architecture.uniform(layers=3, normalizer="1 + x**2")) == 8


@pytest.mark.parametrize("rows, cols, rank, dim", [(2, 2, 1, 3), (3, 3, 2, 8), (2, 3, 5, 6), (4, 2, 1, 5),
                                                   (3, 3, 3, 9), (1, 1, 1, 1)])
def test_rank_matrix_dimension(rows, cols, rank, dim):
    assert rank_matrix_dimension(rows, cols, rank) == dim


CONSTANT = [(1, 1, 1), (1, 1, 2), (2, 1, 2), (2, 2, 2), (2, 2, 3), (3, 1, 3), (2, 2, 5), (4, 3, 4),
            (3, 2, 6), (5, 1, 1)]


@pytest.mark.parametrize("l, a, d", CONSTANT)
def test_constant_width_formula_and_gauge_complement(l, a, d):
    arch = Architecture.uniform(layers=l, width=d, rank=a)
    assert effective_dimension(arch) == l * a * (2 * d - a) + d * d
    assert gauge_dimension(arch) == l * a * a + (l - 1) * d * d
    assert arch.param_count == l * (2 * a * d + d * d)
    assert arch.param_count - effective_dimension(arch) == gauge_dimension(arch)


def effective_jacobian_rank(arch: Architecture, seed: int) -> int:
    """Rank of d(What_1, ..., What_l, P)/d(theta) at a random rational point."""
    rng = random.Random(seed)
    p = arch.symbols()
    theta = p.flat()
    outputs = [e for W in effective_scores(p) for e in W] + list(combined_value_map(p))
    J = sp.Matrix(outputs).jacobian(theta)
    point = {s: sp.Rational(rng.randint(-9, 9), rng.randint(1, 5)) for s in theta}
    return J.subs(point).rank()


@pytest.mark.parametrize("widths, ranks", [([2, 2, 2], [1, 1]), ([2, 2], [2]),
                                           pytest.param([3, 3, 3], [2, 2], marks=pytest.mark.slow),  # sympy rank
                                           ([2, 2, 2, 2], [1, 1, 1]), ([2, 3, 3], [1, 1]), ([2, 2], [3]),
                                           ([3, 3, 2], [1, 1])])
def test_effective_dimension_is_the_jacobian_rank(widths, ranks):
    arch = Architecture(widths, ranks)
    # a random point gives a lower bound on the generic rank; two seeds agree
    ranks_found = {effective_jacobian_rank(arch, seed) for seed in (0, 1)}
    assert ranks_found == {effective_dimension(arch)}


@pytest.mark.parametrize("widths, ranks", [([2, 1, 2], [1, 1]), ([3, 2, 2], [1, 1]), ([3, 2, 3], [2, 2])])
def test_effective_dimension_with_bottleneck_is_the_jacobian_rank(widths, ranks):
    arch = Architecture(widths, ranks)
    assert {effective_jacobian_rank(arch, seed) for seed in (0, 1)} == {effective_dimension(arch)}
