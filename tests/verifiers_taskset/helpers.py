"""Run OpenEnv taskset episodes in-process, the way `vf-eval` does, against real servers."""

from __future__ import annotations

import asyncio
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.utils.loaders import load_environment, resolve_env_config

from openenv_prime.verifiers_taskset import OpenEnvEnv, OpenEnvTask

MODEL = "scripted"


def make_env(openenv_url: str, *, player: dict[str, Any] | None = None, **taskset: Any) -> OpenEnvEnv:
    """The env verifiers builds for `--env.taskset.id openenv-prime` plus these taskset fields."""
    raw: dict[str, Any] = {"taskset": {"id": "openenv-prime", "base_url": openenv_url, **taskset}}
    if player is not None:
        raw["player"] = player
    env = load_environment(resolve_env_config(raw))
    assert isinstance(env, OpenEnvEnv)
    return env


def model_context(model_url: str) -> vf.ModelContext:
    client = vf.EvalClientConfig(base_url=model_url, api_key_var="OPENENV_PRIME_TEST_KEY")
    return vf.ModelContext(model=MODEL, client=client, sampling=vf.SamplingConfig())


async def run_episodes(
    env: vf.Env, tasks: list[OpenEnvTask], model_url: str, *, rollouts: int = 1, concurrency: int = 8
) -> list[vf.Episode]:
    ctx = model_context(model_url)
    gate = asyncio.Semaphore(concurrency)
    async with env.serving():
        slots = [slot for task in tasks for slot in env.slots(task, rollouts)]
        return await asyncio.wait_for(
            asyncio.gather(*(env.run_slot(slot, ctx, gate) for slot in slots)), timeout=300
        )


def by_tier(tasks: list[OpenEnvTask], per_tier: int) -> list[OpenEnvTask]:
    """The first `per_tier` tasks of every family, in family order."""
    picked: dict[str, list[OpenEnvTask]] = {}
    for task in tasks:
        family = picked.setdefault(task.data.family, [])
        if len(family) < per_tier:
            family.append(task)
    return [task for family in sorted(picked) for task in picked[family]]


def reward_of(episode: vf.Episode) -> float:
    (trace,) = episode.traces
    return trace.reward


def system_text(request: dict[str, Any]) -> str:
    """The system message of one chat request the model was sent ("" when it had none)."""
    return next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
