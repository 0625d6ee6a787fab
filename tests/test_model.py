"""The architecture, its validation, and the forward pass on every domain.

The forward pass is compared with independent computations: a naive
pure-Python reference written here, the effective closed form ``F = P X M_l``
(:func:`symattn.effective.effective_forward`), the sympy closed form evaluated
at 60 digits, and a hand-derived formula for the smallest softmax network.
"""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from symattn.algebra.domains import (
    FloatDomain,
    MpmathDomain,
    PrimeFieldDomain,
    RationalDomain,
    SymEngineDomain,
    SympyDomain,
)
from symattn.effective import combined_value_map, effective_forward, effective_scores
from symattn.errors import ShapeError, SymattnError
from symattn.model import Architecture, Parameters, closed_form, forward
from symattn.normalizers import Normalizer, x as X_VAR

PRIME = 2**31 - 1


# -- helpers ---------------------------------------------------------------------------


def rand_fraction(rng: random.Random, size: int = 4) -> Fraction:
    return Fraction(rng.randint(-size, size), rng.randint(1, 3))


def rand_matrix(rng: random.Random, rows: int, cols: int, size: int = 4) -> list:
    return [[rand_fraction(rng, size) for _ in range(cols)] for _ in range(rows)]


def rand_params(arch: Architecture, rng: random.Random, size: int = 4) -> Parameters:
    Q, K, V = [], [], []
    for i in range(1, arch.layers + 1):
        shapes = arch.block_shapes(i)
        Q.append(rand_matrix(rng, *shapes["Q"], size))
        K.append(rand_matrix(rng, *shapes["K"], size))
        V.append(rand_matrix(rng, *shapes["V"], size))
    return arch.parameters_from(Q, K, V)


def rand_input(arch: Architecture, rng: random.Random, size: int = 4) -> list:
    return rand_matrix(rng, *arch.input_shape, size)


