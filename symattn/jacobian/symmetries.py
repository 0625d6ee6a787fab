"""Tangents of the symmetry orbits along a curve, and the upper bounds of the rank they give.
"""

from __future__ import annotations

import functools

import numpy as np

from ..algebra.modseries import ModSeriesDomain
from ..curves import Curve
from ..model import Architecture, Attention
from .columns import parameter_columns
from .points import DEFAULT_PRIMES, field_primes, random_point

__all__ = ["gauge_tangent_series", "scaling_tangent_series", "symmetry_tangent_series", "symmetry_orbit_bound", "effective_dimension_of", "native_rank_bound",
           "estimate_rank_bound", "orbit_bound_bytes", "ORBIT_BOUND_BUDGET", "orbit_rank_bound"]


# -- tangents of the symmetry orbits ----------------------------------------------------------------
def gauge_tangent_series(arch: Architecture, curve: Curve, point, p: int, truncation: int) -> np.ndarray:
    """Tangent vectors of the gauge orbit at ``theta_eps``: shape ``(gauge_dim, #params, N)``.

    One vector per basis element of ``gl(a_i)`` (``Q_i -> G Q_i``,
    ``K_i -> G^{-T} K_i``) and of ``gl(d_i)``, ``i < l`` (``V_i -> H V_i``,
    layer ``i + 1`` blocks ``-> (.) H^{-1}``), all exact mod ``(p, eps^N)``.
    With heads, one ``gl(a_i)`` per head, and ``H_i`` acts on every head's
    ``V_{i,h}`` and on every head of layer ``i + 1``; a residual stream has
    no ``gl(d_i)`` part (:func:`symattn.effective.gauge_dimension`).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1)
    >>> point, _ = random_point(arch, 101, 0)
    >>> gauge_tangent_series(arch, collapse(), point, 101, 3).shape    # a_1^2 + a_2^2 + d_1^2
    (6, 16, 3)
    """
    return symmetry_tangent_series(arch, curve, point, p, truncation, "gauge")


def scaling_tangent_series(arch: Architecture, curve: Curve, point, p: int, truncation: int) -> np.ndarray:
    """Tangents of ``Q_i -> c Q_i, V_i -> V_i / c`` for each lightning head: shape ``(m, #params, N)``.

    Lightning attention has no normalization, so these scalings keep the
    output: they join the gauge tangents in the kernel of ``J(eps)``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, normalizer="lightning")
    >>> point = {("Q", 1): np.array([[2]]), ("K", 1): np.array([[3]]), ("V", 1): np.array([[5]])}
    >>> scaling_tangent_series(arch, collapse(), point, 101, 2)[0].tolist()   # (eps Qt, 0, -Vt)
    [[0, 2], [0, 0], [96, 0]]
    """
    return symmetry_tangent_series(arch, curve, point, p, truncation, "scaling")


def symmetry_tangent_series(arch: Architecture, curve: Curve, point, p: int, truncation: int,
                            group: str | None = None) -> np.ndarray:
    """The symmetry tangents of the components at ``theta_eps``, exact mod ``(p, eps^N)``: ``(m, #params, N)``.

    Each :class:`~symattn.model.components.Tangent` of
    :meth:`~symattn.model.Architecture.symmetry_tangents` (of ``group``, or
    all) moves a block ``M`` by ``L M + M R + C``, evaluated here on the
    block's series along ``curve``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, normalizer="lightning")
    >>> point = {("Q", 1): np.array([[2]]), ("K", 1): np.array([[3]]), ("V", 1): np.array([[5]])}
    >>> symmetry_tangent_series(arch, collapse(), point, 101, 2)[:, :, 1].tolist()   # gl(1), then the scaling
    [[2, 98, 0], [2, 0, 0]]
    """
    residue = ModSeriesDomain(p, truncation).residue
    series = {key: curve.block_coefficients(key[0], key[1], point[key], residue, truncation)
              for key, _ in arch.blocks()}
    columns = parameter_columns(arch)
    tangents = arch.symmetry_tangents(group)
    out = np.zeros((len(tangents), arch.param_count, truncation), dtype=np.int64)
    for row, tangent in enumerate(tangents):
        for key, (left, right, constant, *sources) in tangent.terms.items():
            M = series[key]
            move = np.zeros_like(M)
            for source in sources:  # a bias moved through its weight: M_source S
                if source is None:
                    continue
                other, S = source
                move = move + np.einsum("abn,bc->acn", series[other], np.asarray(S, dtype=np.int64) % p)
            if left is not None:
                move = move + np.einsum("ab,bcn->acn", np.asarray(left, dtype=np.int64) % p, M)
            if right is not None:
                move = move + np.einsum("abn,bc->acn", M, np.asarray(right, dtype=np.int64) % p)
            if constant is not None:
                move[..., 0] += np.asarray(constant, dtype=np.int64)
            positions = columns[key]
            out[row, positions] = (out[row, positions] + move.reshape(len(positions), truncation)) % p
    return out


