"""The everyday API at the top level and the package's symbols by name."""

import inspect
import subprocess
import sys

import pytest
import sympy as sp

import symattn
from symattn import Architecture, Normalizer, SymattnError


def test_top_level_names_are_the_analyses():
    from symattn import (check_expression, decay_spectrum, expand, full_report, function_space_dimension,
                         identify, leading_coefficient, observe, symbols)
    import symattn.check
    import symattn.expand
    import symattn.identify
    import symattn.observe
    import symattn.report
    import symattn.spectrum

    assert check_expression is symattn.check.check_expression
    assert decay_spectrum is symattn.spectrum.decay_spectrum
    assert leading_coefficient is symattn.expand.leading_coefficient
    assert symbols is symattn.expand.symbols
    assert full_report is symattn.report.full_report
    assert function_space_dimension is symattn.identify.function_space_dimension
    # the modules that share their function's name call it
    assert expand is symattn.expand and identify is symattn.identify and observe is symattn.observe
    assert inspect.signature(expand) == inspect.signature(symattn.expand.expand)
    assert set(symattn.__all__) <= set(dir(symattn))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        symattn.nonexistent


def test_calling_the_modules_gives_the_functions_results():
    arch = Architecture.uniform(layers=1, width=1, tokens=2)
    F = symattn.expand(arch, truncation=3, normalizer=Normalizer.generic(1))
    G = symattn.expand.expand(arch, truncation=3, normalizer=Normalizer.generic(1))
    assert F[2] == G[2] and F.truncation == 3
    report = symattn.identify(arch, estimate=None)
    assert (report.dimension.lower, report.dimension.upper) == (2, 2)
    assert symattn.observe(Architecture.uniform(layers=2, width=2, tokens=3)).to_json() == \
        symattn.observe.observe(Architecture.uniform(layers=2, width=2, tokens=3)).to_json()


def test_import_symattn_does_not_import_the_analyses():
    code = "import sys, symattn; print(sorted(m for m in sys.modules if m in ('symattn.expand', 'symattn.spectrum', 'symattn.identify', 'symattn.observe')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_symbols_are_the_ones_the_results_use():
    arch = Architecture.uniform(layers=2, width=2, tokens=3)
    generic = Normalizer.generic(1)
    c1, x11, qt = symattn.symbols("c_1, x_11 Qt1_11", arch, normalizer=generic)
    assert (c1.name, x11.name, qt.name) == ("c_1", "x_11", "Qt1_11")
    assert c1 != sp.Symbol("c_1") and c1.is_real and c1.is_nonzero
    F = symattn.expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=3, normalizer=generic)
    assert symattn.symbols("c_1", Architecture.uniform(layers=1, width=1, tokens=2), normalizer=generic) \
        in F[2].free_symbols
    # the native parameters are the ones of Architecture.symbols()
    assert symattn.symbols(["Q2_12"], arch) == arch.symbols().Q[1][0, 1]
    # the matrices of the matrix forms, and the alias What_i
    lc = symattn.leading_coefficient(arch, 2, generic)
    C2, What2, P = symattn.symbols("C_2 What_2 P", arch)
    assert {C2, P} <= lc.matrix_form.atoms(sp.MatrixSymbol)
    assert What2 == lc.symbol("What2") and C2.shape == (3, 3)
    # a coefficient deeper than the default order is known when asked for
    assert symattn.symbols("c_9", arch, normalizer=generic).name == "c_9"


@pytest.mark.parametrize("names, message", [
    ("c_1", "unknown symbol name 'c_1'"),            # softmax has no symbolic coefficients
    ("x_41", "unknown symbol name 'x_41'"),          # width 2: no fourth row
    ("What_3", "unknown symbol name 'What_3'"),      # two layers
    ("", "nonempty"),
    (["x_11", 3], "list of strings"),
    (7, "a string or a list of strings"),
])
def test_unknown_names_are_errors(names, message):
    with pytest.raises(SymattnError, match=message):
        symattn.symbols(names, Architecture.uniform(layers=2, width=2, tokens=3))


@pytest.mark.parametrize("page, least", [("README.md", 10), ("docs/quickstart.md", 10)])
def test_the_python_examples_of_the_readme_and_quickstart_run(page, least):
    import doctest
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, page, page, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0 and len(test.examples) >= least
