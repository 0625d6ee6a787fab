"""The fields of an observability certificate, and what its check proves.

An observability certificate (kind ``"observability"``) is about the native
Jacobian at a point of a *collapsed set*: the parameters with ``Q_i = 0``
(score collapse ``scores:i``, or ``Q_{i,h} = 0`` for ``scores:i:h``), ``V_i = 0``
(value collapse ``values:i``, ``values:i:h``), and inputs with identical tokens
``X = x 1^T`` (``identical-tokens``).  The input is scaled, ``X -> eps X``.
The checker reads the events itself and checks that the certificate's
integer point and bank lie on the set: every held block is 0, every bank
input has equal columns.

The blocks are ``scores:i`` (``Q`` and ``K`` of every head of layer ``i``, with
their biases ``bQ``, ``bK``), a feed-forward block's ``feed-forward:i``
(``Win_i``, ``Wout_i``, ``bin_i``, ``bout_i``) and ``values`` (every ``V`` and
``bV``); a collapsed one (``scores:i`` for a collapse of the whole layer,
``values`` for any value collapse) is not listed.  A block's columns *on the
set* are its native parameters less the held ones.  The biases scale with
the input (a bias is a constant feature of every token).  Each listed block
has a status:

* ``"observable"`` or ``"seen"``, with a rank ``r >= 1`` and a witness: ``r``
  rows ``(input, row, token)`` and ``r`` of the block's columns on the set
  whose minor of the native Jacobian series has pivots of the claimed
  valuations, all below ``N``.  Proved: the output sees at least ``r``
  directions of the block at generic points of the set.  ``"observable"``
  when ``r`` equals the block's upper bound.  A score block's is
  ``sum a(2d - a)`` over the heads of layer ``i`` whose ``Q`` is not held
  (``d = d_(i-1)``, ``a = min(a_i, d)``), the dimension of the ``d x d``
  matrices ``K^T Q`` of rank ``<= a``, through which alone the output depends
  on ``Q`` and ``K`` (an argument the checker does not check; it recomputes
  the number; with biases see :func:`score_upper_bound`).  A feed-forward
  block's is the number of its columns.  The values have none.
* ``"unobservable"``, rank 0: the checker recomputes the block's columns on
  the set for the whole bank mod ``(p, eps^N)`` and fails on a nonzero entry.
  A consistency check, which can refute the verdict but never prove it.

This module imports nothing but numpy and its own package: it is part of the
independent checker.

Examples
--------
>>> read_events({"events": ["scores:1", "identical-tokens"]}, [1, 1], [])
[('scores', 1, None), ('identical-tokens', None, None)]
>>> held_blocks([("scores", 1, None), ("values", 2, 1)], ["Q_1", "K_1", "V_1", "Q_{2,1}", "K_{2,1}", "V_{2,1}"])
['Q_1', 'V_{2,1}']
"""

from __future__ import annotations

import re

import numpy as np

from .disagreement import Disagreement
from .pivots import pivot_valuations

__all__ = ["KIND", "read_events", "held_blocks", "check_on_set", "score_upper_bound", "read_blocks",
           "observe_claim", "check_observe"]

#: The kind of an observability certificate.
KIND = "observability"

_EVENT = re.compile(r"(scores|values):([1-9][0-9]*)(?::([1-9][0-9]*))?")


