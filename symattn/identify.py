"""Identification: the dimension of the function space, the generic fiber, and identification orders.

Three questions about the map ``theta -> F_theta`` (MATH.md, sections 2 and 4):

* **How large is the function space?**  :func:`function_space_dimension`
  gives a *certified lower bound* (an exact rank over GF(p): of the native
  Jacobian at a random point when every normalizer is a polynomial, of the
  Jacobian series ``J(eps)`` over ``GF(p)((eps))`` along a curve otherwise),
  an *upper bound* (the dimension of the effective parameters, minus one
  scaling per lightning layer), whether they meet, and an mpmath estimate.
* **What is the generic fiber?**  :func:`generic_fiber`: the kernel of the
  native Jacobian is the tangent space of the gauge orbit (checked exactly
  over ``GF(p)((eps))``), and :func:`sign_flip_checks` verifies every sign
  flip of even layers and finds a witness input for every other flip.
* **At which Taylor order does the function see each block?**
  :func:`identification_orders` along the collapse curve
  ``Q_i = eps Qt_i, K_i = eps Kt_i``: the least ``n`` with ``F_0..F_n``
  depending on the block, with the sharpness certificate of MATH.md
  section 4, and the ranks of the jets ``(F_0, ..., F_n)``.

:func:`identify` runs all of them; :func:`dimension_table` is HMK's Figure 3.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.identify import identify
>>> report = identify(Architecture.uniform(layers=2, width=2, rank=1, tokens=3), estimate=None)
>>> report.dimension.lower, report.dimension.upper, report.dimension.certified
(10, 10, True)
>>> [(o.layer, o.order, o.sharp) for o in report.orders], report.values.order
([(1, 2, True), (2, 6, True)], 0)
>>> report.jet_ranks
(4, 4, 7, 7, 7, 7, 10)
>>> report.fiber.kernel_is_symmetry_orbit
True
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .adaptive import DEEPEN, GROW_BANK, NEW_POINT, Growth, Step, adapt, schwartz_zippel_bound
from .algebra.domains import RationalDomain
from .algebra.exactseries import PolynomialSeriesDomain
from .algebra.linalg import EchelonBasis, series_matmul
from .algebra.modseries import ModSeriesDomain
from .algebra.valuations import smith_valuations
from .curves import Curve, collapse
from .effective import (
    effective_block_dimensions,
    effective_dimension,
    flip_preserves_output,
    gauge_dimension,
    sign_flip,
    sign_group_order,
)
from ._format import FormattedResult, latex_array, latex_escape, latex_tabular, markdown_table
from .errors import DomainError, SymattnError
from .limits import MAX_BANK
from .jacobian import (
    DEFAULT_PRIMES,
    all_directions,
    block_columns,
    check_prime,
    compress_rows,
    degree_bound,
    gauge_slice,
    gauge_tangent_series,
    generator,
    jacobian_series,
    random_bank,
    random_point,
    random_real_point,
    scaling_tangent_series,
    series_output,
    small_integer_point,
    transcendental_constants,
)
from .model import Architecture, forward, require_architecture, require_seed

__all__ = [
    "identify",
    "orders_memory",
    "IdentificationReport",
    "function_space_dimension",
    "DimensionResult",
    "dimension_table",
    "DimensionTable",
    "DimensionRow",
    "hmk_dimension",
    "identification_orders",
    "OrdersResult",
    "BlockOrder",
    "generic_fiber",
    "FiberResult",
    "sign_flip_checks",
    "SignFlipCheck",
    "series_rank",
    "SeriesRank",
    "gauge_slice",
    "DIMENSION_PRIME",
]

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


def series_rank(M, p: int) -> SeriesRank:
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
    result = smith_valuations(M, p)
    histogram: dict[int, int] = {}
    for exponent in result.exponents:
        histogram[exponent] = histogram.get(exponent, 0) + 1
    return SeriesRank(result.resolved_rank, histogram, result.truncation)


_POINT = Curve("a random point (no curve)")


# ---------------------------------------------------------------------------------------
# the Jacobian along a curve, in chosen directions
# ---------------------------------------------------------------------------------------
def _jacobian(arch, curve, bank, point, p, truncation, coefficient_values=None, directions=None,
              coordinates="native") -> np.ndarray:
    """:func:`symattn.jacobian.jacobian_series`, refused first when it would not fit in memory."""
    chosen, count = all_directions(arch) if directions is None else directions
    _require_jacobian_memory(arch, curve, len(bank), truncation, chosen, count)
    return jacobian_series(arch, curve, bank, point, p, truncation, coefficient_values, (chosen, count),
                           coordinates)


def _directions_per_block(directions: dict) -> dict:
    return {key: int((chosen >= 0).sum()) for key, chosen in directions.items()}


def _dimension_memory(arch: Architecture, curve: Curve | None = None):
    """Memory of the first Jacobian of :func:`function_space_dimension` (gauge slice, before any growth)."""
    from .limits import jet_jacobian_memory

    upper, _ = _upper_bound(arch)
    polynomial = _is_polynomial_arch(arch)
    truncation = 1
    if not polynomial:
        route_curve = _check_curve(arch, curve)
        scaled = _scales_parameters(route_curve, arch.layers)
        truncation = _guess_deepest_order(arch, route_curve) + (0 if scaled else 1)
    directions, count = gauge_slice(arch)
    return jet_jacobian_memory(arch, _bank_size(arch, upper, on_curve=not polynomial), truncation, count,
                               _directions_per_block(directions), computation="the dimension", jacobian_copies=3)


def orders_memory(arch: Architecture, curve: Curve | None = None):
    """Memory of the first Jacobians of :func:`identification_orders` (the second prime's beside the first).

    What the memory guard compares with the limit before the computation starts.

    Examples
    --------
    >>> estimate = orders_memory(Architecture.uniform(layers=2))
    >>> estimate.series_order, estimate.bytes < 2**20
    (7, True)
    """
    from .limits import jet_jacobian_memory

    curve = _check_curve(arch, curve)
    upper, _ = _upper_bound(arch)
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
    from .limits import check_memory

    check_memory(estimate_for(arch, curve), arch=arch, estimate_for=lambda resized: estimate_for(resized, curve),
                 max_series_order=max_series_order)


def _require_jacobian_memory(arch: Architecture, curve: Curve, bank: int, truncation: int, directions: dict,
                             count: int) -> None:
    """Refuse a jet Jacobian that would not fit in memory, before its forward pass allocates anything."""
    from .limits import check_memory, jet_jacobian_memory

    curve = None if curve is _POINT else curve  # the polynomial route: no curve, series of length 1
    estimate = jet_jacobian_memory(arch, bank, truncation, count, _directions_per_block(directions))
    check_memory(estimate, arch=arch, estimate_for=lambda resized: _identify_memory(resized, curve))


def _compress_rows(J, rows: int, p: int, seed: int) -> np.ndarray:
    """``R J`` for a random ``rows x m`` matrix ``R`` over GF(p) (rank can only drop)."""
    return compress_rows(J, p, generator(seed, "dimension rows", J.shape[0]), rows)


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
    return all(n.is_lightning or n.is_polynomial for n in arch.normalizers)


def _check_exact_taylor(arch: Architecture) -> None:
    """Series over GF(p) need rational Taylor coefficients (or generic symbols, or one transcendental constant)."""
    constants = transcendental_constants(arch)
    for n in arch.normalizers:
        if n.is_lightning or n.is_generic:
            continue
        coefficients = n.taylor(8)
        bad = [c for c in coefficients
               if not c.is_Rational and not (len(constants) == 1 and c.has(constants[0])
                                             and not (c.free_symbols or c.atoms(sp.NumberSymbol) - set(constants)))]
        if bad:
            raise DomainError(
                f"normalizer {n.name} has irrational Taylor coefficients ({bad[0]}), so nothing about it "
                "can be computed exactly over GF(p) or Q; use `symattn sensitivity` for numerics, or a "
                "normalizer with rational Taylor data such as exp(x), cosh(x), 1 + x**2")


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


@functools.lru_cache(maxsize=256)
def _effective_dimension_of(widths: tuple, score_ranks: tuple) -> int:
    return effective_dimension(Architecture(widths, score_ranks))


def _effective_dim(arch: Architecture) -> int:
    """:func:`effective_dimension`, computed once per shape (with a bottleneck it is an exact rank)."""
    return _effective_dimension_of(tuple(arch.widths), tuple(arch.score_ranks))


def _lightning_layers(arch: Architecture) -> list[int]:
    return [i for i, n in enumerate(arch.normalizers, start=1) if n.is_lightning]


def _upper_bound(arch: Architecture) -> tuple[int, str]:
    eff = _effective_dim(arch)
    lightning = _lightning_layers(arch)
    if arch.degenerate and not lightning:
        values = effective_block_dimensions(arch)["values"]
        return values, ("one token: every S(A) is the 1 x 1 matrix 1, so F = P X depends on the combined "
                        f"value map only (dimension {values})")
    reason = ("the dimension of the effective parameters (What_1, ..., What_l, P), through which F factors"
              + (" (an exact Jacobian rank at a random integer point: a hidden width is a bottleneck)"
                 if min(arch.widths[1:-1], default=arch.widths[0]) < arch.widths[0] else ""))
    if lightning:
        reason += (f", minus {len(lightning)}: each lightning layer i has the scaling Q_i -> c Q_i, "
                   "V_i -> V_i / c, which acts on the effective parameters with a free orbit and keeps F")
        return eff - len(lightning), reason
    return eff, reason


def _expected_dimension(arch: Architecture) -> int | None:
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
    """The orders MATH.md section 4 claims on the simultaneous collapse curve (common k)."""
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
    dims = dict(effective_block_dimensions(arch))
    for i in range(1, arch.layers + 1):
        m = min(arch.widths[:i])
        r = min(arch.score_ranks[i - 1], m)
        dims[f"scores:{i}"] = r * (2 * m - r)
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


# ---------------------------------------------------------------------------------------
# dimension of the function space
# ---------------------------------------------------------------------------------------
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
    certified               True
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
            ("certified", self.certified),
            ("estimate", "-" if self.estimate is None else self.estimate),
            ("formula", "-" if self.expected is None else self.expected),
        ]

    def to_markdown(self) -> str:
        lines = [markdown_table(("dimension of the function space", "value"), self._rows(), align="lr")]
        lines += ["", f"- lower bound: {self.method}", f"- upper bound: {self.upper_reason}",
                  f"- estimate: {self.estimate_method}"]
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
    dims = effective_block_dimensions(arch)
    t = arch.tokens
    scores = sum(v for k, v in dims.items() if k != "values")
    return math.ceil(dims["values"] / (arch.widths[-1] * t)) + math.ceil(scores / max(1, t * (t - 1))) + 2


def _numeric_estimate(arch: Architecture, upper: int, seed: int, base, dps: int):
    """``(rank, method, gap)``: numerical rank of the native Jacobian at a random real point."""
    if base is None:
        return None, "not computed", None
    if any(n.is_generic for n in arch.normalizers):
        return None, "not computed: a generic normalizer has no numerical values", None
    from .numeric import numeric_jacobian, singular_values

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
                             max_attempts: int = 4, max_memory=None) -> DimensionResult:
    """Certified lower bound, upper bound and an estimate of the dimension of the function space.

    * **Lower bound** (certified): when every normalizer is a polynomial
      (lightning included), the exact rank over GF(p) of the native Jacobian
      on a bank at a random point; otherwise the rank over ``GF(p)((eps))``
      of the Jacobian series ``J(eps)`` along ``curve`` (collapse by
      default), resolved below a truncation just past the deepest contact
      order.  Either is the rank of a real Jacobian of ``F`` at some point,
      hence at most the dimension: a lower bound whatever the point.  Only
      the gauge slice (:func:`gauge_slice`) is differentiated, and rows are
      compressed by a random GF(p) combination first; if the rank falls
      short, a new point, a larger bank and a deeper truncation are tried.
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
        ``MAX_TRUNCATION``, a ResourceLimitError says which sizes fit.

    Returns
    -------
    DimensionResult

    Examples
    --------
    >>> result = function_space_dimension(Architecture.uniform(layers=2, width=3, rank=2), estimate=None)
    >>> result.lower, result.upper, result.certified, result.expected
    (25, 25, True, 25)
    >>> lightning = Architecture.uniform(layers=2, width=3, rank=2, normalizer="lightning")
    >>> function_space_dimension(lightning, estimate=None).lower
    23
    """
    started = time.perf_counter()
    arch = _check_arch(arch)
    seed = _check_seed(seed)
    estimate = _check_estimate(estimate)
    prime = check_prime(prime)
    from .limits import memory_limit_set

    with memory_limit_set(max_memory):
        if not _is_polynomial_arch(arch):
            _check_exact_taylor(arch)
        _require_memory(_dimension_memory, arch, curve, MAX_TRUNCATION)
        return _function_space_dimension(arch, curve, seed, estimate, dps, prime, max_attempts, started)


def _function_space_dimension(arch, curve, seed, estimate, dps, prime, max_attempts, started) -> DimensionResult:
    upper, upper_reason = _upper_bound(arch)
    polynomial = _is_polynomial_arch(arch)
    if polynomial:
        route_curve, truncation = _POINT, 1
        route = "random point"
    else:
        _check_exact_taylor(arch)
        route_curve = _check_curve(arch, curve)
        # native exponents: a collapsed block's native columns are its curve columns divided by eps
        scaled = _scales_parameters(route_curve, arch.layers)
        truncation = _guess_deepest_order(arch, route_curve) + (0 if scaled else 1)
        route = "series along " + route_curve.describe(arch.layers)
    slice_directions = gauge_slice(arch)

    ranks: list = []  # the rank of each run so far

    def run(step):
        # the last attempt differentiates every native parameter, in case the slice is unlucky
        unlucky_slice = step.attempt == max_attempts - 1 and ranks and max(ranks) < upper
        directions = all_directions(arch) if unlucky_slice else slice_directions
        point, coefficient_values = random_point(arch, prime, seed + step.attempt)
        bank = random_bank(arch, step.bank, prime, seed + step.attempt)
        try:
            J = _jacobian(arch, route_curve, bank, point, prime, step.truncation,
                          None if polynomial else coefficient_values, directions=directions)
        except ZeroDivisionError:  # a column of s(A) summed to 0 mod p at this point: draw another
            return None
        result = series_rank(_compress_rows(J, directions[1] + 2, prime, seed + step.attempt), prime)
        ranks.append(result.rank)
        return result, directions[1]

    def decide(outcome, step, history):
        if outcome is None:
            return [NEW_POINT]
        if max(ranks) >= upper:
            return []
        return [(NEW_POINT, GROW_BANK, DEEPEN)]

    growth = Growth(max_bank=MAX_BANK, max_truncation=None if polynomial else MAX_TRUNCATION,
                    max_runs=max_attempts,
                    deepen=lambda truncation: truncation + max(2, truncation // 2))
    adapted = adapt(run, Step(_bank_size(arch, upper, on_curve=not polynomial), truncation), decide, growth)
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
    else:
        method = (f"rank over GF({prime})((eps)) of the Jacobian series J(eps) along "
                  f"{route_curve.describe(arch.layers)}, resolved below eps^{used_truncation} (Smith exponents "
                  f"{dict(result.exponents)}), {columns}, {used_bank} random inputs, rows compressed by a random "
                  "GF(p) combination: a nonzero minor mod (p, eps^N) is a nonzero analytic minor, so the rank "
                  "of a real Jacobian at points of the curve, a lower bound for the dimension")
    method += f"; adaptive steps: {adapted.describe()}"
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
    {'width': 2, 'expected': 8, 'lower': 8, 'upper': 8, 'certified': True, 'estimate': None}
    """

    width: int
    expected: int | None
    lower: int
    upper: int
    certified: bool
    estimate: int | None
    seconds: float

    def to_json(self) -> dict:
        return {"width": self.width, "expected": self.expected, "lower": self.lower, "upper": self.upper,
                "certified": self.certified, "estimate": self.estimate}


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
    '1 layer(s), score ranks [2], 2 tokens, normalizer softmax; widths [1, 2]'
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
        return (row.width, "-" if row.expected is None else row.expected, row.lower, row.upper,
                "yes" if row.certified else "no", "-" if row.estimate is None else row.estimate)

    _HEADER = ("width d", "formula", "lower (certified)", "upper", "certified", "estimate")

    def to_markdown(self) -> str:
        lines = [markdown_table(self._HEADER, [self._cells(row) for row in self.rows], align="r" * len(self._HEADER))]
        lines += ["", f"- {self.description}",
                  f"- all certified: {self.all_certified} (exact part {self.exact_seconds:.2f} s, "
                  f"total {self.seconds:.2f} s)"]
        if self.results:
            lines += [f"- lower bound (e.g. the last width): {self.results[-1].method}",
                      f"- upper bound: {self.results[-1].upper_reason}",
                      f"- {self.results[-1].estimate_method}"]
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
                    progress: bool = False, architectures=None, max_memory=None) -> DimensionTable:
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
    from .limits import memory_limit_set, progress_bar

    with memory_limit_set(max_memory):
        for arch in architectures:  # the largest width last: refuse it before the first runs for minutes
            if not _is_polynomial_arch(arch):
                _check_exact_taylor(arch)
            _require_memory(_dimension_memory, arch, None, MAX_TRUNCATION)
    bar = progress_bar(progress, total=len(architectures), desc="dimension", unit="width")
    rows, results, exact_seconds = [], [], 0.0
    try:
        for arch in architectures:
            bar.set_postfix_str(f"d = {arch.widths[0]}")
            with memory_limit_set(max_memory):
                result = function_space_dimension(arch, seed=seed, estimate=None)
            exact_seconds += result.seconds
            if estimate is not None:
                value, method, gap = _numeric_estimate(arch, result.upper, seed, estimate, dps)
                result = _replace(result, estimate=value, estimate_method=method, estimate_gap=gap)
            results.append(result)
            rows.append(DimensionRow(arch.widths[0], result.expected, result.lower, result.upper,
                                     result.certified, result.estimate, result.seconds))
            bar.update()
    finally:
        bar.close()
    first = architectures[0]
    description = (f"{first.layers} layer(s), score ranks {sorted(set(first.score_ranks))}, {first.tokens} tokens, "
                   f"normalizer {', '.join(sorted({n.name for n in first.normalizers}))}; widths "
                   f"{[a.widths[0] for a in architectures]}")
    return DimensionTable(tuple(rows), tuple(results), description, time.perf_counter() - started,
                          exact_seconds)


