"""Each layer's leading coefficient in matrix form: :func:`leading_coefficient` and :class:`LeadingCoefficient`.

Along the query/key collapse the scores of layer ``i`` first appear in the
coefficient ``F_{n_i}``; :func:`leading_coefficient` derives its part that
depends on them as a matrix formula valid for every width and token count,
in three equal forms (through the tokens, through ``P`` and ``What_i``, and
in ``H, J, C_i``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..algebra.matrix_expressions import RingEvaluator, entrywise_power, evaluate_matrix_expression, object_array
from .._format import FormattedResult, latex_escape
from ..errors import DomainError, ResourceLimitError, ShapeError, SymattnError
from ..model import Architecture, Parameters
from ..normalizers import Normalizer
from ..parsing import canonical_matrix_name, to_sympy, to_sympy_matrix
from .formulas import _general_latex, _layer_k, _matrix_form, _orders
from .names import (
    _check_arch,
    _normalizer_symbols,
    _substituted,
    _substitution_pairs,
    _unknown,
    _with_normalizer,
    curve_symbols,
    matrix_symbols,
)
from .printing import CoefficientMatrix, matrix_latex
from .sizes import MAX_LEADING_LAYER
from .to_sympy import exact_conversions


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
            convert, back = exact_conversions(symbols)
            array = self._evaluate_in_ring(convert, {k: object_array(v, convert) for k, v in env.items()},
                                           {c: convert(v) for c, v in scalars.items()}, effective)
            from ..limits import progress_bar

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
        out.update({name: value for name, value in by_name.items() if name[:2] in ("Qt", "Kt", "Vt")})
        if sympy:
            out["J"] = sp.ones(t, t)
            out["H"] = sp.eye(t) - out["J"] / t
            out["S_0"] = out["J"] / t
        else:
            one, zero, inverse = convert(sp.Integer(1)), convert(sp.Integer(0)), convert(sp.Rational(1, t))
            out["J"], out["H"] = np.empty((t, t), dtype=object), np.empty((t, t), dtype=object)
            out["S_0"] = np.empty((t, t), dtype=object)
            for r in range(t):  # element by element: numpy would read a polynomial as a sequence
                for c in range(t):
                    out["J"][r, c] = one
                    out["H"][r, c] = (one if r == c else zero) - inverse
                    out["S_0"][r, c] = inverse
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

    def formula_names(self):
        """The names a claimed formula for this leading coefficient may use (:class:`~symattn.expand.FormulaNames`).

        The table of :func:`~symattn.expand.formula_names` for this network,
        with the score names of layers ``1 .. layer`` (a leading coefficient
        does not depend on later layers' scores).

        Examples
        --------
        >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=1, tokens=2), 1)
        >>> table = lc.formula_names()
        >>> table.read("Vt2").shape, table.unknown_message("C_2")[:37]
        ((1, 1), 'C_2 belongs to layer 2, after layer 1')
        """
        from .names import formula_names

        return formula_names(self.architecture, self.order, self.layer)

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
        if canonical_matrix_name(name) in names:
            name = canonical_matrix_name(name)
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
            name = canonical_matrix_name(name) if canonical_matrix_name(name) in names else name
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
                common.append(f"P = {matrix_latex(definition)}")
            elif name.startswith("alpha_"):
                layers.setdefault(int(name[6:]), []).append(
                    rf"\alpha_{{{name[6:]}}} = \tfrac{{1}}{{{t * t}}}\, \mathbf{{1}}^{{\top}} C_{{{name[6:]}}} "
                    r"\mathbf{1}")
            else:  # What_i, C_i
                layer = int(name.split("_")[1])
                layers.setdefault(layer, []).append(
                    f"{matrix_latex(sp.MatrixSymbol(name, 1, 1))} = {matrix_latex(definition)}")
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
        lines = [f"{self._left_side()} = {matrix_latex(self.matrix_form)}"] + self._definition_lines()
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
                 f"- k = {', '.join(map(str, self.ks))}; c_k = {', '.join(str(c) for c in self.coefficients)}",
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
