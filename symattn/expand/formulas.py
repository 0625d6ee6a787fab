"""The orders and the matrix forms of the leading coefficients.

The orders ``n_i`` at which each layer's scores first appear, the reduction
of a matrix expression by ``H^2 = H``, ``H J = J H = 0``, ``J^2 = t J``, the
leading coefficient in the named matrices ``P, X, H, J, C_i`` and the
general formula (every width and token count) in LaTeX, for
:func:`~symattn.expand.leading_coefficient`.
"""

from __future__ import annotations

import sympy as sp

from ..algebra.matrix_expressions import entrywise_power
from ..errors import NormalizerError
from ..model import Architecture
from .names import matrix_symbols


# -- the leading coefficients in matrix form --------------------------------------------------
def _layer_k(arch: Architecture) -> list[int]:
    ks = []
    for i, attention in enumerate(arch.attention, start=1):
        n = attention.normalizer
        if not attention.normalized:
            raise NormalizerError(f"layer {i} is lightning attention (no normalization): the leading "
                                  "coefficients are derived for normalizers; expand it entrywise instead")
        ks.append(int(n.k))
    return ks


def _orders(ks: list[int]) -> tuple[list[int], list[int]]:
    """``n_i`` (first appearance of layer i's scores) and ``nu_i`` (first variation of layer i's tokens)."""
    n, nu = [2 * ks[0]], [2 * ks[0]]
    for k in ks[1:]:
        n.append(2 * nu[-1] + 2 * k)
        nu.append(3 * nu[-1] + 2 * k)
    return n, nu


def _general_latex(layer: int, layers: int, ks: list[int]) -> str:
    """The matrix formulas for every width and token count (LaTeX aligned lines)."""
    common = len(set(ks)) == 1

    def k(i):
        return "k" if common else f"k_{{{i}}}"

    def c(i):
        return "c_{k}" if common else f"c^{{({i})}}_{{k_{{{i}}}}}"

    orders = _orders(ks)[0]
    lines = [
        r"&H = I_t - \tfrac{1}{t} J,\quad J = \mathbf{1}\mathbf{1}^{\top},\quad A^{\circ m} = "
        r"\text{entrywise power},\quad \tilde W_i = \tilde K_i^{\top} \tilde Q_i,\quad "
        r"\tilde P_i = \tilde V_i \cdots \tilde V_1,\quad P = \tilde P_{l} \\",
        r"&\widehat W_i = \tilde P_{i-1}^{\top} \tilde W_i \tilde P_{i-1},\quad C_i = X^{\top} \widehat W_i X,\quad "
        r"\alpha_i = \tfrac{1}{t^2}\,\mathbf{1}^{\top} C_i \mathbf{1} \\",
    ]
    if common:
        lines.append(rf"&n_i = 2k\,3^{{i-1}},\quad \nu_i = (3^i - 1)k,\quad "
                     rf"\text{{here }} n_{{{layer}}} = {orders[layer - 1]} \\")
    else:
        lines.append(r"&n_1 = \nu_1 = 2k_1,\quad n_i = 2\nu_{i-1} + 2k_i,\quad \nu_i = 3\nu_{i-1} + 2k_i,"
                     rf"\quad \text{{here }} n_{{{layer}}} = {orders[layer - 1]} \\")
    if layer == 1:
        lines.append(rf"&F_{{n_1}} = \frac{{{c(1)}}}{{t}}\, P X H\, C_1^{{\circ {k(1)}}}"
                     + (r"\, \tfrac{1}{t} J" if layers > 1 else "")
                     + (r" \quad (\text{in } X_1:\ [X_1]_{n_1} = \tfrac{c_k}{t} \tilde V_1 X H C_1^{\circ k})"
                        if layers > 1 else ""))
        return "\n".join(lines)
    lines.append(rf"&Z_1 = \frac{{{c(1)}}}{{t}}\, H\, C_1^{{\circ {k(1)}}} H \\")
    if layer > 2:
        lines += [
            rf"&\Sigma_i = \frac{{{k('i')} {c('i')}}}{{t}}\Big(\alpha_i^{{{k('i')}-1}}\, "
            rf"Z_{{i-1}}^{{\top}} C_i Z_{{i-1}}"
            rf" + \frac{{{k('i')}-1}}{{t^2}}\,\alpha_i^{{{k('i')}-2}}\, Z_{{i-1}}^{{\top}} C_i J C_i Z_{{i-1}}\Big),"
            rf"\quad Z_i = Z_{{i-1}} \Sigma_i \quad (2 \le i < {layer}) \\",
        ]
    lines += [
        rf"&F_{{n_{{{layer}}}}} - F_{{n_{{{layer}}}}}\big|_{{\widehat W_{{{layer}}} = 0}} = "
        rf"\frac{{{k(layer)} {c(layer)}\, \alpha_{{{layer}}}^{{{k(layer)}-1}}}}{{t^2}}\, P X Z_{{{layer - 1}}}"
        rf" Z_{{{layer - 1}}}^{{\top}} C_{{{layer}}} J \\",
        r"&\text{(tokens: } [X_i H]_{\nu_i} = \tilde P_i X Z_i,\ "
        r"[X_i]_0 = \mu_i \mathbf{1}^{\top},\ \mu_i = \tfrac{1}{t}\tilde P_i X \mathbf{1},\ "
        r"[H S_i H]_{\nu_i - \nu_{i-1}} = \Sigma_i\text{)}",
    ]
    return "\n".join(lines)