def _replace(result, **changes):
    from dataclasses import replace

    return replace(result, **changes)


# ---------------------------------------------------------------------------------------
# identification orders and jet ranks along a curve
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockOrder:
    """The identification order of one block along the curve, and its sharpness certificate.

    Attributes
    ----------
    block : str
        ``"scores:i"`` (the columns of ``Qt_i, Kt_i``) or ``"values"`` (every ``Vt_i``).
    order : int or None
        Least ``n`` with ``dF_n / d(block) != 0`` (``None``: not found below ``truncation``).
    predicted : int or None
        ``2k 3^(i-1)`` for scores, 0 for values (simultaneous collapse, common ``k``).
    vanishing_below : bool
        Condition (a): ``dF_m / d(block) = 0`` for ``m < order`` at the random
        point mod p (true by the definition of ``order`` there), and at a
        second prime and point when ``confirmed``.
    exact_independence : bool or None
        Condition (a) as an exact identity over ``Q[parameters, X, c_j]``
        with a generic normalizer of the same ``k`` and parity (``None``: not checked).
    jet_rank, block_dimension : int
        Condition (b): the rank of ``[C_0; ...; C_order]`` on the block's columns,
        and the dimension of the block's effective parameters that those columns
        move (``effective_block_dimensions(arch)[block]`` without a hidden
        bottleneck; with one, ``What_i`` only moves inside the row space of the
        fixed ``P_{i-1}``).
    sharp : bool
        (a) and (b) hold.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> result = identification_orders(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> scores = result.scores[0]
    >>> scores.block, scores.order, scores.predicted, scores.sharp
    ('scores:1', 2, 2, True)
    >>> scores.jet_rank, scores.block_dimension, scores.exact_independence
    (3, 3, True)
    >>> result.values.block, result.values.order
    ('values', 0)
    """

    block: str
    layer: int | None
    order: int | None
    predicted: int | None
    vanishing_below: bool
    confirmed: bool
    exact_independence: bool | None
    jet_rank: int
    block_dimension: int
    sharp: bool
    note: str

    def to_json(self) -> dict:
        return {"block": self.block, "layer": self.layer, "order": self.order, "predicted": self.predicted,
                "sharp": self.sharp, "vanishing_below": self.vanishing_below, "confirmed": self.confirmed,
                "exact_independence": self.exact_independence, "jet_rank": self.jet_rank,
                "block_dimension": self.block_dimension, "note": self.note}


