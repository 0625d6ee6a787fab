"""Points, banks, block series along a curve, and the Jacobian in chosen directions.

The floor under every analysis that differentiates the network: spectrum,
identify, observe, numeric and expand draw their random points and banks,
lay out the native parameters as columns, expand blocks along a
:class:`~symattn.curves.Curve`, and compute the Jacobian there, all here.

* Random numbers come from one :func:`generator`, one named stream per
  purpose, so that every analysis draws exactly what it drew before.
* The Jacobian ``J(eps)`` along a curve, in all native parameters or in
  chosen directions (a subset per block, the :func:`gauge_slice`), is one
  forward pass of :func:`symattn.model.forward` over first-order jets of
  truncated series mod ``(p, eps^N)``
  (:class:`~symattn.algebra.modseries.ModSeriesDomain`); the same curve at a
  numerical ``eps`` runs over float64 or mpmath jets
  (:class:`~symattn.algebra.numeric_jets.NumericJetDomain`).
* Gauge and lightning-scaling tangents, degree bounds for Schwartz-Zippel,
  and random row compression complete what the exact ranks need.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.curves import collapse
>>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="softmax")
>>> p = DEFAULT_PRIMES[0]
>>> point, coefficient_values = random_point(arch, p, seed=0)
>>> J = jacobian_series(arch, collapse(), random_bank(arch, 3, p, seed=0), point, p, truncation=4)
>>> J.shape                     # (d_l * t * bank, #params, N)
(12, 8, 4)
>>> [int(J[:, columns, 0].any()) for columns in block_columns(arch).values()]   # scores appear at eps^1
[0, 1]
"""

from __future__ import annotations

import functools
import math
import numbers
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from .algebra.degrees import NONE, DegreeBoundDomain
from .algebra.domains import ConstantField, PrimeFieldDomain, is_prime
from .algebra.linalg import compress_rows as _compress_rows
from .algebra.linalg import one_blas_thread
from .algebra.modseries import MAX_PRIME, ModSeriesDomain
from .algebra.numeric_jets import NumericJetDomain, as_fraction, to_mpf
from .curves import EPS, Curve, collapse
from .errors import BankError, DomainError, SymattnError
from .effective import hidden_gauge_layers
from .model import Architecture, forward, require_architecture, require_seed

__all__ = [
    "native_rank_bound",
    "effective_dimension_of",
    "DEFAULT_PRIMES",
    "check_prime",
    "STREAMS",
    "generator",
    "random_point",
    "random_bank",
    "small_integer_point",
    "random_real_point",
    "BANK_ENTRIES",
    "validate_bank",
    "bank_residues",
    "transcendental_constants",
    "constant_field",
    "field_primes",
    "field_note",
    "parameter_columns",
    "block_columns",
    "score_block_name",
    "all_directions",
    "gauge_slice",
    "curve_series",
    "jacobian_from_series",
    "jacobian_series",
    "series_output",
    "real_jacobian",
    "gauge_tangent_series",
    "scaling_tangent_series",
    "symmetry_orbit_bound",
    "degree_bound",
    "compress_rows",
]

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
    "small point": 6007,       # small_integer_point: sign-flip checks
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
    symattn.errors.SymattnError: unknown random stream 'dice'; streams are point, bank, rows, dimension rows, small point, real point, estimate point, value rank, near set
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


# -- the native parameters as columns --------------------------------------------------------------
def parameter_columns(arch: Architecture) -> dict:
    """The Jacobian columns of each native block: ``{block key: [positions]}``.

    Columns follow :meth:`~symattn.model.Architecture.parameter_index`:
    layer by layer, head by head, ``Q`` then ``K`` then ``V``, each
    row-major; keys are :meth:`~symattn.model.Architecture.block_key`
    (``(name, layer)``, or ``(name, layer, head)`` in a layer with heads).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> parameter_columns(Architecture.uniform(layers=1, width=2, rank=1))
    {('Q', 1): [0, 1], ('K', 1): [2, 3], ('V', 1): [4, 5, 6, 7]}
    >>> list(parameter_columns(Architecture.uniform(layers=1, width=1, heads=2)))
    [('Q', 1, 1), ('K', 1, 1), ('V', 1, 1), ('Q', 1, 2), ('K', 1, 2), ('V', 1, 2)]
    """
    out: dict = {}
    for position, entry in enumerate(arch.parameter_index()):
        out.setdefault(tuple(entry[:-2]), []).append(position)
    return out


