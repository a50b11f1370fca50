"""Difficulty tiers of any reasoning-gym dataset that registers a curriculum, read from that curriculum.

Tier t is the curriculum at global level t: every attribute at level t, or at its last level when it
has fewer (reasoning-gym's own `set_global_level`), so tier 0 is the easiest point and the dataset has
as many distinct tiers as its longest attribute has levels. As for chain_sum, the configuration comes
from `RangeAttributeMode.UPPER_BOUND`, which turns each range attribute into one exact value: a tier
is one fixed problem shape, not a mix of easier ones.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

MAX_TIERS = 16
"""Seeds are laid out for at most this many tiers per dataset (see taskset)."""


@dataclasses.dataclass(frozen=True)
class DatasetTier:
    """One tier of one dataset: the keyword arguments of its reasoning-gym config, without seed and size."""

    dataset: str
    tier: int
    config: tuple[tuple[str, Any], ...]

    @property
    def family(self) -> str:
        return f"{self.dataset}/{self.tier}"

    def config_dict(self) -> dict[str, Any]:
        return dict(self.config)


class DatasetError(ValueError):
    """Datasets that cannot be served in tiers; the message names every one and why."""


def _registry() -> tuple[dict, dict]:
    from reasoning_gym.factory import CURRICULA, DATASETS

    return DATASETS, CURRICULA


def max_tiers(dataset: str) -> int:
    """How many distinct tiers the dataset's curriculum has (its longest attribute's levels, at most MAX_TIERS)."""
    from reasoning_gym.factory import create_curriculum

    curriculum = create_curriculum(dataset)
    return min(MAX_TIERS, max((len(a.levels) for a in curriculum.attributes.values()), default=1))


@lru_cache(maxsize=None)
def dataset_tiers(dataset: str, num_tiers: int) -> tuple[DatasetTier, ...]:
    """The `num_tiers` easiest tiers of `dataset`; a DatasetError names a dataset that cannot have them."""
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode
    from reasoning_gym.factory import create_curriculum

    datasets, curricula = _registry()
    if dataset not in datasets:
        raise DatasetError(f"unknown reasoning-gym dataset {dataset!r}; known datasets with a curriculum: {', '.join(sorted(curricula))}")
    if dataset not in curricula:
        raise DatasetError(f"reasoning-gym dataset {dataset!r} registers no curriculum, so it has no tiers; choose one of: {', '.join(sorted(curricula))}")
    limit = max_tiers(dataset)
    if isinstance(num_tiers, bool) or not isinstance(num_tiers, int) or not 1 <= num_tiers <= limit:
        raise DatasetError(f"--tiers must be an integer from 1 to {limit} for {dataset!r} (its curriculum has {limit} levels), got {num_tiers!r}")
    context = DefaultCurriculumContext(mode=RangeAttributeMode.UPPER_BOUND)
    tiers = []
    for tier in range(num_tiers):
        curriculum = create_curriculum(dataset)
        curriculum.set_global_level(tier)
        config = curriculum.generate_configuration({"seed": 0, "size": 1}, context=context)
        fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in ("seed", "size")}
        tiers.append(DatasetTier(dataset, tier, tuple(sorted(fields.items()))))
    return tuple(tiers)
