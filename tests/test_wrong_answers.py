"""Silent wrong answers and raw Python errors at the entry points (issue 9, "Safe input").

Each test pins one case that used to give a wrong number or a bare
``TypeError``/``AttributeError``:

* the block table of a spectrum on a bank that is not shown separating;
* banks with NaN, infinities, non-numbers or the wrong shape;
* the sign group of lightning attention (report, identify and check agree);
* ``effective_forward`` against ``model.forward`` (lightning included);
* wrong types and seeds at every public entry point.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import re
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from symattn import check as check_module
from symattn import expand as expand_module
from symattn import identify as identify_module
from symattn import numeric as numeric_module
from symattn import observe as observe_module
from symattn.algebra.domains import MpmathDomain, RationalDomain, SympyDomain
from symattn.check import check_claim, check_claims
from symattn.cli import main
from symattn.effective import (
    combined_value_map,
    effective_dimension,
    effective_forward,
    effective_scores,
    flip_preserves_output,
    sign_flip,
    sign_group_order,
)
from symattn.errors import BankError, ShapeError, SymattnError
from symattn.identify import generic_fiber
from symattn.model import MAX_LAYERS, Architecture, forward, require_architecture, require_seed
from symattn.normalizers import PRESETS, Normalizer
from symattn.report import architecture_report
from symattn.spectrum import decay_spectrum, predicted_spectrum, random_bank, random_point, validate_bank


def _random_rational_instance(arch: Architecture, seed: int):
    """Rational parameters and input, small numerators and denominators."""
    rng = random.Random(seed)

    def value():
        return Fraction(rng.randint(-9, 9), rng.randint(1, 7))

    params = arch.parameters_from_flat([value() for _ in range(arch.param_count)])
    X = [[value() for _ in range(arch.tokens)] for _ in range(arch.widths[0])]
    return params, X


def _negative_counts(value) -> list:
    """Every negative number in a JSON-like value (dict values, list items)."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in _negative_counts(v)]
    if isinstance(value, list):
        return [n for v in value for n in _negative_counts(v)]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [value]
    return []


# -- 1. block tables only on a bank shown to be separating -----------------------------------------
TWO_LAYERS = Architecture.uniform(layers=2, width=2, rank=1, tokens=3, normalizer="softmax")


@pytest.mark.parametrize("bank", [1, 2, 3, 4])
def test_small_bank_gives_no_block_table(bank):
    s = decay_spectrum(TWO_LAYERS, bank=bank, progress=False)
    assert s.separating is False
    assert s.blocks == {} and s.block_comparison() == []
    assert s.blocks_withheld.startswith(f"the bank of {bank} inputs is not shown to be separating")
    data = s.to_json()
    assert data["blocks"] is None and data["block_comparison"] is None
    assert data["blocks_withheld"] == s.blocks_withheld
    assert _negative_counts(data) == []
    markdown = s.to_markdown()
    assert "| block |" not in markdown and "No block table: the bank of" in markdown
    assert "not shown separating: no block table" in s.to_latex()
    assert "not shown separating" in s._repr_latex_()
    assert "no block table" in str(s)


def test_one_input_rank_is_bounded_by_its_outputs():
    # one input gives d_l * t = 6 output entries, so the rank is at most 6 < 10 = effective dimension
    s = decay_spectrum(TWO_LAYERS, bank=1, progress=False)
    assert s.rank == 6 and effective_dimension(TWO_LAYERS) == 10
    assert sum(s.exponents.values()) == 6 and all(m > 0 for m in s.exponents.values())


def test_separating_bank_keeps_a_consistent_block_table():
    s = decay_spectrum(TWO_LAYERS, progress=False)
    assert s.separating and s.blocks_withheld == ""
    assert s.blocks == {"scores:1": {1: 3}, "scores:2": {5: 3}, "values": {0: 4}}
    totals: dict = {}
    for histogram in s.blocks.values():
        for e, m in histogram.items():
            assert m > 0
            totals[int(e)] = totals.get(int(e), 0) + m
    assert totals == s.exponents == {0: 4, 1: 3, 5: 3}
    assert [row["agrees"] for row in s.block_comparison()] == [True, True, True]
    assert "| block | computed | predicted |" in s.to_markdown()


