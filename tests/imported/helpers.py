"""What the tests of imported environments share: the question both environments ask, answered."""

from __future__ import annotations

import re

QUESTION = re.compile(r"(\d+) \+ (\d+)\?")


def sum_in(text: str) -> str | None:
    """The sum the last "A + B?" in ``text`` asks for (what a model that can add would answer)."""
    found = QUESTION.findall(text)
    return str(int(found[-1][0]) + int(found[-1][1])) if found else None
