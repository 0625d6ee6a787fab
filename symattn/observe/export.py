"""Exports of the dependency graph: DOT, GraphML, TikZ and pictures coloured by verdict."""

from __future__ import annotations

import json

import networkx as nx

from .. import naming
from .._format import latex_escape
from ..errors import SymattnError
from ..model import Architecture
from .events import COLLAPSED, OBSERVABLE, PARTIAL, UNOBSERVABLE
from .graph import Observability
from .report import ObserveResult

__all__ = ["draw", "draw_panels", "export_graph", "to_dot", "to_graphml", "to_tikz", "write_graphml"]


_COLOURS = {UNOBSERVABLE: "#e6550d", PARTIAL: "#fdae6b", OBSERVABLE: "#74c476", COLLAPSED: "#969696"}


def _graph_and_verdict(item):
    if isinstance(item, ObserveResult):
        return item.graph, item.observability
    if isinstance(item, Observability):
        return item.graph, item
    if isinstance(item, nx.DiGraph):
        return item, None
    raise SymattnError(f"export needs a dependency graph or an observe/propagate result, got {type(item).__name__}")


def _node_status(graph, verdict, node):
    if verdict is None:
        return None
    block = graph.nodes[node].get("block")
    if graph.nodes[node]["kind"] == "values":
        return verdict.verdicts["values"].status
    if block in verdict.verdicts:  # scores, and the blocks of the components after attention
        return verdict.verdicts[block].status
    return None


def _node_name(graph, node):
    """The node's entry of the naming table, or ``None`` for a kind the table does not know."""
    data = graph.nodes[node]
    layers = graph.graph["architecture"].layers if "architecture" in graph.graph else None
    try:
        return naming.node(data["kind"], data["layer"], layers)
    except ValueError:
        return None


def _node_text(graph, node) -> str:
    """Plain-text label (DOT): the node's name, its symbol with the parameters it holds, the forced state."""
    data = graph.nodes[node]
    name = _node_name(graph, node)
    text = f"{name.key}\n{name.text}" if name is not None else data["label"]
    if data.get("params"):
        text += " (" + ", ".join(data["params"]) + ")"
    if data.get("state"):
        text += "\n" + ", ".join(data["state"])
    return text


