"""What the identification analyses share.

Limits, checks of the arguments, the Jacobian with its memory check, series
ranks, the effective dimensions and the starting sizes of banks and truncations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algebra.linalg import add_mod, compress_row_pieces, rank_mod_p
from ..algebra.valuations import smith_valuations
from ..curves import Curve, collapse
from ..effective import (
    effective_block_dimensions,
    rank_matrix_dimension,
)
from ..errors import SymattnError
from ..jacobian import (
    all_directions,
    compress_rows,
    gauge_slice,
    generator,
    input_groups,
    jacobian_series,
    effective_dimension_of,
    ORBIT_BOUND_BUDGET,
    estimate_rank_bound,
    native_rank_bound,
    orbit_bound_bytes,
    symmetry_orbit_bound,
    constant_field,
)
from ..model import Architecture, require_architecture, require_seed

__all__ = ["DIMENSION_PRIME", "SeriesRank", "compressed_jacobian", "compressed_jacobian_part", "hmk_dimension",
           "input_groups", "integer_score_curve", "integer_score_point", "integer_score_refusal", "orders_memory",
           "series_rank"]


#: Prime of the fast dimension certificate: below ``2**20``, so that its residues pass
#: through float64 BLAS as one limb (:mod:`symattn.algebra.linalg` takes any prime below
#: ``2**28`` with two).  A smaller prime can only make the certified lower bound come out low
#: (then a new point is drawn); it can never make it wrong.
DIMENSION_PRIME = 1048573

#: Deepest truncation the adaptive searches go to.
MAX_TRUNCATION = 256

#: Deepest order the exact symbolic check of sharpness goes to, automatically and when asked
#: (two layers at most): the polynomials of deeper coefficients outgrow memory.
EXACT_CHECK_LIMITS = {"auto": 8, True: 12, False: -1}

_ESTIMATES = ("mpmath", "float64", None)


@dataclass(frozen=True)
class SeriesRank:
    """Rank of a matrix of series over ``GF(p)((eps))``, resolved below the truncation.

    ``rank`` counts the Smith-form exponents below ``truncation`` (a
    certified lower bound for the rank); ``exponents`` is their histogram.

    Examples
    --------
    >>> import numpy as np
    >>> M = np.zeros((2, 2, 3), dtype=np.int64)
    >>> M[0, 0, 0] = 1; M[1, 1, 2] = 3           # diag(1, 3 eps^2) over GF(5)
    >>> result = series_rank(M, 5)
    >>> result.rank, result.exponents, result.truncation
    (2, {0: 1, 2: 1}, 3)
    """

    rank: int
    exponents: dict
    truncation: int


def series_rank(M, p: int, progress=None) -> SeriesRank:
    """Smith-form exponents of a matrix of truncated series over GF(p), as a rank and a histogram.

    The exponents of :func:`symattn.algebra.valuations.smith_valuations`
    (below the truncation ``N``; the rank they resolve is a certified lower
    bound for the rank over ``GF(p)((eps))``), counted by exponent.

    Parameters
    ----------
    M : int array ``(m, n, N)``
        Coefficients of ``eps^0 .. eps^(N-1)``.
    p : int
        A prime below ``2**28``.
    progress : callable, optional
        Called with no argument after each pivot (the rank so far).

    Returns
    -------
    SeriesRank

    Examples
    --------
    >>> M = np.zeros((2, 2, 4), dtype=np.int64)
    >>> M[0, 0, 1] = 1; M[1, 1, 3] = 2; M[0, 1, 2] = 5
    >>> series_rank(M, 7)
    SeriesRank(rank=2, exponents={1: 1, 3: 1}, truncation=4)
    >>> series_rank(M[:, :, :3], 7).rank      # eps^3 is not resolved mod eps^3
    1
    """
    result = smith_valuations(M, p, progress=progress)
    histogram: dict[int, int] = {}
    for exponent in result.exponents:
        histogram[exponent] = histogram.get(exponent, 0) + 1
    return SeriesRank(result.resolved_rank, histogram, result.truncation)


_POINT = Curve("a random point (no curve)")


def _jacobian(arch, curve, bank, point, p, truncation, coefficient_values=None, directions=None,
              coordinates="native") -> np.ndarray:
    """:func:`symattn.jacobian.jacobian_series`, refused first when it would not fit in memory."""
    chosen, count = all_directions(arch) if directions is None else directions
    _require_jacobian_memory(arch, curve, len(bank), truncation, chosen, count)
    return jacobian_series(arch, curve, bank, point, p, truncation, coefficient_values, (chosen, count),
                           coordinates)


def _directions_per_block(directions: dict) -> dict:
    return {key: int((chosen >= 0).sum()) for key, chosen in directions.items()}


@dataclass(frozen=True)
class DimensionPlan:
    """The first bank and truncation of :func:`function_space_dimension`, and why.

    Along a curve the rank can be resolved two ways: many inputs at the
    leading orders (each input adds about one direction of the largest score
    block there), or few inputs and a deeper series (the later orders add
    directions of their own: two layers of width 32 need 16 inputs to eps^12
    instead of 449 to eps^6).  The wide plan is the default, its Jacobian
    computed at once; when that would not fit in the memory limit, the
    Jacobian is built in groups of inputs (:func:`compressed_jacobian`) for
    the plan with less work (inputs times the square of the truncation), so
    that the memory grows with the answer (the columns) instead of the bank.

    Without a curve, where the integer-score route applies (softmax at layer
    1: :func:`integer_score_refusal`), its plan: few inputs, short series.

    Examples
    --------
    >>> plan = DimensionPlan.choose(Architecture.uniform(layers=2, width=3, rank=2), collapse())
    >>> plan.bank, plan.truncation, plan.narrow
    (9, 6, False)
    >>> plan = DimensionPlan.choose(Architecture.uniform(layers=2, width=32, rank=8, tokens=8), collapse(),
    ...                             limit=2**32)
    >>> plan.bank, plan.truncation, plan.narrow
    (16, 12, True)
    >>> plan = DimensionPlan.choose(Architecture.uniform(layers=2, width=32, rank=8, tokens=8), None)
    >>> plan.bank, plan.truncation, plan.note
    (17, 2, 'integer scores')
    """

    bank: int
    truncation: int
    narrow: bool
    note: str = ""

    @staticmethod
    def choose(arch: Architecture, curve, limit: int | None = None, p: int = DIMENSION_PRIME,
               upper: int | None = None) -> "DimensionPlan":
        from ..limits import compressed_jacobian_memory, format_size, memory_limit

        if upper is None:  # the memory estimates give a cheaper bound (_estimate_upper_bound)
            upper, _ = _upper_bound(arch)
        if _is_polynomial_arch(arch):
            return DimensionPlan(_bank_size(arch, upper, on_curve=False), 1, False)
        if curve is None and integer_score_refusal(arch, p=p) is None:  # the integer-score route
            return DimensionPlan(integer_score_bank_size(arch, upper), integer_score_truncation(arch), False,
                                 "integer scores")
        route_curve = _check_curve(arch, curve)
        truncation = _guess_deepest_order(arch, route_curve) + (0 if _scales_parameters(route_curve, arch.layers)
                                                                 else 1)
        wide = DimensionPlan(_bank_size(arch, upper, on_curve=True), truncation, False)
        directions, count = gauge_slice(arch)
        per_block = _directions_per_block(directions)

        def needs(plan, group):
            return compressed_jacobian_memory(arch, plan.bank, group, plan.truncation, count,
                                              compressed_rows(arch, plan.bank, count), per_block).bytes

        wide_bytes = needs(wide, wide.bank)
        limit = memory_limit() if limit is None else limit
        if wide_bytes <= limit:
            return wide
        # about half of each input's d_l t rows are new directions at twice the leading order (measured at
        # widths 8-32 with two layers; the adaptive driver grows both when it is not enough)
        per_input = max(1, arch.widths[-1] * arch.tokens // 2)
        bank = min(wide.bank, math.ceil(upper / per_input) + 1)
        narrow = DimensionPlan(bank, 2 * truncation, True,
                               f"{bank} inputs to eps^{2 * truncation} instead of {wide.bank} to eps^{truncation}, "
                               f"whose Jacobian would need about {format_size(wide_bytes)} at once")
        # either one in groups of inputs: the one with less work (inputs times the square of the series length)
        fitting = [plan for plan in (narrow, wide) if needs(plan, 1) <= limit] or [narrow]
        return min(fitting, key=lambda plan: plan.bank * plan.truncation ** 2)


def _dimension_memory(arch: Architecture, curve: Curve | None = None, where: str = "here"):
    """Memory of the first run of :func:`function_space_dimension` (gauge slice, before any growth).

    ``R J`` built in groups of inputs as large as fit (:func:`dimension_group`),
    then its Smith form; ``where``: ``"here"`` (one process), ``"coordinator"``
    (the sum and the Smith form, the groups on Dask workers) or ``"worker"``.
    """
    from ..limits import compressed_jacobian_memory

    plan = DimensionPlan.choose(arch, curve, upper=_estimate_upper_bound(arch))
    directions = gauge_slice(arch)
    group = dimension_group(arch, plan.bank, plan.truncation, directions, where="here" if where == "here" else "worker")
    return compressed_jacobian_memory(arch, plan.bank, group, plan.truncation, directions[1],
                                      compressed_rows(arch, plan.bank, directions[1]),
                                      _directions_per_block(directions[0]), where=where)


#: Groups of inputs whose step needs less than this are not cut further (fewer, larger passes are faster there).
GROUP_FLOOR = 64 * 2**20


def dimension_group(arch: Architecture, bank: int, truncation: int, directions, inputs_per_task: int | None = None,
                    where: str = "here") -> int:
    """Inputs per group of :func:`compressed_jacobian`: ``inputs_per_task``, else the most that fit in memory.

    The largest group whose step (:func:`symattn.limits.compressed_jacobian_memory`)
    fits in the memory limit and needs no more than the Smith form of ``R J``
    afterwards (or :data:`GROUP_FLOOR`), at least one: so the memory grows
    with the answer ``R J``, not with the bank.  ``where``: ``"here"`` (the
    accumulator and the Smith form in the same process) or ``"worker"`` (a
    Dask worker: its task's sum of ``R_g J_g`` and one group).

    Examples
    --------
    >>> small = Architecture.uniform(layers=2, width=4, rank=2)
    >>> dimension_group(small, 13, 6, gauge_slice(small)), dimension_group(small, 13, 6, gauge_slice(small), 2)
    (13, 2)
    >>> wide = Architecture.uniform(layers=2, width=32, rank=8, tokens=8)
    >>> dimension_group(wide, 16, 12, gauge_slice(wide))        # R J is (1922, 1920, 12): 354 MB
    1
    """
    if inputs_per_task is not None:
        return max(1, min(inputs_per_task, bank))
    from ..limits import compressed_jacobian_memory, largest_fitting, memory_limit

    chosen, count = directions
    rows = compressed_rows(arch, bank, count)
    per_block = _directions_per_block(chosen)
    def needs(group):
        return compressed_jacobian_memory(arch, bank, group, truncation, count, rows, per_block, where=where).bytes

    # no more than the limit, nor than the Smith form of R J needs anyway (or GROUP_FLOOR): larger groups
    # only cost memory (width 32, rank 8, 8 tokens: 4 inputs a group 1.6 GB, the 16 at once 3.4 GB and slower)
    accumulator = rows * count * truncation * 8
    limit = min(memory_limit(), max(needs(1), GROUP_FLOOR, 5 * accumulator if where == "here" else 4 * accumulator))

    def fits(group):
        return needs(group) <= limit

    # the largest group that fits (a larger group needs more)
    return bank if fits(bank) else (largest_fitting(fits, bank) or 1)


def _require_dimension_memory(arch: Architecture, curve, distributed: bool) -> None:
    """Refuse a dimension whose first run would not fit here, naming what would make it fit.

    With Dask only the sum and the Smith form run here; the groups' forward
    passes run on the workers.
    """
    from ..errors import ResourceLimitError
    from ..limits import format_size, memory_limit

    where = "coordinator" if distributed else "here"
    try:
        _require_memory(lambda network, curve_: _dimension_memory(network, curve_, where), arch, curve,
                        MAX_TRUNCATION)
    except ResourceLimitError as err:
        if distributed or "needs series to" in str(err):
            raise
        coordinator = _dimension_memory(arch, curve, "coordinator")
        if coordinator.bytes > memory_limit():
            raise
        worker = _dimension_memory(arch, curve, "worker")
        raise ResourceLimitError(
            f"{err}; or --workers N (workers=) or --scheduler ADDRESS (scheduler=) runs each group of inputs on a "
            f"Dask worker (about {format_size(worker.bytes)} each, one input a group) and keeps only R J and its "
            f"Smith form here ({format_size(coordinator.bytes)}); the bank is already taken one input at a time"
        ) from None


def orders_memory(arch: Architecture, curve: Curve | None = None):
    """Memory of the first Jacobians of :func:`identification_orders` (the second prime's beside the first).

    What the memory guard compares with the limit before the computation starts.

    Examples
    --------
    >>> estimate = orders_memory(Architecture.uniform(layers=2))
    >>> estimate.series_order, estimate.bytes < 2**20
    (7, True)
    """
    from ..limits import jet_jacobian_memory

    curve = _check_curve(arch, curve)
    upper = _estimate_upper_bound(arch)
    return jet_jacobian_memory(arch, _bank_size(arch, upper, on_curve=True), _guess_deepest_order(arch, curve) + 1,
                               computation="the identification orders", jacobian_copies=4)


def _identify_memory(arch: Architecture, curve: Curve | None = None):
    """The larger of the two, with the deeper series: what :func:`identify` needs before any growth."""
    from dataclasses import replace

    dimension, orders = _dimension_memory(arch, curve), orders_memory(arch, curve)
    largest = max(dimension, orders, key=lambda estimate: estimate.bytes)
    return replace(largest, computation="identify", series_order=max(dimension.series_order, orders.series_order))


def _require_memory(estimate_for, arch: Architecture, curve, max_series_order: int | None = None) -> None:
    """Refuse a computation whose first step would not fit, naming the sizes that would."""
    from ..limits import check_memory

    check_memory(estimate_for(arch, curve), arch=arch, estimate_for=lambda resized: estimate_for(resized, curve),
                 max_series_order=max_series_order)


def _require_jacobian_memory(arch: Architecture, curve: Curve, bank: int, truncation: int, directions: dict,
                             count: int) -> None:
    """Refuse a jet Jacobian that would not fit in memory, before its forward pass allocates anything."""
    from ..limits import check_memory, jet_jacobian_memory

    curve = None if curve is _POINT else curve  # the polynomial route: no curve, series of length 1
    estimate = jet_jacobian_memory(arch, bank, truncation, count, _directions_per_block(directions))
    check_memory(estimate, arch=arch, estimate_for=lambda resized: _identify_memory(resized, curve))


def _compress_rows(J, rows: int, p: int, seed: int) -> np.ndarray:
    """``R J`` for a random ``rows x m`` matrix ``R`` over GF(p) (rank can only drop)."""
    return compress_rows(J, p, generator(seed, "dimension rows", J.shape[0]), rows)


# ---------------------------------------------------------------------------------------
# the row-compressed Jacobian, built group by group
# ---------------------------------------------------------------------------------------
def compressed_rows(arch: Architecture, bank_size: int, count: int) -> int:
    """Rows of the compressed Jacobian ``R J``: two more than its columns, at most the rows of ``J``.

    Examples
    --------
    >>> compressed_rows(Architecture.uniform(layers=2, width=3, rank=2), 9, 25)
    27
    >>> compressed_rows(Architecture.uniform(layers=1, width=3, tokens=2), 1, 25)   # one input: d_l t = 6 rows
    6
    """
    return min(count + 2, arch.widths[-1] * arch.tokens * bank_size)


def compressed_jacobian_part(arch: Architecture, curve, point, inputs, start: int, p: int, truncation: int,
                             coefficient_values, directions, seed: int, rows: int,
                             group: int | None = None, on_inputs=None) -> np.ndarray:
    """``R_g J_g`` mod ``p``: the Jacobian series of the bank inputs ``start, start + 1, ...`` compressed.

    ``inputs`` are their residues (rows ``start .. start + len(inputs) - 1``
    of the bank); ``R_g`` combines the ``d_l t`` rows of input ``b`` by a
    ``rows x d_l t`` matrix drawn from the ``"input rows"`` stream of
    :func:`~symattn.jacobian.generator` salted by ``b``, so the sum of the
    parts over any grouping of the bank is the same ``R J``
    (:func:`compressed_jacobian`).  The inputs go through the forward pass
    ``group`` at a time (default all), their parts summed here in one array
    (``on_inputs(count)`` is called after each group).  A pure function of
    its arguments: one Dask task.

    Returns
    -------
    int64 array ``(rows, count, N)``

    Examples
    --------
    >>> from symattn.jacobian import random_bank, random_point
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=2)
    >>> point, values = random_point(arch, 1009, 0)
    >>> bank = random_bank(arch, 3, 1009, 0)
    >>> directions = gauge_slice(arch)
    >>> whole = compressed_jacobian_part(arch, collapse(), point, bank, 0, 1009, 3, values, directions, 0, 9)
    >>> pieces = [compressed_jacobian_part(arch, collapse(), point, bank[i:i + 1], i, 1009, 3, values, directions, 0, 9)
    ...           for i in range(3)]
    >>> bool((sum(pieces) % 1009 == whole).all()), whole.shape
    (True, (9, 7, 3))
    """
    from ..limits import COMPRESSION_ROWS

    curve = _POINT if curve is None or curve == _POINT else _check_curve(arch, curve)  # None: the polynomial route
    total = None
    # groups' Jacobians wait until they hold about as many rows as R J: one product of that inner size
    # instead of one per group (short series: the Jacobian of one input is small, and each product
    # and its sum into R J cost about as much in conversions as in flops)
    waiting, streams, waiting_from = [], [], 0
    per_input = arch.widths[-1] * arch.tokens
    groups = input_groups(len(inputs), group or len(inputs))
    for index, (first, stop) in enumerate(groups):
        # the caller checked the memory of a group (compressed_jacobian here, the coordinator's plan on Dask)
        waiting.append(jacobian_series(arch, curve, inputs[first:stop], point, p, truncation, coefficient_values,
                                       directions))
        streams += [generator(seed, "input rows", start + b) for b in range(first, stop)]
        if sum(len(J) for J in waiting) >= min(rows, COMPRESSION_ROWS) or index == len(groups) - 1:
            # R = [I | G]: the bank's first rows are kept as they are (the rank is as likely to be kept)
            total = compress_row_pieces(waiting, rows, p, streams, out=total,
                                        first_row=(start + waiting_from) * per_input)
            waiting, streams, waiting_from = [], [], stop
        if on_inputs is not None:
            on_inputs(stop - first)
    return total


def compressed_jacobian(arch: Architecture, curve, bank, point, p: int, truncation: int, coefficient_values,
                        directions, seed: int, group: int | None = None, parts=None, on_inputs=None,
                        task_inputs: int | None = None) -> np.ndarray:
    """``R J`` mod ``p``, the row-compressed Jacobian series of the bank, as the sum of its groups' ``R_g J_g``.

    Only the accumulator ``(rows, count, N)`` and one group's Jacobian are in
    memory at a time; the result is the same for every ``group``
    (:func:`compressed_jacobian_part`).

    Parameters
    ----------
    arch, curve, bank, point, p, truncation, coefficient_values, directions
        As for :func:`symattn.jacobian.jacobian_series` (``curve`` ``None``: the random point route).
    seed : int
        Seeds the compression.
    group : int, optional
        Inputs per group (default: the whole bank at once).
    task_inputs : int, optional
        Inputs per call of :func:`compressed_jacobian_part` (a Dask task: it
        sums its own groups, so fewer parts travel; default ``group``).
    parts : callable, optional
        ``parts(calls)`` yields ``(call, R_g J_g)`` in any order, for ``calls`` a
        list of ``(function, arguments)`` (Dask computes them; default: here,
        one group after the other, summed into one array).
    on_inputs : callable, optional
        Called with the number of inputs of each group as it is added.

    Examples
    --------
    >>> from symattn.jacobian import random_bank, random_point
    >>> arch = Architecture.uniform(layers=2, width=2, tokens=3)
    >>> point, values = random_point(arch, 1009, 0)
    >>> bank = random_bank(arch, 5, 1009, 0)
    >>> whole = compressed_jacobian(arch, collapse(), bank, point, 1009, 4, values, gauge_slice(arch), 0)
    >>> pairs = compressed_jacobian(arch, collapse(), bank, point, 1009, 4, values, gauge_slice(arch), 0, group=2)
    >>> bool((whole == pairs).all()), whole.shape
    (True, (12, 10, 4))
    """
    count = directions[1]
    rows = compressed_rows(arch, len(bank), count)
    group = min(group or len(bank), len(bank))
    calls = [(compressed_jacobian_part, (arch, curve, point, bank[start:stop], start, p, truncation,
                                         coefficient_values, directions, seed, rows, group))
             for start, stop in input_groups(len(bank), task_inputs or group)]
    if parts is None:  # here: refuse a group that would not fit, before its forward pass allocates anything
        from ..limits import check_memory, compressed_jacobian_memory

        estimate = compressed_jacobian_memory(arch, len(bank), group, truncation, count, rows,
                                              _directions_per_block(directions[0]))
        check_memory(estimate, arch=arch, estimate_for=lambda resized: _dimension_memory(resized, curve))
        # one call over the bank: its groups summed into one array as they come
        return compressed_jacobian_part(arch, curve, point, bank, 0, p, truncation, coefficient_values, directions,
                                        seed, rows, group, on_inputs)
    total = None
    for (function, arguments), part in parts(calls):
        if total is None:
            total = part if part.flags.writeable else part.copy()  # Dask may hand back a read-only buffer
        else:
            add_mod(total, part, p)
        del part
        if on_inputs is not None:
            on_inputs(len(arguments[3]))
    return total


# ---------------------------------------------------------------------------------------
# the integer-score route: layer 1 at an integer point, the later layers' keys collapsed
# ---------------------------------------------------------------------------------------
#: Largest entry of the integer-score route's first layer and bank (less when the scores
#: could pass ``p / 2``: :func:`integer_score_entry`).
INTEGER_SCORE_ENTRY = 8


def integer_score_refusal(arch: Architecture, curve=None, p: int = DIMENSION_PRIME) -> str | None:
    """Why the integer-score route of the dimension does not apply to ``arch`` (``None`` when it does).

    The route needs no curve of the user's, a normalizer ``C e^{a x}`` with
    rational ``a`` at layer 1 (softmax), exact Taylor coefficients elsewhere,
    attention, causal masks and residual streams only (biases and
    feed-forward blocks keep the curve route), and layer-1 scores that stay
    below ``p / 2`` with entries of 1 (``a d_0^2 <= (p - 1) / 2``): the domain
    reads each score from its residue.

    Examples
    --------
    >>> integer_score_refusal(Architecture.uniform(layers=2)) is None
    True
    >>> integer_score_refusal(Architecture.uniform(layers=2, normalizer="cosh"))
    'the first layer normalizer cosh is not C e^(a x) with a rational a'
    """
    from ..model.components import Attention, CausalMask, Residual

    if curve is not None:
        return "a curve was given"
    if _is_polynomial_arch(arch):
        return "every normalizer is a polynomial (the random point route)"
    first = arch.normalizers[0]
    if first.exponential_rate is None:
        return f"the first layer normalizer {first.name} is not C e^(a x) with a rational a"
    if any(type(component) not in (Attention, CausalMask, Residual) for _, _, component in arch.components()):
        return "a component other than attention, a causal mask or a residual stream"
    if arch.score_ranks[0] * arch.widths[0] ** 2 > (p - 1) // 2:
        return (f"layer 1's scores (up to a d_0^2 = {arch.score_ranks[0] * arch.widths[0] ** 2} with entries of 1) "
                f"could pass p/2 = {(p - 1) // 2}")
    return None


def integer_score_curve(arch: Architecture) -> Curve:
    """Key collapse ``K_i = eps Kt_i`` at layers ``2 .. l`` (no curve for one layer).

    Examples
    --------
    >>> integer_score_curve(Architecture.uniform(layers=3)).describe(3)
    'key collapse K_i = eps Kt_i at layers [2, 3]'
    """
    from ..curves import collapse_keys

    return collapse_keys(list(range(2, arch.layers + 1))) if arch.layers > 1 else _POINT


def integer_score_entry(arch: Architecture, p: int) -> int:
    """The largest entry ``R`` of the integer point: every score ``|x^T Q^T K y| <= a d_0^2 R^4`` stays below ``p / 2``.

    Examples
    --------
    >>> integer_score_entry(Architecture.uniform(layers=2, width=3, rank=2), DIMENSION_PRIME)
    8
    >>> integer_score_entry(Architecture.uniform(layers=2, width=32, rank=8, tokens=8), DIMENSION_PRIME)
    2
    """
    d0, a = arch.widths[0], arch.score_ranks[0]
    entry = INTEGER_SCORE_ENTRY
    while entry > 1 and a * d0 ** 2 * entry ** 4 > (p - 1) // 2:
        entry -= 1
    return entry


def integer_score_point(arch: Architecture, p: int, seed: int, bank_size: int):
    """The integer-score route's point, coefficient values and bank: ``(point, coefficient_values, bank)``.

    Layer 1's query and key blocks and the bank are integers in ``[-R, R]``
    (:func:`integer_score_entry`), every other block a random residue
    (:func:`random_point`); the coefficient values carry
    :class:`~symattn.algebra.modseries.IntegerScores`: a random residue for
    ``e^(1/v)`` (``v`` the denominator of layer 1's rate) and the largest
    score, computed exactly.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=2, width=3, rank=2)
    >>> point, values, bank = integer_score_point(arch, DIMENSION_PRIME, 0, 4)
    >>> from symattn.algebra.modseries import INTEGER_SCORES
    >>> bank.shape, int(abs(point[("Q", 1)]).max()) <= 8, values[INTEGER_SCORES].denominator
    ((4, 3, 3), True, 1)
    """
    from ..algebra.modseries import INTEGER_SCORES, IntegerScores
    from ..jacobian import random_point

    point, coefficient_values = random_point(arch, p, seed)
    rng = generator(seed, "integer point")
    entry = integer_score_entry(arch, p)

    def draw(shape):
        return rng.integers(-entry, entry + 1, size=shape).astype(np.int64)

    for key, shape in arch.blocks():
        if key[0] in ("Q", "K") and key[1] == 1:
            point[key] = draw(shape)
            # the gauge slice holds Q's leading square fixed, as the identity a gauge reaches: it must be
            # invertible (small integers make a singular one likely); invertible mod p is invertible over Q
            while key[0] == "Q" and rank_mod_p(point[key][:, :min(shape)], p) < min(shape):
                point[key] = draw(shape)
    bank = np.stack([draw(arch.input_shape) for _ in range(bank_size)])
    largest = 0
    for key, _ in arch.blocks():  # each head's scores x^T Q^T K y, exactly
        if key[0] == "Q" and key[1] == 1:
            queries = np.einsum("ad,bdt->bat", point[key], bank)
            keys = np.einsum("ad,bdt->bat", point[("K",) + key[1:]], bank)
            largest = max(largest, int(np.abs(np.einsum("bas,bat->bst", keys, queries)).max()))
    if largest > (p - 1) // 2:  # integer_score_refusal rules this out: the residues would not give the scores
        raise SymattnError(f"a layer-1 score {largest} passes p/2 = {(p - 1) // 2}; the integer-score route does "
                           "not apply (route='curve')")
    rate = arch.normalizers[0].exponential_rate
    coefficient_values[INTEGER_SCORES] = IntegerScores(base=int(rng.integers(2, p)), denominator=int(rate.q),
                                                       bound=largest)
    return point, coefficient_values, bank % p


def integer_score_truncation(arch: Architecture) -> int:
    """A first truncation of the integer-score route: 1 without a curve (one layer), ``2 * 3^(l - 2)`` after.

    Two layers: the collapsed keys' columns at ``eps^0`` and the queries' at
    ``eps^1``; each later layer about triples the orders (the adaptive
    driver deepens when they need more).

    Examples
    --------
    >>> [integer_score_truncation(Architecture.uniform(layers=l)) for l in (1, 2, 3)]
    [1, 2, 6]
    """
    return 1 if arch.layers == 1 else 2 * 3 ** (arch.layers - 2)


def integer_score_bank_size(arch: Architecture, upper: int) -> int:
    """A first bank for the integer-score route: rows for the upper bound, and each input adds at
    most ``t (t - 1)`` directions of the score blocks (their entries less a constant per column).

    Examples
    --------
    >>> integer_score_bank_size(Architecture.uniform(layers=2, width=32, rank=8, tokens=8), 1920)
    17
    """
    d_out, t = arch.widths[-1], arch.tokens
    scores = sum(v for k, v in _block_dimensions(arch).items() if k.startswith("scores"))
    size = max(math.ceil(upper / (d_out * max(1, t - 1))), math.ceil(scores / max(1, t * (t - 1)))) + 1
    return max(1, size)


# ---------------------------------------------------------------------------------------
# checks of the arguments
# ---------------------------------------------------------------------------------------
def _check_seed(seed) -> int:
    return require_seed(seed)


def _check_arch(arch) -> Architecture:
    return require_architecture(arch)


def _check_curve(arch: Architecture, curve) -> Curve:
    curve = collapse() if curve is None else curve
    if not isinstance(curve, Curve):
        raise SymattnError(f"curve must be a symattn.curves.Curve such as collapse() or input_scaling(), "
                           f"got {curve!r}")
    curve.validate(arch)
    return curve


def _check_estimate(estimate):
    if isinstance(estimate, str) and estimate.lower() == "none":
        estimate = None
    if estimate not in _ESTIMATES:
        raise SymattnError(f"estimate must be 'mpmath', 'float64' or None, got {estimate!r}")
    return estimate


def _is_polynomial_arch(arch: Architecture) -> bool:
    # every weight polynomial (lightning, a polynomial normalizer) and every other function too (an activation)
    return all(a.polynomial_weights for a in arch.attention) and all(f.is_polynomial for f in arch.analytic_functions)


def _check_exact_taylor(arch: Architecture) -> None:
    """Series over GF(p) need Taylor coefficients in ``Q(theta)(g)``: rational, algebraic, one transcendental.

    (Or generic symbols.)  :func:`symattn.jacobian.constant_field` decides; what it refuses
    (``pi`` with ``e``, ``sin(1)``) is refused here, before any work.
    """
    constant_field(arch)


def _uniform(arch: Architecture):
    """``(d, a)`` when every width is ``d`` and every score rank is ``a``; else ``None``."""
    if len(set(arch.widths)) == 1 and len(set(arch.score_ranks)) == 1:
        return arch.widths[0], arch.score_ranks[0]
    return None


def hmk_dimension(layers: int, width: int, rank: int, lightning: bool = False) -> int:
    """HMK's dimension ``l a (2d - a) + d^2`` (minus ``l`` for lightning attention), ``a <= d``.

    A score rank above the width counts as the width (``What_i`` has rank at most ``d``).

    Examples
    --------
    >>> [hmk_dimension(2, d, 2) for d in (3, 4, 10)]
    [25, 40, 172]
    >>> hmk_dimension(2, 3, 2, lightning=True)
    23
    """
    for value, what in ((layers, "layers"), (width, "width"), (rank, "rank")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise SymattnError(f"{what} must be a positive integer, got {value!r}")
    a = min(rank, width)
    return layers * a * (2 * width - a) + width * width - (layers if lightning else 0)


def _effective_dim(arch: Architecture) -> int:
    """:func:`effective_dimension`, computed once per shape (with a bottleneck it is an exact rank).

    For the variants (heads, causal mask, residual stream) no effective
    parameters are derived: the symmetry-orbit bound of :func:`_orbit_bound`.
    """
    if not arch.is_plain:
        return _orbit_bound(arch)
    return effective_dimension_of(tuple(arch.widths), tuple(arch.score_ranks))


def _orbit_bound(arch: Architecture) -> int:
    return symmetry_orbit_bound(arch)


def _lightning_layers(arch: Architecture) -> list[int]:
    return [i for i, a in enumerate(arch.attention, start=1) if not a.normalized]


_upper_bound = native_rank_bound  # the one rank bound, shared with the spectrum

# the memory estimates' rank bound lives beside the rank bound itself (shared with the spectrum's estimate)
_orbit_bound_bytes = orbit_bound_bytes
_estimate_upper_bound = estimate_rank_bound


def _expected_dimension(arch: Architecture) -> int | None:
    if not arch.is_plain:
        return None  # no formula claimed for the variants
    uniform = _uniform(arch)
    if uniform is None:
        return None
    lightning = _lightning_layers(arch)
    if lightning and len(lightning) != arch.layers:
        return None
    if arch.degenerate and not lightning:
        return None
    d, a = uniform
    return hmk_dimension(arch.layers, d, a, lightning=bool(lightning))


def _score_order(curve: Curve, layers: int) -> int:
    """Valuation in eps of the scores of layer 1 on the curve (a guess for later layers)."""
    q = 1 if any(curve.scaled("Q", i) for i in range(1, layers + 1)) else 0
    k = 1 if any(curve.scaled("K", i) for i in range(1, layers + 1)) else 0
    return q + k + 2 * curve.input_power


def _scales_parameters(curve: Curve, layers: int) -> bool:
    return any(curve.block_power(name, i) for name in ("Q", "K") for i in range(1, layers + 1))


def _expected_orders(arch: Architecture, curve: Curve) -> dict | None:
    """The orders MATH.md section 4 claims on the simultaneous collapse curve (common k); none for the variants."""
    if not arch.is_plain:
        return None
    ks = {n.k for n in arch.normalizers}
    is_collapse = (curve.query_layers is None and curve.key_layers is None and curve.input_power == 0
                   and not curve.polynomials)
    if not is_collapse or len(ks) != 1 or None in ks:
        return None
    (k,) = ks
    out = {"values": 0}
    for i in range(1, arch.layers + 1):
        out[f"scores:{i}"] = 2 * k * 3 ** (i - 1)
    return out


def _guess_deepest_order(arch: Architecture, curve: Curve) -> int:
    """A first truncation for the deepest block along the curve (adaptive searches deepen it)."""
    k = max((n.k or 1) for n in arch.normalizers)
    q = max(_score_order(curve, arch.layers), 1)
    return q * k * 3 ** (arch.layers - 1) + curve.input_power


def _block_dimensions(arch: Architecture) -> dict[str, int]:
    """The dimension each block's own columns can move its effective parameters through.

    ``values``: the dimension of ``P`` (:func:`effective_block_dimensions`).
    ``scores:i``: ``(Q_i, K_i)`` move ``What_i = P_{i-1}^T W_i P_{i-1}`` with
    ``P_{i-1}`` held fixed, through ``r (2m - r)`` dimensions, where ``m`` is the
    generic rank of ``P_{i-1}`` (the least of ``d_0..d_{i-1}``) and
    ``r = min(a_i, m)``; without a hidden bottleneck this is the block's
    effective dimension ``a_i (2 d_0 - a_i)``.
    """
    if not arch.is_plain:
        return _variant_block_dimensions(arch)
    dims = dict(effective_block_dimensions(arch))
    for i in range(1, arch.layers + 1):
        m = min(arch.widths[:i])
        r = min(arch.score_ranks[i - 1], m)
        dims[f"scores:{i}"] = r * (2 * m - r)
    return dims


def _variant_block_dimensions(arch: Architecture) -> dict[str, int]:
    """Block dimensions for the variants: what each block can move, not claimed effective dimensions.

    ``scores:i[:h]``: a head's scores depend on ``(Q_{i,h}, K_{i,h})`` only through
    ``W_{i,h} = K^T Q`` (``d_{i-1} x d_{i-1}`` of rank ``<= a_i``), ``r (2 d_{i-1} - r)``
    dimensions with ``r = min(a_i, d_{i-1})``.  ``values``: every ``V_{i,h}`` entry minus
    the hidden GL(d_i) (none with a residual stream).
    """
    from ..jacobian import score_block_name

    dims = {score_block_name(arch, i, h): rank_matrix_dimension(arch.widths[i - 1], arch.widths[i - 1],
                                                                 arch.score_ranks[i - 1])
            for i, h in arch.units()}
    # a hidden GL(d_i) between attention layers moves only Q, K, V; one shared with another component's blocks
    # (a feed-forward block's W_in) is not the values' alone, and is not subtracted from them
    attention = {key for i, d_in, c in arch.components() if c.kind == "attention" for key, _ in
                 c.parameter_blocks(i, d_in)}
    groups = arch.block_groups()
    dims["values"] = (sum(r * c for key, (r, c) in arch.blocks() if groups[key] == "values")
                      - sum(width ** 2 for _, width, readers, writers in arch.hidden_gauges()
                            if set(readers) | set(writers) <= attention))
    # the groups of other components (a feed-forward block): their entries, less the component's own tangents
    shapes = dict(arch.blocks())
    for i, d_in, component in arch.components():
        own = component.tangents(i, d_in)
        for key, group in component.block_groups(i, d_in).items():
            if group not in dims:
                dims[group] = 0
            if not group.startswith("scores:") and group != "values":
                dims[group] += shapes[key][0] * shapes[key][1]
        for group in {g for g in component.block_groups(i, d_in).values()
                      if not g.startswith("scores:") and g != "values"}:
            keys = {k for k, g in component.block_groups(i, d_in).items() if g == group}
            dims[group] -= sum(1 for t in own if set(t.terms) <= keys)
    return dims


def _bank_size(arch: Architecture, upper: int, on_curve: bool) -> int:
    """A bank just big enough: rows >= the upper bound, and on a curve one input per
    direction of the largest block at its leading order."""
    d_out, t = arch.widths[-1], arch.tokens
    per_input = d_out * max(1, t - 1)  # each input adds about d_l (t - 1) directions at a generic point
    size = math.ceil(upper / per_input) + 1
    if on_curve:
        dims = effective_block_dimensions(arch)
        scores = max((v for k, v in dims.items() if k != "values"), default=0)
        size = max(size, scores + 1, math.ceil(dims["values"] / d_out) + 1)
    return max(1, size)
