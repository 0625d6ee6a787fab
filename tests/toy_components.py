"""A component written in the test suite, not in the package: a learned linear map of each token.

``X -> L_i X`` with ``L_i`` a ``d_i x d_i`` block after each layer's
attention.  It declares only its blocks, its forward step and its stream
roles; everything else (symmetries, observability rules) is the
:class:`~symattn.model.components.Component` defaults or derived by the
architecture.
"""

from dataclasses import dataclass

from symattn.model import Component


@dataclass(frozen=True)
class Gain(Component):
    """A learned linear map of each token."""

    kind = "gain"

    def parameter_blocks(self, layer, d_in):
        return [(("L", layer), (d_in, d_in))]

    def step(self, domain, stream, blocks, layer):
        stream.start_block()
        stream.hidden = domain.matmul(blocks[("L", layer)], stream.hidden)

    def stream_roles(self, layer, d_in):
        return [("L", layer)], [("L", layer)]
