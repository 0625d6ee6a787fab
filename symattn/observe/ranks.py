"""Exact ranks on a collapsed set, and contact orders near it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .. import naming
from ..adaptive import DEEPEN, GROW_BANK, Growth, Step, adapt, doubled, grown_bank, refuse_renamed
from ..algebra.linalg import matmul_mod
from ..effective import (
    effective_block_dimensions,
    effective_dimension,
)
from .._format import FormattedResult, cell_text, latex_escape, plain_words
from ..errors import DomainError, NormalizerError, ShapeError, SymattnError
from ..curves import input_scaling
from ..jacobian import (
    DEFAULT_PRIMES,
    curve_series,
    field_note,
    field_primes,
    generator,
    jacobian_from_series,
    jacobian_series,
    parameter_columns,
    random_bank,
    random_point,
    symmetry_orbit_bound,
)
from ..model import Architecture, require_architecture, require_seed
from .events import (
    BIAS, COLLAPSED, Event, IDENTICAL_TOKENS, OBSERVABLE, PARTIAL, SCORE_COLLAPSE, UNOBSERVABLE, VALUE_COLLAPSE,
    VALUE_RANK, _events,
)
from .graph import _display_with_caption
from .layout import _block_of_group, _blocks

__all__ = ["ContactOrders", "RankCheck", "clear_rank_cache", "columns_on_set", "contact_orders", "first_rank_memory",
           "rank_check", "set_sample"]


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


def _layer_keys(arch: Architecture, name: str, layer: int) -> list:
    """The block keys of ``name`` in every head of ``layer`` (one key in a one-head layer)."""
    return [arch.block_key(name, layer, h) for h in range(1, arch.attention[layer - 1].heads + 1)]


def _event_keys(arch: Architecture, name: str, event: Event) -> list:
    """The block keys of ``name`` that ``event`` sets: its head's, or every head's of its layer."""
    if event.whole_layer:
        return _layer_keys(arch, name, event.layer)
    return [arch.block_key(name, event.layer, event.head)]


def _set_point(arch, events, p, seed):
    """A random point of the collapsed set (residues) and the tangent bases of value-rank blocks.

    An event at a layer with several heads holds in every head (``Q_{i,h} = 0``,
    ``V_{i,h} = 0``, ``V_{i,h}`` of rank ``r``), a one-head event in its head.
    """
    point, coefficient_values = random_point(arch, p, seed)
    rng = generator(seed, "value rank")
    tangents = {}
    for e in events:
        if e.kind == SCORE_COLLAPSE:
            for key in _event_keys(arch, "Q", e):
                point[key] = np.zeros_like(point[key])
        elif e.kind == VALUE_COLLAPSE:
            for key in _event_keys(arch, "V", e):
                point[key] = np.zeros_like(point[key])
        elif e.kind == VALUE_RANK:
            rows, cols = arch.block_shapes(e.layer)["V"]
            for key in _event_keys(arch, "V", e):
                B = rng.integers(1, p, size=(rows, e.rank), dtype=np.int64)
                C = rng.integers(1, p, size=(e.rank, cols), dtype=np.int64)
                point[key] = matmul_mod(B, C, p)
                tangents[key] = (B, C)
    return point, coefficient_values, tangents


def _set_bank(arch, events, size, p, seed) -> np.ndarray:
    bank = random_bank(arch, size, p, seed)
    kinds = {e.kind for e in events}
    if IDENTICAL_TOKENS in kinds:
        bank[:, :, :] = bank[:, :, :1]
    if BIAS in kinds:
        bank[:, -1, :] = 1  # the same bias value in every token and every input
    return bank


def set_sample(arch: Architecture, events, bank_size: int, p: int, seed: int) -> tuple:
    """The point of the collapsed set and the bank :func:`rank_check` draws from ``seed``: ``(point, coefficient values, bank)``.

    Examples
    --------
    >>> point, _, bank = set_sample(Architecture.uniform(layers=1, width=2), ["scores:1", "identical-tokens"], 2,
    ...                             101, 0)
    >>> point[("Q", 1)].tolist(), bool((bank == bank[:, :, :1]).all())
    ([[0, 0]], True)
    """
    events = _events(arch, events)
    point, coefficient_values, _ = _set_point(arch, events, p, seed)
    return point, coefficient_values, _set_bank(arch, events, bank_size, p, seed)


def columns_on_set(arch: Architecture, events) -> dict:
    """``{block: native Jacobian columns}`` of each block of observability, less those the events hold at 0.

    Only for score and value collapse (a value rank's directions are not columns).

    Examples
    --------
    >>> columns_on_set(Architecture.uniform(layers=1, width=2), ["scores:1"])
    {'scores:1': [2, 3], 'values': [4, 5, 6, 7]}
    """
    events = _events(arch, events)
    columns = parameter_columns(arch)
    groups = _observability_groups(arch)
    fixed = {key for e in events if e.kind == SCORE_COLLAPSE for key in _event_keys(arch, "Q", e)}
    fixed |= {key for e in events if e.kind == VALUE_COLLAPSE for key in _event_keys(arch, "V", e)}
    out: dict = {}
    for key, _ in arch.blocks():
        out.setdefault(groups[key], [])
        if key not in fixed:
            out[groups[key]] += columns[key]
    return out


def _rank(M, p) -> int:
    from ..algebra.valuations import smith_valuations

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
    fixed = {key for e in events if e.kind == SCORE_COLLAPSE for key in _event_keys(arch, "Q", e)}
    fixed |= {key for e in events if e.kind == VALUE_COLLAPSE for key in _event_keys(arch, "V", e)}
    pieces, owner = [], []  # tangent columns of the set and the block each belongs to
    groups = _observability_groups(arch)
    for key, _ in arch.blocks():  # the blocks of observability are per layer: every head of layer i
        block = groups[key]
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
    for block in _blocks(arch):
        if block == "values":
            continue
        blocks[block] = _rank(T[:, owner == block, :], p)
    tangent_total = _rank(T, p)
    blocks["values"] = _values_rank(T, owner, p, tangent_total)
    normal = {}
    for layer in sorted({e.layer for e in events if e.kind == SCORE_COLLAPSE}):
        # the directions leaving the set: the collapsed Q blocks of the layer (one head's, or every head's)
        keys = [key for e in events if e.kind == SCORE_COLLAPSE and e.layer == layer
                for key in _event_keys(arch, "Q", e)]
        normal[f"scores:{layer}"] = _rank(J[:, [c for key in keys for c in columns[key]], :], p)
    from ..algebra.valuations import smith_valuations

    full = smith_valuations(J, p)
    return {"blocks": blocks, "normal": normal, "total": full.resolved_rank, "tangent_total": tangent_total,
            "deepest": (max(full.exponents) + 1) if full.exponents else 0}


def _observability_groups(arch: Architecture) -> dict:
    """``{block key: block of observability}`` from the components (:meth:`~symattn.model.Architecture.block_groups`).

    Attention's ``scores:i:h`` count in ``scores:i`` (every head of layer
    ``i``), its value maps in ``values``, another component's blocks in its own
    groups (``feed-forward:i``).

    Examples
    --------
    >>> _observability_groups(Architecture.uniform(layers=1, width=1, heads=2, ffn=1))[("Q", 1, 2)]
    'scores:1'
    >>> _observability_groups(Architecture.uniform(layers=1, width=1, ffn=1))[("Wout", 1)]
    'feed-forward:1'
    """
    return {key: _block_of_group(group) for key, group in arch.observe_groups().items()}


def _is_score_block(block: str) -> bool:
    return block.startswith("scores:")


def _values_rank(T, owner, p, total=None) -> int:
    """The rank the value maps' columns add to those of every score block (the plain model's ``dim P``).

    The other components' blocks are ranked by their own columns and are
    not in the reference (with a feed-forward block each ``V_i`` moves with
    ``W_in,i`` by the hidden gauge: the rank added to them is 0).
    """
    scores = np.array([_is_score_block(b) for b in owner], dtype=bool)
    values = owner == "values"
    if total is not None and not (~scores & ~values).any():
        return total - _rank(T[:, scores, :], p)
    return _rank(T[:, scores | values, :], p) - _rank(T[:, scores, :], p)


def _same_ranks(a: dict, b: dict) -> bool:
    return all(a[key] == b[key] for key in ("blocks", "normal", "total", "tangent_total"))


def _generic_input_scaling_order(arch: Architecture) -> int:
    """The deepest exponent of the generic spectrum along ``X -> eps X``: ``2 k 3^(l-1) + 1``."""
    k = max(n.k or 1 for n in arch.normalizers)  # lightning (no k): linear scores, k taken as 1 as in the spectrum
    return 2 * k * 3 ** (arch.layers - 1) + 1


_DIMENSION_CACHE: dict = {}


def _effective_dimension(arch: Architecture) -> int:
    """The generic rank: the effective dimension, or for the variants #params minus the symmetry orbit."""
    if not arch.is_plain:
        key = ("variant", repr(arch.replace(normalizer="softmax")))
        if key not in _DIMENSION_CACHE:
            _DIMENSION_CACHE[key] = symmetry_orbit_bound(arch)
        return _DIMENSION_CACHE[key]
    key = (tuple(arch.widths), tuple(arch.score_ranks))  # independent of tokens and normalizers
    if key not in _DIMENSION_CACHE:
        _DIMENSION_CACHE[key] = effective_dimension(arch)
    return _DIMENSION_CACHE[key]


