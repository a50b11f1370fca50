"""The reward function of a TRL run: the environment's rewards, and one sampler update per group.

TRL gives a reward function every completion of a generation batch at once, the ``num_generations`` completions of
one prompt side by side, before any filter can drop a group. So the function sees every scored group and calls
``sampler.update(task, rewards, costs)`` exactly once for each (all-equal groups included), with the generated token
counts as costs (``cost="spend"``: what the environment reported each episode cost it). A group whose episodes the
environment ended without any reward is not reported (there is no evidence in it), as in the MLX trainer.

On several processes each call sees one process's contiguous slice of the generation batch, and a group can be split
between two processes: each process scores its own completions, then the (draw, reward, cost) of every completion
is gathered from all processes (:mod:`.replicas`), and every process applies every group's update in draw order, so
the copies of the sampler stay identical and no group is lost or counted twice. The gather carries each process's
status: where one process's part fails (its sessions, a reset, the environment, the user's ``score``), every process
raises the same :class:`~openenv_prime.trl.replicas.ProcessFailed` there, quoting it. The run's streak of episodes
the environment failed is counted on the gathered batch, so every process stops at the same call when it is full.

In text mode each completion is the reply to the task's one question, played through the episode engine on the
server; in tool mode the episode was played by TRL's tool loop on the environment object, and a text environment
whose model answered without calling the tool has that answer played as its reply.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, Callable, Sequence

from openenv_prime.client.engine import spend
from openenv_prime.client.engine.episode import Episode
from openenv_prime.trl.environment import TaskEnvironment
from openenv_prime.trl.rows import SamplerRows
from openenv_prime.trl.timers import Timers


def completion_text(completion: Any) -> str:
    """The model's last reply in a completion: a plain string, or the last assistant message of a conversation."""
    if isinstance(completion, str):
        return completion
    replies = [m for m in completion if m.get("role") == "assistant"]
    content = replies[-1].get("content") if replies else ""
    if isinstance(content, list):  # content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


