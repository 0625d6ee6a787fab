"""The package's symbols by name, and substitutions that match symbols by name.

:func:`curve_symbols`, :func:`package_symbols`, :func:`matrix_symbols` and
:func:`symbols` give the symbols the expansions and matrix forms use (with
their assumptions); the helpers below read the keys and values of a
substitution (names, Symbols matched by name, text read by the safe parser)
for :class:`~symattn.expand.Expansion` and
:class:`~symattn.expand.LeadingCoefficient`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

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
    known = sorted(names)
    shown = ", ".join(known[:12]) + (f", ... ({len(known)} names)" if len(known) > 12 else "")
    from ..parsing import shorten

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


def _normalizer_symbols(arch: Architecture, truncation: int) -> dict:
    """``{name: symbol}`` of a generic normalizer's ``c_1 .. c_truncation`` (what ``F_0 .. F_{N-1}`` may use)."""
    out = {}
    for n in arch.normalizers:
        if n.is_generic:
            for m in range(1, truncation + 1):
                out[n.coefficient_symbol(m).name] = n.coefficient_symbol(m)
    return out
