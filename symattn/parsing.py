"""The one parser for user text: expressions are read, never executed.

Every string a user gives symattn (a normalizer such as ``"1 + x**2"``, a
claimed formula, a value in a point, an entry of a curve) is read here.  The
text is split into Python's syntax tree with :func:`ast.parse` (which builds
the tree and runs nothing), and the tree is walked node by node: only
numbers, the names the context allows, ``+ - * / **`` (``^`` is read as
``**``), parentheses and the functions and constants of
:data:`ACCEPTED_FUNCTIONS` and :data:`ACCEPTED_CONSTANTS` are accepted.
Anything else (attribute access, subscripts, keywords, lambdas,
comprehensions, strings, calls outside the table, unknown or non-ASCII
names) is a :class:`~symattn.errors.ParseError` that names the offending
token and lists what is accepted.  Matrix formulas (a claimed leading
coefficient ``leading(i) = ...``, a coefficient ``F_n = ...``) are read the
same way by :func:`matrix_formula`.

Size limits (:class:`ExpressionLimits`) keep a hostile or mistyped
expression from hanging the program: text length, number of nodes, nesting
depth, digits of a number, size of an exponent, total degree (exponents
multiplied through nested powers), nesting of functions and arguments of
``Max`` / ``Min``.  :func:`measure_expression` applies the same limits to a
sympy expression handed to the Python API, before any work is done on it.

Examples
--------
>>> import sympy as sp
>>> x = sp.Symbol("x", real=True)
>>> parse_expression("1 + x^2", {"x": x})
x**2 + 1
>>> parse_expression("exp(x) - 0.5*x", {"x": x})
-x/2 + exp(x)
>>> parse_expression("__import__('os')", {"x": x})
Traceback (most recent call last):
...
symattn.errors.ParseError: cannot read the expression "__import__('os')": the call of '__import__' is not accepted; accepted: numbers, the names x, the operators + - * / ** ^, parentheses, the functions Abs, acos, ... and the constants E, e, pi
"""

from __future__ import annotations

import ast
import decimal
import math
import unicodedata
from dataclasses import dataclass
from typing import Mapping

import sympy as sp

from .errors import ParseError, ShapeError, SymattnError
from .languages import FORMULA_LANGUAGE

__all__ = [
    "ACCEPTED_FUNCTIONS",
    "ACCEPTED_CONSTANTS",
    "ExpressionLimits",
    "DEFAULT_LIMITS",
    "NORMALIZER_LIMITS",
    "API_LIMITS",
    "RESERVED_NAMES",
    "measure_expression",
    "ExpressionShape",
    "refuse_unaccepted_characters",
    "check_claim_text",
    "MAX_CLAIM_LENGTH",
    "shorten",
    "parse_expression",
    "parse_number",
    "to_sympy",
    "to_sympy_matrix",
    "matrix_formula",
    "MAX_FORMULA_LENGTH",
]

#: Functions a user's expression may call, by name, with their number of arguments.
#: The non-analytic ones (Abs, sign, Max, ...) are read so that a normalizer
#: using them gets the precise "not real-analytic" error rather than a parse error.
ACCEPTED_FUNCTIONS: dict[str, tuple] = {
    "exp": (sp.exp, 1),
    "log": (sp.log, 1),
    "sqrt": (sp.sqrt, 1),
    "sin": (sp.sin, 1),
    "cos": (sp.cos, 1),
    "tan": (sp.tan, 1),
    "asin": (sp.asin, 1),
    "acos": (sp.acos, 1),
    "atan": (sp.atan, 1),
    "sinh": (sp.sinh, 1),
    "cosh": (sp.cosh, 1),
    "tanh": (sp.tanh, 1),
    "asinh": (sp.asinh, 1),
    "erf": (sp.erf, 1),
    "Abs": (sp.Abs, 1),
    "sign": (sp.sign, 1),
    "floor": (sp.floor, 1),
    "ceiling": (sp.ceiling, 1),
    "Heaviside": (sp.Heaviside, 1),
    "Max": (sp.Max, None),
    "Min": (sp.Min, None),
}

#: Named constants a user's expression may use.
ACCEPTED_CONSTANTS: dict[str, sp.Expr] = {"pi": sp.pi, "E": sp.E, "e": sp.E}


#: Names refused even where a function of one variable may name its variable as it likes: sympy,
#: numpy and mpmath read them as the imaginary unit, infinity or NaN, so a user who writes them
#: means one of those (``1 + I**2`` is 0, not ``1 + x**2``); symattn has none of them.
RESERVED_NAMES = frozenset({
    "I", "J", "j", "oo", "zoo", "inf", "Inf", "INF", "infinity", "Infinity", "nan", "NaN", "NAN",
    "ComplexInfinity", "EulerGamma", "GoldenRatio", "Catalan", "TribonacciConstant",
})


@dataclass(frozen=True)
class ExpressionLimits:
    """Bounds on a user's expression, checked before any work is done.

    Attributes
    ----------
    max_length : int
        Characters of text.
    max_nodes : int
        Nodes of the syntax tree (numbers, names, operators, calls); for a
        sympy expression (:func:`measure_expression`), distinct subexpressions.
    max_depth : int
        Nesting depth (parentheses and calls; a long sum or product counts once).
    max_digits : int
        Digits of a number, and of the result of a power or product of
        numbers (below Python's 4300-digit limit of integer-to-text conversion).
    max_exponent : int
        Absolute value of the numerator and denominator of a numeric
        exponent applied to an expression with names.
    max_degree : int
        Total degree of a power: the exponents multiplied through nested
        powers, ``((t**100)**100)`` has degree 10**4.
    max_function_depth : int
        Nesting of functions (``exp``, ``log``, ``sin``, ...) and of powers
        with a non-constant exponent (``2**x``): ``exp(exp(x))`` has 2.
    max_power_tower : int
        Nesting of powers with a non-constant exponent (``x**x`` has 1,
        ``x**x**x`` 2; ``exp`` of a logarithm counts, sympy turns
        ``exp(n*log(2))`` into ``2**n``): their exact values at integer
        points have astronomically many digits.
    max_arguments : int
        Arguments of one ``Max`` or ``Min``.

    Examples
    --------
    >>> ExpressionLimits().max_exponent
    1000
    >>> NORMALIZER_LIMITS.max_length, NORMALIZER_LIMITS.max_function_depth
    (2000, 3)
    """

    max_length: int = 100_000
    max_nodes: int = 50_000
    max_depth: int = 60
    max_digits: int = 4000
    max_exponent: int = 1000
    max_degree: int = 1000
    max_function_depth: int = 6
    max_power_tower: int = 1
    max_arguments: int = 32


