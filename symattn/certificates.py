"""Certificates anyone can re-check without trusting symattn (issue 27): the certified dimension.

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

Examples
--------
>>> from symattn.model import Architecture
>>> certificate = dimension_certificate(Architecture.uniform(layers=1, width=2, tokens=2))
>>> certificate["claim"], certificate["prime"], certificate["truncation"]
('the dimension of the function space of this architecture is at least 7', 1048573, 3)
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
from .jacobian import all_directions, gauge_slice, jacobian_series, random_bank, random_point
from .model import Architecture, require_architecture
from .model.components import Attention, CausalMask, Residual
from .verifier.check import SCHEMA, VERSION

__all__ = ["CertificateRefused", "check_certifiable", "dimension_certificate", "write_dimension_certificate", "least_valuation_pivots"]

#: What a dimension certificate proves, and what it does not, in words (written into every certificate).
PROVES = ("A nonzero r x r minor of the Jacobian series J(eps) mod (p, eps^N), at an integer point and integer "
          "inputs, is the reduction of a minor over Z_(p)[[eps]] whose Smith valuations (all below N) are exact, "
          "hence a nonzero analytic function of eps: the real Jacobian of the network's outputs on the bank, "
          "with respect to the curve's coordinates, has rank >= r at the points of the curve with small eps != 0. "
          "Those coordinates are a reparametrization of the native parameters for eps != 0, so the function "
          "space (the image of the parameter map) has dimension >= r. No probability enters: a lucky or unlucky "
          "random draw can only make the bound lower, never wrong.")
DOES_NOT_PROVE = ("It does not prove an upper bound: that the dimension is at most the number of effective "
                  "parameters (the native parameters minus the gauge orbit's dimension) is a separate argument "
                  "(the function factors through the effective parameters; see MATH.md section 2), not "
                  "checked here. It does not check that the listed Taylor coefficients are those of the named "
                  "normalizer, except for the normalizers the checker knows (exp, cosh, exp(x**2), 1 + x**2).")


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

    Called before any computation: components other than attention (with
    heads), a causal mask and a residual stream (biases, feed-forward
    blocks); generic normalizers and normalizers whose Taylor coefficients
    are not rational; polynomial curves.

    Examples
    --------
    >>> check_certifiable(Architecture.uniform(layers=2, heads=2, causal=True))
    >>> check_certifiable(Architecture.uniform(layers=1, bias=True))
    Traceback (most recent call last):
    ...
    symattn.certificates.CertificateRefused: layer 1 has a component BiasedAttention (attention) that the certificate checker does not implement yet; it implements attention (with heads), a causal mask and a residual stream
    """
    _refuse_unsupported(require_architecture(arch), curve)


def _refuse_unsupported(arch: Architecture, curve) -> None:
    """Refuse what the checker does not implement, naming it, before any computation."""
    for layer, _, component in arch.components():
        if type(component) not in (Attention, CausalMask, Residual):
            raise CertificateRefused(f"layer {layer} has a component {type(component).__name__} ({component.kind}) "
                                     "that the certificate checker does not implement yet; it implements attention "
                                     "(with heads), a causal mask and a residual stream")
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


