"""The Sphinx documentation: a warning-free build that is readable offline.

The docs are built once per module (about 15-60 s: every notebook and every
"Reproducing the paper" page is executed) and every test below reads that
one build:

- the build has no warning (``-W``);
- MathJax is shipped with the docs: each page with math loads a local
  ``_static/mathjax/tex-chtml.js`` that exists in the build, and no page
  loads a script or a stylesheet from a network;
- the theme, the copy buttons and the search index are there;
- the "Reproducing the paper" pages carry their computed output;
- when a headless browser is installed, the index, the theory page and a
  tutorial are rendered: no raw ``\\(``, ``\\[`` or ``$$`` remains in the
  text, MathJax typeset the formulas, and the search page finds results.
"""

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"
MATHJAX_SCRIPT = "tex-chtml.js"

#: the sphinx build executes every page (about a minute and a half): not in the fast tier
pytestmark = pytest.mark.slow

# The pages of "Reproducing the paper", each with a value that only the
# executed computation prints.
REPRODUCING_PAGES = {
    "claim1_generic_fiber": "kernel = symmetry orbit",
    "claim2_exceptional_fibers": "generic rank of the native Jacobian: 10",
    "claim3_identification_orders": "[4, 4, 7, 7, 7, 7, 10]",
    "claim4_decay_spectrum": "{0: 4, 1: 3, 5: 3, 17: 3, 53: 3}",
    "claim5_numerical_sensitivity": "float64 loses exponents: 5, 5, 5, 17, 17, 17",
    "hmk_figure3": "10                172      172      True",
}


@pytest.fixture(scope="module")
def docs_build(tmp_path_factory):
    """Build the HTML docs once; return (html folder, completed process)."""
    pytest.importorskip("sphinx")
    out = tmp_path_factory.mktemp("docs")
    result = subprocess.run(
        [
            sys.executable, "-m", "sphinx",
            "-W", "--keep-going",
            "-b", "html",
            "-d", str(out / "doctrees"),
            str(DOCS_DIR), str(out / "html"),
        ],
        capture_output=True,
        text=True,
    )
    return out / "html", result


@pytest.fixture(scope="module")
def html_dir(docs_build):
    html, result = docs_build
    if result.returncode != 0:
        pytest.fail("the docs did not build; see test_sphinx_build_has_no_warnings")
    return html


def test_sphinx_build_has_no_warnings(docs_build):
    _, result = docs_build
    if result.returncode != 0:
        print(result.stdout)
        print(result.stderr, file=sys.stderr)
    assert result.returncode == 0, "sphinx build failed or warned:\n" + result.stderr[-5000:]


# -- what the built HTML references -------------------------------------------


class _References(HTMLParser):
    """Script sources, stylesheet links, and the text outside scripts and styles."""

    def __init__(self):
        super().__init__()
        self.scripts = []
        self.stylesheets = []
        self.text = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and attrs.get("src"):
            self.scripts.append(attrs["src"])
        if tag == "link" and "stylesheet" in (attrs.get("rel") or ""):
            self.stylesheets.append(attrs.get("href", ""))
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def _parse(path):
    parser = _References()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _pages(html):
    return sorted(p for p in html.rglob("*.html") if "_static" not in p.parts)


def _has_math(path):
    return 'class="math' in path.read_text(encoding="utf-8")


def test_math_pages_load_the_local_mathjax(html_dir):
    theory = html_dir / "theory.html"
    assert _has_math(theory)
    math_pages = [page for page in _pages(html_dir) if _has_math(page)]
    # the theory page, the identification and observability pages, the
    # tutorials and the reproducing pages all have formulas
    assert len(math_pages) >= 10
    for page in math_pages:
        mathjax = [src for src in _parse(page).scripts if "mathjax" in src.lower()]
        assert len(mathjax) == 1, f"{page.name}: MathJax scripts {mathjax}"
        src = mathjax[0]
        assert not re.match(r"^(https?:)?//", src), f"{page.name} loads MathJax from {src}"
        script = (page.parent / src.split("?")[0]).resolve()
        assert script == (html_dir / "_static" / "mathjax" / MATHJAX_SCRIPT).resolve()
        assert script.is_file()
    # MathJax finds its own components and fonts next to the script
    fonts = html_dir / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert any(fonts.glob("MathJax_Main-Regular.woff"))
    assert (html_dir / "_static" / "mathjax" / "input" / "tex" / "extensions" / "ams.js").is_file()


