"""OpenEnv wire client: the Task API over HTTP and episodes over ``/ws``, with httpx and websockets only.

It never imports the ``openenv`` package (openenv >= 0.4.2 cannot be installed beside verifiers 0.4.0);
it speaks the protocol of openenv 0.4.1 - 0.10.0 servers directly.
"""

from openenv_prime.client.errors import (
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
from openenv_prime.client.render import observation_to_text, reply_to_action
from openenv_prime.client.session import EpisodeSession, StepResult
from openenv_prime.client.taskapi import AsyncTaskAPIClient, TaskAPIClient
from openenv_prime.client.tasklist import TaskList, TaskListError, read_task_list
from openenv_prime.client.tasks import TaskAPISource, TaskListSource, TaskSource, load_sampler_tasks, open_task_source
from openenv_prime.client.urls import http_base, ws_endpoint

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
