"""Certificates of networks with biases and feed-forward blocks, and the checker's forward pass through them.

The checker writes attention with bias columns (``Q x + b_Q`` and the like)
and the feed-forward block ``W_out s(W_in x + b_in) + b_out`` itself; its
series are compared with an exact sympy expansion, and the dimension and
spectrum certificates of such networks round-trip against the engine.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import sympy as sp

from symattn.certificates import (
    CertificateRefused, check_certifiable, dimension_certificate, orders_certificate, spectrum_certificate,
)
from symattn.identify import function_space_dimension
from symattn.model import Architecture
from symattn.spectrum import decay_spectrum
from symattn.verifier import verify
from symattn.verifier.network import forward

P = 1048573

NETWORKS = {
    "biases, 1 layer": dict(layers=1, width=2, rank=1, bias=True),
    "biases, 2 layers": dict(layers=2, width=2, rank=1, bias=True),
    "feed-forward tanh": dict(layers=1, width=2, rank=1, ffn=2),
    "feed-forward x + x**2, cosh": dict(layers=1, width=2, rank=1, ffn=2, activation="x + x**2", normalizer="cosh"),
    "feed-forward, residual": dict(layers=2, width=2, rank=1, ffn=2, residual=True),
    "biased feed-forward sigmoid, heads": dict(layers=2, width=2, rank=1, ffn=2, bias=True, heads=2,
                                              activation="sigmoid"),
    "biases, feed-forward, residual, causal": dict(layers=2, width=2, rank=1, ffn=2, bias=True, residual=True,
                                                   causal=True),
}


@pytest.mark.parametrize("name", list(NETWORKS))
def test_dimension_and_spectrum_certificates_of_components_verify(name):
    arch = Architecture.uniform(**NETWORKS[name])
    dimension = function_space_dimension(arch)
    certificate = dimension_certificate(arch, result=dimension)
    assert certificate["rank"] == dimension.lower
    report = verify(certificate)
    assert report.verified, report.problem
    assert any(line.startswith("architecture: ") and ("biases" in line or "feed-forward" in line)
               for line in report.checked)
    spectrum = decay_spectrum(arch, progress=False)
    certificate = spectrum_certificate(arch, result=spectrum)
    assert {int(e): m for e, m in certificate["exponents"].items()} == spectrum.exponents
    report = verify(certificate)
    assert report.verified, report.problem
    # the gauge check knows attention's plain tangents only: it says so, and decides nothing
    assert report.kernel is None and any("not done" in line for line in report.checked)


def test_the_checkers_biased_attention_and_feed_forward_block_are_the_exact_series():
    # one layer, width 2, rank 1, 3 tokens, softmax, biases and a feed-forward block with s(x) = x + x^2,
    # at small integers along the collapse curve, against sympy's exact expansion
    N = 3
    Q, K, V = [[1, 2]], [[3, -1]], [[1, 0], [0, 1]]
    bQ, bK, bV = [[2]], [[5]], [[1], [2]]
    Win, Wout, bin_, bout = [[1, -1], [2, 1]], [[1, 2], [0, 1]], [[1], [3]], [[2], [-1]]
    X0 = [[1, 0, 2], [0, 1, 1]]

    def block(matrix, power):
        array = np.zeros((len(matrix), len(matrix[0]), 1, N), dtype=np.int64)
        array[..., 0, power] = np.array(matrix) % P
        return array

    X = np.zeros((1, 2, 3, 1, N), dtype=np.int64)
    X[..., 0, 0] = np.array(X0) % P
    softmax = [1, 1, pow(2, P - 2, P), pow(6, P - 2, P)]
    heads = [[(block(Q, 1), block(K, 1), block(V, 0), block(bQ, 1), block(bK, 1), block(bV, 0))]]
    ffns = [(block(Win, 1), block(Wout, 0), block(bin_, 1), block(bout, 0))]
    activation = {"taylor": [0, 1, 1], "polynomial": True}
    checker = forward(X, heads, [{"lightning": False, "taylor": softmax, "polynomial": False}], False, False, P,
                      ffns, [activation])[0, :, :, 0, :]

    e = sp.symbols("e")
    M = sp.Matrix
    ones = sp.ones(1, 3)
    A = (e * M(K) * M(X0) + e * M(bK) * ones).T * (e * M(Q) * M(X0) + e * M(bQ) * ones)
    S = M(3, 3, lambda j, k: sp.exp(A[j, k]) / sum(sp.exp(A[i, k]) for i in range(3)))
    H = (M(V) * M(X0) + M(bV) * ones) * S
    pre = e * M(Win) * H + e * M(bin_) * ones
    F = M(Wout) * pre.applyfunc(lambda x: x + x ** 2) + M(bout) * ones
    for i in range(2):
        for k in range(3):
            series = sp.series(F[i, k], e, 0, N).removeO()
            exact = [sp.Rational(series.coeff(e, n)) for n in range(N)]
            assert [int(c.p * pow(int(c.q), P - 2, P) % P) for c in exact] == checker[i, k].tolist(), (i, k)


def test_what_the_checker_does_not_implement_is_refused_before_computing():
    with pytest.raises(CertificateRefused, match="activation gelu .* not rational"):
        check_certifiable(Architecture.uniform(layers=1, width=2, ffn=2, activation="gelu"))
    with pytest.raises(CertificateRefused, match="activation gelu .* not rational"):
        orders_certificate(Architecture.uniform(layers=1, width=2, ffn=2, activation="gelu"))


@pytest.mark.parametrize("edit, reason", [
    (lambda c: c.pop("activations"), "activations"),
    (lambda c: c["activations"][0].update(taylor=["0", "1"]), "activations[0].taylor has 2 coefficients"),
    (lambda c: c["architecture"].update(ffn=[3]), "point['Win_1'] must have 3 entries, got 2"),
    (lambda c: c["architecture"].update(bias=False), "curve.powers must name every block ['Q_1', 'K_1', 'V_1', "
                                                     "'Win_1', 'Wout_1']"),
    (lambda c: c["architecture"].update(ffn=[2, 2]), "architecture.ffn must have 1 entries, got 2"),
])
def test_edits_of_the_components_fail_naming_them(edit, reason):
    certificate = dimension_certificate(Architecture.uniform(layers=1, width=2, rank=1, ffn=2, bias=True))
    changed = copy.deepcopy(certificate)
    edit(changed)
    report = verify(changed)
    assert not report.verified
    assert reason in report.problem, report.problem


def test_component_certificates_match_the_schema():
    import json
    from pathlib import Path

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parent.parent / "docs" / "certificate.schema.json")
                        .read_text(encoding="utf-8"))
    arch = Architecture.uniform(**NETWORKS["biases, feed-forward, residual, causal"])
    jsonschema.validate(dimension_certificate(arch), schema)
    jsonschema.validate(spectrum_certificate(arch), schema)
    jsonschema.validate(orders_certificate(arch), schema)   # blocks bias:i and feed-forward:i

    from symattn.certificates import observe_certificate

    jsonschema.validate(observe_certificate(arch, ["scores:1"]), schema)   # a block feed-forward:i


# -- identification orders --------------------------------------------------------------------------
# name: {block: (order, jet rank)} the run and the certificate give along the collapse curve
ORDERS = {
    "biases, 2 layers": {"scores:1": (2, 4), "scores:2": (6, 4), "bias:1": (0, 2), "bias:2": (0, 2),
                         "values": (0, 6)},
    "feed-forward tanh": {"scores:1": (3, 3), "feed-forward:1": (1, 4), "values": (1, 4)},
    "feed-forward x + x**2, cosh": {"scores:1": (5, 3), "feed-forward:1": (1, 4), "values": (1, 4)},
    "biased feed-forward sigmoid, heads": {
        "scores:1:1": (4, 4), "scores:1:2": (4, 4), "scores:2:1": (9, 2), "scores:2:2": (9, 2), "bias:1": (2, 2),
        "feed-forward:1": (1, 2), "bias:2": (1, 2), "feed-forward:2": (0, 2), "values": (1, 2)},
    "biases, feed-forward, residual, causal": {
        "scores:1": (2, 4), "scores:2": (2, 4), "bias:1": (0, 2), "feed-forward:1": (0, 2), "bias:2": (0, 2),
        "feed-forward:2": (0, 2), "values": (0, 8)},
}


@pytest.mark.parametrize("name", list(ORDERS))
def test_orders_certificates_of_components_verify_and_agree_with_the_engine(name):
    from symattn.identify import identification_orders

    arch = Architecture.uniform(**NETWORKS[name])
    result = identification_orders(arch)
    engine = {b.block: (b.order, b.jet_rank) for b in (*result.scores, result.values)}
    certificate = orders_certificate(arch, result=result)
    claimed = {entry["block"]: (entry["order"], entry["jet_rank"]) for entry in certificate["orders"]}
    assert claimed == engine == ORDERS[name]
    report = verify(certificate)
    assert report.verified, report.problem
    # the checker found the bias and feed-forward blocks' columns by its own rule and checked their witnesses
    for block, (order, rank) in ORDERS[name].items():
        assert any(line.startswith(f"{block}: C_{order} is nonzero") and f"(jet rank >= {rank})" in line
                   for line in report.checked), block


@pytest.fixture(scope="module")
def biased_orders():
    """Biases and a feed-forward block x + x**2 in one layer: every block's order and witnesses."""
    arch = Architecture.uniform(layers=1, width=2, rank=1, bias=True, ffn=2, activation="x + x**2")
    return orders_certificate(arch)


