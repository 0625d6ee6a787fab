"""A domain of shapes: the memory one forward pass over jets of series needs, before anything is allocated.

Every certifying computation pushes first-order jets of truncated series
through the forward pass (:class:`~symattn.algebra.modseries.ModSeriesDomain`):
an entry of a ``rows x cols`` matrix is an int64 array ``(batch, width, N)``,
the inputs of the bank, the value and the jet directions met so far, the
coefficients of ``eps^0 .. eps^(N-1)``.  Running the forward pass here, on
:class:`Shape` elements that carry only those sizes, adds up the bytes alive
at each operation and the transient copies the operation makes, and keeps
the peak and the array behind it, as :class:`~symattn.algebra.degrees.DegreeBoundDomain`
runs the same pass over degree bounds.  :func:`symattn.limits.jet_forward_memory`
uses it; whatever a component computes (attention, a feed-forward block, a
residual add) enters the estimate through its own ``step``.

Jets grow as in :meth:`ModSeriesDomain.from_coefficients`: an element carries
the jet directions up to the last one it has met, so a product is as wide as
the wider factor.  An element is alive while the forward pass holds it (the
domain learns of its release from Python's reference counting), so the
estimate follows the pass as the components run it.

Examples
--------
>>> D = ShapeDomain(truncation=4, products="blas")
>>> X = D.array(2, 3, batch=5, label="input")
>>> V = D.array(2, 2, width=5, counted=False, block=("V", 1))
>>> Y = D.matmul(V, X)
>>> Y.shape, Y.batch, Y.width, Y.nbytes
((2, 3), 5, 5, 4800)
>>> D.peak_bytes, D.largest
(12160, '(5, 5, 4, 2, 3) int64 for the values of layer 1')
"""

from __future__ import annotations

import itertools
import math
import weakref

from ..errors import ShapeError, SymattnError

__all__ = ["Shape", "ShapeDomain", "PRODUCT_COPIES", "INT64_BYTES",
           "BROADCAST_PRODUCT_COPIES", "BLAS_RESULT_COPIES", "BLAS_OPERAND_COPIES", "ATTENTION_COPIES",
           "ENTRYWISE_COPIES", "SUM_COPIES", "HELD_LABELS", "order_text"]

INT64_BYTES = 8

# Transient cost of one matrix product of jets, in multiples of the array it broadcasts
# (ModSeriesDomain.matmul: the (r, c, k, batch, width, N) product; the value and the two
# tangent products, each with the temporary of series_mul_mod, are alive together).
BROADCAST_PRODUCT_COPIES = 3
# Transient cost of one BLAS product (ModSeriesDomain.matmul, algebra.linalg.series_matmul): the
# (batch, width, N, r, c) result and its reordered copy, plus the reduced copies of both operands
# (measured with tracemalloc against tests/test_limits.py).
BLAS_RESULT_COPIES = 2
BLAS_OPERAND_COPIES = 1
# attention(): s(A), s'(A), the column sums, their reciprocal and the product, per score array.
ATTENTION_COPIES = 5
# apply_normalizer() entrywise (an activation): the product of s'(a) with the jets, then the
# value and jets concatenated into the result.
ENTRYWISE_COPIES = 2
# add(): the zero-padded sum and its reduced copy.
SUM_COPIES = 2

#: The transient copies of each product mode: ``(copies of the broadcast array, of the result, of the operands)``.
PRODUCT_COPIES = {"broadcast": (BROADCAST_PRODUCT_COPIES, 0, 0),
                  "blas": (0, BLAS_RESULT_COPIES, BLAS_OPERAND_COPIES)}

#: The arrays of one layer's attention that stay charged until the end of the next layer: its keys,
#: queries, scores and weights.  The component's step lets go of them when it returns; the estimate
#: keeps them a layer longer, as the forward pass before components did (a loop whose locals lived
#: until the next layer replaced them), the margin against which the estimates were measured
#: (symattn.limits; without it identify's estimate of ``l=2 d=5 a=2 t=3`` falls below the measured
#: peak by more than the factor 1.5 that tests/test_limits.py allows).
HELD_LABELS = ("keys", "queries", "scores", "attention")

#: What the product of a parameter block with the stream is called in the description of the largest array.
BLOCK_PRODUCT_NAMES = {"Q": "queries", "K": "keys", "V": "values", "Win": "feed-forward inputs",
                       "Wout": "feed-forward outputs"}


def order_text(order: int) -> str:
    """A series order for a message: its digits, or its size when it has more than 30 of them.

    Deep networks ask for orders such as ``2 * 3^9999``, whose digits Python
    refuses to print (past 4,300) and no reader wants.

    Examples
    --------
    >>> order_text(55), order_text(2 * 3**9999 + 1)
    ('55', '(about 10^4771)')
    """
    if order.bit_length() <= 100:
        return str(order)
    return f"(about 10^{int(order.bit_length() * math.log10(2))})"


