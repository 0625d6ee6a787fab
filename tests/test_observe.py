"""Observability after collapse: graph verdicts, proved by exact ranks; exports; the CLI.

Every verdict of the dependency graph is checked against the exact rank of
the native Jacobian on the collapsed set (over GF(p)((eps)), two primes);
where a second independent computation is cheap, it is done too: exact
rational evaluation for polynomial normalizers, 60-digit mpmath for softmax
and cosh.  A disagreement between graph and rank fails a test.
"""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import networkx as nx
import numpy as np
import pytest

from symattn.algebra.domains import MpmathDomain, RationalDomain
from symattn.cli import SUBCOMMANDS, main
from symattn.effective import effective_scores, sign_flip
from symattn.errors import NormalizerError, ShapeError, SymattnError
from symattn.model import Architecture, forward
from symattn.normalizers import Normalizer
from symattn.observe import (
    Event,
    graph_rank_disagreements,
    all_events,
    bias_coordinate,
    contact_orders,
    dependency_graph,
    draw,
    exceptional_fibers,
    export_graph,
    identical_tokens,
    minimal_collapses,
    observe,
    parse_event,
    propagate,
    rank_check,
    score_collapse,
    to_dot,
    to_graphml,
    to_tikz,
    value_collapse,
    value_rank,
    write_graphml,
)

NORMALIZERS = ["softmax", "cosh", "1 + x**2", "gauss", "sigmoid"]


def _arch(layers=2, width=2, rank=1, normalizer="softmax", tokens=3):
    return Architecture.uniform(layers=layers, width=width, rank=rank, tokens=tokens, normalizer=normalizer)


# -- the graph -------------------------------------------------------------------------------
def test_dependency_graph_nodes_edges_and_parameters():
    G = dependency_graph(_arch(layers=3))
    assert set(G.nodes) == {"input", "output"} | {
        f"{kind}:{i}" for kind in ("scores", "attention", "values", "tokens") for i in (1, 2, 3)}
    assert G.number_of_edges() == 5 * 3 + 1
    assert G.nodes["scores:2"]["params"] == ("Q_2", "K_2")
    assert G.nodes["scores:2"]["effective"] == "What_2"
    assert G.nodes["values:3"]["params"] == ("V_3",)
    assert G.nodes["attention:1"]["k"] == 1 and G.nodes["attention:1"]["exponential"] is True
    # an edge means "is computed from": every node is computed from the input, the output from all
    assert nx.is_directed_acyclic_graph(G)
    assert nx.descendants(G, "input") == set(G.nodes) - {"input"}
    assert nx.ancestors(G, "output") == set(G.nodes) - {"output"}
    assert sorted(G.predecessors("scores:2")) == ["tokens:1"]
    assert sorted(G.predecessors("tokens:2")) == ["attention:2", "values:2"]


def test_events_parse_validate_and_list():
    assert parse_event("scores:2") == score_collapse(2)
    assert parse_event("values:1") == value_collapse(1)
    assert parse_event("value-rank:1:1") == value_rank(1, 1)
    assert parse_event("identical-tokens") == identical_tokens()
    assert parse_event("bias") == bias_coordinate()
    assert all(parse_event(e.name) == e for e in all_events(_arch(layers=3, width=3)))
    arch = _arch(layers=2)
    with pytest.raises(ShapeError, match="layers 1..2"):
        propagate(dependency_graph(arch), ["scores:3"])
    with pytest.raises(ShapeError, match="lower rank is 1..1"):
        value_rank(1, 2).validate(arch)
    with pytest.raises(SymattnError, match="cannot read the event"):
        parse_event("queries:1")
    with pytest.raises(SymattnError, match="contradict"):
        propagate(dependency_graph(arch), ["values:1", "value-rank:1:1"])
    with pytest.raises(ShapeError, match="d_0 >= 2"):
        bias_coordinate().validate(Architecture([1, 2], [1]))
    with pytest.raises(SymattnError):
        Event("keys")
    with pytest.raises(ShapeError, match="one token"):
        propagate(dependency_graph(_arch(tokens=1)), [])
    with pytest.raises(ShapeError, match="one token"):
        rank_check(_arch(tokens=1))


