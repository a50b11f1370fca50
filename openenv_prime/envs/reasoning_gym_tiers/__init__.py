"""Any reasoning-gym dataset that registers a curriculum, in difficulty tiers read from it; several
datasets in one OpenEnv server with the Task API (`openenv-prime serve reasoning-gym`).

Family = dataset and tier (spec field `family`, e.g. "leg_counting/2", beside `dataset` and `tier`).
`tiers`, `taskset`, `scoring` and `overlap` need only reasoning-gym; `environment` and `app` need `openenv`.
"""

from openenv_prime.envs.reasoning_gym_tiers.taskset import ReasoningGymTaskset, check_datasets
from openenv_prime.envs.reasoning_gym_tiers.tiers import DatasetError, DatasetTier, dataset_tiers

__all__ = ["DatasetError", "DatasetTier", "ReasoningGymTaskset", "check_datasets", "dataset_tiers"]
