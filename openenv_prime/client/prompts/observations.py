"""An observation becomes the text the model sees: what the environment means it to read, within a budget.

The default rendering, for an observation no one has written a template for:

- **What the model must not see is never shown**: fields that may hold the answer (:mod:`~openenv_prime.client.prompts.hidden`)
  are taken out first, at any depth; bookkeeping (``reward``, ``done``, ``metadata``, the task-spec echoes ``task``
  and ``task_spec``, ``*_metadata``, the ``openenv import`` wrappers' ``source_type`` and ``original_env_class``) is
  left out.
- **The environment's own system prompt** (a ``system_prompt``/``instructions`` field, a ``system`` message) is taken
  out of an episode's first observation and sent as the system prompt (:mod:`~openenv_prime.client.prompts.own_system`).
- **Text first**: the prompt-like text field (``prompt``, ``question``, ``text``, ``message``, ...) without its name,
  then chat-style message lists (``[{"role"/"category", "content"}]``) as text, each text shown once (text blocks,
  ORS's ``[{"type": "text", "text"}]``, read as their text): a message that
  repeats text already shown (textarena's ``messages`` repeat its ``prompt``) is dropped.
- **Legal actions** (``legal_actions``, ``valid_actions``, ``legal_moves``, ... also from ``metadata``) come next and
  are never cut.
- **Every other field** as ``name: value`` (JSON), except arrays of numbers: a 2-D one with a small alphabet (a board,
  a map) becomes a text grid with the positions of its rare values; a flat one whose shape the observation states
  (``width``/``height`` or ``rows``/``cols`` fields) is a grid too; other long ones and tensors are summarised
  (shape and range) instead of dumped.
- **A budget** (characters per observation): a field that does not fit is cut, its head and tail kept and a marker
  saying how much of the middle was left out (repl_env's 9,600-character ``result`` keeps the error at its end);
  only where even a cut cannot fit (under :data:`MIN_CUT` characters of room each) is a field left out, and a last
  line names it. An error's text (``error``, ``exception``, ``stderr``, ``traceback``, ...) gets its room before the
  other fields and is never left out, only cut. Nothing is cut silently. What the budget left out is also said to the
  operator (:attr:`Rendered.notes`, which a run reports as warnings); the model's text never speaks of budgets or
  settings, which are not the model's to change.
- An observation whose data sits only in ``metadata`` (MCP environments such as echo_env, ``openenv import``-ed
  ones) shows the metadata's text fields (all its fields when it has none), never ``{}``; one with fields but no text
  field shows the metadata's text fields first (calendar_env's reset: ``success: true`` beside a metadata
  ``message`` that says how to start). MCP tool listings and tool results are shown as text (see
  :mod:`~openenv_prime.client.prompts.mcp`); so is a field holding a list of tools (calendar_env's ``tools_list``),
  as much of it as fits: never dropped whole, and never more than three quarters of the budget.

A **template** replaces all of this for one environment: a field name shows that field; a string with ``{field}``
placeholders fills them (metadata keys work too) with these format specs besides Python's own (``{humidity:.2f}``):
``{grid:grid}`` (a 2-D array, or a flat one shaped by the observation's width/height, as a text grid),
``{info_state:grid=5}`` (a flat array as rows of 5), ``{messages:text}`` (a message list as text), ``{x:json}``.
A template that names a hidden field is an error (:func:`check_template`), and the values it is filled with are
scrubbed all the same.
"""

from __future__ import annotations

import json
import math
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from openenv_prime.client.prompts import mcp
from openenv_prime.client.prompts.hidden import HiddenNames, normalized, scrub
from openenv_prime.client.prompts.own_system import plain, take_system

DEFAULT_BUDGET = 4000
# Fields that describe the episode rather than the world (compared in normalized form; ``*metadata`` too).
BOOKKEEPING_OBSERVATION_FIELDS = frozenset(
    normalized(name) for name in ("metadata", "reward", "done", "task", "task_spec", "episode_id",
                                  "source_type", "original_env_class"))  # the last two: `openenv import` wrappers' labels
