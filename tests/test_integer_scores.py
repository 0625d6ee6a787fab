"""The dimension's integer-score route: layer 1 at an integer point (``e`` sent to a residue), later keys collapsed.

Checked against the exact sympy closed form (its Jacobian at the integer
point, ``e`` mapped to the same residue), against the curve route's ranks,
and for its refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from symattn.algebra.modseries import INTEGER_SCORES, IntegerScores, ModSeriesDomain, power_residues
from symattn.errors import DomainError, SymattnError
from symattn.identify import function_space_dimension
from symattn.identify.common import (DIMENSION_PRIME, integer_score_curve, integer_score_point,
                                     integer_score_refusal)
from symattn.jacobian import all_directions, jacobian_series
from symattn.model import Architecture, closed_form
from symattn.normalizers import Normalizer

pytestmark = pytest.mark.blas  # the exact products pass through float64 BLAS

P = DIMENSION_PRIME


def test_power_residues_match_pow():
    exponents = np.arange(-40, 41)
    assert power_residues(12345, exponents, P).tolist() == [pow(12345, int(k), P) for k in exponents]


def test_the_domain_evaluates_exp_at_an_integer_as_a_power_of_the_residue_of_e():
    base = 777
    domain = ModSeriesDomain(P, 3, coefficient_values={INTEGER_SCORES: IntegerScores(base, 1, 10)})
    # scores 3 + 2 eps and -2 (a column of two entries), softmax: e^3 e^(2 eps) and e^-2
    scores = domain.from_coefficients(np.array([[[[3, 2, 0]]], [[[P - 2, 0, 0]]]]))
    weights = domain.coefficients(domain.apply_normalizer(scores, Normalizer.preset("softmax")))[:, 0, 0]
    e3 = pow(base, 3, P)
    assert weights[0].tolist() == [e3, 2 * e3 % P, 2 * e3 % P]   # e^3 (1 + 2 eps + 2 eps^2)
    assert weights[1].tolist() == [pow(base, -2, P), 0, 0]


def test_a_rate_with_a_denominator_uses_the_root_of_e():
    domain = ModSeriesDomain(P, 1, coefficient_values={INTEGER_SCORES: IntegerScores(5, 3, 10)})
    scores = domain.from_coefficients(np.array([[[[2]]]]))
    # exp(2x/3) at x = 2: (e^(1/3))^4
    weights = domain.coefficients(domain.apply_normalizer(scores, Normalizer("exp(2*x/3)")))
    assert int(weights[0, 0, 0, 0]) == pow(5, 4, P)


def test_a_constant_term_outside_the_bound_is_refused():
    domain = ModSeriesDomain(P, 1, coefficient_values={INTEGER_SCORES: IntegerScores(5, 1, 10)})
    scores = domain.from_coefficients(np.array([[[[11]]]]))
    with pytest.raises(DomainError, match="not an integer of absolute value at most 10"):
        domain.apply_normalizer(scores, Normalizer.preset("softmax"))


def _residue_at(expression, T, base: int) -> int:
    """A rational function of ``T`` (Laurent powers allowed) at ``T = base`` mod ``P``."""
    numerator, denominator = sp.fraction(sp.together(expression))
    shift = T ** 400  # clears negative powers of T on both sides alike

    def at(polynomial):
        return int(sp.Poly(sp.expand(polynomial * shift), T).eval(base)) % P

    return at(numerator) * pow(at(denominator), -1, P) % P


@pytest.mark.parametrize("heads", [1, 2])
def test_the_jacobian_at_the_integer_point_is_the_exact_one_with_e_sent_to_its_residue(heads):
    # one layer: no curve, the Jacobian at the point itself; sympy differentiates the closed form, whose
    # exp(m) at the integer scores become T^m, T then sent to the route's residue of e
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, heads=heads)
    point, values, bank = integer_score_point(arch, P, 3, 1)
    base = values[INTEGER_SCORES].base
    J = jacobian_series(arch, integer_score_curve(arch), bank, point, P, 1, values)[:, :, 0]
    blocks = arch.block_map(arch.symbols())
    inputs = arch.input_symbols()
    substitution = {blocks[key][r, c]: int(value) for key, _ in arch.blocks()
                    for (r, c), value in np.ndenumerate(point[key])}
    signed = np.where(bank[0] > P // 2, bank[0] - P, bank[0])  # the bank's integers
    substitution.update({inputs[r, c]: int(value) for (r, c), value in np.ndenumerate(signed)})
    directions, count = all_directions(arch)
    columns = {int(k): blocks[key][r, c] for key, _ in arch.blocks() for (r, c), k in np.ndenumerate(directions[key])}
    F = closed_form(arch)
    T = sp.Symbol("T")
    entries = [F[i, j] for i in range(F.shape[0]) for j in range(F.shape[1])]  # the rows of J, row-major
    for row, entry in enumerate(entries):
        for k in range(count):
            exact = sp.diff(entry, columns[k]).subs(substitution).replace(sp.exp, lambda z: T ** z)
            assert _residue_at(exact, T, base) == int(J[row, k]), (row, k, exact)


@pytest.mark.parametrize("options", [
    dict(layers=1, width=3, rank=2),
    dict(layers=2, width=3, rank=2),
    dict(layers=3, width=2, rank=1),
    dict(layers=2, width=3, rank=2, heads=2),
    dict(layers=2, width=3, rank=2, causal=True),
    dict(layers=2, width=3, rank=2, residual=True),
    dict(layers=2, width=4, rank=2, tokens=4),
    dict(layers=2, width=3, rank=2, normalizer=["exp(x/2)", "cosh"]),
])
def test_the_integer_score_route_certifies_what_the_curve_route_certifies(options):
    arch = Architecture.uniform(**options)
    fast = function_space_dimension(arch)
    curve = function_space_dimension(arch, route="curve")
    assert fast.route.startswith("integer scores at layer 1")
    assert (fast.lower, fast.upper, fast.certified) == (curve.lower, curve.upper, True)
    if arch.layers > 1:
        assert "key collapse K_i = eps Kt_i at layers" in fast.route
        assert curve.truncation >= fast.truncation  # the point of the route: shorter series
    assert "e transcendental" in fast.method or "e^(1/2) transcendental" in fast.method


def test_one_layer_needs_no_series():
    result = function_space_dimension(Architecture.uniform(layers=1, width=4, rank=2, tokens=3))
    assert result.truncation == 1 and result.exponents == {0: result.lower} and result.certified


def test_the_gauge_slice_block_of_the_integer_point_is_invertible():
    from symattn.algebra.linalg import rank_mod_p

    arch = Architecture.uniform(layers=2, width=8, rank=2, tokens=4)
    for seed in range(20):
        point, values, _ = integer_score_point(arch, P, seed, 3)
        assert rank_mod_p(point[("Q", 1)][:, :2], P) == 2
        assert abs(point[("Q", 1)]).max() <= 8 and values[INTEGER_SCORES].bound >= 1


@pytest.mark.parametrize("options, reason", [
    (dict(normalizer="cosh"), "the first layer normalizer cosh is not C e^(a x) with a rational a"),
    (dict(normalizer="exp(pi*x)"), "is not C e^(a x) with a rational a"),
    (dict(bias=True), "a component other than attention"),
    (dict(normalizer="1 + x**2"), "every normalizer is a polynomial"),
])
def test_where_the_route_does_not_apply_it_says_why(options, reason):
    arch = Architecture.uniform(layers=2, width=2, rank=1, **options)
    assert reason in integer_score_refusal(arch)
    with pytest.raises(SymattnError, match="the integer-score route does not apply"):
        function_space_dimension(arch, route="integer scores")
    if "bias" in options or options["normalizer"] == "cosh":
        assert function_space_dimension(arch).route.startswith("series along")


def test_a_given_curve_keeps_the_curve_route_and_a_bad_route_is_refused():
    from symattn.curves import collapse_queries

    arch = Architecture.uniform(layers=2, width=2, rank=1)
    assert function_space_dimension(arch, curve=collapse_queries()).route.startswith("series along query collapse")
    with pytest.raises(SymattnError, match="route must be None, 'integer scores' or 'curve', got 'fast'"):
        function_space_dimension(arch, route="fast")


def test_a_small_prime_whose_half_the_scores_could_pass_keeps_the_curve_route():
    arch = Architecture.uniform(layers=2, width=40, rank=1, tokens=2)   # a d_0^2 = 1600 > (1009 - 1) / 2
    assert "could pass p/2 = 504" in integer_score_refusal(arch, p=1009)
    assert integer_score_refusal(arch) is None                       # the dimension's prime
    small = Architecture.uniform(layers=2, width=3, rank=2)
    result = function_space_dimension(small, prime=1009)
    assert result.route.startswith("integer scores") and result.certified
    with pytest.raises(SymattnError, match="could pass p/2"):
        function_space_dimension(arch, prime=1009, route="integer scores")
