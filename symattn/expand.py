"""Closed-form expansions of the network along a curve, and each layer's leading coefficient.

Along a curve ``theta_eps`` (default: the simultaneous query/key collapse
``Q_i = eps Qt_i, K_i = eps Kt_i, V_i = Vt_i``) the output is a power series
``F(theta_eps)(X) = sum_n eps^n F_n(X)``.  :func:`expand` computes the series
modulo ``eps^N`` (``truncation=N``: ``F_0, ..., F_{N-1}``) entry by entry as exact sympy expressions with the one
forward pass (:func:`symattn.model.forward`) over truncated series with exact
coefficients (:class:`~symattn.algebra.modseries.ExactSeriesDomain`): the base
point ``Qt_i, Kt_i, Vt_i`` and the input ``X`` are symbols, and so are the
Taylor coefficients ``c_k, c_{k+1}, ...`` of a generic normalizer.  The
coefficients are held as python-flint polynomials over Q (or rationals at a
numeric point) by subclasses that override only the coefficient field of
``ExactSeriesDomain``; expressions that are not polynomials over Q (irrational
Taylor coefficients) fall back to sympy coefficients.

:func:`leading_coefficient` gives, in matrix form valid for every width and
token count, the coefficient in which the scores of layer ``i`` first appear,
at order ``n_i`` (``2k 3^(i-1)`` for a common ``k``); :func:`verify_leading_coefficient`
compares it with the entrywise expansion.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.normalizers import Normalizer
>>> from symattn.expand import expand
>>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2)
>>> F = expand(arch, truncation=3, normalizer=Normalizer.generic(k=1))
>>> F[0]
Matrix([[Vt1_11*x_11/2 + Vt1_11*x_12/2, Vt1_11*x_11/2 + Vt1_11*x_12/2]])
>>> F[1]
Matrix([[0, 0]])
"""

from __future__ import annotations

from collections.abc import Sequence

import dataclasses
import random
import time
from dataclasses import dataclass
from functools import cmp_to_key

import numpy as np
import sympy as sp

from .algebra.degrees import DegreeBound
from .algebra.matrix_expressions import RingEvaluator, entrywise_power, evaluate_matrix_expression, object_array
from .algebra.exactseries import (
    PolynomialSeriesDomain,
    RationalSeriesDomain,
    SymbolicSeriesDomain,
    from_fmpq,
    to_fmpq,
)
from ._format import FormattedResult, latex_escape, latex_document, markdown_table
from ._modules import make_callable
from .curves import Curve, collapse
from .errors import DomainError, NormalizerError, ResourceLimitError, ShapeError, SymattnError, TruncationError
from .jacobian import degree_bound, series_output
from .languages import FORMULA_LANGUAGE
from .model import Architecture, Parameters, require_architecture, require_seed
from .normalizers import Normalizer, as_normalizer
from .parsing import parse_expression, to_sympy, to_sympy_matrix

__all__ = [
    "Expansion",
    "CoefficientMatrix",
    "FlintToSympy",
    "latex",
    "package_symbols",
    "matrix_symbols",
    "symbols",
    "expand",
    "curve_symbols",
    "LeadingCoefficient",
    "leading_coefficient",
    "leading_orders",
    "verify_leading_coefficient",
    "evaluate_matrix_expression",
    "FORMULA_LANGUAGE",
    "is_formula_claim",
    "parse_formula_claim",
    "matrix_formula",
    "check_formula_claim",
    "MAX_PARAMS",
    "MAX_ORDER",
    "MAX_TRUNCATION",
    "LATEX_MAX_TERMS",
    "MAX_TOKENS",
    "MAX_LEADING_LAYER",
    "MAX_TERMS",
]

#: Largest number of native parameters :func:`expand` accepts.
MAX_PARAMS = 40

#: Highest power of ``eps`` :func:`expand` keeps (``MAX_TRUNCATION - 1``).
MAX_ORDER = 128

#: Largest ``truncation`` :func:`expand` accepts (the series modulo ``eps^129``: ``F_0 .. F_128``).
MAX_TRUNCATION = MAX_ORDER + 1

#: Terms :meth:`Expansion.to_latex` writes out entry by entry (factored) at most; past them it says how many
#: entries and terms it left out (the matrix forms are always written).  pdflatex sets some 2 000 terms a page.
LATEX_MAX_TERMS = 1500

#: Deepest layer whose leading coefficient :func:`leading_coefficient` derives (its formula grows about
#: fivefold per layer: 4 s at layer 5, 20 s at layer 6 on a 2-core machine).
MAX_LEADING_LAYER = 6

#: Largest number of tokens :func:`expand` accepts: each adds ``d_0`` symbols of the input and ``d_l``
#: entries of the output, and a symbolic expansion of even a few tokens is large.
MAX_TOKENS = 64

#: Largest number of terms of any series coefficient during a symbolic expansion (python-flint
#: polynomials); beyond it the computation takes too long (give numbers with ``point``).  The
#: sympy fallback (irrational Taylor coefficients) allows ``max_terms // 200``.
MAX_TERMS = 10**6


# -- symbols --------------------------------------------------------------------------------
def curve_symbols(arch: Architecture) -> Parameters:
    """The base point ``Qt_i, Kt_i, Vt_i`` of a curve as real symbols (``Qt1_11`` ...).

    Examples
    --------
    >>> curve_symbols(Architecture.uniform(layers=1, width=2)).K[0]
    Matrix([[Kt1_11, Kt1_12]])
    """
    _check_arch(arch)
    return arch.symbols(marker="t", immutable=True)


def _latex_names(symbols) -> dict:
    """LaTeX names of plain Symbols named as the package's: ``Qt1_11`` -> ``(\\tilde{Q}_{1})_{11}``, ``eps``.

    The package's own symbols (:class:`symattn.model.EntrySymbol`) print so by
    themselves; this is for plain sympy Symbols of the same names.
    """
    from .model import entry_latex

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


# -- symbols by name ---------------------------------------------------------------------------
def _refuse_order(function: str, old: dict) -> None:
    """The old ``order=n`` / ``max_order=n`` (highest power kept): a TruncationError naming ``truncation=n+1``.

    Other unexpected keywords are a TypeError, as Python's own.
    """
    for key, new in (("order", "truncation"), ("max_order", "max_truncation")):
        if key in old:
            value = old[key]
            known = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            shown = f"{new}={int(value) + 1} for {key}={int(value)}" if known else f"{new}=n+1 for {key}=n"
            raise TruncationError(
                f"{function} takes {new}=N (the series modulo eps^N: F_0..F_(N-1)), not {key}= (the highest power "
                f"of eps kept): write {shown} (truncation = order + 1)")
    if old:
        raise TypeError(f"{function}() got an unexpected keyword argument {next(iter(old))!r}")


def package_symbols(arch: Architecture, truncation: int = 3, normalizer=None, **removed) -> dict:
    """Every scalar symbol an expansion of ``arch`` modulo ``eps^truncation`` uses, by name.

    ``Qt1_11, Kt1_11, Vt1_11, ...`` (the base point of the curve), ``x_11, ...``
    (the input) and, for a generic normalizer, its Taylor coefficients
    ``c_k, ..., c_{truncation}``.  (The old ``order=n`` is refused, naming
    ``truncation=n+1``.)  The symbols carry assumptions (``real=True``,
    and ``nonzero=True`` for the leading ``c_k``), so ``sympy.Symbol("c_1")``
    is a *different* symbol: look them up here (or with
    :meth:`Expansion.symbol`), or give names, which every substitution of
    this module matches (``F.subs("c_1", 1)``, ``expand(..., point={"c_1": 1})``).

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> names = package_symbols(Architecture.uniform(layers=1, width=1, tokens=2), 3, Normalizer.generic(1))
    >>> sorted(names)
    ['Kt1_11', 'Qt1_11', 'Vt1_11', 'c_1', 'c_2', 'c_3', 'x_11', 'x_12']
    >>> names["c_1"] == sp.Symbol("c_1"), names["c_1"].name == "c_1"
    (False, True)
    """
    _refuse_order("package_symbols", removed)
    _check_arch(arch)
    used = _with_normalizer(arch, normalizer)
    base = curve_symbols(used)
    out = {s.name: s for m in (*base.Q, *base.K, *base.V, used.input_symbols()) for s in m}
    out.update(_normalizer_symbols(used, truncation))
    return out


def matrix_symbols(arch: Architecture) -> dict:
    """The named matrices of the matrix forms of ``arch``, by name.

    ``X`` (the input, ``d_0 x t``), ``Qt1, Kt1, Vt1, ...`` (the base point of
    the collapse curve, one matrix per block), ``P`` (``Vt_l ... Vt_1``),
    ``What_1, ...`` (the effective score matrices
    ``What_i = Pt_{i-1}^T Kt_i^T Qt_i Pt_{i-1}``, LaTeX ``\\widehat{W}_{i}``),
    ``C_1, ...`` (``X^T What_i X``, the score Gram matrix of the input), ``H``
    and ``J``: the symbols :func:`leading_coefficient` and formula claims use.
    One name per object: the old spelling ``What1`` is read on input
    (:func:`symbols`, :func:`matrix_formula`) but not listed here.

    Examples
    --------
    >>> names = matrix_symbols(Architecture.uniform(layers=2, width=2, tokens=3))
    >>> names["C_2"].shape, names["What_1"].name, names["P"].shape, "What1" in names
    ((3, 3), 'What_1', (2, 2), False)
    """
    _check_arch(arch)
    d0, t = arch.widths[0], arch.tokens
    out = {"X": sp.MatrixSymbol("X", d0, t), "P": sp.MatrixSymbol("P", arch.widths[-1], d0),
           "H": sp.MatrixSymbol("H", t, t), "J": sp.MatrixSymbol("J", t, t)}
    for i in range(1, arch.layers + 1):
        shapes = arch.block_shapes(i)
        for block in ("Q", "K", "V"):
            out[f"{block}t{i}"] = sp.MatrixSymbol(f"{block}t{i}", *shapes[block])
        out[f"What_{i}"] = sp.MatrixSymbol(f"What_{i}", d0, d0)
        out[f"C_{i}"] = sp.MatrixSymbol(f"C_{i}", t, t)
    return out


def _what_alias(name):
    """``What_i`` for the old spelling ``What1`` (read on input only); any other name unchanged."""
    if isinstance(name, str) and name.startswith("What") and name[4:].isdigit() and name[4:].isascii():
        return f"What_{name[4:]}"
    return name


def symbols(names, arch: Architecture, *, normalizer=None, truncation: int | None = None, **removed):
    """The package's symbols by name, with their assumptions: one, or a tuple as :func:`sympy.symbols`.

    The one public way to the symbols the package uses, so that substitutions
    and comparisons meet the same objects as the results (the package's
    scalars are ``real=True``, so ``sympy.Symbol("c_1")`` is a different
    symbol).  Known names: the native parameters ``Q1_11, K1_11, V1_11, ...``,
    the base point of a curve ``Qt1_11, ...``, the input ``x_11, ...``, a
    generic normalizer's coefficients ``c_k, c_{k+1}, ...``, the matrices of
    the matrix forms (:func:`matrix_symbols`: ``X, P, H, J, What_i, C_i,
    Qt1, ...``; ``What1`` is read as ``What_1``) and the scalars ``alpha_i``.

    Parameters
    ----------
    names : str or iterable of str
        Names separated by spaces or commas (``"c_1 x_11"``), or a list.
    arch : Architecture
    normalizer : Normalizer, optional
        Replaces the architecture's normalizers (``Normalizer.generic(k)``
        for the coefficients ``c_k``).
    truncation : int, optional
        Up to which Taylor coefficient ``c_{truncation}`` generic coefficients
        are known (those of an expansion modulo ``eps^truncation``); by
        default as far as the names ask.  (The old ``order=n`` is refused.)

    Raises
    ------
    SymattnError
        For a name the architecture does not use (it lists the known ones).

    Examples
    --------
    >>> import sympy as sp
    >>> from symattn.normalizers import Normalizer
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
    >>> c1, x11 = symbols("c_1 x_11", arch, normalizer=Normalizer.generic(1))
    >>> c1 == sp.Symbol("c_1"), c1.is_real, c1.is_nonzero
    (False, True, True)
    >>> F = expand(arch, truncation=3, normalizer=Normalizer.generic(1))
    >>> c1 in F[2].free_symbols
    True
    >>> symbols("What_1", arch).shape, symbols("What1", arch).name
    ((1, 1), 'What_1')
    >>> symbols("Q1_11 K1_11", arch)
    (Q1_11, K1_11)
    """
    _refuse_order("symbols", removed)
    if isinstance(names, str):
        wanted = names.replace(",", " ").split()
    else:
        try:
            wanted = list(names)
        except TypeError:
            raise SymattnError(f"names must be a string or a list of strings, got {names!r}") from None
    bad = [n for n in wanted if not isinstance(n, str)]
    if bad or not wanted:
        raise SymattnError(f"names must be a nonempty string or list of strings, got {names!r}")
    if truncation is None:
        # c_n is known from the expansions modulo eps^n on
        # (at most 6 digits: c_ of a 5,000-digit number is a name no expansion has, not an integer to read)
        asked = [int(n[2:]) for n in wanted if n.startswith("c_") and n[2:].isdigit() and len(n) <= 8]
        truncation = max([3] + [min(n, MAX_TRUNCATION) for n in asked])
    used = _with_normalizer(arch, normalizer)
    native = used.symbols()
    known = {s.name: s for m in (*native.Q, *native.K, *native.V) for s in m}
    known.update(package_symbols(used, truncation))
    known.update(matrix_symbols(used))
    known.update({f"alpha_{i}": sp.Symbol(f"alpha_{i}") for i in range(2, used.layers + 1)})
    wanted = [_what_alias(n) if _what_alias(n) in known else n for n in wanted]
    for name in wanted:
        if name not in known:
            raise _unknown(name, known, f"this architecture ({used.describe()})")
    found = tuple(known[n] for n in wanted)
    return found[0] if len(found) == 1 else found


def _identifier(text: str) -> bool:
    return text.isidentifier() and text.isascii()


def _unknown(name: str, names: dict, what: str) -> SymattnError:
    known = sorted(names)
    shown = ", ".join(known[:12]) + (f", ... ({len(known)} names)" if len(known) > 12 else "")
    from .parsing import shorten

    return SymattnError(f"unknown symbol name {shorten(name)} for {what}; its symbols are {shown}")


def _rename_by_name(expr, names: dict, what: str, strict: bool):
    """``expr`` with each free symbol replaced by the package's symbol of the same name.

    ``strict``: a name the package does not use is an error (for the keys of a
    substitution); otherwise it stays as given (a value may bring new symbols).
    """
    mapping = {}
    for s in getattr(expr, "free_symbols", ()):
        if isinstance(s, sp.Symbol):
            if s.name in names:
                if names[s.name] != s:
                    mapping[s] = names[s.name]
            elif strict:
                raise _unknown(s.name, names, what)
    return expr.xreplace(mapping) if mapping else expr


def _substitution_key(key, names: dict, what: str):
    """The package's symbol (or expression) meant by a key: a name, a Symbol matched by name, an expression."""
    if isinstance(key, str):
        text = key.strip()
        if _identifier(text):
            if text not in names:
                raise _unknown(text, names, what)
            return names[text]
        return parse_expression(text, names, what=f"substitution key for {what}", error=SymattnError)
    if isinstance(key, sp.Symbol):
        if key.name not in names:
            raise _unknown(key.name, names, what)
        return names[key.name]
    if isinstance(key, sp.Basic):
        return _rename_by_name(key, names, what, strict=True)
    raise SymattnError(f"a substitution key must be a symbol name, a sympy Symbol or expression, "
                       f"got {type(key).__name__}")


def _substitution_value(value, names: dict, what: str):
    if isinstance(value, sp.MatrixBase):
        return value
    value = to_sympy(value, names, what=f"substituted value for {what}", error=SymattnError)
    return _rename_by_name(value, names, what, strict=False)


def _substitution_pairs(args, names: dict, what: str) -> list:
    """``[(old, new), ...]`` from ``subs``'s arguments: ``(old, new)``, a dict, or pairs."""
    if len(args) == 2:
        pairs = [tuple(args)]
    elif len(args) == 1 and isinstance(args[0], dict):
        pairs = list(args[0].items())
    elif len(args) == 1 and isinstance(args[0], (list, tuple, set)):
        pairs = list(args[0])
        if not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
            raise SymattnError("subs takes (old, new), a dict {old: new} or a list of (old, new) pairs")
    else:
        raise SymattnError("subs takes (old, new), a dict {old: new} or a list of (old, new) pairs")
    return [(_substitution_key(old, names, what), _substitution_value(new, names, what)) for old, new in pairs]


def _substituted(expr, pairs: list, **kwargs):
    """``expr`` with ``pairs`` substituted; symbols replaced by equality, whatever their class.

    A package symbol equals the plain Symbol of its name (:class:`~symattn.model.EntrySymbol`), and sympy's
    cache may hand back either inside an expression; sympy's ``subs`` matches atoms by type as well and keeps
    one of two equal keys, so it could miss some.  ``xreplace`` matches by equality (and substitutes all
    pairs at once).
    """
    if not kwargs and all(isinstance(old, sp.Symbol) for old, _ in pairs):
        return expr.xreplace(dict(pairs))
    return expr.subs(pairs, **kwargs)


