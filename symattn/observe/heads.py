"""The rules of the graph for several heads and the residual stream: spans, live heads, shared value maps."""

from __future__ import annotations

from ..model import Architecture
from .layout import _attention_output, _attention_site, _generic_spans
from .reasons import Reason

__all__: list = []


def _variant_span(arch: Architecture, i: int, bound: int, origin, states: dict, head_scores: dict,
                  head_values: dict, live: list[int], ranks: dict, inherited: str | None):
    """``(bound, origin, cause)``: the dimension of the span of the tokens ``X_i`` of a variant on the set.

    ``X_i = sum_h V_{i,h} X_{i-1} S_{i,h}`` (plus ``X_{i-1}`` with a residual
    stream) lies in the sum of one image of the span of ``X_{i-1}`` per
    distinct attention: heads that share one (a forced attention, or the
    collapsed heads' common ``J/t`` or causal average) add one image, a
    silenced head none, and a value map of rank ``r`` an image of dimension
    at most ``r``.  A constant coordinate of ``X_{i-1}`` gives every head
    the same constant column ``V_{i,h} e_b`` times ``1^T S = 1^T``, so the
    heads' constant parts add up to one direction.  Below the generic span
    (:func:`_bottleneck`) the later scores see only a compression of ``W``;
    ``cause`` says why, ``origin`` is the node it comes from.  ``live`` are
    the heads of layer ``i`` that no one-head event collapses or silences.
    """
    scores, values, attention = f"scores:{i}", f"values:{i}", f"attention:{i}"
    site = _attention_site(arch, i)
    previous = states["input" if i == 1 else f"tokens:{i - 1}"]
    silenced = sorted(head_values.get(i, {}))
    collapsed = [h for h in head_scores.get(i, {}) if h not in silenced]
    active = site.heads - len(silenced)
    # the heads per distinct attention: one group for a forced attention, else each live head and the collapsed ones
    if "uniform" in states[attention]:
        groups = [[h for h in range(1, site.heads + 1) if h not in silenced]]
    else:
        groups = [[h] for h in live] + ([collapsed] if collapsed else [])
    groups = [g for g in groups if g]
    constant = "constant-coordinate" in previous and not site.tied

    def span_with(rank):
        # a group adds the image of (sum_h V_{i,h}) X_{i-1}: at most the sum of its ranks and the span entering
        total = sum(min(bound, sum(rank(h) for h in g)) for g in groups)
        if constant and groups:  # the constant parts of all groups add up to one direction
            total = min(total, sum(min(bound - 1, sum(rank(h) for h in g)) for g in groups) + 1)
        return min(arch.widths[i], total + (bound if site.tied else 0))

    def full(h):
        return bound

    def lowered(h):
        return min(bound, ranks.get(h, bound))

    span = span_with(lowered)
    generic = _generic_spans(arch)[_attention_output(arch, i)]
    if span >= generic:
        return generic, None, None
    if span >= min(arch.widths[i], (site.heads + (1 if site.tied else 0)) * bound) and origin is not None:
        return span, origin, inherited  # only as small as the span that enters the layer
    why = []
    if ranks and span < span_with(full):
        if len(set(ranks.values())) == 1 and len(ranks) == site.heads:
            why.append(f"every head's V_{{{i},h}} has rank {next(iter(ranks.values()))}")
        else:
            why.append(" and ".join(f"V_{{{i},{h}}} has rank {r}" for h, r in sorted(ranks.items())))
    if silenced:
        why.append(" and ".join(f"V_{{{i},{h}}} = 0" for h in silenced) + ": those heads add nothing")
    if why:
        return span, values, "; ".join(why)
    if len(groups) < active:
        return span, scores, f"heads of layer {i} share one attention, so together they add one image of the tokens"
    if constant:
        return span, previous.get("constant-coordinate", "input"), \
            f"every head adds the same constant column V_{{{i},h}} e_b 1^T, one direction for all heads"
    return span, origin, inherited


def _live_heads(arch: Architecture, layer: int, head_scores: dict, head_values: dict) -> list[int]:
    """The heads of ``layer`` that no one-head event collapses or silences."""
    dead = set(head_scores.get(layer, {})) | set(head_values.get(layer, {}))
    return [h for h in range(1, _attention_site(arch, layer).heads + 1) if h not in dead]


def _dead_head_reasons(arch: Architecture, layer: int, head_scores: dict, head_values: dict, scores: str) -> list:
    """Why the scores of single heads of ``layer`` are lost: one-head collapses and zero value maps."""
    reasons = []
    for h, event in sorted(head_scores.get(layer, {}).items()):
        reasons.append(Reason("event", f"the event fixes {event.text(arch)}: the scores of head {h} are not seen",
                              (scores,)))
    for h in sorted(set(head_values.get(layer, {})) - set(head_scores.get(layer, {}))):
        reasons.append(Reason(
            "zero-values", f"V_{{{layer},{h}}} = 0: head {h} adds nothing, so its scores are multiplied by zero",
            (scores, f"attention:{layer}", f"tokens:{layer}")))
    return reasons


