"""Formula claims of ``symattn check`` (``F_n = <formula>``, ``leading(i) = <formula>``) at one point mod ``p``.

A claims certificate may hold formula claims: a coefficient ``F_n`` of the
expansion of the network's output along the simultaneous query/key collapse
(``Q_i = eps Qt_i``, ``K_i = eps Kt_i``, ``V_i = Vt_i``, MATH.md section 4),
or the part ``F_(n_i) - F_(n_i)|_(Kt_i = 0)`` of the first coefficient in
which layer ``i``'s scores appear, claimed equal to a matrix formula.  The
formula is given as **data**, a tree of operations (never text to evaluate):

* ``{"matrix": "P"}``: a named matrix, one of ``P = Vt_l ... Vt_1``
  (``d_l x d_0``), ``X`` (the input, ``d_0 x t``), ``J`` (``t x t``, all
  ones), ``H = I - J/t``, ``What_i = P_(i-1)^T Kt_i^T Qt_i P_(i-1)``
  (``d_0 x d_0``, ``P_(i-1) = Vt_(i-1) ... Vt_1``), ``C_i = X^T What_i X``
  (``t x t``);
* ``{"scalar": "alpha_i"}``: ``alpha_i = (1/t^2) 1^T C_i 1``;
* ``{"number": "p/q"}``, ``{"zero": [rows, cols]}`` (the zero matrix);
* ``{"add": [a, b, ...]}``, ``{"multiply": [a, b, ...]}`` (in order: matrix
  products, scalars times anything), ``{"power": [a, n]}`` (an integer power
  of a scalar, or a power ``n >= 1`` of a square matrix),
  ``{"transpose": a}``, ``{"hadamard": [a, m]}`` (entrywise power ``m >= 1``).

The checker reads the tree (:func:`read_formula`: names, shapes, sizes),
writes it back as text (:func:`formula_text`, the words of the claim),
computes the named matrices from the certificate's integer point
(:func:`named_values`), evaluates the formula mod ``p``
(:func:`evaluate_formula`), and compares it with the coefficient its own
forward pass computes (:func:`decide_formula`):

* a **difference** at the point mod ``p`` refutes the claim: every number is
  an integer or a rational with a denominator prime to ``p`` (checked), so the
  residues are the reductions of the rational values at that integer point,
  which therefore differ: the two sides are not the same polynomial;
* **agreement** is consistent with the claim and proves nothing: a false
  formula can agree at one point.  The checker bounds the degree ``D`` of
  both sides in the point's coordinates (:func:`coefficient_degrees`,
  :func:`formula_degree`): at a point drawn uniformly from ``GF(p)``, a
  formula whose difference is not 0 mod ``p`` agrees with probability at
  most ``D / p`` (Schwartz-Zippel).  symattn draws the point so, but the
  checker cannot confirm how it was drawn: it says "consistent at one
  point", with the bound, and decides nothing.

This module imports nothing but the standard library and its own package:
it is part of the independent checker.

Examples
--------
>>> tree = {"multiply": [{"number": "1/2"}, {"matrix": "P"}, {"matrix": "X"}, {"matrix": "J"}]}
>>> formula_text(tree)
'(1/2)*P*X*J'
>>> leading_orders([1, 1, 1]), leading_orders([2, 2])
([2, 6, 18], [4, 12])
"""

from __future__ import annotations

from fractions import Fraction

from .disagreement import Disagreement

__all__ = ["QUANTITIES", "MAX_NODES", "MAX_FORMULA_OPERATIONS", "formula_operations", "formula_text", "read_formula",
           "named_values", "evaluate_formula",
           "leading_orders", "first_degrees", "coefficient_degrees", "formula_degree", "decide_formula"]

#: The formula claims a claims certificate holds: a coefficient ``F_n``, a layer's leading coefficient.
QUANTITIES = ("coefficient", "leading")

#: The most nodes, the deepest nesting and the largest exponent the checker reads in a formula.
MAX_NODES = 5000
MAX_DEPTH = 200
MAX_EXPONENT = 100

_OPERATIONS = ("matrix", "scalar", "number", "zero", "add", "multiply", "power", "transpose", "hadamard")
#: How tightly each operation binds in the text (names, numbers and hadamard(...) are atoms).
_PRECEDENCE = {"add": 1, "multiply": 2, "power": 3, "transpose": 4}


