"""The graph's verdicts checked by exact ranks, and the exceptional fibers."""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Iterable

import networkx as nx

from .._format import (
    FormattedResult, Section, cell_text, latex_escape, latex_longtable, latex_method, latex_prose, latex_tabularx,
    markdown_method,
)
from ..naming import texttt
from ..errors import ResourceLimitError, SymattnError
from ..model import Architecture, require_architecture, require_seed
from .events import BIAS, COLLAPSED, PARTIAL, UNOBSERVABLE, all_events, parse_event, score_collapse
from .graph import Observability, dependency_graph, propagate
from .ranks import RankCheck, contact_orders, rank_check, require_rank_fits

__all__ = [
    "ExceptionalFibers", "FiberRow", "ObserveResult", "exceptional_fibers", "graph_rank_disagreements", "observe",
]


@functools.lru_cache(maxsize=1)
def _condition_formulas() -> dict:
    """The normalizer formulas of the graph's conditions and reasons, as LaTeX math (for :func:`latex_prose`).

    The conditions are plain text in JSON and Markdown (``s(x) = C e^(ax)``);
    a document sets them as formulas, the normalizer by sympy's LaTeX of
    its expression.

    Examples
    --------
    >>> _condition_formulas()["s(x) = C e^(ax)"]
    's(x) = C e^{a x}'
    """
    import sympy as sp

    a, c, x = sp.symbols("a C x")
    return {"s(x) = C e^(ax)": "s(x) = " + sp.latex(c * sp.exp(a * x)),
            "S(A + 1 u^T) = S(A)": r"S(A + \mathbf{1} u^\top) = S(A)",
            "s'(0) = 0": "s'(0) = 0"}


def _prose(text) -> str:
    """A condition, reason or note of the graph in LaTeX: its normalizer formulas as math."""
    return latex_prose(text, _condition_formulas())


def graph_rank_disagreements(verdict: Observability, rank: RankCheck) -> list[str]:
    """Where the graph's verdicts and the exact ranks on the same collapse set disagree (empty: none).

    Each line names the block, what the dependency graph predicts and what
    the exact rank of the native Jacobian computed.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=2)
    >>> from symattn.observe import dependency_graph, score_collapse
    >>> verdict = propagate(dependency_graph(arch), [score_collapse(1)])
    >>> graph_rank_disagreements(verdict, rank_check(arch, [score_collapse(1)], confirm=False))
    []
    """
    problems = []
    for block, v in verdict.verdicts.items():
        computed = rank.statuses[block]
        if v.status != computed:
            problems.append(f"{block}: the graph says {v.status}, the rank says {computed} "
                            f"(rank {rank.on_set[block]} of generic {rank.generic[block]})")
        elif v.predicted_rank is not None and v.status != COLLAPSED and v.predicted_rank != rank.on_set[block]:
            problems.append(f"{block}: predicted rank {v.predicted_rank}, computed {rank.on_set[block]}")
    for block, expected in verdict.normal_first_order.items():
        computed = rank.normal.get(block)
        if (expected == 0) != (computed == 0):
            problems.append(f"{block}: the directions leaving the set should have rank "
                            f"{'0' if expected == 0 else '> 0'}, computed {computed}")
    return problems


