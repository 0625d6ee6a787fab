r"""LaTeX with the package's names: ``Kt1_11`` as ``(\tilde{K}_{1})_{11}``, ``What_1`` as ``\widehat{W}_{1}``.

:func:`latex` is ``sympy.latex`` with the package's names for plain sympy
Symbols too; :class:`CoefficientMatrix` is the sympy matrix of a coefficient
``F_n`` that prints so; the rest writes matrix expressions and breaks long
sums into lines that keep to the page (for :meth:`Expansion.to_latex
<symattn.expand.Expansion.to_latex>` and the leading coefficients).
"""

from __future__ import annotations

import sympy as sp


def _latex_names(symbols) -> dict:
    """LaTeX names of plain Symbols named as the package's: ``Qt1_11`` -> ``(\\tilde{Q}_{1})_{11}``, ``eps``.

    The package's own symbols (:class:`symattn.model.EntrySymbol`) print so by
    themselves; this is for plain sympy Symbols of the same names.
    """
    from ..model import entry_latex

    names = {}
    for s in symbols:
        if not isinstance(s, sp.Symbol):
            continue
        if s.name == "eps":
            names[s] = r"\varepsilon"
            continue
        text = entry_latex(s.name)
        if text is not None:
            names[s] = text
    return names


def _latex(expr) -> str:
    return sp.latex(expr, symbol_names=_latex_names(getattr(expr, "free_symbols", ())))


def latex(expr, **settings) -> str:
    r"""``sympy.latex`` with the package's names: ``Kt1_11`` as ``(\tilde{K}_{1})_{11}``, ``Q1_12`` as
    ``(Q_{1})_{12}``, ``x_11`` as ``x_{11}``, for plain sympy Symbols of those names too.

    The package's own symbols print so in ``sympy.latex`` already
    (:class:`symattn.model.EntrySymbol`); this function gives the same names
    to plain ``sympy.Symbol`` objects named like them (e.g. built by hand or
    read from JSON).  Further keyword arguments go to ``sympy.latex`` (its
    own ``symbol_names`` win over the package's).

    Examples
    --------
    >>> from symattn.expand import curve_symbols
    >>> from symattn.model import Architecture
    >>> Kt = curve_symbols(Architecture.uniform(layers=1, width=1)).K[0][0, 0]
    >>> x = Architecture.uniform(layers=1, width=1).input_symbols()[0, 1]
    >>> sp.latex(Kt * x), latex(sp.Symbol("Kt1_11") * sp.Symbol("x_12"))
    ('(\\tilde{K}_{1})_{11} x_{12}', '(\\tilde{K}_{1})_{11} x_{12}')
    >>> latex(sp.Symbol("Q1_12") ** 2)
    '(Q_{1})_{12}^{2}'
    """
    names = _latex_names(getattr(expr, "free_symbols", ()))
    names.update(settings.pop("symbol_names", None) or {})
    return sp.latex(expr, symbol_names=names, **settings)


#: Characters of LaTeX source per displayed line of a long formula: about the width of an A4 text line
#: (measured on expansions: some 17 source characters per centimetre, the symbols being long commands).
_LATEX_LINE = 220


def _broken_latex(expr) -> list[str]:
    """The LaTeX of a sum as lines of at most about :data:`_LATEX_LINE` source characters, signs leading.

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> lines = _broken_latex(sum(x**k for k in range(80)))
    >>> len(lines), lines[1][:12]
    (4, '+ x^{55} + x')
    >>> _broken_latex(x - 1)
    ['x - 1']
    """
    if not isinstance(expr, sp.Add):
        return [_latex(expr)]
    lines, line = [], ""
    for k, term in enumerate(expr.as_ordered_terms()):
        text = _latex(term)
        if k:
            text = ("- " + text[1:].lstrip()) if text.startswith("-") else "+ " + text
        if line and len(line) + len(text) + 1 > _LATEX_LINE:
            lines.append(line)
            line = text
        else:
            line = f"{line} {text}" if line else text
    return lines + [line]


class CoefficientMatrix(sp.ImmutableDenseMatrix):
    r"""An immutable sympy Matrix whose LaTeX uses the package's symbol names.

    The coefficients ``F[n]`` of an :class:`Expansion` (and
    :meth:`LeadingCoefficient.explicit`) are of this class: everything else
    is ``sympy.ImmutableMatrix`` (equality, ``subs``, arithmetic, which keep
    the class), and ``sympy.latex(F[2])`` (and Jupyter) writes
    ``(\tilde{K}_{1})_{11}`` like the package's export, not ``Kt_{1 11}``,
    even for plain sympy Symbols of the package's names.

    Examples
    --------
    >>> from symattn.expand import expand
    >>> from symattn.model import Architecture
    >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
    >>> isinstance(F[2], CoefficientMatrix), F[2] == sp.ImmutableMatrix(F[2])
    (True, True)
    >>> r"(\tilde{K}_{1})_{11}" in sp.latex(F[2]), "Kt_{1 11}" in sp.latex(sp.Matrix(F[2]))
    (True, False)
    """

    def _latex(self, printer):
        given = printer._settings.get("symbol_names")
        printer._settings["symbol_names"] = {**_latex_names(self.free_symbols), **(given or {})}
        try:
            return printer._print_MatrixBase(self)
        finally:
            printer._settings["symbol_names"] = given


