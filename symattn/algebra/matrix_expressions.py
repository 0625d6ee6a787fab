"""Matrix expressions: explicit evaluation over sympy, or over a fast ring on numpy object arrays.

The matrix formulas of the package (leading coefficients ``F_n`` written with
``X``, ``H``, ``J``, entrywise powers, products and transposes) are sympy
matrix expressions; this module evaluates them, either to explicit sympy
matrices (:func:`evaluate_matrix_expression`) or over a ring such as
python-flint rationals or polynomials (:class:`RingEvaluator`), which is
much faster for checks at points.

Examples
--------
>>> A = sp.MatrixSymbol("A", 2, 2)
>>> evaluate_matrix_expression(A.T * A, {A: sp.Matrix([[1, 0], [1, 1]])})
Matrix([
[2, 1],
[1, 1]])
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..errors import SymattnError

__all__ = ["evaluate_matrix_expression", "RingEvaluator", "entrywise_power", "object_array"]


def entrywise_power(A, k: int):
    """``A`` to the entrywise power ``k`` (``A`` itself for ``k = 1``).

    Examples
    --------
    >>> entrywise_power(sp.MatrixSymbol("A", 2, 2), 3)
    HadamardPower(A, 3)
    """
    return A if k == 1 else sp.HadamardPower(A, k)


# -- evaluating matrix expressions ----------------------------------------------------------------
def evaluate_matrix_expression(expr, env: dict):
    """An explicit sympy Matrix (or scalar) for a matrix expression, given explicit matrices.

    Handles MatrixSymbol, Identity, ZeroMatrix, OneMatrix, Transpose, MatMul,
    MatAdd, MatPow, HadamardPower, Trace and scalar expressions around them.

    Examples
    --------
    >>> A = sp.MatrixSymbol("A", 2, 2)
    >>> evaluate_matrix_expression(sp.HadamardPower(A, 2) + sp.Identity(2), {A: sp.Matrix([[1, 2], [3, 4]])})
    Matrix([
    [2,  4],
    [9, 17]])
    """
    if isinstance(expr, sp.MatrixSymbol):
        if expr not in env:
            raise SymattnError(f"no value for the matrix symbol {expr.name}")
        return sp.Matrix(env[expr])
    if isinstance(expr, sp.Identity):
        return sp.eye(int(expr.rows))
    if isinstance(expr, sp.ZeroMatrix):
        return sp.zeros(int(expr.rows), int(expr.cols))
    if isinstance(expr, sp.OneMatrix):
        return sp.ones(int(expr.rows), int(expr.cols))
    if isinstance(expr, sp.Transpose):
        return evaluate_matrix_expression(expr.arg, env).T
    if isinstance(expr, sp.MatMul):
        result = sp.Integer(1)
        for arg in expr.args:
            result = result * evaluate_matrix_expression(arg, env)
        return result
    if isinstance(expr, sp.MatAdd):
        parts = [evaluate_matrix_expression(arg, env) for arg in expr.args]
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        return total
    if isinstance(expr, sp.HadamardPower):
        base = evaluate_matrix_expression(expr.base, env)
        return base.applyfunc(lambda e: e ** expr.exp)
    if isinstance(expr, sp.MatPow):
        return evaluate_matrix_expression(expr.base, env) ** expr.exp
    if isinstance(expr, sp.Trace):
        return evaluate_matrix_expression(expr.arg, env).trace()
    if isinstance(expr, sp.MatrixExpr):
        raise SymattnError(f"cannot evaluate the matrix expression {type(expr).__name__}: {expr}")
    if isinstance(expr, sp.Basic) and expr.args:
        return expr.func(*[evaluate_matrix_expression(a, env) for a in expr.args])
    return env.get(expr, expr) if isinstance(expr, sp.Basic) else expr


class RingEvaluator:
    """Evaluate a matrix expression over a fast ring (flint fmpq or fmpq_mpoly) on numpy object arrays.

    ``convert`` maps sympy numbers and symbols to ring elements; ``env`` maps
    MatrixSymbols to object arrays of ring elements.

    Examples
    --------
    >>> import flint
    >>> A = sp.MatrixSymbol("A", 2, 2)
    >>> env = {A: object_array(sp.Matrix([[1, 2], [3, 4]]), lambda v: flint.fmpq(int(v)))}
    >>> RingEvaluator(lambda v: flint.fmpq(int(v))).matrix(2 * A * A.T, env).tolist()
    [[10, 22], [22, 50]]
    """

    def __init__(self, convert):
        self.convert = convert

    @staticmethod
    def _scale(scalar, array):
        out = np.empty(array.shape, dtype=object)
        for index, value in np.ndenumerate(array):
            out[index] = scalar * value
        return out

    def scalar(self, expr, env):
        if isinstance(expr, sp.Trace):
            m = self.matrix(expr.arg, env)
            total = 0
            for i in range(min(m.shape)):
                total = total + m[i, i]
            return total
        if expr.is_Rational or expr.is_Symbol:
            return env[expr] if expr in env else self.convert(expr)
        if expr.is_Add:
            total = 0
            for a in expr.args:
                total = total + self.scalar(a, env)
            return total
        if expr.is_Mul:
            product = 1
            for a in expr.args:
                product = product * self.scalar(a, env)
            return product
        if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) >= 0:
            return self.scalar(expr.base, env) ** int(expr.exp)
        raise SymattnError(f"cannot evaluate {expr} in a polynomial ring")

    def matrix(self, expr, env) -> np.ndarray:
        if isinstance(expr, sp.MatrixSymbol):
            return env[expr]
        if isinstance(expr, (sp.Identity, sp.ZeroMatrix, sp.OneMatrix)):
            rows, cols = int(expr.rows), int(expr.cols)
            out = np.zeros((rows, cols), dtype=object)
            if isinstance(expr, sp.OneMatrix):
                out[:] = 1
            elif isinstance(expr, sp.Identity):
                for i in range(rows):
                    out[i, i] = 1
            return out
        if isinstance(expr, sp.Transpose):
            return self.matrix(expr.arg, env).T
        if isinstance(expr, sp.MatMul):
            scalar, result = 1, None
            for arg in expr.args:
                if isinstance(arg, sp.MatrixExpr):
                    m = self.matrix(arg, env)
                    result = m if result is None else np.dot(result, m)
                else:
                    scalar = scalar * self.scalar(arg, env)
            return self._scale(scalar, result)
        if isinstance(expr, sp.MatAdd):
            parts = [self.matrix(arg, env) for arg in expr.args]
            total = parts[0]
            for part in parts[1:]:
                total = total + part
            return total
        if isinstance(expr, sp.HadamardPower):
            base = self.matrix(expr.base, env)
            out = np.empty(base.shape, dtype=object)
            for index, value in np.ndenumerate(base):
                out[index] = value ** int(expr.exp)
            return out
        if isinstance(expr, sp.MatPow):
            base = self.matrix(expr.base, env)
            out = base
            for _ in range(int(expr.exp) - 1):
                out = np.dot(out, base)
            return out
        raise SymattnError(f"cannot evaluate the matrix expression {type(expr).__name__}: {expr}")


def object_array(matrix, convert) -> np.ndarray:
    """A numpy object array of ``convert(entry)`` for the entries of a sympy matrix.

    Examples
    --------
    >>> object_array(sp.Matrix([[1, 2]]), lambda v: 2 * v).tolist()
    [[2, 4]]
    """
    matrix = sp.Matrix(matrix)
    out = np.empty(matrix.shape, dtype=object)
    for r in range(matrix.rows):
        for c in range(matrix.cols):
            out[r, c] = convert(matrix[r, c])
    return out
