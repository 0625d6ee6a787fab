"""Certificates of observe's exact ranks on a collapsed set, and the checker that re-checks them (issue 27).

The engine's ranks (:func:`symattn.observe.rank_check`, block by block at a
point of the set along ``X -> eps X``) on one side; the checker's own reading
of the events, its own check that the point and bank lie on the set, its own
forward pass and pivoting on the other.  A round trip agreeing on every score
block's rank is a second computation of it; an edit that breaks a witness or
moves the point off the set must fail, naming what broke.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from symattn.certificates import (
    CertificateRefused,
    observe_certificate,
    observe_claim,
    write_observe_certificate,
)
from symattn.cli import main
from symattn.errors import SymattnError
from symattn.model import Architecture
from symattn.observe import rank_check
from symattn.verifier import verify
from symattn.verifier.observe import held_blocks
from standalone_copy import verify_as_standalone_copy

REPO = Path(__file__).resolve().parent.parent


# -- round trips ------------------------------------------------------------------------------------
# name: (architecture, events, [(block, status, rank, upper bound)] the certificate claims)
ROUND_TRIPS = {
    "scores:1 of 2 layers": (dict(layers=2, width=2, rank=1), ["scores:1"],
                             [("scores:2", "unobservable", 0, None), ("values", "seen", 4, None)]),
    "scores:1 of 3 layers": (dict(layers=3, width=2, rank=1), ["scores:1"],
                             [("scores:2", "unobservable", 0, None), ("scores:3", "unobservable", 0, None),
                              ("values", "seen", 4, None)]),
    "scores:2 of 2 layers": (dict(layers=2, width=2, rank=1), ["scores:2"],
                             [("scores:1", "observable", 3, 3), ("values", "seen", 4, None)]),
    "values:1": (dict(layers=2, width=2, rank=1), ["values:1"],
                 [("scores:1", "unobservable", 0, None), ("scores:2", "unobservable", 0, None)]),
    "identical tokens": (dict(layers=2, width=2, rank=1), ["identical-tokens"],
                         [("scores:1", "unobservable", 0, None), ("scores:2", "unobservable", 0, None),
                          ("values", "seen", 4, None)]),
    # one head's scores collapsed: the other head's are still seen, and the layer after
    "one head of two": (dict(layers=2, width=2, rank=1, heads=2), ["scores:1:2"],
                        [("scores:1", "observable", 3, 3), ("scores:2", "observable", 6, 6),
                         ("values", "seen", 16, None)]),
    "causal": (dict(layers=2, width=2, rank=1, causal=True), ["scores:1"],
               [("scores:2", "observable", 3, 3), ("values", "seen", 7, None)]),
    "residual": (dict(layers=2, width=2, rank=1, residual=True), ["scores:1"],
                 [("scores:2", "observable", 3, 3), ("values", "seen", 8, None)]),
    "cosh": (dict(layers=2, width=2, rank=1, normalizer="cosh"), ["scores:2"],
             [("scores:1", "observable", 3, 3), ("values", "seen", 4, None)]),
    "scores:2 of 3 layers": (dict(layers=3, width=2, rank=1), ["scores:2"],
                             [("scores:1", "observable", 3, 3), ("scores:3", "unobservable", 0, None),
                              ("values", "seen", 4, None)]),
    # one head's value map collapsed: the values are collapsed; scores:1 is seen below its bound of two heads
    "one head's values": (dict(layers=2, width=2, rank=1, heads=2), ["values:1:2"],
                          [("scores:1", "seen", 3, 6), ("scores:2", "observable", 6, 6)]),
    "scores and identical tokens": (dict(layers=2, width=2, rank=1), ["scores:1", "identical-tokens"],
                                    [("scores:2", "unobservable", 0, None), ("values", "seen", 4, None)]),
    "1 + x**2, width 3": (dict(layers=1, width=3, rank=2, normalizer="1 + x**2"), ["identical-tokens"],
                          [("scores:1", "unobservable", 0, None), ("values", "seen", 9, None)]),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_observe_certificates_verify_and_agree_with_the_engine(name):
    options, events, expected = ROUND_TRIPS[name]
    arch = Architecture.uniform(**options)
    result = rank_check(arch, events, confirm=False)
    certificate = observe_certificate(arch, events, result=result)
    claimed = [(e["block"], e["status"], e["rank"], e.get("upper_bound")) for e in certificate["blocks"]]
    assert claimed == expected
    # every score block's rank is the engine's on the set; the values' (V columns alone) at least the engine's
    for block, _, rank, _ in claimed:
        if block == "values":
            assert rank >= result.on_set[block]
        else:
            assert rank == result.on_set[block]
    report = verify(certificate)
    assert report.verified, report.problem
    assert report.claim == certificate["claim"]
    assert any(line.startswith("the point is on the set: ") for line in report.checked)
    for block, status, rank, _ in expected:
        start = f"{block}: its " if status == "unobservable" else f"{block}: the {rank} x {rank} witness minor"
        assert any(line.startswith(start) for line in report.checked), block


def test_the_certificate_of_a_default_run_is_the_same_as_of_a_given_run():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    assert observe_certificate(arch, ["scores:1"]) == observe_certificate(
        arch, ["scores:1"], result=rank_check(arch, ["scores:1"], confirm=False))


def test_a_confirmed_run_is_certified_at_its_own_bank():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    result = rank_check(arch, ["scores:2"], seed=3)
    certificate = observe_certificate(arch, ["scores:2"], result=result, seed=3)
    assert len(certificate["bank"]) == result.bank and certificate["prime"] == result.primes[0]
    assert certificate["produced_by"]["confirmed"] is True
    assert verify(certificate).verified


# -- tampering ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scores_two():
    """scores:2 of two layers: scores:1 observable (rank 3), the values seen (rank 4)."""
    return observe_certificate(Architecture.uniform(layers=2, width=2, rank=1), ["scores:2"])


@pytest.fixture(scope="module")
def scores_one():
    """scores:1 of two layers: scores:2 unobservable, the values seen."""
    return observe_certificate(Architecture.uniform(layers=2, width=2, rank=1), ["scores:1"])


def _edited(certificate, edit):
    changed = copy.deepcopy(certificate)
    edit(changed)
    return verify(changed)


def _claim_again(certificate):
    certificate["claim"] = observe_claim(certificate["events"], certificate["blocks"])


def _one_more(block):
    block["rank"] += 1
    block["status"] = "seen"
    block["witness"]["rows"].append([1, 1, 2])
    block["witness"]["columns"].append("V_2[1,1]" if "V_2[1,1]" not in block["witness"]["columns"] else "V_1[0,0]")
    block["witness"]["valuations"].append(1)


@pytest.mark.parametrize("edit, reason", [
    # a claimed rank one higher, with a witness one larger: the minor is singular
    (lambda c: (_one_more(c["blocks"][1]), _claim_again(c)), "values: the witness minor has pivot valuations"),
    # the rank alone raised: its status no longer follows, or its witness is short
    (lambda c: (c["blocks"][1].update(rank=5), _claim_again(c)), "must have rank = 5 rows"),
    (lambda c: c["blocks"][0].update(rank=4), "status 'observable', but by its rank 4 and upper bound 3"),
    # a point entry moving the point off the set: Q_2 = 0 no longer holds
    (lambda c: c["point"]["Q_2"][0].__setitem__(1, 5), "point['Q_2'][0][1] = 5, not 0: the point is not on the set"),
    # a row of the witness outside the bank, or another row
    (lambda c: c["blocks"][0]["witness"]["rows"].__setitem__(0, [99, 0, 0]), "is not (input < 8"),
    (lambda c: c["blocks"][0]["witness"]["rows"].__setitem__(0, [0, 0, 3]), "token < 3)"),
    (lambda c: c["blocks"][0]["witness"]["rows"].__setitem__(0, [-1, 0, 0]), "witness.rows[0] = [-1, 0, 0] is not"),
    (lambda c: c["blocks"][0]["witness"]["rows"].__setitem__(1, c["blocks"][0]["witness"]["rows"][0]),
     "repeats a row"),
    # a column that leaves the set (the collapsed Q_2) or is not of the block
    (lambda c: c["blocks"][1]["witness"]["columns"].__setitem__(0, "Q_2[0,0]"), "is not a column of values"),
    (lambda c: c.update(prime=268435397), "is not a prime"),
    # another prime is no error (the integer point and bank are the same numbers), one dividing a
    # denominator of the normalizer's Taylor coefficients is
    (lambda c: c.update(prime=3), "has 1/6, whose denominator is divisible by the prime 3"),
    (lambda c: c.update(truncation=3), "valuations[0] = 3 is not below the truncation eps^3"),
    (lambda c: c.update(claim=c["claim"].replace("rank 3", "rank 2")), "does not say"),
    (lambda c: c.update(events=["scores:1"]), "not 0: the point is not on the set, where Q_1 = 0"),
    (lambda c: c.update(events=["scores:2", "identical-tokens"]), "its tokens are not identical"),
    (lambda c: c.update(events=["bias"]), "this checker reads scores:I, scores:I:H, values:I"),
    (lambda c: c["blocks"][0].update(upper_bound=4), "upper_bound is 4; the checker's is 3"),
    (lambda c: c["curve"].update(input_power=2), "along the input scaling X -> eps X"),
])
def test_an_edit_that_breaks_a_witness_fails_naming_it(scores_two, edit, reason):
    assert verify(scores_two).verified
    report = _edited(scores_two, edit)
    assert not report.verified
    assert reason in report.problem, report.problem


def test_an_unobservable_block_that_is_seen_is_refuted(scores_one):
    assert verify(scores_one).verified
    # the point off the set (Q_1 != 0): the checker refuses it before any computation
    moved = _edited(scores_one, lambda c: c["point"]["Q_1"][0].__setitem__(0, 1))
    assert moved.problem == "point['Q_1'][0][0] = 1, not 0: the point is not on the set, where Q_1 = 0"
    # the event dropped with a block listed as unobservable that is not: the consistency check refutes it
    def unset(c):
        c["events"] = ["scores:2"]
        c["point"]["Q_2"] = [[0, 0]]
        c["point"]["Q_1"] = [[3, 5]]
        c["blocks"] = [{"block": "scores:1", "status": "unobservable", "rank": 0,
                        "columns": ["Q_1[0,0]", "Q_1[0,1]", "K_1[0,0]", "K_1[0,1]"]}, c["blocks"][1]]
        _claim_again(c)
    report = _edited(scores_one, unset)
    assert not report.verified
    assert report.problem.startswith("scores:1: the derivative of output ")
    assert report.problem.endswith("the block is seen on the set")


def test_identical_tokens_are_checked_on_the_bank():
    certificate = observe_certificate(Architecture.uniform(layers=1, width=2, tokens=2), ["identical-tokens"])
    assert verify(certificate).verified
    report = _edited(certificate, lambda c: c["bank"][2][1].__setitem__(1, c["bank"][2][1][0] + 1))
    assert report.problem.startswith("bank[2] row 1 is [")
    assert report.problem.endswith("its tokens are not identical, so the input is not on the set identical-tokens")


def test_the_checker_reads_held_blocks_by_its_own_rule():
    labels = ["Q_{1,1}", "K_{1,1}", "V_{1,1}", "Q_{1,2}", "K_{1,2}", "V_{1,2}", "Q_2", "K_2", "V_2"]
    assert held_blocks([("scores", 1, 2)], labels) == ["Q_{1,2}"]
    assert held_blocks([("scores", 1, None), ("values", 2, None)], labels) == ["Q_{1,1}", "Q_{1,2}", "V_2"]
    assert held_blocks([("identical-tokens", None, None)], labels) == []


# -- refusals and bad arguments -------------------------------------------------------------------------
@pytest.mark.parametrize("arch, events, message", [
    (dict(layers=2, width=2), ["value-rank:1:1"], "event value-rank:1:1: an observability certificate describes"),
    (dict(layers=2, width=2), ["bias"], "event bias: an observability certificate describes"),
    (dict(layers=1, bias=True), ["bias"], "event bias: an observability certificate describes"),
    (dict(layers=1, ffn=2, activation="gelu"), ["scores:1"], "activation gelu .* not rational"),
])
def test_what_a_certificate_cannot_describe_is_refused_before_computing(arch, events, message, monkeypatch):
    import symattn.observe.ranks as ranks

    monkeypatch.setattr(ranks, "_set_ranks", lambda *a, **k: pytest.fail("computed before refusing"))
    with pytest.raises(CertificateRefused, match=message):
        observe_certificate(Architecture.uniform(**arch), events)


def test_bad_arguments_are_clear_errors():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    with pytest.raises(SymattnError, match="result must be the RankCheck of rank_check, got int"):
        observe_certificate(arch, ["scores:1"], result=3)
    with pytest.raises(SymattnError, match=r"the result is on the set \['scores:2'\], not \['scores:1'\]"):
        observe_certificate(arch, ["scores:1"], result=rank_check(arch, ["scores:2"], confirm=False))
    with pytest.raises(SymattnError, match="with result= the run is given"):
        observe_certificate(arch, ["scores:1"], result=rank_check(arch, ["scores:1"], confirm=False), bank=9)


# -- the schema, a standalone checker, the command line -----------------------------------------------
def test_observe_certificates_match_the_schema(scores_one, scores_two):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "certificate.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(scores_one, schema)
    jsonschema.validate(scores_two, schema)
    broken = copy.deepcopy(scores_two)
    del broken["blocks"][0]["witness"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    unobservable = copy.deepcopy(scores_one)
    unobservable["blocks"][0]["rank"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(unobservable, schema)


def test_the_checker_checks_an_observe_certificate_as_a_standalone_copy(tmp_path):
    path = tmp_path / "observe.json"
    write_observe_certificate(Architecture.uniform(layers=2, width=2, rank=1, heads=2), path, ["scores:1:2"])
    report = verify_as_standalone_copy(tmp_path, path)
    assert [report["verified"], report["problem"]] == [True, None]


def test_the_blocks_listed_are_the_blocks_not_collapsed(scores_two):
    report = _edited(scores_two, lambda c: (c["blocks"].pop(), _claim_again(c)))
    assert report.problem == ("blocks must list each block that is not collapsed once, ['scores:1', 'values'], "
                              "got ['scores:1']")


def test_observe_writes_a_certificate_and_verify_checks_it(tmp_path, capsys):
    path = tmp_path / "observe.json"
    assert main(["observe", "--layers", "2", "--collapse", "scores:2", "--quiet", "--certificate", str(path)]) == 0
    capsys.readouterr()
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out.startswith(
        "verified: on the set scores:2, at its point, along X -> eps X: scores:1 is observable: rank 3, its upper "
        "bound, on its columns; values has rank at least 4 on its columns")
    certificate = json.loads(path.read_text(encoding="utf-8"))
    certificate["point"]["Q_2"][0][0] = 1
    path.write_text(json.dumps(certificate), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert capsys.readouterr().out.startswith("NOT verified: point['Q_2'][0][0] = 1, not 0")


def test_a_refused_observe_certificate_is_a_usage_error_before_computing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["observe", "--layers", "2", "--collapse", "value-rank:1:1", "--quiet", "--certificate",
                 "x.json"]) == 2
    assert "event value-rank:1:1: an observability certificate describes" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    assert main(["observe", "--layers", "2", "--exceptional", "--quiet", "--certificate", "x.json"]) == 2
    assert "--certificate certifies the ranks on one set" in capsys.readouterr().err