def test_lightning_is_refused_by_propagation_and_rank():
    arch = Architecture.uniform(layers=2, normalizer=Normalizer.lightning())
    G = dependency_graph(arch)
    assert G.nodes["attention:1"]["lightning"] is True
    with pytest.raises(NormalizerError, match="lightning"):
        propagate(G, ["scores:1"])
    with pytest.raises(NormalizerError, match="lightning"):
        rank_check(arch, ["scores:1"])


# -- the mathematical facts, graph and rank ---------------------------------------------------
@pytest.mark.parametrize("normalizer", NORMALIZERS + [Normalizer.generic(k=1), Normalizer.generic(k=2)])
def test_score_collapse_hides_every_later_layer_for_every_normalizer(normalizer):
    arch = _arch(layers=3, normalizer=normalizer)
    for i in (1, 2, 3):
        result = observe(arch, [score_collapse(i)])
        later = [f"scores:{j}" for j in range(i + 1, 4)]
        earlier = [f"scores:{j}" for j in range(1, i)]
        assert result.unobservable == later
        assert result.observable == earlier + ["values"]
        assert result.collapsed == [f"scores:{i}"]
        assert result.agrees_with_rank, result.disagreements
        assert result.rank.confirmed
        for j in range(i + 1, 4):
            assert result.rank.on_set[f"scores:{j}"] == 0
        for j in range(1, i):
            assert result.rank.on_set[f"scores:{j}"] == result.rank.generic[f"scores:{j}"] == 3
        assert result.rank.on_set["values"] == 4
        # reason: a path from the collapsed scores to the uniform attention of the later layer
        for block in later:
            path = result.observability.verdicts[block].reasons[0].path
            assert path[0] == f"scores:{i}" and path[-1] == block.replace("scores", "attention")
            assert nx.is_path(dependency_graph(arch), list(path))


@pytest.mark.parametrize("normalizer", ["softmax", "cosh", "1 + x**2"])
def test_value_collapse_hides_everything(normalizer):
    arch = _arch(layers=3, normalizer=normalizer)
    for i in (1, 2, 3):
        result = observe(arch, [value_collapse(i)], confirm=False)
        assert result.unobservable == ["scores:1", "scores:2", "scores:3"]
        assert result.collapsed == ["values"] and result.observable == []
        assert result.agrees_with_rank, result.disagreements
        assert result.rank.on_set == {"scores:1": 0, "scores:2": 0, "scores:3": 0, "values": 0}
        # only the directions leaving V_i = 0 are seen: the rank of dP = V_l..dV_i..V_1, d_l d_0 = 4
        assert result.rank.set_total == 4 and result.fiber_dim_jump == 13 - 4


def test_identical_tokens_make_all_scores_unobservable_values_observable():
    for normalizer in ("softmax", "cosh"):
        result = observe(_arch(layers=2, normalizer=normalizer), [identical_tokens()])
        assert result.unobservable == ["scores:1", "scores:2"] and result.observable == ["values"]
        assert result.rank.on_set == {"scores:1": 0, "scores:2": 0, "values": 4}
        assert result.agrees_with_rank
        assert result.observability.verdicts["scores:1"].reasons[0].path == ("input", "scores:1", "attention:1")


def test_rank_deficient_value_map_hides_part_of_what_follows():
    # d = 2, a = 1, V_1 of rank 1: What_2 = P_1^T W_2 P_1 keeps 1 of its 3 directions
    result = observe(_arch(layers=3), [value_rank(1, 1)])
    assert result.partial == ["scores:2", "scores:3"] and result.observable == ["scores:1"]
    assert result.rank.on_set == {"scores:1": 3, "scores:2": 1, "scores:3": 1, "values": 3}
    assert result.agrees_with_rank and result.fiber_dim_jump == 4
    # at the last layer a lower rank hides nothing
    last = observe(_arch(layers=2), [value_rank(2, 1)])
    assert last.partial == [] and last.fiber_dim_jump == 0 and last.agrees_with_rank
    # d = 3, a = 2: V_1 of rank r leaves rank_matrix_dimension(r, r, min(2, r)) of What_2's 8
    arch = _arch(layers=2, width=3, rank=2)
    for r, kept in ((1, 1), (2, 4)):
        result = observe(arch, [value_rank(1, r)], confirm=False)
        assert result.observability.verdicts["scores:2"].predicted_rank == kept
        assert result.rank.on_set["scores:2"] == kept and result.rank.generic["scores:2"] == 8
        assert result.agrees_with_rank