def to_dot(item) -> str:
    """The graph as Graphviz DOT text (no pydot or pygraphviz needed).

    ``item`` is a dependency graph or a result of :func:`propagate` or
    :func:`observe`; with a result, blocks are coloured by verdict and
    forced states are printed on the nodes.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph
    >>> text = to_dot(dependency_graph(Architecture.uniform(layers=1)))
    >>> text.splitlines()[0], '"scores:1" -> "attention:1";' in text
    ('digraph symattn {', True)
    """
    graph, verdict = _graph_and_verdict(item)

    def quote(text):
        return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = ["digraph symattn {", "  rankdir=LR;", '  node [shape=box, style="rounded,filled", fillcolor=white];']
    for node, data in graph.nodes(data=True):
        attrs = {"label": _node_text(graph, node), "kind": data["kind"]}
        status = _node_status(graph, verdict, node)
        if status is not None:
            attrs["fillcolor"] = _COLOURS[status]
            attrs["tooltip"] = status
        elif data.get("state"):
            attrs["fillcolor"] = "#d9d9d9"
        if data["kind"] == "attention":
            attrs["shape"] = "ellipse"
        lines.append(f"  {quote(node)} [" + ", ".join(f"{k}={quote(v)}" for k, v in attrs.items()) + "];")
    for u, v in graph.edges:
        lines.append(f"  {quote(u)} -> {quote(v)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _graphml_ready(item) -> nx.DiGraph:
    graph, verdict = _graph_and_verdict(item)
    out = nx.DiGraph()
    for key, value in graph.graph.items():
        out.graph[key] = json.dumps(value.to_json()) if isinstance(value, Architecture) else str(value)
    for node, data in graph.nodes(data=True):
        clean = {}
        for key, value in data.items():
            if isinstance(value, (tuple, list)):
                clean[key] = ",".join(str(v) for v in value)
            elif isinstance(value, (bool, int, float, str)):
                clean[key] = value
            elif value is not None:
                clean[key] = str(value)
        status = _node_status(graph, verdict, node)
        if status is not None:
            clean["verdict"] = status
        out.add_node(node, **clean)
    out.add_edges_from(graph.edges)
    return out


def to_graphml(item) -> str:
    """The graph as GraphML text (tuples become comma-separated strings).

    Examples
    --------
    >>> import networkx as nx
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph
    >>> G = dependency_graph(Architecture.uniform(layers=1))
    >>> back = nx.parse_graphml(to_graphml(G))
    >>> back.nodes["scores:1"]["params"]
    'Q_1,K_1'
    """
    return "\n".join(nx.generate_graphml(_graphml_ready(item))) + "\n"


def write_graphml(item, path) -> None:
    """Write the graph as GraphML with :func:`networkx.write_graphml`.

    Examples
    --------
    >>> import tempfile, os, networkx as nx
    >>> from symattn.model import Architecture
    >>> path = os.path.join(tempfile.mkdtemp(), "g.graphml")
    >>> from symattn.observe import dependency_graph
    >>> write_graphml(dependency_graph(Architecture.uniform(layers=1)), path)
    >>> sorted(nx.read_graphml(path).nodes)[:2]
    ['attention:1', 'input']
    """
    nx.write_graphml(_graphml_ready(item), path)


def to_tikz(item) -> str:
    """The graph as a TikZ picture (layers left to right; blocks coloured by verdict).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph
    >>> tikz = to_tikz(dependency_graph(Architecture.uniform(layers=1)))
    >>> tikz.splitlines()[0]
    '\\\\begin{tikzpicture}[>=stealth, every node/.style={draw, rounded corners, align=center}]'
    """
    graph, verdict = _graph_and_verdict(item)
    pos = _layout(graph)
    def rgb(hex_colour):  # the colours of draw() and to_dot(), in xcolor's rgb syntax
        red, green, blue = (int(hex_colour[k:k + 2], 16) for k in (1, 3, 5))
        return f"{{rgb,255:red,{red}; green,{green}; blue,{blue}}}"

    tikz_colour = {status: rgb(colour) for status, colour in _COLOURS.items()}

    def name(node):
        return node.replace(":", "")

    lines = [r"\begin{tikzpicture}[>=stealth, every node/.style={draw, rounded corners, align=center}]"]
    for node, data in graph.nodes(data=True):
        x, y = pos[node]
        status = _node_status(graph, verdict, node)
        fill = f", fill={tikz_colour[status]}" if status else (f", fill={rgb(_FORCED)}" if data.get("state") else "")
        entry = _node_name(graph, node)
        label = (naming.texttt(entry.key) + rf"\\ ${entry.latex}$") if entry is not None else f"${data['latex']}$"
        if data.get("params"):
            label += r"\\ {\scriptsize " + ", ".join(f"${p}$" for p in data["params"]) + "}"
        if data.get("state"):
            label += r"\\ {\scriptsize " + latex_escape(", ".join(data["state"])) + "}"
        lines.append(rf"  \node[rectangle{fill}] ({name(node)}) at ({2.6 * x:.1f}, {1.9 * y:.1f}) {{{label}}};")
    for u, v in graph.edges:
        lines.append(rf"  \draw[->] ({name(u)}) -- ({name(v)});")
    lines.append(r"\end{tikzpicture}")
    return "\n".join(lines) + "\n"


#: Font size (pt) of the boxes and the legend: a drawing of up to three layers printed at the width of
#: the text (6.5 in, the report's figures) keeps them at 8 pt or more.
BOX_FONT_SIZE = 11

#: Narrowest drawing (in): the legend's three columns fit in it.
MIN_WIDTH_IN = 8.0

#: Fill of the graph's boxes that are not effective blocks, and of those whose state an event forces.
_OTHER, _FORCED = "#deebf7", "#d9d9d9"

#: Legend text of each fill, in the order the legend lists them.
_LEGEND = {
    UNOBSERVABLE: "unobservable block",
    PARTIAL: "partial block (some directions lost)",
    OBSERVABLE: "observable block",
    COLLAPSED: "collapsed block (fixed by the event)",
    _FORCED: "state forced by the event",
    _OTHER: "other node",
}


def _node_fill(graph, verdict, node) -> str:
    status = _node_status(graph, verdict, node)
    if status is not None:
        return _COLOURS[status]
    return _FORCED if graph.nodes[node].get("state") else _OTHER


def _layout(graph) -> dict:
    """Compact positions: layer ``i`` in columns ``2i - 1`` (scores, values) and ``2i`` (attention, tokens);
    the output under the last tokens."""
    pos = {}
    for node, data in graph.nodes(data=True):
        i, kind = data["layer"], data["kind"]
        x, row = {"input": (0, 0), "output": (2 * i - 2, -1), "scores": (2 * i - 1, 1),
                  "attention": (2 * i, 1), "values": (2 * i - 1, -1), "tokens": (2 * i, 0)}.get(kind, (2 * i, -2))
        pos[node] = (x, 1.3 * row)  # rows apart enough for boxes of four lines
    return pos


def _draw_label(graph, node) -> str:
    """A box's text: the node's name, its symbol (mathtext) and the state an event forces."""
    data = graph.nodes[node]
    name = _node_name(graph, node)
    # a node kind the naming table does not know: its own label
    lines = [name.key, f"${name.latex}$"] if name is not None else [node, data.get("label", "")]
    if data.get("params"):
        lines[-1] += " (" + ", ".join(f"${naming.parameter(p[0], p.split('_')[1]).latex}$"
                                      if p[:1] in "QKV" and "_" in p else p for p in data["params"]) + ")"
    if data.get("state"):
        state = ", ".join(data["state"])
        lines.append(state.replace("-", "-\n") if len(state) > 12 else state)  # column-constant: two lines
    return "\n".join(line for line in lines if line)


def _draw_on(ax, graph, verdict, title: str) -> set:
    """Draw one graph on ``ax``; return the fills used (for the legend)."""
    pos = _layout(graph)
    boxes, used = {}, set()
    for node in graph.nodes:
        fill = _node_fill(graph, verdict, node)
        used.add(fill if fill in (_OTHER, _FORCED) else next(s for s, c in _COLOURS.items() if c == fill))
        x, y = pos[node]
        style = "round,pad=0.35" if graph.nodes[node]["kind"] != "attention" else "round4,pad=0.35"
        boxes[node] = ax.text(x, y, _draw_label(graph, node), ha="center", va="center", fontsize=BOX_FONT_SIZE,
                              linespacing=1.25, zorder=3,
                              bbox=dict(boxstyle=style, facecolor=fill, edgecolor="#525252", linewidth=0.8))
    for u, v in graph.edges:
        ax.annotate("", xy=pos[v], xytext=pos[u], zorder=2,
                    arrowprops=dict(arrowstyle="-|>", color="#525252", linewidth=1.0, shrinkA=2, shrinkB=2,
                                    patchA=boxes[u].get_bbox_patch(), patchB=boxes[v].get_bbox_patch(),
                                    mutation_scale=12))
    xs, ys = [x for x, _ in pos.values()], [y for _, y in pos.values()]
    ax.set_xlim(min(xs) - 0.55, max(xs) + 0.55)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.set_axis_off()
    ax.set_title(title, fontsize=BOX_FONT_SIZE + 1)
    return used


def _title(verdict) -> str:
    if verdict is None or not verdict.events:
        return "dependency graph"
    return "after " + "; ".join(f"{e.name} (${e.latex(verdict.architecture)}$)" for e in verdict.events)


def _legend(figure, used: set) -> None:
    from matplotlib.patches import Patch

    order = [UNOBSERVABLE, PARTIAL, OBSERVABLE, COLLAPSED, _FORCED, _OTHER]
    fills = {**_COLOURS, _FORCED: _FORCED, _OTHER: _OTHER}
    labels = dict(_LEGEND, **({_OTHER: "node (no events: no verdicts)"} if used == {_OTHER} else {}))
    handles = [Patch(facecolor=fills[key], edgecolor="#525252", label=labels[key]) for key in order if key in used]
    renderer = figure.canvas.get_renderer()
    for ncol in range(min(3, len(handles)), 0, -1):  # as many columns as fit the figure's width
        legend = figure.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=BOX_FONT_SIZE,
                               frameon=False)
        if ncol == 1 or legend.get_window_extent(renderer).width <= figure.bbox.width * 0.98:
            return
        legend.remove()