@dataclass(frozen=True)
class OrdersResult:
    """Identification orders of every block and the ranks of the jets along a curve.

    ``jet_ranks[n]`` is the rank of ``[C_0; ...; C_n]`` (all columns) at the
    random point over GF(p): a certified lower bound for the generic rank of
    the jet ``(F_0, ..., F_n)``, equal to it with probability at least
    ``1 - error_bound``; the last one meets its upper bound (the effective
    dimension) when the jet identifies every effective parameter.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> result = identification_orders(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> [o.order for o in result.scores], result.values.order
    ([2], 0)
    >>> result.jet_ranks, result.effective_dim
    ((4, 4, 7), 7)
    >>> result.all_sharp, result.matches_prediction
    (True, True)
    """

    curve: str
    scores: tuple
    values: BlockOrder
    jet_ranks: tuple
    effective_dim: int
    truncation: int
    bank: int
    primes: tuple
    error_bound: float
    method: str
    jacobian: np.ndarray = field(repr=False, compare=False)
    point: dict = field(repr=False, compare=False)
    coefficient_values: dict = field(repr=False, compare=False)

    @property
    def all_sharp(self) -> bool:
        return all(o.sharp for o in (*self.scores, self.values))

    @property
    def matches_prediction(self) -> bool | None:
        blocks = (*self.scores, self.values)
        if any(o.predicted is None for o in blocks):
            return None
        return all(o.order == o.predicted for o in blocks)


def _block_order(J, columns, truncation) -> int | None:
    for n in range(truncation):
        if J[:, columns, n].any():
            return n
    return None


def _curve_jacobian(arch, curve, p, seed, truncation, bank_size):
    point, coefficient_values = random_point(arch, p, seed)
    bank = random_bank(arch, bank_size, p, seed)
    J = _jacobian(arch, curve, bank, point, p, truncation, coefficient_values, coordinates="curve")
    return J, point, coefficient_values


