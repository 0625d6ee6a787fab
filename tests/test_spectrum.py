"""The exact decay spectrum of the native Jacobian (MATH.md sections 4-6).

Every number is checked two independent ways where possible:

- the public worked examples of MATH.md section 5, exactly, through the
  library and through ``symattn spectrum --json``;
- every other configuration against the slopes of ``log sigma_j`` of the
  mpmath Jacobian (:func:`symattn.numeric.sensitivity`: real arithmetic at
  another random point and on another random bank), with the mpmath
  numerical rank equal to the exact rank at every ``eps``;
- curves other than the collapse curve against an mpmath Jacobian built here
  from :class:`symattn.numeric.NumericJetDomain` and :func:`symattn.model.forward`
  (``numeric_jacobian`` only knows the collapse curve);
- the series Jacobian's first coefficients against the closed-form first
  orders of one softmax layer (``S(A) = J/t + H A / t + O(A^2)``, ``H = I - J/t``).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy as sp

from symattn.algebra.modseries import series_mul_mod
from symattn.algebra.valuations import smith_valuations
from symattn.cli import main
from symattn.curves import EPS, collapse, collapse_keys, collapse_queries, input_scaling, polynomial_curve
from symattn.effective import effective_block_dimensions, gauge_dimension
from symattn.errors import BankError, DomainError, ShapeError, SymattnError, TruncationError
from symattn.model import Architecture, Parameters, forward
from symattn.normalizers import Normalizer
from symattn.numeric import NumericJetDomain, fit_slopes, sensitivity, singular_values
from symattn.spectrum import (
    DEFAULT_PRIMES,
    contact_order,
    decay_spectrum,
    degree_bound,
    gauge_tangent_series,
    jacobian_series,
    predicted_spectrum,
    random_bank,
    spectrum_at,
)

P0 = DEFAULT_PRIMES[0]
SOFTMAX_2 = {0: 4, 1: 3, 5: 3}


def _arch(layers=2, width=2, rank=1, tokens=3, normalizer="softmax"):
    return Architecture.uniform(layers=layers, width=width, rank=rank, tokens=tokens, normalizer=normalizer)


def _expand(histogram: dict) -> list[int]:
    return [e for e, m in sorted(histogram.items()) for _ in range(m)]


def _spectrum(arch, *args, **kwargs):
    kwargs.setdefault("progress", False)
    return decay_spectrum(arch, *args, **kwargs)


def _console_script() -> list[str]:
    script = Path(sys.executable).with_name("symattn")
    return [str(script)] if script.exists() else [sys.executable, "-m", "symattn"]


def _cli_json(capsys, *argv) -> dict:
    status = main(["spectrum", *argv, "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out)


# -- the public examples (MATH.md section 5) ------------------------------------------------------
PUBLIC = [
    (1, "softmax", {0: 4, 1: 3}, 1),
    (2, "softmax", {0: 4, 1: 3, 5: 3}, 6),
    (2, "cosh", {0: 4, 3: 3, 11: 3}, 6),
]


@pytest.mark.parametrize("layers, normalizer, expected, kernel", PUBLIC)
def test_public_examples_library(layers, normalizer, expected, kernel):
    s = _spectrum(_arch(layers=layers, normalizer=normalizer))
    assert s.exponents == expected
    assert s.kernel == kernel
    assert s.params == 8 * layers
    assert s.rank == s.params - kernel == sum(expected.values())
    assert s.unresolved == 0 and s.rank_certified
    assert s.separating is True and s.confirmed is True
    assert s.predicted.exponents == expected and s.predicted.kernel == kernel
    assert s.matches_prediction is True
    assert all(e < s.truncation for e in s.exponents)


@pytest.mark.parametrize("layers, normalizer, expected, kernel", PUBLIC)
def test_public_examples_cli_json(capsys, layers, normalizer, expected, kernel):
    data = _cli_json(capsys, "--layers", str(layers), "--width", "2", "--rank", "1", "--tokens", "3",
                     "--normalizer", normalizer)
    for key in ("params", "rank", "kernel", "spectrum", "blocks", "unresolved", "truncation", "bank",
                "separating", "primes", "predicted", "matches_prediction"):
        assert key in data, key
    assert data["spectrum"] == {str(e): m for e, m in expected.items()}
    assert data["kernel"] == kernel
    assert data["params"] == 8 * layers
    assert data["rank"] == 8 * layers - kernel
    assert data["unresolved"] == 0 and data["unresolved_valuation"] is None
    assert data["separating"] is True and data["matches_prediction"] is True
    assert data["predicted"] == data["spectrum"]
    assert data["primes"] == list(DEFAULT_PRIMES)
    assert isinstance(data["truncation"], int) and data["truncation"] > max(expected)
    assert isinstance(data["bank"], int) and data["bank"] >= 1
    contact = contact_order(1, 2 if normalizer == "cosh" else 1)
    assert data["blocks"]["values"] == {"0": 4}
    assert data["blocks"]["scores:1"] == {str(contact): 3}


def test_public_example_console_script():
    proc = subprocess.run([*_console_script(), "spectrum", "--layers", "2", "--normalizer", "cosh",
                           "--json", "--quiet"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["spectrum"] == {"0": 4, "3": 3, "11": 3} and data["kernel"] == 6


def test_library_and_cli_agree(capsys):
    arch = _arch(layers=2)
    assert _cli_json(capsys, "--layers", "2") == json.loads(json.dumps(_spectrum(arch).to_json()))


# -- every other configuration against mpmath slopes ----------------------------------------------
CROSS_CHECKS = [
    (dict(layers=3), {0: 4, 1: 3, 5: 3, 17: 3}),
    (dict(normalizer="1+x**2"), {0: 4, 3: 3, 11: 3}),
    (dict(normalizer="gauss"), {0: 4, 3: 3, 11: 3}),
    (dict(normalizer="1 + x**3 + x**4"), {0: 4, 5: 3, 17: 3}),  # k = 3: contact orders 5, 17
    (dict(width=3), {0: 9, 1: 5, 5: 5}),
    (dict(tokens=2), {0: 4, 1: 3, 5: 3}),
    (dict(rank=2), {0: 4, 1: 4, 5: 4}),
    (dict(normalizer=["softmax", "cosh"]), {0: 4, 1: 3, 7: 3}),  # mixed k: no formula claimed
]


def _assert_mpmath_agrees(arch, s, seed=3):
    """mpmath slopes (another point, a larger bank) round to the exact exponents; same rank."""
    r = sensitivity(arch, spectrum=s, seed=seed, bank=s.bank + 2)
    exponents = _expand(s.exponents)
    slopes = r.mpmath_slopes[: s.rank]
    assert [round(x) for x in slopes] == exponents, slopes
    assert max(abs(x - round(x)) for x in slopes) < 0.15, slopes
    assert set(r.mpmath_ranks) == {s.rank}, r.mpmath_ranks  # the kernel is numerically zero


@pytest.mark.slow  # mpmath at up to 120 digits
@pytest.mark.parametrize("config, expected", CROSS_CHECKS, ids=lambda v: str(v))
def test_spectrum_agrees_with_mpmath_slopes(config, expected):
    arch = _arch(**config)
    s = _spectrum(arch)
    assert s.exponents == expected
    assert s.unresolved == 0 and s.separating and s.confirmed and s.gauge_kernel_checked
    assert s.kernel == arch.param_count - s.rank == s.predicted.kernel
    if len({n.k for n in arch.normalizers}) == 1:
        assert s.matches_prediction is True and s.predicted.exponents == expected
    _assert_mpmath_agrees(arch, s)


def test_mixed_normalizers_claim_no_formula():
    arch = _arch(normalizer=["softmax", "cosh"])
    s = _spectrum(arch)
    assert s.predicted.exponents is None and s.predicted.blocks is None
    assert s.matches_prediction is None
    assert s.to_json()["predicted"] is None and s.to_json()["matches_prediction"] is None
    assert s.exponents == {0: 4, 1: 3, 7: 3}  # checked against mpmath in the cross-checks
    assert s.blocks == {"scores:1": {1: 3}, "scores:2": {7: 3}, "values": {0: 4}}
    assert s.kernel == 6 == s.predicted.kernel


# -- banks ----------------------------------------------------------------------------------------
def test_one_input_is_not_separating_and_auto_recovers():
    arch = _arch(layers=2)
    small = _spectrum(arch, bank=1)
    assert small.bank == 1
    assert small.separating is False
    assert "too small" in small.separation_note
    assert small.exponents != SOFTMAX_2
    # the bank is the problem, not the network: undecided, never False (MATH.md section 5)
    assert small.matches_prediction is None
    assert small.prediction_verdict.startswith("undecided: the bank of 1 inputs does not separate (")
    assert small.prediction_verdict.endswith("; raise --bank")
    assert small.rank < 10  # six output entries cannot see ten directions
    auto = _spectrum(arch, bank="auto")
    assert auto.exponents == SOFTMAX_2 and auto.separating is True and auto.rank == 10


@pytest.mark.parametrize("size, spurious", [(2, {0: 4, 7: 4, 9: 2}), (3, {0: 4, 1: 2, 7: 4})])
def test_small_banks_give_spurious_high_exponents_flagged_not_separating(size, spurious):
    # full rank, but directions seen only at later orders (MATH.md section 5)
    arch = _arch(layers=2)
    s = _spectrum(arch, bank=size)
    assert s.exponents == spurious and s.rank == 10
    assert s.separating is False and s.matches_prediction is None  # the bank's spectrum, not the network's
    assert s.prediction_verdict.startswith(f"undecided: the bank of {size} inputs does not separate")
    # it is the true spectrum of that bank's Jacobian: mpmath sees the same slopes on such a bank
    r = sensitivity(arch, spectrum=s, seed=5, bank=size)
    assert [round(x) for x in r.mpmath_slopes[:10]] == _expand(spurious)


def test_user_bank_as_list():
    arch = _arch(layers=1)
    rng = np.random.default_rng(2)
    bank = [rng.integers(-5, 6, size=(2, 3)).tolist() for _ in range(3)]
    bank[0][0][0] = Fraction(1, 3)
    s = _spectrum(arch, bank=bank)
    assert s.bank == 3 and s.exponents == {0: 4, 1: 3}
    # the same input three times is one input
    same = _spectrum(arch, bank=[bank[1]] * 3)
    assert same.separating is False and same.rank < 7


def test_random_bank_shape_range_and_determinism():
    arch = _arch(layers=2, width=3, tokens=4)
    bank = random_bank(arch, 5, 1009, seed=4)
    assert bank.shape == (5, 3, 4) and bank.dtype == np.int64
    assert bank.min() >= 1 and bank.max() < 1009
    assert np.array_equal(bank, random_bank(arch, 5, 1009, seed=4))
    assert not np.array_equal(bank, random_bank(arch, 5, 1009, seed=5))


# -- truncation -----------------------------------------------------------------------------------
def test_truncation_3_leaves_the_order_5_directions_unresolved():
    arch = _arch(layers=2)
    s = _spectrum(arch, truncation=3)
    assert s.truncation == 3
    assert s.unresolved == 3
    assert 5 not in s.exponents and s.exponents == {0: 4, 1: 3}
    assert all(e < 3 for e in s.exponents)
    assert s.rank == 7 and s.rank_certified is False
    assert s.kernel == 6  # the gauge-orbit lower bound
    # agrees below eps^3 and the 3 unresolved directions could be the predicted eps^5: undetermined,
    # not a disagreement, and the table says "?" rather than a computed 0 at exponent 5
    assert s.matches_prediction is None and s.separating is False
    assert "| 5 | ? | 3 |" in s.to_markdown()
    assert "- matches the prediction: undecided: 3 unresolved at truncation 3 (raise --truncation)" in s.to_markdown()
    data = s.to_json()
    assert data["unresolved"] == 3 and data["unresolved_valuation"] == ">= 3"
    assert data["matches_prediction"] is None
    assert "rank 7 (lower bound)" in str(s)
    assert ">= 3" in str(s) and "| >= 3 (unresolved) | 3 |" in s.to_markdown()


def test_truncation_3_cli(capsys):
    data = _cli_json(capsys, "--layers", "2", "--truncation", "3")
    assert data["unresolved"] == 3
    assert data["unresolved_valuation"] == ">= 3"
    assert "5" not in data["spectrum"] and data["spectrum"] == {"0": 4, "1": 3}
    assert data["rank"] == 7 and data["rank_certified"] is False
    assert data["truncation"] == 3


def test_explicit_truncation_large_enough_resolves_everything():
    s = _spectrum(_arch(layers=2), truncation=6)
    assert s.truncation == 6 and s.exponents == SOFTMAX_2 and s.unresolved == 0


def test_exponent_exactly_at_truncation_is_unresolved():
    s = _spectrum(_arch(layers=2), truncation=5)  # eps^5 is not kept
    assert s.exponents == {0: 4, 1: 3} and s.unresolved == 3 and s.to_json()["unresolved_valuation"] == ">= 5"


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, fragment", [
    (dict(truncation=-1), TruncationError, "-1"),
    (dict(truncation=0), TruncationError, "got 0"),
    (dict(truncation="deep"), TruncationError, "'deep'"),
    (dict(truncation=5000), TruncationError, "truncation 5000 exceeds max_truncation 4096"),
    (dict(order=6), TruncationError, "order= was renamed truncation= (the truncation N"),
    (dict(max_order=100), TruncationError, "max_order= was renamed max_truncation="),
    (dict(bank=[[[1, 2, 3]]]), BankError, "(1, 3)"),
    (dict(bank=[[[1, 2], [3, 4], [5, 6]]]), BankError, "(3, 2)"),
    (dict(bank=[]), BankError, "at least one input"),
    (dict(bank=0), BankError, "got 0"),
    (dict(bank="many"), BankError, "'many'"),
    (dict(primes=(268435400,)), DomainError, "268435400"),
    (dict(primes=(2 ** 31 - 1,)), DomainError, "2147483647"),
    (dict(primes=(268435459,)), DomainError, "268435459"),  # prime, just above 2**28
    (dict(primes=(7,)), DomainError, "prime 7 is outside"),
    (dict(primes=()), DomainError, "at least one prime"),
    (dict(seed=-1), SymattnError, "-1"),
])
def test_bad_input_is_a_clear_error(kwargs, error, fragment):
    with pytest.raises(error) as info:
        _spectrum(_arch(layers=2), **kwargs)
    assert isinstance(info.value, SymattnError)
    assert fragment in str(info.value)


def test_zero_tokens_is_a_shape_error():
    with pytest.raises(ShapeError, match="tokens must be a positive integer, got 0"):
        _arch(tokens=0)


@pytest.mark.parametrize("bank", [2.5, True])
def test_bank_of_wrong_type_is_a_bank_error(bank):
    with pytest.raises(BankError):
        _spectrum(_arch(layers=1), bank=bank)


def test_bank_with_non_numeric_entry_is_a_symattn_error():
    with pytest.raises(SymattnError, match="'a'|\\ba\\b"):
        _spectrum(_arch(layers=1), bank=[[[1, 2, 3], [4, 5, "a"]]])


@pytest.mark.parametrize("flag, value, fragment", [
    ("--truncation", "-1", "-1"),
    ("--bank", "0", "0"),
    ("--truncation", "0", "0"),
    ("--order", "6", "--order was renamed --truncation"),
    ("--tokens", "0", "0"),
])
def test_cli_bad_values_exit_2_with_one_line(flag, value, fragment):
    proc = subprocess.run([*_console_script(), "spectrum", "--layers", "2", flag, value, "--json", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("symattn: error: ") and fragment in lines[0]
    assert "Traceback" not in proc.stderr


# -- blocks, kernel, certification -------------------------------------------------------------------
def test_blocks_attribution_three_layers():
    arch = _arch(layers=3)
    s = _spectrum(arch)
    assert s.blocks == {"scores:1": {1: 3}, "scores:2": {5: 3}, "scores:3": {17: 3}, "values": {0: 4}}
    assert s.blocks == s.predicted.blocks
    dims = effective_block_dimensions(arch)
    for i in (1, 2, 3):
        assert s.blocks[f"scores:{i}"] == {contact_order(i, 1): dims[f"scores:{i}"]}
    # the blocks add up to the spectrum
    total: dict = {}
    for block in s.blocks.values():
        for e, m in block.items():
            total[int(e)] = total.get(int(e), 0) + m
    assert total == s.exponents


@pytest.mark.parametrize("config", [dict(layers=1), dict(layers=3), dict(width=3), dict(rank=2),
                                    dict(normalizer="cosh")])
def test_kernel_is_the_gauge_orbit_and_certified(config):
    arch = _arch(**config)
    s = _spectrum(arch)
    assert s.kernel == gauge_dimension(arch)
    assert s.gauge_kernel_checked is True
    assert s.confirmed is True and s.primes == DEFAULT_PRIMES and s.seeds == (0, 1)
    assert 0 < s.error_bound < 1e-6
    assert s.rank_certified is True
    assert s.degree_bound == degree_bound(arch, collapse(), s.truncation) >= 1


def test_one_prime_or_no_confirmation_is_not_confirmed():
    arch = _arch(layers=2)
    one = _spectrum(arch, primes=(P0,))
    off = _spectrum(arch, confirm=False)
    for s in (one, off):
        assert s.exponents == SOFTMAX_2 and s.confirmed is False and s.primes == (P0,) and s.seeds == (0,)
    assert off.error_bound > _spectrum(arch).error_bound  # the second prime multiplies the bound


def test_other_primes_and_seeds_give_the_same_spectrum():
    arch = _arch(layers=2, normalizer="cosh")
    for primes, seed in [((1000003, 1000033), 0), ((1000037, 1000039), 7)]:
        s = _spectrum(arch, primes=primes, seed=seed)
        assert s.primes == primes and s.confirmed
        assert s.exponents == {0: 4, 3: 3, 11: 3} and s.kernel == 6


# -- generic normalizers --------------------------------------------------------------------------
@pytest.mark.parametrize("generic, concrete", [
    (Normalizer.generic(k=1), "softmax"),
    (Normalizer.generic(k=2, even=True), "cosh"),
])
def test_generic_normalizer_matches_concrete(generic, concrete):
    g = _spectrum(_arch(layers=2, normalizer=generic))
    c = _spectrum(_arch(layers=2, normalizer=concrete))
    assert g.exponents == c.exponents == c.predicted.exponents
    assert (g.rank, g.kernel, g.blocks) == (c.rank, c.kernel, c.blocks)
    assert g.separating and g.confirmed and g.matches_prediction


# -- the prediction -----------------------------------------------------------------------------------
def test_contact_order_and_prediction():
    assert [contact_order(i, 1) for i in range(1, 6)] == [1, 5, 17, 53, 161]
    assert [contact_order(i, 2) for i in range(1, 4)] == [3, 11, 35]
    assert [contact_order(i, 3) for i in range(1, 3)] == [5, 17]
    for bad in [(0, 1), (1, 0)]:
        with pytest.raises(SymattnError):
            contact_order(*bad)
    p = predicted_spectrum(_arch(layers=4))
    assert p.exponents == {0: 4, 1: 3, 5: 3, 17: 3, 53: 3}
    assert p.kernel == 16 and p.rank == 16
    assert predicted_spectrum(_arch(layers=2, width=3)).exponents == {0: 9, 1: 5, 5: 5}


# -- the series Jacobian against closed-form first orders --------------------------------------------
def test_jacobian_series_first_orders_one_softmax_layer():
    arch = _arch(layers=1, width=2, rank=1, tokens=3)
    p, t = 1000003, 3
    Qt, Kt = np.array([[2, -1]]), np.array([[3, 5]])
    Vt = np.array([[1, 4], [-2, 3]])
    bank = np.array([[[1, 0, 2], [3, -1, 1]], [[0, 2, -3], [1, 1, 4]]])
    point = {("Q", 1): Qt % p, ("K", 1): Kt % p, ("V", 1): Vt % p}
    J = jacobian_series(arch, collapse(), bank % p, point, p, 4)
    assert J.shape == (2 * 2 * 3, 8, 4)

    def residue(matrix):
        out = np.zeros(matrix.shape, dtype=np.int64)
        for idx, v in np.ndenumerate(matrix):
            v = Fraction(v)
            out[idx] = v.numerator * pow(v.denominator, -1, p) % p
        return out

    def frac(a):
        a = np.asarray(a)
        out = np.empty(a.shape, dtype=object)
        for idx, v in np.ndenumerate(a):
            out[idx] = Fraction(int(v))
        return out

    ones = frac(np.ones((t, t)))
    H = frac(np.eye(t, dtype=int)) - ones / t
    expected = np.zeros((12, 8, 4), dtype=object)
    expected[:] = Fraction(0)
    for b, X in enumerate(bank):
        X = frac(X)
        rows = slice(6 * b, 6 * b + 6)
        A2 = X.T @ frac(Kt).T @ frac(Qt) @ X  # scores = eps^2 A2
        for c in range(2):  # Q_1c, K_1c
            E = np.zeros((1, 2), dtype=int)
            E[0, c] = 1
            dQ = frac(Vt) @ X @ H @ (X.T @ frac(Kt).T @ frac(E) @ X) / t  # eps^1
            dK = frac(Vt) @ X @ H @ (X.T @ frac(E).T @ frac(Qt) @ X) / t
            expected[rows, c, 1] = dQ.reshape(-1)
            expected[rows, 2 + c, 1] = dK.reshape(-1)
        for r in range(2):
            for c in range(2):
                E = np.zeros((2, 2), dtype=int)
                E[r, c] = 1
                expected[rows, 4 + 2 * r + c, 0] = (frac(E) @ X @ ones / t).reshape(-1)
                expected[rows, 4 + 2 * r + c, 2] = (frac(E) @ X @ H @ A2 / t).reshape(-1)
    # coefficients of eps^0, eps^1, eps^2 (eps^3 has further terms not written here)
    assert np.array_equal(J[:, :, :3], residue(expected[:, :, :3]))


def test_gauge_tangents_span_the_gauge_and_lie_in_the_kernel():
    arch = _arch(layers=3)
    p, N = P0, 20
    from symattn.jacobian import random_point  # the same point the spectrum uses

    point, _ = random_point(arch, p, 0)
    G = gauge_tangent_series(arch, collapse(), point, p, N)
    assert G.shape == (gauge_dimension(arch), arch.param_count, N)
    # value gauges move V_i (order 0); score gauges move Q_i = eps Qt_i and K_i = eps Kt_i (order 1)
    assert smith_valuations(G, p).exponents == (0,) * 8 + (1,) * 3
    assert gauge_dimension(arch) == 11
    J = jacobian_series(arch, collapse(), random_bank(arch, 9, p, 0), point, p, N)
    product = series_mul_mod(J[:, None, :, :], G[None, :, :, :], p).sum(axis=2) % p
    assert not product.any()
    # and a non-gauge direction is not in the kernel
    other = np.zeros((1, arch.param_count, N), dtype=np.int64)
    other[0, -1, 0] = 1
    assert (series_mul_mod(J[:, None, :, :], other[None], p).sum(axis=2) % p).any()


def test_spectrum_at_matches_decay_spectrum():
    arch = _arch(layers=2)
    s = _spectrum(arch)
    run = spectrum_at(arch, collapse(), random_bank(arch, s.bank, P0, 0), P0, 0, s.truncation)
    assert run.exponents == s.exponents and run.resolved_rank == s.rank and run.unresolved == 0
    assert run.gauge_rank == 6 and run.gauge_annihilated
    assert {k: v for k, v in run.blocks.items()} == s.blocks


# -- other curves --------------------------------------------------------------------------------------
def _curve_jacobian(arch, curve, flat, bank, eps: Fraction, dps: int):
    """mpmath J(eps) along ``curve`` by forward-mode jets (independent of the series engine)."""
    P = arch.param_count
    domain = NumericJetDomain("mpmath", dps=dps, directions=P)
    polynomials = {(b, i): m for b, i, m in curve.polynomials}
    blocks = {"Q": [], "K": [], "V": []}
    position = 0
    for i in range(1, arch.layers + 1):
        for name, (rows, cols) in arch.block_shapes(i).items():
            if (name, i) in polynomials:
                m = polynomials[(name, i)].subs(EPS, sp.Rational(eps.numerator, eps.denominator))
                values = [[Fraction(int(sp.Rational(m[r, c]).p), int(sp.Rational(m[r, c]).q))
                           for c in range(cols)] for r in range(rows)]
            else:
                scale = eps if curve.scaled(name, i) else 1
                values = [[flat[position + r * cols + c] * scale for c in range(cols)] for r in range(rows)]
            blocks[name].append(domain.matrix(values, first_direction=position))
            position += rows * cols
    params = Parameters(tuple(blocks["Q"]), tuple(blocks["K"]), tuple(blocks["V"]))
    per_input = arch.widths[-1] * arch.tokens
    out = domain._zeros((per_input * len(bank), P))
    for b, X in enumerate(bank):
        scaled = [[v * eps ** curve.input_power for v in row] for row in X]
        output = forward(arch, params, domain.matrix(scaled), domain, convert=False)
        out[b * per_input:(b + 1) * per_input] = domain.tangents(output).reshape(per_input, P)
    return out


def _mpmath_curve_exponents(arch, curve, bank_size, deepest, seed=11):
    rng = np.random.default_rng(seed)
    flat = [Fraction(int(v), 7) for v in rng.integers(-9, 10, arch.param_count)]
    flat = [v if v else Fraction(1, 3) for v in flat]
    bank = [[[Fraction(int(v), 5) for v in row] for row in rng.integers(-6, 7, arch.input_shape)]
            for _ in range(bank_size)]
    eps_values = [Fraction(1, 10 ** k) for k in (2, 3, 4, 5)]
    dps = 5 * deepest + 30
    sigmas = [singular_values(_curve_jacobian(arch, curve, flat, bank, e, dps), "mpmath", dps)
              for e in eps_values]
    with mpmath.workdps(dps):
        ranks = {sum(1 for s in row if s > row[0] * mpmath.mpf(10) ** (-(dps - 15))) for row in sigmas}
    return fit_slopes(eps_values, sigmas), ranks


CURVES = [
    (collapse_queries(), {0: 6, 1: 1, 2: 2, 3: 1}),
    (collapse_keys(), {0: 6, 1: 1, 2: 2, 3: 1}),
    (input_scaling(), {1: 4, 3: 3, 7: 3}),
    (polynomial_curve({"Q1": [[EPS, 2 * EPS]], "K1": [[EPS + EPS ** 2, -EPS]],
                       "Q2": [[3 * EPS, EPS]], "K2": [[EPS, 5 * EPS]]}), {0: 4, 1: 3, 5: 3}),
]


@pytest.mark.parametrize("curve, expected", CURVES, ids=lambda v: getattr(v, "name", ""))
def test_other_curves_agree_with_mpmath(curve, expected):
    arch = _arch(layers=2)
    s = _spectrum(arch, curve)
    assert s.curve == curve.describe(2)
    assert s.exponents == expected
    assert s.unresolved == 0 and s.separating and s.confirmed and s.gauge_kernel_checked
    assert s.rank == 10 and s.kernel == 6
    slopes, ranks = _mpmath_curve_exponents(arch, curve, s.bank + 2, max(expected))
    assert ranks == {10}
    assert [round(x) for x in slopes[:10]] == _expand(expected), slopes
    assert max(abs(x - round(x)) for x in slopes[:10]) < 0.15


def test_collapse_listing_every_layer_is_the_collapse_curve():
    arch = _arch(layers=2)
    assert _spectrum(arch, collapse([1, 2])).exponents == _spectrum(arch).exponents == SOFTMAX_2


@pytest.mark.parametrize("normalizer, layers_collapsed, expected", [
    ("1+x**2", [2], {0: 7, 3: 3}),   # from mpmath slopes (this file's _curve_jacobian)
    pytest.param("softmax", [2], {0: 7, 1: 3}, marks=pytest.mark.xfail(
        strict=True, raises=DomainError,
        reason="a layer that does not collapse needs the Taylor expansion of exp at a nonzero point, "
               "which is not exact over GF(p): refused with a DomainError (slopes from mpmath: {0:7, 1:3})")),
    pytest.param("softmax", [1], {0: 4, 1: 3, 4: 3}, marks=pytest.mark.xfail(
        strict=True, raises=DomainError,
        reason="as above (slopes from mpmath: {0:4, 1:3, 4:3})")),
])
def test_one_layer_collapse(normalizer, layers_collapsed, expected):
    arch = _arch(layers=2, normalizer=normalizer)
    s = _spectrum(arch, collapse(layers_collapsed))
    assert s.exponents == expected and s.rank == 10
    slopes, ranks = _mpmath_curve_exponents(arch, collapse(layers_collapsed), s.bank + 2, max(expected))
    assert ranks == {10} and [round(x) for x in slopes[:10]] == _expand(expected)


def test_one_input_rank_is_certified_by_the_row_count():
    s = _spectrum(_arch(layers=2), bank=1)
    assert s.rank == 6
    assert s.unresolved == 0 and s.kernel == 10 and s.rank_certified


def test_one_layer_collapse_with_a_transcendental_normalizer_says_why_it_is_refused():
    with pytest.raises(DomainError, match="polynomial normalizers only"):
        _spectrum(_arch(layers=2, normalizer="softmax"), collapse([2]))


def test_softplus_with_log2_in_its_taylor_coefficients_agrees_with_mpmath_slopes():
    # s/s(0) = 1 + x/(2 log 2) + ...: log 2 is transcendental, so it is specialized at a random residue
    from symattn.numeric import sensitivity
    from symattn.spectrum import transcendental_constants
    import sympy as sp

    arch = _arch(layers=2, normalizer="softplus")
    assert transcendental_constants(arch) == [sp.log(2)]
    exact = _spectrum(arch)
    assert exact.exponents == {0: 4, 1: 3, 5: 3} and exact.kernel == 6 and exact.separating
    slopes = sensitivity(arch, spectrum=exact)
    assert slopes.recovered
    rounded = sorted(round(v) for v in slopes.mpmath_slopes[:exact.rank])
    assert rounded == sorted(e for e, m in exact.exponents.items() for _ in range(m))


def test_two_independent_transcendental_constants_are_refused():
    # pi and e are not known to be algebraically independent over Q: no exact claim
    arch = _arch(layers=1, normalizer="exp(x) + exp(1)*pi*x**2 + pi")
    with pytest.raises(DomainError, match="one transcendental"):
        _spectrum(arch)


def test_a_disagreement_below_the_truncation_is_reported_even_with_unresolved_directions():
    # cosh predicts {0: 4, 3: 3, 11: 3}; truncated at eps^2 the computed {0: 4} agrees below eps^2 ...
    s = _spectrum(_arch(layers=2, normalizer="cosh"), truncation=2)
    assert s.exponents == {0: 4} and s.unresolved == 6 and s.matches_prediction is None
    # ... while a spectrum whose resolved part differs from the prediction is a disagreement
    assert dataclasses.replace(s, exponents={0: 3}).matches_prediction is False


# -- verdicts whose premises fail are never False ------------------------------------------------------
def test_a_non_separating_bank_makes_the_comparison_undecided_in_every_format(capsys):
    # `symattn spectrum --bank 8 --layers 4` said "matches the prediction: False" although its own
    # separation check showed that the bank of 8 inputs is too small
    s = _spectrum(_arch(layers=4), bank=8)
    assert s.separating is False and "too small" in s.separation_note
    assert s.matches_prediction is None
    verdict = ("undecided: the bank of 8 inputs does not separate (a larger independent bank (12 inputs) gives "
               "{0: 4, 1: 3, 5: 3, 17: 3, 53: 3}, rank 16: this bank is too small); raise --bank")
    assert s.prediction_verdict == verdict
    assert f"- matches the prediction: {verdict}" in s.to_markdown().splitlines()
    assert f"matches the prediction: {verdict}" in str(s).splitlines()
    data = s.to_json()
    assert data["matches_prediction"] is None and data["prediction_verdict"] == verdict


def test_one_token_says_what_is_degenerate_and_compares_with_the_one_token_prediction():
    # one token: S(A) = 1, the scores never reach F; the contact orders do not apply
    s = _spectrum(_arch(layers=2, tokens=1))
    assert s.exponents == {0: 4} and s.kernel == 12 and s.predicted.exponents == {0: 4}
    assert s.degenerate == (
        "one token: every S(A) is the 1 x 1 matrix 1, so the scores never reach F (unobservable) and only the "
        "value map is seen; the contact orders 2k 3^(i-1) - 1 do not apply",)
    assert s.matches_prediction is True
    assert s.prediction_verdict == "yes (the one-token prediction: the value map alone, at order 0)"
    assert f"- degenerate: {s.degenerate[0]}" in s.to_markdown().splitlines()
    assert s.to_json()["degenerate"] == list(s.degenerate)
    assert _spectrum(_arch(layers=2)).degenerate == ()


def test_a_score_rank_above_the_width_is_named_degenerate():
    s = _spectrum(Architecture.uniform(layers=1, width=1, rank=2, tokens=2))
    assert s.degenerate == (
        "score rank a_1 = 2 above the width 1 of layer 1's input: What_1 has rank at most 1 (the rank is capped "
        "at the width), and GL(a_1) fixes a subgroup of dimension (2 - 1)^2 = 1 of (Q_1, K_1), so the gauge orbit "
        "is smaller than the gauge group",)
    assert s.matches_prediction is True  # the prediction uses the capped rank: What_1 of rank 1


def test_blocks_and_exponents_have_int_keys_json_strings():
    s = _spectrum(_arch(layers=2))
    assert s.blocks == {"scores:1": {1: 3}, "scores:2": {5: 3}, "values": {0: 4}}
    assert s.blocks == s.predicted.blocks
    assert all(isinstance(e, int) for histogram in s.blocks.values() for e in histogram)
    assert s.to_json()["blocks"] == {"scores:1": {"1": 3}, "scores:2": {"5": 3}, "values": {"0": 4}}
    assert s.predicted.to_json()["blocks"] == s.to_json()["blocks"]


# -- progress ---------------------------------------------------------------------------------------
class _RecordingBar:
    """A tqdm-like bar that records the phases it shows."""

    def __init__(self):
        self.phases, self.n, self.total, self.refreshes = [], 0, None, 0

    def set_description_str(self, text="", refresh=True):
        self.phases.append([text, None, 0])

    set_description = set_description_str

    def reset(self, total=None):
        self.n, self.total = 0, total
        self.phases[-1][1] = total

    def update(self, n=1):
        self.n += n
        self.phases[-1][2] = self.n

    def refresh(self):
        self.refreshes += 1

    def set_postfix_str(self, text="", refresh=True):
        pass

    def close(self):
        pass


def test_the_progress_bar_names_each_phase_and_counts_pivots_against_the_rank_bound(monkeypatch):
    # `spectrum --layers 6` showed "Smith pivots: 0pivot [00:00, ?pivot/s]", frozen and without a total,
    # through the forward pass that takes most of the time
    import symattn.spectrum as spectrum_module
    from symattn.adaptive import PhaseBar

    bar = _RecordingBar()
    monkeypatch.setattr(spectrum_module, "_progress_bar", lambda progress, arch: bar)
    monkeypatch.setattr(PhaseBar, "interval", 0.0)  # every heartbeat redraws
    s = decay_spectrum(_arch(layers=2), truncation=6, bank=6, confirm=False, progress=True)
    names = [name for name, _, _ in bar.phases]
    assert names[:4] == ["forward pass over jets (15 inputs, eps^6)", "gauge tangents (eps^6)",
                         "block table (Smith form per block, bank of 6)", "Smith form (bank of 6, eps^6)"]
    block_table, smith = bar.phases[2], bar.phases[3]
    assert block_table[1:] == [2, 2]  # scores:1, scores:2 before the values
    assert smith[1] == 10 and smith[2] == s.rank == 10  # every pivot counted, against the rank bound
    assert bar.phases[0][2] >= 5  # the forward pass counts its series products: the bar moves
    assert bar.refreshes >= 4


def test_a_bottleneck_claims_no_multiplicities_and_is_never_a_disagreement():
    # widths 3, 2, 3: What_2 = P_1^T W_2 P_1 lies in the 2-dimensional row space of P_1, so the block of layer 2's
    # scores adds 4 directions, not the 8 of a free rank-2 3 x 3 matrix; "matches the prediction: no" was wrong
    from symattn.effective import effective_block_dimensions

    arch = Architecture([3, 2, 3], [1, 2], tokens=3)
    s = _spectrum(arch)
    assert effective_block_dimensions(arch)["scores:2"] == 8
    assert s.blocks == {"scores:1": {1: 5}, "scores:2": {5: 4}, "values": {0: 8}}
    assert s.predicted.exponents is None and s.matches_prediction is None
    assert s.prediction_verdict == "no formula claimed: a hidden width below the input width (widths [3, 2, 3])"
    assert s.kernel == s.predicted.kernel == 9
