"""`symattn check` does what the Python API does: generic normalizers, F_n and leading claims, same verdicts.

Each hand-check is made twice: in Python, as a user writes it (sympy matrices built by hand and
``check_expression(claimed, expand(...)[n])``), and on the command line (``--claim`` and ``--claims FILE``).
"""

import json
import re
import shutil
import subprocess

import pytest
import sympy as sp

from symattn.check import check_claims, check_expression
from symattn.cli import main
from symattn.cli.check import EXIT_REFUTED, EXIT_UNDECIDED
from symattn.expand import curve_symbols, expand
from symattn.model import Architecture
from symattn.normalizers import Normalizer

FLAGS = ["--layers", "2", "--width", "1", "--tokens", "2", "--quiet"]
ARCH = Architecture.uniform(layers=2, width=1, rank=1, tokens=2)


def _hand_matrices(arch):
    """The named matrices of the formula language, built by hand in sympy (as a user would)."""
    b = curve_symbols(arch)
    X = arch.input_symbols()
    t = arch.tokens
    J = sp.ones(t, t)
    W1 = b.K[0].T * b.Q[0]
    W2 = b.V[0].T * b.K[1].T * b.Q[1] * b.V[0]
    return {"P": b.V[1] * b.V[0], "X": X, "J": J, "H": sp.eye(t) - J / t, "C_1": X.T * W1 * X,
            "C_2": X.T * W2 * X, "t": t}


def _api_verdict(claim_kind, n, hand, normalizer):
    """check_expression(claimed, computed) against the package's expansion, as in docs/check.md."""
    arch = ARCH if normalizer is None else ARCH.replace(normalizer=normalizer)
    if claim_kind == "F":
        return check_expression(hand, expand(arch, truncation=max(n, 1) + 1)[n]).verdict
    # leading(2): F_6 - F_6 with Kt_2 = 0
    zero = {s.name: 0 for s in curve_symbols(arch).K[1]}
    full, collapsed = expand(arch, truncation=7), expand(arch, point=zero, truncation=7)
    return check_expression(hand, full[6] - collapsed[6]).verdict


def _cases():
    c = sp.Symbol("c_1")  # a plain sympy Symbol: identified by name with the package's real c_1
    m = _hand_matrices(ARCH)
    P, X, J, H, C1, C2, t = (m[k] for k in ("P", "X", "J", "H", "C_1", "C_2", "t"))
    zero = sp.zeros(1, 2)
    lead2 = P * X * H * C1 * H * C1.T * H * C2 * J
    return [
        # (claim text, kind, n, hand-built claimed matrix with c = c_1)
        ("F_0 = P*X*J/t", "F", 0, P * X * J / t),
        ("F_0 = P*X/t", "F", 0, P * X / t),
        ("F_1 = 0", "F", 1, zero),
        ("F_2 = c_1/t^2 * P*X*H*C_1*J", "F", 2, c / t**2 * P * X * H * C1 * J),
        ("F_2 = c_1/t * P*X*H*C_1", "F", 2, c / t * P * X * H * C1),
        ("F_3 = 0", "F", 3, zero),
        ("F_4 = 0", "F", 4, zero),
        ("leading(2) = c_1^3/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J", "leading", 6, c**3 / t**4 * lead2),
        ("leading(2) = c_1^3/t^4 * P*X*H*C_1*C_1.T*H*C_2*J", "leading", 6,
         c**3 / t**4 * P * X * H * C1 * C1.T * H * C2 * J),
    ]