def _reduce(expr, H, J, t: int):
    """A matrix expression with ``H^2 = H``, ``H J = J H = 0``, ``J^2 = t J`` and ``H^T = H``, ``J^T = J`` applied."""
    if isinstance(expr, sp.MatAdd):
        parts = [_reduce(a, H, J, t) for a in expr.args]
        parts = [a for a in parts if not isinstance(a, sp.ZeroMatrix)]
        return sp.ZeroMatrix(*expr.shape) if not parts else parts[0] if len(parts) == 1 else sp.MatAdd(*parts)
    if not isinstance(expr, (sp.MatMul, sp.MatPow, sp.Transpose, sp.MatrixSymbol)):
        return expr
    scalar, factors = expr.as_coeff_matrices() if isinstance(expr, sp.MatMul) else (sp.Integer(1), [expr])
    out = []
    for m in factors:
        power = 1
        if isinstance(m, sp.MatPow) and m.base in (H, J) and m.exp.is_Integer:
            m, power = m.base, int(m.exp)
        if isinstance(m, sp.Transpose) and m.arg in (H, J):
            m = m.arg
        if m == J and power > 1:
            scalar *= sp.Integer(t) ** (power - 1)
        if out and {out[-1], m} == {H, J}:
            return sp.ZeroMatrix(*expr.shape)
        if out and out[-1] == m == H:
            continue
        if out and out[-1] == m == J:
            scalar *= t
            continue
        out.append(m)
    product = out[0] if len(out) == 1 else sp.MatMul(*out)
    return product if scalar == 1 else scalar * product


def _matrix_form(used: Architecture, layer: int, ks, cs, n: int):
    """``(form, definitions)``: the leading coefficient in the named matrices ``P, X, H, J, C_i`` (reduced).

    ``definitions`` is ``((name, definition), ...)`` for the symbols of the form: ``H``, ``J``,
    ``P``, ``What_i``, ``C_i`` and, when some ``k_i > 1``, the scalars ``alpha_i``.
    """
    t = used.tokens
    named = matrix_symbols(used)
    X, P, H, J = named["X"], named["P"], named["H"], named["J"]
    What = {i: named[f"What_{i}"] for i in range(1, layer + 1)}
    C = {i: named[f"C_{i}"] for i in What}
    ones = sp.OneMatrix(t, 1)
    definitions = [("H", sp.Identity(t) - sp.OneMatrix(t, t) / t), ("J", sp.OneMatrix(t, t)),
                   ("P", sp.MatMul(*[named[f"Vt{i}"] for i in range(used.layers, 0, -1)]) if used.layers > 1
                    else named["Vt1"])]
    for i in What:
        definitions.append((f"What_{i}", _what_definition(used, i)))
        definitions.append((f"C_{i}", X.T * What[i] * X))

    def reduce(expr):
        return _reduce(sp.expand(expr), H, J, t)

    k1, c1 = ks[0], cs[0]
    if layer == 1:
        form = (c1 / t) * P * X * H * entrywise_power(C[1], k1)
        if used.layers > 1:
            form = form * J / t
        return reduce(form), tuple(definitions)
    Z = reduce((c1 / t) * H * entrywise_power(C[1], k1) * H)
    form = None
    for i in range(2, layer + 1):
        k, c = ks[i - 1], cs[i - 1]
        alpha = sp.Symbol(f"alpha_{i}")
        if k > 1:
            definitions.append((f"alpha_{i}", sp.Trace(ones.T * C[i] * ones) / t**2))
        if i == layer:
            form = reduce((k * c * alpha ** (k - 1) / t**2) * P * X * Z * Z.T * C[i] * J)
        else:
            sigma = (k * c / t) * alpha ** (k - 1) * Z.T * C[i] * Z
            if k > 1:
                sigma = sigma + ((k - 1) * k * c / t**3) * alpha ** (k - 2) * Z.T * C[i] * J * C[i] * Z
            Z = reduce(Z * sigma)
    return form, tuple(definitions)


def _what_definition(used: Architecture, i: int):
    """``What_i = Pt_{i-1}^T Kt_i^T Qt_i Pt_{i-1}`` with ``Pt_{i-1} = Vt_{i-1} ... Vt_1``."""
    named = matrix_symbols(used)
    W = named[f"Kt{i}"].T * named[f"Qt{i}"]
    if i == 1:
        return W
    prefix = sp.MatMul(*[named[f"Vt{j}"] for j in range(i - 1, 0, -1)])
    return prefix.T * W * prefix
