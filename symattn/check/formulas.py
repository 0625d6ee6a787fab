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

from ..curves import collapse
from ..errors import ResourceLimitError, ShapeError, SymattnError, TruncationError
from ..model import Architecture, require_architecture
from ..verdicts import ClaimCheck
from .expressions import check_expression
from .reading import parse_coefficient_claim
from .sides import count_terms, short_text

__all__ = ["check_coefficient_claim"]


def read_coefficient_claim(arch: Architecture, claim: str):
    """``(n, formula, names)``: the claim read by the package's formula parser (nothing executed).

    ``names`` is the :class:`~symattn.expand.FormulaNames` table of ``arch``
    through ``F_n``: the names the package prints (``P``, ``Vt1`` also read
    as ``V_1``, ``What_i``, ``C_i``, ``H``, ``J``, ``S_0``, the base point of
    every block, ``c_j``), for every network :func:`~symattn.expand.expand`
    handles.

    Examples
    --------
    >>> n, formula, names = read_coefficient_claim(Architecture.uniform(layers=1, width=1, tokens=2), "F_0 = V*X*J/t")
    >>> n, formula
    (0, (1/2)*Vt1*X*J)
    """
    from ..expand.names import formula_names
    from ..parsing import matrix_formula

    n, text = parse_coefficient_claim(claim)
    names = formula_names(arch, n)
    if text == "0":  # the zero matrix: the one scalar the language's matrix claims accept
        return n, sp.ZeroMatrix(*names.shape), names
    return n, matrix_formula(text, names, target=f"F_{n}"), names


def expansion_through(arch: Architecture, n: int, progress: bool = False):
    """:func:`symattn.expand.expand` keeping ``F_0..F_n`` (at least ``F_1``)."""
    from ..expand import expand

    return expand(arch, truncation=max(n, 1) + 1, progress=progress)


