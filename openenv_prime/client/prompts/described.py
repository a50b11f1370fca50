"""Legal values an action's descriptions state in prose, where its schema states none.

Environments often say what an action may be only in a docstring: wildfire's ``action: str`` is
``action: "break" (build firebreak), "water" (drop water), "wait"`` in the class docstring (the schema's top-level
``description``), snake's ``action: int`` is ``action: int in [0, 1, 2]`` followed by ``0 = noop``, ``1 = turn left``,
``2 = turn right``. This module reads, for one field, the lines of the field's own description and of the class
description that are about it (``name: ...``, ``x, y: ...``, and the more indented lines below), and finds:

- value sets: two or more quoted values (``"break", "water"``), a bracketed list (``in [0, 1, 2]``), or an
  enumeration block (``0 = noop``, ``"up": move up``); values of the wrong type for the field are ignored, and so are
  lines that give examples (``e.g.``, ``such as``, ``for example``);
- labels: the words next to each value (``turn left`` for 1, ``build firebreak`` for ``break``).

The values are *stated* in the prompt when the description gives exactly one set. A description that gives several
(snake's docstring gives two, one per observer mode: ``[0, 1, 2]`` and ``[0, 1, 2, 3, 4]``) claims no set, and the
prompt shows the description itself and the values that every set allows (``0, 1, 2``: legal whichever case the server
runs). Replies are *read* with the values and labels (``water``, ``Water.``, ``turn left``, ``1 (turn left)``). They
are never enforced: a description is prose, and only the schema decides what the server accepts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_FIELD_LINE = re.compile(r"^(\s*)[-*\u2022]?\s*`?([A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_][\w]*)*)`?\s*(?:\([^)]*\))?\s*[:=]\s*(.*)$")
_EXAMPLES = re.compile(r"\b(e\.g\.?|eg\.|for example|for instance|such as|like)\b", re.IGNORECASE)
_QUOTED = re.compile(r"""(?:"([^"\n]+)"|'([^'\n]+)')\s*(?:\(([^)\n]*)\))?""")
_BRACKETED = re.compile(r"\b(?:in|one of|of|from)\s*[\[{]([^\]}\n]+)[\]}]", re.IGNORECASE)
_ENUMERATED = re.compile(r"""^\s*[-*\u2022]?\s*(-?\d+|"[^"\n]+"|'[^'\n]+')\s*(?:=|:|->|=>|\u2192|-|\u2013)\s*(.+?)\s*$""")
_PARENS = re.compile(r"\([^)]*\)")
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s")
# A description that calls the field the environment's configuration, not part of a move.
_CONFIGURATION = re.compile(
    r"\b(?:(?:server|environment|env|game)[ -](?:side[ -])?(?:config(?:uration)?|settings?)"
    r"|(?:config(?:uration)?|settings?) only|leave (?:it |this )?(?:unset|empty|blank)"
    r"|(?:do not|don't|never) (?:set|fill)|for internal use|internal use only)\b", re.IGNORECASE)


# Words of a description that says only that a field holds the model's reply ("The model's reply to the question").
_REPLY_WORDS = frozenset(
    "a an the this is it its to for of your model agent assistant policy player llm reply replies answer answers "
    "response output text message completion question task prompt problem action".split())


@dataclass(frozen=True)
class Described:
    """What the descriptions say about one field's values."""

    values: tuple[Any, ...] | None = None  # the one set of values stated, or None (no set, or several that differ)
    common: tuple[Any, ...] | None = None  # with several sets that differ: the values in every one (two or more)
    labels: dict[str, Any] = field(default_factory=dict)  # normalized label -> value, only unambiguous ones
    names: dict[Any, str] = field(default_factory=dict)  # value -> its label as written, for the instructions

    def __bool__(self) -> bool:
        return self.values is not None or self.common is not None or bool(self.labels)

    def read(self, text: str, kind: str) -> Any:
        """The value ``text`` names (a value, a label, or ``1 (turn left)``), or None when it names none."""
        said = _words(text)
        for value in (*(self.values or self.common or ()), *self.labels.values()):
            if _words(str(value)) == said:
                return value
        if said in self.labels:
            return self.labels[said]
        if kind == "integer":
            leading = re.match(r"^\s*(-?\d+)\b\s*[-:=(]?\s*(.*?)\)?\s*$", text)
            if leading:
                value, rest = int(leading.group(1)), _words(leading.group(2))
                if not rest or self.labels.get(rest) == value:
                    return value
        return None


def described(name: str, own: str | None, about_class: str | None, kind: str) -> Described:
    """What the field's own description (``own``) and the class description say about field ``name``'s values.

    ``kind`` is the field's JSON type (``string``, ``integer``, ``number``): values of another type are ignored."""
    blocks = ([own] if own else []) + blocks_about(name, about_class or "")
    sets: list[tuple[Any, ...]] = []
    pairs: list[tuple[Any, str]] = []
    for block in blocks:
        for found, labels in _sets(block, kind):
            if found not in sets:
                sets.append(found)
            pairs += labels
    labels: dict[str, Any] = {}
    ambiguous: set[str] = set()
    names: dict[Any, str] = {}
    for value, label in pairs:
        for key in {_words(label), _words(_PARENS.sub("", label))} - {""}:
            if key in labels and labels[key] != value:
                ambiguous.add(key)
            labels.setdefault(key, value)
        names.setdefault(value, label)
    for key in ambiguous:
        labels.pop(key)
    if len(sets) <= 1:
        return Described(sets[0] if sets else None, labels=labels, names=names)
    common = tuple(value for value in sets[0] if all(value in other for other in sets[1:]))
    if len(common) < 2:
        return Described(None, labels=labels, names=names)
    for value in (value for found in sets for value in found):  # a value of any one case reads as itself ("Jump")
        labels.setdefault(_words(str(value)), value)
    return Described(None, common, labels=labels, names=names)


