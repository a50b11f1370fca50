"""The eval: choose tasks, then play their episodes with the client's episode engine, in waves of ``max_concurrency``.

Every episode is played and scored by :mod:`openenv_prime.client.engine.episode` under the same
:class:`~openenv_prime.client.engine.episode_rules.EpisodeRules` as the trainer and the verifiers taskset, so an eval
scores a model by the rule it was trained on. What the eval adds: the tasks (``per_family`` per family, from the
seed), the policy (one batched ``complete`` call per round over every open episode, so an in-process model
generates them together), and the report. Results are stored by task position, so their order never depends on
which episode finished first.

An in-process policy that blocks the event loop for longer than the server's keepalive (about 40 s with
uvicorn's defaults) gets its sockets closed by the server; the engine replays those episodes on new sockets
(``EvalResult.reconnects``). A reply the server refuses as too large (WebSocket close code 1009) fails its
episode instead of the eval, and an episode the step limit cuts off is counted as truncated.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from openenv_prime.client.engine.episode import Episode, play_in_waves
from openenv_prime.client.engine.failures import EnvironmentFailing, ErrorStreak, never_ending
from openenv_prime.client.server_settings import Spelling
from openenv_prime.client.setup import EnvironmentSetup, Prepared
from openenv_prime.client.wire.session_pool import SessionPool
from openenv_prime.evaluation.asking import AskInText, Asking
from openenv_prime.evaluation.calling_thread import CallingThread
from openenv_prime.evaluation.config import EvalConfig
from openenv_prime.evaluation.policy import Policy, as_policy, reply_tokens
from openenv_prime.evaluation.result import EvalResult, TaskResult, scored_result
from openenv_prime.evaluation.selection import choose_tasks, family_sort_key
from openenv_prime.samplers.task import Task


def run_eval(config: EvalConfig, policy: Policy | Callable[[list[list[dict]]], Any], *,
             spelling: Spelling | None = None, asking: Asking | None = None) -> EvalResult:
    """Runs the eval to completion (blocking). ``policy`` is a :class:`Policy`, or a plain function ``prompts ->
    replies`` (an in-process model), which runs on this thread while the eval's sockets run on a thread of their own
    (:mod:`.calling_thread`), as in :meth:`EvalHarness.maybe_run`. Inside a running event loop, ``await
    run_eval_async`` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if isinstance(policy, Policy):
            return asyncio.run(run_eval_async(config, policy, spelling=spelling, asking=asking))
        here = CallingThread()
        return here.run(run_eval_async(config, as_policy(policy, run=here.call), spelling=spelling, asking=asking))
    raise RuntimeError("run_eval() was called inside a running event loop; use `await run_eval_async(config, policy)`")