def _with_normalizer(arch: Architecture, normalizer) -> Architecture:
    if normalizer is None:
        return arch
    if isinstance(normalizer, (list, tuple)):
        normalizer = [as_normalizer(n) for n in normalizer]
    else:
        normalizer = as_normalizer(normalizer)
    return arch.replace(normalizer=normalizer)


def _check_arch(arch) -> None:
    require_architecture(arch)


# -- the expansion ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Expansion(FormattedResult):
    """The coefficients ``F_0, ..., F_{N-1}`` of the output along a curve: the series modulo ``eps^N``.

    Attributes
    ----------
    architecture : Architecture
        The architecture expanded (with the normalizer override applied).
    curve : Curve
    truncation : int
        ``N``: the series is kept modulo ``eps^N`` (``F_0 .. F_{N-1}``), as the
        spectrum's truncation.  :attr:`order` is the highest power kept, ``N - 1``.
    coefficients : tuple of sympy ImmutableMatrix
        ``coefficients[n]`` is ``F_n`` (``d_l x t``), exact.
    normalizer : Normalizer or None
        The normalizer that replaced the architecture's, if any.
    point : tuple
        ``((name, value), ...)``: symbols given numbers; all others stay symbols.
    domain : str
        The coefficient field of the series computation.
    seconds : float
        Time taken.
    method : str
        How the coefficients were obtained.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=2)
    >>> F.truncation, F.order, len(F.coefficients), F[0].shape
    (2, 1, 2, (1, 2))
    """

    architecture: Architecture
    curve: Curve
    truncation: int
    coefficients: tuple
    normalizer: Normalizer | None = None
    point: tuple = ()
    domain: str = ""
    seconds: float = 0.0
    method: str = ""

    #: ``sympy.sympify(F)`` returns ``F`` itself, so that ``sympy.simplify(F)``, ``sympy.expand(F)`` and
    #: ``sympy.N(F)`` reach the methods below (sympy's protocol for objects that are not Basic).
    __sympy__ = False

    @property
    def order(self) -> int:
        """The highest power of ``eps`` kept: ``truncation - 1`` (read-only).

        Examples
        --------
        >>> expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3).order
        2
        """
        return self.truncation - 1

    def __getitem__(self, n):
        if isinstance(n, slice):
            return self.coefficients[n]
        return self.coefficient(n)

    def __len__(self) -> int:
        return len(self.coefficients)

    def __iter__(self):
        # explicit: iteration through __getitem__ would stop only at IndexError, and an index past
        # the truncation raises TruncationError
        return iter(self.coefficients)

    def __repr__(self) -> str:
        return (f"Expansion(F_0..F_{self.order} (modulo eps^{self.truncation}) of {self.architecture.describe()} "
                f"along {self._describe()}, "
                f"{self.domain or 'exact'})")

    def _latex(self, printer=None) -> str:
        """What ``sympy.latex(F)`` prints: the coefficients as one aligned display."""
        return self._latex_math()

    def _sympystr(self, printer) -> str:
        """What ``sympy.sstr(F)`` prints: one line per coefficient."""
        return "\n".join([f"expansion along {self._describe()} modulo eps^{self.truncation}"]
                         + [f"F_{n} = {printer._print(c)}" for n, c in enumerate(self.coefficients)])

    def _pretty(self, printer):
        """What ``sympy.pretty(F)`` / ``sympy.pprint(F)`` print: each ``F_n = `` beside its pretty matrix.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=2)
        >>> print(sp.pretty(F, use_unicode=False))
        expansion modulo eps^2
              [Vt1_11*x_11   Vt1_11*x_12  Vt1_11*x_11   Vt1_11*x_12]
        F_0 = [----------- + -----------  ----------- + -----------]
              [     2             2            2             2     ]
        F_1 = [0  0]
        """
        from sympy.printing.pretty.stringpict import prettyForm

        lines = [prettyForm(f"expansion modulo eps^{self.truncation}")]
        lines += [prettyForm(*printer._print(c).left(f"F_{n} = ")) for n, c in enumerate(self.coefficients)]
        width = max(line.width() for line in lines)
        out = None
        for line in lines:  # left-aligned (stringPict.below centres)
            line = prettyForm(*line.right(" " * (width - line.width()))) if line.width() < width else line
            out = line if out is None else prettyForm(*out.below(line))
        return out

    def coefficient(self, n: int) -> sp.ImmutableMatrix:
        """``F_n`` (``F_{-1}`` is the last one computed); raises TruncationError at or past the truncation.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=2)
        >>> F.coefficient(-1) == F[1] == list(F)[-1]
        True
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < -len(self.coefficients):
            raise TruncationError(f"coefficient index must be an integer from -{len(self.coefficients)} "
                                  f"to {self.order}, got {n!r}")
        if n < 0:
            n += len(self.coefficients)
        if n >= self.truncation:
            raise TruncationError(f"F_{n} is not in this expansion modulo eps^{self.truncation} "
                                  f"(F_0..F_{self.order}); expand with truncation={n + 1} or more")
        return self.coefficients[n]

    @property
    def free_symbols(self) -> set:
        if isinstance(self.coefficients, LazyCoefficients):
            return self.coefficients.free_symbols()
        out = set()
        for c in self.coefficients:
            out |= c.free_symbols
        return out

    # -- sympy operations over every coefficient ----------------------------------------------------
    def symbol_names(self) -> dict:
        """``{name: Symbol}`` for every symbol this expansion uses or may use (see :func:`package_symbols`).

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=2)
        >>> sorted(F.symbol_names())
        ['Kt1_11', 'Qt1_11', 'Vt1_11', 'x_11', 'x_12']
        """
        names = package_symbols(self.architecture, self.truncation)
        names.update({s.name: s for s in self.free_symbols if isinstance(s, sp.Symbol)})
        return names

    def symbol(self, name: str) -> sp.Symbol:
        """The symbol named ``name`` (``"c_1"``, ``"x_12"``, ``"Qt1_11"``), with the package's assumptions.

        Raises SymattnError for a name the expansion does not use.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3, normalizer=Normalizer.generic(1))
        >>> c1 = F.symbol("c_1")
        >>> c1 in F[2].free_symbols, sp.Symbol("c_1") in F[2].free_symbols
        (True, False)
        """
        names = self.symbol_names()
        if not isinstance(name, str) or name not in names:
            raise _unknown(name if isinstance(name, str) else repr(name), names, "this expansion")
        return names[name]

    def _map(self, function, point=()) -> "Expansion":
        coefficients = tuple(CoefficientMatrix(function(c)) for c in self.coefficients)
        merged = dict(self.point)
        merged.update(point)
        return dataclasses.replace(self, coefficients=coefficients, point=tuple(sorted(merged.items())))

    @staticmethod
    def _numeric_point(pairs) -> dict:
        return {old.name: new for old, new in pairs
                if isinstance(old, sp.Symbol) and isinstance(new, sp.Basic) and new.is_number}

    def subs(self, *args, **kwargs) -> "Expansion":
        """Substitute in every coefficient; symbols are matched by name.

        Takes what ``sympy``'s ``subs`` takes (``(old, new)``, a dict, a list
        of pairs).  ``old`` may be a name (``"c_1"``), a Symbol, matched by its
        name whatever its assumptions (``sp.Symbol("c_1")`` is the package's
        ``c_1``), or an expression; a name the expansion does not use is an
        error, never a silent no-op.  A string value is read by the package's
        safe parser (:func:`symattn.parsing.parse_expression`), never
        ``sympify``; numbers join :attr:`point`.

        Returns
        -------
        Expansion
            A new expansion (this one is unchanged).

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3, normalizer=Normalizer.generic(1))
        >>> G = F.subs("c_1", 0)
        >>> G[2], G.point
        (Matrix([[0, 0]]), (('c_1', 0),))
        >>> F.subs(sp.Symbol("c_1"), 0)[2] == G[2] == F.subs({"c_1": "0"})[2]
        True
        >>> F.subs("c_9", 1)
        Traceback (most recent call last):
        ...
        symattn.errors.SymattnError: unknown symbol name 'c_9' for this expansion; its symbols are Kt1_11, Qt1_11, Vt1_11, c_1, c_2, c_3, x_11, x_12
        """
        pairs = _substitution_pairs(args, self.symbol_names(), "this expansion")
        fast = None if kwargs else self._subs_in_flint(pairs)
        if fast is not None:
            return fast
        return self._map(lambda c: _substituted(c, pairs, **kwargs), self._numeric_point(pairs))

    def _subs_in_flint(self, pairs):
        """Numbers for symbols, substituted in the python-flint polynomials the expansion was built from.

        sympy's ``subs`` rebuilds every term (about 25 s for the 340 000 terms of
        two layers at width 2, order 6); python-flint substitutes in milliseconds
        and :class:`FlintToSympy` writes the result.  None when the expansion
        has no polynomials (a rational point, a later sympy operation) or a
        substitution is not a rational number for a symbol.
        """
        cached = self.__dict__.get("_flint")
        if cached is None or not pairs:
            return None
        symbols, raw = cached
        names = {s.name for s in symbols}
        values = {}
        for old, new in pairs:
            if not (isinstance(old, sp.Symbol) and isinstance(new, sp.Basic) and new.is_Rational):
                return None
            if old.name in names and old.name not in values:  # sequential subs: the first one wins
                values[old.name] = to_fmpq(new)
        substituted = np.empty(raw.shape, dtype=object)
        for index, value in np.ndenumerate(raw):
            substituted[index] = value.subs(values) if values and hasattr(value, "subs") else value
        coefficients = LazyCoefficients(symbols, substituted)
        merged = dict(self.point)
        merged.update(self._numeric_point(pairs))
        result = dataclasses.replace(self, coefficients=coefficients, point=tuple(sorted(merged.items())))
        object.__setattr__(result, "_flint", (symbols, substituted))
        return result

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_flint", None)  # python-flint polynomials do not pickle
        return state

    def xreplace(self, rule: dict) -> "Expansion":
        """``xreplace`` in every coefficient, keys matched by name as in :meth:`subs`.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> F.xreplace({"x_11": 1, "x_12": 0, "Vt1_11": 2})[0]
        Matrix([[1, 1]])
        """
        if not isinstance(rule, dict):
            raise SymattnError(f"xreplace takes a dict {{old: new}}, got {type(rule).__name__}")
        pairs = _substitution_pairs((rule,), self.symbol_names(), "this expansion")
        if len({old for old, _ in pairs}) == len(pairs):  # simultaneous: the same as sequential for numbers
            fast = self._subs_in_flint(pairs)
            if fast is not None:
                return fast
        return self._map(lambda c: c.xreplace(dict(pairs)), self._numeric_point(pairs))

    def applyfunc(self, function) -> "Expansion":
        """``function`` applied to every entry of every coefficient.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3, normalizer=Normalizer.generic(1))
        >>> F.applyfunc(sp.factor)[2][0, 0]
        Kt1_11*Qt1_11*Vt1_11*c_1*x_11*(x_11 - x_12)**2/4
        """
        return self._map(lambda c: c.applyfunc(function))

    def evalf(self, n: int = 15, **options) -> "Expansion":
        """Every entry as a float with ``n`` digits (symbols stay); ``sympy.N(F)`` calls it.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> F.subs({"x_11": 1, "x_12": 2, "Vt1_11": 1, "Qt1_11": 1, "Kt1_11": 1}).evalf(3)[2]
        Matrix([[0.25, 0.5]])
        >>> sp.N(F.subs("x_11", sp.pi), 4)[0]
        Matrix([[0.5*Vt1_11*x_12 + 1.571*Vt1_11, 0.5*Vt1_11*x_12 + 1.571*Vt1_11]])
        """
        return self._map(lambda c: c.evalf(n, **options))

    n = evalf

    def simplify(self, **kwargs) -> "Expansion":
        """``sympy.simplify`` of every entry; ``sympy.simplify(F)`` calls it.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> sp.simplify(F)[2][0, 0]
        Kt1_11*Qt1_11*Vt1_11*x_11*(x_11**2 - 2*x_11*x_12 + x_12**2)/4
        """
        return self._map(lambda c: c.applyfunc(lambda e: sp.simplify(e, **kwargs)))

    def _eval_simplify(self, **kwargs) -> "Expansion":
        return self.simplify(**kwargs)

    def expand(self, **hints) -> "Expansion":
        """``sympy.expand`` of every entry; ``sympy.expand(F)`` calls it.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> sp.expand(F.applyfunc(sp.factor))[2] == F[2]
        True
        """
        return self._map(lambda c: c.applyfunc(lambda e: sp.expand(e, **hints)))

    def factor(self, **hints) -> "Expansion":
        """``sympy.factor`` of every entry.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> F.factor()[2][0, 1]
        Kt1_11*Qt1_11*Vt1_11*x_12*(x_11 - x_12)**2/4
        """
        return self._map(lambda c: c.applyfunc(lambda e: sp.factor(e, **hints)))

    def term_counts(self) -> tuple:
        """``((nonzero entries, terms), ...)`` of ``F_0 .. F_{N-1}``, without writing them out when possible.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> F.term_counts()
        ((2, 4), (0, 0), (2, 6))
        """
        if isinstance(self.coefficients, LazyCoefficients):
            return tuple(self.coefficients.term_counts(n) for n in range(len(self.coefficients)))
        return tuple((sum(1 for e in c if e != 0), sum(len(e.args) if e.is_Add else (0 if e == 0 else 1) for e in c))
                     for c in self.coefficients)

    def leading_order(self) -> int | None:
        """The least ``n >= 1`` with ``F_n != 0`` (None if all vanish below the truncation)."""
        if isinstance(self.coefficients, LazyCoefficients):  # exact polynomials: zero is zero
            return next((n for n, (nonzero, _) in enumerate(self.term_counts()) if n >= 1 and nonzero), None)
        for n, c in enumerate(self.coefficients[1:], start=1):
            if any(e != 0 and sp.expand(e) != 0 for e in c):  # (a literal 0 needs no expand)
                return n
        return None

    def _describe(self) -> str:
        return self.curve.describe(self.architecture.layers)

    def to_json(self) -> dict:
        """A JSON-ready dict: each coefficient's entries as strings and as LaTeX."""
        return {
            "architecture": self.architecture.to_json(),
            "curve": self._describe(),
            "truncation": self.truncation,
            "normalizers": [n.name for n in self.architecture.normalizers],
            "point": {name: str(value) for name, value in self.point},
            "coefficients": [
                {"order": n, "entries": [[str(e) for e in row] for row in c.tolist()], "latex": _latex(c)}
                for n, c in enumerate(self.coefficients)
            ],
            "domain": self.domain,
            "seconds": round(self.seconds, 4),
            "method": self.method,
        }

    def to_latex(self, standalone: bool = False, max_terms: int = LATEX_MAX_TERMS) -> str:
        r"""A LaTeX document of the expansion: a header, the matrix forms, then each ``F_n``.

        The header names the architecture, the normalizer, the curve and the
        truncation.  Each ``F_n`` is then written in matrix form where it is
        one (``F_0 = (1/t) P X J``, and a layer's leading coefficient where
        it is the whole of ``F_{n_i}``; both checked entry by entry against
        the expansion, exactly), ``0``, or entry by entry, each entry
        collected by the generic Taylor coefficients ``c_j`` and factored
        (python-flint), over lines that keep to the page.  Past ``max_terms``
        terms written entry by entry it says how many entries and terms it
        left out (:meth:`to_json` has every entry).

        Parameters
        ----------
        standalone : bool
            A whole document (``\documentclass`` ...) instead of a fragment.
        max_terms : int
            Terms written out entry by entry at most (default :data:`LATEX_MAX_TERMS`).

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> text = F.to_latex()
        >>> text.splitlines()[0], r"F_{0} = \frac{1}{2}\, P X J" in text, r"F_{2} = \frac{1}{2}\, P X H C_{1}" in text
        ('\\section*{Expansion of the output}', True, True)
        >>> G = expand(Architecture.uniform(layers=1, width=1, tokens=3), truncation=5)
        >>> print(next(line for line in G.to_latex().splitlines() if line.startswith("(F_{4})_{11}"))[:79])
        (F_{4})_{11} &= \tfrac{1}{54} (\tilde{K}_{1})_{11}^{2} (\tilde{Q}_{1})_{11}^{2}
        >>> "Left out past 5 terms" in G.to_latex(max_terms=5)
        True
        """
        if isinstance(max_terms, bool) or not isinstance(max_terms, (int, np.integer)) or max_terms < 0:
            raise SymattnError(f"max_terms must be a nonnegative integer, got {max_terms!r}")
        body = _ExpansionLatex(self).document(int(max_terms))
        return latex_document(body) if standalone else body

    def _latex_body(self) -> str:
        return _ExpansionLatex(self).document(LATEX_MAX_TERMS)

    def _latex_math(self) -> str:
        lines = r" \\ ".join(f"F_{{{n}}} &= {_latex(c)}" for n, c in enumerate(self.coefficients))
        return "\\begin{aligned}" + lines + "\\end{aligned}"

    def matrix_forms(self) -> tuple:
        """The :class:`LeadingCoefficient` of each layer whose order ``n_i`` is below :attr:`truncation`.

        Empty off the collapse curve and for lightning layers (the matrix forms
        are derived for the collapse of normalized layers).

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=2, width=1, tokens=2), truncation=7)
        >>> [(lc.layer, lc.order, str(lc.matrix_form)) for lc in F.matrix_forms()]
        [(1, 2, '(1/4)*P*X*H*C_1*J'), (2, 6, '(1/16)*P*X*H*C_1*H*C_1.T*H*C_2*J')]
        """
        arch = self.architecture
        if self._describe() != collapse().describe(arch.layers) or not arch.is_plain:
            return ()  # derived for the collapse of the plain model only: no formula claimed for the variants
        try:
            orders = leading_orders(arch)
        except SymattnError:  # a lightning layer
            return ()
        return tuple(leading_coefficient(arch, i) for i, n in enumerate(orders, start=1) if n < self.truncation)

    def summary(self) -> str:
        """Markdown that fits a terminal: sizes of the coefficients and the matrix forms, not every entry.

        A table of ``F_n`` (nonzero entries, terms, degree in ``eps`` order)
        and the leading coefficient of each layer that appears below the truncation
        as a matrix formula (:meth:`matrix_forms`); :meth:`to_markdown` and
        :meth:`to_latex` write every entry.

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> print(F.summary())  # doctest: +ELLIPSIS
        # Expansion along simultaneous query/key collapse Q_i = eps Qt_i, K_i = eps Kt_i (layers 1..1)
        <BLANKLINE>
        - architecture: 1 layer(s), widths [1, 1], score ranks [1], 2 tokens, normalizer softmax
        - truncation: modulo eps^3, F_0 .. F_2, 1 x 2 each; first nonzero F_n with n >= 1: F_2
        ...
        | n | nonzero entries | terms |
        |---:|---:|---:|
        | 0 | 2 of 2 | 4 |
        | 1 | 0 of 2 | 0 |
        | 2 | 2 of 2 | 6 |
        <BLANKLINE>
        Leading coefficients (matrix forms, t = 2):
        <BLANKLINE>
        - layer 1, F_2 - F_2|What_1=0 = (1/2)*P*X*H*C_1 with H = I - J/2, J = ones(2, 2), P = Vt1, What_1 = Kt1.T*Qt1, C_1 = X.T*What_1*X
        <BLANKLINE>
        """
        counts = self.term_counts()
        rows, cols = self.architecture.widths[-1], self.architecture.tokens
        table = [(n, f"{nonzero} of {rows * cols}", terms) for n, (nonzero, terms) in enumerate(counts)]
        first = self.leading_order()
        lines = [f"# Expansion along {self._describe()}", "",
                 f"- architecture: {self.architecture.describe()}",
                 f"- truncation: modulo eps^{self.truncation}, F_0 .. F_{self.order}, {rows} x {cols} each; "
                 f"first nonzero F_n with n >= 1: " + (f"F_{first}" if first is not None else "none"),
                 f"- {self.method}", f"- {self.seconds:.2f} s", "",
                 markdown_table(("n", "nonzero entries", "terms"), table, align="rrr")]
        forms = self.matrix_forms()
        if not self.architecture.is_plain:
            lines += ["", f"Leading coefficients: no formula claimed for {self.architecture.describe_variant()} "
                          "(the matrix forms are derived for one head, no mask, no residual stream); the "
                          "coefficients above are computed."]
        if forms:
            t = self.architecture.tokens
            lines += ["", f"Leading coefficients (matrix forms, t = {t}):", ""]
            for lc in forms:
                definitions = ", ".join(
                    f"{name} = " + {"H": f"I - J/{t}", "J": f"ones({t}, {t})"}.get(name, str(d))
                    for name, d in lc.definitions)
                lines.append(f"- layer {lc.layer}, F_{lc.order} - F_{lc.order}|What_{lc.layer}=0 = "
                             f"{lc.matrix_form} with {definitions}")
        return "\n".join(lines) + "\n"

    def to_markdown(self) -> str:
        """Markdown: one display equation per coefficient, and how they were obtained."""
        lines = [f"# Expansion along {self._describe()}", "",
                 f"- architecture: {self.architecture.describe()}",
                 f"- {self.method}", ""]
        for n, c in enumerate(self.coefficients):
            lines += [f"$$F_{{{n}}} = {_latex(c)}$$", ""]
        return "\n".join(lines).rstrip() + "\n"

    def __str__(self) -> str:
        lines = [f"expansion along {self._describe()} modulo eps^{self.truncation}"]
        for n, c in enumerate(self.coefficients):
            lines.append(f"F_{n} = {c.tolist()}")
        return "\n".join(lines)


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


