"""The parts a layer is made of: each knows its parameter blocks, its forward step and its symmetries.

A layer of an :class:`~symattn.model.Architecture` is a tuple of
components run in order on a :class:`Stream` (the hidden state of one
input, ``width x t``).  The package's analyses ask the components, never a
variant flag:

- :meth:`Component.parameter_blocks`: the native blocks ``(key, shape)`` in
  parameter order (the columns of every Jacobian);
- :meth:`Component.step`: the forward step over any domain of
  :mod:`symattn.algebra` (one domain interface: products, sums,
  normalization), so that closed forms, certified ranks, series and jets
  come from the same code;
- :meth:`Component.stream_roles`: which blocks read the stream (a change of
  basis ``H`` of the component's input acts on them as ``M -> M H^{-1}``)
  and which write it (``M -> H M`` for a change of the output's basis):
  the hidden-width gauge of the architecture is assembled from these;
- :meth:`Component.tangents`: the component's own continuous symmetries
  (``gl(a_i)`` of each head, the scaling of lightning attention), as
  :class:`Tangent` values that :func:`symattn.jacobian.gauge_tangent_series`
  evaluates along any curve;
- :attr:`Component.keeps_effective_form`: whether ``F = P X M_l`` in the
  effective parameters survives the component (attention with one head and
  a causal mask do; a residual stream does not).

Adding a component is one module that subclasses :class:`Component`
(``docs/architecture.md``, "Adding a component").

Examples
--------
>>> from symattn.model.components import Attention, Residual
>>> from symattn.normalizers import Normalizer
>>> head = Attention(width=2, rank=1, normalizer=Normalizer.preset("softmax"))
>>> head.parameter_blocks(layer=1, d_in=2)
[(('Q', 1), (1, 2)), (('K', 1), (1, 2)), (('V', 1), (2, 2))]
>>> Residual().output_width(3), Residual().parameter_blocks(1, 3)
(3, [])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Component", "Stream", "Tangent", "add_terms", "Attention", "CausalMask", "Residual"]


class Stream:
    """The state of the forward pass inside a layer: the hidden matrix, the current block's input, the mask.

    ``block_input`` is the input of the last component that computes (a
    residual add sums it with that component's output); ``mask`` is set by a
    :class:`CausalMask` for the attention after it, and reset at every layer.

    Examples
    --------
    >>> stream = Stream("X")
    >>> stream.hidden, stream.block_input, stream.mask
    ('X', 'X', None)
    """

    __slots__ = ("hidden", "block_input", "mask")

    def __init__(self, hidden):
        self.hidden = hidden
        self.block_input = hidden
        self.mask = None

    def start_layer(self) -> None:
        self.block_input = self.hidden
        self.mask = None

    def start_block(self) -> None:
        self.block_input = self.hidden


@dataclass(frozen=True)
class Tangent:
    """One tangent of a continuous symmetry: ``delta M = L M + M R + C`` for each block ``M`` it moves.

    ``terms`` maps a block key to ``(L, R, C)``, each an integer matrix or
    None (no term), or ``(L, R, C, (source, S), ...)``, which adds
    ``M_source S`` for each pair (a bias absorbing a translation through its
    weight: ``delta b_Q = -Q c``); :func:`add_terms` sums two moves of one
    block.  Integer matrices keep the tangent exact in every ring (GF(p), Q,
    series over them).  ``group`` names the symmetry: ``"gauge"``
    (a change of basis: ``GL(a_i)`` of a head, ``GL(d_i)`` of a hidden
    stream) or another name (``"scaling"`` of lightning attention).

    Examples
    --------
    >>> t = Tangent({("Q", 1): (np.eye(1, dtype=np.int64), None, None)})
    >>> list(t.terms)
    [('Q', 1)]
    """

    terms: dict = field(default_factory=dict)
    group: str = "gauge"


def add_terms(first, second) -> tuple:
    """The sum of two moves ``(L, R, C, *sources)`` of one block, so that neither is lost.

    A block moved twice by one symmetry (``b_V`` of a residual layer absorbs
    the translation through ``V`` and shifts back by ``-c``) needs both
    moves: a dict of terms keeps one per block, so a second move is added
    here, never assigned over the first.  ``L``, ``R`` and ``C`` are summed
    (None is zero) and the ``(source, S)`` pairs are kept side by side.

    Examples
    --------
    >>> e = np.array([[1], [0]])
    >>> moved = add_terms((None, None, None, (("V", 2), -e)), (None, None, -e))
    >>> moved[2].ravel().tolist(), moved[3][0]
    ([-1, 0], ('V', 2))
    >>> add_terms(None, (None, -e, None))[1].ravel().tolist()   # nothing before: the second move alone
    [-1, 0]
    """
    if first is None:
        return tuple(second)

    def plus(a, b):
        return b if a is None else a if b is None else np.asarray(a) + np.asarray(b)

    return (plus(first[0], second[0]), plus(first[1], second[1]), plus(first[2], second[2]),
            *first[3:], *second[3:])


def elementary(n: int):
    """The basis ``E_rc`` of ``gl(n)`` as int64 matrices, row-major.

    Examples
    --------
    >>> [E.tolist() for E in elementary(1)]
    [[[1]]]
    """
    for r in range(n):
        for c in range(n):
            E = np.zeros((n, n), dtype=np.int64)
            E[r, c] = 1
            yield E


class Component:
    """The protocol of one part of a layer; subclasses override what applies.

    A component with no parameters (a mask, a residual add) keeps the
    defaults: no blocks, the width unchanged, no symmetries.

    Examples
    --------
    A learned linear map ``X -> L X`` of the stream, in a few lines:

    >>> class Linear(Component):
    ...     kind = "linear"
    ...     def parameter_blocks(self, layer, d_in):
    ...         return [(("L", layer), (d_in, d_in))]
    ...     def step(self, domain, stream, blocks, layer):
    ...         stream.start_block()
    ...         stream.hidden = domain.matmul(blocks[("L", layer)], stream.hidden)
    ...     def stream_roles(self, layer, d_in):
    ...         return [("L", layer)], [("L", layer)]
    >>> Linear().parameter_blocks(2, 3)
    [(('L', 2), (3, 3))]
    """

    #: the component's name in descriptions and JSON
    kind = "component"
    #: ``F = P X M_l`` in the effective parameters survives this component
    keeps_effective_form = False
    #: the component computes (a block of its own, whose input a residual add sums with)
    computes = True
    #: with one token (every attention matrix the constant 1) its output is linear in its input, so that
    #: ``F = P X`` bounds the rank by the value map's dimension; False, the safe default, unless proved
    linear_at_one_token = False

    def parameter_blocks(self, layer: int, d_in: int) -> list:
        """``[(key, (rows, cols)), ...]`` of the component's native blocks, in parameter order."""
        return []

    def output_width(self, d_in: int) -> int:
        """The stream's width after the component."""
        return d_in

    def step(self, domain, stream: Stream, blocks: dict, layer: int) -> None:
        """Advance ``stream`` by the component over ``domain``; ``blocks`` maps keys to the domain's matrices."""
        raise NotImplementedError

    def stream_roles(self, layer: int, d_in: int) -> tuple[list, list]:
        """``(readers, writers)``: blocks multiplying the input stream, and blocks producing the output."""
        return [], []

    def ties_stream(self) -> bool:
        """True when the component adds the current block's input to its output (a residual add)."""
        return False

    def masks_attention(self) -> bool:
        """True when the component restricts the keys each query of the attention after it reads (a mask).

        Forced attention weights are then the mask's averages, which differ
        from query to query, not ``J/t``: observability reads this.

        Examples
        --------
        >>> Residual().masks_attention(), CausalMask().masks_attention()
        (False, True)
        """
        return False

    def translation_roles(self, layer: int, d_in: int):
        """``(absorbing, shifting)`` for a translation ``X -> X + c 1^T`` of the streams it reads and writes.

        ``absorbing``: ``(bias, weight)`` pairs, one for each weight that reads
        the input stream (``b -> b - W c`` undoes it); ``shifting``: the biases
        added to the output (``b -> b + c``).  None when a weight reads or
        writes the stream without a bias (no translation passes); a component
        without blocks passes every translation.
        """
        readers, writers = self.stream_roles(layer, d_in)
        return ([], []) if not readers and not writers else None

    def tangents(self, layer: int, d_in: int) -> list:
        """The component's own continuous symmetries as :class:`Tangent` values."""
        return []

    def gauge_slice_blocks(self, layer: int, d_in: int) -> list:
        """Blocks whose leading square the component's own gauge tangents can bring to the identity."""
        return []

    def tangent_count(self, layer: int, d_in: int, group: str | None = None) -> int:
        """How many :meth:`tangents` (of ``group``, or all) there are, without building them (wide layers)."""
        return sum(1 for t in self.tangents(layer, d_in) if group is None or t.group == group)

    def analytic_functions(self) -> tuple:
        """The functions given by Taylor data that the step applies (a normalizer, an activation)."""
        return ()

    def block_groups(self, layer: int, d_in: int) -> dict:
        """``{block key: group}``: the effective block each native block belongs to (``scores:i``, ``values``).

        The spectrum and identification orders are reported per group; a
        component without a derived effective form groups its blocks under
        its own name and layer.
        """
        return {key: f"{self.kind}:{layer}" for key, _ in self.parameter_blocks(layer, d_in)}

    def observe_groups(self, layer: int, d_in: int) -> dict:
        """``{block key: group}`` for observability: :meth:`block_groups` unless a component says otherwise."""
        return self.block_groups(layer, d_in)

    def symmetry_text(self) -> str:
        """The component's continuous symmetries in words (empty when it has none)."""
        return ""

    def effective_form_obstacle(self) -> str:
        """Why ``F`` does not factor through ``(What_1, ..., What_l, P)`` with this component, in words.

        Empty when the component keeps the effective form; attention's heads
        and the residual add are named by the general sentence ("several
        heads or a residual stream") and return empty too.

        Examples
        --------
        >>> Residual().effective_form_obstacle(), CausalMask().effective_form_obstacle()
        ('', '')
        """
        return "" if self.keeps_effective_form or self.kind in ("attention", "residual stream") \
            else f"a {self.kind} block"

    def gauge_text(self) -> str:
        """The component's changes of basis (its ``"gauge"`` tangents) in words; empty when it has none.

        Examples
        --------
        >>> Residual().gauge_text()
        ''
        """
        return ""

    def discrete_group_order(self) -> int:
        """The order of the component's own discrete symmetries (permutations of its parts, sign flips).

        Examples
        --------
        >>> Residual().discrete_group_order()
        1
        """
        return 1

    def discrete_symmetry_text(self) -> str:
        """The component's discrete symmetries in words (empty when it has none).

        Examples
        --------
        >>> CausalMask().discrete_symmetry_text()
        ''
        """
        return ""

    def closed_form_latex(self) -> tuple:
        """Lines the component adds to the closed form's LaTeX (a mask's ``S(A)``); empty by default.

        Examples
        --------
        >>> Residual().closed_form_latex()
        ()
        """
        return ()

    def closed_form_note(self) -> str:
        """Words the component adds to the closed form's text (``, with the causal mask ...``); empty by default.

        Examples
        --------
        >>> Residual().closed_form_note()
        ''
        """
        return ""

    def layer_map(self, stream: str) -> tuple[str, str]:
        """``(text, LaTeX)`` of the component's output on the stream named ``stream`` (a layer map's step).

        Examples
        --------
        >>> Component().layer_map("Y_i")[0]
        'component(Y_i)'
        """
        return f"{self.kind}({stream})", rf"\mathrm{{{self.kind}}}({stream})"

    def grid_fields(self) -> dict:
        """The fields of a sweep's grid that give this component (``{"ffn": 2, "activation": "tanh"}``)."""
        return {}

    # -- observability rules (read by :mod:`symattn.observe`, which never branches on a component's kind) --
    def observe_node(self, layer: int, d_in: int) -> dict | None:
        """The node the component adds to the dependency graph, or None (a mask, a residual add: no node).

        The default, for a component with parameters: one node ``kind:layer``
        holding them, whose block of observability is ``kind:layer`` (its
        :meth:`block_groups`).  Attention's nodes are the graph's own.

        Examples
        --------
        >>> Residual().observe_node(1, 2) is None
        True
        """
        blocks = self.parameter_blocks(layer, d_in)
        if not blocks:
            return None
        groups = list(dict.fromkeys(self.block_groups(layer, d_in).values()))
        return {"name": groups[0], "kind": self.kind, "block": groups[0], "keys": [key for key, _ in blocks],
                "label": f"{self.kind} {layer}", "latex": rf"\mathrm{{{self.kind}}}_{{{layer}}}"}

    def observe_stream(self, states: dict, origin: str) -> dict:
        """The forced states of the stream after the component, from those of its input (``state -> origin``).

        States: ``zero`` (every token is 0), ``identical`` (all tokens of an
        input are equal), ``input-independent`` (the tokens do not depend on
        the input), ``constant-coordinate``.  ``origin`` is the component's
        node, for states it creates.  The default rules of the ``observe_*``
        methods are those of an invertible linear map of each token (``x ->
        L x``): every state is kept; a component that is not one overrides them.

        Examples
        --------
        >>> Component().observe_stream({"zero": "values:1", "rank<=1": "values:1"}, "x")
        {'zero': 'values:1'}
        """
        return {state: states[state] for state in ("zero", "identical", "input-independent", "constant-coordinate")
                if state in states}

    def observe_span(self, span: int, width: int, states: dict) -> int:
        """The dimension of the span of the output tokens (over every input) from that of the input tokens.

        ``states`` are the input's forced states.  The default keeps the span
        (a component acting linearly on each token).

        Examples
        --------
        >>> Component().observe_span(2, 3, {})
        2
        """
        return min(span, width)

    def observe_reach(self, reach: int, width: int) -> int:
        """How many independent functionals of its input stream the rest of the network reads, from its output's.

        ``reach`` is that number for the component's output stream (the
        output reads all of ``X_l``).  The default passes it on.

        Examples
        --------
        >>> Component().observe_reach(1, 3)
        1
        """
        return min(reach, width)

    def observe_commutant(self, width: int) -> int:
        """The dimension of the linear maps ``G`` of its stream with ``G o block = block o G`` (0: none claimed).

        Between two residual layers whose attention averages with fixed weights
        such a ``G`` moves ``I + V_i`` and ``I + V_{i+1}`` together.

        Examples
        --------
        >>> Component().observe_commutant(2)
        0
        """
        return 0

    def observe_verdict(self, states: dict, span: int, generic_span: int, reach: int | None = None,
                        generic_reach: int | None = None) -> tuple:
        """``(status, rule, text)``: what the output sees of the component's block, from its input stream.

        ``states`` are the input stream's forced states, ``span`` and
        ``generic_span`` the dimension of its tokens' span on the set and at
        a generic point, ``reach`` and ``generic_reach`` how many independent
        functionals of its output the rest of the network reads
        (:meth:`observe_reach`).  The graph has already checked that a path
        from the block to the output is not forced to zero (else:
        unobservable).  The default: observable, a block with parameters on a
        live path, unless its input is zero (a linear map of 0 is 0).

        Examples
        --------
        >>> Component().observe_verdict({}, 2, 2)[0], Component().observe_verdict({"zero": "values:1"}, 0, 2)[0]
        ('observable', 'unobservable')
        """
        if "zero" in states:
            return "unobservable", "zero-input", "its input is zero: the block multiplies 0"
        return "observable", "live-path", "a path to the output through nodes that nothing forces"

    def observe_tie(self, block_input: tuple, output: tuple, width: int) -> tuple:
        """``(states, span)`` of a stream that a tying component (:meth:`ties_stream`) sums with its block's input.

        ``block_input`` and ``output`` are ``(states, span)`` of the two
        summands.  The default claims nothing forced and a full span.

        Examples
        --------
        >>> Component().observe_tie(({}, 1), ({}, 1), 3)
        ({}, 3)
        """
        return {}, width

    def describe(self) -> str:
        return self.kind

    def to_json(self) -> dict:
        return {"kind": self.kind}


@dataclass(frozen=True)
class Attention(Component):
    """Normalized attention with ``heads`` heads: ``sum_h V_h X S(X^T K_h^T Q_h X)``.

    Parameters
    ----------
    width : int
        ``d_i``, the rows of each ``V_{i,h}``.
    rank : int
        ``a_i``, the rows of each ``Q_{i,h}`` and ``K_{i,h}``.
    normalizer : Normalizer
        Applied column by column; HMK's lightning attention (no normalization,
        ``S(A) = A``) when it is the ``lightning`` preset.
    heads : int

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> two = Attention(2, 1, Normalizer.preset("softmax"), heads=2)
    >>> [key for key, _ in two.parameter_blocks(1, 2)]
    [('Q', 1, 1), ('K', 1, 1), ('V', 1, 1), ('Q', 1, 2), ('K', 1, 2), ('V', 1, 2)]
    >>> len(two.tangents(1, 2))                      # one gl(a_1) per head
    2
    """

    width: int
    rank: int
    normalizer: object
    heads: int = 1
    kind = "attention"
    # one token: sum_h V_h X, linear in X (lightning's S(A) = A is not constant: its layers are left out)
    linear_at_one_token = True

    @property
    def keeps_effective_form(self) -> bool:
        return self.heads == 1  # F = P X M_l with one head (lightning's S(A) = A too)

    def block_key(self, name: str, layer: int, head: int = 1) -> tuple:
        return (name, layer) if self.heads == 1 else (name, layer, head)

    def parameter_blocks(self, layer: int, d_in: int) -> list:
        shapes = {"Q": (self.rank, d_in), "K": (self.rank, d_in), "V": (self.width, d_in)}
        return [(self.block_key(name, layer, h), shape) for h in range(1, self.heads + 1)
                for name, shape in shapes.items()]

    def output_width(self, d_in: int) -> int:
        return self.width

    def step(self, domain, stream: Stream, blocks: dict, layer: int) -> None:
        stream.start_block()
        hidden = stream.hidden
        # the mask is passed only when there is one, so that a domain's attention keeps its plain signature
        mask = {"causal": True} if stream.mask == "causal" else {}
        output = None
        for h in range(1, self.heads + 1):
            keys = self.projection(domain, blocks, "K", layer, h, hidden)
            queries = self.projection(domain, blocks, "Q", layer, h, hidden)
            scores = domain.matmul(domain.transpose(keys), queries)
            if self.normalizer.is_lightning:  # lightning attention (HMK) uses the (masked) scores as weights
                weights = domain.causal_mask(scores) if mask else scores
            else:
                weights = domain.attention(scores, self.normalizer, **mask)
            head = domain.matmul(self.projection(domain, blocks, "V", layer, h, hidden), weights)
            output = head if output is None else domain.add(output, head)
        stream.hidden = output

    def projection(self, domain, blocks: dict, name: str, layer: int, head: int, hidden):
        """``M hidden`` for the head's block ``name`` (``Q``, ``K`` or ``V``); a biased head adds its bias."""
        return domain.matmul(blocks[self.block_key(name, layer, head)], hidden)

    def layer_map(self, stream: str) -> tuple[str, str]:
        """The heads' sum on ``stream`` (one head: ``V_i X S(X^T K_i^T Q_i X)``).

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> Attention(2, 1, Normalizer.preset("softmax")).layer_map("X_{i-1}")[0]
        'V_i X_{i-1} S(X_{i-1}^T K_i^T Q_i X_{i-1})'
        """
        y = stream
        if self.heads > 1:
            return (f"sum_h V_{{i,h}} {y} S({y}^T K_{{i,h}}^T Q_{{i,h}} {y})",
                    rf"\sum_{{h=1}}^{{h_i}} V_{{i,h}} {y}\, S\!\left({y}^\top K_{{i,h}}^\top Q_{{i,h}} {y}\right)")
        return f"V_i {y} S({y}^T K_i^T Q_i {y})", rf"V_i {y}\, S\!\left({y}^\top K_i^\top Q_i {y}\right)"

    def stream_roles(self, layer: int, d_in: int) -> tuple[list, list]:
        readers = [self.block_key(name, layer, h) for h in range(1, self.heads + 1) for name in ("Q", "K", "V")]
        writers = [self.block_key("V", layer, h) for h in range(1, self.heads + 1)]
        return readers, writers

    def tangents(self, layer: int, d_in: int) -> list:
        out = []
        for h in range(1, self.heads + 1):  # G in GL(a_i): Q -> G Q, K -> G^{-T} K
            q, k = self.block_key("Q", layer, h), self.block_key("K", layer, h)
            for E in elementary(self.rank):
                out.append(Tangent({q: (E, None, None), k: (-E.T, None, None)}))
        if self.normalizer.is_lightning:  # no normalization: Q -> c Q, V -> V / c keeps the head
            for h in range(1, self.heads + 1):
                out.append(Tangent({self.block_key("Q", layer, h): (np.eye(self.rank, dtype=np.int64), None, None),
                                    self.block_key("V", layer, h): (-np.eye(self.width, dtype=np.int64), None,
                                                                    None)}, group="scaling"))
        return out

    def gauge_slice_blocks(self, layer: int, d_in: int) -> list:
        return [self.block_key("Q", layer, h) for h in range(1, self.heads + 1)]  # G Q_{i,h}

    def tangent_count(self, layer: int, d_in: int, group: str | None = None) -> int:
        counts = {"gauge": self.heads * self.rank ** 2, "scaling": self.heads if self.normalizer.is_lightning else 0}
        return sum(counts.values()) if group is None else counts.get(group, 0)

    def analytic_functions(self) -> tuple:
        return () if self.normalizer.is_lightning or self.normalizer.is_generic else (self.normalizer,)

    def score_group(self, layer: int, head: int = 1) -> str:
        """``scores:i``, or ``scores:i:h`` in a layer with several heads."""
        return f"scores:{layer}" if self.heads == 1 else f"scores:{layer}:{head}"

    def block_groups(self, layer: int, d_in: int) -> dict:
        out = {}
        for h in range(1, self.heads + 1):
            for name in ("Q", "K"):
                out[self.block_key(name, layer, h)] = self.score_group(layer, h)
            out[self.block_key("V", layer, h)] = "values"
        return out

    @property
    def normalized(self) -> bool:
        """Whether the scores go through a normalizer ``S`` (False for lightning attention, ``S(A) = A``).

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> Attention(2, 1, Normalizer.preset("softmax")).normalized, Attention(2, 1, Normalizer.preset("lightning")).normalized
        (True, False)
        """
        return not self.normalizer.is_lightning

    @property
    def polynomial_weights(self) -> bool:
        """Whether the attention weights are polynomial in the scores (lightning, or a polynomial normalizer's ``s``).

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> Attention(2, 1, Normalizer.preset("softmax")).polynomial_weights, Attention(2, 1, Normalizer.preset("lightning")).polynomial_weights
        (False, True)
        """
        return bool(self.normalizer.is_lightning or self.normalizer.is_polynomial)

    def discrete_group_order(self) -> int:
        """``h!``: the heads' outputs are summed, so any permutation of the heads keeps the layer.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> Attention(2, 1, Normalizer.preset("softmax"), heads=3).discrete_group_order()
        6
        """
        return math.factorial(self.heads)

    def discrete_symmetry_text(self) -> str:
        """``head permutations`` with several heads, else empty.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> Attention(2, 1, Normalizer.preset("softmax"), heads=2).discrete_symmetry_text()
        'head permutations'
        """
        return "head permutations" if self.heads > 1 else ""

    def gauge_text(self) -> str:
        """``one GL(a_i) per head``: ``Q -> G Q``, ``K -> G^{-T} K`` in every head.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> Attention(2, 1, Normalizer.preset("softmax")).gauge_text()
        'one GL(a_i) per head'
        """
        return "one GL(a_i) per head"

    def symmetry_text(self) -> str:
        return self.gauge_text() + (", the scaling of each lightning head" if self.normalizer.is_lightning else "")

    def describe(self) -> str:
        heads = f"{self.heads} heads, " if self.heads > 1 else ""
        return f"attention ({heads}width {self.width}, rank {self.rank}, normalizer {self.normalizer.name})"

    def to_json(self) -> dict:
        return {"kind": self.kind, "width": self.width, "rank": self.rank, "normalizer": self.normalizer.name,
                "heads": self.heads}


@dataclass(frozen=True)
class CausalMask(Component):
    """A causal mask on the attention after it: query ``k`` attends to keys ``j <= k`` only.

    Examples
    --------
    >>> CausalMask().keeps_effective_form, CausalMask().parameter_blocks(1, 2)
    (True, [])
    """

    kind = "causal mask"
    keeps_effective_form = True
    computes = False
    linear_at_one_token = True

    def closed_form_latex(self) -> tuple:
        """The masked normalization ``S(A)``, a line of the closed form.

        Examples
        --------
        >>> CausalMask().closed_form_latex()[0].startswith("S(A)_{jk} = ")
        True
        """
        return (r"S(A)_{jk} = \frac{s(A_{jk})}{\sum_{j' \le k} s(A_{j'k})}\ (j \le k),\quad S(A)_{jk} = 0\ (j > k)",)

    def closed_form_note(self) -> str:
        """``, with the causal mask S(A)_jk = 0 for j > k``.

        Examples
        --------
        >>> CausalMask().closed_form_note()
        ', with the causal mask S(A)_jk = 0 for j > k'
        """
        return ", with the causal mask S(A)_jk = 0 for j > k"

    def step(self, domain, stream: Stream, blocks: dict, layer: int) -> None:
        stream.mask = "causal"

    def masks_attention(self) -> bool:
        return True


@dataclass(frozen=True)
class Residual(Component):
    """A residual add: the stream becomes the current block's input plus its output (same width).

    The add ties the bases of the block's input and output streams, so the
    hidden-width gauge ``GL(d_i)`` of a stream tied to the input or output
    does not survive (:meth:`symattn.model.Architecture.hidden_gauges`).

    Examples
    --------
    >>> Residual().ties_stream(), Residual().keeps_effective_form
    (True, False)
    """

    kind = "residual stream"
    computes = False
    linear_at_one_token = True

    def step(self, domain, stream: Stream, blocks: dict, layer: int) -> None:
        stream.hidden = domain.add(stream.block_input, stream.hidden)

    def ties_stream(self) -> bool:
        return True

    def observe_tie(self, block_input: tuple, output: tuple, width: int) -> tuple:
        """The sum of two streams: a zero summand leaves the other; equal or input-independent tokens stay so.

        Examples
        --------
        >>> Residual().observe_tie(({"zero": "values:1"}, 0), ({"identical": "ffn"}, 1), 2)
        ({'identical': 'ffn'}, 1)
        >>> Residual().observe_tie(({"identical": "input"}, 2), ({}, 1), 2)
        ({}, 2)
        """
        (a, span_a), (b, span_b) = block_input, output
        if "zero" in a:
            return dict(b), span_b
        if "zero" in b:
            return dict(a), span_a
        kept = {state: a[state] for state in ("identical", "input-independent") if state in a and state in b}
        return kept, min(width, span_a + span_b)
