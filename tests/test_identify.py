"""Identification: dimension of the function space, generic fiber, identification orders.

Exact values throughout.  Second, independent checks: the block elimination
of :func:`series_rank` against :func:`smith_valuations`; the BLAS series
product against :func:`symattn.spectrum.jacobian_series`; the certified
dimension against a float64 numerical rank; sign-flip witnesses against
mpmath slopes of ``F(flipped) - F`` along the curve; the vanishing below each
order against an exact symbolic computation with a generic normalizer.
"""

from __future__ import annotations

import json

import mpmath
import numpy as np
import pytest

from symattn.algebra.domains import MpmathDomain
from symattn.algebra.valuations import smith_valuations
from symattn.cli import main
from symattn.curves import collapse, input_scaling
from symattn.effective import effective_dimension, gauge_dimension
from symattn.errors import DomainError, ShapeError, SymattnError
from symattn.identify import (
    DIMENSION_PRIME,
    dimension_table,
    function_space_dimension,
    gauge_slice,
    generic_fiber,
    hmk_dimension,
    identification_orders,
    identify,
    series_rank,
    sign_flip_checks,
)
from symattn.model import Architecture, forward
from symattn.jacobian import jacobian_series, random_bank, random_point

KS = {"softmax": 1, "cosh": 2}


# -- identification orders ---------------------------------------------------------------
@pytest.mark.parametrize("normalizer", ["softmax", "cosh"])
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_orders_are_2k_3_to_the_i_minus_1_and_sharp(layers, normalizer):
    k = KS[normalizer]
    result = identification_orders(Architecture.uniform(layers=layers, normalizer=normalizer))
    assert [o.order for o in result.scores] == [2 * k * 3 ** (i - 1) for i in range(1, layers + 1)]
    assert [o.predicted for o in result.scores] == [o.order for o in result.scores]
    assert all(o.sharp and o.vanishing_below and o.confirmed for o in result.scores)
    # (b): the jet up to the order has full rank on the block's 3 effective parameters
    assert [(o.jet_rank, o.block_dimension) for o in result.scores] == [(3, 3)] * layers
    assert result.values.order == 0 and result.values.sharp
    assert (result.values.jet_rank, result.values.block_dimension) == (4, 4)
    assert result.matches_prediction and result.all_sharp
    assert result.error_bound < 1e-6


@pytest.mark.parametrize("normalizer", ["softmax", "cosh"])
def test_orders_are_native_valuations_plus_one_for_collapsed_blocks(normalizer):
    # independently, from the package's native Jacobian series: the derivative in Qt_i is eps
    # times the native derivative in Q_i, so order = valuation + 1; the values keep their valuation
    arch = Architecture.uniform(layers=2, normalizer=normalizer)
    p = 268435399
    point, coefficient_values = random_point(arch, p, 5)
    J = jacobian_series(arch, collapse(), random_bank(arch, 4, p, 5), point, p, 14, coefficient_values)
    index = arch.parameter_index()

    def valuation(columns):
        return next(n for n in range(J.shape[-1]) if J[:, columns, n].any())

    scores = [valuation([j for j, (name, layer, _, _) in enumerate(index) if name != "V" and layer == i]) + 1
              for i in (1, 2)]
    values = valuation([j for j, (name, _, _, _) in enumerate(index) if name == "V"])
    result = identification_orders(arch, seed=9)
    assert [o.order for o in result.scores] == scores and result.values.order == values == 0


def test_vanishing_below_the_orders_is_an_exact_identity_for_small_networks():
    # symbolic parameters and input, generic normalizer 1 + c_1 x + c_2 x^2 + ... (flint polynomials)
    softmax = identification_orders(Architecture.uniform(layers=2, normalizer="softmax"))
    assert [o.exact_independence for o in (*softmax.scores, softmax.values)] == [True, True, True]
    cosh = identification_orders(Architecture.uniform(layers=1, normalizer="cosh"))
    assert [o.exact_independence for o in (*cosh.scores, cosh.values)] == [True, True]
    # beyond the automatic limit the check is skipped, and the report says so
    deep = identification_orders(Architecture.uniform(layers=3, normalizer="softmax"))
    assert [o.exact_independence for o in deep.scores] == [None, None, None]
    assert "checked exactly" not in deep.method
    off = identification_orders(Architecture.uniform(layers=1), exact_check=False)
    assert off.scores[0].exact_independence is None