@pytest.mark.parametrize("generic", [False, True], ids=["softmax", "generic1"])
def test_cli_verdicts_equal_the_api_verdicts(generic, tmp_path, capsys):
    normalizer = Normalizer.generic(1) if generic else None
    cases = _cases()
    api = []
    for claim, kind, n, hand in cases:
        if not generic:  # softmax: c_1 = 1
            hand = hand.subs(sp.Symbol("c_1"), 1)
        api.append(_api_verdict(kind, n, hand, normalizer))
    assert None not in api and True in api and False in api  # true and false claims, all decided
    extra = ["--generic", "1"] if generic else []
    argv = ["check", *FLAGS, *extra, "--json"]
    for claim, *_ in cases:
        argv += ["--claim", claim]
    assert main(argv) == 0
    cli = [c["verdict"] for c in json.loads(capsys.readouterr().out)["claims"]]
    assert cli == api
    # the same from a claims file, and with --normalizer generic for --generic 1
    path = tmp_path / "claims.txt"
    path.write_text("\n".join(claim for claim, *_ in cases) + "\n")
    extra = ["--normalizer", "generic"] if generic else []
    assert main(["check", *FLAGS, *extra, "--claims", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["verdict"] for c in data["claims"]] == api
    if generic:
        assert data["architecture"]["normalizers"] == ["generic(k=1)", "generic(k=1)"]


def test_generic_k_and_its_errors(capsys):
    # k = 2: layer 1's scores appear at eps^4, so F_2 = 0 and F_3 = 0
    assert main(["check", *FLAGS, "--generic", "2", "--json", "--claim", "F_2 = 0", "--claim", "F_3 = 0",
                 "--claim", "F_4 = 0"]) == 0
    assert [c["verdict"] for c in json.loads(capsys.readouterr().out)["claims"]] == [True, True, False]
    assert main(["check", *FLAGS, "--generic", "0", "--claim", "F_1 = 0"]) == 2
    assert "--generic K takes a positive integer" in capsys.readouterr().err


def test_a_refuted_claim_shows_entry_values_and_only_the_symbols_that_matter(capsys):
    arch = ARCH.replace(normalizer=Normalizer.generic(1))
    claim = "F_4 = 0"
    report = check_claims(arch, [claim])
    check = report.checks[0]
    ce = check.counterexample
    assert check.verdict is False and ce.entry is not None
    F = expand(arch, truncation=5)
    entry = F[4][ce.entry]
    names = {name for name, _ in ce.point}
    assert names == {s.name for s in entry.free_symbols}  # c_3, c_4, c_5 do not occur: not shown
    assert not any(name in names for name in ("c_3", "c_4", "c_5"))
    point = {s: sp.Rational(v) for s in entry.free_symbols for name, v in ce.point if s.name == name}
    assert entry.xreplace(point) == sp.Rational(ce.computed) and ce.claimed == "0"
    # every output format says the entry, both values and the point
    text = str(report)
    markdown = report.to_markdown()
    latex = report.to_latex()
    # the entry counted from 1 in every text, as the symbols x_12 are (ce.entry is the 0-based index)
    row, col = ce.entry[0] + 1, ce.entry[1] + 1
    assert f"entry ({row}, {col})" in text and f"claimed value 0, computed value {ce.computed}" in text
    assert f"entry $({row}, {col})$" in markdown  # formulas in Markdown are LaTeX math
    assert f"computed value ${sp.latex(sp.Rational(ce.computed))}$" in markdown
    assert f"entry $({row}, {col})$" in latex and "claimed value $0$" in latex
    for output in (text, markdown):
        assert "c_3" not in output.split("counterexample")[-1]
    assert main(["check", *FLAGS, "--generic", "1", "--json", "--claim", claim]) == 0
    data = json.loads(capsys.readouterr().out)["claims"][0]["counterexample"]
    assert data["entry"] == list(ce.entry) and set(data["point"]) == names
    assert data["claimed"] == "0" and data["computed"] == ce.computed


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown_cells_escape_pipes():
    report = check_claims(ARCH, ["leading(2) = P*X*H*C_1*C_1.T*H*C_2*J/16", "kernel = 3", "F_1 = 0"])
    assert any("F_6 - F_6\\|Kt_2=0" in line for line in report.to_markdown().splitlines())
    rows = [line for line in report.to_markdown().splitlines() if line.startswith("|")]
    assert len(rows) == 5
    assert {_unescaped_pipes(line) for line in rows} == {5}


PDFLATEX = shutil.which("pdflatex")
PDFTOTEXT = shutil.which("pdftotext")


@pytest.mark.skipif(not (PDFLATEX and PDFTOTEXT), reason="pdflatex or pdftotext not installed")
def test_standalone_latex_compiles_without_overfull_boxes_or_python_syntax(tmp_path, capsys):
    claims = ["kernel = 5", "contact_order(2) = 5", "F_0 = P*X*J/t", "F_2 = c_1/t * P*X*H*C_1", "F_4 = 0",
              "leading(2) = c_1^3/t^4 * P*X*H*C_1*C_1.T*H*C_2*J"]
    argv = ["check", *FLAGS, "--generic", "1", "--latex", "--standalone"]
    for claim in claims:
        argv += ["--claim", claim]
    assert main(argv) == 0
    document = capsys.readouterr().out
    assert "counterexample" in document and r"\begin{enumerate}" in document
    (tmp_path / "check.tex").write_text(document)
    run = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "check.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "check.log").read_text(errors="replace")
    overfull = [float(m) for m in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
    assert all(width <= 1.0 for width in overfull), overfull
    text = subprocess.run([PDFTOTEXT, "check.pdf", "-"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60).stdout
    assert "counterexample" in text and "claimed value" in text
    for literal in ("True", "False", "None", "**"):
        assert literal not in text, literal


def test_strict_exit_codes(capsys, monkeypatch):
    assert main(["check", *FLAGS, "--claim", "kernel = 3", "--strict"]) == 0
    assert main(["check", *FLAGS, "--claim", "kernel = 5"]) == 0  # without --strict: a verdict, not an error
    assert main(["check", *FLAGS, "--claim", "kernel = 5", "--claim", "F_1 = 0", "--strict"]) == EXIT_REFUTED == 3
    out = capsys.readouterr().out
    assert "| `kernel = 5` | false |" in out  # the report is printed all the same
    # an undecided claim (the engine could not settle it), none refuted: 4
    import symattn.check as check_module

    real = check_module.check_claims

    def undecided(arch, claims, **kwargs):
        report = real(arch, claims, **kwargs)
        first = report.checks[0]
        from dataclasses import replace

        return type(report)(report.architecture, (replace(first, verdict=None),) + report.checks[1:])

    monkeypatch.setattr(check_module, "check_claims", undecided)
    assert main(["check", *FLAGS, "--claim", "kernel = 3", "--strict"]) == EXIT_UNDECIDED == 4
    assert main(["check", *FLAGS, "--claim", "kernel = 3"]) == 0
    assert main(["check", *FLAGS, "--claim", "kernel = 3", "--claim", "kernel = 4", "--strict"]) == 3
    assert main(["check", *FLAGS, "--claim", "depth = 3", "--strict"]) == 2  # a usage error stays 2


def test_help_has_examples_and_every_claim_form(capsys):
    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "symattn check --layers 2" in out and "--strict" in out and "--generic" in out
    assert main(["check", *FLAGS, "--claim", "depth = 2"]) == 2
    err = capsys.readouterr().err
    for form in ("contact_order(i) = n", "sign_group_order = n", "leading(i) = <matrix formula>",
                 "F_n = <matrix formula>"):
        assert form in err


def test_a_misshapen_formula_names_the_shapes(capsys):
    assert main(["check", *FLAGS, "--claim", "leading(2) = P*X*C_1*X"]) == 2
    err = capsys.readouterr().err
    assert "Matrices are not aligned', 3" not in err
    assert "shapes 1 x 2 and 1 x 2" in err and "must be 1 x 2" in err
    assert main(["check", *FLAGS, "--claim", "F_1 = X*P"]) == 2
    assert "shapes 1 x 2 and 1 x 1" in capsys.readouterr().err


@pytest.mark.parametrize("claim, message", [
    ("F_x = 0", "n in F_n must be an integer 0..128"),
    ("F_2 = P*X*Y", "the name 'Y' is not known"),
    ("F_2 = __import__('os')", "the call '__import__' is not accepted"),
    ("F_2 = c_1", "a scalar, not a matrix formula"),
])
def test_coefficient_claims_are_read_safely(claim, message, capsys):
    assert main(["check", *FLAGS, "--claim", claim]) == 2
    assert message in capsys.readouterr().err
