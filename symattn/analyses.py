"""The one registry of analyses: what each is, how it runs, and which parts of the package offer it.

Every analysis of the package is one :class:`RegisteredAnalysis` in
:data:`REGISTRY`: its name, its one-line summary, the library function that
computes it and the result value it returns, the names ``import symattn``
exports for it, and its use by each consumer:

* the command line (:mod:`symattn.cli`): the subcommand ``symattn NAME``, found
  among the ``COMMANDS`` of a module of :mod:`symattn.cli` (which declares the
  subcommand's flags, its help and its examples);
* sweeps (:mod:`symattn.sweep`): a :class:`SweepUse`, the analysis's options
  with their defaults and the functions that run it at a grid point and say
  how sure its result is;
* the report (:func:`symattn.report.full_report`): a :class:`ReportUse`, the
  section's key and title and the function that builds it;
* ``symattn check``: the claims (:data:`symattn.languages.ACCEPTED_CLAIMS`
  and the formula claims) that it settles with this analysis.

Each consumer lists what it offers from here (:func:`registered`), in its
own order (:data:`ORDER`); none keeps a list of its own.  This module sits
on the lowest floor and imports nothing heavy: every function, module and
result type is named as ``"module:attribute"`` text and imported on first
use (:func:`resolve`), so ``import symattn`` and ``symattn --help`` stay quick.

Examples
--------
>>> from symattn.analyses import REGISTRY, registered, resolve
>>> REGISTRY["spectrum"].function, REGISTRY["spectrum"].command
('symattn.spectrum:decay_spectrum', 'spectrum')
>>> [entry.name for entry in registered("sweep")]
['dimension', 'spectrum', 'orders', 'observe', 'check', 'parameters']
>>> [entry.report.key for entry in registered("report")]
['spectrum', 'sensitivity', 'identification', 'observability']
>>> resolve(REGISTRY["spectrum"].result).__name__
'Spectrum'
"""

from __future__ import annotations

__all__ = ["RegisteredAnalysis", "SweepUse", "ReportUse", "REGISTRY", "ORDER", "CONSUMERS", "registered",
           "top_level_names", "resolve"]


class _Record:
    """A small frozen record with keyword fields (no dataclasses: this module loads at ``import symattn``)."""

    __slots__ = ()

    def __init__(self, **fields):
        missing = [name for name in self.__slots__ if name not in fields and name not in self._defaults]
        unknown = [name for name in fields if name not in self.__slots__]
        if missing or unknown:
            raise TypeError(f"{type(self).__name__}: missing fields {missing}, unknown fields {unknown}")
        for name in self.__slots__:
            object.__setattr__(self, name, fields.get(name, self._defaults.get(name)))

    _defaults: dict = {}

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__
                           if getattr(self, name) != self._defaults.get(name, object()))
        return f"{type(self).__name__}({fields})"


class SweepUse(_Record):
    """How a sweep runs an analysis (:mod:`symattn.sweep.analyses`).

    Attributes
    ----------
    options : dict
        The analysis's options in a sweep, with their defaults (the option
        tables of a grid file and the flags of ``symattn sweep`` fill them).
    run : str
        ``"module:function"``: ``function(arch, options) -> dict``, the result's JSON.
    sureness : str
        ``"module:function"``: ``function(json) -> (exactness, bound)``, how sure the result is.

    Examples
    --------
    >>> use = SweepUse(options={"seed": 0}, run="symattn.sweep.analyses:dimension_json",
    ...                sureness="symattn.sweep.analyses:dimension_sureness")
    >>> use.options
    {'seed': 0}
    """

    __slots__ = ("options", "run", "sureness")


class ReportUse(_Record):
    """A section of the report (:func:`symattn.report.full_report`) made by an analysis.

    Attributes
    ----------
    key : str
        The section's key in the report's JSON.
    title : str
        Its heading.
    progress : str
        The name the report's progress bar shows while the section is computed.
    build : str
        ``"module:function"``: ``function(arch, progress, results) -> (section, result, last)``:
        the :class:`~symattn._format.Section`, the result value (kept in
        ``results`` under ``key`` for the sections after it) and whether the
        report ends with this section.

    Examples
    --------
    >>> from symattn.analyses import REGISTRY
    >>> REGISTRY["identify"].report.key, REGISTRY["identify"].report.progress
    ('identification', 'identifiability')
    """

    __slots__ = ("key", "title", "progress", "build")