def _orders_claim_again(certificate):
    from symattn.certificates import orders_claim

    certificate["claim"] = orders_claim(certificate["orders"])


def _entry(certificate, block):
    return next(entry for entry in certificate["orders"] if entry["block"] == block)


@pytest.mark.parametrize("edit, reason", [
    # a claimed number: the bias block's jet rank one higher, its order one lower than C_0 allows
    (lambda c: (_entry(c, "bias:1").update(jet_rank=_entry(c, "bias:1")["jet_rank"] + 1), _orders_claim_again(c)),
     "witness must have jet_rank = 3 rows and columns"),
    (lambda c: (_entry(c, "feed-forward:1").update(order=_entry(c, "feed-forward:1")["order"] + 1),
                _orders_claim_again(c)), "feed-forward:1: the C_1 entry at output (0, 0, 0), column bout_1[0,0] is 0"),
    # a bias entry of the point: without b_Q the scores' witness is singular (the scores see K^T Q alone)
    (lambda c: c["point"].update(bQ_1=[[0]]), "scores:1: the 4 x 4 witness matrix of [C_0; ...; C_3] has rank 3"),
    # a witness column of another block, a nonzero entry's column outside the block
    (lambda c: _entry(c, "bias:1")["witness"]["columns"].__setitem__(0, "Q_1[0,0]"),
     "is not a parameter of block bias:1"),
    (lambda c: _entry(c, "feed-forward:1")["nonzero"].update(column="bQ_1[0,0]"),
     "is not a parameter of block feed-forward:1"),
    # a bias entry of the point that is not an integer, a bias block with the wrong shape
    (lambda c: c["point"]["bV_1"][1].__setitem__(0, 1.5), "point['bV_1'][1][0] must be an integer"),
    (lambda c: c["point"].update(bin_1=[[1]]), "point['bin_1'] must have 2 entries, got 1"),
    (lambda c: c["curve"]["powers"].pop("bout_1"), "curve.powers must name every block"),
])
def test_an_edit_of_a_components_orders_certificate_fails_naming_it(biased_orders, edit, reason):
    assert verify(biased_orders).verified
    changed = copy.deepcopy(biased_orders)
    edit(changed)
    report = verify(changed)
    assert not report.verified
    assert reason in report.problem, report.problem


