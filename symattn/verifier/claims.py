"""Claims of ``symattn check`` decided from certified numbers: what a claims certificate proves.

A claims certificate (kind ``"claims"``) lists claims about one
architecture (``dimension = n``, ``kernel = n``, ``identification_order(i) =
n``, ..., and formula claims) with the verdict symattn's engine gave each,
and in ``parts`` the certificates of the engine's results the numeric claims
were settled against (a dimension, a spectrum, identification orders).  The checker verifies every
part, then decides each claim from the numbers the parts prove, by its own
rules:

* ``dimension = n``: a dimension part proves ``dimension >= r``; ``n < r`` is
  **refuted**, otherwise not decided (the upper bound is not certified).
* ``kernel = n``: a spectrum part proves ``rank >= r``, so ``kernel <= P - r``
  (``P`` parameters): ``n > P - r`` is **refuted**; when the part's gauge check
  decides the kernel ``k`` exactly, ``n = k`` is **proved** and any other
  ``n`` refuted.
* ``identification_order(i) = n``: an orders part proves the order of layer
  ``i``'s scores is at most ``m`` (the least over its heads): ``n > m`` is
  **refuted**, otherwise not decided.
* ``contact_order(i)``, ``multiplicity(i)``, ``sign_group_order``: not decided
  by these certificates.
* formula claims, ``F_n = <formula>`` and ``leading(i) = <formula>``
  (quantities ``coefficient`` and ``leading``): each carries its own point,
  prime and truncation and is decided there (:mod:`symattn.verifier.formulas`):
  **refuted** by a difference, otherwise **consistent at one point**, which
  proves nothing.

The verification fails when a part fails, and when a decision contradicts
the engine's verdict (the engine said true and the checker refutes, or the
reverse): then the engine or the checker is wrong.  A claim the engine
refuted but no part refutes is reported as not proved refuted; that is a
weaker certificate, not a failure.

This module imports nothing but the standard library and its own package:
it is part of the independent checker.

Examples
--------
>>> decide({"quantity": "dimension", "layer": None, "value": 9}, {"dimension": 10})
('refuted', 'the dimension is at least 10 (the dimension certificate)')
>>> decide({"quantity": "kernel", "layer": None, "value": 6}, {"kernel_exact": 6, "parameters": 16})
('proved', 'the kernel is exactly 6 (the spectrum certificate and its gauge check)')
"""

from __future__ import annotations

from .disagreement import Disagreement
from .formulas import QUANTITIES as FORMULA_QUANTITIES, formula_text

__all__ = ["KIND", "QUANTITIES", "read_claims", "claims_claim", "decide", "check_claims"]

#: The kind of a claims certificate.
KIND = "claims"

#: The quantities a claim may name, and whether it names a layer.
QUANTITIES = {"contact_order": True, "multiplicity": True, "identification_order": True, "kernel": False,
              "dimension": False, "sign_group_order": False}

_VERDICTS = {True: "true", False: "false", None: "undecided"}

#: The largest ``n`` of a coefficient ``F_n`` (or leading order) the checker reads.
MAX_ORDER = 10_000


