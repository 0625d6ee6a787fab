"""Every display of every result is bounded (issue 36, items 1, 2 and 6).

Jupyter shows a value through ``_repr_latex_``, ``_repr_markdown_``,
``_repr_html_`` and ``repr``, sympy's printers through ``_latex``,
``_sympystr`` and ``_pretty``, a terminal through ``str``.  Each is at most
``DISPLAY_MAX_CHARS`` characters, decided from an estimate before the whole
text is written; the whole text stays one call away.  ``sympy.latex`` of an
analysis prints its numbers as mathematics, and every format says the same
words (``yes``, not ``True``; ``primes 5 and 7``, not ``[5, 7]``).
"""

from __future__ import annotations

import re

import pytest
import sympy as sp
from IPython.core.formatters import DisplayFormatter

import symattn._format as fmt
from symattn import (
    Architecture, Normalizer, check_claims, decay_spectrum, expand, full_report, function_space_dimension, identify,
    leading_coefficient, observe,
)
from symattn._format import DISPLAY_MAX_CHARS, FormattedResult, bounded_display, plain_words
from symattn.check.expressions import check_expression
from symattn.effective import closed_form_result
from symattn.identify.dimension import dimension_table
from symattn.numeric import sensitivity
from symattn.observe.graph import dependency_graph, propagate
from symattn.observe.ranks import rank_check
from symattn.observe.report import exceptional_fibers
from symattn.sweep import sweep

#: The bound every display keeps (characters).
BOUND = 20_000
#: A small bound, to see every result type's summary.
SMALL_BOUND = 400
#: The issue's expansion: two layers at width 2, three tokens, generic normalizer, modulo eps^7.
LARGEST_TERMS = ((6, 72), (0, 0), (6, 1392), (0, 0), (6, 12960), (0, 0), (6, 322776))
#: Its estimated LaTeX: 200 + 40 per coefficient + 20 per nonzero entry + 220 per term.
LARGEST_LATEX_ESTIMATE = 200 + 40 * 7 + 20 * 24 + 220 * 337_200


def displays(result) -> dict:
    """Every display of ``result``: what Jupyter, sympy's printers and ``str`` show."""
    out = {"str": str(result), "repr": repr(result), "sympy.latex": sp.latex(result), "sympy.sstr": sp.sstr(result)}
    data, _ = DisplayFormatter().format(result)
    out.update({f"jupyter {mime}": text for mime, text in data.items()})
    for name in ("_repr_latex_", "_repr_markdown_", "_repr_html_"):
        if hasattr(result, name):
            out[name] = getattr(result, name)()
    return out


@pytest.fixture(scope="module")
def largest():
    return expand(Architecture.uniform(layers=2, width=2, tokens=3), truncation=7, normalizer=Normalizer.generic(1))


A = Architecture.uniform(layers=1, width=1, tokens=2)

#: One value of every result type, built in well under a second each.
RESULTS = {
    "Expansion": lambda: expand(A, truncation=3),
    "LeadingCoefficient": lambda: leading_coefficient(A, 1),
    "Spectrum": lambda: decay_spectrum(A),
    "IdentificationReport": lambda: identify(A),
    "DimensionResult": lambda: function_space_dimension(A),
    "DimensionTable": lambda: dimension_table(layers=1, widths=range(1, 3), rank=1, tokens=2),
    "ObserveResult": lambda: observe(A),
    "ExceptionalFibers": lambda: exceptional_fibers(A, max_events=1),
    "Observability": lambda: propagate(dependency_graph(A)),
    "RankCheck": lambda: rank_check(A),
    "ClaimsReport": lambda: check_claims(A, ["kernel = 1", "F_1 = 0"]),
    "CheckResult": lambda: check_expression(sp.Symbol("x") + 1, 1 + sp.Symbol("x")),
    "ClosedForm": lambda: closed_form_result(A),
    "Sensitivity": lambda: sensitivity(A),
    "ArchitectureReport": lambda: full_report(A),
    "SweepResult": lambda: sweep({"layers": "1", "width": "1,2", "rank": "1", "tokens": 2}, ["dimension"],
                                 progress=False, scheduler="synchronous"),
}


@pytest.fixture(scope="module")
def results():
    return {name: make() for name, make in RESULTS.items()}


def test_the_bound():
    assert DISPLAY_MAX_CHARS == BOUND