def test_orders_for_wider_networks_and_score_rank_two():
    result = identification_orders(Architecture.uniform(layers=2, width=3, rank=2, normalizer="softmax"))
    assert [o.order for o in result.scores] == [2, 6]
    assert [(o.jet_rank, o.block_dimension) for o in result.scores] == [(8, 8), (8, 8)]
    assert result.values.order == 0 and (result.values.jet_rank, result.values.block_dimension) == (9, 9)
    assert result.all_sharp


def test_hidden_bottleneck_orders_and_dimension():
    # d = (3, 2, 3): What_2 only moves inside the row space of P_1 (dimension 2), so the columns
    # of (Q_2, K_2) reach 1 * (2 * 2 - 1) = 3 of the 5 dimensions of rank-1 3 x 3 matrices
    report = identify(Architecture([3, 2, 3], [1, 1]), estimate=None)
    assert [(o.order, o.jet_rank, o.block_dimension, o.sharp) for o in report.orders] == [(2, 5, 5, True),
                                                                                           (6, 3, 3, True)]
    assert (report.values.order, report.values.jet_rank, report.values.block_dimension) == (0, 8, 8)
    assert (report.dimension.lower, report.dimension.upper, report.dimension.certified) == (16, 16, True)
    assert report.jet_ranks[-1] == 16 and report.fiber.kernel_is_gauge_orbit


def test_jet_ranks_are_nondecreasing_and_end_at_the_effective_dimension():
    softmax = identification_orders(Architecture.uniform(layers=2, normalizer="softmax"))
    assert softmax.jet_ranks == (4, 4, 7, 7, 7, 7, 10)
    cosh = identification_orders(Architecture.uniform(layers=2, normalizer="cosh"))
    assert cosh.jet_ranks == (4,) * 4 + (7,) * 8 + (10,)
    deep = identification_orders(Architecture.uniform(layers=3, normalizer="softmax"))
    assert deep.jet_ranks == (4, 4) + (7,) * 4 + (10,) * 12 + (13,)
    for ranks, arch in ((softmax.jet_ranks, Architecture.uniform(layers=2)),
                        (deep.jet_ranks, Architecture.uniform(layers=3))):
        assert all(a <= b for a, b in zip(ranks, ranks[1:]))
        assert ranks[-1] == effective_dimension(arch)


def test_input_scaling_orders_are_computed_and_no_formula_is_claimed():
    report = identify(Architecture.uniform(layers=2, normalizer="softmax"), curve=input_scaling(), estimate=None)
    assert not report.formula_claimed
    assert [o.predicted for o in report.orders] == [None, None] and report.values.predicted is None
    assert [o.order for o in report.orders] == [3, 7] and report.value_order == 1
    assert report.all_sharp
    assert report.jet_ranks == (0, 4, 4, 7, 7, 7, 7, 10)
    assert report.dimension.certified and report.dimension.lower == 10
    assert report.fiber.kernel_is_gauge_orbit
    assert "no formula is claimed" in report.to_markdown()
    cosh = identification_orders(Architecture.uniform(layers=2, normalizer="cosh"), curve=input_scaling())
    assert [o.order for o in cosh.scores] == [5, 13] and cosh.values.order == 1


# -- dimension of the function space ------------------------------------------------------
def test_hmk_figure_3_is_certified_for_every_width():
    table = dimension_table(layers=2, widths=range(3, 11), rank=2, tokens=3, normalizer="softmax", estimate=None)
    rows = [(r.width, r.expected, r.lower, r.upper, r.certified) for r in table.rows]
    assert rows == [(d, d * d + 8 * d - 8, d * d + 8 * d - 8, d * d + 8 * d - 8, True) for d in range(3, 11)]
    assert table.all_certified
    assert [r.to_json() for r in table.rows][0] == {"width": 3, "expected": 25, "lower": 25, "upper": 25,
                                                     "certified": True, "estimate": None, "widths": [3, 3, 3]}


@pytest.mark.parametrize("width, rank", [(2, 1), (3, 1), (3, 2), (4, 2)])
def test_three_layer_dimension_is_certified(width, rank):
    result = function_space_dimension(Architecture.uniform(layers=3, width=width, rank=rank), estimate=None)
    expected = 3 * rank * (2 * width - rank) + width * width
    assert (result.lower, result.upper, result.certified, result.expected) == (expected, expected, True, expected)


