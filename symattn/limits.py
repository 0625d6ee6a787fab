"""Limits before work, and progress while it runs.

Every certifying computation of symattn pushes first-order jets of truncated
power series through the forward pass: an element of a ``rows x cols``
matrix is an int64 array of shape ``(batch, 1 + directions, N)`` (the bank,
the value and one derivative per parameter, the coefficients of ``eps^0 ..
eps^(N-1)``; see :mod:`symattn.algebra.modseries`).  The memory a
computation needs therefore follows from the architecture, the bank and the
truncation before anything is allocated.  This module

* estimates that peak (:func:`jet_forward_memory`, :func:`spectrum_memory`,
  :func:`rank_check_memory`, :func:`jet_jacobian_memory`) by running the
  forward pass over shapes (:class:`~symattn.algebra.shapes.ShapeDomain`),
  component by component, operation by operation;
* compares it with the limit (:func:`memory_limit`: ``max_memory=``, else the
  environment variable ``SYMATTN_MAX_MEMORY``, else half of the machine's
  memory) and raises :class:`~symattn.errors.ResourceLimitError` before any
  work, with a message that names the flags driving the size and the values
  that fit (:func:`check_memory`);
* caps absurd sizes outright (:func:`check_count`: layers, bank);
* draws the one kind of progress bar every long computation shows
  (:func:`progress_bar`): on a terminal only, silent with ``progress=False``.

How close the estimates are: the estimate against the peak that tracemalloc
measures (every numpy array included), and against the peak resident size of
``/usr/bin/time -v`` less the 90 MiB that importing symattn takes.  Measured
on this package's machine; ``tests/test_limits.py`` keeps the first rows
within a factor 1.5 either way.

====================================================  =========  ==========  =====
computation (one step, sizes as it runs them)          estimate   measured    ratio
====================================================  =========  ==========  =====
spectrum l=2 d=4 t=4, bank 8 (+12), eps^8              14.9 MiB   14.7 MiB    1.02
spectrum l=3 d=3 t=4, bank 10 (+15), eps^20            37.7 MiB   34.6 MiB    1.09
spectrum l=3 d=4 t=4, bank 20 (+30), eps^19            142 MiB    133 MiB     1.07
spectrum l=3 d=5 t=5, bank 30 (+45), eps^19, RSS       563 MiB    628 MiB     0.90
observe ranks l=2 d=4 t=4 (bank 24, eps^16)            35.9 MiB   35.1 MiB    1.02
observe ranks l=3 d=3 t=3 (bank 25, eps^40)            44.4 MiB   40.9 MiB    1.09
identify orders l=2 d=5 a=2 t=3 (bank 17, eps^7)       6.4 MiB    7.9 MiB     0.82
identify orders l=1 d=12 t=3 (bank 24, eps^3)          16.6 MiB   20.2 MiB    0.82
dimension l=1 d=12 t=3 (bank 24, gauge slice, eps^2)   11.3 MiB   10.4 MiB    1.09
dimension l=2 d=8 a=2 t=4 (29 inputs at once, eps^6)   28.9 MiB   26.5 MiB    1.09
dimension l=2 d=8 a=2 t=4 (29 inputs in groups of 2)   3.9 MiB    4.1 MiB     0.93
dimension l=2 d=12 a=3 t=4 (64 in groups of 3)         19.4 MiB   19.9 MiB    0.98
dimension l=2 d=16 a=4 t=4 (113 in groups of 2)        53.0 MiB   43.0 MiB    1.23
====================================================  =========  ==========  =====

Below about 2 MiB a fixed cost (caches, small arrays) dominates and the
estimate is low by up to a factor 3; no limit is that small in practice.
Growth steps (a larger bank, a deeper truncation) are estimated again, with
their own sizes, before they run.  :func:`symattn.expand.expand` is guarded
by its own limits on parameters, order and terms per coefficient instead:
the size of its symbolic coefficients is not known before they are built.

Examples
--------
>>> from symattn.model import Architecture
>>> parse_size("512M"), parse_size("2.5G")
(536870912, 2684354560)
>>> estimate = spectrum_memory(Architecture.uniform(layers=2), bank=12, truncation=8)
>>> format_size(estimate.bytes), estimate.series_order, estimate.jacobian
('754 KiB', 8, (72, 16))
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable

from .algebra.shapes import (ATTENTION_COPIES, BLAS_OPERAND_COPIES, BLAS_RESULT_COPIES, BROADCAST_PRODUCT_COPIES,
                             INT64_BYTES, order_text)
from .errors import ResourceLimitError, SymattnError

__all__ = [
    "MemoryEstimate",
    "parse_size",
    "format_size",
    "machine_memory",
    "memory_limit",
    "memory_limit_set",
    "jet_forward_memory",
    "spectrum_memory",
    "rank_check_memory",
    "jet_jacobian_memory",
    "compressed_jacobian_memory",
    "largest_fitting",
    "check_memory",
    "check_count",
    "progress_bar",
    "MAX_BANK",
    "MEMORY_ENVIRONMENT_VARIABLE",
]

#: The environment variable that sets the memory limit (a size such as ``16G``).
MEMORY_ENVIRONMENT_VARIABLE = "SYMATTN_MAX_MEMORY"

#: Default limit: this fraction of the machine's memory (others may be using the rest).
DEFAULT_MEMORY_FRACTION = 0.5

#: Assumed machine memory when neither /proc/meminfo nor sysconf tells.
FALLBACK_MACHINE_MEMORY = 8 * 2**30

#: Hard cap on a bank, checked before any estimate: far beyond anything computable, so a
#: typo (``--bank 1000000000``) fails at once.
MAX_BANK = 100_000

#: A structural bound on the number of layers, so that a typo such as ``10**20`` fails at once
#: instead of exhausting memory.  Every exact computation stops far below it (the contact order of
#: layer i grows as 3^i: a spectrum reaches 6 layers, identify and observe 5), and at this bound
#: each command still refuses a network in seconds; at 10,000 layers merely describing what fits
#: took minutes.  Here rather than in :mod:`symattn.model` so that the command line checks
#: ``--layers`` before sympy loads.
MAX_LAYERS = 100

_INT64 = INT64_BYTES
# The limit set by the analysis that is running (its max_memory=), read by the guards inside it.
_ACTIVE_LIMIT: contextvars.ContextVar = contextvars.ContextVar("symattn_max_memory", default=None)
_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}

# The cost model of the estimates (transient copies per product, attention, entrywise function and
# sum) lives with the shape domain that applies it; the names here are kept for readers of this module.
_BROADCAST_PRODUCT_COPIES = BROADCAST_PRODUCT_COPIES
_BLAS_RESULT_COPIES = BLAS_RESULT_COPIES
_BLAS_OPERAND_COPIES = BLAS_OPERAND_COPIES
_ATTENTION_COPIES = ATTENTION_COPIES


#: The largest file of claims or grid a command reads: far above any hand-written file, so that
#: ``--claims /dev/zero`` is refused instead of read until memory runs out.
MAX_INPUT_FILE_BYTES = 2**20


def read_input_file(path, what: str, max_bytes: int = MAX_INPUT_FILE_BYTES) -> str:
    """The UTF-8 text of a file the user gave, or a SymattnError naming it and what is wrong.

    Reads at most ``max_bytes + 1`` bytes, so that a device or a huge file is
    refused without being read (``/dev/zero``, a log passed by mistake).

    Parameters
    ----------
    path : str or path
    what : str
        The file as the user knows it, e.g. ``"--claims claims.txt"``.
    max_bytes : int
        The largest file accepted.

    Examples
    --------
    >>> read_input_file("/dev/zero", "--claims /dev/zero")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: --claims /dev/zero is larger than 1.0 MiB, the largest file symattn reads; give a smaller file
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as err:
        raise SymattnError(f"cannot read {what}: {err.strerror or err}") from None
    if len(data) > max_bytes:
        raise SymattnError(f"{what} is larger than {format_size(max_bytes)}, the largest file symattn reads; "
                           f"give a smaller file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SymattnError(f"{what} is not UTF-8 text") from None


# -- sizes -----------------------------------------------------------------------------------
def parse_size(text) -> int:
    """Bytes from a size such as ``16G``, ``512M``, ``2.5G``, ``800K`` or ``1000000`` (binary units).

    Raises
    ------
    ResourceLimitError
        For anything that is not a positive size.

    Examples
    --------
    >>> parse_size("16G") == 16 * 2**30, parse_size("512m"), parse_size("1.5GiB")
    (True, 536870912, 1610612736)
    >>> parse_size("-1G")
    Traceback (most recent call last):
    ...
    symattn.errors.ResourceLimitError: a memory size is a positive number with an optional unit K, M, G or T (e.g. 16G, 512M, 2.5G), got '-1G'
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool) and math.isfinite(text) and text > 0:
        return int(text)
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?\s*", str(text), flags=re.IGNORECASE)
    value = float(match.group(1)) * _UNITS[match.group(2).upper()] if match else 0
    if not match or not math.isfinite(value) or value < 1:
        raise ResourceLimitError(f"a memory size is a positive number with an optional unit K, M, G or T "
                                 f"(e.g. 16G, 512M, 2.5G), got {text!r}")
    return int(value)


def format_size(nbytes: float) -> str:
    """A size for people: ``5.1 GiB``, ``512 MiB``.

    Examples
    --------
    >>> format_size(5.1 * 2**30), format_size(512 * 2**20), format_size(3 * 2**60)
    ('5.1 GiB', '512 MiB', '3072 PiB')
    """
    for unit, scale in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{int(nbytes)} B"


def machine_memory() -> int:
    """The memory this process can have, in bytes.

    ``MemTotal`` of /proc/meminfo (else sysconf, else 8 GiB), lowered to a
    container's cgroup limit or the address-space rlimit when those are
    smaller: a container shows the host's MemTotal but is stopped at its own
    limit.

    Examples
    --------
    >>> machine_memory() > 2**20
    True
    """
    total = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    total = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if total is None:
        try:
            total = int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, ValueError, OSError):
            total = FALLBACK_MACHINE_MEMORY
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as cgroup:
                text = cgroup.read().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" means no limit
            total = min(total, int(text))
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            total = min(total, soft)
    except (ImportError, ValueError, OSError):
        pass
    return total


def memory_limit(max_memory=None) -> int:
    """The memory limit in bytes: ``max_memory``, else ``$SYMATTN_MAX_MEMORY``, else half the machine.

    Parameters
    ----------
    max_memory : int, str or None
        Bytes, or a size such as ``"16G"`` (:func:`parse_size`).

    Examples
    --------
    >>> memory_limit("2G") == 2 * 2**30
    True
    >>> memory_limit() <= machine_memory()
    True
    """
    if max_memory is None:
        max_memory = _ACTIVE_LIMIT.get()
    if max_memory is not None:
        return parse_size(max_memory)
    from_environment = os.environ.get(MEMORY_ENVIRONMENT_VARIABLE, "").strip()
    if from_environment:
        try:
            return parse_size(from_environment)
        except ResourceLimitError as err:
            raise ResourceLimitError(f"{MEMORY_ENVIRONMENT_VARIABLE}: {err}") from None
    return int(machine_memory() * DEFAULT_MEMORY_FRACTION)


@contextlib.contextmanager
def memory_limit_set(max_memory=None):
    """Within the block, guards that are given no ``max_memory`` use this one (if not None).

    An analysis takes ``max_memory=`` once and sets it for all the steps it calls.

    Examples
    --------
    >>> with memory_limit_set("3G"):
    ...     memory_limit() == 3 * 2**30
    True
    """
    if max_memory is None:
        yield
        return
    token = _ACTIVE_LIMIT.set(parse_size(max_memory))
    try:
        yield
    finally:
        _ACTIVE_LIMIT.reset(token)


def check_count(value: int, cap: int, flag: str) -> int:
    """``value``, or a ResourceLimitError when it exceeds the hard cap ``cap``.

    Examples
    --------
    >>> check_count(1000000000, MAX_BANK, "--bank")
    Traceback (most recent call last):
    ...
    symattn.errors.ResourceLimitError: --bank 1000000000 is beyond the hard limit of 100000: no computation of that size can finish; give --bank <= 100000
    """
    if value > cap:
        raise ResourceLimitError(f"{flag} {value} is beyond the hard limit of {cap}: no computation of that "
                                 f"size can finish; give {flag} <= {cap}")
    return value


# -- estimates ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryEstimate:
    """The estimated peak memory of one computation, and the sizes behind it.

    Attributes
    ----------
    computation : str
        What is estimated, e.g. ``"the decay spectrum"``.
    bytes : int
        Estimated peak, in bytes.
    series_order : int
        Truncation ``N``: coefficients of ``eps^0 .. eps^(N-1)``.
    jacobian : tuple
        ``(rows, columns)`` of the largest Jacobian (each entry a series of ``N`` int64).
    bank : int
        Inputs pushed through one forward pass.
    largest : str
        The largest array and its shape.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> estimate = spectrum_memory(Architecture.uniform(layers=1, width=1, tokens=2), bank=2, truncation=3)
    >>> estimate.bytes, estimate.jacobian
    (4032, (4, 3))
    >>> print(estimate)
    the decay spectrum needs about 3.9 KiB (bank 2 inputs, series to eps^3, Jacobian 4 x 3; largest array (2, 2, 2, 3, 3) int64 for the attention of layer 1)
    >>> check_memory(estimate, max_memory="1K")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.errors.ResourceLimitError: needs about 3.9 KiB for the decay spectrum ..., over the limit of 1.0 KiB; ...
    """

    computation: str
    bytes: int
    series_order: int
    jacobian: tuple
    bank: int
    largest: str = field(default="")

    def __str__(self) -> str:
        rows, cols = self.jacobian
        return (f"{self.computation} needs about {format_size(self.bytes)} (bank {self.bank} inputs, series to "
                f"eps^{order_text(self.series_order)}, Jacobian {rows} x {cols}; largest array {self.largest})")


#: The one forward pass, :func:`symattn.model.forward`, registered by the model when it loads: the model
#: is a floor above (it imports this module), and every Architecture comes with it.
_FORWARD_PASS: list = []


def register_forward_pass(forward: Callable) -> None:
    """Run the memory estimates with ``forward`` (:func:`symattn.model.forward` registers itself on import).

    Examples
    --------
    >>> from symattn.model import forward
    >>> _FORWARD_PASS == [forward]
    True
    """
    _FORWARD_PASS[:] = [forward]


def _shape_blocks(arch, domain, block_directions=None) -> dict:
    """The parameter blocks as :class:`~symattn.algebra.shapes.Shape` values, jets as wide as their last direction.

    Jets are only as long as the last direction an element has met
    (:meth:`ModSeriesDomain.from_coefficients`): block ``j`` of
    :meth:`~symattn.model.Architecture.blocks` is ``1 + (directions of blocks
    1..j)`` wide, so layer ``i`` carries the directions of layers ``1..i`` only.
    The blocks, shared by the bank, are not counted (small beside the bank's arrays).
    """
    blocks, used = {}, 0
    for key, (rows, cols) in arch.blocks():
        used += rows * cols if block_directions is None else block_directions.get(key, 0)
        blocks[key] = domain.array(rows, cols, width=1 + used, counted=False, block=key)
    return blocks


def jet_forward_memory(arch, bank: int, truncation: int, products: str = "broadcast",
                       block_directions=None) -> tuple[int, str]:
    """Peak bytes of one forward pass over jets of truncated series: ``(bytes, largest array)``.

    Runs :func:`symattn.model.forward` over a :class:`~symattn.algebra.shapes.ShapeDomain`,
    whose elements carry the shapes of :class:`~symattn.algebra.modseries.ModSeriesDomain`
    (each element of a matrix is ``(batch, width, N)`` int64), so every
    component of every layer (attention, a feed-forward block, a residual add)
    enters the estimate with its own step.  ``products="broadcast"``: the
    parent's ``matmul`` materializes the ``(r, c, k, batch, width, N)``
    elementwise product before summing over ``k`` (the schoolbook baseline);
    ``"blas"`` (the default products of the domain) keeps only the
    ``(batch, width, N, r, c)`` result and one coefficient's operands at a
    time.

    Parameters
    ----------
    arch : Architecture
    bank : int
        Inputs in the batch.
    truncation : int
        ``N``.
    products : {"broadcast", "blas"}
    block_directions : dict, optional
        ``block key -> number of jet directions`` of each block (default:
        every entry, as for the native Jacobian; a block not named has none).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> small, _ = jet_forward_memory(Architecture.uniform(layers=2), 4, 8)
    >>> larger, _ = jet_forward_memory(Architecture.uniform(layers=2), 8, 8)
    >>> small < larger
    True
    >>> with_block, largest = jet_forward_memory(Architecture.uniform(layers=2, ffn=3), 4, 8)
    >>> small < with_block
    True
    """
    from .algebra.shapes import ShapeDomain

    domain = ShapeDomain(truncation, products)
    blocks = _shape_blocks(arch, domain, block_directions)
    X = domain.array(arch.widths[0], arch.tokens, batch=bank, label="input")  # the input carries no jets
    _FORWARD_PASS[0](arch, arch.parameters_from_blocks(blocks), X, domain, convert=False)
    return domain.peak_bytes, domain.largest


def _products() -> str:
    """The products the series domains will use: ``"broadcast"`` under ``$SYMATTN_SCHOOLBOOK``.

    The compiled engine is estimated as ``"blas"``: an upper bound, as its
    kernels keep no transient copies of the operands or the result.
    """
    from .algebra.linalg import schoolbook_default  # numpy: off the start-up path of the CLI

    return "broadcast" if schoolbook_default() else "blas"


def spectrum_memory(arch, bank: int, truncation: int, gauge: int | None = None, where: str = "here",
                    group: int | None = None) -> MemoryEstimate:
    """Peak memory of one step of :func:`symattn.spectrum.decay_spectrum` (both banks in one pass).

    One forward pass over the ``bank`` inputs (the bank and the larger
    check bank together), then the Jacobian ``(d_l t bank, #params, N)``,
    its row-compressed copy ``(#params, #params, N)`` and the product of
    that with the gauge tangents, ``(#params, gauge, #params, N)``, which
    checks that they lie in the kernel.

    Parameters
    ----------
    where : {"here", "coordinator", "worker"}
        ``"here"``: everything in one process; ``"coordinator"``: the forward
        passes run on Dask workers, ``group`` inputs a task, and this process
        holds the Jacobian, one arriving part and what follows; ``"worker"``:
        one task's forward pass over ``group`` inputs and its part.
    group : int, optional
        Inputs per task (``where`` other than ``"here"``; default ``bank``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=3, width=8, tokens=8)
    >>> estimate = spectrum_memory(arch, bank=112, truncation=19)
    >>> 2 * 2**30 < estimate.bytes < 4 * 2**30
    True
    >>> worker = spectrum_memory(arch, bank=112, truncation=19, where="worker", group=28)
    >>> coordinator = spectrum_memory(arch, bank=112, truncation=19, where="coordinator", group=28)
    >>> worker.bytes < estimate.bytes and coordinator.bytes < estimate.bytes, worker.bank, coordinator.jacobian
    (True, 28, (7168, 240))
    """
    if where not in ("here", "coordinator", "worker"):
        raise SymattnError(f"where must be 'here', 'coordinator' or 'worker', got {where!r}")
    group = bank if group is None else max(1, min(int(group), bank))
    P = arch.param_count
    if gauge is None:
        gauge = sum(a * a for a in arch.score_ranks) + sum(d * d for d in arch.widths[1:-1])
    rows_per_input = arch.widths[-1] * arch.tokens
    if where == "worker":  # one task: the forward pass over its inputs, and the part it sends back
        forward_bytes, largest = jet_forward_memory(arch, group, truncation, _products())
        part = rows_per_input * group * P * truncation * _INT64
        return MemoryEstimate("a worker's forward pass of the decay spectrum", forward_bytes + part, truncation,
                              (rows_per_input * group, P), group, largest)
    rows = rows_per_input * bank
    jacobian = rows * P * truncation * _INT64
    compressed = min(rows, P)
    # the output, its padded tangents and their reshaped copy; then per bank the compressed copy,
    # and J(eps) G(eps)^T broadcast as (rows, gauge, #params, N) with one temporary
    checks = 2 * compressed * P * truncation * _INT64 + 2 * compressed * gauge * P * truncation * _INT64
    largest = f"({compressed}, {gauge}, {P}, {order_text(truncation)}) int64 for the gauge-kernel check"
    if where == "coordinator":
        # the Jacobian filled part by part (one arriving, and its unpickled copy); then the compressed copy and
        # the gauge check, a BLAS series product: float64 copies of both operands and its limb products
        # (measured: 75 MiB for a (48, 48, 487) by (48, 26, 487) product, 70 MiB by this count)
        part = rows_per_input * group * P * truncation * _INT64
        product = (2 * (compressed + gauge) * P + 8 * compressed * gauge) * truncation * _INT64
        after = jacobian + 2 * compressed * P * truncation * _INT64 + product
        return MemoryEstimate("the decay spectrum (forward passes on the workers)", max(jacobian + 2 * part, after),
                              truncation, (rows, P), bank, f"({rows}, {P}, {order_text(truncation)}) int64 Jacobian")
    forward_bytes, forward_largest = jet_forward_memory(arch, bank, truncation, _products())
    output = rows * (1 + P) * truncation * _INT64
    after = output + 2 * jacobian + checks
    return MemoryEstimate("the decay spectrum", max(forward_bytes, after), truncation, (rows, P), bank,
                          largest if after > forward_bytes else forward_largest)


def rank_check_memory(arch, bank: int, truncation: int) -> MemoryEstimate:
    """Peak memory of one exact rank of :mod:`symattn.observe` (``_set_ranks``) on ``bank`` inputs.

    One forward pass over jets in every native direction, then Smith-form
    eliminations on the uncompressed Jacobian ``(d_l t bank, #params, N)``,
    which copy it a few times.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> rank_check_memory(Architecture.uniform(layers=2), bank=5, truncation=40).jacobian
    (30, 16)
    """
    P = arch.param_count
    forward_bytes, largest = jet_forward_memory(arch, bank, truncation, _products())
    rows = arch.widths[-1] * arch.tokens * bank
    jacobian = rows * P * truncation * _INT64
    output = arch.widths[-1] * arch.tokens * bank * (1 + P) * truncation * _INT64
    after = output + 6 * jacobian  # J, the tangent columns T, and the eliminations' working copies
    if after > forward_bytes:
        largest = f"({rows}, {P}, {order_text(truncation)}) int64 Jacobians in the eliminations"
    return MemoryEstimate("the exact ranks of observe", max(forward_bytes, after), truncation, (rows, P), bank,
                          largest)


def jet_jacobian_memory(arch, bank: int, truncation: int, directions: int | None = None,
                        block_directions=None, computation: str = "identify",
                        jacobian_copies: int = 4) -> MemoryEstimate:
    """Peak memory of identify's Jacobians on ``bank`` inputs (the products the domains will use).

    Parameters
    ----------
    directions, block_directions
        The differentiated directions (default: every native parameter).
    jacobian_copies : int
        Jacobians ``(d_l t bank, directions, N)`` alive at once after the pass
        (identification orders keep the first while computing a second at
        another prime; the fiber shifts and compresses it).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> jet_jacobian_memory(Architecture.uniform(layers=2), bank=6, truncation=13).series_order
    13
    """
    P = arch.param_count if directions is None else directions
    forward_bytes, largest = jet_forward_memory(arch, bank, truncation, _products(), block_directions)
    rows = arch.widths[-1] * arch.tokens * bank
    jacobian = rows * P * truncation * _INT64
    output = arch.widths[-1] * arch.tokens * bank * (1 + P) * truncation * _INT64
    after = output + jacobian_copies * jacobian
    if after > forward_bytes:
        largest = f"{jacobian_copies} x ({rows}, {P}, {order_text(truncation)}) int64 Jacobians"
    return MemoryEstimate(computation, max(forward_bytes, after), truncation, (rows, P), bank, largest)


#: The dimension's groups of inputs have their Jacobians compressed together once these hold this many
#: rows (or R J's, if fewer): the float64 sums of compress_row_pieces stay exact up to 8192 rows for the
#: dimension's prime, and the waiting Jacobians are no larger than about one R J.
COMPRESSION_ROWS = 4096


def compressed_jacobian_memory(arch, bank: int, group: int, truncation: int, directions: int, rows: int,
                               block_directions=None, computation: str = "the dimension",
                               where: str = "here") -> MemoryEstimate:
    """Peak memory of a row-compressed Jacobian ``R J`` built ``group`` inputs at a time, then its Smith form.

    The accumulator ``(rows, directions, N)`` stays alive throughout; each
    group adds a forward pass over ``group`` inputs and its Jacobian
    ``(d_l t group, directions, N)``; the groups' Jacobians wait until they
    hold about ``rows`` rows (at most :data:`COMPRESSION_ROWS`), then ``R``
    times them is summed in float64 and reduced (three accumulator sizes).
    The Smith valuations of :func:`symattn.algebra.valuations.smith_valuations`
    afterwards keep about four copies of the accumulator.  So the peak grows
    with the answer (``rows x directions``), not with the bank.

    Parameters
    ----------
    bank, group : int
        Inputs in all, and per group.
    directions, rows : int
        Columns and rows of ``R J``.
    where : {"here", "coordinator", "worker"}
        ``"here"``: everything in one process; ``"coordinator"``: the
        accumulator, one arriving part and the Smith form (the groups' forward
        passes run on Dask workers); ``"worker"``: one group's pass and part.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=8, tokens=4)
    >>> one = compressed_jacobian_memory(arch, 12, 1, 6, 100, 102)
    >>> all_at_once = compressed_jacobian_memory(arch, 12, 12, 6, 100, 102)
    >>> one.bytes < all_at_once.bytes, one.jacobian, one.bank
    (True, (102, 100), 12)
    >>> one.largest
    '(32, 100, 6) int64 Jacobian; groups of 1 input'
    """
    if where not in ("here", "coordinator", "worker"):
        raise SymattnError(f"where must be 'here', 'coordinator' or 'worker', got {where!r}")
    accumulator = rows * directions * truncation * _INT64
    group_rows = arch.widths[-1] * arch.tokens * group
    jacobian = group_rows * directions * truncation * _INT64
    output = group_rows * (1 + directions) * truncation * _INT64
    # the groups' Jacobians wait until they hold about R J's rows (at most COMPRESSION_ROWS), then one float64 sum
    waiting_rows = min(arch.widths[-1] * arch.tokens * bank, max(group_rows, min(rows, COMPRESSION_ROWS)))
    waiting = waiting_rows * directions * truncation * _INT64
    compression = rows * waiting_rows * 2 * _INT64  # R and its float64 copy
    smith = 4 * accumulator
    groups = f"; groups of {group} input{'s' * (group != 1)}"
    if where == "coordinator":  # the accumulator and one part arriving; its sum; then the Smith form
        peak = max(2 * accumulator + accumulator, accumulator + smith)
        return MemoryEstimate(computation + " (coordinator)", peak, truncation, (rows, directions), bank,
                              f"({rows}, {directions}, {order_text(truncation)}) int64 accumulator{groups}")
    forward_bytes, largest = jet_forward_memory(arch, group, truncation, _products(), block_directions)
    after = output + jacobian + waiting + compression + 3 * accumulator
    step = max(forward_bytes, after)
    if after > forward_bytes:
        largest = f"({group_rows}, {directions}, {order_text(truncation)}) int64 Jacobian"
    if where == "worker":
        return MemoryEstimate(computation + " (one worker)", step + accumulator, truncation,
                              (group_rows, directions), bank, largest + groups)
    peak = max(accumulator + step, accumulator + smith)
    if accumulator + smith > accumulator + step:
        largest = f"({rows}, {directions}, {order_text(truncation)}) int64 accumulator in the Smith form"
    return MemoryEstimate(computation, peak, truncation, (rows, directions), bank, largest + groups)


# -- the check ----------------------------------------------------------------------------------
def _flags(arch) -> str:
    """The network's sizes and variants as command-line flags (what a refusal names).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> _flags(Architecture.uniform(layers=2, width=4))
    '--layers 2 --width 4 --rank 1 --tokens 3'
    >>> _flags(Architecture.uniform(layers=7, width=64, ffn=100, bias=True, heads=2, causal=True))
    '--layers 7 --width 64 --rank 1 --tokens 3 --heads 2 --causal --bias --ffn 100'
    """
    parts = [f"--layers {arch.layers}"]
    widths, ranks = arch.widths, arch.score_ranks
    parts.append(f"--width {widths[0]}" if len(set(widths)) == 1 else "--widths " + ",".join(map(str, widths)))
    parts.append(f"--rank {ranks[0]}" if len(set(ranks)) == 1 else "--ranks " + ",".join(map(str, ranks)))
    parts.append(f"--tokens {arch.tokens}")
    heads = tuple(getattr(arch, "heads", ()) or ())
    if any(h != 1 for h in heads):
        parts.append(f"--heads {heads[0]}" if len(set(heads)) == 1 else "--heads " + ",".join(map(str, heads)))
    parts += [flag for flag, on in (("--causal", getattr(arch, "causal", False)),
                                    ("--residual", getattr(arch, "residual", False)),
                                    ("--bias", getattr(arch, "bias", False))) if on]
    hidden = {tuple(c.hidden for c in layer if hasattr(c, "hidden")) for layer in getattr(arch, "extra", ()) or ()}
    if len(hidden) == 1 and len(blocks := hidden.pop()) == 1:  # one feed-forward block in every layer
        parts.append(f"--ffn {blocks[0]}")
    return " ".join(parts)


def _resized(arch, flag: str, value: int):
    if flag == "--tokens":
        return arch.replace(tokens=value)
    if flag == "--width":
        return arch.replace(widths=[value] * len(arch.widths), score_ranks=[min(a, value) for a in arch.score_ranks])
    return arch.replace(widths=[arch.widths[0]] * (value + 1), score_ranks=[arch.score_ranks[0]] * value,
                        normalizer=arch.normalizers[0])


def _what_fits(arch, fits: Callable, estimate_for, bank: int | None) -> list[str]:
    """``--FLAG <= V`` for each size that alone makes ``fits(estimate)`` true."""
    found = []
    sizes = [("--tokens", arch.tokens)]
    if len(set(arch.widths)) == 1:
        sizes.append(("--width", arch.widths[0]))
    if len(set(arch.widths)) == 1 and len(set(arch.score_ranks)) == 1 and len(set(arch.normalizers)) == 1:
        sizes.append(("--layers", arch.layers))

    def fitting(make):
        def fits_at(value):
            try:
                return fits(make(value))
            except SymattnError:  # e.g. a curve that the smaller network does not have
                return False
        return fits_at

    if bank is not None:
        value = largest_fitting(fitting(lambda b: estimate_for(arch, bank=b)), bank)
        if value is not None:
            found.append(f"--bank <= {value}")
    for flag, current in sizes:
        value = largest_fitting(fitting(lambda v, flag=flag: estimate_for(_resized(arch, flag, v))), current,
                                 smallest=2 if flag == "--tokens" else 1)
        if value is not None:
            found.append(f"{flag} <= {value}")
    return found


def largest_fitting(fits_at: Callable[[int], bool], current: int, smallest: int = 1) -> int | None:
    """The largest value below ``current`` that fits (what fits at a value fits below it), by bisection.

    ``None`` when ``current <= smallest`` or not even ``smallest`` fits.

    Examples
    --------
    >>> largest_fitting(lambda value: value * value <= 50, 100), largest_fitting(lambda value: False, 100)
    (7, None)
    """
    if current <= smallest or not fits_at(smallest):
        return None
    low, high = smallest, current - 1  # fits_at(low) holds; find the last value that fits
    while low < high:
        middle = (low + high + 1) // 2
        if fits_at(middle):
            low = middle
        else:
            high = middle - 1
    return low


def check_memory(estimate: MemoryEstimate, max_memory=None, arch=None, estimate_for=None,
                 bank: int | None = None, step: str = "", max_series_order: int | None = None) -> MemoryEstimate:
    """``estimate``, or a ResourceLimitError when it is over the limit (before any allocation).

    Parameters
    ----------
    estimate : MemoryEstimate
    max_memory : int, str or None
        The limit (see :func:`memory_limit`).
    arch : Architecture, optional
        Named in the message by its flags.
    estimate_for : callable, optional
        ``estimate_for(arch)`` (and ``estimate_for(arch, bank=b)`` when ``bank``
        is given) -> MemoryEstimate for a resized network: the message then
        says which ``--tokens``, ``--width``, ``--layers`` (or ``--bank``) fit.
    bank : int, optional
        A bank size the user chose.
    step : str
        What the computation is doing, e.g. ``"deepening the truncation to eps^38"``.
    max_series_order : int, optional
        The deepest truncation the computation handles: a longer series is
        refused too (the time of a series product grows with its square).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=2, width=4, tokens=6)
    >>> def estimate_for(network, bank=60):
    ...     return spectrum_memory(network, bank=bank, truncation=8)
    >>> check_memory(estimate_for(arch), max_memory="10M", arch=arch, estimate_for=estimate_for, bank=60)
    Traceback (most recent call last):
    ...
    symattn.errors.ResourceLimitError: --layers 2 --width 4 --rank 1 --tokens 6 needs about 36.6 MiB for the decay spectrum (bank 60 inputs, series to eps^8, Jacobian 1440 x 48; largest array (60, 49, 8, 4, 6) int64 for the outputs of layer 2), over the limit of 10.0 MiB; --bank <= 16, --tokens <= 2 or --width <= 1 fits in 10.0 MiB; --max-memory SIZE (or max_memory=, SYMATTN_MAX_MEMORY) raises the limit
    """
    limit = memory_limit(max_memory)
    who = _flags(arch) + " " if arch is not None else ""
    prefix = f"{step}: " if step else ""
    if max_series_order is not None and estimate.series_order > max_series_order:
        fits = _what_fits(arch, lambda e: e.series_order <= max_series_order, estimate_for, None) \
            if arch is not None and estimate_for is not None else []
        fitting = (" or ".join(fits) + " fits" if fits else "no smaller network fits")
        raise ResourceLimitError(
            f"{prefix}{who}needs series to eps^{order_text(estimate.series_order)} for {estimate.computation}, "
            f"beyond the "
            f"deepest truncation eps^{max_series_order} it computes (each layer triples the order); {fitting}")
    if estimate.bytes <= limit:
        return estimate
    fits = _what_fits(arch, lambda e: e.bytes <= limit, estimate_for, bank) \
        if arch is not None and estimate_for is not None else []
    text = str(estimate).replace(f"{estimate.computation} needs", f"{who}needs", 1)
    text = text.replace(" (bank", f" for {estimate.computation} (bank", 1)
    advice = (" or ".join([", ".join(fits[:-1]), fits[-1]]) if len(fits) > 1 else fits[0]) + \
        f" fits in {format_size(limit)}; " if fits else "no smaller size of one flag fits; "
    raise ResourceLimitError(f"{prefix}{text}, over the limit of {format_size(limit)}; {advice}--max-memory SIZE "
                             f"(or max_memory=, {MEMORY_ENVIRONMENT_VARIABLE}) raises the limit")


# -- progress -----------------------------------------------------------------------------------
class _Silent:
    """A progress bar that shows nothing (``progress=False`` or stderr not a terminal)."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        pass

    def set_description(self, text: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def progress_bar(enabled: bool, total: int | None = None, desc: str = "", unit: str = "step"):
    """The progress bar of every long computation: tqdm on a terminal, silent otherwise.

    With ``total`` tqdm shows the elapsed time and an estimate of the time
    left.  The bar is removed when closed (``leave=False``), so a finished
    command prints only its result; use it as a context manager so that
    Ctrl-C closes it before :func:`symattn.cli.main` prints its one line.

    Parameters
    ----------
    enabled : bool
        ``False`` (``progress=False``, ``--quiet``) shows nothing.
    total : int, optional
        Number of steps, when known.
    desc, unit : str

    Returns
    -------
    An object with ``update()``, ``set_postfix_str()``, ``set_description()`` and ``close()``.

    Examples
    --------
    >>> with progress_bar(False, total=3, desc="widths") as bar:
    ...     bar.update()
    >>> type(progress_bar(True)).__name__ in ("_Silent", "tqdm", "tqdm_notebook")
    True
    """
    if not enabled:
        return _Silent()
    stream = sys.stderr
    try:
        interactive = stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:  # pipes, CI logs, captured output, notebooks: no bar
        return _Silent()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False, file=stream, dynamic_ncols=True)

