"""Block series along a curve, and the Jacobian there: over GF(p)[[eps]] jets, or at a numerical ``eps``.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from ..algebra.linalg import one_blas_thread
from ..algebra.modseries import ModSeriesDomain
from ..algebra.numeric_jets import NumericJetDomain, as_fraction, to_mpf
from ..curves import EPS, Curve, collapse
from ..errors import SymattnError
from ..model import Architecture, forward
from .columns import all_directions, gauge_slice, parameter_columns
from .points import _short, bank_residues, random_bank, random_point, validate_bank

__all__ = ["curve_series", "jacobian_from_series", "jacobian_series", "jacobian_series_in_groups", "input_groups",
           "series_output", "real_jacobian", "forward_operations"]


# -- counting the operations of a forward pass (a progress bar's total) -------------------------------
#: The domain operations a forward pass is counted in: each is one step of a progress bar.
FORWARD_OPERATIONS = ("matmul", "add", "apply_normalizer", "attention")


class _CountedDomain:
    """``domain`` as the forward pass sees it, calling ``on_operation()`` after each of :data:`FORWARD_OPERATIONS`.

    Only the forward pass's own calls are counted (the domain's calls to its
    own methods go to the domain itself), so the count is the same over any
    domain: :func:`forward_operations` counts it over shapes, before the pass.
    """

    def __init__(self, domain, on_operation):
        self._domain = domain
        self._on_operation = on_operation

    def __getattr__(self, name):
        value = getattr(self._domain, name)
        if name not in FORWARD_OPERATIONS:
            return value

        def counted(*args, **kwargs):
            result = value(*args, **kwargs)
            self._on_operation()
            return result

        return counted


def forward_operations(arch: Architecture) -> int:
    """How many domain operations (products, sums, normalizers, attentions) one forward pass of ``arch`` makes.

    Counted over :class:`~symattn.algebra.shapes.ShapeDomain` elements, which
    carry sizes only (no arithmetic, a few milliseconds): the total of the
    progress bar of :func:`jacobian_series` with ``on_operation``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=2, width=2, tokens=3)
    >>> p = 1009
    >>> point, values = random_point(arch, p, 0)
    >>> steps = []
    >>> _ = jacobian_series(arch, collapse(), random_bank(arch, 2, p, 0), point, p, 4, values,
    ...                     on_operation=lambda: steps.append(1))
    >>> len(steps) == forward_operations(arch) > 0
    True
    """
    from ..algebra.shapes import ShapeDomain

    domain = ShapeDomain(1, "blas")
    blocks = {key: domain.array(rows, cols, counted=False, block=key) for key, (rows, cols) in arch.blocks()}
    X = domain.array(arch.widths[0], arch.tokens, label="input")
    count = [0]

    def one():
        count[0] += 1

    forward(arch, arch.parameters_from_blocks(blocks), X, _CountedDomain(domain, one), convert=False)
    return count[0]


# -- series along a curve, and the Jacobian there ----------------------------------------------------
def curve_series(arch: Architecture, curve: Curve, point, bank, p: int | None, truncation: int):
    """Parameter and input series of ``curve`` through ``point`` and ``bank``: ``(parameters, inputs)``.

    ``parameters[(name, layer)]`` has shape ``(rows, cols, N)`` and ``inputs``
    shape ``(d_0, t, |bank|, N)``: the coefficients of ``eps^0 .. eps^(N-1)``.
    With a prime ``p`` the entries are residues (int64; the coefficients of
    user polynomials are reduced mod ``p``); with ``p=None`` they stay exact
    (object arrays of whatever ``point`` and ``bank`` hold: rationals, sympy
    symbols).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=1)
    >>> point = {("Q", 1): np.array([[2]]), ("K", 1): np.array([[3]]), ("V", 1): np.array([[5]])}
    >>> parameters, inputs = curve_series(arch, collapse(), point, np.array([[[7]]]), 101, 3)
    >>> parameters[("Q", 1)].tolist(), parameters[("V", 1)].tolist(), inputs.tolist()
    ([[[0, 2, 0]]], [[[5, 0, 0]]], [[[[7, 0, 0]]]])
    """
    if p is None:
        dtype, residue = object, (lambda value: value)
    else:
        dtype, residue = np.int64, ModSeriesDomain(p, truncation).residue
    parameters = {key: curve.block_coefficients(key[0], key[1], np.asarray(base, dtype=dtype), residue, truncation,
                                                dtype=dtype)
                  for key, base in point.items()}
    bank = np.asarray(bank, dtype=dtype)
    inputs = np.zeros((*arch.input_shape, len(bank), truncation), dtype=dtype)
    if curve.input_power < truncation:
        inputs[..., curve.input_power] = np.moveaxis(bank, 0, -1)
    return parameters, inputs


def jacobian_from_series(arch: Architecture, parameter_series: dict, input_series: np.ndarray, p: int,
                         truncation: int, coefficient_values=None, directions=None,
                         tangent_powers=None, on_operation=None) -> np.ndarray:
    """``J(eps)`` over GF(p) mod ``eps^N`` for parameters and inputs given as series.

    Parameters
    ----------
    arch : Architecture
    parameter_series : dict
        ``(name, layer) -> (rows, cols, N)`` integer coefficients (as from
        :func:`curve_series`, or any series: a point moving off a set).
    input_series : int array ``(d_0, t, bank, N)``
    p : int
        A prime below ``2**28``.
    truncation : int
        ``N``.
    coefficient_values : dict, optional
        Residues of transcendental constants and generic Taylor coefficients
        (from :func:`random_point`).
    directions : (dict, int), optional
        ``({(name, layer): int array}, count)``: the jet direction of every
        entry, ``-1`` for entries held fixed (:func:`gauge_slice`); default
        :func:`all_directions`.
    tangent_powers : dict, optional
        ``(name, layer) -> m``: differentiate in ``eps^m`` times the entry
        (curve coordinates); default 0 (native coordinates).
    on_operation : callable, optional
        Called after each operation of the forward pass (a progress bar's
        step; :func:`forward_operations` counts them beforehand).

    Returns
    -------
    int array ``(d_l * t * |bank|, count, N)``
        Rows run over output entries (row-major) and then bank inputs.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=1, normalizer="softmax")
    >>> series = {("Q", 1): np.array([[[0, 3]]]), ("K", 1): np.array([[[0, 3]]]), ("V", 1): np.array([[[3, 0]]])}
    >>> J = jacobian_from_series(arch, series, np.array([[[[2, 0]]]]), 101, 2)
    >>> J[0, :, 0].tolist()      # one token: F = V X, so only dF/dV = X = 2 is nonzero
    [0, 0, 2]
    """
    directions, count = all_directions(arch) if directions is None else directions
    tangent_powers = tangent_powers or {}
    domain = ModSeriesDomain(p, truncation, directions=count, coefficient_values=coefficient_values)
    N = domain.truncation
    blocks = {}
    for key, (rows, cols) in arch.blocks():
        chosen = directions[key]
        # the jet axis is as long as this block's last direction: later ones stay implicit zeros
        width = 1 + (int(chosen.max()) + 1 if (chosen >= 0).any() else 0)
        block = np.zeros((rows, cols, 1, width, N), dtype=np.int64)
        coefficients = np.asarray(parameter_series[key])[..., :N]
        block[:, :, 0, 0, :coefficients.shape[-1]] = coefficients % p
        power = tangent_powers.get(key, 0)
        if power < N:
            for (r, c), k in np.ndenumerate(chosen):
                if k >= 0:
                    block[r, c, 0, 1 + k, power] = 1
        blocks[key] = block
    params = arch.parameters_from_blocks(blocks)
    with one_blas_thread():  # once around the pass's hundreds of products
        inputs = domain.from_coefficients(input_series)
        counted = domain if on_operation is None else _CountedDomain(domain, on_operation)
        output = forward(arch, params, inputs, counted, convert=False)
    tangents = domain.tangents(output)  # (d_l, t, B, count, N)
    return np.moveaxis(tangents, 2, 0).reshape(-1, count, N)


def jacobian_series(arch: Architecture, curve: Curve, bank: np.ndarray, point, p: int, truncation: int,
                    coefficient_values=None, directions=None, coordinates: str = "native",
                    on_operation=None) -> np.ndarray:
    """``J(eps)`` mod ``eps^truncation`` over GF(p) along a curve: shape ``(d_l * t * |bank|, count, N)``.

    Parameters
    ----------
    arch : Architecture
    curve : Curve
    bank : int array ``(size, d_0, t)``
        Inputs as residues (:func:`random_bank`, :func:`bank_residues`).
    point : dict
        ``(name, layer) -> residues``, the curve's base point (:func:`random_point`).
    p, truncation : int
    coefficient_values : dict, optional
        As returned by :func:`random_point`.
    directions : (dict, int), optional
        Jet directions (default every native parameter; :func:`gauge_slice`
        for a transversal slice).
    coordinates : {"native", "curve"}
        ``"native"``: derivatives in the native parameters at ``theta_eps``;
        ``"curve"``: in the curve's base coordinates (``Qt_i`` etc.), i.e.
        native derivatives of collapsed blocks times ``eps``.
    on_operation : callable, optional
        Called after each operation of the forward pass (see
        :func:`forward_operations`, which counts them beforehand).

    Returns
    -------
    int array
        Rows run over output entries (row-major) and then bank inputs.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="cosh")
    >>> p = 1009
    >>> point, values = random_point(arch, p, 0)
    >>> bank = random_bank(arch, 3, p, 0)
    >>> native = jacobian_series(arch, collapse(), bank, point, p, 6)
    >>> in_curve = jacobian_series(arch, collapse(), bank, point, p, 6, coordinates="curve")
    >>> q = parameter_columns(arch)[("Q", 1)]
    >>> bool((in_curve[:, q, 1:] == native[:, q, :-1]).all())   # d/dQt = eps d/dQ
    True
    """
    if coordinates not in ("native", "curve"):
        raise SymattnError(f"coordinates must be 'native' or 'curve', got {coordinates!r}")
    parameters, inputs = curve_series(arch, curve, point, bank, p, truncation)
    powers = {}
    if coordinates == "curve":
        powers = {key: curve.block_power(*key[:2]) or 0 for key in parameters}
    return jacobian_from_series(arch, parameters, inputs, p, truncation, coefficient_values, directions, powers,
                                on_operation)


def input_groups(bank_size: int, group: int) -> list[tuple[int, int]]:
    """The bank's inputs ``0 .. bank_size - 1`` cut into ranges ``[start, stop)`` of at most ``group``.

    Examples
    --------
    >>> input_groups(7, 3), input_groups(2, 5)
    ([(0, 3), (3, 6), (6, 7)], [(0, 2)])
    """
    if isinstance(group, bool) or not isinstance(group, (int, np.integer)) or group < 1:
        raise SymattnError(f"inputs per group must be a positive integer, got {group!r}")
    return [(start, min(start + int(group), bank_size)) for start in range(0, bank_size, int(group))]


def _jacobian_rows(start: int, *arguments) -> tuple[int, np.ndarray]:
    """``(start, jacobian_series(*arguments))``: one task of :func:`jacobian_series_in_groups`."""
    return start, jacobian_series(*arguments)


def jacobian_series_in_groups(arch: Architecture, curve: Curve, bank: np.ndarray, point, p: int, truncation: int,
                              coefficient_values=None, directions=None, *, group: int, parts,
                              on_inputs=None) -> np.ndarray:
    """:func:`jacobian_series` computed a group of bank inputs at a time, by ``parts`` (Dask workers).

    The rows of input ``b`` depend on that input alone, so the groups'
    Jacobians stacked in the order of the bank are :func:`jacobian_series`
    of the whole bank, entry by entry.

    Parameters
    ----------
    arch, curve, bank, point, p, truncation, coefficient_values, directions
        As for :func:`jacobian_series`.
    group : int
        Inputs per call (one task).
    parts : callable
        ``parts(calls)`` yields ``(call, result)`` in any order for ``calls`` a list
        of ``(function, arguments)``: :func:`symattn._cluster.map_as_completed`
        on a client, or ``lambda calls: ((c, c[0](*c[1])) for c in calls)`` here.
    on_inputs : callable, optional
        Called with the number of inputs of each group as it arrives.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=2)
    >>> point, values = random_point(arch, 1009, 0)
    >>> bank = random_bank(arch, 5, 1009, 0)
    >>> here = lambda calls: ((call, call[0](*call[1])) for call in reversed(calls))
    >>> grouped = jacobian_series_in_groups(arch, collapse(), bank, point, 1009, 4, values, group=2, parts=here)
    >>> bool((grouped == jacobian_series(arch, collapse(), bank, point, 1009, 4, values)).all())
    True
    """
    # each call returns its first input with its rows, so that the parts land in place in any order
    calls = [(_jacobian_rows, (start, arch, curve, bank[start:stop], point, p, truncation, coefficient_values,
                               directions))
             for start, stop in input_groups(len(bank), group)]
    rows = arch.widths[-1] * arch.tokens
    J = None
    for _, (start, part) in parts(calls):
        if J is None:  # the first part gives the columns and the truncation
            J = np.empty((rows * len(bank),) + part.shape[1:], dtype=part.dtype)
        J[rows * start:rows * start + len(part)] = part
        if on_inputs is not None:
            on_inputs(len(part) // rows)
    return J


def series_output(arch: Architecture, curve: Curve, point, bank, domain) -> np.ndarray:
    """The output's series along a curve, no derivatives: shape ``(d_l, t, |bank|, N)``.

    Parameters
    ----------
    arch : Architecture
    curve : Curve
    point, bank
        As for :func:`curve_series`: residues for a
        :class:`~symattn.algebra.modseries.ModSeriesDomain`, exact entries
        (rationals, symbols) for an exact series domain of
        :mod:`symattn.algebra.exactseries` (whose ``p`` is ``None``).
    domain : ModSeriesDomain or an exact series domain
        The ring of the coefficients, and the truncation ``N``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax")
    >>> point = {("Q", 1): np.array([[1]]), ("K", 1): np.array([[1]]), ("V", 1): np.array([[1]])}
    >>> domain = ModSeriesDomain(101, 2)
    >>> series_output(arch, collapse(), point, np.array([[[1, 0]]]), domain)[0, :, 0].tolist()
    [[51, 0], [51, 0]]

    At ``eps = 0`` attention is uniform, so both tokens are ``(1 + 0) / 2 = 1/2 = 51`` mod 101.
    Over Q, with symbols:

    >>> from symattn.algebra.exactseries import PolynomialSeriesDomain
    >>> a = sp.Symbol("a")
    >>> exact = {key: np.array([[a]], dtype=object) for key in point}
    >>> ring = PolynomialSeriesDomain(3, [a])
    >>> out = series_output(arch, collapse(), exact, np.array([[[1, 0]]], dtype=object), ring)
    >>> [str(ring.to_sympy(c)) for c in out[0, 0, 0]]        # a (1/2 + eps^2 a^2 / 4)
    ['a/2', '0', 'a**3/4']
    """
    parameters, inputs = curve_series(arch, curve, point, bank, domain.p, domain.truncation)
    params = arch.parameters_from_blocks({key: domain.from_coefficients(parameters[key][:, :, None, :])
                                          for key, _ in arch.blocks()})
    return domain.coefficients(forward(arch, params, domain.from_coefficients(inputs), domain, convert=False))


def _power_of(eps, power: int):
    """``eps^power``, exactly when ``eps`` is rational (``None`` for ``power = 0``: no scaling)."""
    if power == 0:
        return None
    if power == 1:
        return eps
    exact = as_fraction(eps)
    return (exact if exact is not None else eps) ** power


def _polynomial_at(entry, eps, dps: int):
    """A curve polynomial at ``eps``: exact for rational ``eps``, else an mpf at ``dps`` digits."""
    exact = as_fraction(eps)
    if exact is not None:
        # entries are sympy polynomials (curves are built through the safe parser); strict: never a string
        return sp.sympify(entry, strict=True).subs(EPS, sp.Rational(exact.numerator, exact.denominator))
    with mpmath.workdps(dps):
        x = to_mpf(eps, dps)
        return sum((to_mpf(c, dps) * x ** k for (k,), c in sp.Poly(entry, EPS).terms()), mpmath.mpf(0))


def real_jacobian(arch: Architecture, params_tilde, bank, eps, curve: Curve | None = None,
                  base: str = "float64", dps: int = 50) -> np.ndarray:
    """The native Jacobian at ``eps`` on ``curve`` (default collapse), numerically: ``(d_l * t * |bank|, #params)``.

    Forward-mode: one pass of :func:`symattn.model.forward` over
    :class:`~symattn.algebra.numeric_jets.NumericJetDomain` per input, every
    native parameter seeded with its unit tangent; no finite differences.

    Parameters
    ----------
    arch : Architecture
    params_tilde : sequence
        The base point, flat in ``parameter_index()`` order (entries of
        blocks that the curve replaces by polynomials are not read).
    bank : sequence of matrices
        Checked by :func:`validate_bank`.
    eps : number
        Decimal strings and Fractions are read exactly.
    curve : Curve, optional
    base : {"float64", "mpmath"}
    dps : int
        mpmath digits.

    Returns
    -------
    numpy.ndarray
        Rows run over the bank, then the output entries row-major; float64,
        or object (``mpf``) for mpmath.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import input_scaling
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax")
    >>> collapsed = real_jacobian(arch, [1, 1, 1], [[[1, 0]]], "0.5")
    >>> scaled = real_jacobian(arch, ["0.5", "0.5", 1], [[[2, 0]]], "0.5", curve=input_scaling())
    >>> bool(np.allclose(collapsed[:, 2], scaled[:, 2]))     # the same scores Q K x^2 = 1/4
    True
    """
    curve = collapse() if curve is None else curve
    if not isinstance(curve, Curve):
        raise SymattnError(f"curve must be a symattn.curves.Curve such as collapse() or input_scaling(), "
                           f"got {_short(curve)}")
    curve.validate(arch)
    P = arch.param_count
    domain = NumericJetDomain(base, dps=dps, directions=P)
    inputs = validate_bank(arch, bank)
    polynomials = {(b, i): m for b, i, m in curve.polynomials}
    blocks = {}
    position = 0
    for key, (rows, cols) in arch.blocks():
        name, i = key[:2]
        power = curve.block_power(name, i)
        if power is None:  # a user polynomial replaces the block
            values = [[_polynomial_at(polynomials[(name, i)][r, c], eps, dps) for c in range(cols)]
                      for r in range(rows)]
            scale = None
        else:
            values = [params_tilde[position + r * cols: position + (r + 1) * cols] for r in range(rows)]
            scale = _power_of(eps, power)
        blocks[key] = domain.matrix(values, first_direction=position, scale=scale)
        position += rows * cols
    params = arch.parameters_from_blocks(blocks)
    input_scale = _power_of(eps, curve.input_power)
    rows_per_input = arch.widths[-1] * arch.tokens
    out = domain._zeros((rows_per_input * len(inputs), P))
    for b, X in enumerate(inputs):
        output = forward(arch, params, domain.matrix(X, scale=input_scale), domain, convert=False)
        out[b * rows_per_input:(b + 1) * rows_per_input] = domain.tangents(output).reshape(rows_per_input, P)
    return out
