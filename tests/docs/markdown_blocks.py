"""Read fenced code blocks and relative links out of README.md, docs/*.md and the READMEs of benchmarks/ and studies/,
for the docs tests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md",
            ROOT / "studies" / "README.md"]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int            # 1-based line of the opening fence
    lang: str
    code: str
    not_run: str | None  # the stated reason, when the block is marked not runnable

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``; a ``<!-- not run: REASON -->`` on the line before the fence marks it."""
    lines = page.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marked = NOT_RUN.search(before)
        found.append(Block(page, start + 1, fence.group(1), "\n".join(body) + "\n", marked.group(1) if marked else None))
        i += 1
    return found


def outside_code(page: Path) -> str:
    """The page's text with fenced blocks and inline code removed: links are only read from prose."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(outside_code(page)) if not re.match(r"^[a-z]+:", t) and not t.startswith("#")]


def anchors(page: Path) -> set[str]:
    """GitHub-style heading anchors of ``page``."""
    out = set()
    for line in outside_code_headings(page):
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def outside_code_headings(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return [line for line in text.splitlines() if re.match(r"^#{1,6} ", line)]
