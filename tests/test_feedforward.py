"""The feed-forward block: its forward step, its symmetries, and its certified answers checked independently.

The float64 check computes the network with a forward pass written here in
plain numpy (not the package's), differentiates it by complex steps
(``Im f(theta + i h e_j) / h``, exact to rounding for analytic functions)
and reads the rank off a clear gap of the singular values.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from float_reference import BlockReader, complex_step_rank
from symattn.errors import NormalizerError, ShapeError
from symattn.identify.dimension import function_space_dimension
from symattn.model import Architecture, forward
from symattn.model.feedforward import Activation, FeedForward
from symattn.numeric import sensitivity
from symattn.spectrum import decay_spectrum

# -- an independent forward pass ----------------------------------------------------------------------------------
_erf = np.vectorize(math.erf)


def _gelu(z):
    # complex steps carry an imaginary part of order 1e-30: f(x + iy) = f(x) + i y f'(x) to rounding
    x, y = z.real, z.imag
    value = x / 2 * (1 + _erf(x / math.sqrt(2)))
    slope = (1 + _erf(x / math.sqrt(2))) / 2 + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    return value + 1j * y * slope


ACTIVATIONS = {
    "tanh": np.tanh,
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
    "gelu": _gelu,
}


def plain_network(theta, X, layers, width, rank, hidden, activation, residual):
    """``F(X)`` of attention (softmax) then ``W_out s(W_in x)`` per layer, from a flat parameter vector."""
    blocks = BlockReader(theta)
    s = ACTIVATIONS[activation]
    for _ in range(layers):
        Q, K, V = blocks.take(rank, width), blocks.take(rank, width), blocks.take(width, width)
        W_in, W_out = blocks.take(hidden, width), blocks.take(width, hidden)
        scores = (K @ X).T @ (Q @ X)
        weights = np.exp(scores - scores.real.max(axis=0))
        weights = weights / weights.sum(axis=0)
        attended = V @ X @ weights
        X = X + attended if residual else attended
        block = W_out @ s(W_in @ X)
        X = X + block if residual else block
    assert blocks.done()
    return X


def float64_rank(layers, width, rank, hidden, activation, residual):
    """``(rank, gap, smallest)`` of the complex-step Jacobian on a random bank (:mod:`float_reference`)."""
    count = layers * (2 * rank * width + width * width + 2 * hidden * width)
    return complex_step_rank(lambda theta, X: plain_network(theta, X, layers, width, rank, hidden, activation,
                                                            residual), count, width)


CONFIGURATIONS = [
    # layers, width, rank, hidden units, activation, residual (three layers without a residual stream are too
    # ill-conditioned for float64 at a random point: their smallest singular values sit near 1e-9)
    (1, 1, 1, 1, "tanh", False),
    (1, 2, 1, 1, "tanh", False),
    (1, 2, 1, 2, "sigmoid", False),
    (1, 3, 2, 3, "tanh", True),
    (2, 2, 1, 2, "tanh", False),
    (2, 2, 1, 2, "sigmoid", True),
    (2, 2, 1, 3, "tanh", True),
    (2, 2, 1, 4, "tanh", False),
    (1, 2, 1, 2, "gelu", False),
    (2, 2, 1, 2, "gelu", True),
    (3, 2, 1, 2, "tanh", True),
]


def _architecture(layers, width, rank, hidden, activation, residual):
    return Architecture.uniform(layers=layers, width=width, rank=rank, tokens=3, ffn=hidden,
                                activation=activation, residual=residual)


@pytest.mark.blas  # the float64 rank goes through LAPACK: compared with a stated gap, never as a fixture
@pytest.mark.parametrize("config", CONFIGURATIONS, ids=lambda c: "-".join(map(str, c)))
def test_certified_dimension_is_the_float64_rank_of_an_independent_forward_pass(config):
    arch = _architecture(*config)
    result = function_space_dimension(arch)
    float_rank, gap, smallest = float64_rank(*config)
    # a clear gap well above rounding: the float64 rank is read without a tolerance to tune
    assert gap > 1e5 and smallest > 1e-10, (config, gap, smallest)
    assert result.certified
    assert result.lower == result.upper == float_rank
    # no symmetry beyond the derived orbit: the rank is #params minus the orbit's dimension
    assert float_rank == arch.param_count - len(arch.symmetry_tangents())


@pytest.mark.parametrize("config", CONFIGURATIONS[:6], ids=lambda c: "-".join(map(str, c)))
def test_kernel_of_the_native_jacobian_is_the_orbit(config):
    arch = _architecture(*config)
    spectrum = decay_spectrum(arch, progress=False)
    assert spectrum.kernel == len(arch.symmetry_tangents())
    assert spectrum.rank == arch.param_count - len(arch.symmetry_tangents())


@pytest.mark.slow
@pytest.mark.parametrize("config", [(1, 2, 1, 2, "tanh", False), (2, 2, 1, 1, "sigmoid", True)],
                         ids=["one-layer-tanh", "two-layer-sigmoid-residual"])
def test_spectrum_is_recovered_by_mpmath_slopes(config):
    arch = _architecture(*config)
    exact = decay_spectrum(arch, progress=False)
    numeric = sensitivity(arch, spectrum=exact)
    assert numeric.recovered
    assert numeric.exact_rank == exact.rank


def test_one_layer_tanh_spectrum_exactly():
    # x -> W_out tanh(eps W~_in V X S): the whole output carries a factor eps (exponents 0 come from W_out
    # only through tanh(eps z) = eps z + ..., the values at eps^1 hold nothing), computed and cross-checked by slopes
    arch = _architecture(1, 2, 1, 2, "tanh", False)
    assert decay_spectrum(arch, progress=False).exponents == {0: 4, 2: 3, 3: 4}


# -- the forward step and its symmetries, exactly ---------------------------------------------------------------
def _random_rationals(rng, count):
    return [Fraction(int(rng.integers(-5, 6)), int(rng.integers(1, 4))) for _ in range(count)]


@pytest.mark.parametrize("seed", range(5))
def test_hidden_unit_permutation_and_odd_sign_flips_keep_the_output_exactly(seed):
    rng = np.random.default_rng(seed)
    block = FeedForward(3, Activation("x + x**3"))  # odd and polynomial: exact over Q
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="1 + x**2", extra=(block,))
    values = _random_rationals(rng, arch.param_count)
    params = arch.parameters_from_flat(values)
    X = [[Fraction(int(v)) for v in row] for row in rng.integers(-3, 4, size=(2, 3))]
    reference = forward(arch, params, X)
    blocks = {key: sp.Matrix(m) for key, m in arch.block_map(params).items()}
    order, signs = [2, 0, 1], sp.diag(1, -1, -1)
    for layer in (1, 2):
        win, wout = blocks[("Win", layer)], blocks[("Wout", layer)]
        blocks[("Win", layer)] = signs * win.extract(order, list(range(win.cols)))
        blocks[("Wout", layer)] = wout.extract(list(range(wout.rows)), order) * signs
    moved = forward(arch, arch.parameters_from_blocks(blocks), X)
    assert (moved == reference).all()


def test_a_sign_flip_changes_the_output_of_a_non_odd_activation():
    block = FeedForward(1, Activation("x + x**2"))
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="1 + x**2", extra=(block,))
    params = arch.parameters_from_flat([1, 1, 1, 2, 3])
    flipped = arch.parameters_from_flat([1, 1, 1, -2, -3])
    assert not (forward(arch, params, [[1, 2]]) == forward(arch, flipped, [[1, 2]])).all()


def test_the_forward_step_is_w_out_s_of_w_in_x():
    block = FeedForward(2, Activation("x**2"))
    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="1 + x**2", extra=(block,))
    params = arch.parameters_from_flat([1, 1, 1, 1, 2, 1, 1])
    attended = forward(Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="1 + x**2"),
                       Architecture.uniform(layers=1, width=1, rank=1, tokens=2).parameters_from_flat([1, 1, 1]),
                       [[0, 1]])
    expected = [[(1 * (1 * a) ** 2 + 1 * (2 * a) ** 2) for a in attended[0]]]
    assert forward(arch, params, [[0, 1]]).tolist() == expected


def test_residual_block_adds_its_input():
    block = FeedForward(1, Activation("x**2"))
    plain = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="1 + x**2", extra=(block,))
    stream = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="1 + x**2", residual=True,
                                  ffn=1, activation="x**2")
    values = [1, 1, 1, 2, 3]
    X = [[0, 1]]
    attention_only = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="1 + x**2", residual=True)
    h = forward(attention_only, attention_only.parameters_from_flat(values[:3]), X)
    expected = [[v + 3 * (2 * v) ** 2 for v in h[0]]]
    assert forward(stream, stream.parameters_from_flat(values), X).tolist() == expected
    assert forward(plain, plain.parameters_from_flat(values), X).tolist() != expected


# -- the architecture and its description -----------------------------------------------------------------------
def test_blocks_names_and_orbit():
    arch = Architecture.uniform(layers=2, width=2, rank=1, ffn=3)
    assert [key for key, _ in arch.blocks()] == [("Q", 1), ("K", 1), ("V", 1), ("Win", 1), ("Wout", 1),
                                                 ("Q", 2), ("K", 2), ("V", 2), ("Win", 2), ("Wout", 2)]
    assert arch.param_count == 2 * (2 + 2 + 4 + 6 + 6)
    # GL(a_i) per layer, GL(d) after each attention (absorbed by W_in) and after the first block (by layer 2)
    assert [(layer, width) for layer, width, _, _ in arch.hidden_gauges()] == [(1, 2), (1, 2), (2, 2)]
    assert len(arch.symmetry_tangents()) == 1 + 1 + 3 * 4
    assert "W_in scales with the collapse" in arch.describe()
    assert str(arch.symbols().others[0][1][0, 0]) == "Win1_11"
    assert sp.latex(arch.symbols().others[0][1][0, 0]) == r"(W^{\mathrm{in}}_{1})_{11}"
    assert Architecture.uniform(layers=2, ffn=3, residual=True).hidden_gauges() == []


def test_the_collapse_curve_scales_w_in():
    from symattn.curves import collapse, collapse_keys, input_scaling

    assert collapse().block_power("Win", 1) == 1
    assert collapse([2]).block_power("Win", 1) == 0
    assert collapse_keys().block_power("Win", 1) == 0
    assert input_scaling().block_power("Win", 1) == 0


def test_architectures_with_blocks_compare_and_replace():
    a = Architecture.uniform(layers=2, ffn=2)
    assert a == Architecture.uniform(layers=2, ffn=2)
    assert a != Architecture.uniform(layers=2, ffn=3)
    assert a != Architecture.uniform(layers=2, ffn=2, activation="sigmoid")
    deeper = a.replace(widths=[2, 2, 2, 2], score_ranks=[1, 1, 1])
    assert [c.kind for c in deeper.layer_components[2]] == ["attention", "feed-forward"]
    assert not a.is_plain and not a.factors_through_effective


def test_activations_presets_and_errors():
    assert Activation("sigmoid").taylor(3) == [sp.Rational(1, 2), sp.Rational(1, 4), 0, sp.Rational(-1, 48)]
    assert Activation("gelu").taylor(2) == [0, sp.Rational(1, 2), 1 / sp.sqrt(2 * sp.pi)]
    assert Activation("softplus").taylor(1) == [sp.log(2), sp.Rational(1, 2)]
    with pytest.raises(NormalizerError, match="not real-analytic"):
        Activation("Abs(x)")
    with pytest.raises(NormalizerError, match="constant"):
        Activation("3")
    with pytest.raises(NormalizerError, match="unknown activation 'relu'"):
        Activation("relu")
    with pytest.raises(NormalizerError, match="not real-analytic on all of R"):
        Activation("log(x)")
    with pytest.raises(NormalizerError, match="positive number of hidden units"):
        FeedForward(0, "tanh")
    # text is data: nothing in it runs
    with pytest.raises(NormalizerError):
        Activation("__import__('os').system('true')")


def test_command_line_flags():
    import argparse

    from symattn.cli.arguments import add_common_arguments, architecture_from_args

    parser = argparse.ArgumentParser()
    add_common_arguments(parser)
    arch = architecture_from_args(parser.parse_args(["--layers", "2", "--ffn", "3", "--activation", "sigmoid",
                                                     "--residual"]))
    assert arch == Architecture.uniform(layers=2, ffn=3, activation="sigmoid", residual=True)
    with pytest.raises(ShapeError, match="give --ffn M too"):
        architecture_from_args(parser.parse_args(["--activation", "gelu"]))
    with pytest.raises(ShapeError, match="--ffn must be"):
        architecture_from_args(parser.parse_args(["--ffn", "0"]))


def test_expansion_of_a_block_after_attention():
    # tanh(eps W~_in z) = eps W~_in z + O(eps^3) and attention at eps = 0 averages the tokens: F_1 = W_out W_in V X J/t
    from symattn.expand import expand

    arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, ffn=1, activation="tanh")
    F = expand(arch, truncation=3)
    names = {s.name: s for s in F[1].free_symbols}
    mean = (names["x_11"] + names["x_12"]) / 2
    expected = names["Vt1_11"] * names["Wint1_11"] * names["Woutt1_11"] * mean
    assert sp.simplify(F[0]) == sp.zeros(1, 2)
    assert sp.expand(F[1] - sp.Matrix([[expected, expected]])) == sp.zeros(1, 2)


@pytest.mark.parametrize("activation, bias", [("x**2", False), ("x**2", True), ("2*x**3", False), ("x", False),
                                              ("x", True), ("3*x", True)])
def test_homogeneous_activations_have_derived_continuous_symmetries(activation, bias):
    # s(l x) = l^m s(x): each unit's scaling (m >= 2), or GL(M) of the units (m = 1; with biases only
    # W_out b_in + b_out is seen too), derived by the component and met by the certified rank
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="1 + x**2", ffn=2,
                                activation=activation, bias=bias)
    own = sum(c.tangent_count(i, d) for i, d, c in arch.components() if c.kind == "feed-forward")
    assert own == {"x**2": 2, "2*x**3": 2, "x": 4, "3*x": 4}[activation] * 2 + (2 * 2 if bias and activation in
                                                                                     ("x", "3*x") else 0)
    assert arch.symmetry_dimension() == len(arch.symmetry_tangents())
    result = function_space_dimension(arch)
    assert result.certified and result.lower == arch.param_count - arch.symmetry_dimension()


def test_a_unit_scaling_keeps_a_square_activation_exactly():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=3, normalizer="1 + x**2", ffn=2, activation="x**2")
    rng = np.random.default_rng(5)
    params = arch.parameters_from_flat(_random_rationals(rng, arch.param_count))
    X = [[1, 0, 2], [0, 1, -1]]
    blocks = {key: sp.Matrix(m) for key, m in arch.block_map(params).items()}
    scale = sp.diag(3, 1)
    moved = {**blocks, ("Win", 1): scale * blocks[("Win", 1)], ("Wout", 1): blocks[("Wout", 1)] * scale.inv() ** 2}
    assert (forward(arch, arch.parameters_from_blocks(moved), X) == forward(arch, params, X)).all()


def test_a_quadratic_activation_with_biases_is_honestly_not_certified():
    # s(y + b) for a quadratic s is again a quadratic with a free linear term: each unit has a scaling that moves
    # b_in nonlinearly (not derived here); the dimension says so with its bounds instead of a wrong number
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=3, normalizer="1 + x**2", ffn=2,
                                activation="x + x**2", bias=True)
    result = function_space_dimension(arch)
    assert not result.certified and result.upper == arch.param_count - arch.symmetry_dimension()
    assert result.lower == result.upper - 2
