"""Expansions behave like sympy objects: slices, subs by name, xreplace, evalf, simplify, printing hooks."""

import random
import re
import shutil
import subprocess

import pytest
import sympy as sp

from symattn.algebra.exactseries import PolynomialSeriesDomain
from symattn.errors import SymattnError
from symattn.expand import (
    CoefficientMatrix,
    Expansion,
    FlintToSympy,
    curve_symbols,
    expand,
    latex,
    leading_coefficient,
    package_symbols,
)
from symattn.model import Architecture
from symattn.normalizers import Normalizer


@pytest.fixture(scope="module")
def F():
    return expand(Architecture.uniform(layers=1, width=1, rank=1, tokens=2), truncation=5,
                  normalizer=Normalizer.generic(1))


# -- the fast conversion from flint is sympy's own canonical form ----------------------------------------
@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_the_writer_builds_exactly_the_expression_sympy_builds():
    symbols = sp.symbols("Kt1_11 Qt1_11 Vt1_11 x_11 x_12 a b", real=True) + (
        sp.Symbol("c_1", real=True, nonzero=True), sp.Symbol("c_2", real=True))
    domain = PolynomialSeriesDomain(1, symbols)
    rng = random.Random(5)
    writer = FlintToSympy(domain.symbols)
    for trial in range(400):
        if trial % 50 == 0:  # a fresh writer meets new factors in the middle of a polynomial
            writer = FlintToSympy(domain.symbols)
        expr = sp.expand(sum(
            sp.Rational(rng.randint(-9, 9), rng.choice([1, 1, 2, 3, 7]))
            * sp.Mul(*[rng.choice(symbols) ** rng.randint(0, 4) for _ in range(rng.randint(0, 5))])
            for _ in range(rng.randint(1, 12))))
        poly = domain._convert(expr)
        built = writer(poly)
        assert built == expr == domain.to_sympy(poly)
        assert sp.srepr(built) == sp.srepr(domain.to_sympy(poly)) and hash(built) == hash(expr)
    assert writer(domain._convert(sp.Integer(0))) == 0 and writer(domain._convert(sp.Rational(3, 2))) == sp.Rational(3, 2)


def test_two_layer_expansion_is_unchanged_by_the_fast_conversion():
    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2)
    F = expand(arch, truncation=7, normalizer=Normalizer.generic(1))
    for n in (2, 6):
        for entry in F[n]:
            assert sp.srepr(entry) == sp.srepr(sp.Poly(entry, *sorted(entry.free_symbols, key=str)).as_expr())


# -- the sequence protocol ------------------------------------------------------------------------------
def test_slices_negative_indices_and_iteration(F):
    assert F[1:3] == (F[1], F[2]) and F[::2] == (F[0], F[2], F[4]) and F[-2:] == (F[3], F[4])
    assert [n for n, _ in enumerate(F)] == [0, 1, 2, 3, 4]
    assert isinstance(F[2], CoefficientMatrix) and isinstance(F[2], sp.ImmutableMatrix)


# -- substitution by name -------------------------------------------------------------------------------
def test_subs_matches_the_package_symbols_by_name(F):
    c1 = Normalizer.generic(1).coefficient_symbol(1)
    assert sp.Symbol("c_1") != c1  # the trap: the package's c_1 carries assumptions
    assert F[2].subs(sp.Symbol("c_1"), 0) == F[2]  # plain sympy: a silent no-op
    by_name = F.subs("c_1", 0)
    assert by_name[2] == sp.zeros(1, 2) and by_name[2] == F[2].subs(c1, 0)
    assert F.subs(sp.Symbol("c_1"), 0)[2] == by_name[2]
    assert F.subs({"c_1": 0})[2] == F.subs([("c_1", 0)])[2] == by_name[2]
    assert by_name.point == (("c_1", 0),) and F.point == ()
    # the same rule as expand(..., point=...)
    arch = F.architecture
    at_point = expand(arch, truncation=5, point={"c_1": 1, "c_2": 0})
    assert at_point[4] == F.subs({"c_1": 1, "c_2": 0})[4]


def test_subs_values_are_read_by_the_safe_parser_and_keys_may_be_expressions(F):
    c1, c2 = F.symbol("c_1"), F.symbol("c_2")
    half = F.subs("c_1", "1/2")
    assert half[2] == F[2].subs(c1, sp.Rational(1, 2))
    assert F.subs("c_1", "c_2 + 1")[2] == F[2].subs(c1, c2 + 1)  # names in the value are the package's
    x11, x12 = F.symbol("x_11"), F.symbol("x_12")
    assert F.subs("x_11 - x_12", 0)[2] == F[2].subs(x11 - x12, 0)
    with pytest.raises(SymattnError, match="'__import__' is not accepted"):
        F.subs("c_1", "__import__('os')")