async def run_eval_async(config: EvalConfig, policy: Policy, *, spelling: Spelling | None = None,
                         shard: tuple[int, int] = (0, 1), asking: Asking | None = None) -> EvalResult:
    """Chooses ``per_family`` tasks per family from the seed, plays them and scores them per family.

    ``spelling`` is how the caller's user sets the `EvalConfig` fields (the MLX trainer's: ``environment.test_split``
    for ``split``...), so errors and notes name the caller's setting; None: `openenv-prime eval`'s flags.
    ``shard=(k, n)`` plays only the chosen tasks ``k::n``, for n processes that share one eval
    (:func:`~openenv_prime.evaluation.result.combine` joins their results). ``asking``: how the policy is asked and
    its answers read (:mod:`~openenv_prime.evaluation.asking`; default: the text protocol)."""
    started = time.perf_counter()
    index, count = shard
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"shard {shard} is not (k, n) with 0 <= k < n")
    names = spelling or config.spelling
    asking = asking if asking is not None else AskInText()
    plan = await asyncio.to_thread(_plan, config, names)
    rules = config.rules()
    pool = SessionPool(config.base_url, timeout=config.timeout)
    episodes = [
        Episode(plan.protocol, rules, {**config.reset_kwargs, **plan.resets[task.index]}, open_session=pool.new_session,
                episode_id=f"eval-s{config.seed}-{task.split}-{task.index}", context=task)
        for task in plan.tasks[index::count]
    ]
    generated: dict[Episode, list[int | None]] = {ep: [] for ep in episodes}  # tokens of each reply, where known

    async def replies(active: list[Episode]) -> list[str | None]:
        prompts = {ep: asking.prompt(plan.protocol, config.system_prompt, ep) for ep in active}
        asked = [ep for ep in active if prompts[ep] is not None]  # None: the episode ends unasked
        answers = await policy.complete([prompts[ep] for ep in asked]) if asked else []
        if not isinstance(answers, list) or len(answers) != len(asked):
            got = len(answers) if isinstance(answers, list) else type(answers).__name__
            raise ValueError(
                f"{type(policy).__name__}.complete() returned {got} replies for {len(asked)} prompts; "
                "it must return one reply text per prompt"
            )
        answered = dict(zip(asked, answers))
        for ep, answer in answered.items():
            generated[ep].append(reply_tokens(answer))
        return [asking.reply(ep, answered[ep]) if ep in answered else None for ep in active]

    stopped = None
    try:
        await play_in_waves(pool, episodes, replies, limit=config.max_concurrency, streak=ErrorStreak())
    except EnvironmentFailing as failing:  # the report keeps the episodes played, errored ones included
        stopped = str(failing)
    finally:
        await pool.close()
        await asyncio.gather(*(ep.session.close() for ep in episodes if ep.session is not None), return_exceptions=True)
    played = [ep for ep in episodes if ep.finished]
    results = [_result(ep, config, asking.transcript(plan.protocol, config.system_prompt, ep), generated[ep])
               for ep in played]
    families = sorted({r.family for r in results}, key=family_sort_key)
    silent = never_ending(played, action_setting=names("action_field"))
    return scored_result(config, results, families, env_name=plan.env_name, split=plan.split,
                         family_field=plan.family_field, choices=plan.choices,
                         reconnects=sum(ep.reconnects for ep in episodes),
                         warnings=[*plan.warnings, *plan.protocol.budget_notes, *([silent] if silent else [])],
                         stopped=stopped,
                         elapsed_s=time.perf_counter() - started)


def _plan(config: EvalConfig, names: Spelling) -> Prepared:
    """The chosen tasks, the reset arguments of each (by index), the protocol, the split and family field played
    (and how each was chosen when the config left it open), and warnings about the server, by the setup path every
    consumer takes (:meth:`EnvironmentSetup.prepare`); ``names``: how the user sets each field, for the messages."""
    with EnvironmentSetup.of(config) as setup:
        return setup.prepare(config.split, config, names,
                             choose=lambda tasks: choose_tasks(tasks, config.per_family, config.seed, config.families))


def _task_key(task: Task, config: EvalConfig) -> str:
    spec = task.spec or {}
    return str(spec.get(config.id_field) or f"{task.split}/{task.index}")


def _result(ep: Episode, config: EvalConfig, messages: list[dict], tokens: list[int | None]) -> TaskResult:
    """``messages``: what the model was asked and replied; ``tokens``: each reply's, where known."""
    task: Task = ep.context
    reward = ep.reward
    return TaskResult(
        key=_task_key(task, config),
        family=task.key,
        split=task.split,
        index=task.index,
        reward=reward,
        success=ep.error is None and reward is not None and reward >= config.success_threshold,
        reply=ep.last_reply,
        steps=ep.steps,
        done=ep.done,
        truncated=ep.stop == "max_steps",
        invalid_actions=ep.invalid_actions,
        turns=ep.turns,
        reply_chars=sum(len(m["content"]) for m in ep.chat if m["role"] == "assistant"),
        stop=ep.stop,
        error=ep.error,
        tokens=sum(tokens) if tokens and None not in tokens else None,
        messages=messages,
        step_rewards=list(ep.step_rewards),
    )