# Observation fields that hold the prompt text, in order of preference: the first is shown first, without a name.
TEXT_FIELDS = ("prompt", "question", "text", "message", "content", "observation", "instruction", "instructions")
# Fields that list the moves the environment accepts now: shown right after the text, never cut.
LEGAL_ACTION_FIELDS = frozenset(normalized(name) for name in (
    "legal_actions", "valid_actions", "available_actions", "allowed_actions", "possible_actions", "legal_moves",
    "valid_moves", "available_moves", "possible_moves",
))
_EMPTY = (None, "", {})  # values not worth a line (0, False and [] are information)
_SHAPE_FIELDS = (("height", "width"), ("rows", "cols"), ("rows", "columns"), ("n_rows", "n_cols"), ("num_rows", "num_cols"))
_INLINE_NUMBERS = 64  # a flat array of numbers up to this long is shown as it is
_GRID_CELL_WIDTH = 2  # a 2-D array is a text grid when every cell reads in at most this many characters ...
_GRID_ALPHABET = 12  # ... and it has at most this many distinct values
_RARE = 8  # a grid value seen at most this often has its positions listed
_REPEAT = 20  # a text this long that was shown already is not shown again
MIN_CUT = 200
"""Characters of room a field cut to fit the budget gets at least; with less, it is left out (an error never is)."""
ERROR_TEXT_FIELDS = frozenset(normalized(name) for name in (
    "error", "errors", "exception", "stderr", "traceback", "error_message", "error_msg", "last_error"))
"""Observation fields that hold an error's text: their room comes first within the budget, never left out, only cut."""


@dataclass
class Rendered:
    """The text for one observation, and the paths of the hidden fields taken out of it (for the user, not the model)."""

    text: str
    hidden: list[str] = field(default_factory=list)
    system: str | None = None  # the environment's own system text, taken out of ``text`` (``own_system=True``)
    notes: list[str] = field(default_factory=list)  # what the budget left out, for the operator (never the model)


def is_template(template: str | None) -> bool:
    return template is not None and "{" in template


def observation_text(observation: dict, template: str | None = None, metadata: dict | None = None, *,
                     budget: int | None = DEFAULT_BUDGET, hidden: HiddenNames | None = None) -> str:
    """The text to show the model for ``observation`` (``metadata``: the frame's top-level metadata, if any)."""
    return render(observation, template, metadata, budget=budget, hidden=hidden).text


def render(observation: dict, template: str | None = None, metadata: dict | None = None, *,
           budget: int | None = DEFAULT_BUDGET, hidden: HiddenNames | None = None, own_system: bool = False) -> Rendered:
    """:func:`observation_text` with the hidden fields it took out; ``own_system``: the environment's own system text
    (:mod:`~openenv_prime.client.prompts.own_system`) is taken out of the text and returned apart, as an episode's first
    observation is rendered."""
    if not isinstance(observation, dict):
        raise TypeError(f"observation must be a dict, got {type(observation).__name__}")
    hidden = hidden if hidden is not None else HiddenNames()
    if template is None and mcp.is_tool_listing(observation):  # tool schemas name fields, they hold no answers
        text, note = mcp.tools_listing(mcp.tools_from(observation), budget)
        return Rendered(text, notes=[note] if note else [])
    clean = scrub(observation, hidden)
    top = scrub(metadata or {}, hidden)
    removed = clean.removed + [f"metadata.{path}" for path in top.removed]
    observation, metadata = clean.value, top.value
    system = None
    if own_system:
        system, shown, shown_metadata = take_system(observation, metadata)
        system = system if system is None else _fit_text(system, budget, "the environment's system prompt")
    else:
        shown, shown_metadata = observation, metadata
    if template is not None:  # a template shows what it names, the environment's system text included
        check_template(template, hidden)
        text = _fill(template, observation, metadata) if is_template(template) else _field(template, observation)
        return Rendered(_fit_text(text, budget, "the template's text"), removed, system)
    special = mcp.tool_observation_text(observation)
    if special is not None:
        return Rendered(_fit_text(special, budget, "the tool's result"), removed, system)
    notes: list[str] = []
    return Rendered(_default(shown, shown_metadata, budget, bool(system), notes), removed, system, notes)


