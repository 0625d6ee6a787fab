"""Several claims about one architecture: :func:`check_claims`, :func:`check_claim` and :class:`ClaimsReport`.

Every claim is read before any computation (:mod:`symattn.check.reading`);
numbers are settled by :mod:`symattn.check.numbers`, formulas by
:mod:`symattn.check.formulas`, and the verdicts are collected in a
:class:`ClaimsReport` (text, Markdown, LaTeX, JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._format import FormattedResult, latex_escape, latex_method, latex_prose, markdown_code, markdown_table
from .._markdown import markdown_math, markdown_note, markdown_text_with_math
from ..errors import ResourceLimitError, ShapeError, SymattnError, TruncationError
from ..model import Architecture, require_architecture, require_seed
from ..verdicts import VERDICT_WORDS, ClaimCheck, counterexample_latex, counterexample_text, markdown_cell
from .formulas import POINTWISE, check_coefficient_claim, check_leading_claim, expansion_through, read_coefficient_claim
from .numbers import ClaimEngine, check_number_claim
from .reading import accepted_claims_text, claim_kind, parse_claim

__all__ = ["ClaimsReport", "check_claims", "check_claim"]


@dataclass(frozen=True)
class ClaimsReport(FormattedResult):
    """Several claims checked against one architecture.

    Examples
    --------
    >>> report = check_claims(Architecture.uniform(layers=1, width=2, tokens=3), ["kernel = 1"])
    >>> report.all_true, report.to_json()["claims"][0]["computed"]
    (True, 1)
    """

    architecture: dict
    checks: tuple
    all_true: bool = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "all_true", all(c.verdict is True for c in self.checks))

    @property
    def refuted(self) -> tuple:
        """The claims found false."""
        return tuple(c for c in self.checks if c.verdict is False)

    @property
    def undecided(self) -> tuple:
        """The claims the engine could not settle."""
        return tuple(c for c in self.checks if c.verdict is None)

    def to_json(self) -> dict:
        return {"architecture": self.architecture, "claims": [c.to_json() for c in self.checks],
                "all_true": self.all_true}

    def _summary(self) -> str:
        """One line: every claim true, or how many were refuted and left undecided."""
        if self.all_true:
            return f"all {len(self.checks)} claim(s) true"
        return (f"not all true: {len(self.refuted)} refuted, {len(self.undecided)} undecided "
                f"of {len(self.checks)} claim(s)")

    def _rows(self):
        for c in self.checks:
            computed = "not settled" if c.computed is None else c.computed
            yield c.claim, VERDICT_WORDS[c.verdict], computed, c.method

    def to_markdown(self) -> str:
        # formulas as LaTeX math, $...$ (symattn._markdown): written as Python, (c_1**3/16)*P*X lost its '*'
        table = markdown_table(("claim", "verdict", "computed", "method"),
                               [(_claim_markdown(c), b, _computed_markdown(c), markdown_note(d))
                                for c, (a, b, _, d) in zip(self.checks, self._rows())])
        lines = [f"- counterexample to {_claim_markdown(c)}: "
                 + markdown_text_with_math(counterexample_latex(c.counterexample))
                 for c in self.checks if c.counterexample is not None]
        return table + ("\n\n" + "\n".join(lines) if lines else "") + f"\n\n{self._summary()}"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _latex_body(self) -> str:
        # a list, not a table: claims, formulas and methods are sentences of any length (a tabular ran
        # past the margin); each item breaks where its words do
        items = []
        for n, c in enumerate(self.checks, start=1):
            claim = f"${c.claim_latex}$" if c.claim_latex else rf"\texttt{{{latex_escape(c.claim)}}}"
            if c.computed is None:
                computed = "not settled"
            elif c.computed_latex:
                computed = f"${c.computed_latex}$"
            else:
                computed = latex_prose(c.computed)
            lines = [rf"\item {claim}\\", rf"verdict: \textbf{{{VERDICT_WORDS[c.verdict]}}}; computed: {computed}"]
            if c.counterexample is not None:
                lines.append(r"\\counterexample: " + counterexample_latex(c.counterexample))
            lines.append(latex_method(c.method, "Method"))
            items.append("\n".join(lines))
        verdict = "yes" if self.all_true else "no"
        return ("{\\raggedright\n\\begin{enumerate}\n" + "\n".join(items) + "\n\\end{enumerate}\n"
                + f"All claims true: {verdict}.\\par}}")

    def _latex_math(self) -> str:
        def claim(c):
            return c.claim_latex if c.claim_latex else rf"\texttt{{{latex_escape(c.claim)}}}"

        def computed(c):
            if c.computed is None:
                return r"\text{not settled}"
            if isinstance(c.computed, int) and not isinstance(c.computed, bool):
                return str(c.computed)  # a number is mathematics
            return c.computed_latex or rf"\text{{{latex_escape(c.computed)}}}"

        rows = r" \\ ".join(rf"{claim(c)} & \text{{{VERDICT_WORDS[c.verdict]}}} & {computed(c)}"
                            for c in self.checks)
        return r"\begin{array}{lll} \text{claim} & \text{verdict} & \text{computed} \\ \hline " + rows + r"\end{array}"

    def __str__(self) -> str:
        return "\n".join(str(c) for c in self.checks) + f"\n{self._summary()}"


def _claim_markdown(c) -> str:
    """A claim in Markdown: its formula as inline math, a number claim as the text given (a code span)."""
    return markdown_math(c.claim_latex) if c.claim_latex else markdown_code(c.claim, table=True)


def _computed_markdown(c) -> str:
    """The computed side in Markdown: a formula as inline math, a number as it is."""
    if c.computed is None:
        return "not settled"
    return markdown_math(c.computed_latex) if c.computed_latex else markdown_note(c.computed)


def check_claims(arch: Architecture, claims, *, seed: int = 0, progress: bool = False,
                 spectrum=None) -> ClaimsReport:
    """Check several claimed numbers, computing each quantity once.

    Parameters
    ----------
    arch : Architecture
    claims : iterable of str
        Claims in the forms of :data:`ACCEPTED_CLAIMS`.
    seed : int
        Seed of the spectrum computation and of the random point of the sign check.
    spectrum : Spectrum, optional
        A precomputed :func:`~symattn.spectrum.decay_spectrum` of ``arch``.

    Returns
    -------
    ClaimsReport

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=1, tokens=2)
    >>> report = check_claims(arch, ["kernel = 1", "dimension = 2", "sign_group_order = 2"])
    >>> print(report)
    kernel = 1: true (computed 1)
    dimension = 2: true (computed 2)
    sign_group_order = 2: false (computed 1)
    not all true: 1 refuted, 0 undecided of 3 claim(s)
    """
    arch = require_architecture(arch)
    seed = require_seed(seed)
    if isinstance(claims, str):
        claims = [claims]
    claims = list(claims)
    if not claims:
        raise SymattnError(f"no claims to check; accepted: {accepted_claims_text()}")
    kinds = []
    coefficients = []
    obstacles = {}  # claims read but not decidable on this network: their reason
    for index, text in enumerate(claims):  # all parse errors before any computation
        kind = claim_kind(text)
        kinds.append(kind)
        if kind == "number":
            parse_claim(text, arch.layers)
        elif kind == "leading":
            obstacle = leading_obstacle(arch, text)
            if obstacle is None:
                from ..expand import parse_formula_claim

                parse_formula_claim(arch, text)
            else:
                obstacles[index] = obstacle
        else:
            coefficients.append(read_coefficient_claim(arch, text)[0])
    engine = ClaimEngine(arch, seed=seed, progress=progress, spectrum=spectrum)
    expansion, expansion_error = None, None
    if coefficients:
        try:
            expansion = expansion_through(arch, max(coefficients), progress=progress)
        except (ShapeError, TruncationError, ResourceLimitError):  # too large to hold symbolically: at points
            expansion = POINTWISE
        except SymattnError as err:  # cannot be expanded: those claims are undecided, the others go on
            expansion_error = f"not decided: the expansion through F_{max(coefficients)} could not be computed: {err}"
    checks = []
    too_large = None  # the first refusal of a computation too large for the machine
    for index, (text, kind) in enumerate(zip(claims, kinds)):
        if index in obstacles:
            checks.append(_undecided(text, kind, obstacles[index]))
            continue
        if kind == "coefficient" and expansion_error is not None:
            checks.append(_undecided(text, kind, expansion_error))
            continue
        try:
            if kind == "leading":
                checks.append(check_leading_claim(arch, text, seed))
            elif kind == "coefficient":
                checks.append(check_coefficient_claim(arch, text, seed=seed, expansion=expansion))
            else:
                checks.append(check_number_claim(engine, text))
        except SymattnError as err:  # (every claim was read above) the engine cannot settle this one here:
            if isinstance(err, (ResourceLimitError, TruncationError)) and too_large is None:
                too_large = err
            checks.append(_undecided(text, kind, f"not decided: {err}"))  # undecided, and the others go on
    if too_large is not None and all(check.verdict is None for check in checks):
        # nothing was settled and the network is too large for the machine: a refusal, as every command makes
        raise too_large
    return ClaimsReport(arch.to_json(), tuple(checks))


def leading_obstacle(arch: Architecture, claim: str) -> str | None:
    """Why ``leading(i) = ...`` cannot be decided on ``arch`` (no leading coefficient derived), or None.

    The claim's formula is still read (a typo is an error, not an undecided
    claim), in the names of :func:`~symattn.expand.formula_names`.

    Examples
    --------
    >>> leading_obstacle(Architecture.uniform(layers=1, width=1, tokens=2), "leading(1) = P*X*H*C_1/4") is None
    True
    >>> print(leading_obstacle(Architecture.uniform(layers=1, width=1, tokens=2, residual=True), "leading(1) = P*X"))
    not decided: the leading coefficients are derived for one head per layer, no mask, no residual stream, no biases or feed-forward blocks, and normalized layers; no formula is derived for residual stream. Claims F_n = <matrix formula> are checked on this network: write the coefficient as F_n
    """
    from ..expand.names import formula_names
    from ..expand.verification import leading_claim_pattern
    from ..parsing import matrix_formula

    match = leading_claim_pattern().match(claim) if isinstance(claim, str) else None
    lightning = [i for i, n in enumerate(arch.normalizers, start=1) if n.is_lightning]
    if arch.is_plain and not lightning or match is None:
        return None  # parse_formula_claim reads it (and says what is wrong with it)
    layer = match["layer"].strip()
    if not (layer.isascii() and layer.isdigit() and len(layer) <= 6 and 1 <= int(layer) <= arch.layers):
        return None
    table = formula_names(arch, 0, int(layer))
    matrix_formula(match["formula"].strip(), table, target=f"the leading coefficient of layer {layer}")
    what = arch.describe_variant() if not arch.is_plain else \
        "lightning attention in layer " + ", ".join(str(i) for i in lightning)
    return ("not decided: the leading coefficients are derived for one head per layer, no mask, no residual stream, "
            f"no biases or feed-forward blocks, and normalized layers; no formula is derived for {what}. Claims "
            "F_n = <matrix formula> are checked on this network: write the coefficient as F_n")


def _undecided(text: str, kind: str, reason: str) -> ClaimCheck:
    """A claim reported undecided, with the reason, beside the others."""
    quantity = {"leading": "leading", "coefficient": "coefficient"}.get(kind)
    layer = None
    if quantity is None:
        quantity, layer, claimed = parse_claim(text)
    else:
        claimed = text.split("=", 1)[1].strip()
    return ClaimCheck(text, quantity, layer, claimed, None, None, reason)


def check_claim(arch: Architecture, claim: str, *, seed: int = 0, progress: bool = False,
                spectrum=None) -> ClaimCheck:
    """Check one claimed number for an architecture against the engine.

    Claims (``i`` a layer, ``n`` an integer; ``==`` also accepted):

    * ``contact_order(i) = n``: the least exponent of the decay spectrum that
      layer ``i``'s ``Q_i, K_i`` add (its block in :func:`~symattn.spectrum.decay_spectrum`);
    * ``multiplicity(i) = m``: the multiplicity of that exponent in the spectrum;
    * ``kernel = n``: ``#params - rank`` of the native Jacobian;
    * ``dimension = n``: its rank (the dimension of the function space);
    * ``identification_order(i) = n``: from :mod:`symattn.identify` when it is
      available, else contact order + 1 (the method says which);
    * ``sign_group_order = n``: :func:`~symattn.effective.sign_group_order`
      (the number ``report`` and ``identify`` print), with each sign flip
      checked at a random point (60-digit mpmath); undecided if one disagrees.

    The verdict is None (undecided) when the spectrum leaves the value
    unsettled (bank not separating, unresolved directions).

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=2, tokens=3)
    >>> c = check_claim(arch, "contact_order(1) = 2")
    >>> c.verdict, c.computed
    (False, 1)
    >>> check_claim(arch, "contact_order(2) = 5")
    Traceback (most recent call last):
    ...
    symattn.errors.SymattnError: claim 'contact_order(2) = 5' names layer 2; the architecture has layers 1..1
    """
    return check_claims(arch, [claim], seed=seed, progress=progress, spectrum=spectrum).checks[0]
