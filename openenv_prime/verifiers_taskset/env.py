"""The episode loop: one `/ws` session per episode, the model playing the agent turn by turn."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import verifiers.v1 as vf

from openenv_prime.client import AsyncTaskAPIClient, EpisodeSession
from openenv_prime.client.errors import InvalidRequestError
from openenv_prime.client.render import EpisodeProtocol, Opening
from openenv_prime.verifiers_taskset.config import OpenEnvEnvConfig
from openenv_prime.verifiers_taskset.taskset import OpenEnvTask


class OpenEnvEnv(vf.Env[OpenEnvEnvConfig]):
    """Reset with the task's split and index (the trace id as `episode_id`, so the server's state
    names the trace), show the observation, send the reply as the action, step until done.

    An invalid action is fed back to the model and counted instead of failing the episode; rewards
    arrive per step and are scored by `OpenEnvTask`."""

    def __init__(self, config: OpenEnvEnvConfig) -> None:
        super().__init__(config)
        self._protocol: EpisodeProtocol | None = None
        self._schema_lock = asyncio.Lock()
        self._sessions: asyncio.Semaphore | None = None

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
                        taskset.base_url, env_name=taskset.env_name, timeout=taskset.http_timeout
                    ) as api:
                        schema = (await api.schema()).get("action") or None
                    self._protocol = EpisodeProtocol(schema, settings=taskset)
        return self._protocol

    def _session_slots(self) -> contextlib.AbstractAsyncContextManager:
        """`max_sessions` open sessions per process. Waiting here has no deadline: the episodes
        in flight are already bounded by verifiers' concurrency, and no model time passes yet."""
        return self._sessions if self._sessions is not None else contextlib.nullcontext()

    async def run(self, task: OpenEnvTask, agents: vf.Agents) -> None:
        config = self.config.taskset
        protocol = await self.protocol()
        data = task.data
        async with self._session_slots(), EpisodeSession(
            config.base_url, timeout=config.message_timeout, capacity_wait=config.capacity_wait
        ) as session:
            async with agents.player.interaction(task) as interaction:
                trace = interaction.trace
                record: dict[str, Any] = {
                    "rewards": [], "steps": 0, "done": False, "invalid_actions": 0, "step_seconds": [],
                }
                trace.info["openenv"] = record
                task_reset = data.reset if data.reset is not None else {"split": data.split, "index": data.index}
                opening = await protocol.start(session, **config.reset_kwargs, **task_reset, episode_id=trace.id)
                result = opening.result
                record["done"] = result.done
                message = opening.text
                while True:
                    if result.done:
                        trace.stop("openenv_done")
                        break
                    if record["steps"] >= config.max_steps:
                        trace.stop("openenv_max_steps")
                        break
                    segment = await interaction.turn(message)
                    if segment.terminated:
                        break
                    problem, action = _parse(segment.last_reply, protocol, opening)
                    if action is not None:
                        started = time.perf_counter()
                        try:
                            result = await session.step(action)
                        except InvalidRequestError as error:
                            problem = f"The environment rejected that action: {error.message}"
                        else:
                            record["step_seconds"].append(round(time.perf_counter() - started, 6))
                            record["steps"] += 1
                            record["done"] = result.done
                            if result.reward is not None:
                                record["rewards"].append(float(result.reward))
                            message = protocol.text(result)
                            continue
                    record["invalid_actions"] += 1
                    if record["invalid_actions"] > config.max_invalid_actions:
                        trace.stop("openenv_invalid_action")
                        break
                    message = f"{problem} Try again; reply with only the action."


def _parse(reply: str, protocol: EpisodeProtocol, opening: Opening) -> tuple[str, dict[str, Any] | None]:
    """The action for `reply`, or why there is none (an empty reply sends nothing)."""
    if not reply.strip():
        return "Your reply was empty.", None
    try:
        return "", protocol.action(reply, opening)
    except ValueError as error:
        return f"Your reply is not a valid action: {error}", None
