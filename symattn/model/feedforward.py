r"""A feed-forward block after attention: each token goes through ``W_out s(W_in x)``.

The component of ``--ffn M``: after layer ``i``'s attention (and its
residual add, when there is one) every token ``x`` (a column of the stream,
width ``d_i``) becomes ``W_out s(W_in x)`` with ``W_in`` (``M x d_i``),
``W_out`` (``d_i x M``) and ``s`` a real-analytic activation applied
entrywise; with a residual stream the block adds its output to its input.

The exact engine evaluates ``s`` from its Taylor series at 0, so the
certifying curve must send the activation's argument to 0: on the collapse
curve the input weights scale with the queries and keys, ``W_in,i = eps
W~_in,i`` (:func:`symattn.curves.register_query_like_block`), and the description of every
architecture with the block says so.

Symmetries: the hidden units can be permuted (``M!``), and for an odd
activation each unit's sign flips, ``(w_in,j, w_out,j) -> (-w_in,j,
-w_out,j)`` (``2^M``); both are discrete.  A change of basis of the block's
input stream is absorbed by ``W_in`` and one of its output stream by
``W_out`` (the hidden gauges of
:meth:`symattn.model.Architecture.hidden_gauges`).  A homogeneous
activation ``s(x) = c x^m`` has continuous symmetries of its own, derived in
:meth:`FeedForward.tangents`; no other activation has any derived.

Examples
--------
>>> from symattn.model import Architecture, forward
>>> from symattn.model.feedforward import FeedForward, Activation
>>> block = FeedForward(hidden=2, activation=Activation("x**2"))
>>> arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2", extra=(block,))
>>> [key for key, _ in arch.blocks()]
[('Q', 1), ('K', 1), ('V', 1), ('Win', 1), ('Wout', 1)]
>>> params = arch.parameters_from_flat([1, 1, 1, 1, 2, 1, 1])
>>> forward(arch, params, [[0, 1]])                       # (1 + 4) * (attention output)^2
array([[Fraction(5, 4), Fraction(20, 9)]], dtype=object)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import sympy as sp

from ..errors import NormalizerError
from ..normalizers import Normalizer
from ..normalizers.checks import check_analytic_function
from ..normalizers.irrational import function_taylor
from ..normalizers.presets import check_size, x
from ..parsing import NORMALIZER_LIMITS, parse_expression
from ..curves import register_query_like_block
from .components import Component, Tangent, elementary
from .symbols import register_block_name

__all__ = ["Activation", "FeedForward", "ACTIVATION_PRESETS"]

#: the activations by name: tanh, sigmoid, softplus and gelu in its erf form
ACTIVATION_PRESETS = {
    "tanh": sp.tanh(x),
    "sigmoid": 1 / (1 + sp.exp(-x)),
    "softplus": sp.log(1 + sp.exp(x)),
    "gelu": x / 2 * (1 + sp.erf(x / sp.sqrt(2))),
}

# the collapse curve scales W_in with the queries: the activation's argument vanishes at eps = 0
register_query_like_block("Win")
register_block_name("Win", r"W^{\mathrm{in}}")
register_block_name("Wout", r"W^{\mathrm{out}}")


class Activation(Normalizer):
    """A real-analytic activation ``s`` (not required positive), by preset name or expression in ``x``.

    It has a normalizer's Taylor interface, so every domain of
    :mod:`symattn.algebra` applies it entrywise (``apply_normalizer``), but
    :meth:`taylor` gives the coefficients of ``s`` itself (an activation is
    not divided by ``s(0)``, which may be 0).

    Parameters
    ----------
    expression : str or sympy expression
        A preset (:data:`ACTIVATION_PRESETS`) or an expression in ``x``, read
        by the package's parser (nothing is executed).

    Raises
    ------
    NormalizerError
        For text that does not parse, a constant, or a function that is not
        real-analytic on R.

    Examples
    --------
    >>> Activation("tanh").taylor(5)
    [0, 1, 0, -1/3, 0, 2/15]
    >>> Activation("tanh").is_odd, Activation("sigmoid").is_odd
    (True, False)
    >>> Activation("Abs(x)")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: activation Abs(x) is not real-analytic: it uses Abs; use a smooth expression such as a preset (tanh, sigmoid, softplus, gelu) or x + x**2
    """

    #: an activation, not a normalizer: its Taylor data are ``s`` itself (and errors say so)
    is_activation = True

    def __init__(self, expression, name: str | None = None):
        key = expression.strip().lower() if isinstance(expression, str) else None
        if key in ACTIVATION_PRESETS:
            self.expr, self.name = ACTIVATION_PRESETS[key], key
        elif isinstance(expression, str):
            if expression.strip().isidentifier() and expression.strip() != "x":
                raise NormalizerError(f"unknown activation {expression.strip()!r:.80}: presets are "
                                      f"{', '.join(ACTIVATION_PRESETS)}; or give an expression in x such as 'x + x**2'")
            self.expr = parse_expression(expression, {}, what="activation", limits=NORMALIZER_LIMITS,
                                         error=NormalizerError, variable=x)
            self.name = name or expression.strip()
        elif isinstance(expression, sp.Expr):
            self.expr, self.name = expression, name or str(expression)
        else:
            raise NormalizerError(f"an activation is a preset ({', '.join(ACTIVATION_PRESETS)}) or an expression "
                                  f"in x; got {type(expression).__name__} {expression!r:.60}")
        free = self.expr.free_symbols
        if free - {x}:
            raise NormalizerError(f"activation {self.name} must be a function of x alone, got the symbols "
                                  f"{', '.join(sorted(map(str, free)))}")
        self.is_generic = False
        self._symbols = {}
        self._taylor = []
        check_analytic_function(self.expr, self.name, what="activation",
                                smooth=f"a preset ({', '.join(ACTIVATION_PRESETS)}) or x + x**2",
                                constant=": the block would forget its input")
        check_size(self.expr, expression)

    def _compute_taylor(self, n: int) -> list:
        return function_taylor(self.expr, n)

    @cached_property
    def homogeneous_degree(self) -> int | None:
        """``m`` when ``s(x) = c x^m`` (then ``s(lambda x) = lambda^m s(x)``: a continuous symmetry), else None.

        Examples
        --------
        >>> Activation("x**2").homogeneous_degree, Activation("3*x").homogeneous_degree
        (2, 1)
        >>> Activation("x + x**2").homogeneous_degree, Activation("tanh").homogeneous_degree
        (None, None)
        """
        if not self.expr.is_polynomial(x):
            return None
        terms = sp.Poly(self.expr, x).terms()
        return int(terms[0][0][0]) if len(terms) == 1 and terms[0][0][0] >= 1 else None

    @cached_property
    def is_odd(self) -> bool:
        """Whether ``s(-x) = -s(x)`` (then each hidden unit's sign flip keeps the block)."""
        return sp.simplify(self.expr.subs(x, -x) + self.expr) == 0

    def function(self) -> sp.Function:
        """The unevaluated function symbol ``sigma`` used in closed forms."""
        return sp.Function("sigma")

    def to_json(self) -> dict:
        return {"name": self.name, "expression": str(self.expr), "odd": self.is_odd}

    def __repr__(self) -> str:
        return f"Activation({self.name!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Activation) and self.expr == other.expr

    def __hash__(self) -> int:
        return hash(("activation", self.expr))


@dataclass(frozen=True)
class FeedForward(Component):
    """``x -> W_out s(W_in x)`` on every token, ``hidden`` units; the stream's width is kept.

    Examples
    --------
    >>> block = FeedForward(3, Activation("tanh"))
    >>> block.parameter_blocks(2, 4)
    [(('Win', 2), (3, 4)), (('Wout', 2), (4, 3))]
    >>> block.discrete_group_order(), block.describe()
    (48, 'feed-forward block (3 hidden units, activation tanh; W_in scales with the collapse)')
    """

    hidden: int
    activation: Activation
    kind = "feed-forward"

    def __post_init__(self):
        if not isinstance(self.hidden, int) or isinstance(self.hidden, bool) or self.hidden < 1:
            raise NormalizerError(f"a feed-forward block needs a positive number of hidden units, got "
                                  f"{self.hidden!r:.40}")
        if not isinstance(self.activation, Activation):
            object.__setattr__(self, "activation", Activation(self.activation))

    def parameter_blocks(self, layer: int, d_in: int) -> list:
        return [(("Win", layer), (self.hidden, d_in)), (("Wout", layer), (d_in, self.hidden))]

    def step(self, domain, stream, blocks: dict, layer: int) -> None:
        stream.start_block()
        pre = self.linear(domain, blocks, "Win", layer, stream.hidden)
        # the domain applies a function entrywise from its Taylor data (for a normalizer, s/s(0); here s)
        stream.hidden = self.linear(domain, blocks, "Wout", layer, domain.apply_normalizer(pre, self.activation))

    def linear(self, domain, blocks: dict, name: str, layer: int, x):
        """``W x`` for the block's weight ``name`` (``Win`` or ``Wout``); a biased block adds its bias."""
        return domain.matmul(blocks[(name, layer)], x)

    def stream_roles(self, layer: int, d_in: int) -> tuple[list, list]:
        return [("Win", layer)], [("Wout", layer)]

    def _hidden_inputs(self, layer: int) -> list:
        """The blocks that make the activation's argument (``W_in``; with biases ``b_in`` too)."""
        return [("Win", layer)]

    def tangents(self, layer: int, d_in: int) -> list:
        """The continuous symmetries of a homogeneous activation ``s(x) = c x^m``, derived from ``s(l x) = l^m s(x)``.

        ``m = 1`` (a linear block ``c W_out W_in``): ``GL(M)`` of the hidden
        units, ``W_in -> G W_in``, ``W_out -> W_out G^{-1}``; ``m >= 2``: each
        unit's scaling, row ``j`` of ``W_in`` by ``l`` and column ``j`` of
        ``W_out`` by ``l^{-m}``.  Any other activation has none.

        Examples
        --------
        >>> len(FeedForward(2, "x**2").tangents(1, 3)), len(FeedForward(2, "x").tangents(1, 3))
        (2, 4)
        >>> FeedForward(2, "tanh").tangents(1, 3)
        []
        """
        m = self.activation.homogeneous_degree
        if m is None:
            return []
        M = self.hidden
        inputs = self._hidden_inputs(layer)
        if m == 1:
            generators = list(elementary(M))
        else:
            generators = [np.diag(np.eye(M, dtype=np.int64)[j]) for j in range(M)]
        out = []
        for E in generators:
            terms = {key: (E, None, None) for key in inputs}
            terms[("Wout", layer)] = (None, -m * E if m > 1 else -E, None)
            out.append(Tangent(terms, group="scaling" if m > 1 else "gauge"))
        return out

    def symmetry_text(self) -> str:
        """The derived continuous symmetries in words (a homogeneous activation's), else empty.

        Examples
        --------
        >>> FeedForward(2, "x**2").symmetry_text(), FeedForward(2, "tanh").symmetry_text()
        ('the scaling of each hidden unit (s(l x) = l^2 s(x))', '')
        """
        m = self.activation.homogeneous_degree
        if m is None:
            return ""
        return ("GL(M) of the hidden units (a linear block)" if m == 1 else
                f"the scaling of each hidden unit (s(l x) = l^{m} s(x))")

    def tangent_count(self, layer: int, d_in: int, group: str | None = None) -> int:
        m = self.activation.homogeneous_degree
        counts = {"gauge": self.hidden ** 2 if m == 1 else 0, "scaling": self.hidden if m is not None and m > 1 else 0}
        return sum(counts.values()) if group is None else counts.get(group, 0)

    def analytic_functions(self) -> tuple:
        return (self.activation,)

    # -- observability rules (symattn.observe): the block acts token by token, W_out s(W_in x) --
    @cached_property
    def _value_at_zero(self):
        return self.activation.taylor(1)[0]

    def observe_node(self, layer: int, d_in: int) -> dict:
        """The graph's node ``feed-forward:i``, holding ``W_in,i`` and ``W_out,i``.

        Examples
        --------
        >>> FeedForward(2, Activation("tanh")).observe_node(1, 2)["label"]
        'W_out,1 s(W_in,1 x)'
        """
        node = super().observe_node(layer, d_in)
        node.update(label=f"W_out,{layer} s(W_in,{layer} x)",
                    latex=rf"W^{{\mathrm{{out}}}}_{{{layer}}} \sigma(W^{{\mathrm{{in}}}}_{{{layer}}} x)")
        return node

    def observe_stream(self, states: dict, origin: str) -> dict:
        """Token by token: equal tokens stay equal, input-independent ones stay so; zero ones become ``W_out s(0)``.

        A zero input gives the tokens ``W_out s(0)``: zero when ``s(0) = 0``
        (``tanh``), else one vector, the same for every token and input
        (``sigmoid``).  Nothing else survives the nonlinearity (a constant
        coordinate, a subspace).

        Examples
        --------
        >>> FeedForward(1, Activation("tanh")).observe_stream({"zero": "values:1"}, "feed-forward:1")
        {'zero': 'values:1'}
        >>> FeedForward(1, Activation("sigmoid")).observe_stream({"zero": "values:1"}, "feed-forward:1")
        {'identical': 'values:1', 'input-independent': 'values:1'}
        >>> FeedForward(1, Activation("tanh")).observe_stream({"identical": "scores:1", "rank<=1": "values:1"}, "f")
        {'identical': 'scores:1'}
        """
        if "zero" in states:
            if self._value_at_zero == 0:
                return {"zero": states["zero"]}
            return {"identical": states["zero"], "input-independent": states["zero"]}
        return {state: states[state] for state in ("identical", "input-independent") if state in states}

    def observe_span(self, span: int, width: int, states: dict) -> int:
        """``min(d_i, M)``: the tokens ``W_out s(W_in x)`` span the image of ``W_out`` (one vector for a fixed input).

        Examples
        --------
        >>> block = FeedForward(2, Activation("sigmoid"))
        >>> block.observe_span(1, 3, {}), block.observe_span(0, 3, {"zero": "values:1"})
        (2, 1)
        """
        if "zero" in states:
            return 0 if self._value_at_zero == 0 else 1
        if "input-independent" in states or span == 0:
            return min(span, 1)
        return min(width, self.hidden)

    def observe_reach(self, reach: int, width: int) -> int:
        """``min(d_i, M)``: a functional of the output reads every row of ``W_in`` (each unit its own ``s'``).

        Examples
        --------
        >>> FeedForward(1, Activation("tanh")).observe_reach(2, 3), FeedForward(4, Activation("tanh")).observe_reach(1, 3)
        (1, 3)
        """
        return min(width, self.hidden) if reach > 0 else 0

    def observe_commutant(self, width: int) -> int:
        """``(d_i - M)^2``: ``G = I + N`` with ``W_in N = 0`` and ``N W_out = 0`` commutes with the block.

        Examples
        --------
        >>> FeedForward(1, Activation("tanh")).observe_commutant(3), FeedForward(2, Activation("tanh")).observe_commutant(2)
        (4, 0)
        """
        return max(0, width - self.hidden) ** 2

    def observe_verdict(self, states: dict, span: int, generic_span: int, reach: int | None = None,
                        generic_reach: int | None = None) -> tuple:
        """``W_in,i`` and ``W_out,i`` are seen when the block's input is neither zero, fixed, nor confined.

        Examples
        --------
        >>> FeedForward(1, Activation("sigmoid")).observe_verdict({"zero": "values:1"}, 0, 2)[:2]
        ('partial', 'zero-input')
        >>> FeedForward(1, Activation("tanh")).observe_verdict({}, 1, 2)[:2]
        ('partial', 'low-rank-input')
        """
        if "zero" in states:
            if self._value_at_zero == 0:
                return ("unobservable", "zero-input", "its input is zero and s(0) = 0: the block outputs 0 "
                        "whatever W_in, W_out are")
            return ("partial", "zero-input", "its input is zero: W_in multiplies 0 and only W_out s(0) "
                    "reaches the output")
        if "input-independent" in states:
            return ("partial", "fixed-input", "its input is the same vector for every input: the block is "
                    "seen at one point only")
        if span < generic_span:
            return ("partial", "low-rank-input", f"its input tokens lie in a {span}-dimensional subspace (generic "
                    f"{generic_span}): only W_in restricted to it reaches the output")
        if reach is not None and generic_reach is not None and reach < generic_reach:
            return ("partial", "narrow-reach", f"the rest of the network reads only {reach} functional(s) of its "
                    f"output (generic {generic_reach}): only that part of W_out reaches the output")
        return "observable", "live-path", "a path to the output through nodes that nothing forces"

    def discrete_group_order(self) -> int:
        """``M!`` permutations of the hidden units, times ``2^M`` sign flips for an odd activation."""
        return math.factorial(self.hidden) * (2 ** self.hidden if self.activation.is_odd else 1)

    def discrete_symmetry_text(self) -> str:
        """The ``M!`` permutations of the hidden units, and the ``2^M`` sign flips of an odd activation.

        Examples
        --------
        >>> FeedForward(2, Activation("tanh")).discrete_symmetry_text()
        'the 2 permutations of the hidden units and the 4 sign flips of their weights'
        """
        # counts in words, no formula: the text is set as text in LaTeX as well
        return (f"the {math.factorial(self.hidden)} permutations of the hidden units" + (
            f" and the {2 ** self.hidden} sign flips of their weights" if self.activation.is_odd else ""))

    def describe(self) -> str:
        return (f"feed-forward block ({self.hidden} hidden unit{'s' if self.hidden > 1 else ''}, activation "
                f"{self.activation.name}; W_in scales with the collapse)")

    def layer_map(self, stream: str) -> tuple[str, str]:
        """``W_out,i sigma(W_in,i y)`` on the stream ``y`` (``sigma`` the activation).

        Examples
        --------
        >>> FeedForward(2, "tanh").layer_map("Y_i")[0]
        'W_out,i sigma(W_in,i Y_i)'
        """
        return (f"W_out,i sigma(W_in,i {stream})",
                rf"W^{{\mathrm{{out}}}}_i\, \sigma\!\left(W^{{\mathrm{{in}}}}_i {stream}\right)")

    def grid_fields(self) -> dict:
        return {"ffn": self.hidden, "activation": self.activation.name}

    def to_json(self) -> dict:
        return {"kind": self.kind, "hidden": self.hidden, "activation": self.activation.name}