# -- observability on a collapsed set ------------------------------------------------------------------
# name: (architecture, events, [(block, status, rank, upper bound)] the certificate claims)
OBSERVE = {
    # softmax: the scores see K^T [Q b_Q], 2 x 3 of rank 1 (4); cosh: [K b_K]^T [Q b_Q], 3 x 3 of rank 1 (5)
    "biases, softmax": (dict(layers=2, width=2, rank=1, bias=True), ["scores:2"],
                        [("scores:1", "observable", 4, 4), ("values", "seen", 8, None)]),
    "biases, cosh": (dict(layers=2, width=2, rank=1, bias=True, normalizer="cosh"), ["scores:2"],
                     [("scores:1", "observable", 5, 5), ("values", "seen", 9, None)]),
    # one head's Q held: that head's scores still see K^T b_Q (3 = d), the other head's 2 (3 x 4 of rank 2: 10)
    "biases, width 3, one head of two": (dict(layers=1, width=3, rank=2, bias=True, heads=2), ["scores:1:2"],
                                         [("scores:1", "observable", 13, 13), ("values", "seen", 21, None)]),
    "feed-forward tanh": (dict(layers=1, width=2, rank=1, ffn=2), ["scores:1"],
                          [("feed-forward:1", "observable", 8, 8), ("values", "seen", 4, None)]),
    "feed-forward x + x**2, cosh": (dict(layers=1, width=2, rank=1, ffn=2, activation="x + x**2",
                                         normalizer="cosh"), ["identical-tokens"],
                                    [("scores:1", "unobservable", 0, None), ("feed-forward:1", "observable", 8, 8),
                                     ("values", "seen", 4, None)]),
    # x**2 hides the scalings W_in row * c, W_out column / c^2: rank 6 of its 8 columns, seen, no verdict
    "feed-forward x**2": (dict(layers=1, width=2, rank=1, ffn=2, activation="x**2"), [],
                          [("scores:1", "observable", 3, 3), ("feed-forward:1", "seen", 6, 8),
                           ("values", "seen", 4, None)]),
    # V_1 = 0 with biases: the feed-forward blocks see b_V only
    "biased feed-forward tanh, heads": (dict(layers=2, width=2, rank=1, ffn=2, bias=True, heads=2), ["values:1"],
                                        [("scores:1", "unobservable", 0, None), ("feed-forward:1", "seen", 2, 12),
                                         ("scores:2", "unobservable", 0, None), ("feed-forward:2", "seen", 2, 12)]),
    "biases, feed-forward, residual, causal": (NETWORKS["biases, feed-forward, residual, causal"], ["scores:1"],
                                               [("feed-forward:1", "observable", 12, 12),
                                                ("scores:2", "observable", 4, 4),
                                                ("feed-forward:2", "observable", 12, 12),
                                                ("values", "seen", 12, None)]),
}


