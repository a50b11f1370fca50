"""Which tasks an eval runs: ``per_family`` tasks of every family, drawn from the seed alone.

The draw depends only on the seed, the family and the split's task list, never on the server URL or
on timing, so the same seed evaluates the same tasks on any deployment of the same environment.
"""

from __future__ import annotations

import random
from typing import Iterable

from openenv_prime.samplers.task import Task


def family_sort_key(family: str) -> tuple[int, int | str]:
    """Numeric families in numeric order ("2" before "10"), then the others alphabetically."""
    try:
        return (0, int(family))
    except ValueError:
        return (1, family)


def choose_tasks(
    tasks: Iterable[Task], per_family: int, seed: int, families: Iterable[str] | None = None
) -> list[Task]:
    """``per_family`` tasks per family (all when fewer), sorted by (family, index).

    Raises ValueError naming the missing families when ``families`` asks for one the split lacks.
    """
    by_family: dict[str, list[Task]] = {}
    for task in tasks:
        by_family.setdefault(task.key, []).append(task)
    if families is not None:
        wanted = [str(f) for f in families]
        missing = [f for f in wanted if f not in by_family]
        if missing:
            raise ValueError(
                f"families {missing} have no tasks in this split; it has families {sorted(by_family, key=family_sort_key)}"
            )
        by_family = {f: by_family[f] for f in wanted}
    chosen: list[Task] = []
    for family in sorted(by_family, key=family_sort_key):
        pool = sorted(by_family[family], key=lambda t: t.index)
        rng = random.Random(f"openenv-prime-eval:{seed}:{family}")
        picked = pool if len(pool) <= per_family else rng.sample(pool, per_family)
        chosen.extend(sorted(picked, key=lambda t: t.index))
    return chosen