# -- the formula as text ------------------------------------------------------------------------------
def formula_text(tree: dict) -> str:
    """The formula as text, the checker's own writing of a (read) tree.

    Examples
    --------
    >>> formula_text({"add": [{"power": [{"matrix": "H"}, 2]}, {"multiply": [{"number": "-1"}, {"matrix": "J"}]}]})
    'H^2 + (-1)*J'
    >>> formula_text({"transpose": {"multiply": [{"matrix": "X"}, {"matrix": "J"}]}})
    '(X*J).T'
    >>> formula_text({"zero": [2, 3]})
    '0'
    """
    (operation, argument), = tree.items()
    if operation in ("matrix", "scalar"):
        return argument
    if operation == "number":
        return f"({argument})" if "/" in argument or argument.startswith("-") else argument
    if operation == "zero":
        return "0"

    def inner(node: dict) -> str:
        """A term in parentheses when it binds more loosely (sums and products are associative, powers are not)."""
        text = formula_text(node)
        (kind, _), = node.items()
        binds = _PRECEDENCE.get(kind, 5)
        loose = binds <= _PRECEDENCE[operation] if operation == "power" else binds < _PRECEDENCE[operation]
        return f"({text})" if loose else text

    if operation == "add":
        return " + ".join(inner(a) for a in argument)
    if operation == "multiply":
        return "*".join(inner(a) for a in argument)
    if operation == "power":
        return f"{inner(argument[0])}^{argument[1]}"
    if operation == "transpose":
        return f"{inner(argument)}.T"
    return f"hadamard({formula_text(argument[0])}, {argument[1]})"


# -- reading the tree -----------------------------------------------------------------------------------
def _shapes(widths: list, tokens: int) -> tuple:
    """``(matrix name -> (rows, cols), scalar names)`` of a plain network with these widths and tokens."""
    layers, d0, t = len(widths) - 1, widths[0], tokens
    matrices = {"P": (widths[-1], d0), "X": (d0, t), "J": (t, t), "H": (t, t)}
    for i in range(1, layers + 1):
        matrices[f"What_{i}"] = (d0, d0)
        matrices[f"C_{i}"] = (t, t)
    return matrices, {f"alpha_{i}" for i in range(1, layers + 1)}


def _exponent(value, what: str, low: int) -> int:
    """An integer exponent: ``low .. MAX_EXPONENT`` when ``low >= 1``, else of absolute value at most ``MAX_EXPONENT``."""
    integer = isinstance(value, int) and not isinstance(value, bool)
    if not integer or not (low <= value <= MAX_EXPONENT if low >= 1 else abs(value) <= MAX_EXPONENT):
        wanted = f"in {low} .. {MAX_EXPONENT}" if low >= 1 else f"of absolute value at most {MAX_EXPONENT}"
        raise Disagreement(f"{what} must be an integer {wanted}, got {str(value)[:40]!r}")
    return value


