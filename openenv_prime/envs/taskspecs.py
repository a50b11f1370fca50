"""What every Task API served here shares, so each server says only how many tasks a split has and what task i is.

A task set defines `list_splits`, `num_tasks` and `get_task` (which checks the split and the index); slicing
and the capped listing follow from those the same way for the reasoning-gym tiers (chain_sum among them) and wrapped
environments. An environment with a `taskset` answers openenv's Task API hook methods from it. No `openenv`
import here.
"""

from __future__ import annotations

from typing import Any

LIST_TASKS_CAP = 1_000
"""`list_tasks` returns at most this many specs; `num_tasks` and `get_task_range` reach the rest."""


class IndexedTasks:
    """`get_task_range` and `list_tasks` from a task set's `num_tasks` and `get_task`."""

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        """Specs for ``range(num_tasks)[start:stop]`` (Python slice bounds)."""
        return [self.get_task(split, i) for i in range(self.num_tasks(split))[slice(start, stop)]]

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """The first LIST_TASKS_CAP specs; `num_tasks` and `get_task_range` reach the rest."""
        return self.get_task_range(split, 0, LIST_TASKS_CAP)


class TaskAPIFromTaskset:
    """openenv's optional Task API hook methods on an environment, answered by its `taskset` (side-effect free)."""

    taskset: Any

    def list_splits(self) -> list[dict[str, Any]]:
        return self.taskset.list_splits()

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return self.taskset.list_tasks(split)

    def num_tasks(self, split: str) -> int:
        return self.taskset.num_tasks(split)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return self.taskset.get_task(split, index)

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        return self.taskset.get_task_range(split, start, stop)
