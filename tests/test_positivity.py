"""Positivity on R: exact proofs, exactly confirmed witnesses, honest "undecided".

Every witness is checked here independently of the module: the reported value
must equal ``expr.subs(x, point)`` and be <= 0 (exactly 0 where the function
touches 0).
"""

from __future__ import annotations

import time

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.positivity import PositivityVerdict, decide_positivity

x = sp.Symbol("x", real=True)
R = sp.Rational

POSITIVE = [
    2 + sp.sin(x),
    sp.cos(x) + 2,
    sp.exp(x) - x,
    sp.cosh(x) - x**2 / 2,
    x**2 - sp.sqrt(2) * x + 1,
    sp.exp(x),
    sp.cosh(x),
    1 + x**2,
    sp.exp(x**2),
    sp.log(1 + sp.exp(x)),
    1 / (1 + sp.exp(-x)),
    1 + x**3 + x**4,
    sp.exp(x) - 2 * x,  # minimum 2 - 2 log 2 at log 2
]


def assert_confirmed_witness(expr, verdict: PositivityVerdict, *, zero: bool = False) -> None:
    """The witness is exact, equals expr at the point, and is <= 0 (== 0 if ``zero``)."""
    assert verdict.positive is False
    point, value = verdict.witness
    assert not point.has(sp.Float) and not value.has(sp.Float)
    assert point.is_number and point.is_real
    assert sp.simplify(expr.subs(x, point) - value) == 0
    if zero:
        assert value == 0
        assert expr.subs(x, point) == 0
    else:
        assert value == 0 or sp.N(value, 50) < 0
    assert verdict.method.startswith("disproved")


# -- proofs -------------------------------------------------------------------------------


@pytest.mark.parametrize("expr", POSITIVE, ids=str)
def test_listed_normalizers_are_proved_positive(expr):
    verdict = decide_positivity(expr, x)
    assert verdict == PositivityVerdict(True, None, verdict.method)
    assert verdict.method.startswith("proved positive")


@pytest.mark.parametrize("expr", POSITIVE, ids=str)
def test_listed_normalizers_are_decided_fast(expr):
    decide_positivity(expr, x)  # warm caches shared with other tests (sympy, imports)
    start = time.perf_counter()
    decide_positivity(expr, x)
    # typically 1-40 ms; generous for a loaded 2-core machine
    assert time.perf_counter() - start < 2.0


def test_method_names_the_tail_certificate():
    method = decide_positivity(sp.cosh(x) - x**2 / 2, x).method
    assert "interval arithmetic on [-8, 8]" in method
    assert "f'' > 0" in method  # cosh(x) - 1 > 0 on the tails
    assert "f'(-8) < 0" in method


def test_rational_polynomial_is_decided_exactly():
    verdict = decide_positivity(1 + x**3 + x**4, x)
    assert verdict.positive is True
    assert "Sturm" in verdict.method


def test_tiny_positive_constant_in_a_polynomial_is_exact():
    assert decide_positivity(x**2 + R(1, 10**30), x).positive is True


def test_one_plus_tanh_is_proved_through_an_equivalent_form():
    verdict = decide_positivity(1 + sp.tanh(x), x)
    assert verdict.positive is True
    assert "equivalent form" in verdict.method


@pytest.mark.parametrize(
    "expr",
    [
        1 / (sp.exp(x) + sp.exp(-x)),  # the denominator's interval reaches 0; its sign does not
        sp.exp(x) + sp.cos(x) + 1,  # exp > 0 plus a bracket >= 0
        sp.exp(x) * (2 + sp.sin(x)),
        2**x,
        1 - sp.tanh(4 * x - sp.cos(x)),
    ],
    ids=str,
)
def test_sign_rules(expr):
    assert decide_positivity(expr, x).positive is True


def test_constants():
    assert decide_positivity(sp.pi - 3, x).positive is True
    verdict = decide_positivity(sp.E - 3, x)
    assert verdict.positive is False and verdict.witness == (0, sp.E - 3)
    assert decide_positivity(sp.Integer(0), x).witness == (0, 0)


