"""The eval loop: choose tasks, then run their episodes over `/ws` in waves of ``max_concurrency``.

Each wave gives every task one of ``max_concurrency`` sockets (opened once, reused wave after wave) and plays rounds: every open episode's prompt goes to the policy
in one batch (so an in-process model generates them together), each reply becomes an action and is
stepped. Results are stored by task position, so their order never depends on which episode finished first.

An in-process policy that blocks the event loop for longer than the server's keepalive (about 40 s with
uvicorn's defaults) gets its sockets closed by the server. The episode is then replayed on a new socket:
reset the same task, re-send the accepted actions (checking each observation is the one the model saw),
then send the new action. A task resets deterministically from its reset arguments ((split, index) on a Task API,
a task list line's ``reset``), so this is the same episode; the check before the eval makes sure of it.

A reply the server refuses as too large (WebSocket close code 1009) fails its episode instead of the eval, and an
episode the step limit cuts off is counted as truncated.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from openenv_prime.client import EpisodeSession, StepResult, TaskAPIClient
from openenv_prime.client.errors import (
    CapacityError,
    ConnectionDroppedError,
    InvalidRequestError,
    ServerError,
)
from openenv_prime.client.render import EpisodeProtocol, Opening
from openenv_prime.client.resetcheck import check_reset_plays_tasks_sync
from openenv_prime.client.tasks import load_sampler_tasks, open_task_source
from openenv_prime.evaluation.config import EvalConfig
from openenv_prime.evaluation.policy import Policy
from openenv_prime.evaluation.result import EvalResult, TaskResult, score_families
from openenv_prime.evaluation.selection import choose_tasks, family_sort_key
from openenv_prime.samplers.task import Task


_MESSAGE_TOO_BIG = 1009  # WebSocket close code: the server refused a message as too large


@dataclass
class _Episode:
    task: Task
    session: EpisodeSession
    reset_kwargs: dict[str, Any]  # what plays this task: (split, index) or a task list line's reset
    protocol: EpisodeProtocol
    opening: Opening | None = None  # the reset (and an MCP environment's tool listing)
    messages: list[dict[str, str]] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # observation texts the model saw, for replay checks
    actions: list[dict[str, Any]] = field(default_factory=list)  # accepted actions, for replay
    reward: float = 0.0
    reply: str = ""
    steps: int = 0
    invalid_actions: int = 0
    reconnects: int = 0
    done: bool = False
    finished: bool = False  # done, out of steps or out of invalid-action retries
    error: str | None = None  # why the episode failed without the environment scoring it


def run_eval(config: EvalConfig, policy: Policy) -> EvalResult:
    """Runs the eval to completion (blocking). Inside a running event loop, ``await run_eval_async`` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_eval_async(config, policy))
    raise RuntimeError("run_eval() was called inside a running event loop; use `await run_eval_async(config, policy)`")


async def run_eval_async(config: EvalConfig, policy: Policy) -> EvalResult:
    """Chooses ``per_family`` tasks per family from the seed, plays them and scores them per family."""
    started = time.perf_counter()
    env_name, tasks, reset_kwargs, action_schema, notes = await asyncio.to_thread(_load_tasks, config)
    for note in notes:
        warnings.warn(note, stacklevel=2)
    protocol = EpisodeProtocol(action_schema, settings=config)
    episodes: list[_Episode] = []
    # one socket per slot, reused by the slot's episode in every wave (a reset starts a new episode on it)
    slots = await _open_slots(config, min(config.max_concurrency, len(tasks)))
    wave: list[_Episode] = []
    try:
        for start in range(0, len(tasks), len(slots)):
            wave = [
                _Episode(task, session, reset_kwargs[task.index], protocol)
                for task, session in zip(tasks[start:start + len(slots)], slots)
            ]
            await _play(wave, config, policy)
            slots[:len(wave)] = [ep.session for ep in wave]  # a replayed episode left a new socket in its slot
            episodes.extend(wave)
    finally:
        await asyncio.gather(*(s.close() for s in [*slots, *(ep.session for ep in wave)]), return_exceptions=True)
    results = [_result(ep, config) for ep in episodes]
    families = sorted({r.family for r in results}, key=family_sort_key)
    return EvalResult(
        config=config,
        env_name=env_name,
        results=results,
        families=score_families(results, families),
        accuracy=sum(r.success for r in results) / len(results) if results else 0.0,
        mean_reward=sum(r.reward for r in results) / len(results) if results else 0.0,
        reconnects=sum(ep.reconnects for ep in episodes),
        truncated=sum(r.truncated for r in results),
        warnings=notes,
        elapsed_s=time.perf_counter() - started,
    )


