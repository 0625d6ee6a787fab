"""Why a block has its verdict: a rule, a sentence and a path in the dependency graph."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Reason", "BlockVerdict"]


@dataclass(frozen=True)
class Reason:
    """Why a block has its verdict: a rule, a sentence, and a directed path in the dependency graph.

    Rules and their paths: ``event`` (the event's node), ``uniform-attention``
    (from the event that forces it to the uniform ``attention:j``),
    ``zero-tokens`` (from the block to the first zero ``tokens:i``), ``zero-values``
    (a residual layer whose ``V_i = 0``: from the block to its ``tokens:i``),
    ``low-rank-values`` (from the lower-rank ``values:i`` to the block),
    ``shift-invariance`` (from the input to ``attention:j``), ``live-path``
    (from the block to the output).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.observe.graph import dependency_graph, propagate
    >>> G = dependency_graph(Architecture.uniform(layers=2, width=2, tokens=3))
    >>> reason = propagate(G, ["scores:1"]).verdicts["scores:2"].reasons[0]
    >>> reason.rule, reason.condition
    ('uniform-attention', 'every normalizer')
    >>> reason.path
    ('scores:1', 'attention:1', 'tokens:1', 'scores:2', 'attention:2')
    """

    rule: str
    text: str
    path: tuple
    condition: str = "every normalizer"

    def to_json(self) -> dict:
        return {"rule": self.rule, "text": self.text, "path": list(self.path), "condition": self.condition}


@dataclass(frozen=True)
class BlockVerdict:
    """The verdict on one effective block: status, reasons, predicted rank of its columns.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> from symattn.observe.graph import dependency_graph, propagate
    >>> G = dependency_graph(Architecture.uniform(layers=1, width=2, tokens=2))
    >>> softmax = propagate(G, ["bias"]).verdicts["scores:1"]
    >>> softmax.block, softmax.status, softmax.predicted_rank, softmax.reasons[0].rule
    ('scores:1', 'partial', 2, 'shift-invariance')
    >>> cosh = propagate(G, ["bias"], "cosh").verdicts["scores:1"]
    >>> cosh.status, cosh.predicted_rank
    ('observable', 3)
    """

    block: str
    status: str
    reasons: tuple
    predicted_rank: int | None = None

    def to_json(self) -> dict:
        return {"block": self.block, "status": self.status, "predicted_rank": self.predicted_rank,
                "reasons": [r.to_json() for r in self.reasons]}
