"""Checking hand calculations: claimed expressions and claimed numbers."""

import dataclasses
import json

import pytest
import sympy as sp

from symattn.check import (
    ClaimsReport,
    CheckResult,
    check_claim,
    check_claims,
    check_expression,
    parse_claim,
)
from symattn.cli import main
from symattn.errors import ShapeError, SymattnError
from symattn.expand import curve_symbols, expand, leading_coefficient
from symattn.model import Architecture
from symattn.normalizers import Normalizer

x, y, z = sp.symbols("x y z")


# -- check_expression ---------------------------------------------------------------------------
def test_a_true_identity_is_proved():
    result = check_expression((x + y) ** 3, x**3 + 3 * x**2 * y + 3 * x * y**2 + y**3)
    assert result.verdict is True and result.proved and result.bound == 0.0
    assert result.counterexample is None
    assert "equal polynomials" in result.method


def test_a_rational_identity_is_proved_by_cancellation():
    result = check_expression((x**3 - y**3) / (x - y), x**2 + x * y + y**2)
    assert result.proved and "cancel" in result.method


def test_a_false_identity_has_a_counterexample_that_really_differs():
    claimed = (x + y) ** 2
    computed = x**2 + y**2 + x * y
    result = check_expression(claimed, computed)
    assert result.verdict is False and result.bound == 0.0
    point = {sp.Symbol(name): value for name, value in result.counterexample.values().items()}
    left, right = claimed.xreplace(point), computed.xreplace(point)
    assert left != right
    assert left == sp.Rational(result.counterexample.claimed)
    assert right == sp.Rational(result.counterexample.computed)


def test_a_false_matrix_claim_names_the_entry():
    computed = sp.Matrix([[x * y, x + y], [x, y]])
    claimed = sp.Matrix([[x * y, x + y], [x, y + 1]])
    result = check_expression(claimed, computed)
    assert result.verdict is False and result.counterexample.entry == (1, 1)


def test_random_points_give_the_schwartz_zippel_bound():
    # a computed value available only pointwise: no symbolic proof, a probabilistic verdict
    def computed(point):
        return sp.expand((point[x] - point[y]) * (point[x] + point[y]))

    result = check_expression(x**2 - y**2, computed, variables=[x, y], degree=2, points=3, radius=1000)
    assert result.verdict is True and not result.proved
    assert result.bound == pytest.approx((2 / 2001) ** 3)
    assert "Schwartz-Zippel" in result.method and result.sample_size == 2001
    wrong = check_expression(x**2 + y**2, computed, variables=[x, y], degree=2)
    assert wrong.verdict is False


def test_a_callable_of_unknown_degree_is_decided_along_a_random_line():
    calls = []

    def computed(point):  # (x - y)^2 (x + z), known only pointwise
        calls.append(point)
        return (point[x] - point[y]) ** 2 * (point[x] + point[z])

    claimed = sp.expand((x - y) ** 2 * (x + z))
    result = check_expression(claimed, computed, variables=[x, y, z], radius=1000)
    assert result.verdict is True and result.degree == 3
    assert "found from 6 calls" in result.method and "assuming a polynomial of degree <= 64" in result.method
    assert result.bound == pytest.approx((3 / 2001) ** 3 + 2 * 64 / 2001)
    assert len(calls) == 6 + 3  # the line, then the three random points
    wrong = check_expression(claimed + x * y * z, computed, variables=[x, y, z])
    assert wrong.verdict is False
    # not a polynomial: said clearly, with what to give
    undecided = check_expression(x, lambda p: 1 / (1 + p[x] ** 2), variables=[x], max_degree=8)
    assert undecided.verdict is None
    assert "not a polynomial of degree <= 8 (11 calls)" in undecided.method and "give degree=" in undecided.method


def test_counterexamples_have_small_coordinates():
    big = sp.expand((x + y + z) ** 6)
    result = check_expression(big + x * y * z * (x - 1), big)
    assert result.verdict is False
    point = result.counterexample.values()
    assert all(abs(v) <= 3 for v in point.values())
    at = {s: point[s.name] for s in (x, y, z)}
    assert (big + x * y * z * (x - 1)).xreplace(at) == sp.Rational(result.counterexample.claimed)
    assert big.xreplace(at) == sp.Rational(result.counterexample.computed)
    assert "python-flint" in result.method


