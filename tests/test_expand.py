"""Expansions along curves and the matrix formulas of each layer's leading coefficient."""

import dataclasses
import json
import math

import pytest
import sympy as sp

from symattn.check import check_expression
from symattn.curves import EPS, collapse, collapse_queries, input_scaling, polynomial_curve
from symattn.errors import DomainError, ShapeError, SymattnError, TruncationError
from symattn.expand import (
    Expansion,
    curve_symbols,
    expand,
    leading_coefficient,
    leading_orders,
    package_symbols,
    symbols,
    verify_leading_coefficient,
)
from symattn.model import Architecture, closed_form
from symattn.normalizers import Normalizer


def _matrices(arch):
    base = curve_symbols(arch)
    return [sp.Matrix(m) for m in base.Q], [sp.Matrix(m) for m in base.K], [sp.Matrix(m) for m in base.V], \
        sp.Matrix(arch.input_symbols())


def _centering(t):
    return sp.eye(t) - sp.ones(t, t) / t


# -- one layer: F_0 = V X J/t and F_2k = (c_k/t) V X H (X^T Kt^T Qt X)^(k) ------------------------------
@pytest.mark.parametrize("width, tokens, k", [(1, 2, 1), (2, 3, 1), (1, 2, 2), (2, 3, 2), (2, 2, 2)])
def test_one_layer_expansion_matches_the_closed_formulas(width, tokens, k):
    arch = Architecture.uniform(layers=1, width=width, rank=1, tokens=tokens)
    generic = Normalizer.generic(k)
    F = expand(arch, truncation=3 * k + 1, normalizer=generic)
    (Q,), (K,), (V,), X = _matrices(arch)
    t, J, H = tokens, sp.ones(tokens, tokens), _centering(tokens)
    assert F[0] == (V * X * J / t).applyfunc(sp.expand)
    for n in range(1, 2 * k):
        assert F[n] == sp.zeros(width, tokens)
    c = generic.coefficient_symbol(k)
    A = X.T * K.T * Q * X
    claimed = (c / t) * V * X * H * A.applyfunc(lambda a: a**k)
    result = check_expression(claimed, F[2 * k])
    assert result.verdict is True and result.proved
    assert F[2 * k + 1] == sp.zeros(width, tokens)  # only even powers of eps along collapse
    # the matrix formula of leading_coefficient, written entrywise, is the same
    assert leading_coefficient(arch, 1, generic).explicit() == F[2 * k]


def test_softmax_is_the_generic_expansion_with_c_m_equal_to_one_over_m_factorial():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2)
    generic = Normalizer.generic(1)
    order = 6
    F_generic = expand(arch, truncation=order + 1, normalizer=generic)
    F_softmax = expand(arch, truncation=order + 1, normalizer="softmax")
    values = {generic.coefficient_symbol(m): sp.Rational(1, math.factorial(m)) for m in range(1, order + 2)}
    for n in range(order + 1):
        assert F_softmax[n] == F_generic[n].xreplace(values).applyfunc(sp.expand)
    assert F_softmax[6] != sp.zeros(2, 2)


def test_cosh_is_the_even_generic_expansion_with_c_2m_equal_to_one_over_2m_factorial():
    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2)
    generic = Normalizer.generic(2, even=True)
    F_generic = expand(arch, truncation=9, normalizer=generic)
    F_cosh = expand(arch, truncation=9, normalizer="cosh")
    values = {generic.coefficient_symbol(m): sp.Rational(1, math.factorial(m)) for m in range(2, 10, 2)}
    for n in range(9):
        assert F_cosh[n] == F_generic[n].xreplace(values).applyfunc(sp.expand)


def test_expansion_agrees_with_sympy_series_of_the_closed_form():
    # an independent route: the closed form with exp, substituted along the curve, expanded by sympy
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2)
    closed = closed_form(arch)
    params, base = arch.symbols(), curve_symbols(arch)
    along = {params.Q[0][0]: EPS * base.Q[0][0], params.K[0][0]: EPS * base.K[0][0],
             params.V[0][0]: base.V[0][0]}
    F = expand(arch, truncation=5)
    for col in range(2):
        series = sp.series(closed[0, col].xreplace(along), EPS, 0, 5).removeO()
        for n in range(5):
            assert sp.expand(series.coeff(EPS, n) - F[n][0, col]) == 0