def block_columns(arch: Architecture) -> dict[str, list[int]]:
    """The columns of each effective block: ``scores:i`` (``Q_i`` and ``K_i``) and ``values`` (every ``V_i``).

    In a layer with several heads each head's scores are a block of their
    own, ``scores:i:h``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> block_columns(Architecture.uniform(layers=2, width=1, rank=1))
    {'scores:1': [0, 1], 'scores:2': [3, 4], 'values': [2, 5]}
    >>> block_columns(Architecture.uniform(layers=1, width=1, rank=1, heads=2))
    {'scores:1:1': [0, 1], 'scores:1:2': [3, 4], 'values': [2, 5]}
    """
    groups = arch.block_groups()
    # the score groups first, then the values, then the groups of other components, as they come
    order = sorted(dict.fromkeys(groups.values()), key=lambda g: (not g.startswith("scores:"), g != "values"))
    columns: dict[str, list[int]] = {group: [] for group in order}
    for key, positions in parameter_columns(arch).items():
        columns[groups[key]] += positions
    return columns


def score_block_name(arch: Architecture, layer: int, head: int = 1) -> str:
    """The name of the effective scores of a head: ``scores:i``, or ``scores:i:h`` in a layer with heads.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> score_block_name(Architecture.uniform(layers=1, heads=3), 1, 2)
    'scores:1:2'
    """
    return arch.attention[layer - 1].score_group(layer, head)


def all_directions(arch: Architecture) -> tuple[dict, int]:
    """Every native parameter a jet direction: ``({(name, layer): int array of the block's shape}, #params)``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> directions, count = all_directions(Architecture.uniform(layers=1, width=2, rank=1))
    >>> directions[("V", 1)].tolist(), count
    ([[4, 5], [6, 7]], 8)
    """
    shapes = dict(arch.blocks())
    out = {key: np.array(positions, dtype=np.int64).reshape(shapes[key])
           for key, positions in parameter_columns(arch).items()}
    return out, arch.param_count


def gauge_slice(arch: Architecture) -> tuple[dict, int]:
    """Native parameters that meet every gauge orbit transversally: ``(directions, count)``.

    The gauge ``G_i`` can bring the first ``a_i`` columns of ``Q_i`` to the
    identity and ``H_i`` the first ``d_i`` columns of ``V_i`` (``i < l``), so
    differentiating in the other entries only misses gauge directions: the
    Jacobian restricted to them has the same rank generically, with
    ``#params - gauge_dim`` columns (when ``a_i <= d_{i-1}`` and
    ``d_i <= d_{i-1}``; otherwise fewer entries are dropped).  With heads,
    each head's ``G_{i,h}`` fixes its own ``Q_{i,h}`` and ``H_i`` fixes the
    first head's ``V_{i,1}``; a residual stream has no ``H_i``
    (:func:`symattn.effective.hidden_gauge_layers`), so no ``V`` entry is fixed.

    Returns
    -------
    directions : dict
        ``(name, layer) -> int array`` of the block's shape: the jet direction
        of each entry, ``-1`` for entries held fixed.
    count : int
        The number of directions.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.effective import effective_dimension, gauge_dimension
    >>> arch = Architecture.uniform(layers=2, width=3, rank=2)
    >>> directions, count = gauge_slice(arch)
    >>> count, arch.param_count - gauge_dimension(arch), effective_dimension(arch)
    (25, 25, 25)
    >>> directions[("Q", 1)].tolist()
    [[-1, -1, 0], [-1, -1, 1]]
    """
    arch = require_architecture(arch)
    # a change of basis G (H) acts on the left of these blocks: it can bring their leading square to I
    sliced = {key for i, d_in, component in arch.components() for key in component.gauge_slice_blocks(i, d_in)}
    sliced |= {writers[0] for _, _, _, writers in arch.hidden_gauges() if writers}
    out, position = {}, 0
    for key, (rows, cols) in arch.blocks():
        fixed = np.zeros((rows, cols), dtype=bool)
        if rows <= cols and key in sliced:
            fixed[:, :rows] = True
        directions = np.full((rows, cols), -1, dtype=np.int64)
        free = int((~fixed).sum())
        directions[~fixed] = position + np.arange(free)
        position += free
        out[key] = directions
    return out, position