def _save(figure, path) -> None:
    from pathlib import Path

    figure.savefig(path, format=(Path(str(path)).suffix.lstrip(".").lower() or "png"), dpi=150)


def draw(item, path=None, ax=None):
    """Draw the graph with matplotlib (Agg canvas; no display needed); optionally save it.

    Boxes carry the node's name (:mod:`symattn.naming`), its symbol and the
    state an event forces; effective blocks are coloured by verdict, with a
    legend of every colour used.

    Parameters
    ----------
    item : graph or result
    path : str or Path, optional
        Save there (PNG, PDF or SVG by extension).
    ax : matplotlib Axes, optional
        Draw there (no legend is added: the caller's figure owns it).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph, propagate, score_collapse
    >>> figure = draw(propagate(dependency_graph(Architecture.uniform(layers=2)), [score_collapse(1)]))
    >>> figure.axes[0].get_title()
    'after scores:1 ($\\\\widehat W_{1} = 0$)'
    >>> [t.get_text() for t in figure.legends[0].get_texts()]
    ['unobservable block', 'observable block', 'collapsed block (fixed by the event)', 'state forced by the event', 'other node']
    >>> sorted(t.get_text().splitlines()[0] for t in figure.axes[0].texts if t.get_text())[:3]
    ['attention:1', 'attention:2', 'input']
    """
    return draw_panels([item], path=path, ax=ax)