# -- normalizer conditions that change a verdict ------------------------------------------------
def test_bias_coordinate_softmax_partial_cosh_observable_by_rank():
    # the claim of MATH.md section 3, at every layer (the constant coordinate survives attention)
    softmax = observe(_arch(layers=2, normalizer="softmax"), [bias_coordinate()])
    cosh = observe(_arch(layers=2, normalizer="cosh"), [bias_coordinate()])
    assert softmax.partial == ["scores:1", "scores:2"]
    assert softmax.rank.on_set == {"scores:1": 2, "scores:2": 2, "values": 4}
    assert softmax.fiber_dim_jump == 2
    assert cosh.partial == [] and cosh.observable == ["scores:1", "scores:2", "values"]
    assert cosh.rank.on_set == {"scores:1": 3, "scores:2": 3, "values": 4}
    assert cosh.fiber_dim_jump == 0
    assert softmax.agrees_with_rank and cosh.agrees_with_rank
    reason = softmax.observability.verdicts["scores:1"].reasons[0]
    assert reason.rule == "shift-invariance" and "exponential" in reason.condition
    # a wider example: d = 3, a = 2 loses a = 2 directions per layer
    wide = observe(_arch(layers=2, width=3, rank=2), [bias_coordinate()], confirm=False)
    assert wide.rank.on_set["scores:1"] == wide.rank.generic["scores:1"] - 2 == 6
    assert wide.agrees_with_rank
    # mixed layers: only the exponential one loses directions
    mixed = observe(Architecture.uniform(layers=2, normalizer=["cosh", "softmax"]), [bias_coordinate()])
    assert mixed.partial == ["scores:2"] and mixed.agrees_with_rank


def _mp_forward(arch, Q, K, V, X, dps=60):
    with mpmath.workdps(dps):
        out = forward(arch, arch.parameters_from(Q, K, V), X, MpmathDomain(dps))
        return [mpmath.mpf(v) for v in np.asarray(out).ravel()]


def test_bias_hidden_direction_is_exactly_invisible_for_softmax_only():
    """Second check, independent of the ranks: move K_1 by e_b^T (What_1 += e_b q^T) at 60 digits."""
    rng = np.random.default_rng(3)
    Q = [[[Fraction(int(v), 5) for v in rng.integers(-5, 6, 2)]] for _ in range(2)]
    K = [[[Fraction(int(v), 5) for v in rng.integers(-5, 6, 2)]] for _ in range(2)]
    V = [[[Fraction(int(v), 3) for v in row] for row in rng.integers(-4, 5, (2, 2))] for _ in range(2)]
    moved = [[[K[0][0][0], K[0][0][1] + Fraction(7, 4)]], K[1]]  # K_1 + (7/4) e_b^T
    visible = [[[K[0][0][0] + Fraction(7, 4), K[0][0][1]]], K[1]]  # K_1 + (7/4) e_1^T
    X = [[Fraction(int(v), 4) for v in rng.integers(-6, 7, 3)], [1, 1, 1]]  # bias row
    for name, hidden in (("softmax", True), ("cosh", False)):
        arch = _arch(layers=2, normalizer=name)
        base = _mp_forward(arch, Q, K, V, X)
        diff_hidden = max(abs(a - b) for a, b in zip(base, _mp_forward(arch, Q, moved, V, X)))
        diff_visible = max(abs(a - b) for a, b in zip(base, _mp_forward(arch, Q, visible, V, X)))
        assert diff_visible > 1e-6
        assert (diff_hidden < mpmath.mpf(10) ** -50) is hidden