def read_formula(tree, widths: list, tokens: int, rational, where: str = "formula") -> tuple:
    """``(node, shape)``: the tree validated (names, shapes, sizes), numbers read as Fractions; ``shape`` None for a scalar.

    ``rational`` reads a number string (``"p/q"`` of digits) or raises a
    :class:`Disagreement`; nothing is evaluated.

    Examples
    --------
    >>> from fractions import Fraction
    >>> read = lambda text, what: Fraction(text)
    >>> node, shape = read_formula({"multiply": [{"matrix": "P"}, {"matrix": "X"}]}, [2, 3], 4, read)
    >>> shape
    (3, 4)
    >>> read_formula({"multiply": [{"matrix": "X"}, {"matrix": "P"}]}, [2, 3], 4, read)
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: formula.multiply: a 2 x 4 matrix times a 3 x 2 matrix
    >>> read_formula({"matrix": "__import__"}, [2, 3], 4, read)
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: formula: 'matrix' names __import__, not one of P, X, J, H, What_1, C_1
    """
    matrices, scalars = _shapes(widths, tokens)
    sizes = set(widths) | {tokens}
    count = [0]

    def read(node, where: str, depth: int) -> tuple:
        count[0] += 1
        if count[0] > MAX_NODES or depth > MAX_DEPTH:
            raise Disagreement(f"the formula has more than {MAX_NODES} nodes or is nested deeper than {MAX_DEPTH}")
        if not isinstance(node, dict) or len(node) != 1 or next(iter(node)) not in _OPERATIONS:
            raise Disagreement(f"{where} must be an object with one key of {', '.join(_OPERATIONS)}, got "
                               f"{str(node)[:60]!r}")
        (operation, argument), = node.items()
        if operation == "matrix":
            if argument not in matrices:
                raise Disagreement(f"{where}: 'matrix' names {str(argument)[:40]}, not one of {', '.join(matrices)}")
            return ("matrix", argument), matrices[argument]
        if operation == "scalar":
            if argument not in scalars:
                raise Disagreement(f"{where}: 'scalar' names {str(argument)[:40]}, not one of "
                                   f"{', '.join(sorted(scalars))}")
            return ("scalar", argument), None
        if operation == "number":
            return ("number", rational(argument, f"{where}.number")), None
        if operation == "zero":
            # a zero matrix of the network's sizes only (a width or the token count each way)
            if not (isinstance(argument, list) and len(argument) == 2
                    and all(isinstance(n, int) and not isinstance(n, bool) and n in sizes for n in argument)):
                raise Disagreement(f"{where}.zero must be [rows, cols], each one of the sizes "
                                   f"{sorted(sizes)}, got {str(argument)[:40]!r}")
            return ("zero", tuple(argument)), tuple(argument)
        if operation in ("add", "multiply"):
            if not isinstance(argument, list) or len(argument) < 2:
                raise Disagreement(f"{where}.{operation} must list at least two terms, got {str(argument)[:60]!r}")
            terms = [read(a, f"{where}.{operation}[{n}]", depth + 1) for n, a in enumerate(argument)]
            shape = terms[0][1]
            for _, other in terms[1:]:
                if operation == "add":
                    if other != shape:
                        raise Disagreement(f"{where}.add: a sum of a {_shape_text(shape)} and a {_shape_text(other)}")
                elif shape is None:
                    shape = other
                elif other is not None:
                    if shape[1] != other[0]:
                        raise Disagreement(f"{where}.multiply: a {_shape_text(shape)} times a {_shape_text(other)}")
                    shape = (shape[0], other[1])
            return (operation, [node for node, _ in terms]), shape
        if operation == "transpose":
            inner, shape = read(argument, f"{where}.transpose", depth + 1)
            if shape is None:
                raise Disagreement(f"{where}.transpose: the transpose of a scalar")
            return ("transpose", inner), (shape[1], shape[0])
        if not isinstance(argument, list) or len(argument) != 2:
            raise Disagreement(f"{where}.{operation} must be [base, exponent], got {str(argument)[:60]!r}")
        inner, shape = read(argument[0], f"{where}.{operation}[0]", depth + 1)
        if operation == "hadamard":
            if shape is None:
                raise Disagreement(f"{where}.hadamard: the entrywise power of a scalar")
            return ("hadamard", inner, _exponent(argument[1], f"{where}.hadamard[1]", 1)), shape
        if shape is not None:
            if shape[0] != shape[1]:
                raise Disagreement(f"{where}.power: a power of a {_shape_text(shape)}, not square")
            return ("power", inner, _exponent(argument[1], f"{where}.power[1] of a matrix", 1)), shape
        return ("power", inner, _exponent(argument[1], f"{where}.power[1]", 0)), None

    node, shape = read(tree, where, 0)
    return node, shape


def _shape_text(shape) -> str:
    return "scalar" if shape is None else f"{shape[0]} x {shape[1]} matrix"


#: Most multiply-adds the checker spends evaluating one formula (pure Python: a few seconds).
MAX_FORMULA_OPERATIONS = 20_000_000


