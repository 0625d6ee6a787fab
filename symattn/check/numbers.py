"""Claimed numbers settled by the engine: contact orders, multiplicities, kernel, dimension, orders, signs.

A :class:`ClaimEngine` computes each quantity once for all the claims about
one architecture (:func:`~symattn.spectrum.decay_spectrum`,
:func:`~symattn.identify.identify`, the sign-flip action checked
numerically); :func:`check_number_claim` gives one claim's verdict from it,
never from the formula being checked.
"""

from __future__ import annotations

import random

import numpy as np
import sympy as sp

from ..errors import SymattnError
from ..model import Architecture
from ..verdicts import ClaimCheck
from .reading import parse_claim


class ClaimEngine:
    """Computes each quantity once for all claims about one architecture."""

    def __init__(self, arch: Architecture, seed: int = 0, progress: bool = False, spectrum=None):
        self.arch = arch
        self.seed = seed
        self.progress = progress
        self._spectrum = spectrum
        self._identify = None
        self._identify_tried = False
        self._identify_error = None
        self._flips = None

    @property
    def spectrum(self):
        if self._spectrum is None:
            from ..spectrum import decay_spectrum

            self._spectrum = decay_spectrum(self.arch, seed=self.seed, progress=self.progress)
        return self._spectrum

    def _spectrum_note(self) -> str:
        s = self.spectrum
        return (f"decay_spectrum along {s.curve}: exponents {s.exponents}, rank {s.rank}, kernel {s.kernel}, "
                f"bank {s.bank} (separating: {s.separating}), truncation eps^{s.truncation}, primes "
                f"{list(s.primes)} (confirmed: {s.confirmed}), error probability <= {s.error_bound:.1e}")

    def _spectrum_settled(self) -> str | None:
        s = self.spectrum
        if not s.separating:
            return f"the bank is not certified separating ({s.separation_note})"
        if s.unresolved:
            return f"{s.unresolved} direction(s) unresolved (valuation >= {s.truncation})"
        return None

    def contact_order(self, layer: int):
        s = self.spectrum
        block = {int(e): m for e, m in s.blocks.get(f"scores:{layer}", {}).items()}  # ints, as Spectrum.exponents
        for name, histogram in s.blocks.items():  # a layer with heads: the blocks scores:i:h of all its heads
            if name.startswith(f"scores:{layer}:"):
                for e, m in histogram.items():
                    block[int(e)] = block.get(int(e), 0) + m
        block = dict(sorted(block.items()))
        exponents = sorted(int(e) for e in block)
        note = (f"least exponent added by layer {layer}'s Q_{layer}, K_{layer} columns "
                f"(block scores:{layer} = {block}); " + self._spectrum_note())
        if not exponents:
            return None, note + f"; layer {layer}'s block resolved no exponent"
        return exponents[0], note

    def identify_report(self):
        if not self._identify_tried:
            self._identify_tried = True
            try:
                from ..identify import identify
            except ImportError:
                identify = None
            if identify is not None:
                try:
                    try:
                        self._identify = identify(self.arch, seed=self.seed, progress=self.progress, estimate=None)
                    except TypeError:  # an older signature
                        self._identify = identify(self.arch)
                except SymattnError as err:  # e.g. no exact engine for this normalizer
                    self._identify_error = str(err)
        return self._identify

    def identification_order(self, layer: int):
        report = self.identify_report()
        if report is not None and hasattr(report, "orders"):
            value, entry = _lookup_order(report.orders, layer)
            if value is not None:
                sharp = getattr(entry, "sharp", None)
                note = getattr(entry, "note", "")
                return value, (f"symattn.identify.identify(arch): identification order of block scores:{layer} "
                               f"along the collapse curve = {value}"
                               + ("" if sharp is None else f", sharp: {sharp}") + (f" ({note})" if note else ""))
        contact, note = self.contact_order(layer)
        if contact is None:
            return None, "identification order = contact order + 1; " + note
        if self._identify_error:
            why = f"symattn.identify failed ({self._identify_error})"
        elif report is None:
            why = "symattn.identify is not available"
        else:
            why = "symattn.identify's report has no order for this layer"
        return contact + 1, (f"{why}: identification order computed as contact order + 1 (the least n with "
                             f"F_0..F_n depending on the layer's scores); " + note)

    def sign_flips(self):
        if self._flips is None:
            self._flips = _sign_flip_count(self.arch, self.seed)
        return self._flips


def _lookup_order(orders, layer: int):
    """``(order, entry)`` of layer ``layer`` in an identify report's ``orders`` (several shapes accepted)."""
    def value_of(entry):
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            return int(entry)
        order = getattr(entry, "order", None)
        return int(order) if isinstance(order, (int, np.integer)) else None

    if isinstance(orders, dict):
        for key in (layer, str(layer), f"scores:{layer}", f"layer {layer}"):
            if key in orders:
                return value_of(orders[key]), orders[key]
        return None, None
    if isinstance(orders, (list, tuple)):
        for entry in orders:
            if getattr(entry, "layer", None) == layer or getattr(entry, "block", None) == f"scores:{layer}":
                return value_of(entry), entry
        if all(isinstance(e, (int, np.integer)) for e in orders) and 1 <= layer <= len(orders):
            return int(orders[layer - 1]), orders[layer - 1]
    return None, None