def _rational_taylor(normalizer, layer: int, degree: int) -> list:
    """The Taylor coefficients ``c_0 .. c_degree`` of ``s/s(0)`` as Fractions; refused when one is not rational."""
    coefficients = []
    for n, c in enumerate(normalizer.taylor(degree)):
        if not c.is_Rational:
            raise CertificateRefused(
                f"normalizer {normalizer.name} (layer {layer}) has Taylor coefficients that are not rational "
                f"(e.g. c_{n} = {c}); a certificate lists them as exact rationals: use a normalizer with "
                "rational Taylor coefficients (softmax, cosh, 1 + x**2, ...)")
        coefficients.append(Fraction(int(c.p), int(c.q)))
    return coefficients


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
        The run to certify (default: :func:`function_space_dimension` with the options below).
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
        generic, a component the checker does not implement (biases,
        feed-forward blocks), or a polynomial curve.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, normalizer="cosh")
    >>> certificate = dimension_certificate(arch)
    >>> certificate["rank"], certificate["witness"]["valuations"], certificate["curve"]["powers"]["Q_1"]
    (10, [0, 0, 0, 0, 4, 4, 4, 12, 12, 12], 1)
    >>> certificate["witness"]["rows"][0], certificate["witness"]["columns"][0]     # (input, row, token)
    ([0, 0, 0], 'V_2[0,0]')
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
    p = result.prime
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
    labels = {key: arch.block_label(key) for key, _ in arch.blocks()}
    for attempt, directions in enumerate((gauge_slice(arch), all_directions(arch))):
        if attempt and result.lower >= arch.param_count:
            break
        J = jacobian_series(arch, route_curve, bank, point, p, truncation, coefficient_values,
                            directions=directions, coordinates="curve")
        pivots = least_valuation_pivots(J, p)
        if len(pivots) >= result.lower:
            break
    else:  # cannot happen: the uncompressed Jacobian has every direction the compressed one had
        raise SymattnError(f"the witness search found {len(pivots)} pivots below eps^{truncation}, fewer than the "
                           f"certified rank {result.lower}: this is a bug in symattn, please report it")
    # the certificate's truncation: just past the deepest pivot (each is exact below any N above it)
    truncation = 1 + max((v for _, _, v in pivots), default=0)
    normalizers = [_taylor_strings(arch, i, truncation) for i in range(1, arch.layers + 1)]
    names = {}
    for key, chosen in directions[0].items():
        for (r, c), k in np.ndenumerate(chosen):
            if k >= 0:
                names[int(k)] = f"{labels[key]}[{r},{c}]"
    per_input = arch.widths[-1] * arch.tokens
    rank = len(pivots)
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "dimension lower bound",
        "claim": f"the dimension of the function space of this architecture is at least {rank}",
        "proves": PROVES,
        "does_not_prove": DOES_NOT_PROVE,
        "architecture": {"widths": list(arch.widths), "score_ranks": list(arch.score_ranks),
                         "tokens": arch.tokens, "heads": list(arch.heads), "causal": arch.causal,
                         "residual": arch.residual, "normalizers": [n.name for n in arch.normalizers]},
        "normalizers": normalizers,
        "curve": {"name": route_curve.describe(arch.layers), "input_power": int(route_curve.input_power),
                  "powers": {labels[key]: int(route_curve.block_power(*key[:2]) or 0) for key, _ in arch.blocks()}},
        "prime": int(p),
        "truncation": int(truncation),
        "point": {labels[key]: np.asarray(point[key]).tolist() for key, _ in arch.blocks()},
        "bank": np.asarray(bank).tolist(),
        "parameters": [f"{labels[key]}[{r},{c}]" for key, (rows, cols) in arch.blocks()
                       for r in range(rows) for c in range(cols)],
        "witness": {
            "rows": [[row // per_input, row % per_input // arch.tokens, row % arch.tokens] for row, _, _ in pivots],
            "columns": [names[col] for _, col, _ in pivots],
            "valuations": [v for _, _, v in pivots],
        },
        "rank": rank,
        "produced_by": {"program": "symattn", "version": __version__, "function": "function_space_dimension",
                        "seed": int(result.seed), "bank_size": int(result.bank),
                        "engine_truncation": int(result.truncation), "lower": int(result.lower),
                        "upper": int(result.upper), "upper_reason": result.upper_reason, "method": result.method},
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
    import json

    from ._files import write_atomically

    certificate = dimension_certificate(arch, result=result, **options)
    text = json.dumps(certificate, indent=1)
    write_atomically(Path(path), lambda temporary: temporary.write_text(text + "\n", encoding="utf-8"))
    return certificate
