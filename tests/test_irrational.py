"""Normalizers with irrational Taylor coefficients in the exact engine.

Algebraic coefficients (``x**2 - sqrt(3)*x + 1``, temperature-scaled softmax
``exp(x/sqrt(2))``) reach GF(p) through a root of the minimal polynomial of a
primitive element; one transcendental constant through a random residue; two
transcendental constants are refused.  Each result is checked two
independent ways: against softmax (scaling the scores by a constant is
absorbed into Q), and against the same series computed exactly over
Q(sqrt 2) by sympy and numerically by mpmath.
"""

from __future__ import annotations

import re

import mpmath
import numpy as np
import pytest
import sympy as sp

from symattn.algebra.domains import ConstantField, constant_residue
from symattn.algebra.exactseries import ExactSeriesDomain
from symattn.algebra.modseries import ModSeriesDomain
from symattn.curves import collapse
from symattn.errors import DomainError
from symattn.identify import function_space_dimension, identification_orders, identify
from symattn.jacobian import (DEFAULT_PRIMES, constant_field, field_primes, random_point, series_output,
                              small_integer_point, transcendental_constants)
from symattn.model import Architecture
from symattn.normalizers import Normalizer
from symattn.spectrum import decay_spectrum

SQRT3 = "x**2 - sqrt(3)*x + 1"
SCALED = "exp(x/sqrt(2))"


def arch(normalizer, layers=2, width=2, **kw):
    return Architecture.uniform(layers=layers, width=width, normalizer=normalizer, **kw)


# -- the field and its primes ------------------------------------------------------------------------
def test_the_quadratic_with_sqrt3_is_positive_and_has_an_algebraic_field():
    # discriminant 3 - 4 < 0: no real root, positive
    assert sp.discriminant(sp.sympify(SQRT3.replace("x", "y")), sp.Symbol("y")) == -1
    field = constant_field(arch(SQRT3))
    assert (field.theta, field.minimal_polynomial, field.transcendental) == (sp.sqrt(3), sp.Symbol("y")**2 - 3, None)


def test_primes_without_a_root_are_replaced_by_the_largest_prime_below_with_one():
    # 3 is not a square mod 268435399, 2 is not one mod 1048573 (the dimension prime)
    assert sp.legendre_symbol(3, DEFAULT_PRIMES[0]) == -1 and sp.legendre_symbol(2, 1048573) == -1
    primes = field_primes(arch(SQRT3), DEFAULT_PRIMES)
    assert len(set(primes)) == 2 and all(sp.isprime(p) and sp.legendre_symbol(3, p) == 1 for p in primes)
    assert primes[0] == max(p for p in sp.primerange(268435000, DEFAULT_PRIMES[0] + 1) if sp.legendre_symbol(3, p) == 1)
    assert field_primes(arch("softmax"), DEFAULT_PRIMES) == DEFAULT_PRIMES  # rational: unchanged
    with pytest.raises(DomainError, match=r"sqrt\(3\) has no image in GF\(268435399\).*y\*\*2 - 3"):
        random_point(arch(SQRT3), DEFAULT_PRIMES[0], seed=0)


def test_the_map_to_gf_p_is_a_ring_homomorphism_on_the_field():
    p = 268435367
    field = ConstantField([sp.sqrt(2), sp.sqrt(3), sp.sqrt(6)])
    assert field.minimal_polynomial == sp.Symbol("y")**4 - 10 * sp.Symbol("y")**2 + 1
    for q in field.primes((p, 1048573, 65537)):
        table = field.residues(q)
        r2, r3, r6 = (constant_residue(v, q, table) for v in (sp.sqrt(2), sp.sqrt(3), sp.sqrt(6)))
        assert (r2 * r2 - 2) % q == 0 and (r3 * r3 - 3) % q == 0 and (r6 - r2 * r3) % q == 0
        # 1/(1 + sqrt 2) = sqrt 2 - 1 and (sqrt 2 + sqrt 3)^2 = 5 + 2 sqrt 6, which sympy keeps apart
        assert constant_residue(1 / (1 + sp.sqrt(2)), q, table) == (r2 - 1) % q
        assert constant_residue((sp.sqrt(2) + sp.sqrt(3))**2, q, table) == (5 + 2 * r6) % q
    nested = ConstantField([sp.sqrt(1 + sp.sqrt(2))])
    q = nested.primes((p,))[0]
    table = nested.residues(q)
    assert (constant_residue(sp.sqrt(1 + sp.sqrt(2)), q, table) ** 2 - constant_residue(1 + sp.sqrt(2), q, table)) % q == 0


def _exact_and_modular_series(normalizer, truncation=5):
    a = arch(normalizer, layers=1, width=1, tokens=2)
    point, bank = small_integer_point(a, seed=0)
    bank = bank[:1]
    p = field_primes(a, DEFAULT_PRIMES[:1])[0]
    _, values = random_point(a, p, seed=0)
    modular = series_output(a, collapse(), point, bank, ModSeriesDomain(p, truncation, coefficient_values=values))
    exact = series_output(a, collapse(), {k: v.astype(object) for k, v in point.items()}, bank.astype(object),
                          ExactSeriesDomain(truncation))
    return a, point, bank, p, values, modular, exact