def test_dimension_for_polynomial_normalizers_uses_a_random_point():
    result = function_space_dimension(Architecture.uniform(layers=2, width=3, rank=2, normalizer="quadratic"),
                                      estimate=None)
    assert (result.lower, result.upper, result.certified, result.route) == (25, 25, True, "random point")
    assert result.truncation == 1


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_lightning_dimension_has_l_fewer(layers):
    for width in (2, 3, 5):
        arch = Architecture.uniform(layers=layers, width=width, rank=2, normalizer="lightning")
        result = function_space_dimension(arch, estimate=None)
        formula = layers * min(2, width) * (2 * width - min(2, width)) + width * width
        assert result.lower == result.upper == result.expected == formula - layers
        assert result.certified and result.route == "random point"


def test_lightning_figure_3_table():
    table = dimension_table(layers=2, widths=range(3, 11), rank=2, normalizer="lightning", estimate=None)
    assert [r.lower for r in table.rows] == [d * d + 8 * d - 8 - 2 for d in range(3, 11)]
    assert table.all_certified


@pytest.mark.blas
def test_certified_dimension_agrees_with_a_float64_estimate():
    result = function_space_dimension(Architecture.uniform(layers=2, width=3, rank=2), estimate="float64")
    # a float64 rank is exact only behind a clear gap: round-off moves singular values by about 1e-16 of the
    # largest, on any BLAS kernel, so a gap above 1e3 fixes the rank read off them
    assert result.estimate_gap > 1e3
    assert result.estimate == result.lower == 25


def test_mpmath_estimate_is_labelled():
    result = function_space_dimension(Architecture.uniform(layers=1, width=2, rank=1), estimate="mpmath")
    assert result.estimate == 7 and "mpmath" in result.estimate_method


def test_the_certified_result_is_the_default():
    arch = Architecture.uniform(layers=1, width=2, rank=1)
    dimension = function_space_dimension(arch)
    assert (dimension.lower, dimension.upper, dimension.certified, dimension.estimate) == (7, 7, True, None)
    assert identify(arch).dimension.estimate is None
    assert [row.estimate for row in dimension_table(layers=1, widths=[2, 3], rank=1).rows] == [None, None]


def test_one_token_dimension_is_the_value_map():
    result = function_space_dimension(Architecture.uniform(layers=2, tokens=1), estimate=None)
    assert (result.lower, result.upper, result.certified, result.expected) == (4, 4, True, None)


def test_hmk_formula():
    assert [hmk_dimension(2, d, 2) for d in range(3, 11)] == [d * d + 8 * d - 8 for d in range(3, 11)]
    assert hmk_dimension(3, 4, 2, lightning=True) == 3 * 2 * 6 + 16 - 3
    with pytest.raises(SymattnError):
        hmk_dimension(0, 3, 2)


def test_gauge_slice_has_as_many_directions_as_the_effective_dimension():
    for arch in (Architecture.uniform(layers=2, width=5, rank=2), Architecture.uniform(layers=3, width=2, rank=1)):
        directions, count = gauge_slice(arch)
        assert count == arch.param_count - gauge_dimension(arch) == effective_dimension(arch)
        used = np.concatenate([d[d >= 0] for d in directions.values()])
        assert sorted(used.tolist()) == list(range(count))


# -- the generic fiber ---------------------------------------------------------------------
@pytest.mark.parametrize("layers, normalizer, kernel", [(1, "softmax", 1), (2, "softmax", 6), (3, "cosh", 11),
                                                       (2, "quadratic", 6)])
def test_kernel_is_the_gauge_orbit(layers, normalizer, kernel):
    fiber = generic_fiber(Architecture.uniform(layers=layers, normalizer=normalizer), flips=False)
    assert fiber.kernel_dim == fiber.gauge_rank == fiber.gauge_dim == kernel
    assert fiber.gauge_annihilated and fiber.kernel_is_gauge_orbit


def test_lightning_kernel_is_the_gauge_orbit_and_the_scalings():
    fiber = generic_fiber(Architecture.uniform(layers=2, width=3, rank=2, normalizer="lightning"), flips=False)
    assert (fiber.kernel_dim, fiber.gauge_rank, fiber.scaling_rank) == (19, 17, 2)
    assert fiber.kernel_is_symmetry_orbit and not fiber.kernel_is_gauge_orbit


