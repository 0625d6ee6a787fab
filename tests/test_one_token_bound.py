"""One token: the value maps' bound holds only where every component is linear in its input.

With one token every attention matrix is the constant 1, so plain attention
(heads, masks, residual streams) gives ``F = P X`` and the rank is at most the
value map's dimension.  A feed-forward block or a bias is not linear in the
input: there the engine certified a dimension below the rank of its own
Jacobian (``dimension --layers 1 --width 2 --tokens 1 --ffn 3`` said 4,
certified).  The test compares the engine's bounds with the exact rank of a
Jacobian written here in sympy from the formula of the network, at a random
rational point and bank (a lower bound of the dimension, independent of the
engine).
"""

from __future__ import annotations

import random

import pytest
import sympy as sp

from symattn.identify import function_space_dimension
from symattn.model import Architecture


def _exact_rank(bias: bool, ffn: int | None, width: int = 2, inputs: int = 12, seed: int = 1) -> int:
    """The rank of d F(x_b) / d theta for one layer at one token, written out by hand: V x (+ b_V), then W_out (W_in y (+ b_in))**2 (+ b_out)."""
    rng = random.Random(seed)
    d = width

    def matrix(name, rows, cols):
        return sp.Matrix(rows, cols, lambda r, c: sp.Symbol(f"{name}_{r}{c}"))

    V = matrix("V", d, d)
    blocks = [V]
    if bias:
        bV = matrix("bV", d, 1)
        blocks.append(bV)
    if ffn:
        Win, Wout = matrix("Win", ffn, d), matrix("Wout", d, ffn)
        blocks += [Win, Wout]
        if bias:
            bin_, bout = matrix("bin", ffn, 1), matrix("bout", d, 1)
            blocks += [bin_, bout]
    symbols = [s for block in blocks for s in block]
    point = {s: sp.Rational(rng.randint(-9, 9), rng.randint(1, 5)) for s in symbols}
    rows = []
    for _ in range(inputs):
        x = sp.Matrix([sp.Rational(rng.randint(-9, 9), rng.randint(1, 4)) for _ in range(d)])
        y = V * x + (bV if bias else sp.zeros(d, 1))
        if ffn:
            hidden = Win * y + (bin_ if bias else sp.zeros(ffn, 1))
            y = Wout * hidden.applyfunc(lambda h: h ** 2) + (bout if bias else sp.zeros(d, 1))
        rows += [[sp.diff(entry, s).subs(point) for s in symbols] for entry in y]
    return sp.Matrix(rows).rank()


@pytest.mark.parametrize("bias, ffn", [(False, None), (True, None), (False, 3), (True, 2)])
def test_the_engines_bounds_hold_the_exact_rank(bias, ffn):
    options = dict(layers=1, width=2, tokens=1, bias=bias)
    if ffn:
        options.update(ffn=ffn, activation="x**2")
    result = function_space_dimension(Architecture.uniform(**options))
    rank = _exact_rank(bias, ffn)
    assert result.lower <= rank <= result.upper, (result.lower, rank, result.upper)
    if result.lower == result.upper:
        assert result.lower == rank
    if not bias and not ffn:
        assert result.upper == rank == 4 and "one token" in result.upper_reason
    else:
        assert "one token" not in result.upper_reason
