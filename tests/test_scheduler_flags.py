"""The Dask flags refuse what they cannot use, in one line, exit status 2, within the connect timeout (issue 35).

Listeners on 127.0.0.1 started here: a closed port, one that accepts and
never answers, one that answers with junk.  Invalid addresses, a connect
timeout that is not a positive number, and ``--workers`` above the cores are
refused before any work; Ctrl-C with ``--workers`` prints one line and exits 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from symattn import cli
from symattn._cluster import check_scheduler_address, local_worker_limit, probe_scheduler, scheduler_address
from symattn.errors import SymattnError

ACCEPTED = "give local, tcp://HOST:PORT or HOST:PORT with a port from 1 to 65535 (e.g. tcp://127.0.0.1:8786)"


@contextlib.contextmanager
def listener(mode: str):
    """The port of a listener on 127.0.0.1: ``closed`` (nothing listens), ``silent`` (accepts, never answers) or ``junk``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    if mode == "closed":
        server.close()
        yield port
        return
    server.listen(8)
    accepted = []

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(connection)
            if mode == "junk":
                with contextlib.suppress(OSError):
                    connection.sendall(b"\xff" * 4096)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.close()
        for connection in accepted:
            connection.close()


PROBLEMS = {
    "closed": "connection refused (nothing listens on that port)",
    "silent": "it did not greet within 1 s (not a Dask scheduler, or a busy one)",
    "junk": "it answered with something that is not a Dask scheduler's greeting",
}


@pytest.mark.parametrize("mode", sorted(PROBLEMS))
def test_probe_refuses_closed_silent_and_junk_listeners_within_the_timeout(mode):
    with listener(mode) as port:
        started = time.monotonic()
        with pytest.raises(SymattnError) as refused:
            probe_scheduler(f"127.0.0.1:{port}", timeout=1)
        elapsed = time.monotonic() - started
    assert str(refused.value) == (f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: {PROBLEMS[mode]}; "
                                  "start one there (dask scheduler) or give another address")
    assert elapsed < 1.6, elapsed
    if mode == "silent":
        assert elapsed >= 0.9, elapsed  # it waited for the greeting, up to the timeout


@pytest.mark.parametrize("command", ["dimension", "spectrum", "identify", "sweep"])
@pytest.mark.parametrize("mode", sorted(PROBLEMS))
def test_the_commands_refuse_them_in_one_line(capsys, command, mode):
    with listener(mode) as port:
        started = time.monotonic()
        status = cli.main([command, "--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
                           "--scheduler", f"127.0.0.1:{port}", "--connect-timeout", "1"])
        elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert status == 2
    assert err == (f"symattn: error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: {PROBLEMS[mode]}; "
                   "start one there (dask scheduler) or give another address\n")
    assert elapsed < 5, elapsed


def test_a_real_scheduler_passes_the_probe():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp") as cluster:
        address = cluster.scheduler_address
        assert probe_scheduler(address, timeout=5) == address


BAD_ADDRESSES = {
    "tcp://": "it has no HOST:PORT",
    "HOST:abc": "the port 'abc' is not a number",
    "file:///etc/passwd": "the protocol 'file':// is not supported (only tcp://)",
    "inproc://127.0.0.1/1/2": "the protocol 'inproc':// is not supported (only tcp://)",
    "tls://127.0.0.1:8786": "the protocol 'tls':// is not supported (only tcp://)",
    "ucx://127.0.0.1:8786": "the protocol 'ucx':// is not supported (only tcp://)",
    "127.0.0.1:1:2": "the host '127.0.0.1:1' is not a host name or an IP address",
    "127.0.0.1:0": "the port 0 is outside 1..65535",
    "127.0.0.1:65536": "the port 65536 is outside 1..65535",
    "[::1x]:8786": "'[::1x]' is not an IPv6 address",
    "host name:8786": "the host 'host name' is not a host name or an IP address",
}


@pytest.mark.parametrize("text", sorted(BAD_ADDRESSES))
def test_invalid_addresses_are_usage_errors(capsys, text):
    started = time.monotonic()
    status = cli.main(["spectrum", "--layers", "1", "--scheduler", text])
    assert time.monotonic() - started < 2
    assert status == 2
    assert capsys.readouterr().err == (f"symattn: error: argument --scheduler: scheduler {text!r} is not a Dask "
                                       f"scheduler address: {BAD_ADDRESSES[text]}; {ACCEPTED} "
                                       "(see 'symattn spectrum --help')\n")
    assert scheduler_address(text) is None
    with pytest.raises(SymattnError):
        check_scheduler_address(text)


def test_valid_addresses_are_read():
    assert [scheduler_address(text) for text in ("127.0.0.1:8786", "TCP://host-1.example.org:1", "[::1]:65535",
                                                 " localhost:08786 ")] == \
        ["tcp://127.0.0.1:8786", "tcp://host-1.example.org:1", "tcp://[::1]:65535", "tcp://localhost:8786"]


