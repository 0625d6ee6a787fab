"""Modules that can be called as their main function.

``from symattn import expand`` gives the module ``symattn.expand``, because
the package's submodule and the function share the name (and Python binds a
submodule to its parent's attribute of that name on first import).  Calling
that module calls its function, so ``expand(arch, truncation=3)`` works whichever
of the two a user has, and ``symattn.expand.expand`` and
``import symattn.expand`` keep working as before.

Examples
--------
>>> import symattn
>>> from symattn import expand, Architecture
>>> expand(Architecture.uniform(layers=1, width=1, tokens=2), truncation=2).truncation
2
>>> callable(symattn.identify), symattn.identify.identify.__name__
(True, 'identify')
"""

from __future__ import annotations

import inspect
import sys
import types


class CallableModule(types.ModuleType):
    """A module whose call is the call of its main function (``__main_function__``)."""

    def __call__(self, *args, **kwargs):
        return getattr(self, self.__main_function__)(*args, **kwargs)


def make_callable(module_name: str, function_name: str) -> None:
    """Make the module ``module_name`` callable as its function ``function_name``.

    The function's signature is the module's (``inspect.signature`` and
    Jupyter's help show the arguments); the module's docstring is unchanged.
    """
    module = sys.modules[module_name]
    function = getattr(module, function_name)
    module.__class__ = CallableModule
    module.__main_function__ = function_name
    module.__signature__ = inspect.signature(function)
