"""The two sides of a claimed expression, read as sympy matrices with the package's names.

A claim or a computed value (an expression, a Matrix, an explicit matrix
expression, a string, a :class:`~symattn.expand.LeadingCoefficient`) becomes
a sympy Matrix (:func:`to_matrix`); the claim's symbols are identified by name
with the computed side's (:func:`rename_by_name`), and a symbol neither side
nor the package knows is refused as a likely typo
(:func:`refuse_unknown_symbols`, with :func:`is_package_name`).  Long values
are described, not printed (:func:`short_text`).

Examples
--------
>>> from symattn.check.sides import is_package_name
>>> is_package_name("Qt1_11"), is_package_name("q")
(True, False)
"""

from __future__ import annotations

import re

import numpy as np
import sympy as sp

from ..errors import ShapeError, SymattnError
from ..parsing import parse_expression, to_sympy, to_sympy_matrix

__all__ = ["is_package_name"]


def count_terms(value) -> int:
    entries = list(value) if isinstance(value, sp.MatrixBase) else [value]
    return sum(len(e.args) if isinstance(e, sp.Basic) and e.is_Add else 1 for e in entries)


def short_text(value, limit: int = 400) -> str:
    """The text of a value, cut at ``limit`` characters; a large one is described, not printed (sympy's
    printer takes minutes on the 50 000 terms of an expansion's entries)."""
    terms = count_terms(value)
    if terms > 4 * limit:
        shape = f"{value.rows} x {value.cols} matrix" if isinstance(value, sp.MatrixBase) else "expression"
        return f"({shape} with {terms} terms)"
    text = str(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def to_matrix(value, what: str, names: dict) -> tuple[sp.Matrix, bool]:
    """A sympy Matrix and whether the input was a scalar."""
    if isinstance(value, str):
        value = parse_expression(value, names, what=f"{what} expression")
    if hasattr(value, "explicit") and callable(value.explicit):  # e.g. a LeadingCoefficient
        value = value.explicit()
    if isinstance(value, sp.MatrixExpr) and not isinstance(value, sp.MatrixBase):
        if value.atoms(sp.MatrixSymbol):
            raise SymattnError(
                f"the {what} matrix expression has matrix symbols "
                f"({', '.join(sorted(m.name for m in value.atoms(sp.MatrixSymbol)))}); give explicit matrices, "
                "e.g. with symattn.expand.evaluate_matrix_expression or LeadingCoefficient.explicit()")
        try:
            value = value.as_explicit()
        except Exception as err:  # noqa: BLE001 - sympy raises many kinds here
            raise SymattnError(f"the {what} matrix expression has no explicit form: {err}") from None
    if isinstance(value, (sp.MatrixBase, np.ndarray, list, tuple)):
        return to_sympy_matrix(value, names, what=f"{what} matrix", error=ShapeError), False
    if value is None or not isinstance(value, (sp.Basic, int, float, np.number)):
        raise SymattnError(f"the {what} value must be a sympy expression, a Matrix, a number or a string, "
                           f"got {type(value).__name__}")
    return sp.Matrix([[to_sympy(value, what=f"{what} value", error=SymattnError)]]), True


def refuse_non_analytic(matrix: sp.Matrix, what: str) -> None:
    """Refuse a side that uses a function that is not analytic (``Max``, ``Abs``, ``Piecewise``, ...).

    The comparison decides analytic expressions (polynomials, rational
    functions, ``exp``, ``log``, ``sin``, ... of them); on ``Max`` of a few
    hundred polynomials sympy's own evaluation runs for minutes.  The list is
    the normalizers' (:func:`symattn.normalizers.checks.non_analytic_heads`).

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> refuse_non_analytic(sp.Matrix([[x**2 + 1]]), "claimed expression")
    >>> refuse_non_analytic(sp.Matrix([[sp.Max(x, 1 - x)]]), "claimed expression")
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the claimed expression Max(x, 1 - x) uses Max, which is not analytic: the check compares analytic expressions (polynomials, rational functions, exp, log, sin, ... of them); Abs, Max, Min, Piecewise, sign, floor, ceiling and Heaviside are not accepted
    """
    from ..errors import ParseError
    from ..normalizers.checks import non_analytic_heads

    heads = non_analytic_heads(matrix)
    if heads:
        shown = short_text(matrix if matrix.shape != (1, 1) else matrix[0, 0], 80)
        raise ParseError(f"the {what} {shown} uses {', '.join(heads)}, which {'is' if len(heads) == 1 else 'are'} "
                         "not analytic: the check compares analytic expressions (polynomials, rational functions, "
                         "exp, log, sin, ... of them); Abs, Max, Min, Piecewise, sign, floor, ceiling and Heaviside "
                         "are not accepted")


def rename_by_name(matrix: sp.Matrix, names: dict, renamed: list | None = None) -> sp.Matrix:
    """Identify symbols by name (a parsed ``x`` is the computed real ``x``).

    ``renamed`` collects the names of the claim's symbols that were replaced
    (same name, other assumptions): the method text says so.
    """
    mapping = {s: names[s.name] for s in matrix.free_symbols
               if isinstance(s, sp.Symbol) and s.name in names and names[s.name] != s}
    if renamed is not None:
        renamed.extend(sorted(s.name for s in mapping))
    return matrix.xreplace(mapping) if mapping else matrix


#: The names of the package's scalar symbols: native and base-point parameters (``Q1_11``, ``Kt2h1_12``; the
#: blocks of other components, ``Wint1_11``, by :data:`symattn.model.symbols.BLOCK_LETTERS`),
#: the input ``x_11``, a generic normalizer's ``c_3`` and the mean scores ``alpha_2``.
_PACKAGE_NAME = re.compile(r"(?:[QKV]t?\d+(?:h\d+)?_\d+|x_\d+|c_\d+|alpha_\d+)")


def is_package_name(name: str) -> bool:
    """Whether ``name`` has the form of a scalar symbol of the package (``Qt1_11``, ``x_12``, ``c_2``, ...).

    Examples
    --------
    >>> is_package_name("c_1"), is_package_name("Kt2h1_12"), is_package_name("c1"), is_package_name("y")
    (True, True, False, False)
    """
    if not isinstance(name, str):
        return False
    if _PACKAGE_NAME.fullmatch(name) is not None:
        return True
    from ..model.symbols import BLOCK_LETTERS  # a component's blocks: Wint1_11, bVt2_21, ...

    letters = "|".join(sorted(map(re.escape, BLOCK_LETTERS), key=len, reverse=True))
    return re.fullmatch(rf"(?:{letters})t?\d+(?:h\d+)?_\d+", name) is not None


def refuse_unknown_symbols(claimed: sp.Matrix, names: dict, explicit: set) -> None:
    """Refuse a claim against a package result that has a symbol neither side nor the package knows.

    Such a symbol is almost always a typo (``c1`` for ``c_1``): the claim
    would be refuted (a silent False) instead of read.  Only when the
    computed side is a package result (it has package symbols); a name given
    in ``variables=`` is taken as meant.
    """
    if not any(is_package_name(name) for name in names):
        return
    unknown = sorted({s.name for s in claimed.free_symbols if isinstance(s, sp.Symbol)}
                     - set(names) - explicit, key=str)
    unknown = [name for name in unknown if not is_package_name(name)]
    if not unknown:
        return
    import difflib

    from ..parsing import shorten

    known = sorted(names)
    parts = []
    for name in unknown[:5]:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        if not close:  # "c1" -> "c_1" even when c_1 is not on the computed side (F_2 of a k = 2 normalizer)
            underscored = re.sub(r"^([A-Za-z]+t?)(\d+)$", r"\1_\2", name)
            close = [underscored] if is_package_name(underscored) else []
        parts.append(f"{shorten(name, 40)!s}" + (f" (did you mean {close[0]}?)" if close else ""))
    shown = ", ".join(known[:12]) + (f", ... ({len(known)} names)" if len(known) > 12 else "")
    raise SymattnError(
        f"the claim has the symbol(s) {', '.join(parts)}, which the computed side does not have and the package "
        f"does not use; the computed side's symbols are {shown}. A typo would make the claim silently false: "
        f"write the package's names (symattn.symbols('c_1', arch) gives its symbols), or give variables=[...] "
        f"to include a symbol of your own on purpose")