class Shape:
    """A matrix of jets of series, by its sizes only: ``rows x cols`` entries of ``(batch, width, N)`` int64.

    Attributes
    ----------
    rows, cols : int
    batch : int
        Inputs of the bank it depends on (1 for a parameter block, shared by the bank).
    width : int
        ``1 + directions``: the value and the jet directions up to the last one met.
    truncation : int
        ``N``.
    layer : int
        The layer of the last parameter block it depends on (0 for the input).
    label : str
        What it is, for the description of the largest array (``"keys"``, ``"attention"``).
    block : tuple or None
        The key of the parameter block it is, if it is one.
    base : Shape or None
        The array a transposed view shares its memory with (the view owns no bytes).

    Examples
    --------
    >>> s = Shape(3, 4, batch=2, width=5, truncation=6)
    >>> s.shape, s.entries, s.nbytes
    ((3, 4), 720, 5760)
    """

    __slots__ = ("rows", "cols", "batch", "width", "truncation", "layer", "label", "block", "base",
                 "__weakref__")

    def __init__(self, rows: int, cols: int, batch: int = 1, width: int = 1, truncation: int = 1, layer: int = 0,
                 label: str = "", block=None, base=None):
        self.rows, self.cols, self.batch, self.width, self.truncation = rows, cols, batch, width, truncation
        self.layer, self.label, self.block, self.base = layer, label, block, base

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.cols

    @property
    def entries(self) -> int:
        """int64 values it holds (0 for a view)."""
        if self.base is not None:
            return 0
        return self.rows * self.cols * self.batch * self.width * self.truncation

    @property
    def nbytes(self) -> int:
        return self.entries * INT64_BYTES

    def __repr__(self) -> str:
        return (f"Shape({self.rows} x {self.cols}, batch {self.batch}, width {self.width}, "
                f"N {self.truncation}{', ' + self.label if self.label else ''})")


