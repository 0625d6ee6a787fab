"""Effective parameters, the closed form ``F = P X M_l``, and the symmetries of the model.

``W_i = K_i^T Q_i``, ``P_i = V_i ... V_1`` (``P_0 = I``); the effective scores
are ``What_i = P_{i-1}^T W_i P_{i-1}`` and the combined value map is ``P = P_l``.
The output depends on the parameters only through them:
``M_0 = I``, ``M_i = M_{i-1} S(M_{i-1}^T X^T What_i X M_{i-1})``, ``F = P X M_l``.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.effective import effective_dimension, gauge_dimension, sign_group_order
>>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="cosh")
>>> effective_dimension(arch), gauge_dimension(arch), sign_group_order(arch)
(10, 6, 4)
"""

from __future__ import annotations

import sympy as sp

from dataclasses import dataclass

from ._format import FormattedResult
from .errors import ShapeError
from .model import Architecture, Parameters, forward, require_architecture, require_seed
from .parsing import to_sympy_matrix

__all__ = [
    "effective_scores",
    "combined_value_map",
    "effective_forward",
    "effective_architecture",
    "effective_closed_form",
    "effective_closed_form_latex",
    "ClosedForm",
    "closed_form_result",
    "gauge_action",
    "hidden_gauge_layers",
    "head_permutation",
    "head_permutation_order",
    "hidden_gauge_text",
    "sign_flip",
    "effective_dimension",
    "effective_jacobian_rank",
    "effective_block_dimensions",
    "gauge_dimension",
    "sign_group_order",
    "flip_preserves_output",
    "rank_matrix_dimension",
    "has_bottleneck",
]


def _mat(m) -> sp.Matrix:
    return m if isinstance(m, sp.MatrixBase) else to_sympy_matrix(m, what="parameter block", error=ShapeError)


def combined_value_map(params: Parameters, upto: int | None = None) -> sp.Matrix:
    """``P_i = V_i ... V_1`` (all layers by default).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> combined_value_map(Architecture.uniform(layers=2, width=1).symbols())
    Matrix([[V1_11*V2_11]])
    """
    layers = params.layers if upto is None else upto
    if layers == 0:
        return sp.eye(sp.Matrix(params.V[0]).shape[1])
    out = _mat(params.V[0])
    for v in params.V[1:layers]:
        out = _mat(v) * out
    return out


def effective_scores(params: Parameters) -> list[sp.Matrix]:
    """``What_i = P_{i-1}^T K_i^T Q_i P_{i-1}`` for every layer, in input coordinates.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> effective_scores(Architecture.uniform(layers=1, width=1).symbols())
    [Matrix([[K1_11*Q1_11]])]
    """
    out = []
    for i in range(params.layers):
        prefix = combined_value_map(params, upto=i)
        out.append(prefix.T * _mat(params.K[i]).T * _mat(params.Q[i]) * prefix)
    return out


def effective_architecture(arch: Architecture) -> Architecture:
    """The network that runs the closed form ``F = P X M_l`` as native layers.

    Widths ``[d_0, ..., d_0, d_l]`` and score ranks ``d_0``, with ``arch``'s
    tokens and normalizers: with ``Q_i = What_i``, ``K_i = I``, ``V_i = I``
    (``i < l``) and ``V_l = P``, its hidden states are ``X M_i`` and its
    output is ``P X M_l``.

    Examples
    --------
    >>> effective_architecture(Architecture([3, 1, 2], [1, 1]))
    Architecture(widths=[3, 3, 2], score_ranks=[3, 3], tokens=3, normalizer=['softmax', 'softmax'])
    """
    d0, layers = arch.widths[0], arch.layers
    return Architecture([d0] * layers + [arch.widths[-1]], [d0] * layers, arch.tokens, list(arch.normalizers))


