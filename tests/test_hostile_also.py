"""Issue 35, "Also": five inputs that hung, exhausted memory or were accepted wrongly, each refused now.

1. The dimension's memory estimate computes no symmetry orbit it cannot afford (4.9 GB before).
2. Activations that are not analytic (``x**(1/3)``, ``x**(4/3)``, ...) are refused as normalizers are.
3. A formula claim is measured by the one claim cap before its layer is read; ``check_expression``
   refuses ``Max`` and the other non-analytic heads instead of letting sympy compare 400 polynomials.
4. A normalizer's comment reaches ``report.md`` escaped: no HTML, no broken code span.
5. A TOML grid is measured before it is parsed (a 100,000-part dotted key took 44 s).
"""


import pytest
import sympy as sp

from symattn.check import check_expression
from hang_guard import quickly as _quickly
from symattn.cli import main
from symattn.errors import NormalizerError, ParseError, SymattnError
from symattn.expand import parse_formula_claim
from symattn.model import Architecture
from symattn.parsing import MAX_CLAIM_LENGTH

#: Seconds a refusal may take before it counts as a hang (they took 15 s to minutes before the fixes).
HANG_GUARD = 10


def quickly():
    return _quickly(HANG_GUARD)




def _refused(capsys, argv) -> str:
    """The command line exits 2 with one line on stderr; that line."""
    with quickly():
        status = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("symattn: error: "), err
    return lines[0]


# -- 1. the dimension's memory estimate ------------------------------------------------------------
@pytest.fixture
def small_orbits_only(monkeypatch):
    """Symmetry tangents may be built only for small networks (the estimate's resized ones)."""
    original = Architecture.symmetry_tangents

    def guarded(self, group=None):
        assert self.symmetry_dimension() * self.param_count <= 10**7, f"tangents built for {self.describe()}"
        return original(self, group)

    monkeypatch.setattr(Architecture, "symmetry_tangents", guarded)


def test_the_memory_estimate_builds_no_large_symmetry_orbit(capsys, small_orbits_only):
    # 54,094 tangents of 120,778 parameters: the orbit's arrays alone are 52 GB (4.9 GB, then MemoryError)
    line = _refused(capsys, ["dimension", "--layers", "7", "--width", "64", "--ffn", "100", "--bias",
                             "--max-memory", "1G", "--quiet"])
    assert "--layers 7" in line and "fits" in line


def test_a_wide_feed_forward_network_is_refused_by_its_memory(capsys, small_orbits_only):
    # (ran past 300 s in the estimate before)
    line = _refused(capsys, ["dimension", "--layers", "2", "--width", "64", "--ffn", "100", "--bias",
                             "--max-memory", "1G", "--quiet"])
    assert "over the limit of 1.0 GiB" in line and "--max-memory SIZE" in line


def test_the_spectrums_estimate_builds_no_large_symmetry_orbit(capsys, small_orbits_only):
    # the spectrum computed the orbit's bound before its memory check (14 s, 4.9 GB, then out of memory)
    for layers in ("7", "2"):
        line = _refused(capsys, ["spectrum", "--layers", layers, "--width", "64", "--ffn", "100", "--bias",
                                 "--max-memory", "1G", "--quiet"])
        assert f"--layers {layers} --width 64" in line and "over the limit of 1.0 GiB" in line


def test_the_estimate_bound_is_the_engine_bound_where_that_is_cheap():
    from symattn.identify.common import _estimate_upper_bound
    from symattn.jacobian import native_rank_bound

    for arch in (Architecture.uniform(layers=2, width=3, rank=2), Architecture.uniform(layers=2, ffn=2),
                 Architecture.uniform(layers=2, bias=True, residual=True), Architecture.uniform(layers=2, heads=2),
                 Architecture.uniform(layers=2, tokens=1), Architecture.uniform(layers=2, normalizer="lightning")):
        assert _estimate_upper_bound(arch) == native_rank_bound(arch)[0], arch.describe()


def test_the_estimate_bound_is_never_below_the_engine_bound():
    # a bottleneck: the sum of the blocks' dimensions, a proved bound, without sympy
    from symattn.identify.common import _estimate_upper_bound
    from symattn.jacobian import native_rank_bound

    for arch in (Architecture([3, 1, 3], [1, 1]), Architecture([4, 2, 4], [2, 2]),
                 Architecture([3, 1, 3], [1, 1], causal=True)):
        assert _estimate_upper_bound(arch) >= native_rank_bound(arch)[0]


def test_a_small_dimension_still_runs():
    from symattn.identify import function_space_dimension

    result = function_space_dimension(Architecture.uniform(layers=2, width=2, rank=1, ffn=2), estimate=None,
                                      max_memory="1G")
    assert result.lower == result.upper


