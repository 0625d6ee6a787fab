"""Every notebook in notebooks/ runs from top to bottom without an error."""

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))

#: a kernel per notebook: not in the fast tier
pytestmark = pytest.mark.slow


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
        # Raises CellExecutionError, naming the cell, on the first error.
        client.execute()

else:

    def test_notebooks_folder():
        assert NOTEBOOKS_DIR.is_dir(), f"missing notebooks folder {NOTEBOOKS_DIR}"
        pytest.skip("no notebooks in notebooks/")
