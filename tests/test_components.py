"""A component written here, in the test suite, runs through the analyses without a change to any package file.

The toy component is a learned linear map of the stream, ``X -> L_i X`` with
``L_i`` a ``d_i x d_i`` block, after each layer's attention.  Its forward
step, blocks and stream roles are all it declares; the hidden-width gauge it
brings (``L_i -> H L_i G^{-1}`` between the two streams it joins) is
assembled by the architecture, and the exact rank must meet it.
"""

import numpy as np
import pytest

from symattn.identify.dimension import function_space_dimension
from symattn.model import Architecture, forward
from toy_components import Gain
from symattn.spectrum import decay_spectrum


def _arch(layers=2, residual=False):
    return Architecture.uniform(layers=layers, width=2, rank=1, tokens=3, residual=residual, extra=(Gain(),))


def test_forward_applies_the_map_after_attention():
    arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=3, normalizer="1 + x**2", extra=(Gain(),))
    plain = Architecture.uniform(layers=1, width=2, rank=1, tokens=3, normalizer="1 + x**2")
    values = list(range(1, 9))
    X = [[1, 0, 2], [0, 1, 1]]
    attended = forward(plain, plain.parameters_from_flat(values), X)
    mapped = forward(arch, arch.parameters_from_flat(values + [2, 0, 1, 3]), X)
    expected = np.array([[2, 0], [1, 3]], dtype=object).dot(attended)
    assert (mapped == expected).all()


def test_spectrum_and_dimension_of_a_network_with_the_toy_component():
    arch = _arch()
    # each map joins two streams: its GL(2) on either side is a gauge, less the output's (observed)
    assert [(i, w) for i, w, _, _ in arch.hidden_gauges()] == [(1, 2), (1, 2), (2, 2)]
    orbit = len(arch.symmetry_tangents())
    assert orbit == 2 + 3 * 4
    spectrum = decay_spectrum(arch, progress=False)
    assert spectrum.kernel == orbit and spectrum.rank == arch.param_count - orbit
    # a map after the attention does not change what the attention sees: the spectrum of the plain network
    # with the map absorbed into the next layer's blocks has the same rank
    plain = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    assert spectrum.rank == decay_spectrum(plain, progress=False).rank
    result = function_space_dimension(arch)
    assert result.certified and result.lower == spectrum.rank


def test_a_residual_stream_ties_the_streams_it_adds():
    # the residual add ties each attention's output to its input; the map after layer 1 starts a new stream,
    # tied to layer 2's attention by its add and ended by layer 2's map: one gauge, which the exact rank meets
    arch = _arch(residual=True)
    assert arch.hidden_gauges() == [(1, 2, [("Q", 2), ("K", 2), ("V", 2), ("L", 2)], [("L", 1), ("V", 2)])]
    result = function_space_dimension(arch)
    assert result.certified
    assert result.lower == arch.param_count - len(arch.symmetry_tangents())