def test_rational_point_and_symbolic_expansion_agree():
    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2, normalizer="quadratic")
    symbolic = expand(arch, truncation=13)
    point = {s.name: sp.Rational(v, 3) for s, v in zip(sorted(symbolic.free_symbols, key=lambda s: s.name),
                                                       [2, -1, 5, 7, -4, 1, 3, -2])}
    numeric = expand(arch, truncation=13, point=point)
    assert "fmpq)" in numeric.domain and "mpoly" in symbolic.domain
    at = {s: point[s.name] for s in symbolic.free_symbols}
    for n in range(13):
        assert numeric[n] == symbolic[n].xreplace(at)
    assert numeric[12] != sp.zeros(1, 2)


def test_irrational_taylor_coefficients_fall_back_to_sympy_coefficients():
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="exp(sqrt(2)*x)")
    F = expand(arch, truncation=3)
    (Q,), (K,), (V,), X = _matrices(arch)
    H = _centering(2)
    assert "fmpq_mpoly" not in F.domain
    assert (F[2] - sp.sqrt(2) / 2 * V * X * H * X.T * K.T * Q * X).applyfunc(sp.expand) == sp.zeros(1, 2)


# -- other curves ---------------------------------------------------------------------------------
def test_query_collapse_sees_layer_one_at_order_k():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=3, normalizer="softmax")
    F = expand(arch, curve=collapse_queries())
    assert (F.truncation, F.order) == (2, 1)
    (Q,), (K,), (V,), X = _matrices(arch)
    claimed = V * X * _centering(3) * X.T * K.T * Q * X / 3
    assert check_expression(claimed, F[1]).proved


def test_input_scaling_multiplies_the_collapse_expansion_by_one_more_eps():
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer=Normalizer.generic(1))
    F = expand(arch, curve=input_scaling())
    assert (F.truncation, F.order) == (4, 3)
    (Q,), (K,), (V,), X = _matrices(arch)
    # the base point of input scaling is the generic point itself
    plain = {s: sp.Symbol(s.name.replace("t1", "1"), real=True) for s in F.free_symbols if "t1" in s.name}
    assert F[0] == sp.zeros(1, 2)
    assert F[1] == (V * X * sp.ones(2, 2) / 2).applyfunc(sp.expand)
    c = Normalizer.generic(1).coefficient_symbol(1)
    assert check_expression(c / 2 * V * X * _centering(2) * X.T * K.T * Q * X, F[3]).proved
    assert plain  # the symbols are the tilde names of curve_symbols


def test_polynomial_curve_replaces_a_block():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="softmax")
    curve = polynomial_curve({"Q1": sp.Matrix([[EPS, 2 * EPS]])})
    F = expand(arch, curve=curve, truncation=2)
    (Q,), (K,), (V,), X = _matrices(arch)
    claimed = V * X * _centering(2) * X.T * K.T * sp.Matrix([[1, 2]]) * X / 2
    assert check_expression(claimed, F[1]).proved


def test_a_curve_with_scores_that_do_not_vanish_is_refused():
    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2)
    with pytest.raises(DomainError, match="cannot expand along"):
        expand(arch, curve=collapse([2]), truncation=3)


# -- the leading coefficients of layers 2 and 3 -------------------------------------------------------
def test_leading_orders():
    assert leading_orders(Architecture.uniform(layers=4)) == [2, 6, 18, 54]
    assert leading_orders(Architecture.uniform(layers=3), normalizer=Normalizer.generic(2)) == [4, 12, 36]
    mixed = Architecture([2, 2, 2], [1, 1], 3, ["softmax", "cosh"])
    assert leading_orders(mixed) == [2, 8]  # n_2 = 2 nu_1 + 2 k_2 = 4 + 4


