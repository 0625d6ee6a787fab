r"""The names of the package's symbols: entries of parameter blocks and of the input, as sympy prints them.

Examples
--------
>>> from symattn.model.symbols import EntrySymbol
>>> import sympy as sp
>>> sp.latex(EntrySymbol("Qt1_12", real=True))
'(\\tilde{Q}_{1})_{12}'
"""

from __future__ import annotations

import sympy as sp

__all__ = ["EntrySymbol", "entry_latex", "entry_name", "block_label", "register_block_name", "BLOCK_LETTERS"]


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


#: the block names of the components and their LaTeX letters (a component adds its own: register_block_name)
BLOCK_LETTERS = {"Q": "Q", "K": "K", "V": "V"}


def register_block_name(name: str, latex: str) -> None:
    """Make ``name`` a block name that entry symbols print as ``latex`` (a component's blocks).

    Examples
    --------
    >>> register_block_name("L", "L")  # the toy linear map of Component's example
    >>> entry_latex("L2_11")
    '(L_{2})_{11}'
    """
    if not name.isalpha() or not name[0].isupper() and not name.startswith("b"):
        raise ValueError(f"a block name is letters starting with a capital or 'b', got {name!r}")
    BLOCK_LETTERS[name] = latex


def entry_name(key: tuple, row: int, col: int, marker: str = "") -> str:
    """The name of entry ``(row, col)`` (0-based) of the block ``key``: ``Q1_12``, ``Kt2_11``, ``Q1h2_11``.

    ``marker`` goes after the block's name (``"t"``: the base point of a
    curve); a head ``h`` of a layer with several heads adds ``h<h>``.

    Examples
    --------
    >>> entry_name(("Q", 1), 0, 1), entry_name(("K", 2, 3), 0, 0, "t")
    ('Q1_12', 'Kt2h3_11')
    """
    head = "" if len(key) == 2 else f"h{key[2]}"
    return f"{key[0]}{marker}{key[1]}{head}_{row + 1}{col + 1}"


def block_label(key: tuple) -> str:
    """The name of a block as written in results: ``Q_1`` or, with heads, ``Q_{1,2}``.

    Examples
    --------
    >>> block_label(("K", 1, 2)), block_label(("V", 3))
    ('K_{1,2}', 'V_3')
    """
    return f"{key[0]}_{key[1]}" if len(key) == 2 else f"{key[0]}_{{{key[1]},{key[2]}}}"


def _entry_parts(name: str):
    """``(matrix LaTeX, matrix unicode, index)`` of an entry name (``Kt1_12``, ``Q2h3_11``, ``x_12``), or None."""
    import re

    letters = "|".join(sorted(map(re.escape, BLOCK_LETTERS), key=len, reverse=True))
    match = re.fullmatch(rf"(?P<letter>{letters})(?P<marker>t?)(?P<layer>[0-9]+)(?:h(?P<head>[0-9]+))?"
                         r"_(?P<index>[0-9]+)", name)
    if match is None:
        found = re.fullmatch(r"x_(?P<index>[0-9]+)", name)
        return None if found is None else ("x", "x", found["index"])
    letter, layer, head = match["letter"], match["layer"], match["head"]
    sub = layer if head is None else f"{layer},{head}"
    latex = BLOCK_LETTERS[letter]
    base, hat, superscript = latex.partition("^")  # the tilde over the letter of W^{in}, not its superscript
    tex = rf"\tilde{{{base}}}{hat}{superscript}" if match["marker"] else latex
    text = letter + ("\u0303" if match["marker"] else "")  # combining tilde: K̃
    return rf"({tex}_{{{sub}}})", f"({text}{sub.translate(_SUBSCRIPTS)})", match["index"]