def naive_matmul(a, b):
    return [[sum((a[i][m] * b[m][j] for m in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def naive_transpose(a):
    return [list(col) for col in zip(*a)]


def naive_forward(arch: Architecture, params: Parameters, X) -> list:
    """Reference forward pass over Fractions, written from MATH.md section 1 only."""
    polys = []
    for norm in arch.normalizers:
        expr = sp.Poly(norm.expr, X_VAR)
        polys.append(expr)
    hidden = [[Fraction(v) for v in row] for row in X]
    t = arch.tokens
    for layer in range(arch.layers):
        Q, K, V = (params.Q[layer], params.K[layer], params.V[layer])
        keys = naive_matmul([[Fraction(v) for v in r] for r in K], hidden)
        queries = naive_matmul([[Fraction(v) for v in r] for r in Q], hidden)
        # (A)_{jk} = <K x_j, Q x_k>
        A = [[sum((keys[r][j] * queries[r][k] for r in range(len(keys))), Fraction(0))
              for k in range(t)] for j in range(t)]
        poly = polys[layer]

        def s(value):
            out = poly.eval(sp.Rational(value.numerator, value.denominator))
            return Fraction(int(out.p), int(out.q))

        S = [[s(A[j][k]) for k in range(t)] for j in range(t)]
        for k in range(t):
            total = sum((S[j][k] for j in range(t)), Fraction(0))
            for j in range(t):
                S[j][k] = S[j][k] / total
        hidden = naive_matmul(naive_matmul([[Fraction(v) for v in r] for r in V], hidden), S)
    return hidden


def as_lists(a) -> list:
    return [list(row) for row in (a.tolist() if hasattr(a, "tolist") else a)]


def to_mpf(value):
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    return mpmath.mpf(value)


def mp_close(a, b, tol) -> bool:
    a, b = as_lists(a), as_lists(b)
    assert len(a) == len(b) and all(len(ra) == len(rb) for ra, rb in zip(a, b))
    with mpmath.workdps(80):
        return all(abs(to_mpf(u) - to_mpf(v)) < tol for ra, rb in zip(a, b) for u, v in zip(ra, rb))


def effective_output(arch, params, X, domain):
    return effective_forward(arch, effective_scores(params), combined_value_map(params), X, domain)


# -- validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "widths, ranks, tokens, pattern",
    [
        ([2, 2], [1, 1], 3, "1 layer \\(widths \\[2, 2\\]\\) needs 1 score rank, got 2: \\[1, 1\\]"),
        ([2, 2, 2], [1], 3, "2 layers \\(widths \\[2, 2, 2\\]\\) needs 2 score ranks, got 1: \\[1\\]"),
        ([2], [], 3, "at least one layer"),
        ([2, 2], [1], 0, "tokens must be a positive integer, got 0"),
        ([2, 2], [1], -3, "tokens must be a positive integer, got -3"),
        ([2, 2], [1], 2.0, "tokens must be a positive integer, got 2.0"),
        ([2, 2], [1], True, "tokens must be a positive integer, got True"),
        ([2, 2.5], [1], 3, "widths must be positive integers, got \\[2, 2.5\\]"),
        ([2, 2.0], [1], 3, "widths must be positive integers"),
        ([2, "2"], [1], 3, "widths must be positive integers"),
        ([2, 0], [1], 3, "widths must be positive integers, got \\[2, 0\\]"),
        ([-1, 2], [1], 3, "widths must be positive integers"),
        ([2, 2], [0], 3, "score ranks must be positive integers, got \\[0\\]"),
        ([2, 2], [1.5], 3, "score ranks must be positive integers"),
    ],
)
def test_architecture_validation(widths, ranks, tokens, pattern):
    with pytest.raises(ShapeError, match=pattern):
        Architecture(widths, ranks, tokens=tokens)


def test_shape_error_is_a_symattn_value_error():
    with pytest.raises(SymattnError):
        Architecture([2, 2], [1, 1])
    with pytest.raises(ValueError):
        Architecture([2, 2], [1, 1])


def test_uniform_validation_and_normalizer_count():
    with pytest.raises(ShapeError, match="layers must be a positive integer, got 0"):
        Architecture.uniform(layers=0)
    with pytest.raises(ShapeError, match="1 layers need 1 normalizers, got 2"):
        Architecture([2, 2], [1], normalizer=["softmax", "cosh"])
    arch = Architecture([2, 2, 2], [1, 1], normalizer=["softmax", "cosh"])
    assert [n.k for n in arch.normalizers] == [1, 2]


def test_parameters_from_checks_shapes():
    arch = Architecture([2, 3], [1], tokens=2, normalizer="1+x**2")
    good = ([[[1, 0]]], [[[0, 1]]], [[[1, 0], [0, 1], [1, 1]]])
    params = arch.parameters_from(*good)
    assert params.layers == 1
    with pytest.raises(ShapeError, match="V_1 must be 3 x 2, got shape \\(2, 2\\)"):
        arch.parameters_from(good[0], good[1], [[[1, 0], [0, 1]]])
    with pytest.raises(ShapeError, match="Q_1 must be 1 x 2, got shape \\(1, 3\\)"):
        arch.parameters_from([[[1, 0, 0]]], good[1], good[2])
    with pytest.raises(ShapeError, match="K_1 must be 1 x 2, got shape \\(2,\\)"):
        arch.parameters_from(good[0], [[0, 1]], good[2])
    with pytest.raises(ShapeError, match="Q needs 1 matrices \\(one per layer\\), got 2"):
        arch.parameters_from([[[1, 0]], [[1, 0]]], good[1], good[2])
    with pytest.raises(ShapeError, match="V_1 must be 3 x 2"):
        arch.parameters_from(good[0], good[1], [[[1, 0], [0, 1], [1]]])
    with pytest.raises(ShapeError, match="expected 10 parameter values, got 9"):
        arch.parameters_from_flat([1] * 9)
    # sympy and numpy matrices are accepted
    arch.parameters_from([sp.Matrix([[1, 0]])], good[1], [np.array(good[2][0])])


def test_forward_checks_input_shape():
    arch = Architecture([2, 2], [1], tokens=2, normalizer="1+x**2")
    params = arch.parameters_from([[[1, 0]]], [[[0, 1]]], [[[1, 0], [0, 1]]])
    for bad, shape in [([[1, 0, 1], [0, 1, 1]], "(2, 3)"), ([[1, 0], [0, 1], [1, 1]], "(3, 2)"),
                       ([1, 0], "(2,)")]:
        with pytest.raises(ShapeError) as info:
            forward(arch, params, bad, RationalDomain())
        assert "input X must be d_0 x t = 2 x 2" in str(info.value)
        assert shape in str(info.value)


def test_forward_rejects_three_dimensional_input_with_shape_error():
    arch = Architecture([2, 2], [1], tokens=2, normalizer="1+x**2")
    params = arch.parameters_from([[[1, 0]]], [[[0, 1]]], [[[1, 0], [0, 1]]])
    with pytest.raises(ShapeError):
        forward(arch, params, [[[1], [0]], [[0], [1]]], RationalDomain())


def test_forward_doc_example_by_hand():
    # Q = [1 0], K = [0 1], V = I, X = I: A_jk = <K x_j, Q x_k> = (x_j)_2 (x_k)_1,
    # A = [[0, 0], [1, 0]], s = 1 + x^2: s(A) = [[1, 1], [2, 1]], columns / [3, 2].
    arch = Architecture([2, 2], [1], tokens=2, normalizer="1+x**2")
    params = arch.parameters_from([[[1, 0]]], [[[0, 1]]], [[[1, 0], [0, 1]]])
    out = forward(arch, params, [[1, 0], [0, 1]], RationalDomain())
    assert as_lists(out) == [[Fraction(1, 3), Fraction(1, 2)], [Fraction(2, 3), Fraction(1, 2)]]


# -- sizes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "widths, ranks, count",
    [
        ([2, 2, 2], [1, 1], 16),  # 2 layers width 2 rank 1: 2 * (2 + 2 + 4)
        ([2, 2], [1], 8),
        ([2, 2, 2, 2], [1, 1, 1], 24),
        ([3, 3, 3], [2, 2], 42),  # 2 * (6 + 6 + 9)
        ([3, 2, 4], [1, 2], 28),  # (3 + 3 + 6) + (4 + 4 + 8)
        ([1, 1], [1], 3),
    ],
)
def test_param_count(widths, ranks, count):
    arch = Architecture(widths, ranks)
    # independent count: a_i d_{i-1} twice (Q, K) plus d_i d_{i-1} (V)
    assert count == sum(2 * a * widths[i] + widths[i + 1] * widths[i] for i, a in enumerate(ranks))
    assert arch.param_count == count
    assert len(arch.parameter_index()) == count
    assert len(arch.symbols().flat()) == count
    assert len(set(arch.symbols().flat())) == count


def test_uniform_and_shapes():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    assert arch.widths == (2, 2, 2) and arch.score_ranks == (1, 1) and arch.tokens == 3
    assert Architecture([3, 2, 4], [1, 2]).block_shapes(2) == {"Q": (2, 2), "K": (2, 2), "V": (4, 2)}
    assert Architecture([3, 2, 4], [1, 2]).input_shape == (3, 3)


# -- one token -------------------------------------------------------------------------


@pytest.mark.parametrize("normalizer", ["softmax", "1 + x**2", "cosh"])
def test_one_token_is_degenerate_and_output_is_value_product(normalizer):
    arch = Architecture([2, 3, 2], [1, 2], tokens=1, normalizer=normalizer)
    assert arch.degenerate is True
    assert Architecture([2, 2], [1], tokens=2).degenerate is False
    rng = random.Random(7)
    params = rand_params(arch, rng)
    X = rand_input(arch, rng)
    expected = naive_matmul(naive_matmul(params.V[1], params.V[0]), X)
    mp_out = forward(arch, params, X, MpmathDomain(dps=30))
    assert mp_close(mp_out, expected, mpmath.mpf(10) ** -25)
    if normalizer == "1 + x**2":
        assert as_lists(forward(arch, params, X, RationalDomain())) == expected
    # the attention of one token is the constant 1 whatever the score
    D = MpmathDomain(50)
    for score in (-7, 0, 3):
        weights = D.attention(D.matrix([[score]]), Normalizer.preset("softmax"))
        assert abs(weights[0, 0] - 1) < mpmath.mpf(10) ** -45
        exact = RationalDomain().attention(RationalDomain().matrix([[score]]), Normalizer("1 + x**3 + x**4"))
        assert exact[0, 0] == 1


def test_one_token_closed_form_is_value_product():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=1, normalizer="softmax")
    params = arch.symbols()
    expected = sp.Matrix(params.V[1]) * sp.Matrix(params.V[0]) * arch.input_symbols()
    assert sp.simplify(closed_form(arch) - expected) == sp.zeros(2, 1)


# -- exact forward pass vs the effective closed form ------------------------------------


POLY_ARCHS = [
    ([2, 2, 2], [1, 1], 3),
    ([2, 3, 2], [2, 1], 2),
    ([3, 2, 2, 2], [1, 2, 1], 3),
    ([1, 1], [1], 4),
]


@pytest.mark.parametrize("normalizer", ["1 + x**2", "1 + x**3 + x**4"])
@pytest.mark.parametrize("widths, ranks, tokens", POLY_ARCHS)
def test_rational_forward_equals_effective_closed_form_and_reference(normalizer, widths, ranks, tokens):
    arch = Architecture(widths, ranks, tokens=tokens, normalizer=normalizer)
    QQ = RationalDomain()
    for seed in range(4):
        rng = random.Random(1000 * seed + len(widths))
        params = rand_params(arch, rng, size=3)
        X = rand_input(arch, rng, size=3)
        out = as_lists(forward(arch, params, X, QQ))
        assert all(isinstance(v, Fraction) for row in out for v in row)
        assert out == as_lists(effective_output(arch, params, X, QQ))
        assert out == naive_forward(arch, params, X)


def test_rational_forward_mixed_normalizers():
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer=["1 + x**3 + x**4", "1 + x**2"])
    rng = random.Random(5)
    params = rand_params(arch, rng)
    X = rand_input(arch, rng)
    out = as_lists(forward(arch, params, X, RationalDomain()))
    assert out == naive_forward(arch, params, X)
    assert out == as_lists(effective_output(arch, params, X, RationalDomain()))