# -- disproofs ------------------------------------------------------------------------------


def test_one_plus_sin_has_an_exact_zero_witness():
    expr = 1 + sp.sin(x)
    verdict = decide_positivity(expr, x)
    assert_confirmed_witness(expr, verdict, zero=True)
    point, value = verdict.witness
    assert sp.sin(point) == -1
    assert verdict.witness == (-sp.pi / 2, 0)


def test_one_plus_cube_is_negative_at_minus_two():
    verdict = decide_positivity(1 + x**3, x)
    assert verdict.witness == (-2, -7)
    assert_confirmed_witness(1 + x**3, verdict)


def test_cos_is_negative_somewhere():
    verdict = decide_positivity(sp.cos(x), x)
    assert_confirmed_witness(sp.cos(x), verdict)
    assert verdict.witness == (2, sp.cos(2))


def test_square_vanishes_at_zero():
    verdict = decide_positivity(x**2, x)
    assert verdict.witness == (0, 0)
    assert_confirmed_witness(x**2, verdict, zero=True)


def test_rational_polynomial_negative_only_between_irrational_roots():
    expr = (x**2 - 2) * (x**2 - 3) + R(1, 10**6)  # negative only near +-1.58
    verdict = decide_positivity(expr, x)
    assert_confirmed_witness(expr, verdict)
    assert verdict.witness[1] < 0


def test_rational_polynomial_with_a_double_irrational_root():
    expr = (x**2 - 2) ** 2
    verdict = decide_positivity(expr, x)
    assert_confirmed_witness(expr, verdict, zero=True)
    assert verdict.witness[0] in (sp.sqrt(2), -sp.sqrt(2))


def test_irrational_polynomial_touching_zero_is_identified():
    expr = x**2 - 2 * sp.sqrt(2) * x + 2  # (x - sqrt(2))**2
    verdict = decide_positivity(expr, x)
    assert verdict.witness == (sp.sqrt(2), 0)
    assert_confirmed_witness(expr, verdict, zero=True)


def test_shifted_zero_of_a_trigonometric_function_is_identified():
    expr = 1 + sp.sin(x + R(1, 3))
    verdict = decide_positivity(expr, x)
    assert_confirmed_witness(expr, verdict, zero=True)


def test_zero_witness_is_found_whatever_the_scale():
    for scale in (R(1, 10**30), 10**30):
        expr = scale * (1 + sp.sin(x))
        assert_confirmed_witness(expr, decide_positivity(expr, x), zero=True)


def test_narrow_negative_dip_gets_a_witness_inside_the_radius():
    expr = R(999999, 1000000) + sp.sin(x)  # negative only within 0.0015 of -pi/2 + 2 k pi
    verdict = decide_positivity(expr, x)
    assert_confirmed_witness(expr, verdict)
    assert abs(verdict.witness[0]) <= 8


def test_variable_exponents_are_not_expanded_exactly():
    # 2**(x**2) at a large sample point is an integer with ~10**13 digits
    verdict = decide_positivity(2 ** (x**2) - 3, x)
    assert verdict.witness == (0, -2)
    assert decide_positivity(2 ** (1 / x), x).positive is None  # undefined at 0


def test_not_real_somewhere_is_not_positive():
    verdict = decide_positivity(sp.log(x) + 5, x)
    assert verdict.positive is False
    point, value = verdict.witness
    assert value == sp.log(x).subs(x, point) + 5 and sp.im(value) != 0


# -- tight cases: never a wrong answer -------------------------------------------------------


def test_tight_positive_minimum_is_undecided_or_proved():
    # exp(x) - x - 1 has minimum 0 at 0; 1e-40 is far below what sampling or
    # intervals can see at 30 digits, so "undecided" is the honest answer
    verdict = decide_positivity(sp.exp(x) - x - 1 + R(1, 10**40), x)
    assert verdict.positive in (None, True)
    assert verdict.witness is None
    if verdict.positive is None:
        assert verdict.method.startswith("undecided")