def test_first_nonconstant_degree_decides_the_directions_leaving_a_collapse():
    # k = 1: leaving What_i = 0 is seen at first order (rank a d = 2); k >= 2: s'(0) = 0, rank 0
    expected = {"softmax": (2, 4), "sigmoid": (2, 4), Normalizer.generic(k=1): (2, 4),
                "cosh": (0, 6), "1 + x**2": (0, 6), Normalizer.generic(k=2): (0, 6)}
    for normalizer, (normal, jump) in expected.items():
        result = observe(_arch(layers=2, normalizer=normalizer), [score_collapse(1)])
        assert result.rank.normal == {"scores:1": normal}
        assert result.observability.normal_first_order == {"scores:1": "positive" if normal else 0}
        assert result.fiber_dim_jump == jump and result.agrees_with_rank


def test_evenness_changes_the_sign_fiber_not_the_ranks():
    even, odd = Normalizer("1 + x**2"), Normalizer("1 + x**2 + x**3 + x**4")  # both k = 2
    results = {n: observe(_arch(layers=2, normalizer=n), [score_collapse(2)]) for n in (even, odd)}
    assert results[even].rank.to_json()["ranks_on_set"] == results[odd].rank.to_json()["ranks_on_set"]
    assert results[even].fiber_dim_jump == results[odd].fiber_dim_jump == 3
    assert (results[even].observability.generic_sign_components,
            results[even].observability.sign_components) == (4, 2)
    assert (results[odd].observability.generic_sign_components,
            results[odd].observability.sign_components) == (1, 1)
    # exact check over Q at a point of the set (Q_2 = 0): flipping What_1 keeps F for the even s only
    arch_even, arch_odd = _arch(layers=2, normalizer=even), _arch(layers=2, normalizer=odd)
    params = arch_even.parameters_from(
        [[[1, 2]], [[0, 0]]], [[[3, -1]], [[2, 5]]], [[[1, 2], [-1, 1]], [[2, 1], [1, 3]]])
    flipped = sign_flip(params, [1])
    assert effective_scores(flipped)[0] == -effective_scores(params)[0] != effective_scores(params)[0]
    X = [[1, Fraction(1, 2), -2], [3, 1, Fraction(-1, 3)]]
    QQ = RationalDomain()
    assert (forward(arch_even, params, X, QQ) == forward(arch_even, flipped, X, QQ)).all()
    assert not (forward(arch_odd, params, X, QQ) == forward(arch_odd, flipped, X, QQ)).all()


def test_contact_orders_near_collapse_depend_on_k():
    # What_1 ~ delta: later scores are seen at order delta^(2k), the collapsed block's normal
    # directions at delta^(k-1) and its remaining direction at delta^k
    softmax = contact_orders(_arch(layers=2, normalizer="softmax"), "scores:1")
    cosh = contact_orders(_arch(layers=2, normalizer="cosh"), "scores:1")
    assert softmax.stable and cosh.stable
    assert softmax.orders == {"scores:1": {0: 2, 1: 1}, "scores:2": {2: 3}, "values": {0: 4}}
    assert cosh.orders == {"scores:1": {1: 2, 2: 1}, "scores:2": {4: 3}, "values": {0: 4}}
    # a lower-rank V_1: the two hidden directions of What_2 come back at delta^1
    near_rank = contact_orders(_arch(layers=2), "value-rank:1:1")
    assert near_rank.orders["scores:2"] == {0: 1, 1: 2}
    with pytest.raises(SymattnError, match="class of inputs"):
        contact_orders(_arch(layers=2), "bias")


def test_disagreement_between_graph_and_rank_is_reported():
    # the graph told that s is cosh, the ranks computed with softmax: the checker must object
    arch = _arch(layers=2, normalizer="softmax")
    wrong = propagate(dependency_graph(arch), [bias_coordinate()], normalizer="cosh")
    problems = graph_rank_disagreements(wrong, rank_check(arch, [bias_coordinate()], confirm=False))
    assert len(problems) == 2 and "the graph says observable, the rank says partial" in problems[0]


def test_every_reason_is_a_directed_path_and_every_block_has_one():
    arch = _arch(layers=3, width=2)
    G = dependency_graph(arch)
    import itertools

    for size in (0, 1, 2):
        for events in itertools.combinations(all_events(arch), size):
            try:
                verdict = propagate(G, events)
            except SymattnError:
                continue
            assert list(verdict.verdicts) == ["scores:1", "scores:2", "scores:3", "values"]
            for block, v in verdict.verdicts.items():
                assert v.reasons
                for reason in v.reasons:
                    assert nx.is_path(G, list(reason.path)), (events, block, reason)