@pytest.mark.parametrize("widths, ranks, tokens, k, layer", [
    ([1, 1, 1], [1, 1], 2, 1, 2),
    ([1, 1, 1], [1, 1], 3, 1, 2),
    ([2, 2, 2], [1, 1], 2, 1, 2),
    ([2, 2, 2], [1, 1], 3, 1, 2),
    ([1, 1, 1], [1, 1], 2, 2, 2),
    ([1, 1, 1], [1, 1], 3, 2, 2),
    ([2, 1, 2], [1, 1], 2, 1, 2),
    ([1, 1, 1, 1], [1, 1, 1], 2, 1, 3),
    ([1, 1, 1, 1], [1, 1, 1], 2, 1, 2),
])
def test_leading_coefficient_is_proved_symbolically(widths, ranks, tokens, k, layer):
    arch = Architecture(widths, ranks, tokens, Normalizer.generic(k))
    result = verify_leading_coefficient(arch, layer, symbolic=True)
    assert result.verdict is True and result.proved, result.method
    assert "symbolic proof" in result.method


@pytest.mark.parametrize("widths, ranks, tokens, k, layer", [
    ([2, 2, 2], [1, 1], 3, 2, 2),
    ([3, 3, 3], [1, 1], 3, 1, 2),
    ([3, 3, 3], [2, 1], 2, 2, 2),
    ([2, 3, 2], [2, 1], 3, 1, 2),
    ([2, 2, 2, 2], [1, 1, 1], 3, 1, 3),
    ([2, 2, 2, 2], [1, 1, 1], 2, 1, 3),
    ([1, 1, 1, 1], [1, 1, 1], 2, 2, 3),
    ([3, 3, 3, 3], [1, 1, 1], 2, 1, 3),
    ([2, 2, 2, 2], [1, 1, 1], 3, 1, 1),
    ([2, 2, 2, 2], [1, 1, 1], 3, 1, 2),
    ([1, 1, 1, 1, 1], [1, 1, 1, 1], 2, 1, 4),
])
def test_leading_coefficient_at_random_points(widths, ranks, tokens, k, layer):
    arch = Architecture(widths, ranks, tokens, Normalizer.generic(k))
    result = verify_leading_coefficient(arch, layer, points=2, seed=1)
    assert result.verdict is True, result.method
    assert result.bound < 1e-7


@pytest.mark.parametrize("normalizers", [["softmax", "cosh"], ["cosh", "softmax"], ["quadratic", "gauss"]])
def test_leading_coefficient_with_named_and_mixed_normalizers(normalizers):
    arch = Architecture([2, 2, 2], [1, 1], 3, normalizers)
    assert verify_leading_coefficient(arch, 2, points=2).verdict is True


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_a_wrong_formula_is_caught_with_a_counterexample_that_really_differs():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer=Normalizer.generic(1))
    right = leading_coefficient(arch, 2)
    H = sp.Identity(3) - sp.OneMatrix(3, 3) / 3
    wrong = dataclasses.replace(right, formula=right.formula * H)  # a plausible slip: one more centering
    result = verify_leading_coefficient(arch, 2, candidate=wrong, points=1)
    assert result.verdict is False
    ce = result.counterexample
    point = ce.values()
    base = curve_symbols(arch)
    value = lambda m: m.xreplace({s: point[s.name] for s in m.free_symbols})  # noqa: E731
    params = type(base)(*(tuple(value(m) for m in blocks) for blocks in (base.Q, base.K, base.V)))
    claimed = wrong.evaluate(params, value(arch.input_symbols()), {"c_1": point["c_1"]})
    full = expand(arch, truncation=7, point=point)
    collapsed = expand(arch, truncation=7, point={**point, **{s.name: 0 for s in base.K[1]}})
    computed = full[6] - collapsed[6]
    assert claimed[ce.entry] == sp.Rational(ce.claimed)
    assert computed[ce.entry] == sp.Rational(ce.computed)
    assert claimed[ce.entry] != computed[ce.entry]
    # the symbolic route catches it too
    assert verify_leading_coefficient(arch, 2, candidate=wrong, symbolic=True).verdict is False


