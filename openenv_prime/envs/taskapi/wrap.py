"""`with_task_api(EnvClass, source)`: the class with the Task API added, its own code untouched.

The result is a subclass, so everything openenv looks at (MCP tools and sessions, `step`, `state`,
concurrency flags, schemas) stays the class's own. It adds the five optional hook methods openenv's
Task API routes call (`list_splits`, `list_tasks`, `num_tasks`, `get_task`, `get_task_range`), answered
by the source, and a `reset` (and `reset_async`, where the class overrides it) taking `split` and
`index`: it calls the class's own reset with exactly that task's reset arguments, so the episode is that
task. Reset arguments the class does not take are refused at start-up (a task's) or per request (a
caller's), never dropped.
"""

from __future__ import annotations

from typing import Any, Optional

from openenv.core.env_server.interfaces import Environment

from openenv_prime.envs.taskapi.resetargs import ResetSignature
from openenv_prime.envs.taskapi.source import TaskProvider
from openenv_prime.envs.taskapi.tasklist import as_task_provider


def with_task_api(env_cls: type, tasks: Any) -> type:
    """A subclass of `env_cls` serving `tasks` (a TaskProvider, a JSONL path or a callable) through the Task API."""
    if not (isinstance(env_cls, type) and issubclass(env_cls, Environment)):
        raise TypeError(f"{env_cls!r} is not an openenv Environment subclass; pass the environment class (MODULE:CLASS)")
    source: TaskProvider = as_task_provider(tasks)
    signature = ResetSignature.of(env_cls, Environment)
    signature.check_source(source)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, split: Optional[str] = None,
              index: Optional[int] = None, **kwargs: Any):
        spec, call = signature.task_call(source, split, index, _given(seed=seed, episode_id=episode_id, **kwargs))
        observation = env_cls.reset(self, **call)
        self.task_api_task = spec
        return observation

    async def reset_async(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
                          split: Optional[str] = None, index: Optional[int] = None, **kwargs: Any):
        spec, call = signature.task_call(source, split, index, _given(seed=seed, episode_id=episode_id, **kwargs))
        observation = await env_cls.reset_async(self, **call)
        self.task_api_task = spec
        return observation

    namespace: dict[str, Any] = {
        "__module__": env_cls.__module__,
        "__qualname__": env_cls.__qualname__,
        "__doc__": f"{env_cls.__qualname__} with the Task API over {source.description}.\n\n{env_cls.__doc__ or ''}",
        "task_source": source,
        "task_api_task": None,
        "reset": reset,
        "list_splits": lambda self: source.list_splits(),
        "list_tasks": lambda self, split: source.list_tasks(split),
        "num_tasks": lambda self, split: source.num_tasks(split),
        "get_task": lambda self, split, index: source.get_task(split, index),
        "get_task_range": lambda self, split, start=None, stop=None: source.get_task_range(split, start, stop),
    }
    if signature.is_async:
        namespace["reset_async"] = reset_async
    return type(env_cls.__name__, (env_cls,), namespace)


def _given(**kwargs: Any) -> dict[str, Any]:
    """The arguments a caller passed: seed and episode_id count only when not None (openenv's defaults)."""
    return {k: v for k, v in kwargs.items() if not (k in ("seed", "episode_id") and v is None)}
