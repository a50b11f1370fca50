"""Difficulty tiers of chain_sum, each one exact (terms, digits) point of reasoning-gym's curriculum.

reasoning-gym's `ChainSumCurriculum` with `RangeAttributeMode.UPPER_BOUND` (and its default
`ensure_interval=False`) turns attribute levels into point ranges (min == max), so a tier is a fixed
problem shape. Two schedules:

* ``lockstep``: tier t sets both levels to t, so tier t is t+2 terms of t+1 digits (5 tiers: 2x1 .. 6x5).
* ``interleaved``: tier k sets terms level ceil(k/2) and digits level floor(k/2) (10 tiers: 2x1, 3x1,
  3x2, 4x2, .. 7x5), a gentler ramp with twice the tiers over the same range.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

SCHEDULES = ("lockstep", "interleaved")


@dataclass(frozen=True)
class Tier:
    """One difficulty tier: its number and the exact problem shape it produces."""

    tier: int
    num_terms: int
    num_digits: int


def _levels(schedule: str, tier: int) -> tuple[int, int]:
    if schedule == "lockstep":
        return tier, tier
    return (tier + 1) // 2, tier // 2


def max_tiers(schedule: str) -> int:
    """How many tiers a schedule can have before a curriculum attribute runs out of levels."""
    from reasoning_gym.arithmetic.chain_sum import ChainSumCurriculum

    curriculum = ChainSumCurriculum()
    n_terms = len(curriculum.attributes["num_terms"].levels)
    n_digits = len(curriculum.attributes["num_digits"].levels)
    count = 0
    while True:
        terms_level, digits_level = _levels(schedule, count)
        if terms_level >= n_terms or digits_level >= n_digits:
            return count
        count += 1


@lru_cache(maxsize=None)
def tier_schedule(num_tiers: int = 5, schedule: str = "lockstep") -> tuple[Tier, ...]:
    """The tiers of a schedule, read from reasoning-gym's curriculum (never hard-coded)."""
    from reasoning_gym.arithmetic.chain_sum import ChainSumCurriculum
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode

    if schedule not in SCHEDULES:
        raise ValueError(f"unknown tier schedule {schedule!r}; use one of {', '.join(SCHEDULES)}")
    limit = max_tiers(schedule)
    if isinstance(num_tiers, bool) or not isinstance(num_tiers, int) or not 1 <= num_tiers <= limit:
        raise ValueError(f"num_tiers must be an integer from 1 to {limit} for the {schedule} schedule, got {num_tiers!r}")
    context = DefaultCurriculumContext(mode=RangeAttributeMode.UPPER_BOUND)
    tiers = []
    for t in range(num_tiers):
        curriculum = ChainSumCurriculum()
        terms_level, digits_level = _levels(schedule, t)
        curriculum.set_attr_level("num_terms", terms_level)
        curriculum.set_attr_level("num_digits", digits_level)
        config = curriculum.generate_configuration({"seed": 0, "size": 1}, context=context)
        if config.min_terms != config.max_terms or config.min_digits != config.max_digits:
            raise RuntimeError(f"reasoning-gym gave a range, not a point, for tier {t}: {config}")
        tiers.append(Tier(tier=t, num_terms=config.min_terms, num_digits=config.min_digits))
    return tuple(tiers)