# -- queries on the graph ----------------------------------------------------------------------
def test_minimal_collapses():
    G = dependency_graph(_arch(layers=3))
    names = lambda sets: [[e.name for e in s] for s in sets]  # noqa: E731
    assert names(minimal_collapses(G, "scores:3")) == [
        ["scores:1"], ["scores:2"], ["values:1"], ["values:2"], ["values:3"], ["identical-tokens"]]
    assert names(minimal_collapses(G, "scores:1")) == [
        ["values:1"], ["values:2"], ["values:3"], ["identical-tokens"]]
    assert names(minimal_collapses(G, "scores:2", level="partial")) == [
        ["scores:1"], ["values:1"], ["values:2"], ["values:3"], ["value-rank:1:1"], ["identical-tokens"],
        ["bias"]]
    assert minimal_collapses(G, "scores:2", normalizer="cosh", level="partial")[-1] != (bias_coordinate(),)
    assert minimal_collapses(G, "values", max_size=2) == []
    with pytest.raises(SymattnError, match="block"):
        minimal_collapses(G, "scores:9")


def test_propagate_states_and_normalizer_override():
    G = dependency_graph(_arch(layers=3))
    verdict = propagate(G, [score_collapse(1)])
    assert verdict.states["attention:1"] == ("uniform",)
    assert verdict.states["tokens:1"] == ("identical",)
    assert verdict.states["scores:2"] == ("column-constant",)
    assert verdict.states["output"] == ("identical",)
    assert verdict.graph.nodes["attention:3"]["state"] == ("uniform",)
    assert "state" not in G.nodes["attention:3"]  # the input graph is not changed
    zero = propagate(G, [value_collapse(2)])
    assert zero.states["tokens:3"] == ("zero",) and zero.states["tokens:1"] == ()
    assert zero.verdicts["scores:1"].reasons[0].rule == "zero-tokens"
    assert propagate(G, [bias_coordinate()], normalizer=["softmax", "cosh", "cosh"]).partial == ["scores:1"]


# -- exceptional fibers -----------------------------------------------------------------------
@pytest.mark.parametrize("normalizer", ["softmax", "cosh"])
def test_exceptional_fibers_all_rows_agree_with_rank(normalizer):
    arch = _arch(layers=2, normalizer=normalizer)
    table = exceptional_fibers(arch, max_events=2)
    assert table.agrees_with_rank
    assert len(table.rows) == 8 + 28 - 2 and len(table.skipped) == 2
    assert table.generic_rank == 10
    row = table.row("scores:1")
    assert row.unobservable == ("scores:2",) and row.fiber_dim_jump == (4 if normalizer == "softmax" else 6)
    bias = table.row("bias")
    assert bias.partial == (("scores:1", "scores:2") if normalizer == "softmax" else ())
    assert any("lost for s_1 exponential" in c for c in bias.conditions) is (normalizer == "softmax")
    assert any(c.startswith("bias hides nothing") for c in bias.conditions) is (normalizer == "cosh")
    assert table.row("values:1", "values:2").fiber_dim_jump == 10
    text, markdown, latex = str(table), table.to_markdown(), table.to_latex()
    assert "scores:1 + scores:2" in text and "| bias |" in markdown
    # a longtable (across pages) whose text columns wrap; events and blocks by name, in typewriter type
    assert latex.startswith("{\\small\\setlength{\\tabcolsep}{4pt}\n\\begin{longtable}")
    assert latex.count("\\begin{longtable}") == latex.count("\\end{longtable}") == 1
    assert "\\texttt{scores:1} + \\texttt{scores:2} & " in latex and "\\textit{Method:} verdicts by propagation" in latex
    assert table._repr_latex_().startswith("$$\\begin{array}")
    data = json.loads(json.dumps(table.to_json()))
    assert data["agrees_with_rank"] is True and len(data["rows"]) == 34
    with pytest.raises(KeyError):
        table.row("scores:3")


