"""A summary of an architecture: sizes, effective parameters, symmetries, closed form.

:func:`architecture_report` computes an :class:`ArchitectureReport`, a value
that renders itself as JSON, Markdown, LaTeX and a plain-text table.  Further
results (a decay spectrum, identification orders, ...) are appended to a
report as :class:`Section` objects with :meth:`ArchitectureReport.with_sections`;
every output format then includes them, in order.  :func:`full_report`
composes the whole report of ``symattn report`` (spectrum, sensitivity,
identification, observability) the same way, for the command line and for
notebooks alike.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.report import architecture_report
>>> report = architecture_report(Architecture.uniform(layers=2, width=2, rank=1, tokens=3))
>>> report.params, report.effective_dim, report.gauge_dim, report.sign_group_order
(16, 10, 6, 1)
>>> print(report.to_markdown().splitlines()[0])
# symattn report
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from . import naming
from ._format import (
    Figure,
    FormattedResult,
    Section,
    latex_document,
    latex_escape,
    latex_method,
    latex_prose,
    latex_tabular,
    latex_tabularx,
    markdown_code,
    markdown_method,
    markdown_table,
    text_table,
)
from .analyses import REGISTRY, registered, resolve
from .effective import (
    closed_form_result,
    effective_block_dimensions,
    effective_closed_form_latex,
    effective_dimension,
    gauge_dimension,
    hidden_gauge_text,
    sign_group_order,
)
from .errors import DomainError, ResourceLimitError, SymattnError
from .identify import identify
from .limits import memory_limit_set
from .model import Architecture
from .numeric import sensitivity
from .observe import dependency_graph, draw_panels, exceptional_fibers, propagate, score_collapse
from .spectrum import decay_spectrum

__all__ = ["ArchitectureReport", "Section", "architecture_report", "full_report", "latex_document"]

#: How the numbers of an :class:`ArchitectureReport` are obtained.
METHOD = (
    "exact closed formulas: native parameter count, dimensions of the rank-bounded "
    "effective blocks, gauge group GL(a_i) x GL(d_i), sign flips of even normalizers and of pairs "
    "of lightning layers (effective.sign_group_order)"
)


def _method(arch: Architecture) -> str:
    """:data:`METHOD` for the plain model; for a variant, the gauge group and symmetries it has."""
    if arch.is_plain:
        return METHOD
    # read off the components: their own gauges, the hidden streams' (effective.hidden_gauge_text), the rest
    own = " and ".join(dict.fromkeys(c.gauge_text() for _, _, c in arch.components() if c.gauge_text()))
    kind, hidden, moved = hidden_gauge_text(arch)
    gauge = (f"the product of {own} and {hidden}" if kind != "tied" else f"{own} ({hidden})") \
        + (f", {moved}" if moved else "")
    # the biases' own translations (b_K under an exponential normalizer, the heads' b_V beyond their sum)
    translations = len(arch.symmetry_tangents("translation"))
    discrete = [c.discrete_symmetry_text() for _, _, c in arch.components() if c.discrete_symmetry_text()]
    factors = arch.factors_through_effective
    # the variants the text was written for: several heads or a residual stream (biases and other components
    # are named by their own words)
    obstacles = sorted({c.effective_form_obstacle() for _, _, c in arch.components()} - {""})
    return ("exact closed formulas: native parameter count, "
            + ("dimensions of the rank-bounded effective blocks, " if factors else "")
            + f"gauge group {gauge}"
            + (f", {translations} bias translation{'s' if translations > 1 else ''} (symattn.model.bias)"
               if translations else "")
            + "".join(f", {text}" for text in dict.fromkeys(discrete))
            + ", sign flips of even normalizers (effective.sign_group_order)"
            + ("" if factors else "; no effective dimension claimed (F does not factor through What_i and P "
                                  "with several heads or a residual stream"
                                  + "".join(f", or with {text}" for text in obstacles) + ")"))


def _quantity_tabular(rows) -> str:
    """Two columns ``name & value``: the names are plain text (escaped), the values LaTeX already."""
    return latex_tabular([(latex_escape(name), value) for name, value in rows], "ll")


#: A character of a user's name that Markdown or HTML would read as markup: such a name is written as code.
_MARKUP = re.compile(r"[<>&`#|\[\]\\\n]")


def _code_names(markdown: str, names: list[str]) -> str:
    """``markdown`` with every occurrence of a user's name (a normalizer's comment: ``<script>``) as a code span.

    The sections of a report write names into their prose as plain text; a
    name the parser accepted may still carry a ``# comment`` with HTML or
    backticks in it (and the Python API takes any ``name=``).

    Examples
    --------
    >>> print(_code_names("- no formula for exp(x) # <b>", ["exp(x) # <b>"]))
    - no formula for `exp(x) # <b>`
    >>> print(_code_names("| normalizer | a|b |", ["a|b"]))
    | normalizer | `a\\|b` |
    """
    if not names:
        return markdown
    pattern = re.compile("|".join(re.escape(name) for name in names))

    def code(match):
        line = markdown[markdown.rfind("\n", 0, match.start()) + 1:match.start()]
        return markdown_code(match.group(0), table=line.lstrip().startswith("|"))

    return pattern.sub(code, markdown)


@dataclass(frozen=True)
class ArchitectureReport(FormattedResult):
    """Sizes, effective parameters and symmetries of an :class:`~symattn.model.Architecture`.

    Build it with :func:`architecture_report`.  Every number is exact (see ``method``).

    Attributes
    ----------
    architecture : dict
        :meth:`Architecture.to_json`.
    params : int
        Number of native parameters (entries of every ``Q_i, K_i, V_i``).
    effective_dim : int
        Dimension of the effective parameters ``(What_1, ..., What_l, P)``.
    effective_blocks : dict
        Dimension of each effective block (``values``, ``scores:i``).
    gauge_dim : int
        Dimension of the gauge group.
    sign_group_order : int
        Order of the group of sign flips ``What_i -> -What_i`` that keep ``F``
        (:func:`symattn.effective.sign_group_order`, the number ``identify``
        and ``check`` use too).
    degenerate : bool
        One token: every attention matrix is the constant 1.
    normalizers : tuple of dict
        :meth:`Normalizer.to_json` of each layer's normalizer, plus its ``latex``.
    closed_form_latex : str
        ``F = P X M_l`` and the recursion for ``M_i``, in LaTeX (lines joined by ``\\\\``).
    method : str
        How the numbers were obtained.
    sections : tuple of Section
        Further results, rendered after the built-in sections.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> report = architecture_report(Architecture.uniform(layers=2, tokens=3, normalizer="cosh"))
    >>> report.sign_group_order, report.effective_blocks
    (4, {'values': 4, 'scores:1': 3, 'scores:2': 3})
    >>> print(report)  # doctest: +ELLIPSIS
    symattn report
    Architecture
      layers       2
      widths       2, 2, 2
      score ranks  1, 1
      tokens       3
      normalizer   cosh (k = 2, even)
    Closed form
      F(X) = P X M_2,  M_0 = I,  M_i = M_{i-1} S(M_{i-1}^T X^T What_i X M_{i-1}),
      What_i = P_{i-1}^T K_i^T Q_i P_{i-1},  P_i = V_i ... V_1,  P = P_2
    Effective parameters and symmetries
      native parameters      16
      effective dimension    10  (values 4, scores:1 3, scores:2 3)
      gauge group dimension  6
      sign group order       4
      degenerate (t = 1)     no
      method                 exact closed formulas: ...
    """

    architecture: dict
    params: int
    effective_dim: int
    effective_blocks: dict
    gauge_dim: int
    sign_group_order: int
    degenerate: bool
    normalizers: tuple
    closed_form_latex: str
    method: str = METHOD
    sections: tuple = field(default=())
    closed_form_text: str = ""
    parameter_blocks: tuple = ()

    # -- extension ------------------------------------------------------------------
    def figures(self) -> list:
        """Every section's :class:`~symattn._format.Figure`, in order (``--out DIR`` draws them)."""
        return [figure for section in self.sections for figure in section.figures]

    def notation(self) -> dict:
        """The naming table of this network (:func:`symattn.naming.notation`): blocks, events, parameters.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> table = architecture_report(Architecture.uniform(layers=1)).notation()
        >>> [(n.key, n.text) for n in table["blocks"]]
        [('scores:1', 'What_1'), ('values', 'P')]
        """
        # no effective dimension: several heads or a residual stream, F does not factor through What_i and P
        table = naming.notation(self.architecture["layers"], heads=self.architecture.get("heads"),
                                effective=self.effective_dim is not None)
        if self.parameter_blocks:  # every block of every component (biases, feed-forward weights), with its shape
            table["parameters"] = [name for name, _, _ in self.parameter_blocks]
        return table

    def _notation_rows(self):
        table = self.notation()
        for kind, label in (("blocks", "block"), ("events", "event"), ("parameters", "parameter")):
            for name in table[kind]:
                yield label, name

    def with_sections(self, *sections: Section) -> "ArchitectureReport":
        """A copy of the report with ``sections`` appended.

        Raises
        ------
        ValueError
            If a section's key is already used in the report's JSON.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> report = architecture_report(Architecture.uniform(layers=1))
        >>> extra = Section("Note", "note", "checked", "Checked.", "Checked.")
        >>> longer = report.with_sections(extra)
        >>> longer.to_json()["note"], longer.to_markdown().splitlines()[-3:]
        ('checked', ['## Note', '', 'Checked.'])
        >>> longer.with_sections(extra)
        Traceback (most recent call last):
        ...
        ValueError: report section key 'note' is already used
        """
        used = set(self._core_json())
        used.update(s.key for s in self.sections)
        for section in sections:
            if section.key in used:
                raise ValueError(f"report section key {section.key!r} is already used")
            used.add(section.key)
        return replace(self, sections=self.sections + tuple(sections))

    # -- rows shared by the formats -----------------------------------------------
    def _normalizer_rows(self, fmt) -> list[tuple[str, str]]:
        def describe(n):
            parity = "even" if n["even"] else "not even"
            return f"{fmt(n)} (k = {n['k']}, {parity})"

        names = {n["name"] for n in self.normalizers}
        if len(names) == 1:
            return [("normalizer", describe(self.normalizers[0]))]
        return [(f"normalizer, layer {i}", describe(n)) for i, n in enumerate(self.normalizers, 1)]

    def _architecture_rows(self, fmt=lambda n: n["name"], activation=str) -> list[tuple[str, str]]:
        arch = self.architecture
        return [
            ("layers", str(arch["layers"])),
            ("widths", ", ".join(map(str, arch["widths"]))),
            ("score ranks", ", ".join(map(str, arch["score_ranks"]))),
            ("tokens", str(arch["tokens"])),
        ] + ([  # the variants (absent from the plain model's JSON)
            ("heads", ", ".join(map(str, arch["heads"]))),
            ("causal mask", "yes" if arch["causal"] else "no"),
            ("residual stream", "yes" if arch["residual"] else "no"),
        ] if "heads" in arch else []) + ([
            ("biases", "yes" if arch.get("bias") else "no"),
            ("components after attention", self._components_text(activation)),
        ] if "heads" in arch and (arch.get("bias") or arch.get("components")) else []) + self._normalizer_rows(fmt)

    def _components_text(self, activation=str) -> str:
        """The components after each layer's attention, from the JSON (``-`` when there are none).

        ``activation`` writes an activation's name (a user's text: a code span in Markdown).
        """
        layers = self.architecture.get("components") or []

        def words(layer):
            return ", ".join(c.get("kind", "?") + (f" ({c['hidden']} units, {activation(c['activation'])})"
                                                   if "hidden" in c and "activation" in c else "") for c in layer)
        texts = [words(layer) for layer in layers]
        if not any(texts):
            return "-"
        if len(set(texts)) == 1:
            return f"{texts[0]} in every layer"
        return "; ".join(f"layer {i}: {t or '-'}" for i, t in enumerate(texts, 1))

    def _user_names(self) -> list[str]:
        """The names a user gave (normalizers, activations) that Markdown would read as markup, longest first."""
        names = {n["name"] for n in self.normalizers}
        names.update(c["activation"] for layer in self.architecture.get("components") or [] for c in layer
                     if isinstance(c.get("activation"), str))
        return sorted((n for n in names if _MARKUP.search(n)), key=len, reverse=True)

    def _effective_rows(self) -> list[tuple[str, str]]:
        blocks = ", ".join(f"{name} {dim}" for name, dim in self.effective_blocks.items())
        return [
            ("native parameters", str(self.params)),
            ("effective dimension", f"{self.effective_dim}  ({blocks})" if self.effective_dim is not None else
             "none derived (F does not factor through What_i and P for this network: see the method)"),
            ("gauge group dimension", str(self.gauge_dim)),
            ("sign group order", str(self.sign_group_order)),
            ("degenerate (t = 1)", "yes" if self.degenerate else "no"),
        ]

    def _closed_form_text(self) -> str:
        if self.closed_form_text:  # a variant: its own layer map (effective.closed_form_result)
            return self.closed_form_text
        layers = self.architecture["layers"]
        return (
            f"F(X) = P X M_{layers},  M_0 = I,  M_i = M_{{i-1}} S(M_{{i-1}}^T X^T What_i X M_{{i-1}}),\n"
            f"What_i = P_{{i-1}}^T K_i^T Q_i P_{{i-1}},  P_i = V_i ... V_1,  P = P_{layers}"
        )

    # -- formats --------------------------------------------------------------------
    def _core_json(self) -> dict:
        return {
            "architecture": self.architecture,
            "params": self.params,
            "effective_dim": self.effective_dim,
            "effective_blocks": dict(self.effective_blocks),
            "gauge_dim": self.gauge_dim,
            "sign_group_order": self.sign_group_order,
            "degenerate": self.degenerate,
            "normalizers": [dict(n) for n in self.normalizers],
            "closed_form_latex": self.closed_form_latex,
            "method": self.method,
            "notation": {kind: [name.to_json() for name in names] for kind, names in self.notation().items()},
        }

    def to_json(self) -> dict:
        """A JSON-serializable dict; each extra section adds its ``key``.

        Examples
        --------
        >>> import json
        >>> from symattn.model import Architecture
        >>> data = architecture_report(Architecture.uniform(layers=2)).to_json()
        >>> sorted(data)[:5]
        ['architecture', 'closed_form_latex', 'degenerate', 'effective_blocks', 'effective_dim']
        >>> json.loads(json.dumps(data))["gauge_dim"]
        6
        """
        out = self._core_json()
        out.update({section.key: section.data for section in self.sections})
        return out

    def to_markdown(self, figures: bool = False) -> str:
        """The report in Markdown (GitHub tables, ``$$`` display math); every section under its ``##`` heading.

        With ``figures=True`` each section's figures follow its body, numbered,
        with their captions (as ``symattn report --out DIR`` writes them).

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> md = architecture_report(Architecture.uniform(layers=2)).to_markdown()
        >>> [line for line in md.splitlines() if line.startswith("#")]
        ['# symattn report', '## Architecture', '## Notation', '## Closed form', '## Effective parameters and symmetries']
        >>> "| native parameters | 16 |" in md
        True
        >>> "| scores:1 | block | `What_1` | effective scores What_1 = P_0^T K_1^T Q_1 P_0 of layer 1 (from Q_1, K_1) |" in md
        True
        """
        parts = [
            "# symattn report",
            "## Architecture",
            markdown_table(("quantity", "value"), self._architecture_rows(
                lambda n: markdown_code(n["name"], table=True), lambda a: markdown_code(a, table=True))),
            "## Notation",
            "One name for each block, event and parameter, used in every table, figure and in the JSON.",
            markdown_table(("name", "kind", "symbol", "meaning"),
                           [(n.key, kind, markdown_code(n.text, table=True), n.meaning)
                            for kind, n in self._notation_rows()]),
            "## Closed form",
            "$$\n\\begin{gathered}\n" + self.closed_form_latex + "\n\\end{gathered}\n$$",
            "## Effective parameters and symmetries",
            markdown_table(("quantity", "value"), self._effective_rows()),
            markdown_method(self.method),
        ]
        number = 0
        for section in self.sections:
            parts += [f"## {section.title}", _code_names(section.markdown.strip(), self._user_names())]
            for figure in section.figures if figures else ():
                number += 1
                parts.append(figure.markdown(number))
        return "\n\n".join(parts) + "\n"

    def to_latex(self, standalone: bool = False, figures: bool = False) -> str:
        """The report as LaTeX: a ``\\section*`` with a ``\\subsection*`` per part, or a whole document.

        With ``figures=True`` each section's figures follow it as floats with
        captions, including the PDF files ``symattn report --out DIR`` draws.
        """
        body = self._latex_body(figures=figures)
        return latex_document(body) if standalone else body

    def _latex_body(self, figures: bool = False) -> str:
        """The report as a LaTeX section (``to_latex()``; ``to_latex(standalone=True)`` is a whole document).

        Needs ``amsmath`` (for ``gather*``), ``tabularx`` and ``longtable``, which the standalone document loads.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> report = architecture_report(Architecture.uniform(layers=1, normalizer="1 + x**2"))
        >>> print(report.to_latex().splitlines()[0])
        \\section*{symattn report}
        >>> r"normalizer & $s(x) = x^{2} + 1$ (k = 2, even)" in report.to_latex()
        True
        >>> report.to_latex(standalone=True).startswith(r"\\documentclass")
        True
        >>> [line for line in report.to_latex().splitlines() if line.startswith(r"\\subsection")]
        ['\\\\subsection*{Architecture}', '\\\\subsection*{Notation}', '\\\\subsection*{Closed form}', '\\\\subsection*{Effective parameters and symmetries}']
        """
        notation = latex_tabularx(
            [(naming.texttt(n.key), kind, f"${n.latex}$", n.meaning_latex) for kind, n in self._notation_rows()],
            "lllL", header=("name", "kind", "symbol", "meaning"))
        parts = [
            "\\section*{symattn report}",
            "\\subsection*{Architecture}",
            _quantity_tabular([(name, latex_escape(value) if name == "components after attention" else value)
                               for name, value in self._architecture_rows(lambda n: f"$s(x) = {n['latex']}$")]),
            "\\subsection*{Notation}",
            "One name for each block, event and parameter, used in every table, figure and in the JSON.\n\n"
            "\\smallskip\n\\noindent{\\small\n" + notation + "\n}",
            "\\subsection*{Closed form}",
            "\\begin{gather*}\n" + self.closed_form_latex + "\n\\end{gather*}",
            "\\subsection*{Effective parameters and symmetries}",
            # plain-text values (numbers, block names, sentences): typeset, in a table as wide as the text
            latex_tabularx([(latex_escape(name), latex_prose(value)) for name, value in self._effective_rows()], "lL"),
            latex_method(self.method),
        ]
        for section in self.sections:
            parts += [f"\\subsection*{{{latex_escape(section.title)}}}", section.latex.strip()]
            parts += [figure.latex() for figure in (section.figures if figures else ())]
        return "\n\n".join(parts) + "\n"

    def _latex_math(self) -> str:
        """Closed form and numbers as display math, for Jupyter."""
        rows = "".join(
            rf"\text{{{latex_escape(name)}}} & \text{{{latex_escape(value)}}} \\ "
            for name, value in self._effective_rows()
        )
        return (
            "\\begin{gathered}\n" + self.closed_form_latex + "\\\\[1ex]\n"
            "\\begin{array}{ll}\n" + rows + "\n\\end{array}\n\\end{gathered}"
        )

    def summary_rows(self) -> list[tuple[str, str]]:
        """The verdicts and numbers, one ``(quantity, value)`` row each: what a terminal shows first.

        Parameters, the dimension of the function space (certified or not),
        the decay spectrum's exponents, identifiability (the generic fiber and
        the identification orders) and observability, read off the sections
        (a section not computed says so).

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> rows = dict(full_report(Architecture.uniform(layers=1, width=1)).summary_rows())
        >>> rows["dimension of the function space"], rows["decay spectrum exponents"]
        ('2 (certified: lower bound = upper bound)', 'eps^0 x 1, eps^1 x 1 (kernel 1; matches the prediction: yes)')
        >>> rows["identifiability"]
        'generic fiber = symmetry orbit: yes; identification orders sharp for every block (scores:1 2, values 0)'
        """
        data = {section.key: section.data for section in self.sections}
        rows = [("native parameters", str(self.params))]

        def missing(key):
            value = data.get(key)
            return value.get("error") if isinstance(value, dict) and "error" in value else None

        ident = data.get("identification")
        if ident is not None:
            dim = ident.get("dimension") or {}
            if missing("identification"):
                rows.append(("dimension of the function space", missing("identification")))
            elif dim.get("certified"):
                rows.append(("dimension of the function space",
                             f"{dim['lower']} (certified: lower bound = upper bound)"))
            else:
                rows.append(("dimension of the function space",
                             f"not certified: lower bound {dim.get('lower')}, upper bound {dim.get('upper')}"))
        spectrum = data.get("spectrum")
        if spectrum is not None:
            if missing("spectrum"):
                rows.append(("decay spectrum exponents", missing("spectrum")))
            else:
                exponents = ", ".join(f"eps^{e} x {m}" for e, m in (spectrum.get("spectrum") or {}).items())
                unresolved = f", {spectrum['unresolved']} unresolved" if spectrum.get("unresolved") else ""
                verdict = str(spectrum.get("prediction_verdict"))
                verdict = "no formula claimed" if verdict.startswith("no formula claimed") else verdict
                rows.append(("decay spectrum exponents",
                             f"{exponents or 'none'}{unresolved} (kernel {spectrum.get('kernel')}; matches the "
                             f"prediction: {verdict})"))
        if ident is not None and not missing("identification"):
            fiber = ident.get("fiber") or {}
            orbit = {True: "yes", False: "no", None: "-"}[fiber.get("kernel_is_symmetry_orbit")]
            orders = list(ident.get("orders") or []) + ([ident["values"]] if ident.get("values") else [])
            listed = ", ".join(f"{o['block']} {o['order']}" for o in orders)
            blunt = [o["block"] for o in orders if not o.get("sharp")]
            rows.append(("identifiability", f"generic fiber = symmetry orbit: {orbit}; identification orders "
                         + (f"sharp for every block ({listed})" if not blunt else
                            f"{listed}; not sharp (not certified locally identifying): {', '.join(blunt)}")))
        observe = data.get("observability")
        if observe is not None:
            if missing("observability"):
                rows.append(("observability", missing("observability")))
            else:
                rows_ = observe.get("rows") or []
                losing = sum(1 for row in rows_ if row.get("unobservable") or row.get("partial"))
                agrees = {True: "yes", False: "no"}.get(observe.get("agrees_with_rank"), "-")
                rows.append(("observability", f"{losing} of {len(rows_)} events lose a block; graph and "
                                              f"exact rank agree: {agrees}"))
        return rows

    def to_terminal(self) -> str:
        """The report for a terminal (``symattn report`` on standard output): the summary first, no display math.

        A ``## Summary`` of the verdicts and numbers (:meth:`summary_rows`)
        comes first; the closed form is written as text; the notation table
        comes last.  The LaTeX goes to ``--latex`` and to the files of ``--out DIR``
        (whose Markdown keeps the display math: :meth:`to_markdown`).

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> text = full_report(Architecture.uniform(layers=1, width=1)).to_terminal()
        >>> text.splitlines()[:6]
        ['# symattn report', '', '## Summary', '', '| quantity | value |', '|---|---|']
        >>> "$$" in text or "\\begin" in text
        False
        """
        parts = [
            "# symattn report",
            "## Summary",
            markdown_table(("quantity", "value"), self.summary_rows()),
            "## Architecture",
            markdown_table(("quantity", "value"), self._architecture_rows(
                lambda n: markdown_code(n["name"], table=True), lambda a: markdown_code(a, table=True))),
            "## Closed form",
            "```text\n" + self._closed_form_text() + "\n```\n\n(as display math: --latex, or report.md and "
            "report.tex under --out DIR)",
            "## Effective parameters and symmetries",
            markdown_table(("quantity", "value"), self._effective_rows()),
            markdown_method(self.method),
        ]
        for section in self.sections:
            body = section.markdown.strip()
            if "$$" in body or "\\begin" in body:  # display math: the section's plain text instead
                body = "```text\n" + section.text.strip() + "\n```"
            parts += [f"## {section.title}", _code_names(body, self._user_names())]
        parts += [
            "## Notation",
            "One name for each block, event and parameter, used in every table, figure and in the JSON.",
            markdown_table(("name", "kind", "symbol", "meaning"),
                           [(n.key, kind, markdown_code(n.text, table=True), n.meaning)
                            for kind, n in self._notation_rows()]),
        ]
        return "\n\n".join(parts) + "\n"

    def _repr_markdown_(self) -> str:
        """The report, for Jupyter front ends that render Markdown (a summary past ``DISPLAY_MAX_CHARS``)."""
        return self.to_markdown()

    def _display_size(self, form: str) -> int:
        """The core's JSON and the sections' own texts, which are written already."""
        own = {"text": "text", "markdown": "markdown", "html": "markdown"}.get(form)
        return len(json.dumps(self._core_json(), default=str)) + (
            sum(len(getattr(section, own)) for section in self.sections) if own else 0)

    def __str__(self) -> str:
        parts = [
            "symattn report",
            "Architecture",
            text_table(self._architecture_rows()),
            "Closed form",
            "\n".join("  " + line for line in self._closed_form_text().splitlines()),
            "Effective parameters and symmetries",
            text_table(self._effective_rows() + [("method", self.method)]),
        ]
        for section in self.sections:
            parts += [section.title, "\n".join("  " + line for line in section.text.splitlines())]
        return "\n".join(parts)


