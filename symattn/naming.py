"""One name for every block, event, parameter and graph node, in every output format.

A block, an event or a node of the dependency graph has **one name**, its
``key`` (``scores:1``, ``values``, ``values:2``, ``bias``, ...), used as it is
in text, Markdown and JSON, on the graph's boxes and in LaTeX tables (set in
typewriter type).  Beside the name, the table gives its **symbol** in LaTeX
and in plain text (``\\widehat W_{1}`` / ``What_1``) and a sentence saying
what it is.  Every module that shows a block, an event or a node takes these
from here: :mod:`symattn.observe` (event descriptions, graph labels),
:mod:`symattn.spectrum` and :mod:`symattn.identify` (block tables) and the
report's notation section (:func:`notation`).

Examples
--------
>>> scores = block(1)
>>> scores.key, scores.latex, scores.text
('scores:1', '\\\\widehat W_{1}', 'What_1')
>>> block(None).key, block(None).latex
('values', 'P')
>>> event("score_collapse", 2).latex
'\\\\widehat W_{2} = 0'
>>> node("values", 1).latex, node("input", 0).key
('V_{1} X_{0}', 'input')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Name", "block", "block_key", "event", "head_block", "node", "notation", "parameter", "texttt"]


@dataclass(frozen=True)
class Name:
    """The name of one thing: ``key`` everywhere, its symbol in LaTeX and plain text, and its meaning.

    Attributes
    ----------
    key : str
        The one name: text, Markdown, JSON, graph boxes, LaTeX tables.
    latex : str
        Its symbol in LaTeX math mode (without ``$``).
    text : str
        Its symbol in plain text.
    meaning : str
        One sentence, plain text.
    meaning_latex : str
        The same sentence in LaTeX text mode (formulas in ``$...$``); defaults to ``meaning``.

    Examples
    --------
    >>> parameter("Q", 2)
    Name(key='Q_2', latex='Q_{2}', text='Q_2', meaning='query matrix of layer 2', meaning_latex='query matrix of layer 2')
    """

    key: str
    latex: str
    text: str
    meaning: str
    meaning_latex: str = ""

    def __post_init__(self):
        if not self.meaning_latex:
            object.__setattr__(self, "meaning_latex", self.meaning)

    def to_json(self) -> dict:
        """``{"key", "latex", "text", "meaning"}``.

        Examples
        --------
        >>> block(None).to_json()["meaning"]
        'combined value map P = V_l ... V_1 (every V_i)'
        """
        return {"key": self.key, "latex": self.latex, "text": self.text, "meaning": self.meaning}


def texttt(key: str) -> str:
    """A name in LaTeX text mode, in typewriter type (escaped).

    Examples
    --------
    >>> print(texttt("value-rank:1:1"))
    \\texttt{value-rank:1:1}
    >>> print(texttt("scores_1"))
    \\texttt{scores\\_1}
    """
    escaped = str(key).replace("\\", r"\textbackslash{}")
    for char in "&%$#_{}":
        escaped = escaped.replace(char, "\\" + char)
    return r"\texttt{" + escaped + "}"


def block_key(layer: int | None) -> str:
    """The key of the effective block of ``layer``'s scores, or of the value map for ``None``.

    Examples
    --------
    >>> block_key(3), block_key(None)
    ('scores:3', 'values')
    """
    return "values" if layer is None else f"scores:{int(layer)}"


def block(layer: int | str | None) -> Name:
    """The effective block ``What_i`` of layer ``i`` (``scores:i``) or the combined value map ``P`` (``values``).

    ``layer`` may also be a key (``"scores:2"``, ``"values"``).

    Examples
    --------
    >>> block("scores:2").meaning
    'effective scores What_2 = P_1^T K_2^T Q_2 P_1 of layer 2 (from Q_2, K_2)'
    >>> block("values").text
    'P'
    """
    if isinstance(layer, str):
        layer = None if layer == "values" else int(layer.split(":")[1])
    if layer is None:
        return Name("values", "P", "P", "combined value map P = V_l ... V_1 (every V_i)",
                    r"combined value map $P = V_l \cdots V_1$ (every $V_i$)")
    i = int(layer)
    return Name(f"scores:{i}", rf"\widehat W_{{{i}}}", f"What_{i}",
                f"effective scores What_{i} = P_{i - 1}^T K_{i}^T Q_{i} P_{i - 1} of layer {i} (from Q_{i}, K_{i})",
                rf"effective scores $\widehat W_{{{i}}} = P_{{{i - 1}}}^\top K_{{{i}}}^\top Q_{{{i}}} P_{{{i - 1}}}$ "
                rf"of layer {i} (from $Q_{{{i}}}, K_{{{i}}}$)")


_PARAMETERS = {"Q": "query", "K": "key", "V": "value"}


def parameter(letter: str, layer: int) -> Name:
    """A native parameter ``Q_i``, ``K_i`` or ``V_i``.

    Examples
    --------
    >>> parameter("V", 1).meaning
    'value matrix of layer 1'
    >>> parameter("K", "{2,1}").meaning         # head 1 of layer 2 (a layer with several heads)
    'key matrix of head 1 of layer 2'
    """
    if letter not in _PARAMETERS:
        raise ValueError(f"a native parameter is Q, K or V, got {letter!r}")
    if isinstance(layer, str) and "," in layer:  # Q_{i,h}: head h of layer i
        i, h = (int(part) for part in layer.strip("{}").split(","))
        name = f"{letter}_{{{i},{h}}}"
        return Name(name, name, name, f"{_PARAMETERS[letter]} matrix of head {h} of layer {i}")
    i = int(layer)
    return Name(f"{letter}_{i}", f"{letter}_{{{i}}}", f"{letter}_{i}", f"{_PARAMETERS[letter]} matrix of layer {i}")


def event(kind: str, layer: int | None = None, rank: int | None = None, heads: int = 1,
          effective: bool = True, head: int | None = None) -> Name:
    """An event: ``score_collapse``, ``value_collapse``, ``value_rank``, ``identical_tokens`` or ``bias``.

    ``heads`` is the number of heads of the event's layer: an event at a layer
    with several heads holds in every head and is written per head
    (``K_{i,h}^T Q_{i,h} = 0``, ``V_{i,h} = 0``).  With ``effective=False`` (a
    residual stream: no effective block is derived) a score collapse is
    written by its parameters, ``K_i^T Q_i = 0``, not as ``What_i = 0``.
    With ``head``, the event holds in that head only (``scores:i:h``:
    ``K_{i,h}^T Q_{i,h} = 0``; ``values:i:h``: ``V_{i,h} = 0``).

    Examples
    --------
    >>> e = event("value_rank", 1, 1)
    >>> e.key, e.latex, e.meaning
    ('value-rank:1:1', '\\\\operatorname{rank} V_{1} = 1', 'value map V_1 of rank 1')
    >>> event("bias").meaning
    'inputs with a constant (bias) coordinate (last row of X constant)'
    >>> event("score_collapse", 2, heads=3).text
    'K_{2,h}^T Q_{2,h} = 0 for h = 1..3'
    >>> event("score_collapse", 2, effective=False).meaning
    'score collapse at layer 2 (K_2^T Q_2 = 0, realized by Q_2 = 0)'
    >>> event("score_collapse", 1, head=2).text
    'K_{1,2}^T Q_{1,2} = 0'
    >>> event("value_collapse", 1, heads=2).latex
    'V_{1,h} = 0 \\\\ (h = 1, \\\\dots, 2)'
    """
    i = layer
    if head is not None:
        return _head_event(kind, int(i), int(head), rank)
    heads = int(heads)
    every = rf" \ (h = 1, \dots, {heads})" if heads > 1 else ""  # LaTeX: the heads the event holds in
    for_every = f" for h = 1..{heads}" if heads > 1 else ""
    in_every = " in every head" if heads > 1 else ""
    sub, tex = (f"{{{i},h}}", f"{i},h") if heads > 1 else (f"{i}", f"{i}")
    if kind == "score_collapse":
        scores = layer_scores(i, heads, effective)
        return Name(f"scores:{i}", rf"{scores.latex} = 0{every}", f"{scores.text} = 0{for_every}",
                    f"score collapse at layer {i}{in_every} ({scores.text} = 0{for_every}, realized by Q_{sub} = 0)",
                    rf"score collapse at layer {i}{in_every} (${scores.latex} = 0{every}$, "
                    rf"realized by $Q_{{{tex}}} = 0$)")
    if kind == "value_collapse":
        formula = f"V_{sub} = 0{for_every}"
        return Name(f"values:{i}", rf"V_{{{tex}}} = 0{every}", formula,
                    f"value collapse at layer {i}{in_every} ({formula})",
                    rf"value collapse at layer {i}{in_every} ($V_{{{tex}}} = 0{every}$)")
    if kind == "value_rank":
        maps = "value maps" if heads > 1 else "value map"
        return Name(f"value-rank:{i}:{rank}", rf"\operatorname{{rank}} V_{{{tex}}} = {rank}{every}",
                    f"rank V_{sub} = {rank}{for_every}", f"{maps} V_{sub} of rank {rank}{for_every}",
                    rf"{maps} $V_{{{tex}}}$ of rank {rank}" + (rf" ($h = 1, \dots, {heads}$)" if heads > 1 else ""))
    if kind == "identical_tokens":
        return Name("identical-tokens", r"X = x\,\mathbf{1}^\top", "X = x 1^T",
                    "inputs with identical tokens (X = x 1^T)",
                    r"inputs with identical tokens ($X = x\,\mathbf{1}^\top$)")
    if kind == "bias":
        return Name("bias", r"X_{d_0\,\cdot} = c\,\mathbf{1}^\top", "X_(d_0, .) = c 1^T",
                    "inputs with a constant (bias) coordinate (last row of X constant)",
                    r"inputs with a constant (bias) coordinate (last row of $X$ constant)")
    raise ValueError(f"unknown event kind {kind!r}")


def _head_event(kind: str, layer: int, head: int, rank: int | None = None) -> Name:
    sub = f"{layer},{head}"
    where = f"head {head} of layer {layer}"
    if kind == "score_collapse":
        return Name(f"scores:{layer}:{head}", rf"K_{{{sub}}}^\top Q_{{{sub}}} = 0", f"K_{{{sub}}}^T Q_{{{sub}}} = 0",
                    f"score collapse of {where} (K_{{{sub}}}^T Q_{{{sub}}} = 0, realized by Q_{{{sub}}} = 0)",
                    rf"score collapse of {where} ($K_{{{sub}}}^\top Q_{{{sub}}} = 0$, realized by $Q_{{{sub}}} = 0$)")
    if kind == "value_collapse":
        return Name(f"values:{layer}:{head}", rf"V_{{{sub}}} = 0", f"V_{{{sub}}} = 0",
                    f"value collapse of {where} (V_{{{sub}}} = 0)", rf"value collapse of {where} ($V_{{{sub}}} = 0$)")
    if kind == "value_rank":
        return Name(f"value-rank:{layer}:{rank}:{head}", rf"\operatorname{{rank}} V_{{{sub}}} = {rank}",
                    f"rank V_{{{sub}}} = {rank}", f"value map V_{{{sub}}} of {where} of rank {rank}",
                    rf"value map $V_{{{sub}}}$ of {where} of rank {rank}")
    raise ValueError(f"only parameter events happen in one head, not {kind!r}")


def layer_scores(layer: int, heads: int = 1, effective: bool = True) -> Name:
    """The scores of layer ``i`` as events and reasons name them: ``What_i``, or by their parameters.

    ``What_i`` where the network factors through its effective blocks;
    ``K_i^T Q_i`` where it does not (a residual stream, heads elsewhere);
    ``K_{i,h}^T Q_{i,h}`` (each head ``h``) in a layer with several heads.

    Examples
    --------
    >>> layer_scores(2).text, layer_scores(2, effective=False).text, layer_scores(2, heads=2).latex
    ('What_2', 'K_2^T Q_2', 'K_{2,h}^\\\\top Q_{2,h}')
    """
    i = int(layer)
    if int(heads) > 1:
        return Name(f"scores:{i}", rf"K_{{{i},h}}^\top Q_{{{i},h}}", f"K_{{{i},h}}^T Q_{{{i},h}}",
                    f"scores K_{{{i},h}}^T Q_{{{i},h}} of each head h of layer {i}")
    if not effective:
        return Name(f"scores:{i}", rf"K_{{{i}}}^\top Q_{{{i}}}", f"K_{i}^T Q_{i}", f"scores K_{i}^T Q_{i} of layer {i}")
    return Name(f"scores:{i}", rf"\widehat W_{{{i}}}", f"What_{i}", f"effective scores What_{i} of layer {i}")


def node(kind: str, layer: int, layers: int | None = None) -> Name:
    """A node of the dependency graph: ``input``, ``scores:i``, ``attention:i``, ``values:i``, ``tokens:i``, ``output``.

    ``layers`` (the number of layers) names the output ``X_l``.

    Examples
    --------
    >>> n = node("scores", 2)
    >>> n.key, n.latex, n.meaning
    ('scores:2', 'A_{2}', 'score matrix A_2 = X_1^T K_2^T Q_2 X_1 (holds Q_2, K_2; block scores:2)')
    >>> node("output", 3, layers=2).latex
    'F = X_{2}'
    """
    i = int(layer)
    if kind == "input":
        return Name("input", "X_{0}", "X_0", "the input X = X_0 (one token per column)")
    if kind == "scores":
        return Name(f"scores:{i}", rf"A_{{{i}}}", f"A_{i}",
                    f"score matrix A_{i} = X_{i - 1}^T K_{i}^T Q_{i} X_{i - 1} (holds Q_{i}, K_{i}; block scores:{i})")
    if kind == "attention":
        return Name(f"attention:{i}", rf"S(A_{{{i}}})", f"S(A_{i})",
                    f"attention S(A_{i}): the normalizer applied entrywise, columns normalized")
    if kind == "values":
        return Name(f"values:{i}", rf"V_{{{i}}} X_{{{i - 1}}}", f"V_{i} X_{i - 1}",
                    f"value product V_{i} X_{i - 1} (holds V_{i}; part of block values)")
    if kind == "tokens":
        return Name(f"tokens:{i}", rf"X_{{{i}}}", f"X_{i}", f"the tokens X_{i} = V_{i} X_{i - 1} S(A_{i})")
    if kind == "output":
        last = layers if layers is not None else i - 1
        return Name("output", rf"F = X_{{{last}}}", f"F = X_{last}", "the output F(X) of the network")
    raise ValueError(f"unknown graph node kind {kind!r}")


def head_block(layer: int, head: int | None = None) -> Name:
    """The scores of a layer (or of one of its heads) where no effective block is claimed.

    With several heads, or a residual stream, ``F`` does not factor through
    ``What_i = P_{i-1}^T K_i^T Q_i P_{i-1}`` and ``P``; the block is then named
    by its parameters, ``scores:i`` or ``scores:i:h`` (head ``h``), as in the
    spectrum's and the orders' tables.

    Examples
    --------
    >>> b = head_block(2, 1)
    >>> b.key, b.text, b.latex
    ('scores:2:1', 'K_{2,1}^T Q_{2,1}', 'K_{2,1}^\\\\top Q_{2,1}')
    >>> head_block(1).meaning
    'scores of layer 1 (from Q_1, K_1); no effective block claimed for this network'
    """
    i = int(layer)
    sub = f"{i}" if head is None else f"{i},{int(head)}"
    key = f"scores:{i}" if head is None else f"scores:{i}:{int(head)}"
    where = f"layer {i}" if head is None else f"head {int(head)} of layer {i}"
    q, k = (f"Q_{sub}", f"K_{sub}") if head is None else (f"Q_{{{sub}}}", f"K_{{{sub}}}")
    return Name(key, rf"K_{{{sub}}}^\top Q_{{{sub}}}", f"{k}^T {q}",
                f"scores of {where} (from {q}, {k}); no effective block claimed for this network",
                rf"scores of {where} (from $Q_{{{sub}}}, K_{{{sub}}}$); no effective block claimed for this network")


def notation(layers: int, heads=None, effective: bool = True) -> dict:
    """The naming table of a network with ``layers`` layers: its blocks, events and native parameters.

    ``heads`` (one count per layer) names the blocks and parameters of each
    head of a layer with several (``scores:i:h``, ``Q_{i,h}``); with
    ``effective=False`` (several heads, or a residual stream) no block is
    named as an effective parameter (:func:`head_block`).

    Returns
    -------
    dict
        ``{"blocks": [Name, ...], "events": [Name, ...], "parameters": [Name, ...]}``; the
        events are the score and value collapses of every layer and the two input events
        (lower value ranks ``value-rank:i:r`` are named like ``event("value_rank", i, r)``).

    Examples
    --------
    >>> table = notation(2)
    >>> [n.key for n in table["blocks"]], [n.key for n in table["events"]]
    (['scores:1', 'scores:2', 'values'], ['scores:1', 'scores:2', 'values:1', 'values:2', 'identical-tokens', 'bias'])
    >>> [n.key for n in table["parameters"]]
    ['Q_1', 'K_1', 'V_1', 'Q_2', 'K_2', 'V_2']
    >>> [n.text for n in notation(2, heads=[1, 2], effective=False)["events"][:4]]
    ['K_1^T Q_1 = 0', 'K_{2,h}^T Q_{2,h} = 0 for h = 1..2', 'V_1 = 0', 'V_{2,h} = 0 for h = 1..2']
    """
    layers = int(layers)
    heads = [1] * layers if heads is None else [int(h) for h in heads]
    if effective and max(heads) == 1:
        blocks = [block(i) for i in range(1, layers + 1)] + [block(None)]
    else:
        blocks = [head_block(i) if h == 1 else head_block(i, j)
                  for i, h in enumerate(heads, start=1) for j in range(1, h + 1)]
        blocks.append(Name("values", "V", "V", "value maps V_i of every head and layer; no combined value map "
                           "claimed for this network",
                           r"value maps $V_i$ of every head and layer; no combined value map claimed for this network"))
    return {
        "blocks": blocks,
        "events": ([event("score_collapse", i, heads=heads[i - 1], effective=effective and max(heads) == 1)
                    for i in range(1, layers + 1)]
                   + [event("value_collapse", i, heads=heads[i - 1]) for i in range(1, layers + 1)]
                   + [event("identical_tokens"), event("bias")]),
        "parameters": [parameter(letter, i) if h == 1 else parameter(letter, f"{{{i},{j}}}")
                       for i, h in enumerate(heads, start=1) for j in range(1, h + 1) for letter in "QKV"],
    }