def entry_latex(name: str) -> str | None:
    r"""The LaTeX of the entry symbol ``name``: ``(\tilde{K}_{1})_{12}``, ``(Q_{2,3})_{11}``, ``x_{12}``; else None.

    The entry ``(r, c)`` of the matrix the package writes ``\tilde{K}_{1}``
    (the base point of a curve), ``Q_{1}`` (a native parameter) or
    ``Q_{2,3}`` (head 3 of layer 2), and ``x_{rc}`` of the input ``X``, as
    in the matrix forms and :mod:`symattn.naming`.  Every printer of sympy
    uses it for the package's symbols (:class:`EntrySymbol`); names of other
    symbols give None.

    Examples
    --------
    >>> entry_latex("Kt1_12"), entry_latex("Q2h3_11"), entry_latex("x_12"), entry_latex("c_1")
    ('(\\tilde{K}_{1})_{12}', '(Q_{2,3})_{11}', 'x_{12}', None)
    """
    parts = _entry_parts(name)
    return None if parts is None else f"{parts[0]}_{{{parts[2]}}}"


class EntrySymbol(sp.Symbol):
    r"""A real sympy Symbol for one entry of a parameter block or of the input, printed as the package names it.

    Its ``name`` is the package's name (``Kt1_12``, ``Q1_11``, ``x_12``:
    what ``str``, JSON, fixtures and the parsers read); ``sympy.latex``
    writes it ``(\tilde{K}_{1})_{12}`` (:func:`entry_latex`) and
    ``sympy.pretty`` ``(K̃₁)₁₂`` (the name itself without unicode), inside
    any expression.  Otherwise it is the plain ``Symbol`` of that name and
    assumptions: equal to it, with its hash and its place in sympy's
    canonical order (the class keeps the name ``Symbol``, which sympy's
    ordering and hash read), so results compare, sort, substitute, cache
    and pickle as before.  (One difference remains: sympy's ``subs`` with
    this symbol as the key does not reach a plain ``Symbol`` of the same
    name inside an expression, sympy's ``subs`` comparing types; the
    package's ``subs`` and ``xreplace`` match by name, and sympy's
    ``xreplace`` matches both.)

    Examples
    --------
    >>> import sympy as sp
    >>> k = EntrySymbol("Kt1_12", real=True)
    >>> k == sp.Symbol("Kt1_12", real=True), hash(k) == hash(sp.Symbol("Kt1_12", real=True)), k.name
    (True, True, 'Kt1_12')
    >>> sp.latex(k**2 * EntrySymbol("x_12", real=True)), str(k**2)
    ('(\\tilde{K}_{1})_{12}^{2} x_{12}', 'Kt1_12**2')
    >>> sp.pretty(k, use_unicode=True), sp.pretty(k, use_unicode=False)
    ('(K̃₁)₁₂', 'Kt1_12')
    """

    __slots__ = ()

    def __eq__(self, other):
        # a plain Symbol of the same name and assumptions is this symbol (Basic.__eq__ compares types)
        if type(other) in (sp.Symbol, EntrySymbol):
            return self is other or self._hashable_content() == other._hashable_content()
        return super().__eq__(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = sp.Symbol.__hash__  # the hash of the plain Symbol (it reads the class name, kept below)

    def _eval_subs(self, old, new):
        # sympy's subs matches atoms by type as well (_aresame): a plain Symbol equal to this one is this one
        if type(old) is sp.Symbol and old == self:
            return new
        return super()._eval_subs(old, new)

    def _latex(self, printer):
        given = printer._settings.get("symbol_names") or {}
        if self in given:
            return given[self]
        return entry_latex(self.name) or printer._print_Symbol(self)

    def _pretty(self, printer):
        from sympy.printing.pretty.stringpict import prettyForm

        parts = _entry_parts(self.name)
        if parts is None or not printer._use_unicode:
            return prettyForm(self.name)
        return prettyForm(f"{parts[1]}{parts[2].translate(_SUBSCRIPTS)}")


# sympy orders and hashes by the class name (Basic.compare, class_key, __hash__): as "Symbol" the terms of every
# expression keep their order and hash; pickle finds the class by its qualified name, EntrySymbol
EntrySymbol.__name__ = "Symbol"