async def _open_slots(config: EvalConfig, wanted: int) -> list[EpisodeSession]:
    """Up to ``wanted`` open sessions: as many as the server admits, when its session limit is lower."""
    slots = [EpisodeSession(config.base_url, timeout=config.timeout, capacity_wait=0) for _ in range(wanted)]
    try:
        await asyncio.gather(*(s.connect() for s in slots))
        # the server refuses a session over its limit with the first answer on the socket, so ask once
        probes = await asyncio.gather(*(s.state() for s in slots), return_exceptions=True)
    except BaseException:
        await asyncio.gather(*(s.close() for s in slots), return_exceptions=True)
        raise
    refused = [p for p in probes if isinstance(p, CapacityError)]
    failed = [p for p in probes if isinstance(p, BaseException) and not isinstance(p, (CapacityError, ServerError))]
    if failed or len(refused) == len(slots):
        await asyncio.gather(*(s.close() for s in slots), return_exceptions=True)
        raise (failed or refused)[0]
    await asyncio.gather(*(s.close() for s, p in zip(slots, probes) if isinstance(p, CapacityError)))
    # ServerError: an environment that cannot report state before a reset; its socket is still usable
    return [s for s, p in zip(slots, probes) if not isinstance(p, CapacityError)]


def _load_tasks(config: EvalConfig) -> tuple[str, list[Task], dict[int, dict[str, Any]], dict[str, Any] | None, list[str]]:
    """The chosen tasks, the reset arguments of each (by index), the action schema, and warnings about the server."""
    with open_task_source(config.base_url, tasks=config.tasks, env_name=config.env_name, timeout=config.timeout) as source:
        if source.kind == "task list" and config.split not in source.splits():
            raise ValueError(f"task list {source.where} has no split {config.split!r}; set --split to one of {source.splits()}")
        all_tasks = load_sampler_tasks(source, config.split, family_field=config.family_field, family_setting="--family-field")
        with TaskAPIClient(config.base_url, env_name=source.env_name, timeout=config.timeout) as api:
            action_schema = api.action_schema()
        if action_schema is None and config.action_field is None:
            raise ValueError(
                f"the server at {config.base_url} publishes no action schema, so the reply's action field is unknown; "
                "set --action-field to the field that takes the reply"
            )
        chosen = choose_tasks(all_tasks, config.per_family, config.seed, config.families)
        if not chosen:
            raise ValueError(f"split {config.split!r} of {source.env_name!r} ({source.kind} {source.where}) has no tasks to evaluate")
        notes = []
        if config.check_reset:
            note = check_reset_plays_tasks_sync(
                config.base_url, source, config.split, len(all_tasks), extra=config.reset_kwargs, timeout=config.timeout
            )
            notes = [note] if note is not None else []
        reset_kwargs = {task.index: source.reset_kwargs(task.split, task.index) for task in chosen}
        return source.env_name, chosen, reset_kwargs, action_schema, notes


def _task_key(task: Task, config: EvalConfig) -> str:
    spec = task.spec or {}
    return str(spec.get(config.id_field) or f"{task.split}/{task.index}")


async def _play(episodes: list[_Episode], config: EvalConfig, policy: Policy) -> None:
    """Plays one wave: resets, then rounds of one batched policy call and one step per open episode."""
    await asyncio.gather(*(_start(ep, config) for ep in episodes))
    while active := [ep for ep in episodes if not ep.finished]:
        replies = await policy.complete([list(ep.messages) for ep in active])
        if not isinstance(replies, list) or len(replies) != len(active):
            got = len(replies) if isinstance(replies, list) else type(replies).__name__
            raise ValueError(
                f"{type(policy).__name__}.complete() returned {got} replies for {len(active)} prompts; "
                "it must return one reply text per prompt"
            )
        await asyncio.gather(*(_act(ep, str(reply), config) for ep, reply in zip(active, replies)))


