"""Task lists: a JSONL file of tasks, each with the ``reset`` arguments that play exactly that task.

One format serves two sides: a server-side Task API wrapper serves it (``openenv-prime serve MODULE:CLASS
--tasks FILE``), and clients read it for a server that has no Task API (``--tasks FILE``), resetting each
episode with the line's ``reset`` arguments. So this module imports only the standard library and pydantic.

Each non-blank line is a JSON object::

    {"split": "train", "id": "seed-3", "tier": 1, "reset": {"seed": 3}}

- ``reset`` (object, required, may be ``{}``): keyword arguments of the environment's ``reset``.
- ``split`` (non-empty string, default ``"train"``).
- ``id`` (string or int, default: the task's index within its split, as a string); unique within a split.
- any other field is part of the task's spec (a family field such as ``tier``, a ``prompt``, ...).

A task's index is its position within its split, in file order. Its spec is the line without ``reset``,
with ``split`` and ``id`` filled in (so a spec always carries its id, as Task API specs do).
Errors name the file, the line and the field, and say what to write instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_SPLIT = "train"


class TaskListError(ValueError):
    """A task list that cannot be used; ``source``, ``line`` (1-based, or None) and ``field`` say where."""

    def __init__(self, message: str, *, source: str, line: int | None = None, field: str | None = None):
        self.source = source
        self.line = line
        self.field = field
        where = source + (f", line {line}" if line is not None else "") + (f", field {field!r}" if field else "")
        super().__init__(f"task list {where}: {message}")


class _Line(BaseModel):
    """The three fields the format defines; strict, so ``"id": true`` or ``"split": 1`` are errors, not coerced."""

    model_config = ConfigDict(extra="allow", strict=True)

    reset: dict[str, Any]
    split: str = Field(DEFAULT_SPLIT, min_length=1)
    id: str | int = None  # type: ignore[assignment]  # left out: the index (defaults are not validated, null is)


_MUST_BE = {"reset": "a JSON object", "split": "a non-empty string", "id": "a string or an int"}
_WRITE_INSTEAD = {
    "reset": 'write "reset": {...} with the keyword arguments of the environment\'s reset, e.g. {"seed": 3} (or {} for none)',
    "split": 'write a non-empty string such as "split": "train", or leave the field out for "train"',
    "id": 'write a string or an int such as "id": "seed-3", or leave the field out to use the task\'s index',
}


@dataclass(frozen=True)
class TaskList:
    """Tasks grouped by split, in file order. Build one with :func:`read_task_list` or :func:`parse_task_list`."""

    source: str
    _specs: dict[str, list[dict[str, Any]]] = field(repr=False)
    _resets: dict[str, list[dict[str, Any]]] = field(repr=False)

    def splits(self) -> list[str]:
        """Split names in the order they first appear in the file."""
        return list(self._specs)

    def num_tasks(self, split: str) -> int:
        return len(self._split(split, self._specs))

    def specs(self, split: str) -> list[dict[str, Any]]:
        """Specs of every task of ``split`` (copies: callers may change them), index = position."""
        return [dict(spec) for spec in self._split(split, self._specs)]

    def spec(self, split: str, index: int) -> dict[str, Any]:
        return dict(self._split(split, self._specs)[self._index(split, index)])

    def reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        """The keyword arguments that reset the environment to task ``index`` of ``split`` (a copy)."""
        return json.loads(json.dumps(self._split(split, self._resets)[self._index(split, index)]))

    def _split(self, split: str, table: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        try:
            return table[split]
        except (KeyError, TypeError):
            raise TaskListError(f"has no split {split!r}; its splits are {self.splits()}: use one of them", source=self.source) from None

    def _index(self, split: str, index: int) -> int:
        count = len(self._specs[split])
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise IndexError(f"task list {self.source}: task index {index!r} is out of range for split {split!r}; valid indices are 0 .. {count - 1}")
        return index


def _fields(record: dict[str, Any], source: str, number: int) -> tuple[dict[str, Any], str, str | int | None]:
    """``reset``, ``split`` and ``id`` of a line. The common, valid line skips pydantic (half the parse time of a
    large list); anything else goes through ``_Line``, whose first error becomes the message."""
    reset, split, task_id = record.get("reset"), record.get("split", DEFAULT_SPLIT), record.get("id")
    if (
        isinstance(reset, dict)
        and isinstance(split, str) and split
        and (task_id is None and "id" not in record or type(task_id) in (str, int))
    ):
        return reset, split, task_id
    try:
        parsed = _Line.model_validate(record)
    except ValidationError as exc:
        name = str(exc.errors()[0]["loc"][0])
        problem = "is missing" if name not in record else f"must be {_MUST_BE[name]}, got {json.dumps(record[name])}"
        raise TaskListError(f"{problem}; {_WRITE_INSTEAD[name]}", source=source, line=number, field=name) from None
    return parsed.reset, parsed.split, parsed.id


def read_task_list(path: str | os.PathLike[str]) -> TaskList:
    """Parse the JSONL task list at ``path``; a missing file or a bad line raises :class:`TaskListError`."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as handle:
            return parse_task_list(handle, source=source)
    except FileNotFoundError:
        raise TaskListError("no such file; pass the path of a JSONL file with one task per line", source=source) from None
    except IsADirectoryError:
        raise TaskListError("is a directory; pass the path of a JSONL file with one task per line", source=source) from None
    except UnicodeDecodeError as exc:
        raise TaskListError(f"is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 JSONL", source=source) from None


def parse_task_list(lines: Iterable[str], *, source: str = "<task list>") -> TaskList:
    """Parse task-list lines (e.g. an open file, or ``text.splitlines()``); ``source`` names them in errors."""
    specs: dict[str, list[dict[str, Any]]] = {}
    resets: dict[str, list[dict[str, Any]]] = {}
    seen_ids: dict[str, dict[str, int]] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskListError(
                f"is not JSON ({exc.msg} at column {exc.colno}); write one JSON object per line, "
                'e.g. {"split": "train", "reset": {"seed": 3}}',
                source=source,
                line=number,
            ) from None
        if not isinstance(record, dict):
            raise TaskListError(
                f"is a JSON {type(record).__name__}, not an object; write one object per line, e.g. {{\"reset\": {{\"seed\": 3}}}}",
                source=source,
                line=number,
            )
        reset, split, task_id = _fields(record, source, number)
        index = len(specs.setdefault(split, []))
        task_id = task_id if task_id is not None else str(index)
        ids = seen_ids.setdefault(split, {})
        if str(task_id) in ids:
            raise TaskListError(
                f"id {task_id!r} is already used by line {ids[str(task_id)]} in split {split!r}; "
                "give each task of a split its own id, or leave the field out to use the task's index",
                source=source,
                line=number,
                field="id",
            )
        ids[str(task_id)] = number
        spec = {key: value for key, value in record.items() if key != "reset"}
        spec["split"] = split
        spec["id"] = task_id
        specs[split].append(spec)
        resets.setdefault(split, []).append(reset)
    if not specs:
        raise TaskListError('has no tasks; write one JSON object per line, e.g. {"split": "train", "reset": {"seed": 3}}', source=source)
    return TaskList(source, specs, resets)
