"""Start-up: whole-process times of the shortest commands, and four layers against a numpy script.

Every figure is a whole process (interpreter start, imports, work, exit),
the median of 5 runs unless said otherwise, measured beside ``python -c
pass`` on the same machine in the same run.  The processes may write their
bytecode caches (``PYTHONDONTWRITEBYTECODE`` is removed from their
environment, as on a usual installation) and one unmeasured run of each
command comes first, so that no figure includes compiling the package's
sources:

- ``symattn --version`` (limit 0.3 s): nothing heavy is imported;
- ``python -c "import symattn"`` (limit 0.4 s);
- ``symattn spectrum --layers 1 --json --quiet`` (limit 0.8 s);
- ``symattn spectrum --layers 4 --json --quiet`` against
  ``numpy_spectrum_baseline.py``, a plain numpy script of forward-mode jets
  over truncated series mod p and a Smith-form elimination, written for this
  benchmark as a researcher would write it (limit: 0.1x).  The script is given
  the bank (12 inputs) and truncation (55) that symattn chooses and does one
  prime; symattn also grows and checks its bank and confirms at a second prime
  and point, so the comparison favours the script.

Measured on the 2-core development machine (December 2026): start-up is met
(``--version`` 0.12-0.16 s, ``import symattn`` 0.04 s, one layer 0.6-0.75 s,
of which sympy and numpy take 0.45-0.6 s to import); the 0.1x at four layers
is not: the script's whole process takes about 0.8-1.1 s, so 0.1x would leave
symattn less time than importing numpy.  At five layers symattn takes about
0.3x of the script's time.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FOUR_LAYERS = {"0": 4, "1": 3, "5": 3, "17": 3, "53": 3}


def _symattn() -> list[str]:
    script = Path(sys.executable).with_name("symattn")
    return [str(script)] if script.exists() else [sys.executable, "-m", "symattn"]


#: The environment of a usual installation: bytecode caches are written and read.
ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _wall(command: list[str], timeout: float = 600) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=ENVIRONMENT)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    return seconds, proc


def _median(command: list[str], runs: int = 5) -> tuple[float, list[float], subprocess.CompletedProcess]:
    _wall(command)  # unmeasured: writes the bytecode caches
    times, proc = [], None
    for _ in range(runs):
        seconds, proc = _wall(command)
        times.append(seconds)
    return statistics.median(times), times, proc


def test_start_up(table):
    python, python_runs, _ = _median([sys.executable, "-c", "pass"])
    version, version_runs, proc = _median([*_symattn(), "--version"])
    assert proc.stdout.startswith("symattn ")
    imported, import_runs, _ = _median([sys.executable, "-c", "import symattn"])
    one_layer, one_runs, proc = _median([*_symattn(), "spectrum", "--layers", "1", "--json", "--quiet"])
    assert json.loads(proc.stdout)["spectrum"] == {"0": 4, "1": 3}
    rows = [
        ["python -c pass", f"{python:.3f}", " ".join(f"{t:.3f}" for t in python_runs), "-"],
        ["symattn --version", f"{version:.3f}", " ".join(f"{t:.3f}" for t in version_runs), 0.3],
        ['python -c "import symattn"', f"{imported:.3f}", " ".join(f"{t:.3f}" for t in import_runs), 0.4],
        ["symattn spectrum --layers 1 --json --quiet", f"{one_layer:.3f}", " ".join(f"{t:.3f}" for t in one_runs),
         0.8],
    ]
    table("start-up: whole process, median of 5 runs (s)", ["command", "median", "runs", "limit"], rows)
    assert version < 0.3
    assert imported < 0.4
    assert one_layer < 0.8


def _against_the_script(layers: int, expected: dict, table) -> float:
    """symattn's whole process over the script's on the bank and truncation symattn chose; the ratio."""
    _wall([*_symattn(), "--version"])  # unmeasured: writes the bytecode caches
    seconds, proc = _wall([*_symattn(), "spectrum", "--layers", str(layers), "--json", "--quiet"])
    data = json.loads(proc.stdout)
    assert data["spectrum"] == expected and data["confirmed"] and data["separating"]
    baseline_seconds, baseline = _wall([sys.executable, str(HERE / "numpy_spectrum_baseline.py"),
                                        "--layers", str(layers), "--width", "2", "--rank", "1", "--tokens", "3",
                                        "--bank", str(data["bank"]), "--order", str(data["truncation"]),
                                        "--seed", "0"], timeout=3600)
    result = json.loads(baseline.stdout.strip().splitlines()[-1])
    assert result["spectrum"] == expected and result["rank"] == data["rank"]  # the same job, the same answer
    ratio = seconds / baseline_seconds
    table(f"symattn spectrum --layers {layers} --json --quiet against a plain numpy script "
          "(whole processes, one run each)",
          ["bank", "truncation", "symattn (s)", "numpy script (s)", "of which its computation (s)", "ratio",
           "target 0.1x"],
          [[data["bank"], data["truncation"], f"{seconds:.2f}", f"{baseline_seconds:.2f}",
            f"{result['seconds']:.2f}", f"{ratio:.3f}x", "met" if ratio < 0.1 else "NOT met"]])
    return ratio


def test_four_layers_against_a_numpy_script(table):
    # The target (0.1x) is reported, not asserted: against this script it cannot be met (see the
    # module's docstring).  Both give the same spectrum and rank, which is asserted.
    _against_the_script(4, FOUR_LAYERS, table)


@pytest.mark.slow
def test_five_layers_against_a_numpy_script(table):
    five = {**FOUR_LAYERS, "161": 3}
    assert _against_the_script(5, five, table) < 0.5