def test_no_page_loads_anything_from_a_network(html_dir):
    remote = re.compile(r"^(https?:)?//")
    for page in _pages(html_dir):
        refs = _parse(page)
        assert not [s for s in refs.scripts if remote.match(s)], page
        assert not [s for s in refs.stylesheets if remote.match(s)], page


def test_theme_copy_buttons_and_search(html_dir):
    index = _parse(html_dir / "index.html")
    assert any("pydata-sphinx-theme" in href for href in index.stylesheets)
    assert any("symattn.css" in href for href in index.stylesheets)
    assert any(src.split("?")[0].endswith("copybutton.js") for src in index.scripts)
    assert (html_dir / "_static" / "copybutton.js").is_file()
    assert (html_dir / "search.html").is_file()
    searchindex = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    assert "decay" in searchindex and "reproducing/index" in searchindex


def test_reproducing_pages_show_computed_output(html_dir):
    index = html_dir / "reproducing" / "index.html"
    assert index.is_file()
    assert "reproducing/index.html" in (html_dir / "index.html").read_text(encoding="utf-8")
    for name, computed in REPRODUCING_PAGES.items():
        page = html_dir / "reproducing" / f"{name}.html"
        assert page.is_file(), name
        text = page.read_text(encoding="utf-8")
        assert f'href="{name}.html"' in index.read_text(encoding="utf-8"), name
        # executed cells and their output, not pasted text
        assert "cell_output" in text, name
        assert computed in "".join(_parse(page).text), (name, computed)


# -- a headless browser, when one is installed --------------------------------

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome",
             "headless_shell")


def _browser():
    """A headless Chromium on PATH (or SYMATTN_BROWSER), or None."""
    candidates = [os.environ.get("SYMATTN_BROWSER")] + list(_BROWSERS)
    for name in candidates:
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _render(browser, url, tmp_path, screenshot=None):
    """The DOM of ``url`` after its scripts ran (MathJax included)."""
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-extensions",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1366,900",
        # let MathJax typeset before the DOM is read; virtual time, not wall time
        "--virtual-time-budget=20000",
    ]
    if screenshot is not None:
        subprocess.run([browser, *flags, f"--screenshot={screenshot}", url],
                       capture_output=True, timeout=120)
    result = subprocess.run([browser, *flags, "--dump-dom", url],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def browser():
    found = _browser()
    if found is None:
        pytest.skip("no headless browser installed (chromium, google-chrome or SYMATTN_BROWSER); "
                    "the rendered-math check needs one")
    return found


@pytest.mark.parametrize("page", [
    "index.html",
    "theory.html",
    "tutorials/_generated/02_decay_spectrum.html",
    "reproducing/claim4_decay_spectrum.html",
])
def test_browser_shows_typeset_math(browser, html_dir, tmp_path, page):
    path = html_dir / page
    shot = tmp_path / "page.png"
    dom = _render(browser, path.as_uri(), tmp_path, screenshot=shot)
    parser = _References()
    parser.feed(dom)
    text = "".join(parser.text)
    for raw in ("\\(", "\\[", "$$"):
        assert raw not in text, f"{page}: raw {raw!r} left in the rendered text"
    if _has_math(path):
        assert "<mjx-container" in dom, f"{page}: MathJax typeset nothing"
    assert shot.is_file() and shot.stat().st_size > 10_000, "no screenshot"


def test_browser_search_finds_pages(browser, html_dir, tmp_path):
    dom = _render(browser, (html_dir / "search.html").as_uri() + "?q=contact+order", tmp_path)
    assert re.search(r"found [1-9]\d* pages? matching", dom), "the search found nothing"
