"""Sphinx configuration for the symattn documentation.

The worked notebooks live in ``notebooks/`` at the repository root, outside
the docs source tree. At build time (``builder-inited``) they are copied into
``docs/tutorials/_generated/`` (git-ignored), where the glob toctree of
``tutorials/index.md`` picks them up. myst-nb executes them during the
build, so the pages show their outputs; an error in a cell fails the build.
"""

import json
import os
import shutil
import sys
from pathlib import Path

DOCS_DIR = Path(__file__).resolve().parent
REPO_ROOT = DOCS_DIR.parent
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
GENERATED_DIR = DOCS_DIR / "tutorials" / "_generated"

# Document the package in this checkout, even if another copy is installed.
sys.path.insert(0, str(REPO_ROOT))

# -- Project information -----------------------------------------------------

project = "symattn"
author = "the symattn developers"
copyright = "2026, the symattn developers"
release = "0.1.0"
version = "0.1"

# -- General configuration ---------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_nb",
    "sphinx_copybutton",
    # MathJax 3 shipped with the built docs (copied to _static/mathjax/), so
    # formulas render without a network; it sets mathjax_path to the copy.
    "sphinx-mathjax-offline",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]

# autodoc
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}

# napoleon: numpy-style docstrings only
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

# MyST / myst-nb
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
# Markdown printed by a cell (tables of results) is parsed as MyST, which
# has tables; CommonMark, the default, shows them as plain text.
nb_render_markdown_format = "myst"
# One output block for what a cell prints, even when it prints in a loop.
nb_merge_streams = True

# -- HTML output -------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = "symattn"
html_static_path = ["_static"]
html_css_files = ["symattn.css"]
html_theme_options = {
    # Everything the pages load is in the build: no fonts, icons or scripts
    # from a network, and no version switcher or analytics.
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 5,
    "navbar_persistent": [],
    "navbar_end": ["search-button", "theme-switcher"],
    # The page's own table of contents on the right, except on the pages of
    # executed code (tutorials, reproducing the paper), which use the width.
    "secondary_sidebar_items": {
        "*": ["page-toc", "sourcelink"],
        "commands/*": ["page-toc", "sourcelink"],
        "tutorials/index": ["page-toc", "sourcelink"],
        "tutorials/_generated/*": [],
        "reproducing/*": [],
    },
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
# The section navigation on the left only where a section has pages of its
# own; the top-level pages are in the header.
html_sidebars = {"*": [], "**/*": ["sidebar-nav-bs"]}

# sphinx-copybutton: copy commands and code without prompts or outputs
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
# a shell command broken over lines with "\" is copied whole
copybutton_line_continuation_character = "\\"
copybutton_exclude = ".linenos, .gp, .go"


# -- Notebooks ---------------------------------------------------------------


def copy_notebooks(app):
    """Copy ``notebooks/*.ipynb`` into ``tutorials/_generated/``.

    The folder is rebuilt from scratch so that a deleted notebook does not
    linger; ``copy2`` keeps modification times, so unchanged notebooks are
    not re-read on incremental builds. Notebooks saved without kernel
    metadata get Python recorded as their language in the copy.
    """
    if GENERATED_DIR.exists():
        shutil.rmtree(GENERATED_DIR)
    GENERATED_DIR.mkdir(parents=True)
    notebooks = sorted(NOTEBOOKS_DIR.glob("*.ipynb")) if NOTEBOOKS_DIR.is_dir() else []
    for notebook in notebooks:
        target = GENERATED_DIR / notebook.name
        shutil.copy2(notebook, target)
        _ensure_python_language(target, notebook)
    if not notebooks:
        # Keep the glob toctree non-empty (an empty glob is a warning).
        (GENERATED_DIR / "no-notebooks.md").write_text(
            "# No notebooks yet\n\n"
            "The repository's `notebooks/` folder holds no notebooks yet.\n",
            encoding="utf-8",
        )


def _ensure_python_language(target, source):
    """Record the language of a notebook saved without kernel metadata.

    myst-nb picks the code highlighter from the notebook's metadata and warns
    when there is none (e.g. a notebook written by ``nbformat`` and never
    executed). Only the copy is changed; its modification time stays the
    source's.
    """
    data = json.loads(target.read_text(encoding="utf-8"))
    metadata = data.setdefault("metadata", {})
    if metadata.get("language_info", {}).get("name") or metadata.get("kernelspec", {}).get(
        "language"
    ):
        return
    metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    metadata.setdefault("language_info", {})["name"] = "python"
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    stat = source.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def setup(app):
    app.connect("builder-inited", copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