def _default_bank(arch: Architecture) -> int:
    eff = _effective_dimension(arch)
    values = effective_block_dimensions(arch)["values"] if arch.is_plain else arch.widths[-1] * arch.widths[0]
    score_dims = eff - values
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
    from ..limits import rank_check_memory

    size = _default_bank(arch) if bank == "auto" else int(bank)
    N = 2 * _generic_input_scaling_order(arch) + 2 if truncation == "auto" else int(truncation)
    return rank_check_memory(arch, grown_bank(size) if confirm else size, N)


def _require_rank_memory(arch: Architecture, bank_size: int, truncation: int, max_truncation: int | None = None,
                         chosen_bank: bool = False):
    """Refuse an exact rank that would not fit in memory, before its forward pass allocates anything."""
    from ..limits import MAX_BANK, check_count, check_memory, rank_check_memory

    if chosen_bank:  # an automatic bank too large is the network's size: the memory check names the flag that fits
        check_count(bank_size, MAX_BANK, "bank=")
    check_memory(rank_check_memory(arch, bank_size, truncation), arch=arch,
                 estimate_for=lambda resized: first_rank_memory(resized), max_series_order=max_truncation)


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
    truncation eps^8, bank 5, primes 268435399, confirmed: no
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
        lines.append(f"truncation eps^{self.truncation}, bank {self.bank}, primes {plain_words(list(self.primes))}, "
                     f"confirmed: {cell_text(self.confirmed)}")
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
    # an event that sets the block: a layer's collapse, or any value event (the values block holds every V);
    # a one-head score collapse leaves the other heads' scores, read off the rank like any block
    if any(e.block == block and (e.whole_layer or block == "values") for e in events):
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
               primes=None, confirm: bool = True, max_truncation: int = 512, max_bank: int = 64,
               progress: bool = False, max_memory=None, **renamed) -> RankCheck:
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
        beyond ``max_truncation``.

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
    refuse_renamed("rank_check", renamed)
    arch = require_architecture(arch)
    seed = require_seed(seed)
    events = _events(arch, events)
    if arch.degenerate:
        raise ShapeError("with one token every attention matrix is the constant 1 and no score is ever "
                         "seen: give tokens >= 2")
    if not all(attention.normalized for attention in arch.attention):
        raise NormalizerError("lightning attention is a comparison case: rank_check classifies "
                              "normalized attention only")
    primes = field_primes(arch, primes or DEFAULT_PRIMES)  # algebraic Taylor coefficients: primes with a root
    eff = _effective_dimension(arch)
    N, auto_order, size, auto_bank = _first_sizes(arch, bank, truncation)
    from ..limits import memory_limit_set, progress_bar

    with memory_limit_set(max_memory), progress_bar(progress, total=3 if confirm else 2, desc="exact ranks",
                                                    unit="rank") as bar:
        require_rank_fits(arch, bank, truncation, confirm, max_truncation)
        return _rank_check(arch, events, seed, primes, confirm, max_truncation, max_bank, eff, N, auto_order,
                           size, auto_bank, bar)