def test_a_claimed_leading_coefficient_is_compared_in_flint_without_sympy():
    arch = Architecture.uniform(layers=2, width=1, rank=1, tokens=2, normalizer=Normalizer.generic(1))
    lc = leading_coefficient(arch, 2)
    base = curve_symbols(arch)
    full = expand(arch, truncation=7)
    collapsed = expand(arch, truncation=7, point={s.name: 0 for s in base.K[1]})
    computed = full[6] - collapsed[6]
    result = check_expression(lc, computed)
    assert result.proved and "equal polynomials" in result.method
    assert result.claimed == str(lc.matrix_form)
    wrong = check_expression(lc.subs("c_1", 2), computed)
    assert wrong.verdict is False and all(abs(int(v)) <= 3 for _, v in wrong.counterexample.point)
    with pytest.raises(ShapeError, match="shape"):
        check_expression(lc, computed[:, :1])


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_huge_sides_are_described_not_printed():
    huge = sp.expand((x + y + z + 1) ** 30)  # sympy's printer would take seconds
    result = check_expression(sp.Matrix([[huge, x]]), sp.Matrix([[huge, x]]))
    assert result.proved and result.claimed == f"(1 x 2 matrix with {len(huge.args) + 1} terms)"
    assert check_expression(huge + 1, huge).computed == f"(expression with {len(huge.args)} terms)"
    assert check_expression(x + y, y + x).computed == "x + y"


def test_without_a_proof_or_a_bound_the_verdict_is_undecided():
    result = check_expression(sp.sin(x) ** 2 + sp.cos(x) ** 2, sp.Integer(1), simplify=False)
    assert result.verdict is None and "no Schwartz-Zippel bound" in result.method
    assert check_expression(sp.sin(x) ** 2 + sp.cos(x) ** 2, sp.Integer(1)).proved


def test_strings_are_read_with_the_symbols_of_the_computed_side():
    real = sp.Symbol("x", real=True)
    assert check_expression("x^2 - 1", (real - 1) * (real + 1)).proved
    with pytest.raises(SymattnError, match="cannot read the claimed expression 'x \\+\\* 2': invalid syntax"):
        check_expression("x +* 2", real)
    with pytest.raises(ShapeError, match="shape"):
        check_expression(sp.Matrix([[x, y]]), sp.Matrix([[x], [y]]))


def test_a_hand_formula_against_a_computed_expansion_coefficient():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=3)
    F = expand(arch, truncation=3, normalizer=Normalizer.generic(1))
    base = curve_symbols(arch)
    X, V, Q, K = arch.input_symbols(), base.V[0], base.Q[0], base.K[0]
    c = Normalizer.generic(1).coefficient_symbol(1)
    H = sp.eye(3) - sp.ones(3, 3) / 3
    assert check_expression(c / 3 * V * X * H * X.T * K.T * Q * X, F[2]).proved
    forgot_centering = check_expression(c / 3 * V * X * X.T * K.T * Q * X, F[2])
    assert forgot_centering.verdict is False
    # the matrix formula of the package agrees too
    lc = leading_coefficient(arch, 1, Normalizer.generic(1))
    assert check_expression(lc, F[2]).proved
    with pytest.raises(SymattnError, match="matrix symbols"):
        check_expression(lc.formula, F[2])


def test_check_result_renders():
    result = check_expression(x + y, x - y)
    data = json.loads(json.dumps(result.to_json()))
    assert data["verdict"] is False and data["counterexample"]["point"]
    assert "**verdict: false**" in result.to_markdown()
    assert "counterexample" in result.to_latex() and "claimed" in str(result)
    assert result._repr_latex_().startswith("$$")
    assert not bool(result)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.verdict = True


# -- claimed numbers --------------------------------------------------------------------------------
SOFTMAX = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
COSH = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="cosh")


@pytest.mark.parametrize("claim, verdict, computed", [
    ("contact_order(2) = 5", True, 5),
    ("contact_order(2) = 6", False, 5),
    ("contact_order(1) == 1", True, 1),
    ("multiplicity(2) = 3", True, 3),
    ("multiplicity(1) = 4", False, 3),
    ("kernel = 6", True, 6),
    ("kernel = 5", False, 6),
    ("dimension = 10", True, 10),
    ("identification_order(2) = 6", True, 6),
    ("identification_order(1) = 1", False, 2),
    ("sign_group_order = 1", True, 1),
])
def test_claims_about_softmax(claim, verdict, computed):
    result = check_claim(SOFTMAX, claim)
    assert result.verdict is verdict and result.computed == computed, result.method


def test_claims_about_cosh():
    report = check_claims(COSH, ["sign_group_order = 4", "sign_group_order = 2", "contact_order(2) = 11",
                                 "contact_order(1) = 3", "kernel = 6", "dimension = 10"])
    assert [c.verdict for c in report.checks] == [True, False, True, True, True, True]
    assert report.checks[1].computed == 4
    assert "agrees with effective.sign_group_order = 4" in report.checks[0].method
    assert not report.all_true