async def _reset(ep: _Episode, config: EvalConfig) -> Opening:
    try:
        return await _reset_once(ep, config)
    except ConnectionDroppedError:  # a reused socket the server dropped while idle between waves
        await ep.session.close()
        ep.session = EpisodeSession(config.base_url, timeout=config.timeout)
        ep.reconnects += 1
        return await _reset_once(ep, config)


async def _reset_once(ep: _Episode, config: EvalConfig) -> Opening:
    return await ep.protocol.start(
        ep.session, **config.reset_kwargs, **ep.reset_kwargs, episode_id=f"eval-s{config.seed}-{ep.task.split}-{ep.task.index}",
    )


async def _start(ep: _Episode, config: EvalConfig) -> None:
    ep.opening = await _reset(ep, config)
    if config.system_prompt is not None:  # the reply format is added to the prompt given, never to "none"
        ep.messages.append({"role": "system", "content": ep.protocol.instructions(config.system_prompt)})
    _show(ep, ep.opening.text)
    ep.done = ep.finished = ep.opening.result.done


def _show(ep: _Episode, text: str) -> None:
    ep.shown.append(text)
    ep.messages.append({"role": "user", "content": text})


async def _act(ep: _Episode, reply: str, config: EvalConfig) -> None:
    ep.reply = reply
    ep.messages.append({"role": "assistant", "content": reply})
    try:
        action = ep.protocol.action(reply, ep.opening)
        result = await _step(ep, action, config)
    except ConnectionDroppedError as exc:
        if exc.close_code != _MESSAGE_TOO_BIG:
            raise
        ep.error = f"the server refused the action as too large ({len(reply)} characters; WebSocket close code 1009)"
        ep.finished = True  # scored as a failure; the slot's next episode gets a new socket (see _reset)
        return
    except InvalidRequestError as exc:  # the model's fault (unparsable or rejected action): tell it, up to a limit
        ep.invalid_actions += 1
        if ep.invalid_actions > config.max_invalid_actions:
            ep.finished = True
        else:
            ep.messages.append({"role": "user", "content": ep.protocol.feedback(exc)})
        return
    ep.actions.append(action)
    ep.steps += 1
    ep.reward += float(result.reward or 0.0)
    ep.done = result.done
    ep.finished = result.done or ep.steps >= config.max_steps
    if not ep.finished:
        _show(ep, ep.protocol.text(result))


async def _step(ep: _Episode, action: dict[str, Any], config: EvalConfig) -> StepResult:
    try:
        return await ep.session.step(action)
    except ConnectionDroppedError as exc:
        if exc.close_code == _MESSAGE_TOO_BIG:
            raise  # replaying would only send it again
        await _replay(ep, config)
        return await ep.session.step(action)


async def _replay(ep: _Episode, config: EvalConfig) -> None:
    """Rebuilds the episode on a new socket after the server dropped the old one (see the module doc)."""
    await ep.session.close()
    ep.session = EpisodeSession(config.base_url, timeout=config.timeout)
    ep.reconnects += 1
    opening = await _reset_once(ep, config)
    _check_replayed(ep, opening.text, 0, config)
    ep.opening = opening
    for i, action in enumerate(ep.actions):
        result = await ep.session.step(action)
        if i + 1 < len(ep.shown):
            _check_replayed(ep, ep.protocol.text(result), i + 1, config)


def _check_replayed(ep: _Episode, text: str, turn: int, config: EvalConfig) -> None:
    if text != ep.shown[turn]:
        raise ServerError(
            f"task {_task_key(ep.task, config)!r} showed a different observation at turn {turn} when replayed on a new "
            "socket after the server dropped the old one, so the episode cannot be resumed",
            url=ep.session.url,
            hint="keep the policy from blocking the event loop for long (run generation with asyncio.to_thread)",
        )


def _result(ep: _Episode, config: EvalConfig) -> TaskResult:
    return TaskResult(
        key=_task_key(ep.task, config),
        family=ep.task.key,
        split=ep.task.split,
        index=ep.task.index,
        reward=ep.reward,
        success=ep.error is None and ep.reward >= config.success_threshold,
        reply=ep.reply,
        steps=ep.steps,
        done=ep.done,
        truncated=not ep.done and ep.error is None and ep.steps >= config.max_steps,
        invalid_actions=ep.invalid_actions,
        error=ep.error,
    )