def test_an_unknown_name_is_an_error_never_a_silent_no_op(F):
    for key in ("c_9", sp.Symbol("c_9"), "Q1_11"):
        with pytest.raises(SymattnError, match="unknown symbol name"):
            F.subs(key, 1)
    with pytest.raises(SymattnError, match="unknown symbol name 'y'"):
        F.subs(sp.Symbol("y") + F.symbol("c_1"), 1)
    with pytest.raises(SymattnError, match="unknown symbol name"):
        F.symbol("What1")
    with pytest.raises(SymattnError, match="subs takes"):
        F.subs("c_1", 1, 2)


def test_xreplace_evalf_applyfunc_simplify(F):
    point = {"x_11": 1, "x_12": -1, "Qt1_11": 2, "Kt1_11": 3, "Vt1_11": 5}
    G = F.xreplace(point)
    exact = {F.symbol(name): value for name, value in point.items()}
    assert all(G[n] == F[n].xreplace(exact) for n in range(5))
    assert G[2] == sp.Matrix([[30 * F.symbol("c_1"), -30 * F.symbol("c_1")]])
    N = G.subs("c_1", sp.Rational(1, 3)).evalf(5)
    assert N[2][0, 0] == sp.Float(10, 5) and isinstance(N, Expansion)
    assert sp.N(G.subs("c_1", sp.Rational(1, 3)), 5)[2] == N[2]
    factored = F.applyfunc(sp.factor)
    assert factored[2][0, 0] == sp.factor(F[2][0, 0])
    assert sp.expand(factored)[2] == F[2]
    assert sp.simplify(F)[2].applyfunc(sp.expand) == F[2]
    assert isinstance(sp.simplify(F), Expansion)


def test_package_symbols_lists_every_name():
    arch = Architecture.uniform(layers=2, width=1, tokens=2)
    names = package_symbols(arch, 3, Normalizer.generic(2))
    assert {"Qt2_11", "Vt1_11", "x_12", "c_2", "c_3"} <= set(names)
    assert names["x_12"] == arch.input_symbols()[0, 1]
    assert names["Qt2_11"] == curve_symbols(arch).Q[1][0, 0]


# -- printing ---------------------------------------------------------------------------------------------
def test_latex_of_a_coefficient_uses_the_package_names(F):
    text = sp.latex(F[2])
    assert r"(\tilde{K}_{1})_{11}" in text and "Kt_{1 11}" not in text and "x_{11}" in text
    # the same names as the export, which writes F_2 as its matrix form and F_4 entry by entry, factored
    exported = F.to_latex()
    assert r"F_{2} = \frac{c_{1}}{2}\, P X H C_{1}" in exported
    assert all(r"(\tilde{K}_{1})_{11}" in line for line in exported.splitlines() if "(F_{4})_{11} &=" in line)
    assert "Kt_{" not in exported and "Kt1" not in exported and "_{1 11}" not in exported
    assert r"(\tilde{K}_{1})_{11}" in sp.latex(F[2].subs(F.symbol("c_1"), 2))  # kept by sympy operations
    assert latex(F[2][0, 0]).count(r"(\tilde{Q}_{1})_{11}") >= 1
    assert latex(F[2][0, 0], symbol_names={F.symbol("c_1"): "c"}).count("c ") >= 1
    assert F[2]._repr_latex_().count(r"(\tilde{V}_{1})_{11}") >= 1


def test_pretty_and_sstr_hooks(F):
    pretty = sp.pretty(F, use_unicode=False, wrap_line=False)
    assert pretty.splitlines()[0].rstrip() == "expansion modulo eps^5" and "F_1 = [0  0]" in pretty
    text = sp.sstr(F)
    assert text.splitlines()[2] == "F_1 = Matrix([[0, 0]])"
    assert "F_4 = " in str(F) and "\n" not in repr(F)


def test_explicit_leading_coefficient_is_a_coefficient_matrix():
    lc = leading_coefficient(Architecture.uniform(layers=1, width=1, tokens=2), 1)
    assert isinstance(lc.explicit(), CoefficientMatrix)
    assert r"(\tilde{Q}_{1})_{11}" in sp.latex(lc.explicit())


