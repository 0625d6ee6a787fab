"""Checks of the leading coefficients against the entrywise expansion, and of claimed matrix formulas.

:func:`verify_leading_coefficient` compares the matrix forms of
:func:`~symattn.expand.leading_coefficient` with :func:`~symattn.expand.expand`
(at random integer points, or as a symbolic proof);
:func:`check_formula_claim` does the same for a claim
``"leading(i) = <matrix formula>"`` read by
:func:`symattn.parsing.matrix_formula`.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import sympy as sp

from ..algebra.degrees import DegreeBound
from ..algebra.exactseries import PolynomialSeriesDomain, from_fmpq, to_fmpq
from ..algebra.matrix_expressions import object_array
from ..curves import collapse
from ..errors import DomainError, SymattnError
from ..jacobian import degree_bound
from ..model import Architecture, Parameters, require_seed
from ..parsing import matrix_formula, to_sympy
from .expansions import _series_coefficients, expand
from .leading import LeadingCoefficient, leading_coefficient
from .names import _check_arch, _normalizer_symbols, curve_symbols
from .sizes import MAX_TERMS


# -- verification ----------------------------------------------------------------------------------
def _formula_degree(lc: "LeadingCoefficient", generic: bool) -> int:
    """Total degree bound of both forms of the formula in (Qt, Kt, Vt, X, c) (max-plus evaluation)."""
    def convert(value):
        value = to_sympy(value)
        if value.is_Symbol:
            return DegreeBound(1 if generic or not value.name.startswith("c_") else 0)
        return DegreeBound.of(value)

    env = {}
    for s, m in lc.environment().items():
        array = np.empty(m.shape, dtype=object)
        for index in np.ndindex(*m.shape):
            array[index] = DegreeBound(1)
        env[s] = array
    degrees = []
    for effective in (False, True) if lc.matrix_form is None else (False, True, "matrix"):
        array = lc._evaluate_in_ring(convert, env, {}, effective)
        degrees.append(max(v.d if isinstance(v, DegreeBound) else 0 for v in array.flat))
    return int(max(0, *degrees))


def _random_point(arch: Architecture, rng: random.Random, radius: int, coefficient_symbols) -> dict:
    point = {}
    base = curve_symbols(arch)
    for m in (*base.Q, *base.K, *base.V, arch.input_symbols()):
        for s in m:
            point[s.name] = sp.Integer(rng.randint(-radius, radius))
    for s in coefficient_symbols:
        point[s.name] = sp.Integer(rng.randint(-radius, radius))
    return point


def _verify_symbolic(lc: LeadingCoefficient, max_terms: int):
    """Exact comparison in one polynomial ring: a proof (see :func:`verify_leading_coefficient`)."""
    from ..verdicts import CheckResult, Counterexample  # (not symattn.check, which imports this module)

    used, layer, n = lc.architecture, lc.layer, lc.order
    base = curve_symbols(used)
    X = used.input_symbols()
    ring = sorted({s for m in (*base.Q, *base.K, *base.V, X) for s in m}
                  | set(_normalizer_symbols(used, n + 1).values()), key=lambda s: s.name)
    zero_keys = {s.name: 0 for s in base.K[layer - 1]}
    domain, full, _ = _series_coefficients(used, collapse(), n + 1, {}, max_terms, ring)
    other, collapsed, _ = _series_coefficients(used, collapse(), n + 1, zero_keys, max_terms, ring)
    if not (isinstance(domain, PolynomialSeriesDomain) and isinstance(other, PolynomialSeriesDomain)):
        raise DomainError("the symbolic verification needs polynomial data over Q (rational Taylor coefficients)")
    convert = domain._convert
    env = {s: object_array(m, convert) for s, m in lc.environment().items()}
    claimed = lc._evaluate_in_ring(convert, env, {}, effective=False)
    claimed_effective = lc._evaluate_in_ring(convert, env, {}, effective=True)
    zero = np.zeros(claimed.shape, dtype=object)
    checks = [(m, zero, "0") for m in range(n)] + [(n, claimed, "the formula"),
                                                  (n, claimed_effective, "the effective formula")]
    if lc.matrix_form is not None:
        checks.append((n, lc._evaluate_in_ring(convert, env, {}, effective="matrix"), "the matrix form"))
    for m, want, what in checks:
        got = full[:, :, m] - collapsed[:, :, m]
        for (r, c), value in np.ndenumerate(got):
            if convert(want[r, c]) != convert(value):
                difference = convert(want[r, c]) - convert(value)
                rng = random.Random(0)
                tries = 0
                while True:  # a point where the difference is nonzero, small coordinates first
                    tries += 1
                    bound = 1 if tries <= 10 else 2 if tries <= 20 else 3 if tries <= 30 else 50
                    values = [sp.Integer(rng.randint(-bound, bound)) for _ in ring]
                    if difference(*[to_fmpq(v) for v in values]) != 0:
                        break
                point = tuple((s.name, str(v)) for s, v in zip(ring, values))
                at = [to_fmpq(v) for v in values]
                return CheckResult(
                    False, f"symbolic, in Q[symbols]: F_{m} - F_{m}|Kt_{layer}=0 differs from {what} at entry "
                    f"({r + 1}, {c + 1})", 0.0,
                    Counterexample(point, (r, c), str(from_fmpq(convert(want[r, c])(*at))),
                                   str(from_fmpq(convert(value)(*at)))),
                    "leading coefficient formula", f"F_{m} - F_{m}|Kt_{layer}=0", 0, None, None)
    method = (f"symbolic proof: F_0..F_{n} with every parameter, input entry and generic c_j a symbol, "
              f"computed with and without Kt_{layer} by one forward pass over truncated series with "
              f"coefficients in Q[{len(ring)} symbols] (python-flint), and the matrix formula evaluated in the "
              f"same ring: F_m - F_m|Kt_{layer}=0 = 0 for m < {n} and = the formula (through the tokens, "
              f"through P and What_i, and in H, J, C_i) for m = {n}, exactly")
    return CheckResult(True, method, 0.0, None, "leading coefficient formula", f"F_{n} - F_{n}|Kt_{layer}=0",
                       0, None, None)


def verify_leading_coefficient(arch: Architecture, layer: int, normalizer=None, points: int = 2,
                               seed: int = 0, radius: int = 2**20, symbolic: bool = False,
                               candidate: LeadingCoefficient | None = None, max_terms: int = MAX_TERMS):
    """Compare :func:`leading_coefficient` with the entrywise expansion of :func:`expand`.

    Checks that ``F_n`` for ``n < n_i`` does not depend on layer ``i``'s scores
    and that ``F_{n_i} - F_{n_i}|_{Kt_i = 0}`` equals the matrix formula:

    * ``symbolic=False`` (default): exactly over Q at ``points`` random integer
      points (parameters, input, generic ``c_j``) drawn from ``[-radius, radius]``.
      A false formula is caught with probability at least ``1 - (D / (2 radius + 1))^points``
      (Schwartz-Zippel; ``D`` bounds the degree of the difference); a mismatch
      is a certain counterexample.
    * ``symbolic=True``: a proof.  The expansion with every parameter,
      input entry and generic ``c_j`` a symbol and the formula are computed
      in one polynomial ring over Q (python-flint) and compared exactly.
      Only for small sizes (``max_terms`` guards the size).

    ``candidate`` checks another formula (a :class:`LeadingCoefficient`, e.g.
    a modified one) instead of :func:`leading_coefficient`'s.

    Returns
    -------
    symattn.verdicts.CheckResult

    Examples
    --------
    >>> from symattn.normalizers import Normalizer
    >>> arch = Architecture.uniform(layers=2, width=2, tokens=3)
    >>> result = verify_leading_coefficient(arch, 2, normalizer=Normalizer.generic(1), points=1)
    >>> result.verdict, result.bound < 1e-4
    (True, True)
    """
    _check_arch(arch)
    seed = require_seed(seed)
    from ..verdicts import CheckResult, Counterexample  # (not symattn.check, which imports this module)

    lc = leading_coefficient(arch, layer, normalizer) if candidate is None else candidate
    used = lc.architecture
    n = lc.order
    generic = [s for s in lc.coefficients if isinstance(s, sp.Symbol)]
    zero_keys = {s.name: 0 for s in curve_symbols(used).K[layer - 1]}
    if symbolic:
        return _verify_symbolic(lc, max_terms)

    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1:
        raise SymattnError(f"points must be a positive integer, got {points!r}")
    rng = random.Random(seed)
    # the constants of the normalizer keep their values over Q: only generic c_j are variables
    expansion_degree = degree_bound(used, collapse(), n + 1, variable_constants=False)
    degree = max(_formula_degree(lc, bool(generic)), expansion_degree)
    size = 2 * radius + 1
    all_coefficients = sorted(set(_normalizer_symbols(used, n + 1).values()), key=lambda s: s.name)
    def mismatch(point):
        """``(m, entry, want, got, what)`` of the first disagreement at ``point``, or None."""
        full = expand(used, truncation=n + 1, point=point, max_params=10**6, max_truncation=10**6)
        collapsed = expand(used, truncation=n + 1, point={**point, **zero_keys}, max_params=10**6,
                           max_truncation=10**6)
        pairs = [(m, sp.zeros(*full[m].shape), full[m] - collapsed[m]) for m in range(n)]
        base = curve_symbols(used)
        params = Parameters(*(tuple(m.xreplace({s: point[s.name] for s in m.free_symbols}) for m in blocks)
                              for blocks in (base.Q, base.K, base.V)))
        X = used.input_symbols()
        X = X.xreplace({s: point[s.name] for s in X.free_symbols})
        values = {s.name: point[s.name] for s in generic}
        pairs.append((n, lc.evaluate(params, X, values), full[n] - collapsed[n]))
        pairs.append((n, lc.evaluate(params, X, values, effective=True), full[n] - collapsed[n]))
        if lc.matrix_form is not None:
            pairs.append((n, lc.evaluate(params, X, values, form="matrix"), full[n] - collapsed[n]))
        for m, want, got in pairs:
            if want != got:
                entry = next((r, c) for r in range(want.rows) for c in range(want.cols)
                             if want[r, c] != got[r, c])
                what = "the formula" if m == n else f"0 (no dependence on layer {layer} below order {n})"
                return m, entry, want[entry], got[entry], what
        return None

    for _ in range(points):
        point = _random_point(used, rng, radius, all_coefficients)
        found = mismatch(point)
        if found is None:
            continue
        # a readable counterexample: the first of a few small integer points that also disagrees
        small = random.Random(seed)
        for r in (1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 5, 5, 10, 10):
            candidate = _random_point(used, small, r, all_coefficients)
            again = mismatch(candidate)
            if again is not None:
                point, found = candidate, again
                break
        m, entry, want, got, what = found
        return CheckResult(
            False, f"exact evaluation over Q at a random point: F_{m} - F_{m}|Kt_{layer}=0 differs from "
            f"{what} at entry ({entry[0] + 1}, {entry[1] + 1}); the counterexample is the first small integer point found where they differ",
            0.0, Counterexample(tuple((k, str(v)) for k, v in point.items()), entry, str(want), str(got)),
            "leading coefficient formula", f"F_{m} - F_{m}|Kt_{layer}=0", points, degree, size)
    bound = min(1.0, degree / size) ** points
    method = (f"exact evaluation over Q (python-flint) at {points} random integer point(s) in "
              f"[-{radius}, {radius}] of F_0..F_{n} with and without Kt_{layer}, one forward pass over "
              f"truncated series each; Schwartz-Zippel: a false formula passes with probability <= "
              f"(degree {degree} / {size})^{points}")
    return CheckResult(True, method, bound, None, "leading coefficient formula",
                       f"F_{n} - F_{n}|Kt_{layer}=0", points, degree, size)


# -- claimed matrix formulas --------------------------------------------------------------------------

_LEADING_CLAIM = None


def leading_claim_pattern():
    """The compiled pattern of a claim ``leading(i) = <formula>`` (groups ``layer`` and ``formula``), linear in its length.

    Examples
    --------
    >>> match = leading_claim_pattern().match("leading(2) = P*X*J")
    >>> match["layer"], match["formula"].strip()
    ('2', 'P*X*J')
    """
    global _LEADING_CLAIM
    if _LEADING_CLAIM is None:
        import re

        # every quantifier possessive (*+, ?+): no backtracking, linear in the length of the claim (the lazy
        # groups next to \s* took minutes on "leading(" followed by 3,000 spaces)
        _LEADING_CLAIM = re.compile(r"^\s*+leading(?:_coefficient)?+\s*+\(\s*+(?P<layer>[^()]*+)\)\s*+={1,2}+\s*+"
                                    r"(?P<formula>\S.*+)$", re.IGNORECASE)
    return _LEADING_CLAIM


def is_formula_claim(text) -> bool:
    """Whether a claim is a formula claim ``leading(i) = <matrix formula>`` (else a numeric claim).

    Examples
    --------
    >>> is_formula_claim("leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J"), is_formula_claim("kernel = 6")
    (True, False)
    """
    return isinstance(text, str) and leading_claim_pattern().match(text) is not None


def parse_formula_claim(arch: Architecture, claim: str):
    """``(layer, LeadingCoefficient, formula)`` of ``"leading(i) = <matrix formula>"`` (cheap: no expansion).

    Examples
    --------
    >>> layer, lc, formula = parse_formula_claim(Architecture.uniform(layers=2), "leading(1) = P*X*H*C_1*J/9")
    >>> layer, formula == lc.matrix_form
    (1, True)
    >>> parse_formula_claim(Architecture.uniform(layers=2), "leading(3) = P")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: claim 'leading(3) = P' names layer 3; the architecture has layers 1..2
    """
    from ..errors import ParseError
    from ..parsing import check_claim_text, shorten

    _check_arch(arch)
    if isinstance(claim, str):
        check_claim_text(claim, ParseError)  # the one cap of every claim, and ASCII only (Ｐ would be read as P)
    match = leading_claim_pattern().match(claim) if isinstance(claim, str) else None
    if match is None:
        shown = shorten(claim) if isinstance(claim, str) else repr(claim)
        raise SymattnError(f"a formula claim reads 'leading(i) = <matrix formula>', got {shown}")
    layer_text = match["layer"].strip()
    if not layer_text:
        raise SymattnError(f"claim {shorten(claim)} names no layer: a formula claim reads "
                           f"'leading(i) = <matrix formula>' with a layer i in 1..{arch.layers}")
    if not (layer_text.isascii() and layer_text.isdigit()) or len(layer_text) > 6 or \
            not 1 <= int(layer_text) <= arch.layers:
        shown = layer_text if len(layer_text) <= 20 else shorten(layer_text, 20)
        raise SymattnError(f"claim {shorten(claim)} names layer {shown}; the architecture has layers "
                           f"1..{arch.layers}")
    layer = int(layer_text)
    lc = leading_coefficient(arch, layer)
    return layer, lc, matrix_formula(match["formula"].strip(), lc)


def check_formula_claim(arch: Architecture, claim: str, *, seed: int = 0, points: int = 2):
    """Check a claimed leading coefficient ``"leading(i) = <matrix formula>"`` against the entrywise expansion.

    The formula is read by :func:`matrix_formula` in the names of
    :attr:`LeadingCoefficient.matrix_form` (for this network's ``k`` and
    ``t``) and compared, as :func:`verify_leading_coefficient` compares the
    package's own forms, with ``F_{n_i} - F_{n_i}|_{Kt_i = 0}`` of
    :func:`expand` at ``points`` random integer points (and the lower orders
    with 0): a false claim comes with a counterexample at small integer
    coordinates.

    Returns
    -------
    symattn.verdicts.ClaimCheck
        ``claimed`` the formula as read, ``computed`` the engine's matrix
        form, ``verdict`` True / False, ``counterexample`` for a false claim.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=2, width=1, tokens=2)
    >>> check_formula_claim(arch, "leading(2) = 1/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J").verdict
    True
    >>> wrong = check_formula_claim(arch, "leading(2) = 1/t^4 * P*X*H*C_1*C_1.T*H*C_2*J")
    >>> wrong.verdict, wrong.computed, max(abs(int(v)) for _, v in wrong.counterexample.point) <= 10
    (False, '(1/16)*P*X*H*C_1*H*C_1.T*H*C_2*J', True)
    """
    from ..verdicts import ClaimCheck  # (not symattn.check, which imports this module)

    layer, lc, claimed = parse_formula_claim(arch, claim)
    candidate = dataclasses.replace(lc, matrix_form=claimed)
    result = verify_leading_coefficient(arch, layer, points=points, seed=seed, candidate=candidate)
    method = (f"the claimed matrix formula against F_{lc.order} - F_{lc.order}|Kt_{layer}=0 of the entrywise "
              f"expansion (verify_leading_coefficient): " + result.method)
    return ClaimCheck(claim, "leading", layer, str(claimed), str(lc.matrix_form), result.verdict, method,
                      result.counterexample)