class OpenEnvReward:
    """``reward_funcs=[reward]`` for ``GRPOTrainer``. ``score``, if given, is the user's reward function (TRL's
    signature): its rewards are returned and reported to the sampler instead of the environment's."""

    def __init__(self, env: TaskEnvironment, rows: SamplerRows, group_size: int, *, timers: Timers,
                 score: Callable[..., Sequence[float | None]] | None = None):
        self.env = env
        self.rows = rows
        self.group_size = group_size
        self.timers = timers
        self.score = score
        self.__name__ = getattr(score, "__name__", "openenv")  # TRL logs rewards under the function's name
        self.groups = 0

    def __call__(self, prompts: list, completions: list, completion_ids: list | None = None, *,
                 draw: list[int] | None = None, environments: list | None = None, **kwargs: Any) -> list[float | None]:
        if draw is None:
            raise ValueError("the rows have no 'draw' column: pass this OpenEnvTRL's dataset as train_dataset")
        replicas = self.rows.replicas
        try:  # this process's part, played before the exchange so that its timers stay apart from the gather's
            mine, failure = self._score(prompts, completions, completion_ids, draw, environments, kwargs), None
        except Exception as err:  # told to every process by the exchange
            mine, failure = [], err

        def score_mine() -> list[tuple]:
            if failure is not None:
                raise failure
            return mine

        with self.timers.time("rewards"):  # every process's scored completions: the whole generation batch
            parts = replicas.exchange("scoring the generation batch (the environment's episodes and the reward "
                                      "function)", score_mine)
            scored = [item for part in parts for item in part]
        self.env.streak.record(SimpleNamespace(stop=stop, error=error, alike=alike, finished=True)
                               for *_, stop, error, alike in scored)
        with self.timers.time("rewards"):
            groups = self._groups(scored)
        for group in groups:
            with self.timers.time("rewards"):
                row = self.rows.take(group[0][0])
                kept = [(r, c) for _, r, c, *_ in group if r is not None]
            if kept:
                with self.timers.time("sampler"):
                    spend.update(self.rows.sampler, self.rows.task(row["task_index"]), [r for r, _ in kept],
                                 spend.group_costs([c for _, c in kept]), source=self.env.config.cost,
                                 setting="OpenEnvTRLConfig(cost='spend')")
            self.groups += 1
        return [reward for _, reward, *_ in parts[replicas.index]]

    def _score(self, prompts: list, completions: list, completion_ids: list | None, draw: list[int],
               environments: list | None, kwargs: dict[str, Any]) -> list[tuple]:
        """This process's completions played and scored, each (draw, reward, cost) and what the run's error streak
        reads of its episode (stop, error, alike)."""
        if environments is not None:
            episodes = self._tool_episodes(environments, completions)
        else:
            with self.timers.time("rewards"):
                tasks = [self.rows.task(i) for i in kwargs["task_index"]]
            with self.timers.time("env_play"):
                episodes = self.env.play_replies(tasks, [completion_text(c) for c in completions])
        if self.score is not None:
            rewards = list(self.score(prompts=prompts, completions=completions, completion_ids=completion_ids,
                                      draw=draw, environments=environments, **kwargs))
            if len(rewards) != len(completions):
                raise ValueError(f"score= returned {len(rewards)} rewards for {len(completions)} completions; "
                                 "return one reward (or None) per completion")
        else:
            rewards = [ep.reward for ep in episodes]
        if self.env.config.cost == "spend":  # what the environment reported each episode cost it
            costs = [ep.service_spend for ep in episodes]
        else:
            costs = [float(len(ids)) for ids in completion_ids] if completion_ids is not None else [None] * len(draw)
        return [(d, r, c, ep.stop, ep.error, ep.alike) for d, r, c, ep in zip(draw, rewards, costs, episodes)]

    def _groups(self, scored: list[tuple]) -> list[list[tuple]]:
        """The generation batch's scored completions cut into groups; an error unless every group is
        ``group_size`` completions of one draw."""
        g = self.group_size
        if len(scored) % g:
            raise ValueError(f"the reward function got {len(scored)} completions, not a multiple of group_size={g}; "
                             "set GRPOConfig.num_generations to the OpenEnvTRLConfig's group_size")
        groups = [scored[start:start + g] for start in range(0, len(scored), g)]
        for start, group in zip(range(0, len(scored), g), groups):
            draws = sorted({item[0] for item in group})
            if len(draws) != 1:
                raise ValueError(f"completions {start}..{start + g - 1} come from several rows ({draws}): "
                                 "set GRPOConfig.num_generations to group_size and keep shuffle_dataset=False")
        return groups

    def _tool_episodes(self, environments: list, completions: list) -> list[Episode]:
        """The episodes TRL's tool loop played; a text environment's unplayed episode gets the answer as its reply.
        An environment whose reset failed fails this process's part of the batch (every process is told)."""
        failed = [env.failure for env in environments if env.failure is not None]
        if failed:
            raise RuntimeError(f"{len(failed)} of this process's {len(environments)} episodes could not be reset "
                               f"on the server; the first: {failed[0]}")
        unplayed = [(env, c) for env, c in zip(environments, completions)
                    if env.episode.turns == 0 and not env.episode.finished]
        if unplayed and self.env.protocol.free_text:
            with self.timers.time("env_play"):
                self.env.sockets.run(_reply_all([(env.episode, completion_text(c)) for env, c in unplayed]))
        episodes = [env.episode for env in environments]
        with self.timers.time("env_play"):
            self.env.sockets.run(_finish_all(episodes))
        self.env.played(episodes)
        return episodes


async def _reply_all(pairs: list[tuple[Episode, str]]) -> None:
    await asyncio.gather(*(episode.act(reply) for episode, reply in pairs))


async def _finish_all(episodes: list[Episode]) -> None:
    """Stop the episodes still open (the model stopped calling tools) and close their sockets."""
    for episode in episodes:
        if not episode.finished:
            await episode.act(None)
    await asyncio.gather(*(ep.session.close() for ep in episodes if ep.session is not None), return_exceptions=True)
