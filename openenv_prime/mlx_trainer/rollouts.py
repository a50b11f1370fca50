"""G episodes per task over the OpenEnv ``/ws`` wire, with the replies generated in one batch.

Each episode is a real session: ``reset(split=, index=)``, the observation rendered into a chat
prompt, the model's reply sent as the action with ``step``, and the reward the environment pays.
Episodes run in waves of at most ``max_sessions`` sockets, kept open from step to step (a reset
starts the next episode on the same socket); every wave is one generation batch.
Single-turn: an episode that is not done after its first step keeps the reward it has so far.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import mlx.nn as nn

from openenv_prime.client import EpisodeSession
from openenv_prime.client.errors import InvalidRequestError
from openenv_prime.client.render import observation_to_text, reply_to_action
from openenv_prime.mlx_trainer.generation import Completion, generate, render_prompt
from openenv_prime.mlx_trainer.worker import MainThreadMLX
from openenv_prime.samplers.task import Task


@dataclass(frozen=True)
class Rollout:
    task: Task
    prompt: list[int]
    completion: Completion
    reward: float
    done: bool


@dataclass
class RolloutTimes:
    generation: float = 0.0
    environment: float = 0.0


@dataclass
class Renderer:
    """How observations become prompts and replies become actions for one environment."""

    tokenizer: Any
    system_prompt: str = ""
    observation_field: str | None = None
    action_field: str | None = None
    action_schema: dict[str, Any] | None = None

    def messages(self, observation: dict) -> list[dict]:
        msgs = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return msgs + [{"role": "user", "content": observation_to_text(observation, self.observation_field)}]

    def action(self, reply: str) -> dict:
        return reply_to_action(reply, self.action_schema, self.action_field)


@dataclass
class EpisodeRunner:
    model: nn.Module
    renderer: Renderer
    mlx: MainThreadMLX
    base_url: str
    max_sessions: int
    max_new_tokens: int
    temperature: float
    timeout: float = 30.0
    times: RolloutTimes = field(default_factory=RolloutTimes)
    _sessions: list[EpisodeSession] = field(default_factory=list)

    async def close(self) -> None:
        """Close the kept sockets (before an eval opens its own, and at the end of the run)."""
        sessions, self._sessions = self._sessions, []
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

    async def _open(self, n: int) -> list[EpisodeSession]:
        missing = n - len(self._sessions)
        if missing > 0:
            fresh = [EpisodeSession(self.base_url, timeout=self.timeout) for _ in range(missing)]
            self._sessions += fresh
            await asyncio.gather(*(s.connect() for s in fresh))
        return self._sessions[:n]

    async def run_groups(self, tasks: list[Task], group_size: int, step: int) -> list[list[Rollout]]:
        """One group of ``group_size`` rollouts per task, in the order of ``tasks``."""
        episodes = [(t, i) for t in tasks for i in range(group_size)]
        rollouts: list[Rollout] = []
        for start in range(0, len(episodes), self.max_sessions):
            rollouts.extend(await self._wave(episodes[start:start + self.max_sessions], step))
        return [rollouts[k * group_size:(k + 1) * group_size] for k in range(len(tasks))]

    async def _wave(self, episodes: list[tuple[Task, int]], step: int) -> list[Rollout]:
        try:
            t0 = time.perf_counter()
            sessions = await self._open(len(episodes))
            first = await asyncio.gather(*(
                s.reset(split=task.split, index=task.index, episode_id=f"train-{step}-{task.split}-{task.index}-{i}")
                for s, (task, i) in zip(sessions, episodes)
            ))
            t_reset = time.perf_counter()
            prompts = self._render([r.observation for r in first])
            t1 = time.perf_counter()
            completions = await self.mlx.run(generate, self.model, self.renderer.tokenizer, prompts,
                                             max_tokens=self.max_new_tokens, temperature=self.temperature)
            t2 = time.perf_counter()
            results = await asyncio.gather(*(
                self._step(s, c.text) for s, c in zip(sessions, completions)
            ))
            t3 = time.perf_counter()
            self.times.environment += (t_reset - t0) + (t3 - t2)  # prompt rendering counts as "other"
            self.times.generation += t2 - t1
        except BaseException:
            await self.close()  # a failed socket must not be reused: its replies could be out of step
            raise
        return [
            Rollout(task, prompt, completion, reward, done)
            for (task, _), prompt, completion, (reward, done) in zip(episodes, prompts, completions, results)
        ]

    def _render(self, observations: list[dict]) -> list[list[int]]:
        """Chat-template each distinct observation once (a group's G episodes usually share one)."""
        cache: dict[str, list[int]] = {}
        prompts = []
        for obs in observations:
            messages = self.renderer.messages(obs)
            key = repr(messages)
            if key not in cache:
                cache[key] = render_prompt(self.renderer.tokenizer, messages)
            prompts.append(cache[key])
        return prompts

    async def _step(self, session: EpisodeSession, reply: str) -> tuple[float, bool]:
        try:
            result = await session.step(self.renderer.action(reply))
        except (ValueError, InvalidRequestError):
            return 0.0, True  # a reply that is no valid action earns nothing (InvalidRequestError is a ValueError)
        return float(result.reward or 0.0), bool(result.done)