@pytest.mark.parametrize("name", list(OBSERVE))
def test_observe_certificates_of_components_verify_and_agree_with_the_engine(name):
    from symattn.certificates import observe_certificate
    from symattn.observe import rank_check

    options, events, expected = OBSERVE[name]
    arch = Architecture.uniform(**options)
    result = rank_check(arch, events, confirm=False)
    certificate = observe_certificate(arch, events, result=result)
    claimed = [(e["block"], e["status"], e["rank"], e.get("upper_bound")) for e in certificate["blocks"]]
    assert claimed == expected
    for block, _, rank, _ in claimed:  # the engine's rank on the set, the values' (V and b_V alone) at least
        assert rank >= result.on_set[block] if block == "values" else rank == result.on_set[block]
    report = verify(certificate)
    assert report.verified, report.problem
    for block, status, rank, _ in expected:
        start = f"{block}: its " if status == "unobservable" else f"{block}: the {rank} x {rank} witness minor"
        assert any(line.startswith(start) for line in report.checked), block


@pytest.fixture(scope="module")
def biased_observe():
    """Two softmax layers with biases and feed-forward blocks, scores:2 collapsed."""
    from symattn.certificates import observe_certificate

    arch = Architecture.uniform(layers=2, width=2, rank=1, bias=True, ffn=2, activation="x + x**2")
    return observe_certificate(arch, ["scores:2"])


