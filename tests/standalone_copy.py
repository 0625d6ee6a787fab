"""The checker as a standalone copy: ``symattn/verifier`` copied under another name and run in a fresh
interpreter where any import of symattn fails (the certificates' promise that the checker shares no code
with the engine)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

VERIFIER = Path(__file__).resolve().parents[1] / "symattn" / "verifier"


def verify_as_standalone_copy(tmp_path: Path, certificate: Path) -> dict:
    """Verify ``certificate`` with a copy of the checker that cannot import symattn.

    Returns the report's ``verified``, ``problem``, ``checked`` and ``valuations``, and ``modules``: the
    ``symattn`` modules in the interpreter afterwards (only the blocked name itself).
    """
    shutil.copytree(VERIFIER, tmp_path / "standalone_checker", ignore=shutil.ignore_patterns("__pycache__"))
    probe = ("import json, sys\n"
             f"sys.path.insert(0, {str(tmp_path)!r})\n"
             "sys.modules['symattn'] = None  # any import of symattn fails\n"
             "import standalone_checker\n"
             f"report = standalone_checker.verify({str(certificate)!r})\n"
             "print(json.dumps({'verified': report.verified, 'problem': report.problem,\n"
             "                  'checked': list(report.checked), 'valuations': list(report.valuations or []),\n"
             "                  'modules': sorted(m for m in sys.modules if m.startswith('symattn'))}))\n")
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
