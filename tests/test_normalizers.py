"""Normalizers: presets, exact Taylor data, first nonconstant degree k, evenness, errors.

Every Taylor coefficient is checked against an independent source: a closed
formula (1/n!, 1/(2m)!, ...) or ``sympy.series`` computed here in the test.
"""

from __future__ import annotations

import math
import re

import mpmath
import pytest
import sympy as sp

from symattn.errors import NormalizerError, SymattnError
from symattn.normalizers import PRESETS, Normalizer, as_normalizer, x

DEGREE = 12


def sympy_taylor(expr: sp.Expr, degree: int) -> list:
    """Coefficients of ``expr / expr(0)`` at 0 through ``degree``, from sympy.series."""
    series = sp.series(expr, x, 0, degree + 1).removeO()
    raw = [sp.expand(series).coeff(x, m) for m in range(degree + 1)]
    return [sp.simplify(c / raw[0]) for c in raw]


def assert_same_coefficients(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for m, (a, b) in enumerate(zip(got, expected)):
        assert sp.simplify(sp.sympify(a) - sp.sympify(b)) == 0, (m, a, b)


# -- presets ---------------------------------------------------------------------------


def test_preset_table_lists_the_documented_presets():
    assert set(PRESETS) == {"softmax", "exp", "cosh", "quadratic", "gauss", "softplus", "sigmoid"}


@pytest.mark.parametrize(
    "name, k, even",
    [
        ("softmax", 1, False),
        ("exp", 1, False),
        ("cosh", 2, True),
        ("quadratic", 2, True),
        ("gauss", 2, True),
        ("softplus", 1, False),
        ("sigmoid", 1, False),
    ],
)
def test_preset_k_and_evenness(name, k, even):
    norm = Normalizer.preset(name)
    assert norm.k == k
    assert norm.is_even is even
    assert norm.is_generic is False
    # evenness checked independently by substitution at a few rational points
    for point in (sp.Rational(1, 3), sp.Rational(5, 2), sp.Integer(7)):
        diff = (norm.expr.subs(x, point) - norm.expr.subs(x, -point)).evalf(30)
        assert bool(abs(diff) < 1e-25) is even


def test_preset_lookup_is_case_insensitive_and_unknown_preset_raises():
    assert Normalizer.preset(" SoftMax ").expr == sp.exp(x)
    with pytest.raises(NormalizerError, match="unknown normalizer preset"):
        Normalizer.preset("relu")


def test_exp_taylor_is_one_over_factorial():
    for name in ("softmax", "exp"):
        coeffs = Normalizer.preset(name).taylor(DEGREE)
        assert coeffs == [sp.Rational(1, math.factorial(n)) for n in range(DEGREE + 1)]
        assert all(c.is_Rational for c in coeffs)


def test_cosh_taylor_is_one_over_even_factorial():
    coeffs = Normalizer.preset("cosh").taylor(DEGREE)
    expected = [sp.Rational(1, math.factorial(n)) if n % 2 == 0 else 0 for n in range(DEGREE + 1)]
    assert coeffs == expected


def test_quadratic_taylor():
    assert Normalizer.preset("quadratic").taylor(6) == [1, 0, 1, 0, 0, 0, 0]


def test_gauss_taylor_is_one_over_m_factorial_at_degree_2m():
    coeffs = Normalizer.preset("gauss").taylor(DEGREE)
    expected = [sp.Rational(1, math.factorial(n // 2)) if n % 2 == 0 else 0 for n in range(DEGREE + 1)]
    assert coeffs == expected


def test_sigmoid_taylor_against_sympy_series():
    coeffs = Normalizer.preset("sigmoid").taylor(DEGREE)
    expected = sympy_taylor(1 / (1 + sp.exp(-x)), DEGREE)
    assert coeffs == expected
    # and a few values known by hand: sigmoid(x)/sigmoid(0) = 1 + x/2 - x^3/24 + x^5/240 - ...
    assert coeffs[:8] == [1, sp.Rational(1, 2), 0, sp.Rational(-1, 24), 0, sp.Rational(1, 240), 0,
                          sp.Rational(-17, 40320)]


def test_softplus_taylor_against_sympy_series():
    coeffs = Normalizer.preset("softplus").taylor(8)
    expected = sympy_taylor(sp.log(1 + sp.exp(x)), 8)
    assert_same_coefficients(coeffs, expected)
    # log(1 + e^x) = log 2 + x/2 + x^2/8 - x^4/192 + ...
    assert sp.simplify(coeffs[1] - 1 / (2 * sp.log(2))) == 0
    assert sp.simplify(coeffs[2] - 1 / (8 * sp.log(2))) == 0
    assert coeffs[3] == 0
    assert sp.simplify(coeffs[4] + 1 / (192 * sp.log(2))) == 0


def test_taylor_is_prefix_consistent_across_calls():
    norm = Normalizer("exp(x)*(1+x**2)")
    short = norm.taylor(3)
    long = norm.taylor(20)
    again = norm.taylor(5)
    assert long[:4] == short
    assert long[:6] == again
    assert len(long) == 21
    assert norm.taylor(0) == [1]
    with pytest.raises(NormalizerError):
        norm.taylor(-1)


# -- composite expressions ---------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, assume_positive, k, even",
    [
        ("exp(x)*(1+x**2)", False, 1, False),
        ("1/(1+exp(-x))", False, 1, False),
        ("cos(x)+2", True, 2, True),
        ("sin(x)+2", True, 1, False),
        ("sqrt(1+x**2)", False, 2, True),
        ("exp(sin(x))", False, 1, False),
        ("(2+x**2)/(1+x**2)", False, 2, True),
        ("exp(x+1)", False, 1, False),
        ("3+sin(x)**3", True, 3, False),
        ("exp(2*x)+exp(-x)", False, 1, False),
        ("1/cosh(x)", False, 2, True),
    ],
)
def test_composite_taylor_matches_sympy_series(expression, assume_positive, k, even):
    norm = Normalizer(expression, assume_positive=assume_positive)
    expr = sp.sympify(expression, locals={"x": x})
    expected = sympy_taylor(expr, 10)
    assert_same_coefficients(norm.taylor(10), expected)
    # k read off the independent series
    assert norm.k == k == next(m for m in range(1, 11) if expected[m] != 0)
    assert norm.is_even is even


def test_composite_exp_times_quadratic_closed_form():
    # e^x (1 + x^2): coefficient of x^n is 1/n! + 1/(n-2)!
    coeffs = Normalizer("exp(x)*(1+x**2)").taylor(DEGREE)
    expected = [sp.Rational(1, math.factorial(n)) + (sp.Rational(1, math.factorial(n - 2)) if n >= 2 else 0)
                for n in range(DEGREE + 1)]
    assert coeffs == expected


def test_cos_plus_two_closed_form():
    # (cos x + 2)/3 = 1 + sum_{m>=1} (-1)^m x^{2m} / (3 (2m)!)
    coeffs = Normalizer("cos(x)+2", assume_positive=True).taylor(DEGREE)
    expected = [1] + [sp.Rational((-1) ** (n // 2), 3 * math.factorial(n)) if n % 2 == 0 else 0
                      for n in range(1, DEGREE + 1)]
    assert coeffs == expected


def test_k_of_polynomials():
    assert Normalizer("1 + x**3 + x**4").k == 3
    assert Normalizer("1 + x**3 + x**4").is_even is False
    assert Normalizer("1 + x**2").k == 2
    # k beyond the first search window (degree 8) is still found
    assert Normalizer("1 + x**10").k == 10
    assert Normalizer("exp(x**12)").k == 12
    assert Normalizer("1 + x**3 + x**4").taylor(5) == [1, 0, 0, 1, 1, 0]
    # normalization by s(0)
    assert Normalizer("2 + 6*x**3 + 8*x**4").taylor(4) == [1, 0, 0, 3, 4]


def test_other_variable_and_caret_are_accepted():
    assert Normalizer("exp(t)").expr == sp.exp(x)
    assert Normalizer("t^2 + 1").expr == x**2 + 1
    assert Normalizer("e^x").expr == sp.exp(x)
    assert as_normalizer("cosh") == Normalizer("cosh(x)")
    assert as_normalizer("exp(2*x)").taylor(3) == [1, 2, 2, sp.Rational(4, 3)]


# -- generic Taylor data -----------------------------------------------------------------


def test_generic_k1():
    g = Normalizer.generic(k=1)
    coeffs = g.taylor(4)
    assert [str(c) for c in coeffs] == ["1", "c_1", "c_2", "c_3", "c_4"]
    assert coeffs[1].is_nonzero is True
    assert coeffs[2].is_nonzero is None  # higher coefficients are unconstrained
    assert g.k == 1 and g.is_even is False and g.is_generic is True


def test_generic_k2_even():
    g = Normalizer.generic(k=2, even=True)
    coeffs = g.taylor(7)
    assert [str(c) for c in coeffs] == ["1", "0", "c_2", "0", "c_4", "0", "c_6", "0"]
    assert coeffs[1] == 0 and coeffs[3] == 0 and coeffs[5] == 0 and coeffs[7] == 0
    assert coeffs[2].is_nonzero is True
    assert coeffs[4].is_nonzero is None
    assert g.k == 2 and g.is_even is True


def test_generic_k3():
    g = Normalizer.generic(k=3)
    coeffs = g.taylor(6)
    assert [str(c) for c in coeffs] == ["1", "0", "0", "c_3", "c_4", "c_5", "c_6"]
    assert coeffs[3].is_nonzero is True
    assert coeffs[3] == g.coefficient_symbol(3)
    assert all(coeffs[m].is_nonzero is None for m in (4, 5, 6))
    assert g.k == 3 and g.is_even is False


def test_generic_short_then_long_taylor_keeps_c_k_nonzero():
    g = Normalizer.generic(k=3)
    assert g.taylor(1) == [1, 0]
    assert g.taylor(4)[3].is_nonzero is True


@pytest.mark.parametrize("kwargs", [dict(k=0), dict(k=-2), dict(k=1, even=True), dict(k=3, even=True),
                                    dict(k=1.0), dict(k="2")])
def test_generic_invalid(kwargs):
    with pytest.raises(NormalizerError):
        Normalizer.generic(**kwargs)


def test_generic_cannot_be_evaluated():
    g = Normalizer.generic(k=2)
    with pytest.raises(NormalizerError):
        g.evaluate(1)


# -- errors ------------------------------------------------------------------------------


def test_normalizer_error_hierarchy():
    assert issubclass(NormalizerError, SymattnError)
    assert issubclass(NormalizerError, ValueError)
    with pytest.raises(ValueError):
        Normalizer("2")
    with pytest.raises(SymattnError):
        Normalizer("2")


def _witness(message: str):
    # "at x = POINT it equals VALUE", VALUE exact, followed by " = DECIMAL" when not rational
    match = re.search(r"at x = (.+) it equals (.+?)(?: = -?[0-9.e-]+)?$", message)
    assert match, message
    return sp.sympify(match.group(1)), match.group(2)


@pytest.mark.parametrize("expression", ["1 + x**3", "1 + x", "x**2", "x**2 - 2*x + 1",
                                        "x**2 - x/3 + 1/36", "1 + x**2 + x**3"])
def test_non_positive_polynomial_names_a_point_where_it_is_not_positive(expression):
    with pytest.raises(NormalizerError, match="is not positive on R") as info:
        Normalizer(expression)
    point, value = _witness(str(info.value))
    exact = sp.sympify(expression, locals={"x": x}).subs(x, point)
    assert exact <= 0
    assert sp.Rational(value) == exact


def test_one_plus_x_cubed_message():
    with pytest.raises(NormalizerError) as info:
        Normalizer("1 + x**3")
    assert "x = -2" in str(info.value)
    assert "-7" in str(info.value)


@pytest.mark.parametrize("expression", ["exp(x) - 2", "cos(x)"])
def test_non_positive_transcendental_names_a_point(expression):
    with pytest.raises(NormalizerError, match="is not positive on R") as info:
        Normalizer(expression)
    point, _ = _witness(str(info.value))
    value = sp.sympify(expression, locals={"x": x}).subs(x, point).evalf(30)
    assert value <= 0


@pytest.mark.parametrize("expression", ["2", "  7/3 ", "exp(1) + pi"])
def test_constant_raises(expression):
    with pytest.raises(NormalizerError, match="constant"):
        Normalizer(expression)


@pytest.mark.parametrize(
    "expression, culprit",
    [
        ("Abs(x)+1", "Abs"),
        (sp.Piecewise((1, x > 0), (2, True)), "Piecewise"),
        ("sign(x)+2", "sign"),
        ("Heaviside(x)+1", "Heaviside"),
        ("Max(x,0)+1", "Max"),
        ("Min(x,0)+3", "Min"),
        ("floor(x)+5", "floor"),
        ("ceiling(x)+5", "ceiling"),
    ],
)
def test_non_analytic_raises_and_names_the_culprit(expression, culprit):
    with pytest.raises(NormalizerError, match="not real-analytic") as info:
        Normalizer(expression)
    assert culprit in str(info.value)
    # assume_positive does not switch off the analyticity check
    with pytest.raises(NormalizerError, match="not real-analytic"):
        Normalizer(expression, assume_positive=True)


@pytest.mark.parametrize("expression", ["1/x", "exp(1/x)", "1/(x - 1) + 3"])
def test_singular_expression_raises(expression):
    with pytest.raises(NormalizerError, match="not real-analytic"):
        Normalizer(expression, assume_positive=True)


def test_several_free_symbols_raise():
    with pytest.raises(NormalizerError, match="more than one free symbol") as info:
        Normalizer("x*y+2")
    assert "x, y" in str(info.value)
    t = sp.Symbol("t")
    with pytest.raises(NormalizerError, match="more than one free symbol"):
        Normalizer(x * t + 2)


@pytest.mark.parametrize("expression", ["foo(", "1 +* x", "", "   "])
def test_unparsable_raises(expression):
    with pytest.raises(NormalizerError):
        Normalizer(expression)


def test_unparsable_message():
    with pytest.raises(NormalizerError, match="cannot read the normalizer 'foo\\(': invalid syntax"):
        Normalizer("foo(")


def test_undecidable_positivity_raises_unless_assumed():
    # erf has no interval enclosure in the decider: positive, but not provably so here
    with pytest.raises(NormalizerError, match="cannot decide whether normalizer 2\\+erf\\(x\\) is positive") as info:
        Normalizer("2+erf(x)")
    assert "--assume-positive" in str(info.value) and "erf" in str(info.value)
    norm = Normalizer("2+erf(x)", assume_positive=True)
    assert norm.k == 1 and norm.is_even is False
    # (2 + erf x)/2 = 1 + x/sqrt(pi) - x^3/(3 sqrt(pi)) + ...
    assert norm.taylor(3) == [1, 1 / sp.sqrt(sp.pi), 0, -1 / (3 * sp.sqrt(sp.pi))]


@pytest.mark.parametrize("expression", ["2+sin(x)", "cos(x)+2", "exp(x)-x", "cosh(x)-x**2/2",
                                        "x**2-sqrt(2)*x+1", "3+sin(x)**3"])
def test_positive_transcendental_normalizers_are_proved_positive(expression):
    norm = Normalizer(expression)
    f = sp.lambdify(x, sp.sympify(expression, locals={"x": x}), modules="mpmath")
    # an independent look: positive on a fine grid (the decider proved it on all of R)
    assert min(f(mpmath.mpf(j) / 8) for j in range(-400, 401)) > 0
    assert norm.taylor(0) == [1]


@pytest.mark.parametrize("expression", ["1+sin(x)", "1+cos(x)", "x**2-2*sqrt(2)*x+2"])
def test_a_zero_of_the_normalizer_is_named_exactly(expression):
    with pytest.raises(NormalizerError, match="is not positive on R") as info:
        Normalizer(expression)
    named, value = _witness(str(info.value))
    assert value == "0" and named.is_real
    assert sp.simplify(sp.sympify(expression, locals={"x": x}).subs(x, named)) == 0  # an exact zero


@pytest.mark.parametrize("expression", ["1 + tanh(x)", "1 + erf(x)"])
def test_positive_function_with_tiny_values_is_not_reported_as_nonpositive(expression):
    # 1 + tanh(x) = 2 / (1 + exp(-2 x)) > 0 and 1 + erf(x) = erfc(-x) > 0 everywhere
    f = sp.lambdify(x, sp.sympify(expression, locals={"x": x}), modules="mpmath")
    with mpmath.workdps(1000):  # 1 + erf(-36.5) = erfc(36.5) is about 1e-580
        assert f(mpmath.mpf(-73) / 2) > 0
    try:
        Normalizer(expression)
    except NormalizerError as err:
        assert "is not positive on R" not in str(err)


def test_generic_normalizers_of_one_k_and_parity_are_one_normalizer():
    import pickle

    from symattn.model import Architecture

    first, second = Normalizer.generic(k=2, even=True), Normalizer.generic(k=2, even=True)
    assert first == second and hash(first) == hash(second)
    assert first.taylor(4) == second.taylor(4)  # the same symbols c_2, c_4
    assert first != Normalizer.generic(k=2) and first != Normalizer.generic(k=4, even=True)
    assert Normalizer.generic() != as_normalizer("exp(x)") and as_normalizer("exp(x)") != Normalizer.generic()
    arch = Architecture.uniform(layers=2, normalizer=first)
    assert pickle.loads(pickle.dumps(arch)) == arch == Architecture.uniform(layers=2, normalizer=second)
    assert len({arch, Architecture.uniform(layers=2, normalizer=Normalizer.generic(k=2, even=True))}) == 1


# -- one list of presets: languages.NORMALIZER_PRESETS ---------------------------------------------------
def _preset_names():
    from symattn.languages import NORMALIZER_PRESETS

    return [name for name, _ in NORMALIZER_PRESETS]


def test_the_preset_list_is_one_list():
    # README listed 6 names, --help added lightning, the error added exp: one source now
    from symattn.languages import PRESET_SUMMARY

    assert set(_preset_names()) == set(PRESETS) | {"lightning", "generic(k)"}
    for name in _preset_names():
        assert name.split("(")[0] in PRESET_SUMMARY


@pytest.mark.parametrize("document", ["README.md", "docs/cli.md", "docs/input.md"])
def test_readme_and_docs_list_every_preset(document):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / document).read_text()
    missing = [name for name in _preset_names() if f"`{name}`" not in text]
    assert not missing, (document, missing)


def test_help_and_errors_list_every_preset():
    import argparse

    from symattn.cli.arguments import add_common_arguments

    parser = argparse.ArgumentParser()
    add_common_arguments(parser)
    (action,) = [a for a in parser._actions if "--normalizer" in a.option_strings]
    with pytest.raises(NormalizerError) as info:
        as_normalizer("relu")
    with pytest.raises(NormalizerError) as preset_info:
        Normalizer.preset("relu")
    for text in (action.help, str(info.value), str(preset_info.value)):
        for name in _preset_names():
            assert name.split("(")[0] in text, (name, text)


def test_every_listed_name_is_accepted_by_preset_and_as_normalizer():
    from symattn.model import Architecture

    for name in _preset_names():
        name = name.replace("(k)", "(2)")
        assert Normalizer.preset(name) == as_normalizer(name)
        Architecture.uniform(layers=1, normalizer=name)
    # Normalizer.preset("lightning") raised while Architecture(normalizer="lightning") worked
    assert Normalizer.preset("lightning").is_lightning
    assert Normalizer.preset("exp") == Normalizer.preset("softmax") == as_normalizer("exp")


@pytest.mark.parametrize("text, k, even", [("generic", 1, False), ("generic(3)", 3, False), ("generic(k=2)", 2, False),
                                           ("generic(2, even)", 2, True), ("Generic(k=4, even=True)", 4, True),
                                           ("generic(k=2, even=false)", 2, False), ("generic(k=2, even)", 2, True)])
def test_generic_names_are_read_by_a_strict_pattern(text, k, even):
    norm = as_normalizer(text)
    assert norm == Normalizer.generic(k, even) and norm.is_generic
    assert as_normalizer(norm.name) == norm  # the name a generic normalizer prints reads back


@pytest.mark.parametrize("text", ["generic(x)", "generic(2, odd)", "generic(__import__('os'))", "generic(2",
                                  "generic(99999)"])
def test_malformed_generic_names_are_refused(text):
    with pytest.raises(NormalizerError, match="generic"):
        as_normalizer(text)
