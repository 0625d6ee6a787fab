"""Benchmark 2: the exact engine against a plain sympy baseline, side by side in one run.

The baseline (``sympy_baseline.py``, nothing from symattn) builds the closed
form with symbolic native parameters, differentiates every output entry in
every parameter, substitutes ``Q = eps Qt, K = eps Kt, V = Vt`` at random
rationals, expands with ``sympy.series`` up to ``O(eps^order)`` and reads the
valuations from ranks of block Toeplitz matrices of the coefficients.  It runs
in a subprocess with a timeout (``SYMATTN_BENCH_TIMEOUT``, default 300 s); on
a timeout the ratio reported is a lower bound (timeout / exact time) and the
progress it made is shown.

The baseline runs with ``SYMPY_GROUND_TYPES=python``: with python-flint
installed (a symattn dependency) sympy picks flint ground types, and
``sympy.series`` on the two-layer entries then kills the interpreter with
SIGFPE inside ``heugcd``.

The exact side is timed twice: the whole certified ``decay_spectrum`` (auto
bank, separation check against a larger bank, confirmation at a second
prime), and one ``spectrum_at`` at the baseline's bank size and order (the
same job as the baseline).  Ratios are baseline / exact.
"""

from __future__ import annotations

import os

from symattn.curves import collapse
from symattn.model import Architecture
from symattn.spectrum import DEFAULT_PRIMES, decay_spectrum, random_bank, spectrum_at

from harness import best_of, run_baseline

TIMEOUT = float(os.environ.get("SYMATTN_BENCH_TIMEOUT", "300"))


def _run_baseline(layers: int, bank: int, order: int, timeout: float) -> dict:
    return run_baseline("sympy_baseline.py", ["--layers", str(layers), "--bank", str(bank), "--order", str(order)],
                        timeout, "exponents")


def _compare(layers: int, order: int, table) -> None:
    arch = Architecture.uniform(layers=layers, width=2, rank=1, tokens=3, normalizer="softmax")
    certified_seconds, certified = best_of(lambda: decay_spectrum(arch, progress=False), 5)
    assert certified.separating and certified.unresolved == 0
    assert max(certified.exponents) < order
    p = DEFAULT_PRIMES[0]
    bank = random_bank(arch, certified.bank, p, 0)
    single_seconds, single = best_of(lambda: spectrum_at(arch, collapse(), bank, p, 0, order), 5)
    assert single.exponents == certified.exponents

    baseline = _run_baseline(layers, certified.bank, order, TIMEOUT)
    if baseline["result"] is not None:
        found = {int(e): m for e, m in baseline["result"]["exponents"].items()}
        assert found == certified.exponents, found
        assert baseline["result"]["rank"] == certified.rank
        status = f"finished: {found}"
        bound = ""
    elif baseline["timed_out"]:
        status = f"timed out after {TIMEOUT:.0f} s ({baseline['done']} of {baseline['total']} series)"
        bound = ">= "
    else:
        raise AssertionError(f"baseline failed with status {baseline['returncode']}: {baseline['stderr'][-2000:]}")
    seconds = baseline["seconds"]
    rows = [[layers, certified.bank, order, f"{certified_seconds:.4f}", f"{single_seconds:.4f}",
             f"{bound}{seconds:.1f}", f"{bound}{seconds / certified_seconds:,.0f}x",
             f"{bound}{seconds / single_seconds:,.0f}x", status]]
    table(f"benchmark 2: plain sympy baseline vs exact engine, {layers} layer(s) (exact spectrum "
          f"{certified.exponents})",
          ["layers", "bank", "order", "certified (s)", "spectrum_at (s)", "sympy (s)",
           "sympy/certified", "sympy/spectrum_at", "baseline"], rows)
    assert seconds / certified_seconds >= 100


def test_sympy_baseline_one_layer(table):
    # small enough for the baseline to finish: its exponents are compared with the engine's
    _compare(layers=1, order=2, table=table)


def test_sympy_baseline_two_layers(table):
    _compare(layers=2, order=6, table=table)