# -- matrix forms of the network at hand --------------------------------------------------------------------
def _random_point(arch, rng):
    base = curve_symbols(arch)

    def value(m):
        return sp.Matrix(m.rows, m.cols, lambda r, c: sp.Rational(rng.randint(-9, 9), rng.randint(1, 4)))

    return type(base)(*(tuple(value(m) for m in blocks) for blocks in (base.Q, base.K, base.V))), \
        value(arch.input_symbols())


def test_the_matrix_form_names_H_J_and_C_and_reduces_the_powers_of_H():
    arch = Architecture.uniform(layers=2, width=2, tokens=3)
    lc = leading_coefficient(arch, 2)
    assert str(lc.matrix_form) == "(1/81)*P*X*H*C_1*H*C_1.T*H*C_2*J"  # c^3/t^4 P X H C_1 H C_1^T H C_2 J
    generic = leading_coefficient(arch, 2, Normalizer.generic(1))
    assert str(generic.matrix_form) == "(c_1**3/81)*P*X*H*C_1*H*C_1.T*H*C_2*J"
    assert str(leading_coefficient(arch, 1).matrix_form) == "(1/9)*P*X*H*C_1*J"
    assert str(leading_coefficient(Architecture.uniform(layers=1, width=2, tokens=3), 1).matrix_form) == \
        "(1/3)*P*X*H*C_1"
    k2 = leading_coefficient(arch, 2, Normalizer.generic(2))
    assert str(k2.matrix_form) == \
        "(2*alpha_2*c_2**3/81)*P*X*H*HadamardPower(C_1, 2)*H*HadamardPower(C_1.T, 2)*H*C_2*J"
    assert dict(k2.definitions)["alpha_2"] == sp.Trace(sp.OneMatrix(3, 1).T * k2.symbol("C_2")
                                                       * sp.OneMatrix(3, 1)) / 9
    names = [name for name, _ in lc.definitions]
    assert names == ["H", "J", "P", "What_1", "C_1", "What_2", "C_2"]  # one name per object: What_i, as printed
    assert lc.symbol("What_1").name == "What_1" and lc.symbol("What1") is lc.symbol("What_1")  # alias on input
    assert "What1" not in lc.symbol_names() and "What1" not in str(lc) and "What1" not in lc.to_json()["formula"]
    for e in (lc.matrix_form, generic.matrix_form):
        assert not e.atoms(sp.MatPow) and "I -" not in str(e)


@pytest.mark.parametrize("widths, ranks, tokens, k, layer", [
    ([2, 2, 2], [1, 1], 3, 1, 2), ([2, 2, 2], [1, 1], 3, 2, 2), ([2, 3, 2, 2], [1, 2, 1], 3, 1, 3),
    ([1, 1, 1, 1], [1, 1, 1], 2, 2, 3), ([2, 2, 2], [1, 1], 3, 1, 1), ([2, 2], [1], 3, 2, 1),
    ([2, 2, 2], [1, 1], 4, 3, 2),
])
def test_the_matrix_form_equals_the_other_two_forms(widths, ranks, tokens, k, layer):
    rng = random.Random(len(widths) * 10 + k)
    arch = Architecture(widths, ranks, tokens, Normalizer.generic(k))
    lc = leading_coefficient(arch, layer)
    params, X = _random_point(arch, rng)
    values = {f"c_{k}": sp.Rational(3, 5)}
    by_tokens = lc.evaluate(params, X, values)
    assert lc.evaluate(params, X, values, form="matrix") == by_tokens == lc.evaluate(params, X, values,
                                                                                       form="effective")
    assert by_tokens != sp.zeros(*by_tokens.shape)
    # and with H, J, C_i written out by hand from their definitions
    t = tokens
    J = sp.ones(t, t)
    names = lc.symbol_names()
    env = {names["H"]: sp.eye(t) - J / t, names.get("J", "J"): J, names["X"]: X}
    prefix = sp.eye(widths[0])
    for i in range(1, arch.layers + 1):
        if i <= layer:
            W = prefix.T * params.K[i - 1].T * params.Q[i - 1] * prefix
            C = X.T * W * X
            env[lc.symbol(f"C_{i}")] = C
            if f"alpha_{i}" in lc.symbol_names():
                env[lc.symbol(f"alpha_{i}")] = sum(C) / t**2
        prefix = params.V[i - 1] * prefix
    env[lc.symbol("P")] = prefix
    from symattn.algebra.matrix_expressions import evaluate_matrix_expression
    by_hand = evaluate_matrix_expression(lc.matrix_form, env).xreplace({lc.coefficients[0]: sp.Rational(3, 5)})
    assert by_hand.applyfunc(sp.expand) == by_tokens