def effective_forward(arch: Architecture, scores, value_map, X, domain):
    """``F = P X M_l`` in a domain, from effective scores and the combined value map.

    Runs :func:`symattn.model.forward` (the one forward pass, lightning
    attention included) on :func:`effective_architecture`, whose native
    parameters are the effective ones.  Comparing it with ``forward`` on
    the native parameters checks that ``F`` depends on them only through
    :func:`effective_scores` and :func:`combined_value_map`.

    Parameters
    ----------
    arch : Architecture
    scores : sequence of matrices
        ``What_1, ..., What_l``, each ``d_0 x d_0``.
    value_map : matrix
        ``P``, ``d_l x d_0``.
    X : matrix
        The input, ``d_0 x t``.
    domain : Domain

    Returns
    -------
    The output matrix in the domain's representation.

    Examples
    --------
    >>> from symattn.algebra.domains import RationalDomain
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="lightning")
    >>> effective_forward(arch, [[[2]]], [[3]], [[1, -1]], RationalDomain())
    array([[Fraction(12, 1), Fraction(-12, 1)]], dtype=object)
    """
    arch = require_architecture(arch)
    scores = list(scores)
    if len(scores) != arch.layers:
        raise ShapeError(f"{arch.layers} layers need {arch.layers} effective score matrices, got {len(scores)}")
    d0, layers = arch.widths[0], arch.layers
    identity = sp.eye(d0)
    runner = effective_architecture(arch)
    params = runner.parameters_from(scores, [identity] * layers, [identity] * (layers - 1) + [value_map])
    return forward(runner, params, X, domain)


def effective_closed_form(arch: Architecture, unevaluated_normalizer: bool = True) -> sp.Expr:
    """The closed form as sympy matrix expressions ``P X M_l`` with the ``M_i`` recursion.

    Returns the tuple ``(F, definitions)`` where ``definitions`` maps each
    ``M_i`` to its defining expression.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> F, defs = effective_closed_form(Architecture.uniform(layers=2))
    >>> F
    P*X*M_2
    >>> defs[sp.Symbol("M_1")]
    'M_0 S(M_0^T X^T What_1 X M_0)'
    """
    d0, t = arch.input_shape
    P = sp.MatrixSymbol("P", arch.widths[-1], d0)
    X = sp.MatrixSymbol("X", d0, t)
    M = [sp.MatrixSymbol(f"M_{i}", t, t) for i in range(arch.layers + 1)]
    definitions = {sp.Symbol("M_0"): "I"}
    for i in range(1, arch.layers + 1):
        definitions[sp.Symbol(f"M_{i}")] = f"M_{i-1} S(M_{i-1}^T X^T What_{i} X M_{i-1})"
    return P * X * M[-1], definitions


def effective_closed_form_latex(arch: Architecture) -> str:
    """LaTeX of ``F = P X M_l`` with the recursion for ``M_i`` (lines joined by ``\\\\``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> print(effective_closed_form_latex(Architecture.uniform(layers=1)).splitlines()[0])
    F_\\theta(X) = P\\,X\\,M_{1},\\\\
    """
    return ",\\\\\n".join(closed_form_result(arch).latex_lines)


@dataclass(frozen=True)
class ClosedForm(FormattedResult):
    """The closed form ``F = P X M_l`` of an architecture, as a result value.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> form = closed_form_result(Architecture.uniform(layers=2))
    >>> print(form)
    F = P X M_2, M_0 = I, M_i = M_{i-1} S(M_{i-1}^T X^T What_i X M_{i-1}), What_i = P_{i-1}^T K_i^T Q_i P_{i-1}, P = V_2 ... V_1
    >>> form.to_latex().splitlines()[0]
    '\\\\begin{gathered}'
    """

    layers: int
    latex_lines: tuple
    text: str = ""

    _latex_body_is_math = True

    def _latex_body(self) -> str:
        return "\\begin{gathered}\n" + ",\\\\\n".join(self.latex_lines) + "\n\\end{gathered}"

    _latex_math = _latex_body

    def to_json(self) -> dict:
        return {"layers": self.layers, "latex": self.to_latex(), "text": self.to_text()}

    def to_markdown(self) -> str:
        return "$$\n" + self.to_latex() + "\n$$"

    def __str__(self) -> str:
        if self.text:
            return self.text
        l = self.layers
        return (f"F = P X M_{l}, M_0 = I, M_i = M_{{i-1}} S(M_{{i-1}}^T X^T What_i X M_{{i-1}}), "
                f"What_i = P_{{i-1}}^T K_i^T Q_i P_{{i-1}}, P = V_{l} ... V_1")


