"""G episodes per task, played by the client's episode engine, each model turn generated in one batch.

The episodes themselves (reset with the task's arguments, the reply stepped as the action, invalid replies fed
back and counted, the limits, the reward, the replay of a dropped socket) are :mod:`openenv_prime.client.engine.episode`,
under the same :class:`~openenv_prime.client.engine.episode_rules.EpisodeRules` as the eval and the verifiers taskset.
What the trainer adds is how replies are made and kept: every round of a wave is one MLX generation batch over its
open episodes, and each episode's turns are one token sequence (:mod:`~openenv_prime.mlx_trainer.rollouts.chat_tokens`): the
sampled tokens are kept as generated, never re-tokenized, and a mask marks them for the loss. When the prompt budget
leaves older turns out of the prompt (:mod:`~openenv_prime.client.prompts.budget`), the shorter prompt starts a new
sequence of the same episode, so each reply is trained in the context it was generated in.
Episodes run in waves of at most ``max_sessions`` sockets (fewer when the server admits fewer), kept open from step
to step (a reset starts the next episode on the same socket). A step's first wave can be reset ahead of time
(:meth:`EpisodeRunner.open_first_wave`), while the previous step trains: on a small model the environment's round
trips are otherwise a large share of a step.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import mlx.nn as nn

from openenv_prime.client.engine.episode import Episode, play_in_waves, start_wave
from openenv_prime.client.engine.episode_rules import EpisodeRules
from openenv_prime.client.engine.failures import ErrorStreak
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.prompts.render import EpisodeProtocol, Opening
from openenv_prime.client.wire.session import StepResult
from openenv_prime.client.wire.session_pool import SessionPool
from openenv_prime.mlx_trainer.rollouts.chat_tokens import ChatTokens, TokenTranscript
from openenv_prime.mlx_trainer.rollouts.generation import Completion, generate
from openenv_prime.mlx_trainer.worker import MainThreadMLX
from openenv_prime.samplers.task import Task


@dataclass(frozen=True)
class Rollout:
    """One finished episode: its token sequences and its score. An episode is one sequence (its first prompt, then
    replies and the observations between them, model tokens masked in) until the prompt budget leaves older turns
    out: the shorter prompt starts a new sequence, so every sequence is what the model was prompted with."""

    task: Task
    sequences: list[TokenTranscript]  # .prompt, .completion, .completion_mask (1.0 on the model's own tokens)
    reward: float | None  # None: stepped but never scored; left out of its group
    generated_tokens: int
    turns: int
    steps: int
    invalid_actions: int
    done: bool
    error: str | None = None  # the environment failed a step: unscored, never a silent 0
    service_spend: float | None = None  # what the environment reported the episode cost it (None: nothing reported)


@dataclass
class RolloutTimes:
    """Seconds one step's play spent generating and waiting on the environment."""

    generation: float = 0.0
    environment: float = 0.0


@dataclass(frozen=True)
class PlayedGroups:
    """A step's groups, one per task in the order of the tasks, and the seconds their play took."""

    groups: list[list[Rollout]]
    times: RolloutTimes


class Renderer:
    """The chat side of one environment for this tokenizer: the system prompt and the opening messages, through the
    client's :class:`EpisodeProtocol` (shared with the eval and the verifiers taskset: Enum, JSON and MCP actions)."""

    def __init__(self, tokenizer: Any, system_prompt: str = "", observation_field: str | None = None,
                 action_field: str | None = None, action_schema: dict[str, Any] | None = None, *,
                 settings: PromptSettings | None = None, protocol: EpisodeProtocol | None = None):
        """``protocol``: the environment's, as the trainer's setup built it; else one is built from ``action_schema``
        and ``settings`` (or the two shortcut fields)."""
        self.tokenizer = tokenizer
        if protocol is None:
            if settings is None:
                settings = PromptSettings(observation_template=observation_field, action_field=action_field)
            protocol = EpisodeProtocol(action_schema, settings=settings)
        self.protocol = protocol
        self.base_prompt = system_prompt

    def opening_messages(self, opening: Opening) -> list[dict]:
        """An episode's opening messages, by the client's one prompt builder (:meth:`EpisodeProtocol.prompt`): the
        system prompt (the environment's own, else our base; then the reply format) and the first user message."""
        return self.prompt([{"role": "user", "content": opening.text}], opening)

    def prompt(self, chat: list[dict], opening: Opening | None = None) -> list[dict]:
        """The messages the model is asked with for an episode's ``chat``: the system prompt (of the episode's
        ``opening``), then the chat within the prompt budget (:meth:`EpisodeProtocol.prompt`)."""
        return self.protocol.prompt(self.base_prompt, chat, opening)

    def messages(self, observation: dict) -> list[dict]:
        """The opening messages for a reset's observation."""
        return self.opening_messages(self.protocol.opening(StepResult(observation, None, False)))