class RegisteredAnalysis(_Record):
    """One analysis: its name, how it runs, what it returns and who offers it.

    Attributes
    ----------
    name : str
        The analysis's name: its sweep name (``--analysis NAME``), and its
        subcommand when it has one of the same name.
    summary : str
        One line: what it computes (the sweep's description of it).
    function : str
        ``"module:function"``, the library function that computes it.
    result : str or None
        ``"module:Class"``, the result value the function returns (None: a plain dict).
    exports : dict
        Names ``import symattn`` exports for it: public name -> ``"module:attribute"``,
        or ``"module"`` for a module that is called as its function.
    command : str or None
        The subcommand ``symattn COMMAND``, or None.
    command_module : str or None
        The module of :mod:`symattn.cli` whose ``COMMANDS`` holds that
        subcommand; it declares the subcommand's flags (``configure_NAME``),
        help and examples, and its ``run_NAME(args, arch)``.
    sweep : SweepUse or None
        How a sweep runs it, with its options; None when sweeps do not offer it.
    report : ReportUse or None
        The section of the report it makes, or None.
    claims : tuple of str
        The claim quantities ``symattn check`` settles with it (``"kernel"``,
        ``"leading"``, ...).

    Examples
    --------
    >>> from symattn.analyses import REGISTRY
    >>> entry = REGISTRY["dimension"]
    >>> entry.command, entry.command_module, entry.sweep.options
    ('dimension', 'symattn.cli.identify', {'seed': 0})
    >>> entry.report is None, entry.exports
    (True, {'function_space_dimension': 'symattn.identify:function_space_dimension'})
    >>> entry.name = "dim"
    Traceback (most recent call last):
    ...
    AttributeError: RegisteredAnalysis is frozen: cannot set 'name'
    """

    __slots__ = ("name", "summary", "function", "result", "exports", "command", "command_module", "sweep",
                 "report", "claims")
    _defaults = {"result": None, "exports": {}, "command": None, "command_module": None, "sweep": None,
                 "report": None, "claims": ()}


_SWEEP = "symattn.sweep.analyses"
_REPORT = "symattn.report"

#: Every analysis by name, in the order ``symattn --help`` lists the subcommands (then those without one).
REGISTRY: dict[str, RegisteredAnalysis] = {entry.name: entry for entry in (
    RegisteredAnalysis(
        name="report", summary="the whole report: architecture, symmetries and every analysis as a section",
        function="symattn.report:full_report", result="symattn.report:ArchitectureReport",
        exports={"full_report": "symattn.report:full_report"},
        command="report", command_module="symattn.cli.report"),
    RegisteredAnalysis(
        name="spectrum", summary="exact decay spectrum near simultaneous query/key collapse",
        function="symattn.spectrum:decay_spectrum", result="symattn.spectrum:Spectrum",
        exports={"decay_spectrum": "symattn.spectrum:decay_spectrum"},
        command="spectrum", command_module="symattn.cli.spectrum",
        sweep=SweepUse(options={"seed": 0, "bank": "auto", "truncation": "auto"},
                       run=f"{_SWEEP}:spectrum_json", sureness=f"{_SWEEP}:spectrum_sureness"),
        report=ReportUse(key="spectrum", title="Decay spectrum near query/key collapse", progress="decay spectrum",
                         build=f"{_REPORT}:spectrum_section"),
        claims=("contact_order", "multiplicity", "kernel", "dimension")),
    RegisteredAnalysis(
        name="sensitivity", summary="numerical sensitivity: mpmath and float64 singular values and slopes",
        function="symattn.numeric:sensitivity", result="symattn.numeric:Sensitivity",
        command="sensitivity", command_module="symattn.cli.sensitivity",
        report=ReportUse(key="sensitivity", title="Numerical sensitivity (mpmath and float64)",
                         progress="numerical sensitivity (mpmath and float64)",
                         build=f"{_REPORT}:sensitivity_section")),
    RegisteredAnalysis(
        name="identify", summary="dimension, generic fiber, identification orders and jet ranks",
        function="symattn.identify:identify", result="symattn.identify:IdentificationReport",
        exports={"identify": "symattn.identify"},
        command="identify", command_module="symattn.cli.identify",
        report=ReportUse(key="identification",
                         title="Identifiability: dimension, generic fiber, identification orders",
                         progress="identifiability", build=f"{_REPORT}:identification_section"),
        claims=("identification_order",)),
    RegisteredAnalysis(
        name="dimension", summary="certified dimension of the function space (lower and upper bound)",
        function="symattn.identify:function_space_dimension", result="symattn.identify:DimensionResult",
        exports={"function_space_dimension": "symattn.identify:function_space_dimension"},
        command="dimension", command_module="symattn.cli.identify",
        sweep=SweepUse(options={"seed": 0}, run=f"{_SWEEP}:dimension_json", sureness=f"{_SWEEP}:dimension_sureness")),
    RegisteredAnalysis(
        name="orders", summary="identification orders of each block along the collapse curve, with sharpness",
        function="symattn.identify:identification_orders", result="symattn.identify:OrdersResult",
        sweep=SweepUse(options={"seed": 0}, run=f"{_SWEEP}:orders_json", sureness=f"{_SWEEP}:orders_sureness")),
    RegisteredAnalysis(
        name="observe", summary="what each event set hides (dependency graph, proved by exact ranks)",
        function="symattn.observe:observe", result="symattn.observe:ObserveResult",
        exports={"observe": "symattn.observe"},
        command="observe", command_module="symattn.cli.observe",
        sweep=SweepUse(options={"seed": 0, "events": [[]], "contact": False},
                       run=f"{_SWEEP}:observe_json", sureness=f"{_SWEEP}:observe_sureness"),
        report=ReportUse(key="observability", title="Observability under collapse", progress="observability",
                         build=f"{_REPORT}:observability_section")),
    RegisteredAnalysis(
        name="expand", summary="exact expansion F_0..F_n of the output along query/key collapse",
        function="symattn.expand:expand", result="symattn.expand:Expansion",
        exports={"expand": "symattn.expand", "leading_coefficient": "symattn.expand:leading_coefficient",
                 "symbols": "symattn.expand:symbols"},
        command="expand", command_module="symattn.cli.expand",
        claims=("leading", "F_n")),
    RegisteredAnalysis(
        name="check", summary="claimed numbers and formulas against the engine",
        function="symattn.check:check_claims", result="symattn.check:ClaimsReport",
        exports={"check_expression": "symattn.check:check_expression",
                 "check_claims": "symattn.check:check_claims"},
        command="check", command_module="symattn.cli.check",
        sweep=SweepUse(options={"seed": 0, "claims": []}, run=f"{_SWEEP}:check_json",
                       sureness=f"{_SWEEP}:check_sureness")),
    RegisteredAnalysis(
        name="sweep", summary="analyses over a grid of architectures, resumable",
        function="symattn.sweep:sweep", result="symattn.sweep:SweepResult",
        exports={"sweep": "symattn.sweep"},
        command="sweep", command_module="symattn.cli.sweep"),
    RegisteredAnalysis(
        name="verify", summary="re-check a certificate without trusting symattn (its independent checker)",
        function="symattn.verifier:verify", result="symattn.verifier:VerificationReport",
        command="verify", command_module="symattn.cli.verify"),
    RegisteredAnalysis(
        name="parameters", summary="native parameters, effective dimension, gauge dimension, sign-group order",
        function=f"{_SWEEP}:parameters_json",
        sweep=SweepUse(options={}, run=f"{_SWEEP}:parameters_json", sureness=f"{_SWEEP}:parameters_sureness"),
        claims=("sign_group_order",)),
)}