def draw_panels(items, path=None, ax=None):
    """Draw several marked graphs of one network, one panel each, stacked, with one legend; optionally save.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph, propagate, score_collapse
    >>> G = dependency_graph(Architecture.uniform(layers=2))
    >>> figure = draw_panels([propagate(G, [score_collapse(1)]), propagate(G, [score_collapse(2)])])
    >>> [a.get_title() for a in figure.axes]
    ['after scores:1 ($\\\\widehat W_{1} = 0$)', 'after scores:2 ($\\\\widehat W_{2} = 0$)']
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    pairs = [_graph_and_verdict(item) for item in items]
    if not pairs:
        raise SymattnError("draw_panels needs at least one graph or result")
    if ax is not None:
        if len(pairs) != 1:
            raise SymattnError("draw_panels on a given Axes draws one graph")
        _draw_on(ax, *pairs[0], _title(pairs[0][1]))
        if path is not None:
            _save(ax.figure, path)
        return ax.figure
    columns = max(1 + max(x for x, _ in _layout(graph).values()) for graph, _ in pairs)
    # at least as wide as the legend's three columns
    figure = Figure(figsize=(max(MIN_WIDTH_IN, 1.12 * columns + 0.4), 3.1 * len(pairs) + 0.8), layout="constrained")
    FigureCanvasAgg(figure)
    used = set()
    for axes, (graph, verdict) in zip(figure.subplots(len(pairs), 1, squeeze=False)[:, 0], pairs):
        used |= _draw_on(axes, graph, verdict, _title(verdict))
    _legend(figure, used)
    if path is not None:
        _save(figure, path)
    return figure


def export_graph(item, directory, stem: str = "observe") -> list:
    """Write ``STEM.dot``, ``.graphml``, ``.png``, ``.pdf``, ``.svg`` and ``.tikz`` into ``directory``; return the paths.

    Examples
    --------
    >>> import tempfile
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph
    >>> [p.name for p in export_graph(dependency_graph(Architecture.uniform(layers=1)), tempfile.mkdtemp())]
    ['observe.dot', 'observe.graphml', 'observe.png', 'observe.pdf', 'observe.svg', 'observe.tikz']
    """
    from pathlib import Path

    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"{stem}.{ext}" for ext in ("dot", "graphml", "png", "pdf", "svg", "tikz")]
        paths[0].write_text(to_dot(item), encoding="utf-8")
        write_graphml(item, paths[1])
        figure = draw(item)
        for path in paths[2:5]:
            _save(figure, path)
        paths[5].write_text(to_tikz(item), encoding="utf-8")
    except OSError as err:
        raise SymattnError(f"cannot write the graph into {directory}: {err.strerror or err}") from None
    return paths
