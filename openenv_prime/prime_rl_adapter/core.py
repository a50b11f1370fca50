"""The adapter's whole behaviour, without prime-rl: an openenv_prime sampler driven through
prime-rl's `TaskSampler` contract (`__next__`, `observe`, `state_dict`, `load_state_dict`,
`metrics`). `sampler.py` only adds prime-rl's base class, so this runs and tests without it.

The orchestrator calls `__next__` once per group and `observe` once the group is finalized,
possibly much later, out of order, or never (stale drops): nothing here waits for feedback. The
sampler is advisory, so no group can stop the run: a group it cannot use (empty, of an unknown
task, without a finite reward) is counted in the `adapter/*` metrics, its reason logged once, and
skipped; from a partly bad group the valid rewards are used."""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from openenv_prime.client.engine import spend
from openenv_prime.prime_rl_adapter.config import KWARGS_PATH, AdapterConfig, parse_kwargs
from openenv_prime.prime_rl_adapter.families import sampler_tasks
from openenv_prime.prime_rl_adapter.groups import read_group
from openenv_prime.prime_rl_adapter.pending import PendingGroups
from openenv_prime.prime_rl_adapter.resume import ADAPTER_STATE_VERSION, plan_resume
from openenv_prime.prime_rl_adapter.workers import worker_index, worker_seed
from openenv_prime.samplers import CostsMismatchError, flat_key_metrics, most_drawn
from openenv_prime.samplers.sparse import STORED_KEYS, compact

COUNTERS = (
    "sampled",
    "observed_groups",
    "updates",
    "errored_groups",
    "empty_groups",
    "unscored_groups",
    "errored_rollouts",
    "lost_tokens",
    "unknown_task_groups",
    "nonfinite_rewards",
    "missing_rewards",
    "unsampled_traces",
    "group_size_mismatches",
    "rejected_groups",
    "resumes",
    "resume_new_families",
    "resume_dropped_families",
    "resume_dropped_queue",
)

_LOG = logging.getLogger("openenv_prime.prime_rl_adapter")


def build_inner(config: AdapterConfig, tasks: list[Any], *, worker: int = 0) -> Any:
    """The openenv_prime sampler named in the kwargs, over the family-keyed task references;
    worker i > 0 gets its own seed (see `workers.py`)."""
    from openenv_prime.samplers import SAMPLERS, make_sampler

    kwargs = dict(config.sampler_kwargs)
    cls = SAMPLERS.get(config.sampler)
    if worker and cls is not None and "seed" in inspect.signature(cls).parameters:
        kwargs["seed"] = worker_seed(kwargs.get("seed", 0), worker)
    try:
        return make_sampler(config.sampler, tasks, **kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{KWARGS_PATH}.sampler = {config.sampler!r} with sampler_kwargs "
            f"{config.sampler_kwargs!r} cannot be built: {exc}"
        ) from exc


