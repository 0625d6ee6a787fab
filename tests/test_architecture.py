"""The floors of docs/architecture.md, read from the package's own imports.

Every ``import`` and ``from ... import`` inside ``symattn/`` (at module level or
inside a function) is an edge; the tests check that no edge runs up a floor,
that there is no import circle, and that no module imports another module's
private names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "symattn"

#: docs/architecture.md, "The floors".  Packages are one floor with all their modules.
FLOORS = {
    "symattn.errors": 1, "symattn._format": 1, "symattn.naming": 1, "symattn.positivity": 1, "symattn._modules": 1,
    "symattn.languages": 1, "symattn._files": 1, "symattn.analyses": 1, "symattn.verifier": 1,
    "symattn._cluster": 1, "symattn._markdown": 1,
    "symattn.algebra": 2, "symattn.parsing": 2,
    "symattn.normalizers": 3, "symattn.curves": 3, "symattn.limits": 3,
    "symattn.model": 4,
    "symattn.effective": 5, "symattn.verdicts": 5,
    "symattn.jacobian": 6, "symattn.adaptive": 6,
    "symattn.spectrum": 7, "symattn.observe": 7, "symattn.identify": 7, "symattn.numeric": 7,
    "symattn.expand": 7, "symattn.check": 7, "symattn.sweep": 7, "symattn.certificates": 7,
    "symattn.report": 8,
    "symattn.cli": 9,
    "symattn": 10, "symattn.__main__": 10,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _unit(module: str) -> str:
    """The entry of FLOORS a module belongs to (a package counts as one unit)."""
    parts = module.split(".")
    for length in range(len(parts), 0, -1):
        if ".".join(parts[:length]) in FLOORS:
            return ".".join(parts[:length])
    raise KeyError(f"{module} has no floor in FLOORS (tests/test_architecture.py and docs/architecture.md)")


def _imports():
    """``(importer, imported module, imported names)`` for every import inside the package."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    found = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "symattn":
                    continue
                names = [alias.name for alias in node.names]
                submodules = [f"{target}.{name}" for name in names if f"{target}.{name}" in modules]
                if submodules:
                    found += [(module, sub, []) for sub in submodules]
                else:
                    found.append((module, target, names))
            elif isinstance(node, ast.Import):
                found += [(module, alias.name, []) for alias in node.names if alias.name.split(".")[0] == "symattn"]
    return modules, found


MODULES, IMPORTS = _imports()


def test_every_module_has_a_floor():
    for module in MODULES:
        _unit(module)


def test_no_import_runs_up_a_floor():
    upward = []
    for importer, imported, names in IMPORTS:
        if imported == "symattn" and names == ["__version__"]:
            continue  # the version string, defined in the package's __init__
        low, high = FLOORS[_unit(importer)], FLOORS[_unit(imported)]
        if high > low:
            upward.append(f"{importer} (floor {low}) imports {imported} (floor {high})")
    assert not upward, upward


def test_no_import_circle():
    graph = nx.DiGraph((importer, imported) for importer, imported, _ in IMPORTS if importer != imported)
    assert list(nx.simple_cycles(graph)) == []


def test_no_module_imports_private_names_of_another():
    private = [f"{importer} imports {name} from {imported}"
               for importer, imported, names in IMPORTS
               for name in names
               if name.startswith("_") and not name.startswith("__") and _unit(importer) != _unit(imported)]
    assert not private, private

