"""Everything a run needs before its first step, built in one place: the environment server, the trainable model,
the environment's tasks and protocol, the sampler and the episode runner (`TrainerParts`).

Setup talks to the environment once through the client's `EnvironmentSetup` (the same path as the eval and the
verifiers taskset): which split and family field, the sampler's tasks, each task's reset arguments, the reset check
and the action protocol.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from openenv_prime.mlx_trainer.config import EnvironmentConfig, TrainConfig
from openenv_prime.mlx_trainer.errors import TrainingError
from openenv_prime.mlx_trainer.rollouts.runner import EpisodeRunner
from openenv_prime.mlx_trainer.worker import MainThreadMLX


@dataclass(frozen=True)
class TrainerParts:
    """What the steps, the evals and the checkpoints of a run work with."""

    model: Any
    tokenizer: Any
    optimizer: Any
    sampler: Any
    runner: EpisodeRunner
    env_name: str
    base_url: str
    mlx: MainThreadMLX


@contextmanager
def environment_url(env: EnvironmentConfig) -> Iterator[str]:
    """The environment's base URL: ``env.base_url``, or an embedded server started for the run and stopped after it."""
    if env.base_url:
        yield env.base_url
        return
    from openenv_prime.envs.launch import local_server

    served = {"datasets": env.datasets} if env.embedded == "reasoning-gym" else {"schedule": env.schedule}
    sizes = [arg for split, n in env.split_sizes.items() for arg in (f"--{split}-size", str(n))]
    with local_server(env.embedded, tiers=env.tiers, max_sessions=env.max_sessions, extra_args=sizes, **served) as url:
        yield url


def _note(text: str | None) -> None:
    if text is not None:
        print(f"note: {text}", file=sys.stderr)


async def build_parts(config: TrainConfig, base_url: str, mlx: MainThreadMLX, sampler_kwargs: dict[str, Any],
                      sampler_wrapper: Callable[[Any], Any] | None = None) -> TrainerParts:
    """Load the model (on the main thread), read the environment's tasks, and build the sampler over them with
    ``sampler_kwargs`` (wrapped by ``sampler_wrapper`` if given) and the episode runner."""
    from openenv_prime.client.setup import EnvironmentSetup
    from openenv_prime.mlx_trainer.rollouts.runner import Renderer
    from openenv_prime.mlx_trainer.training.trainable import load_trainable
    from openenv_prime.samplers import make_sampler

    env = config.environment
    model, tokenizer, optimizer = await mlx.run(load_trainable, config)
    with EnvironmentSetup(base_url, tasks=env.tasks, env_name=env.env_name, timeout=env.timeout) as setup:
        split = setup.choose_split(env.train_split, setting="environment.train_split").name
        family = setup.family_field(split, env.family_field)
        _note(family.note("environment.family_field"))
        tasks = setup.sampler_tasks(split, family_field=family.name, family_setting="environment.family_field")
        resets = {task.index: setup.reset_kwargs(task.split, task.index) for task in tasks}
        if env.check_reset:
            _note(await setup.check_reset(env.train_split, len(tasks), setting="environment.check_reset = false",
                                          timeout=env.timeout))
        protocol = setup.protocol(env, action_setting="environment.action_field")
        env_name = setup.env_name
    if not tasks:
        raise TrainingError(f"environment.train_split {env.train_split!r} has no tasks in {env.tasks or base_url}")
    try:
        sampler = make_sampler(config.sampler.name, tasks, **sampler_kwargs)
    except (TypeError, ValueError) as err:
        raise TrainingError(f"sampler.kwargs: {err}; see the {config.sampler.name} sampler's arguments") from None
    runner = EpisodeRunner(
        model, Renderer(tokenizer, config.grpo.system_prompt, protocol=protocol), mlx, base_url,
        max_sessions=min(env.max_sessions, config.grpo.group_size * config.grpo.tasks_per_step),
        max_new_tokens=config.grpo.max_new_tokens, temperature=config.grpo.temperature,
        rules=env.rules(), timeout=env.timeout, reset_kwargs=lambda task: resets[task.index],
    )
    return TrainerParts(model, tokenizer, optimizer, sampler_wrapper(sampler) if sampler_wrapper else sampler, runner,
                        env_name, base_url, mlx)