@dataclass(frozen=True)
class ObserveResult(FormattedResult):
    """The graph's verdict on a collapsed set, the exact ranks that check it, and contact orders.

    ``agrees_with_rank`` is true when every block's verdict, every predicted
    rank and the first-order visibility of the collapsed blocks' normal
    directions agree with the exact ranks; ``disagreements`` lists the rest.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=2)
    >>> result = observe(arch, ["identical-tokens"], confirm=False)
    >>> result.unobservable, result.observable, result.rank.on_set
    (['scores:1'], ['values'], {'scores:1': 0, 'values': 4})
    >>> result.fiber_dim_jump, result.agrees_with_rank, result.disagreements
    (3, True, ())
    """

    observability: Observability
    rank: RankCheck
    contact: tuple
    disagreements: tuple

    @property
    def agrees_with_rank(self) -> bool:
        return not self.disagreements

    @property
    def events(self) -> tuple:
        return self.observability.events

    @property
    def graph(self) -> nx.DiGraph:
        return self.observability.graph

    unobservable = property(lambda self: self.observability.unobservable)
    partial = property(lambda self: self.observability.partial)
    observable = property(lambda self: self.observability.observable)
    collapsed = property(lambda self: self.observability.collapsed)

    @property
    def fiber_dim_jump(self) -> int:
        return self.rank.fiber_dim_jump

    def to_json(self) -> dict:
        """The keys of ``symattn observe --json``."""
        v, r = self.observability, self.rank
        return {
            "architecture": v.architecture,
            "events": [e.name for e in v.events],
            "unobservable": v.unobservable,
            "partial": v.partial,
            "observable": v.observable,
            "collapsed": v.collapsed,
            "fiber_dim_jump": r.fiber_dim_jump,
            "agrees_with_rank": self.agrees_with_rank,
            "disagreements": list(self.disagreements),
            "reasons": v.reasons(),
            "ranks": {"generic": r.generic, "on_set": r.on_set, "normal": r.normal,
                      "generic_total": r.generic_total, "set_total": r.set_total},
            "predicted_ranks": {b: x.predicted_rank for b, x in v.verdicts.items()},
            "normal_first_order": v.normal_first_order,
            "sign_components": v.sign_components,
            "generic_sign_components": v.generic_sign_components,
            "notes": list(v.notes),
            "contact_orders": [c.to_json() for c in self.contact],
            "truncation": r.truncation,
            "bank": r.bank,
            "primes": list(r.primes),
            "confirmed": r.confirmed,
            "method": r.method,
        }

    def _rows(self):
        for block, v in self.observability.verdicts.items():
            reason = v.reasons[0]
            yield (block, v.status, self.rank.on_set[block], self.rank.generic[block], reason.text,
                   " -> ".join(reason.path))

    def __str__(self) -> str:
        events = ", ".join(e.name for e in self.events) or "none (generic)"
        lines = [f"observability after {events}",
                 f"{'block':<10} {'verdict':<13} {'rank':>4} {'generic':>8}  reason"]
        for block, status, rank, generic, text, path in self._rows():
            lines.append(f"{block:<10} {status:<13} {rank:>4} {generic:>8}  {text}")
            lines.append(f"{'':<10} path {path}")
        for block, n in self.rank.normal.items():
            lines.append(f"leaving the set at {block}: rank {n}")
        lines.append(f"fiber dimension jump {self.fiber_dim_jump}; agrees with rank: {cell_text(self.agrees_with_rank)}")
        lines += [f"disagreement: {d}" for d in self.disagreements]
        lines += [str(c) for c in self.contact]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A report section: verdicts with reasons, ranks, and how they were obtained."""
        v = self.observability
        lines = ["| block | verdict | rank on the set | generic rank | reason | path |",
                 "|---|---|---:|---:|---|---|"]
        for block, status, rank, generic, text, path in self._rows():
            lines.append(f"| {block} | {status} | {rank} | {generic} | {text} | {path} |")
        lines.append("")
        lines.append(f"- events: {'; '.join(e.describe(v.architecture) for e in v.events) or 'none'}")
        for block, n in self.rank.normal.items():
            lines.append(f"- directions leaving the set at {block}: rank {n}")
        lines.append(f"- fiber dimension jump: {self.fiber_dim_jump} (total rank {self.rank.set_total}, "
                     f"generic {self.rank.generic_total})")
        lines.append(f"- sign components of the fiber: {v.sign_components} (generic {v.generic_sign_components})")
        lines.append(f"- graph and exact rank agree: {cell_text(self.agrees_with_rank)}")
        lines += [f"- disagreement: {d}" for d in self.disagreements]
        lines += [f"- {n}" for n in v.notes]
        for c in self.contact:
            lines.append(f"- {c}")
        lines.append(markdown_method(self.rank.method))
        return "\n".join(lines)

    def to_section(self, title: str = "Observability after collapse"):
        """A :class:`~symattn.report.Section` for :meth:`~symattn.report.ArchitectureReport.with_sections`."""
        return Section.from_result(title, "observe", self, markdown=self.to_markdown())

    def _latex_math(self) -> str:
        rows = [rf"\text{{{latex_escape(b)}}} & \text{{{s}}} & {r} & {g} \\" for b, s, r, g, _, _ in self._rows()]
        return "\n".join([
            r"\begin{array}{llrr}",
            r"\text{block} & \text{verdict} & \text{rank on the set} & \text{generic rank} \\ \hline",
            *rows, r"\end{array}"])

    def _latex_body(self) -> str:
        """The verdicts, ranks and reasons as a ``tabularx`` as wide as the text, with the notes and the method."""
        rows = [(texttt(block), status, rank, generic, _prose(text),
                 r" $\to$ ".join(latex_escape(node) for node in path.split(" -> ")))
                for block, status, rank, generic, text, path in self._rows()]
        table = latex_tabularx(rows, "llrrLL", header=("block", "verdict", "rank", "generic", "reason", "path"))
        table += "\n\\par\\noindent{\\small rank: on the set; generic: at a generic point.}"
        events = "; ".join(f"{texttt(e.name)} (${e.latex(self.observability.architecture)}$)"
                           for e in self.events) or "none"
        notes = [rf"events: {events}"]
        notes += [latex_escape(f"directions leaving the set at {block}: rank {n}") for block, n in self.rank.normal.items()]
        notes += [latex_escape(f"fiber dimension jump: {self.fiber_dim_jump} (total rank {self.rank.set_total}, "
                               f"generic {self.rank.generic_total})"),
                  latex_escape(f"sign components of the fiber: {self.observability.sign_components} "
                               f"(generic {self.observability.generic_sign_components})"),
                  f"graph and exact rank agree: {'yes' if self.agrees_with_rank else 'no'}"]
        notes += [_prose(f"disagreement: {d}") for d in self.disagreements]
        notes += [_prose(n) for n in self.observability.notes]
        notes += [_prose(str(c)) for c in self.contact]
        items = "\n".join(rf"\item {n}" for n in notes)
        return "\n".join([table, "\\begin{itemize}\\setlength{\\itemsep}{0pt}\\small", items, "\\end{itemize}",
                          latex_method(self.rank.method)])


def observe(arch: Architecture, events: Iterable = (), seed: int = 0, contact: bool = False,
            confirm: bool = True, bank="auto", truncation="auto", progress: bool = False,
            max_memory=None) -> ObserveResult:
    """The graph's verdict after ``events`` (:func:`propagate`), proved by exact ranks (:func:`rank_check`).

    Parameters
    ----------
    arch : Architecture
    events : iterable of Event or str
        Events or their names (:func:`parse_event`: ``"scores:1"``, ``"values:2"``, ``"bias"``, ...): the
        command line's ``symattn observe --event SPEC`` (``--collapse SPEC`` is its older name, an alias).
    seed : int
    contact : bool
        Also compute :func:`contact_orders` near each parameter event.
    confirm : bool
        Confirm the ranks at a second prime, point and larger bank.
    progress : bool
        Show the ranks and contact orders as they are computed (on a terminal).
    max_memory : int or str, optional
        Memory limit; see :func:`rank_check`.

    Returns
    -------
    ObserveResult

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")
    >>> result = observe(arch, ["bias"], confirm=False)
    >>> result.partial, result.rank.on_set["scores:1"], result.agrees_with_rank
    (['scores:1', 'scores:2'], 2, True)
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    from ..limits import memory_limit_set, progress_bar

    with memory_limit_set(max_memory):  # a network too deep or too large for the ranks: refused before the graph
        require_rank_fits(arch, bank, truncation, confirm)
    verdict = propagate(dependency_graph(arch), events)
    rank = rank_check(arch, verdict.events, seed=seed, confirm=confirm, bank=bank, truncation=truncation,
                      progress=progress, max_memory=max_memory)
    near = [e for e in verdict.events if e.on_parameters] if contact else []
    orders = []
    with memory_limit_set(max_memory), progress_bar(progress and bool(near), total=len(near),
                                                    desc="contact orders", unit="event") as bar:
        for e in near:
            bar.set_postfix_str(e.name)
            orders.append(contact_orders(arch, e, seed=seed))
            bar.update()
    return ObserveResult(verdict, rank, tuple(orders), tuple(graph_rank_disagreements(verdict, rank)))


