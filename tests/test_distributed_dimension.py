"""The certified dimension built group by group, and spread over Dask workers.

``R J = sum_g R_g J_g``: the row-compressed Jacobian series is the same
whatever the grouping of the bank's inputs (exactly, entry by entry), its
memory is the accumulator and one group, and the groups computed by Dask
workers (a ``LocalCluster``; a ``dask scheduler`` with two ``dask worker``
processes on 127.0.0.1, one of them killed while it computes a group) give
the single-process answer.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

from symattn.curves import collapse
from symattn.errors import ResourceLimitError, SymattnError
from symattn.identify import dimension_table, function_space_dimension
from symattn.identify.common import (
    _dimension_memory, compressed_jacobian, compressed_rows, dimension_group, input_groups, series_rank,
)
from symattn.jacobian import gauge_slice, jacobian_series, random_bank, random_point
from symattn.model import Architecture

from dask_processes import dask_cluster, kill_a_worker_mid_run

P = 1048573


def _without_groups(method: str) -> str:
    """The method text less the sentence on groups and workers."""
    return re.sub(r"; R J summed from [^;]*", "", method)


def _same_result(distributed, alone):
    assert (distributed.lower, distributed.upper, distributed.certified, distributed.exponents, distributed.bank,
            distributed.truncation, distributed.seed) == (alone.lower, alone.upper, alone.certified, alone.exponents,
                                                          alone.bank, alone.truncation, alone.seed)
    assert _without_groups(distributed.method) == _without_groups(alone.method)


# -- chunked == unchunked --------------------------------------------------------------------------------
@pytest.mark.parametrize("normalizer, curve", [("softmax", collapse()), ("lightning", None), ("cosh", collapse())])
def test_the_compressed_jacobian_is_the_same_for_every_grouping(normalizer, curve):
    arch = Architecture.uniform(layers=2, width=3, rank=2, tokens=3, normalizer=normalizer)
    point, values = random_point(arch, P, 5)
    bank = random_bank(arch, 7, P, 5)
    directions = gauge_slice(arch)
    N = 1 if curve is None else 6
    results = {group: compressed_jacobian(arch, curve, bank, point, P, N, values, directions, 5, group=group)
               for group in (1, 3, 7)}
    assert results[1].shape == (directions[1] + 2, directions[1], N)
    for group in (3, 7):
        assert np.array_equal(results[group], results[1]), group
    # tasks of 4 inputs, each summing its own groups of 2 (as on a Dask worker): the same again
    tasks = compressed_jacobian(arch, curve, bank, point, P, N, values, directions, 5, group=2, task_inputs=4)
    assert np.array_equal(tasks, results[1])
    ranks = {group: series_rank(M, P) for group, M in results.items()}
    assert ranks[1] == ranks[3] == ranks[7]
    # a compression of the one Jacobian of the whole bank: the same Smith exponents here (a rank can only drop)
    from symattn.identify.common import _POINT

    J = jacobian_series(arch, _POINT if curve is None else curve, bank, point, P, N, values, directions)
    assert series_rank(J, P) == ranks[1]


def test_groups_cover_the_bank_in_order():
    assert input_groups(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert input_groups(3, 3) == input_groups(3, 10) == [(0, 3)]
    with pytest.raises(SymattnError, match="inputs per group must be a positive integer, got 0"):
        input_groups(3, 0)


@pytest.mark.parametrize("per", [1, 2, 5])
def test_the_dimension_is_the_same_for_every_group_size(per):
    arch = Architecture.uniform(layers=2, width=4, rank=2, tokens=3)
    alone = function_space_dimension(arch)
    grouped = function_space_dimension(arch, inputs_per_task=per)
    _same_result(grouped, alone)
    pieces = len(input_groups(grouped.bank, per))
    assert f"R J summed from {pieces} groups of at most {per} inputs" in grouped.method


def test_a_smaller_limit_takes_smaller_groups_and_the_same_answer():
    # under 8 MiB the 29 inputs to eps^6 are cut into groups (less work than the narrow 9 inputs to eps^12)
    arch = Architecture.uniform(layers=2, width=8, rank=2, tokens=4)
    alone = function_space_dimension(arch, route="curve")
    small = function_space_dimension(arch, max_memory="8M", route="curve")
    _same_result(small, alone)
    assert re.search(r"R J summed from \d+ groups of at most \d+ inputs, to fit in memory", small.method)


def test_group_size_follows_the_memory_limit():
    from symattn.limits import memory_limit_set

    arch = Architecture.uniform(layers=2, width=8, rank=2, tokens=4)
    directions = gauge_slice(arch)
    with memory_limit_set("1G"):
        assert dimension_group(arch, 29, 6, directions) == dimension_group(arch, 29, 6, directions, where="worker") == 29
    with memory_limit_set("6M"):
        assert 1 <= dimension_group(arch, 29, 6, directions) < 29
    assert dimension_group(arch, 29, 6, directions, inputs_per_task=100) == 29
    assert compressed_rows(arch, 29, directions[1]) == directions[1] + 2


def test_a_refusal_names_the_workers_and_the_limit(capsys):
    # 32 tokens: one input's forward pass (about 2.9 MiB on the integer-score route, 8.6 MiB on the curve
    # route) outweighs R J and its Smith form (0.1 MiB, 0.4 MiB)
    from symattn.cli import main

    arch = Architecture.uniform(layers=2, width=4, rank=2, tokens=32)
    assert _dimension_memory(arch, None, "coordinator").bytes < 2**20 < 2 * 2**20 < _dimension_memory(arch).bytes
    with pytest.raises(ResourceLimitError, match="--workers N"):
        function_space_dimension(arch, max_memory="4M", route="curve")
    with pytest.raises(ResourceLimitError) as error:
        function_space_dimension(arch, max_memory="2M")
    text = str(error.value)
    assert "--workers N" in text and "--scheduler ADDRESS" in text and "--max-memory" in text, text
    assert "the bank is already taken one input at a time" in text
    status = main(["dimension", "--layers", "2", "--width", "4", "--rank", "2", "--tokens", "32",
                   "--max-memory", "2M", "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and "--workers N" in err and err.count("\n") == 1, err


def test_bad_scheduler_and_workers_are_clear_errors():
    arch = Architecture.uniform(layers=1, width=2, tokens=2)
    with pytest.raises(SymattnError, match="scheduler must be a Dask scheduler address .* got 'fast'"):
        function_space_dimension(arch, scheduler="fast")
    with pytest.raises(SymattnError, match="workers must be a positive integer .* got 0"):
        function_space_dimension(arch, workers=0)
    with pytest.raises(SymattnError, match="inputs_per_task must be a positive integer .* got -1"):
        function_space_dimension(arch, inputs_per_task=-1)


# -- Dask ----------------------------------------------------------------------------------------------------
def test_a_local_cluster_gives_the_single_process_answer():
    arch = Architecture.uniform(layers=2, width=4, rank=2, tokens=3)
    alone = function_space_dimension(arch)
    distributed = function_space_dimension(arch, workers=2)
    _same_result(distributed, alone)
    # 5 inputs (the integer-score route): two tasks per worker of at most 2 inputs each
    assert "R J summed from 3 tasks of at most 2 inputs, computed by a Dask LocalCluster of 2 worker processes" \
        in distributed.method
    curve = function_space_dimension(arch, workers=2, route="curve")  # 13 inputs: 4 tasks of at most 4
    _same_result(curve, function_space_dimension(arch, route="curve"))
    assert "R J summed from 4 tasks of at most 4 inputs" in curve.method
    table = dimension_table(widths=[3, 4], rank=2, workers=2)
    assert [(r.lower, r.certified) for r in table.rows] == [(25, True), (40, True)]
    assert all("Dask LocalCluster of 2 worker processes" in r.method for r in table.results)


# a scheduler and two workers in their own processes, one of them killed: about 7 s
def test_a_worker_killed_mid_run_changes_nothing(tmp_path):
    from symattn.cli import main

    arch = Architecture.uniform(layers=2, width=8, rank=2, tokens=4)
    # the curve route: its tasks last long enough to kill a worker among them (the integer-score route's
    # seven tasks may all be done first)
    alone = function_space_dimension(arch, route="curve")
    with dask_cluster(tmp_path) as (address, workers, watcher):
        killer, killed = kill_a_worker_mid_run(watcher, workers, settle=0.3)
        # one input a group: 29 tasks of about 0.2 s, one of them lost with its worker and run again
        distributed = function_space_dimension(arch, scheduler=address, inputs_per_task=1, route="curve")
        finished = time.monotonic()
        killer.join(timeout=10)
        assert "at" in killed, f"the run ended before a worker could be killed: {killed.get('error')}"
        assert killed["at"] < finished  # killed mid-run: its task (and any queued on it) ran on the other
        assert len(watcher.scheduler_info()["workers"]) == 1
        _same_result(distributed, alone)
        assert f"R J summed from {alone.bank} tasks of at most 1 inputs, computed by" in distributed.method
        assert f"of the Dask scheduler at {address}" in distributed.method
        # the command line: the same table through the surviving worker
        status = main(["dimension", "--layers", "2", "--width", "8", "--rank", "2", "--tokens", "4",
                       "--scheduler", address, "--json", "--quiet"])
        assert status == 0
