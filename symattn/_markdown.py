r"""Formulas and plain text in Markdown: LaTeX math for formulas, escaped markup for prose.

Markdown written by the package (tables of verdicts, expansion summaries)
is read by MyST (the docs, with ``dollarmath``) and by Jupyter. A formula
written as Python (``(c_1**3/16)*P*X*H*C_1``) loses its ``*`` to emphasis
there; so formulas go in as LaTeX math, ``$...$``, and plain text with
markup characters (a method note, a name) is escaped.

Examples
--------
>>> print(markdown_math(r"\frac{c_{1}^{3}}{16} P X H C_{1}"), markdown_prose("P*X*H"))
$\frac{c_{1}^{3}}{16} P X H C_{1}$ P\*X\*H
"""

from __future__ import annotations

import re

from ._format import plain_words

__all__ = ["markdown_math", "markdown_prose", "markdown_note", "markdown_text_with_math"]

#: Plain-text characters that Markdown reads as markup, each written with a backslash by :func:`markdown_prose`.
MARKDOWN_SPECIAL = "\\`*_|$<>[]"


def markdown_math(latex) -> str:
    r"""A LaTeX formula as inline Markdown math ``$...$``: one line, safe in a table cell.

    Inside ``$...$`` MyST (``dollarmath``) and Jupyter read the formula before
    any markup, so ``*`` and ``_`` stay LaTeX. What a table or the inline
    parser would still take is written as the same mathematics: ``|`` as
    ``\vert`` (a table splits its row at every ``|``, even inside math),
    ``\|`` as ``\Vert``, a backtick as ``\backprime{}`` (it would open a code
    span), a ``$`` as ``\$``; every run of whitespace becomes one space.

    Parameters
    ----------
    latex : str
        A formula in LaTeX math mode, without delimiters.

    Returns
    -------
    str
        ``$formula$``, or ``""`` for an empty formula.

    Examples
    --------
    >>> print(markdown_math(r"F_{2} - F_{2}\big|_{\widehat W_{1} = 0} = \frac{c_{1}}{4} P X H C_{1} J"))
    $F_{2} - F_{2}\big\vert _{\widehat W_{1} = 0} = \frac{c_{1}}{4} P X H C_{1} J$
    >>> print(markdown_math("a * b_{1}\n + `x` + \\|v\\| + \\$"))
    $a * b_{1} + \backprime{}x\backprime{} + \Vert v\Vert  + \$$
    >>> markdown_math("  ")
    ''
    """
    text = " ".join(str(latex).split())
    if not text:
        return ""
    text = text.replace("\\$", "$").replace("$", "\\$")
    text = text.replace("\\|", "\\Vert ").replace("|", "\\vert ").replace("`", "\\backprime{}")
    return f"${text.strip()}$"


def markdown_prose(text) -> str:
    r"""Plain text (a method note, a name) as Markdown that shows it as it is: markup characters escaped.

    ``*``, ``_``, backticks, ``|``, ``$``, ``\``, brackets and angle brackets
    get a backslash (CommonMark's escapes, which MyST and Jupyter honour), so
    that ``P*X*H`` is not emphasis, ``a|b`` does not split a table row and
    ``$`` opens no formula; whitespace becomes one space (one cell, one line).

    Examples
    --------
    >>> print(markdown_prose("F_6 - F_6|Kt_2=0 of (1/16)*P*X*H, `c`"))
    F\_6 - F\_6\|Kt\_2=0 of (1/16)\*P\*X\*H, \`c\`
    """
    return _escaped(" ".join(str(text).split()))


#: What CommonMark reads as markup in a note: ``*``, backticks, ``$``, ``|``, ``<``, ``\``, and a ``_`` that is
#: not between two letters or digits (``F_6`` and ``What_1`` are words, ``_x_`` is emphasis).
_NOTE_MARKUP = re.compile(r"[*`$|<\\]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def markdown_note(text) -> str:
    r"""A note (a method, a reason) as Markdown, its words as written: only what would be markup is escaped.

    Unlike :func:`markdown_prose`, a ``_`` inside a word (``F_6``, ``Kt_2``)
    stays as it is: CommonMark never reads it as emphasis.

    Examples
    --------
    >>> print(markdown_note("F_6 - F_6|Kt_2=0, P = Vt2*Vt1, _x_, `c`, $5"))
    F_6 - F_6\|Kt_2=0, P = Vt2\*Vt1, \_x\_, \`c\`, \$5

    Python's literals read as in every format (:func:`symattn._format.plain_words`):

    >>> print(markdown_note("exponents {0: 4, 1: 3}, primes [5, 7] (confirmed: True)"))
    exponents 0 (multiplicity 4) and 1 (multiplicity 3), primes 5 and 7 (confirmed: yes)
    """
    return _NOTE_MARKUP.sub(lambda match: "\\" + match.group(0), " ".join(plain_words(text).split()))


def _escaped(text: str) -> str:
    return "".join("\\" + char if char in MARKDOWN_SPECIAL else " " if char.isspace() else char for char in text)


def markdown_text_with_math(text: str) -> str:
    r"""LaTeX text mode with inline ``$...$`` formulas (a counterexample's line) as Markdown.

    The formulas go through :func:`markdown_math`, the words between them
    through :func:`markdown_prose`.

    Examples
    --------
    >>> print(markdown_text_with_math(r"entry $(1, 2)$ at $x_{11} = 2$: claimed value $\frac{1}{3}$"))
    entry $(1, 2)$ at $x_{11} = 2$: claimed value $\frac{1}{3}$
    """
    pieces = str(text).split("$")
    return "".join(markdown_math(piece) if index % 2 else _escaped(piece) for index, piece in enumerate(pieces))
