"""Identification orders and jet ranks along a curve (MATH.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from ..adaptive import DEEPEN, GROW_BANK, Growth, Step, adapt, refuse_renamed, schwartz_zippel_bound
from ..algebra.exactseries import PolynomialSeriesDomain
from ..algebra.linalg import EchelonBasis
from ..curves import Curve
from ..errors import DomainError, SymattnError, TruncationError
from ..limits import MAX_BANK
from ..jacobian import (
    DEFAULT_PRIMES,
    block_columns,
    check_prime,
    field_note,
    field_primes,
    degree_bound,
    random_bank,
    random_point,
    series_output,
)
from ..model import Architecture
from .common import (
    EXACT_CHECK_LIMITS, MAX_TRUNCATION, _bank_size, _block_dimensions, _check_arch, _check_curve,
    _check_exact_taylor, _check_seed, _effective_dim, _expected_orders, _guess_deepest_order, _jacobian,
    _lightning_layers, _require_memory, _score_order, _upper_bound, orders_memory,
)

__all__ = ["BlockOrder", "OrdersResult", "identification_orders"]


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
                          max_truncation: int = MAX_TRUNCATION, max_memory=None, **renamed) -> OrdersResult:
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
    max_truncation : int
        Deepest truncation tried; a first truncation beyond it is refused
        (ResourceLimitError) instead of running for hours.  (``max_order=``,
        its earlier name, is refused with a message naming this one.)
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
    refuse_renamed("identification_orders", renamed)
    arch = _check_arch(arch)
    curve = _check_curve(arch, curve)
    seed = _check_seed(seed)
    primes = tuple(check_prime(p) for p in primes)
    if not primes:
        raise DomainError("give at least one prime")
    if exact_check not in ("auto", True, False):
        raise SymattnError(f"exact_check must be 'auto', True or False, got {exact_check!r}")
    _check_exact_taylor(arch)
    primes = field_primes(arch, primes)  # algebraic Taylor coefficients: primes with a root of their field
    if _score_order(curve, arch.layers) == 0:
        raise SymattnError(f"curve {curve.describe(arch.layers)!r} keeps the scores away from 0: the series "
                           "need every score to vanish at eps = 0 (collapse queries and/or keys, or scale the input)")
    from ..limits import memory_limit_set

    with memory_limit_set(max_memory):
        _require_memory(orders_memory, arch, curve, max_truncation)
        return _identification_orders(arch, curve, seed, primes, exact_check, bank, max_truncation)


def _identification_orders(arch, curve, seed, primes, exact_check, bank, max_truncation) -> OrdersResult:
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
    names = list(columns)  # scores:1 .. scores:l (per head where a layer has several), then values

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
    growth = Growth(max_bank=MAX_BANK if bank is None else None, max_truncation=max_truncation, max_bank_growths=2)
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
        layer = None if name == "values" else int(name.split(":")[1])  # scores:i or scores:i:h
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
            notes.append(f"jet rank {block_ranks[name]} on the block's columns is below its "
                         f"{'effective ' if arch.is_plain else 'block '}"
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
    if field_note(arch, primes[:2] if confirmed_orders is not None else primes[:1]):
        method += "; " + field_note(arch, primes[:2] if confirmed_orders is not None else primes[:1])
    return OrdersResult(
        # the score blocks, then the groups of other components (a feed-forward block): every block but the values
        curve=curve.describe(arch.layers), scores=tuple(results[n] for n in names if n != "values"),
        values=results["values"],
        jet_ranks=tuple(int(r) for r in jet_ranks), effective_dim=int(eff), truncation=int(truncation),
        bank=int(bank_size), primes=primes[:2] if confirmed_orders is not None else primes[:1],
        error_bound=float(bound), method=method, jacobian=J, point=point, coefficient_values=coefficient_values,
    )


# -- exact check of condition (a): flint polynomials over Q ----------------------------------
def _exact_independence(arch: Architecture, curve: Curve, orders: dict, exact_check) -> dict:
    """``block -> bool``: F_0..F_{order-1} are free of the block's symbols, exactly (``None``: not checked)."""
    names = list(orders)
    out = {name: None for name in names}
    if exact_check is False or curve.polynomials or any(not a.normalized for a in arch.attention) \
            or len(set(arch.normalizers)) != 1:
        return out
    deepest = max((o for o in orders.values() if o is not None), default=0)
    if arch.layers > 2 or deepest > EXACT_CHECK_LIMITS[exact_check] or arch.param_count > 40:
        return out  # the polynomials grow too large (memory) beyond these sizes
    from ..normalizers import Normalizer

    normalizer = arch.normalizers[0]
    generic = normalizer if normalizer.is_generic else Normalizer.generic(normalizer.k, even=bool(normalizer.is_even))
    generic_arch = arch.replace(normalizer=generic)
    # coefficients below the deepest order suffice: the dependence *at* each order is
    # already certified mod p (a nonzero residue is a nonzero rational)
    truncation = max(deepest, 1)
    params = arch.symbols()
    X = arch.input_symbols()
    coefficients = [c for c in generic.taylor(truncation) if isinstance(c, sp.Symbol)]
    symbols = params.flat() + list(X) + coefficients
    domain = PolynomialSeriesDomain(truncation, symbols)

    if any(not f.has_rational_taylor for f in generic_arch.analytic_functions):
        return out  # an activation's irrational Taylor constants have no place in polynomials over Q
    blocks = arch.block_map(params)
    point = {key: np.array(sp.Matrix(matrix).tolist(), dtype=object) for key, matrix in blocks.items()}
    bank = np.array([X.tolist()], dtype=object)
    try:
        coefficient_array = series_output(generic_arch, curve, point, bank, domain)  # (d_l, t, 1, N)
    except TruncationError:  # the polynomials outgrow the size guard (heads multiply them): not checked
        return out
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
        # the block's symbols: every entry of the native blocks in its group (Q and K of a head, every V, ...)
        block_symbols = [s for key, group in arch.block_groups().items() if group == name for s in blocks[key]]
        positions = [index[str(s)] for s in block_symbols]
        out[name] = bool(all(not degrees[m][positions].any() for m in range(order)))
    return out
