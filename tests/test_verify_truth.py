"""``verify`` says "verified" only for statements the engine agrees with: edited certificates of every kind.

A pool of valid certificates (dimension, spectrum, orders, an identify
bundle, claims) is edited as a forger would (fields deleted or retyped,
normalizers relabelled or given another function's coefficients, parts
dropped, architectures swapped, claims and ranks changed with the claim
sentence rewritten to match).  Whenever the checker still says "verified",
every statement of its conclusion is compared with what the engine computes
for the architecture the certificate states (its widths, ranks, tokens and
the normalizers its names denote): a dimension or rank "at least r" must be
at most the engine's, a claim "proved" must be true and "refuted" false.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from symattn.certificates import (
    claims_certificate, dimension_certificate, identify_certificate, orders_certificate, spectrum_certificate,
)
from symattn.identify import function_space_dimension
from symattn.model import Architecture
from symattn.spectrum import decay_spectrum
from symattn.verifier import verify
from symattn.verifier.claims import claims_claim

# the names a forger relabels with: every one the engine reads, and one it does not
NAMES = ("softmax", "cosh", "quadratic", "gauss", "sigmoid", "exp(x)", "cosh(x)", "2 + sin(x)", "x**2 + 1",
         "my normalizer")
# the coefficients of s/s(0) to 7 terms a forger swaps in
COEFFICIENTS = {
    "exp": ["1", "1", "1/2", "1/6", "1/24", "1/120", "1/720", "1/5040"],
    "cosh": ["1", "0", "1/2", "0", "1/24", "0", "1/720", "0"],
    "gauss": ["1", "0", "1", "0", "1/2", "0", "1/6", "0"],
}
ARCHITECTURES = {
    "one softmax layer": dict(layers=1, width=2, rank=1, tokens=2),
    "one cosh layer": dict(layers=1, width=2, rank=1, tokens=2, normalizer="cosh"),
    "two softmax layers": dict(layers=2, width=2, rank=1),
}


def _arch_from_document(architecture: dict) -> Architecture | None:
    """The engine's architecture for a certificate's ``architecture`` field, or None when the engine cannot read it."""
    try:
        names = architecture["normalizers"]
        return Architecture(architecture["widths"], architecture["score_ranks"], tokens=architecture["tokens"],
                            normalizer=list(names), heads=list(architecture["heads"]),
                            causal=architecture["causal"], residual=architecture["residual"],
                            bias=architecture.get("bias", False))
    except Exception:  # noqa: BLE001 - any field the engine refuses: no truth to compare with
        return None


_TRUTHS: dict = {}


def _truth(architecture: dict) -> dict | None:
    """The engine's numbers for a stated architecture: dimension (lower, upper), spectrum rank, parameters."""
    key = json.dumps(architecture, sort_keys=True)
    if key not in _TRUTHS:
        arch = _arch_from_document(architecture)
        if arch is None or arch.layers > 2 or max(arch.widths) > 3 or arch.tokens > 3:
            _TRUTHS[key] = None
        else:
            dimension = function_space_dimension(arch)
            spectrum = decay_spectrum(arch)
            _TRUTHS[key] = {"dimension": (dimension.lower, dimension.upper), "rank": spectrum.rank,
                            "parameters": arch.param_count}
    return _TRUTHS[key]


@pytest.fixture(scope="module")
def pool():
    certificates = []
    for name, options in ARCHITECTURES.items():
        arch = Architecture.uniform(**options)
        certificates += [dimension_certificate(arch), spectrum_certificate(arch)]
        if name == "one softmax layer":
            certificates += [orders_certificate(arch), identify_certificate(arch),
                             claims_certificate(arch, ["dimension = 7", "dimension = 5", "kernel = 1", "kernel = 2",
                                                       "contact_order(1) = 1"])]
    for certificate in certificates:
        assert verify(certificate).verified
    return certificates


def _statement_holds(statement: str, truth: dict) -> bool:
    """Whether one sentence of a conclusion agrees with the engine's numbers (a sentence not about them: True)."""
    found = re.search(r"dimension of the function space of this architecture is at least (\d+)", statement)
    if found and int(found.group(1)) > truth["dimension"][1]:
        return False
    found = re.search(r"native Jacobian of this architecture on its bank has rank at least (\d+)", statement)
    if found and int(found.group(1)) > truth["rank"]:
        return False
    found = re.fullmatch(r"(dimension|kernel) = (\d+) is (proved|refuted)", statement.strip())
    if found:
        quantity, value, decision = found.group(1), int(found.group(2)), found.group(3)
        low, high = truth["dimension"] if quantity == "dimension" else (truth["parameters"] - truth["rank"],) * 2
        if decision == "proved" and not low == high == value:
            return False
        if decision == "refuted" and low <= value <= high:
            return False
    return True


def _leaves(document, path=()):
    if isinstance(document, dict):
        for key, value in document.items():
            yield path + (key,)
            yield from _leaves(value, path + (key,))
    elif isinstance(document, list):
        for n, value in enumerate(document[:4]):
            yield path + (n,)
            yield from _leaves(value, path + (n,))


