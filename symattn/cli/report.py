"""``symattn report``: the architecture's summary and every analysis, as one report."""

from __future__ import annotations

from ..report import full_report
from .subcommand import Subcommand

__all__ = ["COMMANDS", "run_report"]


def run_report(args, arch):
    """The whole report (:func:`symattn.report.full_report`)."""
    return full_report(arch, progress=not args.quiet)


COMMANDS = (
    Subcommand("report", "summarize the architecture: parameters, effective dimension, gauge and sign symmetries",
               run_report),
)
