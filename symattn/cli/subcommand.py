"""A subcommand of ``symattn``: its name, its help line, how it runs and its own flags."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # the model loads sympy: not at start-up
    from ..model import Architecture

__all__ = ["Subcommand"]


@dataclass(frozen=True)
class Subcommand:
    """A registered subcommand: ``symattn NAME [common flags] [its own flags]``.

    ``run(args, arch)`` returns a result value with ``to_json()`` and
    ``to_latex()``; ``to_markdown()`` is used when present, else ``str()``.
    ``configure(parser)`` adds the subcommand's own arguments.  A flag of its
    own that writes files (``--plot``, ``--export``) appends their paths to
    ``args.written``; the command then says what it wrote, as it does for ``--out``.
    ``examples`` are command lines ``symattn NAME --help`` shows under its flags.

    Examples
    --------
    >>> command = Subcommand("hello", "say hello", lambda args, arch: None)
    >>> command.name, command.configure is None
    ('hello', True)
    """

    name: str
    help: str
    run: Callable[[argparse.Namespace, Architecture], Any]
    configure: Callable[[argparse.ArgumentParser], None] | None = None
    examples: tuple[str, ...] = ()
