"""The memory estimate runs the forward pass over shapes (issue "the network as components").

- on attention-only networks with one head per layer the estimate equals the
  walk by hand it replaced (kept below as ``_walk``, the regression check),
  bytes and largest array, once the walk also counts the input, which the
  forward pass holds through every layer (the walk counted it in layer 1 only:
  at most 2 % more on the grid);
- with several heads it counts every head's arrays (the walk counted one head,
  with the last head's jet widths): never less than the walk;
- a feed-forward block enters the estimate, and the estimate of a network
  with one stays within a factor 1.5 of the peak tracemalloc measures for its
  Jacobian series.
"""

from __future__ import annotations

import itertools
import random
import tracemalloc

import pytest

from symattn.algebra.shapes import (ATTENTION_COPIES, BLAS_OPERAND_COPIES, BLAS_RESULT_COPIES,
                                    BROADCAST_PRODUCT_COPIES, ShapeDomain)
from symattn.errors import ShapeError, SymattnError
from symattn.limits import _products, jet_forward_memory, jet_jacobian_memory, order_text
from symattn.model import Architecture


def _walk(arch, bank, truncation, products, input_kept=False):
    """The walk of ``jet_forward_memory`` before the shape domain, by shapes, attention only (one head).

    ``input_kept``: count the input in every layer, as the forward pass holds it.
    """
    widths_per_layer, used = [], 0
    for i in range(1, arch.layers + 1):
        after = {}
        for h in range(1, arch.heads[i - 1] + 1):
            for name, (rows, cols) in arch.block_shapes(i).items():
                used += rows * cols
                after[name] = 1 + used
        widths_per_layer.append(after)
    t, B, N = arch.tokens, bank, truncation
    peak, largest = 0, ""
    inputs = arch.widths[0] * t * B * N
    hidden = inputs
    previous_layer = 0
    for i, width in enumerate(widths_per_layer, start=1):
        d_in, d_out, a = arch.widths[i - 1], arch.widths[i], arch.score_ranks[i - 1]
        w_hidden = 1 if i == 1 else widths_per_layer[i - 2]["V"]
        w_keys, w_queries = max(width["K"], w_hidden), max(width["Q"], w_hidden)
        w_values = max(width["V"], w_hidden)
        operations = [
            ("keys", a, t, d_in, w_keys, (width["K"], 1), w_hidden),
            ("queries", a, t, d_in, w_queries, (width["Q"], 1), w_hidden),
            ("scores", t, t, a, width["K"], (w_keys, B), w_queries),
            ("values", d_out, t, d_in, width["V"], (width["V"], 1), w_hidden),
            ("outputs", d_out, t, t, width["V"], (w_values, B), width["K"]),
        ]
        live = hidden + previous_layer + (inputs if input_kept and i > 1 else 0)
        results = {}
        for name, r, c, k, w, (w_left, batch_left), w_right in operations:
            result = r * c * B * w * N
            if products == "broadcast":
                transient = BROADCAST_PRODUCT_COPIES * r * c * k * B * w * N
                shape = f"({r}, {c}, {k}, {B}, {w}, {order_text(N)}) int64"
            else:
                operands = (r * k * w_left * batch_left + k * c * w_right * B) * N
                transient = BLAS_RESULT_COPIES * result + BLAS_OPERAND_COPIES * operands
                shape = f"({B}, {w}, {order_text(N)}, {r}, {c}) int64"
            if live + transient > peak:
                peak, largest = live + transient, f"{shape} for the {name} of layer {i}"
            results[name] = result
            live += result
            if name == "scores":
                attention = ATTENTION_COPIES * result
                if live + attention > peak:
                    peak, largest = live + attention, f"({t}, {t}, {B}, {w}, {order_text(N)}) int64 for the attention of layer {i}"
                live += result
                results["weights"] = result
        previous_layer = results["keys"] + results["queries"] + results["scores"] + results["weights"]
        hidden = results["outputs"]
    return peak * 8, largest


def _grid(heads_choices, count=240, seed=0):
    """Random attention-only networks: layers 1-5, widths 1-6, ranks, causal, residual, bank 1-20, N 1-40."""
    chooser = random.Random(seed)
    for _ in range(count):
        layers, width = chooser.randint(1, 5), chooser.randint(1, 6)
        residual = chooser.random() < 0.3
        widths = [width] * (layers + 1) if residual else [chooser.randint(1, 6) for _ in range(layers + 1)]
        ranks = [chooser.randint(1, max(1, min(widths[i], 3))) for i in range(layers)]
        heads = [chooser.choice(heads_choices) for _ in range(layers)]
        arch = Architecture(widths=widths, score_ranks=ranks, tokens=chooser.randint(1, 5), heads=heads,
                            causal=chooser.random() < 0.4, residual=residual)
        yield arch, chooser.randint(1, 20), chooser.randint(1, 40), chooser.choice(["broadcast", "blas"])