def formula_operations(node: tuple, widths: list, tokens: int) -> int:
    """The multiply-adds of evaluating a read formula mod ``p`` (:func:`evaluate_formula`) and its named values.

    Computed from the shapes alone, before any arithmetic: a product of an
    ``a x b`` by a ``b x c`` matrix costs ``a b c``, a matrix power ``n``
    costs ``n - 1`` products.

    Examples
    --------
    >>> from fractions import Fraction
    >>> read = lambda text, what: Fraction(text)
    >>> node, _ = read_formula({"power": [{"matrix": "H"}, 100]}, [2, 2], 300, read)
    >>> formula_operations(node, [2, 2], 300) > MAX_FORMULA_OPERATIONS
    True
    """
    matrices, _ = _shapes(widths, tokens)
    d0, t, layers = widths[0], tokens, len(widths) - 1
    # the named values: What_i, C_i and P at every layer
    total = layers * (2 * d0 ** 3 + 2 * d0 * d0 * t + 2 * d0 * t * t + max(widths) ** 2 * d0 + sum(widths) ** 2)

    def visit(node: tuple) -> tuple:
        nonlocal total
        operation = node[0]
        if operation == "matrix":
            return matrices[node[1]]
        if operation == "zero":
            total += node[1][0] * node[1][1]
            return node[1]
        if operation in ("scalar", "number"):
            return None
        if operation in ("add", "multiply"):
            shapes = [visit(a) for a in node[1]]
            shape = shapes[0]
            for other in shapes[1:]:
                if operation == "add":
                    total += 0 if other is None else other[0] * other[1]
                elif shape is None:
                    shape = other
                    total += 0 if other is None else other[0] * other[1]
                elif other is None:
                    total += shape[0] * shape[1]
                else:
                    total += shape[0] * shape[1] * other[1]
                    shape = (shape[0], other[1])
            return shape
        if operation == "transpose":
            shape = visit(node[1])
            total += shape[0] * shape[1]
            return (shape[1], shape[0])
        shape = visit(node[1])
        if shape is None:
            total += abs(node[2]).bit_length() + 1
            return None
        if operation == "hadamard":
            total += shape[0] * shape[1] * (node[2].bit_length() + 1)
            return shape
        total += (node[2] - 1) * shape[0] ** 3
        return shape

    visit(node)
    return total


# -- the named matrices at the point -----------------------------------------------------------------
def _product(A: list, B: list, p: int) -> list:
    """``A B mod p`` for matrices as lists of rows of residues."""
    columns = list(zip(*B))
    return [[sum(a * b for a, b in zip(row, column)) % p for column in columns] for row in A]


def _transpose(A: list) -> list:
    return [list(row) for row in zip(*A)]


def _identity(n: int) -> list:
    return [[int(r == c) for c in range(n)] for r in range(n)]


def named_values(point: dict, X: list, widths: list, tokens: int, p: int) -> dict:
    """The named matrices and scalars of the formula language at the point, mod ``p`` (MATH.md section 2).

    ``point`` holds the curve's coordinates ``Q_i, K_i, V_i`` (``Qt_i``, ...)
    of a plain network, ``X`` the input.

    Examples
    --------
    >>> values = named_values({"Q_1": [[1]], "K_1": [[2]], "V_1": [[3]]}, [[1, 2]], [1, 1], 2, 101)
    >>> values["P"], values["What_1"], values["C_1"], values["alpha_1"], values["H"]
    ([[3]], [[2]], [[2, 4], [4, 8]], 55, [[51, 50], [50, 51]])
    """
    t, layers = tokens, len(widths) - 1
    inverse_t = pow(t, p - 2, p)
    values = {"X": [[v % p for v in row] for row in X], "J": [[1] * t for _ in range(t)],
              "H": [[(int(r == c) - inverse_t) % p for c in range(t)] for r in range(t)]}
    prefix = _identity(widths[0])                                  # P_0 = I
    for i in range(1, layers + 1):
        Q, K, V = ([[v % p for v in row] for row in point[f"{name}_{i}"]] for name in ("Q", "K", "V"))
        # What_i = P_(i-1)^T K_i^T Q_i P_(i-1): layer i's scores in input coordinates
        What = _product(_product(_transpose(prefix), _product(_transpose(K), Q, p), p), prefix, p)
        values[f"What_{i}"] = What
        # C_i = X^T What_i X, alpha_i = (1/t^2) 1^T C_i 1: the mean of its entries
        C = _product(_product(_transpose(values["X"]), What, p), values["X"], p)
        values[f"C_{i}"] = C
        values[f"alpha_{i}"] = sum(map(sum, C)) * inverse_t * inverse_t % p
        prefix = _product(V, prefix, p)                            # P_i = V_i P_(i-1)
    values["P"] = prefix
    return values


