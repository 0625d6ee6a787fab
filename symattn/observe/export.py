"""Exports of the dependency graph: DOT, GraphML, TikZ and pictures coloured by verdict."""

from __future__ import annotations

import json

import networkx as nx

from .._format import latex_escape
from ..errors import SymattnError
from ..model import Architecture
from .events import COLLAPSED, OBSERVABLE, PARTIAL, UNOBSERVABLE
from .graph import Observability
from .report import ObserveResult

__all__ = ["draw", "export_graph", "to_dot", "to_graphml", "to_tikz", "write_graphml"]


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
    if graph.nodes[node]["kind"] == "scores":
        return verdict.verdicts[block].status
    if graph.nodes[node]["kind"] == "values":
        return verdict.verdicts["values"].status
    return None


def _layout(graph) -> dict:
    pos = {}
    for node, data in graph.nodes(data=True):
        i, kind = data["layer"], data["kind"]
        pos[node] = {"input": (0, 0), "output": (3 * i - 2, 0), "scores": (3 * i - 2, 1),
                     "attention": (3 * i - 1, 1), "values": (3 * i - 2, -1), "tokens": (3 * i, 0)}[kind]
    return pos


def _node_text(graph, node) -> str:
    data = graph.nodes[node]
    text = data["label"]
    if data.get("params"):
        text += "\n" + ", ".join(data["params"])
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
    tikz_colour = {UNOBSERVABLE: "red!60", PARTIAL: "orange!50", OBSERVABLE: "green!40", COLLAPSED: "gray!50"}

    def name(node):
        return node.replace(":", "")

    lines = [r"\begin{tikzpicture}[>=stealth, every node/.style={draw, rounded corners, align=center}]"]
    for node, data in graph.nodes(data=True):
        x, y = pos[node]
        status = _node_status(graph, verdict, node)
        fill = f", fill={tikz_colour[status]}" if status else (", fill=gray!15" if data.get("state") else "")
        label = f"${data['latex']}$"
        if data.get("params"):
            label += r"\\ {\scriptsize " + ", ".join(f"${p}$" for p in data["params"]) + "}"
        if data.get("state"):
            label += r"\\ {\scriptsize " + latex_escape(", ".join(data["state"])) + "}"
        lines.append(rf"  \node[{'ellipse' if data['kind'] == 'attention' else 'rectangle'}{fill}] "
                     rf"({name(node)}) at ({1.8 * x:.1f}, {1.6 * y:.1f}) {{{label}}};")
    for u, v in graph.edges:
        lines.append(rf"  \draw[->] ({name(u)}) -- ({name(v)});")
    lines.append(r"\end{tikzpicture}")
    return "\n".join(lines) + "\n"


def draw(item, path=None, ax=None):
    """Draw the graph with matplotlib (Agg canvas; no display needed); optionally save it.

    Parameters
    ----------
    item : graph or result
    path : str or Path, optional
        Save there (PNG, PDF or SVG by extension).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph
    >>> figure = draw(dependency_graph(Architecture.uniform(layers=1)))
    >>> len(figure.axes)
    1
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    graph, verdict = _graph_and_verdict(item)
    if ax is None:
        layers = max(d["layer"] for _, d in graph.nodes(data=True))
        figure = Figure(figsize=(2.2 + 2.6 * layers, 4.2))
        FigureCanvasAgg(figure)
        ax = figure.add_subplot(1, 1, 1)
    else:
        figure = ax.figure
    pos = _layout(graph)
    colours = []
    for node, data in graph.nodes(data=True):
        status = _node_status(graph, verdict, node)
        colours.append(_COLOURS[status] if status else ("#d9d9d9" if data.get("state") else "#deebf7"))
    nx.draw_networkx(graph, pos, ax=ax, node_color=colours, node_size=1500, node_shape="s",
                     labels={n: _node_text(graph, n) for n in graph.nodes}, font_size=7,
                     arrows=True, arrowsize=12, edge_color="#525252")
    ax.set_axis_off()
    events = ", ".join(e.name for e in verdict.events) if verdict is not None else ""
    ax.set_title("dependency graph" + (f" after {events}" if events else ""))
    if path is not None:
        figure.savefig(path, dpi=120, bbox_inches="tight")
    return figure


def export_graph(item, directory, stem: str = "observe") -> list:
    """Write ``STEM.dot``, ``STEM.graphml``, ``STEM.png`` and ``STEM.tikz`` into ``directory``.

    Examples
    --------
    >>> import tempfile
    >>> from symattn.model import Architecture
    >>> from symattn.observe import dependency_graph
    >>> [p.name for p in export_graph(dependency_graph(Architecture.uniform(layers=1)), tempfile.mkdtemp())]
    ['observe.dot', 'observe.graphml', 'observe.png', 'observe.tikz']
    """
    from pathlib import Path

    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"{stem}.{ext}" for ext in ("dot", "graphml", "png", "tikz")]
        paths[0].write_text(to_dot(item), encoding="utf-8")
        write_graphml(item, paths[1])
        draw(item, paths[2])
        paths[3].write_text(to_tikz(item), encoding="utf-8")
    except OSError as err:
        raise SymattnError(f"cannot write the graph into {directory}: {err.strerror or err}") from None
    return paths
