"""Certificates of the claims of ``symattn check``, decided by the independent checker (issue 27).

The engine settles each claimed number (``symattn.check``); the certificate
carries the claims with its verdicts and the certificates of the results it
used.  The checker verifies those and decides each claim by its own rules
(:mod:`symattn.verifier.claims`): a refutation by a certified bound is
proved, a claim the bounds do not reach is not decided, and a decision that
contradicts the engine fails the verification.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from symattn.certificates import CertificateRefused, claims_certificate, write_claims_certificate
from symattn.cli import main
from symattn.model import Architecture
from symattn.verifier import verify
from standalone_copy import verify_as_standalone_copy

REPO = Path(__file__).resolve().parent.parent

# two softmax layers, width 2, rank 1, 3 tokens: 16 parameters, dimension 10, kernel 6, orders 2 and 6
CLAIMS = {
    "dimension = 10": (True, "not decided: the dimension certificate proves dimension >= 10 only"),
    "dimension = 9": (False, "refuted: the dimension is at least 10 (the dimension certificate)"),
    "kernel = 6": (True, "proved: the kernel is exactly 6 (the spectrum certificate and its gauge check)"),
    "kernel = 7": (False, "refuted: the kernel is exactly 6 (the spectrum certificate and its gauge check)"),
    "identification_order(2) = 6": (True, "not decided: the orders certificate proves order <= 6 only"),
    "identification_order(2) = 7": (False, "refuted: the identification order of layer 2 is at most 6 (the "
                                           "orders certificate)"),
    "identification_order(2) = 4": (False, "not decided: the orders certificate proves order <= 6 only"),
    "contact_order(2) = 5": (True, "not decided: no certificate here bounds contact_order(2)"),
    "multiplicity(1) = 3": (True, "not decided: no certificate here bounds multiplicity(1)"),
    "sign_group_order = 1": (True, "not decided: no certificate here bounds sign_group_order"),
}


@pytest.fixture(scope="module")
def two_layers():
    return claims_certificate(Architecture.uniform(layers=2, width=2, rank=1), list(CLAIMS))


def test_every_claim_is_decided_by_the_checker_and_agrees_with_the_engine(two_layers):
    assert [entry["engine_verdict"] for entry in two_layers["claims"]] == [v for v, _ in CLAIMS.values()]
    assert [part["kind"] for part in two_layers["parts"]] == ["dimension lower bound", "identification orders",
                                                              "spectrum"]
    report = verify(two_layers)
    assert report.verified, report.problem
    decisions = report.checked[-len(CLAIMS):]
    for (claim, (verdict, decision)), line in zip(CLAIMS.items(), decisions):
        said = {True: "true", False: "false"}[verdict]
        note = " (its refutation is not proved by these certificates)" if claim == "identification_order(2) = 4" else ""
        assert line == f"{claim}: {decision}; the engine said {said}{note}"
    assert report.claim.startswith("symattn check found: dimension = 10 true; dimension = 9 false; kernel = 6 true")


def test_without_a_gauge_decision_the_kernel_is_bounded_only():
    # lightning attention: its scalings are kernel the gauge check does not see, so it does not decide the
    # kernel; the rank bounds it from above
    certificate = claims_certificate(Architecture.uniform(layers=2, width=2, rank=1, normalizer="lightning"),
                                     ["kernel = 2", "kernel = 100"])
    report = verify(certificate)
    assert report.verified, report.problem
    parameters = len(certificate["parts"][0]["parameters"])
    rank = certificate["parts"][0]["rank"]
    assert report.checked[-2].startswith(f"kernel = 2: not decided: the spectrum certificate proves kernel <= "
                                         f"{parameters - rank} only")
    assert report.checked[-1].startswith(f"kernel = 100: refuted: the kernel is at most {parameters - rank} = "
                                         f"{parameters} - {rank}")


def _edited(certificate, edit):
    changed = copy.deepcopy(certificate)
    edit(changed)
    return verify(changed)


def _claim_again(certificate):
    said = {True: "true", False: "false", None: "undecided"}
    texts = [f"{c['quantity']}{'' if c['layer'] is None else '(%d)' % c['layer']} = {c['value']} "
             f"{said[c['engine_verdict']]}" for c in certificate["claims"]]
    certificate["claim"] = "symattn check found: " + "; ".join(texts)


@pytest.mark.parametrize("edit, reason", [
    (lambda c: (c["claims"][1].update(engine_verdict=True), _claim_again(c)),
     "dimension = 9: the engine said true, but the certificates refute it: the dimension is at least 10"),
    (lambda c: (c["claims"][2].update(engine_verdict=False), _claim_again(c)),
     "kernel = 6: the engine said false, but the certificates prove it: the kernel is exactly 6"),
    (lambda c: c.update(claim=c["claim"].replace("dimension = 9 false", "dimension = 9 true")), "does not say"),
    (lambda c: (c["claims"][0].update(quantity="rank"), _claim_again(c)), "claims[0].quantity 'rank' is not one of"),
    (lambda c: (c["claims"][4].update(layer=3), _claim_again(c)),
     "claims[4].layer must be a layer 1..2 for identification_order, got 3"),
    (lambda c: c["parts"][0].update(rank=11), "parts[0]: "),
    (lambda c: c["parts"][2]["architecture"].update(tokens=4), "parts[2] is about another architecture"),
    (lambda c: c["parts"].append({"kind": "identify", "parts": []}), "parts[3] is of kind 'identify'"),
])
def test_an_edit_fails_naming_it(two_layers, edit, reason):
    report = _edited(two_layers, edit)
    assert not report.verified
    assert reason in report.problem, report.problem


def test_unsupported_networks_are_refused_before_computing():
    # formula claims are certified (tests/test_formula_certificates.py), on plain networks only
    with pytest.raises(CertificateRefused, match="a certificate of a formula claim describes a plain network"):
        claims_certificate(Architecture.uniform(layers=1, width=1, tokens=2, residual=True), ["F_1 = 0"])
    with pytest.raises(CertificateRefused, match="activation gelu .* not rational"):
        claims_certificate(Architecture.uniform(layers=1, ffn=2, activation="gelu"), ["identification_order(1) = 2"])


def test_an_order_claim_about_biases_and_a_feed_forward_block_is_decided_from_the_scores():
    arch = Architecture.uniform(layers=1, width=2, rank=1, bias=True, ffn=2, activation="x + x**2")
    certificate = claims_certificate(arch, ["identification_order(1) = 4", "identification_order(1) = 3"])
    assert [part["kind"] for part in certificate["parts"]] == ["identification orders"]
    report = verify(certificate)
    assert report.verified, report.problem
    # the layer's order is its scores' (3), not its bias columns' (1) nor its feed-forward block's (0)
    assert report.checked[-2:] == (
        "identification_order(1) = 4: refuted: the identification order of layer 1 is at most 3 (the orders "
        "certificate); the engine said false",
        "identification_order(1) = 3: not decided: the orders certificate proves order <= 3 only; the engine said "
        "true")


def test_a_claims_certificate_with_nothing_to_check_is_not_verified():
    certificate = claims_certificate(Architecture.uniform(layers=1, width=1, tokens=2), ["sign_group_order = 2"])
    assert certificate["parts"] == [] and certificate["claims"][0]["engine_verdict"] is False
    report = verify(certificate)
    assert not report.verified
    assert report.problem == ("nothing here is proved: the certificate has no part to verify and none of its 1 "
                              "claim(s) is proved or refuted by the checker")
    assert report.checked[-1] == ("sign_group_order = 2: not decided: no certificate here bounds sign_group_order; "
                                  "the engine said false (its refutation is not proved by these certificates)")


def test_the_engines_verdicts_are_never_part_of_the_conclusion():
    # the engine's verdict on a claim no part decides, edited to a falsehood (the dimension is 7, not 1000)
    certificate = claims_certificate(Architecture.uniform(layers=1, width=1, tokens=2),
                                     ["dimension = 1000", "kernel = 1"])
    edited = copy.deepcopy(certificate)
    edited["claims"][0]["engine_verdict"] = True
    edited["claim"] = edited["claim"].replace("dimension = 1000 false", "dimension = 1000 true")
    report = verify(edited)
    assert report.verified, report.problem
    assert "1000" not in report.conclusion
    assert report.conclusion.endswith("kernel = 1 is proved")
    assert report.unchecked == ("dimension = 1000: not decided here (not decided); the engine's verdict, true, is "
                                "not checked",)
    assert str(report).splitlines()[1] == "not checked (the certificate's own words, taken as given):"
    # without its parts nothing is proved: not verified
    edited["parts"] = []
    assert not verify(edited).verified


def test_claims_certificates_match_the_schema(two_layers):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "certificate.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(two_layers, schema)
    broken = copy.deepcopy(two_layers)
    del broken["claims"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_the_checker_decides_claims_as_a_standalone_copy(tmp_path):
    path = tmp_path / "claims.json"
    write_claims_certificate(Architecture.uniform(layers=1, width=2, tokens=2), path, ["dimension = 6", "kernel = 1"])
    report = verify_as_standalone_copy(tmp_path, path)
    verified, lines = report["verified"], report["checked"][-2:]
    assert verified and lines[0].startswith("dimension = 6: refuted: the dimension is at least 7")
    assert lines[1].startswith("kernel = 1: proved: the kernel is exactly 1")


def test_check_writes_a_certificate_and_verify_checks_it(tmp_path, capsys):
    path = tmp_path / "claims.json"
    assert main(["check", "--layers", "2", "--claim", "dimension = 9", "--claim", "kernel = 6", "--quiet",
                 "--certificate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "dimension = 9" in out and "kernel = 6" in out
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("verified: the dimension of the function space of this architecture is at "
                                   "least 10; " + out.splitlines()[0].split("; ", 2)[1]
                                   + "; dimension = 9 is refuted; kernel = 6 is proved")
    assert "symattn check found" not in out.splitlines()[0]
    assert "dimension = 9: refuted: the dimension is at least 10" in out
    # a formula claim on a network its certificate cannot describe: a usage error, nothing written
    assert main(["check", "--layers", "1", "--heads", "2", "--claim", "F_1 = 0", "--quiet", "--certificate",
                 str(tmp_path / "formula.json")]) == 2
    assert "plain network" in capsys.readouterr().err and not (tmp_path / "formula.json").exists()