class _ExpansionLatex:
    """The LaTeX document of an :class:`Expansion` (:meth:`Expansion.to_latex`).

    The entries are held as python-flint polynomials in one ring (the
    expansion's own when it has them): exact comparisons with the matrix
    forms, and factoring.  Entries that are not polynomials over Q (an
    irrational Taylor coefficient, floats) are written term by term.
    """

    def __init__(self, F: Expansion):
        self.F = F
        arch = F.architecture
        self.point = {name: to_sympy(value) for name, value in F.point}
        names = package_symbols(arch, F.truncation)
        cached = F.__dict__.get("_flint")
        if cached is not None:
            symbols, self.raw = cached
        else:
            free = {s for s in F.free_symbols if isinstance(s, sp.Symbol)}
            symbols = sorted({s for name, s in names.items() if name not in self.point} | free, key=lambda s: s.name)
            self.raw = None
        self.symbols = tuple(symbols)
        self.subs = {names[name]: value for name, value in self.point.items() if name in names}
        self.domain = PolynomialSeriesDomain(1, self.symbols, coefficient_values=self.subs)
        self.back = FlintToSympy(self.symbols)
        self._polys = {}

    # -- the entries in the ring ---------------------------------------------------------------------------
    def polys(self, n: int):
        """``F_n`` as an object array of ring elements, or None when it is not polynomial over Q."""
        if n not in self._polys:
            rows, cols = self.F.architecture.widths[-1], self.F.architecture.tokens
            out = np.empty((rows, cols), dtype=object)
            try:
                for r in range(rows):
                    for c in range(cols):
                        value = self.raw[r, c, n] if self.raw is not None else self.F[n][r, c]
                        out[r, c] = self.domain._convert(value)
            except (DomainError, SymattnError, TypeError, ValueError):
                out = None
            self._polys[n] = out
        return self._polys[n]

    def _agrees(self, n: int, build) -> bool:
        """Whether ``F_n`` equals the matrix ``build(convert, subs)`` entry by entry, exactly.

        A random rational point first (cheap: a wrong form is usually told
        there), then the polynomials themselves.
        """
        import flint

        polys = self.polys(n)
        if polys is None:
            return False
        rng = random.Random(n)
        values = [sp.Rational(rng.randint(-97, 97), rng.randint(1, 13)) for _ in self.symbols]
        at = dict(zip(self.symbols, values))
        args = [to_fmpq(v) for v in values] or [to_fmpq(0)]
        by_symbol = {**self.subs, **at}
        try:
            quick = build(lambda v: to_fmpq(sp.sympify(v, strict=True).xreplace(by_symbol)), by_symbol)
        except (DomainError, SymattnError, TypeError, ValueError, ZeroDivisionError):
            return False
        if quick.shape != polys.shape:
            return False
        for index, value in np.ndenumerate(polys):
            here = value(*args) if isinstance(value, flint.fmpq_mpoly) else value
            if to_fmpq(quick[index]) != here:
                return False
        exact = build(self.domain._convert, self.subs)
        return all(self.domain._convert(exact[index]) == value for index, value in np.ndenumerate(polys))

    def _mean_form(self, convert, subs):
        """``(1/t) P X J`` (``F_0`` of a normalized network) at ``subs``, in the ring of ``convert``."""
        arch = self.F.architecture
        base = curve_symbols(arch)
        P = None
        for V in base.V:
            V = sp.Matrix(V).xreplace(subs)
            P = V if P is None else V * P
        X = sp.Matrix(arch.input_symbols()).xreplace(subs)
        t = arch.tokens
        mean = P * X * sp.ones(t, 1) / t
        return object_array(mean * sp.ones(1, t), convert)

    @staticmethod
    def _leading_form(lc: LeadingCoefficient):
        def build(convert, subs):
            env = {s: object_array(sp.Matrix(m).xreplace(subs), convert) for s, m in lc.environment().items()}
            return lc._evaluate_in_ring(convert, env, {}, effective="matrix")

        return build

    # -- one entry, factored ------------------------------------------------------------------------------
    def entry_atoms(self, poly) -> list[str]:
        """An entry as atoms: grouped by the monomials in the generic ``c_j``, each group factored."""
        import re

        import flint

        if not isinstance(poly, flint.fmpq_mpoly):
            return [sp.latex(from_fmpq(poly))]
        if poly == 0:
            return ["0"]
        generic = [i for i, s in enumerate(self.symbols) if re.fullmatch(r"c_[0-9]+", s.name)]
        groups = {}
        for monomial, coefficient in zip(poly.monoms(), poly.coeffs()):
            key = tuple(monomial[i] for i in generic)
            rest = tuple(0 if i in generic else e for i, e in enumerate(monomial))
            groups.setdefault(key, {})[rest] = coefficient
        ordered = sorted(groups, key=lambda key: (sum(key), tuple(-e for e in key)))
        atoms = []
        for k, key in enumerate(ordered):
            part = poly.context().from_dict(groups[key])
            content, factors = part.factor()
            c_monomial = sp.Mul(*[self.symbols[i] ** e for i, e in zip(generic, key) if e])
            atoms += _signed(self._product_atoms(abs(content), c_monomial, factors), k == 0, content < 0)
        return atoms

    def _product_atoms(self, number, c_monomial, factors) -> list[str]:
        atoms = []
        if number != 1:
            atoms.append(rf"\tfrac{{{number.p}}}{{{number.q}}}" if number.q != 1 else str(number.p))
        if c_monomial != 1:
            atoms.append(sp.latex(c_monomial))
        single, sums = [], []
        for factor, exponent in factors:
            expr = self.back(factor)
            (single if expr.is_Symbol else sums).append((expr, int(exponent)))
        if single:
            atoms += [sp.latex(f) for f in sp.Mul(*[e ** m for e, m in single]).as_ordered_factors()]
        for expr, exponent in sums:
            power = f"^{{{exponent}}}" if exponent > 1 else ""
            whole = rf"\left({sp.latex(expr)}\right){power}"
            if _shown_width(whole) <= _LATEX_WIDTH * 0.8:
                atoms.append(whole)
                continue
            terms = _sum_atoms(expr, _LATEX_WIDTH)  # a long factor: broken over lines
            terms[0], terms[-1] = r"\bigl(" + terms[0], terms[-1] + r"\bigr)" + power
            atoms += terms
        return atoms or ["1"]

    # -- the document ---------------------------------------------------------------------------------------
    def header(self) -> str:
        import re

        F, arch = self.F, self.F.architecture
        normalizers = ", ".join(dict.fromkeys(n.name for n in arch.normalizers))
        curve = latex_escape(F._describe())
        curve = re.sub(r"\b([QKV])\\_i = eps ([QKV])t\\_i\b", r"$\1_i = \\varepsilon \\tilde{\2}_i$", curve)
        curve = re.sub(r"\b([QKV])t\\_i\b", r"$\\tilde{\1}_i$", curve)
        curve = re.sub(r"\b([QKVX])\\_i = eps\b", r"$\1_i = \\varepsilon$", curve)
        curve = re.sub(r"\beps\b", r"$\\varepsilon$", curve)
        lines = [r"\section*{Expansion of the output}", r"\begin{itemize}",
                 rf"\item architecture: {latex_escape(arch.describe())}",
                 rf"\item normalizer: {latex_escape(normalizers)}",
                 rf"\item curve: {curve}",
                 rf"\item truncation: the series modulo $\varepsilon^{{{F.truncation}}}$, "
                 rf"that is $F_{{0}}, \dots, F_{{{F.order}}}$ in $F = \sum_n \varepsilon^n F_n$"]
        if self.point:
            shown = ", ".join(f"${latex(sp.Symbol(name))} = {sp.latex(value)}$" for name, value in self.point.items())
            lines.append(rf"\item at the point {shown}")
        lines.append(r"\end{itemize}")
        return "\n".join(lines)

    def document(self, max_terms: int) -> str:
        F = self.F
        t = F.architecture.tokens
        parts = [self.header()]
        whole, partial = {}, []
        if F.architecture.is_plain and all(not n.is_lightning for n in F.architecture.normalizers) \
                and self._agrees(0, self._mean_form):
            whole[0] = _matrix_latex(sp.Rational(1, t) * matrix_symbols(F.architecture)["P"]
                                     * matrix_symbols(F.architecture)["X"] * matrix_symbols(F.architecture)["J"])
        forms = F.matrix_forms()
        for lc in forms:
            if lc.order not in whole and self._agrees(lc.order, self._leading_form(lc)):
                whole[lc.order] = _matrix_latex(lc.matrix_form)
            else:
                partial.append(lc)
        if forms or whole:
            if forms:
                lines = forms[-1]._definition_lines()
            else:
                lines = [rf"J = \mathbf{{1}}\mathbf{{1}}^{{\top}} \ ({t} \times {t}),\quad "
                         rf"P = {_matrix_latex(_value_product(F.architecture))}"]
            parts += [r"\subsection*{Matrix forms}",
                      "In the named matrices (the effective score matrices $\\widehat{W}_i$ and the score Gram "
                      "matrices of the input $C_i$)",
                      "\\begin{align*}\n" + " \\\\\n".join("&" + line for line in lines) + "\n\\end{align*}"]
            for lc in partial:
                parts += [f"the part of $F_{{{lc.order}}}$ that depends on the scores of layer {lc.layer} is",
                          "\\begin{align*}\n&" + f"{lc._left_side()} = {_matrix_latex(lc.matrix_form)}"
                          + "\n\\end{align*}"]
        parts += [r"\subsection*{Coefficients}", r"\allowdisplaybreaks"]
        written, left = 0, []
        for n in range(F.truncation):
            if n in whole:
                parts.append("\\begin{equation*}\n" + f"F_{{{n}}} = {whole[n]}\n" + "\\end{equation*}")
                continue
            polys = self.polys(n)
            entries = list(np.ndenumerate(polys)) if polys is not None else \
                [((r, c), F[n][r, c]) for r in range(F[n].rows) for c in range(F[n].cols)]
            if all(value == 0 for _, value in entries):
                parts.append("\\begin{equation*}\n" + f"F_{{{n}}} = 0\n" + "\\end{equation*}")
                continue
            lines, skipped, skipped_terms = [], 0, 0
            for (r, c), value in entries:
                terms = len(value) if hasattr(value, "monoms") else len(sp.Add.make_args(value)) if value != 0 else 0
                if left or skipped or written + terms > max_terms:
                    skipped, skipped_terms = skipped + 1, skipped_terms + terms
                    continue
                written += terms
                atoms = self.entry_atoms(value) if polys is not None else _sum_atoms(sp.expand(value), _LATEX_WIDTH)
                lines.append(f"(F_{{{n}}})_{{{r + 1}{c + 1}}} &= "
                             + " \\\\\n  &\\quad ".join(_pack_lines(atoms)))
            if lines:
                parts.append("\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}")
            if skipped:
                left.append((n, skipped, skipped_terms))
        if left:
            shown = "; ".join(f"{entries} entr{'y' if entries == 1 else 'ies'} of $F_{{{n}}}$ ({terms:,} terms)"
                              for n, entries, terms in left).replace(",", "{,}")
            total = sum(entries for _, entries, _ in left), sum(terms for _, _, terms in left)
            parts.append(f"Left out past {max_terms:,} terms written entry by entry: {total[0]:,} entries with "
                         f"{total[1]:,} terms in all ({shown}). ".replace(",", "{,}").replace("{{,}}", "{,}")
                         + r"\texttt{to\_latex(max\_terms=...)} writes more, and the JSON export "
                         r"(\texttt{to\_json()}, \texttt{symattn expand --json}) has every entry.")
        return "\n".join(parts) + "\n"


def _value_product(arch: Architecture):
    named = matrix_symbols(arch)
    return sp.MatMul(*[named[f"Vt{i}"] for i in range(arch.layers, 0, -1)]) if arch.layers > 1 else named["Vt1"]


def _default_truncation(arch: Architecture, curve: Curve) -> int:
    """Just past where layer 1's scores first appear: one more than the input's power plus ``k_1`` times their
    valuation (``2k + 1`` on the collapse curve)."""
    k = arch.normalizers[0].k or 1
    q, key = curve.block_power("Q", 1), curve.block_power("K", 1)
    if q is None or key is None:
        return 2 * k + 1
    valuation = q + key + 2 * curve.input_power
    return max(1, curve.input_power + valuation * k) + 1