# -- the largest default expansion ------------------------------------------------------------
@pytest.mark.slow  # builds the expansion: 4 to 8 s
def test_largest_expansion_displays_are_summaries(largest):
    assert largest.term_counts() == LARGEST_TERMS
    assert largest._display_size("math") == LARGEST_LATEX_ESTIMATE == 74_184_960
    shown = displays(largest)
    shown["sympy.pretty"] = sp.pretty(largest)
    shown["to_latex (guarded)"] = largest.to_latex()
    for name, text in shown.items():
        assert len(text) <= BOUND, name
    for name in ("sympy.latex", "_repr_latex_", "jupyter text/latex"):
        assert shown[name].count("The whole text: to\\_latex(full=True).") == 1, name
        assert "about 74,184,960 characters" in shown[name] and "(337,200 terms)" in shown[name]
        assert r"F_{6} & 6 \text{ of } 6 & 322776" in shown[name]  # its numbers, as a table
    for name in ("str", "sympy.sstr", "sympy.pretty"):
        words = " ".join(shown[name].split())
        assert "left out: the entries of F_0, F_2, F_4, F_6 (337,200 terms)" in words, name
        assert "| 6 | 6 of 6 | 322776 |" in shown[name], name
    assert max(len(line) for line in shown["sympy.pretty"].splitlines()) <= 80
    assert "The whole text: to_text(); every entry: to_json()." in shown["str"]
    assert shown["_repr_latex_"].startswith("$$\\begin{array}{l} ") and shown["_repr_latex_"].endswith("$$")
    assert shown["jupyter text/latex"] == shown["_repr_latex_"]


@pytest.mark.slow  # builds the expansion: 4 to 8 s
def test_largest_expansion_summary_writes_no_entry(largest, monkeypatch):
    # the bound is decided before the whole text is written: writing it would raise here
    def refuse(*args):
        raise AssertionError("the whole text was written")

    monkeypatch.setattr(type(largest), "_latex_math", refuse)
    monkeypatch.setattr(type(largest), "to_text", refuse)
    assert len(largest._repr_latex_()) <= BOUND and len(sp.latex(largest)) <= BOUND
    assert len(str(largest)) <= BOUND and len(sp.sstr(largest)) <= BOUND


def test_small_expansion_shows_everything():
    F = expand(A, truncation=3)
    assert str(F) == F.to_text()
    assert str(F).splitlines()[1] == "F_0 = (Vt1_11*x_11/2 + Vt1_11*x_12/2, Vt1_11*x_11/2 + Vt1_11*x_12/2)"
    assert F._repr_latex_() == "$$" + F._latex_math() + "$$" == "$$" + sp.latex(F) + "$$"
    assert "Summary" not in F._repr_latex_() and "Summary" not in sp.pretty(F)


def test_whole_text_on_request(monkeypatch):
    F = expand(Architecture.uniform(layers=1, width=1, tokens=3), truncation=5)
    whole_latex, whole_text = F.to_latex(full=True), F.to_text()
    monkeypatch.setattr(fmt, "DISPLAY_MAX_CHARS", SMALL_BOUND)
    assert len(F._repr_latex_()) <= SMALL_BOUND and len(str(F)) <= SMALL_BOUND and len(sp.sstr(F)) <= SMALL_BOUND
    assert "The whole text: to_text()" in str(F)
    assert F.to_text() == whole_text and len(whole_text) > SMALL_BOUND
    assert F.to_latex(full=True) == whole_latex and "Left out" not in whole_latex
    assert "Left out past 5 terms" in F.to_latex(max_terms=5)


# -- every result type ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(RESULTS))
def test_every_display_is_bounded(results, name, monkeypatch):
    result = results[name]
    assert type(result).__name__ == name and isinstance(result, FormattedResult)
    whole = {"str": result.to_text(), "markdown": result.to_markdown()}
    shown = displays(result)
    assert shown["str"] == whole["str"]  # small: the whole text
    if "_repr_markdown_" in shown:
        assert shown["_repr_markdown_"] == whole["markdown"]
    for display, text in shown.items():
        assert len(text) <= BOUND, display
        assert r"\mathtt" not in text, display
    monkeypatch.setattr(fmt, "DISPLAY_MAX_CHARS", SMALL_BOUND)
    small = displays(result)
    for display, text in small.items():
        assert len(text) <= SMALL_BOUND, display
    assert ("The whole text: to_text()" in small["str"]) == (len(whole["str"]) > SMALL_BOUND)
    assert result.to_text() == whole["str"]  # the whole text is still there


def test_a_to_json_that_writes_its_own_display_is_measured_once(results):
    closed = results["ClosedForm"]
    assert closed.to_json()["text"] == closed.to_text() == str(closed)


