"""Names and expressions bound to the numbers used: a normalizer's Taylor coefficients recomputed by the checker.

A certificate names each normalizer (``softmax``, ``cosh``, ``2 + sin(x)``)
and carries the Taylor coefficients of ``s(x)/s(0)`` that the checker
computes with.  A name is only a word: this module recomputes the
coefficients **mod p** from the name of a preset (the checker's own table,
:data:`PRESETS`) or from an expression written in the small language below,
with its own series arithmetic, so that a verdict about "softmax" is about
``exp`` and nothing else.  Working mod ``p`` is enough: the checker computes
with the residues of the coefficients, and equal residues give the same
computation mod ``p`` as the true coefficients (the constant terms are
tracked exactly, so an ``exp`` of a nonzero rational is never mistaken for a
rational).

The language: integers, ``x``, ``+ - * /``, ``**`` with an integer or
rational exponent, parentheses and the functions ``exp log sqrt sin cos tan
sinh cosh tanh atan``.  An expression outside it, or one whose coefficients
are not rational (``exp(1 + x)``, ``log(2 + x)``), is *not recomputable*:
the checker then says the name and the expression are taken as given, and
never weaves them into its verdict.

This module imports nothing but the standard library: it is part of the
independent checker.

Examples
--------
>>> p = 101
>>> taylor_residues("cosh(x)", 5, p) == [1, 0, pow(2, p - 2, p), 0, pow(24, p - 2, p)]
True
>>> taylor_residues(PRESETS["sigmoid"], 4, p) == [1, pow(2, p - 2, p), 0, (-pow(24, p - 2, p)) % p]
True
>>> taylor_residues("exp(1 + x)", 3, p)
Traceback (most recent call last):
...
symattn.verifier.taylor.NotRecomputable: exp of a series whose constant term is 1, not 0: its coefficients are not rational
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["PRESETS", "NotRecomputable", "taylor_residues", "preset_expression", "is_exponential",
           "MAX_EXPRESSION_LENGTH", "MAX_RECOMPUTE_WORK"]

#: The checker's own table of preset names (the name as written, lower case) and their expressions.
PRESETS = {
    "softmax": "exp(x)",
    "exp": "exp(x)",
    "cosh": "cosh(x)",
    "quadratic": "1 + x**2",
    "gauss": "exp(x**2)",
    "softplus": "log(1 + exp(x))",
    "sigmoid": "1/(1 + exp(-x))",
}

#: Longest expression read (characters).
MAX_EXPRESSION_LENGTH = 2000

#: Most multiply-adds spent recomputing one expression's coefficients (beyond: not recomputable here).
MAX_RECOMPUTE_WORK = 20_000_000

_MAX_DEPTH = 100
_MAX_EXPONENT = 1000
_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+[eE][-+]?\d+|\d+)|([A-Za-z_][A-Za-z_0-9]*)|(\*\*|[-+*/(),^]))")
_FUNCTIONS = ("exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "atan")


class NotRecomputable(ValueError):
    """The checker cannot recompute this expression's coefficients exactly (the reason is the message).

    Examples
    --------
    >>> str(NotRecomputable("pi is not rational"))
    'pi is not rational'
    """


def preset_expression(name) -> str | None:
    """The checker's expression of a preset name (any case, surrounding blanks ignored), else None.

    Examples
    --------
    >>> preset_expression(" Softmax "), preset_expression("my normalizer")
    ('exp(x)', None)
    """
    if not isinstance(name, str):
        return None
    return PRESETS.get(name.strip().lower())


def is_exponential(expression) -> bool:
    """True when ``expression`` is ``exp(x)`` itself (blanks ignored): softmax, whose weights ignore a shift of the scores.

    Examples
    --------
    >>> is_exponential("exp( x )"), is_exponential("exp(2*x)")
    (True, False)
    """
    return isinstance(expression, str) and "".join(expression.split()) == "exp(x)"


@dataclass
class _Series:
    """A truncated series: its constant term exactly, every coefficient mod ``p``; ``degree`` when a polynomial."""

    constant: Fraction
    residues: list
    degree: int | None


def _past_sum(terms: list, f: list, n: int) -> int:
    """``sum_k u_k f_(n-k)`` over the sparse ``terms`` ``(k, u_k)``, ``k <= n`` (sorted by ``k``): the recurrences' step."""
    total = 0
    for k, u in terms:
        if k > n:
            break
        total += u * f[n - k]
    return total


