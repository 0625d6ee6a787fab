"""Every exact result on the regression grid is what it was when the fixtures were recorded.

The grid and the list of keys that only say *how* a result was obtained are
in ``tests/regression/configurations.py``; ``tests/regression/record.py``
records the fixtures.  A difference here is a change of a computed result:
either a bug, or an intended change to record again and explain in the
CHANGELOG.
"""

import json
import sys
from pathlib import Path

import pytest

REGRESSION = Path(__file__).resolve().parent / "regression"
sys.path.insert(0, str(REGRESSION))

from configurations import CONFIGURATIONS, MACHINE_DEPENDENT_PREFIX, VOLATILE_KEYS, exact_part  # noqa: E402
from record import run  # noqa: E402

#: run again by .ci/run under another OpenBLAS kernel: the fixtures must hold on any machine
pytestmark = pytest.mark.blas


def test_every_configuration_has_a_fixture():
    names = {name for name, _ in CONFIGURATIONS}
    recorded = {path.stem for path in (REGRESSION / "fixtures").glob("*.json")}
    assert names == recorded
    assert len(names) >= 30


def _keys_and_leaves(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, item
            yield from _keys_and_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield None, item
            yield from _keys_and_leaves(item)


@pytest.mark.parametrize("name", sorted(name for name, _ in CONFIGURATIONS))
def test_fixtures_hold_exact_values_only(name):
    """No float, no float64 measurement and no volatile key is recorded: a fixture passes on any machine."""
    recorded = json.loads((REGRESSION / "fixtures" / f"{name}.json").read_text(encoding="utf-8"))
    for key, leaf in _keys_and_leaves(recorded["output"]):
        assert not isinstance(leaf, float), (name, key, leaf)
        assert key is None or (key not in VOLATILE_KEYS and not key.startswith(MACHINE_DEPENDENT_PREFIX)), (name, key)
    assert exact_part(recorded["output"]) == recorded["output"]


def test_exact_part_drops_measurements():
    result = {"rank": 7, "float64_rank_estimate": 7, "slopes": [0.99], "eps": [0.1, 0.01],
              "spectrum": {"0": 4, "1": 3}, "mpmath_ranks": [7, 7], "seconds": 1.5, "rows": [{"ratio": 0.5, "n": 2}]}
    assert exact_part(result) == {"rank": 7, "eps": [], "spectrum": {"0": 4, "1": 3}, "mpmath_ranks": [7, 7],
                                  "rows": [{"n": 2}]}


# both engines in the whole suite; the fast tier checks the grid on BLAS (the engine of short commands)
@pytest.mark.parametrize("engine", ["blas", pytest.param("compiled", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name, argv", CONFIGURATIONS, ids=[name for name, _ in CONFIGURATIONS])
def test_exact_results_unchanged(name, argv, engine, monkeypatch):
    # every product on one engine: float64 BLAS, or the compiled kernels
    monkeypatch.setenv("SYMATTN_PRODUCTS", engine)
    recorded = json.loads((REGRESSION / "fixtures" / f"{name}.json").read_text(encoding="utf-8"))
    assert recorded["argv"] == argv
    # through JSON once more, so that both sides have string keys and lists
    computed = json.loads(json.dumps(run(argv)))
    assert exact_part(computed) == exact_part(recorded["output"])
