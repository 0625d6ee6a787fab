"""Real constants approximated node by node in mpmath, without sympy's ``evalf`` or printer (which can hang).

Used for the Taylor data of normalizers with irrational constants
(:mod:`symattn.normalizers`) and the exact checks of claims
(:mod:`symattn.check`): an argument of exp, sin, cosh, ... beyond
``2**CONSTANT_MAGNITUDE_BITS`` is refused with :class:`ConstantTooLarge`.
"""

from __future__ import annotations

import mpmath
import sympy as sp

__all__ = ["approximate_constant", "ConstantTooLarge", "CONSTANT_MAGNITUDE_BITS"]

#: :func:`approximate_constant` refuses exp, sin, cosh, ... of an argument beyond 2**CONSTANT_MAGNITUDE_BITS:
#: mpmath needs about that many bits to reduce it, and sympy evaluates constants even to print them
#: (``cosh(cosh(cosh(50)))`` would take hours).
CONSTANT_MAGNITUDE_BITS = 1000


class ConstantTooLarge(ArithmeticError):
    """A constant that cannot be evaluated: the argument of ``name`` is beyond ``2**CONSTANT_MAGNITUDE_BITS``.

    Examples
    --------
    >>> str(ConstantTooLarge("exp"))
    'exp of a number beyond 2**1000'
    """

    def __init__(self, name: str):
        super().__init__(f"{name} of a number beyond 2**{CONSTANT_MAGNITUDE_BITS}")
        self.name = name


_MPMATH_NAMES = {sp.exp: "exp", sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.sinh: "sinh", sp.cosh: "cosh",
                 sp.tanh: "tanh", sp.log: "log", sp.atan: "atan", sp.asin: "asin", sp.acos: "acos",
                 sp.asinh: "asinh", sp.erf: "erf"}
_REDUCED = {"exp", "sin", "cos", "tan", "sinh", "cosh", "tanh"}  # need an argument reduction


def _apply_guarded(name: str, argument):
    if argument is None:
        return None
    if name in _REDUCED and argument != 0 and mpmath.mag(argument) > CONSTANT_MAGNITUDE_BITS:
        raise ConstantTooLarge(name)
    try:
        value = getattr(mpmath, name)(argument)
    except (ValueError, ZeroDivisionError, ArithmeticError):
        return None
    return value if isinstance(value, mpmath.mpf) else None


def approximate_constant(expr, known=None):
    """A real sympy constant as an mpmath number, without sympy's ``evalf`` or printer (which can hang).

    Evaluated node by node at the current mpmath precision; ``known`` maps
    symbols to mpmath values.  Returns None for what it cannot evaluate
    (unknown functions, complex or undefined values).

    Raises
    ------
    ConstantTooLarge
        For exp, sin, cos, tan, sinh, cosh, tanh (or a power) of an argument
        beyond ``2**CONSTANT_MAGNITUDE_BITS``: the value would take hours.

    Examples
    --------
    >>> float(approximate_constant(sp.exp(sp.exp(2)) + sp.pi))
    1621.3195...
    >>> approximate_constant(sp.cosh(sp.cosh(sp.cosh(50))))
    Traceback (most recent call last):
    ...
    symattn.positivity.constants.ConstantTooLarge: cosh of a number beyond 2**1000
    """
    known = known or {}
    if expr in known:
        return known[expr]
    if expr.is_Rational:
        return mpmath.mpf(int(expr.p)) / int(expr.q)
    if expr.is_Float or isinstance(expr, sp.NumberSymbol):
        return mpmath.mpf(expr.evalf(mpmath.mp.dps + 5))
    parts = [approximate_constant(a, known) for a in expr.args]
    if any(p is None for p in parts):
        return None
    if expr.is_Add:
        return mpmath.fsum(parts)
    if expr.is_Mul:
        return mpmath.fprod(parts)
    if expr.is_Pow:
        base, exponent = parts
        if base == 0:
            return mpmath.mpf(0) if exponent > 0 else None
        if base < 0 and not expr.exp.is_Integer:
            return None
        if expr.exp.is_Integer:  # an integer power: the exponent of the result, not a reduction
            return mpmath.power(base, exponent)
        _apply_guarded("exp", exponent * mpmath.log(abs(base)))  # base**e = exp(e log base): its size
        return mpmath.power(base, exponent)
    name = _MPMATH_NAMES.get(type(expr))
    return _apply_guarded(name, parts[0]) if name and len(parts) == 1 else None
