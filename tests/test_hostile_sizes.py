"""Sizes a user can type are refused at once, naming the flag and what fits (issue 23).

Each case is a guard against a hang or an internal error: the command ends
with exit 2 and one line naming the flag.  The time bounds are generous
(machines differ); they catch a computation that runs on, not a slow one.
"""

from __future__ import annotations

import time

import pytest

from symattn.cli import main
from symattn.errors import ResourceLimitError
from symattn.limits import MAX_LAYERS, order_text
from symattn.model import Architecture
from symattn.observe import exceptional_fibers, observe
from symattn.observe.report import MAX_EVENT_SETS
from symattn.spectrum import decay_spectrum

#: A refusal, not a computation: well under this on any machine (measured: 1-4 s at 100 layers).
QUICK_SECONDS = 30


def _refused(capsys, argv, *words):
    started = time.perf_counter()
    status = main(argv)
    seconds = time.perf_counter() - started
    out, err = capsys.readouterr()
    assert status == 2, (argv, out[-500:], err)
    assert err.startswith("symattn: error: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, (word, err)
    assert seconds < QUICK_SECONDS
    return err


def test_order_text_names_huge_orders_by_their_size():
    assert order_text(1459) == "1459"
    assert order_text(2 * 3**9999 - 1) == "(about 10^4771)"
    assert order_text(10**30) == str(10**30)


@pytest.mark.parametrize("command", [["spectrum"], ["check", "--claim", "kernel = 1"], ["sensitivity"]])
def test_too_deep_for_the_spectrum_names_the_layers_that_fit(capsys, command):
    err = _refused(capsys, [*command, "--layers", "8", "--quiet"], "--layers 8", "eps^4375", "--layers <= 7 fits")
    assert "beyond the deepest truncation eps^4096" in err


def test_seven_layers_over_the_memory_limit_name_max_memory(capsys):
    # seven layers compute (about 2.1 GB); under a smaller limit the refusal names the flag that raises it
    err = _refused(capsys, ["spectrum", "--layers", "7", "--max-memory", "1G", "--quiet"], "--layers 7",
                   "needs about 2.8 GiB", "series to eps^1459", "over the limit of 1.0 GiB", "--layers <= 6 fits",
                   "--max-memory SIZE")


# the dimension alone takes the integer-score route (series to eps^(2 3^(l-2)) instead of eps^(2 3^(l-1)))
@pytest.mark.parametrize("command, fits", [(["identify"], 5), (["dimension"], 6), (["observe"], 5)])
def test_too_deep_for_the_exact_ranks_names_the_layers_that_fit(capsys, command, fits):
    _refused(capsys, [*command, "--layers", "50", "--quiet"], "--layers 50", f"--layers <= {fits} fits")


@pytest.mark.parametrize("command", [["spectrum"], ["identify"], ["observe"], ["check", "--claim", "kernel = 1"],
                                     ["dimension"], ["sensitivity"]])
def test_the_deepest_network_accepted_is_refused_with_its_order_as_a_size(capsys, command):
    _refused(capsys, [*command, "--layers", str(MAX_LAYERS), "--quiet"], f"--layers {MAX_LAYERS}",
             "eps^(about 10^47)")


def test_past_the_structural_bound_is_a_usage_error(capsys):
    _refused(capsys, ["spectrum", "--layers", str(MAX_LAYERS + 1)], f"from 1 to {MAX_LAYERS}")
    _refused(capsys, ["spectrum", "--layers", "9" * 5000], "--layers")  # past Python's 4,300-digit limit


def test_the_report_skips_what_is_too_deep_and_says_so(capsys):
    status = main(["report", "--layers", "50", "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "--layers <= 7 fits" in out and "--layers <= 5 fits" in out


def test_a_truncation_past_max_truncation_names_the_argument():
    arch = Architecture.uniform(layers=1)
    with pytest.raises(Exception, match=r"truncation 5000 exceeds max_truncation 4096; give truncation <= 4096"):
        decay_spectrum(arch, truncation=5000, progress=False)
    with pytest.raises(ResourceLimitError, match=r"--layers <= 7 fits"):
        decay_spectrum(Architecture.uniform(layers=8), progress=False)


def test_observe_refuses_a_deep_network_before_its_graph():
    started = time.perf_counter()
    with pytest.raises(ResourceLimitError, match=r"--layers <= 5 fits"):
        observe(Architecture.uniform(layers=80), ["scores:1"])
    assert time.perf_counter() - started < QUICK_SECONDS


def test_too_many_event_sets_name_the_max_events_that_fits(capsys):
    err = _refused(capsys, ["observe", "--exceptional", "--max-events", "1000000", "--quiet"],
                   "--max-events 1000000", f"more than {MAX_EVENT_SETS} sets")
    assert "--max-events <= 4 fits" in err  # 11 events of 3 layers: 1+..+C(11,4) = 561 sets, C(11, 5) more
    with pytest.raises(ResourceLimitError, match="--max-events <= 1 fits"):
        exceptional_fibers(Architecture.uniform(layers=30), max_events=2)


def test_more_events_than_the_network_has_is_every_set_once():
    arch = Architecture.uniform(layers=1, width=1, tokens=2)
    events = ["scores:1", "values:1"]
    every = exceptional_fibers(arch, max_events=10**6, events=events)
    assert sorted(row.name for row in every.rows) == sorted(
        row.name for row in exceptional_fibers(arch, max_events=2, events=events).rows)


# -- grids and files ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["sweep", "--layers", "1..100", "--width", "1..100", "--tokens", "1..100"],
     ["1000000 points (100 layers x 100 width x 100 tokens)", "at most 10000"]),
    (["sweep", "--layers", "1..10000", "--width", "1..10000"], ["'1..10000' has 10000 values", "at most 1000"]),
    (["dimension", "--width", "1..100000000"], ["100000000 widths", "at most 1000 rows"]),
    (["check", "--claims", "/dev/zero"], ["--claims /dev/zero is larger than 1.0 MiB"]),
    (["sweep", "--grid", "/dev/zero"], ["the grid file /dev/zero is larger than 1.0 MiB"]),
])
def test_oversized_grids_and_files_are_refused(capsys, argv, words):
    _refused(capsys, [*argv, "--quiet"], *words)


