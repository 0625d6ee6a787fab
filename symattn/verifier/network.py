"""The network's forward pass over ``GF(p)[eps]/(eps^N)`` with first-order jets, written out plainly.

For each input ``X`` (``d_0 x t``, one token per column; the inputs are
stacked on a leading axis and computed together) and layer ``i = 1..l``:

* every head ``h`` has scores ``A = X^T K^T Q X`` (``t x t``; entry ``(j, k)``
  is ``<K x_j, Q x_k>``, key ``j``, query ``k``),
* weights ``S(A)_jk = s(A_jk) / sum_j' s(A_j'k)``: each column (query) is
  normalized over its keys; with the causal mask only keys ``j <= k`` count and
  ``S(A)_jk = 0`` for ``j > k``; lightning attention uses ``S(A) = A`` (masked),
* ``X_i = sum_h V_h X_{i-1} S(A_h)``, plus ``X_{i-1}`` with a residual stream.

``s`` is known by its Taylor coefficients ``c_n`` of ``s(x)/s(0)`` (``S`` does
not change when ``s`` is scaled).  For a polynomial ``s`` they are all of them;
otherwise ``s(A) = sum_{n <= N} c_n A^n`` is exact mod ``eps^N`` only when
``A = 0`` at ``eps = 0`` (then ``A^n`` and ``n A^(n-1) dA`` vanish mod
``eps^N`` for ``n > N``), which is checked for every score.

One exception, a certificate's ``integer_scores`` at layer 1 with ``s = exp``:
there every score ``A`` is an exact integer ``m`` at ``eps = 0``, and
``exp(A) = e^m exp(A - m)`` with ``A - m`` vanishing at ``eps = 0``
(:func:`exponential_at_integers`); ``e`` is sent to the certificate's residue
``base`` (``e`` is transcendental, so ``Z[e, 1/e] -> GF(p)``, ``e -> base`` is a
ring homomorphism).

This module imports nothing but numpy: it is part of the independent checker.
"""

from __future__ import annotations

import math

import numpy as np

from .arithmetic import both_widened, convolve, invert, matmul, multiply, times_series, transpose

__all__ = ["ScoresDoNotVanish", "forward", "polynomials_of_series", "entrywise", "feed_forward", "integer_scores",
           "exponential_at_integers"]


class ScoresDoNotVanish(ValueError):
    """A score is nonzero at ``eps = 0`` while ``s`` is given by finitely many Taylor coefficients.

    Examples
    --------
    >>> str(ScoresDoNotVanish("layer 1"))
    'layer 1'
    """


def _constant(value: int, like: np.ndarray, p: int) -> np.ndarray:
    """The constant ``value`` as a jet shaped like ``like`` (value part ``value``, no eps, no tangents)."""
    out = np.zeros_like(like)
    out[..., 0, 0] = value % p
    return out