def test_layers_before_the_leading_order_do_not_see_the_scores():
    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2, normalizer=Normalizer.generic(1))
    F = expand(arch, truncation=7)
    K2 = curve_symbols(arch).K[1][0, 0]
    assert all(not F[n].has(K2) for n in range(6))
    assert F[6].has(K2)


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_leading_coefficient_forms_and_rendering():
    arch = Architecture.uniform(layers=3, width=2, rank=1, tokens=3)
    lc = leading_coefficient(arch, 3)
    assert lc.order == 18
    names = [name for name, _ in lc.effective_steps]
    assert names == ["H", "C_1", "Z_1", "C_2", "alpha_2", "Sigma_2", "Z_2", "C_3", "alpha_3",
                     "F_18 - F_18|What_3=0"]
    assert lc.formula.shape == lc.effective_formula.shape == (2, 3)
    assert r"Z_{2} Z_{2}^{\top} C_{3} J" in lc.latex
    assert lc._repr_latex_().startswith("$$\\begin{aligned}")
    data = json.loads(json.dumps(lc.to_json()))
    assert data["order"] == 18 and data["k"] == [1, 1, 1]
    assert "Sigma_2" in str(lc)
    with pytest.raises(ShapeError, match="layer must be an integer in 1..3"):
        leading_coefficient(arch, 4)
    with pytest.raises(SymattnError, match="lightning"):
        leading_coefficient(Architecture.uniform(layers=1, normalizer="lightning"), 1)


# -- the Expansion value and the size guards ------------------------------------------------------------
def test_expansion_renders_in_every_format():
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2)
    F = expand(arch, truncation=3, normalizer=Normalizer.generic(1))
    assert isinstance(F, Expansion) and len(F) == 3 and F.leading_order() == 2
    data = json.loads(json.dumps(F.to_json()))
    assert [c["order"] for c in data["coefficients"]] == [0, 1, 2]
    assert data["coefficients"][1]["entries"] == [["0", "0"]]
    # F_0 = P X J / t, F_1 = 0 and F_2 = (c_1 / t) P X H C_1 in matrix form (checked entry by entry)
    assert F.to_latex().count("\\begin{equation*}") == 3 and "(F_{2})_{12} &=" not in F.to_latex()
    assert r"F_{2} = \frac{c_{1}}{2}\, P X H C_{1}" in F.to_latex()
    # past the matrix forms, entries are factored: F_4 of width 1, three tokens
    G = expand(Architecture.uniform(layers=1, width=1, tokens=3), truncation=5)
    assert (r"(F_{4})_{11} &= \tfrac{1}{54} (\tilde{K}_{1})_{11}^{2} (\tilde{Q}_{1})_{11}^{2} (\tilde{V}_{1})_{11} "
            r"x_{11}^{2} \left(x_{11} - 2 x_{12} + x_{13}\right)") in G.to_latex()
    assert F.to_latex(standalone=True).startswith("\\documentclass")
    assert F._repr_latex_().startswith("$$\\begin{aligned}")
    assert "$$F_{2} =" in F.to_markdown()
    assert str(F).splitlines()[1].startswith("F_0 = ")
    with pytest.raises(dataclasses.FrozenInstanceError):
        F.truncation = 4
    with pytest.raises(TruncationError, match=r"not in this expansion modulo eps\^3 \(F_0..F_2\); expand with "
                                              r"truncation=4 or more"):
        F.coefficient(3)


@pytest.mark.parametrize("truncation", [1, 0, -1, 2.5, True, "2"])
def test_bad_truncations_are_refused(truncation):
    with pytest.raises(TruncationError, match=r"truncation must be an integer >= 2"):
        expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=truncation)


@pytest.mark.parametrize("call", [
    lambda arch: expand(arch, order=2),
    lambda arch: expand(arch, truncation=3, max_order=2),
    lambda arch: package_symbols(arch, order=2),
    lambda arch: symbols("c_1", arch, order=2),
])
def test_the_old_order_keyword_is_refused_naming_the_truncation(call):
    # order=n meant the highest power kept; truncation=N is the series modulo eps^N (N = n + 1), as the spectrum's
    with pytest.raises(TruncationError, match=r"truncation=N \(the series modulo eps\^N: F_0..F_\(N-1\)\), not "
                                              r"(max_)?order=.*write (max_)?truncation=3 for (max_)?order=2"):
        call(Architecture.uniform(layers=1, width=1, tokens=2))
    with pytest.raises(TypeError):  # the third positional argument is not a truncation in disguise
        expand(Architecture.uniform(layers=1, width=1, tokens=2), None, 2)


