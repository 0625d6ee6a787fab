"""What the benchmarks share: the fastest of repeated runs, and plain sympy baselines in a subprocess.

:func:`run_baseline` runs a baseline script of this folder, stopped after a
timeout.  The baselines print one JSON object per line: progress lines
(``{"stage": ..., "done": ..., "total": ...}``) while they work and a final
result line, so a baseline stopped at its timeout still says how far it got.
They run with ``SYMPY_GROUND_TYPES=python``: with python-flint installed
sympy picks flint ground types, and ``sympy.series`` on two-layer entries
then kills the interpreter with SIGFPE inside ``heugcd``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_baseline(script: str, args: list[str], timeout: float, result_key: str) -> dict:
    """Run ``script`` (a file of this folder) with ``args`` for at most ``timeout`` seconds.

    Returns ``seconds`` (wall time), ``timed_out``, ``returncode``, ``stderr``,
    ``result`` (the last line holding ``result_key``, or None) and the last
    progress line's ``done`` and ``total``.
    """
    env = dict(os.environ, SYMPY_GROUND_TYPES="python")
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(HERE / script), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()  # the child this benchmark started
        out, err = proc.communicate()
        timed_out = True
    seconds = time.perf_counter() - start
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    progress = [line for line in lines if line.get("stage") == "series"]
    return {
        "seconds": seconds, "timed_out": timed_out, "returncode": proc.returncode, "stderr": err,
        "result": next((line for line in lines if result_key in line), None),
        "done": progress[-1]["done"] if progress else 0, "total": progress[-1]["total"] if progress else None,
    }


def best_of(function, repeats: int) -> tuple[float, object]:
    """``(fastest wall time of repeats calls, the last result)``."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


_MEASURE = """
import json, resource, sys, time
sys.path.insert(0, {folder!r})
{setup}
started = time.perf_counter()
{body}
seconds = time.perf_counter() - started
try:  # the high-water mark of this process's own memory (ru_maxrss also counts the forking parent's)
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) * 1024
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
print(json.dumps({{"seconds": seconds, "peak_bytes": peak, "result": result}}))
"""


def measure_in_a_process(setup: str, body: str, environment: dict | None = None,
                         timeout: float = 1800) -> dict:
    """Run ``setup`` (imports, not timed), then ``body`` (timed; it sets ``result``) in a fresh interpreter.

    Returns its seconds, its peak resident memory and its result.  ``environment``: variables
    added to the child's environment.
    """
    code = _MEASURE.format(folder=str(HERE), setup=setup, body=body)
    env = None if environment is None else {**os.environ, **environment}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
