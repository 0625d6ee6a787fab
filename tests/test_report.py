"""One name per block, event and parameter everywhere; commands that say what they print and write."""

from __future__ import annotations

import json

import pytest

from symattn import naming
from symattn.cli import SUBCOMMANDS, build_parser, main
from symattn.identify import identify
from symattn.model import Architecture
from symattn.observe import all_events, dependency_graph, observe, propagate, score_collapse
from symattn.observe.export import draw, draw_panels
from symattn.report import architecture_report

ARCH = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
NETWORK = ["--layers", "2", "--width", "2", "--rank", "1", "--tokens", "3"]


# -- the naming table ------------------------------------------------------------------------------
def test_naming_table_of_two_layers():
    table = naming.notation(2)
    assert [(n.key, n.latex, n.text) for n in table["blocks"]] == [
        ("scores:1", r"\widehat W_{1}", "What_1"), ("scores:2", r"\widehat W_{2}", "What_2"), ("values", "P", "P")]
    assert [(n.key, n.latex) for n in table["events"]] == [
        ("scores:1", r"\widehat W_{1} = 0"), ("scores:2", r"\widehat W_{2} = 0"), ("values:1", "V_{1} = 0"),
        ("values:2", "V_{2} = 0"), ("identical-tokens", r"X = x\,\mathbf{1}^\top"),
        ("bias", r"X_{d_0\,\cdot} = c\,\mathbf{1}^\top")]
    assert [n.key for n in table["parameters"]] == ["Q_1", "K_1", "V_1", "Q_2", "K_2", "V_2"]
    assert naming.block("scores:2") == naming.block(2) and naming.block("values") == naming.block(None)
    assert naming.event("value_rank", 2, 1).key == "value-rank:2:1"
    with pytest.raises(ValueError):
        naming.event("keys")
    with pytest.raises(ValueError):
        naming.parameter("W", 1)


def test_events_take_their_names_from_the_table():
    for event in all_events(ARCH):
        name = naming.event(event.kind, event.layer, event.rank)
        assert (event.name, event.latex(), event.describe()) == (name.key, name.latex, name.meaning)
    assert score_collapse(1).describe() == "score collapse at layer 1 (What_1 = 0, realized by Q_1 = 0)"


def test_one_name_per_block_in_text_latex_graph_and_json():
    blocks = ["scores:1", "scores:2", "values"]
    report = architecture_report(ARCH)
    data = report.to_json()
    assert [n["key"] for n in data["notation"]["blocks"]] == blocks
    assert list(data["effective_blocks"]) == ["values", "scores:1", "scores:2"]
    identification = identify(ARCH)
    assert [row[0] for row in identification._order_rows()] == blocks
    assert r"\texttt{scores:1} & 2 & 2 & yes" in identification.to_latex()
    result = observe(ARCH, ["scores:1"], confirm=False)
    assert list(result.to_json()["predicted_ranks"]) == blocks
    latex = result.to_latex()
    assert r"\texttt{scores:2} & unobservable & 0 & 3" in latex
    assert r"\texttt{scores:1} ($\widehat W_{1} = 0$)" in latex  # the event: its name, then its formula
    # the graph's boxes: the node's name first, then its symbol
    figure = draw(result)
    first_lines = sorted(t.get_text().splitlines()[0] for t in figure.axes[0].texts if t.get_text())
    assert first_lines == sorted(dependency_graph(ARCH).nodes)
    boxes = {t.get_text().splitlines()[0]: t.get_text() for t in figure.axes[0].texts if t.get_text()}
    assert boxes["scores:1"] == "scores:1\n$A_{1}$ ($Q_{1}$, $K_{1}$)\ncollapsed"
    assert boxes["values:1"] == "values:1\n$V_{1} X_{0}$ ($V_{1}$)"
    assert boxes["input"] == "input\n$X_{0}$"