@pytest.mark.parametrize("normalizer", [SQRT3, SCALED, "exp(pi*x/sqrt(2))"])
def test_series_over_gf_p_are_the_images_of_the_exact_series_over_the_field(normalizer):
    # two computations: sympy's exact numbers in Q(theta)(g) at the real constants, and residues mod p
    a, point, bank, p, values, modular, exact = _exact_and_modular_series(normalizer)
    images = np.vectorize(lambda c: constant_residue(c, p, values), otypes=[object])(exact)
    assert images.astype(np.int64).tolist() == modular.tolist()
    assert any(not sp.sympify(c).is_Rational for c in exact.flat)  # the constants do reach the output


def test_a_wrong_image_of_sqrt2_gives_other_series():
    # the same computation with sqrt(2) sent to a residue that is not a root: the test above has teeth
    a, point, bank, p, values, modular, exact = _exact_and_modular_series(SCALED)
    wrong = {sp.sqrt(2): values[sp.sqrt(2)] + 1}
    other = series_output(a, collapse(), point, bank, ModSeriesDomain(p, 5, coefficient_values=wrong))
    assert other.tolist() != modular.tolist()


def test_the_exact_series_agree_with_mpmath_at_the_real_sqrt2():
    a, point, bank, p, values, modular, exact = _exact_and_modular_series(SCALED, truncation=4)
    eps = mpmath.mpf("1e-3")
    with mpmath.workdps(40):
        s = lambda z: mpmath.exp(z / mpmath.sqrt(2))  # noqa: E731
        Q, K, V = (int(point[(name, 1)][0, 0]) for name in ("Q", "K", "V"))
        X = [int(v) for v in bank[0, 0]]
        # one layer, width 1: A_jk = x_j K Q x_k eps^2, F = V X S(A)
        for k in range(2):
            weights = [s(X[j] * K * Q * X[k] * eps**2) for j in range(2)]
            value = V * sum(X[j] * weights[j] for j in range(2)) / sum(weights)
            series = sum(mpmath.mpf(sp.N(c, 40)) * eps**n for n, c in enumerate(exact[0, k, 0]))
            assert abs(value - series) < eps**4 * 100


# -- the commands: certified results, equal to softmax's for exp(x/sqrt(2)) --------------------------
def test_dimension_of_the_sqrt3_quadratic_and_scaled_softmax_is_certified():
    for normalizer in (SQRT3, SCALED):
        result = function_space_dimension(arch(normalizer), estimate="float64")
        assert result.certified and result.lower == result.upper == 10
        assert result.estimate == 10  # the numerical rank at a real point, the real sqrt(3) / sqrt(2)
        assert "mapped to a root of its minimal polynomial" in result.method
        assert sp.legendre_symbol(3 if normalizer == SQRT3 else 2, result.prime) == 1
    softmax = function_space_dimension(arch("softmax", layers=3))
    scaled = function_space_dimension(arch(SCALED, layers=3))
    assert (scaled.lower, scaled.upper, scaled.certified) == (softmax.lower, softmax.upper, softmax.certified)


def test_the_spectrum_of_scaled_softmax_is_the_spectrum_of_softmax():
    # S(exp(A/sqrt 2)) is softmax of the scores of Q/sqrt(2): the same function space, the same spectrum
    for shape in (dict(layers=2, width=2), dict(layers=1, width=3, rank=2)):
        softmax = decay_spectrum(arch("softmax", **shape), progress=False)
        scaled = decay_spectrum(arch(SCALED, **shape), progress=False)
        assert scaled.exponents == softmax.exponents and scaled.blocks == softmax.blocks
        assert (scaled.rank, scaled.kernel, scaled.confirmed, scaled.rank_certified) == \
            (softmax.rank, softmax.kernel, True, True)
        assert "sqrt(2) mapped to a root of its minimal polynomial y**2 - 2" in scaled.method


def test_the_spectrum_of_the_sqrt3_quadratic_uses_primes_with_a_root():
    result = decay_spectrum(arch(SQRT3), progress=False)
    assert result.confirmed and result.rank_certified and result.exponents == {0: 4, 1: 3, 5: 3}
    assert all(sp.legendre_symbol(3, p) == 1 for p in result.primes)
    r = constant_field(arch(SQRT3)).root(result.primes[0])
    assert f"sqrt(3) mapped to a root of its minimal polynomial y**2 - 3 ({r} mod {result.primes[0]}" in result.method
    assert "a nonzero minor mod p is nonzero in Q(sqrt(3))" in result.method