def test_truncation_keeps_the_series_modulo_eps_to_the_n():
    arch = Architecture.uniform(layers=1, width=1, tokens=2)
    F = expand(arch, truncation=3)
    assert (F.truncation, F.order, len(F)) == (3, 2, 3)
    assert F.to_json()["truncation"] == 3 and "order" not in F.to_json()
    assert expand(arch).truncation == 3  # default: just past n_1 = 2 (layer 1's scores first appear)
    assert sorted(package_symbols(arch, 3, Normalizer.generic(1))) == [
        "Kt1_11", "Qt1_11", "Vt1_11", "c_1", "c_2", "c_3", "x_11", "x_12"]
    assert "truncation: modulo eps^3, F_0 .. F_2" in F.summary()


def test_size_guards():
    with pytest.raises(ShapeError, match="45 parameters is too large"):
        expand(Architecture.uniform(layers=3, width=3, rank=1, tokens=2), truncation=3)
    with pytest.raises(TruncationError, match="too high"):
        expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=501)
    with pytest.raises(TruncationError, match="grows beyond 20 terms"):
        expand(Architecture.uniform(layers=2, width=2, tokens=3), truncation=7, max_terms=20)
    with pytest.raises(TruncationError, match="grows beyond 1 terms"):  # the sympy fallback
        expand(Architecture.uniform(layers=1, width=2, tokens=3, normalizer="exp(sqrt(2)*x)"), max_terms=20)
    with pytest.raises(SymattnError, match="unknown symbols"):
        expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3, point={"Q1_11": 1})


def test_the_spelled_out_formulas_of_the_docs():
    # docs/expand.md: for k = 1, with M = H C1 H C1^T H,
    # F_6 - F_6|W2=0 = c^3/t^4 P X M C2 J and F_18 - F_18|W3=0 = c^9/t^10 P X M C2 M C2^T M C3 J
    import random

    rng = random.Random(3)
    arch = Architecture([2, 3, 2, 2], [1, 2, 1], 3, Normalizer.generic(1))
    def value(m):
        return sp.Matrix(m.rows, m.cols, lambda r, c: sp.Rational(rng.randint(-9, 9), rng.randint(1, 4)))

    base = curve_symbols(arch)
    params = type(base)(*(tuple(value(m) for m in blocks) for blocks in (base.Q, base.K, base.V)))
    X = value(arch.input_symbols())
    c, t = sp.Rational(5, 7), 3
    H, J = _centering(t), sp.ones(t, t)
    P1, P2 = params.V[0], params.V[1] * params.V[0]
    P = params.V[2] * P2
    C = [X.T * Pi.T * K.T * Q * Pi * X for Pi, Q, K in zip([sp.eye(2), P1, P2], params.Q, params.K)]
    M = H * C[0] * H * C[0].T * H
    layer3 = c**9 / t**10 * P * X * M * C[1] * M * C[1].T * M * C[2] * J
    lc2 = leading_coefficient(Architecture([2, 3, 2], [1, 2], 3, Normalizer.generic(1)), 2)
    two_layers = type(base)(params.Q[:2], params.K[:2], params.V[:2])
    assert lc2.evaluate(two_layers, X, {"c_1": c}) == (c**3 / t**4 * P2 * X * M * C[1] * J)
    assert leading_coefficient(arch, 3).evaluate(params, X, {"c_1": c}) == layer3
    assert leading_coefficient(arch, 2).evaluate(params, X, {"c_1": c}) == params.V[2] * (
        c**3 / t**4 * P2 * X * M * C[1] * J)


def test_an_expansion_iterates_indexes_from_the_end_and_prints_like_sympy():
    F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
    assert list(F) == list(F.coefficients) and len(list(F)) == 3  # stopped at F_2, not TruncationError
    assert F[-1] == F[2] and F[-3] == F[0]
    with pytest.raises(TruncationError, match="from -3 to 2, got -4"):
        F[-4]
    with pytest.raises(TruncationError, match="not in this expansion modulo eps"):
        F[3]
    assert sp.latex(F).startswith(r"\begin{aligned}F_{0} &=") and r"F_{2} &=" in sp.latex(F)
    assert repr(F).startswith("Expansion(F_0..F_2 (modulo eps^3) of 1 layer(s)") and "\n" not in repr(F)
