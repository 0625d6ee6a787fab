"""The output along a curve as a power series in ``eps``: :func:`expand` and its result :class:`Expansion`.

One forward pass (:func:`symattn.jacobian.series_output`) over truncated
series with exact coefficients (python-flint polynomials over Q, rationals at
a numeric point, sympy for irrational Taylor coefficients) gives
``F_0, ..., F_{N-1}``; :class:`Expansion` holds them with sympy's operations
(``subs``, ``simplify``, ...) over every coefficient and the package's
formats (text, Markdown, JSON, LaTeX).
"""

from __future__ import annotations

import dataclasses
import html
import textwrap
import time
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..algebra.exactseries import (
    PolynomialSeriesDomain,
    RationalSeriesDomain,
    SymbolicSeriesDomain,
    from_fmpq,
    to_fmpq,
)
from .._markdown import markdown_math
from .. import _format
from .._format import FormattedResult, bounded_display, latex_document, markdown_table
from ..curves import Curve, collapse
from ..errors import DomainError, ShapeError, SymattnError, TruncationError
from ..jacobian import series_output
from ..model import Architecture
from ..normalizers import Normalizer
from ..parsing import to_sympy
from .document import _ExpansionLatex
from .leading import leading_coefficient, leading_orders
from .names import (
    _check_arch,
    _normalizer_symbols,
    _refuse_order,
    _substituted,
    _substitution_pairs,
    _unknown,
    _with_normalizer,
    curve_symbols,
    package_symbols,
)
from .printing import CoefficientMatrix, _latex
from .sizes import LATEX_MAX_TERMS, MAX_PARAMS, MAX_TERMS, MAX_TOKENS, MAX_TRUNCATION
from .to_sympy import LazyCoefficients


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

        def whole():
            lines = [prettyForm(f"expansion modulo eps^{self.truncation}")]
            lines += [prettyForm(*printer._print(c).left(f"F_{n} = ")) for n, c in enumerate(self.coefficients)]
            width = max(line.width() for line in lines)
            out = None
            for line in lines:  # left-aligned (stringPict.below centres)
                line = prettyForm(*line.right(" " * (width - line.width()))) if line.width() < width else line
                out = line if out is None else prettyForm(*out.below(line))
            return out

        # bounded as every display (DISPLAY_MAX_CHARS), a prettyForm here; its size (blank space included) varies
        # most with the shapes of the entries: written and measured up to WRITE_AND_MEASURE times the bound
        size = self._display_size("pretty")
        limit = _format.DISPLAY_MAX_CHARS  # read now: a session may change it
        if size <= _format.WRITE_AND_MEASURE * limit:
            out = whole()
            size = out.width() * out.height()
            if size <= limit:
                return out
        text = bounded_display(lambda: "", size=max(size, limit + 1), form="text",
                               summary=lambda: self._display_summary("text"),
                               whole="sympy.pretty(F[n]) for each n, or to_text()",
                               left_out=self._display_left_out("text"))
        # lines of a terminal's width: sympy would cut the whole block into strips of 80 columns
        return prettyForm("\n".join(textwrap.fill(line, 78, subsequent_indent="  ") if len(line) > 78 else line
                                     for line in text.splitlines()))

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

    def to_latex(self, standalone: bool = False, max_terms: int = LATEX_MAX_TERMS, full: bool = False) -> str:
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
            Terms written out entry by entry at most (default :data:`~symattn.expand.sizes.LATEX_MAX_TERMS`).
        full : bool
            Every entry, whatever ``max_terms`` says (tens of megabytes for the
            largest expansions: write it to a file, do not display it).

        Examples
        --------
        >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
        >>> text = F.to_latex()
        >>> text.splitlines()[0], r"F_{0} = \frac{1}{2}\, P X J" in text, r"F_{2} = \frac{1}{2}\, P X H C_{1}" in text
        ('\\section*{Expansion of the output}', True, True)
        >>> G = expand(Architecture.uniform(layers=1, width=1, tokens=3), truncation=5)
        >>> print(next(line for line in G.to_latex().splitlines() if line.startswith("(F_{4})_{11}"))[:79])
        (F_{4})_{11} &= \tfrac{1}{54} (\tilde{K}_{1})_{11}^{2} (\tilde{Q}_{1})_{11}^{2}
        >>> "Left out past 5 terms" in G.to_latex(max_terms=5), "Left out" in G.to_latex(max_terms=5, full=True)
        (True, False)
        """
        if full:
            max_terms = sum(terms for _, terms in self.term_counts())
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
        - layer 1: $F_{2} - F_{2}\\big\\vert _{\\widehat W_{1} = 0} = \\frac{1}{2}\\, P X H C_{1}$, where $H = I_{2} - ...$
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
                # formulas in Markdown are LaTeX math (symattn._markdown): written as Python, P*X*H lost its '*'
                formula, *definitions = (line.lstrip("&") for line in lc.matrix_latex().split(" \\\\\n"))
                lines.append(f"- layer {lc.layer}: {markdown_math(formula)}, where "
                             + "; ".join(markdown_math(line) for line in definitions))
        return "\n".join(lines) + "\n"

    def _display_size(self, form: str) -> int:
        """About how many characters a display of every entry has, from the term counts (nothing written).

        Measured on expansions: some 150 to 220 characters of LaTeX per term
        (the symbols are long commands), 60 to 80 of plain text and 400 to 800
        of ``sympy.pretty``, the more the more layers and symbols.
        """
        if form == "repr":
            return len(repr(self.architecture.describe())) + 200  # the architecture and curve, not the entries
        per_term = {"text": 80, "pretty": 800}.get(form, 220)
        entries = sum(nonzero for nonzero, _ in self.term_counts())
        return 200 + 40 * len(self.coefficients) + 20 * entries + per_term * sum(t for _, t in self.term_counts())

    def _display_summary(self, form: str) -> str:
        """The summary past the display bound: :meth:`summary` (text, Markdown), or its table as math."""
        if form != "math":
            text = self.summary()
            return text if form != "html" else "<pre>" + html.escape(text) + "</pre>"
        rows, cols = self.architecture.widths[-1], self.architecture.tokens
        table = " ".join(rf"F_{{{n}}} & {nonzero} \text{{ of }} {rows * cols} & {terms} \\"
                         for n, (nonzero, terms) in enumerate(self.term_counts()))
        out = (rf"\text{{expansion modulo }} \varepsilon^{{{self.truncation}}}: \quad "
               r"\begin{array}{lrr} & \text{nonzero entries} & \text{terms} \\ \hline " + table + r" \end{array}")
        forms = [lc.matrix_latex().replace("\n", " ").replace("&", "") for lc in self.matrix_forms()]
        if forms:
            out += r" \\ " + r" \\ ".join(line for lines in forms for line in lines.split(r" \\ "))
        return out

    def _display_whole(self, form: str) -> str:
        return {"text": "to_text(); every entry: to_json()", "markdown": "to_markdown()",
                "html": "to_markdown()"}.get(form, "to_latex(full=True)")

    def _display_left_out(self, form: str) -> str:
        counts = self.term_counts()
        large = [n for n, (_, terms) in enumerate(counts) if terms]
        total = sum(terms for _, terms in counts)
        return ("the entries of " + ", ".join(f"F_{n}" for n in large) + f" ({total:,} terms)") if large else ""

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
        for n, c in enumerate(self.coefficients):  # rows separated by ';', as plain_words writes a matrix
            lines.append(f"F_{n} = (" + "; ".join(", ".join(str(e) for e in row) for row in c.tolist()) + ")")
        return "\n".join(lines)


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
    from ..limits import memory_limit

    max_bytes = memory_limit(max_memory)
    values = _point_map(point)
    start = time.perf_counter()
    from ..limits import progress_bar

    normalized = sum(1 for a in used.attention if a.normalized)
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
    blocks = used.block_map(curve_symbols(used))  # every component's blocks (attention, a feed-forward block, biases)
    X = used.input_symbols()
    by_name = {s.name: s for m in (*blocks.values(), X) for s in m}
    coefficient_names = _normalizer_symbols(used, truncation)
    unknown = sorted(set(values) - set(by_name) - set(coefficient_names))
    if unknown:
        raise SymattnError(f"point names unknown symbols {unknown}; symbols are named like "
                           f"{next(iter(by_name))}, x_11 and c_1 (normalizer coefficients)")
    substitution = {by_name[n]: v for n, v in values.items() if n in by_name}
    coefficient_values = {coefficient_names[n]: v for n, v in values.items() if n in coefficient_names}
    blocks = {key: sp.ImmutableMatrix(m.xreplace(substitution)) for key, m in blocks.items()}
    X = sp.ImmutableMatrix(X.xreplace(substitution))

    free = set().union(*(m.free_symbols for m in (*blocks.values(), X)))
    generic_left = any(n.is_generic for n in used.normalizers) and \
        len(coefficient_values) < len(coefficient_names)
    all_rational = ring is None and not free and not generic_left and all(
        f.has_rational_taylor for f in used.analytic_functions) and all(
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
    point = {key: np.array(matrix.tolist(), dtype=object) for key, matrix in blocks.items()}
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