def configures(name: str, own: str | None, about_class: str | None) -> bool:
    """Whether the field's own description or the class description's lines about it call it configuration ("server
    configuration, leave unset", "do not set"): a setting the server fills in, never offered to the model."""
    return any(_CONFIGURATION.search(block) for block in ([own] if own else []) + blocks_about(name, about_class or ""))


def without_fields(text: str, names: set[str]) -> str:
    """``text`` without the lines about fields in ``names`` only (``game_name: ...`` and what is indented below it):
    the prompt keeps the description of what the model fills, not of the settings it is not offered."""
    lines, kept, skip_below = text.splitlines(), [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if skip_below is not None and (not line.strip() or indent > skip_below):
            continue
        skip_below = None
        match = _FIELD_LINE.match(line)
        if match and {part.strip() for part in match.group(2).split(",")} <= names:
            skip_below = len(match.group(1))
            continue
        kept.append(line)
    return "\n".join(kept)


def without_mentions(text: str, names: set[str]) -> str:
    """``text`` without the sentences that name a field in ``names`` as code does (``is_final=True``, `` `is_final` ``,
    or a name with an underscore): the model is never told to set a field its reply cannot set. A list item that names
    one goes whole, and so does a line left without words."""
    if not names:
        return text
    patterns = []
    for name in sorted(names):
        patterns += [rf"`{re.escape(name)}`", rf"\b{re.escape(name)}\s*=(?!=)"] + ([rf"\b{re.escape(name)}\b"] if "_" in name else [])
    mention = re.compile("|".join(patterns))
    kept = []
    for line in text.splitlines():
        if not mention.search(line):
            kept.append(line)
        elif not _LIST_ITEM.match(line):
            sentences = [part for part in re.split(r"(?<=[.!?])\s+", line) if not mention.search(part)]
            if re.search(r"[A-Za-z]", " ".join(sentences)):
                kept.append(" ".join(sentences))
    return "\n".join(kept)


def blocks_about(name: str, text: str) -> list[str]:
    """The parts of ``text`` about field ``name``: each line naming it (``name: ...``) and the more indented lines below."""
    lines = text.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        match = _FIELD_LINE.match(line)
        if not match or name not in [part.strip() for part in match.group(2).split(",")]:
            continue
        indent = len(match.group(1))
        block = [match.group(3)]
        for below in lines[i + 1:]:
            if below.strip() and len(below) - len(below.lstrip()) <= indent:
                break
            block.append(below)
        blocks.append("\n".join(block))
    return blocks


def _sets(block: str, kind: str) -> list[tuple[tuple[Any, ...], list[tuple[Any, str]]]]:
    """The value sets in one block, each with its (value, label) pairs."""
    found = []
    first, _, rest = block.partition("\n")
    if not _EXAMPLES.search(first):
        quoted = [(a or b, label or "") for a, b, label in _QUOTED.findall(first)]
        values = _typed([value for value, _ in quoted], kind)
        if values is not None and len(set(values)) >= 2:
            found.append((tuple(dict.fromkeys(values)), [(v, label) for v, (_, label) in zip(values, quoted) if label]))
        bracketed = _BRACKETED.search(first)
        if bracketed:
            values = _typed([item.strip() for item in bracketed.group(1).split(",")], kind)
            if values is not None and len(set(values)) >= 2:
                found.append((tuple(dict.fromkeys(values)), []))
    enumerated = [m for m in (_ENUMERATED.match(line) for line in rest.splitlines()) if m]
    if len(enumerated) >= 2:
        values = _typed([m.group(1) for m in enumerated], kind)
        if values is not None:
            found.append((tuple(dict.fromkeys(values)), [(v, m.group(2)) for v, m in zip(values, enumerated)]))
    return found


def _typed(items: list[str], kind: str) -> list[Any] | None:
    """``items`` as values of the field's type (quotes removed), or None when one is not of that type."""
    values = []
    for item in items:
        item = item.strip()
        if len(item) >= 2 and item[0] == item[-1] and item[0] in "\"'":
            item = item[1:-1]
            if kind != "string":
                return None
        if kind == "string":
            values.append(item)
            continue
        try:
            value = json.loads(item)
        except ValueError:
            return None
        if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            return None
        if kind == "number" and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return None
        values.append(value)
    return values or None


def _words(text: str) -> str:
    """``text`` for comparing: no fence, quotes or end punctuation, lower case, single spaces."""
    text = text.strip().strip("`").strip().strip("\"'").strip()
    return " ".join(re.sub(r"[.!?,;:]+$", "", text).split()).casefold()


def says_only_reply(description: str, name: str) -> bool:
    """Whether a free-text field's description opens by saying only that the field is the model's reply ("The model's
    reply to the question", "The answer", "The model's reply; its final number is taken as the answer"): it speaks
    to whoever wires a model in, about the reply the base prompt already asks for, and shown to the model it would
    tell it nothing of what the action is (the reasoning-gym and chain_sum prompts stay as they were trained on)."""
    opening = re.split(r"[;:.!?]|\s[-\u2013\u2014]\s", description, maxsplit=1)[0]
    words = [word.removesuffix("'s") for word in re.findall(r"[a-z']+", opening.casefold())]
    return all(word in _REPLY_WORDS or word == name.casefold() for word in words)
