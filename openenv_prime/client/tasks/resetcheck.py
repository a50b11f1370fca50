"""Does the server's reset play the task it is asked for? A check before a run, from what the wire shows.

openenv filters reset arguments against the environment's ``reset()`` signature and drops the rest without
a word, so a server whose reset takes no ``split``/``index`` (or not a task list's ``seed``) plays some other
task every episode, and an eval would report per-family accuracy for tasks the model never saw.

Every episode of a run opens its own socket, and a socket is a freshly constructed environment, so the check
compares fresh sessions, never two resets in one (an environment whose RNG is made in its constructor plays
another game on a second reset in one session, and the same game in every fresh one: that is fine). It resets
task 0 in two fresh sessions and a task with other reset arguments in a third, and compares the observations
and the states (less ``episode_id``, which some environments draw themselves, and ``step_count``); the first
differing field is named with both values.

- An error (:class:`ResetIgnoredError`) only where the wire shows the server plays another task than asked:
  the state or the observation's ``task`` echoing a reset argument with another value; a Task API server
  whose tasks vary or all look alike *and* that plays an index its split does not have (so it reads no
  index); a task list whose reset arguments (none of them a seed) start one task differently.
- A warning for the environment's own non-determinism, which the server cannot fix: task 0 differs between
  fresh sessions although the server refuses an index out of range (so it reads it), or although the task
  list resets with no arguments, or with a ``seed`` (a seed the environment takes and does not use, as
  TextArena's reset does; or one openenv drops); and for tasks that all start alike (a fixed board, a hidden
  target; with different seeds, maybe an ignored seed).

``--no-reset-check`` (``check_reset = false`` in the taskset and the trainer) skips the check; each consumer passes
its own way of saying so (``skip_setting``), which the warnings and errors name. It costs three
resets when all is well, at most two more (and one refused reset) when something looks off.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from openenv_prime.client.tasks.resetstyle import run_sync
from openenv_prime.client.tasks.tasks import TaskSource
from openenv_prime.client.wire.errors import InvalidRequestError, OpenEnvError, ServerError
from openenv_prime.client.wire.session import EpisodeSession

_CHECK_EPISODE_ID = "openenv-prime-reset-check"
_STATE_BOOKKEEPING = {"episode_id", "step_count"}
_OTHER_TASK_SEARCH = 64
_ALIKE_TASKS = 3  # tasks with different reset arguments that must all look alike before "they start alike"
_VALUE_CHARS = 80
_SKIP = "--no-reset-check (check_reset = false in the taskset and the trainer config)"


class ResetIgnoredError(OpenEnvError, ValueError):
    """The server's reset does not play the task it was asked for."""


@dataclass(frozen=True)
class _Start:
    """What one fresh session shows after a reset."""

    index: int
    kwargs: dict[str, Any]
    observation: dict
    state: dict | None

    def task_state(self) -> dict | None:
        return None if self.state is None else {k: v for k, v in self.state.items() if k not in _STATE_BOOKKEEPING}


@dataclass(frozen=True)
class Difference:
    """The first field in which two JSON values differ: its path (``grid[17]``, ``state.raw_state.turn``) and both values."""

    path: str
    first: Any
    second: Any

    def describe(self) -> str:
        return f"`{self.path}` was {_show(self.first, self.second)} then {_show(self.second, self.first)}"


_ABSENT = object()


def first_difference(first: Any, second: Any, path: str = "") -> Difference | None:
    """The first differing field of two JSON values, depth first in key order; None when they are equal."""
    if _same(first, second):
        return None
    if isinstance(first, dict) and isinstance(second, dict):
        for key in sorted(set(first) | set(second), key=str):
            found = first_difference(first.get(key, _ABSENT), second.get(key, _ABSENT), f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    if isinstance(first, list) and isinstance(second, list):
        for i in range(max(len(first), len(second))):
            a = first[i] if i < len(first) else _ABSENT
            b = second[i] if i < len(second) else _ABSENT
            found = first_difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
    return Difference(path or "(the whole value)", first, second)


def _same(first: Any, second: Any) -> bool:
    return first is second or (first is not _ABSENT and second is not _ABSENT and _canonical(first) == _canonical(second))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _show(value: Any, other: Any) -> str:
    """The value, cut to a window around where it first differs from ``other`` when it is a long string."""
    if value is _ABSENT:
        return "absent"
    if isinstance(value, str) and isinstance(other, str) and len(value) > _VALUE_CHARS:
        at = next((i for i, (a, b) in enumerate(zip(value, other)) if a != b), min(len(value), len(other)))
        start = max(0, at - _VALUE_CHARS // 2)
        window = value[start:start + _VALUE_CHARS]
        return json.dumps(("..." if start else "") + window + ("..." if start + _VALUE_CHARS < len(value) else ""))
    text = _canonical(value)
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 3] + "..."


def _without_ids(value: Any) -> Any:
    """``value`` without ``episode_id`` fields at any depth: an environment that names each episode itself (calendar_env's
    reset metadata holds a fresh UUID whatever id it is given) is not random for that."""
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k != "episode_id"}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def _start_difference(first: _Start, second: _Start) -> tuple[str, Difference] | None:
    """("observation" or "state", the first difference), the observation first; None when both agree."""
    seen = first_difference(_without_ids(first.observation), _without_ids(second.observation))
    if seen is not None:
        return "observation", seen
    hidden = first_difference(first.task_state(), second.task_state())
    return ("state", hidden) if hidden is not None else None


