"""OpenEnv tasks as verifiers v1 tasks, keyed `env/split/id`: from the server's Task API (page by page),
or from a task list (`tasks = "FILE.jsonl"`) for a server without one."""

from __future__ import annotations

import warnings
from typing import Any

import verifiers.v1 as vf

from openenv_prime.client import TaskAPIClient, TaskSource, open_task_source
from openenv_prime.client.errors import RouteNotSupportedError
from openenv_prime.client.render import EpisodeProtocol
from openenv_prime.client.rewards import aggregate, clipped
from openenv_prime.client.resetcheck import check_reset_plays_tasks_sync
from openenv_prime.verifiers_taskset.config import OpenEnvTaskConfig, OpenEnvTasksetConfig
from openenv_prime.verifiers_taskset.generations import TaskDataBase, numbered
from openenv_prime.verifiers_taskset.keys import check_unique, durable_id, family_of, task_key


class OpenEnvTaskData(TaskDataBase):
    """Everything an episode needs, and nothing about where the server runs: env-server workers
    rebuild tasks from this alone, and hashes must survive a redeployment."""

    env_name: str
    split: str
    index: int
    spec: dict[str, Any]
    family: str | None = None
    reset: dict[str, Any] | None = None
    """A task list task's reset arguments; None resets with `split` and `index` (the Task API)."""



class OpenEnvTask(vf.Task[OpenEnvTaskData, vf.State, OpenEnvTaskConfig]):
    """Scores what the episode loop left in `trace.info["openenv"]`."""

    @property
    def key(self) -> str:
        return task_key(self.data.env_name, self.data.split, self.data.id or f"#{self.data.index}")

    @vf.reward
    async def openenv_return(self, trace: vf.Trace) -> float:
        return clipped(aggregate(_record(trace).get("rewards", []), self.config.reward_mode), self.config.reward_clip)

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
    """Every task of the chosen splits, from the server's Task API or from a task list."""

    def load(self) -> list[OpenEnvTask]:
        config = self.config
        with open_task_source(
            config.base_url, tasks=config.tasks, env_name=config.env_name, timeout=config.http_timeout,
            page_size=config.page_size,
        ) as source:
            splits = config.splits if config.splits is not None else _listed_splits(source)
            with TaskAPIClient(config.base_url, env_name=source.env_name, timeout=config.http_timeout) as api:
                instructions = config.instructions or default_instructions(api.action_schema(), config.action_field)
            loaded = {split: source.specs(split) for split in splits}
            tasks = [
                self._task(source, split, index, spec, instructions)
                for split in splits
                for index, spec in enumerate(loaded[split])
            ]
            self._check_fields(source, loaded)
            if config.check_reset:
                split = next((split for split in splits if loaded[split]), None)
                if split is not None:
                    note = check_reset_plays_tasks_sync(
                        config.base_url, source, split, len(loaded[split]), extra=config.reset_kwargs,
                        timeout=config.message_timeout,
                    )
                    if note is not None:
                        warnings.warn(note, stacklevel=2)
        check_unique(task.key for task in tasks)
        return numbered(tasks)

    def _check_fields(self, source: TaskSource, loaded: dict[str, list[dict[str, Any]]]) -> None:
        """No silent fallbacks: a spec without the family field is an error, one without the id field a warning."""
        config = self.config
        specs = [(split, index, spec) for split, found in loaded.items() for index, spec in enumerate(found)]
        if config.family_field is not None:
            missing = next(((s, i, spec) for s, i, spec in specs if spec.get(config.family_field) is None), None)
            if missing is not None:
                split, index, spec = missing
                raise ValueError(
                    f"task {index} of split {split!r} ({source.kind} {source.where}) has no family field "
                    f"{config.family_field!r}; its fields are {sorted(spec)}: set --env.taskset.family-field "
                    "(family_field) to one of them, or to null for no families"
                )
        lacking = sum(spec.get(config.id_field) in (None, "") for _, _, spec in specs)
        if lacking:
            fields = sorted({key for _, _, spec in specs[:1] for key in spec})
            warnings.warn(
                f"{lacking} of {len(specs)} task specs ({source.kind} {source.where}) have no id field "
                f"{config.id_field!r}, so they are keyed by a hash of their content; set --env.taskset.id-field "
                f"(id_field) to a field that names each task durably (the specs have {fields})",
                stacklevel=3,
            )

    def _task(self, source: TaskSource, split: str, index: int, spec: dict[str, Any], instructions: str) -> OpenEnvTask:
        ident = durable_id(spec, self.config.id_field)
        data = OpenEnvTaskData(
            id=ident,
            name=task_key(source.env_name, split, ident),
            prompt=None,
            system_prompt=instructions,
            env_name=source.env_name,
            split=split,
            index=index,
            spec=spec,
            family=family_of(spec, self.config.family_field),
            reset=source.reset_kwargs(split, index) if source.kind == "task list" else None,
        )
        return OpenEnvTask(data, self.config.task)


def _listed_splits(source: TaskSource) -> list[str]:
    try:
        return source.splits()
    except RouteNotSupportedError as exc:
        raise RouteNotSupportedError(
            "the server does not list its splits (its environment has no list_splits)",
            url=exc.url,
            env_name=exc.env_name,
            hint="name the splits to load with --env.taskset.splits '[\"test\"]' (splits = [...] in TOML)",
        ) from None