def identification_orders(arch: Architecture, curve: Curve | None = None, seed: int = 0,
                          primes=DEFAULT_PRIMES, exact_check="auto", bank: int | None = None,
                          max_order: int = MAX_TRUNCATION, max_memory=None) -> OrdersResult:
    """Identification orders of each layer's scores and of the combined value map along ``curve``.

    On the collapse curve parameterized by ``(Qt, Kt, Vt)``, the coefficient
    matrices ``C_n = dF_n / d(Qt, Kt, Vt)`` are the coefficients of the
    Jacobian in curve coordinates (the native ``Q_i``-columns times ``eps``).
    A block's order is the least ``n`` with ``C_n`` nonzero on its columns;
    it is **sharp** (MATH.md section 4) when (a) ``C_m`` vanishes on the block
    for ``m < n`` and (b) ``rank [C_0; ...; C_n]`` on the block's columns
    equals the block's effective dimension.  The jet ranks are the ranks of
    ``[C_0; ...; C_n]`` on all columns, ``n = 0..N``.

    Exactness: ranks are exact over GF(p) at a random point, so a rank equal
    to its upper bound (the block's effective dimension) is certified; a
    nonzero ``C_n`` is certified (so each order is a certified upper bound);
    the vanishing below the order is checked at the random point mod p and
    at a second prime and point (Schwartz-Zippel: ``error_bound``), and, with
    ``exact_check``, as an identity in exact symbolic arithmetic.

    Parameters
    ----------
    arch : Architecture
    curve : Curve, optional
        Default: simultaneous collapse.
    seed : int
    primes : sequence of int
        The first computes, the second confirms the orders.
    exact_check : "auto", bool
        Check (a) exactly with a generic normalizer and symbolic parameters and
        input (flint polynomials); ``"auto"`` does it when cheap (2 layers or
        fewer, deepest order at most 8).
    bank : int, optional
        Number of random inputs (default: just enough; grown when a rank falls short).
    max_order : int
        Deepest truncation tried; a first truncation beyond it is refused
        (ResourceLimitError) instead of running for hours.
    max_memory : int or str, optional
        Memory limit; see :func:`function_space_dimension`.

    Returns
    -------
    OrdersResult

    Examples
    --------
    >>> result = identification_orders(Architecture.uniform(layers=1, normalizer="cosh"))
    >>> [(o.order, o.sharp, o.exact_independence) for o in result.scores], result.values.order
    ([(4, True, True)], 0)
    >>> result.jet_ranks
    (4, 4, 4, 4, 7)
    """
    arch = _check_arch(arch)
    curve = _check_curve(arch, curve)
    seed = _check_seed(seed)
    primes = tuple(check_prime(p) for p in primes)
    if not primes:
        raise DomainError("give at least one prime")
    if exact_check not in ("auto", True, False):
        raise SymattnError(f"exact_check must be 'auto', True or False, got {exact_check!r}")
    _check_exact_taylor(arch)
    if _score_order(curve, arch.layers) == 0:
        raise SymattnError(f"curve {curve.describe(arch.layers)!r} keeps the scores away from 0: the series "
                           "need every score to vanish at eps = 0 (collapse queries and/or keys, or scale the input)")
    from .limits import memory_limit_set

    with memory_limit_set(max_memory):
        _require_memory(orders_memory, arch, curve, max_order)
        return _identification_orders(arch, curve, seed, primes, exact_check, bank, max_order)


def _identification_orders(arch, curve, seed, primes, exact_check, bank, max_order) -> OrdersResult:
    p = int(primes[0])
    columns = block_columns(arch)
    dims = _block_dimensions(arch)
    eff = _effective_dim(arch)
    upper, _ = _upper_bound(arch)
    predicted = _expected_orders(arch, curve)
    truncation = _guess_deepest_order(arch, curve) + 1
    bank_size = bank if bank is not None else _bank_size(arch, upper, on_curve=True)
    if isinstance(bank_size, bool) or not isinstance(bank_size, (int, np.integer)) or bank_size < 1:
        raise SymattnError(f"bank must be a positive integer, got {bank!r}")
    names = [f"scores:{i}" for i in range(1, arch.layers + 1)] + ["values"]

    def run(step):
        J, point, coefficient_values = _curve_jacobian(arch, curve, p, seed, step.truncation, step.bank)
        orders = {name: _block_order(J, columns[name], step.truncation) for name in names}
        return J, point, coefficient_values, orders

    def ranks_of(J, orders, truncation):
        # jet ranks, all blocks, and per block up to its order
        basis = EchelonBasis(arch.param_count, p)
        jet_ranks = tuple(basis.add(J[:, :, n]) for n in range(truncation))
        block_ranks = {}
        for name in names:
            if orders[name] is None or not columns[name]:
                block_ranks[name] = 0
                continue
            block_basis = EchelonBasis(len(columns[name]), p)
            for n in range(orders[name] + 1):
                block_basis.add(J[:, columns[name], n])
            block_ranks[name] = block_basis.rank
        return jet_ranks, block_ranks

    def decide(outcome, step, history):
        J, _, _, orders = outcome
        missing = [name for name in names if orders[name] is None and columns[name]]
        if arch.degenerate and not _lightning_layers(arch):  # one token: S(A) = 1, scores never appear
            missing = [name for name in missing if name == "values"]
        requests = [DEEPEN] if missing else []
        jet_ranks, block_ranks = ranks[step] = ranks_of(J, orders, step.truncation)
        short = [name for name in names if orders[name] is not None and block_ranks[name] < dims[name]]
        if short or jet_ranks[-1] < upper:
            requests.append(GROW_BANK)  # a rank fell short: a bigger bank, once or twice
        return requests

    ranks: dict = {}  # step -> (jet ranks, block ranks), computed once in decide
    growth = Growth(max_bank=MAX_BANK if bank is None else None, max_truncation=max_order, max_bank_growths=2)
    adapted = adapt(run, Step(bank_size, truncation), decide, growth)
    J, point, coefficient_values, orders = adapted.outcome
    bank_size, truncation = adapted.step.bank, adapted.step.truncation
    jet_ranks, block_ranks = ranks[adapted.step]
    # confirmation of the orders at a second prime, point and bank
    confirmed_orders = None
    if len(primes) > 1:
        J2, _, _ = _curve_jacobian(arch, curve, int(primes[1]), seed + 1, truncation, bank_size)
        confirmed_orders = {name: _block_order(J2, columns[name], truncation) for name in names}
    exact = _exact_independence(arch, curve, orders, exact_check)
    degree = degree_bound(arch, curve, truncation)
    checks = sum(min(o, truncation) if o is not None else truncation for o in orders.values())
    bound = schwartz_zippel_bound(checks * max(degree, 1), primes[: 2 if confirmed_orders is not None else 1])
    results = {}
    for name in names:
        order = orders[name]
        layer = None if name == "values" else int(name.split(":")[1])
        confirmed = confirmed_orders is not None and confirmed_orders[name] == order
        exact_ok = exact.get(name)
        rank_ok = order is not None and block_ranks[name] == dims[name]
        vanishing = order is not None and (exact_ok is not False)
        sharp = bool(rank_ok and vanishing and (confirmed or exact_ok is True or confirmed_orders is None))
        notes = []
        if order is None:
            notes.append(f"the function does not depend on this block below eps^{truncation}"
                         + (" (one token: S(A) = 1)" if arch.degenerate else ""))
        elif block_ranks[name] < dims[name]:
            notes.append(f"jet rank {block_ranks[name]} on the block's columns is below its effective "
                         f"dimension {dims[name]}: not certified locally identifying at this order")
        elif block_ranks[name] > dims[name]:
            notes.append(f"jet rank {block_ranks[name]} on the block's columns exceeds its effective dimension "
                         f"{dims[name]}: at this order these columns also move other effective parameters "
                         "(V_i enters every later What_j), so the jet does not isolate the block")
        if confirmed_orders is not None and not confirmed:
            notes.append(f"the second prime and point give order {confirmed_orders[name]}")
        if exact_ok is False:
            notes.append("the exact symbolic check finds a dependence below this order")
        if predicted is not None and order != predicted[name]:
            notes.append(f"differs from the predicted order {predicted[name]}")
        results[name] = BlockOrder(
            block=name, layer=layer, order=order, predicted=None if predicted is None else predicted[name],
            vanishing_below=bool(vanishing), confirmed=bool(confirmed), exact_independence=exact_ok,
            jet_rank=int(block_ranks[name]), block_dimension=int(dims[name]), sharp=sharp,
            note="; ".join(notes) or "sharp: vanishes below the order and the jet has full rank on the block")
    deepest = max((o for o in orders.values() if o is not None), default=0)
    jet_ranks = jet_ranks[: deepest + 1] if deepest + 1 <= len(jet_ranks) else jet_ranks
    method = (f"coefficients C_n of the Jacobian in curve coordinates (forward-mode jets of series mod "
              f"eps^{truncation}) "
              f"over GF({p}) at a random point on {bank_size} random inputs; orders = first nonzero C_n on the "
              "block's columns; ranks of stacked [C_0; ...; C_n] exact over GF(p) (certified lower bounds, "
              "equal to the effective block dimensions when sharp)"
              + (f"; orders confirmed at GF({primes[1]}), another point and bank" if confirmed_orders else "")
              + f"; adaptive steps: {adapted.describe()}"
              + ("; vanishing below the orders also checked exactly over Q[parameters, X, c_j] with a generic "
                 "normalizer for " + ", ".join(sorted(k for k, v in exact.items() if v is not None))
                 if any(v is not None for v in exact.values()) else ""))
    return OrdersResult(
        curve=curve.describe(arch.layers), scores=tuple(results[n] for n in names[:-1]), values=results["values"],
        jet_ranks=tuple(int(r) for r in jet_ranks), effective_dim=int(eff), truncation=int(truncation),
        bank=int(bank_size), primes=primes[:2] if confirmed_orders is not None else primes[:1],
        error_bound=float(bound), method=method, jacobian=J, point=point, coefficient_values=coefficient_values,
    )


