"""The claim language read: numeric claims (``kernel = 6``) and coefficient claims (``F_n = ...``).

:func:`parse_claim` reads a claimed number (the forms of
:data:`symattn.languages.ACCEPTED_CLAIMS`), :func:`parse_coefficient_claim` a
claim about a coefficient of the expansion, and :func:`claim_kind` tells the
kinds apart (a layer's leading coefficient, ``leading(i) = ...``, is read by
:func:`symattn.expand.parse_formula_claim`).  Every claim is measured before
it is matched (:data:`MAX_CLAIM_LENGTH`, ASCII only), and every pattern is
possessive: reading is linear in the length of the claim.

Examples
--------
>>> from symattn.check.reading import claim_kind, parse_claim
>>> parse_claim("multiplicity(1) = 2"), claim_kind("F_1 = 0"), claim_kind("kernel = 6")
(('multiplicity', 1, 2), 'coefficient', 'number')
"""

from __future__ import annotations

import re

from ..errors import SymattnError
from ..languages import ACCEPTED_CLAIMS, FORMULA_CLAIMS
from ..parsing import MAX_CLAIM_LENGTH, check_claim_text

__all__ = ["parse_claim", "is_coefficient_claim", "parse_coefficient_claim", "MAX_CLAIM_LENGTH"]


_ALIASES = {
    "contact_order": "contact_order",
    "contactorder": "contact_order",
    "multiplicity": "multiplicity",
    "identification_order": "identification_order",
    "kernel": "kernel",
    "kernel_dimension": "kernel",
    "dimension": "dimension",
    "rank": "dimension",
    "sign_group_order": "sign_group_order",
}
_WITH_LAYER = {"contact_order", "multiplicity", "identification_order"}


class _ClaimPattern:
    """The claim's regular expression, behind a check of its length and characters.

    Every quantifier is possessive (``*+``, ``?+``): no backtracking, so the
    match is linear in the length (the former lazy groups around ``\\s*``
    took minutes on a claim with 3,000 spaces).  Claims over
    :data:`MAX_CLAIM_LENGTH` characters and non-ASCII characters (``６``
    reads as 6 in ``\\d``) are refused before matching, with a short message.
    """

    def __init__(self, pattern: str):
        self.pattern = re.compile(pattern)

    def match(self, text: str):
        check_claim_text(text, SymattnError)
        return self.pattern.match(text)


_CLAIM = _ClaimPattern(r"^\s*+(?P<name>[A-Za-z][A-Za-z_ \-]*+)(?:\(\s*+(?P<arg>[^()]*+)\))?+\s*+={1,2}+\s*+"
                       r"(?P<value>\S.*+)$")


def accepted_claims_text() -> str:
    return "; ".join(ACCEPTED_CLAIMS + FORMULA_CLAIMS)


def parse_claim(text: str, layers: int | None = None) -> tuple[str, int | None, int]:
    """``(quantity, layer or None, value)`` from a claim string.

    Raises
    ------
    SymattnError
        Naming the accepted forms.

    Examples
    --------
    >>> parse_claim("contact_order(3) = 17")
    ('contact_order', 3, 17)
    >>> parse_claim(" Kernel == 6 ")
    ('kernel', None, 6)
    >>> parse_claim("order = 3")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: unknown quantity 'order' in claim 'order = 3'; accepted: contact_order(i) = n; multiplicity(i) = n; identification_order(i) = n; kernel = n; dimension = n; sign_group_order = n; leading(i) = <matrix formula>; F_n = <matrix formula> (or F_n = 0)
    """
    if not isinstance(text, str):
        raise SymattnError(f"a claim is a string such as 'contact_order(2) = 5', got {text!r}")
    match = _CLAIM.match(text)
    if not match:
        raise SymattnError(f"cannot read the claim {text!r}; accepted: {accepted_claims_text()}")
    raw = match["name"].strip().lower()
    key = re.sub(r"[\s\-]+", "_", raw)
    if key not in _ALIASES:
        raise SymattnError(f"unknown quantity {raw!r} in claim {text!r}; accepted: {accepted_claims_text()}")
    quantity = _ALIASES[key]
    arg = match["arg"]
    if quantity in _WITH_LAYER:
        if arg is None or not re.fullmatch(r"\d+", arg.strip()):
            raise SymattnError(f"{quantity} needs a layer number, as in '{quantity}(2) = 5'; got {text!r}")
        layer = int(arg)
        if layer < 1 or (layers is not None and layer > layers):
            raise SymattnError(f"claim {text!r} names layer {layer}; the architecture has layers 1..{layers}")
    else:
        if arg is not None:
            raise SymattnError(f"{quantity} takes no argument, as in '{quantity} = 6'; got {text!r}")
        layer = None
    value_text = match["value"].strip()
    if not re.fullmatch(r"[+-]?\d+", value_text):
        raise SymattnError(f"the claimed value in {text!r} must be an integer, got {value_text!r}")
    return quantity, layer, int(value_text)



