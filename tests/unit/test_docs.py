"""The README is a newcomer's page and docs/ holds the rest: the README stays under 15 KB, states the
test command, lists the engine's stage order as tests/unit/test_structure.py enforces it, and every relative
link in README.md, docs/ and engine/ reaches a file and, with a #fragment, a heading there."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = ("cli", "how-it-works", "models", "devices", "app", "testing", "results")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _anchors(path: Path) -> set[str]:
    return {_slug(line) for line in _prose(path.read_text()).splitlines() if re.match(r"#{1,6} ", line)}


def _markdown_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "engine").rglob("*.md"))]


def test_readme_is_a_short_page_with_the_test_command_and_links_to_docs():
    size = len(README.read_bytes())
    assert size < 15_000, f"README.md is {size:,} bytes; keep it under 15,000 and move detail to docs/"
    text = README.read_text()
    assert "make test" in text and "make setup" in text
    for page in PAGES:
        assert (ROOT / "docs" / f"{page}.md").is_file(), page
        assert f"(docs/{page}.md" in text, f"README.md does not link docs/{page}.md"


def test_the_maps_stage_order_is_the_one_the_structure_test_enforces():
    structure = next(ROOT.glob("tests/**/test_structure.py"))
    layers = next(ast.literal_eval(node.value) for node in ast.parse(structure.read_text()).body
                  if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LAYERS" for t in node.targets))
    line = next((ln.strip() for ln in README.read_text().splitlines() if ln.strip().startswith("util -> ")), "")
    assert line.split(" -> ") == list(layers), (
        f"README.md's map lists the stages as {line!r}; {structure.relative_to(ROOT)}'s LAYERS is "
        f"{' -> '.join(layers)}: update the map's stage line (and its packages)")


def test_every_relative_link_reaches_its_file_and_heading():
    broken = []
    for md in _markdown_files():
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(md.read_text())):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (md.parent / path).resolve() if path else md
            if not dest.exists():
                broken.append(f"{md.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{md.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