#: Width of a line of a displayed formula, in the units of :func:`_shown_width` (about a letter of math at
#: 11 pt): an A4 page with 2.2 cm margins holds some 85; the rest is room for ``(F_n)_{rc} =`` and ``\quad``.
_LATEX_WIDTH = 66


def _shown_width(text: str) -> float:
    r"""About how wide LaTeX math ``text`` is set, in letters: commands as their glyphs, scripts at 0.7.

    Examples
    --------
    >>> _shown_width(r"(\tilde{K}_{1})_{11}^{2}"), _shown_width(r"\tfrac{1}{54} x_{11} + 1")
    (5.8, 7.4)
    """
    import re

    text = re.sub(r"\\(left|right|bigl|bigr|Bigl|Bigr|,|;|!)", "", text)
    text = re.sub(r"\\tfrac\{([^{}]*)\}\{([^{}]*)\}", lambda m: "9" * max(len(m[1]), len(m[2])), text)
    text = re.sub(r"\\(tilde|hat|widehat|mathbf|mathrm)\{([^{}]*)\}", r"\2", text)
    scripts = 0.0
    while True:
        found = re.search(r"[_^]\{([^{}]*)\}", text)
        if found is None:
            break
        scripts += 0.7 * len(found[1].replace(" ", ""))
        text = text[:found.start()] + text[found.end():]
    operators = len(re.findall(r" [-+=] ", text))
    text = re.sub(r" [-+=] ", "", text)
    text = re.sub(r"\\[A-Za-z]+", "M", text)  # any other command: one glyph
    return round(len(text.replace(" ", "").replace("{", "").replace("}", "")) + 2 * operators + scripts, 6)


def _pack_lines(atoms: list[str], width: float = _LATEX_WIDTH) -> list[str]:
    """Atoms joined by spaces into lines of at most ``width`` (:func:`_shown_width`); an atom is never split."""
    lines, line, used = [], "", 0.0
    for atom in atoms:
        size = _shown_width(atom)
        if line and used + size > width:
            lines.append(line)
            line, used = atom, size
        else:
            line, used = (f"{line} {atom}" if line else atom), used + size + 0.3
    return lines + ([line] if line else [])


def _signed(atoms: list[str], first: bool, negative: bool) -> list[str]:
    """``atoms`` with the sign of a term: ``-`` or nothing on the first, ``+``/``-`` between terms."""
    sign = ("-" if negative else "") if first else ("- " if negative else "+ ")
    return [sign + atoms[0], *atoms[1:]] if atoms else atoms


def _sum_atoms(expr, width: float) -> list[str]:
    """The terms of a sum as atoms (signs leading), in sympy's printed order."""
    atoms = []
    for k, term in enumerate(sp.Add.make_args(expr) if not isinstance(expr, sp.Add) else expr.as_ordered_terms()):
        negative = term.could_extract_minus_sign()
        text = _latex(-term if negative else term)
        atoms += _signed([text], k == 0, negative)
    return atoms


def matrix_latex(expr) -> str:
    """LaTeX of a matrix expression of this module: ``Qt1`` as ``\\tilde{Q}_{1}``, ``What_1`` as
    ``\\widehat{W}_{1}``, transposes ``^{\\top}``, a scalar factor as a fraction before the product (not sympy's
    parenthesized one).

    Examples
    --------
    >>> import sympy as sp
    >>> print(matrix_latex(sp.MatrixSymbol("P", 2, 2).T * sp.MatrixSymbol("X", 2, 3)))
    P^{\\top} X
    """
    return _matrix_latex_raw(expr).replace("^{T}", "^{\\top}")


def _matrix_latex_raw(expr) -> str:
    rename = {}
    for m in expr.atoms(sp.MatrixSymbol):
        name = m.name
        if len(name) > 2 and name[0] in "QKV" and name[1] == "t" and name[2:].isdigit():
            rename[m] = sp.MatrixSymbol(rf"\tilde{{{name[0]}}}_{{{name[2:]}}}", *m.shape)
        elif name.startswith("What_") and name[5:].isdigit():
            rename[m] = sp.MatrixSymbol(rf"\widehat{{W}}_{{{name[5:]}}}", *m.shape)
    expr = expr.xreplace(rename) if rename else expr

    def term(e):
        if isinstance(e, sp.MatMul):
            scalar, factors = e.as_coeff_matrices()
            body = sp.latex(sp.MatMul(*factors)) if len(factors) > 1 else sp.latex(factors[0])
            if scalar == 1:
                return body
            if scalar == -1:
                return "-" + body
            return sp.latex(scalar) + r"\, " + body
        return sp.latex(e)

    if isinstance(expr, sp.MatAdd):
        text = ""
        for i, e in enumerate(expr.args):
            piece = term(e)
            text += piece if i == 0 else (" " + piece if piece.startswith("-") else " + " + piece)
        return text
    return term(expr)
