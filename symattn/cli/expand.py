"""``symattn expand``: the exact expansion along query/key collapse, or a layer's leading coefficient.

By default the terminal gets a summary (the size of each ``F_n`` and the
matrix form of every layer's leading coefficient below the truncation): the
entries of a symbolic expansion run to tens of kilobytes of LaTeX.
``--truncation N`` keeps the series modulo ``eps^N`` (``F_0 .. F_{N-1}``, as
the spectrum's ``--truncation``); the old ``--order`` is refused, naming
``--truncation N+1``.  ``--entries`` prints every entry as Markdown;
``--json`` and ``--out DIR`` give every entry; ``--latex`` gives a document
with a header, the matrix forms, and each ``F_n`` in matrix form or factored
entry by entry (up to :data:`~symattn.expand.LATEX_MAX_TERMS` terms).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import SymattnError
from .subcommand import Subcommand

if TYPE_CHECKING:  # sympy: not at start-up
    from ..expand import Expansion

__all__ = ["COMMANDS", "configure_expand", "run_expand", "ExpansionOutput", "MAX_OUTPUT_TERMS", "RefusedOrder"]

#: Default of ``--max-output-terms``: the entries of F_0..F_n are written out (Markdown, LaTeX, JSON)
#: only up to this many terms in all; sympy prints about 5 000 terms a second, several times over for
#: ``--out`` (Markdown, LaTeX, JSON).
MAX_OUTPUT_TERMS = 50_000


class RefusedOrder(argparse.Action):
    """The old ``--order N`` (highest power kept): a usage error naming ``--truncation N+1`` (exit status 2).

    Hidden from ``--help``; ``--truncation N`` keeps the series modulo ``eps^N``.

    Examples
    --------
    >>> from symattn.cli import main
    >>> main(["expand", "--layers", "1", "--order", "2"])
    2
    """

    def __call__(self, parser, namespace, values, option_string=None):
        text = str(values).strip()
        new = f"--truncation {int(text) + 1}" if text.isascii() and text.isdigit() and len(text) < 6 \
            else "--truncation N+1"
        parser.error(f"--order is no longer accepted (it meant the highest power of eps kept): give {new} "
                     f"instead (--truncation N keeps the series modulo eps^N, F_0..F_(N-1), as in symattn spectrum)")


def configure_expand(parser) -> None:
    """``--truncation N``, ``--generic K``, ``--leading LAYER``, ``--entries``, ``--max-output-terms N``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_expand, ["--truncation", "5", "--generic", "2"])
    >>> args.truncation, args.generic, args.leading, args.entries, args.max_output_terms
    (5, 2, None, False, 50000)
    """
    parser.add_argument("--truncation", metavar="N", type=int, default=None,
                        help="keep the series modulo eps^N: F_0..F_(N-1) (default: just past where layer 1's "
                             "scores first appear)")
    parser.add_argument("--order", action=RefusedOrder, help=argparse.SUPPRESS)
    parser.add_argument("--generic", metavar="K", type=int, default=None,
                        help="replace the normalizers by generic Taylor data 1 + c_K x^K + ... (symbols)")
    parser.add_argument("--leading", metavar="LAYER", type=int, default=None,
                        help="print the matrix formula of LAYER's leading coefficient instead")
    parser.add_argument("--entries", action="store_true",
                        help="print every entry of F_0..F_n as Markdown (default: a summary with the matrix "
                             "forms; --json and --out DIR always give every entry, --latex a document with the "
                             "matrix forms and the factored entries)")
    parser.add_argument("--max-output-terms", metavar="N", type=int, default=MAX_OUTPUT_TERMS,
                        help=f"largest number of terms written out entry by entry (--entries, --json, --out; "
                             f"default {MAX_OUTPUT_TERMS}: sympy prints about 5 000 terms a second)")


@dataclass(frozen=True)
class ExpansionOutput:
    """What ``symattn expand`` prints: a summary in Markdown unless ``--entries``; every entry in the files.

    ``to_json`` is the expansion's own (every entry), refused past
    ``max_terms`` terms; ``to_latex`` is the expansion's document (the matrix
    forms, then the entries factored, at most
    :data:`~symattn.expand.LATEX_MAX_TERMS` terms of them, so never refused);
    ``to_markdown`` is :meth:`~symattn.expand.Expansion.summary` and a pointer
    to the flags that give the entries, or with ``entries=True`` the
    expansion's full Markdown.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.expand import expand
    >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3)
    >>> out = ExpansionOutput(F, entries=False)
    >>> out.to_json() == F.to_json(), "$$F_{2} =" in out.to_markdown(), "--entries" in out.to_markdown()
    (True, False, True)
    >>> "$$F_{2} =" in ExpansionOutput(F, entries=True).to_markdown()
    True
    >>> ExpansionOutput(F, max_terms=5).to_json()
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: F_0..F_2 have 10 terms: writing them out takes minutes (sympy prints about 5 000 terms a second) and tens of megabytes; the summary (without --entries, --json, --out) gives the sizes and the matrix forms, --latex the matrix forms and the first entries factored; --max-output-terms 10 writes them anyway
    >>> ExpansionOutput(F, max_terms=5).to_latex().startswith("\\\\section*{Expansion of the output}")
    True
    """

    expansion: Expansion
    entries: bool = False
    max_terms: int | None = MAX_OUTPUT_TERMS

    def _guard(self) -> None:
        """A SymattnError before writing out more than ``max_terms`` terms (None: no limit)."""
        if self.max_terms is None:
            return
        terms = sum(count for _, count in self.expansion.term_counts())
        if terms > self.max_terms:
            raise SymattnError(
                f"F_0..F_{self.expansion.order} have {terms} terms: writing them out takes minutes (sympy prints "
                f"about 5 000 terms a second) and tens of megabytes; the summary (without --entries, --json, "
                f"--out) gives the sizes and the matrix forms, --latex the matrix forms and the first entries "
                f"factored; --max-output-terms {terms} writes them anyway")

    def to_json(self) -> dict:
        self._guard()
        return self.expansion.to_json()

    def to_latex(self, standalone: bool = False) -> str:
        return self.expansion.to_latex(standalone=standalone)

    def to_markdown(self) -> str:
        if self.entries:
            self._guard()
            return self.expansion.to_markdown()
        return (self.expansion.summary() + "\nEvery entry of F_0..F_" + str(self.expansion.order)
                + ": --entries (Markdown), --latex, --json, or --out DIR (files).\n")

    def __str__(self) -> str:
        return self.to_markdown()


def run_expand(args, arch):
    """:func:`symattn.expand.expand` (as :class:`ExpansionOutput`), or with ``--leading`` :func:`~symattn.expand.leading_coefficient`.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(configure_expand, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--truncation", "3"])
    >>> run_expand(args, arch).expansion.coefficients[1]
    Matrix([[0, 0]])
    >>> args, arch = parse_command(configure_expand, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--leading", "1"])
    >>> print(run_expand(args, arch).formula)
    (1/2)*Vt1*X*(I - (1/2)*1)*X.T*Kt1.T*Qt1*X
    """
    from ..expand import expand, leading_coefficient
    from ..normalizers import Normalizer

    normalizer = Normalizer.generic(args.generic) if args.generic is not None else None
    if args.leading is not None:
        return leading_coefficient(arch, args.leading, normalizer)
    return ExpansionOutput(expand(arch, truncation=args.truncation, normalizer=normalizer, progress=not args.quiet,
                                  max_memory=args.max_memory),
                           entries=getattr(args, "entries", False),
                           max_terms=getattr(args, "max_output_terms", MAX_OUTPUT_TERMS))


COMMANDS = (
    Subcommand("expand",
               "exact expansion F_0..F_n of the output along query/key collapse (a summary with the matrix forms; "
               "--entries, --latex, --json or --out for every entry), or a layer's leading coefficient",
               run_expand, configure_expand,
               examples=("symattn expand --layers 1 --width 1 --tokens 2 --truncation 3 --generic 1",
                         "symattn expand --layers 1 --width 1 --tokens 2 --truncation 3 --generic 1 --entries",
                         "symattn expand --layers 2 --width 1 --truncation 7 --generic 1 --out expansion/",
                         "symattn expand --layers 1 --latex --standalone > expansion.tex",
                         "symattn expand --layers 2 --leading 2 --latex")),
)