def test_attention_columns_sum_to_one_over_rationals():
    QQ = RationalDomain()
    rng = random.Random(3)
    A = QQ.matrix(rand_matrix(rng, 4, 4))
    for norm in ("1 + x**2", "1 + x**3 + x**4"):
        S = QQ.attention(A, Normalizer(norm))
        assert [sum(S[:, k], Fraction(0)) for k in range(4)] == [1, 1, 1, 1]
        assert all(v > 0 for v in S.flat)


def reduce_mod(value: Fraction, p: int) -> int:
    return value.numerator * pow(value.denominator, -1, p) % p


@pytest.mark.parametrize("normalizer", ["1 + x**2", "1 + x**3 + x**4"])
def test_prime_field_forward_is_the_rational_result_mod_p(normalizer):
    arch = Architecture([2, 3, 2], [1, 2], tokens=3, normalizer=normalizer)
    for seed in range(3):
        rng = random.Random(seed)
        params = rand_params(arch, rng)
        X = rand_input(arch, rng)
        exact = as_lists(forward(arch, params, X, RationalDomain()))
        modp = as_lists(forward(arch, params, X, PrimeFieldDomain(PRIME)))
        assert [[int(v) for v in row] for row in modp] == [[reduce_mod(v, PRIME) for v in row] for row in exact]
        eff = as_lists(effective_output(arch, params, X, PrimeFieldDomain(PRIME)))
        assert [[int(v) for v in row] for row in eff] == [[int(v) for v in row] for row in modp]


