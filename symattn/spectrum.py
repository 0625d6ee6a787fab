"""The native Jacobian along a curve, its exact decay spectrum, and the predicted one.

The native Jacobian ``J(eps)`` stacks the derivatives of every output entry,
on every input of a bank, in every native parameter, at the point
``theta_eps`` of a curve.  Its Smith-form valuations over ``GF(p)[[eps]]``
are the exponents ``e_j`` in ``sigma_j(eps) ~ c_j eps^e_j`` (MATH.md, sections
5-6).  One forward pass over first-order jets of truncated series computes
``J(eps)`` for the whole bank at once.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.spectrum import decay_spectrum
>>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
>>> result = decay_spectrum(arch, progress=False)
>>> result.exponents
{0: 4, 1: 3, 5: 3}
>>> result.kernel, result.unresolved, result.separating
(6, 0, True)
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np

from ._cluster import check_workers, uses_dask
from ._format import (
    FormattedResult, cell_text, latex_escape, latex_method, latex_prose, latex_tabular, markdown_method, plain_words,
)
from .naming import texttt
from .adaptive import (
    DEEPEN, GROW_BANK, Growth, PhaseBar, Step, adapt, degeneracies, grown_bank, refuse_renamed, schwartz_zippel_bound,
)
from .algebra.linalg import products_reported, series_matmul
from .algebra.valuations import smith_valuations
from .curves import Curve, collapse
from .effective import effective_block_dimensions, has_bottleneck
from .errors import BankError, DomainError, ResourceLimitError, SymattnError, TruncationError
# The points, banks and Jacobians live in symattn.jacobian; the names are re-exported here,
# where earlier versions defined them.
from .jacobian import (  # noqa: F401
    BANK_ENTRIES,
    DEFAULT_PRIMES,
    bank_residues,
    block_columns,
    check_prime,
    compress_rows,
    curve_series,
    degree_bound,
    gauge_tangent_series,
    jacobian_from_series,
    forward_operations,
    jacobian_series,
    jacobian_series_in_groups,
    ORBIT_BOUND_BUDGET,
    estimate_rank_bound,
    native_rank_bound,
    orbit_bound_bytes,
    random_bank,
    random_point,
    symmetry_orbit_bound,
    transcendental_constants,
    field_note,
    field_primes,
    validate_bank,
)
from .model import Architecture, require_architecture, require_seed

__all__ = [
    "Spectrum",
    "PredictedSpectrum",
    "decay_spectrum",
    "automatic_bank_size",
    "predicted_spectrum",
    "contact_order",
    "spectrum_at",
    "MAX_TRUNCATION",
]

#: The deepest truncation :func:`decay_spectrum` computes (``max_truncation``'s default).  No
#: exactness bound depends on it: the compiled products reduce their accumulators every 255
#: products and the BLAS ones cut every inner dimension into chunks whose float64 sums are
#: exact, whatever the length of the series.  It bounds the time, which grows with the square
#: of the truncation: seven layers (contact order 1457, eps^1459, deepened at most once to
#: eps^2918) compute, in about 2.5 minutes and 2.1 GB on a 2-core machine; eight layers would
#: need eps^4375, about ten times as long and, estimated, 12 GiB.
MAX_TRUNCATION = 4096


def contact_order(layer: int, k: int) -> int:
    """The contact order ``2k 3^(i-1) - 1`` claimed for layer ``i`` (MATH.md section 5).

    Examples
    --------
    >>> [contact_order(i, 1) for i in (1, 2, 3, 4)]
    [1, 5, 17, 53]
    >>> [contact_order(i, 2) for i in (1, 2, 3)]
    [3, 11, 35]
    """
    if layer < 1 or k < 1:
        raise SymattnError(f"contact_order needs layer >= 1 and k >= 1, got layer={layer}, k={k}")
    return 2 * k * 3 ** (layer - 1) - 1


def _histogram(values) -> dict[int, int]:
    out: dict[int, int] = {}
    for v in values:
        out[int(v)] = out.get(int(v), 0) + 1
    return dict(sorted(out.items()))


def _histogram_difference(larger: dict, smaller: dict) -> dict:
    out = {}
    for key in sorted(set(larger) | set(smaller)):
        diff = larger.get(key, 0) - smaller.get(key, 0)
        if diff:
            out[key] = diff
    return out


def _blocks_json(blocks):
    """Block -> {exponent: multiplicity} with the exponents as JSON keys (strings), as ``symattn spectrum --json``."""
    if blocks is None:
        return None
    return {block: {str(e): m for e, m in histogram.items()} for block, histogram in blocks.items()}


@dataclass(frozen=True)
class PredictedSpectrum:
    """The spectrum the theory predicts: exponents per block and the kernel.

    ``exponents`` is ``None`` when the layers have different ``k`` (no formula is claimed);
    for the variants (heads, causal mask, residual stream) nothing is
    claimed: ``exponents``, ``blocks``, ``kernel`` and ``rank`` are ``None``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> predicted = predicted_spectrum(Architecture.uniform(layers=2, width=2, tokens=3))
    >>> predicted.exponents, predicted.kernel, predicted.rank
    ({0: 4, 1: 3, 5: 3}, 6, 10)
    >>> predicted.blocks["scores:2"]      # exponent -> multiplicity, ints as in ``exponents``
    {5: 3}
    >>> mixed = Architecture.uniform(layers=2, normalizer=["softmax", "cosh"])
    >>> predicted_spectrum(mixed).exponents is None      # k = 1 and k = 2: no formula
    True
    >>> causal = predicted_spectrum(Architecture.uniform(layers=2, causal=True))
    >>> causal.exponents, causal.kernel, causal.note
    (None, None, 'no formula claimed for causal mask; the spectrum is computed')
    """

    exponents: dict | None
    blocks: dict | None
    kernel: int | None
    rank: int | None
    note: str

    def to_json(self) -> dict:
        return {
            "spectrum": None if self.exponents is None else {str(e): m for e, m in self.exponents.items()},
            "blocks": _blocks_json(self.blocks),
            "kernel": self.kernel,
            "rank": self.rank,
            "note": self.note,
        }


def predicted_spectrum(arch: Architecture) -> PredictedSpectrum:
    """Contact orders ``2k 3^(i-1) - 1``, multiplicities from the effective block dimensions.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> predicted_spectrum(Architecture.uniform(layers=3, normalizer="cosh")).exponents
    {0: 4, 3: 3, 11: 3, 35: 3}
    >>> one_token = predicted_spectrum(Architecture.uniform(layers=2, tokens=1))
    >>> one_token.exponents, one_token.kernel
    ({0: 4}, 12)
    """
    arch = require_architecture(arch)
    if not arch.is_plain:
        return PredictedSpectrum(None, None, None, None,
                                 f"no formula claimed for {arch.describe_variant()}; the spectrum is computed")
    dims = effective_block_dimensions(arch)
    ks = {n.k for n in arch.normalizers}
    rank, _ = native_rank_bound(arch)
    kernel = arch.param_count - rank
    if arch.degenerate and None not in ks:  # one token: S(A) = 1 for every input, the scores never appear
        return PredictedSpectrum({0: rank}, {"values": {0: rank}}, kernel, rank,
                                 f"one token: every S(A) is the constant 1, so only the value map is seen "
                                 f"(order 0); kernel = #params - {rank} = {kernel}")
    if None in ks:
        return PredictedSpectrum(None, None, kernel, rank,
                                 "lightning attention: no formula is claimed; the spectrum is computed")
    if len(ks) != 1:
        return PredictedSpectrum(None, None, kernel, rank,
                                 "layers have different k: no formula is claimed; the spectrum is computed")
    (k,) = ks
    if has_bottleneck(arch):
        # What_i = P_{i-1}^T W_i P_{i-1} lives in the row space of P_{i-1}, a parameter itself: the blocks are
        # not free, their dimensions are not the multiplicities, and MATH.md claims constant widths only
        return PredictedSpectrum(None, None, kernel, rank,
                                 f"a hidden width below the input width (widths {list(arch.widths)}): the effective blocks "
                                 f"are not free and no multiplicities are claimed; contact orders "
                                 f"2k 3^(i-1) - 1 with k = {k}; kernel = #params - {rank} = {kernel}")
    blocks = {"values": {0: dims["values"]}}
    exponents: dict[int, int] = {0: dims["values"]}
    for i in range(1, arch.layers + 1):
        e = contact_order(i, k)
        blocks[f"scores:{i}"] = {e: dims[f"scores:{i}"]}
        exponents[e] = exponents.get(e, 0) + dims[f"scores:{i}"]
    note = (f"contact order 2k 3^(i-1) - 1 with k = {k}; multiplicities are the effective "
            f"block dimensions; kernel = #params - effective dimension = {kernel}")
    return PredictedSpectrum(dict(sorted(exponents.items())), blocks, kernel, rank, note)


@dataclass(frozen=True)
class SpectrumRun:
    """One computation at one prime, point and bank."""

    prime: int
    seed: int
    bank_size: int
    truncation: int
    exponents: dict
    blocks: dict
    resolved_rank: int
    gauge_rank: int
    unresolved: int
    gauge_annihilated: bool

    def same_result(self, other: "SpectrumRun") -> bool:
        return (self.exponents, self.resolved_rank, self.unresolved) == (
            other.exponents, other.resolved_rank, other.unresolved)


def spectrum_at(arch: Architecture, curve: Curve, bank: np.ndarray, p: int, seed: int, truncation: int,
                progress=None, extra_banks=(), block_table: bool = True, rank_bound: int | None = None,
                stage: str = "", parts=None, inputs_per_task: int = 1) -> SpectrumRun | list[SpectrumRun]:
    """The spectrum at one prime, point (from ``seed``) and bank of residues.

    ``progress`` is a :class:`~symattn.adaptive.PhaseBar` (each phase named,
    prefixed by ``stage``; the Smith form's pivots counted against
    ``rank_bound``) or a callable called after each pivot.

    With ``extra_banks``, the same point is used for every bank, one forward
    pass computes all of them, and a list of runs (``bank`` first) is returned.
    The block table (one Smith form per prefix of column blocks) is computed
    for ``bank`` only, and only with ``block_table=True``; every other run has
    ``blocks == {}`` and one Smith form of the whole Jacobian, which is all that
    :meth:`SpectrumRun.same_result` compares.

    With ``parts`` (see :func:`symattn.jacobian.jacobian_series_in_groups`),
    the forward pass runs ``inputs_per_task`` inputs a call there (Dask
    workers); the Jacobian, hence the run, is the same.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> from symattn.jacobian import DEFAULT_PRIMES, random_bank
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=2)
    >>> p = DEFAULT_PRIMES[0]
    >>> run = spectrum_at(arch, collapse(), random_bank(arch, 3, p, 0), p, seed=0, truncation=3)
    >>> run.exponents, run.resolved_rank, run.gauge_rank, run.unresolved
    ({0: 4, 1: 3}, 7, 1, 0)
    >>> short = spectrum_at(arch, collapse(), random_bank(arch, 3, p, 0), p, seed=0, truncation=1)
    >>> short.exponents, short.unresolved      # eps^1 is not resolved mod eps^1
    ({0: 4}, 4)
    >>> whole = spectrum_at(arch, collapse(), random_bank(arch, 3, p, 0), p, seed=0, truncation=3,
    ...                     block_table=False)
    >>> whole.same_result(run), run.blocks, whole.blocks
    (True, {'scores:1': {1: 3}, 'values': {0: 4}}, {})
    """
    phases = progress if isinstance(progress, PhaseBar) else PhaseBar(None)
    tick = phases.tick if isinstance(progress, PhaseBar) else progress
    point, coefficient_values = random_point(arch, p, seed)
    banks = [bank, *extra_banks]
    inputs_count = sum(len(b) for b in banks)
    # the forward pass over jets is most of the time: one step per operation of the pass (counted beforehand
    # over shapes), and the clock kept moving between them by every series product
    if parts is None:
        phases.phase(f"{stage}forward pass over jets ({inputs_count} inputs, eps^{truncation})",
                     total=forward_operations(arch) if phases.bar is not None else None, unit="operation")
        with products_reported(phases.alive):
            J_all = jacobian_series(arch, curve, np.concatenate(banks), point, p, truncation, coefficient_values,
                                    on_operation=phases.tick)
    else:
        phases.phase(f"{stage}forward pass over jets on the workers (eps^{truncation})", total=inputs_count,
                     unit="input")
        J_all = jacobian_series_in_groups(arch, curve, np.concatenate(banks), point, p, truncation,
                                          coefficient_values, group=inputs_per_task, parts=parts,
                                          on_inputs=phases.tick)
    with products_reported(phases.alive):  # one step: the tangents and their rank; the clock moves
        rows_per_input = arch.widths[-1] * arch.tokens
        phases.phase(f"{stage}gauge tangents (eps^{truncation})", total=1, unit="set")
        gauge = gauge_tangent_series(arch, curve, point, p, truncation)
        gauge_rank = smith_valuations(gauge, p).resolved_rank if len(gauge) else 0
        phases.tick()
    columns = block_columns(arch)
    order = list(columns)  # scores:1 .. scores:l (per head where a layer has several), then values
    runs, start = [], 0
    for index, inputs in enumerate(banks):
        J = compress_rows(J_all[start:start + rows_per_input * len(inputs)], p, seed)
        start += rows_per_input * len(inputs)
        blocks, previous, chosen = {}, {}, []
        # each prefix of column blocks is a Smith form of its own: only where a block table is wanted
        prefixes = [name for name in order if columns[name]] if block_table and index == 0 else []
        if len(prefixes) > 1:
            phases.phase(f"{stage}block table (Smith form per block, bank of {len(inputs)})",
                         total=len(prefixes) - 1, unit="block")
        with products_reported(phases.alive):
            for name in prefixes[:-1]:
                chosen = chosen + columns[name]
                histogram = _histogram(smith_valuations(J[:, chosen, :], p).exponents)
                blocks[name] = _histogram_difference(histogram, previous)
                previous = histogram
                phases.tick()
            # the pivots found are a rank, at most the proven rank bound (or the number of columns)
            phases.phase(f"{stage}Smith form (bank of {len(inputs)}, eps^{truncation})",
                         total=min(J.shape[1], rank_bound) if rank_bound is not None else J.shape[1], unit="pivot")
            full = smith_valuations(J, p, progress=tick)
        if prefixes:
            histogram = _histogram(full.exponents)
            blocks[prefixes[-1]] = _histogram_difference(histogram, previous)
        # the gauge directions must lie in the kernel of J(eps), exactly mod eps^N
        annihilated = True
        if len(gauge):
            annihilated = not series_matmul(J, gauge.transpose(1, 0, 2), p).any()
        # the rank is at most the resolved pivots plus the rows left, and at most #params - gauge rank
        unresolved = max(0, min(arch.param_count - full.resolved_rank - gauge_rank, full.remaining_rows))
        runs.append(SpectrumRun(p, seed, len(inputs), truncation, _histogram(full.exponents), blocks,
                                full.resolved_rank, gauge_rank, unresolved, annihilated))
    return runs if extra_banks else runs[0]


@dataclass(frozen=True)
class Spectrum(FormattedResult):
    """The exact decay spectrum of the native Jacobian along a curve.

    Attributes
    ----------
    exponents : dict
        Exponent -> multiplicity, every one exact below the truncation.
    blocks : dict
        Block name (``scores:i``, ``values``) -> {exponent: multiplicity}, with
        int exponents as in ``exponents`` (strings only in JSON):
        the exponents that appear when that block's columns join those of the
        earlier blocks (order ``scores:1 .. scores:l``, then ``values``).
    rank, kernel : int
        Rank of ``J(eps)`` and ``#params - rank`` when certified; otherwise
        the rank is a lower bound and the kernel the gauge-orbit lower bound.
    unresolved : int
        Directions neither resolved below the truncation nor in the gauge
        kernel: valuation ``>= truncation``, never reported as an exponent.
    blocks_withheld : str
        Why there is no block table (``blocks`` is then empty), or ``""``.
        Blocks are shown only on a bank shown to be separating, and only when
        every count is non-negative and the blocks add up to the spectrum.
    degenerate : tuple of str
        What makes the network degenerate, and why (one token, a score rank
        above the width: :func:`symattn.adaptive.degeneracies`); empty when
        nothing does.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> s = decay_spectrum(Architecture.uniform(layers=1, width=2, tokens=2), progress=False)
    >>> s.exponents, s.rank, s.kernel, s.params
    ({0: 4, 1: 3}, 7, 1, 8)
    >>> s.multiplicity(1), s.blocks
    (3, {'scores:1': {1: 3}, 'values': {0: 4}})
    >>> s.rank_certified, s.separating, s.confirmed, s.matches_prediction
    (True, True, True, True)
    """

    architecture: dict
    curve: str
    params: int
    exponents: dict
    blocks: dict
    rank: int
    kernel: int
    unresolved: int
    truncation: int
    bank: int
    primes: tuple
    seeds: tuple
    separating: bool
    separation_note: str
    confirmed: bool
    rank_certified: bool
    gauge_kernel_checked: bool
    error_bound: float
    degree_bound: int
    predicted: PredictedSpectrum
    method: str = field(default="")
    blocks_withheld: str = field(default="")
    degenerate: tuple = field(default=())

    def __post_init__(self):
        # a block table is a claim about the network: never show one that is not
        problem = _block_table_problem(self)
        if problem is not None:
            object.__setattr__(self, "blocks", {})
            object.__setattr__(self, "blocks_withheld", problem)

    @property
    def matches_prediction(self) -> bool | None:
        """Whether the spectrum and kernel are the predicted ones; None when the comparison is not decided.

        None when no prediction is claimed; when the bank is not shown to be
        separating (the result would describe the bank, not the network: a
        bank that is too small is never a disagreement); or when the spectrum
        agrees below the truncation and the unresolved directions could be the
        predicted deeper exponents.  :attr:`prediction_verdict` says which.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> small = decay_spectrum(Architecture.uniform(layers=2), bank=1, progress=False)
        >>> small.matches_prediction, small.prediction_verdict.split(" (")[0]
        (None, 'undecided: the bank of 1 inputs does not separate')
        """
        return self._comparison()[0]

    @property
    def prediction_verdict(self) -> str:
        """The comparison with the prediction in words: ``yes``, ``no``, ``undecided: ...`` or why none.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> decay_spectrum(Architecture.uniform(layers=1, tokens=2), progress=False).prediction_verdict
        'yes'
        """
        return self._comparison()[1]

    def _comparison(self) -> tuple:
        """``(matches, words)``: never ``False`` when a premise of the comparison fails."""
        if self.predicted.kernel is None:  # the variant's words may hold "; " themselves: cut the tail only
            words = self.predicted.note.removesuffix("; the spectrum is computed")
            # whole, or (many distinct layers) a bounded pointer to the architecture that names them
            return None, words if len(words) <= 240 else "no formula claimed for this network (see its architecture)"
        if self.predicted.exponents is None:
            return None, "no formula claimed: " + self.predicted.note.split(":")[0]
        # a bank that is too small gives too low a rank or spurious high exponents (MATH.md section 5): the
        # comparison is then about the bank, not the network, and never a disagreement
        if not self.separating and "too small" in self.separation_note:
            return None, (f"undecided: the bank of {self.bank} inputs does not separate ({self.separation_note}); "
                          "raise --bank")
        if self.unresolved:
            below = {e: m for e, m in self.predicted.exponents.items() if e < self.truncation}
            deeper = sum(m for e, m in self.predicted.exponents.items() if e >= self.truncation)
            if self.exponents == below and deeper == self.unresolved:
                return None, (f"undecided: {self.unresolved} unresolved at truncation {self.truncation} "
                              "(raise --truncation)")
        if self.unresolved:
            # a larger independent bank gives the same exponents below the truncation, and they differ there
            return self._decided(False)
        if not self.separating:  # everything resolved, but the rank stays below the proven bound
            return None, (f"undecided: the bank of {self.bank} inputs is not shown to separate "
                          f"({self.separation_note}); raise --bank")
        return self._decided(self.exponents == self.predicted.exponents and self.kernel == self.predicted.kernel)

    def _decided(self, matches: bool) -> tuple:
        word = "yes" if matches else "no"
        if self.architecture.get("tokens") == 1:  # the prediction is one token's, not the contact orders
            return matches, f"{word} (the one-token prediction: the value map alone, at order 0)"
        return matches, word

    def _verdict_text(self) -> str:
        return self.prediction_verdict

    def _predicted_kernel(self) -> str:
        return "-: no formula claimed" if self.predicted.kernel is None else str(self.predicted.kernel)

    def multiplicity(self, exponent: int) -> int:
        """Multiplicity of ``exponent`` in the computed spectrum (0 when absent)."""
        return self.exponents.get(exponent, 0)

    def block_comparison(self) -> list[dict]:
        """Predicted against computed exponents, block by block (``scores:1..l``, ``values``).

        Empty when the block table is withheld (see ``blocks_withheld``).

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> s = decay_spectrum(Architecture.uniform(layers=2), progress=False)
        >>> s.block_comparison()[1]
        {'block': 'scores:2', 'computed': {5: 3}, 'predicted': {5: 3}, 'agrees': True}
        >>> small = decay_spectrum(Architecture.uniform(layers=2), bank=1, progress=False)
        >>> small.separating, small.block_comparison()
        (False, [])
        >>> small.blocks_withheld.startswith("the bank of 1 inputs is not shown to be separating")
        True
        """
        def as_ints(histogram):
            return None if histogram is None else {int(e): m for e, m in histogram.items()}

        rows = []
        for block, computed in self.blocks.items():
            predicted = None if self.predicted.blocks is None else as_ints(self.predicted.blocks.get(block))
            computed = as_ints(computed)
            rows.append({"block": block, "computed": computed, "predicted": predicted,
                         "agrees": None if predicted is None else predicted == computed})
        return rows

    def _block_json(self) -> list | None:
        if self.blocks_withheld:
            return None

        def as_strings(histogram):
            return None if histogram is None else {str(e): m for e, m in histogram.items()}

        return [{**row, "computed": as_strings(row["computed"]), "predicted": as_strings(row["predicted"])}
                for row in self.block_comparison()]

    def to_json(self) -> dict:
        """A JSON-ready dict with the keys of ``symattn spectrum --json``."""
        return {
            "architecture": self.architecture,
            "curve": self.curve,
            "params": self.params,
            "rank": self.rank,
            "kernel": self.kernel,
            "spectrum": {str(e): m for e, m in self.exponents.items()},
            "blocks": None if self.blocks_withheld else _blocks_json(self.blocks),
            "blocks_withheld": self.blocks_withheld or None,
            "unresolved": self.unresolved,
            "unresolved_valuation": f">= {self.truncation}" if self.unresolved else None,
            "truncation": self.truncation,
            "bank": self.bank,
            "separating": self.separating,
            "separation_note": self.separation_note,
            "primes": list(self.primes),
            "seeds": list(self.seeds),
            "confirmed": self.confirmed,
            "rank_certified": self.rank_certified,
            "error_bound": self.error_bound,
            "degree_bound": self.degree_bound,
            "predicted": self.predicted.to_json()["spectrum"],
            "predicted_kernel": self.predicted.kernel,
            "matches_prediction": self.matches_prediction,
            "prediction_verdict": self.prediction_verdict,
            "degenerate": list(self.degenerate),
            "block_comparison": self._block_json(),
            "method": self.method,
        }

    def _rows(self):
        # an exponent at or past the truncation is not resolved when directions remain unresolved:
        # its computed multiplicity is unknown ("?"), not 0
        predicted = self.predicted.exponents or {}
        keys = sorted(set(self.exponents) | set(predicted))
        return [(e, "?" if self.unresolved and e >= self.truncation else self.exponents.get(e, 0),
                 predicted.get(e, 0) if self.predicted.exponents else None)
                for e in keys]

    def __str__(self) -> str:
        lines = [f"decay spectrum along {self.curve}",
                 f"{'exponent':>9} {'computed':>9} {'predicted':>10}"]
        for e, m, q in self._rows():
            lines.append(f"{e:>9} {m:>9} {'-' if q is None else q:>10}")
        if self.unresolved:
            lines.append(f"{'>= ' + str(self.truncation):>9} {self.unresolved:>9} {'':>10}")
        lines.append(f"rank {self.rank}{'' if self.rank_certified else ' (lower bound)'}, kernel {self.kernel}"
                     f" (predicted {self._predicted_kernel()}), params {self.params}")
        lines.append(f"bank {self.bank} inputs, separating: {cell_text(self.separating)} ({self.separation_note})")
        lines += [f"degenerate: {reason}" for reason in self.degenerate]
        lines.append(f"matches the prediction: {self.prediction_verdict}")
        if self.blocks_withheld:
            lines.append(f"no block table: {self.blocks_withheld}")
        lines.append(f"truncation eps^{self.truncation}, primes {plain_words(list(self.primes))}, "
                     f"confirmed: {cell_text(self.confirmed)}, error probability <= {self.error_bound:.1e}")
        return "\n".join(lines)

    def _notes(self) -> list[str]:
        """The plain-text notes under the tables: curve, rank, verdict, bank, truncation, method."""
        return [
            f"curve: {self.curve}",
            f"rank {self.rank}{'' if self.rank_certified else ' (lower bound)'}, kernel {self.kernel} "
            f"(predicted {self._predicted_kernel()}), {self.params} parameters",
            *[f"degenerate: {reason}" for reason in self.degenerate],
            f"matches the prediction: {self._verdict_text()}",
            f"bank of {self.bank} inputs, separating: {cell_text(self.separating)} ({self.separation_note})",
            f"truncation eps^{self.truncation}; primes {plain_words(list(self.primes))}; "
            f"confirmed: {cell_text(self.confirmed)}; "
            f"error probability <= {self.error_bound:.1e}",
        ]

    def _block_cells(self, show):
        for row in self.block_comparison():
            agrees = {None: "-", True: "yes", False: "no"}[row["agrees"]]
            yield row["block"], show(row["computed"]), show(row["predicted"]), agrees

    def to_markdown(self) -> str:
        """A Markdown table of computed against predicted exponents, the block table, and how it was obtained.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> s = decay_spectrum(Architecture.uniform(layers=2), truncation=3, progress=False)
        >>> [line for line in s.to_markdown().splitlines() if "prediction" in line]
        ['- matches the prediction: undecided: 3 unresolved at truncation 3 (raise --truncation)']
        """
        lines = ["| exponent | computed | predicted |", "|---:|---:|---:|"]
        for e, m, q in self._rows():
            lines.append(f"| {e} | {m} | {'-' if q is None else q} |")
        if self.unresolved:
            lines.append(f"| >= {self.truncation} (unresolved) | {self.unresolved} | |")

        def show(histogram):
            if histogram is None:
                return "no formula"
            return ", ".join(f"{m} x eps^{e}" for e, m in histogram.items()) or "none"

        if self.blocks_withheld:
            lines += ["", f"No block table: {self.blocks_withheld}."]
        else:
            lines += ["", "| block | computed | predicted | agrees |", "|---|---|---|---|"]
            lines += [f"| {b} | {c} | {p} | {a} |" for b, c, p, a in self._block_cells(show)]
        lines += [""] + [f"- {note}" for note in self._notes()] + [markdown_method(self.method)]
        return "\n".join(lines)

    def _latex_body(self) -> str:
        """LaTeX tables of computed against predicted exponents and per block, with the notes and the method."""
        rows = []
        for e, m, q in self._rows():
            rows.append((e, m, "--" if q is None else q))
        if self.unresolved:
            rows.append((rf"$\geq {self.truncation}$", self.unresolved, ""))
        parts = [latex_tabular(rows, "rrr", header=(r"exponent $e$", "computed", "predicted"),
                               footer=[rf"\multicolumn{{3}}{{l}}{{rank {self.rank}, kernel {self.kernel}, "
                                       rf"{self.params} parameters}} \\",
                                       *([rf"\multicolumn{{3}}{{l}}{{{self._latex_caveat()}}} \\"]
                                         if self.blocks_withheld else [])])]

        def show(histogram):
            if histogram is None:
                return "no formula"
            return ", ".join(rf"${m} \times \varepsilon^{{{e}}}$" for e, m in histogram.items()) or "none"

        if self.blocks_withheld:
            parts.append(r"\par\smallskip\noindent " + latex_escape(f"No block table: {self.blocks_withheld}."))
        else:
            # below the exponents, not beside them: with several heads the two would not fit side by side
            parts += ["\n\\medskip\n\\noindent", latex_tabular(
                [(texttt(b), c, p, a) for b, c, p, a in self._block_cells(show)], "llll",
                header=("block", "computed", "predicted", "agrees"))]
        notes = "\n".join(rf"\item {latex_prose(note)}" for note in self._notes())
        parts += ["\n\\begin{itemize}\\setlength{\\itemsep}{0pt}\\small\n" + notes + "\n\\end{itemize}",
                  latex_method(self.method)]
        return "\n".join(parts)

    def _latex_math(self) -> str:
        # MathJax renders math only: an array, not a tabular
        rows = [rf"{e} & {m} & {'-' if q is None else q} \\" for e, m, q in self._rows()]
        if self.unresolved:
            rows.append(rf"\geq {self.truncation} & {self.unresolved} & \\")
        return ("\\begin{array}{rrr} e & \\text{computed} & \\text{predicted} \\\\ \\hline "
                + " ".join(rows)
                + rf" \hline \end{{array}} \qquad \text{{rank {self.rank}, kernel {self.kernel}, "
                  rf"{self.params} parameters"
                + (f"; {self._latex_caveat()}" if self.blocks_withheld else "") + "}")

    def _latex_caveat(self) -> str:
        # short and free of LaTeX specials: the full reason is in blocks_withheld
        if not self.separating:
            return f"bank of {self.bank} inputs not shown separating: no block table"
        return "no block table: the exponents cannot be attributed to blocks"


def _block_table_problem(spectrum: Spectrum) -> str | None:
    """Why ``spectrum.blocks`` cannot be shown as a block table, or None when it can."""
    if spectrum.blocks_withheld:
        return spectrum.blocks_withheld
    if not spectrum.blocks:
        return None
    if not spectrum.separating:
        return (f"the bank of {spectrum.bank} inputs is not shown to be separating ({spectrum.separation_note}): "
                "its blocks would describe the bank, not the network")
    negative = {block: {e: m for e, m in histogram.items() if m < 0} for block, histogram in spectrum.blocks.items()}
    negative = {block: counts for block, counts in negative.items() if counts}
    if negative:
        return (f"adding each block's columns in turn gives negative counts {negative}, so the exponents "
                "cannot be attributed to blocks along this curve")
    total: dict[int, int] = {}
    for histogram in spectrum.blocks.values():
        for e, m in histogram.items():
            total[int(e)] = total.get(int(e), 0) + m
    if {e: m for e, m in total.items() if m} != {e: m for e, m in spectrum.exponents.items() if m}:
        return f"the block counts add up to {dict(sorted(total.items()))}, not to the spectrum {spectrum.exponents}"
    return None


def _initial_truncation(arch: Architecture, curve: Curve) -> int:
    ks = [n.k or 1 for n in arch.normalizers]  # lightning: k taken as 1 for the first guess
    # contact orders grow by a factor 3 per layer; start above the deepest predicted one
    deepest = max(contact_order(i, ks[i - 1]) for i in range(1, arch.layers + 1))
    if curve.input_power:
        deepest = 2 * deepest + 2
    return deepest + 2


def decay_spectrum(arch: Architecture, curve: Curve | None = None, bank="auto", truncation="auto", seed: int = 0,
                   primes=DEFAULT_PRIMES, confirm: bool = True, progress: bool = True,
                   max_bank: int = 64, max_truncation: int = MAX_TRUNCATION, max_memory=None, scheduler=None,
                   workers: int | None = None, **renamed) -> Spectrum:
    """The exact decay spectrum of the native Jacobian along ``curve`` (default: collapse).

    Parameters
    ----------
    arch : Architecture
    curve : Curve, optional
        Default :func:`symattn.curves.collapse`.
    bank : "auto", int or list of matrices
        ``"auto"`` grows a random bank until it is certified separating;
        an int is a random bank of that size; a list is used as given.
    truncation : "auto" or int
        Truncation ``N``: series kept mod ``eps^N`` (coefficients of
        ``eps^0 .. eps^(N-1)``); ``"auto"`` starts above the predicted deepest
        exponent and doubles until nothing is unresolved or ``max_truncation``
        is reached.  (Earlier versions called it ``order``; ``order=`` and
        ``max_order=`` are refused with a message naming the new spelling.)
    seed : int
        Seed of the random point and bank.
    primes : sequence of int
        The first computes; the second, at another point and an independent
        bank, confirms (``confirm=True``).
    progress : bool
        Show a progress bar (on a terminal only): the phase running (forward
        pass over jets, block table, Smith form) and, in the Smith form, the
        pivots found against the rank bound.
    max_bank, max_truncation : int
        Caps of the automatic growth of the bank and of the truncation
        (default 64 and :data:`MAX_TRUNCATION`, 4096: seven layers fit).
    max_memory : int or str, optional
        Memory limit (e.g. ``"16G"``; default ``$SYMATTN_MAX_MEMORY`` or half the
        machine).  Each step (first run, larger bank, deeper truncation) is
        estimated before it starts (:func:`symattn.limits.spectrum_memory`).
    scheduler : str or distributed.Client, optional
        Run the forward passes over jets (most of the time) on Dask workers,
        groups of bank inputs per task: the address of a scheduler
        (``tcp://host:8786``), ``"local"`` or a client.  The row compression
        and the Smith forms stay here; the Jacobian, hence the spectrum, is
        the same as in one process, and a task whose worker dies is run again.
    workers : int, optional
        Worker processes of a local Dask cluster started for this computation
        (when no ``scheduler`` is given).

    Returns
    -------
    Spectrum

    Raises
    ------
    ResourceLimitError
        When a step would need more memory than the limit, or the bank is
        beyond :data:`symattn.limits.MAX_BANK`; raised before the step allocates.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=2)
    >>> result = decay_spectrum(arch, progress=False)
    >>> result.exponents, result.predicted.exponents, result.truncation
    ({0: 4, 1: 3}, {0: 4, 1: 3}, 3)
    >>> short = decay_spectrum(arch, truncation=1, progress=False)     # too short to resolve eps^1
    >>> short.exponents, short.unresolved, short.rank_certified
    ({0: 4}, 4, False)
    """
    refuse_renamed("decay_spectrum", renamed)
    arch = require_architecture(arch)
    seed = require_seed(seed)
    workers = check_workers(workers)
    distributed = uses_dask(scheduler, workers)  # the address checked before any work
    curve = collapse() if curve is None else curve
    curve.validate(arch)
    primes = tuple(check_prime(p) for p in primes)
    if not primes:
        raise DomainError("give at least one prime")
    primes = field_primes(arch, primes)  # algebraic Taylor coefficients: primes with a root of their field
    requested = truncation
    if requested == "auto":
        truncation, auto_truncation = _initial_truncation(arch, curve), True
    else:
        if isinstance(requested, bool) or not isinstance(requested, (int, np.integer)) or requested < 1:
            raise TruncationError(f"truncation must be a positive integer or 'auto', got {requested!r}")
        truncation, auto_truncation = int(requested), False
    if truncation > max_truncation:
        if auto_truncation:  # the depth of the network asks for it: say which flag and what fits
            _require_series_order(arch, curve, max_truncation)
        raise TruncationError(f"truncation {truncation} exceeds max_truncation {max_truncation}; give truncation "
                              f"<= {max_truncation} (--truncation) or raise max_truncation")

    if not arch.is_plain and orbit_bound_bytes(arch) > ORBIT_BOUND_BUDGET and not distributed:
        # the symmetry orbit's bound below is itself large: the first step's memory is checked first, from a
        # proved bound that needs no big arrays (it is at least the orbit's, so the bank is not underestimated)
        early = automatic_bank_size(arch, estimate_rank_bound(arch)) if bank == "auto" else None
        if early is not None:
            _require_step_memory(arch, curve, early, grown_bank(early), truncation, (early, truncation), bank,
                                 requested, max_memory)
    # the rank a separating bank reaches: a proven upper bound of the rank (the effective dimension, one
    # token's value map, #params minus the symmetry orbit's dimension for the variants)
    eff, eff_reason = native_rank_bound(arch)
    target = "the rank bound"
    user_bank = None
    if isinstance(bank, str):
        if bank != "auto":
            raise BankError(f"bank must be 'auto', a positive integer or a list of inputs, got {bank!r}")
        bank_size, auto_bank = automatic_bank_size(arch, eff), True
    elif isinstance(bank, (bool, float)):
        raise BankError(f"bank must be 'auto', a positive integer or a list of inputs, got {bank!r}")
    elif isinstance(bank, (int, np.integer)):
        if bank < 1:
            raise BankError(f"bank size must be at least 1, got {bank}")
        bank_size, auto_bank = int(bank), False
    else:
        try:
            user_bank = list(bank)
        except TypeError:
            raise BankError(f"bank must be 'auto', a positive integer or a list of d_0 x t inputs, "
                            f"got {bank!r}") from None
        bank_size, auto_bank = len(user_bank), False
        bank_residues(arch, user_bank, primes[0])  # shape check before any work

    def bank_for(p, size, bank_seed):
        if user_bank is not None:
            return bank_residues(arch, user_bank, p)
        return random_bank(arch, size, p, bank_seed)

    bar = _progress_bar(progress, arch)
    phases = PhaseBar(bar)
    workplace = contextlib.ExitStack()
    runner = None  # where the forward passes run: here, or a TaskRunner on Dask

    def per_task(inputs: int) -> int:
        return 1 if runner is None else runner.inputs_per_task(inputs)

    first_step = Step(bank_size, truncation)

    def run(step):
        larger = grown_bank(step.bank)
        main, check = spectrum_at(arch, curve, bank_for(primes[0], step.bank, seed), primes[0], seed,
                                  step.truncation, progress=phases, rank_bound=eff,
                                  extra_banks=[bank_for(primes[0], larger, seed + 1_000_003)],
                                  parts=runner and runner.parts, inputs_per_task=per_task(step.bank + larger))
        return main, check, larger

    def decide(outcome, step, history):
        main, check, _ = outcome
        # the bank was too small: grow it before deepening
        requests = [GROW_BANK] if not check.same_result(main) else []
        shallower = [run_ for s, run_ in history if s.truncation < step.truncation]
        previous = shallower[-1][0].resolved_rank if shallower else None
        # deepen while deepening still resolves directions; otherwise the rest may be
        # kernel beyond the gauge orbit, which no truncation resolves
        if main.unresolved and (previous is None or main.resolved_rank > previous):
            requests.append(DEEPEN)
        return requests

    def before_step(step, _previous):
        _require_step_memory(arch, curve, step.bank, grown_bank(step.bank), step.truncation,
                             (first_step.bank, first_step.truncation), bank, requested, max_memory,
                             group=per_task(step.bank + grown_bank(step.bank)) if distributed else None)

    growth = Growth(max_bank=max_bank if auto_bank else None,
                    max_truncation=max_truncation if auto_truncation else None)
    try:
        if distributed:
            from ._cluster import task_runner

            runner = workplace.enter_context(task_runner(scheduler, workers, "symattn-spectrum"))
        adapted = adapt(run, first_step, decide, growth, before_step=before_step, progress=bar)
        (main, check, larger_size), bank_size, truncation = adapted.outcome, adapted.step.bank, \
            adapted.step.truncation
        separating = check.same_result(main) and main.resolved_rank == eff
        if not check.same_result(main):
            note = (f"a larger independent bank ({larger_size} inputs) gives {check.exponents}, "
                    f"rank {check.resolved_rank}: this bank is too small")
        elif main.resolved_rank != eff:
            note = (f"rank {main.resolved_rank} stays below {target} {eff}"
                    + (" (unresolved directions remain)" if main.unresolved else ""))
        else:
            note = (f"an independent bank of {larger_size} inputs gives the same spectrum and the rank "
                    f"reaches {target} {eff}")
        confirmation = None
        if confirm and len(primes) > 1:
            confirmation = spectrum_at(arch, curve, bank_for(primes[1], bank_size, seed + 2_000_003), primes[1],
                                       seed + 1, truncation, progress=phases, rank_bound=eff, block_table=False,
                                       stage="confirmation at a second prime: ", parts=runner and runner.parts,
                                       inputs_per_task=per_task(bank_size))
    finally:
        workplace.close()
        if bar is not None:
            bar.close()

    confirmed = confirmation is not None and confirmation.same_result(main)
    P = arch.param_count
    # the resolved rank is a lower bound; once it reaches the proven upper bound it is the rank, and the
    # directions no truncation resolved are kernel (one token's scores, lightning's scalings)
    bound_reached = main.resolved_rank == eff
    unresolved = 0 if bound_reached else main.unresolved
    rank_certified = unresolved == 0
    kernel = P - main.resolved_rank if rank_certified else main.gauge_rank
    degree = degree_bound(arch, curve, truncation)
    r = main.resolved_rank
    # Schwartz-Zippel over the determinantal divisors (degree r * degree bound each) and the gauge minors
    # (plus the random row compression: r / p for each r <= rank)
    polynomial_degree = r * (r + 1) // 2 * (max(degree, 1) + 1) + main.gauge_rank ** 2
    # an independent point and prime must fail in the same way
    bound = schwartz_zippel_bound(polynomial_degree, primes[: 2 if confirmed else 1])
    method = (f"Smith-form valuations of J(eps) mod eps^{truncation} over GF(p) at a random point, "
              f"one forward pass over jets of truncated series; rank lower bound from resolved pivots, "
              f"kernel lower bound from the gauge-orbit tangent space"
              + (f"; the rank reaches the proven bound {eff} ({eff_reason}), so the {main.unresolved} "
                 f"directions unresolved at eps^{truncation} are kernel" if bound_reached and main.unresolved
                 else "")
              + ("; confirmed at a second prime and point" if confirmed else "")
              + f"; adaptive steps: {adapted.describe()}"
              + (f"; the forward passes over jets on {runner.where}, about {2 * runner.spread} tasks each"
                 if runner else ""))
    if field_note(arch, primes[: 2 if confirmation is not None else 1]):
        method += "; " + field_note(arch, primes[: 2 if confirmation is not None else 1])
    return Spectrum(
        architecture=arch.to_json(), curve=curve.describe(arch.layers), params=P,
        exponents=main.exponents, blocks=main.blocks, rank=main.resolved_rank, kernel=kernel,
        unresolved=unresolved, truncation=truncation, bank=bank_size,
        primes=tuple(p for p in primes[: 2 if confirmation is not None else 1]),
        seeds=(seed,) + ((seed + 1,) if confirmation is not None else ()),
        separating=bool(separating), separation_note=note, confirmed=confirmed,
        rank_certified=rank_certified, gauge_kernel_checked=main.gauge_annihilated,
        error_bound=float(bound), degree_bound=degree, predicted=predicted_spectrum(arch), method=method,
        degenerate=degeneracies(arch),
    )


def _progress_bar(progress: bool, arch: Architecture):
    from .limits import progress_bar

    # each phase of a run names itself and sets its own total (PhaseBar): pivots against the rank bound;
    # before the first phase, one step: the memory estimate, the point and the banks
    return progress_bar(progress, total=1, desc="decay spectrum: memory estimate, point and bank", unit="step")


def _require_series_order(arch: Architecture, curve: Curve, max_order: int) -> None:
    """Refuse a network whose predicted contact orders need series past ``max_order``, naming what fits."""
    from .limits import check_memory, spectrum_memory

    def estimate_for(resized: Architecture, bank: int | None = None):
        return spectrum_memory(resized, 1, _initial_truncation(resized, curve))

    check_memory(estimate_for(arch), arch=arch, estimate_for=estimate_for, max_series_order=max_order)


def automatic_bank_size(arch: Architecture, rank_bound: int) -> int:
    """The first bank of ``bank="auto"``: enough rows for ``rank_bound``, and one input per direction of the scores.

    Each input adds about one direction of the score blocks at their
    leading order; the values are what the rows of one input already see.
    The one guess of :func:`decay_spectrum` and of its memory estimate for a
    resized network.

    Examples
    --------
    >>> automatic_bank_size(Architecture.uniform(layers=2), 10)
    6
    """
    values = (effective_block_dimensions(arch)["values"] if arch.is_plain else arch.widths[-1] * arch.widths[0])
    score_dims = max(0, rank_bound - values)
    return max(1, math.ceil(rank_bound / (arch.widths[-1] * arch.tokens)) + 1, score_dims)


def _require_step_memory(arch: Architecture, curve: Curve, size: int, larger: int, truncation: int,
                         first_step: tuple, bank, requested, max_memory, group: int | None = None) -> None:
    """Refuse a step of :func:`decay_spectrum` that would not fit, before it allocates anything.

    With ``group`` (inputs per task) the forward passes run on Dask workers:
    this process needs the Jacobian and what follows it, not the passes.  A
    step refused in one process that would fit that way says so.
    """
    from .limits import MAX_BANK, check_count, check_memory, format_size, memory_limit, spectrum_memory

    chosen = isinstance(bank, (int, np.integer)) and not isinstance(bank, bool)  # --bank N
    if chosen:  # an automatic bank too large is the network's size: the memory check names the flag that fits
        check_count(size, MAX_BANK, "--bank")
    fixed_bank = size if chosen else None
    growth = truncation // first_step[1]  # the truncation doubles from its first value

    def estimate_for(resized: Architecture, bank: int | None = None):
        # the starting sizes of decay_spectrum for a resized network (its "auto" bank guess)
        if bank is None and fixed_bank is None:
            bank = automatic_bank_size(resized, estimate_rank_bound(resized))  # no sympy, no big arrays
        elif bank is None:
            bank = fixed_bank
        N = truncation if requested != "auto" else _initial_truncation(resized, curve) * growth
        return spectrum_memory(resized, bank + grown_bank(bank), N)

    step = ""
    if size != first_step[0]:
        step = f"growing the bank to {size} inputs"
    elif truncation != first_step[1]:
        step = f"deepening the truncation to eps^{truncation}"
    where = "here" if group is None else "coordinator"
    try:
        check_memory(spectrum_memory(arch, size + larger, truncation, where=where, group=group), max_memory,
                     arch=arch, estimate_for=estimate_for, bank=fixed_bank, step=step)
    except ResourceLimitError as err:
        if group is not None or "beyond the deepest" in str(err):
            raise
        limit = memory_limit(max_memory)
        # one input a task: what this process and each worker would need
        coordinator = spectrum_memory(arch, size + larger, truncation, where="coordinator", group=1)
        if coordinator.bytes > limit:
            raise
        worker = spectrum_memory(arch, size + larger, truncation, where="worker", group=1)
        raise ResourceLimitError(
            f"{err}; or --workers N (workers=) or --scheduler ADDRESS (scheduler=) runs the forward passes on Dask "
            f"workers (about {format_size(worker.bytes)} each, one input a task) and keeps the Jacobian and its "
            f"Smith forms here ({format_size(coordinator.bytes)})") from None

