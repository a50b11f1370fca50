"""OpenEnv Task API tasks as verifiers v1 tasks: loaded page by page, keyed `env/split/id`."""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf

from openenv_prime.client import TaskAPIClient
from openenv_prime.client.errors import UnknownSplitError
from openenv_prime.client.render import EpisodeProtocol
from openenv_prime.verifiers_taskset.config import OpenEnvTaskConfig, OpenEnvTasksetConfig
from openenv_prime.verifiers_taskset.keys import check_unique, durable_id, family_of, task_key


class OpenEnvTaskData(vf.TaskData):
    """Everything an episode needs, and nothing about where the server runs: env-server workers
    rebuild tasks from this alone, and hashes must survive a redeployment."""

    env_name: str
    split: str
    index: int
    spec: dict[str, Any]
    family: str | None = None


def aggregate(rewards: list[float], mode: str) -> float:
    """One episode reward from the environment's per-step rewards (0.0 for an episode with none)."""
    if not rewards:
        return 0.0
    if mode == "last":
        return rewards[-1]
    if mode == "max":
        return max(rewards)
    return sum(rewards)


class OpenEnvTask(vf.Task[OpenEnvTaskData, vf.State, OpenEnvTaskConfig]):
    """Scores what the episode loop left in `trace.info["openenv"]`."""

    @property
    def key(self) -> str:
        return task_key(self.data.env_name, self.data.split, self.data.id or f"#{self.data.index}")

    @vf.reward
    async def openenv_return(self, trace: vf.Trace) -> float:
        value = aggregate(_record(trace).get("rewards", []), self.config.reward_mode)
        if self.config.reward_clip is not None:
            low, high = self.config.reward_clip
            value = min(max(value, low), high)
        return value

    @vf.metric
    async def openenv_steps(self, trace: vf.Trace) -> float:
        return float(_record(trace).get("steps", 0))

    @vf.metric
    async def openenv_done(self, trace: vf.Trace) -> float:
        return float(bool(_record(trace).get("done", False)))

    @vf.metric
    async def openenv_invalid_actions(self, trace: vf.Trace) -> float:
        return float(_record(trace).get("invalid_actions", 0))


def _record(trace: vf.Trace) -> dict[str, Any]:
    return trace.info.get("openenv", {})


def default_instructions(action_schema: dict[str, Any] | None, action_field: str | None) -> str:
    """The system prompt when none is configured: what a reply must look like, from the action schema
    (an Enum's allowed values, a JSON object's fields, an MCP environment's tool-call format)."""
    protocol = EpisodeProtocol(action_schema, action_field=action_field)
    if protocol.free_text:
        field = action_field or protocol.text_field
        return (
            f"You act in an environment. Reply with only your answer; it is sent as the action's "
            f"`{field}` field, so write no explanation around it."
        )
    return protocol.instructions("You act in an environment.")


class OpenEnvTaskset(vf.Taskset[OpenEnvTask, OpenEnvTasksetConfig]):
    """Every task of the chosen splits, from the server's Task API."""

    def load(self) -> list[OpenEnvTask]:
        config = self.config
        with TaskAPIClient(
            config.base_url, env_name=config.env_name, timeout=config.http_timeout
        ) as api:
            env_name = api.env_name
            listed = [entry["name"] for entry in api.splits()]
            splits = config.splits if config.splits is not None else listed
            unknown = [split for split in splits if split not in listed]
            if unknown:
                raise UnknownSplitError(
                    f"split(s) {unknown} not served by environment {env_name!r} at "
                    f"{config.base_url}; it lists {listed} (set --env.taskset.splits)"
                )
            instructions = config.instructions or default_instructions(
                api.schema().get("action"), config.action_field
            )
            tasks = [
                self._task(env_name, split, index, spec, instructions)
                for split in splits
                for index, spec in enumerate(
                    api.get_task_range(split, page_size=config.page_size)
                )
            ]
        check_unique(task.key for task in tasks)
        return tasks

    def _task(
        self, env_name: str, split: str, index: int, spec: dict[str, Any], instructions: str
    ) -> OpenEnvTask:
        ident = durable_id(spec, self.config.id_field)
        data = OpenEnvTaskData(
            id=ident,
            name=task_key(env_name, split, ident),
            prompt=None,
            system_prompt=instructions,
            env_name=env_name,
            split=split,
            index=index,
            spec=spec,
            family=family_of(spec, self.config.family_field),
        )
        return OpenEnvTask(data, self.config.task)