#: What each kind of parameter block is (the blocks of :meth:`Architecture.blocks`); others say their name.
_BLOCK_MEANINGS = {"Q": "query matrix", "K": "key matrix", "V": "value matrix", "bQ": "query bias",
                   "bK": "key bias", "bV": "value bias", "Win": "input weights of the feed-forward block",
                   "Wout": "output weights of the feed-forward block", "bin": "hidden bias of the feed-forward block",
                   "bout": "output bias of the feed-forward block"}


def _parameter_names(arch: Architecture) -> tuple:
    """``(Name, rows, cols)`` of every parameter block of ``arch``, in flat order, named as results name them.

    Examples
    --------
    >>> arch = Architecture.uniform(layers=1, width=2, ffn=3)
    >>> [(n.key, n.text, rows * cols) for n, rows, cols in _parameter_names(arch)]
    [('Q_1', 'Q_1', 2), ('K_1', 'K_1', 2), ('V_1', 'V_1', 4), ('Win_1', 'Win_1', 6), ('Wout_1', 'Wout_1', 6)]
    >>> _parameter_names(arch)[3][0].latex, _parameter_names(arch)[3][0].meaning
    ('W^{\\\\mathrm{in}}_{1}', 'input weights of the feed-forward block of layer 1 (3 rows, 2 columns)')
    """
    from .model.symbols import BLOCK_LETTERS, block_label

    out = []
    for key, (rows, cols) in arch.blocks():
        name, where = key[0], f"layer {key[1]}" if len(key) == 2 else f"head {key[2]} of layer {key[1]}"
        label = block_label(key)
        index = label[len(name) + 1:]  # 1 or {1,2}
        latex = f"{BLOCK_LETTERS.get(name, name)}_{{{index.strip('{}')}}}"
        # rows and columns in words: "3 x 2" reads as a product, or Python, on a typeset page
        meaning = f"{_BLOCK_MEANINGS.get(name, 'block ' + name)} of {where} ({rows} rows, {cols} columns)"
        out.append((naming.Name(label, latex, label, meaning), rows, cols))
    return tuple(out)


