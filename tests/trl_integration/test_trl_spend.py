"""`OpenEnvTRLConfig(cost="spend")`: each group's update carries what the environment reported each episode cost it
(`metadata["service_spend"]`, tests/support/spend_server.py), not the generated tokens; a wrong cost is refused when
the config is built."""

from __future__ import annotations

import pytest

from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
from tests.support.spend_tasks import TASKS, episode_spend
from tests.trl_integration.tiny import grpo_args, tiny_model, tiny_tokenizer

GROUP = 4


def test_the_environments_spend_reaches_update_as_each_completions_cost(spend_server, tmp_path):
    from trl import GRPOTrainer

    # sequential: tasks 0-3 first, the one-step family, which text mode's one reply per episode scores
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=spend_server, group_size=GROUP, sampler="sequential", cost="spend"))
    updates = []
    update = openenv.sampler.update

    def recording_update(task, rewards, costs=None):
        updates.append((task.index, list(rewards), costs))
        return update(task, rewards, costs)

    openenv.sampler.update = recording_update
    args = grpo_args(tmp_path, max_steps=2)
    tokenizer = tiny_tokenizer()
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=openenv.dataset(args),
                          args=args, processing_class=tokenizer)
    openenv.attach(trainer)
    trainer.train()
    openenv.close()

    assert [index for index, _, _ in updates] == [0, 1, 2, 3]  # 2 groups a step, every one scored
    for index, rewards, costs in updates:
        assert len(rewards) == GROUP
        assert costs == [episode_spend(TASKS[index])] * GROUP  # the server's spend, whatever was generated
    assert openenv.sampler.metrics(per_key=False)["cost"] == pytest.approx(
        GROUP * sum(episode_spend(TASKS[i]) for i in range(4)))


def test_an_unknown_cost_is_refused_by_the_config():
    with pytest.raises(ValueError, match="cost"):
        OpenEnvTRLConfig(cost="dollars")