def closed_form_result(arch: Architecture) -> ClosedForm:
    """The closed form ``F = P X M_l`` with the recursion for ``M_i``, as a :class:`ClosedForm`.

    Examples
    --------
    >>> form = closed_form_result(Architecture.uniform(layers=1, width=1, tokens=2))
    >>> form.layers
    1
    >>> print(form.latex_lines[0])
    F_\\theta(X) = P\\,X\\,M_{1}

    The variants: with a causal mask alone the same closed form holds (the
    mask acts on the scores); with heads or a residual stream no closed form
    in effective parameters is derived, and the layer map itself is written.

    >>> print(closed_form_result(Architecture.uniform(layers=2, heads=2, residual=True)))
    F = X_2, X_0 = X, X_i = X_{i-1} + sum_h V_{i,h} X_{i-1} S(X_{i-1}^T K_{i,h}^T Q_{i,h} X_{i-1}) (2 heads per layer, residual stream; no closed form in effective parameters is derived)
    """
    if not arch.factors_through_effective:
        return _variant_closed_form(arch)
    lines = [r"F_\theta(X) = P\,X\,M_{%d}" % arch.layers, r"M_0 = I"]
    for i in range(1, arch.layers + 1):
        lines.append(
            rf"M_{{{i}}} = M_{{{i-1}}}\,S\!\left(M_{{{i-1}}}^\top X^\top \widehat W_{{{i}}} X M_{{{i-1}}}\right)"
        )
    lines.append(r"\widehat W_i = P_{i-1}^\top K_i^\top Q_i P_{i-1},\quad P_i = V_i \cdots V_1,\quad P = P_{%d}"
                 % arch.layers)
    # the components' own lines (a causal mask's S(A)), once each
    extra = tuple(dict.fromkeys(line for _, _, c in arch.components() for line in c.closed_form_latex()))
    note = "".join(dict.fromkeys(c.closed_form_note() for _, _, c in arch.components()))
    if extra or note:
        return ClosedForm(arch.layers, tuple(lines) + extra, str(ClosedForm(arch.layers, ())) + note)
    return ClosedForm(arch.layers, tuple(lines))


def _ties_stream(arch: Architecture, layer: int | None = None) -> bool:
    """Whether a component of ``layer`` (of any layer when None) adds its block's input to its output."""
    return any(c.ties_stream() for i, _, c in arch.components() if layer is None or i == layer)


def _layer_steps(components) -> list[tuple[str, str, str]]:
    """``[(name, text, LaTeX)]``: a layer's map composed from its components' maps, the last step named ``X_i``.

    Each computing component maps the stream so far (``X_{i-1}``, then the
    names ``Y_i``, ``Z_i``, ... of the intermediate streams); a residual add
    puts its block's input in front.
    """
    names = iter(["Y_i", "Z_i", "U_i", "W_i"])
    steps, current, block_input, pending = [], "X_{i-1}", "X_{i-1}", None
    for component in components:
        if component.computes:
            if pending is not None:
                current = next(names)
                steps.append((current, *pending))
            block_input, pending = current, component.layer_map(current)
        elif component.ties_stream() and pending is not None:
            pending = (f"{block_input} + {pending[0]}", f"{block_input} + {pending[1]}")
    steps.append(("X_i", *pending))
    return steps