# -- 2. activations that are not analytic ----------------------------------------------------------
NON_ANALYTIC = ["x**(1/3)", "x**(2/3)", "x**(4/3)", "x**(5/3)", "x + x**(1/3)", "sqrt(x)", "(exp(x) - 1)**(1/2)"]


@pytest.mark.parametrize("text", NON_ANALYTIC)
def test_fractional_powers_are_refused_as_activations(text):
    from symattn.model.feedforward import Activation

    with quickly(), pytest.raises(NormalizerError) as info:
        Activation(text)
    message = str(info.value)
    assert message.startswith(f"activation {text} is not real-analytic: ")
    assert "non-integer power" in message and "use integer powers of x" in message and "gelu" in message
    with pytest.raises(NormalizerError, match="not real-analytic"):
        Architecture.uniform(layers=1, ffn=2, activation=text)


@pytest.mark.parametrize("text", ["x**(1/3)", "x**(5/3)", "x + x**(1/3)"])
def test_the_command_line_refuses_fractional_activations(capsys, text):
    line = _refused(capsys, ["dimension", "--layers", "1", "--ffn", "2", "--activation", text, "--quiet"])
    assert f"activation {text} is not real-analytic" in line and "non-integer power" in line


def test_normalizers_are_refused_by_the_same_check_even_when_assumed_positive():
    from symattn.normalizers import Normalizer

    for assume in (False, True):
        with pytest.raises(NormalizerError, match=r"normalizer exp\(x\) \+ x\*\*\(2/3\) is not real-analytic: "
                                                  r"x\*\*\(2/3\) is a non-integer power"):
            Normalizer("exp(x) + x**(2/3)", assume_positive=assume)


@pytest.mark.parametrize("text", ["x**3", "gelu", "tanh", "(1 + x**2)**(1/3)", "x**(6/3)", "2**x", "x + x**2"])
def test_analytic_activations_are_accepted(text):
    from symattn.model.feedforward import Activation

    Activation(text)


# -- 3. formula claims and check_expression --------------------------------------------------------
@pytest.mark.parametrize("digits", [4400, 5000])
def test_a_formula_claim_with_a_huge_layer_is_refused_by_length(digits):
    claim = "leading(" + "1" * digits + ") = P"
    with quickly(), pytest.raises(ParseError, match=f"is too long: {len(claim)} characters, at most "
                                                    f"{MAX_CLAIM_LENGTH} are accepted"):
        parse_formula_claim(Architecture.uniform(layers=2), claim)


def test_a_formula_claim_names_its_layer_under_the_cap():
    with pytest.raises(SymattnError, match=r"names layer '1111.*\(1900 characters\); the architecture has "
                                           r"layers 1\.\.2"):
        parse_formula_claim(Architecture.uniform(layers=2), "leading(" + "1" * 1900 + ") = P")


def test_the_command_line_refuses_a_huge_layer_in_a_claim(capsys):
    line = _refused(capsys, ["check", "--layers", "2", "--claim", "leading(" + "1" * 5000 + ") = P", "--quiet"])
    assert f"at most {MAX_CLAIM_LENGTH} are accepted" in line and len(line) < 1000


def test_a_valid_formula_claim_is_still_read():
    layer, lc, formula = parse_formula_claim(Architecture.uniform(layers=2), "leading(2) = 1/t^4 * P*X*H*C_1*H*C_1.T*H*C_2*J")
    assert layer == 2 and formula is not None


def _polynomials(n):
    x, y = sp.symbols("x y")
    return x, y, [x**2 + i * x * y + y**3 - i for i in range(n)]


@pytest.mark.parametrize("side", ["claimed", "computed"])
def test_check_expression_refuses_max_of_polynomials(side):
    x, y, polynomials = _polynomials(32)
    big = sp.Max(*polynomials, evaluate=False)
    claimed, computed = (big, x + y) if side == "claimed" else (x + y, big)
    with quickly(), pytest.raises(ParseError, match=f"the {side} expression Max.* uses Max, which is not analytic"):
        check_expression(claimed, computed)


def test_check_expression_refuses_max_of_400_polynomials_given_as_text():
    x, y, polynomials = _polynomials(400)
    text = "Max(" + ", ".join(map(str, polynomials)) + ")"
    with quickly(), pytest.raises(ParseError, match="Max of 400 arguments is not accepted; at most 32"):
        check_expression(text, x + y)


@pytest.mark.parametrize("head", [sp.Abs, sp.sign, sp.floor])
def test_check_expression_refuses_the_other_non_analytic_heads(head):
    x = sp.Symbol("x")
    with quickly(), pytest.raises(ParseError, match=f"uses {head.__name__}, which is not analytic"):
        check_expression(head(x) + x, x)
    pw = sp.Piecewise((x, x > 0), (0, True))
    with pytest.raises(ParseError, match="uses Piecewise"):
        check_expression(x, pw)