def symmetry_orbit_bound(arch: Architecture, p: int = DEFAULT_PRIMES[0], seed: int = 0) -> int:
    """An upper bound of the rank of the native Jacobian: ``#params`` minus the symmetry orbit's dimension.

    The gauge orbit (and the scalings of lightning heads) lies in every
    fiber, so its tangents lie in the kernel of the native Jacobian: the rank
    of ``J`` is at most ``#params`` minus their rank at a random point mod
    ``p`` (at most the generic rank, so the bound stays a bound).  With a
    causal mask and one head per layer without a residual stream, ``F = P X
    M_l`` still holds (the mask acts on the scores, which are
    ``M^T X^T What_i X M`` in input coordinates), so the effective dimension
    bounds the rank too, and the smaller bound is returned.  It is the rank
    the variants are compared with (no formula is claimed for them).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> symmetry_orbit_bound(Architecture.uniform(layers=2, width=2, rank=1))        # 16 - 6
    10
    >>> symmetry_orbit_bound(Architecture.uniform(layers=2, width=2, rank=1, residual=True))   # 16 - 2
    14
    >>> symmetry_orbit_bound(Architecture([2, 3, 3], [1, 1], causal=True))   # 25 - 11 = 14 > 12 = dim (What, P)
    12
    """
    from ..effective import effective_block_dimensions, effective_dimension, has_bottleneck

    bound = orbit_rank_bound(arch, p, seed)
    if arch.factors_through_effective and all(a.normalized for a in arch.attention):
        # F = P X M_l: a mask alone keeps the effective parameters; with a bottleneck their dimension is not a
        # closed form here, and the blocks' sum bounds it (the image is no larger than the blocks' product)
        effective = (sum(effective_block_dimensions(arch).values()) if has_bottleneck(arch)
                     else effective_dimension(arch))
        bound = min(bound, effective)
    return bound


def orbit_rank_bound(arch: Architecture, p: int = DEFAULT_PRIMES[0], seed: int = 0) -> int:
    """``#params`` minus the rank of the symmetry tangents at a random point mod ``p``: a proved rank bound.

    The declared symmetries' orbit lies in every fiber, so at a generic point
    the Jacobian's rank is at most ``#params`` minus the orbit's generic
    dimension; the tangents' rank at one point mod ``p`` is at most that
    generic dimension (a minor nonzero mod ``p`` at the point is nonzero as a
    polynomial), so the bound computed here is never below the true one.
    Exact linear algebra mod ``p`` on integer tangents: no sympy.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> orbit_rank_bound(Architecture([24, 16, 24], [6, 4]))   # 1184 - (36 + 16 + 256): a bottleneck
    876
    """
    from ..algebra.valuations import smith_valuations

    p = field_primes(arch, (p,))[0]  # random_point needs a root of the normalizers' field (sqrt(3))
    point, _ = random_point(arch, p, seed)
    still = Curve("a random point (no curve)")
    tangents = symmetry_tangent_series(arch, still, point, p, 1)
    return arch.param_count - (smith_valuations(tangents, p).resolved_rank if len(tangents) else 0)


@functools.lru_cache(maxsize=256)
def effective_dimension_of(widths: tuple, score_ranks: tuple) -> int:
    """:func:`symattn.effective.effective_dimension` of a shape, computed once (with a bottleneck it is a rank).

    Examples
    --------
    >>> effective_dimension_of((2, 2, 2), (1, 1))
    10
    """
    from ..effective import effective_dimension

    return effective_dimension(Architecture(widths, score_ranks))


