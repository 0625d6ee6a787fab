"""Record the regression fixtures: ``python tests/regression/record.py [NAME ...]``.

Run it only when a change of an exact result is intended and explained in
the CHANGELOG; the fixtures are the record of what the engine computed, and
they hold its exact part only (``configurations.exact_part``): no float, no
float64 measurement, no time, prime or seed.
"""

import contextlib
import io
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from configurations import CONFIGURATIONS, exact_part  # noqa: E402

from symattn.cli import main  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def run(argv):
    """The JSON output of one command line."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([*argv, "--json", "--quiet"])
    if status != 0:
        raise SystemExit(f"symattn {' '.join(argv)} exited with {status}")
    return json.loads(out.getvalue())


if __name__ == "__main__":
    wanted = set(sys.argv[1:])
    FIXTURES.mkdir(exist_ok=True)
    for name, argv in CONFIGURATIONS:
        if wanted and name not in wanted:
            continue
        start = time.perf_counter()
        data = {"argv": argv, "output": exact_part(run(argv))}  # what is exact, nothing else
        (FIXTURES / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
