"""The Sphinx documentation builds without a single warning."""

import subprocess
import sys
from pathlib import Path

import pytest

DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"


def test_sphinx_build_has_no_warnings(tmp_path):
    pytest.importorskip("sphinx")
    result = subprocess.run(
        [
            sys.executable, "-m", "sphinx",
            "-W", "--keep-going",
            "-b", "html",
            "-d", str(tmp_path / "doctrees"),
            str(DOCS_DIR), str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        print(result.stdout)
        print(result.stderr, file=sys.stderr)
    assert result.returncode == 0, "sphinx build failed or warned:\n" + result.stderr[-5000:]
