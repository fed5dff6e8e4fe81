"""Make dpauc_tf's docstrings render on the mkdocs site (re-runnable, idempotent).

Two rewrites, in docstrings only (and Sphinx roles in ``#`` comments):

1. Sphinx roles (``:class:`X```, ``:func:``, ``:meth:``, ``:mod:``, ``:attr:``, ``:data:``,
   ``:exc:``, ``:obj:``, ``:const:``) become mkdocstrings/autorefs cross-references,
   ``[`X`][]`` where X, looked up in the docstring's own scope the way Python would see the
   name there (mkdocs.yml turns on mkdocstrings' ``scoped_crossrefs``), is an object the site
   renders; ``[`X`][dpauc_tf.module.X]`` where only the full path reaches it; otherwise plain
   code, ``` `X` ```, so the strict build never meets a dangling reference. Full-path links
   that the short form reaches are shortened.
2. Doctest blocks (``>>>`` lines at the docstring's own indentation, with their output) are
   indented four spaces, so Markdown shows them as code instead of nested block quotes.
   Blocks already indented (in an ``Examples:`` section, or by an earlier run) are left alone.

Usage (from the repository root, in the environment with mkdocs)::

    python .ci/convert_sphinx_roles.py            # rewrite the files
    python .ci/convert_sphinx_roles.py --check    # exit 1 if anything would change

The set of rendered objects is read from the ``objects.inv`` of a (non-strict) build of the
site into a temporary folder, or from ``--inventory PATH``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "dpauc_tf"

ROLE = re.compile(
    r":(?:py:)?(?P<kind>class|func|meth|mod|attr|data|exc|obj|const):"
    r"`(?P<body>[^`\n]+)`"
)


def read_inventory(path: Path) -> set[str]:
    """The object names in a Sphinx ``objects.inv`` (as mkdocstrings writes it)."""
    raw = path.read_bytes()
    lines = raw.split(b"\n", 4)
    text = zlib.decompress(lines[4]).decode()
    return {line.split(" ", 1)[0] for line in text.splitlines() if line.strip()}


def build_inventory() -> set[str]:
    with tempfile.TemporaryDirectory() as site:
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir", site],
            cwd=REPO,
            check=True,
            env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
            # Not strict: the references this script is about to fix may still warn.
            stderr=subprocess.DEVNULL,
        )
        return read_inventory(Path(site) / "objects.inv")


def docstring_spans(package) -> dict[Path, list[tuple[int, int, object]]]:
    """Per file: (first line, last line, object) of every docstring, 1-based, inclusive."""
    spans: dict[Path, list[tuple[int, int, object]]] = {}
    seen: set[int] = set()

    def walk(obj) -> None:
        if id(obj) in seen or obj.is_alias:
            return
        seen.add(id(obj))
        doc = obj.docstring
        if doc is not None and doc.lineno and doc.endlineno:
            spans.setdefault(Path(obj.filepath), []).append((doc.lineno, doc.endlineno, obj))
        for member in obj.members.values():
            if not member.is_alias:
                walk(member)

    walk(package)
    return spans


def resolve(obj, target: str, inventory: set[str]) -> str | None:
    """The rendered object's path that ``target`` names in ``obj``'s docstring, or None."""
    target = target.lstrip(".~").rstrip("()")
    candidates: list[str] = []
    if target.split(".")[0] == PACKAGE:
        candidates.append(target)
    else:
        head, _, rest = target.partition(".")
        for scope in (obj, getattr(obj, "parent", None)):
            if scope is None:
                continue
            try:
                path = scope.resolve(head)
            except Exception:  # griffe's NameResolutionError and friends
                continue
            candidates.append(f"{path}.{rest}" if rest else path)
            break
    loader_collection = obj.package.modules_collection if hasattr(obj, "package") else None
    for candidate in candidates:
        if candidate in inventory:
            return candidate
        if loader_collection is not None:
            try:
                found = loader_collection[candidate]
                canonical = found.final_target.path if found.is_alias else found.path
            except Exception:
                continue
            if canonical in inventory:
                return canonical
    # A unique rendered object of that (dotted) name, e.g. ``TreeHistogram.estimate_auc``.
    matches = sorted(name for name in inventory if name.endswith(f".{target}"))
    if len(matches) == 1:
        return matches[0]
    return None


def link_text(body: str) -> tuple[str, str]:
    """(shown text, target) of a role's body: ``~a.b.C`` shows ``C``; ``T <a.b>`` shows T."""
    titled = re.fullmatch(r"\s*(.+?)\s*<([^>]+)>\s*", body)
    if titled:
        return titled.group(1), titled.group(2)
    target = body.strip()
    if target.startswith("~"):
        return target.lstrip("~").rstrip("()").split(".")[-1], target
    return target.lstrip("."), target


def scoped(obj, name: str) -> str | None:
    """What mkdocstrings' ``scoped_crossrefs`` makes of ``[name][]`` in ``obj``'s docstring."""
    head, _, rest = name.partition(".")
    try:
        path = obj.resolve(head)
    except Exception:
        return None
    return f"{path}.{rest}" if rest else path


