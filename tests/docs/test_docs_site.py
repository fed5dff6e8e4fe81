"""The docs site builds with ``mkdocs build --strict`` and its pages read as pages.

The build runs where mkdocs is installed (the keras3 world, which carries the docs tools);
the source checks (no Sphinx roles, no doctest left as Markdown block quotes, no cited file
that is not in the repository) run everywhere.
"""

from __future__ import annotations

import ast
import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|attr|data|exc|obj|const):`")
HAS_MKDOCS = importlib.util.find_spec("mkdocs") is not None
HAS_GRIFFE = importlib.util.find_spec("griffe") is not None
INTEGRATIONS = ("Keras", "TensorFlow Federated", "Flower", "Beam", "TFMA", "Spark", "dpauc")


def _docstrings(package: str = "dpauc_tf"):
    for path in sorted((REPO / package).rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    yield path.relative_to(REPO), getattr(node, "name", "<module>"), doc


def _mkdocs(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )


def test_no_docstring_holds_a_sphinx_role():
    found = [f"{path}: {name}" for path, name, doc in _docstrings() if ROLE.search(doc)]
    assert not found, (
        "Sphinx roles render as text on the site; run `python .ci/convert_sphinx_roles.py` "
        f"(keras3 world): {found[:10]}"
    )


def test_no_docstring_or_page_cites_a_file_outside_the_repository():
    cited = [f"{path}: {name}" for path, name, doc in _docstrings() if "DESIGN.md" in doc]
    cited += [f"{path}: {name}" for path, name, doc in _docstrings() if "NOTES.md" in doc]
    for page in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]:
        if page.name != "changelog.md" and re.search(r"DESIGN\.md|NOTES\.md", page.read_text()):
            cited.append(str(page.relative_to(REPO)))
    assert not cited, cited


def _pages():
    """README.md and every docs page but the changelog (which records what was true then)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [page for page in pages if page.name != "changelog.md"]


def test_no_page_holds_a_sphinx_role():
    """Markdown pages render roles as text (the tree-histograms page showed ``:func:`` twice)."""
    found = [str(page.relative_to(REPO)) for page in _pages() if ROLE.search(page.read_text())]
    assert not found, found


def test_every_test_file_a_page_cites_exists():
    cited = {
        (str(page.relative_to(REPO)), name)
        for page in _pages()
        for name in re.findall(r"\btests/[\w/]+\.py\b", page.read_text())
    }
    missing = sorted((page, name) for page, name in cited if not (REPO / name).is_file())
    assert cited and not missing, missing


def test_top_level_api_page_links_every_top_level_name():
    """The top-level page named ``DPAUC``, ``PrivacyLedger``... without links."""
    import dpauc_tf

    text = (REPO / "docs" / "api" / "top.md").read_text()
    for name in dpauc_tf._PUBLIC:
        assert f"[`{name}`][{dpauc_tf._PUBLIC[name]}.{name}]" in text, name


def test_pages_link_pages_instead_of_naming_their_path():
    result = subprocess.run(
        [sys.executable, ".ci/link_doc_pages.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, "run `python .ci/link_doc_pages.py`:\n" + result.stdout


def test_home_page_names_every_integration():
    home = (REPO / "docs" / "index.md").read_text()
    missing = [name for name in INTEGRATIONS if name not in home]
    assert not missing, missing


def test_ci_builds_the_docs_strict_and_not_quiet():
    """``--quiet`` hides the warnings that ``--strict`` counts: with both, a warning passes."""
    lines = [line for line in (REPO / "run.sh").read_text().splitlines() if "mkdocs build" in line]
    assert lines and all("--strict" in line and "--quiet" not in line for line in lines), lines


@pytest.mark.skipif(not HAS_GRIFFE, reason="needs griffe (the keras3 world's docs tools)")
def test_doctests_are_code_blocks():
    """A ``>>>`` line at a docstring's own indentation is a Markdown block quote."""
    sys.path.insert(0, str(REPO / ".ci"))
    try:
        import convert_sphinx_roles as convert
    finally:
        sys.path.pop(0)
    import griffe

    package = griffe.load("dpauc_tf", search_paths=[str(REPO)], resolve_aliases=False)
    stale = [
        str(path.relative_to(REPO))
        for path, spans in convert.docstring_spans(package).items()
        if convert.indent_doctests(path.read_text(), spans) != path.read_text()
    ]
    assert not stale, "run `python .ci/convert_sphinx_roles.py`: " + ", ".join(stale)


@pytest.mark.skipif(not HAS_MKDOCS, reason="needs mkdocs (the keras3 world's docs tools)")
def test_strict_build_fails_on_a_warning(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n[a dead link](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nnav:\n  - a.md\n")
    result = _mkdocs("--strict", "--site-dir", str(tmp_path / "site"), cwd=tmp_path)
    assert result.returncode != 0, result.stderr
    assert "WARNING" in result.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    result = _mkdocs("--strict", "--site-dir", str(out), cwd=REPO)
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert result.returncode == 0 and not warnings, "\n".join(warnings) or result.stderr[-3000:]
    return out


@pytest.mark.skipif(not HAS_MKDOCS, reason="needs mkdocs (the keras3 world's docs tools)")
def test_site_builds_strict_without_a_warning(site):
    assert (site / "index.html").is_file()


@pytest.mark.skipif(not HAS_MKDOCS, reason="needs mkdocs (the keras3 world's docs tools)")
def test_built_pages_render_docstrings(site):
    pages = {path: path.read_text() for path in (site / "api").rglob("index.html")}
    text = "\n".join(pages.values())
    # Doctests are code, not block quotes of "&gt;&gt;&gt;" prose.
    assert "<blockquote>\n<blockquote>" not in text
    assert "<code>&gt;&gt;&gt;" in text or "&gt;&gt;&gt;" in text
    # Roles and dunder names: no ":class:" text, no <strong>name</strong> from __name__.
    assert not ROLE.search(re.sub(r"<[^>]+>", "", text))
    assert "<strong>name</strong>" not in text
    # Cross-references resolved to links; defaults shown as values.
    assert text.count('class="autorefs autorefs-internal"') > 200
    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    assert re.search(r"num_thresholds: int = 200\b", plain)
    assert not re.search(r"= ?DEFAULT_NUM_THRESHOLDS", plain)
    # Headings name the object; signatures are code blocks under them (not in the heading).
    assert 'class="doc-signature highlight"' in text
    # The Flower result's attributes: one row per attribute (no "fpr, tpr" row).
    flower = pages[site / "api" / "flower" / "index.html"]
    assert "<code>fpr,</code>" not in flower and "<code>epsilon,</code>" not in flower
    # Docstrings' page paths are links to the page.
    assert (
        '<a href="../../beam/"><code>docs/beam.md</code></a>'
        in pages[site / "api" / "beam" / "index.html"]
    )


def test_one_parameter_or_attribute_per_entry():
    """``a, b: ...`` and ``a: ... b: ...`` render as one mis-parsed table row."""
    packed = re.compile(r"^\s+[a-z_]\w*(?:, [a-z_]\w*)+: |^\s+[a-z_]\w*: [^.`]*\. [a-z_]\w*: ")
    found = [
        f"{path}: {name}: {line.strip()}"
        for path, name, doc in _docstrings()
        for line in doc.splitlines()
        if packed.match(line)
    ]
    assert not found, found


