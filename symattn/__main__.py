"""``python -m symattn``: the ``symattn`` command (see :mod:`symattn.cli`)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
