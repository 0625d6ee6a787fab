"""Curves in parameter (and input) space along which the network is expanded in ``eps``.

A curve says, for every native parameter block, which power of ``eps``
multiplies the generic base point, optionally replaces blocks by user
polynomials in ``eps``, and scales the input by ``eps^input_power``.

Examples
--------
>>> from symattn.curves import collapse, input_scaling
>>> collapse().describe(3)
'simultaneous query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i (layers 1..3)'
>>> input_scaling().input_power
1
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .errors import ShapeError, SymattnError
from .parsing import to_sympy, to_sympy_matrix

__all__ = ["Curve", "collapse", "collapse_queries", "collapse_keys", "input_scaling", "polynomial_curve", "EPS"]

#: The curve parameter.
EPS = sp.Symbol("eps")

#: A component's block names that curves scale by ``eps``: ``name -> (the block it collapses with, "Q" or "K" or
#: None; whether it scales with the input too)``; a component registers its own (:func:`register_scaled_block`)
SCALED_BLOCKS: dict = {}


def register_scaled_block(name: str, collapses_with: str | None = "Q", with_input: bool = False) -> None:
    """Scale the blocks ``name`` by ``eps`` with the queries (``"Q"``) or keys (``"K"``) of the collapsed layers.

    A component whose step needs a Taylor series at 0 registers the blocks
    that make its argument (a feed-forward block's input weights; the query
    and key biases), so that on the collapse curve the argument vanishes at
    ``eps = 0``.  ``with_input``: the block also scales on a curve that scales
    the input (a bias, added to every token like a constant input feature).

    Examples
    --------
    >>> register_scaled_block("Win")
    >>> collapse().block_power("Win", 1), collapse_keys().block_power("Win", 1)
    (1, 0)
    """
    SCALED_BLOCKS[name] = (collapses_with, bool(with_input))


def register_query_like_block(name: str) -> None:
    """:func:`register_scaled_block` with the queries (the feed-forward block's ``W_in``).

    Examples
    --------
    >>> register_query_like_block("Win")
    >>> input_scaling().block_power("Win", 1)
    0
    """
    register_scaled_block(name, "Q")


@dataclass(frozen=True)
class Curve:
    """A curve ``eps -> (theta_eps, X_eps)`` through a generic point.

    Attributes
    ----------
    name : str
    query_layers, key_layers : tuple of int or None
        Layers whose ``Q_i`` (``K_i``) are multiplied by ``eps``; ``None`` means all.
    input_power : int
        The input is ``eps^input_power X``.
    polynomials : tuple
        ``((block, layer, matrix), ...)`` where ``block`` is ``"Q"``, ``"K"`` or
        ``"V"`` and ``matrix`` is a sympy Matrix of polynomials in ``EPS``
        that replaces that block.

    Examples
    --------
    Collapsing the queries of layer 1 alone: the keys stay generic, and the
    native Jacobian keeps every exponent at 0.

    >>> from symattn.model import Architecture
    >>> from symattn.spectrum import decay_spectrum
    >>> queries = Curve("query collapse at layer 1", query_layers=(1,))
    >>> queries.block_power("Q", 1), queries.block_power("K", 1), queries.block_power("V", 1)
    (1, 0, 0)
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
    >>> decay_spectrum(arch, curve=queries, progress=False).exponents
    {0: 2}
    >>> Curve("deeper", query_layers=(2,)).validate(arch)
    Traceback (most recent call last):
    ...
    symattn.errors.ShapeError: curve 'deeper' names layers [2]; the architecture has layers 1..1
    """

    name: str
    query_layers: tuple | None = ()
    key_layers: tuple | None = ()
    input_power: int = 0
    polynomials: tuple = field(default=())

    def scaled(self, block: str, layer: int) -> bool:
        # a component's block that collapses with the queries or keys, and perhaps scales with the input
        like, with_input = SCALED_BLOCKS.get(block, (block, False))
        if with_input and self.input_power:
            return True
        chosen = {"Q": self.query_layers, "K": self.key_layers}.get(like, ())
        return chosen is None or layer in chosen

    def block_power(self, block: str, layer: int) -> int | None:
        """The power of ``eps`` multiplying a block's base point; ``None`` when a polynomial replaces it.

        Examples
        --------
        >>> collapse().block_power("Q", 1), collapse().block_power("V", 1)
        (1, 0)
        >>> polynomial_curve({"K1": sp.Matrix([[EPS]])}).block_power("K", 1) is None
        True
        """
        if any((b, i) == (block, layer) for b, i, _ in self.polynomials):
            return None
        return 1 if self.scaled(block, layer) else 0

    def describe(self, layers: int) -> str:
        return self.name.replace("{layers}", f"1..{layers}")

    def validate(self, arch) -> None:
        for chosen in (self.query_layers, self.key_layers):
            if chosen is None:
                continue
            bad = [i for i in chosen if not 1 <= i <= arch.layers]
            if bad:
                raise ShapeError(f"curve {self.name!r} names layers {bad}; the architecture has layers 1..{arch.layers}")
        for block, layer, matrix in self.polynomials:
            if not 1 <= layer <= arch.layers:
                raise ShapeError(f"curve polynomial for {block}_{layer}: no such layer (1..{arch.layers})")
            expected = arch.block_shapes(layer)[block]
            if tuple(matrix.shape) != expected:
                raise ShapeError(f"curve polynomial for {block}_{layer} must be {expected[0]} x {expected[1]}, got {matrix.shape}")

    def block_coefficients(self, block: str, layer: int, base: np.ndarray, residue, truncation: int,
                           dtype=np.int64) -> np.ndarray:
        """Coefficients ``(rows, cols, truncation)`` of a block along the curve.

        ``base`` holds the generic point's entries (residues mod p, or exact
        numbers and symbols with ``dtype=object``); ``residue`` maps a rational
        coefficient of a user polynomial into the same ring.

        Examples
        --------
        >>> collapse().block_coefficients("Q", 1, np.array([[3, 4]]), int, 3).tolist()
        [[[0, 3, 0], [0, 4, 0]]]
        """
        rows, cols = base.shape
        out = np.zeros((rows, cols, truncation), dtype=dtype)
        for b, i, matrix in self.polynomials:
            if (b, i) == (block, layer):
                for (r, c), entry in np.ndenumerate(np.array(matrix.tolist(), dtype=object)):
                    poly = sp.Poly(to_sympy(entry), EPS)
                    for (power,), coefficient in poly.terms():
                        if power < truncation:
                            out[r, c, power] = residue(coefficient)
                return out
        power = self.block_power(block, layer)
        if power < truncation:
            out[:, :, power] = base
        return out

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "query_layers": None if self.query_layers is None else list(self.query_layers),
            "key_layers": None if self.key_layers is None else list(self.key_layers),
            "input_power": self.input_power,
            "polynomials": [[b, i, str(m.tolist())] for b, i, m in self.polynomials],
        }


def _layers(layers):
    if layers is None:
        return None
    out = tuple(sorted({int(i) for i in layers}))
    if not out:
        raise SymattnError("choose at least one layer for the curve")
    return out


def collapse(layers=None) -> Curve:
    """Simultaneous query/key collapse ``Q_i = eps Qt_i, K_i = eps Kt_i`` (all layers or some).

    Examples
    --------
    >>> collapse([2]).describe(3)
    'query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i at layers [2]'
    """
    chosen = _layers(layers)
    if chosen is None:
        name = "simultaneous query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i (layers {layers})"
    else:
        name = f"query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i at layers {list(chosen)}"
    return Curve(name, query_layers=chosen, key_layers=chosen)


def collapse_queries(layers=None) -> Curve:
    """Queries only: ``Q_i = eps Qt_i``.

    Examples
    --------
    >>> collapse_queries().key_layers
    ()
    """
    chosen = _layers(layers)
    where = "(layers {layers})" if chosen is None else f"at layers {list(chosen)}"
    return Curve(f"query collapse Q_i = eps Qt_i {where}", query_layers=chosen, key_layers=())


def collapse_keys(layers=None) -> Curve:
    """Keys only: ``K_i = eps Kt_i``.

    Examples
    --------
    >>> collapse_keys([1]).key_layers
    (1,)
    """
    chosen = _layers(layers)
    where = "(layers {layers})" if chosen is None else f"at layers {list(chosen)}"
    return Curve(f"key collapse K_i = eps Kt_i {where}", query_layers=(), key_layers=chosen)


def input_scaling() -> Curve:
    """Input scaling ``X -> eps X`` (``eps`` plays the role of ``tau``).

    Examples
    --------
    >>> input_scaling().name
    'input scaling X -> eps X'
    """
    return Curve("input scaling X -> eps X", input_power=1)


def polynomial_curve(blocks: dict, name: str = "user curve") -> Curve:
    """A user curve: ``{"Q1": Matrix([[eps, 2*eps**2]]), ...}``; other blocks stay generic.

    In a layer with several heads, ``Q1`` replaces ``Q_{1,h}`` in every head.

    Examples
    --------
    >>> c = polynomial_curve({"K2": sp.Matrix([[EPS, 0]])})
    >>> c.polynomials[0][:2]
    ('K', 2)
    """
    polynomials = []
    for key, matrix in blocks.items():
        if not isinstance(key, str) or len(key) < 2 or key[0] not in "QKV" or not key[1:].isdigit():
            raise SymattnError(f"curve block names look like 'Q1', 'K2', 'V3'; got {key!r}")
        matrix = to_sympy_matrix(matrix, {"eps": EPS}, what=f"curve block {key}", error=SymattnError)
        for entry in matrix:
            if entry.free_symbols - {EPS} or not entry.is_polynomial(EPS):
                raise SymattnError(f"curve entry {entry} of {key} is not a polynomial in eps")
        polynomials.append((key[0], int(key[1:]), matrix))
    return Curve(name, polynomials=tuple(polynomials))
