"""The native parameters as Jacobian columns: per block, per effective group, and the gauge slice.
"""

from __future__ import annotations

import numpy as np

from ..model import Architecture, require_architecture

__all__ = ["parameter_columns", "block_columns", "score_block_name", "all_directions", "gauge_slice"]


# -- the native parameters as columns --------------------------------------------------------------
def parameter_columns(arch: Architecture) -> dict:
    """The Jacobian columns of each native block: ``{block key: [positions]}``.

    Columns follow :meth:`~symattn.model.Architecture.parameter_index`:
    layer by layer, head by head, ``Q`` then ``K`` then ``V``, each
    row-major; keys are :meth:`~symattn.model.Architecture.block_key`
    (``(name, layer)``, or ``(name, layer, head)`` in a layer with heads).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> parameter_columns(Architecture.uniform(layers=1, width=2, rank=1))
    {('Q', 1): [0, 1], ('K', 1): [2, 3], ('V', 1): [4, 5, 6, 7]}
    >>> list(parameter_columns(Architecture.uniform(layers=1, width=1, heads=2)))
    [('Q', 1, 1), ('K', 1, 1), ('V', 1, 1), ('Q', 1, 2), ('K', 1, 2), ('V', 1, 2)]
    """
    out: dict = {}
    for position, entry in enumerate(arch.parameter_index()):
        out.setdefault(tuple(entry[:-2]), []).append(position)
    return out


def block_columns(arch: Architecture) -> dict[str, list[int]]:
    """The columns of each effective block: ``scores:i`` (``Q_i`` and ``K_i``) and ``values`` (every ``V_i``).

    In a layer with several heads each head's scores are a block of their
    own, ``scores:i:h``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> block_columns(Architecture.uniform(layers=2, width=1, rank=1))
    {'scores:1': [0, 1], 'scores:2': [3, 4], 'values': [2, 5]}
    >>> block_columns(Architecture.uniform(layers=1, width=1, rank=1, heads=2))
    {'scores:1:1': [0, 1], 'scores:1:2': [3, 4], 'values': [2, 5]}
    """
    groups = arch.block_groups()
    # the score groups first, then the values, then the groups of other components, as they come
    order = sorted(dict.fromkeys(groups.values()), key=lambda g: (not g.startswith("scores:"), g != "values"))
    columns: dict[str, list[int]] = {group: [] for group in order}
    for key, positions in parameter_columns(arch).items():
        columns[groups[key]] += positions
    return columns


def score_block_name(arch: Architecture, layer: int, head: int = 1) -> str:
    """The name of the effective scores of a head: ``scores:i``, or ``scores:i:h`` in a layer with heads.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> score_block_name(Architecture.uniform(layers=1, heads=3), 1, 2)
    'scores:1:2'
    """
    return arch.attention[layer - 1].score_group(layer, head)


def all_directions(arch: Architecture) -> tuple[dict, int]:
    """Every native parameter a jet direction: ``({(name, layer): int array of the block's shape}, #params)``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> directions, count = all_directions(Architecture.uniform(layers=1, width=2, rank=1))
    >>> directions[("V", 1)].tolist(), count
    ([[4, 5], [6, 7]], 8)
    """
    shapes = dict(arch.blocks())
    out = {key: np.array(positions, dtype=np.int64).reshape(shapes[key])
           for key, positions in parameter_columns(arch).items()}
    return out, arch.param_count


def gauge_slice(arch: Architecture) -> tuple[dict, int]:
    """Native parameters that meet every gauge orbit transversally: ``(directions, count)``.

    The gauge ``G_i`` can bring the first ``a_i`` columns of ``Q_i`` to the
    identity and ``H_i`` the first ``d_i`` columns of ``V_i`` (``i < l``), so
    differentiating in the other entries only misses gauge directions: the
    Jacobian restricted to them has the same rank generically, with
    ``#params - gauge_dim`` columns (when ``a_i <= d_{i-1}`` and
    ``d_i <= d_{i-1}``; otherwise fewer entries are dropped).  With heads,
    each head's ``G_{i,h}`` fixes its own ``Q_{i,h}`` and ``H_i`` fixes the
    first head's ``V_{i,1}``; a residual stream has no ``H_i``
    (:func:`symattn.effective.hidden_gauge_layers`), so no ``V`` entry is fixed.

    Returns
    -------
    directions : dict
        ``(name, layer) -> int array`` of the block's shape: the jet direction
        of each entry, ``-1`` for entries held fixed.
    count : int
        The number of directions.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.effective import effective_dimension, gauge_dimension
    >>> arch = Architecture.uniform(layers=2, width=3, rank=2)
    >>> directions, count = gauge_slice(arch)
    >>> count, arch.param_count - gauge_dimension(arch), effective_dimension(arch)
    (25, 25, 25)
    >>> directions[("Q", 1)].tolist()
    [[-1, -1, 0], [-1, -1, 1]]
    """
    arch = require_architecture(arch)
    # a change of basis G (H) acts on the left of these blocks: it can bring their leading square to I
    sliced = {key for i, d_in, component in arch.components() for key in component.gauge_slice_blocks(i, d_in)}
    sliced |= {writers[0] for _, _, _, writers in arch.hidden_gauges() if writers}
    out, position = {}, 0
    for key, (rows, cols) in arch.blocks():
        fixed = np.zeros((rows, cols), dtype=bool)
        if rows <= cols and key in sliced:
            fixed[:, :rows] = True
        directions = np.full((rows, cols), -1, dtype=np.int64)
        free = int((~fixed).sum())
        directions[~fixed] = position + np.arange(free)
        position += free
        out[key] = directions
    return out, position
