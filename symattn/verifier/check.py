"""Check a certificate (a dimension lower bound, a decay spectrum, orders, observability): read every field, recompute the witness minor, compare every claim.

The certificate is user input: every field is validated here with a message
naming the bad value and what is accepted; rationals are read with
:class:`fractions.Fraction` from strings of digits only; nothing is evaluated.
The first disagreement ends the check and is reported.

This module imports only the standard library, numpy and its own package.
"""

from __future__ import annotations

import contextvars
import json
import math
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from .arithmetic import widen
from .disagreement import Disagreement
from .network import ScoresDoNotVanish, forward, integer_scores
from .pivots import pivot_valuations
from .claims import KIND as CLAIMS_KIND, check_claims, claims_claim, read_claims
from .formulas import (
    MAX_FORMULA_OPERATIONS, QUANTITIES as FORMULA_QUANTITIES, formula_operations, coefficient_degrees, decide_formula, evaluate_formula, first_degrees,
    formula_degree, leading_orders, named_values, read_formula,
)
from .orders import KIND as ORDERS_KIND, check_orders, orders_claim, read_orders
from .observe import (
    KIND as OBSERVE_KIND, check_on_set, check_observe, held_blocks, observe_claim, read_blocks, read_events,
)
from .spectrum import conclusion, gauge_conclusion, gauge_tangents, read_exponents, spectrum_claim
from .limits import TooLarge, certificate_cost, check_cost, parse_json, read_certificate_text
from .taylor import NotRecomputable, is_exponential, preset_expression, taylor_residues

__all__ = ["SCHEMA", "VERSION", "KINDS", "CertificateError", "CertificateTooLarge", "Disagreement",
           "VerificationReport", "verify", "parameter_names"]

#: The schema name and the version this checker reads.
SCHEMA = "symattn-certificate"
VERSION = 1

#: The kinds of certificate this checker checks (the spectrum's own fields: :mod:`symattn.verifier.spectrum`).
KINDS = ("dimension lower bound", "spectrum", ORDERS_KIND, OBSERVE_KIND, "identify", CLAIMS_KIND)

#: Largest prime the checker accepts: residues times residues stay below 2**62 in int64.
MAX_PRIME = 2 ** 31

#: Longest rational string read (digits), against certificates built to exhaust memory.
MAX_RATIONAL_DIGITS = 2000


#: Longest message a report or an error carries (characters): a hostile field never fills a screen.
MAX_MESSAGE = 400


class CertificateError(ValueError):
    """The file is not a certificate at all: not a regular file, not UTF-8, not JSON, or not a JSON object.

    ``symattn verify`` exits with status 2 on it (bad input), 1 on a
    certificate that does not verify, 0 on one that does.

    Examples
    --------
    >>> verify("{not json")
    Traceback (most recent call last):
    ...
    symattn.verifier.check.CertificateError: the certificate is not JSON: Expecting property name enclosed in double quotes at line 1, column 2
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "null.json")
    >>> _ = open(path, "w").write("null")
    >>> verify(path)
    Traceback (most recent call last):
    ...
    symattn.verifier.check.CertificateError: the certificate is a JSON null, not an object
    >>> verify(os.path.dirname(path))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.verifier.check.CertificateError: '...' is a directory, not a regular file
    """


class CertificateTooLarge(CertificateError):
    """Checking the certificate would take more memory or work than the limits, known from its header before any arithmetic.

    Examples
    --------
    >>> issubclass(CertificateTooLarge, CertificateError)
    True
    """


#: Longest conclusion printed, and most items of a list printed (to_json() has them all).
MAX_CONCLUSION = 4000
MAX_ITEMS = 60
#: Longest printed report (characters), as every display of the package.
MAX_TEXT = 20_000


def _bounded_items(items) -> list:
    """``  - item`` lines: each on one line of bounded length, at most :data:`MAX_ITEMS` of them (first and last)."""
    lines = [f"  - {_one_line(item, 1000)}" for item in items]
    if len(lines) <= MAX_ITEMS:
        return lines
    half = MAX_ITEMS // 2
    return lines[:half] + [f"  ... {len(lines) - 2 * half} more (all of them in to_json())"] + lines[-half:]


