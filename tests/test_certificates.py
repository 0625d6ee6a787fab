"""Certificates of the certified dimension, and the independent checker that re-checks them (issue 27).

Two independent computations meet here: the engine's Jacobian series
(:func:`symattn.jacobian.jacobian_series`) with its witness search, and the
checker's own forward pass over ``GF(p)[eps]/(eps^N)`` with its own pivoting
(:mod:`symattn.verifier`).  A round trip agreeing on every pivot valuation is
a second computation of the rank.  Tampering with a certificate must make the
check fail where the edit breaks the proof, and must be reported honestly
(never a crash) where it may leave a valid certificate.
"""

from __future__ import annotations

import ast
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.algebra.linalg import one_blas_thread
from symattn.algebra.valuations import smith_valuations
from symattn.certificates import (
    CertificateRefused,
    check_certifiable,
    dimension_certificate,
    least_valuation_pivots,
    write_dimension_certificate,
)
from symattn.cli import main
from symattn.curves import collapse, polynomial_curve
from symattn.identify import function_space_dimension
from symattn.model import Architecture, feed_forward_block
from symattn.normalizers import Normalizer
from symattn.verifier import CertificateError, verify
from symattn.verifier.pivots import pivot_valuations
from standalone_copy import verify_as_standalone_copy

REPO = Path(__file__).resolve().parent.parent
VERIFIER = REPO / "symattn" / "verifier"


def _histogram(values):
    out = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


