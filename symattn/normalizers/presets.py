"""The names of normalizers and the reading of one: the variable ``x``, presets, ``generic(k)``, expressions.

What a user writes (a preset name, ``generic(k=2, even)``, an expression in
``x`` as text or sympy) becomes a sympy expression in :data:`x` here, through
the package's one safe parser (:mod:`symattn.parsing`) and its size limits;
every refusal is a :class:`~symattn.errors.NormalizerError` that names what
would be accepted.
"""

from __future__ import annotations

import re

import sympy as sp

from ..errors import NormalizerError
from ..languages import PRESET_SUMMARY
from ..parsing import NORMALIZER_LIMITS, measure_expression, parse_expression

__all__ = ["PRESETS", "x", "check_size"]

#: The variable in which normalizers are written.
x = sp.Symbol("x", real=True)

#: The presets that are expressions, by name (``lightning`` and ``generic(k)`` are the other names of
#: :data:`symattn.languages.NORMALIZER_PRESETS`).
PRESETS = {
    "softmax": sp.exp(x),
    "exp": sp.exp(x),
    "cosh": sp.cosh(x),
    "quadratic": 1 + x**2,
    "gauss": sp.exp(x**2),
    "softplus": sp.log(1 + sp.exp(x)),
    "sigmoid": 1 / (1 + sp.exp(-x)),
}

def _parse(expression) -> sp.Expr:
    if isinstance(expression, str):
        if expression.strip().lower() in PRESETS:
            return PRESETS[expression.strip().lower()]
        if expression.strip().lower().startswith("generic"):
            if _generic_name(expression.strip().lower()) is not None:
                raise NormalizerError(
                    f"{expression.strip()!r} is generic Taylor data, not an expression: use "
                    f"as_normalizer({expression.strip()!r}) or Normalizer.generic(k, even)")
            raise NormalizerError(
                f"cannot read the generic normalizer {expression.strip()!r:.80}: write generic, generic(k), "
                "generic(k=2), generic(2, even) or generic(k=2, even=True), with k a positive integer")
        if expression.strip().isidentifier() and expression.strip() != "x":
            raise NormalizerError(
                f"unknown normalizer {expression.strip()!r:.80}: presets are {PRESET_SUMMARY}; "
                "or give an expression in x such as 'exp(x)' or '1 + x**2'")
        expr = parse_expression(expression, {}, what="normalizer", limits=NORMALIZER_LIMITS,
                                error=NormalizerError, variable=x)
    elif isinstance(expression, sp.Basic):
        expr = expression
    else:
        raise NormalizerError(
            f"a normalizer is a preset name ({PRESET_SUMMARY}), an expression in x such as "
            f"'1 + x**2', or a sympy expression; got {type(expression).__name__} {expression!r:.60}")
    if not isinstance(expr, sp.Expr):
        raise NormalizerError(f"normalizer {expression!r} is not an expression in x")
    if expr.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise NormalizerError(f"normalizer {expression!r} is not finite; give a finite expression in x")
    undefined = sorted({str(f.func) for f in expr.atoms(sp.core.function.AppliedUndef)})
    if undefined:
        raise NormalizerError(
            f"normalizer {expression!r} uses unknown function(s) {', '.join(undefined)}; "
            "use functions such as exp, cosh, log, sin, or a preset: " + PRESET_SUMMARY
        )
    if isinstance(expr, sp.Symbol) and expr != x:
        raise NormalizerError(
            f"unknown normalizer {expression!r}: presets are {PRESET_SUMMARY}; "
            "or give an expression in x such as 'exp(x)'"
        )
    free = expr.free_symbols
    if len(free) > 1:
        names = ", ".join(sorted(str(s) for s in free))
        raise NormalizerError(
            f"normalizer {expression!r} has more than one free symbol ({names}); "
            "a normalizer is a function of one variable x"
        )
    if free and free != {x}:
        (other,) = free
        expr = expr.subs(other, x)
    check_size(expr, expression)
    return expr


def check_size(expr: sp.Expr, given) -> None:
    """The limits of :data:`~symattn.parsing.NORMALIZER_LIMITS`, also for expressions not given as text.

    Among them the nesting of transcendental functions (at most 3):
    ``exp(exp(exp(exp(x))))`` is refused before any series is computed.

    Examples
    --------
    >>> check_size(sp.exp(sp.exp(x)), "exp(exp(x))")
    >>> check_size(sp.exp(sp.exp(sp.exp(sp.exp(x)))), "exp(exp(exp(exp(x))))")
    Traceback (most recent call last):
    ...
    symattn.errors.NormalizerError: the normalizer 'exp(exp(exp(exp(x))))' nests 4 functions or powers with a non-constant exponent; at most 3 are accepted
    """
    limits = NORMALIZER_LIMITS
    if sp.count_ops(expr) > limits.max_nodes:
        raise NormalizerError(f"normalizer {given!r:.80} is too large: more than {limits.max_nodes} operations")
    measure_expression(expr, what="normalizer", limits=limits, error=NormalizerError)


#: ``generic``, ``generic(2)``, ``generic(k=2)``, ``generic(2, even)``, ``generic(k=2, even=True)``: read by
#: this pattern only (user text is data, never code).
_GENERIC = re.compile(r"generic(?:\(\s*(?:k\s*=\s*)?(\d{1,4})\s*(?:,\s*(even)(?:\s*=\s*(true|false))?\s*)?\))?")


def _generic_name(key: str):
    """``(k, even)`` of a generic normalizer's name (lower case), None for another name.

    Examples
    --------
    >>> _generic_name("generic"), _generic_name("generic(k=2, even)"), _generic_name("generic(2, even=false)")
    ((1, False), (2, True), (2, False))
    >>> _generic_name("generic(x)") is None
    True
    """
    match = _GENERIC.fullmatch(key)
    if match is None:
        return None
    k, even, flag = match.groups()
    return (int(k) if k else 1), (even is not None and flag != "false")

