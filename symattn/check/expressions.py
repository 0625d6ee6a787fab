"""Claimed expressions against computed ones: :func:`check_expression`.

Polynomials over Q are compared exactly in python-flint
(:mod:`symattn.check.polynomials`); other expressions through sympy
(``expand``, ``cancel``, ``simplify``), then exact evaluation at random
rational points with a Schwartz-Zippel bound, and a concrete counterexample
when the claim is false.

Examples
--------
>>> import sympy as sp
>>> from symattn.check.expressions import check_expression
>>> x = sp.Symbol("x")
>>> check_expression((x + 1)**2, x**2 + 2*x + 1).verdict
True
"""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import sympy as sp

from ..errors import ShapeError, SymattnError
from ..parsing import to_sympy, to_sympy_matrix
from ..verdicts import CheckResult, Counterexample
from .polynomials import NotPolynomial, PolynomialRing, compare_polynomials, small_points
from .sides import refuse_non_analytic, refuse_unknown_symbols, rename_by_name, short_text, to_matrix

__all__ = ["check_expression"]


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
    nested functions, towers of powers, ``Max`` of many arguments are refused,
    and so are functions that are not analytic (``Max``, ``Min``, ``Abs``,
    ``Piecewise``, ...: :func:`symattn.check.sides.refuse_non_analytic`).

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

    from ..parsing import API_LIMITS, measure_expression
    from ..positivity import CONSTANT_MAGNITUDE_BITS, ConstantTooLarge, approximate_constant

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
        claimed_m, _ = to_matrix(claimed, "claimed", names)
        measured = measure_expression(claimed_m, what="claimed expression", limits=API_LIMITS)
        refuse_non_analytic(claimed_m, "claimed expression")
        refuse_unknown_symbols(claimed_m, names, set(names))
        claimed_m = rename_by_name(claimed_m, names, renamed)
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
                    short_text(claimed_m if claimed_m.shape != (1, 1) else claimed_m[0, 0]), computed_text, 0, None,
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
        computed_m, _ = to_matrix(computed, "computed", {})
        measured = measure_expression(computed_m, what="computed expression", limits=API_LIMITS)
        refuse_non_analytic(computed_m, "computed expression")
        names = {s.name: s for s in computed_m.free_symbols if isinstance(s, sp.Symbol)}
        computed_text = short_text(computed_m if computed_m.shape != (1, 1) else computed_m[0, 0])
        if callable(getattr(claimed, "ring_matrix", None)) and variables is None:
            # e.g. a LeadingCoefficient: compared in python-flint without writing it out in sympy
            exact = compare_polynomials(claimed, computed_m, sorted(
                {*computed_m.free_symbols, *{s for s in claimed.free_symbols if s.name not in names}},
                key=lambda s: s.name), rng, radius, computed_text)
            if exact is not None:
                return exact
        claimed_m, _ = to_matrix(claimed, "claimed", names)
        measured = measured.combine(measure_expression(claimed_m, what="claimed expression", limits=API_LIMITS))
        refuse_non_analytic(claimed_m, "claimed expression")
        refuse_unknown_symbols(claimed_m, names, {s.name for s in variables or ()})
        claimed_m = rename_by_name(claimed_m, names, renamed)
        if claimed_m.shape != computed_m.shape:
            raise ShapeError(f"the claimed value has shape {claimed_m.shape}, the computed one "
                             f"{computed_m.shape}")
        computed_text = short_text(computed_m if computed_m.shape != (1, 1) else computed_m[0, 0])
        if variables is None:
            variables = claimed_m.free_symbols | computed_m.free_symbols
        variables = sorted(set(variables), key=lambda s: s.name)

        def evaluate(point):
            return computed_m.xreplace(point)

        # 0. polynomials over Q: exact comparison in python-flint
        exact = compare_polynomials(claimed_m, computed_m, variables, rng, radius, computed_text)
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
            return CheckResult(True, method, 0.0, None, short_text(claimed_m), computed_text, 0, None, None)

    claimed_text = short_text(claimed_m if claimed_m.shape != (1, 1) else claimed_m[0, 0])
    variable_set = set(variables)

    # 2. exact evaluation at random integer points (the claim through python-flint when it is a polynomial)
    try:
        ring = PolynomialRing(variables)
        claimed_p = ring.matrix(claimed_m)

        def claimed_at(point):
            values = [ring.flint.fmpq(int(point[v])) for v in ring.variables]
            return sp.Matrix(claimed_m.rows, claimed_m.cols,
                             [ring.number(ring.at(e, values)) for e in claimed_p.flat])
    except (NotPolynomial, ImportError):
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
    small = small_points(rng, len(variables), radius) if known_nonzero else iter(())
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