# -- exact check of condition (a): flint polynomials over Q ----------------------------------
def _exact_independence(arch: Architecture, curve: Curve, orders: dict, exact_check) -> dict:
    """``block -> bool``: F_0..F_{order-1} are free of the block's symbols, exactly (``None``: not checked)."""
    names = list(orders)
    out = {name: None for name in names}
    if exact_check is False or curve.polynomials or any(n.is_lightning for n in arch.normalizers) \
            or len(set(arch.normalizers)) != 1:
        return out
    deepest = max((o for o in orders.values() if o is not None), default=0)
    if arch.layers > 2 or deepest > EXACT_CHECK_LIMITS[exact_check] or arch.param_count > 40:
        return out  # the polynomials grow too large (memory) beyond these sizes
    from .normalizers import Normalizer

    normalizer = arch.normalizers[0]
    generic = normalizer if normalizer.is_generic else Normalizer.generic(normalizer.k, even=bool(normalizer.is_even))
    generic_arch = Architecture(arch.widths, arch.score_ranks, arch.tokens, generic)
    # coefficients below the deepest order suffice: the dependence *at* each order is
    # already certified mod p (a nonzero residue is a nonzero rational)
    truncation = max(deepest, 1)
    params = arch.symbols()
    X = arch.input_symbols()
    coefficients = [c for c in generic.taylor(truncation) if isinstance(c, sp.Symbol)]
    symbols = params.flat() + list(X) + coefficients
    domain = PolynomialSeriesDomain(truncation, symbols)

    point = {(name, i): np.array(sp.Matrix(matrix).tolist(), dtype=object)
             for i in range(1, arch.layers + 1)
             for name, matrix in (("Q", params.Q[i - 1]), ("K", params.K[i - 1]), ("V", params.V[i - 1]))}
    bank = np.array([X.tolist()], dtype=object)
    coefficient_array = series_output(generic_arch, curve, point, bank, domain)  # (d_l, t, 1, N)
    index = {str(s): j for j, s in enumerate(symbols)}
    degrees = []
    for n in range(truncation):
        total = np.zeros(len(symbols), dtype=np.int64)
        for entry in coefficient_array[..., n].flat:
            if entry:
                total = np.maximum(total, np.array(entry.degrees(), dtype=np.int64))
        degrees.append(total)
    for name in names:
        order = orders[name]
        if order is None:
            continue
        if name == "values":
            block_symbols = [s for V in params.V for s in V]
        else:
            layer = int(name.split(":")[1])
            block_symbols = list(params.Q[layer - 1]) + list(params.K[layer - 1])
        positions = [index[str(s)] for s in block_symbols]
        out[name] = bool(all(not degrees[m][positions].any() for m in range(order)))
    return out


# ---------------------------------------------------------------------------------------
# the generic fiber: kernel = gauge orbit, and the sign flips
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SignFlipCheck:
    """One flip ``What_i -> -What_i`` for the layers in ``layers``.

    ``expected_preserved``: every flipped layer has an even normalizer.
    ``preserved``: what the computation found.  ``witness``: for a flip that
    changes ``F``, the input (and point) where it does, with the first
    differing order along the curve (``None`` over Q at a point).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> (even,) = sign_flip_checks(Architecture.uniform(layers=1, width=2, tokens=2, normalizer="cosh"))
    >>> even.layers, even.expected_preserved, even.preserved, even.agrees, even.witness
    ((1,), True, True, True, None)
    >>> (odd,) = sign_flip_checks(Architecture.uniform(layers=1, width=2, tokens=2, normalizer="softmax"))
    >>> odd.preserved, odd.agrees, odd.witness["order"], odd.witness["input"]
    (False, True, 2, [[1, -3], [2, -3]])
    """

    layers: tuple
    expected_preserved: bool
    preserved: bool | None
    method: str
    witness: dict | None

    @property
    def agrees(self) -> bool:
        return self.preserved is not None and self.preserved == self.expected_preserved

    def to_json(self) -> dict:
        return {"layers": list(self.layers), "expected_preserved": self.expected_preserved,
                "preserved": self.preserved, "agrees": self.agrees, "method": self.method,
                "witness": self.witness}


def _flip_point(point: dict, layers) -> dict:
    return {key: (-value if key[0] == "Q" and key[1] in layers else value) for key, value in point.items()}


def _flip_subsets(arch: Architecture) -> list[tuple]:
    layers = list(range(1, arch.layers + 1))
    even = [i for i in layers if arch.normalizers[i - 1].is_even]
    if arch.layers <= 4:
        return [s for r in range(1, arch.layers + 1) for s in itertools.combinations(layers, r)]
    subsets = {(i,) for i in layers}
    if len(even) <= 4:
        subsets |= {s for r in range(1, len(even) + 1) for s in itertools.combinations(even, r)}
    elif even:
        subsets.add(tuple(even))
    return sorted(subsets, key=lambda s: (len(s), s))