def test_tight_positive_minimum_at_1e_20_is_proved():
    assert decide_positivity(sp.exp(x) - x - 1 + R(1, 10**20), x).positive is True


def test_tight_negative_minimum_is_disproved_exactly():
    expr = sp.exp(x) - x - 1 - R(1, 10**40)
    verdict = decide_positivity(expr, x)
    assert verdict.witness == (0, -R(1, 10**40))
    assert_confirmed_witness(expr, verdict)


def test_touching_zero_is_disproved_exactly():
    expr = sp.exp(x) - x - 1
    verdict = decide_positivity(expr, x)
    assert verdict.witness == (0, 0)


@pytest.mark.parametrize(
    "expr",
    [
        sp.erf(x) + 2,  # unknown to the interval evaluator
        sp.Abs(x) + 1,
        sp.sin(x) ** 2 + sp.cos(x) ** 2,  # needs simplification, not bounds
        sp.cosh(x) - x**2 / 2 - x**4 / 24,  # needs the 4th derivative on the tails
        1 + 1 / x**2,  # undefined at 0
        sp.tan(x) ** 2 + 1,  # undefined at the poles of tan
        sp.gamma(x) ** 2 + 1,
    ],
    ids=str,
)
def test_undecidable_here_is_none_not_an_error(expr):
    start = time.perf_counter()
    verdict = decide_positivity(expr, x)
    assert verdict.positive in (None, True)
    assert verdict.witness is None
    assert time.perf_counter() - start < 5.0


def test_budgets_give_undecided():
    assert decide_positivity(sp.exp(x) - 2 * x, x, max_boxes=1).positive is None
    verdict = decide_positivity(sp.cosh(x) - x**2 / 2, x, max_depth=1)
    assert verdict.positive is None and "x >= 8" in verdict.method


def test_nonfinite_or_multivariate_input_is_undecided():
    y = sp.Symbol("y")
    assert decide_positivity(x + y, x).positive is None
    assert decide_positivity(sp.zoo * x, x).positive is None


def test_bad_arguments_raise():
    with pytest.raises(TypeError):
        decide_positivity("exp(x)", x)
    with pytest.raises(TypeError):
        decide_positivity(sp.exp(x), "x")
    with pytest.raises(ValueError):
        decide_positivity(sp.exp(x), x, radius=0)
    with pytest.raises(ValueError):
        decide_positivity(sp.exp(x), x, max_boxes=0)


def test_other_radius():
    verdict = decide_positivity(sp.cosh(x) - x**2 / 2, x, radius=R(5, 2))
    assert verdict.positive is True
    assert "[-2.5, 2.5]" in verdict.method


# -- property: a + b sin(x) ------------------------------------------------------------------

positive_rationals = st.builds(
    R, st.integers(min_value=1, max_value=10**4), st.integers(min_value=1, max_value=10**3)
)


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=positive_rationals, b=positive_rationals)
def test_a_plus_b_sin(a, b):
    expr = a + b * sp.sin(x)
    verdict = decide_positivity(expr, x)
    if a > b:
        assert verdict.positive is True
    elif a < b:
        assert_confirmed_witness(expr, verdict)
        assert sp.N(verdict.witness[1], 50) < 0
    else:
        assert_confirmed_witness(expr, verdict, zero=True)


@settings(max_examples=20, deadline=None)
@given(b=positive_rationals, gap=st.integers(min_value=1, max_value=10**6))
def test_a_plus_b_sin_close_to_the_boundary(b, gap):
    # a just below b: the negative dip near -pi/2 is narrow and shallow
    a = b * (1 - R(1, gap + 1))
    expr = a + b * sp.sin(x)
    verdict = decide_positivity(expr, x)
    assert_confirmed_witness(expr, verdict)
    assert sp.N(verdict.witness[1], 50) < 0