class _Calculator:
    """Series arithmetic mod ``p`` to ``count`` coefficients, with a budget of multiply-adds."""

    def __init__(self, count: int, p: int):
        self.count, self.p, self.work = count, p, 0

    def _spend(self, amount: int) -> None:
        self.work += amount
        if self.work > MAX_RECOMPUTE_WORK:
            raise NotRecomputable(f"recomputing {self.count} coefficients of this expression takes more than "
                                  f"{MAX_RECOMPUTE_WORK} operations")

    def _residue(self, value: Fraction) -> int:
        if value.denominator % self.p == 0:
            raise NotRecomputable(f"the number {value} has a denominator divisible by the prime {self.p}")
        return value.numerator * pow(value.denominator, -1, self.p) % self.p

    def _inverse_of(self, n: int) -> int:
        if n % self.p == 0:
            raise NotRecomputable(f"the recurrence divides by {n}, which is 0 mod {self.p}")
        return pow(n, -1, self.p)

    def number(self, value: Fraction) -> _Series:
        residues = [0] * self.count
        residues[0] = self._residue(value)
        return _Series(value, residues, 0)

    def variable(self) -> _Series:
        residues = [0] * self.count
        if self.count > 1:
            residues[1] = 1
        return _Series(Fraction(0), residues, 1)

    def add(self, a: _Series, b: _Series, sign: int = 1) -> _Series:
        p = self.p
        degree = None if a.degree is None or b.degree is None else max(a.degree, b.degree)
        return _Series(a.constant + sign * b.constant, [(u + sign * v) % p for u, v in zip(a.residues, b.residues)],
                       degree)

    def negate(self, a: _Series) -> _Series:
        return _Series(-a.constant, [(-u) % self.p for u in a.residues], a.degree)

    def multiply(self, a: _Series, b: _Series) -> _Series:
        p, count = self.p, self.count
        sparse_a = [(n, u) for n, u in enumerate(a.residues) if u]
        sparse_b = [(n, v) for n, v in enumerate(b.residues) if v]
        if len(sparse_a) > len(sparse_b):
            sparse_a, sparse_b = sparse_b, sparse_a
        self._spend(len(sparse_a) * len(sparse_b))
        out = [0] * count
        for n, u in sparse_a:
            for m, v in sparse_b:
                if n + m >= count:
                    break
                out[n + m] = (out[n + m] + u * v) % p
        degree = None if a.degree is None or b.degree is None else a.degree + b.degree
        return _Series(a.constant * b.constant, out, degree)

    def power(self, base: _Series, exponent: Fraction) -> _Series:
        if exponent.denominator == 1 and exponent >= 0:
            result, square, n = self.number(Fraction(1)), base, int(exponent)
            while n:
                if n & 1:
                    result = self.multiply(result, square)
                n >>= 1
                if n:
                    square = self.multiply(square, square)
            return result
        # base^q = c^q (base / c)^q with c the exact constant term: c^q must be rational
        c = base.constant
        if c == 0:
            raise NotRecomputable(f"a power {exponent} of a series whose constant term is 0: not analytic at 0 "
                                  "or not defined there")
        root = _rational_power(c, exponent)
        f = self._power_recurrence(base, exponent)
        f.constant, f.degree = root, 0 if base.degree == 0 else None
        scale = self._residue(root)
        f.residues = [u * scale % self.p for u in f.residues]
        return f

    def _power_recurrence(self, g: _Series, q: Fraction) -> _Series:
        """``(g / g_0)^q`` by ``f' g = q g' f``: ``f_n = (1 / (n g_0)) sum_k ((q + 1) k - n) g_k f_(n-k)``."""
        p, count = self.p, self.count
        g0 = g.residues[0]
        if g0 == 0:
            raise NotRecomputable(f"a power of a series whose constant term is 0 mod {p}")
        scale = pow(g0, -1, p)
        normalized = [u * scale % p for u in g.residues]
        nonzero = [(k, u) for k, u in enumerate(normalized) if u and k]
        qp = self._residue(q)
        f = [0] * count
        f[0] = 1
        self._spend(count * max(1, len(nonzero)))
        for n in range(1, count):
            total = 0
            for k, u in nonzero:
                if k > n:
                    break
                total += ((qp + 1) * k - n) * u * f[n - k]
            f[n] = total % p * self._inverse_of(n) % p
        return _Series(Fraction(1), f, None)

    def inverse(self, a: _Series) -> _Series:
        if a.constant == 0:
            raise NotRecomputable("a division by a series whose constant term is 0: not analytic at 0")
        return self._invert(a)

    def _invert(self, a: _Series) -> _Series:
        p, count = self.p, self.count
        a0 = a.residues[0]
        if a0 == 0:
            raise NotRecomputable(f"a division by a series whose constant term {a.constant} is 0 mod {p}")
        inverse0 = pow(a0, -1, p)
        nonzero = [(k, u) for k, u in enumerate(a.residues) if u and k]
        self._spend(count * max(1, len(nonzero)))
        out = [0] * count
        out[0] = inverse0
        for n in range(1, count):
            out[n] = -_past_sum(nonzero, out, n) * inverse0 % p
        return _Series(1 / a.constant, out, 0 if a.degree == 0 else None)

    def _derivative_terms(self, g: _Series) -> list:
        """``(k, k g_k)`` for the nonzero ``g_k``, ``k >= 1``: the terms of ``x g'``."""
        return [(k, k * u % self.p) for k, u in enumerate(g.residues) if u and k]

    def exp(self, g: _Series) -> _Series:
        if g.constant != 0:
            raise NotRecomputable(f"exp of a series whose constant term is {g.constant}, not 0: its coefficients "
                                  "are not rational")
        p, count = self.p, self.count
        terms = self._derivative_terms(g)
        self._spend(count * max(1, len(terms)))
        f = [0] * count
        f[0] = 1
        for n in range(1, count):
            f[n] = _past_sum(terms, f, n) % p * self._inverse_of(n) % p
        return _Series(Fraction(1), f, None)

    def log(self, g: _Series) -> _Series:
        if g.constant != 1:
            raise NotRecomputable(f"log of a series whose constant term is {g.constant}, not 1: its coefficients "
                                  "are not rational")
        # f' = g' / g: integrate the series of g' / g
        quotient = self.multiply(_Series(Fraction(0), self._shifted_derivative(g), None), self._invert(g))
        return self._integrate(quotient)

    def _shifted_derivative(self, g: _Series) -> list:
        """The coefficients of ``g'``."""
        p = self.p
        return [(k + 1) * g.residues[k + 1] % p for k in range(self.count - 1)] + [0]

    def _integrate(self, derivative: _Series) -> _Series:
        """The series with constant term 0 whose derivative is ``derivative`` (to ``count`` coefficients)."""
        out = [0] * self.count
        for n in range(1, self.count):
            out[n] = derivative.residues[n - 1] * self._inverse_of(n) % self.p
        return _Series(Fraction(0), out, None)

    def trigonometric(self, g: _Series, hyperbolic: bool) -> tuple:
        """``(sin g, cos g)``, or ``(sinh g, cosh g)``: ``s' = g' c``, ``c' = -+ g' s``."""
        if g.constant != 0:
            name = "sinh/cosh" if hyperbolic else "sin/cos"
            raise NotRecomputable(f"{name} of a series whose constant term is {g.constant}, not 0: its "
                                  "coefficients are not rational")
        p, count = self.p, self.count
        terms = self._derivative_terms(g)
        self._spend(2 * count * max(1, len(terms)))
        s, c = [0] * count, [0] * count
        c[0] = 1
        sign = 1 if hyperbolic else -1
        for n in range(1, count):
            inverse = self._inverse_of(n)
            s[n] = _past_sum(terms, c, n) % p * inverse % p
            c[n] = sign * _past_sum(terms, s, n) % p * inverse % p
        return _Series(Fraction(0), s, None), _Series(Fraction(1), c, None)

    def atan(self, g: _Series) -> _Series:
        if g.constant != 0:
            raise NotRecomputable(f"atan of a series whose constant term is {g.constant}, not 0: its coefficients "
                                  "are not rational")
        denominator = self.add(self.number(Fraction(1)), self.multiply(g, g))
        quotient = self.multiply(_Series(Fraction(0), self._shifted_derivative(g), None), self._invert(denominator))
        return self._integrate(quotient)


