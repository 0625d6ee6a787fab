"""Numerical sensitivity: the native Jacobian in mpmath and float64, and its decay slopes.

The exact decay spectrum (:func:`symattn.spectrum.decay_spectrum`) says that
the singular values of the native Jacobian ``J(eps)`` along the collapse curve
``Q_i = eps Qt_i, K_i = eps Kt_i, V_i = Vt_i`` behave as
``sigma_j(eps) ~ c_j eps^e_j`` (MATH.md, sections 5-6).  This module measures
the same exponents a second, independent way: it evaluates ``J(eps)`` with
forward-mode dual numbers (:class:`NumericJetDomain`, one pass of
:func:`symattn.model.forward` per input, no finite differences) at several
``eps``, takes singular values, and fits the slopes of ``log sigma_j`` against
``log eps``.  mpmath at enough digits recovers the exact exponents; float64
loses the deep layers, whose singular values sink below its round-off.

Examples
--------
>>> from symattn.model import Architecture
>>> from symattn.numeric import sensitivity
>>> result = sensitivity(Architecture.uniform(layers=1, width=2, rank=1, tokens=3))
>>> result.exponents
(0, 0, 0, 0, 1, 1, 1)
>>> [round(s) for s in result.mpmath_slopes[:result.exact_rank]]
[0, 0, 0, 0, 1, 1, 1]
>>> result.recovered
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from .algebra.numeric_jets import NumericJetDomain, as_fraction, to_float, to_mpf
from ._format import (
    FormattedResult, cell_text, fixed, latex_longtable, latex_method, markdown_method, markdown_table,
)
from .errors import BankError, DomainError, ShapeError, SymattnError
from .jacobian import random_real_point, real_jacobian, validate_bank
from .model import Architecture, Parameters, require_architecture, require_seed

__all__ = [
    "NumericJetDomain",
    "numeric_jacobian",
    "singular_values",
    "fit_slopes",
    "sensitivity",
    "Sensitivity",
    "DIGIT_MARGIN",
    "FLOAT64_FLOOR",
]

#: Extra decimal digits kept by mpmath above the deepest expected singular value.
DIGIT_MARGIN = 30

#: A float64 singular value below this fraction of the largest one is round-off.
FLOAT64_FLOOR = 1e-16

#: The default ``eps`` values start at ``10^-FIRST_DECADE``: at ``eps = 0.1`` singular
#: values of neighbouring exponents can still cross (pre-asymptotic), which biases slopes.
FIRST_DECADE = 2

#: Default number of ``eps`` values, one per decade.
DEFAULT_DECADES = 4

#: The automatic precision never exceeds this many digits (fewer decades instead).
MAX_AUTO_DIGITS = 640



# -- the Jacobian -----------------------------------------------------------------------
def _as_flat_parameters(arch: Architecture, params) -> list:
    if isinstance(params, Parameters):
        units = arch.units()  # one per head; the layers themselves with one head per layer
        if params.layers != len(units):
            what = "layers" if len(units) == arch.layers else "heads"
            raise ShapeError(f"parameters have {params.layers} {what}, the architecture {len(units)}")
        given = arch.block_map(params)
        flat = []
        for key, expected in arch.blocks():
            block = given[key]
            rows = block.tolist() if isinstance(block, (sp.MatrixBase, np.ndarray)) else block
            shape = np.shape(np.array(rows, dtype=object))
            if tuple(shape) != expected:
                raise ShapeError(f"{arch.block_label(key)} must be {expected[0]} x {expected[1]}, got shape {shape}")
            flat.extend(v for row in rows for v in row)
        return flat
    flat = list(np.asarray(params, dtype=object).ravel())
    if len(flat) != arch.param_count:
        raise ShapeError(f"expected {arch.param_count} parameter values in parameter_index() order "
                         f"(or a Parameters object), got {len(flat)}")
    return flat


def numeric_jacobian(arch: Architecture, params_tilde, bank, eps, base: str = "float64", dps: int = 50,
                     curve=None):
    """The native Jacobian ``J(eps)`` along ``curve``, by default at ``Q_i = eps Qt_i, K_i = eps Kt_i, V_i = Vt_i``.

    Forward-mode: one pass of :func:`symattn.model.forward` over
    :class:`NumericJetDomain` per input, with every native parameter seeded
    with its unit tangent (:func:`symattn.jacobian.real_jacobian`).  No
    finite differences.

    Parameters
    ----------
    arch : Architecture
    params_tilde : Parameters or sequence
        The base point ``Qt_i, Kt_i, Vt_i``: a :class:`~symattn.model.Parameters`
        or a flat list in :meth:`~symattn.model.Architecture.parameter_index`
        order; entries are ints, Fractions, decimal strings, floats or sympy numbers.
    bank : sequence of matrices
        Inputs ``X`` (``d_0 x t`` each).
    eps : number
        The curve parameter (a decimal string or Fraction is read exactly).
    base : {"float64", "mpmath"}
    dps : int
        Decimal digits for mpmath.
    curve : Curve, optional
        Default :func:`symattn.curves.collapse`; any curve of
        :mod:`symattn.curves` (input scaling, one layer, polynomial blocks).

    Returns
    -------
    numpy.ndarray
        Shape ``(d_l * t * len(bank), P)``: rows run over the bank, then the
        output entries row-major; columns in ``parameter_index()`` order.
        dtype float64, or object (``mpf``) for mpmath.

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> arch = Architecture.uniform(layers=1, width=1, rank=1, tokens=2, normalizer="softmax")
    >>> J = numeric_jacobian(arch, [1, 1, 1], [[[1, 0]]], eps="0.5")
    >>> J.shape
    (2, 3)
    >>> J.round(6).tolist()     # columns Q, K, V at Q = K = 0.5, V = 1
    [[0.123067, 0.123067, 0.562177], [0.0, 0.0, 0.5]]

    Here the output is ``(sigma(QK), 1/2)`` with ``sigma`` the logistic
    function, so ``d/dQ = K sigma (1 - sigma) = 0.5 * 0.562177 * 0.437823``.
    """
    arch = require_architecture(arch)
    return real_jacobian(arch, _as_flat_parameters(arch, params_tilde), bank, eps, curve, base, dps)


def singular_values(J, base: str = "float64", dps: int = 50) -> list:
    """Singular values of ``J``, largest first (numpy SVD, or mpmath ``svd_r`` at ``dps`` digits).

    Examples
    --------
    >>> singular_values([[3, 0], [0, 4]])
    [4.0, 3.0]
    >>> [mpmath.nstr(s, 12) for s in singular_values([["1/3", 0], [0, "1e-40"]], "mpmath", 60)]
    ['0.333333333333', '1.0e-40']
    """
    if base == "float64":
        values = np.linalg.svd(np.asarray(J, dtype=np.float64), compute_uv=False)
        return sorted((float(v) for v in values), reverse=True)
    if base != "mpmath":
        raise DomainError(f"base must be 'float64' or 'mpmath', got {base!r}")
    with mpmath.workdps(dps):
        rows = [[to_mpf(v, dps) for v in row] for row in np.asarray(J, dtype=object).tolist()]
        values = mpmath.svd_r(mpmath.matrix(rows), compute_uv=False)
        return sorted((abs(values[i]) for i in range(len(values))), reverse=True)


def fit_slopes(eps_values, sigmas) -> list:
    """Least-squares slopes of ``log10 sigma_j`` against ``log10 eps``, one per index ``j``.

    ``sigmas[e][j]`` is the ``j``-th largest singular value at ``eps_values[e]``.
    A slope is ``nan`` when some ``sigma_j`` is zero.

    Examples
    --------
    >>> [round(s, 9) for s in fit_slopes([0.1, 0.01, 0.001], [[2, 0.3], [2, 0.003], [2, 3e-5]])]
    [0.0, 2.0]
    """
    x = np.array([float(mpmath.log10(to_mpf(e, 30))) for e in eps_values])
    if len(x) < 2:
        raise SymattnError("fitting slopes needs at least two eps values")
    count = min(len(row) for row in sigmas)
    slopes = []
    for j in range(count):
        column = [sigmas[e][j] for e in range(len(x))]
        if any(not v > 0 for v in column):
            slopes.append(float("nan"))
            continue
        y = np.array([float(mpmath.log10(v)) for v in column])
        slope, _ = np.polyfit(x, y, 1)
        slopes.append(float(slope))
    return slopes


# -- the sensitivity report -------------------------------------------------------------
def _log10(value) -> float:
    return float(mpmath.log10(value)) if value > 0 else float("-inf")


def _plot_log10(value) -> float:
    return float(mpmath.log10(value)) if value > 0 else float("nan")


def _json_number(value):
    value = float(value)
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class Sensitivity(FormattedResult):
    """Singular values of ``J(eps)`` in mpmath and float64 and their slopes, against the exact spectrum.

    Attributes
    ----------
    architecture : dict
    curve : str
    eps : tuple of float
        The ``eps`` values, largest first.
    dps : int
        mpmath digits.
    seed : int
        Seed of the base point and the bank.
    bank : int
        Number of inputs.
    params : int
        Number of native parameters.
    mpmath_singular_values, float64_singular_values : tuple of tuple
        Per ``eps``, every singular value, largest first (``mpf`` / float).
    mpmath_slopes, float64_slopes : tuple of float
        Fitted slope of ``log10 sigma_j`` against ``log10 eps`` per index ``j``.
    exponents : tuple of int
        The exact decay exponents, with multiplicity, ascending (so index ``j``
        matches the ``j``-th largest singular value).
    exact_rank, kernel : int
        From the exact spectrum.
    recovered : bool
        Whether the rounded mpmath slopes equal the exact exponents for every
        nonzero singular value (the kernel ones are excluded).
    mpmath_ranks : tuple of int
        mpmath numerical rank per ``eps`` with tolerance
        ``sigma_max * 10^-(dps - DIGIT_MARGIN / 2)``.
    float64_lost : tuple of int
        Exponents (with multiplicity) that float64 does not resolve over the
        ``eps`` range: its slope is off by more than 0.5, or at the smallest
        ``eps`` its singular value is below ``FLOAT64_FLOOR * sigma_max`` or
        differs from mpmath's by more than a factor 2.
    float64_resolved : tuple of int
        Per ``eps``, how many of the nonzero singular values float64 gets
        within a factor 2 of mpmath.
    float64_rank_estimate : int
        ``numpy.linalg.matrix_rank`` of the float64 ``J`` at ``float64_rank_eps``
        (default tolerance ``sigma_max * max(rows, P) * 2.2e-16``): an estimate.
    float64_rank_eps : float
    exact_spectrum : dict
        Exponent -> multiplicity.
    unresolved : int
        Directions the exact computation left at valuation ``>= truncation``.
    method : str

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> result = sensitivity(Architecture.uniform(layers=1), eps_values=["0.01", "0.001"])
    >>> print(str(result).splitlines()[-1])
    float64 rank estimate at eps = 0.1 (numpy default tolerance): 7 (exact 7)
    >>> result.to_json()["exact_spectrum"], result.to_json()["float64_lost"]
    ({'0': 4, '1': 3}, [])
    >>> print(result.to_latex().splitlines()[0])
    \\begin{longtable}{rrrr}
    """

    architecture: dict
    curve: str
    eps: tuple
    dps: int
    seed: int
    bank: int
    params: int
    mpmath_singular_values: tuple
    float64_singular_values: tuple
    mpmath_slopes: tuple
    float64_slopes: tuple
    exponents: tuple
    exact_rank: int
    kernel: int
    recovered: bool
    mpmath_ranks: tuple
    float64_lost: tuple
    float64_resolved: tuple
    float64_rank_estimate: int
    float64_rank_eps: float
    exact_spectrum: dict
    unresolved: int = 0
    method: str = field(default="")

    def to_json(self) -> dict:
        """A JSON-ready dict (mpmath singular values as 20-digit strings)."""
        return {
            "architecture": self.architecture,
            "curve": self.curve,
            "eps": list(self.eps),
            "dps": self.dps,
            "seed": self.seed,
            "bank": self.bank,
            "params": self.params,
            "exact_rank": self.exact_rank,
            "kernel": self.kernel,
            "exact_spectrum": {str(e): m for e, m in self.exact_spectrum.items()},
            "exponents": list(self.exponents),
            "unresolved": self.unresolved,
            "mpmath_singular_values": [[mpmath.nstr(v, 20) for v in row] for row in self.mpmath_singular_values],
            "float64_singular_values": [list(row) for row in self.float64_singular_values],
            "mpmath_slopes": [_json_number(s) for s in self.mpmath_slopes],
            "float64_slopes": [_json_number(s) for s in self.float64_slopes],
            "recovered": self.recovered,
            "mpmath_ranks": list(self.mpmath_ranks),
            "float64_lost": list(self.float64_lost),
            "float64_resolved": list(self.float64_resolved),
            "float64_rank_estimate": self.float64_rank_estimate,
            "float64_rank_estimate_eps": self.float64_rank_eps,
            "float64_rank_estimate_note": "numpy.linalg.matrix_rank with its default tolerance: an estimate",
            "method": self.method,
        }

    def _rows(self):
        rows = []
        for j in range(len(self.mpmath_slopes)):
            exact = self.exponents[j] if j < self.exact_rank else None
            rows.append((j + 1, exact, self.mpmath_slopes[j],
                         self.float64_slopes[j] if j < len(self.float64_slopes) else float("nan")))
        return rows

    def _summary(self) -> list[str]:
        lost = ", ".join(str(e) for e in self.float64_lost) or "none"
        return [
            f"curve: {self.curve}",
            f"eps = {', '.join(f'{e:g}' for e in self.eps)}; mpmath {self.dps} digits; bank {self.bank} inputs; "
            f"{self.params} parameters",
            f"exact rank {self.exact_rank}, kernel {self.kernel}; mpmath ranks per eps "
            f"{', '.join(map(str, self.mpmath_ranks))}; slopes recovered: {cell_text(self.recovered)}",
            f"float64 loses exponents: {lost}; float64 resolves per eps {', '.join(map(str, self.float64_resolved))}",
            f"float64 rank estimate at eps = {self.float64_rank_eps:g} (numpy default tolerance): "
            f"{self.float64_rank_estimate} (exact {self.exact_rank})",
        ]

    def __str__(self) -> str:
        lines = [f"numerical sensitivity along {self.curve}",
                 f"eps = {', '.join(f'{e:g}' for e in self.eps)}; mpmath {self.dps} digits; "
                 f"bank {self.bank} inputs; {self.params} parameters",
                 f"{'j':>4} {'exact':>7} {'mpmath':>9} {'float64':>9}"]
        for j, exact, slope, slope64 in self._rows():
            label = "kernel" if exact is None else str(exact)
            lines.append(f"{j:>4} {label:>7} {slope:>9.3f} {slope64:>9.3f}")
        lines.append(f"exact rank {self.exact_rank}, kernel {self.kernel}; mpmath ranks per eps "
                     f"{', '.join(map(str, self.mpmath_ranks))}; slopes recovered: {cell_text(self.recovered)}")
        lost = ", ".join(str(e) for e in self.float64_lost) or "none"
        lines.append(f"float64 loses exponents: {lost}; float64 resolves per eps "
                     f"{', '.join(map(str, self.float64_resolved))}")
        lines.append(f"float64 rank estimate at eps = {self.float64_rank_eps:g} (numpy default tolerance): "
                     f"{self.float64_rank_estimate} (exact {self.exact_rank})")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A Markdown table of the exact exponent and the mpmath and float64 slopes per singular value.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> result = sensitivity(Architecture.uniform(layers=1), eps_values=["0.01", "0.001"])
        >>> print("\\n".join(result.to_markdown().splitlines()[:4]))
        | j | exact e_j | mpmath slope | float64 slope |
        |---:|---:|---:|---:|
        | 1 | 0 | 0.000 | 0.000 |
        | 2 | 0 | 0.000 | 0.000 |
        """
        rows = []
        for j, exact, slope, slope64 in self._rows():
            rows.append((j, "kernel" if exact is None else exact, fixed(slope), fixed(slope64)))
        lines = [markdown_table(("j", "exact e_j", "mpmath slope", "float64 slope"), rows, align="rrrr"), ""]
        lines += [f"- {line}" for line in self._summary()] + [markdown_method(self.method)]
        return "\n".join(lines)

    def _table_rows(self, kernel_label: str):
        out = []
        for j, exact, slope, slope64 in self._rows():
            out.append(f"{j} & {kernel_label if exact is None else exact} & {fixed(slope, missing='--')} & "
                       f"{fixed(slope64, missing='--')} \\\\")
        return out

    def _latex_body(self) -> str:
        """A LaTeX table: exact exponent against mpmath and float64 slopes per singular value, and the method."""
        lost = ", ".join(str(e) for e in self.float64_lost) or "none"
        eps = ", ".join(_latex_number(e) for e in self.eps)
        table = latex_longtable(
            [row.removesuffix(" \\\\").split(" & ") for row in self._table_rows("kernel")], "rrrr",
            header=(r"$j$", r"exact $e_j$", "mpmath slope", "float64 slope"))
        notes = [
            rf"$\varepsilon = {eps}$; mpmath {self.dps} digits; bank of {self.bank} inputs; "
            rf"{self.params} parameters.",
            rf"Exact rank {self.exact_rank}, kernel {self.kernel}; mpmath ranks per $\varepsilon$: "
            rf"{', '.join(map(str, self.mpmath_ranks))}; slopes recovered: {'yes' if self.recovered else 'no'}.",
            rf"float64 loses the exponents {lost}; it resolves {', '.join(map(str, self.float64_resolved))} "
            rf"singular values per $\varepsilon$; its rank estimate at $\varepsilon = {self.float64_rank_eps:g}$ "
            rf"is {self.float64_rank_estimate} (exact {self.exact_rank}).",
        ]
        items = "\n".join(rf"\item {note}" for note in notes)
        return "\n".join([table, "\\begin{itemize}\\setlength{\\itemsep}{0pt}\\small", items, "\\end{itemize}",
                          latex_method(self.method)])

    def _latex_math(self) -> str:
        rows = self._table_rows(r"\text{kernel}")
        return "\n".join([
            r"\begin{array}{rrrr}",
            r"j & e_j\ (\text{exact}) & \text{mpmath slope} & \text{float64 slope} \\ \hline",
            *rows,
            r"\end{array}",
        ])

    def caption(self) -> str:
        """The figure's caption (plain text), for reports.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> result = sensitivity(Architecture.uniform(layers=1), eps_values=["0.01", "0.001"])
        >>> result.caption().split(";")[0]
        'Singular values sigma_j of the native Jacobian J(eps) along the collapse curve, log-log'
        """
        return ("Singular values sigma_j of the native Jacobian J(eps) along the collapse curve, log-log; "
                f"left: mpmath with {self.dps} digits, right: float64. The colour is the exact decay exponent "
                "e_j of each singular value (slope of its line); grey lines are kernel directions, the dotted "
                "line is the float64 round-off floor (1e-16 of the largest singular value), below which float64 "
                "returns noise")

    def caption_latex(self) -> str:
        """:meth:`caption` in LaTeX text mode, for the report's figure.

        Examples
        --------
        >>> from symattn.model import Architecture
        >>> result = sensitivity(Architecture.uniform(layers=1), eps_values=["0.01", "0.001"])
        >>> result.caption_latex().split(";")[0]
        'Singular values $\\\\sigma_j$ of the native Jacobian $J(\\\\varepsilon)$ along the collapse curve, log-log'
        """
        return (r"Singular values $\sigma_j$ of the native Jacobian $J(\varepsilon)$ along the collapse curve, "
                f"log-log; left: mpmath with {self.dps} digits, right: float64. The colour is the exact decay "
                r"exponent $e_j$ of each singular value (the slope of its line); grey lines are kernel directions, "
                r"the dotted line is the float64 round-off floor ($10^{-16}$ of the largest singular value), below "
                "which float64 returns noise.")

    def plot(self, path):
        """Draw ``log10 sigma_j`` against ``log10 eps``, mpmath and float64 side by side, and save it to ``path``.

        The format follows the extension of ``path`` (``.png``, ``.pdf``,
        ``.svg``).  Left panel mpmath, right panel float64 with its round-off
        floor (dotted); one colour per exact exponent ``e_j``, explained in one
        legend under the panels; kernel directions thin grey.  Labels and titles are matplotlib
        mathtext.

        Examples
        --------
        >>> import tempfile, os
        >>> from symattn.model import Architecture
        >>> result = sensitivity(Architecture.uniform(layers=1), eps_values=["0.1", "0.01"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = result.plot(os.path.join(folder, "slopes.png"))
        ...     os.path.getsize(path) > 1000
        True
        >>> figure = result.figure()
        >>> [ax.get_title() for ax in figure.axes]
        ['mpmath, 32 digits; kernel below the axis', 'float64']
        >>> [text.get_text() for text in figure.legends[0].get_texts()]
        ['$e_j = 0$', '$e_j = 1$', 'kernel directions', 'float64 round-off floor $10^{-16}\\\\,\\\\sigma_1$']
        """
        from pathlib import Path

        figure = self.figure()
        figure.savefig(path, format=(Path(str(path)).suffix.lstrip(".").lower() or "png"), dpi=150)
        return path

    def figure(self):
        """The figure :meth:`plot` saves (a matplotlib ``Figure`` on an Agg canvas; no display needed)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        figure = Figure(figsize=(7.5, 4.0), layout="constrained")
        FigureCanvasAgg(figure)
        left, right = figure.subplots(1, 2, sharex=True, sharey=True)
        x = [math.log10(e) for e in self.eps]
        cmap = _colour_map()
        count = len(self.mpmath_slopes)
        distinct = sorted(set(self.exponents[:self.exact_rank]))
        colour_of = {e: cmap(k / max(1, len(distinct) - 1) * 0.9) for k, e in enumerate(distinct)}
        floor = [_plot_log10(FLOAT64_FLOOR * row[0]) for row in self.float64_singular_values]
        deepest = min(self.exact_rank, count) - 1
        lows = [_plot_log10(row[deepest]) for row in self.mpmath_singular_values] if deepest >= 0 else []
        lows = [v for v in lows + floor if math.isfinite(v)]
        bottom = min(lows) - 5 if lows else None
        for axes, values, title in ((left, self.mpmath_singular_values, f"mpmath, {self.dps} digits"),
                                    (right, self.float64_singular_values, "float64")):
            kernel = [y for row in values for y in map(_plot_log10, row[self.exact_rank:]) if math.isfinite(y)]
            kernel_label = "kernel directions"
            if bottom is not None and kernel and max(kernel) < bottom:
                title += "; kernel below the axis"
            seen = set()
            kernel_labelled = False
            for j in range(count):
                y = [_plot_log10(row[j]) if j < len(row) else float("nan") for row in values]
                if j < self.exact_rank:
                    e = self.exponents[j]
                    axes.plot(x, y, "-", color=colour_of[e], marker="o", markersize=3, linewidth=1.4,
                              label=f"$e_j = {e}$" if e not in seen else None)
                    seen.add(e)
                else:
                    axes.plot(x, y, "-", color="0.7", linewidth=0.7,
                              label=kernel_label if not kernel_labelled else None)
                    kernel_labelled = True
            if axes is right:
                axes.plot(x, floor, ":", color="black", linewidth=1.5, zorder=5,
                          label=r"float64 round-off floor $10^{-16}\,\sigma_1$")
            axes.set_title(title)
            axes.set_xlabel(r"$\log_{10} \varepsilon$")
            axes.grid(True, color="0.92")
        left.set_ylabel(r"$\log_{10} \sigma_j(\varepsilon)$")
        figure.suptitle(r"Singular values of $J(\varepsilon)$ near query/key collapse")
        if bottom is not None:
            left.set_ylim(bottom=bottom)
        # one legend under both panels (it covers no curve): the exponents' colours, then the grey and dotted lines
        entries = {}
        for axes in (left, right):
            for handle, label in zip(*axes.get_legend_handles_labels()):
                entries.setdefault(label, handle)
        figure.legend(list(entries.values()), list(entries), loc="outside lower center", ncol=min(4, len(entries)),
                      fontsize=9, title=r"colour: exact decay exponent $e_j$ (the slope of its line)",
                      title_fontsize=9, frameon=False)
        return figure


def _latex_number(value: float) -> str:
    """A float for LaTeX math: ``10^{-3}`` for a power of ten, else ``1.5 \\cdot 10^{-3}`` or ``0.25``.

    Examples
    --------
    >>> _latex_number(1e-05), _latex_number(0.01), _latex_number(0.25), _latex_number(1.5e-07)
    ('10^{-5}', '10^{-2}', '0.25', '1.5 \\\\cdot 10^{-7}')
    """
    if value > 0 and abs(math.log10(value) - round(math.log10(value))) < 1e-12 and value != 1:
        return f"10^{{{round(math.log10(value))}}}"
    text = f"{value:g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else rf"{mantissa} \cdot {power}"


def _colour_map():
    from matplotlib import colormaps

    return colormaps["viridis"]


def _default_eps(deepest: int, dps) -> list[Fraction]:
    """``10^-FIRST_DECADE .. 10^-(FIRST_DECADE + m - 1)``, ``m <= DEFAULT_DECADES``, fitting the digits."""
    budget = MAX_AUTO_DIGITS if dps == "auto" else int(dps)
    last = FIRST_DECADE + DEFAULT_DECADES - 1
    if deepest > 0:
        last = min(last, (budget - DIGIT_MARGIN) // deepest)
    if last < FIRST_DECADE + 1:
        raise SymattnError(
            f"dps={dps} leaves fewer than 2 decades of eps for the deepest exponent {deepest}: give dps >= "
            f"{(FIRST_DECADE + 1) * deepest + DIGIT_MARGIN}, dps='auto', or eps_values"
        )
    return [Fraction(1, 10 ** k) for k in range(FIRST_DECADE, last + 1)]


def sensitivity(arch: Architecture, eps_values=None, seed: int = 0, bank=None, dps="auto",
                params_tilde=None, spectrum=None) -> Sensitivity:
    """Singular values of ``J(eps)`` in mpmath and float64, their slopes, and the exact exponents.

    Parameters
    ----------
    arch : Architecture
    eps_values : sequence, optional
        Default ``10^-2, 10^-3, 10^-4, 10^-5``, fewer (at least 2) when the
        deepest exact exponent ``e_max`` would need more than 640 digits (or
        more than a given ``dps``).  The range starts at ``10^-2`` because at
        ``eps = 0.1`` singular values of neighbouring exponents may not yet be
        separated, which biases the slopes by up to ~0.9 for some base points.
        Decimal strings and Fractions are read exactly.
    seed : int
        Seed of the random base point (standard normal floats, read exactly)
        and of the random bank.
    bank : int or list of matrices, optional
        Default: a random bank of the size the exact spectrum certified as
        separating (:func:`symattn.spectrum.decay_spectrum`); an int is a
        random bank of that size.
    dps : "auto" or int
        mpmath digits; ``"auto"`` is ``e_max * log10(1 / eps_min) + 30``, so
        that the smallest nonzero singular value stays 30 digits above the
        working precision.
    params_tilde : Parameters or sequence, optional
        The base point ``Qt_i, Kt_i, Vt_i`` instead of a random one.
    spectrum : Spectrum, optional
        A precomputed :func:`~symattn.spectrum.decay_spectrum` of ``arch``.

    Returns
    -------
    Sensitivity

    Examples
    --------
    >>> from symattn.model import Architecture
    >>> result = sensitivity(Architecture.uniform(layers=1, width=2, rank=1, tokens=3))
    >>> result.eps, result.dps
    ((0.01, 0.001, 0.0001, 1e-05), 35)
    >>> result.recovered, result.float64_lost, result.exact_rank, result.float64_rank_estimate
    (True, (), 7, 7)
    """
    from .spectrum import decay_spectrum

    arch = require_architecture(arch)
    seed = require_seed(seed)
    if dps != "auto" and (isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or dps < 10):
        raise SymattnError(f"dps must be 'auto' or an integer >= 10, got {dps!r}")
    if spectrum is None:
        spectrum = decay_spectrum(arch, progress=False, seed=int(seed))
    from .curves import collapse

    if spectrum.curve != collapse().describe(arch.layers) or spectrum.params != arch.param_count:
        raise SymattnError(
            f"the given spectrum ({spectrum.curve}, {spectrum.params} parameters) is not the collapse-curve "
            f"spectrum of this architecture ({arch.param_count} parameters); pass decay_spectrum(arch)"
        )
    exponents = tuple(e for e, m in sorted(spectrum.exponents.items()) for _ in range(m))
    deepest = max(exponents, default=0)

    if eps_values is None:
        eps_exact = _default_eps(deepest, dps)
    else:
        eps_exact = []
        for e in eps_values:
            exact = as_fraction(e)
            if exact is None:
                exact = Fraction(str(to_float(e))) if isinstance(e, (float, np.floating)) \
                    else Fraction(mpmath.nstr(to_mpf(e, 50), 40))
            if exact <= 0:
                raise SymattnError(f"eps values must be positive, got {e!r}")
            eps_exact.append(exact)
        if len(eps_exact) < 2:
            raise SymattnError("give at least two eps values to fit slopes")
        eps_exact = sorted(set(eps_exact), reverse=True)
    smallest = min(eps_exact)
    needed = math.ceil(deepest * max(0.0, -math.log10(smallest)) + DIGIT_MARGIN)
    digits = needed if dps == "auto" else int(dps)
    if digits < needed - DIGIT_MARGIN // 2:
        raise SymattnError(
            f"dps={dps} is too few for eps down to {float(smallest):g}: the deepest exponent {deepest} puts "
            f"singular values near 1e-{needed - DIGIT_MARGIN}; give dps >= {needed - DIGIT_MARGIN // 2} "
            "or dps='auto'"
        )

    if bank is None or (isinstance(bank, (int, np.integer)) and not isinstance(bank, bool)):
        size = spectrum.bank if bank is None else int(bank)
        if size < 1:
            raise BankError(f"bank size must be at least 1, got {size}")
        random_params, inputs = random_real_point(arch, int(seed), size)
    else:
        inputs = validate_bank(arch, bank)
        random_params, _ = random_real_point(arch, int(seed), 0)
    point = random_params if params_tilde is None else params_tilde

    sigmas_mp, sigmas_64, ranks_mp = [], [], []
    rank_eps, rank_estimate = Fraction(1, 10), None
    for e in eps_exact:
        J_mp = numeric_jacobian(arch, point, inputs, e, "mpmath", digits)
        J_64 = numeric_jacobian(arch, point, inputs, e, "float64")
        s_mp = singular_values(J_mp, "mpmath", digits)
        s_64 = singular_values(J_64, "float64")
        sigmas_mp.append(tuple(s_mp))
        sigmas_64.append(tuple(s_64))
        with mpmath.workdps(digits):
            tolerance = s_mp[0] * mpmath.mpf(10) ** (-(digits - DIGIT_MARGIN // 2))
            ranks_mp.append(sum(1 for s in s_mp if s > tolerance))
        if e == rank_eps:
            rank_estimate = int(np.linalg.matrix_rank(J_64))
    if rank_estimate is None:
        rank_estimate = int(np.linalg.matrix_rank(numeric_jacobian(arch, point, inputs, rank_eps, "float64")))

    eps_float = [float(e) for e in eps_exact]
    slopes_mp = fit_slopes(eps_exact, sigmas_mp)
    slopes_64 = fit_slopes(eps_exact, sigmas_64)
    rank = spectrum.rank
    nonzero = min(rank, len(slopes_mp))
    recovered = nonzero == rank and all(round(slopes_mp[j]) == exponents[j] for j in range(rank))

    def agrees(row64, rowmp, j):
        if j >= len(row64) or not row64[j] > 0:
            return False
        return abs(math.log10(row64[j]) - _log10(rowmp[j])) <= math.log10(2)

    lost = []
    last64, lastmp = sigmas_64[-1], sigmas_mp[-1]
    for j in range(nonzero):
        slope_off = not abs(slopes_64[j] - exponents[j]) <= 0.5
        below_floor = j >= len(last64) or last64[j] < FLOAT64_FLOOR * last64[0]
        if slope_off or below_floor or not agrees(last64, lastmp, j):
            lost.append(exponents[j])
    resolved = tuple(sum(1 for j in range(nonzero) if agrees(r64, rmp, j))
                     for r64, rmp in zip(sigmas_64, sigmas_mp))
    method = (f"forward-mode jets (one forward pass per input, no finite differences) at "
              f"Q_i = eps Qt_i, K_i = eps Kt_i, V_i = Vt_i with "
              f"{'a random standard normal' if params_tilde is None else 'the given'} point and "
              f"{'a random standard normal' if bank is None or isinstance(bank, (int, np.integer)) else 'the given'}"
              f" bank (seed {seed}); singular values by mpmath svd_r at {digits} digits and numpy float64 SVD; "
              f"slopes by least squares of log10 sigma_j on log10 eps; exact exponents from "
              f"decay_spectrum ({spectrum.method or 'exact series'})")
    return Sensitivity(
        architecture=arch.to_json(), curve=spectrum.curve, eps=tuple(eps_float), dps=digits, seed=int(seed),
        bank=len(inputs), params=arch.param_count,
        mpmath_singular_values=tuple(sigmas_mp), float64_singular_values=tuple(sigmas_64),
        mpmath_slopes=tuple(slopes_mp), float64_slopes=tuple(slopes_64), exponents=exponents,
        exact_rank=rank, kernel=spectrum.kernel, recovered=bool(recovered), mpmath_ranks=tuple(ranks_mp),
        float64_lost=tuple(lost), float64_resolved=resolved, float64_rank_estimate=rank_estimate,
        float64_rank_eps=float(rank_eps), exact_spectrum=dict(spectrum.exponents),
        unresolved=spectrum.unresolved, method=method,
    )