def polynomials_of_series(coefficient_lists: list, a: np.ndarray, p: int) -> list:
    """``sum_n c_n a^n`` for each list ``[c_0, c_1, ...]``, ``a`` a series ``(..., N)``, by baby and giant steps.

    Horner's rule would take one series product per coefficient.  With
    ``m ~ sqrt(len)``, the baby steps ``a^0 .. a^(m-1)`` are computed once;
    each block of ``m`` coefficients is a combination of them (products by
    numbers, no series product), and Horner's rule runs over the blocks with
    the giant step ``a^m``: about ``2 sqrt(len)`` series products in all
    (Paterson and Stockmeyer), the giant steps of every list in one call.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([0, 1, 0, 0, 0])                       # eps
    >>> [r.tolist() for r in polynomials_of_series([[1, 2, 3, 4, 5, 6], [7]], a, 101)]
    [[1, 2, 3, 4, 5], [7, 0, 0, 0, 0]]
    """
    N = a.shape[-1]
    longest = max(len(c) for c in coefficient_lists)
    m = max(1, math.isqrt(longest - 1) + 1)                   # m * m >= longest
    one = np.zeros_like(a)
    one[..., 0] = 1
    powers = [one]
    for _ in range(1, m):
        powers.append(convolve(powers[-1], a, p))
    giant = convolve(powers[-1], a, p) if longest > m else None    # a^m

    def block(coefficients, j):
        """``sum_i c_(j m + i) a^i``: products by numbers only (each below p^2, the sums reduced as they go)."""
        out = np.zeros_like(a)
        for i, c in enumerate(coefficients[j * m:(j + 1) * m]):
            if c % p:
                out = (out + (c % p) * powers[i]) % p
        return out

    blocks = -(-longest // m)
    results = np.stack([block(c, blocks - 1) for c in coefficient_lists])
    for j in range(blocks - 2, -1, -1):
        # Horner over the blocks: result a^m + block j, every list in one product
        results = convolve(results, giant, p)
        results = (results + np.stack([block(c, j) for c in coefficient_lists])) % p
    return list(results)


def entrywise(A: np.ndarray, taylor: list, polynomial: bool, p: int, what: str) -> np.ndarray:
    """``s(A)`` entrywise for a jet ``A`` ``(..., J, N)``, ``s`` by its Taylor residues ``c_0, c_1, ...``.

    For a ``polynomial`` ``s`` they are all of them; otherwise ``sum_n c_n A^n``
    is ``s(A)`` mod ``eps^N`` only when every entry vanishes at ``eps = 0``
    (checked: :class:`ScoresDoNotVanish` names ``what``).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.zeros((1, 1, 3), dtype=np.int64); A[0, 0, 1] = 1          # the series eps, no tangent
    >>> entrywise(A, [0, 1, 0, 100], False, 101, "x")[0, 0].tolist()      # x - x^3/6 ... mod 101, to eps^2
    [0, 1, 0]
    """
    N = A.shape[-1]
    if not polynomial:
        # the Taylor series sum_n c_n A^n is s(A) mod eps^N only when every entry vanishes at eps = 0
        if (A[..., 0, 0] != 0).any():
            raise ScoresDoNotVanish(f"{what} is nonzero at eps = 0, so s(A) is not determined by the "
                                    f"Taylor coefficients of s at 0 below eps^{N}")
        # with every entry of valuation >= v >= 1, the jet A^n = a^n + n a^(n-1) dA vanishes mod eps^N
        # once (n - 1) v >= N: the terms n <= 1 + (N - 1) // v are enough
        nonzero = (A[..., 0, :] != 0)
        v = int(np.where(nonzero.any(axis=-1), nonzero.argmax(axis=-1), N).min())
        taylor = taylor[:2 + (N - 1) // v]
    # s(A) entrywise, as a jet: s(a + dA) = s(a) + s'(a) dA (first order), s(a) = sum_n c_n a^n and
    # s'(a) = sum_n (n + 1) c_(n+1) a^n evaluated on the values alone
    a = A[..., 0, :]
    derivative_coefficients = [(n + 1) * c % p for n, c in enumerate(taylor[1:])] or [0]
    value, derivative = polynomials_of_series([taylor, derivative_coefficients], a, p)
    s = np.zeros_like(A)
    s[..., 0, :] = value
    s[..., 1:, :] = times_series(A[..., 1:, :], derivative, p)                 # s'(a) dA
    return s


def integer_scores(Q: list, K: list, bank: list) -> np.ndarray:
    """The exact scores ``m_jk = <K x_j, Q x_k>`` of every input, as Python integers: an object array ``(inputs, t, t)``.

    ``Q``, ``K`` (``a x d``) and every input ``X`` (``d x t``) are lists of
    integers; nothing is reduced mod a prime.

    Examples
    --------
    >>> integer_scores([[1, 2]], [[-1, 0]], [[[1, 0], [3, 1]]]).tolist()   # K X = [-1, 0], Q X = [7, 2]
    [[[-7, -2], [0, 0]]]
    """
    Q, K = np.array(Q, dtype=object), np.array(K, dtype=object)
    X = np.array(bank, dtype=object)                                        # (inputs, d, t)
    KX, QX = np.matmul(K, X), np.matmul(Q, X)                               # (inputs, a, t), exact integers
    return np.matmul(KX.transpose(0, 2, 1), QX)                             # m_jk = sum_a (K x_j)_a (Q x_k)_a


def exponential_at_integers(A: np.ndarray, scores: np.ndarray, base: int, taylor: list, p: int, where: str,
                            inputs: list) -> np.ndarray:
    """``s(A) = e^m s(A - m)`` entrywise for ``s(x)/s(0) = exp(x)``, ``m`` the exact integer scores, ``e`` sent to ``base``.

    ``A`` is a ``(inputs, t, t, J, N)`` jet whose value at ``eps = 0`` must be
    ``m`` (``scores``, Python integers ``(inputs, t, t)``): then ``A - m``
    vanishes at ``eps = 0``, its exponential is exact from the Taylor
    coefficients ``taylor`` of ``exp`` (:func:`entrywise`), and
    ``exp(A) = exp(m) exp(A - m) = e^m exp(A - m)``, with ``e^m`` sent to
    ``base^m`` mod ``p`` (the jet's tangent ``exp'(A) dA = e^m exp'(A - m) dA``
    scales alike).  A score whose value at ``eps = 0`` is not ``m`` mod ``p`` is
    :class:`ScoresDoNotVanish`, naming the entry (``inputs`` holds the bank
    index of each input).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.zeros((1, 1, 1, 1, 2), dtype=np.int64); A[0, 0, 0, 0] = [2, 1]        # the score 2 + eps
    >>> exp = [1, 1, 51]                                                            # 1, 1, 1/2 mod 101
    >>> m = np.array([[[2]]], dtype=object)
    >>> exponential_at_integers(A, m, 3, exp, 101, "layer 1", [0])[0, 0, 0, 0].tolist()   # e^2 (1 + eps), e -> 3
    [9, 9]
    """
    # the residues of the exact integer scores m (Python integers of either sign)
    residues = np.array([[[int(m) % p for m in row] for row in matrix] for matrix in scores], dtype=np.int64)
    # A - m: the value at eps = 0 less m, which must leave 0 there
    shifted = A.copy()
    shifted[..., 0, 0] = (A[..., 0, 0] - residues) % p
    wrong = np.argwhere(shifted[..., 0, 0] != 0)
    if len(wrong):
        b, j, k = wrong[0]
        raise ScoresDoNotVanish(f"{where}: the score of bank input {inputs[b]}, key {j}, query {k} is "
                                f"{int(A[b, j, k, 0, 0])} mod {p} at eps = 0, not its exact integer score "
                                f"{scores[b, j, k]}: A - m does not vanish at eps = 0")
    # e^m -> base^m mod p (m < 0: a power of base^-1; base is a unit mod p)
    factors = np.array([[[pow(base, int(m), p) for m in row] for row in matrix] for matrix in scores],
                       dtype=np.int64)
    # exp(A) = e^m exp(A - m), value and tangent alike; exp(A - m) from the Taylor coefficients
    return entrywise(shifted, taylor, False, p, where) * factors[..., None, None] % p


def _plus_bias(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``M + b 1^T``: the bias column ``b`` (``(rows, 1, J, N)``) added to every token (column) of ``M``."""
    M, b = both_widened(M, b)
    return M + b      # broadcasting over the tokens; reduced mod p by the caller


def normalizer_weights(A: np.ndarray, taylor: list, polynomial: bool, causal: bool, p: int,
                       where: str, at_integers: tuple | None = None) -> np.ndarray:
    """``S(A)``: ``s(A_jk) / sum_{j'} s(A_j'k)`` (keys ``j' <= k`` under a causal mask), ``A`` a ``(..., t, t, J, N)`` jet.

    ``taylor`` holds the residues mod ``p`` of ``c_0 = 1, c_1, ...``.  With
    ``at_integers = (scores, base, inputs)`` (``s = exp`` at layer 1 of an
    integer-score certificate) ``s(A) = e^m s(A - m)``, :func:`exponential_at_integers`.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.zeros((2, 2, 1, 2), dtype=np.int64); A[0, 0, 0, 1] = 1      # scores [[eps, 0], [0, 0]]
    >>> S = normalizer_weights(A, [1, 1, 51], False, False, 101, "test")   # softmax: 1 + x + x^2/2 mod 101
    >>> S[:, 0, 0, :].tolist()                    # (1 + eps, 1) / (2 + eps) = 1/2 + eps/4, 1/2 - eps/4
    [[51, 76], [51, 25]]
    """
    t = A.shape[-3]
    if at_integers is None:
        s = entrywise(A, taylor, polynomial, p, f"{where}: a score")
    else:   # exp(A) = e^m exp(A - m) at the exact integer scores m, e sent to base
        scores, base, inputs = at_integers
        s = exponential_at_integers(A, scores, base, taylor, p, where, inputs)
    if causal:
        # query k attends to keys j <= k only: s(A)_jk = 0 for j > k
        s = s * np.triu(np.ones((t, t), dtype=np.int64))[:, :, None, None]
    # the column sums sum_{j'} s(A)_{j'k}: one per query k (a unit: t, or k + 1 keys, at eps = 0)
    column_sums = s.sum(axis=-4) % p                                # (..., t, J, N): sum over the keys j
    return multiply(s, invert(column_sums, p)[..., None, :, :, :], p)   # S_jk = s_jk / sum_j' s_j'k


def attention_layer(X: np.ndarray, heads: list, normalizer: dict, causal: bool, residual: bool,
                    p: int, layer: int) -> np.ndarray:
    """``X_i = sum_h V_h X S(X^T K_h^T Q_h X)`` (plus ``X`` with a residual stream), every matrix a jet.

    ``X`` is ``(inputs, d, t, J, N)``; ``heads`` lists ``(Q, K, V)`` per head as ``(rows, cols, J, N)`` jets.
    A ``normalizer`` with ``"integer_scores"`` (``{"base", "scores": one array per head, "inputs"}``)
    evaluates ``s = exp`` at its exact integer scores (:func:`exponential_at_integers`).

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones((1, 1, 1, 1), dtype=np.int64)
    >>> X = np.ones((1, 1, 2, 1, 1), dtype=np.int64)     # one input, two equal tokens, no eps
    >>> lightning = {"lightning": True, "taylor": [], "polynomial": True}
    >>> attention_layer(X, [(one, one, one)], lightning, False, False, 101, 1)[..., 0, 0].tolist()
    [[[2, 2]]]
    """
    output = None
    for h, blocks in enumerate(heads, start=1):
        Q, K, V = blocks[:3]
        KX, QX, VX = matmul(K, X, p), matmul(Q, X, p), None
        if len(blocks) == 6:  # biases (b_Q, b_K, b_V): Q x + b_Q, K x + b_K, V x + b_V for every token x
            QX, KX, VX = (_plus_bias(M, b) % p for M, b in zip((QX, KX, matmul(V, X, p)), blocks[3:]))
        # scores A = (K X)^T (Q X): A_jk = <K x_j, Q x_k>
        A = matmul(transpose(KX), QX, p)
        if normalizer["lightning"]:
            # lightning attention: the scores are the weights (masked: A_jk = 0 for j > k)
            t = A.shape[-3]
            S = A * np.triu(np.ones((t, t), dtype=np.int64))[:, :, None, None] if causal else A
        else:
            integers = normalizer.get("integer_scores")
            at_integers = None if integers is None else (integers["scores"][h - 1], integers["base"],
                                                         integers["inputs"])
            S = normalizer_weights(A, normalizer["taylor"], normalizer["polynomial"], causal, p,
                                   f"layer {layer}, head {h}", at_integers)
        # V (X S(A)): the narrower product first; with biases (V X + b_V 1^T) S(A)
        head = matmul(V, matmul(X, S, p), p) if VX is None else matmul(VX, S, p)
        if output is not None:
            output, head = both_widened(output, head)
        output = head if output is None else (output + head) % p
    if residual:
        output, X = both_widened(output, X)
        output = (output + X) % p                 # the residual stream X_i = X_{i-1} + ...
    return output


def feed_forward(X: np.ndarray, blocks: tuple, activation: dict, residual: bool, p: int, layer: int) -> np.ndarray:
    """``W_out s(W_in x + b_in) + b_out`` for every token ``x`` (plus ``X`` with a residual stream).

    ``blocks`` is ``(W_in, W_out)`` or, with biases, ``(W_in, W_out, b_in, b_out)``; ``activation``
    holds the Taylor residues of ``s`` itself.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones((1, 1, 1, 1), dtype=np.int64)
    >>> X = np.full((1, 1, 2, 1, 1), 3, dtype=np.int64)
    >>> square = {"taylor": [0, 0, 1], "polynomial": True}                  # s(x) = x^2
    >>> feed_forward(X, (one, one), square, False, 101, 1)[..., 0, 0].tolist()
    [[[9, 9]]]
    """
    pre = matmul(blocks[0], X, p)
    if len(blocks) == 4:
        pre = _plus_bias(pre, blocks[2]) % p
    out = matmul(blocks[1], entrywise(pre, activation["taylor"], activation["polynomial"], p,
                                      f"layer {layer}, the feed-forward block's argument"), p)
    if len(blocks) == 4:
        out = _plus_bias(out, blocks[3]) % p
    if residual:
        out, X = both_widened(out, X)
        out = (out + X) % p
    return out


def forward(X: np.ndarray, layers: list, normalizers: list, causal: bool, residual: bool, p: int,
            ffns: list | None = None, activations: list | None = None) -> np.ndarray:
    """``F(X) = X_l`` as ``(inputs, d_l, t, J, N)`` jets, ``X`` as ``(inputs, d_0, t, J, N)``; ``layers[i]``: the heads of layer ``i + 1``.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones((1, 1, 1, 1), dtype=np.int64)
    >>> X = np.ones((1, 1, 2, 1, 1), dtype=np.int64)
    >>> quadratic = {"lightning": False, "taylor": [1, 0, 1], "polynomial": True}     # s = 1 + x^2
    >>> forward(X, [[(one, one, one)]], [quadratic], False, False, 101)[..., 0, 0].tolist()   # equal scores: averages
    [[[1, 1]]]
    """
    for i, (heads, normalizer) in enumerate(zip(layers, normalizers), start=1):
        X = attention_layer(X, heads, normalizer, causal, residual, p, i)
        if ffns and ffns[i - 1] is not None:  # the layer's feed-forward block, after its attention
            X = feed_forward(X, ffns[i - 1], activations[i - 1], residual, p, i)
    return X
