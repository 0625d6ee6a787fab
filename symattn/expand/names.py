"""The package's symbols by name, and substitutions that match symbols by name.

:func:`curve_symbols`, :func:`package_symbols`, :func:`matrix_symbols` and
:func:`symbols` give the symbols the expansions and matrix forms use (with
their assumptions); the helpers below read the keys and values of a
substitution (names, Symbols matched by name, text read by the safe parser)
for :class:`~symattn.expand.Expansion` and
:class:`~symattn.expand.LeadingCoefficient`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..algebra.matrix_expressions import object_array
from ..errors import SymattnError, TruncationError
from ..model import Architecture, Parameters, require_architecture
from ..normalizers import as_normalizer
from ..parsing import canonical_matrix_name, parse_expression, to_sympy
from .sizes import MAX_TRUNCATION


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
    blocks = used.block_map(curve_symbols(used))  # every component's blocks: attention, biases, feed-forward
    out = {s.name: s for m in (*blocks.values(), used.input_symbols()) for s in m}
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
    # the rows of the one table of names (formula_names), which the formula parser reads too
    return {row.name: row.value for row in formula_names(arch).rows
            if isinstance(row.value, sp.MatrixSymbol) and row.name != "S_0"}


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
    >>> from symattn.expand import expand
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
    wanted = [canonical_matrix_name(n) if canonical_matrix_name(n) in known else n for n in wanted]
    for name in wanted:
        if name not in known:
            raise _unknown(name, known, f"this architecture ({used.describe()})")
    found = tuple(known[n] for n in wanted)
    return found[0] if len(found) == 1 else found


def _identifier(text: str) -> bool:
    return text.isidentifier() and text.isascii()


def _unknown(name: str, names: dict, what: str) -> SymattnError:
    """The error for a name ``what`` does not use, with the name likely meant (``x11``: did you mean x_11?)."""
    known = sorted(names)
    shown = ", ".join(known[:12]) + (f", ... ({len(known)} names)" if len(known) > 12 else "")
    from ..parsing import shorten, suggest_name

    close = suggest_name(name, known)
    hint = f" (did you mean {close}?)" if close else ""
    return SymattnError(f"unknown symbol name {shorten(name)} for {what}{hint}; its symbols are {shown}")


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


def _normalizer_symbols(arch: Architecture, truncation: int) -> dict:
    """``{name: symbol}`` of a generic normalizer's ``c_1 .. c_truncation`` (what ``F_0 .. F_{N-1}`` may use)."""
    out = {}
    for n in arch.normalizers:
        if n.is_generic:
            for m in range(1, truncation + 1):
                out[n.coefficient_symbol(m).name] = n.coefficient_symbol(m)
    return out


# -- the names of matrix formulas: one table, for printing and reading ----------------------------
def block_matrix_name(key: tuple) -> str:
    """The name of a block's base point as a matrix: ``Qt1``, ``Vt2``, ``Kt1h2`` (head 2), ``Wint1``, ``bVt1``.

    The entries of that matrix are the package's symbols ``Qt1_11``, ... (the
    name without ``_rc``).

    Examples
    --------
    >>> block_matrix_name(("V", 2)), block_matrix_name(("K", 1, 2)), block_matrix_name(("Win", 1))
    ('Vt2', 'Kt1h2', 'Wint1')
    """
    from ..model.symbols import entry_name

    return entry_name(key, 0, 0, "t").rsplit("_", 1)[0]


@dataclass(frozen=True)
class FormulaName:
    """One row of :class:`FormulaNames`: a name, what it stands for, and its other spellings.

    Attributes
    ----------
    name : str
        As the package prints it (``P``, ``Vt1``, ``C_2``, ``c_1``).
    value : sympy MatrixSymbol, Symbol or number
        What the formula parser reads it as.
    meaning : str
        One line: its definition for this network.
    aliases : tuple of str
        Other names read as the same object (``V_1`` and, in a one-layer network, ``V`` for ``Vt1``).
    """

    name: str
    value: object
    meaning: str
    aliases: tuple = ()


