"""A validated, immutable task pool grouped by key, with a fingerprint that ties saved states to it."""

from __future__ import annotations

from typing import Iterable

from openenv_prime.samplers.task import Task


class TaskPool:
    """The tasks a sampler draws from, in the order given.

    Keys keep the order of their first appearance. ``members[i]`` lists the positions (in ``tasks``)
    of the tasks of ``keys[i]``. The fingerprint hashes (split, index, key) of every task in order,
    so a state saved on one pool is refused by a sampler built on another.
    """

    __slots__ = ("tasks", "keys", "key_index", "members", "fingerprint", "_positions")

    def __init__(self, tasks: Iterable[Task]) -> None:
        import hashlib  # here, not at module level: it loads OpenSSL, a third of the package's import time

        tasks = tuple(tasks)
        if not tasks:
            raise ValueError("the task pool is empty: pass at least one Task")
        seen: dict[tuple[str, int], int] = {}
        key_index: dict[str, int] = {}
        members: list[list[int]] = []
        digest = hashlib.sha256()
        for position, task in enumerate(tasks):
            if not isinstance(task, Task):
                raise TypeError(
                    f"task pool item {position} is a {type(task).__name__}, not a Task; "
                    f"build Task(split, index, key, spec) objects"
                )
            where = (task.split, task.index)
            if where in seen:
                raise ValueError(
                    f"duplicate task (split={task.split!r}, index={task.index}) at positions "
                    f"{seen[where]} and {position}: each (split, index) may appear once in a pool"
                )
            seen[where] = position
            slot = key_index.get(task.key)
            if slot is None:
                slot = key_index[task.key] = len(members)
                members.append([])
            members[slot].append(position)
            digest.update(f"{task.split}\x1f{task.index}\x1f{task.key}\x1e".encode())
        self.tasks = tasks
        self.keys = tuple(key_index)
        self.key_index = key_index
        self.members = tuple(tuple(m) for m in members)
        self.fingerprint = digest.hexdigest()
        self._positions = seen  # (split, index) -> position

    def __len__(self) -> int:
        return len(self.tasks)

    def slot_of(self, key: object) -> int:
        """The position of ``key`` among the pool's keys, or a clear error."""
        slot = self.key_index.get(key) if isinstance(key, str) else None
        if slot is None:
            hint = f"; keys are strings, e.g. {str(key)!r}" if not isinstance(key, str) else ""
            shown = ", ".join(repr(k) for k in self.keys[:10]) + (", ..." if len(self.keys) > 10 else "")
            raise KeyError(f"unknown key {key!r}{hint}; this pool's keys are {shown}")
        return slot

    def position_of(self, task: object) -> int:
        """The position of ``task`` in the pool, or a clear error (a task of another pool, or one whose key
        differs from the pool's task at that split and index)."""
        position = self._positions.get((task.split, task.index)) if isinstance(task, Task) else None
        if position is None:
            raise KeyError(f"{task!r} is not a task of this pool; report groups of the pool's own tasks (or their keys)")
        if self.tasks[position].key != task.key:
            raise KeyError(
                f"{task!r} has key {task.key!r}, but this pool's task (split={task.split!r}, index={task.index}) "
                f"has key {self.tasks[position].key!r}"
            )
        return position
