r"""Biases: ``Q x + b_Q``, ``K x + b_K``, ``V x + b_V`` in attention and ``W_in x + b_in``, ``W_out y + b_out``
in the feed-forward block.

The components of ``--bias``: :class:`BiasedAttention` and
:class:`BiasedFeedForward` are attention and the feed-forward block with one
bias column per projection (added to every token: ``b 1^T``).

Symmetries, derived here and verified by the exact kernel of the native
Jacobian (``tests/test_bias.py``):

- ``GL(a_i)`` of a head survives with the biases moving along:
  ``(Q, b_Q) -> G (Q, b_Q)``, ``(K, b_K) -> G^{-T} (K, b_K)`` keeps every
  score ``(K x_j + b_K)^T (Q x_k + b_Q)``;
- a hidden change of basis ``H`` of a stream moves the biases that write
  into it (``b_V``, ``b_out``: ``b -> H b``) and leaves those inside a block
  (``b_Q``, ``b_K``, ``b_in``) alone;
- with several heads only the sum of their ``b_V`` reaches the output:
  ``b_{V,1} -> b_{V,1} + c``, ``b_{V,h} -> b_{V,h} - c`` (``b_V 1^T S = b_V 1^T``:
  not for lightning attention, whose ``S(A) = A`` has no columns summing to 1);
- a hidden stream can move by ``c 1^T`` when the biases around it absorb it
  (:meth:`symattn.model.Architecture.hidden_translations`): the hidden gauge
  becomes affine, also inside a residual stream, between any two biased blocks
  (again not after lightning attention);
- for an exponential normalizer (softmax), ``S(A + 1 u^T) = S(A)``: the score
  terms ``b_K^T (Q x_k + b_Q)`` are constant along each column (they depend
  on the query only), so ``b_K`` is invisible: its ``a_i`` translations
  ``b_K -> b_K + c`` join the orbit.  For any other normalizer the scores are
  the quadratic form of ``[K b_K]^T [Q b_Q]`` on ``(x, 1)``, a rank-``a_i``
  matrix of size ``d + 1``, and ``GL(a_i)`` is all.

The curves: on the collapse curve ``b_Q``, ``b_K`` and ``b_in`` collapse
with ``Q``, ``K`` and ``W_in`` (the scores and the activation's argument
vanish at ``eps = 0``), and on input scaling every bias scales with the
input (a bias is a constant feature of every token).

Examples
--------
>>> from symattn.model import Architecture
>>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=3, bias=True)
>>> [key for key, _ in arch.blocks()]
[('Q', 1), ('K', 1), ('V', 1), ('bQ', 1), ('bK', 1), ('bV', 1)]
>>> len(arch.symmetry_tangents()), len(arch.replace(normalizer="cosh").symmetry_tangents())   # softmax: + b_K
(2, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .components import Attention, Tangent
from .feedforward import FeedForward
from ..curves import register_scaled_block
from ..normalizers.presets import x
from .symbols import register_block_name

__all__ = ["BiasedAttention", "BiasedFeedForward"]

for _name, _latex in (("bQ", "b^{Q}"), ("bK", "b^{K}"), ("bV", "b^{V}"), ("bin", r"b^{\mathrm{in}}"),
                      ("bout", r"b^{\mathrm{out}}")):
    register_block_name(_name, _latex)
# the scores and the activation's argument vanish at eps = 0 on every curve: the biases inside them collapse with
# their projections, and every bias scales with the input (a bias is a constant feature added to each token)
for _name, _like in (("bQ", "Q"), ("bK", "K"), ("bin", "Q"), ("bV", None), ("bout", None)):
    register_scaled_block(_name, _like, with_input=True)


def _plus_bias(domain, product, bias, tokens: int):
    """``product + b 1^T``: the bias column added to every token."""
    return domain.add(product, domain.matmul(bias, domain.ones(1, tokens)))


@dataclass(frozen=True)
class BiasedAttention(Attention):
    """Attention with query, key and value biases: ``sum_h (V_h X + b_V 1^T) S((K_h X + b_K 1^T)^T (Q_h X + b_Q 1^T))``.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> head = BiasedAttention(2, 1, Normalizer.preset("cosh"))
    >>> head.parameter_blocks(1, 2)[3:]
    [(('bQ', 1), (1, 1)), (('bK', 1), (1, 1)), (('bV', 1), (2, 1))]
    """

    kind = "attention"
    linear_at_one_token = False  # V x + b_V: affine, not linear

    @property
    def keeps_effective_form(self) -> bool:
        return False  # the scores see (x, 1): no claimed effective parameters

    def effective_form_obstacle(self) -> str:
        """``biases``: the scores see ``(x, 1)``.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> BiasedAttention(2, 1, Normalizer.preset("cosh")).effective_form_obstacle()
        'biases'
        """
        return "biases"

    def parameter_blocks(self, layer: int, d_in: int) -> list:
        shapes = {"Q": (self.rank, d_in), "K": (self.rank, d_in), "V": (self.width, d_in),
                  "bQ": (self.rank, 1), "bK": (self.rank, 1), "bV": (self.width, 1)}
        return [(self.block_key(name, layer, h), shape) for h in range(1, self.heads + 1)
                for name, shape in shapes.items()]

    def projection(self, domain, blocks: dict, name: str, layer: int, head: int, hidden):
        product = super().projection(domain, blocks, name, layer, head, hidden)
        return _plus_bias(domain, product, blocks[self.block_key("b" + name, layer, head)], domain.shape(hidden)[1])

    def stream_roles(self, layer: int, d_in: int) -> tuple[list, list]:
        readers, writers = super().stream_roles(layer, d_in)
        return readers, writers + [self.block_key("bV", layer, h) for h in range(1, self.heads + 1)]

    def translation_roles(self, layer: int, d_in: int):
        heads = range(1, self.heads + 1)
        # b_V 1^T S = b_V 1^T because the columns of S sum to 1: lightning's S(A) = A does not shift its output
        shifting = [] if self.normalizer.is_lightning else [self.block_key("bV", layer, h) for h in heads]
        return ([(self.block_key("b" + name, layer, h), self.block_key(name, layer, h)) for h in heads
                 for name in ("Q", "K", "V")], shifting)

    def tangents(self, layer: int, d_in: int) -> list:
        out = []
        for h in range(1, self.heads + 1):  # G in GL(a_i) moves (Q, b_Q) and (K, b_K) alike
            keys = {name: self.block_key(name, layer, h) for name in ("Q", "K", "bQ", "bK")}
            for tangent in super().tangents(layer, d_in)[(h - 1) * self.rank ** 2: h * self.rank ** 2]:
                terms = dict(tangent.terms)
                terms[keys["bQ"]] = terms[keys["Q"]]
                terms[keys["bK"]] = terms[keys["K"]]
                out.append(Tangent(terms))
        for h in range(2 if not self.normalizer.is_lightning else self.heads + 1, self.heads + 1):
            # the heads' outputs are summed and b_V 1^T S = b_V 1^T: only the sum of their b_V is seen
            for r in range(self.width):
                e = np.zeros((self.width, 1), dtype=np.int64)
                e[r, 0] = 1
                out.append(Tangent({self.block_key("bV", layer, 1): (None, None, e),
                                    self.block_key("bV", layer, h): (None, None, -e)}, group="translation"))
        if self.normalizer.is_lightning:  # no normalization: (Q, b_Q) -> c (Q, b_Q), (V, b_V) -> (V, b_V) / c
            for tangent in (t for t in super().tangents(layer, d_in) if t.group == "scaling"):
                terms = dict(tangent.terms)
                head = next(k for k in terms if k[0] == "Q")[2:]  # () with one head, (h,) with several
                terms[("bQ", layer, *head)] = terms[("Q", layer, *head)]
                terms[("bV", layer, *head)] = terms[("V", layer, *head)]
                out.append(Tangent(terms, group="scaling"))
        elif self.normalizer.is_exponential:  # S(A + 1 u^T) = S(A): b_K only adds column constants
            for h in range(1, self.heads + 1):
                for r in range(self.rank):
                    shift = np.zeros((self.rank, 1), dtype=np.int64)
                    shift[r, 0] = 1
                    out.append(Tangent({self.block_key("bK", layer, h): (None, None, shift)}, group="translation"))
        return out

    def tangent_count(self, layer: int, d_in: int, group: str | None = None) -> int:
        translations = (0 if self.normalizer.is_lightning else (self.heads - 1) * self.width) + (
            self.heads * self.rank if self.normalizer.is_exponential and not self.normalizer.is_lightning else 0)
        counts = {"gauge": self.heads * self.rank ** 2, "scaling": self.heads if self.normalizer.is_lightning else 0,
                  "translation": translations}
        return sum(counts.values()) if group is None else counts.get(group, 0)

    def block_groups(self, layer: int, d_in: int) -> dict:
        out = super().block_groups(layer, d_in)
        for h in range(1, self.heads + 1):
            for name in ("bQ", "bK", "bV"):
                out[self.block_key(name, layer, h)] = f"bias:{layer}"
        return out

    def observe_groups(self, layer: int, d_in: int) -> dict:
        # what decides the scores (Q, K, b_Q, b_K) and what carries the values (V, b_V), as observability asks
        groups = super().block_groups(layer, d_in)
        for h in range(1, self.heads + 1):
            for name in ("bQ", "bK"):
                groups[self.block_key(name, layer, h)] = self.score_group(layer, h)
            groups[self.block_key("bV", layer, h)] = "values"
        return groups

    def layer_map(self, stream: str) -> tuple[str, str]:
        """Attention on ``stream`` with every projection's bias added to each token.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> BiasedAttention(2, 1, Normalizer.preset("cosh")).layer_map("X_{i-1}")[0]
        '(V_i X_{i-1} + b^V_i 1^T) S((K_i X_{i-1} + b^K_i 1^T)^T (Q_i X_{i-1} + b^Q_i 1^T))'
        """
        y = stream
        h = "_{i,h}" if self.heads > 1 else "_i"
        text = (f"(V{h} {y} + b^V{h} 1^T) S((K{h} {y} + b^K{h} 1^T)^T (Q{h} {y} + b^Q{h} 1^T))")
        latex = (rf"\left(V{h} {y} + b^V{h} \mathbf{{1}}^\top\right) S\!\left(\left(K{h} {y} + b^K{h}"
                 rf" \mathbf{{1}}^\top\right)^\top \left(Q{h} {y} + b^Q{h} \mathbf{{1}}^\top\right)\right)")
        if self.heads > 1:
            return f"sum_h {text}", rf"\sum_{{h=1}}^{{h_i}} {latex}"
        return text, latex

    def symmetry_text(self) -> str:
        return super().symmetry_text() + (", the translations of b_K (an exponential normalizer)"
                                          if self.normalizer.is_exponential else "")

    def describe(self) -> str:
        return super().describe().replace("attention (", "attention with biases (", 1)

    def to_json(self) -> dict:
        return {**super().to_json(), "bias": True}


@dataclass(frozen=True)
class BiasedFeedForward(FeedForward):
    """``x -> W_out s(W_in x + b_in) + b_out`` on every token.

    Examples
    --------
    >>> BiasedFeedForward(2, "tanh").parameter_blocks(1, 3)
    [(('Win', 1), (2, 3)), (('Wout', 1), (3, 2)), (('bin', 1), (2, 1)), (('bout', 1), (3, 1))]
    """

    def parameter_blocks(self, layer: int, d_in: int) -> list:
        return super().parameter_blocks(layer, d_in) + [(("bin", layer), (self.hidden, 1)),
                                                         (("bout", layer), (d_in, 1))]

    def linear(self, domain, blocks: dict, name: str, layer: int, x):
        bias = {"Win": "bin", "Wout": "bout"}[name]
        return _plus_bias(domain, super().linear(domain, blocks, name, layer, x), blocks[(bias, layer)],
                          domain.shape(x)[1])

    def stream_roles(self, layer: int, d_in: int) -> tuple[list, list]:
        return [("Win", layer)], [("Wout", layer), ("bout", layer)]

    def layer_map(self, stream: str) -> tuple[str, str]:
        """``W_out,i sigma(W_in,i y + b_in,i 1^T) + b_out,i 1^T``.

        Examples
        --------
        >>> BiasedFeedForward(2, "tanh").layer_map("Y_i")[0]
        'W_out,i sigma(W_in,i Y_i + b_in,i 1^T) + b_out,i 1^T'
        """
        return (f"W_out,i sigma(W_in,i {stream} + b_in,i 1^T) + b_out,i 1^T",
                rf"W^{{\mathrm{{out}}}}_i\, \sigma\!\left(W^{{\mathrm{{in}}}}_i {stream} + b^{{\mathrm{{in}}}}_i"
                rf" \mathbf{{1}}^\top\right) + b^{{\mathrm{{out}}}}_i \mathbf{{1}}^\top")

    def _hidden_inputs(self, layer: int) -> list:
        return [("Win", layer), ("bin", layer)]

    def _linear_slope(self):
        """``(r, q)`` with ``s(x) = (r / q) x`` for a linear activation with a rational slope, else None.

        Examples
        --------
        >>> BiasedFeedForward(2, "3*x/2")._linear_slope(), BiasedFeedForward(2, "tanh")._linear_slope()
        ((3, 2), None)
        """
        if self.activation.homogeneous_degree != 1:
            return None
        slope = self.activation.expr.diff(x)  # a constant: s(x) = slope * x
        return (int(slope.p), int(slope.q)) if slope.is_Rational else None

    def tangents(self, layer: int, d_in: int) -> list:
        """Those of the block without biases and, for a linear ``s(x) = c x``, the translations of ``b_in``.

        ``b_in -> b_in + q e_j``, ``b_out -> b_out - r W_out e_j`` with
        ``c = r / q``: the block outputs ``c W_out (W_in x + b_in) + b_out``,
        so only ``c W_out b_in + b_out`` is seen (integer tangents, exact in
        every ring; an irrational slope declares none).

        Examples
        --------
        >>> [t.terms[("bout", 1)][3][1].ravel().tolist() for t in BiasedFeedForward(1, "2*x").tangents(1, 2)
        ...  if t.group == "translation"]
        [[-2]]
        """
        out = super().tangents(layer, d_in)
        slope = self._linear_slope()
        if slope is not None:  # a linear block: only c W_out b_in + b_out is seen
            r, q = slope
            for j in range(self.hidden):
                e = np.zeros((self.hidden, 1), dtype=np.int64)
                e[j, 0] = 1
                out.append(Tangent({("bin", layer): (None, None, q * e),
                                    ("bout", layer): (None, None, None, (("Wout", layer), -r * e))},
                                   group="translation"))
        return out

    def tangent_count(self, layer: int, d_in: int, group: str | None = None) -> int:
        linear = self.hidden if self._linear_slope() is not None else 0
        own = super().tangent_count(layer, d_in, group)
        return own + (linear if group in (None, "translation") else 0)

    def translation_roles(self, layer: int, d_in: int):
        return [(("bin", layer), ("Win", layer))], [("bout", layer)]

    def describe(self) -> str:
        return super().describe().replace("feed-forward block (", "feed-forward block with biases (", 1)

    def to_json(self) -> dict:
        return {**super().to_json(), "bias": True}