# -- series along a curve, and the Jacobian there ----------------------------------------------------
def curve_series(arch: Architecture, curve: Curve, point, bank, p: int | None, truncation: int):
    """Parameter and input series of ``curve`` through ``point`` and ``bank``: ``(parameters, inputs)``.

    ``parameters[(name, layer)]`` has shape ``(rows, cols, N)`` and ``inputs``
    shape ``(d_0, t, |bank|, N)``: the coefficients of ``eps^0 .. eps^(N-1)``.
    With a prime ``p`` the entries are residues (int64; the coefficients of
    user polynomials are reduced mod ``p``); with ``p=None`` they stay exact
    (object arrays of whatever ``point`` and ``bank`` hold: rationals, sympy
    symbols).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=1)
    >>> point = {("Q", 1): np.array([[2]]), ("K", 1): np.array([[3]]), ("V", 1): np.array([[5]])}
    >>> parameters, inputs = curve_series(arch, collapse(), point, np.array([[[7]]]), 101, 3)
    >>> parameters[("Q", 1)].tolist(), parameters[("V", 1)].tolist(), inputs.tolist()
    ([[[0, 2, 0]]], [[[5, 0, 0]]], [[[[7, 0, 0]]]])
    """
    if p is None:
        dtype, residue = object, (lambda value: value)
    else:
        dtype, residue = np.int64, ModSeriesDomain(p, truncation).residue
    parameters = {key: curve.block_coefficients(key[0], key[1], np.asarray(base, dtype=dtype), residue, truncation,
                                                dtype=dtype)
                  for key, base in point.items()}
    bank = np.asarray(bank, dtype=dtype)
    inputs = np.zeros((*arch.input_shape, len(bank), truncation), dtype=dtype)
    if curve.input_power < truncation:
        inputs[..., curve.input_power] = np.moveaxis(bank, 0, -1)
    return parameters, inputs


def jacobian_from_series(arch: Architecture, parameter_series: dict, input_series: np.ndarray, p: int,
                         truncation: int, coefficient_values=None, directions=None,
                         tangent_powers=None) -> np.ndarray:
    """``J(eps)`` over GF(p) mod ``eps^N`` for parameters and inputs given as series.

    Parameters
    ----------
    arch : Architecture
    parameter_series : dict
        ``(name, layer) -> (rows, cols, N)`` integer coefficients (as from
        :func:`curve_series`, or any series: a point moving off a set).
    input_series : int array ``(d_0, t, bank, N)``
    p : int
        A prime below ``2**28``.
    truncation : int
        ``N``.
    coefficient_values : dict, optional
        Residues of transcendental constants and generic Taylor coefficients
        (from :func:`random_point`).
    directions : (dict, int), optional
        ``({(name, layer): int array}, count)``: the jet direction of every
        entry, ``-1`` for entries held fixed (:func:`gauge_slice`); default
        :func:`all_directions`.
    tangent_powers : dict, optional
        ``(name, layer) -> m``: differentiate in ``eps^m`` times the entry
        (curve coordinates); default 0 (native coordinates).

    Returns
    -------
    int array ``(d_l * t * |bank|, count, N)``
        Rows run over output entries (row-major) and then bank inputs.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=1, normalizer="softmax")
    >>> series = {("Q", 1): np.array([[[0, 3]]]), ("K", 1): np.array([[[0, 3]]]), ("V", 1): np.array([[[3, 0]]])}
    >>> J = jacobian_from_series(arch, series, np.array([[[[2, 0]]]]), 101, 2)
    >>> J[0, :, 0].tolist()      # one token: F = V X, so only dF/dV = X = 2 is nonzero
    [0, 0, 2]
    """
    directions, count = all_directions(arch) if directions is None else directions
    tangent_powers = tangent_powers or {}
    domain = ModSeriesDomain(p, truncation, directions=count, coefficient_values=coefficient_values)
    N = domain.truncation
    blocks = {}
    for key, (rows, cols) in arch.blocks():
        chosen = directions[key]
        # the jet axis is as long as this block's last direction: later ones stay implicit zeros
        width = 1 + (int(chosen.max()) + 1 if (chosen >= 0).any() else 0)
        block = np.zeros((rows, cols, 1, width, N), dtype=np.int64)
        coefficients = np.asarray(parameter_series[key])[..., :N]
        block[:, :, 0, 0, :coefficients.shape[-1]] = coefficients % p
        power = tangent_powers.get(key, 0)
        if power < N:
            for (r, c), k in np.ndenumerate(chosen):
                if k >= 0:
                    block[r, c, 0, 1 + k, power] = 1
        blocks[key] = block
    params = arch.parameters_from_blocks(blocks)
    with one_blas_thread():  # once around the pass's hundreds of products
        output = forward(arch, params, domain.from_coefficients(input_series), domain, convert=False)
    tangents = domain.tangents(output)  # (d_l, t, B, count, N)
    return np.moveaxis(tangents, 2, 0).reshape(-1, count, N)