def _at(document, path):
    for key in path:
        document = document[key]
    return document


def _set(document, path, value):
    _at(document, path[:-1])[path[-1]] = value


def _normalizer_entries(document):
    """Every normalizers list of the document and its parts, with the architecture it sits beside."""
    for holder in [document, *document.get("parts", [])]:
        if isinstance(holder, dict) and isinstance(holder.get("normalizers"), list):
            yield holder


def _drawn_entry(document, data):
    """``(holder, entry)``: a normalizer entry of the document or of one of its parts, or None when there is none."""
    holders = list(_normalizer_entries(document))
    if not holders:
        return None
    holder = data.draw(st.sampled_from(holders))
    return holder, data.draw(st.sampled_from(holder["normalizers"]))


EDITS = ("delete", "retype", "relabel", "coefficients", "drop part", "swap architecture", "claims", "rank")


def _edit(document: dict, pool: list, kind: str, data) -> None:
    """One forger's edit of ``document``, in place (the claim sentence rewritten where the edit changes it)."""
    if kind in ("delete", "retype"):
        paths = list(_leaves(document))
        path = data.draw(st.sampled_from(paths))
        if kind == "delete":
            del _at(document, path[:-1])[path[-1]]
        else:
            _set(document, path, data.draw(st.sampled_from([None, True, 0, -1, 10 ** 6, "x", [], {}, [[1]]])))
    elif kind == "relabel":
        if (drawn := _drawn_entry(document, data)) is None:
            return
        holder, entry = drawn
        name = data.draw(st.sampled_from(NAMES))
        if not isinstance(entry, dict):
            return
        entry["name"] = name
        if data.draw(st.booleans()):
            entry["expression"] = data.draw(st.sampled_from([None, "exp(x)", "cosh(x)", "exp(x**2)", "x**2 + 1"]))
        if data.draw(st.booleans()):       # the architecture's names follow, as a careful forger would
            for holder_ in [document, *document.get("parts", [])]:
                if isinstance(holder_, dict) and isinstance(holder_.get("architecture"), dict):
                    names = holder_["architecture"].get("normalizers")
                    if isinstance(names, list):
                        index = holder["normalizers"].index(entry)
                        if index < len(names):
                            names[index] = name
    elif kind == "coefficients":
        if (drawn := _drawn_entry(document, data)) is None:
            return
        _, entry = drawn
        if isinstance(entry, dict) and isinstance(entry.get("taylor"), list) and entry["taylor"]:
            function = data.draw(st.sampled_from(sorted(COEFFICIENTS)))
            size = len(entry["taylor"])
            entry["taylor"] = (COEFFICIENTS[function] + ["0"] * size)[:size]
    elif kind == "drop part":
        parts = document.get("parts")
        if isinstance(parts, list) and parts:
            del parts[data.draw(st.integers(0, len(parts) - 1))]
    elif kind == "swap architecture":
        other = pool[data.draw(st.integers(0, len(pool) - 1), label="other certificate")]
        architecture = other.get("architecture") or other["parts"][0]["architecture"]
        if "architecture" in document or "parts" not in document:
            document["architecture"] = copy.deepcopy(architecture)
        for part in document.get("parts", []) if isinstance(document.get("parts"), list) else []:
            if isinstance(part, dict):
                part["architecture"] = copy.deepcopy(architecture)
    elif kind == "claims":
        claims = document.get("claims")
        if isinstance(claims, list) and claims and all(isinstance(c, dict) for c in claims):
            entry = data.draw(st.sampled_from(claims))
            if "value" in entry and isinstance(entry["value"], int):
                entry["value"] = max(0, entry["value"] + data.draw(st.integers(-3, 3)))
            if data.draw(st.booleans()):
                entry["engine_verdict"] = data.draw(st.sampled_from([True, False, None]))
            try:
                document["claim"] = claims_claim(claims)
            except Exception:  # noqa: BLE001 - a claim the edit made unreadable: the old sentence stays
                pass
    elif kind == "rank":
        if isinstance(document.get("rank"), int):
            document["rank"] += data.draw(st.integers(1, 3))
            if isinstance(document.get("claim"), str):
                document["claim"] = re.sub(r"at least \d+", f"at least {document['rank']}", document["claim"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_verified_only_when_the_engine_agrees_with_every_statement(pool, data):
    document = copy.deepcopy(pool[data.draw(st.integers(0, len(pool) - 1), label="certificate")])
    for _ in range(data.draw(st.integers(1, 3))):
        _edit(document, pool, data.draw(st.sampled_from(EDITS)), data)
    try:
        report = verify(document)
    except Exception as err:  # noqa: BLE001 - only "not a certificate" may be raised
        from symattn.verifier import CertificateError
        assert isinstance(err, CertificateError), repr(err)
        return
    event("verified" if report.verified else "not verified")
    if not report.verified:
        assert report.problem and "\n" not in report.problem and len(report.problem) <= 400
        return
    # a bundle's parts are about one architecture (the checker requires it)
    architecture = document.get("architecture") or document["parts"][0]["architecture"]
    if "normalizers" not in architecture:  # the names are then the normalizers' entries' (bound to them)
        entries = document.get("normalizers") or document["parts"][0]["normalizers"]
        architecture = {**architecture, "normalizers": [entry["name"] for entry in entries]}
    if report.unchecked and "as given by its Taylor coefficients" in report.conclusion:
        # the verdict is about the coefficients, not the names: compare with the function they belong to
        names = []
        for entry in (document.get("normalizers") or document["parts"][0]["normalizers"]):
            taylor = entry["taylor"][:8]
            function = next((f for f, c in COEFFICIENTS.items() if c[:len(taylor)] == taylor), None)
            names.append({"exp": "softmax", "cosh": "cosh", "gauss": "gauss"}.get(function, entry["name"]))
        architecture = {**architecture, "normalizers": names}
    elif any(name == "my normalizer" for name in architecture.get("normalizers", [])):
        # a label the checker does not read: the function is the expression it recomputed the coefficients from
        entries = document.get("normalizers") or document["parts"][0]["normalizers"]
        architecture = {**architecture, "normalizers": [
            entry.get("expression") or name if name == "my normalizer" else name
            for name, entry in zip(architecture["normalizers"], entries)]}
    truth = _truth(architecture)
    assert truth is not None, f"verified a certificate of an architecture the engine cannot read: {architecture}"
    for statement in report.conclusion.split("; "):
        assert _statement_holds(statement, truth), (statement, truth, architecture)


def test_cosh_coefficients_under_the_name_softmax_are_refused(pool):
    softmax = next(c for c in pool if c["kind"] == "dimension lower bound"
                   and c["architecture"]["normalizers"] == ["softmax"])
    cosh = next(c for c in pool if c["kind"] == "dimension lower bound" and c["architecture"]["normalizers"] == ["cosh"])
    forged = copy.deepcopy(cosh)
    forged["architecture"]["normalizers"] = ["softmax"]
    forged["normalizers"][0]["name"] = "softmax"
    report = verify(forged)
    assert not report.verified
    assert report.problem.startswith("normalizers[0]: the Taylor coefficient c_1 of s/s(0) for its name 'softmax' "
                                     "(the preset exp(x)) is 1 mod")
    # the entry relabelled alone: the architecture's name no longer matches it
    forged = copy.deepcopy(cosh)
    forged["normalizers"][0]["name"] = "softmax"
    assert verify(forged).problem == ("normalizers[0].name is 'softmax', but architecture.normalizers[0] is 'cosh': "
                                      "one network has one normalizer per layer")
    # a name the checker cannot read: a label, printed as unchecked; the function is its expression, exp(x)
    renamed = copy.deepcopy(softmax)
    renamed["architecture"]["normalizers"] = ["my normalizer"]
    renamed["normalizers"][0]["name"] = "my normalizer"
    report = verify(renamed)
    assert report.verified and report.conclusion == "the dimension of the function space of this architecture is at least 7"
    # without an expression, layer 1 is not known to be exp: its integer scores are refused
    renamed["normalizers"][0]["expression"] = None
    assert verify(renamed).problem.startswith("integer_scores: layer 1's normalizer must be exp(x) (softmax), its "
                                              "Taylor coefficients recomputed by this checker, got 'my normalizer' "
                                              "with expression null")
    # the same on the curve route (cosh): the verdict holds for the coefficients as given
    renamed = copy.deepcopy(cosh)
    renamed["architecture"]["normalizers"] = ["my normalizer"]
    renamed["normalizers"][0]["name"] = "my normalizer"
    report = verify(renamed)
    assert report.verified
    assert report.unchecked == ("layer 1's normalizer: its name 'my normalizer' is not checked (the checker cannot "
                                "recompute it: 'my' is not x or one of the functions exp, log, sqrt, sin, cos, tan, "
                                "sinh, cosh, tanh, atan followed by '(')",)
    assert report.conclusion == "the dimension of the function space of this architecture is at least 7"
    # its expression recomputed from cosh(x): the coefficients are bound, only the label is not
    assert "coefficients recomputed by the checker mod 1048573 from its expression 'cosh(x)'" in report.checked[2]
    renamed["normalizers"][0]["expression"] = None
    report = verify(renamed)
    assert report.verified and report.conclusion == (
        "the dimension of the function space of this architecture is at least 7, for layer 1's normalizer as given "
        "by its Taylor coefficients (the name and expression are not checked)")
    assert str(report).splitlines()[1] == "not checked (the certificate's own words, taken as given):"


def test_a_spectrum_claim_relabelled_is_refused_not_refuted(pool):
    # cosh's spectrum certificate relabelled softmax would "refute" a true kernel; the relabelling is refused
    cosh = next(c for c in pool if c["kind"] == "spectrum" and c["architecture"]["normalizers"] == ["cosh"])
    forged = copy.deepcopy(cosh)
    forged["architecture"]["normalizers"] = ["softmax"]
    forged["normalizers"][0]["name"] = "softmax"
    report = verify(forged)
    assert not report.verified and "for its name 'softmax' (the preset exp(x))" in report.problem
