"""Turn code-style page names (`docs/beam.md`) into links titled by the page (re-runnable).

In docs/*.md a page is linked as ``[Apache Beam](beam.md)``, in docs/api/*.md as
``[Apache Beam](../beam.md)``, in README.md as ``[Apache Beam](docs/beam.md)``. Usage, from
the repository root: ``python .ci/link_doc_pages.py`` (``--check``: exit 1 if stale).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
CODE_PAGE = re.compile(r"``?docs/(?P<page>[A-Za-z0-9_]+\.md)(?P<anchor>#[A-Za-z0-9_-]+)?``?")


def title(page: Path) -> str:
    for line in page.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip().replace("`", "")
    return page.stem


def convert(path: Path) -> str:
    text = path.read_text()
    if path.parent == DOCS:
        prefix = ""
    elif path.parent.parent == DOCS:
        prefix = "../"
    else:
        prefix = "docs/"

    def link(match: re.Match) -> str:
        target = DOCS / match.group("page")
        if not target.is_file():
            return match.group(0)
        anchor = match.group("anchor") or ""
        return f"[{title(target)}]({prefix}{match.group('page')}{anchor})"

    return CODE_PAGE.sub(link, text)


def main(argv: list[str]) -> int:
    stale = []
    for path in [REPO / "README.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("api/*.md"))]:
        new = convert(path)
        if new != path.read_text():
            stale.append(path.relative_to(REPO))
            if "--check" not in argv:
                path.write_text(new)
    for name in stale:
        print(("would change " if "--check" in argv else "changed ") + str(name))
    return 1 if ("--check" in argv and stale) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
