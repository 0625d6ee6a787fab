"""The layout of the dependency graph read off the components: its blocks, layer steps and generic spans."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Architecture

__all__: list = []


@dataclass(frozen=True)
class AttentionSite:
    """Layer ``i``'s attention as the graph's rules see it, read off the layer's components.

    Attributes
    ----------
    attention : Attention
        The layer's attention component (its heads, whether it normalizes).
    masked : bool
        A component before it masks its scores
        (:meth:`~symattn.model.Component.masks_attention`): forced weights are
        the mask's averages, which differ between queries, not ``J/t``.
    tied : bool
        The first component after it that computes or ties is a tie
        (:meth:`~symattn.model.Component.ties_stream`, a residual add): the
        attention's output is summed with its input.

    Examples
    --------
    >>> site = _attention_site(Architecture.uniform(layers=2, causal=True, residual=True, heads=2), 2)
    >>> site.masked, site.tied, site.heads, site.normalized
    (True, True, 2, True)
    >>> _attention_site(Architecture.uniform(layers=1, ffn=2, residual=False), 1).tied
    False
    """

    attention: object
    masked: bool
    tied: bool

    @property
    def heads(self) -> int:
        return self.attention.heads

    @property
    def normalized(self) -> bool:
        return self.attention.normalized


def _attention_site(arch: Architecture, layer: int) -> AttentionSite:
    """The :class:`AttentionSite` of layer ``layer`` (see there)."""
    components = list(arch.layer_components[layer - 1])
    attention = arch.attention[layer - 1]
    position = next(j for j, c in enumerate(components) if c is attention)
    after = next((c for c in components[position + 1:] if c.computes or c.ties_stream()), None)
    return AttentionSite(attention, any(c.masks_attention() for c in components[:position]),
                         after is not None and after.ties_stream())


def _block_of_group(group: str) -> str:
    """The block of observability of a component's group: ``scores:i:h`` belongs to ``scores:i`` (every head)."""
    parts = group.split(":")
    return ":".join(parts[:2]) if parts[0] == "scores" else group


def _blocks(arch: Architecture) -> list[str]:
    """The blocks of observability, read off the components: attention's ``scores:i`` (every head of layer
    ``i``) and the other components' own groups (``feed-forward:i``) in parameter order, then ``values``.

    Examples
    --------
    >>> _blocks(Architecture.uniform(layers=2, heads=2))
    ['scores:1', 'scores:2', 'values']
    >>> _blocks(Architecture.uniform(layers=2, ffn=1))
    ['scores:1', 'feed-forward:1', 'scores:2', 'feed-forward:2', 'values']
    """
    blocks = list(dict.fromkeys(_block_of_group(g) for g in arch.observe_groups().values()))
    return [b for b in blocks if b != "values"] + ["values"]


def _attention_output(arch: Architecture, layer: int) -> str:
    """The node of the tokens leaving layer ``layer``'s attention (and its residual add): ``tokens:i``, or
    ``attended:i`` when components with parameters follow it in the layer."""
    return f"attended:{layer}" if any(c.computes for c in arch.extra[layer - 1]) else f"tokens:{layer}"


def _layer_steps(arch: Architecture, layer: int) -> list[dict]:
    """The components after layer ``layer``'s attention as steps of the graph, in forward order.

    A computing component reads the stream ``input`` and writes ``output``
    (the last one writes ``tokens:i``) through its node ``node`` (None for
    one without parameters); a tying component (a residual add) sums its
    block's input ``block_input`` into ``output``.
    """
    extra = arch.extra[layer - 1]
    width = arch.widths[layer]
    computing = [j for j, c in enumerate(extra) if c.computes]
    stream = block_input = _attention_output(arch, layer)
    steps = []
    for j, component in enumerate(extra):
        if component.computes:
            spec = component.observe_node(layer, width)
            name = spec["name"] if spec else f"{component.kind}:{layer}:{j}"
            output = f"tokens:{layer}" if j == computing[-1] else f"{name}:tokens"
            steps.append({"component": component, "node": spec and spec["name"], "spec": spec, "input": stream,
                          "output": output})
            block_input, stream = stream, output
        elif component.ties_stream():
            steps.append({"component": component, "tie": True, "block_input": block_input, "output": stream})
    return steps


def _generic_spans(arch: Architecture) -> dict:
    """The dimension of the span of the tokens (over every input) of each stream node at a generic point.

    One head per layer, without components after attention: ``min(d_0, ...,
    d_i)``.  With ``h_i`` heads the tokens of layer ``i`` lie in the sum of
    ``h_i`` images of those of layer ``i - 1`` (plus that layer's own with a
    residual stream), at most ``d_i``; a component after attention says what
    it makes of the span (:meth:`~symattn.model.Component.observe_span`: a
    feed-forward block's tokens span the image of ``W_out``).

    Examples
    --------
    >>> _generic_spans(Architecture([3, 2, 3], [1, 1]))
    {'input': 3, 'tokens:1': 2, 'tokens:2': 2}
    >>> _generic_spans(Architecture.uniform(layers=1, width=3, ffn=1))
    {'input': 3, 'attended:1': 3, 'tokens:1': 1}
    """
    spans = {"input": arch.widths[0]}
    bound = arch.widths[0]
    for i in range(1, arch.layers + 1):
        site = _attention_site(arch, i)
        bound = min(arch.widths[i], (site.heads + (1 if site.tied else 0)) * bound)
        spans[_attention_output(arch, i)] = bound
        for step in _layer_steps(arch, i):
            if step.get("tie"):
                _, spans[step["output"]] = step["component"].observe_tie(
                    ({}, spans[step["block_input"]]), ({}, spans[step["output"]]), arch.widths[i])
            else:
                spans[step["output"]] = step["component"].observe_span(spans[step["input"]], arch.widths[i], {})
        bound = spans[f"tokens:{i}"]
    return spans


def _bias_columns(arch: Architecture, layer: int, component, d_in: int) -> dict:
    """``{block: directions}`` a component loses when its input stream keeps a constant coordinate.

    For each ``(bias, weight)`` pair the component declares
    (:meth:`~symattn.model.Component.translation_roles`), ``W x + b`` with
    ``x_b = c`` on every token is ``W' x' + (b + c W e_b)``: the column of
    ``W`` on that coordinate and the bias add the same constant, so the
    output sees only their sum and the block of the bias (its observe group)
    loses one direction per row of ``W``.  Empty for a component without
    biases.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=2, rank=1, bias=True)
    >>> _bias_columns(arch, 1, arch.attention[0], 2)
    {'scores:1': 2, 'values': 2}
    >>> _bias_columns(Architecture.uniform(layers=1), 1, Architecture.uniform(layers=1).attention[0], 2)
    {}
    """
    roles = component.translation_roles(layer, d_in)
    if not roles:
        return {}
    shapes = dict(component.parameter_blocks(layer, d_in))
    groups = component.observe_groups(layer, d_in)
    lost: dict = {}
    for bias, weight in roles[0]:
        block = _block_of_group(groups[bias])
        lost[block] = lost.get(block, 0) + shapes[weight][0]
    return lost

