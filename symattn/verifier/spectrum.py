"""The fields of a spectrum certificate, and what its check proves.

A spectrum certificate (kind ``"spectrum"``) claims exponents
``e_1 <= ... <= e_r`` (as ``{e: multiplicity}``) for the native Jacobian
``J(eps)`` of an architecture along a curve, on a bank, at an integer point:
the derivatives of the outputs in the native parameters (every entry of every
``Q, K, V``) at ``theta_eps``.  Its witness is ``r`` rows and ``r`` columns of
``J(eps)``; :func:`symattn.verifier.verify` recomputes that minor ``M(eps)``
with its own forward pass (the tangent of a native parameter ``W = eps^m B``
is ``1``, not ``eps^m``) and requires its pivot valuations under
least-valuation full pivoting to be exactly the claimed ones.

What that proves.  The entries of ``M`` are power series over ``Z_(p)``
(rationals with denominators prime to ``p``: the checker refuses Taylor
coefficients with ``p`` in a denominator and column sums of ``s(A)`` that
vanish mod ``p``), known exactly mod ``(p, eps^N)``; every pivot valuation is
below ``N``, so ``e_1, ..., e_r`` are the Smith valuations of ``M`` over
``GF(p)[[eps]]``.

1. Over ``GF(p)[[eps]]``, the invariant factors of a submatrix are multiples
   of those of the whole matrix, one by one (interlacing): the bank's
   Jacobian reduced mod ``p`` has rank ``>= r`` and its ``j``-th smallest
   Smith valuation is at most ``e_j``.
2. Over ``Q`` (the real network): a ``k x k`` minor whose reduction mod ``p``
   has valuation ``v`` has valuation at most ``v`` over ``Q`` (its coefficient
   of ``eps^v`` is not divisible by ``p``, hence not 0).  So the ``k``-th
   determinantal divisor of the bank's real Jacobian, the sum of its ``k``
   smallest Smith valuations, is at most ``e_1 + ... + e_k`` for each
   ``k <= r``: the product of its ``k`` largest singular values is at least
   ``c eps^(e_1 + ... + e_k)`` (``c > 0``) for small ``eps``.  In particular its
   rank at small ``eps != 0`` is ``>= r`` and its smallest exponent is at most
   ``e_1``.

Both are upper bounds on exponents and lower bounds on the rank; a larger
bank adds rows and keeps them.  Not proved: that the exponents are exactly
these or that none is smaller, the kernel dimension and that the bank
separates (but see the stronger check below), and over ``Q`` the bound on each exponent one by one: the minor
``[[eps, p], [0, eps]]`` has Smith valuations ``{1: 2}`` mod ``p`` but
``{0: 1, 2: 1}`` over ``Q``.

A stronger check, labelled as such and never part of the claim: the gauge
group (``Q_h -> G Q_h, K_h -> G^-T K_h`` per head, and ``V_i -> H V_i`` with
the next layer's ``Q, K, V -> (.) H^-1`` per hidden width, without a residual
stream) leaves the network's function unchanged (MATH.md section 2), so the
tangents of its orbit at ``theta_eps`` lie in the kernel of the network's
Jacobian for every input.  :func:`gauge_tangents` writes them down at the
certificate's point; ``g`` pivots of their matrix below ``eps^N`` mod ``p``
prove its rank ``>= g`` over ``Q((eps))``, hence the network's Jacobian has
rank ``<= #params - g`` along the curve.  When ``r + g = #params`` the rank
is exactly ``r``, for the bank and for the network, and the kernel is exactly
the gauge orbit's tangent space; otherwise (directions outside the gauge
orbit: lightning attention's scalings, one token's unseen scores) the check
says it is not decided.

This module imports nothing but the standard library, numpy and its own
package: it is part of the independent checker.

Examples
--------
>>> spectrum_claim(7, {0: 4, 1: 3}, 101)
'along its curve, the native Jacobian of this architecture on its bank has rank at least 7, and its decay exponents over GF(101)[[eps]], in increasing order, are at most {0: 4, 1: 3}'
"""

from __future__ import annotations

import json

import numpy as np

from .disagreement import Disagreement

__all__ = ["read_exponents", "spectrum_claim", "conclusion", "gauge_tangents", "gauge_conclusion"]


