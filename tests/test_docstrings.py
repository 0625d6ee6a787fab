"""Every public function and class has a doctested Examples section (issue: docs a researcher enjoys).

Public means: listed in its module's ``__all__`` and defined in that module.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import symattn


def _public_objects():
    for info in pkgutil.walk_packages(symattn.__path__, "symattn."):
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == info.name:
                yield f"{info.name}.{name}", obj


def test_the_package_has_public_names():
    assert len(dict(_public_objects())) > 200


def test_every_public_name_has_an_example():
    missing = [name for name, obj in _public_objects()
               if "Examples" not in (obj.__doc__ or "") or ">>>" not in (obj.__doc__ or "")]
    assert not missing, f"{len(missing)} public names without an Examples section: {missing}"