def architecture_report(arch: Architecture) -> ArchitectureReport:
    """Summarize ``arch``: parameter count, effective dimension, gauge and sign symmetries.

    Parameters
    ----------
    arch : Architecture

    Returns
    -------
    ArchitectureReport

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture([2, 2, 2], [1, 1], tokens=3, normalizer="softmax")
    >>> report = architecture_report(arch)
    >>> report.params, report.effective_dim, report.gauge_dim, report.sign_group_order
    (16, 10, 6, 1)
    >>> report.normalizers[0]["name"], report.normalizers[0]["latex"]
    ('softmax', 'e^{x}')
    """
    factors = arch.factors_through_effective
    return ArchitectureReport(
        architecture=arch.to_json(),
        params=arch.param_count,
        # heads or a residual stream: F does not factor through (What_i, P), no effective dimension is derived
        effective_dim=effective_dimension(arch) if factors else None,
        effective_blocks=effective_block_dimensions(arch) if factors else {},
        gauge_dim=gauge_dimension(arch),
        sign_group_order=sign_group_order(arch),
        degenerate=arch.degenerate,
        normalizers=tuple({**n.to_json(), "latex": n.latex()} for n in arch.normalizers),
        closed_form_latex=effective_closed_form_latex(arch),
        closed_form_text="" if arch.is_plain else closed_form_result(arch).to_text(),
        method=_method(arch),
        # the plain model's table is naming.notation's (Q_i, K_i, V_i); a variant's has every block and shape
        parameter_blocks=() if arch.is_plain else _parameter_names(arch),
    )