# -- round trips ------------------------------------------------------------------------------------
ROUND_TRIPS = {
    "softmax, 1 layer": dict(layers=1, width=2, tokens=2),
    "softmax, 2 layers": dict(layers=2, width=3, rank=2),
    "cosh, 2 layers": dict(layers=2, width=2, rank=1, normalizer="cosh"),
    "1 + x**2, 2 layers": dict(layers=2, width=2, rank=1, normalizer="1 + x**2"),
    "lightning, 2 layers": dict(layers=2, width=2, rank=1, normalizer="lightning"),
    "2 heads": dict(layers=2, width=2, rank=1, heads=2),
    "causal": dict(layers=2, width=2, rank=1, causal=True),
    "residual": dict(layers=2, width=2, rank=1, residual=True),
    "heads, causal, residual, cosh": dict(layers=2, width=2, rank=1, heads=[2, 1], causal=True, residual=True,
                                          normalizer="cosh"),
    "3 layers": dict(layers=3, width=2, rank=1),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_round_trip_verifies_the_certified_rank(name):
    arch = Architecture.uniform(**ROUND_TRIPS[name])
    result = function_space_dimension(arch)
    certificate = dimension_certificate(arch, result=result)
    report = verify(certificate)
    assert report.verified, report.problem
    assert certificate["rank"] == report.rank == result.lower
    assert sorted(certificate["witness"]["valuations"]) == list(report.valuations)
    assert certificate["claim"] == f"the dimension of the function space of this architecture is at least {result.lower}"
    assert certificate["truncation"] == 1 + max(certificate["witness"]["valuations"])
    # through JSON text, as a file would carry it
    assert verify(json.dumps(certificate)).verified


def test_the_plain_network_exact_values():
    # 2 layers, width 2, rank 1, softmax along the collapse (given, so not the integer-score route):
    # curve-coordinate exponents = native exponents {0: 4, 1: 3, 5: 3} + 1 on the score columns
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    certificate = dimension_certificate(arch, curve=collapse())
    assert certificate["rank"] == 10
    assert _histogram(certificate["witness"]["valuations"]) == {0: 4, 2: 3, 6: 3}
    assert certificate["truncation"] == 7
    assert certificate["prime"] == 1048573
    assert certificate["normalizers"][0]["taylor"][:5] == ["1", "1", "1/2", "1/6", "1/24"]
    assert certificate["curve"]["powers"] == {"Q_1": 1, "K_1": 1, "V_1": 0, "Q_2": 1, "K_2": 1, "V_2": 0}
    assert certificate["parameters"][:3] == ["Q_1[0,0]", "Q_1[0,1]", "K_1[0,0]"]
    assert len(certificate["bank"]) == certificate["produced_by"]["bank_size"]


def test_the_certificate_reproduces_the_run_it_certifies():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    result = function_space_dimension(arch, seed=5, route="curve")
    certificate = dimension_certificate(arch, result=result)
    from symattn.jacobian import random_bank, random_point

    point, _ = random_point(arch, result.prime, result.seed)
    assert certificate["point"]["Q_2"] == point[("Q", 2)].tolist()
    assert certificate["bank"] == random_bank(arch, result.bank, result.prime, result.seed).tolist()
    assert verify(certificate).verified


def test_a_result_of_the_integer_score_route_is_certified_on_that_route():
    from symattn.identify.common import integer_score_point

    arch = Architecture.uniform(layers=2, width=2, rank=1)
    result = function_space_dimension(arch, seed=5)
    assert result.route.startswith("integer scores")
    certificate = dimension_certificate(arch, result=result)
    assert certificate["rank"] == result.lower == 10
    # layer 1 unscaled at its integer point, the second layer's keys collapsed: the run the engine made
    assert certificate["curve"]["powers"] == {"Q_1": 0, "K_1": 0, "V_1": 0, "Q_2": 0, "K_2": 1, "V_2": 0}
    point, values, bank = integer_score_point(arch, result.prime, result.seed, result.bank)
    assert certificate["point"]["Q_1"] == point[("Q", 1)].tolist()  # signed integers, not residues
    assert certificate["bank"] == np.where(bank > result.prime // 2, bank - result.prime, bank).tolist()
    assert certificate["integer_scores"]["base"] == values["integer scores"].base
    assert certificate["produced_by"]["route"] == result.route
    assert verify(certificate).verified


def test_another_rate_at_layer_1_is_certified_on_the_curve_route():
    arch = Architecture.uniform(layers=2, width=2, rank=1, normalizer="exp(x/2)")
    result = function_space_dimension(arch, seed=5)
    assert result.route.startswith("integer scores")
    certificate = dimension_certificate(arch, result=result)  # the checker knows exp(x) only: the curve route
    assert "integer_scores" not in certificate
    assert certificate["curve"]["powers"]["Q_1"] == 1 and certificate["produced_by"]["route"].startswith("series")
    assert certificate["rank"] == result.lower == 10 and verify(certificate).verified


def test_other_curves_and_primes_round_trip():
    from symattn.curves import collapse_queries, input_scaling

    arch = Architecture.uniform(layers=2, width=2, rank=1)
    scaled = dimension_certificate(arch, curve=input_scaling())
    assert scaled["curve"]["input_power"] == 1 and set(scaled["curve"]["powers"].values()) == {0}
    queries = dimension_certificate(arch, curve=collapse_queries(), prime=1000003, seed=3)
    assert queries["curve"]["powers"]["K_1"] == 0 and queries["prime"] == 1000003
    for certificate in (scaled, queries):
        report = verify(certificate)
        assert report.verified and report.rank == 10


def test_a_result_along_another_curve_is_refused():
    from symattn.curves import input_scaling
    from symattn.errors import SymattnError

    arch = Architecture.uniform(layers=1, width=2, rank=1)
    result = function_space_dimension(arch, curve=input_scaling())
    with pytest.raises(SymattnError, match="computed series along input scaling"):
        dimension_certificate(arch, result=result)
    assert verify(dimension_certificate(arch, result=result, curve=input_scaling())).verified


def test_a_heads_certificate_names_blocks_with_their_head():
    certificate = dimension_certificate(Architecture.uniform(layers=1, width=2, rank=1, heads=2))
    assert "Q_{1,2}" in certificate["point"] and "Q_{1,2}[0,1]" in certificate["parameters"]


def test_the_certificate_matches_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "certificate.schema.json").read_text(encoding="utf-8"))
    for name in ("softmax, 2 layers", "2 heads", "lightning, 2 layers"):
        jsonschema.validate(dimension_certificate(Architecture.uniform(**ROUND_TRIPS[name])), schema)


def test_write_and_verify_a_file(tmp_path):
    path = tmp_path / "dimension.json"
    certificate = write_dimension_certificate(Architecture.uniform(layers=1, width=2, tokens=2), path)
    assert json.loads(path.read_text(encoding="utf-8")) == certificate
    assert verify(path).verified and verify(str(path)).verified


