"""`[sampler] cost = "spend"`: the MLX trainer's updates carry what the environment reported each episode cost it
(its steps' `metadata["service_spend"]` summed, tests/support/spend_server.py), not the generated tokens; an
environment that reports spend for some groups only is refused at the first group that differs, in spend terms."""

from __future__ import annotations

import pytest

from trainer_helpers import RecordingSampler

from openenv_prime.mlx_trainer.config import config_from_dict
from openenv_prime.mlx_trainer.training.loop import train
from openenv_prime.samplers import CostsMismatchError
from tests.support.spend_tasks import TASKS, episode_spend


def spend_config(model_dir, url, split: str):
    return config_from_dict({
        "seed": 0, "steps": 1, "plot": False, "model": {"path": str(model_dir)},
        "grpo": {"group_size": 2, "tasks_per_step": len(TASKS), "max_new_tokens": 3, "learning_rate": 3e-4},
        "sampler": {"name": "sequential", "cost": "spend"},  # every task once: both families, both step counts
        "environment": {"base_url": url, "train_split": split, "max_sessions": 32, "observation_field": "question"},
        "eval": {"enabled": False},
        "checkpoint": {"every": 100},
    })


class IndexRecorder(RecordingSampler):
    """Records each update by its task's index (RecordingSampler keeps the key, the family)."""

    def update(self, key, rewards, costs=None):
        self.indexed = [*getattr(self, "indexed", []), (key.index, list(rewards), costs)]
        super().update(key, rewards, costs)


def test_the_environments_spend_summed_over_the_steps_reaches_update(tiny_model_dir, spend_server, tmp_path):
    rec = []
    train(spend_config(tiny_model_dir, spend_server, "train"), tmp_path / "run",
          sampler_wrapper=lambda sampler: rec.append(IndexRecorder(sampler)) or rec[-1], progress=False)
    assert [index for draw in rec[0].draws for _, index in draw] == list(range(len(TASKS)))
    updates = rec[0].indexed
    assert updates, "no group was scored"
    for index, rewards, costs in updates:
        # a scored episode ran all its steps: one-step tasks report `spend`, two-step ones twice it
        assert costs == [episode_spend(TASKS[index])] * len(rewards)
    assert any(TASKS[index]["steps"] == 2 for index, _, _ in updates)  # the sum over two steps was exercised


def test_spend_on_some_groups_only_stops_the_run_naming_service_spend(tiny_model_dir, spend_server, tmp_path):
    with pytest.raises(CostsMismatchError) as refused:
        train(spend_config(tiny_model_dir, spend_server, "partial"), tmp_path / "run", progress=False)
    message = str(refused.value)
    assert message.startswith('[sampler] cost = "spend": ')
    assert "metadata['service_spend']" in message