def _shared_value_reasons(arch: Architecture, states: dict) -> list:
    """Why the value maps of a variant reach the output only in combination (no reason for the plain model).

    The plain model's values block is ``P`` itself (``F = P X M_l``); in the
    variants it is every ``V_{i,h}``, and a forced attention combines them:

    - several heads whose attention is forced (a score collapse, identical or
      zero tokens) share it, so only ``sum_h V_{i,h}`` reaches the output;
    - several heads whose input keeps a constant coordinate: ``1^T S = 1^T``,
      so only the sum over heads of the columns of ``V_{i,h}`` on that
      coordinate reaches it;
    - a residual stream through two consecutive layers whose attention acts
      as an idempotent average (``J/t`` after a collapse without a mask, or
      identical tokens) applies ``(I + V_{i+1}) (I + V_i)`` to the mean token:
      only the product reaches the output.
    """
    reasons = []
    flat = []
    sites = {i: _attention_site(arch, i) for i in range(1, arch.layers + 1)}
    for i in range(1, arch.layers + 1):
        before = "input" if i == 1 else f"tokens:{i - 1}"
        attention = states[f"attention:{i}"]
        head_count = sites[i].heads
        if "zero" in states[before]:
            continue
        if head_count > 1 and "uniform" in attention:
            reasons.append(Reason(
                "shared-attention", f"the {head_count} heads of layer {i} share the forced attention "
                f"S(A_{i}): only the sum of their value maps V_{{{i},h}} reaches the output",
                (f"values:{i}", _attention_output(arch, i))))
        forced = [int(state.rsplit(" ", 1)[1]) for state in states[f"scores:{i}"]
                  if state.startswith("collapsed in head")]
        forced = [h for h in forced if f"zero in head {h}" not in states[f"values:{i}"]]
        if len(forced) > 1 and "uniform" not in attention:
            heads = ", ".join(str(h) for h in forced)
            reasons.append(Reason(
                "shared-attention", f"heads {heads} of layer {i} share the forced attention of their collapsed "
                f"scores: only the sum of their value maps V_{{{i},h}} reaches the output",
                (f"values:{i}", _attention_output(arch, i))))
        if head_count > 1 and "constant-coordinate" in states[before]:
            reasons.append(Reason(
                "shared-bias", f"the tokens entering layer {i} keep a constant coordinate and every column of "
                f"S sums to 1: only the sum over the {head_count} heads of the columns of V_{{{i},h}} on "
                "that coordinate reaches the output", (before, f"values:{i}", _attention_output(arch, i))))
        if "identical" in states[before] or ("uniform" in attention and not sites[i].masked):
            flat.append(i)
        if sites[i].tied and i < arch.layers and sites[i + 1].tied and "constant-coordinate" in states[before] \
                and "constant-coordinate" in states[f"tokens:{i}"]:
            reasons.append(Reason(
                "residual-bias", f"the tokens entering and leaving layer {i} keep a constant coordinate b: "
                f"G = I + g e_b^T on X_{i} is undone by layer {i + 1} (V_{i + 1} -> (V_{i + 1} - g e_b^T) G^-1, "
                f"W_{i + 1} -> G^-T W_{i + 1} G^-1) and made by V_{i}, so V_{i} and V_{i + 1} move together",
                (before, f"tokens:{i}", f"tokens:{i + 1}")))
    for i in flat:
        if sites[i].tied and i + 1 in sites and sites[i + 1].tied:
            between = [c for c in arch.extra[i - 1] if c.computes]
            commutant = min((c.observe_commutant(arch.widths[i]) for c in between), default=0)
            if i + 1 in flat and between and commutant:
                # components between the two attentions: only the G that commute with them move the V's together
                before = "input" if i == 1 else f"tokens:{i - 1}"
                reasons.append(Reason(
                    "residual-commutant", f"layers {i} and {i + 1} average the tokens with weights that do not "
                    f"depend on their scores, and the {commutant}-dimensional maps G = I + N commuting with the "
                    f"components between them ({', '.join(c.kind for c in between)}) give (I + V_{i + 1}) G^-1 and "
                    f"G (I + V_{i}) the same output", (before, _attention_output(arch, i), f"tokens:{i + 1}")))
            if i + 1 in flat and not between:
                before = "input" if i == 1 else f"tokens:{i - 1}"
                reasons.append(Reason(
                    "residual-product", f"layers {i} and {i + 1} average the tokens with weights that do not "
                    f"depend on their scores: the residual stream applies (I + V_{i + 1}) (I + V_{i}) to the "
                    "mean token, and only the product reaches the output",
                    (before, f"tokens:{i}", f"tokens:{i + 1}")))
    return reasons