# -- exceptional fibers ----------------------------------------------------------------------
@dataclass(frozen=True)
class FiberRow:
    """One event set: the blocks lost, the jump of the fiber dimension, and the normalizer conditions.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> table = exceptional_fibers(Architecture.uniform(layers=1, width=2, tokens=2), max_events=1)
    >>> row = table.row("values:1")
    >>> row.name, row.unobservable, row.fiber_dim_jump, row.conditions
    ('values:1', ('scores:1',), 3, ('scores:1 lost for every normalizer',))
    >>> bias = table.row("bias")
    >>> bias.partial, bias.lost, bias.agrees_with_rank
    (('scores:1',), ('scores:1',), True)
    """

    events: tuple
    unobservable: tuple
    partial: tuple
    fiber_dim_jump: int
    normal_ranks: dict
    sign_components: int
    conditions: tuple
    agrees_with_rank: bool
    disagreements: tuple

    @property
    def lost(self) -> tuple:
        return self.unobservable + self.partial

    @property
    def name(self) -> str:
        return " + ".join(e.name for e in self.events)

    def to_json(self) -> dict:
        return {"events": [e.name for e in self.events], "unobservable": list(self.unobservable),
                "partial": list(self.partial), "fiber_dim_jump": self.fiber_dim_jump,
                "normal_ranks": self.normal_ranks, "sign_components": self.sign_components,
                "conditions": list(self.conditions), "agrees_with_rank": self.agrees_with_rank,
                "disagreements": list(self.disagreements)}