def _integer_root(n: int, k: int) -> int | None:
    """The exact ``k``-th root of ``n >= 0``, or None."""
    if n < 2:
        return n
    root = int(round(n ** (1.0 / k))) if n.bit_length() < 1000 else _bisect_root(n, k)
    for candidate in (root - 1, root, root + 1):
        if candidate >= 0 and candidate ** k == n:
            return candidate
    return None


def _bisect_root(n: int, k: int) -> int:
    low, high = 0, 1 << (n.bit_length() // k + 1)
    while low < high:
        middle = (low + high + 1) // 2
        if middle ** k <= n:
            low = middle
        else:
            high = middle - 1
    return low


def _rational_power(c: Fraction, q: Fraction) -> Fraction:
    """``c ** q`` when it is rational (``c > 0``, or an odd root of ``c < 0``), else :class:`NotRecomputable`."""
    if abs(q.numerator) > _MAX_EXPONENT or q.denominator > _MAX_EXPONENT:
        raise NotRecomputable(f"the exponent {q} is larger than this checker recomputes ({_MAX_EXPONENT})")
    k = q.denominator
    if c < 0 and k % 2 == 0:
        raise NotRecomputable(f"{c} to the power {q} is not real")
    sign = -1 if c < 0 else 1
    top, bottom = _integer_root(abs(c.numerator), k), _integer_root(c.denominator, k)
    if top is None or bottom is None:
        raise NotRecomputable(f"{c} to the power {q} is not rational")
    return (Fraction(sign * top, bottom)) ** q.numerator


class _Reader:
    """A recursive-descent reader of the expression language; it evaluates as it reads (nothing is ``eval``-ed)."""

    def __init__(self, text: str, calculator: _Calculator):
        self.tokens, self.position, self.calc, self.depth = self._tokenize(text), 0, calculator, 0

    @staticmethod
    def _tokenize(text: str) -> list:
        tokens, position = [], 0
        text = text.rstrip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if not match:
                raise NotRecomputable(f"the character {text[position:position + 1]!r} at position {position} is not "
                                      "part of the expressions the checker reads")
            number, name, symbol = match.groups()
            if number is not None:
                if not number.isdigit():
                    raise NotRecomputable(f"the decimal number {number} is not exact")
                tokens.append(("number", number))
            elif name is not None:
                tokens.append(("name", name))
            else:
                tokens.append(("symbol", "**" if symbol == "^" else symbol))
            position = match.end()
        return tokens

    def _peek(self):
        return self.tokens[self.position] if self.position < len(self.tokens) else ("end", "")

    def _take(self, symbol: str | None = None):
        token = self._peek()
        if symbol is not None and token != ("symbol", symbol):
            raise NotRecomputable(f"expected {symbol!r} at token {self.position + 1}, found {token[1]!r}")
        self.position += 1
        return token

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise NotRecomputable(f"the expression is nested deeper than {_MAX_DEPTH}")

    def read(self) -> _Series:
        value = self._sum()
        if self._peek()[0] != "end":
            raise NotRecomputable(f"unexpected {self._peek()[1]!r} at token {self.position + 1}")
        return value

    def _sum(self) -> _Series:
        self._enter()
        value = self._product()
        while self._peek() in (("symbol", "+"), ("symbol", "-")):
            sign = 1 if self._take()[1] == "+" else -1
            value = self.calc.add(value, self._product(), sign)
        self.depth -= 1
        return value

    def _product(self) -> _Series:
        value = self._unary()
        while self._peek() in (("symbol", "*"), ("symbol", "/")):
            operator = self._take()[1]
            other = self._unary()
            value = self.calc.multiply(value, other if operator == "*" else self.calc.inverse(other))
        return value

    def _unary(self) -> _Series:
        if self._peek() in (("symbol", "-"), ("symbol", "+")):
            self._enter()
            sign = self._take()[1]
            value = self._unary()
            self.depth -= 1
            return self.calc.negate(value) if sign == "-" else value
        return self._power()

    def _power(self) -> _Series:
        base = self._atom()
        if self._peek() == ("symbol", "**"):
            self._take()
            self._enter()
            exponent = self._unary()
            self.depth -= 1
            if any(exponent.residues[1:]) or exponent.degree != 0:
                raise NotRecomputable("an exponent that is not a rational number")
            return self.calc.power(base, exponent.constant)
        return base

    def _atom(self) -> _Series:
        kind, text = self._take()
        if kind == "number":
            if len(text) > 100:
                raise NotRecomputable(f"the integer {text[:20]}... has more than 100 digits")
            return self.calc.number(Fraction(int(text)))
        if kind == "symbol" and text == "(":
            value = self._sum()
            self._take(")")
            return value
        if kind == "name":
            if text == "x":
                return self.calc.variable()
            if text in _FUNCTIONS and self._peek() == ("symbol", "("):
                self._take("(")
                argument = self._sum()
                self._take(")")
                return self._apply(text, argument)
            raise NotRecomputable(f"{text[:40]!r} is not x or one of the functions {', '.join(_FUNCTIONS)} "
                                  "followed by '('")
        raise NotRecomputable(f"unexpected {text!r} at token {self.position}")

    def _apply(self, function: str, g: _Series) -> _Series:
        calc = self.calc
        if function == "exp":
            return calc.exp(g)
        if function == "log":
            return calc.log(g)
        if function == "sqrt":
            return calc.power(g, Fraction(1, 2))
        if function == "atan":
            return calc.atan(g)
        sine, cosine = calc.trigonometric(g, hyperbolic=function in ("sinh", "cosh", "tanh"))
        if function in ("sin", "sinh"):
            return sine
        if function in ("cos", "cosh"):
            return cosine
        return calc.multiply(sine, calc.inverse(cosine))          # tan, tanh


def taylor_residues(expression: str, count: int, p: int, *, normalized: bool = True,
                    polynomial: bool = False) -> list:
    """The first ``count`` Taylor coefficients at 0 of ``s`` (``s/s(0)`` when ``normalized``), mod ``p``.

    With ``polynomial`` the expression must be a polynomial in ``x`` (sums,
    products, nonnegative integer powers of numbers and ``x``) and all its
    coefficients are returned, ``count`` or more.

    Raises
    ------
    NotRecomputable
        When the expression is outside the language, its coefficients are not
        rational or not defined mod ``p``, or recomputing them would cost more
        than :data:`MAX_RECOMPUTE_WORK` operations.

    Examples
    --------
    >>> taylor_residues("exp(x)", 4, 7)                  # 1, 1, 1/2, 1/6 mod 7
    [1, 1, 4, 6]
    >>> taylor_residues("2 + sin(x)", 4, 101) == [1, 51, 0, (-pow(12, -1, 101)) % 101]
    True
    >>> taylor_residues("x**2 + 1", 2, 101, polynomial=True)
    [1, 0, 1]
    >>> taylor_residues("x**(1/3)", 3, 101)
    Traceback (most recent call last):
    ...
    symattn.verifier.taylor.NotRecomputable: a power 1/3 of a series whose constant term is 0: not analytic at 0 or not defined there
    """
    if not isinstance(expression, str):
        raise NotRecomputable(f"the expression is a {type(expression).__name__}, not text")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise NotRecomputable(f"the expression is longer than {MAX_EXPRESSION_LENGTH} characters")
    if not isinstance(count, int) or count < 1:
        raise NotRecomputable(f"count must be a positive integer, got {count!r}")
    tokens = _Reader._tokenize(expression)
    if polynomial:
        # the degree is at most (number of tokens) * (largest exponent): computed first, then every coefficient
        probe = _Reader(expression, _Calculator(1, p)).read()
        if probe.degree is None:
            raise NotRecomputable("the expression is not a polynomial in x")
        count = max(count, probe.degree + 1)
    if count * max(1, len(tokens)) > MAX_RECOMPUTE_WORK:
        raise NotRecomputable(f"recomputing {count} coefficients of this expression takes more than "
                              f"{MAX_RECOMPUTE_WORK} operations")
    value = _Reader(expression, _Calculator(count, p)).read()
    if polynomial and value.degree is None:
        raise NotRecomputable("the expression is not a polynomial in x")
    if not normalized:
        return value.residues
    if value.constant == 0:
        raise NotRecomputable("s(0) = 0: s/s(0) is not defined")
    if value.residues[0] == 0:
        raise NotRecomputable(f"s(0) = {value.constant} is 0 mod {p}")
    inverse = pow(value.residues[0], -1, p)
    return [u * inverse % p for u in value.residues]