def _api_pages() -> tuple[dict[str, str], set[str]]:
    """``{module: its directive's text}`` of the API pages, and the modules that
    docs/api/internal.md lists as internal."""
    rendered = {}
    for page in (REPO / "docs" / "api").glob("*.md"):
        for block in re.split(r"^(?=::: )", page.read_text(), flags=re.M)[1:]:
            module = block.split()[1]
            assert module not in rendered, f"{module} is rendered twice"
            rendered[module] = block
    internal = (REPO / "docs" / "api" / "internal.md").read_text()
    return rendered, set(re.findall(r"`(dpauc_tf\.[\w.]+)`", internal))


def test_every_module_is_on_an_api_page_or_listed_as_internal():
    """A new module is either public (``::: dpauc_tf.x.y`` on a page of docs/api/, with the
    names it offers) or internal (listed in docs/api/internal.md), never both."""
    rendered, internal = _api_pages()
    modules = {
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for path in (REPO / "dpauc_tf").rglob("*.py")
        if path.name != "__init__.py" and not path.name.startswith("_")
    }
    missing = sorted(modules - set(rendered) - internal)
    assert not missing, missing
    assert not set(rendered) & internal, sorted(set(rendered) & internal)
    assert not internal - modules, sorted(internal - modules)


def test_the_api_pages_render_a_curated_surface():
    """Each module directive names its members (the public surface: about 150 names), so a new
    helper does not reach the site unless it is listed."""
    rendered, _ = _api_pages()
    uncurated = [
        module
        for module, block in rendered.items()
        if module != "dpauc_tf" and not re.search(r"^\s+members:\s*$", block, flags=re.M)
    ]
    assert not uncurated, uncurated
    names = sum(len(re.findall(r"^\s+- \w+\s*$", block, flags=re.M)) for block in rendered.values())
    assert 120 <= names <= 160, names