#: The consumers of the registry, each with the field of an entry that says it uses the analysis.
CONSUMERS = {"cli": "command", "sweep": "sweep", "report": "report", "check": "claims", "top_level": "exports"}

#: The order in which a consumer lists its analyses, where it is not the order of :data:`REGISTRY`.
ORDER = {
    "sweep": ("dimension", "spectrum", "orders", "observe", "check", "parameters"),
}


def registered(consumer: str) -> list[RegisteredAnalysis]:
    """The analyses ``consumer`` offers (one of :data:`CONSUMERS`), in the order it lists them.

    Parameters
    ----------
    consumer : str
        ``"cli"``, ``"sweep"``, ``"report"``, ``"check"`` or ``"top_level"``.

    Returns
    -------
    list of RegisteredAnalysis

    Examples
    --------
    >>> [entry.command for entry in registered("cli")]
    ['report', 'spectrum', 'sensitivity', 'identify', 'dimension', 'observe', 'expand', 'check', 'sweep', 'verify']
    >>> [entry.name for entry in registered("check")]
    ['spectrum', 'identify', 'expand', 'parameters']
    >>> registered("plots")
    Traceback (most recent call last):
    ...
    ValueError: no consumer 'plots' of the analyses; consumers: cli, sweep, report, check, top_level
    """
    if consumer not in CONSUMERS:
        raise ValueError(f"no consumer {consumer!r} of the analyses; consumers: {', '.join(CONSUMERS)}")
    field = CONSUMERS[consumer]
    names = ORDER.get(consumer, tuple(REGISTRY))
    return [REGISTRY[name] for name in names if getattr(REGISTRY[name], field)]


def top_level_names() -> dict[str, tuple[str, str | None]]:
    """The names ``import symattn`` exports for the analyses: name -> ``(module, attribute or None)``.

    None stands for the module itself (a module called as its function, such
    as ``symattn.identify``), as in ``symattn._LAZY``.

    Examples
    --------
    >>> names = top_level_names()
    >>> names["decay_spectrum"], names["identify"]
    (('symattn.spectrum', 'decay_spectrum'), ('symattn.identify', None))
    """
    out = {}
    for entry in registered("top_level"):
        for public, target in entry.exports.items():
            module, _, attribute = target.partition(":")
            out[public] = (module, attribute or None)
    return out


def resolve(target: str):
    """Import what ``"module:attribute"`` (or ``"module"``) names, and return it.

    Examples
    --------
    >>> resolve("symattn.errors:SymattnError").__name__
    'SymattnError'
    >>> resolve("symattn.errors").__name__
    'symattn.errors'
    """
    import importlib

    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
