"""An independent float64 reference, shared by the tests: flat parameter vectors and complex-step Jacobian ranks.

Written without the package: a test's own forward pass reads its blocks
from a flat vector (:class:`BlockReader`), and :func:`complex_step_rank`
differentiates it by complex steps (``Im f(theta + i h e_j) / h``, exact to
rounding for analytic functions) and reads the rank off the largest relative
drop of the singular values.
"""

from __future__ import annotations

import numpy as np

#: the complex step: far below rounding, so that f(x + ih) = f(x) + i h f'(x) to the last bit
STEP = 1e-30


class BlockReader:
    """Consecutive ``rows x cols`` blocks of a flat parameter vector, in the order they are asked for."""

    def __init__(self, theta):
        self.theta, self.position = theta, 0

    def take(self, rows: int, cols: int):
        block = self.theta[self.position:self.position + rows * cols].reshape(rows, cols)
        self.position += rows * cols
        return block

    def done(self) -> bool:
        return self.position == len(self.theta)


def complex_step_rank(network, count: int, width: int, tokens: int = 3, inputs: int = 16, seed: int = 0):
    """``(rank, gap, smallest)`` of the Jacobian of ``network(theta, X)`` on a random bank at a random point.

    ``gap`` is the ratio of the singular values on either side of the
    largest relative drop, ``smallest`` the last kept singular value relative
    to the first: a rank read with a gap far above rounding needs no tolerance.
    """
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=count)
    bank = [2 * rng.normal(size=(width, tokens)) for _ in range(inputs)]
    columns = []
    for j in range(count):
        moved = theta.astype(complex)
        moved[j] += 1j * STEP
        columns.append(np.concatenate([network(moved, X).imag.ravel() / STEP for X in bank]))
    singular = np.linalg.svd(np.array(columns).T, compute_uv=False)
    cut = int(np.argmin(singular[1:] / np.maximum(singular[:-1], 1e-300))) + 1
    gap = singular[cut - 1] / singular[cut] if cut < len(singular) else np.inf
    return cut, gap, singular[cut - 1] / singular[0]