def jacobian_series(arch: Architecture, curve: Curve, bank: np.ndarray, point, p: int, truncation: int,
                    coefficient_values=None, directions=None, coordinates: str = "native") -> np.ndarray:
    """``J(eps)`` mod ``eps^truncation`` over GF(p) along a curve: shape ``(d_l * t * |bank|, count, N)``.

    Parameters
    ----------
    arch : Architecture
    curve : Curve
    bank : int array ``(size, d_0, t)``
        Inputs as residues (:func:`random_bank`, :func:`bank_residues`).
    point : dict
        ``(name, layer) -> residues``, the curve's base point (:func:`random_point`).
    p, truncation : int
    coefficient_values : dict, optional
        As returned by :func:`random_point`.
    directions : (dict, int), optional
        Jet directions (default every native parameter; :func:`gauge_slice`
        for a transversal slice).
    coordinates : {"native", "curve"}
        ``"native"``: derivatives in the native parameters at ``theta_eps``;
        ``"curve"``: in the curve's base coordinates (``Qt_i`` etc.), i.e.
        native derivatives of collapsed blocks times ``eps``.

    Returns
    -------
    int array
        Rows run over output entries (row-major) and then bank inputs.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=2, rank=1, tokens=2, normalizer="cosh")
    >>> p = 1009
    >>> point, values = random_point(arch, p, 0)
    >>> bank = random_bank(arch, 3, p, 0)
    >>> native = jacobian_series(arch, collapse(), bank, point, p, 6)
    >>> in_curve = jacobian_series(arch, collapse(), bank, point, p, 6, coordinates="curve")
    >>> q = parameter_columns(arch)[("Q", 1)]
    >>> bool((in_curve[:, q, 1:] == native[:, q, :-1]).all())   # d/dQt = eps d/dQ
    True
    """
    if coordinates not in ("native", "curve"):
        raise SymattnError(f"coordinates must be 'native' or 'curve', got {coordinates!r}")
    parameters, inputs = curve_series(arch, curve, point, bank, p, truncation)
    powers = {}
    if coordinates == "curve":
        powers = {key: curve.block_power(*key[:2]) or 0 for key in parameters}
    return jacobian_from_series(arch, parameters, inputs, p, truncation, coefficient_values, directions, powers)


def series_output(arch: Architecture, curve: Curve, point, bank, domain) -> np.ndarray:
    """The output's series along a curve, no derivatives: shape ``(d_l, t, |bank|, N)``.

    Parameters
    ----------
    arch : Architecture
    curve : Curve
    point, bank
        As for :func:`curve_series`: residues for a
        :class:`~symattn.algebra.modseries.ModSeriesDomain`, exact entries
        (rationals, symbols) for an exact series domain of
        :mod:`symattn.algebra.exactseries` (whose ``p`` is ``None``).
    domain : ModSeriesDomain or an exact series domain
        The ring of the coefficients, and the truncation ``N``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax")
    >>> point = {("Q", 1): np.array([[1]]), ("K", 1): np.array([[1]]), ("V", 1): np.array([[1]])}
    >>> domain = ModSeriesDomain(101, 2)
    >>> series_output(arch, collapse(), point, np.array([[[1, 0]]]), domain)[0, :, 0].tolist()
    [[51, 0], [51, 0]]

    At ``eps = 0`` attention is uniform, so both tokens are ``(1 + 0) / 2 = 1/2 = 51`` mod 101.
    Over Q, with symbols:

    >>> from symattn.algebra.exactseries import PolynomialSeriesDomain
    >>> a = sp.Symbol("a")
    >>> exact = {key: np.array([[a]], dtype=object) for key in point}
    >>> ring = PolynomialSeriesDomain(3, [a])
    >>> out = series_output(arch, collapse(), exact, np.array([[[1, 0]]], dtype=object), ring)
    >>> [str(ring.to_sympy(c)) for c in out[0, 0, 0]]        # a (1/2 + eps^2 a^2 / 4)
    ['a/2', '0', 'a**3/4']
    """
    parameters, inputs = curve_series(arch, curve, point, bank, domain.p, domain.truncation)
    params = arch.parameters_from_blocks({key: domain.from_coefficients(parameters[key][:, :, None, :])
                                          for key, _ in arch.blocks()})
    return domain.coefficients(forward(arch, params, domain.from_coefficients(inputs), domain, convert=False))