def _block(certificate, name):
    return next(entry for entry in certificate["blocks"] if entry["block"] == name)


def _observe_claim_again(certificate):
    from symattn.certificates import observe_claim

    certificate["claim"] = observe_claim(certificate["events"], certificate["blocks"])


@pytest.mark.parametrize("edit, reason", [
    # a bias entry of the point: with Q_2 = 0 on the set the second layer's scores (K_2 x + b_K)^T b_Q depend on
    # b_Q alone; b_Q = 0 makes them 0, and the values lose the two directions they showed at eps^7
    (lambda c: c["point"].update(bQ_2=[[0]]), "values: the witness minor has pivot valuations [0, 0, 1, 1, 1, 1, "
                                              "2, 2, 2, 2], the certificate claims [0, 0, 1, 1, 1, 1, 2, 2, 2, 2, "
                                              "7, 7]"),
    # a claimed number: an upper bound, a feed-forward block's rank
    (lambda c: _block(c, "scores:1").update(upper_bound=5), "upper_bound is 5; the checker's is 4"),
    (lambda c: (_block(c, "feed-forward:1").update(rank=7, status="seen"), _observe_claim_again(c)),
     "witness must have rank = 7 rows"),
    # softmax's expression replaced: the checker takes the coefficients as given, without the shift invariance,
    # and its bound for the biased scores is 5
    (lambda c: c["normalizers"][0].update(expression="exp(x) + 0"),
     "status 'observable', but by its rank 4 and upper bound 5 it is 'seen'"),
    # the biases not scaled with the input, a block listed that the architecture does not have
    (lambda c: c["curve"]["powers"].update(bV_1=0), "the biases scaled with it"),
    (lambda c: c["blocks"].append({**_block(c, "feed-forward:2"), "block": "feed-forward:3"}),
     "blocks must list each block that is not collapsed once"),
    (lambda c: _block(c, "feed-forward:1")["witness"]["columns"].__setitem__(0, "bV_1[0,0]"),
     "is not a column of feed-forward:1 on the set"),
])
def test_an_edit_of_a_components_observe_certificate_fails_naming_it(biased_observe, edit, reason):
    assert verify(biased_observe).verified
    changed = copy.deepcopy(biased_observe)
    edit(changed)
    report = verify(changed)
    assert not report.verified
    assert reason in report.problem, report.problem


def test_observe_certifies_biases_and_feed_forward_blocks_from_the_command_line(tmp_path, capsys):
    import json

    from symattn.cli import main

    path = tmp_path / "observe.json"
    assert main(["observe", "--layers", "2", "--width", "2", "--bias", "--ffn", "2", "--collapse", "scores:2",
                 "--certificate", str(path)]) == 0
    capsys.readouterr()
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out.startswith(
        "verified: on the set scores:2, at its point, along X -> eps X: scores:1 is observable: rank 4, its upper "
        "bound, on its columns; feed-forward:1 is observable: rank 12, its upper bound, on its columns; "
        "feed-forward:2 is observable: rank 12")
    certificate = json.loads(path.read_text(encoding="utf-8"))
    certificate["blocks"][0]["upper_bound"] = 5  # the bound of the scores with biases under cosh, not softmax
    path.write_text(json.dumps(certificate), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert capsys.readouterr().out.startswith("NOT verified: blocks[0] (scores:1).upper_bound is 5; the checker's "
                                              "is 4")
