"""symattn.jacobian: the draws of every stream, and the Jacobian along curves checked independently.

* The random streams draw what the analyses drew before the module existed
  (the seed sequences are pinned here), so exact results stay the same.
* The Jacobian over GF(p) series in curve coordinates is the native one
  times ``eps`` on the collapsed blocks; on the gauge slice it is the
  native one restricted to the slice's columns.
* The numerical Jacobian along any curve (mpmath jets) agrees with exact
  central differences of the forward pass over Q (a polynomial normalizer),
  an evaluation that shares nothing with the jets.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from symattn.algebra.domains import RationalDomain
from symattn.curves import EPS, collapse, collapse_keys, input_scaling, polynomial_curve
from symattn.errors import SymattnError
from symattn.jacobian import (
    STREAMS,
    all_directions,
    compress_rows,
    gauge_slice,
    generator,
    jacobian_series,
    parameter_columns,
    random_bank,
    random_point,
    real_jacobian,
)
from symattn.model import Architecture, forward

P = 268435399


def test_streams_draw_what_the_analyses_drew_before():
    arch = Architecture.uniform(layers=2, width=3, rank=2, tokens=3, normalizer="softmax")
    old_bank = np.random.default_rng([5, 7919]).integers(1, P, size=(4, 3, 3), dtype=np.int64)
    assert np.array_equal(random_bank(arch, 4, P, 5), old_bank)
    old = np.random.default_rng([5, 104729])
    point, _ = random_point(arch, P, 5)
    for i in (1, 2):
        for name, shape in arch.block_shapes(i).items():
            assert np.array_equal(point[(name, i)], old.integers(1, P, size=shape, dtype=np.int64))
    J = np.random.default_rng(1).integers(0, P, size=(30, 4, 2))
    R = np.random.default_rng([7, 3571]).integers(0, P, size=(4, 30))
    expected = (R.astype(object) @ J.reshape(30, -1).astype(object)) % P
    assert np.array_equal(compress_rows(J, P, 7).reshape(4, -1).astype(object), expected)
    assert len(set(STREAMS.values())) == len(STREAMS)  # no two purposes share draws
    with pytest.raises(SymattnError, match="seed"):
        generator(-1, "point")


@pytest.mark.parametrize("curve", [collapse(), collapse_keys(), input_scaling()])
def test_curve_coordinates_are_native_times_eps_and_the_slice_restricts_columns(curve):
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="cosh")
    point, values = random_point(arch, P, 1)
    bank = random_bank(arch, 3, P, 1)
    N = 10
    native = jacobian_series(arch, curve, bank, point, P, N, values)
    in_curve = jacobian_series(arch, curve, bank, point, P, N, values, coordinates="curve")
    for (name, layer), columns in parameter_columns(arch).items():
        if curve.block_power(name, layer):
            assert not in_curve[:, columns, 0].any()
            assert np.array_equal(in_curve[:, columns, 1:], native[:, columns, :-1])
        else:
            assert np.array_equal(in_curve[:, columns], native[:, columns])
    directions, count = gauge_slice(arch)
    sliced = jacobian_series(arch, curve, bank, point, P, N, values, (directions, count))
    everything, _ = all_directions(arch)
    for key, chosen in directions.items():
        kept = chosen >= 0
        assert np.array_equal(sliced[:, chosen[kept]], native[:, everything[key][kept]])


CURVES = [
    collapse(),
    input_scaling(),
    collapse_keys([1]),
    polynomial_curve({"Q1": sp.Matrix([[EPS, 2 * EPS**2]]), "V2": sp.Matrix([[1, EPS], [3, -EPS]])}),
]


def _exact_forward(arch, curve, flat, X, eps):
    """The output at ``eps`` on ``curve`` over Q, parameters given flat (polynomial blocks at eps)."""
    polynomials = {(b, i): m for b, i, m in curve.polynomials}
    blocks, position = {"Q": [], "K": [], "V": []}, 0
    for i in range(1, arch.layers + 1):
        for name, (rows, cols) in arch.block_shapes(i).items():
            if (name, i) in polynomials:
                m = polynomials[(name, i)].subs(EPS, sp.Rational(eps.numerator, eps.denominator))
                block = [[Fraction(str(m[r, c])) for c in range(cols)] for r in range(rows)]
            else:
                scale = eps ** curve.block_power(name, i)
                block = [[flat[position + r * cols + c] * scale for c in range(cols)] for r in range(rows)]
            blocks[name].append(block)
            position += rows * cols
    params = arch.parameters_from(blocks["Q"], blocks["K"], blocks["V"])
    scaled = [[v * eps ** curve.input_power for v in row] for row in X]
    return forward(arch, params, scaled, RationalDomain())


@pytest.mark.parametrize("curve", CURVES, ids=["collapse", "input", "keys1", "polynomial"])
def test_real_jacobian_along_any_curve_agrees_with_exact_differences(curve):
    # 1 + x^2 is a rational function of everything: central differences with h = 10^-15 are
    # exact to O(h^2) = 10^-30 over Q, independent of the jets
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=2, normalizer="1 + x**2")
    rng = np.random.default_rng(3)
    flat = [Fraction(int(v), 7) or Fraction(1, 3) for v in rng.integers(-9, 10, arch.param_count)]
    X = [[Fraction(int(v), 5) for v in row] for row in rng.integers(-6, 7, arch.input_shape)]
    eps, h = Fraction(1, 3), Fraction(1, 10**15)
    J = real_jacobian(arch, flat, [X], eps, curve=curve, base="mpmath", dps=60)
    polynomial_columns = {c for (b, i), cols in parameter_columns(arch).items()
                          if curve.block_power(b, i) is None for c in cols}
    for j in range(arch.param_count):
        if j in polynomial_columns:
            continue  # a replaced block's entries are not the base point's
        up, down = list(flat), list(flat)
        up[j] += h
        down[j] -= h
        difference = (_exact_forward(arch, curve, up, X, eps) - _exact_forward(arch, curve, down, X, eps)) / (2 * h)
        # native derivative = derivative in the base entry divided by eps^power
        power = next(curve.block_power(b, i) for (b, i), cols in parameter_columns(arch).items() if j in cols)
        expected = difference.reshape(-1) / eps ** power
        with mpmath.workdps(60):
            for row, value in enumerate(expected):
                assert abs(J[row, j] - mpmath.mpf(value.numerator) / value.denominator) < mpmath.mpf(10) ** -25


def test_real_jacobian_default_is_the_collapse_curve_and_refuses_other_objects():
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax")
    default = real_jacobian(arch, [1, 1, 1], [[[1, 0]]], "0.5")
    assert np.array_equal(default, real_jacobian(arch, [1, 1, 1], [[[1, 0]]], "0.5", curve=collapse()))
    with pytest.raises(SymattnError, match="curve must be"):
        real_jacobian(arch, [1, 1, 1], [[[1, 0]]], "0.5", curve="collapse")