_COEFFICIENT_START = re.compile(r"^\s*+F\s*+[_\[]")
_COEFFICIENT_CLAIM = _ClaimPattern(r"^\s*+F\s*+(?:_\s*+\{\s*+(?P<braced>[^{}=]*+)\}|_\s*+(?P<plain>[^\s=\[\]{}]*+)"
                                   r"|\[\s*+(?P<bracket>[^\[\]=]*+)\])\s*+={1,2}+\s*+(?P<formula>\S.*+)$")


def is_coefficient_claim(text) -> bool:
    """Whether a claim is about a coefficient of the expansion, ``F_n = <matrix formula>`` (also ``F[n]``, ``F_{n}``).

    Examples
    --------
    >>> is_coefficient_claim("F_2 = c_1/t * P*X*H*C_1"), is_coefficient_claim("kernel = 6")
    (True, False)
    """
    return isinstance(text, str) and _COEFFICIENT_START.match(text) is not None


def _max_coefficient() -> int:
    from ..expand import MAX_ORDER

    return MAX_ORDER


def parse_coefficient_claim(claim: str) -> tuple[int, str]:
    """``(n, formula text)`` of a claim ``"F_n = <matrix formula>"`` (``F[n]`` and ``F_{n}`` also read).

    Raises
    ------
    SymattnError
        Naming what a coefficient claim reads like.

    Examples
    --------
    >>> parse_coefficient_claim("F_0 = P*X*J/t"), parse_coefficient_claim("F[2] == 0")
    ((0, 'P*X*J/t'), (2, '0'))
    >>> parse_coefficient_claim("F_x = 0")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: claim 'F_x = 0' names the coefficient F_x; n in F_n must be an integer 0..128 (F_0 is the value at collapse), as in 'F_2 = c_1/t * P*X*H*C_1'
    """
    from ..parsing import shorten

    maximum = _max_coefficient()
    match = _COEFFICIENT_CLAIM.match(claim) if isinstance(claim, str) else None
    if match is None:
        shown = shorten(claim) if isinstance(claim, str) else repr(claim)
        raise SymattnError(f"a coefficient claim reads 'F_n = <matrix formula>' (or 'F_n = 0') with an integer "
                           f"0 <= n <= {maximum}, e.g. 'F_0 = P*X*J/t'; got {shown}; accepted: {accepted_claims_text()}")
    index = next(g for g in (match["braced"], match["plain"], match["bracket"]) if g is not None).strip()
    if not (index.isascii() and index.isdigit()) or len(index) > 6 or int(index) > maximum:
        shown = index if len(index) <= 20 else shorten(index, 20)
        raise SymattnError(f"claim {shorten(claim)} names the coefficient F_{shown}; n in F_n must be an integer "
                           f"0..{maximum} (F_0 is the value at collapse), as in 'F_2 = c_1/t * P*X*H*C_1'")
    return int(index), match["formula"].strip()


def claim_kind(text) -> str:
    from ..expand import is_formula_claim

    if is_formula_claim(text):
        return "leading"
    if is_coefficient_claim(text):
        return "coefficient"
    return "number"
