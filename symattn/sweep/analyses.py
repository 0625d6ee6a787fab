"""The analyses a sweep runs at each grid point, their options, and how sure each result is.

Each analysis is one call into the package: :func:`~symattn.identify.function_space_dimension`
(``dimension``), :func:`~symattn.spectrum.decay_spectrum` (``spectrum``),
:func:`~symattn.identify.identification_orders` (``orders``),
:func:`~symattn.observe.observe` with events (``observe``),
:func:`~symattn.check.check_claims` and :func:`~symattn.expand.check_formula_claim`
(``check``), and the parameter counts of :mod:`symattn.effective` (``parameters``).
Which analyses a sweep offers, their options and the functions below that
run them come from the one registry of analyses (:mod:`symattn.analyses`).
Its result is kept as the result's own JSON (``to_json()``), with two short
fields added: ``exactness`` (how it was obtained) and ``bound`` (what the
numbers are: exact, a lower bound, what stays unresolved).

Examples
--------
>>> from symattn.sweep.analyses import run_analysis
>>> record = run_analysis({"layers": 1, "width": 2, "tokens": 2}, "dimension", {"seed": 0})
>>> record["lower"], record["upper"], record["certified"], record["bound"]
(7, 7, True, 'exact: lower = upper')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..analyses import registered, resolve
from ..check import ClaimsReport, check_claims, parse_claim
from ..effective import effective_dimension, gauge_dimension, sign_group_order
from ..errors import SymattnError
from ..expand import check_formula_claim, is_formula_claim, parse_formula_claim
from ..identify import function_space_dimension, identification_orders
from ..limits import memory_limit_set
from ..model import Architecture
from ..observe import observe, parse_event
from ..spectrum import decay_spectrum
from .grid import GridError, Skip, build_architecture

__all__ = ["Analysis", "ANALYSES", "analysis_options", "task_options", "run_analysis", "read_analyses"]


@dataclass(frozen=True)
class Analysis:
    """One analysis of a sweep: its name, what it computes, its options and how it runs.

    ``run(arch, options)`` returns the result's JSON; ``sureness(json)``
    returns ``(exactness, bound)``; ``defaults`` are its options.  Each is
    made from an entry of the registry (:class:`symattn.analyses.SweepUse`).

    Examples
    --------
    >>> ANALYSES["spectrum"].defaults
    {'seed': 0, 'bank': 'auto', 'truncation': 'auto'}
    """

    name: str
    help: str
    defaults: dict
    run: Callable[[Architecture, dict], dict]
    sureness: Callable[[dict], tuple[str, str]]


def _primes(json: dict) -> str:
    primes = json.get("primes") or ([json["prime"]] if json.get("prime") else [])
    return ", ".join(f"GF({p})" for p in primes) or "GF(p)"


# -- dimension -----------------------------------------------------------------------------
def dimension_json(arch: Architecture, options: dict) -> dict:
    """The JSON of :func:`~symattn.identify.function_space_dimension` (the registry's ``dimension``)."""
    return function_space_dimension(arch, seed=options["seed"]).to_json()


def dimension_sureness(json: dict) -> tuple[str, str]:
    """``(exactness, bound)`` of a ``dimension`` result's JSON."""
    exactness = f"exact rank over {_primes(json)}: a certified lower bound"
    if json["certified"]:
        return exactness, "exact: lower = upper"
    return exactness, f"bounds: {json['lower']} <= dimension <= {json['upper']}"


# -- spectrum ------------------------------------------------------------------------------
def spectrum_json(arch: Architecture, options: dict) -> dict:
    """The JSON of :func:`~symattn.spectrum.decay_spectrum`, without the architecture (the point's columns say it)."""
    json = decay_spectrum(arch, bank=options["bank"], truncation=options["truncation"], seed=options["seed"],
                          progress=False).to_json()
    json.pop("architecture", None)
    return json


def spectrum_sureness(json: dict) -> tuple[str, str]:
    """``(exactness, bound)`` of a ``spectrum`` result's JSON."""
    exactness = f"Smith valuations over {_primes(json)}" + (", confirmed at a second prime" if json.get("confirmed")
                                                             else "")
    open_points = []
    if json.get("unresolved"):
        open_points.append(f"{json['unresolved']} directions unresolved (valuation >= {json['truncation']})")
    if not json.get("separating"):
        open_points.append("bank not shown separating")
    if not json.get("rank_certified"):
        open_points.append("rank a lower bound")
    return exactness, "; ".join(open_points) if open_points else "exact: separating bank, every direction resolved"


# -- orders --------------------------------------------------------------------------------
def orders_json(arch: Architecture, options: dict) -> dict:
    """The orders, predictions and sharpness of :func:`~symattn.identify.identification_orders`, one key per block."""
    result = identification_orders(arch, seed=options["seed"])
    blocks = (*result.scores, result.values)
    return {
        "orders": {b.block: b.order for b in blocks},
        "predicted": {b.block: b.predicted for b in blocks},
        "sharp": {b.block: b.sharp for b in blocks},
        "all_sharp": result.all_sharp,
        "matches_prediction": result.matches_prediction,
        "jet_ranks": list(result.jet_ranks),
        "effective_dim": result.effective_dim,
        "blocks": [b.to_json() for b in blocks],
        "curve": result.curve,
        "truncation": result.truncation,
        "bank": result.bank,
        "primes": list(result.primes),
        "error_bound": result.error_bound,
        "method": result.method,
    }


def orders_sureness(json: dict) -> tuple[str, str]:
    """``(exactness, bound)`` of a ``orders`` result's JSON."""
    exactness = f"ranks over {_primes(json)}"
    unsettled = [block for block, order in json["orders"].items() if order is None]
    if unsettled:
        return exactness, f"not found below eps^{json['truncation']}: {', '.join(unsettled)}"
    return exactness, "sharp" if json["all_sharp"] else "not all sharp: " + ", ".join(
        block for block, sharp in json["sharp"].items() if not sharp)


# -- observe -------------------------------------------------------------------------------
def observe_json(arch: Architecture, options: dict) -> dict:
    """The JSON of :func:`~symattn.observe.observe` for one event set, without the architecture."""
    json = observe(arch, options["events"], seed=options["seed"], contact=options["contact"]).to_json()
    json.pop("architecture", None)
    return json


def observe_sureness(json: dict) -> tuple[str, str]:
    """``(exactness, bound)`` of a ``observe`` result's JSON."""
    exactness = f"exact ranks over {_primes(json)}" + (", confirmed" if json.get("confirmed") else "")
    return exactness, "graph verdicts proved by the ranks" if json["agrees_with_rank"] else \
        "graph verdicts and ranks disagree: " + "; ".join(json.get("disagreements", []))


# -- check ---------------------------------------------------------------------------------
def check_json(arch: Architecture, options: dict) -> dict:
    """The JSON of the claims checked, with counts of true, false and unsettled.

    Numbers are checked by :func:`~symattn.check.check_claims`, formulas by
    :func:`~symattn.expand.check_formula_claim`.
    """
    claims = list(options["claims"])
    numbers = [c for c in claims if not is_formula_claim(c)]
    checks = dict(zip(numbers, check_claims(arch, numbers, seed=options["seed"]).checks)) if numbers else {}
    for claim in claims:
        if is_formula_claim(claim):
            checks[claim] = check_formula_claim(arch, claim, seed=options["seed"])
    json = ClaimsReport(arch.to_json(), tuple(checks[c] for c in claims)).to_json()
    json.pop("architecture", None)
    verdicts = [c["verdict"] for c in json["claims"]]
    json.update(true=verdicts.count(True), false=verdicts.count(False), unsettled=verdicts.count(None))
    return json


def check_sureness(json: dict) -> tuple[str, str]:
    """``(exactness, bound)`` of a ``check`` result's JSON."""
    return ("each claim against the engine's certified result",
            f"{json['true']} true, {json['false']} false, {json['unsettled']} unsettled")


# -- parameters ----------------------------------------------------------------------------
def parameters_json(arch: Architecture, options: dict) -> dict:
    """The parameter counts of :mod:`symattn.effective`: native, effective, gauge, sign group."""
    return {"params": arch.param_count, "effective_dim": effective_dimension(arch),
            "gauge_dim": gauge_dimension(arch), "sign_group_order": sign_group_order(arch)}


def parameters_sureness(json: dict) -> tuple[str, str]:
    """``(exactness, bound)`` of a ``parameters`` result's JSON."""
    return "counted from the architecture", "exact"


#: The analyses by name, in the order a sweep's table lists them: those of the registry
#: (:mod:`symattn.analyses`) that sweeps offer, each with its options and functions from there.
ANALYSES = {entry.name: Analysis(entry.name, entry.summary, dict(entry.sweep.options), resolve(entry.sweep.run),
                                 resolve(entry.sweep.sureness))
            for entry in registered("sweep")}

def read_analyses(names) -> list[str]:
    """Analysis names from ``"dimension,spectrum"`` or a list, checked against :data:`ANALYSES`.

    Examples
    --------
    >>> read_analyses("dimension, spectrum")
    ['dimension', 'spectrum']
    >>> read_analyses("dimensions")
    Traceback (most recent call last):
    ...
    symattn.sweep.grid.GridError: unknown analysis 'dimensions'; accepted: dimension, spectrum, orders, observe, check, parameters
    """
    if isinstance(names, str):
        names = names.split(",")
    out = []
    for name in names:
        if not isinstance(name, str):
            raise GridError(f"an analysis is a name such as 'dimension', got {name!r}")
        word = name.strip().lower()
        if word not in ANALYSES:
            raise GridError(f"unknown analysis {name.strip()!r}; accepted: {', '.join(ANALYSES)}")
        if word not in out:
            out.append(word)
    if not out:
        raise GridError(f"give at least one analysis: {', '.join(ANALYSES)}")
    return out


def analysis_options(name: str, given: dict | None) -> dict:
    """The options of analysis ``name``: its defaults updated by ``given``, each checked.

    Examples
    --------
    >>> analysis_options("spectrum", {"truncation": 12})
    {'seed': 0, 'bank': 'auto', 'truncation': 12}
    >>> analysis_options("observe", {"events": "scores:1"})
    {'seed': 0, 'events': [['scores:1']], 'contact': False}
    >>> analysis_options("dimension", {"bank": 3})
    Traceback (most recent call last):
    ...
    symattn.sweep.grid.GridError: dimension has no option 'bank'; its options: seed
    """
    options = dict(ANALYSES[name].defaults)
    for key, value in (given or {}).items():
        if key == "order" and "truncation" in options:
            raise GridError(f"{name}: the option 'order' was renamed 'truncation' (series kept mod eps^N); "
                            f"write truncation: {value!r}")
        if key not in options:
            raise GridError(f"{name} has no option {key!r}; its options: {', '.join(options) or 'none'}")
        options[key] = value
    if "seed" in options and (isinstance(options["seed"], bool) or not isinstance(options["seed"], int)):
        raise GridError(f"{name}: seed must be an integer, got {options['seed']!r}")
    for key in ("bank", "truncation"):
        if key in options and options[key] != "auto" and (isinstance(options[key], bool) or
                                                          not isinstance(options[key], int)):
            raise GridError(f"{name}: {key} must be 'auto' or an integer, got {options[key]!r}")
    if name == "observe":
        options["events"] = _event_sets(options["events"])
        options["contact"] = bool(options["contact"])
    if name == "check":
        claims = options["claims"]
        if isinstance(claims, str):
            claims = [claims]
        if not claims or not all(isinstance(c, str) for c in claims):
            raise GridError("check needs claims: a list of claim strings such as 'contact_order(2) = 5'")
        options["claims"] = list(claims)
    return options


def _event_sets(events) -> list[list[str]]:
    """Event sets from ``"scores:1"``, ``["scores:1", "bias"]`` (one set each) or a list of lists."""
    if isinstance(events, str):
        events = [[events]]
    if not isinstance(events, (list, tuple)):
        raise GridError(f"observe: events must be a list of event sets, got {events!r}")
    if all(isinstance(e, str) for e in events) and events:
        events = [[e] for e in events]
    sets = []
    for group in events:
        group = [group] if isinstance(group, str) else group
        if not isinstance(group, (list, tuple)) or not all(isinstance(e, str) for e in group):
            raise GridError(f"observe: an event set is a list of names such as ['scores:1', 'bias'], got {group!r}")
        for text in group:
            parse_event(text)  # an unreadable name is an error for the whole sweep
        sets.append([" ".join(text.split()) for text in group])
    return sets or [[]]


def task_options(name: str, options: dict, point: dict, arch: Architecture) -> tuple[list[dict], list[Skip]]:
    """The tasks of one analysis at one point (one per event set for ``observe``) and what is skipped.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> options = analysis_options("observe", {"events": [["scores:1"], ["scores:2"]]})
    >>> tasks, skipped = task_options("observe", options, {"layers": 1}, Architecture.uniform(layers=1))
    >>> [t["events"] for t in tasks], skipped[0].reason
    ([['scores:1']], 'the event scores:2 does not fit: event scores:2: the architecture has layers 1..1')
    """
    if name == "observe":
        tasks, skipped = [], []
        for group in options["events"]:
            try:
                for text in group:
                    parse_event(text).validate(arch)
            except SymattnError as err:
                skipped.append(Skip(point, name, f"the event {text} does not fit: {_one_line(err)}"))
                continue
            tasks.append({**options, "events": group})
        return tasks, skipped
    if name == "check":
        try:
            for claim in options["claims"]:
                if is_formula_claim(claim):
                    parse_formula_claim(arch, claim)
                else:
                    parse_claim(claim, arch.layers)
        except SymattnError as err:
            return [], [Skip(point, name, _one_line(err))]
    return [dict(options)], []


def _one_line(err) -> str:
    return " ".join(str(err).split())


def run_analysis(point: dict, name: str, options: dict, max_memory=None) -> dict:
    """Analysis ``name`` at the grid point, in this process: its JSON with ``exactness`` and ``bound``.

    Raises whatever the analysis raises (a :class:`~symattn.errors.SymattnError`
    for a point it cannot compute, a :class:`~symattn.errors.ResourceLimitError`
    over the memory limit).

    Examples
    --------
    >>> record = run_analysis({"layers": 2, "width": 2}, "spectrum", analysis_options("spectrum", None))
    >>> record["spectrum"], record["kernel"], record["bound"]
    ({'0': 4, '1': 3, '5': 3}, 6, 'exact: separating bank, every direction resolved')
    """
    analysis = ANALYSES[name]
    arch = build_architecture(point)
    with memory_limit_set(max_memory):
        json = analysis.run(arch, options)
    json["exactness"], json["bound"] = analysis.sureness(json)
    return json
