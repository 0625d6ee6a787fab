"""Checking a certificate against computing it: HMK's Figure 3 rows, widths 3..10.

For each width (2 layers, 3 tokens, score rank 2, softmax): the time of
:func:`symattn.identify.function_space_dimension` (the certified lower bound,
on each product engine: ``blas`` as a fresh ``symattn dimension`` process
runs this table, ``compiled`` as a long session does), the time to write the
certificate (:func:`symattn.certificates.dimension_certificate`: the
uncompressed Jacobian and the witness search), and the time of
:func:`symattn.verifier.verify` on one BLAS thread (as ``symattn verify``
runs it); the fastest of five interleaved runs each.  Asserted: every
certificate verifies with the certified rank, and verifying all the rows
takes at most as long as computing them on BLAS.

Run with ``python -m pytest -q -s tests/benchmarks/test_bench_certificates.py``.
"""

from __future__ import annotations

import time

import pytest

from symattn.algebra.linalg import one_blas_thread
from symattn.certificates import dimension_certificate
from symattn.identify import function_space_dimension
from symattn.model import Architecture
from symattn.verifier import verify

WIDTHS = tuple(range(3, 11))


def _fastest(run, times: int = 5) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def test_verify_against_compute(table, monkeypatch):
    rows, total = [], {"blas": 0.0, "compiled": 0.0, "verify": 0.0}
    for width in WIDTHS:
        arch = Architecture.uniform(layers=2, width=width, rank=2, tokens=3)
        result = function_space_dimension(arch)
        started = time.perf_counter()
        certificate = dimension_certificate(arch, result=result)
        write = time.perf_counter() - started
        seconds = {}
        for engine in ("blas", "compiled"):
            monkeypatch.setenv("SYMATTN_PRODUCTS", engine)
            seconds[engine] = _fastest(lambda: function_space_dimension(arch))
        monkeypatch.delenv("SYMATTN_PRODUCTS")

        def check():
            with one_blas_thread():
                report = verify(certificate)
            assert report.verified and report.rank == result.lower
        seconds["verify"] = _fastest(check)
        for key in total:
            total[key] += seconds[key]
        rows.append([width, result.lower, f"{seconds['blas']:.3f}", f"{seconds['compiled']:.3f}", f"{write:.3f}",
                     f"{seconds['verify']:.3f}", f"{seconds['verify'] / seconds['blas']:.2f}",
                     f"{seconds['verify'] / seconds['compiled']:.2f}"])
    rows.append(["all", "", f"{total['blas']:.3f}", f"{total['compiled']:.3f}", "", f"{total['verify']:.3f}",
                 f"{total['verify'] / total['blas']:.2f}", f"{total['verify'] / total['compiled']:.2f}"])
    table("HMK Figure 3 rows: verify a certificate against compute the certified rank (s)",
          ["width", "rank", "compute (blas)", "compute (compiled)", "write certificate", "verify",
           "verify/blas", "verify/compiled"], rows)
    assert total["verify"] <= total["blas"]