@dataclass
class _Turns:
    """The trainer's record of one episode (its :attr:`Episode.context`): its token sequences and the tokens generated."""

    task: Task
    transcripts: list[TokenTranscript] = field(default_factory=list)  # the last one is being extended
    generated: int = 0
    stopped: bool = True  # the last reply ended on an end-of-turn token


@dataclass
class OpenedWave:
    """A step's episodes with their first wave reset ahead of the step, and the seconds those resets took."""

    episodes: list[Episode]
    started: list[Episode]
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
    # How a round's replies are made: None = mlx generation over the transcripts' tokens (`generate`, looked up
    # when called, so a test can record it); a test may script it instead.
    generator: Callable[..., list[Completion]] | None = None

    def __post_init__(self) -> None:
        self.chat = ChatTokens(self.renderer.tokenizer)
        self.pool = SessionPool(self.base_url, timeout=self.timeout)
        self.streak = ErrorStreak()  # episodes the environment failed in a row: enough of them stop the run

    async def close(self) -> None:
        """Close the kept sockets (before an eval opens its own, and at the end of the run)."""
        await self.pool.close()

    async def play(self, tasks: list[Task], group_size: int, step: int, first_wave: OpenedWave | None = None) -> PlayedGroups:
        """One group of ``group_size`` rollouts per task, and the seconds spent generating and on the environment;
        ``first_wave``: these tasks' episodes with their first wave already reset by :meth:`open_first_wave`."""
        if first_wave is None:
            episodes, started = self._episodes(tasks, group_size, step), []
        else:
            episodes, started = first_wave.episodes, first_wave.started
        times = RolloutTimes()
        t0 = time.perf_counter()
        replies = functools.partial(self._replies, times)
        await play_in_waves(self.pool, episodes, replies, limit=self.max_sessions, started=started, streak=self.streak)
        times.environment = time.perf_counter() - t0 - times.generation
        silent = self.streak.never_ending_once(episodes, action_setting="environment.action_field")
        if silent:
            print(f"warning: {silent}", file=sys.stderr)
        rollouts = [self._rollout(ep) for ep in episodes]
        return PlayedGroups([rollouts[k * group_size:(k + 1) * group_size] for k in range(len(tasks))], times)

    async def open_first_wave(self, tasks: list[Task], group_size: int, step: int) -> OpenedWave:
        """Open the sockets and reset the first wave of a step ahead of time; its seconds are kept apart
        (they overlap another step's training) in ``OpenedWave.seconds``."""
        t0 = time.perf_counter()
        episodes = self._episodes(tasks, group_size, step)
        started = await start_wave(self.pool, episodes, self.max_sessions)
        return OpenedWave(episodes, started, time.perf_counter() - t0)

    def _episodes(self, tasks: list[Task], group_size: int, step: int) -> list[Episode]:
        return [
            Episode(self.renderer.protocol, self.rules, self.reset_kwargs(task), open_session=self.pool.new_session,
                    episode_id=f"train-{step}-{task.split}-{task.index}-{i}", context=_Turns(task))
            for task in tasks for i in range(group_size)
        ]

    async def _replies(self, times: RolloutTimes, active: list[Episode]) -> list[str]:
        """One generation batch over the open episodes; each transcript first gets the episode's new user message."""
        for ep in active:
            self._prompt(ep.context, self.renderer.prompt(ep.chat, ep.opening))
        t1 = time.perf_counter()
        completions = await self.mlx.run(self.generator or generate, self.model, self.renderer.tokenizer,
                                         [ep.context.transcripts[-1].tokens for ep in active],
                                         max_tokens=self.max_new_tokens, temperature=self.temperature,
                                         stop=self.mlx.stopping)
        times.generation += time.perf_counter() - t1
        for ep, completion in zip(active, completions):
            turns = ep.context
            turns.generated += len(completion.tokens)
            turns.stopped = completion.stopped
            self.chat.add_reply(turns.transcripts[-1], completion.tokens, completion.text)
        return [completion.text for completion in completions]

    def _prompt(self, turns: _Turns, messages: list[dict]) -> None:
        """Make the episode's last transcript end with ``messages`` as tokens: the new user message appended, or,
        when the prompt budget left older turns out (the messages no longer extend it), a new transcript."""
        last = turns.transcripts[-1] if turns.transcripts else None
        if last is not None and messages[:-1] == last.messages and messages[-1]["role"] == "user":
            self.chat.add_user(last, messages[-1]["content"], turns.stopped)
        else:
            turns.transcripts.append(self.chat.start(messages))

    def _rollout(self, ep: Episode) -> Rollout:
        turns: _Turns = ep.context
        sequences = turns.transcripts or [self.chat.start(self.renderer.opening_messages(ep.opening))]
        return Rollout(turns.task, sequences, ep.reward, turns.generated, ep.turns, ep.steps, ep.invalid_actions, ep.done,
                       ep.error if ep.stop == "error" else None, ep.service_spend)