def _variant_closed_form(arch: Architecture) -> ClosedForm:
    """The layer map of a network with heads, a residual stream or other components (no closed form derived)."""
    layers = [tuple(_layer_steps(components)) for components in arch.layer_components]
    if len(set(layers)) == 1:  # one map for every layer, written with i
        maps = [layers[0]]
    else:  # layers of different components: each its own map, i replaced by the layer
        maps = [tuple((name.replace("_i", f"_{n}"), text.replace("_i", f"_{n}").replace("{i-1}", f"{n - 1}"),
                       tex.replace("_i", f"_{n}").replace("{i-1}", f"{n - 1}"))
                      for name, text, tex in steps) for n, steps in enumerate(layers, start=1)]
    lines = [r"F_\theta(X) = X_{%d}" % arch.layers, r"X_0 = X"]
    lines += [f"{name} = {tex}" for steps in maps for name, _, tex in steps]
    lines += list(dict.fromkeys(line for _, _, c in arch.components() for line in c.closed_form_latex()))
    words = ", ".join(f"{name} = {text}" for steps in maps for name, text, _ in steps)
    text = (f"F = X_{arch.layers}, X_0 = X, {words} ({arch.describe_variant()}; no closed form in "
            "effective parameters is derived)")
    return ClosedForm(arch.layers, tuple(lines), text)


def hidden_gauge_layers(arch: Architecture) -> list[int]:
    """The hidden layers ``i`` whose change of basis ``H_i`` in GL(d_i) keeps ``F``: ``1..l-1``, or none.

    Without a residual stream, ``X_i -> H_i X_i`` is undone by layer
    ``i + 1`` (``Q, K, V -> (.) H_i^{-1}`` in every head).  With one,
    ``X_i = X_{i-1} + (attention output)`` forces ``H_i X_{i-1}`` to be
    the transformed ``X_{i-1}``, i.e. ``H_i = H_{i-1}``, down to the fixed
    input (``H_0 = I``): no hidden change of basis survives.  (That no
    other continuous symmetry appears is computed, not proved: the kernel
    of the native Jacobian is compared with this orbit in
    :func:`symattn.identify.fiber.generic_fiber`.)

    Examples
    --------
    >>> hidden_gauge_layers(Architecture.uniform(layers=3)), hidden_gauge_layers(Architecture.uniform(layers=3, residual=True))
    ([1, 2], [])
    """
    # read off the components: the streams a layer's output belongs to, if any carries a gauge
    return sorted({layer for layer, width, _, writers in arch.hidden_gauges()
                   if any(key[0] == "V" for key in writers)})


def hidden_gauge_text(arch: Architecture) -> tuple[str, str, str]:
    """``(kind, words, translations)``: the hidden symmetries read off :meth:`~symattn.model.Architecture.hidden_gauges`.

    ``kind`` is ``"layers"`` when every hidden gauge sits between two
    attention layers (one ``GL(d_i)`` per hidden layer, the model of the
    paper; also when there is no hidden layer), ``"tied"`` when there is
    none and a residual add ties the streams, and ``"streams"`` when
    another component (a feed-forward block) reads or writes a gauged stream;
    ``words`` say it; ``translations`` names the translations biases absorb
    (:meth:`~symattn.model.Architecture.hidden_translations`), empty without them.

    Examples
    --------
    >>> hidden_gauge_text(Architecture.uniform(layers=2))
    ('layers', 'one GL(d_i) per hidden layer', '')
    >>> hidden_gauge_text(Architecture.uniform(layers=2, ffn=2))[:2]
    ('streams', 'one GL(d) per hidden stream between two computing blocks (3: GL(2)^3)')
    >>> hidden_gauge_text(Architecture.uniform(layers=1, ffn=2, bias=True, residual=True))
    ('tied', 'none on the hidden widths: a residual stream fixes them', 'the translations X -> X + c 1^T of 1 hidden stream absorbed by the biases')
    """
    gauges = arch.hidden_gauges()
    attention = {key for i, a in enumerate(arch.attention, start=1) for key, _ in a.parameter_blocks(i, arch.widths[i - 1])}
    if not gauges and _ties_stream(arch):
        kind, words = "tied", "none on the hidden widths: a residual stream fixes them"
    elif all(set(readers) | set(writers) <= attention for _, _, readers, writers in gauges):
        kind, words = "layers", "one GL(d_i) per hidden layer"
    else:
        widths = [width for _, width, _, _ in gauges]
        groups = " x ".join(f"GL({w})^{widths.count(w)}" if widths.count(w) > 1 else f"GL({w})"
                            for w in dict.fromkeys(widths))
        kind, words = "streams", f"one GL(d) per hidden stream between two computing blocks ({len(gauges)}: {groups})"
    translations = arch.hidden_translations()
    moved = (f"the translations X -> X + c 1^T of {len(translations)} hidden stream"
             f"{'s' if len(translations) > 1 else ''} absorbed by the biases") if translations else ""
    return kind, words, moved


