"""The architecture of a deep attention network: widths, tokens, and each layer's components.

An :class:`Architecture` is the input width, the token count and a tuple
of layers; a layer is a tuple of components (:mod:`symattn.model.components`):
attention with its normalizer and heads, optionally preceded by a causal
mask and followed by a residual add.  The parameter blocks, their order and
names, and the symmetries every analysis uses are read off the components.

Examples
--------
>>> from symattn.model import Architecture
>>> arch = Architecture.uniform(layers=2, width=2, rank=1, residual=True)
>>> [[c.kind for c in layer] for layer in arch.layer_components]
[['attention', 'residual stream'], ['attention', 'residual stream']]
>>> arch.param_count
16
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import sympy as sp

from ..errors import ShapeError, SymattnError
from ..limits import MAX_LAYERS
from ..normalizers import normalizers_per_layer
from .components import Attention, CausalMask, Component, Residual, Tangent, add_terms, elementary
from .symbols import EntrySymbol, block_label, entry_name

__all__ = ["Architecture", "Parameters", "require_architecture", "require_seed", "MAX_LAYERS", "feed_forward_block"]


def _short_repr(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_count(value) -> bool:
    # bool is an int subclass, but True layers or tokens is always a mistake
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def require_architecture(value, what: str = "arch") -> "Architecture":
    """``value`` itself when it is an :class:`Architecture`; a ShapeError naming it otherwise.

    Every public analysis calls this first, so that a wrong argument gives
    one clear message instead of an ``AttributeError`` from deep inside.

    Parameters
    ----------
    value : object
        The argument to check.
    what : str
        Its name in the message.

    Returns
    -------
    Architecture

    Raises
    ------
    ShapeError
        When ``value`` is not an :class:`Architecture`.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1)
    >>> require_architecture(arch) is arch
    True
    >>> require_architecture(None)
    Traceback (most recent call last):
    ...
    symattn.errors.ShapeError: arch must be a symattn.model.Architecture, e.g. Architecture.uniform(layers=2, width=2, rank=1, tokens=3); got NoneType None
    """
    if isinstance(value, Architecture):
        return value
    raise ShapeError(f"{what} must be a symattn.model.Architecture, e.g. Architecture.uniform(layers=2, "
                     f"width=2, rank=1, tokens=3); got {type(value).__name__} {_short_repr(value)}")


def require_seed(value, what: str = "seed") -> int:
    """``value`` as an int when it is a non-negative integer; a SymattnError otherwise.

    The one check of every random seed in the public API.  Negative seeds
    are refused rather than mapped to other seeds: numpy's generators refuse
    them, and a silent mapping would make two seeds give the same result.

    Parameters
    ----------
    value : object
        The seed to check.
    what : str
        Its name in the message.

    Returns
    -------
    int

    Raises
    ------
    SymattnError
        When ``value`` is not an integer ``>= 0`` (booleans and floats included).

    Examples
    --------
    >>> require_seed(3)
    3
    >>> require_seed(-1)
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: seed must be a non-negative integer (0, 1, 2, ...), got -1
    """
    if not _is_count(value) or value < 0:
        raise SymattnError(f"{what} must be a non-negative integer (0, 1, 2, ...), got {_short_repr(value)}")
    return int(value)


def _integer_list(values, what: str) -> list:
    """``values`` as a list, refusing what is not a finite sequence (None, a string, a number, a dict)."""
    if isinstance(values, (str, bytes, dict, set, frozenset)) or not hasattr(values, "__len__") \
            or not hasattr(values, "__iter__"):
        raise ShapeError(f"{what} must be a list of positive integers, got {type(values).__name__} "
                         f"{_short_repr(values)}")
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ShapeError(f"{what} must be a flat list of positive integers, got an array of shape "
                         f"{np.shape(values)}")
    try:
        length = len(values)
    except OverflowError:  # range(10**20): too long even to measure
        length = MAX_LAYERS + 2
    if length > MAX_LAYERS + 1:
        raise ShapeError(f"{what} lists more than {MAX_LAYERS + 1} entries; at most {MAX_LAYERS} layers "
                         "are accepted")
    return list(values)


def _positive_ints(values, what: str) -> tuple[int, ...]:
    out = []
    for v in values:
        if not _is_count(v) or v < 1:
            raise ShapeError(f"{what} must be positive integers, got {_short_repr(list(values))}")
        out.append(int(v))
    return tuple(out)


def _heads_per_layer(heads, layers: int) -> tuple[int, ...]:
    """``heads`` (one positive int, or one per layer) as a tuple of ``layers`` ints; a ShapeError otherwise."""
    accepted = (f"heads must be a positive integer (the same for every layer) or a list of {layers} "
                "positive integers (one per layer)")
    if _is_count(heads):
        values = [heads]
    elif isinstance(heads, (list, tuple)) or (isinstance(heads, np.ndarray) and heads.ndim == 1):
        values = list(heads)
        if len(values) != layers:
            raise ShapeError(f"{accepted}; got {len(values)} entries: {_short_repr(values)}")
    else:
        raise ShapeError(f"{accepted}; got {type(heads).__name__} {_short_repr(heads)}")
    for v in values:
        if not _is_count(v) or v < 1:
            raise ShapeError(f"{accepted}; got {_short_repr(heads)}")
        if v > MAX_LAYERS:
            raise ShapeError(f"heads must be at most {MAX_LAYERS} per layer, got {v}")
    return tuple(int(v) for v in values) * (layers if len(values) == 1 else 1)


def _extra_per_layer(extra, layers: int) -> tuple:
    """Components appended to every layer (one tuple), or one tuple per layer, as a tuple of ``layers`` tuples."""
    extra = tuple(extra or ())
    if all(isinstance(c, Component) for c in extra):
        return (extra,) * layers
    if len(extra) != layers or not all(isinstance(layer, (list, tuple)) and
                                       all(isinstance(c, Component) for c in layer) for layer in extra):
        raise ShapeError(f"extra components must be a tuple of components (for every layer) or {layers} such "
                         f"tuples (one per layer), got {_short_repr(extra)}")
    return tuple(tuple(layer) for layer in extra)


def _flag(value, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ShapeError(f"{what} must be True or False, got {type(value).__name__} {_short_repr(value)}")
    return bool(value)


@dataclass(frozen=True)
class Parameters:
    """Native parameters of a network (any matrix type): ``Q, K, V`` of every head, and other components' blocks.

    The tuples ``Q, K, V`` run over the heads of layer 1, then those of
    layer 2, ... (:meth:`Architecture.units`); with one head per layer entry
    ``i - 1`` is layer ``i``'s block.  The blocks of components other than
    attention (a feed-forward block, biases) are ``others``: ``(key,
    matrix)`` pairs; ``layout`` is the flat order of every block key
    (:meth:`Architecture.blocks`) when the parameters were built by the
    architecture.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=2)
    >>> params = arch.parameters_from_flat(range(1, 9))
    >>> params
    Parameters(Q=([[1, 2]],), K=([[3, 4]],), V=([[5, 6], [7, 8]],))
    >>> params.layers, params.flat()
    (1, [1, 2, 3, 4, 5, 6, 7, 8])
    """

    Q: tuple
    K: tuple
    V: tuple
    others: tuple = field(default=(), repr=False)
    layout: tuple = field(default=(), repr=False, compare=False)

    @property
    def layers(self) -> int:
        """The number of heads in all (the number of layers when every layer has one head)."""
        return len(self.Q)

    def flat(self) -> list:
        """All entries in parameter order (head by head ``Q`` then ``K`` then ``V``, then other blocks), row-major."""
        out = []
        for m in self._ordered():
            out.extend(sp.Matrix(m).reshape(1, len(sp.Matrix(m))).tolist()[0])
        return out

    def _ordered(self) -> list:
        attention = [m for q, k, v in zip(self.Q, self.K, self.V) for m in (q, k, v)]
        if not self.layout:
            return attention + [m for _, m in self.others]
        others = dict(self.others)
        position = iter(attention)
        return [others[key] if key in others else next(position) for key in self.layout]


def feed_forward_block(hidden: int, activation="tanh", residual: bool = False, bias: bool = False) -> tuple:
    """The components after attention for ``--ffn hidden --activation ...`` (``--residual``, ``--bias``).

    Examples
    --------
    >>> [c.kind for c in feed_forward_block(2, residual=True)]
    ['feed-forward', 'residual stream']
    >>> feed_forward_block(2, bias=True)[0].parameter_blocks(1, 2)[2]
    (('bin', 1), (2, 1))
    """
    if bias:
        from .bias import BiasedFeedForward as kind
    else:
        from .feedforward import FeedForward as kind
    block = kind(hidden, activation)
    return (block,) + ((Residual(),) if residual else ())


class Architecture:
    """Widths, score ranks, token count and normalizers of a deep attention network.

    Parameters
    ----------
    widths : sequence of int
        ``[d_0, ..., d_l]``: input width and each layer's output width.
    score_ranks : sequence of int
        ``[a_1, ..., a_l]``: rows of ``Q_i`` and ``K_i``.
    tokens : int
        ``t``, the number of tokens (columns of the input).
    normalizer : str, Normalizer, or a sequence of them (one per layer)
    heads : int or sequence of int
        ``h_i``, the heads of each layer (one int for all layers); head ``h``
        of layer ``i`` has its own ``Q_{i,h}, K_{i,h}`` (``a_i x d_{i-1}``)
        and ``V_{i,h}`` (``d_i x d_{i-1}``).
    causal : bool
        Mask the scores causally: query ``k`` attends to keys ``j <= k`` only.
    residual : bool
        ``X_i = X_{i-1} + (attention output)``; needs ``d_i = d_{i-1}``.
    extra : tuple of Component, or one tuple per layer
        Components after each layer's attention (and its residual add), e.g.
        a :class:`~symattn.model.feedforward.FeedForward` block; they keep
        the width.
    bias : bool
        Biases in every projection of attention (:mod:`symattn.model.bias`).

    Raises
    ------
    ShapeError
        When the lengths or values do not fit.

    Examples
    --------
    >>> arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer="softmax")
    >>> arch.layers, arch.param_count
    (2, 16)
    >>> Architecture([2, 2], [1, 1], tokens=3)
    Traceback (most recent call last):
    ...
    symattn.errors.ShapeError: 1 layer (widths [2, 2]) needs 1 score rank, got 2: [1, 1]
    >>> Architecture([2, 2, 2], [1, 1], heads=[1, 2], causal=True).param_count
    24
    >>> Architecture([2, 3], [1], residual=True)
    Traceback (most recent call last):
    ...
    symattn.errors.ShapeError: a residual stream X_i = X_{i-1} + ... needs d_i = d_{i-1} at every layer; layer 1 maps width 2 to width 3 (widths [2, 3])
    """

    def __init__(self, widths: Sequence[int], score_ranks: Sequence[int], tokens: int = 3,
                 normalizer="softmax", heads=1, causal: bool = False, residual: bool = False, extra=(),
                 bias: bool = False):
        widths = _integer_list(widths, "widths")
        score_ranks = _integer_list(score_ranks, "score ranks")
        if len(widths) < 2:
            raise ShapeError(
                f"widths must list d_0, ..., d_l with at least one layer, got {widths!r}"
            )
        self.widths = _positive_ints(widths, "widths")
        layers = len(widths) - 1
        if len(score_ranks) != layers:
            raise ShapeError(
                f"{layers} layer{'s' if layers > 1 else ''} (widths {widths}) needs {layers} "
                f"score rank{'s' if layers > 1 else ''}, got {len(score_ranks)}: {score_ranks}"
            )
        self.score_ranks = _positive_ints(score_ranks, "score ranks")
        if not _is_count(tokens) or tokens < 1:
            raise ShapeError(f"tokens must be a positive integer, got {_short_repr(tokens)}")
        self.tokens = int(tokens)
        normalizers = normalizers_per_layer(normalizer, layers)
        if len(normalizers) != layers:
            raise ShapeError(f"{layers} layers need {layers} normalizers, got {len(normalizers)}")
        self.normalizers = tuple(normalizers)
        self.heads = _heads_per_layer(heads, layers)
        self.causal = _flag(causal, "causal")
        self.residual = _flag(residual, "residual")
        self.bias = _flag(bias, "bias")
        if self.residual:
            for i in range(1, layers + 1):
                if self.widths[i] != self.widths[i - 1]:
                    raise ShapeError(
                        f"a residual stream X_i = X_{{i-1}} + ... needs d_i = d_{{i-1}} at every layer; layer {i} "
                        f"maps width {self.widths[i - 1]} to width {self.widths[i]} (widths {list(self.widths)})")
        self.extra = _extra_per_layer(extra, layers)
        self.layer_components = tuple(self._standard_layer(i) + self.extra[i - 1] for i in range(1, layers + 1))
        for i, layer in enumerate(self.extra, start=1):
            for component in layer:
                if component.output_width(self.widths[i]) != self.widths[i]:
                    raise ShapeError(f"component {component.describe()} of layer {i} changes the width "
                                     f"{self.widths[i]}; a component after attention must keep it")

    def _standard_layer(self, i: int) -> tuple:
        """Layer ``i``'s attention, with its mask before it and its residual add after it."""
        kind = Attention
        if self.bias:
            from .bias import BiasedAttention as kind
        attention = kind(self.widths[i], self.score_ranks[i - 1], self.normalizers[i - 1], self.heads[i - 1])
        return ((CausalMask(),) if self.causal else ()) + (attention,) + ((Residual(),) if self.residual else ())

    @property
    def attention(self) -> tuple:
        """The attention component of every layer, in order.

        Examples
        --------
        >>> [a.heads for a in Architecture.uniform(layers=2, heads=[1, 3]).attention]
        [1, 3]
        """
        return tuple(next(c for c in layer if isinstance(c, Attention)) for layer in self.layer_components)

    def components(self):
        """``(layer, input width, component)`` for every component, in forward order.

        Examples
        --------
        >>> [(i, d, c.kind) for i, d, c in Architecture.uniform(layers=1, causal=True).components()]
        [(1, 2, 'causal mask'), (1, 2, 'attention')]
        """
        for i, layer in enumerate(self.layer_components, start=1):
            width = self.widths[i - 1]
            for component in layer:
                yield i, width, component
                width = component.output_width(width)

    @property
    def analytic_functions(self) -> tuple:
        """Every function of known Taylor data the components apply (normalizers, activations), once each.

        Examples
        --------
        >>> Architecture.uniform(layers=2, normalizer="cosh").analytic_functions
        (Normalizer('cosh'),)
        """
        return tuple(dict.fromkeys(f for _, _, c in self.components() for f in c.analytic_functions()))

    def block_groups(self) -> dict:
        """``{block key: group}`` over every component (:meth:`~symattn.model.Component.block_groups`).

        Examples
        --------
        >>> Architecture.uniform(layers=1, width=1).block_groups()
        {('Q', 1): 'scores:1', ('K', 1): 'scores:1', ('V', 1): 'values'}
        """
        return {key: group for i, d_in, c in self.components() for key, group in c.block_groups(i, d_in).items()}

    def observe_groups(self) -> dict:
        """``{block key: group}`` for observability (:meth:`~symattn.model.Component.observe_groups`).

        Examples
        --------
        >>> Architecture.uniform(layers=1, width=1, bias=True).observe_groups()[("bK", 1)]
        'scores:1'
        """
        return {key: group for i, d_in, c in self.components() for key, group in c.observe_groups(i, d_in).items()}

    # -- symmetries read off the components ---------------------------------------
    def hidden_gauges(self) -> list:
        """The changes of basis of hidden streams that keep ``F``: ``[(layer, width, readers, writers), ...]``.

        Every computing component reads one stream and writes a new one; a
        residual add ties the stream it ends with to its block's input.  A
        class of tied streams that holds neither the input (fixed) nor the
        output (observed) carries ``H`` in ``GL(width)``: the blocks that
        write into it move as ``M -> H M`` (``writers``), the blocks that read
        it as ``M -> M H^{-1}`` (``readers``).  ``layer`` is the layer whose
        component writes the class's first stream.

        Examples
        --------
        >>> [(i, w, r) for i, w, r, _ in Architecture.uniform(layers=2).hidden_gauges()]
        [(1, 2, [('Q', 2), ('K', 2), ('V', 2)])]
        >>> Architecture.uniform(layers=3, residual=True).hidden_gauges()
        []
        """
        return self._gauge_classes()

    def hidden_translations(self) -> list:
        """The translations ``X -> X + c 1^T`` of hidden streams that biases absorb: ``[(width, terms)]``.

        Between two computing components ``A`` and ``B`` (in forward order)
        the stream ``B`` reads can move by ``c 1^T`` when ``A`` adds a bias to
        its output (``b -> b + c``: the first of them, one is enough), every
        weight of ``B`` that reads the stream has a bias beside it (``Q h + b_Q``:
        ``b_Q -> b_Q - Q c``), and, when a residual add sums ``B``'s output with
        the moved stream, ``B`` adds a bias to its output too (``-> b - c``,
        so that the sum is back where it was).  A block that cannot shift
        its output (lightning attention, ``S(A) = A``) absorbs the move and
        its residual add passes it on, to the next block that can shift it
        back.  With a residual stream this holds between every pair of biased
        blocks, without one between attention layers; ``terms`` are
        ``(bias, +1)``, ``(bias, -1)`` and ``(bias, weight)`` entries.

        Examples
        --------
        >>> Architecture.uniform(layers=2, bias=True).hidden_translations()
        [(2, [(('bV', 1), 1), (('bQ', 2), ('Q', 2)), (('bK', 2), ('K', 2)), (('bV', 2), ('V', 2))])]
        >>> len(Architecture.uniform(layers=2, bias=True, ffn=2, residual=True).hidden_translations())
        3
        >>> Architecture.uniform(layers=2).hidden_translations()
        []
        >>> through = Architecture.uniform(layers=2, bias=True, ffn=2, residual=True, normalizer="lightning")
        >>> [(key, move) for key, move in through.hidden_translations()[0][1] if move in (1, -1)]   # past attention 2
        [(('bout', 1), 1), (('bout', 2), -1)]
        """
        computing = []  # (component's translation roles, output width, followed by a residual add)
        for i, d_in, component in self.components():
            if component.computes:
                computing.append([component.translation_roles(i, d_in), component.output_width(d_in), False])
            elif component.ties_stream() and computing:
                computing[-1][2] = True
        out = []
        for k, (before, width, _) in enumerate(computing):
            if before is None or not before[1]:
                continue
            terms = [(before[1][0], 1)]
            for after, _, added in computing[k + 1:]:
                if after is None:
                    break
                terms += list(after[0])
                if not added:  # the block's readers absorbed the move and nothing adds the moved stream
                    out.append((width, terms))
                    break
                if after[1]:  # a residual add carries the move past the block: its bias shifts it back
                    out.append((width, terms + [(after[1][0], -1)]))
                    break
                # a block that cannot shift its output (lightning: S(A) = A) passes the move on through the
                # residual add to the next block, which absorbs it in turn
        return out

    def _gauge_classes(self) -> list:
        """Each class of tied hidden streams that carries a gauge: its layer, width, readers and writers."""
        parent = [0]
        width = [self.widths[0]]
        reads, writes, first_layer = {}, {}, [0]

        def root(s):
            while parent[s] != s:
                s = parent[s]
            return s

        current = block_input = 0
        for i, d_in, component in self.components():
            if component.computes:
                readers, writers = component.stream_roles(i, d_in)
                block_input = current
                current = len(parent)
                parent.append(current)
                width.append(component.output_width(d_in))
                first_layer.append(i)
                reads.setdefault(block_input, []).extend(readers)
                writes.setdefault(current, []).extend(writers)
            elif component.ties_stream():
                a, b = root(current), root(block_input)
                parent[max(a, b)] = min(a, b)
        fixed = {root(0), root(current)}
        out = []
        for s in range(1, len(parent)):
            if root(s) != s or s in fixed:
                continue
            members = [m for m in range(len(parent)) if root(m) == s]
            out.append((first_layer[s], width[s], [k for m in members for k in reads.get(m, [])],
                        [k for m in members for k in writes.get(m, [])]))
        return out

    def symmetry_tangents(self, group: str | None = None) -> list:
        """Tangents of the continuous symmetries, as :class:`~symattn.model.components.Tangent` values.

        The components' own (a ``gl(a_i)`` per head, lightning scalings),
        then a ``gl(width)`` per hidden gauge (:meth:`hidden_gauges`), then
        the translations biases absorb (:meth:`hidden_translations`);
        ``group`` keeps one kind (``"gauge"``, ``"scaling"``).

        Examples
        --------
        >>> len(Architecture.uniform(layers=2, width=2, rank=1).symmetry_tangents())    # 1 + 1 + 2^2
        6
        >>> len(Architecture.uniform(layers=1, normalizer="lightning").symmetry_tangents("scaling"))
        1
        """
        out = [t for i, d_in, component in self.components() for t in component.tangents(i, d_in)]
        for _, width, readers, writers in self.hidden_gauges():
            for E in elementary(width):
                terms = {}
                for key in writers:
                    terms[key] = (E, None, None)
                for key in readers:  # a block both writes and reads (V_i): H V_i - V_i H, both kept
                    terms[key] = add_terms(terms.get(key), (None, -E, None))
                out.append(Tangent(terms))
        for width, translation in self.hidden_translations():
            for r in range(width):  # X -> X + e_r 1^T: a writer's bias shifts, the readers' biases absorb -W e_r
                e = np.zeros((width, 1), dtype=np.int64)
                e[r, 0] = 1
                terms = {}
                for bias, move in translation:
                    # a residual layer's b_V absorbs -V e_r and shifts back by -e_r: add, never overwrite
                    terms[bias] = add_terms(terms.get(bias), (None, None, move * e) if isinstance(move, int)
                                            else (None, None, None, (move, -e)))
                out.append(Tangent(terms))
        return [t for t in out if group is None or t.group == group]

    def symmetry_dimension(self, group: str | None = None) -> int:
        """The number of :meth:`symmetry_tangents` (of ``group``, or all), counted without building them.

        Examples
        --------
        >>> arch = Architecture.uniform(layers=3, width=500, rank=500)
        >>> arch.symmetry_dimension()                      # 3 * 500^2 + 2 * 500^2, at once
        1250000
        >>> small = Architecture.uniform(layers=2, bias=True, ffn=2, residual=True)
        >>> small.symmetry_dimension() == len(small.symmetry_tangents())
        True
        """
        own = sum(c.tangent_count(i, d_in, group) for i, d_in, c in self.components())
        if group not in (None, "gauge"):
            return own
        return (own + sum(width ** 2 for _, width, _, _ in self.hidden_gauges())
                + sum(width for width, _ in self.hidden_translations()))

    @classmethod
    def uniform(cls, layers: int = 3, width: int = 2, rank: int = 1, tokens: int = 3,
                normalizer="softmax", heads=1, causal: bool = False, residual: bool = False, ffn=None,
                activation="tanh", extra=(), bias: bool = False) -> "Architecture":
        """Constant widths and score ranks (``heads``, ``causal``, ``residual``, ``extra`` as for the class).

        ``ffn=M`` adds a feed-forward block of ``M`` hidden units with
        ``activation`` after every layer's attention
        (:class:`~symattn.model.feedforward.FeedForward`; with ``residual``
        the block has its own residual add); ``bias`` gives attention (and
        the block) biases (:mod:`symattn.model.bias`).

        Examples
        --------
        >>> Architecture.uniform(layers=3).widths
        (2, 2, 2, 2)
        >>> Architecture.uniform(layers=2, heads=2, residual=True).describe()
        '2 layer(s), widths [2, 2, 2], score ranks [1, 1], 3 tokens, normalizer softmax, 2 heads per layer, residual stream'
        """
        if not _is_count(layers) or layers < 1:
            raise ShapeError(f"layers must be a positive integer, got {_short_repr(layers)}")
        if layers > MAX_LAYERS:
            raise ShapeError(f"layers must be at most {MAX_LAYERS}, got {layers}")
        if ffn is not None:
            extra = tuple(extra) + feed_forward_block(ffn, activation, residual=residual, bias=bias)
        return cls([width] * (layers + 1), [rank] * layers, tokens, normalizer, heads=heads, causal=causal,
                   residual=residual, extra=extra, bias=bias)

    # -- sizes ----------------------------------------------------------------------
    @property
    def layers(self) -> int:
        return len(self.score_ranks)

    @property
    def degenerate(self) -> bool:
        """One token: every attention matrix is the constant 1."""
        return self.tokens == 1

    @property
    def is_plain(self) -> bool:
        """One head per layer, no mask, no residual stream: the model of the paper.

        Examples
        --------
        >>> Architecture.uniform(layers=2).is_plain, Architecture.uniform(layers=2, causal=True).is_plain
        (True, False)
        """
        # read off the components: each layer is one attention of the paper's kind, with one head
        return all(len(layer) == 1 and type(layer[0]) is Attention and layer[0].heads == 1
                   for layer in self.layer_components)

    @property
    def factors_through_effective(self) -> bool:
        """``F = P X M_l`` in the effective parameters ``(What_1, ..., What_l, P)``.

        True with one head per layer and no residual stream (a causal mask
        keeps the closed form); with several heads or a residual stream no
        effective parameters are derived.

        Examples
        --------
        >>> Architecture.uniform(layers=2, causal=True).factors_through_effective
        True
        >>> Architecture.uniform(layers=2, heads=2).factors_through_effective
        False
        """
        return all(component.keeps_effective_form for _, _, component in self.components())

    def block_shapes(self, layer: int) -> dict[str, tuple[int, int]]:
        """Shapes of ``Q_i, K_i, V_i`` for layer ``i`` (1-based; the same for every head)."""
        d_in, d_out, a = self.widths[layer - 1], self.widths[layer], self.score_ranks[layer - 1]
        return {"Q": (a, d_in), "K": (a, d_in), "V": (d_out, d_in)}

    def units(self) -> list[tuple[int, int]]:
        """``(layer, head)`` of every attention head, in parameter order (both 1-based).

        Examples
        --------
        >>> Architecture.uniform(layers=2, heads=[2, 1]).units()
        [(1, 1), (1, 2), (2, 1)]
        """
        return [(i, h) for i in range(1, self.layers + 1) for h in range(1, self.heads[i - 1] + 1)]

    def block_key(self, name: str, layer: int, head: int = 1) -> tuple:
        """The key of a parameter block: ``(name, layer)`` in a one-head layer, else ``(name, layer, head)``.

        Examples
        --------
        >>> arch = Architecture.uniform(layers=2, heads=[2, 1])
        >>> arch.block_key("Q", 1, 2), arch.block_key("V", 2)
        (('Q', 1, 2), ('V', 2))
        """
        return (name, layer) if self.heads[layer - 1] == 1 else (name, layer, head)

    def block_label(self, key: tuple) -> str:
        """The name of a block as written in results: ``Q_1`` or, with heads, ``Q_{1,2}``.

        Examples
        --------
        >>> Architecture.uniform(layers=1, heads=2).block_label(("K", 1, 2))
        'K_{1,2}'
        """
        return block_label(key)

    def blocks(self) -> list[tuple[tuple, tuple[int, int]]]:
        """``(key, shape)`` of every parameter block in flat order: per layer, per head, ``Q, K, V``.

        Examples
        --------
        >>> [key for key, _ in Architecture.uniform(layers=1, heads=2).blocks()]
        [('Q', 1, 1), ('K', 1, 1), ('V', 1, 1), ('Q', 1, 2), ('K', 1, 2), ('V', 1, 2)]
        """
        return [block for i, width, component in self.components() for block in component.parameter_blocks(i, width)]

    def parameters_from_blocks(self, blocks: dict) -> "Parameters":
        """Parameters from ``{block key: matrix}`` (every key of :meth:`blocks`), in any representation.

        Examples
        --------
        >>> arch = Architecture.uniform(layers=1, width=1, heads=2)
        >>> arch.parameters_from_blocks({key: [[n]] for n, (key, _) in enumerate(arch.blocks())}).V
        ([[2]], [[5]])
        """
        out = {"Q": [], "K": [], "V": []}
        attention = {key for i, width, c in self.components() if isinstance(c, Attention)
                     for key, _ in c.parameter_blocks(i, width)}
        others, layout = [], []
        for key, _ in self.blocks():
            layout.append(key)
            if key in attention and key[0] in out:  # Q, K, V of a head (its biases are other blocks)
                out[key[0]].append(blocks[key])
            else:
                others.append((key, blocks[key]))
        return Parameters(tuple(out["Q"]), tuple(out["K"]), tuple(out["V"]), tuple(others), tuple(layout))

    def block_map(self, params: "Parameters") -> dict:
        """``{block key: matrix}`` of ``params``, every key of :meth:`blocks`.

        Examples
        --------
        >>> arch = Architecture.uniform(layers=1, width=1, heads=2)
        >>> arch.block_map(arch.parameters_from_flat(range(6)))[("V", 1, 2)]
        [[5]]
        """
        attention = {"Q": iter(params.Q), "K": iter(params.K), "V": iter(params.V)}
        others = dict(params.others)
        out = {}
        for key, _ in self.blocks():
            if key in others:
                out[key] = others[key]
            elif key[0] in attention and (block := next(attention[key[0]], None)) is not None:
                out[key] = block
            else:
                raise ShapeError(f"the parameters have no block {self.block_label(key)} of {self.describe()}; "
                                 "build them with parameters_from_blocks or parameters_from_flat")
        return out

    @property
    def param_count(self) -> int:
        """Number of native parameters (entries of every block of every component)."""
        return sum(r * c for _, (r, c) in self.blocks())

    def parameter_index(self) -> list[tuple]:
        """``(*block key, row, col)`` for each native parameter, in flat order.

        ``(name, layer, row, col)`` in a one-head layer, ``(name, layer, head,
        row, col)`` in a layer with several heads.
        """
        return [(*key, r, c) for key, (rows, cols) in self.blocks() for r in range(rows) for c in range(cols)]

    @property
    def input_shape(self) -> tuple[int, int]:
        return self.widths[0], self.tokens

    # -- symbols --------------------------------------------------------------------
    def symbols(self, marker: str = "", immutable: bool = False) -> Parameters:
        """Symbolic parameters ``Q_i, K_i, V_i`` (entries ``Q1_11`` etc., LaTeX ``Q^{(1)}_{11}``).

        ``marker`` goes after the block letter (``"t"`` gives the base point
        ``Qt1_11`` of a curve); ``immutable`` gives hashable matrices.

        Examples
        --------
        >>> Architecture.uniform(layers=1, width=2).symbols().Q[0]
        Matrix([[Q1_11, Q1_12]])
        """
        kind = sp.ImmutableMatrix if immutable else sp.Matrix

        def block(key, rows, cols):
            return kind(rows, cols, lambda r, c: EntrySymbol(entry_name(key, r, c, marker), real=True))

        return self.parameters_from_blocks({key: block(key, *shape) for key, shape in self.blocks()})

    def input_symbols(self) -> sp.Matrix:
        """The symbolic input ``X`` (entries ``x_11`` ... , one token per column)."""
        d0, t = self.input_shape
        return sp.Matrix(d0, t, lambda r, c: EntrySymbol(f"x_{r + 1}{c + 1}", real=True))

    def parameters_from(self, Q, K, V) -> Parameters:
        """Parameters from lists of matrices (one per head, :meth:`units` order), checked against the shapes."""
        blocks = {"Q": list(Q), "K": list(K), "V": list(V)}
        units = self.units()
        for name, mats in blocks.items():
            if len(mats) != len(units):
                what = "one per layer" if len(units) == self.layers else f"one per head: heads {list(self.heads)}"
                raise ShapeError(f"{name} needs {len(units)} matrices ({what}), got {len(mats)}")
            for (i, h), m in zip(units, mats):
                shape = np.shape(np.array(sp.Matrix(m).tolist() if isinstance(m, sp.MatrixBase) else m,
                                          dtype=object))
                expected = self.block_shapes(i)[name]
                if tuple(shape) != expected:
                    label = self.block_label(self.block_key(name, i, h))
                    raise ShapeError(f"{label} must be {expected[0]} x {expected[1]}, got shape {tuple(shape)}")
        if any(self.extra):
            raise ShapeError("parameters_from takes the attention blocks only; give every block of "
                             f"{self.describe()} with parameters_from_blocks or parameters_from_flat")
        return Parameters(tuple(blocks["Q"]), tuple(blocks["K"]), tuple(blocks["V"]))

    def parameters_from_flat(self, values: Sequence) -> Parameters:
        """Parameters from a flat list in :meth:`parameter_index` order."""
        values = list(values)
        if len(values) != self.param_count:
            raise ShapeError(f"expected {self.param_count} parameter values, got {len(values)}")
        blocks = {}
        position = 0
        for key, (rows, cols) in self.blocks():
            blocks[key] = [values[position + r * cols: position + (r + 1) * cols] for r in range(rows)]
            position += rows * cols
        return self.parameters_from_blocks(blocks)

    def replace(self, **changes) -> "Architecture":
        """A copy with some of ``widths, score_ranks, tokens, normalizer, heads, causal, residual`` changed.

        Heads that are the same in every layer follow a change of depth.

        Examples
        --------
        >>> Architecture.uniform(layers=2, heads=2, causal=True).replace(widths=[3, 3, 3], score_ranks=[2, 2])
        Architecture(widths=[3, 3, 3], score_ranks=[2, 2], tokens=3, normalizer=['softmax', 'softmax'], heads=2, causal=True, residual=False)
        """
        unknown = set(changes) - {"widths", "score_ranks", "tokens", "normalizer", "heads", "causal", "residual",
                                  "extra", "bias"}
        if unknown:
            raise ShapeError(f"Architecture.replace takes widths, score_ranks, tokens, normalizer, heads, causal, "
                             f"residual, extra and bias, got {sorted(unknown)}")
        heads = self.heads[0] if len(set(self.heads)) == 1 else list(self.heads)
        values = {"widths": list(self.widths), "score_ranks": list(self.score_ranks), "tokens": self.tokens,
                  "normalizer": list(self.normalizers), "heads": heads, "causal": self.causal,
                  "residual": self.residual,
                  # the same components in every layer follow a change of depth
                  "extra": self.extra[0] if len(set(self.extra)) == 1 else self.extra, "bias": self.bias, **changes}
        if "normalizer" not in changes and len(values["score_ranks"]) != self.layers:
            names = {n.name for n in self.normalizers}
            values["normalizer"] = self.normalizers[0] if len(names) == 1 else values["normalizer"]
        return Architecture(values["widths"], values["score_ranks"], values["tokens"], values["normalizer"],
                            heads=values["heads"], causal=values["causal"], residual=values["residual"],
                            extra=values["extra"], bias=values["bias"])

    def variant_json(self) -> dict:
        """The variant keys of :meth:`to_json`: empty for the plain model (whose JSON stays as it was).

        Examples
        --------
        >>> Architecture.uniform(layers=2, heads=[1, 2], causal=True).variant_json()
        {'heads': [1, 2], 'causal': True, 'residual': False}
        """
        if self.is_plain:
            return {}
        out = {"heads": list(self.heads), "causal": self.causal, "residual": self.residual}
        if any(self.extra):
            out["components"] = [[c.to_json() for c in layer] for layer in self.extra]
        if self.bias:
            out["bias"] = True
        return out

    def describe_variant(self) -> str:
        """The variant in words (empty for the plain model).

        Examples
        --------
        >>> Architecture.uniform(layers=2, heads=[1, 2], causal=True).describe_variant()
        'heads [1, 2], causal mask'
        """
        parts = []
        if any(h != 1 for h in self.heads):
            parts.append(f"{self.heads[0]} heads per layer" if len(set(self.heads)) == 1
                         else f"heads {list(self.heads)}")
        if self.causal:
            parts.append("causal mask")
        if self.residual:
            parts.append("residual stream")
        if self.bias:
            parts.append("biases")
        # a residual add after a component is that component's: "feed-forward block (...) with a residual add"
        extra = [", ".join(c.describe() for c in layer).replace(", residual stream", " with a residual add")
                 for layer in self.extra]
        if any(extra):
            parts.append(f"{extra[0]} in every layer" if len(set(extra)) == 1 else
                         "; ".join(f"layer {i}: {text or 'attention alone'}" for i, text in enumerate(extra, 1)))
        return ", ".join(parts)

    def to_json(self) -> dict:
        return {
            "layers": self.layers,
            "widths": list(self.widths),
            "score_ranks": list(self.score_ranks),
            "tokens": self.tokens,
            "normalizers": [n.name for n in self.normalizers],
            "degenerate": self.degenerate,
            **self.variant_json(),
        }

    def describe(self) -> str:
        norms = {n.name for n in self.normalizers}
        norm = norms.pop() if len(norms) == 1 else ", ".join(n.name for n in self.normalizers)
        variant = self.describe_variant()
        return (f"{self.layers} layer(s), widths {list(self.widths)}, score ranks "
                f"{list(self.score_ranks)}, {self.tokens} tokens, normalizer {norm}"
                + (f", {variant}" if variant else ""))

    def _identity(self) -> tuple:
        return (self.widths, self.score_ranks, self.tokens, self.normalizers, self.heads, self.causal,
                self.residual, self.extra, self.bias)

    def __eq__(self, other) -> bool:
        """Equal when every size, normalizer and variant flag is (not only the same object).

        Examples
        --------
        >>> import pickle
        >>> arch = Architecture.uniform(layers=2, normalizer="cosh")
        >>> arch == Architecture([2, 2, 2], [1, 1], tokens=3, normalizer="cosh")
        True
        >>> pickle.loads(pickle.dumps(arch)) == arch, arch == Architecture.uniform(layers=2)
        (True, False)
        >>> len({arch, Architecture.uniform(layers=2, normalizer="cosh")})
        1
        """
        if not isinstance(other, Architecture):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        extra = ""
        if not self.is_plain:
            heads = self.heads[0] if len(set(self.heads)) == 1 else list(self.heads)
            extra = f", heads={heads}, causal={self.causal}, residual={self.residual}"
            if any(self.extra):
                extra += f", extra={[[c.describe() for c in layer] for layer in self.extra]}"
            if self.bias:
                extra += ", bias=True"
        return (f"Architecture(widths={list(self.widths)}, score_ranks={list(self.score_ranks)}, "
                f"tokens={self.tokens}, normalizer={[n.name for n in self.normalizers]}{extra})")


