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

from .._modules import make_callable
from .events import (
    Event, all_events, bias_coordinate, identical_tokens, parse_event, score_collapse, value_collapse,
    value_rank,
)
from .graph import BlockVerdict, Observability, Reason, dependency_graph, minimal_collapses, propagate
from .ranks import ContactOrders, RankCheck, clear_rank_cache, contact_orders, first_rank_memory, rank_check
from .report import ExceptionalFibers, FiberRow, ObserveResult, exceptional_fibers, graph_rank_disagreements, observe
from .export import draw, draw_panels, export_graph, to_dot, to_graphml, to_tikz, write_graphml
from .events import (
    BIAS, COLLAPSED, IDENTICAL_TOKENS, OBSERVABLE, PARTIAL, SCORE_COLLAPSE, UNOBSERVABLE, VALUE_COLLAPSE, VALUE_RANK,
)

__all__ = [
    # the kinds of events and the verdicts
    "SCORE_COLLAPSE", "VALUE_COLLAPSE", "VALUE_RANK", "IDENTICAL_TOKENS", "BIAS",
    "UNOBSERVABLE", "PARTIAL", "OBSERVABLE", "COLLAPSED",
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
    "draw_panels",
    "export_graph",
]

# `from symattn import observe` gives this module (it shares the function's name): calling it calls observe()
make_callable(__name__, "observe")
