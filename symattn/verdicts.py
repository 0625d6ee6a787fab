"""Verdicts on claims: the results :mod:`symattn.check` and :mod:`symattn.expand` return.

A :class:`CheckResult` is the verdict on a claimed expression, a
:class:`ClaimCheck` the verdict on one claim given as text, and a
:class:`Counterexample` the point where a false claim fails.  They live below
both modules so that ``expand`` (which verifies its own leading
coefficients) and ``check`` (which checks claims against ``expand``) share
them without importing each other.

Examples
--------
>>> from symattn.verdicts import Counterexample
>>> Counterexample(point=(("x", "2"),), entry=(0, 1), claimed="1", computed="3").to_json()
{'point': {'x': '2'}, 'entry': [0, 1], 'claimed': '1', 'computed': '3'}
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ._format import FormattedResult, latex_escape, latex_prose, plain_words
from ._markdown import markdown_note, markdown_text_with_math
from .errors import SymattnError
from .model import entry_latex
from .parsing import to_sympy

__all__ = ["Counterexample", "CheckResult", "ClaimCheck"]


# -- results ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Counterexample:
    """A point where a claim fails: the values of the variables and of both sides.

    Attributes
    ----------
    point : tuple
        ``((name, value), ...)``, values as exact strings.
    entry : tuple or None
        ``(row, col)`` of the first differing entry of a matrix, the 0-based index ``M[row, col]``; every
        text (``str``, Markdown, LaTeX) writes it counted from 1, ``entry (1, 2)``, as the symbols ``x_12``.
    claimed, computed : str
        The two values there, exactly.

    Examples
    --------
    >>> from symattn.check import check_expression
    >>> x = sp.Symbol("x")
    >>> ce = check_expression(sp.Matrix([[x, x**2]]), sp.Matrix([[x, 2*x]])).counterexample
    >>> ce.entry, ce.claimed, ce.computed
    ((0, 1), '1', '-2')
    >>> ce.values()
    {'x': -1}
    """

    point: tuple
    entry: tuple | None
    claimed: str
    computed: str

    def to_json(self) -> dict:
        return {"point": dict(self.point), "entry": None if self.entry is None else list(self.entry),
                "claimed": self.claimed, "computed": self.computed}

    def values(self) -> dict:
        """The point as ``{name: sympy number}``."""
        return {name: to_sympy(value, what="counterexample value") for name, value in self.point}


@dataclass(frozen=True)
class CheckResult(FormattedResult):
    """The verdict on a claimed expression.

    Attributes
    ----------
    verdict : bool or None
        True (proved, or true with probability at least ``1 - bound``), False
        (a counterexample is given), None (undecided: no proof and no bound).
    method : str
        How the verdict was reached.
    bound : float or None
        For True: 0.0 for a symbolic proof, else the Schwartz-Zippel bound on
        the probability that a false claim passed (``(degree / sample_size)^points``).
        For False: 0.0 (a counterexample is certain).
    counterexample : Counterexample or None
    claimed, computed : str
        The two sides (abbreviated when long).
    points : int
        Random points evaluated.
    degree : int or None
        Degree bound used for Schwartz-Zippel.
    sample_size : int or None
        Size of the set each coordinate was drawn from.

    Examples
    --------
    >>> from symattn.check import check_expression
    >>> x = sp.Symbol("x")
    >>> print(check_expression(x**2 - 1, (x - 1)*(x + 1)).to_markdown().splitlines()[0])
    **verdict: true** (proved)
    """

    verdict: bool | None
    method: str
    bound: float | None
    counterexample: Counterexample | None
    claimed: str
    computed: str
    points: int = 0
    degree: int | None = None
    sample_size: int | None = None

    def __bool__(self) -> bool:
        return bool(self.verdict)

    @property
    def proved(self) -> bool:
        return self.verdict is True and self.bound == 0.0

    def _verdict_text(self) -> str:
        if self.verdict is None:
            return "undecided"
        if self.verdict is False:
            return "false"
        return "true (proved)" if self.proved else f"true (error probability <= {self.bound:.1e})"

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "method": self.method,
            "bound": self.bound,
            "counterexample": None if self.counterexample is None else self.counterexample.to_json(),
            "claimed": self.claimed,
            "computed": self.computed,
            "points": self.points,
            "degree": self.degree,
            "sample_size": self.sample_size,
        }

    def to_markdown(self) -> str:
        text = self._verdict_text()
        head, _, rest = text.partition(" ")
        lines = [f"**verdict: {head}**" + (f" {rest}" if rest else ""), "", f"- method: {markdown_note(self.method)}"]
        if self.counterexample is not None:  # formulas in Markdown are LaTeX math (symattn._markdown)
            lines.append("- counterexample: " + markdown_text_with_math(counterexample_latex(self.counterexample)))
        return "\n".join(lines)

    def _latex_body(self) -> str:
        lines = [rf"\textbf{{verdict: {latex_escape(self._verdict_text())}}}\\",
                 rf"method: {latex_prose(self.method)}\\"]
        if self.counterexample is not None:
            lines.append(r"counterexample: " + counterexample_latex(self.counterexample) + r"\\")
        return "\n".join(lines)

    def _latex_math(self) -> str:
        return rf"\text{{verdict: {latex_escape(self._verdict_text())}}}"

    def __str__(self) -> str:
        lines = [f"verdict: {self._verdict_text()}", f"method: {self.method}"]
        if self.counterexample is not None:
            lines.append("counterexample: " + counterexample_text(self.counterexample))
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


@dataclass(frozen=True)
class ClaimCheck:
    """One claimed number against the computed one.

    ``verdict`` is None when the engine could not settle the computed value
    (an unresolved direction, a bank not certified separating): then
    ``computed`` is what was found and ``method`` says what is missing.

    Examples
    --------
    >>> from symattn.check import check_claim
    >>> from symattn.model import Architecture
    >>> check = check_claim(Architecture.uniform(layers=1, width=1, tokens=2), "kernel = 1")
    >>> check.quantity, check.claimed, check.computed, check.verdict
    ('kernel', 1, 1, True)
    >>> print(check)
    kernel = 1: true (computed 1)
    """

    claim: str
    quantity: str
    layer: int | None
    claimed: object
    computed: object
    verdict: bool | None
    method: str
    counterexample: Counterexample | None = None
    #: LaTeX (math mode) of the claim and of the computed value, for formula claims ("" for numbers).
    claim_latex: str = ""
    computed_latex: str = ""

    def to_json(self) -> dict:
        data = {"claim": self.claim, "verdict": self.verdict, "claimed": self.claimed,
                "computed": self.computed, "method": self.method}
        if self.counterexample is not None:  # formula claims (leading(i) = ..., F_n = ...)
            data["counterexample"] = self.counterexample.to_json()
        return data

    def __str__(self) -> str:
        verdict = {True: "true", False: "false", None: "undecided"}[self.verdict]
        if self.verdict is None and self.computed is None:  # nothing computed: the reason, on the claim's line
            return f"{self.claim}: {verdict} ({self.method})"
        text = f"{self.claim}: {verdict} (computed {plain_words(self.computed)})"  # a matrix as its rows
        if self.counterexample is not None:
            text += "\n  counterexample: " + counterexample_text(self.counterexample)
        return text


def counterexample_text(ce: Counterexample, code: str = "") -> str:
    """``entry (1, 2) at x_11 = 1, c_1 = 2: claimed 1/3, computed 2/9`` (``code``: Markdown backticks).

    The entry is counted from 1, row then column, as the package's symbols ``x_12`` are
    (:attr:`Counterexample.entry` is the 0-based index ``M[r, c]``).

    Examples
    --------
    >>> counterexample_text(Counterexample((("x_12", "2"),), (0, 1), "1", "3"))
    'entry (1, 2) at x_12 = 2: claimed value 1, computed value 3'
    """
    where = f"entry ({ce.entry[0] + 1}, {ce.entry[1] + 1}) " if ce.entry is not None else ""
    point = ", ".join(f"{k} = {v}" for k, v in ce.point) or "any point"
    return (f"{where}at {point}: claimed value {code}{ce.claimed}{code}, "
            f"computed value {code}{ce.computed}{code}")


def symbol_latex(name: str) -> str:
    """A package symbol's LaTeX (``Kt1_11`` as ``\\tilde{K}^{(1)}_{11}``), plain names by sympy."""
    return entry_latex(name) or sp.latex(sp.Symbol(name))


def number_latex(text: str) -> str:
    try:
        return sp.latex(to_sympy(text, what="counterexample value"))
    except SymattnError:
        return r"\text{" + latex_escape(text) + "}"


def counterexample_latex(ce: Counterexample) -> str:
    """The counterexample in LaTeX text mode: one ``$name = value$`` per variable, so that lines can break."""
    where = f"entry $({ce.entry[0] + 1}, {ce.entry[1] + 1})$ " if ce.entry is not None else ""  # 1-based, as x_12
    point = ", ".join(f"${symbol_latex(k)} = {number_latex(v)}$" for k, v in ce.point) or "any point"
    return (f"{where}at {point}: claimed value ${number_latex(ce.claimed)}$, "
            f"computed value ${number_latex(ce.computed)}$")


VERDICT_WORDS = {True: "true", False: "false", None: "undecided"}


def markdown_cell(value) -> str:
    """A Markdown table cell: ``|`` escaped (a method's ``F_2 - F_2|Kt_1=0`` split the row), one line."""
    return " ".join(str(value).split()).replace("|", "\\|")