def read_events(document: dict, heads: list, checked: list) -> list:
    """The ``events`` field as ``(kind, layer, head)``: ``scores:I[:H]``, ``values:I[:H]``, ``identical-tokens``.

    ``heads`` lists the heads of each layer; ``head`` is ``None`` for a
    whole layer.  Anything else is refused, naming it.

    Examples
    --------
    >>> read_events({"events": ["values:2:1"]}, [1, 2], [])
    [('values', 2, 1)]
    >>> read_events({"events": ["bias"]}, [1], [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: events[0] = 'bias': this checker reads scores:I, scores:I:H, values:I, values:I:H and identical-tokens
    """
    events = document.get("events")
    if not isinstance(events, list):
        raise Disagreement(f"events must be a list of event names, got {str(events)[:60]!r}")
    out = []
    for n, name in enumerate(events):
        if name == "identical-tokens":
            event = ("identical-tokens", None, None)
        else:
            match = _EVENT.fullmatch(name) if isinstance(name, str) else None
            if match is None:
                raise Disagreement(f"events[{n}] = {str(name)[:60]!r}: this checker reads scores:I, scores:I:H, "
                                   "values:I, values:I:H and identical-tokens")
            kind, layer, head = match.group(1), int(match.group(2)), match.group(3)
            if layer > len(heads):
                raise Disagreement(f"events[{n}] = {name!r}: the architecture has layers 1..{len(heads)}")
            if head is not None and not (heads[layer - 1] > 1 and 1 <= int(head) <= heads[layer - 1]):
                raise Disagreement(f"events[{n}] = {name!r}: layer {layer} has {heads[layer - 1]} head(s); "
                                   "name a head only in a layer with several")
            event = (kind, layer, None if head is None else int(head))
        if event in out:
            raise Disagreement(f"events[{n}] = {name!r} is listed twice")
        out.append(event)
    checked.append("events: " + (", ".join(events) if events else "none (a generic point)"))
    return out


def _suffixes(layer: int, head, labels: list) -> list:
    """The block suffixes of ``layer`` (``1``, or ``{1,h}`` per head), one head's when ``head`` is given."""
    if f"Q_{layer}" in labels:
        return [f"{layer}"]
    heads = sorted(int(label[label.index(",") + 1:-1]) for label in labels if label.startswith(f"Q_{{{layer},"))
    return [f"{{{layer},{h}}}" for h in heads if head is None or h == head]


def held_blocks(events: list, labels: list) -> list:
    """The parameter blocks the events hold at 0: ``Q`` of a score collapse, ``V`` of a value collapse.

    Examples
    --------
    >>> held_blocks([("values", 1, None)], ["Q_{1,1}", "K_{1,1}", "V_{1,1}", "Q_{1,2}", "K_{1,2}", "V_{1,2}"])
    ['V_{1,1}', 'V_{1,2}']
    """
    held = set()
    for kind, layer, head in events:
        if kind in ("scores", "values"):
            name = "Q" if kind == "scores" else "V"
            held |= {f"{name}_{suffix}" for suffix in _suffixes(layer, head, labels)}
    return [label for label in labels if label in held]


def check_on_set(events: list, point: dict, bank: list, held: list, checked: list) -> None:
    """The point and bank lie on the set: every held block is 0; with identical tokens every input is ``x 1^T``.

    Examples
    --------
    >>> check_on_set([("scores", 1, None)], {"Q_1": [[0, 0]]}, [[[1, 1], [2, 2]]], ["Q_1"], [])
    >>> check_on_set([("identical-tokens", None, None)], {}, [[[1, 2], [2, 2]]], [], [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: bank[0] row 0 is [1, 2]: its tokens are not identical, so the input is not on the set identical-tokens
    """
    for name in held:
        nonzero = [(r, c) for r, row in enumerate(point[name]) for c, v in enumerate(row) if v != 0]
        if nonzero:
            r, c = nonzero[0]
            raise Disagreement(f"point[{name!r}][{r}][{c}] = {point[name][r][c]}, not 0: the point is not on the "
                               f"set, where {name} = 0")
    if any(kind == "identical-tokens" for kind, _, _ in events):
        for b, X in enumerate(bank):
            for r, row in enumerate(X):
                if any(v != row[0] for v in row):
                    raise Disagreement(f"bank[{b}] row {r} is {row[:6]}: its tokens are not identical, so the "
                                       "input is not on the set identical-tokens")
    checked.append("the point is on the set: " + (", ".join(f"{name} = 0" for name in held) or "no block held")
                   + ("; every bank input is x 1^T" if any(k == "identical-tokens" for k, _, _ in events) else ""))