# -- evaluating the tree mod p ------------------------------------------------------------------------
def evaluate_formula(node: tuple, values: dict, p: int):
    """The value of a read formula mod ``p``: a residue (a scalar) or a list of rows of residues.

    A division (a negative power of a scalar, a number's denominator) needs a
    unit mod ``p``: otherwise a :class:`Disagreement` (the formula is not
    defined mod ``p`` at this point).

    Examples
    --------
    >>> node = ("multiply", [("number", Fraction(1, 2)), ("matrix", "X")])
    >>> evaluate_formula(node, {"X": [[2, 4]]}, 7)
    [[1, 2]]
    >>> evaluate_formula(("power", ("scalar", "alpha_1"), -1), {"alpha_1": 0}, 7)
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: the formula divides by alpha_1, which is 0 mod 7 at this point
    """
    operation = node[0]
    if operation == "matrix":
        return [list(row) for row in values[node[1]]]
    if operation == "scalar":
        return values[node[1]] % p
    if operation == "number":
        number = node[1]
        if number.denominator % p == 0:
            raise Disagreement(f"the formula's number {number} has a denominator divisible by the prime {p}")
        return number.numerator * pow(number.denominator, p - 2, p) % p
    if operation == "zero":
        rows, cols = node[1]
        return [[0] * cols for _ in range(rows)]
    if operation == "add":
        terms = [evaluate_formula(a, values, p) for a in node[1]]
        if isinstance(terms[0], int):
            return sum(terms) % p
        return [[sum(entries) % p for entries in zip(*rows)] for rows in zip(*terms)]
    if operation == "multiply":
        out = None
        for factor in (evaluate_formula(a, values, p) for a in node[1]):
            if out is None:
                out = factor
            elif isinstance(out, int) and isinstance(factor, int):
                out = out * factor % p
            elif isinstance(out, int) or isinstance(factor, int):       # a scalar times a matrix
                scalar, matrix = (out, factor) if isinstance(out, int) else (factor, out)
                out = [[scalar * v % p for v in row] for row in matrix]
            else:
                out = _product(out, factor, p)
        return out
    if operation == "transpose":
        return _transpose(evaluate_formula(node[1], values, p))
    base, exponent = evaluate_formula(node[1], values, p), node[2]
    if operation == "hadamard":
        return [[pow(v, exponent, p) for v in row] for row in base]
    if isinstance(base, int):
        if exponent < 0:
            if base == 0:
                raise Disagreement(f"the formula divides by {_node_text(node[1])}, which is 0 mod {p} at this point")
            return pow(pow(base, p - 2, p), -exponent, p)
        return pow(base, exponent, p)
    out = base
    for _ in range(exponent - 1):
        out = _product(out, base, p)
    return out


def _node_text(node: tuple) -> str:
    """A short name of a read node, for a message."""
    return node[1] if node[0] in ("matrix", "scalar") else f"a {node[0]}"


# -- the orders -------------------------------------------------------------------------------------
def first_degrees(taylor_lists: list) -> list:
    """Each layer's first nonconstant degree ``k_i``: the least ``n >= 1`` with ``c_n != 0`` (``None`` if none).

    Examples
    --------
    >>> first_degrees([[1, 1, 3], [1, 0, 5]])
    [1, 2]
    """
    return [next((n for n, c in enumerate(taylor) if n >= 1 and c), None) for taylor in taylor_lists]


def leading_orders(ks: list) -> list:
    """The orders ``n_i`` at which layer ``i``'s scores first appear in ``F`` along the query/key collapse.

    ``n_1 = nu_1 = 2 k_1``, ``n_i = 2 nu_(i-1) + 2 k_i`` and ``nu_i = 3 nu_(i-1) +
    2 k_i``, where ``nu_i`` is the order at which the tokens of layer ``i``
    first differ (for a common ``k``, ``n_i = 2k 3^(i-1)``: MATH.md section 4).
    The rule is theory; at its point the checker compares the coefficients
    below ``n_i`` with 0, and refutes a leading claim where one is not.

    Examples
    --------
    >>> leading_orders([1, 2])
    [2, 8]
    """
    orders, nu = [], None
    for k in ks:
        if nu is None:
            nu = 2 * k
            orders.append(nu)
        else:
            orders.append(2 * nu + 2 * k)
            nu = 3 * nu + 2 * k
    return orders


# -- degree bounds ----------------------------------------------------------------------------------------
_ZERO = float("-inf")   # the degree of the zero polynomial


def _series_product(a: list, b: list) -> list:
    """Degree bounds of a product of series: ``deg c_n <= max_(i + j = n) deg a_i + deg b_j`` (sums keep bounds)."""
    return [max((a[i] + b[n - i] for i in range(n + 1)), default=_ZERO) for n in range(len(a))]


