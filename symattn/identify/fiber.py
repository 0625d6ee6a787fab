"""The generic fiber: the kernel of the native Jacobian is the gauge orbit's tangent space; the sign flips."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..adaptive import DEEPEN, GROW_BANK, Growth, Step, adapt, degeneracies, refuse_renamed
from ..algebra.domains import RationalDomain
from ..algebra.linalg import series_matmul
from ..algebra.modseries import ModSeriesDomain
from ..curves import Curve
from ..effective import (
    flip_preserves_output,
    hidden_gauge_layers,
    hidden_gauge_text,
    gauge_dimension,
    sign_flip,
    sign_group_order,
)
from ..limits import MAX_BANK
from ..jacobian import (
    DEFAULT_PRIMES,
    field_note,
    field_primes,
    gauge_tangent_series,
    random_bank,
    random_point,
    scaling_tangent_series,
    series_output,
    symmetry_tangent_series,
    small_integer_point,
)
from ..model import Architecture, forward
from .common import (
    MAX_TRUNCATION, _check_arch, _check_curve, _check_exact_taylor, _check_seed, _compress_rows,
    _guess_deepest_order, _is_polynomial_arch, _jacobian, _upper_bound, series_rank,
)
from .orders import OrdersResult, identification_orders

__all__ = ["FiberResult", "SignFlipCheck", "generic_fiber", "sign_flip_checks"]


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


def _flip_point(arch: Architecture, point: dict, layers) -> dict:
    """``Q -> -Q`` (and ``b_Q -> -b_Q``) for the given heads (in parameter order: the layers with one head each)."""
    # the query bias is part of the query, (Q x + b_Q): flipping Q alone is not What -> -What
    flipped = {arch.block_key(name, *arch.units()[u - 1]) for u in layers for name in ("Q", "bQ")}
    return {key: (-value if key in flipped else value) for key, value in point.items()}


def _flip_subsets(arch: Architecture) -> list[tuple]:
    units = arch.units()
    layers = list(range(1, len(units) + 1))  # heads in parameter order (the layers with one head each)
    even = [u for u in layers if arch.normalizers[units[u - 1][0] - 1].is_even]
    if len(units) <= 4:
        return [s for r in range(1, len(units) + 1) for s in itertools.combinations(layers, r)]
    subsets = {(i,) for i in layers}
    if len(even) <= 4:
        subsets |= {s for r in range(1, len(even) + 1) for s in itertools.combinations(even, r)}
    elif even:
        subsets.add(tuple(even))
    return sorted(subsets, key=lambda s: (len(s), s))


def _hidden_gauge_words(arch: Architecture) -> str:
    """The hidden gauges in the method text, read off the components (:func:`~symattn.effective.hidden_gauge_text`)."""
    kind, words, translations = hidden_gauge_text(arch)
    text = {"layers": ", H_i in GL(d_i)" if hidden_gauge_layers(arch) else "",
            "tied": " (no hidden GL(d_i): residual stream)",
            "streams": ", " + words.replace("one GL(d) per", "H in GL(d) on each")}[kind]
    return text + (f", {translations}" if translations else "")


def sign_flip_checks(arch: Architecture, curve: Curve | None = None, seed: int = 0,
                     p: int = DEFAULT_PRIMES[0], max_truncation: int = MAX_TRUNCATION, **renamed) -> tuple:
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

    ``max_truncation`` is the deepest truncation tried for a witness
    (``max_order=``, its earlier name, is refused naming this one).

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
    refuse_renamed("sign_flip_checks", renamed)
    arch = _check_arch(arch)
    curve = _check_curve(arch, curve)
    seed = _check_seed(seed)
    point, bank = small_integer_point(arch, seed)
    subsets = _flip_subsets(arch)
    needs_series = any(a.normalized and not (a.normalizer.is_even and a.polynomial_weights) for a in arch.attention)
    if needs_series:
        _check_exact_taylor(arch)
    p = field_primes(arch, (p,))[0]  # algebraic Taylor coefficients: a prime with a root of their field
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
        params = arch.parameters_from_blocks({key: point[key].tolist() for key, _ in arch.blocks()})
        params = sign_flip(params, subset)  # Q_i -> -Q_i
        return [forward(arch, params, X.tolist(), QQ) for X in bank]

    checks = []
    for subset in subsets:
        # the one rule of effective.sign_group_order: even (or one-token) layers flip freely,
        # lightning layers in pairs
        expected = flip_preserves_output(arch, subset)
        flipped = _flip_point(arch, point, subset)
        flipped_attention = [arch.attention[arch.units()[u - 1][0] - 1] for u in subset]
        use_rational = all(not a.normalized or (a.normalizer.is_even and a.polynomial_weights)
                           for a in flipped_attention) and \
            _is_polynomial_arch(arch) and all(c.is_Rational for n in arch.normalizers  # sqrt(2): over GF(p)
                                              for c in n.polynomial_coefficients)
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
                            Growth(max_truncation=max_truncation))
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
    # Q1t, or Q1h2t for head 2 of a layer with heads
    return {f"{key[0]}{key[1]}{'h' + str(key[2]) if len(key) == 3 else ''}t": value.tolist()
            for key, value in sorted(point.items())}


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
    translation_rank : int
        Rank the components' translations add (``b_K`` with an exponential
        normalizer, the heads' ``b_V``; 0 without them).
    native_rank : int
        Rank of the native Jacobian ``J(eps)`` over ``GF(p)((eps))`` (a certified lower bound).
    kernel_dim : int
        ``#params - native_rank``.
    gauge_annihilated : bool
        ``J(eps) T = 0`` exactly mod ``(p, eps^N)`` for every declared
        symmetry tangent ``T`` (gauge, scalings, translations).
    kernel_is_symmetry_orbit : bool
        The kernel is exactly the tangent space of the symmetry orbit:
        ``kernel_dim == gauge_rank + scaling_rank + translation_rank`` and
        the tangents are annihilated.
    degenerate : tuple of str
        What makes the network degenerate and why
        (:func:`symattn.adaptive.degeneracies`), and, when the gauge orbit is
        smaller than the gauge group (``gauge_rank < gauge_dim``), that fact.

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
    degenerate: tuple = ()
    translation_rank: int = 0

    @property
    def kernel_is_gauge_orbit(self) -> bool:
        return self.kernel_is_symmetry_orbit and self.scaling_rank == 0 and self.translation_rank == 0

    def to_json(self) -> dict:
        return {
            "params": self.params, "gauge_dim": self.gauge_dim, "gauge_rank": self.gauge_rank,
            "scaling_rank": self.scaling_rank, "native_rank": self.native_rank, "kernel_dim": self.kernel_dim,
            "gauge_annihilated": self.gauge_annihilated, "kernel_is_symmetry_orbit": self.kernel_is_symmetry_orbit,
            "sign_group_order": self.sign_group_order, "sign_group_verified": self.sign_group_verified,
            "sign_flips": [c.to_json() for c in self.sign_flips], "truncation": self.truncation,
            "method": self.method, "degenerate": list(self.degenerate),
            # only where there are translations: the recorded results of the other networks keep their keys
            **({"translation_rank": self.translation_rank} if self.translation_rank else {}),
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
    for position, entry in enumerate(arch.parameter_index()):
        scaled[position] = curve.block_power(entry[0], entry[1]) == 1
    native_truncation = N - 1 if scaled.any() else N
    native = np.where(scaled[None, :, None], np.roll(Jc, -1, axis=-1), Jc)[:, :, :native_truncation]
    upper, _ = _upper_bound(arch)

    def native_at(size, truncation):
        J = _jacobian(arch, curve, random_bank(arch, size, p, seed), point, p, truncation,
                      orders.coefficient_values, coordinates="native")
        return J, series_rank(_compress_rows(J, arch.param_count + 2, p, seed), p)

    def symmetry_at(truncation):
        # every declared tangent, gauge first: the certified rank bound subtracts them all
        # (symmetry_orbit_bound), so the kernel is compared with all of them, translations included
        gauge = gauge_tangent_series(arch, curve, point, p, truncation)
        scalings = scaling_tangent_series(arch, curve, point, p, truncation)
        translations = symmetry_tangent_series(arch, curve, point, p, truncation, "translation")
        symmetry = np.concatenate([gauge, scalings, translations])
        ranks = [series_rank(gauge, p).rank if len(gauge) else 0]
        for added, upto in ((scalings, len(gauge) + len(scalings)), (translations, len(symmetry))):
            ranks.append(series_rank(symmetry[:upto], p).rank if len(added) else ranks[-1])  # a Smith form once
        return symmetry, len(scalings), len(translations), ranks

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
        if rank + symmetries[step.truncation][3][2] < arch.param_count:
            requests.append(DEEPEN)
        return requests

    growth = Growth(max_bank=MAX_BANK, max_bank_growths=3, max_truncation=max(4 * native_truncation, 16),
                    deepen_after_bank=True)
    adapted = adapt(run, first, decide, growth)
    (native, native_rank), bank_size, native_truncation = adapted.outcome, adapted.step.bank, adapted.step.truncation
    if native_truncation not in symmetries:
        symmetries[native_truncation] = symmetry_at(native_truncation)
    symmetry, scaling_count, translation_count, (gauge_rank, scaled_rank, symmetry_rank) = \
        symmetries[native_truncation]
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
              + ("G_i in GL(a_i), H_i in GL(d_i)" if arch.is_plain else
                 "G_{i,h} in GL(a_i) per head" + _hidden_gauge_words(arch))
              + (", and the scalings of lightning layers" if scaling_count else "")
              + (f", and {translation_count} translations of the components' biases" if translation_count else "")
              + "; their product with J(eps) computed exactly; the kernel equals the orbit's tangent space when "
                "rank J + rank(tangents) = #params")
    if field_note(arch, (p,)):
        method += "; " + field_note(arch, (p,))
    degenerate = degeneracies(arch)
    if gauge_rank < gauge_dimension(arch):  # the group's dimension is not the orbit's: say so, with the reasons
        degenerate += (f"the gauge group has dimension {gauge_dimension(arch)} but its orbit only {int(gauge_rank)} "
                       f"(the gauge tangent rank): the group does not act freely, so its dimension is not the "
                       f"kernel's",)
    return FiberResult(
        degenerate=degenerate,
        params=arch.param_count, gauge_dim=gauge_dimension(arch), gauge_rank=int(gauge_rank),
        scaling_rank=int(scaled_rank - gauge_rank), translation_rank=int(symmetry_rank - scaled_rank),
        native_rank=int(native_rank.rank), kernel_dim=int(kernel),
        gauge_annihilated=bool(annihilated), kernel_is_symmetry_orbit=is_orbit,
        sign_group_order=sign_group_order(arch), sign_group_verified=int(verified), sign_flips=checks,
        truncation=int(native_truncation), method=method,
    )