def native_rank_bound(arch: Architecture) -> tuple[int, str]:
    """A proven upper bound of the rank of the native Jacobian at any point, and why it holds.

    The effective dimension for the model of the paper (``F`` factors
    through ``(What_1, ..., What_l, P)``), less one for each lightning layer
    (its scaling keeps ``F``); the value map's dimension with one token (every
    ``S(A)`` is the constant 1, so ``F = P X``); for the variants
    :func:`symmetry_orbit_bound`.  A computed rank that reaches it is the
    rank: the directions left unresolved are kernel.

    Examples
    --------
    >>> native_rank_bound(Architecture.uniform(layers=2))[0]
    10
    >>> bound, reason = native_rank_bound(Architecture.uniform(layers=2, tokens=1))
    >>> bound, reason.split(":")[0]
    (4, 'one token')
    >>> native_rank_bound(Architecture.uniform(layers=1, tokens=1, ffn=3))[1].split(" of ")[0]
    '#params minus the dimension'
    >>> native_rank_bound(Architecture.uniform(layers=2, normalizer="lightning"))[0]
    8
    """
    from ..effective import effective_block_dimensions, hidden_gauge_text

    lightning = [i for i, a in enumerate(arch.attention, start=1) if not a.normalized]
    # one token: F = P X only when every component is linear in its input there (a feed-forward block or a
    # bias is not: their networks take the symmetry orbit's bound below)
    linear = all(component.linear_at_one_token for _, _, component in arch.components())
    if arch.degenerate and not lightning and linear:
        values = (effective_block_dimensions(arch)["values"] if arch.is_plain
                  else arch.widths[-1] * arch.widths[0])
        bound = values if arch.is_plain else min(values, symmetry_orbit_bound(arch))
        return bound, ("one token: every S(A) is the 1 x 1 matrix 1, so F is linear in X through the value "
                       f"maps only (dimension at most {bound})")
    if not arch.is_plain:
        kind, words, translations = hidden_gauge_text(arch)  # read off the components' streams
        hidden = {"layers": ", GL(d_i) per hidden layer" if arch.hidden_gauges() else "",
                  "tied": ", no hidden GL(d_i): a residual stream breaks it", "streams": f", {words}"}[kind]
        # what the components add to attention's own (b_K's translations, a feed-forward block's scalings)
        own = list(dict.fromkeys(
            text for _, _, c in arch.components()
            if (text := (c.symmetry_text()[len(Attention.symmetry_text(c)):].lstrip(", ") if isinstance(c, Attention)
                         else c.symmetry_text()))))
        return symmetry_orbit_bound(arch), (
            f"#params minus the dimension of the symmetry orbit of {arch.describe_variant()} (one GL(a_i) per "
            "head" + hidden + (f", {translations}" if translations else "") + "".join(f", {t}" for t in own)
            + (", the scalings of lightning heads" if lightning else "")
            + "), a rank at a random point mod p; the orbit lies in every fiber"
            + ("; with one head per layer and no residual stream F = P X M_l still holds, so at most the "
               "dimension of (What_1, ..., What_l, P)" if arch.factors_through_effective else ""))
    from ..effective import effective_block_dimensions, has_bottleneck

    if has_bottleneck(arch):
        # the effective blocks overlap: their sum bounds the image, the gauge orbit's codimension bounds the rank;
        # a rank of the effective map read at a random point would be a lower bound, never used as an upper one.
        # The stream after layer i lies in the image of P_i, of dimension at most min(d_0, ..., d_i): a hidden
        # layer wider than that computes the functions of one of that width (V_i factors through it)
        narrowed = list(arch.widths)
        for i in range(1, arch.layers):
            narrowed[i] = min(narrowed[i - 1], narrowed[i])
        same = Architecture(narrowed, arch.score_ranks, tokens=arch.tokens, normalizer=list(arch.normalizers),
                            causal=arch.causal) if narrowed != list(arch.widths) else arch
        # each lightning layer's scaling keeps F and acts freely on the effective parameters: one less each; the
        # orbit's tangents already hold those scalings, so the orbit's bound is not lowered again
        blocks = sum(effective_block_dimensions(same).values()) - len(lightning)
        orbit = orbit_rank_bound(same)
        reason = ("a hidden width is a bottleneck: the smaller of the effective blocks' dimensions added up "
                  + ("less one per lightning layer " if lightning else "")
                  + f"({blocks}; F factors through (What_1, ..., What_l, P), whose image is no larger) and #params "
                  f"minus the dimension of the gauge orbit (one GL(a_i) per layer, GL(d_i) per hidden layer; "
                  f"{orbit}), the orbit's tangents ranked at a random point mod p, which never undercounts the "
                  "bound; the orbit lies in every fiber"
                  + (f"; computed for widths {narrowed}: the stream after layer i stays in the image of "
                     "P_i = V_i ... V_1, of dimension at most min(d_0, ..., d_i), so the wider hidden layers "
                     "compute the same functions" if same is not arch else ""))
        return min(blocks, orbit), reason
    eff = effective_dimension_of(tuple(arch.widths), tuple(arch.score_ranks))
    reason = "the dimension of the effective parameters (What_1, ..., What_l, P), through which F factors"
    if lightning:
        reason += (f", minus {len(lightning)}: each lightning layer i has the scaling Q_i -> c Q_i, "
                   "V_i -> V_i / c, which acts on the effective parameters with a free orbit and keeps F")
        return eff - len(lightning), reason
    return eff, reason


