"""One hang guard for the tests of hostile input: a block that must end quickly, on any machine.

A generous bound (seconds, not a benchmark): a refusal takes well under a
second; before its fix the same input ran for minutes.
"""

import time
from contextlib import contextmanager


@contextmanager
def quickly(seconds: float = 10.0):
    """Fail when the block takes longer than ``seconds``."""
    start = time.perf_counter()
    yield
    elapsed = time.perf_counter() - start
    assert elapsed < seconds, f"took {elapsed:.1f} s: the refusal should be immediate"
