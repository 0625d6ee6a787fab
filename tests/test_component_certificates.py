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
from symattn.verifier import CertificateError, verify
from symattn.verifier.export import export_script
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
    biased = Architecture.uniform(layers=1, width=2, rank=1, bias=True)
    with pytest.raises(CertificateError, match="this certificate has biases or feed-forward blocks"):
        export_script(dimension_certificate(biased), "sage")


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