def test_verification_checks_the_matrix_form_and_catches_a_wrong_one():
    import dataclasses

    from symattn.expand import verify_leading_coefficient

    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2, normalizer=Normalizer.generic(1))
    right = leading_coefficient(arch, 2)
    proof = verify_leading_coefficient(arch, 2, symbolic=True)
    assert proof.proved and "in H, J, C_i" in proof.method
    wrong = dataclasses.replace(right, matrix_form=2 * right.matrix_form)
    for result in (verify_leading_coefficient(arch, 2, candidate=wrong, symbolic=True),
                   verify_leading_coefficient(arch, 2, candidate=wrong, points=1)):
        assert result.verdict is False and "the matrix form" in result.method or "the formula" in result.method
        assert max(abs(int(v)) for _, v in result.counterexample.point) <= 10  # readable, not 2^20
        assert result.counterexample.claimed != result.counterexample.computed


def test_the_latex_shows_this_network_then_the_general_formula():
    lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
    first = lc.matrix_latex().splitlines()[0]
    assert first == (r"&F_{6} - F_{6}\big|_{\widehat W_{2} = 0} = \frac{1}{81}\, P X H C_{1} H C_{1}^{\top} H C_{2} J"
                     r" \\")
    latex_text = lc.to_latex()
    assert latex_text.index(first) < latex_text.index(lc.latex.splitlines()[0])
    assert r"H = I_{3} - \tfrac{1}{3} J" in latex_text and r"C_{2} = X^{\top} \widehat{W}_{2} X" in latex_text
    assert "^{T}" not in latex_text and r"\hat" not in latex_text  # one transpose sign, one hat, as symattn.naming
    # the definitions take one line each (What_i beside C_i), not one line past the page
    assert max(len(line) for line in lc.matrix_latex().splitlines()) < 150
    assert lc._repr_latex_().count(r"\frac{1}{81}") == 1
    markdown = lc.to_markdown()
    assert "For this network:" in markdown and "For every width and token count:" in markdown
    assert "F_6 - F_6|What_2=0 = (1/81)*P*X*H*C_1*H*C_1.T*H*C_2*J" in str(lc)
    assert repr(lc).endswith(": (1/81)*P*X*H*C_1*H*C_1.T*H*C_2*J)") and "\n" not in repr(lc)
    assert lc.to_latex(standalone=True).startswith("\\documentclass")


def test_leading_coefficient_subs_and_explicit_at_given_matrices():
    arch = Architecture.uniform(layers=2, width=2, tokens=3)
    lc = leading_coefficient(arch, 2, Normalizer.generic(1))
    one = lc.subs("c_1", 1)
    assert one.matrix_form == leading_coefficient(arch, 2).matrix_form
    assert one.subs(sp.Symbol("c_1"), 5).matrix_form == one.matrix_form  # no c_1 left: unchanged, no error
    assert lc.subs(sp.Symbol("c_1"), 1).formula == one.formula and one.coefficients == (1, 1)
    assert lc.xreplace({"c_1": 1}).effective_formula == one.effective_formula
    with pytest.raises(SymattnError, match="unknown symbol name 'c_9'"):
        lc.subs("c_9", 1)  # c_1 .. c_7 are the normalizer's (to order 6 + 1)
    with pytest.raises(SymattnError, match="What_1 is a matrix"):  # (the alias What1 names the same matrix)
        lc.subs({"What1": 1})
    rng = random.Random(4)
    params, X = _random_point(arch, rng)
    values = {"X": X, "c_1": 2}
    for i in range(2):
        values.update({f"Qt{i + 1}": params.Q[i], f"Kt{i + 1}": params.K[i], f"Vt{i + 1}": params.V[i]})
    assert lc.explicit(values) == lc.evaluate(params, X, {"c_1": 2})
    partial = lc.explicit({"X": X, "c_1": 2})
    assert partial.free_symbols and not any(s.name.startswith("x_") for s in partial.free_symbols)
    with pytest.raises(SymattnError, match="X is 2 x 3, got 1 x 2"):
        lc.explicit({"X": [[1, 2]]})
    with pytest.raises(SymattnError, match="unknown symbol name 'Y'"):
        lc.explicit({"Y": [[1]]})
    assert lc.evalf(3).matrix_form.atoms(sp.Float)


