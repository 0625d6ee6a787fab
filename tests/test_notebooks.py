"""Every notebook in notebooks/ runs from top to bottom without an error."""

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))



def kernel_manager():
    """A kernel manager whose "python3" kernel is this interpreter.

    With no kernel directories, jupyter_client falls back to ipykernel's
    built-in spec, which launches ``sys.executable``; a ``python3`` kernelspec
    installed elsewhere (user or system) cannot redirect the notebooks to
    another Python.
    """
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    return KernelManager(
        kernel_name="python3",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[]),
    )


if NOTEBOOKS:

    @pytest.mark.slow  # a kernel per notebook: not in the fast tier
    @pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
    def test_notebook_runs(path, monkeypatch):
        nbformat = pytest.importorskip("nbformat")
        nbclient = pytest.importorskip("nbclient")
        pytest.importorskip("ipykernel")

        # The kernel imports the symattn of this checkout.
        pythonpath = os.environ.get("PYTHONPATH")
        monkeypatch.setenv(
            "PYTHONPATH",
            os.pathsep.join([str(REPO_ROOT)] + ([pythonpath] if pythonpath else [])),
        )
        monkeypatch.setenv("MPLBACKEND", "Agg")

        notebook = nbformat.read(path, as_version=4)
        km = kernel_manager()
        assert km.kernel_spec.argv[0] == sys.executable
        client = nbclient.NotebookClient(
            notebook,
            km=km,
            kernel_name="python3",
            timeout=600,
            resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
        )
        before = sorted(p.name for p in NOTEBOOKS_DIR.iterdir())
        # Raises CellExecutionError, naming the cell, on the first error.
        client.execute()
        # a notebook run from its folder leaves nothing behind (figures are drawn inline)
        assert sorted(p.name for p in NOTEBOOKS_DIR.iterdir()) == before
        # a cell that makes a figure displays it (notebook 02's numbers.figure() showed nothing)
        for cell in notebook.cells:
            if cell.cell_type == "code" and ".figure()" in cell.source:
                kinds = {kind for output in cell.outputs for kind in output.get("data", {})}
                assert "image/png" in kinds, f"{path.name}: {cell.source!r} displayed {sorted(kinds)}"

else:

    def test_notebooks_folder():
        assert NOTEBOOKS_DIR.is_dir(), f"missing notebooks folder {NOTEBOOKS_DIR}"
        pytest.skip("no notebooks in notebooks/")


def _code_cells(path):
    import json

    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_use_the_public_api(path):
    """No engine internals (symattn.algebra, private modules) and no test of a class by its name."""
    import re

    for source in _code_cells(path):
        imported = re.findall(r"(?:from|import)\s+(symattn[\w.]*)", source)
        internal = [name for name in imported if name.startswith("symattn.algebra") or "._" in name]
        assert not internal, f"{path.name} imports engine internals {internal}"
        assert not re.search(r"__name__\s*==", source), f"{path.name} tests an object by its class name"


@pytest.mark.parametrize("name", ["02_decay_spectrum", "04_checking_hand_calculations", "06_variants"])
def test_notebooks_show_rendered_results(name):
    """Results are displayed (LaTeX, Markdown tables, figures), not printed as plain text."""
    sources = _code_cells(NOTEBOOKS_DIR / f"{name}.ipynb")
    assert not [s for s in sources if "print(" in s], f"{name} prints plain text"


def test_notebook_figures_are_results_not_statements():
    """A cell that makes a figure shows it: ``x.figure()`` is the cell's result, not silenced by ``;``.

    Notebook 02's last cell was ``numbers.figure();``: the semicolon (and a
    figure outside pyplot, which the inline backend does not show by itself)
    left the cell, and its page in the docs, empty.
    """
    import re

    for path in NOTEBOOKS:
        for source in _code_cells(path):
            last = source.strip().splitlines()[-1] if source.strip() else ""
            assert not re.search(r"\.figure\(\)\s*;", last), f"{path.name}: {last!r} displays nothing"
            if re.search(r"\.figure\(\)\s*(#.*)?$", last):
                assert "%matplotlib inline" in source, f"{path.name}: {last!r} needs the inline backend to show"


def test_wide_display_math_scrolls_in_its_block():
    """The docs' stylesheet lets display math wider than the column scroll (it was cut at the right edge)."""
    import re

    css = (REPO_ROOT / "docs" / "_static" / "symattn.css").read_text(encoding="utf-8")
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S))
    scrolling = [selector for selector, body in rules if re.search(r"overflow-x:\s*auto", body)]
    selectors = " ".join(scrolling)
    for needed in ('mjx-container[jax="CHTML"][display="true"]', "div.math", ".text_latex"):
        assert needed in selectors, f"no horizontal scroll for {needed}"