# -- high precision ----------------------------------------------------------------------


@pytest.mark.parametrize("normalizer", ["softmax", "cosh"])
def test_mpmath_forward_equals_effective_forward_to_45_digits(normalizer):
    arch = Architecture([2, 2, 2, 2], [1, 1, 2], tokens=3, normalizer=normalizer)
    D = MpmathDomain(dps=50)
    tol = mpmath.mpf(10) ** -45
    for seed in range(3):
        rng = random.Random(seed + 50)
        params = rand_params(arch, rng, size=2)
        X = rand_input(arch, rng, size=2)
        out = forward(arch, params, X, D)
        eff = effective_output(arch, params, X, D)
        assert mp_close(out, eff, tol)


@pytest.mark.parametrize("normalizer", ["softmax", "cosh", "gauss"])
def test_mpmath_forward_equals_sympy_closed_form_at_60_digits(normalizer):
    """An independent route: the symbolic closed form, evaluated by sympy's evalf."""
    arch = Architecture([2, 2, 1], [1, 1], tokens=2, normalizer=normalizer)
    F = closed_form(arch)
    rng = random.Random(11)
    params = rand_params(arch, rng, size=2)
    X = rand_input(arch, rng, size=2)
    subs = dict(zip(arch.symbols().flat(), params.flat()))
    subs.update({arch.input_symbols()[i, j]: sp.Rational(X[i][j].numerator, X[i][j].denominator)
                 for i in range(2) for j in range(2)})
    reference = F.subs(subs).evalf(60)
    out = forward(arch, params, X, MpmathDomain(dps=50))
    with mpmath.workdps(60):
        for (i, j), v in np.ndenumerate(out):
            assert abs(mpmath.mpf(v) - mpmath.mpf(str(reference[i, j]))) < mpmath.mpf(10) ** -45