# ---- the default rendering -----------------------------------------------------------------------------------
@dataclass
class _Part:
    name: str
    text: str
    keep: bool = False  # the text is never left out (cut in the middle when it must be)
    whole: bool = False  # the legal actions and tool lists: never cut, never left out
    error: bool = False  # an error's text: its room comes before the other fields', never left out (cut when it must be)


def _default(observation: dict, metadata: dict, budget: int | None, system_taken: bool = False,
             notes: list[str] | None = None) -> str:
    """The default rendering; what the budget left out is appended to ``notes`` (the operator's)."""
    notes = notes if notes is not None else []
    inner = observation.get("metadata") if isinstance(observation.get("metadata"), dict) else {}
    shown = {k: plain(v) for k, v in observation.items() if not _bookkeeping(k) and v not in _EMPTY}
    legal_from_metadata = {k: v for k, v in {**metadata, **inner}.items() if _legal(k) and v not in _EMPTY and k not in shown}
    if not shown:  # the data sits in metadata (echo_env's reset, an imported environment's task), or there is none
        shown = {k: plain(v) for k, v in {**metadata, **inner}.items() if not _bookkeeping(k) and v not in _EMPTY}
        texts = {k: v for k, v in shown.items() if _textual(k, v) or _legal(k)}
        shown = texts if any(_textual(k, v) for k, v in texts.items()) else shown
        legal_from_metadata = {}
    elif not any(_textual(k, v) for k, v in shown.items()):  # the text sits in metadata (calendar_env's "message")
        said = {k: v for k, v in {**metadata, **inner}.items() if k not in shown and isinstance(v, str) and v.strip()
                and k in TEXT_FIELDS}
        shown = {**said, **shown}
    shown.update(legal_from_metadata)
    if not shown:
        return "(the environment's instructions are the system prompt)" if system_taken else "(the environment sent no observation text)"
    if len(shown) == 1 and isinstance(next(iter(shown.values())), str):  # one text field: the text alone
        return _fit_text(next(iter(shown.values())), budget, next(iter(shown)))
    return _assemble(_parts(shown, observation, budget, notes), budget, notes)


def _parts(shown: dict, observation: dict, budget: int | None = None, notes: list[str] | None = None) -> list[_Part]:
    primary = next((name for name in TEXT_FIELDS if isinstance(shown.get(name), str)), None)
    texts: list[str] = []  # what the model has been shown, to show nothing twice
    parts: list[_Part] = []
    if primary is not None:
        parts.append(_Part(primary, shown[primary], keep=True))
        texts.append(_squash(shown[primary]))
    for name, value in shown.items():
        if name != primary and _messages(value):
            fresh = [m for m in value if not _repeats(m["content"], texts)]
            if fresh:
                parts.append(_Part(name, "\n".join(_message_lines(fresh))))
                texts.extend(_squash(m["content"]) for m in fresh)
    parts += [_Part(name, f"{name}: {_json(value)}", whole=True) for name, value in shown.items() if _legal(name)]
    tools = {name: value for name, value in shown.items() if name != primary and mcp.is_tool_list(value)}
    for name, value in tools.items():  # a tool list is shown as much as fits, never dropped whole (_legal's rule)
        room = None if budget is None else budget * 3 // 4 - len(name) - 2
        listed, note = mcp.tools_listing(mcp.tool_list(value), room)
        parts.append(_Part(name, f"{name}: {listed}", whole=True))
        if note is not None and notes is not None:
            notes.append(f"{name}: {note}")
    for name, value in shown.items():
        if name == primary or _messages(value) or _legal(name) or name in tools:
            continue
        if isinstance(value, str) and _repeats(value, texts):
            continue
        parts.append(_Part(name, _named(name, value, observation), error=normalized(name) in ERROR_TEXT_FIELDS))
    return parts


