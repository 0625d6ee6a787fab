"""Formulas in Markdown are LaTeX math, and text keeps its characters: nothing is eaten as markup.

The Markdown the package writes is parsed here as the docs parse it (MyST:
markdown-it with tables and ``dollarmath``): a formula must come out as one
``math_inline`` token holding its LaTeX, a table row must keep its cells, and
plain text with ``*``, ``_``, ``|`` or backticks must come out as the same
characters, not as emphasis, code or a split row.
"""

import pytest
import sympy as sp

import symattn
from symattn._markdown import markdown_math, markdown_note, markdown_prose, markdown_text_with_math

markdown_it = pytest.importorskip("markdown_it")
dollarmath = pytest.importorskip("mdit_py_plugins.dollarmath")

PARSER = markdown_it.MarkdownIt("commonmark").enable("table").use(dollarmath.dollarmath_plugin)


def inline_tokens(text):
    """The inline children of every block of ``text``, per block."""
    return [token.children for token in PARSER.parse(text) if token.type == "inline"]


def cells(row_markdown, columns):
    """The inline tokens of each cell of a one-row table."""
    header = "| " + " | ".join("c" * (i + 1) for i in range(columns)) + " |\n|" + "---|" * columns + "\n"
    blocks = inline_tokens(header + row_markdown + "\n")
    return blocks[columns:]  # after the header's cells


def markup(children):
    return [t.type for t in children if t.type in ("em_open", "strong_open", "code_inline", "html_inline")]


# -- the helpers ---------------------------------------------------------------------------------
FORMULAS = [
    r"\frac{c_{1}^{3}}{16} P X H C_{1} H C_{1}^{T} H C_{2} J",   # _ and ^
    r"a * b * c_{1} * d_{2}",                                     # stars that Markdown would take
    r"F_{6} - F_{6}\big|_{\widehat W_{2} = 0}",                   # a | that a table would take
    r"\|v\| = |x|",
    r"x` + `y",                                                   # backticks that would open code
    r"\text{a }1 \times 2\text{ matrix}",
]


@pytest.mark.parametrize("latex", FORMULAS)
def test_a_formula_is_one_math_token_in_a_paragraph_and_in_a_table_cell(latex):
    written = markdown_math(latex)
    assert written.startswith("$") and written.endswith("$") and "\n" not in written
    (paragraph,) = inline_tokens(f"see {written} here\n")
    assert [t.type for t in paragraph] == ["text", "math_inline", "text"]
    assert paragraph[1].content == written[1:-1]
    row = cells(f"| {written} | true |", 2)
    assert len(row) == 2, "the formula split the table row"
    assert [t.type for t in row[0]] == ["math_inline"] and row[0][0].content == written[1:-1]
    # the same mathematics: only | (as \vert), \| (as \Vert) and ` (as \backprime) are rewritten
    content = row[0][0].content
    assert "|" not in content and "`" not in content
    if "|" not in latex and "`" not in latex:
        assert content == " ".join(latex.split())


def test_a_matrix_formula_with_rows_stays_one_line():
    latex = sp.latex(sp.Matrix([[sp.Symbol("x_11") * 2, 0], [0, sp.Symbol("c_1") / 3]]))
    written = markdown_math(latex + "\n")
    (paragraph,) = inline_tokens(written + "\n")
    assert [t.type for t in paragraph] == ["math_inline"] and r"\\" in paragraph[0].content


TEXTS = ["P*X*H*C_1*J", "(c_1**3/16)*P*X", "a_b_ and _c_", "F_6 - F_6|Kt_2=0", "a `code` b", "cost $5 <b>x</b>",
         "Vt_l ... Vt_1, C_i = X^T What_i X"]