def test_mpmath_domain_really_carries_50_digits():
    # softmax of two scores 0 and 1 is e/(1+e); check digits 20-45
    D = MpmathDomain(dps=50)
    S = D.attention(D.matrix([[0], [1]]), Normalizer.preset("softmax"))
    with mpmath.workdps(80):
        expected = mpmath.e / (1 + mpmath.e)
        assert abs(S[1, 0] - expected) < mpmath.mpf(10) ** -48
        assert abs(S[0, 0] - 1 / (1 + mpmath.e)) < mpmath.mpf(10) ** -48


@pytest.mark.parametrize("normalizer", ["softmax", "cosh", "sigmoid"])
def test_float_domain_agrees_with_mpmath(normalizer):
    arch = Architecture([3, 2, 2], [2, 1], tokens=4, normalizer=normalizer)
    for seed in range(3):
        rng = random.Random(seed + 90)
        params = rand_params(arch, rng, size=2)
        X = rand_input(arch, rng, size=2)
        floats = forward(arch, params, X, FloatDomain())
        exact = forward(arch, params, X, MpmathDomain(dps=40))
        assert all(isinstance(v, float) for v in floats.flat)
        assert mp_close(floats, exact, 1e-10)
        assert mp_close(effective_output(arch, params, X, FloatDomain()), exact, 1e-10)


# -- closed forms ------------------------------------------------------------------------


def test_closed_form_tiny_softmax_matches_hand_derivation():
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax")
    F = closed_form(arch)
    assert F.shape == (1, 2)
    real = dict(real=True)
    q, k, v = sp.Symbol("Q1_11", **real), sp.Symbol("K1_11", **real), sp.Symbol("V1_11", **real)
    x1, x2 = sp.Symbol("x_11", **real), sp.Symbol("x_12", **real)
    assert F.free_symbols == {q, k, v, x1, x2}
    xs = [x1, x2]
    # A_jk = k q x_j x_k; column k of S is exp(A_jk) / sum_j exp(A_jk); F_k = v sum_j x_j S_jk
    hand = [v * sum(xs[j] * sp.exp(k * q * xs[j] * xs[c]) for j in range(2))
            / sum(sp.exp(k * q * xs[j] * xs[c]) for j in range(2)) for c in range(2)]
    # the same thing written as a logistic weight: F_1 = v (x1 + x2 e^u) / (1 + e^u), u = kq x1 (x2 - x1)
    u1 = k * q * x1 * (x2 - x1)
    u2 = k * q * x2 * (x1 - x2)
    logistic = [v * (x1 + x2 * sp.exp(u1)) / (1 + sp.exp(u1)), v * (x2 + x1 * sp.exp(u2)) / (1 + sp.exp(u2))]
    for c in range(2):
        assert sp.simplify(F[0, c] - hand[c]) == 0
        assert sp.simplify(F[0, c] - logistic[c]) == 0
    # it is not trivially equal to a wrong formula (no normalization)
    wrong = v * (x1 * sp.exp(k * q * x1 * x1) + x2 * sp.exp(k * q * x2 * x1))
    assert sp.simplify(F[0, 0] - wrong) != 0