@pytest.mark.parametrize("products", ["broadcast", "blas"])
def test_one_head_networks_match_the_walk_it_replaced(products):
    cases = list(_grid([1]))
    assert len(cases) >= 100
    for arch, bank, N, _ in cases:
        estimate = jet_forward_memory(arch, bank, N, products)
        assert estimate == _walk(arch, bank, N, products, input_kept=True), (arch.describe(), bank, N)
        old_bytes, old_largest = _walk(arch, bank, N, products)
        assert old_bytes <= estimate[0] <= 1.02 * old_bytes, (arch.describe(), bank, N)
        if arch.layers == 1:
            assert estimate == (old_bytes, old_largest)


def test_the_grid_covers_what_the_issue_names():
    cases = list(_grid([1]))
    assert {arch.layers for arch, *_ in cases} == {1, 2, 3, 4, 5}
    assert {arch.causal for arch, *_ in cases} == {True, False}
    assert {arch.residual for arch, *_ in cases} == {True, False}
    assert max(N for *_, N, _ in cases) >= 35 and max(bank for _, bank, *_ in cases) >= 18


def test_several_heads_count_every_head():
    more = 0
    for arch, bank, N, products in _grid([1, 2, 3], count=120, seed=1):
        estimate, _ = jet_forward_memory(arch, bank, N, products)
        old, _ = _walk(arch, bank, N, products)
        assert old <= estimate <= 2 * old, (arch.describe(), bank, N)
        more += estimate > 1.01 * old
    assert more > 30  # the walk's one head was an undercount


def test_a_feed_forward_block_enters_the_estimate():
    for layers, width, hidden in [(1, 2, 4), (2, 2, 1), (2, 3, 4), (3, 2, 8)]:
        plain = Architecture.uniform(layers=layers, width=width, tokens=3)
        block = Architecture.uniform(layers=layers, width=width, tokens=3, ffn=hidden)
        for products in ("broadcast", "blas"):
            assert jet_forward_memory(block, 6, 9, products)[0] > jet_forward_memory(plain, 6, 9, products)[0]
    wide = Architecture.uniform(layers=1, width=2, tokens=3, ffn=40)
    assert "feed-forward" in jet_forward_memory(wide, 6, 9, "blas")[1]


def test_the_estimate_of_a_feed_forward_network_is_close_to_the_measured_peak():
    from symattn.curves import collapse
    from symattn.jacobian import jacobian_series, random_bank, random_point

    arch = Architecture.uniform(layers=1, width=3, tokens=3, ffn=6)
    p, bank, N = 268435399, 12, 9
    point, values = random_point(arch, p, 0)
    inputs = random_bank(arch, bank, p, 0)
    jacobian_series(arch, collapse(), inputs, point, p, N, values)  # caches (Taylor data, kernels) first
    tracemalloc.start()
    try:
        jacobian_series(arch, collapse(), inputs, point, p, N, values)
        measured = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = jet_jacobian_memory(arch, bank, N, jacobian_copies=1).bytes  # the pass, its output, one Jacobian
    assert _products() in ("blas", "broadcast")
    assert measured / 1.5 <= estimate <= 1.5 * measured, (estimate, measured, estimate / measured)


def test_the_domain_refuses_what_it_cannot_compute():
    D = ShapeDomain(truncation=3)
    with pytest.raises(ShapeError, match="cannot multiply a 2 x 3 matrix by a 2 x 3"):
        D.matmul(D.array(2, 3), D.array(2, 3))
    with pytest.raises(ShapeError, match="cannot add"):
        D.add(D.array(2, 3), D.array(3, 2))
    with pytest.raises(SymattnError, match="products must be 'broadcast' or 'blas'"):
        ShapeDomain(truncation=3, products="gpu")


def test_released_arrays_leave_the_live_count():
    D = ShapeDomain(truncation=2, products="blas")
    X = D.array(2, 2, batch=3)
    V = D.array(2, 2, width=4, counted=False, block=("V", 1))
    before = D.live
    Y = D.matmul(V, X)
    assert D.live == before + Y.entries
    del Y
    assert D.live == before
    assert D.transpose(X).entries == 0 and D.live == before


@pytest.mark.parametrize("layers, heads", list(itertools.product([1, 2], [1, 2])))
def test_fewer_directions_make_narrower_jets(layers, heads):
    arch = Architecture.uniform(layers=layers, width=3, tokens=3, heads=heads)
    all_directions, _ = jet_forward_memory(arch, 5, 7, "blas")
    one_each, _ = jet_forward_memory(arch, 5, 7, "blas", {key: 1 for key, _ in arch.blocks()})
    assert one_each < all_directions
