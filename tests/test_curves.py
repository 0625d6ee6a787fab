"""Curves in parameter and input space: constructors, validation, block coefficients."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from symattn.curves import (
    EPS,
    Curve,
    collapse,
    collapse_keys,
    collapse_queries,
    input_scaling,
    polynomial_curve,
)
from symattn.errors import ShapeError, SymattnError
from symattn.model import Architecture

P = 101


def _residue(value) -> int:
    value = sp.Rational(value)
    return int(value.p) * pow(int(value.q), -1, P) % P


# -- constructors --------------------------------------------------------------------------
def test_collapse_scales_every_query_and_key():
    curve = collapse()
    assert curve.query_layers is None and curve.key_layers is None
    assert curve.input_power == 0 and curve.polynomials == ()
    for layer in (1, 2, 7):
        assert curve.scaled("Q", layer) and curve.scaled("K", layer)
        assert not curve.scaled("V", layer)
    assert curve.describe(3) == "simultaneous query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i (layers 1..3)"


def test_collapse_of_chosen_layers_sorts_and_deduplicates():
    curve = collapse([2, 1, 2])
    assert curve.query_layers == (1, 2) and curve.key_layers == (1, 2)
    assert curve.scaled("Q", 2) and not curve.scaled("Q", 3) and not curve.scaled("V", 1)
    assert collapse([2]).describe(3) == "query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i at layers [2]"


def test_queries_only_and_keys_only():
    q, k = collapse_queries(), collapse_keys()
    assert q.query_layers is None and q.key_layers == ()
    assert k.key_layers is None and k.query_layers == ()
    assert q.scaled("Q", 1) and not q.scaled("K", 1)
    assert k.scaled("K", 3) and not k.scaled("Q", 3)
    assert collapse_queries([3]).query_layers == (3,)
    assert collapse_keys([1]).describe(2) == "key collapse K_i = eps Kt_i at layers [1]"
    assert collapse_queries().describe(2) == "query collapse Q_i = eps Qt_i (layers 1..2)"


def test_input_scaling():
    curve = input_scaling()
    assert curve.input_power == 1
    assert not any(curve.scaled(b, 1) for b in "QKV")
    assert curve.describe(2) == "input scaling X -> eps X"


def test_polynomial_curve_parses_blocks():
    curve = polynomial_curve({"Q1": [[EPS, 2 * EPS ** 2]], "V12": sp.Matrix([[1, 0], [0, EPS]])}, name="mine")
    assert curve.name == "mine"
    assert [(b, i) for b, i, _ in curve.polynomials] == [("Q", 1), ("V", 12)]
    assert curve.polynomials[0][2] == sp.Matrix([[EPS, 2 * EPS ** 2]])
    assert curve.query_layers == () and curve.key_layers == () and curve.input_power == 0


def test_to_json():
    assert collapse().to_json() == {"name": collapse().name, "query_layers": None, "key_layers": None,
                                    "input_power": 0, "polynomials": []}
    assert collapse([1, 3]).to_json()["query_layers"] == [1, 3]
    poly = polynomial_curve({"K2": [[EPS, 0]]}).to_json()
    assert poly["polynomials"] == [["K", 2, "[[eps, 0]]"]]


# -- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [collapse, collapse_queries, collapse_keys])
def test_empty_layer_choice_is_refused(make):
    with pytest.raises(SymattnError, match="at least one layer"):
        make([])


@pytest.mark.parametrize("key", ["X1", "Q", "Qa", "q1", "QK1", "", 3])
def test_bad_block_names(key):
    with pytest.raises(SymattnError, match="look like 'Q1'") as info:
        polynomial_curve({key: [[EPS]]})
    assert repr(key) in str(info.value)


@pytest.mark.parametrize("entry", [1 / EPS, sp.exp(EPS), EPS * sp.Symbol("t"), sp.sqrt(EPS), sp.Symbol("x")])
def test_non_polynomial_entries(entry):
    with pytest.raises(SymattnError, match="not a polynomial in eps") as info:
        polynomial_curve({"Q1": [[entry, EPS]]})
    assert str(entry) in str(info.value)


def test_validate_against_architecture():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    collapse().validate(arch)
    collapse([1, 2]).validate(arch)
    input_scaling().validate(arch)
    polynomial_curve({"Q2": [[EPS, EPS]], "V1": [[1, 0], [0, 1]]}).validate(arch)
    with pytest.raises(ShapeError, match=r"names layers \[3\]"):
        collapse([1, 3]).validate(arch)
    with pytest.raises(ShapeError, match=r"names layers \[0\]"):
        collapse_keys([0]).validate(arch)
    with pytest.raises(ShapeError, match="no such layer"):
        polynomial_curve({"K3": [[EPS, EPS]]}).validate(arch)
    with pytest.raises(ShapeError, match=r"must be 1 x 2, got \(2, 1\)"):
        polynomial_curve({"Q1": [[EPS], [EPS]]}).validate(arch)
    with pytest.raises(ShapeError, match=r"V_2 must be 2 x 2"):
        polynomial_curve({"V2": [[1, 0, 0], [0, 1, 0]]}).validate(arch)


def test_decay_spectrum_validates_the_curve():
    from symattn.spectrum import decay_spectrum

    arch = Architecture.uniform(layers=2)
    with pytest.raises(ShapeError, match=r"\[3\]"):
        decay_spectrum(arch, collapse([3]), progress=False)
    with pytest.raises(ShapeError, match="Q_1 must be 1 x 2"):
        decay_spectrum(arch, polynomial_curve({"Q1": [[EPS]]}), progress=False)


# -- block coefficients ----------------------------------------------------------------------
def test_block_coefficients_of_scaled_and_unscaled_blocks():
    base = np.array([[3, 5]], dtype=np.int64)
    curve = collapse([1])
    q = curve.block_coefficients("Q", 1, base, _residue, 4)
    assert q.shape == (1, 2, 4) and q.dtype == np.int64
    assert q[:, :, 1].tolist() == [[3, 5]] and not q[:, :, [0, 2, 3]].any()
    v = curve.block_coefficients("V", 1, base, _residue, 4)
    assert v[:, :, 0].tolist() == [[3, 5]] and not v[:, :, 1:].any()
    q2 = curve.block_coefficients("Q", 2, base, _residue, 4)  # layer 2 not chosen
    assert q2[:, :, 0].tolist() == [[3, 5]] and not q2[:, :, 1:].any()


def test_block_coefficients_beyond_truncation_are_dropped():
    base = np.array([[3, 5]], dtype=np.int64)
    assert not collapse().block_coefficients("K", 1, base, _residue, 1).any()
    assert collapse().block_coefficients("K", 1, base, _residue, 2)[:, :, 1].tolist() == [[3, 5]]


def test_block_coefficients_of_polynomial_blocks():
    curve = polynomial_curve({"Q1": [[sp.Rational(1, 2) * EPS + 3 * EPS ** 3, 7 - EPS ** 5]]})
    base = np.array([[11, 13]], dtype=np.int64)  # ignored for a polynomial block
    out = curve.block_coefficients("Q", 1, base, _residue, 4)
    expected = np.zeros((1, 2, 4), dtype=np.int64)
    expected[0, 0, 1] = _residue(sp.Rational(1, 2))  # 51 mod 101
    expected[0, 0, 3] = 3
    expected[0, 1, 0] = 7  # -eps^5 is beyond the truncation
    assert np.array_equal(out, expected)
    assert out[0, 0, 1] == 51
    # other blocks of the same curve stay at the base point, unscaled
    k = curve.block_coefficients("K", 1, base, _residue, 4)
    assert k[:, :, 0].tolist() == [[11, 13]] and not k[:, :, 1:].any()


def test_block_coefficients_negative_coefficients_are_residues():
    curve = polynomial_curve({"K1": [[-EPS, -2]]})
    out = curve.block_coefficients("K", 1, np.zeros((1, 2), dtype=np.int64), _residue, 3)
    assert out[0, 0].tolist() == [0, 100, 0] and out[0, 1].tolist() == [99, 0, 0]


def test_curve_is_frozen():
    curve = collapse()
    with pytest.raises(Exception):
        curve.input_power = 2  # type: ignore[misc]
    assert Curve("c").scaled("Q", 1) is False
