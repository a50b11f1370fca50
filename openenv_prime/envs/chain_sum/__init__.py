"""reasoning-gym `chain_sum` as an OpenEnv environment with difficulty tiers and a Task API.

`tiers` and `taskset` need only reasoning-gym; `environment` and `app` need the `openenv` package."""

from openenv_prime.envs.chain_sum.scoring import extract_final_number, score_reply
from openenv_prime.envs.chain_sum.taskset import ChainSumTaskset
from openenv_prime.envs.chain_sum.tiers import Tier, tier_schedule

__all__ = ["ChainSumTaskset", "Tier", "extract_final_number", "score_reply", "tier_schedule"]