#: Limits for general expressions (claimed formulas, points).
DEFAULT_LIMITS = ExpressionLimits()
#: Limits for normalizers: Taylor coefficients are computed up to degree 512 at most, and
#: every nested transcendental function multiplies the work of the exact series.
NORMALIZER_LIMITS = ExpressionLimits(max_length=2000, max_nodes=1000, max_depth=30, max_digits=60,
                                     max_exponent=256, max_degree=512, max_function_depth=3,
                                     max_power_tower=3)
#: Limits for sympy expressions given to the Python API (:func:`symattn.check.check_expression`):
#: the engine's own expansions have hundreds of thousands of subexpressions, and the sides are
#: evaluated exactly at integer points (so no power with a non-constant exponent).
API_LIMITS = ExpressionLimits(max_nodes=2_000_000, max_power_tower=0)

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}


def _accepted(names) -> str:
    name_text = ", ".join(sorted(names)) if names else "(none)"
    return ("accepted: numbers, the names " + name_text + ", the operators + - * / ** ^, parentheses, "
            "the functions " + ", ".join(sorted(ACCEPTED_FUNCTIONS, key=str.lower))
            + " and the constants " + ", ".join(sorted(ACCEPTED_CONSTANTS)))


def shorten(text: str, limit: int = 80) -> str:
    """The ``repr`` of a user's text, cut in the middle when it is long (for one-line messages).

    Examples
    --------
    >>> shorten("1 + x")
    "'1 + x'"
    >>> shorten("a" + " " * 3000 + "!")
    "'a                                                ...               !' (3002 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    head, tail = (2 * limit) // 3, limit // 5
    return f"{text[:head] + '...' + text[-tail:]!r} ({len(text)} characters)"


def _digits(number: int) -> int:
    """Decimal digits of an integer, from its bit length (``str`` fails past 4300 digits)."""
    return int(abs(number).bit_length() * math.log10(2)) + 1


def _character_name(char: str) -> str:
    name = unicodedata.name(char, None)
    if name is None:
        name = "a control character" if unicodedata.category(char).startswith("C") else "unnamed"
    return f"U+{ord(char):04X} {name}"


def refuse_unaccepted_characters(text: str, what: str, error: type = None) -> None:
    """Refuse any character outside printable ASCII (tabs and newlines aside), naming it and its position.

    Look-alikes (``Ｐ``, ``ℌ``, which Python would silently read as ``P``
    and ``H``), invisible characters (zero-width spaces, right-to-left
    overrides) and superscripts are refused rather than misread.

    Examples
    --------
    >>> refuse_unaccepted_characters("P*X", "formula")
    >>> refuse_unaccepted_characters("P*\uff38", "formula")
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: cannot read the formula 'P*Ｘ': the character 'Ｘ' at position 2 (U+FF38 FULLWIDTH LATIN CAPITAL LETTER X) is not accepted (ASCII only)
    """
    error = error or ParseError
    if text.isascii() and (text.isprintable() or all(c.isprintable() or c in " \t\n" for c in text)):
        return
    for position, char in enumerate(text):
        if not (char.isascii() and (char.isprintable() or char in " \t\n")):
            hint = "; write powers as x**2" if char in "²³¹⁰⁴⁵⁶⁷⁸⁹" else ""
            raise error(f"cannot read the {what} {shorten(text)}: the character {char!r} at position {position} "
                        f"({_character_name(char)}) is not accepted (ASCII only{hint})")


#: The longest claim read, of every kind (``kernel = 6``, ``F_2 = <formula>``, ``leading(2) = <formula>``):
#: a numeric claim is a few dozen characters, the leading coefficient of layer 6 (the deepest computed) 1,840.
MAX_CLAIM_LENGTH = 2000


def check_claim_text(text: str, error: type = None) -> None:
    """Refuse a claim longer than :data:`MAX_CLAIM_LENGTH` or with a character outside ASCII, before it is read.

    Every claim reader (:func:`symattn.check.parse_claim`,
    :func:`symattn.check.parse_coefficient_claim`,
    :func:`symattn.expand.parse_formula_claim`) measures its text here
    first, so no pattern, integer or formula ever sees more.

    Examples
    --------
    >>> check_claim_text("leading(2) = P*X*J/t")
    >>> check_claim_text("leading(" + "1" * 5000 + ") = P")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: the claim 'leading(111...111) = P' (5013 characters) is too long: 5013 characters, at most 2000 are accepted; accepted: ...
    """
    from .languages import ACCEPTED_CLAIMS, FORMULA_CLAIMS

    error = error or SymattnError
    if len(text) > MAX_CLAIM_LENGTH:
        raise error(f"the claim {shorten(text)} is too long: {len(text)} characters, at most {MAX_CLAIM_LENGTH} "
                    f"are accepted; accepted: {'; '.join(ACCEPTED_CLAIMS + FORMULA_CLAIMS)}")
    refuse_unaccepted_characters(text, "claim", error)


def _ceiling(exponent: sp.Rational) -> int:
    """``ceil(|exponent|)`` of a sympy Rational, in integers."""
    return -(-abs(int(exponent.p)) // int(exponent.q))


def _degree(expr: sp.Basic, memo: dict) -> int:
    """A bound on the total degree of ``expr`` in its symbols (functions count as their argument)."""
    known = memo.get(expr)
    if known is not None:
        return known
    if expr.is_Symbol:
        return 1
    if not expr.args:
        return 0
    if expr.is_Pow:
        base, exponent = _degree(expr.base, memo), _degree(expr.exp, memo)
        value = base * _ceiling(expr.exp) if expr.exp.is_Rational else base + exponent
    elif expr.is_Mul:
        value = sum(_degree(a, memo) for a in expr.args)
    else:
        value = max(_degree(a, memo) for a in expr.args)
    memo[expr] = value
    return value


class _Reader:
    """Walks a syntax tree and builds the sympy expression, refusing everything else."""

    def __init__(self, text: str, symbols: Mapping[str, sp.Basic], what: str, limits: ExpressionLimits,
                 error: type, variable: sp.Symbol | None = None):
        self.text = text
        self.symbols = symbols
        self.variable = variable
        self.used: set[str] = set()
        self.what = what
        self.limits = limits
        self.error = error
        self.nodes = 0
        self.degrees: dict = {}

    def fail(self, reason: str):
        names = list(self.symbols) + ([str(self.variable)] if self.variable is not None else [])
        raise self.error(f"cannot read the {self.what} {shorten(self.text)}: {reason}; {_accepted(names)}")

    def read(self, node: ast.AST, depth: int) -> sp.Expr:
        self.nodes += 1
        if self.nodes > self.limits.max_nodes:
            raise self.error(f"the {self.what} is too large: more than {self.limits.max_nodes} "
                             "numbers, names and operators")
        if depth > self.limits.max_depth:
            raise self.error(f"the {self.what} is nested too deeply: more than {self.limits.max_depth} "
                             "levels of parentheses or calls")
        if isinstance(node, ast.Constant):
            return self.number(node)
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            value = self.read(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return self.chain(node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return self.power(self.read(node.left, depth + 1), self.read(node.right, depth + 1), node)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        self.fail(f"{self.describe(node)} is not accepted")

    def chain(self, node: ast.BinOp, depth: int) -> sp.Expr:
        # a long sum a + b + c + ... is a left spine of BinOps: walk it in a loop so that
        # its length does not count as nesting depth
        operations = []
        while isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            operations.append((node.op, node.right))
            node = node.left
            self.nodes += 1
        value = self.read(node, depth + 1)
        for op, right in reversed(operations):
            operand = self.read(right, depth + 1)
            if isinstance(op, ast.Div) and operand == 0:
                self.fail("it divides by zero")
            value = _BINARY[type(op)](value, operand)
            self.check_number(value.as_coeff_Mul()[0] if value.is_Mul else value)
        return value

    def check_number(self, value: sp.Expr) -> None:
        """Refuse a computed number (a product or power of numbers) with too many digits."""
        if value.is_Rational and max(_digits(value.p), _digits(value.q)) > self.limits.max_digits:
            raise self.error(f"a number computed in the {self.what} {shorten(self.text)} has more than "
                             f"{self.limits.max_digits} digits; at most {self.limits.max_digits} are accepted")

    def number(self, node: ast.Constant) -> sp.Expr:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"{self.describe(node)} is not accepted")
        segment = ast.get_source_segment(self.text, node) or "a number"
        # an integer's digits from its bit length: 0x fff... has few decimal digits in the text
        digits = _digits(value) if isinstance(value, int) else sum(ch.isdigit() for ch in segment)
        if digits > self.limits.max_digits:
            raise self.error(f"the number {segment[:20]}... in the {self.what} has {digits} digits; "
                             f"at most {self.limits.max_digits} are accepted")
        if isinstance(value, int):
            return sp.Integer(value)
        # a decimal literal is read exactly: 0.1 is 1/10, not the nearest binary float
        try:
            exact = decimal.Decimal(segment.replace("_", ""))
        except decimal.InvalidOperation:
            self.fail(f"the number {segment!r} is not accepted")
        if not exact.is_finite() or abs(exact.adjusted()) > self.limits.max_digits:
            raise self.error(f"the number {segment!r} in the {self.what} is out of range: at most "
                             f"{self.limits.max_digits} digits before or after the point are accepted")
        numerator, denominator = exact.as_integer_ratio()
        return sp.Rational(numerator, denominator)

    def name(self, identifier: str) -> sp.Expr:
        if identifier in self.symbols:
            self.used.add(identifier)
            return self.symbols[identifier]
        if identifier in ACCEPTED_CONSTANTS:
            return ACCEPTED_CONSTANTS[identifier]
        if identifier in ACCEPTED_FUNCTIONS:
            self.fail(f"the function {identifier!r} is used without an argument")
        if identifier in RESERVED_NAMES:
            self.fail(f"the name {identifier!r} is not known (there is no imaginary unit, infinity or NaN)")
        if self.variable is not None:
            # a function of one variable may name it as it likes: exp(t) is exp(x)
            self.used.add(identifier)
            if len(self.used) > 1:
                names = ", ".join(sorted(self.used))
                raise self.error(f"the {self.what} {self.text!r} has more than one free symbol ({names}); "
                                 f"it is a function of one variable {self.variable}")
            return self.variable
        self.fail(f"the name {identifier!r} is not known")

    def power(self, base: sp.Expr, exponent: sp.Expr, node: ast.AST) -> sp.Expr:
        limits = self.limits
        if exponent.is_Rational:
            if max(abs(exponent.p), abs(exponent.q)) > limits.max_exponent:
                raise self.error(f"the exponent {exponent} in the {self.what} is too large: at most "
                                 f"{limits.max_exponent} in absolute value is accepted")
            if base.is_Rational:
                size = max(_digits(base.p), _digits(base.q))
                if size * abs(exponent.p) > limits.max_digits:
                    shown = str(base) if size <= 20 else f"a number of {size} digits"
                    raise self.error(f"{shown}**{exponent} in the {self.what} has more than "
                                     f"{limits.max_digits} digits; at most {limits.max_digits} are accepted")
            if base == 0 and exponent.is_negative:
                self.fail("it divides by zero")
            # ((t**100)**100)**100: each exponent is small, the total degree is not
            degree = _degree(base, self.degrees) * _ceiling(exponent)
            if degree > limits.max_degree:
                segment = ast.get_source_segment(self.text, node) or "a power"
                raise self.error(f"the power {shorten(segment, 60)} in the {self.what} has total degree "
                                 f"{degree} (exponents multiplied through nested powers); at most "
                                 f"{limits.max_degree} is accepted")
        elif exponent.is_Number:
            self.fail(f"the exponent {exponent} is not accepted")
        return base**exponent

    def call(self, node: ast.Call, depth: int) -> sp.Expr:
        if not isinstance(node.func, ast.Name):
            self.fail(f"{self.describe(node.func)} is not accepted")
        name = node.func.id
        if name not in ACCEPTED_FUNCTIONS:
            self.fail(f"the call of {name!r} is not accepted")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self.fail(f"{name} takes plain arguments only (no keywords, no *)")
        function, arity = ACCEPTED_FUNCTIONS[name]
        if (arity is not None and len(node.args) != arity) or (arity is None and len(node.args) < 2):
            wanted = f"{arity} argument{'s' if arity != 1 else ''}" if arity is not None else "two or more arguments"
            self.fail(f"{name} takes {wanted}, got {len(node.args)}")
        if arity is None:  # Max, Min: counted before sympy compares every pair of arguments (minutes for 400)
            if len(node.args) > self.limits.max_arguments:
                self.fail(f"{name} of {len(node.args)} arguments is not accepted; at most "
                          f"{self.limits.max_arguments}")
            arguments = [self.read(a, depth + 1) for a in node.args]
            return function(*arguments, evaluate=all(a.is_number for a in arguments))
        return function(*(self.read(a, depth + 1) for a in node.args))

    def describe(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.text, node)
        kinds = {
            ast.Attribute: "attribute access", ast.Subscript: "a subscript", ast.Lambda: "a lambda",
            ast.ListComp: "a comprehension", ast.GeneratorExp: "a comprehension",
            ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.JoinedStr: "an f-string",
            ast.Compare: "a comparison", ast.BoolOp: "a logical operator", ast.IfExp: "a conditional",
            ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Set: "a set",
            ast.NamedExpr: "an assignment", ast.Starred: "a starred argument",
        }
        kind = kinds.get(type(node))
        if isinstance(node, ast.Constant):
            kind = f"a {type(node.value).__name__} constant"
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            kind = f"the operator {type(node.op).__name__}"
        kind = kind or type(node).__name__
        return f"{kind} {segment!r}" if segment else kind


def _check_text(text: str, what: str, limits: ExpressionLimits, error: type) -> str:
    if len(text) > limits.max_length:
        raise error(f"the {what} is too long: {len(text)} characters, at most {limits.max_length} "
                    "are accepted")
    refuse_unaccepted_characters(text, what, error)
    depth = deepest = 0
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        deepest = max(deepest, depth)
    if deepest > limits.max_depth:
        raise error(f"the {what} is nested too deeply: more than {limits.max_depth} levels of parentheses")
    return text


@dataclass(frozen=True)
class ExpressionShape:
    """What :func:`measure_expression` found: the deepest nesting of functions and the total degree.

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> measure_expression(sp.Matrix([[sp.exp(x**2), x**3]]))
    ExpressionShape(functions=1, degree=3)
    """

    functions: int
    degree: int

    def combine(self, other: "ExpressionShape") -> "ExpressionShape":
        return ExpressionShape(max(self.functions, other.functions), max(self.degree, other.degree))


def measure_expression(value, *, what: str = "expression", limits: ExpressionLimits = DEFAULT_LIMITS,
                       error: type = ParseError) -> ExpressionShape:
    """Refuse a sympy expression (or matrix) over the :class:`ExpressionLimits`, before any work on it.

    The parser checks text as it reads it; this checks what the Python API
    receives ready-made (``x**x**x**x``, ``Max`` of 400 arguments, 29 nested
    ``exp``), where sympy's evaluation or printing could otherwise hang.
    Measured: distinct subexpressions (``max_nodes``), nesting of functions
    and of powers with a non-constant exponent (``max_function_depth``),
    arguments of ``Max`` / ``Min`` (``max_arguments``), digits of numbers
    (``max_digits``), numeric exponents (``max_exponent``) and total degree
    (``max_degree``).  The walk visits each distinct subexpression once and
    stops at the first limit exceeded.

    Raises
    ------
    ParseError
        (or ``error``) naming the limit and its value.

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> measure_expression(sp.exp(x) + x**3)
    ExpressionShape(functions=1, degree=3)
    >>> measure_expression(x**x**x**x**x)
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the expression 'x**(x**x)' has 2 nested powers with a non-constant exponent; at most 1 is accepted (their exact values have astronomically many digits)
    >>> measure_expression((x**10 + 1)**200)
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the expression '(x**10 + 1)**200' has total degree 2000 (exponents multiplied through nested powers); at most 1000 is accepted
    """
    roots = list(value) if isinstance(value, sp.MatrixBase) else [value]
    # per distinct subexpression: (nesting of functions, nesting of variable exponents, degree, has a log)
    seen: dict = {}
    stack = [(root, False) for root in roots if isinstance(root, sp.Basic)]

    def refuse(node, reason):
        raise error(f"the {what} {shorten(_text(node), 60)} {reason}")

    while stack:
        node, ready = stack.pop()
        if not ready:
            if node in seen:
                continue
            if len(seen) >= limits.max_nodes:
                raise error(f"the {what} is too large: more than {limits.max_nodes} distinct subexpressions")
            seen[node] = None
            stack.append((node, True))
            stack.extend((a, False) for a in node.args if isinstance(a, sp.Basic) and a not in seen)
            continue
        args = [seen[a] for a in node.args if isinstance(a, sp.Basic)]
        functions = max((a[0] for a in args), default=0)
        towers = max((a[1] for a in args), default=0)
        has_log = isinstance(node, sp.log) or any(a[3] for a in args)
        if node.is_Symbol:
            degree = 1
        elif node.is_Rational:
            if max(_digits(node.p), _digits(node.q)) > limits.max_digits:
                raise error(f"the {what} has a number with more than {limits.max_digits} digits; at most "
                            f"{limits.max_digits} are accepted")
            degree = 0
        elif node.is_Pow:
            base_degree, exponent_degree = args[0][2], args[1][2]
            exponent = node.exp
            if exponent.is_Rational:
                if max(abs(exponent.p), abs(exponent.q)) > limits.max_exponent:
                    refuse(node, f"has the exponent {shorten(str(exponent), 40)}; at most {limits.max_exponent} "
                                 "in absolute value is accepted")
                degree = base_degree * _ceiling(exponent)
            elif exponent_degree:
                functions, towers = functions + 1, towers + 1  # 2**x is exp(x*log(2)): one more level
                degree = base_degree + exponent_degree
            else:
                degree = base_degree
        else:
            if node.is_Function:  # (Max and Min are not sympy Functions, they are applications)
                functions += 1
                if isinstance(node, sp.exp) and args[0][3] and args[0][2]:
                    towers += 1  # exp(x*log(2)) is 2**x
                if isinstance(node, (sp.Max, sp.Min)) and len(node.args) > limits.max_arguments:
                    refuse(node, f"has {type(node).__name__} of {len(node.args)} arguments; at most "
                                 f"{limits.max_arguments} are accepted")
            degree = sum(a[2] for a in args) if node.is_Mul else max((a[2] for a in args), default=0)
        if towers > limits.max_power_tower:
            if not limits.max_power_tower:
                refuse(node, "is a power with a non-constant exponent, not accepted here: its exact values at "
                             "integer points have astronomically many digits")
            refuse(node, f"has {towers} nested powers with a non-constant exponent; at most "
                         f"{limits.max_power_tower} {'is' if limits.max_power_tower == 1 else 'are'} accepted "
                         "(their exact values have astronomically many digits)")
        if functions > limits.max_function_depth:
            refuse(node, f"nests {functions} functions or powers with a non-constant exponent; at most "
                         f"{limits.max_function_depth} are accepted")
        if degree > limits.max_degree:
            refuse(node, f"has total degree {degree} (exponents multiplied through nested powers); at most "
                         f"{limits.max_degree} is accepted")
        seen[node] = (functions, towers, degree, has_log)
    found = [seen[root] for root in roots if isinstance(root, sp.Basic)]
    return ExpressionShape(max((f[0] for f in found), default=0), max((f[2] for f in found), default=0))


def _text(node: sp.Basic) -> str:
    """The text of a subexpression for a message, without printing a huge one."""
    for count, _ in enumerate(sp.preorder_traversal(node)):
        if count > 200:
            return f"{type(node).__name__}(...) of {len(node.args)} arguments"
    return str(node)


def parse_expression(text: str, symbols: Mapping[str, sp.Basic] | None = None, *,
                     what: str = "expression", limits: ExpressionLimits = DEFAULT_LIMITS,
                     error: type = ParseError, variable: sp.Symbol | None = None) -> sp.Expr:
    """Read a user's expression into sympy without executing anything.

    Parameters
    ----------
    text : str
        The expression, e.g. ``"1 + x**2"`` or ``"c_1^2/4"``.
    symbols : mapping of str to sympy objects, optional
        The names the expression may use (besides the accepted constants).
    what : str
        What the text is, for error messages (``"normalizer"``, ``"claimed expression"``...).
    limits : ExpressionLimits
        Size limits checked while reading.
    error : type
        The :class:`~symattn.errors.SymattnError` subclass to raise
        (:class:`~symattn.errors.ParseError` by default).
    variable : sympy Symbol, optional
        For a function of one variable: one name outside ``symbols`` is read
        as this symbol (``exp(t)`` as ``exp(x)``); a second name is an error.

    Returns
    -------
    sympy expression

    Raises
    ------
    ParseError
        (or ``error``) naming the offending token and what is accepted.

    Examples
    --------
    >>> c1 = sp.Symbol("c_1")
    >>> parse_expression("c_1^2/4 + 0.25", {"c_1": c1})
    c_1**2/4 + 1/4
    >>> parse_expression("x.__class__", {"x": c1})
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: cannot read the expression 'x.__class__': attribute access 'x.__class__' is not accepted; accepted: ...
    >>> parse_expression("exp(x²)", {"x": c1})
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: cannot read the expression 'exp(x²)': the character '²' at position 5 (U+00B2 SUPERSCRIPT TWO) is not accepted (ASCII only; write powers as x**2)
    >>> parse_expression("((c_1**100)**100)**100", {"c_1": c1})
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the power '(c_1**100)**100' in the expression has total degree 10000 (exponents multiplied through nested powers); at most 1000 is accepted
    """
    symbols = dict(symbols or {})
    if not isinstance(text, str):
        raise error(f"the {what} must be a string, got {type(text).__name__} {text!r:.60}")
    text = _check_text(text, what, limits, error).strip()
    if not text:
        raise error(f"the {what} is empty; {_accepted(symbols)}")
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except SyntaxError as err:
        if "integer string conversion" in str(err.msg):  # Python refuses int literals past 4300 digits
            raise error(f"a number in the {what} {shorten(text)} has more than 4300 digits; at most "
                        f"{limits.max_digits} are accepted") from None
        where = f" at position {err.offset - 1}" if err.offset else ""
        raise error(f"cannot read the {what} {shorten(text)}: invalid syntax{where}; "
                    f"{_accepted(symbols)}") from None
    except (RecursionError, MemoryError, ValueError):
        raise error(f"cannot read the {what} {shorten(text)}: too deeply nested") from None
    reader = _Reader(text.replace("^", "**"), symbols, what, limits, error, variable)
    try:
        value = reader.read(tree.body, 0)
        # what the text builds: nested functions, towers of powers, Max of many arguments
        measure_expression(value, what=what, limits=limits, error=error)
    except RecursionError:
        raise error(f"the {what} is nested too deeply") from None
    except (TypeError, ValueError, ArithmeticError) as err:  # sympy refusing e.g. Max of a complex
        if isinstance(err, error):
            raise
        raise error(f"cannot read the {what} {shorten(text)}: {err}") from None
    if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise error(f"the {what} {shorten(text)} is not finite")
    return value


def parse_number(text: str, *, what: str = "number", limits: ExpressionLimits = DEFAULT_LIMITS,
                 error: type = ParseError) -> sp.Expr:
    """Read an exact real number (``"1/3"``, ``"0.25"``, ``"sqrt(2)"``, ``"pi/2"``).

    Examples
    --------
    >>> parse_number("0.1"), parse_number("-3/4"), parse_number("sqrt(2)/2")
    (1/10, -3/4, sqrt(2)/2)
    >>> parse_number("x")
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: cannot read the number 'x': the name 'x' is not known; accepted: numbers, the names (none), ...
    """
    value = parse_expression(text, {}, what=what, limits=limits, error=error)
    if value.free_symbols or value.is_real is False:
        raise error(f"the {what} {text!r} is not a real number")
    return value


def to_sympy(value, symbols: Mapping[str, sp.Basic] | None = None, *, what: str = "value",
             error: type = ParseError, finite: bool = True) -> sp.Basic:
    """A sympy object from a user's value: strings through :func:`parse_expression`, never ``eval``.

    Numbers (int, Fraction, float, numpy and mpmath numbers) and sympy objects
    are converted exactly as sympy converts them; any other type is refused.
    A float ``inf`` or ``nan`` is refused unless ``finite=False`` (values a
    computation returns at a pole), and so is an integer of more digits than
    :data:`DEFAULT_LIMITS` accepts.

    Examples
    --------
    >>> from fractions import Fraction
    >>> to_sympy(Fraction(1, 3)), to_sympy("2/3"), to_sympy(sp.Symbol("y") + 1)
    (1/3, 2/3, y + 1)
    >>> to_sympy(object())
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the value must be a number, a sympy expression or a string, got object
    >>> to_sympy(float("inf"))
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the value inf is not a finite number; give a finite number such as 1/3, 0.25 or "sqrt(2)"
    """
    if isinstance(value, str):
        return parse_expression(value, symbols, what=what, error=error)
    try:
        result = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError, ValueError):
        raise error(f"the {what} must be a number, a sympy expression or a string, "
                    f"got {type(value).__name__}") from None
    if not isinstance(value, sp.Basic) and isinstance(result, sp.Number):
        # a float inf or nan would become sympy's oo or nan and poison every result silently
        if finite and result in (sp.oo, -sp.oo, sp.zoo, sp.nan):
            raise error(f"the {what} {value!r} is not a finite number; give a finite number such as 1/3, "
                        f"0.25 or \"sqrt(2)\"")
        if result.is_Rational and max(_digits(result.p), _digits(result.q)) > DEFAULT_LIMITS.max_digits:
            raise error(f"the {what} has more than {DEFAULT_LIMITS.max_digits} digits; at most "
                        f"{DEFAULT_LIMITS.max_digits} are accepted")
    return result


def to_sympy_matrix(value, symbols: Mapping[str, sp.Basic] | None = None, *, what: str = "matrix",
                    error: type = ParseError, finite: bool = True) -> sp.Matrix:
    """A sympy Matrix from a Matrix, a numpy array or nested lists, each entry read by :func:`to_sympy`.

    ``sympy.Matrix`` itself would pass string entries to ``sympify``; this
    reads them with the safe parser instead.

    Examples
    --------
    >>> eps = sp.Symbol("eps")
    >>> to_sympy_matrix([["eps", "2*eps**2"]], {"eps": eps})
    Matrix([[eps, 2*eps**2]])
    >>> to_sympy_matrix([[1, 2], [3]])
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: the matrix has rows of different lengths (2, 1)
    """
    if isinstance(value, sp.MatrixBase):
        return sp.Matrix(value)
    if hasattr(value, "tolist") and not isinstance(value, sp.Basic):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise error(f"the {what} must be a Matrix or a non-empty list of rows, got {type(value).__name__}")
    rows = [row if isinstance(row, (list, tuple)) else [row] for row in value]
    lengths = tuple(len(row) for row in rows)
    if len(set(lengths)) != 1 or not lengths[0]:
        raise error(f"the {what} has rows of different lengths {lengths}")
    return sp.Matrix([[to_sympy(entry, symbols, what=f"entry of the {what}", error=error, finite=finite)
                       for entry in row] for row in rows])


# -- matrix formulas ------------------------------------------------------------------------------
#: The longest matrix formula read (characters).
MAX_FORMULA_LENGTH = 5000


def canonical_matrix_name(name):
    """``What_i`` for the old spelling ``What1`` (read on input only); any other name unchanged.

    Examples
    --------
    >>> canonical_matrix_name("What1"), canonical_matrix_name("What_1"), canonical_matrix_name("C_2")
    ('What_1', 'What_1', 'C_2')
    """
    if isinstance(name, str) and name.startswith("What") and name[4:].isdigit() and name[4:].isascii():
        return f"What_{name[4:]}"
    return name


def matrix_formula(text: str, lc: "LeadingCoefficient", target: str | None = None):
    """A sympy matrix expression from text in the names of ``lc.matrix_form``, read without executing anything.

    ``target`` names what the formula is compared with in a shape error
    (default: the leading coefficient of ``lc``'s layer).

    The language (:data:`FORMULA_LANGUAGE`): the matrices ``P``, ``X``,
    ``H``, ``J``, ``C_i`` and ``What_i`` (the old ``What1`` also read) of
    :attr:`LeadingCoefficient.definitions
    <symattn.expand.LeadingCoefficient.definitions>`, the scalars ``c_k`` (the
    normalizer's leading Taylor coefficient, a number for a named normalizer),
    ``alpha_i`` and ``t`` (the token count), numbers, ``+ - * /``, powers
    ``**`` or ``^`` (integer powers of scalars and of square matrices),
    ``A.T`` (transpose), ``hadamard(A, m)`` (entrywise power) and
    parentheses.  Products are written with ``*`` (or ``@``).  The text is
    split by :func:`ast.parse` and walked node by node, as
    :func:`parse_expression` reads scalar expressions.

    Raises
    ------
    ParseError
        Naming the offending token and the accepted names; a product of
        matrices of the wrong shapes is a ShapeError.

    Examples
    --------
    >>> from symattn.expand import leading_coefficient
    >>> from symattn.model import Architecture
    >>> lc = leading_coefficient(Architecture.uniform(layers=2, width=2, tokens=3), 2)
    >>> matrix_formula("c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J", lc) == lc.matrix_form
    True
    >>> matrix_formula("P*X*C_1.__class__", lc)
    Traceback (most recent call last):
    ...
    symattn.errors.ParseError: cannot read the formula 'P*X*C_1.__class__': the attribute '__class__' is not accepted (only A.T, the transpose); accepted: ...
    """
    from .algebra.matrix_expressions import entrywise_power

    if not isinstance(text, str):
        raise ParseError(f"a formula is a string, got {type(text).__name__}")
    if len(text) > MAX_FORMULA_LENGTH:
        raise ParseError(f"the formula is too long ({len(text)} characters; at most {MAX_FORMULA_LENGTH})")
    refuse_unaccepted_characters(text, "formula")  # look-alikes (Ｐ, ℌ) and invisible characters
    if "#" in text:  # Python would drop the rest of the line as a comment, hiding anything there
        raise ParseError(f"cannot read the formula {shorten(text)}: the character '#' at position "
                         f"{text.index('#')} is not accepted (a comment inside a formula); accepted: "
                         + FORMULA_LANGUAGE)
    max_digits, max_degree = DEFAULT_LIMITS.max_digits, DEFAULT_LIMITS.max_degree
    source = text.replace("^", "**")

    def shown(node) -> str:
        return shorten(ast.get_source_segment(source, node) or ast.unparse(node), 40)
    table = lc.formula_names()  # the one table of names the package prints (symattn.expand.FormulaNames)
    names = dict(table.reading())
    accepted = "accepted: " + FORMULA_LANGUAGE + "; names here: " + table.names_text()
    target_shape = tuple(table.shape)

    def fail(reason):
        raise ParseError(f"cannot read the formula {shorten(text)}: {reason}; {accepted}")

    degrees: dict = {}

    def degree_of(value) -> int:
        """Total degree in the names (matrices and scalars): exponents multiplied through nested powers."""
        if value in degrees:
            return degrees[value]
        if isinstance(value, (sp.MatrixSymbol, sp.Symbol)):
            out = 1
        elif not value.args or value.is_Number:
            out = 0
        elif isinstance(value, (sp.MatPow, sp.Pow, sp.HadamardPower)) and value.args[1].is_Integer:
            out = degree_of(value.args[0]) * abs(int(value.args[1]))
        elif isinstance(value, (sp.MatMul, sp.Mul)):
            out = sum(degree_of(a) for a in value.args)
        else:
            out = max(degree_of(a) for a in value.args)
        degrees[value] = out
        return out

    def bounded(value, node):
        """Refuse a number past the digits limit (``t**100`` multiplied out), before it is printed anywhere."""
        number = value.args[0] if isinstance(value, (sp.Mul, sp.MatMul)) and value.args else value
        if isinstance(number, sp.Rational) and max(abs(int(number.p)).bit_length(),
                                                   int(number.q).bit_length()) * 0.30103 > max_digits:
            fail(f"{shown(node)} has a number of more than {max_digits} digits (at most {max_digits})")
        return value

    def check_power(base, exponent: int, node):
        """Refuse ((t**100)**100)**100 and hadamard(hadamard(A, 100), 100) before computing them."""
        if isinstance(base, sp.Rational) and base != 0:
            size = max(abs(int(base.p)).bit_length(), int(base.q).bit_length()) * 0.30103
            if size * abs(exponent) > max_digits:
                fail(f"{shown(node)} has a number of more than {max_digits} digits (at most {max_digits})")
        degree = degree_of(base) * abs(exponent)
        if degree > max_degree:
            fail(f"the power {shown(node)} has total degree {degree} (exponents multiplied through nested "
                 f"powers); at most {max_degree} is accepted")

    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        if "integer string conversion" in str(err.msg):  # Python refuses int literals past 4300 digits
            fail("a number of more than 4300 digits (at most 50)")
        fail("invalid syntax")
    except (RecursionError, MemoryError):
        fail("nested too deeply")
    if sum(1 for _ in ast.walk(tree)) > 2000:
        fail("more than 2000 nodes")

    def is_matrix(value):
        return isinstance(value, sp.MatrixExpr)

    def read(node, depth=0):
        if depth > 100:
            fail("nested too deeply")
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            if abs(node.value) > 10**50:
                fail(f"the number {node.value} is too large")
            return sp.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id not in names:
                fail(table.unknown_message(node.id))
            return names[node.id]
        if isinstance(node, ast.Attribute):
            if node.attr != "T":
                fail(f"the attribute {node.attr!r} is not accepted (only A.T, the transpose)")
            value = read(node.value, depth + 1)
            if not is_matrix(value):
                fail("a transpose .T of a scalar")
            return value.T
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = read(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ones":
            sizes = [read(a, depth + 1) for a in node.args] if not node.keywords else []
            if len(sizes) != 2 or not all(isinstance(v, sp.Integer) and 1 <= int(v) <= 1000 for v in sizes):
                fail("ones(m, n) takes two integers 1 <= m, n <= 1000 (the m x n matrix of ones)")
            return sp.OneMatrix(int(sizes[0]), int(sizes[1]))
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "hadamard" and len(node.args) == 2
                    and not node.keywords):
                fail(f"the call {ast.unparse(node.func)!r} is not accepted (only hadamard(A, m) and ones(m, n))")
            base, exponent = read(node.args[0], depth + 1), read(node.args[1], depth + 1)
            if not is_matrix(base) or not (isinstance(exponent, sp.Integer) and 1 <= int(exponent) <= 100):
                fail("hadamard(A, m) takes a matrix and an integer 1 <= m <= 100")
            check_power(base, int(exponent), node)
            return entrywise_power(base, int(exponent))
        if isinstance(node, ast.BinOp):
            left, right = read(node.left, depth + 1), read(node.right, depth + 1)
            op = node.op
            try:
                if isinstance(op, (ast.Add, ast.Sub)):
                    if is_matrix(left) != is_matrix(right):
                        fail("a sum of a matrix and a scalar")
                    return bounded(left + right if isinstance(op, ast.Add) else left - right, node)
                if isinstance(op, (ast.Mult, ast.MatMult)):
                    return bounded(left * right, node)
                if isinstance(op, ast.Div):
                    if is_matrix(right):
                        fail("a division by a matrix")
                    if right == 0:
                        fail("a division by zero")
                    return left * (1 / right) if is_matrix(left) else bounded(left / right, node)
                if isinstance(op, ast.Pow):
                    if not (isinstance(right, sp.Integer) and abs(int(right)) <= 100):
                        fail("a power that is not an integer of at most 100")
                    if is_matrix(left) and int(right) < 1:
                        fail("a matrix to a power below 1")
                    check_power(left, int(right), node)
                    return left ** right
            except SymattnError:
                raise
            except (ValueError, TypeError) as err:  # sympy's ShapeError of a product of mismatched matrices
                if is_matrix(left) and is_matrix(right):
                    wanted = target_shape
                    raise ShapeError(
                        f"the formula {text!r}: {ast.unparse(node)!r} combines matrices of shapes "
                        f"{left.shape[0]} x {left.shape[1]} and {right.shape[0]} x {right.shape[1]}, which do not "
                        f"fit; the formula must be {wanted[0]} x {wanted[1]}") from None
                raise ShapeError(f"the formula {text!r}: {err}") from None
            fail(f"the operator {type(op).__name__} is not accepted")
        fail(f"{type(node).__name__} {ast.unparse(node)!r} is not accepted")

    value = read(tree.body)
    if not is_matrix(value):
        fail("it is a scalar, not a matrix formula")
    if tuple(value.shape) != target_shape:
        target = target or f"the leading coefficient of layer {lc.layer}"
        raise ShapeError(f"the formula {text!r} is {value.shape[0]} x {value.shape[1]}; {target} is "
                         f"{target_shape[0]} x {target_shape[1]}")
    return value


def suggest_name(name: str, known) -> str | None:
    """The known name a mistyped ``name`` most likely means (``x11`` -> ``x_11``, ``Vt11`` -> ``Vt1_1``), or None.

    The package's names put an underscore before the entry's row and column
    (``x_11``, ``Qt1_12``, ``c_2``); a name without it is matched first, then
    the closest known name (:func:`difflib.get_close_matches`).

    Examples
    --------
    >>> suggest_name("x11", ["x_11", "x_12"]), suggest_name("c1", ["c_1"]), suggest_name("Whta_1", ["What_1"])
    ('x_11', 'c_1', 'What_1')
    >>> suggest_name("zebra", ["x_11"]) is None, suggest_name("c_9", ["c_1", "c_2"]) is None
    (True, True)
    """
    import difflib
    import re

    if not isinstance(name, str):
        return None
    known = sorted(str(k) for k in known)
    candidates = []
    plain = re.fullmatch(r"([A-Za-z]+?t?(?:\d+(?:h\d+)?)?)_?(\d+)", name)
    if plain is not None:  # x11 -> x_11, Qt112 -> Qt1_12, c1 -> c_1
        head, digits = plain.groups()
        candidates = [f"{head}_{digits}"] + [f"{head + digits[:k]}_{digits[k:]}" for k in range(1, len(digits))]
    for candidate in candidates:
        if candidate in known:
            return candidate
    indexed = re.fullmatch(r"(.+_)\d+", name)
    if indexed is not None and any(k.startswith(indexed.group(1)) for k in known):
        return None  # a well-formed name out of range (c_9 of c_1..c_3): no other index is meant
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None