def _first_sizes(arch: Architecture, bank, truncation) -> tuple:
    """``(truncation, auto?, bank size, auto?)`` of the first ranks of :func:`rank_check`."""
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
    return N, auto_order, size, auto_bank


def require_rank_fits(arch: Architecture, bank="auto", truncation="auto", confirm: bool = True,
                      max_truncation: int = 512) -> None:
    """Refuse the first exact ranks of :func:`rank_check` when they would not fit, before any work.

    The series they need (deeper with every layer) and their memory under
    the limit in force (:func:`symattn.limits.memory_limit_set`); the later
    ranks are checked as they come.  :func:`symattn.observe.observe` calls it
    before the graph's propagation, so that a network too deep for the exact
    check is refused at once.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> require_rank_fits(Architecture.uniform(layers=2))
    >>> require_rank_fits(Architecture.uniform(layers=9))
    Traceback (most recent call last):
    ...
    symattn.errors.ResourceLimitError: --layers 9 --width 2 --rank 1 --tokens 3 needs series to eps^... for the exact ranks of observe, beyond the deepest truncation eps^512 it computes (each layer triples the order); --layers <= 5 fits
    """
    N, auto_order, size, auto_bank = _first_sizes(arch, bank, truncation)
    _require_rank_memory(arch, grown_bank(size) if confirm else size, N, max_truncation if auto_order else None,
                         chosen_bank=not auto_bank)