def read_claims(document: dict, layers: int, checked: list, read_formula=None) -> list:
    """Validate the ``claims`` field: a list of ``{quantity, layer, value, engine_verdict}``.

    A formula claim (:mod:`symattn.verifier.formulas`) is ``{quantity,
    layer, order, formula, engine_verdict}`` with ``quantity`` ``"coefficient"``
    (``F_order``, ``layer`` null) or ``"leading"`` (layer ``i``'s leading
    coefficient); ``read_formula(tree, where)`` reads its tree into
    ``(node, shape)`` (without it formula claims are refused), and the entry
    read keeps the tree and the node.  Its evidence (prime, point, values) is
    read by whoever decides it.

    Examples
    --------
    >>> read_claims({"claims": [{"quantity": "kernel", "layer": None, "value": 6, "engine_verdict": True}]}, 2, [])
    [{'quantity': 'kernel', 'layer': None, 'value': 6, 'engine_verdict': True}]
    >>> read_claims({"claims": [{"quantity": "order", "layer": 1, "value": 2, "engine_verdict": True}]}, 2, [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: claims[0].quantity 'order' is not one of contact_order, multiplicity, identification_order, kernel, dimension, sign_group_order, coefficient, leading
    """
    claims = document.get("claims")
    if not isinstance(claims, list) or not claims:
        raise Disagreement(f"claims must be a non-empty list, got {str(claims)[:60]!r}")
    read = []
    for n, entry in enumerate(claims):
        where = f"claims[{n}]"
        if not isinstance(entry, dict):
            raise Disagreement(f"{where} must be an object, got {str(entry)[:60]!r}")
        quantity = entry.get("quantity")
        if not isinstance(quantity, str):
            raise Disagreement(f"{where}.quantity must be a name (text), got a {type(quantity).__name__}")
        if quantity in FORMULA_QUANTITIES:
            read.append(_read_formula_claim(entry, where, layers, read_formula))
            continue
        if quantity not in QUANTITIES:
            raise Disagreement(f"{where}.quantity {str(quantity)[:40]!r} is not one of "
                               + ", ".join((*QUANTITIES, *FORMULA_QUANTITIES)))
        layer = entry.get("layer")
        if QUANTITIES[quantity]:
            if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= layers:
                raise Disagreement(f"{where}.layer must be a layer 1..{layers} for {quantity}, got {layer!r}")
        elif layer is not None:
            raise Disagreement(f"{where}.layer must be null for {quantity}, got {layer!r}")
        value = entry.get("value")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise Disagreement(f"{where}.value must be a nonnegative integer, got {str(value)[:40]!r}")
        verdict = entry.get("engine_verdict", "missing")
        if not (verdict is True or verdict is False or verdict is None):
            raise Disagreement(f"{where}.engine_verdict must be true, false or null, got {str(verdict)[:40]!r}")
        read.append({"quantity": quantity, "layer": layer, "value": value, "engine_verdict": verdict})
    checked.append(f"claims: {len(read)} claims ({', '.join(_text(c) for c in read)}), each with the "
                   "engine's verdict")
    return read


def _read_formula_claim(entry: dict, where: str, layers: int, read_formula) -> dict:
    """A formula claim's own fields (its evidence is read where it is decided)."""
    quantity = entry["quantity"]
    if read_formula is None:
        raise Disagreement(f"{where} is a formula claim; this reading knows numeric claims only")
    layer = entry.get("layer")
    if quantity == "leading":
        if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= layers:
            raise Disagreement(f"{where}.layer must be a layer 1..{layers} for leading, got {layer!r}")
    elif layer is not None:
        raise Disagreement(f"{where}.layer must be null for a coefficient F_n, got {layer!r}")
    order = entry.get("order")
    if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= MAX_ORDER:
        raise Disagreement(f"{where}.order must be an integer 0..{MAX_ORDER}, got {str(order)[:40]!r}")
    tree = entry.get("formula")
    node, _ = read_formula(tree, f"{where}.formula")
    verdict = entry.get("engine_verdict", "missing")
    if not (verdict is True or verdict is False or verdict is None):
        raise Disagreement(f"{where}.engine_verdict must be true, false or null, got {str(verdict)[:40]!r}")
    return {"quantity": quantity, "layer": layer, "order": order, "formula": tree, "node": node,
            "engine_verdict": verdict}


def _text(claim: dict) -> str:
    if claim["quantity"] == "coefficient":
        return f"F_{claim['order']} = {formula_text(claim['formula'])}"
    if claim["quantity"] == "leading":
        return f"leading({claim['layer']}) = {formula_text(claim['formula'])}"
    layer = "" if claim["layer"] is None else f"({claim['layer']})"
    return f"{claim['quantity']}{layer} = {claim['value']}"


def claims_claim(claims: list) -> str:
    """The claim of a claims certificate in words, from the checker's own reading.

    Examples
    --------
    >>> claims_claim([{"quantity": "dimension", "layer": None, "value": 9, "engine_verdict": False}])
    'symattn check found: dimension = 9 false'
    """
    return "symattn check found: " + "; ".join(f"{_text(c)} {_VERDICTS[c['engine_verdict']]}" for c in claims)


