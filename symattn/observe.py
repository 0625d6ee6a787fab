"""Observability after collapse: a dependency graph, its verdicts, and exact ranks that prove them.

The network is a directed graph (:func:`dependency_graph`): an edge ``u -> v``
means *v is computed from u*.  Nodes are the input, each layer's scores
(holding ``Q_i, K_i``, effectively ``What_i``), attention ``S(A_i)``, values
(holding ``V_i``) and tokens ``X_i``, and the output.

An *event* (:class:`Event`) is a collapse of parameters or a special class
of inputs: score collapse ``What_i = 0``, value collapse ``V_i = 0``, a value
map ``V_i`` of lower rank, inputs with identical tokens, inputs with a
constant (bias) coordinate.  :func:`propagate` marks what the events force
(uniform attention, identical or zero tokens, tokens in a subspace) and says
for every effective block -- ``scores:1 .. scores:l`` and ``values`` -- whether
the output still sees it (*observable*), sees part of it (*partial*) or does
not see it at all (*unobservable*), each with its reason as a path in the
graph.  The normalizer enters through three conditions: first nonconstant
degree ``k``, evenness, and exponential type (``S(A + 1 u^T) = S(A)``).

Every verdict is checked by an exact rank (:func:`rank_check`): the native
Jacobian at a generic point of the collapsed set, over ``GF(p)((eps))`` along
the input scaling ``X -> eps X`` (scores then vanish at ``eps = 0``, so the
series engine of :mod:`symattn.algebra.modseries` applies to every
normalizer with rational Taylor coefficients), block by block.
:func:`exceptional_fibers` goes through all single and pairwise events.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.observe import dependency_graph, propagate, score_collapse
>>> arch = Architecture.uniform(layers=3, width=2, rank=1, tokens=3, normalizer="softmax")
>>> graph = dependency_graph(arch)
>>> graph.nodes["scores:2"]["params"]
('Q_2', 'K_2')
>>> verdict = propagate(graph, [score_collapse(1)])
>>> verdict.unobservable, verdict.observable, verdict.collapsed
(['scores:2', 'scores:3'], ['values'], ['scores:1'])
>>> verdict.verdicts["scores:3"].reasons[0].path[-3:]
('tokens:2', 'scores:3', 'attention:3')
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Iterable

import networkx as nx
import numpy as np

from .adaptive import DEEPEN, GROW_BANK, Growth, Step, adapt, doubled, grown_bank
from .algebra.linalg import matmul_mod
from .effective import (
    effective_block_dimensions,
    has_bottleneck,
    effective_dimension,
    rank_matrix_dimension,
)
from ._format import FormattedResult, Section, latex_escape
from .errors import DomainError, NormalizerError, ShapeError, SymattnError
from .curves import input_scaling
from .jacobian import (
    DEFAULT_PRIMES,
    check_prime,
    curve_series,
    generator,
    jacobian_from_series,
    jacobian_series,
    parameter_columns,
    random_bank,
    random_point,
)
from .model import Architecture, require_architecture, require_seed
from .normalizers import as_normalizer

__all__ = [
    "Event",
    "clear_rank_cache",
    "first_rank_memory",
    "graph_rank_disagreements",
    "score_collapse",
    "value_collapse",
    "value_rank",
    "identical_tokens",
    "bias_coordinate",
    "parse_event",
    "all_events",
    "dependency_graph",
    "Reason",
    "BlockVerdict",
    "Observability",
    "propagate",
    "minimal_collapses",
    "RankCheck",
    "rank_check",
    "contact_orders",
    "ContactOrders",
    "ObserveResult",
    "observe",
    "FiberRow",
    "ExceptionalFibers",
    "exceptional_fibers",
    "to_dot",
    "to_graphml",
    "write_graphml",
    "to_tikz",
    "draw",
    "export_graph",
]

SCORE_COLLAPSE = "score_collapse"
VALUE_COLLAPSE = "value_collapse"
VALUE_RANK = "value_rank"
IDENTICAL_TOKENS = "identical_tokens"
BIAS = "bias"
_KINDS = (SCORE_COLLAPSE, VALUE_COLLAPSE, VALUE_RANK, IDENTICAL_TOKENS, BIAS)

UNOBSERVABLE = "unobservable"
PARTIAL = "partial"
OBSERVABLE = "observable"
COLLAPSED = "collapsed"
_STATUSES = (UNOBSERVABLE, PARTIAL, OBSERVABLE, COLLAPSED)


# -- events ---------------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class Event:
    """A collapse of parameters or a special class of inputs.

    Attributes
    ----------
    kind : str
        ``"score_collapse"`` (``What_i = 0``, realized by ``Q_i = 0``),
        ``"value_collapse"`` (``V_i = 0``), ``"value_rank"`` (``V_i`` of rank
        ``rank``), ``"identical_tokens"`` (inputs ``X = x 1^T``) or ``"bias"``
        (the last input coordinate is the same for every token).
    layer : int or None
        The layer of a parameter event.
    rank : int or None
        The rank of ``V_i`` for ``"value_rank"``.

    Examples
    --------
    >>> value_rank(1, 1).name, score_collapse(2).name, bias_coordinate().name
    ('value-rank:1:1', 'scores:2', 'bias')
    >>> parse_event("value-rank:2:1") == value_rank(2, 1)
    True
    """

    kind: str
    layer: int | None = None
    rank: int | None = None

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise SymattnError(f"unknown event kind {self.kind!r}; kinds are {', '.join(_KINDS)}")

    @property
    def name(self) -> str:
        """Short name, as the CLI writes it: ``scores:2``, ``values:1``, ``value-rank:1:1``, ..."""
        if self.kind == SCORE_COLLAPSE:
            return f"scores:{self.layer}"
        if self.kind == VALUE_COLLAPSE:
            return f"values:{self.layer}"
        if self.kind == VALUE_RANK:
            return f"value-rank:{self.layer}:{self.rank}"
        return "identical-tokens" if self.kind == IDENTICAL_TOKENS else "bias"

    @property
    def block(self) -> str | None:
        """The effective block the event fixes or constrains (``None`` for input events)."""
        if self.kind == SCORE_COLLAPSE:
            return f"scores:{self.layer}"
        if self.kind in (VALUE_COLLAPSE, VALUE_RANK):
            return "values"
        return None

    @property
    def node(self) -> str:
        """The graph node where the event happens."""
        if self.kind == SCORE_COLLAPSE:
            return f"scores:{self.layer}"
        if self.kind in (VALUE_COLLAPSE, VALUE_RANK):
            return f"values:{self.layer}"
        return "input"

    @property
    def on_parameters(self) -> bool:
        return self.kind in (SCORE_COLLAPSE, VALUE_COLLAPSE, VALUE_RANK)

    def describe(self) -> str:
        """A sentence for tables and reasons."""
        i = self.layer
        return {
            SCORE_COLLAPSE: f"score collapse at layer {i} (What_{i} = 0, realized by Q_{i} = 0)",
            VALUE_COLLAPSE: f"value collapse at layer {i} (V_{i} = 0)",
            VALUE_RANK: f"value map V_{i} of rank {self.rank}",
            IDENTICAL_TOKENS: "inputs with identical tokens (X = x 1^T)",
            BIAS: "inputs with a constant (bias) coordinate (last row of X constant)",
        }[self.kind]

    def latex(self) -> str:
        i = self.layer
        return {
            SCORE_COLLAPSE: rf"\widehat W_{{{i}}} = 0",
            VALUE_COLLAPSE: rf"V_{{{i}}} = 0",
            VALUE_RANK: rf"\operatorname{{rank}} V_{{{i}}} = {self.rank}",
            IDENTICAL_TOKENS: r"X = x\,\mathbf 1^\top",
            BIAS: r"X_{d_0\,\cdot} = c\,\mathbf 1^\top",
        }[self.kind]

    def validate(self, arch: Architecture) -> "Event":
        """Check the event against an architecture; return it.

        Raises
        ------
        ShapeError
            For a layer outside ``1..l`` or a rank outside ``1 .. min(d_i, d_{i-1}) - 1``.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> value_rank(1, 2).validate(Architecture.uniform(layers=1, width=2))
        Traceback (most recent call last):
        ...
        symattn.errors.ShapeError: value-rank:1:2: V_1 is 2 x 2, so a lower rank is 1..1 (rank 0 is value collapse values:1)
        """
        if self.on_parameters and not (isinstance(self.layer, int) and 1 <= self.layer <= arch.layers):
            raise ShapeError(f"event {self.name}: the architecture has layers 1..{arch.layers}")
        if self.kind == VALUE_RANK:
            rows, cols = arch.block_shapes(self.layer)["V"]
            top = min(rows, cols) - 1
            if not (isinstance(self.rank, int) and 1 <= self.rank <= top):
                allowed = f"1..{top}" if top >= 1 else "none"
                raise ShapeError(
                    f"{self.name}: V_{self.layer} is {rows} x {cols}, so a lower rank is {allowed} "
                    f"(rank 0 is value collapse values:{self.layer})")
        if self.kind == BIAS and arch.widths[0] < 2:
            raise ShapeError("a bias coordinate needs d_0 >= 2 (with d_0 = 1 the tokens are identical: "
                             "use identical-tokens)")
        return self


def score_collapse(layer: int) -> Event:
    """``What_i = 0`` at ``layer`` (realized by ``Q_i = 0``).

    Examples
    --------
    >>> score_collapse(1).describe()
    'score collapse at layer 1 (What_1 = 0, realized by Q_1 = 0)'
    """
    return Event(SCORE_COLLAPSE, int(layer))


def value_collapse(layer: int) -> Event:
    """``V_i = 0`` at ``layer``.

    Examples
    --------
    >>> value_collapse(2).block
    'values'
    """
    return Event(VALUE_COLLAPSE, int(layer))


def value_rank(layer: int, rank: int) -> Event:
    """``V_i`` of rank ``rank`` (below its generic rank).

    Examples
    --------
    >>> value_rank(1, 1).describe()
    'value map V_1 of rank 1'
    """
    return Event(VALUE_RANK, int(layer), int(rank))


def identical_tokens() -> Event:
    """Inputs whose tokens are all equal, ``X = x 1^T``.

    Examples
    --------
    >>> identical_tokens().node
    'input'
    """
    return Event(IDENTICAL_TOKENS)


def bias_coordinate() -> Event:
    """Inputs whose last coordinate is the same for every token (a bias feature).

    Examples
    --------
    >>> bias_coordinate().on_parameters
    False
    """
    return Event(BIAS)


def parse_event(text) -> Event:
    """An event from its short name: ``scores:I``, ``values:I``, ``value-rank:I:R``, ``identical-tokens``, ``bias``.

    Events pass through unchanged.

    Examples
    --------
    >>> parse_event("scores:3")
    Event(kind='score_collapse', layer=3, rank=None)
    >>> parse_event("keys:1")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: cannot read the event 'keys:1'; write scores:I, values:I, value-rank:I:R, identical-tokens or bias
    """
    if isinstance(text, Event):
        return text
    message = (f"cannot read the event {text!r}; write scores:I, values:I, value-rank:I:R, "
               "identical-tokens or bias")
    if not isinstance(text, str):
        raise SymattnError(message)
    parts = text.strip().lower().replace("_", "-").split(":")
    try:
        if parts[0] == "scores" and len(parts) == 2:
            return score_collapse(int(parts[1]))
        if parts[0] == "values" and len(parts) == 2:
            return value_collapse(int(parts[1]))
        if parts[0] == "value-rank" and len(parts) == 3:
            return value_rank(int(parts[1]), int(parts[2]))
    except ValueError:
        raise SymattnError(message) from None
    if parts == ["identical-tokens"]:
        return identical_tokens()
    if parts == ["bias"]:
        return bias_coordinate()
    raise SymattnError(message)


def _events(arch: Architecture, events) -> tuple[Event, ...]:
    out = []
    for e in events or ():
        event = parse_event(e).validate(arch)
        if event not in out:
            out.append(event)
    values = [e for e in out if e.kind in (VALUE_COLLAPSE, VALUE_RANK)]
    layers = [e.layer for e in values]
    if len(set(layers)) != len(layers):
        raise SymattnError("two value events at the same layer contradict each other: "
                           + ", ".join(e.name for e in values))
    return tuple(sorted(out))


def all_events(arch: Architecture) -> list[Event]:
    """Every single event of the architecture: collapses per layer, lower value ranks, input events.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> [e.name for e in all_events(Architecture.uniform(layers=2, width=2))]
    ['scores:1', 'scores:2', 'values:1', 'values:2', 'value-rank:1:1', 'value-rank:2:1', 'identical-tokens', 'bias']
    """
    arch = require_architecture(arch)
    out = [score_collapse(i) for i in range(1, arch.layers + 1)]
    out += [value_collapse(i) for i in range(1, arch.layers + 1)]
    for i in range(1, arch.layers + 1):
        rows, cols = arch.block_shapes(i)["V"]
        out += [value_rank(i, r) for r in range(1, min(rows, cols))]
    out.append(identical_tokens())
    if arch.widths[0] >= 2:
        out.append(bias_coordinate())
    return out


# -- the dependency graph ------------------------------------------------------------------
def _blocks(layers: int) -> list[str]:
    return [f"scores:{i}" for i in range(1, layers + 1)] + ["values"]


def dependency_graph(arch: Architecture) -> nx.DiGraph:
    """The network as a directed graph: an edge ``u -> v`` means *v is computed from u*.

    Nodes: ``input`` (``X = X_0``); for each layer ``i``: ``scores:i``
    (``A_i = X_{i-1}^T K_i^T Q_i X_{i-1}``, holds ``Q_i, K_i``, effective block
    ``What_i``), ``attention:i`` (``S(A_i)``, carries the normalizer's ``k``,
    evenness and exponential type), ``values:i`` (``V_i X_{i-1}``, holds
    ``V_i``, part of the effective block ``P``), ``tokens:i`` (``X_i``); and
    ``output`` (``F = X_l``).  Node attributes: ``kind``, ``layer``,
    ``params`` (the native parameters held), ``block`` (the effective block),
    ``label`` and ``latex``.  The graph attribute ``architecture`` is the
    :class:`~symattn.model.Architecture`.

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
    """
    arch = require_architecture(arch)
    G = nx.DiGraph(architecture=arch, name=f"symattn dependency graph: {arch.describe()}")
    d0, t = arch.input_shape
    G.add_node("input", kind="input", layer=0, params=(), block="", label="X",
               latex="X", shape=(d0, t))
    previous = "input"
    for i in range(1, arch.layers + 1):
        n = arch.normalizers[i - 1]
        G.add_node(f"scores:{i}", kind="scores", layer=i, params=(f"Q_{i}", f"K_{i}"), block=f"scores:{i}",
                   effective=f"What_{i}", label=f"A_{i}", latex=rf"A_{{{i}}}", shape=(t, t))
        attrs = dict(kind="attention", layer=i, params=(), block="", label=f"S(A_{i})",
                     latex=rf"S(A_{{{i}}})", shape=(t, t), normalizer=n.name,
                     lightning=bool(n.is_lightning))
        if not n.is_lightning:
            attrs.update(k=int(n.k), even=bool(n.is_even), exponential=bool(n.is_exponential))
        G.add_node(f"attention:{i}", **attrs)
        G.add_node(f"values:{i}", kind="values", layer=i, params=(f"V_{i}",), block="values",
                   effective="P", label=f"V_{i} X_{i - 1}", latex=rf"V_{{{i}}} X_{{{i - 1}}}",
                   shape=(arch.widths[i], t))
        G.add_node(f"tokens:{i}", kind="tokens", layer=i, params=(), block="", label=f"X_{i}",
                   latex=rf"X_{{{i}}}", shape=(arch.widths[i], t))
        G.add_edge(previous, f"scores:{i}")
        G.add_edge(f"scores:{i}", f"attention:{i}")
        G.add_edge(previous, f"values:{i}")
        G.add_edge(f"values:{i}", f"tokens:{i}")
        G.add_edge(f"attention:{i}", f"tokens:{i}")
        previous = f"tokens:{i}"
    G.add_node("output", kind="output", layer=arch.layers + 1, params=(), block="", label="F",
               latex=r"F_\theta(X)", shape=(arch.widths[-1], t))
    G.add_edge(previous, "output")
    return G


def _architecture(graph: nx.DiGraph) -> Architecture:
    arch = graph.graph.get("architecture")
    if not isinstance(arch, Architecture):
        raise SymattnError("this graph has no architecture: build it with dependency_graph(arch)")
    return arch


# -- propagation ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Reason:
    """Why a block has its verdict: a rule, a sentence, and a directed path in the dependency graph.

    Rules and their paths: ``event`` (the event's node), ``uniform-attention``
    (from the event that forces it to the uniform ``attention:j``),
    ``zero-tokens`` (from the block to the first zero ``tokens:i``),
    ``low-rank-values`` (from the lower-rank ``values:i`` to the block),
    ``shift-invariance`` (from the input to ``attention:j``), ``live-path``
    (from the block to the output).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> G = dependency_graph(Architecture.uniform(layers=2, width=2, tokens=3))
    >>> reason = propagate(G, ["scores:1"]).verdicts["scores:2"].reasons[0]
    >>> reason.rule, reason.condition
    ('uniform-attention', 'every normalizer')
    >>> reason.path
    ('scores:1', 'attention:1', 'tokens:1', 'scores:2', 'attention:2')
    """

    rule: str
    text: str
    path: tuple
    condition: str = "every normalizer"

    def to_json(self) -> dict:
        return {"rule": self.rule, "text": self.text, "path": list(self.path), "condition": self.condition}


@dataclass(frozen=True)
class BlockVerdict:
    """The verdict on one effective block: status, reasons, predicted rank of its columns.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> G = dependency_graph(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> softmax = propagate(G, ["bias"]).verdicts["scores:1"]
    >>> softmax.block, softmax.status, softmax.predicted_rank, softmax.reasons[0].rule
    ('scores:1', 'partial', 2, 'shift-invariance')
    >>> cosh = propagate(G, ["bias"], "cosh").verdicts["scores:1"]
    >>> cosh.status, cosh.predicted_rank
    ('observable', 3)
    """

    block: str
    status: str
    reasons: tuple
    predicted_rank: int | None = None

    def to_json(self) -> dict:
        return {"block": self.block, "status": self.status, "predicted_rank": self.predicted_rank,
                "reasons": [r.to_json() for r in self.reasons]}


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


def _bottleneck(arch: Architecture, upto: int) -> int:
    """Generic rank bound of ``P_upto = V_upto ... V_1`` (``P_0 = I``)."""
    return min(arch.widths[: upto + 1])


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
        Node -> tuple of forced states (``uniform``, ``identical``, ``zero``,
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
        ``2^(even layers whose scores are still seen)`` (generic: ``2^(even layers)``).
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
        lines.append(f"- events: {', '.join(e.describe() for e in self.events) or 'none'}")
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
    """
    arch = _architecture(graph)
    if arch.degenerate:
        raise ShapeError("with one token every attention matrix is the constant 1 and no score is ever "
                         "seen: give tokens >= 2")
    events = _events(arch, events)
    props = _normalizer_properties(graph, normalizer)
    kinds = {e.kind for e in events}
    scores_collapsed = {e.layer: e for e in events if e.kind == SCORE_COLLAPSE}
    values_zero = {e.layer: e for e in events if e.kind == VALUE_COLLAPSE}
    values_rank = {e.layer: e for e in events if e.kind == VALUE_RANK}

    states: dict[str, dict[str, str]] = {n: {} for n in graph.nodes}  # node -> {state: origin node}
    if IDENTICAL_TOKENS in kinds:
        states["input"]["identical"] = "input"
    if BIAS in kinds:
        states["input"]["constant-coordinate"] = "input"
    rank_bound = {0: (arch.widths[0], None)}  # tokens index -> (rank bound of P_i, origin)
    previous = "input"
    for i in range(1, arch.layers + 1):
        prev = states[previous]
        scores, attention, values, tokens = f"scores:{i}", f"attention:{i}", f"values:{i}", f"tokens:{i}"
        if i in scores_collapsed:
            states[scores]["collapsed"] = scores
        elif "zero" in prev:
            states[scores]["zero"] = prev["zero"]
        elif "identical" in prev:
            states[scores]["column-constant"] = prev["identical"]
        for state in ("collapsed", "zero", "column-constant"):
            if state in states[scores]:
                states[attention]["uniform"] = states[scores][state]
                break
        if "uniform" not in states[attention] and props[i - 1]["exponential"] \
                and "constant-coordinate" in prev:
            states[attention]["shift-invariant"] = prev["constant-coordinate"]
        if i in values_zero:
            states[values]["zero"] = values
        elif i in values_rank:
            states[values][f"rank<={values_rank[i].rank}"] = values
        if "zero" in states[values] or "zero" in prev:
            states[tokens]["zero"] = states[values].get("zero", prev.get("zero"))
        else:
            if "identical" in prev:
                states[tokens]["identical"] = prev["identical"]
            elif "uniform" in states[attention]:
                states[tokens]["identical"] = states[attention]["uniform"]
        bound, origin = rank_bound[i - 1]
        generic = _bottleneck(arch, i)
        if i in values_rank and values_rank[i].rank < min(bound, generic):
            bound, origin = values_rank[i].rank, values
        bound = min(bound, generic)
        rank_bound[i] = (bound, origin)
        if origin is not None and "zero" not in states[tokens]:
            states[tokens][f"rank<={bound}"] = origin
        if "constant-coordinate" in prev and "zero" not in states[tokens] and \
                rank_bound[i][0] >= arch.widths[0]:
            states[tokens]["constant-coordinate"] = prev["constant-coordinate"]
        previous = tokens
    if "zero" in states[previous]:
        states["output"]["zero"] = states[previous]["zero"]
    elif "identical" in states[previous]:
        states["output"]["identical"] = states[previous]["identical"]

    def path(source, target):
        return tuple(nx.shortest_path(graph, source, target))

    zero_nodes = {n for n, s in states.items() if "zero" in s and graph.nodes[n]["kind"] == "tokens"}
    dims = None if has_bottleneck(arch) else effective_block_dimensions(arch)
    verdicts = {}
    for i in range(1, arch.layers + 1):
        block, scores, attention = f"scores:{i}", f"scores:{i}", f"attention:{i}"
        ref = None if dims is None else dims[block]
        if i in scores_collapsed:
            verdicts[block] = BlockVerdict(block, COLLAPSED, (Reason(
                "event", f"the event fixes What_{i} = 0", (scores,)),), None)
            continue
        if "uniform" in states[attention]:
            origin = states[attention]["uniform"]
            why = ("its scores are constant in each column (zero tokens enter the layer)"
                   if "zero" in states[scores] else
                   "its scores are constant in each column (identical tokens enter the layer)")
            verdicts[block] = BlockVerdict(block, UNOBSERVABLE, (Reason(
                "uniform-attention", f"S(A_{i}) = J/t whatever What_{i} is: {why}",
                path(origin, attention)),), 0)
            continue
        live = graph.subgraph(n for n in graph.nodes if n not in zero_nodes)
        if not nx.has_path(live, scores, "output"):
            blocker = min((n for n in zero_nodes if nx.has_path(graph, scores, n)),
                          key=lambda n: graph.nodes[n]["layer"])
            origin = states[blocker]["zero"]
            verdicts[block] = BlockVerdict(block, UNOBSERVABLE, (Reason(
                "zero-tokens", f"every path to the output passes {blocker} = 0 ({origin} = 0)",
                path(scores, blocker)),), 0)
            continue
        reasons, predicted = [], ref
        bound, origin = rank_bound[i - 1]
        if origin is not None:
            effective = min(arch.score_ranks[i - 1], bound)
            reasons.append(Reason(
                "low-rank-values",
                f"the tokens entering layer {i} lie in a {bound}-dimensional subspace "
                f"({graph.nodes[origin]['params'][0]} has lower rank): only the compression of W_{i} "
                "to it reaches the output",
                path(origin, scores)))
            predicted = rank_matrix_dimension(bound, bound, effective) if dims is not None else None
        if "shift-invariant" in states[attention]:
            b = min(arch.score_ranks[i - 1], _bottleneck(arch, i - 1))
            reasons.append(Reason(
                "shift-invariance",
                f"s_{i} is exponential and the tokens keep a constant coordinate: the {b} direction(s) "
                f"e_b w^T of What_{i} add a column-constant term, and S(A + 1 u^T) = S(A)",
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
    value_events = [e for e in events if e.kind in (VALUE_COLLAPSE, VALUE_RANK)]
    if value_events:
        text = "; ".join(("the event fixes P = 0" if e.kind == VALUE_COLLAPSE else
                          f"the event constrains P to rank <= {e.rank}") for e in value_events)
        verdicts["values"] = BlockVerdict("values", COLLAPSED, tuple(
            Reason("event", text, (e.node,)) for e in value_events), None)
    else:
        verdicts["values"] = BlockVerdict("values", OBSERVABLE, (Reason(
            "live-path", "F = P X M_l: the value path to the output is never forced "
            "(attention columns sum to 1)", path(f"values:{arch.layers}", "output")),),
            None if dims is None else dims["values"])

    normal = {}
    for i, event in scores_collapsed.items():
        # identical tokens, an earlier score collapse or any value collapse hide layer i already
        hidden_anyway = ("identical" in states["input"] or bool(values_zero)
                         or any(j < i for j in scores_collapsed))
        normal[f"scores:{i}"] = 0 if hidden_anyway or props[i - 1]["k"] >= 2 else "positive"
    seen = [j for j in range(1, arch.layers + 1)
            if verdicts[f"scores:{j}"].status in (OBSERVABLE, PARTIAL) and props[j - 1]["even"]]
    notes = []
    if BIAS in kinds:
        quiet = [j for j in range(1, arch.layers + 1) if not props[j - 1]["exponential"]
                 and verdicts[f"scores:{j}"].status == OBSERVABLE]
        if quiet:
            notes.append("the constant coordinate hides nothing at layers "
                         f"{quiet} (not exponential); with an exponential normalizer there it would "
                         "hide the directions e_b w^T")
    for i in scores_collapsed:
        k = props[i - 1]["k"]
        notes.append(f"leaving What_{i} = 0 is seen at first order only when k = 1 (here k = {k}); "
                     f"for k >= 2, s'(0) = 0 puts the normal directions in the kernel")
        if props[i - 1]["even"]:
            notes.append(f"s_{i} is even: What_{i} = 0 is fixed by the sign flip What_{i} -> -What_{i}, "
                         "where the two sheets of the fiber meet")
    marked = graph.copy()
    for n, s in states.items():
        marked.nodes[n]["state"] = tuple(sorted(s))
    return Observability(
        architecture=arch.to_json(), events=events, normalizers=tuple(props),
        states={n: tuple(sorted(s)) for n, s in states.items()}, verdicts=verdicts,
        normal_first_order=normal, sign_components=2 ** len(seen),
        generic_sign_components=2 ** sum(1 for p in props if p["even"]), notes=tuple(notes),
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
    if block not in _blocks(arch.layers):
        raise SymattnError(f"block {block!r} is not one of {', '.join(_blocks(arch.layers))}")
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


# -- exact ranks on the collapsed set --------------------------------------------------------
def _rank_tangent_basis(B, C, p) -> np.ndarray:
    """Vectors ``vec(dB C + B dC)`` spanning the tangent of rank-r matrices at ``B C``: shape (rows*cols, m)."""
    rows, r = B.shape
    cols = C.shape[1]
    vectors = []
    for a in range(rows):
        for b in range(r):
            E = np.zeros((rows, r), dtype=np.int64)
            E[a, b] = 1
            vectors.append(matmul_mod(E, C, p).reshape(-1))
    for c in range(r):
        for d in range(cols):
            E = np.zeros((r, cols), dtype=np.int64)
            E[c, d] = 1
            vectors.append(matmul_mod(B, E, p).reshape(-1))
    return np.stack(vectors, axis=1)


def _set_point(arch, events, p, seed):
    """A random point of the collapsed set (residues) and the tangent bases of value-rank blocks."""
    point, coefficient_values = random_point(arch, p, seed)
    rng = generator(seed, "value rank")
    tangents = {}
    for e in events:
        if e.kind == SCORE_COLLAPSE:
            point[("Q", e.layer)] = np.zeros_like(point[("Q", e.layer)])
        elif e.kind == VALUE_COLLAPSE:
            point[("V", e.layer)] = np.zeros_like(point[("V", e.layer)])
        elif e.kind == VALUE_RANK:
            rows, cols = arch.block_shapes(e.layer)["V"]
            B = rng.integers(1, p, size=(rows, e.rank), dtype=np.int64)
            C = rng.integers(1, p, size=(e.rank, cols), dtype=np.int64)
            point[("V", e.layer)] = matmul_mod(B, C, p)
            tangents[("V", e.layer)] = (B, C)
    return point, coefficient_values, tangents


def _set_bank(arch, events, size, p, seed) -> np.ndarray:
    bank = random_bank(arch, size, p, seed)
    kinds = {e.kind for e in events}
    if IDENTICAL_TOKENS in kinds:
        bank[:, :, :] = bank[:, :, :1]
    if BIAS in kinds:
        bank[:, -1, :] = 1  # the same bias value in every token and every input
    return bank


def _rank(M, p) -> int:
    from .algebra.valuations import smith_valuations

    if M.shape[1] == 0 or M.shape[0] == 0:
        return 0
    return smith_valuations(M, p).resolved_rank


def _combine(J, columns, basis, p):
    """Columns ``J[:, columns] @ basis`` (series times a constant matrix), mod p."""
    block = J[:, columns, :]
    out = np.zeros((J.shape[0], basis.shape[1], J.shape[2]), dtype=np.int64)
    for c in range(len(columns)):
        out = (out + block[:, c:c + 1, :] * (basis[c][None, :, None] % p)) % p
    return out


def _set_ranks(arch, events, p, seed, bank_size, truncation) -> dict:
    """Block ranks of the native Jacobian at a random point of the collapsed set."""
    _require_rank_memory(arch, bank_size, truncation)
    point, coefficient_values, tangents = _set_point(arch, events, p, seed)
    bank = _set_bank(arch, events, bank_size, p, seed)
    # the input scaled, X -> eps X: every score vanishes at eps = 0, whatever the normalizer
    J = jacobian_series(arch, input_scaling(), bank, point, p, truncation, coefficient_values)
    columns = parameter_columns(arch)
    fixed = {("Q", e.layer) for e in events if e.kind == SCORE_COLLAPSE}
    fixed |= {("V", e.layer) for e in events if e.kind == VALUE_COLLAPSE}
    pieces, owner = [], []  # tangent columns of the set and the block each belongs to
    for i in range(1, arch.layers + 1):
        for name in ("Q", "K", "V"):
            key = (name, i)
            block = "values" if name == "V" else f"scores:{i}"
            if key in fixed:
                continue
            if key in tangents:
                B, C = tangents[key]
                piece = _combine(J, columns[key], _rank_tangent_basis(B, C, p), p)
            else:
                piece = J[:, columns[key], :]
            pieces.append(piece)
            owner += [block] * piece.shape[1]
    T = np.concatenate(pieces, axis=1)
    owner = np.array(owner)
    blocks = {}
    score_mask = owner != "values"
    for block in _blocks(arch.layers):
        if block == "values":
            continue
        blocks[block] = _rank(T[:, owner == block, :], p)
    tangent_total = _rank(T, p)
    blocks["values"] = tangent_total - _rank(T[:, score_mask, :], p)
    normal = {}
    for e in events:
        if e.kind == SCORE_COLLAPSE:
            normal[f"scores:{e.layer}"] = _rank(J[:, columns[("Q", e.layer)], :], p)
    from .algebra.valuations import smith_valuations

    full = smith_valuations(J, p)
    return {"blocks": blocks, "normal": normal, "total": full.resolved_rank, "tangent_total": tangent_total,
            "deepest": (max(full.exponents) + 1) if full.exponents else 0}


def _same_ranks(a: dict, b: dict) -> bool:
    return all(a[key] == b[key] for key in ("blocks", "normal", "total", "tangent_total"))


def _generic_input_scaling_order(arch: Architecture) -> int:
    """The deepest exponent of the generic spectrum along ``X -> eps X``: ``2 k 3^(l-1) + 1``."""
    k = max(n.k for n in arch.normalizers)
    return 2 * k * 3 ** (arch.layers - 1) + 1


_DIMENSION_CACHE: dict = {}


def _effective_dimension(arch: Architecture) -> int:
    key = (tuple(arch.widths), tuple(arch.score_ranks))  # independent of tokens and normalizers
    if key not in _DIMENSION_CACHE:
        _DIMENSION_CACHE[key] = effective_dimension(arch)
    return _DIMENSION_CACHE[key]


def _default_bank(arch: Architecture) -> int:
    eff = _effective_dimension(arch)
    score_dims = eff - effective_block_dimensions(arch)["values"]
    return max(arch.widths[0] + 1, math.ceil(eff / (arch.widths[-1] * arch.tokens)) + 2, score_dims + 2)


def first_rank_memory(arch: Architecture, bank="auto", truncation="auto", confirm: bool = True):
    """Memory of the largest exact rank :func:`rank_check` computes before any growth (the confirmation).

    What the memory guard compares with the limit before the computation starts.

    Examples
    --------
    >>> estimate = first_rank_memory(Architecture.uniform(layers=2))
    >>> estimate.series_order, estimate.bank, estimate.bytes < 2 * 2**20
    (16, 12, True)
    """
    from .limits import rank_check_memory

    size = _default_bank(arch) if bank == "auto" else int(bank)
    N = 2 * _generic_input_scaling_order(arch) + 2 if truncation == "auto" else int(truncation)
    return rank_check_memory(arch, grown_bank(size) if confirm else size, N)


def _require_rank_memory(arch: Architecture, bank_size: int, truncation: int, max_order: int | None = None):
    """Refuse an exact rank that would not fit in memory, before its forward pass allocates anything."""
    from .limits import MAX_BANK, check_count, check_memory, rank_check_memory

    check_count(bank_size, MAX_BANK, "the bank")
    check_memory(rank_check_memory(arch, bank_size, truncation), arch=arch,
                 estimate_for=lambda resized: first_rank_memory(resized), max_series_order=max_order)


@dataclass(frozen=True)
class RankCheck(FormattedResult):
    """Exact ranks of the native Jacobian, generic and on the collapsed set, block by block.

    Attributes
    ----------
    events : tuple of Event
    generic : dict
        Block -> rank of its columns at a generic point (``values``: the
        rank its columns add to those of all scores): the reference.
    on_set : dict
        Block -> the same on the set, columns restricted to the tangent of
        the set (a collapsed block's remaining directions).
    normal : dict
        Collapsed score block -> rank of the directions that leave the set.
    generic_total, set_total : int
        Rank of the whole native Jacobian, generic and on the set.
    fiber_dim_jump : int
        ``generic_total - set_total``: how much the fiber's dimension grows on the set.
    statuses : dict
        Block -> verdict read off the ranks (``collapsed`` for event blocks).
    truncation, bank, primes, confirmed, method

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> check = rank_check(Architecture.uniform(layers=1, width=2, tokens=2), ["scores:1"], confirm=False)
    >>> check.generic, check.on_set, check.normal, check.fiber_dim_jump
    ({'scores:1': 3, 'values': 4}, {'scores:1': 0, 'values': 4}, {'scores:1': 2}, 1)
    >>> print(check)
    exact ranks on the set scores:1
    block       generic  on set        status
    scores:1          3       0     collapsed
    values            4       4    observable
    normal directions of scores:1: rank 2
    total rank 6 (generic 7): fiber dimension jump 1
    truncation eps^8, bank 5, primes [268435399], confirmed: False
    """

    architecture: dict
    events: tuple
    generic: dict
    on_set: dict
    normal: dict
    generic_total: int
    set_total: int
    fiber_dim_jump: int
    statuses: dict
    truncation: int
    generic_resolved_at: int
    bank: int
    primes: tuple
    confirmed: bool
    method: str

    def to_json(self) -> dict:
        return {
            "events": [e.name for e in self.events],
            "generic_ranks": self.generic,
            "ranks_on_set": self.on_set,
            "normal_ranks": self.normal,
            "generic_total": self.generic_total,
            "set_total": self.set_total,
            "fiber_dim_jump": self.fiber_dim_jump,
            "statuses": self.statuses,
            "truncation": self.truncation,
            "generic_resolved_at": self.generic_resolved_at,
            "bank": self.bank,
            "primes": list(self.primes),
            "confirmed": self.confirmed,
            "method": self.method,
        }

    def __str__(self) -> str:
        lines = [f"exact ranks on the set {', '.join(e.name for e in self.events) or '(generic)'}",
                 f"{'block':<10} {'generic':>8} {'on set':>7} {'status':>13}"]
        for block in self.generic:
            lines.append(f"{block:<10} {self.generic[block]:>8} {self.on_set[block]:>7} {self.statuses[block]:>13}")
        for block, r in self.normal.items():
            lines.append(f"normal directions of {block}: rank {r}")
        lines.append(f"total rank {self.set_total} (generic {self.generic_total}): fiber dimension jump "
                     f"{self.fiber_dim_jump}")
        lines.append(f"truncation eps^{self.truncation}, bank {self.bank}, primes {list(self.primes)}, "
                     f"confirmed: {self.confirmed}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        lines = ["| block | generic rank | rank on the set | verdict |", "|---|---:|---:|---|"]
        for block in self.generic:
            lines.append(f"| {block} | {self.generic[block]} | {self.on_set[block]} | {self.statuses[block]} |")
        lines.append("")
        for block, r in self.normal.items():
            lines.append(f"- directions leaving the set at {block}: rank {r}")
        lines.append(f"- total rank {self.set_total} (generic {self.generic_total}); fiber dimension jump "
                     f"{self.fiber_dim_jump}")
        lines.append(f"- method: {self.method}")
        return "\n".join(lines)

    def _latex_math(self) -> str:
        rows = [rf"\text{{{latex_escape(b)}}} & {self.generic[b]} & {self.on_set[b]} & \text{{{self.statuses[b]}}} \\"
                for b in self.generic]
        return "\n".join([r"\begin{array}{lrrl}",
                          r"\text{block} & \text{generic} & \text{on the set} & \text{verdict} \\ \hline",
                          *rows, r"\end{array}"])

    def _latex_body(self) -> str:
        """The ranks as an ``array`` in display math (text mode)."""
        return _display_with_caption(self._latex_math(), f"Fiber dimension jump {self.fiber_dim_jump}.")



def _status_from_rank(block, rank, reference, events) -> str:
    if any(e.block == block for e in events):
        return COLLAPSED
    if rank == 0:
        return UNOBSERVABLE
    if rank < reference:
        return PARTIAL
    if rank == reference:
        return OBSERVABLE
    raise SymattnError(f"rank {rank} of {block} on the set exceeds its generic rank {reference}: "
                       "the generic bank is too small")


_GENERIC_CACHE: dict = {}


def clear_rank_cache() -> None:
    """Forget the generic ranks :func:`rank_check` keeps per architecture (to measure a cold run).

    Examples
    --------
    >>> clear_rank_cache()
    >>> len(_GENERIC_CACHE)
    0
    """
    _GENERIC_CACHE.clear()


def _generic_ranks(arch, p, seed, bank_size, truncation):
    key = (repr(arch), tuple(id(n) if n.is_generic else n.name for n in arch.normalizers), p, seed,
           bank_size, truncation)
    if key not in _GENERIC_CACHE:
        _GENERIC_CACHE[key] = _set_ranks(arch, (), p, seed, bank_size, truncation)
    return _GENERIC_CACHE[key]


def rank_check(arch: Architecture, events: Iterable = (), seed: int = 0, bank="auto", truncation="auto",
               primes=None, confirm: bool = True, max_order: int = 512, max_bank: int = 64,
               progress: bool = False, max_memory=None) -> RankCheck:
    """Exact ranks of the native Jacobian at a generic point of the collapsed set, block by block.

    The parameters are random residues mod ``p`` except the collapsed
    blocks (``Q_i = 0``, ``V_i = 0``, ``V_i = B C`` of rank ``r``); the bank
    is random, with identical tokens or a constant last row for the input
    events; the input is scaled, ``X -> eps X``, so that every score
    vanishes at ``eps = 0`` and :class:`~symattn.algebra.modseries.ModSeriesDomain`
    computes ``J(eps)`` mod ``eps^N`` for any normalizer with rational
    Taylor coefficients.  The rank of ``J(eps)`` over ``GF(p)((eps))`` is the
    generic rank on the set (the points ``(theta, eps X)``, ``eps != 0``, are
    generic points of it); each rank is the number of Smith-form pivots
    below ``eps^N``, a certified lower bound.  ``N`` is at least twice the
    order at which the generic rank is fully resolved, so a direction
    counted as lost has no term below ``eps^N`` (valuation ``>= N`` or
    kernel).  A second prime, point and larger bank confirm.

    Parameters
    ----------
    arch : Architecture
    events : iterable of Event or str
    seed : int
    bank : "auto" or int
    truncation : "auto" or int
    primes : sequence of int, optional
        Default :data:`symattn.jacobian.DEFAULT_PRIMES`.
    confirm : bool
    progress : bool
        Show a bar over the ranks (generic, on the set, confirmation) on a terminal.
    max_memory : int or str, optional
        Memory limit (default ``$SYMATTN_MAX_MEMORY`` or half the machine): each
        rank is estimated first (:func:`symattn.limits.rank_check_memory`) and
        refused with a ResourceLimitError when over it, as is a truncation
        beyond ``max_order``.

    Returns
    -------
    RankCheck

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
    >>> check = rank_check(arch, ["scores:1"], confirm=False)
    >>> check.generic, check.on_set
    ({'scores:1': 3, 'scores:2': 3, 'values': 4}, {'scores:1': 0, 'scores:2': 0, 'values': 4})
    >>> check.normal, check.fiber_dim_jump
    ({'scores:1': 2}, 4)
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    events = _events(arch, events)
    if arch.degenerate:
        raise ShapeError("with one token every attention matrix is the constant 1 and no score is ever "
                         "seen: give tokens >= 2")
    if any(n.is_lightning for n in arch.normalizers):
        raise NormalizerError("lightning attention is a comparison case: rank_check classifies "
                              "normalized attention only")
    primes = tuple(check_prime(p) for p in (primes or DEFAULT_PRIMES))
    eff = _effective_dimension(arch)
    if truncation == "auto":
        N, auto_order = 2 * _generic_input_scaling_order(arch) + 2, True
    elif isinstance(truncation, (int, np.integer)) and not isinstance(truncation, bool) and truncation >= 2:
        N, auto_order = int(truncation), False
    else:
        raise SymattnError(f"truncation must be 'auto' or an integer >= 2, got {truncation!r}")
    if bank == "auto":
        size, auto_bank = _default_bank(arch), True
    elif isinstance(bank, (int, np.integer)) and not isinstance(bank, bool) and bank >= 1:
        size, auto_bank = int(bank), False
    else:
        raise SymattnError(f"bank must be 'auto' or a positive integer, got {bank!r}")
    from .limits import memory_limit_set, progress_bar

    with memory_limit_set(max_memory), progress_bar(progress, total=3 if confirm else 2, desc="exact ranks",
                                                    unit="rank") as bar:
        # the first ranks, before any growth, must fit (the later ones are checked as they come)
        _require_rank_memory(arch, grown_bank(size) if confirm else size, N,
                             max_order if auto_order else None)
        return _rank_check(arch, events, seed, primes, confirm, max_order, max_bank, eff, N, auto_order,
                           size, auto_bank, bar)


def _rank_check(arch, events, seed, primes, confirm, max_order, max_bank, eff, N, auto_order, size, auto_bank,
                bar) -> RankCheck:
    p = primes[0]
    try:
        _set_ranks(arch, (), p, seed, 1, 2)  # can the series engine apply the normalizers?
    except DomainError as err:
        raise DomainError(f"exact ranks need the Taylor coefficients of s/s(0) in GF(p): {err} "
                          "(propagate() still gives the graph's verdict)") from None
    bar.set_postfix_str("generic")
    def before_step(step, previous):
        if previous is not None:  # the first ranks were checked before the progress bar started
            _require_rank_memory(arch, grown_bank(step.bank) if confirm else step.bank, step.truncation)

    adapted = adapt(lambda step: _generic_ranks(arch, p, seed, step.bank, step.truncation), Step(size, N),
                    lambda generic, step, history: [GROW_BANK, DEEPEN] if generic["total"] < eff else [],
                    Growth(max_bank=max_bank if auto_bank else None, max_truncation=max_order if auto_order else None,
                           grow_bank=doubled),
                    before_step=before_step)
    generic, size, N = adapted.outcome, adapted.step.bank, adapted.step.truncation
    if not adapted.concluded:
        raise SymattnError(
            f"the generic rank {generic['total']} stays below the effective dimension {eff} "
            f"(bank {size}, truncation eps^{N}): raise the bank or the truncation")
    resolved_at = generic["deepest"]
    bar.update()
    bar.set_postfix_str("on the set")
    main = _set_ranks(arch, events, p, seed, size, N)
    bar.update()
    bar.set_postfix_str("confirmation")
    confirmed = False
    if confirm and len(primes) > 1:
        larger = grown_bank(size)
        check = _set_ranks(arch, events, primes[1], seed + 1, larger, N)
        confirmed = _same_ranks(check, main)
        if not confirmed and auto_bank and larger <= max_bank:
            # the bank may have been too small on the set: use the larger one
            main, size = _set_ranks(arch, events, p, seed, larger, N), larger
            check = _set_ranks(arch, events, primes[1], seed + 1, grown_bank(larger), N)
            confirmed = _same_ranks(check, main)
        bar.update()
    reference = dict(generic["blocks"])
    statuses = {b: _status_from_rank(b, main["blocks"][b], reference[b], events) for b in reference}
    method = (f"Smith-form ranks of J(eps) mod eps^{N} over GF({p}) at a random point of the set, along "
              f"X -> eps X (rank over GF(p)((eps)) = generic rank on the set); the generic rank "
              f"{generic['total']} = effective dimension resolves by eps^{resolved_at}; bank {size}"
              + (f"; confirmed at GF({primes[1]}), another point and a larger bank" if confirmed else "")
              + f"; generic rank, adaptive steps: {adapted.describe()}")
    return RankCheck(
        architecture=arch.to_json(), events=events, generic=reference, on_set=dict(main["blocks"]),
        normal=dict(main["normal"]), generic_total=generic["total"], set_total=main["total"],
        fiber_dim_jump=generic["total"] - main["total"], statuses=statuses, truncation=N,
        generic_resolved_at=resolved_at, bank=size,
        primes=primes[:2] if confirm and len(primes) > 1 else primes[:1], confirmed=confirmed, method=method)


# -- contact orders near the set ------------------------------------------------------------
@dataclass(frozen=True)
class ContactOrders:
    """How fast the output's dependence on each block vanishes as the parameters approach the set.

    Along ``theta_delta`` = a point of the set plus ``delta`` times a generic
    normal direction (``Q_i = delta Qt_i`` for score collapse, so
    ``What_i ~ delta``; ``V_i = delta Vt_i``; ``V_i = B C + delta E``), the
    singular values of a block's columns behave as ``delta^c``.  ``orders``
    maps each block to ``{c: multiplicity}``; ``c = 0`` are the directions
    still seen on the set.

    Computed exactly: with the input also scaled (``X -> eps X``) and
    ``delta = eps^m``, the Smith exponents are ``m c + a`` once ``m`` is past
    the breaks of their Newton polygons; ``c`` is their growth from ``m`` to
    ``m + 1``, and ``stable`` says it is the same from ``m + 1`` to ``m + 2``
    (three points agree: a check, not a proof that no later break exists).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> near = contact_orders(Architecture.uniform(layers=1, width=2, tokens=2), "scores:1")
    >>> near.orders, near.stable
    ({'scores:1': {0: 2, 1: 1}, 'values': {0: 4}}, True)
    >>> near.distance, near.m
    ('Q_1 = delta Qt, so What_1 ~ delta', (2, 3, 4))
    """

    event: Event
    orders: dict
    distance: str
    m: tuple
    stable: bool
    truncation: int

    def to_json(self) -> dict:
        return {"event": self.event.name, "distance": self.distance,
                "orders": {b: {str(c): n for c, n in h.items()} for b, h in self.orders.items()},
                "m": list(self.m), "stable": self.stable, "truncation": self.truncation}

    def __str__(self) -> str:
        parts = [f"{b}: " + ", ".join(f"delta^{c} x{n}" for c, n in h.items()) for b, h in self.orders.items()]
        return f"contact orders near {self.event.name} ({self.distance}): " + "; ".join(parts)


def _near_set_exponents(arch, event, m, p, seed, size, N):
    from .algebra.valuations import smith_valuations

    _require_rank_memory(arch, size, N)
    point, coefficient_values = random_point(arch, p, seed)
    bank = random_bank(arch, size, p, seed)
    series, inputs = curve_series(arch, input_scaling(), point, bank, p, N)
    rng = generator(seed, "near set")
    key = ("Q", event.layer) if event.kind == SCORE_COLLAPSE else ("V", event.layer)
    moved = np.zeros_like(series[key])
    if event.kind == VALUE_RANK:
        rows, cols = arch.block_shapes(event.layer)["V"]
        B = rng.integers(1, p, size=(rows, event.rank), dtype=np.int64)
        C = rng.integers(1, p, size=(event.rank, cols), dtype=np.int64)
        moved[..., 0] = matmul_mod(B, C, p)
    if m < N:
        moved[..., m] = point[key]
    series[key] = moved
    J = jacobian_from_series(arch, series, inputs, p, N, coefficient_values)
    columns = parameter_columns(arch)
    out, score_columns = {}, []
    for i in range(1, arch.layers + 1):
        own = columns[("Q", i)] + columns[("K", i)]
        score_columns += own
        out[f"scores:{i}"] = list(smith_valuations(J[:, own, :], p).exponents)
    everything = list(smith_valuations(J, p).exponents)
    scores_only = list(smith_valuations(J[:, score_columns, :], p).exponents)
    for e in scores_only:
        everything.remove(e)
    out["values"] = everything
    return out


def contact_orders(arch: Architecture, event, seed: int = 0, bank="auto", primes=None, m_start: int = 2,
                   max_order: int = 2048) -> ContactOrders:
    """Exact contact orders of every block near the set of a parameter event.

    Parameters
    ----------
    arch : Architecture
    event : Event or str
        ``scores:i``, ``values:i`` or ``value-rank:i:r`` (input events have no
        parameter distance and are refused).
    m_start : int
        The exponents are computed at ``delta = eps^m`` for ``m = m_start, m_start + 1, m_start + 2``.

    Returns
    -------
    ContactOrders

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
    >>> contact_orders(arch, "scores:1").orders
    {'scores:1': {0: 2, 1: 1}, 'scores:2': {2: 3}, 'values': {0: 4}}
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    (event,) = _events(arch, [event])
    if not event.on_parameters:
        raise SymattnError(f"{event.name} is a class of inputs: contact orders are computed for "
                           "parameter events (scores:I, values:I, value-rank:I:R)")
    p = check_prime((primes or DEFAULT_PRIMES)[0])
    size = _default_bank(arch) if bank == "auto" else int(bank)
    generic = rank_check(arch, (), seed=seed, bank=size, confirm=False).generic
    m0 = int(m_start)
    if m0 < 1:
        raise SymattnError(f"m_start must be a positive integer, got {m_start!r}")
    N = 2 * _generic_input_scaling_order(arch) + 8 * (m0 + 2)

    def every_direction_found(runs):
        return all(len(run[b]) == generic[b] for run in runs for b in generic)

    adapted = adapt(lambda step: [_near_set_exponents(arch, event, m, p, seed, step.bank, step.truncation)
                                  for m in (m0, m0 + 1, m0 + 2)],
                    Step(size, N), lambda runs, step, history: [] if every_direction_found(runs) else [DEEPEN],
                    Growth(max_truncation=max_order))
    runs, N = adapted.outcome, adapted.step.truncation
    complete = adapted.concluded
    orders, stable = {}, complete
    for block in generic:
        a, b, c = (sorted(run[block]) for run in runs)
        first = [y - x for x, y in zip(a, b)]
        second = [y - x for x, y in zip(b, c)]
        stable = stable and first == second
        histogram: dict[int, int] = {}
        for value in first:
            histogram[value] = histogram.get(value, 0) + 1
        orders[block] = dict(sorted(histogram.items()))
    distance = {SCORE_COLLAPSE: f"Q_{event.layer} = delta Qt, so What_{event.layer} ~ delta",
                VALUE_COLLAPSE: f"V_{event.layer} = delta Vt",
                VALUE_RANK: f"V_{event.layer} = B C + delta E (rank {event.rank} plus delta)"}[event.kind]
    return ContactOrders(event, orders, distance, (m0, m0 + 1, m0 + 2), stable, N)


# -- graph verdict against exact ranks ------------------------------------------------------
def graph_rank_disagreements(verdict: Observability, rank: RankCheck) -> list[str]:
    """Where the graph's verdicts and the exact ranks on the same collapse set disagree (empty: none).

    Each line names the block, what the dependency graph predicts and what
    the exact rank of the native Jacobian computed.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=2)
    >>> verdict = propagate(dependency_graph(arch), [score_collapse(1)])
    >>> graph_rank_disagreements(verdict, rank_check(arch, [score_collapse(1)], confirm=False))
    []
    """
    problems = []
    for block, v in verdict.verdicts.items():
        computed = rank.statuses[block]
        if v.status != computed:
            problems.append(f"{block}: the graph says {v.status}, the rank says {computed} "
                            f"(rank {rank.on_set[block]} of generic {rank.generic[block]})")
        elif v.predicted_rank is not None and v.status != COLLAPSED and v.predicted_rank != rank.on_set[block]:
            problems.append(f"{block}: predicted rank {v.predicted_rank}, computed {rank.on_set[block]}")
    for block, expected in verdict.normal_first_order.items():
        computed = rank.normal.get(block)
        if (expected == 0) != (computed == 0):
            problems.append(f"{block}: the directions leaving the set should have rank "
                            f"{'0' if expected == 0 else '> 0'}, computed {computed}")
    return problems


@dataclass(frozen=True)
class ObserveResult(FormattedResult):
    """The graph's verdict on a collapsed set, the exact ranks that check it, and contact orders.

    ``agrees_with_rank`` is true when every block's verdict, every predicted
    rank and the first-order visibility of the collapsed blocks' normal
    directions agree with the exact ranks; ``disagreements`` lists the rest.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=2)
    >>> result = observe(arch, ["identical-tokens"], confirm=False)
    >>> result.unobservable, result.observable, result.rank.on_set
    (['scores:1'], ['values'], {'scores:1': 0, 'values': 4})
    >>> result.fiber_dim_jump, result.agrees_with_rank, result.disagreements
    (3, True, ())
    """

    observability: Observability
    rank: RankCheck
    contact: tuple
    disagreements: tuple

    @property
    def agrees_with_rank(self) -> bool:
        return not self.disagreements

    @property
    def events(self) -> tuple:
        return self.observability.events

    @property
    def graph(self) -> nx.DiGraph:
        return self.observability.graph

    unobservable = property(lambda self: self.observability.unobservable)
    partial = property(lambda self: self.observability.partial)
    observable = property(lambda self: self.observability.observable)
    collapsed = property(lambda self: self.observability.collapsed)

    @property
    def fiber_dim_jump(self) -> int:
        return self.rank.fiber_dim_jump

    def to_json(self) -> dict:
        """The keys of ``symattn observe --json``."""
        v, r = self.observability, self.rank
        return {
            "architecture": v.architecture,
            "events": [e.name for e in v.events],
            "unobservable": v.unobservable,
            "partial": v.partial,
            "observable": v.observable,
            "collapsed": v.collapsed,
            "fiber_dim_jump": r.fiber_dim_jump,
            "agrees_with_rank": self.agrees_with_rank,
            "disagreements": list(self.disagreements),
            "reasons": v.reasons(),
            "ranks": {"generic": r.generic, "on_set": r.on_set, "normal": r.normal,
                      "generic_total": r.generic_total, "set_total": r.set_total},
            "predicted_ranks": {b: x.predicted_rank for b, x in v.verdicts.items()},
            "normal_first_order": v.normal_first_order,
            "sign_components": v.sign_components,
            "generic_sign_components": v.generic_sign_components,
            "notes": list(v.notes),
            "contact_orders": [c.to_json() for c in self.contact],
            "truncation": r.truncation,
            "bank": r.bank,
            "primes": list(r.primes),
            "confirmed": r.confirmed,
            "method": r.method,
        }

    def _rows(self):
        for block, v in self.observability.verdicts.items():
            reason = v.reasons[0]
            yield (block, v.status, self.rank.on_set[block], self.rank.generic[block], reason.text,
                   " -> ".join(reason.path))

    def __str__(self) -> str:
        events = ", ".join(e.name for e in self.events) or "none (generic)"
        lines = [f"observability after {events}",
                 f"{'block':<10} {'verdict':<13} {'rank':>4} {'generic':>8}  reason"]
        for block, status, rank, generic, text, path in self._rows():
            lines.append(f"{block:<10} {status:<13} {rank:>4} {generic:>8}  {text}")
            lines.append(f"{'':<10} path {path}")
        for block, n in self.rank.normal.items():
            lines.append(f"leaving the set at {block}: rank {n}")
        lines.append(f"fiber dimension jump {self.fiber_dim_jump}; agrees with rank: {self.agrees_with_rank}")
        lines += [f"disagreement: {d}" for d in self.disagreements]
        lines += [str(c) for c in self.contact]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A report section: verdicts with reasons, ranks, and how they were obtained."""
        v = self.observability
        lines = ["| block | verdict | rank on the set | generic rank | reason | path |",
                 "|---|---|---:|---:|---|---|"]
        for block, status, rank, generic, text, path in self._rows():
            lines.append(f"| {block} | {status} | {rank} | {generic} | {text} | {path} |")
        lines.append("")
        lines.append(f"- events: {'; '.join(e.describe() for e in v.events) or 'none'}")
        for block, n in self.rank.normal.items():
            lines.append(f"- directions leaving the set at {block}: rank {n}")
        lines.append(f"- fiber dimension jump: {self.fiber_dim_jump} (total rank {self.rank.set_total}, "
                     f"generic {self.rank.generic_total})")
        lines.append(f"- sign components of the fiber: {v.sign_components} (generic {v.generic_sign_components})")
        lines.append(f"- graph and exact rank agree: {self.agrees_with_rank}")
        lines += [f"- disagreement: {d}" for d in self.disagreements]
        lines += [f"- {n}" for n in v.notes]
        for c in self.contact:
            lines.append(f"- {c}")
        lines.append(f"- method: {self.rank.method}")
        return "\n".join(lines)

    def to_section(self, title: str = "Observability after collapse"):
        """A :class:`~symattn.report.Section` for :meth:`~symattn.report.ArchitectureReport.with_sections`."""
        return Section.from_result(title, "observe", self, markdown=self.to_markdown())

    def _latex_math(self) -> str:
        rows = [rf"\text{{{latex_escape(b)}}} & \text{{{s}}} & {r} & {g} \\" for b, s, r, g, _, _ in self._rows()]
        return "\n".join([
            r"\begin{array}{llrr}",
            r"\text{block} & \text{verdict} & \text{rank on the set} & \text{generic rank} \\ \hline",
            *rows, r"\end{array}"])

    def _latex_body(self) -> str:
        """The verdicts and ranks as an ``array`` in display math (text mode)."""
        events = ", ".join(e.name for e in self.events) or "none"
        caption = (f"Events: {events}. Fiber dimension jump {self.fiber_dim_jump}; graph and exact rank "
                   f"agree: {'yes' if self.agrees_with_rank else 'no'}.")
        return _display_with_caption(self._latex_math(), caption)



def observe(arch: Architecture, events: Iterable = (), seed: int = 0, contact: bool = False,
            confirm: bool = True, bank="auto", truncation="auto", progress: bool = False,
            max_memory=None) -> ObserveResult:
    """The graph's verdict after ``events`` (:func:`propagate`), proved by exact ranks (:func:`rank_check`).

    Parameters
    ----------
    arch : Architecture
    events : iterable of Event or str
    seed : int
    contact : bool
        Also compute :func:`contact_orders` near each parameter event.
    confirm : bool
        Confirm the ranks at a second prime, point and larger bank.
    progress : bool
        Show the ranks and contact orders as they are computed (on a terminal).
    max_memory : int or str, optional
        Memory limit; see :func:`rank_check`.

    Returns
    -------
    ObserveResult

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
    >>> result = observe(arch, ["bias"], confirm=False)
    >>> result.partial, result.rank.on_set["scores:1"], result.agrees_with_rank
    (['scores:1', 'scores:2'], 2, True)
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    from .limits import memory_limit_set, progress_bar

    verdict = propagate(dependency_graph(arch), events)
    rank = rank_check(arch, verdict.events, seed=seed, confirm=confirm, bank=bank, truncation=truncation,
                      progress=progress, max_memory=max_memory)
    near = [e for e in verdict.events if e.on_parameters] if contact else []
    orders = []
    with memory_limit_set(max_memory), progress_bar(progress and bool(near), total=len(near),
                                                    desc="contact orders", unit="event") as bar:
        for e in near:
            bar.set_postfix_str(e.name)
            orders.append(contact_orders(arch, e, seed=seed))
            bar.update()
    return ObserveResult(verdict, rank, tuple(orders), tuple(graph_rank_disagreements(verdict, rank)))


# -- exceptional fibers ----------------------------------------------------------------------
@dataclass(frozen=True)
class FiberRow:
    """One event set: the blocks lost, the jump of the fiber dimension, and the normalizer conditions.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> table = exceptional_fibers(Architecture.uniform(layers=1, width=2, tokens=2), max_events=1)
    >>> row = table.row("values:1")
    >>> row.name, row.unobservable, row.fiber_dim_jump, row.conditions
    ('values:1', ('scores:1',), 3, ('scores:1 lost for every normalizer',))
    >>> bias = table.row("bias")
    >>> bias.partial, bias.lost, bias.agrees_with_rank
    (('scores:1',), ('scores:1',), True)
    """

    events: tuple
    unobservable: tuple
    partial: tuple
    fiber_dim_jump: int
    normal_ranks: dict
    sign_components: int
    conditions: tuple
    agrees_with_rank: bool
    disagreements: tuple

    @property
    def lost(self) -> tuple:
        return self.unobservable + self.partial

    @property
    def name(self) -> str:
        return " + ".join(e.name for e in self.events)

    def to_json(self) -> dict:
        return {"events": [e.name for e in self.events], "unobservable": list(self.unobservable),
                "partial": list(self.partial), "fiber_dim_jump": self.fiber_dim_jump,
                "normal_ranks": self.normal_ranks, "sign_components": self.sign_components,
                "conditions": list(self.conditions), "agrees_with_rank": self.agrees_with_rank,
                "disagreements": list(self.disagreements)}


def _conditions(verdict: Observability) -> tuple:
    out, grouped = [], {}
    for block, v in verdict.verdicts.items():
        if v.status in (UNOBSERVABLE, PARTIAL):
            for r in v.reasons:
                grouped.setdefault(r.condition, [])
                if block not in grouped[r.condition]:
                    grouped[r.condition].append(block)
    for condition, blocks in grouped.items():
        out.append(f"{', '.join(blocks)} lost for {condition}")
    for block, normal in verdict.normal_first_order.items():
        i = int(block.split(":")[1])
        k = verdict.normalizers[i - 1]["k"]
        out.append(f"k_{i} = {k}: leaving What_{i} = 0 is "
                   + ("seen at first order" if normal else "not seen at first order"
                      + (" (s'(0) = 0)" if k >= 2 else " (hidden by the other events)")))
    if verdict.sign_components != verdict.generic_sign_components:
        out.append(f"even normalizers: sign components {verdict.generic_sign_components} -> "
                   f"{verdict.sign_components}")
    if BIAS in {e.kind for e in verdict.events} and not any(
            r.rule == "shift-invariance" for v in verdict.verdicts.values() for r in v.reasons):
        out.append("bias hides nothing here: only an exponential normalizer (S(A + 1 u^T) = S(A)) loses "
                   "the directions e_b w^T")
    if not out:
        out.append("nothing lost, for every normalizer")
    return tuple(out)


@dataclass(frozen=True)
class ExceptionalFibers(FormattedResult):
    """Every single and pairwise event: blocks lost, fiber dimension jump, normalizer conditions.

    The table is available as text (``str``), Markdown, LaTeX (an ``array``)
    and JSON.  ``agrees_with_rank`` is true when the graph's verdict agrees
    with the exact rank for every row.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> table = exceptional_fibers(Architecture.uniform(layers=1, width=2, tokens=2), max_events=1)
    >>> [(row.name, row.fiber_dim_jump) for row in table.rows]
    [('scores:1', 1), ('values:1', 3), ('value-rank:1:1', 0), ('identical-tokens', 3), ('bias', 1)]
    >>> table.generic_rank, table.agrees_with_rank, table.skipped
    (7, True, ())
    """

    architecture: dict
    rows: tuple
    skipped: tuple
    generic_rank: int
    max_events: int
    method: str

    @property
    def agrees_with_rank(self) -> bool:
        return all(r.agrees_with_rank for r in self.rows)

    def row(self, *events) -> FiberRow:
        """The row of an event set, given by events or their names."""
        wanted = tuple(sorted(parse_event(e) for e in events))
        for r in self.rows:
            if r.events == wanted:
                return r
        raise KeyError(", ".join(e.name for e in wanted))

    def to_json(self) -> dict:
        return {"architecture": self.architecture, "generic_rank": self.generic_rank,
                "max_events": self.max_events, "rows": [r.to_json() for r in self.rows],
                "skipped": [{"events": list(e), "reason": why} for e, why in self.skipped],
                "agrees_with_rank": self.agrees_with_rank, "method": self.method}

    def _cells(self):
        for r in self.rows:
            yield (r.name, ", ".join(r.unobservable) or "-", ", ".join(r.partial) or "-",
                   str(r.fiber_dim_jump), "; ".join(r.conditions), "yes" if r.agrees_with_rank else "NO")

    def __str__(self) -> str:
        header = ("events", "unobservable", "partial", "jump", "conditions", "rank agrees")
        cells = [header, *self._cells()]
        widths = [max(len(c[j]) for c in cells) for j in range(len(header) - 2)]
        lines = []
        for c in cells:
            lines.append("  ".join(c[j].ljust(widths[j]) for j in range(len(widths)))
                         + f"  {c[-1]:<11}  {c[-2]}")
        lines.append(f"generic rank {self.generic_rank}; graph and exact rank agree on every row: "
                     f"{self.agrees_with_rank}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        lines = ["| events | unobservable | partial | fiber dim jump | conditions | rank agrees |",
                 "|---|---|---|---:|---|---|"]
        lines += ["| " + " | ".join(c) + " |" for c in self._cells()]
        lines.append("")
        lines.append(f"- generic rank of the native Jacobian: {self.generic_rank}")
        lines.append(f"- graph and exact rank agree on every row: {self.agrees_with_rank}")
        for events, why in self.skipped:
            lines.append(f"- skipped {' + '.join(events)}: {why}")
        lines.append(f"- method: {self.method}")
        return "\n".join(lines)

    def _latex_math(self) -> str:
        rows = []
        for r in self.rows:
            events = r", ".join(e.latex() for e in r.events)
            lost_u = latex_escape(", ".join(r.unobservable) or "-")
            lost_p = latex_escape(", ".join(r.partial) or "-")
            rows.append(rf"{events} & \text{{{lost_u}}} & \text{{{lost_p}}} & {r.fiber_dim_jump} & "
                        rf"\text{{{'yes' if r.agrees_with_rank else 'no'}}} \\")
        return "\n".join([r"\begin{array}{lllrl}",
                          r"\text{events} & \text{unobservable} & \text{partial} & \text{jump} & "
                          r"\text{rank agrees} \\ \hline", *rows, r"\end{array}"])

    def _latex_body(self) -> str:
        """The table as an ``array`` in display math (text mode)."""
        caption = (f"Generic rank {self.generic_rank}; graph and exact rank agree on every row: "
                   f"{'yes' if self.agrees_with_rank else 'no'}.")
        return _display_with_caption(self._latex_math(), caption)



def exceptional_fibers(arch: Architecture, max_events: int = 2, seed: int = 0, confirm: bool = False,
                       events=None, progress: bool = False, max_memory=None) -> ExceptionalFibers:
    """Go through every set of at most ``max_events`` events and classify its fiber.

    For each set: the blocks lost (unobservable, partial) by the graph, the
    jump of the fiber dimension (generic rank minus the rank of the native
    Jacobian at a generic point of the set, exact over ``GF(p)((eps))``),
    the rank of the directions leaving a collapsed score block, the sign
    components, the normalizer conditions that decide it, and whether the
    graph agrees with the exact rank.

    Parameters
    ----------
    arch : Architecture
    max_events : int
    seed : int
    confirm : bool
        Confirm each rank at a second prime (twice the time).
    events : iterable, optional
        The single events to combine (default :func:`all_events`).
    progress : bool
        Show a bar over the event sets, with the time left (on a terminal).
    max_memory : int or str, optional
        Memory limit; see :func:`rank_check` (the first rank is estimated before any).

    Returns
    -------
    ExceptionalFibers

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="cosh")
    >>> table = exceptional_fibers(arch, max_events=1)
    >>> table.row("scores:1").unobservable, table.row("scores:1").fiber_dim_jump
    (('scores:2',), 6)
    >>> table.agrees_with_rank
    True
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
        raise SymattnError(f"max_events must be a positive integer, got {max_events!r}")
    graph = dependency_graph(arch)
    pool = [parse_event(e).validate(arch) for e in (events if events is not None else all_events(arch))]
    from .limits import memory_limit_set, progress_bar

    rows, skipped = [], []
    generic_rank = None
    subsets = [subset for size in range(1, max_events + 1) for subset in itertools.combinations(pool, size)]
    with memory_limit_set(max_memory), progress_bar(progress, total=len(subsets), desc="exceptional fibers",
                                                    unit="set") as bar:
        for subset in subsets:
            bar.set_postfix_str(", ".join(e.name for e in subset))
            try:
                verdict = propagate(graph, subset)
            except SymattnError as err:
                skipped.append((tuple(e.name for e in subset), str(err)))
                bar.update()
                continue
            rank = rank_check(arch, verdict.events, seed=seed, confirm=confirm)
            generic_rank = rank.generic_total
            problems = tuple(graph_rank_disagreements(verdict, rank))
            rows.append(FiberRow(verdict.events, tuple(verdict.unobservable), tuple(verdict.partial),
                                 rank.fiber_dim_jump, dict(rank.normal), verdict.sign_components,
                                 _conditions(verdict), not problems, problems))
            bar.update()
        if generic_rank is None:
            generic_rank = rank_check(arch, (), seed=seed, confirm=False).generic_total
    method = ("verdicts by propagation along the dependency graph; fiber dimension jumps and checks by "
              "exact Smith-form ranks of the native Jacobian over GF(p)((eps)) at a random point of each set, "
              "along X -> eps X" + ("; each confirmed at a second prime" if confirm else ""))
    return ExceptionalFibers(arch.to_json(), tuple(rows), tuple(skipped), generic_rank, max_events, method)


# -- export ---------------------------------------------------------------------------------
_COLOURS = {UNOBSERVABLE: "#e6550d", PARTIAL: "#fdae6b", OBSERVABLE: "#74c476", COLLAPSED: "#969696"}


def _graph_and_verdict(item):
    if isinstance(item, ObserveResult):
        return item.graph, item.observability
    if isinstance(item, Observability):
        return item.graph, item
    if isinstance(item, nx.DiGraph):
        return item, None
    raise SymattnError(f"export needs a dependency graph or an observe/propagate result, got {type(item).__name__}")


def _node_status(graph, verdict, node):
    if verdict is None:
        return None
    block = graph.nodes[node].get("block")
    if graph.nodes[node]["kind"] == "scores":
        return verdict.verdicts[block].status
    if graph.nodes[node]["kind"] == "values":
        return verdict.verdicts["values"].status
    return None


def _layout(graph) -> dict:
    pos = {}
    for node, data in graph.nodes(data=True):
        i, kind = data["layer"], data["kind"]
        pos[node] = {"input": (0, 0), "output": (3 * i - 2, 0), "scores": (3 * i - 2, 1),
                     "attention": (3 * i - 1, 1), "values": (3 * i - 2, -1), "tokens": (3 * i, 0)}[kind]
    return pos


def _node_text(graph, node) -> str:
    data = graph.nodes[node]
    text = data["label"]
    if data.get("params"):
        text += "\n" + ", ".join(data["params"])
    if data.get("state"):
        text += "\n" + ", ".join(data["state"])
    return text


def to_dot(item) -> str:
    """The graph as Graphviz DOT text (no pydot or pygraphviz needed).

    ``item`` is a dependency graph or a result of :func:`propagate` or
    :func:`observe`; with a result, blocks are coloured by verdict and
    forced states are printed on the nodes.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> text = to_dot(dependency_graph(Architecture.uniform(layers=1)))
    >>> text.splitlines()[0], '"scores:1" -> "attention:1";' in text
    ('digraph symattn {', True)
    """
    graph, verdict = _graph_and_verdict(item)

    def quote(text):
        return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = ["digraph symattn {", "  rankdir=LR;", '  node [shape=box, style="rounded,filled", fillcolor=white];']
    for node, data in graph.nodes(data=True):
        attrs = {"label": _node_text(graph, node), "kind": data["kind"]}
        status = _node_status(graph, verdict, node)
        if status is not None:
            attrs["fillcolor"] = _COLOURS[status]
            attrs["tooltip"] = status
        elif data.get("state"):
            attrs["fillcolor"] = "#d9d9d9"
        if data["kind"] == "attention":
            attrs["shape"] = "ellipse"
        lines.append(f"  {quote(node)} [" + ", ".join(f"{k}={quote(v)}" for k, v in attrs.items()) + "];")
    for u, v in graph.edges:
        lines.append(f"  {quote(u)} -> {quote(v)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _graphml_ready(item) -> nx.DiGraph:
    graph, verdict = _graph_and_verdict(item)
    out = nx.DiGraph()
    for key, value in graph.graph.items():
        out.graph[key] = json.dumps(value.to_json()) if isinstance(value, Architecture) else str(value)
    for node, data in graph.nodes(data=True):
        clean = {}
        for key, value in data.items():
            if isinstance(value, (tuple, list)):
                clean[key] = ",".join(str(v) for v in value)
            elif isinstance(value, (bool, int, float, str)):
                clean[key] = value
            elif value is not None:
                clean[key] = str(value)
        status = _node_status(graph, verdict, node)
        if status is not None:
            clean["verdict"] = status
        out.add_node(node, **clean)
    out.add_edges_from(graph.edges)
    return out


def to_graphml(item) -> str:
    """The graph as GraphML text (tuples become comma-separated strings).

    Examples
    --------
    >>> import networkx as nx
    >>> from symattn.model import Architecture
    >>> G = dependency_graph(Architecture.uniform(layers=1))
    >>> back = nx.parse_graphml(to_graphml(G))
    >>> back.nodes["scores:1"]["params"]
    'Q_1,K_1'
    """
    return "\n".join(nx.generate_graphml(_graphml_ready(item))) + "\n"


def write_graphml(item, path) -> None:
    """Write the graph as GraphML with :func:`networkx.write_graphml`.

    Examples
    --------
    >>> import tempfile, os, networkx as nx
    >>> from symattn.model import Architecture
    >>> path = os.path.join(tempfile.mkdtemp(), "g.graphml")
    >>> write_graphml(dependency_graph(Architecture.uniform(layers=1)), path)
    >>> sorted(nx.read_graphml(path).nodes)[:2]
    ['attention:1', 'input']
    """
    nx.write_graphml(_graphml_ready(item), path)


def to_tikz(item) -> str:
    """The graph as a TikZ picture (layers left to right; blocks coloured by verdict).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> tikz = to_tikz(dependency_graph(Architecture.uniform(layers=1)))
    >>> tikz.splitlines()[0]
    '\\\\begin{tikzpicture}[>=stealth, every node/.style={draw, rounded corners, align=center}]'
    """
    graph, verdict = _graph_and_verdict(item)
    pos = _layout(graph)
    tikz_colour = {UNOBSERVABLE: "red!60", PARTIAL: "orange!50", OBSERVABLE: "green!40", COLLAPSED: "gray!50"}

    def name(node):
        return node.replace(":", "")

    lines = [r"\begin{tikzpicture}[>=stealth, every node/.style={draw, rounded corners, align=center}]"]
    for node, data in graph.nodes(data=True):
        x, y = pos[node]
        status = _node_status(graph, verdict, node)
        fill = f", fill={tikz_colour[status]}" if status else (", fill=gray!15" if data.get("state") else "")
        label = f"${data['latex']}$"
        if data.get("params"):
            label += r"\\ {\scriptsize " + ", ".join(f"${p}$" for p in data["params"]) + "}"
        if data.get("state"):
            label += r"\\ {\scriptsize " + latex_escape(", ".join(data["state"])) + "}"
        lines.append(rf"  \node[{'ellipse' if data['kind'] == 'attention' else 'rectangle'}{fill}] "
                     rf"({name(node)}) at ({1.8 * x:.1f}, {1.6 * y:.1f}) {{{label}}};")
    for u, v in graph.edges:
        lines.append(rf"  \draw[->] ({name(u)}) -- ({name(v)});")
    lines.append(r"\end{tikzpicture}")
    return "\n".join(lines) + "\n"


def draw(item, path=None, ax=None):
    """Draw the graph with matplotlib (Agg canvas; no display needed); optionally save it.

    Parameters
    ----------
    item : graph or result
    path : str or Path, optional
        Save there (PNG, PDF or SVG by extension).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> figure = draw(dependency_graph(Architecture.uniform(layers=1)))
    >>> len(figure.axes)
    1
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    graph, verdict = _graph_and_verdict(item)
    if ax is None:
        layers = max(d["layer"] for _, d in graph.nodes(data=True))
        figure = Figure(figsize=(2.2 + 2.6 * layers, 4.2))
        FigureCanvasAgg(figure)
        ax = figure.add_subplot(1, 1, 1)
    else:
        figure = ax.figure
    pos = _layout(graph)
    colours = []
    for node, data in graph.nodes(data=True):
        status = _node_status(graph, verdict, node)
        colours.append(_COLOURS[status] if status else ("#d9d9d9" if data.get("state") else "#deebf7"))
    nx.draw_networkx(graph, pos, ax=ax, node_color=colours, node_size=1500, node_shape="s",
                     labels={n: _node_text(graph, n) for n in graph.nodes}, font_size=7,
                     arrows=True, arrowsize=12, edge_color="#525252")
    ax.set_axis_off()
    events = ", ".join(e.name for e in verdict.events) if verdict is not None else ""
    ax.set_title("dependency graph" + (f" after {events}" if events else ""))
    if path is not None:
        figure.savefig(path, dpi=120, bbox_inches="tight")
    return figure


def export_graph(item, directory, stem: str = "observe") -> list:
    """Write ``STEM.dot``, ``STEM.graphml``, ``STEM.png`` and ``STEM.tikz`` into ``directory``.

    Examples
    --------
    >>> import tempfile
    >>> from symattn.model import Architecture
    >>> [p.name for p in export_graph(dependency_graph(Architecture.uniform(layers=1)), tempfile.mkdtemp())]
    ['observe.dot', 'observe.graphml', 'observe.png', 'observe.tikz']
    """
    from pathlib import Path

    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"{stem}.{ext}" for ext in ("dot", "graphml", "png", "tikz")]
        paths[0].write_text(to_dot(item), encoding="utf-8")
        write_graphml(item, paths[1])
        draw(item, paths[2])
        paths[3].write_text(to_tikz(item), encoding="utf-8")
    except OSError as err:
        raise SymattnError(f"cannot write the graph into {directory}: {err.strerror or err}") from None
    return paths
