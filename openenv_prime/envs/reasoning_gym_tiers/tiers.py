"""Difficulty tiers of any reasoning-gym dataset that registers a curriculum, read from that curriculum.

A tier sets each curriculum attribute to a level; a schedule says which levels tier t sets:

* ``global`` (`serve reasoning-gym`): every attribute at level t, or at its last level when it has fewer
  (reasoning-gym's own `set_global_level`), so the dataset has as many tiers as its longest attribute has levels
  (at most MAX_TIERS).
* ``lockstep``: every attribute at level t, as many tiers as its shortest attribute has levels (chain_sum: tier t is
  t+2 terms of t+1 digits, 2x1 .. 11x10).
* ``interleaved``: one attribute raised per tier, in the curriculum's order, until one runs out of levels (chain_sum:
  2x1, 3x1, 3x2, 4x2, .. 12x10), a gentler ramp with about twice the tiers over the same range.

The configuration comes from `RangeAttributeMode.UPPER_BOUND`, which turns each range attribute into one exact value:
a tier is one fixed problem shape, not a mix of easier ones.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

MAX_TIERS = 16
"""The global schedule stops here: `serve reasoning-gym` lays out seeds for at most this many tiers (see layout.py)."""
TIER_SCHEDULES = ("global", "lockstep", "interleaved")


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


def _levels(schedule: str, lengths: list[int], tier: int) -> list[int] | None:
    """The level of each attribute (of `lengths` levels each, in the curriculum's order) at `tier`; None past the
    schedule's last tier."""
    if schedule == "global":
        return [min(tier, n - 1) for n in lengths] if tier < min(MAX_TIERS, max(lengths, default=1)) else None
    if not lengths:  # a curriculum without attributes: one tier
        return [] if tier == 0 else None
    if schedule == "lockstep":
        levels = [tier] * len(lengths)
    else:  # interleaved: attribute i is raised at tiers i+1, i+1+k, ... (k attributes)
        levels = [(tier + len(lengths) - 1 - i) // len(lengths) for i in range(len(lengths))]
    return levels if all(level < n for level, n in zip(levels, lengths)) else None


def _lengths(dataset: str) -> list[int]:
    from reasoning_gym.factory import create_curriculum

    return [len(attribute.levels) for attribute in create_curriculum(dataset).attributes.values()]


def max_tiers(dataset: str, schedule: str = "global") -> int:
    """How many tiers `dataset` has under `schedule` before an attribute runs out of levels."""
    lengths = _lengths(dataset)
    count = 0
    while _levels(schedule, lengths, count) is not None:
        count += 1
    return count


@lru_cache(maxsize=None)
def dataset_tiers(dataset: str, num_tiers: int, schedule: str = "global") -> tuple[DatasetTier, ...]:
    """The `num_tiers` easiest tiers of `dataset` under `schedule`; a DatasetError names a dataset that cannot have them."""
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode
    from reasoning_gym.factory import create_curriculum

    if schedule not in TIER_SCHEDULES:
        raise DatasetError(f"unknown tier schedule {schedule!r}; use one of {', '.join(TIER_SCHEDULES)}")
    datasets, curricula = _registry()
    if dataset not in datasets:
        raise DatasetError(f"unknown reasoning-gym dataset {dataset!r}; known datasets with a curriculum: {', '.join(sorted(curricula))}")
    if dataset not in curricula:
        raise DatasetError(f"reasoning-gym dataset {dataset!r} registers no curriculum, so it has no tiers; choose one of: {', '.join(sorted(curricula))}")
    limit = max_tiers(dataset, schedule)
    if isinstance(num_tiers, bool) or not isinstance(num_tiers, int) or not 1 <= num_tiers <= limit:
        why = f"its curriculum has {limit} levels" if schedule == "global" else f"on the {schedule} schedule"
        raise DatasetError(f"--tiers must be an integer from 1 to {limit} for {dataset!r} ({why}), got {num_tiers!r}")
    context = DefaultCurriculumContext(mode=RangeAttributeMode.UPPER_BOUND)
    tiers = []
    for tier in range(num_tiers):
        curriculum = create_curriculum(dataset)
        for name, level in zip(curriculum.attributes, _levels(schedule, _lengths(dataset), tier)):
            curriculum.set_attr_level(name, level)
        config = curriculum.generate_configuration({"seed": 0, "size": 1}, context=context)
        fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in ("seed", "size")}
        tiers.append(DatasetTier(dataset, tier, tuple(sorted(fields.items()))))
    return tuple(tiers)
