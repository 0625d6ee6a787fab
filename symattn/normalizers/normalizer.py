"""The :class:`Normalizer`: Taylor data of ``s/s(0)``, its first nonconstant degree ``k``, parity, evaluation.

A normalizer is built from a preset, an expression (read and checked by
:mod:`symattn.normalizers.presets` and :mod:`symattn.normalizers.checks`) or
generic Taylor data ``1 + c_k x^k + ...``; :class:`Lightning` is HMK's
lightning attention, the comparison case without normalization.  Its Taylor
coefficients come from :mod:`symattn.normalizers.taylor` (over Q), else
:mod:`symattn.normalizers.irrational` (exact, with irrational constants),
else sympy's ``series``.
"""

from __future__ import annotations

from functools import cached_property

import sympy as sp

from ..errors import NormalizerError
from ..languages import PRESET_SUMMARY
from ..positivity import CONSTANT_MAGNITUDE_BITS, ConstantTooLarge
from .checks import check_normalizer
from .irrational import _MAX_CONSTANT_TERMS, _exact_taylor, _NotExact, _TooComplex
from .presets import PRESETS, _generic_name, _parse, x
from .taylor import _NotRational, _rational_taylor

__all__ = ["Normalizer", "as_normalizer", "normalizers_per_layer"]