def flat_numbers(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Nested metrics as `a/b` keys, numbers only: prime-rl casts every value with float()."""
    flat: dict[str, float] = {}
    for name, value in metrics.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            flat |= flat_numbers(value, f"{key}/")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[key] = float(value)
    return flat


class SamplerCore:
    """Serve the taskset's own `vf.Task` objects in the order an openenv_prime sampler picks
    families, and report each finalized group back to it as `update(family, rewards, costs)`."""

    def __init__(self, tasks: Sequence[Any] | Iterator[Any], **kwargs: Any) -> None:
        if not isinstance(tasks, Sequence):
            raise ValueError(
                "openenv_prime samplers need a finite taskset (a list of tasks); this taskset "
                "is an iterator. Use a finite taskset or the standard sampler."
            )
        if not tasks:
            raise ValueError("openenv_prime samplers need at least one task; the taskset is empty")
        self.config = parse_kwargs(kwargs)
        self.worker = worker_index(self.config.worker_index)
        self.tasks = tuple(tasks)
        self.references = sampler_tasks(self.tasks, self.config.family_field)
        self.family_at = [ref.key for ref in self.references]
        self.family_by_key = {task.key: family for task, family in zip(self.tasks, self.family_at)}
        self.position_by_key = {task.key: position for position, task in enumerate(self.tasks)}
        self.inner = build_inner(self.config, self.references, worker=self.worker)
        self.families: tuple[str, ...] = tuple(self.inner.pool.keys)
        self.slot_of_position = [self.inner.pool.key_index[family] for family in self.family_at]
        self.family_draws = [0] * len(self.families)
        self.queue: deque[int] = deque()
        self.pending = PendingGroups(self.config.pending_horizon)
        self.counts: dict[str, float] = dict.fromkeys(COUNTERS, 0)
        self.warned: set[str] = set()
        self.warn: Callable[[str], None] = _LOG.warning

    def __iter__(self) -> SamplerCore:
        return self

    def __next__(self) -> Any:
        """The next task: the very object the taskset holds (prime-rl checks its key and hash)."""
        if not self.queue:
            self.queue.extend(ref.index for ref in self.inner.sample(self.config.refill))
        position = self.queue.popleft()
        task = self.tasks[position]
        self.pending.drawn(task.key)
        self.family_draws[self.slot_of_position[position]] += 1
        self.counts["sampled"] += 1
        return task

    # -- observe ----------------------------------------------------------------------------
    def observe(self, group: list[Any]) -> None:
        """Update the sampler with one group. Never raises: what it cannot use is counted and skipped."""
        if not group:
            self._skip("empty_groups", "empty", "an empty group (no episodes) was skipped")
            return
        key = getattr(getattr(group[0], "task", None), "key", None)
        position = self.position_by_key.get(key)
        if position is None:
            self._skip(
                "unknown_task_groups", "unknown-task",
                f"a group of task {key!r}, which is not in this sampler's taskset ({len(self.tasks)} "
                f"tasks), was skipped; each training source needs its own sampler",
            )
            return
        self.pending.observed(key)
        self.counts["observed_groups"] += 1
        self._check_group_size(len(group))
        try:
            report = read_group(group, success_threshold=self.config.success_threshold, cost=self.config.cost)
        except Exception as exc:  # a malformed episode must not stop the orchestrator
            self._skip("rejected_groups", "unreadable", f"a group of task {key!r} could not be read and was skipped: {exc!r}")
            return
        self.counts["errored_rollouts"] += report.errored_rollouts
        self.counts["unsampled_traces"] += report.unsampled_traces
        if report.nonfinite_rewards:
            self._skip("nonfinite_rewards", "non-finite",
                       f"a NaN or infinite reward (task {key!r}) was left out; check the reward function",
                       report.nonfinite_rewards)
        if report.missing_rewards:
            self._skip("missing_rewards", "missing",
                       f"a trace without any reward (task {key!r}) was left out instead of read as 0",
                       report.missing_rewards)
        if not report.rewards:  # nothing to learn from: every rollout errored, or no reward was usable
            self.counts["errored_groups" if report.errored_rollouts else "unscored_groups"] += 1
            self.counts["lost_tokens"] += report.lost_cost
            return
        family = self.family_at[position]
        try:  # the task itself, so that a sampler keeping evidence per task knows which it was
            spend.update(self.inner, self.references[position], report.rewards, report.costs,
                         source="spend" if self.config.cost == "spend" else "tokens",
                         setting=f'{KWARGS_PATH}.cost = "spend"')
        except CostsMismatchError as exc:  # its own reason: logged even after another rejection
            self._skip("rejected_groups", "costs", f"the sampler rejected a group of family {family!r}: {exc}")
            return
        except (TypeError, ValueError) as exc:
            self._skip("rejected_groups", "rejected", f"the sampler rejected a group of family {family!r}: {exc}")
            return
        self.counts["updates"] += 1

    def _check_group_size(self, episodes: int) -> None:
        expected = getattr(self.inner, "group_size", None)
        if expected is None or episodes == expected:
            return
        self.counts["group_size_mismatches"] += 1
        first = self.counts["observed_groups"] == 1
        self._warn_once(
            "group-size",
            f"{'the first group' if first else 'a group'} has {episodes} episodes but "
            f"{KWARGS_PATH}.sampler_kwargs.group_size = {expected}: if every group has "
            f"{episodes}, set the curriculum's group_size to the source's group_size (its signal "
            f"estimates assume groups of {expected}); `openenv-prime prime-rl validate CONFIG` "
            f"checks this offline. Groups cut short by prime-rl's overload handling also count "
            f"here (adapter/group_size_mismatches).",
        )

    def _skip(self, counter: str, reason: str, message: str, amount: int = 1) -> None:
        """Count what could not be used, and say why the first time it happens."""
        self.counts[counter] += amount
        self._warn_once(reason, message)

    def _warn_once(self, reason: str, message: str) -> None:
        if reason in self.warned:
            return
        self.warned.add(reason)
        self.warn(f"openenv_prime sampler: {message} (logged once; counted in the adapter/* metrics)")

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plain data (pickle- and JSON-safe): the inner sampler, undelivered draws, counters.

        Sparse: only families that hold something are stored (`samplers.sparse`: the inner state's
        `stored_keys`, with their names and delivered draws), so a family per task costs nothing until
        it is drawn."""
        drawn = [slot for slot, draws in enumerate(self.family_draws) if draws]
        inner = compact(self.inner.state_dict(), also=drawn)
        stored = inner[STORED_KEYS]
        return {
            "version": ADAPTER_STATE_VERSION,
            "family_field": self.config.family_field,
            "num_tasks": len(self.tasks),
            "num_families": len(self.families),
            "families": [self.families[slot] for slot in stored],
            "family_draws": [self.family_draws[slot] for slot in stored],
            "inner": inner,
            "queue": [self.tasks[position].key for position in self.queue],
            "counts": dict(self.counts),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a checkpoint, carrying per-family statistics over a changed pool or settings
        (see `resume.py`). Checked whole first: a rejected checkpoint changes nothing. Groups in
        flight at save time never report back after a resume, so nothing is pending after it."""
        fresh = build_inner(self.config, self.references, worker=self.worker)
        plan = plan_resume(
            state_dict,
            template=fresh.state_dict(),
            families=self.families,
            task_keys=[task.key for task in self.tasks],
            counters=COUNTERS,
        )
        fresh.load_state_dict(plan.inner)
        self.inner = fresh
        self.queue = deque(self.position_by_key[key] for key in plan.queue)
        self.family_draws = plan.family_draws
        self.counts = plan.counts
        self.counts["resumes"] += 1
        self.counts["resume_new_families"] += len(plan.new_families)
        self.counts["resume_dropped_families"] += len(plan.dropped_families)
        self.counts["resume_dropped_queue"] += plan.dropped_queue
        self.pending = PendingGroups(self.config.pending_horizon)
        change = plan.describe(len(self.tasks))
        if change:
            self.warn(f"openenv_prime sampler resumed with changes: {change}")

    # -- metrics ----------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """Totals, the adapter's counters, and the `metrics_families` most drawn families (or all)."""
        every = self.config.metrics_families == "all"
        out = flat_numbers(self.inner.metrics(per_key=every))
        if not every:
            out |= self._top_family_metrics(self.config.metrics_families)
        out |= {f"adapter/{name}": float(value) for name, value in self.counts.items()}
        out["adapter/pending_groups"] = float(self.pending.outstanding)
        out["adapter/lost_groups"] = float(self.pending.lost)
        return out

    def _top_family_metrics(self, n: int) -> dict[str, float]:
        """`draw_share` (of the tasks handed out here) and, where the inner sampler estimates one, `p`, of
        the `n` families handed out most, as `key/<family>/<name>`."""
        draws = self.family_draws
        total = sum(draws)
        top = most_drawn(draws, n)
        inner = self.inner.key_metrics([self.families[slot] for slot in top])
        per_family: dict[str, dict[str, float]] = {}
        for slot in top:
            family = self.families[slot]
            per_family[family] = {"draw_share": draws[slot] / total if total else 0.0}
            if "p" in inner[family]:
                per_family[family]["p"] = inner[family]["p"]
        return flat_key_metrics(per_family)
