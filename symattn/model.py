"""Deep single-head attention: the architecture, its parameters, and one forward pass.

Layer ``i`` maps ``X_{i-1}`` (``d_{i-1} x t``, one token per column) to
``X_i = V_i X_{i-1} S(X_{i-1}^T K_i^T Q_i X_{i-1})``, where ``S`` normalizes
each column with the layer's normalizer.  :func:`forward` is written once
against the :class:`~symattn.algebra.domains.Domain` interface and runs on
every domain of :mod:`symattn.algebra`.

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
from .normalizers import normalizers_per_layer

__all__ = ["Architecture", "Parameters", "forward", "closed_form", "require_architecture", "require_seed",
           "MAX_LAYERS"]

#: A structural bound on the number of layers, so that a typo such as ``10**20`` fails at once
#: instead of exhausting memory; each computation has its own, much lower, limits.
MAX_LAYERS = 10_000


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


@dataclass(frozen=True)
class Parameters:
    """Native parameters ``Q_i, K_i, V_i`` for every layer (any matrix type).

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
        return len(self.Q)

    def flat(self) -> list:
        """All entries, layer by layer, ``Q_i`` then ``K_i`` then ``V_i``, row-major."""
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
    """

    def __init__(self, widths: Sequence[int], score_ranks: Sequence[int], tokens: int = 3,
                 normalizer="softmax"):
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

    @classmethod
    def uniform(cls, layers: int = 3, width: int = 2, rank: int = 1, tokens: int = 3,
                normalizer="softmax") -> "Architecture":
        """Constant widths and score ranks.

        Examples
        --------
        >>> Architecture.uniform(layers=3).widths
        (2, 2, 2, 2)
        """
        if not _is_count(layers) or layers < 1:
            raise ShapeError(f"layers must be a positive integer, got {_short_repr(layers)}")
        if layers > MAX_LAYERS:
            raise ShapeError(f"layers must be at most {MAX_LAYERS}, got {layers}")
        return cls([width] * (layers + 1), [rank] * layers, tokens, normalizer)

    # -- sizes ----------------------------------------------------------------------
    @property
    def layers(self) -> int:
        return len(self.score_ranks)

    @property
    def degenerate(self) -> bool:
        """One token: every attention matrix is the constant 1."""
        return self.tokens == 1

    def block_shapes(self, layer: int) -> dict[str, tuple[int, int]]:
        """Shapes of ``Q_i, K_i, V_i`` for layer ``i`` (1-based)."""
        d_in, d_out, a = self.widths[layer - 1], self.widths[layer], self.score_ranks[layer - 1]
        return {"Q": (a, d_in), "K": (a, d_in), "V": (d_out, d_in)}

    @property
    def param_count(self) -> int:
        """Number of native parameters (entries of every ``Q_i, K_i, V_i``)."""
        return sum(r * c for i in range(1, self.layers + 1) for r, c in self.block_shapes(i).values())

    def parameter_index(self) -> list[tuple[str, int, int, int]]:
        """``(name, layer, row, col)`` for each native parameter, in flat order."""
        out = []
        for i in range(1, self.layers + 1):
            for name, (rows, cols) in self.block_shapes(i).items():
                out.extend((name, i, r, c) for r in range(rows) for c in range(cols))
        return out

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
        blocks = {"Q": [], "K": [], "V": []}
        for i in range(1, self.layers + 1):
            for name, (rows, cols) in self.block_shapes(i).items():
                blocks[name].append(kind(rows, cols, lambda r, c: sp.Symbol(
                    f"{name}{marker}{i}_{r + 1}{c + 1}", real=True)))
        return Parameters(tuple(blocks["Q"]), tuple(blocks["K"]), tuple(blocks["V"]))

    def input_symbols(self) -> sp.Matrix:
        """The symbolic input ``X`` (entries ``x_11`` ... , one token per column)."""
        d0, t = self.input_shape
        return sp.Matrix(d0, t, lambda r, c: sp.Symbol(f"x_{r + 1}{c + 1}", real=True))

    def parameters_from(self, Q, K, V) -> Parameters:
        """Parameters from lists of matrices, checked against the shapes."""
        blocks = {"Q": list(Q), "K": list(K), "V": list(V)}
        for name, mats in blocks.items():
            if len(mats) != self.layers:
                raise ShapeError(f"{name} needs {self.layers} matrices (one per layer), got {len(mats)}")
            for i, m in enumerate(mats, start=1):
                shape = np.shape(np.array(sp.Matrix(m).tolist() if isinstance(m, sp.MatrixBase) else m,
                                          dtype=object))
                expected = self.block_shapes(i)[name]
                if tuple(shape) != expected:
                    raise ShapeError(f"{name}_{i} must be {expected[0]} x {expected[1]}, got shape {tuple(shape)}")
        return Parameters(tuple(blocks["Q"]), tuple(blocks["K"]), tuple(blocks["V"]))

    def parameters_from_flat(self, values: Sequence) -> Parameters:
        """Parameters from a flat list in :meth:`parameter_index` order."""
        values = list(values)
        if len(values) != self.param_count:
            raise ShapeError(f"expected {self.param_count} parameter values, got {len(values)}")
        blocks = {"Q": [], "K": [], "V": []}
        position = 0
        for i in range(1, self.layers + 1):
            for name, (rows, cols) in self.block_shapes(i).items():
                block = [values[position + r * cols: position + (r + 1) * cols] for r in range(rows)]
                blocks[name].append(block)
                position += rows * cols
        return Parameters(tuple(blocks["Q"]), tuple(blocks["K"]), tuple(blocks["V"]))

    def to_json(self) -> dict:
        return {
            "layers": self.layers,
            "widths": list(self.widths),
            "score_ranks": list(self.score_ranks),
            "tokens": self.tokens,
            "normalizers": [n.name for n in self.normalizers],
            "degenerate": self.degenerate,
        }

    def describe(self) -> str:
        norms = {n.name for n in self.normalizers}
        norm = norms.pop() if len(norms) == 1 else ", ".join(n.name for n in self.normalizers)
        return (f"{self.layers} layer(s), widths {list(self.widths)}, score ranks "
                f"{list(self.score_ranks)}, {self.tokens} tokens, normalizer {norm}")

    def __repr__(self) -> str:
        return (f"Architecture(widths={list(self.widths)}, score_ranks={list(self.score_ranks)}, "
                f"tokens={self.tokens}, normalizer={[n.name for n in self.normalizers]})")


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


def forward(arch: Architecture, params: Parameters, X, domain, convert: bool = True):
    """The network's output ``X_l`` on one input, computed in ``domain``.

    Parameters
    ----------
    arch : Architecture
    params : Parameters
        Matrices (nested lists, sympy or numpy) or, with ``convert=False``,
        matrices already in the domain's representation.
    X : matrix
        The input, ``d_0 x t``.
    domain : Domain
    convert : bool
        Convert ``params`` and ``X`` with ``domain.matrix`` first.

    Returns
    -------
    The output matrix in the domain's representation.

    Examples
    --------
    The same pass, exactly and in float64:

    >>> from symattn.algebra.domains import FloatDomain, RationalDomain
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2")
    >>> params = arch.parameters_from([[[1]]], [[[1]]], [[[1]]])
    >>> forward(arch, params, [[0, 1]], RationalDomain())
    array([[Fraction(1, 2), Fraction(2, 3)]], dtype=object)
    >>> forward(arch, params, [[0, 1]], FloatDomain())
    array([[0.5, 0.6666666666666666]], dtype=object)
    """
    if convert:
        _check_input(arch, X)
        X = domain.matrix(X)
        Q = [domain.matrix(m) for m in params.Q]
        K = [domain.matrix(m) for m in params.K]
        V = [domain.matrix(m) for m in params.V]
    else:
        Q, K, V = params.Q, params.K, params.V
    hidden = X
    for layer in range(arch.layers):
        keys = domain.matmul(K[layer], hidden)
        queries = domain.matmul(Q[layer], hidden)
        scores = domain.matmul(domain.transpose(keys), queries)
        normalizer = arch.normalizers[layer]
        # lightning attention (HMK) uses the scores themselves as weights
        weights = scores if normalizer.is_lightning else domain.attention(scores, normalizer)
        hidden = domain.matmul(domain.matmul(V[layer], hidden), weights)
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
