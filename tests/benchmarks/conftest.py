"""Benchmarks: every test here is marked ``benchmark``; their tables are repeated at the end of the run.

Not collected by the default ``pytest`` run (``--ignore=tests/benchmarks`` in
pyproject.toml); run them with ``pytest tests/benchmarks -s`` (see README.md).
"""

from __future__ import annotations

import pytest

_TABLES: list[tuple[str, list[str]]] = []


def format_table(header: list[str], rows: list[list]) -> list[str]:
    """Plain-text table with right-aligned columns."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[j]) for row in cells) for j in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cells[0], widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells[1:]]
    return lines


@pytest.fixture
def table():
    """``table(title, header, rows)`` prints a table now and again in the terminal summary."""

    def emit(title: str, header: list[str], rows: list[list]) -> None:
        lines = format_table(header, rows)
        _TABLES.append((title, lines))
        print(f"\n{title}\n" + "\n".join(lines), flush=True)

    return emit


def pytest_collection_modifyitems(items):
    for item in items:
        if "benchmarks" in str(item.path):
            item.add_marker(pytest.mark.benchmark)


def pytest_terminal_summary(terminalreporter):
    if not _TABLES:
        return
    terminalreporter.section("benchmark tables")
    for title, lines in _TABLES:
        terminalreporter.write_line(title)
        for line in lines:
            terminalreporter.write_line(line)
        terminalreporter.write_line("")
