"""Normalizers: the positive, real-analytic functions that attention normalizes.

A normalizer ``s`` turns a score matrix ``A`` into column-stochastic weights
``S(A)_{jk} = s(A_jk) / sum_j' s(A_j'k)``.  Because ``S`` does not change when
``s`` is multiplied by a positive constant, what matters is ``s/s(0)``, whose
Taylor expansion ``1 + c_k x^k + c_{k+1} x^{k+1} + ...`` defines the first
nonconstant degree ``k``.

Examples
--------
>>> from symattn.normalizers import Normalizer
>>> softmax = Normalizer.preset("softmax")
>>> softmax.k, softmax.is_even
(1, False)
>>> softmax.taylor(4)
[1, 1, 1/2, 1/6, 1/24]
>>> Normalizer("cosh(x)").k
2
>>> Normalizer.generic(k=2, even=True).taylor(6)
[1, 0, c_2, 0, c_4, 0, c_6]

The package in modules, one job each: :mod:`~symattn.normalizers.normalizer` (the
:class:`Normalizer` class: Taylor data, ``k``, parity, evaluation), :mod:`~symattn.normalizers.presets`
(the variable ``x``, the preset names and the reading of a normalizer given as text or sympy),
:mod:`~symattn.normalizers.checks` (analyticity, nonconstancy and positivity on R),
:mod:`~symattn.normalizers.taylor` (Taylor coefficients over Q) and
:mod:`~symattn.normalizers.irrational` (exact Taylor coefficients with irrational constants).
"""

from .normalizer import Normalizer, as_normalizer, normalizers_per_layer
from .presets import PRESETS, x

__all__ = ["Normalizer", "PRESETS", "as_normalizer", "normalizers_per_layer", "x"]
