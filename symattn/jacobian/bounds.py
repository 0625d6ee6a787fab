"""Degree bounds for Schwartz-Zippel, and random row compression.
"""

from __future__ import annotations

import numpy as np

from ..algebra.degrees import NONE, DegreeBoundDomain
from ..algebra.linalg import compress_rows as _compress_rows
from ..curves import Curve, collapse
from ..model import Architecture, forward
from .points import generator, transcendental_constants

__all__ = ["degree_bound", "compress_rows"]


def degree_bound(arch: Architecture, curve: Curve, truncation: int, variable_constants: bool = True) -> int:
    """A bound on the degree, in the random point, of every coefficient of the output's series along ``curve``.

    The same bound holds for ``J(eps)``: a derivative has no higher degree.
    It is the ``D`` of Schwartz-Zippel for a computation at a random point.

    Parameters
    ----------
    variable_constants : bool
        Count a transcendental constant of the normalizers as a variable
        (it is one when given a random residue over GF(p)); False when it
        keeps its value (exact evaluation over Q).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> degree_bound(Architecture.uniform(layers=1, normalizer="1 + x**2"), collapse(), 5)
    10
    """
    # a transcendental constant at a random residue is a variable too: count the coefficients as degree 1
    variable_coefficients = any(n.is_generic for n in arch.normalizers) or (
        variable_constants and bool(transcendental_constants(arch)))
    domain = DegreeBoundDomain(truncation, generic_coefficients=variable_coefficients)

    def block(name, layer, shape):
        out = np.full((*shape, truncation), NONE)
        power = curve.block_power(name, layer)
        if power is None:
            out[..., :] = 0.0  # fixed rational coefficients
        elif power < truncation:
            out[..., power] = 1.0
        return out

    params = arch.parameters_from_blocks({key: block(key[0], key[1], shape) for key, shape in arch.blocks()})
    X = np.full((*arch.input_shape, truncation), NONE)
    if curve.input_power < truncation:
        X[..., curve.input_power] = 1.0
    output = forward(arch, params, X, domain, convert=False)
    finite = output[np.isfinite(output)]
    return int(finite.max()) if finite.size else 0


def compress_rows(J: np.ndarray, p: int, seed, rows: int | None = None) -> np.ndarray:
    """``R J`` for a random constant ``R`` with ``rows`` rows (default ``#columns``), when ``J`` has more.

    By Cauchy-Binet each ``r x r`` minor of ``R J`` is a combination of those
    of ``J`` with the minors of ``R`` as coefficients, so for a random ``R``
    the least valuation of the ``r x r`` minors, hence every Smith exponent,
    is unchanged except with probability at most ``r / p``.

    Parameters
    ----------
    J : int array ``(m, n, ...)``
    p : int
    seed : int or numpy.random.Generator
        An int draws ``R`` from the ``"rows"`` stream of :func:`generator`.
    rows : int, optional

    Examples
    --------
    >>> J = np.zeros((5, 2, 3), dtype=np.int64); J[0, 0, 1] = 1; J[4, 1, 2] = 1
    >>> from symattn.algebra.valuations import smith_valuations
    >>> smith_valuations(compress_rows(J, 101, 0), 101).exponents
    (1, 2)
    """
    rng = seed if isinstance(seed, np.random.Generator) else generator(seed, "rows")
    return _compress_rows(J, J.shape[1] if rows is None else rows, p, rng)
