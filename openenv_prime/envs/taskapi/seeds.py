"""`SeedTasks`: N seeds per split, task i of a split plays ``reset(seed=...)`` with that split's i-th seed.

For an environment that generates its episode from a seed and has no task list of its own. Splits get
disjoint seed ranges, SEED_STRIDE apart (split k starts at k * SEED_STRIDE), so no test task replays a
train task's seed and a split's seeds do not change when N or the other splits change.
"""

from __future__ import annotations

from typing import Any, Sequence

from openenv_prime.envs.taskapi.source import TaskProvider

SEED_STRIDE = 1_000_000
DEFAULT_SPLITS = ("train", "test")


class SeedTasks(TaskProvider):
    """`num_seeds` tasks per split; spec ``{"id": "seed-S", "split": ..., "seed": S}``, reset ``{"seed": S}``."""

    def __init__(self, num_seeds: int, splits: Sequence[str] = DEFAULT_SPLITS):
        if isinstance(num_seeds, bool) or not isinstance(num_seeds, int) or not 1 <= num_seeds <= SEED_STRIDE:
            raise ValueError(f"the number of seeds per split must be an integer from 1 to {SEED_STRIDE}, got {num_seeds!r}")
        names = list(splits)
        if not names or any(not isinstance(s, str) or not s for s in names) or len(set(names)) != len(names):
            raise ValueError(f"splits must be distinct non-empty names, e.g. train,test; got {names!r}")
        if len(names) * SEED_STRIDE >= 2**32:
            raise ValueError(f"at most {2**32 // SEED_STRIDE - 1} splits (seeds must stay below 2**32), got {len(names)}")
        self.num_seeds = num_seeds
        self._splits = names
        self.description = f"{num_seeds} seeds per split ({', '.join(names)})"

    def split_names(self) -> list[str]:
        return list(self._splits)

    def seed(self, split: str, index: int) -> int:
        return self._splits.index(split) * SEED_STRIDE + self.check_index(split, index)

    def _count(self, split: str) -> int:
        return self.num_seeds

    def _spec(self, split: str, index: int) -> dict[str, Any]:
        seed = self.seed(split, index)
        return {"id": f"seed-{seed}", "split": split, "seed": seed}

    def _reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        return {"seed": self.seed(split, index)}

    def reset_keys(self) -> set[str]:
        return {"seed"}
