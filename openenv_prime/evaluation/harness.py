"""In-training evaluation any loop can call: ``harness.maybe_run(step)`` after each optimizer step.

The harness runs :func:`~openenv_prime.evaluation.runner.run_eval` on the steps its :class:`EvalSchedule` names,
against an OpenAI-compatible endpoint (:class:`OpenAIPolicy`) or an in-process policy, and writes one record per
eval: the step, accuracy and task count per family, the sampler's ``episodes`` and ``cost`` counters and the
trainer's own counters. Learning curves can then be drawn against episodes and cost, not only steps
(``openenv-prime plot``). The MLX trainer's evals, the TRL callback and a plain loop all go through it::

    harness = EvalHarness(EvalConfig(base_url=url), EvalSchedule(every=10, last=100), policy=policy, log="evals.jsonl")
    for step in range(1, 101):
        ...                                          # one optimizer step
        harness.maybe_run(step, sampler, tokens=n)   # evaluates at 10, 20, ..., 100; else returns None

A step that already has a record (given in ``done``, e.g. read back from a resumed run's log) is not evaluated again.

A loop on several processes passes ``shards`` (its process index, the process count and a gather across processes):
each process plays its share of the eval's tasks, the shares are gathered with their status (a share that failed
fails the eval on every process, naming it; one that stopped early stops the joined eval, with its reason), and every
process holds the same record, which only process 0 writes to the log. With :meth:`EvalHarness.maybe_run`, the
model calls and the gather run on the calling thread, the trainer's, where its device is set.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from openenv_prime.client.server_settings import Spelling
from openenv_prime.evaluation.asking import Asking
from openenv_prime.evaluation.calling_thread import CallingThread
from openenv_prime.evaluation.config import EvalConfig
from openenv_prime.evaluation.episodes import DEFAULT_EPISODES_PER_FAMILY, episode_rows, write_episodes
from openenv_prime.evaluation.policy import Policy, as_policy
from openenv_prime.evaluation.result import EvalResult, combine
from openenv_prime.evaluation.runner import run_eval_async
from openenv_prime.evaluation.schedule import EvalSchedule

OnResult = Callable[[dict[str, Any], EvalResult], None]
SAMPLER_COUNTERS = ("episodes", "cost")
"""The sampler's counters logged beside every eval: rollouts scored and their summed cost (e.g. generated tokens)."""
_RECORD_KEYS = {"type", "step", "split", "accuracy", "n", "overall", "mean_reward", "eval_episodes", "eval_replies",
                "eval_reply_chars", "elapsed_s", "stopped", *SAMPLER_COUNTERS}


class Shards(Protocol):
    """The processes that share one eval: this one's ``index`` of ``count``, and ``gather(items)``, every process's
    items in process order, on every process (e.g. accelerate's ``gather_object``)."""

    index: int
    count: int

    def gather(self, items: list) -> list: ...


def sampler_counters(sampler: Any) -> dict[str, float]:
    """The sampler's ``episodes`` and ``cost`` (those it reports) from ``metrics()``."""
    try:
        metrics = sampler.metrics(per_key=False)
    except TypeError:  # a sampler whose metrics() takes no arguments
        metrics = sampler.metrics()
    return {name: float(metrics[name]) for name in SAMPLER_COUNTERS if name in metrics}


class _Share:
    """One process's share of a shared eval: its result, or the error that stopped it."""

    def __init__(self, result: EvalResult | None, error: Exception | None = None):
        self.result = result
        self.error = error

    def sent(self) -> tuple[str, Any]:
        """What the other processes are sent: ``("ok", result)`` or ``("error", message)``."""
        if self.error is not None:
            return "error", f"{type(self.error).__name__}: {self.error}"
        return "ok", self.result


