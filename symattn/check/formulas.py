"""Formula claims, ``F_n = <matrix formula>`` and ``leading(i) = <matrix formula>``, against the expansion.

:func:`check_coefficient_claim` writes the claimed formula out entry by entry
and compares it with the coefficient ``F_n`` of :func:`symattn.expand.expand`
by :func:`~symattn.check.check_expression`; a layer's leading coefficient is
checked by :func:`symattn.expand.check_formula_claim`
(:func:`check_leading_claim` adds the LaTeX of both sides).

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.check.formulas import check_coefficient_claim
>>> check_coefficient_claim(Architecture.uniform(layers=1, width=1, tokens=2), "F_1 = 0").verdict
True
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ..errors import SymattnError
from ..model import Architecture, require_architecture
from ..verdicts import ClaimCheck
from .expressions import check_expression
from .reading import parse_coefficient_claim
from .sides import count_terms, short_text

__all__ = ["check_coefficient_claim"]


def _formula_names(arch: Architecture, n: int):
    """A LeadingCoefficient of the last layer whose names cover ``F_n``: every ``C_i``, ``What_i``, and ``c_1..c_{n+1}``.

    The formula language is :func:`symattn.expand.matrix_formula`'s; its
    ``c_j`` are the normalizer's Taylor coefficients (numbers for a named
    normalizer, the package's symbols for a generic one), all of them when
    every layer has the same normalizer (else each layer's leading ``c_k``).
    """
    from ..expand import leading_coefficient, matrix_symbols

    lc = leading_coefficient(arch, arch.layers)
    # every named matrix, even those the last layer's own form does not use (J, H, C_i of one layer)
    named = matrix_symbols(arch)
    wanted = ["P", "X", "H", "J"] + [f"{kind}_{i}" for i in range(1, arch.layers + 1) for kind in ("C", "What")]
    lc = replace(lc, definitions=tuple(lc.definitions) + tuple((name, named[name]) for name in wanted
                                                               if name in named))
    first = arch.normalizers[0]
    if all(other == first for other in arch.normalizers) and hasattr(first, "taylor"):
        try:
            taylor = first.taylor(n + 1)
        except SymattnError:  # (no Taylor data: the layer's own c_k only)
            return lc
        lc = replace(lc, ks=tuple(range(1, n + 2)), coefficients=tuple(taylor[1:n + 2]))
    return lc


def read_coefficient_claim(arch: Architecture, claim: str):
    """``(n, formula, names)``: the claim read by the package's formula parser (nothing executed)."""
    from ..parsing import matrix_formula

    n, text = parse_coefficient_claim(claim)
    names = _formula_names(arch, n)
    if text == "0":  # the zero matrix: the one scalar the language's matrix claims accept
        return n, sp.ZeroMatrix(*names.matrix_form.shape), names
    return n, matrix_formula(text, names, target=f"F_{n}"), names


def expansion_through(arch: Architecture, n: int, progress: bool = False):
    """:func:`symattn.expand.expand` keeping ``F_0..F_n`` (at least ``F_1``)."""
    from ..expand import expand

    return expand(arch, truncation=max(n, 1) + 1, progress=progress)


def _formula_latex(expr) -> str:
    from ..expand import latex as package_latex

    return package_latex(expr)


def _computed_latex(matrix, limit: int = 160) -> str:
    """The LaTeX of a computed matrix: written out when short enough to fit a line, else described."""
    text = _formula_latex(matrix) if count_terms(matrix) <= 12 else ""
    if text and len(text) <= limit:
        return text
    # (math mode throughout: no $ inside \text, which MathJax would show as a dollar sign)
    return (rf"\text{{a }}{matrix.rows} \times {matrix.cols}\text{{ matrix with {count_terms(matrix)} terms (JSON and "
            r"text outputs give it)}")


def check_coefficient_claim(arch: Architecture, claim: str, *, seed: int = 0, expansion=None) -> ClaimCheck:
    """Check ``"F_n = <matrix formula>"`` against the coefficient ``F_n`` of :func:`~symattn.expand.expand`.

    The formula is read by :func:`symattn.expand.matrix_formula` (names ``P``,
    ``X``, ``H``, ``J``, ``C_i``, ``What_i``, ``c_j``, ``alpha_i``, ``t``;
    ``F_n = 0`` for the zero matrix), written out entry by entry in the
    symbols of the expansion (``P = Vt_l ... Vt_1``, ``C_i = X^T What_i X``)
    and compared with ``F_n`` of the expansion along simultaneous query/key
    collapse by :func:`check_expression`, exactly as
    ``check_expression(claimed, expand(arch, ...)[n])`` does.

    Parameters
    ----------
    arch : Architecture
        Its normalizers are used (give a ``Normalizer.generic(k)`` for symbolic ``c_j``).
    claim : str
    seed : int
    expansion : Expansion, optional
        A precomputed expansion of ``arch`` through ``F_n``.

    Returns
    -------
    ClaimCheck
        ``quantity`` ``"coefficient"``, ``layer`` None, ``claimed`` the formula
        as read, ``computed`` ``F_n`` (described when long), a counterexample
        for a false claim.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
    >>> check_coefficient_claim(arch, "F_0 = P*X*J/t").verdict, check_coefficient_claim(arch, "F_1 = 0").verdict
    (True, True)
    >>> wrong = check_coefficient_claim(arch, "F_2 = c_1/t * P*X*C_1")
    >>> wrong.verdict, wrong.counterexample.entry, [name for name, _ in wrong.counterexample.point]
    (False, (0, 0), ['Kt1_11', 'Qt1_11', 'Vt1_11', 'x_11', 'x_12'])
    """
    arch = require_architecture(arch)
    n, formula, names = read_coefficient_claim(arch, claim)
    if expansion is None or len(expansion) <= n:
        expansion = expansion_through(arch, n)
    computed = expansion[n]
    claimed = sp.zeros(*computed.shape) if isinstance(formula, sp.ZeroMatrix) else \
        replace(names, matrix_form=formula).evaluate(form="matrix")
    result = check_expression(claimed, computed, seed=seed)
    method = (f"the claimed matrix formula written out entry by entry (P = Vt_l ... Vt_1, C_i = X^T What_i X, "
              f"H = I - J/t) against F_{n} of symattn.expand.expand along {expansion.curve.describe(arch.layers)} "
              f"(check_expression): "
              + result.method)
    # a table cell: the matrix when it fits a line, else its size (`symattn expand` prints it whole)
    computed_text = short_text(computed, limit=120)
    if "..." in computed_text:
        computed_text = f"({computed.rows} x {computed.cols} matrix with {count_terms(computed)} terms)"
    claim_latex = f"F_{{{n}}} = " + ("0" if isinstance(formula, sp.ZeroMatrix) else _formula_latex(formula))
    return ClaimCheck(claim, "coefficient", None, "0" if isinstance(formula, sp.ZeroMatrix) else str(formula),
                      computed_text, result.verdict, method, result.counterexample, claim_latex,
                      _computed_latex(computed))


def check_leading_claim(arch: Architecture, claim: str, seed: int) -> ClaimCheck:
    """:func:`symattn.expand.check_formula_claim`, with LaTeX and a counterexample on the symbols that matter."""
    from ..expand import check_formula_claim, parse_formula_claim

    result = check_formula_claim(arch, claim, seed=seed)
    layer, lc, formula = parse_formula_claim(arch, claim)
    ce = result.counterexample
    if ce is not None and ce.entry is not None:
        try:  # the symbols of the differing entry, on both sides written out (fast: python-flint)
            r, c = ce.entry
            claimed = replace(lc, matrix_form=formula).evaluate(form="matrix")[r, c]
            computed = lc.evaluate(form="matrix")[r, c]
            matter = {s.name for s in claimed.free_symbols | computed.free_symbols}
            ce = replace(ce, point=tuple((k, v) for k, v in ce.point if k in matter))
        except (SymattnError, ValueError, IndexError):  # keep the whole point
            pass
    return replace(result, counterexample=ce,
                   claim_latex=rf"\text{{leading coefficient of layer {layer}}} = " + _formula_latex(formula),
                   computed_latex=_formula_latex(lc.matrix_form))
