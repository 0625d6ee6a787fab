"""Exceptions raised by symattn.

Every error a user can cause derives from :class:`SymattnError`; the command
line prints its message on one line and exits with status 2.

Examples
--------
>>> from symattn.errors import SymattnError, ShapeError
>>> issubclass(ShapeError, SymattnError)
True
"""


class SymattnError(Exception):
    """Base class of every error caused by a user's input."""


class NormalizerError(SymattnError, ValueError):
    """A normalizer that is not positive, is constant, is not analytic or does not parse."""


class ParseError(SymattnError, ValueError):
    """User text that is not an accepted expression (see :mod:`symattn.parsing`)."""


class ShapeError(SymattnError, ValueError):
    """Sizes or shapes that do not fit the architecture."""


class DomainError(SymattnError, ValueError):
    """An operation the chosen arithmetic domain cannot carry out (e.g. ``exp`` over GF(p))."""


class TruncationError(SymattnError, ValueError):
    """A truncation order that is too short or invalid for the question asked."""


class BankError(SymattnError, ValueError):
    """An input bank of the wrong shape or size."""


class ResourceLimitError(SymattnError, ValueError):
    """A computation whose estimated memory or size is over the limit (raised before any work)."""
