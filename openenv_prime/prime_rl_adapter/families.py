"""Which family a verifiers task belongs to: the key an openenv_prime sampler keeps statistics on.

prime-rl hands the sampler a list of `vf.Task`s whose keys are unique per task; a curriculum
learns per family (e.g. a difficulty tier), so the family comes from a field of the task data."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from openenv_prime.client.tasks.families import family_key
from openenv_prime.samplers.task import Task

# The split name of the inner sampler's task references: their index is the position in the
# taskset prime-rl passed, which is all the adapter needs to return the taskset's own object.
SPLIT = "prime-rl"


def family_of(task: Any, family_field: str | None) -> str:
    """The task's family by the client's one rule (the value at a dotted path into its data); its own `key` when
    `family_field` is None, since prime-rl's tasksets rarely have families and a curriculum then learns per task."""
    if family_field is None:
        return str(task.key)
    return family_key(task.data, family_field, task=f"task {task.key!r}", setting="kwargs.family_field",
                      otherwise="'' to make each task its own family")


def sampler_tasks(tasks: Sequence[Any], family_field: str | None) -> list[Task]:
    """One openenv_prime task reference per verifiers task, indexed by its position."""
    keys = Counter(task.key for task in tasks)
    duplicates = sorted(str(key) for key, count in keys.items() if count > 1)
    if duplicates:
        raise ValueError(f"task keys must be unique within a taskset: {duplicates[:5]}")
    return [Task(SPLIT, position, family_of(task, family_field)) for position, task in enumerate(tasks)]
