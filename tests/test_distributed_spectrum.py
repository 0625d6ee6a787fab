"""The spectrum's forward passes over jets, and identify's dimension, on Dask workers.

The rows of the Jacobian series of one bank input depend on that input
alone, so the groups' Jacobians stacked in the bank's order are the whole
bank's Jacobian, entry by entry, whoever computed them: the spectrum on
workers is the single-process spectrum (a ``LocalCluster``; a ``dask
scheduler`` with two ``dask worker`` processes on 127.0.0.1, one of them
killed while it computes a group).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from symattn.curves import collapse, input_scaling
from symattn.errors import SymattnError
from symattn.jacobian import (
    gauge_slice, input_groups, jacobian_series, jacobian_series_in_groups, random_bank, random_point,
)
from symattn.model import Architecture
from symattn.spectrum import decay_spectrum

from dask_processes import dask_cluster, kill_a_worker_mid_run

P = 1048573


def _here_in_reverse(calls):
    """The calls run here, the last first: the parts must land in place whatever their order."""
    return ((call, call[0](*call[1])) for call in reversed(calls))


def _same_spectrum(distributed, alone):
    ours, theirs = distributed.to_json(), alone.to_json()
    ours_method, their_method = ours.pop("method"), theirs.pop("method")
    assert ours == theirs
    assert ours_method.startswith(their_method)
    assert ours_method[len(their_method):].startswith("; the forward passes over jets on ")


@pytest.mark.parametrize("arch", [
    Architecture.uniform(layers=2, width=2, rank=1, tokens=3),
    Architecture.uniform(layers=2, width=3, rank=2, tokens=3, normalizer="cosh", heads=2),
    Architecture.uniform(layers=2, width=2, tokens=3, causal=True, residual=True),
], ids=["softmax", "cosh-heads", "causal-residual"])
@pytest.mark.parametrize("group", [1, 2, 7])
def test_the_jacobian_in_groups_is_the_jacobian_of_the_bank(arch, group):
    point, values = random_point(arch, P, 3)
    bank = random_bank(arch, 7, P, 3)
    whole = jacobian_series(arch, collapse(), bank, point, P, 5, values)
    seen = []
    grouped = jacobian_series_in_groups(arch, collapse(), bank, point, P, 5, values, group=group,
                                        parts=_here_in_reverse, on_inputs=seen.append)
    assert np.array_equal(grouped, whole)
    assert sum(seen) == 7 and len(seen) == len(input_groups(7, group))
    # chosen directions and another curve: the same again
    sliced = jacobian_series(arch, input_scaling(), bank, point, P, 4, values, gauge_slice(arch))
    assert np.array_equal(jacobian_series_in_groups(arch, input_scaling(), bank, point, P, 4, values,
                                                    gauge_slice(arch), group=group, parts=_here_in_reverse), sliced)


def test_bad_scheduler_and_workers_are_refused_before_any_work():
    arch = Architecture.uniform(layers=1, width=2, tokens=2)
    with pytest.raises(SymattnError, match="scheduler must be a Dask scheduler address .* got 'fast'"):
        decay_spectrum(arch, scheduler="fast", progress=False)
    with pytest.raises(SymattnError, match="workers must be a positive integer .* got 0"):
        decay_spectrum(arch, workers=0, progress=False)


def test_a_refusal_for_memory_names_the_workers_when_they_would_fit():
    from symattn.errors import ResourceLimitError
    from symattn.limits import spectrum_memory

    four = Architecture.uniform(layers=4)  # 30 inputs to eps^55: 30 MiB here, 6 MiB with the passes on workers
    assert spectrum_memory(four, 30, 55).bytes > 20 * 2**20 > spectrum_memory(four, 30, 55, where="coordinator", group=1).bytes
    with pytest.raises(ResourceLimitError) as refused:
        decay_spectrum(four, progress=False, max_memory="20M")
    message = str(refused.value)
    assert "over the limit of 20.0 MiB" in message and "--max-memory SIZE" in message
    assert "; or --workers N (workers=) or --scheduler ADDRESS (scheduler=) runs the forward passes" in message
    assert "(about 1.1 MiB each, one input a task)" in message and "Smith forms here (6.3 MiB)" in message
    # nothing would fit 2 MiB: the refusal does not offer the workers
    with pytest.raises(ResourceLimitError) as refused:
        decay_spectrum(four, progress=False, max_memory="2M")
    assert "--workers" not in str(refused.value)


@pytest.mark.parametrize("where", ["here", "coordinator", "worker"])
def test_the_memory_of_a_step_on_workers_is_the_part_each_process_holds(where):
    from symattn.limits import spectrum_memory

    arch = Architecture.uniform(layers=5, width=3, rank=2)
    estimate = spectrum_memory(arch, 40, 163, where=where, group=10)
    rows, params = 3 * 3, arch.param_count
    if where == "worker":
        assert estimate.jacobian == (rows * 10, params) and estimate.bank == 10
    else:
        assert estimate.jacobian == (rows * 40, params) and estimate.bank == 40
    # the coordinator holds at least the whole Jacobian, and less than everything in one process
    jacobian = rows * 40 * params * 163 * 8
    if where == "coordinator":
        assert jacobian < estimate.bytes < spectrum_memory(arch, 40, 163).bytes
    with pytest.raises(SymattnError, match="where must be 'here', 'coordinator' or 'worker', got 'there'"):
        spectrum_memory(arch, 40, 163, where="there")


# -- Dask ----------------------------------------------------------------------------------------------------
def test_a_local_cluster_gives_the_single_process_spectrum_and_identify_report():
    from distributed import Client, LocalCluster

    from symattn.identify import identify

    spectrum_arch = Architecture.uniform(layers=3, width=2, rank=1, tokens=3)
    identify_arch = Architecture.uniform(layers=2, width=3, rank=2, tokens=3)
    alone = decay_spectrum(spectrum_arch, progress=False)
    report_alone = identify(identify_arch)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        distributed = decay_spectrum(spectrum_arch, progress=False, scheduler=client)
        report = identify(identify_arch, scheduler=client)
        # four layers under 20 MiB: refused in one process, computed with the passes on the workers
        four = Architecture.uniform(layers=4)
        limited = decay_spectrum(four, progress=False, scheduler=client, max_memory="20M")
    _same_spectrum(distributed, alone)
    assert distributed.exponents == {0: 4, 1: 3, 5: 3, 17: 3}
    assert "on a Dask LocalCluster of 2 worker processes, about 4 tasks each" in distributed.method
    assert (report.dimension.lower, report.dimension.certified) == (report_alone.dimension.lower, True)
    assert [(o.block, o.order) for o in report.orders] == [(o.block, o.order) for o in report_alone.orders]
    assert "Dask LocalCluster of 2 worker processes" in report.dimension.method
    _same_spectrum(limited, decay_spectrum(four, progress=False))


# a scheduler and two workers in their own processes, one of them killed: about 10 s
def test_a_worker_killed_mid_spectrum_changes_nothing(tmp_path):
    from symattn.cli import main

    arch = Architecture.uniform(layers=4, width=2, rank=1, tokens=3)
    alone = decay_spectrum(arch, progress=False)
    with dask_cluster(tmp_path) as (address, workers, watcher):
        killer, killed = kill_a_worker_mid_run(watcher, workers, settle=0.1, every=0.02)
        distributed = decay_spectrum(arch, progress=False, scheduler=address)
        finished = time.monotonic()
        killer.join(timeout=10)
        assert "at" in killed, f"the run ended before a worker could be killed: {killed.get('error')}"
        assert killed["at"] < finished
        assert len(watcher.scheduler_info()["workers"]) == 1
        _same_spectrum(distributed, alone)
        assert f"of the Dask scheduler at {address}" in distributed.method
        # the command line, through the surviving worker
        status = main(["spectrum", "--layers", "2", "--scheduler", address, "--json", "--quiet"])
        assert status == 0