def test_closed_form_unevaluated_normalizer():
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="cosh")
    F = closed_form(arch, unevaluated_normalizer=True)
    s = sp.Function("s")
    q, k, v = (sp.Symbol(n, real=True) for n in ("Q1_11", "K1_11", "V1_11"))
    x1, x2 = sp.Symbol("x_11", real=True), sp.Symbol("x_12", real=True)
    expected = v * (x1 * s(k * q * x1**2) + x2 * s(k * q * x1 * x2)) / (s(k * q * x1**2) + s(k * q * x1 * x2))
    assert sp.simplify(F[0, 0] - expected) == 0


def test_closed_form_refuses_large_architectures_and_bad_engine():
    arch = Architecture.uniform(layers=4, width=3, rank=2)
    assert arch.param_count == 84
    with pytest.raises(ShapeError, match="too large"):
        closed_form(arch)
    with pytest.raises(ValueError, match="engine"):
        closed_form(Architecture.uniform(layers=1, width=1), engine="maple")


def _by_name(matrix: sp.Matrix) -> sp.Matrix:
    """Replace every symbol by a plain symbol of the same name (assumptions dropped)."""
    return matrix.xreplace({s: sp.Symbol(s.name) for s in matrix.free_symbols})


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_symengine_closed_form_equals_sympy_closed_form_up_to_symbol_assumptions():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="1+x**2")
    F_sympy = closed_form(arch, engine="sympy")
    F_se = closed_form(arch, engine="symengine")
    assert F_se.shape == F_sympy.shape == (2, 2)
    assert isinstance(F_se, sp.MatrixBase)
    A, B = _by_name(F_se), _by_name(F_sympy)
    assert {s.name for s in A.free_symbols} == {s.name for s in B.free_symbols} == {
        s.name for s in list(arch.symbols().flat()) + list(arch.input_symbols())}
    for a, b in zip(A, B):
        assert sp.cancel(sp.together(a - b)) == 0
    # and both equal the exact rational forward pass at a random point
    rng = random.Random(2)
    params = rand_params(arch, rng)
    X = rand_input(arch, rng)
    subs = dict(zip(arch.symbols().flat(), params.flat()))
    subs.update({arch.input_symbols()[i, j]: sp.Rational(X[i][j].numerator, X[i][j].denominator)
                 for i in range(2) for j in range(2)})
    plain = {sp.Symbol(s.name): v for s, v in subs.items()}
    exact = as_lists(forward(arch, params, X, RationalDomain()))
    for (i, j) in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        expected = sp.Rational(exact[i][j].numerator, exact[i][j].denominator)
        assert A[i, j].subs(plain) == expected
        assert F_sympy[i, j].subs(subs) == expected


def test_symengine_closed_form_uses_the_architecture_symbols():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="1+x**2")
    F_se = closed_form(arch, engine="symengine")
    F_sympy = closed_form(arch, engine="sympy")
    assert F_se.free_symbols == F_sympy.free_symbols
    assert all(sp.cancel(sp.together(a - b)) == 0 for a, b in zip(F_se, F_sympy))


def test_sympy_and_symengine_domains_evaluate_the_normalizer_alike():
    a = sp.Symbol("a")
    for norm in (Normalizer("1 + x**2"), Normalizer.preset("cosh")):
        se = SymEngineDomain()
        lhs = sp.sympify(se.normalizer_value(norm, se.convert(a)))
        rhs = SympyDomain().normalizer_value(norm, a)
        assert sp.simplify(lhs - rhs) == 0


def test_forward_takes_a_domain_by_name_and_refuses_an_unknown_name():
    from fractions import Fraction

    from symattn.errors import SymattnError
    from symattn.model import Architecture, forward

    arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2")
    params = arch.parameters_from([[[1]]], [[[1]]], [[[1]]])
    assert forward(arch, params, [[0, 1]]).tolist() == [[Fraction(1, 2), Fraction(2, 3)]]
    assert forward(arch, params, [[0, 1]], "float64").tolist() == [[0.5, 2 / 3]]
    with pytest.raises(SymattnError, match=r"unknown domain 'RR'.*QQ, float64"):
        forward(arch, params, [[0, 1]], "RR")