# -- refusals ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch, curve, message", [
    (lambda: Architecture.uniform(layers=1, normalizer=Normalizer.generic(1)), None, "is generic"),
    (lambda: Architecture.uniform(layers=1, normalizer="exp(sqrt(2)*x)"), None, "not rational"),
    (lambda: Architecture.uniform(layers=1, extra=feed_forward_block(2, activation="gelu")), None,
     r"activation gelu \(layer 1\) has Taylor coefficients that are not rational"),
    (lambda: Architecture.uniform(layers=1), "polynomial", "polynomial curves"),
])
def test_what_a_certificate_cannot_describe_is_refused_first(arch, curve, message):
    import sympy as sp

    from symattn.curves import EPS

    curve = polynomial_curve({"K1": sp.Matrix([[EPS, EPS]])}) if curve == "polynomial" else None
    with pytest.raises(CertificateRefused, match=message):
        check_certifiable(arch(), curve)
    with pytest.raises(CertificateRefused, match=message):
        dimension_certificate(arch(), curve=curve)


# -- tampering ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_certificate():  # the curve route (tests/test_integer_score_certificates.py edits the integer-score route's)
    certificate = dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1), curve=collapse())
    assert verify(certificate).verified
    return certificate


def _fails(certificate, *fragments):
    report = verify(certificate)
    assert not report.verified
    assert report.problem and all(fragment in report.problem for fragment in fragments), report.problem
    return report


def test_each_must_fail_edit_fails_naming_it(base_certificate):
    c = copy.deepcopy
    edit = c(base_certificate)
    edit["rank"] += 1
    _fails(edit, "claims rank 11", "10 x 10 minor")
    edit = c(base_certificate)
    edit["prime"] = 1048573 * 3
    _fails(edit, "not a prime")
    edit = c(base_certificate)
    edit["prime"] = 3  # prime, but it divides 1/3! in softmax's Taylor coefficients
    _fails(edit, "divisible by the prime 3")
    edit = c(base_certificate)
    edit["witness"]["rows"][0][0] = len(edit["bank"])
    _fails(edit, "input index", f"0 .. {len(edit['bank']) - 1}")
    edit = c(base_certificate)
    edit["truncation"] = max(edit["witness"]["valuations"])
    _fails(edit, "not below the truncation")
    edit = c(base_certificate)
    edit["witness"]["valuations"][-1] -= 1
    _fails(edit, "pivot valuations of the witness minor are {0: 4, 2: 3, 6: 3}")
    edit = c(base_certificate)
    edit["witness"]["rows"][1] = list(edit["witness"]["rows"][0])
    _fails(edit, "repeats a row")
    edit = c(base_certificate)
    edit["witness"]["columns"][0] = "Q_9[0,0]"
    _fails(edit, "not a parameter")
    edit = c(base_certificate)
    edit["normalizers"][0]["taylor"][2] = "1/3"
    _fails(edit, "Taylor coefficient c_2 of s/s(0) for its name 'softmax' (the preset exp(x))", "taylor[2] = '1/3'")
    edit = c(base_certificate)
    edit["normalizers"][0]["taylor"][2] = "1e3"
    _fails(edit, "digits only")
    edit = c(base_certificate)
    edit["claim"] = "the dimension is 10"
    _fails(edit, "does not say")
    edit = c(base_certificate)
    edit["prime"] = True
    _fails(edit, "must be an integer")
    edit = c(base_certificate)
    edit["architecture"]["bias"] = True  # the biases' blocks are then missing from the curve and the point
    _fails(edit, "curve.powers must name every block")
    edit = c(base_certificate)
    edit["architecture"]["dropout"] = 0.5
    _fails(edit, "architecture.dropout: this checker knows no such component")


