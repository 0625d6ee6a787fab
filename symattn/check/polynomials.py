"""The exact engine of :func:`~symattn.check.check_expression`: both sides as python-flint polynomials over Q.

:class:`PolynomialRing` is ``Q[variables]`` with symbols matched by name;
:func:`compare_polynomials` gives the verdict when both sides are polynomials
over Q (a proof when they are equal, else a counterexample at the first small
integer point, :func:`small_points`, where they differ), and None otherwise
(:class:`NotPolynomial`), for the sympy route of
:mod:`symattn.check.expressions`.
"""

from __future__ import annotations

import random

import numpy as np
import sympy as sp

from ..errors import ShapeError, SymattnError
from ..verdicts import CheckResult, Counterexample
from .sides import short_text


class NotPolynomial(Exception):
    pass


class PolynomialRing:
    """``Q[variables]`` with python-flint polynomials; symbols are matched by name."""

    def __init__(self, variables):
        import flint

        self.flint = flint
        self.variables = list(variables)
        self.index = {s.name: i for i, s in enumerate(self.variables)}
        if len(self.index) != len(self.variables):
            raise NotPolynomial("two variables share a name")
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
                        raise NotPolynomial(term)
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
                            raise NotPolynomial(factor)
                        if base.name not in self.index:
                            raise NotPolynomial(base)
                        known = factors[factor] = (self.index[base.name], e)
                    exponents[known[0]] += known[1]
                key = tuple(exponents)
                terms[key] = terms[key] + number if key in terms else number
        except NotPolynomial:  # not an expanded sum (products of sums, ...): sympy's Poly
            if expr.free_symbols and not {s.name for s in expr.free_symbols
                                          if isinstance(s, sp.Symbol)} <= set(self.index):
                raise
            gens = [sp.Symbol(s.name) for s in self.variables]
            plain = expr.xreplace({s: sp.Symbol(s.name) for s in expr.free_symbols if isinstance(s, sp.Symbol)})
            try:
                poly = sp.Poly(plain, *gens) if gens else None
            except (sp.PolynomialError, sp.GeneratorsNeeded):
                raise NotPolynomial(expr) from None
            if poly is None or not (poly.domain.is_QQ or poly.domain.is_ZZ):
                raise NotPolynomial(expr) from None
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


def small_points(rng: random.Random, count: int, radius: int):
    """Random integer points, the smallest coordinates first: radius 1, 2, 3, 5, 10, 100, ..., ``radius``."""
    r = 1
    while True:
        r = min(r, radius)
        for _ in range(8):
            yield [rng.randint(-r, r) for _ in range(count)]
        if r == radius:
            return
        r = {1: 2, 2: 3, 3: 5, 5: 10}.get(r, r * 10)


def _first_difference(ring: PolynomialRing, claimed: np.ndarray, computed: np.ndarray, rng: random.Random, radius: int):
    """A small integer point where two different polynomial matrices differ: ``(point, entry)``."""
    differing = [(index, claimed[index] - computed[index]) for index in np.ndindex(*claimed.shape)
                 if claimed[index] != computed[index]]
    flint = ring.flint
    for point in small_points(rng, len(ring.variables), radius):
        values = [flint.fmpq(v) for v in point]
        for index, difference in differing:
            if ring.at(difference, values) != 0:
                return point, index
    return None, differing[0][0]


def compare_polynomials(claimed_m, computed_m, variables, rng, radius: int, computed_text: str):
    """The verdict when both sides are polynomials over Q in the variables (python-flint); else None."""
    try:
        ring = PolynomialRing(variables)
        computed_p = ring.matrix(computed_m)
        if isinstance(claimed_m, sp.MatrixBase):
            claimed_p = ring.matrix(claimed_m)
            claimed_text = short_text(claimed_m if claimed_m.shape != (1, 1) else claimed_m[0, 0])
        else:  # an object that evaluates itself in a ring (LeadingCoefficient.ring_matrix)
            claimed_p = claimed_m.ring_matrix(ring.polynomial)
            claimed_text = str(getattr(claimed_m, "matrix_form", None) or claimed_m)
            if claimed_p.shape != computed_p.shape:
                raise ShapeError(f"the claimed value has shape {claimed_p.shape}, the computed one "
                                 f"{computed_p.shape}")
    except (NotPolynomial, ImportError, SymattnError) as err:
        if isinstance(err, ShapeError):
            raise
        return None
    where = f"in Q[{len(ring.variables)} variables] (python-flint polynomials)"
    if all(a == b for a, b in zip(claimed_p.flat, computed_p.flat)):
        return CheckResult(True, f"exact: claimed and computed are equal polynomials {where}", 0.0, None,
                           claimed_text, computed_text, 0, None, None)
    point, entry = _first_difference(ring, claimed_p, computed_p, rng, radius)
    if point is None:  # (practically never: a nonzero polynomial is nonzero at most small points)
        return CheckResult(False, f"exact: claimed - computed is a nonzero polynomial {where} at entry "
                                  f"({entry[0] + 1}, {entry[1] + 1}); "
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
