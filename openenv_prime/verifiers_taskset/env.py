"""The verifiers side of an episode: one `/ws` session per episode, played by the client's episode engine with
verifiers' model call as the source of replies."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import verifiers.v1 as vf

from openenv_prime.client import AsyncTaskAPIClient, EpisodeSession
from openenv_prime.client.engine.episode import Episode, play
from openenv_prime.client.engine.failures import ErrorStreak
from openenv_prime.client.prompts import own_system
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.client.wire.errors import RouteNotSupportedError
from openenv_prime.verifiers_taskset.config import OpenEnvEnvConfig
from openenv_prime.verifiers_taskset.taskset import OpenEnvTask

# how an episode ended -> the trace's stop condition (a driver-stopped episode, verifiers' own stop, keeps verifiers')
STOP_CONDITIONS = {"done": "openenv_done", "max_steps": "openenv_max_steps", "invalid_action": "openenv_invalid_action",
                   "too_large": "openenv_too_large", "error": "openenv_error"}


class OpenEnvEnv(vf.Env[OpenEnvEnvConfig]):
    """Reset with the task's split and index (the trace id as `episode_id`, so the server's state
    names the trace), show the observation, send the reply as the action, step until done, under the
    episode rules every consumer shares (`client/engine/episode_rules.py`).

    The first turn sends the system prompt with the first observation, as every consumer builds it
    (`EpisodeProtocol.prompt`): the environment's own instructions when it brings them, else the taskset's
    `instructions` (or the base made here from the action schema), then the reply format. Tasks carry no system
    prompt of their own, since it is known only once the episode is reset.

    The episode's record goes to `trace.info["openenv"]` (per-step rewards, the episode reward, steps,
    done, invalid actions, step seconds, and the spend the environment reported, `service_spend`, None when it
    reported none), which `OpenEnvTask` scores and the prime-rl adapter's `cost = "spend"` reads."""

    def __init__(self, config: OpenEnvEnvConfig) -> None:
        super().__init__(config)
        self._protocol: EpisodeProtocol | None = None
        self._schema_lock = asyncio.Lock()
        self._sessions: asyncio.Semaphore | None = None
        self._streak = ErrorStreak()  # rollouts the environment failed in a row: enough of them stop the run

    async def start(self) -> None:
        """Fresh asyncio primitives for this `serving()`: they belong to the event loop running it."""
        self._schema_lock = asyncio.Lock()
        limit = self.config.taskset.max_sessions
        self._sessions = asyncio.Semaphore(limit) if limit is not None else None

    async def protocol(self) -> EpisodeProtocol:
        """How replies become actions and observations text, from the server's action schema fetched
        once per process (env-server workers never `load()`)."""
        if self._protocol is None:
            async with self._schema_lock:
                if self._protocol is None:
                    taskset = self.config.taskset
                    async with AsyncTaskAPIClient(
                        taskset.base_url, env_name=taskset.env_name, timeout=taskset.timeout
                    ) as api:
                        schema = await api.action_schema()
                        observed = await api.observation_schema()
                        declarations = await _declared_system(api)
                    self._protocol = EpisodeProtocol(schema, settings=taskset, declared_system=declarations,
                                                     observation_schema=observed)
        return self._protocol

    def base_prompt(self, protocol: EpisodeProtocol) -> str:
        """Our system prompt, sent where the environment brings none: the taskset's `instructions`, else a base that
        says how a free-text reply is sent (the protocol adds the reply format of any other action)."""
        if self.config.taskset.instructions is not None:
            return self.config.taskset.instructions
        if protocol.free_text:
            return ("You act in an environment. Reply with only your answer; it is sent as the action's "
                    f"`{protocol.text_field}` field, so write no explanation around it.")
        return "You act in an environment."

    def _session_slots(self) -> contextlib.AbstractAsyncContextManager:
        """`max_sessions` open sessions per process. Waiting here has no deadline: the episodes
        in flight are already bounded by verifiers' concurrency, and no model time passes yet."""
        return self._sessions if self._sessions is not None else contextlib.nullcontext()

    def _new_session(self) -> EpisodeSession:
        config = self.config.taskset
        return EpisodeSession(config.base_url, timeout=config.timeout, capacity_wait=config.capacity_wait)

    async def run(self, task: OpenEnvTask, agents: vf.Agents) -> None:
        config = self.config.taskset
        protocol = await self.protocol()
        data = task.data
        task_reset = data.reset if data.reset is not None else {"split": data.split, "index": data.index}
        async with self._session_slots():
            session = self._new_session()
            episode: Episode | None = None
            try:
                await session.connect()
                async with agents.player.interaction(task) as interaction:
                    trace = interaction.trace
                    episode = Episode(protocol, config.rules(task.config), {**config.reset_kwargs, **task_reset},
                                      open_session=self._new_session, episode_id=trace.id)

                    async def replies(active: list[Episode]) -> list[str | None]:
                        if episode.turns:  # a later turn: the next user message (the trace keeps the rest)
                            turn = episode.message
                        else:  # the first: the system prompt and the first observation, by the one prompt builder
                            turn = protocol.prompt(self.base_prompt(protocol), episode.chat, episode.opening)
                        segment = await interaction.turn(turn)
                        return [None if segment.terminated else segment.last_reply]

                    try:
                        await episode.start(session)
                        await play([episode], replies)
                    finally:  # recorded inside the interaction: scoring reads it
                        trace.info["openenv"] = _episode_record(episode)
                    if episode.stop in STOP_CONDITIONS:
                        trace.stop(STOP_CONDITIONS[episode.stop])
                    self._streak.record([episode])
            finally:
                await session.close()
                if episode is not None and episode.session is not None:
                    await episode.session.close()


async def _declared_system(api: AsyncTaskAPIClient) -> dict[str, str]:
    """The system texts the server's `/splits` declares (none from a server without `/splits`): as `EnvironmentSetup`
    reads them for the other consumers."""
    try:
        return own_system.declared(await api.splits())
    except RouteNotSupportedError:
        return {}


def _episode_record(episode: Episode) -> dict[str, Any]:
    """What `OpenEnvTask` scores: the scored steps' rewards, the episode's reward (None: left out), and the counts;
    and what the environment reported the episode cost it (the prime-rl adapter's `cost = "spend"`)."""
    return {
        "rewards": [r for r in episode.step_rewards if r is not None],
        "reward": episode.reward,
        "steps": episode.steps,
        "done": episode.done,
        "invalid_actions": episode.invalid_actions,
        "step_seconds": episode.step_seconds,
        "stop": episode.stop,
        "error": episode.error if episode.stop == "error" else None,
        "service_spend": episode.service_spend,
    }
