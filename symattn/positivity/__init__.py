"""Decide exactly whether a real function of one variable is positive on all of R.

A normalizer must be positive at every real number.  :func:`decide_positivity`
answers that question for a sympy expression in one real variable and never
guesses; every answer is backed by exact or rigorous computation:

* **disproof** -- a negative sampled value, or a numerically located minimum
  near 0 that is identified in closed form (``-pi/2``, ``sqrt(2)/2``, a
  rational), is confirmed exactly before it is reported as a witness
  ``(point, value)``;
* **proof** -- a polynomial with rational coefficients is decided exactly by
  counting its real roots (Sturm).  Anything else is bounded below by interval
  arithmetic (a private :mod:`mpmath` interval context, 80 bits, outward
  rounding): branch and bound on ``[-radius, radius]`` with the mean-value
  form, and on each tail interval bounds, sign rules (``exp(u) > 0``,
  ``log(u) > 0`` when ``u > 1``, ...) or monotonicity proved through
  derivatives;
* otherwise the answer is ``None`` (undecided), with the reason.

Examples
--------
>>> import sympy as sp
>>> from symattn.positivity import decide_positivity
>>> x = sp.Symbol("x", real=True)
>>> decide_positivity(2 + sp.sin(x), x).positive
True
>>> verdict = decide_positivity(1 + sp.sin(x), x)
>>> verdict.positive, verdict.witness
(False, (-pi/2, 0))
>>> decide_positivity(1 + x**3, x).witness
(-2, -7)
>>> print(decide_positivity(sp.exp(x) - x, x).method)
proved positive: interval arithmetic on [-8, 8] (9 boxes); on x >= 8, f(8) > 0 and f' > 0;
on x <= -8, f > 0 by interval bounds

The work is split by job: :mod:`~symattn.positivity.decision` (the verdict and the order of the
steps, exact polynomials, the wording of each verdict), :mod:`~symattn.positivity.sampling`
(mpmath samples and located minima), :mod:`~symattn.positivity.signs` (exact signs and the
exact numbers tried as witnesses), :mod:`~symattn.positivity.intervals` (the interval evaluator,
its sign rules and branch and bound) and :mod:`~symattn.positivity.constants` (constants
approximated without sympy's ``evalf``, for the normalizers' Taylor data).
"""

from .constants import CONSTANT_MAGNITUDE_BITS, ConstantTooLarge, approximate_constant
from .decision import PositivityVerdict, decide_positivity

__all__ = ["PositivityVerdict", "decide_positivity", "approximate_constant", "ConstantTooLarge",
           "CONSTANT_MAGNITUDE_BITS"]