# -- the command ------------------------------------------------------------------------------------------
def test_the_command_prints_a_summary_unless_entries_are_asked(capsys, tmp_path):
    import json

    from symattn.cli import main

    argv = ["expand", "--layers", "1", "--truncation", "3", "--generic", "1", "--quiet"]
    assert main(argv) == 0
    summary = capsys.readouterr().out
    assert len(summary) < 2000  # not the 38 KB of LaTeX
    assert "| 2 | 6 of 6 | 360 |" in summary
    # the matrix form as LaTeX math, as MyST and Jupyter render Markdown (as Python, P*X*H lost its '*')
    assert r"= \frac{c_{1}}{3}\, P X H C_{1}$" in summary and "--entries" in summary
    assert main(argv + ["--entries"]) == 0
    entries = capsys.readouterr().out
    assert len(entries) > 30000 and "$$F_{2} =" in entries
    assert main(argv + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["order"] for c in data["coefficients"]] == [0, 1, 2] and data["coefficients"][2]["latex"]
    assert main(argv + ["--latex"]) == 0
    # a header, the matrix forms, then F_0 = P X J / t, F_1 = 0, F_2 = (c_1 / t) P X H C_1, checked entry by entry
    out = capsys.readouterr().out
    assert r"\item truncation: the series modulo $\varepsilon^{3}$" in out
    assert out.count("\\begin{equation*}") == 3 and "(F_{2})_{23} &=" not in out
    assert r"F_{2} = \frac{c_{1}}{3}\, P X H C_{1}" in out
    assert main(argv + ["--out", str(tmp_path)]) == 0
    assert "$$F_{2} =" not in (tmp_path / "expand.md").read_text()
    assert (tmp_path / "expand.tex").read_text().count("\\begin{equation*}") == 3


def test_the_summary_lists_the_matrix_forms_of_the_layers_up_to_the_order():
    F = expand(Architecture.uniform(layers=2, width=1, tokens=2), truncation=7)
    assert [lc.layer for lc in F.matrix_forms()] == [1, 2]
    assert [lc.layer for lc in expand(Architecture.uniform(layers=2, width=1, tokens=2), truncation=5).matrix_forms()] \
        == [1]
    summary = F.summary()
    assert (r"- layer 2: $F_{6} - F_{6}\big\vert _{\widehat W_{2} = 0} = \frac{1}{16}\, P X H C_{1} H C_{1}^{\top} H "
            r"C_{2} J$, where") in summary
    assert "*" not in summary.split("Leading coefficients")[1]
    from symattn.curves import collapse_queries
    assert expand(Architecture.uniform(layers=1, width=1, tokens=2), curve=collapse_queries()).matrix_forms() == ()
    assert expand(Architecture.uniform(layers=1, width=1, tokens=2, normalizer="lightning"),
                  truncation=3).matrix_forms() == ()


@pytest.mark.parametrize("page, examples", [("expansions.md", 25), ("expand.md", 8)])
def test_the_examples_of_the_docs_run(page, examples):
    import doctest
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, page, f"docs/{page}", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0 and len(test.examples) > examples


def test_leading_coefficient_applyfunc_simplify_and_printing_hooks():
    arch = Architecture.uniform(layers=2, width=2, tokens=3)
    lc = leading_coefficient(arch, 2, Normalizer.generic(1))
    c1 = lc.symbol("c_1")
    doubled = lc.applyfunc(lambda s: 2 * s)
    assert str(doubled.matrix_form) == "(2*c_1**3/81)*P*X*H*C_1*H*C_1.T*H*C_2*J"
    rng = random.Random(9)
    params, X = _random_point(arch, rng)
    assert doubled.evaluate(params, X, {"c_1": 2}, form="matrix") == 2 * lc.evaluate(params, X, {"c_1": 2})
    assert doubled.evaluate(params, X, {"c_1": 2}) == 2 * lc.evaluate(params, X, {"c_1": 2})
    messy = lc.subs("c_1", "(c_2**2 - 1)/(c_2 - 1)")
    assert sp.simplify(messy).matrix_form == lc.subs("c_1", "c_2 + 1").matrix_form.applyfunc(sp.factor) or \
        sp.simplify(sp.simplify(messy).coefficients[0] - (lc.symbol("c_2") + 1)) == 0
    assert isinstance(sp.simplify(messy), type(lc))
    assert sp.sstr(lc) == "F_6 - F_6|What_2=0 = (c_1**3/81)*P*X*H*C_1*H*C_1.T*H*C_2*J"
    assert "F_6 - F_6|What_2=0 = ----*P*X*H*C_1*H*C_1 *H*C_2*J" in sp.pretty(lc, use_unicode=False)
    assert c1.name == "c_1" and c1 == Normalizer.generic(1).coefficient_symbol(1)