def gauge_action(params: Parameters, G, H, arch: Architecture | None = None) -> Parameters:
    """Act with ``G`` in GL(a_i) per head and ``H_i`` in GL(d_i) per hidden layer; ``F`` does not change.

    ``Q_{i,h} -> G_{i,h} Q_{i,h}``, ``K_{i,h} -> G_{i,h}^{-T} K_{i,h}``;
    ``V_{i,h} -> H_i V_{i,h}`` and ``Q_{i+1,h}, K_{i+1,h}, V_{i+1,h} ->
    (.) H_i^{-1}`` for the layers of :func:`hidden_gauge_layers` (none with
    a residual stream).

    Parameters
    ----------
    params : Parameters
    G : sequence of matrices
        One per head, in :meth:`~symattn.model.Architecture.units` order
        (one per layer without ``arch``).
    H : sequence of matrices
        One per layer of :func:`hidden_gauge_layers`.
    arch : Architecture, optional
        Needed for heads and residual streams; without it, one head per
        layer and no residual stream.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> p = Architecture.uniform(layers=1, width=1).symbols()
    >>> gauge_action(p, [sp.Matrix([[2]])], []).K[0]
    Matrix([[K1_11/2]])
    >>> residual = Architecture.uniform(layers=2, width=1, residual=True)
    >>> gauge_action(residual.symbols(), [sp.Matrix([[2]])] * 2, [sp.Matrix([[3]])], residual)
    Traceback (most recent call last):
    ...
    symattn.errors.ShapeError: need 2 matrices G_i and 0 matrices H_i (none with a residual stream), got 2 and 1
    """
    if arch is None:
        units = [(i, 1) for i in range(1, params.layers + 1)]
        hidden = list(range(1, params.layers))
    else:
        arch = require_architecture(arch)
        units, hidden = arch.units(), hidden_gauge_layers(arch)
    G = [_mat(g) for g in G]
    H = [_mat(h) for h in H]
    if len(G) != len(units) or len(H) != len(hidden) or params.layers != len(units):
        per_head = "" if len(units) == len({i for i, _ in units}) else " (one per head)"
        residual = " (none with a residual stream)" if arch is not None and _ties_stream(arch) else ""
        raise ShapeError(f"need {len(units)} matrices G_i{per_head} and {len(hidden)} matrices H_i{residual}, "
                         f"got {len(G)} and {len(H)}")
    by_layer = dict(zip(hidden, H))
    Q, K, V = [], [], []
    for u, (i, _) in enumerate(units):
        q, k, v = _mat(params.Q[u]), _mat(params.K[u]), _mat(params.V[u])
        if G[u].shape != (q.shape[0], q.shape[0]):
            label = f"G_{i}" if len(units) == len({j for j, _ in units}) else f"G_{{{i},{units[u][1]}}}"
            raise ShapeError(f"{label} must be {q.shape[0]} x {q.shape[0]}, got {G[u].shape}")
        if i - 1 in by_layer:
            h_inv = by_layer[i - 1].inv()
            q, k, v = q * h_inv, k * h_inv, v * h_inv
        if i in by_layer:
            if by_layer[i].shape != (v.shape[0], v.shape[0]):
                raise ShapeError(f"H_{i} must be {v.shape[0]} x {v.shape[0]}, got {by_layer[i].shape}")
            v = by_layer[i] * v
        Q.append(G[u] * q)
        K.append(G[u].inv().T * k)
        V.append(v)
    return Parameters(tuple(Q), tuple(K), tuple(V))


