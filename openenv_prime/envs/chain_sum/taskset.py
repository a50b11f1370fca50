"""The chain_sum task layout: splits, tiers, seeds and task specs, independent of any server.

Index layout: ``tier = index // per_tier``, ``local_index = index % per_tier``. Item ``local_index`` of
a (split, tier) is ``ChainSumDataset(seed=seed_base(split, tier))[local_index]``. reasoning-gym seeds
item i with ``seed + i``, so datasets with nearby seeds share items; every (split, tier) therefore
gets its own seed range, 10 million apart, far wider than any split.

Every method here is side-effect free and cheap on a fresh instance: the OpenEnv server builds a new
environment for each Task API request.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

from openenv_prime.envs.chain_sum.tiers import Tier, tier_schedule
from openenv_prime.envs.errors import TaskRequestError
from openenv_prime.envs.taskspecs import IndexedTasks

ENV_NAME = "chain_sum"
DEFAULT_PER_TIER = {"train": 10_000, "test": 200}
_SPLIT_SEED_OFFSET = {"train": 0, "test": 1_000_000_000}
_SCHEDULE_SEED_OFFSET = {"lockstep": 0, "interleaved": 200_000_000}
_TIER_SEED_STRIDE = 10_000_000
_ID_PREFIX = {"lockstep": "chain_sum", "interleaved": "chain_sum_interleaved"}


@lru_cache(maxsize=256)
def _dataset(num_terms: int, num_digits: int, seed: int, size: int):
    from reasoning_gym.arithmetic.chain_sum import ChainSumConfig, ChainSumDataset

    config = ChainSumConfig(
        min_terms=num_terms, max_terms=num_terms, min_digits=num_digits, max_digits=num_digits, seed=seed, size=size
    )
    return ChainSumDataset(config)


class ChainSumTaskset(IndexedTasks):
    """Splits ``train`` and ``test`` of chain_sum, each ``per_tier[split]`` tasks per tier."""

    def __init__(self, num_tiers: int = 5, schedule: str = "lockstep", per_tier: dict[str, int] | None = None):
        self.tiers: tuple[Tier, ...] = tier_schedule(num_tiers, schedule)
        self.schedule = schedule
        self.per_tier = dict(DEFAULT_PER_TIER if per_tier is None else per_tier)
        unknown = set(self.per_tier) - set(_SPLIT_SEED_OFFSET)
        if unknown:
            raise ValueError(f"unknown split(s) {sorted(unknown)} in per_tier; known splits: {sorted(_SPLIT_SEED_OFFSET)}")
        for split, size in self.per_tier.items():
            if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= _TIER_SEED_STRIDE // 2:
                raise ValueError(f"per_tier[{split!r}] must be an integer from 1 to {_TIER_SEED_STRIDE // 2}, got {size!r}")

    @property
    def split_names(self) -> list[str]:
        return list(self.per_tier)

    def _check_split(self, split: str) -> int:
        if split not in self.per_tier:
            raise TaskRequestError("split", f"unknown split {split!r}; known splits: {', '.join(self.per_tier)}")
        return self.per_tier[split]

    def check_tier(self, tier: Any) -> int:
        if isinstance(tier, bool) or not isinstance(tier, int) or not 0 <= tier < len(self.tiers):
            raise TaskRequestError("tier", f"tier must be an integer from 0 to {len(self.tiers) - 1}, got {tier!r}")
        return tier

    def seed_base(self, split: str, tier: int) -> int:
        """The reasoning-gym seed of item 0 of (split, tier)."""
        self._check_split(split)
        self.check_tier(tier)
        return _SPLIT_SEED_OFFSET[split] + _SCHEDULE_SEED_OFFSET[self.schedule] + tier * _TIER_SEED_STRIDE

    # -- Task API -------------------------------------------------------------------------------

    def list_splits(self) -> list[dict[str, Any]]:
        return [
            {"name": s, "type": s, "num_tasks": n * len(self.tiers), "num_tiers": len(self.tiers), "per_tier": n,
             "family_field": "tier"}
            for s, n in self.per_tier.items()
        ]

    def num_tasks(self, split: str) -> int:
        return self._check_split(split) * len(self.tiers)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        per_tier = self._check_split(split)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TaskRequestError("index", f"task index must be an integer, got {index!r}")
        if not 0 <= index < per_tier * len(self.tiers):
            raise IndexError(f"task index {index!r} out of range for split {split!r} (0..{per_tier * len(self.tiers) - 1})")
        tier, local = divmod(index, per_tier)
        shape = self.tiers[tier]
        return {
            "id": f"{_ID_PREFIX[self.schedule]}/{split}/t{tier}/{local}",
            "split": split,
            "index": index,
            "tier": tier,
            "local_index": local,
            "num_terms": shape.num_terms,
            "num_digits": shape.num_digits,
            "seed": self.seed_base(split, tier) + local,
        }


    # -- Items ----------------------------------------------------------------------------------

    def entry(self, split: str, index: int) -> dict[str, Any]:
        """reasoning-gym's item (question, answer, metadata) for a task."""
        spec = self.get_task(split, index)
        shape = self.tiers[spec["tier"]]
        dataset = _dataset(shape.num_terms, shape.num_digits, self.seed_base(split, spec["tier"]), self.per_tier[split])
        return dataset[spec["local_index"]]

    def pick_index(self, seed: int, split: str = "train", tier: int | None = None) -> int:
        """A task index chosen by `seed`, within one tier if given; the same seed gives the same task."""
        per_tier = self._check_split(split)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TaskRequestError("seed", f"seed must be an integer, got {seed!r}")
        rng = random.Random(seed)
        if tier is None:
            return rng.randrange(per_tier * len(self.tiers))
        return self.check_tier(tier) * per_tier + rng.randrange(per_tier)