def test_numeric_substitution_goes_through_flint_and_agrees_with_sympy():
    import pickle

    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2)
    F = expand(arch, truncation=7, normalizer=Normalizer.generic(1))
    c1, x11 = F.symbol("c_1"), F.symbol("x_11")
    for G, rule in ((F.subs("c_1", 3), {c1: 3}), (F.xreplace({"c_1": -2, "x_11": sp.Rational(1, 2)}),
                                                 {c1: -2, x11: sp.Rational(1, 2)}),
                    (F.subs([("c_1", 2), ("c_1", 5)]), {c1: 2})):  # sequential: the first wins, as in sympy
        for n in range(7):
            assert G[n] == F[n].xreplace(rule)
            assert sp.srepr(G[n]) == sp.srepr(F[n].xreplace(rule))
    twice = F.subs("c_1", 3).subs("x_11", 2)
    assert twice[6] == F[6].xreplace({c1: 3, x11: 2}) and twice.point == (("c_1", 3), ("x_11", 2))
    # symbolic values and expressions as keys take sympy's route, with the same result
    assert F.subs("c_1", "c_2 + 1")[6] == F[6].subs(c1, F.symbol("c_2") + 1)
    assert pickle.loads(pickle.dumps(F))[6] == F[6]  # the flint polynomials are not pickled
    at_point = expand(arch, truncation=7, normalizer=Normalizer.generic(1), point={"c_1": 1})
    assert F.subs("c_1", 1)[6] == at_point[6]


def test_the_command_guards_against_writing_out_huge_expansions(capsys, tmp_path):
    from symattn.cli import main

    argv = ["expand", "--layers", "1", "--truncation", "3", "--generic", "1", "--quiet"]
    for extra in (["--json"], ["--entries"], ["--out", str(tmp_path / "out")]):
        assert main(argv + extra + ["--max-output-terms", "100"]) == 2
        err = capsys.readouterr().err
        assert "have 396 terms" in err and "--max-output-terms 396 writes them anyway" in err
    assert not (tmp_path / "out").exists()
    assert main(argv + ["--latex", "--max-output-terms", "100"]) == 0  # the LaTeX writes a bounded number of terms
    assert "P X H C_{1}" in capsys.readouterr().out
    assert main(argv + ["--max-output-terms", "100"]) == 0  # the summary is always printed
    assert "| 2 | 6 of 6 | 360 |" in capsys.readouterr().out
    assert main(argv + ["--json", "--max-output-terms", "396"]) == 0


# -- the LaTeX documents compile and read as mathematics ----------------------------------------------------
@pytest.mark.slow  # pdflatex twice per document
@pytest.mark.skipif(any(shutil.which(tool) is None for tool in ("pdflatex", "pdftotext")),
                    reason="pdflatex or pdftotext is not installed")
