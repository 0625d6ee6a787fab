"""Checking hand calculations: claimed formulas and claimed numbers against the engine.

* :func:`check_expression` compares a claimed expression (or matrix) with a
  computed one: a proof when the difference simplifies to zero, otherwise
  exact evaluation at random rational points (Schwartz-Zippel), and a
  concrete counterexample when the claim is false.
* :func:`check_claim` / :func:`check_claims` compare claimed numbers for an
  architecture (``"contact_order(2) = 5"``, ``"kernel = 6"``, ...) with the
  values the engine computes (:func:`~symattn.spectrum.decay_spectrum`, the
  sign-flip action, identification orders), never with the formula being
  checked.

Examples
--------
>>> import sympy as sp
>>> from symattn.check import check_expression
>>> a, b = sp.symbols("a b")
>>> check_expression((a + b)**2, a**2 + 2*a*b + b**2).verdict
True
>>> result = check_expression((a + b)**2, a**2 + b**2)
>>> result.verdict, result.counterexample is not None
(False, True)
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

import numpy as np
import sympy as sp

from ._format import FormattedResult, latex_escape, latex_method, latex_prose, markdown_table
from .errors import ShapeError, SymattnError
from .languages import ACCEPTED_CLAIMS, FORMULA_CLAIMS
from .model import Architecture, require_architecture, require_seed
from .parsing import parse_expression, to_sympy, to_sympy_matrix
from .verdicts import (
    VERDICT_WORDS,
    CheckResult,
    ClaimCheck,
    Counterexample,
    counterexample_latex,
    counterexample_text,
    markdown_cell,
)

__all__ = [
    "check_expression",
    "ClaimsReport",
    "check_claim",
    "check_claims",
    "parse_claim",
    "is_coefficient_claim",
    "parse_coefficient_claim",
    "check_coefficient_claim",
    "is_package_name",
    "ACCEPTED_CLAIMS",
    "FORMULA_CLAIMS",
]


# -- expressions -------------------------------------------------------------------------------
def _terms(value) -> int:
    entries = list(value) if isinstance(value, sp.MatrixBase) else [value]
    return sum(len(e.args) if isinstance(e, sp.Basic) and e.is_Add else 1 for e in entries)


def _short(value, limit: int = 400) -> str:
    """The text of a value, cut at ``limit`` characters; a large one is described, not printed (sympy's
    printer takes minutes on the 50 000 terms of an expansion's entries)."""
    terms = _terms(value)
    if terms > 4 * limit:
        shape = f"{value.rows} x {value.cols} matrix" if isinstance(value, sp.MatrixBase) else "expression"
        return f"({shape} with {terms} terms)"
    text = str(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _to_matrix(value, what: str, names: dict) -> tuple[sp.Matrix, bool]:
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


def _rename(matrix: sp.Matrix, names: dict, renamed: list | None = None) -> sp.Matrix:
    """Identify symbols by name (a parsed ``x`` is the computed real ``x``).

    ``renamed`` collects the names of the claim's symbols that were replaced
    (same name, other assumptions): the method text says so.
    """
    mapping = {s: names[s.name] for s in matrix.free_symbols
               if isinstance(s, sp.Symbol) and s.name in names and names[s.name] != s}
    if renamed is not None:
        renamed.extend(sorted(s.name for s in mapping))
    return matrix.xreplace(mapping) if mapping else matrix


#: The names of the package's scalar symbols: native and base-point parameters (``Q1_11``, ``Kt2h1_12``),
#: the input ``x_11``, a generic normalizer's ``c_3`` and the mean scores ``alpha_2``.
_PACKAGE_NAME = re.compile(r"(?:[QKV]t?\d+(?:h\d+)?_\d+|x_\d+|c_\d+|alpha_\d+)")


def is_package_name(name: str) -> bool:
    """Whether ``name`` has the form of a scalar symbol of the package (``Qt1_11``, ``x_12``, ``c_2``, ...).

    Examples
    --------
    >>> is_package_name("c_1"), is_package_name("Kt2h1_12"), is_package_name("c1"), is_package_name("y")
    (True, True, False, False)
    """
    return isinstance(name, str) and _PACKAGE_NAME.fullmatch(name) is not None


def _refuse_unknown_symbols(claimed: sp.Matrix, names: dict, explicit: set) -> None:
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

    from .parsing import shorten

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


def _degree_pair(expr, variables: set):
    """Bounds ``(deg numerator, deg denominator)`` of a rational function; None if not rational."""
    if expr.is_Number or not (expr.free_symbols & variables):
        return (0, 0) if expr.is_finite is not False else None
    if expr.is_Symbol:
        return (1, 0) if expr in variables else (0, 0)
    if expr.is_Add:
        parts = [_degree_pair(a, variables) for a in expr.args]
        if any(p is None for p in parts):
            return None
        denominators = [d for _, d in parts]
        total = sum(denominators)
        return (max(n + total - d for n, d in parts), total)
    if expr.is_Mul:
        parts = [_degree_pair(a, variables) for a in expr.args]
        if any(p is None for p in parts):
            return None
        return (sum(n for n, _ in parts), sum(d for _, d in parts))
    if expr.is_Pow and expr.exp.is_Integer:
        base = _degree_pair(expr.base, variables)
        if base is None:
            return None
        e = int(expr.exp)
        return (e * base[0], e * base[1]) if e >= 0 else (-e * base[1], -e * base[0])
    return None


def _differ(a, b) -> bool:
    """Whether two exact numbers differ (exact; 60 digits for non-rational numbers)."""
    difference = to_sympy(a - b)
    if difference.is_Rational:
        return difference != 0
    difference = sp.simplify(difference)
    if difference == 0:
        return False
    value = sp.N(difference, 60)
    return not (value.is_Number and abs(value) < sp.Float("1e-45"))


def _expands_to_zero(expr) -> bool | None:
    """Whether ``expr`` is 0 as a polynomial (sympy Poly, fast; a decision), else by ``sympy.expand``.

    True: zero.  False: a nonzero polynomial (so not identically zero).  None:
    not a polynomial and ``expand`` does not give 0 (cancel / simplify may still).
    """
    expr = to_sympy(expr)
    if expr == 0:
        return True
    gens = sorted(expr.free_symbols, key=lambda s: s.name)
    if gens:
        try:
            poly = sp.Poly(expr, *gens)
            if poly.domain.is_QQ or poly.domain.is_ZZ:
                return poly.is_zero
        except (sp.PolynomialError, sp.GeneratorsNeeded, sp.CoercionFailed):
            pass
    return True if sp.expand(expr) == 0 else None


# -- the exact engine: both sides as python-flint polynomials over Q --------------------------------------
class _NotPolynomial(Exception):
    pass


class _Ring:
    """``Q[variables]`` with python-flint polynomials; symbols are matched by name."""

    def __init__(self, variables):
        import flint

        self.flint = flint
        self.variables = list(variables)
        self.index = {s.name: i for i, s in enumerate(self.variables)}
        if len(self.index) != len(self.variables):
            raise _NotPolynomial("two variables share a name")
        self.ctx = flint.fmpq_mpoly_ctx.get(tuple(self.index) or ("_",), "degrevlex")
        self._factors, self._numbers = {}, {}

    def polynomial(self, expr):
        """``expr`` as a polynomial over Q in the variables (fast for expanded sums; else ``sympy.Poly``)."""
        flint = self.flint
        expr = sp.sympify(expr)
        if expr.is_Rational:
            return self.ctx.constant(flint.fmpq(int(expr.p), int(expr.q)))
        n = len(self.variables)
        terms: dict = {}
        factors, numbers = self._factors, self._numbers  # (index, exponent) and fmpq of what was met before
        try:
            for term in expr.args if expr.is_Add else (expr,):
                coefficient, rest = term.as_coeff_Mul()
                number = numbers.get(coefficient)
                if number is None:
                    if not coefficient.is_Rational:
                        raise _NotPolynomial(term)
                    number = numbers[coefficient] = flint.fmpq(int(coefficient.p), int(coefficient.q))
                exponents = [0] * n
                for factor in (() if rest is sp.S.One else rest.args if rest.is_Mul else (rest,)):
                    known = factors.get(factor)
                    if known is None:
                        if factor.is_Symbol:
                            base, e = factor, 1
                        elif factor.is_Pow and factor.base.is_Symbol and factor.exp.is_Integer \
                                and int(factor.exp) > 0:
                            base, e = factor.base, int(factor.exp)
                        else:
                            raise _NotPolynomial(factor)
                        if base.name not in self.index:
                            raise _NotPolynomial(base)
                        known = factors[factor] = (self.index[base.name], e)
                    exponents[known[0]] += known[1]
                key = tuple(exponents)
                terms[key] = terms[key] + number if key in terms else number
        except _NotPolynomial:  # not an expanded sum (products of sums, ...): sympy's Poly
            if expr.free_symbols and not {s.name for s in expr.free_symbols
                                          if isinstance(s, sp.Symbol)} <= set(self.index):
                raise
            gens = [sp.Symbol(s.name) for s in self.variables]
            plain = expr.xreplace({s: sp.Symbol(s.name) for s in expr.free_symbols if isinstance(s, sp.Symbol)})
            try:
                poly = sp.Poly(plain, *gens) if gens else None
            except (sp.PolynomialError, sp.GeneratorsNeeded):
                raise _NotPolynomial(expr) from None
            if poly is None or not (poly.domain.is_QQ or poly.domain.is_ZZ):
                raise _NotPolynomial(expr) from None
            terms = {m: flint.fmpq(int(sp.Rational(c).p), int(sp.Rational(c).q)) for m, c in poly.terms()}
        return self.ctx.from_dict({m: c for m, c in terms.items() if c != 0}) if terms else self.ctx.constant(0)

    def matrix(self, matrix) -> np.ndarray:
        out = np.empty(matrix.shape, dtype=object)
        for index in np.ndindex(*matrix.shape):
            out[index] = self.polynomial(matrix[index])
        return out

    def at(self, polynomial, values):
        return polynomial(*values) if self.variables else polynomial(self.flint.fmpq(0))

    def number(self, value) -> sp.Rational:
        value = self.flint.fmpq(value)
        return sp.Rational(int(value.p), int(value.q))


def _small_points(rng: random.Random, count: int, radius: int):
    """Random integer points, the smallest coordinates first: radius 1, 2, 3, 5, 10, 100, ..., ``radius``."""
    r = 1
    while True:
        r = min(r, radius)
        for _ in range(8):
            yield [rng.randint(-r, r) for _ in range(count)]
        if r == radius:
            return
        r = {1: 2, 2: 3, 3: 5, 5: 10}.get(r, r * 10)


def _first_difference(ring: _Ring, claimed: np.ndarray, computed: np.ndarray, rng: random.Random, radius: int):
    """A small integer point where two different polynomial matrices differ: ``(point, entry)``."""
    differing = [(index, claimed[index] - computed[index]) for index in np.ndindex(*claimed.shape)
                 if claimed[index] != computed[index]]
    flint = ring.flint
    for point in _small_points(rng, len(ring.variables), radius):
        values = [flint.fmpq(v) for v in point]
        for index, difference in differing:
            if ring.at(difference, values) != 0:
                return point, index
    return None, differing[0][0]


def _compare_polynomials(claimed_m, computed_m, variables, rng, radius: int, computed_text: str):
    """The verdict when both sides are polynomials over Q in the variables (python-flint); else None."""
    try:
        ring = _Ring(variables)
        computed_p = ring.matrix(computed_m)
        if isinstance(claimed_m, sp.MatrixBase):
            claimed_p = ring.matrix(claimed_m)
            claimed_text = _short(claimed_m if claimed_m.shape != (1, 1) else claimed_m[0, 0])
        else:  # an object that evaluates itself in a ring (LeadingCoefficient.ring_matrix)
            claimed_p = claimed_m.ring_matrix(ring.polynomial)
            claimed_text = str(getattr(claimed_m, "matrix_form", None) or claimed_m)
            if claimed_p.shape != computed_p.shape:
                raise ShapeError(f"the claimed value has shape {claimed_p.shape}, the computed one "
                                 f"{computed_p.shape}")
    except (_NotPolynomial, ImportError, SymattnError) as err:
        if isinstance(err, ShapeError):
            raise
        return None
    where = f"in Q[{len(ring.variables)} variables] (python-flint polynomials)"
    if all(a == b for a, b in zip(claimed_p.flat, computed_p.flat)):
        return CheckResult(True, f"exact: claimed and computed are equal polynomials {where}", 0.0, None,
                           claimed_text, computed_text, 0, None, None)
    point, entry = _first_difference(ring, claimed_p, computed_p, rng, radius)
    if point is None:  # (practically never: a nonzero polynomial is nonzero at most small points)
        return CheckResult(False, f"exact: claimed - computed is a nonzero polynomial {where} at entry {entry}; "
                                  "no small witness found", 0.0, None, claimed_text, computed_text, 0, None, None)
    values = [ring.flint.fmpq(v) for v in point]
    shown = entry if claimed_p.shape != (1, 1) else None
    # only the variables of the differing entry: the others (c_2..c_7 of a generic normalizer) do not matter
    used = [max(a, b) > 0 for a, b in zip(claimed_p[entry].degrees(), computed_p[entry].degrees())] \
        if ring.variables else []
    counterexample = Counterexample(tuple((s.name, str(v)) for s, v, u in zip(ring.variables, point, used) if u),
                                    shown,
                                    str(ring.number(ring.at(claimed_p[entry], values))),
                                    str(ring.number(ring.at(computed_p[entry], values))))
    return CheckResult(False, f"exact: claimed - computed is a nonzero polynomial {where}; the counterexample "
                              "is the first small integer point where they differ", 0.0, counterexample,
                       claimed_text, computed_text, 0, None, None)


def _values(value) -> list:
    """The entries of a computed value (number, Matrix, nested lists, array) as exact sympy numbers."""
    if isinstance(value, (sp.MatrixBase, list, tuple, np.ndarray)) and not isinstance(value, sp.Basic) \
            or isinstance(value, sp.MatrixBase):
        return list(to_sympy_matrix(value, what="computed matrix"))
    return [to_sympy(value, what="computed value")]


def _line_degree(evaluate, variables, rng: random.Random, radius: int, max_degree: int):
    """The degree of a callable's values along a random line, if it is a polynomial of degree <= ``max_degree``.

    ``g(s) = f(a + s v)`` for a random point ``a`` and direction ``v``: the
    least ``d`` whose ``(d+1)``-th and ``(d+2)``-th finite differences at 0
    vanish in every entry.  For a polynomial ``f`` of total degree ``D``,
    ``g`` has degree ``D`` unless ``v`` is a root of the leading form of
    ``f`` (probability ``<= D / (2 radius + 1)``), and a degree ``e > d``
    makes the ``(d+1)``-th difference a nonzero polynomial of degree ``e`` in
    ``(a, v)`` (Stirling numbers are positive), zero with probability
    ``<= e / (2 radius + 1)``.  Returns ``(d, evaluations)``, ``d`` None when
    no ``d <= max_degree`` fits (not a polynomial of low degree).
    """
    a = [rng.randint(-radius, radius) for _ in variables]
    v = [rng.randint(-radius, radius) for _ in variables]
    samples = []
    for s in range(max_degree + 3):
        samples.append(_values(evaluate({x: sp.Integer(ai + s * vi) for x, ai, vi in zip(variables, a, v)})))
        d = len(samples) - 3
        if d < 0:
            continue
        vanish = True
        for order in (d + 1, d + 2):
            for e in range(len(samples[0])):
                total = sum((-1) ** (order - j) * sp.binomial(order, j) * samples[j][e] for j in range(order + 1))
                if total != 0:
                    vanish = False
                    break
            if not vanish:
                break
        if vanish:
            return d, len(samples)
    return None, len(samples)


def _invalid(value) -> bool:
    return any(v.has(sp.zoo, sp.nan, sp.oo, -sp.oo) for v in value)


def check_expression(claimed, computed, *, variables=None, points: int = 3, seed: int = 0,
                     radius: int = 2**20, simplify: bool = True, degree: int | None = None,
                     max_ops: int = 5000, max_degree: int = 64) -> CheckResult:
    """Whether a claimed expression equals a computed one.

    Polynomials over Q (the usual case: expansions, leading coefficients) are
    compared exactly as python-flint polynomials, symbols matched by name: a
    proof when they are equal, else a counterexample at the first small
    integer point (coordinates ``0, +-1, +-2, ...`` tried first) where they
    differ.  Other expressions go through sympy (``expand``, ``cancel``,
    ``simplify``, then random points).

    Parameters
    ----------
    claimed : sympy expression, Matrix, explicit MatrixExpr, str, or an object with ``explicit()``
        A string is parsed with the symbols of ``computed`` (matched by name);
        a :class:`~symattn.expand.LeadingCoefficient` is evaluated in the same
        python-flint ring (its ``ring_matrix``), or written entry by entry when
        the sides are not polynomials over Q.
    computed : sympy expression, Matrix, or callable
        A callable takes ``{Symbol: Rational}`` and returns the value there
        (for computations too large to hold symbolically); give ``variables``
        with it, and ``degree`` if you know a bound (else it is found along a
        random line, for a polynomial of degree at most ``max_degree``).
    variables : iterable of Symbol, optional
        The variables to sample; default all free symbols of both sides.
    points : int
        Random points evaluated when no symbolic proof is found.
    radius : int
        Coordinates are drawn from the integers in ``[-radius, radius]``.
    simplify : bool
        Try ``sympy.cancel`` / ``sympy.simplify`` after ``expand``.
    degree : int, optional
        A bound on the total degree of the difference (else computed).
    max_ops : int
        Skip ``simplify`` on larger differences.
    max_degree : int
        For a callable ``computed`` without ``degree``: the highest degree
        looked for along a random line (``max_degree + 3`` calls at most).

    Returns
    -------
    CheckResult
        True with ``bound = 0.0`` when the polynomials are equal, or
        ``expand`` / ``cancel`` / ``simplify`` of
        the difference gives 0 (a proof); True with the Schwartz-Zippel bound
        ``(D / (2 radius + 1))^points`` when every random point agrees (``D``
        the degree of the difference's numerator, corrected for points where a
        denominator vanishes); False with a counterexample (the point and both
        exact values) when a point disagrees; None when no proof or bound holds
        (e.g. transcendental expressions that agree numerically).

    Examples
    --------
    >>> x, y = sp.symbols("x y")
    >>> r = check_expression("(x^2 - y^2)/(x - y)", x + y)
    >>> r.verdict, r.bound
    (True, 0.0)
    >>> r = check_expression(x**3, x**3 + x*(x - 1)*(x - 2)*(x - 3), simplify=False)
    >>> r.verdict
    False
    >>> point = r.counterexample.values()
    >>> point, (x**3).subs(point) != (x**3 + x*(x - 1)*(x - 2)*(x - 3)).subs(point)
    ({'x': -1}, True)

    A callable computed side, of unknown degree (here ``(x + y)^3``, evaluated
    at each point):

    >>> r = check_expression(x**3 + 3*x**2*y + 3*x*y**2 + y**3, lambda p: (p[x] + p[y])**3, variables=[x, y])
    >>> r.verdict, r.degree, r.bound < 1e-4
    (True, 3, True)

    Both sides are measured before any work (:data:`symattn.parsing.API_LIMITS`):
    nested functions, towers of powers, ``Max`` of many arguments are refused.

    >>> check_expression(x**x**x, x)
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the claimed expression 'x**x' is a power with a non-constant exponent, not accepted here: its exact values at integer points have astronomically many digits
    """
    renamed: list = []
    try:
        result = _check_expression(claimed, computed, variables=variables, points=points, seed=seed,
                                   radius=radius, simplify=simplify, degree=degree, max_ops=max_ops,
                                   max_degree=max_degree, renamed=renamed)
        if renamed:
            shown = ", ".join(renamed[:8]) + (f", ... ({len(renamed)} symbols)" if len(renamed) > 8 else "")
            result = replace(result, method=f"the claim's symbols {shown} (other assumptions than the package's, "
                                            f"e.g. a plain sympy.Symbol) identified by name with the computed "
                                            f"side's; " + result.method)
        return result
    except SymattnError:
        raise
    except (OverflowError, RecursionError, MemoryError, ValueError) as err:
        # exact evaluation of a huge value: mpmath's "too many digits", Python's 4300-digit limit of
        # integer-to-text conversion, sympy's recursion through a deep expression
        if isinstance(err, ValueError) and "integer string conversion" not in str(err):
            raise
        raise SymattnError(f"cannot check the claim exactly: evaluating it gives numbers too large to handle "
                           f"({type(err).__name__}: {str(err)[:120]}); give expressions whose values at "
                           "integer points stay moderate, or a smaller radius") from None


def _check_expression(claimed, computed, *, variables, points, seed, radius, simplify, degree, max_ops,
                      max_degree, renamed: list) -> CheckResult:
    """:func:`check_expression` without the conversion of arithmetic overflows to SymattnError."""
    import mpmath

    from .parsing import API_LIMITS, measure_expression
    from .positivity import CONSTANT_MAGNITUDE_BITS, ConstantTooLarge, approximate_constant

    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1:
        raise SymattnError(f"points must be a positive integer, got {points!r}")
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or radius < 1:
        raise SymattnError(f"radius must be a positive integer, got {radius!r}")
    rng = random.Random(seed)
    size = 2 * int(radius) + 1

    known_nonzero = False
    if callable(computed) and not isinstance(computed, (sp.Basic, sp.MatrixBase)):
        if variables is None:
            raise SymattnError("a callable 'computed' needs the variables to sample (variables=...)")
        variables = sorted(set(variables), key=lambda s: s.name)
        names = {s.name: s for s in variables}
        claimed_m, _ = _to_matrix(claimed, "claimed", names)
        measured = measure_expression(claimed_m, what="claimed expression", limits=API_LIMITS)
        _refuse_unknown_symbols(claimed_m, names, set(names))
        claimed_m = _rename(claimed_m, names, renamed)
        evaluate = computed
        computed_m = None
        computed_text = getattr(computed, "__name__", "computed function")
        line_note = ""
        if degree is None:
            found, calls = _line_degree(evaluate, variables, rng, radius, max_degree)
            if found is None:
                return CheckResult(
                    None, f"the computed values along a random line are not a polynomial of degree <= {max_degree} "
                    f"({calls} calls): not a polynomial, or of higher degree; give degree= (a bound on the total "
                    f"degree of claimed - computed) or a larger max_degree", None, None,
                    _short(claimed_m if claimed_m.shape != (1, 1) else claimed_m[0, 0]), computed_text, 0, None,
                    size)
            claimed_degree = 0
            for e in claimed_m:
                pair = _degree_pair(e, set(variables))
                if pair is None or pair[1]:
                    claimed_degree = None
                    break
                claimed_degree = max(claimed_degree, pair[0])
            if claimed_degree is not None:
                degree = max(found, claimed_degree)
                line_note = (f"; degree {degree} = max(degree {found} of the computed values along a random line, "
                             f"found from {calls} calls assuming a polynomial of degree <= {max_degree}, degree "
                             f"{claimed_degree} of the claim)")
                known_nonzero = False
    else:
        computed_m, _ = _to_matrix(computed, "computed", {})
        measured = measure_expression(computed_m, what="computed expression", limits=API_LIMITS)
        names = {s.name: s for s in computed_m.free_symbols if isinstance(s, sp.Symbol)}
        computed_text = _short(computed_m if computed_m.shape != (1, 1) else computed_m[0, 0])
        if callable(getattr(claimed, "ring_matrix", None)) and variables is None:
            # e.g. a LeadingCoefficient: compared in python-flint without writing it out in sympy
            exact = _compare_polynomials(claimed, computed_m, sorted(
                {*computed_m.free_symbols, *{s for s in claimed.free_symbols if s.name not in names}},
                key=lambda s: s.name), rng, radius, computed_text)
            if exact is not None:
                return exact
        claimed_m, _ = _to_matrix(claimed, "claimed", names)
        measured = measured.combine(measure_expression(claimed_m, what="claimed expression", limits=API_LIMITS))
        _refuse_unknown_symbols(claimed_m, names, {s.name for s in variables or ()})
        claimed_m = _rename(claimed_m, names, renamed)
        if claimed_m.shape != computed_m.shape:
            raise ShapeError(f"the claimed value has shape {claimed_m.shape}, the computed one "
                             f"{computed_m.shape}")
        computed_text = _short(computed_m if computed_m.shape != (1, 1) else computed_m[0, 0])
        if variables is None:
            variables = claimed_m.free_symbols | computed_m.free_symbols
        variables = sorted(set(variables), key=lambda s: s.name)

        def evaluate(point):
            return computed_m.xreplace(point)

        # 0. polynomials over Q: exact comparison in python-flint
        exact = _compare_polynomials(claimed_m, computed_m, variables, rng, radius, computed_text)
        if exact is not None:
            return exact

        # 1. a proof by symbolic simplification
        difference = claimed_m - computed_m
        decided = [(index, e, _expands_to_zero(e))
                   for index, e in np.ndenumerate(np.array(difference.tolist(), dtype=object))]
        remaining = [(index, e) for index, e, zero in decided if zero is not True]
        known_nonzero = any(zero is False for _, _, zero in decided)
        method = "symbolic: claimed - computed expands to 0"
        # sympy's simplify can take minutes on a function of a high-degree polynomial (exp(x**1000) - x)
        simplify = simplify and not (measured.functions and measured.degree > 64)
        if simplify and remaining and all(zero is None for _, _, zero in decided if zero is not True):
            still = []
            for index, e in remaining:
                reduced = sp.cancel(sp.together(e)) if sp.count_ops(e) <= 20 * max_ops else e
                if reduced != 0 and sp.count_ops(reduced) <= max_ops:
                    reduced = sp.simplify(reduced)
                if reduced != 0:
                    still.append((index, e))
            if not still:
                method = "symbolic: expand, cancel and simplify of claimed - computed give 0"
            remaining = still
        if not remaining:
            return CheckResult(True, method, 0.0, None, _short(claimed_m), computed_text, 0, None, None)

    claimed_text = _short(claimed_m if claimed_m.shape != (1, 1) else claimed_m[0, 0])
    variable_set = set(variables)

    # 2. exact evaluation at random integer points (the claim through python-flint when it is a polynomial)
    try:
        ring = _Ring(variables)
        claimed_p = ring.matrix(claimed_m)

        def claimed_at(point):
            values = [ring.flint.fmpq(int(point[v])) for v in ring.variables]
            return sp.Matrix(claimed_m.rows, claimed_m.cols,
                             [ring.number(ring.at(e, values)) for e in claimed_p.flat])
    except (_NotPolynomial, ImportError):
        def claimed_at(point):
            return claimed_m.xreplace(point)

    # functions (exp, sin, ...) are evaluated at small points: exp(exp(x)) at x = 10**6 has no exact value
    # anyone can compute; a rational function keeps the whole range (the Schwartz-Zippel bound uses it)
    if computed_m is not None and measured.functions and any(
            _degree_pair(e, variable_set) is None for e in claimed_m - computed_m):
        radius = min(radius, 16)
        size = 2 * radius + 1
    evaluated = 0
    tries = 0
    wanted = 100 if known_nonzero else points  # a nonzero polynomial difference: search for its witness
    small = _small_points(rng, len(variables), radius) if known_nonzero else iter(())
    while evaluated < wanted:
        tries += 1
        if tries > 20 * wanted:
            return CheckResult(None, "too many random points made a denominator vanish; no verdict", None, None,
                               claimed_text, computed_text, evaluated, degree, size)
        coordinates = next(small, None)  # a witness with small coordinates first
        if coordinates is None:
            coordinates = [rng.randint(-radius, radius) for _ in variables]
        point = {s: sp.Integer(v) for s, v in zip(variables, coordinates)}
        left = claimed_at(point)
        right = evaluate(point)
        # (a float inf or nan at a pole of a computed callable: the point is skipped below)
        right = to_sympy_matrix(right, what="computed matrix", finite=False) \
            if isinstance(right, (sp.MatrixBase, list, tuple, np.ndarray)) \
            else sp.Matrix([[to_sympy(right, what="computed value", finite=False)]])
        if right.shape != left.shape:
            raise ShapeError(f"the claimed value has shape {left.shape}, the computed one {right.shape}")
        if _invalid(left) or _invalid(right):
            continue
        evaluated += 1
        for r in range(left.rows):
            for c in range(left.cols):
                if not (left[r, c].is_Rational and right[r, c].is_Rational):
                    try:  # sympy's evalf would hang on exp of a number beyond 2**1000: refused first
                        with mpmath.workdps(15):
                            approximate_constant(left[r, c] - right[r, c])
                    except ConstantTooLarge as err:
                        where = ", ".join(f"{s.name} = {v}" for s, v in point.items())
                        raise SymattnError(f"cannot evaluate the claim exactly at the random point {where}: it "
                                           f"needs {err}; arguments of exp, sin, cos, ... up to "
                                           f"2**{CONSTANT_MAGNITUDE_BITS} are accepted") from None
                if _differ(left[r, c], right[r, c]):
                    entry = (r, c) if left.shape != (1, 1) else None
                    # only the symbols of the differing entry (all of them for a computed callable)
                    matter = claimed_m[r, c].free_symbols | (computed_m[r, c].free_symbols
                                                              if computed_m is not None else set(point))
                    return CheckResult(
                        False,
                        ("symbolic: claimed - computed is a nonzero polynomial; " if known_nonzero else "")
                        + f"exact evaluation at a random integer point in [-{radius}, {radius}]: the values differ",
                        0.0, Counterexample(tuple((s.name, str(v)) for s, v in point.items() if s in matter), entry,
                                            str(left[r, c]), str(right[r, c])),
                        claimed_text, computed_text, evaluated, degree, size)

    if known_nonzero:  # (practically never reached: a random point is a witness)
        return CheckResult(False, "symbolic: claimed - computed is a nonzero polynomial (sympy Poly); no witness "
                                  f"among {wanted} random points", 0.0, None, claimed_text, computed_text,
                           evaluated, degree, size)

    # 3. all points agree: Schwartz-Zippel
    exact = all(v.is_Rational for v in left) and all(v.is_Rational for v in right)
    denominator = 0
    if degree is None and computed_m is not None:
        numerator = 0
        for e in claimed_m - computed_m:
            pair = _degree_pair(e, variable_set)
            if pair is None:
                numerator = None
                break
            numerator = max(numerator, pair[0])
            denominator = max(denominator, pair[1])
        degree = numerator
    if degree is None or not exact:
        why = "not a rational function of the variables" if degree is None else "values not rational"
        return CheckResult(None, f"no symbolic proof; equal at {points} random point(s) ({why}, so no "
                                 f"Schwartz-Zippel bound)", None, None, claimed_text, computed_text, points, degree,
                           size)
    if degree == 0:
        return CheckResult(True, "the difference is constant and vanishes at a point", 0.0, None,
                           claimed_text, computed_text, points, 0, size)
    per_point = min(1.0, (degree / size) / max(1e-300, 1 - denominator / size)) if denominator < size else 1.0
    bound = per_point ** points
    note = line_note if computed_m is None else ""
    if note:  # the degree found along a line may be wrong with probability <= 2 max_degree / size
        bound = min(1.0, bound + 2 * max_degree / size)
    method = (f"exact evaluation at {points} random integer point(s) in [-{radius}, {radius}] (no symbolic proof "
              f"found); Schwartz-Zippel: a false claim passes with probability <= (degree {degree} / "
              f"{size})^{points}" + (f", corrected for denominators of degree {denominator}" if denominator else "")
              + (f" + 2 * {max_degree} / {size}" if note else "") + note)
    return CheckResult(True, method, bound, None, claimed_text, computed_text, points, degree, size)


# -- claimed numbers -----------------------------------------------------------------------------
_ALIASES = {
    "contact_order": "contact_order",
    "contactorder": "contact_order",
    "multiplicity": "multiplicity",
    "identification_order": "identification_order",
    "kernel": "kernel",
    "kernel_dimension": "kernel",
    "dimension": "dimension",
    "rank": "dimension",
    "sign_group_order": "sign_group_order",
}
_WITH_LAYER = {"contact_order", "multiplicity", "identification_order"}
#: The longest claim read: a numeric claim is a few dozen characters ("identification_order(3) = 17").
MAX_CLAIM_LENGTH = 2000


class _ClaimPattern:
    """The claim's regular expression, behind a check of its length and characters.

    Every quantifier is possessive (``*+``, ``?+``): no backtracking, so the
    match is linear in the length (the former lazy groups around ``\\s*``
    took minutes on a claim with 3,000 spaces).  Claims over
    :data:`MAX_CLAIM_LENGTH` characters and non-ASCII characters (``６``
    reads as 6 in ``\\d``) are refused before matching, with a short message.
    """

    def __init__(self, pattern: str):
        self.pattern = re.compile(pattern)

    def match(self, text: str):
        from .parsing import refuse_unaccepted_characters, shorten

        if len(text) > MAX_CLAIM_LENGTH:
            raise SymattnError(f"the claim {shorten(text)} is too long: {len(text)} characters, at most "
                               f"{MAX_CLAIM_LENGTH} are accepted; accepted: {_accepted()}")
        refuse_unaccepted_characters(text, "claim", SymattnError)
        return self.pattern.match(text)


_CLAIM = _ClaimPattern(r"^\s*+(?P<name>[A-Za-z][A-Za-z_ \-]*+)(?:\(\s*+(?P<arg>[^()]*+)\))?+\s*+={1,2}+\s*+"
                       r"(?P<value>\S.*+)$")


def _accepted() -> str:
    return "; ".join(ACCEPTED_CLAIMS + FORMULA_CLAIMS)


def parse_claim(text: str, layers: int | None = None) -> tuple[str, int | None, int]:
    """``(quantity, layer or None, value)`` from a claim string.

    Raises
    ------
    SymattnError
        Naming the accepted forms.

    Examples
    --------
    >>> parse_claim("contact_order(3) = 17")
    ('contact_order', 3, 17)
    >>> parse_claim(" Kernel == 6 ")
    ('kernel', None, 6)
    >>> parse_claim("order = 3")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: unknown quantity 'order' in claim 'order = 3'; accepted: contact_order(i) = n; multiplicity(i) = n; identification_order(i) = n; kernel = n; dimension = n; sign_group_order = n; leading(i) = <matrix formula>; F_n = <matrix formula> (or F_n = 0)
    """
    if not isinstance(text, str):
        raise SymattnError(f"a claim is a string such as 'contact_order(2) = 5', got {text!r}")
    match = _CLAIM.match(text)
    if not match:
        raise SymattnError(f"cannot read the claim {text!r}; accepted: {_accepted()}")
    raw = match["name"].strip().lower()
    key = re.sub(r"[\s\-]+", "_", raw)
    if key not in _ALIASES:
        raise SymattnError(f"unknown quantity {raw!r} in claim {text!r}; accepted: {_accepted()}")
    quantity = _ALIASES[key]
    arg = match["arg"]
    if quantity in _WITH_LAYER:
        if arg is None or not re.fullmatch(r"\d+", arg.strip()):
            raise SymattnError(f"{quantity} needs a layer number, as in '{quantity}(2) = 5'; got {text!r}")
        layer = int(arg)
        if layer < 1 or (layers is not None and layer > layers):
            raise SymattnError(f"claim {text!r} names layer {layer}; the architecture has layers 1..{layers}")
    else:
        if arg is not None:
            raise SymattnError(f"{quantity} takes no argument, as in '{quantity} = 6'; got {text!r}")
        layer = None
    value_text = match["value"].strip()
    if not re.fullmatch(r"[+-]?\d+", value_text):
        raise SymattnError(f"the claimed value in {text!r} must be an integer, got {value_text!r}")
    return quantity, layer, int(value_text)



# -- formula claims: leading(i) = <matrix formula>, F_n = <matrix formula> ---------------------------------------
_COEFFICIENT_START = re.compile(r"^\s*+F\s*+[_\[]")
_COEFFICIENT_CLAIM = _ClaimPattern(r"^\s*+F\s*+(?:_\s*+\{\s*+(?P<braced>[^{}=]*+)\}|_\s*+(?P<plain>[^\s=\[\]{}]*+)"
                                   r"|\[\s*+(?P<bracket>[^\[\]=]*+)\])\s*+={1,2}+\s*+(?P<formula>\S.*+)$")


def is_coefficient_claim(text) -> bool:
    """Whether a claim is about a coefficient of the expansion, ``F_n = <matrix formula>`` (also ``F[n]``, ``F_{n}``).

    Examples
    --------
    >>> is_coefficient_claim("F_2 = c_1/t * P*X*H*C_1"), is_coefficient_claim("kernel = 6")
    (True, False)
    """
    return isinstance(text, str) and _COEFFICIENT_START.match(text) is not None


def _max_coefficient() -> int:
    from .expand import MAX_ORDER

    return MAX_ORDER


def parse_coefficient_claim(claim: str) -> tuple[int, str]:
    """``(n, formula text)`` of a claim ``"F_n = <matrix formula>"`` (``F[n]`` and ``F_{n}`` also read).

    Raises
    ------
    SymattnError
        Naming what a coefficient claim reads like.

    Examples
    --------
    >>> parse_coefficient_claim("F_0 = P*X*J/t"), parse_coefficient_claim("F[2] == 0")
    ((0, 'P*X*J/t'), (2, '0'))
    >>> parse_coefficient_claim("F_x = 0")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: claim 'F_x = 0' names the coefficient F_x; n in F_n must be an integer 0..128 (F_0 is the value at collapse), as in 'F_2 = c_1/t * P*X*H*C_1'
    """
    from .parsing import shorten

    maximum = _max_coefficient()
    match = _COEFFICIENT_CLAIM.match(claim) if isinstance(claim, str) else None
    if match is None:
        shown = shorten(claim) if isinstance(claim, str) else repr(claim)
        raise SymattnError(f"a coefficient claim reads 'F_n = <matrix formula>' (or 'F_n = 0') with an integer "
                           f"0 <= n <= {maximum}, e.g. 'F_0 = P*X*J/t'; got {shown}; accepted: {_accepted()}")
    index = next(g for g in (match["braced"], match["plain"], match["bracket"]) if g is not None).strip()
    if not (index.isascii() and index.isdigit()) or len(index) > 6 or int(index) > maximum:
        shown = index if len(index) <= 20 else shorten(index, 20)
        raise SymattnError(f"claim {shorten(claim)} names the coefficient F_{shown}; n in F_n must be an integer "
                           f"0..{maximum} (F_0 is the value at collapse), as in 'F_2 = c_1/t * P*X*H*C_1'")
    return int(index), match["formula"].strip()


def _formula_names(arch: Architecture, n: int):
    """A LeadingCoefficient of the last layer whose names cover ``F_n``: every ``C_i``, ``What_i``, and ``c_1..c_{n+1}``.

    The formula language is :func:`symattn.expand.matrix_formula`'s; its
    ``c_j`` are the normalizer's Taylor coefficients (numbers for a named
    normalizer, the package's symbols for a generic one), all of them when
    every layer has the same normalizer (else each layer's leading ``c_k``).
    """
    from .expand import leading_coefficient, matrix_symbols

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


def _read_coefficient_claim(arch: Architecture, claim: str):
    """``(n, formula, names)``: the claim read by the package's formula parser (nothing executed)."""
    from .parsing import matrix_formula

    n, text = parse_coefficient_claim(claim)
    names = _formula_names(arch, n)
    if text == "0":  # the zero matrix: the one scalar the language's matrix claims accept
        return n, sp.ZeroMatrix(*names.matrix_form.shape), names
    return n, matrix_formula(text, names, target=f"F_{n}"), names


def _expansion_through(arch: Architecture, n: int, progress: bool = False):
    """:func:`symattn.expand.expand` keeping ``F_0..F_n`` (at least ``F_1``)."""
    from .expand import expand

    return expand(arch, truncation=max(n, 1) + 1, progress=progress)


def _formula_latex(expr) -> str:
    from .expand import latex as package_latex

    return package_latex(expr)


def _computed_latex(matrix, limit: int = 160) -> str:
    """The LaTeX of a computed matrix: written out when short enough to fit a line, else described."""
    text = _formula_latex(matrix) if _terms(matrix) <= 12 else ""
    if text and len(text) <= limit:
        return text
    # (math mode throughout: no $ inside \text, which MathJax would show as a dollar sign)
    return (rf"\text{{a }}{matrix.rows} \times {matrix.cols}\text{{ matrix with {_terms(matrix)} terms (JSON and "
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
    n, formula, names = _read_coefficient_claim(arch, claim)
    if expansion is None or len(expansion) <= n:
        expansion = _expansion_through(arch, n)
    computed = expansion[n]
    claimed = sp.zeros(*computed.shape) if isinstance(formula, sp.ZeroMatrix) else \
        replace(names, matrix_form=formula).evaluate(form="matrix")
    result = check_expression(claimed, computed, seed=seed)
    method = (f"the claimed matrix formula written out entry by entry (P = Vt_l ... Vt_1, C_i = X^T What_i X, "
              f"H = I - J/t) against F_{n} of symattn.expand.expand along {expansion.curve.describe(arch.layers)} "
              f"(check_expression): "
              + result.method)
    # a table cell: the matrix when it fits a line, else its size (`symattn expand` prints it whole)
    computed_text = _short(computed, limit=120)
    if "..." in computed_text:
        computed_text = f"({computed.rows} x {computed.cols} matrix with {_terms(computed)} terms)"
    claim_latex = f"F_{{{n}}} = " + ("0" if isinstance(formula, sp.ZeroMatrix) else _formula_latex(formula))
    return ClaimCheck(claim, "coefficient", None, "0" if isinstance(formula, sp.ZeroMatrix) else str(formula),
                      computed_text, result.verdict, method, result.counterexample, claim_latex,
                      _computed_latex(computed))


def _check_leading(arch: Architecture, claim: str, seed: int) -> ClaimCheck:
    """:func:`symattn.expand.check_formula_claim`, with LaTeX and a counterexample on the symbols that matter."""
    from .expand import check_formula_claim, parse_formula_claim

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


def _claim_kind(text) -> str:
    from .expand import is_formula_claim

    if is_formula_claim(text):
        return "leading"
    if is_coefficient_claim(text):
        return "coefficient"
    return "number"


@dataclass(frozen=True)
class ClaimsReport(FormattedResult):
    """Several claims checked against one architecture.

    Examples
    --------
    >>> report = check_claims(Architecture.uniform(layers=1, width=2, tokens=3), ["kernel = 1"])
    >>> report.all_true, report.to_json()["claims"][0]["computed"]
    (True, 1)
    """

    architecture: dict
    checks: tuple
    all_true: bool = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "all_true", all(c.verdict is True for c in self.checks))

    @property
    def refuted(self) -> tuple:
        """The claims found false."""
        return tuple(c for c in self.checks if c.verdict is False)

    @property
    def undecided(self) -> tuple:
        """The claims the engine could not settle."""
        return tuple(c for c in self.checks if c.verdict is None)

    def to_json(self) -> dict:
        return {"architecture": self.architecture, "claims": [c.to_json() for c in self.checks],
                "all_true": self.all_true}

    def _summary(self) -> str:
        """One line: every claim true, or how many were refuted and left undecided."""
        if self.all_true:
            return f"all {len(self.checks)} claim(s) true"
        return (f"not all true: {len(self.refuted)} refuted, {len(self.undecided)} undecided "
                f"of {len(self.checks)} claim(s)")

    def _rows(self):
        for c in self.checks:
            computed = "not settled" if c.computed is None else c.computed
            yield c.claim, VERDICT_WORDS[c.verdict], computed, c.method

    def to_markdown(self) -> str:
        table = markdown_table(("claim", "verdict", "computed", "method"),
                               [(f"`{markdown_cell(a)}`", b, markdown_cell(c), markdown_cell(d))
                                for a, b, c, d in self._rows()])
        lines = [f"- counterexample to `{c.claim}`: " + counterexample_text(c.counterexample, "`")
                 for c in self.checks if c.counterexample is not None]
        return table + ("\n\n" + "\n".join(lines) if lines else "") + f"\n\n{self._summary()}"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _latex_body(self) -> str:
        # a list, not a table: claims, formulas and methods are sentences of any length (a tabular ran
        # past the margin); each item breaks where its words do
        items = []
        for n, c in enumerate(self.checks, start=1):
            claim = f"${c.claim_latex}$" if c.claim_latex else rf"\texttt{{{latex_escape(c.claim)}}}"
            if c.computed is None:
                computed = "not settled"
            elif c.computed_latex:
                computed = f"${c.computed_latex}$"
            else:
                computed = latex_prose(c.computed)
            lines = [rf"\item {claim}\\", rf"verdict: \textbf{{{VERDICT_WORDS[c.verdict]}}}; computed: {computed}"]
            if c.counterexample is not None:
                lines.append(r"\\counterexample: " + counterexample_latex(c.counterexample))
            lines.append(latex_method(c.method, "Method"))
            items.append("\n".join(lines))
        verdict = "yes" if self.all_true else "no"
        return ("{\\raggedright\n\\begin{enumerate}\n" + "\n".join(items) + "\n\\end{enumerate}\n"
                + f"All claims true: {verdict}.\\par}}")

    def _latex_math(self) -> str:
        def claim(c):
            return c.claim_latex if c.claim_latex else rf"\texttt{{{latex_escape(c.claim)}}}"

        def computed(c):
            if c.computed is None:
                return r"\text{not settled}"
            return c.computed_latex or rf"\text{{{latex_escape(c.computed)}}}"

        rows = r" \\ ".join(rf"{claim(c)} & \text{{{VERDICT_WORDS[c.verdict]}}} & {computed(c)}"
                            for c in self.checks)
        return r"\begin{array}{lll} \text{claim} & \text{verdict} & \text{computed} \\ \hline " + rows + r"\end{array}"

    def __str__(self) -> str:
        return "\n".join(str(c) for c in self.checks) + f"\n{self._summary()}"


class _Engine:
    """Computes each quantity once for all claims about one architecture."""

    def __init__(self, arch: Architecture, seed: int = 0, progress: bool = False, spectrum=None):
        self.arch = arch
        self.seed = seed
        self.progress = progress
        self._spectrum = spectrum
        self._identify = None
        self._identify_tried = False
        self._identify_error = None
        self._flips = None

    @property
    def spectrum(self):
        if self._spectrum is None:
            from .spectrum import decay_spectrum

            self._spectrum = decay_spectrum(self.arch, seed=self.seed, progress=self.progress)
        return self._spectrum

    def _spectrum_note(self) -> str:
        s = self.spectrum
        return (f"decay_spectrum along {s.curve}: exponents {s.exponents}, rank {s.rank}, kernel {s.kernel}, "
                f"bank {s.bank} (separating: {s.separating}), truncation eps^{s.truncation}, primes "
                f"{list(s.primes)} (confirmed: {s.confirmed}), error probability <= {s.error_bound:.1e}")

    def _spectrum_settled(self) -> str | None:
        s = self.spectrum
        if not s.separating:
            return f"the bank is not certified separating ({s.separation_note})"
        if s.unresolved:
            return f"{s.unresolved} direction(s) unresolved (valuation >= {s.truncation})"
        return None

    def contact_order(self, layer: int):
        s = self.spectrum
        block = {int(e): m for e, m in s.blocks.get(f"scores:{layer}", {}).items()}  # ints, as Spectrum.exponents
        for name, histogram in s.blocks.items():  # a layer with heads: the blocks scores:i:h of all its heads
            if name.startswith(f"scores:{layer}:"):
                for e, m in histogram.items():
                    block[int(e)] = block.get(int(e), 0) + m
        block = dict(sorted(block.items()))
        exponents = sorted(int(e) for e in block)
        note = (f"least exponent added by layer {layer}'s Q_{layer}, K_{layer} columns "
                f"(block scores:{layer} = {block}); " + self._spectrum_note())
        if not exponents:
            return None, note + f"; layer {layer}'s block resolved no exponent"
        return exponents[0], note

    def identify_report(self):
        if not self._identify_tried:
            self._identify_tried = True
            try:
                from .identify import identify
            except ImportError:
                identify = None
            if identify is not None:
                try:
                    try:
                        self._identify = identify(self.arch, seed=self.seed, progress=self.progress, estimate=None)
                    except TypeError:  # an older signature
                        self._identify = identify(self.arch)
                except SymattnError as err:  # e.g. no exact engine for this normalizer
                    self._identify_error = str(err)
        return self._identify

    def identification_order(self, layer: int):
        report = self.identify_report()
        if report is not None and hasattr(report, "orders"):
            value, entry = _lookup_order(report.orders, layer)
            if value is not None:
                sharp = getattr(entry, "sharp", None)
                note = getattr(entry, "note", "")
                return value, (f"symattn.identify.identify(arch): identification order of block scores:{layer} "
                               f"along the collapse curve = {value}"
                               + ("" if sharp is None else f", sharp: {sharp}") + (f" ({note})" if note else ""))
        contact, note = self.contact_order(layer)
        if contact is None:
            return None, "identification order = contact order + 1; " + note
        if self._identify_error:
            why = f"symattn.identify failed ({self._identify_error})"
        elif report is None:
            why = "symattn.identify is not available"
        else:
            why = "symattn.identify's report has no order for this layer"
        return contact + 1, (f"{why}: identification order computed as contact order + 1 (the least n with "
                             f"F_0..F_n depending on the layer's scores); " + note)

    def sign_flips(self):
        if self._flips is None:
            self._flips = _sign_flip_count(self.arch, self.seed)
        return self._flips


def _lookup_order(orders, layer: int):
    """``(order, entry)`` of layer ``layer`` in an identify report's ``orders`` (several shapes accepted)."""
    def value_of(entry):
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            return int(entry)
        order = getattr(entry, "order", None)
        return int(order) if isinstance(order, (int, np.integer)) else None

    if isinstance(orders, dict):
        for key in (layer, str(layer), f"scores:{layer}", f"layer {layer}"):
            if key in orders:
                return value_of(orders[key]), orders[key]
        return None, None
    if isinstance(orders, (list, tuple)):
        for entry in orders:
            if getattr(entry, "layer", None) == layer or getattr(entry, "block", None) == f"scores:{layer}":
                return value_of(entry), entry
        if all(isinstance(e, (int, np.integer)) for e in orders) and 1 <= layer <= len(orders):
            return int(orders[layer - 1]), orders[layer - 1]
    return None, None


def _sign_flip_count(arch: Architecture, seed: int):
    """``(order, method, unsettled)``: :func:`~symattn.effective.sign_group_order`, checked numerically.

    The value is the one sign-group computation that ``report`` and
    ``identify`` print; each flip ``Q_i -> -Q_i`` (every set of layers up to
    6 layers, else the generators of the group and each single layer) is
    compared at a random rational point in 60-digit mpmath with what
    :func:`~symattn.effective.flip_preserves_output` says.  ``unsettled``
    names the flips that disagree (None when all agree).
    """
    from itertools import combinations

    from .algebra.domains import MpmathDomain
    from .effective import flip_preserves_output, sign_flip, sign_group_order
    from .model import forward

    order = sign_group_order(arch)
    rule = "even (or one-token) layers flip freely, lightning layers in pairs"
    if any(n.is_generic for n in arch.normalizers):
        return order, (f"effective.sign_group_order = {order} ({rule}); a generic normalizer cannot be "
                       "evaluated numerically, so no independent check"), None
    count = len(arch.units())  # the heads in parameter order: the layers when each has one head
    layers = range(1, count + 1)
    if count <= 6:
        subsets = [s for size in range(1, count + 1) for s in combinations(layers, size)]
    else:  # each head alone, and consecutive pairs (they generate the lightning part)
        subsets = [(i,) for i in layers] + [(i, i + 1) for i in range(1, count)]
    rng = random.Random(seed)
    values = [sp.Rational(rng.randint(-30, 30), rng.randint(10, 40)) for _ in range(arch.param_count)]
    params = arch.parameters_from_flat(values)
    X = [[sp.Rational(rng.randint(-30, 30), rng.randint(10, 40)) for _ in range(arch.tokens)]
         for _ in range(arch.widths[0])]
    domain = MpmathDomain(dps=60)
    mp = domain._mpmath
    reference = forward(arch, params, X, domain)
    scale = max(mp.mpf(1), max(abs(v) for v in reference.flat))
    disagreeing = []
    for subset in subsets:
        flipped = forward(arch, sign_flip(params, subset), X, domain)
        difference = max(abs(a - b) for a, b in zip(flipped.flat, reference.flat))
        if (difference <= scale * mp.mpf(10) ** -45) != flip_preserves_output(arch, subset):
            disagreeing.append(list(subset))
    method = (f"{len(subsets)} sign flips Q_i -> -Q_i compared with F at a random rational point and input "
              f"(to 45 of 60 digits, mpmath): "
              + ("each" if not disagreeing else f"the flips of layers {disagreeing} DISAGREE; the others")
              + f" agrees with effective.sign_group_order = {order} ({rule})")
    return order, method, (f"numerical check disagrees for {disagreeing}" if disagreeing else None)


def _verdict(claimed: int, computed, unsettled: str | None):
    if computed is None or unsettled:
        return None
    return claimed == computed


def _check_one(engine: _Engine, text: str) -> ClaimCheck:
    arch = engine.arch
    quantity, layer, claimed = parse_claim(text, arch.layers)
    if quantity == "contact_order":
        computed, method = engine.contact_order(layer)
        return ClaimCheck(text, quantity, layer, claimed, computed,
                          _verdict(claimed, computed, engine._spectrum_settled()), method)
    if quantity == "multiplicity":
        contact, note = engine.contact_order(layer)
        if contact is None:
            return ClaimCheck(text, quantity, layer, claimed, None, None, note)
        computed = engine.spectrum.multiplicity(contact)
        block = sum(histogram.get(contact, 0) for name, histogram in engine.spectrum.blocks.items()
                    if name == f"scores:{layer}" or name.startswith(f"scores:{layer}:"))  # every head
        method = (f"multiplicity of exponent {contact} (layer {layer}'s contact order) in the whole spectrum; "
                  f"layer {layer}'s own block contributes {block}; " + note)
        return ClaimCheck(text, quantity, layer, claimed, computed,
                          _verdict(claimed, computed, engine._spectrum_settled()), method)
    if quantity == "identification_order":
        computed, method = engine.identification_order(layer)
        unsettled = engine._spectrum_settled() if "contact order + 1" in method else None
        return ClaimCheck(text, quantity, layer, claimed, computed, _verdict(claimed, computed, unsettled), method)
    if quantity in ("kernel", "dimension"):
        s = engine.spectrum
        computed = s.kernel if quantity == "kernel" else s.rank
        what = ("kernel = #params - rank of the native Jacobian J(eps)" if quantity == "kernel"
                else "dimension = rank of the native Jacobian J(eps) over power series")
        unsettled = engine._spectrum_settled() or (None if s.rank_certified else "the rank is only a lower bound")
        method = what + ("" if not unsettled else f" (not settled: {unsettled})") + "; " + engine._spectrum_note()
        return ClaimCheck(text, quantity, None, claimed, computed, _verdict(claimed, computed, unsettled), method)
    computed, method, unsettled = engine.sign_flips()
    return ClaimCheck(text, quantity, None, claimed, computed, _verdict(claimed, computed, unsettled), method)


def check_claims(arch: Architecture, claims, *, seed: int = 0, progress: bool = False,
                 spectrum=None) -> ClaimsReport:
    """Check several claimed numbers, computing each quantity once.

    Parameters
    ----------
    arch : Architecture
    claims : iterable of str
        Claims in the forms of :data:`ACCEPTED_CLAIMS`.
    seed : int
        Seed of the spectrum computation and of the random point of the sign check.
    spectrum : Spectrum, optional
        A precomputed :func:`~symattn.spectrum.decay_spectrum` of ``arch``.

    Returns
    -------
    ClaimsReport

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
    >>> report = check_claims(arch, ["kernel = 1", "dimension = 2", "sign_group_order = 2"])
    >>> print(report)
    kernel = 1: true (computed 1)
    dimension = 2: true (computed 2)
    sign_group_order = 2: false (computed 1)
    not all true: 1 refuted, 0 undecided of 3 claim(s)
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    if isinstance(claims, str):
        claims = [claims]
    claims = list(claims)
    if not claims:
        raise SymattnError(f"no claims to check; accepted: {_accepted()}")
    kinds = []
    coefficients = []
    for text in claims:  # all parse errors before any computation
        kind = _claim_kind(text)
        kinds.append(kind)
        if kind == "number":
            parse_claim(text, arch.layers)
        elif kind == "leading":
            from .expand import parse_formula_claim

            parse_formula_claim(arch, text)
        else:
            coefficients.append(_read_coefficient_claim(arch, text)[0])
    engine = _Engine(arch, seed=seed, progress=progress, spectrum=spectrum)
    expansion = _expansion_through(arch, max(coefficients), progress=progress) if coefficients else None
    checks = []
    for text, kind in zip(claims, kinds):
        if kind == "leading":
            checks.append(_check_leading(arch, text, seed))
        elif kind == "coefficient":
            checks.append(check_coefficient_claim(arch, text, seed=seed, expansion=expansion))
        else:
            checks.append(_check_one(engine, text))
    return ClaimsReport(arch.to_json(), tuple(checks))


def check_claim(arch: Architecture, claim: str, *, seed: int = 0, progress: bool = False,
                spectrum=None) -> ClaimCheck:
    """Check one claimed number for an architecture against the engine.

    Claims (``i`` a layer, ``n`` an integer; ``==`` also accepted):

    * ``contact_order(i) = n``: the least exponent of the decay spectrum that
      layer ``i``'s ``Q_i, K_i`` add (its block in :func:`~symattn.spectrum.decay_spectrum`);
    * ``multiplicity(i) = m``: the multiplicity of that exponent in the spectrum;
    * ``kernel = n``: ``#params - rank`` of the native Jacobian;
    * ``dimension = n``: its rank (the dimension of the function space);
    * ``identification_order(i) = n``: from :mod:`symattn.identify` when it is
      available, else contact order + 1 (the method says which);
    * ``sign_group_order = n``: :func:`~symattn.effective.sign_group_order`
      (the number ``report`` and ``identify`` print), with each sign flip
      checked at a random point (60-digit mpmath); undecided if one disagrees.

    The verdict is None (undecided) when the spectrum leaves the value
    unsettled (bank not separating, unresolved directions).

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=3)
    >>> c = check_claim(arch, "contact_order(1) = 2")
    >>> c.verdict, c.computed
    (False, 1)
    >>> check_claim(arch, "contact_order(2) = 5")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: claim 'contact_order(2) = 5' names layer 2; the architecture has layers 1..1
    """
    return check_claims(arch, [claim], seed=seed, progress=progress, spectrum=spectrum).checks[0]
