"""`TaskProvider`: the tasks a wrapped environment serves, and the Task API answered from them.

A source knows, per split, how many tasks there are, each task's spec (what `/task` returns; it carries
`id`) and the keyword arguments of the environment's `reset` that play exactly that task. This base class
checks splits and indices once, for every source, so each answers the same errors: an unknown split is
a `TaskRequestError` on field `split` (422), an index out of range a `TaskIndexError` (400).
No `openenv` import: sources are plain data, testable without a server.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from openenv_prime.envs.errors import TaskIndexError, TaskRequestError
from openenv_prime.envs.taskspecs import IndexedTasks


_SPLIT_TYPES = ("train", "validation", "test")


class TaskProvider(IndexedTasks, ABC):
    """Splits of tasks; subclasses say what the tasks are, this class answers the Task API from them."""

    description: str = "task source"
    """Names the source in error messages (e.g. the task-list path)."""

    @abstractmethod
    def split_names(self) -> list[str]:
        """The splits, in the order `list_splits` reports them."""

    @abstractmethod
    def _count(self, split: str) -> int: ...

    @abstractmethod
    def _spec(self, split: str, index: int) -> dict[str, Any]:
        """The spec of a task of a known split, index in range (a fresh dict: callers may change it)."""

    @abstractmethod
    def _reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        """The reset keyword arguments of a task of a known split, index in range (a fresh dict)."""

    @abstractmethod
    def reset_keys(self) -> set[str]:
        """Every reset keyword any task uses: the wrapper checks them against `reset` at start-up."""

    # -- checks ---------------------------------------------------------------------------------

    def check_split(self, split: Any) -> int:
        """The number of tasks of `split`; an unknown split is a TaskRequestError naming the known ones."""
        names = self.split_names()
        if split not in names:
            raise TaskRequestError("split", f"unknown split {split!r}; known splits: {', '.join(names)}")
        return self._count(split)

    def check_index(self, split: Any, index: Any) -> int:
        count = self.check_split(split)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TaskRequestError("index", f"task index must be an integer, got {index!r}")
        if not 0 <= index < count:
            raise TaskIndexError(f"task index {index} out of range for split {split!r} (0..{count - 1})")
        return index

    def reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        """The keyword arguments of `reset` that play task `index` of `split`."""
        return self._reset_kwargs(split, self.check_index(split, index))

    # -- Task API (what the wrapped environment's hook methods return) --------------------------

    def list_splits(self) -> list[dict[str, Any]]:
        return [
            {"name": s, "type": s if s in _SPLIT_TYPES else "validation", "num_tasks": self._count(s)}
            for s in self.split_names()
        ]

    def num_tasks(self, split: str) -> int:
        return self.check_split(split)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return self._spec(split, self.check_index(split, index))