def decide(claim: dict, proved: dict) -> tuple:
    """``(decision, why)``: ``"proved"``, ``"refuted"`` or ``"not decided"`` from the numbers the parts prove.

    ``proved`` may hold ``dimension`` (a lower bound), ``rank`` and
    ``parameters`` (a spectrum's rank lower bound), ``kernel_exact`` (the
    spectrum's gauge check), ``orders`` (block -> order upper bound).

    Examples
    --------
    >>> decide({"quantity": "identification_order", "layer": 2, "value": 7}, {"orders": {"scores:2": 6}})
    ('refuted', 'the identification order of layer 2 is at most 6 (the orders certificate)')
    >>> decide({"quantity": "multiplicity", "layer": 1, "value": 3}, {})
    ('not decided', 'no certificate here bounds multiplicity(1)')
    """
    if "decision" in claim:  # a formula claim, decided at its own point (symattn.verifier.formulas)
        return claim["decision"]
    quantity, value, layer = claim["quantity"], claim["value"], claim["layer"]
    if quantity == "dimension" and "dimension" in proved:
        bound = proved["dimension"]
        if value < bound:
            return "refuted", f"the dimension is at least {bound} (the dimension certificate)"
        return "not decided", f"the dimension certificate proves dimension >= {bound} only"
    if quantity == "kernel":
        if proved.get("kernel_exact") is not None:
            exact = proved["kernel_exact"]
            if value == exact:
                return "proved", f"the kernel is exactly {exact} (the spectrum certificate and its gauge check)"
            return "refuted", f"the kernel is exactly {exact} (the spectrum certificate and its gauge check)"
        if "rank" in proved:
            most = proved["parameters"] - proved["rank"]
            if value > most:
                return "refuted", (f"the kernel is at most {most} = {proved['parameters']} - {proved['rank']} "
                                   "(the spectrum certificate's rank)")
            return "not decided", f"the spectrum certificate proves kernel <= {most} only"
    if quantity == "identification_order" and "orders" in proved:
        bounds = [m for block, m in proved["orders"].items()
                  if block == f"scores:{layer}" or block.startswith(f"scores:{layer}:")]
        if bounds:
            most = min(bounds)
            if value > most:
                return "refuted", f"the identification order of layer {layer} is at most {most} (the orders certificate)"
            return "not decided", f"the orders certificate proves order <= {most} only"
    name = _text(claim).split(" = ")[0]
    return "not decided", f"no certificate here bounds {name}"


def check_claims(claims: list, proved: dict, checked: list) -> list:
    """Decide every claim: ``[(claim text, decision, why)]``; a :class:`Disagreement` when a decision contradicts the engine's verdict.

    Examples
    --------
    >>> checked = []
    >>> check_claims([{"quantity": "dimension", "layer": None, "value": 9, "engine_verdict": False}],
    ...              {"dimension": 10}, checked)
    [('dimension = 9', 'refuted', 'the dimension is at least 10 (the dimension certificate)')]
    >>> checked[0]
    'dimension = 9: refuted: the dimension is at least 10 (the dimension certificate); the engine said false'
    >>> check_claims([{"quantity": "dimension", "layer": None, "value": 9, "engine_verdict": True}],
    ...              {"dimension": 10}, [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: dimension = 9: the engine said true, but the certificates refute it: the dimension is at least 10 (the dimension certificate)
    """
    decisions = []
    for claim in claims:
        decision, why = decide(claim, proved)
        decisions.append((_text(claim), decision, why))
        engine = claim["engine_verdict"]
        if decision == "refuted" and engine is True:
            raise Disagreement(f"{_text(claim)}: the engine said true, but the certificates refute it: {why}")
        if decision == "proved" and engine is False:
            raise Disagreement(f"{_text(claim)}: the engine said false, but the certificates prove it: {why}")
        note = ""
        if engine is False and decision != "refuted":
            note = " (its refutation is not proved by these certificates)"
        checked.append(f"{_text(claim)}: {decision}: {why}; the engine said {_VERDICTS[engine]}{note}")
    return decisions