def spectrum_claim(rank: int, exponents: dict, p: int) -> str:
    """The sentence a spectrum certificate must claim, written here from the checker's own reading.

    Examples
    --------
    >>> spectrum_claim(2, {1: 1, 0: 1}, 7)[-64:]
    'over GF(7)[[eps]], in increasing order, are at most {0: 1, 1: 1}'
    """
    histogram = "{" + ", ".join(f"{e}: {m}" for e, m in sorted(exponents.items())) + "}"
    return (f"along its curve, the native Jacobian of this architecture on its bank has rank at least {rank}, "
            f"and its decay exponents over GF({p})[[eps]], in increasing order, are at most {histogram}")


def read_exponents(document: dict, rank: int, valuations: list, checked: list) -> dict:
    """The claimed ``{exponent: multiplicity}``: integers, adding up to ``rank``, the witness's valuations.

    Also requires ``coordinates`` to be ``"native"``: the spectrum is that of
    the native Jacobian.

    Examples
    --------
    >>> read_exponents({"coordinates": "native", "exponents": {"0": 2, "3": 1}}, 3, [0, 3, 0], [])
    {0: 2, 3: 1}
    >>> read_exponents({"coordinates": "native", "exponents": {"0": 2, "3": 1}}, 3, [0, 3, 3], [])
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: exponents {0: 2, 3: 1} are not the witness's pivot valuations {0: 1, 3: 2}
    """
    for name in ("coordinates", "exponents"):
        if name not in document:
            raise Disagreement(f"the certificate has no field {name!r}")
    coordinates = document["coordinates"]
    if coordinates != "native":
        raise Disagreement(f"coordinates must be 'native' (a spectrum is that of the native Jacobian), got "
                           f"{_short(coordinates)}")
    given = document["exponents"]
    if not isinstance(given, dict):
        raise Disagreement(f"exponents must be an object {{exponent: multiplicity}}, got {_short(given)}")
    exponents = {}
    for key, multiplicity in given.items():
        if not (isinstance(key, str) and key.isdigit() and key.isascii() and len(key) <= 9):
            raise Disagreement(f"exponents: the key {_short(key)} is not an exponent (digits: '0', '1', '5', ...)")
        if isinstance(multiplicity, bool) or not isinstance(multiplicity, int) or not 1 <= multiplicity <= rank:
            raise Disagreement(f"exponents[{key!r}] must be a multiplicity, an integer in 1 .. {rank} (the rank), "
                               f"got {_short(multiplicity)}")
        exponents[int(key)] = multiplicity
    exponents = dict(sorted(exponents.items()))
    if sum(exponents.values()) != rank:
        raise Disagreement(f"the multiplicities of exponents {_text(exponents)} add up to "
                           f"{sum(exponents.values())}, not to the rank {rank}")
    witness: dict = {}
    for v in sorted(valuations):
        witness[v] = witness.get(v, 0) + 1
    if witness != exponents:
        raise Disagreement(f"exponents {_text(exponents)} are not the witness's pivot valuations {_text(witness)}")
    checked.append(f"claimed exponents {_text(exponents)} in the native parameters: the witness's valuations, "
                   f"rank {rank}")
    return exponents


def conclusion(rank: int, found: list, p: int, N: int) -> str:
    """What the agreement proves, in the report's words.

    Examples
    --------
    >>> conclusion(2, [0, 1], 7, 2)[:60]
    'the claimed pivot valuations agree, all below eps^2: over GF'
    """
    found = sorted(found)
    sums = []
    total = 0
    for v in found:
        total += v
        sums.append(total)
    return (f"the claimed pivot valuations agree, all below eps^{N}: over GF({p})[[eps]] the bank's native Jacobian "
            f"has rank >= {rank} and its j-th smallest Smith valuation is at most e_j = {found[:8]}"
            f"{'...' if len(found) > 8 else ''}; over Q its rank near eps = 0 on the curve is >= {rank} and the sum "
            f"of its k smallest exponents is at most e_1 + ... + e_k = {sums[:8]}{'...' if len(sums) > 8 else ''}")


