"""The exception that ends a check: the first field or claim of a certificate that does not hold.

This module imports nothing: it is part of the independent checker.
"""

from __future__ import annotations

__all__ = ["Disagreement"]


class Disagreement(Exception):
    """The first field or claim that does not check; its message says which and why.

    Examples
    --------
    >>> str(Disagreement("prime 91 is not a prime"))
    'prime 91 is not a prime'
    """