#: The memory estimates compute the symmetry orbit's rank bound (:func:`symmetry_orbit_bound`) only while
#: its arrays (the tangents, ``m x #params`` residues and a copy for the rank) need no more than this.
ORBIT_BOUND_BUDGET = 32 * 2**20


def orbit_bound_bytes(arch: Architecture) -> int:
    """Bytes :func:`symmetry_orbit_bound` allocates, counted without building anything.

    ``m`` tangents (:meth:`~symattn.model.Architecture.symmetry_dimension`),
    each a few square integer matrices no wider than the widest block, then
    the ``(m, #params)`` residues and their copy in the rank.

    Examples
    --------
    >>> orbit_bound_bytes(Architecture.uniform(layers=2, width=2, rank=1))    # 6 x (2 * 16 + 3 * 2^2) x 8
    2112
    """
    side = max((max(shape) for _, shape in arch.blocks()), default=1)
    return arch.symmetry_dimension() * (2 * arch.param_count + 3 * side * side) * 8


def estimate_rank_bound(arch: Architecture) -> int:
    """A proved upper bound of the native Jacobian's rank for the memory estimates, without big arrays.

    :func:`native_rank_bound` where it is a closed form (the model of the
    paper without a bottleneck, or with one token) or its symmetry orbit is
    small (:data:`ORBIT_BOUND_BUDGET`, no sympy); else a closed form that
    bounds it from above: the sum of the effective blocks' dimensions (the
    image of ``F``'s effective parameters is no larger than the product of
    the blocks'), less one per lightning layer, where ``F`` factors through
    them, and ``#params`` otherwise.  No rank is read off a point here that the
    estimate could undercount: every value returned bounds the rank at every
    point.  A larger bound only makes the estimate (the bank) larger.

    Examples
    --------
    >>> estimate_rank_bound(Architecture.uniform(layers=2)) == native_rank_bound(Architecture.uniform(layers=2))[0]
    True
    >>> big = Architecture.uniform(layers=7, width=64, ffn=100, bias=True)   # 54,094 tangents: not computed
    >>> estimate_rank_bound(big) == big.param_count
    True
    >>> bottleneck = Architecture([3, 1, 3], [1, 1])   # the blocks' sum, no sympy: 9 + 3 + 3 (the rank is 11)
    >>> estimate_rank_bound(bottleneck), native_rank_bound(bottleneck)[0]
    (15, 11)
    """
    from ..effective import effective_block_dimensions, has_bottleneck

    lightning = len([a for a in arch.attention if not a.normalized])
    if arch.is_plain:
        if (arch.degenerate and not lightning) or not has_bottleneck(arch):
            return native_rank_bound(arch)[0]  # the value map's or the effective dimension: closed forms
        return sum(effective_block_dimensions(arch).values()) - lightning
    bound = arch.param_count
    if arch.factors_through_effective and all(a.normalized for a in arch.attention):
        bound = min(bound, sum(effective_block_dimensions(arch).values()))
        if has_bottleneck(arch):
            return bound  # the orbit bound would compute the effective dimension in sympy
    if orbit_bound_bytes(arch) <= ORBIT_BOUND_BUDGET:
        return min(bound, native_rank_bound(arch)[0])
    return bound