def _short(value, limit: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _text(histogram: dict) -> str:
    return "{" + ", ".join(f"{e}: {m}" for e, m in histogram.items()) + "}"


def gauge_tangents(layers: list, shapes: dict, order: list, point: dict, powers: dict, residual: bool,
                   N: int, p: int) -> np.ndarray:
    """The gauge orbit's tangents at ``theta_eps`` as series: ``(generators, #params, N)`` residues.

    ``layers[i]`` lists the ``(Q, K, V)`` block names of the heads of layer
    ``i + 1``; ``shapes`` maps a block to ``(rows, cols)``; ``order`` is the
    parameter order (blocks, each row-major); ``point`` the integer point and
    ``powers`` the curve's power of ``eps`` on each block.  One generator per
    ``E = e_r e_c^T``: in a head's ``gl(a)``, ``dQ = E Q`` and
    ``dK = -E^T K``; in a hidden width's ``gl(d_i)`` (no residual stream),
    ``dV_i = E V_i`` for each head of layer ``i`` and ``dW = -W E`` for each
    ``Q, K, V`` of layer ``i + 1``.

    Examples
    --------
    >>> shapes = {"Q_1": (1, 1), "K_1": (1, 1), "V_1": (1, 1)}
    >>> point = {"Q_1": [[2]], "K_1": [[3]], "V_1": [[5]]}
    >>> T = gauge_tangents([[("Q_1", "K_1", "V_1")]], shapes, ["Q_1", "K_1", "V_1"], point,
    ...                    {"Q_1": 1, "K_1": 1, "V_1": 0}, False, 3, 101)
    >>> T[0].tolist()                        # (dQ, dK, dV) = (eps 2, -eps 3, 0)
    [[0, 2, 0], [0, 98, 0], [0, 0, 0]]
    """
    offsets, start = {}, 0
    for name in order:
        offsets[name] = start
        start += shapes[name][0] * shapes[name][1]
    residues = {name: np.array(point[name], dtype=object) % p for name in order}
    generators = []

    def tangent():
        generators.append(np.zeros((start, N), dtype=np.int64))
        return generators[-1]

    def add(row, name, r, c, value):
        """Add ``value * eps^power`` (``value`` a residue) to the entry ``(r, c)`` of block ``name``."""
        if powers[name] < N:
            index = offsets[name] + r * shapes[name][1] + c
            row[index, powers[name]] = (row[index, powers[name]] + int(value)) % p

    for heads in layers:
        for Q, K, _ in heads:                         # G in gl(a) of each head
            a, d = shapes[Q]
            for r in range(a):
                for c in range(a):
                    row = tangent()
                    for j in range(d):
                        add(row, Q, r, j, residues[Q][c, j])          # (E Q)[r, :] = Q[c, :]
                        add(row, K, c, j, -residues[K][r, j])         # (-E^T K)[c, :] = -K[r, :]
    if not residual:
        for i in range(len(layers) - 1):             # H in gl(d_i) of each hidden width
            width = shapes[layers[i][0][2]][0]
            for r in range(width):
                for c in range(width):
                    row = tangent()
                    for _, _, V in layers[i]:
                        for j in range(shapes[V][1]):
                            add(row, V, r, j, residues[V][c, j])      # (E V)[r, :] = V[c, :]
                    for head in layers[i + 1]:
                        for W in head:
                            for k in range(shapes[W][0]):
                                add(row, W, k, c, -residues[W][k, r])  # (-W E)[:, c] = -W[:, r]
    return np.array(generators, dtype=np.int64).reshape(len(generators), start, N)


def gauge_conclusion(rank: int, parameters: int, gauge_rank: int, N: int) -> tuple:
    """``(kernel or None, the words)`` of the stronger check, from the witness's rank and the gauge tangents' rank.

    Examples
    --------
    >>> gauge_conclusion(10, 16, 6, 6)[0]
    6
    >>> gauge_conclusion(8, 16, 6, 6)[0] is None
    True
    """
    head = (f"stronger check (gauge kernel): the gauge orbit's tangents at the point have {gauge_rank} pivots below "
            f"eps^{N}, so the network's Jacobian along the curve has rank <= {parameters} - {gauge_rank} = "
            f"{parameters - gauge_rank}")
    if rank + gauge_rank == parameters:
        return gauge_rank, (head + f"; with rank >= {rank} from the witness, the rank of the bank's Jacobian and of "
                            f"the network's is exactly {rank} and the kernel is exactly the gauge orbit's tangent "
                            f"space, of dimension {gauge_rank}")
    return None, (head + f"; the witness proves rank >= {rank}: not decided (the {parameters - gauge_rank - rank} "
                  "directions between are neither in the witness nor gauge)")
