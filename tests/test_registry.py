"""The one registry of analyses (symattn/analyses.py) and its consumers agree, both ways.

Every registered analysis is reachable from each consumer that claims it (the
subcommand exists and runs ``--help``, a sweep accepts it with its options,
the report has its section, the top-level names resolve, check understands its
claims), and no consumer offers an analysis the registry lacks.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys

import pytest

import symattn
import symattn.cli
from symattn.analyses import CONSUMERS, ORDER, REGISTRY, registered, resolve, top_level_names

#: The names ``import symattn`` exports that are the network, not an analysis.
NETWORK_NAMES = {"Architecture", "forward", "closed_form", "Normalizer"}


def _quantity(claim: str) -> str:
    """``"contact_order(i) = n"`` -> ``"contact_order"``, ``"F_n = ..."`` -> ``"F_n"``."""
    return claim.split("(")[0].split("=")[0].strip()


# -- the registry itself --------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_entry_names_a_function_and_a_result_that_exist(name):
    entry = REGISTRY[name]
    assert entry.name == name
    function = resolve(entry.function)
    assert callable(function)
    if entry.result is not None:
        result = resolve(entry.result)
        assert inspect.isclass(result)
        annotation = inspect.signature(function).return_annotation
        assert annotation in (result, result.__name__), (entry.function, annotation, entry.result)


def test_each_order_lists_exactly_the_analyses_its_consumer_uses():
    for consumer, names in ORDER.items():
        field = CONSUMERS[consumer]
        assert sorted(names) == sorted(n for n, e in REGISTRY.items() if getattr(e, field)), consumer
        assert len(set(names)) == len(names)


def test_importing_the_registry_loads_no_analysis():
    probe = ("import json, sys; import symattn.analyses; "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('symattn') or m in "
             "('sympy', 'numpy', 'dataclasses'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["symattn", "symattn.analyses", "symattn.errors"]


# -- each consumer reaches every analysis the registry gives it ----------------------------------------
@pytest.mark.parametrize("entry", registered("cli"), ids=lambda e: e.name)
def test_every_registered_subcommand_exists(entry, capsys):
    module = importlib.import_module(entry.command_module)
    own = {command.name: command for command in module.COMMANDS}
    assert symattn.cli.SUBCOMMANDS[entry.command] == own[entry.command]
    assert symattn.cli.main([entry.command, "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: symattn {entry.command}")


@pytest.mark.parametrize("entry", registered("sweep"), ids=lambda e: e.name)
def test_a_sweep_accepts_every_registered_analysis(entry):
    from symattn.sweep.analyses import ANALYSES, analysis_options, read_analyses

    assert read_analyses(entry.name) == [entry.name]
    assert ANALYSES[entry.name].defaults == entry.sweep.options
    assert ANALYSES[entry.name].run is resolve(entry.sweep.run)
    assert ANALYSES[entry.name].sureness is resolve(entry.sweep.sureness)
    given = {"claims": ["kernel = 1"]} if entry.name == "check" else None  # check needs claims
    assert set(analysis_options(entry.name, given)) == set(entry.sweep.options)


def test_a_sweep_runs_the_registered_analyses():
    result = symattn.sweep({"layers": 1, "width": 1, "tokens": 2}, ["dimension", "parameters"],
                           scheduler="synchronous", progress=False)
    assert [(row["analysis"], row["status"]) for row in result.rows] == [("dimension", "ok"), ("parameters", "ok")]


def test_the_report_has_a_section_for_every_registered_analysis():
    from symattn.model import Architecture
    from symattn.report import full_report

    report = full_report(Architecture.uniform(layers=1, width=1, tokens=2))
    uses = [entry.report for entry in registered("report")]
    assert [(s.key, s.title) for s in report.sections] == [(u.key, u.title) for u in uses]
    assert all(callable(resolve(use.build)) for use in uses)


def test_every_registered_top_level_name_resolves():
    for entry in registered("top_level"):
        for public, target in entry.exports.items():
            assert getattr(symattn, public) is resolve(target), public
            assert public in symattn.__all__ and public in dir(symattn)


def test_check_understands_every_registered_claim():
    from symattn.check import is_coefficient_claim, parse_claim
    from symattn.expand import is_formula_claim
    from symattn.languages import ACCEPTED_CLAIMS

    numbers = {_quantity(claim): claim for claim in ACCEPTED_CLAIMS}
    for entry in registered("check"):
        for quantity in entry.claims:
            if quantity == "leading":
                assert is_formula_claim("leading(1) = P*X*J")
            elif quantity == "F_n":
                assert is_coefficient_claim("F_0 = 0")
            else:  # the accepted form with a layer and a number: "contact_order(1) = 1", "kernel = 1"
                text = numbers[quantity].replace("(i)", "(1)").replace("= n", "= 1")
                assert parse_claim(text, 2)[0] == quantity


# -- no consumer has an analysis the registry lacks ------------------------------------------------------
def test_the_cli_offers_only_registered_subcommands():
    assert list(symattn.cli.SUBCOMMANDS) == [entry.command for entry in registered("cli")]
    registered_pairs = {(e.command_module, e.command) for e in registered("cli")}
    for info in pkgutil.iter_modules(symattn.cli.__path__, "symattn.cli."):
        module = importlib.import_module(info.name)
        for command in getattr(module, "COMMANDS", ()):
            assert (info.name, command.name) in registered_pairs, f"{info.name} defines {command.name!r}"


def test_the_sweep_offers_only_registered_analyses():
    from symattn.sweep.analyses import ANALYSES

    assert list(ANALYSES) == [entry.name for entry in registered("sweep")]


def test_the_top_level_exports_only_registered_analyses():
    analyses_exported = set(symattn._LAZY) - NETWORK_NAMES
    assert analyses_exported == set(top_level_names())
    assert all(symattn._LAZY[name][0] in ("symattn.model", "symattn.normalizers") for name in NETWORK_NAMES)
    errors = {name for name in symattn.__all__ if name.endswith("Error")}
    assert set(symattn.__all__) == NETWORK_NAMES | set(top_level_names()) | errors


def test_check_accepts_only_claims_the_registry_assigns():
    from symattn.languages import ACCEPTED_CLAIMS, FORMULA_CLAIMS

    assigned = [quantity for entry in registered("check") for quantity in entry.claims]
    assert len(assigned) == len(set(assigned))  # each claim is settled by one analysis
    assert set(assigned) == {_quantity(claim) for claim in ACCEPTED_CLAIMS + FORMULA_CLAIMS}

