"""The command line answers at once: no heavy library loads before a command needs it.

Start-up is checked by what a fresh interpreter has imported, not by a clock
(timings are in ``tests/benchmarks/test_bench_startup.py``): ``import symattn``,
``symattn --version``, ``--help`` and usage errors load none of sympy, numpy,
networkx, matplotlib, dask, pandas or numba; each subcommand loads only what
it uses.
"""

import json
import subprocess
import sys

import pytest

#: The libraries that cost start-up time (sympy alone about 0.3 s).
HEAVY = ("sympy", "numpy", "mpmath", "networkx", "matplotlib", "dask", "distributed", "pandas", "pyarrow",
         "numba", "symengine", "flint", "scipy", "tqdm")

_PROBE = """
import contextlib, io, json, sys
argv = json.loads(sys.argv[1])
status = None
if argv is not None:
    from symattn.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
else:
    import symattn
print(json.dumps({"status": status, "loaded": sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)}))
"""


def _loaded(argv):
    """(exit status, heavy modules loaded) of ``symattn ARGV`` (None: ``import symattn``) in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argv), json.dumps(HEAVY)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["status"], result["loaded"]


@pytest.mark.parametrize("argv, status", [
    (None, None),
    (["--version"], 0),
    (["--help"], 0),
    (["spectrum", "--help"], 0),
    (["sweep", "--help"], 0),
    (["spectrum", "--tokens", "three"], 2),                       # argparse: not an integer
    (["spectrum", "--layers", "3", "--widths", "2,3,2"], 2),      # flags that disagree
    (["spectrum", "--layers", "100000"], 2),                      # past the structural bound
    (["report", "--standalone"], 2),
])
def test_nothing_heavy_before_a_command_runs(argv, status):
    assert _loaded(argv) == (status, [])


@pytest.mark.parametrize("argv, allowed", [
    # the exact spectrum: sympy for the normalizer's Taylor data, numpy for the series; no graph, plot,
    # cluster or compiled kernels (auto loads them only after much work)
    (["spectrum", "--layers", "1", "--width", "1", "--tokens", "2", "--json", "--quiet"],
     {"sympy", "mpmath", "numpy"}),
    (["check", "--layers", "1", "--width", "1", "--tokens", "2", "--claim", "kernel = 1", "--quiet"],
     {"sympy", "mpmath", "numpy", "flint"}),
    (["observe", "--layers", "1", "--width", "1", "--tokens", "2", "--collapse", "values:1", "--quiet"],
     {"sympy", "mpmath", "numpy", "flint", "networkx"}),
])
def test_a_subcommand_loads_what_it_uses(argv, allowed):
    status, loaded = _loaded(argv)
    assert status == 0
    assert set(loaded) <= allowed, set(loaded) - allowed
    assert "sympy" in loaded and "numpy" in loaded  # the probe sees what a command loads


def test_the_public_names_still_resolve():
    import symattn

    assert symattn.Architecture.uniform(layers=2).param_count == 16
    assert symattn.Normalizer.preset("cosh").k == 2
    assert callable(symattn.forward) and callable(symattn.closed_form)
    assert {"Architecture", "Normalizer", "forward", "closed_form", "decay_spectrum"} <= set(dir(symattn))
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        symattn.nonsense  # noqa: B018
