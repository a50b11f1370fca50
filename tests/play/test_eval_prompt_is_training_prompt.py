"""A trainer's evals ask the model what its training asks: for the same task, the eval's first prompt (system message
included) equals the training's first prompt, in the MLX trainer and in the TRL integration, for a free-text, an
Enum, a JSON-object and a tool-call (MCP) environment, with our system prompt empty (the environment's reply format
alone) or set."""

from __future__ import annotations

import json

import pytest

from openenv_prime.client.engine.episode import Episode
from openenv_prime.client.wire.session import EpisodeSession
from openenv_prime.client.setup import EnvironmentSetup
from openenv_prime.evaluation import run_eval

ENVIRONMENTS = {  # kind -> (script, its extra argument)
    "text": ("gold_server.py", "fields"),
    "enum": ("grid_server.py",),
    "json": ("lookalike_envs.py", "fire"),
    "tools": ("mcp_server.py",),
}


class FirstPrompts:
    """An eval policy that keeps the prompts opening each episode (no reply in them yet) and answers nothing useful."""

    def __init__(self):
        self.opening: list[str] = []

    async def complete(self, prompts):
        self.opening += [json.dumps(p) for p in prompts if not any(m["role"] == "assistant" for m in p)]
        return ["?"] * len(prompts)


def eval_openings(config) -> set[str]:
    policy = FirstPrompts()
    run_eval(config, policy)
    assert policy.opening
    return set(policy.opening)


async def _opening_texts(url: str, protocol, rules, resets: list[dict]) -> list[str]:
    texts = []
    for reset in resets:
        episode = Episode(protocol, rules, reset, open_session=lambda: EpisodeSession(url))
        await episode.start(EpisodeSession(url))
        texts.append(episode.opening.text)
        await episode.session.close()
    return texts


@pytest.fixture(params=sorted(ENVIRONMENTS))
def served(request, play_servers):
    script, *args = ENVIRONMENTS[request.param]
    return request.param, play_servers(script, "0.4.1", *args)


@pytest.mark.parametrize("system_prompt", ["", "Think, then act."])
def test_the_mlx_trainers_eval_asks_its_training_prompt(served, system_prompt):
    import asyncio

    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.rollouts.runner import Renderer
    from openenv_prime.mlx_trainer.training.evals import eval_config
    from openenv_prime.mlx_trainer.training.setup import TrainerParts

    kind, url = served
    config = config_from_dict({"grpo": {"system_prompt": system_prompt}, "eval": {"tasks_per_family": 4},
                               "environment": {"base_url": url, "train_split": "test", "test_split": "test",
                                                               "check_reset": False}})
    env = config.environment
    with EnvironmentSetup(url) as setup:  # the trainer's setup path (training/setup.py)
        protocol = setup.protocol(env, action_setting="environment.action_field")
        tasks = setup.sampler_tasks("test", family_field=None, family_setting="environment.family_field")
        resets = [setup.reset_kwargs(t.split, t.index) for t in tasks]
        env_name = setup.env_name
    renderer = Renderer(None, config.grpo.system_prompt, protocol=protocol)
    texts = asyncio.run(_opening_texts(url, protocol, env.rules(), resets))
    trained = {json.dumps(renderer.opening_messages(text)) for text in texts}
    parts = TrainerParts(None, None, None, None, None, env_name, url, None)
    asked = eval_openings(eval_config(config, parts))
    assert asked <= trained, f"{kind}: eval prompts differ from training prompts"
    system = protocol.instructions(system_prompt or None)
    assert all(json.loads(p)[0] == {"role": "system", "content": system} for p in asked) if system else True


@pytest.mark.parametrize("system_prompt", ["", "Think, then act."])
def test_the_trl_integrations_eval_asks_its_training_prompt(served, system_prompt):
    pytest.importorskip("trl", reason="TRL is not installed (the `trl` extra)")
    from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig

    kind, url = served
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, train_split="test", test_split="test", group_size=4,
                                          system_prompt=system_prompt, check_reset=False))
    try:
        trained = {json.dumps(p) for p in openenv.env.prompts(openenv.env.tasks)}
        asked = eval_openings(openenv.eval_config(per_family=4))
    finally:
        openenv.close()
    assert asked <= trained, f"{kind}: eval prompts differ from training prompts"