class Normalizer:
    """A positive, nonconstant, real-analytic normalizer, or generic Taylor data.

    Parameters
    ----------
    expression : str or sympy expression
        A function of ``x`` (another single symbol is renamed to ``x``).
    name : str, optional
        Display name; defaults to the expression.
    assume_positive : bool
        Accept the normalizer when positivity on R cannot be decided.

    Raises
    ------
    NormalizerError
        For an expression that does not parse, has several free symbols, is
        constant, is not real-analytic on R, or is not positive on R.

    Examples
    --------
    >>> Normalizer("1 + x**2").k
    2
    >>> Normalizer("1 + x**3")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: normalizer 1 + x**3 is not positive on R: at x = -2 it equals -7
    >>> Normalizer("Abs(x) + 1")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: normalizer Abs(x) + 1 is not real-analytic: it uses Abs; use a smooth expression such as exp(x), cosh(x) or 1 + x**2
    """

    #: Whether this is HMK's lightning attention (no normalization).
    is_lightning = False

    def __init__(self, expression, name: str | None = None, assume_positive: bool = False):
        self.expr = _parse(expression)
        self.name = name or (expression.strip() if isinstance(expression, str) else str(self.expr))
        self.is_generic = False
        self._symbols: dict[int, sp.Symbol] = {}
        check_normalizer(self.expr, self.name, assume_positive)
        self._taylor: list = []

    # -- construction -------------------------------------------------------------
    @classmethod
    def preset(cls, name: str) -> "Normalizer":
        """A named normalizer of :data:`symattn.languages.NORMALIZER_PRESETS`.

        softmax (= exp), cosh, quadratic, gauss, softplus, sigmoid, lightning
        (:meth:`lightning`) and generic(k[, even]) (:meth:`generic`).

        Examples
        --------
        >>> Normalizer.preset("gauss").expr
        exp(x**2)
        >>> Normalizer.preset("lightning").is_lightning, Normalizer.preset("generic(2, even)").name
        (True, 'generic(k=2, even)')
        """
        key = name.strip().lower() if isinstance(name, str) else None
        if key == "lightning":
            return Lightning()
        generic = _generic_name(key) if key is not None else None
        if generic is not None:
            return cls.generic(*generic)
        if key not in PRESETS:
            raise NormalizerError(f"unknown normalizer preset {name!r:.80}; presets are {PRESET_SUMMARY}")
        norm = cls.__new__(cls)
        norm.expr = PRESETS[key]
        norm.name = key
        norm.is_generic = False
        norm._symbols = {}
        norm._taylor = []
        return norm

    @classmethod
    def lightning(cls) -> "Normalizer":
        """HMK's lightning attention (no normalization), a comparison case."""
        return Lightning()

    @classmethod
    def generic(cls, k: int = 1, even: bool = False) -> "Normalizer":
        """Generic Taylor data ``1 + c_k x^k + c_{k+1} x^{k+1} + ...`` with ``c_k != 0``.

        Examples
        --------
        >>> g = Normalizer.generic(k=1)
        >>> g.taylor(3)
        [1, c_1, c_2, c_3]
        >>> g.taylor(1)[1].is_nonzero
        True
        """
        if not isinstance(k, int) or k < 1:
            raise NormalizerError(f"first nonconstant degree k must be a positive integer, got {k!r}")
        if even and k % 2:
            raise NormalizerError(f"an even normalizer has even k, got k = {k}")
        norm = cls.__new__(cls)
        norm.expr = None
        norm.name = f"generic(k={k}{', even' if even else ''})"
        norm.is_generic = True
        norm._generic_k = k
        norm._generic_even = bool(even)
        norm._symbols = {}
        norm._taylor = []
        return norm


    # -- Taylor data --------------------------------------------------------------
    def coefficient_symbol(self, degree: int) -> sp.Symbol:
        """The symbol ``c_degree`` of a generic normalizer."""
        if degree not in self._symbols:
            nonzero = degree == getattr(self, "_generic_k", None)
            self._symbols[degree] = sp.Symbol(f"c_{degree}", real=True, nonzero=nonzero or None)
        return self._symbols[degree]

    def taylor(self, degree: int) -> list:
        """Taylor coefficients of ``s/s(0)`` at 0 for degrees ``0..degree``.

        Exact: sympy Rationals when they are rational, symbols ``c_j`` for a
        generic normalizer, exact sympy numbers otherwise.

        Examples
        --------
        >>> Normalizer.preset("sigmoid").taylor(3)
        [1, 1/2, 0, -1/24]
        """
        if degree < 0:
            raise NormalizerError(f"Taylor degree must be >= 0, got {degree}")
        if len(self._taylor) <= degree:
            self._taylor = self._compute_taylor(max(degree + 1, 2 * len(self._taylor)))
        return self._taylor[: degree + 1]

    def _compute_taylor(self, n: int) -> list:
        if self.is_generic:
            k, even = self._generic_k, self._generic_even
            out = [sp.Integer(1)]
            for m in range(1, n):
                if m < k or (even and m % 2):
                    out.append(sp.Integer(0))
                else:
                    out.append(self.coefficient_symbol(m))
            return out
        try:
            coeffs = _rational_taylor(self.expr, n)
            return [sp.Rational(c.numerator, c.denominator) / sp.Rational(
                coeffs[0].numerator, coeffs[0].denominator) for c in coeffs]
        except _NotRational:
            pass
        try:  # irrational constants: the same series arithmetic over polynomials in the constants
            coefficients = _exact_taylor(self.expr, n)
        except ConstantTooLarge as err:
            raise NormalizerError(
                f"normalizer {self.name}: its Taylor coefficients at 0 need {err.name} of a number beyond "
                f"2**{CONSTANT_MAGNITUDE_BITS}, which cannot be evaluated (sympy evaluates such constants even "
                f"to print them); arguments of exp, sin, cos, tan, sinh, cosh, tanh up to "
                f"2**{CONSTANT_MAGNITUDE_BITS} are accepted") from None
        except _TooComplex:
            raise NormalizerError(
                f"normalizer {self.name}: its Taylor coefficients at 0 (degree {n - 1}) are too large to compute "
                f"exactly: polynomials of more than {_MAX_CONSTANT_TERMS} terms in its constants; use a normalizer "
                "with simpler constants, or Normalizer.generic(k)") from None
        except _NotExact:
            # a function without a series rule (from a sympy expression): sympy's series, on an
            # expression the size limits keep small (at most 3 nested functions)
            series = sp.series(self.expr, x, 0, n).removeO()
            poly = sp.Poly(series, x)
            raw = [poly.coeff_monomial(x**m) for m in range(n)]
            coefficients = [sp.simplify(c / raw[0]) for c in raw]
        if any(c.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or c.free_symbols for c in coefficients):
            raise NormalizerError(f"normalizer {self.name} has no finite Taylor expansion at 0: "
                                  f"s/s(0) = {' + '.join(map(str, coefficients[:3]))} + ...")
        return coefficients

    @cached_property
    def k(self) -> int:
        """First nonconstant degree of ``s/s(0)``."""
        if self.is_generic:
            return self._generic_k
        degree = 8
        while degree <= 512:
            coeffs = self.taylor(degree)
            for m, c in enumerate(coeffs[1:], start=1):
                if c != 0:
                    return m
            degree *= 2
        raise NormalizerError(f"normalizer {self.name}: no nonzero Taylor coefficient up to degree 512")

    @cached_property
    def is_even(self) -> bool:
        """Whether ``s(-x) = s(x)``."""
        if self.is_generic:
            return self._generic_even
        return sp.simplify(self.expr.subs(x, -x) - self.expr) == 0

    @cached_property
    def is_polynomial(self) -> bool:
        """Whether ``s`` is a polynomial (then the model is polynomial in its parameters)."""
        return not self.is_generic and self.expr.is_polynomial(x)

    @cached_property
    def is_exponential(self) -> bool:
        """Whether ``s(x) = C e^{a x}`` (so ``S(A + 1 u^T) = S(A)``)."""
        if self.is_generic:
            return False
        ratio = sp.simplify(sp.diff(self.expr, x) / self.expr)
        return not ratio.has(x)

    @cached_property
    def exponential_rate(self):
        """The rate ``a`` of ``s(x) = C e^{a x}`` when it is rational (a sympy Rational), else ``None``.

        Then ``s(m)/s(0) = (e^{1/v})^{u m}`` for ``a = u/v`` and every integer
        ``m``: a power of one transcendental number, which the integer-score
        route of the dimension (:func:`symattn.identify.function_space_dimension`)
        sends to a random residue.

        Examples
        --------
        >>> Normalizer.preset("softmax").exponential_rate, Normalizer("exp(x/3)").exponential_rate
        (1, 1/3)
        >>> Normalizer("cosh(x)").exponential_rate is None, Normalizer("exp(pi*x)").exponential_rate is None
        (True, True)
        """
        if not self.is_exponential:
            return None
        rate = sp.simplify(sp.diff(self.expr, x) / self.expr)
        return rate if rate.is_Rational and rate != 0 else None

    @property
    def has_rational_taylor(self) -> bool:
        """Whether every Taylor coefficient of ``s/s(0)`` is rational."""
        return not self.is_generic and all(c.is_Rational for c in self.taylor(8))

    # -- evaluation ---------------------------------------------------------------
    def function(self) -> sp.Function:
        """The unevaluated function symbol ``s`` used in closed forms."""
        return sp.Function("s")

    def evaluate(self, value):
        """``s(value)`` for a sympy expression, float, mpmath number or Fraction.

        Examples
        --------
        >>> Normalizer("1 + x**2").evaluate(3)
        10
        """
        if self.is_generic:
            raise NormalizerError(
                "a generic normalizer has only Taylor data; evaluate it on power series "
                "with zero constant term, or use the unevaluated function s"
            )
        return self.expr.subs(x, value)

    @cached_property
    def numeric(self):
        """``s`` as an mpmath-callable function."""
        if self.is_generic:
            raise NormalizerError("a generic normalizer cannot be evaluated numerically")
        return sp.lambdify(x, self.expr, modules="mpmath")

    @cached_property
    def numeric_float(self):
        """``s`` as a numpy-callable function (float64)."""
        if self.is_generic:
            raise NormalizerError("a generic normalizer cannot be evaluated numerically")
        return sp.lambdify(x, self.expr, modules="numpy")

    @cached_property
    def derivative_numeric(self):
        """``s'`` as an mpmath-callable function."""
        return sp.lambdify(x, sp.diff(self.expr, x), modules="mpmath")

    @cached_property
    def derivative_numeric_float(self):
        """``s'`` as a numpy-callable function (float64)."""
        return sp.lambdify(x, sp.diff(self.expr, x), modules="numpy")

    @cached_property
    def polynomial_coefficients(self) -> list:
        """Coefficients of ``s`` (not normalized) when ``s`` is a polynomial, lowest first."""
        if not self.is_polynomial:
            raise NormalizerError(f"normalizer {self.name} is not a polynomial")
        return list(reversed(sp.Poly(self.expr, x).all_coeffs()))

    def latex(self) -> str:
        """LaTeX of ``s(x)``."""
        if self.is_generic:
            k = self._generic_k
            step = 2 if self._generic_even else 1
            return rf"1 + c_{{{k}}} x^{{{k}}} + c_{{{k + step}}} x^{{{k + step}}} + \cdots"
        return sp.latex(self.expr)

    def to_json(self) -> dict:
        """A JSON-ready description."""
        return {
            "name": self.name,
            "expression": None if self.is_generic else str(self.expr),
            "k": self.k,
            "even": self.is_even,
            "generic": self.is_generic,
        }

    def __repr__(self) -> str:
        return f"Normalizer({self.name!r})"

    def __eq__(self, other) -> bool:
        """Equal when they are the same function: the same expression, or generic data of the same ``k`` and parity.

        Generic normalizers of one ``k`` and parity share their symbols
        ``c_j``, so they are one normalizer (also after pickling).

        Examples
        --------
        >>> import pickle
        >>> Normalizer.generic(k=2) == pickle.loads(pickle.dumps(Normalizer.generic(k=2)))
        True
        >>> Normalizer.generic(k=2) == Normalizer.generic(k=2, even=True), Normalizer.generic() == as_normalizer("exp(x)")
        (False, False)
        """
        if not isinstance(other, Normalizer):
            return NotImplemented
        if self.is_generic or other.is_generic:
            return self.is_generic and other.is_generic and \
                (self._generic_k, self._generic_even) == (other._generic_k, other._generic_even)
        return self.expr == other.expr

    def __hash__(self) -> int:
        return hash(self.name if self.is_generic else self.expr)



