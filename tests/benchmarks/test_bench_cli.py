"""Benchmark 1: the complete certified spectrum through the whole command, in a subprocess.

``symattn spectrum --layers L --json --quiet`` (widths 2, rank 1, 3 tokens,
softmax) with an automatic separating bank, automatic truncation and
confirmation at a second prime.  Wall time includes interpreter start-up and
imports; the ratio column divides by the wall time of ``symattn --version``
measured in the same run (start-up alone).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXPECTED = {
    4: {"0": 4, "1": 3, "5": 3, "17": 3, "53": 3},
    5: {"0": 4, "1": 3, "5": 3, "17": 3, "53": 3, "161": 3},
}


def _command() -> list[str]:
    script = Path(sys.executable).with_name("symattn")
    return [str(script)] if script.exists() else [sys.executable, "-m", "symattn"]


def _wall(args: list[str], timeout: float) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run([*_command(), *args], capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - start, proc


def _startup() -> float:
    times = []
    for _ in range(3):
        seconds, proc = _wall(["--version"], 60)
        assert proc.returncode == 0, proc.stderr
        times.append(seconds)
    return min(times)


def _check(data: dict, layers: int) -> None:
    assert data["spectrum"] == EXPECTED[layers]
    assert data["predicted"] == EXPECTED[layers] and data["matches_prediction"] is True
    assert data["unresolved"] == 0 and data["separating"] is True and data["confirmed"] is True
    assert data["rank"] == 3 * layers + 4 and data["kernel"] == data["params"] - data["rank"]


def test_four_layers_under_two_seconds(table):
    startup = _startup()
    runs = []
    for _ in range(3):
        seconds, proc = _wall(["spectrum", "--layers", "4", "--json", "--quiet"], 60)
        assert proc.returncode == 0, proc.stderr
        _check(json.loads(proc.stdout), 4)
        runs.append(seconds)
    data = json.loads(proc.stdout)
    table("benchmark 1: symattn spectrum --layers 4 --json --quiet (subprocess wall time)",
          ["layers", "max order", "truncation", "bank", "runs (s)", "median (s)", "startup (s)",
           "median/startup", "limit (s)"],
          [[4, 53, data["truncation"], data["bank"], " ".join(f"{t:.2f}" for t in runs),
            f"{statistics.median(runs):.2f}", f"{startup:.2f}", f"{statistics.median(runs) / startup:.1f}x",
            2]])
    assert statistics.median(runs) < 2.0


@pytest.mark.slow
def test_five_layers_under_two_minutes(table):
    startup = _startup()
    four, proc4 = _wall(["spectrum", "--layers", "4", "--json", "--quiet"], 60)
    assert proc4.returncode == 0, proc4.stderr
    seconds, proc = _wall(["spectrum", "--layers", "5", "--json", "--quiet"], 600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    _check(data, 5)
    table("benchmark 1b: symattn spectrum --layers 5 --json --quiet (subprocess wall time)",
          ["layers", "max order", "truncation", "bank", "wall (s)", "startup (s)", "5 layers / 4 layers",
           "limit (s)"],
          [[5, 161, data["truncation"], data["bank"], f"{seconds:.1f}", f"{startup:.2f}",
            f"{seconds / four:.1f}x", 120]])
    assert seconds < 120


def test_short_commands_do_not_load_the_compiled_kernels(table):
    """Whole-process time of a short and a longer spectrum on each engine (fastest of 3).

    Loading numba and the cached kernels costs about 0.35 s; ``SYMATTN_PRODUCTS=auto`` (the
    default) loads them only once the products have done about that much work, so a one-layer
    spectrum keeps the start-up of the BLAS engine and five layers run compiled.
    """
    import os

    rows, fastest = [], {}
    for layers in (1, 4, 5):
        for engine in ("auto", "compiled", "blas"):
            env = {**os.environ, "SYMATTN_PRODUCTS": engine}
            times = []
            for _ in range(3 if layers < 5 else 1):
                start = time.perf_counter()
                proc = subprocess.run([*_command(), "spectrum", "--layers", str(layers), "--json", "--quiet"],
                                      capture_output=True, text=True, timeout=600, env=env)
                times.append(time.perf_counter() - start)
                assert proc.returncode == 0, proc.stderr
            if layers in EXPECTED:
                _check(json.loads(proc.stdout), layers)
            fastest[layers, engine] = min(times)
        rows.append([layers] + [f"{fastest[layers, engine]:.2f}" for engine in ("auto", "compiled", "blas")])
    table("symattn spectrum --layers L --json --quiet, whole process (s) by $SYMATTN_PRODUCTS",
          ["layers", "auto (default)", "compiled", "blas"], rows)
    assert fastest[1, "auto"] < fastest[1, "compiled"]  # a short job does not pay for the kernels
    assert fastest[5, "auto"] < fastest[5, "blas"]  # a long one runs on them