def _power_of(eps, power: int):
    """``eps^power``, exactly when ``eps`` is rational (``None`` for ``power = 0``: no scaling)."""
    if power == 0:
        return None
    if power == 1:
        return eps
    exact = as_fraction(eps)
    return (exact if exact is not None else eps) ** power


def _polynomial_at(entry, eps, dps: int):
    """A curve polynomial at ``eps``: exact for rational ``eps``, else an mpf at ``dps`` digits."""
    exact = as_fraction(eps)
    if exact is not None:
        # entries are sympy polynomials (curves are built through the safe parser); strict: never a string
        return sp.sympify(entry, strict=True).subs(EPS, sp.Rational(exact.numerator, exact.denominator))
    with mpmath.workdps(dps):
        x = to_mpf(eps, dps)
        return sum((to_mpf(c, dps) * x ** k for (k,), c in sp.Poly(entry, EPS).terms()), mpmath.mpf(0))


def real_jacobian(arch: Architecture, params_tilde, bank, eps, curve: Curve | None = None,
                  base: str = "float64", dps: int = 50) -> np.ndarray:
    """The native Jacobian at ``eps`` on ``curve`` (default collapse), numerically: ``(d_l * t * |bank|, #params)``.

    Forward-mode: one pass of :func:`symattn.model.forward` over
    :class:`~symattn.algebra.numeric_jets.NumericJetDomain` per input, every
    native parameter seeded with its unit tangent; no finite differences.

    Parameters
    ----------
    arch : Architecture
    params_tilde : sequence
        The base point, flat in ``parameter_index()`` order (entries of
        blocks that the curve replaces by polynomials are not read).
    bank : sequence of matrices
        Checked by :func:`validate_bank`.
    eps : number
        Decimal strings and Fractions are read exactly.
    curve : Curve, optional
    base : {"float64", "mpmath"}
    dps : int
        mpmath digits.

    Returns
    -------
    numpy.ndarray
        Rows run over the bank, then the output entries row-major; float64,
        or object (``mpf``) for mpmath.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import input_scaling
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax")
    >>> collapsed = real_jacobian(arch, [1, 1, 1], [[[1, 0]]], "0.5")
    >>> scaled = real_jacobian(arch, ["0.5", "0.5", 1], [[[2, 0]]], "0.5", curve=input_scaling())
    >>> bool(np.allclose(collapsed[:, 2], scaled[:, 2]))     # the same scores Q K x^2 = 1/4
    True
    """
    curve = collapse() if curve is None else curve
    if not isinstance(curve, Curve):
        raise SymattnError(f"curve must be a symattn.curves.Curve such as collapse() or input_scaling(), "
                           f"got {_short(curve)}")
    curve.validate(arch)
    P = arch.param_count
    domain = NumericJetDomain(base, dps=dps, directions=P)
    inputs = validate_bank(arch, bank)
    polynomials = {(b, i): m for b, i, m in curve.polynomials}
    blocks = {}
    position = 0
    for key, (rows, cols) in arch.blocks():
        name, i = key[:2]
        power = curve.block_power(name, i)
        if power is None:  # a user polynomial replaces the block
            values = [[_polynomial_at(polynomials[(name, i)][r, c], eps, dps) for c in range(cols)]
                      for r in range(rows)]
            scale = None
        else:
            values = [params_tilde[position + r * cols: position + (r + 1) * cols] for r in range(rows)]
            scale = _power_of(eps, power)
        blocks[key] = domain.matrix(values, first_direction=position, scale=scale)
        position += rows * cols
    params = arch.parameters_from_blocks(blocks)
    input_scale = _power_of(eps, curve.input_power)
    rows_per_input = arch.widths[-1] * arch.tokens
    out = domain._zeros((rows_per_input * len(inputs), P))
    for b, X in enumerate(inputs):
        output = forward(arch, params, domain.matrix(X, scale=input_scale), domain, convert=False)
        out[b * rows_per_input:(b + 1) * rows_per_input] = domain.tangents(output).reshape(rows_per_input, P)
    return out


