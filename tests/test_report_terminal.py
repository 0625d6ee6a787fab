"""``symattn report`` on a terminal, and the feed-forward report (issue 36, items 10 and 11).

On standard output the report leads with a summary of its verdicts and
numbers and carries no LaTeX display math (``--latex`` and ``--out DIR``
keep it); a network with biases and feed-forward blocks names every
parameter block in its notation table, says its spectrum verdict whole, and
its bias row says what the bias event hides.
"""

from __future__ import annotations

import re

import pytest

from symattn.cli import main
from symattn.model import Architecture
from symattn.model.symbols import block_label
from symattn.observe import exceptional_fibers
from symattn.report import architecture_report, full_report
from symattn.spectrum import decay_spectrum

SMALL = ["--layers", "1", "--width", "1", "--quiet"]


def _report(capsys, *argv):
    status = main(["report", *argv])
    out = capsys.readouterr().out
    assert status == 0
    return out


def _table(lines):
    """``{quantity: value}`` of the Markdown table that starts ``lines``."""
    rows = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        quantity, value = (cell.strip() for cell in line.strip("|").split(" | ", 1))
        rows[quantity] = value
    return rows


def test_terminal_report_leads_with_the_computed_summary(capsys):
    out = _report(capsys, *SMALL)
    lines = out.splitlines()
    assert lines[:6] == ["# symattn report", "", "## Summary", "", "| quantity | value |", "|---|---|"]
    summary = _table(lines[4:])
    data = full_report(Architecture.uniform(layers=1, width=1)).to_json()
    dimension = data["identification"]["dimension"]
    assert dimension["certified"] and dimension["lower"] == dimension["upper"] == 2
    assert summary["native parameters"] == str(data["params"]) == "3"
    assert summary["dimension of the function space"] == "2 (certified: lower bound = upper bound)"
    exponents = ", ".join(f"eps^{e} x {m}" for e, m in data["spectrum"]["spectrum"].items())
    assert summary["decay spectrum exponents"] == f"{exponents} (kernel 1; matches the prediction: yes)"
    assert summary["identifiability"] == ("generic fiber = symmetry orbit: yes; identification orders sharp for "
                                          "every block (scores:1 2, values 0)")
    assert summary["observability"].endswith("graph and exact rank agree: yes")
    # the summary comes before anything else; the notation table comes last
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[0] == "## Summary" and headings[1] == "## Architecture" and headings[-1] == "## Notation"


def test_terminal_report_has_no_display_math(capsys):
    out = _report(capsys, *SMALL)
    assert "$$" not in out and "\\begin" not in out
    assert "F(X) = P X M_1" in out  # the closed form, as text


def test_latex_and_files_keep_the_math(capsys, tmp_path):
    latex = _report(capsys, *SMALL, "--latex")
    assert "\\begin{gather*}" in latex
    _report(capsys, *SMALL, "--out", str(tmp_path))
    markdown = (tmp_path / "report.md").read_text()
    assert "$$\n\\begin{gathered}" in markdown and markdown.splitlines()[2] == "## Architecture"


def _shapes(meaning):
    rows, cols = re.fullmatch(r".* \((\d+) rows, (\d+) columns\)", meaning).groups()
    return int(rows) * int(cols)


@pytest.mark.parametrize("options", [dict(ffn=2), dict(ffn=2, bias=True), dict(ffn=3, bias=True, heads=[1, 2])])
def test_ffn_notation_lists_every_parameter_block(options):
    arch = Architecture.uniform(layers=2, **options)
    report = architecture_report(arch)
    parameters = report.notation()["parameters"]
    assert [n.key for n in parameters] == [block_label(key) for key, _ in arch.blocks()]
    assert sum(_shapes(n.meaning) for n in parameters) == report.params == arch.param_count
    keys = {n.key for n in parameters}
    assert {"Win_1", "Wout_1", "Win_2", "Wout_2"} <= keys
    assert {"bQ_1", "bK_1", "bV_1", "bin_1", "bout_1"} <= keys if options.get("bias") else not keys & {"bin_1"}
    markdown = report.to_markdown()
    assert "| Win_1 | parameter | `Win_1` | input weights of the feed-forward block of layer 1 (" in markdown
    assert report.to_json()["notation"]["parameters"][-1]["key"] == parameters[-1].key


def test_ffn_prediction_sentence_is_whole():
    arch = Architecture.uniform(layers=1, ffn=2)
    spectrum = decay_spectrum(arch, progress=False)
    verdict = spectrum.prediction_verdict
    assert verdict == f"no formula claimed for {arch.describe_variant()}"
    assert verdict.endswith("in every layer") and verdict.count("(") == verdict.count(")") == 1
    line = next(line for line in spectrum.to_markdown().splitlines() if "matches the prediction" in line)
    assert line == f"- matches the prediction: {verdict}"


@pytest.mark.parametrize("arch, hidden", [
    (Architecture.uniform(layers=1, ffn=2, bias=True), "scores:1, feed-forward:1, values"),
    (Architecture.uniform(layers=1, bias=True), "scores:1, values"),
    (Architecture.uniform(layers=1, width=3, normalizer="cosh"), None),
])
def test_bias_sentence_says_what_the_bias_event_hides(arch, hidden):
    row = exceptional_fibers(arch, max_events=1).row("bias")
    lost = ", ".join(row.unobservable + row.partial)
    assert lost == (hidden or "")
    nothing = [c for c in row.conditions if "hides nothing" in c]
    if hidden:
        assert not nothing
        assert f"the bias event hides {hidden}, none of it through the normalizer: " in "; ".join(row.conditions)
    else:
        assert nothing == ["bias hides nothing here: only an exponential normalizer (S(A + 1 u^T) = S(A)) loses "
                           "the directions e_b w^T"]