def test_kernel_is_larger_than_the_gauge_orbit_with_one_token():
    fiber = generic_fiber(Architecture.uniform(layers=2, tokens=1), flips=False)
    assert fiber.kernel_dim == 12 and fiber.gauge_rank == 6 and not fiber.kernel_is_symmetry_orbit


def test_cosh_flips_are_verified():
    checks = sign_flip_checks(Architecture.uniform(layers=2, normalizer="cosh"))
    assert [c.layers for c in checks] == [(1,), (2,), (1, 2)]
    assert all(c.preserved and c.expected_preserved and c.witness is None for c in checks)
    assert "GF(" in checks[0].method
    fiber = generic_fiber(Architecture.uniform(layers=3, normalizer="cosh"))
    assert fiber.sign_group_order == fiber.sign_group_verified == 8


def test_quadratic_flips_are_verified_over_the_rationals():
    checks = sign_flip_checks(Architecture.uniform(layers=2, normalizer="quadratic"))
    assert all(c.preserved and c.agrees for c in checks)
    assert checks[0].method.startswith("exact over Q")


def _mpmath_output(arch, point, X, eps, dps=60):
    domain = MpmathDomain(dps)
    with mpmath.workdps(dps):
        params = arch.parameters_from(*[[(point[f"{name}{i}t"] if name == "V" else
                                          (np.array(point[f"{name}{i}t"], dtype=object) * mpmath.mpf(eps)).tolist())
                                         for i in range(1, arch.layers + 1)] for name in ("Q", "K", "V")])
        return forward(arch, params, X, domain)


def test_softmax_flips_have_witnesses_at_the_identification_orders():
    arch = Architecture.uniform(layers=2, normalizer="softmax")
    checks = sign_flip_checks(arch)
    assert [(c.layers, c.preserved, c.witness["order"]) for c in checks] == [
        ((1,), False, 2), ((2,), False, 6), ((1, 2), False, 2)]
    # independently: in mpmath, F(flipped) - F(unflipped) at the witness scales like eps^order
    for check in checks[:2]:
        w = check.witness
        flipped = {key: ((-np.array(v)).tolist() if key[0] == "Q" and int(key[1]) in check.layers else v)
                   for key, v in w["point"].items()}
        slopes = []
        with mpmath.workdps(60):
            for eps in ("1e-3", "1e-4"):
                a = _mpmath_output(arch, w["point"], w["input"], mpmath.mpf(eps))
                b = _mpmath_output(arch, flipped, w["input"], mpmath.mpf(eps))
                r, c = w["entry"]
                slopes.append(abs(a[r, c] - b[r, c]))
            assert round(float(mpmath.log10(slopes[0] / slopes[1]))) == w["order"]


def test_lightning_flips_change_the_sign_of_f():
    checks = sign_flip_checks(Architecture.uniform(layers=2, normalizer="lightning"))
    assert [(c.layers, c.preserved) for c in checks] == [((1,), False), ((2,), False), ((1, 2), True)]
    assert all(c.agrees for c in checks)
    w = checks[0].witness
    assert w["order"] is None and int(w["flipped"]) == -int(w["unflipped"])


# -- the report and its outputs -------------------------------------------------------------
@pytest.mark.blas  # the float64 estimate: a rank behind a gap, see test_certified_dimension_agrees_with_a_float64_estimate
def test_identify_report():
    report = identify(Architecture.uniform(layers=2, normalizer="cosh"), estimate="float64")
    assert report.dimension.lower == report.dimension.upper == report.dimension.estimate == 10
    assert [(o.layer, o.order, o.sharp) for o in report.orders] == [(1, 4, True), (2, 12, True)]
    assert report.value_order == 0 and report.gauge_dim == 6 and report.sign_group_order == 4
    data = json.loads(json.dumps(report.to_json()))
    assert {"dimension", "gauge_dim", "sign_group_order", "orders", "value_order", "jet_ranks"} <= set(data)
    assert {"lower", "upper", "certified", "estimate"} <= set(data["dimension"])
    assert data["orders"][1]["layer"] == 2 and data["orders"][1]["order"] == 12 and data["orders"][1]["sharp"]
    markdown = report.to_markdown()
    assert "| scores:2 | 12 | 12 | yes | 3/3 |" in markdown
    # dimension, fiber, orders and jet ranks, each part under its heading
    assert report.to_latex().count(r"\begin{tabular}") == 4
    assert report.to_latex().count(r"\subsection*{") == 3
    assert report.to_latex(standalone=True).startswith(r"\documentclass")
    assert report._repr_latex_().startswith("$$\\begin{array}")
    assert "jet ranks" in str(report)