def _rank_check(arch, events, seed, primes, confirm, max_truncation, max_bank, eff, N, auto_order, size, auto_bank,
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

    def decide(generic, step, history):
        if generic["total"] >= eff:
            return []
        if not arch.is_plain and len(history) > 1 and history[-2][1]["total"] == generic["total"]:
            # the variants: the orbit bound need not be reached (a wider hidden layer than its input adds
            # kernel); a rank that a larger bank and truncation leave unchanged is the generic rank
            return []
        return [GROW_BANK, DEEPEN]

    adapted = adapt(lambda step: _generic_ranks(arch, p, seed, step.bank, step.truncation), Step(size, N),
                    decide,
                    Growth(max_bank=max_bank if auto_bank else None, max_truncation=max_truncation if auto_order else None,
                           grow_bank=doubled),
                    before_step=before_step)
    generic, size, N = adapted.outcome, adapted.step.bank, adapted.step.truncation
    if not adapted.concluded:
        raise SymattnError(
            f"the generic rank {generic['total']} stays below the "
            f"{'effective dimension' if arch.is_plain else 'symmetry-orbit bound'} {eff} "
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
              f"{generic['total']} = {'effective dimension' if arch.is_plain else '#params - symmetry orbit'} "
              f"resolves by eps^{resolved_at}; bank {size}"
              + (f"; confirmed at GF({primes[1]}), another point and a larger bank" if confirmed else "")
              + f"; generic rank, adaptive steps: {adapted.describe()}")
    if field_note(arch, primes[:2] if confirm and len(primes) > 1 else primes[:1]):
        method += "; " + field_note(arch, primes[:2] if confirm and len(primes) > 1 else primes[:1])
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
    from ..algebra.valuations import smith_valuations

    _require_rank_memory(arch, size, N)
    point, coefficient_values = random_point(arch, p, seed)
    bank = random_bank(arch, size, p, seed)
    series, inputs = curve_series(arch, input_scaling(), point, bank, p, N)
    rng = generator(seed, "near set")
    for key in _event_keys(arch, "Q" if event.kind == SCORE_COLLAPSE else "V", event):  # its head, or every head
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
    groups = _observability_groups(arch)
    out, score_columns, value_columns = {}, [], []
    for block in _blocks(arch):
        own = [c for key, _ in arch.blocks() if groups[key] == block for c in columns[key]]
        if block == "values":
            value_columns = own
            continue
        if _is_score_block(block):
            score_columns += own
        out[block] = list(smith_valuations(J[:, own, :], p).exponents)
    # the values: what their columns add to those of every score block, as in the ranks
    everything = list(smith_valuations(J[:, sorted(score_columns + value_columns), :], p).exponents)
    scores_only = list(smith_valuations(J[:, score_columns, :], p).exponents)
    for e in scores_only:
        everything.remove(e)
    out["values"] = everything
    return out


def contact_orders(arch: Architecture, event, seed: int = 0, bank="auto", primes=None, m_start: int = 2,
                   max_truncation: int = 2048) -> ContactOrders:
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
    p = field_primes(arch, (primes or DEFAULT_PRIMES)[:1])[0]
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
                    Growth(max_truncation=max_truncation))
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
    i = event.layer
    if not event.whole_layer:  # one head
        sub, every = f"{{{i},{event.head}}}", ""
        scores = f"K_{sub}^T Q_{sub}"
    elif arch.attention[i - 1].heads > 1:  # the event holds in every head: so does the distance to it
        sub, every = f"{{{i},h}}", f" (every head h = 1..{arch.attention[i - 1].heads})"
        scores = naming.layer_scores(i, arch.attention[i - 1].heads, arch.factors_through_effective).text
    else:
        sub, every = f"{i}", ""
        scores = naming.layer_scores(i, arch.attention[i - 1].heads, arch.factors_through_effective).text
    distance = {SCORE_COLLAPSE: f"Q_{sub} = delta Qt{every}, so {scores} ~ delta",
                VALUE_COLLAPSE: f"V_{sub} = delta Vt{every}",
                VALUE_RANK: f"V_{sub} = B C + delta E (rank {event.rank} plus delta){every}"}[event.kind]
    return ContactOrders(event, orders, distance, (m0, m0 + 1, m0 + 2), stable, N)