def test_negative_block_counts_are_never_shown_even_on_a_separating_bank():
    s = decay_spectrum(TWO_LAYERS, progress=False)
    negative = {"scores:1": {"1": 3}, "scores:2": {"5": 4, "7": -1}, "values": {"0": 4}}
    bad = dataclasses.replace(s, blocks=negative)
    assert bad.blocks == {} and bad.block_comparison() == []
    assert "negative counts {'scores:2': {'7': -1}}" in bad.blocks_withheld
    assert _negative_counts(bad.to_json()) == []
    inconsistent = dataclasses.replace(s, blocks={"scores:1": {"1": 3}, "scores:2": {"5": 3}, "values": {"0": 3}})
    assert inconsistent.blocks == {} and "not to the spectrum" in inconsistent.blocks_withheld


def test_cli_small_bank_prints_no_block_table(capsys):
    assert main(["spectrum", "--layers", "2", "--bank", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "No block table: the bank of 1 inputs is not shown to be separating" in out
    assert not re.search(r"\| -\d", out) and "x eps^" not in out
    assert main(["spectrum", "--layers", "2", "--bank", "2", "--quiet", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["separating"] is False and data["blocks"] is None and _negative_counts(data) == []


# -- 2. finite inputs only in banks ------------------------------------------------------------------
ONE_WIDE = Architecture.uniform(layers=1, width=1, rank=1, tokens=2)


@pytest.mark.parametrize("bank, message", [
    ([[[math.nan, 1]]], "entry nan at (0, 0), which is not finite"),
    ([[[1, math.inf]]], "entry inf at (0, 1), which is not finite"),
    ([[[-math.inf, 1]]], "entry -inf at (0, 0), which is not finite"),
    (np.array([[[np.nan, 1.0]]]), "entry nan at (0, 0), which is not finite"),
    ([[[sp.nan, 1]]], "entry nan at (0, 0), which is not finite"),
    ([[[sp.oo, 1]]], "entry oo at (0, 0), which is not finite"),
    ([[[sp.I, 1]]], "entry I at (0, 0), which is not a real number"),
    ([[[1j, 1]]], "entry 1j at (0, 0), which is of type complex, not a number"),
    ([[["abc", 1]]], "entry 'abc' at (0, 0), which is a string that is not a decimal or fraction"),
    ([[[None, 1]]], "entry None at (0, 0), which is of type NoneType, not a number"),
    ([[[True, 1]]], "entry True at (0, 0), which is a boolean, not a number"),
    ([[[1, 2, 3]]], "bank input 0 has shape (1, 3); a bank is a list of d_0 x t = 1 x 2 matrices"),
    ([[1, 2]], "bank input 0 has shape (2,)"),
    ([[[1, 2]], [[1], [2]]], "bank input 1 has shape (2, 1)"),
    ([], "a bank needs at least one input"),
    ([[[1, 2]], None], "bank input 1 has shape ()"),
])
def test_bad_banks_are_refused_everywhere(bank, message):
    with pytest.raises(BankError) as error:
        validate_bank(ONE_WIDE, bank)
    assert message in str(error.value)
    # the same check, and so the same message, in every function that takes a user's bank
    with pytest.raises(BankError, match=re.escape(message)):
        decay_spectrum(ONE_WIDE, bank=bank, progress=False)
    with pytest.raises(BankError, match=re.escape(message)):
        numeric_module.sensitivity(ONE_WIDE, bank=bank)
    with pytest.raises(BankError, match=re.escape(message)):
        numeric_module.numeric_jacobian(ONE_WIDE, [1, 1, 1], bank, Fraction(1, 10))


def test_finite_banks_are_accepted_with_the_same_spectrum():
    rational = [[[1, Fraction(1, 3)]], [[2, -5]], [[Fraction(-7, 2), 4]]]
    as_text = [[["1", "1/3"]], [["2", "-5"]], [["-7/2", "4"]]]
    as_sympy = [sp.Matrix([[1, sp.Rational(1, 3)]]), sp.Matrix([[2, -5]]), sp.Matrix([[sp.Rational(-7, 2), 4]])]
    spectra = [decay_spectrum(ONE_WIDE, bank=b, progress=False) for b in (rational, as_text, as_sympy)]
    assert [s.exponents for s in spectra] == [{0: 1, 1: 1}] * 3
    assert [s.bank for s in spectra] == [3, 3, 3]


def test_nan_bank_is_no_longer_called_separating():
    with pytest.raises(BankError, match="nan"):
        decay_spectrum(ONE_WIDE, bank=[[[float("nan"), 1]]], progress=False)


# -- 3. one sign group: report, identify and check agree ------------------------------------------
SIGN_CASES = [
    *[(name, 2) for name in PRESETS],
    (Normalizer.generic(k=2, even=True), 2),
    (Normalizer.generic(k=1), 2),
    ("1 + x**3 + x**4", 2),
    ("lightning", 1),
    ("lightning", 2),
    ("lightning", 3),
    (["lightning", "cosh", "lightning"], 3),
    (["softmax", "lightning"], 2),
    (["lightning", "quadratic"], 2),
    (["softmax", "cosh", "sigmoid"], 3),
]
EXPECTED_ORDERS = {
    "softmax": 1, "exp": 1, "cosh": 4, "quadratic": 4, "gauss": 4, "softplus": 1, "sigmoid": 1,
    "generic(k=2, even)": 4, "generic(k=1)": 1, "1 + x**3 + x**4": 1,
    ("lightning", 1): 1, ("lightning", 2): 2, ("lightning", 3): 4,
    "lightning,cosh,lightning": 4, "softmax,lightning": 1, "lightning,quadratic": 2, "softmax,cosh,sigmoid": 2,
}


def _sign_arch(normalizer, layers) -> Architecture:
    return Architecture.uniform(layers=layers, width=2, rank=1, tokens=3, normalizer=normalizer)


def _expected_order(normalizer, layers) -> int:
    if normalizer == "lightning":
        return EXPECTED_ORDERS[("lightning", layers)]
    if isinstance(normalizer, list):
        return EXPECTED_ORDERS[",".join(normalizer)]
    return EXPECTED_ORDERS[normalizer.name if isinstance(normalizer, Normalizer) else normalizer]


@pytest.mark.parametrize("normalizer, layers", SIGN_CASES, ids=lambda v: str(v))
def test_report_identify_and_check_agree_on_the_sign_group(normalizer, layers):
    arch = _sign_arch(normalizer, layers)
    expected = _expected_order(normalizer, layers)
    assert sign_group_order(arch) == expected
    assert architecture_report(arch).sign_group_order == expected
    fiber = generic_fiber(arch)
    # identify verifies every flip (all subsets up to 4 layers) with its own series / exact computation
    assert fiber.sign_group_order == fiber.sign_group_verified == expected
    assert all(c.agrees for c in fiber.sign_flips)
    claim = check_claim(arch, f"sign_group_order = {expected}")
    assert claim.computed == expected and claim.verdict is True, claim.method
    assert check_claim(arch, f"sign_group_order = {expected + 1}").verdict is False


@pytest.mark.parametrize("normalizers", [
    ["lightning", "lightning"],
    ["lightning", "lightning", "lightning"],
    ["lightning", "1 + x**2", "lightning"],
    ["1 + x**3 + x**4", "lightning", "lightning"],
    ["1 + x**2", "1 + x**3 + x**4"],
])
def test_sign_group_is_the_flips_that_keep_f_exactly(normalizers):
    # exact over Q: every set of flipped layers, compared with the unflipped output
    arch = Architecture([2] * (len(normalizers) + 1), [1] * len(normalizers), tokens=3, normalizer=normalizers)
    params, X = _random_rational_instance(arch, seed=1)
    reference = forward(arch, params, X, RationalDomain())
    kept = [subset for size in range(len(normalizers) + 1)
            for subset in itertools.combinations(range(1, len(normalizers) + 1), size)
            if np.array_equal(forward(arch, sign_flip(params, subset), X, RationalDomain()), reference)]
    assert len(kept) == sign_group_order(arch)
    assert all(flip_preserves_output(arch, subset) for subset in kept)


def test_one_lightning_flip_negates_f_and_two_keep_it():
    arch = _sign_arch("lightning", 2)
    params, X = _random_rational_instance(arch, seed=2)
    QQ = RationalDomain()
    reference = forward(arch, params, X, QQ)
    assert np.array_equal(forward(arch, sign_flip(params, [1]), X, QQ), -reference)
    assert np.array_equal(forward(arch, sign_flip(params, [2]), X, QQ), -reference)
    assert np.array_equal(forward(arch, sign_flip(params, [1, 2]), X, QQ), reference)
    assert reference.any()


def test_one_token_makes_every_normalized_flip_free():
    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=1, normalizer="softmax")
    assert sign_group_order(arch) == 4
    claim = check_claim(arch, "sign_group_order = 4")
    assert claim.verdict is True and claim.computed == 4, claim.method


def test_cli_report_and_check_print_the_same_lightning_sign_group(capsys):
    assert main(["report", "--normalizer", "lightning", "--layers", "2", "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["sign_group_order"] == 2
    assert main(["check", "--normalizer", "lightning", "--layers", "2", "--claim", "sign_group_order = 2",
                 "--json", "--quiet"]) == 0
    (claim,) = json.loads(capsys.readouterr().out)["claims"]
    assert claim["computed"] == 2 and claim["verdict"] is True


# -- 4. one forward pass ------------------------------------------------------------------------
def _canonical(expr, atoms: dict):
    """``expr`` as a rational function of symbols that stand for its ``exp(...)`` atoms, innermost first.

    Two outputs whose canonical difference cancels to 0 are equal exactly
    (substituting the atoms back gives the identity).
    """
    if isinstance(expr, sp.exp):
        key = sp.cancel(_canonical(expr.args[0], atoms))
        if key not in atoms:
            atoms[key] = sp.Symbol(f"exp_atom_{len(atoms)}")
        return atoms[key]
    if expr.is_Atom:
        return expr
    return expr.func(*[_canonical(a, atoms) for a in expr.args])


@pytest.mark.parametrize("normalizers", [
    ["lightning", "lightning"],
    ["lightning", "lightning", "lightning"],
    ["lightning", "1 + x**2"],
    ["1 + x**3 + x**4", "lightning"],
])
def test_effective_forward_is_forward_exactly_over_q(normalizers):
    arch = Architecture([2, 3, 2, 2][: len(normalizers) + 1], [1, 2, 1][: len(normalizers)], tokens=3,
                        normalizer=normalizers)
    QQ = RationalDomain()
    for seed in range(3):
        params, X = _random_rational_instance(arch, seed)
        native = forward(arch, params, X, QQ)
        effective = effective_forward(arch, effective_scores(params), combined_value_map(params), X, QQ)
        assert np.array_equal(native, effective)
        wrong = effective_forward(arch, effective_scores(params), 2 * combined_value_map(params), X, QQ)
        assert not np.array_equal(native, wrong) or not native.any()


@pytest.mark.slow  # over 1.5 s: in the whole suite, not in the fast tier
def test_effective_forward_is_forward_exactly_for_softmax():
    arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer="softmax")
    params, X = _random_rational_instance(arch, seed=3)
    params = arch.parameters_from(*[[sp.Matrix(m).applyfunc(sp.Rational) for m in block]
                                    for block in (params.Q, params.K, params.V)])
    domain = SympyDomain()
    native = forward(arch, params, X, domain)
    effective = effective_forward(arch, effective_scores(params), combined_value_map(params), X, domain)
    atoms: dict = {}
    assert [sp.cancel(_canonical(a, atoms) - _canonical(b, atoms)) for a, b in zip(native.flat, effective.flat)] \
        == [0] * 6
    # and numerically, so that the canonical form cannot hide a difference
    mp = MpmathDomain(dps=50)
    difference = forward(arch, params, X, mp) - effective_forward(
        arch, effective_scores(params), combined_value_map(params), X, mp)
    assert max(abs(v) for v in difference.flat) < mp._mpmath.mpf(10) ** -40


# -- 5. wrong types at entry points ---------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    ((None, [1]), "widths must be a list of positive integers, got NoneType None"),
    (([2, 2], None), "score ranks must be a list of positive integers, got NoneType None"),
    (("22", [1]), "widths must be a list of positive integers, got str '22'"),
    ((2, [1]), "widths must be a list of positive integers, got int 2"),
    (({2: 1, 3: 1}, [1]), "widths must be a list of positive integers, got dict"),
    (([2, True], [1]), "widths must be positive integers, got [2, True]"),
    (([2, 2.0], [1]), "widths must be positive integers, got [2, 2.0]"),
    (([2, 0], [1]), "widths must be positive integers, got [2, 0]"),
    (([2, 2], [-1]), "score ranks must be positive integers, got [-1]"),
    (([2], []), "widths must list d_0, ..., d_l with at least one layer, got [2]"),
    (([2, 2], [1], 0), "tokens must be a positive integer, got 0"),
    (([2, 2], [1], True), "tokens must be a positive integer, got True"),
    (([2, 2], [1], "3"), "tokens must be a positive integer, got '3'"),
    ((range(10**20), [1]), f"at most {MAX_LAYERS} layers are accepted"),
])
def test_architecture_validates_its_arguments(args, message):
    with pytest.raises(ShapeError) as error:
        Architecture(*args)
    assert message in str(error.value)


@pytest.mark.parametrize("layers, message", [
    (0, "layers must be a positive integer, got 0"),
    (True, "layers must be a positive integer, got True"),
    (10**20, f"layers must be at most {MAX_LAYERS}, got 100000000000000000000"),
])
def test_uniform_layers_are_bounded(layers, message):
    with pytest.raises(ShapeError, match=re.escape(message)):
        Architecture.uniform(layers=layers)


ENTRY_POINTS = [
    ("decay_spectrum", lambda a: decay_spectrum(a, progress=False)),
    ("predicted_spectrum", predicted_spectrum),
    ("identify", lambda a: identify_module.identify(a)),
    ("function_space_dimension", lambda a: identify_module.function_space_dimension(a)),
    ("identification_orders", lambda a: identify_module.identification_orders(a)),
    ("generic_fiber", lambda a: identify_module.generic_fiber(a)),
    ("sign_flip_checks", lambda a: identify_module.sign_flip_checks(a)),
    ("gauge_slice", lambda a: identify_module.gauge_slice(a)),
    ("observe", lambda a: observe_module.observe(a)),
    ("rank_check", lambda a: observe_module.rank_check(a)),
    ("contact_orders", lambda a: observe_module.contact_orders(a, "scores:1")),
    ("exceptional_fibers", lambda a: observe_module.exceptional_fibers(a)),
    ("dependency_graph", lambda a: observe_module.dependency_graph(a)),
    ("all_events", lambda a: observe_module.all_events(a)),
    ("expand", lambda a: expand_module.expand(a)),
    ("leading_orders", lambda a: expand_module.leading_orders(a)),
    ("leading_coefficient", lambda a: expand_module.leading_coefficient(a, 1)),
    ("verify_leading_coefficient", lambda a: expand_module.verify_leading_coefficient(a, 1)),
    ("curve_symbols", lambda a: expand_module.curve_symbols(a)),
    ("numeric_jacobian", lambda a: numeric_module.numeric_jacobian(a, [1], [[[1]]], 0.1)),
    ("sensitivity", lambda a: numeric_module.sensitivity(a)),
    ("check_claims", lambda a: check_claims(a, ["kernel = 6"])),
    ("check_claim", lambda a: check_module.check_claim(a, "kernel = 6")),
    ("effective_forward", lambda a: effective_forward(a, [], [[1]], [[1]], RationalDomain())),
]


@pytest.mark.parametrize("name, call", ENTRY_POINTS, ids=[name for name, _ in ENTRY_POINTS])
@pytest.mark.parametrize("bad", [None, "softmax", 3, [2, 2, 2]], ids=["None", "str", "int", "list"])
def test_entry_points_refuse_what_is_not_an_architecture(name, call, bad):
    with pytest.raises(ShapeError) as error:
        call(bad)
    text = str(error.value)
    assert text.startswith("arch must be a symattn.model.Architecture, e.g. Architecture.uniform(")
    assert f"got {type(bad).__name__} {bad!r}" in text


SEEDED = [
    ("decay_spectrum", lambda a, s: decay_spectrum(a, seed=s, progress=False)),
    ("identify", lambda a, s: identify_module.identify(a, seed=s)),
    ("generic_fiber", lambda a, s: identify_module.generic_fiber(a, seed=s)),
    ("observe", lambda a, s: observe_module.observe(a, seed=s)),
    ("rank_check", lambda a, s: observe_module.rank_check(a, seed=s)),
    ("contact_orders", lambda a, s: observe_module.contact_orders(a, "scores:1", seed=s)),
    ("exceptional_fibers", lambda a, s: observe_module.exceptional_fibers(a, seed=s)),
    ("sensitivity", lambda a, s: numeric_module.sensitivity(a, seed=s)),
    ("check_claims", lambda a, s: check_claims(a, ["kernel = 6"], seed=s)),
    ("verify_leading_coefficient", lambda a, s: expand_module.verify_leading_coefficient(a, 1, seed=s)),
    ("random_bank", lambda a, s: random_bank(a, 2, 101, s)),
    ("random_point", lambda a, s: random_point(a, 101, s)),
]


@pytest.mark.parametrize("name, call", SEEDED, ids=[name for name, _ in SEEDED])
@pytest.mark.parametrize("seed", [-1, 1.5, True, "3", None])
def test_seeds_must_be_non_negative_integers(name, call, seed):
    with pytest.raises(SymattnError) as error:
        call(TWO_LAYERS, seed)
    assert str(error.value) == f"seed must be a non-negative integer (0, 1, 2, ...), got {seed!r}"


def test_shared_checks_accept_what_they_should():
    assert require_architecture(TWO_LAYERS) is TWO_LAYERS
    assert require_seed(np.int64(7)) == 7 and type(require_seed(np.int64(7))) is int
    assert require_seed(0) == 0


@pytest.mark.parametrize("argv", [
    ["observe", "--seed", "-1"],
    ["spectrum", "--layers", "1", "--seed", "-1"],
    ["identify", "--layers", "1", "--seed", "-1"],
])
def test_cli_negative_seed_is_a_user_error(argv, capsys):
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == "symattn: error: seed must be a non-negative integer (0, 1, 2, ...), got -1\n"
