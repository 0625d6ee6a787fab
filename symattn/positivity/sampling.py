"""Sampling for positivity disproofs: grids of exact binary points, guarded mpmath values, minima.

``f`` and ``f'`` become mpmath functions (:class:`_Sampler`) whose exp, sin,
... refuse astronomically large arguments; samples on a grid of
``[-radius, radius]`` and on growing tails point at negative values, and the
lowest local minima are located to about 30 digits, for
:mod:`symattn.positivity.signs` to identify and confirm exactly.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import mpmath
import sympy as sp

from .intervals import _HUGE_MAG

#: Digits for sampling and for locating minima.
_SAMPLE_DPS = 30
#: Grid points per side of the compact part (rounded to a power-of-2 step).
_GRID_HALF_POINTS = 256


def _grid_step(radius: Fraction) -> Fraction:
    """A power of 2 near radius / 256: grid points are exact binary numbers."""
    return Fraction(2) ** math.floor(math.log2(float(radius) / _GRID_HALF_POINTS))


def _grid_points(radius: Fraction) -> list:
    """Rationals on [-radius, radius] spaced by ``_grid_step(radius)``."""
    step = _grid_step(radius)
    count = int(radius / step)
    return [sp.Rational(k * step.numerator, step.denominator) for k in range(-count, count + 1)]


def _tail_points(radius) -> list:
    """Integers beyond the radius, growing geometrically to about 1e10 * radius."""
    magnitudes = sorted({int(float(radius) * 1.25**k) + 1 for k in range(1, 104)})
    return [sp.Integer(s * m) for m in magnitudes for s in (1, -1)]


def _is_nonreal(value) -> bool:
    return isinstance(value, mpmath.mpc) and value.imag != 0


def _lowest_local_minima(grid, count: int) -> list[int]:
    """Indices of the ``count`` lowest local minima of real grid samples."""
    if len(grid) < 3:
        return []
    values = [mpmath.re(v) for _, v in grid]
    minima = [
        i for i in range(len(values))
        if (i == 0 or values[i] <= values[i - 1])
        and (i == len(values) - 1 or values[i] <= values[i + 1])
    ]
    return sorted(minima, key=lambda i: values[i])[:count]


def _median_magnitude(grid):
    if not grid:
        return mpmath.mpf(0)
    magnitudes = sorted(abs(v) for _, v in grid)
    return magnitudes[len(magnitudes) // 2]

class _TooLarge(ArithmeticError):
    """An argument so large that mpmath would need millions of bits for it."""


def _guarded(function):
    def guarded(argument):
        if mpmath.mag(argument) > _HUGE_MAG:
            raise _TooLarge(argument)
        return function(argument)
    return guarded


#: mpmath functions for lambdify that refuse astronomically large arguments.
_GUARDS = {
    name: _guarded(getattr(mpmath, name))
    for name in ("exp", "sin", "cos", "tan", "sinh", "cosh", "tanh")
}


class _Sampler:
    """``expr`` and its derivative as mpmath functions, at ``_SAMPLE_DPS`` digits."""

    def __init__(self, function, derivative):
        self.function = function
        self.derivative = derivative

    @classmethod
    def build(cls, expr, x) -> "_Sampler | None":
        modules = [_GUARDS, "mpmath"]
        try:
            function = sp.lambdify(x, expr, modules=modules)
        except Exception:  # an expression lambdify cannot print: no sampling
            return None
        try:
            derivative = sp.lambdify(x, sp.diff(expr, x), modules=modules)
        except Exception:
            derivative = None
        return cls(function, derivative)

    def value(self, point):
        """f(point) as mpf/mpc, or None where it cannot be evaluated."""
        try:
            value = mpmath.mpmathify(self.function(point))
        except Exception:  # poles, huge arguments, domain errors
            return None
        if isinstance(value, mpmath.mpc) and value.imag == 0:
            value = value.real
        if mpmath.isnan(value) or mpmath.isinf(value):
            return None
        return value

    def sample(self, points, deadline) -> list:
        samples = []
        for point in points:
            if time.monotonic() > deadline:
                break
            value = self.value(mpmath.mpf(point.p) / point.q)
            if value is not None:
                samples.append((point, value))
        return samples

    def refine_minimum(self, center, step, deadline):
        """(point, value) of the local minimum near ``center`` (mpf), or None."""
        step = mpmath.mpf(step.numerator) / step.denominator
        a = mpmath.mpf(center.p) / center.q - step
        b = a + 2 * step
        value = self._real_value
        # golden section: robust even where f is flat or the derivative is unavailable
        ratio = (mpmath.sqrt(5) - 1) / 2
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        fc, fd = value(c), value(d)
        if fc is None or fd is None:
            return None
        while b - a > mpmath.mpf(10) ** (-14) * (1 + abs(a)):
            if time.monotonic() > deadline:
                return None
            if fc <= fd:
                b, d, fd = d, c, fc
                c = b - ratio * (b - a)
                fc = value(c)
            else:
                a, c, fc = c, d, fd
                d = a + ratio * (b - a)
                fd = value(d)
            if fc is None or fd is None:
                return None
        point = (a + b) / 2
        best = value(point)
        if best is None:
            return None
        # polish with a root of f' so that the point is good to ~30 digits
        if self.derivative is not None:
            try:
                root = mpmath.findroot(lambda t: self.derivative(t), point)
                root_value = value(mpmath.re(root))
                if abs(root - point) < step and root_value is not None \
                        and root_value <= best:
                    point, best = mpmath.re(root), root_value
            except Exception:  # no convergence: the golden-section point stands
                pass
        return point, best

    def _real_value(self, point):
        value = self.value(point)
        if value is None or _is_nonreal(value):
            return None
        return mpmath.re(value)

