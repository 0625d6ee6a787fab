"""Formula claims in claims certificates (issue 27): ``F_n = <formula>`` and ``leading(i) = <formula>``.

The certificate holds the formula as a tree of operations, an integer point
mod a prime, the truncation and the engine's values of both sides there; the
checker recomputes the coefficient with its own forward pass and evaluates
the tree itself (:mod:`symattn.verifier.formulas`).  A difference refutes the
claim; agreement is "consistent at one point", never a proof.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.certificates import CertificateRefused, claims_certificate, formula_tree, write_claims_certificate
from symattn.cli import main
from symattn.model import Architecture
from symattn.verifier import verify
from symattn.verifier.claims import claims_claim
from symattn.verifier.formulas import coefficient_degrees, evaluate_formula, formula_text, named_values, read_formula
from standalone_copy import verify_as_standalone_copy

REPO = Path(__file__).resolve().parent.parent

TRUE_LEADING_2 = "leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J"
# two softmax layers, width 2, rank 1, two tokens: the claim as the checker writes it, its decision, the verdict
CLAIMS = {
    "F_0 = P*X*J/t": ("F_0 = (1/2)*P*X*J", "consistent at one point", True),
    "F_1 = 0": ("F_1 = 0", "consistent at one point", True),
    "F_2 = P*X*C_1/t": ("F_2 = (1/2)*P*X*C_1", "refuted", False),
    "leading(1) = P*X*H*C_1*J/4": ("leading(1) = (1/4)*P*X*H*C_1*J", "consistent at one point", True),
    TRUE_LEADING_2: ("leading(2) = (1/16)*P*X*H*C_1*H*C_1.T*H*C_2*J", "consistent at one point", True),
    "leading(2) = P*X*H*C_1*C_1.T*H*C_2*J/16": ("leading(2) = (1/16)*P*X*H*C_1*C_1.T*H*C_2*J", "refuted", False),
}


@pytest.fixture(scope="module")
def two_layers():
    return claims_certificate(Architecture.uniform(layers=2, width=2, tokens=2), list(CLAIMS) + ["dimension = 3"])


def _index(claim: str) -> int:
    return list(CLAIMS).index(claim)


def test_true_and_false_formula_claims_certify_and_verify_with_the_expected_decisions(two_layers):
    entries = two_layers["claims"]
    assert [entry["engine_verdict"] for entry in entries[:-1]] == [verdict for _, _, verdict in CLAIMS.values()]
    assert [entry["quantity"] for entry in entries] == ["coefficient"] * 3 + ["leading"] * 3 + ["dimension"]
    assert [entry.get("order") for entry in entries[:-1]] == [0, 1, 2, 2, 6, 6]
    assert [part["kind"] for part in two_layers["parts"]] == ["dimension lower bound"]
    report = verify(two_layers)
    assert report.verified, report.problem
    decisions = report.checked[-len(entries):]
    for (text, decision, verdict), line in zip(CLAIMS.values(), decisions):
        assert line.startswith(f"{text}: {decision}: "), line
        assert line.endswith(f"the engine said {'true' if verdict else 'false'}"), line
        if decision == "refuted":
            assert "a nonzero difference at one point proves the formula false" in line
        else:
            assert "not a proof" in line and "Schwartz-Zippel" in line and "symattn draws the point so" in line
    assert decisions[-1].startswith("dimension = 3: refuted: the dimension is at least 10")
    # F_0 = P X J / t: degree 3 in the point's coordinates (V_2, V_1, X), on both sides
    assert "both sides have degree at most 3 in the point's coordinates" in decisions[0]
    assert "at most 3/2147483647 (about 1.4e-09; Schwartz-Zippel)" in decisions[0]
    # each formula claim's evidence is read and recomputed by the checker, one line each
    evidence = [line for line in report.checked if line.startswith("claims[")]
    assert len(evidence) == len(CLAIMS)
    assert "recomputed F_6 - F_6|K_2=0 mod (2147483647, eps^7)" in evidence[_index(TRUE_LEADING_2)]
    assert report.claim == claims_claim(entries) == two_layers["claim"]


def test_a_formula_with_a_scalar_and_entrywise_powers_is_evaluated_by_the_checker():
    # cosh: k = 2, layer 2's leading coefficient carries alpha_2 and entrywise squares
    certificate = claims_certificate(
        Architecture.uniform(layers=2, width=2, tokens=3, normalizer="cosh"),
        ["leading(2) = alpha_2/324 * P*X*H*hadamard(C_1, 2)*H*hadamard(C_1.T, 2)*H*C_2*J",
         "leading(1) = P*X*H*hadamard(C_1.T, 2)*J/18",
         "leading(1) = P*X*H*hadamard(C_1, 2)*J/18"])
    assert [entry["order"] for entry in certificate["claims"]] == [12, 4, 4]
    assert [entry["engine_verdict"] for entry in certificate["claims"]] == [True, False, True]
    report = verify(certificate)
    assert report.verified, report.problem
    assert [line.split(": ")[1] for line in report.checked[-3:]] == ["consistent at one point", "refuted",
                                                                    "consistent at one point"]


def _edited(certificate, edit):
    changed = copy.deepcopy(certificate)
    edit(changed)
    return verify(changed)


def _rewrite_claim(certificate):
    """The claim sentence written again from the (edited) entries, as a consistent forger would."""
    certificate["claim"] = claims_claim(certificate["claims"])


def _engine_formula_values(entry, formula):
    """What an engine would have recorded for ``formula`` at the entry's point (the checker's own evaluation)."""
    arch = {"widths": [2, 2, 2], "tokens": 2}
    node, _ = read_formula(formula, arch["widths"], arch["tokens"], lambda text, what: Fraction(text))
    values = named_values(entry["point"], entry["input"], arch["widths"], arch["tokens"], entry["prime"])
    return evaluate_formula(node, values, entry["prime"])


def _change_number(entry, number):
    entry["formula"]["multiply"][0]["number"] = number


TRUE_F0, FALSE_F2, TRUE_L2, FALSE_L2 = (_index("F_0 = P*X*J/t"), _index("F_2 = P*X*C_1/t"), _index(TRUE_LEADING_2),
                                        _index("leading(2) = P*X*H*C_1*C_1.T*H*C_2*J/16"))


@pytest.mark.parametrize("edit, reason", [
    # the formula changed, the sentence not: the checker writes the claim from the tree
    (lambda c: _change_number(c["claims"][TRUE_F0], "1/3"), "does not say"),
    # the formula and the sentence changed: the engine's recorded value of the formula is not the tree's
    (lambda c: (_change_number(c["claims"][TRUE_F0], "1/3"), _rewrite_claim(c)),
     "claims[0]: the engine's formula at the point is"),
    # a consistent forgery (the values rewritten to the new formula's): the checker refutes what the engine said
    (lambda c: (_change_number(c["claims"][TRUE_L2], "1/15"),
                c["claims"][TRUE_L2]["values"].update(formula=_engine_formula_values(c["claims"][TRUE_L2],
                                                                                    c["claims"][TRUE_L2]["formula"])),
                _rewrite_claim(c)),
     "the engine said true, but the certificates refute it: at the certificate's point mod 2147483647"),
    # one coordinate of the point, of the input: the engine's coefficient is not the checker's any more
    (lambda c: c["claims"][TRUE_L2]["point"]["V_2"][0].__setitem__(0, c["claims"][TRUE_L2]["point"]["V_2"][0][0] + 1),
     f"claims[{TRUE_L2}]: the engine's F_6 - F_6|K_2=0 at the point is"),
    (lambda c: c["claims"][TRUE_F0]["input"][1].__setitem__(0, 5), "claims[0]: the engine's F_0 at the point is"),
    # the prime: another prime changes every residue; a composite is refused
    (lambda c: c["claims"][TRUE_L2].update(prime=2147483629), "the engine's F_6 - F_6|K_2=0 at the point is"),
    (lambda c: c["claims"][TRUE_L2].update(prime=2147483649), "prime 2147483649 is not a prime below 2**31"),
    # the engine's verdict of a refuted claim turned to true
    (lambda c: (c["claims"][FALSE_F2].update(engine_verdict=True), _rewrite_claim(c)),
     "F_2 = (1/2)*P*X*C_1: the engine said true, but the certificates refute it"),
    (lambda c: (c["claims"][FALSE_L2].update(engine_verdict=True), _rewrite_claim(c)),
     "the engine said true, but the certificates refute it"),
    # the order and the truncation
    (lambda c: (c["claims"][TRUE_L2].update(order=5, truncation=6), _rewrite_claim(c)),
     "layer 2's scores first appear at order 6 (k = [1, 1]), not 5"),
    (lambda c: c["claims"][TRUE_L2].update(truncation=8), "the truncation must be eps^7"),
    (lambda c: (c["claims"][FALSE_F2].update(order=3, truncation=4), _rewrite_claim(c)),
     "truncation eps^4 needs c_0 .. c_4"),
    # the tree is data: unknown names, operations, numbers and shapes are refused
    (lambda c: (c["claims"][TRUE_F0]["formula"]["multiply"].__setitem__(1, {"matrix": "__import__('os')"}),),
     "claims[0].formula.multiply[1]: 'matrix' names __import__('os'), not one of P, X, J, H"),
    (lambda c: c["claims"][TRUE_F0]["formula"]["multiply"].__setitem__(0, {"number": "__import__('os')"}),
     'claims[0].formula.multiply[0].number must be a rational written "p/q"'),
    (lambda c: c["claims"][TRUE_F0].update(formula={"eval": "P*X"}), "claims[0].formula must be an object with one key"),
    (lambda c: c["claims"][TRUE_F0].update(formula={"number": "1"}),
     "claims[0].formula is a scalar; the output's coefficients are 2 x 2"),
    (lambda c: c["claims"][TRUE_F0]["formula"]["multiply"].__setitem__(1, {"transpose": {"number": "1"}}),
     "claims[0].formula.multiply[1].transpose: the transpose of a scalar"),
    (lambda c: c["architecture"].update(heads=[2, 1]), "a formula claim is about a plain network"),
])
def test_an_edit_fails_naming_it(two_layers, edit, reason):
    report = _edited(two_layers, edit)
    assert not report.verified
    assert reason in report.problem, report.problem


def test_a_true_claim_the_engine_called_false_is_reported_not_refuted(two_layers):
    def edit(c):
        c["claims"][TRUE_F0]["engine_verdict"] = False
        _rewrite_claim(c)

    report = _edited(two_layers, edit)
    assert report.verified, report.problem
    line = next(line for line in report.checked if line.startswith("F_0 = (1/2)*P*X*J: "))
    assert line.startswith("F_0 = (1/2)*P*X*J: consistent at one point: ")
    assert line.endswith("the engine said false (its refutation is not proved by these certificates)")


_INTEGER_LEAVES = [("point", block, r, c) for block, rows in (("Q_1", 1), ("K_1", 1), ("V_1", 2), ("Q_2", 1),
                                                              ("K_2", 1), ("V_2", 2)) for r in range(rows)
                   for c in range(2)] + [("input", r, c) for r in range(2) for c in range(2)] + \
                  [("values", side, r, c) for side in ("coefficient", "formula") for r in range(2) for c in range(2)] + \
                  [("prime",), ("truncation",), ("order",)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(leaf=st.sampled_from(_INTEGER_LEAVES), delta=st.integers(min_value=1, max_value=10**6))
def test_any_single_edit_of_a_number_of_a_true_leading_claim_fails(two_layers, leaf, delta):
    changed = copy.deepcopy(two_layers)
    entry = changed["claims"][TRUE_L2]
    *path, last = leaf
    holder = entry
    for key in path:
        holder = holder[key]
    holder[last] += delta
    report = verify(changed)
    assert not report.verified, leaf


def test_formula_trees_are_written_back_as_the_engine_reads_them():
    from symattn.check.formulas import read_coefficient_claim
    from symattn.parsing import matrix_formula

    arch = Architecture.uniform(layers=2, width=2, tokens=3)
    for claim in ("F_2 = -P*X*(H - J/2)^2*C_1.T + 3*c_2^2*P*What_1.T*X", "F_3 = hadamard(P*X, 2)*2 - (1/3)*(P*X)",
                  "F_1 = (P*X*H^2)*(C_2.T*J)^3/t^2", "F_0 = 0"):
        n, formula, names = read_coefficient_claim(arch, claim)
        text = formula_text(formula_tree(formula))
        again = formula if text == "0" else matrix_formula(text, names)
        assert again == formula, (claim, text)


@pytest.mark.parametrize("arch, N", [
    (Architecture.uniform(layers=1, width=2, tokens=2), 5),
    (Architecture.uniform(layers=2, width=1, tokens=2), 7),
    (Architecture.uniform(layers=1, width=2, tokens=2, normalizer="cosh"), 6),
    (Architecture.uniform(layers=1, width=1, tokens=3, normalizer="quadratic"), 6),
    (Architecture.uniform(layers=2, width=1, tokens=2, normalizer="lightning"), 5),
])
def test_the_checkers_degree_bounds_hold_for_the_exact_expansion(arch, N):
    import sympy as sp

    from symattn.expand import expand

    series = expand(arch, truncation=N)
    taylor = [[] if n.is_lightning else [int(c != 0) for c in n.taylor(N)] for n in arch.normalizers]
    bounds = coefficient_degrees(taylor, [bool(n.is_lightning) for n in arch.normalizers], N)
    for m in range(N):
        entries = [e for e in sp.Matrix(series[m]) if e != 0]
        actual = max((sp.Poly(e, *sorted(e.free_symbols, key=str)).total_degree() if e.free_symbols else 0
                      for e in entries), default=float("-inf"))
        assert actual <= bounds[m], (m, actual, bounds)
    assert bounds[0] == (float("-inf") if arch.normalizers[0].is_lightning else arch.layers + 1)


def test_formula_claims_on_variants_are_refused_before_computing():
    with pytest.raises(CertificateRefused, match="a certificate of a formula claim describes a plain network"):
        claims_certificate(Architecture.uniform(layers=1, width=2, tokens=2, heads=2), ["F_1 = 0"])
    with pytest.raises(CertificateRefused, match="a certificate of a formula claim describes a plain network"):
        claims_certificate(Architecture.uniform(layers=1, width=2, tokens=2, causal=True), ["F_1 = 0"])
    with pytest.raises(CertificateRefused, match="lightning attention: it has no leading order"):
        claims_certificate(Architecture.uniform(layers=1, width=2, tokens=2, normalizer="lightning"),
                           ["leading(1) = P*X"])
    with pytest.raises(CertificateRefused, match="generic"):
        claims_certificate(Architecture.uniform(layers=1, width=1, tokens=2, normalizer="generic"), ["F_1 = 0"])


def test_formula_claims_certificates_match_the_schema(two_layers):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "certificate.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(two_layers, schema)
    broken = copy.deepcopy(two_layers)
    broken["claims"][0]["formula"] = {"eval": "P*X"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    broken = copy.deepcopy(two_layers)
    del broken["claims"][0]["values"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_the_checker_decides_formula_claims_as_a_standalone_copy(tmp_path):
    path = tmp_path / "claims.json"
    write_claims_certificate(Architecture.uniform(layers=1, width=2, tokens=2), path,
                             ["F_2 = P*X*H*C_1/2", "F_2 = P*X*C_1/2"])
    report = verify_as_standalone_copy(tmp_path, path)
    verified, lines = report["verified"], report["checked"][-2:]
    assert verified
    assert lines[0].startswith("F_2 = (1/2)*P*X*H*C_1: consistent at one point")
    assert lines[1].startswith("F_2 = (1/2)*P*X*C_1: refuted")


def test_check_certifies_formula_claims_and_verify_decides_them(tmp_path, capsys):
    path = tmp_path / "formula.json"
    assert main(["check", "--layers", "1", "--width", "2", "--tokens", "2", "--claim", "F_1 = 0", "--claim",
                 "leading(1) = P*X*H*C_1", "--quiet", "--certificate", str(path)]) == 0
    assert "$F_{1} = 0$" in capsys.readouterr().out   # Markdown: the claim as LaTeX math
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == [
        "verified: leading(1) = P*X*H*C_1 is refuted",
        "not checked (the certificate's own words, taken as given):",
        "  - F_1 = 0: not decided here (consistent at one point); the engine's verdict, true, is not checked"]
    assert "F_1 = 0: consistent at one point" in out and "leading(1) = P*X*H*C_1: refuted" in out
    # the engine's verdict of the refuted claim turned to true: verify fails, naming it
    document = json.loads(path.read_text(encoding="utf-8"))
    document["claims"][1]["engine_verdict"] = True
    document["claim"] = document["claim"].replace("C_1 false", "C_1 true")
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert "leading(1) = P*X*H*C_1: the engine said true, but the certificates refute it" in capsys.readouterr().out
