"""The ``symattn`` command: flags, output formats, exit status and error reporting."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import symattn.cli as cli
from symattn.cli import add_subcommand, main
from symattn.report import ArchitectureReport, Section, architecture_report
from symattn.model import Architecture

REPO = Path(__file__).resolve().parent.parent

NETWORK = ["--layers", "2", "--width", "2", "--rank", "1", "--tokens", "3"]


@pytest.fixture(autouse=True)
def no_debug(monkeypatch):
    monkeypatch.delenv("SYMATTN_DEBUG", raising=False)


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys, *argv):
    status, out, err = run(capsys, "report", "--json", *argv)
    assert status == 0, err
    return json.loads(out)


def assert_user_error(status, out, err):
    assert status == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("symattn: error: ")
    assert "Traceback" not in err


# -- the numbers the issue fixes --------------------------------------------------------------
def test_report_json_softmax(capsys):
    data = run_json(capsys, *NETWORK, "--normalizer", "softmax")
    assert data["params"] == 16
    assert data["effective_dim"] == 10
    assert data["gauge_dim"] == 6
    assert data["sign_group_order"] == 1
    assert data["architecture"] == {
        "layers": 2, "widths": [2, 2, 2], "score_ranks": [1, 1], "tokens": 3,
        "normalizers": ["softmax", "softmax"], "degenerate": False,
    }
    assert data["effective_blocks"] == {"values": 4, "scores:1": 3, "scores:2": 3}
    assert data["degenerate"] is False
    assert [n["k"] for n in data["normalizers"]] == [1, 1]


def test_report_json_cosh_has_four_sign_flips(capsys):
    data = run_json(capsys, *NETWORK, "--normalizer", "cosh")
    assert (data["params"], data["effective_dim"], data["gauge_dim"]) == (16, 10, 6)
    assert data["sign_group_order"] == 4
    assert [n["even"] for n in data["normalizers"]] == [True, True]


@pytest.mark.slow  # the whole report, twice
def test_report_json_matches_library(capsys):
    data = run_json(capsys, "--widths", "3,2,2", "--ranks", "2,1", "--normalizer", "1 + x**2")
    arch = Architecture([3, 2, 2], [2, 1], tokens=3, normalizer="1 + x**2")
    spectrum = data.pop("spectrum")
    sensitivity = data.pop("sensitivity")
    observability = data.pop("observability")
    identification = data.pop("identification")
    assert identification["dimension"]["lower"] <= identification["dimension"]["upper"] == 17
    assert observability["agrees_with_rank"] is True
    assert sensitivity["exact_rank"] == spectrum["rank"]
    assert data == architecture_report(arch).to_json()
    assert spectrum["params"] == 26 and spectrum["rank"] <= 17
    # hand count: Q1, K1 2x3, V1 2x3; Q2, K2 1x2, V2 2x2
    assert data["params"] == 6 + 6 + 6 + 2 + 2 + 4 == 26
    # P: 2x3 of rank 2 -> 6; What_1: 3x3 of rank 2 -> 8; What_2: 3x3 of rank 1 -> 5, but
    # What_2 lives on the row space of V_1, which P already fixes: 19 - 2 = 17 = 26 - 9
    assert data["effective_dim"] == 17 == data["params"] - data["gauge_dim"]
    assert data["gauge_dim"] == 2 * 2 + 1 + 2 * 2 == 9
    assert data["sign_group_order"] == 4


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_defaults(capsys):
    data = run_json(capsys)
    assert data["architecture"]["widths"] == [2, 2, 2, 2]
    assert data["architecture"]["score_ranks"] == [1, 1, 1]
    assert data["architecture"]["tokens"] == 3
    assert data["architecture"]["normalizers"] == ["softmax"] * 3
    assert data["params"] == 24


def test_widths_give_the_number_of_layers(capsys):
    data = run_json(capsys, "--widths", "2,3,2")
    assert data["architecture"]["layers"] == 2
    assert data["architecture"]["widths"] == [2, 3, 2]
    assert data["architecture"]["score_ranks"] == [1, 1]


def test_ranks_give_the_number_of_layers():
    # parsing only: a full report on four width-3 layers is a benchmark, not a unit test
    from symattn.cli import architecture_from_args, build_parser

    arch = architecture_from_args(build_parser().parse_args(["report", "--ranks", "2,1,1,1", "--width", "3"]))
    assert arch.layers == 4
    assert list(arch.widths) == [3] * 5
    assert list(arch.score_ranks) == [2, 1, 1, 1]


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_matching_layers_and_widths(capsys):
    data = run_json(capsys, "--layers", "2", "--widths", "2,3,2", "--rank", "2")
    assert data["architecture"]["score_ranks"] == [2, 2]


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_degenerate_single_token(capsys):
    data = run_json(capsys, "--tokens", "1")
    assert data["degenerate"] is True


# -- formats -----------------------------------------------------------------------------------
def test_markdown_is_the_default(capsys):
    status, out, err = run(capsys, "report", *NETWORK, "--normalizer", "cosh")
    assert status == 0 and err == ""
    headings = [line for line in out.splitlines() if line.startswith("#")]
    # on standard output the summary comes first and the notation table last (tests/test_report_terminal.py)
    assert headings == ["# symattn report", "## Summary", "## Architecture", "## Closed form",
                        "## Effective parameters and symmetries",
                        "## Decay spectrum near query/key collapse",
                        "## Numerical sensitivity (mpmath and float64)",
                        "## Identifiability: dimension, generic fiber, identification orders",
                        "### Dimension of the function space", "### Generic fiber",
                        "### Identification orders along simultaneous query/key collapse Q_i = eps Qt_i, "
                        "K_i = eps Kt_i (layers 1..2)",
                        "## Observability under collapse", "## Notation"]
    assert "| 0 | 4 | 4 |" in out and "| 3 | 3 | 3 |" in out and "| 11 | 3 | 3 |" in out
    assert "| native parameters | 16 |" in out
    assert "| sign group order | 4 |" in out
    assert "| normalizer | `cosh` (k = 2, even) |" in out


def test_latex(capsys):
    status, out, err = run(capsys, "report", "--latex", *NETWORK)
    assert status == 0 and err == ""
    assert "\\begin" in out
    assert "\\begin{gather*}" in out and "\\end{gather*}" in out
    # architecture, the spectrum's exponents and blocks, dimension, fiber, orders, jet ranks
    assert out.count("\\begin{tabular}") == out.count("\\end{tabular}") == 7
    # the notation and the effective parameters wrap their text columns; the sensitivity and the observability
    # tables break across pages
    assert out.count("\\begin{tabularx}{\\linewidth}") == out.count("\\end{tabularx}") == 2
    assert out.count("\\begin{longtable}") == out.count("\\end{longtable}") == 2
    assert "native parameters & 16 \\\\" in out
    assert "\\documentclass" not in out
    subsections = [line for line in out.splitlines() if line.startswith(("\\subsection", "\\subsubsection"))]
    assert subsections == [
        "\\subsection*{Architecture}", "\\subsection*{Notation}", "\\subsection*{Closed form}",
        "\\subsection*{Effective parameters and symmetries}",
        "\\subsection*{Decay spectrum near query/key collapse}",
        "\\subsection*{Numerical sensitivity (mpmath and float64)}",
        "\\subsection*{Identifiability: dimension, generic fiber, identification orders}",
        "\\subsubsection*{Dimension of the function space}", "\\subsubsection*{Generic fiber}",
        "\\subsubsection*{Identification orders along simultaneous query/key collapse $Q_{i}$ = $\\varepsilon$ "
        "$\\tilde Q_{i}$, $K_{i}$ = $\\varepsilon$ $\\tilde K_{i}$ (layers 1..2)}",
        "\\subsection*{Observability under collapse}"]
    # every result's method note
    assert out.count("\\textit{Method:}") == 6 and "\\textit{Lower bound:}" in out


def test_latex_standalone(capsys):
    status, out, err = run(capsys, "spectrum", "--latex", "--standalone", "--quiet", *NETWORK)
    assert status == 0 and err == ""
    assert out.startswith("\\documentclass[11pt]{article}") and out.rstrip().endswith("\\end{document}")
    assert "\\usepackage{tabularx}" in out and "\\begin{document}" in out
    status, fragment, _ = run(capsys, "spectrum", "--latex", "--quiet", *NETWORK)
    assert fragment.startswith("\\begin{tabular}{rrr}") and fragment.strip() in out
    assert_user_error(*run(capsys, "spectrum", "--standalone", *NETWORK))


@pytest.mark.slow  # the whole report
def test_out_writes_markdown_and_latex(capsys, tmp_path):
    target = tmp_path / "new" / "dir"
    status, out, err = run(capsys, "report", *NETWORK, "--out", str(target))
    assert status == 0
    markdown = (target / "report.md").read_text()
    latex = (target / "report.tex").read_text()
    assert markdown.startswith("# symattn report")
    # the file is the report with each figure after its section, numbered, with its caption (the printed one
    # adds a summary and writes the closed form as text instead of display math)
    figure_lines = [line for line in markdown.splitlines() if line.startswith(("![", "*Figure"))]
    assert [line.split("]")[0] for line in figure_lines] == [
        "![Figure 1",
        "*Figure 1.* Singular values sigma_j of the native Jacobian J(eps) along the collapse curve, log-log; "
        "left: mpmath with 55 digits, right: float64. The colour is the exact decay exponent e_j of each singular "
        "value (slope of its line); grey lines are kernel directions, the dotted line is the float64 round-off "
        "floor (1e-16 of the largest singular value), below which float64 returns noise (Vector versions: "
        "[sensitivity.pdf",
        "![Figure 2",
        "*Figure 2.* The dependency graph after each score collapse (one panel per event): an arrow from u to v "
        "means that v is computed from u. Each box shows the node's name (the names of the notation table), its "
        "symbol and the state the event forces; the effective blocks are coloured by the verdict of the "
        "observability table, and light blue boxes are nodes that are not blocks. (Vector versions: "
        "[dependency_graph.pdf"]
    body = [line for line in markdown.splitlines() if line not in figure_lines]
    math = markdown[markdown.index("## Closed form"):markdown.index("## Effective")].splitlines()
    assert [line for line in body if line not in out.splitlines()] == [line for line in math if line.strip()
                                                                       and line not in out.splitlines()]
    printed_extra = out[:out.index("## Architecture")] + out[out.index("## Closed form"):out.index("## Effective")]
    assert all(line in printed_extra.splitlines() for line in out.splitlines() if line not in body)
    sensitivity = markdown.index("## Numerical sensitivity")
    assert sensitivity < markdown.index("](sensitivity.png)") < markdown.index("## Identifiability")
    assert markdown.index("## Observability") < markdown.index("](dependency_graph.png)")
    assert "\\includegraphics[width=\\linewidth,height=0.85\\textheight,keepaspectratio]{sensitivity.pdf}" in latex
    assert "\\includegraphics[width=\\linewidth,height=0.85\\textheight,keepaspectratio]{dependency_graph.pdf}" in latex
    assert latex.count("\\begin{figure}[H]") == latex.count("\\caption{") == 2
    for stem in ("sensitivity", "dependency_graph"):
        assert (target / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (target / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
        assert (target / f"{stem}.svg").read_text().lstrip().startswith("<?xml")
    assert latex.startswith("\\documentclass[11pt]{article}")
    assert "\\usepackage{amsmath}" in latex and "\\usepackage{longtable}" in latex
    assert latex.rstrip().endswith("\\end{document}")
    assert json.loads((target / "report.json").read_text())["params"] == 16
    # every file written, in the order written
    names = ["report.md", "report.tex", "report.json", "sensitivity.png", "sensitivity.pdf", "sensitivity.svg",
             "dependency_graph.png", "dependency_graph.pdf", "dependency_graph.svg"]
    assert err == "symattn: wrote " + ", ".join(str(target / name) for name in names) + "\n"


@pytest.mark.slow  # the whole report
def test_out_quiet_says_nothing(capsys, tmp_path):
    status, out, err = run(capsys, "report", "--quiet", "--json", "--out", str(tmp_path))
    assert status == 0 and err == ""
    assert json.loads(out)["params"] == 24
    assert (tmp_path / "report.md").exists() and (tmp_path / "report.tex").exists()


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_out_into_a_file_is_a_user_error(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_user_error(*run(capsys, "report", "--out", str(blocker / "sub")))


# -- user errors: exit 2, one line, no traceback ---------------------------------------------------
@pytest.mark.parametrize("argv, fragment", [
    (["--normalizer", "1+x**3"], "not positive"),
    (["--normalizer", "Abs(x)+1"], "not real-analytic"),
    (["--normalizer", "exp(x"], "cannot read the normalizer"),
    (["--normalizer", "nosuchpreset"], "normalizer"),
    (["--layers", "3", "--widths", "2,3,2"], "--layers 3 (3 layers) disagrees with --widths 2,3,2"),
    (["--widths", "2,2", "--ranks", "1,1"], "disagrees"),
    (["--ranks", "1,1", "--layers", "3"], "disagrees"),
    (["--tokens", "0"], "tokens"),
    (["--layers", "0"], "--layers"),
    (["--width", "0"], "widths"),
    (["--widths", "2,x,2"], "--widths"),
    (["--widths", "2"], "--widths"),
    (["--ranks", "1,-1"], "score ranks"),
])
def test_user_errors(capsys, argv, fragment):
    status, out, err = run(capsys, "report", *argv)
    assert_user_error(status, out, err)
    assert fragment in err


@pytest.mark.parametrize("argv", [
    ["report", "--width", "2", "--widths", "2,2"],
    ["report", "--rank", "1", "--ranks", "1,1"],
    ["report", "--json", "--latex"],
    ["report", "--layers", "two"],
    ["report", "--no-such-flag"],
    ["nosuchcommand"],
    [],
])
def test_usage_errors(capsys, argv):
    assert_user_error(*run(capsys, *argv))


def test_help_exits_zero(capsys):
    status, out, err = run(capsys, "report", "--help")
    assert status == 0
    for flag in ("--layers", "--widths", "--ranks", "--tokens", "--normalizer", "--json",
                 "--latex", "--quiet", "--out"):
        assert flag in out


# -- internal errors: exit 1 ---------------------------------------------------------------
def _boom(arch):
    raise RuntimeError("something broke\ninside")


def test_internal_error(capsys, monkeypatch):
    monkeypatch.setattr("symattn.report.architecture_report", _boom)
    status, out, err = run(capsys, "report")
    assert status == 1
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == "symattn: internal error: RuntimeError: something broke inside"
    assert "bug" in err and "SYMATTN_DEBUG=1" in err
    assert "Traceback" not in err


def test_internal_error_traceback_with_debug(capsys, monkeypatch):
    monkeypatch.setattr("symattn.report.architecture_report", _boom)
    monkeypatch.setenv("SYMATTN_DEBUG", "1")
    status, out, err = run(capsys, "report")
    assert status == 1
    assert "Traceback" in err and "RuntimeError" in err


# -- extension points ------------------------------------------------------------------------
def test_add_subcommand(capsys, monkeypatch):
    monkeypatch.setattr(cli, "SUBCOMMANDS", dict(cli.SUBCOMMANDS))

    def run_sizes(args, arch):
        report = architecture_report(arch)
        note = Section("Scale", "scale", {"scale": args.scale, "layers": arch.layers},
                       f"scale {args.scale}", f"scale {args.scale}")
        return report.with_sections(note)

    add_subcommand("sizes", "test subcommand", run_sizes,
                   configure=lambda p: p.add_argument("--scale", type=int, default=1))
    status, out, err = run(capsys, "sizes", "--json", "--widths", "2,3,2", "--scale", "5")
    assert status == 0, err
    data = json.loads(out)
    assert data["scale"] == {"scale": 5, "layers": 2}
    assert data["params"] == architecture_report(Architecture([2, 3, 2], [1, 1])).params
    status, out, err = run(capsys, "sizes")
    # on standard output a report's own sections come after the summary, before the notation table
    assert "## Scale\n\nscale 1\n\n## Notation" in out and out.startswith("# symattn report\n\n## Summary")
    with pytest.raises(ValueError):
        add_subcommand("sizes", "again", run_sizes)


def test_report_is_a_frozen_value():
    report = architecture_report(Architecture.uniform(layers=2))
    assert isinstance(report, ArchitectureReport)
    with pytest.raises(AttributeError):
        report.params = 0
    assert json.loads(json.dumps(report.to_json())) == report.to_json()
    assert report._repr_latex_().startswith("$$") and report._repr_latex_().endswith("$$")
    assert "native parameters" in str(report)


# -- the installed entry points -----------------------------------------------------------------
@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_python_dash_m(tmp_path):
    env = dict(os.environ)
    env.pop("SYMATTN_DEBUG", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, "-m", "symattn", "report", "--json", *NETWORK, "--normalizer", "cosh"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sign_group_order"] == 4

    bad = subprocess.run([sys.executable, "-m", "symattn", "report", "--normalizer", "1+x**3"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr


# -- help pages and usage errors ----------------------------------------------------------------
#: Subcommands whose modules belong elsewhere and may not have their examples yet.
_EXAMPLES_ELSEWHERE = {"check", "expand"}


@pytest.mark.parametrize("name", [name for name in cli.SUBCOMMANDS])
def test_every_help_page_has_examples_that_parse(name, capsys):
    import shlex

    command = cli.SUBCOMMANDS[name]
    if name in _EXAMPLES_ELSEWHERE and not command.examples:
        pytest.skip(f"{name}'s examples are added by its own module")
    assert command.examples  # one to a few command lines
    assert main([name, "--help"]) == 0
    page = capsys.readouterr().out
    assert "examples:\n" + "\n".join(f"  {line}" for line in command.examples) in page
    parser = cli.build_parser()
    for example in command.examples:
        words = shlex.split(example.split(" > ")[0])
        assert words[:2] == ["symattn", name]
        assert parser.parse_args(words[1:]).command == name  # every example is a valid command line


@pytest.mark.parametrize("argv, message", [
    (["spectrum", "--layres", "2"],
     "symattn: error: unrecognized arguments: --layres 2; did you mean --layers? (see 'symattn spectrum --help')"),
    (["identify", "--tokes=3"],
     "symattn: error: unrecognized arguments: --tokes=3; did you mean --tokens? (see 'symattn identify --help')"),
    (["spectrun"], "did you mean 'spectrum'? (see 'symattn --help')"),
    (["identify", "--curve", "colapse"], "did you mean 'collapse'? (see 'symattn identify --help')"),
    (["spectrum", "--order", "6"],
     "symattn: error: --order was renamed --truncation (the truncation N, powers eps^0..eps^(N-1)): write "
     "--truncation 6 (see 'symattn spectrum --help')"),
])
def test_mistyped_flags_and_commands_suggest_the_closest(argv, message, capsys):
    status, out, err = run(capsys, *argv)
    assert_user_error(status, out, err)
    assert err.strip().endswith(message)


def test_an_unknown_flag_with_nothing_close_suggests_nothing(capsys):
    status, out, err = run(capsys, "spectrum", "--zzzzzz")
    assert_user_error(status, out, err)
    assert err.strip() == "symattn: error: unrecognized arguments: --zzzzzz (see 'symattn spectrum --help')"


def test_renamed_flags_are_not_suggested():
    from symattn.cli.arguments import close_options

    # "--order" (hidden, renamed) would be the closest match of all: it is not offered
    assert "--order" not in close_options("--ordr", cli.build_parser().commands["spectrum"])
    assert close_options("--ordr", cli.build_parser().commands["spectrum"]) in ([], ["--workers"])


def test_every_flag_is_documented():
    # docs/cli.md left out --heads, --causal and --residual: every option string of every subcommand is in
    # docs/cli.md (the common flags) or on the subcommand's own page docs/commands/NAME.md
    import argparse
    import re

    cli_page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = cli.build_parser()
    missing = []
    for name, subparser in parser.commands.items():
        page = cli_page + (REPO / "docs" / "commands" / f"{name}.md").read_text(encoding="utf-8")
        for action in subparser._actions:
            if action.help == argparse.SUPPRESS:  # renamed flags, refused
                continue
            missing += [f"{name} {option}" for option in action.option_strings
                        if not re.search(re.escape(option) + r"(?![\w-])", page)]
    common = argparse.ArgumentParser(add_help=True)
    cli.add_common_arguments(common)
    for action in common._actions:
        missing += [f"docs/cli.md {option}" for option in action.option_strings
                    if not re.search(re.escape(option) + r"(?![\w-])", cli_page)]
    assert missing == []


# -- the sweep's dashboard line -------------------------------------------------------------------
class _Bar:
    """A progress bar that records what is written above it."""

    def __init__(self):
        self.written = []

    def write(self, text, file=None):
        self.written.append(text)

    def update(self, n=1):
        pass

    def set_postfix_str(self, text="", refresh=True):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("bokeh", [True, False])
def test_the_dashboard_link_goes_above_the_bar_and_only_with_bokeh(bokeh, monkeypatch, capsys):
    # the link was printed into the bar's line, and without bokeh it answered "Dask needs bokeh"
    import symattn.sweep as sweeping

    bar = _Bar()
    monkeypatch.setattr(sweeping, "progress_bar", lambda *args, **kwargs: bar)
    monkeypatch.setattr(sweeping, "_dashboard_available", lambda: bokeh)
    monkeypatch.setattr(sweeping, "run_tasks", lambda *args: args[-1]("http://127.0.0.1:8787/status"))
    result = sweeping.sweep({"layers": 1}, "parameters", scheduler="synchronous", progress=True)
    assert capsys.readouterr().err == ""  # nothing printed into the bar's line
    if bokeh:
        assert bar.written == ["symattn: Dask dashboard at http://127.0.0.1:8787/status"]
        assert result.dashboard == "http://127.0.0.1:8787/status"
    else:
        assert bar.written == [] and result.dashboard is None


def test_the_dashboard_extra_installs_bokeh():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(req.startswith("bokeh") for req in project["optional-dependencies"]["dashboard"])
