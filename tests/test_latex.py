"""Every result exports LaTeX: well formed always, and compiled when pdflatex is installed."""

import re
import shutil
import subprocess

import pytest

from symattn.effective import closed_form_result
from symattn.identify import identify
from symattn.model import Architecture
from symattn.numeric import sensitivity
from symattn.observe import exceptional_fibers, observe
from symattn.report import architecture_report, latex_document
from symattn.spectrum import decay_spectrum

ARCH = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")


def _results():
    spectrum = decay_spectrum(ARCH, progress=False)
    return {
        "report": architecture_report(ARCH),
        "closed form": closed_form_result(ARCH),
        "spectrum": spectrum,
        "sensitivity": sensitivity(ARCH, spectrum=spectrum),
        "identification": identify(ARCH),
        "exceptional fibers": exceptional_fibers(ARCH, max_events=1),
        "observe": observe(ARCH, ["scores:1", "bias"], confirm=False),
    }


RESULTS = _results()


def assert_well_formed(latex: str) -> None:
    # environments close in the order they open, and braces balance outside escapes
    stack = []
    for kind, name in re.findall(r"\\(begin|end)\{([^}]*)\}", latex):
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name, f"\\end{{{name}}} does not close the open environment"
    assert not stack, f"unclosed environments {stack}"
    depth = 0
    for char in re.sub(r"\\[{}]", "", latex):
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth >= 0, "a closing brace without an opening one"
    assert depth == 0, "unbalanced braces"


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_latex_is_well_formed(name):
    result = RESULTS[name]
    fragment = result.to_latex()
    assert_well_formed(fragment)
    document = result.to_latex(standalone=True)
    assert document.startswith("\\documentclass") and document.rstrip().endswith("\\end{document}")
    assert_well_formed(document)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_repr_latex_is_math_for_jupyter(name):
    text = RESULTS[name]._repr_latex_()
    assert text.startswith("$") and text.endswith("$")
    assert "tabular" not in text  # MathJax renders math mode only
    assert_well_formed(text)


def test_well_formed_check_can_fail():
    with pytest.raises(AssertionError):
        assert_well_formed(r"\begin{tabular}{r} 1 \end{array}")
    with pytest.raises(AssertionError):
        assert_well_formed(r"\frac{1}{2")


def compile_without_overflow(document: str, folder, stem: str, timeout: float = 120) -> None:
    """Compile ``document`` with pdflatex in ``folder``: it must succeed with no overfull box over 1pt."""
    source = folder / f"{stem}.tex"
    source.write_text(document)
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", source.name],
                         cwd=folder, capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stdout[-2000:]
    # no table or formula runs into the margin (an overfull box of more than 1pt)
    log = (folder / f"{stem}.log").read_text(errors="replace")
    widths = [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
    assert [w for w in widths if w > 1.0] == []


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
@pytest.mark.parametrize("name", sorted(RESULTS))
def test_latex_compiles_with_pdflatex(name, tmp_path):
    compile_without_overflow(RESULTS[name].to_latex(standalone=True), tmp_path, "result")


def test_latex_document_wraps_a_fragment():
    document = latex_document(r"\[ x^2 \]")
    assert "\\usepackage{amsmath}" in document
    for package in ("[a4paper,margin=2.2cm]{geometry}", "{tabularx}", "{longtable}", "{graphicx}", "{array}", "{float}"):
        assert "\\usepackage" + package in document
    assert_well_formed(document)


def test_every_result_states_its_method_in_latex():
    for name, result in RESULTS.items():
        if name != "closed form":
            assert "\\textit{Method:}" in result.to_latex(), name


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_a_long_expansion_keeps_to_the_page_width(tmp_path):
    from symattn import Normalizer, expand

    # one layer at width 2 with a generic normalizer: F_0 and F_2 have entries far wider than a line
    F = expand(Architecture.uniform(layers=1, width=2, tokens=3), truncation=3, normalizer=Normalizer.generic(1))
    document = F.to_latex(standalone=True)
    assert "F_{2}" in document  # entry by entry or as a matrix formula: the expansion's own choice
    compile_without_overflow(document, tmp_path, "expansion", timeout=300)