class EvalHarness:
    """Evaluates on ``schedule``'s steps; ``records`` holds one dict per eval (also appended to ``log``, a JSONL
    file, when given), and each ``on_result(record, result)`` is called after every eval. ``spelling`` is how
    the caller's user sets the `EvalConfig` fields, for the eval's messages (see ``run_eval_async``). ``shards``:
    the processes that share each eval (None: this one alone). ``episodes``: a JSONL file that every eval appends its
    first ``episodes_per_family`` episodes of each family to (None: all of them), each row with the eval's step
    (:mod:`~openenv_prime.evaluation.episodes`)."""

    def __init__(self, config: EvalConfig, schedule: EvalSchedule, *, policy: Policy | Callable | None = None,
                 log: str | Path | None = None, on_result: OnResult | Sequence[OnResult] = (),
                 done: Iterable[dict[str, Any]] = (), spelling: Spelling | None = None,
                 shards: Shards | None = None, episodes: str | Path | None = None,
                 episodes_per_family: int | None = DEFAULT_EPISODES_PER_FAMILY):
        if not isinstance(config, EvalConfig):
            raise TypeError(f"config must be an EvalConfig, got {type(config).__name__}")
        if not isinstance(schedule, EvalSchedule):
            raise TypeError(f"schedule must be an EvalSchedule, got {type(schedule).__name__}")
        if episodes_per_family is not None and (isinstance(episodes_per_family, bool) or episodes_per_family < 1):
            raise ValueError(f"episodes_per_family must be at least 1 (or None for every episode), got {episodes_per_family!r}")
        self.config = config
        self.schedule = schedule
        self.policy = as_policy(policy) if policy is not None else None
        self.log = Path(log) if log is not None else None
        self.on_result = [on_result] if callable(on_result) else list(on_result)
        self.spelling = spelling
        self.shards = shards
        self.episodes = Path(episodes) if episodes is not None else None
        self.episodes_per_family = episodes_per_family
        self.records: list[dict[str, Any]] = list(done)
        self._told_choices = bool(self.records)

    def due(self, step: int) -> bool:
        """An eval is scheduled at ``step`` and none is recorded for it yet."""
        return self.schedule.due(step) and not any(r["step"] == step for r in self.records)

    def maybe_run(self, step: int, sampler: Any = None, *, policy: Policy | Callable | None = None,
                  shards: Shards | None = None, asking: Asking | None = None, **counters: float) -> dict[str, Any] | None:
        """Evaluate if due (blocking); the record, or None when no eval was due. A policy that is a plain function
        runs on this thread (where a trainer's device is set), and so do the shards' collectives; the eval's sockets
        run on a thread of their own meanwhile (:mod:`.calling_thread`). Inside a running event loop, ``await
        maybe_run_async`` instead."""
        if not self.due(step):
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("maybe_run() was called inside a running event loop; use `await harness.maybe_run_async(...)`")
        chosen, shards = self._chosen(policy, counters), shards if shards is not None else self.shards
        here = CallingThread()
        played = here.run(self._play(as_policy(chosen, run=here.call), shards, asking))
        return self._finish(step, self._joined(played, shards), sampler, counters, shards)

    async def maybe_run_async(self, step: int, sampler: Any = None, *, policy: Policy | Callable | None = None,
                              shards: Shards | None = None, asking: Asking | None = None,
                              **counters: float) -> dict[str, Any] | None:
        """:meth:`maybe_run` on the caller's event loop. ``policy`` and ``shards`` override the harness's for this
        eval (a trainer's model changes between evals); ``asking``: how the policy is asked and its answers read
        (:mod:`.asking`; default: the text protocol); ``counters`` are the trainer's own (tokens, seconds...).
        A policy that is a plain function runs in a worker thread here, and the shards' gather blocks this loop
        once the share is played: a loop with a model bound to its thread (a GPU) calls :meth:`maybe_run`."""
        if not self.due(step):
            return None
        chosen, shards = self._chosen(policy, counters), shards if shards is not None else self.shards
        played = await self._play(as_policy(chosen), shards, asking)
        return self._finish(step, self._joined(played, shards), sampler, counters, shards)

    def _chosen(self, policy: Policy | Callable | None, counters: dict[str, float]) -> Policy | Callable:
        taken = sorted(_RECORD_KEYS & set(counters))
        if taken:
            raise ValueError(f"counters {taken} would overwrite the eval record's own fields; pass them under other names")
        chosen = policy if policy is not None else self.policy
        if chosen is None:
            raise ValueError("no policy to evaluate: pass policy= to EvalHarness or to maybe_run")
        return chosen

    async def _play(self, policy: Policy, shards: Shards | None, asking: Asking | None) -> EvalResult | _Share:
        """The eval, or with ``shards`` this process's share of it, kept with its failure for :meth:`_joined`."""
        if shards is None:
            return await run_eval_async(self.config, policy, spelling=self.spelling, asking=asking)
        try:
            return _Share(await run_eval_async(self.config, policy, spelling=self.spelling,
                                               shard=(shards.index, shards.count), asking=asking))
        except Exception as err:
            return _Share(None, err)

    @staticmethod
    def _joined(played: EvalResult | _Share, shards: Shards | None) -> EvalResult:
        """The eval from every process's share, gathered on the calling thread with each share's status: a share that
        failed fails the eval on every process, naming it (none is left waiting for it)."""
        if shards is None:
            return played
        parts = shards.gather([played.sent()])
        failed = [(i, text) for i, (status, text) in enumerate(parts) if status == "error"]
        if failed:
            told = "; ".join(f"process {i}: {text}" for i, text in failed)
            raise RuntimeError(f"the eval failed on process{'es' if len(failed) > 1 else ''} "
                               f"{', '.join(str(i) for i, _ in failed)} of {shards.count}: {told}") from played.error
        return combine([part for _, part in parts])

    def _finish(self, step: int, result: EvalResult, sampler: Any, counters: dict[str, float],
                shards: Shards | None) -> dict[str, Any]:
        main = shards is None or shards.index == 0
        if not self._told_choices and main:  # how the split and its families were chosen, what the check noticed, once
            for note in [*result.choices, *result.warnings]:
                print(f"eval: {note}", file=sys.stderr)
        self._told_choices = True
        if result.stopped and main:
            print(f"eval: step {step} stopped before playing every task: {result.stopped}", file=sys.stderr)
        record = self._record(step, result, sampler, counters)
        self.records.append(record)
        if self.log is not None and main:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log, "a") as f:
                f.write(json.dumps(record) + "\n")
        if main:
            self._write_episodes(record, result)
        for callback in self.on_result:
            callback(record, result)
        return record

    def _write_episodes(self, record: dict[str, Any], result: EvalResult) -> None:
        """Append the eval's first episodes of each family, with its step, to the episodes file (if one is set)."""
        if self.episodes is not None:
            write_episodes(self.episodes, episode_rows(result, per_family=self.episodes_per_family, step=record["step"]),
                           append=True)

    @staticmethod
    def _record(step: int, result: EvalResult, sampler: Any, counters: dict[str, float]) -> dict[str, Any]:
        return {
            "type": "eval",
            "step": step,
            "split": result.split,
            "accuracy": {f.family: f.accuracy for f in result.families},
            "n": {f.family: f.tasks for f in result.families},
            "overall": result.accuracy,
            "mean_reward": result.mean_reward,
            "eval_episodes": result.episodes,
            "eval_replies": result.replies,
            "eval_reply_chars": result.reply_chars,
            "elapsed_s": round(result.elapsed_s, 3),
            **({"stopped": result.stopped} if result.stopped else {}),
            **(sampler_counters(sampler) if sampler is not None else {}),
            **counters,
        }
