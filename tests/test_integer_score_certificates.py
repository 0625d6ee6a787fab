"""Certificates of the dimension's integer-score route, and the checker's own evaluation of them (issue 27).

On the integer-score route (:func:`symattn.identify.function_space_dimension`'s
default for softmax) layer 1's queries, keys and the inputs are small
integers, every layer-1 score is an exact integer ``m`` and softmax gives
``s(m)/s(0) = e^m`` with the transcendental ``e`` sent to a residue ``base``;
the later layers' keys collapse.  The certificate holds that run (field
``integer_scores``), and the checker computes the exact scores itself and
evaluates ``exp(A) = e^m exp(A - m)``.  Tampering that breaks the proof must
fail; edits that leave a valid proof (another unit ``base``, another point)
are reported honestly.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.certificates import dimension_certificate, identify_certificate
from symattn.cli import main
from symattn.curves import collapse
from symattn.identify import function_space_dimension
from symattn.identify.common import integer_score_point
from symattn.model import Architecture
from symattn.verifier import verify
from symattn.verifier.network import ScoresDoNotVanish, exponential_at_integers, forward, integer_scores


def _histogram(values):
    out = {}
    for v in sorted(values):
        out[v] = out.get(v, 0) + 1
    return out


def _layer_one_line(certificate):
    return (f"layer 1 at integer scores: s(m)/s(0) = e^m with e sent to {certificate['integer_scores']['base']}, "
            f"e transcendental (Hermite), a ring homomorphism Z[e, 1/e] -> GF({certificate['prime']})")


# -- round trips ------------------------------------------------------------------------------------
ROUND_TRIPS = {
    "1 layer": dict(layers=1, width=2, tokens=3),
    "1 layer, 2 heads": dict(layers=1, width=3, rank=2, heads=2, tokens=3),
    "2 layers": dict(layers=2, width=3, rank=2),
    "2 layers, 2 heads": dict(layers=2, width=2, rank=1, heads=2),
    "causal": dict(layers=2, width=2, rank=1, causal=True),
    "residual": dict(layers=2, width=2, rank=1, residual=True),
    "heads, causal, residual": dict(layers=2, width=2, rank=1, heads=[2, 1], causal=True, residual=True),
    "3 layers": dict(layers=3, width=2, rank=1),
    "4 tokens": dict(layers=2, width=2, rank=2, tokens=4),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_round_trip_on_the_integer_score_route(name):
    arch = Architecture.uniform(**ROUND_TRIPS[name])
    result = function_space_dimension(arch)
    assert result.route.startswith("integer scores")
    certificate = dimension_certificate(arch, result=result)
    report = verify(certificate)
    assert report.verified, report.problem
    assert certificate["rank"] == report.rank == result.lower
    assert sorted(certificate["witness"]["valuations"]) == list(report.valuations)
    assert certificate["truncation"] == 1 + max(certificate["witness"]["valuations"])
    assert certificate["integer_scores"]["layer"] == 1
    assert 1 <= certificate["integer_scores"]["base"] < certificate["prime"]
    assert _layer_one_line(certificate) in "\n".join(report.checked)
    assert "nonzero over Q(e)[[eps]]" in report.checked[-1]
    # layer 1 and the inputs unscaled; every later layer's keys, and only they, collapsed
    powers = certificate["curve"]["powers"]
    assert {name: power for name, power in powers.items() if power} == \
        {name: 1 for name in powers if name.startswith("K_") and not name.startswith(("K_1", "K_{1,"))}
    assert certificate["curve"]["input_power"] == 0
    assert verify(json.dumps(certificate)).verified


def test_one_layer_needs_no_series():
    certificate = dimension_certificate(Architecture.uniform(layers=1, width=2, tokens=3))
    assert certificate["truncation"] == 1 and set(certificate["curve"]["powers"].values()) == {0}
    assert certificate["curve"]["name"] == "no curve: layer 1 at integer scores"
    assert certificate["rank"] == 7 == verify(certificate).rank


def test_the_plain_network_exact_values():
    # 2 layers, width 2, rank 1: the layer-1 score columns at eps^0 (a generic point), the collapsed keys of
    # layer 2 at eps^0 in the curve's coordinates, its queries at eps^1; series to eps^2 instead of eps^7
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    result = function_space_dimension(arch)
    certificate = dimension_certificate(arch, result=result)
    assert certificate["rank"] == 10
    assert _histogram(certificate["witness"]["valuations"]) == {0: 7, 1: 3}
    assert certificate["truncation"] == 2
    # the run the engine made: its point (signed integers at layer 1), its bank (signed), its residue of e
    point, values, bank = integer_score_point(arch, result.prime, result.seed, result.bank)
    for name in ("Q_1", "K_1"):
        assert certificate["point"][name] == point[(name[0], 1)].tolist()
        assert max(abs(v) for row in certificate["point"][name] for v in row) <= 8
    signed = np.array(certificate["bank"])
    assert np.abs(signed).max() <= 8 and (signed < 0).any()
    assert (signed % result.prime == bank).all()
    assert certificate["integer_scores"]["base"] == values["integer scores"].base
    assert "e is transcendental (Hermite)" in certificate["integer_scores"]["reason"]
    assert "Q(e)[[eps]]" in certificate["proves"]


# -- the checker's evaluation, two ways ---------------------------------------------------------------------
def test_the_checkers_weights_are_e_to_the_m_over_their_column_sums():
    # one layer, one head, no jets: F = V X S with S_jk = base^(m_jk) / sum_j' base^(m_j'k) mod p,
    # computed here from the integer scores alone
    p, base = 1048573, 12345
    Q, K, V = [[1, -2]], [[3, 1]], [[1, 0], [2, 5]]
    X = [[1, -1, 2], [0, 3, -2]]
    m = integer_scores(Q, K, [X])[0]
    assert m.tolist() == [[3, -21, 18], [0, 0, 0], [4, -28, 24]]   # K X = [3, 0, 4], Q X = [1, -7, 6]
    weights = [[pow(base, int(m[j][k]), p) for k in range(3)] for j in range(3)]
    sums = [sum(weights[j][k] for j in range(3)) % p for k in range(3)]
    S = [[weights[j][k] * pow(sums[k], -1, p) % p for k in range(3)] for j in range(3)]
    expected = (np.array(V, dtype=object) @ np.array(X, dtype=object) @ np.array(S, dtype=object)) % p

    def jet(matrix):
        return np.array(matrix, dtype=np.int64)[:, :, None, None] % p

    exp = [1, 1]   # s/s(0) = exp: 1 + x, enough at eps^0
    normalizer = {"lightning": False, "polynomial": False, "taylor": exp,
                  "integer_scores": {"base": base, "scores": [m[None]], "inputs": [0]}}
    out = forward(jet(X)[None], [[(jet(Q), jet(K), jet(V))]], [normalizer], False, False, p)
    assert out[0, :, :, 0, 0].tolist() == expected.tolist()


def test_a_score_that_is_not_its_integer_is_named():
    A = np.zeros((1, 2, 2, 1, 1), dtype=np.int64)
    A[0, :, :, 0, 0] = [[3, 5], [0, 100]]              # 100 is -1 mod 101, as it should be
    scores = np.array([[[3, 5], [1, -1]]], dtype=object)  # entry (1, 0) should be 1
    with pytest.raises(ScoresDoNotVanish, match=r"layer 1, head 1: the score of bank input 7, key 1, query 0 is 0 "
                                                 r"mod 101 at eps = 0, not its exact integer score 1"):
        exponential_at_integers(A, scores, 3, [1, 1], 101, "layer 1, head 1", [7])


# -- tampering -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certificate():
    certificate = dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1))
    assert verify(certificate).verified and "integer_scores" in certificate
    return certificate


def _fails(certificate, *fragments):
    report = verify(certificate)
    assert not report.verified
    assert report.problem and all(fragment in report.problem for fragment in fragments), report.problem
    return report


def test_each_must_fail_edit_fails_naming_it(certificate):
    c = copy.deepcopy
    p = certificate["prime"]
    edit = c(certificate)
    edit["point"]["Q_1"] = [[0, 0]]   # every layer-1 score 0: K_1's columns vanish, the minor is singular
    _fails(edit, "witness minor has only")
    edit = c(certificate)
    edit["point"]["K_1"][0][0] = 10 ** 6
    _fails(edit, "integer_scores: a layer-1 score is", "not below p/2")
    edit = c(certificate)
    edit["bank"][0][0][0] = 10 ** 6
    _fails(edit, "not below p/2")
    for base in (0, p, -3):
        edit = c(certificate)
        edit["integer_scores"]["base"] = base   # not a unit mod p: e -> base is no homomorphism of Z[e, 1/e]
        _fails(edit, f"integer_scores.base must be in 1 .. {p - 1}")
    edit = c(certificate)
    edit["integer_scores"]["base"] = "3"
    _fails(edit, "integer_scores.base must be an integer")
    edit = c(certificate)
    edit["prime"] = p * 3
    _fails(edit, "not a prime")
    edit = c(certificate)
    edit["prime"] = 7
    _fails(edit)
    edit = c(certificate)
    edit["witness"]["rows"][0][0] = len(edit["bank"])
    _fails(edit, "input index")
    edit = c(certificate)
    edit["witness"]["rows"][1] = list(edit["witness"]["rows"][0])
    _fails(edit, "repeats a row")
    edit = c(certificate)
    edit["truncation"] = max(edit["witness"]["valuations"])
    _fails(edit, "not below the truncation")
    edit = c(certificate)
    edit["rank"] += 1
    _fails(edit, "claims rank 11")
    edit = c(certificate)
    edit["witness"]["valuations"][-1] = 0
    _fails(edit, "pivot valuations of the witness minor are {0: 7, 1: 3}")
    edit = c(certificate)
    del edit["integer_scores"]   # then layer 1's scores do not vanish at eps = 0
    _fails(edit, "layer 1, head 1: a score is nonzero at eps = 0")
    edit = c(certificate)
    edit["integer_scores"]["layer"] = 2
    _fails(edit, "integer_scores.layer must be 1, got 2")
    edit = c(certificate)
    edit["integer_scores"]["rate"] = 2
    _fails(edit, "integer_scores.rate: this checker reads layer, base and reason")
    edit = c(certificate)
    edit["curve"]["powers"]["Q_1"] = 1
    _fails(edit, "layer 1's queries and keys and the inputs must not be scaled", "Q_1 = eps^1")
    edit = c(certificate)
    edit["curve"]["powers"]["K_2"] = 0   # layer 2's scores then do not vanish at eps = 0
    _fails(edit, "layer 2, head 1: a score is nonzero at eps = 0")
    edit = c(certificate)
    edit["normalizers"][0]["expression"] = "cosh(x)"
    edit["normalizers"][0]["taylor"] = ["1", "0", "1/2"]
    _fails(edit, "normalizers[0]: the Taylor coefficient c_1 of s/s(0) for its name 'softmax' (the preset exp(x))")
    edit["normalizers"][0]["name"] = edit["architecture"]["normalizers"][0] = "cosh"  # relabelled as well
    _fails(edit, "integer_scores: layer 1's normalizer must be exp(x)", "'cosh(x)'")
    edit = c(certificate)
    edit["normalizers"][0]["expression"] = "exp(2*x)"   # recomputed: not softmax's coefficients
    _fails(edit, "the Taylor coefficient c_1 of s/s(0) for its expression 'exp(2*x)' is 2 mod")
    edit = c(certificate)
    edit["normalizers"][0]["expression"] = "exp(x) + 0"   # the same coefficients, but not exp(x) as written
    _fails(edit, "layer 1's normalizer must be exp(x)")


def test_integer_scores_on_a_cosh_certificate_are_refused():
    cosh = dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1, normalizer="cosh"))
    assert "integer_scores" not in cosh and verify(cosh).verified
    cosh["integer_scores"] = {"layer": 1, "base": 5, "reason": "none"}
    _fails(cosh, "integer_scores: layer 1's normalizer must be exp(x)")


def test_integer_scores_in_an_orders_certificate_are_refused():
    from symattn.certificates import orders_certificate

    orders = orders_certificate(Architecture.uniform(layers=1, width=1, tokens=2))
    orders["integer_scores"] = {"layer": 1, "base": 5, "reason": "none"}
    _fails(orders, "a 'identification orders' certificate has no integer scores")


_MUST_FAIL = ("rank up", "row index out of range", "truncation below a pivot", "valuation changed", "base not a unit",
              "field removed")
_MAY_PASS = ("layer-1 entry", "bank entry", "another unit base", "another prime")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(_MUST_FAIL + _MAY_PASS), data=st.data())
def test_a_random_single_edit(certificate, kind, data):
    edit = copy.deepcopy(certificate)
    witness, p = edit["witness"], edit["prime"]
    if kind == "rank up":
        edit["rank"] += data.draw(st.integers(1, 5))
    elif kind == "row index out of range":
        n = data.draw(st.integers(0, len(witness["rows"]) - 1))
        where = data.draw(st.integers(0, 2))
        limit = (len(edit["bank"]), edit["architecture"]["widths"][-1], edit["architecture"]["tokens"])[where]
        witness["rows"][n][where] = data.draw(st.one_of(st.integers(limit, limit + 100), st.integers(-50, -1)))
    elif kind == "truncation below a pivot":
        edit["truncation"] = data.draw(st.integers(1, max(witness["valuations"])))
    elif kind == "valuation changed":
        n = data.draw(st.integers(0, len(witness["valuations"]) - 1))
        witness["valuations"][n] = data.draw(
            st.integers(0, edit["truncation"] - 1).filter(lambda v: v != witness["valuations"][n]))
    elif kind == "base not a unit":
        edit["integer_scores"]["base"] = data.draw(st.one_of(st.just(0), st.integers(p, 2 * p), st.integers(-p, -1)))
    elif kind == "field removed":
        del edit["integer_scores"]
    elif kind == "layer-1 entry":
        block = data.draw(st.sampled_from(["Q_1", "K_1"]))
        matrix = edit["point"][block]
        r, col = data.draw(st.integers(0, len(matrix) - 1)), data.draw(st.integers(0, len(matrix[0]) - 1))
        matrix[r][col] = data.draw(st.integers(-10 ** 6, 10 ** 6))
    elif kind == "bank entry":
        b = data.draw(st.integers(0, len(edit["bank"]) - 1))
        X = edit["bank"][b]
        r, col = data.draw(st.integers(0, len(X) - 1)), data.draw(st.integers(0, len(X[0]) - 1))
        X[r][col] = data.draw(st.integers(-10 ** 6, 10 ** 6))
    elif kind == "another unit base":
        edit["integer_scores"]["base"] = data.draw(st.integers(1, p - 1))
    else:
        edit["prime"] = data.draw(st.sampled_from((1048571, 1000003, 268435399, 101)))
    report = verify(edit)  # never raises on a parsed certificate
    if kind in _MUST_FAIL:
        assert not report.verified and report.problem
    elif report.verified:
        # still a proof (e -> any unit is a homomorphism; another integer point is another point of the
        # network): the checker's own valuations are the claimed ones
        assert list(report.valuations) == sorted(witness["valuations"]) and report.rank == edit["rank"]
    else:
        assert report.problem


# -- the command line and the bundles -----------------------------------------------------------------------
def test_dimension_certificate_is_of_the_route_the_command_computes(tmp_path, capsys):
    path = tmp_path / "dimension.json"
    assert main(["dimension", "--layers", "2", "--width", "3", "--rank", "2", "--certificate", str(path)]) == 0
    capsys.readouterr()
    certificate = json.loads(path.read_text(encoding="utf-8"))
    assert certificate["produced_by"]["route"].startswith("integer scores at layer 1")
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verified: the dimension of the function space of this architecture is at least 25")
    assert _layer_one_line(certificate) in out


def test_an_identify_bundle_carries_an_integer_score_dimension():
    # identify computes its dimension along its curve (the collapse); a report whose dimension took the
    # integer-score route gives a bundle whose dimension part is of that route
    from dataclasses import replace

    from symattn.identify import identify

    arch = Architecture.uniform(layers=2, width=2, rank=1)
    report = identify(arch, estimate=None)
    assert report.dimension.route.startswith("series along")
    report = replace(report, dimension=function_space_dimension(arch, estimate=None))
    bundle = identify_certificate(arch, report=report)
    assert "integer_scores" in bundle["parts"][0] and "integer_scores" not in bundle["parts"][1]
    report = verify(bundle)
    assert report.verified, report.problem
    assert any(line.startswith("parts[0] (dimension lower bound): layer 1 at integer scores") for line in report.checked)


def test_a_curve_route_result_stays_on_the_curve_route():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    certificate = dimension_certificate(arch, result=function_space_dimension(arch, route="curve"))
    assert "integer_scores" not in certificate and certificate["curve"]["powers"]["Q_1"] == 1
    with pytest.raises(Exception, match="with no curve: pass curve=None"):
        dimension_certificate(arch, result=function_space_dimension(arch), curve=collapse())


def test_an_integer_score_certificate_matches_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema = json.loads((Path(__file__).resolve().parent.parent / "docs" / "certificate.schema.json")
                        .read_text(encoding="utf-8"))
    certificate = dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1, heads=2))
    jsonschema.validate(certificate, schema)
    certificate["integer_scores"]["layer"] = 2
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(certificate, schema)
