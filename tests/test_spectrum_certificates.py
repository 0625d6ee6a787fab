"""Certificates of the decay spectrum, and the independent checker that re-checks them (issue 27).

The engine's native Jacobian series (:func:`symattn.jacobian.jacobian_series`)
with its witness search on one side, the checker's own forward pass over
``GF(p)[eps]/(eps^N)`` in the native parameters with its own pivoting
(:mod:`symattn.verifier`) on the other: a round trip agreeing on every pivot
valuation is a second computation of the exponents.  Tampering must make the
check fail where the edit breaks the proof, and must be reported honestly
(never a crash) where it may leave a valid certificate.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.certificates import (
    CertificateRefused,
    dimension_certificate,
    spectrum_certificate,
    spectrum_claim,
    write_spectrum_certificate,
)
from symattn.cli import main
from symattn.curves import collapse_queries, input_scaling
from symattn.errors import SymattnError
from symattn.jacobian import random_bank, random_point
from symattn.model import Architecture, feed_forward_block
from symattn.normalizers import Normalizer
from symattn.spectrum import decay_spectrum
from symattn.verifier import verify
from symattn.verifier.pivots import pivot_valuations
from standalone_copy import verify_as_standalone_copy

REPO = Path(__file__).resolve().parent.parent
VERIFIER = REPO / "symattn" / "verifier"


# -- round trips ------------------------------------------------------------------------------------
# name: (architecture, the spectrum {exponent: multiplicity} the run and the certificate give)
ROUND_TRIPS = {
    "softmax, 1 layer": (dict(layers=1, width=2, tokens=2), {0: 4, 1: 3}),
    "softmax, 2 layers": (dict(layers=2, width=2, rank=1), {0: 4, 1: 3, 5: 3}),
    "softmax, 3 layers": (dict(layers=3, width=2, rank=1), {0: 4, 1: 3, 5: 3, 17: 3}),
    "softmax, 2 layers, width 3, rank 2": (dict(layers=2, width=3, rank=2), {0: 9, 1: 8, 5: 8}),
    "cosh, 2 layers": (dict(layers=2, width=2, rank=1, normalizer="cosh"), {0: 4, 3: 3, 11: 3}),
    "1 + x**2, 2 layers": (dict(layers=2, width=2, rank=1, normalizer="1 + x**2"), {0: 4, 3: 3, 11: 3}),
    "exp(x**2), 2 layers": (dict(layers=2, width=2, rank=1, normalizer="exp(x**2)"), {0: 4, 3: 3, 11: 3}),
    "lightning, 2 layers": (dict(layers=2, width=2, rank=1, normalizer="lightning"), {7: 5, 8: 3}),
    "2 heads": (dict(layers=2, width=2, rank=1, heads=2), {0: 4, 1: 6, 2: 4, 5: 6, 6: 4}),
    "causal": (dict(layers=2, width=2, rank=1, causal=True), {0: 4, 1: 6}),
    "residual": (dict(layers=2, width=2, rank=1, residual=True), {0: 4, 1: 6, 2: 4}),
    "heads, causal, residual, cosh": (dict(layers=2, width=2, rank=1, heads=[2, 1], causal=True, residual=True,
                                           normalizer="cosh"), {0: 8, 3: 9, 4: 4}),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_round_trip_verifies_the_spectrum(name):
    options, spectrum = ROUND_TRIPS[name]
    arch = Architecture.uniform(**options)
    result = decay_spectrum(arch, progress=False)
    assert result.exponents == spectrum
    certificate = spectrum_certificate(arch, result=result)
    report = verify(certificate)
    assert report.verified, report.problem
    rank = sum(spectrum.values())
    assert certificate["exponents"] == {str(e): m for e, m in spectrum.items()}
    assert certificate["rank"] == report.rank == result.rank == rank
    assert list(report.valuations) == sorted(certificate["witness"]["valuations"])
    assert certificate["claim"] == report.claim == spectrum_claim(rank, spectrum, result.primes[0])
    assert certificate["truncation"] == 1 + max(spectrum)
    assert certificate["coordinates"] == "native" and certificate["kind"] == "spectrum"
    # the stronger check: the gauge orbit's tangents and the witness's rank add up to #params, so the
    # kernel is decided, and it is the engine's (except lightning's scalings, which are not gauge)
    assert report.kernel == (None if name == "lightning, 2 layers" else result.kernel)
    # through JSON text, as a file would carry it
    assert verify(json.dumps(certificate)).verified


def test_the_gauge_kernel_check_decides_or_says_it_does_not():
    report = verify(spectrum_certificate(Architecture.uniform(layers=2, width=2, rank=1)))
    assert report.kernel == 6
    assert report.checked[-1] == (
        "stronger check (gauge kernel): the gauge orbit's tangents at the point have 6 pivots below eps^6, so the "
        "network's Jacobian along the curve has rank <= 16 - 6 = 10; with rank >= 10 from the witness, the rank of "
        "the bank's Jacobian and of the network's is exactly 10 and the kernel is exactly the gauge orbit's tangent "
        "space, of dimension 6")
    one_token = verify(spectrum_certificate(Architecture.uniform(layers=2, width=2, rank=1, tokens=1)))
    assert one_token.verified and one_token.kernel is None
    assert one_token.checked[-1].endswith("rank <= 16 - 4 = 12; the witness proves rank >= 4: not decided (the 8 "
                                          "directions between are neither in the witness nor gauge)")
    assert one_token.to_json()["kernel"] is None and report.to_json()["kernel"] == 6


@pytest.mark.parametrize("name", ["softmax, 2 layers", "2 heads", "causal", "residual",
                                  "heads, causal, residual, cosh", "lightning, 2 layers"])
def test_the_checkers_gauge_tangents_are_in_the_engines_kernel(name):
    # the checker's orbit tangents (its own formulas) against the engine's native Jacobian: J T^T = 0 exactly
    from symattn.algebra.linalg import series_matmul
    from symattn.curves import collapse
    from symattn.jacobian import jacobian_series
    from symattn.verifier.check import _blocks
    from symattn.verifier.spectrum import gauge_tangents

    arch = Architecture.uniform(**ROUND_TRIPS[name][0])
    certificate = spectrum_certificate(arch)
    # deeper than the certificate's truncation (2 for the causal mask), where a wrong tangent shows
    p, N = certificate["prime"], 12
    architecture = certificate["architecture"]
    blocks = _blocks(architecture["widths"], architecture["score_ranks"], architecture["heads"])
    layers, n = [], 0
    for heads in architecture["heads"]:
        layers.append([tuple(block for block, _ in blocks[n + 3 * h:n + 3 * h + 3]) for h in range(heads)])
        n += 3 * heads
    T = gauge_tangents(layers, dict(blocks), [block for block, _ in blocks], certificate["point"],
                       certificate["curve"]["powers"], architecture["residual"], N, p)
    point, values = random_point(arch, p, 0)
    J = jacobian_series(arch, collapse(), np.array(certificate["bank"]), point, p, N, values)
    assert T.shape == (verify(certificate).kernel or len(T), arch.param_count, N)
    assert not series_matmul(J, T.transpose(1, 0, 2), p, N).any()


def test_the_plain_network_exact_values():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    certificate = spectrum_certificate(arch)
    assert certificate["claim"] == ("along its curve, the native Jacobian of this architecture on its bank has rank "
                                    "at least 10, and its decay exponents over GF(268435399)[[eps]], in increasing "
                                    "order, are at most {0: 4, 1: 3, 5: 3}")
    assert certificate["prime"] == 268435399 and certificate["truncation"] == 6
    assert certificate["curve"]["powers"] == {"Q_1": 1, "K_1": 1, "V_1": 0, "Q_2": 1, "K_2": 1, "V_2": 0}
    assert certificate["witness"]["valuations"] == [0, 0, 0, 0, 1, 1, 1, 5, 5, 5]
    # the order-0 pivots are the values' columns, the deepest the second layer's scores
    assert {c[0] for c in certificate["witness"]["columns"][:4]} == {"V"}
    assert {c[:3] for c in certificate["witness"]["columns"][-3:]} <= {"Q_2", "K_2"}
    produced = certificate["produced_by"]
    assert (produced["spectrum"], produced["rank"], produced["kernel"], produced["bank_size"]) == (
        {"0": 4, "1": 3, "5": 3}, 10, 6, 6)


def test_the_certificate_reproduces_the_run_it_certifies():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    result = decay_spectrum(arch, seed=5, progress=False)
    certificate = spectrum_certificate(arch, result=result)
    point, _ = random_point(arch, result.primes[0], 5)
    assert certificate["point"]["K_2"] == point[("K", 2)].tolist()
    assert certificate["bank"] == random_bank(arch, result.bank, result.primes[0], 5).tolist()
    assert certificate["produced_by"]["seed"] == 5
    assert verify(certificate).verified


def test_a_bank_given_as_a_list_is_the_certificate_bank():
    arch = Architecture.uniform(layers=1, width=2, tokens=2)
    bank = [[[1, 2], [3, 4]], [[2, -1], [0, 5]], [[7, 1], [1, 3]]]
    certificate = spectrum_certificate(arch, bank=bank)
    assert certificate["bank"] == [[[1, 2], [3, 4]], [[2, 268435398], [0, 5]], [[7, 1], [1, 3]]]
    report = verify(certificate)
    assert report.verified and report.rank == 7


def test_other_curves_round_trip():
    arch = Architecture.uniform(layers=2, width=2, rank=1)
    scaled = spectrum_certificate(arch, curve=input_scaling())
    assert scaled["curve"]["input_power"] == 1 and set(scaled["curve"]["powers"].values()) == {0}
    queries = spectrum_certificate(arch, curve=collapse_queries(), seed=3)
    assert queries["curve"]["powers"]["K_1"] == 0 and queries["curve"]["powers"]["Q_1"] == 1
    # the run's spectrum along each curve, found again by the witness and by the checker
    for certificate, spectrum in ((scaled, {"1": 4, "3": 3, "7": 3}), (queries, {"0": 6, "1": 1, "2": 2, "3": 1})):
        assert certificate["exponents"] == certificate["produced_by"]["spectrum"] == spectrum
        report = verify(certificate)
        assert report.verified and report.rank == 10


def test_a_result_of_another_run_is_refused():
    arch = Architecture.uniform(layers=1, width=2, rank=1)
    result = decay_spectrum(arch, curve=input_scaling(), progress=False)
    with pytest.raises(SymattnError, match="computed along input scaling"):
        spectrum_certificate(arch, result=result)
    assert verify(spectrum_certificate(arch, result=result, curve=input_scaling())).verified
    with pytest.raises(SymattnError, match="another architecture"):
        spectrum_certificate(Architecture.uniform(layers=1, width=3, rank=1), result=result, curve=input_scaling())
    with pytest.raises(SymattnError, match=r"options \[.seed.\] set how the Spectrum of decay_spectrum is computed"):
        spectrum_certificate(arch, result=result, curve=input_scaling(), seed=2)
    with pytest.raises(SymattnError, match="must be the Spectrum of decay_spectrum, got dict"):
        spectrum_certificate(arch, result={})


def test_the_certificate_matches_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "certificate.schema.json").read_text(encoding="utf-8"))
    for name in ("softmax, 2 layers", "2 heads", "lightning, 2 layers"):
        jsonschema.validate(spectrum_certificate(Architecture.uniform(**ROUND_TRIPS[name][0])), schema)
    # version-1 dimension certificates still match, and the spectrum's claim is not a dimension's
    jsonschema.validate(dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1)), schema)
    certificate = spectrum_certificate(Architecture.uniform(layers=1, width=2, tokens=2))
    certificate["claim"] = "the dimension of the function space of this architecture is at least 7"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(certificate, schema)


def test_write_and_verify_a_file(tmp_path):
    path = tmp_path / "spectrum.json"
    certificate = write_spectrum_certificate(Architecture.uniform(layers=1, width=2, tokens=2), path)
    assert json.loads(path.read_text(encoding="utf-8")) == certificate
    assert verify(path).verified and verify(str(path)).verified


# -- refusals ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch, message", [
    (lambda: Architecture.uniform(layers=1, normalizer=Normalizer.generic(1)), "is generic"),
    (lambda: Architecture.uniform(layers=1, normalizer="exp(sqrt(2)*x)"), "not rational"),
    (lambda: Architecture.uniform(layers=1, extra=feed_forward_block(2, activation="gelu")), "activation gelu"),
])
def test_what_a_certificate_cannot_describe_is_refused_first(arch, message, monkeypatch):
    import symattn.spectrum

    def no_computation(*args, **kwargs):
        raise AssertionError("computed before refusing")

    monkeypatch.setattr(symattn.spectrum, "decay_spectrum", no_computation)
    with pytest.raises(CertificateRefused, match=message):
        spectrum_certificate(arch())


def test_a_polynomial_curve_is_refused_first():
    import sympy as sp

    from symattn.curves import EPS, polynomial_curve

    curve = polynomial_curve({"K1": sp.Matrix([[EPS, EPS]])})
    with pytest.raises(CertificateRefused, match="a certificate describes curves that scale blocks by powers of "
                                                 "eps"):
        spectrum_certificate(Architecture.uniform(layers=1), curve=curve)


# -- what a verified certificate proves: mod p against Q -------------------------------------------------
def test_mod_p_valuations_bound_partial_sums_over_q_not_each_exponent():
    # [[eps, 7], [0, eps]]: over GF(7)[[eps]] the Smith valuations are {1, 1}; at another prime, as over Q,
    # they are {0, 2}: the second exponent over Q exceeds the second mod 7, only the sums 1 >= 0, 2 >= 2 hold
    M = np.zeros((2, 2, 4), dtype=np.int64)
    M[0, 0, 1] = M[1, 1, 1] = 1
    M[0, 1, 0] = 7
    assert pivot_valuations(M, 7) == [1, 1]
    assert pivot_valuations(M, 11) == [0, 2]
    certificate = spectrum_certificate(Architecture.uniform(layers=1, width=2, tokens=2))
    assert "not each exponent: the minor [[eps, p], [0, eps]]" in certificate["does_not_prove"]
    assert "e_1 + ... + e_k" in certificate["proves"]


# -- the checker's normalizer: baby and giant steps against the plain sum --------------------------------
@settings(max_examples=100, deadline=None)
@given(st.data())
def test_polynomials_of_series_is_the_plain_sum(data):
    from symattn.verifier.arithmetic import convolve
    from symattn.verifier.network import polynomials_of_series

    p = data.draw(st.sampled_from([2, 7, 101, 268435399]))
    N = data.draw(st.integers(1, 12))
    a = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=N, max_size=N)), dtype=np.int64)
    lists = data.draw(st.lists(st.lists(st.integers(0, p - 1), min_size=1, max_size=30), min_size=1, max_size=3))
    expected = []
    for coefficients in lists:
        total, power = np.zeros(N, dtype=np.int64), np.eye(1, N, dtype=np.int64)[0]
        for c in coefficients:
            total = (total + c * power) % p
            power = convolve(power, a, p)
        expected.append(total.tolist())
    assert [r.tolist() for r in polynomials_of_series(lists, a, p)] == expected


# -- tampering ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_certificate():
    certificate = spectrum_certificate(Architecture.uniform(layers=2, width=2, rank=1))
    assert verify(certificate).verified
    return certificate


def _fails(certificate, *fragments):
    report = verify(certificate)
    assert not report.verified
    assert report.problem and all(fragment in report.problem for fragment in fragments), report.problem
    return report


def _retitled(certificate):
    """The claim rewritten from the (edited) exponents and prime, so that only the edit itself can fail."""
    exponents = {int(e): m for e, m in certificate["exponents"].items()}
    certificate["claim"] = spectrum_claim(certificate["rank"], exponents, certificate["prime"])
    return certificate


def test_each_must_fail_edit_fails_naming_it(base_certificate):
    c = copy.deepcopy
    edit = c(base_certificate)
    edit["exponents"] = {"0": 4, "1": 3, "4": 3}
    _fails(_retitled(edit), "exponents {0: 4, 1: 3, 4: 3} are not the witness's pivot valuations {0: 4, 1: 3, 5: 3}")
    edit = c(base_certificate)
    edit["exponents"]["1"] = 4
    _fails(_retitled(edit), "add up to 11, not to the rank 10")
    edit = c(base_certificate)
    edit["exponents"]["0"], edit["exponents"]["1"] = 3, 4
    _fails(_retitled(edit), "are not the witness's pivot valuations")
    # exponents, witness and claim changed together: only the recomputation can tell
    edit = c(base_certificate)
    edit["witness"]["valuations"][-1] = 4
    edit["exponents"] = {"0": 4, "1": 3, "4": 1, "5": 2}
    _fails(_retitled(edit), "pivot valuations of the witness minor are {0: 4, 1: 3, 5: 3}")
    edit = c(base_certificate)
    edit["exponents"]["5"] = 2
    edit["exponents"]["6"] = 1
    _fails(_retitled(edit), "are not the witness's pivot valuations")
    edit = c(base_certificate)
    edit["exponents"]["x"] = 1
    _fails(edit, "is not an exponent")
    edit = c(base_certificate)
    edit["exponents"]["5"] = 0
    _fails(edit, "exponents['5'] must be a multiplicity, an integer in 1 .. 10")
    edit = c(base_certificate)
    edit["coordinates"] = "curve"
    _fails(edit, "coordinates must be 'native'")
    edit = c(base_certificate)
    del edit["exponents"]
    _fails(edit, "no field 'exponents'")
    edit = c(base_certificate)
    edit["claim"] = base_certificate["claim"].replace("rank at least 10", "rank at least 11")
    _fails(edit, "does not say")
    edit = c(base_certificate)
    edit["prime"] = 268435399 * 3
    _fails(edit, "not a prime")
    edit = c(base_certificate)
    edit["prime"] = 3  # prime, but it divides 1/3! in softmax's Taylor coefficients
    _fails(_retitled(edit), "divisible by the prime 3")
    edit = c(base_certificate)
    edit["witness"]["rows"][0][2] = 3
    _fails(edit, "output token", "0 .. 2")
    edit = c(base_certificate)
    edit["truncation"] = 5
    _fails(edit, "a pivot valuation 5 is not below the truncation eps^5")
    edit = c(base_certificate)
    edit["truncation"] = 7  # deeper, but the certificate lists c_0 .. c_6 of exp only
    _fails(edit, "truncation eps^7 needs c_0 .. c_7")
    edit = c(base_certificate)
    edit["point"]["Q_1"][0][0] = 0
    edit["point"]["K_1"][0] = [0, 0]
    _fails(edit, "the witness minor has only 5 pivots below eps^6, not 10")  # K_1 = 0: layer 1's scores vanish
    edit = c(base_certificate)
    edit["kind"] = "dimension lower bound"
    _fails(edit, "does not say 'the dimension of the function space of this architecture is at least 10'")


def test_a_dimension_certificate_is_not_a_spectrum_certificate():
    from symattn.curves import collapse

    certificate = dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1), curve=collapse())
    certificate["kind"] = "spectrum"
    _fails(certificate, "no field 'coordinates'")
    integer_scores = dimension_certificate(Architecture.uniform(layers=2, width=2, rank=1))
    integer_scores["kind"] = "spectrum"
    _fails(integer_scores, "a 'spectrum' certificate has no integer scores")


_MUST_FAIL = ("exponent changed", "multiplicity changed", "valuation changed", "not a prime",
              "row index out of range", "truncation below a pivot")
_MAY_PASS = ("point entry", "bank entry", "another prime", "row index in range", "truncation up")
_OTHER_PRIMES = (268435367, 1048573, 1000003, 999983, 101, 7)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(_MUST_FAIL + _MAY_PASS), data=st.data())
def test_a_random_single_edit(base_certificate, kind, data):
    certificate = copy.deepcopy(base_certificate)
    witness = certificate["witness"]
    if kind == "exponent changed":
        old = data.draw(st.sampled_from(sorted(certificate["exponents"])))
        new = str(data.draw(st.integers(0, 60).filter(lambda e: str(e) not in certificate["exponents"])))
        certificate["exponents"][new] = certificate["exponents"].pop(old)
        _retitled(certificate)
    elif kind == "multiplicity changed":
        e = data.draw(st.sampled_from(sorted(certificate["exponents"])))
        old = certificate["exponents"][e]
        certificate["exponents"][e] = data.draw(st.integers(1, 20).filter(lambda m: m != old))
        _retitled(certificate)
    elif kind == "valuation changed":
        n = data.draw(st.integers(0, len(witness["valuations"]) - 1))
        witness["valuations"][n] = data.draw(
            st.integers(0, certificate["truncation"] - 1).filter(lambda v: v != witness["valuations"][n]))
    elif kind == "not a prime":
        certificate["prime"] = data.draw(st.sampled_from([4, 268435399 * 2, 268435401, 1, 0, -7, 2 ** 40]))
    elif kind == "row index out of range":
        n = data.draw(st.integers(0, len(witness["rows"]) - 1))
        where = data.draw(st.integers(0, 2))
        limit = (len(certificate["bank"]), certificate["architecture"]["widths"][-1],
                 certificate["architecture"]["tokens"])[where]
        witness["rows"][n][where] = data.draw(st.one_of(st.integers(limit, limit + 100), st.integers(-50, -1)))
    elif kind == "truncation below a pivot":
        certificate["truncation"] = data.draw(st.integers(1, max(witness["valuations"])))
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
    elif kind == "row index in range":
        n = data.draw(st.integers(0, len(witness["rows"]) - 1))
        where = data.draw(st.integers(0, 2))
        limit = (len(certificate["bank"]), certificate["architecture"]["widths"][-1],
                 certificate["architecture"]["tokens"])[where]
        witness["rows"][n][where] = data.draw(st.integers(0, limit - 1))
    elif kind == "truncation up":
        certificate["truncation"] += data.draw(st.integers(1, 3))
    else:
        certificate["prime"] = data.draw(st.sampled_from(_OTHER_PRIMES))
        _retitled(certificate)
    report = verify(certificate)  # never raises on a parsed certificate
    if kind in _MUST_FAIL:
        assert not report.verified and report.problem
    elif report.verified:
        # an edit that leaves a valid certificate: the checker's own valuations are the claimed exponents
        claimed = sorted(int(e) for e, m in certificate["exponents"].items() for _ in range(m))
        assert list(report.valuations) == claimed == sorted(witness["valuations"])
        assert report.rank == certificate["rank"]
    else:
        assert report.problem


# -- independence ---------------------------------------------------------------------------------------
def test_the_verifier_imports_only_the_standard_library_numpy_and_itself():
    import ast

    allowed = set(sys.stdlib_module_names) | {"numpy", "flint"}
    assert (VERIFIER / "spectrum.py").exists()
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


def test_the_verifier_checks_a_spectrum_as_a_standalone_copy(tmp_path):
    # a copy of the package under another name, in a fresh interpreter that cannot see symattn
    path = tmp_path / "spectrum.json"
    write_spectrum_certificate(Architecture.uniform(layers=2, width=2, rank=1, causal=True), path)
    report = verify_as_standalone_copy(tmp_path, path)
    assert [report["verified"], report["valuations"], report["modules"]] == \
        [True, [0, 0, 0, 0, 1, 1, 1, 1, 1, 1], ["symattn"]]


# -- the command line ---------------------------------------------------------------------------------
def test_spectrum_writes_a_certificate_and_verify_checks_it(tmp_path, capsys):
    path = tmp_path / "spectrum.json"
    assert main(["spectrum", "--layers", "2", "--normalizer", "cosh", "--certificate", str(path)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {path}" in captured.err
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verified: along its curve, the native Jacobian of this architecture on its bank has rank "
                          "at least 10, and its decay exponents over GF(268435399)[[eps]], in increasing order, are "
                          "at most {0: 4, 3: 3, 11: 3}")
    assert "recomputed the 10 x 10 witness minor of the Jacobian mod (268435399, eps^12) in the native parameters" in out
    certificate = json.loads(path.read_text(encoding="utf-8"))
    certificate["exponents"]["11"] = 2
    certificate["exponents"]["12"] = 1
    path.write_text(json.dumps(certificate), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert capsys.readouterr().out.startswith("NOT verified: exponents {0: 4, 3: 3, 11: 2, 12: 1} are not the "
                                              "witness's pivot valuations {0: 4, 3: 3, 11: 3}")
    assert main(["verify", str(path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["verified"] is False


def test_a_refused_spectrum_certificate_is_a_usage_error_before_computing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["spectrum", "--layers", "1", "--ffn", "2", "--activation", "gelu", "--quiet", "--certificate",
                 "x.json"]) == 2
    assert "activation gelu" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
