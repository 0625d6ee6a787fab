"""The result of a sweep: the tidy table (one row per grid point and analysis), its summaries and plots.

Examples
--------
>>> from symattn.sweep import sweep
>>> result = sweep({"layers": "1..2", "width": 2}, ["dimension"], scheduler="synchronous", progress=False)
>>> [(row["layers"], row["lower"], row["expected"], row["status"]) for row in result.rows]
[(1, 7, 7, 'ok'), (2, 10, 10, 'ok')]
>>> print(result.to_markdown().splitlines()[0])
# Sweep: 2 tasks, 2 computed, 0 reused, 0 failed, 0 skipped
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .._format import FormattedResult, latex_array, latex_escape, latex_tabular, latex_tabularx, markdown_table
from ..errors import SymattnError
from .grid import _extra_fields
from .store import write_atomically

__all__ = ["SweepResult", "make_row", "table_frame", "write_tables", "write_plots", "SUMMARY_COLUMNS", "ROW_FIELDS"]

#: The columns of a row besides the point's and the analysis's own (the analysis's fields that
#: share one of these names are prefixed with the analysis name).
ROW_FIELDS = ("layers", "width", "widths", "score_rank", "score_ranks", "tokens", "normalizer", "analysis",
              "options", "status", "reason", "exactness", "bound", "seconds", "cpu_seconds", "peak_memory", "worker",
              "key", "reused")

#: The result columns each analysis shows in the summary tables.
SUMMARY_COLUMNS = {
    "dimension": ("lower", "upper", "expected", "certified"),
    "spectrum": ("spectrum", "kernel", "predicted", "matches_prediction"),
    "orders": ("orders", "predicted", "all_sharp"),
    "observe": ("events", "unobservable", "partial", "agrees_with_rank"),
    "check": ("true", "false", "unsettled"),
    "parameters": ("params", "effective_dim", "gauge_dim", "sign_group_order"),
}

_ARCHITECTURE_KEYS = {"layers", "widths", "score_ranks", "tokens", "normalizers", "degenerate"}
_VERDICT_COLORS = {"observable": "#4daf4a", "partial": "#ffbf00", "unobservable": "#e41a1c",
                   "collapsed": "#999999"}


def _architecture_fields(arch) -> dict:
    """The row's description of an architecture: its sizes, and the uniform width, rank and normalizer."""
    data = arch.to_json()
    names = [n.name for n in arch.normalizers]
    fields = {"layers": arch.layers,
              "width": arch.widths[0] if len(set(arch.widths)) == 1 else None,
              "widths": list(arch.widths),
              "score_rank": arch.score_ranks[0] if len(set(arch.score_ranks)) == 1 else None,
              "score_ranks": list(arch.score_ranks),
              "tokens": arch.tokens,
              "normalizer": names[0] if len(set(names)) == 1 else ",".join(names)}
    variants = {name: parameter.default for name, parameter in _extra_fields().items()}  # heads, causal, ...
    variants.update({key: value for key, value in data.items() if key not in _ARCHITECTURE_KEYS})
    for key, value in variants.items():  # one value when every layer has the same
        if key == "components":  # the components after attention: one cell, and the fields of the grid they take
            fields[key] = arch.describe_variant()
            for _, _, component in arch.components():
                fields.update(component.grid_fields())
            continue
        fields[key] = value[0] if isinstance(value, list) and value and len(set(value)) == 1 else value
    return fields


def make_row(arch, analysis: str, options: dict, record: dict, reused: bool) -> dict:
    """One row of the table: the architecture, the analysis, its status and its result's own fields.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> record = {"status": "ok", "reason": None, "seconds": 0.1, "peak_memory": None, "worker": None, "key": "k",
    ...           "result": {"lower": 7, "upper": 7, "certified": True, "seconds": 0.02,
    ...                      "exactness": "exact", "bound": "exact: lower = upper"}}
    >>> row = make_row(Architecture.uniform(layers=1), "dimension", {"seed": 0}, record, reused=False)
    >>> row["layers"], row["width"], row["lower"], row["status"], row["dimension_seconds"], row["bound"]
    (1, 2, 7, 'ok', 0.02, 'exact: lower = upper')
    """
    row = _architecture_fields(arch)
    row.update(analysis=analysis, options=json.dumps(options, sort_keys=True), status=record["status"],
               reason=record.get("reason"), exactness=None, bound=None)
    result = dict(record.get("result") or {})
    row["exactness"], row["bound"] = result.pop("exactness", None), result.pop("bound", None)
    for name, value in result.items():
        row[f"{analysis}_{name}" if name in ROW_FIELDS else name] = value
    row.update(seconds=record.get("seconds"), cpu_seconds=record.get("cpu_seconds"),
               peak_memory=record.get("peak_memory"), worker=record.get("worker"), key=record.get("key"),
               reused=reused)
    return row


