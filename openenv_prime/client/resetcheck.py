"""Does the server's reset play the task it is asked for? A check before a run, from what the wire shows.

openenv filters reset arguments against the environment's ``reset()`` signature and drops the rest without
a word, so a server whose reset takes no ``split``/``index`` (or not a task list's ``seed``) plays some other
task every episode, and an eval would report per-family accuracy for tasks the model never saw.

The check resets one task twice and a second task once, on one socket, and looks at what comes back:

- the state or the observation's ``task`` echoing a reset argument with another value, or the same task
  showing two different observations: the server does not play the task asked for (an error);
- two different tasks showing the same observation and state: it may ignore the arguments (a warning,
  since some environments start different tasks from the same observation).
"""

from __future__ import annotations

import json
from typing import Any

from openenv_prime.client.errors import OpenEnvError, ServerError
from openenv_prime.client.resetstyle import run_sync
from openenv_prime.client.session import EpisodeSession
from openenv_prime.client.tasks import TaskSource

_EPISODE_ID = "openenv-prime-reset-check"
_STATE_BOOKKEEPING = {"episode_id", "step_count"}
_SECOND_TASK_SEARCH = 64


class ResetIgnoredError(OpenEnvError, ValueError):
    """The server's reset does not play the task it was asked for."""


async def check_reset_plays_tasks(
    base_url: str, source: TaskSource, split: str, num_tasks: int, *, extra: dict[str, Any] | None = None, timeout: float = 30.0
) -> str | None:
    """Raise :class:`ResetIgnoredError` when the server plays other tasks than asked; return a warning text when it
    may; None when it does what it is told. Three resets on one socket, once per run."""
    if num_tasks < 1:
        return None
    extra = dict(extra or {})
    first_kwargs = source.reset_kwargs(split, 0)
    second = next((i for i in range(1, min(num_tasks, _SECOND_TASK_SEARCH)) if source.reset_kwargs(split, i) != first_kwargs), None)
    async with EpisodeSession(base_url, timeout=timeout) as session:
        first = await session.reset(**extra, **first_kwargs, episode_id=_EPISODE_ID)
        first_state = await _state(session)
        _check_echo(base_url, source, first_kwargs, first.observation, first_state)
        again = await session.reset(**extra, **first_kwargs, episode_id=_EPISODE_ID)
        if _canonical(again.observation) != _canonical(first.observation):
            raise _ignored(
                base_url, source, first_kwargs,
                f"two resets with the same arguments {first_kwargs} showed different observations "
                f"({_short(first.observation)} then {_short(again.observation)})",
                varies=True,
            )
        if second is None:
            return None
        second_kwargs = source.reset_kwargs(split, second)
        other = await session.reset(**extra, **second_kwargs, episode_id=_EPISODE_ID)
        other_state = await _state(session)
        _check_echo(base_url, source, second_kwargs, other.observation, other_state)
    if _canonical(other.observation) == _canonical(first.observation) and _task_part(other_state) == _task_part(first_state):
        return (
            f"the server at {base_url} showed the same observation and state for tasks 0 and {second} of split {split!r} "
            f"(reset with {first_kwargs} and {second_kwargs}): its reset may ignore {sorted(set(first_kwargs) | set(second_kwargs))}. "
            + _what_to_do(source)
            + ". Environments whose tasks all start alike (a fixed board or maze) show this too, also when served with "
            "`openenv-prime serve MODULE:CLASS`; then the results are right and --no-reset-check (check_reset = false) "
            "silences it"
        )
    return None


def check_reset_plays_tasks_sync(base_url: str, source: TaskSource, split: str, num_tasks: int, **kwargs: Any) -> str | None:
    """:func:`check_reset_plays_tasks` from synchronous code, also where an event loop is already running."""
    return run_sync(check_reset_plays_tasks(base_url, source, split, num_tasks, **kwargs))


async def _state(session: EpisodeSession) -> dict[str, Any] | None:
    try:
        return await session.state()
    except ServerError:  # an environment that cannot report its state
        return None


def _check_echo(base_url: str, source: TaskSource, kwargs: dict[str, Any], observation: dict, state: dict | None) -> None:
    """The state and the observation's ``task`` object must agree with the reset arguments they echo."""
    echoes = [("state", state or {}), ("observation's task", observation.get("task") if isinstance(observation.get("task"), dict) else {})]
    for where, echoed in echoes:
        for key, value in kwargs.items():
            if key in echoed and echoed[key] != value:
                raise _ignored(base_url, source, kwargs, f"after reset with {key}={value!r} the {where} says {key}={echoed[key]!r}")


def _task_part(state: dict | None) -> dict | None:
    return None if state is None else {k: v for k, v in state.items() if k not in _STATE_BOOKKEEPING}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _short(value: Any) -> str:
    text = _canonical(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _ignored(base_url: str, source: TaskSource, kwargs: dict[str, Any], evidence: str, varies: bool = False) -> ResetIgnoredError:
    hint = _what_to_do(source)
    if varies:
        hint += (". If this environment's first observation changes by design for the same task, turn the check off "
                 "(--no-reset-check for openenv-prime eval, check_reset = false for the taskset)")
    return ResetIgnoredError(
        f"the server does not play the task it is asked for: {evidence}; its reset ignores {sorted(kwargs)} "
        "(openenv drops reset arguments the environment's reset() does not take)",
        url=base_url,
        hint=hint,
    )


def _what_to_do(source: TaskSource) -> str:
    if source.kind == "task list":
        return (
            f"Make the lines' \"reset\" objects in {source.where} hold arguments the environment's reset() takes and "
            "that choose the task (e.g. seed)"
        )
    return (
        "Serve the environment with `openenv-prime serve MODULE:CLASS --tasks tasks.jsonl` (a Task API whose reset "
        "plays each task), or pass a task list with the reset arguments of each task (--tasks FILE.jsonl)"
    )
