"""The dependency graph of a network and the verdicts propagated through it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterable

import networkx as nx

from .. import naming
from ..effective import (
    effective_block_dimensions,
    has_bottleneck,
    rank_matrix_dimension,
)
from .._format import FormattedResult, latex_escape
from ..errors import NormalizerError, ShapeError, SymattnError
from ..model import Architecture, require_architecture
from ..normalizers import as_normalizer
from .events import (
    BIAS, COLLAPSED, Event, IDENTICAL_TOKENS, OBSERVABLE, PARTIAL, SCORE_COLLAPSE, UNOBSERVABLE, VALUE_COLLAPSE,
    VALUE_RANK, _events, all_events, parse_event,
)
from .heads import _dead_head_reasons, _live_heads, _shared_value_reasons, _variant_span
from .layout import _attention_output, _attention_site, _bias_columns, _blocks, _generic_spans, _layer_steps
from .reasons import BlockVerdict, Reason

__all__ = ["BlockVerdict", "Observability", "Reason", "dependency_graph", "minimal_collapses", "propagate"]



def dependency_graph(arch: Architecture) -> nx.DiGraph:
    """The network as a directed graph: an edge ``u -> v`` means *v is computed from u*.

    Nodes: ``input`` (``X = X_0``); for each layer ``i``: ``scores:i``
    (``A_i = X_{i-1}^T K_i^T Q_i X_{i-1}``, holds ``Q_i, K_i``, effective block
    ``What_i``), ``attention:i`` (``S(A_i)``, carries the normalizer's ``k``,
    evenness and exponential type), ``values:i`` (``V_i X_{i-1}``, holds
    ``V_i``, part of the effective block ``P``), ``tokens:i`` (``X_i``); and
    ``output`` (``F = X_l``).  Node attributes: ``kind``, ``layer``,
    ``params`` (the native parameters held), ``block`` (the effective block),
    ``effective`` (its name: ``What_i`` or ``P``; for the variants, which
    derive no effective blocks, ``K_i^T Q_i`` or ``K_{i,h}^T Q_{i,h}`` and
    ``V``), ``label`` and ``latex``.  The graph attribute ``architecture`` is the
    :class:`~symattn.model.Architecture`.

    The variants: a layer with ``h_i`` heads keeps one ``scores:i``,
    ``attention:i`` and ``values:i`` node holding every head's parameters
    (``Q_{i,1}, K_{i,1}, Q_{i,2}, ...``; attribute ``heads``); a causal mask
    is the attribute ``causal`` of the attention nodes; a residual stream adds
    the edge ``tokens:{i-1} -> tokens:i`` (edge attribute ``kind="residual"``;
    the other edges have ``kind="compute"``).

    Parameters
    ----------
    arch : Architecture

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> G = dependency_graph(Architecture.uniform(layers=2))
    >>> sorted(G.predecessors("tokens:1"))
    ['attention:1', 'values:1']
    >>> G.nodes["values:2"]["params"], G.nodes["values:2"]["block"]
    (('V_2',), 'values')
    >>> G.number_of_nodes(), G.number_of_edges()
    (10, 11)
    >>> R = dependency_graph(Architecture.uniform(layers=2, heads=[1, 2], residual=True))
    >>> sorted(R.predecessors("tokens:1")), R.edges["input", "tokens:1"]["kind"]
    (['attention:1', 'input', 'values:1'], 'residual')
    >>> R.nodes["scores:2"]["params"], R.number_of_edges()
    (('Q_{2,1}', 'K_{2,1}', 'Q_{2,2}', 'K_{2,2}'), 13)
    >>> R.nodes["scores:2"]["effective"], R.nodes["scores:1"]["effective"]
    ('K_{2,h}^T Q_{2,h}', 'K_1^T Q_1')
    """
    arch = require_architecture(arch)
    G = nx.DiGraph(architecture=arch, name=f"symattn dependency graph: {arch.describe()}")
    d0, t = arch.input_shape
    G.add_node("input", kind="input", layer=0, params=(), block="", label="X",
               latex="X", shape=(d0, t))
    previous = "input"
    for i in range(1, arch.layers + 1):
        n = arch.normalizers[i - 1]
        site = _attention_site(arch, i)
        heads = site.heads

        def held(*names):
            return tuple(arch.block_label(arch.block_key(name, i, h))
                         for h in range(1, heads + 1) for name in names)

        G.add_node(f"scores:{i}", kind="scores", layer=i, params=held("Q", "K"), block=f"scores:{i}",
                   effective=naming.layer_scores(i, heads, arch.factors_through_effective).text,
                   label=f"A_{i}", latex=rf"A_{{{i}}}", shape=(t, t), heads=heads)
        attrs = dict(kind="attention", layer=i, params=(), block="", label=f"S(A_{i})",
                     latex=rf"S(A_{{{i}}})", shape=(t, t), normalizer=n.name,
                     lightning=not site.normalized, heads=heads, causal=site.masked)
        if site.normalized:
            attrs.update(k=int(n.k), even=bool(n.is_even), exponential=bool(n.is_exponential))
        G.add_node(f"attention:{i}", **attrs)
        G.add_node(f"values:{i}", kind="values", layer=i, params=held("V"), block="values",
                   effective="P" if arch.factors_through_effective else "V", label=f"V_{i} X_{i - 1}", latex=rf"V_{{{i}}} X_{{{i - 1}}}",
                   shape=(arch.widths[i], t), heads=heads)
        G.add_node(f"tokens:{i}", kind="tokens", layer=i, params=(), block="", label=f"X_{i}",
                   latex=rf"X_{{{i}}}", shape=(arch.widths[i], t))
        attended = _attention_output(arch, i)
        if attended != f"tokens:{i}":  # components after attention: its output is a stream of its own
            G.add_node(attended, kind="stream", layer=i, params=(), block="", label=f"Y_{i}",
                       latex=rf"Y_{{{i}}}", shape=(arch.widths[i], t))
        G.add_edge(previous, f"scores:{i}", kind="compute")
        G.add_edge(f"scores:{i}", f"attention:{i}", kind="compute")
        G.add_edge(previous, f"values:{i}", kind="compute")
        G.add_edge(f"values:{i}", attended, kind="compute")
        G.add_edge(f"attention:{i}", attended, kind="compute")
        if site.tied:  # X_i = X_{i-1} + (attention output): the stream itself
            G.add_edge(previous, attended, kind="residual")
        for step in _layer_steps(arch, i):  # the components after attention add their own nodes
            if step.get("tie"):
                G.add_edge(step["block_input"], step["output"], kind="residual")
                continue
            if step["output"] not in G:
                G.add_node(step["output"], kind="stream", layer=i, params=(), block="",
                           label=step["output"], latex=latex_escape(step["output"]), shape=(arch.widths[i], t))
            spec = step["spec"]
            if spec is None:
                G.add_edge(step["input"], step["output"], kind="compute")
                continue
            G.add_node(spec["name"], kind=spec["kind"], layer=i, params=tuple(arch.block_label(k) for k in spec["keys"]),
                       block=spec["block"], effective=spec["block"], label=spec["label"], latex=spec["latex"],
                       shape=(arch.widths[i], t), component=True)
            G.add_edge(step["input"], spec["name"], kind="compute")
            G.add_edge(spec["name"], step["output"], kind="compute")
        previous = f"tokens:{i}"
    G.add_node("output", kind="output", layer=arch.layers + 1, params=(), block="", label="F",
               latex=r"F_\theta(X)", shape=(arch.widths[-1], t))
    G.add_edge(previous, "output", kind="compute")
    return G


def _architecture(graph: nx.DiGraph) -> Architecture:
    arch = graph.graph.get("architecture")
    if not isinstance(arch, Architecture):
        raise SymattnError("this graph has no architecture: build it with dependency_graph(arch)")
    return arch


# -- propagation ----------------------------------------------------------------------------


def _normalizer_properties(graph: nx.DiGraph, normalizer) -> list[dict]:
    arch = _architecture(graph)
    if normalizer is None:
        norms = [None] * arch.layers
    elif isinstance(normalizer, (list, tuple)):
        if len(normalizer) != arch.layers:
            raise ShapeError(f"{arch.layers} layers need {arch.layers} normalizers, got {len(normalizer)}")
        norms = [as_normalizer(n) for n in normalizer]
    else:
        norms = [as_normalizer(normalizer)] * arch.layers
    out = []
    for i, n in enumerate(norms, start=1):
        if n is None:
            attrs = graph.nodes[f"attention:{i}"]
            if attrs.get("lightning"):
                raise NormalizerError(
                    f"layer {i} uses lightning attention (no normalization): observability after "
                    "collapse is classified for normalized attention only")
            out.append({"name": attrs["normalizer"], "k": attrs["k"], "even": attrs["even"],
                        "exponential": attrs["exponential"]})
        else:
            if n.is_lightning:
                raise NormalizerError("lightning attention is a comparison case, not a normalizer: "
                                      "observability after collapse is classified for normalized attention")
            out.append({"name": n.name, "k": int(n.k), "even": bool(n.is_even),
                        "exponential": bool(n.is_exponential)})
    return out


def _reaches(arch: Architecture, spans: dict, uniform=frozenset(), value_ranks=None, dead_heads=None,
             keyed=frozenset()) -> dict:
    """How many independent functionals of each stream node the output reads (backward from ``X_l``).

    The output reads all of ``X_l``; a component after attention says what
    it reads of its input (:meth:`~symattn.model.Component.observe_reach`), a
    residual add adds its output's reach to its block's input; layer ``i``'s
    attention reads its input through each head's ``V_{i,h}^T`` (of the
    functionals its output's readers use) and, unless its attention is
    forced (``uniform``) or a head is dead (``dead_heads``), through
    ``Q_{i,h}`` and ``K_{i,h}`` (``2 min(a_i, span)`` per head, ``span`` the
    dimension of the tokens entering, from ``spans``: layer -> span).
    ``value_ranks`` maps ``(layer, head)`` to the rank of ``V_{i,h}`` on the set.  In the layers ``keyed``
    (a score collapse with query and key biases: ``A = (K X + b_K 1^T)^T b_Q 1^T``) the scores read one
    functional ``b_Q^T K`` of the input per head.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=2, ffn=1)
    >>> _reaches(arch, {1: 2, 2: 1})["tokens:1"], _reaches(arch, {1: 2, 2: 1}, uniform={2})["tokens:1"]
    (2, 1)
    """
    value_ranks, dead_heads = value_ranks or {}, dead_heads or {}
    reach = {f"tokens:{arch.layers}": arch.widths[-1]}
    for i in range(arch.layers, 0, -1):
        width, pending = arch.widths[i], {}
        for step in reversed(_layer_steps(arch, i)):
            if step.get("tie"):
                pending[step["block_input"]] = pending.get(step["block_input"], 0) + reach[step["output"]]
            else:
                reach[step["input"]] = min(width, step["component"].observe_reach(reach[step["output"]], width)
                                           + pending.pop(step["input"], 0))
        seen = reach[_attention_output(arch, i)]
        d_in, a = arch.widths[i - 1], arch.score_ranks[i - 1]
        site = _attention_site(arch, i)
        heads = range(1, site.heads + 1)
        ranks = [value_ranks.get((i, h), min(width, d_in)) for h in heads]
        # a forced attention is shared by every head: only sum_h V_{i,h} reads the layer's input
        through_values = min(sum(ranks), width, d_in, seen) if i in uniform else sum(min(r, seen) for r in ranks)
        live_heads = [h for h in heads if h not in dead_heads.get(i, ())]
        if i in keyed:
            through_scores = 0 if seen == 0 else sum(min(1, spans[i]) for h in live_heads)
        else:
            through_scores = 0 if i in uniform or seen == 0 else sum(2 * min(a, spans[i]) for h in live_heads)
        reach["input" if i == 1 else f"tokens:{i - 1}"] = min(
            d_in, through_values + through_scores + (seen if site.tied else 0))
    return reach


def _biased_value_reasons(states: dict, attention_biases: dict, varying: set) -> list:
    """Why value maps with biases lose directions on tokens with a constant coordinate.

    ``attention_biases``: layer -> :func:`_bias_columns` of its attention; ``varying``: the streams whose
    constant coordinate changes from input to input (no bias can absorb it).
    """
    reasons = []
    for i in sorted(attention_biases):
        before = "input" if i == 1 else f"tokens:{i - 1}"
        if "constant-coordinate" not in states[before] or "zero" in states[before] or before in varying:
            continue
        lost = attention_biases[i].get("values", 0)
        if lost:
            origin = states[before]["constant-coordinate"]
            reasons.append(Reason(
                "bias-column", f"the tokens entering layer {i} keep a constant coordinate: the column of V_{i} on "
                f"it adds the same constant as b^V_{i}, so only the sum reaches the output ({lost} direction(s))",
                tuple(dict.fromkeys((origin, before, f"values:{i}")))))
    return reasons


def _bottleneck(arch: Architecture, upto: int) -> int:
    """Generic dimension of the span of the tokens ``X_upto`` (the tokens entering layer ``upto + 1``).

    One head per layer: ``min(d_0, ..., d_upto)``, the rank of ``P_upto`` in
    input coordinates; see :func:`_generic_spans` for heads and components.
    """
    return _generic_spans(arch)["input" if upto == 0 else f"tokens:{upto}"]


@dataclass(frozen=True)
class Observability(FormattedResult):
    """What the output sees of each effective block, given events and the normalizers.

    Attributes
    ----------
    architecture : dict
    events : tuple of Event
    normalizers : tuple of dict
        Per layer: name, ``k``, ``even``, ``exponential``.
    states : dict
        Node -> tuple of forced states (``uniform``, ``equal-columns``, ``identical``, ``zero``,
        ``column-constant``, ``collapsed``, ``rank<=r``, ``constant-coordinate``,
        ``shift-invariant``).
    verdicts : dict
        Block -> :class:`BlockVerdict`.
    normal_first_order : dict
        Collapsed score block -> ``"positive"`` or ``0``: whether the output
        sees, to first order, leaving the collapsed set (``k = 1``: yes;
        ``k >= 2``: ``s'(0) = 0``, no).
    sign_components : int
        Sign-flip components of the fiber that stay distinct on the set:
        ``2^(heads of even layers whose scores are still seen)`` (generic: ``2^(heads of even
        layers)``, the order of :func:`symattn.effective.sign_group_order`; one head per layer in
        the plain model).
    notes : tuple of str
        Normalizer conditions that did not fire here but would change a verdict.
    graph : networkx.DiGraph
        The dependency graph with node attribute ``state``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> verdict = propagate(dependency_graph(Architecture.uniform(layers=2, width=2, tokens=3)), ["scores:1"])
    >>> verdict.collapsed, verdict.unobservable, verdict.observable, verdict.lost
    (['scores:1'], ['scores:2'], ['values'], ['scores:2'])
    >>> verdict.states["attention:2"], verdict.normal_first_order
    (('uniform',), {'scores:1': 'positive'})
    """

    architecture: dict
    events: tuple
    normalizers: tuple
    states: dict
    verdicts: dict
    normal_first_order: dict
    sign_components: int
    generic_sign_components: int
    notes: tuple
    graph: nx.DiGraph = field(repr=False, compare=False)

    def _with(self, status: str) -> list[str]:
        return [b for b, v in self.verdicts.items() if v.status == status]

    @property
    def unobservable(self) -> list[str]:
        return self._with(UNOBSERVABLE)

    @property
    def partial(self) -> list[str]:
        return self._with(PARTIAL)

    @property
    def observable(self) -> list[str]:
        return self._with(OBSERVABLE)

    @property
    def collapsed(self) -> list[str]:
        return self._with(COLLAPSED)

    @property
    def lost(self) -> list[str]:
        """Blocks the output sees only in part or not at all."""
        return self.unobservable + self.partial

    def reasons(self) -> dict:
        """Block -> list of reasons (JSON-ready)."""
        return {b: [r.to_json() for r in v.reasons] for b, v in self.verdicts.items()}

    def to_json(self) -> dict:
        return {
            "architecture": self.architecture,
            "events": [e.name for e in self.events],
            "normalizers": list(self.normalizers),
            "unobservable": self.unobservable,
            "partial": self.partial,
            "observable": self.observable,
            "collapsed": self.collapsed,
            "predicted_ranks": {b: v.predicted_rank for b, v in self.verdicts.items()},
            "normal_first_order": self.normal_first_order,
            "sign_components": self.sign_components,
            "generic_sign_components": self.generic_sign_components,
            "states": {n: list(s) for n, s in self.states.items() if s},
            "reasons": self.reasons(),
            "notes": list(self.notes),
            "method": "propagation of forced states along the dependency graph (MATH.md section 3)",
        }

    def _rows(self):
        for block, v in self.verdicts.items():
            reason = v.reasons[0] if v.reasons else None
            yield (block, v.status, "-" if v.predicted_rank is None else str(v.predicted_rank),
                   reason.text if reason else "", " -> ".join(reason.path) if reason else "")

    def __str__(self) -> str:
        events = ", ".join(e.name for e in self.events) or "none (generic)"
        lines = [f"observability after events: {events}"]
        for block, status, rank, text, path in self._rows():
            lines.append(f"  {block:<10} {status:<13} rank {rank:>3}  {text}")
            lines.append(f"  {'':<10} path: {path}")
        lines.append(f"sign components of the fiber: {self.sign_components} "
                     f"(generic {self.generic_sign_components})")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        lines = ["| block | verdict | predicted rank | reason | path |", "|---|---|---:|---|---|"]
        for block, status, rank, text, path in self._rows():
            lines.append(f"| {block} | {status} | {rank} | {text} | {path} |")
        lines.append("")
        lines.append(f"- events: {', '.join(e.describe(self.architecture) for e in self.events) or 'none'}")
        lines.append(f"- sign components of the fiber: {self.sign_components} "
                     f"(generic {self.generic_sign_components})")
        lines += [f"- note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _latex_math(self) -> str:
        rows = [rf"\text{{{latex_escape(b)}}} & \text{{{s}}} & {r} \\" for b, s, r, _, _ in self._rows()]
        return "\n".join([r"\begin{array}{llr}",
                          r"\text{block} & \text{verdict} & \text{predicted rank} \\ \hline",
                          *rows, r"\end{array}"])

    def _latex_body(self) -> str:
        """The verdicts as an ``array`` in display math (text mode)."""
        events = ", ".join(e.name for e in self.events) or "none"
        return _display_with_caption(self._latex_math(), f"Events: {events}.")


def _display_with_caption(array: str, caption: str = "") -> str:
    """Text-mode LaTeX: the ``array`` in display math, then an optional sentence."""
    return "\\[\n" + array + "\n\\]" + (f"\n{latex_escape(caption)}" if caption else "")


def propagate(graph: nx.DiGraph, events: Iterable = (), normalizer=None) -> Observability:
    """Mark what the events force and give each effective block its verdict and reason.

    Rules (MATH.md section 3), in the order of the layers:

    - score collapse at ``i`` or identical tokens entering layer ``i``: the
      scores are constant in each column, so ``S(A_i) = J/t`` for every
      normalizer (attention *uniform*), and the tokens ``X_i`` are identical;
      identical tokens stay identical.  A block whose attention is uniform is
      *unobservable*.
    - value collapse at ``i``: ``X_i = 0`` and every later ``X_j = 0``:
      every block is unobservable (the output is 0); ``values`` is the event's block.
    - ``V_i`` of rank ``r`` below the generic rank of ``P_i``: later tokens
      lie in an ``r``-dimensional subspace, later scores are *partial*.
    - constant (bias) coordinate: attention keeps it (its columns sum to 1);
      at a layer with an exponential normalizer the directions of ``What_j``
      that add a column-constant term (``e_b w^T``, ``b`` the bias coordinate
      on the key side) cancel in ``S``: the scores are *partial*.
    - otherwise a path from the block to the output through unforced nodes
      makes it *observable*.

    The variants change what a collapse forces.  An event at a layer with
    several heads holds in every head.  Under a causal mask, uniform scores
    give the causal average, not ``J/t``: a score collapse leaves the tokens
    distinct (identical tokens stay identical).  With a residual stream
    ``X_i = X_{i-1} + ...`` a score collapse leaves the tokens distinct too,
    ``V_i = 0`` makes ``X_i = X_{i-1}`` (only layer ``i``'s scores are lost:
    their product with ``V_i`` is zero), the tokens are not confined to a
    lower-rank subspace by a low-rank ``V_i``, and a constant coordinate
    survives a layer only when ``V_i = 0``.  With several heads it survives
    only when ``d_i > h_i (d_{i-1} - 1)`` (a functional constant on every
    head's output exists), counting only the heads whose scores still act.
    The tokens of a variant span one image of the previous span per distinct
    attention (:func:`_variant_span`); below the generic span the next
    scores are *partial*.  One-head events (``scores:i:h``, ``values:i:h``)
    leave the layer's scores *partial* while some head is neither collapsed
    nor silenced, *unobservable* when none is; without a mask or residual
    stream a layer whose contributing heads are all collapsed gives equal
    tokens, and a collapsed head's column ``V_{i,h} X J/t``, the same for
    every token, makes a constant coordinate where the live heads leave a
    direction free.  No predicted ranks are claimed for the variants.

    Parameters
    ----------
    graph : networkx.DiGraph
        From :func:`dependency_graph`.
    events : iterable of Event or str
    normalizer : None, str, Normalizer or list of them
        ``None`` uses the architecture's normalizers; otherwise this one (or
        one per layer) is used for the conditions.

    Returns
    -------
    Observability

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> G = dependency_graph(Architecture.uniform(layers=2, width=2, rank=1))
    >>> propagate(G, ["bias"], "softmax").partial
    ['scores:1', 'scores:2']
    >>> propagate(G, ["bias"], "cosh").partial
    []
    >>> propagate(G, ["values:1"]).unobservable
    ['scores:1', 'scores:2']
    >>> R = dependency_graph(Architecture.uniform(layers=2, width=2, rank=1, residual=True))
    >>> propagate(R, ["scores:1"]).observable, propagate(R, ["values:1"]).unobservable
    (['scores:2', 'values'], ['scores:1'])
    """
    arch = _architecture(graph)
    if arch.degenerate:
        raise ShapeError("with one token every attention matrix is the constant 1 and no score is ever "
                         "seen: give tokens >= 2")
    events = _events(arch, events)
    props = _normalizer_properties(graph, normalizer)
    kinds = {e.kind for e in events}
    scores_collapsed = {e.layer: e for e in events if e.kind == SCORE_COLLAPSE and e.whole_layer}
    values_zero = {e.layer: e for e in events if e.kind == VALUE_COLLAPSE and e.whole_layer}
    values_rank = {e.layer: e for e in events if e.kind == VALUE_RANK and e.whole_layer}
    # one-head events: layer -> {head: event}
    head_scores: dict[int, dict[int, Event]] = {}
    head_values: dict[int, dict[int, Event]] = {}  # V_{i,h} = 0
    head_ranks: dict[int, dict[int, Event]] = {}  # V_{i,h} of rank r
    for e in events:
        if not e.whole_layer:
            by_kind = {SCORE_COLLAPSE: head_scores, VALUE_COLLAPSE: head_values, VALUE_RANK: head_ranks}
            by_kind[e.kind].setdefault(e.layer, {})[e.head] = e
    # layer -> the heads that no one-head event collapses or silences
    live_heads = {i: _live_heads(arch, i, head_scores, head_values) for i in range(1, arch.layers + 1)}
    sites = {i: _attention_site(arch, i) for i in range(1, arch.layers + 1)}
    # what each layer's attention loses on a constant coordinate, by block: non-empty exactly when it has biases
    attention_biases = {i: _bias_columns(arch, i, sites[i].attention, arch.widths[i - 1]) for i in sites}
    # layers whose attention has a value bias: V_i X S(A_i) = 0 leaves b_V 1^T (normalized attention)
    value_biased = {i: sites[i].normalized and bool(attention_biases[i].get("values")) for i in sites}
    score_biased = {i: bool(attention_biases[i].get(f"scores:{i}")) for i in sites}
    varying: set = set()  # streams whose constant coordinate is constant over the tokens of an input, not over inputs

    states: dict[str, dict[str, str]] = {n: {} for n in graph.nodes}  # node -> {state: origin node}
    if IDENTICAL_TOKENS in kinds:
        states["input"]["identical"] = "input"
    if BIAS in kinds:
        states["input"]["constant-coordinate"] = "input"
    rank_bound = {0: (arch.widths[0], None)}  # tokens index -> (rank bound of P_i, origin)
    generic_spans = _generic_spans(arch)
    steps = {i: _layer_steps(arch, i) for i in range(1, arch.layers + 1)}
    component_inputs: dict[str, tuple] = {}  # a component's node -> (step, input states, span, generic span)
    causes: dict[int, str] = {}  # tokens index -> why their span is smaller than the generic one (variants)
    previous = "input"
    for i in range(1, arch.layers + 1):
        prev = states[previous]
        # tokens: the attention's output (tokens:i, or attended:i when components follow it in the layer)
        scores, attention, values, tokens = f"scores:{i}", f"attention:{i}", f"values:{i}", _attention_output(arch, i)
        site = sites[i]
        if i in scores_collapsed:
            states[scores]["collapsed"] = scores
        elif "zero" in prev:
            states[scores]["zero"] = prev["zero"]
        elif "identical" in prev:
            states[scores]["column-constant"] = prev["identical"]
        if "collapsed" in states[scores] and score_biased[i] and not {"zero", "identical"} & set(prev):
            # Q_i = 0 with biases leaves A_i = (K_i X + b^K 1^T)^T b^Q 1^T: every column of S(A_i) is the same
            # weight vector, which still reads the keys (not J/t)
            states[attention]["equal-columns"] = scores
        else:
            for state in ("collapsed", "zero", "column-constant"):
                if state in states[scores]:
                    states[attention]["uniform"] = states[scores][state]
                    break
        forced_columns = {"uniform", "equal-columns"} & set(states[attention])  # every query reads the same weights
        if "uniform" not in states[attention] and props[i - 1]["exponential"] \
                and "constant-coordinate" in prev:
            states[attention]["shift-invariant"] = prev["constant-coordinate"]
        if i in values_zero:
            states[values]["zero"] = values
        elif i in values_rank:
            states[values][f"rank<={values_rank[i].rank}"] = values
        for h in head_scores.get(i, {}):
            states[scores][f"collapsed in head {h}"] = scores
        for h in head_values.get(i, {}):
            states[values][f"zero in head {h}"] = values
        for h, e in head_ranks.get(i, {}).items():
            states[values][f"rank<={e.rank} in head {h}"] = values
        stream = "zero" in states[values] and site.tied  # V_i = 0 with a residual stream: X_i = X_{i-1}
        if value_biased[i] and (("zero" in states[values] and not site.tied) or "zero" in prev):
            # V_i X S = 0 leaves b_V 1^T S = b_V 1^T (the columns of S sum to 1): one vector for every token and input
            origin = states[values].get("zero", prev.get("zero"))
            states[tokens]["identical"] = states[tokens]["input-independent"] = origin
        elif ("zero" in states[values] and not site.tied) or "zero" in prev:
            states[tokens]["zero"] = states[values].get("zero", prev.get("zero"))
        else:
            if "input-independent" in prev:  # tokens that do not depend on the input (a component made them)
                states[tokens]["input-independent"] = prev["input-independent"]
            if "identical" in prev:
                states[tokens]["identical"] = prev["identical"]
            elif forced_columns and not site.masked and not site.tied:
                # J/t (or any S with equal columns) makes the tokens equal; the causal average and the residual
                # stream keep them apart
                states[tokens]["identical"] = states[attention][min(forced_columns)]
            elif not site.masked and not site.tied and i in head_scores and not live_heads[i]:
                # every head collapsed or silenced: the collapsed ones add V_{i,h} X J/t, equal tokens
                states[tokens]["identical"] = scores
        bound, origin = rank_bound[i - 1]
        generic = generic_spans[tokens]
        heads = site.heads - len(head_values.get(i, {}))  # the heads that add something (V_{i,h} != 0)
        if arch.is_plain:
            if i in values_rank and values_rank[i].rank < min(bound, generic):
                bound, origin = values_rank[i].rank, values
            bound = min(bound, generic)
        else:
            ranks = {h: values_rank[i].rank for h in range(1, site.heads + 1)} if i in values_rank else \
                {h: e.rank for h, e in head_ranks.get(i, {}).items()}
            bound, origin, cause = _variant_span(arch, i, bound, origin, states, head_scores, head_values,
                                                 live_heads[i], ranks, causes.get(i - 1))
            if cause is not None:
                causes[i] = cause
        rank_bound[i] = (bound, origin)
        if origin is not None and "zero" not in states[tokens]:
            states[tokens][f"rank<={bound}"] = origin
        shared = "uniform" in states[attention]  # forced attention: every head has the same S(A_i)
        # or every head that adds something has its scores collapsed (one-head events)
        shared = shared or (i in head_scores and heads > 0 and not live_heads[i])
        # the heads whose scores still act: without a mask a collapsed head adds V_{i,h} X J/t, the same
        # for every token (under a causal mask it adds the causal average, which varies like a live head's)
        live = len(live_heads[i]) if i in head_scores and not site.masked \
            else heads
        if site.tied:
            # X_{i-1} + V_i X_{i-1} J/t adds a column-constant term; the causal average does not
            keeps_coordinate = stream or ((shared or bool(forced_columns)) and not site.masked)
        else:
            keeps_coordinate = live <= 1 or shared or arch.widths[i] > live * (arch.widths[i - 1] - 1)
        if "constant-coordinate" in prev and "zero" not in states[tokens] and keeps_coordinate and \
                rank_bound[i][0] >= arch.widths[0]:
            states[tokens]["constant-coordinate"] = prev["constant-coordinate"]
            if previous in varying or (site.tied and not stream):
                varying.add(tokens)  # X_{i-1} + V_i X_{i-1} J/t: constant over the tokens, not over the inputs
        elif not site.tied and not site.masked and live < heads and not shared \
                and not {"zero", "identical"} & set(states[tokens]):
            # collapsed heads add a column-constant term: where the live heads' outputs leave a direction
            # of width d_i free, a functional on it reads the same value on every token
            def head_rank(h):
                if i in values_rank:
                    return values_rank[i].rank
                return head_ranks[i][h].rank if h in head_ranks.get(i, {}) else arch.widths[i - 1]

            live_span = sum(min(rank_bound[i - 1][0], arch.widths[i], head_rank(h))
                            for h in live_heads[i])
            if live_span < arch.widths[i]:
                states[tokens]["constant-coordinate"] = scores
        if tokens != f"tokens:{i}":
            # the components after attention: each says what it makes of its input's states and span
            spans = {tokens: rank_bound[i]}
            for step in steps[i]:
                component, output = step["component"], step["output"]
                if step.get("tie"):
                    summed, span = component.observe_tie(
                        (states[step["block_input"]], spans[step["block_input"]][0]),
                        (states[output], spans[output][0]), arch.widths[i])
                    origin = spans[output][1] or spans[step["block_input"]][1]
                    states[output] = dict(summed)
                else:
                    incoming, (span_in, origin) = states[step["input"]], spans[step["input"]]
                    node = step["node"] or output
                    component_inputs[node] = (step, incoming, span_in, generic_spans[step["input"]])
                    states[output] = dict(component.observe_stream(incoming, node))
                    if step["input"] in varying and "constant-coordinate" in states[output]:
                        varying.add(output)
                    span = component.observe_span(span_in, arch.widths[i], incoming)
                    if origin is None and span < generic_spans[output]:
                        origin = incoming.get("zero") or incoming.get("input-independent") or node
                if span >= generic_spans[output]:
                    origin = None
                spans[output] = (span, origin)
            rank_bound[i] = spans[f"tokens:{i}"]
            if rank_bound[i][1] is None:
                causes.pop(i, None)
            elif "zero" not in states[f"tokens:{i}"]:
                states[f"tokens:{i}"][f"rank<={rank_bound[i][0]}"] = rank_bound[i][1]
        previous = f"tokens:{i}"
    if "zero" in states[previous]:
        states["output"]["zero"] = states[previous]["zero"]
    elif "identical" in states[previous]:
        states["output"]["identical"] = states[previous]["identical"]

    def path(source, target):
        return tuple(nx.shortest_path(graph, source, target))

    zero_nodes = {n for n, s in states.items() if "zero" in s and graph.nodes[n]["kind"] in ("tokens", "stream")}
    # V_i = 0 on a residual stream: the attention output V_i X S(A_i) is zero, the stream goes on
    dead_edges = {(f"attention:{i}", _attention_output(arch, i)) for i in values_zero
                  if sites[i].tied or value_biased[i]}
    # V_i = 0 with a value bias and no residual add: the layer outputs b^V_i 1^T whatever its input
    cut_layers = {i for i in values_zero if value_biased[i] and not sites[i].tied}
    for i in cut_layers:
        entering = "input" if i == 1 else f"tokens:{i - 1}"
        dead_edges |= {(entering, f"scores:{i}"), (entering, f"values:{i}")}

    def blocked(node):
        """``(text, trail)``: why every path from ``node`` to the output is cut (a zero stream or a cut layer)."""
        zeros = [n for n in zero_nodes if nx.has_path(graph, node, n)]
        cuts = [i for i in cut_layers if nx.has_path(graph, node, f"values:{i}")]
        first_zero = min(zeros, key=lambda n: graph.nodes[n]["layer"]) if zeros else None
        if first_zero is not None and (not cuts or graph.nodes[first_zero]["layer"] <= min(cuts)):
            return (f"every path to the output passes {first_zero} = 0 ({states[first_zero]['zero']} = 0)",
                    path(node, first_zero))
        i = min(cuts)
        return (f"every path to the output passes layer {i}, whose output b^V_{i} 1^T (V_{i} = 0) does not "
                "depend on its input", path(node, _attention_output(arch, i)))
    dims = None if has_bottleneck(arch) or not arch.is_plain else effective_block_dimensions(arch)
    verdicts = {}
    for i in range(1, arch.layers + 1):
        block, scores, attention = f"scores:{i}", f"scores:{i}", f"attention:{i}"
        ref = None if dims is None else dims[block]
        # What_i, or K_i^T Q_i (K_{i,h}^T Q_{i,h}) where the network has no effective blocks
        layer_scores = naming.layer_scores(i, sites[i].heads, arch.factors_through_effective).text
        if i in scores_collapsed:
            verdicts[block] = BlockVerdict(block, COLLAPSED, (Reason(
                "event", f"the event fixes {scores_collapsed[i].text(arch)}", (scores,)),), None)
            continue
        if "uniform" in states[attention]:
            origin = states[attention]["uniform"]
            why = ("its scores are constant in each column (zero tokens enter the layer)"
                   if "zero" in states[scores] else
                   "its scores are constant in each column (identical tokens enter the layer)")
            verdicts[block] = BlockVerdict(block, UNOBSERVABLE, (Reason(
                "uniform-attention", f"S(A_{i}) = J/t whatever {layer_scores} is: {why}",
                path(origin, attention)),), 0)
            continue
        live = nx.restricted_view(graph, zero_nodes, dead_edges)
        if dead_edges and not nx.has_path(live, scores, "output") and (attention, _attention_output(arch, i)) \
                in dead_edges:
            text = (f"V_{i} = 0: the layer outputs b^V_{i} 1^T S(A_{i}) = b^V_{i} 1^T (the columns of S sum to 1), "
                    f"whatever S(A_{i}) is" if value_biased[i] else
                    f"V_{i} = 0: the layer adds nothing to the residual stream, so S(A_{i}) is multiplied by zero")
            verdicts[block] = BlockVerdict(block, UNOBSERVABLE, (Reason(
                "zero-values", text, (scores, attention, _attention_output(arch, i))),), 0)
            continue
        if not nx.has_path(live, scores, "output"):
            text, trail = blocked(scores)
            verdicts[block] = BlockVerdict(block, UNOBSERVABLE, (Reason("zero-tokens", text, trail),), 0)
            continue
        dead = _dead_head_reasons(arch, i, head_scores, head_values, scores)
        if dead and not live_heads[i]:
            verdicts[block] = BlockVerdict(block, UNOBSERVABLE, tuple(dead), 0)
            continue
        reasons, predicted = list(dead), (None if dead else ref)
        bound, origin = rank_bound[i - 1]
        if origin is not None:
            effective = min(arch.score_ranks[i - 1], bound)
            why = causes.get(i - 1) or f"{graph.nodes[origin]['params'][0]} has lower rank"
            reasons.append(Reason(
                "low-rank-values",
                f"the tokens entering layer {i} lie in a {bound}-dimensional subspace "
                f"({why}): only the compression of W_{i} to it reaches the output",
                path(origin, scores)))
            predicted = rank_matrix_dimension(bound, bound, effective) if dims is not None else None
        before_node = "input" if i == 1 else f"tokens:{i - 1}"
        before = states[before_node]
        biased = (attention_biases[i].get(block, 0)
                  if "constant-coordinate" in before and before_node not in varying else 0)
        if biased:
            reasons.append(Reason(
                "bias-column",
                f"the tokens entering layer {i} keep a constant coordinate: the columns of Q_{i} and K_{i} on it "
                f"add the same constants as their biases b^Q_{i}, b^K_{i}, so only the sums reach the output "
                f"({biased} direction(s))", path(before["constant-coordinate"], scores)))
        elif "shift-invariant" in states[attention]:  # with biases b^K_i already carries what it adds
            b = min(arch.score_ranks[i - 1], _bottleneck(arch, i - 1))
            reasons.append(Reason(
                "shift-invariance",
                f"s_{i} is exponential and the tokens keep a constant coordinate: the {b} direction(s) "
                f"e_b w^T of {layer_scores} add a column-constant term, and S(A + 1 u^T) = S(A)",
                path(states[attention]["shift-invariant"], scores) + (attention,),
                condition=f"s_{i} exponential (s(x) = C e^(ax))"))
            if origin is None and ref is not None:
                predicted = ref - b
        if reasons:
            if len(reasons) > 1:
                predicted = None  # no formula for both losses at once
            verdicts[block] = BlockVerdict(block, PARTIAL, tuple(reasons), predicted)
            continue
        verdicts[block] = BlockVerdict(block, OBSERVABLE, (Reason(
            "live-path", "a path to the output through nodes that nothing forces",
            path(scores, "output")),), ref)
    live = nx.restricted_view(graph, zero_nodes, dead_edges)
    if component_inputs:  # what the rest of the network reads of each stream, at a generic point and on the set
        generic_reach = _reaches(arch, {i: _bottleneck(arch, i - 1) for i in range(1, arch.layers + 1)})
        value_ranks = {}
        for i in range(1, arch.layers + 1):
            for h in range(1, sites[i].heads + 1):
                if i in values_zero or h in head_values.get(i, {}):
                    value_ranks[(i, h)] = 0
                elif i in values_rank or h in head_ranks.get(i, {}):
                    value_ranks[(i, h)] = (values_rank[i] if i in values_rank else head_ranks[i][h]).rank
        # a collapse of biased scores leaves A = (K X + b_K 1^T)^T b_Q 1^T: the weights still read the keys
        keyed = {i for i in range(1, arch.layers + 1) if "equal-columns" in states[f"attention:{i}"]}
        reach = _reaches(arch, {i: rank_bound[i - 1][0] for i in range(1, arch.layers + 1)},
                         uniform={i for i in range(1, arch.layers + 1) if "uniform" in states[f"attention:{i}"]},
                         keyed=keyed,
                         value_ranks=value_ranks,
                         dead_heads={i: set(head_scores.get(i, {})) | set(head_values.get(i, {}))
                                     for i in range(1, arch.layers + 1)})
    for node, (step, incoming, span, generic) in component_inputs.items():
        if step["spec"] is None:
            continue  # a computing component without parameters: no block of its own
        block = step["spec"]["block"]
        status, rule, text = step["component"].observe_verdict(incoming, span, generic, reach[step["output"]],
                                                               generic_reach[step["output"]])
        origin = incoming.get("zero") or incoming.get("input-independent")
        layer = graph.nodes[node]["layer"]
        lost = (_bias_columns(arch, layer, step["component"], arch.widths[layer]).get(block, 0)
                if "constant-coordinate" in incoming and step["input"] not in varying else 0)
        if lost and status == OBSERVABLE:
            status, rule, text = PARTIAL, "bias-column", (
                "its input keeps a constant coordinate: the columns of its weights on it add the same constants "
                f"as their biases, so only the sums reach the output ({lost} direction(s))")
            origin = incoming["constant-coordinate"]
        if status != UNOBSERVABLE and not nx.has_path(live, node, "output"):
            text, trail = blocked(node)
            status, rule = UNOBSERVABLE, "zero-tokens"
        elif status == OBSERVABLE:
            trail = path(node, "output")
        else:  # from what forces the block's input (a zero, a fixed vector, a subspace) to the block
            origin = origin or next((o for state, o in incoming.items() if state.startswith("rank<=")), None)
            trail = path(origin, node) if origin and nx.has_path(graph, origin, node) else (step["input"], node)
        verdicts[block] = BlockVerdict(block, status, (Reason(rule, text, trail),),
                                       None if status != UNOBSERVABLE else 0)
    value_events = [e for e in events if e.kind in (VALUE_COLLAPSE, VALUE_RANK)]
    if value_events:
        if arch.factors_through_effective:
            text = "; ".join(("the event fixes P = 0" if e.kind == VALUE_COLLAPSE else
                              f"the event constrains P to rank <= {e.rank}") for e in value_events)
        else:  # no combined value map P: the event's own value maps
            text = "; ".join(f"the event fixes {e.text(arch)}" if e.kind == VALUE_COLLAPSE else
                             f"the event sets {e.text(arch)}" for e in value_events)
        verdicts["values"] = BlockVerdict("values", COLLAPSED, tuple(
            Reason("event", text, (e.node,)) for e in value_events), None)
    elif _shared_value_reasons(arch, states) + _biased_value_reasons(states, attention_biases, varying):
        verdicts["values"] = BlockVerdict("values", PARTIAL, tuple(
            _shared_value_reasons(arch, states) + _biased_value_reasons(states, attention_biases, varying)), None)
    else:
        verdicts["values"] = BlockVerdict("values", OBSERVABLE, (Reason(
            "live-path", ("F = P X M_l: the value path to the output is never forced "
                          "(attention columns sum to 1)") if arch.is_plain else
            "the value path to the output is never forced (attention columns sum to 1)",
            path(f"values:{arch.layers}", "output")),),
            None if dims is None else dims["values"])

    normal = {}
    for i, event in scores_collapsed.items():
        if arch.is_plain:
            # identical tokens, an earlier score collapse or any value collapse hide layer i already
            hidden_anyway = ("identical" in states["input"] or bool(values_zero)
                             or any(j < i for j in scores_collapsed))
        else:
            # the variants: hidden when identical or zero tokens enter layer i, or its V_i = 0 on a
            # residual stream, or a later V_j = 0 without one (the output is 0)
            before = states["input" if i == 1 else f"tokens:{i - 1}"]
            hidden_anyway = ("identical" in before or "zero" in before or "zero" in states["output"]
                             or (sites[i].tied and i in values_zero) or any(j >= i for j in cut_layers))
        # with query and key biases the scores do not vanish on the set (A = (K X + b^K 1^T)^T b^Q 1^T): s' is not 0
        normal[f"scores:{i}"] = 0 if hidden_anyway or (props[i - 1]["k"] >= 2 and not score_biased[i]) else "positive"
    for i, collapsed_heads in head_scores.items():
        before = states["input" if i == 1 else f"tokens:{i - 1}"]
        # hidden when its head adds nothing too (V_{i,h} = 0), or as a whole layer's would be
        hidden_anyway = ("identical" in before or "zero" in before or "zero" in states["output"]
                         or (sites[i].tied and i in values_zero) or any(j >= i for j in cut_layers)
                         or all(h in head_values.get(i, {}) for h in collapsed_heads))
        normal[f"scores:{i}"] = 0 if hidden_anyway or (props[i - 1]["k"] >= 2 and not score_biased[i]) else "positive"
    # a sign flip of each seen head of an even layer (a collapsed or silenced head's flip stays in its component)
    seen = [(j, h) for j in range(1, arch.layers + 1)
            if verdicts[f"scores:{j}"].status in (OBSERVABLE, PARTIAL) and props[j - 1]["even"]
            for h in live_heads[j]]
    notes = []
    if BIAS in kinds:
        quiet = [j for j in range(1, arch.layers + 1) if not props[j - 1]["exponential"]
                 and verdicts[f"scores:{j}"].status == OBSERVABLE]
        if quiet:
            notes.append("the constant coordinate hides nothing at layers "
                         f"{quiet} (not exponential); with an exponential normalizer there it would "
                         "hide the directions e_b w^T")
    collapses = list(scores_collapsed.items()) + [(e.layer, e) for by_head in head_scores.values()
                                                  for e in by_head.values()]
    for i, event in collapses:
        k = props[i - 1]["k"]
        collapse = event.text(arch)
        notes.append(f"leaving {collapse} is seen at first order only when k = 1 (here k = {k}); "
                     f"for k >= 2, s'(0) = 0 puts the normal directions in the kernel")
        if props[i - 1]["even"]:
            scores = (naming.layer_scores(i, sites[i].heads, arch.factors_through_effective).text
                      if event.whole_layer else f"K_{{{i},{event.head}}}^T Q_{{{i},{event.head}}}")
            notes.append(f"s_{i} is even: {collapse} is fixed by the sign flip {scores} -> -{scores}, "
                         "where the two sheets of the fiber meet")
    marked = graph.copy()
    for n, s in states.items():
        marked.nodes[n]["state"] = tuple(sorted(s))
    return Observability(
        architecture=arch.to_json(), events=events, normalizers=tuple(props),
        states={n: tuple(sorted(s)) for n, s in states.items()}, verdicts={b: verdicts[b] for b in _blocks(arch)},
        normal_first_order=normal, sign_components=2 ** len(seen),
        generic_sign_components=2 ** sum(sites[i].heads for i, p in enumerate(props, start=1) if p["even"]),
        notes=tuple(notes),
        graph=marked)




def minimal_collapses(graph: nx.DiGraph, block: str, max_size: int = 2, level: str = UNOBSERVABLE,
                      normalizer=None, candidates=None) -> list[tuple[Event, ...]]:
    """The smallest sets of events that would hide ``block`` (by propagation).

    Every subset of ``candidates`` (default :func:`all_events`) of at most
    ``max_size`` events is propagated; a set is kept when it hides the block
    and contains no smaller set that does.  The block's own event (e.g.
    ``scores:2`` for the block ``scores:2``) fixes it and does not count as
    hiding it.

    Parameters
    ----------
    graph : networkx.DiGraph
    block : str
        ``scores:i`` or ``values``.
    max_size : int
    level : {"unobservable", "partial"}
        ``"partial"`` also counts sets that hide part of the block.
    normalizer : optional, as in :func:`propagate`
    candidates : iterable of Event, optional

    Returns
    -------
    list of tuple of Event, smallest first.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> G = dependency_graph(Architecture.uniform(layers=2, width=2, rank=1))
    >>> [[e.name for e in s] for s in minimal_collapses(G, "scores:2")]
    [['scores:1'], ['values:1'], ['values:2'], ['identical-tokens']]
    >>> [[e.name for e in s] for s in minimal_collapses(G, "scores:1", level="partial")]
    [['values:1'], ['values:2'], ['identical-tokens'], ['bias']]
    >>> minimal_collapses(G, "values")
    []
    """
    arch = _architecture(graph)
    if block not in _blocks(arch):
        raise SymattnError(f"block {block!r} is not one of {', '.join(_blocks(arch))}")
    if level not in (UNOBSERVABLE, PARTIAL):
        raise SymattnError(f"level must be 'unobservable' or 'partial', got {level!r}")
    hiding = {UNOBSERVABLE} if level == UNOBSERVABLE else {UNOBSERVABLE, PARTIAL}
    pool = [parse_event(e).validate(arch) for e in (candidates if candidates is not None else all_events(arch))]
    found: list[tuple[Event, ...]] = []
    for size in range(1, max_size + 1):
        for subset in itertools.combinations(pool, size):
            if any(set(f) <= set(subset) for f in found):
                continue
            try:
                verdict = propagate(graph, subset, normalizer)
            except SymattnError:
                continue  # contradictory events
            if verdict.verdicts[block].status in hiding:
                found.append(subset)
    return found
