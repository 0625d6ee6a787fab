"""Nothing given to ``symattn verify`` hangs it, exhausts memory or ends in anything but 0, 1 or 2 and one line.

Exit status: 0 verified, 1 NOT verified, 2 bad input (not a regular file,
not UTF-8, not JSON, not an object, too large to check within the limits).
Every run is timed: a hang regression fails on a generous bound (10 s) on
any machine, never on a tight one.
"""

from __future__ import annotations

import copy
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from symattn.certificates import claims_certificate, dimension_certificate
from symattn.cli import main
from symattn.model import Architecture
from symattn.verifier import CertificateError, verify
from symattn.verifier.check import CertificateTooLarge
from symattn.verifier.claims import claims_claim
from symattn.verifier.limits import MAX_CERTIFICATE_BYTES


@pytest.fixture(scope="module")
def valid():
    return dimension_certificate(Architecture.uniform(layers=1, width=2, tokens=2, normalizer="cosh"))


def _run(path, capsys, *flags):
    started = time.monotonic()
    status = main(["verify", str(path), *flags])
    seconds = time.monotonic() - started
    captured = capsys.readouterr()
    assert status in (0, 1, 2), status
    assert seconds < 10, f"verify took {seconds:.1f} s"
    if status == 2:
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and len(lines[0]) < 1000, captured.err[:2000]
        assert captured.out == ""
        return status, lines[0]
    first = captured.out.splitlines()[0]
    assert first.startswith("verified: " if status == 0 else "NOT verified: ") and len(first) < 1000
    return status, first


# -- file kinds ----------------------------------------------------------------------------------------------
def test_only_regular_files_are_read(tmp_path, capsys, valid):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    os.symlink("/dev/zero", tmp_path / "zero")
    for name, kind in (("fifo", "a FIFO"), ("folder", "a directory"), ("zero", "a character device")):
        status, line = _run(tmp_path / name, capsys)
        assert status == 2 and line.endswith(f"is {kind}, not a regular file"), line
    status, line = _run("/dev/null", capsys)
    assert status == 2 and line.endswith("is a character device, not a regular file")
    status, line = _run(tmp_path / "missing.json", capsys)
    assert status == 2 and "No such file or directory" in line


