"""One OpenEnv server as a TRL run sees it: its train tasks, its protocol and rules, and episodes played on it.

Set up once through the client's :class:`~openenv_prime.client.setup.EnvironmentSetup` (the path of the eval, the
verifiers taskset and the MLX trainer: the same split and family rules, the reset check, the action protocol), then
every episode is played by the one episode engine (:mod:`openenv_prime.client.engine.episode`) on sockets kept in a
:class:`~openenv_prime.client.wire.session_pool.SessionPool` on the run's socket thread.
"""

from __future__ import annotations

import itertools
import sys
from typing import Sequence

from openenv_prime.client.engine.episode import Episode, play_in_waves
from openenv_prime.client.engine.failures import ErrorStreak
from openenv_prime.client.prompts.mcp import Tool
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.client.setup import EnvironmentSetup
from openenv_prime.client.wire.session_pool import SessionPool
from openenv_prime.samplers.task import Task
from openenv_prime.trl.config import OpenEnvTRLConfig
from openenv_prime.trl.socket_thread import EventLoopThread


class TaskEnvironment:
    """The server's train tasks and how to play them; ``tasks[i].index`` is the task's index in its split."""

    def __init__(self, config: OpenEnvTRLConfig):
        self.config = config
        with EnvironmentSetup.of(config) as setup:
            found = setup.prepare(config.train_split, config, config.spelling)
        for note in found.notes:
            print(f"note: {note}", file=sys.stderr)
        self.tasks = found.tasks
        self._resets = found.resets
        self.protocol: EpisodeProtocol = found.protocol
        self.env_name = found.env_name
        self.family_field = found.family_field
        self.rules = config.rules()
        self.sockets = EventLoopThread()
        self.pool = SessionPool(config.base_url, timeout=config.timeout)
        self.streak = ErrorStreak()  # episodes the environment failed in a row, judged on every process's episodes
        self.session_limit = config.max_sessions  # this process's share of them (see share_sessions)
        self._ids = itertools.count()

    # ---- episodes -----------------------------------------------------------------------------------
    def episode(self, task: Task) -> Episode:
        """A new episode of ``task`` (not yet reset)."""
        return Episode(self.protocol, self.rules, {**self.config.reset_kwargs, **self._resets[task.index]},
                       open_session=self.pool.new_session, episode_id=f"trl-{task.split}-{task.index}-{next(self._ids)}",
                       context=task)

    def prompts(self, tasks: Sequence[Task]) -> list[list[dict[str, str]]]:
        """The chat each task opens with, as every consumer shows it: the system prompt (the environment's own
        instructions, else our base; then its reply format), then the first observation. Reset on the kept sockets, in waves."""
        episodes = [self.episode(task) for task in tasks]
        self.sockets.run(play_in_waves(self.pool, episodes, _stop_all, limit=self.session_limit))
        return [self.protocol.prompt(self.config.system_prompt, ep.chat, ep.opening) for ep in episodes]

    def tool_prompt(self) -> list[dict[str, str]]:
        """A tool-mode row's prompt (:func:`row_prompt` of the run's system prompt)."""
        return row_prompt(self.config.system_prompt)

    def listed_tools(self) -> tuple[Tool, ...]:
        """An MCP environment's tools, as the first train task's reset lists them: tool mode declares them to TRL
        once, before any rollout (a task's own calls are still checked against the tools its reset lists)."""
        episode = self.episode(self.tasks[0])
        self.sockets.run(play_in_waves(self.pool, [episode], _stop_all, limit=1))
        if episode.opening is None or episode.opening.tools is None:
            raise ValueError(f"{self.env_name!r} listed no tools after resetting task {self.tasks[0].index} of split "
                             f"{self.config.train_split!r} (the episode ended at its reset), so tool mode has no tools "
                             "to declare to TRL; train it in text mode (tool_mode=False)")
        return episode.opening.tools

    def play_replies(self, tasks: Sequence[Task], replies: Sequence[str]) -> list[Episode]:
        """Each task's episode played with one reply (text mode); an episode still open after it is stopped. The
        episodes the environment failed are counted by the caller, on every process's episodes (:attr:`streak`)."""
        episodes = [self.episode(task) for task in tasks]
        given = {id(ep): reply for ep, reply in zip(episodes, replies)}

        async def answer(active: list[Episode]) -> list[str | None]:
            return [given[id(ep)] if ep.turns == 0 else None for ep in active]

        self.sockets.run(play_in_waves(self.pool, episodes, answer, limit=self.session_limit))
        return episodes

    def played(self, episodes: Sequence[Episode]) -> None:
        """After TRL's tool loop: say once when no episode could end."""
        silent = self.streak.never_ending_once(episodes, action_setting="OpenEnvTRLConfig(action_field=...)")
        if silent:
            print(f"warning: {silent}", file=sys.stderr)

    def share_sessions(self, processes: int) -> int:
        """Give this process its share of ``max_sessions``, the sessions the whole run may hold on the server (one
        server serves every process); an error naming both numbers where there is less than one each."""
        limit = self.config.max_sessions
        if limit < processes:
            raise ValueError(f"OpenEnvTRLConfig.max_sessions={limit} is the sessions the whole run may open on the "
                             f"server, fewer than its {processes} processes; set max_sessions to at least {processes} "
                             "(at most what the server admits)")
        self.session_limit = limit // processes
        return self.session_limit

    def close_sessions(self) -> None:
        """Close the kept sockets (before an eval opens its own, and when training ends); new ones open on demand."""
        self.sockets.run(self.pool.close())

    def close(self) -> None:
        if not self.sockets.loop.is_closed():
            self.close_sessions()
            self.sockets.close()


def row_prompt(base: str | None) -> list[dict[str, str]]:
    """A tool-mode row's prompt: the base system prompt (TRL adds the tools) and an empty user message, which
    the first observation fills."""
    return ([{"role": "system", "content": base}] if base else []) + [{"role": "user", "content": ""}]


async def _stop_all(active: list[Episode]) -> list[None]:
    """No reply: each episode stops after its reset, having shown its first observation."""
    return [None] * len(active)
