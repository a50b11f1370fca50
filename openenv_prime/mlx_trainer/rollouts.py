"""G episodes per task over the OpenEnv ``/ws`` wire, each model turn generated in one batch.

Each episode is a real session: ``reset`` with the task's arguments (``split``/``index`` on a Task API
server, a task list line's ``reset`` otherwise), the observation rendered into a chat prompt, the
model's reply sent as the action with ``step``, and so on until the environment says ``done`` or the episode
has taken ``max_steps`` steps. A reply that is no valid action is fed back to the model and counted, as the
verifiers taskset does; after ``max_invalid_actions`` of them the next one ends the episode.
Episodes run in waves of at most ``max_sessions`` sockets (fewer when the server admits fewer), kept open from step to step (a reset starts the
next episode on the same socket); every turn of a wave is one generation batch over its open episodes.
A step's first wave can be reset ahead of time (:meth:`EpisodeRunner.open_first_wave`), while the previous
step trains: on a small model the environment's round trips are otherwise a large share of a step.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import mlx.nn as nn

from openenv_prime.client import EpisodeSession
from openenv_prime.client.errors import CapacityError, InvalidRequestError, ServerError
from openenv_prime.client.prompting import PromptSettings
from openenv_prime.client.render import EpisodeProtocol, Opening
from openenv_prime.mlx_trainer.chat_tokens import ChatTokens, TokenTranscript
from openenv_prime.mlx_trainer.generation import generate
from openenv_prime.client.rewards import episode_reward
from openenv_prime.mlx_trainer.worker import MainThreadMLX
from openenv_prime.samplers.task import Task


@dataclass(frozen=True)
class Rollout:
    """One finished episode: its token sequence (first prompt + the rest, model tokens masked in) and its score."""

    task: Task
    prompt: list[int]
    completion: list[int]  # replies and the observations between them
    completion_mask: list[float]  # 1.0 on the model's own tokens
    reward: float | None  # None: stepped but never scored; left out of its group
    generated_tokens: int
    turns: int
    steps: int
    invalid_actions: int
    done: bool


@dataclass
class RolloutTimes:
    generation: float = 0.0
    environment: float = 0.0


@dataclass
class EpisodeRules:
    """How episodes are played and scored (the ``environment`` section's multi-turn keys)."""

    max_steps: int = 16
    max_invalid_actions: int = 3
    reward_mode: str = "sum"
    reward_clip: tuple[float, float] | None = None


class Renderer:
    """How observations become prompts and replies become actions for one environment, through the client's
    :class:`EpisodeProtocol` (shared with the eval and the verifiers taskset: Enum, JSON and MCP actions)."""

    def __init__(self, tokenizer: Any, system_prompt: str = "", observation_field: str | None = None,
                 action_field: str | None = None, action_schema: dict[str, Any] | None = None,
                 settings: PromptSettings | None = None):
        self.tokenizer = tokenizer
        if settings is None:
            settings = PromptSettings(observation_template=observation_field, action_field=action_field)
        self.protocol = EpisodeProtocol(action_schema, settings=settings)
        self.system_prompt = self.protocol.instructions(system_prompt or None) or ""

    async def start(self, session: EpisodeSession, **reset_kwargs: Any) -> Opening:
        """Reset the episode (and list an MCP environment's tools)."""
        return await self.protocol.start(session, **reset_kwargs)

    def opening_messages(self, text: str) -> list[dict]:
        """An episode's opening messages: the system prompt (if any) and the first user message."""
        msgs = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return msgs + [{"role": "user", "content": text}]

    def messages(self, observation: dict) -> list[dict]:
        """The opening messages for a reset's observation."""
        return self.opening_messages(self.protocol.observation_text(observation))

    def text(self, result) -> str:
        return self.protocol.text(result)

    def action(self, reply: str, opening: Opening | None = None) -> tuple[str, dict | None]:
        """The action for ``reply``, or why there is none (the taskset's wording; an empty reply sends nothing)."""
        if not reply.strip():
            return "Your reply was empty.", None
        try:
            return "", self.protocol.action(reply, opening)
        except ValueError as error:  # InvalidRequestError is a ValueError
            return f"Your reply is not a valid action: {error}", None


@dataclass
class _Episode:
    task: Task
    session: EpisodeSession
    transcript: TokenTranscript
    opening: Opening
    rewards: list[float | None] = field(default_factory=list)
    generated: int = 0
    turns: int = 0
    steps: int = 0
    invalid_actions: int = 0
    done: bool = False
    finished: bool = False


@dataclass
class OpenedWave:
    """A wave reset ahead of its step: the episodes, and the seconds their resets took."""

    episodes: list[_Episode]
    seconds: float


@dataclass
class EpisodeRunner:
    model: nn.Module
    renderer: Renderer
    mlx: MainThreadMLX
    base_url: str
    max_sessions: int
    max_new_tokens: int
    temperature: float
    rules: EpisodeRules = field(default_factory=EpisodeRules)
    timeout: float = 30.0
    # What plays a task: (split, index) on a Task API server, a task list line's `reset` arguments otherwise.
    reset_kwargs: Callable[[Task], dict[str, Any]] = lambda task: {"split": task.split, "index": task.index}  # noqa: E731
    times: RolloutTimes = field(default_factory=RolloutTimes)
    _sessions: list[EpisodeSession] = field(default_factory=list)
    _server_full: bool = False  # the server refused a socket: ask for no more until the sockets are closed

    def __post_init__(self) -> None:
        self.chat = ChatTokens(self.renderer.tokenizer)

    async def close(self) -> None:
        """Close the kept sockets (before an eval opens its own, and at the end of the run)."""
        sessions, self._sessions = self._sessions, []
        self._server_full = False
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

    async def _open(self, n: int) -> list[EpisodeSession]:
        """Up to ``n`` open sockets, kept from step to step; fewer when the server admits fewer (its session limit,
        e.g. 1 for an environment that cannot run concurrent sessions), found by asking each new socket once."""
        missing = n - len(self._sessions)
        if missing > 0 and not self._server_full:
            fresh = [EpisodeSession(self.base_url, timeout=self.timeout, capacity_wait=0) for _ in range(missing)]
            try:
                await asyncio.gather(*(s.connect() for s in fresh))
                probes = await asyncio.gather(*(s.state() for s in fresh), return_exceptions=True)
                failed = [p for p in probes if isinstance(p, BaseException) and not isinstance(p, (CapacityError, ServerError))]
                if failed:
                    raise failed[0]
            except BaseException:
                await asyncio.gather(*(s.close() for s in fresh), return_exceptions=True)
                raise
            refused = [p for p in probes if isinstance(p, CapacityError)]
            await asyncio.gather(*(s.close() for s, p in zip(fresh, probes) if isinstance(p, CapacityError)))
            # ServerError: an environment that cannot report its state before a reset; the socket is usable
            self._sessions += [s for s, p in zip(fresh, probes) if not isinstance(p, CapacityError)]
            self._server_full = bool(refused)
            if not self._sessions:
                raise refused[0]
        return self._sessions[:n]

    async def run_groups(self, tasks: list[Task], group_size: int, step: int,
                         first_wave: OpenedWave | None = None) -> list[list[Rollout]]:
        """One group of ``group_size`` rollouts per task, in the order of ``tasks``; ``first_wave``: its
        episodes already reset by :meth:`open_first_wave` for these tasks."""
        episodes = [(t, i) for t in tasks for i in range(group_size)]
        rollouts: list[Rollout] = []
        if first_wave is not None:
            rollouts.extend(await self._play(first_wave.episodes))
        while len(rollouts) < len(episodes):
            wave = await self._reset_wave(episodes[len(rollouts):], step, self.times)
            rollouts.extend(await self._play(wave))
        return [rollouts[k * group_size:(k + 1) * group_size] for k in range(len(tasks))]

    async def open_first_wave(self, tasks: list[Task], group_size: int, step: int) -> OpenedWave:
        """Open the sockets and reset the first wave of a step ahead of time; its seconds are kept apart
        (they overlap another step's training) in ``OpenedWave.seconds``."""
        times = RolloutTimes()
        episodes = await self._reset_wave([(t, i) for t in tasks for i in range(group_size)], step, times)
        return OpenedWave(episodes, times.environment)

    async def _reset_wave(self, pending: list[tuple[Task, int]], step: int, times: RolloutTimes) -> list[_Episode]:
        """Reset as many of ``pending`` as there are sockets; their episodes, ready for the first turn."""
        t0 = time.perf_counter()
        sessions = await self._open(min(self.max_sessions, len(pending)))
        planned = pending[:len(sessions)]
        try:
            openings = await asyncio.gather(*(
                self.renderer.start(s, **self.reset_kwargs(task), episode_id=f"train-{step}-{task.split}-{task.index}-{i}")
                for s, (task, i) in zip(sessions, planned)
            ))
        except BaseException:
            await self.close()  # a failed socket must not be reused: its replies could be out of step
            raise
        times.environment += time.perf_counter() - t0
        episodes = []
        for s, (task, _), opening in zip(sessions, planned, openings):
            ep = _Episode(task, s, self.chat.start(self.renderer.opening_messages(opening.text)), opening)
            ep.done = ep.finished = opening.result.done
            episodes.append(ep)
        return episodes

    async def _play(self, episodes: list[_Episode]) -> list[Rollout]:
        """Turns until every episode of the wave is finished; each turn is one generation batch."""
        try:
            while active := [ep for ep in episodes if not ep.finished]:
                t1 = time.perf_counter()
                completions = await self.mlx.run(generate, self.model, self.renderer.tokenizer,
                                                 [ep.transcript.tokens for ep in active],
                                                 max_tokens=self.max_new_tokens, temperature=self.temperature,
                                                 stop=self.mlx.stopping)
                t2 = time.perf_counter()
                await asyncio.gather(*(self._act(ep, c) for ep, c in zip(active, completions)))
                self.times.generation += t2 - t1
                self.times.environment += time.perf_counter() - t2  # includes templating the next turn
        except BaseException:
            await self.close()  # a failed socket must not be reused: its replies could be out of step
            raise
        return [self._rollout(ep) for ep in episodes]

    async def _act(self, ep: _Episode, completion) -> None:
        """Send one reply as the action; then either end the episode or add the next user turn."""
        ep.turns += 1
        ep.generated += len(completion.tokens)
        self.chat.add_reply(ep.transcript, completion.tokens, completion.text)
        problem, action = self.renderer.action(completion.text, ep.opening)
        if action is not None:
            try:
                result = await ep.session.step(action)
            except InvalidRequestError as error:
                problem = f"The environment rejected that action: {error.message}"
            else:
                ep.steps += 1
                ep.rewards.append(None if result.reward is None else float(result.reward))
                ep.done = result.done
                if result.done or ep.steps >= self.rules.max_steps:
                    ep.finished = True
                else:
                    self.chat.add_user(ep.transcript, self.renderer.text(result), completion.stopped)
                return
        ep.invalid_actions += 1
        if ep.invalid_actions > self.rules.max_invalid_actions:
            ep.finished = True
        else:
            self.chat.add_user(ep.transcript, f"{problem} Try again; reply with only the action.", completion.stopped)

    def _rollout(self, ep: _Episode) -> Rollout:
        t = ep.transcript
        reward = episode_reward(ep.rewards, ep.done, self.rules.reward_mode, self.rules.reward_clip)
        if ep.turns == 0:
            reward = None  # done at reset: the model never acted, there is nothing to score or train
        return Rollout(ep.task, t.tokens[:t.prompt_length], t.completion, t.completion_mask, reward,
                       ep.generated, ep.turns, ep.steps, ep.invalid_actions, ep.done)