def test_check_expression_still_checks_polynomials():
    x, y = sp.symbols("x y")
    assert check_expression("(x + y)^2", x**2 + 2 * x * y + y**2).verdict is True
    assert check_expression(sp.exp(x) * sp.exp(y), sp.exp(x + y)).verdict is True


# -- 4. a normalizer's comment in report.md --------------------------------------------------------
HOSTILE_NORMALIZER = "exp(x)  # a `b` <script>alert(1)</script>"
HOSTILE_ACTIVATION = "x + x**2 # <img src=x onerror=alert(1)> ``c`` | d"


def _html(markdown: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)


def test_the_report_writes_a_commented_normalizer_as_code(capsys):
    status = main(["report", "--layers", "1", "--width", "1", "--tokens", "2", "--ffn", "2",
                   "--activation", HOSTILE_ACTIVATION, "--normalizer", HOSTILE_NORMALIZER, "--quiet"])
    markdown = capsys.readouterr().out
    assert status == 0
    html = _html(markdown)
    assert "<script" not in html and "<img src=x" not in html
    assert "<code>exp(x) # a `b` &lt;script&gt;alert(1)&lt;/script&gt;</code>" in html
    assert "<code>x + x**2 # &lt;img src=x onerror=alert(1)&gt; ``c`` | d</code>" in html
    assert "| normalizer | ``exp(x) # a `b` <script>alert(1)</script>`` (k = 1, not even) |" in markdown


def test_report_sections_write_user_names_as_code():
    from symattn._format import Section
    from symattn.report import architecture_report

    arch = Architecture.uniform(layers=1, tokens=2, normalizer=HOSTILE_NORMALIZER)
    prose = f"- no formula claimed for the normalizer {arch.normalizers[0].name}"
    table = f"| normalizer | {arch.normalizers[0].name} |"
    report = architecture_report(arch).with_sections(Section("Note", "note", {}, prose + "\n\n" + table, "x"))
    html = _html(report.to_markdown())
    assert "<script" not in html and html.count("&lt;script&gt;") == 3  # the architecture, the prose, the table


def test_markdown_code_survives_every_backtick_run():
    from symattn._format import markdown_code

    for text in ["`", "``", "a`", "`a", "a ``` b", "<b>|</b>", "line\nbreak <i>"]:
        html = _html(markdown_code(text))
        assert html.startswith("<p><code>") and html.rstrip().endswith("</code></p>"), (text, html)
        assert "<b>" not in html and "<i>" not in html


# -- 5. a TOML grid with a long dotted key ---------------------------------------------------------
@pytest.mark.parametrize("key", [".".join(["a"] * 100_000), ".".join(['"a b"'] * 50_000),
                                 "[" + ".".join(["a"] * 100_000) + "]\nx"])
def test_a_grid_file_with_a_long_dotted_key_is_refused_before_parsing(tmp_path, capsys, key):
    from symattn.sweep.grid import MAX_KEY_PARTS

    path = tmp_path / "grid.toml"
    path.write_text(key + " = 1\n")
    line = _refused(capsys, ["sweep", "--grid", str(path), "--quiet"])
    parts = 50_000 if '"' in key else 100_000
    assert f"has a dotted key of {parts} parts on line 1; a grid file's keys have at most {MAX_KEY_PARTS}" in line


def test_a_grid_file_with_a_huge_integer_is_a_grid_error(tmp_path, capsys):
    path = tmp_path / "grid.toml"
    path.write_text("[grid]\nlayers = " + "1" * 5000 + "\n")
    line = _refused(capsys, ["sweep", "--grid", str(path), "--quiet"])
    assert "has an integer of more than 4300 digits; a field takes integers up to 1000000000" in line


def test_dotted_keys_are_measured_outside_strings_only():
    from symattn.sweep.grid import longest_dotted_key

    text = ('[grid]\nlayers = "1..3"\nnormalizer = ["a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r"]\n'
            "# a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r\nnote = '''\na.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r'''\n"
            "spectrum.bank = 1.5\n")
    assert longest_dotted_key(text) == (2, 7)


def test_a_valid_grid_file_is_still_read(tmp_path):
    from symattn.sweep.grid import read_grid_file

    path = tmp_path / "grid.toml"
    path.write_text('analyses = ["dimension"]\ngrid.layers = "1..2"\ngrid.width = [2, 3]\n[spectrum]\nbank = 4\n')
    spec = read_grid_file(path)
    assert spec["grid"] == {"layers": "1..2", "width": [2, 3]} and spec["options"] == {"spectrum": {"bank": 4}}
