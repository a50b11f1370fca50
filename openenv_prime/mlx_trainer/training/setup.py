"""Everything a run needs before its first step, built in one place: the environment server, the trainable model,
the environment's tasks and protocol, the sampler and the episode runner (`TrainerParts`).

Setup talks to the environment once through the client's `EnvironmentSetup` (the same path as the eval and the
verifiers taskset): which split and family field, the sampler's tasks, each task's reset arguments, the reset check
and the action protocol.
"""

from __future__ import annotations

import asyncio
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

    def prepare():
        with EnvironmentSetup.of(env.model_copy(update={"base_url": base_url})) as setup:
            return setup.prepare(env.train_split, env, env.spelling)

    found = await asyncio.to_thread(prepare)  # the setup's HTTP calls and its reset check are synchronous
    for note in found.notes:
        print(f"note: {note}", file=sys.stderr)
    try:
        sampler = make_sampler(config.sampler.name, found.tasks, **sampler_kwargs)
    except (TypeError, ValueError) as err:
        raise TrainingError(f"sampler.kwargs: {err}; see the {config.sampler.name} sampler's arguments") from None
    resets = found.resets
    runner = EpisodeRunner(
        model, Renderer(tokenizer, config.grpo.system_prompt, protocol=found.protocol), mlx, base_url,
        max_sessions=min(env.max_sessions, config.grpo.group_size * config.grpo.tasks_per_step),
        max_new_tokens=config.grpo.max_new_tokens, temperature=config.grpo.temperature,
        rules=env.rules(), timeout=env.timeout, reset_kwargs=lambda task: {**env.reset_kwargs, **resets[task.index]},
    )
    return TrainerParts(model, tokenizer, optimizer, sampler_wrapper(sampler) if sampler_wrapper else sampler, runner,
                        found.env_name, base_url, mlx)
