"""The fields of an identification-orders certificate, and what its check proves.

Along a curve through the parameters, ``F(eps) = F_0 + F_1 eps + ...``; in
the curve's coordinates (``Qt, Kt, Vt`` for ``Q = eps Qt``...) the
coefficients ``C_n = dF_n / d(Qt, Kt, Vt)`` are the coefficients of the
Jacobian series.  A block's *identification order* is the least ``n`` with
``C_n`` nonzero on the block's columns (``scores:i``: the entries of ``Q_i``
and ``K_i``, or of one head's; ``values``: every ``V``; with biases
``bias:i``: the bias columns of layer ``i``; with a feed-forward block
``feed-forward:i``: its ``W_in``, ``W_out`` and their biases).  An
identification-orders certificate (kind ``"identification orders"``) claims,
for each block, an order ``n`` and a jet rank ``r``, with two witnesses at its
integer point and bank:

* ``nonzero``: one output entry ``(input, row, token)`` and one column of the
  block whose ``C_n`` entry is nonzero mod ``p``;
* ``witness``: ``r`` rows ``(input, row, token, m)`` with ``m <= n`` and ``r``
  columns of the block whose constant matrix ``[C_m]_(row, column)`` is
  nonsingular mod ``p``.

What that proves.  The entries of ``C_m`` at the point are rationals with
denominators prime to ``p`` (the checker refuses Taylor coefficients with
``p`` in a denominator and column sums of ``s(A)`` that vanish mod ``p``); a
residue that is not 0 is the reduction of a rational that is not 0.  So:

1. ``dF_n / d(block)`` is not identically zero: the block's identification
   order is **at most** ``n``;
2. ``rank [C_0; ...; C_n]`` on the block's columns is ``>= r`` at this point,
   hence at generic points: the jet of order ``n`` determines at least ``r``
   directions of the block.

Not proved: that ``C_m`` vanishes on the block for every ``m < n`` at every
point (that the order is exactly ``n``); the checker recomputes ``C_m`` for
``m < n`` on the whole bank at the certificate's point and fails on a nonzero
entry, which can refute the claim but never prove it.  Nor that ``r`` is the
block's effective dimension (the upper bound is the argument of MATH.md
section 4, not checked here).

This module imports nothing but numpy and its own package: it is part of the
independent checker.

Examples
--------
>>> block_members("scores:2", ["Q_1", "K_1", "V_1", "Q_2", "K_2", "V_2"])
['Q_2', 'K_2']
>>> block_members("values", ["Q_1", "K_1", "V_1", "Q_2", "K_2", "V_2"])
['V_1', 'V_2']
"""

from __future__ import annotations

import re

import numpy as np

from .disagreement import Disagreement
from .pivots import pivot_valuations

__all__ = ["block_members", "read_orders", "orders_claim", "check_orders", "KIND"]

#: The kind of an identification-orders certificate.
KIND = "identification orders"

_SCORES = re.compile(r"scores:([1-9][0-9]*)(?::([1-9][0-9]*))?")
_COMPONENT = re.compile(r"(bias|feed-forward):([1-9][0-9]*)")


def block_members(block: str, labels: list) -> list:
    """The parameter blocks (``Q_1``, ``K_{2,1}``, ``V_2``...) of a named block, by the checker's own rule.

    ``scores:i`` is ``Q_i`` and ``K_i`` (a layer of one head); ``scores:i:h``
    is ``Q_{i,h}`` and ``K_{i,h}``; ``values`` is every ``V``; ``bias:i`` is
    the bias columns ``bQ``, ``bK``, ``bV`` of every head of layer ``i``;
    ``feed-forward:i`` is ``Win_i``, ``Wout_i`` and, with biases, ``bin_i``,
    ``bout_i``.  An empty list when no parameter block matches.

    Examples
    --------
    >>> block_members("scores:1:2", ["Q_{1,1}", "K_{1,1}", "V_{1,1}", "Q_{1,2}", "K_{1,2}", "V_{1,2}"])
    ['Q_{1,2}', 'K_{1,2}']
    >>> block_members("scores:1:2", ["Q_1", "K_1", "V_1"]), block_members("keys", ["Q_1"])
    ([], [])
    >>> labels = ["Q_1", "K_1", "V_1", "bQ_1", "bK_1", "bV_1", "Win_1", "Wout_1", "bin_1", "bout_1"]
    >>> block_members("bias:1", labels), block_members("feed-forward:1", labels)
    (['bQ_1', 'bK_1', 'bV_1'], ['Win_1', 'Wout_1', 'bin_1', 'bout_1'])
    """
    if block == "values":
        return [label for label in labels if label.startswith("V_")]
    match = _COMPONENT.fullmatch(block)
    if match is not None:
        kind, layer = match.groups()
        # bias:i: every head's bias columns (bQ_i or bQ_{i,h}, ...); feed-forward:i: the block's matrices and biases
        names = ("bQ", "bK", "bV") if kind == "bias" else ("Win", "Wout", "bin", "bout")
        return [label for label in labels
                if label.partition("_")[0] in names
                and label.partition("_")[2] in (layer, *(f"{{{layer},{h}}}" for h in _heads(labels, layer)))]
    match = _SCORES.fullmatch(block)
    if match is None:
        return []
    layer, head = match.groups()
    suffix = layer if head is None else f"{{{layer},{head}}}"
    return [label for label in labels if label in (f"Q_{suffix}", f"K_{suffix}")]