@pytest.mark.parametrize("toml, words", [
    ("[grid]\nlayers = 9223372036854775807\n", ["layers: 9223372036854775807 is past the largest value"]),
    ("[grid]\nlayers = [[]]\n", ["layers takes values or ranges, not a list of lists"]),
    ("[grid]\nlayers = " + "[" * 2000 + "]" * 2000 + "\n", ["nests its lists or tables too deeply"]),
    ("[grid]\ntokens = [" + ",".join(["2"] * 100_000) + "]\n", ["tokens lists more than 1000 values"]),
    ("[grid]\nlayers = \"" + "9" * 5000 + "\"\n", ["is past the largest value"]),
])
def test_hostile_grid_files_are_refused(capsys, tmp_path, toml, words):
    path = tmp_path / "grid.toml"
    path.write_text(toml)
    _refused(capsys, ["sweep", "--grid", str(path), "--quiet"], *words)


@pytest.mark.parametrize("text, words", [
    ("[" * 2000 + "]" * 2000, ["nested too deeply"]),
    ('{"claims": ["kernel = 1"]}', ["cannot read the claim"]),
    (b"\xff\xfe kernel = 1", ["is not UTF-8 text"]),
])
def test_hostile_claims_files_are_refused(capsys, tmp_path, text, words):
    path = tmp_path / "claims.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    _refused(capsys, ["check", "--layers", "1", "--claims", str(path), "--quiet"], *words)