def head_permutation(arch: Architecture, params: Parameters, layer: int, permutation) -> Parameters:
    """The heads of ``layer`` reordered: head ``h`` gets the blocks of head ``permutation[h - 1]``.

    ``X_i = sum_h V_{i,h} X_{i-1} S(A_{i,h})`` is a sum over the heads, so
    ``F`` does not change.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=1, heads=2)
    >>> head_permutation(arch, arch.symbols(), 1, [2, 1]).Q
    (Matrix([[Q1h2_11]]), Matrix([[Q1h1_11]]))

    With biases, each head's own biases move with it:

    >>> biased = Architecture.uniform(layers=1, width=1, heads=2, bias=True)
    >>> params = biased.parameters_from_flat(range(1, 13))
    >>> params.flat(), head_permutation(biased, params, 1, [2, 1]).flat()
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6])
    """
    arch = require_architecture(arch)
    if not (isinstance(layer, int) and 1 <= layer <= arch.layers):
        raise ShapeError(f"layer must be an integer in 1..{arch.layers}, got {layer!r}")
    heads = arch.attention[layer - 1].heads
    permutation = list(permutation)
    if sorted(permutation) != list(range(1, heads + 1)):
        raise ShapeError(f"a permutation of the {heads} heads of layer {layer} lists 1..{heads} once each, "
                         f"got {permutation}")
    units = arch.units()
    index = {unit: u for u, unit in enumerate(units)}
    order = [index[(i, permutation[h - 1])] if i == layer else index[(i, h)] for i, h in units]
    # a head's own biases (b_Q, b_K, b_V of that head) move with it; every other block stays
    others = dict(params.others)
    moved = tuple((key, others[(key[0], layer, permutation[key[2] - 1])]
                   if len(key) == 3 and key[1] == layer and (key[0], layer, permutation[key[2] - 1]) in others
                   else matrix) for key, matrix in params.others)
    return Parameters(*(tuple(blocks[u] for u in order) for blocks in (params.Q, params.K, params.V)),
                      moved, params.layout)


def head_permutation_order(arch: Architecture) -> int:
    """The order of the group of head permutations: ``prod_i h_i!``, the attention components' discrete orders.

    Examples
    --------
    >>> head_permutation_order(Architecture.uniform(layers=2, heads=[2, 3]))
    12
    """
    import math

    return math.prod(a.discrete_group_order() for a in arch.attention)


def sign_flip(params: Parameters, layers) -> Parameters:
    """Flip ``What_i -> -What_i`` for the given (1-based) layers by ``Q_i -> -Q_i``.

    For an even normalizer the output does not change.  With several heads
    per layer the numbers count heads in parameter order
    (:meth:`~symattn.model.Architecture.units`), each head flipped alone.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> p = Architecture.uniform(layers=2, width=1).symbols()
    >>> effective_scores(sign_flip(p, [2]))[1]
    Matrix([[-K2_11*Q2_11*V1_11**2]])
    >>> biased = Architecture.uniform(layers=1, width=1, bias=True).parameters_from_flat([1, 2, 3, 4, 5, 6])
    >>> sign_flip(biased, [1]).flat()                   # Q and b_Q flip, the rest stays
    [-1, 2, 3, -4, 5, 6]
    """
    layers = set(layers)
    bad = [i for i in layers if not 1 <= i <= params.layers]
    if bad:
        raise ShapeError(f"layers to flip must be in 1..{params.layers}, got {sorted(bad)}")
    Q = tuple(-_mat(q) if i + 1 in layers else q for i, q in enumerate(params.Q))
    # a query bias is part of the query (Q x + b_Q): it flips with Q; the other blocks stay as they are
    queries = [key for key in params.layout if key[0] == "Q"]  # head u's Q key, in parameter order
    flipped = {("bQ", *queries[u - 1][1:]) for u in layers if u <= len(queries)}
    others = tuple((key, -_mat(m) if key in flipped else m) for key, m in params.others)
    return Parameters(Q, params.K, params.V, others, params.layout)