def _sign_flip_count(arch: Architecture, seed: int):
    """``(order, method, unsettled)``: :func:`~symattn.effective.sign_group_order`, checked numerically.

    The value is the one sign-group computation that ``report`` and
    ``identify`` print; each flip ``Q_i -> -Q_i`` (every set of layers up to
    6 layers, else the generators of the group and each single layer) is
    compared at a random rational point in 60-digit mpmath with what
    :func:`~symattn.effective.flip_preserves_output` says.  ``unsettled``
    names the flips that disagree (None when all agree).
    """
    from itertools import combinations

    from ..algebra.domains import MpmathDomain
    from ..effective import flip_preserves_output, sign_flip, sign_group_order
    from ..model import forward

    order = sign_group_order(arch)
    rule = "even (or one-token) layers flip freely, lightning layers in pairs"
    if any(n.is_generic for n in arch.normalizers):
        return order, (f"effective.sign_group_order = {order} ({rule}); a generic normalizer cannot be "
                       "evaluated numerically, so no independent check"), None
    count = len(arch.units())  # the heads in parameter order: the layers when each has one head
    layers = range(1, count + 1)
    if count <= 6:
        subsets = [s for size in range(1, count + 1) for s in combinations(layers, size)]
    else:  # each head alone, and consecutive pairs (they generate the lightning part)
        subsets = [(i,) for i in layers] + [(i, i + 1) for i in range(1, count)]
    rng = random.Random(seed)
    values = [sp.Rational(rng.randint(-30, 30), rng.randint(10, 40)) for _ in range(arch.param_count)]
    params = arch.parameters_from_flat(values)
    X = [[sp.Rational(rng.randint(-30, 30), rng.randint(10, 40)) for _ in range(arch.tokens)]
         for _ in range(arch.widths[0])]
    domain = MpmathDomain(dps=60)
    mp = domain._mpmath
    reference = forward(arch, params, X, domain)
    scale = max(mp.mpf(1), max(abs(v) for v in reference.flat))
    disagreeing = []
    for subset in subsets:
        flipped = forward(arch, sign_flip(params, subset), X, domain)
        difference = max(abs(a - b) for a, b in zip(flipped.flat, reference.flat))
        if (difference <= scale * mp.mpf(10) ** -45) != flip_preserves_output(arch, subset):
            disagreeing.append(list(subset))
    method = (f"{len(subsets)} sign flips Q_i -> -Q_i compared with F at a random rational point and input "
              f"(to 45 of 60 digits, mpmath): "
              + ("each" if not disagreeing else f"the flips of layers {disagreeing} DISAGREE; the others")
              + f" agrees with effective.sign_group_order = {order} ({rule})")
    return order, method, (f"numerical check disagrees for {disagreeing}" if disagreeing else None)


def _verdict(claimed: int, computed, unsettled: str | None):
    if computed is None or unsettled:
        return None
    return claimed == computed


def check_number_claim(engine: ClaimEngine, text: str) -> ClaimCheck:
    arch = engine.arch
    quantity, layer, claimed = parse_claim(text, arch.layers)
    if quantity == "contact_order":
        computed, method = engine.contact_order(layer)
        return ClaimCheck(text, quantity, layer, claimed, computed,
                          _verdict(claimed, computed, engine._spectrum_settled()), method)
    if quantity == "multiplicity":
        contact, note = engine.contact_order(layer)
        if contact is None:
            return ClaimCheck(text, quantity, layer, claimed, None, None, note)
        computed = engine.spectrum.multiplicity(contact)
        block = sum(histogram.get(contact, 0) for name, histogram in engine.spectrum.blocks.items()
                    if name == f"scores:{layer}" or name.startswith(f"scores:{layer}:"))  # every head
        method = (f"multiplicity of exponent {contact} (layer {layer}'s contact order) in the whole spectrum; "
                  f"layer {layer}'s own block contributes {block}; " + note)
        return ClaimCheck(text, quantity, layer, claimed, computed,
                          _verdict(claimed, computed, engine._spectrum_settled()), method)
    if quantity == "identification_order":
        computed, method = engine.identification_order(layer)
        unsettled = engine._spectrum_settled() if "contact order + 1" in method else None
        return ClaimCheck(text, quantity, layer, claimed, computed, _verdict(claimed, computed, unsettled), method)
    if quantity in ("kernel", "dimension"):
        s = engine.spectrum
        computed = s.kernel if quantity == "kernel" else s.rank
        what = ("kernel = #params - rank of the native Jacobian J(eps)" if quantity == "kernel"
                else "dimension = rank of the native Jacobian J(eps) over power series")
        unsettled = engine._spectrum_settled() or (None if s.rank_certified else "the rank is only a lower bound")
        method = what + ("" if not unsettled else f" (not settled: {unsettled})") + "; " + engine._spectrum_note()
        return ClaimCheck(text, quantity, None, claimed, computed, _verdict(claimed, computed, unsettled), method)
    computed, method, unsettled = engine.sign_flips()
    return ClaimCheck(text, quantity, None, claimed, computed, _verdict(claimed, computed, unsettled), method)