def _validate_truncation(truncation, max_truncation: int) -> int:
    if isinstance(truncation, bool) or not isinstance(truncation, (int, np.integer)) or truncation < 2:
        raise TruncationError(f"truncation must be an integer >= 2 (the series is kept modulo eps^truncation: "
                              f"F_0 .. F_(truncation-1)), got {truncation!r}")
    if truncation > max_truncation:
        raise TruncationError(f"truncation {truncation} is too high for an exact expansion; use at most "
                              f"{max_truncation} (or raise max_truncation)")
    return int(truncation)


def _point_map(point) -> dict:
    """``{name: value}`` (names or symbols as keys) -> ``{name: sympy number}``."""
    if point is None:
        return {}
    if not isinstance(point, dict):
        raise SymattnError(f"point must be a dict of symbol names to numbers, got {type(point).__name__}")
    out = {}
    for key, value in point.items():
        name = key.name if isinstance(key, sp.Symbol) else str(key)
        out[name] = to_sympy(value, what=f"value for {name}", error=SymattnError)
        if out[name].free_symbols:
            raise SymattnError(f"the value for {name} must be a number, got {value!r}")
    return out


def _normalizer_symbols(arch: Architecture, truncation: int) -> dict:
    """``{name: symbol}`` of a generic normalizer's ``c_1 .. c_truncation`` (what ``F_0 .. F_{N-1}`` may use)."""
    out = {}
    for n in arch.normalizers:
        if n.is_generic:
            for m in range(1, truncation + 1):
                out[n.coefficient_symbol(m).name] = n.coefficient_symbol(m)
    return out


def expand(arch: Architecture, curve: Curve | None = None, *, truncation: int | None = None, normalizer=None,
           point: dict | None = None, max_params: int = MAX_PARAMS, max_truncation: int = MAX_TRUNCATION,
           max_terms: int = MAX_TERMS, progress: bool = False, max_memory=None, **removed) -> Expansion:
    """The output along a curve modulo ``eps^truncation``: ``F_0, ..., F_{truncation-1}``, exactly.

    Parameters
    ----------
    arch : Architecture
    curve : Curve, optional
        Default :func:`symattn.curves.collapse` (``Q_i = eps Qt_i``, ``K_i = eps Kt_i``).
    truncation : int, optional
        ``N``: the series is kept modulo ``eps^N``, i.e. ``F_0 .. F_{N-1}`` (an
        integer ``>= 2``; the same meaning as the spectrum's truncation).
        Default: just past the order where layer 1's scores first appear
        (``2k + 1`` on the collapse curve, ``k + 1`` when only queries
        collapse, ``2k + 2`` under input scaling).  Keyword only.  The old
        ``order=n`` (the highest power kept) is refused with a
        TruncationError naming ``truncation=n+1``.
    normalizer : Normalizer, str or list, optional
        Replaces the architecture's normalizers, e.g. ``Normalizer.generic(k)``,
        whose Taylor coefficients ``c_k, c_{k+1}, ...`` stay symbols.  Keyword only.
    point : dict, optional
        Numbers for some symbols, by name (``{"Qt1_11": 2, "x_12": -1, "c_2": 3}``);
        the rest stay symbols.  With every symbol rational the computation
        runs over Q with python-flint numbers (fast).
    max_params, max_truncation, max_terms : int
        Size guards: parameters, truncation, and terms of any series coefficient
        during a symbolic computation (checked as it runs; the sympy fallback
        for irrational Taylor coefficients allows ``max_terms // 200``).
    progress : bool
        A bar over the layers of the forward pass and then the orders converted
        to sympy (on a terminal only).
    max_memory : int or str, optional
        Memory the process may hold (e.g. ``"2G"``; default ``$SYMATTN_MAX_MEMORY``
        or half the machine): watched after each series product of a symbolic
        expansion, whose size no estimate knows before it runs.

    Returns
    -------
    Expansion

    Raises
    ------
    ShapeError
        More than ``max_params`` parameters.
    TruncationError
        A truncation that is not an integer ``>= 2`` or is above ``max_truncation``,
        the old ``order=`` / ``max_order=``, or a symbolic expansion that grows
        beyond ``max_terms`` terms.
    ResourceLimitError
        A symbolic expansion that holds more memory than ``max_memory``.
    DomainError
        A curve on which the scores do not vanish at ``eps = 0``.

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2)
    >>> F = expand(arch, truncation=3, normalizer=Normalizer.generic(k=1))
    >>> sp.factor(F[2][0, 0])
    Kt1_11*Qt1_11*Vt1_11*c_1*x_11*(x_11 - x_12)**2/4
    >>> expand(arch, truncation=1)
    Traceback (most recent call last):
    ...
    symattn.errors.TruncationError: truncation must be an integer >= 2 (the series is kept modulo eps^truncation: F_0 .. F_(truncation-1)), got 1
    >>> expand(arch, order=2)
    Traceback (most recent call last):
    ...
    symattn.errors.TruncationError: expand takes truncation=N (the series modulo eps^N: F_0..F_(N-1)), not order= (the highest power of eps kept): write truncation=3 for order=2 (truncation = order + 1)
    """
    _refuse_order("expand", removed)
    _check_arch(arch)
    curve = collapse() if curve is None else curve
    if not isinstance(curve, Curve):
        raise SymattnError(f"curve must be a Curve (see symattn.curves), got {type(curve).__name__}")
    curve.validate(arch)
    used = _with_normalizer(arch, normalizer)
    if used.tokens > MAX_TOKENS:
        raise ShapeError(f"--tokens {used.tokens} is too many for an entrywise symbolic expansion: at most "
                         f"{MAX_TOKENS} (each token adds {used.widths[0]} input symbols and {used.widths[-1]} "
                         f"output entries); give fewer tokens, or the matrix formulas of leading_coefficient")
    if used.param_count > max_params:
        raise ShapeError(f"{used.param_count} parameters is too large for an entrywise symbolic expansion; "
                         f"use at most {max_params} (or raise max_params), or the matrix formulas of "
                         f"leading_coefficient")
    if truncation is None:
        truncation = _default_truncation(used, curve)
        if truncation > max_truncation:  # a generic normalizer of high k: say which value of it fits
            raise TruncationError(
                f"the first order at which layer 1's scores appear, {truncation - 1} (k = {used.normalizers[0].k} "
                f"for {used.normalizers[0].name}), needs truncation={truncation}, too high for an exact expansion: "
                f"at most {max_truncation}; give a normalizer of lower k (--generic K with K <= "
                f"{max(1, (max_truncation - 1) // 2)}) or --truncation")
    else:
        truncation = _validate_truncation(truncation, max_truncation)
    from .limits import memory_limit

    max_bytes = memory_limit(max_memory)
    values = _point_map(point)
    start = time.perf_counter()
    from .limits import progress_bar

    normalized = sum(1 for n in used.normalizers if not n.is_lightning)
    with progress_bar(progress, total=normalized + truncation, desc="expand", unit="step") as bar:
        bar.set_postfix_str("forward pass")
        domain, raw, symbolic = _series_coefficients(used, curve, truncation, values, max_terms,
                                                     layer_done=bar.update, max_bytes=max_bytes)
        if isinstance(domain, PolynomialSeriesDomain):
            matrices = LazyCoefficients(domain.symbols, raw)  # written as sympy when read
            bar.update(truncation)
        else:
            convert = from_fmpq if isinstance(domain, RationalSeriesDomain) else sp.expand
            matrices = []
            for n in range(truncation):
                bar.set_postfix_str(f"F_{n}")
                matrices.append(CoefficientMatrix(raw.shape[0], raw.shape[1],
                                                  [convert(raw[r, c, n]) for r in range(raw.shape[0])
                                                   for c in range(raw.shape[1])]))
                bar.update()
            matrices = tuple(matrices)
    seconds = time.perf_counter() - start
    used_symbols = matrices.free_symbols() if isinstance(matrices, LazyCoefficients) else \
        set().union(*(m.free_symbols for m in matrices))
    generic_left = any(isinstance(c, sp.Symbol) and c.name.startswith("c_") for c in used_symbols)
    method = (f"one forward pass over truncated series mod eps^{truncation} with exact coefficients "
              f"({domain.name}); base point Qt_i, Kt_i, Vt_i and input x_rc "
              + ("symbolic" if symbolic else "at the given rational point")
              + ("; generic normalizer coefficients c_j symbolic" if generic_left else ""))
    replaced = None if normalizer is None or isinstance(normalizer, (list, tuple)) else used.normalizers[0]
    result = Expansion(used, curve, truncation, matrices, replaced, tuple(sorted(values.items())), domain.name,
                       seconds, method)
    if isinstance(domain, PolynomialSeriesDomain):  # kept for fast numeric substitution (Expansion.subs)
        object.__setattr__(result, "_flint", (domain.symbols, raw))
    return result