def _unavailable(title: str, key: str, err: Exception) -> Section:
    """A section that says why it was not computed; one over the memory limit says it was skipped."""
    skipped = isinstance(err, ResourceLimitError)
    note = f"skipped: over the memory limit: {err}" if skipped else f"not computed: {err}"
    return Section(title, key, {"error": note, "skipped": skipped}, note, latex_escape(note), note)


def full_report(arch: Architecture, progress: bool = False, max_memory=None) -> ArchitectureReport:
    """The whole report of ``symattn report``: the summary, then every analysis as a section.

    After :func:`architecture_report` come, in order, the decay spectrum
    (:func:`~symattn.spectrum.decay_spectrum`), the numerical sensitivity
    (:func:`~symattn.numeric.sensitivity`), identifiability
    (:func:`~symattn.identify.identify`) and observability under single
    collapses (:func:`~symattn.observe.exceptional_fibers`, with the
    dependency graph as a figure): the analyses of the registry
    (:mod:`symattn.analyses`) that make a section, each built by its
    :class:`~symattn.analyses.ReportUse`.  A section that cannot be computed says
    why and the report goes on: one estimated over the memory limit says
    ``skipped: over the memory limit: ...``.  When the spectrum has no exact
    engine (Taylor coefficients outside Q), the report ends after it.

    Parameters
    ----------
    arch : Architecture
    progress : bool
        Show progress bars on a terminal.
    max_memory : int or str, optional
        Memory every step may use, e.g. ``"4G"`` (default: the limit set by
        :func:`~symattn.limits.memory_limit_set`, else the machine's default).

    Returns
    -------
    ArchitectureReport
        With the sections ``spectrum``, ``sensitivity``, ``identification``
        and ``observability`` (their keys in ``to_json()``).

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> report = full_report(Architecture.uniform(layers=1, width=1))
    >>> [section.key for section in report.sections]
    ['spectrum', 'sensitivity', 'identification', 'observability']
    >>> report.to_json()["identification"]["dimension"]["certified"]
    True
    >>> skipped = full_report(Architecture.uniform(layers=1, width=1), max_memory="1K")
    >>> skipped.to_json()["spectrum"]["skipped"], skipped.to_json()["sensitivity"]["skipped"]
    (True, True)
    """
    from .limits import progress_bar

    uses = [entry.report for entry in registered("report")]
    # one bar over the sections, naming the one running (each analysis draws its own bar below it)
    with memory_limit_set(max_memory), progress_bar(progress, total=len(uses), desc="report",
                                                    unit="section") as bar:
        bar.set_postfix_str(uses[0].progress)
        return _full_report(arch, progress, uses, lambda name: (bar.update(), bar.set_postfix_str(name)))