def sign_flip_checks(arch: Architecture, curve: Curve | None = None, seed: int = 0,
                     p: int = DEFAULT_PRIMES[0], max_order: int = MAX_TRUNCATION) -> tuple:
    """Check every sign flip ``Q_i -> -Q_i`` (every nonempty set of layers, up to 4 layers).

    * All flipped layers even, normalizer a polynomial: ``F`` compared exactly
      over Q at a random rational point on 3 inputs.
    * All flipped layers even, transcendental: the full truncated series of
      ``F`` along ``curve`` compared over GF(p) (every coefficient below the
      deepest identification order + 1) at a small integer point.
    * Some flipped layer not even: a witness, i.e. an input where the series
      over GF(p) differ (reported with the first differing order); lightning
      attention is compared over Q at a point.  A difference mod p is a
      difference over Q.

    Returns
    -------
    tuple of SignFlipCheck

    Examples
    --------
    >>> checks = sign_flip_checks(Architecture.uniform(layers=1, normalizer="softmax"))
    >>> [(c.layers, c.preserved, c.witness["order"]) for c in checks]
    [((1,), False, 2)]
    >>> [c.preserved for c in sign_flip_checks(Architecture.uniform(layers=2, normalizer="cosh"))]
    [True, True, True]
    """
    arch = _check_arch(arch)
    curve = _check_curve(arch, curve)
    seed = _check_seed(seed)
    point, bank = small_integer_point(arch, seed)
    subsets = _flip_subsets(arch)
    needs_series = any(not (n.is_lightning or (n.is_even and n.is_polynomial)) for n in arch.normalizers)
    if needs_series:
        _check_exact_taylor(arch)
    _, coefficient_values = random_point(arch, p, seed)
    truncation = _guess_deepest_order(arch, curve) + 1
    cache: dict = {}

    def series(pt, key, N):
        if (key, N) not in cache:
            domain = ModSeriesDomain(p, N, coefficient_values=coefficient_values)
            cache[(key, N)] = series_output(arch, curve, pt, bank, domain)
        return cache[(key, N)]

    def rational_output(subset):
        QQ = RationalDomain()
        params = arch.parameters_from(*[[point[(name, i)].tolist() for i in range(1, arch.layers + 1)]
                                        for name in ("Q", "K", "V")])
        params = sign_flip(params, subset)  # Q_i -> -Q_i
        return [forward(arch, params, X.tolist(), QQ) for X in bank]

    checks = []
    for subset in subsets:
        # the one rule of effective.sign_group_order: even (or one-token) layers flip freely,
        # lightning layers in pairs
        expected = flip_preserves_output(arch, subset)
        flipped = _flip_point(point, subset)
        flipped_normalizers = [arch.normalizers[i - 1] for i in subset]
        use_rational = all(n.is_lightning or (n.is_even and n.is_polynomial) for n in flipped_normalizers) and \
            _is_polynomial_arch(arch)
        if use_rational:
            base, other = rational_output(()), rational_output(subset)
            differing = [b for b in range(len(bank)) if not np.array_equal(base[b], other[b])]
            preserved = not differing
            witness = None
            if differing:
                b = differing[0]
                entry = next(idx for idx, v in np.ndenumerate(base[b]) if v != other[b][idx])
                witness = {"input": bank[b].tolist(), "order": None, "entry": list(entry),
                           "unflipped": str(base[b][entry]), "flipped": str(other[b][entry]),
                           "point": _point_json(point)}
            method = f"exact over Q at a rational point on {len(bank)} inputs"
        else:
            def compare(step, subset=subset, flipped=flipped):
                base, other = series(point, (), step.truncation), series(flipped, subset, step.truncation)
                return base, other, base != other

            # a flip expected to change F may change it only past the first truncation
            adapted = adapt(compare, Step(len(bank), truncation),
                            lambda outcome, step, history, expected=expected:
                            [] if outcome[2].any() or expected else [DEEPEN],
                            Growth(max_truncation=max_order))
            (base, other, difference), N = adapted.outcome, adapted.step.truncation
            preserved = not difference.any()
            witness = None
            if not preserved:
                orders = np.nonzero(difference.any(axis=(0, 1, 2)))[0]
                order = int(orders[0])
                b = int(np.nonzero(difference[..., order].any(axis=(0, 1)))[0][0])
                entry = [int(v) for v in np.argwhere(difference[:, :, b, order])[0]]
                witness = {"input": bank[b].tolist(), "order": order, "entry": entry,
                           "unflipped": int(base[entry[0], entry[1], b, order]),
                           "flipped": int(other[entry[0], entry[1], b, order]), "prime": p,
                           "point": _point_json(point)}
            method = (f"truncated series of F along {curve.describe(arch.layers)} compared over GF({p}) "
                      f"(coefficients of eps^0..eps^{N - 1}) at a small integer point on {len(bank)} inputs")
        checks.append(SignFlipCheck(tuple(subset), bool(expected), bool(preserved), method, witness))
    return tuple(checks)


def _point_json(point: dict) -> dict:
    return {f"{name}{layer}t": value.tolist() for (name, layer), value in sorted(point.items())}


@dataclass(frozen=True)
class FiberResult:
    """The generic fiber: its continuous part (gauge orbit) and its discrete part (sign flips).

    Attributes
    ----------
    gauge_dim : int
        ``sum a_i^2 + sum_{i<l} d_i^2``.
    gauge_rank : int
        Rank over ``GF(p)((eps))`` of the gauge-orbit tangents at the point.
    scaling_rank : int
        Rank of the extra lightning scalings (0 without lightning layers).
    native_rank : int
        Rank of the native Jacobian ``J(eps)`` over ``GF(p)((eps))`` (a certified lower bound).
    kernel_dim : int
        ``#params - native_rank``.
    gauge_annihilated : bool
        ``J(eps) * (gauge and scaling tangents) = 0`` exactly mod ``(p, eps^N)``.
    kernel_is_symmetry_orbit : bool
        The kernel is exactly the tangent space of the symmetry orbit:
        ``kernel_dim == gauge_rank + scaling_rank`` and the tangents are annihilated.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> fiber = generic_fiber(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> fiber.params, fiber.native_rank, fiber.kernel_dim, fiber.gauge_rank
    (8, 7, 1, 1)
    >>> fiber.kernel_is_symmetry_orbit, fiber.sign_group_order, fiber.sign_group_verified
    (True, 1, 1)
    """

    params: int
    gauge_dim: int
    gauge_rank: int
    scaling_rank: int
    native_rank: int
    kernel_dim: int
    gauge_annihilated: bool
    kernel_is_symmetry_orbit: bool
    sign_group_order: int
    sign_group_verified: int
    sign_flips: tuple
    truncation: int
    method: str

    @property
    def kernel_is_gauge_orbit(self) -> bool:
        return self.kernel_is_symmetry_orbit and self.scaling_rank == 0

    def to_json(self) -> dict:
        return {
            "params": self.params, "gauge_dim": self.gauge_dim, "gauge_rank": self.gauge_rank,
            "scaling_rank": self.scaling_rank, "native_rank": self.native_rank, "kernel_dim": self.kernel_dim,
            "gauge_annihilated": self.gauge_annihilated, "kernel_is_symmetry_orbit": self.kernel_is_symmetry_orbit,
            "sign_group_order": self.sign_group_order, "sign_group_verified": self.sign_group_verified,
            "sign_flips": [c.to_json() for c in self.sign_flips], "truncation": self.truncation,
            "method": self.method,
        }


