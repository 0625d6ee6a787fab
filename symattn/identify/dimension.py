"""The dimension of the function space: certified lower bound, upper bound, estimate, and HMK's Figure 3."""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass

import numpy as np

from ..adaptive import DEEPEN, GROW_BANK, NEW_POINT, Growth, Step, adapt
from ..curves import Curve, collapse
from ..effective import (
    effective_block_dimensions,
)
from .._format import FormattedResult, cell_text, latex_array, latex_tabular, markdown_method, markdown_table
from ..errors import DomainError, SymattnError
from ..limits import MAX_BANK
from ..jacobian import (
    all_directions,
    check_prime,
    field_note,
    field_primes,
    gauge_slice,
    random_bank,
    random_point,
    random_real_point,
)
from ..model import Architecture
from .._cluster import check_workers, is_client, uses_dask
from ..limits import progress_bar
from .common import (
    DIMENSION_PRIME, MAX_TRUNCATION, _POINT, DimensionPlan, _check_arch, _check_curve, _check_estimate,
    _check_exact_taylor, _check_seed, _expected_dimension, _is_polynomial_arch,
    _require_dimension_memory, _upper_bound, compressed_jacobian, dimension_group, input_groups,
    integer_score_curve, integer_score_point, integer_score_refusal, series_rank,
)

__all__ = ["DimensionResult", "DimensionRow", "DimensionTable", "dimension_table", "function_space_dimension"]


@dataclass(frozen=True)
class DimensionResult(FormattedResult):
    """Bounds for the dimension of the function space ``{F_theta}`` (the neuromanifold).

    Attributes
    ----------
    lower : int
        Certified lower bound: an exact rank over GF(p) (see ``method``).
    upper : int
        Upper bound (``upper_reason``).
    certified : bool
        ``lower == upper``: the dimension is proved.
    estimate : int or None
        Numerical rank at a random real point (``estimate_method``); an
        estimate, not a bound.
    expected : int or None
        HMK's formula ``l a (2d - a) + d^2`` (``- l`` for lightning) for
        constant widths and ranks.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> result = function_space_dimension(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> result.lower, result.upper, result.certified, result.expected, result.params
    (7, 7, True, 7, 8)
    >>> print(result)
    certified lower bound   7
    upper bound             7
    certified               yes
    estimate                -
    formula                 7
    """

    lower: int
    upper: int
    certified: bool
    estimate: int | None
    expected: int | None
    params: int
    route: str
    prime: int
    seed: int
    bank: int
    truncation: int
    exponents: dict
    attempts: int
    seconds: float
    upper_reason: str
    method: str
    estimate_method: str
    estimate_gap: float | None = None

    def to_json(self) -> dict:
        return {
            "lower": self.lower, "upper": self.upper, "certified": self.certified,
            "estimate": self.estimate, "expected": self.expected, "params": self.params,
            "route": self.route, "prime": self.prime, "seed": self.seed, "bank": self.bank,
            "truncation": self.truncation, "exponents": {str(e): m for e, m in self.exponents.items()},
            "attempts": self.attempts, "seconds": round(self.seconds, 4),
            "upper_reason": self.upper_reason, "method": self.method,
            "estimate_method": self.estimate_method, "estimate_gap": self.estimate_gap,
        }

    def _rows(self):
        return [
            ("certified lower bound", self.lower),
            ("upper bound", self.upper),
            ("certified", cell_text(self.certified)),
            ("estimate", "-" if self.estimate is None else self.estimate),
            ("formula", "-" if self.expected is None else self.expected),
        ]

    def to_markdown(self) -> str:
        lines = [markdown_table(("dimension of the function space", "value"), self._rows(), align="lr")]
        lines += ["", markdown_method(self.method, "lower bound"), markdown_method(self.upper_reason, "upper bound"),
                  markdown_method(self.estimate_method, "estimate")]
        return "\n".join(lines)

    def _latex_body(self) -> str:
        return latex_tabular(self._rows(), "lr")

    def _latex_math(self) -> str:
        return latex_array(["quantity", "value"], self._rows())

    def __str__(self) -> str:
        return "\n".join(f"{name:<24}{value}" for name, value in self._rows())


