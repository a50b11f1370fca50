"""The model never sees an answer: fields that may hold one are taken out before anything becomes prompt text.

Task specs and observations often carry the gold answer next to the question: a verifiers row's ``answer``, a
reasoning-gym entry's ``correct_answer``, the whole ``task_spec`` that an ``openenv import``-ed environment puts in
its reset observation. Every path from an observation to a prompt (the default rendering, the ``metadata``
fallback, templates, MCP tool results) goes through :func:`scrub`, which removes such fields at any depth: in
nested objects and lists, and inside strings that hold JSON (verifiers' ``info`` often does, sometimes encoded twice). Names are compared
without case and separators, so ``groundTruth``, ``ground_truth`` and ``Ground-Truth`` are one name.

The list is a setting (``hidden_fields``) because one environment's ``target`` is another's gold answer: an
environment whose ``target`` is meant for the model is played with a list that leaves it out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

DEFAULT_HIDDEN_FIELDS: tuple[str, ...] = (
    "answer", "answers", "correct_answer", "correct_answers", "expected_answer", "expected_output", "final_answer",
    "gold", "gold_answer", "golden_answer", "ground_truth", "reference_answer", "reference_solution", "solution",
    "solutions", "target", "targets",
)
_SEPARATORS = re.compile(r"[\W_]+")


def normalized(name: str) -> str:
    """The form names are compared in: lower case, no separators (``ground_truth`` == ``groundTruth``)."""
    return _SEPARATORS.sub("", str(name)).casefold()


class HiddenNames:
    """A set of hidden field names, compared in :func:`normalized` form."""

    def __init__(self, names: Iterable[str] = DEFAULT_HIDDEN_FIELDS):
        self.names = tuple(names)
        self._keys = frozenset(normalized(name) for name in self.names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalized(name) in self._keys

    def __repr__(self) -> str:
        return f"HiddenNames({list(self.names)})"


@dataclass
class Scrubbed:
    """A value with its hidden fields taken out, and where they were (``task_spec.answer``), for the user's warning."""

    value: Any
    removed: list[str] = field(default_factory=list)


def scrub(value: Any, hidden: HiddenNames | Iterable[str] = DEFAULT_HIDDEN_FIELDS) -> Scrubbed:
    """``value`` without any field whose name is hidden, at any depth (objects, lists, JSON held in strings).

    The one function every prompt-facing path calls; the input is never changed."""
    names = hidden if isinstance(hidden, HiddenNames) else HiddenNames(hidden)
    removed: list[str] = []
    return Scrubbed(_scrub(value, names, "", removed), removed)


def _scrub(value: Any, hidden: HiddenNames, path: str, removed: list[str]) -> Any:
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key in hidden:
                removed.append(where)
            else:
                kept[key] = _scrub(item, hidden, where, removed)
        return kept
    if isinstance(value, list):
        return [_scrub(item, hidden, f"{path}[{i}]", removed) for i, item in enumerate(value)]
    if isinstance(value, str) and _may_hold_json(value):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        before = len(removed)
        cleaned = _scrub(decoded, hidden, path, removed)
        return value if len(removed) == before else json.dumps(cleaned, ensure_ascii=False)
    return value


def _may_hold_json(text: str) -> bool:
    """A string that may be JSON with fields inside: an object, an array, or such a string encoded once more."""
    text = text.strip()
    return len(text) >= 2 and (text[0], text[-1]) in (("{", "}"), ("[", "]"), ('"', '"')) and ("{" in text or "[" in text)