def score_upper_bound(d: int, a: int, heads_left: int, heads_held: int = 0, bias: bool = False,
                      shift_invariant: bool = False) -> int:
    """The dimension of the matrices through which alone the output depends on a layer's scores, summed over heads.

    A head's score of key ``x_j`` and query ``x_k`` is ``[x_j; 1]^T M [x_k; 1]``:

    * without biases ``M = K^T Q``, a ``d x d`` matrix of rank ``<= a``
      (0 when ``Q`` is held at 0);
    * with biases ``M = [K b_K]^T [Q b_Q]``, ``(d + 1) x (d + 1)`` of rank
      ``<= a``; with ``Q`` held only its last column ``[K b_K]^T b_Q`` is left;
    * with ``shift_invariant`` (softmax: its weights do not change when every
      score of one query moves by the same number) the last row of ``M``,
      which adds ``b_K^T (Q x_k + b_Q)`` to every score of query ``k``, is
      not seen.

    The ``rows x cols`` matrices of rank ``<= m = min(a, rows, cols)`` have
    dimension ``m (rows + cols - m)``.  An argument (MATH.md section 2), not
    checked; the checker computes the number.

    Examples
    --------
    >>> score_upper_bound(2, 1, 1), score_upper_bound(2, 3, 2)
    (3, 8)
    >>> score_upper_bound(2, 1, 1, bias=True), score_upper_bound(2, 1, 1, bias=True, shift_invariant=True)
    (5, 4)
    >>> score_upper_bound(2, 1, 0, 1), score_upper_bound(2, 1, 0, 1, bias=True, shift_invariant=True)
    (0, 2)
    """
    rows = d + 1 if bias and not shift_invariant else d
    total = 0
    for heads, cols in ((heads_left, d + 1 if bias else d), (heads_held, 1 if bias else 0)):
        m = min(a, rows, cols)
        total += heads * m * (rows + cols - m)
    return total


def _block_columns(block: str, labels: list, held: list, parameters: list, layers: int):
    """The columns of ``block`` on the set and the parameter blocks not held (``[], []`` for no such block).

    ``scores:i``: ``Q``, ``K`` (and the biases ``bQ``, ``bK``) of every head
    of layer ``i``; ``values``: every ``V`` (and ``bV``); ``feed-forward:i``:
    ``Win_i``, ``Wout_i`` (and ``bin_i``, ``bout_i``).
    """
    if block == "values":
        members = [label for label in labels if label.partition("_")[0] in ("V", "bV")]
    else:
        match = re.fullmatch(r"(scores|feed-forward):([1-9][0-9]*)", block)
        if match is None or int(match.group(2)) > layers:
            return [], []
        layer = int(match.group(2))
        if match.group(1) == "scores":
            members = [f"{name}_{s}" for s in _suffixes(layer, None, labels) for name in ("Q", "K", "bQ", "bK")]
        else:
            members = [f"{name}_{layer}" for name in ("Win", "Wout", "bin", "bout")]
    kept = [label for label in members if label in labels and label not in held]
    return [name for name in parameters if name.partition("[")[0] in kept], kept