def _full_report(arch: Architecture, progress: bool, uses, section=lambda name: None) -> ArchitectureReport:
    report = architecture_report(arch)
    sections, results = [], {}
    for number, use in enumerate(uses):
        if number:
            section(use.progress)
        built, results[use.key], last = resolve(use.build)(arch, progress, results)
        sections.append(built)
        if last:
            break
    return report.with_sections(*sections)


def spectrum_section(arch: Architecture, progress: bool, results: dict):
    """The report's section ``spectrum``: :func:`~symattn.spectrum.decay_spectrum`.

    Returns ``(section, spectrum or None, last)``; ``last`` is true when the
    normalizer has no exact engine (Taylor coefficients outside Q): the report
    then ends with this section.
    """
    use = REGISTRY["spectrum"].report
    try:
        spectrum = decay_spectrum(arch, progress=progress)
        return Section.from_result(use.title, use.key, spectrum, markdown=spectrum.to_markdown()), spectrum, False
    except ResourceLimitError as err:
        return _unavailable(use.title, use.key, err), None, False
    except DomainError as err:  # e.g. Taylor coefficients in Q(log 2): no exact engine
        note = f"not computed exactly: {err}"
        return Section(use.title, use.key, {"error": note}, note, latex_escape(note), note), None, True


def sensitivity_section(arch: Architecture, progress: bool, results: dict):
    """The report's section ``sensitivity``: :func:`~symattn.numeric.sensitivity`, beside the spectrum.

    Returns ``(section, result or None, False)``; skipped when the spectrum
    (``results["spectrum"]``) was not computed.
    """
    use = REGISTRY["sensitivity"].report
    spectrum = results.get(REGISTRY["spectrum"].report.key)
    if spectrum is None:
        note = "skipped: it compares with the decay spectrum, which is over the memory limit (see above)"
        return Section(use.title, use.key, {"error": note, "skipped": True}, note, latex_escape(note),
                       note), None, False
    try:
        numbers = sensitivity(arch, spectrum=spectrum)
        return replace(Section.from_result(use.title, use.key, numbers, markdown=numbers.to_markdown()),
                       figures=(Figure("sensitivity", numbers.plot, numbers.caption(),
                                       numbers.caption_latex()),)), numbers, False
    except SymattnError as err:  # e.g. more digits than the limit: say so, keep the report
        return _unavailable(use.title, use.key, err), None, False