def _conditions(verdict: Observability) -> tuple:
    out, grouped = [], {}
    for block, v in verdict.verdicts.items():
        if v.status in (UNOBSERVABLE, PARTIAL):
            for r in v.reasons:
                grouped.setdefault(r.condition, [])
                if block not in grouped[r.condition]:
                    grouped[r.condition].append(block)
    for condition, blocks in grouped.items():
        out.append(f"{', '.join(blocks)} lost for {condition}")
    for block, normal in verdict.normal_first_order.items():
        i = int(block.split(":")[1])
        k = verdict.normalizers[i - 1]["k"]
        collapse = " and ".join(e.text(verdict.architecture) for e in verdict.events
                                if e.kind == score_collapse(i).kind and e.layer == i)
        out.append(f"k_{i} = {k}: leaving {collapse} is "
                   + ("seen at first order" if normal else "not seen at first order"
                      + (" (s'(0) = 0)" if k >= 2 else " (hidden by the other events)")))
    if verdict.sign_components != verdict.generic_sign_components:
        out.append(f"even normalizers: sign components {verdict.generic_sign_components} -> "
                   f"{verdict.sign_components}")
    if BIAS in {e.kind for e in verdict.events} and not any(
            r.rule == "shift-invariance" for v in verdict.verdicts.values() for r in v.reasons):
        # what the bias event hides, as computed: the blocks lost above (e.g. absorbed by the model's biases)
        hidden = [block for block, v in verdict.verdicts.items() if v.status in (UNOBSERVABLE, PARTIAL)]
        out.append(f"the bias event hides {', '.join(hidden)}, none of it through the normalizer: only an "
                   "exponential normalizer (S(A + 1 u^T) = S(A)) would lose the directions e_b w^T as well"
                   if hidden else "bias hides nothing here: only an exponential normalizer (S(A + 1 u^T) = S(A)) "
                   "loses the directions e_b w^T")
    if not out:
        out.append("nothing lost, for every normalizer")
    return tuple(out)