def test_claims_report_renders():
    report = check_claims(SOFTMAX, ["kernel = 6", "contact_order(2) = 6"])
    assert isinstance(report, ClaimsReport)
    data = report.to_json()
    assert data["all_true"] is False
    assert [c["verdict"] for c in data["claims"]] == [True, False]
    assert data["claims"][1]["computed"] == 5 and data["claims"][1]["method"]
    assert "| `contact_order(2) = 6` | false | 5 |" in report.to_markdown()
    assert r"\begin{enumerate}" in report.to_latex() and report._repr_latex_().startswith("$$")
    assert "not all true: 1 refuted" in str(report)


@pytest.mark.parametrize("claim, message", [
    ("foo(2) = 5", "unknown quantity 'foo'"),
    ("contact_order = 5", "needs a layer number"),
    ("kernel(2) = 6", "takes no argument"),
    ("contact_order(3) = 17", "the architecture has layers 1..2"),
    ("kernel = six", "must be an integer"),
    ("kernel 6", "cannot read the claim"),
])
def test_bad_claims_name_what_is_accepted(claim, message):
    with pytest.raises(SymattnError, match=message):
        check_claim(SOFTMAX, claim)


def test_parse_claim_is_forgiving_about_spelling():
    assert parse_claim("Contact order (2) == 5") == ("contact_order", 2, 5)
    assert parse_claim("sign-group-order=4") == ("sign_group_order", None, 4)


# -- the command line ------------------------------------------------------------------------------
ARCH_FLAGS = ["--layers", "2", "--width", "2", "--rank", "1", "--tokens", "3"]


def test_cli_check_json(capsys):
    status = main(["check", *ARCH_FLAGS, "--claim", "contact_order(2) = 5", "--claim", "contact_order(2) = 6",
                   "--json", "--quiet"])
    assert status == 0  # a false claim is a verdict, not an error
    data = json.loads(capsys.readouterr().out)
    assert data["all_true"] is False
    assert [(c["claim"], c["verdict"], c["computed"]) for c in data["claims"]] == [
        ("contact_order(2) = 5", True, 5), ("contact_order(2) = 6", False, 5)]
    assert all(c["method"] for c in data["claims"])


def test_cli_check_claims_file(tmp_path, capsys):
    path = tmp_path / "claims.txt"
    path.write_text("# my hand calculations\nkernel = 6\n\ncontact_order(1) = 1  # layer 1\n")
    status = main(["check", *ARCH_FLAGS, "--normalizer", "cosh", "--claims", str(path),
                   "--claim", "sign_group_order = 4", "--json", "--quiet"])
    assert status == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["claim"] for c in data["claims"]] == ["sign_group_order = 4", "kernel = 6", "contact_order(1) = 1"]
    assert [c["verdict"] for c in data["claims"]] == [True, True, False]
    assert data["claims"][2]["computed"] == 3


def test_cli_check_user_errors(capsys, tmp_path):
    assert main(["check", *ARCH_FLAGS, "--quiet"]) == 2
    assert "give at least one --claim" in capsys.readouterr().err
    assert main(["check", *ARCH_FLAGS, "--claim", "depth = 2"]) == 2
    assert "accepted: contact_order(i) = n" in capsys.readouterr().err
    assert main(["check", *ARCH_FLAGS, "--claims", str(tmp_path / "missing.txt")]) == 2


def test_cli_expand(capsys):
    assert main(["expand", "--layers", "1", "--width", "1", "--tokens", "2", "--truncation", "3", "--generic", "1",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["order"] for c in data["coefficients"]] == [0, 1, 2]
    assert main(["expand", "--layers", "2", "--leading", "2", "--latex"]) == 0
    assert r"Z_{1} Z_{1}^{\top} C_{2} J" in capsys.readouterr().out
    assert main(["expand", "--layers", "1", "--truncation", "1"]) == 2


def test_result_type():
    assert isinstance(check_expression(x, x), CheckResult)


# -- formula claims: a layer's leading coefficient as a matrix formula -------------------------------------
def test_formula_claims_true_and_false_with_a_small_counterexample():
    from symattn.expand import check_formula_claim

    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    right = check_formula_claim(arch, "leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J")
    assert right.verdict is True and right.computed == "(1/81)*P*X*H*C_1*H*C_1.T*H*C_2*J"
    assert right.claimed == right.computed and "Schwartz-Zippel" in right.method
    wrong = check_formula_claim(arch, "leading(2) = c_1^3/t^4 * P*X*H*C_1*C_1.T*H*C_2*J")  # the middle H
    assert wrong.verdict is False
    ce = wrong.counterexample
    assert max(abs(int(v)) for _, v in ce.point) <= 10 and ce.claimed != ce.computed
    # the counterexample really separates the claim from the expansion
    point = ce.values()
    base = curve_symbols(arch)
    full = expand(arch, truncation=7, point=point)
    collapsed = expand(arch, truncation=7, point={**point, **{s.name: 0 for s in base.K[1]}})
    assert (full[6] - collapsed[6])[ce.entry] == sp.Rational(ce.computed)
    assert json.loads(json.dumps(wrong.to_json()))["counterexample"]["entry"] == list(ce.entry)
    assert "counterexample" not in right.to_json()
    # layer 1, and k = 2 with the entrywise square and the mean score alpha_2
    assert check_formula_claim(arch, "leading(1) = c_1/t^2 * P @ X @ H @ C_1 @ J").verdict is True
    cosh = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="cosh")
    k2 = "2*alpha_2*c_2^3/t^4 * P*X*H*hadamard(C_1, 2)*H*hadamard(C_1.T, 2)*H*C_2*J"
    assert check_formula_claim(cosh, f"leading(2) = {k2}").verdict is True
    assert check_formula_claim(cosh, f"leading(2) = 2*{k2}").verdict is False


