"""``symattn expand``: the exact expansion along query/key collapse, or a layer's leading coefficient.

By default the terminal gets a summary (the size of each ``F_n`` and the
matrix form of every layer's leading coefficient up to the order): the
entries of a symbolic expansion run to tens of kilobytes of LaTeX.
``--entries`` prints every entry as Markdown; ``--latex``, ``--json`` and
``--out DIR`` give every entry in those formats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import SymattnError
from .subcommand import Subcommand

if TYPE_CHECKING:  # sympy: not at start-up
    from ..expand import Expansion

__all__ = ["COMMANDS", "configure_expand", "run_expand", "ExpansionOutput", "MAX_OUTPUT_TERMS"]

#: Default of ``--max-output-terms``: the entries of F_0..F_n are written out (Markdown, LaTeX, JSON)
#: only up to this many terms in all; sympy prints about 5 000 terms a second, several times over for
#: ``--out`` (Markdown, LaTeX, JSON).
MAX_OUTPUT_TERMS = 50_000


def configure_expand(parser) -> None:
    """``--order``, ``--generic K``, ``--leading LAYER``, ``--entries``, ``--max-output-terms N``.

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, _ = parse_command(configure_expand, ["--order", "4", "--generic", "2"])
    >>> args.order, args.generic, args.leading, args.entries, args.max_output_terms
    (4, 2, None, False, 50000)
    """
    parser.add_argument("--order", type=int, default=None,
                        help="highest power of eps kept (default: where layer 1's scores first appear)")
    parser.add_argument("--generic", metavar="K", type=int, default=None,
                        help="replace the normalizers by generic Taylor data 1 + c_K x^K + ... (symbols)")
    parser.add_argument("--leading", metavar="LAYER", type=int, default=None,
                        help="print the matrix formula of LAYER's leading coefficient instead")
    parser.add_argument("--entries", action="store_true",
                        help="print every entry of F_0..F_n as Markdown (default: a summary with the matrix "
                             "forms; --latex, --json and --out DIR always give every entry)")
    parser.add_argument("--max-output-terms", metavar="N", type=int, default=MAX_OUTPUT_TERMS,
                        help=f"largest number of terms written out entry by entry (--entries, --latex, --json, "
                             f"--out; default {MAX_OUTPUT_TERMS}: sympy prints about 5 000 terms a second)")


@dataclass(frozen=True)
class ExpansionOutput:
    """What ``symattn expand`` prints: a summary in Markdown unless ``--entries``; every entry in the files.

    ``to_json`` and ``to_latex`` are the expansion's own (every entry);
    ``to_markdown`` is :meth:`~symattn.expand.Expansion.summary` and a pointer
    to the flags that give the entries, or with ``entries=True`` the
    expansion's full Markdown.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.expand import expand
    >>> F = expand(Architecture.uniform(layers=1, width=1, tokens=2), order=2)
    >>> out = ExpansionOutput(F, entries=False)
    >>> out.to_json() == F.to_json(), "$$F_{2} =" in out.to_markdown(), "--entries" in out.to_markdown()
    (True, False, True)
    >>> "$$F_{2} =" in ExpansionOutput(F, entries=True).to_markdown()
    True
    >>> ExpansionOutput(F, max_terms=5).to_json()
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: F_0..F_2 have 10 terms: writing them out takes minutes (sympy prints about 5 000 terms a second) and tens of megabytes; the summary (without --entries, --latex, --json, --out) gives the sizes and the matrix forms; --max-output-terms 10 writes them anyway
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
                f"about 5 000 terms a second) and tens of megabytes; the summary (without --entries, --latex, "
                f"--json, --out) gives the sizes and the matrix forms; --max-output-terms {terms} writes them "
                f"anyway")

    def to_json(self) -> dict:
        self._guard()
        return self.expansion.to_json()

    def to_latex(self, standalone: bool = False) -> str:
        self._guard()
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
    >>> args, arch = parse_command(configure_expand, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--order", "2"])
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
    return ExpansionOutput(expand(arch, order=args.order, normalizer=normalizer, progress=not args.quiet,
                                  max_memory=args.max_memory),
                           entries=getattr(args, "entries", False),
                           max_terms=getattr(args, "max_output_terms", MAX_OUTPUT_TERMS))


COMMANDS = (
    Subcommand("expand",
               "exact expansion F_0..F_n of the output along query/key collapse (a summary with the matrix forms; "
               "--entries, --latex, --json or --out for every entry), or a layer's leading coefficient",
               run_expand, configure_expand),
)