def _cell(value):
    """A table cell: nested values as compact JSON, floats short, truth values yes/no (never Python's True)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else value


def _latex_cell(column: str, value) -> str:
    """A summary cell in LaTeX: names in typewriter type, mappings and lists as words, never JSON or Python.

    Examples
    --------
    >>> _latex_cell("orders", {"scores:1": 2, "values": 0})
    '\\\\texttt{scores:1} = 2, \\\\texttt{values} = 0'
    >>> _latex_cell("unobservable", []), _latex_cell("certified", True), _latex_cell("normalizer", "1 + x**2")
    ('--', 'yes', '$x^{2} + 1$')
    """
    from .._format import cell_text
    from ..naming import texttt

    def name(item):
        text = str(item)
        return texttt(text) if text == "values" or text.startswith(("scores:", "values:", "value-rank:")) \
            or text in ("bias", "identical-tokens") else latex_escape(text)

    if column == "normalizer" and value is not None:
        return _normalizer_latex(value)
    if isinstance(value, dict):
        return ", ".join(f"{name(key)} = {latex_escape(cell_text(item))}" for key, item in value.items()) or "--"
    if isinstance(value, (list, tuple)):
        return ", ".join(name(item) for item in value) or "--"
    return latex_escape(_cell(value))


def _normalizer_expression(name: str):
    """The sympy expression of a normalizer named by an expression (``1 + x**2``), or None for a preset."""
    from ..errors import SymattnError as _Error
    from ..normalizers import PRESETS, x
    from ..parsing import NORMALIZER_LIMITS, parse_expression

    if name.strip().lower() in PRESETS or name.strip().lower() == "lightning" or "," in name:
        return None
    try:  # the sweep's own normalizer, read by the package's parser (never eval)
        return parse_expression(name, {}, what="normalizer", limits=NORMALIZER_LIMITS, variable=x)
    except _Error:
        return None


def _normalizer_latex(value) -> str:
    """A normalizer cell in LaTeX: a preset by its name, an expression as a formula (``$1 + x^{2}$``).

    Examples
    --------
    >>> _normalizer_latex("softmax"), _normalizer_latex("1 + x**2"), _normalizer_latex("softmax,cosh")
    ('softmax', '$x^{2} + 1$', 'softmax, cosh')
    """
    import sympy as sp

    parts = str(value).split(",")  # one name per layer when they differ
    out = []
    for part in parts:
        expression = _normalizer_expression(part)
        out.append(latex_escape(part.strip()) if expression is None else f"${sp.latex(expression)}$")
    return ", ".join(out)


def _normalizer_mathtext(value) -> str:
    """A normalizer in a figure: a preset by its name, an expression as mathtext (``$x^{2} + 1$``), no ``**``.

    Examples
    --------
    >>> _normalizer_mathtext("cosh"), _normalizer_mathtext("1 + x**2")
    ('cosh', '$x^{2} + 1$')
    """
    import sympy as sp
    from matplotlib.mathtext import MathTextParser

    out = []
    for part in str(value).split(","):
        expression = _normalizer_expression(part)
        text = part.strip()
        if expression is not None:
            try:  # mathtext knows most of LaTeX, not all: a formula it cannot set stays text, without **
                formula = f"${sp.latex(expression, fold_short_frac=True)}$"
                MathTextParser("path").parse(formula)
                text = formula
            except ValueError:
                text = text.replace("**", "^")
        out.append(text)
    return ", ".join(out)


def table_frame(rows):
    """The rows as a pandas DataFrame (nested values as JSON text, so that Parquet and CSV can hold them).

    Examples
    --------
    >>> frame = table_frame([{"layers": 1, "spectrum": {"0": 4}}, {"layers": 2, "spectrum": None}])
    >>> frame["spectrum"][0], frame["spectrum"].isna().tolist(), list(frame["layers"])
    ('{"0":4}', [False, True], [1, 2])
    """
    import pandas as pd

    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    data = {}
    for column in columns:
        values = [row.get(column) for row in rows]
        values = [json.dumps(v, separators=(",", ":")) if isinstance(v, (dict, list, tuple)) else v for v in values]
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) > 1 and not kinds <= {int, float}:  # mixed kinds: text, so that Parquet takes the column
            values = [None if v is None else str(v) for v in values]
        data[column] = values
    frame = pd.DataFrame(data, columns=list(columns))
    for column in frame.columns:  # integer columns with gaps stay integers
        values = [v for v in data[column] if v is not None]
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values) and len(values) < len(frame):
            frame[column] = pd.array(data[column], dtype="Int64")
        elif values and all(isinstance(v, bool) for v in values) and len(values) < len(frame):
            frame[column] = pd.array(data[column], dtype="boolean")
    return frame


@dataclass(frozen=True)
class SweepResult(FormattedResult):
    """The outcome of :func:`symattn.sweep.sweep`: counts, the tidy rows, what was skipped, where it ran.

    Attributes
    ----------
    tasks : int
        Tasks of the sweep (grid points times analyses, one per event set for ``observe``).
    computed, reused, failed : int
        Tasks computed by this run, reused from the results store, and whose
        status is not ``ok`` (error, timeout, memory, crashed, lost).
    rows : tuple of dict
        One row per task, in grid order (:func:`make_row`).
    skips : tuple of Skip
        Points and analyses not computed, each with its reason.
    analyses : tuple of str
    fields : tuple of str
        The grid's fields (the columns that tell the points apart).
    scheduler : str
        Where the tasks ran.
    dashboard : str or None
        The Dask dashboard's address while the sweep ran.
    out : str or None
        The folder with the results store and tables.
    files : tuple of str
        Files written (``results.parquet``, ``results.csv``).
    seconds : float
        Wall time of the sweep.

    Examples
    --------
    >>> from symattn.sweep import sweep
    >>> result = sweep({"layers": 1, "width": "1..2"}, "parameters", scheduler="synchronous", progress=False)
    >>> result.tasks, result.failed, [row["params"] for row in result.rows]
    (2, 0, [3, 8])
    >>> result.to_json()["rows"][0]["status"], result.dataframe().shape[0]
    ('ok', 2)
    >>> print(result.to_latex().splitlines()[0])
    \\section*{Sweep: 2 tasks, 2 computed, 0 reused, 0 failed, 0 skipped}
    """

    tasks: int
    computed: int
    reused: int
    failed: int
    rows: tuple
    skips: tuple
    analyses: tuple
    fields: tuple
    scheduler: str
    dashboard: str | None = None
    out: str | None = None
    files: tuple = ()
    seconds: float = 0.0
    timeout: float | None = field(default=None)

    @property
    def skipped(self) -> int:
        return len(self.skips)

    # -- the table -----------------------------------------------------------------------------
    def dataframe(self):
        """The rows as a :class:`pandas.DataFrame` (the table of ``results.parquet`` and ``results.csv``)."""
        return table_frame(self.rows)

    def to_json(self) -> dict:
        return {"tasks": self.tasks, "computed": self.computed, "reused": self.reused, "failed": self.failed,
                "skipped": self.skipped, "rows": [dict(row) for row in self.rows],
                "skips": [skip.to_json() for skip in self.skips], "analyses": list(self.analyses),
                "fields": list(self.fields), "scheduler": self.scheduler, "dashboard": self.dashboard,
                "task_timeout": self.timeout, "out": self.out, "files": list(self.files),
                "seconds": round(self.seconds, 3)}

    # -- summaries ---------------------------------------------------------------------------
    def _counts(self) -> list[tuple[str, object]]:
        return [("tasks", self.tasks), ("computed", self.computed), ("reused", self.reused),
                ("failed", self.failed), ("skipped", self.skipped), ("scheduler", self.scheduler),
                ("seconds", f"{self.seconds:.1f}")]

    def _point_columns(self) -> list[str]:
        names = {"rank": "score_rank", "ranks": "score_ranks"}
        columns = [names.get(f, f) for f in self.fields] or ["layers", "widths"]
        return [c for c in columns if any(c in row for row in self.rows)] or ["layers"]

    def _analysis_table(self, analysis: str, cell=_cell):
        """The columns and rows of one analysis's summary table; ``cell(column, value)`` or ``cell(value)`` formats."""
        columns = self._point_columns() + [c for c in SUMMARY_COLUMNS.get(analysis, ())] + ["status", "bound"]
        if cell is _cell:
            return columns, [[_cell(row.get(c)) for c in columns] for row in self.rows if row["analysis"] == analysis]
        return columns, [[cell(c, row.get(c)) for c in columns] for row in self.rows if row["analysis"] == analysis]

    def _problem_tables(self, latex: bool = False):
        """The skipped and the failed points; with ``latex``, every cell is LaTeX (formulas as formulas)."""
        def point(items):
            if latex:
                return ", ".join(f"{latex_escape(k)} = {_latex_cell(k, v)}" for k, v in items)
            return " ".join(f"{k}={_cell(v)}" for k, v in items)

        def text(value):
            return latex_escape(str(value)) if latex else value

        skipped = [[point(skip.point.items()) if skip.point else "-", text(skip.analysis or "all"),
                    text(skip.reason)] for skip in self.skips]
        failed = [[point((c, row.get(c)) for c in self._point_columns()), text(row["analysis"]),
                   text(row["status"]), text(row["reason"])] for row in self.rows if row["status"] != "ok"]
        return skipped, failed

    def _title(self) -> str:
        return (f"Sweep: {self.tasks} tasks, {self.computed} computed, {self.reused} reused, "
                f"{self.failed} failed, {self.skipped} skipped")

    def to_markdown(self) -> str:
        def table(header, rows, align=""):
            return markdown_table(header, [[str(cell).replace("|", "\\|") for cell in row] for row in rows], align)

        lines = [f"# {self._title()}", "", table(("quantity", "value"), self._counts(), align="lr")]
        for analysis in self.analyses:
            columns, rows = self._analysis_table(analysis)
            if rows:
                lines += ["", f"## {analysis}", "", table(columns, rows)]
        skipped, failed = self._problem_tables()
        if failed:
            lines += ["", "## Not computed", "", table(("point", "analysis", "status", "reason"), failed)]
        if skipped:
            lines += ["", "## Skipped", "", table(("point", "analysis", "reason"), skipped)]
        pictures = [Path(f).name for f in self.files if str(f).endswith(".png")]
        if pictures:
            lines += ["", "## Plots", ""] + [f"![{Path(name).stem}]({name})" for name in pictures]
        return "\n".join(lines)

    def _latex_body(self) -> str:
        def tabular(header, rows, latex=False):
            cells = [[c if latex else latex_escape(c) for c in row] for row in rows]
            # a column of long cells wraps (L), so that the table keeps to the page
            wide = [max((len(str(row[j])) for row in rows), default=0) > 24 for j in range(len(header))]
            if not any(wide):
                return latex_tabular(cells, "l" * len(header), header=[latex_escape(h) for h in header])
            return latex_tabularx(cells, "".join("L" if w else "l" for w in wide),
                                  header=[latex_escape(h).replace(r"\_", r"\_\allowbreak{}") for h in header])

        parts = [f"\\section*{{{latex_escape(self._title())}}}", tabular(("quantity", "value"), self._counts())]
        for analysis in self.analyses:
            columns, rows = self._analysis_table(analysis, cell=_latex_cell)
            if rows:
                parts += [f"\\subsection*{{{latex_escape(analysis)}}}", "{\\small\\setlength{\\tabcolsep}{4pt}",
                          tabular(columns, rows, latex=True), "}"]
        skipped, failed = self._problem_tables(latex=True)
        if failed:
            parts += ["\\subsection*{Not computed}", "{\\small", tabular(("point", "analysis", "status", "reason"),
                                                                         failed, latex=True), "}"]
        if skipped:
            parts += ["\\subsection*{Skipped}", "{\\small", tabular(("point", "analysis", "reason"), skipped,
                                                                     latex=True), "}"]
        return "\n\n".join(parts)

    def _latex_math(self) -> str:
        return latex_array(["quantity", "value"], self._counts())

    # -- plots -------------------------------------------------------------------------------
    def _ok(self, analysis: str) -> list[dict]:
        return [row for row in self.rows if row["analysis"] == analysis and row["status"] == "ok"]

    def plot_dimension(self):
        """Computed dimension against the formula over depth x width (one panel per rank, tokens, normalizer).

        A cell is green where the certified dimension equals the formula, red
        where it falls short, grey where no formula is claimed; it shows the
        computed dimension (and the formula when they differ).

        Returns
        -------
        matplotlib.figure.Figure
        """
        from matplotlib.figure import Figure

        rows = self._ok("dimension")
        if not rows:
            raise SymattnError("no dimension results to plot")
        panels: dict[tuple, list] = {}
        for row in rows:
            # one panel per value of everything but depth and width (rank, tokens, normalizer, heads, ...)
            key = tuple((column, _cell(row.get(column))) for column in
                        dict.fromkeys([*self._point_columns(), "score_rank", "tokens", "normalizer"])
                        if column not in ("layers", "width", "widths"))
            panels.setdefault(key, []).append(row)
        columns = min(len(panels), 4)
        rows_of_panels = -(-len(panels) // columns)
        figure = Figure(figsize=(4.2 * columns, 3.6 * rows_of_panels), layout="constrained")
        axes = figure.subplots(rows_of_panels, columns, squeeze=False).ravel()
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        figure.suptitle("green: certified dimension = formula; red: below the formula (formula in brackets); "
                        "grey: no formula claimed", fontsize=8)
        for ax, (key, group) in zip(axes, panels.items()):
            widths = sorted({_cell(r["width"] if r["width"] is not None else r["widths"]) for r in group}, key=str)
            depths = sorted({r["layers"] for r in group})
            ax.set_xlim(-0.5, len(widths) - 0.5)
            ax.set_ylim(-0.5, len(depths) - 0.5)
            for r in group:
                x = widths.index(_cell(r["width"] if r["width"] is not None else r["widths"]))
                y = depths.index(r["layers"])
                expected = r.get("expected")
                if expected is None:
                    color, text = "#cccccc", f"{r['lower']}"
                elif r["lower"] == expected and r["certified"]:
                    color, text = "#a6dba0", f"{r['lower']}"
                else:
                    color, text = "#f4a582", f"{r['lower']}\n[{expected}]"
                ax.add_patch(_square(x, y, color))
                ax.text(x, y, text, ha="center", va="center", fontsize=8)
            ax.set_xticks(range(len(widths)), [str(w) for w in widths])
            ax.set_yticks(range(len(depths)), [str(d) for d in depths])
            ax.set_xlabel("width d")
            ax.set_ylabel("layers l")
            names = {"score_rank": "a", "tokens": "t"}
            ax.set_title(r"dimension vs $l\,a(2d - a) + d^2$" + "\n" + ", ".join(
                f"{names.get(column, column)} = {_normalizer_mathtext(value) if column == 'normalizer' else value}"
                for column, value in key if value != ""), fontsize=9)
        return figure

    def plot_contact_orders(self):
        """Contact orders (spectrum) and identification orders against the predictions, per layer and normalizer.

        Each computed exponent of a layer's scores is a dot, labelled with the
        multiplicities found at it over the grid (``x3,5``: 3 at some points,
        5 at others); the prediction ``2k 3^(i-1) - 1`` (spectrum) or
        ``2k 3^(i-1)`` (orders) is a line, one colour per normalizer.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from matplotlib.figure import Figure

        spectra, orders = self._ok("spectrum"), self._ok("orders")
        if not spectra and not orders:
            raise SymattnError("no spectrum or orders results to plot")
        panels = [(name, rows) for name, rows in (("spectrum", spectra), ("orders", orders)) if rows]
        figure = Figure(figsize=(5.2 * len(panels), 4), layout="constrained")
        for ax, (name, rows) in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels):
            series: dict[str, dict] = {}  # normalizer -> computed {(layer, exponent): multiplicities}, predicted
            for row in rows:
                points = series.setdefault(row["normalizer"], {"computed": {}, "predicted": {}})
                found = []  # (block, {exponent: multiplicity}, prediction)
                if name == "spectrum":
                    found = [(b["block"], b.get("computed") or {}, b.get("predicted") or {})
                             for b in row.get("block_comparison") or []]
                else:
                    found = [(block, {} if order is None else {order: 1},
                              {} if row["predicted"].get(block) is None else {row["predicted"][block]: 1})
                             for block, order in row["orders"].items()]
                for block, computed, predicted in found:
                    if not block.startswith("scores:"):
                        continue
                    layer = int(block.split(":")[1])
                    for exponent, count in computed.items():
                        points["computed"].setdefault((layer, int(exponent)), set()).add(count)
                    for exponent in predicted:
                        points["predicted"][layer] = int(exponent)
            ticks = set()
            for index, (normalizer, points) in enumerate(series.items()):
                color = f"C{index % 10}"
                if points["predicted"]:
                    layers = sorted(points["predicted"])
                    ax.plot(layers, [points["predicted"][i] for i in layers], "-", color=color, alpha=0.5,
                            label=f"{_normalizer_mathtext(normalizer)}: predicted")
                computed = sorted(points["computed"].items())
                ax.scatter([layer for (layer, _), _ in computed], [exponent for (_, exponent), _ in computed],
                           s=40, color=color, zorder=3, label=f"{_normalizer_mathtext(normalizer)}: computed")
                for (layer, exponent), counts in computed:
                    ticks.add(exponent)
                    if name == "spectrum":
                        ax.annotate("\u00d7" + ",".join(map(str, sorted(counts))), (layer, exponent),
                                    textcoords="offset points", xytext=(7, -3), fontsize=7, color=color)
            ax.set_yscale("log")
            ax.set_yticks(sorted(ticks), [str(tick) for tick in sorted(ticks)])
            ax.minorticks_off()
            ax.set_xticks(sorted({layer for points in series.values() for layer, _ in points["computed"]}))
            ax.set_xlabel("layer $i$")
            what = "contact order (decay exponent)" if name == "spectrum" else "identification order"
            ax.set_ylabel(what)
            prediction = r"$2k\,3^{i-1} - 1$" if name == "spectrum" else r"$2k\,3^{i-1}$"
            multiplicities = " (\u00d7 multiplicities)" if name == "spectrum" else ""
            ax.set_title(f"{what} of the scores of layer $i$\ndots: computed{multiplicities}; lines: {prediction}",
                         fontsize=9)
        handles = {}
        for ax in figure.axes:  # one legend for both panels: the same normalizers, the same colours
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        _legend_below(figure, list(handles.values()), list(handles))
        return figure

    def plot_observability(self):
        """Observability verdicts as a grid: one row per point and event set, one column per block.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch

        rows = self._ok("observe")
        if not rows:
            raise SymattnError("no observe results to plot")
        blocks = sorted({b for r in rows for key in _VERDICT_COLORS for b in r.get(key) or []},
                        key=lambda b: (b == "values", int(b.split(":")[1]) if ":" in b else 0))
        labels = [_label(row, self._point_columns(), mathtext=True) + "  | "
                  + (", ".join(row.get("events") or []) or "generic") for row in rows]
        # the row labels (7 pt, about 0.06 in a character) beside the grid: the figure is as wide as both
        label_width = 0.06 * max(len(label) for label in labels)
        figure = Figure(figsize=(max(6.0, 1.0 + label_width + 0.9 * len(blocks)), 1.6 + 0.35 * len(rows)),
                        layout="constrained")
        ax = figure.subplots()
        ax.set_xlim(-0.5, len(blocks) - 0.5)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        for y, row in enumerate(rows):
            for verdict, color in _VERDICT_COLORS.items():
                for block in row.get(verdict) or []:
                    ax.add_patch(_square(blocks.index(block), y, color))
            if not row.get("agrees_with_rank", True):
                ax.text(len(blocks) - 0.45, y, "ranks disagree", fontsize=7, va="center")
        ax.set_xticks(range(len(blocks)), blocks)
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        _legend_below(figure, [Patch(color=c, label=v) for v, c in _VERDICT_COLORS.items()],
                      list(_VERDICT_COLORS))
        # over the whole figure, not the grid alone: a grid narrower than the title does not clip it
        figure.suptitle("observability of each block after the events (proved by exact ranks)", fontsize=9)
        return figure

    def plots(self) -> list[tuple[str, object]]:
        """``(file name, plot)`` for each plot this sweep has data for; ``plot()`` returns the figure.

        :func:`symattn.sweep.sweep` with ``out`` writes them into that folder.
        """
        plots = [("sweep_dimension.png", ("dimension",), self.plot_dimension),
                 ("sweep_orders.png", ("spectrum", "orders"), self.plot_contact_orders),
                 ("sweep_observability.png", ("observe",), self.plot_observability)]
        return [(filename, plot) for filename, names, plot in plots if any(self._ok(name) for name in names)]


def write_plots(result: SweepResult, directory) -> list[Path]:
    """Draw every plot of ``result`` into ``directory`` as PNG; return the files written.

    Examples
    --------
    >>> import tempfile
    >>> from symattn.sweep import sweep
    >>> result = sweep({"layers": "1..2", "width": 1, "tokens": 2}, "dimension", scheduler="synchronous",
    ...                progress=False)
    >>> [p.name for p in write_plots(result, tempfile.mkdtemp())]
    ['sweep_dimension.png']
    """
    written = []
    for filename, plot in result.plots():
        path = Path(directory) / filename
        figure = plot()
        try:
            # tight: the saved picture keeps every label and the legend whole, whatever the layout left
            write_atomically(path, lambda temporary, figure=figure: figure.savefig(
                temporary, format="png", dpi=120, bbox_inches="tight", pad_inches=0.05))
        except OSError as err:
            raise SymattnError(f"cannot write {path}: {err.strerror or err}") from None
        written.append(path)
    return written


def _square(x, y, color):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.48, y - 0.48), 0.96, 0.96, color=color)