# -- tangents of the symmetry orbits ----------------------------------------------------------------
def gauge_tangent_series(arch: Architecture, curve: Curve, point, p: int, truncation: int) -> np.ndarray:
    """Tangent vectors of the gauge orbit at ``theta_eps``: shape ``(gauge_dim, #params, N)``.

    One vector per basis element of ``gl(a_i)`` (``Q_i -> G Q_i``,
    ``K_i -> G^{-T} K_i``) and of ``gl(d_i)``, ``i < l`` (``V_i -> H V_i``,
    layer ``i + 1`` blocks ``-> (.) H^{-1}``), all exact mod ``(p, eps^N)``.
    With heads, one ``gl(a_i)`` per head, and ``H_i`` acts on every head's
    ``V_{i,h}`` and on every head of layer ``i + 1``; a residual stream has
    no ``gl(d_i)`` part (:func:`symattn.effective.gauge_dimension`).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=2, width=2, rank=1)
    >>> point, _ = random_point(arch, 101, 0)
    >>> gauge_tangent_series(arch, collapse(), point, 101, 3).shape    # a_1^2 + a_2^2 + d_1^2
    (6, 16, 3)
    """
    return symmetry_tangent_series(arch, curve, point, p, truncation, "gauge")


def scaling_tangent_series(arch: Architecture, curve: Curve, point, p: int, truncation: int) -> np.ndarray:
    """Tangents of ``Q_i -> c Q_i, V_i -> V_i / c`` for each lightning head: shape ``(m, #params, N)``.

    Lightning attention has no normalization, so these scalings keep the
    output: they join the gauge tangents in the kernel of ``J(eps)``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, normalizer="lightning")
    >>> point = {("Q", 1): np.array([[2]]), ("K", 1): np.array([[3]]), ("V", 1): np.array([[5]])}
    >>> scaling_tangent_series(arch, collapse(), point, 101, 2)[0].tolist()   # (eps Qt, 0, -Vt)
    [[0, 2], [0, 0], [96, 0]]
    """
    return symmetry_tangent_series(arch, curve, point, p, truncation, "scaling")


def symmetry_tangent_series(arch: Architecture, curve: Curve, point, p: int, truncation: int,
                            group: str | None = None) -> np.ndarray:
    """The symmetry tangents of the components at ``theta_eps``, exact mod ``(p, eps^N)``: ``(m, #params, N)``.

    Each :class:`~symattn.model.components.Tangent` of
    :meth:`~symattn.model.Architecture.symmetry_tangents` (of ``group``, or
    all) moves a block ``M`` by ``L M + M R + C``, evaluated here on the
    block's series along ``curve``.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, normalizer="lightning")
    >>> point = {("Q", 1): np.array([[2]]), ("K", 1): np.array([[3]]), ("V", 1): np.array([[5]])}
    >>> symmetry_tangent_series(arch, collapse(), point, 101, 2)[:, :, 1].tolist()   # gl(1), then the scaling
    [[2, 98, 0], [2, 0, 0]]
    """
    residue = ModSeriesDomain(p, truncation).residue
    series = {key: curve.block_coefficients(key[0], key[1], point[key], residue, truncation)
              for key, _ in arch.blocks()}
    columns = parameter_columns(arch)
    tangents = arch.symmetry_tangents(group)
    out = np.zeros((len(tangents), arch.param_count, truncation), dtype=np.int64)
    for row, tangent in enumerate(tangents):
        for key, (left, right, constant, *source) in tangent.terms.items():
            M = series[key]
            move = np.zeros_like(M)
            if source and source[0] is not None:  # a bias moved through its weight: M_source S
                other, S = source[0]
                move = move + np.einsum("abn,bc->acn", series[other], np.asarray(S, dtype=np.int64) % p)
            if left is not None:
                move = move + np.einsum("ab,bcn->acn", np.asarray(left, dtype=np.int64) % p, M)
            if right is not None:
                move = move + np.einsum("abn,bc->acn", M, np.asarray(right, dtype=np.int64) % p)
            if constant is not None:
                move[..., 0] += np.asarray(constant, dtype=np.int64)
            positions = columns[key]
            out[row, positions] = (out[row, positions] + move.reshape(len(positions), truncation)) % p
    return out


