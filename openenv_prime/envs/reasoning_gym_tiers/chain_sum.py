"""`serve chain-sum`: reasoning-gym's chain_sum alone, one case of the tiers server, laid out as its own server was.

Tiers follow the ``lockstep`` schedule (tier t: t+2 terms of t+1 digits) or the ``interleaved`` one (2x1, 3x1, 3x2,
..), see `tiers`. The seeds, task ids, spec fields and picks by seed are those chain_sum had as a package of its own
(main 76e4bd1), so task ids, seeds, saved sampler states and checkpoints made against it keep working
(`tests/envs/test_chain_sum_record.py` checks 600 tasks against a record of that server):

* seeds: ``split offset (train 0, test 10**9) + schedule offset (lockstep 0, interleaved 2*10**8) + tier * 10**7 +
  local index``: every (split, schedule, tier) has its own range, 10 million wide, far wider than any split;
* ids ``chain_sum/{split}/t{tier}/{local}`` (interleaved: ``chain_sum_interleaved/...``); specs carry the tier's
  ``num_terms`` and ``num_digits`` instead of ``dataset`` and ``family``; the family field is ``tier``;
* splits ``train`` and ``test`` only; ``reset(seed=[, tier=])`` draws as chain_sum's server drew.

Everything else (blocks, items, checks, the episode) is the tiers server's. No `openenv` import here.
"""

from __future__ import annotations

import random
from typing import Any

from openenv_prime.envs.reasoning_gym_tiers.layout import ReasoningGymTaskset, check_seed

DATASET = "chain_sum"
CHAIN_SUM_SCHEDULES = ("lockstep", "interleaved")
DEFAULT_TIERS = {"lockstep": 5, "interleaved": 10}
_CHAIN_SUM_SPLIT_OFFSET = {"train": 0, "test": 1_000_000_000}
_SCHEDULE_OFFSET = {"lockstep": 0, "interleaved": 200_000_000}
_CHAIN_SUM_TIER_STRIDE = 10_000_000
_ID_PREFIX = {"lockstep": "chain_sum", "interleaved": "chain_sum_interleaved"}


class ChainSumTaskset(ReasoningGymTaskset):
    """Splits ``train`` and ``test`` of chain_sum, each ``per_tier[split]`` tasks per tier."""

    ENV_NAME = "chain_sum"
    SPLITS = tuple(_CHAIN_SUM_SPLIT_OFFSET)
    MAX_PER_TIER = _CHAIN_SUM_TIER_STRIDE // 2
    MAX_TIERS = _SCHEDULE_OFFSET["interleaved"] // _CHAIN_SUM_TIER_STRIDE

    def __init__(self, num_tiers: int = 5, schedule: str = "lockstep", per_tier: dict[str, int] | None = None):
        if schedule not in CHAIN_SUM_SCHEDULES:
            raise ValueError(f"unknown tier schedule {schedule!r}; use one of {', '.join(CHAIN_SUM_SCHEDULES)}")
        super().__init__((DATASET,), num_tiers, per_tier, schedule)

    def shape(self, tier: int) -> tuple[int, int]:
        """(terms, digits) of a tier's problems."""
        config = self.tiers[DATASET][tier].config_dict()
        return config["min_terms"], config["min_digits"]

    def seed_base(self, split: str, dataset: str, tier: int) -> int:
        return _CHAIN_SUM_SPLIT_OFFSET[split] + _SCHEDULE_OFFSET[self.schedule] + tier * _CHAIN_SUM_TIER_STRIDE

    def list_splits(self) -> list[dict[str, Any]]:
        return [
            {"name": s, "type": s, "num_tasks": n * self.num_tiers, "num_tiers": self.num_tiers, "per_tier": n,
             "family_field": "tier"}
            for s, n in self.per_tier.items()
        ]

    def task_spec(self, split: str, index: int, dataset: str, tier: int, local: int, seed: int) -> dict[str, Any]:
        num_terms, num_digits = self.shape(tier)
        return {
            "id": f"{_ID_PREFIX[self.schedule]}/{split}/t{tier}/{local}",
            "split": split,
            "index": index,
            "tier": tier,
            "local_index": local,
            "num_terms": num_terms,
            "num_digits": num_digits,
            "seed": seed,
        }

    def pick_index(self, seed: Any, split: str = "train", tier: int | None = None) -> int:
        """A task index chosen by `seed`, within one tier if given; the same seed gives the same task."""
        per_tier = self._check_split(split)
        check_seed(seed)
        rng = random.Random(seed)
        if tier is None:
            return rng.randrange(per_tier * self.num_tiers)
        return self.check_tier(tier) * per_tier + rng.randrange(per_tier)
