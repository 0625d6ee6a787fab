"""How results look: LaTeX escaping, tables, standalone documents and the result mixin.

Every result value of symattn (a :class:`~symattn.spectrum.Spectrum`, an
:class:`~symattn.identify.IdentificationReport`, ...) renders itself as JSON,
Markdown, LaTeX, Jupyter display math and plain text.  The pieces that all of
them share live here, once:

- :func:`latex_escape`: plain text made safe for LaTeX text mode;
- :func:`markdown_code`: a user's text (a normalizer's name, an activation) as
  one Markdown code span, safe whatever it holds;
- :func:`markdown_table`, :func:`latex_tabular`, :func:`latex_array` and
  :func:`text_table`: tables in each format;
- :func:`latex_document`: a LaTeX fragment wrapped in a standalone document;
- :class:`FormattedResult`: the mixin that turns a result's own pieces
  (``to_json``, ``_latex_body``, ``_latex_math``, ``to_markdown``) into
  ``to_latex(standalone=...)``, ``_repr_latex_``, ``to_json_string`` and ``__str__``;
- :class:`Section`: one titled part of a report, ready in every format;
- :func:`bounded_display` and :data:`DISPLAY_MAX_CHARS`: every display of a
  result (Jupyter's LaTeX, Markdown and HTML, ``sympy.latex``, ``str``) is at
  most so many characters, a summary past them, decided before the whole
  text is written;
- :func:`plain_words`: Python's literals in a note (``True``, ``[3, 5]``,
  ``{0: 4, 1: 3}``) as the words every format shares.

Examples
--------
>>> print(markdown_table(["block", "order"], [["scores 1", 3], ["values", 0]], align="lr"))
| block | order |
|---|---:|
| scores 1 | 3 |
| values | 0 |
>>> latex_escape("scores_1 & 50%")
'scores\\\\_1 \\\\& 50\\\\%'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

__all__ = [
    "cell_text",
    "fixed",
    "latex_escape",
    "latex_document",
    "markdown_table",
    "markdown_code",
    "latex_tabular",
    "latex_array",
    "latex_tabularx",
    "latex_longtable",
    "latex_method",
    "latex_prose",
    "markdown_method",
    "text_table",
    "bounded_display",
    "plain_words",
    "DISPLAY_MAX_CHARS",
    "WRITE_AND_MEASURE",
    "Figure",
    "FormattedResult",
    "Section",
]

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
    "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\~{}", "^": r"\^{}", "<": r"$<$", ">": r"$>$", "|": r"$|$",
}


def latex_escape(text) -> str:
    """``str(text)`` with every LaTeX special character escaped for text mode.

    Parameters
    ----------
    text : object
        Plain text (anything with a ``str``), e.g. a block name or a method sentence.

    Returns
    -------
    str

    Examples
    --------
    >>> print(latex_escape("scores:1 & 50% of {x_1}"))
    scores:1 \\& 50\\% of \\{x\\_1\\}
    >>> print(latex_escape(r"a\\b ~ c^2 $5 #3 <= 1 -> x | y"))
    a\\textbackslash{}b \\~{} c\\^{}2 \\$5 \\#3 $<$= 1 -$>$ x $|$ y
    """
    return "".join(_LATEX_SPECIALS.get(char, char) for char in str(text))


#: The preamble of every standalone document: page geometry, tables that fit the page
#: (``tabularx``, ``longtable``), landscape pages, figures and floats.
LATEX_PREAMBLE = (
    "\\documentclass[11pt]{article}\n"
    "\\usepackage[a4paper,margin=2.2cm]{geometry}\n"
    "\\usepackage{amsmath}\n"
    "\\usepackage{graphicx}\n"
    "\\usepackage{array}\n"
    "\\usepackage{tabularx}\n"
    "\\usepackage{longtable}\n"
    "\\usepackage{pdflscape}\n"
    "\\usepackage[font=small]{caption}\n"
    "\\usepackage{float}\n"
    "\\setlength{\\emergencystretch}{3em}\n"
    "\\renewcommand{\\topfraction}{0.9}\n\\renewcommand{\\textfraction}{0.07}\n"
    "\\renewcommand{\\floatpagefraction}{0.8}\n"
    "\\newcolumntype{L}{>{\\raggedright\\arraybackslash}X}\n"
)


def latex_document(body: str) -> str:
    """Wrap a LaTeX fragment (text mode) in a standalone ``article`` document.

    The document (:data:`LATEX_PREAMBLE`) loads ``geometry`` (A4, 2.2 cm margins),
    ``amsmath`` (for ``gather*``, ``aligned``, ...), ``graphicx`` (for figures
    that ``symattn ... --out DIR`` draws beside it), ``array``, ``tabularx`` and
    ``longtable`` (tables as wide as the text, over several pages; the column
    type ``L`` is a ragged-right ``X`` column), ``pdflscape`` and ``caption``.

    Parameters
    ----------
    body : str
        The fragment, e.g. a result's ``to_latex()``.

    Returns
    -------
    str
        The document, without a final newline.

    Examples
    --------
    >>> document = latex_document("Hello.")
    >>> print(document.splitlines()[0])
    \\documentclass[11pt]{article}
    >>> print("\\n".join(document.splitlines()[-3:]))
    \\begin{document}
    Hello.
    \\end{document}
    """
    return f"{LATEX_PREAMBLE}\\begin{{document}}\n{body.rstrip()}\n\\end{{document}}"


def markdown_code(text, table: bool = False) -> str:
    """``str(text)`` as one Markdown code span, whatever it holds: backticks, HTML, ``|``, newlines.

    The fence is one backtick longer than the longest run of backticks in the
    text (CommonMark: a code span ends only at a run of the same length), and
    a text that starts or ends with a backtick is padded with a space on each
    side (which the renderer strips).  Inside a code span nothing is markup:
    ``<script>`` is shown, never run.  Whitespace (newlines too) becomes one
    space, so that a table row or a list item stays one line; ``table=True``
    also writes ``|`` as ``\\|``, which a GitHub table needs even in code.

    Examples
    --------
    >>> print(markdown_code("exp(x)"))
    `exp(x)`
    >>> print(markdown_code("exp(x)  # a `b` <script>"))
    ``exp(x) # a `b` <script>``
    >>> print(markdown_code("`x`|y", table=True))
    `` `x`\\|y ``
    """
    text = " ".join(str(text).split())
    if not text:
        return ""
    if table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(header: Sequence, rows: Iterable[Sequence], align: str = "") -> str:
    """A GitHub Markdown table; cells are written with ``str``, unescaped.

    Parameters
    ----------
    header : sequence
        The column titles.
    rows : iterable of sequences
        One sequence of cells per row, as long as ``header``.
    align : str, optional
        One letter per column: ``"l"`` (left, the default for every column) or
        ``"r"`` (right, for numbers).

    Returns
    -------
    str
        The lines of the table, without a final newline.

    Examples
    --------
    >>> print(markdown_table(("quantity", "value"), [("params", 16), ("kernel", 6)]))
    | quantity | value |
    |---|---|
    | params | 16 |
    | kernel | 6 |
    >>> print(markdown_table(("exponent", "computed"), [(1, 4)], align="rr"))
    | exponent | computed |
    |---:|---:|
    | 1 | 4 |
    """
    align = align or "l" * len(header)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(f"align needs one letter l or r per column ({len(header)}), got {align!r}")
    lines = ["| " + " | ".join(str(cell) for cell in header) + " |",
             "|" + "".join("---|" if a == "l" else "---:|" for a in align)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def latex_tabular(rows: Iterable[Sequence], columns: str, header: Sequence | None = None,
                  footer: Sequence[str] = ()) -> str:
    """A LaTeX ``tabular`` between horizontal rules; cells are LaTeX already (escape text first).

    Parameters
    ----------
    rows : iterable of sequences
        One sequence of cells per row.
    columns : str
        The column specification, e.g. ``"lr"``.
    header : sequence, optional
        Column titles, set between two rules above the rows.
    footer : sequence of str, optional
        Whole lines after the closing rule, e.g. ``\\multicolumn`` notes.

    Returns
    -------
    str

    Examples
    --------
    >>> print(latex_tabular([("kernel", 6)], "lr", header=("quantity", "value")))
    \\begin{tabular}{lr}
    \\hline
    quantity & value \\\\
    \\hline
    kernel & 6 \\\\
    \\hline
    \\end{tabular}
    """
    lines = [f"\\begin{{tabular}}{{{columns}}}", r"\hline"]
    if header is not None:
        lines += [" & ".join(str(cell) for cell in header) + r" \\", r"\hline"]
    lines += [" & ".join(str(cell) for cell in row) + r" \\" for row in rows]
    lines += [r"\hline", *footer, r"\end{tabular}"]
    return "\n".join(lines)


def latex_tabularx(rows: Iterable[Sequence], columns: str, header: Sequence | None = None,
                   footer: Sequence[str] = ()) -> str:
    """A ``tabularx`` as wide as the text; ``X``/``L`` columns wrap (cells are LaTeX already).

    Use it when a column holds sentences (reasons, conditions, methods), so
    that the table never runs past the right margin (``\\noindent``: a
    paragraph indent would push it past by the indent).  ``L`` is a ragged-right
    ``X`` column (defined in :data:`LATEX_PREAMBLE`).

    Examples
    --------
    >>> print(latex_tabularx([("scores:1", "lost for every normalizer")], "lL", header=("block", "why")))
    \\noindent\\begin{tabularx}{\\linewidth}{lL}
    \\hline
    block & why \\\\
    \\hline
    scores:1 & lost for every normalizer \\\\
    \\hline
    \\end{tabularx}
    """
    return latex_tabular(rows, columns, header, footer).replace(
        "\\begin{tabular}{", "\\noindent\\begin{tabularx}{\\linewidth}{", 1).replace("\\end{tabular}", "\\end{tabularx}")


def latex_longtable(rows: Iterable[Sequence], columns: str, header: Sequence, caption: str = "") -> str:
    """A ``longtable`` (breaks across pages, header repeated); use ``p{...}`` columns for text.

    ``caption`` (LaTeX already) is set under the table as a plain paragraph.

    Examples
    --------
    >>> print(latex_longtable([(1, 2)], "rr", ("a", "b")))
    \\begin{longtable}{rr}
    \\hline
    a & b \\\\
    \\hline
    \\endhead
    1 & 2 \\\\
    \\hline
    \\end{longtable}
    """
    lines = [f"\\begin{{longtable}}{{{columns}}}", r"\hline",
             " & ".join(str(cell) for cell in header) + r" \\", r"\hline", r"\endhead"]
    lines += [" & ".join(str(cell) for cell in row) + r" \\" for row in rows]
    lines += [r"\hline", r"\end{longtable}"]
    if caption:
        lines.insert(-1, rf"\multicolumn{{{_column_count(columns)}}}{{p{{0.95\linewidth}}}}{{\small {caption}}} \\")
    return "\n".join(lines)


def _column_count(columns: str) -> int:
    """How many columns a specification like ``"lp{3cm}>{\\raggedright}Lr"`` has."""
    count, depth = 0, 0
    for char in columns:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif depth == 0 and char.isalpha():
            count += 1
    return count


#: Plain-text formulas in prose (methods, notes) and their LaTeX: ``eps^19``, ``What_1``, ``Q_i``, ``<=``, ...
_PROSE_MATH = re.compile(
    # eps^19, eps^N, eps^(m c + a): a power in parentheses only when they close
    r"(?P<epspow>\beps\^(?:\((?P<parenpower>[0-9a-zA-Z+\- ]+)\)|(?P<power>[0-9a-zA-Z]+)(?![\w(])))"
    r"|(?P<eps>\beps\b)"
    r"|(?P<greek>\b(?P<letter_name>sigma|tau|delta|lambda|mu)_(?P<greek_index>[0-9]+|[a-z])\b)"
    r"|(?P<log10>\blog10\b)"
    r"|(?P<what>\bWhat_(?P<whatsub>[0-9a-z]+)\b)"
    # GL(a_i) x GL(d_i): general linear groups and their product, one formula
    r"|(?P<gl>\bGL\([A-Za-z0-9_]+\)(?: x GL\([A-Za-z0-9_]+\))*)"
    r"|(?P<sub>(?<![A-Za-z0-9_.])(?P<base>[A-Za-z]t?)_(?P<index>[0-9]+|[a-z]|\{[0-9a-z,]+\})"
    r"(?P<transpose>\^T)?(?![A-Za-z0-9_]))"
    r"|(?P<letterT>(?<![A-Za-z0-9_.^])(?P<letter>[A-Za-z1])\^T(?![A-Za-z0-9_]))"
    # a product written with x between numbers or formulas: 3 x 4, (...) x (...)
    r"|(?P<times>(?<=[0-9)]) x (?=[0-9(A-Z]))"
    # Python's truth values, written into notes by f-strings: words for a reader
    r"|(?P<pybool>(?<![\w.'\"])(?:True|False|None)(?![\w'\"]))"
    r"|(?P<rel><=|>=|->)"
)

#: How :func:`latex_prose` words Python's ``True``, ``False`` and ``None`` (``separating: True``).
_PROSE_WORDS = {"True": "yes", "False": "no", "None": "none"}


def _gl_latex(text: str) -> str:
    """``GL(a_i) x GL(d_i)`` as ``\\mathrm{GL}(a_{i})\\times\\mathrm{GL}(d_{i})`` (math mode, no ``$``)."""
    def group(part: str) -> str:
        argument = part[3:-1]
        base, _, index = argument.partition("_")
        return rf"\mathrm{{GL}}({base}_{{{index}}})" if index else rf"\mathrm{{GL}}({argument})"

    return r"\times".join(group(part) for part in text.split(" x "))


def latex_prose(text, formulas: dict | None = None) -> str:
    """Plain text with its formulas (``eps^19``, ``What_1``, ``Q_i``, ``P_0^T``, ``<=``) set in math; the rest escaped.

    For method notes and other sentences written in plain text, so that the
    LaTeX reads as a paper does: ``eps`` is ``$\\varepsilon$``, a letter with
    a one-word index is a subscript, ``What_i`` is ``$\\widehat W_{i}$``,
    ``GL(a_i) x GL(d_i)`` is ``$\\mathrm{GL}(a_{i})\\times\\mathrm{GL}(d_{i})$``,
    ``u^T`` is ``$u^\\top$``, ``sigma_j`` is ``$\\sigma_{j}$``, ``log10`` is ``$\\log_{10}$`` and an ``x`` between two numbers or formulas is
    ``$\\times$``.  Python's ``True``, ``False`` and ``None``, which notes
    built by f-strings carry, read ``yes``, ``no`` and ``none``: a reader
    never sees a Python literal.  Longer names with underscores
    (``sign_group_order``) stay text.

    Parameters
    ----------
    text : object
        The plain text (anything with a ``str``).
    formulas : dict, optional
        Whole formulas of the text (``"s(x) = C e^(ax)"``) and their LaTeX math
        (``"s(x) = C e^{a x}"``, without ``$``): each is set as that formula
        wherever it occurs; the rest of the text is read as above.

    Returns
    -------
    str
        LaTeX text mode.

    Examples
    --------
    >>> print(latex_prose("rank over GF(p)((eps)) resolved below eps^19; Q_i = eps Qt_i; P_0^T K_1^T"))
    rank over GF(p)(($\\varepsilon$)) resolved below $\\varepsilon^{19}$; $Q_{i}$ = $\\varepsilon$ $\\tilde Q_{i}$; $P_{0}^\\top$ $K_{1}^\\top$
    >>> print(latex_prose("What_2 = 0 (error probability <= 1e-9, a -> b) in effective.sign_group_order"))
    $\\widehat W_{2}$ = 0 (error probability $\\le$ 1e-9, a $\\to$ b) in effective.sign\\_group\\_order
    >>> print(latex_prose("a minor mod (p, eps^N) is; gauge group GL(a_i) x GL(d_i); 3 x 4; e_b w^T"))
    a minor mod (p, $\\varepsilon^{N}$) is; gauge group $\\mathrm{GL}(a_{i})\\times\\mathrm{GL}(d_{i})$; 3 $\\times$ 4; $e_{b}$ $w^\\top$
    >>> print(latex_prose("least squares of log10 sigma_j on log10 eps"))
    least squares of $\\log_{10}$ $\\sigma_{j}$ on $\\log_{10}$ $\\varepsilon$
    >>> print(latex_prose("K_{2,1}^T Q_{2,1} -> -K_{2,1}^T Q_{2,1}"))
    $K_{2,1}^\\top$ $Q_{2,1}$ $\\to$ -$K_{2,1}^\\top$ $Q_{2,1}$
    >>> print(latex_prose("separating: True; confirmed: False; estimate None"))
    separating: yes; confirmed: no; estimate none
    >>> print(latex_prose("s_1 exponential (s(x) = C e^(ax))", {"s(x) = C e^(ax)": "s(x) = C e^{a x}"}))
    $s_{1}$ exponential ($s(x) = C e^{a x}$)
    """
    text = plain_words(text)
    if formulas:
        pieces = re.split("(" + "|".join(re.escape(f) for f in sorted(formulas, key=len, reverse=True)) + ")", text)
        return "".join(f"${formulas[piece]}$" if index % 2 else latex_prose(piece)
                       for index, piece in enumerate(pieces))
    out, position = [], 0
    for match in _PROSE_MATH.finditer(text):
        out.append(latex_escape(text[position:match.start()]))
        if match.group("epspow"):
            power = match.group("parenpower") or match.group("power")
            out.append(rf"$\varepsilon^{{{power.replace(' ', '')}}}$")
        elif match.group("eps"):
            out.append(r"$\varepsilon$")
        elif match.group("greek"):
            out.append(rf"$\{match.group('letter_name')}_{{{match.group('greek_index')}}}$")
        elif match.group("log10"):
            out.append(r"$\log_{10}$")
        elif match.group("what"):
            out.append(rf"$\widehat W_{{{match.group('whatsub')}}}$")
        elif match.group("gl"):
            out.append(f"${_gl_latex(match.group('gl'))}$")
        elif match.group("sub"):
            base = match.group("base")
            base = rf"\tilde {base[0]}" if len(base) == 2 else base  # Qt_i: the base point's Q-tilde
            index = match.group("index").strip("{}")  # K_{2,1}: a head's index pair
            out.append(rf"${base}_{{{index}}}"
                       + (r"^\top" if match.group("transpose") else "") + "$")
        elif match.group("letterT"):
            letter = match.group("letter")
            out.append("$" + (r"\mathbf{1}" if letter == "1" else letter) + r"^\top$")
        elif match.group("times"):
            out.append(r" $\times$ ")
        elif match.group("pybool"):
            out.append(_PROSE_WORDS[match.group("pybool")])
        else:
            out.append({"<=": r"$\le$", ">=": r"$\ge$", "->": r"$\to$"}[match.group("rel")])
        position = match.end()
    out.append(latex_escape(text[position:]))
    return "".join(out)


#: A number as Python writes it into a note: ``3``, ``-1.5``, ``6.7e-15``, ``1/2``.
_NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?:/\d+)?"
_NUMBER_LIST = rf"\[\s*(?:{_NUMBER}(?:\s*,\s*{_NUMBER})*)?\s*\]"
_NESTED_LIST = rf"\[\s*{_NUMBER_LIST}(?:\s*,\s*{_NUMBER_LIST})*\s*\]"
#: Python's literals in a note: a sympy ``Matrix([[...]])`` or a list of lists of numbers, a list of numbers,
#: a dict of numbers to numbers (exponents to multiplicities), ``True``, ``False``, ``None``.
_PYTHON_LITERAL = re.compile(
    rf"(?P<matrix>Matrix\({_NESTED_LIST}\)|(?<![\w\]]){_NESTED_LIST})"
    rf"|(?P<list>(?<![\w\]]){_NUMBER_LIST})"
    rf"|(?P<dict>(?<![\w])\{{\s*{_NUMBER}\s*:\s*{_NUMBER}(?:\s*,\s*{_NUMBER}\s*:\s*{_NUMBER})*\s*\}})"
    r"|(?P<word>(?<![\w.'\"])(?:True|False|None)(?![\w'\"]))"
)


def _numbers(text: str) -> list[str]:
    return re.findall(_NUMBER, text)


def _and(items: list) -> str:
    """``a``, ``a and b``, ``a, b and c``: a list as words."""
    return " and ".join(item for item in [", ".join(items[:-1]), items[-1]] if item) if items else "none"


def plain_words(text) -> str:
    """``str(text)`` with Python's literals written as words, the same in every format.

    Notes built by f-strings carry Python: ``separating: True``, ``primes
    [268435399, 268435367]``, ``exponents {0: 4, 1: 3}``, ``Matrix([[0, 0]])``.
    A reader sees ``yes``/``no``/``none``, the numbers of a list joined by
    "and", exponents with their multiplicities, and a matrix as its rows
    ``(a, b; c, d)``.  Markdown and plain text write this text as it is;
    :func:`latex_prose` (LaTeX) reads it first, so that every format says the
    same words.  Literals of anything but numbers are left as they are.

    Parameters
    ----------
    text : object
        A note or any plain text (anything with a ``str``).

    Returns
    -------
    str

    Examples
    --------
    >>> print(plain_words("bank 6 (separating: True), primes [268435399, 268435367] (confirmed: False)"))
    bank 6 (separating: yes), primes 268435399 and 268435367 (confirmed: no)
    >>> print(plain_words("Smith exponents {0: 4, 1: 3}; estimate None; flip layers [1]; ranks [1, 1, 2]"))
    Smith exponents 0 (multiplicity 4) and 1 (multiplicity 3); estimate none; flip layers 1; ranks 1, 1 and 2
    >>> print(plain_words("computed Matrix([[0, 1/2], [3, 4]]), witness input [[2, 3]], no entries []"))
    computed (0, 1/2; 3, 4), witness input (2, 3), no entries none
    >>> print(plain_words("(witness input [[2, 3]])"))
    (witness input (2, 3))
    >>> print(plain_words("computed Matrix([[Vt1_11*x_11/2, f(x, y)], [0, 1]]) here"))
    computed (Vt1_11*x_11/2, f(x, y); 0, 1) here
    >>> print(plain_words("x[1] and 'True' stay"))
    x[1] and 'True' stay
    """
    def word(match) -> str:
        literal = match.group(0)
        if match.group("matrix"):
            rows = re.findall(_NUMBER_LIST, literal[len("Matrix("):] if literal.startswith("Matrix(") else literal[1:])
            return "(" + "; ".join(", ".join(_numbers(row)) for row in rows) + ")"
        if match.group("list"):
            return _and(_numbers(literal))
        if match.group("dict"):
            pairs = re.findall(rf"({_NUMBER})\s*:\s*({_NUMBER})", literal)
            return _and([f"{key} (multiplicity {value})" for key, value in pairs])
        return _PROSE_WORDS[literal]

    return _PYTHON_LITERAL.sub(word, _sympy_matrices(str(text)))


def _sympy_matrices(text: str) -> str:
    """Every ``Matrix([[a, b], [c, d]])`` of ``text``, entries of any kind, as its rows ``(a, b; c, d)``."""
    out, position = [], 0
    while (start := text.find("Matrix([", position)) >= 0:
        depth, index, rows, row, entry = 0, start + len("Matrix("), [], [], ""
        while index < len(text):
            char = text[index]
            if char in "([":
                depth += 1
                if depth > 2 or char == "(":
                    entry += char
            elif char in ")]":
                if depth > 2 or char == ")":
                    entry += char
                depth -= 1
                if depth == 1 and char == "]":
                    rows.append(row + [entry.strip()])
                    row, entry = [], ""
                if depth == 0:
                    break
            elif char == "," and depth == 2:
                row.append(entry.strip())
                entry = ""
            elif depth >= 2:
                entry += char
            index += 1
        if depth != 0 or not rows or not text.startswith(")", index + 1):  # not a whole Matrix([[...]]): leave it
            out.append(text[position:start + 1])
            position = start + 1
            continue
        out.append(text[position:start] + "(" + "; ".join(", ".join(r) for r in rows) + ")")
        position = index + 2
    return "".join(out) + text[position:]


def latex_method(text: str, label: str = "Method") -> str:
    """A note under a table: ``label: text.`` in small type (the text is plain and escaped here).

    Examples
    --------
    >>> print(latex_method("ranks over GF(p) at 2 primes_"))
    \\par\\smallskip\\noindent{\\small \\textit{Method:} ranks over GF(p) at 2 primes\\_.}\\par
    """
    text = str(text).rstrip(".")
    return rf"\par\smallskip\noindent{{\small \textit{{{latex_escape(label)}:}} {latex_prose(text)}.}}\par"


def markdown_method(text: str, label: str = "method") -> str:
    """The Markdown list item of a method note (the last line of every result's Markdown).

    Examples
    --------
    >>> markdown_method("exact over Q")
    '- method: exact over Q'
    >>> markdown_method("primes [5, 7] (confirmed: True)")
    '- method: primes 5 and 7 (confirmed: yes)'
    """
    return f"- {label}: {plain_words(text).rstrip('.')}"


@dataclass(frozen=True)
class Figure:
    """A figure of a report: the file stem, how to draw it, and its caption.

    ``draw(path)`` writes the figure to ``path`` in the format of its
    extension; :meth:`write` draws it as PNG (for Markdown and screens) and
    as PDF and SVG beside it (vector, for papers).

    Examples
    --------
    >>> import os, tempfile
    >>> def draw(path):
    ...     open(path, "w").write("figure")
    >>> figure = Figure("plot", draw, "A plot.")
    >>> folder = tempfile.mkdtemp()
    >>> [os.path.basename(p) for p in figure.write(folder)]
    ['plot.png', 'plot.pdf', 'plot.svg']
    >>> print(figure.markdown(1))
    ![Figure 1](plot.png)
    <BLANKLINE>
    *Figure 1.* A plot. (Vector versions: [plot.pdf](plot.pdf), [plot.svg](plot.svg).)
    """

    stem: str
    draw: Any
    caption: str
    #: The caption in LaTeX text mode (formulas in ``$...$``); default: ``caption`` escaped.
    caption_latex: str = ""
    #: The formats :meth:`write` draws, the first one for Markdown, ``latex_format`` for LaTeX.
    formats: tuple = ("png", "pdf", "svg")
    latex_format: str = "pdf"

    def files(self) -> list[str]:
        """The file names :meth:`write` draws."""
        return [f"{self.stem}.{ext}" for ext in self.formats]

    def write(self, directory) -> list:
        """Draw every format into ``directory``; return the paths."""
        from pathlib import Path

        paths = [Path(directory) / name for name in self.files()]
        for path in paths:
            self.draw(str(path))
        return paths

    def markdown(self, number: int) -> str:
        """The figure as a Markdown image with a numbered caption."""
        vectors = ", ".join(f"[{name}]({name})" for name in self.files()[1:])
        return (f"![Figure {number}]({self.files()[0]})\n\n*Figure {number}.* {self.caption}"
                + (f" (Vector versions: {vectors}.)" if vectors else ""))

    def latex(self, width: str = r"\linewidth") -> str:
        """The figure with its caption (escaped), placed here (``[H]``): after its section, never past the next heading."""
        return "\n".join([r"\begin{figure}[H]", r"\centering",
                          rf"\includegraphics[width={width},height=0.85\textheight,keepaspectratio]"
                          rf"{{{self.stem}.{self.latex_format}}}",
                          rf"\caption{{{self.caption_latex or latex_escape(self.caption)}}}", r"\end{figure}"])


def latex_array(header: Sequence, rows: Iterable[Sequence]) -> str:
    """A math-mode ``array`` of cells for Jupyter: numbers as math, other cells as escaped ``\\text{}``.

    MathJax renders math only, so display math in a notebook uses an
    ``array`` where a document uses a ``tabular``.  The first column is
    left-aligned, the others right-aligned.  A truth value reads ``yes`` or
    ``no``, ``None`` reads ``-`` (:func:`cell_text`).

    Examples
    --------
    >>> print(latex_array(["block", "order", "sharp"], [["scores_1", 3, True]]))
    \\begin{array}{lrr}
    \\text{block} & \\text{order} & \\text{sharp} \\\\ \\hline
    \\text{scores\\_1} & 3 & \\text{yes} \\\\
    \\end{array}
    """
    def cell(value):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)  # a number is mathematics
        return r"\text{" + latex_escape(cell_text(value)) + "}"

    columns = "l" + "r" * (len(header) - 1)
    lines = [r"\begin{array}{" + columns + "}", " & ".join(cell(h) for h in header) + r" \\ \hline"]
    lines += [" & ".join(cell(c) for c in row) + r" \\" for row in rows]
    lines.append(r"\end{array}")
    return "\n".join(lines)


def fixed(value: float, digits: int = 3, missing: str = "-") -> str:
    """``value`` with ``digits`` decimals, never ``-0.000``; ``missing`` for NaN.

    A measured number near zero (a slope that should be 0) comes out of
    round-off with either sign; its sign is noise, so it is not printed.

    Examples
    --------
    >>> fixed(-4e-12), fixed(0.99996), fixed(-1.25, 1), fixed(float("nan"))
    ('0.000', '1.000', '-1.2', '-')
    """
    if value != value:  # NaN
        return missing
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def cell_text(value, missing: str = "-"):
    """A value as a reader reads it in a table: ``yes``/``no`` for a truth value, ``missing`` for ``None``.

    Python's ``True``, ``False`` and ``None`` never reach a table of a
    document; every other value is returned as it is.

    Examples
    --------
    >>> cell_text(True), cell_text(False), cell_text(None), cell_text(13), cell_text("scores:1")
    ('yes', 'no', '-', 13, 'scores:1')
    """
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


def text_table(rows: Iterable[Sequence], indent: str = "  ") -> str:
    """Plain-text ``name  value`` lines with the names padded to one width.

    Examples
    --------
    >>> print(text_table([("layers", 2), ("tokens", 3), ("normalizer", "softmax")]))
      layers      2
      tokens      3
      normalizer  softmax
    """
    rows = [(str(name), str(value)) for name, value in rows]
    width = max((len(name) for name, _ in rows), default=0)
    return "\n".join(f"{indent}{name.ljust(width)}  {value}" for name, value in rows)


#: Characters any display of a result shows at most: Jupyter's LaTeX, Markdown and HTML, ``sympy.latex`` and
#: ``str``.  Past it a display is a summary that says what it left out and which method writes the whole text.
#: (An expansion of two layers at width 2 modulo ``eps^7`` is 74 MB of LaTeX: MathJax took 209 s on it.)
DISPLAY_MAX_CHARS = 20_000


def _display_note(form: str, size: int, limit: int, left_out: str, whole: str) -> str:
    """The sentence under a summary: how large the whole text is, what was left out, and how to get it."""
    words = (f"Summary: the whole text is about {size:,} characters, past the display bound of {limit:,}"
             + (f"; left out: {left_out}" if left_out else "") + f". The whole text: {whole}.")
    if form == "markdown":
        return "*" + words.replace("*", r"\*").replace("_", r"\_") + "*"
    if form == "latex":
        return r"\par\noindent{\small\textit{" + latex_escape(words) + "}}"
    if form == "math":
        return r"\text{" + latex_escape(words) + "}"
    if form == "html":
        import html

        return "<p><em>" + html.escape(words) + "</em></p>"
    return words


def bounded_display(render, *, size, summary, whole: str, left_out: str = "", form: str = "text",
                    limit: int | None = None, reserve: int = 0) -> str:
    """The text of a display, or a summary past ``limit`` characters, decided before the whole text is written.

    ``size`` estimates the whole text's length from the result's numbers
    (terms, rows) without writing it; past ``limit`` only ``summary()`` is
    written, followed by a note that gives the size, what was left out and
    the method that writes the whole text.  Below it, the whole text is
    written and measured: a text longer than the estimate said is replaced by
    the summary too, so that a display never exceeds ``limit`` characters.
    A summary that is itself too long is cut at a line (Markdown, text) or
    left out (LaTeX, whose lines do not stand alone).

    Parameters
    ----------
    render : callable
        ``render()`` returns the whole text.
    size : int or callable
        The estimated length of the whole text in characters (or a function
        returning it), computed without writing the text.
    summary : callable
        ``summary()`` returns the short text shown past the bound.
    whole : str
        How to get the whole text, e.g. ``"F.to_latex(full=True)"``.
    left_out : str, optional
        What the summary leaves out, e.g. ``"the entries of F_2, F_4"``.
    form : str, optional
        ``"text"`` (the default), ``"markdown"``, ``"latex"`` (text mode),
        ``"math"`` (math mode: the summary and the note are set in an
        ``array``), ``"html"`` or ``"repr"`` (one line): how the note is written.
    limit : int, optional
        Characters at most; default :data:`DISPLAY_MAX_CHARS` (read when called).
    reserve : int, optional
        Characters of the display outside the returned text (the ``$$`` around
        Jupyter's display math), counted in ``limit``.

    Returns
    -------
    str
        At most ``limit - reserve`` characters.

    Examples
    --------
    >>> text = bounded_display(lambda: "x" * 50, size=50, summary=lambda: "50 x", whole="ask", limit=100)
    >>> len(text)
    50
    >>> print(bounded_display(lambda: 1 / 0, size=10**8, summary=lambda: "10^8 x", whole="to_text()",
    ...                       left_out="the x's", limit=200))
    10^8 x
    Summary: the whole text is about 100,000,000 characters, past the display bound of 200; left out: the x's. The whole text: to_text().
    >>> print(bounded_display(lambda: "y" * 500, size=5, summary=lambda: "500 y", whole="ask", limit=150))
    500 y
    Summary: the whole text is about 500 characters, past the display bound of 150. The whole text: ask.
    """
    stated = DISPLAY_MAX_CHARS if limit is None else limit
    limit = stated - reserve
    size = size() if callable(size) else size
    if size <= limit:
        text = render()
        if len(text) <= limit:
            return text
        size = len(text)
    note = _display_note(form, size, stated, left_out, whole)
    short = summary()
    if form == "math":
        out = r"\begin{array}{l} " + short + r" \\ " + note + r" \end{array}"
        return out if len(out) <= limit else note[:limit]
    out = short.rstrip("\n") + (" " if form == "repr" else "\n") + note
    if len(out) <= limit:
        return out
    if form in ("markdown", "text"):
        lines, room = [], limit - len(note) - 5
        for line in short.splitlines():
            if len(line) + 1 > room:
                break
            lines.append(line)
            room -= len(line) + 1
        return "\n".join(lines + ["...", note])[:limit]
    return note[:limit]


#: A result whose JSON is at most this many times :data:`DISPLAY_MAX_CHARS` has its displays written and
#: measured (writing them costs no more than its JSON); past it, only a summary is written.
WRITE_AND_MEASURE = 10

#: The results whose :meth:`FormattedResult._display_size` is being estimated (a ``to_json`` that writes a display).
_ESTIMATING: list = []

#: The displays :class:`FormattedResult` bounds, each with the form of its note.
_DISPLAYS = {"__str__": "text", "_repr_markdown_": "markdown", "_repr_html_": "html", "_latex": "math",
             "_sympystr": "text"}


def _field_repr(result) -> str:
    """``Name(field=value, ...)`` as ``@dataclass`` writes it (its fields with ``repr=True``)."""
    import dataclasses

    if not dataclasses.is_dataclass(result):
        return object.__repr__(result)
    fields = ", ".join(f"{f.name}={getattr(result, f.name)!r}" for f in dataclasses.fields(result) if f.repr)
    return f"{type(result).__qualname__}({fields})"


def _bounded(name: str, form: str, whole_method):
    """A display method ``name`` that returns ``whole_method(self, ...)`` within :data:`DISPLAY_MAX_CHARS`."""
    def display(self, *args):
        return self._bounded_display(lambda: whole_method(self, *args), form)

    display.__name__ = name
    display.__doc__ = (f"The display ({form}), at most ``DISPLAY_MAX_CHARS`` characters: a summary past them "
                       f"(:func:`symattn._format.bounded_display`).")
    display._bounded = True
    return display


class FormattedResult:
    """The output formats every result value shares, from the few pieces each result defines.

    A result class (usually a frozen dataclass) inherits from this mixin and defines

    - ``to_json()``: a JSON-ready dict;
    - ``_latex_body()``: the result as a LaTeX fragment (text mode, e.g. a
      ``tabular``; math mode if the class sets ``_latex_body_is_math = True``);
    - ``_latex_math()``: the result in math mode (an ``array``) for Jupyter,
      which renders math only;
    - ``to_markdown()`` and, if plain text should differ from Markdown, ``__str__``.

    It then has ``to_latex(standalone=False)``, ``_repr_latex_()``,
    ``to_json_string()``, ``to_text()`` and ``str()``, and ``sympy.latex(result)``
    prints ``_latex_math()``: the result's numbers as mathematics.

    **Every display is bounded.**  ``str``, ``_repr_latex_``, ``sympy.latex``
    and the ``_repr_markdown_``, ``_repr_html_``, ``_latex`` and ``_sympystr``
    a subclass defines are at most :data:`DISPLAY_MAX_CHARS` characters
    (:func:`bounded_display`): past them a display is a summary (a table of
    the result's numbers, :meth:`_display_summary`) that says how to get the
    whole text.  The bound is decided from :meth:`_display_size`, an estimate
    made before the whole text is written (a subclass whose text can be huge,
    as an expansion, estimates from its own numbers).  A subclass writes its
    displays whole; the mixin keeps its own ``__str__`` as :meth:`to_text` and
    wraps each display when the class is created.  The whole texts stay at
    ``to_text()``, ``to_markdown()`` and ``to_latex()``.

    Examples
    --------
    >>> class Kernel(FormattedResult):
    ...     def __init__(self, dim): self.dim = dim
    ...     def to_json(self): return {"kernel": self.dim}
    ...     def to_markdown(self): return f"kernel dimension **{self.dim}**"
    ...     def _latex_body(self): return f"kernel dimension {self.dim}"
    ...     def _latex_math(self): return rf"\\dim\\ker = {self.dim}"
    >>> result = Kernel(6)
    >>> print(result)
    kernel dimension **6**
    >>> result.to_latex(), result._repr_latex_()
    ('kernel dimension 6', '$$\\\\dim\\\\ker = 6$$')
    >>> print(result.to_latex(standalone=True).splitlines()[-2])
    kernel dimension 6
    >>> print(result.to_json_string())
    {
      "kernel": 6
    }
    """

    #: True when ``_latex_body`` is math mode: a standalone document puts it in ``\\[ ... \\]``.
    _latex_body_is_math = False

    def _latex_body(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} defines no LaTeX body")

    def _latex_math(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} defines no display math")

    def to_latex(self, standalone: bool = False) -> str:
        """The result as LaTeX: a fragment, or with ``standalone=True`` a whole document.

        The fragment needs ``amsmath``, which the standalone document loads.
        """
        body = self._latex_body()
        if not standalone:
            return body
        return latex_document("\\[\n" + body + "\n\\]" if self._latex_body_is_math else body)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, form in _DISPLAYS.items():
            own = cls.__dict__.get(name)
            if own is None or getattr(own, "_bounded", False):
                continue
            if name == "__str__" and "to_text" not in cls.__dict__:
                cls.to_text = own  # the class's whole plain text
            setattr(cls, name, _bounded(name, form, own))
        # repr: Jupyter's text/plain and a REPL's echo.  Set before @dataclass runs, which then keeps it.
        own = cls.__dict__.get("__repr__")
        if not getattr(own, "_bounded", False):
            cls.__repr__ = _bounded("__repr__", "repr", own or _field_repr)
        own = cls.__dict__.get("_repr_latex_")
        if own is not None and not getattr(own, "_bounded", False):
            def _repr_latex_(self, _own=own):
                return "$$" + self._bounded_display(lambda: _own(self).strip().strip("$"), "math", 4) + "$$"

            _repr_latex_._bounded = True
            cls._repr_latex_ = _repr_latex_

    def _repr_latex_(self) -> str:
        """Display math for Jupyter, at most :data:`DISPLAY_MAX_CHARS` characters."""
        return "$$" + self._bounded_display(self._latex_math, "math", 4) + "$$"

    def _latex(self, printer=None) -> str:
        """What ``sympy.latex(result)`` prints: :meth:`_latex_math`, the result's numbers as mathematics (bounded)."""
        return self._bounded_display(self._latex_math, "math")

    def to_json_string(self) -> str:
        """:meth:`to_json` as indented JSON text."""
        return json.dumps(self.to_json(), indent=2)

    def to_text(self) -> str:
        """The whole plain text that ``str`` shows up to :data:`DISPLAY_MAX_CHARS` characters."""
        return self.to_markdown()

    def __str__(self) -> str:
        return self._bounded_display(self.to_text, "text")

    # -- the bound on every display -----------------------------------------------------------------
    def _bounded_display(self, render, form: str, reserve: int = 0) -> str:
        """``render()`` within :data:`DISPLAY_MAX_CHARS` (less ``reserve``): see :func:`bounded_display`."""
        return bounded_display(render, size=lambda: self._display_size(form), form=form,
                               summary=lambda: self._display_summary(form), whole=self._display_whole(form),
                               left_out=self._display_left_out(form), reserve=reserve)

    def _display_size(self, form: str) -> int:
        """About how many characters the whole display in ``form`` has, estimated without writing it.

        The default measures :meth:`to_json`, the result's data, from which
        every display is written and which is at least as long as each of them.
        Data of at most :data:`WRITE_AND_MEASURE` times the bound is small
        enough to write the display and measure it (0 is returned: "write
        it"); past that the JSON's length is the estimate, and only the
        summary is written.  A result whose text can be much longer than its
        data (an expansion) overrides this with its own estimate.
        """
        if any(result is self for result in _ESTIMATING):  # to_json() writes a display of its own: write, measure
            return 0
        _ESTIMATING.append(self)
        try:
            size = len(json.dumps(self.to_json(), default=str))
        finally:
            _ESTIMATING.pop()
        return 0 if size <= WRITE_AND_MEASURE * DISPLAY_MAX_CHARS else size

    def _summary_rows(self) -> list:
        """``(name, value)`` rows of the summary: the numbers, truth values and short words of :meth:`to_json`."""
        rows = []
        for key, value in self.to_json().items():
            if isinstance(value, (bool, int, float)) or value is None or (isinstance(value, str) and len(value) <= 80):
                rows.append((key.replace("_", " "), cell_text(value)))
        return rows[:40]

    def _display_summary(self, form: str) -> str:
        """The short display shown past the bound: :meth:`_summary_rows` as a table in ``form``."""
        rows = self._summary_rows()
        title = type(self).__name__
        if form == "repr":
            return title + "(" + ", ".join(f"{name.replace(' ', '_')}={value!r}" for name, value in rows) + ")"
        if form == "markdown":
            return f"**{title}**\n\n" + markdown_table(("quantity", "value"), rows)
        if form == "math":
            return latex_array((title, ""), rows)
        if form == "html":
            import html

            return "<pre>" + html.escape(title + "\n" + text_table(rows)) + "</pre>"
        return title + "\n" + text_table(rows)

    def _display_whole(self, form: str) -> str:
        """The method that writes the whole text of a display in ``form``."""
        return {"text": "to_text()", "markdown": "to_markdown()", "html": "to_markdown()",
                "repr": "to_text(), every field: to_json()"}.get(form, "to_latex()")

    def _display_left_out(self, form: str) -> str:
        """What the summary leaves out."""
        return "every table and note but the numbers shown"


@dataclass(frozen=True)
class Section:
    """One titled part of a report, ready in every output format.

    Parameters
    ----------
    title : str
        Heading, e.g. ``"Decay spectrum"`` (plain text; escaped for LaTeX).
    key : str
        Key under which ``data`` appears in the report's JSON.
    data : JSON-ready value
    markdown : str
        Markdown body, without the heading.
    latex : str
        LaTeX body (text mode: a ``tabular``, or math in ``\\[ ... \\]``), without the heading.
    text : str, optional
        Plain-text body for ``str(report)``; defaults to ``markdown``.
    figures : tuple of Figure, optional
        The section's figures (:class:`Figure`): ``symattn ... --out DIR``
        draws them beside the report (PNG, PDF, SVG) and places them, with
        their captions, after the section's body.

    Examples
    --------
    >>> s = Section("Note", "note", {"ok": True}, "All **fine**.", r"All \\textbf{fine}.")
    >>> s.text
    'All **fine**.'
    """

    title: str
    key: str
    data: Any
    markdown: str
    latex: str
    text: str = ""
    figures: tuple = ()

    def __post_init__(self):
        if not self.text:
            object.__setattr__(self, "text", self.markdown)

    @classmethod
    def from_result(cls, title: str, key: str, result, markdown: str | None = None) -> "Section":
        """A section from a result value with ``to_json()``, ``to_latex()`` and ``__str__``.

        The Markdown body is ``markdown`` if given, else ``str(result)`` in a code block.

        Examples
        --------
        >>> class Answer:
        ...     def to_json(self): return {"answer": 42}
        ...     def to_latex(self): return r"\\[ 42 \\]"
        ...     def __str__(self): return "answer  42"
        >>> s = Section.from_result("The answer", "answer", Answer())
        >>> s.data, s.markdown
        ({'answer': 42}, '```\\nanswer  42\\n```')
        """
        text = result.to_text() if hasattr(result, "to_text") else str(result)  # the whole text, not a display
        return cls(
            title=title,
            key=key,
            data=result.to_json(),
            markdown=markdown if markdown is not None else f"```\n{text}\n```",
            latex=result.to_latex(),
            text=text,
        )