def _one_line(text, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class VerificationReport:
    """What :func:`verify` checked, and whether everything held (else the first disagreement).

    Attributes
    ----------
    verified : bool
    claim : str
        What the certificate claims (empty when it could not be read that far).
    checked : tuple of str
        Each check that passed, in order.
    problem : str or None
        The first disagreement.
    rank : int or None
        The rank the recomputed witness minor proves (``None`` before it is computed).
    valuations : tuple of int
        The recomputed pivot valuations of the witness minor.
    seconds : float
    kernel : int or None
        A spectrum certificate's stronger check: the kernel dimension, when the
        gauge orbit's tangents and the witness's rank add up to the number of
        parameters (then the rank is exactly ``rank``); ``None`` when not decided.
    conclusion : str
        What the checker proved, in its own words, derived from what it
        recomputed: the sentence printed after "verified:" (the claim itself
        when the checker wrote the claim from its own reading).
    unchecked : tuple of str
        The certificate's words the checker did not check (a normalizer's name
        it cannot recompute, the engine's verdicts on claims nothing decides):
        printed apart as provenance, never part of the conclusion.

    Examples
    --------
    >>> report = VerificationReport(False, "", (), "the certificate is a list, not an object")
    >>> print(report)
    NOT verified: the certificate is a list, not an object
    >>> report.to_json()["verified"]
    False
    >>> print(VerificationReport(True, "x >= 1", ("x = 1",), unchecked=("its name 'softmax'",)))
    verified: x >= 1
    not checked (the certificate's own words, taken as given):
      - its name 'softmax'
    checked:
      - x = 1
    """

    verified: bool
    claim: str
    checked: tuple
    problem: str | None = None
    rank: int | None = None
    valuations: tuple = ()
    seconds: float = 0.0
    kernel: int | None = None
    conclusion: str = ""
    unchecked: tuple = ()

    def __post_init__(self):
        if self.problem is not None:
            object.__setattr__(self, "problem", _one_line(self.problem))
        if not self.conclusion:
            object.__setattr__(self, "conclusion", self.claim)

    def to_json(self) -> dict:
        return {"verified": self.verified, "claim": self.claim, "conclusion": self.conclusion,
                "unchecked": list(self.unchecked), "checked": list(self.checked),
                "problem": self.problem, "rank": self.rank, "valuations": list(self.valuations),
                "seconds": round(self.seconds, 4), "kernel": self.kernel}

    def __str__(self) -> str:
        if self.verified:
            lines = [f"verified: {_one_line(self.conclusion, MAX_CONCLUSION)}"]
            if self.unchecked:
                lines.append("not checked (the certificate's own words, taken as given):")
                lines += _bounded_items(self.unchecked)
            lines.append("checked:")
        else:
            lines = [f"NOT verified: {self.problem}"]
            if self.checked:
                lines.append("checked before the disagreement:")
        lines += _bounded_items(self.checked)
        text = "\n".join(lines)
        if len(text) > MAX_TEXT:  # long lines as well as many: each cut shorter (to_json() has every word)
            width = MAX_TEXT // (2 * MAX_ITEMS + 8)
            text = "\n".join(line if len(line) <= width else line[:width - 3] + "..." for line in lines)
        return text

    def to_markdown(self) -> str:
        return str(self)

    def to_latex(self) -> str:
        status = "verified" if self.verified else "not verified"
        return f"\\textbf{{{status}}}: " + (self.conclusion if self.verified else str(self.problem)).replace("_", r"\_")


# -- reading the fields -----------------------------------------------------------------------
def _short(value, limit: int = 60) -> str:
    if isinstance(value, str):
        text = repr(value[:limit])
    elif isinstance(value, (dict, list)):
        text = f"a JSON {'object' if isinstance(value, dict) else 'array'} of {len(value)} entries"
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        text = f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    else:
        text = json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _field(document: dict, name: str, where: str = "the certificate"):
    if name not in document:
        raise Disagreement(f"{where} has no field {name!r}")
    return document[name]


def _integer(value, what: str, low: int | None = None, high: int | None = None) -> int:
    """A JSON integer (not a boolean) in ``low .. high``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Disagreement(f"{what} must be an integer, got {_short(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"{low} .. {high}" if high is not None else f">= {low}"
        raise Disagreement(f"{what} must be in {bounds}, got {value}")
    return value


def _boolean(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise Disagreement(f"{what} must be true or false, got {_short(value)}")
    return value


def _list(value, what: str, length: int | None = None) -> list:
    if not isinstance(value, list):
        raise Disagreement(f"{what} must be a list, got {_short(value)}")
    if length is not None and len(value) != length:
        raise Disagreement(f"{what} must have {length} entries, got {len(value)}")
    return value


_RATIONAL = re.compile(r"-?[0-9]+(/[0-9]+)?")


def rational(text, what: str) -> Fraction:
    """A rational from a string ``"p/q"`` or ``"p"`` of digits (an optional minus sign); nothing else is read.

    Examples
    --------
    >>> rational("-1/24", "c_4")
    Fraction(-1, 24)
    >>> rational("1e3", "c_1")
    Traceback (most recent call last):
    ...
    symattn.verifier.disagreement.Disagreement: c_1 must be a rational written "p/q" or "p" with digits only, got '1e3'
    """
    if not isinstance(text, str) or len(text) > MAX_RATIONAL_DIGITS or not _RATIONAL.fullmatch(text):
        raise Disagreement(f'{what} must be a rational written "p/q" or "p" with digits only, got {_short(text)}')
    numerator, _, denominator = text.partition("/")
    if denominator and int(denominator) == 0:
        raise Disagreement(f"{what} has denominator 0: {text!r}")
    return Fraction(int(numerator), int(denominator) if denominator else 1)


def _is_prime(n: int) -> bool:
    """Trial division (the checker accepts primes below 2**31: at most 46341 divisions)."""
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    return all(n % d for d in range(3, math.isqrt(n) + 1, 2))


def parameter_names(widths, score_ranks, heads, bias: bool = False, ffn=None) -> list:
    """Every native parameter's name in order: per layer, per head, ``Q`` then ``K`` then ``V``, row-major.

    A block is ``Q_i`` in a one-head layer and ``Q_{i,h}`` in a layer with heads.

    Examples
    --------
    >>> parameter_names([2, 1], [1], [1])
    ['Q_1[0,0]', 'Q_1[0,1]', 'K_1[0,0]', 'K_1[0,1]', 'V_1[0,0]', 'V_1[0,1]']
    """
    return [f"{block}[{r},{c}]" for block, (rows, cols) in _blocks(widths, score_ranks, heads, bias, ffn)
            for r in range(rows) for c in range(cols)]


def _blocks(widths, score_ranks, heads, bias: bool = False, ffn=None) -> list:
    """``(block name, (rows, cols))`` in parameter order: ``Q, K`` are ``a_i x d_{i-1}``, ``V`` is ``d_i x d_{i-1}``.

    With ``bias``, each head's ``Q, K, V`` are followed by its bias columns
    ``bQ, bK, bV``; with ``ffn`` (hidden units per layer, ``None`` or 0 for
    none), a layer's heads are followed by its feed-forward block ``Win``
    (``M x d_i``), ``Wout`` (``d_i x M``) and, with ``bias``, ``bin``, ``bout``.

    Examples
    --------
    >>> [name for name, _ in _blocks([2, 2], [1], [1], bias=True, ffn=[3])]
    ['Q_1', 'K_1', 'V_1', 'bQ_1', 'bK_1', 'bV_1', 'Win_1', 'Wout_1', 'bin_1', 'bout_1']
    """
    out = []
    for i in range(1, len(widths)):
        for h in range(1, heads[i - 1] + 1):
            suffix = f"{i}" if heads[i - 1] == 1 else f"{{{i},{h}}}"
            a, d_in, d_out = score_ranks[i - 1], widths[i - 1], widths[i]
            shapes = {"Q": (a, d_in), "K": (a, d_in), "V": (d_out, d_in), "bQ": (a, 1), "bK": (a, 1), "bV": (d_out, 1)}
            out += [(f"{name}_{suffix}", shapes[name]) for name in ("Q", "K", "V")]
            if bias:
                out += [(f"{name}_{suffix}", shapes[name]) for name in ("bQ", "bK", "bV")]
        hidden = ffn[i - 1] if ffn else 0
        if hidden:
            d = widths[i]
            out += [(f"Win_{i}", (hidden, d)), (f"Wout_{i}", (d, hidden))]
            if bias:
                out += [(f"bin_{i}", (hidden, 1)), (f"bout_{i}", (d, 1))]
    return out


def _cert_blocks(cert) -> list:
    """:func:`_blocks` of a read certificate."""
    return _blocks(cert.widths, cert.score_ranks, cert.heads, cert.bias, cert.ffn)


@dataclass
class _Certificate:
    """The validated fields."""

    widths: list
    score_ranks: list
    tokens: int
    heads: list
    causal: bool
    residual: bool
    normalizers: list = field(default_factory=list)
    powers: dict = field(default_factory=dict)
    input_power: int = 0
    prime: int = 0
    truncation: int = 0
    point: dict = field(default_factory=dict)
    bank: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    columns: list = field(default_factory=list)
    valuations: list = field(default_factory=list)
    rank: int = 0
    claim: str = ""
    bias: bool = False
    ffn: list | None = None  # hidden units of each layer's feed-forward block (0: none)
    activations: list = field(default_factory=list)
    # an integer-score certificate: {"base": residue of e, "scores": per head of layer 1, the exact integer
    # scores of every bank input (object arrays (bank, t, t))}; None otherwise
    integer_scores: dict | None = None
    # the architecture's names of the normalizers (None when it gives none), bound to the normalizers' entries
    normalizer_names: list | None = None
    # the certificate's words the checker did not check, and the functions taken as given by their coefficients
    unchecked: list = field(default_factory=list)
    as_given: list = field(default_factory=list)


def _read_architecture(document: dict, checked: list) -> _Certificate:
    arch = _field(document, "architecture")
    if not isinstance(arch, dict):
        raise Disagreement(f"architecture must be an object, got {_short(arch)}")
    widths = _list(_field(arch, "widths", "architecture"), "architecture.widths")
    if len(widths) < 2:
        raise Disagreement(f"architecture.widths must list d_0, ..., d_l (at least two), got {_short(widths)}")
    widths = [_integer(w, f"architecture.widths[{n}]", 1, 10_000) for n, w in enumerate(widths)]
    layers = len(widths) - 1
    ranks = [_integer(a, f"architecture.score_ranks[{n}]", 1, 10_000)
             for n, a in enumerate(_list(_field(arch, "score_ranks", "architecture"), "architecture.score_ranks",
                                         layers))]
    tokens = _integer(_field(arch, "tokens", "architecture"), "architecture.tokens", 1, 10_000)
    heads = [_integer(h, f"architecture.heads[{n}]", 1, 1000)
             for n, h in enumerate(_list(_field(arch, "heads", "architecture"), "architecture.heads", layers))]
    causal = _boolean(_field(arch, "causal", "architecture"), "architecture.causal")
    residual = _boolean(_field(arch, "residual", "architecture"), "architecture.residual")
    if residual and len(set(widths)) != 1:
        raise Disagreement(f"a residual stream needs equal widths, got architecture.widths {widths}")
    for key in arch:
        if key not in ("widths", "score_ranks", "tokens", "heads", "causal", "residual", "normalizers", "bias",
                       "ffn"):
            raise Disagreement(f"architecture.{key}: this checker knows no such component (it checks widths, "
                               "score ranks, tokens, heads, a causal mask, a residual stream, biases and "
                               "feed-forward blocks)")
    bias = _boolean(arch.get("bias", False), "architecture.bias")
    names = arch.get("normalizers")
    if names is not None:
        names = _list(names, "architecture.normalizers", layers)
        for n, name in enumerate(names):
            if not isinstance(name, str) or len(name) > 2000:
                raise Disagreement(f"architecture.normalizers[{n}] must be a normalizer's name (text of at most "
                                   f"2000 characters), got {_short(name)}")
    ffn = arch.get("ffn")
    if ffn is not None:
        ffn = [_integer(m, f"architecture.ffn[{n}]", 0, 10_000)
               for n, m in enumerate(_list(ffn, "architecture.ffn", layers))]
        if not any(ffn):
            ffn = None
    checked.append(f"architecture: widths {widths}, score ranks {ranks}, {tokens} tokens, heads {heads}"
                   + (", causal mask" if causal else "") + (", residual stream" if residual else "")
                   + (", biases" if bias else "") + (f", feed-forward blocks of {ffn} hidden units" if ffn else ""))
    return _Certificate(widths, ranks, tokens, heads, causal, residual, bias=bias, ffn=ffn, normalizer_names=names)


def _read_field_data(document: dict, cert: _Certificate, checked: list) -> None:
    prime = _integer(_field(document, "prime"), "prime", 2)
    if prime >= MAX_PRIME or not _is_prime(prime):
        raise Disagreement(f"prime {prime} is not a prime below 2**31")
    cert.prime = prime
    cert.truncation = _integer(_field(document, "truncation"), "truncation", 1, 100_000)
    checked.append(f"prime {prime} is prime; truncation eps^{cert.truncation}")
    _spend_for(document, cert)


def _spend_for(document: dict, cert: _Certificate) -> None:
    """The limits checked from the header, before any arithmetic: the sizes as the document gives them."""
    def length(value) -> int:
        return len(value) if isinstance(value, (list, dict)) else 0

    blocks = _cert_blocks(cert)
    parameters = sum(rows * cols for _, (rows, cols) in blocks)
    witness = document.get("witness")
    columns = length(witness.get("columns")) if isinstance(witness, dict) else 0
    if document.get("kind") in (ORDERS_KIND, OBSERVE_KIND, "spectrum"):
        columns = parameters          # block by block, up to every parameter; the gauge check's tangents
    bank = document.get("bank")
    inputs = max(1, length(bank))
    degree = 1
    for key in ("normalizers", "activations"):
        entries = document.get(key)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict):
                count = length(entry.get("taylor"))
                degree = max(degree, count if entry.get("polynomial") is True else min(count, cert.truncation + 1))
    _spend(cert.widths, cert.tokens, cert.heads, cert.ffn, inputs, min(columns, parameters), cert.truncation,
           degree)


def _read_taylor(entry: dict, where: str, cert: _Certificate, polynomial: bool) -> list:
    """The rationals of ``entry["taylor"]``: ``c_0 .. c_N`` (all of a polynomial's), denominators prime to ``p``."""
    p, N = cert.prime, cert.truncation
    given = _list(_field(entry, "taylor", where), f"{where}.taylor")
    if not polynomial:
        if len(given) < N + 1:
            raise Disagreement(f"{where}.taylor has {len(given)} coefficients; truncation eps^{N} needs "
                               f"c_0 .. c_{N} ({N + 1})")
        given = given[:N + 1]           # the rest do not enter a series mod eps^N: not read
    taylor = [rational(c, f"{where}.taylor[{n}]") for n, c in enumerate(given)]
    bad = [str(c) for c in taylor if c.denominator % p == 0]
    if bad:
        raise Disagreement(f"{where}.taylor has {bad[0]}, whose denominator is divisible by the prime {p}")
    return taylor


def _bind(entry: dict, where: str, what: str, layer: int, taylor: list, residues: list, polynomial: bool,
          cert: _Certificate, normalized: bool) -> tuple:
    """Bind a function's name and expression to the coefficients the checker uses: ``(words, exponential)``.

    Each of a preset name (the checker's own table), the expression and a
    name that is itself an expression is recomputed mod ``p``
    (:func:`~symattn.verifier.taylor.taylor_residues`) and must give the
    certificate's coefficients, else a :class:`Disagreement`.  What cannot be
    recomputed goes to ``cert.unchecked``; when nothing can, the function is
    taken as given by its coefficients (``cert.as_given``), and the
    conclusion says so.  ``exponential``: bound to ``exp(x)`` itself.
    """
    p = cert.prime
    name, expression = entry.get("name"), entry.get("expression")
    if not isinstance(name, str) or len(name) > 2000:
        raise Disagreement(f"{where}.name must be text of at most 2000 characters, got {_short(name)}")
    if expression is not None and (not isinstance(expression, str) or len(expression) > 2000):
        raise Disagreement(f"{where}.expression must be text of at most 2000 characters or null, got "
                           f"{_short(expression)}")
    preset = preset_expression(name)
    candidates = []
    if preset is not None:
        candidates.append((f"its name {_short(name)} (the preset {preset})", preset, True))
    elif name.strip() and name != expression:
        candidates.append((f"its name {_short(name)}", name, False))
    if expression is not None:
        candidates.append((f"its expression {_short(expression)}", expression, False))
    bound, labels = [], []
    for label, text, is_preset in candidates:
        try:
            recomputed = taylor_residues(text, max(1, len(residues)), p, normalized=normalized, polynomial=polynomial)
        except NotRecomputable as why:
            if is_preset:
                raise Disagreement(f"{where}: {label} cannot have the certificate's coefficients: {why}") from None
            if text is name:
                labels.append(text)       # a name that is no expression: a label, it says nothing of the function
            cert.unchecked.append(f"layer {layer}'s {what}: {label} is not checked (the checker cannot recompute "
                                  f"it: {_one_line(why, 120)})")
            continue
        size = max(len(recomputed), len(residues))
        mine, theirs = recomputed + [0] * (size - len(recomputed)), residues + [0] * (size - len(residues))
        if mine != theirs:
            n = next(n for n, (a, b) in enumerate(zip(mine, theirs)) if a != b)
            given = _short(str(taylor[n]) if n < len(taylor) else "0", 40)
            raise Disagreement(f"{where}: the Taylor coefficient c_{n} of {'s/s(0)' if normalized else 's'} for "
                               f"{label} is {mine[n]} mod {p}, the certificate's taylor[{n}] = {given} is "
                               f"{theirs[n]} mod {p}")
        bound.append(label)
    # exp itself, for the properties of the function beyond its coefficients (a shift of one query's scores, e^m
    # at integer scores): every name (but a mere label) and expression must be exp(x), and one of them recomputed
    exponential = bool(bound) and not polynomial and all(is_exponential(text) for _, text, _ in candidates
                                                         if text not in labels)
    if bound:
        return f"coefficients recomputed by the checker mod {p} from {' and '.join(bound)}: they agree", exponential
    cert.as_given.append(f"layer {layer}'s {what}")
    return f"taken as given by its {len(residues)} Taylor coefficients (its name and expression not checked)", False


def _read_normalizers(document: dict, cert: _Certificate, checked: list) -> None:
    layers = len(cert.widths) - 1
    p = cert.prime
    entries = _list(_field(document, "normalizers"), "normalizers", layers)
    for i, entry in enumerate(entries, start=1):
        where = f"normalizers[{i - 1}]"
        if not isinstance(entry, dict):
            raise Disagreement(f"{where} must be an object, got {_short(entry)}")
        name = _field(entry, "name", where)
        if cert.normalizer_names is not None and cert.normalizer_names[i - 1] != name:
            raise Disagreement(f"{where}.name is {_short(name)}, but architecture.normalizers[{i - 1}] is "
                               f"{_short(cert.normalizer_names[i - 1])}: one network has one normalizer per layer")
        lightning = _boolean(_field(entry, "lightning", where), f"{where}.lightning")
        polynomial = _boolean(_field(entry, "polynomial", where), f"{where}.polynomial")
        if lightning != (isinstance(name, str) and name.strip().lower() == "lightning"):
            raise Disagreement(f"{where}: lightning is {str(lightning).lower()} but the name is {_short(name)}: "
                               "lightning attention S(A) = A is named 'lightning', and only it")
        if lightning:
            cert.normalizers.append({"lightning": True, "taylor": [], "polynomial": True})
            checked.append(f"layer {i}: lightning attention S(A) = A")
            continue
        taylor = _read_taylor(entry, where, cert, polynomial)
        if not taylor or taylor[0] != 1:
            raise Disagreement(f"{where}.taylor must start with c_0 = 1 (the coefficients of s(x)/s(0)), "
                               f"got {[str(c) for c in taylor[:3]]}")
        residues = [c.numerator * pow(c.denominator, p - 2, p) % p for c in taylor]
        words, exponential = _bind(entry, where, "normalizer", i, taylor, residues, polynomial, cert,
                                   normalized=True)
        # softmax, its coefficients recomputed from exp(x): its weights do not change when every score of one
        # query moves by the same number (the observability certificate's upper bound with biases)
        cert.normalizers.append({"lightning": False, "polynomial": polynomial, "shift_invariant": exponential,
                                 "exp": exponential, "taylor": residues})
        checked.append(f"layer {i}: normalizer {_short(name)}: {words}" + (" (a polynomial)" if polynomial else ""))
    if cert.ffn:
        _read_activations(document, cert, checked)


def _read_activations(document: dict, cert: _Certificate, checked: list) -> None:
    """The activation of each feed-forward block: the Taylor coefficients of ``s`` itself (``s(0)`` may be 0)."""
    p = cert.prime
    entries = _list(_field(document, "activations"), "activations", len(cert.widths) - 1)
    for i, entry in enumerate(entries, start=1):
        where = f"activations[{i - 1}]"
        if not cert.ffn[i - 1]:
            if entry is not None:
                raise Disagreement(f"{where} must be null: layer {i} has no feed-forward block")
            cert.activations.append(None)
            continue
        if not isinstance(entry, dict):
            raise Disagreement(f"{where} must be an object, got {_short(entry)}")
        polynomial = _boolean(_field(entry, "polynomial", where), f"{where}.polynomial")
        taylor = _read_taylor(entry, where, cert, polynomial)
        if not taylor:
            raise Disagreement(f"{where}.taylor is empty")
        residues = [c.numerator * pow(c.denominator, p - 2, p) % p for c in taylor]
        words, _ = _bind(entry, where, "activation", i, taylor, residues, polynomial, cert, normalized=False)
        cert.activations.append({"polynomial": polynomial, "taylor": residues})
        checked.append(f"layer {i}: activation {_short(_field(entry, 'name', where))}: {words}"
                       + (" (a polynomial)" if polynomial else ""))


def _read_curve(document: dict, cert: _Certificate, checked: list) -> None:
    curve = _field(document, "curve")
    if not isinstance(curve, dict):
        raise Disagreement(f"curve must be an object, got {_short(curve)}")
    cert.input_power = _integer(_field(curve, "input_power", "curve"), "curve.input_power", 0, 1000)
    powers = _field(curve, "powers", "curve")
    if not isinstance(powers, dict):
        raise Disagreement(f"curve.powers must be an object {{block: power of eps}}, got {_short(powers)}")
    blocks = [name for name, _ in _cert_blocks(cert)]
    if sorted(powers) != sorted(blocks):
        raise Disagreement(f"curve.powers must name every block {blocks}, got {sorted(powers)}")
    cert.powers = {name: _integer(powers[name], f"curve.powers[{name!r}]", 0, 1000) for name in blocks}
    scaled = [name for name in blocks if cert.powers[name]]
    checked.append("curve: " + (", ".join(f"{name} = eps^{cert.powers[name]} {name}~" for name in scaled)
                                if scaled else "a point (no block scaled)")
                   + (f", input eps^{cert.input_power} X" if cert.input_power else ""))


def _read_point_and_bank(document: dict, cert: _Certificate, checked: list) -> None:
    point = _field(document, "point")
    if not isinstance(point, dict):
        raise Disagreement(f"point must be an object {{block: matrix}}, got {_short(point)}")
    shapes = dict(_cert_blocks(cert))
    if sorted(point) != sorted(shapes):
        raise Disagreement(f"point must give every block {list(shapes)}, got {sorted(point)}")
    for name, (rows, cols) in shapes.items():
        matrix = _list(point[name], f"point[{name!r}]", rows)
        cert.point[name] = [[_integer(v, f"point[{name!r}][{r}][{c}]")
                             for c, v in enumerate(_list(row, f"point[{name!r}][{r}]", cols))]
                            for r, row in enumerate(matrix)]
    d0, t = cert.widths[0], cert.tokens
    bank = _list(_field(document, "bank"), "bank")
    if not bank:
        raise Disagreement("bank must hold at least one input")
    for b, X in enumerate(bank):
        rows = _list(X, f"bank[{b}]", d0)
        cert.bank.append([[_integer(v, f"bank[{b}][{r}][{c}]") for c, v in enumerate(_list(row, f"bank[{b}][{r}]", t))]
                          for r, row in enumerate(rows)])
    checked.append(f"integer point (every block of {len(shapes)}) and bank of {len(bank)} integer inputs "
                   f"{d0} x {t}")


def _read_integer_scores(document: dict, cert: _Certificate, checked: list, kind: str) -> None:
    """The optional field ``integer_scores`` of a dimension certificate: layer 1 at exact integer scores.

    ``{"layer": 1, "base": b, "reason": "..."}``: layer 1's queries, keys and
    the inputs are integers, so every layer-1 score is an integer
    ``m = <K x_j, Q x_k>``, computed here exactly (Python integers), and
    ``s(m)/s(0) = e^m`` for ``s = exp``.  ``e`` is transcendental (Hermite),
    so ``Z[e, 1/e]`` is a ring of Laurent polynomials in ``e`` and sending
    ``e`` to any unit ``b`` mod ``p`` is a ring homomorphism ``Z[e, 1/e] -> GF(p)``:
    the checker computes the image of every entry of the Jacobian under it.
    """
    if "integer_scores" not in document:
        return
    entry = document["integer_scores"]
    if kind != "dimension lower bound":
        raise Disagreement(f"integer_scores: a {kind!r} certificate has no integer scores (only a dimension "
                           "certificate evaluates layer 1 at integer scores)")
    if not isinstance(entry, dict):
        raise Disagreement(f"integer_scores must be an object {{layer, base, reason}}, got {_short(entry)}")
    for key in entry:
        if key not in ("layer", "base", "reason"):
            raise Disagreement(f"integer_scores.{key}: this checker reads layer, base and reason")
    layer = _integer(_field(entry, "layer", "integer_scores"), "integer_scores.layer", 1)
    if layer != 1:
        raise Disagreement(f"integer_scores.layer must be 1, got {layer}: this checker evaluates integer scores at "
                           "layer 1 only (every later layer's scores must vanish at eps = 0)")
    p = cert.prime
    base = _integer(_field(entry, "base", "integer_scores"), "integer_scores.base", 1, p - 1)   # a unit mod p
    first = cert.normalizers[0]
    expression = document["normalizers"][0].get("expression")
    if first["lightning"] or not first.get("exp"):
        raise Disagreement(f"integer_scores: layer 1's normalizer must be exp(x) (softmax), its Taylor "
                           f"coefficients recomputed by this checker, got {_short(document['normalizers'][0].get('name'))}"
                           f" with expression {_short(expression)}: only there is s(m)/s(0) = e^m a power of e")
    if cert.bias:
        raise Disagreement("integer_scores: a network with biases has scores <K x_j + b_K, Q x_k + b_Q>; this "
                           "checker evaluates integer scores without biases only")
    heads = cert.heads[0]
    suffixes = ["1"] if heads == 1 else [f"{{1,{h}}}" for h in range(1, heads + 1)]
    scaled = [f"{name}_{s}" for s in suffixes for name in ("Q", "K") if cert.powers[f"{name}_{s}"]]
    if scaled or cert.input_power:
        raise Disagreement(f"integer_scores: layer 1's queries and keys and the inputs must not be scaled by the "
                           f"curve (power 0), so that the scores at eps = 0 are the integers <K x_j, Q x_k>; got "
                           f"{', '.join(f'{n} = eps^{cert.powers[n]}' for n in scaled) or 'no block'} and input "
                           f"power {cert.input_power}")
    # the exact scores m_jk = <K x_j, Q x_k> of every input and head, Python integers
    scores = [integer_scores(cert.point[f"Q_{s}"], cert.point[f"K_{s}"], cert.bank) for s in suffixes]
    largest = max(abs(int(m)) for matrix in scores for m in matrix.flat)
    # |m| < p/2: the residue of each score determines it (the exported scripts read m from it)
    if 2 * largest >= p:
        raise Disagreement(f"integer_scores: a layer-1 score is {largest} in absolute value, not below p/2 = "
                           f"{p / 2}")
    cert.integer_scores = {"base": base, "scores": scores}
    checked.append(f"layer 1 at integer scores: s(m)/s(0) = e^m with e sent to {base}, e transcendental "
                   f"(Hermite), a ring homomorphism Z[e, 1/e] -> GF({p}); the exact scores m = <K x_j, Q x_k> "
                   f"of the {len(cert.bank)} inputs computed here, |m| <= {largest} < p/2")


def _read_parameters(document: dict, cert: _Certificate) -> list:
    """The parameter names, which must be the architecture's in the checker's own order."""
    names = parameter_names(cert.widths, cert.score_ranks, cert.heads, cert.bias, cert.ffn)
    given = _list(_field(document, "parameters"), "parameters")
    if given != names:
        first = next((n for n, (a, b) in enumerate(zip(given, names)) if a != b), min(len(given), len(names)))
        raise Disagreement(f"parameters: entry {first} is {_short(given[first]) if first < len(given) else 'missing'}"
                           f", expected {names[first] if first < len(names) else 'nothing'} (the order is per "
                           "layer, per head, Q, K, V, row-major)")
    return names


def _read_witness(document: dict, cert: _Certificate, checked: list) -> None:
    names = _read_parameters(document, cert)
    cert.rank = _integer(_field(document, "rank"), "rank", 0)
    witness = _field(document, "witness")
    if not isinstance(witness, dict):
        raise Disagreement(f"witness must be an object, got {_short(witness)}")
    rows = _list(_field(witness, "rows", "witness"), "witness.rows")
    columns = _list(_field(witness, "columns", "witness"), "witness.columns")
    found = _list(_field(witness, "valuations", "witness"), "witness.valuations")
    if not len(rows) == len(columns) == len(found):
        raise Disagreement(f"the witness must have as many rows, columns and valuations; got {len(rows)} rows, "
                           f"{len(columns)} columns, {len(found)} valuations")
    if cert.rank != len(rows):
        raise Disagreement(f"the certificate claims rank {cert.rank} but its witness is a {len(rows)} x "
                           f"{len(rows)} minor")
    d_l, t = cert.widths[-1], cert.tokens
    for n, row in enumerate(rows):
        row = _list(row, f"witness.rows[{n}]", 3)
        cert.rows.append((_integer(row[0], f"witness.rows[{n}] input index", 0, len(cert.bank) - 1),
                          _integer(row[1], f"witness.rows[{n}] output row", 0, d_l - 1),
                          _integer(row[2], f"witness.rows[{n}] output token", 0, t - 1)))
    if len(set(cert.rows)) != len(cert.rows):
        raise Disagreement("witness.rows repeats a row: a minor needs distinct rows")
    known = set(names)
    for n, name in enumerate(columns):
        if name not in known:
            raise Disagreement(f"witness.columns[{n}] = {_short(name)} is not a parameter of the architecture "
                               f"(e.g. {names[0]})")
    if len(set(columns)) != len(columns):
        raise Disagreement("witness.columns repeats a parameter: a minor needs distinct columns")
    cert.columns = list(columns)
    cert.valuations = [_integer(v, f"witness.valuations[{n}]", 0) for n, v in enumerate(found)]
    too_deep = [v for v in cert.valuations if v >= cert.truncation]
    if too_deep:
        raise Disagreement(f"a pivot valuation {too_deep[0]} is not below the truncation eps^{cert.truncation}: "
                           "it is not resolved")
    checked.append(f"witness: {len(rows)} distinct rows (input, output row, token) in range and {len(columns)} "
                   f"distinct parameters; claimed pivot valuations all below eps^{cert.truncation}")


# -- the computation ----------------------------------------------------------------------------
def _jet_block(values, power: int, directions: dict, J: int, N: int, p: int, native: bool = False) -> np.ndarray:
    """A parameter block on the curve as a jet: value ``eps^power B``, tangent in its witness directions.

    The derivative is in the curve's coordinate ``B`` (``d/dB (eps^power B) = eps^power``), or with
    ``native`` in the native parameter ``W = eps^power B`` itself (``dW/dW = 1``, at ``eps^0``);
    ``directions`` maps an entry ``(row, col)`` to its jet index (``1 .. J-1``).
    """
    rows, cols = len(values), len(values[0])
    block = np.zeros((rows, cols, J, N), dtype=np.int64)
    if power < N:
        block[:, :, 0, power] = np.array(values, dtype=object) % p
    tangent_power = 0 if native else power
    if tangent_power < N:
        for (r, c), k in directions.items():
            block[r, c, k, tangent_power] = 1
    return block


def _minor(cert: _Certificate, native: bool = False) -> np.ndarray:
    """The witness minor ``(r, r, N)``: row ``(b, i, j)``, column ``k``: ``d F(X_b)_ij / d (column k)`` mod ``(p, eps^N)``.

    The columns are derivatives in the curve's coordinates, or with ``native`` in the native parameters.
    """
    return _jacobian_entries(cert, cert.rows, cert.columns, native)


def _jacobian_entries(cert: _Certificate, rows: list, columns: list, native: bool = False) -> np.ndarray:
    """``(len(rows), len(columns), N)``: ``d F(X_b)_ij / d (column)`` mod ``(p, eps^N)`` for rows ``(b, i, j)``.

    The columns are parameter names (distinct); derivatives in the curve's
    coordinates, or with ``native`` in the native parameters.  A score that
    does not vanish at ``eps = 0`` or a column sum that is 0 mod ``p`` is a
    :class:`Disagreement` (the forward pass is not defined there).
    """
    p, N, r = cert.prime, cert.truncation, len(columns)
    names = parameter_names(cert.widths, cert.score_ranks, cert.heads, cert.bias, cert.ffn)
    order = {name: n for n, name in enumerate(names)}
    # jet k = 1, 2, ... numbers the witness columns in parameter order, which is the order the forward
    # pass meets them: each block carries only the directions met up to it (arithmetic.widen)
    jet = {name: k for k, name in enumerate(sorted(columns, key=order.__getitem__), start=1)}
    directions: dict = {}
    for name in columns:
        block, _, entry = name.partition("[")
        row, col = (int(v) for v in entry.rstrip("]").split(","))
        directions.setdefault(block, {})[(row, col)] = jet[name]
    blocks, met = {}, 0
    for name, _ in _cert_blocks(cert):
        met += len(directions.get(name, {}))
        blocks[name] = _jet_block(cert.point[name], cert.powers[name], directions.get(name, {}), 1 + met, N, p,
                                  native)
    layers, ffns = [], []
    head_blocks = ("Q", "K", "V", "bQ", "bK", "bV") if cert.bias else ("Q", "K", "V")
    for i in range(1, len(cert.widths)):
        heads = []
        for h in range(1, cert.heads[i - 1] + 1):
            suffix = f"{i}" if cert.heads[i - 1] == 1 else f"{{{i},{h}}}"
            heads.append(tuple(blocks[f"{name}_{suffix}"] for name in head_blocks))
        layers.append(heads)
        hidden = cert.ffn[i - 1] if cert.ffn else 0
        ffn_blocks = ("Win", "Wout", "bin", "bout") if cert.bias else ("Win", "Wout")
        ffns.append(tuple(blocks[f"{name}_{i}"] for name in ffn_blocks) if hidden else None)
    used = sorted({row[0] for row in rows})                       # only the inputs the rows read
    X = np.zeros((len(used), cert.widths[0], cert.tokens, 1, N), dtype=np.int64)
    if cert.input_power < N:
        # eps^m X_b: no tangent (the inputs are data, not parameters)
        X[..., 0, cert.input_power] = np.array([cert.bank[b] for b in used], dtype=object) % p
    normalizers = list(cert.normalizers)
    if cert.integer_scores is not None:
        # layer 1 at its exact integer scores m: s(A) = e^m s(A - m), e sent to base (the read inputs only)
        normalizers[0] = {**normalizers[0], "integer_scores": {
            "base": cert.integer_scores["base"], "inputs": used,
            "scores": [scores[used] for scores in cert.integer_scores["scores"]]}}
    output = widen(_forward(cert, X, layers, ffns, normalizers), 1 + r)
    position = {b: n for n, b in enumerate(used)}
    inputs = [position[b] for b, _, _ in rows]
    out_rows = [i for _, i, _ in rows]
    tokens = [j for _, _, j in rows]
    # entry[n, k] = d F(X_b)_ij / d (column k), for row n = (b, i, j)
    return output[inputs, out_rows, tokens][:, [jet[name] for name in columns], :]


def _forward(cert: _Certificate, X: np.ndarray, layers: list, ffns: list, normalizers: list | None = None) -> np.ndarray:
    """:func:`~symattn.verifier.network.forward` on the certificate's network; its failures are a :class:`Disagreement`.

    ``normalizers``: the certificate's, unless given (layer 1 at its integer scores).
    """
    p = cert.prime
    try:
        return forward(X, layers, cert.normalizers if normalizers is None else normalizers, cert.causal,
                       cert.residual, p, ffns, cert.activations)
    except ScoresDoNotVanish as err:
        raise Disagreement(str(err)) from None
    except ZeroDivisionError:
        raise Disagreement(f"a column sum of s(A) is 0 mod {p} at eps = 0: the weights are not defined mod p at "
                           "this point") from None


def _require_claim(document: dict, claim: str) -> None:
    """The certificate's ``claim`` must be the sentence the checker wrote from its own reading."""
    if document.get("claim") != claim:
        raise Disagreement(f"claim {_short(document.get('claim'), 200)} does not say {claim!r}")


_JSON_TYPES = {type(None): "a JSON null", list: "a JSON array", str: "a JSON string", bool: "a JSON boolean",
               int: "a JSON number", float: "a JSON number"}


def _load(source, max_memory: int | None = None) -> dict:
    """The certificate as a dict: a :class:`~pathlib.Path` (always a file), a str (a file, or JSON text when it starts with ``{`` or ``[``), or a dict.

    A file must be a regular file of bounded size in UTF-8
    (:func:`~symattn.verifier.limits.read_certificate_text`); anything that
    is not a JSON object is a :class:`CertificateError`.
    """
    if isinstance(source, dict):
        document = source
    else:
        if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
            try:
                text = read_certificate_text(source, max_memory)
            except TooLarge as err:
                raise CertificateTooLarge(_one_line(err)) from None
            except ValueError as err:
                raise CertificateError(_one_line(err)) from None
        elif isinstance(source, str):
            text = source
        else:
            raise CertificateError(f"give a path, a JSON text or a dict, got {type(source).__name__}")
        try:
            document = parse_json(text)
        except ValueError as err:
            raise CertificateError(_one_line(err)) from None
    if not isinstance(document, dict):
        raise CertificateError(f"the certificate is {_JSON_TYPES.get(type(document), type(document).__name__)}, "
                               "not an object")
    return document


# The limits of the check that is running: {"memory": bytes or None, "operations": limit or None, "spent": n}.
_LIMITS: contextvars.ContextVar = contextvars.ContextVar("symattn_verifier_limits", default=None)


def _spend(widths, tokens, heads, ffn, inputs: int, columns: int, truncation: int, degree: int) -> None:
    """Refuse (:class:`~symattn.verifier.limits.TooLarge`) a computation past the limits, before it starts.

    The work of every computation of one check (a bundle's parts, a claims
    certificate's formulas) adds up against the one limit.
    """
    limits = _LIMITS.get() or {"memory": None, "operations": None, "spent": 0}
    cost = certificate_cost(widths, tokens, heads, ffn, inputs, columns, truncation, degree)
    check_cost(cost, limits["memory"], limits["operations"])
    limits["spent"] += cost.operations
    total = type(cost)(cost.bytes, limits["spent"], cost.largest)
    check_cost(total, limits["memory"], limits["operations"])


def verify(source, *, max_memory: int | None = None, max_operations: int | None = None) -> VerificationReport:
    """Check a certificate (a path, its JSON text starting with ``{``, or the parsed dict).

    Every field is validated; then the witness minor of the Jacobian is
    recomputed over ``GF(p)[eps]/(eps^N)`` at the certificate's integer point
    and bank by this package's own forward pass, its pivot valuations found by
    least-valuation full pivoting, and compared with the claimed ones.

    * A dimension certificate (kind ``"dimension lower bound"``): the minor is
      in the curve's coordinates; all ``r`` pivots below ``eps^N`` prove it
      nonzero over ``Q[[eps]]``: the real Jacobian has rank ``>= r`` at points
      of the curve with small ``eps != 0``, so the function space has
      dimension ``>= r``.  With ``integer_scores`` layer 1 is at its exact
      integer scores ``m`` (computed here), its weights ``e^m exp(A - m)``
      with ``e`` sent to the residue ``base``: a ring homomorphism, since
      ``e`` is transcendental, so the minor is nonzero over ``Q(e)[[eps]]``.
    * A spectrum certificate (kind ``"spectrum"``): the minor is in the native
      parameters, and its pivot valuations must be the claimed exponents;
      what that proves is in :mod:`symattn.verifier.spectrum`.  A stronger
      check, reported apart and never failing the certificate, compares the
      rank with the gauge orbit's tangents: ``kernel`` when they decide it.
    * An identification-orders certificate (:mod:`symattn.verifier.orders`),
      an observability certificate (kind ``"observability"``,
      :mod:`symattn.verifier.observe`: the point on the collapsed set, each
      block's witness minor in the native parameters, or its columns found 0
      on the whole bank), and bundles (kind ``"identify"``) of parts.

    Every normalizer is bound to the numbers the checker uses: its
    coefficients are recomputed from its preset name or its expression
    (:mod:`symattn.verifier.taylor`); what cannot be recomputed is reported
    in ``unchecked`` and the conclusion says the verdict holds for the
    coefficients as given.  Before any arithmetic the memory and work are
    estimated from the header (:mod:`symattn.verifier.limits`) and refused
    past the limits.

    Parameters
    ----------
    source : path, str or dict
        A :class:`~pathlib.Path` is always read as a file (a regular file of
        bounded size, UTF-8); a str starting with ``{`` or ``[`` is JSON
        text, any other str a file name (``symattn verify FILE`` always
        passes a Path).
    max_memory : int, optional
        Bytes; default ``$SYMATTN_MAX_MEMORY``, else half the machine.
    max_operations : int, optional
        Multiply-adds; default :data:`symattn.verifier.limits.MAX_OPERATIONS`.

    Returns
    -------
    VerificationReport
        ``verified`` with what was checked, or the first disagreement.

    Raises
    ------
    CertificateError
        When the input is not a certificate at all (not a regular file, not
        UTF-8, not JSON, not a JSON object); :class:`CertificateTooLarge`
        when checking it would pass the limits.
    OSError
        When the path cannot be read.

    Examples
    --------
    >>> report = verify({"schema": "symattn-certificate", "version": 99})
    >>> report.verified, report.problem
    (False, 'version 99 of symattn-certificate: this checker reads version 1')
    >>> verify({"schema": "symattn-certificate", "version": True}).problem
    'version true of symattn-certificate: this checker reads version 1'
    """
    started = time.perf_counter()
    document = _load(source, max_memory)
    outer = _LIMITS.get()
    token = None
    if outer is None or max_memory is not None or max_operations is not None:
        token = _LIMITS.set({"memory": max_memory if max_memory is not None else (outer or {}).get("memory"),
                             "operations": max_operations if max_operations is not None
                             else (outer or {}).get("operations"), "spent": 0})
    try:
        return _verify_document(document, started)
    except TooLarge as err:
        raise CertificateTooLarge(_one_line(err)) from None
    except (TypeError, KeyError, IndexError, AttributeError, ValueError, OverflowError, ZeroDivisionError,
            RecursionError) as err:
        if isinstance(err, CertificateError):
            raise
        # a shape of input no reader expected: not verified, said in one line (never a traceback)
        return VerificationReport(False, "", (), f"the checker could not read the certificate: "
                                  f"{type(err).__name__}: {_one_line(err, 200)}",
                                  seconds=time.perf_counter() - started)
    finally:
        if token is not None:
            _LIMITS.reset(token)


def _verify_document(document: dict, started: float) -> VerificationReport:
    """:func:`verify` on a parsed object, within the limits set."""
    checked: list = []
    claim = ""
    try:
        if document.get("schema") != SCHEMA:
            raise Disagreement(f"schema is {_short(document.get('schema'))}, expected {SCHEMA!r}")
        version = document.get("version")
        if type(version) is not int or version != VERSION:
            raise Disagreement(f"version {_short(version)} of {SCHEMA}: this checker reads version {VERSION}")
        kind = document.get("kind")
        if kind not in KINDS:
            raise Disagreement(f"kind {_short(kind)}: this checker checks " + ", ".join(map(repr, KINDS[:-1]))
                               + f" and {KINDS[-1]!r}")
        if kind == "identify":
            return _verify_parts(document, started)
        if kind == CLAIMS_KIND:
            return _verify_claims(document, started)
        cert = _read_architecture(document, checked)
        _read_field_data(document, cert, checked)
        _read_normalizers(document, cert, checked)
        _read_curve(document, cert, checked)
        _read_point_and_bank(document, cert, checked)
        _read_integer_scores(document, cert, checked, kind)
        if kind == ORDERS_KIND:
            return _verify_orders(document, cert, checked, started)
        if kind == OBSERVE_KIND:
            return _verify_observe(document, cert, checked, started)
        _read_witness(document, cert, checked)
        if kind == "spectrum":
            exponents = read_exponents(document, cert.rank, cert.valuations, checked)
            claim = spectrum_claim(cert.rank, exponents, cert.prime)
        else:
            claim = f"the dimension of the function space of this architecture is at least {cert.rank}"
        _require_claim(document, claim)
        minor = _minor(cert, native=kind == "spectrum")
        found = pivot_valuations(minor, cert.prime)
        coordinates = "native parameters" if kind == "spectrum" else "curve's coordinates"
        checked.append(f"recomputed the {cert.rank} x {cert.rank} witness minor of the Jacobian mod "
                       f"({cert.prime}, eps^{cert.truncation}) in the {coordinates}: pivot valuations "
                       f"{_histogram(found)}")
        if len(found) < cert.rank:
            raise Disagreement(f"the witness minor has only {len(found)} pivots below eps^{cert.truncation}, not "
                               f"{cert.rank}: it is singular mod ({cert.prime}, eps^{cert.truncation})")
        if sorted(found) != sorted(cert.valuations):
            raise Disagreement(f"the pivot valuations of the witness minor are {_histogram(found)}, the certificate "
                               f"claims {_histogram(cert.valuations)}")
        kernel = None
        if kind == "spectrum":
            checked.append(conclusion(cert.rank, found, cert.prime, cert.truncation))
            kernel, words = _gauge_check(cert)
            checked.append(words)
        else:
            # with integer scores the minor's entries lie in Q(e)[[eps]], and its image under e -> base is not 0
            ring = "Q(e)[[eps]]" if cert.integer_scores is not None else "Q[[eps]]"
            checked.append(f"the claimed pivot valuations agree; {cert.rank} pivots below eps^{cert.truncation}: "
                           f"the minor is nonzero over {ring}, so the rank of the real Jacobian near eps = 0 on "
                           f"the curve, and the dimension, is at least {cert.rank}")
    except Disagreement as err:
        return VerificationReport(False, claim, tuple(checked), str(err), seconds=time.perf_counter() - started)
    return VerificationReport(True, claim, tuple(checked), None, len(found), tuple(found),
                              time.perf_counter() - started, kernel, _conclusion(claim, cert), tuple(cert.unchecked))


def _conclusion(claim: str, cert: _Certificate) -> str:
    """The claim as the checker proved it: for the functions taken as given, by their coefficients, not their names."""
    if not cert.as_given:
        return claim
    return (f"{claim}, for {' and '.join(cert.as_given)} as given by its Taylor coefficients (the name and "
            "expression are not checked)")


def _verify_orders(document: dict, cert: _Certificate, checked: list, started: float) -> VerificationReport:
    """An identification-orders certificate (:mod:`symattn.verifier.orders`): each block's two witnesses."""
    names = _read_parameters(document, cert)
    d_l, t = cert.widths[-1], cert.tokens
    claims = read_orders(document, names, len(cert.bank), d_l, t, cert.truncation, checked)
    claim = orders_claim(claims)
    _require_claim(document, claim)
    check_orders(claims, lambda rows, columns: _jacobian_entries(cert, rows, columns), len(cert.bank), d_l, t,
                 cert.prime, checked)
    return VerificationReport(True, claim, tuple(checked), None, seconds=time.perf_counter() - started,
                              conclusion=_conclusion(claim, cert), unchecked=tuple(cert.unchecked))


def _verify_observe(document: dict, cert: _Certificate, checked: list, started: float) -> VerificationReport:
    """An observability certificate (:mod:`symattn.verifier.observe`): the point on the set, each block's check."""
    names = _read_parameters(document, cert)
    # X -> eps X: a bias is a constant feature of every token and scales with the input, no other block does
    scaled = {name: int(name.partition("_")[0] in ("bQ", "bK", "bV", "bin", "bout")) for name in cert.powers}
    if cert.input_power != 1 or cert.powers != scaled:
        raise Disagreement(f"an observability certificate is along the input scaling X -> eps X (input power 1, "
                           f"the biases scaled with it, no other block), got input power {cert.input_power} and "
                           f"powers {cert.powers}")
    events = read_events(document, cert.heads, checked)
    labels = list(dict.fromkeys(name.partition("[")[0] for name in names))
    check_on_set(events, cert.point, cert.bank, held_blocks(events, labels), checked)
    d_l, t = cert.widths[-1], cert.tokens
    claims = read_blocks(document, events, names, cert.widths, cert.score_ranks, len(cert.bank), t,
                         cert.truncation, checked, [z.get("shift_invariant", False) for z in cert.normalizers])
    claim = observe_claim(document["events"], claims)
    _require_claim(document, claim)
    check_observe(claims, lambda rows, columns: _jacobian_entries(cert, rows, columns, native=True),
                  len(cert.bank), d_l, t, cert.prime, cert.truncation, checked)
    return VerificationReport(True, claim, tuple(checked), None, seconds=time.perf_counter() - started,
                              conclusion=_conclusion(claim, cert), unchecked=tuple(cert.unchecked))


def _verify_parts(document: dict, started: float) -> VerificationReport:
    """A bundle (kind ``"identify"``): every certificate of ``parts`` must verify; the claims joined."""
    parts = document.get("parts")
    if not isinstance(parts, list) or not parts or not all(isinstance(part, dict) for part in parts):
        return VerificationReport(False, "", (), f"parts must be a non-empty list of certificates, got "
                                                 f"{_short(parts)}", seconds=time.perf_counter() - started)
    checked, claims, conclusions, unchecked = [], [], [], []
    for n, part in enumerate(parts):
        if part.get("kind") == "identify":
            return VerificationReport(False, "", tuple(checked), f"parts[{n}] is a bundle itself: a part is one "
                                      "certificate", seconds=time.perf_counter() - started)
        if part.get("architecture") != parts[0].get("architecture"):
            # "this architecture" in the joined claims must name one network
            return VerificationReport(False, "", tuple(checked), f"parts[{n}] is about another architecture than "
                                      "parts[0]: a bundle's parts are about one network",
                                      seconds=time.perf_counter() - started)
        report = verify(part)
        kind = part.get("kind")
        checked += [f"parts[{n}] ({_one_line(kind, 60) if isinstance(kind, str) else _short(kind)}): {item}"
                    for item in report.checked]
        if not report.verified:
            return VerificationReport(False, "; ".join(claims), tuple(checked), f"parts[{n}]: {report.problem}",
                                      seconds=time.perf_counter() - started)
        claims.append(report.claim)
        conclusions.append(report.conclusion)
        unchecked += [f"parts[{n}]: {item}" for item in report.unchecked]
    claim = "; ".join(claims)
    if document.get("claim") != claim:
        return VerificationReport(False, "", tuple(checked), f"claim {_short(document.get('claim'), 200)} is not "
                                  f"the parts' claims joined: {claim!r}", seconds=time.perf_counter() - started)
    return VerificationReport(True, claim, tuple(checked), None, seconds=time.perf_counter() - started,
                              conclusion="; ".join(conclusions), unchecked=tuple(unchecked))


def _verify_claims(document: dict, started: float) -> VerificationReport:
    """A claims certificate (:mod:`symattn.verifier.claims`): its parts, then each claim decided from them."""
    checked: list = []
    try:
        architecture = _field(document, "architecture")
        if not isinstance(architecture, dict):
            raise Disagreement(f"architecture must be an object, got {_short(architecture)}")
        layers = len(_list(_field(architecture, "widths", "architecture"), "architecture.widths")) - 1
        claims = read_claims(document, layers, checked, lambda tree, where: _read_formula_tree(architecture, tree,
                                                                                                where))
        claim = claims_claim(claims)
        _require_claim(document, claim)
        for n, entry in enumerate(claims):
            if entry["quantity"] in FORMULA_QUANTITIES:  # decided at its own point, by the checker's forward pass
                entry["decision"] = _formula_decision(document["claims"][n], entry, architecture, f"claims[{n}]",
                                                      checked)
        parts = document.get("parts")
        if not isinstance(parts, list) or not all(isinstance(part, dict) for part in parts):
            raise Disagreement(f"parts must be a list of certificates, got {_short(parts)}")
        proved: dict = {}
        conclusions, unchecked = [], []
        for n, part in enumerate(parts):
            kind = part.get("kind")
            if kind not in ("dimension lower bound", "spectrum", ORDERS_KIND):
                raise Disagreement(f"parts[{n}] is of kind {_short(kind)}: a claims certificate's parts are "
                                   "dimension, spectrum or identification-orders certificates")
            if part.get("architecture") != architecture:
                raise Disagreement(f"parts[{n}] is about another architecture than the claims")
            report = verify(part)
            checked += [f"parts[{n}] ({kind}): {item}" for item in report.checked]
            if not report.verified:
                raise Disagreement(f"parts[{n}]: {report.problem}")
            conclusions.append(report.conclusion)
            unchecked += [f"parts[{n}]: {item}" for item in report.unchecked]
            if kind == "dimension lower bound":
                proved["dimension"] = max(proved.get("dimension", 0), report.rank)
            elif kind == "spectrum":
                proved["rank"], proved["parameters"] = report.rank, len(part["parameters"])
                proved["kernel_exact"] = report.kernel
            else:  # verified: every block's order is at most the claimed one
                proved["orders"] = {entry["block"]: entry["order"] for entry in part["orders"]}
        decisions = check_claims(claims, proved, checked)
        decided = [f"{text} is {decision}" for text, decision, _ in decisions if decision in ("proved", "refuted")]
        verdicts = {True: "true", False: "false", None: "undecided"}
        unchecked += [f"{text}: not decided here ({decision}); the engine's verdict, {verdicts[entry['engine_verdict']]}"
                      ", is not checked" for (text, decision, _), entry in zip(decisions, claims)
                      if decision not in ("proved", "refuted")]
        if not decided and not conclusions:
            raise Disagreement(f"nothing here is proved: the certificate has no part to verify and none of its "
                               f"{len(claims)} claim(s) is proved or refuted by the checker")
        conclusion = "; ".join(conclusions + decided) + ("" if decided else "; none of the claims is decided here")
    except Disagreement as err:
        return VerificationReport(False, "", tuple(checked), str(err), seconds=time.perf_counter() - started)
    return VerificationReport(True, claim, tuple(checked), None, seconds=time.perf_counter() - started,
                              conclusion=conclusion, unchecked=tuple(unchecked))


def _plain_network(architecture: dict) -> _Certificate:
    """The architecture read, and refused unless plain: the formula language names a plain network's matrices."""
    cert = _read_architecture({"architecture": architecture}, [])
    if any(h != 1 for h in cert.heads) or cert.causal or cert.residual or cert.bias or cert.ffn:
        raise Disagreement("a formula claim is about a plain network (one head per layer, no causal mask, no "
                           "residual stream, no biases or feed-forward blocks): its formula names P = V_l ... V_1, "
                           "What_i and C_i of that network only")
    return cert


def _read_formula_tree(architecture: dict, tree, where: str) -> tuple:
    """A formula claim's tree read for this architecture (:func:`symattn.verifier.formulas.read_formula`): ``(node, shape)``."""
    cert = _plain_network(architecture)
    node, shape = read_formula(tree, cert.widths, cert.tokens, rational, where)
    operations = formula_operations(node, cert.widths, cert.tokens)
    if operations > MAX_FORMULA_OPERATIONS:
        raise TooLarge(f"{where}: evaluating the formula takes about {operations:.0e} multiply-adds, over the "
                       f"checker's limit of {MAX_FORMULA_OPERATIONS:.0e} for one formula")
    wanted = (cert.widths[-1], cert.tokens)
    if shape != wanted:
        shown = "a scalar" if shape is None else f"{shape[0]} x {shape[1]}"
        raise Disagreement(f"{where} is {shown}; the output's coefficients are {wanted[0]} x {wanted[1]}")
    return node, shape


def _collapse_series(cert: _Certificate, point: dict) -> list:
    """``F(X)`` at ``point`` along the query/key collapse, mod ``(p, eps^N)``: the ``d_l x t`` coefficients of ``eps^0 .. eps^(N-1)``.

    ``Q_i = eps Qt_i``, ``K_i = eps Kt_i``, ``V_i = Vt_i`` (``point`` holds
    ``Qt, Kt, Vt``), one input ``X``, no tangents: the checker's own forward pass.
    """
    p, N = cert.prime, cert.truncation
    blocks = {name: _jet_block(point[name], cert.powers[name], {}, 1, N, p) for name, _ in _cert_blocks(cert)}
    layers = [[tuple(blocks[f"{name}_{i}"] for name in ("Q", "K", "V"))] for i in range(1, len(cert.widths))]
    X = np.zeros((1, cert.widths[0], cert.tokens, 1, N), dtype=np.int64)
    X[0, :, :, 0, 0] = np.array(cert.bank[0], dtype=object) % p
    output = _forward(cert, X, layers, [None] * len(layers))[0, :, :, 0, :]        # (d_l, t, N)
    return [[[int(v) for v in row] for row in output[:, :, m]] for m in range(N)]


def _formula_decision(raw: dict, claim: dict, architecture: dict, where: str, checked: list) -> tuple:
    """``(decision, why)`` of one formula claim (:mod:`symattn.verifier.formulas`), from its own prime, point and truncation.

    The claim's ``prime``, ``truncation``, ``normalizers``, ``point`` (``Qt_i,
    Kt_i, Vt_i``) and ``input`` are read as a certificate's; the curve is the
    query/key collapse, set here.  The checker recomputes the compared
    coefficient (for ``leading(i)``: ``F_m - F_m|_(Kt_i = 0)`` for every
    ``m <= n_i``, its order by its own rule) and the formula at the point, and
    compares both with the engine's ``values`` before deciding.
    """
    cert = _plain_network(architecture)
    fields = {key: raw[key] for key in ("prime", "truncation", "normalizers", "point") if key in raw}
    # the input X, d_0 x t integers, read as a bank of one input
    X = _list(_field(raw, "input", where), f"{where}.input", cert.widths[0])
    fields["bank"] = [[[_integer(v, f"{where}.input[{r}][{c}]") for c, v in
                        enumerate(_list(row, f"{where}.input[{r}]", cert.tokens))] for r, row in enumerate(X)]]
    reading: list = []
    try:
        # before the field data, whose sizes are checked against the limits: a wrong truncation is a disagreement
        if fields.get("truncation") != claim["order"] + 1 or isinstance(fields.get("truncation"), bool):
            raise Disagreement(f"the truncation must be eps^{claim['order'] + 1}, one past the compared order "
                               f"{claim['order']}; got {_short(fields.get('truncation'))}")
        _read_field_data(fields, cert, reading)
        _read_normalizers(fields, cert, reading)
        cert.powers = {name: 1 if name[0] in "QK" else 0 for name, _ in _cert_blocks(cert)}   # the collapse
        _read_point_and_bank(fields, cert, reading)
    except Disagreement as err:
        raise Disagreement(f"{where}: {err}") from None
    p, N, order, layer = cert.prime, cert.truncation, claim["order"], claim["layer"]
    series = _collapse_series(cert, cert.point)
    if claim["quantity"] == "leading":
        if any(normalizer["lightning"] for normalizer in cert.normalizers):
            raise Disagreement(f"{where}: a leading coefficient needs normalizers with a first nonconstant degree; "
                               "lightning attention has none")
        ks = first_degrees([normalizer["taylor"] for normalizer in cert.normalizers])
        if None in ks:
            raise Disagreement(f"{where}: the normalizer of layer {ks.index(None) + 1} has no nonzero Taylor "
                               f"coefficient c_n, n >= 1, below c_{N} mod {p}")
        expected = leading_orders(ks)[layer - 1]
        if order != expected:
            raise Disagreement(f"{where}: layer {layer}'s scores first appear at order {expected} (k = {ks}), not "
                               f"{order}")
        # the same series with layer i's keys at 0: what F owes to layer i's scores is the difference
        without = _collapse_series(cert, {**cert.point, f"K_{layer}": [[0] * len(row) for row in
                                                                          cert.point[f"K_{layer}"]]})
        difference = [[[(a - b) % p for a, b in zip(r1, r2)] for r1, r2 in zip(m1, m2)]
                      for m1, m2 in zip(series, without)]
        name = f"F_{order} - F_{order}|K_{layer}=0"
        below = [(m, difference[m]) for m in range(order)]
        coefficient = difference[order]
    else:
        name, below, coefficient = f"F_{order}", [], series[order]
    values = named_values(cert.point, cert.bank[0], cert.widths, cert.tokens, p)
    claimed = evaluate_formula(claim["node"], values, p)
    # the degrees of both sides in the point's coordinates, for the Schwartz-Zippel bound of an agreement
    sides = (coefficient_degrees([normalizer["taylor"] for normalizer in cert.normalizers],
                                 [normalizer["lightning"] for normalizer in cert.normalizers], N)[order],
             formula_degree(claim["node"], len(cert.widths) - 1))
    degree = None if sides[1] is None else int(max(0, *sides))
    try:
        decision = decide_formula(name, below, coefficient, claimed, raw.get("values"), p, degree)
    except Disagreement as err:
        raise Disagreement(f"{where}: {err}") from None
    checked.append(f"{where}: " + "; ".join(reading) + f"; the query/key collapse; recomputed {name} mod "
                   f"({p}, eps^{N}) by the checker's forward pass and the formula by its own evaluation at the "
                   "point: both agree with the engine's values")
    return decision


def _gauge_check(cert: _Certificate) -> tuple:
    """The stronger check of a spectrum certificate (:mod:`symattn.verifier.spectrum`): ``(kernel or None, words)``."""
    if cert.bias or cert.ffn:
        return None, ("stronger check (not part of the claim): not done; this checker writes the gauge tangents of "
                      "attention without biases or feed-forward blocks only")
    blocks = _cert_blocks(cert)
    layers, n = [], 0
    for i in range(1, len(cert.widths)):
        layers.append([tuple(name for name, _ in blocks[n + 3 * h:n + 3 * h + 3]) for h in range(cert.heads[i - 1])])
        n += 3 * cert.heads[i - 1]
    tangents = gauge_tangents(layers, dict(blocks), [name for name, _ in blocks], cert.point, cert.powers,
                              cert.residual, cert.truncation, cert.prime)
    gauge_rank = len(pivot_valuations(tangents, cert.prime)) if len(tangents) else 0
    parameters = sum(rows * cols for _, (rows, cols) in blocks)
    return gauge_conclusion(cert.rank, parameters, gauge_rank, cert.truncation)


def _histogram(values) -> str:
    """``{valuation: count}`` as text."""
    counts: dict = {}
    for v in sorted(values):
        counts[v] = counts.get(v, 0) + 1
    return "{" + ", ".join(f"{v}: {c}" for v, c in counts.items()) + "}"