_MUST_FAIL = ("rank up", "not a prime", "row index out of range", "truncation below a pivot", "valuation changed")
_MAY_PASS = ("point entry", "bank entry", "another prime")
_OTHER_PRIMES = (1048571, 1000003, 999983, 268435399, 101, 7)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(_MUST_FAIL + _MAY_PASS), data=st.data())
def test_a_random_single_edit(base_certificate, kind, data):
    certificate = copy.deepcopy(base_certificate)
    witness = certificate["witness"]
    if kind == "rank up":
        certificate["rank"] += data.draw(st.integers(1, 5))
    elif kind == "not a prime":
        certificate["prime"] = data.draw(st.sampled_from([4, 1048573 * 2, 1048575, 1, 0, -7, 2 ** 40]))
    elif kind == "row index out of range":
        n = data.draw(st.integers(0, len(witness["rows"]) - 1))
        where = data.draw(st.integers(0, 2))
        limit = (len(certificate["bank"]), certificate["architecture"]["widths"][-1],
                 certificate["architecture"]["tokens"])[where]
        witness["rows"][n][where] = data.draw(st.one_of(st.integers(limit, limit + 100), st.integers(-50, -1)))
    elif kind == "truncation below a pivot":
        certificate["truncation"] = data.draw(st.integers(1, max(witness["valuations"])))
    elif kind == "valuation changed":
        n = data.draw(st.integers(0, len(witness["valuations"]) - 1))
        witness["valuations"][n] = data.draw(
            st.integers(0, certificate["truncation"] - 1).filter(lambda v: v != witness["valuations"][n]))
    elif kind == "point entry":
        block = data.draw(st.sampled_from(sorted(certificate["point"])))
        matrix = certificate["point"][block]
        r, col = data.draw(st.integers(0, len(matrix) - 1)), data.draw(st.integers(0, len(matrix[0]) - 1))
        matrix[r][col] = data.draw(st.integers(-10 ** 6, 10 ** 6))
    elif kind == "bank entry":
        b = data.draw(st.integers(0, len(certificate["bank"]) - 1))
        X = certificate["bank"][b]
        r, col = data.draw(st.integers(0, len(X) - 1)), data.draw(st.integers(0, len(X[0]) - 1))
        X[r][col] = data.draw(st.integers(-10 ** 6, 10 ** 6))
    else:
        certificate["prime"] = data.draw(st.sampled_from(_OTHER_PRIMES))
    report = verify(certificate)  # never raises on a parsed certificate
    if kind in _MUST_FAIL:
        assert not report.verified and report.problem
    elif report.verified:
        # an edit that leaves a valid certificate: the checker's own valuations are the claimed ones
        assert list(report.valuations) == sorted(witness["valuations"])
        assert report.rank == certificate["rank"]
    else:
        assert report.problem


def test_not_a_certificate():
    with pytest.raises(CertificateError, match="not JSON"):
        verify("{")
    with pytest.raises(CertificateError, match="^the certificate is a JSON array, not an object$"):
        verify("[1, 2]")
    assert "schema" in verify({}).problem


