"""Every ``symattn`` command the documentation shows runs and gives the documented result.

The commands are read, not copied: from the fenced ``bash`` blocks of
``docs/**/*.md`` and of the notebooks' Markdown cells (each line starting
with ``symattn``; a ``\\`` continues a line, ``#`` starts a comment,
``> FILE`` writes standard output to FILE), from the ``$ symattn ...`` lines
of ``text`` blocks (the lines after them are the documented output), and
from the examples every ``symattn COMMAND --help`` shows
(:attr:`symattn.cli.Subcommand.examples`).

Two tiers:

- fast: every command is parsed by ``symattn``'s own argument parser (a
  renamed or removed flag such as ``expand --order`` fails here), and every
  exception below still names a command the docs show;
- slow: every command is run in-process (:func:`symattn.cli.main`) in a
  temporary folder, the commands of one page (or one ``--help``) in order in
  one folder, so that ``symattn verify x.json`` finds the certificate the
  line before wrote. The exit status is the documented one (0 unless
  :data:`EXPECTED_STATUS` says otherwise), and a ``text`` block right after
  a command block (the documented output) appears in what it printed.

Commands that need what a test cannot have (a Dask cluster at a named
address, a file the page does not show) and the one the docs call long (a
measured timing of minutes) run as a documented substitute
(:data:`SUBSTITUTES`); the files they read are written first
(:data:`INPUT_FILES`, :data:`CERTIFICATES`).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from symattn.cli import SUBCOMMANDS, build_parser, main

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
NOTEBOOKS = REPO / "notebooks"

#: Command lines the docs show with an exit status other than 0, and where the docs say so.
EXPECTED_STATUS = {
    # notebook 04: "with --strict the refuted F_4 = 0 makes the command exit with status 3"
    'symattn check --layers 2 --width 1 --tokens 2 --generic 1 --strict --claim "F_0 = P*X*J/t" '
    '--claim "F_1 = 0" --claim "F_4 = 0"': 3,
}

#: Command lines run as another command line, and why (the docs' line needs a cluster or a file it does
#: not show, or its page says it takes minutes). The test fails when the docs no longer show the key.
SUBSTITUTES = {
    # a Dask scheduler at a named address: the same sweep on this machine's local cluster, small grid
    "symattn sweep --grid grid.toml --scheduler tcp://host:8786 --out sweep-3":
        "symattn sweep --grid grid.toml --workers 1 --out sweep-3",
    "symattn sweep --layers 1..6 --width 2..10 --scheduler tcp://HOST:8786 --out sweep-big":
        "symattn sweep --layers 1..2 --width 2..3 --analysis dimension --workers 1 --out sweep-big",
    "symattn dimension --layers 2 --width 32 --rank 8 --tokens 8 --scheduler tcp://127.0.0.1:8786":
        "symattn dimension --layers 2 --width 32 --rank 8 --tokens 8 --workers 1",
    # DASK_SCHEDULER_ADDRESS=tcp://dask-scheduler:8786 (a Kubernetes service) and a volume at /data
    "symattn sweep --grid grid.toml --out /data/sweep-k8s":
        "symattn sweep --grid grid.toml --workers 1 --out sweep-k8s",
    # long, as its page says ("seven layers took 99 s wall with two local workers against 145-198 s"): the
    # same two local workers on three layers
    "symattn spectrum --layers 7 --workers 2": "symattn spectrum --layers 3 --workers 2",
}


#: Files the commands read that the pages name without showing a whole one: written before the commands.
INPUT_FILES = {
    # one claim a line, '#' a comment (docs/check.md)
    "claims.txt": "# claims about the network of the command line\nkernel = 3\nF_1 = 0  # no eps^1 term\n",
    # the form of docs/sweep.md's grid file, two points
    "grid.toml": 'analyses = ["dimension"]\n\n[grid]\nlayers = "1..2"\nwidth = 2\nrank = 1\n',
}

#: Certificates the ``verify`` examples read, made by the command the docs show for them.
CERTIFICATES = {
    "dimension.json": "symattn dimension --layers 2 --rank 2 --width 5 --certificate dimension.json",
    "spectrum.json": "symattn spectrum --layers 4 --certificate spectrum.json",
    "identify.json": "symattn identify --layers 2 --certificate identify.json",
    # docs/certificates.md's "symattn verify big.json --max-memory 32G ...": any certificate
    "big.json": "symattn dimension --layers 2 --rank 2 --width 5 --certificate big.json",
}


@dataclass
class Command:
    """One ``symattn`` command line as the docs show it."""

    text: str  # as shown, continuations joined, comment removed
    where: str  # page:line, or "symattn NAME --help"
    group: str  # commands of one group run in order in one folder
    output: str | None = None  # the documented output, if a text block follows
    argv: list = field(default_factory=list)
    redirect: str | None = None

    def __post_init__(self):
        words = shlex.split(self.text, comments=True)
        assert words[0] == "symattn", self.text
        if ">" in words:
            at = words.index(">")
            self.redirect = words[at + 1]
            words = words[:at]
        self.argv = words[1:]


_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.S | re.M)


def _logical_lines(body: str):
    """(line offset, text) of each line of a shell block, ``\\`` continuations joined."""
    lines, start, current = [], 0, ""
    for n, line in enumerate(body.splitlines()):
        if not current:
            start = n
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        lines.append((start, current + line))
        current = ""
    if current:
        lines.append((start, current))
    return lines


def _without_comment(line: str) -> str:
    """A shell line without its trailing ``# comment`` (a ``#`` inside quotes or a word is kept)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _normalized(text: str) -> str:
    """A command's text with single spaces and its quoting as shown (for the tables above)."""
    return " ".join(text.split())


