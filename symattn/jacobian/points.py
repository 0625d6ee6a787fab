"""Random points and banks, user banks, and the exact field of the Taylor coefficients.

One :func:`generator`, one named stream per purpose, so that every analysis
draws exactly what it drew before; banks a user gives are checked entry by
entry; the field ``Q(theta)(g)`` of the normalizers' and activations'
Taylor coefficients and the primes where it maps to GF(p).
"""

from __future__ import annotations

import functools
import math
import numbers
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from ..algebra.domains import ConstantField, PrimeFieldDomain, is_prime
from ..algebra.modseries import MAX_PRIME
from ..errors import BankError, DomainError, SymattnError
from ..model import Architecture, require_seed

__all__ = ["DEFAULT_PRIMES", "check_prime", "STREAMS", "generator", "random_point", "random_bank", "small_integer_point", "random_real_point", "BANK_ENTRIES", "validate_bank", "bank_residues", "constant_field", "transcendental_constants", "field_primes", "field_note"]


#: Primes below 2**28 used by default (the first computes, the second confirms).
DEFAULT_PRIMES = (268435399, 268435367)


def check_prime(p) -> int:
    """``p`` as an int when it is a prime with ``1000 < p < 2**28``; a DomainError otherwise.

    Examples
    --------
    >>> check_prime(268435399)
    268435399
    >>> check_prime(91)
    Traceback (most recent call last):
    ...
    symattn.errors.DomainError: 91 is not a prime; give a prime below 2**28, e.g. 268435399
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not is_prime(int(p)):
        raise DomainError(f"{p!r} is not a prime; give a prime below 2**28, e.g. {DEFAULT_PRIMES[0]}")
    if p >= MAX_PRIME or p < 1000:
        raise DomainError(f"prime {p} is outside 1000 < p < 2**28 = {MAX_PRIME}")
    return int(p)


# -- random numbers: one generator, one stream per purpose -------------------------------------
#: The salt of each stream of :func:`generator`.  The numbers are those every analysis has
#: always used, so that a seed gives the same point, bank and compression as before.
STREAMS = {
    "point": 104729,           # random_point: parameters and generic coefficients mod p
    "bank": 7919,              # random_bank: inputs mod p
    "rows": 3571,              # compress_rows of the decay spectrum
    "dimension rows": 31337,   # compress_rows of the dimension and fiber ranks (salted by the row count)
    "input rows": 8191,        # the dimension's row compression, one block per bank input (salted by its index)
    "small point": 6007,       # small_integer_point: sign-flip checks
    "integer point": 1729,     # the dimension's integer-score route: layer 1 and the bank as small integers
    "real point": 271828,      # random_real_point of the numerical sensitivity
    "estimate point": 2718,    # random_real_point of the numerical dimension estimate
    "value rank": 27182,       # observe: value maps of lower rank on the collapsed set
    "near set": 16180,         # observe: the direction leaving the collapsed set
}


def generator(seed: int, stream: str, *salt: int) -> np.random.Generator:
    """The numpy generator of ``stream`` (a key of :data:`STREAMS`) for ``seed``.

    Each purpose has its own stream, so drawing more of one (a larger bank)
    never moves another (the point); ``salt`` adds integers to the seed
    sequence for draws that depend on a size.

    Examples
    --------
    >>> int(generator(0, "bank").integers(1, 101))
    53
    >>> generator(0, "dice")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: unknown random stream 'dice'; streams are point, bank, rows, dimension rows, input rows, small point, integer point, real point, estimate point, value rank, near set
    """
    if stream not in STREAMS:
        raise SymattnError(f"unknown random stream {stream!r}; streams are {', '.join(STREAMS)}")
    return np.random.default_rng([require_seed(seed), STREAMS[stream], *salt])


def random_point(arch: Architecture, p: int, seed: int):
    """A random point of parameter space mod ``p``: ``({(name, layer): residues}, coefficient values)``.

    The coefficient values are random residues for the transcendental
    constant of the normalizers (:func:`transcendental_constants`) and for
    the Taylor coefficients ``c_m`` of generic normalizers, and, for
    algebraic Taylor coefficients, the root mod ``p`` of the minimal
    polynomial of their primitive element (:func:`constant_field`; a
    DomainError when ``p`` has none: :func:`field_primes` chooses primes),
    so that series over GF(p) can evaluate them.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> point, _ = random_point(Architecture.uniform(layers=1), 101, seed=0)
    >>> sorted(point)
    [('K', 1), ('Q', 1), ('V', 1)]
    >>> point[("Q", 1)].shape
    (1, 2)
    """
    rng = generator(seed, "point")
    blocks = {}
    for key, shape in arch.blocks():  # per layer, per head, Q, K, V: the draws of one head are as before
        blocks[key] = rng.integers(1, p, size=shape, dtype=np.int64)
    coefficient_values = {}
    for constant in transcendental_constants(arch):
        coefficient_values[constant] = int(rng.integers(1, p))
    # an algebraic primitive element: a root of its minimal polynomial mod p (no draw, the streams stay)
    coefficient_values.update(constant_field(arch).residues(p))
    for n in arch.normalizers:
        if n.is_generic:
            # generic Taylor coefficients are specialized at random residues
            for m in range(1, 1024):
                coefficient_values[n.coefficient_symbol(m)] = int(rng.integers(1, p))
    return blocks, coefficient_values


def random_bank(arch: Architecture, size: int, p: int, seed: int) -> np.ndarray:
    """``size`` random inputs as nonzero residues mod ``p``: shape ``(size, d_0, t)``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> bank = random_bank(Architecture.uniform(layers=1, width=2, tokens=3), 4, 101, seed=0)
    >>> bank.shape, bool((bank >= 1).all() and (bank < 101).all())
    ((4, 2, 3), True)
    """
    rng = generator(seed, "bank")
    d0, t = arch.input_shape
    return rng.integers(1, p, size=(size, d0, t), dtype=np.int64)


def small_integer_point(arch: Architecture, seed: int, bound: int = 3, bank_size: int = 3):
    """A point and a bank of small nonzero integers in ``[-bound, bound]``: ``(point, bank)``.

    Small entries keep exact rational outputs short (the sign-flip checks
    compare them over Q); the signs make a flip ``Q_i -> -Q_i`` visible.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> point, bank = small_integer_point(Architecture.uniform(layers=1, width=2, tokens=2), seed=0)
    >>> bank.shape, int(abs(bank).max()) <= 3, bool((point[("V", 1)] != 0).all())
    ((3, 2, 2), True, True)
    """
    rng = generator(seed, "small point")

    def draw(shape):
        values = rng.integers(1, bound + 1, size=shape) * rng.choice([-1, 1], size=shape)
        return values.astype(np.int64)

    point = {key: draw(shape) for key, shape in arch.blocks()}
    bank = np.stack([draw(arch.input_shape) for _ in range(bank_size)])
    return point, bank


def random_real_point(arch: Architecture, seed: int, bank_size: int, stream: str = "real point",
                      width_scaled: bool = False, decimals: int | None = None):
    """Standard normal parameters (flat, ``parameter_index()`` order) and bank: ``(params, bank)``.

    Parameters
    ----------
    arch : Architecture
    seed : int
    bank_size : int
        Number of ``d_0 x t`` inputs.
    stream : str
        The :data:`STREAMS` key (each analysis keeps its own draws).
    width_scaled : bool
        Divide layer ``i``'s parameters by ``sqrt(d_{i-1})`` (outputs of order
        one at every depth, so that numerical ranks are well conditioned).
    decimals : int, optional
        Round every value to this many decimals and give it as a decimal
        string (read exactly downstream); default: floats.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> params, bank = random_real_point(Architecture.uniform(layers=1, width=1, tokens=2), 0, 1, decimals=3)
    >>> len(params), len(bank), len(bank[0][0])
    (3, 1, 2)
    >>> all(isinstance(v, str) and len(v.split(".")[1]) == 3 for v in params)
    True
    """
    rng = generator(seed, stream)
    params = []
    for key, (rows, cols) in arch.blocks():
        scale = 1 / math.sqrt(arch.widths[key[1] - 1]) if width_scaled else None
        values = rng.standard_normal(rows * cols)
        params += list(values if scale is None else values * scale)
    bank = [rng.standard_normal(arch.input_shape) for _ in range(bank_size)]
    if decimals is None:
        return [float(v) for v in params], [X.tolist() for X in bank]
    text = f"{{:.{int(decimals)}f}}".format
    return [text(v) for v in params], [[[text(v) for v in row] for row in X] for X in bank]


# -- banks given by a user -----------------------------------------------------------------------
#: What a bank entry may be, for the messages of :func:`validate_bank`.
BANK_ENTRIES = ("finite real numbers: ints, Fractions, finite floats, decimal or fraction strings such as "
                "'0.25' or '1/3', or real sympy/mpmath numbers")


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bank_entry_problem(value) -> str | None:
    """Why ``value`` cannot be a bank entry, or None when it is a finite real number."""
    if isinstance(value, (bool, np.bool_)):
        return "a boolean, not a number"
    if isinstance(value, numbers.Rational):  # int, Fraction, numpy integers
        return None
    if isinstance(value, numbers.Real):  # float, numpy floats
        return None if math.isfinite(value) else "not finite"
    if isinstance(value, str):
        try:
            Fraction(value.strip())  # a parser of numbers only: nothing is evaluated
        except ValueError:
            return "a string that is not a decimal or fraction"
        return None
    if isinstance(value, mpmath.mpf):
        return None if mpmath.isfinite(value) else "not finite"
    if isinstance(value, sp.Basic):
        if value.is_number and value.is_real and value.is_finite:
            return None
        return "not finite" if value is sp.nan or value.is_finite is False else "not a real number"
    return f"of type {type(value).__name__}, not a number"


def validate_bank(arch: Architecture, bank) -> list:
    """The inputs of a user's bank, checked: each ``d_0 x t``, every entry a finite real number.

    The one check of every bank given by a user (the decay spectrum, the
    numerical sensitivity and :func:`real_jacobian`); random banks
    (:func:`random_bank`) need none.

    Parameters
    ----------
    arch : Architecture
    bank : sequence of matrices
        Nested lists, numpy arrays or sympy matrices, one ``d_0 x t`` input
        each (one token per column); entries as in :data:`BANK_ENTRIES`.

    Returns
    -------
    list of numpy object arrays
        The inputs, entries unchanged.

    Raises
    ------
    BankError
        Naming the input and entry, or the shape, that is not accepted.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
    >>> validate_bank(arch, [[[1, "1/3"]]])[0].shape
    (1, 2)
    >>> validate_bank(arch, [[[float("nan"), 1]]])
    Traceback (most recent call last):
    ...
    symattn.errors.BankError: bank input 0 has entry nan at (0, 0), which is not finite; entries must be finite real numbers: ints, Fractions, finite floats, decimal or fraction strings such as '0.25' or '1/3', or real sympy/mpmath numbers
    """
    d0, t = arch.input_shape
    shape_text = f"a bank is a list of d_0 x t = {d0} x {t} matrices (one token per column)"
    if isinstance(bank, (str, bytes, dict)) or not hasattr(bank, "__iter__"):
        raise BankError(f"{shape_text}; got {type(bank).__name__} {_short(bank)}")
    inputs = []
    for b, x in enumerate(bank):
        try:
            x = np.array(x.tolist() if hasattr(x, "tolist") and not isinstance(x, np.ndarray) else x, dtype=object)
        except (TypeError, ValueError):  # ragged rows
            raise BankError(f"bank input {b} has rows of different lengths; {shape_text}") from None
        if x.shape != (d0, t):
            raise BankError(f"bank input {b} has shape {x.shape}; {shape_text}")
        for index, value in np.ndenumerate(x):
            problem = _bank_entry_problem(value)
            if problem is not None:
                raise BankError(f"bank input {b} has entry {_short(value)} at {index}, which is {problem}; "
                                f"entries must be {BANK_ENTRIES}")
        inputs.append(x)
    if not inputs:
        raise BankError(f"a bank needs at least one input; {shape_text}")
    return inputs


def bank_residues(arch: Architecture, bank, p: int) -> np.ndarray:
    """A user's bank (checked by :func:`validate_bank`) as residues mod ``p``: shape ``(size, d_0, t)``.

    Raises
    ------
    BankError
        For a malformed bank, or an entry with no residue (irrational, or a
        denominator divisible by ``p``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> bank_residues(Architecture.uniform(layers=1, width=1, tokens=2), [[["1/2", -1]]], 101).tolist()
    [[[51, 100]]]
    """
    d0, t = arch.input_shape
    inputs = validate_bank(arch, bank)
    field = PrimeFieldDomain(p)
    out = np.zeros((len(inputs), d0, t), dtype=np.int64)
    for b, x in enumerate(inputs):
        for index, value in np.ndenumerate(x):
            try:
                out[(b, *index)] = int(field.convert(value))
            except (TypeError, ValueError, sp.SympifyError) as err:
                raise BankError(f"bank input {b} has entry {_short(value)} at {index}; the exact spectrum needs "
                                "rational entries (ints, Fractions, floats read exactly, strings such as '1/3') "
                                f"with denominators prime to {p}") from err
    return out


def constant_field(arch: Architecture) -> ConstantField:
    """The field ``Q(theta)(g)`` of the normalizers' Taylor coefficients (:class:`~symattn.algebra.domains.ConstantField`).

    From the coefficients of degree up to 8 of every normalizer (and the
    coefficients of a polynomial one); a coefficient of higher degree
    outside this field is refused when it is met.

    Raises
    ------
    DomainError
        For constants the exact engine cannot map to GF(p) (two
        transcendental constants such as pi and e, ``sin(1)``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> field = constant_field(Architecture.uniform(layers=1, normalizer="exp(x/sqrt(2))"))
    >>> field.theta, field.minimal_polynomial, field.transcendental
    (sqrt(2), y**2 - 2, None)
    """
    normalizers = arch.analytic_functions  # normalizers and activations, without lightning or generic data
    try:
        return _constant_field(normalizers)
    except DomainError as err:
        names = ", ".join(dict.fromkeys(n.name for n in normalizers))
        raise DomainError(
            f"normalizer {names} has Taylor coefficients the exact engine cannot map to GF(p): {err}; use "
            "`symattn sensitivity` for numerics (the docs page 'Accepted input and limits' says what is exact)") \
            from None


@functools.lru_cache(maxsize=32)
def _constant_field(normalizers: tuple) -> ConstantField:
    values = []
    for n in normalizers:
        values += n.taylor(8)
        if n.is_polynomial:
            values += n.polynomial_coefficients
    return ConstantField(values)


def transcendental_constants(arch: Architecture) -> list:
    """The transcendental constant of the normalizers' Taylor coefficients (``log(2)`` for softplus), if any.

    Taylor coefficients in ``Q(theta)(g)``, ``g`` this constant, are handled
    exactly over GF(p) by giving ``g`` a random residue; ``exp(q)`` for
    rational ``q`` are powers of one constant ``exp(1/L)``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> transcendental_constants(Architecture.uniform(layers=1, normalizer="softplus"))
    [log(2)]
    >>> transcendental_constants(Architecture.uniform(layers=1, normalizer="exp(E*x)"))   # E, exp(2), ...
    [E]
    """
    g = constant_field(arch).transcendental
    return [] if g is None else [g]


def field_primes(arch: Architecture, primes) -> tuple:
    """The primes an exact computation on ``arch`` uses: each given prime, or the largest usable one below it.

    With algebraic Taylor coefficients a prime must receive their field: the
    minimal polynomial of the primitive element needs a root mod ``p``
    (:meth:`~symattn.algebra.domains.ConstantField.primes`); otherwise the
    primes are returned as given.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> field_primes(Architecture.uniform(layers=1), DEFAULT_PRIMES) == DEFAULT_PRIMES
    True
    >>> field_primes(Architecture.uniform(layers=1, normalizer="x**2 - sqrt(3)*x + 1"), DEFAULT_PRIMES)
    (268435367, 268435331)
    """
    return constant_field(arch).primes(tuple(check_prime(p) for p in primes))


def field_note(arch: Architecture, primes) -> str:
    """The sentence of a method text saying how irrational Taylor coefficients reach GF(p) ('' if rational).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> field_note(Architecture.uniform(layers=1), DEFAULT_PRIMES)
    ''
    >>> print(field_note(Architecture.uniform(layers=1, normalizer="exp(x/sqrt(2))"), [268435399]))
    sqrt(2) mapped to a root of its minimal polynomial y**2 - 2 (49121951 mod 268435399; the primes are chosen where y**2 - 2 has a root): a ring homomorphism from Z[sqrt(2)] localized at a degree-1 prime above p onto GF(p), so a nonzero minor mod p is nonzero in Q(sqrt(2)), and so at the real sqrt(2)
    """
    return constant_field(arch).describe(primes)
