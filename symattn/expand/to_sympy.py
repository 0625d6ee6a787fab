"""python-flint polynomials written as sympy: the coefficients of an expansion, converted when read.

:class:`FlintToSympy` builds the same sympy expressions as ``Poly.as_expr()``
about 25 times faster; :class:`LazyCoefficients` holds the coefficients
``F_n`` of an expansion as polynomials and writes each as a
:class:`~symattn.expand.CoefficientMatrix` on first access.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cmp_to_key

import numpy as np
import sympy as sp

from ..algebra.exactseries import from_fmpq
from .printing import CoefficientMatrix


def exact_conversions(symbols) -> tuple:
    """``(convert, back)``: into the exact ring an evaluation needs and out to sympy.

    Polynomials over Q in ``symbols`` (flint) when there are any, else flint
    rationals; ``back`` turns a ring element into a sympy expression.

    Examples
    --------
    >>> convert, back = exact_conversions([])
    >>> back(convert(sp.Rational(1, 3)) * 3)
    1
    >>> x = sp.Symbol("x")
    >>> convert, back = exact_conversions([x])
    >>> back(convert(x) ** 2 + convert(x))
    x**2 + x
    """
    from ..algebra.exactseries import PolynomialSeriesDomain, to_fmpq

    if symbols:
        domain = PolynomialSeriesDomain(1, sorted(symbols, key=lambda s: s.name))
        return domain._convert, FlintToSympy(domain.symbols)
    return to_fmpq, from_fmpq


class FlintToSympy:
    """python-flint ``fmpq_mpoly`` -> sympy expression, identical (args, hash) to ``Poly.as_expr()``.

    ``Poly.as_expr`` builds every term through sympy's canonicalization
    (``Mul.flatten``, ``Add.flatten``, sorting by ``Basic.compare``): 190 s for
    the 340 000 terms of a 2-layer expansion to order 6.  Here each factor's
    and number's place in that canonical order is computed once as a sort key
    and the terms are assembled with ``_from_args``: the same expressions, about
    25 times faster.  One instance serves many polynomials of one ring (it
    caches the factors, numbers and monomials it has met).

    Parameters
    ----------
    symbols : sequence of sympy Symbols
        The generators of the polynomials' ring, in order.

    Examples
    --------
    >>> from symattn.algebra.exactseries import PolynomialSeriesDomain
    >>> a, b = sp.symbols("a b", real=True)
    >>> ring = PolynomialSeriesDomain(1, [a, b])
    >>> poly = ring.residue((a - 2*b)**2 / 3 + 1)
    >>> FlintToSympy([a, b])(poly)
    a**2/3 - 4*a*b/3 + 4*b**2/3 + 1
    >>> _ == ring.to_sympy(poly) == sp.expand((a - 2*b)**2 / 3 + 1)
    True
    """

    def __init__(self, symbols):
        self.symbols = tuple(symbols)
        self._powers = {}  # (index, exponent) -> Symbol or Pow
        self._keys = {}  # (index, exponent) -> sort key
        self._numbers = {}  # (fmpz p, fmpz q) -> (Rational, sort key)
        self._class_rank = {}
        self._monomials = {}  # exponent tuple -> (factors, keys)
        self._built = {}  # (exponent tuple, p, q) -> (sort key, term)
        for cls in (sp.Symbol, sp.Pow, sp.Mul, sp.Integer, sp.Rational, type(sp.S.One), type(sp.S.NegativeOne),
                    type(sp.S.Half), type(sp.S.Zero)):
            self._class(cls)

    def _class(self, cls):
        rank = self._class_rank.get(cls)
        if rank is None:
            from sympy.core.basic import _cmp_name

            classes = sorted({*self._class_rank, cls}, key=cmp_to_key(_cmp_name))
            # classes sympy does not tell apart share a rank (EntrySymbol is named Symbol, and sorts as one)
            ranks, rank = {}, -1
            for i, c in enumerate(classes):
                rank += 1 if i == 0 or _cmp_name(classes[i - 1], c) else 0
                ranks[c] = rank
            self._class_rank = ranks
            for key, (value, _) in self._numbers.items():
                self._numbers[key] = (value, (self._class_rank[type(value)], value._hashable_content()))
            self._rank_factors()
            rank = self._class_rank[cls]
        return rank

    def _rank_factors(self):
        order = sorted(self._powers, key=cmp_to_key(lambda a, b: self._powers[a].compare(self._powers[b])))
        self._keys = {pair: (self._class_rank[type(self._powers[pair])], rank) for rank, pair in enumerate(order)}
        self._monomials = {}
        self._built = {}

    def _register(self, pairs):
        for index, exponent in pairs:
            s = self.symbols[index]
            value = s if exponent == 1 else sp.Pow(s, exponent)
            self._powers[(index, exponent)] = value
            self._class(type(value))
        self._rank_factors()

    def _number(self, p, q):
        entry = self._numbers.get((p, q))
        if entry is None:
            value = sp.Rational(int(p), int(q))
            entry = self._numbers[(p, q)] = (value, (self._class(type(value)), value._hashable_content()))
        return entry

    def _term(self, monomial, p, q):
        """``(sort key, term)`` of one term (key None for a constant)."""
        number, number_key = self._number(p, q)
        factors, keys = self._monomials[monomial]
        if not factors:
            return None, number
        if number is sp.S.One and len(factors) == 1:
            return keys[0], factors[0]
        mul_rank = self._class_rank[sp.Mul]
        if number is sp.S.One:
            return (mul_rank, len(factors), keys), sp.Mul._from_args(factors, True)
        return (mul_rank, len(factors) + 1, (number_key, *keys)), sp.Mul._from_args((number, *factors), True)

    def _learn(self, monomials, every):
        """Cache each new monomial's ``(factors, keys)``, registering new factors (then ``every`` monomial)."""
        pairs = {(i, int(e)) for m in monomials for i, e in enumerate(m) if e} - self._powers.keys()
        if pairs:
            self._register(pairs)  # new keys: the cache starts again
            monomials = every
        cache, keys, powers = self._monomials, self._keys, self._powers
        for m in monomials:
            ordered = sorted(((i, int(e)) for i, e in enumerate(m) if e), key=keys.__getitem__)
            cache[m] = (tuple(powers[p] for p in ordered), tuple(keys[p] for p in ordered))

    def __call__(self, poly):
        import flint

        if not isinstance(poly, flint.fmpq_mpoly):
            return from_fmpq(poly)
        monomials = poly.monoms()  # (faster than to_dict; an fmpq hashes slowly, its p and q fast)
        if not monomials:
            return sp.Integer(0)
        cache = self._monomials
        missing = [m for m in monomials if m not in cache]
        if missing:
            self._learn(missing, monomials)
        built = self._built
        out, constant = [], None
        for monomial, c in zip(monomials, poly.coeffs()):  # a term met before (same monomial, number) is reused
            item = (monomial, c.p, c.q)
            term = built.get(item)
            if term is None:
                term = built[item] = self._term(*item)
            if term[0] is None:
                constant = term[1]
            else:
                out.append(term)
        out.sort(key=lambda pair: pair[0])
        args = [term for _, term in out]
        if constant is not None:
            args.insert(0, constant)
        return args[0] if len(args) == 1 else sp.Add._from_args(args, True)