def _label(row: dict, columns: list[str], skip=(), mathtext: bool = False) -> str:
    def value(column):
        if mathtext and column == "normalizer":  # a formula in a figure, not Python's x**2
            return _normalizer_mathtext(row[column])
        return _cell(row.get(column))

    return " ".join(f"{c}={value(c)}" for c in columns if c not in skip and row.get(c) is not None) \
        or "all points"


def _legend_below(figure, handles, labels) -> None:
    """One legend under the panels, in as many columns as fit the figure's width (never clipped at its sides).

    ``loc="outside lower center"`` makes the constrained layout keep room for
    it below the axes; the columns drop until it is no wider than the figure.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(figure.canvas, FigureCanvasAgg):  # a Figure made without pyplot: a canvas that measures
        FigureCanvasAgg(figure)
    renderer = figure.canvas.get_renderer()
    for ncol in range(min(4, len(handles)), 0, -1):
        legend = figure.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=7, frameon=False)
        if ncol == 1 or legend.get_window_extent(renderer).width <= figure.bbox.width * 0.98:
            return
        legend.remove()


def write_tables(rows, directory) -> list[Path]:
    """Write ``results.parquet`` and ``results.csv`` into ``directory``, each at once.

    Each is written to a temporary file of its own in ``directory`` and renamed
    over its final name when complete (:func:`~symattn.sweep.store.write_atomically`):
    a full disk or a crash leaves the previous table, never part of one, and
    writers at the same time never share a temporary file.

    Examples
    --------
    >>> import tempfile, pandas
    >>> folder = tempfile.mkdtemp()
    >>> [p.name for p in write_tables([{"layers": 1, "lower": 7}], folder)]
    ['results.parquet', 'results.csv']
    >>> pandas.read_parquet(f"{folder}/results.parquet")["lower"].tolist()
    [7]
    """
    folder = Path(directory)
    frame = table_frame(rows)
    written = []
    for name, write in (("results.parquet", lambda p: frame.to_parquet(p, index=False)),
                        ("results.csv", lambda p: frame.to_csv(p, index=False))):
        path = folder / name
        try:
            write_atomically(path, write)
        except OSError as err:
            raise SymattnError(f"cannot write {path}: {err.strerror or err}") from None
        written.append(path)
    return written

