"""Arithmetic domains on which the single forward pass of :mod:`symattn.model` runs.

A domain knows how to build matrices from exact data, multiply and transpose
them, and apply column normalization ``S(A)`` with a normalizer.  The forward
pass calls nothing else, so the same code computes closed forms (sympy,
symengine), certified values (rationals, GF(p)), numerics (float64, mpmath),
and, through :mod:`symattn.algebra.modseries`, truncated power series and jets.

Examples
--------
>>> from symattn.algebra.domains import RationalDomain
>>> from symattn.normalizers import Normalizer
>>> QQ = RationalDomain()
>>> A = QQ.matrix([[0, 1], [1, 0]])
>>> QQ.attention(A, Normalizer("1 + x**2"))
array([[Fraction(1, 3), Fraction(2, 3)],
       [Fraction(2, 3), Fraction(1, 3)]], dtype=object)
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import sympy as sp

from ..errors import DomainError

__all__ = [
    "Domain",
    "SympyDomain",
    "SymEngineDomain",
    "RationalDomain",
    "PrimeFieldDomain",
    "FloatDomain",
    "MpmathDomain",
    "ConstantField",
    "constant_residue",
]


class Domain:
    """The interface of a domain: matrices, products, and column normalization.

    Subclasses implement :meth:`convert`, :meth:`apply_normalizer`,
    :meth:`reciprocal`; matrices are 2-d numpy object arrays unless a
    subclass says otherwise.

    Examples
    --------
    A domain of exact sympy rationals in a few lines; :func:`symattn.model.forward`
    then runs on it unchanged.

    >>> import sympy as sp
    >>> from symattn.normalizers import Normalizer
    >>> class Rationals(Domain):
    ...     name = "sympy rationals"
    ...     def convert(self, value):
    ...         return sp.Rational(value)
    ...     def normalizer_value(self, normalizer, value):
    ...         return normalizer.evaluate(value)
    >>> D = Rationals()
    >>> D.attention(D.matrix([[0, 1], [2, 0]]), Normalizer("1 + x**2"))
    array([[1/6, 2/3],
           [5/6, 1/3]], dtype=object)
    >>> from symattn.model import Architecture, forward
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2")
    >>> forward(arch, arch.parameters_from([[[1]]], [[[1]]], [[[1]]]), [[0, 1]], D)
    array([[1/2, 2/3]], dtype=object)
    """

    name = "domain"

    def convert(self, value):
        """An element of the domain from an int, Fraction or sympy number."""
        raise NotImplementedError

    def matrix(self, rows) -> np.ndarray:
        """A matrix from nested lists (or a sympy Matrix / numpy array) of numbers."""
        if isinstance(rows, sp.MatrixBase):
            rows = rows.tolist()
        rows = [list(r) for r in rows]
        return np.array([[self.convert(v) for v in r] for r in rows], dtype=object).reshape(
            len(rows), len(rows[0]) if rows else 0
        )

    def shape(self, a) -> tuple[int, int]:
        return a.shape[0], a.shape[1]

    def ones(self, rows: int, cols: int):
        """The constant all-ones matrix (``b 1^T`` adds a bias ``b`` to every token).

        Examples
        --------
        >>> RationalDomain().ones(1, 2)
        array([[Fraction(1, 1), Fraction(1, 1)]], dtype=object)
        """
        return self.matrix([[1] * cols for _ in range(rows)])

    def matmul(self, a, b):
        return a.dot(b)

    def transpose(self, a):
        return a.T

    def apply_normalizer(self, a, normalizer):
        """``s`` applied entrywise."""
        out = np.empty(a.shape, dtype=object)
        for index, value in np.ndenumerate(a):
            out[index] = self.normalizer_value(normalizer, value)
        return out

    def normalizer_value(self, normalizer, value):
        raise NotImplementedError

    def reciprocal(self, value):
        return 1 / value

    def add(self, a, b):
        """The sum of two matrices of the same shape (heads, residual streams)."""
        return a + b

    def causal_mask(self, a):
        """``a`` with the entries below the diagonal (key ``j`` after query ``k``) set to exact zeros.

        Examples
        --------
        >>> RationalDomain().causal_mask(RationalDomain().matrix([[1, 2], [3, 4]]))
        array([[Fraction(1, 1), Fraction(2, 1)],
               [Fraction(0, 1), Fraction(4, 1)]], dtype=object)
        """
        out = a.copy()
        rows, cols = np.tril_indices(out.shape[0], -1, out.shape[1])
        for r, c in zip(rows, cols):
            out[r, c] = self.convert(0)
        return out

    def attention(self, scores, normalizer, causal: bool = False):
        """Column normalization ``S(A)``: every column of the result sums to 1.

        With ``causal``, column ``k`` is normalized over the keys ``j <= k``
        and the entries ``j > k`` are exact zeros.
        """
        weights = self.apply_normalizer(scores, normalizer)
        if causal:
            weights = self.causal_mask(weights)
        totals = weights.sum(axis=0)
        inverse = np.array([self.reciprocal(v) for v in totals], dtype=object)
        return weights * inverse[None, :]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SympyDomain(Domain):
    """Sympy expressions: closed forms and LaTeX.

    Parameters
    ----------
    unevaluated_normalizer : bool
        Write ``s(a)`` with an undefined function ``s`` instead of its expression.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> import sympy as sp
    >>> a = sp.Symbol("a")
    >>> SympyDomain(unevaluated_normalizer=True).normalizer_value(Normalizer("exp(x)"), a)
    s(a)
    """

    name = "sympy"

    def __init__(self, unevaluated_normalizer: bool = False):
        self.unevaluated_normalizer = unevaluated_normalizer

    def convert(self, value):
        return sp.sympify(value, strict=True)

    def normalizer_value(self, normalizer, value):
        if self.unevaluated_normalizer or normalizer.is_generic:
            return normalizer.function()(value)
        return normalizer.evaluate(value)

    def reciprocal(self, value):
        return 1 / value

    def to_matrix(self, a) -> sp.Matrix:
        return sp.Matrix(a.tolist())


class SymEngineDomain(Domain):
    """Symengine expressions: the same closed forms, built faster.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> D = SymEngineDomain()
    >>> D.normalizer_value(Normalizer("1 + x**2"), D.convert(3))
    10
    """

    name = "symengine"

    def __init__(self, unevaluated_normalizer: bool = False):
        import symengine

        self._se = symengine
        self.unevaluated_normalizer = unevaluated_normalizer
        self._cache: dict = {}

    def convert(self, value):
        return self._se.sympify(value)

    def normalizer_value(self, normalizer, value):
        se = self._se
        if self.unevaluated_normalizer or normalizer.is_generic:
            return se.Function("s")(value)
        key = id(normalizer)
        if key not in self._cache:
            variable = sp.Symbol("x")  # symengine keeps no assumptions: a plain symbol to substitute
            self._cache[key] = (se.Symbol("x"), se.sympify(normalizer.evaluate(variable)))
        symbol, expr = self._cache[key]
        return expr.subs({symbol: value})

    def to_matrix(self, a) -> sp.Matrix:
        matrix = sp.Matrix([[sp.sympify(v, strict=True) for v in row] for row in a.tolist()])
        # symengine keeps no assumptions: restore the real symbols of the architecture
        real = {s: sp.Symbol(s.name, real=True) for s in matrix.free_symbols if isinstance(s, sp.Symbol)}
        return matrix.xreplace(real)


class RationalDomain(Domain):
    """Exact rationals (``fractions.Fraction``); normalizers must be polynomials.

    Examples
    --------
    >>> RationalDomain().convert("3/4")
    Fraction(3, 4)
    """

    name = "QQ"

    def convert(self, value):
        if isinstance(value, sp.Basic):
            value = sp.nsimplify(value) if not value.is_Rational else value
            if not value.is_Rational:
                raise DomainError(f"{value} is not a rational number")
            return Fraction(int(value.p), int(value.q))
        return Fraction(value)

    def normalizer_value(self, normalizer, value):
        coefficients = _polynomial_coefficients(normalizer, self.name)
        out = Fraction(0)
        for c in reversed(coefficients):
            out = out * value + Fraction(int(c.p), int(c.q))
        return out


def _polynomial_coefficients(normalizer, domain_name: str):
    if not normalizer.is_polynomial:
        raise DomainError(
            f"normalizer {normalizer.name} cannot be evaluated exactly over {domain_name}: "
            "only polynomial normalizers can; use truncated series along a collapse curve, "
            "mpmath, or a polynomial normalizer such as 1 + x**2"
        )
    coefficients = normalizer.polynomial_coefficients
    if not all(c.is_Rational for c in coefficients):
        raise DomainError(f"normalizer {normalizer.name} has irrational coefficients")
    return coefficients


def is_prime(n: int) -> bool:
    """Deterministic primality for 64-bit integers (Miller-Rabin).

    Examples
    --------
    >>> is_prime(268435399), is_prime(268435400)
    (True, False)
    """
    if n < 2:
        return False
    for q in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % q == 0:
            return n == q
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        y = pow(a, d, n)
        if y in (1, n - 1):
            continue
        for _ in range(r - 1):
            y = y * y % n
            if y == n - 1:
                break
        else:
            return False
    return True


class PrimeFieldDomain(Domain):
    """The prime field GF(p) through python-flint's ``nmod``; polynomial normalizers.

    Examples
    --------
    >>> F = PrimeFieldDomain(7)
    >>> F.convert("1/2")
    4
    """

    name = "GF(p)"

    def __init__(self, p: int):
        if not isinstance(p, int) or not is_prime(p):
            raise DomainError(f"GF(p) needs a prime p, got {p!r}")
        import flint

        self.p = p
        self._nmod = flint.nmod
        self.name = f"GF({p})"

    def convert(self, value):
        value = sp.Rational(value) if not isinstance(value, sp.Basic) else value
        if not value.is_Rational:
            raise DomainError(f"{value} is not rational, so it has no image in GF({self.p})")
        if int(value.q) % self.p == 0:
            raise DomainError(f"{value} has a denominator divisible by {self.p}")
        return self._nmod(int(value.p), self.p) / self._nmod(int(value.q), self.p)

    def normalizer_value(self, normalizer, value):
        coefficients = _polynomial_coefficients(normalizer, self.name)
        out = self._nmod(0, self.p)
        for c in reversed(coefficients):
            out = out * value + self.convert(c)
        return out

    def reciprocal(self, value):
        if int(value) == 0:
            raise ZeroDivisionError(f"a column of s(A) sums to 0 mod {self.p}")
        return 1 / value


class FloatDomain(Domain):
    """float64 numbers (numerical estimates only).

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> FloatDomain().normalizer_value(Normalizer("exp(x)"), 0.0)
    1.0
    """

    name = "float64"

    def convert(self, value):
        return float(value)

    def normalizer_value(self, normalizer, value):
        return float(normalizer.numeric_float(value))


class MpmathDomain(Domain):
    """mpmath multiprecision reals at a chosen number of decimal digits.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> D = MpmathDomain(dps=30)
    >>> import mpmath
    >>> mpmath.nstr(D.normalizer_value(Normalizer("exp(x)"), D.convert(1)), 25)
    '2.718281828459045235360287'
    """

    def __init__(self, dps: int = 50):
        import mpmath

        self._mp = mpmath.mp.clone() if hasattr(mpmath.mp, "clone") else mpmath.mp
        self.dps = dps
        self.name = f"mpmath({dps} digits)"
        self._mpmath = mpmath

    def convert(self, value):
        with self._mpmath.workdps(self.dps):
            if isinstance(value, sp.Basic):
                return self._mpmath.mpf(sp.N(value, self.dps + 5))
            if isinstance(value, Fraction):
                return self._mpmath.mpf(value.numerator) / value.denominator
            return self._mpmath.mpf(value)

    def normalizer_value(self, normalizer, value):
        with self._mpmath.workdps(self.dps):
            return normalizer.numeric(value)

    def attention(self, scores, normalizer, causal: bool = False):
        with self._mpmath.workdps(self.dps):
            return super().attention(scores, normalizer, causal)

    def matmul(self, a, b):
        with self._mpmath.workdps(self.dps):
            return a.dot(b)

    def add(self, a, b):
        with self._mpmath.workdps(self.dps):
            return a + b


# ---------------------------------------------------------------------------------------
# the constants of Taylor coefficients: Q(theta)(g) and its images in GF(p)
# ---------------------------------------------------------------------------------------
#: Distinct algebraic irrationalities (``sqrt(2)``, ``3**(1/3)``) a field may be generated by, and the
#: largest degree of its primitive element: beyond them sympy's primitive elements take seconds.
MAX_ALGEBRAIC_GENERATORS = 3
MAX_FIELD_DEGREE = 12


def _is_transcendental_atom(atom) -> bool:
    """Whether ``atom`` is a number known to be transcendental: pi, e, exp(a), log(a) for algebraic a.

    Lindemann-Weierstrass: ``exp(a)`` for algebraic ``a != 0`` and ``log(a)`` for algebraic
    ``a > 0, a != 1`` are transcendental.
    """
    if atom in (sp.pi, sp.E):
        return True
    if atom.is_Pow and atom.exp.is_Rational and atom.exp != 0 and _is_transcendental_atom(atom.base):
        return True  # pi^(1/2) (gelu's Taylor coefficients): an algebraic pi^r would make pi algebraic
    if isinstance(atom, (sp.exp, sp.log)) and len(atom.args) == 1:
        (argument,) = atom.args
        try:
            algebraic, transcendental, unknown = _constant_atoms(argument)
        except RecursionError:
            return False
        if transcendental or unknown or argument.free_symbols:
            return False
        if isinstance(atom, sp.exp):
            return argument != 0
        return argument.is_positive is True and argument != 1
    return False


def _constant_atoms(value) -> tuple[set, set, set]:
    """``(algebraic, transcendental, unknown)`` atoms of an exact real constant.

    Algebraic atoms are real radicals ``b**(1/q)`` (``b > 0`` algebraic) and
    ``sin``, ``cos``, ``tan`` of rational multiples of pi; transcendental
    atoms those of :func:`_is_transcendental_atom`; anything else (``sin(1)``,
    ``2**pi``, a complex root) is unknown.
    """
    algebraic, transcendental, unknown = set(), set(), set()
    stack = [value]
    while stack:
        e = stack.pop()
        if e.is_Rational:
            continue
        if e.is_Add or e.is_Mul:
            stack.extend(e.args)
        elif e.is_Pow and e.exp.is_Integer:
            stack.append(e.base)
        elif e.is_Pow and e.exp.is_Rational:
            root = sp.Pow(e.base, sp.Rational(1, e.exp.q))
            if _is_transcendental_atom(root):
                transcendental.add(root)
            elif root.is_Pow and root.exp == sp.Rational(1, e.exp.q):
                inner = _constant_atoms(root.base)
                if inner[1] or inner[2] or root.base.is_positive is not True:
                    unknown.add(e)
                else:
                    algebraic.add(root)
                    algebraic |= inner[0]
            else:
                stack.append(root)
        elif isinstance(e, (sp.sin, sp.cos, sp.tan)) and (e.args[0] / sp.pi).is_Rational:
            algebraic.add(e)
        elif _is_transcendental_atom(e):
            transcendental.add(e)
        else:
            unknown.add(e)
    return algebraic, transcendental, unknown


def _exp_argument(atom):
    """``c`` when ``atom`` is ``exp(c)`` (``E`` is ``exp(1)``); else None."""
    if atom == sp.E:
        return sp.Integer(1)
    if isinstance(atom, sp.exp):
        return atom.args[0]
    return None


class ConstantField:
    """The field ``Q(theta)(g)`` of the Taylor coefficients of some normalizers, and its maps to GF(p).

    ``theta`` is a primitive element of the algebraic numbers among the
    coefficients (``sqrt(3)``; ``sqrt(2) + sqrt(3)`` for ``sqrt(2)``,
    ``sqrt(3)``, ``sqrt(6)``), with integer minimal polynomial ``f``; ``g``
    one transcendental constant (``pi``, ``log(2)``; ``e`` also stands for
    ``exp(q)``, ``q`` rational, through ``exp(1/L)``).  At a prime ``p``
    not dividing the leading coefficient and the discriminant of ``f``, a
    root ``r`` of ``f`` mod ``p`` defines a ring homomorphism from
    ``Z[theta]`` localized at a degree-1 prime above ``p`` onto GF(p),
    ``theta -> r``; with ``g`` sent to a random residue (``g`` is
    transcendental over ``Q(theta)``) it maps every computation over
    ``Q(theta)[g]`` to one over GF(p), so that a nonzero minor mod ``p`` is
    a nonzero minor over ``Q(theta)(g)``, and so at the real ``theta`` and
    ``g``.

    Parameters
    ----------
    values : iterable of sympy numbers
        The Taylor coefficients (and, for polynomials, the coefficients).

    Raises
    ------
    DomainError
        For a constant of unknown nature (``sin(1)``), two transcendental
        constants whose independence is not known (``pi`` and ``e``), or a
        field beyond :data:`MAX_ALGEBRAIC_GENERATORS` generators or degree
        :data:`MAX_FIELD_DEGREE`.

    Examples
    --------
    >>> import sympy as sp
    >>> field = ConstantField([sp.Integer(1), -sp.sqrt(3), sp.pi / 2])
    >>> field.theta, field.minimal_polynomial, field.transcendental
    (sqrt(3), y**2 - 3, pi)
    >>> field.root(268435399) is None, field.root(268435367)       # 3 is a square mod the second only
    (True, 65814668)
    >>> field.primes((268435399, 268435367))
    (268435367, 268435331)
    >>> ConstantField([sp.pi + sp.E])
    Traceback (most recent call last):
    ...
    symattn.errors.DomainError: the transcendental constants E and pi are not powers of one constant: whether they are algebraically independent is not known (or they are related), and a computation over GF(p) would treat them as independent; the exact engine takes one transcendental constant (pi, e, log 2, ...; exp(q), q rational, count as powers of e) besides algebraic numbers
    """

    def __init__(self, values, theta=None):
        algebraic, transcendental, unknown = set(), set(), set()
        for value in values:
            value = sp.sympify(value, strict=True)
            if value.is_Rational or value.free_symbols:
                continue
            a, t, u = _constant_atoms(value)
            algebraic |= a
            transcendental |= t
            unknown |= u
        if unknown:
            shown = ", ".join(sorted(str(u) for u in unknown)[:3])
            raise DomainError(
                f"the constant(s) {shown}: not rational, not real algebraic numbers symattn recognizes (radicals, "
                "cos and sin of rational multiples of pi), not a transcendental constant it knows (pi, e, exp(a), "
                "log(a), a algebraic), so no image in GF(p)")
        self.transcendental = self._generator(transcendental)
        self.generators = tuple(sorted(algebraic, key=sp.default_sort_key))
        self.theta = None
        self.minimal_polynomial = None
        self.degree = 1
        self._representations: dict = {}
        if theta is not None:  # the field of a primitive element chosen before
            self.generators = (theta,)
        if self.generators:
            self._set_theta()

    @staticmethod
    def _generator(transcendental):
        if not transcendental:
            return None
        if len(transcendental) == 1:
            return next(iter(transcendental))
        arguments = sorted((_exp_argument(t) for t in transcendental), key=sp.default_sort_key)
        if all(c is not None for c in arguments):
            # exp(c_i) with rational ratios c_i = q_i c: powers of the one constant exp(c / L)
            base = sp.Integer(1) if arguments[0].is_Rational else arguments[0]
            ratios = [c / base for c in arguments]
            if all(q.is_Rational for q in ratios):
                return sp.exp(base / math.lcm(*(int(q.q) for q in ratios)))
        # exp(q), q rational, are powers of e: name the others
        shown = sorted({"E" if (_exp_argument(t) is not None and _exp_argument(t).is_Rational) else str(t)
                        for t in transcendental})
        raise DomainError(
            f"the transcendental constants {' and '.join(shown[:3])} are not powers of one constant: whether "
            "they are algebraically independent is not known (or they are related), and a computation over "
            "GF(p) would treat them as independent; the exact engine takes one transcendental constant (pi, e, "
            "log 2, ...; exp(q), q rational, count as powers of e) besides algebraic numbers")

    def _set_theta(self):
        if len(self.generators) > MAX_ALGEBRAIC_GENERATORS:
            raise DomainError(
                f"the Taylor coefficients have {len(self.generators)} algebraic irrationalities "
                f"({', '.join(map(str, self.generators[:5]))}); the exact engine takes at most "
                f"{MAX_ALGEBRAIC_GENERATORS}")
        y = sp.Symbol("y")
        if len(self.generators) == 1:
            (theta,) = self.generators
            minimal = sp.minimal_polynomial(theta, y, polys=True)
        else:
            minimal, weights = sp.primitive_element(list(self.generators), y, polys=True)
            theta = sp.Add(*(w * g for w, g in zip(weights, self.generators)))
        minimal = sp.Poly(minimal, y, domain=sp.ZZ).primitive()[1]
        self.degree = minimal.degree()
        if minimal.degree() > MAX_FIELD_DEGREE:
            raise DomainError(
                f"the algebraic numbers {', '.join(map(str, self.generators))} generate a field of degree "
                f"{minimal.degree()}; the exact engine takes degree at most {MAX_FIELD_DEGREE}")
        self.theta = theta
        self.minimal_polynomial = minimal.as_expr()
        self._coefficients = [int(c) for c in reversed(minimal.all_coeffs())]  # lowest first
        self._discriminant = int(sp.discriminant(minimal)) if minimal.degree() > 1 else 1
        for g in self.generators:
            self.representation(g)

    def representation(self, atom) -> tuple:
        """``atom`` as a polynomial in ``theta`` over Q: its coefficients, lowest first (Fractions).

        Examples
        --------
        >>> import sympy as sp
        >>> ConstantField([sp.sqrt(2), sp.sqrt(3)]).representation(sp.sqrt(6))
        (Fraction(-5, 2), Fraction(0, 1), Fraction(1, 2), Fraction(0, 1))
        """
        if atom not in self._representations:
            if self.theta is None:
                raise DomainError(f"{atom} is irrational and the Taylor coefficients have no algebraic numbers")
            try:
                element = sp.to_number_field(atom, self.theta)
            except (sp.polys.polyerrors.IsomorphismFailed, sp.polys.polyerrors.NotAlgebraic):
                raise DomainError(f"{atom} is not in Q({self.theta}), the field of the Taylor coefficients "
                                  "of degree up to 8; a normalizer whose later coefficients need other "
                                  "algebraic numbers is not supported") from None
            coefficients = [Fraction(int(c.p), int(c.q)) for c in reversed(element.coeffs())]
            self._representations[atom] = tuple(coefficients + [Fraction(0)] * (
                self.degree - len(coefficients)))
        return self._representations[atom]

    def root(self, p: int):
        """The least root of the minimal polynomial mod ``p``, or None when ``p`` is not usable.

        Not usable: ``p`` divides the leading coefficient or the discriminant,
        a denominator of a generator's representation, or the polynomial has
        no root mod ``p``.  None without algebraic numbers.
        """
        if self.theta is None:
            return None
        if self._coefficients[-1] % p == 0 or self._discriminant % p == 0:
            return None
        if any(c.denominator % p == 0 for g in self.generators for c in self._representations[g]):
            return None
        import flint

        roots = flint.nmod_poly(self._coefficients, p).roots()
        return min(int(r) for r, _ in roots) if roots else None

    def usable(self, p: int) -> bool:
        """Whether GF(p) receives the field: always without algebraic numbers."""
        return self.theta is None or self.root(p) is not None

    def primes(self, requested) -> tuple:
        """The requested primes, each one ``p`` without a root replaced by the largest usable prime below it.

        Distinct primes, in the order of ``requested``.
        """
        out: list = []
        for p in requested:
            q = int(p)
            while not (self.usable(q) and q not in out):
                q -= 1
                while q > 1000 and not is_prime(q):
                    q -= 1
                if q <= 1000:
                    raise DomainError(f"no prime between 1000 and {p} has a root of {self.minimal_polynomial}")
            out.append(q)
        return tuple(out)

    def residues(self, p: int) -> dict:
        """``{theta: r}`` for GF(p) (empty without algebraic numbers); a DomainError when ``p`` has no root."""
        if self.theta is None:
            return {}
        r = self.root(p)
        if r is None:
            raise DomainError(
                f"{self.theta} has no image in GF({p}): its minimal polynomial {self.minimal_polynomial} "
                f"has no root mod {p} (or {p} divides its discriminant or leading coefficient); choose the "
                "primes with symattn.jacobian.field_primes")
        return {self.theta: r}

    def describe(self, primes) -> str:
        """What the map to GF(p) does, for the method text of a result ('' for rational coefficients)."""
        parts = []
        if self.theta is not None:
            f = self.minimal_polynomial
            roots = ", ".join(f"{self.root(int(p))} mod {int(p)}" for p in primes)
            parts.append(
                f"{self.theta} mapped to a root of its minimal polynomial {f} ({roots}; the primes are chosen "
                f"where {f} has a root): a ring homomorphism from Z[{self.theta}] localized at a degree-1 prime "
                f"above p onto GF(p), so a nonzero minor mod p is nonzero in Q({self.theta}), and so at the real "
                f"{self.theta}")
        if self.transcendental is not None:
            parts.append(
                f"{self.transcendental} treated as an indeterminate (it is transcendental"
                + (f" over Q({self.theta})" if self.theta is not None else "")
                + ") specialized at a random residue: a nonzero result there is nonzero at the real constant")
        return "; ".join(parts)


@functools.lru_cache(maxsize=64)
def _field_of(theta) -> ConstantField:
    """The field ``Q(theta)`` of a primitive element (once per element: minimal polynomial, discriminant)."""
    return ConstantField([theta], theta=theta)


def constant_residue(value, p: int, table: dict, field: ConstantField | None = None, cache=None) -> int:
    """The image in GF(p) of an exact constant of ``Q(theta)(g)`` under the map of :class:`ConstantField`.

    ``table`` maps symbols and constants to residues (``theta -> r``, ``g``
    to a random residue, ``c_j`` of generic normalizers); the expression is
    evaluated by the ring operations, each radical through its
    representation in ``theta``, each ``exp(q)`` as a power of the
    transcendental generator.

    Examples
    --------
    >>> import sympy as sp
    >>> r = 65814668                          # a root of y**2 - 3 mod 268435367
    >>> constant_residue(sp.sqrt(3) / 2 + sp.sqrt(12), 268435367, {sp.sqrt(3): r}) == r * 5 * pow(2, -1, 268435367) % 268435367
    True
    """
    cache = {} if cache is None else cache

    def rational(q) -> int:
        if int(q.q) % p == 0:
            raise DomainError(f"{q} has a denominator divisible by {p}")
        return int(q.p) * pow(int(q.q), -1, p) % p

    def inverse(r: int, of) -> int:
        if r % p == 0:
            raise DomainError(f"{of} maps to 0 in GF({p}) and has no inverse there: choose another seed or prime")
        return pow(r, -1, p)

    def theta_field():
        nonlocal field
        if field is None:
            algebraic = [k for k in table if not isinstance(k, sp.Symbol) and not _is_transcendental_atom(k)]
            if len(algebraic) != 1:
                return None, None
            field = _field_of(algebraic[0])
        return field, table.get(field.theta)

    def generator():
        for k, v in table.items():
            if not isinstance(k, sp.Symbol) and _is_transcendental_atom(k):
                return k, int(v)
        return None, None

    def ev(e) -> int:
        if e in table:
            return int(table[e]) % p
        if e.is_Rational:
            return rational(e)
        if e in cache:
            return cache[e]
        if e.is_Add:
            out = sum(ev(a) for a in e.args) % p
        elif e.is_Mul:
            out = 1
            for a in e.args:
                out = out * ev(a) % p
        elif e.is_Pow and e.exp.is_Integer:
            base = ev(e.base)
            n = int(e.exp)
            out = pow(base if n >= 0 else inverse(base, e.base), abs(n), p)
        elif e.is_Pow and e.exp.is_Rational and not (
                (root := sp.Pow(e.base, sp.Rational(1, e.exp.q))).is_Pow and root.exp == sp.Rational(1, e.exp.q)
                and root == e):
            base = ev(root)
            n = int(e.exp.p)
            out = pow(base if n >= 0 else inverse(base, root), abs(n), p)
        elif _exp_argument(e) is not None and generator()[0] is not None and \
                _exp_argument(generator()[0]) is not None and (_exp_argument(e) / _exp_argument(generator()[0])).is_Integer:
            g, residue = generator()  # exp(n c) = exp(c)^n
            n = int(_exp_argument(e) / _exp_argument(g))
            out = pow(residue if n >= 0 else inverse(residue, g), abs(n), p)
        elif _is_transcendental_atom(e):
            raise DomainError(f"{e} is a transcendental constant with no residue here (the exact engine gives one "
                              f"transcendental constant a random residue: {generator()[0]})")
        else:
            known, r = theta_field()
            if known is None or r is None:
                raise DomainError(
                    f"{e} is not rational, so it has no image in GF({p}); the exact engine takes Taylor "
                    "coefficients in a field Q(theta)(g), theta algebraic and g one transcendental constant, "
                    "with theta given a root of its minimal polynomial mod p")
            out = 0
            for c in reversed(known.representation(e)):
                out = (out * int(r) + rational(sp.Rational(c.numerator, c.denominator))) % p
        cache[e] = out
        return out

    return ev(sp.sympify(value, strict=True))