# -- export ----------------------------------------------------------------------------------
@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_exports_are_well_formed(tmp_path):
    arch = _arch(layers=2)
    result = observe(arch, [score_collapse(1)], confirm=False)
    G = dependency_graph(arch)
    dot = to_dot(result)
    assert dot.startswith("digraph symattn {") and dot.rstrip().endswith("}")
    for node in G.nodes:
        assert f'"{node}" [' in dot
    assert dot.count(" -> ") == G.number_of_edges()
    back = nx.parse_graphml(to_graphml(result))
    assert set(back.nodes) == set(G.nodes) and set(back.edges) == set(G.edges)
    assert back.nodes["scores:2"]["verdict"] == "unobservable"
    assert back.nodes["values:1"]["params"] == "V_1"
    write_graphml(G, tmp_path / "g.graphml")
    assert set(nx.read_graphml(tmp_path / "g.graphml").nodes) == set(G.nodes)
    tikz = to_tikz(result)
    assert tikz.startswith(r"\begin{tikzpicture}") and tikz.rstrip().endswith(r"\end{tikzpicture}")
    assert tikz.count(r"\node") == G.number_of_nodes() and tikz.count(r"\draw[->]") == G.number_of_edges()
    figure = draw(result, tmp_path / "g.png")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.axes
    paths = export_graph(result, tmp_path / "out")
    assert [p.name for p in paths] == ["observe.dot", "observe.graphml", "observe.png", "observe.pdf", "observe.svg",
                                       "observe.tikz"]
    with pytest.raises(SymattnError):
        to_dot("not a graph")


def test_result_formats():
    result = observe(_arch(layers=2), [value_rank(1, 1)], confirm=False)
    data = json.loads(json.dumps(result.to_json()))
    for key in ("unobservable", "partial", "observable", "collapsed", "fiber_dim_jump", "agrees_with_rank",
                "reasons", "ranks", "method"):
        assert key in data
    assert data["partial"] == ["scores:2"] and data["reasons"]["scores:2"][0]["path"][0] == "values:1"
    assert result.to_markdown().startswith("| block | verdict |")
    assert "fiber dimension jump 2" in str(result)
    assert result.to_latex().startswith("\\noindent\\begin{tabularx}{\\linewidth}{llrrLL}")
    assert result.to_latex(True).startswith("\\documentclass") and result.to_latex(True).rstrip().endswith(
        "\\end{document}")
    assert result._repr_latex_().startswith("$$\\begin{array}") and "multicolumn" not in result._repr_latex_()
    section = result.to_section()
    assert section.key == "observe" and section.data["partial"] == ["scores:2"]
    assert "value-rank" not in propagate(dependency_graph(_arch()), []).to_markdown()


# -- the command line ------------------------------------------------------------------------
def test_cli_observe_json(capsys):
    assert "observe" in SUBCOMMANDS
    code = main(["observe", "--layers", "3", "--collapse", "scores:1", "--json", "--quiet"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["unobservable"] == ["scores:2", "scores:3"] and data["observable"] == ["values"]
    assert data["partial"] == [] and data["agrees_with_rank"] is True and data["fiber_dim_jump"] == 7
    assert data["reasons"]["scores:3"][0]["path"][-1] == "attention:3"
    code = main(["observe", "--layers", "2", "--bias-input", "--collapse", "value-rank:1:1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["partial"] == ["scores:1", "scores:2"] and data["agrees_with_rank"]


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_cli_observe_errors_and_exceptional(capsys, tmp_path):
    assert main(["observe", "--collapse", "scores:9"]) == 2
    assert "layers 1..3" in capsys.readouterr().err
    assert main(["observe", "--collapse", "bogus"]) == 2
    capsys.readouterr()
    assert main(["observe", "--layers", "2", "--exceptional", "--max-events", "1", "--quiet",
                 "--export", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| events |") and "| identical-tokens |" in out
    assert (tmp_path / "observe.graphml").exists()
    assert main(["observe", "--exceptional", "--bias-input"]) == 2
    assert main(["observe", "--normalizer", "exp(x) + exp(1)*pi*x**2 + pi", "--collapse", "scores:1"]) == 2
    assert "one transcendental constant" in capsys.readouterr().err