def _series_coefficients(used: Architecture, curve: Curve, truncation: int, values: dict, max_terms: int,
                         ring=None, layer_done=None, max_bytes: int | None = None):
    """Run the forward pass along the curve modulo ``eps^truncation``: ``(domain, coefficients (rows, cols,
    truncation), symbolic)``.

    ``ring`` fixes the polynomial ring's symbols (to compare several runs in one ring);
    ``layer_done()`` is called as each normalized layer's attention is computed (progress).
    """
    base = curve_symbols(used)
    X = used.input_symbols()
    by_name = {s.name: s for m in (*base.Q, *base.K, *base.V, X) for s in m}
    coefficient_names = _normalizer_symbols(used, truncation)
    unknown = sorted(set(values) - set(by_name) - set(coefficient_names))
    if unknown:
        raise SymattnError(f"point names unknown symbols {unknown}; symbols are named like "
                           f"{next(iter(by_name))}, x_11 and c_1 (normalizer coefficients)")
    substitution = {by_name[n]: v for n, v in values.items() if n in by_name}
    coefficient_values = {coefficient_names[n]: v for n, v in values.items() if n in coefficient_names}
    base = Parameters(*(tuple(sp.ImmutableMatrix(m.xreplace(substitution)) for m in blocks)
                        for blocks in (base.Q, base.K, base.V)))
    X = sp.ImmutableMatrix(X.xreplace(substitution))

    free = set().union(*(m.free_symbols for m in (*base.Q, *base.K, *base.V, X)))
    generic_left = any(n.is_generic for n in used.normalizers) and \
        len(coefficient_values) < len(coefficient_names)
    all_rational = ring is None and not free and not generic_left and all(
        n.is_generic or n.is_lightning or n.has_rational_taylor for n in used.normalizers) and all(
        to_sympy(v).is_Rational for v in substitution.values())
    description = f"of {used.param_count} parameters modulo eps^{truncation} "
    if all_rational:
        domains = [RationalSeriesDomain(truncation, coefficient_values)]
    else:
        if ring is None:
            ring = sorted(free | {c for n, c in coefficient_names.items() if n not in values},
                          key=lambda s: s.name)
        domains = [PolynomialSeriesDomain(truncation, ring, coefficient_values, max_terms, description,
                                          max_bytes=max_bytes)]
        domains.append(SymbolicSeriesDomain(truncation, coefficient_values, max(1, max_terms // 200),
                                             description, max_bytes=max_bytes))
    keys = {name: [key for key, _ in used.blocks() if key[0] == name] for name in "QKV"}  # one per head
    point = {key: np.array(matrix.tolist(), dtype=object)
             for name, blocks in (("Q", base.Q), ("K", base.K), ("V", base.V))
             for key, matrix in zip(keys[name], blocks)}
    bank = np.array([X.tolist()], dtype=object)
    for attempt, domain in enumerate(domains):
        if layer_done is not None:
            _report_layers(domain, layer_done)
        try:
            output = series_output(used, curve, point, bank, domain)
            break
        except DomainError as err:
            if attempt + 1 < len(domains):
                continue  # e.g. irrational Taylor coefficients: sympy coefficients instead
            raise DomainError(f"cannot expand along {curve.describe(used.layers)}: {err}") from None
    return domain, output[:, :, 0, :], bool(free)


def _report_layers(domain, layer_done) -> None:
    """Call ``layer_done()`` after each ``domain.attention``: once per normalized layer of the forward pass."""
    attention = domain.attention

    def attention_then_report(scores, normalizer, **mask):
        weights = attention(scores, normalizer, **mask)
        layer_done()
        return weights

    domain.attention = attention_then_report


# -- the leading coefficients in matrix form --------------------------------------------------
def _layer_k(arch: Architecture) -> list[int]:
    ks = []
    for i, n in enumerate(arch.normalizers, start=1):
        if n.is_lightning:
            raise NormalizerError(f"layer {i} is lightning attention (no normalization): the leading "
                                  "coefficients are derived for normalizers; expand it entrywise instead")
        ks.append(int(n.k))
    return ks


def _orders(ks: list[int]) -> tuple[list[int], list[int]]:
    """``n_i`` (first appearance of layer i's scores) and ``nu_i`` (first variation of layer i's tokens)."""
    n, nu = [2 * ks[0]], [2 * ks[0]]
    for k in ks[1:]:
        n.append(2 * nu[-1] + 2 * k)
        nu.append(3 * nu[-1] + 2 * k)
    return n, nu


def leading_orders(arch: Architecture, normalizer=None) -> list[int]:
    """Orders ``n_i`` at which layer ``i``'s scores first appear in ``F`` along the collapse curve.

    ``n_1 = 2 k_1``, ``n_i = 2 nu_{i-1} + 2 k_i`` with ``nu_1 = 2 k_1`` and
    ``nu_i = 3 nu_{i-1} + 2 k_i`` (the order at which the tokens of layer ``i``
    first differ); for a common ``k``, ``n_i = 2k 3^(i-1)``, one more than the
    contact order.

    Examples
    --------
    >>> leading_orders(Architecture.uniform(layers=3))
    [2, 6, 18]
    >>> leading_orders(Architecture.uniform(layers=3), normalizer="cosh")
    [4, 12, 36]
    """
    _check_arch(arch)
    return _orders(_layer_k(_with_normalizer(arch, normalizer)))[0]


def _normalizer_coefficient(normalizer: Normalizer, k: int):
    if normalizer.is_generic:
        return normalizer.coefficient_symbol(k)
    return normalizer.taylor(k)[k]


@dataclass(frozen=True)
class LeadingCoefficient(FormattedResult):
    """The coefficient of ``eps^{n_i}`` in which layer ``i``'s scores first appear.

    ``formula`` is the part of ``F_{n_i}`` that depends on the layer-``i``
    scores, ``F_{n_i} - F_{n_i}|_{Wt_i = 0}`` (the rest of ``F_{n_i}`` comes
    from the earlier layers only), as a sympy matrix expression in the
    MatrixSymbols ``X``, ``Qt1, Kt1, Vt1, ...`` for this architecture's
    sizes; ``effective_formula`` is the same matrix in the effective
    parameters (MatrixSymbols ``P`` and ``What_1, What_2, ...``).  The LaTeX is
    the formula for every width and token count.  All ``F_n`` with
    ``n < n_i`` are independent of layer ``i``'s scores.

    Attributes
    ----------
    architecture : Architecture
    layer : int
    order : int
        ``n_i``.
    formula : sympy MatrixExpr
        ``d_l x t``, in ``X`` and the base point ``Qt_i, Kt_i, Vt_i``.
    effective_formula : sympy MatrixExpr
        ``d_l x t``, in ``X``, ``P = Vt_l ... Vt_1`` and ``What_i = Pt_{i-1}^T Kt_i^T Qt_i Pt_{i-1}``.
    steps : tuple
        ``((name, MatrixExpr or scalar), ...)``: the intermediate quantities
        of ``formula`` (``Y_1``, ``mu_1``, ``alpha_2``, ``Sigma_2``, ...) in order.
    effective_steps : tuple
        The same for ``effective_formula`` (``C_i``, ``Z_i``, ...).
    matrix_symbols : tuple
        The MatrixSymbols of ``formula`` (``X``, ``Qt1``, ``Kt1``, ``Vt1``, ...).
    ks : tuple of int
        Each layer's first nonconstant degree ``k_i``.
    coefficients : tuple
        Each layer's ``c_{k_i}`` (a symbol for a generic normalizer).
    latex : str
        The general formula (any widths, tokens), as LaTeX ``aligned`` lines.
    method : str

    Examples
    --------
    >>> lc = leading_coefficient(Architecture.uniform(layers=1, width=2, tokens=3), 1)
    >>> lc.order
    2
    >>> lc.formula
    (1/3)*Vt1*X*(I - (1/3)*1)*X.T*Kt1.T*Qt1*X
    >>> lc.effective_formula
    (1/3)*P*X*(I - (1/3)*1)*X.T*What_1*X
    """

    architecture: Architecture
    layer: int
    order: int
    formula: sp.MatrixExpr
    effective_formula: sp.MatrixExpr
    steps: tuple
    effective_steps: tuple
    matrix_symbols: tuple
    ks: tuple
    coefficients: tuple
    latex: str
    method: str = ""
    matrix_form: object = None
    definitions: tuple = ()

    def environment(self, parameters: Parameters | None = None, X=None) -> dict:
        """MatrixSymbol -> explicit matrix: the given values, else the symbols of :func:`curve_symbols`."""
        arch = self.architecture
        parameters = curve_symbols(arch) if parameters is None else parameters
        X = arch.input_symbols() if X is None else X
        env = {}
        for s in self.matrix_symbols:
            if s.name == "X":
                env[s] = sp.Matrix(X)
            else:
                block, layer = s.name[0], int(s.name[2:])
                env[s] = sp.Matrix({"Q": parameters.Q, "K": parameters.K, "V": parameters.V}[block][layer - 1])
        return env

    def evaluate(self, parameters: Parameters | None = None, X=None, coefficient_values: dict | None = None,
                 effective: bool = False, form: str | None = None, progress: bool = False) -> sp.Matrix:
        """The formula as an explicit matrix, at given parameters / input (default: symbols).

        Parameters
        ----------
        parameters : Parameters, optional
            The base point ``Qt_i, Kt_i, Vt_i`` (default: the symbols of :func:`curve_symbols`).
        X : matrix, optional
            The input (default: the symbols ``x_rc``).
        coefficient_values : dict, optional
            Values of generic normalizer coefficients (``{"c_1": 2}``).
        effective : bool
            Evaluate ``effective_formula`` (through ``P`` and ``What_i``) instead.
        form : {"tokens", "effective", "matrix"}, optional
            Which of the three equal forms to evaluate: ``formula`` (default),
            ``effective_formula`` (as ``effective=True``) or ``matrix_form``
            (``H``, ``J``, ``C_i`` evaluated from their definitions).
        progress : bool
            A bar over the entries written out in sympy (on a terminal only;
            tens of thousands of terms per entry take about a second each).

        Examples
        --------
        >>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
        >>> lc = leading_coefficient(arch, 1)
        >>> lc.evaluate(arch.parameters_from([[[1]]], [[[1]]], [[[1]]]), [[1, 0]])
        Matrix([[1/4, 0]])
        >>> lc.evaluate(arch.parameters_from([[[1]]], [[[1]]], [[[1]]]), [[1, 0]], form="matrix")
        Matrix([[1/4, 0]])
        """
        if form is None:
            form = "effective" if effective else "tokens"
        if form not in ("tokens", "effective", "matrix"):
            raise SymattnError(f"form must be 'tokens', 'effective' or 'matrix', got {form!r}")
        effective = {"tokens": False, "effective": True, "matrix": "matrix"}[form]
        env = self.environment(parameters, X)
        scalars = {}
        for key, value in (coefficient_values or {}).items():
            name = key if isinstance(key, str) else key.name
            for c in self.coefficients:
                if isinstance(c, sp.Symbol) and c.name == name:
                    scalars[c] = to_sympy(value)
        symbols = set().union(*(sp.Matrix(m).free_symbols for m in env.values()))
        symbols |= {c for c in self.coefficients if isinstance(c, sp.Symbol) and c not in scalars}
        try:
            if symbols:
                domain = PolynomialSeriesDomain(1, sorted(symbols, key=lambda s: s.name))
                convert, back = domain._convert, FlintToSympy(domain.symbols)
            else:
                convert, back = to_fmpq, from_fmpq
            array = self._evaluate_in_ring(convert, {k: object_array(v, convert) for k, v in env.items()},
                                           {c: convert(v) for c, v in scalars.items()}, effective)
            from .limits import progress_bar

            entries = []
            with progress_bar(progress, total=array.size, desc=f"layer {self.layer} explicit", unit="entry") as bar:
                for value in array.flat:
                    entries.append(back(value))
                    bar.update()
            return sp.Matrix(array.shape[0], array.shape[1], entries)
        except (DomainError, SymattnError):  # not polynomial over Q: sympy arithmetic
            if effective == "matrix":
                formula, env = self.matrix_form, self._matrix_environment(env, sympy=True)
            elif effective:
                formula, env = self.effective_formula, self._effective_environment(env, sympy=True)
            else:
                formula = self.formula
            value = evaluate_matrix_expression(formula, env)
            value = value.xreplace(scalars) if isinstance(value, sp.MatrixBase) else sp.Matrix(value).xreplace(scalars)
            return value.applyfunc(sp.expand)

    def _matrix_environment(self, env: dict, sympy: bool = False, convert=None) -> dict:
        """The named matrices of :attr:`matrix_form` (``P, X, What_i, H, J, C_i``, scalars ``alpha_i``)."""
        by_name = {s.name: v for s, v in env.items()}
        dot = (lambda a, b: a * b) if sympy else np.dot
        arch = self.architecture
        t = arch.tokens
        out, prefix = {}, None
        for i in range(1, arch.layers + 1):
            if f"Qt{i}" in by_name:
                W = dot(by_name[f"Kt{i}"].T, by_name[f"Qt{i}"])
                out[f"What_{i}"] = W if prefix is None else dot(dot(prefix.T, W), prefix)
            prefix = by_name[f"Vt{i}"] if prefix is None else dot(by_name[f"Vt{i}"], prefix)
        X = by_name["X"]
        out["P"], out["X"] = prefix, X
        if sympy:
            out["J"] = sp.ones(t, t)
            out["H"] = sp.eye(t) - out["J"] / t
        else:
            one, zero, inverse = convert(sp.Integer(1)), convert(sp.Integer(0)), convert(sp.Rational(1, t))
            out["J"], out["H"] = np.empty((t, t), dtype=object), np.empty((t, t), dtype=object)
            for r in range(t):  # element by element: numpy would read a polynomial as a sequence
                for c in range(t):
                    out["J"][r, c] = one
                    out["H"][r, c] = (one if r == c else zero) - inverse
        for i in range(1, self.layer + 1):
            out[f"C_{i}"] = dot(dot(X.T, out[f"What_{i}"]), X)
            entries = [out[f"C_{i}"][r, c] for r in range(t) for c in range(t)]
            total = entries[0]
            for value in entries[1:]:
                total = total + value
            out[f"alpha_{i}"] = total / t**2 if sympy else total * convert(sp.Rational(1, t**2))
        symbols = {s.name: s for s in self.matrix_form.atoms(sp.MatrixSymbol)}
        symbols.update({s.name: s for s in self.matrix_form.atoms(sp.Symbol) if s.name.startswith("alpha_")})
        return {symbols[name]: value for name, value in out.items() if name in symbols}

    def _effective_environment(self, env: dict, sympy: bool = False) -> dict:
        """``P``, ``What_i`` and ``X`` from explicit ``Qt_i, Kt_i, Vt_i`` (object arrays or sympy)."""
        by_name = {s.name: v for s, v in env.items()}
        dot = (lambda a, b: a * b) if sympy else np.dot
        out = {}
        arch = self.architecture
        prefix = None  # Pt_{i-1}
        for i in range(1, arch.layers + 1):
            if f"Qt{i}" in by_name:
                W = dot(by_name[f"Kt{i}"].T, by_name[f"Qt{i}"])
                out_name = f"What_{i}"
                out[out_name] = W if prefix is None else dot(dot(prefix.T, W), prefix)
            prefix = by_name[f"Vt{i}"] if prefix is None else dot(by_name[f"Vt{i}"], prefix)
        out["P"] = prefix
        out["X"] = by_name["X"]
        symbols = {s.name: s for s in self.effective_formula.atoms(sp.MatrixSymbol)}
        return {symbols[name]: value for name, value in out.items() if name in symbols}

    def _evaluate_in_ring(self, convert, env: dict, scalars: dict, effective: bool) -> np.ndarray:
        evaluator = RingEvaluator(convert)
        if effective == "matrix":
            return evaluator.matrix(self.matrix_form,
                                    {**self._matrix_environment(env, convert=convert), **scalars})
        if effective:
            return evaluator.matrix(self.effective_formula, {**self._effective_environment(env), **scalars})
        return evaluator.matrix(self.formula, {**env, **scalars})

    @property
    def free_symbols(self) -> set:
        """The scalar symbols of :meth:`explicit`: ``Qt1_11, ..., x_11, ...`` and the generic ``c_k``.

        Examples
        --------
        >>> lc = leading_coefficient(Architecture.uniform(layers=1, width=1, tokens=2), 1)
        >>> sorted(s.name for s in lc.free_symbols)
        ['Kt1_11', 'Qt1_11', 'Vt1_11', 'x_11', 'x_12']
        """
        symbols = set().union(*(sp.Matrix(m).free_symbols for m in self.environment().values()))
        return symbols | {c for c in self.coefficients if isinstance(c, sp.Symbol)}

    def ring_matrix(self, convert) -> np.ndarray:
        """The formula entry by entry in a ring: ``convert`` maps sympy numbers and symbols to ring elements.

        What :func:`symattn.check.check_expression` uses to compare a claimed
        leading coefficient in python-flint polynomials, without writing it
        out in sympy (:meth:`explicit`).

        Examples
        --------
        >>> from fractions import Fraction
        >>> lc = leading_coefficient(Architecture.uniform(layers=1, width=1, tokens=2), 1)
        >>> point = {s: Fraction(1) for s in lc.free_symbols} | {lc.environment()[sp.MatrixSymbol("X", 1, 2)][1]: 0}
        >>> lc.ring_matrix(lambda v: point[v] if v in point else Fraction(int(v.p), int(v.q))).tolist()
        [[Fraction(1, 4), Fraction(0, 1)]]
        """
        env = {k: object_array(v, convert) for k, v in self.environment().items()}
        return self._evaluate_in_ring(convert, env, {}, False)

    def explicit(self, values: dict | None = None, progress: bool = False) -> "CoefficientMatrix":
        """The formula entry by entry in the symbols of :func:`curve_symbols` and ``x_rc``.

        Parameters
        ----------
        values : dict, optional
            Matrices for some of ``X, Qt1, Kt1, Vt1, ...`` and numbers for
            ``c_k``, by name (``{"X": [[1, 0, 2]], "c_1": 1}``); the others
            stay symbols.  Entries given as strings are read by the safe parser.
        progress : bool
            A bar over the entries (on a terminal only), as in :meth:`evaluate`.

        Examples
        --------
        >>> lc = leading_coefficient(Architecture.uniform(layers=1, width=1, tokens=2), 1)
        >>> lc.explicit()[0, 1]
        Kt1_11*Qt1_11*Vt1_11*x_11**2*x_12/4 - Kt1_11*Qt1_11*Vt1_11*x_11*x_12**2/2 + Kt1_11*Qt1_11*Vt1_11*x_12**3/4
        >>> lc.explicit({"X": [[1, 0]], "Qt1": [[2]]})
        Matrix([[Kt1_11*Vt1_11/2, 0]])
        """
        if not values:
            return CoefficientMatrix(self.evaluate(progress=progress))
        if not isinstance(values, dict):
            raise SymattnError(f"values must be a dict of names to matrices or numbers, got {type(values).__name__}")
        arch = self.architecture
        base = curve_symbols(arch)
        blocks = {"Q": list(base.Q), "K": list(base.K), "V": list(base.V)}
        X = arch.input_symbols()
        scalars = {}
        matrices = {m.name: m for m in self.matrix_symbols}
        coefficient_names = {c.name for c in self.coefficients if isinstance(c, sp.Symbol)}
        for key, value in values.items():
            name = key if isinstance(key, str) else getattr(key, "name", repr(key))
            if name in coefficient_names:
                scalars[name] = to_sympy(value, what=f"value of {name}", error=SymattnError)
                continue
            if name not in matrices:
                raise _unknown(name, {**matrices, **{n: n for n in coefficient_names}}, "this leading coefficient")
            matrix = to_sympy_matrix(value, what=f"value of {name}", error=ShapeError)
            if matrix.shape != matrices[name].shape:
                raise ShapeError(f"{name} is {matrices[name].shape[0]} x {matrices[name].shape[1]}, "
                                 f"got {matrix.shape[0]} x {matrix.shape[1]}")
            if name == "X":
                X = matrix
            else:
                blocks[name[0]][int(name[2:]) - 1] = matrix
        parameters = Parameters(tuple(blocks["Q"]), tuple(blocks["K"]), tuple(blocks["V"]))
        return CoefficientMatrix(self.evaluate(parameters, X, scalars, progress=progress))

    def to_json(self) -> dict:
        return {
            "architecture": self.architecture.to_json(),
            "layer": self.layer,
            "order": self.order,
            "k": list(self.ks),
            "c": [str(c) for c in self.coefficients],
            "formula": str(self.formula),
            "effective_formula": str(self.effective_formula),
            "steps": {name: str(expr) for name, expr in self.steps},
            "effective_steps": {name: str(expr) for name, expr in self.effective_steps},
            "latex": self.latex,
            "method": self.method,
        }

    # -- symbols and substitution ------------------------------------------------------------------
    def _expressions(self):
        yield self.formula
        yield self.effective_formula
        if self.matrix_form is not None:
            yield self.matrix_form
        for _, e in (*self.steps, *self.effective_steps, *self.definitions):
            yield e

    def symbol_names(self) -> dict:
        """``{name: symbol}``: the matrix symbols (``X``, ``Qt1``, ``P``, ``What_1``, ``H``, ``J``, ``C_1``...)
        and scalars (``alpha_i``, and every ``c_j`` of a generic normalizer) of the forms.

        Examples
        --------
        >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
        >>> sorted(lc.symbol_names())
        ['C_1', 'C_2', 'H', 'J', 'Kt1', 'Kt2', 'P', 'Qt1', 'Qt2', 'Vt1', 'Vt2', 'What_1', 'What_2', 'X']
        """
        names = dict(_normalizer_symbols(self.architecture, self.order + 1))  # known even once substituted
        for e in self._expressions():
            if isinstance(e, sp.Basic):
                names.update({m.name: m for m in e.atoms(sp.MatrixSymbol)})
                names.update({m.name: m for m in e.free_symbols if isinstance(m, sp.Symbol)})
        names.update({c.name: c for c in self.coefficients if isinstance(c, sp.Symbol)})
        return names

    def symbol(self, name: str):
        """The matrix symbol or scalar named ``name`` (an error for a name the forms do not use).

        ``What1`` is read as ``What_1`` (the old spelling, on input only).

        Examples
        --------
        >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
        >>> lc.symbol("C_2").shape, lc.symbol("What_2").shape, lc.symbol("What2").name
        ((3, 3), (2, 2), 'What_2')
        """
        names = self.symbol_names()
        if _what_alias(name) in names:
            name = _what_alias(name)
        if not isinstance(name, str) or name not in names:
            raise _unknown(name if isinstance(name, str) else repr(name), names, "this leading coefficient")
        return names[name]

    def subs(self, *args) -> "LeadingCoefficient":
        """Substitute scalars (``c_k``, ``alpha_i``) in every form, matched by name as in :meth:`Expansion.subs`.

        Matrices are given to :meth:`explicit` (``values={"X": ..., "Qt1": ...}``)
        or :meth:`evaluate`, which write the formula out at them.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2, Normalizer.generic(1))
        >>> lc.matrix_form
        (c_1**3/81)*P*X*H*C_1*H*C_1.T*H*C_2*J
        >>> lc.subs("c_1", 3).matrix_form
        (1/3)*P*X*H*C_1*H*C_1.T*H*C_2*J
        >>> lc.subs("X", 1)
        Traceback (most recent call last):
        ...
        symattn.errors.SymattnError: X is a matrix: give matrices to explicit(values={...}) or evaluate(...); subs takes the scalars c_1, ...
        """
        names = self.symbol_names()
        scalars = {n: v for n, v in names.items() if isinstance(v, sp.Symbol)}
        for key in (args[0] if len(args) == 1 and isinstance(args[0], dict) else
                    [p[0] for p in args[0]] if len(args) == 1 else args[:1]):
            name = key if isinstance(key, str) else getattr(key, "name", None)
            name = _what_alias(name) if _what_alias(name) in names else name
            if name in names and name not in scalars:
                raise SymattnError(f"{name} is a matrix: give matrices to explicit(values={{...}}) or "
                                   f"evaluate(...); subs takes the scalars {', '.join(sorted(scalars))}")
        pairs = _substitution_pairs(args, scalars, "this leading coefficient")
        return self._map(lambda e: _substituted(e, pairs) if isinstance(e, sp.Basic) else e)

    def xreplace(self, rule: dict) -> "LeadingCoefficient":
        """``xreplace`` of scalars in every form, keys matched by name.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> lc = leading_coefficient(Architecture.uniform(layers=1, width=1, tokens=2), 1, Normalizer.generic(1))
        >>> lc.xreplace({"c_1": 2}).matrix_form
        P*X*H*C_1
        """
        if not isinstance(rule, dict):
            raise SymattnError(f"xreplace takes a dict {{old: new}}, got {type(rule).__name__}")
        scalars = {n: v for n, v in self.symbol_names().items() if isinstance(v, sp.Symbol)}
        pairs = dict(_substitution_pairs((rule,), scalars, "this leading coefficient"))
        return self._map(lambda e: e.xreplace(pairs) if isinstance(e, sp.Basic) else e)

    def evalf(self, n: int = 15, **options) -> "LeadingCoefficient":
        """The fractions of every form as floats with ``n`` digits (sympy's ``evalf`` recurses on matrix products).

        Examples
        --------
        >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
        >>> lc.evalf(3).matrix_form
        0.0123*P*X*H*C_1*H*C_1.T*H*C_2*J
        """
        def numbers(e):
            if not isinstance(e, sp.Basic):
                return e
            if not isinstance(e, sp.MatrixExpr) and not e.atoms(sp.MatrixSymbol):
                return e.evalf(n, **options)
            return e.xreplace({r: sp.Float(r, n) for r in e.atoms(sp.Rational) if not r.is_Integer})

        return self._map(numbers)

    n = evalf

    def applyfunc(self, function) -> "LeadingCoefficient":
        """``function`` applied to the scalar factor of every term of every form (``c_1**3/81`` ...).

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2, Normalizer.generic(1))
        >>> lc.applyfunc(lambda s: s.subs(lc.symbol("c_1"), 3) * 3).matrix_form
        P*X*H*C_1*H*C_1.T*H*C_2*J
        """
        def scalars(e):
            if isinstance(e, sp.MatAdd):
                return sp.MatAdd(*[scalars(a) for a in e.args])
            if isinstance(e, sp.MatMul):
                scalar, factors = e.as_coeff_matrices()
                product = factors[0] if len(factors) == 1 else sp.MatMul(*factors)
                return function(scalar) * product
            if isinstance(e, sp.MatrixExpr) or not isinstance(e, sp.Basic) or e.atoms(sp.MatrixSymbol):
                return e
            return function(e)

        return self._map(scalars, coefficients=False)

    def simplify(self, **kwargs) -> "LeadingCoefficient":
        """``sympy.simplify`` of the scalar factors (:meth:`applyfunc`); ``sympy.simplify(lc)`` calls it.

        Examples
        --------
        >>> from symattn.normalizers import Normalizer
        >>> lc = leading_coefficient(Architecture.uniform(layers=1, width=1, tokens=2), 1, Normalizer.generic(1))
        >>> sp.simplify(lc.subs("c_1", "(c_2**2 - 1)/(c_2 - 1)")).matrix_form
        (c_2/2 + 1/2)*P*X*H*C_1
        """
        return self.applyfunc(lambda e: sp.simplify(e, **kwargs))

    def _eval_simplify(self, **kwargs) -> "LeadingCoefficient":
        return self.simplify(**kwargs)

    #: ``sympy.sympify(lc)`` returns ``lc``, so that ``sympy.simplify(lc)`` reaches :meth:`simplify`.
    __sympy__ = False

    def _sympystr(self, printer) -> str:
        return f"F_{self.order} - F_{self.order}|What_{self.layer}=0 = {printer._print(self.matrix_form)}"

    def _pretty(self, printer):
        """``sympy.pretty(lc)``: the matrix form.

        Examples
        --------
        >>> print(sp.pretty(leading_coefficient(Architecture.uniform(layers=1, width=1, tokens=2), 1),
        ...                 use_unicode=False))
        F_2 - F_2|What_1=0 = 1/2*P*X*H*C_1
        """
        from sympy.printing.pretty.stringpict import prettyForm

        return prettyForm(*printer._print(self.matrix_form).left(
            f"F_{self.order} - F_{self.order}|What_{self.layer}=0 = "))

    def _map(self, function, coefficients: bool = True) -> "LeadingCoefficient":
        def tidy(e):  # a scalar factor that became 1 after substitution: no '1*P*...'
            if isinstance(e, sp.MatAdd):
                return sp.MatAdd(*[tidy(a) for a in e.args])
            if isinstance(e, sp.MatMul):
                scalar, factors = e.as_coeff_matrices()
                product = factors[0] if len(factors) == 1 else sp.MatMul(*factors)
                return product if scalar == 1 else scalar * product
            return e

        inner = function

        def function(e):
            return tidy(inner(e))

        return dataclasses.replace(
            self, formula=function(self.formula), effective_formula=function(self.effective_formula),
            matrix_form=None if self.matrix_form is None else function(self.matrix_form),
            steps=tuple((name, function(e)) for name, e in self.steps),
            effective_steps=tuple((name, function(e)) for name, e in self.effective_steps),
            coefficients=tuple(function(sp.sympify(c)) for c in self.coefficients) if coefficients
            else self.coefficients)

    # -- the formula of this network -------------------------------------------------------------
    def _left_side(self) -> str:
        return f"F_{{{self.order}}} - F_{{{self.order}}}\\big|_{{\\widehat W_{{{self.layer}}} = 0}}"

    def _definition_lines(self) -> list[str]:
        """The definitions as LaTeX, one line for ``H, J, P`` and one per layer (``What_i``, ``C_i``, ``alpha_i``)."""
        t = self.architecture.tokens
        common, layers = [], {}
        for name, definition in self.definitions:
            if name == "H":
                common.append(rf"H = I_{{{t}}} - \tfrac{{1}}{{{t}}} J")
            elif name == "J":
                common.append(rf"J = \mathbf{{1}}\mathbf{{1}}^{{\top}} \ ({t} \times {t})")
            elif name == "P":
                common.append(f"P = {_matrix_latex(definition)}")
            elif name.startswith("alpha_"):
                layers.setdefault(int(name[6:]), []).append(
                    rf"\alpha_{{{name[6:]}}} = \tfrac{{1}}{{{t * t}}}\, \mathbf{{1}}^{{\top}} C_{{{name[6:]}}} "
                    r"\mathbf{1}")
            else:  # What_i, C_i
                layer = int(name.split("_")[1])
                layers.setdefault(layer, []).append(
                    f"{_matrix_latex(sp.MatrixSymbol(name, 1, 1))} = {_matrix_latex(definition)}")
        return [r",\quad ".join(common)] + [r",\quad ".join(layers[i]) for i in sorted(layers)]

    def matrix_latex(self) -> str:
        r"""The matrix form of this network (its ``k`` and ``t``) and its definitions, as LaTeX ``aligned`` lines.

        One line for the formula, one for ``H``, ``J`` and ``P``, then one per
        layer (``\widehat{W}_{i}``, ``C_i`` and ``\alpha_i``), so that it keeps
        to the page.  :meth:`to_latex` shows these lines and then the general
        formula (:attr:`latex`).

        Examples
        --------
        >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
        >>> print(lc.matrix_latex())
        &F_{6} - F_{6}\big|_{\widehat W_{2} = 0} = \frac{1}{81}\, P X H C_{1} H C_{1}^{\top} H C_{2} J \\
        &H = I_{3} - \tfrac{1}{3} J,\quad J = \mathbf{1}\mathbf{1}^{\top} \ (3 \times 3),\quad P = \tilde{V}_{2} \tilde{V}_{1} \\
        &\widehat{W}_{1} = \tilde{K}_{1}^{\top} \tilde{Q}_{1},\quad C_{1} = X^{\top} \widehat{W}_{1} X \\
        &\widehat{W}_{2} = \tilde{V}_{1}^{\top} \tilde{K}_{2}^{\top} \tilde{Q}_{2} \tilde{V}_{1},\quad C_{2} = X^{\top} \widehat{W}_{2} X
        """
        lines = [f"{self._left_side()} = {_matrix_latex(self.matrix_form)}"] + self._definition_lines()
        return " \\\\\n".join("&" + line for line in lines)

    def _latex(self, printer=None) -> str:
        """What ``sympy.latex(lc)`` prints: the matrix form, its definitions and the general formula."""
        return self._latex_math()

    def _latex_header(self) -> str:
        normalizers = ", ".join(dict.fromkeys(n.name for n in self.architecture.normalizers))
        return (f"\\section*{{Leading coefficient of layer {self.layer}}}\n\\begin{{itemize}}\n"
                f"\\item architecture: {latex_escape(self.architecture.describe())}\n"
                f"\\item normalizer: {latex_escape(normalizers)}; $k = {', '.join(map(str, self.ks))}$\n"
                f"\\item curve: the query/key collapse $Q_i = \\varepsilon \\tilde{{Q}}_i$, "
                f"$K_i = \\varepsilon \\tilde{{K}}_i$, $V_i = \\tilde{{V}}_i$\n"
                f"\\item order: $\\varepsilon^{{{self.order}}}$, the first power at which the scores "
                f"$\\widehat W_{{{self.layer}}}$ of layer {self.layer} appear; below it, no $F_n$ depends on them\n"
                f"\\end{{itemize}}\n")

    def _latex_body(self) -> str:
        return (self._latex_header() + "For this network:\n"
                + "\\begin{equation*}\n\\begin{aligned}\n" + self.matrix_latex()
                + "\n\\end{aligned}\n\\end{equation*}\nFor every width and token count:\n"
                + "\\begin{equation*}\n\\begin{aligned}\n" + self.latex + "\n\\end{aligned}\n\\end{equation*}")

    def _latex_math(self) -> str:
        return ("\\begin{aligned}" + self.matrix_latex().replace("\n", " ") + r" \\ &\text{for every width and "
                r"token count:} \\ " + self.latex.replace("\n", " ") + "\\end{aligned}")

    def to_markdown(self) -> str:
        lines = [f"# Leading coefficient of layer {self.layer}: order eps^{self.order}", "",
                 f"- architecture: {self.architecture.describe()}",
                 f"- k = {list(self.ks)}, c_k = {[str(c) for c in self.coefficients]}",
                 f"- {self.method}", "", "For this network:", "", "$$", "\\begin{aligned}", self.matrix_latex(),
                 "\\end{aligned}", "$$", "", "For every width and token count:", "",
                 "$$", "\\begin{aligned}", self.latex, "\\end{aligned}", "$$"]
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return (f"LeadingCoefficient(layer {self.layer} at eps^{self.order} of {self.architecture.describe()}: "
                f"{self.matrix_form})")

    def __str__(self) -> str:
        lines = [f"leading coefficient of layer {self.layer} at eps^{self.order}:",
                 f"  F_{self.order} - F_{self.order}|What_{self.layer}=0 = {self.matrix_form}"]
        t = self.architecture.tokens
        for name, definition in self.definitions:
            text = {"H": f"I - J/{t}", "J": f"ones({t}, {t})"}.get(name, str(definition))
            lines.append(f"  {name} = {text}")
        lines.append("written out through P and What_i:")
        lines += [f"  {name} = {expr}" for name, expr in self.effective_steps]
        lines.append("equivalently, through the tokens of each layer:")
        lines += [f"  {name} = {expr}" for name, expr in self.steps]
        return "\n".join(lines)


def _matrix_latex(expr) -> str:
    """LaTeX of a matrix expression of this module: ``Qt1`` as ``\\tilde{Q}_{1}``, ``What_1`` as
    ``\\widehat{W}_{1}``, transposes ``^{\\top}``, a scalar factor as a fraction before the product (not sympy's
    parenthesized one)."""
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


def _general_latex(layer: int, layers: int, ks: list[int]) -> str:
    """The matrix formulas for every width and token count (LaTeX aligned lines)."""
    common = len(set(ks)) == 1

    def k(i):
        return "k" if common else f"k_{{{i}}}"

    def c(i):
        return "c_{k}" if common else f"c^{{({i})}}_{{k_{{{i}}}}}"

    orders = _orders(ks)[0]
    lines = [
        r"&H = I_t - \tfrac{1}{t} J,\quad J = \mathbf{1}\mathbf{1}^{\top},\quad A^{\circ m} = "
        r"\text{entrywise power},\quad \tilde W_i = \tilde K_i^{\top} \tilde Q_i,\quad "
        r"\tilde P_i = \tilde V_i \cdots \tilde V_1,\quad P = \tilde P_{l} \\",
        r"&\widehat W_i = \tilde P_{i-1}^{\top} \tilde W_i \tilde P_{i-1},\quad C_i = X^{\top} \widehat W_i X,\quad "
        r"\alpha_i = \tfrac{1}{t^2}\,\mathbf{1}^{\top} C_i \mathbf{1} \\",
    ]
    if common:
        lines.append(rf"&n_i = 2k\,3^{{i-1}},\quad \nu_i = (3^i - 1)k,\quad "
                     rf"\text{{here }} n_{{{layer}}} = {orders[layer - 1]} \\")
    else:
        lines.append(r"&n_1 = \nu_1 = 2k_1,\quad n_i = 2\nu_{i-1} + 2k_i,\quad \nu_i = 3\nu_{i-1} + 2k_i,"
                     rf"\quad \text{{here }} n_{{{layer}}} = {orders[layer - 1]} \\")
    if layer == 1:
        lines.append(rf"&F_{{n_1}} = \frac{{{c(1)}}}{{t}}\, P X H\, C_1^{{\circ {k(1)}}}"
                     + (r"\, \tfrac{1}{t} J" if layers > 1 else "")
                     + (r" \quad (\text{in } X_1:\ [X_1]_{n_1} = \tfrac{c_k}{t} \tilde V_1 X H C_1^{\circ k})"
                        if layers > 1 else ""))
        return "\n".join(lines)
    lines.append(rf"&Z_1 = \frac{{{c(1)}}}{{t}}\, H\, C_1^{{\circ {k(1)}}} H \\")
    if layer > 2:
        lines += [
            rf"&\Sigma_i = \frac{{{k('i')} {c('i')}}}{{t}}\Big(\alpha_i^{{{k('i')}-1}}\, "
            rf"Z_{{i-1}}^{{\top}} C_i Z_{{i-1}}"
            rf" + \frac{{{k('i')}-1}}{{t^2}}\,\alpha_i^{{{k('i')}-2}}\, Z_{{i-1}}^{{\top}} C_i J C_i Z_{{i-1}}\Big),"
            rf"\quad Z_i = Z_{{i-1}} \Sigma_i \quad (2 \le i < {layer}) \\",
        ]
    lines += [
        rf"&F_{{n_{{{layer}}}}} - F_{{n_{{{layer}}}}}\big|_{{\widehat W_{{{layer}}} = 0}} = "
        rf"\frac{{{k(layer)} {c(layer)}\, \alpha_{{{layer}}}^{{{k(layer)}-1}}}}{{t^2}}\, P X Z_{{{layer - 1}}}"
        rf" Z_{{{layer - 1}}}^{{\top}} C_{{{layer}}} J \\",
        r"&\text{(tokens: } [X_i H]_{\nu_i} = \tilde P_i X Z_i,\ "
        r"[X_i]_0 = \mu_i \mathbf{1}^{\top},\ \mu_i = \tfrac{1}{t}\tilde P_i X \mathbf{1},\ "
        r"[H S_i H]_{\nu_i - \nu_{i-1}} = \Sigma_i\text{)}",
    ]
    return "\n".join(lines)


def leading_coefficient(arch: Architecture, layer: int, normalizer=None) -> LeadingCoefficient:
    """The matrix formula of the coefficient in which layer ``i``'s scores first appear.

    Along the simultaneous collapse curve ``Q_i = eps Qt_i, K_i = eps Kt_i,
    V_i = Vt_i``, with ``H = I - J/t``, entrywise powers ``A^(k)``, each
    layer's ``s/s(0) = 1 + c_k x^k + ...``, the effective parameters
    ``P = Vt_l ... Vt_1`` and ``What_i = Pt_{i-1}^T Kt_i^T Qt_i Pt_{i-1}``, and
    ``C_i = X^T What_i X``, ``alpha_i = 1^T C_i 1 / t^2``:

    * layer 1 (order ``2 k_1``): ``F_{2k} = (c/t) P X H C_1^(k)`` for one
      layer, ``(c/t) P X H C_1^(k) J/t`` for more;
    * layer ``i >= 2`` (order ``n_i``, ``2k 3^(i-1)`` for a common ``k``):
      ``F_{n_i} - F_{n_i}|_{What_i = 0} = (k c alpha_i^(k-1)/t^2) P X Z_{i-1} Z_{i-1}^T C_i J``,
      where ``Z_1 = (c/t) H C_1^(k) H`` and ``Z_i = Z_{i-1} Sigma_i`` with
      ``Sigma_i = (k c/t)(alpha_i^(k-1) Z^T C_i Z + (k-1)/t^2 alpha_i^(k-2) Z^T C_i J C_i Z)``
      (``Z = Z_{i-1}``).

    The tokens of layer ``i`` are ``mu_i 1^T`` (``mu_i = Pt_i X 1/t``) plus a
    centered part with leading coefficient ``Pt_i X Z_i`` at order
    ``nu_i`` (``(3^i - 1)k``); ``Sigma_i`` is the query-varying part of
    ``S_i`` at order ``2k + 2 nu_{i-1}``.  ``formula`` writes the same matrix
    through the tokens (``Y_i = Pt_i X Z_i``).  See ``docs/expand.md`` for the
    derivation; :func:`verify_leading_coefficient` checks both forms against
    the entrywise expansion.

    Parameters
    ----------
    arch : Architecture
    layer : int
        ``1 .. l``.
    normalizer : optional
        Replaces the architecture's normalizers (e.g. ``Normalizer.generic(k)``).

    Returns
    -------
    LeadingCoefficient

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2,
    ...                          normalizer=Normalizer.generic(2))
    >>> lc.order, lc.ks
    (12, (2, 2))
    >>> [name for name, _ in lc.effective_steps]
    ['H', 'C_1', 'Z_1', 'C_2', 'alpha_2', 'F_12 - F_12|What_2=0']
    """
    _check_arch(arch)
    used = _with_normalizer(arch, normalizer)
    layers = used.layers
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= layer <= layers:
        raise ShapeError(f"layer must be an integer in 1..{layers}, got {layer!r}")
    if layer > MAX_LEADING_LAYER:
        raise ResourceLimitError(f"the leading coefficient of layer {layer} (--leading {layer}, or leading({layer}) in "
                                 f"a claim): its matrix formula grows about fivefold per layer (layer 5 takes "
                                 f"seconds, layer 6 about 20 s, layer 7 minutes); at most layer {MAX_LEADING_LAYER}")
    if not used.is_plain:
        raise SymattnError(f"the leading coefficients are derived for one head per layer, no mask and no residual "
                           f"stream; no formula is claimed for {used.describe_variant()}: expand the network "
                           "entrywise instead (symattn.expand.expand)")
    layer = int(layer)
    ks = _layer_k(used)
    cs = [_normalizer_coefficient(n, k) for n, k in zip(used.normalizers, ks)]
    orders, _ = _orders(ks)
    t = used.tokens
    named = matrix_symbols(used)
    X = named["X"]
    Qt, Kt, Vt, symbols = {}, {}, {}, [X]
    for i in range(1, layers + 1):
        Qt[i], Kt[i], Vt[i] = named[f"Qt{i}"], named[f"Kt{i}"], named[f"Vt{i}"]
        symbols += [Qt[i], Kt[i], Vt[i]] if i <= layer else [Vt[i]]

    def W(i):
        return Kt[i].T * Qt[i]

    ones = sp.OneMatrix(t, 1)
    J = sp.OneMatrix(t, t)
    H = sp.Identity(t) - J / t
    n = orders[layer - 1]
    k1, c1 = ks[0], cs[0]

    # through the tokens of each layer
    steps = [("H", H)]
    G1 = (c1 / t) * Vt[1] * X * H * entrywise_power(X.T * W(1) * X, k1)
    if layer == 1:
        steps.append(("G_1", G1))
        core = G1
    else:
        Y = G1 * H
        steps.append(("Y_1", Y))
        prefix = None
        for i in range(2, layer + 1):
            prefix = Vt[1] if prefix is None else Vt[i - 1] * prefix
            mu = prefix * X * ones / t
            alpha = sp.Trace(mu.T * W(i) * mu)
            k, c = ks[i - 1], cs[i - 1]
            steps += [(f"mu_{i - 1}", mu), (f"alpha_{i}", alpha)]
            if i == layer:
                core = (k * c * alpha ** (k - 1) / t) * Vt[i] * Y * Y.T * W(i) * mu * ones.T
                steps.append((f"G_{i}", core))
            else:
                sigma = (k * c / t) * alpha ** (k - 1) * Y.T * W(i) * Y
                if k > 1:
                    sigma = sigma + ((k - 1) * k * c / t) * alpha ** (k - 2) * Y.T * W(i) * mu * mu.T * W(i) * Y
                Y = Vt[i] * Y * sigma
                steps += [(f"Sigma_{i}", sigma), (f"Y_{i}", Y)]
    formula = core
    for i in range(layer + 1, layers + 1):
        formula = Vt[i] * formula
    if layer == 1 and layers > 1:
        formula = formula * J / t
    steps.append((f"F_{n} - F_{n}|W_{layer}=0", formula))

    # in the effective parameters
    P = named["P"]
    What = {i: named[f"What_{i}"] for i in range(1, layer + 1)}
    C = {i: X.T * What[i] * X for i in What}
    effective_steps = [("H", H), ("C_1", C[1])]
    if layer == 1:
        effective = (c1 / t) * P * X * H * entrywise_power(C[1], k1)
        if layers > 1:
            effective = effective * J / t
    else:
        Z = (c1 / t) * H * entrywise_power(C[1], k1) * H
        effective_steps.append(("Z_1", Z))
        for i in range(2, layer + 1):
            k, c = ks[i - 1], cs[i - 1]
            alpha = sp.Trace(ones.T * C[i] * ones) / t**2
            effective_steps += [(f"C_{i}", C[i]), (f"alpha_{i}", alpha)]
            if i == layer:
                effective = (k * c * alpha ** (k - 1) / t**2) * P * X * Z * Z.T * C[i] * J
            else:
                sigma = (k * c / t) * alpha ** (k - 1) * Z.T * C[i] * Z
                if k > 1:
                    sigma = sigma + ((k - 1) * k * c / t**3) * alpha ** (k - 2) * Z.T * C[i] * J * C[i] * Z
                Z = Z * sigma
                effective_steps += [(f"Sigma_{i}", sigma), (f"Z_{i}", Z)]
    effective_steps.append((f"F_{n} - F_{n}|What_{layer}=0", effective))
    method = ("derived by hand from S(eps^2 A) = J/t + (c_k eps^2k/t) H A^(k) + ... and the expansion "
              "S_i = J/t + (s'/s)(b) H A_i / t + ... of each later layer around its column-constant scores b; "
              "verified against the entrywise expansion (verify_leading_coefficient)")
    form, definitions = _matrix_form(used, layer, ks, cs, n)
    return LeadingCoefficient(used, layer, n, formula, effective, tuple(steps), tuple(effective_steps),
                              tuple(symbols), tuple(ks), tuple(cs), _general_latex(layer, layers, ks), method,
                              form, definitions)


def _reduce(expr, H, J, t: int):
    """A matrix expression with ``H^2 = H``, ``H J = J H = 0``, ``J^2 = t J`` and ``H^T = H``, ``J^T = J`` applied."""
    if isinstance(expr, sp.MatAdd):
        parts = [_reduce(a, H, J, t) for a in expr.args]
        parts = [a for a in parts if not isinstance(a, sp.ZeroMatrix)]
        return sp.ZeroMatrix(*expr.shape) if not parts else parts[0] if len(parts) == 1 else sp.MatAdd(*parts)
    if not isinstance(expr, (sp.MatMul, sp.MatPow, sp.Transpose, sp.MatrixSymbol)):
        return expr
    scalar, factors = expr.as_coeff_matrices() if isinstance(expr, sp.MatMul) else (sp.Integer(1), [expr])
    out = []
    for m in factors:
        power = 1
        if isinstance(m, sp.MatPow) and m.base in (H, J) and m.exp.is_Integer:
            m, power = m.base, int(m.exp)
        if isinstance(m, sp.Transpose) and m.arg in (H, J):
            m = m.arg
        if m == J and power > 1:
            scalar *= sp.Integer(t) ** (power - 1)
        if out and {out[-1], m} == {H, J}:
            return sp.ZeroMatrix(*expr.shape)
        if out and out[-1] == m == H:
            continue
        if out and out[-1] == m == J:
            scalar *= t
            continue
        out.append(m)
    product = out[0] if len(out) == 1 else sp.MatMul(*out)
    return product if scalar == 1 else scalar * product


def _matrix_form(used: Architecture, layer: int, ks, cs, n: int):
    """``(form, definitions)``: the leading coefficient in the named matrices ``P, X, H, J, C_i`` (reduced).

    ``definitions`` is ``((name, definition), ...)`` for the symbols of the form: ``H``, ``J``,
    ``P``, ``What_i``, ``C_i`` and, when some ``k_i > 1``, the scalars ``alpha_i``.
    """
    t = used.tokens
    named = matrix_symbols(used)
    X, P, H, J = named["X"], named["P"], named["H"], named["J"]
    What = {i: named[f"What_{i}"] for i in range(1, layer + 1)}
    C = {i: named[f"C_{i}"] for i in What}
    ones = sp.OneMatrix(t, 1)
    definitions = [("H", sp.Identity(t) - sp.OneMatrix(t, t) / t), ("J", sp.OneMatrix(t, t)),
                   ("P", sp.MatMul(*[named[f"Vt{i}"] for i in range(used.layers, 0, -1)]) if used.layers > 1
                    else named["Vt1"])]
    for i in What:
        definitions.append((f"What_{i}", _what_definition(used, i)))
        definitions.append((f"C_{i}", X.T * What[i] * X))

    def reduce(expr):
        return _reduce(sp.expand(expr), H, J, t)

    k1, c1 = ks[0], cs[0]
    if layer == 1:
        form = (c1 / t) * P * X * H * entrywise_power(C[1], k1)
        if used.layers > 1:
            form = form * J / t
        return reduce(form), tuple(definitions)
    Z = reduce((c1 / t) * H * entrywise_power(C[1], k1) * H)
    form = None
    for i in range(2, layer + 1):
        k, c = ks[i - 1], cs[i - 1]
        alpha = sp.Symbol(f"alpha_{i}")
        if k > 1:
            definitions.append((f"alpha_{i}", sp.Trace(ones.T * C[i] * ones) / t**2))
        if i == layer:
            form = reduce((k * c * alpha ** (k - 1) / t**2) * P * X * Z * Z.T * C[i] * J)
        else:
            sigma = (k * c / t) * alpha ** (k - 1) * Z.T * C[i] * Z
            if k > 1:
                sigma = sigma + ((k - 1) * k * c / t**3) * alpha ** (k - 2) * Z.T * C[i] * J * C[i] * Z
            Z = reduce(Z * sigma)
    return form, tuple(definitions)


def _what_definition(used: Architecture, i: int):
    """``What_i = Pt_{i-1}^T Kt_i^T Qt_i Pt_{i-1}`` with ``Pt_{i-1} = Vt_{i-1} ... Vt_1``."""
    named = matrix_symbols(used)
    W = named[f"Kt{i}"].T * named[f"Qt{i}"]
    if i == 1:
        return W
    prefix = sp.MatMul(*[named[f"Vt{j}"] for j in range(i - 1, 0, -1)])
    return prefix.T * W * prefix


# -- verification ----------------------------------------------------------------------------------
def _formula_degree(lc: "LeadingCoefficient", generic: bool) -> int:
    """Total degree bound of both forms of the formula in (Qt, Kt, Vt, X, c) (max-plus evaluation)."""
    def convert(value):
        value = to_sympy(value)
        if value.is_Symbol:
            return DegreeBound(1 if generic or not value.name.startswith("c_") else 0)
        return DegreeBound.of(value)

    env = {}
    for s, m in lc.environment().items():
        array = np.empty(m.shape, dtype=object)
        for index in np.ndindex(*m.shape):
            array[index] = DegreeBound(1)
        env[s] = array
    degrees = []
    for effective in (False, True) if lc.matrix_form is None else (False, True, "matrix"):
        array = lc._evaluate_in_ring(convert, env, {}, effective)
        degrees.append(max(v.d if isinstance(v, DegreeBound) else 0 for v in array.flat))
    return int(max(0, *degrees))


def _random_point(arch: Architecture, rng: random.Random, radius: int, coefficient_symbols) -> dict:
    point = {}
    base = curve_symbols(arch)
    for m in (*base.Q, *base.K, *base.V, arch.input_symbols()):
        for s in m:
            point[s.name] = sp.Integer(rng.randint(-radius, radius))
    for s in coefficient_symbols:
        point[s.name] = sp.Integer(rng.randint(-radius, radius))
    return point


def _verify_symbolic(lc: LeadingCoefficient, max_terms: int):
    """Exact comparison in one polynomial ring: a proof (see :func:`verify_leading_coefficient`)."""
    from .verdicts import CheckResult, Counterexample  # (not symattn.check, which imports this module)

    used, layer, n = lc.architecture, lc.layer, lc.order
    base = curve_symbols(used)
    X = used.input_symbols()
    ring = sorted({s for m in (*base.Q, *base.K, *base.V, X) for s in m}
                  | set(_normalizer_symbols(used, n + 1).values()), key=lambda s: s.name)
    zero_keys = {s.name: 0 for s in base.K[layer - 1]}
    domain, full, _ = _series_coefficients(used, collapse(), n + 1, {}, max_terms, ring)
    other, collapsed, _ = _series_coefficients(used, collapse(), n + 1, zero_keys, max_terms, ring)
    if not (isinstance(domain, PolynomialSeriesDomain) and isinstance(other, PolynomialSeriesDomain)):
        raise DomainError("the symbolic verification needs polynomial data over Q (rational Taylor coefficients)")
    convert = domain._convert
    env = {s: object_array(m, convert) for s, m in lc.environment().items()}
    claimed = lc._evaluate_in_ring(convert, env, {}, effective=False)
    claimed_effective = lc._evaluate_in_ring(convert, env, {}, effective=True)
    zero = np.zeros(claimed.shape, dtype=object)
    checks = [(m, zero, "0") for m in range(n)] + [(n, claimed, "the formula"),
                                                  (n, claimed_effective, "the effective formula")]
    if lc.matrix_form is not None:
        checks.append((n, lc._evaluate_in_ring(convert, env, {}, effective="matrix"), "the matrix form"))
    for m, want, what in checks:
        got = full[:, :, m] - collapsed[:, :, m]
        for (r, c), value in np.ndenumerate(got):
            if convert(want[r, c]) != convert(value):
                difference = convert(want[r, c]) - convert(value)
                rng = random.Random(0)
                tries = 0
                while True:  # a point where the difference is nonzero, small coordinates first
                    tries += 1
                    bound = 1 if tries <= 10 else 2 if tries <= 20 else 3 if tries <= 30 else 50
                    values = [sp.Integer(rng.randint(-bound, bound)) for _ in ring]
                    if difference(*[to_fmpq(v) for v in values]) != 0:
                        break
                point = tuple((s.name, str(v)) for s, v in zip(ring, values))
                at = [to_fmpq(v) for v in values]
                return CheckResult(
                    False, f"symbolic, in Q[symbols]: F_{m} - F_{m}|Kt_{layer}=0 differs from {what} at entry "
                    f"{(r, c)}", 0.0,
                    Counterexample(point, (r, c), str(from_fmpq(convert(want[r, c])(*at))),
                                   str(from_fmpq(convert(value)(*at)))),
                    "leading coefficient formula", f"F_{m} - F_{m}|Kt_{layer}=0", 0, None, None)
    method = (f"symbolic proof: F_0..F_{n} with every parameter, input entry and generic c_j a symbol, "
              f"computed with and without Kt_{layer} by one forward pass over truncated series with "
              f"coefficients in Q[{len(ring)} symbols] (python-flint), and the matrix formula evaluated in the "
              f"same ring: F_m - F_m|Kt_{layer}=0 = 0 for m < {n} and = the formula (through the tokens, "
              f"through P and What_i, and in H, J, C_i) for m = {n}, exactly")
    return CheckResult(True, method, 0.0, None, "leading coefficient formula", f"F_{n} - F_{n}|Kt_{layer}=0",
                       0, None, None)


def verify_leading_coefficient(arch: Architecture, layer: int, normalizer=None, points: int = 2,
                               seed: int = 0, radius: int = 2**20, symbolic: bool = False,
                               candidate: LeadingCoefficient | None = None, max_terms: int = MAX_TERMS):
    """Compare :func:`leading_coefficient` with the entrywise expansion of :func:`expand`.

    Checks that ``F_n`` for ``n < n_i`` does not depend on layer ``i``'s scores
    and that ``F_{n_i} - F_{n_i}|_{Kt_i = 0}`` equals the matrix formula:

    * ``symbolic=False`` (default): exactly over Q at ``points`` random integer
      points (parameters, input, generic ``c_j``) drawn from ``[-radius, radius]``.
      A false formula is caught with probability at least ``1 - (D / (2 radius + 1))^points``
      (Schwartz-Zippel; ``D`` bounds the degree of the difference); a mismatch
      is a certain counterexample.
    * ``symbolic=True``: a proof.  The expansion with every parameter,
      input entry and generic ``c_j`` a symbol and the formula are computed
      in one polynomial ring over Q (python-flint) and compared exactly.
      Only for small sizes (``max_terms`` guards the size).

    ``candidate`` checks another formula (a :class:`LeadingCoefficient`, e.g.
    a modified one) instead of :func:`leading_coefficient`'s.

    Returns
    -------
    symattn.verdicts.CheckResult

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> arch = Architecture.uniform(layers=2, width=2, tokens=3)
    >>> result = verify_leading_coefficient(arch, 2, normalizer=Normalizer.generic(1), points=1)
    >>> result.verdict, result.bound < 1e-4
    (True, True)
    """
    _check_arch(arch)
    seed = require_seed(seed)
    from .verdicts import CheckResult, Counterexample  # (not symattn.check, which imports this module)

    lc = leading_coefficient(arch, layer, normalizer) if candidate is None else candidate
    used = lc.architecture
    n = lc.order
    generic = [s for s in lc.coefficients if isinstance(s, sp.Symbol)]
    zero_keys = {s.name: 0 for s in curve_symbols(used).K[layer - 1]}
    if symbolic:
        return _verify_symbolic(lc, max_terms)

    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1:
        raise SymattnError(f"points must be a positive integer, got {points!r}")
    rng = random.Random(seed)
    # the constants of the normalizer keep their values over Q: only generic c_j are variables
    expansion_degree = degree_bound(used, collapse(), n + 1, variable_constants=False)
    degree = max(_formula_degree(lc, bool(generic)), expansion_degree)
    size = 2 * radius + 1
    all_coefficients = sorted(set(_normalizer_symbols(used, n + 1).values()), key=lambda s: s.name)
    def mismatch(point):
        """``(m, entry, want, got, what)`` of the first disagreement at ``point``, or None."""
        full = expand(used, truncation=n + 1, point=point, max_params=10**6, max_truncation=10**6)
        collapsed = expand(used, truncation=n + 1, point={**point, **zero_keys}, max_params=10**6,
                           max_truncation=10**6)
        pairs = [(m, sp.zeros(*full[m].shape), full[m] - collapsed[m]) for m in range(n)]
        base = curve_symbols(used)
        params = Parameters(*(tuple(m.xreplace({s: point[s.name] for s in m.free_symbols}) for m in blocks)
                              for blocks in (base.Q, base.K, base.V)))
        X = used.input_symbols()
        X = X.xreplace({s: point[s.name] for s in X.free_symbols})
        values = {s.name: point[s.name] for s in generic}
        pairs.append((n, lc.evaluate(params, X, values), full[n] - collapsed[n]))
        pairs.append((n, lc.evaluate(params, X, values, effective=True), full[n] - collapsed[n]))
        if lc.matrix_form is not None:
            pairs.append((n, lc.evaluate(params, X, values, form="matrix"), full[n] - collapsed[n]))
        for m, want, got in pairs:
            if want != got:
                entry = next((r, c) for r in range(want.rows) for c in range(want.cols)
                             if want[r, c] != got[r, c])
                what = "the formula" if m == n else f"0 (no dependence on layer {layer} below order {n})"
                return m, entry, want[entry], got[entry], what
        return None

    for _ in range(points):
        point = _random_point(used, rng, radius, all_coefficients)
        found = mismatch(point)
        if found is None:
            continue
        # a readable counterexample: the first of a few small integer points that also disagrees
        small = random.Random(seed)
        for r in (1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 5, 5, 10, 10):
            candidate = _random_point(used, small, r, all_coefficients)
            again = mismatch(candidate)
            if again is not None:
                point, found = candidate, again
                break
        m, entry, want, got, what = found
        return CheckResult(
            False, f"exact evaluation over Q at a random point: F_{m} - F_{m}|Kt_{layer}=0 differs from "
            f"{what} at entry {entry}; the counterexample is the first small integer point found where they differ",
            0.0, Counterexample(tuple((k, str(v)) for k, v in point.items()), entry, str(want), str(got)),
            "leading coefficient formula", f"F_{m} - F_{m}|Kt_{layer}=0", points, degree, size)
    bound = min(1.0, degree / size) ** points
    method = (f"exact evaluation over Q (python-flint) at {points} random integer point(s) in "
              f"[-{radius}, {radius}] of F_0..F_{n} with and without Kt_{layer}, one forward pass over "
              f"truncated series each; Schwartz-Zippel: a false formula passes with probability <= "
              f"(degree {degree} / {size})^{points}")
    return CheckResult(True, method, bound, None, "leading coefficient formula",
                       f"F_{n} - F_{n}|Kt_{layer}=0", points, degree, size)


# -- claimed matrix formulas --------------------------------------------------------------------------

_LEADING_CLAIM = None
#: The longest matrix formula read (characters).
_MAX_FORMULA_LENGTH = 5000


def _leading_claim_pattern():
    global _LEADING_CLAIM
    if _LEADING_CLAIM is None:
        import re

        # every quantifier possessive (*+, ?+): no backtracking, linear in the length of the claim (the lazy
        # groups next to \s* took minutes on "leading(" followed by 3,000 spaces)
        _LEADING_CLAIM = re.compile(r"^\s*+leading(?:_coefficient)?+\s*+\(\s*+(?P<layer>[^()]*+)\)\s*+={1,2}+\s*+"
                                    r"(?P<formula>\S.*+)$", re.IGNORECASE)
    return _LEADING_CLAIM


def is_formula_claim(text) -> bool:
    """Whether a claim is a formula claim ``leading(i) = <matrix formula>`` (else a numeric claim).

    Examples
    --------
    >>> is_formula_claim("leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J"), is_formula_claim("kernel = 6")
    (True, False)
    """
    return isinstance(text, str) and _leading_claim_pattern().match(text) is not None


def matrix_formula(text: str, lc: "LeadingCoefficient", target: str | None = None):
    """A sympy matrix expression from text in the names of ``lc.matrix_form``, read without executing anything.

    ``target`` names what the formula is compared with in a shape error
    (default: the leading coefficient of ``lc``'s layer).

    The language (:data:`FORMULA_LANGUAGE`): the matrices ``P``, ``X``,
    ``H``, ``J``, ``C_i`` and ``What_i`` (the old ``What1`` also read) of
    :attr:`LeadingCoefficient.definitions`, the scalars ``c_k`` (the
    normalizer's leading Taylor coefficient, a number for a named normalizer),
    ``alpha_i`` and ``t`` (the token count), numbers, ``+ - * /``, powers
    ``**`` or ``^`` (integer powers of scalars and of square matrices),
    ``A.T`` (transpose), ``hadamard(A, m)`` (entrywise power) and
    parentheses.  Products are written with ``*`` (or ``@``).  The text is
    split by :func:`ast.parse` and walked node by node, as the package's
    parser of scalar expressions does (:mod:`symattn.parsing`).

    Raises
    ------
    ParseError
        Naming the offending token and the accepted names; a product of
        matrices of the wrong shapes is a ShapeError.

    Examples
    --------
    >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
    >>> matrix_formula("c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J", lc) == lc.matrix_form
    True
    >>> matrix_formula("P*X*C_1.__class__", lc)
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: cannot read the formula 'P*X*C_1.__class__': the attribute '__class__' is not accepted (only A.T, the transpose); accepted: ...
    """
    import ast

    from .errors import ParseError
    from .parsing import DEFAULT_LIMITS, refuse_unaccepted_characters, shorten

    if not isinstance(text, str):
        raise ParseError(f"a formula is a string, got {type(text).__name__}")
    if len(text) > _MAX_FORMULA_LENGTH:
        raise ParseError(f"the formula is too long ({len(text)} characters; at most {_MAX_FORMULA_LENGTH})")
    refuse_unaccepted_characters(text, "formula")  # look-alikes (Ｐ, ℌ) and invisible characters
    if "#" in text:  # Python would drop the rest of the line as a comment, hiding anything there
        raise ParseError(f"cannot read the formula {shorten(text)}: the character '#' at position "
                         f"{text.index('#')} is not accepted (a comment inside a formula); accepted: "
                         + FORMULA_LANGUAGE)
    max_digits, max_degree = DEFAULT_LIMITS.max_digits, DEFAULT_LIMITS.max_degree
    source = text.replace("^", "**")

    def shown(node) -> str:
        return shorten(ast.get_source_segment(source, node) or ast.unparse(node), 40)
    t = lc.architecture.tokens
    names = {}
    for name, value in lc.symbol_names().items():
        if isinstance(value, sp.MatrixSymbol) and (name in ("P", "X", "H", "J") or name.startswith(("C_", "What"))):
            names[name] = value
        elif isinstance(value, sp.Symbol) and name.startswith("alpha_"):
            names[name] = value
    for i, (k, c) in enumerate(zip(lc.ks, lc.coefficients), start=1):
        names.setdefault(f"c_{k}", c)
    names["t"] = sp.Integer(t)
    for i in range(1, lc.layer + 1):  # C_i and What_i of every layer up to this one, even if unused
        names.setdefault(f"C_{i}", sp.MatrixSymbol(f"C_{i}", t, t))
    accepted = ("accepted: " + FORMULA_LANGUAGE + "; names here: " + ", ".join(sorted(names)))

    def fail(reason):
        raise ParseError(f"cannot read the formula {shorten(text)}: {reason}; {accepted}")

    degrees: dict = {}

    def degree_of(value) -> int:
        """Total degree in the names (matrices and scalars): exponents multiplied through nested powers."""
        if value in degrees:
            return degrees[value]
        if isinstance(value, (sp.MatrixSymbol, sp.Symbol)):
            out = 1
        elif not value.args or value.is_Number:
            out = 0
        elif isinstance(value, (sp.MatPow, sp.Pow, sp.HadamardPower)) and value.args[1].is_Integer:
            out = degree_of(value.args[0]) * abs(int(value.args[1]))
        elif isinstance(value, (sp.MatMul, sp.Mul)):
            out = sum(degree_of(a) for a in value.args)
        else:
            out = max(degree_of(a) for a in value.args)
        degrees[value] = out
        return out

    def bounded(value, node):
        """Refuse a number past the digits limit (``t**100`` multiplied out), before it is printed anywhere."""
        number = value.args[0] if isinstance(value, (sp.Mul, sp.MatMul)) and value.args else value
        if isinstance(number, sp.Rational) and max(abs(int(number.p)).bit_length(),
                                                   int(number.q).bit_length()) * 0.30103 > max_digits:
            fail(f"{shown(node)} has a number of more than {max_digits} digits (at most {max_digits})")
        return value

    def check_power(base, exponent: int, node):
        """Refuse ((t**100)**100)**100 and hadamard(hadamard(A, 100), 100) before computing them."""
        if isinstance(base, sp.Rational) and base != 0:
            size = max(abs(int(base.p)).bit_length(), int(base.q).bit_length()) * 0.30103
            if size * abs(exponent) > max_digits:
                fail(f"{shown(node)} has a number of more than {max_digits} digits (at most {max_digits})")
        degree = degree_of(base) * abs(exponent)
        if degree > max_degree:
            fail(f"the power {shown(node)} has total degree {degree} (exponents multiplied through nested "
                 f"powers); at most {max_degree} is accepted")

    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        if "integer string conversion" in str(err.msg):  # Python refuses int literals past 4300 digits
            fail("a number of more than 4300 digits (at most 50)")
        fail("invalid syntax")
    except (RecursionError, MemoryError):
        fail("nested too deeply")
    if sum(1 for _ in ast.walk(tree)) > 2000:
        fail("more than 2000 nodes")

    def is_matrix(value):
        return isinstance(value, sp.MatrixExpr)

    def read(node, depth=0):
        if depth > 100:
            fail("nested too deeply")
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            if abs(node.value) > 10**50:
                fail(f"the number {node.value} is too large")
            return sp.Integer(node.value)
        if isinstance(node, ast.Name):
            name = _what_alias(node.id) if _what_alias(node.id) in names else node.id  # What1: What_1
            if name not in names:
                fail(f"the name {node.id!r} is not known")
            return names[name]
        if isinstance(node, ast.Attribute):
            if node.attr != "T":
                fail(f"the attribute {node.attr!r} is not accepted (only A.T, the transpose)")
            value = read(node.value, depth + 1)
            if not is_matrix(value):
                fail("a transpose .T of a scalar")
            return value.T
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = read(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "hadamard" and len(node.args) == 2
                    and not node.keywords):
                fail(f"the call {ast.unparse(node.func)!r} is not accepted (only hadamard(A, m))")
            base, exponent = read(node.args[0], depth + 1), read(node.args[1], depth + 1)
            if not is_matrix(base) or not (isinstance(exponent, sp.Integer) and 1 <= int(exponent) <= 100):
                fail("hadamard(A, m) takes a matrix and an integer 1 <= m <= 100")
            check_power(base, int(exponent), node)
            return entrywise_power(base, int(exponent))
        if isinstance(node, ast.BinOp):
            left, right = read(node.left, depth + 1), read(node.right, depth + 1)
            op = node.op
            try:
                if isinstance(op, (ast.Add, ast.Sub)):
                    if is_matrix(left) != is_matrix(right):
                        fail("a sum of a matrix and a scalar")
                    return bounded(left + right if isinstance(op, ast.Add) else left - right, node)
                if isinstance(op, (ast.Mult, ast.MatMult)):
                    return bounded(left * right, node)
                if isinstance(op, ast.Div):
                    if is_matrix(right):
                        fail("a division by a matrix")
                    if right == 0:
                        fail("a division by zero")
                    return left * (1 / right) if is_matrix(left) else bounded(left / right, node)
                if isinstance(op, ast.Pow):
                    if not (isinstance(right, sp.Integer) and abs(int(right)) <= 100):
                        fail("a power that is not an integer of at most 100")
                    if is_matrix(left) and int(right) < 1:
                        fail("a matrix to a power below 1")
                    check_power(left, int(right), node)
                    return left ** right
            except SymattnError:
                raise
            except (ValueError, TypeError) as err:  # sympy's ShapeError of a product of mismatched matrices
                if is_matrix(left) and is_matrix(right):
                    wanted = lc.matrix_form.shape
                    raise ShapeError(
                        f"the formula {text!r}: {ast.unparse(node)!r} combines matrices of shapes "
                        f"{left.shape[0]} x {left.shape[1]} and {right.shape[0]} x {right.shape[1]}, which do not "
                        f"fit; the formula must be {wanted[0]} x {wanted[1]}") from None
                raise ShapeError(f"the formula {text!r}: {err}") from None
            fail(f"the operator {type(op).__name__} is not accepted")
        fail(f"{type(node).__name__} {ast.unparse(node)!r} is not accepted")

    value = read(tree.body)
    if not is_matrix(value):
        fail("it is a scalar, not a matrix formula")
    if value.shape != lc.matrix_form.shape:
        target = target or f"the leading coefficient of layer {lc.layer}"
        raise ShapeError(f"the formula {text!r} is {value.shape[0]} x {value.shape[1]}; {target} is "
                         f"{lc.matrix_form.shape[0]} x {lc.matrix_form.shape[1]}")
    return value


def parse_formula_claim(arch: Architecture, claim: str):
    """``(layer, LeadingCoefficient, formula)`` of ``"leading(i) = <matrix formula>"`` (cheap: no expansion).

    Examples
    --------
    >>> layer, lc, formula = parse_formula_claim(Architecture.uniform(layers=2), "leading(1) = P*X*H*C_1*J/9")
    >>> layer, formula == lc.matrix_form
    (1, True)
    >>> parse_formula_claim(Architecture.uniform(layers=2), "leading(3) = P")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: claim 'leading(3) = P' names layer 3; the architecture has layers 1..2
    """
    from .errors import ParseError
    from .parsing import refuse_unaccepted_characters, shorten

    _check_arch(arch)
    if isinstance(claim, str):
        if len(claim) > _MAX_FORMULA_LENGTH + 100:
            raise ParseError(f"the formula claim {shorten(claim)} is too long: {len(claim)} characters; a formula "
                             f"has at most {_MAX_FORMULA_LENGTH}")
        refuse_unaccepted_characters(claim, "formula claim")  # (Ｐ would be read as P)
    match = _leading_claim_pattern().match(claim) if isinstance(claim, str) else None
    if match is None:
        shown = shorten(claim) if isinstance(claim, str) else repr(claim)
        raise SymattnError(f"a formula claim reads 'leading(i) = <matrix formula>', got {shown}")
    layer_text = match["layer"].strip()
    if not layer_text:
        raise SymattnError(f"claim {shorten(claim)} names no layer: a formula claim reads "
                           f"'leading(i) = <matrix formula>' with a layer i in 1..{arch.layers}")
    if not (layer_text.isascii() and layer_text.isdigit()) or not 1 <= int(layer_text) <= arch.layers:
        shown = layer_text if len(layer_text) <= 20 else shorten(layer_text, 20)
        raise SymattnError(f"claim {shorten(claim)} names layer {shown}; the architecture has layers "
                           f"1..{arch.layers}")
    layer = int(layer_text)
    lc = leading_coefficient(arch, layer)
    return layer, lc, matrix_formula(match["formula"].strip(), lc)


def check_formula_claim(arch: Architecture, claim: str, *, seed: int = 0, points: int = 2):
    """Check a claimed leading coefficient ``"leading(i) = <matrix formula>"`` against the entrywise expansion.

    The formula is read by :func:`matrix_formula` in the names of
    :attr:`LeadingCoefficient.matrix_form` (for this network's ``k`` and
    ``t``) and compared, as :func:`verify_leading_coefficient` compares the
    package's own forms, with ``F_{n_i} - F_{n_i}|_{Kt_i = 0}`` of
    :func:`expand` at ``points`` random integer points (and the lower orders
    with 0): a false claim comes with a counterexample at small integer
    coordinates.

    Returns
    -------
    symattn.verdicts.ClaimCheck
        ``claimed`` the formula as read, ``computed`` the engine's matrix
        form, ``verdict`` True / False, ``counterexample`` for a false claim.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=2, width=1, tokens=2)
    >>> check_formula_claim(arch, "leading(2) = 1/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J").verdict
    True
    >>> wrong = check_formula_claim(arch, "leading(2) = 1/t^4 * P*X*H*C_1*C_1.T*H*C_2*J")
    >>> wrong.verdict, wrong.computed, max(abs(int(v)) for _, v in wrong.counterexample.point) <= 10
    (False, '(1/16)*P*X*H*C_1*H*C_1.T*H*C_2*J', True)
    """
    from .verdicts import ClaimCheck  # (not symattn.check, which imports this module)

    layer, lc, claimed = parse_formula_claim(arch, claim)
    candidate = dataclasses.replace(lc, matrix_form=claimed)
    result = verify_leading_coefficient(arch, layer, points=points, seed=seed, candidate=candidate)
    method = (f"the claimed matrix formula against F_{lc.order} - F_{lc.order}|Kt_{layer}=0 of the entrywise "
              f"expansion (verify_leading_coefficient): " + result.method)
    return ClaimCheck(claim, "leading", layer, str(claimed), str(lc.matrix_form), result.verdict, method,
                      result.counterexample)

# `from symattn import expand` gives this module (it shares the function's name): calling it calls expand()
make_callable(__name__, "expand")
