"""symattn: identifiability and observability of deep normalized attention.

The everyday API is here, as in sympy and networkx: build an
:class:`Architecture`, then ask :func:`expand`, :func:`leading_coefficient`,
:func:`decay_spectrum`, :func:`identify`, :func:`observe` or
:func:`check_expression` (:func:`check_claims` for claims as text, as
``symattn check``); :func:`symbols` gives the package's symbols by name.
Everything but the errors is imported on first use (sympy, numpy and
networkx load when a name that needs them is first asked for), so ``import
symattn`` and ``symattn --version`` stay quick.

Examples
--------
>>> import symattn
>>> symattn.Architecture.uniform(layers=2).param_count
16
>>> from symattn import Architecture, Normalizer, expand, symbols
>>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
>>> F = expand(arch, truncation=3, normalizer=Normalizer.generic(1))
>>> F.subs(symbols("c_1", arch, normalizer=Normalizer.generic(1)), 0)[2]
Matrix([[0, 0]])
"""

import os

# sympy >= 1.13 switches to python-flint ground types when python-flint is installed;
# with them sympy.series on large rational expressions has crashed the interpreter
# (SIGFPE in heuristic gcd).  Keep sympy's own ground types unless the user chose.
os.environ.setdefault("SYMPY_GROUND_TYPES", "python")

from .errors import (  # noqa: E402
    BankError, DomainError, NormalizerError, ParseError, ShapeError, SymattnError, TruncationError,
)
from .errors import ResourceLimitError  # noqa: E402

__version__ = "0.1.0"

from .analyses import top_level_names  # noqa: E402  (names as text: nothing heavy is imported)

#: The public names, imported on first use: public name -> (module, attribute or None for the module).
#: ``expand``, ``identify``, ``observe`` and ``sweep`` are modules that call their function when called.
#: The analyses' names come from the one registry (:mod:`symattn.analyses`); the network's are here.
_LAZY = {
    "Architecture": ("symattn.model", "Architecture"),
    "forward": ("symattn.model", "forward"),
    "closed_form": ("symattn.model", "closed_form"),
    "Normalizer": ("symattn.normalizers", "Normalizer"),
    **top_level_names(),
}

def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'symattn' has no attribute {name!r}")
    import importlib

    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Architecture",
    "Normalizer",
    "forward",
    "closed_form",
    *top_level_names(),
    "SymattnError",
    "NormalizerError",
    "ParseError",
    "ShapeError",
    "DomainError",
    "TruncationError",
    "BankError",
    "ResourceLimitError",
]