def test_identify_cli_json(capsys):
    status = main(["identify", "--layers", "2", "--json", "--quiet", "--estimate", "none"])
    out, err = capsys.readouterr()
    assert status == 0, err
    data = json.loads(out)
    assert {"dimension", "gauge_dim", "sign_group_order", "orders", "value_order", "jet_ranks"} <= set(data)
    assert data["dimension"]["lower"] == data["dimension"]["upper"] == 10 and data["dimension"]["certified"]
    assert [(o["layer"], o["order"], o["sharp"]) for o in data["orders"]] == [(1, 2, True), (2, 6, True)]
    assert data["value_order"] == 0 and data["jet_ranks"] == [4, 4, 7, 7, 7, 7, 10]


@pytest.mark.blas  # the float64 estimate column, as above
def test_dimension_cli_json(capsys):
    status = main(["dimension", "--layers", "2", "--tokens", "3", "--rank", "2", "--width", "3..5",
                   "--normalizer", "softmax", "--json", "--quiet", "--estimate", "float64"])
    out, err = capsys.readouterr()
    assert status == 0, err
    rows = json.loads(out)["rows"]
    assert [set(r) for r in rows] == [{"width", "widths", "expected", "lower", "upper", "certified", "estimate"}] * 3
    assert [(r["width"], r["expected"], r["lower"], r["upper"], r["certified"], r["estimate"]) for r in rows] == [
        (3, 25, 25, 25, True, 25), (4, 40, 40, 40, True, 40), (5, 57, 57, 57, True, 57)]
    status = main(["dimension", "--layers", "2", "--rank", "2", "--width", "3,6", "--normalizer", "lightning",
                   "--quiet", "--estimate", "none"])
    out, _ = capsys.readouterr()
    assert status == 0 and "| 3 | 23 | 23 | 23 | yes | - |" in out and "| 6 | 74 | 74 | 74 | yes | - |" in out