def rank_matrix_dimension(rows: int, cols: int, rank: int) -> int:
    """Dimension of the variety of ``rows x cols`` matrices of rank at most ``rank``.

    Examples
    --------
    >>> rank_matrix_dimension(2, 2, 1)
    3
    """
    r = min(rank, rows, cols)
    return r * (rows + cols - r)


def effective_block_dimensions(arch: Architecture) -> dict[str, int]:
    """Dimension of each effective block: ``scores:i`` and ``values``.

    The rank of ``What_i`` is at most ``min(a_i, d_0, ..., d_{i-1})``, that of
    ``P`` at most ``min(d_0, ..., d_l)``.

    Examples
    --------
    >>> effective_block_dimensions(Architecture.uniform(layers=2, width=2, rank=1))
    {'values': 4, 'scores:1': 3, 'scores:2': 3}
    """
    d0 = arch.widths[0]
    out = {"values": rank_matrix_dimension(arch.widths[-1], d0, min(arch.widths))}
    for i in range(1, arch.layers + 1):
        bottleneck = min([arch.score_ranks[i - 1], *arch.widths[:i]])
        out[f"scores:{i}"] = rank_matrix_dimension(d0, d0, bottleneck)
    return out


def has_bottleneck(arch: Architecture) -> bool:
    """Whether a hidden width is below the input width (then the effective blocks are not free).

    Examples
    --------
    >>> has_bottleneck(Architecture([2, 1, 2], [1, 1])), has_bottleneck(Architecture.uniform(layers=2))
    (True, False)
    """
    return min(arch.widths[1:-1], default=arch.widths[0]) < arch.widths[0]


def effective_jacobian_rank(arch: Architecture, seed: int = 0) -> int:
    """Exact rank over Q of the Jacobian of ``theta -> (What_1, ..., What_l, P)`` at a random integer point.

    A lower bound for the dimension of the effective parameters, equal to it
    unless the point is special (a nonzero minor vanishes there).

    Examples
    --------
    >>> effective_jacobian_rank(Architecture([2, 1, 2], [1, 1]))
    7
    """
    import random

    import flint

    params = arch.symbols()
    entries = [e for W in effective_scores(params) for e in W] + list(combined_value_map(params))
    symbols = params.flat()
    rng = random.Random(require_seed(seed))
    point = {v: rng.randint(-50, 50) or 1 for v in symbols}
    jacobian = sp.Matrix(entries).jacobian(symbols).subs(point)
    return int(flint.fmpz_mat([[int(v) for v in row] for row in jacobian.tolist()]).rank())


def effective_dimension(arch: Architecture) -> int:
    """Dimension of the effective parameters ``(What_1, ..., What_l, P)``.

    For constant widths ``d`` and ranks ``a <= d``: ``l a (2d - a) + d^2``;
    in general the sum of :func:`effective_block_dimensions` while no hidden
    width is below ``d_0``.  With such a bottleneck the blocks overlap (each
    later ``What_i`` lives on the row space of ``P_{i-1}``, which ``P``
    already fixes), and the dimension is the exact rank of the Jacobian of
    the effective map (:func:`effective_jacobian_rank`, the larger of two points).

    Examples
    --------
    >>> effective_dimension(Architecture.uniform(layers=2, width=3, rank=2))
    25
    >>> effective_dimension(Architecture([3, 2, 2], [1, 1]))
    14
    """
    if has_bottleneck(arch):
        return max(effective_jacobian_rank(arch, seed) for seed in (0, 1))
    return sum(effective_block_dimensions(arch).values())


def gauge_dimension(arch: Architecture) -> int:
    """Dimension of the gauge group: ``sum_i h_i a_i^2 + sum_{i<l} d_i^2``.

    One GL(a_i) per head; the hidden GL(d_i) only without a residual stream
    (:func:`hidden_gauge_layers`).

    Examples
    --------
    >>> gauge_dimension(Architecture.uniform(layers=3, width=2, rank=1))
    11
    >>> gauge_dimension(Architecture.uniform(layers=3, width=2, rank=1, heads=2, residual=True))
    6
    """
    return arch.symmetry_dimension("gauge")