# -- sympy.latex of the analyses: mathematics -------------------------------------------------
def test_sympy_latex_of_analyses_is_mathematics(results):
    expected = {
        "Spectrum": [r"0 & 1 & 1 \\", r"1 & 1 & 1 \\", r"\text{rank 2, kernel 1, 3 parameters}"],
        "IdentificationReport": [r"\text{kernel dimension} & 1 \\", r"\text{function space dimension (certified lower "
                                 r"bound)} & 2 \\", r"\text{scores:1} & 2 & 2 & \text{yes}"],
        "ObserveResult": [r"\text{scores:1} & \text{observable} & 1 & 1 \\"],
        "ClaimsReport": [r"\texttt{kernel = 1} & \text{true} & 1 \\",
                         r"F_{1} = 0 & \text{true} & \left[\begin{matrix}0 & 0\end{matrix}\right]"],
        "DimensionResult": [r"\text{certified lower bound} & 2 \\", r"\text{certified} & \text{yes} \\"],
    }
    for name, pieces in expected.items():
        text = sp.latex(results[name])
        assert r"\mathtt" not in text and "True" not in text, name
        for piece in pieces:
            assert piece in text, (name, piece)


# -- the same words in every format -------------------------------------------------------------
def test_spectrum_says_the_same_words_in_every_format(results):
    spectrum = results["Spectrum"]
    primes = " and ".join(map(str, spectrum.primes))
    for text in (str(spectrum), spectrum.to_markdown(), spectrum.to_latex()):
        assert f"primes {primes}" in text and "confirmed: yes" in text
        assert not re.search(r"\bTrue\b|\bFalse\b|\[\d", text)
    assert "separating: yes" in str(spectrum) and "separating: yes" in spectrum.to_markdown()


@pytest.mark.parametrize("name", ["IdentificationReport", "DimensionResult", "RankCheck", "Sensitivity", "Spectrum"])
def test_no_python_literals_in_text_or_markdown(results, name):
    result = results[name]
    for text in (str(result), result.to_markdown()):
        assert not re.search(r"(?<![\w`'])(True|False|None)(?![\w`'])|\[\[?\d|\{\d+: \d", text), (name, text)


def test_plain_words():
    assert plain_words("primes [268435399, 268435367] (confirmed: True)") == \
        "primes 268435399 and 268435367 (confirmed: yes)"
    assert plain_words("exponents {0: 4, 1: 3}") == "exponents 0 (multiplicity 4) and 1 (multiplicity 3)"
    assert plain_words("computed Matrix([[0, 0], [1, -2]])") == "computed (0, 0; 1, -2)"
    assert plain_words("ranks [1, 1, 2]; x[1]; 'None'") == "ranks 1, 1 and 2; x[1]; 'None'"
    assert fmt.latex_prose("exponents {0: 4}") == "exponents 0 (multiplicity 4)"


# -- the helper ----------------------------------------------------------------------------------
def test_bounded_display_never_writes_past_the_estimate():
    calls = []
    text = bounded_display(lambda: calls.append(1) or "x", size=10**9, summary=lambda: "short", whole="to_text()",
                           limit=300)
    assert calls == [] and text.startswith("short\nSummary: the whole text is about 1,000,000,000 characters")
    # an estimate that was too low: the text is measured and replaced
    text = bounded_display(lambda: "y" * 500, size=1, summary=lambda: "s\n" * 400, whole="w", limit=300)
    assert len(text) <= 300 and text.endswith("...\nSummary: the whole text is about 500 characters, past the display "
                                              "bound of 300. The whole text: w.")
    math = bounded_display(lambda: "", size=10**6, summary=lambda: r"x^{2}", whole="to_latex()", form="math",
                           limit=300)
    assert math.startswith(r"\begin{array}{l} x^{2} \\ \text{Summary:") and len(math) <= 300


def test_a_large_result_is_summarized_from_its_json_without_writing_its_text(results, monkeypatch):
    report = results["IdentificationReport"]
    whole = report.to_text()

    def refuse(*args):
        raise AssertionError("the whole text was written")

    # JSON past WRITE_AND_MEASURE times the bound: only the summary is written
    monkeypatch.setattr(fmt, "DISPLAY_MAX_CHARS", 300)
    assert fmt.WRITE_AND_MEASURE == 10 and len(report.to_json_string()) > 10 * 300
    monkeypatch.setattr(type(report), "to_text", refuse)
    monkeypatch.setattr(type(report), "_latex_math", refuse)
    text, math = str(report), report._repr_latex_()
    assert len(text) <= 300 and len(math) <= 300
    assert text.startswith("IdentificationReport\n") and "The whole text: to_text()." in text
    assert len(whole) > 300


def test_a_claims_check_writes_a_computed_matrix_as_its_rows(results):
    assert str(results["ClaimsReport"]).splitlines() == [
        "kernel = 1: true (computed 1)", "F_1 = 0: true (computed (0, 0))", "all 2 claim(s) true"]