def test_a_score_rank_above_the_width_is_swept_as_the_spectrum_computes_it(capsys):
    status = main(["sweep", "--layers", "1", "--width", "2", "--rank", "3", "--analysis", "spectrum",
                   "--scheduler", "synchronous", "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    import json

    data = json.loads(out)
    assert data["skipped"] == 0 and [row["status"] for row in data["rows"]] == ["ok"]
    assert main(["spectrum", "--layers", "1", "--width", "2", "--rank", "3", "--json", "--quiet"]) == 0
    spectrum = json.loads(capsys.readouterr().out)["spectrum"]
    assert spectrum == data["rows"][0]["spectrum"] == {"0": 4, "1": 4}  # W_1 of rank at most 2: four directions


# -- --out -------------------------------------------------------------------------------------------
def test_an_out_folder_that_cannot_be_written_is_refused_before_the_work(capsys, tmp_path, monkeypatch):
    import symattn.spectrum

    def never(*args, **kwargs):
        raise AssertionError("the computation ran before the folder was checked")

    monkeypatch.setattr(symattn.spectrum, "decay_spectrum", never)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    _refused(capsys, ["spectrum", "--layers", "1", "--out", str(blocker / "out"), "--quiet"],
             f"cannot write to --out {blocker / 'out'}", "choose a folder you can write")


def test_a_full_disk_leaves_the_previous_files_whole(capsys, tmp_path, monkeypatch):
    from pathlib import Path

    assert main(["spectrum", "--layers", "1", "--width", "1", "--tokens", "2", "--out", str(tmp_path),
                 "--quiet"]) == 0
    capsys.readouterr()
    before = {path.name: path.read_text() for path in tmp_path.iterdir()}
    assert {"spectrum.md", "spectrum.tex", "spectrum.json"} <= set(before)
    real_write_text = Path.write_text

    def half_then_full(self, text, *args, **kwargs):
        real_write_text(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full)
    status = main(["spectrum", "--layers", "1", "--width", "1", "--tokens", "2", "--seed", "3", "--out",
                   str(tmp_path), "--quiet"])
    monkeypatch.undo()
    assert status == 2 and "No space left on device" in capsys.readouterr().err
    assert {path.name: path.read_text() for path in tmp_path.iterdir()} == before  # no half file, no leftover


# -- one token: a degenerate but exact case -----------------------------------------------------------
@pytest.mark.parametrize("kwargs", [dict(layers=1), dict(layers=2), dict(layers=2, causal=True),
                                    dict(layers=1, residual=True), dict(layers=2, heads=2)])
def test_one_token_spectrum_agrees_with_the_certified_dimension(kwargs):
    from symattn.identify import function_space_dimension

    arch = Architecture.uniform(tokens=1, **kwargs)
    spectrum = decay_spectrum(arch, progress=False)
    dimension = function_space_dimension(arch)
    # S(A) = 1 for one key: only the value maps are seen, at order 0, and every score direction is kernel
    assert spectrum.exponents == {0: 4} and spectrum.unresolved == 0 and spectrum.rank_certified
    assert spectrum.separating and spectrum.confirmed
    assert dimension.certified and dimension.lower == dimension.upper == spectrum.rank == 4
    assert spectrum.kernel == arch.param_count - 4


def test_one_token_claims_are_decided(capsys):
    assert main(["check", "--layers", "1", "--tokens", "1", "--claim", "kernel = 4", "--claim", "kernel = 1",
                 "--json", "--quiet"]) == 0
    import json

    verdicts = [c["verdict"] for c in json.loads(capsys.readouterr().out)["claims"]]
    assert verdicts == [True, False]


def test_lightning_kernel_includes_its_scalings():
    from symattn.identify import function_space_dimension

    arch = Architecture.uniform(layers=2, normalizer="lightning")
    spectrum = decay_spectrum(arch, progress=False)
    # the gauge orbit (6) and one scaling Q_i -> c Q_i, V_i -> V_i / c per layer: kernel 8 = 16 - dimension 8
    assert spectrum.rank_certified and spectrum.kernel == 8 == arch.param_count - function_space_dimension(arch).lower


@pytest.mark.parametrize("command", [["spectrum"], ["observe"], ["identify"], ["dimension"]])
def test_a_network_too_wide_names_the_width_that_fits_not_a_bank(capsys, command):
    err = _refused(capsys, [*command, "--width", "500", "--rank", "500", "--quiet"], "--width 500", "fits in")
    assert "--width <= " in err and "--bank" not in err.split("fits")[0].split(";")[-1]


# -- expand --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["expand", "--generic", "1000000"], ["2000000 (k = 1000000", "at most 129", "--generic K with K <= 64"]),
    (["expand", "--tokens", "1000000"], ["--tokens 1000000", "at most 64"]),
    (["expand", "--layers", "50", "--leading", "50"], ["layer 50 (--leading 50", "at most layer 6"]),
    (["check", "--layers", "50", "--claim", "leading(50) = P"], ["leading(50) in a claim", "at most layer 6"]),
])
def test_expansions_too_large_are_refused_at_once(capsys, argv, words):
    _refused(capsys, [*argv, "--quiet"], *words)


def test_expand_keeps_to_max_memory(capsys):
    from symattn.algebra.exactseries import resident_bytes

    limit = resident_bytes() + 64 * 2**20  # this process now, and 64 MiB more: the expansion needs about 1 GiB
    err = _refused(capsys, ["expand", "--layers", "2", "--width", "2", "--tokens", "4", "--truncation", "7",
                            "--max-memory", str(limit), "--quiet"], "over the limit of", "--max-memory SIZE")
    assert "the symbolic expansion of 16 parameters modulo eps^7 holds" in err


def test_a_symbol_name_with_thousands_of_digits_is_an_unknown_name():
    from symattn import symbols
    from symattn.errors import SymattnError

    with pytest.raises(SymattnError, match="unknown symbol name") as caught:
        symbols("c_" + "9" * 5000, Architecture.uniform(layers=1))
    assert len(str(caught.value)) < 1000  # the name is shortened, not printed whole