@dataclass(frozen=True)
class ExceptionalFibers(FormattedResult):
    """Every single and pairwise event: blocks lost, fiber dimension jump, normalizer conditions.

    The table is available as text (``str``), Markdown, LaTeX (an ``array``)
    and JSON.  ``agrees_with_rank`` is true when the graph's verdict agrees
    with the exact rank for every row.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> table = exceptional_fibers(Architecture.uniform(layers=1, width=2, tokens=2), max_events=1)
    >>> [(row.name, row.fiber_dim_jump) for row in table.rows]
    [('scores:1', 1), ('values:1', 3), ('value-rank:1:1', 0), ('identical-tokens', 3), ('bias', 1)]
    >>> table.generic_rank, table.agrees_with_rank, table.skipped
    (7, True, ())
    """

    architecture: dict
    rows: tuple
    skipped: tuple
    generic_rank: int
    max_events: int
    method: str

    @property
    def agrees_with_rank(self) -> bool:
        return all(r.agrees_with_rank for r in self.rows)

    def row(self, *events) -> FiberRow:
        """The row of an event set, given by events or their names."""
        wanted = tuple(sorted(parse_event(e) for e in events))
        for r in self.rows:
            if r.events == wanted:
                return r
        raise KeyError(", ".join(e.name for e in wanted))

    def to_json(self) -> dict:
        return {"architecture": self.architecture, "generic_rank": self.generic_rank,
                "max_events": self.max_events, "rows": [r.to_json() for r in self.rows],
                "skipped": [{"events": list(e), "reason": why} for e, why in self.skipped],
                "agrees_with_rank": self.agrees_with_rank, "method": self.method}

    def _cells(self):
        for r in self.rows:
            yield (r.name, ", ".join(r.unobservable) or "-", ", ".join(r.partial) or "-",
                   str(r.fiber_dim_jump), "; ".join(r.conditions), "yes" if r.agrees_with_rank else "NO")

    def __str__(self) -> str:
        header = ("events", "unobservable", "partial", "jump", "conditions", "rank agrees")
        cells = [header, *self._cells()]
        widths = [max(len(c[j]) for c in cells) for j in range(len(header) - 2)]
        lines = []
        for c in cells:
            lines.append("  ".join(c[j].ljust(widths[j]) for j in range(len(widths)))
                         + f"  {c[-1]:<11}  {c[-2]}")
        lines.append(f"generic rank {self.generic_rank}; graph and exact rank agree on every row: "
                     f"{cell_text(self.agrees_with_rank)}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        lines = ["| events | unobservable | partial | fiber dim jump | conditions | rank agrees |",
                 "|---|---|---|---:|---|---|"]
        lines += ["| " + " | ".join(c) + " |" for c in self._cells()]
        lines.append("")
        lines.append(f"- generic rank of the native Jacobian: {self.generic_rank}")
        lines.append(f"- graph and exact rank agree on every row: {cell_text(self.agrees_with_rank)}")
        for events, why in self.skipped:
            lines.append(f"- skipped {' + '.join(events)}: {why}")
        lines.append(markdown_method(self.method))
        return "\n".join(lines)

    def _latex_math(self) -> str:
        rows = []
        for r in self.rows:
            events = r", ".join(e.latex(self.architecture) for e in r.events)
            lost_u = latex_escape(", ".join(r.unobservable) or "-")
            lost_p = latex_escape(", ".join(r.partial) or "-")
            rows.append(rf"{events} & \text{{{lost_u}}} & \text{{{lost_p}}} & {r.fiber_dim_jump} & "
                        rf"\text{{{'yes' if r.agrees_with_rank else 'no'}}} \\")
        return "\n".join([r"\begin{array}{lllrl}",
                          r"\text{events} & \text{unobservable} & \text{partial} & \text{jump} & "
                          r"\text{rank agrees} \\ \hline", *rows, r"\end{array}"])

    def _latex_body(self) -> str:
        """The table as a ``longtable`` (wrapping columns, across pages), with the notes and the method.

        Events and blocks are set by their names (:mod:`symattn.naming`), in typewriter type.
        """
        def names(blocks):
            return ", ".join(texttt(b) for b in blocks) or "--"

        rows = [(" + ".join(texttt(e.name) for e in r.events), names(r.unobservable), names(r.partial), r.fiber_dim_jump,
                 _prose("; ".join(r.conditions)), "yes" if r.agrees_with_rank else "NO") for r in self.rows]
        columns = r">{\raggedright}p{0.19\linewidth}>{\raggedright}p{0.16\linewidth}" \
                  r">{\raggedright}p{0.15\linewidth}r>{\raggedright\arraybackslash}p{0.26\linewidth}l"
        table = "{\\small\\setlength{\\tabcolsep}{4pt}\n" + latex_longtable(
            rows, columns, ("events", "unobservable", "partial", "jump", "conditions", "agrees")) + "\n}"
        notes = [f"generic rank of the native Jacobian: {self.generic_rank}",
                 f"graph and exact rank agree on every row: {'yes' if self.agrees_with_rank else 'no'}"]
        notes += [f"skipped {' + '.join(events)}: {why}" for events, why in self.skipped]
        items = "\n".join(rf"\item {_prose(n)}" for n in notes)
        return "\n".join([table, "\\begin{itemize}\\setlength{\\itemsep}{0pt}\\small", items, "\\end{itemize}",
                          latex_method(self.method)])


#: The most sets of events :func:`exceptional_fibers` classifies in one call: each costs an exact rank.
MAX_EVENT_SETS = 1_000