class Lightning(Normalizer):
    """HMK's lightning attention: no normalization, ``S(A) = A``.

    Not a normalizer (it is neither positive nor column-stochastic); it is the
    comparison case of Henry, Marchetti and Kohn.  The forward pass uses the
    scores themselves as attention weights.

    Examples
    --------
    >>> lightning = Normalizer.lightning()
    >>> lightning.is_lightning, lightning.is_even
    (True, False)
    """

    is_lightning = True

    def __init__(self):
        self.expr = x
        self.name = "lightning"
        self.is_generic = False
        self._symbols = {}
        self._taylor = []

    @property
    def k(self):
        """Lightning attention has no first nonconstant degree: ``None``."""
        return None

    @property
    def is_even(self) -> bool:
        return False

    @property
    def is_exponential(self) -> bool:
        return False

    def taylor(self, degree: int) -> list:
        raise NormalizerError("lightning attention has no normalizer and no Taylor data")

    def latex(self) -> str:
        return r"\mathrm{id}"

    def to_json(self) -> dict:
        return {"name": "lightning", "expression": None, "k": None, "even": False, "generic": False,
                "lightning": True}

    def __eq__(self, other) -> bool:
        return isinstance(other, Lightning)

    def __hash__(self) -> int:
        return hash("lightning")


def as_normalizer(value, assume_positive: bool = False) -> Normalizer:
    """A :class:`Normalizer` from a preset name, an expression or a Normalizer.

    ``assume_positive`` is passed to :class:`Normalizer` for an expression.

    Examples
    --------
    >>> as_normalizer("softmax").name
    'softmax'
    >>> as_normalizer("exp(2*x)").k
    1
    """
    if isinstance(value, Normalizer):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key == "lightning" or key in PRESETS or _generic_name(key) is not None:
            return Normalizer.preset(key)
    return Normalizer(value, assume_positive=assume_positive)



def normalizers_per_layer(value, layers: int) -> list[Normalizer]:
    """One normalizer per layer: a list is read entry by entry, anything else is repeated.

    Examples
    --------
    >>> [n.name for n in normalizers_per_layer("cosh", 2)]
    ['cosh', 'cosh']
    >>> [n.name for n in normalizers_per_layer(["softmax", "1 + x**2"], 2)]
    ['softmax', '1 + x**2']
    """
    if isinstance(value, (list, tuple)):
        return [as_normalizer(v) for v in value]
    norm = as_normalizer(value)
    return [norm] * layers