def _estimate_bank_size(arch: Architecture) -> int:
    """Inputs for the numerical estimate at a generic point.

    Each input shows the combined value map through ``d_l t`` outputs, but the
    scores only through their column-normalized pattern: about ``t (t - 1)``
    new directions per input (measured: 6 per input for ``t = 3``).
    """
    t = arch.tokens
    if not arch.is_plain:
        # no effective blocks derived for the variants: enough rows for twice the symmetry-orbit bound
        return 2 * math.ceil(_upper_bound(arch)[0] / (arch.widths[-1] * t)) + 2
    dims = effective_block_dimensions(arch)
    scores = sum(v for k, v in dims.items() if k != "values")
    return math.ceil(dims["values"] / (arch.widths[-1] * t)) + math.ceil(scores / max(1, t * (t - 1))) + 2


def _numeric_estimate(arch: Architecture, upper: int, seed: int, base, dps: int):
    """``(rank, method, gap)``: numerical rank of the native Jacobian at a random real point."""
    if base is None:
        return None, "not computed", None
    if any(n.is_generic for n in arch.normalizers):
        return None, "not computed: a generic normalizer has no numerical values", None
    from ..numeric import numeric_jacobian, singular_values

    size = _estimate_bank_size(arch)
    # decimal strings, read exactly: the float64 and mpmath Jacobians are at the same point
    flat, bank = random_real_point(arch, seed, size, stream="estimate point", width_scaled=True, decimals=4)
    try:
        J = numeric_jacobian(arch, flat, bank, eps=1, base=base, dps=dps)
    except (DomainError, ZeroDivisionError, OverflowError) as err:
        return None, f"not computed: {err}", None
    if base == "mpmath" and arch.param_count <= 40:
        sigmas = [float(s) for s in singular_values(J, "mpmath", dps)]
        tolerance, svd = 10.0 ** (-dps // 2), f"mpmath singular values ({dps} digits)"
    else:
        sigmas = singular_values(np.array(J, dtype=np.float64))
        tolerance = 1e-9
        svd = "float64 singular values" + (" of the mpmath Jacobian rounded to float64" if base == "mpmath" else "")
    top = sigmas[0] if sigmas and sigmas[0] > 0 else 1.0
    rank = sum(1 for s in sigmas if s > tolerance * top)
    below = sigmas[rank] / top if rank < len(sigmas) else 0.0
    gap = (sigmas[rank - 1] / top) / below if rank and below > 0 else math.inf
    method = (f"numerical rank (sigma_j > {tolerance:.0e} sigma_1) of the native Jacobian by "
              f"forward-mode {base}{f' ({dps} digits)' if base == 'mpmath' else ''} at a random real point "
              f"(eps = 1), {size} random inputs; {svd}; smallest kept / largest dropped singular value "
              f"ratio {gap:.1e}")
    return rank, method, (None if math.isinf(gap) else float(gap))


def function_space_dimension(arch: Architecture, curve: Curve | None = None, seed: int = 0,
                             estimate=None, dps: int = 30, prime: int = DIMENSION_PRIME,
                             max_attempts: int = 4, max_memory=None, scheduler=None, workers: int | None = None,
                             inputs_per_task: int | None = None, progress: bool = False,
                             route: str | None = None) -> DimensionResult:
    """Certified lower bound, upper bound and an estimate of the dimension of the function space.

    * **Lower bound** (certified): when every normalizer is a polynomial
      (lightning included), the exact rank over GF(p) of the native Jacobian
      on a bank at a random point.  When layer 1's normalizer is
      ``C e^{a x}`` with rational ``a`` (softmax) and no curve is given, the
      *integer-score route*: layer 1's queries, keys and the inputs are small
      integers, so every layer-1 score is an integer ``m`` and
      ``s(m)/s(0) = e^(a m)``, a power of the transcendental ``e^(1/v)``,
      which is sent to a random residue (a ring homomorphism); the later
      layers' keys collapse, ``K_i = eps Kt_i``, and the rank is taken over
      ``GF(p)((eps))`` below ``eps^2`` for two layers (``eps^1``, no curve,
      for one).  Otherwise the rank over ``GF(p)((eps))``
      of the Jacobian series ``J(eps)`` along ``curve`` (collapse by
      default), resolved below a truncation just past the deepest contact
      order.  Each is the rank of a real Jacobian of ``F`` at some point,
      hence at most the dimension: a lower bound whatever the point.  Only
      the gauge slice (:func:`gauge_slice`) is differentiated, and rows are
      compressed by a random GF(p) combination first; if the rank falls
      short, a new point, a larger bank and a deeper truncation are tried.
      The compressed Jacobian ``R J`` is built a group of inputs at a time
      (``R J = sum_g R_g J_g``, with ``R_g`` drawn per input), so memory
      holds ``R J`` and one group's Jacobian, not the bank's; the groups can
      run on Dask workers (``scheduler``, ``workers``) with the same result.
    * **Upper bound**: the dimension of the effective parameters, minus one
      scaling per lightning layer.
    * **Estimate**, only when asked for: the numerical rank at a random real
      point (``estimate`` ``"float64"`` or ``"mpmath"``; the default ``None``
      gives the certified result alone).

    Parameters
    ----------
    arch : Architecture
    curve : Curve, optional
        The curve of the series route (collapse by default); ignored for
        polynomial normalizers.
    seed : int
    estimate : {None, "float64", "mpmath"}
        A numerical estimate beside the certified bounds (default ``None``: none).
    dps : int
        Digits of the mpmath estimate.
    prime : int
        Prime of the exact rank.
    max_attempts : int
    max_memory : int or str, optional
        Memory limit (e.g. ``"16G"``; default ``$SYMATTN_MAX_MEMORY`` or half the
        machine).  The first Jacobian is estimated before it is computed, and so
        is each larger one; over the limit, or with series deeper than
        ``MAX_TRUNCATION``, a ResourceLimitError says which sizes fit.  The
        groups of inputs are as large as fit in it.
    scheduler : str or distributed.Client, optional
        Compute the groups' ``R_g J_g`` on Dask workers: the address of a
        scheduler (``tcp://host:8786``) or a client; the sum and the Smith form
        stay here.  Default: here, in this process (or a local cluster when
        ``workers`` is given).
    workers : int, optional
        Worker processes of a Dask ``LocalCluster`` started for this
        computation (when no ``scheduler`` is given).
    inputs_per_task : int, optional
        Bank inputs per group here, or per Dask task (default: here the most
        that fit in memory; with Dask half of each worker's share of the bank,
        so that a lost worker costs little, each task in groups that fit).
        The result does not depend on it.
    progress : bool
        A bar over the bank's inputs (on a terminal).
    route : {None, "integer scores", "curve"}
        ``None`` (default): the integer-score route where it applies (then the
        curve route if it falls short of the upper bound), else the curve
        route.  ``"curve"``: the curve route only (the route of
        :func:`symattn.certificates.dimension_certificate`).

    Returns
    -------
    DimensionResult

    Examples
    --------
    >>> result = function_space_dimension(Architecture.uniform(layers=2, width=3, rank=2), estimate=None)
    >>> result.lower, result.upper, result.certified, result.expected
    (25, 25, True, 25)
    >>> result.route
    'integer scores at layer 1, series along key collapse K_i = eps Kt_i at layers [2]'
    >>> function_space_dimension(Architecture.uniform(layers=2, width=3, rank=2), route="curve").route
    'series along simultaneous query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i (layers 1..2)'
    >>> lightning = Architecture.uniform(layers=2, width=3, rank=2, normalizer="lightning")
    >>> function_space_dimension(lightning, estimate=None).lower
    23
    """
    started = time.perf_counter()
    arch = _check_arch(arch)
    seed = _check_seed(seed)
    estimate = _check_estimate(estimate)
    prime = check_prime(prime)
    workers = check_workers(workers)
    inputs_per_task = _check_inputs_per_task(inputs_per_task)
    route = _check_route(arch, curve, route, prime)
    distributed = uses_dask(scheduler, workers)
    from ..limits import memory_limit_set

    with memory_limit_set(max_memory):
        if not _is_polynomial_arch(arch):
            _check_exact_taylor(arch)
        # the route's own plan: no curve is the integer-score route's where it applies
        _require_dimension_memory(arch, collapse() if route == "curve" and curve is None else curve, distributed)
        if not distributed:
            return _function_space_dimension(arch, curve, seed, estimate, dps, prime, max_attempts, started,
                                             inputs_per_task=inputs_per_task, progress=progress, route=route)
        from .._cluster import task_runner

        with task_runner(scheduler, workers, "symattn-dimension") as runner:
            return _function_space_dimension(arch, curve, seed, estimate, dps, prime, max_attempts, started,
                                             inputs_per_task=inputs_per_task, progress=progress, runner=runner,
                                             route=route)


def _check_route(arch: Architecture, curve, route, prime: int = DIMENSION_PRIME) -> str:
    """``"integer scores"`` or ``"curve"``: the route asked for, or the one that applies."""
    refusal = integer_score_refusal(arch, curve, prime)
    if route is None:
        return "curve" if refusal else "integer scores"
    if route not in ("integer scores", "curve"):
        raise SymattnError(f"route must be None, 'integer scores' or 'curve', got {route!r}")
    if route == "integer scores" and refusal:
        raise SymattnError(f"the integer-score route does not apply: {refusal}; route None takes the curve "
                           "route there")
    return route


def _integer_score_method(arch, curve, prime, truncation, result, columns, bank) -> str:
    rate = arch.normalizers[0].exponential_rate
    base = "e" if rate.q == 1 else f"e^(1/{rate.q})"
    power = "m" if rate.p == 1 else f"{rate.p} m"
    where = ("the native Jacobian at that point" if curve is _POINT else
             f"the Jacobian series J(eps) along {curve.describe(arch.layers)}, resolved below eps^{truncation} "
             f"(Smith exponents {dict(result.exponents)})")
    return (f"rank over GF({prime})" + ("" if curve is _POINT else "((eps))") + f" of {where}, {columns}, "
            f"{bank} random inputs, with layer 1's queries, keys and the inputs small integers: every layer-1 "
            f"score is an integer m and {arch.normalizers[0].name} gives s(m)/s(0) = {base}^({power}), "
            f"{base} transcendental (Hermite, Lindemann), so sending it to a random residue is a ring "
            "homomorphism and a nonzero minor mod p" + ("" if curve is _POINT else " and eps^N")
            + " is a nonzero minor of the real Jacobian" + ("" if curve is _POINT else " at points of the curve")
            + "; rows compressed by a random GF(p) combination: a lower bound for the dimension")


def _check_inputs_per_task(value) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
        raise SymattnError(f"inputs_per_task must be a positive integer (bank inputs per group), got {value!r}")
    return None if value is None else int(value)


def _function_space_dimension(arch, curve, seed, estimate, dps, prime, max_attempts, started, inputs_per_task=None,
                              progress=False, runner=None, *, route: str) -> DimensionResult:
    if route == "integer scores":
        result = _function_space_dimension(arch, curve, seed, estimate, dps, prime, max_attempts, started,
                                           inputs_per_task, progress, runner, route="integer scores only")
        if result.certified:
            return result
        # short of the upper bound (an unlucky point every attempt): the curve route, the better bound kept
        fallback = _function_space_dimension(arch, curve, seed, estimate, dps, prime, max_attempts, started,
                                             inputs_per_task, progress, runner, route="curve")
        best = max(result, fallback, key=lambda r: r.lower)
        return _replace(best, method=best.method + f"; the integer-score route reached {result.lower}, the curve "
                        f"route {fallback.lower}", seconds=time.perf_counter() - started)
    integer = route == "integer scores only"
    prime = field_primes(arch, (prime,))[0]  # algebraic Taylor coefficients: a prime with a root of their field
    upper, upper_reason = _upper_bound(arch)
    polynomial = _is_polynomial_arch(arch)
    if polynomial:
        route_curve = _POINT
        route = "random point"
    elif integer:
        _check_exact_taylor(arch)
        route_curve = integer_score_curve(arch)
        route = "integer scores at layer 1" + ("" if route_curve is _POINT else
                                               ", series along " + route_curve.describe(arch.layers))
    else:
        _check_exact_taylor(arch)
        route_curve = _check_curve(arch, curve)
        route = "series along " + route_curve.describe(arch.layers)
    # native exponents: a collapsed block's native columns are its curve columns divided by eps
    # no curve: the integer-score route's plan (it applies: the route was checked at this prime)
    plan = DimensionPlan.choose(arch, None if polynomial or integer else route_curve, p=prime)
    slice_directions = gauge_slice(arch)

    ranks: list = []  # the rank of each run so far
    groups: dict = {}  # the inputs per group of each run, by its step

    def run(step):
        # the last attempt differentiates every native parameter, in case the slice is unlucky
        unlucky_slice = step.attempt == max_attempts - 1 and ranks and max(ranks) < upper
        directions = all_directions(arch) if unlucky_slice else slice_directions
        if integer:
            point, coefficient_values, bank = integer_score_point(arch, prime, seed + step.attempt, step.bank)
        else:
            point, coefficient_values = random_point(arch, prime, seed + step.attempt)
            bank = random_bank(arch, step.bank, prime, seed + step.attempt)
        if runner is None:  # here: one part per group
            group = task = dimension_group(arch, step.bank, step.truncation, directions, inputs_per_task)
        else:  # each task sums its own groups: few parts travel
            task = inputs_per_task or runner.inputs_per_task(step.bank)
            group = min(task, dimension_group(arch, step.bank, step.truncation, directions, where="worker"))
        groups[step] = (group, task)
        try:
            with progress_bar(progress, total=step.bank, desc="dimension", unit="input") as bar:
                compressed = compressed_jacobian(arch, route_curve, bank, point, prime,
                                                 step.truncation, coefficient_values, directions,
                                                 seed + step.attempt, group=group,
                                                 parts=None if runner is None else runner.parts,
                                                 on_inputs=bar.update, task_inputs=task)
        except ZeroDivisionError:  # a column of s(A) summed to 0 mod p at this point: draw another
            return None
        # the Smith form's pivots: the rank so far, against the upper bound
        with progress_bar(progress, total=min(upper, compressed.shape[1]), desc="dimension: rank so far",
                          unit="pivot") as bar:
            result = series_rank(compressed, prime, progress=bar.update)
        del compressed
        ranks.append(result.rank)
        return result, directions[1]

    def decide(outcome, step, history):
        if outcome is None:
            return [NEW_POINT]
        if max(ranks) >= upper:
            return []
        return [(NEW_POINT, GROW_BANK, DEEPEN)]

    growth = Growth(max_bank=MAX_BANK, max_truncation=None if polynomial or route_curve is _POINT else MAX_TRUNCATION,
                    max_runs=max_attempts,
                    deepen=lambda truncation: truncation + max(2, truncation // 2))
    adapted = adapt(run, Step(plan.bank, plan.truncation), decide, growth)
    runs = [(step, outcome) for step, outcome in zip(adapted.steps, adapted.outcomes) if outcome is not None]
    if not runs:
        raise DomainError(f"every point tried had a column of s(A) summing to 0 mod {prime}; try another seed")
    # the first run reaching the best rank
    used_step, (result, used_directions) = max(runs, key=lambda item: (item[1][0].rank, -item[0].attempt))
    best_rank = result.rank
    attempts = adapted.runs
    used_bank, used_truncation, used_seed = used_step.bank, used_step.truncation, seed + used_step.attempt
    lower = best_rank
    if lower > upper:  # cannot happen unless the upper bound is wrong: say so loudly
        upper_reason += f" -- CONTRADICTED: an exact rank of {lower} exceeds it"
    columns = (f"gauge slice of {used_directions} directions" if used_directions == slice_directions[1]
               else f"all {used_directions} native parameters")
    if polynomial:
        method = (f"exact rank over GF({prime}) of the native Jacobian (forward-mode jets, {columns}) on "
                  f"{used_bank} random inputs at a random point: the rank of a real Jacobian at a rational "
                  "point, a lower bound for the dimension")
    elif integer:
        method = _integer_score_method(arch, route_curve, prime, used_truncation, result, columns, used_bank)
    else:
        method = (f"rank over GF({prime})((eps)) of the Jacobian series J(eps) along "
                  f"{route_curve.describe(arch.layers)}, resolved below eps^{used_truncation} (Smith exponents "
                  f"{dict(result.exponents)}), {columns}, {used_bank} random inputs, rows compressed by a random "
                  "GF(p) combination: a nonzero minor mod (p, eps^N) is a nonzero analytic minor, so the rank "
                  "of a real Jacobian at points of the curve, a lower bound for the dimension")
    if plan.narrow:
        method += f"; a small bank and a deeper series to fit in memory ({plan.note})"
    group, task = groups.get(used_step, (used_bank, used_bank))
    pieces, tasks = len(input_groups(used_bank, group)), len(input_groups(used_bank, task))
    if runner is not None:
        method += (f"; R J summed from {tasks} task{'s' * (tasks != 1)} of at most {task} inputs"
                   + (f" (in groups of at most {group})" if group < task else "") + f", computed by {runner.where}")
    elif pieces > 1:
        method += (f"; R J summed from {pieces} groups of at most {group} inputs"
                   + ("" if inputs_per_task else ", to fit in memory"))
    method += f"; adaptive steps: {adapted.describe()}"
    if field_note(arch, (prime,)):
        method += "; " + field_note(arch, (prime,))
    if any(n.is_generic for n in arch.normalizers):
        method += ("; the generic Taylor coefficients c_j are specialized at random residues, so the bound "
                   "holds for generic Taylor data")
    value, estimate_method, gap = _numeric_estimate(arch, upper, seed, estimate, dps)
    return DimensionResult(
        lower=int(lower), upper=int(upper), certified=bool(lower == upper), estimate=value,
        expected=_expected_dimension(arch), params=arch.param_count, route=route, prime=int(prime),
        seed=int(used_seed), bank=int(used_bank), truncation=int(used_truncation),
        exponents=dict(result.exponents), attempts=attempts, seconds=time.perf_counter() - started,
        upper_reason=upper_reason, method=method, estimate_method=estimate_method, estimate_gap=gap,
    )


# ---------------------------------------------------------------------------------------
# HMK Figure 3
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DimensionRow:
    """One width of :class:`DimensionTable`.

    Examples
    --------
    >>> row = dimension_table(layers=1, widths=[1, 2], tokens=2).rows[1]
    >>> row.width, row.expected, row.lower, row.upper, row.certified
    (2, 8, 8, 8, True)
    >>> row.to_json()
    {'width': 2, 'expected': 8, 'lower': 8, 'upper': 8, 'certified': True, 'estimate': None, 'widths': [2, 2]}
    """

    width: int
    expected: int | None
    lower: int
    upper: int
    certified: bool
    estimate: int | None
    seconds: float
    widths: tuple = ()  # d_0, ..., d_l of the row's network (``width`` is d_0)

    def to_json(self) -> dict:
        return {"width": self.width, "expected": self.expected, "lower": self.lower, "upper": self.upper,
                "certified": self.certified, "estimate": self.estimate, "widths": list(self.widths)}

    def width_text(self) -> str:
        """``d`` when every width is ``d``, else every width ``d_0,...,d_l``.

        Examples
        --------
        >>> DimensionRow(3, None, 19, 19, True, None, 0.0, (3, 2, 3)).width_text()
        '3,2,3'
        """
        return str(self.width) if len(set(self.widths)) <= 1 else ",".join(map(str, self.widths))


@dataclass(frozen=True)
class DimensionTable(FormattedResult):
    """HMK's Figure 3: the dimension of the function space for several widths.

    ``rows`` hold, per width, the formula, the certified lower bound, the
    upper bound and the estimate; ``results`` the full :class:`DimensionResult`.

    Examples
    --------
    >>> table = dimension_table(layers=1, widths=[1, 2], tokens=2)
    >>> [(row.width, row.expected, row.lower, row.certified) for row in table.rows]
    [(1, 2, 2, True), (2, 8, 8, True)]
    >>> table.all_certified, table.results[1].upper
    (True, 8)
    >>> table.description
    '1 layer(s), score ranks [2], 2 tokens, normalizer softmax; widths d_0 = ... = d_l = d for d in [1, 2]'
    """

    rows: tuple
    results: tuple
    description: str
    seconds: float
    exact_seconds: float

    @property
    def all_certified(self) -> bool:
        return all(row.certified for row in self.rows)

    def to_json(self) -> dict:
        """``{"rows": [{"width", "expected", "lower", "upper", "certified", "estimate"}, ...], ...}``."""
        return {
            "rows": [row.to_json() for row in self.rows],
            "architecture": self.description,
            "all_certified": self.all_certified,
            "method": self.results[0].method if self.results else "",
            "estimate_method": self.results[0].estimate_method if self.results else "",
            "exact_seconds": round(self.exact_seconds, 4),
        }

    def _cells(self, row):
        return (row.width_text(), "-" if row.expected is None else row.expected, row.lower, row.upper,
                "yes" if row.certified else "no", "-" if row.estimate is None else row.estimate)

    _HEADER = ("width d", "formula", "lower (certified)", "upper", "certified", "estimate")

    def to_markdown(self) -> str:
        lines = [markdown_table(self._HEADER, [self._cells(row) for row in self.rows], align="r" * len(self._HEADER))]
        lines += ["", f"- {self.description}",
                  f"- all certified: {'yes' if self.all_certified else 'no'} (exact part {self.exact_seconds:.2f} s, "
                  f"total {self.seconds:.2f} s)"]
        if self.results:
            lines += [f"- lower bound (e.g. the last width): {self.results[-1].method}",
                      f"- upper bound: {self.results[-1].upper_reason}",
                      f"- estimate: {self.results[-1].estimate_method}"]
        return "\n".join(lines)

    def _latex_body(self) -> str:
        return latex_tabular([self._cells(row) for row in self.rows], "rrrrlr",
                             header=("$d$", "formula", "lower", "upper", "certified", "estimate"))

    def _latex_math(self) -> str:
        return latex_array(self._HEADER, [self._cells(row) for row in self.rows])

    def __str__(self) -> str:
        lines = ["  ".join(f"{h:>17}" for h in self._HEADER)]
        lines += ["  ".join(f"{str(c):>17}" for c in self._cells(row)) for row in self.rows]
        return "\n".join(lines)


def dimension_table(layers: int = 2, widths=range(3, 11), rank: int = 2, tokens: int = 3,
                    normalizer="softmax", seed: int = 0, estimate=None, dps: int = 30,
                    progress: bool = False, architectures=None, max_memory=None, scheduler=None,
                    workers: int | None = None, route: str | None = None) -> DimensionTable:
    """HMK's Figure 3: the certified dimension for each width (default ``l = 2, t = 3, a = 2, d = 3..10``).

    Parameters
    ----------
    layers, widths, rank, tokens, normalizer
        The networks ``Architecture.uniform(layers, d, rank, tokens, normalizer)`` for ``d`` in ``widths``.
    architectures : list of Architecture, optional
        Use these instead (one row each; the row's width is ``d_0``).
    estimate : {None, "float64", "mpmath"}
        The estimate column (the default ``None`` skips it: only the certified part is computed).
    progress : bool
        A bar over the widths with the time left (on a terminal).
    max_memory : int or str, optional
        Memory limit; every width is checked before the first is computed
        (see :func:`function_space_dimension`).
    scheduler, workers
        Compute each width's groups of inputs on Dask workers (see
        :func:`function_space_dimension`); a local cluster of ``workers`` is
        started once for all the widths.
    route : {None, "integer scores", "curve"}
        The route of every width's lower bound (see :func:`function_space_dimension`).

    Examples
    --------
    >>> table = dimension_table(widths=[3, 4], estimate=None)
    >>> [(r.width, r.expected, r.lower, r.upper, r.certified) for r in table.rows]
    [(3, 25, 25, 25, True), (4, 40, 40, 40, True)]
    """
    started = time.perf_counter()
    estimate = _check_estimate(estimate)
    if architectures is None:
        widths = list(widths)
        if not widths:
            raise SymattnError("give at least one width")
        architectures = [Architecture.uniform(layers=layers, width=d, rank=rank, tokens=tokens,
                                              normalizer=normalizer) for d in widths]
    architectures = [_check_arch(a) for a in architectures]
    workers = check_workers(workers)
    distributed = uses_dask(scheduler, workers)
    from ..limits import memory_limit_set

    with memory_limit_set(max_memory):
        for arch in architectures:  # the largest width last: refuse it before the first runs for minutes
            if not _is_polynomial_arch(arch):
                _check_exact_taylor(arch)
            _require_dimension_memory(arch, collapse() if route == "curve" else None, distributed)
    with contextlib.ExitStack() as stack:
        if distributed and not is_client(scheduler):  # one local cluster or connection for every width
            from .._cluster import open_client

            scheduler = stack.enter_context(open_client(scheduler, workers))
        return _dimension_rows(architectures, seed, estimate, dps, progress, max_memory, scheduler, started, route)


def _dimension_rows(architectures, seed, estimate, dps, progress, max_memory, scheduler, started,
                    route=None) -> DimensionTable:
    from ..limits import memory_limit_set

    bar = progress_bar(progress and len(architectures) > 1, total=len(architectures), desc="dimension",
                       unit="width")
    rows, results, exact_seconds = [], [], 0.0
    try:
        for arch in architectures:
            bar.set_postfix_str(f"d = {arch.widths[0]}")
            with memory_limit_set(max_memory):
                result = function_space_dimension(arch, seed=seed, estimate=None, scheduler=scheduler,
                                                  progress=progress, route=route)
            exact_seconds += result.seconds
            if estimate is not None:
                value, method, gap = _numeric_estimate(arch, result.upper, seed, estimate, dps)
                result = _replace(result, estimate=value, estimate_method=method, estimate_gap=gap)
            results.append(result)
            rows.append(DimensionRow(arch.widths[0], result.expected, result.lower, result.upper,
                                     result.certified, result.estimate, result.seconds, tuple(arch.widths)))
            bar.update()
    finally:
        bar.close()
    return DimensionTable(tuple(rows), tuple(results), _describe_networks(architectures),
                          time.perf_counter() - started, exact_seconds)


def _describe_networks(architectures) -> str:
    """The networks of a dimension table in words: every width and score rank per layer, in order.

    One network is described whole; several that differ only in their
    widths are described once, with the widths of each.

    Examples
    --------
    >>> _describe_networks([Architecture([3, 2, 3], [2, 1])])
    '2 layer(s), widths [3, 2, 3], score ranks [2, 1], 3 tokens, normalizer softmax'
    >>> _describe_networks([Architecture.uniform(layers=1, width=d, rank=2, tokens=2) for d in (1, 2)])
    '1 layer(s), score ranks [2], 2 tokens, normalizer softmax; widths d_0 = ... = d_l = d for d in [1, 2]'
    """
    architectures = list(architectures)
    if len(architectures) == 1:
        return architectures[0].describe()

    def without_widths(arch):
        return arch.describe().replace(f"widths {list(arch.widths)}, ", "", 1)

    common = without_widths(architectures[0])
    if any(without_widths(arch) != common for arch in architectures):
        return "; ".join(arch.describe() for arch in architectures)
    if all(len(set(arch.widths)) == 1 for arch in architectures):
        return f"{common}; widths d_0 = ... = d_l = d for d in {[arch.widths[0] for arch in architectures]}"
    return f"{common}; widths " + ", ".join(str(list(arch.widths)) for arch in architectures)


def _replace(result, **changes):
    from dataclasses import replace

    return replace(result, **changes)