@dataclass(frozen=True)
class FormulaNames:
    """The names a matrix formula may use about one network, with their meanings: one table for printing and reading.

    Every name the package prints for a matrix of the expansion along the
    query/key collapse is here, and the formula parser
    (:func:`symattn.parsing.matrix_formula`) reads exactly these:

    * ``X`` (the input), ``t`` (tokens), ``I`` (identity), ``H = I - J/t``, ``J`` (ones),
      ``S_0`` (the attention weights at collapse: ``J/t``, or the causal
      average with a causal mask);
    * the base point of every parameter block, ``Qt1, Kt1, Vt1, ...`` (heads:
      ``Qt1h2``; biases ``bQt1, bKt1, bVt1``; a feed-forward block's
      ``Wint1, bint1, Woutt1, boutt1``), whose entries are the symbols
      ``Qt1_11, ...`` of the expansion; a block the curve does not scale is
      also read by its native name (``V_1`` for ``Vt1``, and ``V`` in a
      one-layer network); a scaled one (``Q_1 = eps Qt1``) is refused with
      the base point's name;
    * with one head per layer: ``P = Vt_l ... Vt_1``, ``What_i = Pt_{i-1}^T
      Kt_i^T Qt_i Pt_{i-1}``, ``C_i = X^T What_i X`` and ``alpha_i = 1^T C_i
      1 / t^2``;
    * the scalars ``c_j`` (the normalizer's Taylor coefficients of ``s/s(0)``:
      numbers, or symbols for a generic normalizer) and the entry symbols
      ``x_11, Vt1_11, ...``.

    :meth:`evaluate` writes a formula read in these names out entry by entry,
    for every network :func:`~symattn.expand.expand` handles.

    Attributes
    ----------
    architecture : Architecture
    order : int
        The highest coefficient ``F_n`` the formulas are about (``c_1 .. c_{n+1}`` are named).
    layer : int or None
        For a layer's leading coefficient: only the score names of layers ``1 .. layer``.
    matrix_form : sympy MatrixExpr or None
        A formula read in these names (what :meth:`evaluate` writes out).
    shape : tuple
        The shape of the coefficients ``F_n`` (``d_l x t``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> table = formula_names(Architecture.uniform(layers=1, width=1, tokens=2, residual=True))
    >>> [row.name for row in table.rows][:9]
    ['X', 't', 'I', 'H', 'J', 'S_0', 'Qt1', 'Kt1', 'Vt1']
    >>> table.read("V_1") == table.read("V") == table.read("Vt1")
    True
    >>> print(table.row("P").meaning)
    P = Vt1 (the product of the value matrices Vt_l ... Vt_1)
    >>> table.refused()["Q_1"]
    'Q_1 = eps*Qt1 on the collapse curve: the coefficients F_n are written in the base point Qt1'
    """

    architecture: Architecture
    order: int = 0
    layer: int | None = None
    matrix_form: object = None

    @property
    def shape(self) -> tuple:
        return (self.architecture.widths[-1], self.architecture.tokens)

    @property
    def tokens(self) -> int:
        return self.architecture.tokens

    def formula_names(self) -> "FormulaNames":
        """This table (what :func:`symattn.parsing.matrix_formula` asks a names object for)."""
        return self

    # -- the table ------------------------------------------------------------------------------
    def _one_head(self) -> bool:
        return all(h == 1 for h in self.architecture.heads)

    def _score_layers(self) -> range:
        arch = self.architecture
        return range(1, (arch.layers if self.layer is None else self.layer) + 1)

    @property
    def rows(self) -> tuple:
        """Every :class:`FormulaName`, in the order the package prints them."""
        cached = self.__dict__.get("_rows")
        if cached is not None:
            return cached
        from ..curves import collapse

        arch = self.architecture
        d0, t = arch.widths[0], arch.tokens
        rows = [FormulaName("X", sp.MatrixSymbol("X", d0, t), f"the input, {d0} x {t} (entries x_11 ...), one "
                                                                 "token per column"),
                FormulaName("t", sp.Integer(t), f"the number of tokens, {t}"),
                FormulaName("I", sp.Identity(t), f"the {t} x {t} identity"),
                FormulaName("H", sp.MatrixSymbol("H", t, t), f"I - J/{t}, the centering"),
                FormulaName("J", sp.MatrixSymbol("J", t, t), f"ones({t}, {t})"),
                FormulaName("S_0", sp.MatrixSymbol("S_0", t, t),
                            "the attention weights at collapse: the causal average, (S_0)_jk = 1/k for j <= k"
                            if arch.causal else "the attention weights at collapse, J/t")]
        curve = collapse()
        one_layer = arch.layers == 1 and self._one_head()
        for key, shape in arch.blocks():
            name = block_matrix_name(key)
            if self.layer is not None and key[1] > self.layer and key[0] != "V":
                continue
            aliases = []
            if curve.block_power(key[0], key[1]) == 0 and len(key) == 2:
                aliases.append(f"{key[0]}_{key[1]}")
                if one_layer:
                    aliases.append(key[0])
            rows.append(FormulaName(name, sp.MatrixSymbol(name, *shape),
                                    f"{arch.block_label(key)} at the base point of the curve ({shape[0]} x {shape[1]}, "
                                    f"entries {name}_11 ...)", tuple(aliases)))
        if self._one_head():
            values = [block_matrix_name(("V", i)) for i in range(arch.layers, 0, -1)]
            rows.append(FormulaName("P", sp.MatrixSymbol("P", arch.widths[-1], d0),
                                    f"P = {'*'.join(values)} (the product of the value matrices Vt_l ... Vt_1)"))
            for i in self._score_layers():
                prefix = "*".join(f"Vt{j}" for j in range(i - 1, 0, -1))
                inside = f"Kt{i}.T*Qt{i}"
                definition = inside if i == 1 else (f"({prefix}).T*{inside}*{prefix}" if i > 2
                                                    else f"{prefix}.T*{inside}*{prefix}")
                rows.append(FormulaName(f"What_{i}", sp.MatrixSymbol(f"What_{i}", d0, d0),
                                        f"What_{i} = {definition} (layer {i}'s scores in input coordinates)",
                                        (f"What{i}",)))
                rows.append(FormulaName(f"C_{i}", sp.MatrixSymbol(f"C_{i}", t, t), f"C_{i} = X.T*What_{i}*X"))
                rows.append(FormulaName(f"alpha_{i}", sp.Symbol(f"alpha_{i}"),
                                        f"alpha_{i} = (sum of the entries of C_{i})/t^2"))
        for name, value in self._coefficients().items():
            rows.append(FormulaName(name, value, f"{name} = {value}: Taylor coefficient of the normalizer's s/s(0)"
                                    if not isinstance(value, sp.Symbol) else
                                    f"{name}: the generic normalizer's Taylor coefficient (a symbol)"))
        rows = tuple(rows)
        object.__setattr__(self, "_rows", rows)
        return rows

    def _coefficients(self) -> dict:
        """``{c_j: value}``: ``c_1 .. c_{order+1}`` of a common normalizer, else each layer's leading ``c_k``."""
        arch = self.architecture
        out = {}
        normalizers = [n for n in arch.normalizers if not n.is_lightning]
        if not normalizers:
            return out
        first = normalizers[0]
        if all(n == first for n in arch.normalizers):
            try:
                taylor = first.taylor(self.order + 1)
                for j in range(1, self.order + 2):
                    out[f"c_{j}"] = first.coefficient_symbol(j) if first.is_generic else taylor[j]  # sympy numbers
                return out
            except SymattnError:  # no Taylor data: the leading c_k only
                pass
        for n in normalizers:
            k = int(n.k)
            out.setdefault(f"c_{k}", n.coefficient_symbol(k) if n.is_generic else n.taylor(k)[k])
        return out

    def row(self, name: str) -> FormulaName:
        """The row of ``name`` (or of one of its aliases).

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> formula_names(Architecture.uniform(layers=2, width=1, tokens=2)).row("V_2").name
        'Vt2'
        """
        for row in self.rows:
            if name == row.name or name in row.aliases:
                return row
        raise SymattnError(self.unknown_message(name))

    def reading(self) -> dict:
        """``{name or alias: value}``: every name the parser reads."""
        out = {}
        for row in self.rows:
            out[row.name] = row.value
            for alias in row.aliases:
                out.setdefault(alias, row.value)
        for name, symbol in package_symbols(self.architecture, self.order + 1).items():  # entries: Qt1_11, ...
            out.setdefault(name, symbol)
        return out

    def read(self, name: str):
        """The value of ``name`` (an error naming the table's names for one it does not have)."""
        reading = self.reading()
        if name not in reading:
            raise SymattnError(self.unknown_message(name))
        return reading[name]

    def refused(self) -> dict:
        """``{name: reason}``: names the package prints elsewhere that do not fit a coefficient ``F_n`` of this network."""
        from ..curves import collapse

        arch = self.architecture
        out = {}
        curve = collapse()
        for key, _ in arch.blocks():
            if len(key) == 2 and curve.block_power(key[0], key[1]) != 0:
                base = block_matrix_name(key)
                out[f"{key[0]}_{key[1]}"] = (f"{key[0]}_{key[1]} = eps*{base} on the collapse curve: the coefficients "
                                             f"F_n are written in the base point {base}")
        if arch.layers == 1 and self._one_head():
            for letter in ("Q", "K"):
                out.setdefault(letter, f"{letter} = eps*{letter}t1 on the collapse curve: the coefficients F_n are "
                                       f"written in the base point {letter}t1")
        elif "V" not in self.reading():
            values = ", ".join(block_matrix_name(key) for key, _ in arch.blocks() if key[0] == "V")
            out["V"] = f"V names every value matrix of this network: write one of {values}"
        if not self._one_head():
            several = [i for i, h in enumerate(arch.heads, start=1) if h > 1]
            why = (f"layer {several[0]} has {arch.heads[several[0] - 1]} heads: no single value product or "
                   f"effective score matrix; write the heads' matrices ({block_matrix_name(('V', several[0], 1))}, "
                   f"{block_matrix_name(('V', several[0], 2))}, ...)")
            out["P"] = "P: " + why
            for i in range(1, arch.layers + 1):
                for name in (f"What_{i}", f"C_{i}", f"alpha_{i}"):
                    out[name] = f"{name}: " + why
        elif self.layer is not None:
            for i in range(self.layer + 1, arch.layers + 1):
                for name in (f"What_{i}", f"C_{i}", f"alpha_{i}", f"Qt{i}", f"Kt{i}"):
                    out[name] = (f"{name} belongs to layer {i}, after layer {self.layer}: the leading coefficient of "
                                 f"layer {self.layer} does not depend on it")
        return out

    def unknown_message(self, name: str) -> str:
        """Why ``name`` is not read, with the likely meant name."""
        from ..parsing import shorten, suggest_name

        refused = self.refused()
        if name in refused:
            return refused[name]
        close = suggest_name(name, [row.name for row in self.rows] + [a for row in self.rows for a in row.aliases])
        return (f"the name {shorten(name, 40)} is not known" + (f" (did you mean {close}?)" if close else ""))

    def names_text(self) -> str:
        """The names in one line, for error messages and help.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> formula_names(Architecture.uniform(layers=1, width=1, tokens=2)).names_text()
        'X, t, I, H, J, S_0, Qt1, Kt1, Vt1 (also V_1, V), P, What_1, C_1, alpha_1, c_1; entries x_11, Qt1_11, ...'
        """
        parts = [row.name + (f" (also {', '.join(a for a in row.aliases if not a.startswith('What'))})"
                             if any(not a.startswith("What") for a in row.aliases) else "") for row in self.rows]
        return ", ".join(parts) + "; entries x_11, " + block_matrix_name(self.architecture.blocks()[0][0]) + "_11, ..."

    def __str__(self) -> str:
        """The table: one line per name, with its meaning.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> print(str(formula_names(Architecture.uniform(layers=1, width=1, tokens=2))).splitlines()[8])
        Vt1 (also V_1, V): V_1 at the base point of the curve (1 x 1, entries Vt1_11 ...)
        """
        lines = []
        for row in self.rows:
            aliases = [a for a in row.aliases if not a.startswith("What")]
            lines.append(f"{row.name}" + (f" (also {', '.join(aliases)})" if aliases else "") + f": {row.meaning}")
        return "\n".join(lines)

    # -- writing a formula out --------------------------------------------------------------------
    def _values(self, parameters, X, convert, dot, one, zero) -> dict:
        """``{name: value}`` of every matrix and ``alpha_i`` of the table, in a ring (``convert``) or sympy."""
        arch = self.architecture
        base = curve_symbols(arch) if parameters is None else parameters
        blocks = arch.block_map(base)
        X = arch.input_symbols() if X is None else sp.Matrix(X)

        def array(matrix):
            return object_array(matrix, convert) if convert is not None else sp.Matrix(matrix)

        t = arch.tokens
        out = {"X": array(X)}
        for key, _ in arch.blocks():
            out[block_matrix_name(key)] = array(sp.Matrix(blocks[key]))
        J = array(sp.ones(t, t))
        H = array(sp.eye(t) - sp.ones(t, t) / t)
        S0 = array(sp.Matrix(t, t, lambda j, k: sp.Rational(1, k + 1) if j <= k else 0) if arch.causal
                   else sp.ones(t, t) / t)
        out.update({"J": J, "H": H, "S_0": S0})
        if self._one_head():
            prefix = None
            for i in range(1, arch.layers + 1):
                if i in self._score_layers():
                    W = dot(out[f"Kt{i}"].T, out[f"Qt{i}"])
                    out[f"What_{i}"] = W if prefix is None else dot(dot(prefix.T, W), prefix)
                    out[f"C_{i}"] = dot(dot(out["X"].T, out[f"What_{i}"]), out["X"])
                    total = zero
                    for value in (out[f"C_{i}"].flat if convert is not None else out[f"C_{i}"]):
                        total = total + value
                    out[f"alpha_{i}"] = total * (convert(sp.Rational(1, t * t)) if convert is not None
                                                 else sp.Rational(1, t * t))
                prefix = out[f"Vt{i}"] if prefix is None else dot(out[f"Vt{i}"], prefix)
            out["P"] = prefix
        return out

    def evaluate(self, parameters=None, X=None, coefficient_values: dict | None = None, effective: bool = False,
                 form: str | None = "matrix", progress: bool = False) -> sp.Matrix:
        """:attr:`matrix_form` written out entry by entry, at given parameters and input (default: the symbols).

        The signature of :meth:`LeadingCoefficient.evaluate
        <symattn.expand.LeadingCoefficient.evaluate>` (``form`` is always the
        matrix form).  Polynomials over Q are multiplied out in python-flint;
        other values (irrational Taylor coefficients) in sympy.

        Examples
        --------
        >>> from dataclasses import replace
        >>> from symattn.model import Architecture
        >>> from symattn.parsing import matrix_formula
        >>> table = formula_names(Architecture.uniform(layers=1, width=1, tokens=2, residual=True))
        >>> replace(table, matrix_form=matrix_formula("X + V*X*S_0", table)).evaluate()
        Matrix([[Vt1_11*x_11/2 + Vt1_11*x_12/2 + x_11, Vt1_11*x_11/2 + Vt1_11*x_12/2 + x_12]])
        """
        from ..algebra.matrix_expressions import RingEvaluator, evaluate_matrix_expression
        from ..errors import DomainError
        from .to_sympy import exact_conversions

        formula = self.matrix_form
        if formula is None:
            raise SymattnError("no formula to evaluate: replace(table, matrix_form=matrix_formula(text, table))")
        if isinstance(formula, sp.ZeroMatrix):
            return sp.zeros(*formula.shape)
        scalars = {}
        for key, value in (coefficient_values or {}).items():
            scalars[key if isinstance(key, str) else key.name] = to_sympy(value)
        formula = formula.xreplace({s: scalars[s.name] for s in formula.free_symbols
                                    if isinstance(s, sp.Symbol) and s.name in scalars})
        by_name = {s.name: s for s in formula.atoms(sp.MatrixSymbol)}
        by_name.update({s.name: s for s in formula.free_symbols if isinstance(s, sp.Symbol)
                        and s.name.startswith("alpha_")})
        symbolic = self._values(parameters, X, None, lambda a, b: a * b, sp.Integer(1), sp.Integer(0))
        symbols = set()
        for name in by_name:
            value = symbolic[name]
            symbols |= value.free_symbols if isinstance(value, sp.Basic) else set()
        symbols |= {s for s in formula.free_symbols if isinstance(s, sp.Symbol) and not s.name.startswith("alpha_")}
        try:
            convert, back = exact_conversions(symbols)
            values = self._values(parameters, X, convert, np.dot, convert(sp.Integer(1)), convert(sp.Integer(0)))
            env = {symbol: values[name] for name, symbol in by_name.items()}
            array = RingEvaluator(convert).matrix(formula, env)
            return sp.Matrix(array.shape[0], array.shape[1], [back(v) for v in array.flat])
        except (DomainError, SymattnError):  # not polynomial over Q: sympy arithmetic
            env = {symbol: symbolic[name] for name, symbol in by_name.items()}
            value = evaluate_matrix_expression(formula, env)
            return sp.Matrix(value).applyfunc(sp.expand)


def formula_names(arch: Architecture, order: int = 0, layer: int | None = None) -> FormulaNames:
    """The names a matrix formula about ``arch``'s coefficients ``F_0 .. F_order`` may use (:class:`FormulaNames`).

    Examples
    --------
    >>> table = formula_names(Architecture.uniform(layers=2, width=1, tokens=2, heads=[2, 1]))
    >>> table.read("Vt1h2").shape, "P" in table.reading()
    ((1, 1), False)
    >>> table.unknown_message("P")[:48]
    'P: layer 1 has 2 heads: no single value product '
    """
    _check_arch(arch)
    return FormulaNames(arch, int(order), layer)