def test_report_markdown_has_the_notation_section():
    markdown = architecture_report(ARCH).to_markdown()
    assert "## Notation" in markdown
    assert "| values:1 | event | `V_1 = 0` | value collapse at layer 1 (V_1 = 0) |" in markdown
    assert "| K_2 | parameter | `K_2` | key matrix of layer 2 |" in markdown


# -- figures ---------------------------------------------------------------------------------------
def test_graph_panels_have_a_legend_of_the_verdicts():
    graph = dependency_graph(Architecture.uniform(layers=3))
    figure = draw_panels([propagate(graph, [score_collapse(i)]) for i in (1, 2, 3)])
    assert [ax.get_title() for ax in figure.axes] == [
        r"after scores:1 ($\widehat W_{1} = 0$)", r"after scores:2 ($\widehat W_{2} = 0$)",
        r"after scores:3 ($\widehat W_{3} = 0$)"]
    assert [t.get_text() for t in figure.legends[0].get_texts()] == [
        "unobservable block", "observable block", "collapsed block (fixed by the event)",
        "state forced by the event", "other node"]
    # the same colours as observe --export: scores:2 is unobservable (orange-red) after scores:1
    boxes = {t.get_text().splitlines()[0]: t for t in figure.axes[0].texts if t.get_text()}
    assert boxes["scores:2"].get_bbox_patch().get_facecolor()[:3] == pytest.approx((0xe6 / 255, 0x55 / 255, 0x0d / 255))
    assert boxes["values:2"].get_bbox_patch().get_facecolor()[:3] == pytest.approx((0x74 / 255, 0xc4 / 255, 0x76 / 255))


# -- commands ----------------------------------------------------------------------------------------
def test_help_describes_every_command(capsys):
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for command in SUBCOMMANDS.values():
        assert f"{command.name} {' '.join(command.help.split())}" in out
    assert SUBCOMMANDS["report"].help.startswith("the whole report: architecture, notation, closed form")
    assert "add --standalone for a whole document" in out
    help_of = {action.dest: action.help for action in build_parser()._subparsers._group_actions[0]
               .choices["report"]._actions}
    assert help_of["standalone"].startswith("with --latex: print a whole document")


