"""Everything that talks to an OpenEnv server, with httpx, websockets, pydantic and jsonschema only, in four rooms:

- ``wire/``: the Task API over HTTP and episodes over ``/ws`` (it imports nothing from the other three);
- ``tasks/``: where tasks come from (the Task API or a task list) and the checks before a run;
- ``prompts/``: observations become prompt text, replies become actions;
- ``engine/``: the one episode engine, its rules and its reward.

``setup.py`` sits here, above the rooms: it is the one setup path every consumer takes before its first episode and
joins a task source (``tasks/``) with the action schema and the protocol built from it (``prompts/``). The engine
needs no task source, so it stays free of where tasks come from.

It never imports the ``openenv`` package (openenv >= 0.4.2 cannot be installed beside verifiers 0.4.0);
it speaks the protocol of openenv 0.4.1 - 0.10.0 servers directly.
"""

from openenv_prime.client.prompts.render import observation_to_text, reply_to_action
from openenv_prime.client.tasks.tasklist import TaskList, TaskListError, read_task_list
from openenv_prime.client.tasks.tasks import TaskAPISource, TaskListSource, TaskSource, load_sampler_tasks, open_task_source
from openenv_prime.client.wire.errors import (
    CapacityError,
    ConnectionDroppedError,
    InvalidRequestError,
    OpenEnvError,
    OpenEnvTimeoutError,
    RouteNotSupportedError,
    ServerError,
    ServerUnreachableError,
    TaskIndexError,
    UnknownEnvironmentError,
    UnknownSplitError,
)
from openenv_prime.client.wire.session import EpisodeSession, StepResult
from openenv_prime.client.wire.taskapi import AsyncTaskAPIClient, TaskAPIClient
from openenv_prime.client.wire.urls import http_base, ws_endpoint

__all__ = [
    "AsyncTaskAPIClient",
    "CapacityError",
    "ConnectionDroppedError",
    "EpisodeSession",
    "InvalidRequestError",
    "OpenEnvError",
    "OpenEnvTimeoutError",
    "RouteNotSupportedError",
    "ServerError",
    "ServerUnreachableError",
    "StepResult",
    "TaskAPIClient",
    "TaskAPISource",
    "TaskIndexError",
    "TaskList",
    "TaskListError",
    "TaskListSource",
    "TaskSource",
    "UnknownEnvironmentError",
    "UnknownSplitError",
    "http_base",
    "load_sampler_tasks",
    "open_task_source",
    "observation_to_text",
    "read_task_list",
    "reply_to_action",
    "ws_endpoint",
]