def _require_few_event_sets(events: int, max_events: int) -> None:
    """Refuse more than :data:`MAX_EVENT_SETS` sets of events, naming the ``--max-events`` that fits."""
    total, fits = 0, None
    for size in range(1, min(max_events, events) + 1):  # stops at the cap: C(events, size) is huge past it
        total += math.comb(events, size)
        if total > MAX_EVENT_SETS:
            break
        fits = size
    if total <= MAX_EVENT_SETS:
        return
    advice = f"--max-events <= {fits} fits" if fits else "choose the events (events=) or a smaller network"
    raise ResourceLimitError(f"--max-events {max_events} asks for more than {MAX_EVENT_SETS} sets of the network's "
                             f"{events} events, each an exact rank; at most {MAX_EVENT_SETS} are classified in one "
                             f"run: {advice}")


def exceptional_fibers(arch: Architecture, max_events: int = 2, seed: int = 0, confirm: bool = False,
                       events=None, progress: bool = False, max_memory=None) -> ExceptionalFibers:
    """Go through every set of at most ``max_events`` events and classify its fiber.

    For each set: the blocks lost (unobservable, partial) by the graph, the
    jump of the fiber dimension (generic rank minus the rank of the native
    Jacobian at a generic point of the set, exact over ``GF(p)((eps))``),
    the rank of the directions leaving a collapsed score block, the sign
    components, the normalizer conditions that decide it, and whether the
    graph agrees with the exact rank.

    Parameters
    ----------
    arch : Architecture
    max_events : int
    seed : int
    confirm : bool
        Confirm each rank at a second prime (twice the time).
    events : iterable, optional
        The single events to combine (default :func:`all_events`).
    progress : bool
        Show a bar over the event sets, with the time left (on a terminal).
    max_memory : int or str, optional
        Memory limit; see :func:`rank_check` (the first rank is estimated before any).

    Returns
    -------
    ExceptionalFibers

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="cosh")
    >>> table = exceptional_fibers(arch, max_events=1)
    >>> table.row("scores:1").unobservable, table.row("scores:1").fiber_dim_jump
    (('scores:2',), 6)
    >>> table.agrees_with_rank
    True
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
        raise SymattnError(f"max_events must be a positive integer, got {max_events!r}")
    pool = [parse_event(e).validate(arch) for e in (events if events is not None else all_events(arch))]
    _require_few_event_sets(len(pool), max_events)
    from ..limits import memory_limit_set, progress_bar

    with memory_limit_set(max_memory):  # a network too deep or too large for the ranks: refused before the graph
        require_rank_fits(arch, confirm=confirm)
    graph = dependency_graph(arch)

    rows, skipped = [], []
    classified: set = set()
    generic_rank = None
    subsets = [subset for size in range(1, min(max_events, len(pool)) + 1)
               for subset in itertools.combinations(pool, size)]
    with memory_limit_set(max_memory), progress_bar(progress, total=len(subsets), desc="exceptional fibers",
                                                    unit="set") as bar:
        for subset in subsets:
            bar.set_postfix_str(", ".join(e.name for e in subset))
            try:
                verdict = propagate(graph, subset)
            except SymattnError as err:
                skipped.append((tuple(e.name for e in subset), str(err)))
                bar.update()
                continue
            if verdict.events in classified:  # e.g. both heads' collapses of a layer: the layer's collapse
                skipped.append((tuple(e.name for e in subset),
                                f"the same set as {' + '.join(e.name for e in verdict.events)}"))
                bar.update()
                continue
            classified.add(verdict.events)
            rank = rank_check(arch, verdict.events, seed=seed, confirm=confirm)
            generic_rank = rank.generic_total
            problems = tuple(graph_rank_disagreements(verdict, rank))
            rows.append(FiberRow(verdict.events, tuple(verdict.unobservable), tuple(verdict.partial),
                                 rank.fiber_dim_jump, dict(rank.normal), verdict.sign_components,
                                 _conditions(verdict), not problems, problems))
            bar.update()
        if generic_rank is None:
            generic_rank = rank_check(arch, (), seed=seed, confirm=False).generic_total
    method = ("verdicts by propagation along the dependency graph; fiber dimension jumps and checks by "
              "exact Smith-form ranks of the native Jacobian over GF(p)((eps)) at a random point of each set, "
              "along X -> eps X" + ("; each confirmed at a second prime" if confirm else ""))
    return ExceptionalFibers(arch.to_json(), tuple(rows), tuple(skipped), generic_rank, max_events, method)
