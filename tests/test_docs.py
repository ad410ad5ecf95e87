"""The user docs hold together: every relative link and image in the README and ``docs/`` names a
file of the clone, and the README stays a front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: ``[text](target)`` and ``![alt](target)``, the target up to a space (a title) or the closing bracket
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: The README's length, at most: what it is, screenshots, the two commands, a tour, links.
README_LINES = 250


def relative_links(page: Path) -> list[str]:
    """The page's link targets that name a file of the clone (no scheme, not only an anchor),
    outside fenced code blocks."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    targets = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_names_a_file(page):
    missing = [t for t in relative_links(page) if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to what is not there: {missing}"


def test_the_link_reader_finds_links_images_and_skips_urls_and_anchors(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        '[a](docs/a.md) ![shot](shots/x.png "title") [web](https://x.org/y) [here](#tour) '
        "[b](b.md#part)\n```\n[in code](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["docs/a.md", "shots/x.png", "b.md"]


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES
