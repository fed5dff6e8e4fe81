"""One version: ``dpauc_tf.__version__`` is what the wheel is built as (pyproject reads it),
what CITATION.cff cites and the newest section of the changelog (no build needed: every world)."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

import dpauc_tf

REPO = Path(__file__).resolve().parents[2]


def _newest_changelog_version(text: str) -> str:
    match = re.search(r"^## (\d+\.\d+\.\d+)\b", text, re.MULTILINE)
    assert match, "docs/changelog.md has no '## X.Y.Z' section"
    return match.group(1)


def test_the_version_is_the_changelogs_newest_section():
    changelog = (REPO / "docs" / "changelog.md").read_text()
    assert dpauc_tf.__version__ == _newest_changelog_version(changelog) == "0.3.0"


def test_one_version_source():
    with open(REPO / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert "version" not in project and "version" in project["dynamic"]
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "dpauc_tf.__version__"}
    citation = (REPO / "CITATION.cff").read_text()
    assert f"version: {dpauc_tf.__version__}" in citation


def test_the_version_check_can_fail():
    assert (
        _newest_changelog_version("# Changelog\n\n## 0.4.0 (unreleased)\n\n## 0.3.0\n") == "0.4.0"
    )
