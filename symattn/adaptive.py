"""The one adaptive driver: grow the bank, deepen the truncation or draw a new point until a run concludes.

Every exact analysis asks the same question of a computation at a random
point on a random bank, truncated at ``eps^N``: is this run conclusive, or
was the bank too small, the truncation too short, the point unlucky?  Each
analysis says *what* a run is and *when* it is conclusive; :func:`adapt`
owns *how* to go on (which growth, by how much, within which caps) and
records every step, so that a result can say how it was obtained.

A run is described by a :class:`Step` (bank size, truncation, index of the
random point).  After each run the analysis's ``decide`` callback returns the
requests it would like, in order of preference:

* :data:`GROW_BANK` -- a larger bank (by :attr:`Growth.grow_bank`, ``ceil(1.5 n)`` inputs by default);
* :data:`DEEPEN` -- a deeper truncation (by :attr:`Growth.deepen`, doubling by default);
* :data:`NEW_POINT` -- the next random point (seed offset + 1);
* a tuple of these, applied together (the parts a cap forbids are left out).

The first request the caps allow is taken; an empty list, or none allowed,
ends the loop.  The confirmation at a second prime and the Schwartz-Zippel
bound of a result (:func:`schwartz_zippel_bound`) are the last steps every
analysis shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from .errors import SymattnError, TruncationError

GROW_BANK = "grow bank"
DEEPEN = "deepen"
NEW_POINT = "new point"
REQUESTS = (GROW_BANK, DEEPEN, NEW_POINT)


def grown_bank(size: int) -> int:
    """The next bank size: half as many inputs again, at least one more.

    Examples
    --------
    >>> [grown_bank(n) for n in (1, 2, 3, 4, 9)]
    [2, 3, 5, 6, 14]
    """
    return size + max(1, (size + 1) // 2)


def doubled(truncation: int) -> int:
    """The default deepening: ``eps^N -> eps^(2N)``.

    Examples
    --------
    >>> doubled(12)
    24
    """
    return 2 * truncation


def schwartz_zippel_bound(degree: int, primes: Sequence[int]) -> float:
    """Probability bound for a nonzero polynomial of ``degree`` to vanish at independent random points mod each prime.

    A nonzero polynomial of total degree ``D`` vanishes at a uniformly random
    point of ``GF(p)^n`` with probability at most ``D / p``; independent points
    modulo several primes multiply the bounds.

    Examples
    --------
    >>> schwartz_zippel_bound(100, [1000])
    0.1
    >>> schwartz_zippel_bound(50, [100, 1000])
    0.025
    >>> schwartz_zippel_bound(5000, [1000])
    1.0
    """
    bound = 1.0
    for p in primes:
        bound *= min(1.0, max(int(degree), 0) / int(p))
    return bound


@dataclass(frozen=True)
class Step:
    """One run of an adaptive computation: bank size, truncation ``eps^N`` and random-point index.

    Examples
    --------
    >>> Step(bank=4, truncation=12)
    Step(bank=4, truncation=12, attempt=0)
    >>> str(Step(bank=4, truncation=12, attempt=1))
    'bank 4, eps^12, point 2'
    """

    bank: int
    truncation: int
    attempt: int = 0

    def __str__(self) -> str:
        return f"bank {self.bank}, eps^{self.truncation}, point {self.attempt + 1}"


@dataclass(frozen=True)
class Growth:
    """How far and how an adaptive computation may grow.

    Parameters
    ----------
    max_bank : int or None
        Largest bank; ``None`` keeps the bank fixed (a bank the user chose).
    max_truncation : int or None
        Deepest truncation; ``None`` keeps the truncation fixed.
    max_runs : int or None
        Most runs in all (``None``: no limit beyond the caps).
    max_bank_growths, max_deepenings : int or None
        Most growths of each kind (``None``: no limit beyond the caps).
    deepen : callable
        Next truncation from the current one (default :func:`doubled`).
    grow_bank : callable
        Next bank size from the current one (default :func:`grown_bank`).
    deepen_after_bank : bool
        Once the truncation has been deepened, refuse further bank growth
        (analyses that settle the bank first, then the truncation).

    Examples
    --------
    >>> growth = Growth(max_bank=8, max_truncation=20)
    >>> growth.next_step(Step(4, 10), DEEPEN, ())
    Step(bank=4, truncation=20, attempt=0)
    >>> growth.next_step(Step(4, 20), DEEPEN, ()) is None     # 40 is past the cap
    True
    >>> growth.next_step(Step(6, 10), GROW_BANK, ()) is None   # 9 inputs are past the cap
    True
    """

    max_bank: int | None = None
    max_truncation: int | None = None
    max_runs: int | None = None
    max_bank_growths: int | None = None
    max_deepenings: int | None = None
    deepen: Callable[[int], int] = doubled
    grow_bank: Callable[[int], int] = grown_bank
    deepen_after_bank: bool = False

    def next_step(self, step: Step, request, taken: Sequence[tuple]) -> Step | None:
        """The step ``request`` leads to from ``step``, or ``None`` when the caps forbid it.

        ``taken`` are the requests taken so far (tuples of request names).
        A tuple request applies the parts the caps allow and is refused only
        when none is allowed.
        """
        parts = request if isinstance(request, tuple) else (request,)
        unknown = [part for part in parts if part not in REQUESTS]
        if unknown:
            raise SymattnError(f"unknown adaptive request {unknown[0]!r}; expected one of {REQUESTS}")
        if self.max_runs is not None and len(taken) + 1 >= self.max_runs:
            return None
        changed = step
        for part in parts:
            if part == GROW_BANK and self._may_grow_bank(taken):
                larger = self.grow_bank(step.bank)
                if larger <= self.max_bank:
                    changed = replace(changed, bank=larger)
            elif part == DEEPEN and self._may_deepen(taken):
                deeper = self.deepen(step.truncation)
                if deeper <= self.max_truncation:
                    changed = replace(changed, truncation=deeper)
            elif part == NEW_POINT:
                changed = replace(changed, attempt=step.attempt + 1)
        return None if changed == step else changed

    def _may_grow_bank(self, taken) -> bool:
        if self.max_bank is None:
            return False
        if self.deepen_after_bank and any(DEEPEN in parts for parts in taken):
            return False
        return self.max_bank_growths is None or \
            sum(GROW_BANK in parts for parts in taken) < self.max_bank_growths

    def _may_deepen(self, taken) -> bool:
        if self.max_truncation is None:
            return False
        return self.max_deepenings is None or sum(DEEPEN in parts for parts in taken) < self.max_deepenings


@dataclass(frozen=True)
class Adapted:
    """The end of an adaptive computation: the last step and run, and every step before it.

    Attributes
    ----------
    step : Step
        The last step run.
    outcome : object
        What the analysis's run returned at that step.
    steps : tuple of Step
        Every step run, in order (the last is :attr:`step`).
    outcomes : tuple
        The outcome of each step.
    requests : tuple of tuple
        The request taken after each step but the last.
    concluded : bool
        ``True`` when the last ``decide`` asked for nothing more; ``False``
        when it still asked but the caps allowed none of its requests.
    """

    step: Step
    outcome: Any
    steps: tuple = field(repr=False)
    outcomes: tuple = field(repr=False)
    requests: tuple = ()
    concluded: bool = True

    @property
    def runs(self) -> int:
        """Number of runs."""
        return len(self.steps)

    def describe(self) -> str:
        """How the computation grew, in words (for method notes).

        Examples
        --------
        >>> adapted = adapt(lambda s: s.truncation, Step(3, 4), lambda out, s, h: [DEEPEN] if out < 16 else [],
        ...                 Growth(max_bank=3, max_truncation=64))
        >>> adapted.describe()
        'truncation eps^4 -> eps^16 (3 runs)'
        """
        first, last = self.steps[0], self.step
        parts = []
        if last.bank != first.bank:
            parts.append(f"bank {first.bank} -> {last.bank}")
        if last.truncation != first.truncation:
            parts.append(f"truncation eps^{first.truncation} -> eps^{last.truncation}")
        if last.attempt != first.attempt:
            parts.append(f"{last.attempt - first.attempt + 1} random points")
        text = ", ".join(parts) if parts else "no growth"
        return f"{text} ({self.runs} run{'s' if self.runs != 1 else ''})"


def adapt(run: Callable[[Step], Any], start: Step, decide: Callable[[Any, Step, tuple], Sequence],
          growth: Growth, before_step: Callable[[Step, Step | None], None] | None = None,
          progress=None) -> Adapted:
    """Run ``run(step)`` from ``start`` and grow as ``decide`` asks, within ``growth``'s caps.

    Parameters
    ----------
    run : callable
        ``run(step) -> outcome``: one computation at a step.
    start : Step
        The first step.
    decide : callable
        ``decide(outcome, step, history) -> requests`` in order of preference
        (:data:`GROW_BANK`, :data:`DEEPEN`, :data:`NEW_POINT` or tuples of
        them); empty when the run is conclusive.  ``history`` is the tuple of
        ``(step, outcome)`` pairs so far, this run included.
    growth : Growth
        Caps and rules of growth.
    before_step : callable, optional
        ``before_step(step, previous)`` is called before each run (``previous``
        is ``None`` for the first): the place for memory checks, which raise
        before anything is allocated.
    progress : tqdm-like, optional
        Its postfix shows the current step.

    Returns
    -------
    Adapted

    Examples
    --------
    A run that needs a bank of 6 and a truncation of 20 to conclude:

    >>> def run(step):
    ...     return step.bank >= 6 and step.truncation >= 20
    >>> def decide(conclusive, step, history):
    ...     return [] if conclusive else [GROW_BANK, DEEPEN]
    >>> adapted = adapt(run, Step(bank=3, truncation=5), decide, Growth(max_bank=8, max_truncation=40))
    >>> adapted.step, adapted.concluded, adapted.runs
    (Step(bank=8, truncation=20, attempt=0), True, 5)
    >>> adapted.describe()
    'bank 3 -> 8, truncation eps^5 -> eps^20 (5 runs)'

    Caps that forbid every request end the loop without a conclusion:

    >>> adapt(run, Step(3, 5), decide, Growth(max_bank=5, max_truncation=10)).concluded
    False
    """
    step, previous = start, None
    steps, outcomes, taken = [], [], []
    while True:
        if before_step is not None:
            before_step(step, previous)
        if progress is not None:
            progress.set_postfix_str(str(step))
        outcome = run(step)
        steps.append(step)
        outcomes.append(outcome)
        requests = list(decide(outcome, step, tuple(zip(steps, outcomes))))
        following = None
        for request in requests:
            following = growth.next_step(step, request, tuple(taken))
            if following is not None:
                taken.append(request if isinstance(request, tuple) else (request,))
                break
        if following is None:
            return Adapted(step=step, outcome=outcome, steps=tuple(steps), outcomes=tuple(outcomes),
                           requests=tuple(taken), concluded=not requests)
        previous, step = step, following


# -- what a run cannot decide ---------------------------------------------------------------------
#: Old keyword -> new keyword of the analyses' truncation arguments (``order`` meant the truncation N).
RENAMED_ARGUMENTS = {"order": "truncation", "max_order": "max_truncation"}


def refuse_renamed(function: str, given: dict, renamed: dict | None = None) -> None:
    """Refuse keyword arguments that were renamed, naming the new spelling; reject unknown ones as Python does.

    ``given`` is the ``**renamed`` catch-all of ``function``'s signature.

    Raises
    ------
    TruncationError
        For a renamed keyword (``order=`` is now ``truncation=``).
    TypeError
        For any other unexpected keyword.

    Examples
    --------
    >>> refuse_renamed("decay_spectrum", {})
    >>> refuse_renamed("decay_spectrum", {"order": 12})
    Traceback (most recent call last):
    ...
    symattn.errors.TruncationError: decay_spectrum(order=12): order= was renamed truncation= (the truncation N: series kept mod eps^N, powers eps^0..eps^(N-1)); write truncation=12
    >>> refuse_renamed("decay_spectrum", {"depth": 3})
    Traceback (most recent call last):
    ...
    TypeError: decay_spectrum() got an unexpected keyword argument 'depth'
    """
    renamed = RENAMED_ARGUMENTS if renamed is None else renamed
    for name, value in given.items():
        if name in renamed:
            raise TruncationError(f"{function}({name}={value!r}): {name}= was renamed {renamed[name]}= (the "
                                  f"truncation N: series kept mod eps^N, powers eps^0..eps^(N-1)); write "
                                  f"{renamed[name]}={value!r}")
        raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")


def degeneracies(arch) -> tuple[str, ...]:
    """What makes ``arch`` degenerate, and why: one token, score ranks above the widths.

    A comparison whose premises these break is "not applicable", never
    ``False``.  One token: every ``S(A)`` is the ``1 x 1`` matrix 1, so no
    score reaches ``F`` (MATH.md section 3: the scores are unobservable) and
    only the value map is seen; the contact orders ``2k 3^(i-1) - 1`` do not
    apply.  A score rank ``a_i`` above ``min(d_0, ..., d_{i-1})``: ``What_i``
    has rank at most that minimum (the rank is capped at the width); above
    the input width ``d_{i-1}`` of layer ``i`` the gauge group ``GL(a_i)``
    also fixes a subgroup of dimension ``(a_i - d_{i-1})^2`` of ``(Q_i, K_i)``
    (the maps ``I + E`` with ``E Q_i = 0`` and ``E^T K_i = 0``), so the gauge
    orbit is smaller than the group.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> degeneracies(Architecture.uniform(layers=2))
    ()
    >>> for reason in degeneracies(Architecture.uniform(layers=1, width=1, rank=2, tokens=1)):
    ...     print(reason)
    one token: every S(A) is the 1 x 1 matrix 1, so the scores never reach F (unobservable) and only the value map is seen; the contact orders 2k 3^(i-1) - 1 do not apply
    score rank a_1 = 2 above the width 1 of layer 1's input: What_1 has rank at most 1 (the rank is capped at the width), and GL(a_1) fixes a subgroup of dimension (2 - 1)^2 = 1 of (Q_1, K_1), so the gauge orbit is smaller than the gauge group
    """
    reasons = []
    if arch.tokens == 1:
        reasons.append("one token: every S(A) is the 1 x 1 matrix 1, so the scores never reach F (unobservable) "
                       "and only the value map is seen; the contact orders 2k 3^(i-1) - 1 do not apply")
    for i, a in enumerate(arch.score_ranks, start=1):
        bottleneck, width = min(arch.widths[:i]), arch.widths[i - 1]
        if a <= bottleneck:
            continue
        text = (f"score rank a_{i} = {a} above the width {bottleneck} of layer {i}'s input"
                if bottleneck == width else
                f"score rank a_{i} = {a} above the narrowest width {bottleneck} among d_0..d_{i - 1}")
        text += f": What_{i} has rank at most {bottleneck} (the rank is capped at the width)"
        if a > width:
            text += (f", and GL(a_{i}) fixes a subgroup of dimension ({a} - {width})^2 = {(a - width) ** 2} "
                     f"of (Q_{i}, K_{i})" + (" in each head" if arch.attention[i - 1].heads > 1 else "")
                     + ", so the gauge orbit is smaller than the gauge group")
        reasons.append(text)
    return tuple(reasons)


class PhaseBar:
    """One progress bar through the phases of a computation: it names the phase running and counts its steps.

    ``bar`` is a :func:`symattn.limits.progress_bar` (or None).  :meth:`phase`
    renames the bar and restarts its count against the phase's total (kept
    elapsed time); :meth:`tick` counts a step; :meth:`alive` redraws at most
    twice a second so that the clock moves during a long step (the products
    of :mod:`symattn.algebra.linalg` call it).

    Examples
    --------
    >>> phases = PhaseBar(None)
    >>> phases.phase("Smith form", total=4); phases.tick(); phases.alive()
    """

    #: Seconds between two redraws by :meth:`alive`.
    interval = 0.5

    def __init__(self, bar):
        self.bar = bar
        self._last = float("-inf")

    def phase(self, description: str, total: int | None = None, unit: str = "step") -> None:
        bar = self.bar
        if bar is None:
            return
        # tqdm's set_description appends ": " and the bar adds its own: the plain text once
        getattr(bar, "set_description_str", bar.set_description)(description, refresh=False)
        if hasattr(bar, "reset"):  # tqdm: a new count, the same clock
            start = getattr(bar, "start_t", None)
            bar.unit, bar.total = unit, total  # before reset, which redraws (and keeps a total for None)
            bar.reset(total=total)
            if start is not None:
                bar.start_t = start
            bar.refresh()

    def tick(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def alive(self) -> None:
        import time

        if self.bar is None or not hasattr(self.bar, "refresh"):
            return
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self.bar.refresh()
