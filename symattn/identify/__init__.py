"""Identification: the dimension of the function space, the generic fiber, and identification orders.

Three questions about the map ``theta -> F_theta`` (MATH.md, sections 2 and 4):

* **How large is the function space?**  :func:`function_space_dimension`
  gives a *certified lower bound* (an exact rank over GF(p): of the native
  Jacobian at a random point when every normalizer is a polynomial, of the
  Jacobian series ``J(eps)`` over ``GF(p)((eps))`` along a curve otherwise),
  an *upper bound* (the dimension of the effective parameters, minus one
  scaling per lightning layer), whether they meet, and an mpmath estimate.
* **What is the generic fiber?**  :func:`generic_fiber`: the kernel of the
  native Jacobian is the tangent space of the gauge orbit (checked exactly
  over ``GF(p)((eps))``), and :func:`sign_flip_checks` verifies every sign
  flip of even layers and finds a witness input for every other flip.
* **At which Taylor order does the function see each block?**
  :func:`identification_orders` along the collapse curve
  ``Q_i = eps Qt_i, K_i = eps Kt_i``: the least ``n`` with ``F_0..F_n``
  depending on the block, with the sharpness certificate of MATH.md
  section 4, and the ranks of the jets ``(F_0, ..., F_n)``.

:func:`identify` runs all of them; :func:`dimension_table` is HMK's Figure 3.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.identify import identify
>>> report = identify(Architecture.uniform(layers=2, width=2, rank=1, tokens=3), estimate=None)
>>> report.dimension.lower, report.dimension.upper, report.dimension.certified
(10, 10, True)
>>> [(o.layer, o.order, o.sharp) for o in report.orders], report.values.order
([(1, 2, True), (2, 6, True)], 0)
>>> report.jet_ranks
(4, 4, 7, 7, 7, 7, 10)
>>> report.fiber.kernel_is_symmetry_orbit
True
"""

from .._modules import make_callable
from .common import DIMENSION_PRIME, SeriesRank, hmk_dimension, orders_memory, series_rank
from .dimension import DimensionResult, DimensionRow, DimensionTable, dimension_table, function_space_dimension
from .orders import BlockOrder, OrdersResult, identification_orders
from .fiber import FiberResult, SignFlipCheck, generic_fiber, sign_flip_checks
from .report import IdentificationReport, identify
from ..jacobian import gauge_slice

__all__ = [
    "identify",
    "orders_memory",
    "IdentificationReport",
    "function_space_dimension",
    "DimensionResult",
    "dimension_table",
    "DimensionTable",
    "DimensionRow",
    "hmk_dimension",
    "identification_orders",
    "OrdersResult",
    "BlockOrder",
    "generic_fiber",
    "FiberResult",
    "sign_flip_checks",
    "SignFlipCheck",
    "series_rank",
    "SeriesRank",
    "gauge_slice",
    "DIMENSION_PRIME",
]

# `from symattn import identify` gives this module (it shares the function's name): calling it calls identify()
make_callable(__name__, "identify")
