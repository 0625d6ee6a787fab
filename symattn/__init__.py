"""symattn: identifiability and observability of deep normalized attention.

Examples
--------
>>> import symattn
>>> symattn.Architecture.uniform(layers=2).param_count
16
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
from .model import Architecture, closed_form, forward  # noqa: E402
from .normalizers import Normalizer  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Architecture",
    "Normalizer",
    "forward",
    "closed_form",
    "SymattnError",
    "NormalizerError",
    "ParseError",
    "ShapeError",
    "DomainError",
    "TruncationError",
    "BankError",
    "ResourceLimitError",
]