def test_sweep_accepts_its_words_and_refuses_other_protocols(capsys):
    assert cli.main(["sweep", "--layers", "1", "--scheduler", "tls://a:1"]) == 2
    assert capsys.readouterr().err == ("symattn: error: argument --scheduler: scheduler 'tls://a:1' is not a Dask "
                                       "scheduler address: the protocol 'tls':// is not supported (only tcp://); "
                                       "give local, sequential, synchronous, tcp://HOST:PORT or HOST:PORT with a "
                                       "port from 1 to 65535 (e.g. tcp://127.0.0.1:8786) (see 'symattn sweep --help')\n")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e9", "five"])
def test_connect_timeout_must_be_a_positive_finite_number(capsys, value):
    assert cli.main(["dimension", "--layers", "1", "--connect-timeout", value]) == 2
    assert capsys.readouterr().err == ("symattn: error: argument --connect-timeout: --connect-timeout must be a "
                                       f"number of seconds above 0 and at most 86400, got {value!r} "
                                       "(see 'symattn dimension --help')\n")


@pytest.mark.parametrize("command", ["dimension", "spectrum", "identify"])
def test_workers_above_the_cores_are_refused_before_any_starts(capsys, command):
    limit = local_worker_limit()
    started = time.monotonic()
    status = cli.main([command, "--layers", "1", "--quiet", "--workers", "1000000000"])
    assert time.monotonic() - started < 5
    assert status == 2
    assert capsys.readouterr().err == (f"symattn: error: workers must be an integer from 1 to {limit} (one worker "
                                       "process per core this process may run on), got 1000000000\n")
    assert cli.main([command, "--layers", "1", "--quiet", "--workers", str(limit + 1)]) == 2
    assert f"from 1 to {limit} " in capsys.readouterr().err


def test_ctrl_c_with_workers_prints_one_line_and_exits_130(tmp_path):
    # a terminal's Ctrl-C reaches the whole process group: the workers too
    workers = str(min(2, local_worker_limit()))
    command = [sys.executable, "-m", "symattn", "spectrum", "--layers", "6", "--width", "3", "--workers", workers,
               "--quiet"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=tmp_path)
    try:
        time.sleep(2.5)  # the cluster is up (about 1.5 s) and the workers compute
        assert process.poll() is None, "finished before the interrupt: choose a longer computation"
        os.killpg(process.pid, signal.SIGINT)
        started = time.monotonic()
        out, err = process.communicate(timeout=20)
        elapsed = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert (process.returncode, err, out) == (130, "symattn: interrupted\n", "")
    assert elapsed < 5, elapsed  # the workers are stopped, not waited for


# -- property: whatever the new flags are given, one line and exit 2 within the timeout -------------------------
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_FLAG_SETTINGS = settings(max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_ADDRESS_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from("tcpuxlsfie:/[]@.-_0123456789abAB \t%\u00e9\u0661"), max_size=40),
    st.builds(lambda scheme, host, port, extra: f"{scheme}{host}:{port}{extra}",
              st.sampled_from(["", "tcp://", "TCP://", "tls://", "ucx://", "inproc://", "file://", "ws://", "tcp:/"]),
              st.sampled_from(["127.0.0.1", "localhost", "[::1]", "[::1", "::1", "0", "", "a..b", "-a", "é"]),
              st.one_of(st.integers(-2, 70000).map(str), st.sampled_from(["", "abc", "1:2", "٣", "1e3", " 1"])),
              st.sampled_from(["", "/", ":1", "?x", " "])),
)


@_FLAG_SETTINGS
@given(text=_ADDRESS_TEXT)
@example(text="127.0.0.1:1")  # valid, and nothing listens there: probed and refused
@example(text="TCP://[::1]:1")
@example(text="127.0.0.1:1:2")
def test_any_scheduler_text_is_refused_in_one_line_within_the_timeout(capsys, text):
    if text.strip().lower() == "local":
        return
    started = time.monotonic()
    status = cli.main(["spectrum", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
                       f"--scheduler={text}", "--connect-timeout", "0.3"])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert status == 2, (text, err)
    assert err.startswith("symattn: error: ") and err.count("\n") == 1, (text, err)
    valid = scheduler_address(text) is not None
    assert ("cannot reach the Dask scheduler at " in err) == valid, (text, err)
    assert elapsed < 3, (text, elapsed)


@_FLAG_SETTINGS
@given(workers=st.one_of(st.integers(-10**12, 10**12), st.sampled_from(["", "two", "1.5", "1e3", "0x2", "-0"])),
       timeout=st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                         st.sampled_from(["", "5s", "1/2", "0", "-0.0", "1e-300", "86401", "९"])))
def test_any_workers_and_timeout_values_end_in_one_line(capsys, workers, timeout):
    if isinstance(workers, int) and 1 <= workers <= local_worker_limit():
        workers = 0  # a valid count would start a cluster: the refusals are what is tested here
    started = time.monotonic()
    status = cli.main(["dimension", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
                       f"--workers={workers}", f"--connect-timeout={timeout}"])
    err = capsys.readouterr().err
    assert status == 2, (workers, timeout, err)
    assert err.startswith("symattn: error: ") and err.count("\n") == 1, (workers, timeout, err)
    assert time.monotonic() - started < 3
