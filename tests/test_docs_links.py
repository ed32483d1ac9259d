"""README.md and docs/ stay a README a newcomer finishes (issue 24): every
relative link in them resolves to a file or folder of the checkout (anchors
are not checked; http(s) and mailto links are skipped), every docs page is
reachable from README, and README stays short."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README_MAX_LINES = 260

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.MULTILINE)
SKIP = ("http://", "https://", "mailto:")


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def links(text: str) -> list[str]:
    """Link targets outside code blocks and code spans."""
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    return INLINE.findall(text) + REFERENCE.findall(text)


def broken(page: Path) -> list[str]:
    """The relative links of `page` whose file (anchor dropped) does not exist."""
    bad = []
    for target in links(page.read_text()):
        if not target or target.startswith(SKIP) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not (page.parent / path).exists():
            bad.append(target)
    return bad


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == [], f"{page.relative_to(REPO)}: links to missing files"


def test_the_checker_finds_links_and_reports_broken_ones(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-section) [gone](missing.md) ![img](nope.png \"title\")\n"
                    "[web](https://example.invalid/x) [here](#top) `[code](ignored.md)`\n"
                    "```\n[fenced](ignored-too.md)\n```\n[ref]: also-missing.md\n")
    assert broken(page) == ["missing.md", "nope.png", "also-missing.md"]


def test_readme_is_short_and_reaches_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    linked = {(REPO / t.split("#", 1)[0]).resolve() for t in links(readme) if not t.startswith(SKIP + ("#",))}
    unlinked = [p.name for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in linked]
    assert unlinked == [], "docs pages README does not link"


def test_readme_gives_the_commands_ci_runs() -> None:
    """DESIGN 11: README's test command is the one .ci/run runs."""
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    for command in ("make test", "make sanitize"):
        assert re.search(rf"^{command}$", ci, re.MULTILINE), command
    assert re.search(r"^make test\s+#", readme, re.MULTILINE)
    assert "make sanitize" in readme