def symmetry_orbit_bound(arch: Architecture, p: int = DEFAULT_PRIMES[0], seed: int = 0) -> int:
    """An upper bound of the rank of the native Jacobian: ``#params`` minus the symmetry orbit's dimension.

    The gauge orbit (and the scalings of lightning heads) lies in every
    fiber, so its tangents lie in the kernel of the native Jacobian: the rank
    of ``J`` is at most ``#params`` minus their rank at a random point mod
    ``p`` (at most the generic rank, so the bound stays a bound).  With a
    causal mask and one head per layer without a residual stream, ``F = P X
    M_l`` still holds (the mask acts on the scores, which are
    ``M^T X^T What_i X M`` in input coordinates), so the effective dimension
    bounds the rank too, and the smaller bound is returned.  It is the rank
    the variants are compared with (no formula is claimed for them).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> symmetry_orbit_bound(Architecture.uniform(layers=2, width=2, rank=1))        # 16 - 6
    10
    >>> symmetry_orbit_bound(Architecture.uniform(layers=2, width=2, rank=1, residual=True))   # 16 - 2
    14
    >>> symmetry_orbit_bound(Architecture([2, 3, 3], [1, 1], causal=True))   # 25 - 11 = 14 > 12 = dim (What, P)
    12
    """
    from .algebra.valuations import smith_valuations
    from .effective import effective_dimension

    p = field_primes(arch, (p,))[0]  # random_point needs a root of the normalizers' field (sqrt(3))
    point, _ = random_point(arch, p, seed)
    still = Curve("a random point (no curve)")
    tangents = symmetry_tangent_series(arch, still, point, p, 1)
    bound = arch.param_count - (smith_valuations(tangents, p).resolved_rank if len(tangents) else 0)
    if arch.factors_through_effective and not any(n.is_lightning for n in arch.normalizers):
        bound = min(bound, effective_dimension(arch))  # F = P X M_l: a mask alone keeps the effective parameters
    return bound


@functools.lru_cache(maxsize=256)
def effective_dimension_of(widths: tuple, score_ranks: tuple) -> int:
    """:func:`symattn.effective.effective_dimension` of a shape, computed once (with a bottleneck it is a rank).

    Examples
    --------
    >>> effective_dimension_of((2, 2, 2), (1, 1))
    10
    """
    from .effective import effective_dimension

    return effective_dimension(Architecture(widths, score_ranks))


def native_rank_bound(arch: Architecture) -> tuple[int, str]:
    """A proven upper bound of the rank of the native Jacobian at any point, and why it holds.

    The effective dimension for the model of the paper (``F`` factors
    through ``(What_1, ..., What_l, P)``), less one for each lightning layer
    (its scaling keeps ``F``); the value map's dimension with one token (every
    ``S(A)`` is the constant 1, so ``F = P X``); for the variants
    :func:`symmetry_orbit_bound`.  A computed rank that reaches it is the
    rank: the directions left unresolved are kernel.

    Examples
    --------
    >>> native_rank_bound(Architecture.uniform(layers=2))[0]
    10
    >>> bound, reason = native_rank_bound(Architecture.uniform(layers=2, tokens=1))
    >>> bound, reason.split(":")[0]
    (4, 'one token')
    >>> native_rank_bound(Architecture.uniform(layers=2, normalizer="lightning"))[0]
    8
    """
    from .effective import effective_block_dimensions

    lightning = [i for i, n in enumerate(arch.normalizers, start=1) if n.is_lightning]
    if arch.degenerate and not lightning:
        values = (effective_block_dimensions(arch)["values"] if arch.is_plain
                  else arch.widths[-1] * arch.widths[0])
        bound = values if arch.is_plain else min(values, symmetry_orbit_bound(arch))
        return bound, ("one token: every S(A) is the 1 x 1 matrix 1, so F is linear in X through the value "
                       f"maps only (dimension at most {bound})")
    if not arch.is_plain:
        return symmetry_orbit_bound(arch), (
            f"#params minus the dimension of the symmetry orbit of {arch.describe_variant()} (one GL(a_i) per "
            "head" + (", GL(d_i) per hidden layer" if hidden_gauge_layers(arch) else
                      ", no hidden GL(d_i): a residual stream breaks it" if arch.residual else "")
            + (", the scalings of lightning heads" if lightning else "")
            + "), a rank at a random point mod p; the orbit lies in every fiber"
            + ("; with one head per layer and no residual stream F = P X M_l still holds, so at most the "
               "dimension of (What_1, ..., What_l, P)" if all(h == 1 for h in arch.heads) and not arch.residual
               else ""))
    eff = effective_dimension_of(tuple(arch.widths), tuple(arch.score_ranks))
    reason = ("the dimension of the effective parameters (What_1, ..., What_l, P), through which F factors"
              + (" (an exact Jacobian rank at a random integer point: a hidden width is a bottleneck)"
                 if min(arch.widths[1:-1], default=arch.widths[0]) < arch.widths[0] else ""))
    if lightning:
        reason += (f", minus {len(lightning)}: each lightning layer i has the scaling Q_i -> c Q_i, "
                   "V_i -> V_i / c, which acts on the effective parameters with a free orbit and keeps F")
        return eff - len(lightning), reason
    return eff, reason