def link(obj, shown: str, path: str) -> str:
    """``[`shown`][]`` where the name resolves to ``path`` in the docstring's scope (short,
    readable in the source), else ``[`shown`][path]``."""
    if shown == path or scoped(obj, shown) == path:
        return f"[`{shown}`][]"
    return f"[`{shown}`][{path}]"


FULL_LINK = re.compile(r"\[`(?P<shown>[A-Za-z_][\w.]*)`\]\[(?P<path>dpauc_tf(?:\.\w+)*)\]")


def shorten_links(text: str, spans) -> str:
    """Full-path links that the short form reaches too become ``[`X`][]``."""
    lines = text.split("\n")
    for first, last, obj in sorted(spans, key=lambda span: span[0]):
        for i in range(first - 1, min(last, len(lines))):
            lines[i] = FULL_LINK.sub(lambda m, o=obj: link(o, m["shown"], m["path"]), lines[i])
    return "\n".join(lines)


def convert_roles(text: str, spans, inventory: set[str]) -> str:
    line_starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            line_starts.append(index + 1)

    def line_of(position: int) -> int:
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= position:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    lines = text.split("\n")

    def replace(match: re.Match) -> str:
        line = line_of(match.start())
        owner = None
        for first, last, obj in spans:
            if first <= line <= last and (owner is None or first >= owner[0]):
                owner = (first, obj)
        if owner is None:
            if not lines[line - 1].lstrip().startswith("#"):
                return match.group(0)  # a role in code (a string): not ours to change
            shown, _ = link_text(match.group("body"))
            return f"`{shown}`"
        shown, target = link_text(match.group("body"))
        path = resolve(owner[1], target, inventory)
        if path is None:
            return f"`{shown}`"
        return link(owner[1], shown, path)

    return ROLE.sub(replace, text)


SECTION = re.compile(
    r"(Args|Arguments|Parameters|Params|Returns|Return|Yields|Yield|Raises|Raise|Attributes"
    r"|Attrs|Other Parameters|Keyword Args|Keyword Arguments|Receives|Warns|Warnings|Warning"
    r"|Examples|Example|Notes|Note|See Also|References|Todo):"
)
QUOTES = ('"""', "'''")
LIST_ITEM = re.compile(r"([*+-]|\d+[.)]) ")


def indent_doctests(text: str, spans) -> str:
    lines = text.split("\n")
    inserts: list[tuple[int, list[str]]] = []  # (index, lines to insert before it)
    for first, last, _ in spans:
        end = min(last, len(lines))
        opening = lines[first - 1]
        base = len(opening) - len(opening.lstrip())  # the docstring's own indentation
        in_section = False
        i = first  # the line after the opening quotes
        while i < end:
            line = lines[i]
            indent = len(line) - len(line.lstrip())
            if line.strip() and indent == base and line.strip() not in QUOTES:
                if line.lstrip().startswith(">>>"):
                    j = i
                    while j < end and lines[j].strip() and lines[j].strip() not in QUOTES:
                        j += 1
                    last_block = not any(
                        lines[k].strip() and lines[k].strip() not in QUOTES for k in range(j, end)
                    )
                    # After Args: or Returns:, after a list or at the end: an Examples:
                    # section of its own (Markdown would take an indented block after a list
                    # for more of the list; ruff format dedents an indented last block).
                    k = i - 1  # the paragraph before: a list swallows an indented block
                    while k > first and lines[k - 1].strip():
                        k -= 1
                    after_list = any(
                        LIST_ITEM.match(lines[j].strip()) for j in range(max(k, first), i)
                    )
                    if in_section or last_block or after_list:
                        block = [" " * base + "Examples:"]
                        inserts.append((i, ([""] if lines[i - 1].strip() else []) + block))
                    elif lines[i - 1].strip():
                        inserts.append((i, [""]))  # Markdown: a code block after a blank
                    while i < end and lines[i].strip() and lines[i].strip() not in QUOTES:
                        lines[i] = "    " + lines[i]
                        i += 1
                    continue
                in_section = bool(SECTION.fullmatch(line.strip()))
            i += 1
    for index, new in sorted(inserts, key=lambda item: item[0], reverse=True):
        lines[index:index] = new
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    parser.add_argument("--inventory", type=Path, help="an objects.inv of the built site")
    args = parser.parse_args(argv)

    import griffe

    inventory = read_inventory(args.inventory) if args.inventory else build_inventory()
    stale = []
    # Two passes: indenting doctests moves lines, so the docstring spans are read again.
    for step in ("doctests", "roles", "links"):
        package = griffe.load(PACKAGE, search_paths=[str(REPO)], resolve_aliases=False)
        for path, spans in sorted(docstring_spans(package).items()):
            text = path.read_text()
            if step == "doctests":
                new = indent_doctests(text, spans)
            elif step == "roles":
                new = convert_roles(text, spans, inventory)
            else:
                new = shorten_links(text, spans)
            if new != text:
                stale.append(f"{path.relative_to(REPO)} ({step})")
                if not args.check:
                    path.write_text(new)
    for name in stale:
        print(("would change " if args.check else "changed ") + name)
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
