"""Outputs replace only regular files or create new names (issue 35, "Outputs replace what is not theirs").

A symbolic link, a FIFO, a directory and a device node at an output's name
are refused with one line and exit status 2, before any computation, and are
left as they were (same inode, type and target).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from symattn import cli
from symattn._files import check_output_path, write_atomically
from symattn.errors import SymattnError

REFUSAL = "an output replaces only a regular file or creates a new name"


def _identity(path: Path):
    """What must not change: inode, file type, and a link's target."""
    info = os.lstat(path)
    return (info.st_ino, stat.S_IFMT(info.st_mode), info.st_rdev,
            os.readlink(path) if stat.S_ISLNK(info.st_mode) else None)


def _kinds(folder: Path) -> dict[str, tuple[Path, str]]:
    """A symbolic link (to a regular file), a FIFO and a directory; a device node when running as root."""
    target = folder / "kept.txt"
    target.write_text("kept\n")
    kinds = {}
    link = folder / "link.json"
    os.symlink(target, link)
    kinds["symlink"] = (link, f"a symbolic link (to {target})")
    fifo = folder / "fifo.json"
    os.mkfifo(fifo)
    kinds["fifo"] = (fifo, "a FIFO (named pipe)")
    directory = folder / "dir.json"
    directory.mkdir()
    kinds["directory"] = (directory, "a directory")
    if os.geteuid() == 0:
        device = folder / "null.json"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null
        kinds["device"] = (device, "a character device")
    return kinds


KINDS = ["symlink", "fifo", "directory", "device"]


def _kind(tmp_path, name):
    kinds = _kinds(tmp_path)
    if name not in kinds:
        pytest.skip("mknod of a device node needs root")
    return kinds[name]


@pytest.fixture
def no_computation(monkeypatch):
    """Every analysis the commands below would run fails the test if called."""
    def computed(*args, **kwargs):
        raise AssertionError("computed before the output path was checked")

    import symattn.identify as identify
    import symattn.observe as observe
    import symattn.spectrum as spectrum
    import symattn.verifier as verifier

    monkeypatch.setattr(spectrum, "decay_spectrum", computed)
    monkeypatch.setattr(identify, "dimension_table", computed)
    monkeypatch.setattr(identify, "identify", computed)
    monkeypatch.setattr(observe, "observe", computed)
    monkeypatch.setattr(verifier, "verify", computed)
    import symattn.numeric as numeric

    monkeypatch.setattr(numeric, "sensitivity", computed)


