"""Task samplers for GRPO: which task each group trains on. Standard library only.

    from openenv_prime.samplers import Task, make_sampler
    sampler = make_sampler("curriculum", tasks, group_size=8)
    for task in sampler.sample(4): ...        # roll out a group of 8 on each task
    sampler.update(task.key, rewards, costs)  # every scored group, before any filter drops it
"""

from openenv_prime.samplers.base import TaskSampler
from openenv_prime.samplers.curriculum import CurriculumSampler
from openenv_prime.samplers.keymetrics import flat_key_metrics, most_drawn
from openenv_prime.samplers.merge import merge_state_dicts
from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.registry import SAMPLERS, make_sampler
from openenv_prime.samplers.sequential import SequentialSampler
from openenv_prime.samplers.sumtree import SumTree
from openenv_prime.samplers.task import Task
from openenv_prime.samplers.uniform import UniformSampler
from openenv_prime.samplers.upgrade import upgrade_state_dict
from openenv_prime.samplers.validation import CostsMismatchError

__all__ = [
    "CostsMismatchError",
    "CurriculumSampler",
    "SAMPLERS",
    "SequentialSampler",
    "SumTree",
    "Task",
    "TaskPool",
    "TaskSampler",
    "UniformSampler",
    "flat_key_metrics",
    "make_sampler",
    "merge_state_dicts",
    "most_drawn",
    "upgrade_state_dict",
]
