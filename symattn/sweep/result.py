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

from .._format import FormattedResult, latex_array, latex_escape, latex_tabular, markdown_table
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
    """A table cell: nested values as compact JSON, floats short."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else value


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

    def _analysis_table(self, analysis: str):
        columns = self._point_columns() + [c for c in SUMMARY_COLUMNS.get(analysis, ())] + ["status", "bound"]
        rows = [[_cell(row.get(c)) for c in columns] for row in self.rows if row["analysis"] == analysis]
        return columns, rows

    def _problem_tables(self):
        skipped = [[skip.point and " ".join(f"{k}={_cell(v)}" for k, v in skip.point.items()),
                    skip.analysis or "all", skip.reason] for skip in self.skips]
        failed = [[" ".join(f"{c}={_cell(row.get(c))}" for c in self._point_columns()), row["analysis"],
                   row["status"], row["reason"]] for row in self.rows if row["status"] != "ok"]
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
        def tabular(header, rows):
            return latex_tabular([[latex_escape(c) for c in row] for row in rows], "l" * len(header),
                                 header=[latex_escape(h) for h in header])

        parts = [f"\\section*{{{latex_escape(self._title())}}}", tabular(("quantity", "value"), self._counts())]
        for analysis in self.analyses:
            columns, rows = self._analysis_table(analysis)
            if rows:
                parts += [f"\\subsection*{{{latex_escape(analysis)}}}", "{\\small", tabular(columns, rows), "}"]
        skipped, failed = self._problem_tables()
        if failed:
            parts += ["\\subsection*{Not computed}", "{\\small", tabular(("point", "analysis", "status", "reason"),
                                                                         failed), "}"]
        if skipped:
            parts += ["\\subsection*{Skipped}", "{\\small", tabular(("point", "analysis", "reason"), skipped), "}"]
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
            ax.set_title("dimension vs l a (2d - a) + d^2\n" + ", ".join(
                f"{names.get(column, column)} = {value}" for column, value in key if value != ""), fontsize=9)
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
                            label=f"{normalizer}: predicted")
                computed = sorted(points["computed"].items())
                ax.scatter([layer for (layer, _), _ in computed], [exponent for (_, exponent), _ in computed],
                           s=40, color=color, zorder=3, label=f"{normalizer}: computed")
                for (layer, exponent), counts in computed:
                    ticks.add(exponent)
                    if name == "spectrum":
                        ax.annotate("x" + ",".join(map(str, sorted(counts))), (layer, exponent),
                                    textcoords="offset points", xytext=(7, -3), fontsize=7, color=color)
            ax.set_yscale("log")
            ax.set_yticks(sorted(ticks), [str(tick) for tick in sorted(ticks)])
            ax.minorticks_off()
            ax.set_xticks(sorted({layer for points in series.values() for layer, _ in points["computed"]}))
            ax.set_xlabel("layer i")
            what = "contact order (decay exponent)" if name == "spectrum" else "identification order"
            ax.set_ylabel(what)
            prediction = "2k 3^(i-1) - 1" if name == "spectrum" else "2k 3^(i-1)"
            ax.set_title(f"{what} of the scores of layer i\ndots: computed (x multiplicities); lines: {prediction}",
                         fontsize=9)
            ax.legend(fontsize=7, loc="upper left")
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
        figure = Figure(figsize=(1.2 + 0.9 * len(blocks) + 3, 0.8 + 0.35 * len(rows)), layout="constrained")
        ax = figure.subplots()
        ax.set_xlim(-0.5, len(blocks) - 0.5)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        for y, row in enumerate(rows):
            for verdict, color in _VERDICT_COLORS.items():
                for block in row.get(verdict) or []:
                    ax.add_patch(_square(blocks.index(block), y, color))
            if not row.get("agrees_with_rank", True):
                ax.text(len(blocks) - 0.45, y, "ranks disagree", fontsize=7, va="center")
        labels = [_label(row, self._point_columns()) + "  | " + (", ".join(row.get("events") or []) or "generic")
                  for row in rows]
        ax.set_xticks(range(len(blocks)), blocks)
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        ax.legend(handles=[Patch(color=c, label=v) for v, c in _VERDICT_COLORS.items()], fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.01, 1))
        ax.set_title("observability of each block after the events (proved by exact ranks)", fontsize=9)
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
            write_atomically(path, lambda temporary, figure=figure: figure.savefig(temporary, format="png", dpi=120))
        except OSError as err:
            raise SymattnError(f"cannot write {path}: {err.strerror or err}") from None
        written.append(path)
    return written


def _square(x, y, color):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.48, y - 0.48), 0.96, 0.96, color=color)


def _label(row: dict, columns: list[str], skip=()) -> str:
    return " ".join(f"{c}={_cell(row.get(c))}" for c in columns if c not in skip and row.get(c) is not None) \
        or "all points"


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

