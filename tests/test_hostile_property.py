"""Random hostile input never hangs, never exits 1 (issue 23, the property test).

Command lines, claims files and grid files are drawn from a grammar that
holds the shapes a hostile tester found: long runs of spaces, power towers,
deep nesting, huge integers, look-alike and invisible letters, comments,
sizes far past every bound.  Every run must end within the guard below with
exit 0 or 2, and an error is one line.  The guard (a timer inside the test
process) stops a run that hangs and fails the test; it is a bound against a
hang, not a timing of the package.
"""

from __future__ import annotations

import signal
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symattn.cli import main

#: A run that takes longer than this is a hang (the issue's bound).
GUARD_SECONDS = 10

_SPACES = st.integers(min_value=0, max_value=5000).map(lambda n: " " * n)
_HUGE = st.sampled_from(["9" * 5000, "1" + "0" * 4400, "9223372036854775807", "10**50", "(10**50)**90"])
_TOWER = st.integers(min_value=2, max_value=6).map(lambda n: "((((((t" [:n] + "**100)" * (n - 1) + "**100")
_LOOKALIKE = st.sampled_from(["Ｐ", "ℌ", "Ｘ", "\u200b", "\u202e", "ｋ", "х"])  # fullwidth, blackletter, cyrillic
_CLAIMS = st.one_of(
    st.builds(lambda s: "a" + s + "!", _SPACES),
    st.builds(lambda s: "leading(" + s + "x", _SPACES),
    st.builds(lambda s: "kernel" + s + "= 1", _SPACES),
    st.builds(lambda tower: "leading(1) = " + tower, _TOWER),
    st.builds(lambda n: "kernel = " + n, _HUGE),
    st.builds(lambda n: "contact_order(" + n + ") = 1", _HUGE),
    st.builds(lambda c: f"leading(1) = {c}*X*H*C_1/3", _LOOKALIKE),
    st.builds(lambda c: f"kernel = 1 # {c}`<b>", _LOOKALIKE),
    st.sampled_from(["leading(1) = P # comment", "leading(50) = P", "dimension = " + "(" * 2000 + "1" + ")" * 2000,
                     "sign_group_order = -1", "multiplicity(1) = 3"]),
)
_NORMALIZERS = st.one_of(
    st.sampled_from(["exp(exp(exp(exp(x))))", "exp(exp(exp(x)))", "1 + I**2", "exp(inf)", "exp(oo)",
                     "1 + zoo**2", "x**x**x**x**x", "Max(" + ",".join(["x"] * 400) + ")", "softmax", "cosh",
                     "1+x**2 # comment", "exp(" * 29 + "x" + ")" * 29, "(" * 2000 + "x" + ")" * 2000]),
    st.builds(lambda n: f"1 + x**2 + {n}", _HUGE),
    st.builds(lambda c: f"1 + {c}**2", _LOOKALIKE),
)
_SIZES = st.sampled_from([
    ["--layers", "100"], ["--layers", "101"], ["--layers", "9" * 5000], ["--width", "1..100000000"],
    ["--tokens", "1000000"], ["--width", "500", "--rank", "500"], ["--tokens", "1"], ["--widths", ",".join(["2"] * 10001)],
])


class _Hung(Exception):
    pass


def _guarded(argv) -> tuple[int, str, float]:
    def alarm(signum, frame):
        raise _Hung(f"no answer within {GUARD_SECONDS} s: {argv!r:.300}")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, GUARD_SECONDS)
    started = time.perf_counter()
    try:
        status = main(argv)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return status, time.perf_counter() - started


def _check(capsys, argv) -> None:
    status, _ = _guarded([*argv, "--quiet", "--max-memory", "2G"])
    err = capsys.readouterr().err
    assert status in (0, 2), (argv, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    if status == 2:
        assert err.startswith("symattn: error: ") and err.count("\n") == 1, (argv, err)


_SETTINGS = settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.slow
@_SETTINGS
@given(claims=st.lists(_CLAIMS, min_size=1, max_size=3), through_file=st.booleans())
def test_hostile_claims(capsys, tmp_path_factory, claims, through_file):
    argv = ["check", "--layers", "1", "--width", "1", "--tokens", "2"]
    if through_file:
        path = tmp_path_factory.mktemp("claims") / "claims.txt"
        path.write_text("\n".join(claims) + "\n", encoding="utf-8")
        argv += ["--claims", str(path)]
    else:
        for claim in claims:
            argv += ["--claim", claim]
    _check(capsys, argv)


@pytest.mark.slow
@_SETTINGS
@given(command=st.sampled_from(["spectrum", "identify", "observe", "expand", "check", "dimension"]),
       normalizer=_NORMALIZERS)
def test_hostile_normalizers(capsys, command, normalizer):
    argv = [command, "--layers", "1", "--width", "1", "--tokens", "2", "--normalizer", normalizer]
    if command == "check":
        argv += ["--claim", "kernel = 1"]
    _check(capsys, argv)


@pytest.mark.slow
@_SETTINGS
@given(command=st.sampled_from(["spectrum", "identify", "observe", "report", "check", "dimension", "sensitivity",
                                "expand"]),
       size=_SIZES)
def test_hostile_sizes(capsys, command, size):
    argv = [command, *size]
    if command == "check":
        argv += ["--claim", "kernel = 1"]
    _check(capsys, argv)


_GRID_VALUES = st.sampled_from([
    "9223372036854775807", "[[]]", "[" * 2000 + "]" * 2000, "[" + ",".join(["2"] * 100_000) + "]", '"1..100000"',
    '"' + "9" * 5000 + '"', '"1..3"', "[1, 2]", '"x"', "-1", "1.5", "true",
])


@pytest.mark.slow
@_SETTINGS
@given(field=st.sampled_from(["layers", "width", "tokens", "rank", "widths", "heads", "normalizer"]),
       value=_GRID_VALUES)
def test_hostile_grid_files(capsys, tmp_path_factory, field, value):
    path = tmp_path_factory.mktemp("grid") / "grid.toml"
    path.write_text(f'analyses = ["parameters"]\n[grid]\n{field} = {value}\n', encoding="utf-8")
    _check(capsys, ["sweep", "--grid", str(path), "--scheduler", "synchronous"])
