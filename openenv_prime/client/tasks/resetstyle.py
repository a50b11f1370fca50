"""How a Task API server is told which task to play: ``split`` and ``index`` (OpenEnv's Task API), or the task spec
itself for a server whose reset takes ``task_spec``.

The wrappers openenv 0.10.0's ``openenv import`` writes for verifiers and ORS environments take both, but look a task
up by listing its whole split on every ``reset(split=, index=)``: a reset of a 20,000-row verifiers environment took
5 s that way and under 1 ms with ``task_spec`` (docs/openenv.md). The spec is the one the server's own Task API gave,
so the task played is the same. A server takes ``task_spec`` when a reset with a task's spec leaves that spec in the
session's state, as those wrappers keep it; a server that refuses the argument (our servers and ``serve
MODULE:CLASS`` refuse unknown reset arguments), or drops it and plays something else, is reset with split and index.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

from openenv_prime.client.wire.errors import InvalidRequestError, ServerError
from openenv_prime.client.wire.session import EpisodeSession

T = TypeVar("T")
_PROBE_EPISODE_ID = "openenv-prime-reset-style"


async def takes_task_spec(base_url: str, spec: dict[str, Any], *, timeout: float = 30.0) -> bool:
    """Whether the server plays a task from its spec: one reset with ``task_spec=spec`` on a fresh session."""
    async with EpisodeSession(base_url, timeout=timeout) as session:
        try:
            await session.reset(task_spec=spec, episode_id=_PROBE_EPISODE_ID)
            state = await session.state()
        except (InvalidRequestError, ServerError):
            return False
    return isinstance(state, dict) and state.get("task_spec") == spec


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from synchronous code, also where an event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
