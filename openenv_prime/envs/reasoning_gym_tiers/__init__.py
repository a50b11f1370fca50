"""Any reasoning-gym dataset that registers a curriculum, in difficulty tiers read from it, served with the Task API.

Two cases of one server: `serve reasoning-gym` (several datasets, tier t every curriculum attribute at level t;
family = dataset and tier, spec field `family`, e.g. "leg_counting/2", beside `dataset` and `tier`), and
`serve chain-sum` (chain_sum alone on a lockstep or interleaved tier schedule, laid out as its own server was:
`chain_sum`). `tiers`, `layout`, `chain_sum`, `scoring` and `overlap` need only reasoning-gym; `environment` and
`app` need `openenv`.
"""

from openenv_prime.envs.reasoning_gym_tiers.chain_sum import ChainSumTaskset
from openenv_prime.envs.reasoning_gym_tiers.layout import ReasoningGymTaskset, check_datasets
from openenv_prime.envs.reasoning_gym_tiers.tiers import DatasetError, DatasetTier, dataset_tiers

__all__ = ["ChainSumTaskset", "DatasetError", "DatasetTier", "ReasoningGymTaskset", "check_datasets", "dataset_tiers"]
