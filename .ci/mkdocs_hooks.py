"""mkdocs hooks for the docs site (mkdocs.yml ``hooks:``).

Docstrings name the guides by their path, ``docs/beam.md`` (readable in ``help()`` and in an
editor); on the site that code becomes a link to the page.
"""

from __future__ import annotations

import posixpath
import re

PAGE_PATH = re.compile(r"<code>docs/([A-Za-z0-9_]+)\.md</code>")


def on_page_content(html, page, config, files):
    known = {file.src_uri for file in files}

    def link(match: re.Match) -> str:
        source = f"{match.group(1)}.md"
        if source not in known:
            return match.group(0)
        target = files.get_file_from_path(source)
        href = posixpath.relpath(target.url or ".", posixpath.dirname(page.url) or ".")
        if (target.url or "").endswith("/"):
            href += "/"
        return f'<a href="{href}">{match.group(0)}</a>'

    return PAGE_PATH.sub(link, html)