def degree_bound(arch: Architecture, curve: Curve, truncation: int, variable_constants: bool = True) -> int:
    """A bound on the degree, in the random point, of every coefficient of the output's series along ``curve``.

    The same bound holds for ``J(eps)``: a derivative has no higher degree.
    It is the ``D`` of Schwartz-Zippel for a computation at a random point.

    Parameters
    ----------
    variable_constants : bool
        Count a transcendental constant of the normalizers as a variable
        (it is one when given a random residue over GF(p)); False when it
        keeps its value (exact evaluation over Q).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.curves import collapse
    >>> degree_bound(Architecture.uniform(layers=1, normalizer="1 + x**2"), collapse(), 5)
    10
    """
    # a transcendental constant at a random residue is a variable too: count the coefficients as degree 1
    variable_coefficients = any(n.is_generic for n in arch.normalizers) or (
        variable_constants and bool(transcendental_constants(arch)))
    domain = DegreeBoundDomain(truncation, generic_coefficients=variable_coefficients)

    def block(name, layer, shape):
        out = np.full((*shape, truncation), NONE)
        power = curve.block_power(name, layer)
        if power is None:
            out[..., :] = 0.0  # fixed rational coefficients
        elif power < truncation:
            out[..., power] = 1.0
        return out

    params = arch.parameters_from_blocks({key: block(key[0], key[1], shape) for key, shape in arch.blocks()})
    X = np.full((*arch.input_shape, truncation), NONE)
    if curve.input_power < truncation:
        X[..., curve.input_power] = 1.0
    output = forward(arch, params, X, domain, convert=False)
    finite = output[np.isfinite(output)]
    return int(finite.max()) if finite.size else 0


def compress_rows(J: np.ndarray, p: int, seed, rows: int | None = None) -> np.ndarray:
    """``R J`` for a random constant ``R`` with ``rows`` rows (default ``#columns``), when ``J`` has more.

    By Cauchy-Binet each ``r x r`` minor of ``R J`` is a combination of those
    of ``J`` with the minors of ``R`` as coefficients, so for a random ``R``
    the least valuation of the ``r x r`` minors, hence every Smith exponent,
    is unchanged except with probability at most ``r / p``.

    Parameters
    ----------
    J : int array ``(m, n, ...)``
    p : int
    seed : int or numpy.random.Generator
        An int draws ``R`` from the ``"rows"`` stream of :func:`generator`.
    rows : int, optional

    Examples
    --------
    >>> J = np.zeros((5, 2, 3), dtype=np.int64); J[0, 0, 1] = 1; J[4, 1, 2] = 1
    >>> from symattn.algebra.valuations import smith_valuations
    >>> smith_valuations(compress_rows(J, 101, 0), 101).exponents
    (1, 2)
    """
    rng = seed if isinstance(seed, np.random.Generator) else generator(seed, "rows")
    return _compress_rows(J, J.shape[1] if rows is None else rows, p, rng)
