"""A trainer's evals ask the model what its training asks: for the same task, the eval's first prompt (system message
included) equals the training's first prompt, in the MLX trainer, the TRL integration and the verifiers taskset, for a
free-text, an Enum, a JSON-object and a tool-call (MCP) environment, and for three that bring their own system prompt
(an observation's `system_prompt` field; one its `/splits` entry declares; an `openenv import`-shaped chat prompt with
a system message), with our system
prompt empty (the environment's reply format alone) or set. Where the environment brings its own, it is the system
prompt and ours is not sent."""

from __future__ import annotations

import json

import pytest

from openenv_prime.client.engine.episode import Episode
from openenv_prime.client.prompts.render import Opening
from openenv_prime.client.wire.session import EpisodeSession
from openenv_prime.client.setup import EnvironmentSetup
from openenv_prime.evaluation import run_eval

ENVIRONMENTS = {  # kind -> (script, its extra argument)
    "text": ("gold_server.py", "fields"),
    "enum": ("grid_server.py",),
    "json": ("lookalike_envs.py", "fire"),
    "tools": ("mcp_server.py",),
    "own system field": ("instructed_server.py", "field"),
    "own system declared": ("instructed_server.py", "declared"),
    "own system message": ("gold_server.py", "tools"),
}
OWN_SYSTEM = {"own system field": "inside <answer></answer> tags", "own system declared": "inside <answer></answer> tags",
              "own system message": "Answer in words."}
"""The kinds that bring their own system prompt -> a phrase of it."""


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


async def _openings(url: str, protocol, rules, resets: list[dict]) -> list[Opening]:
    openings = []
    for reset in resets:
        episode = Episode(protocol, rules, reset, open_session=lambda: EpisodeSession(url))
        await episode.start(EpisodeSession(url))
        openings.append(episode.opening)
        await episode.session.close()
    return openings


def assert_whose_system_prompt(kind: str, asked: set[str], ours: str) -> None:
    """The environment's own system prompt opens every prompt of the kinds that bring one, and ours is not in it."""
    if kind not in OWN_SYSTEM:
        return
    for prompt in map(json.loads, asked):
        assert prompt[0]["role"] == "system" and OWN_SYSTEM[kind] in prompt[0]["content"], prompt[0]
        assert not ours or ours not in prompt[0]["content"]
        assert all(OWN_SYSTEM[kind] not in m["content"] for m in prompt[1:])  # not shown twice


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
    openings = asyncio.run(_openings(url, protocol, env.rules(), resets))
    trained = {json.dumps(renderer.opening_messages(opening)) for opening in openings}
    parts = TrainerParts(None, None, None, None, None, env_name, url, None)
    asked = eval_openings(eval_config(config, parts))
    assert asked <= trained, f"{kind}: eval prompts differ from training prompts"
    systems = {protocol.system_prompt(system_prompt, opening) for opening in openings}
    assert {json.loads(p)[0]["content"] for p in asked if json.loads(p)[0]["role"] == "system"} <= systems
    assert_whose_system_prompt(kind, asked, system_prompt)


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
    assert_whose_system_prompt(kind, asked, system_prompt)


def test_the_taskset_asks_the_evals_prompt(served):
    """With the same base (the taskset's `instructions`, eval's `system_prompt`), the eval's first prompt of a task is
    the taskset's first turn of it (the taskset plays every task, the eval a choice of them)."""
    import asyncio

    from openenv_prime.evaluation import EvalConfig
    from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, fixed
    from tests.verifiers_taskset.helpers import make_env, run_episodes

    kind, url = served
    base = "Think, then act."
    env = make_env(url, splits=["test"], instructions=base, check_reset=False, max_steps=1, max_invalid_actions=0,
                   family_field=None)
    model = ScriptedOpenAIServer(fixed("?"))
    with model as model_url:
        asyncio.run(run_episodes(env, list(env.taskset), model_url))
    played = {json.dumps(r["messages"]) for r in model.requests if not any(m["role"] == "assistant" for m in r["messages"])}
    asked = eval_openings(EvalConfig(base_url=url, split="test", family_field=None, per_family=4, system_prompt=base,
                                     check_reset=False))
    assert asked <= played, f"{kind}: the taskset's first turns differ from the eval's prompts"
    assert_whose_system_prompt(kind, asked, base)