async def check_reset_plays_tasks(
    base_url: str, source: TaskSource, split: str, num_tasks: int, *, extra: dict[str, Any] | None = None, timeout: float = 30.0,
    skip_setting: str | None = None,
) -> str | None:
    """Raise :class:`ResetIgnoredError` when the server plays other tasks than asked; return a warning text when
    the environment is non-deterministic or its tasks look alike; None when it does what it is told.
    ``num_tasks`` is the number of tasks in ``split``. Once per run, before it starts. ``skip_setting`` is how the
    caller's user turns the check off (``--no-reset-check``, ``environment.check_reset = false``), named in the texts."""
    if num_tasks < 1:
        return None
    return await _ResetCheck(base_url, source, split, num_tasks, dict(extra or {}), timeout, skip_setting or _SKIP).run()


def check_reset_plays_tasks_sync(base_url: str, source: TaskSource, split: str, num_tasks: int, **kwargs: Any) -> str | None:
    """:func:`check_reset_plays_tasks` from synchronous code, also where an event loop is already running."""
    return run_sync(check_reset_plays_tasks(base_url, source, split, num_tasks, **kwargs))


@dataclass
class _ResetCheck:
    base_url: str
    source: TaskSource
    split: str
    num_tasks: int
    extra: dict[str, Any]
    timeout: float
    skip_setting: str

    async def run(self) -> str | None:
        first = await self._start(0)
        again = await self._start(0)
        varies = _start_difference(first, again)
        if varies is not None:
            return await self._same_task_varies(first, *varies)
        others = self._other_tasks(first.kwargs)
        alike = [first]
        for index in others:
            other = await self._start(index)
            if _start_difference(first, other) is not None:
                return None
            alike.append(other)
        return await self._tasks_alike(alike) if others else None

    # ---- what each session shows ----------------------------------------------------------------
    async def _start(self, index: int) -> _Start:
        """Task ``index`` reset in a fresh session: its observation and state, checked against what they echo."""
        kwargs = self.source.reset_kwargs(self.split, index)
        async with EpisodeSession(self.base_url, timeout=self.timeout) as session:
            result = await session.reset(**self.extra, **kwargs, episode_id=_CHECK_EPISODE_ID)
            state = await _state(session)
        start = _Start(index, kwargs, result.observation, state)
        self._check_echo(start)
        return start

    def _other_tasks(self, first_kwargs: dict[str, Any]) -> list[int]:
        """Up to ``_ALIKE_TASKS - 1`` tasks whose reset arguments differ from task 0's and from each other's."""
        seen = [first_kwargs]
        found = []
        for index in range(1, min(self.num_tasks, _OTHER_TASK_SEARCH)):
            kwargs = self.source.reset_kwargs(self.split, index)
            if kwargs not in seen:
                seen.append(kwargs)
                found.append(index)
                if len(found) == _ALIKE_TASKS - 1:
                    break
        return found

    async def _plays_missing_index(self) -> int | None:
        """For a Task API: the index past the split's end when the server plays it (so its reset reads no index);
        None when it refuses it, as a server that reads the index does."""
        if self.source.kind != "task api":
            return None
        missing = self.num_tasks  # no spec to send: the Task API's own split and index, whatever the source resets with
        try:
            async with EpisodeSession(self.base_url, timeout=self.timeout) as session:
                await session.reset(**self.extra, split=self.split, index=missing, episode_id=_CHECK_EPISODE_ID)
        except (InvalidRequestError, ServerError):
            return None
        return missing

    def _check_echo(self, start: _Start) -> None:
        _check_echo(self.base_url, self.source, start.kwargs, start.observation, start.state)

    # ---- verdicts ---------------------------------------------------------------------------------
    async def _same_task_varies(self, first: _Start, where: str, difference: Difference) -> str:
        seen = (
            f"task 0 of split {self.split!r} (reset with {first.kwargs}) started differently in two fresh sessions: "
            f"its {where} field {difference.describe()}"
        )
        if where == "observation" and self.source.kind == "task api":
            missing = await self._plays_missing_index()
            if missing is not None:
                raise self._ignored(f"{seen}; and it played index {missing}, which split {self.split!r} does not have "
                                    f"({self.num_tasks} tasks), instead of refusing it")
        elif where == "observation" and first.kwargs and "seed" not in first.kwargs:
            raise self._ignored(
                f"{seen}; either the environment's reset does not take {sorted(first.kwargs)} (openenv drops them) or it "
                "is random beyond them",
                also=f"If the environment is random by design for a given task (e.g. it picks a side or a start at random), {self._skip()}",
            )
        cause = f"{self._randomness({**await self._spec_seed(), **first.kwargs})}. {self._consequence()}. {self._skip()}"
        if where == "state":
            return (
                f"{seen}, while the observations agreed. The server at {self.base_url} plays the task it is asked for as far "
                f"as the observation shows; the difference is the environment's own non-determinism, hidden in its state: "
                f"{cause}"
            )
        if self.source.kind == "task api":
            return (
                f"{seen}. The server at {self.base_url} does play the task it is asked for (it refused index "
                f"{self.num_tasks}, past the split's end), so the difference is the environment's own non-determinism: "
                f"{cause}"
            )
        return f"{seen} (server {self.base_url}). This is the environment's own non-determinism: {cause}"

    async def _tasks_alike(self, starts: list[_Start]) -> str:
        indices = ", ".join(str(s.index) for s in starts)
        keys = sorted({k for s in starts for k in s.kwargs if any(s.kwargs.get(k) != o.kwargs.get(k) for o in starts)})
        seen = (
            f"tasks {indices} of split {self.split!r} (reset with {', '.join(str(s.kwargs) for s in starts)}) showed the same "
            f"observation and state in fresh sessions of the server at {self.base_url}"
        )
        missing = await self._plays_missing_index()
        if missing is not None:
            raise self._ignored(f"{seen}, and it played index {missing}, which split {self.split!r} does not have "
                                f"({self.num_tasks} tasks), instead of refusing it")
        if self.source.kind == "task api":
            return (
                f"{seen}. It does play the task it is asked for (it refused index {self.num_tasks}, past the split's end), "
                "so its tasks start alike (a fixed board, a hidden target) or the environment's reset ignores the arguments "
                f"its tasks reset with (e.g. a seed it takes and does not use). If the results are right, {self._skip()}"
            )
        if "seed" in keys:
            return (
                f"{seen}: the environment may ignore its seed (a reset that takes seed and does not use it, or one without "
                "seed, which openenv drops), or its tasks start alike and differ only where the wire does not show "
                f"(a hidden target). {_what_to_do(self.source)}. If the results are right, {self._skip()}"
            )
        return (
            f"{seen}: its reset may ignore {keys}. {_what_to_do(self.source)}. Environments whose tasks all start alike "
            f"(a fixed board or maze) show this too; then the results are right and {self._skip()}"
        )

    async def _spec_seed(self) -> dict[str, Any]:
        """``{"seed": S}`` when task 0's spec on a Task API names its seed (``serve --seeds`` specs do), else {}."""
        api = getattr(self.source, "api", None)
        if self.source.kind != "task api" or api is None:
            return {}
        try:
            spec = await asyncio.to_thread(api.get_task, self.split, 0)
        except (OpenEnvError, ValueError):
            return {}
        return {"seed": spec["seed"]} if isinstance(spec.get("seed"), int) else {}

    def _randomness(self, kwargs: dict[str, Any]) -> str:
        if "seed" in kwargs:
            return (f"its reset was given seed={kwargs['seed']!r} (task 0's) and played two different games, so it takes "
                    "the seed and does not use it (or takes none, and openenv drops it)")
        return ("its reset draws from an RNG the task's reset arguments do not seed (a process-wide one such as numpy's, "
                "one made unseeded in its constructor, or a seed it takes and does not use); an RNG made with a fixed "
                "seed in the constructor would agree here")

    def _skip(self) -> str:
        return f"{self.skip_setting} skips this check"

    def _consequence(self) -> str:
        return ("Each episode of a task is then another game: per-task results average over games, and the docs' "
                "\"same seed, same task\" does not hold for this environment")

    def _ignored(self, evidence: str, *, also: str = "") -> ResetIgnoredError:
        keys = sorted(self.source.reset_kwargs(self.split, 0)) if self.source.kind == "task api" else None
        ignores = f"; its reset ignores {keys} (openenv drops reset arguments the environment's reset() does not take)" if keys else ""
        return ResetIgnoredError(
            f"the server does not play the task it is asked for: {evidence}{ignores}",
            url=self.base_url,
            hint=_what_to_do(self.source) + (f". {also}" if also else ""),
        )


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
                raise ResetIgnoredError(
                    f"the server does not play the task it is asked for: after reset with {key}={value!r} the {where} says "
                    f"{key}={echoed[key]!r}; its reset ignores {sorted(kwargs)} (openenv drops reset arguments the "
                    "environment's reset() does not take)",
                    url=base_url,
                    hint=_what_to_do(source),
                )


def _what_to_do(source: TaskSource) -> str:
    if source.kind == "task list":
        return (
            f"Make the lines' \"reset\" objects in {source.where} hold arguments the environment's reset() takes and "
            "that choose the task (e.g. seed); serving the class with `openenv-prime serve MODULE:CLASS --tasks "
            f"{source.where}` refuses, at start-up, reset arguments its reset() does not take"
        )
    return (
        "Serve the environment class with `openenv-prime serve MODULE:CLASS --tasks tasks.jsonl` (a Task API whose reset "
        "plays each task and refuses indices it does not have), or pass a task list with the reset arguments of each task "
        "(--tasks FILE.jsonl)"
    )
