"""What the checker reads and computes, bounded before it starts: regular files of bounded size, work and memory from the header.

A certificate is user input, possibly hostile.  Before anything is
computed the checker knows, from the header alone, how large the arrays of
its forward pass will be and how many multiply-adds its series products and
its elimination will take (:func:`certificate_cost`); past the limits it
refuses with one line (:class:`TooLarge`) instead of running out of memory
or time.  A file is read only when it is a regular file no larger than
:data:`MAX_CERTIFICATE_BYTES` (a FIFO, a device or a directory is refused
before it is opened for reading, and once more on the open descriptor).

The memory limit is the caller's (``symattn verify --max-memory SIZE``),
else ``$SYMATTN_MAX_MEMORY``, else half the machine's memory, as for every
other command; the work limit is :data:`MAX_OPERATIONS` unless the caller
gives one (``--max-operations``).

This module imports nothing but the standard library: it is part of the
independent checker.

Examples
--------
>>> cost = certificate_cost(widths=[2, 2], tokens=3, heads=[1], ffn=None, inputs=4, columns=12, truncation=6,
...                         degree=7)
>>> cost.bytes > 0 and cost.operations > 0
True
>>> check_cost(cost, max_memory=10 ** 12, max_operations=10 ** 12)
>>> check_cost(cost, max_memory=1000, max_operations=10 ** 12)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symattn.verifier.limits.TooLarge: checking this certificate needs about ... of memory ..., over the limit of 1000 B; ...
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass

__all__ = ["MAX_CERTIFICATE_BYTES", "MAX_OPERATIONS", "MAX_JSON_DEPTH", "TooLarge", "Cost", "certificate_cost",
           "check_cost", "memory_limit", "read_certificate_text", "parse_json", "json_depth", "format_size"]

#: Largest certificate file read (bytes); the largest the engine writes (width 64, rank 16) is a few MB.
MAX_CERTIFICATE_BYTES = 256 * 2 ** 20

#: Default limit of the multiply-adds one check may take (about a minute on a laptop core).
MAX_OPERATIONS = 2 * 10 ** 11

#: Deepest nesting of JSON arrays and objects read (a formula tree of depth 200 needs about 400).
MAX_JSON_DEPTH = 500

#: Bytes of the parsed JSON per byte of text, at most (Python objects for numbers, strings and lists).
_JSON_BYTES_PER_CHARACTER = 12

# Bytes held per element of the largest jet array: its int64 entries, the float64 limbs of the exact
# products, the scores and weights beside it (measured: about 3 at width 32; 5 leaves room).
_BYTES_PER_ELEMENT = 5 * 8

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?\s*", re.IGNORECASE)


class TooLarge(ValueError):
    """The certificate would take more memory or work than the limits allow, or its file is too large.

    Examples
    --------
    >>> str(TooLarge("over the limit"))
    'over the limit'
    """


@dataclass(frozen=True)
class Cost:
    """The memory (bytes) and work (multiply-adds) of a check, and the largest array, estimated from the header.

    Examples
    --------
    >>> Cost(8, 1, "(1,)").bytes
    8
    """

    bytes: int
    operations: int
    largest: str


def format_size(size: int) -> str:
    """``size`` bytes in B, KiB, MiB, GiB or TiB.

    Examples
    --------
    >>> format_size(1000), format_size(3 * 2 ** 30)
    ('1000 B', '3.0 GiB')
    """
    for unit, scale in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _parse_size(text: str) -> int | None:
    match = _SIZE.fullmatch(text)
    if not match:
        return None
    scale = 1024 ** " KMGT".index(match.group(2).upper() or " ")
    return int(float(match.group(1)) * scale)


def memory_limit(max_memory: int | None = None) -> int:
    """The memory limit in bytes: ``max_memory``, else ``$SYMATTN_MAX_MEMORY``, else half the machine.

    Examples
    --------
    >>> memory_limit(2 ** 30)
    1073741824
    """
    if max_memory is not None:
        return int(max_memory)
    text = os.environ.get("SYMATTN_MAX_MEMORY")
    if text:
        size = _parse_size(text)
        if size is not None:
            return size
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 * 2 ** 30


def certificate_cost(widths: list, tokens: int, heads: list, ffn, inputs: int, columns: int, truncation: int,
                     degree: int) -> Cost:
    """The memory and work of checking a certificate of this header (validated sizes), estimated from above.

    Parameters
    ----------
    widths, tokens, heads, ffn
        The architecture (``ffn``: hidden units per layer or None).
    inputs : int
        The bank's inputs the check reads.
    columns : int
        The jet directions: the witness's columns (at most the parameters).
    truncation : int
        ``N``: series mod ``eps^N``.
    degree : int
        The most Taylor coefficients of one normalizer or activation (a polynomial's count).

    Examples
    --------
    >>> certificate_cost([32, 32, 32], 8, [1, 1], None, 17, 1920, 2, 3).largest
    '(17, 32, 8, 1921, 2)'
    """
    layers = len(widths) - 1
    hidden = max(ffn) if ffn else 0
    width = max(max(widths), tokens, hidden)
    jets = columns + 1
    # the largest array of the forward pass: (inputs, width, tokens, jets, N) int64
    elements = inputs * width * tokens * jets * truncation
    memory = elements * _BYTES_PER_ELEMENT
    heads_total = sum(heads)
    # per head: scores and weights (products of width x tokens by tokens, each a series product of N^2),
    # the normalizer's Taylor sum (degree series products), the values; the elimination of the minor
    series_products = elements * truncation
    forward = series_products * (heads_total * (2 * width + 2 * tokens + degree) + layers * (2 * hidden + 2))
    elimination = columns ** 3 * truncation ** 2
    return Cost(int(memory), int(forward + elimination),
                f"({inputs}, {width}, {tokens}, {jets}, {truncation})")


def check_cost(cost: Cost, max_memory: int | None = None, max_operations: int | None = None) -> None:
    """Refuse (:class:`TooLarge`, one line) a check whose estimated memory or work passes the limits.

    Examples
    --------
    >>> check_cost(Cost(10, 10 ** 13, "(1,)"), max_memory=100)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.verifier.limits.TooLarge: checking this certificate takes about 1e+13 multiply-adds ..., over the limit of 2e+11; ...
    """
    limit = memory_limit(max_memory)
    if cost.bytes > limit:
        raise TooLarge(f"checking this certificate needs about {format_size(cost.bytes)} of memory (its largest "
                       f"array {cost.largest} int64), over the limit of {format_size(limit)}; --max-memory SIZE "
                       "(or SYMATTN_MAX_MEMORY) raises the limit")
    operations = MAX_OPERATIONS if max_operations is None else int(max_operations)
    if cost.operations > operations:
        raise TooLarge(f"checking this certificate takes about {cost.operations:.0e} multiply-adds (its largest "
                       f"array {cost.largest}), over the limit of {operations:.0e}; --max-operations N raises "
                       "the limit")


def read_certificate_text(path, max_memory: int | None = None) -> str:
    """The text of the certificate file at ``path``: a regular file, at most :data:`MAX_CERTIFICATE_BYTES`, UTF-8.

    Raises
    ------
    TooLarge
        The file (or the JSON it would become) is larger than the limits.
    ValueError
        Not a regular file, or not UTF-8 (the message says which).
    OSError
        The file cannot be opened or read.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "c.json")
    >>> _ = open(path, "w").write('{"schema": "symattn-certificate"}')
    >>> read_certificate_text(path)
    '{"schema": "symattn-certificate"}'
    >>> read_certificate_text(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ... is a directory, not a regular file
    """
    name = os.fspath(path)
    kind = _kind(os.stat(name).st_mode)
    if kind is not None:
        raise ValueError(f"{_shown(name)} is {kind}, not a regular file")
    # O_NONBLOCK: a FIFO swapped in after the stat cannot block the open; its kind is checked on the descriptor
    descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        status = os.fstat(descriptor)
        kind = _kind(status.st_mode)
        if kind is not None:
            raise ValueError(f"{_shown(name)} is {kind}, not a regular file")
        limit = min(MAX_CERTIFICATE_BYTES, memory_limit(max_memory) // _JSON_BYTES_PER_CHARACTER)
        if status.st_size > limit:
            raise TooLarge(f"{_shown(name)} has {format_size(status.st_size)}, more than the "
                           f"{format_size(limit)} a certificate may have here")
        chunks, total = [], 0
        while True:
            chunk = os.read(descriptor, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise TooLarge(f"{_shown(name)} has more than the {format_size(limit)} a certificate may have here")
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{_shown(name)} is not UTF-8 text (byte {err.start} is {data[err.start]:#04x})") from None


def _kind(mode: int) -> str | None:
    """None for a regular file, else what it is."""
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def _shown(name: str) -> str:
    return repr(name) if len(name) <= 200 else repr(name[:200]) + "..."


def json_depth(value) -> int:
    """The nesting depth of parsed JSON (0 for a number or a string), counted without recursion.

    Examples
    --------
    >>> json_depth({"a": [1, [2]]}), json_depth(3)
    (3, 0)
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item)
    return deepest


def parse_json(text: str):
    """JSON text parsed, or ``ValueError`` with one line: not JSON, nested too deep, a number too long.

    Examples
    --------
    >>> parse_json('{"a": 1}')
    {'a': 1}
    >>> parse_json("[" * 3000 + "]" * 3000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the certificate is nested deeper than ...
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"the certificate is not JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except RecursionError:
        raise ValueError(f"the certificate is nested deeper than {MAX_JSON_DEPTH} arrays and objects") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise ValueError("the certificate has an integer of more than 4300 digits; a certificate's integers are "
                         "far shorter") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"the certificate is nested deeper than {MAX_JSON_DEPTH} arrays and objects")
    return value