def test_identify_on_scaled_softmax_matches_softmax():
    softmax, scaled = identify(arch("softmax")), identify(arch(SCALED))
    assert scaled.dimension.certified and scaled.fiber.kernel_is_gauge_orbit
    assert [(o.order, o.sharp) for o in scaled.orders] == [(o.order, o.sharp) for o in softmax.orders]
    assert scaled.jet_ranks == softmax.jet_ranks and scaled.values.order == softmax.values.order
    assert scaled.fiber.sign_group_order == softmax.fiber.sign_group_order
    assert scaled.method.count("sqrt(2) mapped to a root") == 3  # dimension, orders, fiber
    assert "sqrt(2) mapped to a root" in scaled.fiber.method


def test_identification_orders_of_the_sqrt3_quadratic_are_confirmed():
    result = identification_orders(arch(SQRT3))
    assert [o.order for o in result.scores] == [2, 6] and all(o.sharp for o in result.scores)
    assert len(result.primes) == 2 and all(sp.legendre_symbol(3, p) == 1 for p in result.primes)


def test_an_even_polynomial_with_sqrt2_keeps_its_sign_flips():
    # 1 + sqrt(2) x^2 is even: its sign flips were compared over Q, which has no sqrt(2) (exit 2)
    result = identify(arch("1 + sqrt(2)*x**2"))
    assert result.fiber.sign_group_order == 4 and all(c.preserved for c in result.fiber.sign_flips)


# -- one transcendental constant, with or without algebraic numbers ------------------------------------
@pytest.mark.parametrize("normalizer, constant", [("exp(E*x)", sp.E), ("1 + pi*x**2", sp.pi),
                                                  ("exp(pi*x/sqrt(2))", sp.pi),
                                                  ("exp(exp(sqrt(2))*x)", sp.exp(sp.sqrt(2)))])
def test_one_transcendental_constant_is_exact(normalizer, constant):
    # exp(E*x) has E, exp(2), exp(3), ...: powers of one constant (it was refused as several)
    a = arch(normalizer)
    assert transcendental_constants(a) == [constant]
    result = function_space_dimension(a)
    assert result.certified and "treated as an indeterminate" in result.method


@pytest.mark.parametrize("normalizer, names", [("exp(pi*x) + exp(E*x)", "E and pi"),
                                               ("log(2 + exp(x)) + log(3 + exp(x))", "log(3) and log(4)")])
def test_two_transcendental_constants_are_refused_clearly(normalizer, names, capsys):
    from symattn.cli import main

    with pytest.raises(DomainError, match=re.escape(f"transcendental constants {names} are not powers of one constant")):
        function_space_dimension(arch(normalizer))
    with pytest.raises(DomainError, match="algebraically independent is not known"):
        decay_spectrum(arch(normalizer), progress=False)
    status = main(["dimension", "--layers", "1", "--normalizer", normalizer, "--quiet"])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and names in err and "symattn sensitivity" in err


def test_constants_of_unknown_nature_are_refused_clearly():
    with pytest.raises(DomainError, match=r"cos\(1\), sin\(1\).*no image in GF\(p\)"):
        function_space_dimension(arch("2 + cos(x + 1)"))


def test_too_large_a_field_is_refused_before_any_work():
    normalizer = "exp(sqrt(2)*x) + exp(sqrt(3)*x) + exp(sqrt(5)*x) + exp(sqrt(7)*x)"
    with pytest.raises(DomainError, match="4 algebraic irrationalities"):
        function_space_dimension(arch(normalizer, layers=1))


# -- the command line -----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["dimension", "spectrum", "identify"])
def test_commands_give_certified_results_with_the_root_mapping(command, capsys):
    from symattn.cli import main

    status = main([command, "--layers", "2", "--normalizer", SQRT3, "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "sqrt(3) mapped to a root of its minimal polynomial y**2 - 3" in out


def test_normalizer_taylor_data_is_unchanged():
    assert Normalizer(SCALED).taylor(3) == [1, sp.sqrt(2) / 2, sp.Rational(1, 4), sp.sqrt(2) / 24]


def test_a_normalizer_whose_exact_taylor_data_explodes_is_refused_in_seconds():
    # atan(tanh(cos(2x + 1))): cancelling its coefficients of degree 8 over Q(e^cos 1, sin 1, ...) ran for minutes
    import time

    from symattn.errors import NormalizerError

    started = time.perf_counter()
    with pytest.raises(NormalizerError, match="too large to compute exactly"):
        Normalizer("2 + atan(tanh(cos(2*x + 1)))", assume_positive=True).taylor(8)
    assert time.perf_counter() - started < 30


@pytest.mark.parametrize("variant", [dict(heads=2), dict(causal=True), dict(residual=True)])
def test_the_variants_with_the_sqrt3_quadratic(variant):
    # the symmetry-orbit bound of the variants drew its point at the default prime, which has no sqrt(3)
    a = arch(SQRT3, **variant)
    result = decay_spectrum(a, progress=False)
    same = decay_spectrum(arch("x**2 - x + 1", **variant), progress=False)
    assert result.rank_certified and (result.rank, result.kernel) == (same.rank, same.kernel)
    assert function_space_dimension(a).lower == function_space_dimension(arch("x**2 - x + 1", **variant)).lower
