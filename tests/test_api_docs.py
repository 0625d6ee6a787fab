"""The API reference leads with the everyday API and covers every module.

The reference is one page of what ``import symattn`` exports, then one page
per area; the build itself is checked warning-free in ``test_docs.py``.
"""

import re
from pathlib import Path

import symattn

API_DIR = Path(__file__).resolve().parent.parent / "docs" / "api"
PACKAGE_DIR = Path(symattn.__file__).resolve().parent


def test_the_first_page_documents_every_exported_name():
    index = (API_DIR / "index.rst").read_text()
    documented = set(re.findall(r"^\.\. auto(?:class|function|module):: symattn\.(\w+)", index, re.M))
    mentioned = set(re.findall(r":mod:`symattn\.(\w+)`", index))
    errors = {name for name in symattn.__all__ if name.endswith("Error")}
    missing = set(symattn.__all__) - errors - documented - mentioned
    assert not missing, f"docs/api/index.rst leaves out {sorted(missing)}"


def test_every_module_with_public_names_has_a_page():
    pages = "".join(page.read_text() for page in API_DIR.glob("*.rst"))
    documented = set(re.findall(r"^\.\. automodule:: (\S+)", pages, re.M))
    modules = set()
    for path in PACKAGE_DIR.rglob("*.py"):
        relative = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        if any(part.startswith("_") and part != "_format" for part in parts):
            continue
        modules.add(".".join(parts))
    # areas documented through their package (symattn.identify, symattn.observe) or not public API
    covered_by_package = {m for m in modules
                          if any(m.startswith(d + ".") or d.startswith(m + ".") for d in documented)}
    exempt = {"symattn", "symattn.__main__", "symattn.languages", "symattn.cli.check", "symattn.cli.expand"}
    missing = modules - documented - covered_by_package - exempt
    assert not missing, f"modules without an API page: {sorted(missing)}"