def _formula_latex(expr) -> str:
    r"""A claimed formula in LaTeX with the package's names: ``Vt1`` as ``\tilde{V}_{1}``, ``Wint1`` as
    ``\tilde{W}^{\mathrm{in}}_{1}``, ``Vt1h2`` as ``\tilde{V}_{1,2}``, ``ones(1, t)`` as ``\mathbf{1}^{\top}``.

    Examples
    --------
    >>> V, X = sp.MatrixSymbol("Vt1h2", 1, 1), sp.MatrixSymbol("X", 1, 2)
    >>> _formula_latex(V * X + sp.MatrixSymbol("Kt1", 1, 1) * sp.OneMatrix(1, 2))
    '\\tilde{K}_{1} \\mathbf{1}^{\\top} + \\tilde{V}_{1,2} X'
    """
    from ..expand.printing import matrix_latex
    from ..model.symbols import entry_latex

    if not isinstance(expr, sp.MatrixExpr):
        from ..expand import latex as package_latex

        return package_latex(expr)
    rename = {}
    for m in expr.atoms(sp.MatrixSymbol):
        entry = entry_latex(f"{m.name}_11") if m.name not in ("X", "P", "H", "J") else None
        if entry is not None and entry.startswith("(") and entry.endswith(")_{11}"):  # (\tilde{V}_{1})_{11}
            rename[m] = sp.MatrixSymbol(entry[1:-len(")_{11}")], *m.shape)
    for m in expr.atoms(sp.OneMatrix):
        rows, cols = m.shape
        text = r"\mathbf{1}^{\top}" if rows == 1 else r"\mathbf{1}" if cols == 1 else rf"\mathbf{{1}}_{{{rows} \times {cols}}}"
        rename[m] = sp.MatrixSymbol(text, rows, cols)
    return matrix_latex(expr.xreplace(rename) if rename else expr)


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

    The formula is read by :func:`symattn.expand.matrix_formula` in the
    names of :func:`~symattn.expand.formula_names` (``P``, ``X``, ``H``,
    ``J``, ``S_0``, ``C_i``, ``What_i``, the base point of every block
    ``Qt1, Vt1, bVt1, Wint1, Vt1h2, ...`` with ``V_1`` or ``V`` for
    ``Vt1``, ``c_j``, ``alpha_i``, ``t``, ``ones(m, n)``; ``F_n = 0`` for the
    zero matrix), written out entry by entry in the symbols of the
    expansion and compared with ``F_n`` of the expansion along simultaneous
    query/key collapse by :func:`check_expression`, exactly as
    ``check_expression(claimed, expand(arch, ...)[n])`` does.  Every network
    :func:`~symattn.expand.expand` handles is accepted: heads, causal masks,
    residual streams, biases, feed-forward blocks.

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

    A residual stream, in the names the package prints:

    >>> residual = Architecture.uniform(layers=1, width=1, tokens=2, residual=True)
    >>> check_coefficient_claim(residual, "F_0 = X + V_1*X*J/t").verdict
    True
    """
    arch = require_architecture(arch)
    n, formula, names = read_coefficient_claim(arch, claim)
    if expansion is None or (expansion is not POINTWISE and len(expansion) <= n):
        try:
            expansion = expansion_through(arch, n)
        except (ShapeError, TruncationError, ResourceLimitError):  # too large to hold symbolically: at points
            expansion = POINTWISE
    claimed = sp.zeros(*names.shape) if isinstance(formula, sp.ZeroMatrix) else \
        replace(names, matrix_form=formula).evaluate(form="matrix")
    used = sorted({m.name for m in formula.atoms(sp.MatrixSymbol)}) if not isinstance(formula, sp.ZeroMatrix) else []
    definitions = "; ".join(names.row(name).meaning if names.row(name).meaning.startswith(name + " ")
                            else f"{name} = {names.row(name).meaning}" for name in used if name != "X")
    written = "the claimed matrix formula written out entry by entry" + (f" ({definitions})" if definitions else "")
    curve = collapse().describe(arch.layers)
    claim_latex = f"F_{{{n}}} = " + ("0" if isinstance(formula, sp.ZeroMatrix) else _formula_latex(formula))
    claimed_text = "0" if isinstance(formula, sp.ZeroMatrix) else str(formula)
    if expansion is POINTWISE:
        result, computed_text = _check_at_points(arch, n, claimed, seed)
        method = (f"{written} against F_{n} of symattn.expand.expand along {curve}, computed exactly at each "
                  f"random rational point (the network is too large to expand symbolically; check_expression): "
                  + result.method)
        return ClaimCheck(claim, "coefficient", None, claimed_text, computed_text, result.verdict, method,
                          result.counterexample, claim_latex, rf"\text{{{computed_text}}}")
    computed = expansion[n]
    result = check_expression(claimed, computed, seed=seed)
    method = f"{written} against F_{n} of symattn.expand.expand along {curve} (check_expression): " + result.method
    # a table cell: the matrix when it fits a line, else its size (`symattn expand` prints it whole)
    computed_text = short_text(computed, limit=120)
    if "..." in computed_text:
        computed_text = f"({computed.rows} x {computed.cols} matrix with {count_terms(computed)} terms)"
    return ClaimCheck(claim, "coefficient", None, claimed_text, computed_text, result.verdict, method,
                      result.counterexample, claim_latex, _computed_latex(computed))


#: ``expansion=POINTWISE``: compute ``F_n`` at each random point instead of symbolically (a large network).
POINTWISE = "pointwise"


def _check_at_points(arch: Architecture, n: int, claimed: sp.Matrix, seed: int):
    """``(CheckResult, computed text)``: ``claimed`` against ``F_n`` computed by :func:`expand` at random rational points.

    Each point is one exact forward pass over truncated series with rational
    coefficients (python-flint); the Schwartz-Zippel degree is the larger of
    the expansion's bound (:func:`symattn.jacobian.degree_bound`) and the
    claim's own degree.
    """
    from ..expand import expand, package_symbols
    from ..jacobian import degree_bound

    truncation = max(n + 1, 2)
    variables = sorted(package_symbols(arch, truncation).values(), key=lambda s: s.name)

    def coefficient(point):
        values = {s.name: v for s, v in point.items()}
        return expand(arch, truncation=truncation, point=values, max_params=10**6, max_truncation=10**6)[n]

    degree = degree_bound(arch, collapse(), truncation, variable_constants=False)
    try:
        for entry in claimed:
            if entry.free_symbols:
                degree = max(degree, sp.Poly(entry, *sorted(entry.free_symbols, key=lambda s: s.name)).total_degree())
    except sp.PolynomialError:
        degree = None  # (not a polynomial: found along a random line)
    result = check_expression(claimed, coefficient, variables=variables, seed=seed, degree=degree)
    if result.verdict is False:  # a readable counterexample: the first small integer point that also shows it
        import random

        from ..verdicts import Counterexample
        from .polynomials import small_points

        rng = random.Random(seed)
        for tries, coordinates in enumerate(small_points(rng, len(variables), 10)):
            if tries >= 40:
                break
            point = {s: sp.Integer(v) for s, v in zip(variables, coordinates)}
            try:
                left, right = claimed.xreplace(point), sp.Matrix(coefficient(point))
            except (ZeroDivisionError, SymattnError):
                continue
            differing = [(r, c) for r in range(left.rows) for c in range(left.cols)
                         if sp.simplify(left[r, c] - right[r, c]) != 0]
            if differing:
                r, c = differing[0]
                result = replace(result, counterexample=Counterexample(
                    tuple((s.name, str(v)) for s, v in point.items()), (r, c), str(left[r, c]), str(right[r, c])))
                break
    rows, cols = arch.widths[-1], arch.tokens
    return result, f"({rows} x {cols} matrix, computed at {result.points or 1} random point(s))"


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