def identification_section(arch: Architecture, progress: bool, results: dict):
    """The report's section ``identification``: :func:`~symattn.identify.identify`.

    Returns ``(section, report or None, False)``.
    """
    use = REGISTRY["identify"].report
    try:
        identification = identify(arch, progress=progress)
        return Section(use.title, use.key, identification.to_json(), identification.to_markdown(level=3),
                       identification._latex_body(heading="subsubsection"), identification.to_text()), \
            identification, False
    except SymattnError as err:
        return _unavailable(use.title, use.key, err), None, False


def observability_section(arch: Architecture, progress: bool, results: dict):
    """The report's section ``observability``: :func:`~symattn.observe.exceptional_fibers` under single collapses.

    Returns ``(section, fibers or None, False)``; the section's figure is the dependency graph.
    """
    use = REGISTRY["observe"].report
    try:
        fibers = exceptional_fibers(arch, max_events=1, progress=progress)
        return replace(Section.from_result(use.title, use.key, fibers, markdown=fibers.to_markdown()),
                       figures=(_graph_figure(arch),)), fibers, False
    except SymattnError as err:  # e.g. lightning attention or one token: no verdicts to prove
        return _unavailable(use.title, use.key, err), None, False


def _graph_figure(arch: Architecture) -> Figure:
    """The dependency graph after each score collapse ``scores:i``, one panel each, coloured by verdict."""
    graph = dependency_graph(arch)
    verdicts = [propagate(graph, [score_collapse(i)]) for i in range(1, arch.layers + 1)]
    caption = ("The dependency graph after each score collapse (one panel per event): an arrow from u to v means "
               "that v is computed from u. Each box shows the node's name (the names of the notation table), its "
               "symbol and the state the event forces; the effective blocks are coloured by the verdict of the "
               "observability table, and light blue boxes are nodes that are not blocks.")
    return Figure("dependency_graph", lambda path: draw_panels(verdicts, path), caption)