def test_a_file_whose_name_starts_with_a_bracket_is_a_file(tmp_path, capsys, valid, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("[x].json", "{x}.json"):
        (tmp_path / name).write_text(json.dumps(valid), encoding="utf-8")
        assert _run(name, capsys)[0] == 0


def test_a_file_larger_than_a_certificate_is_refused_before_reading(tmp_path, capsys):
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as handle:
        handle.truncate(MAX_CERTIFICATE_BYTES + 1)
    status, line = _run(sparse, capsys)
    assert status == 2 and line.endswith("more than the 256.0 MiB a certificate may have here")
    # a small memory limit lowers the size read: a 20 KB file within 100 KB of memory is refused
    small = tmp_path / "small.json"
    small.write_text("[" + "0, " * 10000 + "0]", encoding="utf-8")
    status, line = _run(small, capsys, "--max-memory", "100K")
    assert status == 2 and "a certificate may have here" in line


# -- what the text holds -------------------------------------------------------------------------------------
TEXTS = st.one_of(
    st.binary(max_size=200),                                                     # anything, UTF-8 or not
    st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n),                     # nesting
    st.integers(1, 1500).map(lambda n: b'{"a": ' * n + b"1" + b"}" * n),
    st.integers(1, 6000).map(lambda n: b'{"version": ' + b"9" * n + b"}"),       # huge integers
    st.sampled_from([b"null", b"[]", b"{}", b"1e999", b"NaN", b'"text"', b"true", b"\xef\xbb\xbf{}", b"",
                     b'{"schema": "symattn-certificate", "version": true}',
                     b'{"schema": "symattn-certificate", "version": 1, "kind": "claims", "claims": '
                     b'[{"quantity": {"a": 1}}]}',
                     b'{"schema": "symattn-certificate", "version": 1, "kind": "claims", "claims": '
                     b'[{"quantity": [1]}]}']),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_any_text_ends_in_0_1_or_2_with_one_line(tmp_path, capsys, text):
    path = tmp_path / "input.json"
    path.write_bytes(text)
    _run(path, capsys)


HEADER = {
    "truncation": st.sampled_from([0, 1, 10 ** 5, 10 ** 5 + 1, 2 ** 70, True, "3", None]),
    "prime": st.sampled_from([2, 3, 2 ** 31 - 1, 2 ** 31, 2 ** 61 - 1, 10 ** 40, -5, 1.5]),
    "tokens": st.sampled_from([1, 2, 300, 10 ** 4, 10 ** 4 + 1, 10 ** 9, 0]),
    "widths": st.sampled_from([[2, 2], [10 ** 4, 10 ** 4], [1], [2, 2, 2], [[2], 2], []]),
    "heads": st.sampled_from([[1], [1000], [2], [0]]),
    "bank": st.sampled_from([[], 0, [[[1, 2], [3, 4]]] * 2000]),
    "taylor": st.sampled_from([["1"] * 10 ** 5, ["1"], ["1", "0", "1/2", "0", "1/" + "9" * 3000]]),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_header_ends_in_0_1_or_2_with_one_line(tmp_path, capsys, valid, data):
    document = copy.deepcopy(valid)
    for field in data.draw(st.lists(st.sampled_from(sorted(HEADER)), min_size=1, max_size=3, unique=True)):
        value = data.draw(HEADER[field], label=field)
        if field in ("tokens", "widths", "heads"):
            document["architecture"][field] = value
        elif field == "taylor":
            document["normalizers"][0]["taylor"] = value
        else:
            document[field] = value
    path = tmp_path / "input.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    _run(path, capsys)


# -- the work and memory, from the header --------------------------------------------------------------------
def test_work_and_memory_are_refused_from_the_header(valid):
    deep = copy.deepcopy(valid)
    deep["truncation"] = 10 ** 5
    with pytest.raises(CertificateTooLarge, match=r"^checking this certificate takes about \de\+1\d multiply-adds "
                                                  r"\(its largest array \(5, 2, 2, 8, 100000\)\)"):
        verify(deep)
    wide = copy.deepcopy(valid)
    wide["architecture"]["tokens"] = 10 ** 4
    with pytest.raises(CertificateTooLarge, match=r"needs about .* of memory \(its largest array \(\d+, 10000, "
                                                  r"10000, "):
        verify(wide)
    # the limits are the caller's: a small certificate within them, and refused below them
    assert verify(valid, max_operations=10 ** 9).verified
    with pytest.raises(CertificateTooLarge, match="over the limit of 1e\\+02; --max-operations N raises the limit"):
        verify(valid, max_operations=100)
    with pytest.raises(CertificateTooLarge, match="over the limit of 1000 B; --max-memory SIZE"):
        verify(valid, max_memory=1000)


def test_many_taylor_coefficients_are_not_read_past_the_truncation(valid):
    many = copy.deepcopy(valid)
    many["normalizers"][0]["taylor"] = many["normalizers"][0]["taylor"] + ["1"] * 10 ** 6
    started = time.monotonic()
    assert verify(many).verified
    assert time.monotonic() - started < 10


def test_a_formula_too_large_to_evaluate_is_refused():
    certificate = claims_certificate(Architecture.uniform(layers=1, width=2, tokens=2), ["F_1 = 0"])
    certificate["architecture"]["tokens"] = 300
    certificate["claims"][0]["formula"] = {"multiply": [{"matrix": "P"}, {"matrix": "X"},
                                                        {"power": [{"matrix": "H"}, 100]}]}
    certificate["claim"] = claims_claim(certificate["claims"])
    with pytest.raises(CertificateTooLarge, match=r"claims\[0\]\.formula: evaluating the formula takes about "
                                                  r"3e\+09 multiply-adds, over the checker's limit of 2e\+07"):
        verify(certificate)


def test_not_an_object_is_a_certificate_error():
    for text, words in (("[]", "a JSON array"), ("[1]", "a JSON array")):
        with pytest.raises(CertificateError, match=f"^the certificate is {words}, not an object$"):
            verify(text)


def test_a_report_prints_a_bounded_text():
    from symattn.verifier.check import MAX_ITEMS, VerificationReport

    report = VerificationReport(True, "x" * 10 ** 6, tuple(f"check {n} " + "y" * 5000 for n in range(1000)),
                                unchecked=tuple(f"word {n}" for n in range(500)))
    text = str(report)
    assert len(text.splitlines()) == 1 + 1 + (MAX_ITEMS + 1) + 1 + (MAX_ITEMS + 1)
    assert len(text) <= 20_000
    assert "  ... 940 more (all of them in to_json())" in text and "  - check 999 " in text
    assert len(report.to_json()["checked"]) == 1000


def test_a_bundle_exports_one_part_chosen_by_part(tmp_path, capsys):
    from symattn.certificates import write_identify_certificate

    path = tmp_path / "identify.json"
    write_identify_certificate(Architecture.uniform(layers=1, width=2, tokens=2), path)
    assert main(["verify", str(path), "--export", "sage"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"symattn: error: {path}: an identify bundle is exported one part at a time: give --part N (its parts: "
        "0: dimension lower bound, 1: identification orders)")
    assert main(["verify", str(path), "--export", "m2", "--part", "0"]) == 0
    script = (tmp_path / "identify.m2").read_text(encoding="utf-8")
    assert "p = " in script and "dimension lower bound: rank >= 7" in script
    capsys.readouterr()
    assert main(["verify", str(path), "--export", "m2", "--part", "1"]) == 2
    assert capsys.readouterr().err.strip().endswith("--part 1 is of kind 'identification orders': the exports cover "
                                                    "dimension and spectrum certificates")
    assert main(["verify", str(path), "--export", "m2", "--part", "5"]) == 2
    assert capsys.readouterr().err.strip().endswith("--part 5: the bundle has parts 0 .. 1")
    assert main(["verify", str(path), "--part", "0"]) == 2
    assert "--part 0 picks the part of a bundle that --export writes" in capsys.readouterr().err