def read_blocks(document: dict, events: list, parameters: list, widths: list, score_ranks: list,
                bank_size: int, tokens: int, truncation: int, checked: list, shift_invariant: list | None = None) -> list:
    """Validate the ``blocks`` field: ``(block, status, rank, upper bound, rows, columns, valuations)`` each.

    Every block that is not collapsed is listed once (``scores:i``, a
    feed-forward block ``feed-forward:i``, ``values``); the checker computes
    each block's columns on the set and its upper bound by its own rule
    (:func:`score_upper_bound` for the scores, with biases when the
    parameters have them and ``shift_invariant[i - 1]`` for a softmax layer;
    a feed-forward block's columns on the set; none for the values), and the
    status from them (``observable``: the rank is the upper bound).  For
    ``unobservable`` the rows are ``None`` and the columns are every column
    of the block on the set.

    Examples
    --------
    >>> parameters = ["Q_1[0,0]", "K_1[0,0]", "V_1[0,0]"]
    >>> entry = {"block": "values", "status": "seen", "rank": 1, "upper_bound": None,
    ...          "witness": {"rows": [[0, 0, 1]], "columns": ["V_1[0,0]"], "valuations": [1]}}
    >>> read_blocks({"blocks": [entry]}, [("scores", 1, None)], parameters, [1, 1], [1], 2, 2, 4, [])[0][:4]
    ('values', 'seen', 1, None)
    >>> read_blocks({"blocks": [{**entry, "status": "observable"}]}, [("scores", 1, None)], parameters, [1, 1],
    ...             [1], 2, 2, 4, [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: blocks[0] (values): status 'observable', but by its rank 1 and upper bound None it is 'seen'
    """
    labels = list(dict.fromkeys(name.partition("[")[0] for name in parameters))
    held = held_blocks(events, labels)
    layers = len(widths) - 1
    collapsed = {f"scores:{layer}" for kind, layer, head in events if kind == "scores" and head is None}
    if any(kind == "values" for kind, _, _ in events):
        collapsed.add("values")
    feed_forward = [f"feed-forward:{i}" for i in range(1, layers + 1) if f"Win_{i}" in labels]
    expected = [b for b in [f"scores:{i}" for i in range(1, layers + 1)] + feed_forward + ["values"]
                if b not in collapsed]
    entries = document.get("blocks")
    if not isinstance(entries, list):
        raise Disagreement(f"blocks must be a list, got {str(entries)[:60]!r}")
    given = [entry.get("block") if isinstance(entry, dict) else None for entry in entries]
    if sorted(map(str, given)) != sorted(expected):
        raise Disagreement(f"blocks must list each block that is not collapsed once, {expected}, got {given}")
    claims = []
    for n, entry in enumerate(entries):
        block = entry["block"]
        where = f"blocks[{n}] ({block})"
        columns_on_set, kept = _block_columns(block, labels, held, parameters, layers)
        rank = entry.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank <= len(columns_on_set):
            raise Disagreement(f"{where}.rank must be an integer from 0 to {len(columns_on_set)} (its columns on "
                               f"the set), got {str(rank)[:60]!r}")
        bound = None
        if block.startswith("scores:"):
            layer = int(block.split(":")[1])
            queries = [f"Q_{suffix}" for suffix in _suffixes(layer, None, labels)]
            left = sum(1 for name in queries if name in kept)
            bound = score_upper_bound(widths[layer - 1], score_ranks[layer - 1], left, len(queries) - left,
                                      any(name.startswith("bQ_") for name in labels),
                                      bool(shift_invariant and shift_invariant[layer - 1]))
        elif block.startswith("feed-forward:"):
            bound = len(columns_on_set)  # every direction of the block on the set
        status = "unobservable" if rank == 0 else "observable" if rank == bound else "seen"
        if entry.get("status") != status:
            raise Disagreement(f"{where}: status {str(entry.get('status'))[:40]!r}, but by its rank {rank} and upper "
                               f"bound {bound} it is {status!r}")
        if rank == 0:
            if entry.get("columns") != columns_on_set:
                raise Disagreement(f"{where}.columns must be the block's {len(columns_on_set)} columns on the set, "
                                   f"{columns_on_set[:4]}...")
            claims.append((block, status, 0, bound, None, columns_on_set, []))
            continue
        if entry.get("upper_bound") != bound:
            raise Disagreement(f"{where}.upper_bound is {str(entry.get('upper_bound'))[:20]}; the checker's is {bound}")
        witness = entry.get("witness")
        if not isinstance(witness, dict):
            raise Disagreement(f"{where}.witness must be an object with rows, columns and valuations")
        rows, columns, found = witness.get("rows"), witness.get("columns"), witness.get("valuations")
        if not all(isinstance(x, list) and len(x) == rank for x in (rows, columns, found)):
            raise Disagreement(f"{where}.witness must have rank = {rank} rows, columns and valuations")
        read_rows = []
        for k, row in enumerate(rows):
            limits = (bank_size, widths[-1], tokens)
            if not (isinstance(row, list) and len(row) == 3 and all(
                    not isinstance(v, bool) and isinstance(v, int) and 0 <= v < top for v, top in zip(row, limits))):
                raise Disagreement(f"{where}.witness.rows[{k}] = {str(row)[:40]} is not (input < {bank_size}, "
                                   f"output row < {widths[-1]}, token < {tokens})")
            read_rows.append(tuple(row))
        if len(set(read_rows)) != rank:
            raise Disagreement(f"{where}.witness.rows repeats a row")
        for k, name in enumerate(columns):
            if name not in columns_on_set:
                raise Disagreement(f"{where}.witness.columns[{k}] = {str(name)[:60]!r} is not a column of {block} "
                                   "on the set")
        if len(set(columns)) != rank:
            raise Disagreement(f"{where}.witness.columns repeats a parameter")
        for k, v in enumerate(found):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < truncation:
                raise Disagreement(f"{where}.witness.valuations[{k}] = {str(v)[:20]} is not below the truncation "
                                   f"eps^{truncation}")
        claims.append((block, status, rank, bound, read_rows, list(columns), list(found)))
    checked.append("blocks: " + "; ".join(f"{block} {status} rank {rank}" + (f" (upper bound {bound})" if bound
                                                                             is not None else "")
                                          for block, status, rank, bound, *_ in claims)
                   + " (columns on the set, rows and valuations in range)")
    return claims


