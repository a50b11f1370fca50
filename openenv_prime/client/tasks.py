"""Task API specs -> sampler ``Task`` references, so a curriculum can run on any OpenEnv environment's split."""

from __future__ import annotations

from openenv_prime.client.taskapi import TaskAPIClient
from openenv_prime.samplers.task import Task


def load_sampler_tasks(api: TaskAPIClient, split: str, family_field: str = "tier") -> list[Task]:
    """Every task of ``split`` (paged), keyed by ``str(spec[family_field])``: a chain_sum tier 3 task has key ``"3"``.

    The index is the task's position in the split, which is what ``reset(split=..., index=...)`` takes.
    """
    specs = api.get_task_range(split)
    tasks = []
    for index, spec in enumerate(specs):
        if family_field not in spec:
            raise KeyError(
                f"task {index} of split {split!r} has no field {family_field!r} to group tasks by; "
                f"its fields are {sorted(spec)}; pass family_field= one of them"
            )
        tasks.append(Task(split, index, str(spec[family_field]), spec))
    return tasks