def coefficient_degrees(taylor_lists: list, lightning: list, N: int) -> list:
    """Bounds on the total degree of ``F_0 .. F_(N-1)`` along the query/key collapse, in the point's coordinates.

    The coordinates are the entries of ``Qt_i, Kt_i, Vt_i`` and ``X``; the
    bound runs the forward pass of a plain network on degrees instead of
    numbers (one bound per power of ``eps`` for a whole matrix): ``X`` has
    degree 1 at ``eps^0``, ``Q_i = eps Qt_i`` and ``K_i`` degree 1 at
    ``eps^1``, ``V_i`` degree 1 at ``eps^0``; a product of series adds
    degrees (the largest over ``i + j = n``), a sum keeps the larger,
    ``s(A) = sum_m c_m A^m`` over the nonzero ``c_m`` (residues mod ``p``:
    the bound is on the polynomials mod ``p``), and ``1/u`` for a column sum
    ``u = t + u_1 eps + ...`` has ``b_0 = 1/t`` and ``b_n = -(1/t) sum_i u_i b_(n-i)``.
    For ``leading(i)``, ``F`` with ``Kt_i = 0`` has no larger degrees.

    Examples
    --------
    >>> coefficient_degrees([[1, 1, 1]], [False], 3)          # one softmax layer: F_0 = P X J / t, F_2 ~ P X H C_1
    [2, -inf, 6]
    """
    X = [1] + [_ZERO] * (N - 1)
    scaled = [_ZERO, 1] + [_ZERO] * (N - 2) if N > 1 else [_ZERO]   # Q_i = eps Qt_i, K_i = eps Kt_i
    value = [1] + [_ZERO] * (N - 1)                                  # V_i = Vt_i
    for taylor, attention_only in zip(taylor_lists, lightning):
        A = _series_product(_series_product(scaled, X), _series_product(scaled, X))   # (K X)^T (Q X)
        if attention_only:
            S = A
        else:
            power, s = [0] + [_ZERO] * (N - 1), [0] + [_ZERO] * (N - 1)                # A^0 = 1, c_0 = 1
            for c in taylor[1:N]:   # A vanishes at eps^0, so A^m vanishes mod eps^N for m >= N
                power = _series_product(power, A)
                if c:
                    s = [max(x, y) for x, y in zip(s, power)]
            inverse = [0] + [_ZERO] * (N - 1)                                           # 1/t
            for n in range(1, N):
                inverse[n] = max((s[i] + inverse[n - i] for i in range(1, n + 1)), default=_ZERO)
            S = _series_product(s, inverse)
        X = _series_product(value, _series_product(X, S))                                # V X S(A)
    return X


def formula_degree(node: tuple, layers: int):
    """A bound on the total degree of a read formula in the point's coordinates, or None (a negative power).

    ``P`` has degree ``l``, ``X`` 1, ``What_i`` ``2i`` (``P_(i-1)^T Kt_i^T Qt_i
    P_(i-1)``), ``C_i`` and ``alpha_i`` ``2i + 2``, ``H``, ``J`` and numbers 0.

    Examples
    --------
    >>> formula_degree(("multiply", [("number", 1), ("matrix", "P"), ("matrix", "X"), ("matrix", "C_1")]), 2)
    7
    >>> formula_degree(("power", ("scalar", "alpha_1"), -1), 1) is None
    True
    """
    operation = node[0]
    if operation in ("matrix", "scalar"):
        name = node[1]
        if name == "P":
            return layers
        if name == "X":
            return 1
        if name in ("H", "J"):
            return 0
        i = int(name.partition("_")[2])
        return 2 * i if name.startswith("What") else 2 * i + 2
    if operation in ("number", "zero"):
        return 0
    if operation == "transpose":
        return formula_degree(node[1], layers)
    if operation in ("add", "multiply"):
        degrees = [formula_degree(a, layers) for a in node[1]]
        if None in degrees:
            return None
        return max(degrees) if operation == "add" else sum(degrees)
    inner = formula_degree(node[1], layers)
    if inner is None or node[2] < 0:
        return None
    return inner * node[2]


# -- the decision -----------------------------------------------------------------------------------------
def _first_difference(A: list, B: list):
    """The first entry ``(r, c)`` where two matrices differ, or None."""
    return next(((r, c) for r, (a, b) in enumerate(zip(A, B)) for c, (x, y) in enumerate(zip(a, b)) if x != y),
                None)


