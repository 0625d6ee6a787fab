"""Every progress bar has a total: tqdm shows how far a computation is, never ``0step [00:00, ?step/s]``.

The commands run in-process with a standard error that says it is a
terminal (so :func:`symattn.limits.progress_bar` draws), and tqdm replaced by
a subclass that records the description, count and total of every state it
draws.
"""

import io

import pytest
import tqdm.auto

from symattn.cli import main
from symattn.jacobian import forward_operations, jacobian_series, random_bank, random_point
from symattn.curves import collapse
from symattn.model import Architecture


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def drawn(monkeypatch):
    """The ``(description, n, total)`` of every state a bar drew."""
    states = []

    class Recording(tqdm.auto.tqdm):
        def display(self, msg=None, pos=None):
            states.append((self.desc, self.n, self.total))
            return super().display(msg, pos)

    monkeypatch.setattr(tqdm.auto, "tqdm", Recording)
    return states


@pytest.mark.parametrize("argv", [
    ["spectrum", "--layers", "2"],
    ["spectrum", "--layers", "2", "--ffn", "2", "--bias", "--residual"],
    ["identify", "--layers", "2"],
    ["dimension", "--layers", "2", "--width", "2..3"],
    ["expand", "--layers", "1", "--width", "1", "--tokens", "2", "--truncation", "3"],
    ["observe", "--layers", "2", "--collapse", "scores:1"],
], ids=" ".join)
def test_every_bar_has_a_total(argv, drawn, monkeypatch):
    # here, not in the fixture: pytest's capture sets sys.stderr again when the test starts
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert main(argv) == 0
    assert drawn, "no bar was drawn: the terminal was not seen"
    without = sorted({desc for desc, _, total in drawn if total is None})
    assert not without, f"bars without a total: {without}"
    past = sorted({(desc, n, total) for desc, n, total in drawn if n > total})
    assert not past, f"bars counted past their total: {past}"


def test_the_forward_pass_bar_counts_its_operations():
    """The total of the spectrum's longest phase is the number of steps the pass reports, on every component."""
    p = 1009
    for arch in (Architecture.uniform(layers=3),
                 Architecture.uniform(layers=2, ffn=2, bias=True, residual=True),
                 Architecture.uniform(layers=2, heads=2, causal=True, normalizer="cosh")):
        point, values = random_point(arch, p, 0)
        steps = []
        jacobian_series(arch, collapse(), random_bank(arch, 3, p, 0), point, p, 6, values,
                        on_operation=lambda: steps.append(1))
        assert len(steps) == forward_operations(arch) >= 6 * arch.layers