# -- the pivots, three ways ------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pivot_valuations_agree_three_ways(data):
    m, n, N = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6)), data.draw(st.integers(1, 5))
    p = data.draw(st.sampled_from([2, 3, 5, 101, 1048573]))
    entries = data.draw(st.lists(st.integers(0, p - 1), min_size=m * n * N, max_size=m * n * N))
    zeros = data.draw(st.lists(st.booleans(), min_size=m * n * N, max_size=m * n * N))
    M = np.array(entries, dtype=np.int64).reshape(m, n, N) * ~np.array(zeros).reshape(m, n, N)
    engine = least_valuation_pivots(M, p)
    valuations = [v for _, _, v in engine]
    assert valuations == pivot_valuations(M, p) == list(smith_valuations(M, p).exponents)
    if engine:  # the witness minor has exactly these pivots
        rows, cols = [r for r, _, _ in engine], [c for _, c, _ in engine]
        assert pivot_valuations(M[np.ix_(rows, cols)], p) == sorted(valuations)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_the_checkers_elimination_by_panels_finds_the_pivots_of_one_column_at_a_time(data):
    # matrices wider than a panel, of low rank and with zeros, so that pivot rows are found late in a panel
    from symattn.verifier.pivots import independent_rows_and_columns

    m, n = data.draw(st.integers(1, 150)), data.draw(st.integers(1, 150))
    p = data.draw(st.sampled_from([2, 3, 101, 1048573, 2147483647]))
    rank = data.draw(st.integers(0, min(m, n)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    A = np.zeros((m, n), dtype=np.int64)
    for _ in range(rank):  # a sum of rank-one matrices, entries reduced as they go
        A = (A + np.outer(rng.integers(0, p, m), rng.integers(0, p, n)) % p) % p
    A[rng.random((m, n)) < data.draw(st.sampled_from([0.0, 0.3, 0.9]))] = 0
    one_at_a_time = independent_rows_and_columns(A, p, panel=n)   # a single panel: column by column
    for panel in (1, 7, 64):
        assert independent_rows_and_columns(A, p, panel=panel) == one_at_a_time


# -- independence ---------------------------------------------------------------------------------------
def test_the_verifier_imports_only_the_standard_library_numpy_and_itself():
    allowed = set(sys.stdlib_module_names) | {"numpy", "flint"}
    for path in sorted(VERIFIER.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: inside symattn.verifier only
                    assert node.level == 1, f"{path.name} imports from outside symattn.verifier"
                    continue
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_the_verifier_runs_as_a_standalone_copy(tmp_path):
    # a copy of the package under another name, in a fresh interpreter that cannot see symattn
    path = tmp_path / "dimension.json"
    write_dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1, causal=True), path)
    report = verify_as_standalone_copy(tmp_path, path)
    assert [report["verified"], report["modules"]] == [True, ["symattn"]]


# -- the command line ---------------------------------------------------------------------------------
def test_dimension_writes_a_certificate_and_verify_checks_it(tmp_path, capsys):
    path = tmp_path / "dimension.json"
    assert main(["dimension", "--layers", "2", "--width", "3", "--rank", "2", "--certificate", str(path)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {path}" in captured.err
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verified: the dimension of the function space of this architecture is at least 25")
    assert "recomputed the 25 x 25 witness minor" in out
    certificate = json.loads(path.read_text(encoding="utf-8"))
    certificate["witness"]["valuations"][0] += 1
    path.write_text(json.dumps(certificate), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert capsys.readouterr().out.startswith("NOT verified: the pivot valuations of the witness minor")
    assert main(["verify", str(path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["verified"] is False


@pytest.mark.parametrize("argv, message", [
    (["dimension", "--layers", "2", "--width", "3..4", "--certificate", "x.json"], "certifies one network"),
    (["dimension", "--layers", "1", "--normalizer", "exp(sqrt(2)*x)", "--certificate", "x.json"], "not rational"),
    (["verify", "does-not-exist.json"], "cannot use the file"),
    (["verify"], "the following arguments are required: FILE"),
])
def test_usage_errors_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_a_file_that_is_not_json_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{not json", encoding="utf-8")
    assert main(["verify", str(path)]) == 2
    assert "the certificate is not JSON" in capsys.readouterr().err


# -- speed: checking is no slower than computing ------------------------------------------------------------
def test_verifying_hmk_rows_takes_no_longer_than_computing_them(monkeypatch):
    # HMK's Figure 3 rows (2 layers, 3 tokens, score rank 2), widths 3..6; the fastest of three runs each.
    # The engine as `symattn dimension --width 3..6` runs in a fresh process: on BLAS (it loads its compiled
    # kernels only after more work than this; against them verifying takes about as long as computing,
    # 1.0-1.15x: tests/benchmarks/test_bench_certificates.py reports both)
    monkeypatch.setenv("SYMATTN_PRODUCTS", "blas")
    compute, check = 0.0, 0.0
    for width in range(3, 7):
        arch = Architecture.uniform(layers=2, width=width, rank=2, tokens=3)
        times = []
        for _ in range(3):  # the default route (integer scores): the run its certificate reproduces
            started = time.perf_counter()
            result = function_space_dimension(arch)
            times.append(time.perf_counter() - started)
        compute += min(times)
        certificate = dimension_certificate(arch, result=result)
        times = []
        for _ in range(3):
            started = time.perf_counter()
            with one_blas_thread():  # as `symattn verify` runs it, and as the engine computes
                report = verify(certificate)
            times.append(time.perf_counter() - started)
        check += min(times)
        assert report.verified and report.rank == result.lower == 2 * 2 * (2 * width - 2) + width ** 2
    assert check <= compute, f"verify {check:.3f} s against compute {compute:.3f} s"