@pytest.mark.parametrize("escape", [markdown_prose, markdown_note], ids=["prose", "note"])
@pytest.mark.parametrize("text", TEXTS)
def test_text_shows_its_own_characters(escape, text):
    written = escape(text)
    (paragraph,) = inline_tokens(written + "\n")
    assert not markup(paragraph), (text, written)
    assert "".join(t.content for t in paragraph) == text
    row = cells(f"| {written} | x |", 2)
    assert len(row) == 2 and "".join(t.content for t in row[0]) == text


def test_a_note_keeps_words_with_underscores_as_written():
    assert markdown_note("F_6 - F_6|Kt_2=0") == "F_6 - F_6\\|Kt_2=0"
    assert markdown_note("_x_ and y_") == "\\_x\\_ and y\\_"


def test_text_with_formulas():
    written = markdown_text_with_math(r"entry $(1, 2)$ at $x_{11} = -1$, P*X: claimed $\frac{1}{3}$")
    (paragraph,) = inline_tokens(written + "\n")
    assert [t.type for t in paragraph].count("math_inline") == 3 and not markup(paragraph)
    assert "P*X" in "".join(t.content for t in paragraph if t.type == "text")


# -- what the package writes ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def formulas_report():
    generic = symattn.Normalizer.generic(k=1)
    two_layers = symattn.Architecture.uniform(layers=2, width=1, tokens=2, normalizer=generic)
    return symattn.check_claims(two_layers, [
        "F_0 = P*X*J/t", "F_1 = 0", "leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J", "F_4 = 0", "kernel = 3",
    ])


def test_claims_markdown_writes_formulas_as_math(formulas_report):
    markdown = formulas_report.to_markdown()
    assert "**3" not in markdown and "*P*X" not in markdown  # no Python formula left
    rows = [line for line in markdown.splitlines() if line.startswith("| ")][1:]
    blocks = inline_tokens(markdown)
    table = blocks[4:4 + 4 * len(rows)]
    assert len(rows) == 5 and len(table) == 20, "a row lost or gained a cell"
    claims, computed = table[0::4], table[2::4]
    # the formula claims and their computed sides are math; the number claim is its text, a code span
    assert [[t.type for t in cell] for cell in claims[:4]] == [["math_inline"]] * 4
    assert claims[4][0].type == "code_inline" and claims[4][0].content == "kernel = 3"
    assert computed[2][0].type == "math_inline"
    assert computed[2][0].content.startswith(r"\frac{c_{1}^{3}}{16}") and computed[2][0].content.endswith("C_{2} J")
    for block in blocks:
        assert not [t for t in block if t.type in ("em_open", "strong_open")], "a formula became emphasis"
    counterexample = [b for b in blocks if b[0].type == "text" and b[0].content.startswith("counterexample to")]
    assert counterexample and sum(t.type == "math_inline" for t in counterexample[0]) >= 4


def test_a_refuted_expression_shows_its_counterexample_as_math():
    arch = symattn.Architecture.uniform(layers=1, width=1, tokens=2)
    F = symattn.expand(arch, truncation=3)
    x = symattn.symbols("x_11", arch)
    result = symattn.check_expression(F[2] + sp.Matrix([[x, 0]]), F[2])
    assert result.verdict is False
    markdown = result.to_markdown()
    line = next(line for line in markdown.splitlines() if line.startswith("- counterexample:"))
    (paragraph,) = inline_tokens(line + "\n")[-1:]
    assert sum(t.type == "math_inline" for t in paragraph) >= 3 and "x_{11}" in markdown


def test_the_expansion_summary_writes_matrix_forms_as_math():
    F = symattn.expand(symattn.Architecture.uniform(layers=2, width=1, tokens=2), truncation=7)
    summary = F.summary()
    forms = summary.split("Leading coefficients")[1]
    assert "*" not in forms and "|What" not in forms
    items = [b for b in inline_tokens(forms) if any(t.type == "math_inline" for t in b)]
    assert len(items) == 2
    assert any(t.type == "math_inline" and t.content.endswith(r"P X H C_{1} H C_{1}^{\top} H C_{2} J")
               for t in items[1])
