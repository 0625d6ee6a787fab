"""``symattn report``: the architecture's summary and every analysis, as one report."""

from __future__ import annotations

from .subcommand import Subcommand

__all__ = ["COMMANDS", "run_report"]


def run_report(args, arch):
    """The whole report (:func:`symattn.report.full_report`).

    Examples
    --------
    >>> from symattn.cli.arguments import parse_command
    >>> args, arch = parse_command(None, ["--layers", "1", "--width", "1", "--tokens", "2", "--quiet"])
    >>> report = run_report(args, arch)
    >>> report.params, report.effective_dim, report.gauge_dim, report.sign_group_order
    (3, 2, 1, 1)
    """
    from ..report import full_report

    return full_report(arch, progress=not args.quiet)


COMMANDS = (
    Subcommand("report", "the whole report: architecture, notation, closed form, symmetries, decay spectrum, "
                         "numerical sensitivity, identifiability and observability (--out DIR: Markdown, LaTeX, "
                         "JSON and the figures)",
               run_report,
               examples=("symattn report --layers 2",
                         "symattn report --layers 2 --normalizer cosh --out results/",
                         "symattn report --widths 3,2,2 --ranks 2,1 --latex --standalone > report.tex")),
)