def generic_fiber(arch: Architecture, curve: Curve | None = None, seed: int = 0, p: int = DEFAULT_PRIMES[0],
                  orders: OrdersResult | None = None, flips: bool = True) -> FiberResult:
    """The kernel of the native Jacobian is the gauge orbit's tangent space; the sign flips.

    Over ``GF(p)((eps))`` along ``curve`` at a random point: the rank of the
    native ``J(eps)`` (resolved Smith exponents), the rank of the gauge-orbit
    tangents (:func:`symattn.jacobian.gauge_tangent_series`, plus the
    scalings of lightning layers) and the product ``J(eps) G(eps)^T``, which
    must vanish.  If ``rank J + rank G = #params`` the kernel is exactly the
    orbit's tangent space (the gauge tangents lie in the kernel and fill it).

    Parameters
    ----------
    orders : OrdersResult, optional
        Reuse the Jacobian of :func:`identification_orders` (same curve).
    flips : bool
        Also run :func:`sign_flip_checks`.

    Examples
    --------
    >>> fiber = generic_fiber(Architecture.uniform(layers=2, normalizer="softmax"), flips=False)
    >>> fiber.kernel_dim, fiber.gauge_rank, fiber.gauge_dim, fiber.kernel_is_gauge_orbit
    (6, 6, 6, True)
    """
    arch = _check_arch(arch)
    curve = _check_curve(arch, curve)
    seed = _check_seed(seed)
    if orders is None:
        orders = identification_orders(arch, curve, seed=seed, primes=(p,), exact_check=False)
    p = int(orders.primes[0])
    Jc, point = orders.jacobian, orders.point
    N = Jc.shape[-1]
    # native columns: a collapsed block's curve column is eps times its native column
    scaled = np.zeros(arch.param_count, dtype=bool)
    for position, (name, layer, _, _) in enumerate(arch.parameter_index()):
        scaled[position] = curve.block_power(name, layer) == 1
    native_truncation = N - 1 if scaled.any() else N
    native = np.where(scaled[None, :, None], np.roll(Jc, -1, axis=-1), Jc)[:, :, :native_truncation]
    upper, _ = _upper_bound(arch)

    def native_at(size, truncation):
        J = _jacobian(arch, curve, random_bank(arch, size, p, seed), point, p, truncation,
                      orders.coefficient_values, coordinates="native")
        return J, series_rank(_compress_rows(J, arch.param_count + 2, p, seed), p)

    def symmetry_at(truncation):
        gauge = gauge_tangent_series(arch, curve, point, p, truncation)
        scalings = scaling_tangent_series(arch, curve, point, p, truncation)
        symmetry = np.concatenate([gauge, scalings]) if len(scalings) else gauge
        gauge_rank = series_rank(gauge, p).rank if len(gauge) else 0
        symmetry_rank = series_rank(symmetry, p).rank if len(symmetry) else 0
        return symmetry, len(scalings), gauge_rank, symmetry_rank

    first = Step(orders.bank, native_truncation)
    symmetries: dict = {}  # truncation -> symmetry_at(truncation), computed when first needed

    def run(step):
        if step == first:  # the Jacobian of the orders, in native coordinates
            return native, series_rank(_compress_rows(native, arch.param_count + 2, p, seed), p)
        return native_at(step.bank, step.truncation)

    def decide(outcome, step, history):
        rank = outcome[1].rank
        # too small a bank pushes Smith exponents past the truncation: a bigger bank, same point
        requests = [GROW_BANK] if rank < upper else []
        if step.truncation not in symmetries:
            symmetries[step.truncation] = symmetry_at(step.truncation)
        # rank J + rank(tangents) < #params may only mean that some Smith exponents lie past the
        # truncation (one lightning layer: every direction enters at eps^2): deepen before concluding
        if rank + symmetries[step.truncation][3] < arch.param_count:
            requests.append(DEEPEN)
        return requests

    growth = Growth(max_bank=MAX_BANK, max_bank_growths=3, max_truncation=max(4 * native_truncation, 16),
                    deepen_after_bank=True)
    adapted = adapt(run, first, decide, growth)
    (native, native_rank), bank_size, native_truncation = adapted.outcome, adapted.step.bank, adapted.step.truncation
    if native_truncation not in symmetries:
        symmetries[native_truncation] = symmetry_at(native_truncation)
    symmetry, scaling_count, gauge_rank, symmetry_rank = symmetries[native_truncation]
    annihilated = True
    if len(symmetry):
        product = series_matmul(native, symmetry.transpose(1, 0, 2), p, native_truncation)
        annihilated = not product.any()
    kernel = arch.param_count - native_rank.rank
    is_orbit = bool(annihilated and kernel == symmetry_rank)
    checks = sign_flip_checks(arch, curve, seed=seed, p=p) if flips else ()
    # the identity, and every checked flip of the sign group that kept F
    verified = 1 + sum(1 for c in checks if c.preserved and flip_preserves_output(arch, c.layers))
    method = (f"ranks over GF({p})((eps)) resolved below eps^{native_truncation} at the random point of the "
              f"orders (native Jacobian on {bank_size} inputs, rows compressed); gauge tangents of "
              "G_i in GL(a_i), H_i in GL(d_i)"
              + (", and the scalings of lightning layers" if scaling_count else "")
              + "; their product with J(eps) computed exactly; the kernel equals the orbit's tangent space when "
                "rank J + rank(tangents) = #params")
    return FiberResult(
        params=arch.param_count, gauge_dim=gauge_dimension(arch), gauge_rank=int(gauge_rank),
        scaling_rank=int(symmetry_rank - gauge_rank), native_rank=int(native_rank.rank), kernel_dim=int(kernel),
        gauge_annihilated=bool(annihilated), kernel_is_symmetry_orbit=is_orbit,
        sign_group_order=sign_group_order(arch), sign_group_verified=int(verified), sign_flips=checks,
        truncation=int(native_truncation), method=method,
    )


