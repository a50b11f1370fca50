"""Where a consumer gets its tasks: the specs of a split, and the reset arguments that play each task.

Two sources behind one interface, so the eval, the verifiers taskset and the trainer cannot drift apart:

- a server's Task API: specs from ``task_range`` (or its fallbacks), episodes reset with ``split``/``index``, or
  with the spec itself on a server whose reset takes ``task_spec`` (see :mod:`openenv_prime.client.tasks.resetstyle`);
- a task list (``--tasks FILE.jsonl``, see :mod:`openenv_prime.client.tasks.tasklist`) for a server without a
  Task API: specs from the file, episodes reset with each line's ``reset`` arguments. The server's Task API
  is never asked for specs.

Use::

    with open_task_source(base_url, tasks="tasks.jsonl") as source:   # tasks=None: the server's Task API
        tasks = load_sampler_tasks(source, "train")   # families by openenv_prime.client.tasks.families' rule
        kwargs = source.reset_kwargs(tasks[0].split, tasks[0].index)  # {"seed": 3} or {"split": ..., "index": ...}
        await session.reset(**kwargs, episode_id="...")
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from openenv_prime.client.tasks.families import AUTO, NO_FAMILY, FamilyField, choose_family_field, family_key
from openenv_prime.client.tasks.resetstyle import run_sync, takes_task_spec
from openenv_prime.client.tasks.tasklist import TaskList, read_task_list
from openenv_prime.client.wire.errors import OpenEnvError, RouteNotSupportedError, ServerUnreachableError
from openenv_prime.client.wire.taskapi import TaskAPIClient
from openenv_prime.samplers.task import Task

__all__ = ["NO_FAMILY", "TaskAPISource", "TaskListSource", "TaskSource", "family_field_for", "load_sampler_tasks",
           "open_task_source"]


class TaskSource(ABC):
    """The specs of each split and the reset arguments of each task.

    ``kind`` ("task api" or "task list") and ``where`` (the server URL or the file) name it in errors;
    ``env_name`` is the environment's name, for task keys."""

    kind: str
    where: str
    env_name: str

    @abstractmethod
    def splits(self) -> list[str]:
        """The split names, in order."""

    @abstractmethod
    def specs(self, split: str) -> list[dict[str, Any]]:
        """Every spec of ``split``; a task's index is its position in this list."""

    @abstractmethod
    def reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        """The reset arguments that play task ``index`` of ``split`` (add ``episode_id`` and any extras)."""

    def split_entry(self, split: str) -> dict[str, Any] | None:
        """What the source says about ``split`` beyond its name (a Task API's ``/splits`` entry, which may declare
        its ``family_field``); None when it says nothing."""
        return None

    def close(self) -> None:
        """Release what the source holds (the Task API client's connections)."""

    def __enter__(self) -> "TaskSource":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TaskAPISource(TaskSource):
    """The server's Task API: tasks are addressed by ``(split, index)``, which is what reset takes (or by their
    spec, on a server whose reset takes ``task_spec``)."""

    kind = "task api"

    def __init__(self, api: TaskAPIClient, *, page_size: int = 1024, owns_client: bool = False, timeout: float = 30.0):
        self.api = api
        self.page_size = page_size
        self.timeout = timeout
        self.by_spec: bool | None = None
        """Whether episodes reset with ``task_spec``; None until the first ``reset_kwargs`` asks the server."""
        self.where = api.base_url
        self.env_name = api.env_name
        self._owns_client = owns_client
        self._entries: list[dict[str, Any]] | None = None
        self._specs: dict[str, list[dict[str, Any]]] = {}  # asked once per split: consumers read them more than once

    def splits(self) -> list[str]:
        """The server's ``/splits`` names (RouteNotSupportedError when the environment has no list_splits)."""
        if self._entries is None:
            self._entries = self.api.splits()
        return [entry["name"] for entry in self._entries]

    def split_entry(self, split: str) -> dict[str, Any] | None:
        try:
            self.splits()
        except RouteNotSupportedError:
            return None
        return next((entry for entry in self._entries or () if entry["name"] == split), None)

    def specs(self, split: str) -> list[dict[str, Any]]:
        if split not in self._specs:
            self._specs[split] = self.api.get_task_range(split, page_size=self.page_size)
        return self._specs[split]

    def reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        spec = self.specs(split)[index]
        if self.by_spec is None:  # once per source: one reset on a fresh session
            self.by_spec = run_sync(takes_task_spec(self.api.base_url, spec, timeout=self.timeout))
        return {"task_spec": spec} if self.by_spec else {"split": split, "index": index}

    def close(self) -> None:
        if self._owns_client:
            self.api.close()