class ShapeDomain:
    """Elements are :class:`Shape` values; the domain keeps the live bytes, the peak and the largest array.

    Each operation charges, on top of the arrays alive, the transient copies
    of :class:`~symattn.algebra.modseries.ModSeriesDomain` for it (products
    per ``products`` mode, :data:`ATTENTION_COPIES` for attention,
    :data:`ENTRYWISE_COPIES` for an entrywise function, :data:`SUM_COPIES`
    for a sum), records the peak, then counts its result as alive until the
    forward pass lets go of it.

    Parameters
    ----------
    truncation : int
        ``N``.
    products : {"broadcast", "blas"}
        ``"broadcast"``: a product materializes the ``(r, c, k, batch, width,
        N)`` elementwise product before summing over ``k`` (the schoolbook
        baseline); ``"blas"``: the ``(batch, width, N, r, c)`` result and its
        reordered copy, and one reduced copy of each operand.

    Attributes
    ----------
    live : int
        int64 values alive now.
    peak : int
        The most int64 values alive at once, transients included.
    largest : str
        The array that made the peak, and what it was for.

    Examples
    --------
    One attention layer of width 1, two tokens, a bank of 3 inputs, series to
    ``eps^2``:

    >>> from symattn.normalizers import Normalizer
    >>> D = ShapeDomain(truncation=2, products="broadcast")
    >>> X = D.array(1, 2, batch=3, label="input")
    >>> K = D.array(1, 1, width=3, counted=False, block=("K", 1))
    >>> Q = D.array(1, 1, width=2, counted=False, block=("Q", 1))
    >>> scores = D.matmul(D.transpose(D.matmul(K, X)), D.matmul(Q, X))
    >>> weights = D.attention(scores, Normalizer("softmax"))
    >>> weights.shape, weights.width, D.peak, D.largest
    ((2, 2), 3, 504, '(2, 2, 3, 3, 2) int64 for the attention of layer 1')
    """

    name = "shapes"

    def __init__(self, truncation: int, products: str = "broadcast", held=HELD_LABELS):
        if products not in PRODUCT_COPIES:
            raise SymattnError(f"products must be 'broadcast' or 'blas', got {products!r}")
        self.truncation = truncation
        self.products = products
        self.held = frozenset(held)
        self.live = 0
        self.peak = 0
        self.largest = ""
        self.layer = 0  # the layer of the latest operation
        self._held: dict[int, int] = {}  # layer -> int64 values released by the pass but still charged
        self._latest: dict = {}  # (layer, label) -> serial of the latest array of a held kind
        self._serials = itertools.count()

    @property
    def peak_bytes(self) -> int:
        """The peak in bytes."""
        return self.peak * INT64_BYTES

    # -- elements ---------------------------------------------------------------------------
    def array(self, rows: int, cols: int, batch: int = 1, width: int = 1, counted: bool = True, layer: int = 0,
              label: str = "", block=None) -> Shape:
        """A new element; ``counted`` ones are alive (in :attr:`live`) until Python releases them.

        A parameter block is ``block=(name, layer, ...)``: its layer and name
        then describe the products it enters.
        """
        if block is not None:
            layer = block[1]
        element = Shape(rows, cols, batch, width, self.truncation, layer, label, block)
        if counted:
            self._keep(element)
        return element

    def _keep(self, element: Shape) -> Shape:
        entries = element.entries
        if entries:
            self.live += entries
            held = None
            if element.label in self.held:  # the latest of its kind in its layer, as a variable of a loop
                held = (element.layer, element.label, next(self._serials))
                self._latest[held[:2]] = held[2]
            weakref.finalize(element, self._release, entries, held)
        return element

    def _release(self, entries: int, held) -> None:
        if held is not None and held[0] >= self.layer - 1 and self._latest.get(held[:2]) == held[2]:
            self._held[held[0]] = self._held.get(held[0], 0) + entries  # charged until the next layer ends
        else:
            self.live -= entries

    def _enter(self, layer: int) -> None:
        """An operation of ``layer``: what layers before the last one held is released."""
        if layer > self.layer:
            self.layer = layer
            for old in [old for old in self._held if old < layer - 1]:
                self.live -= self._held.pop(old)

    def _charge(self, transient: int, text: str) -> None:
        if self.live + transient > self.peak:
            self.peak, self.largest = self.live + transient, text

    def _description(self, dims, label: str, layer: int) -> str:
        dims = ", ".join(map(str, (*dims[:-1], order_text(dims[-1]))))
        return f"({dims}) int64 for the {label} of layer {layer}"

    def shape(self, a: Shape) -> tuple[int, int]:
        return a.shape

    # -- the domain interface ------------------------------------------------------------------
    def matmul(self, a: Shape, b: Shape) -> Shape:
        """The product, charging the transients of the domain's product mode."""
        if a.cols != b.rows:
            raise ShapeError(f"cannot multiply a {a.rows} x {a.cols} matrix by a {b.rows} x {b.cols} one")
        r, k, c, N = a.rows, a.cols, b.cols, self.truncation
        batch, width = max(a.batch, b.batch), max(a.width, b.width)
        label = self._product_label(a, b)
        layer = max(a.layer, b.layer)
        self._enter(layer)
        result = Shape(r, c, batch, width, N, layer, label)
        broadcast, result_copies, operand_copies = PRODUCT_COPIES[self.products]
        if broadcast:
            transient = broadcast * r * c * k * batch * width * N
            dims = (r, c, k, batch, width, N)
        else:
            operands = (r * k * a.width * a.batch + k * c * b.width * b.batch) * N
            transient = result_copies * result.entries + operand_copies * operands
            dims = (batch, width, N, r, c)
        self._charge(transient, self._description(dims, label, layer))
        return self._keep(result)

    @staticmethod
    def _product_label(a: Shape, b: Shape) -> str:
        for factor in (a, b):
            if factor.block is not None:
                name = factor.block[0]
                return BLOCK_PRODUCT_NAMES.get(name, f"product with {name}")
        if a.base is not None:  # a transposed factor on the left: the scores X^T K^T Q X
            return "scores"
        return "outputs"

    def transpose(self, a: Shape) -> Shape:
        """A view (no bytes of its own) that keeps ``a`` alive."""
        base = a.base if a.base is not None else a
        return Shape(a.cols, a.rows, a.batch, a.width, a.truncation, a.layer, a.label, a.block, base)

    def add(self, a: Shape, b: Shape) -> Shape:
        """The sum (jets as wide as the wider, batches broadcast), charging :data:`SUM_COPIES` results."""
        if a.shape != b.shape:
            raise ShapeError(f"cannot add a {a.rows} x {a.cols} matrix to a {b.rows} x {b.cols} one")
        return self._entrywise(a, max(a.batch, b.batch), max(a.width, b.width), max(a.layer, b.layer), "sum",
                               SUM_COPIES)

    def causal_mask(self, a: Shape) -> Shape:
        """A masked copy."""
        return self._entrywise(a, a.batch, a.width, a.layer, "causal mask", 1)

    def ones(self, rows: int, cols: int) -> Shape:
        """The constant all-ones matrix: one batch entry, no jets."""
        return self.array(rows, cols, label="constant")

    def apply_normalizer(self, a: Shape, normalizer) -> Shape:
        """A function applied entrywise (an activation), charging :data:`ENTRYWISE_COPIES` results."""
        return self._entrywise(a, a.batch, a.width, a.layer, "activation", ENTRYWISE_COPIES)

    def attention(self, scores: Shape, normalizer, causal: bool = False) -> Shape:
        """The normalized weights, charging :data:`ATTENTION_COPIES` results (a mask adds none)."""
        return self._entrywise(scores, scores.batch, scores.width, scores.layer, "attention", ATTENTION_COPIES)

    def _entrywise(self, a: Shape, batch: int, width: int, layer: int, label: str, copies: int) -> Shape:
        self._enter(layer)
        result = Shape(a.rows, a.cols, batch, width, self.truncation, layer, label)
        self._charge(copies * result.entries,
                     self._description((a.rows, a.cols, batch, width, self.truncation), label, layer))
        return self._keep(result)