def test_sensitivity_prints_markdown_and_says_what_it_plotted(capsys, tmp_path):
    target = tmp_path / "sigma.png"
    assert main(["sensitivity", "--layers", "1", "--width", "1", "--tokens", "2", "--plot", str(target)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("| j | exact e_j | mpmath slope | float64 slope |\n|---:|---:|---:|---:|\n| 1 | 0 |")
    assert "- method: forward-mode jets" in out
    written = [target, tmp_path / "sigma.pdf", tmp_path / "sigma.svg"]
    assert err.splitlines()[-1] == "symattn: wrote " + ", ".join(map(str, written))
    assert all(path.stat().st_size > 1000 for path in written)
    assert main(["sensitivity", "--layers", "1", "--width", "1", "--tokens", "2", "--plot", "x.jpg", "--quiet"]) == 2
    assert capsys.readouterr().err == "symattn: error: --plot x.jpg: give a file ending in .png, .pdf or .svg\n"


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_export_says_what_it_wrote(capsys, tmp_path):
    assert main(["observe", *NETWORK, "--collapse", "scores:1", "--export", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    names = ["observe.dot", "observe.graphml", "observe.png", "observe.pdf", "observe.svg", "observe.tikz"]
    assert err.splitlines()[-1] == "symattn: wrote " + ", ".join(str(tmp_path / n) for n in names)
    assert main(["observe", *NETWORK, "--collapse", "scores:1", "--export", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_identify_headings_start_at_level_two(capsys):
    assert main(["identify", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet"]) == 0
    headings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("#")]
    assert headings == ["## Dimension of the function space", "## Generic fiber",
                        "## Identification orders along simultaneous query/key collapse Q_i = eps Qt_i, "
                        "K_i = eps Kt_i (layers 1..1)"]
    assert main(["identify", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--latex"]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("\\subsection")] == [
        "\\subsection*{Dimension of the function space}", "\\subsection*{Generic fiber}",
        "\\subsection*{Identification orders along simultaneous query/key collapse $Q_{i}$ = $\\varepsilon$ "
        "$\\tilde Q_{i}$, $K_{i}$ = $\\varepsilon$ $\\tilde K_{i}$ (layers 1..1)}"]
    assert "dimension of the function space & value \\\\" in out  # the dimension table has its header


def test_report_json_has_the_notation(capsys):
    assert main(["report", "--json", "--quiet", "--layers", "1", "--width", "1", "--tokens", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["notation"]["blocks"] == [
        {"key": "scores:1", "latex": r"\widehat W_{1}", "text": "What_1",
         "meaning": "effective scores What_1 = P_0^T K_1^T Q_1 P_0 of layer 1 (from Q_1, K_1)"},
        {"key": "values", "latex": "P", "text": "P", "meaning": "combined value map P = V_l ... V_1 (every V_i)"}]


def test_spectrum_with_unresolved_directions_is_undecided(capsys):
    assert main(["spectrum", *NETWORK, "--truncation", "3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "- matches the prediction: undecided: 3 unresolved at truncation 3 (raise --truncation)" in out
    assert "| 5 | ? | 3 |" in out and "| >= 3 (unresolved) | 3 | |" in out
    assert "False" not in out.split("matches the prediction:")[1].splitlines()[0]


def test_block_comparison_keys_are_ints_like_the_exponents():
    from symattn.spectrum import decay_spectrum

    s = decay_spectrum(ARCH, progress=False)
    assert s.exponents == {0: 4, 1: 3, 5: 3}
    assert s.block_comparison() == [
        {"block": "scores:1", "computed": {1: 3}, "predicted": {1: 3}, "agrees": True},
        {"block": "scores:2", "computed": {5: 3}, "predicted": {5: 3}, "agrees": True},
        {"block": "values", "computed": {0: 4}, "predicted": {0: 4}, "agrees": True}]
    # JSON keys are strings, as in "spectrum"
    assert s.to_json()["block_comparison"][1] == {"block": "scores:2", "computed": {"5": 3}, "predicted": {"5": 3},
                                                  "agrees": True}
    assert "| scores:2 | 3 x eps^5 | 3 x eps^5 | yes |" in s.to_markdown()
    assert r"\texttt{scores:2} & $3 \times \varepsilon^{5}$ & $3 \times \varepsilon^{5}$ & yes \\" in s.to_latex()


def test_dot_tikz_and_drawing_share_names_and_colours():
    from symattn.observe import to_dot, to_tikz

    result = observe(ARCH, ["scores:1"], confirm=False)
    dot, tikz = to_dot(result), to_tikz(result)
    assert '"scores:2" [label="scores:2\\nA_2 (Q_2, K_2)\\ncolumn-constant", kind="scores", fillcolor="#e6550d", ' \
           'tooltip="unobservable"];' in dot
    assert r"\node[rectangle, fill={rgb,255:red,230; green,85; blue,13}] (scores2) at (7.8, 2.5) " \
           r"{\texttt{scores:2}\\ $A_{2}$\\ {\scriptsize $Q_2$, $K_2$}\\ {\scriptsize column-constant}};" in tikz
    assert '"values:1" [label="values:1\\nV_1 X_0 (V_1)", kind="values", fillcolor="#74c476"' in dot


def test_a_graph_without_events_says_it_has_no_verdicts():
    figure = draw(dependency_graph(ARCH))
    assert figure.axes[0].get_title() == "dependency graph"
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["node (no events: no verdicts)"]


def test_prose_formulas_are_typeset_in_latex():
    from symattn._format import latex_method, latex_prose

    assert latex_prose("below eps^19 at Q_i = eps Qt_i") == \
        r"below $\varepsilon^{19}$ at $Q_{i}$ = $\varepsilon$ $\tilde Q_{i}$"
    assert latex_prose("What_3 = 0; P_0^T; k_1 = 2; x <= 1; a -> b; sign_group_order; GF(p)") == \
        r"$\widehat W_{3}$ = 0; $P_{0}^\top$; $k_{1}$ = 2; x $\le$ 1; a $\to$ b; sign\_group\_order; GF(p)"
    assert latex_method("ranks mod eps^(N) at 50% & more") == \
        r"\par\smallskip\noindent{\small \textit{Method:} ranks mod $\varepsilon^{N}$ at 50\% \& more.}\par"


def test_graph_labels_are_legible_at_print_size():
    from symattn.observe.export import BOX_FONT_SIZE

    for layers in (1, 2, 3):
        graph = dependency_graph(Architecture.uniform(layers=layers))
        figure = draw_panels([propagate(graph, [score_collapse(i)]) for i in range(1, layers + 1)])
        width = figure.get_size_inches()[0]
        # printed at the width of the text (6.5 in), as in the report, the box text stays at 8 pt or more
        assert BOX_FONT_SIZE * min(1.0, 6.5 / width) >= 8.0, (layers, width)
        assert {t.get_fontsize() for t in figure.axes[0].texts if t.get_text()} == {BOX_FONT_SIZE}


@pytest.mark.parametrize("layers, heads", [(1, 1), (2, 1), (3, 1), (2, 2)])
def test_graph_legend_fits_the_figure(layers, heads):
    graph = dependency_graph(Architecture.uniform(layers=layers, heads=heads))
    figure = draw_panels([propagate(graph, [score_collapse(i)]) for i in range(1, layers + 1)])
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    legend = figure.legends[0].get_window_extent(renderer)
    page = figure.bbox
    assert page.x0 <= legend.x0 and legend.x1 <= page.x1 and page.y0 <= legend.y0
    for ax in figure.axes:  # and every box inside its panel
        for text in ax.texts:
            if text.get_text():
                box = text.get_bbox_patch().get_window_extent(renderer)
                assert page.x0 <= box.x0 and box.x1 <= page.x1, text.get_text()


@pytest.mark.parametrize("variant, blocks, parameters, gauge", [
    ({}, ["scores:1", "scores:2", "values"], ["Q_1", "K_1", "V_1", "Q_2", "K_2", "V_2"], "GL(a_i) x GL(d_i)"),
    # a causal mask alone keeps F = P X M_l: the effective blocks stay
    ({"causal": True}, ["scores:1", "scores:2", "values"], ["Q_1", "K_1", "V_1", "Q_2", "K_2", "V_2"],
     "the product of one GL(a_i) per head and one GL(d_i) per hidden layer"),
    ({"heads": [1, 2]}, ["scores:1", "scores:2:1", "scores:2:2", "values"],
     ["Q_1", "K_1", "V_1", "Q_{2,1}", "K_{2,1}", "V_{2,1}", "Q_{2,2}", "K_{2,2}", "V_{2,2}"],
     "the product of one GL(a_i) per head and one GL(d_i) per hidden layer, head permutations"),
    ({"residual": True}, ["scores:1", "scores:2", "values"], ["Q_1", "K_1", "V_1", "Q_2", "K_2", "V_2"],
     "one GL(a_i) per head (none on the hidden widths"),
])
def test_the_notation_and_method_of_a_variant_claim_only_what_it_has(variant, blocks, parameters, gauge):
    from symattn.report import architecture_report

    report = architecture_report(Architecture.uniform(layers=2, **variant))
    table = report.notation()
    assert [n.key for n in table["blocks"]] == blocks
    assert [n.key for n in table["parameters"]] == parameters
    assert gauge in report.method
    factors = not variant.get("residual") and variant.get("heads") is None
    # What_i = P^T K^T Q P and P are named only where F factors through them
    assert any("What_" in n.text for n in table["blocks"]) == factors
    assert ("no effective dimension claimed" in report.method) == (not factors)
    if not factors:
        assert all("no effective block claimed" in n.meaning for n in table["blocks"][:-1])
