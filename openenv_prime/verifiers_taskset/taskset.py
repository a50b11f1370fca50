"""OpenEnv tasks as verifiers v1 tasks, keyed `env/split/id`: from the server's Task API (page by page),
or from a task list (`tasks = "FILE.jsonl"`) for a server without one."""

from __future__ import annotations

import json
import warnings
from typing import Any

import verifiers.v1 as vf

from openenv_prime.client import TaskSource
from openenv_prime.client.setup import EnvironmentSetup, Prepared
from openenv_prime.client.tasks.splits import TEST_SPLITS
from openenv_prime.client.wire.errors import RouteNotSupportedError
from openenv_prime.samplers.task import Task
from openenv_prime.verifiers_taskset.config import OpenEnvTaskConfig, OpenEnvTasksetConfig
from openenv_prime.verifiers_taskset.generations import TaskDataBase, numbered
from openenv_prime.verifiers_taskset.keys import check_unique, durable_id, id_like_field, task_key


class OpenEnvTaskData(TaskDataBase):
    """Everything an episode needs, and nothing about where the server runs: env-server workers
    rebuild tasks from this alone, and hashes must survive a redeployment."""

    env_name: str
    split: str
    index: int
    spec: dict[str, Any]
    family: str | None = None
    """The task's family (openenv_prime.client.tasks.families' rule; "all" when tasks have none)."""
    reset: dict[str, Any] | None = None
    """The task's reset arguments when they are not `split` and `index` (a task list line's `reset`, or
    `task_spec` for a server whose reset takes it); None resets with `split` and `index`."""
    prompt_budget: int | None = None
    """Characters per prompt (the taskset's `prompt_budget`): the `openenv-prime` harness keeps every request within
    it by the client's rule (`openenv_prime.client.prompts.budget`); None: no budget."""



class OpenEnvTask(vf.Task[OpenEnvTaskData, vf.State, OpenEnvTaskConfig]):
    """Scores what the episode engine left in `trace.info["openenv"]`."""

    @property
    def key(self) -> str:
        return task_key(self.data.env_name, self.data.split, self.data.id or f"#{self.data.index}")

    @vf.reward
    async def openenv_return(self, trace: vf.Trace) -> dict[str, float]:
        """The episode's reward by the rule every consumer shares (`client/engine/rewards.episode_reward`, with this task's
        `reward_mode` and `reward_clip`). An episode the environment ended without scoring any step records no
        reward at all (an empty result), so a sampler leaves it out instead of reading 0.0."""
        reward = _record(trace).get("reward")
        return {} if reward is None else {"openenv_return": reward}

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


class OpenEnvTaskset(vf.Taskset[OpenEnvTask, OpenEnvTasksetConfig]):
    """Every task of the chosen splits, from the server's Task API or from a task list."""

    def load(self) -> list[OpenEnvTask]:
        """Each split through the setup path every consumer takes (`EnvironmentSetup.prepare`): its family field, its
        tasks and their reset arguments; the reset check on the first split with tasks (a split the server lists
        without tasks is skipped; one named in `splits` is an error)."""
        config = self.config
        with EnvironmentSetup.of(config, page_size=config.page_size) as setup:
            source = setup.source
            splits = config.splits if config.splits is not None else _listed_splits(source)
            if config.splits is None:
                splits = [split for split in splits if source.specs(split)]
            found = []
            for split in splits:
                found.append(setup.prepare(split, config, config.spelling, check_reset=config.check_reset and not found))
                for note in found[-1].warnings:
                    warnings.warn(note, stacklevel=2)
            self._warn_without_ids(source, {split: source.specs(split) for split in splits})
            if config.splits is None:
                _warn_every_split(splits)
            tasks = [self._task(source, prepared, task) for prepared in found for task in prepared.tasks]
        check_unique(task.key for task in tasks)
        return numbered(tasks)

    def _warn_without_ids(self, source: TaskSource, loaded: dict[str, list[dict[str, Any]]]) -> None:
        """No silent fallbacks: specs without the id field are keyed by a hash, with a warning (a spec without its
        family field is an error, raised by the family rule)."""
        config = self.config
        specs = [spec for found in loaded.values() for spec in found]
        lacking = sum(spec.get(config.id_field) in (None, "") for spec in specs)
        if lacking:
            found = id_like_field(loaded.values())
            fix = (
                f"set --env.taskset.id-field {found} (id_field = {found!r}): the specs' own {found!r} names each task "
                "of a split once" if found is not None else
                f"set --env.taskset.id-field (id_field) to a field that names each task durably (the specs have "
                f"{sorted(specs[0])})"
            )
            warnings.warn(
                f"{lacking} of {len(specs)} task specs ({source.kind} {source.where}) have no id field "
                f"{config.id_field!r}, so they are keyed by a hash of their content; {fix}",
                stacklevel=3,
            )

    def _task(self, source: TaskSource, prepared: Prepared, task: Task) -> OpenEnvTask:
        spec = dict(task.spec or {})
        ident = durable_id(spec, self.config.id_field)
        data = OpenEnvTaskData(
            id=ident,
            name=task_key(source.env_name, task.split, ident),
            prompt=None,
            system_prompt=None,  # each episode's first turn carries it (the environment's own, else ours: env.py)
            env_name=source.env_name,
            split=task.split,
            index=task.index,
            spec=spec,
            family=task.key,
            reset=_own_reset(prepared.resets[task.index], task.split, task.index),
            prompt_budget=self.config.prompt_budget,
        )
        return OpenEnvTask(data, self.config.task)


def _own_reset(kwargs: dict[str, Any], split: str, index: int) -> dict[str, Any] | None:
    """None when the task resets with its own split and index (kept out of the task data)."""
    return None if kwargs == {"split": split, "index": index} else kwargs


def _warn_every_split(splits: list[str]) -> None:
    """Without `splits` the taskset holds train and held-out tasks together, in the server's order: `vf-eval` then
    plays the first ones (train tasks) and a trainer trains on held-out ones. The taskset cannot tell which use it
    serves, so it keeps every split (a trainer that relied on that keeps it) and says how to choose."""
    held_out = next((split for split in TEST_SPLITS if split in splits), None)
    trained = [split for split in splits if split not in TEST_SPLITS]
    if held_out is None or not trained:
        return
    warnings.warn(
        f"--env.taskset.splits (splits) is not set, so the taskset holds every split the server lists, {splits}, in "
        f"that order: vf-eval plays its first tasks, from {splits[0]!r}, and a training run trains on the held-out "
        f"{held_out!r} tasks too. Name the split: --env.taskset.splits '[\"{held_out}\"]' to evaluate, "
        f"splits = {json.dumps(trained[:1])} to train",
        stacklevel=4,
    )


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
