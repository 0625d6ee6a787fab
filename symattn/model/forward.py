"""The one forward pass: the components of every layer, in order, over any domain.

:func:`forward` runs each layer's components (:mod:`symattn.model.components`)
on a :class:`~symattn.model.components.Stream` against the
:class:`~symattn.algebra.domains.Domain` interface, so it runs on every domain
of :mod:`symattn.algebra`: closed forms, exact and modular values, floats,
series and jets.

Examples
--------
>>> from symattn.model import Architecture, forward
>>> from symattn.algebra.domains import RationalDomain
>>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="1 + x**2")
>>> arch.param_count
8
>>> params = arch.parameters_from([[[1, 0]]], [[[0, 1]]], [[[1, 0], [0, 1]]])
>>> forward(arch, params, [[1, 0], [0, 1]], RationalDomain())
array([[Fraction(1, 3), Fraction(1, 2)],
       [Fraction(2, 3), Fraction(1, 2)]], dtype=object)
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..errors import ShapeError, SymattnError
from ..limits import register_forward_pass
from .architecture import Architecture, Parameters
from .components import Stream

__all__ = ["forward", "closed_form", "DOMAIN_NAMES"]


def _check_input(arch: Architecture, X) -> None:
    try:
        shape = np.shape(np.array(X.tolist() if isinstance(X, sp.MatrixBase) else X, dtype=object))
    except ValueError as err:  # ragged nested lists
        raise ShapeError(f"input X must be a d_0 x t = {arch.input_shape[0]} x {arch.input_shape[1]} "
                         f"matrix; got ragged rows") from err
    if tuple(shape) != arch.input_shape:
        raise ShapeError(
            f"input X must be d_0 x t = {arch.input_shape[0]} x {arch.input_shape[1]} "
            f"(one token per column), got shape {tuple(shape)}"
        )


#: the domains ``forward`` takes by name
DOMAIN_NAMES = ("QQ", "float64")


def _named_domain(domain):
    if not isinstance(domain, str):
        return domain
    from ..algebra.domains import FloatDomain, RationalDomain

    named = {"QQ": RationalDomain, "float64": FloatDomain}
    if domain not in named:
        raise SymattnError(f"unknown domain {domain[:40]!r}: give one of {', '.join(DOMAIN_NAMES)} "
                           "or a domain object from symattn.algebra.domains")
    return named[domain]()


def forward(arch: Architecture, params: Parameters, X, domain="QQ", convert: bool = True):
    """The network's output ``X_l`` on one input, computed in ``domain``.

    Parameters
    ----------
    arch : Architecture
    params : Parameters
        Matrices (nested lists, sympy or numpy) or, with ``convert=False``,
        matrices already in the domain's representation.
    X : matrix
        The input, ``d_0 x t``.
    domain : Domain or str
        Where to compute: ``"QQ"`` (exact rationals, the default),
        ``"float64"``, or a domain object from :mod:`symattn.algebra.domains`.
    convert : bool
        Convert ``params`` and ``X`` with ``domain.matrix`` first.

    Returns
    -------
    The output matrix in the domain's representation.

    Examples
    --------
    The same pass, exactly and in float64:

    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2")
    >>> params = arch.parameters_from([[[1]]], [[[1]]], [[[1]]])
    >>> forward(arch, params, [[0, 1]])
    array([[Fraction(1, 2), Fraction(2, 3)]], dtype=object)
    >>> forward(arch, params, [[0, 1]], "float64")
    array([[0.5, 0.6666666666666666]], dtype=object)

    A causal mask leaves the first token only itself to attend to, and a
    residual stream adds the layer's input:

    >>> masked = Architecture.uniform(layers=1, width=1, tokens=2, normalizer="1 + x**2", causal=True,
    ...                               residual=True)
    >>> forward(masked, params, [[0, 1]])
    array([[Fraction(0, 1), Fraction(5, 3)]], dtype=object)
    """
    domain = _named_domain(domain)
    blocks = arch.block_map(params)
    if convert:
        _check_input(arch, X)
        X = domain.matrix(X)
        blocks = {key: domain.matrix(m) for key, m in blocks.items()}
    stream = Stream(X)
    for layer, components in enumerate(arch.layer_components, start=1):
        stream.start_layer()
        for component in components:
            component.step(domain, stream, blocks, layer)
    return stream.hidden


register_forward_pass(forward)  # the memory estimates (symattn.limits, a floor below) run this pass over shapes


def closed_form(arch: Architecture, unevaluated_normalizer: bool = False, engine: str = "sympy",
                max_params: int = 64) -> sp.Matrix:
    """The output ``F_theta(X)`` as a sympy Matrix in the symbols of the parameters and input.

    Parameters
    ----------
    unevaluated_normalizer : bool
        Write the normalizer as an undefined function ``s``.
    engine : {"sympy", "symengine"}
        Build with sympy, or with symengine (faster) and convert at the end.
    max_params : int
        Refuse larger architectures, whose closed forms are unreadable.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=1)
    >>> closed_form(arch)
    Matrix([[V1_11*x_11]])
    """
    if arch.param_count > max_params:
        raise ShapeError(
            f"the closed form of {arch.param_count} parameters is too large to print; "
            f"use at most {max_params} (or raise max_params)"
        )
    from ..algebra.domains import SymEngineDomain, SympyDomain

    if engine == "symengine":
        domain = SymEngineDomain(unevaluated_normalizer)
    elif engine == "sympy":
        domain = SympyDomain(unevaluated_normalizer)
    else:
        raise ValueError(f"engine must be 'sympy' or 'symengine', got {engine!r}")
    output = forward(arch, arch.symbols(), arch.input_symbols(), domain)
    return domain.to_matrix(output)