def _heads(labels: list, layer: str) -> list:
    """The heads ``h`` of ``layer`` that have a block ``Q_{layer,h}`` (none in a layer of one head)."""
    return [label[len(f"Q_{{{layer},"):-1] for label in labels if label.startswith(f"Q_{{{layer},")]


def _integer(value, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Disagreement(f"{what} must be an integer from {low} to {high}, got {str(value)[:60]!r}")
    return value


def _entry(value, what: str, length: int) -> list:
    if not isinstance(value, list) or len(value) != length:
        raise Disagreement(f"{what} must be a list of {length} integers, got {str(value)[:60]!r}")
    return value


def read_orders(document: dict, parameters: list, bank_size: int, d_l: int, tokens: int, truncation: int,
                checked: list) -> list:
    """Validate the ``orders`` field: a list of ``(block, order, rank, nonzero, rows, columns)``.

    ``nonzero`` is ``((input, row, token), column)``; ``rows`` are ``(input,
    row, token, m)``; columns are parameter names.  Every index in range,
    every column a parameter of the block, ``m <= order < truncation``.

    Examples
    --------
    >>> parameters = ["Q_1[0,0]", "K_1[0,0]", "V_1[0,0]"]
    >>> entry = {"block": "scores:1", "order": 2, "jet_rank": 1,
    ...          "nonzero": {"row": [0, 0, 1], "column": "Q_1[0,0]"},
    ...          "witness": {"rows": [[0, 0, 1, 2]], "columns": ["K_1[0,0]"]}}
    >>> checked = []
    >>> read_orders({"orders": [entry]}, parameters, 3, 1, 2, 4, checked)[0][:3]
    ('scores:1', 2, 1)
    >>> read_orders({"orders": [{**entry, "order": 4}]}, parameters, 3, 1, 2, 4, checked)
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: orders[0].order must be an integer from 0 to 3, got '4'
    """
    orders = document.get("orders")
    if not isinstance(orders, list) or not orders:
        raise Disagreement(f"orders must be a non-empty list of blocks, got {str(orders)[:60]!r}")
    labels = list(dict.fromkeys(name.partition("[")[0] for name in parameters))
    seen, claims = set(), []
    for n, entry in enumerate(orders):
        where = f"orders[{n}]"
        if not isinstance(entry, dict):
            raise Disagreement(f"{where} must be an object, got {str(entry)[:60]!r}")
        block = entry.get("block")
        members = block_members(block, labels) if isinstance(block, str) else []
        if not members:
            raise Disagreement(f"{where}.block {str(block)[:60]!r} names no block of this architecture (e.g. "
                               "scores:1, scores:1:2 with heads, values, bias:1, feed-forward:1)")
        if block in seen:
            raise Disagreement(f"{where}.block {block!r} is listed twice")
        seen.add(block)
        columns_of_block = [name for name in parameters if name.partition("[")[0] in members]
        order = _integer(entry.get("order"), f"{where}.order", 0, truncation - 1)
        rank = _integer(entry.get("jet_rank"), f"{where}.jet_rank", 1, len(columns_of_block))
        nonzero = entry.get("nonzero")
        if not isinstance(nonzero, dict):
            raise Disagreement(f"{where}.nonzero must be an object with a row and a column")
        row = _entry(nonzero.get("row"), f"{where}.nonzero.row", 3)
        row = (_integer(row[0], f"{where}.nonzero.row input", 0, bank_size - 1),
               _integer(row[1], f"{where}.nonzero.row output row", 0, d_l - 1),
               _integer(row[2], f"{where}.nonzero.row token", 0, tokens - 1))
        column = nonzero.get("column")
        if column not in columns_of_block:
            raise Disagreement(f"{where}.nonzero.column {str(column)[:60]!r} is not a parameter of block {block}")
        witness = entry.get("witness")
        if not isinstance(witness, dict):
            raise Disagreement(f"{where}.witness must be an object with rows and columns")
        rows, columns = witness.get("rows"), witness.get("columns")
        if not isinstance(rows, list) or not isinstance(columns, list) or not len(rows) == len(columns) == rank:
            raise Disagreement(f"{where}.witness must have jet_rank = {rank} rows and columns")
        read_rows = []
        for k, r in enumerate(rows):
            r = _entry(r, f"{where}.witness.rows[{k}]", 4)
            read_rows.append((_integer(r[0], f"{where}.witness.rows[{k}] input", 0, bank_size - 1),
                              _integer(r[1], f"{where}.witness.rows[{k}] output row", 0, d_l - 1),
                              _integer(r[2], f"{where}.witness.rows[{k}] token", 0, tokens - 1),
                              _integer(r[3], f"{where}.witness.rows[{k}] coefficient", 0, order)))
        if len(set(read_rows)) != rank:
            raise Disagreement(f"{where}.witness.rows repeats a row")
        for k, name in enumerate(columns):
            if name not in columns_of_block:
                raise Disagreement(f"{where}.witness.columns[{k}] = {str(name)[:60]!r} is not a parameter of "
                                   f"block {block}")
        if len(set(columns)) != rank:
            raise Disagreement(f"{where}.witness.columns repeats a parameter")
        claims.append((block, order, rank, (row, column), read_rows, list(columns), columns_of_block))
    checked.append("orders: " + "; ".join(f"{block} order {order}, jet rank {rank}"
                                          for block, order, rank, *_ in claims)
                   + " (blocks, rows, coefficients and columns in range)")
    return claims


def orders_claim(claims: list) -> str:
    """The claim of an identification-orders certificate in words, from the checker's own reading.

    Examples
    --------
    >>> orders_claim([("scores:1", 2, 3, None, None, None, None), ("values", 0, 4, None, None, None, None)])
    'along its curve, at its point: scores:1 has identification order at most 2 and jet rank at least 3 on its columns; values has identification order at most 0 and jet rank at least 4 on its columns'
    """
    return "along its curve, at its point: " + "; ".join(
        f"{block} has identification order at most {order} and jet rank at least {rank} on its columns"
        for block, order, rank, *_ in claims)


def check_orders(claims: list, entries, bank_size: int, d_l: int, tokens: int, p: int, checked: list) -> None:
    """Recompute each block's witnesses with ``entries(rows, columns)`` (the Jacobian series there).

    ``entries`` returns the ``(len(rows), len(columns), N)`` residues of the
    Jacobian in the curve's coordinates for rows ``(input, row, token)`` and
    parameter names.  Raises :class:`Disagreement` on the first claim that
    does not hold.

    Examples
    --------
    A toy Jacobian: one output, columns ``Q_1[0,0]`` and ``K_1[0,0]``, the
    scores appearing at ``eps^2``:

    >>> import numpy as np
    >>> def entries(rows, columns):
    ...     return np.array([[[0, 0, 5, 1] for _ in columns] for _ in rows])
    >>> claim = [("scores:1", 2, 1, ((0, 0, 0), "Q_1[0,0]"), [(0, 0, 0, 2)], ["K_1[0,0]"],
    ...           ["Q_1[0,0]", "K_1[0,0]"])]
    >>> checked = []
    >>> check_orders(claim, entries, 1, 1, 1, 7, checked)
    >>> checked[0][:70]
    'scores:1: C_2 is nonzero at output (0, 0, 0), column Q_1[0,0] (order <'
    >>> check_orders([("scores:1", 3, *claim[0][2:])], entries, 1, 1, 1, 7, [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: scores:1: C_2 is not 0 on the block at this point (output (0, 0, 0), column Q_1[0,0]): its order is below the claimed 3
    """
    for block, order, rank, (row, column), rows, columns, block_columns in claims:
        # 1. C_order is nonzero on the block: the order is at most `order`
        value = int(entries([row], [column])[0, 0, order]) % p
        if value == 0:
            raise Disagreement(f"{block}: the C_{order} entry at output {row}, column {column} is 0 mod {p}, not "
                               "nonzero: it does not show the order")
        # 2. the constant matrix [C_m](row, column) of the witness is nonsingular mod p
        distinct = list(dict.fromkeys((b, i, j) for b, i, j, _ in rows))
        series = entries(distinct, columns)
        position = {r: n for n, r in enumerate(distinct)}
        matrix = np.array([[series[position[(b, i, j)], k, m] for k in range(len(columns))]
                           for b, i, j, m in rows], dtype=np.int64)
        found = len(pivot_valuations(matrix[:, :, None], p))
        if found < rank:
            raise Disagreement(f"{block}: the {rank} x {rank} witness matrix of [C_0; ...; C_{order}] has rank "
                               f"{found} mod {p}, not {rank}")
        # 3. a consistency check that can refute, never prove: C_m = 0 on the block for m < order, here
        if order:
            everything = [(b, i, j) for b in range(bank_size) for i in range(d_l) for j in range(tokens)]
            below = entries(everything, block_columns)[:, :, :order] % p
            if below.any():
                n, k, m = (int(x) for x in np.argwhere(below)[0])
                raise Disagreement(f"{block}: C_{m} is not 0 on the block at this point (output {everything[n]}, "
                                   f"column {block_columns[k]}): its order is below the claimed {order}")
        checked.append(f"{block}: C_{order} is nonzero at output {tuple(row)}, column {column} (order <= {order}); "
                       f"the witness matrix of [C_0; ...; C_{order}] is nonsingular mod {p} (jet rank >= {rank})"
                       + (f"; {'C_0' if order == 1 else f'C_0 .. C_{order - 1}'} vanish on the block's {len(block_columns)} columns on the whole "
                          "bank at this point (a consistency check, not a proof)" if order else ""))