def commands_in_markdown(text: str, where: str, group: str):
    """The ``symattn`` commands of one Markdown text: bash blocks, and ``$ symattn`` lines of text blocks."""
    found = []
    blocks = list(_FENCE.finditer(text))
    for n, block in enumerate(blocks):
        lang, body = block.group("lang"), block.group("body")
        line0 = text[:block.start()].count("\n") + 2
        if lang in ("bash", "sh", "shell", "console"):
            following = blocks[n + 1] if n + 1 < len(blocks) else None
            output = None
            if following is not None and following.group("lang") == "text" \
                    and not text[block.end():following.start()].strip():
                output = following.group("body")
            shown = []
            for offset, line in _logical_lines(body):
                stripped = _without_comment(line).strip()
                if stripped.startswith("$ "):
                    stripped = stripped[2:]
                if stripped.startswith("symattn "):
                    shown.append(Command(_normalized(stripped), f"{where}:{line0 + offset}", group))
            if shown:  # the output shown after a block is its last command's
                shown[-1].output = output
            found += shown
        elif lang == "text":
            lines = body.splitlines()
            for i, line in enumerate(lines):
                if line.startswith("$ symattn "):
                    rest = []
                    for later in lines[i + 1:]:
                        if later.startswith("$ "):
                            break
                        rest.append(later)
                    found.append(Command(_normalized(line[2:]), f"{where}:{line0 + i}", group, "\n".join(rest)))
    return found


