"""The Task API for any OpenEnv environment class, added from outside: the class's code is never edited.

    from openenv_prime.envs.taskapi import create_app_with_tasks, SeedTasks
    app = create_app_with_tasks(GridWorldEnvironment, "tasks.jsonl")   # or SeedTasks(100), or a callable
    # uvicorn.run(app) -- or openenv_prime.envs.serve.serve_with_tasks(...), or
    # `openenv-prime serve MODULE:CLASS --tasks tasks.jsonl`

The rule: `reset(split=..., index=...)` calls the class's own `reset` with exactly the reset arguments
of that task, and with nothing the class's `reset` would drop. Why: no published OpenEnv environment has
a Task API, and openenv silently drops reset arguments an environment does not take, so an environment
that ignores `split`/`index` plays some other task and every per-task number is wrong without an error.

One module per job: `source` (the Task API answered from a task source, with its errors), `seeds`,
`tasklist` (JSONL file or callable), `resetargs` (the reset signature check), `wrap` (the subclass),
`classes` (MODULE:CLASS and the action/observation classes), `app` (the FastAPI app).
`source`, `seeds`, `tasklist` and `resetargs` do not import `openenv`; the others do.
"""

from openenv_prime.envs.taskapi.seeds import SeedTasks
from openenv_prime.envs.taskapi.source import TaskProvider
from openenv_prime.envs.taskapi.tasklist import JsonlTasks, as_task_provider

__all__ = ["JsonlTasks", "SeedTasks", "TaskProvider", "as_task_provider", "create_app_with_tasks", "with_task_api"]


def __getattr__(name: str):
    """`create_app_with_tasks` and `with_task_api` import openenv: only on first use."""
    if name == "create_app_with_tasks":
        from openenv_prime.envs.taskapi.app import create_app_with_tasks

        return create_app_with_tasks
    if name == "with_task_api":
        from openenv_prime.envs.taskapi.wrap import with_task_api

        return with_task_api
    raise AttributeError(name)