def _assemble(parts: list[_Part], budget: int | None, notes: list[str]) -> str:
    """The parts within ``budget``: the legal actions whole, the text (cut in the middle when it must be, leaving the
    other fields up to a quarter of the budget), then the errors and the other fields in order while they fit whole;
    those that do not are cut into the room left, and left out only where that is under :data:`MIN_CUT` characters
    each (an error never is); a last line names the fields left out."""
    text = "\n".join(part.text for part in parts)
    if budget is None or len(text) <= budget:
        return text
    others = [part for part in parts if not part.keep and not part.whole]
    note_room = min(80 + sum(len(part.name) + 2 for part in others), max(budget // 4, 80))
    room = budget - note_room - sum(len(part.text) + 1 for part in parts if part.whole)
    chosen = list(parts)
    primary = next((i for i, part in enumerate(parts) if part.keep), None)
    if primary is not None:
        share = min(sum(len(part.text) + 1 for part in others), budget // 4)
        first = parts[primary]
        if len(first.text) + 1 > room - share:
            chosen[primary] = _Part(first.name, cut_text(first.text, room - share - 1, first.name), keep=True)
        room -= len(chosen[primary].text) + 1
    over: list[_Part] = []
    for part in sorted(others, key=lambda part: not part.error):  # errors first: they never lose their room
        if len(part.text) + 1 <= room:
            room -= len(part.text) + 1
        else:
            over.append(part)
    cut = over if (room + note_room) // max(len(over), 1) - 1 >= MIN_CUT else [part for part in over if part.error]
    out = [part for part in over if part not in cut]
    room += 0 if out else note_room  # no last line: its room goes to the cut fields
    for i, part in enumerate(cut):
        size = max(room // (len(cut) - i) - 1, 0)
        chosen[chosen.index(part)] = shorter = _Part(part.name, cut_text(part.text, size, part.name), error=part.error)
        room -= len(shorter.text) + 1
    for part in out:
        chosen.remove(part)
    lines = [part.text for part in chosen]
    if out:
        names = [part.name for part in out]
        lines.append(_left_out(names, note_room - 1))
        notes.append(f"observation fields left out to fit the observation budget ({budget:,} characters): "
                     f"{', '.join(names)}; a larger observation budget shows them")
    return "\n".join(lines)


def _left_out(names: list[str], room: int) -> str:
    """The line naming the fields left out, in at most ``room`` characters (the last names counted, not named)."""
    head = f"[... {_count(len(names), 'field')} left out"
    for shown in range(len(names), 0, -1):
        rest = f" and {len(names) - shown} more" if shown < len(names) else ""
        line = f"{head}: {', '.join(names[:shown])}{rest}]"
        if len(line) <= room:
            return line
    return head + "]"


def _fit_text(text: str, budget: int | None, what: str) -> str:
    return text if budget is None or len(text) <= budget else cut_text(text, budget, what)


def cut_text(text: str, size: int, what: str) -> str:
    """``text`` in at most ``size`` characters: its head and its tail, and how much of the middle was left out."""
    if len(text) <= size:
        return text
    note = "\n[... {:,} characters of " + what + " left out ...]\n"
    keep = size - len(note.format(len(text)))
    if keep < 3:  # no room for any of it: say only that it was left out
        return f"[{len(text):,} characters of {what} left out]"[: max(size, 0)]
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3:] if keep // 3 else ""
    return head + note.format(len(text) - len(head) - len(tail)) + tail


# ---- values ----------------------------------------------------------------------------------------------------
def _named(name: str, value: Any, observation: dict) -> str:
    """``name: value``, with arrays of numbers as a grid or a summary."""
    grid = _grid_of(value, observation)
    if grid is not None:
        return f"{name} {_grid_text(grid)}"
    shape = _shape(value)
    if shape is not None and (len(shape) > 1 or shape[0] > _INLINE_NUMBERS):
        return f"{name}: {_summary(value, shape)}"
    return f"{name}: {_json(value)}"


def _grid_of(value: Any, observation: dict, columns: int | None = None) -> list[list[Any]] | None:
    """``value`` as rows of cells when it is a grid: 2-D, or flat with a shape the observation (or ``columns``) gives."""
    shape = _shape(value)
    if shape is None:
        return None
    if len(shape) == 1:
        width = columns or _declared_width(observation, shape[0])
        if not width or shape[0] % width or shape[0] // width < 2:
            return None
        value = [value[i:i + width] for i in range(0, shape[0], width)]
    elif len(shape) != 2 or shape[0] < 2:
        return None
    cells = {_cell(item) for row in value for item in row}
    if len(cells) > _GRID_ALPHABET or max(len(cell) for cell in cells) > _GRID_CELL_WIDTH:
        return None
    return value


def _declared_width(observation: dict, size: int) -> int | None:
    for rows, cols in _SHAPE_FIELDS:
        height, width = observation.get(rows), observation.get(cols)
        if isinstance(height, int) and isinstance(width, int) and height * width == size and width > 0:
            return width
    return None


def _grid_text(rows: list[list[Any]]) -> str:
    """The grid with a header (shape, counts of each value) and the positions of its rare values."""
    cells = _grid_cells(rows)
    counts = Counter(cell for row in cells for cell in row)
    lines = [f"({len(rows)} rows x {len(rows[0])} columns; counts: "
             + ", ".join(f"{cell} x{n}" for cell, n in sorted(counts.items())) + "):", _grid_rows(cells)]
    for cell, n in sorted(counts.items()):
        if n <= _RARE and n < len(rows) * len(rows[0]) / 4:
            where = ", ".join(f"({r}, {c})" for r, row in enumerate(cells) for c, item in enumerate(row) if item == cell)
            lines.append(f"{cell} at (row, column): {where}")
    return "\n".join(lines)


def _grid_cells(rows: list[list[Any]]) -> list[list[str]]:
    return [[_cell(item) for item in row] for row in rows]


def _grid_rows(cells: list[list[str]]) -> str:
    """One line per row, cells right-aligned and separated by spaces (a model reads one token per cell)."""
    width = max(len(cell) for row in cells for cell in row)
    return "\n".join(" ".join(cell.rjust(width) for cell in row) for row in cells)


def _cell(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _shape(value: Any) -> tuple[int, ...] | None:
    """The shape of a non-empty, rectangular, nested list of numbers; None for anything else."""
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in value):
        return (len(value),)
    inner = [_shape(item) for item in value]
    if inner[0] is None or any(shape != inner[0] for shape in inner):
        return None
    return (len(value), *inner[0])


def _summary(value: list, shape: tuple[int, ...]) -> str:
    flat = _flatten(value)
    low, high = min(flat), max(flat)
    zeros = sum(1 for item in flat if item == 0)
    dims = "x".join(str(n) for n in shape)
    return (f"a {dims} array of numbers from {_cell(low)} to {_cell(high)} ({zeros * 100 // len(flat)}% zeros; "
            "summarised, not shown)")


def _flatten(value: Any) -> list[float]:
    if isinstance(value, list):
        return [item for part in value for item in _flatten(part)]
    return [value] if not (isinstance(value, float) and math.isnan(value)) else []


def _messages(value: Any) -> bool:
    """A chat-style message list: objects with a text ``content``."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(item, dict) and isinstance(item.get("content"), str) for item in value
    )


def _message_lines(messages: list[dict]) -> list[str]:
    tags = [str(m.get("role") or m.get("category") or "") for m in messages]
    tagged = len(set(tags)) > 1
    return [f"[{tag}] {m['content']}" if tagged and tag else m["content"] for tag, m in zip(tags, messages)]


def _textual(name: str, value: Any) -> bool:
    return (name in TEXT_FIELDS and isinstance(value, str)) or _messages(value)


def _bookkeeping(name: str) -> bool:
    key = normalized(name)
    return key in BOOKKEEPING_OBSERVATION_FIELDS or key.endswith("metadata")


def _legal(name: str) -> bool:
    return normalized(name) in LEGAL_ACTION_FIELDS


def _repeats(text: str, shown: list[str]) -> bool:
    """Whether ``text`` repeats a text already shown (short values such as "0" or "yes" are never repeats)."""
    squashed = _squash(text)
    return len(squashed) >= _REPEAT and squashed in shown


def _squash(text: str) -> str:
    return " ".join(text.split())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# ---- templates -------------------------------------------------------------------------------------------------
class _Formatter(string.Formatter):
    """Python's formatter over the observation's fields, with ``grid``, ``grid=N``, ``text`` and ``json`` specs."""

    def __init__(self, observation: dict):
        self.observation = observation

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "json":
            return json.dumps(value, ensure_ascii=False)
        if format_spec == "text":
            return "\n".join(_message_lines(value)) if _messages(value) else _json(value)
        if format_spec == "grid" or format_spec.startswith("grid="):
            columns = int(format_spec[5:]) if format_spec.startswith("grid=") else None
            grid = _grid_of(value, self.observation, columns)
            if grid is None:
                raise ValueError(f"the value is no grid of short cells ({str(value)[:60]}...)")
            return _grid_rows(_grid_cells(grid))
        if isinstance(value, (dict, list)) and not format_spec:
            return json.dumps(value, ensure_ascii=False)
        return super().format_field(value, format_spec)


def template_fields(template: str) -> list[tuple[str, list[str]]]:
    """The fields a template names, each with the keys it indexes (``{a[b][0]}`` -> ``("a", ["b", "0"])``)."""
    named = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise ValueError(f"the observation template {template!r} cannot be read: {error}") from None
    for _, field_name, _, _ in parsed:
        if field_name is None:
            continue
        if field_name == "" or field_name.isdigit():
            raise ValueError(f"the observation template {template!r} has an empty or positional placeholder; name a field: {{question}}")
        head, rest = field_name.split("[", 1) if "[" in field_name else (field_name, "")
        if "." in head or "." in rest.split("]")[-1]:
            raise ValueError(f"the observation template {template!r} uses attribute access ({field_name!r}); index with [key] instead")
        keys = [key for key in rest.replace("]", "").split("[") if key] if rest else []
        named.append((head, keys))
    return named


def check_template(template: str, hidden: HiddenNames) -> None:
    """A template (or a field name) that names a hidden field is an error: it would show the model the answer."""
    names = template_fields(template) if is_template(template) else [(template, [])]
    for head, keys in names:
        for name in [head, *keys]:
            if name in hidden:
                raise ValueError(
                    f"the observation template {template!r} names {name!r}, a field that may hold the answer, which "
                    f"the model is never shown; if this environment's {name!r} is meant for the model, set "
                    f"hidden_fields (eval: --hidden-fields) to a list without it; the list now is {list(hidden.names)}"
                )


def _field(name: str, observation: dict) -> str:
    if name not in observation:
        raise KeyError(f"observation has no field {name!r}; its fields are {sorted(observation)}; name one of them (observation field)")
    value = observation[name]
    if _messages(value):
        return "\n".join(_message_lines(value))
    return _json(value) if _grid_of(value, observation) is None else _grid_text(_grid_of(value, observation))


def _fill(template: str, observation: dict, metadata: dict) -> str:
    inner = observation.get("metadata") if isinstance(observation.get("metadata"), dict) else {}
    values = {**metadata, **inner, **observation}
    try:
        return _Formatter(observation).vformat(template, (), values)
    except KeyError as error:
        raise KeyError(
            f"the observation template {template!r} names {error.args[0]!r}, which the observation lacks; "
            f"its fields are {sorted(observation)} and its metadata keys {sorted({**metadata, **inner})}"
        ) from None
    except (IndexError, ValueError, AttributeError, TypeError) as error:
        raise ValueError(f"the observation template {template!r} cannot be filled: {error}") from None