def docs_commands():
    """Every ``symattn`` command of ``docs/`` (its Markdown pages) and of the notebooks' Markdown cells."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        relative = page.relative_to(REPO)
        if {"_build", "_generated"} & set(relative.parts):
            continue
        found += commands_in_markdown(page.read_text(encoding="utf-8"), str(relative), str(relative))
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        relative = str(notebook.relative_to(REPO))
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        text = "\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
        found += commands_in_markdown(text, relative, relative)
    return found


def help_commands():
    """The examples of every ``symattn COMMAND --help``."""
    return [Command(_normalized(example), f"symattn {name} --help", f"help-{name}")
            for name, command in SUBCOMMANDS.items() for example in command.examples]


ALL = docs_commands() + help_commands()


def _id(command: Command) -> str:
    return f"{command.where}: {command.text}"


# -- fast: the docs show commands, and every one of them parses ------------------------------------
def test_the_docs_show_commands():
    pages = {c.group for c in ALL if not c.group.startswith("help-")}
    assert len(pages) >= 15, pages
    assert {"docs/commands/expand.md", "docs/expansions.md", "docs/certificates.md"} <= pages
    assert not [name for name, command in SUBCOMMANDS.items() if not command.examples], \
        "every subcommand's --help shows examples"


def test_the_extraction_reads_continuations_comments_redirects_and_outputs():
    text = ("```bash\nsymattn check --layers 2 \\\n    --claim 'F_1 = 0'   # a comment\n"
            "cd out && pdflatex x.tex\nsymattn expand --layers 1 --latex > x.tex\n```\n\n"
            "```text\nverified: yes\n```\n\n```text\n$ symattn spectrum --layers 9\nsymattn: error: big\n```\n")
    first, second, third = commands_in_markdown(text, "page.md", "page")
    assert first.argv == ["check", "--layers", "2", "--claim", "F_1 = 0"]
    assert first.where == "page.md:2" and first.output is None
    assert second.argv == ["expand", "--layers", "1", "--latex"] and second.redirect == "x.tex"
    assert second.where == "page.md:5" and second.output == "verified: yes\n"  # the block's last command
    assert third.argv == ["spectrum", "--layers", "9"] and third.output == "symattn: error: big"


def test_every_exception_names_a_command_the_docs_show():
    shown = {c.text for c in ALL}
    for table in (EXPECTED_STATUS, SUBSTITUTES):
        stale = [text for text in table if text not in shown]
        assert not stale, f"no longer in the docs: {stale}"


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_shows_the_examples(name, capsys):
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    for example in SUBCOMMANDS[name].examples:
        assert example in " ".join(out.split()), example


@pytest.mark.parametrize("command", ALL, ids=_id)
def test_command_parses(command):
    parser = build_parser()
    try:
        parser.parse_args(command.argv)
    except SystemExit as exit_:
        pytest.fail(f"{command.where}: {command.text!r} is refused by the argument parser (exit {exit_.code})")
    substitute = SUBSTITUTES.get(command.text)
    if substitute is not None:
        build_parser().parse_args(Command(substitute, command.where, command.group).argv)


# -- slow: every command runs and gives the documented result --------------------------------------
def _documented_status(command: Command) -> int:
    if command.text in EXPECTED_STATUS:
        return EXPECTED_STATUS[command.text]
    if command.output is not None and command.output.lstrip().startswith("symattn: error:"):
        return 2
    return 0


def _run(command: Command, capsys):
    """Run one command (its substitute, if any) in the current folder; (status, stdout, stderr)."""
    runnable = Command(SUBSTITUTES.get(command.text, command.text), command.where, command.group)
    argv = list(runnable.argv)
    if command.output is None and "--quiet" not in argv:
        argv.append("--quiet")  # no progress bars; a documented output keeps what it shows
    status = main(argv)
    out, err = capsys.readouterr()
    if runnable.redirect is not None:
        Path(runnable.redirect).write_text(out, encoding="utf-8")
    return status, out, err


def _missing_output(documented: str, printed: str) -> str | None:
    """The first piece of a documented output that ``printed`` lacks, or None.

    Each line of the documented output must appear in what was printed
    (whitespace aside); ``...`` stands for text the page leaves out, so the
    pieces of a line between them are looked for one by one.

    Examples
    --------
    >>> _missing_output("verified: yes\\n...\\nrank 3 ... kernel 6", "verified: yes, rank 3 and kernel 6")
    >>> _missing_output("rank 4", "rank 3")
    'rank 4'
    """
    flat = " ".join(printed.split())
    for line in documented.splitlines():
        for piece in line.split("..."):
            piece = " ".join(piece.split())
            if piece and piece not in flat:
                return piece
    return None


def _prepare(folder: Path, commands, capsys) -> None:
    """Write the input files and certificates the group's commands read."""
    words = {word for c in commands for word in c.argv}
    for name, text in INPUT_FILES.items():
        if name in words:
            (folder / name).write_text(text, encoding="utf-8")
    made = {c.redirect for c in commands} | {c.argv[c.argv.index("--certificate") + 1]
                                             for c in commands if "--certificate" in c.argv}
    for name, maker in CERTIFICATES.items():
        if name in words and name not in made:
            status, _, err = _run(Command(maker, "setup", "setup"), capsys)
            assert status == 0, f"making {name}: {err}"


def _groups():
    groups = {}
    for command in ALL:
        groups.setdefault(command.group, []).append(command)
    return groups


GROUPS = _groups()


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_commands_run(group, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SYMATTN_DEBUG", raising=False)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    commands = GROUPS[group]
    _prepare(tmp_path, commands, capsys)
    failures = []
    for command in commands:
        status, out, err = _run(command, capsys)
        expected = _documented_status(command)
        if status != expected:
            failures.append(f"{command.where}: {command.text!r} exited {status}, documented {expected}: "
                            f"{err.strip()[-600:]}")
            continue
        if command.output is not None:
            missing = _missing_output(command.output, out + "\n" + err)
            if missing is not None:
                failures.append(f"{command.where}: {command.text!r} did not print the documented {missing!r}; "
                                f"it printed {' '.join((out + err).split())[:600]!r}")
    assert not failures, "\n".join(failures)
