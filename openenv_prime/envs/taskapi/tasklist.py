"""`JsonlTasks`: tasks from a JSONL task list, or from a Python callable returning the same records.

The format is the project's task-list contract (`openenv_prime.client.tasks.tasklist`, which parses it): one
JSON object per line, ``{"split": "train", "id": "seed-3", "tier": 1, "reset": {"seed": 3}}``; the spec is
the line without ``reset``; a task's index is its position within its split. The list is read once, when
the server starts, so a bad line stops the server with the file, line and field, not a later request.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable

from openenv_prime.client.tasks.tasklist import TaskList, parse_task_list, read_task_list
from openenv_prime.envs.taskapi.source import TaskProvider


class JsonlTasks(TaskProvider):
    """The tasks of a parsed `TaskList`, specs held in memory, reset arguments copied per call."""

    def __init__(self, task_list: TaskList, description: str | None = None):
        self._list = task_list
        self._specs = {split: task_list.specs(split) for split in task_list.splits()}
        if not self._specs:
            raise ValueError(f"{description or task_list.source} holds no tasks; write one JSON object per line")
        self._keys = {
            key for split, specs in self._specs.items() for i in range(len(specs)) for key in task_list.reset_kwargs(split, i)
        }
        self.description = description or f"task list {task_list.source}"

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "JsonlTasks":
        return cls(read_task_list(path))

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]], name: str = "<task records>") -> "JsonlTasks":
        """Records in the task-list line format (dicts), validated exactly as file lines are."""
        return cls(parse_task_list((json.dumps(record) for record in records), source=name))

    @classmethod
    def from_callable(cls, make_tasks: Callable[[], Iterable[dict[str, Any]]]) -> "JsonlTasks":
        """Call `make_tasks()` once, at start-up; it returns task-list records (dicts)."""
        name = getattr(make_tasks, "__qualname__", None) or repr(make_tasks)
        return cls.from_records(make_tasks(), name=f"{getattr(make_tasks, '__module__', '?')}:{name}()")

    def split_names(self) -> list[str]:
        return list(self._specs)

    def _count(self, split: str) -> int:
        return len(self._specs[split])

    def _spec(self, split: str, index: int) -> dict[str, Any]:
        return dict(self._specs[split][index])

    def _reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        return self._list.reset_kwargs(split, index)

    def reset_keys(self) -> set[str]:
        return set(self._keys)


def as_task_provider(tasks: Any) -> TaskProvider:
    """A `TaskProvider` as is; a path (str or PathLike) as a JSONL task list; a callable as `from_callable`."""
    if isinstance(tasks, TaskProvider):
        return tasks
    if isinstance(tasks, (str, os.PathLike)):
        return JsonlTasks.from_file(tasks)
    if callable(tasks):
        return JsonlTasks.from_callable(tasks)
    raise TypeError(
        f"tasks must be a TaskProvider (e.g. SeedTasks(100)), a JSONL task-list path, or a callable returning "
        f"task records; got {type(tasks).__name__}"
    )
