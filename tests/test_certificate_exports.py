"""The check of a certificate exported to SageMath and Macaulay2 (``symattn verify FILE --export sage|m2``).

The scripts recompute the witness minor in the other system's own
arithmetic (``GF(p)[eps, d] / (eps^N, d^2)``, one forward pass per witness
column) and pivot it there.  They run where the systems are installed: ``M2``
on the path; SageMath as ``sage`` on the path, or a Python with passagemath
named by ``SYMATTN_SAGE_PYTHON``; elsewhere those tests are skipped and the
structure of the scripts is still tested.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess

import pytest

from symattn.certificates import dimension_certificate, spectrum_certificate, write_dimension_certificate
from symattn.cli import main
from symattn.curves import collapse, input_scaling
from symattn.model import Architecture
from symattn.verifier import CertificateError
from symattn.verifier.export import export_script


def _sage_command():
    if shutil.which("sage"):
        return [shutil.which("sage"), "-python"]
    python = os.environ.get("SYMATTN_SAGE_PYTHON")
    return [python] if python and os.path.exists(python) else None


SAGE = _sage_command()
M2 = shutil.which("M2")
needs_sage = pytest.mark.skipif(SAGE is None, reason="SageMath is not installed (sage, or SYMATTN_SAGE_PYTHON)")
needs_m2 = pytest.mark.skipif(M2 is None, reason="Macaulay2 (M2) is not installed")

# name: (kind, architecture, curve)
CERTIFICATES = {
    "dimension, softmax, 2 layers": ("dimension", dict(layers=2, width=2, rank=1), collapse()),
    # the integer-score route: layer 1 at exact integer scores, e sent to a residue (no curve given)
    "dimension, integer scores, 2 layers": ("dimension", dict(layers=2, width=2, rank=1), None),
    "dimension, integer scores, heads, causal, residual": (
        "dimension", dict(layers=2, width=2, rank=1, heads=[2, 1], causal=True, residual=True), None),
    "dimension, integer scores, 1 layer": ("dimension", dict(layers=1, width=2, tokens=3), None),
    "dimension, cosh, heads": ("dimension", dict(layers=1, width=2, rank=1, normalizer="cosh", heads=2), None),
    "dimension, 1 + x**2, causal": ("dimension", dict(layers=2, width=2, rank=1, normalizer="1 + x**2",
                                                      causal=True), None),
    "dimension, residual, input scaling": ("dimension", dict(layers=2, width=2, rank=1, residual=True),
                                           input_scaling()),
    "dimension, lightning": ("dimension", dict(layers=2, width=2, rank=1, normalizer="lightning"), None),
    "spectrum, softmax, 2 layers": ("spectrum", dict(layers=2, width=2, rank=1), None),
    "spectrum, heads and causal": ("spectrum", dict(layers=1, width=2, rank=1, heads=2, causal=True), None),
    # biases and feed-forward blocks: a non-polynomial activation (its argument vanishes at eps = 0) and a
    # polynomial one
    "dimension, biases": ("dimension", dict(layers=1, width=2, rank=1, bias=True), None),
    "spectrum, feed-forward tanh": ("spectrum", dict(layers=1, width=2, rank=1, ffn=2), None),
    "dimension, biased feed-forward x + x**2, heads, residual, causal": (
        "dimension", dict(layers=1, width=2, rank=1, ffn=2, bias=True, heads=2, activation="x + x**2",
                          residual=True, causal=True), None),
}


def _certificate(name):
    kind, options, curve = CERTIFICATES[name]
    arch = Architecture.uniform(**options)
    if kind == "dimension":
        return dimension_certificate(arch, curve=curve)
    return spectrum_certificate(arch, curve=curve)


def _run(command, script, tmp_path, suffix):
    path = tmp_path / f"check{suffix}"
    path.write_text(script, encoding="utf-8")
    return subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=600, cwd=tmp_path)


# -- what the scripts hold -----------------------------------------------------------------------------
@pytest.mark.parametrize("system", ["sage", "m2"])
def test_a_script_holds_the_certificates_numbers_and_its_claim(system):
    certificate = _certificate("dimension, softmax, 2 layers")
    script = export_script(certificate, system)
    end = ";" if system == "m2" else ""
    assert f"p = {certificate['prime']}{end}" in script and f"N = {certificate['truncation']}{end}" in script
    claimed = sorted(certificate["witness"]["valuations"])
    assert (f"claimed = {claimed}" if system == "sage" else "claimed = {" + ", ".join(map(str, claimed)) + "};") \
        in script
    assert "dimension lower bound: rank >= 10" in script


def test_what_cannot_be_exported_is_a_clear_error():
    certificate = _certificate("dimension, softmax, 2 layers")
    with pytest.raises(CertificateError, match="--export maple: the scripts are for sage .* and m2"):
        export_script(certificate, "maple")
    broken = copy.deepcopy(certificate)
    broken["witness"]["rows"][0] = [0, 5, 0]
    with pytest.raises(CertificateError, match=r"cannot export this certificate: witness.rows\[0\] output row"):
        export_script(broken, "sage")
    from symattn.certificates import orders_certificate

    with pytest.raises(CertificateError, match="kind 'identification orders': the exports cover dimension and "
                                               "spectrum certificates"):
        export_script(orders_certificate(Architecture.uniform(layers=1, width=1, tokens=2)), "m2")


def test_verify_writes_the_script_beside_the_certificate_or_where_told(tmp_path, capsys):
    path = tmp_path / "dimension.json"
    write_dimension_certificate(Architecture.uniform(layers=1, width=2, tokens=2), path)
    assert main(["verify", str(path), "--export", "sage"]) == 0
    assert (tmp_path / "dimension.sage.py").exists()
    assert main(["verify", str(path), "--export", "m2", "--output", str(tmp_path / "check.m2")]) == 0
    assert (tmp_path / "check.m2").read_text(encoding="utf-8").startswith("-- Re-check of a symattn certificate")
    capsys.readouterr()
    assert main(["verify", str(path), "--export", "maple"]) == 2
    assert "invalid choice: 'maple'" in capsys.readouterr().err


# -- the scripts, run ---------------------------------------------------------------------------------------
@needs_m2
@pytest.mark.parametrize("name", list(CERTIFICATES))
def test_the_macaulay2_script_verifies(name, tmp_path):
    certificate = _certificate(name)
    done = _run([M2, "--script"], export_script(certificate, "m2"), tmp_path, ".m2")
    assert done.returncode == 0, done.stdout + done.stderr
    valuations = ", ".join(map(str, sorted(certificate["witness"]["valuations"])))
    assert done.stdout.startswith(f"verified: the witness minor has pivot valuations {{{valuations}}}, all below "
                                  f"eps^{certificate['truncation']}: rank >= {len(certificate['witness']['rows'])}")


@needs_sage
@pytest.mark.parametrize("name", list(CERTIFICATES))
def test_the_sage_script_verifies(name, tmp_path):
    certificate = _certificate(name)
    done = _run(SAGE, export_script(certificate, "sage"), tmp_path, ".py")
    assert done.returncode == 0, done.stdout + done.stderr
    valuations = sorted(certificate["witness"]["valuations"])
    assert done.stdout.startswith(f"verified: the witness minor has pivot valuations {valuations}, all below "
                                  f"eps^{certificate['truncation']}: rank >= {len(valuations)}")


def _tampered():
    certificate = _certificate("dimension, softmax, 2 layers")
    certificate["witness"]["valuations"][-1] -= 1   # 6 claimed as 5: the scripts must find 6
    return certificate


@needs_m2
def test_the_macaulay2_script_finds_a_changed_valuation(tmp_path):
    done = _run([M2, "--script"], export_script(_tampered(), "m2"), tmp_path, ".m2")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT verified: the witness minor has pivot valuations {0, 0, 0, 0, 2, 2, 2, 6, "
                                  "6, 6}, the certificate claims {0, 0, 0, 0, 2, 2, 2, 5, 6, 6}")


@needs_sage
def test_the_sage_script_finds_a_changed_valuation(tmp_path):
    done = _run(SAGE, export_script(_tampered(), "sage"), tmp_path, ".py")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT verified: the witness minor has pivot valuations [0, 0, 0, 0, 2, 2, 2, 6, 6, "
                                  "6], the certificate claims [0, 0, 0, 0, 2, 2, 2, 5, 6, 6]")


@needs_m2
def test_a_changed_point_is_seen_by_the_macaulay2_script(tmp_path):
    certificate = _certificate("dimension, softmax, 2 layers")
    changed = copy.deepcopy(certificate)
    changed["point"]["V_1"] = [[0, 0], [0, 0]]   # V_1 = 0: the network's output is 0, every minor singular
    done = _run([M2, "--script"], export_script(changed, "m2"), tmp_path, ".m2")
    assert done.returncode == 1 and done.stdout.startswith("NOT verified: the witness minor has pivot valuations")
    assert json.dumps(certificate) != json.dumps(changed)


def _biased_spectrum():
    """A spectrum certificate with biases, and the same with b_Q = 0: its witness minor is then singular."""
    certificate = spectrum_certificate(Architecture.uniform(layers=1, width=2, rank=1, bias=True))
    changed = copy.deepcopy(certificate)
    changed["point"]["bQ_1"] = [[0]]
    return certificate, changed


@needs_m2
def test_a_changed_bias_is_seen_by_the_macaulay2_script(tmp_path):
    certificate, changed = _biased_spectrum()
    assert sorted(certificate["witness"]["valuations"]) == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    done = _run([M2, "--script"], export_script(changed, "m2"), tmp_path, ".m2")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT verified: the witness minor has pivot valuations {0, 0, 0, 0, 0, 0, 1, 1, "
                                  "1}, the certificate claims {0, 0, 0, 0, 0, 0, 1, 1, 1, 1}")


@needs_sage
def test_a_changed_bias_is_seen_by_the_sage_script(tmp_path):
    _, changed = _biased_spectrum()
    done = _run(SAGE, export_script(changed, "sage"), tmp_path, ".py")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT verified: the witness minor has pivot valuations [0, 0, 0, 0, 0, 0, 1, 1, "
                                  "1], the certificate claims [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]")


def _integer_scores_tampered():
    certificate = _certificate("dimension, integer scores, 2 layers")
    assert sorted(certificate["witness"]["valuations"]) == [0] * 7 + [1] * 3
    certificate["witness"]["valuations"][-1] += 1   # a 1 claimed as 2 (below the truncation eps^3)
    certificate["truncation"] = 3
    certificate["normalizers"][0]["taylor"].append("1/6")
    certificate["normalizers"][1]["taylor"].append("1/6")
    return certificate


@needs_m2
def test_the_macaulay2_script_checks_integer_scores(tmp_path):
    script = export_script(_integer_scores_tampered(), "m2")
    assert "integerBase = " in script and "exactScores" in script
    done = _run([M2, "--script"], script, tmp_path, ".m2")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT verified: the witness minor has pivot valuations {0, 0, 0, 0, 0, 0, 0, 1, "
                                  "1, 1}, the certificate claims {0, 0, 0, 0, 0, 0, 0, 1, 1, 2}")


@needs_sage
def test_the_sage_script_checks_integer_scores(tmp_path):
    done = _run(SAGE, export_script(_integer_scores_tampered(), "sage"), tmp_path, ".py")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT verified: the witness minor has pivot valuations [0, 0, 0, 0, 0, 0, 0, 1, "
                                  "1, 1], the certificate claims [0, 0, 0, 0, 0, 0, 0, 1, 1, 2]")


def test_an_integer_score_certificate_out_of_bounds_is_not_exported():
    certificate = _certificate("dimension, integer scores, 2 layers")
    certificate["point"]["Q_1"][0][0] = 10 ** 6    # a layer-1 score past p/2
    with pytest.raises(CertificateError, match="integer_scores: a layer-1 score is .* not below p/2"):
        export_script(certificate, "m2")


def test_a_script_holds_the_biases_and_the_feed_forward_blocks():
    certificate = _certificate("dimension, biased feed-forward x + x**2, heads, residual, causal")
    script = export_script(certificate, "sage")
    # blocks per head Q, K, V, bQ, bK, bV (indices 0-5 and 6-11), then Win, Wout, bin, bout (12-15)
    assert "layers = [[[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]]" in script
    assert "ffns = [[12, 13, 14, 15]]" in script
    assert "activations = [[1, [0, 1, 1]]]" in script  # a polynomial, s(x) = x + x^2
    script = export_script(certificate, "m2")
    assert "ffns = {{12, 13, 14, 15}};" in script and "activations = {{1, {0, 1, 1}}};" in script


@pytest.mark.parametrize("system", ["sage", "m2"])
def test_no_text_of_the_certificate_reaches_a_script(system):
    # names and expressions are data for the checker, never written into code another system runs
    certificate = _certificate("dimension, softmax, 2 layers")
    marker = "__import__('os').system('echo pwned')"
    for entry in certificate["normalizers"]:
        entry["name"] = marker
        entry["expression"] = marker
    certificate["architecture"]["normalizers"] = [marker, marker]
    script = export_script(certificate, system)
    assert "pwned" not in script and "__import__" not in script
    # nor an activation's name or expression
    certificate = _certificate("spectrum, feed-forward tanh")
    certificate["activations"][0].update(name=marker, expression=marker)
    script = export_script(certificate, system)
    assert "pwned" not in script and "__import__" not in script