# ---------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IdentificationReport(FormattedResult):
    """Dimension, generic fiber, identification orders and jet ranks of one architecture.

    The JSON keys of ``symattn identify --json``: ``dimension`` (``lower``,
    ``upper``, ``certified``, ``estimate``, ...), ``gauge_dim``,
    ``sign_group_order``, ``orders`` (``[{layer, order, sharp, ...}]``),
    ``value_order``, ``jet_ranks``, and the details (``fiber``,
    ``sign_flips``, ``values``, ``method``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> report = identify(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> report.params, report.effective_dim, report.gauge_dim, report.value_order
    (8, 7, 1, 0)
    >>> report.dimension.certified, [o.order for o in report.orders], report.all_sharp
    (True, [2], True)
    >>> report.to_json()["jet_ranks"]
    [4, 4, 7]
    """

    architecture: dict
    curve: str
    params: int
    effective_dim: int
    dimension: DimensionResult
    fiber: FiberResult
    orders: tuple
    values: BlockOrder
    jet_ranks: tuple
    truncation: int
    bank: int
    primes: tuple
    error_bound: float
    formula_claimed: bool
    seconds: float
    method: str

    @property
    def value_order(self) -> int | None:
        return self.values.order

    @property
    def gauge_dim(self) -> int:
        return self.fiber.gauge_dim

    @property
    def sign_group_order(self) -> int:
        return self.fiber.sign_group_order

    @property
    def all_sharp(self) -> bool:
        return all(o.sharp for o in (*self.orders, self.values))

    def to_json(self) -> dict:
        """A JSON-ready dict (see the class docstring for the keys)."""
        return {
            "architecture": self.architecture,
            "curve": self.curve,
            "params": self.params,
            "effective_dim": self.effective_dim,
            "dimension": self.dimension.to_json(),
            "gauge_dim": self.gauge_dim,
            "sign_group_order": self.sign_group_order,
            "orders": [o.to_json() for o in self.orders],
            "value_order": self.value_order,
            "values": self.values.to_json(),
            "jet_ranks": list(self.jet_ranks),
            "fiber": self.fiber.to_json(),
            "formula_claimed": self.formula_claimed,
            "truncation": self.truncation,
            "bank": self.bank,
            "primes": list(self.primes),
            "error_bound": self.error_bound,
            "seconds": round(self.seconds, 3),
            "method": self.method,
        }

    # -- tables ------------------------------------------------------------------------
    def _order_rows(self):
        rows = []
        for o in (*self.orders, self.values):
            label = f"scores {o.layer}" if o.layer is not None else "values"
            rows.append((label, "-" if o.order is None else o.order, "-" if o.predicted is None else o.predicted,
                         "yes" if o.sharp else "no", f"{o.jet_rank}/{o.block_dimension}",
                         {None: "-", True: "yes", False: "NO"}[o.exact_independence]))
        return rows

    _ORDER_HEADER = ("block", "order", "predicted", "sharp", "jet rank / block dim", "exact (a)")

    def _fiber_rows(self):
        f = self.fiber
        rows = [("native parameters", f.params), ("native Jacobian rank", f.native_rank),
                ("kernel dimension", f.kernel_dim), ("gauge dimension", f.gauge_dim),
                ("gauge tangent rank", f.gauge_rank)]
        if f.scaling_rank:
            rows.append(("lightning scalings", f.scaling_rank))
        rows += [("J * tangents = 0", f.gauge_annihilated), ("kernel = symmetry orbit", f.kernel_is_symmetry_orbit),
                 ("sign group order", f.sign_group_order), ("sign flips verified", f.sign_group_verified)]
        return rows

    def _flip_lines(self):
        lines = []
        for c in self.fiber.sign_flips:
            what = "keeps F" if c.preserved else "changes F"
            expected = "as expected" if c.agrees else "UNEXPECTED"
            where = ""
            if c.witness is not None:
                where = f" (witness input {c.witness['input']}" + (
                    f", first at order eps^{c.witness['order']})" if c.witness["order"] is not None else ")")
            lines.append(f"flip layers {list(c.layers)}: {what}, {expected}{where}")
        return lines

    def to_markdown(self) -> str:
        """Markdown: the dimension, the fiber, the orders and the jet ranks, each with its method."""
        d = self.dimension
        out = ["### Dimension of the function space", "", d.to_markdown(), "",
               "### Generic fiber", "", markdown_table(("quantity", "value"), self._fiber_rows(), align="lr")]
        out += [""] + [f"- {line}" for line in self._flip_lines()] + [f"- method: {self.fiber.method}", ""]
        out += [f"### Identification orders along {self.curve}", "",
                markdown_table(self._ORDER_HEADER, self._order_rows(), align="lrrlrl")]
        out += ["", "Jet ranks (rank of the Jacobian of (F_0, ..., F_n) in curve coordinates):", "",
                "| n | " + " | ".join(str(n) for n in range(len(self.jet_ranks))) + " |",
                "|---|" + "---:|" * len(self.jet_ranks),
                "| rank | " + " | ".join(str(r) for r in self.jet_ranks) + " |", ""]
        if not self.formula_claimed:
            out.append("- no formula is claimed along this curve: the orders are computed and shown")
        notes = [f"{o.block}: {o.note}" for o in (*self.orders, self.values) if not o.sharp]
        out += [f"- not sharp: {n}" for n in notes]
        out += [f"- method: {self.method}", f"- error probability <= {self.error_bound:.1e}"]
        return "\n".join(out)

    def _latex_body(self) -> str:
        """LaTeX tables of the dimension, the fiber and the orders."""
        def escaped(rows):
            return [[latex_escape(cell) for cell in row] for row in rows]

        return "\n".join([
            self.dimension.to_latex(), "", r"\medskip", "",
            latex_tabular(escaped(self._fiber_rows()), "lr"), "", r"\medskip", "",
            latex_tabular(escaped(self._order_rows()), "lrrlrl", header=escaped([self._ORDER_HEADER])[0]),
            "", r"\medskip", "",
            "Jet ranks: " + ", ".join(f"$n={n}$: {r}" for n, r in enumerate(self.jet_ranks)) + ".",
        ])

    def _latex_math(self) -> str:
        return latex_array(self._ORDER_HEADER, self._order_rows())

    def __str__(self) -> str:
        d = self.dimension
        lines = [f"dimension: lower {d.lower} (certified bound), upper {d.upper}, certified {d.certified}, "
                 f"estimate {d.estimate}, formula {d.expected}",
                 f"fiber: kernel {self.fiber.kernel_dim}, gauge {self.fiber.gauge_dim}, kernel = symmetry orbit "
                 f"{self.fiber.kernel_is_symmetry_orbit}, sign group {self.fiber.sign_group_order} "
                 f"(verified {self.fiber.sign_group_verified})",
                 f"orders along {self.curve}:",
                 "  " + "  ".join(f"{h:>10}" for h in self._ORDER_HEADER[:4])]
        lines += ["  " + "  ".join(f"{str(c):>10}" for c in row[:4]) for row in self._order_rows()]
        lines.append(f"jet ranks: {list(self.jet_ranks)}")
        return "\n".join(lines)


def identify(arch: Architecture, curve: Curve | None = None, seed: int = 0, progress: bool = False,
             estimate=None, exact_check="auto", primes=DEFAULT_PRIMES, dps: int = 30,
             max_memory=None) -> IdentificationReport:
    """Dimension of the function space, generic fiber and identification orders along ``curve``.

    Parameters
    ----------
    arch : Architecture
    curve : Curve, optional
        Default :func:`symattn.curves.collapse`; :func:`symattn.curves.input_scaling`
        gives the same report along ``X -> tau X`` (no formula is claimed there).
    seed : int
        Seed of the random points and banks.
    progress : bool
        Show which step runs (a bar over the three stages, on a terminal).
    estimate : {None, "float64", "mpmath"}
        A numerical estimate of the dimension beside the certified bounds
        (default ``None``: the certified result alone).
    exact_check : "auto", bool
        Exact symbolic check of condition (a) of sharpness (see :func:`identification_orders`).
    primes : sequence of int
        The first computes, the second confirms.
    dps : int
        Digits of the mpmath estimate.
    max_memory : int or str, optional
        Memory limit (e.g. ``"16G"``; default ``$SYMATTN_MAX_MEMORY`` or half the
        machine).  The first Jacobians of every stage are estimated before the
        first stage starts (:func:`symattn.limits.jet_jacobian_memory`), and
        every later one before it is computed.

    Returns
    -------
    IdentificationReport

    Raises
    ------
    ResourceLimitError
        Over the memory limit, or series deeper than ``MAX_TRUNCATION``
        (``2k 3^(l-1)`` grows threefold with each layer), naming what fits.

    Examples
    --------
    >>> report = identify(Architecture.uniform(layers=2, normalizer="cosh"), estimate=None)
    >>> [o.order for o in report.orders], report.fiber.sign_group_verified
    ([4, 12], 4)
    """
    started = time.perf_counter()
    arch = _check_arch(arch)
    curve = _check_curve(arch, curve)
    seed = _check_seed(seed)
    estimate = _check_estimate(estimate)
    _check_exact_taylor(arch)
    from .limits import memory_limit_set, progress_bar

    steps = ["dimension", "orders", "fiber"]
    with memory_limit_set(max_memory), progress_bar(progress, total=len(steps), desc="identify",
                                                    unit="step") as bar:
        _require_memory(_identify_memory, arch, curve, MAX_TRUNCATION)
        bar.set_postfix_str("dimension")
        dimension = function_space_dimension(arch, curve=curve, seed=seed, estimate=estimate, dps=dps)
        bar.update()
        bar.set_postfix_str("orders")
        orders = identification_orders(arch, curve, seed=seed, primes=primes, exact_check=exact_check)
        bar.update()
        bar.set_postfix_str("fiber")
        fiber = generic_fiber(arch, curve, seed=seed, orders=orders)
        bar.update()
    formula = _expected_orders(arch, curve) is not None
    method = ("dimension: " + dimension.method + "; orders: " + orders.method + "; fiber: " + fiber.method)
    return IdentificationReport(
        architecture=arch.to_json(), curve=curve.describe(arch.layers), params=arch.param_count,
        effective_dim=_effective_dim(arch), dimension=dimension, fiber=fiber, orders=orders.scores,
        values=orders.values, jet_ranks=orders.jet_ranks, truncation=orders.truncation, bank=orders.bank,
        primes=orders.primes, error_bound=orders.error_bound, formula_claimed=formula,
        seconds=time.perf_counter() - started, method=method,
    )
