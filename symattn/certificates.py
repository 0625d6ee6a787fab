"""Certificates anyone can re-check without trusting symattn (issue 27): the certified dimension, the decay spectrum.

:func:`symattn.identify.function_space_dimension` certifies a lower bound
``r`` on the dimension of the function space by an exact rank over
``GF(p)((eps))``.  :func:`dimension_certificate` turns that run into a JSON
document holding every number the bound rests on: the integer point and bank
the run drew, the prime, a truncation ``N``, the normalizers' Taylor
coefficients as exact rationals, and a **witness**: ``r`` rows and ``r``
columns of the Jacobian series (in the curve's coordinates) whose minor has
``r`` pivots of valuation ``< N``.  :func:`symattn.verifier.verify` re-checks it
with its own forward pass and nothing else of symattn.

The witness is found by least-valuation full pivoting on the whole
(uncompressed) Jacobian series, :func:`least_valuation_pivots`.  Why it has at
least the run's rank: the run's rank is the number of Smith exponents ``< N``
of ``C J_native`` (``C`` a random row compression); those of ``J_native`` are
no larger, and those of the curve-coordinate Jacobian ``J_curve = J_native D``
(``D = diag(eps^m)``, ``m`` in ``{0, 1}``) are at most one larger, since
``J_curve (eps D^-1) = eps J_native``.  So the witness is searched mod
``eps^(N+1)``; the certificate's truncation is then one past its deepest
pivot (a pivot of valuation ``v`` is exact mod any ``eps^M`` with ``M > v``).

:func:`spectrum_certificate` does the same for the decay spectrum of
:func:`symattn.spectrum.decay_spectrum` (kind ``"spectrum"``): the witness is
``r`` rows and ``r`` columns of the *native* Jacobian series (derivatives in
the native parameters at ``theta_eps``, the matrix whose Smith valuations the
spectrum is) with pivot valuations exactly the claimed exponents; see
:data:`SPECTRUM_PROVES` for what that proves.

Examples
--------
>>> from symattn.model import Architecture
>>> certificate = dimension_certificate(Architecture.uniform(layers=1, width=2, tokens=2))
>>> certificate["claim"], certificate["prime"], certificate["truncation"]     # softmax: integer scores, no series
('the dimension of the function space of this architecture is at least 7', 1048573, 1)
>>> from symattn.verifier import verify
>>> verify(certificate).verified
True
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from . import __version__
from .curves import Curve, collapse
from .errors import SymattnError
from .jacobian import all_directions, bank_residues, gauge_slice, jacobian_series, random_bank, random_point
from .model import Architecture, Parameters, require_architecture
from .model.components import Attention, CausalMask, Residual
from .verifier.check import SCHEMA, VERSION

__all__ = ["CertificateRefused", "check_certifiable", "dimension_certificate", "write_dimension_certificate",
           "least_valuation_pivots", "spectrum_certificate", "spectrum_claim", "write_spectrum_certificate",
           "orders_certificate", "orders_claim", "identify_certificate", "write_identify_certificate",
           "claims_certificate", "claims_claim", "formula_tree", "write_claims_certificate",
           "observe_certificate", "observe_claim", "write_observe_certificate", "check_observe_certifiable"]

#: What a dimension certificate proves, and what it does not, in words (written into every certificate).
PROVES = ("A nonzero r x r minor of the Jacobian series J(eps) mod (p, eps^N), at an integer point and integer "
          "inputs, is the reduction of a minor over Z_(p)[[eps]] whose Smith valuations (all below N) are exact, "
          "hence a nonzero analytic function of eps: the real Jacobian of the network's outputs on the bank, "
          "with respect to the curve's coordinates, has rank >= r at the points of the curve with small eps != 0. "
          "Those coordinates are a reparametrization of the native parameters for eps != 0, so the function "
          "space (the image of the parameter map) has dimension >= r. No probability enters: a lucky or unlucky "
          "random draw can only make the bound lower, never wrong.")
#: What an integer-score certificate proves besides :data:`PROVES` (written into it after it).
INTEGER_SCORES_PROVES = (
    "Layer 1 is at an integer point: its queries and keys and the inputs are integers (not scaled by the curve), "
    "so every layer-1 score is an exact integer m = <K x_j, Q x_k>, and for softmax s(m)/s(0) = e^m: the layer-1 "
    "weights are e^m exp(A - m) with A - m vanishing at eps = 0, exact from the Taylor coefficients of exp. The "
    "entries of the Jacobian series then have coefficients in Z_(p)[e, 1/e] (localized at the column sums of "
    "s(A)). e is transcendental (Hermite), so Z[e, 1/e] is the ring of Laurent polynomials in e, and sending e to "
    "the nonzero residue 'base' is a ring homomorphism to GF(p) (extended to the column sums, whose images the "
    "checker finds to be units): the checker computes the image of the minor under it, and a nonzero image "
    "proves the minor nonzero over Q(e)[[eps]]. The later layers' scores vanish at eps = 0 on the curve (their "
    "keys collapsed), as for any certificate.")
DOES_NOT_PROVE = ("It does not prove an upper bound: that the dimension is at most the number of effective "
                  "parameters (the native parameters minus the gauge orbit's dimension) is a separate argument "
                  "(the function factors through the effective parameters; see MATH.md section 2), not "
                  "checked here. The checker recomputes the listed Taylor coefficients from the normalizer's "
                  "name and expression where its own series arithmetic can; where it cannot, the bound holds for "
                  "the coefficients as given, and the checker says so.")


#: What a spectrum certificate proves, and what it does not, in words (written into every spectrum certificate).
SPECTRUM_PROVES = (
    "The witness is an r x r minor M(eps) of the native Jacobian series J(eps): the derivatives of the outputs "
    "on the bank in the native parameters, at the point of the curve through the integer point. Its entries "
    "are power series over Z_(p) (rational, with denominators prime to p), and the checker computes them exactly "
    "mod (p, eps^N). Least-valuation pivoting of M mod p finds valuations e_1 <= ... <= e_r, all below N, hence "
    "exact: they are the Smith valuations of M over GF(p)[[eps]]. (1) Over GF(p)[[eps]]: a submatrix's Smith "
    "valuations bound those of the whole matrix one by one, so the bank's Jacobian reduced mod p has rank >= r "
    "and its j-th smallest Smith valuation is at most e_j, for each j <= r. (2) Over Q, for the real network: "
    "a minor whose reduction mod p has valuation v has valuation at most v over Q, so for each k <= r the sum of "
    "the k smallest Smith valuations of the bank's real Jacobian (its k-th determinantal divisor) is at most "
    "e_1 + ... + e_k: the product of its k largest singular values is at least c eps^(e_1 + ... + e_k), c > 0, "
    "for small eps. In particular the real Jacobian has rank >= r at the points of the curve with small "
    "eps != 0, and its smallest exponent is at most e_1. Upper bounds on the exponents, a lower bound on the "
    "rank; a larger bank only adds rows and keeps them. No probability enters: an unlucky random draw can only "
    "make the bounds weaker, never wrong.")
SPECTRUM_DOES_NOT_PROVE = (
    "It does not prove that the exponents are exactly e_1, ..., e_r or that no exponent is smaller (another "
    "bank, point or prime can only lower them), nor an upper bound on the rank, the kernel dimension "
    "(#params - rank) or that the bank separates. Over Q it bounds the partial sums e_1 + ... + e_k, not each "
    "exponent: the minor [[eps, p], [0, eps]] has Smith valuations {1: 2} mod p but {0: 1, 2: 1} over Q. It "
    "does not check that the listed Taylor coefficients are those of the named normalizer, except for the "
    "normalizers the checker knows (exp, cosh, exp(x**2), 1 + x**2).")


class CertificateRefused(SymattnError, ValueError):
    """An architecture, normalizer or curve that a certificate cannot (yet) describe.

    Examples
    --------
    >>> dimension_certificate(Architecture.uniform(layers=1, normalizer="exp(sqrt(2)*x)"))
    Traceback (most recent call last):
    ...
    symattn.certificates.CertificateRefused: normalizer exp(sqrt(2)*x) (layer 1) has Taylor coefficients that are not rational (e.g. c_1 = sqrt(2)); a certificate lists them as exact rationals: use a normalizer with rational Taylor coefficients (softmax, cosh, 1 + x**2, ...)
    """


def least_valuation_pivots(J: np.ndarray, p: int) -> list:
    """Full pivoting over ``GF(p)[[eps]]`` mod ``eps^N``, the least valuation first: ``[(row, col, valuation)]``.

    At the least valuation ``v`` left, every pivot of valuation ``v`` at once:
    the rows and columns of an invertible maximal submatrix of the
    coefficient matrix of ``eps^v`` over GF(p); then the Schur complement.
    The valuations, in the order found, are the Smith exponents below ``N``
    of ``J`` (exact: the multipliers are known mod ``eps^(N - v)`` and meet
    entries of valuation ``>= v``); the rows and columns are those of ``J``,
    and their minor has exactly these pivots (the eliminations restricted to
    it are its own).

    Parameters
    ----------
    J : int array ``(m, n, N)``
        Residues mod ``p`` of the coefficients of ``eps^0 .. eps^(N-1)``.
    p : int
        A prime below ``2**28``.

    Returns
    -------
    list of (int, int, int)

    Examples
    --------
    >>> M = np.zeros((3, 2, 3), dtype=np.int64)
    >>> M[0, 0, 2] = 1; M[2, 1, 1] = 4; M[1, 0, 2] = 2       # [[eps^2, 0], [2 eps^2, 0], [0, 4 eps]]
    >>> least_valuation_pivots(M, 7)
    [(2, 1, 1), (0, 0, 2)]
    """
    from .algebra.linalg import inverse_mod_p, matmul_mod, pivots, series_matmul

    work = np.array(J, dtype=np.int64) % p
    N = work.shape[-1]
    rows, cols = np.arange(work.shape[0]), np.arange(work.shape[1])
    found = []
    while work.shape[0] and work.shape[1]:
        nonzero = work != 0
        valuation = np.where(nonzero.any(axis=-1), nonzero.argmax(axis=-1), N)
        v = int(valuation.min())
        if v >= N:
            break
        level = work[:, :, v]
        if level.shape[0] <= level.shape[1]:
            R, C = pivots(level, p)
        else:
            C, R = pivots(level.T, p)
        found += [(int(rows[r]), int(cols[c]), v) for r, c in zip(R, C)]
        other_rows = np.setdiff1d(np.arange(work.shape[0]), R)
        other_cols = np.setdiff1d(np.arange(work.shape[1]), C)
        if not len(other_rows) or not len(other_cols):
            break
        # multipliers M[o, C] M[R, C]^-1 mod eps^(N - v), coefficient by coefficient:
        # X_t = (L_t - sum_{i=1..t} X_(t-i) P_i) P_0^-1 with P = M[R, C] / eps^v, L = M[o, C] / eps^v
        pivot = work[np.ix_(R, C)][:, :, v:]
        left = work[np.ix_(other_rows, C)][:, :, v:]
        inverse = inverse_mod_p(pivot[:, :, 0], p)
        X = np.zeros((len(other_rows), len(C), N), dtype=np.int64)
        for t in range(N - v):
            rhs = left[:, :, t]
            for i in range(1, t + 1):
                rhs = (rhs - matmul_mod(X[:, :, t - i], pivot[:, :, i], p)) % p
            X[:, :, t] = matmul_mod(rhs, inverse, p)
        update = series_matmul(X, work[np.ix_(R, other_cols)], p, N)
        work = (work[np.ix_(other_rows, other_cols)] - update) % p
        rows, cols = rows[other_rows], cols[other_cols]
    return found


def check_certifiable(arch: Architecture, curve: Curve | None = None) -> None:
    """Refuse, with a :class:`CertificateRefused` naming it, what a certificate cannot describe yet.

    Called before any computation: generic normalizers and normalizers or
    activations whose Taylor coefficients are not rational; polynomial
    curves.  Attention (heads, a causal mask, a residual stream, biases) and
    feed-forward blocks are described by every kind of certificate.

    Examples
    --------
    >>> check_certifiable(Architecture.uniform(layers=2, heads=2, causal=True))
    >>> check_certifiable(Architecture.uniform(layers=1, bias=True, ffn=2))
    >>> check_certifiable(Architecture.uniform(layers=1, ffn=2, activation="gelu"))
    Traceback (most recent call last):
    ...
    symattn.certificates.CertificateRefused: activation gelu (layer 1) has Taylor coefficients that are not rational (e.g. c_2 = sqrt(2)/(2*sqrt(pi))); a certificate lists them as exact rationals: use an activation with rational Taylor coefficients (tanh, sigmoid, x + x**2, ...)
    """
    _refuse_unsupported(require_architecture(arch), curve)


def _refuse_unsupported(arch: Architecture, curve) -> None:
    """Refuse what the checker does not implement, naming it, before any computation."""
    from .model.bias import BiasedAttention, BiasedFeedForward
    from .model.feedforward import FeedForward

    known = (Attention, CausalMask, Residual, BiasedAttention, FeedForward, BiasedFeedForward)
    for layer, _, component in arch.components():
        if type(component) not in known:
            raise CertificateRefused(f"layer {layer} has a component {type(component).__name__} ({component.kind}) "
                                     f"that this certificate's checker does not implement yet; it implements "
                                     "attention (with heads), a causal mask, a residual stream, biases and "
                                     "feed-forward blocks")
        if isinstance(component, FeedForward) and not component.activation.is_polynomial:
            # refused before any computation; the rest once N is known
            _rational_taylor(component.activation, layer, 8, "activation", _ACTIVATION_EXAMPLES)
    for i, normalizer in enumerate(arch.normalizers, start=1):
        if normalizer.is_lightning:
            continue
        if normalizer.is_generic:
            raise CertificateRefused(f"normalizer {normalizer.name} (layer {i}) is generic: its Taylor coefficients "
                                     "are symbols, and a certificate needs their exact values")
        if not normalizer.is_polynomial:
            _rational_taylor(normalizer, i, 8)  # refused before any computation; the rest once N is known
    if curve is not None and (not isinstance(curve, Curve) or curve.polynomials):
        raise CertificateRefused(f"curve {getattr(curve, 'name', curve)!r}: a certificate describes curves that "
                                 "scale blocks by powers of eps (collapse, input scaling), not polynomial curves")


def _rational_taylor(function, layer: int, degree: int, what: str = "normalizer",
                     examples: str = "softmax, cosh, 1 + x**2, ...") -> list:
    """The Taylor coefficients ``c_0 .. c_degree`` of ``function`` as Fractions; refused when one is not rational.

    For a normalizer they are those of ``s/s(0)``, for an activation those of
    ``s`` (each class's own ``taylor``); ``what`` and ``examples`` word the refusal.
    """
    coefficients = []
    for n, c in enumerate(function.taylor(degree)):
        if not c.is_Rational:
            raise CertificateRefused(
                f"{what} {function.name} (layer {layer}) has Taylor coefficients that are not rational "
                f"(e.g. c_{n} = {c}); a certificate lists them as exact rationals: use "
                f"{'an' if what[0] in 'aeiou' else 'a'} {what} with "
                f"rational Taylor coefficients ({examples})")
        coefficients.append(Fraction(int(c.p), int(c.q)))
    return coefficients


_ACTIVATION_EXAMPLES = "tanh, sigmoid, x + x**2, ..."


def _taylor_strings(arch: Architecture, layer: int, truncation: int) -> dict:
    """The normalizer of ``layer`` as the certificate writes it: name, expression, Taylor coefficients ``"p/q"``."""
    normalizer = arch.normalizers[layer - 1]
    if normalizer.is_lightning:
        return {"name": normalizer.name, "expression": None, "lightning": True, "polynomial": True, "taylor": []}
    if normalizer.is_polynomial:
        raw = [Fraction(int(c.p), int(c.q)) for c in normalizer.polynomial_coefficients]
        coefficients = [c / raw[0] for c in raw]
    else:
        coefficients = _rational_taylor(normalizer, layer, truncation)
    return {"name": normalizer.name, "expression": str(normalizer.expr), "lightning": False,
            "polynomial": bool(normalizer.is_polynomial),
            "taylor": [str(c) for c in coefficients]}


def dimension_certificate(arch: Architecture, result=None, curve: Curve | None = None, seed: int = 0,
                          estimate=None, dps: int = 30, prime: int | None = None, max_attempts: int = 4,
                          max_memory=None) -> dict:
    """A certificate of the certified lower bound of :func:`~symattn.identify.function_space_dimension`.

    Reproduces the run that gave the bound (its seed, prime, bank size and
    truncation, as ``result`` records them), computes the uncompressed
    Jacobian series in the curve's coordinates at the same integer point and
    bank, and finds a witness minor by :func:`least_valuation_pivots`.

    Parameters
    ----------
    arch : Architecture
    result : DimensionResult, optional
        The run to certify (default: :func:`function_space_dimension` with the
        options below, on its default route).  A result of the integer-score
        route is certified on that route (field ``integer_scores``: layer 1's
        queries, keys and the bank written as signed integers, ``e`` sent to
        the run's residue ``base``) when layer 1's normalizer is ``exp(x)``;
        for another rate (``exp(x/2)``) the curve route is computed again from
        the result's seed (``route="curve"``) and that run is certified.
    curve, seed, estimate, dps, prime, max_attempts, max_memory
        As for :func:`function_space_dimension` (``prime`` defaults to its
        ``DIMENSION_PRIME``); ``curve`` must be the result's curve.  The
        estimate is not part of the certificate.

    Returns
    -------
    dict
        The JSON document (schema ``docs/certificate.schema.json``).

    Raises
    ------
    CertificateRefused
        For a normalizer whose Taylor coefficients are not rational or are
        generic, an activation whose Taylor coefficients are not rational,
        a component the checker does not implement, or a polynomial curve.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, normalizer="cosh")
    >>> certificate = dimension_certificate(arch)
    >>> certificate["rank"], certificate["witness"]["valuations"], certificate["curve"]["powers"]["Q_1"]
    (10, [0, 0, 0, 0, 4, 4, 4, 12, 12, 12], 1)
    >>> certificate["witness"]["rows"][0], certificate["witness"]["columns"][0]     # (input, row, token)
    ([0, 0, 0], 'V_2[0,0]')

    Softmax takes the integer-score route: layer 1 at integer scores, the
    second layer's keys collapsed, series to ``eps^2``:

    >>> softmax = dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1))
    >>> softmax["integer_scores"]["layer"], softmax["curve"]["powers"], softmax["truncation"]
    (1, {'Q_1': 0, 'K_1': 0, 'V_1': 0, 'Q_2': 0, 'K_2': 1, 'V_2': 0}, 2)
    >>> from symattn.verifier import verify
    >>> verify(softmax).rank
    10
    """
    from .identify import DimensionResult, function_space_dimension
    from .identify.common import DIMENSION_PRIME

    arch = require_architecture(arch)
    _refuse_unsupported(arch, curve)
    if result is None:
        result = function_space_dimension(arch, curve=curve, seed=seed, estimate=estimate, dps=dps,
                                          prime=DIMENSION_PRIME if prime is None else prime,
                                          max_attempts=max_attempts, max_memory=max_memory)
    if not isinstance(result, DimensionResult):
        raise SymattnError(f"result must be the DimensionResult of function_space_dimension, got "
                           f"{type(result).__name__}")
    integer = result.route.startswith("integer scores")
    if integer and curve is not None:
        raise SymattnError(f"the result was computed {result.route}, with no curve: pass curve=None")
    if integer and not _checker_knows_integer_scores(arch):
        # the checker evaluates integer scores for s = exp(x) only: certify the curve route's run from the seed
        result = function_space_dimension(arch, curve=curve, seed=result.seed, estimate=estimate, dps=dps,
                                          prime=result.prime, max_attempts=max_attempts, max_memory=max_memory,
                                          route="curve")
        integer = False
    p = result.prime
    if integer:
        return _integer_score_certificate(arch, result)
    if result.route == "random point":  # polynomial weights: the Jacobian at the point itself
        route_curve, truncation = Curve("a random point (no curve)"), 1
    else:
        route_curve = collapse() if curve is None else curve
        if result.route != "series along " + route_curve.describe(arch.layers):
            raise SymattnError(f"the result was computed {result.route}, not along {route_curve.describe(arch.layers)}:"
                               " pass the result's curve")
        truncation = result.truncation + 1  # curve coordinates: each Smith exponent at most one higher
    point, coefficient_values = random_point(arch, p, result.seed)
    bank = random_bank(arch, result.bank, p, result.seed)
    pivots, directions = _witness_pivots(
        arch, result, lambda directions: jacobian_series(arch, route_curve, bank, point, p, truncation,
                                                         coefficient_values, directions=directions,
                                                         coordinates="curve"))
    document = _document(arch, route_curve, p, point, bank, pivots, directions[0])
    return _dimension_document(document, pivots, result, PROVES)


def _witness_pivots(arch: Architecture, result, jacobian) -> tuple:
    """``(pivots, directions)``: least-valuation pivots of ``jacobian(directions)``, the gauge slice's first.

    All native parameters only when the slice's Jacobian has fewer pivots than the certified rank.
    """
    slice_directions = gauge_slice(arch)
    pivots = least_valuation_pivots(jacobian(slice_directions), result.prime)
    if len(pivots) >= result.lower or result.lower >= arch.param_count:  # the slice holds every parameter
        return pivots, slice_directions
    every = all_directions(arch)
    pivots = least_valuation_pivots(jacobian(every), result.prime)
    if len(pivots) >= result.lower:
        return pivots, every
    # cannot happen: the uncompressed Jacobian has every direction the compressed one had
    raise SymattnError(f"the witness search found {len(pivots)} pivots, fewer than the certified rank "
                       f"{result.lower}: this is a bug in symattn, please report it")


def _dimension_document(document: dict, pivots: list, result, proves: str, extra: dict | None = None) -> dict:
    """A dimension certificate: the shared fields of :func:`_document`, the claim, the rank, how it was produced."""
    rank = len(pivots)
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "dimension lower bound",
        "claim": f"the dimension of the function space of this architecture is at least {rank}",
        "proves": proves,
        "does_not_prove": DOES_NOT_PROVE,
        **document,
        **(extra or {}),
        "rank": rank,
        "produced_by": {"program": "symattn", "version": __version__, "function": "function_space_dimension",
                        "route": result.route, "seed": int(result.seed), "bank_size": int(result.bank),
                        "engine_truncation": int(result.truncation), "lower": int(result.lower),
                        "upper": int(result.upper), "upper_reason": result.upper_reason, "method": result.method},
    }


def _checker_knows_integer_scores(arch: Architecture) -> bool:
    """Whether the checker evaluates ``arch``'s layer 1 at integer scores: its normalizer is ``exp(x)`` (rate 1)."""
    first = arch.normalizers[0]
    return not first.is_lightning and first.exponential_rate == 1 and str(first.expr) == "exp(x)"


