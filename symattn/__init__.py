"""symattn: identifiability and observability of deep normalized attention."""

__version__ = "0.1.0"
