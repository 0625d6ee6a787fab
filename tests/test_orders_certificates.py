"""Certificates of identification orders and of identify reports, and the checker that re-checks them (issue 27).

The engine's orders (the first nonzero coefficient ``C_n`` of the Jacobian in
the curve's coordinates on each block, and the rank of ``[C_0; ...; C_n]``
there) on one side; the checker's own forward pass, its own reading of which
parameters make a block, and its own pivoting on the other.  A round trip
agreeing on every order and rank is a second computation of them; an edit
that breaks a witness must fail, naming what broke.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.certificates import (
    CertificateRefused,
    identify_certificate,
    orders_certificate,
    write_identify_certificate,
)
from symattn.cli import main
from symattn.curves import collapse_queries, input_scaling
from symattn.errors import SymattnError
from symattn.identify import identification_orders, identify
from symattn.model import Architecture
from symattn.verifier import verify
from symattn.verifier.orders import block_members
from standalone_copy import verify_as_standalone_copy

REPO = Path(__file__).resolve().parent.parent


# -- round trips ------------------------------------------------------------------------------------
# name: (architecture, curve, {block: (order, jet rank)} that the run and the certificate give)
ROUND_TRIPS = {
    "softmax, 1 layer": (dict(layers=1, width=2, tokens=2), None, {"scores:1": (2, 3), "values": (0, 4)}),
    "softmax, 2 layers": (dict(layers=2, width=2, rank=1), None,
                          {"scores:1": (2, 3), "scores:2": (6, 3), "values": (0, 4)}),
    "softmax, 3 layers": (dict(layers=3, width=2, rank=1), None,
                          {"scores:1": (2, 3), "scores:2": (6, 3), "scores:3": (18, 3), "values": (0, 4)}),
    "cosh, 2 layers": (dict(layers=2, width=2, rank=1, normalizer="cosh"), None,
                       {"scores:1": (4, 3), "scores:2": (12, 3), "values": (0, 4)}),
    "1 + x**2, 2 layers": (dict(layers=2, width=2, rank=1, normalizer="1 + x**2"), None,
                           {"scores:1": (4, 3), "scores:2": (12, 3), "values": (0, 4)}),
    "width 3, rank 2": (dict(layers=2, width=3, rank=2), None,
                        {"scores:1": (2, 8), "scores:2": (6, 8), "values": (0, 9)}),
    "2 heads": (dict(layers=1, width=2, rank=1, heads=2), None,
                {"scores:1:1": (2, 3), "scores:1:2": (2, 3), "values": (0, 4)}),
    # the mask leaves the first token's attention uniform: the second layer's scores show at eps^2 already
    "causal": (dict(layers=2, width=2, rank=1, causal=True), None,
               {"scores:1": (2, 3), "scores:2": (2, 3), "values": (0, 4)}),
    "input scaling": (dict(layers=2, width=2, rank=1), input_scaling(),
                      {"scores:1": (3, 3), "scores:2": (7, 3), "values": (1, 4)}),
    "queries collapse": (dict(layers=2, width=2, rank=1), collapse_queries(),
                         {"scores:1": (1, 3), "scores:2": (3, 3), "values": (0, 4)}),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_orders_certificates_verify_and_agree_with_the_engine(name):
    options, curve, expected = ROUND_TRIPS[name]
    arch = Architecture.uniform(**options)
    result = identification_orders(arch, curve)
    engine = {b.block: (b.order, b.jet_rank) for b in (*result.scores, result.values)}
    certificate = orders_certificate(arch, result=result, curve=curve)
    claimed = {entry["block"]: (entry["order"], entry["jet_rank"]) for entry in certificate["orders"]}
    assert claimed == engine == expected
    report = verify(certificate)
    assert report.verified, report.problem
    assert certificate["truncation"] == 1 + max(order for order, _ in expected.values())
    # every block was checked by the checker, each with its two witnesses
    for block, (order, rank) in expected.items():
        assert any(line.startswith(f"{block}: C_{order} is nonzero") and f"(jet rank >= {rank})" in line
                   for line in report.checked), block


def test_the_certificate_of_a_default_run_is_the_same_as_of_a_given_run():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    assert orders_certificate(arch) == orders_certificate(arch, result=identification_orders(arch))


# -- tampering ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_layers():
    return orders_certificate(Architecture.uniform(layers=2, width=2, rank=1))


def _edited(certificate, edit):
    changed = copy.deepcopy(certificate)
    edit(changed)
    return verify(changed)


def _claim_again(certificate):
    from symattn.certificates import orders_claim

    certificate["claim"] = orders_claim(certificate["orders"])


@pytest.mark.parametrize("edit, reason", [
    # a higher order (softmax: even orders only): C_4 is nonzero too, but then C_2 is not 0 below it
    (lambda c: (c["orders"][0].update(order=4), _claim_again(c)), "C_2 is not 0 on the block at this point"),
    (lambda c: (c["orders"][1].update(order=7), _claim_again(c)), "orders[1].order must be an integer from 0 to 6"),
    # one order lower: C_(n-1) is 0 at the witness entry
    (lambda c: (c["orders"][1].update(order=5), c["orders"][1]["witness"].update(
        rows=[row[:3] + [min(row[3], 5)] for row in c["orders"][1]["witness"]["rows"]]), _claim_again(c)),
     "is 0 mod 268435399, not nonzero"),
    (lambda c: (c["orders"][0].update(jet_rank=4), _claim_again(c)), "must have jet_rank = 4 rows and columns"),
    (lambda c: c["orders"][0]["witness"]["rows"].__setitem__(0, [0, 0, 0, 3]),
     "coefficient must be an integer from 0 to 2"),
    (lambda c: c["orders"][0]["witness"]["columns"].__setitem__(0, "V_1[0,0]"), "is not a parameter of block"),
    (lambda c: c["orders"][0]["nonzero"].update(column="Q_2[0,0]"), "is not a parameter of block scores:1"),
    (lambda c: (c["orders"][0].update(block="keys"), _claim_again(c)), "names no block of this architecture"),
    (lambda c: c["orders"].append(copy.deepcopy(c["orders"][0])), "is listed twice"),
    (lambda c: c.update(claim=c["claim"].replace("at most 6", "at most 5")), "does not say"),
    (lambda c: c.update(truncation=6), "must be an integer from 0 to 5"),
    (lambda c: c.update(prime=268435397), "is not a prime"),
    (lambda c: c["orders"][0]["witness"]["rows"].__setitem__(1, c["orders"][0]["witness"]["rows"][0]),
     "repeats a row"),
])
def test_an_edit_that_breaks_a_witness_fails_naming_it(two_layers, edit, reason):
    assert verify(two_layers).verified
    report = _edited(two_layers, edit)
    assert not report.verified
    assert reason in report.problem, report.problem


_MUST_FAIL = ["order up", "order down", "jet rank up", "coefficient above the order", "not a prime",
              "row out of range", "column of another block"]
_MAY_PASS = ["point entry", "bank entry", "witness coefficient"]


@pytest.fixture(scope="module")
def components():
    """Biases and a feed-forward block x + x**2: the blocks scores:1, bias:1, feed-forward:1, values."""
    return orders_certificate(Architecture.uniform(layers=1, width=2, rank=1, bias=True, ffn=2,
                                                   activation="x + x**2"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(_MUST_FAIL + _MAY_PASS), data=st.data())
@pytest.mark.parametrize("network", ["two_layers", "components"])
def test_a_random_single_edit(request, network, kind, data):
    original = request.getfixturevalue(network)
    certificate = copy.deepcopy(original)
    n = data.draw(st.integers(0, len(certificate["orders"]) - 1))
    entry = certificate["orders"][n]
    if kind == "order up":  # one or two above: C_n, nonzero at the witness entry, is below the new order
        entry["order"] = min(entry["order"] + data.draw(st.integers(1, 2)), certificate["truncation"] - 1)
        if entry["order"] == original["orders"][n]["order"]:
            entry["order"] += 1  # past the truncation: out of range
        _claim_again(certificate)
    elif kind == "order down":
        if entry["order"] == 0:
            entry["order"] = -1
        else:
            entry["order"] -= 1
            entry["witness"]["rows"] = [row[:3] + [min(row[3], entry["order"])] for row in entry["witness"]["rows"]]
        _claim_again(certificate)
    elif kind == "jet rank up":
        entry["jet_rank"] += data.draw(st.integers(1, 3))
        _claim_again(certificate)
    elif kind == "coefficient above the order":
        k = data.draw(st.integers(0, len(entry["witness"]["rows"]) - 1))
        entry["witness"]["rows"][k][3] = entry["order"] + data.draw(st.integers(1, 4))
    elif kind == "not a prime":
        certificate["prime"] = data.draw(st.sampled_from([4, 268435399 * 2, 1, 0, -7, 2 ** 40]))
    elif kind == "row out of range":
        k = data.draw(st.integers(0, len(entry["witness"]["rows"]) - 1))
        entry["witness"]["rows"][k][0] = len(certificate["bank"]) + data.draw(st.integers(0, 50))
    elif kind == "column of another block":
        labels = list(dict.fromkeys(name.split("[")[0] for name in certificate["parameters"]))
        members = block_members(entry["block"], labels)
        others = [name for name in certificate["parameters"] if name.split("[")[0] not in members]
        entry["witness"]["columns"][0] = data.draw(st.sampled_from(others))
    elif kind == "point entry":
        block = data.draw(st.sampled_from(sorted(certificate["point"])))
        matrix = certificate["point"][block]
        matrix[data.draw(st.integers(0, len(matrix) - 1))][data.draw(st.integers(0, len(matrix[0]) - 1))] = \
            data.draw(st.integers(-10 ** 6, 10 ** 6))
    elif kind == "bank entry":
        X = certificate["bank"][data.draw(st.integers(0, len(certificate["bank"]) - 1))]
        X[data.draw(st.integers(0, len(X) - 1))][data.draw(st.integers(0, len(X[0]) - 1))] = \
            data.draw(st.integers(-10 ** 6, 10 ** 6))
    else:  # another coefficient m <= order for one witness row
        k = data.draw(st.integers(0, len(entry["witness"]["rows"]) - 1))
        entry["witness"]["rows"][k][3] = data.draw(st.integers(0, entry["order"]))
    report = verify(certificate)  # never raises on a parsed certificate
    if kind in _MUST_FAIL:
        assert not report.verified and report.problem
    else:
        assert report.verified or report.problem


def test_a_singular_witness_matrix_fails():
    certificate = orders_certificate(Architecture.uniform(layers=1, width=2, tokens=2))
    scores = certificate["orders"][0]
    # the witness's rows at coefficient 0: C_0 vanishes on the scores, so the matrix is 0
    report = _edited(certificate, lambda c: c["orders"][0]["witness"].update(
        rows=[row[:3] + [0] for row in scores["witness"]["rows"]]))
    assert not report.verified
    assert report.problem == "scores:1: the 3 x 3 witness matrix of [C_0; ...; C_2] has rank 0 mod 268435399, not 3"


def test_the_checker_reads_blocks_by_its_own_rule():
    labels = ["Q_{1,1}", "K_{1,1}", "V_{1,1}", "Q_{1,2}", "K_{1,2}", "V_{1,2}", "Q_2", "K_2", "V_2"]
    assert block_members("scores:1:2", labels) == ["Q_{1,2}", "K_{1,2}"]
    assert block_members("scores:2", labels) == ["Q_2", "K_2"]
    assert block_members("values", labels) == ["V_{1,1}", "V_{1,2}", "V_2"]
    assert block_members("scores:1", labels) == [] and block_members("scores:0", labels) == []
    assert block_members("scores:2:", labels) == [] and block_members("Q_2", labels) == []


# -- bundles: identify ----------------------------------------------------------------------------------
def test_an_identify_bundle_verifies_both_parts():
    arch = Architecture.uniform(layers=2, width=2, rank=1, heads=2)
    report = identify(arch)
    bundle = identify_certificate(arch, report=report)
    assert [part["kind"] for part in bundle["parts"]] == ["dimension lower bound", "identification orders"]
    checked = verify(bundle)
    assert checked.verified, checked.problem
    assert checked.claim.startswith(f"the dimension of the function space of this architecture is at least "
                                    f"{report.dimension.lower}; along its curve, at its point: scores:1:1 has ")
    assert any(line.startswith("parts[0] (dimension lower bound): recomputed the") for line in checked.checked)
    assert any(line.startswith("parts[1] (identification orders): scores:2:2: C_6 is nonzero")
               for line in checked.checked)


def test_a_bundle_fails_with_its_first_failing_part(two_layers):
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    bundle = identify_certificate(arch)
    broken = copy.deepcopy(bundle)
    broken["parts"][1]["orders"][0]["nonzero"]["column"] = "V_1[0,0]"
    report = verify(broken)
    assert not report.verified and report.problem.startswith("parts[1]: orders[0].nonzero.column")
    nested = copy.deepcopy(bundle)
    nested["parts"][0] = copy.deepcopy(bundle)
    assert verify(nested).problem == "parts[0] is a bundle itself: a part is one certificate"
    claimed = copy.deepcopy(bundle)
    claimed["claim"] = bundle["parts"][1]["claim"]
    assert "is not the parts' claims joined" in verify(claimed).problem
    assert verify({**bundle, "parts": []}).problem.startswith("parts must be a non-empty list of certificates")


def test_bad_arguments_are_clear_errors():
    arch = Architecture.uniform(layers=1, width=2, tokens=2)
    with pytest.raises(CertificateRefused, match="activation gelu .* not rational"):
        orders_certificate(Architecture.uniform(layers=1, ffn=2, activation="gelu"))
    with pytest.raises(SymattnError, match="result must be the OrdersResult of identification_orders, got int"):
        orders_certificate(arch, result=3)
    with pytest.raises(SymattnError, match="not computed with seed 1: pass the seed of the run"):
        orders_certificate(arch, result=identification_orders(arch), seed=1)
    with pytest.raises(SymattnError, match="computed along .* not along"):
        orders_certificate(arch, result=identification_orders(arch), curve=input_scaling())
    with pytest.raises(SymattnError, match="report must be the IdentificationReport of identify, got str"):
        identify_certificate(arch, report="report")


def test_the_checker_checks_a_bundle_as_a_standalone_copy(tmp_path):
    path = tmp_path / "identify.json"
    write_identify_certificate(Architecture.uniform(layers=2, width=2, rank=1, causal=True), path)
    report = verify_as_standalone_copy(tmp_path, path)
    assert [report["verified"], report["problem"]] == [True, None]


# -- the command line ---------------------------------------------------------------------------------
def test_identify_writes_a_bundle_and_verify_checks_it(tmp_path, capsys):
    path = tmp_path / "identify.json"
    assert main(["identify", "--layers", "2", "--normalizer", "cosh", "--quiet", "--certificate", str(path)]) == 0
    capsys.readouterr()
    assert path.exists()
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verified: the dimension of the function space of this architecture is at least 10; "
                          "along its curve, at its point: scores:1 has identification order at most 4 and jet "
                          "rank at least 3 on its columns; scores:2 has identification order at most 12")
    bundle = json.loads(path.read_text(encoding="utf-8"))
    bundle["parts"][1]["orders"][1]["order"] = 11
    path.write_text(json.dumps(bundle), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert capsys.readouterr().out.startswith("NOT verified: parts[1]: ")


def test_a_refused_identify_certificate_is_a_usage_error_before_computing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["identify", "--layers", "1", "--ffn", "2", "--activation", "gelu", "--quiet", "--certificate",
                 "x.json"]) == 2
    assert "activation gelu (layer 1) has Taylor coefficients that are not rational" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_identify_certifies_biases_and_a_feed_forward_block(tmp_path, capsys):
    path = tmp_path / "identify.json"
    assert main(["identify", "--layers", "1", "--bias", "--ffn", "2", "--activation", "x + x**2", "--quiet",
                 "--certificate", str(path)]) == 0
    capsys.readouterr()
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bias:1 has identification order at most 1 and jet rank at least 2" in out
    assert "feed-forward:1 has identification order at most 0 and jet rank at least 2" in out
    bundle = json.loads(path.read_text(encoding="utf-8"))
    bundle["parts"][1]["point"]["bQ_1"] = [[0]]  # without b_Q the scores' witness is singular
    path.write_text(json.dumps(bundle), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert capsys.readouterr().out.startswith("NOT verified: parts[1]: scores:1: the 4 x 4 witness matrix")


def test_orders_certificates_and_bundles_match_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "certificate.schema.json").read_text(encoding="utf-8"))
    arch = Architecture.uniform(layers=2, width=2, rank=1, heads=2)
    jsonschema.validate(orders_certificate(arch), schema)
    bundle = identify_certificate(arch)
    jsonschema.validate(bundle, schema)
    # a bundle's parts are certificates: a part without its witness does not match
    del bundle["parts"][0]["witness"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bundle, schema)