def _residues(matrix, shape: tuple, p: int, what: str) -> list:
    """A ``rows x cols`` matrix of residues ``0 .. p-1`` (the engine's values), validated."""
    rows, cols = shape
    if not isinstance(matrix, list) or len(matrix) != rows or not all(isinstance(row, list) and len(row) == cols
                                                                      for row in matrix):
        raise Disagreement(f"{what} must be a {rows} x {cols} matrix of residues mod {p}, got {str(matrix)[:60]!r}")
    for row in matrix:
        for v in row:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < p:
                raise Disagreement(f"{what} must hold residues 0 .. {p - 1}, got {str(v)[:40]!r}")
    return matrix


def decide_formula(name: str, below: list, coefficient: list, claimed: list, engine_values, p: int,
                   degree: int | None = None) -> tuple:
    """``(decision, why)`` for a formula claim, after comparing the engine's values with the checker's.

    ``name`` is the compared coefficient in words (``F_2``,
    ``F_6 - F_6|K_2=0``); ``below`` the checker's coefficients that must
    vanish below it (a leading claim; ``(order, matrix)`` pairs),
    ``coefficient`` its value at the point and ``claimed`` the formula's,
    all mod ``p``; ``engine_values`` the certificate's ``values``: the engine's
    residues of both at the point; ``degree`` bounds the degree of both sides
    in the point's coordinates (None: no bound).  A disagreement with the
    engine's values is a :class:`Disagreement`; otherwise ``"refuted"`` (a
    difference at the point) or ``"consistent at one point"``, with the
    Schwartz-Zippel bound ``degree / p`` when there is one.

    Examples
    --------
    >>> decide_formula("F_1", [], [[1, 2]], [[1, 3]], {"coefficient": [[1, 2]], "formula": [[1, 3]]}, 7)[0]
    'refuted'
    >>> decide_formula("F_1", [], [[1, 2]], [[1, 2]], {"coefficient": [[1, 4]], "formula": [[1, 2]]}, 7)
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: the engine's F_1 at the point is 4 mod 7 at entry (0, 1); the checker's forward pass gives 2
    """
    shape = (len(coefficient), len(coefficient[0]))
    if not isinstance(engine_values, dict) or sorted(engine_values) != ["coefficient", "formula"]:
        raise Disagreement(f"values must be an object {{coefficient, formula}} (the engine's residues at the point), "
                           f"got {str(engine_values)[:60]!r}")
    for key, mine, what in (("coefficient", coefficient, f"{name} at the point"),
                            ("formula", claimed, "formula at the point")):
        theirs = _residues(engine_values[key], shape, p, f"values.{key}")
        entry = _first_difference(theirs, mine)
        if entry is not None:
            source = "forward pass" if key == "coefficient" else "evaluation of the formula"
            raise Disagreement(f"the engine's {what} is {theirs[entry[0]][entry[1]]} mod {p} at entry {entry}; "
                               f"the checker's {source} gives {mine[entry[0]][entry[1]]}")
    for order, matrix in below:
        entry = next(((r, c) for r, row in enumerate(matrix) for c, v in enumerate(row) if v), None)
        if entry is not None:
            return "refuted", (f"at the certificate's point mod {p}, the coefficient of eps^{order} of the same "
                               f"difference is {matrix[entry[0]][entry[1]]}, not 0, at entry {entry}: the layer's "
                               f"scores appear before the claimed order, so this is not its leading coefficient")
    entry = _first_difference(coefficient, claimed)
    if entry is not None:
        r, c = entry
        return "refuted", (f"at the certificate's point mod {p}, {name} is {coefficient[r][c]} and the formula is "
                           f"{claimed[r][c]} at entry {entry}: a nonzero difference at one point proves the formula "
                           "false")
    agree = f"{name} and the formula agree at the certificate's point mod {p}: not a proof (a false formula can agree"
    if degree is None:
        return "consistent at one point", (
            f"{agree} at one point; the formula has a negative power, so the checker bounds no degree and no "
            "probability)")
    return "consistent at one point", (
        f"{agree} at one point; both sides have degree at most {degree} in the point's coordinates (the checker's "
        f"bound), so at a point drawn uniformly from GF({p}) a formula whose difference is not 0 mod {p} agrees "
        f"with probability at most {degree}/{p} (about {degree / p:.1e}; Schwartz-Zippel); symattn draws the "
        "point so, which the checker cannot confirm)")

