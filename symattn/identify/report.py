"""The identification report: dimension, orders, fiber and sign flips of one network."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


from ..curves import Curve
from .._format import (
    FormattedResult, cell_text, latex_array, latex_escape, latex_method, latex_prose, latex_tabular, markdown_table,
    markdown_method, plain_words,
)
from ..naming import texttt
from ..jacobian import (
    DEFAULT_PRIMES,
)
from ..model import Architecture
from .common import (
    MAX_TRUNCATION, _check_arch, _check_curve, _check_estimate, _check_exact_taylor, _check_seed,
    _effective_dim, _expected_orders, _identify_memory, _require_memory,
)
from .dimension import DimensionResult, function_space_dimension
from .fiber import FiberResult, generic_fiber
from .orders import BlockOrder, identification_orders

__all__ = ["IdentificationReport", "identify"]


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
    #: The run of :func:`identification_orders` behind ``orders`` (its Jacobian, point): certificates read it.
    orders_result: object = field(default=None, repr=False, compare=False)

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
            "degenerate": list(self.fiber.degenerate),
        }

    # -- tables ------------------------------------------------------------------------
    def _order_rows(self):
        rows = []
        for o in (*self.orders, self.values):
            label = o.block  # scores:i (scores:i:h for a head of a layer with several), values
            rows.append((label, "-" if o.order is None else o.order, "-" if o.predicted is None else o.predicted,
                         "yes" if o.sharp else "no", f"{o.jet_rank}/{o.block_dimension}",
                         {None: "-", True: "yes", False: "NO"}[o.exact_independence]))
        return rows

    _ORDER_HEADER = ("block", "order", "predicted", "sharp", "jet rank / block dim", "exact (a)")

    #: The fiber rows whose names are formulas, in LaTeX (the others are escaped text).
    _FIBER_LATEX = {"gauge tangents in the kernel (J T = 0)": r"gauge tangents in the kernel ($J\,T = 0$)"}

    def _fiber_rows(self):
        f = self.fiber
        rows = [("native parameters", f.params), ("native Jacobian rank", f.native_rank),
                ("kernel dimension", f.kernel_dim), ("gauge dimension", f.gauge_dim),
                ("gauge tangent rank", f.gauge_rank)]
        if f.scaling_rank:
            rows.append(("lightning scalings", f.scaling_rank))
        if f.translation_rank:  # b_K (softmax), the heads' b_V: the kernel is the gauge orbit plus these
            rows.append(("bias translations", f.translation_rank))
        rows += [("gauge tangents in the kernel (J T = 0)", f.gauge_annihilated), ("kernel = symmetry orbit", f.kernel_is_symmetry_orbit),
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
            lines.append(plain_words(f"flip layers {list(c.layers)}: {what}, {expected}{where}"))
        return lines

    def _headings(self) -> tuple:
        return ("Dimension of the function space", "Generic fiber", f"Identification orders along {self.curve}")

    def to_markdown(self, level: int = 2) -> str:
        """Markdown: the dimension, the fiber, the orders and the jet ranks, each under a heading with its method.

        ``level`` is the level of the three headings (``##`` by default, ``###``
        inside a report).

        Examples
        --------
        >>> report = identify(Architecture.uniform(layers=1, width=1, tokens=2))
        >>> [line for line in report.to_markdown().splitlines() if line.startswith("#")]
        ['## Dimension of the function space', '## Generic fiber', '## Identification orders along simultaneous query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i (layers 1..1)']
        >>> report.to_markdown(level=3).splitlines()[0]
        '### Dimension of the function space'
        """
        d = self.dimension
        mark = "#" * level
        dimension, fiber, orders = self._headings()
        out = [f"{mark} {dimension}", "", d.to_markdown(), "",
               f"{mark} {fiber}", "", markdown_table(("quantity", "value"),
                                                       [(name, cell_text(value)) for name, value in self._fiber_rows()],
                                                       align="lr")]
        out += [""] + [f"- degenerate: {reason}" for reason in self.fiber.degenerate]
        out += [f"- {line}" for line in self._flip_lines()] + [markdown_method(self.fiber.method), ""]
        out += [f"{mark} {orders}", "",
                markdown_table(self._ORDER_HEADER, self._order_rows(), align="lrrlrl")]
        out += ["", "Jet ranks (rank of the Jacobian of (F_0, ..., F_n) in curve coordinates):", "",
                "| n | " + " | ".join(str(n) for n in range(len(self.jet_ranks))) + " |",
                "|---|" + "---:|" * len(self.jet_ranks),
                "| rank | " + " | ".join(str(r) for r in self.jet_ranks) + " |", ""]
        if not self.formula_claimed:
            out.append("- no formula is claimed along this curve: the orders are computed and shown")
        notes = [f"{o.block}: {o.note}" for o in (*self.orders, self.values) if not o.sharp]
        out += [f"- not sharp: {n}" for n in notes]
        out += [markdown_method(self.method), f"- error probability <= {self.error_bound:.1e}"]
        return "\n".join(out)

    def _latex_body(self, heading: str = "subsection") -> str:
        """LaTeX: the dimension, the fiber and the orders, each under a ``heading*`` with its method.

        ``heading`` is the sectioning command (``subsection`` by default,
        ``subsubsection`` inside a report).
        """
        def escaped(rows):  # truth values read yes/no, never Python's True/False
            return [[latex_escape(cell_text(cell)) for cell in row] for row in rows]

        def fiber_rows():  # the fiber's quantities, J T = 0 as a formula
            for name, value in self._fiber_rows():
                label = self._FIBER_LATEX.get(name) or latex_escape(name)
                yield label, latex_escape(cell_text(value))

        d = self.dimension
        dimension, fiber, orders = self._headings()
        order_rows = [[texttt(row[0])] + [latex_escape(cell) for cell in row[1:]] for row in self._order_rows()]
        flips = "".join(rf"\item {latex_prose(line)}" + "\n" for line in self._flip_lines())
        not_sharp = [f"{o.block}: {o.note}" for o in (*self.orders, self.values) if not o.sharp]
        jets = latex_tabular([["rank", *self.jet_ranks]], "l" + "r" * len(self.jet_ranks),
                             header=["$n$", *range(len(self.jet_ranks))])
        return "\n".join([
            rf"\{heading}*{{{latex_escape(dimension)}}}",
            latex_tabular(escaped(d._rows()), "lr", header=("dimension of the function space", "value")),
            latex_method(d.method, "Lower bound"), latex_method(d.upper_reason, "Upper bound"),
            latex_method(d.estimate_method, "Estimate"),
            rf"\{heading}*{{{latex_escape(fiber)}}}",
            latex_tabular(list(fiber_rows()), "lr", header=("quantity", "value")),
            *(["\\begin{itemize}\\setlength{\\itemsep}{0pt}\\small", flips.rstrip(), "\\end{itemize}"] if flips else []),
            *[latex_method(reason, "Degenerate") for reason in self.fiber.degenerate],
            latex_method(self.fiber.method),
            rf"\{heading}*{{{latex_prose(orders)}}}",
            latex_tabular(order_rows, "lrrlrl", header=escaped([self._ORDER_HEADER])[0]),
            "", r"\medskip", "",
            r"\noindent Jet ranks (rank of the Jacobian of $(F_0, \dots, F_n)$ in curve coordinates):", "",
            r"\smallskip", "", r"\noindent\resizebox{\linewidth}{!}{" + jets + "}" if len(self.jet_ranks) > 16 else jets,
            *([latex_method("no formula is claimed along this curve: the orders are computed and shown", "Note")]
              if not self.formula_claimed else []),
            *[latex_method(note, "Not sharp") for note in not_sharp],
            latex_method(self.method), latex_method(f"{self.error_bound:.1e}", "Error probability at most"),
        ])

    def _latex_math(self) -> str:
        numbers = [("function space dimension (certified lower bound)", self.dimension.lower),
                   ("upper bound", self.dimension.upper), *self._fiber_rows()]
        return (latex_array(("quantity", "value"), numbers) + r" \qquad "
                + latex_array(self._ORDER_HEADER, self._order_rows()))

    def __str__(self) -> str:
        d = self.dimension
        lines = [f"dimension: lower {d.lower} (certified bound), upper {d.upper}, certified {d.certified}, "
                 f"estimate {d.estimate}, formula {d.expected}",
                 f"fiber: kernel {self.fiber.kernel_dim}, gauge {self.fiber.gauge_dim}, kernel = symmetry orbit "
                 f"{self.fiber.kernel_is_symmetry_orbit}, sign group {self.fiber.sign_group_order} "
                 f"(verified {self.fiber.sign_group_verified})",
                 *[f"degenerate: {reason}" for reason in self.fiber.degenerate],
                 f"orders along {self.curve}:",
                 "  " + "  ".join(f"{h:>10}" for h in self._ORDER_HEADER[:4])]
        lines += ["  " + "  ".join(f"{str(c):>10}" for c in row[:4]) for row in self._order_rows()]
        lines.append(f"jet ranks: {list(self.jet_ranks)}")
        return plain_words("\n".join(lines))


def identify(arch: Architecture, curve: Curve | None = None, seed: int = 0, progress: bool = False,
             estimate=None, exact_check="auto", primes=DEFAULT_PRIMES, dps: int = 30,
             max_memory=None, scheduler=None, workers: int | None = None) -> IdentificationReport:
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
    scheduler, workers
        Compute the dimension's groups of bank inputs on Dask workers (see
        :func:`function_space_dimension`; same result); the orders and the
        fiber run here.

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
    from ..limits import memory_limit_set, progress_bar

    steps = ["dimension", "orders", "fiber"]
    with memory_limit_set(max_memory), progress_bar(progress, total=len(steps), desc="identify",
                                                    unit="step") as bar:
        _require_memory(_identify_memory, arch, curve, MAX_TRUNCATION)
        bar.set_postfix_str("dimension")
        dimension = function_space_dimension(arch, curve=curve, seed=seed, estimate=estimate, dps=dps,
                                             scheduler=scheduler, workers=workers)
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
        seconds=time.perf_counter() - started, method=method, orders_result=orders,
    )
