"""Depth: the deepest spectrum the package computes, seven layers (contact order 1457), in its own process.

About 2.5 minutes and 2.1 GB on a 2-core machine: a measurement, run with ``pytest tests/benchmarks -s``
(kept out of the README's test command); the times are in README.md, "Depth and width".
"""

import json
import subprocess
import sys
import time

from symattn.model import Architecture


def test_seven_layers_every_block_as_predicted_and_the_memory_estimate_within_one_and_a_half_times(table):
    from symattn.limits import spectrum_memory
    from symattn.spectrum import automatic_bank_size, grown_bank, native_rank_bound

    # its own process, so that its peak resident memory is this computation's alone (Linux: ru_maxrss in KiB)
    script = ("import resource, sys; from symattn.cli import main; "
              "status = main(['spectrum', '--layers', '7', '--json', '--quiet']); "
              "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, file=sys.stderr); sys.exit(status)")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    peak = int(done.stderr.strip().splitlines()[-1])
    contact = {1: 3, 5: 3, 17: 3, 53: 3, 161: 3, 485: 3, 1457: 3}  # 2 * 3^(i-1) - 1, i = 1..7
    assert data["spectrum"] == {str(e): m for e, m in {0: 4, **contact}.items()}
    assert data["predicted"] == data["spectrum"] and data["matches_prediction"] is True
    assert data["blocks"] == {"values": {"0": 4}, **{f"scores:{i}": {str(e): 3} for i, e in
                                                     enumerate(contact, start=1)}}
    assert data["kernel"] == data["predicted_kernel"] == 31 and data["rank"] == 25 and data["params"] == 56
    assert data["unresolved"] == 0 and data["rank_certified"] and data["separating"] and data["confirmed"]
    assert data["truncation"] == 1459
    # the estimate of its one step (no growth: the first bank and truncation), against the measured peak
    arch = Architecture.uniform(layers=7)
    bank = automatic_bank_size(arch, native_rank_bound(arch)[0])
    assert data["bank"] == bank
    estimate = spectrum_memory(arch, bank + grown_bank(bank), 1459).bytes
    assert peak / 1.5 <= estimate <= 1.5 * peak, (estimate / 2**30, peak / 2**30)
    table("seven layers: symattn spectrum --layers 7 (contact order 1457)", ["wall s", "peak GiB", "estimate GiB"],
          [[f"{seconds:.0f}", f"{peak / 2**30:.2f}", f"{estimate / 2**30:.2f}"]])
