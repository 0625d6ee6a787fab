"""Deep attention: the architecture, its parameters, and one forward pass.

Layer ``i`` maps ``X_{i-1}`` (``d_{i-1} x t``, one token per column) to
``X_i = V_i X_{i-1} S(X_{i-1}^T K_i^T Q_i X_{i-1})``, where ``S`` normalizes
each column with the layer's normalizer.  Three variants combine freely:
``h_i`` heads per layer (``X_i = sum_h V_{i,h} X_{i-1} S(A_{i,h})``), a
causal mask (query ``k`` attends to keys ``j <= k`` only) and a residual
stream (``X_i = X_{i-1} + ...``).  :func:`forward` is written once against
the :class:`~symattn.algebra.domains.Domain` interface and runs on every
domain of :mod:`symattn.algebra`.

Examples
--------
>>> from symattn.model import Architecture, forward
>>> from symattn.algebra.domains import RationalDomain
>>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="1 + x**2")
>>> arch.param_count
8
>>> params = arch.parameters_from([[[1, 0]]], [[[0, 1]]], [[[1, 0], [0, 1]]])
>>> forward(arch, params, [[1, 0], [0, 1]], RationalDomain())
array([[Fraction(1, 3), Fraction(1, 2)],
       [Fraction(2, 3), Fraction(1, 2)]], dtype=object)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import sympy as sp

from .errors import ShapeError, SymattnError
from .limits import MAX_LAYERS
from .normalizers import normalizers_per_layer

__all__ = ["Architecture", "Parameters", "forward", "closed_form", "require_architecture", "require_seed",
           "MAX_LAYERS", "EntrySymbol", "entry_latex"]



def _short_repr(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_count(value) -> bool:
    # bool is an int subclass, but True layers or tokens is always a mistake
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _entry_parts(name: str):
    """``(matrix LaTeX, matrix unicode, index)`` of an entry name (``Kt1_12``, ``Q2h3_11``, ``x_12``), or None."""
    import re

    match = re.fullmatch(r"(?P<letter>[QKV])(?P<marker>t?)(?P<layer>[0-9]+)(?:h(?P<head>[0-9]+))?_(?P<index>[0-9]+)",
                         name)
    if match is None:
        found = re.fullmatch(r"x_(?P<index>[0-9]+)", name)
        return None if found is None else ("x", "x", found["index"])
    letter, layer, head = match["letter"], match["layer"], match["head"]
    sub = layer if head is None else f"{layer},{head}"
    tex = rf"\tilde{{{letter}}}" if match["marker"] else letter
    text = letter + ("\u0303" if match["marker"] else "")  # combining tilde: K̃
    return rf"({tex}_{{{sub}}})", f"({text}{sub.translate(_SUBSCRIPTS)})", match["index"]


def entry_latex(name: str) -> str | None:
    r"""The LaTeX of the entry symbol ``name``: ``(\tilde{K}_{1})_{12}``, ``(Q_{2,3})_{11}``, ``x_{12}``; else None.

    The entry ``(r, c)`` of the matrix the package writes ``\tilde{K}_{1}``
    (the base point of a curve), ``Q_{1}`` (a native parameter) or
    ``Q_{2,3}`` (head 3 of layer 2), and ``x_{rc}`` of the input ``X``, as
    in the matrix forms and :mod:`symattn.naming`.  Every printer of sympy
    uses it for the package's symbols (:class:`EntrySymbol`); names of other
    symbols give None.

    Examples
    --------
    >>> entry_latex("Kt1_12"), entry_latex("Q2h3_11"), entry_latex("x_12"), entry_latex("c_1")
    ('(\\tilde{K}_{1})_{12}', '(Q_{2,3})_{11}', 'x_{12}', None)
    """
    parts = _entry_parts(name)
    return None if parts is None else f"{parts[0]}_{{{parts[2]}}}"


class EntrySymbol(sp.Symbol):
    r"""A real sympy Symbol for one entry of a parameter block or of the input, printed as the package names it.

    Its ``name`` is the package's name (``Kt1_12``, ``Q1_11``, ``x_12``:
    what ``str``, JSON, fixtures and the parsers read); ``sympy.latex``
    writes it ``(\tilde{K}_{1})_{12}`` (:func:`entry_latex`) and
    ``sympy.pretty`` ``(K̃₁)₁₂`` (the name itself without unicode), inside
    any expression.  Otherwise it is the plain ``Symbol`` of that name and
    assumptions: equal to it, with its hash and its place in sympy's
    canonical order (the class keeps the name ``Symbol``, which sympy's
    ordering and hash read), so results compare, sort, substitute, cache
    and pickle as before.  (One difference remains: sympy's ``subs`` with
    this symbol as the key does not reach a plain ``Symbol`` of the same
    name inside an expression, sympy's ``subs`` comparing types; the
    package's ``subs`` and ``xreplace`` match by name, and sympy's
    ``xreplace`` matches both.)

    Examples
    --------
    >>> import sympy as sp
    >>> k = EntrySymbol("Kt1_12", real=True)
    >>> k == sp.Symbol("Kt1_12", real=True), hash(k) == hash(sp.Symbol("Kt1_12", real=True)), k.name
    (True, True, 'Kt1_12')
    >>> sp.latex(k**2 * EntrySymbol("x_12", real=True)), str(k**2)
    ('(\\tilde{K}_{1})_{12}^{2} x_{12}', 'Kt1_12**2')
    >>> sp.pretty(k, use_unicode=True), sp.pretty(k, use_unicode=False)
    ('(K̃₁)₁₂', 'Kt1_12')
    """

    __slots__ = ()

    def __eq__(self, other):
        # a plain Symbol of the same name and assumptions is this symbol (Basic.__eq__ compares types)
        if type(other) in (sp.Symbol, EntrySymbol):
            return self is other or self._hashable_content() == other._hashable_content()
        return super().__eq__(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = sp.Symbol.__hash__  # the hash of the plain Symbol (it reads the class name, kept below)

    def _eval_subs(self, old, new):
        # sympy's subs matches atoms by type as well (_aresame): a plain Symbol equal to this one is this one
        if type(old) is sp.Symbol and old == self:
            return new
        return super()._eval_subs(old, new)

    def _latex(self, printer):
        given = printer._settings.get("symbol_names") or {}
        if self in given:
            return given[self]
        return entry_latex(self.name) or printer._print_Symbol(self)

    def _pretty(self, printer):
        from sympy.printing.pretty.stringpict import prettyForm

        parts = _entry_parts(self.name)
        if parts is None or not printer._use_unicode:
            return prettyForm(self.name)
        return prettyForm(f"{parts[1]}{parts[2].translate(_SUBSCRIPTS)}")


# sympy orders and hashes by the class name (Basic.compare, class_key, __hash__): as "Symbol" the terms of every
# expression keep their order and hash; pickle finds the class by its qualified name, EntrySymbol
EntrySymbol.__name__ = "Symbol"


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


def _flag(value, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ShapeError(f"{what} must be True or False, got {type(value).__name__} {_short_repr(value)}")
    return bool(value)


@dataclass(frozen=True)
class Parameters:
    """Native parameters ``Q, K, V`` of every attention head (any matrix type).

    The tuples run over the heads of layer 1, then those of layer 2, ...
    (:meth:`Architecture.units`); with one head per layer entry ``i - 1`` is
    layer ``i``'s block.

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

    @property
    def layers(self) -> int:
        """The number of heads in all (the number of layers when every layer has one head)."""
        return len(self.Q)

    def flat(self) -> list:
        """All entries, head by head, ``Q`` then ``K`` then ``V``, row-major."""
        out = []
        for q, k, v in zip(self.Q, self.K, self.V):
            for m in (q, k, v):
                out.extend(sp.Matrix(m).reshape(1, len(sp.Matrix(m))).tolist()[0])
        return out


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
                 normalizer="softmax", heads=1, causal: bool = False, residual: bool = False):
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
        if self.residual:
            for i in range(1, layers + 1):
                if self.widths[i] != self.widths[i - 1]:
                    raise ShapeError(
                        f"a residual stream X_i = X_{{i-1}} + ... needs d_i = d_{{i-1}} at every layer; layer {i} "
                        f"maps width {self.widths[i - 1]} to width {self.widths[i]} (widths {list(self.widths)})")

    @classmethod
    def uniform(cls, layers: int = 3, width: int = 2, rank: int = 1, tokens: int = 3,
                normalizer="softmax", heads=1, causal: bool = False, residual: bool = False) -> "Architecture":
        """Constant widths and score ranks (``heads``, ``causal``, ``residual`` as for the class).

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
        return cls([width] * (layers + 1), [rank] * layers, tokens, normalizer, heads=heads, causal=causal,
                   residual=residual)

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
        return not self.causal and not self.residual and all(h == 1 for h in self.heads)

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
        return not self.residual and all(h == 1 for h in self.heads)

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
        return f"{key[0]}_{key[1]}" if len(key) == 2 else f"{key[0]}_{{{key[1]},{key[2]}}}"

    def blocks(self) -> list[tuple[tuple, tuple[int, int]]]:
        """``(key, shape)`` of every parameter block in flat order: per layer, per head, ``Q, K, V``.

        Examples
        --------
        >>> [key for key, _ in Architecture.uniform(layers=1, heads=2).blocks()]
        [('Q', 1, 1), ('K', 1, 1), ('V', 1, 1), ('Q', 1, 2), ('K', 1, 2), ('V', 1, 2)]
        """
        return [(self.block_key(name, i, h), shape) for i, h in self.units()
                for name, shape in self.block_shapes(i).items()]

    def parameters_from_blocks(self, blocks: dict) -> "Parameters":
        """Parameters from ``{block key: matrix}`` (every key of :meth:`blocks`), in any representation.

        Examples
        --------
        >>> arch = Architecture.uniform(layers=1, width=1, heads=2)
        >>> arch.parameters_from_blocks({key: [[n]] for n, (key, _) in enumerate(arch.blocks())}).V
        ([[2]], [[5]])
        """
        out = {"Q": [], "K": [], "V": []}
        for key, _ in self.blocks():
            out[key[0]].append(blocks[key])
        return Parameters(tuple(out["Q"]), tuple(out["K"]), tuple(out["V"]))

    @property
    def param_count(self) -> int:
        """Number of native parameters (entries of every ``Q, K, V`` of every head)."""
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
            # heads: Q1h2_11 is entry (1, 1) of Q_{1,2}; one head keeps the names Q1_11
            head = "" if len(key) == 2 else f"h{key[2]}"
            return kind(rows, cols, lambda r, c: EntrySymbol(f"{key[0]}{marker}{key[1]}{head}_{r + 1}{c + 1}",
                                                             real=True))

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
        unknown = set(changes) - {"widths", "score_ranks", "tokens", "normalizer", "heads", "causal", "residual"}
        if unknown:
            raise ShapeError(f"Architecture.replace takes widths, score_ranks, tokens, normalizer, heads, causal "
                             f"and residual, got {sorted(unknown)}")
        heads = self.heads[0] if len(set(self.heads)) == 1 else list(self.heads)
        values = {"widths": list(self.widths), "score_ranks": list(self.score_ranks), "tokens": self.tokens,
                  "normalizer": list(self.normalizers), "heads": heads, "causal": self.causal,
                  "residual": self.residual, **changes}
        if "normalizer" not in changes and len(values["score_ranks"]) != self.layers:
            names = {n.name for n in self.normalizers}
            values["normalizer"] = self.normalizers[0] if len(names) == 1 else values["normalizer"]
        return Architecture(values["widths"], values["score_ranks"], values["tokens"], values["normalizer"],
                            heads=values["heads"], causal=values["causal"], residual=values["residual"])

    def variant_json(self) -> dict:
        """The variant keys of :meth:`to_json`: empty for the plain model (whose JSON stays as it was).

        Examples
        --------
        >>> Architecture.uniform(layers=2, heads=[1, 2], causal=True).variant_json()
        {'heads': [1, 2], 'causal': True, 'residual': False}
        """
        if self.is_plain:
            return {}
        return {"heads": list(self.heads), "causal": self.causal, "residual": self.residual}

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
                self.residual)

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
        return (f"Architecture(widths={list(self.widths)}, score_ranks={list(self.score_ranks)}, "
                f"tokens={self.tokens}, normalizer={[n.name for n in self.normalizers]}{extra})")


def _check_input(arch: Architecture, X) -> None:
    try:
        shape = np.shape(np.array(X.tolist() if isinstance(X, sp.MatrixBase) else X, dtype=object))
    except ValueError as err:  # ragged nested lists
        raise ShapeError(f"input X must be a d_0 x t = {arch.input_shape[0]} x {arch.input_shape[1]} "
                         f"matrix; got ragged rows") from err
    if tuple(shape) != arch.input_shape:
        raise ShapeError(
            f"input X must be d_0 x t = {arch.input_shape[0]} x {arch.input_shape[1]} "
            f"(one token per column), got shape {tuple(shape)}"
        )


#: the domains ``forward`` takes by name
DOMAIN_NAMES = ("QQ", "float64")


def _named_domain(domain):
    if not isinstance(domain, str):
        return domain
    from .algebra.domains import FloatDomain, RationalDomain

    named = {"QQ": RationalDomain, "float64": FloatDomain}
    if domain not in named:
        raise SymattnError(f"unknown domain {domain[:40]!r}: give one of {', '.join(DOMAIN_NAMES)} "
                           "or a domain object from symattn.algebra.domains")
    return named[domain]()


def forward(arch: Architecture, params: Parameters, X, domain="QQ", convert: bool = True):
    """The network's output ``X_l`` on one input, computed in ``domain``.

    Parameters
    ----------
    arch : Architecture
    params : Parameters
        Matrices (nested lists, sympy or numpy) or, with ``convert=False``,
        matrices already in the domain's representation.
    X : matrix
        The input, ``d_0 x t``.
    domain : Domain or str
        Where to compute: ``"QQ"`` (exact rationals, the default),
        ``"float64"``, or a domain object from :mod:`symattn.algebra.domains`.
    convert : bool
        Convert ``params`` and ``X`` with ``domain.matrix`` first.

    Returns
    -------
    The output matrix in the domain's representation.

    Examples
    --------
    The same pass, exactly and in float64:

    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2")
    >>> params = arch.parameters_from([[[1]]], [[[1]]], [[[1]]])
    >>> forward(arch, params, [[0, 1]])
    array([[Fraction(1, 2), Fraction(2, 3)]], dtype=object)
    >>> forward(arch, params, [[0, 1]], "float64")
    array([[0.5, 0.6666666666666666]], dtype=object)

    A causal mask leaves the first token only itself to attend to, and a
    residual stream adds the layer's input:

    >>> masked = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2", causal=True,
    ...                               residual=True)
    >>> forward(masked, params, [[0, 1]])
    array([[Fraction(0, 1), Fraction(5, 3)]], dtype=object)
    """
    domain = _named_domain(domain)
    if convert:
        _check_input(arch, X)
        X = domain.matrix(X)
        Q = [domain.matrix(m) for m in params.Q]
        K = [domain.matrix(m) for m in params.K]
        V = [domain.matrix(m) for m in params.V]
    else:
        Q, K, V = params.Q, params.K, params.V
    # the mask is passed only when there is one, so that a domain's attention keeps its plain signature
    mask = {"causal": True} if arch.causal else {}
    hidden = X
    unit = 0
    for layer in range(arch.layers):
        normalizer = arch.normalizers[layer]
        output = None
        for _ in range(arch.heads[layer]):
            keys = domain.matmul(K[unit], hidden)
            queries = domain.matmul(Q[unit], hidden)
            scores = domain.matmul(domain.transpose(keys), queries)
            if normalizer.is_lightning:  # lightning attention (HMK) uses the (masked) scores as weights
                weights = domain.causal_mask(scores) if arch.causal else scores
            else:
                weights = domain.attention(scores, normalizer, **mask)
            head = domain.matmul(domain.matmul(V[unit], hidden), weights)
            output = head if output is None else domain.add(output, head)
            unit += 1
        hidden = domain.add(hidden, output) if arch.residual else output
    return hidden


def closed_form(arch: Architecture, unevaluated_normalizer: bool = False, engine: str = "sympy",
                max_params: int = 64) -> sp.Matrix:
    """The output ``F_theta(X)`` as a sympy Matrix in the symbols of the parameters and input.

    Parameters
    ----------
    unevaluated_normalizer : bool
        Write the normalizer as an undefined function ``s``.
    engine : {"sympy", "symengine"}
        Build with sympy, or with symengine (faster) and convert at the end.
    max_params : int
        Refuse larger architectures, whose closed forms are unreadable.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=1)
    >>> closed_form(arch)
    Matrix([[V1_11*x_11]])
    """
    if arch.param_count > max_params:
        raise ShapeError(
            f"the closed form of {arch.param_count} parameters is too large to print; "
            f"use at most {max_params} (or raise max_params)"
        )
    from .algebra.domains import SymEngineDomain, SympyDomain

    if engine == "symengine":
        domain = SymEngineDomain(unevaluated_normalizer)
    elif engine == "sympy":
        domain = SympyDomain(unevaluated_normalizer)
    else:
        raise ValueError(f"engine must be 'sympy' or 'symengine', got {engine!r}")
    output = forward(arch, arch.symbols(), arch.input_symbols(), domain)
    return domain.to_matrix(output)