@pytest.mark.parametrize("claim, message", [
    ("leading(2) = P*X*Y", "the name 'Y' is not known"),
    ("leading(2) = P*X*C_1.__class__", "the attribute '__class__' is not accepted"),
    ("leading(2) = c_1^3", "a scalar, not a matrix formula"),
    ("leading(2) = P*X*H + 1", "a sum of a matrix and a scalar"),
    ("leading(2) = __import__('os')", "the call '__import__' is not accepted"),
    ("leading(3) = P", "names layer 3; the architecture has layers 1..2"),
    ("leading(2) = P*X*H*C_1*What1", "ShapeError"),
    ("leading(2) = X.T*X", "is 3 x 3; the leading coefficient of layer 2 is 2 x 3"),
])
def test_formula_claims_are_read_safely_with_clear_errors(claim, message):
    from symattn.expand import check_formula_claim

    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    with pytest.raises(SymattnError) as err:
        check_formula_claim(arch, claim)
    assert message in str(err.value) or message == type(err.value).__name__


def test_the_command_checks_formula_claims_beside_numeric_ones(capsys):
    argv = ["check", "--layers", "2", "--width", "1", "--tokens", "2", "--quiet",
            "--claim", "kernel = 4", "--claim", "leading(2) = P*X*H*C_1*C_1.T*H*C_2*J/16"]
    assert main(argv + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["claim"] for c in data["claims"]] == ["kernel = 4", "leading(2) = P*X*H*C_1*C_1.T*H*C_2*J/16"]
    formula = data["claims"][1]
    assert formula["verdict"] is False and formula["computed"] == "(1/16)*P*X*H*C_1*H*C_1.T*H*C_2*J"
    assert set(formula["counterexample"]) == {"point", "entry", "claimed", "computed"}
    assert "counterexample" not in data["claims"][0]
    assert main(argv) == 0
    assert "- counterexample to $\\text{leading coefficient of layer 2} = " in capsys.readouterr().out
    assert main(argv[:-2] + ["--claim", "leading(2) = P*X*Y"]) == 2
    assert "the name 'Y' is not known" in capsys.readouterr().err


# -- symbol names: a typo is refused, a plain Symbol of a package name is identified by name ------------------------
def test_a_misspelled_symbol_is_refused_with_the_closest_name():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=3)
    F = expand(arch, truncation=3, normalizer=Normalizer.generic(1))
    base = curve_symbols(arch)
    X, V, Q, K = arch.input_symbols(), base.V[0], base.Q[0], base.K[0]
    H = sp.eye(3) - sp.ones(3, 3) / 3
    right = V * X * H * X.T * K.T * Q * X / 3
    with pytest.raises(SymattnError, match=r"'c1' \(did you mean c_1\?\).*symattn.symbols"):
        check_expression(sp.Symbol("c1") * right, F[2])
    # a plain sympy Symbol named c_1 (not real=True like the package's) is the package's c_1, and the method says so
    plain = check_expression(sp.Symbol("c_1") * right, F[2])
    assert plain.proved and "the claim's symbols c_1" in plain.method and "identified by name" in plain.method
    assert "identified by name" not in check_expression(Normalizer.generic(1).coefficient_symbol(1) * right,
                                                        F[2]).method
    # a package name absent from the computed side is a claim, not a typo: refuted with a counterexample
    assert check_expression(sp.Symbol("c_2") * right, F[2]).verdict is False
    # a symbol of one's own, named in variables=, is taken as meant; plain sympy comparisons are unchanged
    y = sp.Symbol("y")
    entry = F[2][0, 0]
    with pytest.raises(SymattnError, match="'y'"):
        check_expression(entry + y, entry)
    assert check_expression(entry + y, entry, variables=[y, *entry.free_symbols]).verdict is False
    assert check_expression(sp.sin(x) ** 2 + sp.cos(x) ** 2, sp.Integer(1)).proved
