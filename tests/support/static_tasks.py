"""The Task API hooks of a test server whose tasks are one fixed list, served as split ``test``.

openenv (0.4.1 and 0.10.0) calls these hooks on the environment class; put the mixin before ``Environment``:
``class GridEnvironment(static_tasks(TASKS, listed=True), Environment)``. Standard library only: the servers import it
under either openenv's interpreter (``tests.support.processes.serving`` puts the repository root on their path).
"""

from __future__ import annotations

from typing import Any, Optional


def static_tasks(tasks: list[dict[str, Any]], *, listed: bool = False) -> type:
    """A mixin serving ``tasks`` as split ``test``; ``listed`` adds ``list_tasks`` (without it, the Task API's
    listing falls back to paging through ``get_task_range``, which some servers test on purpose)."""

    class StaticTasks:
        def list_splits(self) -> list[str]:
            return ["test"]

        def num_tasks(self, split: str) -> int:
            return len(tasks)

        def get_task(self, split: str, index: int) -> dict[str, Any]:
            return tasks[index]

        def get_task_range(self, split: str, start: Optional[int] = None, stop: Optional[int] = None) -> list[dict]:
            return tasks[start:stop]

    class ListedStaticTasks(StaticTasks):
        def list_tasks(self, split: str) -> list[dict]:
            return tasks

    return ListedStaticTasks if listed else StaticTasks