class LazyCoefficients(Sequence):
    """The coefficients ``F_0 .. F_N`` as python-flint polynomials, written as sympy matrices when read.

    Building the sympy terms is most of the time of a large expansion (80%
    of the 4.7 s of two layers at width 2, order 6: 337 000 terms), while
    the summary needs only their number, and a substitution of numbers works
    on the polynomials.  So ``F[n]`` converts ``F_n`` on first access (and
    keeps it); :meth:`term_counts` and :meth:`free_symbols` read the
    polynomials.  Otherwise a tuple of :class:`CoefficientMatrix`: equal to
    the tuple of its matrices, hashable, and pickled as that tuple.

    Examples
    --------
    >>> from symattn.expand import expand
    >>> from symattn.model import Architecture
    >>> from symattn.normalizers import Normalizer
    >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3, normalizer=Normalizer.generic(1))
    >>> lazy = F.coefficients
    >>> isinstance(lazy, LazyCoefficients), lazy.converted
    (True, 0)
    >>> lazy.term_counts(2), lazy.converted
    ((2, 6), 0)
    >>> lazy[2] == F[2], lazy.converted, len(lazy)
    (True, 1, 3)
    >>> lazy == tuple(F)
    True
    """

    def __init__(self, symbols, raw: np.ndarray):
        self.symbols = tuple(symbols)
        self.raw = raw
        self._matrices = [None] * raw.shape[2]
        self._convert = FlintToSympy(self.symbols)

    def __len__(self) -> int:
        return len(self._matrices)

    def __getitem__(self, n):
        if isinstance(n, slice):
            return tuple(self[i] for i in range(*n.indices(len(self))))
        n = range(len(self))[n]  # negative indices; IndexError past the end
        if self._matrices[n] is None:
            rows, cols = self.raw.shape[:2]
            self._matrices[n] = CoefficientMatrix(rows, cols, [self._convert(self.raw[r, c, n])
                                                               for r in range(rows) for c in range(cols)])
        return self._matrices[n]

    @property
    def converted(self) -> int:
        """How many coefficients have been written as sympy matrices so far."""
        return sum(m is not None for m in self._matrices)

    def term_counts(self, n: int) -> tuple[int, int]:
        """``(nonzero entries, terms)`` of ``F_n``, from the polynomials (no sympy)."""
        polys = self.raw[:, :, n].ravel()
        return sum(1 for q in polys if q != 0), sum(len(q) if hasattr(q, "monoms") else int(q != 0) for q in polys)

    def free_symbols(self) -> set:
        """The symbols of positive degree in some entry, from the polynomials (no sympy)."""
        found = set()
        for q in self.raw.ravel():
            if hasattr(q, "degrees"):
                found.update(s for s, d in zip(self.symbols, q.degrees()) if d > 0)
        return found

    def __eq__(self, other):
        if isinstance(other, (tuple, list, LazyCoefficients)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self):
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LazyCoefficients(F_0..F_{len(self) - 1}, {self.converted} written as sympy)"

    def __reduce__(self):
        return (tuple, (tuple(self),))  # python-flint polynomials do not pickle