def _integer_score_certificate(arch: Architecture, result) -> dict:
    """The certificate of a run of the integer-score route, reproduced from its seed, prime and bank size.

    The point and bank are :func:`~symattn.identify.common.integer_score_point`'s
    (layer 1's ``Q``, ``K`` and the bank small signed integers, written as
    such), the curve the later layers' key collapse
    (:func:`~symattn.identify.common.integer_score_curve`, none for one layer),
    ``e`` sent to the run's residue ``base``.  The witness is searched one
    power of ``eps`` deeper than the run's truncation (curve coordinates: a
    collapsed key's column is ``eps`` times its native one).
    """
    from .algebra.modseries import INTEGER_SCORES
    from .identify.common import integer_score_curve, integer_score_point

    p = result.prime
    route_curve = integer_score_curve(arch)
    if arch.layers == 1:  # no curve: the Jacobian at the point itself
        route_curve, truncation = Curve("no curve: layer 1 at integer scores"), 1
    else:
        truncation = result.truncation + 1
    point, coefficient_values, bank = integer_score_point(arch, p, result.seed, result.bank)
    base = int(coefficient_values[INTEGER_SCORES].base)
    pivots, directions = _witness_pivots(
        arch, result, lambda directions: jacobian_series(arch, route_curve, bank, point, p, truncation,
                                                         coefficient_values, directions=directions,
                                                         coordinates="curve"))
    # the bank's entries are integers in [-8, 8], drawn as such and reduced mod p: written as the integers
    signed_bank = np.where(bank > p // 2, bank - p, bank)
    document = _document(arch, route_curve, p, point, signed_bank, pivots, directions[0])
    extra = {"integer_scores": {
        "layer": 1, "base": base,
        "reason": "layer 1's queries and keys and the inputs are integers, so every layer-1 score is an integer m "
                  "and softmax gives s(m)/s(0) = e^m; e is transcendental (Hermite), so sending it to the "
                  f"residue {base} is a ring homomorphism Z[e, 1/e] -> GF({p})"}}
    return _dimension_document(document, pivots, result, PROVES + " " + INTEGER_SCORES_PROVES, extra)


def _document(arch: Architecture, curve: Curve, p: int, point, bank, pivots: list, directions: dict,
              truncation: int | None = None) -> dict:
    """The fields every certificate shares: architecture, normalizers, curve, prime, truncation, point, bank, witness.

    The truncation is one past the deepest pivot: a pivot of valuation ``v``
    is exact mod any ``eps^M`` with ``M > v``, and a shorter series is cheaper
    to check.  ``directions`` maps each block to the jet index of its entries
    (``-1`` for entries held fixed), as the Jacobian's columns were numbered.
    """
    if truncation is None:
        truncation = 1 + max((v for _, _, v in pivots), default=0)
    labels = {key: arch.block_label(key) for key, _ in arch.blocks()}
    names = {}
    for key, chosen in directions.items():
        for (r, c), k in np.ndenumerate(chosen):
            if k >= 0:
                names[int(k)] = f"{labels[key]}[{r},{c}]"
    per_input = arch.widths[-1] * arch.tokens
    return {
        "architecture": _architecture_json(arch),
        "normalizers": [_taylor_strings(arch, i, truncation) for i in range(1, arch.layers + 1)],
        **({"activations": activations} if (activations := _activation_strings(arch, truncation)) else {}),
        "curve": {"name": curve.describe(arch.layers), "input_power": int(curve.input_power),
                  "powers": {labels[key]: int(curve.block_power(*key[:2]) or 0) for key, _ in arch.blocks()}},
        "prime": int(p),
        "truncation": int(truncation),
        "point": {labels[key]: np.asarray(point[key]).tolist() for key, _ in arch.blocks()},
        "bank": np.asarray(bank).tolist(),
        "parameters": _parameter_names(arch),
        "witness": {
            "rows": [[row // per_input, row % per_input // arch.tokens, row % arch.tokens] for row, _, _ in pivots],
            "columns": [names[col] for _, col, _ in pivots],
            "valuations": [v for _, _, v in pivots],
        },
    }


def write_dimension_certificate(arch: Architecture, path, result=None, **options) -> dict:
    """Write :func:`dimension_certificate` to ``path`` as JSON (atomically) and return it.

    Examples
    --------
    >>> import tempfile, os
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "dimension.json")
    >>> certificate = write_dimension_certificate(Architecture.uniform(layers=1, width=1, tokens=2), path)
    >>> verify(path).verified, certificate["rank"]
    (True, 2)
    """
    return _write(lambda: dimension_certificate(arch, result=result, **options), path)


def spectrum_claim(rank: int, exponents: dict, p: int) -> str:
    """The claim of a spectrum certificate in words (the checker writes the same sentence from its own reading).

    Examples
    --------
    >>> spectrum_claim(7, {0: 4, 1: 3}, 101)
    'along its curve, the native Jacobian of this architecture on its bank has rank at least 7, and its decay exponents over GF(101)[[eps]], in increasing order, are at most {0: 4, 1: 3}'
    """
    histogram = "{" + ", ".join(f"{e}: {m}" for e, m in sorted(exponents.items())) + "}"
    return (f"along its curve, the native Jacobian of this architecture on its bank has rank at least {rank}, "
            f"and its decay exponents over GF({p})[[eps]], in increasing order, are at most {histogram}")


def spectrum_certificate(arch: Architecture, result=None, curve: Curve | None = None, bank="auto",
                         **options) -> dict:
    """A certificate of the decay spectrum of :func:`~symattn.spectrum.decay_spectrum` (kind ``"spectrum"``).

    Reproduces the run's main computation (its first prime, its seed's point,
    its bank and truncation, as ``result`` records them), computes the
    uncompressed native Jacobian series there, and finds a witness minor by
    :func:`least_valuation_pivots`.  The claimed exponents are the witness's
    pivot valuations: the Smith valuations of the uncompressed Jacobian mod
    ``p``, which are the run's (its random row compression can only raise
    them, with probability at most ``r / p``); the run's own are kept under
    ``produced_by``.  What the certificate proves: :data:`SPECTRUM_PROVES`.

    Parameters
    ----------
    arch : Architecture
    result : Spectrum, optional
        The run to certify (default: :func:`decay_spectrum` with ``curve``,
        ``bank`` and ``options``, without a progress bar).
    curve : Curve, optional
        The result's curve (default collapse).
    bank : "auto", int or list of matrices
        As for :func:`decay_spectrum`; a list must be the bank the result
        was computed on (a random bank is drawn again from the result's seed).
    **options
        ``truncation``, ``seed``, ``primes``, ``confirm``, ``max_bank``,
        ``max_truncation``, ``max_memory`` of :func:`decay_spectrum`, when
        ``result`` is not given.

    Returns
    -------
    dict
        The JSON document (schema ``docs/certificate.schema.json``).

    Raises
    ------
    CertificateRefused
        As :func:`dimension_certificate`, before any computation.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> certificate = spectrum_certificate(Architecture.uniform(layers=2, width=2, rank=1))
    >>> certificate["kind"], certificate["exponents"], certificate["rank"], certificate["truncation"]
    ('spectrum', {'0': 4, '1': 3, '5': 3}, 10, 6)
    >>> certificate["witness"]["columns"][-1], certificate["witness"]["valuations"][-1]
    ('K_2[0,0]', 5)
    >>> from symattn.verifier import verify
    >>> verify(certificate).verified
    True
    """
    from .spectrum import Spectrum, decay_spectrum

    arch = require_architecture(arch)
    _refuse_unsupported(arch, curve)
    route_curve = collapse() if curve is None else curve
    result = _given_run(result, lambda **given: decay_spectrum(arch, curve=route_curve, bank=bank, progress=False,
                                                              **given),
                        options, Spectrum, "result", "the Spectrum of decay_spectrum", route_curve.describe(arch.layers))
    if result.architecture != arch.to_json():
        raise SymattnError("the result was computed for another architecture: pass the result's architecture")
    p, seed = result.primes[0], result.seeds[0]
    point, coefficient_values = random_point(arch, p, seed)
    if isinstance(bank, str) or isinstance(bank, (int, np.integer)):
        inputs = random_bank(arch, result.bank, p, seed)
    else:
        inputs = bank_residues(arch, list(bank), p)
        if len(inputs) != result.bank:
            raise SymattnError(f"the bank given has {len(inputs)} inputs, the result's {result.bank}: pass the "
                               "bank the result was computed on")
    J = jacobian_series(arch, route_curve, inputs, point, p, result.truncation, coefficient_values)
    pivots = least_valuation_pivots(J, p)
    valuations = sorted(v for _, _, v in pivots)
    exponents: dict = {}
    for v in valuations:
        exponents[v] = exponents.get(v, 0) + 1
    document = _document(arch, route_curve, p, point, inputs, pivots, all_directions(arch)[0])
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "spectrum",
        "claim": spectrum_claim(len(pivots), exponents, p),
        "proves": SPECTRUM_PROVES,
        "does_not_prove": SPECTRUM_DOES_NOT_PROVE,
        **document,
        "coordinates": "native",
        "exponents": {str(e): m for e, m in exponents.items()},
        "rank": len(pivots),
        "produced_by": {"program": "symattn", "version": __version__, "function": "decay_spectrum",
                        "seed": int(seed), "bank_size": int(result.bank), "engine_truncation": int(result.truncation),
                        "spectrum": {str(e): m for e, m in result.exponents.items()}, "rank": int(result.rank),
                        "kernel": int(result.kernel), "unresolved": int(result.unresolved),
                        "primes": [int(q) for q in result.primes], "separating": bool(result.separating),
                        "confirmed": bool(result.confirmed), "method": result.method},
    }


def write_spectrum_certificate(arch: Architecture, path, result=None, **options) -> dict:
    """Write :func:`spectrum_certificate` to ``path`` as JSON (atomically) and return it.

    Examples
    --------
    >>> import tempfile, os
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "spectrum.json")
    >>> certificate = write_spectrum_certificate(Architecture.uniform(layers=1, width=2, tokens=2), path)
    >>> verify(path).verified, certificate["exponents"]
    (True, {'0': 4, '1': 3})
    """
    return _write(lambda: spectrum_certificate(arch, result=result, **options), path)


#: What an identification-orders certificate proves, and what it does not (written into every such certificate).
ORDERS_PROVES = (
    "For each block (the entries of Q_i and K_i, or of one head's; every V for the values; the bias columns of "
    "layer i for bias:i; W_in, W_out and their biases for feed-forward:i), at the integer point "
    "and bank, in the curve's coordinates: C_n, the coefficient of eps^n of the Jacobian series, has an entry on "
    "the block that is nonzero mod p, hence the rational it reduces from is nonzero: dF_n/d(block) is not "
    "identically zero, so the block's identification order is at most n. And r rows (output entries, with "
    "coefficients m <= n) and r columns of the block give a constant matrix of [C_0; ...; C_n] that is "
    "nonsingular mod p, hence over Q: the jet of order n has rank >= r on the block's columns at this point, "
    "hence at generic points. No probability enters.")
ORDERS_DOES_NOT_PROVE = (
    "It does not prove that C_m vanishes on the block for every m < n at every point (that the order is exactly "
    "n): the checker recomputes C_0 .. C_(n-1) on the block for the whole bank at this point and fails on a "
    "nonzero entry, which can refute the claim but not prove it (symattn's own exact symbolic check, where it "
    "ran, is recorded under produced_by). It does not prove that r is the block's effective dimension (the upper "
    "bound is the argument of MATH.md section 4), nor anything about the generic fiber.")


def orders_claim(orders: list) -> str:
    """The claim of an identification-orders certificate in words (the checker writes it from its own reading).

    Examples
    --------
    >>> orders_claim([{"block": "scores:1", "order": 2, "jet_rank": 3}])
    'along its curve, at its point: scores:1 has identification order at most 2 and jet rank at least 3 on its columns'
    """
    return "along its curve, at its point: " + "; ".join(
        f"{entry['block']} has identification order at most {entry['order']} and jet rank at least "
        f"{entry['jet_rank']} on its columns" for entry in orders)


def orders_certificate(arch: Architecture, result=None, curve: Curve | None = None, seed: int = 0,
                       **options) -> dict:
    """A certificate of the identification orders of :func:`~symattn.identify.identification_orders`.

    Uses the run's own Jacobian in the curve's coordinates (its first prime,
    the point and bank of ``seed``).  For each block with an order ``n``: an
    entry of ``C_n`` on the block that is nonzero mod ``p``, and ``r`` rows of
    ``[C_0; ...; C_n]`` and ``r`` of the block's columns whose constant matrix
    is nonsingular mod ``p``, found by pivoting, ``r`` the run's jet rank on
    the block.  The blocks are the run's: ``scores:i`` (per head with
    several), ``values``, and with biases and feed-forward blocks
    ``bias:i`` and ``feed-forward:i``.  What it proves: :data:`ORDERS_PROVES`.

    Parameters
    ----------
    arch : Architecture
    result : OrdersResult, optional
        The run to certify, computed with this ``seed`` (default:
        :func:`identification_orders` with ``curve``, ``seed`` and ``options``).
    curve : Curve, optional
        The result's curve (default collapse).
    seed : int
        The seed of the run (its point and bank are drawn again from it).

    Returns
    -------
    dict
        The JSON document (schema ``docs/certificate.schema.json``).

    Raises
    ------
    CertificateRefused
        As :func:`dimension_certificate`, before any computation.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> certificate = orders_certificate(Architecture.uniform(layers=2, width=2, rank=1))
    >>> [(entry["block"], entry["order"], entry["jet_rank"]) for entry in certificate["orders"]]
    [('scores:1', 2, 3), ('scores:2', 6, 3), ('values', 0, 4)]
    >>> from symattn.verifier import verify
    >>> verify(certificate).verified
    True
    >>> biased = orders_certificate(Architecture.uniform(layers=1, width=2, rank=1, bias=True, ffn=2,
    ...                                                  activation="x + x**2"))
    >>> [(entry["block"], entry["order"], entry["jet_rank"]) for entry in biased["orders"]]
    [('scores:1', 3, 4), ('bias:1', 1, 2), ('feed-forward:1', 0, 2), ('values', 1, 4)]
    >>> verify(biased).verified
    True
    """
    from .algebra.linalg import pivots as independent_pivots
    from .identify import identification_orders
    from .identify.orders import OrdersResult
    from .jacobian import block_columns

    arch = require_architecture(arch)
    _refuse_unsupported(arch, curve)
    route_curve = collapse() if curve is None else curve
    result = _given_run(result, lambda **given: identification_orders(arch, route_curve, seed=seed, **given),
                        options, OrdersResult, "result", "the OrdersResult of identification_orders",
                        route_curve.describe(arch.layers))
    p = int(result.primes[0])
    point, _ = random_point(arch, p, seed)
    if any(not np.array_equal(np.asarray(point[key]), np.asarray(result.point[key])) for key in point):
        raise SymattnError(f"the result was not computed with seed {seed}: pass the seed of the run")
    bank = random_bank(arch, result.bank, p, seed)
    J = result.jacobian % p  # (d_l t bank, #params, N), curve coordinates
    per_input = arch.widths[-1] * arch.tokens
    names = _parameter_names(arch)

    def output_entry(row: int) -> list:
        return [row // per_input, row % per_input // arch.tokens, row % arch.tokens]

    columns, orders = block_columns(arch), []
    for block in (*result.scores, result.values):
        if block.order is None or not columns[block.block]:
            continue  # no order below the truncation: nothing to certify for this block
        n, chosen = block.order, columns[block.block]
        rows, cols = np.nonzero(J[:, chosen, n])
        nonzero = {"row": output_entry(int(rows[0])), "column": names[chosen[int(cols[0])]]}
        stacked = np.concatenate([J[:, chosen, m] for m in range(n + 1)])  # [C_0; ...; C_n] on the block
        pivot_rows, pivot_cols = independent_pivots(stacked, p)
        orders.append({
            "block": block.block, "order": int(n), "jet_rank": len(pivot_rows),
            "nonzero": nonzero,
            "witness": {"rows": [output_entry(r % len(J)) + [r // len(J)] for r in pivot_rows],
                        "columns": [names[chosen[c]] for c in pivot_cols]},
        })
    if not orders:
        raise SymattnError("no block has an identification order below the truncation: nothing to certify")
    truncation = 1 + max(entry["order"] for entry in orders)
    document = _document(arch, route_curve, p, point, bank, [], all_directions(arch)[0], truncation)
    del document["witness"]
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "identification orders",
        "claim": orders_claim(orders),
        "proves": ORDERS_PROVES,
        "does_not_prove": ORDERS_DOES_NOT_PROVE,
        **document,
        "orders": orders,
        "produced_by": {"program": "symattn", "version": __version__, "function": "identification_orders",
                        "seed": int(seed), "bank_size": int(result.bank), "engine_truncation": int(result.truncation),
                        "orders": {b.block: {"order": b.order, "sharp": b.sharp, "jet_rank": b.jet_rank,
                                             "block_dimension": b.block_dimension,
                                             "exact_independence": b.exact_independence, "confirmed": b.confirmed}
                                   for b in (*result.scores, result.values)},
                        "primes": [int(q) for q in result.primes], "method": result.method},
    }


def identify_certificate(arch: Architecture, report=None, curve: Curve | None = None, seed: int = 0,
                         **options) -> dict:
    """A bundle (kind ``"identify"``) of the certificates of an identifiability report: dimension and orders.

    ``parts`` holds :func:`dimension_certificate` of the report's dimension
    and :func:`orders_certificate` of its orders; the checker verifies each,
    and the bundle's claim is theirs joined.  The generic fiber (gauge orbit,
    sign flips) is not certified.

    Parameters
    ----------
    arch : Architecture
    report : IdentificationReport, optional
        The report to certify, computed with this ``seed`` (default:
        :func:`~symattn.identify.identify` with ``curve``, ``seed`` and ``options``).
    curve : Curve, optional
    seed : int

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> bundle = identify_certificate(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> bundle["kind"], [part["kind"] for part in bundle["parts"]]
    ('identify', ['dimension lower bound', 'identification orders'])
    >>> from symattn.verifier import verify
    >>> verify(bundle).verified
    True
    """
    from .identify import identify
    from .identify.report import IdentificationReport

    arch = require_architecture(arch)
    _refuse_unsupported(arch, curve)
    report = _given_run(report, lambda **given: identify(arch, curve=curve, seed=seed, **given), options,
                        IdentificationReport, "report", "the IdentificationReport of identify")
    parts = [dimension_certificate(arch, result=report.dimension, curve=curve),
             orders_certificate(arch, result=report.orders_result, curve=curve, seed=seed)]
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "identify",
        "claim": "; ".join(part["claim"] for part in parts),
        "proves": "Each part proves what its own 'proves' says; the generic fiber of the report is not certified.",
        "parts": parts,
    }


def write_identify_certificate(arch: Architecture, path, report=None, **options) -> dict:
    """Write :func:`identify_certificate` to ``path`` as JSON (atomically) and return it.

    Examples
    --------
    >>> import tempfile, os
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "identify.json")
    >>> bundle = write_identify_certificate(Architecture.uniform(layers=1, width=1, tokens=2), path)
    >>> verify(path).verified, len(bundle["parts"])
    (True, 2)
    """
    return _write(lambda: identify_certificate(arch, report=report, **options), path)


#: The quantities of ``symattn check`` whose claims a certificate settles, and the part each needs.
_CLAIM_PARTS = {"dimension": "dimension", "identification_order": "orders", "kernel": "spectrum",
                "contact_order": "spectrum", "multiplicity": "spectrum", "sign_group_order": None}

#: The prime of the formula claims' points: ``2^31 - 1``, the largest the checker accepts.
FORMULA_PRIME = 2_147_483_647


def claims_certificate(arch: Architecture, claims, seed: int = 0, progress: bool = False, on_checks=None) -> dict:
    """A certificate of the claims checked by ``symattn check`` (kind ``"claims"``): numbers and formulas.

    The claims are checked as :func:`~symattn.check.check_claims` does; the
    certificate lists each with the verdict symattn's engine gave it.

    * A numeric claim (its quantity, layer and value) is settled against
      certificates of the engine's results, in ``parts``: the dimension's
      lower bound, the spectrum, the identification orders.  The checker
      verifies the parts and decides each claim from what they prove
      (:mod:`symattn.verifier.claims`): a refutation by a certified bound is
      proved; a confirmation rarely is (only the kernel, when the spectrum's
      gauge check decides it).
    * A formula claim (``F_n = <matrix formula>``, ``leading(i) = <matrix
      formula>``) is written as data: the formula as a tree of operations,
      an integer point (``Qt_i, Kt_i, Vt_i`` and an input ``X``, residues
      drawn at random from the seed), the prime, the truncation and the
      normalizers' Taylor coefficients, and the engine's values of both sides
      at the point mod ``p``.  The checker recomputes both
      (:mod:`symattn.verifier.formulas`): a difference refutes the claim (a
      proof), agreement is "consistent at one point" (not a proof).  For a
      claim the engine found false the point is one where the two sides differ.

    Parameters
    ----------
    arch : Architecture
    claims : str or iterable of str
        Numeric claims (:data:`symattn.check.ACCEPTED_CLAIMS`) and formula
        claims (:data:`symattn.check.FORMULA_CLAIMS`; plain networks only).
    seed : int
        Seed of the engine's checks and of the formula claims' points.
    progress : bool
        Progress bars of the engine's computations.
    on_checks : callable, optional
        Called with the engine's :class:`~symattn.verdicts.ClaimCheck` of each claim.

    Raises
    ------
    CertificateRefused
        Before any computation: what :func:`dimension_certificate` refuses;
        for a formula claim, a network that is not plain (heads, a causal
        mask, a residual stream, biases, feed-forward blocks) and, for
        ``leading(i)``, lightning attention.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> certificate = claims_certificate(Architecture.uniform(layers=2, width=2, rank=1), ["dimension = 9", "kernel = 6"])
    >>> certificate["claim"], [part["kind"] for part in certificate["parts"]]
    ('symattn check found: dimension = 9 false; kernel = 6 true', ['dimension lower bound', 'spectrum'])
    >>> from symattn.verifier import verify
    >>> for line in verify(certificate).checked[-2:]:
    ...     print(line)
    dimension = 9: refuted: the dimension is at least 10 (the dimension certificate); the engine said false
    kernel = 6: proved: the kernel is exactly 6 (the spectrum certificate and its gauge check); the engine said true
    >>> certificate = claims_certificate(Architecture.uniform(layers=1, width=1, tokens=2),
    ...                                  ["F_0 = P*X*J/t", "F_2 = P*X*C_1/t"])
    >>> certificate["claim"]
    'symattn check found: F_0 = (1/2)*P*X*J true; F_2 = (1/2)*P*X*C_1 false'
    >>> for line in verify(certificate).checked[-2:]:
    ...     print(line[:72])
    F_0 = (1/2)*P*X*J: consistent at one point: F_0 and the formula agree at
    F_2 = (1/2)*P*X*C_1: refuted: at the certificate's point mod 2147483647,
    """
    from .check.numbers import ClaimEngine, check_number_claim
    from .check.reading import claim_kind, parse_claim

    arch = require_architecture(arch)
    claims = [claims] if isinstance(claims, str) else list(claims)
    if not claims:
        raise SymattnError("no claims to certify; give claims such as 'dimension = 10' or 'F_1 = 0'")
    kinds = [claim_kind(text) for text in claims]
    for text, kind in zip(claims, kinds):  # every claim read before any computation
        if kind == "number":
            parse_claim(text, arch.layers)
    if any(kind != "number" for kind in kinds):
        _refuse_formula_claims(arch, "leading" in kinds)
    _refuse_unsupported(arch, None)
    formulas = {n: _read_formula_claim(arch, text, kind) for n, (text, kind) in enumerate(zip(claims, kinds))
                if kind != "number"}
    engine = ClaimEngine(arch, seed=seed, progress=progress)
    checks = [check_number_claim(engine, text) if kind == "number" else _check_formula(arch, text, kind, seed)
              for text, kind in zip(claims, kinds)]
    if on_checks is not None:  # symattn check prints these: computed once for both
        on_checks(tuple(checks))
    needed = {_CLAIM_PARTS[check.quantity] for check, kind in zip(checks, kinds) if kind == "number"} - {None}
    parts = []
    if needed & {"dimension", "orders"}:
        report = engine.identify_report()
        if report is None:
            raise SymattnError("the identification report behind these claims could not be computed: "
                               f"{engine._identify_error}")
        if "dimension" in needed:
            parts.append(dimension_certificate(arch, result=report.dimension))
        if "orders" in needed:
            parts.append(orders_certificate(arch, result=report.orders_result, seed=seed))
    if "spectrum" in needed:
        parts.append(spectrum_certificate(arch, result=engine.spectrum))
    entries = []
    for n, check in enumerate(checks):
        if n in formulas:
            entries.append(_formula_entry(arch, check, formulas[n], seed, n))
        else:
            entries.append({"quantity": check.quantity, "layer": check.layer, "value": int(check.claimed),
                            "engine_verdict": check.verdict, "text": check.claim, "engine_computed": check.computed,
                            "engine_method": check.method})
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "claims",
        "claim": claims_claim(entries),
        "proves": ("Each part proves what its own 'proves' says. From those numbers the checker decides each "
                   "numeric claim by its own rules: a dimension below the certified lower bound, a kernel above "
                   "the number of parameters minus the certified rank (or other than the kernel the spectrum's "
                   "gauge check decides), an identification order above the certified upper bound are refuted; a "
                   "kernel equal to the one the gauge check decides is proved. A formula claim is refuted when the "
                   "checker's own forward pass and its own evaluation of the formula (given as a tree of "
                   "operations) differ at the claim's integer point mod p: every denominator is prime to p, so the "
                   "rational values at that point differ, and the two sides are not the same polynomial."),
        "does_not_prove": ("Claims the parts do not bound (contact orders, multiplicities, the sign group's order, "
                           "a dimension at or above the certified lower bound, an order at or below the certified "
                           "upper bound) are not decided by the certificate, whatever the engine said. A formula "
                           "that agrees with the coefficient at its point is consistent there, not proved: a false "
                           "formula can agree at one point (at a uniformly random point of GF(p), when the "
                           "difference is not 0 mod p, with probability at most D/p, Schwartz-Zippel, D the "
                           "checker's bound on the degrees; symattn draws the point at random, which the checker "
                           "cannot confirm). For leading(i) the order n_i is symattn's rule, "
                           "recomputed by the checker, and the lower coefficients are compared with 0 at the point "
                           "only."),
        "architecture": _architecture_json(arch),
        "claims": entries,
        "parts": parts,
    }


def claims_claim(entries: list) -> str:
    """The claim of a claims certificate in words: each claim (a formula written by the checker's own :func:`~symattn.verifier.formulas.formula_text`) and the engine's verdict.

    Examples
    --------
    >>> claims_claim([{"quantity": "kernel", "layer": None, "value": 6, "engine_verdict": True},
    ...               {"quantity": "coefficient", "layer": None, "order": 1, "formula": {"zero": [1, 2]},
    ...                "engine_verdict": True}])
    'symattn check found: kernel = 6 true; F_1 = 0 true'
    """
    from .verifier.claims import claims_claim as checker_claim

    return checker_claim(entries)


def _refuse_formula_claims(arch: Architecture, leading: bool) -> None:
    """Refuse, before any computation, what a formula claim's certificate cannot describe."""
    plain = (all(h == 1 for h in arch.heads) and not arch.causal and not arch.residual
             and all(type(component) is Attention for _, _, component in arch.components()))
    if not plain:
        raise CertificateRefused("a certificate of a formula claim describes a plain network (one head per layer, "
                                 "no causal mask, no residual stream, no biases or feed-forward blocks), whose "
                                 "matrices P, What_i and C_i its checker writes down; drop the formula claims or "
                                 "the variant")
    for i, normalizer in enumerate(arch.normalizers, start=1):
        if leading and normalizer.is_lightning:
            raise CertificateRefused(f"layer {i} has lightning attention: it has no leading order, so a leading(i) "
                                     "claim has no certificate")


def _read_formula_claim(arch: Architecture, text: str, kind: str) -> tuple:
    """``(kind, layer, order, formula, names)``: the claim read by the package's parser (nothing executed)."""
    from .check.formulas import read_coefficient_claim
    from .expand import parse_formula_claim

    if kind == "leading":
        layer, lc, formula = parse_formula_claim(arch, text)
        read = kind, layer, lc.order, formula, lc
    else:
        order, formula, names = read_coefficient_claim(arch, text)
        read = kind, None, order, formula, names
    # the checker writes down P, X, H, J, What_i, C_i only: other names the package reads (Vt1, V_1, S_0, ...)
    import sympy as sp

    if not isinstance(formula, sp.ZeroMatrix):
        other = sorted({m.name for m in formula.atoms(sp.MatrixSymbol)} - {"P", "X", "H", "J"}
                       - {f"{kind_}_{i}" for i in range(1, arch.layers + 1) for kind_ in ("What", "C")})
        if other:
            raise CertificateRefused(f"the claim {text!r} uses {', '.join(other)}: a certificate's formula is "
                                     "written in P, X, H, J, What_i and C_i, the matrices its checker writes down; "
                                     "write the claim in those, or drop --certificate")
    return read


def _check_formula(arch: Architecture, text: str, kind: str, seed: int):
    """The engine's check of a formula claim, as :func:`symattn.check.check_claims` makes it."""
    from .check.formulas import check_coefficient_claim, check_leading_claim

    return check_leading_claim(arch, text, seed) if kind == "leading" else \
        check_coefficient_claim(arch, text, seed=seed)


def formula_tree(expr) -> dict:
    """A matrix formula read by :func:`symattn.parsing.matrix_formula` as a tree of operations (plain data).

    The tree is what a claims certificate holds and its checker reads
    (:mod:`symattn.verifier.formulas`): ``{"matrix": name}``, ``{"scalar":
    name}``, ``{"number": "p/q"}``, ``{"zero": [rows, cols]}``, ``{"add":
    [...]}``, ``{"multiply": [...]}`` (in order), ``{"power": [a, n]}``,
    ``{"transpose": a}``, ``{"hadamard": [a, m]}``.

    Raises
    ------
    CertificateRefused
        For a sympy object outside that language.

    Examples
    --------
    >>> import sympy as sp
    >>> P, X = sp.MatrixSymbol("P", 2, 2), sp.MatrixSymbol("X", 2, 3)
    >>> formula_tree(sp.Rational(1, 2) * P * X.T.T)
    {'multiply': [{'number': '1/2'}, {'matrix': 'P'}, {'matrix': 'X'}]}
    >>> formula_tree(sp.HadamardPower(P, 2) + P**3)
    {'add': [{'hadamard': [{'matrix': 'P'}, 2]}, {'power': [{'matrix': 'P'}, 3]}]}
    """
    import sympy as sp

    if isinstance(expr, sp.ZeroMatrix):
        return {"zero": [int(expr.rows), int(expr.cols)]}
    if isinstance(expr, sp.MatrixSymbol):
        return {"matrix": expr.name}
    if isinstance(expr, sp.Symbol):
        return {"scalar": expr.name}
    if isinstance(expr, sp.Rational):
        return {"number": str(expr)}
    if isinstance(expr, (sp.MatAdd, sp.Add, sp.MatMul, sp.Mul)):
        terms = [formula_tree(a) for a in expr.args]
        operation = "add" if isinstance(expr, (sp.MatAdd, sp.Add)) else "multiply"
        return terms[0] if len(terms) == 1 else {operation: terms}
    if isinstance(expr, sp.Transpose):
        return {"transpose": formula_tree(expr.arg)}
    if isinstance(expr, (sp.MatPow, sp.Pow, sp.HadamardPower)) and expr.args[1].is_Integer:
        operation = "hadamard" if isinstance(expr, sp.HadamardPower) else "power"
        return {operation: [formula_tree(expr.args[0]), int(expr.args[1])]}
    raise CertificateRefused(f"the formula's part {expr} ({type(expr).__name__}) has no place in a certificate's "
                             "tree of operations (names, numbers, +, *, integer powers, transposes, hadamard)")


def _residues(matrix, p: int):
    """A sympy matrix of rationals mod ``p`` as lists of residues, or None when a denominator is divisible by ``p``."""
    out = []
    for r in range(matrix.rows):
        row = []
        for c in range(matrix.cols):
            value = matrix[r, c]
            if int(value.q) % p == 0:
                return None
            row.append(int(value.p) * pow(int(value.q), -1, p) % p)
        out.append(row)
    return out


def _formula_entry(arch: Architecture, check, read: tuple, seed: int, index: int, tries: int = 20) -> dict:
    """A formula claim as a claims certificate holds it: the tree, and the engine's values at a random point mod p.

    The point's coordinates are residues mod :data:`FORMULA_PRIME` drawn from
    ``seed`` and the claim's position.  The engine computes the compared
    coefficient there exactly over Q (:func:`symattn.expand.expand`, with
    layer ``i``'s keys at 0 for ``leading(i)``) and the formula
    (:meth:`LeadingCoefficient.evaluate <symattn.expand.LeadingCoefficient.evaluate>`);
    for a claim it found false, points are drawn until the two differ mod p.
    """
    import random
    import sympy as sp
    from dataclasses import replace

    from .expand import curve_symbols, expand

    kind, layer, order, formula, names = read
    p, N = FORMULA_PRIME, order + 1
    base = curve_symbols(arch)
    X_symbols = arch.input_symbols()
    rng = random.Random(f"formula claim {seed} {index}")
    blocks = [(f"{kind_}_{i}", matrix) for i in range(1, arch.layers + 1)
              for kind_, matrix in (("Q", base.Q[i - 1]), ("K", base.K[i - 1]), ("V", base.V[i - 1]))]
    for _ in range(tries):
        values = {name: [[rng.randrange(p) for _ in range(matrix.cols)] for _ in range(matrix.rows)]
                  for name, matrix in blocks}
        X = [[rng.randrange(p) for _ in range(X_symbols.cols)] for _ in range(X_symbols.rows)]
        point = {matrix[r, c].name: values[name][r][c] for name, matrix in blocks
                 for r in range(matrix.rows) for c in range(matrix.cols)}
        point.update({X_symbols[r, c].name: X[r][c] for r in range(X_symbols.rows) for c in range(X_symbols.cols)})
        options = dict(truncation=max(N, 2), max_params=10**6, max_truncation=10**6)  # (expand keeps F_0, F_1 at least)
        full = expand(arch, point=point, **options)
        series = [sp.Matrix(full[m]) for m in range(N)]
        if kind == "leading":  # what F owes to layer i's scores: F - F|Kt_i=0
            without = expand(arch, point={**point, **{s.name: 0 for s in base.K[layer - 1]}}, **options)
            series = [a - sp.Matrix(without[m]) for m, a in enumerate(series)]
        if isinstance(formula, sp.ZeroMatrix):
            claimed = sp.zeros(*formula.shape)
        else:
            parameters = Parameters(*(tuple(sp.Matrix(values[f"{b}_{i}"]) for i in range(1, arch.layers + 1))
                                      for b in "QKV"))
            claimed = replace(names, matrix_form=formula).evaluate(parameters, sp.Matrix(X), form="matrix")
        coefficient, claimed_residues = _residues(series[order], p), _residues(claimed, p)
        below = [_residues(m, p) for m in series[:order]] if kind == "leading" else []
        if coefficient is None or claimed_residues is None or None in below:
            continue  # a denominator divisible by p: another point
        differs = coefficient != claimed_residues or any(any(any(row) for row in m) for m in below)
        if check.verdict is False and not differs:
            continue  # the engine found the claim false: a point that shows it
        break
    else:
        if coefficient is None or claimed_residues is None or None in below:
            raise SymattnError(f"no point mod {p} in {tries} draws where the claim {check.claim!r} is defined")
    return {"quantity": kind, "layer": layer, "order": order, "formula": formula_tree(formula),
            "engine_verdict": check.verdict, "text": check.claim, "engine_computed": check.computed,
            "engine_method": check.method, "prime": p, "truncation": N,
            "normalizers": [_taylor_strings(arch, i, N) for i in range(1, arch.layers + 1)],
            "point": values, "input": X, "values": {"coefficient": coefficient, "formula": claimed_residues}}


def write_claims_certificate(arch: Architecture, path, claims, seed: int = 0, progress: bool = False,
                             on_checks=None) -> dict:
    """Write :func:`claims_certificate` to ``path`` as JSON (atomically) and return it.

    Examples
    --------
    >>> import tempfile, os
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "claims.json")
    >>> certificate = write_claims_certificate(Architecture.uniform(layers=1, width=1, tokens=2), path,
    ...                                        ["dimension = 2"])
    >>> verify(path).verified, certificate["claim"]
    (True, 'symattn check found: dimension = 2 true')
    """
    return _write(lambda: claims_certificate(arch, claims, seed=seed, progress=progress, on_checks=on_checks), path)


def _given_run(run, compute, options: dict, expected: type, name: str, what: str, curve_text: str | None = None):
    """``run``, or ``compute(**options)`` when it is ``None``: checked to be the ``expected`` result, along the curve.

    ``name`` is the argument (``result``, ``report``), ``what`` the result it
    must be (``the Spectrum of decay_spectrum``); with ``curve_text`` its
    ``curve`` must be that curve.
    """
    if run is None:
        run = compute(**options)
    elif options:
        raise SymattnError(f"options {sorted(options)} set how {what} is computed; with {name}= it is given: "
                           "pass one or the other")
    if not isinstance(run, expected):
        raise SymattnError(f"{name} must be {what}, got {type(run).__name__}")
    if curve_text is not None and run.curve != curve_text:
        raise SymattnError(f"the {name} was computed along {run.curve}, not along {curve_text}: pass the "
                           f"{name}'s curve")
    return run


def _feed_forward_blocks(arch: Architecture) -> list:
    """Each layer's feed-forward component, or None."""
    from .model.feedforward import FeedForward

    blocks = [None] * arch.layers
    for layer, _, component in arch.components():
        if isinstance(component, FeedForward):
            blocks[layer - 1] = component
    return blocks


def _architecture_json(arch: Architecture) -> dict:
    """The architecture as a certificate writes it (and the checker reads it)."""
    from .model.bias import BiasedAttention

    out = {"widths": list(arch.widths), "score_ranks": list(arch.score_ranks), "tokens": arch.tokens,
           "heads": list(arch.heads), "causal": arch.causal, "residual": arch.residual,
           "normalizers": [n.name for n in arch.normalizers]}
    if any(isinstance(component, BiasedAttention) for _, _, component in arch.components()):
        out["bias"] = True
    blocks = _feed_forward_blocks(arch)
    if any(blocks):
        out["ffn"] = [block.hidden if block else 0 for block in blocks]
    return out


def _activation_strings(arch: Architecture, truncation: int) -> list | None:
    """The feed-forward blocks' activations as a certificate writes them (``None`` without any)."""
    blocks = _feed_forward_blocks(arch)
    if not any(blocks):
        return None
    out = []
    for layer, block in enumerate(blocks, start=1):
        if block is None:
            out.append(None)
            continue
        activation = block.activation
        if activation.is_polynomial:
            coefficients = [Fraction(int(c.p), int(c.q)) for c in activation.polynomial_coefficients]
        else:
            coefficients = _rational_taylor(activation, layer, truncation, "activation", _ACTIVATION_EXAMPLES)
        out.append({"name": activation.name, "expression": str(activation.expr),
                    "polynomial": bool(activation.is_polynomial), "taylor": [str(c) for c in coefficients]})
    return out


def _parameter_names(arch: Architecture) -> list:
    """``Q_1[0,0]``, ...: the native parameters in the Jacobian's column order."""
    labels = {key: arch.block_label(key) for key, _ in arch.blocks()}
    return [f"{labels[key]}[{r},{c}]" for key, (rows, cols) in arch.blocks() for r in range(rows) for c in range(cols)]


def _write(build, path) -> dict:
    """The certificate ``build()`` makes, as indented JSON at ``path``, written atomically.

    ``path`` is checked first (:func:`symattn._files.check_output_path`: a new
    name or a regular file in an existing folder), before the computation.
    """
    import json

    from ._files import check_output_path, write_atomically

    check_output_path(path)
    certificate = build()
    text = json.dumps(certificate, indent=1)
    write_atomically(Path(path), lambda temporary: temporary.write_text(text + "\n", encoding="utf-8"))
    return certificate


#: What an observability certificate proves, and what it does not (written into every such certificate).
OBSERVE_PROVES = (
    "The point is an integer point of the collapsed set (the checker reads it: Q_i = 0 for a score collapse, "
    "V_i = 0 for a value collapse, every bank input x 1^T for identical tokens). Along the input scaling "
    "X -> eps X, for each block listed with a witness: r rows (input, row, token) and r of the block's native "
    "columns that stay on the set (a collapsed Q or V is held fixed) give an r x r minor of the native Jacobian "
    "series whose r pivots mod (p, eps^N) have valuations below N: the minor is nonzero over Q[[eps]], so the "
    "real Jacobian of the outputs on the bank in the block's directions along the set has rank >= r at the "
    "points (theta, eps X) with small eps != 0, hence at generic points of the set: the output sees at least r "
    "directions of the block on the set. A block of scores is certified observable when r equals its upper "
    "bound, the sum over its heads left on the set of a(2d - a) (d = d_(i-1), a = min(a_i, d)): the output "
    "depends on Q and K only through K^T Q, a d x d matrix of rank <= a, whose variety has that dimension "
    "(an elementary argument, not checked by the checker). With biases (scaled with the input, a constant "
    "feature of every token) the scores are [x; 1]^T M [x; 1] with M = [K b_K]^T [Q b_Q], (d + 1) x (d + 1) "
    "of rank <= a, or its last column [K b_K]^T b_Q in a head whose Q is held at 0; under softmax its last "
    "row (one number added to every score of a query) does not change the weights and is dropped: the bound "
    "is the sum over the heads of m(rows + cols - m), m = min(a, rows, cols), the dimension of those "
    "matrices. A feed-forward block is certified observable when r is the number of its columns on the set. "
    "No probability enters.")
OBSERVE_DOES_NOT_PROVE = (
    "It does not prove that a block is unobservable: for a block listed with rank 0 the checker recomputes its "
    "columns on the whole bank at this point mod (p, eps^N) and fails on a nonzero entry, a consistency check "
    "that can refute the verdict, never prove it (symattn's verdict rests on its dependency graph). It does "
    "not prove an upper bound on any rank other than the stated ones of the score and feed-forward blocks: the "
    "values' rank is the rank of the V (and b_V) columns alone, a lower bound, not symattn's rank added to the "
    "scores, and carries no verdict. Nothing is said about the fiber's dimension or the normal directions.")

#: The events an observability certificate describes.
OBSERVE_EVENTS = ("score_collapse", "value_collapse", "identical_tokens")


def observe_claim(events: list, blocks: list) -> str:
    """The claim of an observability certificate in words (the checker writes it from its own reading).

    Examples
    --------
    >>> observe_claim(["scores:1"], [{"block": "scores:2", "status": "unobservable", "rank": 0},
    ...                              {"block": "values", "status": "seen", "rank": 4}])
    'on the set scores:1, at its point, along X -> eps X: scores:2 shows no direction on the bank (unobservable, a consistency check only); values has rank at least 4 on its columns'
    """
    words = {"observable": "is observable: rank {rank}, its upper bound, on its columns",
             "seen": "has rank at least {rank} on its columns",
             "unobservable": "shows no direction on the bank (unobservable, a consistency check only)"}
    return (f"on the set {', '.join(events) or '(generic)'}, at its point, along X -> eps X: "
            + "; ".join(f"{entry['block']} " + words[entry["status"]].format(rank=entry["rank"]) for entry in blocks))


def _refuse_observe(arch: Architecture, events) -> tuple:
    """The events, validated; refused (naming them) when a certificate cannot describe them, before computing."""
    from .observe.events import validated_events

    _refuse_unsupported(arch, None)
    if any(n.is_lightning for n in arch.normalizers):
        raise CertificateRefused("lightning attention is a comparison case: observe certifies normalized "
                                 "attention only")
    events = validated_events(arch, events)
    other = [e.name for e in events if e.kind not in OBSERVE_EVENTS]
    if other:
        raise CertificateRefused(f"event {', '.join(other)}: an observability certificate describes score "
                                 "collapse (scores:I[:H]), value collapse (values:I[:H]) and identical tokens; "
                                 "value ranks and bias inputs are not certified yet")
    return events


def check_observe_certifiable(arch: Architecture, events=()) -> None:
    """Refuse, with a :class:`CertificateRefused` naming it, an observability certificate it cannot describe.

    Called before any computation: the refusals of :func:`check_certifiable`,
    lightning attention, and events other than score collapse, value
    collapse and identical tokens (value ranks, bias inputs).

    Examples
    --------
    >>> check_observe_certifiable(Architecture.uniform(layers=2), ["scores:1", "identical-tokens"])
    >>> check_observe_certifiable(Architecture.uniform(layers=2, width=2), ["value-rank:1:1", "bias"])
    Traceback (most recent call last):
    ...
    symattn.certificates.CertificateRefused: event bias, value-rank:1:1: an observability certificate describes score collapse (scores:I[:H]), value collapse (values:I[:H]) and identical tokens; value ranks and bias inputs are not certified yet
    """
    _refuse_observe(require_architecture(arch), events)


def _score_upper_bound(arch: Architecture, layer: int, fixed: set) -> int:
    """The dimension of the matrices through which alone the output sees the scores of ``layer`` (:data:`OBSERVE_PROVES`).

    Per head, ``m (rows + cols - m)`` with ``m = min(a, rows, cols)``: the
    ``rows x cols`` matrices of rank ``<= a``.  Without biases ``K^T Q``
    (``d x d``, ``d = d_(i-1)``; nothing with ``Q`` held at 0); with biases
    ``[K b_K]^T [Q b_Q]`` (``d + 1`` square; its last column with ``Q``
    held), less its last row under softmax.  The checker's own
    :func:`symattn.verifier.observe.score_upper_bound` computes the same numbers.
    """
    from .model.bias import BiasedAttention

    d, a = arch.widths[layer - 1], arch.score_ranks[layer - 1]
    bias = isinstance(arch.attention[layer - 1], BiasedAttention)
    normalizer = arch.normalizers[layer - 1]
    softmax = not normalizer.is_lightning and str(normalizer.expr) == "exp(x)"
    rows = d + 1 if bias and not softmax else d
    total = 0
    for h in range(1, arch.attention[layer - 1].heads + 1):
        if arch.block_key("Q", layer, h) in fixed:
            cols = 1 if bias else 0
        else:
            cols = d + 1 if bias else d
        m = min(a, rows, cols)
        total += m * (rows + cols - m)
    return total


def observe_certificate(arch: Architecture, events=(), result=None, seed: int = 0, **options) -> dict:
    """A certificate (kind ``"observability"``) of the exact ranks of :func:`~symattn.observe.rank_check` on a set.

    Reproduces the run's point of the collapsed set and bank (its first
    prime, ``seed``, its bank size and truncation), computes the native
    Jacobian series along ``X -> eps X`` there, and for every block that is
    not collapsed finds a witness minor on the block's columns that stay on
    the set by :func:`least_valuation_pivots` (the values: the ``V`` columns
    alone, whose rank is at least the run's rank of the values, the rank
    they add to the scores).  A block whose columns are all 0 mod
    ``eps^N`` is listed with its columns, for the checker's consistency check.  What it proves: :data:`OBSERVE_PROVES`.

    Parameters
    ----------
    arch : Architecture
    events : iterable of Event or str
        Score collapse, value collapse and identical tokens.
    result : RankCheck, optional
        The run to certify, computed with this ``seed`` and these events
        (default: :func:`rank_check` with ``seed`` and ``options``, unconfirmed).
    seed : int

    Returns
    -------
    dict
        The JSON document (schema ``docs/certificate.schema.json``).

    Raises
    ------
    CertificateRefused
        Before any computation: value-rank and bias events, components the
        checker does not implement, normalizers and activations without
        rational Taylor coefficients, lightning attention.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> certificate = observe_certificate(Architecture.uniform(layers=2, width=2, rank=1), ["scores:1"])
    >>> [(entry["block"], entry["status"], entry["rank"]) for entry in certificate["blocks"]]
    [('scores:2', 'unobservable', 0), ('values', 'seen', 4)]
    >>> from symattn.verifier import verify
    >>> verify(certificate).verified
    True

    With biases (softmax: the scores see ``K^T [Q b_Q]``, ``2 x 3`` of rank
    1) and a feed-forward block (observable: every one of its columns seen):

    >>> arch = Architecture.uniform(layers=1, width=2, rank=1, bias=True, ffn=2, activation="tanh")
    >>> certificate = observe_certificate(arch, ["identical-tokens"])
    >>> [(entry["block"], entry["status"], entry["rank"]) for entry in certificate["blocks"]]
    [('scores:1', 'unobservable', 0), ('feed-forward:1', 'observable', 12), ('values', 'seen', 6)]
    >>> certificate = observe_certificate(arch)
    >>> [(entry["block"], entry["status"], entry["rank"], entry["upper_bound"]) for entry in certificate["blocks"]]
    [('scores:1', 'observable', 4, 4), ('feed-forward:1', 'observable', 12, 12), ('values', 'seen', 6, None)]
    >>> verify(certificate).verified
    True
    """
    from .curves import input_scaling
    from .observe.ranks import RankCheck, columns_on_set, rank_check, set_sample

    arch = require_architecture(arch)
    events = _refuse_observe(arch, events)
    if result is None:
        options.setdefault("confirm", False)
        result = rank_check(arch, events, seed=seed, **options)
    elif options:
        raise SymattnError(f"options {sorted(options)} set how the ranks are computed; with result= the run is "
                           "given: pass one or the other")
    if not isinstance(result, RankCheck):
        raise SymattnError(f"result must be the RankCheck of rank_check, got {type(result).__name__}")
    if tuple(result.events) != tuple(events):
        raise SymattnError(f"the result is on the set {[e.name for e in result.events]}, not "
                           f"{[e.name for e in events]}: pass the result's events")
    if result.architecture != arch.to_json():
        raise SymattnError("the result was computed for another architecture: pass the result's architecture")
    p, N = int(result.primes[0]), int(result.truncation)
    point, coefficient_values, bank = set_sample(arch, events, result.bank, p, seed)
    J = jacobian_series(arch, input_scaling(), bank, point, p, N, coefficient_values)
    on_set, names = columns_on_set(arch, events), _parameter_names(arch)
    held = {key for e in events if e.on_parameters
            for key in [arch.block_key("Q" if e.kind == "score_collapse" else "V", e.layer, h)
                        for h in ([e.head] if e.head else range(1, arch.attention[e.layer - 1].heads + 1))]}
    collapsed = {e.block for e in events if e.on_parameters and (e.whole_layer or e.block == "values")}
    per_input = arch.widths[-1] * arch.tokens
    entries = []
    for block in result.on_set:
        if block in collapsed:
            continue
        own = on_set[block]
        pivots = least_valuation_pivots(J[:, own, :], p) if own else []
        if block != "values" and len(pivots) != result.on_set[block]:  # the same matrix: the same rank
            raise SymattnError(f"{block}: the witness search finds rank {len(pivots)} on the set, the run "
                               f"{result.on_set[block]}: this is a bug in symattn, please report it")
        if not pivots:  # every column is 0 mod eps^N on the whole bank: what the checker recomputes
            entries.append({"block": block, "status": "unobservable", "rank": 0,
                            "columns": [names[c] for c in own]})
            continue
        if block.startswith("scores:"):
            bound = _score_upper_bound(arch, int(block.split(":")[1]), held)
        elif block.startswith("feed-forward:"):  # every direction of the block: its columns on the set
            bound = len(own)
        else:  # the values: the rank of the V columns alone, no verdict
            bound = None
        entries.append({
            "block": block, "status": "observable" if bound == len(pivots) else "seen", "rank": len(pivots),
            "upper_bound": bound,
            "witness": {"rows": [[r // per_input, r % per_input // arch.tokens, r % arch.tokens] for r, _, _ in pivots],
                        "columns": [names[own[c]] for _, c, _ in pivots],
                        "valuations": [v for _, _, v in pivots]}})
    document = _document(arch, input_scaling(), p, point, bank, [], all_directions(arch)[0], N)
    del document["witness"]
    names_of_events = [e.name for e in events]
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "observability",
        "claim": observe_claim(names_of_events, entries),
        "proves": OBSERVE_PROVES,
        "does_not_prove": OBSERVE_DOES_NOT_PROVE,
        **document,
        "events": names_of_events,
        "blocks": entries,
        "produced_by": {"program": "symattn", "version": __version__, "function": "rank_check", "seed": int(seed),
                        **result.to_json()},
    }


def write_observe_certificate(arch: Architecture, path, events=(), result=None, **options) -> dict:
    """Write :func:`observe_certificate` to ``path`` as JSON (atomically) and return it.

    Examples
    --------
    >>> import tempfile, os
    >>> from symattn.verifier import verify
    >>> path = os.path.join(tempfile.mkdtemp(), "observe.json")
    >>> certificate = write_observe_certificate(Architecture.uniform(layers=2, width=2, rank=1), path, ["scores:2"])
    >>> verify(path).verified, [entry["status"] for entry in certificate["blocks"]]
    (True, ['observable', 'seen'])
    """
    return _write(lambda: observe_certificate(arch, events, result=result, **options), path)