COMMANDS = {
    "spectrum": ["spectrum", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--certificate"],
    "dimension": ["dimension", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--certificate"],
    "identify": ["identify", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--certificate"],
    "observe": ["observe", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--collapse", "values:1",
                "--certificate"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", KINDS)
def test_certificate_refuses_what_is_not_a_regular_file_before_computing(tmp_path, capsys, no_computation,
                                                                           command, kind):
    path, described = _kind(tmp_path, kind)
    before = _identity(path)
    started = time.perf_counter()
    status = cli.main([*COMMANDS[command], str(path)])
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err
    assert status == 2
    expected = (f"symattn: error: --certificate {path}: {described} is there; {REFUSAL}: give a file name"
                + (" elsewhere" if kind != "directory" else "") + "\n")
    assert err == expected
    assert _identity(path) == before
    assert elapsed < 5, elapsed
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_check_certificate_refused_before_the_claims_are_checked(tmp_path, capsys, monkeypatch):
    import symattn.certificates as certificates

    def computed(*args, **kwargs):
        raise AssertionError("computed before the output path was checked")

    monkeypatch.setattr(certificates, "write_claims_certificate", computed)
    path, described = _kind(tmp_path, "symlink")
    before = _identity(path)
    status = cli.main(["check", "--layers", "1", "--claim", "kernel = 1", "--quiet", "--certificate", str(path)])
    assert status == 2
    assert capsys.readouterr().err == (f"symattn: error: --certificate {path}: {described} is there; {REFUSAL}: "
                                       "give a file name elsewhere\n")
    assert _identity(path) == before and (tmp_path / "kept.txt").read_text() == "kept\n"


@pytest.mark.parametrize("kind", KINDS)
def test_out_plot_and_export_refuse_too(tmp_path, capsys, no_computation, kind):
    path, described = _kind(tmp_path, kind)
    before = _identity(path)
    folder = tmp_path / "out"
    folder.mkdir()
    os.rename(path, folder / "sensitivity.json")  # --out writes NAME.json
    moved = folder / "sensitivity.json"
    if kind == "symlink":  # keep the link's target right after the move
        assert os.readlink(moved) == str(tmp_path / "kept.txt")
    assert cli.main(["sensitivity", "--layers", "1", "--quiet", "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symattn: error: --out {moved}: {described} is there; {REFUSAL}") and err.count("\n") == 1
    assert _identity(moved) == before
    os.rename(moved, folder / "sigma.svg")  # --plot sigma.png writes sigma.svg beside it
    assert cli.main(["sensitivity", "--layers", "1", "--quiet", "--plot", str(folder / "sigma.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symattn: error: --plot {folder / 'sigma.svg'}: {described} is there") and \
        err.count("\n") == 1
    os.rename(folder / "sigma.svg", folder / "observe.tikz")  # observe --export DIR writes observe.tikz
    assert cli.main(["observe", "--layers", "1", "--collapse", "values:1", "--quiet", "--export", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symattn: error: --export {folder / 'observe.tikz'}: {described} is there") and \
        err.count("\n") == 1
    assert _identity(folder / "observe.tikz") == before
    assert sorted(p.name for p in folder.iterdir()) == ["observe.tikz"]


def _certificate(tmp_path, name="dimension.json") -> Path:
    from symattn.certificates import write_dimension_certificate
    from symattn.model import Architecture

    path = tmp_path / name
    write_dimension_certificate(Architecture.uniform(layers=1, width=1, tokens=2), path)
    return path


@pytest.mark.parametrize("kind", KINDS)
def test_verify_export_output_refuses_before_checking(tmp_path, capsys, kind):
    certificate = _certificate(tmp_path)
    path, described = _kind(tmp_path, kind)
    before = _identity(path)
    import symattn.verifier as verifier

    calls = []
    real = verifier.verify
    verifier.verify = lambda *a, **k: calls.append(a) or real(*a, **k)
    try:
        status = cli.main(["verify", str(certificate), "--export", "m2", "--output", str(path)])
    finally:
        verifier.verify = real
    assert status == 2 and calls == []
    assert capsys.readouterr().err == (f"symattn: error: --output {path}: {described} is there; {REFUSAL}: give a "
                                       "file name" + (" elsewhere" if kind != "directory" else "") + "\n")
    assert _identity(path) == before


def test_verify_export_never_overwrites_its_own_input(tmp_path, capsys):
    certificate = _certificate(tmp_path, "cert.m2")
    text, before = certificate.read_bytes(), _identity(certificate)
    assert cli.main(["verify", str(certificate), "--export", "m2"]) == 2
    assert capsys.readouterr().err == (f"symattn: error: --export m2 {certificate} is the input file {certificate} "
                                       "itself; give another name for the output\n")
    # the same file under another spelling, and through --output
    assert cli.main(["verify", str(certificate), "--export", "sage", "--output",
                     str(tmp_path / "." / "cert.m2")]) == 2
    assert capsys.readouterr().err.startswith(f"symattn: error: --output {tmp_path / 'cert.m2'} is the input file")
    assert certificate.read_bytes() == text and _identity(certificate) == before


def test_a_missing_folder_is_refused_before_computing(tmp_path, capsys, no_computation):
    target = tmp_path / "missing" / "spectrum.json"
    assert cli.main([*COMMANDS["spectrum"], str(target)]) == 2
    assert capsys.readouterr().err == (f"symattn: error: --certificate {target}: the folder {tmp_path / 'missing'} "
                                       "does not exist; create it first or give a file in an existing folder\n")
    assert not (tmp_path / "missing").exists()


def test_regular_files_and_new_names_are_still_written(tmp_path, capsys):
    old = tmp_path / "spectrum.json"
    old.write_text("old")
    assert cli.main(["spectrum", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet",
                     "--certificate", str(old)]) == 0
    assert '"kind": "spectrum"' in old.read_text()
    certificate = _certificate(tmp_path)
    assert cli.main(["verify", str(certificate), "--export", "m2", "--quiet"]) == 0
    assert (tmp_path / "dimension.m2").read_text().startswith("--")
    capsys.readouterr()


@pytest.mark.parametrize("kind", KINDS)
def test_write_atomically_refuses_and_leaves_it(tmp_path, kind):
    path, described = _kind(tmp_path, kind)
    before = _identity(path)
    written = []
    with pytest.raises(SymattnError) as refused:
        write_atomically(path, lambda temporary: written.append(temporary.write_text("new")))
    assert str(refused.value) == (f"{path}: {described} is there; {REFUSAL}: give a file name"
                                  + (" elsewhere" if kind != "directory" else ""))
    assert written == [] and _identity(path) == before


def test_write_atomically_checks_again_before_its_rename(tmp_path):
    path = tmp_path / "result.json"
    target = tmp_path / "kept.txt"
    target.write_text("kept\n")

    def write(temporary):  # something puts a link at the name while the content is written
        temporary.write_text("new")
        os.symlink(target, path)

    with pytest.raises(SymattnError, match=r"result\.json: a symbolic link \(to .*kept\.txt\) is there"):
        write_atomically(path, write)
    assert os.readlink(path) == str(target) and target.read_text() == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt", "result.json"]


def test_check_output_path_accepts_new_names_and_regular_files(tmp_path):
    (tmp_path / "old.json").write_text("{}")
    assert check_output_path(tmp_path / "old.json", "--certificate") == tmp_path / "old.json"
    assert check_output_path(tmp_path / "new.json", "--certificate") == tmp_path / "new.json"
    with pytest.raises(SymattnError) as refused:
        check_output_path("", "--certificate")
    assert str(refused.value) == "--certificate .: not a file name; give a file name such as result.json"


@pytest.mark.parametrize("kind", KINDS)
def test_the_certificate_writers_check_the_path_before_computing(tmp_path, monkeypatch, kind):
    import symattn.certificates as certificates
    from symattn.model import Architecture

    def computed(*args, **kwargs):
        raise AssertionError("computed before the output path was checked")

    monkeypatch.setattr(certificates, "spectrum_certificate", computed)
    path, described = _kind(tmp_path, kind)
    before = _identity(path)
    with pytest.raises(SymattnError) as refused:
        certificates.write_spectrum_certificate(Architecture.uniform(layers=1), path)
    assert str(refused.value) == (f"{path}: {described} is there; {REFUSAL}: give a file name"
                                  + (" elsewhere" if kind != "directory" else ""))
    assert _identity(path) == before


@pytest.mark.parametrize("kind", KINDS)
def test_sweep_refuses_its_tables_before_running(tmp_path, capsys, monkeypatch, kind):
    import symattn.cli.sweep as sweep_command

    def computed(*args, **kwargs):
        raise AssertionError("swept before the output paths were checked")

    monkeypatch.setattr(sweep_command, "sweep", computed)
    path, described = _kind(tmp_path, kind)
    before = _identity(path)
    folder = tmp_path / "out"
    folder.mkdir()
    os.rename(path, folder / "results.csv")
    status = cli.main(["sweep", "--layers", "1", "--scheduler", "synchronous", "--quiet", "--out", str(folder)])
    assert status == 2
    assert capsys.readouterr().err == (f"symattn: error: --out {folder / 'results.csv'}: {described} is there; "
                                       f"{REFUSAL}: give a file name" + (" elsewhere" if kind != "directory" else "")
                                       + "\n")
    assert _identity(folder / "results.csv") == before and sorted(p.name for p in folder.iterdir()) == ["results.csv"]


def test_report_figures_refused_before_any_file_is_written(tmp_path, capsys):
    # the figures' names are known once the report is computed: all are checked before the first file is written
    folder = tmp_path / "out"
    folder.mkdir()
    os.mkfifo(folder / "sensitivity.svg")
    before = _identity(folder / "sensitivity.svg")
    assert cli.main(["report", "--layers", "1", "--width", "1", "--tokens", "2", "--quiet", "--out", str(folder)]) == 2
    assert capsys.readouterr().err == (f"symattn: error: --out {folder / 'sensitivity.svg'}: a FIFO (named pipe) is "
                                       f"there; {REFUSAL}: give a file name elsewhere\n")
    assert _identity(folder / "sensitivity.svg") == before
    assert sorted(p.name for p in folder.iterdir()) == ["sensitivity.svg"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc, a folder no one can create files in")
def test_a_folder_that_cannot_be_written_is_refused_before_computing(capsys, no_computation):
    assert cli.main([*COMMANDS["spectrum"], "/proc/symattn-certificate.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symattn: error: --certificate /proc/symattn-certificate.json: the folder /proc cannot be "
                          "written (") and err.endswith("); give a file in a folder you can write\n")
    assert err.count("\n") == 1 and ".tmp" not in err
