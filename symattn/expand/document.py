"""The LaTeX document of an expansion (:meth:`Expansion.to_latex <symattn.expand.Expansion.to_latex>`).

A header, the matrix forms where they are the whole coefficient (checked
entry by entry against the expansion, exactly), then each ``F_n`` entry by
entry, collected by the generic Taylor coefficients and factored.
"""

from __future__ import annotations

import random

import numpy as np
import sympy as sp

from ..algebra.exactseries import PolynomialSeriesDomain, from_fmpq, to_fmpq
from ..algebra.matrix_expressions import object_array
from .._format import latex_escape
from ..errors import DomainError, SymattnError
from ..model import Architecture
from ..parsing import to_sympy
from .leading import LeadingCoefficient
from .names import curve_symbols, matrix_symbols, package_symbols
from .printing import _LATEX_WIDTH, matrix_latex, _pack_lines, _shown_width, _signed, _sum_atoms, latex
from .to_sympy import FlintToSympy


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
        if F.architecture.is_plain and all(a.normalized for a in F.architecture.attention) \
                and self._agrees(0, self._mean_form):
            whole[0] = matrix_latex(sp.Rational(1, t) * matrix_symbols(F.architecture)["P"]
                                     * matrix_symbols(F.architecture)["X"] * matrix_symbols(F.architecture)["J"])
        forms = F.matrix_forms()
        for lc in forms:
            if lc.order not in whole and self._agrees(lc.order, self._leading_form(lc)):
                whole[lc.order] = matrix_latex(lc.matrix_form)
            else:
                partial.append(lc)
        if forms or whole:
            if forms:
                lines = forms[-1]._definition_lines()
            else:
                lines = [rf"J = \mathbf{{1}}\mathbf{{1}}^{{\top}} \ ({t} \times {t}),\quad "
                         rf"P = {matrix_latex(_value_product(F.architecture))}"]
            parts += [r"\subsection*{Matrix forms}",
                      "In the named matrices (the effective score matrices $\\widehat{W}_i$ and the score Gram "
                      "matrices of the input $C_i$)",
                      "\\begin{align*}\n" + " \\\\\n".join("&" + line for line in lines) + "\n\\end{align*}"]
            for lc in partial:
                parts += [f"the part of $F_{{{lc.order}}}$ that depends on the scores of layer {lc.layer} is",
                          "\\begin{align*}\n&" + f"{lc._left_side()} = {matrix_latex(lc.matrix_form)}"
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