def test_dimension_cli_is_certified_by_default(capsys):
    status = main(["dimension", "--layers", "2", "--rank", "2", "--width", "3..4", "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    rows = json.loads(out)["rows"]
    assert [(r["width"], r["lower"], r["upper"], r["certified"], r["estimate"]) for r in rows] == [
        (3, 25, 25, True, None), (4, 40, 40, True, None)]
    status = main(["identify", "--layers", "1", "--json", "--quiet", "--estimate", "mpmath"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert json.loads(out)["dimension"]["estimate"] == 7


def test_cli_user_errors(capsys):
    assert main(["identify", "--width", "3..5", "--quiet"]) == 2  # a range is for `dimension` only
    assert main(["identify", "--normalizer", "exp(x) + exp(1)*pi*x**2 + pi", "--quiet", "--layers", "1"]) == 2
    assert main(["identify", "--estimate", "sometimes"]) == 2
    assert main(["dimension", "--width", "5..3"]) == 2
    err = capsys.readouterr().err
    assert "Taylor coefficients the exact engine cannot map to GF(p)" in err and "symattn: error:" in err


def test_bad_input_errors():
    arch = Architecture.uniform(layers=2)
    with pytest.raises(SymattnError, match="seed"):
        identify(arch, seed=-1)
    with pytest.raises(SymattnError, match="estimate"):
        function_space_dimension(arch, estimate="sometimes")
    with pytest.raises(SymattnError, match="Curve"):
        identification_orders(arch, curve="collapse")
    with pytest.raises(SymattnError, match="Architecture"):
        identify("softmax")
    with pytest.raises(DomainError, match=r"cannot map to GF\(p\)"):
        identify(Architecture.uniform(layers=1, normalizer="exp(x) + exp(1)*pi*x**2 + pi"))
    with pytest.raises(DomainError, match="prime"):
        function_space_dimension(arch, prime=1000)
    with pytest.raises(DomainError, match="vanish"):  # layer 1 is not collapsed: its scores stay away from 0
        identification_orders(arch, curve=collapse([2]))
    with pytest.raises(ShapeError):
        identification_orders(arch, curve=collapse([3]))
    with pytest.raises(SymattnError, match="width"):
        dimension_table(widths=[])
    with pytest.raises(SymattnError, match="exact_check"):
        identification_orders(arch, exact_check="maybe")


# -- the exact linear algebra, against the package's reference implementations --------------
def test_series_rank_agrees_with_smith_valuations():
    rng = np.random.default_rng(0)
    p = 10007
    for _ in range(40):
        m, n, N = (int(v) for v in rng.integers(1, 8, size=3))
        U = rng.integers(0, p, size=(m, m, N))
        V = rng.integers(0, p, size=(n, n, N))
        D = np.zeros((m, n, N), dtype=np.int64)
        for j in range(min(m, n)):
            e = int(rng.integers(0, N + 2))
            if e < N:
                D[j, j, e] = int(rng.integers(1, p))
        # M = U D V over GF(p)[[eps]] / eps^N, by plain convolution
        M = np.zeros((m, n, N), dtype=object)
        U, D, V = U.astype(object), D.astype(object), V.astype(object)
        for a in range(N):
            for b in range(N - a):
                for c in range(N - a - b):
                    M[:, :, a + b + c] += U[:, :, a] @ D[:, :, b] @ V[:, :, c]
        M = (M % p).astype(np.int64)
        reference = smith_valuations(M, p)
        ours = series_rank(M, p)
        histogram = {}
        for e in reference.exponents:
            histogram[e] = histogram.get(e, 0) + 1
        assert ours.rank == reference.resolved_rank and ours.exponents == histogram


@pytest.mark.parametrize("p", [DIMENSION_PRIME, 268435399])
def test_blas_series_products_agree_with_the_jacobian_series(p, monkeypatch):
    # the gauge slice and the curve coordinates of identify's Jacobians, BLAS against schoolbook products
    from symattn.jacobian import gauge_slice

    arch = Architecture.uniform(layers=2, width=3, rank=2, normalizer="cosh")
    point, coefficient_values = random_point(arch, p, 3)
    bank = random_bank(arch, 4, p, 3)

    def jacobians():
        return [jacobian_series(arch, collapse(), bank, point, p, 13, coefficient_values, directions, coordinates)
                for directions in (None, gauge_slice(arch)) for coordinates in ("native", "curve")]

    monkeypatch.setenv("SYMATTN_SCHOOLBOOK", "1")
    reference = jacobians()
    monkeypatch.delenv("SYMATTN_SCHOOLBOOK")
    for ours, schoolbook in zip(jacobians(), reference):
        assert np.array_equal(ours, schoolbook)


@pytest.mark.parametrize("tokens", [2, 3])
def test_one_lightning_layer_fiber_is_resolved_not_cut_off(tokens):
    # every direction of one lightning layer enters at eps^2: the fiber's first truncation (eps^2)
    # resolved only rank 3 and reported a kernel of 5 that is not the symmetry orbit; deepened,
    # the rank agrees with the certified dimension of the function space
    arch = Architecture.uniform(layers=1, width=2, tokens=tokens, normalizer="lightning")
    fiber = generic_fiber(arch)
    dimension = function_space_dimension(arch)
    assert dimension.certified and fiber.native_rank == dimension.lower == 6
    assert (fiber.kernel_dim, fiber.gauge_rank, fiber.scaling_rank) == (2, 1, 1)
    assert fiber.kernel_is_symmetry_orbit


# -- degenerate networks say what is degenerate --------------------------------------------------------
def test_a_score_rank_above_the_width_explains_the_gauge_group_larger_than_its_orbit(capsys):
    # `identify --width 1 --rank 2` reported a gauge dimension 14 against a tangent rank 11, silently
    assert main(["identify", "--width", "1", "--rank", "2", "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["gauge_dim"], data["fiber"]["gauge_rank"], data["fiber"]["kernel_dim"]) == (14, 11, 11)
    assert data["fiber"]["kernel_is_symmetry_orbit"] is True
    # GL(2) acting on (Q_i, K_i) in R^{2x1}: the stabilizer I + E, E Q = 0, E^T K = 0, has dimension (2 - 1)^2
    assert data["degenerate"] == [
        *(f"score rank a_{i} = 2 above the width 1 of layer {i}'s input: What_{i} has rank at most 1 (the rank is "
          f"capped at the width), and GL(a_{i}) fixes a subgroup of dimension (2 - 1)^2 = 1 of (Q_{i}, K_{i}), so "
          "the gauge orbit is smaller than the gauge group" for i in (1, 2, 3)),
        "the gauge group has dimension 14 but its orbit only 11 (the gauge tangent rank): the group does not act "
        "freely, so its dimension is not the kernel's",
    ]
    assert data["fiber"]["degenerate"] == data["degenerate"]
    assert main(["identify", "--width", "1", "--rank", "2", "--quiet"]) == 0
    markdown = capsys.readouterr().out.splitlines()
    assert "- degenerate: " + data["degenerate"][-1] in markdown


def test_a_plain_network_is_not_degenerate():
    report = identify(Architecture.uniform(layers=1, width=2, tokens=2))
    assert report.fiber.degenerate == () and report.to_json()["degenerate"] == []


def test_one_token_is_named_degenerate_in_identify():
    report = identify(Architecture.uniform(layers=1, width=2, tokens=1))
    assert report.fiber.degenerate[0].startswith("one token: every S(A) is the 1 x 1 matrix 1")


@pytest.mark.parametrize("function, name", [(identification_orders, "identification_orders"),
                                            (sign_flip_checks, "sign_flip_checks")])
def test_max_order_is_refused_naming_max_truncation(function, name):
    with pytest.raises(SymattnError, match=rf"{name}\(max_order=8\): max_order= was renamed max_truncation="):
        function(Architecture.uniform(layers=1), max_order=8)


def test_dimension_summary_describes_the_network_given(capsys):
    # `dimension --widths 3,2,3 --ranks 2,1` printed "score ranks [1, 2] ... widths [3]": a sorted set of the
    # ranks and the input width only
    assert main(["dimension", "--widths", "3,2,3", "--ranks", "2,1", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "| 3,2,3 | - | 19 | 19 | yes | - |"
    assert "- 2 layer(s), widths [3, 2, 3], score ranks [2, 1], 3 tokens, normalizer softmax" in lines
    assert main(["dimension", "--widths", "3,2,3", "--ranks", "2,1", "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["architecture"] == "2 layer(s), widths [3, 2, 3], score ranks [2, 1], 3 tokens, normalizer softmax"
    assert data["rows"][0]["widths"] == [3, 2, 3] and data["rows"][0]["width"] == 3


def test_dimension_summary_of_a_width_sweep_names_each_width():
    table = dimension_table(layers=1, widths=[1, 2], rank=1, tokens=2)
    assert table.description == ("1 layer(s), score ranks [1], 2 tokens, normalizer softmax; "
                                 "widths d_0 = ... = d_l = d for d in [1, 2]")


def test_the_fiber_table_in_markdown_reads_words_not_python():
    # the Markdown fiber table printed "J * tangents = 0 | True"
    from symattn.identify import identify

    markdown = identify(Architecture.uniform(layers=1, width=1, tokens=2), estimate=None).to_markdown()
    fiber = markdown.split("## Generic fiber")[1].split("##")[0]
    assert "| gauge tangents in the kernel (J T = 0) | yes |" in fiber
    assert "| kernel = symmetry orbit | yes |" in fiber
    assert "True" not in fiber and "False" not in fiber and "J * tangents" not in fiber


def test_the_dimension_table_in_markdown_labels_every_line_in_words():
    # it printed "- all certified: True" and the estimate's method without its label ("- not computed")
    markdown = dimension_table(layers=1, widths=[1, 2], rank=1, tokens=2, estimate=None).to_markdown()
    notes = markdown.split("\n\n")[1].splitlines()
    assert notes[1].startswith("- all certified: yes (exact part ")
    assert notes[-1] == "- estimate: not computed"
    assert "True" not in markdown and "False" not in markdown


def test_the_rank_so_far_is_reported_pivot_by_pivot():
    from symattn.identify.common import series_rank

    M = np.zeros((3, 3, 4), dtype=np.int64)
    M[0, 0, 0] = 1; M[1, 1, 2] = 3; M[2, 2, 3] = 1  # pivots at eps^0, eps^2 and eps^3
    pivots = []
    result = series_rank(M, 7, progress=lambda: pivots.append(len(pivots) + 1))
    assert pivots == [1, 2, 3] and result.exponents == {0: 1, 2: 1, 3: 1}
    assert series_rank(M[:, :, :3], 7, progress=lambda: pivots.append(0)).rank == 2 and pivots[3:] == [0, 0]
