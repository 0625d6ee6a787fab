"""Points, banks, block series along a curve, and the Jacobian in chosen directions.

A package by job: :mod:`~symattn.jacobian.points` (random points and banks,
user banks, the exact field of the Taylor coefficients),
:mod:`~symattn.jacobian.columns` (the native parameters as columns, the gauge
slice), :mod:`~symattn.jacobian.series` (block series along a curve, the
Jacobian there), :mod:`~symattn.jacobian.symmetries` (orbit tangents and the
rank bounds they give) and :mod:`~symattn.jacobian.bounds` (degree bounds,
row compression).

The floor under every analysis that differentiates the network: spectrum,
identify, observe, numeric and expand draw their random points and banks,
lay out the native parameters as columns, expand blocks along a
:class:`~symattn.curves.Curve`, and compute the Jacobian there, all here.

* Random numbers come from one :func:`generator`, one named stream per
  purpose, so that every analysis draws exactly what it drew before.
* The Jacobian ``J(eps)`` along a curve, in all native parameters or in
  chosen directions (a subset per block, the :func:`gauge_slice`), is one
  forward pass of :func:`symattn.model.forward` over first-order jets of
  truncated series mod ``(p, eps^N)``
  (:class:`~symattn.algebra.modseries.ModSeriesDomain`); the same curve at a
  numerical ``eps`` runs over float64 or mpmath jets
  (:class:`~symattn.algebra.numeric_jets.NumericJetDomain`).
* Gauge and lightning-scaling tangents, degree bounds for Schwartz-Zippel,
  and random row compression complete what the exact ranks need.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.curves import collapse
>>> from symattn.jacobian import DEFAULT_PRIMES, block_columns, jacobian_series, random_bank, random_point
>>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="softmax")
>>> p = DEFAULT_PRIMES[0]
>>> point, coefficient_values = random_point(arch, p, seed=0)
>>> J = jacobian_series(arch, collapse(), random_bank(arch, 3, p, seed=0), point, p, truncation=4)
>>> J.shape                     # (d_l * t * bank, #params, N)
(12, 8, 4)
>>> [int(J[:, columns, 0].any()) for columns in block_columns(arch).values()]   # scores appear at eps^1
[0, 1]
"""

from .bounds import compress_rows, degree_bound
from .points import BANK_ENTRIES, DEFAULT_PRIMES, STREAMS, bank_residues, check_prime, constant_field, field_note, field_primes, generator, random_bank, random_point, random_real_point, small_integer_point, transcendental_constants, validate_bank
from .columns import all_directions, block_columns, gauge_slice, parameter_columns, score_block_name
from .series import curve_series, forward_operations, input_groups, jacobian_from_series, jacobian_series, jacobian_series_in_groups, real_jacobian, series_output
from .symmetries import (
    ORBIT_BOUND_BUDGET, effective_dimension_of, estimate_rank_bound, gauge_tangent_series, native_rank_bound,
    orbit_bound_bytes, scaling_tangent_series, symmetry_orbit_bound, symmetry_tangent_series,
)

__all__ = [
    "native_rank_bound",
    "estimate_rank_bound",
    "orbit_bound_bytes",
    "ORBIT_BOUND_BUDGET",
    "effective_dimension_of",
    "DEFAULT_PRIMES",
    "check_prime",
    "STREAMS",
    "generator",
    "random_point",
    "random_bank",
    "small_integer_point",
    "random_real_point",
    "BANK_ENTRIES",
    "validate_bank",
    "bank_residues",
    "transcendental_constants",
    "constant_field",
    "field_primes",
    "field_note",
    "parameter_columns",
    "block_columns",
    "score_block_name",
    "all_directions",
    "gauge_slice",
    "curve_series",
    "jacobian_from_series",
    "jacobian_series",
    "jacobian_series_in_groups",
    "forward_operations",
    "input_groups",
    "series_output",
    "real_jacobian",
    "gauge_tangent_series",
    "scaling_tangent_series",
    "symmetry_tangent_series",
    "symmetry_orbit_bound",
    "degree_bound",
    "compress_rows",
]
