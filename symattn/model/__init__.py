"""Deep attention: the architecture, its components and parameters, and one forward pass.

Layer ``i`` maps ``X_{i-1}`` (``d_{i-1} x t``, one token per column) to
``X_i = V_i X_{i-1} S(X_{i-1}^T K_i^T Q_i X_{i-1})``, where ``S`` normalizes
each column with the layer's normalizer.  A layer is a tuple of components
(:mod:`symattn.model.components`): ``h_i`` heads of attention
(``X_i = sum_h V_{i,h} X_{i-1} S(A_{i,h})``), a causal mask (query ``k``
attends to keys ``j <= k`` only), a residual stream (``X_i = X_{i-1} +
...``), and whatever a component module adds.  :func:`forward` is written
once against the :class:`~symattn.algebra.domains.Domain` interface and
runs on every domain of :mod:`symattn.algebra`.

Examples
--------
>>> from symattn.model import Architecture, forward
>>> from symattn.algebra.domains import RationalDomain
>>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="1 + x**2")
>>> params = arch.parameters_from([[[1, 0]]], [[[0, 1]]], [[[1, 0], [0, 1]]])
>>> forward(arch, params, [[1, 0], [0, 1]], RationalDomain())
array([[Fraction(1, 3), Fraction(1, 2)],
       [Fraction(2, 3), Fraction(1, 2)]], dtype=object)
"""

from ..limits import MAX_LAYERS
from .architecture import Architecture, Parameters, feed_forward_block, require_architecture, require_seed
from .components import Attention, CausalMask, Component, Residual, Stream, Tangent
from .forward import DOMAIN_NAMES, closed_form, forward
from .symbols import EntrySymbol, block_label, entry_latex, entry_name, register_block_name

__all__ = ["Architecture", "Parameters", "forward", "closed_form", "require_architecture", "require_seed",
           "MAX_LAYERS", "EntrySymbol", "entry_latex", "entry_name", "block_label", "register_block_name",
           "feed_forward_block", "Component", "Attention", "CausalMask", "Residual", "Stream", "Tangent", "DOMAIN_NAMES"]