class TaskListSource(TaskSource):
    """A task list: specs from the file, each task reset with its line's ``reset`` arguments."""

    kind = "task list"

    def __init__(self, task_list: TaskList, env_name: str):
        self.task_list = task_list
        self.where = task_list.source
        self.env_name = env_name

    def splits(self) -> list[str]:
        return self.task_list.splits()

    def specs(self, split: str) -> list[dict[str, Any]]:
        return self.task_list.specs(split)

    def reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        return self.task_list.reset_kwargs(split, index)


def open_task_source(
    base_url: str,
    *,
    tasks: str | os.PathLike[str] | TaskList | None = None,
    env_name: str | None = None,
    timeout: float = 10.0,
    page_size: int = 1024,
) -> TaskSource:
    """A task list's source when ``tasks`` is given, else the Task API of the server at ``base_url``.

    With a task list the server is asked at most for its environment name (``/list_environments``,
    only when ``env_name`` is None); when it cannot say, the file's stem names the environment.
    """
    if tasks is None:
        return TaskAPISource(TaskAPIClient(base_url, env_name=env_name, timeout=timeout), page_size=page_size,
                             owns_client=True, timeout=timeout)
    task_list = tasks if isinstance(tasks, TaskList) else read_task_list(tasks)
    if env_name is None:
        env_name = _served_env_name(base_url, timeout) or Path(task_list.source).stem
    return TaskListSource(task_list, env_name)


def _served_env_name(base_url: str, timeout: float) -> str | None:
    """The single environment the server lists; None when it cannot say (an unreachable server raises)."""
    with TaskAPIClient(base_url, timeout=timeout, retries=1) as api:
        try:
            names = api.list_environments()
        except ServerUnreachableError:
            raise
        except OpenEnvError:
            return None
    return names[0] if len(names) == 1 else None


def family_field_for(source: TaskSource, split: str, family_field: str | None = AUTO) -> FamilyField:
    """The field that names the families of ``split`` (see :mod:`openenv_prime.client.tasks.families`): ``family_field``
    unless it is ``"auto"``, else what the server declares for the split, else ``family`` or ``tier`` when the specs
    have it, else none."""
    return choose_family_field(family_field, source.specs(split), source.split_entry(split))


def load_sampler_tasks(
    source: TaskSource | TaskAPIClient,
    split: str,
    family_field: str | None = AUTO,
    *,
    family_setting: str = "family_field",
    no_family: str = "none",
) -> list[Task]:
    """Every task of ``split``, keyed by its family (a chain_sum tier 3 task has key ``"3"``).

    The family field is :func:`family_field_for`'s (``family_field=None``: one family, ``"all"``). The index is
    the task's position in the split: pass it to ``source.reset_kwargs(split, index)``. ``family_setting`` is how
    the caller's user sets the family field (e.g. ``--family-field``) and ``no_family`` how they say "none", named
    in the error when a spec lacks the field.
    """
    if isinstance(source, TaskAPIClient):
        source = TaskAPISource(source)
    field = family_field_for(source, split, family_field).name
    return [
        Task(split, index, family_key(spec, field, task=f"task {index} of split {split!r} ({source.kind} {source.where})",
                                      setting=family_setting, otherwise=f"{no_family} for no families"), spec)
        for index, spec in enumerate(source.specs(split))
    ]
