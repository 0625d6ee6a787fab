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

from configurations import CONFIGURATIONS, exact_part  # noqa: E402
from record import run  # noqa: E402


def test_every_configuration_has_a_fixture():
    names = {name for name, _ in CONFIGURATIONS}
    recorded = {path.stem for path in (REGRESSION / "fixtures").glob("*.json")}
    assert names == recorded
    assert len(names) >= 30


@pytest.mark.parametrize("engine", ["blas", "compiled"])
@pytest.mark.parametrize("name, argv", CONFIGURATIONS, ids=[name for name, _ in CONFIGURATIONS])
def test_exact_results_unchanged(name, argv, engine, monkeypatch):
    # every product on one engine: float64 BLAS, or the compiled kernels
    monkeypatch.setenv("SYMATTN_PRODUCTS", engine)
    recorded = json.loads((REGRESSION / "fixtures" / f"{name}.json").read_text(encoding="utf-8"))
    assert recorded["argv"] == argv
    # through JSON once more, so that both sides have string keys and lists
    computed = json.loads(json.dumps(run(argv)))
    assert exact_part(computed) == exact_part(recorded["output"])