def _sign_flip_layers(arch: Architecture) -> tuple[list[int], list[int]]:
    """``(free, lightning)``: heads whose flip alone keeps ``F``, and lightning layers that flip in pairs.

    The one classification behind :func:`flip_preserves_output` and
    :func:`sign_group_order`; heads are numbered in parameter order
    (:meth:`~symattn.model.Architecture.units`, the layers themselves with
    one head per layer).  A normalized head's flip is free when ``s`` is
    even (``S(-A) = S(A)``, masked or not) or there is one token
    (``S(A) = 1``).  A lightning layer (``S(A) = A``) with all its heads
    flipped negates its output, and the sign reaches ``F`` (every later layer
    is odd in its input: linear in the values, even in the scores), so
    lightning layers flip in pairs.  A residual stream adds the unflipped
    ``X_{i-1}``, so no lightning flip keeps ``F`` there.  Any other flip
    changes ``F`` for generic parameters.
    """
    free, lightning = [], []
    for u, (i, h) in enumerate(arch.units(), start=1):
        attention = arch.attention[i - 1]
        if not attention.normalized:
            if h == 1 and not _ties_stream(arch, i):
                lightning.append(i)
        elif attention.normalizer.is_even or arch.degenerate:
            free.append(u)
    return free, lightning


def flip_preserves_output(arch: Architecture, layers) -> bool:
    """Whether ``What_i -> -What_i`` for the given (1-based) layers keeps ``F`` for generic parameters.

    True exactly when every flipped normalized layer has an even normalizer
    (or there is one token) and an even number of lightning layers is
    flipped.  The flips of lightning layers in pairs lie in the lightning
    scalings ``Q_i -> c Q_i, V_i -> V_i / c`` at ``c = -1``.

    Parameters
    ----------
    arch : Architecture
    layers : iterable of int
        The flipped layers (1-based); the empty set is the identity.

    Returns
    -------
    bool

    Examples
    --------
    >>> flip_preserves_output(Architecture.uniform(layers=2, normalizer="cosh"), [2])
    True
    >>> flip_preserves_output(Architecture.uniform(layers=2, normalizer="softmax"), [2])
    False
    >>> lightning = Architecture.uniform(layers=2, normalizer="lightning")
    >>> flip_preserves_output(lightning, [1]), flip_preserves_output(lightning, [1, 2])
    (False, True)
    """
    layers = set(layers)
    units = arch.units()
    bad = [i for i in layers if not (isinstance(i, int) and 1 <= i <= len(units))]
    if bad:
        what = "layers" if len(units) == arch.layers else "heads (numbered in parameter order)"
        raise ShapeError(f"{what} to flip must be integers in 1..{len(units)}, got {bad}")
    free, lightning = _sign_flip_layers(arch)
    heads_of = {i: {u for u, (j, _) in enumerate(units, start=1) if j == i} for i in lightning}
    whole = [i for i in lightning if heads_of[i] <= layers]  # lightning layers flipped with all their heads
    covered = set().union(*(heads_of[i] for i in whole))
    return layers <= set(free) | covered and len(whole) % 2 == 0


def sign_group_order(arch: Architecture) -> int:
    """Order of the group of sign flips ``What_i -> -What_i`` that keep ``F``.

    ``2^f * 2^max(m - 1, 0)``: each of the ``f`` layers with an even
    normalizer flips freely (every normalized layer when there is one
    token), and the ``m`` lightning layers flip in pairs, an even-sized
    subset of them (:func:`flip_preserves_output` tells which flips).

    Examples
    --------
    >>> sign_group_order(Architecture.uniform(layers=3, normalizer="gauss"))
    8
    >>> sign_group_order(Architecture.uniform(layers=1, normalizer="lightning"))
    1
    >>> sign_group_order(Architecture.uniform(layers=3, normalizer="lightning"))
    4
    """
    free, lightning = _sign_flip_layers(arch)
    return 2 ** len(free) * 2 ** max(len(lightning) - 1, 0)