@pytest.mark.parametrize("argv", [
    ["--layers", "1"], ["--layers", "1", "--generic", "1"], ["--layers", "1", "--generic", "1", "--truncation", "5"],
    ["--leading", "2"], ["--leading", "2", "--generic", "1"], ["--layers", "3", "--leading", "3"],
], ids=lambda argv: " ".join(argv))
def test_the_latex_documents_compile_within_the_page_with_one_name_per_object(argv, tmp_path, capsys):
    # expand --leading 2 overflowed the page by 89pt (its definitions on one line) and mixed ^T with ^\top;
    # expand --latex was 9 pages of unfactored terms with no header, entries named Kt_{1 11} by sympy
    from symattn.cli import main

    assert main(["expand", *argv, "--latex", "--standalone", "--quiet"]) == 0
    source = capsys.readouterr().out
    (tmp_path / "expand.tex").write_text(source, encoding="utf-8")
    for _ in range(2):
        run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "expand.tex"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-2000:]
    log = (tmp_path / "expand.log").read_text(encoding="utf-8", errors="replace")
    widths = [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
    assert all(w <= 1.0 for w in widths), f"overfull boxes {widths} in {argv}"
    text = subprocess.run(["pdftotext", "expand.pdf", "-"], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout
    assert not re.search(r"\b(True|False|None)\b|\*\*", text)
    # one name per object: What_i is \widehat W_i, transposes ^\top, entries (\tilde K_1)_{11}, never the
    # package's plain-text names nor sympy's reading of them
    assert not re.search(r"What|\b[QKV]t\d|x_\d|Kt_\{", text + source)
    assert "^{T}" not in source and "^T" not in source and r"\hat{" not in source and r"\hat " not in source
    assert r"\widehat" in source and "^{\\top}" in source
    if "--leading" not in argv:
        assert r"\item truncation: the series modulo $\varepsilon^{" in source and "normalizer" in text
        assert "Kt" not in text and r"\tilde{K}^{(" not in source


# -- sympy's own printers use the package's names ----------------------------------------------------------
def test_sympy_printers_of_a_leading_coefficient_are_the_packages():
    # sympy.latex(lc) printed a \mathtt{\text{...}} dump of str(lc)
    lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
    assert sp.latex(lc) == lc._latex_math() and r"\mathtt" not in sp.latex(lc)
    assert sp.latex(lc).startswith(r"\begin{aligned}&F_{6} - F_{6}\big|_{\widehat W_{2} = 0} = \frac{1}{81}\, P X H")
    assert sp.sstr(lc) == "F_6 - F_6|What_2=0 = (1/81)*P*X*H*C_1*H*C_1.T*H*C_2*J"
    assert sp.pretty(lc, use_unicode=False).splitlines()[-1].startswith("F_6 - F_6|What_2=0 = 1/81*P*X*H*C_1*H*C_1")
    F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
    assert r"\mathtt" not in sp.latex(F) and sp.sstr(F).startswith("expansion along")


def test_entries_print_as_the_package_names_them_in_sympys_printers(F):
    # sp.latex(F[2][0, 0]) printed Kt_{1 11} and sp.pretty(F) Vt₁ ₁₁: the names were lost outside the helpers
    entry = F[2][0, 0]
    assert sp.latex(entry) == (r"\frac{(\tilde{K}_{1})_{11} (\tilde{Q}_{1})_{11} (\tilde{V}_{1})_{11} c_{1} x_{11}^{3}}"
                               r"{4} - \frac{(\tilde{K}_{1})_{11} (\tilde{Q}_{1})_{11} (\tilde{V}_{1})_{11} c_{1} "
                               r"x_{11}^{2} x_{12}}{2} + \frac{(\tilde{K}_{1})_{11} (\tilde{Q}_{1})_{11} "
                               r"(\tilde{V}_{1})_{11} c_{1} x_{11} x_{12}^{2}}{4}")
    assert latex(entry) == sp.latex(entry) and latex(sp.Matrix(F[2])) == sp.latex(sp.Matrix(F[2]))
    pretty = sp.pretty(F, use_unicode=True, wrap_line=False)
    tilde_k, tilde_v = "(K\u0303\u2081)\u2081\u2081", "(V\u0303\u2081)\u2081\u2081"  # (K̃₁)₁₁, (Ṽ₁)₁₁
    assert tilde_k in pretty and tilde_v + "\u22c5x\u2081\u2081" in pretty and "Vt\u2081 \u2081\u2081" not in pretty
    assert str(entry).startswith("Kt1_11*Qt1_11*Vt1_11*c_1*x_11**3/4")  # names (str, JSON, fixtures) unchanged
    arch = Architecture.uniform(layers=2, width=1, tokens=2, heads=[1, 2])
    native = arch.symbols()
    assert sp.latex(native.Q[0][0, 0] * native.K[2][0, 0]) == "(K_{2,2})_{11} (Q_{1})_{11}"
    assert sp.pretty(native.Q[2][0, 0]) == "(Q\u2082,\u2082)\u2081\u2081" and native.Q[2][0, 0].name == "Q2h2_11"
    assert sp.latex(arch.input_symbols()) == r"\left[\begin{matrix}x_{11} & x_{12}\end{matrix}\right]"
    assert sp.latex(entry, symbol_names={F.symbol("x_11"): "y"}).count("y^{") == 2  # sympy's own option wins


def test_the_printed_symbols_are_the_plain_symbols_for_sympy():
    import pickle

    arch = Architecture.uniform(layers=1, width=1, tokens=2)
    F = expand(arch, truncation=3)
    k, x = F.symbol("Kt1_11"), F.symbol("x_11")
    plain_k, plain_x = sp.Symbol("Kt1_11", real=True), sp.Symbol("x_11", real=True)
    assert k == plain_k and plain_k == k and not (k != plain_k) and hash(k) == hash(plain_k)
    assert plain_k in F[2].free_symbols and {plain_k: 1}[k] == 1
    # substitution with a plain Symbol reaches every occurrence (sympy's subs compares types)
    assert F[2].subs({plain_k: 2}) == F[2].xreplace({k: 2}) == F[2].subs(k, 2)
    assert sp.expand(F[2][0, 0] - F[2][0, 0].xreplace({k: plain_k, x: plain_x})) == 0
    # sympy's canonical order and srepr as for plain symbols: printed terms keep their order
    assert sorted([x, k], key=sp.default_sort_key) == sorted([plain_x, plain_k], key=sp.default_sort_key)
    assert sp.srepr(k) == "Symbol('Kt1_11', real=True)" and str(F[0][0, 0]) == "Vt1_11*x_11/2 + Vt1_11*x_12/2"
    again = pickle.loads(pickle.dumps(F))  # dask sweeps pickle results
    assert again[2] == F[2] and sp.latex(again[2]) == sp.latex(F[2])
    assert type(pickle.loads(pickle.dumps(k))) is type(k) and pickle.loads(pickle.dumps(k)) == k
    # sympy's cache may hand back an equal expression built from plain Symbols of the same names: the package's
    # substitution still reaches every atom (sympy's subs compares types, so both keys are given)
    sp.core.cache.clear_cache()  # (else the cache may hand back the package's symbols: plain ones are the test)
    mixed = F._map(lambda c: c.xreplace({k: plain_k, x: plain_x}))
    assert {type(a) for a in mixed[2].free_symbols if a.name in ("Kt1_11", "x_11")} == {sp.Symbol}
    assert mixed.subs({"Kt1_11": 2, "x_11": 3})[2] == F.subs({"Kt1_11": 2, "x_11": 3})[2]
    assert mixed.subs("Kt1_11", sp.Symbol("y"))[2] == F[2].xreplace({k: sp.Symbol("y")})


def test_what_i_has_one_name_and_what1_is_an_input_alias():
    # symbols("What_1", arch) was a MatrixSymbol named What1, and the definitions mixed What1 with C_1
    arch = Architecture.uniform(layers=2, width=2, tokens=3)
    from symattn.expand import matrix_symbols, symbols

    what = symbols("What_1", arch)
    assert what.name == "What_1" and symbols("What1", arch) == what
    assert sorted(name for name in matrix_symbols(arch) if "What" in name) == ["What_1", "What_2"]
    lc = leading_coefficient(arch, 2)
    assert str(dict(lc.definitions)["C_1"]) == "X.T*What_1*X" and str(lc.effective_formula).count("What_") >= 1
    assert "What1" not in str(lc) and "What1" not in lc.to_markdown()
    summary = expand(arch, truncation=3).summary()  # the definitions as LaTeX math, one name for What_1
    assert r"\widehat{W}_{1} = \tilde{K}_{1}^{\top} \tilde{Q}_{1},\quad C_{1} = X^{\top} \widehat{W}_{1} X" in summary
    assert "What1" not in summary
    from symattn.errors import ParseError
    from symattn.expand import matrix_formula
    first = leading_coefficient(arch, 1)
    assert matrix_formula("P*X*H*X.T*What1*X*J/9", first) == matrix_formula("P*X*H*X.T*What_1*X*J/9", first)
    with pytest.raises(ParseError) as refused:  # the accepted names list What_1 once, not its alias
        matrix_formula("P*Y", first)
    assert "What_1" in str(refused.value) and "What1" not in str(refused.value)


def test_the_command_refuses_the_old_order_flag_naming_the_truncation(capsys):
    # --order N meant the highest power kept; --truncation N keeps the series modulo eps^N (as the spectrum's)
    from symattn.cli import main

    assert main(["expand", "--layers", "1", "--order", "2"]) == 2
    err = capsys.readouterr().err
    assert "--order is no longer accepted" in err and "give --truncation 3 instead" in err
    assert main(["expand", "--layers", "1", "--order", "x"]) == 2 and "--truncation N+1" in capsys.readouterr().err
    assert main(["expand", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "--truncation N" in help_text and "--order" not in help_text
    assert main(["expand", "--layers", "1", "--width", "1", "--tokens", "2", "--truncation", "3", "--json",
                 "--quiet"]) == 0
    assert '"truncation": 3' in capsys.readouterr().out
