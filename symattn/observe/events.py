"""Events: collapses of parameters and special classes of inputs."""

from __future__ import annotations

import functools
from dataclasses import dataclass


from .. import naming
from ..errors import ShapeError, SymattnError
from ..model import Architecture, require_architecture

__all__ = ["Event", "all_events", "bias_coordinate", "identical_tokens", "parse_event", "score_collapse", "validated_events",
           "value_collapse", "value_rank"]


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
@functools.total_ordering
@dataclass(frozen=True)
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
    head : int or None
        One head of a layer with several (``scores:i:h``: ``Q_{i,h} = 0``;
        ``values:i:h``: ``V_{i,h} = 0``; ``value-rank:i:r:h``: ``V_{i,h}`` of
        rank ``r``); ``None``: every head of the layer.

    Examples
    --------
    >>> value_rank(1, 1).name, score_collapse(2).name, bias_coordinate().name
    ('value-rank:1:1', 'scores:2', 'bias')
    >>> parse_event("value-rank:2:1") == value_rank(2, 1)
    True
    >>> score_collapse(1, head=2).name, sorted([score_collapse(1, head=2), score_collapse(1)])[0].name
    ('scores:1:2', 'scores:1')
    """

    kind: str
    layer: int | None = None
    rank: int | None = None
    head: int | None = None

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise SymattnError(f"unknown event kind {self.kind!r}; kinds are {', '.join(_KINDS)}")
        if self.head is not None and self.kind not in (SCORE_COLLAPSE, VALUE_COLLAPSE, VALUE_RANK):
            raise SymattnError(f"only parameter events happen in one head, not {self.kind}")

    def _order(self) -> tuple:
        # None (no layer, rank or head: the whole layer) sorts first
        return (self.kind, self.layer or 0, self.rank or 0, self.head or 0)

    def __lt__(self, other) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return self._order() < other._order()

    @property
    def whole_layer(self) -> bool:
        """Whether the event holds in every head of its layer (always, in a layer with one head)."""
        return self.head is None

    @property
    def name(self) -> str:
        """Short name, as the CLI writes it: ``scores:2``, ``values:1``, ``value-rank:1:1``, ..."""
        return self._name().key

    @property
    def block(self) -> str | None:
        """The effective block the event fixes or constrains (``None`` for input events)."""
        if self.kind == SCORE_COLLAPSE:
            return naming.block_key(self.layer)
        if self.kind in (VALUE_COLLAPSE, VALUE_RANK):
            return naming.block_key(None)
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

    def _name(self, arch=None):
        return naming.event(self.kind, self.layer, self.rank, head=self.head, **_layer_variant(arch, self.layer))

    def describe(self, arch=None) -> str:
        """A sentence for tables and reasons (the meaning in :mod:`symattn.naming`).

        With ``arch`` (an :class:`~symattn.model.Architecture` or its JSON), an
        event at a layer with several heads is written for every head, and a
        score collapse where no effective block is derived by its parameters.

        Examples
        --------
        >>> bias_coordinate().describe()
        'inputs with a constant (bias) coordinate (last row of X constant)'
        >>> from symattn.model import Architecture
        >>> score_collapse(1).describe(Architecture.uniform(layers=2, heads=2))
        'score collapse at layer 1 in every head (K_{1,h}^T Q_{1,h} = 0 for h = 1..2, realized by Q_{1,h} = 0)'
        """
        return self._name(arch).meaning

    def text(self, arch=None) -> str:
        """The event as a plain-text formula (``What_2 = 0``, ``V_{1,h} = 0 for h = 1..2``).

        Examples
        --------
        >>> value_collapse(1).text()
        'V_1 = 0'
        """
        return self._name(arch).text

    def latex(self, arch=None) -> str:
        """The event as a formula in LaTeX math mode (the symbol in :mod:`symattn.naming`).

        Examples
        --------
        >>> score_collapse(2).latex()
        '\\\\widehat W_{2} = 0'
        >>> from symattn.model import Architecture
        >>> score_collapse(2).latex(Architecture.uniform(layers=2, residual=True))
        'K_{2}^\\\\top Q_{2} = 0'
        """
        return self._name(arch).latex

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
        if self.head is not None:
            heads = arch.attention[self.layer - 1].heads
            whole = self.name.rsplit(":", 1)[0]
            if heads == 1:
                raise ShapeError(f"event {self.name}: layer {self.layer} has one head; write {whole}")
            if not (isinstance(self.head, int) and 1 <= self.head <= heads):
                raise ShapeError(f"event {self.name}: layer {self.layer} has heads 1..{heads}")
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


def _layer_variant(arch, layer) -> dict:
    """``heads`` of ``layer`` and ``effective`` (the network factors through its effective blocks) for
    :func:`symattn.naming.event`, from an Architecture or its JSON; nothing without one."""
    if arch is None or layer is None:
        return {}
    if isinstance(arch, dict):
        heads = arch.get("heads") or [1] * int(arch["layers"])
        return {"heads": heads[layer - 1], "effective": not arch.get("residual") and max(heads) == 1}
    return {"heads": arch.attention[layer - 1].heads, "effective": arch.factors_through_effective}


def score_collapse(layer: int, head: int | None = None) -> Event:
    """``What_i = 0`` at ``layer`` (realized by ``Q_i = 0``); with ``head``, ``Q_{i,h} = 0`` in that head only.

    Examples
    --------
    >>> score_collapse(1).describe()
    'score collapse at layer 1 (What_1 = 0, realized by Q_1 = 0)'
    >>> score_collapse(1, head=2).describe()
    'score collapse of head 2 of layer 1 (K_{1,2}^T Q_{1,2} = 0, realized by Q_{1,2} = 0)'
    """
    return Event(SCORE_COLLAPSE, int(layer), head=None if head is None else int(head))


def value_collapse(layer: int, head: int | None = None) -> Event:
    """``V_i = 0`` at ``layer``; with ``head``, ``V_{i,h} = 0`` in that head only.

    Examples
    --------
    >>> value_collapse(2).block, value_collapse(2, head=1).name
    ('values', 'values:2:1')
    """
    return Event(VALUE_COLLAPSE, int(layer), head=None if head is None else int(head))


def value_rank(layer: int, rank: int, head: int | None = None) -> Event:
    """``V_i`` of rank ``rank`` (below its generic rank); with ``head``, ``V_{i,h}`` of that head only.

    Examples
    --------
    >>> value_rank(1, 1).describe()
    'value map V_1 of rank 1'
    >>> value_rank(2, 1, head=2).name
    'value-rank:2:1:2'
    """
    return Event(VALUE_RANK, int(layer), int(rank), head=None if head is None else int(head))


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
    """An event from its short name: ``scores:I[:H]``, ``values:I[:H]``, ``value-rank:I:R[:H]``, ``identical-tokens``, ``bias``.

    Events pass through unchanged.

    Examples
    --------
    >>> parse_event("scores:3")
    Event(kind='score_collapse', layer=3, rank=None, head=None)
    >>> parse_event("keys:1")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: cannot read the event 'keys:1'; write scores:I, values:I, value-rank:I:R (or scores:I:H, values:I:H, value-rank:I:R:H for one head), identical-tokens or bias
    """
    if isinstance(text, Event):
        return text
    message = (f"cannot read the event {text!r}; write scores:I, values:I, value-rank:I:R (or scores:I:H, "
               "values:I:H, value-rank:I:R:H for one head), identical-tokens or bias")
    if not isinstance(text, str):
        raise SymattnError(message)
    parts = text.strip().lower().replace("_", "-").split(":")
    try:
        if parts[0] == "scores" and len(parts) in (2, 3):
            return score_collapse(int(parts[1]), *(int(part) for part in parts[2:]))
        if parts[0] == "values" and len(parts) in (2, 3):
            return value_collapse(int(parts[1]), *(int(part) for part in parts[2:]))
        if parts[0] == "value-rank" and len(parts) in (3, 4):
            return value_rank(int(parts[1]), int(parts[2]), *(int(part) for part in parts[3:]))
    except ValueError:
        raise SymattnError(message) from None
    if parts == ["identical-tokens"]:
        return identical_tokens()
    if parts == ["bias"]:
        return bias_coordinate()
    raise SymattnError(message)


def _events(arch: Architecture, events) -> tuple[Event, ...]:
    """The events validated, without repeats, in order; one-head events that cover a layer become its event.

    A collapse of every head of a layer is the layer's collapse, and a layer's
    collapse holds in each of its heads: ``scores:1:1`` with ``scores:1:2``
    (two heads) is ``scores:1``, and ``scores:1`` absorbs ``scores:1:2``.
    """
    out = []
    for e in events or ():
        event = parse_event(e).validate(arch)
        if event not in out:
            out.append(event)
    for layer in {e.layer for e in out if e.kind == SCORE_COLLAPSE and not e.whole_layer}:
        heads = {e.head for e in out if e.kind == SCORE_COLLAPSE and e.layer == layer and not e.whole_layer}
        whole = Event(SCORE_COLLAPSE, layer)
        if whole in out or len(heads) == arch.attention[layer - 1].heads:
            out = [e for e in out if not (e.kind == SCORE_COLLAPSE and e.layer == layer)] + [whole]
    # the value maps: at most one constraint per head (zero, or a rank); one that holds in every head is the layer's
    for layer in sorted({e.layer for e in out if e.kind in (VALUE_COLLAPSE, VALUE_RANK)}):
        value_events = [e for e in out if e.kind in (VALUE_COLLAPSE, VALUE_RANK) and e.layer == layer]
        constraint: dict[int, tuple] = {}
        for e in sorted(value_events, key=lambda e: not e.whole_layer):  # the layer's events first
            for h in (range(1, arch.attention[layer - 1].heads + 1) if e.whole_layer else [e.head]):
                if constraint.get(h, (e.kind, e.rank)) != (e.kind, e.rank):
                    raise SymattnError("two value events at the same layer contradict each other: "
                                       + ", ".join(e.name for e in value_events))
                constraint[h] = (e.kind, e.rank)
        kinds = set(constraint.values())
        if len(constraint) == arch.attention[layer - 1].heads and len(kinds) == 1:  # every head alike: the layer's event
            (kind, rank), = kinds
            out = [e for e in out if e not in value_events] + [Event(kind, layer, rank)]
        elif any(e.whole_layer for e in value_events):  # the layer's event already says it for each head
            out = [e for e in out if e not in value_events or e.whole_layer]
    return tuple(sorted(out))


def validated_events(arch: Architecture, events) -> tuple[Event, ...]:
    """The events checked against ``arch``, without repeats, in order, one-head events covering a layer merged.

    What :func:`~symattn.observe.rank_check` computes with (and records as its ``events``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> [e.name for e in validated_events(Architecture.uniform(layers=1, heads=2), ["scores:1:1", "scores:1:2"])]
    ['scores:1']
    """
    return _events(require_architecture(arch), events)


def all_events(arch: Architecture) -> list[Event]:
    """Every single event of the architecture: collapses per layer (and per head), lower value ranks, input events.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> [e.name for e in all_events(Architecture.uniform(layers=2, width=2))]
    ['scores:1', 'scores:2', 'values:1', 'values:2', 'value-rank:1:1', 'value-rank:2:1', 'identical-tokens', 'bias']
    >>> [e.name for e in all_events(Architecture.uniform(layers=1, width=2, heads=2))][:4]
    ['scores:1', 'values:1', 'scores:1:1', 'scores:1:2']
    """
    arch = require_architecture(arch)
    out = [score_collapse(i) for i in range(1, arch.layers + 1)]
    out += [value_collapse(i) for i in range(1, arch.layers + 1)]
    # one head of a layer with several: its scores, its value map, a lower rank of its value map
    out += [make(i, h) for make in (score_collapse, value_collapse) for i in range(1, arch.layers + 1)
            if arch.attention[i - 1].heads > 1 for h in range(1, arch.attention[i - 1].heads + 1)]
    for i in range(1, arch.layers + 1):
        rows, cols = arch.block_shapes(i)["V"]
        if arch.attention[i - 1].heads > 1:
            out += [value_rank(i, r, h) for r in range(1, min(rows, cols)) for h in range(1, arch.attention[i - 1].heads + 1)]
    for i in range(1, arch.layers + 1):
        rows, cols = arch.block_shapes(i)["V"]
        out += [value_rank(i, r) for r in range(1, min(rows, cols))]
    out.append(identical_tokens())
    if arch.widths[0] >= 2:
        out.append(bias_coordinate())
    return out
