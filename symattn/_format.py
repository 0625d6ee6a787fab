"""How results look: LaTeX escaping, tables, standalone documents and the result mixin.

Every result value of symattn (a :class:`~symattn.spectrum.Spectrum`, an
:class:`~symattn.identify.IdentificationReport`, ...) renders itself as JSON,
Markdown, LaTeX, Jupyter display math and plain text.  The pieces that all of
them share live here, once:

- :func:`latex_escape`: plain text made safe for LaTeX text mode;
- :func:`markdown_table`, :func:`latex_tabular`, :func:`latex_array` and
  :func:`text_table`: tables in each format;
- :func:`latex_document`: a LaTeX fragment wrapped in a standalone document;
- :class:`FormattedResult`: the mixin that turns a result's own pieces
  (``to_json``, ``_latex_body``, ``_latex_math``, ``to_markdown``) into
  ``to_latex(standalone=...)``, ``_repr_latex_``, ``to_json_string`` and ``__str__``;
- :class:`Section`: one titled part of a report, ready in every format.

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
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

__all__ = [
    "latex_escape",
    "latex_document",
    "markdown_table",
    "latex_tabular",
    "latex_array",
    "text_table",
    "FormattedResult",
    "Section",
]

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
    "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
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
    >>> print(latex_escape(r"a\\b ~ c^2 $5 #3"))
    a\\textbackslash{}b \\textasciitilde{} c\\textasciicircum{}2 \\$5 \\#3
    """
    return "".join(_LATEX_SPECIALS.get(char, char) for char in str(text))


def latex_document(body: str) -> str:
    """Wrap a LaTeX fragment (text mode) in a standalone ``article`` document.

    The document loads ``amsmath`` (for ``gather*``, ``aligned``, ...) and
    ``graphicx`` (for figures that ``symattn ... --out DIR`` draws beside it).

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
    >>> print(latex_document("Hello."))
    \\documentclass{article}
    \\usepackage{amsmath}
    \\usepackage{graphicx}
    \\begin{document}
    Hello.
    \\end{document}
    """
    return (
        "\\documentclass{article}\n\\usepackage{amsmath}\n\\usepackage{graphicx}\n\\begin{document}\n"
        f"{body.rstrip()}\n\\end{{document}}"
    )


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


def latex_array(header: Sequence, rows: Iterable[Sequence]) -> str:
    """A math-mode ``array`` of plain-text cells (each escaped, in ``\\text{}``), for Jupyter.

    MathJax renders math only, so display math in a notebook uses an
    ``array`` where a document uses a ``tabular``.  The first column is
    left-aligned, the others right-aligned.

    Examples
    --------
    >>> print(latex_array(["block", "order"], [["scores_1", 3]]))
    \\begin{array}{lr}
    \\text{block} & \\text{order} \\\\ \\hline
    \\text{scores\\_1} & \\text{3} \\\\
    \\end{array}
    """
    def cell(value):
        return r"\text{" + latex_escape(value) + "}"

    columns = "l" + "r" * (len(header) - 1)
    lines = [r"\begin{array}{" + columns + "}", " & ".join(cell(h) for h in header) + r" \\ \hline"]
    lines += [" & ".join(cell(c) for c in row) + r" \\" for row in rows]
    lines.append(r"\end{array}")
    return "\n".join(lines)


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
    ``to_json_string()`` and ``str()``.

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

    def _repr_latex_(self) -> str:
        """Display math for Jupyter."""
        return "$$" + self._latex_math() + "$$"

    def to_json_string(self) -> str:
        """:meth:`to_json` as indented JSON text."""
        return json.dumps(self.to_json(), indent=2)

    def __str__(self) -> str:
        return self.to_markdown()


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
    figures : tuple, optional
        ``(file name, draw)`` pairs: ``draw(path)`` writes a figure, which
        ``symattn ... --out DIR`` saves beside the report.

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
        text = str(result)
        return cls(
            title=title,
            key=key,
            data=result.to_json(),
            markdown=markdown if markdown is not None else f"```\n{text}\n```",
            latex=result.to_latex(),
            text=text,
        )