def observe_claim(events: list, claims: list) -> str:
    """The claim of an observability certificate in words, from the checker's own reading.

    Examples
    --------
    >>> observe_claim(["values:1"], [("scores:1", "unobservable", 0, 3, None, [], [])])
    'on the set values:1, at its point, along X -> eps X: scores:1 shows no direction on the bank (unobservable, a consistency check only)'
    """
    words = {"observable": "is observable: rank {rank}, its upper bound, on its columns",
             "seen": "has rank at least {rank} on its columns",
             "unobservable": "shows no direction on the bank (unobservable, a consistency check only)"}
    return (f"on the set {', '.join(events) or '(generic)'}, at its point, along X -> eps X: "
            + "; ".join(f"{block} " + words[status].format(rank=rank) for block, status, rank, *_ in claims))


def check_observe(claims: list, entries, bank_size: int, d_l: int, tokens: int, p: int, N: int,
                  checked: list) -> None:
    """Recompute each block's witness minor, or its columns on the whole bank, with ``entries(rows, columns)``.

    ``entries`` returns the ``(len(rows), len(columns), N)`` residues of the
    native Jacobian series.  Raises :class:`Disagreement` on the first claim
    that does not hold.

    Examples
    --------
    >>> import numpy as np
    >>> def entries(rows, columns):                  # one output entry, eps on V_1[0,0], nothing on Q_1[0,0]
    ...     return np.array([[[0, 1] if name.startswith("V") else [0, 0] for name in columns] for _ in rows])
    >>> claims = [("scores:1", "unobservable", 0, 1, None, ["Q_1[0,0]"], []),
    ...           ("values", "seen", 1, None, [(0, 0, 0)], ["V_1[0,0]"], [1])]
    >>> check_observe(claims, entries, 1, 1, 1, 7, 2, [])
    >>> check_observe([("values", "seen", 1, None, [(0, 0, 0)], ["V_1[0,0]"], [0])], entries, 1, 1, 1, 7, 2, [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: values: the witness minor has pivot valuations [1], the certificate claims [0]
    """
    for block, status, rank, bound, rows, columns, valuations in claims:
        if rank == 0:
            everything = [(b, i, j) for b in range(bank_size) for i in range(d_l) for j in range(tokens)]
            values = entries(everything, columns) % p if columns else np.zeros((0, 0, N), dtype=np.int64)
            if values.any():
                n, k, m = (int(x) for x in np.argwhere(values)[0])
                raise Disagreement(f"{block}: the derivative of output {everything[n]} in {columns[k]} has a "
                                   f"nonzero eps^{m} coefficient mod {p}: the block is seen on the set")
            checked.append(f"{block}: its {len(columns)} columns on the set vanish mod ({p}, eps^{N}) on the whole "
                           "bank at this point (a consistency check of 'unobservable', not a proof)")
            continue
        found = pivot_valuations(entries(rows, columns), p)
        if sorted(found) != sorted(valuations):
            raise Disagreement(f"{block}: the witness minor has pivot valuations {sorted(found)}, the certificate "
                               f"claims {sorted(valuations)}")
        if len(found) < rank:
            raise Disagreement(f"{block}: the witness minor has only {len(found)} pivots below eps^{N}, not {rank}")
        checked.append(f"{block}: the {rank} x {rank} witness minor of the native Jacobian has pivot valuations "
                       f"{sorted(found)} below eps^{N}: rank >= {rank} on the set"
                       + (f", its upper bound: observable" if status == "observable" else ""))
