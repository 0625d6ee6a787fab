"""The report compiled with pdflatex and rendered page by page: every section headed, nothing overflowing.

``symattn report --out DIR`` for the default architecture and for a wider
cosh network, compiled as a reader would, then rendered with pdftoppm.  The
checks: the pages exist, the log has no overfull box wider than
``OVERFULL_TOLERANCE_PT`` (a table or formula running into the margin), every
heading and both figure captions are on the pages, and the figures are the
PDF files drawn beside the report.  Skipped only when pdflatex or the
poppler tools are not installed (``.ci/run`` installs them).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from symattn.cli import main

TOOLS = ("pdflatex", "pdftoppm", "pdftotext")
pytestmark = [pytest.mark.skipif(any(shutil.which(tool) is None for tool in TOOLS),
                                 reason="pdflatex or the poppler tools (pdftoppm, pdftotext) are not installed"),
              pytest.mark.slow]  # pdflatex on whole reports: not in the fast tier

#: An overfull box up to this width (a rounding of a column) is tolerated; a table past the margin is not.
OVERFULL_TOLERANCE_PT = 1.0

ARCHITECTURES = {
    "default": [],
    "cosh": ["--layers", "2", "--width", "3", "--rank", "2", "--tokens", "4", "--normalizer", "cosh"],
}

HEADINGS = [
    "symattn report", "Architecture", "Notation", "Closed form", "Effective parameters and symmetries",
    "Decay spectrum near query/key collapse", "Numerical sensitivity (mpmath and float64)",
    "Identifiability: dimension, generic fiber, identification orders", "Dimension of the function space",
    "Generic fiber", "Identification orders along simultaneous query/key collapse", "Observability under collapse",
]


def overfull_boxes(log: str) -> list[float]:
    """The widths in pt of every overfull ``\\hbox`` in a pdflatex log.

    Examples
    --------
    >>> overfull_boxes("Overfull \\\\hbox (55.03008pt too wide) detected at line 155\\nOverfull \\\\vbox (2pt too high)")
    [55.03008]
    """
    return [float(width) for width in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]


@pytest.fixture(scope="module", params=sorted(ARCHITECTURES))
def compiled(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"report-{request.param}")
    assert main(["report", "--quiet", "--out", str(folder), *ARCHITECTURES[request.param]]) == 0
    for _ in range(2):  # longtable sets its column widths on the second run, as a reader compiles it
        run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
                             cwd=folder, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-3000:]
    subprocess.run(["pdftoppm", "-png", "-r", "40", "report.pdf", "page"], cwd=folder, check=True, timeout=300)
    text = subprocess.run(["pdftotext", "-layout", "report.pdf", "-"], cwd=folder, check=True,
                          capture_output=True, text=True, timeout=300).stdout
    return request.param, folder, text


def test_the_pages_are_rendered(compiled):
    name, folder, _ = compiled
    pages = sorted(folder.glob("page-*.png"))
    assert len(pages) >= 5, [p.name for p in pages]
    for page in pages:
        assert page.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and page.stat().st_size > 2000


def test_nothing_overflows(compiled):
    _, folder, _ = compiled
    log = (folder / "report.log").read_text(errors="replace")
    too_wide = [width for width in overfull_boxes(log) if width > OVERFULL_TOLERANCE_PT]
    assert too_wide == []
    assert "LaTeX Warning: Float too large" not in log
    assert "Rerun LaTeX" not in log  # the second run settled every table


def test_every_section_is_headed_on_the_pages(compiled):
    _, _, text = compiled
    flat = " ".join(text.split())
    positions = [flat.find(heading) for heading in HEADINGS]
    assert -1 not in positions, [h for h, p in zip(HEADINGS, positions) if p == -1]
    assert positions == sorted(positions)  # in the order of the report


def test_figures_with_captions(compiled):
    name, folder, text = compiled
    flat = " ".join(text.split())
    assert "Figure 1: Singular values σj of the native Jacobian J(ε) along the collapse curve" in flat
    assert "Figure 2: The dependency graph after each score collapse (one panel per event)" in flat
    latex = (folder / "report.tex").read_text()
    for stem in ("sensitivity", "dependency_graph"):
        assert rf"\includegraphics[width=\linewidth,height=0.85\textheight,keepaspectratio]{{{stem}.pdf}}" in latex
        assert (folder / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"


def test_one_name_per_block_on_the_pages(compiled):
    name, _, text = compiled
    layers = 3 if name == "default" else 2
    flat = " ".join(text.split())
    for i in range(1, layers + 1):
        # the spectrum's and the orders' block tables and the observability table name the block scores:i
        assert flat.count(f"scores:{i}") >= 4
    assert "scores 1" not in flat  # the name the identification orders used to give the block


def test_overfull_boxes_are_read_from_the_log():
    log = "Overfull \\hbox (40.41618pt too wide) in alignment at lines 240--244\nOverfull \\hbox (0.5pt too wide) in"
    assert overfull_boxes(log) == [40.41618, 0.5]
    assert [w for w in overfull_boxes(log) if w > OVERFULL_TOLERANCE_PT] == [40.41618]


def test_a_report_with_skipped_sections_compiles(tmp_path):
    from symattn.model import Architecture
    from symattn.report import full_report

    report = full_report(Architecture.uniform(layers=1, width=1), max_memory="1K")
    latex = report.to_latex(standalone=True)
    assert "skipped: over the memory limit: " in latex
    (tmp_path / "skipped.tex").write_text(latex)
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "skipped.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "skipped.log").read_text(errors="replace")
    assert [w for w in overfull_boxes(log) if w > OVERFULL_TOLERANCE_PT] == []


# every command's --latex --standalone document: tests/test_latex_pdf.py


def test_the_report_of_a_network_with_heads_compiles(tmp_path):
    assert main(["report", "--quiet", "--layers", "2", "--heads", "2", "--out", str(tmp_path)]) == 0
    for _ in range(2):
        run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "report.log").read_text(errors="replace")
    assert [w for w in overfull_boxes(log) if w > OVERFULL_TOLERANCE_PT] == []
    latex = (tmp_path / "report.tex").read_text()
    assert r"effective dimension & none derived (F does not factor through " \
           r"$\widehat W_{i}$ and P for this network: see the method) \\" in latex
